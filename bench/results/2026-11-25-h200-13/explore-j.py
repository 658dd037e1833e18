"""Exploration (2026-11-25 session h, run 2). Mode "small": the 128-row
dense rows with the m-blocks of one n-block on consecutive CTAs (swizzle
group 1, explore-i.log: 128x4096x7168 as 64x64 14.25 us against 16.29 with
the default 16) and the 64-row tiles that order favours. Mode "mc": the
multicast rows, run under two trees (run-b.sh): as is (each CTA of a pair
loads half of the shared tile and multicasts it) and with mc-whole.patch
(CTA 0 loads the whole tile for both, as DeepGEMM does). Each row:
DeepGEMM, qgemm's heuristic, then the heuristic's config with overrides.
Same specs and seed as peers.py; kineto (8 GB memset before each call, mean
of 20). Run from the repository root on the GPU machine:
python3 explore-j.py TAG small|mc"""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
flusher = peers.Flusher(8 << 30)
qg = libs.qgemm


def tiles(*specs):  # (block_m, block_n, swizzle[, split_k]) -> forced configs, no multicast
    return [(f"{s[0]}x{s[1]}" + (f"k{s[3]}" if len(s) > 3 else ""),
             dict(block_m=s[0], block_n=s[1], multicast="none", swizzle_group=s[2],
                  split_k=s[3] if len(s) > 3 else 1)) for s in specs]


SMALL = {
    ("dense", "128x2112x7168"): [("heur", dict(swizzle_group=1))] + tiles((64, 16, 1)),
    ("dense", "128x576x7168"): [("heur", dict(swizzle_group=1))] + tiles((64, 16, 1), (64, 16, 16), (64, 32, 1)),
    ("dense", "128x24576x1536"): tiles((64, 192, 1), (64, 192, 16), (64, 256, 1)),
    ("dense", "128x32768x512"): tiles((64, 256, 1), (64, 256, 16), (128, 256, 1)),
    ("dense", "128x7168x16384"): tiles((64, 112, 1), (64, 128, 1), (64, 112, 16)),
    ("dense", "128x4096x7168"): tiles((64, 64, 1), (64, 32, 1), (64, 48, 1)),
    ("dense", "128x7168x2048"): tiles((64, 112, 1), (64, 128, 1), (64, 112, 16)),
}
MC = {
    ("dense", "4096x7168x16384"): [],
    ("dense", "4096x4096x7168"): [],
    ("dense", "4096x16384x7168"): [],
    ("dense", "4096x7168x2112"): [],
    ("dense", "4096x1536x24576"): [("b", dict(multicast="b"))],
    ("dense", "4096x2112x7168"): [("b", dict(multicast="b"))],
    ("contiguous", "4x8192x6144x7168"): [],
    ("masked", "32x192x6144x7168"): [],
}
tag, which = sys.argv[1], sys.argv[2]
ROWS = {"small": SMALL, "mc": MC}[which]
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
    out = [f"{tag} {spec['kind']} {spec['shape']}: dg {dg:.2f} heuristic {heur:.2f} ({dg / heur:.3f}) "
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
    if spec["kind"] == "dense":  # the heuristic's output (last call) against DeepGEMM's
        row.call("qgemm")()
        row.call("deepgemm")()
        torch.cuda.synchronize()
        out.append(f"diff qg-dg {peers.calc_diff(row.d['qgemm'].double(), row.d['deepgemm'].double()):.1e}")
    print(" | ".join(out), flush=True)
    del row
    torch.cuda.empty_cache()
