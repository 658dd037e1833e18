#!/usr/bin/env python3
"""bench/peers_families.py -- the kernel families beyond the FP8 GEMMs beside
DeepGEMM and cuBLAS, same inputs, one process (the FP8 table is bench/peers.py).

Row kinds (issue 49's names), each on the shapes DeepGEMM's own SM90 tests
enumerate (its tests/generators.py, imported from its source tree):
  bf16             bf16_gemm_nt(a, b, d, c) in DeepGEMM's four layouts (the
                   operands' majors as its generator makes them), bf16 or FP32
                   D, with or without accumulation; cuBLAS: torch.matmul
  bf16-contiguous  m_grouped_bf16_gemm_nt_contiguous(a, b, d, m_indices)
  bf16-masked      m_grouped_bf16_gemm_nt_masked(a, b, d, masked_m, expected_m)
  bf16-k-grouped   k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor, c=d)
  einsum           einsum('bmk,bnk->mn' | 'bhr,hdr->bhd' | 'bhd,hdr->bhr') and
                   fp8_einsum('bhr,hdr->bhd') on test_einsum.py's shapes
  mqa              fp8_fp4_mqa_logits (prefill, ragged key ranges as
                   test_attention.py makes them, clean logits): 24 of its cases
                   (FP32 logits; SQ 2048 / 8192, SK 8192 / 65536, H 32 / 64,
                   D 32 / 64 / 128); TFLOPS counted as the test counts them
  paged-mqa        fp8_fp4_paged_mqa_logits over the fused FP8 KV cache, every
                   SM90 case of test_attention.py (metadata computed once per
                   library, outside the timing, as a CUDA graph would); GB/s
                   as the test counts them
  hc               tf32_hc_prenorm_gemm on test_hyperconnection.py's 24 cases
  cast             qgemm's cast kernels against the torch formulas they replace
                   (no DeepGEMM column: DeepGEMM's casts are those torch
                   formulas), GB/s against a device copy measured in the run
Every row builds its inputs once and hands the same tensors to each library,
interleaved in the order DeepGEMM, cuBLAS, qgemm, under two timings:
  kineto  CUPTI GPU time of the kernels one call launches (DeepGEMM's method):
          an 8 GB buffer zeroed before each call (its fill kernel is left out
          of the sum), 30 calls, mean per call;
  events  CUDA events around one call after a 2x-L2 zeroing, median of 30,
          the libraries taking turns call by call.
Accuracy: diff = 1 - 2 sum(xy) / sum(x^2 + y^2) of each library's D against the
float64 product (plus C), and qgemm against DeepGEMM.

  python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM [--kinds bf16,...] [--out DIR]

Writes DIR/peers-families.json ({"device", "date", "rows": [...]}) and a text
table DIR/peers-families.txt; ratios are DeepGEMM (or cuBLAS) time / qgemm time.
DeepGEMM is used when `import deep_gemm` works (.peers/env.sh), else its columns
are null and the table says so.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import random
import statistics
import sys
import traceback
from typing import Any, Callable, Dict, List, Optional

KINDS = ("bf16", "bf16-contiguous", "bf16-masked", "bf16-k-grouped", "einsum", "mqa", "paged-mqa", "hc", "cast")
NEW_KINDS = ("einsum", "mqa", "paged-mqa", "hc")  # built here, not by DeepGEMM's generators
LIBS = ("deepgemm", "cublas", "qgemm", "qgemm-v1")  # qgemm-v1: --old-plan (v1, or the plan named)
# the QGEMM_BF16_PLAN value the qgemm-v1 column runs under (--old-plan [v1|v2])
OLD_PLAN = "v1"
# the variable and value the qgemm-v1 column runs under: QGEMM_BF16_PLAN=OLD_PLAN (--old-plan, BF16
# kinds), or any NAME=VALUE for every kind (--alt-env, e.g. QGEMM_HC_VARIANT=acc4+fit)
ALT_ENV = ("QGEMM_BF16_PLAN", None)


def log(*a: Any) -> None:
    print(*a, file=sys.stderr, flush=True)


def calc_diff(x: Any, y: Any) -> float:
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    if denom == 0:
        return 0.0
    return float(1 - 2 * (x * y).sum() / denom)


class Timer:
    """kineto (8 GB zeroed before each call) and events (2x L2 zeroed before each call)."""

    def __init__(self, torch: Any, iters: int = 30) -> None:
        self.torch = torch
        self.iters = iters
        self.big = torch.empty(int(8e9) // 4, dtype=torch.int32, device="cuda")
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.small = torch.empty(max(2 * l2, 1 << 20) // 4, dtype=torch.int32, device="cuda")

    def kineto_us(self, fn: Callable[[], None], flush: Optional[Callable[[], Any]] = None,
                  only: Optional[str] = None) -> float:
        """Mean kineto time of fn's kernels, `flush` (default: the 8 GB zeroed) before each
        call; `only`: sum the kernels whose name holds it (a flush that is not a fill)."""
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile
        flush = flush or self.big.zero_
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(self.iters):
                flush()
                fn()
            torch.cuda.synchronize()
        total = 0.0
        for e in prof.events():
            if e.device_type.name != "CUDA":
                continue
            name = e.name.lower()
            if only is not None:
                if only in name:
                    total += e.time_range.elapsed_us()
                continue
            if "fill" in name or "memset" in name or "zero" in name or "memcpy" in name:
                continue
            total += e.time_range.elapsed_us()
        return total / self.iters

    def events_us(self, fns: Dict[str, Callable[[], None]]) -> Dict[str, float]:
        torch = self.torch
        times: Dict[str, List[float]] = {k: [] for k in fns}
        for f in fns.values():
            f()
        torch.cuda.synchronize()
        for _ in range(self.iters):
            for k, f in fns.items():
                self.small.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                f()
                end.record()
                end.synchronize()
                times[k].append(start.elapsed_time(end) * 1e3)
        return {k: statistics.median(v) for k, v in times.items()}


def bf16_cases(gen: Any, torch: Any) -> List[Dict[str, Any]]:
    """DeepGEMM's test_bf16 shapes, through its own generators."""
    cases = []
    for kernel_type, _, m, n, k, major_a, major_b, accumulate, out_dtype in gen.enumerate_normal(torch.bfloat16):
        cases.append({"kind": "bf16", "m": m, "n": n, "k": k, "major_a": major_a, "major_b": major_b,
                      "accumulate": accumulate, "out_dtype": out_dtype, "kernel_type": kernel_type})
    for _, _, g, m_per, n, k, major_a, major_b, psum, _zp in gen.enumerate_m_grouped_contiguous(torch.bfloat16):
        if psum:
            continue
        cases.append({"kind": "bf16-contiguous", "g": g, "m_per": m_per, "n": n, "k": k,
                      "major_a": major_a, "major_b": major_b})
    for _, _, g, max_m, m_per, n, k, psum in gen.enumerate_m_grouped_masked(torch.bfloat16):
        if psum:
            continue
        cases.append({"kind": "bf16-masked", "g": g, "max_m": max_m, "m_per": m_per, "n": n, "k": k})
    for g, m, n, major_a, major_b, real_ks, aligned_ks, _, _, _, psum in \
            gen.enumerate_k_grouped_contiguous(torch.bfloat16):
        if psum:
            continue
        cases.append({"kind": "bf16-k-grouped", "g": g, "m": m, "n": n, "ks": aligned_ks,
                      "major_a": major_a, "major_b": major_b})
    return cases


