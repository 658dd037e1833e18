#!/usr/bin/env python3
"""bench/kloop_ab.py -- qgemm's FP8 K loop, QGEMM_FP8_KLOOP old against new (issue 52), beside DeepGEMM.

For each bench/peers.py row that --filter selects (peers.py's inputs, seed, flushes and timing
functions): DeepGEMM once, qgemm with QGEMM_FP8_KLOOP unset (old) and =new. Both run the same
tile (the knob changes the kernel's stage addressing only), so new must give old's bits:
PASS = both below --max-diff against the fp64 reference of the dequantized inputs and new
bitwise equal to old. Timed by kineto (after peers.py's 8 GB flush) and by CUDA events (median,
DeepGEMM, old and new taking turns call by call after a 2x-L2 flush).

  python3 bench/kloop_ab.py --filter RE [--iters N] [--warm]

Prints one line per row (DeepGEMM us; DeepGEMM/qgemm kineto and events for old and new; new's
time over old's) and a SUMMARY line per variant (geomeans), then PASS/FAIL. Exit 1 on FAIL.
--warm compiles qgemm's kernels of every row (old and new) in threads first and DeepGEMM's in
one process per row beside them (DeepGEMM's first call of a shape runs nvcc for 3-10 s).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402

KNOB = "QGEMM_FP8_KLOOP"
VARIANTS = ("old", "new")


def set_knob(v: str) -> None:
    if v == "old":
        os.environ.pop(KNOB, None)
    else:
        os.environ[KNOB] = v


def under(v: str, fn: Callable[[], Any]) -> Callable[[], Any]:
    """fn with the knob set to v first (the library reads it per call; the launch cache's key
    holds it, so old and new keep their own kernels)."""
    def call() -> Any:
        set_knob(v)
        return fn()
    return call


def compile_args(spec: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """qgemm.compile's arguments for a row (the heuristic's tile, as the call picks it)."""
    k = spec["kind"]
    if k == "dense":
        return dict(m=spec["m"], n=spec["n"], k=spec["k"])
    if k == "contiguous":
        return dict(m=spec["m_total"], n=spec["n"], k=spec["k"], kind="contiguous", num_groups=spec["g"])
    if k == "masked":
        return dict(m=spec["max_m"], n=spec["n"], k=spec["k"], kind="masked", num_groups=spec["g"],
                    expected_m=spec["expected_m"])
    return None  # (the other kinds compile on their first call)


def warm(specs: List[Dict[str, Any]], libs: Any) -> None:
    t0 = time.time()
    dg_thread = None
    if libs.dg is not None:
        dg_libs = peers.Libs(("deepgemm",))
        dg_thread = threading.Thread(target=peers.warm_parallel, args=(specs, len(specs), dg_libs))
        dg_thread.start()
    for v in VARIANTS:
        set_knob(v)
        todo = [a for a in map(compile_args, specs) if a is not None]
        def one(a: Dict[str, Any]) -> None:
            try:
                libs.qgemm.compile(**a)
            except Exception as e:  # (the row reports it again when it runs)
                print(f"warm {v}: {a}: {peers.short_err(e)}", flush=True)
        with ThreadPoolExecutor(max_workers=max(1, len(todo))) as ex:
            list(ex.map(one, todo))
    set_knob("old")
    if dg_thread is not None:
        dg_thread.join()
    print(f"warm: {time.time() - t0:.1f} s", flush=True)


def geomean(xs: List[float]) -> Optional[float]:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def fmt(x: Optional[float], spec: str = ".3f") -> str:
    return format(x, spec) if x is not None else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--filter", required=True, help="regular expression over 'kind shape set' (peers.py's)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warm", action="store_true", help="compile every row's kernels first, in parallel")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--flush-gb", type=float, default=8.0)
    ap.add_argument("--max-diff", type=float, default=1e-5)
    ap.add_argument("--dry-run", action="store_true", help="list the rows (no GPU)")
    args = ap.parse_args()
    if args.dry_run:
        for s in peers.select(peers.table_specs(peers.DEFAULT_ALIGN, args.seed), False, args.filter):
            print(f"{s['kind']:<15} {s['shape']:<18} {s['set']:<14} {peers.spec_detail(s)}")
        return 0

    import torch
    if not torch.cuda.is_available():
        print("skipped: no GPU")
        return 0
    set_knob("old")
    libs = peers.Libs(("deepgemm", "qgemm"))
    for line in libs.describe():
        print(line, flush=True)
    if libs.qgemm is None:
        print("FAIL: qgemm not importable")
        return 1
    specs = peers.select(peers.table_specs(libs.align(), args.seed), False, args.filter)
    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name} ({props.multi_processor_count} SMs); {len(specs)} rows; {KNOB} old (unset) / new",
          flush=True)
    t0 = time.time()
    if args.warm:
        warm(specs, libs)
    flusher = peers.Flusher(int(args.flush_gb * 1e9))
    kin: Dict[str, List[float]] = {v: [] for v in VARIANTS}
    evs: Dict[str, List[float]] = {v: [] for v in VARIANTS}
    speed: List[float] = []
    fails: List[str] = []
    print(f"{'kind':<12} {'shape':<20} {'DG us':>8} | {'old us':>8} {'kin':>5} {'ev':>5} | "
          f"{'new us':>8} {'kin':>5} {'ev':>5} | old/new time {'kin':>6} {'ev':>6} | diff     bits", flush=True)
    for spec in specs:
        key = f"{spec['kind']} {spec['shape']}"
        t_row = time.time()
        set_knob("old")
        try:
            row = peers.Row(spec, libs, args.seed)
            dg = row.call("deepgemm") if libs.dg is not None else None
            if dg is not None:
                dg()
                torch.cuda.synchronize()
            ref = row.reference()
            dg_us = peers.time_kineto(dg, flusher, args.iters)[0] if dg is not None else None
            fns = {}
            outs = {}
            diffs = {}
            for v in VARIANTS:
                fn = under(v, row.call("qgemm"))
                if row.c is None:  # poisoned: a valid element left unwritten fails the check
                    row.d["qgemm"].fill_(float("nan"))
                row.reset("qgemm")
                fn()
                torch.cuda.synchronize()
                outs[v] = row.valid("qgemm").clone()
                diffs[v] = peers.calc_diff(outs[v], ref)
                fns[v] = fn
            a, b = outs["old"], outs["new"]
            if a.dtype == torch.bfloat16:
                a, b = a.view(torch.int16), b.view(torch.int16)
            same = bool(torch.equal(a, b))
            ok = same and all(d is not None and d < args.max_diff for d in diffs.values())
            if not ok:
                fails.append(f"{key}: diff old {diffs['old']} new {diffs['new']}, bitwise same {same}")
            us = {v: peers.time_kineto(fns[v], flusher, args.iters)[0] for v in VARIANTS}
            errs: Dict[str, str] = {}
            calls = dict(fns)
            order = list(VARIANTS)
            if dg is not None:
                calls["deepgemm"] = dg
                order = ["deepgemm"] + order
            ev = peers.time_events(calls, order, flusher, args.iters, errs)
        except Exception as e:
            print(f"{key}: failed: {peers.short_err(e)}", flush=True)
            fails.append(f"{key}: {peers.short_err(e)}")
            set_knob("old")
            continue
        set_knob("old")
        cells = []
        for v in VARIANTS:
            r = dg_us / us[v] if dg_us else None
            re = ev["deepgemm"] / ev[v] if "deepgemm" in ev and v in ev else None
            if r:
                kin[v].append(r)
            if re:
                evs[v].append(re)
            cells.append(f"{us[v]:>8.1f} {fmt(r):>5} {fmt(re):>5}")
        sp_k = us["old"] / us["new"]
        sp_e = ev["old"] / ev["new"] if "old" in ev and "new" in ev else None
        speed.append(sp_k)
        print(f"{spec['kind']:<12} {spec['shape']:<20} {fmt(dg_us, '.1f'):>8} | " + " | ".join(cells)
              + f" | old/new time {sp_k:>6.4f} {fmt(sp_e, '.4f'):>6} | {fmt(diffs['new'], '.1e')} "
              f"{'same' if same else 'DIFFER'}  ({time.time() - t_row:.1f} s)", flush=True)
        del row
        torch.cuda.empty_cache()
    set_knob("old")
    print()
    for v in VARIANTS:
        print(f"SUMMARY {v:<4} {KNOB}={'(unset)' if v == 'old' else v}: DeepGEMM/qgemm kineto geomean "
              f"{fmt(geomean(kin[v]), '.4f')} events {fmt(geomean(evs[v]), '.4f')} over {len(kin[v])} rows")
    print(f"SUMMARY old/new kineto time ratio geomean {fmt(geomean(speed), '.4f')} (> 1: new faster)")
    print(f"accuracy (diff < {args.max_diff:g} vs the fp64 reference; new bitwise old): "
          f"{'PASS' if not fails else 'FAIL'}")
    for f in fails:
        print("  FAIL " + f)
    print(f"total {time.time() - t0:.0f} s")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
