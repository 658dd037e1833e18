#!/usr/bin/env python3
"""bench/peers.py -- qgemm beside DeepGEMM and cuBLASLt, same inputs, one process.

Issue 25 (side-by-side benchmark) and issue 26 (host overhead). DeepGEMM is
imported only when importable (``import deep_gemm``); otherwise the run says
"DeepGEMM: not installed" and its columns are null. cuBLASLt is PyTorch's
``torch._scaled_mm`` with the 1x128 (A) / 128x128 (B) float32 scale recipe,
where this PyTorch and cuBLASLt run it (null otherwise, and for grouped rows).

Every row quantizes its inputs once (per-token 1x128 casts of A, per-block
128x128 casts of B, amax / 448 as DeepSeek-V3 does) and hands the same FP8
tensors and scales to every library, each in the layout it takes. Per row the
libraries run interleaved (default order: DeepGEMM, cuBLASLt, qgemm) under two
timings:

  kineto  CUPTI GPU time of every kernel one call launches (DeepGEMM's own
          method): an 8 GB memset before each call, 30 calls, mean per call.
          The flush is a driver memset (cuMemsetD8Async), which the trace
          records as a memset, not a kernel: every kernel in the trace is
          the library's.
  events  CUDA events around one call after a 2x-L2 memset, synchronized
          after each call, median of 30; the libraries take turns call by
          call (each runs at the same clock and temperature). Host stalls of
          a call (work done after the flush finished) show here and not in
          kineto. Dense rows are also timed by kineto after this same 2x-L2
          flush (the events row's kineto_small_us): events minus that is
          the host stall of a single call, one cache state on both sides.

Accuracy on every row: ``diff = 1 - 2*sum(x*y) / sum(x*x + y*y)`` of each
library's output against the float64 product of the dequantized inputs (valid
rows only; plus C for the accumulating kinds), and qgemm against DeepGEMM.

Row kinds and how each library is called (the same call for both: qgemm takes
DeepGEMM's names and argument order; B's 1x128 scales, like A's, in each
library's own M-major helper layout):
  dense            fp8_gemm_nt(a, b, d), BF16 D (cuBLASLt too)
  contiguous       m_grouped_fp8_gemm_nt_contiguous(a, b, d, grouped_layout [M])
  masked           m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, expected_m)
  wgrad            fp8_gemm_nt(a, b, d, c=d, recipe=(1, 1, 128)): A and B both
                   scaled per 1x128, FP32 D = C + A B^T in place
  k-grouped        k_grouped_fp8_gemm_nt_contiguous(a, b, d, ks, ks_tensor, c=d,
                   recipe=(1, 1, 128)): a, b flat with group g's A_g [M, K_g],
                   B_g [N, K_g] K-concatenated, FP32 D[g] = C[g] + A_g B_g^T
  contiguous-psum  m_grouped_fp8_gemm_nt_contiguous(a, b, d, ends [G],
                   use_psum_layout=True): ends[g] = group g's end row, each group
                   starting at the previous end rounded up to 128 (the alignment)
  masked-psum      the masked rows laid out as psum (A and D of G x max_m rows),
                   through the same call with expected_m_for_psum_layout
The accumulating kinds (wgrad, k-grouped) take C random (x 32), not zero: D is
reset from the saved C before each library's first (checked) call, outside
any timing; the timed calls then keep adding into D (no copy in the timings).
cuBLASLt runs the dense rows only (its columns are null elsewhere).

Shapes: DeepGEMM's SM90 FP8 test lists (tests/generators.py of 54e2261):
forward M in {1, 128, 4096} x 7 (N, K); dgrad M = 4096 with (N, K) swapped;
m-grouped contiguous (4, 8192), (8, 4096) and masked (32, 192), (6, 1024),
(32, 20), (6, 20) (max_m 4096, expected_m = 1.2 x the mean rows, as its test
passes it), each x 4 (N, K); rows per group drawn uniformly in 0.7-1.3 x the
mean, as its generators do (seeded here, so every run draws the same);
plus the DeepSeek-V3 shapes M in {64, 128, 4096} x 6 (N, K).
Training (issue 30), 37 rows after those 58: wgrad M x 4096 x K for the 7
(M, K) = (N, K) above (its backward FP32 accumulate case); k-grouped (G, M, N,
mean K) = (4, 4096, 7168, 8192), (4, 7168, 2048, 8192), (8, 4096, 7168, 4096),
(8, 7168, 2048, 4096), (16, 4096, 7168, 2048), (16, 7168, 2048, 2048), K per
group drawn in 0.7-1.3 x the mean and rounded up to 128; contiguous-psum and
masked-psum on the contiguous and masked shapes above, with the same group
sizes as those rows (its test reseeds before the psum pass), masked-psum with
expected_m_for_psum_layout = the masked row's expected_m, contiguous-psum with
none (as its test). --filter 'wgrad|psum|k-grouped' selects exactly these;
'^masked ' (not 'masked') the masked rows without masked-psum.

Modes (one run may combine --host with the table; --sustained runs alone):
  python3 bench/peers.py [--quick] [--filter RE] [--warm-jobs N] [--out DIR]
  python3 bench/peers.py --host [--host-only] [--out DIR]
  python3 bench/peers.py --sustained S --shape MxNxK [--out DIR]
  python3 bench/peers.py --dry-run [...]       # the rows, no GPU needed

--host rows carry the Python figures (qgemm_us, deepgemm_us) and the C API's
own, c_api_us: `build/qgemm bench --host-calls N --json` run in its own
process per row after the Python timing (--qgemm-cli PATH for another build;
without the binary c_api_us is null and peers.txt says why).

--out DIR writes DIR/peers.json and DIR/peers.txt after every row (rows of an
existing peers.json with other keys are kept, so --host or --sustained runs
add to a table run's file).

Needs only python3 and PyTorch (qgemm's package on PYTHONPATH, DeepGEMM
optional); nvidia-smi or pynvml for --sustained clocks and power.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import zlib
from typing import Any, Callable, Dict, List, Optional, Tuple

DEEPGEMM_COMMIT = "54e2261"
LIBS = ("deepgemm", "cublaslt", "qgemm")
SHORT = {"deepgemm": "dg", "cublaslt": "cb", "qgemm": "qg"}

# DeepGEMM 54e2261 tests/generators.py
DG_NK = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
DG_M_FWD = [1, 128, 4096]
DG_M_BWD = [4096]
DG_CONTIG = [(4, 8192), (8, 4096)]
DG_MASKED = [(32, 192), (6, 1024), (32, 20), (6, 20)]
DG_GROUPED_NK = [(6144, 7168), (7168, 3072), (4096, 4096), (4096, 2048)]
DG_MASKED_MAX_M = 4096
# training: weight gradient (enumerate_normal's backward FP32 wgrad case: M = each N above,
# N = 4096, the same K; both operands 1x128-scaled, D = C + A B^T in place) and the
# k-grouped weight gradient (enumerate_k_grouped_contiguous on SM90: K-major, 128-aligned K)
DG_K_GROUPED = [(4, 4096, 7168, 8192), (4, 7168, 2048, 8192), (8, 4096, 7168, 4096),
                (8, 7168, 2048, 4096), (16, 4096, 7168, 2048), (16, 7168, 2048, 2048)]  # (G, M, N, mean K)
K_ALIGN = 128  # k-grouped: each group's K, a multiple of 128 on SM90 (both libraries)
WGRAD_RECIPE = (1, 1, 128)
# DeepSeek-V3 shapes
V3_M = [64, 128, 4096]
V3_NK = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]

# issue 26: host overhead shapes (cached kernel, CPU time of one Python call)
HOST_DENSE = [(64, 7168, 2048), (128, 2112, 7168), (32, 9216, 4096), (4096, 4096, 7168)]
HOST_CONTIG = [(8, 256, 4096, 2048), (4, 1024, 7168, 2048)]   # (G, rows per group, N, K)
HOST_MASKED = [(6, 20, 4096, 2048), (32, 20, 4096, 2048)]     # (G, rows per group, N, K)

QUICK = [
    "dense 128x2112x7168", "dense 4096x7168x16384", "dense 4096x2112x7168", "dense 1x4096x7168",
    "dense 64x7168x2048", "contiguous 4x8192x4096x2048", "masked 6x1024x4096x2048", "masked 32x20x7168x3072",
    "wgrad 4096x4096x7168", "k-grouped 4x4096x7168x8192", "contiguous-psum 4x8192x4096x2048",
    "masked-psum 6x1024x4096x2048",
]

# the kinds of the timed table, in the order peers.txt lists them
TABLE_KINDS = ("dense", "contiguous", "masked", "wgrad", "k-grouped", "contiguous-psum", "masked-psum")
TRAINING_KINDS = ("wgrad", "k-grouped", "contiguous-psum", "masked-psum")  # issue 30
ACCUMULATING = ("wgrad", "k-grouped")  # D = C + A B^T in place: D is reset from C before the checked call
ROW_SPLIT = ("contiguous", "contiguous-psum", "masked-psum")  # groups of rows along M of one A [M, K]

DEFAULT_ALIGN = 128  # both libraries' contiguous-layout alignment on SM90 unless they say otherwise


def log(*a: Any) -> None:
    print(*a, flush=True)


def short_err(e: BaseException) -> str:
    s = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    return s[:300]


# ---- row specs (pure Python: --dry-run needs no torch) ---------------------------


def _seed(name: str, base: int) -> int:
    return (zlib.crc32(name.encode()) ^ base) & 0x7FFFFFFF


def dense_spec(m: int, n: int, k: int, tag: str) -> Dict[str, Any]:
    return {"kind": "dense", "set": tag, "m": m, "n": n, "k": k, "shape": f"{m}x{n}x{k}"}


def contiguous_spec(g: int, m_mean: int, n: int, k: int, align: int, base_seed: int,
                    tag: str = "deepgemm-test") -> Dict[str, Any]:
    shape = f"{g}x{m_mean}x{n}x{k}"
    rng = random.Random(_seed("contiguous " + shape, base_seed))
    ms = [int(m_mean * rng.uniform(0.7, 1.3)) for _ in range(g)]
    aligned = [(x + align - 1) // align * align for x in ms]
    return {"kind": "contiguous", "set": tag, "g": g, "m_mean": m_mean, "n": n, "k": k, "ms": ms,
            "aligned": aligned, "m_total": sum(aligned), "valid_m": sum(ms), "align": align,
            "shape": shape}


def masked_spec(g: int, m_mean: int, n: int, k: int, max_m: int, base_seed: int,
                tag: str = "deepgemm-test") -> Dict[str, Any]:
    shape = f"{g}x{m_mean}x{n}x{k}"
    rng = random.Random(_seed("masked " + shape, base_seed))
    ms = [min(max_m, int(m_mean * rng.uniform(0.7, 1.3))) for _ in range(g)]
    return {"kind": "masked", "set": tag, "g": g, "m_mean": m_mean, "n": n, "k": k, "ms": ms,
            "max_m": max_m, "expected_m": int(m_mean * 1.2), "valid_m": sum(ms), "shape": shape}


def _group_ends(ms: List[int], align: int) -> Tuple[List[int], List[int]]:
    """The psum layout of groups of ms rows: each group starts at the previous end rounded up
    to `align` (0 for the first). Returns (aligned row counts, end rows)."""
    aligned = [(x + align - 1) // align * align for x in ms]
    ends, start = [], 0
    for mi, al in zip(ms, aligned):
        ends.append(start + mi)
        start += al
    return aligned, ends


def wgrad_spec(m: int, n: int, k: int, tag: str = "deepgemm-wgrad") -> Dict[str, Any]:
    """D [M, N] FP32 = C + A B^T in place, A and B both scaled per 1x128 (recipe (1, 1, 128))."""
    return {"kind": "wgrad", "set": tag, "m": m, "n": n, "k": k, "shape": f"{m}x{n}x{k}"}


def k_grouped_spec(g: int, m: int, n: int, k_mean: int, base_seed: int,
                   tag: str = "deepgemm-test") -> Dict[str, Any]:
    """D[g] [M, N] FP32 = C[g] + A_g B_g^T for G groups splitting K: K_g drawn uniformly in
    0.7-1.3 x the mean, rounded up to 128, as DeepGEMM's SM90 test does (seeded here)."""
    shape = f"{g}x{m}x{n}x{k_mean}"
    rng = random.Random(_seed("k-grouped " + shape, base_seed))
    real = [max(1, int(k_mean * rng.uniform(0.7, 1.3))) for _ in range(g)]
    ks = [(x + K_ALIGN - 1) // K_ALIGN * K_ALIGN for x in real]
    return {"kind": "k-grouped", "set": tag, "g": g, "m": m, "n": n, "k": k_mean, "ks": ks,
            "sum_k": sum(ks), "shape": shape}


def contiguous_psum_spec(g: int, m_mean: int, n: int, k: int, align: int, base_seed: int,
                         tag: str = "deepgemm-test") -> Dict[str, Any]:
    """The contiguous row of the same shape (the same group sizes: DeepGEMM's test reseeds
    before its psum pass) in the psum layout: grouped_layout [G] holds each group's end row."""
    s = contiguous_spec(g, m_mean, n, k, align, base_seed, tag)
    _, ends = _group_ends(s["ms"], align)
    s.update(kind="contiguous-psum", ends=ends, m_rows=s["m_total"])
    return s


def masked_psum_spec(g: int, m_mean: int, n: int, k: int, max_m: int, align: int, base_seed: int,
                     tag: str = "deepgemm-test") -> Dict[str, Any]:
    """The masked row of the same shape (the same masked_m) laid out as psum, as DeepGEMM's
    masked test does with use_psum_layout: A and D of G x max_m rows, group g at rows
    [previous end rounded up to `align`, end), run through the contiguous entry point with
    expected_m_for_psum_layout = the masked row's expected_m."""
    s = masked_spec(g, m_mean, n, k, max_m, base_seed, tag)
    aligned, ends = _group_ends(s["ms"], align)
    s.update(kind="masked-psum", aligned=aligned, ends=ends, m_total=sum(aligned),
             m_rows=max(g * max_m, sum(aligned)), align=align)
    return s


def spec_flops(s: Dict[str, Any]) -> float:
    if s["kind"] in ("dense", "wgrad"):
        return 2.0 * s["m"] * s["n"] * s["k"]
    if s["kind"] == "k-grouped":
        return 2.0 * s["m"] * s["n"] * s["sum_k"]
    return 2.0 * s["valid_m"] * s["n"] * s["k"]


def spec_detail(s: Dict[str, Any]) -> str:
    """What --dry-run prints after a row's shape."""
    kind = s["kind"]
    if kind == "contiguous":
        return f"rows {s['ms']} -> M {s['m_total']} (align {s['align']}), valid {s['valid_m']}"
    if kind == "masked":
        return f"max_m {s['max_m']} masked_m {s['ms']} expected_m {s['expected_m']}"
    if kind == "wgrad":
        return "FP32 D = C + A B^T in place (c=d), recipe (1, 1, 128)"
    if kind == "k-grouped":
        return f"ks {s['ks']} (sum {s['sum_k']}), FP32 D[g] = C[g] + A_g B_g^T in place, recipe (1, 1, 128)"
    if kind == "contiguous-psum":
        return f"rows {s['ms']} -> ends {s['ends']}, M {s['m_rows']}, valid {s['valid_m']}"
    if kind == "masked-psum":
        return (f"masked_m {s['ms']} -> ends {s['ends']}, M {s['m_rows']} (G x max_m), "
                f"expected_m_for_psum_layout {s['expected_m']}")
    return ""


def spec_key(s: Dict[str, Any]) -> str:
    return f"{s['kind']} {s['shape']}"


def table_specs(align: int, seed: int) -> List[Dict[str, Any]]:
    specs: List[Dict[str, Any]] = []
    seen = set()

    def add(s: Dict[str, Any]) -> None:
        if spec_key(s) not in seen:
            seen.add(spec_key(s))
            specs.append(s)

    for m in DG_M_FWD:
        for n, k in DG_NK:
            add(dense_spec(m, n, k, "deepgemm-fwd"))
    for m in DG_M_BWD:
        for n, k in DG_NK:
            add(dense_spec(m, k, n, "deepgemm-dgrad"))
    for m in V3_M:
        for n, k in V3_NK:
            add(dense_spec(m, n, k, "v3"))
    for g, mm in DG_CONTIG:
        for n, k in DG_GROUPED_NK:
            add(contiguous_spec(g, mm, n, k, align, seed))
    for g, mm in DG_MASKED:
        for n, k in DG_GROUPED_NK:
            add(masked_spec(g, mm, n, k, DG_MASKED_MAX_M, seed))
    # training (issue 30): after the rows above, so their numbering stays
    for m in DG_M_BWD:
        for n, k in DG_NK:
            add(wgrad_spec(n, m, k))
    for g, m, n, km in DG_K_GROUPED:
        add(k_grouped_spec(g, m, n, km, seed))
    for g, mm in DG_CONTIG:
        for n, k in DG_GROUPED_NK:
            add(contiguous_psum_spec(g, mm, n, k, align, seed))
    for g, mm in DG_MASKED:
        for n, k in DG_GROUPED_NK:
            add(masked_psum_spec(g, mm, n, k, DG_MASKED_MAX_M, align, seed))
    # issue 52 (set "issue52", after the rows above): the grouped rows of
    # /work/shared/peers/measured-2026-11-28-h200/grouped.txt that DeepGEMM's lists lack, where
    # it runs 128x192 with B multicast (bench/dg_heuristic.py): masked 1 x 1024 rows exactly
    # (max_m = expected_m = 1024), masked 4 x ~256, contiguous 32 x ~256
    for n, k in DG_GROUPED_NK:
        one = masked_spec(1, 1024, n, k, 1024, seed, "issue52")
        one.update(ms=[1024], expected_m=1024, valid_m=1024)
        add(one)
        add(masked_spec(4, 256, n, k, DG_MASKED_MAX_M, seed, "issue52"))
        add(contiguous_spec(32, 256, n, k, align, seed, "issue52"))
    return specs


def host_specs(align: int, seed: int) -> List[Dict[str, Any]]:
    specs = [dense_spec(m, n, k, "host") for m, n, k in HOST_DENSE]
    specs += [contiguous_spec(g, mm, n, k, align, seed, "host") for g, mm, n, k in HOST_CONTIG]
    specs += [masked_spec(g, mm, n, k, DG_MASKED_MAX_M, seed, "host") for g, mm, n, k in HOST_MASKED]
    return specs


def parse_shape(text: str) -> Tuple[int, int, int]:
    parts = [int(x) for x in re.split(r"[x,]", text.strip().lower()) if x]
    if len(parts) != 3:
        raise SystemExit(f"--shape wants MxNxK, got {text!r}")
    return parts[0], parts[1], parts[2]


def select(specs: List[Dict[str, Any]], quick: bool, filt: Optional[str]) -> List[Dict[str, Any]]:
    if quick:
        specs = [s for s in specs if spec_key(s) in QUICK]
    if filt:
        rx = re.compile(filt)
        specs = [s for s in specs if rx.search(f"{spec_key(s)} {s['set']}")]
    return specs


# ---- libraries ------------------------------------------------------------------------


class Libs:
    """The libraries this process could import, and why not where not."""

    def __init__(self, want: Tuple[str, ...]) -> None:
        self.want = want
        self.qgemm: Any = None
        self.dg: Any = None
        self.why: Dict[str, str] = {}
        self.cb_ok: Optional[bool] = None  # cuBLASLt decided per call
        self.cb_variant: Optional[int] = None
        if "qgemm" in want:
            try:
                import qgemm  # noqa: F401
                self.qgemm = qgemm
            except Exception as e:  # not built / not on PYTHONPATH
                self.why["qgemm"] = short_err(e)
        if "deepgemm" in want:
            try:
                import deep_gemm  # noqa: F401
                self.dg = deep_gemm
            except Exception as e:
                self.why["deepgemm"] = short_err(e)

    def align(self) -> int:
        values = [DEFAULT_ALIGN]
        if self.qgemm is not None:
            try:
                values.append(int(self.qgemm.get_m_alignment_for_contiguous_layout()))
            except Exception:
                pass
        if self.dg is not None:
            try:
                values.append(int(self.dg.get_mk_alignment_for_contiguous_layout()))
            except Exception:
                pass
        a = 1
        for v in values:
            if v > 0:
                a = a * v // math.gcd(a, v)
        return a

    def describe(self) -> List[str]:
        out = []
        if self.qgemm is not None:
            out.append(f"qgemm: {getattr(self.qgemm, '__version__', '?')} from {os.path.dirname(self.qgemm.__file__)}")
        elif "qgemm" in self.want:
            out.append(f"qgemm: not importable ({self.why.get('qgemm')})")
        if self.dg is not None:
            out.append(f"DeepGEMM: {getattr(self.dg, '__version__', '?')} from {os.path.dirname(self.dg.__file__)}")
        elif "deepgemm" in self.want:
            out.append(f"DeepGEMM: not installed ({self.why.get('deepgemm')})")
        return out


# ---- inputs ------------------------------------------------------------------------------


def _cast_rows(x):
    """Per-token 1x128 casts: x [..., R, K] -> (fp8 [..., R, K], float32 scales [..., R, ceil(K/128)])."""
    import torch
    k = x.shape[-1]
    kp = (k + 127) // 128 * 128
    xf = x.float()
    if kp != k:
        xf = torch.nn.functional.pad(xf, (0, kp - k))
    blocks = xf.view(*x.shape[:-1], kp // 128, 128)
    amax = blocks.abs().amax(dim=-1).clamp(min=1e-4)
    q = (blocks * (448.0 / amax).unsqueeze(-1)).to(torch.float8_e4m3fn)
    return q.view(*x.shape[:-1], kp)[..., :k].contiguous(), (amax / 448.0).contiguous()


def _cast_blocks(x):
    """Per-block 128x128 casts: x [..., N, K] -> (fp8 [..., N, K], float32 [..., ceil(N/128), ceil(K/128)])."""
    import torch
    *lead, n, k = x.shape
    np_, kp = (n + 127) // 128 * 128, (k + 127) // 128 * 128
    padded = torch.zeros((*lead, np_, kp), dtype=torch.float32, device=x.device)
    padded[..., :n, :k] = x
    blocks = padded.view(*lead, np_ // 128, 128, kp // 128, 128)
    amax = blocks.abs().amax(dim=(-3, -1), keepdim=True).clamp(min=1e-4)
    q = (blocks * (448.0 / amax)).to(torch.float8_e4m3fn)
    q = q.view(*lead, np_, kp)[..., :n, :k].contiguous()
    return q, (amax / 448.0).reshape(*lead, np_ // 128, kp // 128).contiguous()


def _mn_major(sf):
    """float32 scales [R, kb] or [G, R, kb] stored R-major, R padded to a multiple of 4
    (16 bytes): the TMA-aligned layout both qgemm and DeepGEMM read SFA in."""
    import torch
    grouped = sf.dim() == 3
    s3 = sf if grouped else sf.unsqueeze(0)
    g, r, kb = s3.shape
    ld = (r + 3) // 4 * 4
    out = torch.empty((g, kb, ld), dtype=torch.float32, device=sf.device).transpose(1, 2)[:, :r, :]
    out.copy_(s3)
    return out if grouped else out[0]


def _dequant_rows(q, sf, k):
    import torch
    return q.to(torch.float32).to(torch.float64) * sf.to(torch.float64).repeat_interleave(128, dim=-1)[..., :k]


def _dequant_blocks(q, sf, n, k):
    import torch
    s = sf.to(torch.float64).repeat_interleave(128, dim=-2)[..., :n, :]
    return q.to(torch.float32).to(torch.float64) * s.repeat_interleave(128, dim=-1)[..., :k]


def calc_diff(x, y) -> float:
    import torch
    x = x.to(torch.float64)
    y = y.to(torch.float64)
    denom = (x * x + y * y).sum()
    if float(denom) == 0.0:
        return 0.0
    return float(1.0 - 2.0 * (x * y).sum() / denom)


DEV = "cuda"  # the device the rows run on (a CPU dry check of the row code sets "cpu")


class Row:
    """The tensors of one spec, each library's call, and its outputs' valid parts.

    Each library gets the same FP8 data and scales, the A (and, for the per-row B scales of
    wgrad and k-grouped, B) scales in its own helper's M-major layout, computed here once,
    outside every timing. The accumulating kinds (wgrad, k-grouped) keep C: `reset(lib)` copies
    it into that library's D before the checked first call."""

    def __init__(self, spec: Dict[str, Any], libs: Libs, seed: int, real: bool = True) -> None:
        import torch
        self.spec = spec
        self.libs = libs
        self.errors: Dict[str, str] = {}
        dev = DEV
        kind, n, k = spec["kind"], spec["n"], spec["k"]
        gen = torch.Generator(device=dev)
        gen.manual_seed(_seed(spec_key(spec), seed))
        self.ref = None
        self.c = None  # C of the accumulating kinds: D = C + A B^T
        self.sfb_rows = None  # per-row (1x128) B scales, row-major: wgrad and k-grouped

        if kind == "k-grouped":
            m = spec["m"]
            self._init_k_grouped(gen, real)
            sfa = self.sfa_rows
        else:
            if kind in ("dense", "wgrad"):
                m = spec["m"]
                a_shape, b_shape = (m, k), (n, k)
            elif kind in ROW_SPLIT:
                m = spec["m_rows"] if "m_rows" in spec else spec["m_total"]
                a_shape, b_shape = (m, k), (spec["g"], n, k)
            else:
                m = spec["max_m"]
                a_shape, b_shape = (spec["g"], m, k), (spec["g"], n, k)
            used = spec["m_total"] if kind in ROW_SPLIT else m  # rows of A some group reaches

            if real:
                x = torch.randn((used, *a_shape[1:]) if used != m else a_shape, device=dev,
                                dtype=torch.bfloat16, generator=gen)
                w = torch.randn(b_shape, device=dev, dtype=torch.bfloat16, generator=gen)
                if kind in ROW_SPLIT:  # zero the padding rows, as DeepGEMM's generator does
                    start = 0
                    for mi, al in zip(spec["ms"], spec["aligned"]):
                        x[start + mi:start + al] = 0
                        start += al
                a, sfa = _cast_rows(x)
                if used != m:  # masked-psum: rows past the last group (G x max_m in all), zero
                    self.a = torch.zeros(a_shape, device=dev, dtype=torch.float8_e4m3fn)
                    self.a[:used] = a
                    sfa_full = torch.ones((m, sfa.shape[-1]), device=dev, dtype=torch.float32)
                    sfa_full[:used] = sfa
                    sfa = sfa_full
                else:
                    self.a = a
                if kind == "wgrad":  # B scaled per 1x128 too
                    self.b, self.sfb_rows = _cast_rows(w)
                    self.sfb = None
                else:
                    self.b, self.sfb = _cast_blocks(w)
                del x, w
            else:  # warm-up processes: right shapes and layouts, no data work
                kb, nb = (k + 127) // 128, (n + 127) // 128
                self.a = torch.zeros(a_shape, device=dev, dtype=torch.float8_e4m3fn)
                self.b = torch.zeros(b_shape, device=dev, dtype=torch.float8_e4m3fn)
                sfa = torch.ones((*a_shape[:-1], kb), device=dev, dtype=torch.float32)
                if kind == "wgrad":
                    self.sfb = None
                    self.sfb_rows = torch.ones((n, kb), device=dev, dtype=torch.float32)
                else:
                    self.sfb = torch.ones((*b_shape[:-2], nb, kb), device=dev, dtype=torch.float32)
            self.sfa_rows = sfa  # row-major [.., R, kb]

        # layouts: each library's own helper where it has one (computed once, outside timing);
        # B's 128x128 block scales are taken as they are, its 1x128 scales are made N-major
        self.sfa_qg = self.sfa_dg = None
        self.sfb_qg = self.sfb_dg = self.sfb
        if libs.qgemm is not None:
            try:
                self.sfa_qg = libs.qgemm.get_col_major_tma_aligned_tensor(sfa)
                if self.sfb_rows is not None:
                    self.sfb_qg = libs.qgemm.get_col_major_tma_aligned_tensor(self.sfb_rows)
            except Exception as e:
                self.sfa_qg = None
                self.errors["qgemm"] = "sf layout: " + short_err(e)
        if libs.dg is not None:
            try:
                self.sfa_dg = libs.dg.get_mn_major_tma_aligned_tensor(sfa)
            except Exception:
                self.sfa_dg = _mn_major(sfa)
            if self.sfb_rows is not None:
                try:
                    self.sfb_dg = libs.dg.get_mn_major_tma_aligned_tensor(self.sfb_rows)
                except Exception:
                    self.sfb_dg = _mn_major(self.sfb_rows)

        if kind == "contiguous":
            idx = torch.full((m,), -1, dtype=torch.int32)
            start = 0
            for gi, (mi, al) in enumerate(zip(spec["ms"], spec["aligned"])):
                idx[start:start + mi] = gi
                start += al
            self.m_indices = idx.to(dev)
        if kind in ("contiguous-psum", "masked-psum"):
            self.group_ends = torch.tensor(spec["ends"], dtype=torch.int32, device=dev)
        if kind == "masked":
            self.masked_m = torch.tensor(spec["ms"], dtype=torch.int32, device=dev)

        if kind == "k-grouped":
            out_shape: Tuple[int, ...] = (spec["g"], m, n)
        elif kind == "masked":
            out_shape = (spec["g"], m, n)
        else:
            out_shape = (m, n)
        out_dtype = torch.float32 if kind in ACCUMULATING else torch.bfloat16
        self.d = {lib: torch.empty(out_shape, device=dev, dtype=out_dtype)
                  for lib in LIBS if lib in libs.want and (lib != "cublaslt" or kind == "dense")}
        if kind in ACCUMULATING:  # C random (times 32, as DeepGEMM's generators), not zero
            self.c = (torch.randn(out_shape, device=dev, dtype=torch.float32, generator=gen) * 32
                      if real else torch.zeros(out_shape, device=dev, dtype=torch.float32))

        # cuBLASLt (dense only): scale_a [M, kb] with strides (1, M); scale_b = sfb^T
        self.cb_scales: List[Tuple[Any, Any]] = []
        if kind == "dense" and "cublaslt" in libs.want:
            kb = self.sfb.shape[-1]
            sa = torch.empty((kb, m), device=dev, dtype=torch.float32).t()
            sa.copy_(sfa)
            nb = self.sfb.shape[0]
            sb_pad = torch.zeros((nb, (kb + 3) // 4 * 4), device=dev, dtype=torch.float32)[:, :kb]
            sb_pad.copy_(self.sfb)
            self.cb_scales = [(sa, self.sfb.t()), (sa, sb_pad.t())]

    def _init_k_grouped(self, gen: Any, real: bool) -> None:
        """DeepGEMM's SM90 k-grouped layout (K-major): a and b flat, group g's A_g [M, K_g] and
        B_g [N, K_g] row-major one after the other; scales [M|N, sum(K)/128], group g's 1x128
        scales in its K range (row-major here; each library's M-major layout made after)."""
        import torch
        s, dev = self.spec, DEV
        m, n, ks = s["m"], s["n"], s["ks"]
        total, kbs = s["sum_k"], s["sum_k"] // 128
        self.ks = list(ks)
        self.ks_tensor = torch.tensor(ks, dtype=torch.int32, device=dev)
        if not real:
            self.a = torch.zeros(total * m, device=dev, dtype=torch.float8_e4m3fn)
            self.b = torch.zeros(total * n, device=dev, dtype=torch.float8_e4m3fn)
            self.sfa_rows = torch.ones((m, kbs), device=dev, dtype=torch.float32)
            self.sfb_rows = torch.ones((n, kbs), device=dev, dtype=torch.float32)
            self.sfb = None
            return
        self.a = torch.empty(total * m, device=dev, dtype=torch.float8_e4m3fn)
        self.b = torch.empty(total * n, device=dev, dtype=torch.float8_e4m3fn)
        self.sfa_rows = torch.empty((m, kbs), device=dev, dtype=torch.float32)
        self.sfb_rows = torch.empty((n, kbs), device=dev, dtype=torch.float32)
        self.sfb = None
        prefix = 0
        for kg in ks:
            if kg:
                kb0, kb1 = prefix // 128, (prefix + kg) // 128
                for flat, sf, rows in ((self.a, self.sfa_rows, m), (self.b, self.sfb_rows, n)):
                    x = torch.randn((rows, kg), device=dev, dtype=torch.bfloat16, generator=gen)
                    q, sq = _cast_rows(x)
                    flat[prefix * rows:(prefix + kg) * rows] = q.reshape(-1)
                    sf[:, kb0:kb1] = sq
                    del x, q, sq
            prefix += kg

    def _row_groups(self) -> List[Tuple[int, int, int]]:
        """(group, first row, valid rows) of the non-empty groups of a ROW_SPLIT kind."""
        out, start = [], 0
        for gi, (mi, al) in enumerate(zip(self.spec["ms"], self.spec["aligned"])):
            if mi:
                out.append((gi, start, mi))
            start += al
        return out

    # the calls ----------------------------------------------------------------------

    def reset(self, lib: str) -> None:
        """D = C for the accumulating kinds (before the checked call; never inside a timing)."""
        if self.c is not None and lib in self.d:
            self.d[lib].copy_(self.c)

    def call(self, lib: str) -> Optional[Callable[[], Any]]:
        kind = self.spec["kind"]
        if lib not in self.d:
            return None
        d = self.d[lib]
        if lib == "cublaslt":
            if kind != "dense" or not self.cb_scales:
                return None
            return self._cublaslt_call()
        if lib == "qgemm":
            mod, sfa, sfb = self.libs.qgemm, self.sfa_qg, self.sfb_qg
        elif lib == "deepgemm":
            mod, sfa, sfb = self.libs.dg, self.sfa_dg, self.sfb_dg
        else:
            return None
        if mod is None or sfa is None or sfb is None:
            return None
        # the same call for both: qgemm takes DeepGEMM's names and argument order
        a, b = (self.a, sfa), (self.b, sfb)
        if kind == "dense":
            return lambda: mod.fp8_gemm_nt(a, b, d)
        if kind == "wgrad":
            return lambda: mod.fp8_gemm_nt(a, b, d, c=d, recipe=WGRAD_RECIPE)
        if kind == "k-grouped":
            ks, kst = self.ks, self.ks_tensor
            return lambda: mod.k_grouped_fp8_gemm_nt_contiguous(a, b, d, ks, kst, c=d, recipe=WGRAD_RECIPE)
        if kind == "contiguous":
            idx = self.m_indices
            return lambda: mod.m_grouped_fp8_gemm_nt_contiguous(a, b, d, idx)
        if kind == "contiguous-psum":  # DeepGEMM's test passes no expected_m here
            ends = self.group_ends
            return lambda: mod.m_grouped_fp8_gemm_nt_contiguous(a, b, d, ends, use_psum_layout=True)
        if kind == "masked-psum":
            ends, em = self.group_ends, self.spec["expected_m"]
            return lambda: mod.m_grouped_fp8_gemm_nt_contiguous(a, b, d, ends, use_psum_layout=True,
                                                                expected_m_for_psum_layout=em)
        mm, em = self.masked_m, self.spec["expected_m"]
        return lambda: mod.m_grouped_fp8_gemm_nt_masked(a, b, d, mm, em)

    def _cublaslt_call(self) -> Optional[Callable[[], Any]]:
        """torch._scaled_mm with blockwise scales: finds the scale layout this PyTorch takes
        (and whether out= works), once per row; None (with the reason) when none runs."""
        import torch
        a, bt, d = self.a, self.b.t(), self.d["cublaslt"]
        order = list(range(len(self.cb_scales)))
        if self.libs.cb_variant is not None:
            order.remove(self.libs.cb_variant)
            order.insert(0, self.libs.cb_variant)
        last = None
        for v in order:
            sa, sb = self.cb_scales[v]
            for use_out in (True, False):
                if use_out:
                    def fn(sa=sa, sb=sb):
                        return torch._scaled_mm(a, bt, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=d)
                else:  # this PyTorch has no out= here: the result is allocated per call
                    def fn(sa=sa, sb=sb):
                        return torch._scaled_mm(a, bt, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
                try:
                    r = fn()
                    torch.cuda.synchronize()
                    if not use_out:
                        d.copy_(r)  # the accuracy check reads d
                        torch.cuda.synchronize()
                    self.libs.cb_variant = v
                    return fn
                except Exception as e:
                    last = e
        self.errors["cublaslt"] = short_err(last) if last else "no scale layout accepted"
        return None

    # accuracy -------------------------------------------------------------------------

    def reference(self):
        """float64 product of the dequantized inputs (plus C for the accumulating kinds),
        valid rows only, as one flat tensor (with the matching flattener for outputs)."""
        import torch
        s, n, k = self.spec, self.spec["n"], self.spec["k"]
        kind = s["kind"]
        if kind == "dense":
            a64 = _dequant_rows(self.a, self.sfa_rows, k)
            b64 = _dequant_blocks(self.b, self.sfb, n, k)
            return (a64 @ b64.t()).reshape(-1)
        if kind == "wgrad":
            a64 = _dequant_rows(self.a, self.sfa_rows, k)
            b64 = _dequant_rows(self.b, self.sfb_rows, k)
            return (self.c.to(torch.float64) + a64 @ b64.t()).reshape(-1)
        parts = []
        if kind == "k-grouped":
            m, prefix = s["m"], 0
            for gi, kg in enumerate(s["ks"]):
                c64 = self.c[gi].to(torch.float64)
                if kg:
                    kb0, kb1 = prefix // 128, (prefix + kg) // 128
                    a64 = _dequant_rows(self.a[prefix * m:(prefix + kg) * m].view(m, kg),
                                        self.sfa_rows[:, kb0:kb1], kg)
                    b64 = _dequant_rows(self.b[prefix * n:(prefix + kg) * n].view(n, kg),
                                        self.sfb_rows[:, kb0:kb1], kg)
                    c64 = c64 + a64 @ b64.t()
                parts.append(c64.reshape(-1))
                prefix += kg
        elif kind in ROW_SPLIT:
            for gi, start, mi in self._row_groups():
                a64 = _dequant_rows(self.a[start:start + mi], self.sfa_rows[start:start + mi], k)
                b64 = _dequant_blocks(self.b[gi], self.sfb[gi], n, k)
                parts.append((a64 @ b64.t()).reshape(-1))
        else:
            for gi, mi in enumerate(s["ms"]):
                if mi:
                    a64 = _dequant_rows(self.a[gi, :mi], self.sfa_rows[gi, :mi], k)
                    b64 = _dequant_blocks(self.b[gi], self.sfb[gi], n, k)
                    parts.append((a64 @ b64.t()).reshape(-1))
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64, device=DEV)

    def valid(self, lib: str):
        import torch
        s, d = self.spec, self.d[lib]
        if s["kind"] in ("dense", "wgrad", "k-grouped"):
            return d.reshape(-1)
        parts = []
        if s["kind"] in ROW_SPLIT:
            for _, start, mi in self._row_groups():
                parts.append(d[start:start + mi].reshape(-1))
        else:
            for gi, mi in enumerate(s["ms"]):
                if mi:
                    parts.append(d[gi, :mi].reshape(-1))
        return torch.cat(parts) if parts else torch.zeros(0, dtype=d.dtype, device=d.device)


# ---- timing ------------------------------------------------------------------------------


class Flusher:
    """Memsets that evict L2 before a call: `big` (8 GB by default, DeepGEMM's flush) for
    kineto, `small` (2x L2) for events. A driver memset (cuMemsetD8Async) is a memset in the
    trace, not a kernel; where it is unavailable torch's zero_() stands in and its kernels'
    names are excluded from kineto sums."""

    def __init__(self, big_bytes: int) -> None:
        import torch
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.l2 = int(getattr(props, "L2_cache_size", 0) or 50 << 20)
        self.small_bytes = 2 * self.l2
        self.big_bytes = max(int(big_bytes), self.small_bytes)
        self.buf = torch.empty(self.big_bytes, dtype=torch.uint8, device="cuda")
        self.exclude: set = set()
        self.method = "torch zero_"
        self._memset = None
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            f = lib.cuMemsetD8Async
            f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
            probe = torch.zeros(4096, dtype=torch.uint8, device="cuda")
            stream = torch.cuda.current_stream().cuda_stream
            rc = f(probe.data_ptr(), 0x5A, probe.numel(), stream)
            torch.cuda.synchronize()
            if rc == 0 and int((probe == 0x5A).sum()) == probe.numel():
                self._memset = f
                self.method = "cuMemsetD8Async"
        except Exception:
            self._memset = None
        if self._memset is None:
            self.exclude = self._torch_fill_names()

    def _torch_fill_names(self) -> set:
        names = set()
        try:
            evs = kineto_kernels(lambda: self.buf[:1 << 20].zero_(), 1, None)
            names = {n for n, _ in evs}
        except Exception:
            pass
        return names

    def _fill(self, nbytes: int) -> None:
        import torch
        if self._memset is not None:
            self._memset(self.buf.data_ptr(), 0, nbytes, torch.cuda.current_stream().cuda_stream)
        else:
            self.buf[:nbytes].zero_()

    def big(self) -> None:
        self._fill(self.big_bytes)

    def small(self) -> None:
        self._fill(self.small_bytes)


def kineto_kernels(fn: Callable[[], Any], n: int, flush: Optional[Callable[[], None]]) -> List[Tuple[str, float]]:
    """(name, microseconds) of every GPU kernel in the recorded round of n calls."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule
    prof = profile(activities=[ProfilerActivity.CUDA],
                   schedule=schedule(wait=0, warmup=1, active=1, repeat=1))
    with prof:
        for _ in range(2):
            for _ in range(n):
                if flush is not None:
                    flush()
                fn()
            torch.cuda.synchronize()
            prof.step()
    out: List[Tuple[str, float]] = []
    fd, path = tempfile.mkstemp(suffix=".json", prefix="peers-trace-")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        events = trace.get("traceEvents", trace) if isinstance(trace, dict) else trace
        for e in events:
            if isinstance(e, dict) and e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel":
                out.append((str(e.get("name", "")), float(e.get("dur", 0.0))))
        return out
    except Exception:
        out = []
        for e in prof.events():  # fallback: the profiler's own device events
            if str(getattr(e, "device_type", "")).endswith("CUDA"):
                name = e.name
                if name.startswith("Memset") or name.startswith("Memcpy"):
                    continue
                out.append((name, e.time_range.elapsed_us()))
        return out
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def time_kineto(fn: Callable[[], Any], flusher: Flusher, n: int,
                small: bool = False) -> Tuple[float, float, List[str]]:
    """Mean CUPTI time of one call's kernels after the big flush (or, small=True, after the
    events timing's 2x-L2 flush: the two then share a cache state)."""
    flush = flusher.small if small else flusher.big
    evs = [(nm, us) for nm, us in kineto_kernels(fn, n, flush) if nm not in flusher.exclude]
    if not evs:
        raise RuntimeError("no kernel in the trace")
    names = sorted({nm for nm, _ in evs})
    return sum(us for _, us in evs) / n, len(evs) / n, names


def time_events(calls: Dict[str, Callable[[], Any]], order: List[str], flusher: Flusher,
                n: int, errors: Dict[str, str]) -> Dict[str, float]:
    """Median events time of each library's call, the libraries interleaved call by call
    (rep i runs every library once, in `order`): all of them then run at the same clock and
    temperature. Run one library's n calls after the other's, the last one ran on a GPU the
    others had heated (h200-10: qgemm, run last, 4096x7168x16384 +109.5 us over its kineto
    time, DeepGEMM +26.9). A library whose call raises is left out, its error in `errors`
    under "<lib>-events" (as the per-library timing did)."""
    import torch
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times: Dict[str, List[float]] = {lib: [] for lib in order if lib in calls}
    torch.cuda.synchronize()
    for _ in range(n):
        for lib in list(times):
            try:
                flusher.small()
                start.record()
                calls[lib]()
                end.record()
                end.synchronize()
                times[lib].append(start.elapsed_time(end) * 1e3)
            except Exception as e:  # this library leaves the timing; the others go on
                errors[f"{lib}-events"] = short_err(e)
                del times[lib]
    return {lib: statistics.median(t) for lib, t in times.items()}


# ---- the table -----------------------------------------------------------------------------


def run_row(spec: Dict[str, Any], libs: Libs, flusher: Flusher, args: argparse.Namespace,
            index: int = 0) -> List[Dict[str, Any]]:
    import torch
    order = [x for x in args.order.split(",") if x in libs.want]
    if args.rotate and order:  # row i starts with library i mod n
        r = index % len(order)
        order = order[r:] + order[:r]
    base = {"kind": spec["kind"], "shape": spec["shape"], "set": spec["set"]}
    for key in ("g", "valid_m", "m_total", "m_rows", "max_m", "expected_m", "sum_k"):
        if key in spec:
            base[key] = spec[key]
    base["flops"] = spec_flops(spec)
    base["order"] = ",".join(order)
    errors: Dict[str, str] = {}
    try:
        row = Row(spec, libs, args.seed)
    except Exception as e:
        msg = "inputs: " + short_err(e)
        log(f"  {spec_key(spec)}: {msg}")
        torch.cuda.empty_cache()
        return [dict(base, timing=t, qgemm_us=None, deepgemm_us=None, cublaslt_us=None, diff=None,
                     errors={"all": msg}) for t in ("kineto", "events")]
    errors.update(row.errors)

    calls: Dict[str, Callable[[], Any]] = {}
    for lib in order:
        if lib in errors:
            continue
        try:
            fn = row.call(lib)
        except Exception as e:
            errors[lib] = short_err(e)
            continue
        if fn is None:
            if lib == "deepgemm" and libs.dg is None:
                continue
            if lib == "qgemm" and libs.qgemm is None:
                continue
            errors.setdefault(lib, row.errors.get(lib, "not run for this kind"))
            continue
        try:  # first call: compiles / loads the kernel, and is the accuracy run
            row.reset(lib)  # accumulating kinds: D = C first (the timed calls then keep adding)
            fn()
            torch.cuda.synchronize()
            calls[lib] = fn
        except Exception as e:
            errors[lib] = short_err(e)
    errors.update({k: v for k, v in row.errors.items() if k not in errors})

    acc: Dict[str, Optional[float]] = {}
    try:
        ref = row.reference()
        for lib in calls:
            acc[lib] = calc_diff(row.valid(lib), ref)
        del ref
        if "qgemm" in calls and "deepgemm" in calls:
            acc["qgemm_vs_deepgemm"] = calc_diff(row.valid("qgemm"), row.valid("deepgemm"))
    except Exception as e:
        errors["reference"] = short_err(e)
    torch.cuda.empty_cache()

    res: Dict[str, Dict[str, Any]] = {"kineto": {}, "events": {}}
    kern: Dict[str, Any] = {}
    for lib in order:
        if lib not in calls:
            continue
        try:
            us, per_call, names = time_kineto(calls[lib], flusher, args.iters)
            kern[lib] = {"kernels_per_call": round(per_call, 3), "names": names[:4]}
            res["kineto"][lib] = us
        except Exception as e:
            errors[f"{lib}-kineto"] = short_err(e)
    res["events"] = time_events(calls, order, flusher, args.iters, errors)
    # Dense rows: kineto again after the events timing's own 2x-L2 flush, so that events
    # minus kineto (issue 26: the host stalls a single call adds) compares one cache state;
    # against the 8 GB flush's kineto it mixed two (rows moved by tens of us either way).
    kineto_small: Dict[str, float] = {}
    if spec["kind"] == "dense":
        for lib in order:
            if lib in calls:
                try:
                    kineto_small[lib] = time_kineto(calls[lib], flusher, args.iters, small=True)[0]
                except Exception as e:
                    errors[f"{lib}-kineto-small"] = short_err(e)

    rows = []
    for timing in ("kineto", "events"):
        r = dict(base, timing=timing)
        for lib in LIBS:
            r[f"{lib}_us"] = res[timing].get(lib)
        r["diff"] = acc.get("qgemm")
        r["deepgemm_diff"] = acc.get("deepgemm")
        r["cublaslt_diff"] = acc.get("cublaslt")
        r["qgemm_vs_deepgemm"] = acc.get("qgemm_vs_deepgemm")
        if timing == "kineto" and kern:
            r["kernels"] = kern
        if timing == "events" and kineto_small:
            r["kineto_small_us"] = {lib: kineto_small.get(lib) for lib in LIBS}
        if errors:
            r["errors"] = dict(errors)
        rows.append(r)
    del row, calls
    return rows


def fmt_us(x: Optional[float]) -> str:
    return f"{x:9.2f}" if isinstance(x, (int, float)) else "        -"


def fmt_ratio(a: Optional[float], b: Optional[float]) -> str:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0:
        return f"{a / b:5.3f}"
    return "    -"


def geomean(xs: List[float]) -> Optional[float]:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def render_txt(doc: Dict[str, Any], max_diff: float) -> str:
    rows = doc.get("rows", [])
    L: List[str] = []
    L.append(f"# qgemm {doc.get('qgemm_commit')} (qgemm {doc.get('qgemm_version')}) beside DeepGEMM "
             f"{doc.get('deepgemm_commit')} and cuBLASLt (torch._scaled_mm, 1x128 / 128x128 scales)")
    L.append(f"# {doc.get('device')} | {doc.get('date')} | torch {doc.get('torch')} | {doc.get('notes', '')}")
    L.append("# kineto: CUPTI time of every kernel of one call (flush memset before each, mean of "
             f"{doc.get('iters', 30)}); events: CUDA events around one call after a 2x-L2 memset, median, the libraries taking turns call by call.")
    L.append("# ratio dg/qg = deepgemm_us / qgemm_us (> 1: qgemm faster); TFLOPS over valid rows; "
             "diff: vs the float64 product of the dequantized inputs")
    bench = [r for r in rows if r.get("kind") in TABLE_KINDS]
    by_key: Dict[Tuple[str, str], Dict[str, Dict[str, Any]]] = {}
    for r in bench:
        by_key.setdefault((r["kind"], r["shape"]), {})[r["timing"]] = r
    if by_key:
        L.append("")
        L.append(f"{'kind':15} {'shape':22} {'set':14} | {'kineto us: dg':>13} {'cb':>9} {'qg':>9} "
                 f"{'dg/qg':>5} {'cb/qg':>5} | {'TFLOPS qg':>9} {'dg':>5} | {'events us: dg':>13} "
                 f"{'cb':>9} {'qg':>9} {'dg/qg':>5} | {'diff qg':>8} {'dg':>8} {'qg~dg':>8}")
        for (kind, shape), t in by_key.items():
            k, e = t.get("kineto", {}), t.get("events", {})
            any_r = k or e
            fl = any_r.get("flops") or 0.0

            def tf(us):
                return f"{fl / us / 1e6:5.0f}" if isinstance(us, (int, float)) and us > 0 else "    -"

            def df(x):
                return f"{x:8.1e}" if isinstance(x, (int, float)) else "       -"
            flag = ""
            if isinstance(any_r.get("diff"), (int, float)) and any_r["diff"] > max_diff:
                flag = "  ACCURACY"
            if any_r.get("errors"):
                flag += "  errors: " + "; ".join(f"{a}: {b}" for a, b in any_r["errors"].items())[:200]
            L.append(f"{kind:15} {shape:22} {any_r.get('set', ''):14} | {fmt_us(k.get('deepgemm_us')):>13} "
                     f"{fmt_us(k.get('cublaslt_us'))} {fmt_us(k.get('qgemm_us'))} "
                     f"{fmt_ratio(k.get('deepgemm_us'), k.get('qgemm_us'))} "
                     f"{fmt_ratio(k.get('cublaslt_us'), k.get('qgemm_us'))} | "
                     f"{tf(k.get('qgemm_us')):>9} {tf(k.get('deepgemm_us'))} | "
                     f"{fmt_us(e.get('deepgemm_us')):>13} {fmt_us(e.get('cublaslt_us'))} {fmt_us(e.get('qgemm_us'))} "
                     f"{fmt_ratio(e.get('deepgemm_us'), e.get('qgemm_us'))} | "
                     f"{df(any_r.get('diff'))} {df(any_r.get('deepgemm_diff'))} {df(any_r.get('qgemm_vs_deepgemm'))}{flag}")

        L.append("")
        L.append("geomean of deepgemm_us / qgemm_us (> 1: qgemm faster), and cublaslt_us / qgemm_us:")
        groups = [("dense, DeepGEMM's test shapes (fwd + dgrad)", lambda r: r["kind"] == "dense" and r.get("set", "").startswith("deepgemm")),
                  ("dense, all", lambda r: r["kind"] == "dense"),
                  ("dense, M >= 4096", lambda r: r["kind"] == "dense" and int(r["shape"].split("x")[0]) >= 4096),
                  ("contiguous", lambda r: r["kind"] == "contiguous"),
                  ("masked", lambda r: r["kind"] == "masked"),
                  ("grouped (contiguous + masked)", lambda r: r["kind"] in ("contiguous", "masked")),
                  ("wgrad (FP32 D += A B^T, 1x128 A and B)", lambda r: r["kind"] == "wgrad"),
                  ("k-grouped (FP32 D[g] += A_g B_g^T)", lambda r: r["kind"] == "k-grouped"),
                  ("contiguous-psum", lambda r: r["kind"] == "contiguous-psum"),
                  ("masked-psum (contiguous entry point)", lambda r: r["kind"] == "masked-psum"),
                  ("training (wgrad, k-grouped, both psum)", lambda r: r["kind"] in TRAINING_KINDS)]
        for name, pred in groups:
            parts = []
            for timing in ("kineto", "events"):
                sel = [r for r in bench if r["timing"] == timing and pred(r)]
                dg = [r["deepgemm_us"] / r["qgemm_us"] for r in sel if r.get("deepgemm_us") and r.get("qgemm_us")]
                cb = [r["cublaslt_us"] / r["qgemm_us"] for r in sel if r.get("cublaslt_us") and r.get("qgemm_us")]
                gd, gc = geomean(dg), geomean(cb)
                worst = min(dg) if dg else None
                parts.append(f"{timing}: dg/qg {gd:.3f} ({len(dg)} rows, worst {worst:.3f})" if gd else f"{timing}: dg/qg -")
                if gc:
                    parts[-1] += f", cb/qg {gc:.3f} ({len(cb)})"
            L.append(f"  {name:46} " + " | ".join(parts))

        diffs = {lib: [r.get(key) for r in bench if r["timing"] == "kineto" and isinstance(r.get(key), (int, float))]
                 for lib, key in (("qgemm", "diff"), ("deepgemm", "deepgemm_diff"), ("cublaslt", "cublaslt_diff"))}
        L.append("")
        L.append(f"accuracy (diff vs dequantized float64 reference; bound {max_diff:g}):")
        for lib, ds in diffs.items():
            if ds:
                over = sum(1 for x in ds if x > max_diff)
                L.append(f"  {lib:9} max {max(ds):.2e} median {statistics.median(ds):.2e} over {len(ds)} rows; above bound: {over}")
        qd = [r.get("qgemm_vs_deepgemm") for r in bench if r["timing"] == "kineto" and isinstance(r.get("qgemm_vs_deepgemm"), (int, float))]
        if qd:
            L.append(f"  qgemm vs DeepGEMM outputs: max diff {max(qd):.2e}")

        L.append("")
        L.append("single call, events minus kineto (us): host-path stalls a call adds to its GPU time (issue 26 target: <= 5 us);")
        L.append("  kineto after the events' own 2x-L2 flush where the row has it (kineto_small_us), else after the 8 GB flush (marked *)")
        L.append(f"  {'shape':22} {'qgemm':>9} {'DeepGEMM':>9} {'cuBLASLt':>9}")
        for (kind, shape), t in by_key.items():
            if kind != "dense":
                continue
            k, e = t.get("kineto", {}), t.get("events", {})
            same = e.get("kineto_small_us") or {}
            cells = []
            for lib in ("qgemm", "deepgemm", "cublaslt"):
                a, b = e.get(f"{lib}_us"), same.get(lib)
                star = " "
                if not isinstance(b, (int, float)):
                    b, star = k.get(f"{lib}_us"), "*"
                cells.append(f"{a - b:8.2f}{star}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) else "        -")
            flag = "  > 5 us" if cells[0].strip() not in ("-",) and float(cells[0].rstrip("* ")) > 5 else ""
            L.append(f"  {shape:22} {' '.join(cells)}{flag}")

    host = [r for r in rows if str(r.get("kind", "")).startswith("host-")]
    if host:
        L.append("")
        L.append("host overhead: CPU us per Python call of a cached kernel (perf_counter_ns around the call, "
                 f"median of {host[0].get('calls', '?')} calls, periodic drains outside the timing)")
        c_calls = next((r["c_api_calls"] for r in host if r.get("c_api_calls")), "?")
        L.append("C API: `qgemm bench --host` in its own process: CLOCK_MONOTONIC around each qg_ call (call to return, "
                 f"the launch enqueued), median of {c_calls} calls, stream drained every 200 calls outside the timing, "
                 "D checked after them")
        L.append(f"  {'kind':16} {'shape':22} {'qgemm':>9} {'DeepGEMM':>9} {'dg/qg':>6} {'C API':>9}  p10-p90 qgemm | DeepGEMM | C API")
        for r in host:
            def spread(lib):
                lo, hi = r.get(f"{lib}_p10"), r.get(f"{lib}_p90")
                return f"{lo:.1f}-{hi:.1f}" if lo is not None and hi is not None else "-"
            err = ("  errors: " + "; ".join(f"{a}: {b}" for a, b in r["errors"].items())[:160]) if r.get("errors") else ""
            L.append(f"  {r['kind']:16} {r['shape']:22} {fmt_us(r.get('qgemm_us'))} {fmt_us(r.get('deepgemm_us'))} "
                     f"{fmt_ratio(r.get('deepgemm_us'), r.get('qgemm_us')):>6} {fmt_us(r.get('c_api_us'))}  "
                     f"{spread('qgemm')} | {spread('deepgemm')} | {spread('c_api')}{err}")
        notes = [r for r in host if r.get("c_api_us") is None and r.get("c_api_note")]
        for r in notes:
            L.append(f"  C API n/a for {r['kind']} {r['shape']}: {r['c_api_note']}")

    sus = [r for r in rows if r.get("kind") == "sustained"]
    if sus:
        L.append("")
        L.append("sustained loops (no flush; TFLOPS from CUDA events over the loop; median SM clock and power of "
                 "the samples taken during it):")
        for r in sus:
            lib = r.get("lib")
            if r.get("error"):
                L.append(f"  sustained {SHORT.get(lib, lib)} {r['shape']}: {r['error']}")
                continue
            L.append(f"  sustained {SHORT.get(lib, lib)} {r['shape']}: {r['us_per_call']:.1f} us/call "
                     f"{r['tflops']:.0f} TFLOPS | SM clock median {r.get('sm_mhz')} MHz | power median "
                     f"{r.get('power_w')} W | {r.get('samples')} samples | {r.get('seconds'):.1f} s (rep {r.get('rep')})")
    return "\n".join(L) + "\n"


# ---- output ---------------------------------------------------------------------------------


def row_key(r: Dict[str, Any]) -> Tuple:
    return (r.get("kind"), r.get("shape"), r.get("timing"), r.get("lib"), r.get("rep"))


class Output:
    def __init__(self, out_dir: Optional[str], meta: Dict[str, Any], max_diff: float) -> None:
        self.dir = out_dir
        self.max_diff = max_diff
        self.doc: Dict[str, Any] = dict(meta)
        self.doc["rows"] = []
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, "peers.json")
            if os.path.exists(path):
                try:
                    with open(path) as f:
                        old = json.load(f)
                    self.doc["rows"] = list(old.get("rows", []))
                except Exception as e:
                    log(f"warning: {path} unreadable ({short_err(e)}): starting a new one")

    def add(self, rows: List[Dict[str, Any]]) -> None:
        keys = {row_key(r) for r in rows}
        self.doc["rows"] = [r for r in self.doc["rows"] if row_key(r) not in keys] + rows
        self.write()

    def write(self) -> None:
        if not self.dir:
            return
        tmp = os.path.join(self.dir, ".peers.json.tmp")
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=1)
        os.replace(tmp, os.path.join(self.dir, "peers.json"))
        with open(os.path.join(self.dir, "peers.txt"), "w") as f:
            f.write(render_txt(self.doc, self.max_diff))


def qgemm_commit(repo: str) -> str:
    env = os.environ.get("QGEMM_COMMIT")
    if env:
        return env
    try:
        c = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        if c.returncode != 0:
            return "unknown"
        commit = c.stdout.strip()
        st = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True, timeout=10)
        return commit + ("+dirty" if st.returncode == 0 and st.stdout.strip() else "")
    except Exception:
        return "unknown"


# ---- warm-up processes ---------------------------------------------------------------------


def warm_worker(path: str) -> int:
    """A --warm-jobs child: one call of each library per spec (compiles and caches kernels)."""
    with open(path) as f:
        job = json.load(f)
    import torch
    libs = Libs(tuple(job["libs"]))
    for spec in job["specs"]:
        t0 = time.time()
        res = {"key": spec_key(spec)}
        try:
            row = Row(spec, libs, 0, real=False)
            for lib in ("deepgemm", "qgemm"):
                if lib not in libs.want:
                    continue
                try:
                    fn = row.call(lib)
                    if fn is not None:
                        fn()
                        torch.cuda.synchronize()
                        res[lib] = "ok"
                except Exception as e:
                    res[lib] = short_err(e)
            del row
            torch.cuda.empty_cache()
        except Exception as e:
            res["error"] = short_err(e)
        res["s"] = round(time.time() - t0, 2)
        print("WARM " + json.dumps(res), flush=True)
    return 0


def warm_parallel(specs: List[Dict[str, Any]], jobs: int, libs: Libs) -> None:
    want = [lib for lib in ("deepgemm", "qgemm") if getattr(libs, "dg" if lib == "deepgemm" else "qgemm") is not None]
    if not want or not specs or jobs <= 0:
        return
    t0 = time.time()
    jobs = min(jobs, len(specs))
    tmpdir = tempfile.mkdtemp(prefix="peers-warm-")
    procs = []
    for j in range(jobs):
        part = specs[j::jobs]
        path = os.path.join(tmpdir, f"job{j}.json")
        with open(path, "w") as f:
            json.dump({"specs": part, "libs": want}, f)
        logf = open(os.path.join(tmpdir, f"job{j}.log"), "w")
        procs.append((subprocess.Popen([sys.executable, os.path.abspath(__file__), "--_warm-worker", path],
                                       stdout=logf, stderr=subprocess.STDOUT, text=True), logf))
    failures = []
    done = 0
    for p, logf in procs:
        p.wait()
        logf.close()
        with open(logf.name) as f:
            out = f.read()
        for line in out.splitlines():
            if line.startswith("WARM "):
                done += 1
                try:
                    r = json.loads(line[5:])
                except ValueError:
                    continue
                for lib in want:
                    if r.get(lib, "ok") != "ok":
                        failures.append(f"{r['key']} {lib}: {r[lib]}")
                if r.get("error"):
                    failures.append(f"{r['key']}: {r['error']}")
        if p.returncode != 0:
            tail = out.strip().splitlines()[-3:] if out.strip() else []
            failures.append(f"warm process exited {p.returncode}: {' | '.join(tail)}")
    shutil.rmtree(tmpdir, ignore_errors=True)
    log(f"warm: {done}/{len(specs)} shapes ({', '.join(want)}) in {jobs} processes, {time.time() - t0:.1f} s"
        + (f"; {len(failures)} failures" if failures else ""))
    for f in failures[:20]:
        log(f"  warm failure: {f}")


# ---- host overhead (issue 26) --------------------------------------------------------------


def default_cli() -> str:
    """The CLI `make` builds in this checkout: <repo>/build/qgemm."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "qgemm")


def c_api_command(spec: Dict[str, Any], cli: str, calls: int, seed: int) -> List[str]:
    """`qgemm bench --host` for a host row's problem: the C API's CPU time per qg_ call.

    Dense: the same M x N x K. Contiguous: G experts of the mean rows each (the CLI's groups are
    uniform; the row's own sizes are drawn around that mean), so M differs a little. Masked: G
    groups of max_m rows with expected_m valid in each, so the CLI's expected_m (= its valid rows)
    is the row's: the same launch-cache key (kind, M_max, N, K, G, expected_m) as the Python call.
    """
    cmd = [cli, "bench", "--host-calls", str(min(max(calls, 100), 10000000)), "--json",
           "--seed", str(max(seed, 0))]
    n, k = spec["n"], spec["k"]
    if spec["kind"] == "dense":
        return cmd + ["--shape", f"{spec['m']}x{n}x{k}"]
    g, mm = spec["g"], spec["m_mean"]
    if spec["kind"] == "contiguous":
        return cmd + ["--shape", f"{g * mm}x{n}x{k}", "--grouped-contiguous", f"{g},{mm}"]
    max_m = spec["max_m"]
    valid = max(1, min(max_m, spec["expected_m"]))
    return cmd + ["--shape", f"{max_m}x{n}x{k}", "--grouped-masked", f"{g},{max_m},{valid}"]


def c_api_figure(spec: Dict[str, Any], args: argparse.Namespace, r: Dict[str, Any]) -> None:
    """Fill r's c_api_us (median), c_api_p10 and c_api_p90 from the CLI, or leave c_api_us None
    and say why in r["c_api_note"] (shown in peers.txt)."""
    cli = args.qgemm_cli or default_cli()
    cmd = c_api_command(spec, cli, args.host_calls, args.seed)
    r["c_api_cmd"] = " ".join(cmd[1:])
    if not (os.path.isfile(cli) and os.access(cli, os.X_OK)):
        r["c_api_note"] = f"{cli} not built (run make, or pass --qgemm-cli PATH)"
        return
    try:
        c = subprocess.run(cmd, capture_output=True, text=True, timeout=args.c_api_timeout)
    except subprocess.TimeoutExpired:
        r["c_api_note"] = f"qgemm bench --host did not finish in {args.c_api_timeout} s"
        return
    except OSError as e:
        r["c_api_note"] = f"cannot run {cli}: {short_err(e)}"
        return
    err = " | ".join(c.stderr.strip().splitlines()[-2:])[:300]
    try:
        doc = json.loads(c.stdout) if c.stdout.strip() else None
    except ValueError:
        doc = None
    rows = doc.get("rows", []) if isinstance(doc, dict) else []
    if not rows:
        what = {2: "usage error", 3: "no usable GPU"}.get(c.returncode, f"exit {c.returncode}")
        r["c_api_note"] = f"qgemm bench --host: {what}: {err or 'no JSON on stdout'}"
        return
    row = rows[0]
    if not row.get("qgemm_pass") or row.get("c_api_us") is None:
        r["c_api_note"] = f"qgemm bench --host: {row.get('error') or err or 'check failed'}"[:300]
        return
    r["c_api_us"] = row["c_api_us"]
    r["c_api_p10"] = row.get("c_api_p10_us")
    r["c_api_p90"] = row.get("c_api_p90_us")
    r["c_api_calls"] = row.get("calls")


def host_mode(libs: Libs, args: argparse.Namespace, out: Output) -> None:
    import gc
    import torch
    specs = select(host_specs(libs.align(), args.seed), False, args.filter)
    calls_total = args.host_calls
    blocks = 10
    per_block = max(1, calls_total // blocks)
    drain = args.host_drain
    pc = time.perf_counter_ns
    # The first row measured ran slower for every library (h200-11: 64x7168x2048 qgemm 12.45 us,
    # DeepGEMM 21.25, C API 4.48, against 8.98-9.19 / 16.2-17.6 / 3.24-3.78 on the other dense
    # rows), as if the CPU or the driver were still warming up. The first row is therefore
    # measured twice and its first pass (logged as a warm-up) left out of the output.
    for i, spec in enumerate(specs[:1] + specs):
        warm_up = i == 0
        kind = "host-" + spec["kind"]
        r: Dict[str, Any] = {"kind": kind, "shape": spec["shape"], "qgemm_us": None, "deepgemm_us": None,
                             "c_api_us": None, "calls": per_block * blocks}
        errors: Dict[str, str] = {}
        try:
            row = Row(spec, libs, args.seed, real=False)
        except Exception as e:
            r["errors"] = {"inputs": short_err(e)}
            if not warm_up:
                c_api_figure(spec, args, r)
                out.add([r])
            continue
        fns: Dict[str, Callable[[], Any]] = {}
        for lib in ("deepgemm", "qgemm"):
            if lib not in libs.want:
                continue
            try:
                fn = row.call(lib)
                if fn is None:
                    if (lib == "deepgemm" and libs.dg is None) or (lib == "qgemm" and libs.qgemm is None):
                        continue
                    errors[lib] = row.errors.get(lib, "not available")
                    continue
                for _ in range(20):
                    fn()
                torch.cuda.synchronize()
                fns[lib] = fn
            except Exception as e:
                errors[lib] = short_err(e)
        samples: Dict[str, List[int]] = {lib: [] for lib in fns}
        gc_was = gc.isenabled()
        gc.disable()
        try:
            for _ in range(blocks):
                for lib, fn in fns.items():
                    s = samples[lib]
                    for i in range(per_block):
                        if i % drain == 0:
                            torch.cuda.synchronize()
                        t0 = pc()
                        fn()
                        t1 = pc()
                        s.append(t1 - t0)
                    torch.cuda.synchronize()
        except Exception as e:
            errors["loop"] = short_err(e)
        finally:
            if gc_was:
                gc.enable()
        for lib, s in samples.items():
            if s:
                s.sort()
                r[f"{lib}_us"] = statistics.median(s) / 1e3
                r[f"{lib}_p10"] = s[len(s) // 10] / 1e3
                r[f"{lib}_p90"] = s[len(s) * 9 // 10] / 1e3
        if errors:
            r["errors"] = errors
        del row, fns
        torch.cuda.empty_cache()
        c_api_figure(spec, args, r)  # its own process, after this row's buffers are freed
        log(("warm-up pass, left out: " if warm_up else "")
            + f"{kind:16} {spec['shape']:22} qgemm {fmt_us(r.get('qgemm_us'))} us  DeepGEMM {fmt_us(r.get('deepgemm_us'))} us"
            f"  C API {fmt_us(r.get('c_api_us'))} us" + (f" ({r['c_api_note']})" if r.get("c_api_note") else "")
            + (f"  errors: {errors}" if errors else ""))
        if not warm_up:
            out.add([r])


# ---- sustained --------------------------------------------------------------------------------


class PowerSampler:
    """SM clock (MHz) and power (W) every 100 ms, from `nvidia-smi -lms 100` in a background
    process, else pynvml in a thread."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.samples: List[Tuple[float, float, float]] = []
        self.proc = None
        self.thread = None
        self.stop_flag = False
        self.source = None

    def start(self) -> None:
        smi = shutil.which("nvidia-smi")
        if smi:
            try:
                self.proc = subprocess.Popen(
                    [smi, "-i", str(self.index), "--query-gpu=clocks.sm,power.draw",
                     "--format=csv,noheader,nounits", "-lms", "100"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                self.thread = threading.Thread(target=self._read_smi, daemon=True)
                self.thread.start()
                self.source = "nvidia-smi"
                return
            except Exception:
                self.proc = None
        try:
            import pynvml  # noqa: F401
            self.thread = threading.Thread(target=self._poll_nvml, daemon=True)
            self.thread.start()
            self.source = "pynvml"
        except Exception:
            self.source = None

    def _read_smi(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.samples.append((time.monotonic(), float(parts[0]), float(parts[1])))
            except (ValueError, IndexError):
                pass

    def _poll_nvml(self) -> None:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(self.index)
        while not self.stop_flag:
            try:
                clk = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
                pw = pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0
                self.samples.append((time.monotonic(), float(clk), float(pw)))
            except Exception:
                pass
            time.sleep(0.1)

    def stop(self) -> None:
        self.stop_flag = True
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
        if self.thread is not None:
            self.thread.join(timeout=2)

    def window(self, t0: float, t1: float) -> Tuple[Optional[float], Optional[float], int]:
        s = [x for x in self.samples if t0 <= x[0] <= t1]
        if not s:
            return None, None, 0
        return statistics.median(x[1] for x in s), statistics.median(x[2] for x in s), len(s)


def sustained_mode(libs: Libs, args: argparse.Namespace, out: Output) -> None:
    import torch
    m, n, k = parse_shape(args.shape)
    spec = dense_spec(m, n, k, "sustained")
    row = Row(spec, libs, args.seed)
    index = 0
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if vis.strip().isdigit():
        index = int(vis.strip())
    fns = {}
    for lib in ("qgemm", "deepgemm"):
        if lib in libs.want:
            try:
                fn = row.call(lib)
                if fn is not None:
                    fn()
                    torch.cuda.synchronize()
                    fns[lib] = fn
            except Exception as e:
                out.add([{"kind": "sustained", "shape": spec["shape"], "lib": lib, "rep": 0, "error": short_err(e)}])
    for rep in range(1, args.sustained_reps + 1):
        for lib, fn in fns.items():
            # calls per batch: about 5 ms of GPU work, two batches in flight
            st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            st.record()
            for _ in range(5):
                fn()
            en.record()
            en.synchronize()
            t_call = max(st.elapsed_time(en) / 5 / 1e3, 1e-6)
            batch = max(1, int(0.005 / t_call))
            sampler = PowerSampler(index)
            sampler.start()
            time.sleep(0.3)
            calls = 0
            pending: List[Any] = []
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            w0 = time.monotonic()
            start.record()
            deadline = w0 + args.sustained
            while time.monotonic() < deadline:
                for _ in range(batch):
                    fn()
                calls += batch
                ev = torch.cuda.Event()
                ev.record()
                pending.append(ev)
                if len(pending) > 2:
                    pending.pop(0).synchronize()
            end.record()
            end.synchronize()
            w1 = time.monotonic()
            sampler.stop()
            secs = start.elapsed_time(end) / 1e3
            clk, pw, ns = sampler.window(w0, w1)
            r = {"kind": "sustained", "shape": spec["shape"], "lib": lib, "rep": rep, "calls": calls,
                 "seconds": secs, "us_per_call": secs / calls * 1e6, "tflops": spec_flops(spec) * calls / secs / 1e12,
                 "sm_mhz": clk, "power_w": pw, "samples": ns, "sampler": sampler.source}
            log(f"sustained {SHORT[lib]} {spec['shape']}: {r['us_per_call']:.1f} us/call {r['tflops']:.0f} TFLOPS | "
                f"SM clock median {clk} MHz | power median {pw} W | {ns} samples ({sampler.source})")
            out.add([r])
            time.sleep(1.0)


# ---- main --------------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="write DIR/peers.json and DIR/peers.txt (merged with an existing peers.json)")
    p.add_argument("--quick", action="store_true", help="a small subset of the table")
    p.add_argument("--filter", help="regular expression over 'kind shape set' (e.g. 'dense 4096x', '^masked ', "
                   "'wgrad|psum|k-grouped': the training rows)")
    p.add_argument("--dry-run", action="store_true", help="list the rows and exit (no GPU, no torch needed)")
    p.add_argument("--warm-jobs", type=int, default=0, help="compile both libraries' kernels for every row in N "
                   "parallel processes first (DeepGEMM's first call of a shape runs nvcc for 3-10 s)")
    p.add_argument("--iters", type=int, default=30, help="calls per timing (default 30)")
    p.add_argument("--flush-gb", type=float, default=8.0, help="kineto flush memset size (default 8 GB)")
    p.add_argument("--order", default="deepgemm,cublaslt,qgemm", help="call order within a row")
    p.add_argument("--rotate", action="store_true", help="rotate the call order from row to row")
    p.add_argument("--libs", default="deepgemm,cublaslt,qgemm", help="libraries to run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-diff", type=float, default=1e-5, help="accuracy bound flagged in peers.txt")
    p.add_argument("--host", action="store_true", help="also the host-overhead rows (issue 26)")
    p.add_argument("--host-only", action="store_true", help="only the host-overhead rows")
    p.add_argument("--host-calls", type=int, default=10000, help="calls per library per host shape (default 10000)")
    p.add_argument("--host-drain", type=int, default=200, help="synchronize every N calls, outside the timing")
    p.add_argument("--qgemm-cli", help="the qgemm CLI whose `bench --host` gives the host rows' c_api_us "
                   "(default: build/qgemm of this checkout, built by make; missing: c_api_us null, peers.txt says why)")
    p.add_argument("--c-api-timeout", type=int, default=600, help="seconds per `qgemm bench --host` run (default 600)")
    p.add_argument("--sustained", type=float, default=0.0, help="loop --shape for S seconds per library")
    p.add_argument("--sustained-reps", type=int, default=2, help="alternating repetitions (default 2)")
    p.add_argument("--shape", default="4096x7168x16384", help="MxNxK for --sustained")
    p.add_argument("--_warm-worker", dest="warm_worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.warm_worker:
        return warm_worker(args.warm_worker)

    want = tuple(x for x in args.libs.split(",") if x in LIBS)
    if args.dry_run:
        align = DEFAULT_ALIGN
        if args.sustained > 0:
            m, n, k = parse_shape(args.shape)
            log(f"sustained {m}x{n}x{k}: {args.sustained} s per library x {args.sustained_reps} reps (qgemm, DeepGEMM)")
            return 0
        n_rows = 0
        if not args.host_only:
            specs = select(table_specs(align, args.seed), args.quick, args.filter)
            for s in specs:
                log(f"{s['kind']:15} {s['shape']:22} {s['set']:15} {spec_flops(s) / 1e9:10.1f} GFLOP  {spec_detail(s)}")
            n_rows += len(specs)
            log(f"{len(specs)} shapes x 2 timings (kineto, events) x libraries {', '.join(want)} "
                f"(order {args.order}); contiguous alignment assumed {align} here (the run uses the libraries' own)")
        if args.host or args.host_only:
            hs = select(host_specs(align, args.seed), False, args.filter)
            cli = args.qgemm_cli or default_cli()
            for s in hs:
                log(f"host-{s['kind']:11} {s['shape']:22} {args.host_calls} calls per library; C API: "
                    + " ".join(c_api_command(s, cli, args.host_calls, args.seed)))
            if not (os.path.isfile(cli) and os.access(cli, os.X_OK)):
                log(f"C API: {cli} not built (make): the host rows' c_api_us would be null")
            n_rows += len(hs)
        return 0

    import torch
    if not torch.cuda.is_available():
        log("error: no CUDA device (use --dry-run to list the rows)")
        return 2
    libs = Libs(want)
    for line in libs.describe():
        log(line)
    if "cublaslt" in want:
        log("cuBLASLt: torch._scaled_mm with 1x128 / 128x128 float32 scales (dense rows; null where it does not run)")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    meta = {
        "device": f"{props.name} ({props.multi_processor_count} SMs)",
        "date": datetime.date.today().isoformat(),
        "qgemm_commit": qgemm_commit(repo),
        "qgemm_version": getattr(libs.qgemm, "__version__", None),
        "deepgemm_commit": DEEPGEMM_COMMIT if libs.dg is not None else None,
        "deepgemm_version": getattr(libs.dg, "__version__", None),
        "torch": f"{torch.__version__} (CUDA {torch.version.cuda})",
        "iters": args.iters,
        "libraries": {lib: ("ok" if lib not in libs.why else libs.why[lib]) for lib in want},
    }
    out = Output(args.out, meta, args.max_diff)
    if libs.dg is None and "deepgemm" in want:
        log("DeepGEMM: not installed")

    if args.sustained > 0:
        meta["notes"] = f"sustained {args.sustained} s loops"
        out.doc.update(meta)
        sustained_mode(libs, args, out)
        return 0

    align = libs.align()
    specs = [] if args.host_only else select(table_specs(align, args.seed), args.quick, args.filter)
    warm_list = list(specs)
    if args.host or args.host_only:
        warm_list += select(host_specs(align, args.seed), False, args.filter)
    if args.warm_jobs > 0:
        warm_parallel(warm_list, args.warm_jobs, libs)

    flusher = Flusher(int(args.flush_gb * 1e9))
    meta["notes"] = (f"kineto flush {flusher.big_bytes / 1e9:.1f} GB, events flush {flusher.small_bytes >> 20} MiB "
                     f"(2x L2), by {flusher.method}; order {args.order}")
    out.doc.update(meta)
    log(meta["notes"])
    t_start = time.time()
    for i, spec in enumerate(specs):
        t0 = time.time()
        try:
            rows = run_row(spec, libs, flusher, args, i)
        except Exception as e:  # never abort the table for one row
            traceback.print_exc()
            rows = [{"kind": spec["kind"], "shape": spec["shape"], "set": spec["set"], "timing": t,
                     "qgemm_us": None, "deepgemm_us": None, "cublaslt_us": None, "diff": None,
                     "errors": {"row": short_err(e)}} for t in ("kineto", "events")]
        out.add(rows)
        k = rows[0]
        e = rows[1] if len(rows) > 1 else {}
        errs = k.get("errors")
        log(f"[{i + 1}/{len(specs)}] {spec['kind']:15} {spec['shape']:22} kineto dg {fmt_us(k.get('deepgemm_us'))} "
            f"cb {fmt_us(k.get('cublaslt_us'))} qg {fmt_us(k.get('qgemm_us'))} dg/qg {fmt_ratio(k.get('deepgemm_us'), k.get('qgemm_us'))}"
            f" | events dg/qg {fmt_ratio(e.get('deepgemm_us'), e.get('qgemm_us'))} | diff "
            f"{k.get('diff') if k.get('diff') is None else format(k['diff'], '.1e')} ({time.time() - t0:.1f} s)"
            + (f" errors: {errs}" if errs else ""))
    if specs:
        log(f"table: {len(specs)} shapes in {time.time() - t_start:.0f} s")

    if args.host or args.host_only:
        host_mode(libs, args, out)

    txt = render_txt(out.doc, args.max_diff)
    log("")
    log(txt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
