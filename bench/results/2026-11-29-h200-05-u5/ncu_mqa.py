"""MQA prefill 2048 x 65536 x H64 x D64 (the 0.91 row of 2026-11-28-h200-21-final): DeepGEMM then qgemm, 3 calls each."""
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
import torch
import peers_families as pf
import qgemm.deep_gemm as qdg
import deep_gemm
case = {"kind": "mqa", "sq": 2048, "sk": 65536, "h": 64, "dim": 64, "cp": True}
fns, outs, checks, resets, ref = pf.family_case(case, {}, {"deepgemm": deep_gemm, "qgemm": qdg}, torch)
for lib, fn in fns.items():
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    print(lib, "done")
