"""Exploration (2026-11-25 session h): the scheduler's tile order. qgemm groups
n-blocks (QG_SWIZZLE_GROUP, default 16) and, without multicast, hands
consecutive CTAs the same m-block; DeepGEMM groups m-blocks there (consecutive
CTAs share B) and picks 8 or 16 per tile. Each row: DeepGEMM, qgemm's
heuristic, then the heuristic's config (or a forced tile) with other swizzle
groups. Same specs and seed as peers.py; kineto (8 GB memset before each
call, mean of 20). Run from the repository root on the GPU machine:
python3 explore-i.py"""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
flusher = peers.Flusher(8 << 30)
qg = libs.qgemm
SW = (1, 2, 4, 8, 32)
ROWS = {  # (kind, shape): list of (label, config overrides); {} = the heuristic's own config
    ("dense", "128x4096x7168"): [("64x64", dict(block_m=64, block_n=64, multicast="none", swizzle_group=s))
                                 for s in (16, 1, 2, 64)] +
                                [("64x64b", dict(block_m=64, block_n=64, multicast="b", swizzle_group=s))
                                 for s in (2, 16)],
    ("dense", "128x2112x7168"): [("heur", dict(swizzle_group=s)) for s in (1, 2, 4)],
    ("dense", "4096x1536x24576"): [("heur", dict(swizzle_group=s)) for s in SW] +
                                  [("128x192b", dict(multicast="b", swizzle_group=s)) for s in (8, 16)],
    ("dense", "4096x2048x7168"): [("heur", dict(swizzle_group=s)) for s in SW],
    ("dense", "4096x7168x16384"): [("heur", dict(swizzle_group=s)) for s in (2, 4, 8, 32)],
    ("dense", "4096x4096x7168"): [("heur", dict(swizzle_group=s)) for s in (2, 4, 8, 32)],
    ("dense", "4096x7168x576"): [("heur", dict(swizzle_group=s)) for s in (2, 4, 8, 32)],
    ("contiguous", "4x8192x6144x7168"): [("heur", dict(swizzle_group=s)) for s in (2, 4, 8, 32)],
    ("masked", "32x192x6144x7168"): [("heur", dict(swizzle_group=s)) for s in (2, 4, 8, 32)],
    ("masked", "6x1024x6144x7168"): [("heur", dict(swizzle_group=s)) for s in (2, 4, 8, 32)],
}


def t(fn):
    fn()
    torch.cuda.synchronize()
    return peers.time_kineto(fn, flusher, 20)[0]


def heuristic(row, spec):
    n, k = spec["n"], spec["k"]
    if spec["kind"] == "dense":
        return qg.select_config(spec["m"], n, k)
    if spec["kind"] == "contiguous":
        return qg.select_config(row.a.shape[0], n, k, kind="contiguous", num_groups=spec["g"])
    return qg.select_config(spec["max_m"], n, k, kind="masked", num_groups=spec["g"],
                            expected_m=spec["expected_m"])


def forced(row, spec, cfg):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    if spec["kind"] == "dense":
        return lambda: qg.fp8_gemm_nt(a, b, d, config=cfg)
    if spec["kind"] == "contiguous":
        return lambda: qg.m_grouped_fp8_gemm_nt_contiguous(a, b, d, row.m_indices, config=cfg)
    return lambda: qg.m_grouped_fp8_gemm_nt_masked(a, b, d, row.masked_m, spec["expected_m"], config=cfg)


for spec in peers.table_specs(libs.align(), 0):
    key = (spec["kind"], spec["shape"])
    if key not in ROWS:
        continue
    row = peers.Row(spec, libs, 0)
    base = heuristic(row, spec)
    dg = t(row.call("deepgemm"))
    heur = t(row.call("qgemm"))
    out = [f"{spec['kind']} {spec['shape']}: dg {dg:.2f} heuristic {heur:.2f} ({dg / heur:.3f}) "
           f"[{base['block_m']}x{base['block_n']} mc{base['multicast']} st{base['num_stages']} sw{base['swizzle_group']}]"]
    for label, over in ROWS[key]:
        cfg = dict(base)
        cfg["num_stages"] = 0
        cfg.update(over)
        if "block_m" in over:
            cfg["num_stages"] = 0
        name = f"{label}-sw{cfg['swizzle_group']}"
        try:
            us = t(forced(row, spec, cfg))
            out.append(f"{name} {us:.2f} ({dg / us:.3f})")
        except Exception as e:
            out.append(f"{name} err {peers.short_err(e)[:60]}")
    print(" | ".join(out), flush=True)
    del row
    torch.cuda.empty_cache()
