#!/usr/bin/env python3
"""A/B of einsum('bmk,bnk->mn')'s reductions and split rules against DeepGEMM, in one run.

For DeepGEMM's test_bmk_bnk_mn shapes (b in 129 / 4096 / 8192; (m, n, k) in (128, 384, 128),
(256, 256, 256), (384, 128, 384)), each with an FP32 d += (c = d) and a bf16 d (18 rows,
--no-fp32 / --no-bf16 to drop some), times qgemm's call for each variant

    NAME=REDUCE:RULE:RADIX[:FLAG[+FLAG...]]
      REDUCE  QGEMM_BMK_REDUCE: atomic (the default: one level of FP32 atomics) or tree
              (the deterministic tree of radix RADIX, QGEMM_BMK_RADIX)
      RULE    QGEMM_BMK_SPLITS: auto (bmk_splits below E.DG_RULE_MIN_BATCHES batches,
              bmk_splits_dg from there), tiles, dg, wide (bmk_splits_wide), or a count
      FLAG    fill: also allocate and zero a fresh workspace before each call, as einsum did
              up to commit 41cdebf (its separate torch fill launch);
              v2: QGEMM_BMK_VARIANT=v2 (a bf16 D's last arrival loads its sums at once;
              its plan as an FP32 D's); v3: QGEMM_BMK_VARIANT=v3 (v2 and 16-byte
              reductions, half as many); v4: QGEMM_BMK_VARIANT=v4 (v3; a bf16 D summed by
              the FP32-D kernel into the workspace, then a conversion launch); v5, v6:
              QGEMM_BMK_VARIANT=v5 (v4 with the reductions' target prefetched into L2) or
              v6 (v3 with that prefetch); without them QGEMM_BMK_VARIANT=v1;
              sN (N 4..16): QGEMM_BMK_VARIANT's :sN, at most N pipeline stages (DeepGEMM: 4)

default variants: atomic=atomic:auto:2 (QGEMM_BMK_VARIANT=v1, the first atomic path; the
library's default is v5:s4 since 2026-11-29: v5-s4), v2=atomic:auto:2:v2,
v3=atomic:auto:2:v3, v3-tiles=atomic:tiles:2:v3, v3-wide=atomic:wide:2:v3 (the wide tiles
at one CTA per SM), v3-s4=atomic:auto:2:v3+s4 (DeepGEMM's 4 stages)

beside DeepGEMM's own einsum when ``deep_gemm`` imports, two ways:
  kineto  every GPU kernel of the call (DeepGEMM's bf16 path: its memset, kernel and copy;
          qgemm's old path: its fill) except the flush before each call (an 8 GB
          bitwise_not, left out by name), averaged over --runs calls
  events  CUDA events around each call, 2x L2 cleared before it, the median: host cost and
          launch gaps included (what a caller waits for)
Before timing, every variant is checked against float64 (calc_diff < 1e-5, DeepGEMM's test)
over three calls, and the tree variants for bitwise equal results. Prints one row per
shape, then per variant the geomean and the worst row of DeepGEMM / qgemm time (> 1: qgemm
faster) for both timings, and whether the issue's target holds (geomean >= 1.00, no row
below 0.95). Exit status 1 on a failed check (not on a missed target).

    source .peers/env.sh    # DeepGEMM (after bash .peers/build.sh)
    PYTHONPATH=python python3 bench/bmk_variants.py [--variants V,V,...] [--runs 30]
        [--no-fp32] [--no-bf16] [--batches 129[,4096,...]] [--jobs 8] [--out FILE.json]

Needs a Hopper GPU, torch, and qgemm built (PYTHONPATH=python).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import qgemm  # noqa: F401  (the extension)

E = sys.modules["qgemm.einsum"]
SHAPES = [(s, m, n, k) for s in (129, 4096, 8192)
          for m, n, k in ((128, 384, 128), (256, 256, 256), (384, 128, 384))]
DEFAULT_VARIANTS = ("atomic=atomic:auto:2,v2=atomic:auto:2:v2,v3=atomic:auto:2:v3,"
                    "v3-tiles=atomic:tiles:2:v3,v3-wide=atomic:wide:2:v3,"
                    "v3-s4=atomic:auto:2:v3+s4,v5-s4=atomic:auto:2:v5+s4")
VARIANT_ENV = "QGEMM_BMK_VARIANT"
FLUSH_KERNEL = "bitwise_not"


def parse_variants(text: str):
    out = []
    for item in text.split(","):
        name, _, spec = item.partition("=")
        parts = spec.split(":")
        flags = set(parts[3].split("+")) if len(parts) == 4 else set()
        stages = [f for f in flags if f[:1] == "s" and f[1:].isdigit() and 4 <= int(f[1:]) <= 16]
        organisations = {"v2", "v3", "v4", "v5", "v6"}
        if len(parts) not in (3, 4) or parts[0] not in ("atomic", "tree") or \
                flags - {"fill"} - organisations - set(stages) or len(stages) > 1 or \
                len(flags & organisations) > 1:
            raise SystemExit(f"bad variant {item!r}: NAME=atomic|tree:RULE:RADIX[:FLAG[+FLAG]] "
                             "(FLAG fill, v2 .. v6 or sN)")
        variant = (min(flags & organisations) if flags & organisations else "v1") + \
            (f":{stages[0]}" if stages else "")
        out.append({"name": name, "reduce": parts[0], "rule": parts[1], "radix": int(parts[2]),
                    "fill": "fill" in flags, "variant": variant})
    return out


def splits_of(v, m: int, n: int, s: int, k: int) -> int:
    os.environ[E.SPLITS_ENV] = v["rule"]
    try:
        return E._splits_of_env(m, n, s, k, torch.device("cuda"), v["reduce"] == "atomic")
    finally:
        os.environ.pop(E.SPLITS_ENV, None)


def call(v, a, b, d, c, splits: int) -> None:
    os.environ["QGEMM_BMK_REDUCE"] = v["reduce"]
    os.environ["QGEMM_BMK_RADIX"] = str(v["radix"])
    os.environ[VARIANT_ENV] = v["variant"]
    if v["fill"]:  # the old per-call workspace: a fresh buffer, its counters zeroed (a fill)
        m, n = d.shape
        total, counters = qgemm._C.batch_sum_workspace_bytes(m, n, splits)
        if total:
            ws = torch.empty(total // 4, dtype=torch.int32, device=d.device)
            ws[: counters // 4].zero_()
    E._bmk_bnk_mn(torch, a, b, d, c, splits=splits)


def rows_of(args):
    dts = ([True] if args.fp32 else []) + ([False] if args.bf16 else [])
    batches = {int(b) for b in args.batches.split(",")} if args.batches else None
    return [(s, m, n, k, fp32) for s, m, n, k in SHAPES for fp32 in dts
            if batches is None or s in batches]


def warm(args, part: int, parts: int) -> int:
    """Compile this worker's share of the kernels (into the disk cache)."""
    todo = []
    for s, m, n, k, fp32 in rows_of(args):
        for v in parse_variants(args.variants):
            todo.append((s, m, n, k, fp32, v["name"]))
    vs = {v["name"]: v for v in parse_variants(args.variants)}
    for i, (s, m, n, k, fp32, name) in enumerate(todo):
        if i % parts != part:
            continue
        v = vs[name]
        a = torch.zeros((s, m, k), dtype=torch.bfloat16, device="cuda")
        b = torch.zeros((s, n, k), dtype=torch.bfloat16, device="cuda")
        d = torch.zeros((m, n), dtype=torch.float if fp32 else torch.bfloat16, device="cuda")
        call(v, a, b, d, d if fp32 else None, splits_of(v, m, n, s, k))
    torch.cuda.synchronize()
    return 0


