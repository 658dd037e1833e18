#!/usr/bin/env python3
"""Tune einsum('bmk,bnk->mn')'s split count (python/qgemm/einsum.py bmk_splits).

For DeepGEMM's test_bmk_bnk_mn shapes (b in 129 / 4096 / 8192; (m, n, k) in
(128, 384, 128), (256, 256, 256), (384, 128, 384); d FP32 with c = d, and bf16),
times qgemm's one kernel (``qg_bf16_bmn_bnk_mn_gemm_impl``, kineto as DeepGEMM's
bench_kineto: 30 calls after an 8 GB L2 flush each, the kernel's mean) at the
heuristic's split count and at each candidate split count, and DeepGEMM's own
einsum when ``deep_gemm`` imports (its ``bmn_bnk_mn_gemm_impl`` kernel). Prints one
row per shape: DeepGEMM's time, ours at the heuristic, the best split count and its
time; every result is checked against float64 (calc_diff < 1e-5) first.

    python3 bench/bmk_splits_sweep.py [--splits 1,2,4,...] [--out FILE.json]

Needs a Hopper GPU, torch, and qgemm built (PYTHONPATH=python).
"""
from __future__ import annotations

import argparse
import json
import sys

import torch

import qgemm  # noqa: F401  (the extension)

E = sys.modules["qgemm.einsum"]
KERNEL = "bmn_bnk_mn_gemm_impl"  # qgemm's entry and DeepGEMM's kernel both contain it


def kineto_us(fn, name: str, runs: int = 30) -> float:
    fn()
    flush = torch.empty(int(8e9 // 4), dtype=torch.int, device="cuda")
    sched = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA],
                                schedule=sched) as prof:
        for _ in range(2):
            for _ in range(runs):
                flush.zero_()
                fn()
            torch.cuda.synchronize()
            prof.step()
    total, count = 0.0, 0
    for ev in prof.key_averages():
        if name in ev.key:
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


def valid_splits(s: int, want: int) -> int:
    want = max(1, min(want, s, 1024))
    per = -(-s // want)
    return -(-s // per)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", default="1,2,4,8,11,16,22,32,33,44,66,88,132")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    try:
        import deep_gemm  # DeepGEMM itself (source /work/main/.peers/env.sh first)
    except Exception as exc:  # noqa: BLE001
        deep_gemm = None
        print(f"DeepGEMM not importable ({exc}): qgemm only")
    rows = []
    print(f"{'b':>5} {'m':>4} {'n':>4} {'k':>4} {'d':>4} | {'DeepGEMM':>9} | {'heur':>4} "
          f"{'us':>8} {'x':>5} | {'best':>4} {'us':>8} {'x':>5}")
    for s in (129, 4096, 8192):
        for m, n, k in ((128, 384, 128), (256, 256, 256), (384, 128, 384)):
            for dtype in (torch.float, torch.bfloat16):
                a = torch.randn((s, m, k), dtype=torch.bfloat16, device="cuda")
                b = torch.randn((s, n, k), dtype=torch.bfloat16, device="cuda")
                d = torch.randn((m, n), dtype=dtype, device="cuda")
                c = d if dtype == torch.float else None
                ref = torch.bmm(a.double(), b.double().mT).sum(0)
                dg_us = float("nan")
                if deep_gemm is not None:
                    dg_us = kineto_us(lambda: deep_gemm.einsum("bmk,bnk->mn", a, b, d, c=c),
                                      KERNEL)
                heur = E.bmk_splits(m, n, s, k)
                cands = sorted({valid_splits(s, int(x)) for x in args.splits.split(",")} | {heur})
                times = {}
                for sp in cands:
                    d0 = torch.zeros((m, n), dtype=dtype, device="cuda")
                    E._bmk_bnk_mn(torch, a, b, d0, None, splits=sp)
                    diff = calc_diff(d0, ref)
                    if not diff < 1e-5:
                        print(f"  FAIL b {s} {m}x{n}x{k} {dtype} splits {sp}: diff {diff:.3g}")
                        return 1
                    times[sp] = kineto_us(
                        lambda: E._bmk_bnk_mn(torch, a, b, d, c, splits=sp), KERNEL)
                best = min(times, key=times.get)
                tag = "fp32" if dtype == torch.float else "bf16"
                print(f"{s:5d} {m:4d} {n:4d} {k:4d} {tag:>4} | {dg_us:9.1f} | {heur:4d} "
                      f"{times[heur]:8.1f} {dg_us / times[heur]:5.2f} | {best:4d} "
                      f"{times[best]:8.1f} {dg_us / times[best]:5.2f}")
                rows.append({"b": s, "m": m, "n": n, "k": k, "d": tag, "deepgemm_us": dg_us,
                             "heuristic_splits": heur, "times_us": times, "best_splits": best})
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
