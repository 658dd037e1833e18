#!/usr/bin/env python3
"""bench/bf16_merge_plan.py -- which of DeepGEMM's test_bf16 GEMMs get merged K stages, offline.

QGEMM_BF16_MERGE (src/bf16_plan.c qg__bf16_merge_of; kernels/qg_bf16_gemm.cuh "Merged stages")
merges consecutive 64-K pipeline stages of the dense NT BF16 GEMM into one. This prints, for every
normal GEMM of DeepGEMM's tests/test_bf16.py (the list of tests/generators.py enumerate_normal for
bfloat16, restated here: the generator imports deep_gemm, which needs a GPU build), qgemm's tile and
stages with the knob off and on `auto`, and DeepGEMM's own tile, stages and merge (its rule,
sm90_bf16_gemm.cuh: stages >= 10, a normal GEMM, K-major A and B, 128 math threads -> stages / 5
64-K blocks a stage; its tile from bench/dg_bf16_heuristic.py's restatement of its heuristic).

Usage:  python3 bench/bf16_merge_plan.py [--sms 132] [--merge auto|N]
The rows marked '*' are those whose qgemm plan the knob changes: the rows to time.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dg_bf16_heuristic as dgh  # noqa: E402


def normal_cases():
    """tests/generators.py enumerate_normal(torch.bfloat16) on SM90 (DeepGEMM 54e2261)."""
    bf16_nk = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168),
               (7168, 2048)]
    fp32_nk = [(256, 7168), (129280, 7168)]
    nk = bf16_nk + fp32_nk
    out = []
    for m in (1, 128, 4096):  # forward: NT
        for i, (n, k) in enumerate(nk):
            d32 = i >= len(bf16_nk)
            out.append((m, n, k, "NT", False, d32))
            if not d32:
                out.append((m, n, k, "NT", True, False))
    for n, k in nk:  # backward, m = 4096: dgrad NN, wgrad TT (FP32 + C, and bf16)
        out.append((4096, k, n, "NN", False, False))
        out.append((n, 4096, k, "TT", True, True))
        out.append((n, 4096, k, "TT", False, False))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--merge", default="auto", help="the knob's value: auto or 1..16")
    args = ap.parse_args()
    knob = -1 if args.merge == "auto" else int(args.merge)
    lib = dgh.planner_lib()
    print(f"# DeepGEMM test_bf16 normal GEMMs, {args.sms} SMs: qgemm off -> QGEMM_BF16_MERGE={args.merge}; "
          "tile, stages (merged: merge x stages); DeepGEMM tile, stages, its merge")
    print(f"{'shape':<34} {'qg tile':<12} {'off':>4} {'merged':>8} | {'DG tile':<12} {'st':>3} {'DG merge':>9}")
    changed = 0
    for m, n, k, lay, acc, d32 in normal_cases():
        plans = []
        for mg in (0, knob):
            p = dgh.Problem(m=m, n=n, k=k, layout=dgh.LAYOUTS[lay], kind=dgh.KIND["dense"], num_groups=1,
                            d_f32=int(d32), with_c=int(acc), num_sms=args.sms, smem_limit=dgh.SMEM, merge=mg)
            pl = dgh.Plan()
            if lib.qg__bf16_select(ctypes.byref(p), ctypes.byref(pl)) != 0:
                raise RuntimeError(f"no plan for {m}x{n}x{k} {lay}")
            plans.append(pl)
        off, on = plans
        dg = dgh.dg_choice({"kind": "dense", "m": m, "n": n, "k": k, "g": 1, "layout": lay, "acc": acc,
                            "d32": d32, "name": ""}, args.sms)
        dg_merge = dg["num_stages"] // 5 if (dg["num_stages"] >= 10 and lay == "NT" and dg["block_m"] <= 64) else 1
        dg_st = f"{dg_merge}x{dg['num_stages'] // dg_merge}" if dg_merge > 1 else "-"
        mark = "*" if on.merge > 1 else " "
        changed += on.merge > 1
        name = f"{lay} {m}x{n}x{k} {'fp32' if d32 else 'bf16'}{' +C' if acc else ''}"
        merged = f"{on.merge}x{on.num_stages}" if on.merge > 1 else "-"
        print(f"{mark}{name:<33} {str(off.block_m) + 'x' + str(off.block_n):<12} {off.num_stages:>4} {merged:>8} | "
              f"{str(dg['block_m']) + 'x' + str(dg['block_n']):<12} {dg['num_stages']:>3} {dg_st:>9}")
    print(f"# {changed} rows merged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
