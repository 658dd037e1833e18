#!/usr/bin/env python3
"""bench/family_probe.py -- diagnostics for one family row of bench/peers_families.py:
the host cost of a call (CPU time, the GPU kept busy so the call never waits for it) and a
single profiled call for ncu.

  python3 bench/family_probe.py --host [--cases SPEC;SPEC...] [--out DIR]
      per case and library: CPU us per call (perf_counter_ns around the call, median of
      --calls, the stream drained every 16 calls outside the timing), then qgemm's calls
      under torch.profiler (CPU ops, self time) and cProfile (Python functions).
  python3 bench/family_probe.py --events [--cases SPEC;SPEC...] [--out DIR]
      where a call's CUDA-events time goes (issue 50: the paged rows' events ratio trails
      their kineto ratio): per case and library, interleaved call by call, the kineto mean
      (8 GB zeroed before each call, as peers_families), and the median events time after
      zeroing 2x L2 (peers_families' events), after zeroing 1 GiB (the call's host time
      hidden behind a longer GPU queue) and of the call replayed from a CUDA graph (no host
      time at all) after 2x L2, each with the CPU time of the call itself (perf_counter
      around it: what the GPU waits for when the flush ends first) -> family-events.json.
  python3 bench/family_probe.py --ncu --cases SPEC --lib qgemm|deepgemm
      warms the call up, then runs it once between cudaProfilerStart/Stop
      (ncu --profile-from-start off).

Cast rows: "kind=cast|name=per_token|m=64|k=7168" (names per_token, per_block, per_channel,
silu, silu_masked: x [8, m, k] with masked_m and M-major scales), optionally "|env=WORDS": the
row runs with QGEMM_CAST_VARIANT=WORDS ("checked": the package's checked path), so one run compares the host
paths. "kind=floor": the
launch floor, torch.empty(16 floats) + zero_() on the GPU (one tiny kernel through torch's
dispatcher, allocator and launch), timed as every row is; "kind=floor|what=zero": zero_()
alone on a tensor made once.

SPEC selects rows of peers_families.family_cases() by field=value pairs, e.g.
"kind=paged-mqa|bsz=4096|next_n=2|h=64|f32=True" (the first matching row), or
"kind=bf16|m=128|n=4096|k=7168" (a plain NT bf16_gemm_nt; not in family_cases()).
"""
from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import json
import os
import pstats
import statistics
import sys
import time
from typing import Any, Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

DEFAULT = ";".join([
    "kind=bf16|m=128|n=4096|k=7168",
    "kind=einsum|expr=bmk,bnk->mn|b=129|m=128|n=384|k=128|f32=True",
    "kind=einsum|expr=bhr,hdr->bhd|b=4|h=128|r=512|d=128",
    "kind=einsum|expr=fp8 bhr,hdr->bhd|b=4",
    "kind=mqa|sq=2048|sk=8192|h=32|dim=32",
    "kind=paged-mqa|bsz=256|next_n=1|h=32|avg_kv=8192|f32=False",
    "kind=hc|m=13|n=24|k=7680|splits=16",
    "kind=hc|m=4096|n=24|k=7168|splits=None",
    "kind=cast|name=per_token|m=64|k=7168",
    "kind=cast|name=silu|m=64|k=4096",
])