def family_cases() -> List[Dict[str, Any]]:
    """The einsum, indexer and HC rows: test_einsum.py, test_attention.py and
    test_hyperconnection.py's SM90 shapes (mqa: the subset the docstring names)."""
    cases: List[Dict[str, Any]] = []
    for s_ in (129, 4096, 8192):
        for m, n, k in [(128, 384, 128), (256, 256, 256), (384, 128, 384)]:
            for f32 in (True, False):
                cases.append({"kind": "einsum", "expr": "bmk,bnk->mn", "b": s_, "m": m, "n": n, "k": k,
                              "f32": f32})
    for expr in ("bhr,hdr->bhd", "bhd,hdr->bhr"):
        for h, r, dd in [(128, 512, 128), (8, 4096, 1024)]:
            for b in (4, 32, 128, 4096, 8192):
                cases.append({"kind": "einsum", "expr": expr, "b": b, "h": h, "r": r, "d": dd})
    for b in (4, 32, 128, 4096, 8192):
        cases.append({"kind": "einsum", "expr": "fp8 bhr,hdr->bhd", "b": b, "h": 8, "r": 4096, "d": 1024})
    for sq in (2048, 8192):
        for sk in (8192, 65536):
            for h in (32, 64):
                for dim in (32, 64, 128):
                    cases.append({"kind": "mqa", "sq": sq, "sk": sk, "h": h, "dim": dim,
                                  "cp": sk % sq == 0})
    for f32 in (False, True):
        for bsz in (256, 4096):
            for next_n in (1, 2):
                for h in (32, 64):
                    for avg in (8192, 65536):
                        if bsz * avg <= 32 * 1024 * 1024:
                            cases.append({"kind": "paged-mqa", "bsz": bsz, "next_n": next_n, "h": h,
                                          "dim": 128, "avg_kv": avg, "f32": f32})
    for m in (13, 137, 4096, 8192):
        for n, k in [(24, 28672), (24, 7680), (24, 7168)]:
            for splits in (None, 16):
                cases.append({"kind": "hc", "m": m, "n": n, "k": k, "splits": splits})
    return cases


def _fp8_rows(torch: Any, x: Any) -> Any:
    """Per-row FP8 e4m3 with an FP32 scale per row (amax / 448, as the tests cast the keys)."""
    amax = x.abs().float().amax(dim=-1, keepdim=True).clamp(1e-4)
    sf = amax / 448.0
    return (x * (1.0 / sf)).to(torch.float8_e4m3fn), sf.squeeze(-1)


