#!/usr/bin/env python3
"""A/B of einsum('bmk,bnk->mn')'s split rule and tree radix, against DeepGEMM, in one run.

For DeepGEMM's test_bmk_bnk_mn shapes (b in 129 / 4096 / 8192; (m, n, k) in (128, 384, 128),
(256, 256, 256), (384, 128, 384)) with a bf16 d, and (--fp32, default on) the three b = 129
shapes with an FP32 d += (c = d), times qgemm's one kernel (``qg_bf16_bmn_bnk_mn_gemm_impl``)
for each variant

    split rule ("tiles" = bmk_splits, the default below E.DG_RULE_MIN_BATCHES batches;
                "dg" = bmk_splits_dg, the default from there; "auto" = that default;
                a number = that split count made whole) -- the 2026-11-28 H200 run's
                "auto" column was today's "tiles", before the default became the mix
  x tree radix (QGEMM_BMK_RADIX: 2, today's default; 8)

with kineto as DeepGEMM's bench_kineto (an 8 GB L2 flush before each call, the kernel's
mean), beside DeepGEMM's own einsum when ``deep_gemm`` imports. Before timing, every variant
is checked against float64 (calc_diff < 1e-5, DeepGEMM's test) and for bitwise equal
results over three calls (determinism). Prints one row per shape and, per variant, the
geometric mean of qgemm / DeepGEMM time (or of qgemm's time relative to the current
default without DeepGEMM) and the winner. Exit status 1 on a failed check.

The kernels are compiled first by --jobs worker processes into the disk cache (each split
count and radix is a kernel of its own: ~1-3 s each), so the run stays ~1 minute.

    source .peers/env.sh    # DeepGEMM (after bash .peers/build.sh)
    PYTHONPATH=python python3 bench/bmk_variants.py [--no-fp32] [--radix 2,8]
        [--rules auto,dg] [--runs 30] [--jobs 8] [--out FILE.json]

Needs a Hopper GPU, torch, and qgemm built (PYTHONPATH=python).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import torch

import qgemm  # noqa: F401  (the extension)

E = sys.modules["qgemm.einsum"]
KERNEL = "bmn_bnk_mn_gemm_impl"  # qgemm's entry and DeepGEMM's kernel both contain it
SHAPES = [(s, m, n, k) for s in (129, 4096, 8192)
          for m, n, k in ((128, 384, 128), (256, 256, 256), (384, 128, 384))]


def kineto_us(fn, runs: int) -> float:
    fn()
    flush = torch.empty(int(8e9 // 4), dtype=torch.int, device="cuda")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    del flush
    total, count = 0.0, 0
    for ev in prof.key_averages():
        if KERNEL in ev.key:
            dev = getattr(ev, "device_time_total", None)
            if dev is None:
                dev = ev.cuda_time_total
            total += dev
            count += ev.count
    return total / count if count else float("nan")


def calc_diff(x, y) -> float:
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    return float(1 - 2 * (x * y).sum() / denom)


def splits_of(rule: str, m: int, n: int, s: int, k: int) -> int:
    if rule == "tiles" or (rule == "auto" and s < E.DG_RULE_MIN_BATCHES):
        return E.bmk_splits(m, n, s, k)
    if rule in ("dg", "auto"):
        return E.bmk_splits_dg(m, n, s, k, torch.cuda.get_device_properties(0).multi_processor_count)
    return E._whole_splits(s, min(int(rule), s, E.MAX_BATCHES))


def cases(args):
    """(s, m, n, k, fp32) rows, each with its variants {(rule, radix): (splits, radix)}."""
    rows = [(s, m, n, k, False) for s, m, n, k in SHAPES]
    if args.fp32:
        rows += [(s, m, n, k, True) for s, m, n, k in SHAPES if s == 129]
    out = []
    for s, m, n, k, fp32 in rows:
        var = {}
        for rule in args.rules.split(","):
            for radix in (int(r) for r in args.radix.split(",")):
                sp = splits_of(rule, m, n, s, k)
                var[(rule, radix)] = (sp, radix if sp > 2 else 2)  # <= 2 splits: no radix
        out.append((s, m, n, k, fp32, var))
    return out


def call(a, b, d, c, splits: int, radix: int) -> None:
    os.environ["QGEMM_BMK_RADIX"] = str(radix)
    E._bmk_bnk_mn(torch, a, b, d, c, splits=splits)


def warm(args, part: int, parts: int) -> int:
    """Compile this worker's share of the kernels (into the disk cache)."""
    todo = sorted({(s, m, n, k, fp32) + v for s, m, n, k, fp32, var in cases(args)
                   for v in var.values()})
    for i, (s, m, n, k, fp32, sp, radix) in enumerate(todo):
        if i % parts != part:
            continue
        a = torch.zeros((s, m, k), dtype=torch.bfloat16, device="cuda")
        b = torch.zeros((s, n, k), dtype=torch.bfloat16, device="cuda")
        d = torch.zeros((m, n), dtype=torch.float if fp32 else torch.bfloat16, device="cuda")
        call(a, b, d, d if fp32 else None, sp, radix)
    torch.cuda.synchronize()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", default="tiles,dg,auto", help="split rules: tiles, dg, auto or a count")
    ap.add_argument("--radix", default="2,8", help="tree radices (2, 4, 8)")
    ap.add_argument("--fp32", action=argparse.BooleanOptionalAction, default=True,
                    help="also the b = 129 shapes with an FP32 d += (c = d)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=8, help="compile workers (0: compile inline)")
    ap.add_argument("--out", default="")
    ap.add_argument("--warm", default="", help=argparse.SUPPRESS)  # "i/n": a compile worker
    args = ap.parse_args()
    if args.warm:
        part, parts = (int(x) for x in args.warm.split("/"))
        return warm(args, part, parts)

    t0 = time.time()
    if not any(os.environ.get(v) for v in ("QGEMM_CACHE_DIR", "XDG_CACHE_HOME", "HOME")):
        os.environ["QGEMM_CACHE_DIR"] = tempfile.mkdtemp(prefix="qgemm-bmk-")  # a disk cache
    if args.jobs > 0:
        argv = [sys.executable, os.path.abspath(__file__), "--rules", args.rules, "--radix",
                args.radix, "--fp32" if args.fp32 else "--no-fp32"]
        procs = [subprocess.Popen(argv + ["--warm", f"{i}/{args.jobs}"]) for i in range(args.jobs)]
        bad = [p.wait() for p in procs]
        if any(bad):
            print(f"compile workers failed: {bad}")
            return 1
        print(f"kernels compiled by {args.jobs} workers in {time.time() - t0:.1f} s")
    try:
        import deep_gemm  # DeepGEMM itself (source .peers/env.sh first)
    except Exception as exc:  # noqa: BLE001
        deep_gemm = None
        print(f"DeepGEMM not importable ({exc}): qgemm only, ratios against auto/r2")

    rows_in = cases(args)
    names = list(rows_in[0][5].keys())
    label = {v: f"{v[0]}/r{v[1]}" for v in names}
    print(f"{'b':>5} {'m':>4} {'n':>4} {'k':>4} {'d':>4} | {'DG us':>7} | " +
          " | ".join(f"{label[v]:>8} {'sp':>3} {'us':>6}" for v in names))
    logs = {v: [] for v in names}
    rows = []
    failed = 0
    for s, m, n, k, fp32, var in rows_in:
        torch.manual_seed(s * 7 + m)
        a = torch.randn((s, m, k), dtype=torch.bfloat16, device="cuda")
        b = torch.randn((s, n, k), dtype=torch.bfloat16, device="cuda")
        dtype = torch.float if fp32 else torch.bfloat16
        d_init = torch.randn((m, n), dtype=torch.float, device="cuda").to(dtype)
        ref = torch.bmm(a.double(), b.double().mT).sum(0) + (d_init.double() if fp32 else 0)
        d = d_init.clone()
        c = d if fp32 else None
        dg_us = float("nan")
        if deep_gemm is not None:
            dg_us = kineto_us(lambda: deep_gemm.einsum("bmk,bnk->mn", a, b, d, c=c), args.runs)
        times, checks = {}, {}
        done = {}
        for v in names:
            sp, radix = var[v]
            if (sp, radix) in done:  # the same kernel as another variant
                times[v], checks[v] = times[done[(sp, radix)]], checks[done[(sp, radix)]]
                continue
            outs = []
            for _ in range(3):
                dd = d_init.clone()
                call(a, b, dd, dd if fp32 else None, sp, radix)
                outs.append(dd)
            diff = calc_diff(outs[0], ref)
            same = all(torch.equal(outs[0], o) for o in outs[1:])
            ok = diff < 1e-5 and same
            checks[v] = f"diff {diff:.1e}{'' if same else ' NOT BITWISE'}"
            if not ok:
                failed += 1
                print(f"  FAIL b {s} {m}x{n}x{k} {'fp32' if fp32 else 'bf16'} {label[v]} "
                      f"splits {sp}: {checks[v]}")
            times[v] = kineto_us(lambda: call(a, b, d, c, sp, radix), args.runs)
            done[(sp, radix)] = v
        base = dg_us if deep_gemm is not None else times[names[0]]
        for v in names:
            logs[v].append(math.log(times[v] / base))
        tag = "fp32" if fp32 else "bf16"
        print(f"{s:5d} {m:4d} {n:4d} {k:4d} {tag:>4} | {dg_us:7.1f} | " +
              " | ".join(f"{'':>8} {var[v][0]:3d} {times[v]:6.1f}" for v in names))
        rows.append({"b": s, "m": m, "n": n, "k": k, "d": tag, "deepgemm_us": dg_us,
                     "variants": {label[v]: {"splits": var[v][0], "radix": var[v][1],
                                             "us": times[v], "check": checks[v]}
                                  for v in names}})
    os.environ.pop("QGEMM_BMK_RADIX", None)
    what = "qgemm / DeepGEMM" if deep_gemm is not None else f"relative to {label[names[0]]}"
    print(f"geomean of {what} (lower is better), over {len(rows)} rows:")
    gm = {v: math.exp(sum(logs[v]) / len(logs[v])) for v in names}
    for v in sorted(names, key=gm.get):
        bf = [x for x, r in zip(logs[v], rows) if r["d"] == "bf16"]
        print(f"  {label[v]:>8}: {gm[v]:.3f}  (bf16 rows only: {math.exp(sum(bf) / len(bf)):.3f})")
    win = min(names, key=gm.get)
    print(f"WINNER: {label[win]} (QGEMM_BMK_SPLITS={win[0]} QGEMM_BMK_RADIX={win[1]})")
    print(f"checks: {'PASS' if not failed else f'FAIL ({failed})'} "
          "(calc_diff < 1e-5 vs float64, 3 calls bitwise equal); "
          f"total {time.time() - t0:.1f} s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
