"""HC prenorm rows below 0.95 (bench/results/2026-11-28-h200-29-t4): DeepGEMM then qgemm, 1 call each."""
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
import torch
import peers_families as pf
import qgemm.deep_gemm as qdg
import deep_gemm
for (m, k, s) in ((137, 28672, 16), (4096, 7168, 0), (8192, 7680, 0)):
    case = {"kind": "hc", "m": m, "n": 24, "k": k, "splits": s}
    fns, outs, checks, resets, ref = pf.family_case(case, {}, {"deepgemm": deep_gemm, "qgemm": qdg}, torch)
    for lib, fn in fns.items():
        for _ in range(1):
            fn()
        torch.cuda.synchronize()
        print(m, k, s, lib, "done")
