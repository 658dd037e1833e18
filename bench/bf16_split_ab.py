#!/usr/bin/env python3
"""bench/bf16_split_ab.py -- dense BF16 split-K A/B on the decode shapes (GPU).

qgemm's dense NT GEMM under QGEMM_BF16_SPLIT_K=off (the default plan), on (the planner decides)
and forced splits (":rs": the reduce-scatter reduction), beside cuBLAS (torch.matmul) and, with --deepgemm (when `import deep_gemm` works), DeepGEMM, on
DeepGEMM's test_bf16 forward shapes at M = 1 and 128 (N x K: 2112x7168, 576x7168, 24576x1536,
32768x512, 7168x16384, 4096x7168, 7168x2048 with a bf16 D; 256x7168 and 129280x7168 with an FP32
D). Every variant is checked against an fp64 product first (calc_diff < 1e-5, the D poisoned
with NaN before the checked call) and run twice more to check it is bitwise reproducible; then
timed by kineto with an 8 GB buffer zeroed before each call (bench/peers_families.py's Timer).

Prints one line a shape (us per variant, cuBLAS / qgemm ratios) and one summary line a variant:
geomean cuBLAS / variant and DeepGEMM / variant, worst row, geomean off / variant, accuracy
PASS/FAIL. Writes DIR/bf16-split-ab.json (--out, default $OUT or .).

Usage: python3 bench/bf16_split_ab.py [--splits off,on,on:rs,2,4,8,4:rs,8:rs] [--iters 10] [--m 1,128] [--deepgemm] [--out DIR]
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from typing import Any, Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_families import Timer, calc_diff  # noqa: E402

NK_BF16 = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
NK_F32 = [(256, 7168), (129280, 7168)]


def geomean(xs: List[float]) -> float:
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", default="off,on,on:rs,2,4,8,4:rs,8:rs")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--m", default="1,128")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--deepgemm", action="store_true",
                    help="also time DeepGEMM (its JIT compiles each new shape with nvcc: slow when cold)")
    args = ap.parse_args()
    import torch
    import qgemm.deep_gemm as qdg
    dg = None
    if args.deepgemm:
        try:
            dg = importlib.import_module("deep_gemm")
        except Exception as e:  # noqa: BLE001
            print(f"DeepGEMM: not available ({type(e).__name__}: {e})")
    splits = [s for s in args.splits.split(",") if s]
    timer = Timer(torch, args.iters)
    rows: List[Dict[str, Any]] = []
    acc_fail = 0
    for m in [int(x) for x in args.m.split(",")]:
        for (n, k), f32 in [(nk, False) for nk in NK_BF16] + [(nk, True) for nk in NK_F32]:
            torch.manual_seed(m * 7 + n + k)
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            dt = torch.float if f32 else torch.bfloat16
            ref = a.double() @ b.double().t()
            row: Dict[str, Any] = {"shape": f"{m}x{n}x{k}", "d": "fp32" if f32 else "bf16", "us": {}, "diff": {}}
            fns: Dict[str, Callable[[], Any]] = {}
            for sk in splits:
                d = torch.empty(m, n, device="cuda", dtype=dt)

                def call(sk: str = sk, d: Any = d) -> Any:
                    os.environ["QGEMM_BF16_SPLIT_K"] = sk
                    try:
                        return qdg.bf16_gemm_nt(a, b, d)
                    finally:
                        os.environ.pop("QGEMM_BF16_SPLIT_K", None)
                try:
                    d.fill_(float("nan"))
                    call()
                    torch.cuda.synchronize()
                    first = d.clone()
                    diff = calc_diff(d, ref)
                    same = True
                    for _ in range(2):
                        d.fill_(float("nan"))
                        call()
                        torch.cuda.synchronize()
                        same = same and bool(torch.equal(d.view(torch.int16 if not f32 else torch.int32),
                                                          first.view(torch.int16 if not f32 else torch.int32)))
                    ok = diff < 1e-5 and same
                    row["diff"][sk] = diff
                    if not ok:
                        acc_fail += 1
                        print(f"FAIL {row['shape']} split {sk}: diff {diff:.2e} reproducible {same}")
                    fns[sk] = call
                except Exception as e:  # noqa: BLE001
                    acc_fail += 1
                    print(f"FAIL {row['shape']} split {sk}: {type(e).__name__}: {str(e)[:200]}")
            dc = torch.empty(m, n, device="cuda", dtype=dt)
            fns["cublas"] = (lambda: torch.matmul(a, b.t(), out=dc)) if not f32 else (lambda: dc.copy_(torch.matmul(a, b.t())))
            if dg is not None:
                dd = torch.empty(m, n, device="cuda", dtype=dt)
                fns["deepgemm"] = lambda dd=dd: dg.bf16_gemm_nt(a, b, dd)
            for lib, f in fns.items():
                try:
                    row["us"][lib] = timer.kineto_us(f)
                except Exception as e:  # noqa: BLE001
                    print(f"timing {row['shape']} {lib}: {type(e).__name__}: {str(e)[:200]}")
            rows.append(row)
            us = row["us"]
            print(f"{row['shape']:>18} {row['d']:4} " + " ".join(
                f"{lib}={us[lib]:.1f}" for lib in fns if lib in us) + "  cb/qg: " + " ".join(
                f"{sk}={us['cublas'] / us[sk]:.2f}" for sk in splits if sk in us and "cublas" in us), flush=True)
    print()
    for sk in splits:
        def ratio(peer: str, rs: List[Dict[str, Any]] = rows) -> List[float]:
            return [r["us"][peer] / r["us"][sk] for r in rs if peer in r["us"] and sk in r["us"]]
        cb, dgr, off = ratio("cublas"), ratio("deepgemm"), ratio(splits[0])
        worst = min(rows, key=lambda r: r["us"].get("cublas", 0) / r["us"].get(sk, 1e30))
        dmax = max((r["diff"].get(sk, 0) for r in rows), default=0)
        print(f"QGEMM_BF16_SPLIT_K={sk:3}: cuBLAS/qgemm geomean {geomean(cb):.3f} (worst {min(cb, default=0):.3f} "
              f"at {worst['shape']}), DeepGEMM/qgemm geomean {geomean(dgr):.3f}, {splits[0]}/this {geomean(off):.3f}, "
              f"diff max {dmax:.1e} over {len(cb)} rows")
    print(f"accuracy + reproducibility: {'PASS' if acc_fail == 0 else f'FAIL ({acc_fail})'}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bf16-split-ab.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "splits": splits, "rows": rows}, f, indent=1)
    return 1 if acc_fail else 0


if __name__ == "__main__":
    sys.exit(main())