def family_case(case: Dict[str, Any], row: Dict[str, Any], libs: Dict[str, Any], torch: Any):
    """Inputs, per-library calls and outputs of an einsum / mqa / paged-mqa / hc row:
    (fns, outs, checks, resets, ref); ref None: accuracy is qgemm against DeepGEMM."""
    kind = case["kind"]
    fns: Dict[str, Callable[[], Any]] = {}
    outs: Dict[str, Any] = {}
    checks: Dict[str, Callable[[], Any]] = {}
    resets: Dict[str, Callable[[], Any]] = {}
    ref = None
    peers = {k: v for k, v in libs.items() if k != "cublas"}
    if kind == "einsum" and case["expr"] == "bmk,bnk->mn":
        b_, m, n, k = case["b"], case["m"], case["n"], case["k"]
        a = torch.randn((b_, m, k), dtype=torch.bfloat16, device="cuda")
        bb = torch.randn((b_, n, k), dtype=torch.bfloat16, device="cuda")
        dt = torch.float if case["f32"] else torch.bfloat16
        d0 = torch.randn((m, n), dtype=dt, device="cuda")
        ref = torch.einsum("bmk,bnk->mn", a.double(), bb.double()) + (d0.double() if case["f32"] else 0)
        row.update(shape=f"{b_}x{m}x{n}x{k}", d="fp32" if case["f32"] else "bf16", accumulate=case["f32"],
                   flops=2.0 * b_ * m * n * k, expr=case["expr"])
        for lib, mod in peers.items():
            dl = d0.clone()
            fns[lib] = (lambda mod=mod, dl=dl: mod.einsum("bmk,bnk->mn", a, bb, dl, c=dl if case["f32"] else None))
            outs[lib] = dl
            resets[lib] = (lambda dl=dl: dl.copy_(d0))
    elif kind == "einsum":
        b_, h, r, dd_ = case["b"], case["h"], case["r"], case["d"]
        fp8 = case["expr"].startswith("fp8")
        expr = case["expr"].split()[-1]
        row.update(shape=f"{b_}x{h}x{r}x{dd_}", flops=2.0 * b_ * h * r * dd_, expr=case["expr"])
        if expr == "bhr,hdr->bhd":
            x = torch.randn((b_, h, r), device="cuda", dtype=torch.bfloat16)
            y = torch.randn((h, dd_, r + (0 if fp8 else 128)), device="cuda", dtype=torch.bfloat16)[:, :, :r]
            zshape = (b_, h, dd_)
        else:
            x = torch.randn((b_, h, dd_), device="cuda", dtype=torch.bfloat16)
            y = torch.randn((h, dd_, r + 128), device="cuda", dtype=torch.bfloat16)[:, :, :r]
            zshape = (b_, h, r)
        ref = torch.einsum(expr, x.double(), y.double())
        if fp8:
            from qgemm.deep_gemm.utils.math import per_block_cast_to_fp8, per_token_cast_to_fp8
            xq, xs = per_token_cast_to_fp8(x.view(-1, r), use_ue8m0=True)
            x_fp8 = xq.view(b_, h, r), xs.view(b_, h, -(-r // 128))
            y_fp8 = (torch.empty_like(y, dtype=torch.float8_e4m3fn),
                     torch.empty((h, -(-dd_ // 128), -(-r // 128)), device="cuda", dtype=torch.float))
            for i in range(h):
                y_fp8[0][i], y_fp8[1][i] = per_block_cast_to_fp8(y[i], use_ue8m0=True)
        for lib, mod in peers.items():
            z = torch.empty(zshape, device="cuda", dtype=torch.bfloat16)
            if fp8:
                fns[lib] = (lambda mod=mod, z=z: mod.fp8_einsum(expr, x_fp8, y_fp8, z))
            else:
                fns[lib] = (lambda mod=mod, z=z: mod.einsum(expr, x, y, z))
            outs[lib] = z
        if "cublas" in libs and not fp8:
            res_cb: Dict[str, Any] = {}  # torch's einsum (cuBLAS) returns a new tensor
            fns["cublas"] = (lambda: res_cb.__setitem__("x", torch.einsum(expr, x, y)))
            checks["cublas"] = (lambda: res_cb["x"])
            outs["cublas"] = None
    elif kind == "mqa":
        sq, sk, h, dim = case["sq"], case["sk"], case["h"], case["dim"]
        q = torch.randn(sq, h, dim, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        kv = _fp8_rows(torch, torch.randn(sk, dim, device="cuda", dtype=torch.bfloat16))
        w = torch.randn(sq, h, device="cuda", dtype=torch.float32)
        if case["cp"]:  # test_attention.py's context-parallel ranges (one arbitrary CP rank)
            half, cp_size = sq // 2, sk // sq
            cp_id = cp_size // 3
            i = torch.arange(half, dtype=torch.int, device="cuda")
            ks = torch.zeros(sq, dtype=torch.int, device="cuda")
            ke = torch.cat([cp_id * half + i, (cp_size * 2 - 1 - cp_id) * half + i])
        else:
            ks = torch.zeros(sq, dtype=torch.int, device="cuda")
            ke = torch.arange(sq, dtype=torch.int, device="cuda") + (sk - sq)
        cost = int((ke.clamp(0, sk) - ks.clamp(0, sk)).clamp(min=0).sum().item())
        row.update(shape=f"{sq}x{sk}xH{h}xD{dim}", flops=2.0 * cost * h * dim, d="fp32")
        inside = (torch.arange(sk, device="cuda")[None, :] >= ks[:, None]) & \
                 (torch.arange(sk, device="cuda")[None, :] < ke[:, None])
        for lib, mod in peers.items():
            res: Dict[str, Any] = {}
            fns[lib] = (lambda mod=mod, res=res: res.__setitem__("x", mod.fp8_fp4_mqa_logits(
                (q, None), kv, w, ks, ke, clean_logits=True, max_seqlen_k=0, logits_dtype=torch.float)))
            checks[lib] = (lambda res=res: res["x"].masked_fill(~inside, 0))
            outs[lib] = None
    elif kind == "paged-mqa":
        bsz, nn, h, dim, avg = case["bsz"], case["next_n"], case["h"], case["dim"], case["avg_kv"]
        blk = 64
        ctx = torch.randint(int(0.7 * avg), int(1.3 * avg), (bsz,), device="cuda", dtype=torch.int)
        nblk = (ctx + blk - 1) // blk
        total = int(nblk.sum().item())
        max_len = int(nblk.max().item()) * blk
        table = torch.zeros((bsz, int(nblk.max().item())), device="cuda", dtype=torch.int)
        pool = torch.randperm(total, device="cuda", dtype=torch.int)
        off = 0
        for i, nb in enumerate(nblk.tolist()):
            table[i, :nb] = pool[off:off + nb]
            off += nb
        kvq, kvs = _fp8_rows(torch, torch.randn((total, blk, 1, dim), device="cuda", dtype=torch.bfloat16))
        cache = torch.empty((total, blk * (dim + 4)), device="cuda", dtype=torch.uint8)
        cache[:, :blk * dim] = kvq.view(total, blk * dim).view(torch.uint8)
        cache[:, blk * dim:] = kvs.contiguous().view(total, blk).view(torch.uint8)
        cache = cache.view(total, blk, 1, dim + 4)
        q = torch.randn((bsz, nn, h, dim), device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        w = torch.randn((bsz * nn, h), device="cuda", dtype=torch.float)
        ctx2 = ((ctx.unsqueeze(1) + 1) * torch.rand(bsz, nn, device="cuda")).int()
        ctx2[:, -1] = ctx
        ldt = torch.float if case["f32"] else torch.bfloat16
        nbytes = q.numel() + w.numel() * 4 + int(ctx.sum().item()) * (dim + 4) + \
            int(ctx2.sum().item()) * ldt.itemsize
        row.update(shape=f"B{bsz}xN{nn}xH{h}xL{avg}", d="fp32" if case["f32"] else "bf16", bytes=nbytes,
                   flops=2.0 * int(ctx2.sum().item()) * h * dim)
        inside = torch.arange(max_len, device="cuda")[None, :] < ctx2.view(-1, 1)
        for lib, mod in peers.items():
            meta = mod.get_paged_mqa_logits_metadata(ctx2, blk, mod.get_num_sms())
            res = {}
            fns[lib] = (lambda mod=mod, res=res, meta=meta: res.__setitem__("x", mod.fp8_fp4_paged_mqa_logits(
                (q, None), cache, w, ctx2, table, meta, max_len, clean_logits=False, logits_dtype=ldt)))
            checks[lib] = (lambda res=res: res["x"].float().masked_fill(~inside, 0))
            outs[lib] = None
    else:  # hc
        m, n, k, sp = case["m"], case["n"], case["k"], case["splits"]
        a = torch.randn((m, k), dtype=torch.bfloat16, device="cuda")
        bb = torch.randn((n, k), dtype=torch.float, device="cuda")
        ref = torch.cat([(a.double() @ bb.double().t()).flatten(), a.double().square().sum(-1)])
        row.update(shape=f"{m}x{n}x{k}/{sp or 0}", d="fp32", flops=2.0 * m * n * k)
        for lib, mod in peers.items():
            dl = torch.empty((m, n) if sp is None else (sp, m, n), dtype=torch.float, device="cuda")
            sl = torch.empty((m,) if sp is None else (sp, m), dtype=torch.float, device="cuda")
            fns[lib] = (lambda mod=mod, dl=dl, sl=sl: mod.tf32_hc_prenorm_gemm(a, bb, dl, sl, num_splits=sp))
            checks[lib] = (lambda dl=dl, sl=sl: torch.cat([(dl if sp is None else dl.sum(0)).flatten(),
                                                           sl if sp is None else sl.sum(0)]))
            outs[lib] = None
    return fns, outs, checks, resets, ref


def run_case(case: Dict[str, Any], gen: Any, libs: Dict[str, Any], timer: Timer, torch: Any) -> Dict[str, Any]:
    kind = case["kind"]
    row: Dict[str, Any] = {"kind": kind, "order": ",".join(l for l in LIBS if l in libs), "errors": {}}
    fns: Dict[str, Callable[[], None]] = {}
    outs: Dict[str, Any] = {}
    checks: Dict[str, Callable[[], Any]] = {}
    if kind in NEW_KINDS:
        fns, outs, checks, resets, ref = family_case(case, row, libs, torch)
    elif kind == "bf16":
        m, n, k = case["m"], case["n"], case["k"]
        a, b, c, d, ref = gen.generate_normal(m, n, k, case["major_a"], case["major_b"], case["accumulate"],
                                              case["out_dtype"], case["kernel_type"], use_bf16=True)
        layout = ("N" if case["major_a"].is_k_major() else "T") + ("T" if case["major_b"].is_k_major() else "N")
        row.update(shape=f"{m}x{n}x{k}", layout=layout, d="fp32" if case["out_dtype"] == torch.float else "bf16",
                   accumulate=bool(case["accumulate"]), flops=2.0 * m * n * k)
        c0 = None if c is None else c.clone()
        ref = a.double() @ b.double().t() + (0 if c0 is None else c0.double())
        dd = {lib: d.clone() for lib in libs}

        def make(lib: str) -> Callable[[], None]:
            dl = dd[lib]
            cl = dl if c is not None else None
            if lib == "cublas":
                if cl is None:
                    return lambda: torch.matmul(a, b.t(), out=dl) if dl.dtype == torch.bfloat16 \
                        else dl.copy_(torch.matmul(a, b.t()))
                return lambda: dl.add_(torch.matmul(a, b.t()).to(dl.dtype))
            mod = libs[lib]
            return lambda: mod.bf16_gemm_nt(a, b, dl, c=cl)
        for lib in libs:
            fns[lib] = make(lib)
            outs[lib] = dd[lib]
        resets = {lib: (lambda lib=lib: dd[lib].copy_(c0)) if c0 is not None else (lambda: None) for lib in libs}
    elif kind == "bf16-contiguous":
        m, a, b, layout_t, d, ref = gen.generate_m_grouped_contiguous(case["g"], case["m_per"], case["n"], case["k"],
                                                                       case["major_a"], case["major_b"], use_bf16=True)
        row.update(shape=f"{case['g']}x{m}x{case['n']}x{case['k']}", flops=2.0 * m * case["n"] * case["k"],
                   layout="NT" if case["major_b"].is_k_major() else "NN")
        dd = {lib: d.clone() for lib in libs if lib != "cublas"}
        for lib in dd:
            mod = libs[lib]
            fns[lib] = (lambda mod=mod, dl=dd[lib]: mod.m_grouped_bf16_gemm_nt_contiguous(a, b, dl, layout_t))
            outs[lib] = dd[lib]
        # the generator's reference, as DeepGEMM's test compares (every row)
        resets = {lib: (lambda: None) for lib in libs}
    elif kind == "bf16-masked":
        a, b, masked_m, _psum, d, ref = gen.generate_m_grouped_masked(case["g"], case["max_m"], case["m_per"],
                                                                      case["n"], case["k"], use_bf16=True)
        valid_m = int(masked_m.sum().item())
        row.update(shape=f"{case['g']}x{case['m_per']}x{case['n']}x{case['k']}", flops=2.0 * valid_m * case["n"] * case["k"])
        dd = {lib: d.clone() for lib in libs if lib != "cublas"}
        for lib in dd:
            mod = libs[lib]
            fns[lib] = (lambda mod=mod, dl=dd[lib]: mod.m_grouped_bf16_gemm_nt_masked(a, b, dl, masked_m, case["m_per"]))
            outs[lib] = dd[lib]
        mask = torch.arange(case["max_m"], device="cuda")[None, :] < masked_m[:, None]
        ref = ref[mask]
        checks = {lib: (lambda dl=dd[lib]: dl[mask]) for lib in dd}
        resets = {lib: (lambda: None) for lib in libs}
    else:  # bf16-k-grouped
        total_k, a, b, c, d, ref, layout_t, ks = gen.generate_k_grouped_contiguous(
            case["g"], case["m"], case["n"], case["major_a"], case["major_b"], case["ks"], use_bf16=True)
        row.update(shape=f"{case['g']}x{case['m']}x{case['n']}x{total_k}", flops=2.0 * case["m"] * case["n"] * total_k)
        c0 = c.clone()
        dd = {lib: c0.clone() for lib in libs if lib != "cublas"}
        for lib in dd:
            mod = libs[lib]
            fns[lib] = (lambda mod=mod, dl=dd[lib]: mod.k_grouped_bf16_gemm_tn_contiguous(a, b, dl, ks, layout_t, dl))
            outs[lib] = dd[lib]
        starts = [sum(ks[:i]) for i in range(len(ks))]
        ref = torch.stack([c0[i].double() + a[s:s + kk].double().t() @ b[s:s + kk].double()
                           for i, (s, kk) in enumerate(zip(starts, ks))])
        resets = {lib: (lambda dl=dd[lib]: dl.copy_(c0)) for lib in dd}
    # qgemm-v1: qgemm under QGEMM_BF16_PLAN=OLD_PLAN (v1: the BF16 heuristic before branch bf16h;
    # v2: before branch gmc, no B multicast in the m-grouped layouts; read by the library at every
    # call, so the variable is set around each call only)
    if "qgemm-v1" in fns:
        def with_v1(f: Callable[[], Any]) -> Callable[[], Any]:
            name, value = ALT_ENV[0], ALT_ENV[1] if ALT_ENV[1] is not None else OLD_PLAN

            def call() -> Any:
                os.environ[name] = value
                try:
                    return f()
                finally:
                    os.environ.pop(name, None)
            return call
        fns["qgemm-v1"] = with_v1(fns["qgemm-v1"])
    # checked call of each library (from the reset state), accuracy
    for lib, f in fns.items():
        try:
            resets.get(lib, lambda: None)()
            f()
            torch.cuda.synchronize()
            got = checks[lib]() if lib in checks else outs[lib]
            row[f"{lib}_diff"] = None if ref is None else calc_diff(got, ref)
        except Exception as e:  # noqa: BLE001 - a library's failure is its row's error
            row["errors"][lib] = f"{type(e).__name__}: {str(e)[:300]}"
    if "deepgemm" in outs and "qgemm" in outs and "deepgemm" not in row["errors"] and "qgemm" not in row["errors"]:
        g1 = checks["qgemm"]() if "qgemm" in checks else outs["qgemm"]
        g2 = checks["deepgemm"]() if "deepgemm" in checks else outs["deepgemm"]
        row["qgemm_vs_deepgemm"] = calc_diff(g1, g2)
    ok = {lib: f for lib, f in fns.items() if lib not in row["errors"]}
    for lib, f in ok.items():
        row[f"{lib}_kineto_us"] = timer.kineto_us(f)
    ev = timer.events_us(ok)
    for lib, t in ev.items():
        row[f"{lib}_events_us"] = t
    q = row.get("qgemm_kineto_us")
    if q and row.get("flops"):
        row["qgemm_tflops"] = row["flops"] / q / 1e6
    if q and row.get("bytes"):
        row["qgemm_gbps"] = row["bytes"] / q / 1e3
    for t in ("kineto", "events"):
        q = row.get(f"qgemm_{t}_us")
        for peer in ("deepgemm", "cublas", "qgemm-v1"):
            p = row.get(f"{peer}_{t}_us")
            row[f"{peer}_over_qgemm_{t}"] = p / q if p and q else None
        q1, p = row.get(f"qgemm-v1_{t}_us"), row.get(f"deepgemm_{t}_us")
        if q1:
            row[f"deepgemm_over_qgemm-v1_{t}"] = p / q1 if p else None
            p = row.get(f"cublas_{t}_us")
            row[f"cublas_over_qgemm-v1_{t}"] = p / q1 if p else None
    return row


# ---- casts (issue 51 item 3): qgemm's kernels against the torch formulas they replace ----

CAST_SHAPES = [(64, 7168), (4096, 7168), (16384, 7168), (4096, 2048)]


def cast_rows(torch: Any, timer: "Timer") -> List[Dict[str, Any]]:
    """Rows of kind cast: name, shape, bytes (read + written), qgemm_us and torch_us
    (kineto), gbps (bytes / qgemm_us), hbm_gbps (a 2 GiB device copy in the same run),
    bitwise (qgemm's outputs equal to the torch implementation's)."""
    import qgemm
    from qgemm import _torch_helpers as th
    from qgemm import cast as qc
    big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(big)
    # CUDA events: the kineto sum leaves memcpy out (it is the flush's kind of event)
    copy_us = timer.events_us({"copy": lambda: dst.copy_(big)})["copy"]
    hbm = 2 * big.numel() / copy_us / 1e3
    del big, dst
    rows = []

    def silu_torch(x: Any) -> Any:
        n = x.shape[-1] // 2
        y = torch.nn.functional.silu(x[..., :n].float()) * x[..., n:].float()
        return th.per_token_cast_to_fp8(y, False)

    ops = [
        ("per_token_cast_to_fp8", lambda x: qgemm.per_token_cast_to_fp8(x), lambda x: th.per_token_cast_to_fp8(x)),
        ("per_token_cast_to_fp8 ue8m0", lambda x: qgemm.per_token_cast_to_fp8(x, use_ue8m0=True),
         lambda x: th.per_token_cast_to_fp8(x, use_ue8m0=True)),
        ("per_block_cast_to_fp8", lambda x: qgemm.per_block_cast_to_fp8(x), lambda x: th.per_block_cast_to_fp8(x)),
        ("per_channel_cast_to_fp8", lambda x: qgemm.per_channel_cast_to_fp8(x),
         lambda x: th.per_channel_cast_to_fp8(x)),
        ("silu_and_mul_fp8_quant", lambda x: qc.silu_and_mul_fp8_quant(x), silu_torch),
    ]
    for name, fq, ft in ops:
        for m, k in CAST_SHAPES:
            row: Dict[str, Any] = {"kind": "cast", "name": name, "shape": f"{m}x{k}", "errors": {}}
            try:
                x = torch.randn((m, k), dtype=torch.bfloat16, device="cuda")
                got, want = fq(x), ft(x)
                row["bytes"] = x.numel() * 2 + sum(t.numel() * t.element_size() for t in got)
                row["bitwise"] = all(torch.equal(g.view(torch.uint8) if g.element_size() == 1 else g,
                                                 w.view(torch.uint8) if w.element_size() == 1 else w)
                                     for g, w in zip(got, want))
                row["qgemm_us"] = timer.kineto_us(lambda: fq(x))
                row["torch_us"] = timer.kineto_us(lambda: ft(x))
                ev = timer.events_us({"qgemm": lambda: fq(x), "torch": lambda: ft(x)})
                row["qgemm_events_us"], row["torch_events_us"] = ev["qgemm"], ev["torch"]
                row["gbps"] = row["bytes"] / row["qgemm_us"] / 1e3
                row["hbm_gbps"] = hbm
            except Exception as e:  # noqa: BLE001
                row["errors"]["qgemm"] = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"cast {name} {m}x{k}: {row.get('qgemm_us')} us, {row.get('gbps')} GB/s of {hbm:.0f}, "
                f"bitwise {row.get('bitwise')} {row['errors'] or ''}")
            rows.append(row)
    return rows


def render_casts(rows: List[Dict[str, Any]]) -> str:
    out = ["", f"{'cast':28} {'shape':11} {'MB':>7} {'qg us':>8} {'torch us':>9} {'GB/s':>6} "
               f"{'of HBM':>6} {'ev us':>7} bitwise"]
    for r in rows:
        if r.get("kind") != "cast":
            continue
        f = lambda x, p=1: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
        share = r["gbps"] / r["hbm_gbps"] if r.get("gbps") and r.get("hbm_gbps") else None
        out.append(f"{r['name']:28} {r['shape']:11} {f((r.get('bytes') or 0) / 1e6):>7} {f(r.get('qgemm_us')):>8} "
                   f"{f(r.get('torch_us')):>9} {f(r.get('gbps'), 0):>6} {f(share and 100 * share, 0) + '%':>6} "
                   f"{f(r.get('qgemm_events_us')):>7} {r.get('bitwise')} {r.get('errors') or ''}")
    return "\n".join(out) + "\n"


def geomean(xs: List[float]) -> Optional[float]:
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _diff(r: Dict[str, Any]) -> str:
    """qgemm's diff against the fp64 reference, else (rows without one) against DeepGEMM, marked dg."""
    if r.get("qgemm_diff") is not None:
        return format(r["qgemm_diff"], ".1e")
    if r.get("qgemm_vs_deepgemm") is not None:
        return "dg " + format(r["qgemm_vs_deepgemm"], ".0e")
    return "-"


def _rate(r: Dict[str, Any]) -> str:
    if r.get("qgemm_gbps"):
        return f"{r['qgemm_gbps']:.0f} GB/s"
    if r.get("qgemm_tflops"):
        return f"{r['qgemm_tflops']:.0f} TFLOPS"
    return "-"


def render(rows: List[Dict[str, Any]], device: str) -> str:
    out = [f"# peers-families on {device}: time ratios peer / qgemm (> 1: qgemm faster)", ""]
    v1 = any(r.get("qgemm-v1_kineto_us") for r in rows)
    alt = OLD_PLAN if ALT_ENV[1] is None else ALT_ENV[1][:8]
    out.append(f"{'kind':16} {'shape':24} {'lay':3} {'D':5} {'acc':3} {'qg us':>8} {'dg/qg kin':>9} "
               f"{'dg/qg ev':>8} {'cb/qg kin':>9} {'qg diff':>9} {'rate':>10}"
               + (f" {alt + '/qg kin':>9} {'dg/' + alt + ' kin':>9}" if v1 else "") + "  errors")
    rows = [r for r in rows if r.get("kind") != "cast"]  # (render_casts)
    for r in rows:
        f = lambda x, p=2: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
        out.append(f"{r['kind']:16} {r.get('shape', '?'):24} {r.get('layout', ''):3} {r.get('d', 'bf16'):5} "
                   f"{int(bool(r.get('accumulate'))):3} {f(r.get('qgemm_kineto_us'), 1):>8} "
                   f"{f(r.get('deepgemm_over_qgemm_kineto')):>9} {f(r.get('deepgemm_over_qgemm_events')):>8} "
                   f"{f(r.get('cublas_over_qgemm_kineto')):>9} "
                   f"{_diff(r):>9} "
                   f"{_rate(r):>10}"
                   + (f" {f(r.get('qgemm-v1_over_qgemm_kineto')):>9} {f(r.get('deepgemm_over_qgemm-v1_kineto')):>9}"
                      if v1 else "") + "  "
                   f"{'; '.join(f'{k}: {v[:80]}' for k, v in r.get('errors', {}).items())}")
    out.append("")
    for kind in KINDS:
        rs = [r for r in rows if r["kind"] == kind]
        if not rs:
            continue
        for t in ("kineto", "events"):
            dg = geomean([r.get(f"deepgemm_over_qgemm_{t}") for r in rs])
            cb = geomean([r.get(f"cublas_over_qgemm_{t}") for r in rs])
            worst = min((r.get(f"deepgemm_over_qgemm_{t}") or 9e9 for r in rs), default=None)
            out.append(f"{kind:16} {t:6}: DeepGEMM/qgemm geomean {f'{dg:.3f}' if dg else '-'} "
                       f"(worst {f'{worst:.3f}' if worst and worst < 9e9 else '-'}), cuBLAS/qgemm geomean "
                       f"{f'{cb:.3f}' if cb else '-'} over {len(rs)} rows")
            if v1 and any(r.get(f"qgemm-v1_{t}_us") for r in rs):
                dg1 = geomean([r.get(f"deepgemm_over_qgemm-v1_{t}") for r in rs])
                cb1 = geomean([r.get(f"cublas_over_qgemm-v1_{t}") for r in rs])
                w1 = min((r.get(f"deepgemm_over_qgemm-v1_{t}") or 9e9 for r in rs), default=None)
                d1 = [r.get("qgemm-v1_diff") for r in rs if r.get("qgemm-v1_diff") is not None]
                e1 = sum(1 for r in rs if "qgemm-v1" in r.get("errors", {}))
                alt_name = f"{ALT_ENV[0]}={OLD_PLAN if ALT_ENV[1] is None else ALT_ENV[1]}"
                out.append(f"{'':16} {'':6}  {alt_name}: DeepGEMM/qgemm geomean "
                           f"{f'{dg1:.3f}' if dg1 else '-'} (worst {f'{w1:.3f}' if w1 and w1 < 9e9 else '-'}), "
                           f"cuBLAS/qgemm geomean {f'{cb1:.3f}' if cb1 else '-'}"
                           # (its accuracy: the largest calc_diff against float64, and errors)
                           f"; max diff {f'{max(d1):.1e}' if d1 else '-'}, {e1} errors"
                           f" ({'PASS' if d1 and max(d1) < 1e-5 and not e1 else 'CHECK'})")
    return "\n".join(out) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--deepgemm-src", default=os.environ.get("QG_DEEPGEMM_SRC", ".peers/DeepGEMM"))
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--old-plan", nargs="?", const="v1", default=None, choices=("v1", "v2"),
                   help="BF16 kinds: also time qgemm under QGEMM_BF16_PLAN=v1 (the heuristic and kernels "
                        "before branch bf16h; the default) or v2 (before branch gmc: no B multicast in "
                        "the m-grouped layouts), columns v1/qg and dg/v1 (named after the plan)")
    p.add_argument("--max-rows", type=int, default=0, help="at most this many rows per kind, evenly spread over its list (0: all)")
    p.add_argument("--alt-env", default=None, metavar="NAME=VALUE",
                   help="every kind: also time qgemm with NAME=VALUE set around each call (a per-call "
                        "env knob, e.g. QGEMM_HC_VARIANT=acc4+fit or QGEMM_PMQA_VARIANT=dual2), in the "
                        "columns --old-plan uses")
    p.add_argument("--where", action="append", default=[],
                   help="keep only the rows whose fields match every field=value pair, "
                   "'|'-separated (e.g. 'expr=fp8 bhr,hdr->bhd'); values compared as text; given "
                   "more than once, the rows any of them keeps")
    args = p.parse_args()
    global OLD_PLAN, ALT_ENV
    if args.old_plan:
        OLD_PLAN = args.old_plan
    if args.alt_env:
        name, eq, value = args.alt_env.partition("=")
        if not eq or not name:
            p.error(f"--alt-env wants NAME=VALUE, got {args.alt_env!r}")
        if args.old_plan:
            p.error("--alt-env and --old-plan share the qgemm-v1 columns: one of them")
        ALT_ENV = (name, value)
    import torch
    sys.path.insert(0, os.path.join(args.deepgemm_src, "tests"))
    import qgemm.deep_gemm as qdg
    libs: Dict[str, Any] = {}
    try:
        libs["deepgemm"] = importlib.import_module("deep_gemm")
    except Exception as e:  # noqa: BLE001
        log(f"DeepGEMM: not installed ({type(e).__name__}: {e})")
    libs["cublas"] = None
    libs["qgemm"] = qdg
    # DeepGEMM's generators import deep_gemm: the real one when present, else qgemm's names
    if "deepgemm" not in libs:
        sys.modules["deep_gemm"] = qdg
    gen = importlib.import_module("generators")
    torch.manual_seed(0)
    random.seed(0)
    kinds = [k for k in args.kinds.split(",") if k]
    cases = [c for c in bf16_cases(gen, torch) + family_cases() if c["kind"] in kinds]
    if args.where:
        groups = []
        for where in args.where:
            pairs = [w.split("=", 1) for w in where.split("|") if w]
            if any(len(w) != 2 for w in pairs):
                p.error(f"--where: expected field=value pairs separated by '|', got {where!r}")
            groups.append(pairs)
        cases = [c for c in cases if any(all(str(c.get(k)) == v for k, v in pairs)
                                         for pairs in groups)]
    if args.max_rows:  # evenly spread over each kind's list (its first and last kept)
        kept = []
        for kind in kinds:
            ks_ = [c for c in cases if c["kind"] == kind]
            n = min(args.max_rows, len(ks_))
            idx = sorted({round(i * (len(ks_) - 1) / max(n - 1, 1)) for i in range(n)})
            kept += [ks_[i] for i in idx]
        cases = kept
    timer = Timer(torch, args.iters)
    device = torch.cuda.get_device_name(0)
    rows: List[Dict[str, Any]] = []
    os.makedirs(args.out, exist_ok=True)
    for i, case in enumerate(cases):
        torch.manual_seed(i)
        random.seed(i)
        libs_row = {k: v for k, v in libs.items() if not (k == "cublas" and case["kind"] not in ("bf16", "einsum"))}
        if (args.old_plan and case["kind"].startswith("bf16")) or args.alt_env:
            libs_row["qgemm-v1"] = qdg
        try:
            row = run_case(case, gen, libs_row, timer, torch)
        except Exception as e:  # noqa: BLE001
            row = {"kind": case["kind"], "shape": str({k: v for k, v in case.items() if k in ('m', 'n', 'k', 'g')}),
                   "errors": {"setup": f"{type(e).__name__}: {str(e)[:300]}"}}
            traceback.print_exc()
        rows.append(row)
        log(f"[{i + 1}/{len(cases)}] {row['kind']} {row.get('shape')} {row.get('layout', '')} "
            f"dg/qg {row.get('deepgemm_over_qgemm_kineto')} {row.get('errors') or ''}")
        doc = {"device": device, "date": datetime.date.today().isoformat(), "torch": torch.__version__,
               "deepgemm": "deepgemm" in libs, "old_plan": args.old_plan, "rows": rows}
        with open(os.path.join(args.out, "peers-families.json"), "w") as f:
            json.dump(doc, f, indent=1, default=str)
        with open(os.path.join(args.out, "peers-families.txt"), "w") as f:
            f.write(render(rows, device))
    if "cast" in kinds:
        rows += cast_rows(torch, timer)
        doc = {"device": device, "date": datetime.date.today().isoformat(), "torch": torch.__version__,
               "deepgemm": "deepgemm" in libs, "old_plan": args.old_plan, "rows": rows}
        with open(os.path.join(args.out, "peers-families.json"), "w") as f:
            json.dump(doc, f, indent=1, default=str)
        with open(os.path.join(args.out, "peers-families.txt"), "w") as f:
            f.write(render(rows, device) + render_casts(rows))
    print(render(rows, device) + render_casts(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
