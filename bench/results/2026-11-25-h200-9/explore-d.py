"""Exploration (2026-11-25 d): the masked and psum layouts on the tiles the math
warps' scheduler kept them from (128x256, 128x208/224, 256x128 with A multicast,
256x96, 128x176), now that the SFB warp hands the tiles over; the contiguous
and dense heuristic rows as a check. Beside DeepGEMM's call on the same inputs;
kineto (8 GB memset before each call, mean of 20), as peers.py. Run from the
repository root on the GPU machine."""
import os
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402

import torch  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
print("\n".join(libs.describe()), flush=True)
flusher = peers.Flusher(8 << 30)
align = libs.align()
qg = libs.qgemm


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


def cfgs_of(list_):
    for c in list_:
        cfg = None if c is None else {"block_m": c[0], "block_n": c[1], "multicast": c[2]}
        yield ("heuristic" if c is None else f"{c[0]}x{c[1]} {c[2]}"), cfg


MASKED = [None, (128, 192, "a"), (128, 256, "none"), (128, 256, "a"), (128, 224, "none"),
          (256, 128, "none"), (256, 128, "a"), (256, 96, "a"), (128, 128, "a")]
PSUM = [None, (128, 192, "none"), (128, 256, "none"), (128, 256, "a"), (128, 224, "none"),
        (128, 128, "a")]


def masked_calls(row):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    mm, em = row.masked_m, row.spec["expected_m"]
    for name, cfg in cfgs_of(MASKED):
        yield name, (lambda cfg=cfg: (lambda: qg.m_grouped_fp8_gemm_nt_masked(a, b, d, mm, em, config=cfg)))


def psum_calls(row):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    ends = row.group_ends
    em = row.spec.get("expected_m")
    kw = {} if em is None or row.spec["kind"] != "masked-psum" else {"expected_m_for_psum_layout": em}
    for name, cfg in cfgs_of(PSUM):
        yield name, (lambda cfg=cfg: (lambda: qg.m_grouped_fp8_gemm_nt_contiguous(
            a, b, d, ends, use_psum_layout=True, config=cfg, **kw)))


def contiguous_calls(row):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    idx = row.m_indices
    for name, cfg in cfgs_of([None]):
        yield name, (lambda cfg=cfg: (lambda: qg.m_grouped_fp8_gemm_nt_contiguous(a, b, d, idx, config=cfg)))


def dense_calls(row):
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    for name, cfg in cfgs_of([None]):
        yield name, (lambda cfg=cfg: (lambda: qg.fp8_gemm_nt(a, b, d, config=cfg)))


M = peers.DG_MASKED_MAX_M
for g, mm, n, k in [(6, 1024, 6144, 7168), (6, 1024, 4096, 2048), (32, 192, 6144, 7168),
                    (32, 192, 4096, 2048), (6, 1024, 7168, 3072)]:
    explore(peers.masked_spec(g, mm, n, k, M, 7), masked_calls)
for g, mm, n, k in [(4, 8192, 6144, 7168), (8, 4096, 4096, 4096), (4, 8192, 4096, 2048)]:
    explore(peers.contiguous_psum_spec(g, mm, n, k, align, 7), psum_calls)
explore(peers.masked_psum_spec(6, 1024, 6144, 7168, M, align, 7), psum_calls)
explore(peers.masked_psum_spec(32, 192, 6144, 7168, M, align, 7), psum_calls)
for g, mm, n, k in [(4, 8192, 6144, 7168), (8, 4096, 4096, 4096)]:
    explore(peers.contiguous_spec(g, mm, n, k, align, 7), contiguous_calls)
for m, n, k in [(4096, 7168, 16384), (4096, 4096, 7168), (4096, 2112, 7168), (128, 4096, 7168)]:
    explore(peers.dense_spec(m, n, k, "check"), dense_calls)
