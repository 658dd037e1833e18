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

KINDS = ("bf16", "bf16-contiguous", "bf16-masked", "bf16-k-grouped")
LIBS = ("deepgemm", "cublas", "qgemm")


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

    def kineto_us(self, fn: Callable[[], None]) -> float:
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(self.iters):
                self.big.zero_()
                fn()
            torch.cuda.synchronize()
        total = 0.0
        for e in prof.events():
            if e.device_type.name != "CUDA":
                continue
            name = e.name.lower()
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


def run_case(case: Dict[str, Any], gen: Any, libs: Dict[str, Any], timer: Timer, torch: Any) -> Dict[str, Any]:
    kind = case["kind"]
    row: Dict[str, Any] = {"kind": kind, "order": ",".join(l for l in LIBS if l in libs), "errors": {}}
    fns: Dict[str, Callable[[], None]] = {}
    outs: Dict[str, Any] = {}
    checks: Dict[str, Callable[[], Any]] = {}
    if kind == "bf16":
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
    for t in ("kineto", "events"):
        q = row.get(f"qgemm_{t}_us")
        for peer in ("deepgemm", "cublas"):
            p = row.get(f"{peer}_{t}_us")
            row[f"{peer}_over_qgemm_{t}"] = p / q if p and q else None
    return row


def geomean(xs: List[float]) -> Optional[float]:
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def render(rows: List[Dict[str, Any]], device: str) -> str:
    out = [f"# peers-families on {device}: time ratios peer / qgemm (> 1: qgemm faster)", ""]
    out.append(f"{'kind':16} {'shape':24} {'lay':3} {'D':5} {'acc':3} {'qg us':>8} {'dg/qg kin':>9} "
               f"{'dg/qg ev':>8} {'cb/qg kin':>9} {'qg diff':>9}  errors")
    for r in rows:
        f = lambda x, p=2: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
        out.append(f"{r['kind']:16} {r.get('shape', '?'):24} {r.get('layout', ''):3} {r.get('d', 'bf16'):5} "
                   f"{int(bool(r.get('accumulate'))):3} {f(r.get('qgemm_kineto_us'), 1):>8} "
                   f"{f(r.get('deepgemm_over_qgemm_kineto')):>9} {f(r.get('deepgemm_over_qgemm_events')):>8} "
                   f"{f(r.get('cublas_over_qgemm_kineto')):>9} "
                   f"{'-' if r.get('qgemm_diff') is None else format(r['qgemm_diff'], '.1e'):>9}  "
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
    return "\n".join(out) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--deepgemm-src", default=os.environ.get("QG_DEEPGEMM_SRC", ".peers/DeepGEMM"))
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--max-rows", type=int, default=0, help="at most this many rows per kind (0: all)")
    args = p.parse_args()
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
    cases = [c for c in bf16_cases(gen, torch) if c["kind"] in kinds]
    if args.max_rows:
        per: Dict[str, int] = {}
        kept = []
        for c in cases:
            per[c["kind"]] = per.get(c["kind"], 0) + 1
            if per[c["kind"]] <= args.max_rows:
                kept.append(c)
        cases = kept
    timer = Timer(torch, args.iters)
    device = torch.cuda.get_device_name(0)
    rows: List[Dict[str, Any]] = []
    os.makedirs(args.out, exist_ok=True)
    for i, case in enumerate(cases):
        torch.manual_seed(i)
        random.seed(i)
        libs_row = {k: v for k, v in libs.items() if not (k == "cublas" and case["kind"] != "bf16")}
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
               "deepgemm": "deepgemm" in libs, "rows": rows}
        with open(os.path.join(args.out, "peers-families.json"), "w") as f:
            json.dump(doc, f, indent=1, default=str)
        with open(os.path.join(args.out, "peers-families.txt"), "w") as f:
            f.write(render(rows, device))
    print(render(rows, device))
    return 0


if __name__ == "__main__":
    sys.exit(main())
