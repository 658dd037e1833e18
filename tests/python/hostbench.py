#!/usr/bin/env python3
"""Host (CPU) cost of one qgemm call from Python, a cached kernel (issue 26).

For dense, contiguous and masked calls through the public API: the median
wall time on the host of one call (from the Python call to its return, the
kernel launched), over --calls calls (default 10000) after a warm-up that
compiles and loads the kernel. The GPU is drained every --batch calls outside
the timed region, so the launch queue never fills and blocks a launch. With
--deepgemm (DeepGEMM importable as deep_gemm), the same calls through
DeepGEMM, in the same process on the same tensors. Also the torch.ops.qgemm
custom ops (the path torch.compile takes, eager here) and the DLPack path
(stream= given), for comparison.

    PYTHONPATH=python python3 tests/python/hostbench.py [--calls N] [--json FILE]

Needs a Hopper GPU and PyTorch. Prints one row per case; --json writes the rows
in the peers-bench format ("kind": "host-dense" | "host-contiguous" |
"host-masked", "qgemm_us", "deepgemm_us"; CPU us per call).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

import qgemm

DEV = "cuda"


def rand_fp8(shape):
    return (torch.randn(shape, device=DEV) * 0.5).to(torch.float8_e4m3fn)


def sfa_of(shape):
    """Scales [.., M, kb] in the M-major layout the GEMMs read."""
    return qgemm.get_col_major_tma_aligned_tensor(torch.rand(shape, device=DEV) + 0.5)


def dense(m, n, k):
    kb, nb = qgemm.ceil_div(k, 128), qgemm.ceil_div(n, 128)
    a, sfa = rand_fp8((m, k)), sfa_of((m, kb))
    b, sfb = rand_fp8((n, k)), torch.rand(nb, kb, device=DEV) + 0.5
    d = torch.empty(m, n, dtype=torch.bfloat16, device=DEV)
    return {
        "qgemm": lambda: qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d),
        "qgemm op": lambda: torch.ops.qgemm.fp8_gemm_nt(a, sfa, b, sfb, d),
        "qgemm dlpack": lambda: qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d, stream=STREAM[0]),
        "deepgemm": lambda dg: dg.fp8_gemm_nt((a, sfa), (b, sfb), d),
    }


def contiguous(g, m_per_group, n, k):
    m = g * m_per_group
    kb, nb = qgemm.ceil_div(k, 128), qgemm.ceil_div(n, 128)
    a, sfa = rand_fp8((m, k)), sfa_of((m, kb))
    b, sfb = rand_fp8((g, n, k)), torch.rand(g, nb, kb, device=DEV) + 0.5
    d = torch.empty(m, n, dtype=torch.bfloat16, device=DEV)
    idx = torch.arange(g, device=DEV, dtype=torch.int32).repeat_interleave(m_per_group)
    f = qgemm.m_grouped_fp8_gemm_nt_contiguous
    return {
        "qgemm": lambda: f((a, sfa), (b, sfb), d, idx),
        "qgemm op": lambda: torch.ops.qgemm.m_grouped_fp8_gemm_nt_contiguous(a, sfa, b, sfb, d, idx),
        "qgemm dlpack": lambda: f((a, sfa), (b, sfb), d, idx, stream=STREAM[0]),
        "deepgemm": lambda dg: dg.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, idx),
    }


def masked(g, m_max, expected_m, n, k):
    kb, nb = qgemm.ceil_div(k, 128), qgemm.ceil_div(n, 128)
    a, sfa = rand_fp8((g, m_max, k)), sfa_of((g, m_max, kb))
    b, sfb = rand_fp8((g, n, k)), torch.rand(g, nb, kb, device=DEV) + 0.5
    d = torch.empty(g, m_max, n, dtype=torch.bfloat16, device=DEV)
    mm = torch.full((g,), expected_m, device=DEV, dtype=torch.int32)
    f = qgemm.m_grouped_fp8_gemm_nt_masked
    return {
        "qgemm": lambda: f((a, sfa), (b, sfb), d, mm, expected_m),
        "qgemm op": lambda: torch.ops.qgemm.m_grouped_fp8_gemm_nt_masked(a, sfa, b, sfb, d, mm,
                                                                          expected_m),
        "qgemm dlpack": lambda: f((a, sfa), (b, sfb), d, mm, expected_m, stream=STREAM[0]),
        "deepgemm": lambda dg: dg.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), d, mm,
                                                               expected_m),
    }


STREAM = [None]  # torch's current stream, set in main (the DLPack rows pass it)

CASES = [
    ("host-dense", "64x7168x2048", lambda: dense(64, 7168, 2048)),
    ("host-dense", "128x2112x7168", lambda: dense(128, 2112, 7168)),
    ("host-dense", "32x9216x4096", lambda: dense(32, 9216, 4096)),
    ("host-dense", "4096x4096x7168", lambda: dense(4096, 4096, 7168)),
    ("host-contiguous", "8x256 rows, 4096x7168", lambda: contiguous(8, 256, 4096, 7168)),
    ("host-masked", "8x128 (expected 32), 4096x7168", lambda: masked(8, 128, 32, 4096, 7168)),
]


def time_calls(call, calls, batch):
    """Median and mean host us per call; the GPU drained between batches, untimed."""
    for _ in range(20):
        call()  # warm-up: compile, load, first-call work
    torch.cuda.synchronize()
    samples = []
    clock = time.perf_counter_ns
    while len(samples) < calls:
        for _ in range(batch):
            t0 = clock()
            call()
            samples.append(clock() - t0)
        torch.cuda.synchronize()
    us = [s / 1e3 for s in samples]
    return statistics.median(us), statistics.fmean(us)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=10000, help="timed calls per case (>= 10000)")
    ap.add_argument("--batch", type=int, default=200, help="calls between GPU drains")
    ap.add_argument("--deepgemm", action="store_true", help="time DeepGEMM beside qgemm")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no GPU (the host bench launches real kernels)")
        return 0
    dg = None
    if args.deepgemm:
        import deep_gemm as dg  # noqa: F811
    STREAM[0] = torch.cuda.current_stream()
    qgemm.register_torch_ops()
    rows = []
    print(f"qgemm {qgemm.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}, {args.calls} calls per case; us per call (median/mean)")
    for kind, shape, make in CASES:
        fns = make()
        row = {"kind": kind, "shape": shape}
        for name in ("qgemm", "qgemm op", "qgemm dlpack", "deepgemm"):
            if name == "deepgemm":
                if dg is None:
                    continue
                fn = lambda f=fns[name]: f(dg)  # noqa: E731
            else:
                fn = fns[name]
            try:
                med, mean = time_calls(fn, args.calls, args.batch)
            except Exception as e:  # a peer that refuses a shape: say so, keep going
                print(f"{kind:16} {shape:32} {name:13} failed: {e}")
                continue
            key = {"qgemm": "qgemm_us", "deepgemm": "deepgemm_us"}.get(
                name, name.replace(" ", "_") + "_us")
            row[key] = round(med, 2)
            print(f"{kind:16} {shape:32} {name:13} {med:7.2f} / {mean:7.2f}")
        rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