class Timer:
    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.big = torch.empty(int(8e9) // 4, dtype=torch.int32, device="cuda")
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.small = torch.empty(max(2 * l2, 1 << 20) // 4, dtype=torch.int32, device="cuda")

    def kineto_us(self, fn) -> float:
        fn()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(self.runs):
                self.big.bitwise_not_()
                fn()
            torch.cuda.synchronize()
        total = 0.0
        parts: dict = {}  # kernel (or memset) name -> [us, count] over the runs
        for e in prof.events():
            if e.device_type.name != "CUDA" or FLUSH_KERNEL in e.name.lower():
                continue
            if "memcpy" in e.name.lower():  # (the profiler's own copies, none of the calls')
                continue
            total += e.time_range.elapsed_us()
            part = parts.setdefault(e.name, [0.0, 0])
            part[0] += e.time_range.elapsed_us()
            part[1] += 1
        # what one call launched and what each cost (--kernels): name, us per call, per call
        self.last_parts = [(nm, us / self.runs, n / self.runs) for nm, (us, n) in parts.items()]
        return total / self.runs

    def events_us(self, fn) -> float:
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(self.runs):
            self.small.bitwise_not_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return statistics.median(times)


def short_name(name: str) -> str:
    """A kernel's name, short: the function's name without template arguments or parameters
    (torch's elementwise kernels: 'elementwise_kernel'), memsets as 'memset'."""
    if "memset" in name.lower():
        return "memset"
    base = name.split("(")[0].split("<")[0].strip()
    return (base.split("::")[-1] or name)[:40]


def parts_text(parts) -> str:
    return ", ".join(f"{short_name(nm)} {us:.1f}" + (f" x{n:.0f}" if round(n) != 1 else "")
                     for nm, us, n in sorted(parts, key=lambda p: -p[1]))


def calc_diff(x, y) -> float:
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    return float(1 - 2 * (x * y).sum() / denom)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default=DEFAULT_VARIANTS)
    ap.add_argument("--fp32", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--batches", default="", help="only these batch counts (e.g. 129)")
    ap.add_argument("--kernels", action="store_true",
                    help="after each row, what each call launched (kineto: us per call per "
                         "kernel or memset)")
    ap.add_argument("--jobs", type=int, default=8, help="compile workers (0: compile inline)")
    ap.add_argument("--out", default="")
    ap.add_argument("--warm", default="", help=argparse.SUPPRESS)  # "i/n": a compile worker
    args = ap.parse_args()
    if args.warm:
        part, parts = (int(x) for x in args.warm.split("/"))
        return warm(args, part, parts)
    variants = parse_variants(args.variants)

    t0 = time.time()
    if not any(os.environ.get(v) for v in ("QGEMM_CACHE_DIR", "XDG_CACHE_HOME", "HOME")):
        os.environ["QGEMM_CACHE_DIR"] = tempfile.mkdtemp(prefix="qgemm-bmk-")  # a disk cache
    if args.jobs > 0:
        argv = [sys.executable, os.path.abspath(__file__), "--variants", args.variants,
                "--fp32" if args.fp32 else "--no-fp32", "--bf16" if args.bf16 else "--no-bf16",
                "--batches", args.batches]
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
        print(f"DeepGEMM not importable ({exc}): qgemm only, ratios against {variants[0]['name']}")

    timer = Timer(args.runs)
    names = [v["name"] for v in variants]
    print(f"{'b':>5} {'m':>4} {'n':>4} {'k':>4} {'d':>4} | {'DG kin':>7} {'DG ev':>7} | " +
          " | ".join(f"{nm:>12} {'sp':>3} {'kin':>6} {'ev':>6}" for nm in names))
    logs = {nm: {"kineto": [], "events": []} for nm in names}
    rows, failed = [], 0
    for s, m, n, k, fp32 in rows_of(args):
        torch.manual_seed(s * 7 + m)
        a = torch.randn((s, m, k), dtype=torch.bfloat16, device="cuda")
        b = torch.randn((s, n, k), dtype=torch.bfloat16, device="cuda")
        dtype = torch.float if fp32 else torch.bfloat16
        d_init = torch.randn((m, n), dtype=torch.float, device="cuda").to(dtype)
        ref = torch.bmm(a.double(), b.double().mT).sum(0) + (d_init.double() if fp32 else 0)
        d = d_init.clone()
        c = d if fp32 else None
        dg = {"kineto": float("nan"), "events": float("nan")}
        if deep_gemm is not None:
            fn = (lambda: deep_gemm.einsum("bmk,bnk->mn", a, b, d, c=c))
            dg = {"kineto": timer.kineto_us(fn), "events": 0.0, "parts": timer.last_parts}
            dg["events"] = timer.events_us(fn)
        res = {}
        for v in variants:
            sp = splits_of(v, m, n, s, k)
            outs = []
            for _ in range(3):
                dd = d_init.clone()
                call(v, a, b, dd, dd if fp32 else None, sp)
                outs.append(dd)
            diffs = [calc_diff(o, ref) for o in outs]
            same = all(torch.equal(outs[0], o) for o in outs[1:])
            ok = max(diffs) < 1e-5 and (same or v["reduce"] == "atomic")
            check = f"diff {max(diffs):.1e}{'' if same else ' not bitwise'}"
            if not ok:
                failed += 1
                print(f"  FAIL b {s} {m}x{n}x{k} {'fp32' if fp32 else 'bf16'} {v['name']} "
                      f"splits {sp}: {check}")
            fn = (lambda v=v, sp=sp: call(v, a, b, d, c, sp))
            res[v["name"]] = {"splits": sp, "kineto": timer.kineto_us(fn),
                              "parts": timer.last_parts}
            res[v["name"]].update(events=timer.events_us(fn), check=check)
        base = dg if deep_gemm is not None else res[names[0]]
        for nm in names:
            for how in ("kineto", "events"):
                logs[nm][how].append(math.log(base[how] / res[nm][how]))
        tag = "fp32" if fp32 else "bf16"
        print(f"{s:5d} {m:4d} {n:4d} {k:4d} {tag:>4} | {dg['kineto']:7.1f} {dg['events']:7.1f} | " +
              " | ".join(f"{'':>12} {res[nm]['splits']:3d} {res[nm]['kineto']:6.1f} "
                         f"{res[nm]['events']:6.1f}" for nm in names), flush=True)
        if args.kernels:  # what each call launched, kineto us per call
            if deep_gemm is not None:
                print(f"    {'DeepGEMM':>12}: {parts_text(dg['parts'])}")
            for nm in names:
                print(f"    {nm:>12}: {parts_text(res[nm]['parts'])}", flush=True)
        rows.append({"b": s, "m": m, "n": n, "k": k, "d": tag, "deepgemm": dg, "variants": res})
    for var in ("QGEMM_BMK_REDUCE", "QGEMM_BMK_RADIX", VARIANT_ENV):
        os.environ.pop(var, None)
    what = "DeepGEMM / qgemm" if deep_gemm is not None else f"{names[0]} / variant"
    print(f"{what} time (> 1: qgemm faster), over {len(rows)} rows; target geomean >= 1.00, "
          "no row < 0.95:")
    for nm in names:
        parts = []
        for how in ("kineto", "events"):
            lg = logs[nm][how]
            gm, worst = math.exp(sum(lg) / len(lg)), math.exp(min(lg))
            hit = gm >= 1.0 and worst >= 0.95
            parts.append(f"{how} {gm:.3f} (worst {worst:.3f}) {'MET' if hit else 'missed'}")
        print(f"  {nm:>12}: " + "; ".join(parts))
    # A default may pick its split rule by the batch count (E.DG_RULE_MIN_BATCHES, as "auto"
    # does): the best pairs of variants of one kernel organisation (QGEMM_BMK_VARIANT), the
    # rows below that many batches from the first, the rest from the second.
    small = [r["b"] < E.DG_RULE_MIN_BATCHES for r in rows]
    combos = []
    for lo in variants:
        for hi in variants:
            if lo["variant"] != hi["variant"] or lo["reduce"] != hi["reduce"] or lo is hi:
                continue
            stats = []
            for how in ("kineto", "events"):
                lg = [logs[lo["name"] if sm else hi["name"]][how][i] for i, sm in enumerate(small)]
                stats.append((math.exp(sum(lg) / len(lg)), math.exp(min(lg))))
            combos.append((stats[0][0], lo["name"], hi["name"], stats))
    if combos:
        print(f"split rule by batch count (b < {E.DG_RULE_MIN_BATCHES}: first, else second), "
              "best 3 by kineto geomean:")
        for _, lo, hi, st in sorted(combos, reverse=True)[:3]:
            print(f"  {lo + ' / ' + hi:>24}: kineto {st[0][0]:.3f} (worst {st[0][1]:.3f}); "
                  f"events {st[1][0]:.3f} (worst {st[1][1]:.3f})")
    print(f"checks: {'PASS' if not failed else f'FAIL ({failed})'} "
          "(calc_diff < 1e-5 vs float64 over 3 calls; tree variants bitwise equal); "
          f"total {time.time() - t0:.1f} s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
