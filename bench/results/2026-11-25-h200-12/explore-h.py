"""Exploration (2026-11-25 g): forced tiles, split-K and multicast on the rows
where qgemm trails DeepGEMM at small M (128x4096x7168 0.912, 128x2112x7168
0.955, 64x4096x7168 0.988 in h200-11) and in the masked 6 x 1024 layout;
DeepGEMM's kernel for each row named from the profiler. Same specs and seed
as peers.py; kineto (8 GB memset before each call, mean of 20); DeepGEMM timed
first on each row, then qgemm's heuristic, then each forced config.
Run from the repository root on the GPU machine: python3 explore-h.py
(run 1: RUN1; the row lists of that run are in explore-h.log). Run 2 (run-b.sh):
python3 explore-h.py TAG small|masked, the lists below."""
import re
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
flusher = peers.Flusher(8 << 30)
qg = libs.qgemm
N, A, B = "none", "a", "b"
RUN1 = {  # run 1 (run-a.sh), with DeepGEMM's kernel names
    ("dense", "128x4096x7168"): [(128, 32, N, 1, 0), (64, 64, N, 1, 0), (64, 32, N, 1, 0), (128, 64, N, 1, 0),
                                 (64, 64, N, 2, 0), (64, 32, N, 2, 0), (128, 32, N, 2, 0), (64, 48, N, 1, 0),
                                 (128, 48, N, 1, 0), (64, 64, B, 1, 0), (128, 32, N, 1, 6)],
    ("dense", "128x2112x7168"): [(128, 32, N, 2, 0), (64, 32, N, 1, 0), (64, 16, N, 1, 0), (128, 16, N, 1, 0),
                                 (64, 32, N, 2, 0), (64, 48, N, 1, 0), (128, 32, N, 1, 0), (64, 64, N, 2, 0)],
    ("dense", "64x4096x7168"): [(64, 32, N, 1, 0), (64, 64, N, 1, 0), (64, 32, N, 2, 0), (64, 16, N, 1, 0),
                                (64, 64, N, 2, 0), (64, 48, N, 1, 0)],
    ("dense", "64x2112x7168"): [(64, 32, N, 2, 0), (64, 16, N, 1, 0), (64, 32, N, 1, 0)],
    ("dense", "128x7168x2048"): [(128, 64, N, 1, 0), (64, 112, N, 1, 0), (64, 128, N, 1, 0)],
    ("masked", "6x1024x6144x7168"): [(128, 256, A, 1, 0), (256, 128, A, 1, 0), (256, 128, N, 1, 0)],
    ("masked", "6x1024x7168x3072"): [(128, 256, A, 1, 0), (256, 128, A, 1, 0), (256, 128, N, 1, 0)],
    ("masked", "6x1024x4096x4096"): [(128, 256, A, 1, 0), (256, 128, A, 1, 0), (256, 128, N, 1, 0)],
    ("masked", "6x1024x4096x2048"): [(128, 256, A, 1, 0), (256, 128, A, 1, 0), (256, 128, N, 1, 0),
                                     (128, 192, A, 1, 0)],
}
SMALL = {  # run 2 (run-b.sh), under each kernel variant

    ("dense", "128x4096x7168"): [(64, 64, N, 1, 0), (64, 64, B, 1, 0), (128, 32, N, 1, 0)],
    ("dense", "128x2112x7168"): [(64, 32, N, 1, 0), (64, 32, B, 1, 0)],
    ("dense", "64x4096x7168"): [(64, 32, N, 1, 0), (64, 64, N, 1, 0)],
    ("dense", "64x2112x7168"): [(64, 32, N, 2, 0), (64, 16, N, 1, 0)],
    ("dense", "128x7168x2048"): [(64, 112, N, 1, 0), (64, 128, N, 1, 0)],
}
MASKED = {
    ("masked", "6x1024x6144x7168"): [(128, 192, A, 1, 0), (128, 192, B, 1, 0)],
    ("masked", "6x1024x7168x3072"): [(128, 192, A, 1, 0), (128, 192, B, 1, 0)],
    ("masked", "6x1024x4096x4096"): [(128, 192, A, 1, 0), (128, 192, B, 1, 0)],
    ("masked", "6x1024x4096x2048"): [(128, 192, A, 1, 0), (128, 192, B, 1, 0)],
    ("masked", "32x192x6144x7168"): [(128, 192, B, 1, 0)],
}
tag, which = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("", "run1")
ROWS = {"run1": RUN1, "small": SMALL, "masked": MASKED}[which]


def t(fn):
    fn()
    torch.cuda.synchronize()
    return peers.time_kineto(fn, flusher, 20)[0]


def kernel_names(fn):
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and "memset" not in e.name.lower():
            names.append(re.sub(r"\s+", " ", e.name)[:260])
    return names


def forced(row, spec, cfg):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    if spec["kind"] == "dense":
        return lambda: qg.fp8_gemm_nt(a, b, d, config=cfg)
    return lambda: qg.m_grouped_fp8_gemm_nt_masked(a, b, d, row.masked_m, spec["expected_m"], config=cfg)


for spec in peers.table_specs(libs.align(), 0):
    key = (spec["kind"], spec["shape"])
    if key not in ROWS:
        continue
    row = peers.Row(spec, libs, 0)
    dg = t(row.call("deepgemm"))
    heur = t(row.call("qgemm"))
    out = [f"{tag} {spec['kind']} {spec['shape']}: dg {dg:.2f} heuristic {heur:.2f} ({dg / heur:.3f})"]
    for bm, bn, mc, sk, st in ROWS[key]:
        name = f"{bm}x{bn}{mc[0]}" + (f"k{sk}" if sk > 1 else "") + (f"s{st}" if st else "")
        try:
            us = t(forced(row, spec, {"block_m": bm, "block_n": bn, "multicast": mc, "split_k": sk,
                                       "num_stages": st}))
            out.append(f"{name} {us:.2f} ({dg / us:.3f})")
        except Exception as e:
            out.append(f"{name} err {peers.short_err(e)[:60]}")
    print(" | ".join(out), flush=True)
    if which == "run1":
        try:
            print("   dg kernels:", " ;; ".join(kernel_names(row.call("deepgemm"))), flush=True)
        except Exception as e:
            print("   dg kernels: ?", peers.short_err(e)[:100], flush=True)
    del row
    torch.cuda.empty_cache()