def parse_spec(spec: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for part in spec.split("|"):
        k, v = part.split("=", 1)
        out[k] = {"True": True, "False": False, "None": None}.get(v, int(v) if v.lstrip("-").isdigit() else v)
    return out


def build(spec: Dict[str, Any], libs: Dict[str, Any], torch: Any, pf: Any):
    if spec["kind"] == "bf16":
        m, n, k = spec["m"], spec["n"], spec["k"]
        a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
        fns = {}
        for lib, mod in libs.items():
            d = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
            fns[lib] = (lambda mod=mod, d=d: mod.bf16_gemm_nt(a, b, d))
        return fns
    if spec["kind"] == "floor":  # the launch floor (the casts' host cost is measured above it)
        if spec.get("what") == "zero":
            z = torch.empty(16, device="cuda")
            return {"torch": lambda: z.zero_()}
        return {"torch": lambda: torch.empty(16, device="cuda").zero_()}
    if spec["kind"] == "cast":  # qgemm only: DeepGEMM's casts are torch formulas
        import qgemm
        x = torch.randn(spec["m"], spec["k"], dtype=torch.bfloat16, device="cuda")
        if spec["name"] == "silu_masked":
            x = torch.randn(8, spec["m"], spec["k"], dtype=torch.bfloat16, device="cuda")
            mm = torch.full((8,), spec["m"] * 5 // 8, dtype=torch.int32, device="cuda")
        f = {"per_token": lambda: qgemm.per_token_cast_to_fp8(x),
             "per_block": lambda: qgemm.per_block_cast_to_fp8(x),
             "per_channel": lambda: qgemm.per_channel_cast_to_fp8(x),
             "silu": lambda: qgemm.silu_and_mul_fp8_quant(x),
             "silu_masked": lambda: qgemm.silu_and_mul_fp8_quant(x, masked_m=mm,
                                                                   sf_mn_major=True)}[spec["name"]]
        return {"qgemm": f}
    case = next(c for c in pf.family_cases() if all(c.get(k) == v for k, v in spec.items()))
    row: Dict[str, Any] = {"errors": {}}
    fns, _outs, _checks, _resets, _ref = pf.family_case(case, row, libs, torch)
    return {k: v for k, v in fns.items() if k in libs}


def host_us(fn: Callable[[], Any], torch: Any, calls: int) -> float:
    ts = []
    for i in range(calls):
        if i % 16 == 0:
            torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        fn()
        ts.append((time.perf_counter_ns() - t0) / 1e3)
    torch.cuda.synchronize()
    return statistics.median(ts)


def events_probe(fns: Dict[str, Callable[[], Any]], torch: Any, pf: Any, iters: int) -> Dict[str, Any]:
    """--events: kineto, events after 2x L2 / 1 GiB zeroed, graph-replayed events (see the docstring)."""
    timer = pf.Timer(torch, iters=iters)
    big = torch.empty((1 << 30) // 4, dtype=torch.int32, device="cuda")
    out: Dict[str, Any] = {}
    graphs: Dict[str, Any] = {}
    for lib, f in fns.items():
        out[f"{lib}_kineto_us"] = timer.kineto_us(f)
        try:  # the call captured once (its allocations come from the graph's pool)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                f()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                f()
            graphs[lib] = g
        except Exception as e:  # noqa: BLE001
            out[f"{lib}_graph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    times: Dict[str, List[float]] = {}
    for _ in range(iters):
        for lib, f in fns.items():
            for mode, flush, call in (("events_l2", timer.small, f), ("events_1g", big, f),
                                      ("graph_l2", timer.small, graphs[lib].replay if lib in graphs else None)):
                if call is None:
                    continue
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                t0 = time.perf_counter_ns()
                call()
                t1 = time.perf_counter_ns()
                end.record()
                end.synchronize()
                times.setdefault(f"{lib}_{mode}_us", []).append(start.elapsed_time(end) * 1e3)
                times.setdefault(f"{lib}_{mode}_host_us", []).append((t1 - t0) / 1e3)
    out.update({k: statistics.median(v) for k, v in times.items()})
    del big
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=DEFAULT)
    p.add_argument("--host", action="store_true")
    p.add_argument("--ncu", action="store_true")
    p.add_argument("--events", action="store_true")
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--lib", default="qgemm")
    p.add_argument("--calls", type=int, default=400)
    p.add_argument("--deepgemm-src", default=os.environ.get("QG_DEEPGEMM_SRC", ".peers/DeepGEMM"))
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    args = p.parse_args()
    import torch
    sys.path.insert(0, os.path.join(args.deepgemm_src, "tests"))
    import qgemm.deep_gemm as qdg
    import peers_families as pf
    libs: Dict[str, Any] = {}
    try:
        libs["deepgemm"] = importlib.import_module("deep_gemm")
    except Exception as e:  # noqa: BLE001
        print(f"DeepGEMM: not importable ({type(e).__name__}: {e})", file=sys.stderr)
    libs["qgemm"] = qdg
    torch.manual_seed(0)
    specs = [parse_spec(s) for s in args.cases.split(";") if s]
    if args.ncu:
        fns = build(specs[0], {args.lib: libs[args.lib]}, torch, pf)
        f = fns[args.lib]
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        f()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        return 0
    if args.events:
        rows = []
        for spec in specs:
            fns = build(spec, libs, torch, pf)
            row = {"case": spec, **events_probe(fns, torch, pf, args.iters)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "family-events.json"), "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1, default=str)
        return 0
    rows = []
    for spec in specs:
        try:
            fns = build(spec, libs, torch, pf)
        except Exception as e:  # noqa: BLE001
            print(f"{spec}: setup failed: {type(e).__name__}: {e}")
            continue
        row: Dict[str, Any] = {"case": spec}
        prev_variant = os.environ.get("QGEMM_CAST_VARIANT")
        if "env" in spec:  # the casts' host path under QGEMM_CAST_VARIANT=env (this row only)
            os.environ["QGEMM_CAST_VARIANT"] = str(spec["env"])
        for lib, f in fns.items():
            try:
                for _ in range(5):
                    f()
                row[f"{lib}_host_us"] = host_us(f, torch, args.calls)
            except Exception as e:  # noqa: BLE001
                row[f"{lib}_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        if "qgemm" in fns and "qgemm_error" not in row:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(50):
                    fns["qgemm"]()
            torch.cuda.synchronize()
            row["torch_profile"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(200):
                fns["qgemm"]()
            pr.disable()
            torch.cuda.synchronize()
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14)
            row["cprofile"] = s.getvalue()
        if prev_variant is None:
            os.environ.pop("QGEMM_CAST_VARIANT", None)
        else:
            os.environ["QGEMM_CAST_VARIANT"] = prev_variant
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("torch_profile", "cprofile")}), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "family-host.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1, default=str)
    with open(os.path.join(args.out, "family-host-profiles.txt"), "w") as f:
        for r in rows:
            f.write(f"==== {r['case']}\n{r.get('torch_profile', '')}\n{r.get('cprofile', '')}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
