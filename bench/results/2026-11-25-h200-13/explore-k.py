"""Check of the small dense heuristic (2026-11-25 session h, run 3): at M = 100
and 256 (not in DeepGEMM's lists; two and up to four m-blocks), the new choice
(tile order 1, a B tile counted once) against the tile the heuristic took
before (order 16), beside DeepGEMM. Kineto (8 GB memset before each call, mean
of 20). Run from the repository root on the GPU machine: python3 explore-k.py"""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
flusher = peers.Flusher(8 << 30)
qg = libs.qgemm
OLD = {  # (M, N, K) -> (block_m, block_n, split_k) the heuristic took before this session's change
    (100, 2112, 7168): (64, 32, 1), (100, 576, 7168): (64, 32, 2), (100, 24576, 1536): (128, 192, 1),
    (100, 32768, 512): (128, 128, 1), (100, 7168, 16384): (128, 64, 1), (100, 4096, 7168): (128, 32, 1),
    (100, 7168, 2048): (128, 64, 1),
    (256, 2112, 7168): (128, 32, 1), (256, 576, 7168): (64, 48, 2), (256, 24576, 1536): (128, 192, 1),
    (256, 32768, 512): (128, 176, 1), (256, 7168, 16384): (128, 112, 1), (256, 4096, 7168): (128, 64, 1),
    (256, 7168, 2048): (128, 112, 1),
}


def t(fn):
    fn()
    torch.cuda.synchronize()
    return peers.time_kineto(fn, flusher, 20)[0]


for (m, n, k), (bm, bn, sk) in OLD.items():
    spec = peers.dense_spec(m, n, k, "check")
    row = peers.Row(spec, libs, 0)
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    new = qg.select_config(m, n, k)
    old = {"block_m": bm, "block_n": bn, "split_k": sk, "multicast": "none", "swizzle_group": 16}
    dg = t(row.call("deepgemm"))
    us_new = t(row.call("qgemm"))
    us_old = t(lambda: qg.fp8_gemm_nt(a, b, d, config=old))
    print(f"dense {m}x{n}x{k}: dg {dg:.2f} | new {new['block_m']}x{new['block_n']} k{new['split_k']} "
          f"sw{new['swizzle_group']} {us_new:.2f} ({dg / us_new:.3f}) | old {bm}x{bn} k{sk} sw16 "
          f"{us_old:.2f} ({dg / us_old:.3f}) | new/old {us_old / us_new:.3f}", flush=True)
    del row
    torch.cuda.empty_cache()
