#!/usr/bin/env python3
"""Launch one case's kernels a few times for ncu (no torch profiler: CUPTI is ncu's).
usage: ncu_drv.py paged BSZ NEXT_N H L f32|bf16 | fp8out M N K | bf16 M N K   [libs]"""
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
import torch
import qgemm.deep_gemm as qdg
libs = {"qgemm": qdg}
try:
    import deep_gemm
    libs = {"deepgemm": deep_gemm, "qgemm": qdg}
except Exception as e:
    print("no deepgemm:", e)
which = sys.argv[1]
reps = 3
if which == "paged":
    import peers_families as pf
    bsz, nn, h, L, dt = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    case = {"kind": "paged-mqa", "bsz": bsz, "next_n": nn, "h": h, "dim": 128, "avg_kv": L, "f32": dt == "f32"}
    fns, outs, checks, resets, ref = pf.family_case(case, {}, libs, torch)
    for lib, fn in fns.items():
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        print(lib, "done")
elif which == "fp8out":
    import peers, qgemm
    m, n, k = (int(v) for v in sys.argv[2:5])
    x = torch.randn(m, k, device="cuda"); w = torch.randn(n, k, device="cuda")
    a, sfa = peers._cast_rows(x); sfa = peers._mn_major(sfa); b, sfb = peers._cast_blocks(w)
    d16 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    d8, sfd = qgemm.empty_fp8out(m, n, device="cuda")
    print("fused cfg", qgemm.select_config_fp8out(m, n, k), "bf16 cfg", qgemm.select_config(m, n, k))
    for _ in range(reps):
        qgemm.fp8_gemm_nt_fp8out((a, sfa), (b, sfb), d8, sfd)
    torch.cuda.synchronize()
    for _ in range(reps):
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d16)
    torch.cuda.synchronize()
    print("done")
elif which == "bf16":
    m, n, k = (int(v) for v in sys.argv[2:5])
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    for lib, mod in libs.items():
        d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(reps):
            mod.bf16_gemm_nt(a, b, d)
        torch.cuda.synchronize()
        print(lib, "done")
