"""Exploration (2026-11-25 e): the 1D1D main loop reads a K block's column
scales into registers before its wgmma and releases the stage after the wgmma
(DeepGEMM's order) on tiles up to 128x136 (232 / 40 registers); wider tiles
keep reading them while promoting. Forced tiles on the weight-gradient and
k-grouped rows of peers.py (same specs, seed 0), beside DeepGEMM; kineto
(8 GB memset before each call, mean of 20). Run from the repository root on
the GPU machine."""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402
from qgemm import _C  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
print("\n".join(libs.describe()), flush=True)
flusher = peers.Flusher(8 << 30)
qg = libs.qgemm
TILES = [None, (128, 128), (128, 136), (128, 112), (128, 144), (128, 160)]


def t(fn):
    fn()
    torch.cuda.synchronize()
    return peers.time_kineto(fn, flusher, 20)[0]


for spec in [s for s in peers.table_specs(libs.align(), 0) if s["kind"] in ("wgrad", "k-grouped")]:
    row = peers.Row(spec, libs, 0)
    base = t(row.call("deepgemm"))
    print(f"== {spec['kind']} {spec['shape']}: DeepGEMM {base:.1f} us", flush=True)
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    for tile in TILES:
        cfg = None if tile is None else (tile[0], tile[1], 0, 0, 0, 0)
        if spec["kind"] == "wgrad":
            c = None if cfg is None else {"block_m": tile[0], "block_n": tile[1], "multicast": "none"}
            fn = lambda c=c: qg.fp8_gemm_nt(a, b, d, c=d, recipe=(1, 1, 128), config=c)
        else:
            fn = lambda cfg=cfg: _C.k_grouped_torch(row.a, row.sfa_qg, row.b, row.sfb_qg, d, d,
                                                    row.ks, cfg)
        name = "heuristic" if tile is None else f"{tile[0]}x{tile[1]}"
        try:
            us = t(fn)
            print(f"   {name:12s} {us:9.1f} us  dg/qg {base / us:.3f}", flush=True)
        except Exception as e:
            print(f"   {name:12s} error: {peers.short_err(e)}", flush=True)
    del row
    torch.cuda.empty_cache()
