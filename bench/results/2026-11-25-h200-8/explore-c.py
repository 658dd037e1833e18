"""Exploration (2026-11-25 c): forced tiles for the weight gradient (block_n in
steps of 8, B multicast) and the psum layout, beside DeepGEMM's call on the
same inputs; kineto (8 GB memset before each call, mean of 20), as peers.py.
Run from the repository root on the GPU machine with bench/ on sys.path."""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402

import torch  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
print("\n".join(libs.describe()), flush=True)
flusher = peers.Flusher(8 << 30)
align = libs.align()
qg = libs.qgemm
R = peers.WGRAD_RECIPE


def t(fn):
    fn()
    torch.cuda.synchronize()
    return peers.time_kineto(fn, flusher, 20)[0]


def explore(spec, calls):
    row = peers.Row(spec, libs, 7)
    base = None
    if libs.dg is not None:
        fn = row.call("deepgemm")
        row.reset("deepgemm")
        base = t(fn)
    print(f"== {spec['kind']} {spec['shape']}: DeepGEMM {base if base is None else round(base, 1)} us",
          flush=True)
    for name, make in calls(row):
        try:
            us = t(make())
            print(f"   {name:24s} {us:9.1f} us  dg/qg {base / us if base else float('nan'):.3f}",
                  flush=True)
        except Exception as e:  # a refused or failed configuration
            print(f"   {name:24s} error: {peers.short_err(e)}", flush=True)
    del row
    torch.cuda.empty_cache()


def wgrad_calls(row):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    m = row.spec["m"]
    cfgs = [None, (128, 128, "a"), (128, 128, "none"), (128, 136, "none"), (128, 144, "none"),
            (128, 144, "b"), (128, 152, "none"), (128, 160, "none"), (128, 160, "b"),
            (128, 160, "a"), (128, 120, "none")]
    if m <= 1024:
        cfgs += [(64, 152, "none"), (64, 128, "none"), (64, 160, "none")]
    for c in cfgs:
        cfg = None if c is None else {"block_m": c[0], "block_n": c[1], "multicast": c[2]}
        name = "heuristic" if c is None else f"{c[0]}x{c[1]} {c[2]}"
        yield name, (lambda cfg=cfg: (lambda: qg.fp8_gemm_nt(a, b, d, c=d, recipe=R, config=cfg)))


def psum_calls(row):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    ends = row.group_ends
    em = row.spec.get("expected_m")
    for c in [None, (128, 128, "a"), (128, 192, "a"), (128, 192, "none"), (128, 160, "a"),
              (128, 128, "none"), (128, 96, "a")]:
        cfg = None if c is None else {"block_m": c[0], "block_n": c[1], "multicast": c[2]}
        name = "heuristic" if c is None else f"{c[0]}x{c[1]} {c[2]}"
        kw = {} if em is None or row.spec["kind"] != "masked-psum" else {"expected_m_for_psum_layout": em}
        yield name, (lambda cfg=cfg, kw=kw: (lambda: qg.m_grouped_fp8_gemm_nt_contiguous(
            a, b, d, ends, use_psum_layout=True, config=cfg, **kw)))


import os  # noqa: E402
ROUND = os.environ.get("EXPLORE_ROUND", "1")
if ROUND == "2":  # after the heuristic change: the heuristic beside its neighbours
    def wgrad_calls(row):  # noqa: F811
        a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
        for c in [None, (128, 128, "none"), (128, 144, "none"), (128, 160, "none")]:
            cfg = None if c is None else {"block_m": c[0], "block_n": c[1], "multicast": c[2]}
            name = "heuristic" if c is None else f"{c[0]}x{c[1]} {c[2]}"
            yield name, (lambda cfg=cfg: (lambda: qg.fp8_gemm_nt(a, b, d, c=d, recipe=R, config=cfg)))
WGRAD = [(2112, 4096, 7168), (576, 4096, 7168), (4096, 4096, 7168), (7168, 4096, 16384),
         (7168, 4096, 2048), (4096, 7168, 2048), (7168, 2048, 2048), (4096, 7168, 8192)]
if ROUND == "2":
    WGRAD = [(24576, 4096, 1536), (32768, 4096, 512), (2112, 4096, 7168), (4096, 4096, 7168)]
for m, n, k in WGRAD:
    explore(peers.wgrad_spec(m, n, k), wgrad_calls)
for g, mm, n, k in [(4, 8192, 6144, 7168), (8, 4096, 4096, 4096), (4, 8192, 4096, 2048)]:
    explore(peers.contiguous_psum_spec(g, mm, n, k, align, 7), psum_calls)
explore(peers.masked_psum_spec(6, 1024, 6144, 7168, peers.DG_MASKED_MAX_M, align, 7), psum_calls)
