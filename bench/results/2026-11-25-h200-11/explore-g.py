"""Exploration (2026-11-25 f): forced tiles and multicast on the rows where
qgemm trails DeepGEMM at M = 4096 and in the grouped layouts, under the K-loop
unrolling the kernel source was built with (QG_K_UNROLL, set by the run
script). Same specs and seed as peers.py; kineto (8 GB memset before each
call, mean of 20); DeepGEMM timed first on each row. One line per config.
Run from the repository root on the GPU machine: python3 explore-g.py TAG"""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

tag = sys.argv[1] if len(sys.argv) > 1 else "?"
libs = peers.Libs(("qgemm", "deepgemm"))
flusher = peers.Flusher(8 << 30)
qg = libs.qgemm
N, A, B = "none", "a", "b"
ROWS = {
    ("dense", "4096x1536x24576"): [(128, 192, N), (128, 192, B), (128, 192, A), (256, 128, A)],
    ("dense", "4096x2112x7168"): [(128, 192, N), (128, 192, B), (256, 128, N)],
    ("dense", "4096x7168x16384"): [(256, 128, A), (128, 192, A), (128, 256, N)],
    ("dense", "4096x4096x7168"): [(256, 128, A), (128, 256, N), (128, 192, N)],
    ("dense", "4096x512x32768"): [(128, 128, N), (128, 256, N)],
    ("dense", "4096x2048x7168"): [(256, 128, N), (256, 128, A), (128, 256, N)],
    ("contiguous", "4x8192x6144x7168"): [(128, 256, N), (128, 256, A), (128, 192, N), (128, 192, A)],
    ("contiguous", "8x4096x4096x4096"): [(128, 256, N), (128, 192, N), (128, 192, A)],
    ("masked", "6x1024x6144x7168"): [(128, 256, A), (128, 192, A), (256, 128, A)],
    ("masked", "32x192x6144x7168"): [(128, 256, A), (128, 192, A), (256, 128, A)],
    ("contiguous-psum", "4x8192x6144x7168"): [(128, 256, A), (128, 192, N), (128, 192, A)],
}


def t(fn):
    fn()
    torch.cuda.synchronize()
    return peers.time_kineto(fn, flusher, 20)[0]


def forced(row, spec, cfg):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    k = spec["kind"]
    if k == "dense":
        return lambda: qg.fp8_gemm_nt(a, b, d, config=cfg)
    if k == "contiguous":
        return lambda: qg.m_grouped_fp8_gemm_nt_contiguous(a, b, d, row.m_indices, config=cfg)
    if k == "contiguous-psum":
        return lambda: qg.m_grouped_fp8_gemm_nt_contiguous(a, b, d, row.group_ends, use_psum_layout=True, config=cfg)
    return lambda: qg.m_grouped_fp8_gemm_nt_masked(a, b, d, row.masked_m, spec["expected_m"], config=cfg)


for spec in peers.table_specs(libs.align(), 0):
    key = (spec["kind"], spec["shape"])
    if key not in ROWS:
        continue
    row = peers.Row(spec, libs, 0)
    dg = t(row.call("deepgemm"))
    heur = t(row.call("qgemm"))
    out = [f"{tag} {spec['kind']} {spec['shape']}: dg {dg:.1f} heuristic {heur:.1f} ({dg / heur:.3f})"]
    for bm, bn, mc in ROWS[key]:
        try:
            us = t(forced(row, spec, {"block_m": bm, "block_n": bn, "multicast": mc}))
            out.append(f"{bm}x{bn}{mc[0]} {us:.1f} ({dg / us:.3f})")
        except Exception as e:
            out.append(f"{bm}x{bn}{mc[0]} err {peers.short_err(e)[:60]}")
    print(" | ".join(out), flush=True)
    del row
    torch.cuda.empty_cache()
