#!/usr/bin/env python3
"""sass-summary.py -- summarise the per-instruction warp-stall CSVs that
bench/explore.sh's `sass` plan lines write (Nsight Compute source page, SASS
view): total samples, the stall reasons over all instructions, and the
instructions that collect the most samples with their two main reasons.

    python3 bench/sass-summary.py [--top N] FILE.csv...

Samples are per warp: the producer warpgroup's idle warps and a waiting
thread's spin loop collect samples too, so read an instruction's share beside
its "executed" count (warp-level instructions) before calling it a bottleneck.
"""
import argparse
import collections
import csv


def load(path):
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    title = lines[0] if lines and lines[0].startswith("#") else ""
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    return title, list(csv.DictReader(lines[start:]))


def count(value):
    return int(value.replace(",", "")) if value else 0


def summarise(path, top):
    title, rows = load(path)
    stalls = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]
    samples = "Warp Stall Sampling (All Samples)"
    total = sum(count(r[samples]) for r in rows) or 1
    print(f"{path} {title}")
    print(f"total samples {total}")
    reasons = collections.Counter()
    for r in rows:
        for k in stalls:
            reasons[k] += count(r[k])
    for k, v in reasons.most_common(8):
        print(f"  {k:28s} {v:8d} {100 * v / total:5.1f}%")
    rows.sort(key=lambda r: -count(r[samples]))
    print(f"  {'samples':>7s} {'share':>6s} {'addr':>5s} {'instruction':60s} {'executed':>9s} main reasons")
    for r in rows[:top]:
        s = count(r[samples])
        main = sorted(((count(r[k]), k[6:]) for k in stalls), reverse=True)[:2]
        why = ", ".join(f"{name} {n}" for n, name in main if n)
        print(f"  {s:7d} {100 * s / total:5.1f}% {r['Address'][-5:]:>5s} {r['Source'][:60]:60s} "
              f"{r['Instructions Executed']:>9s} {why}")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=20, help="instructions to list (default 20)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    for f in args.files:
        summarise(f, args.top)


if __name__ == "__main__":
    main()
