#!/usr/bin/env python3
"""bench/heur_ab.py -- qgemm's FP8 heuristic alternatives (QGEMM_FP8_HEUR, issue 52) beside DeepGEMM, one process.

For each bench/peers.py row that --filter selects (same inputs, seed, flushes and timing
functions as peers.py): DeepGEMM once, then qgemm under each variant (the library reads its
environment per call; the launch cache's key holds QGEMM_FP8_HEUR and QGEMM_FP8_GROUPED_MCB),
each checked against the float64 reference of the dequantized inputs (PASS: diff < 1e-5, and
bitwise the default's output where the variant runs the default's tile) and timed: kineto
(CUPTI, after the 8 GB flush, DeepGEMM's kernel timed once a row) and CUDA events (median,
DeepGEMM and the variant taking turns call by call after a 2x-L2 flush).

  python3 bench/heur_ab.py --filter RE [--variant NAME=ENV[,ENV...]]... [--iters N] [--warm-jobs N]

A variant is `default` (nothing set) or NAME=VAR=VALUE[;VAR=VALUE] (e.g. nomcbc=QGEMM_FP8_HEUR=nomcbc,
mcb0=QGEMM_FP8_GROUPED_MCB=0); without --variant: default (notall+nomcb since 2026-11-29), none
(the heuristic before), nomcbc (default+nomcbc). A variant
whose tile and swizzle group are the default's on a row runs the default's kernel: not timed
again there ("="), the default's ratio counted in its geomean.
Prints one line per row (DeepGEMM/qgemm per variant, the variant's tile) and per variant the
geomean over the rows, its worst row, and PASS/FAIL of accuracy. Exit 1 on an accuracy failure.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402

DEFAULT_VARIANTS = ["default", "none=QGEMM_FP8_HEUR=none", "nomcbc=QGEMM_FP8_HEUR=default+nomcbc"]
KNOBS = ("QGEMM_FP8_HEUR", "QGEMM_FP8_GROUPED_MCB")


def parse_variant(text: str) -> Tuple[str, Dict[str, str]]:
    if text == "default":
        return "default", {}
    name, _, rest = text.partition("=")
    env = {}
    for item in rest.split(";"):
        var, eq, val = item.partition("=")
        if not eq or not var:
            raise SystemExit(f"--variant wants NAME=VAR=VALUE[;VAR=VALUE], got {text!r}")
        env[var] = val
    return name, env


def set_env(env: Dict[str, str]) -> None:
    for k in KNOBS:
        os.environ.pop(k, None)
    for k, v in env.items():
        os.environ[k] = v


def qgemm_config(mod: Any, spec: Dict[str, Any]) -> str:
    """The tile the library picks for the row under the current environment."""
    k = spec["kind"]
    try:
        if k == "dense":
            c = mod.select_config(spec["m"], spec["n"], spec["k"])
        elif k == "contiguous":
            c = mod.select_config(spec["m_total"], spec["n"], spec["k"], kind="contiguous",
                                  num_groups=spec["g"])
        elif k in ("contiguous-psum", "masked-psum"):
            c = mod.select_config(spec["m_rows"], spec["n"], spec["k"], kind="psum",
                                  num_groups=spec["g"],
                                  expected_m=spec["expected_m"] if k == "masked-psum" else 0)
        else:
            c = mod.select_config(spec["max_m"], spec["n"], spec["k"], kind="masked",
                                  num_groups=spec["g"], expected_m=spec["expected_m"])
    except Exception as e:
        return f"? ({peers.short_err(e)[:40]})"
    mc = {0: "", 1: "a", 2: "b"}.get(c["multicast"], str(c["multicast"]))
    return f"{c['block_m']}x{c['block_n']}{mc}/sw{c['swizzle_group']}"


def warm_all(groups: List[Tuple[Dict[str, str], List[Dict[str, Any]], List[str]]], jobs: int) -> None:
    """peers.py's warm workers (one call of each library per spec: compiles and caches the
    kernels), all groups at once, each group's processes under its environment: (env, specs,
    libs) -> about `jobs` processes in all."""
    import json
    import shutil
    import subprocess
    import tempfile
    t0 = time.time()
    total = sum(len(sp) for _, sp, _ in groups) or 1
    tmp = tempfile.mkdtemp(prefix="heur-warm-")
    procs = []
    for gi, (env, specs, libs) in enumerate(groups):
        if not specs:
            continue
        n = max(1, min(len(specs), round(jobs * len(specs) / total)))
        for j in range(n):
            path = os.path.join(tmp, f"g{gi}-{j}.json")
            with open(path, "w") as f:
                json.dump({"specs": specs[j::n], "libs": libs}, f)
            e = {k: v for k, v in os.environ.items() if k not in KNOBS}
            e.update(env)
            logf = open(path + ".log", "w")
            procs.append((subprocess.Popen([sys.executable, peers.__file__, "--_warm-worker", path],
                                           stdout=logf, stderr=subprocess.STDOUT, env=e), logf))
    bad = []
    for p, logf in procs:
        p.wait()
        logf.close()
        with open(logf.name) as f:
            for line in f:
                if line.startswith("WARM ") and ('"ok"' not in line or "error" in line):
                    bad.append(line[5:].strip()[:160])
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"warm: {len(procs)} processes, {time.time() - t0:.1f} s" + (f"; {len(bad)} problems" if bad else ""),
          flush=True)
    for b in bad[:10]:
        print("  warm: " + b, flush=True)


def geomean(xs: List[float]) -> Optional[float]:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--filter", required=True, help="regular expression over 'kind shape set' (peers.py's)")
    ap.add_argument("--variant", action="append", help="default or NAME=VAR=VALUE[;VAR=VALUE] (repeatable)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warm-jobs", type=int, default=0,
                    help="compile DeepGEMM's and qgemm's default kernels of every row in N processes first")
    ap.add_argument("--no-events", action="store_true", help="kineto only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--flush-gb", type=float, default=8.0)
    ap.add_argument("--max-diff", type=float, default=1e-5)
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds from the start after which no new row is begun (0: none); the "
                         "summary then covers the rows done (SIGTERM, as from timeout, ends the same way)")
    ap.add_argument("--dry-run", action="store_true", help="list the rows and variants (no GPU)")
    args = ap.parse_args()
    variants = [parse_variant(v) for v in (args.variant or DEFAULT_VARIANTS)]
    if variants[0][0] != "default":
        variants.insert(0, ("default", {}))
    if args.dry_run:
        for s in peers.select(peers.table_specs(peers.DEFAULT_ALIGN, args.seed), False, args.filter):
            print(f"{s['kind']:<15} {s['shape']:<18} {s['set']:<14} {peers.spec_detail(s)}")
        print("variants: " + ", ".join(f"{n} {e or '(unset)'}" for n, e in variants))
        return 0

    import torch
    if not torch.cuda.is_available():
        print("skipped: no GPU")
        return 0
    set_env({})
    libs = peers.Libs(("deepgemm", "qgemm"))
    for line in libs.describe():
        print(line, flush=True)
    if libs.qgemm is None:
        print("FAIL: qgemm not importable")
        return 1
    specs = peers.select(peers.table_specs(libs.align(), args.seed), False, args.filter)
    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name} ({props.multi_processor_count} SMs); {len(specs)} rows; variants: "
          + ", ".join(f"{n} {e or '(unset)'}" for n, e in variants), flush=True)
    t0 = time.time()
    # each variant's tile per row; a variant whose tile and swizzle are the default's runs the
    # default's kernel: timed once, under the default (its cells say "=")
    tiles: Dict[str, List[str]] = {}
    for name, env in variants:
        set_env(env)
        tiles[name] = [qgemm_config(libs.qgemm, s) for s in specs]
    set_env({})
    if args.warm_jobs > 0:
        groups = [({}, specs, [lib for lib in ("deepgemm", "qgemm") if getattr(libs, "dg" if lib == "deepgemm" else "qgemm") is not None])]
        for name, env in variants[1:]:
            groups.append((env, [s for i, s in enumerate(specs) if tiles[name][i] != tiles["default"][i]], ["qgemm"]))
        warm_all(groups, args.warm_jobs)
    flusher = peers.Flusher(int(args.flush_gb * 1e9))
    kin: Dict[str, List[float]] = {n: [] for n, _ in variants}
    evs: Dict[str, List[float]] = {n: [] for n, _ in variants}
    worst: Dict[str, Tuple[float, str]] = {}
    fails: List[str] = []
    names = [n for n, _ in variants]
    print(f"{'kind':<15} {'shape':<18} {'DG us':>8} | " + " | ".join(
        f"{n + ' kin/ev':<22} {'tile':<15}" for n in names), flush=True)
    import signal

    class Stop(BaseException):  # (not caught by the per-row handlers)
        pass

    def on_term(signum: int, frame: Any) -> None:
        raise Stop()
    signal.signal(signal.SIGTERM, on_term)
    try:
        for si, spec in enumerate(specs):
            if args.budget and time.time() - t0 > args.budget:
                print(f"budget: {args.budget:.0f} s spent; {len(specs) - si} rows not run", flush=True)
                break
            key = f"{spec['kind']} {spec['shape']}"
            t_row = time.time()
            set_env({})
            try:
                row = peers.Row(spec, libs, args.seed)
                dg = row.call("deepgemm") if libs.dg is not None else None
                if dg is not None:
                    dg()
                    torch.cuda.synchronize()
                ref = row.reference()
                dg_us = peers.time_kineto(dg, flusher, args.iters)[0] if dg is not None else None
            except Exception as e:
                print(f"{key}: setup failed: {peers.short_err(e)}", flush=True)
                fails.append(f"{key}: setup {peers.short_err(e)}")
                continue
            cells = []
            base_out = None
            base_tile = None
            base_cell: Tuple[Optional[float], Optional[float]] = (None, None)
            pending: List[Tuple[str, Optional[float], Optional[float]]] = []  # (counted once the row is whole)
            for name, env in variants:
                if name != "default" and tiles[name][si] == tiles["default"][si]:
                    r, re = base_cell
                    pending.append((name, r, re))
                    cells.append(f"{'=':<38}")
                    continue
                set_env(env)
                try:
                    fn = row.call("qgemm")
                    if row.c is None:  # poisoned: a valid element left unwritten fails the check
                        row.d["qgemm"].fill_(float("nan"))
                    row.reset("qgemm")
                    fn()
                    torch.cuda.synchronize()
                    out = row.valid("qgemm").clone()
                    diff = peers.calc_diff(out, ref)
                    tile = qgemm_config(libs.qgemm, spec)
                    ok = diff is not None and diff < args.max_diff
                    if name == "default":
                        base_out, base_tile = out, tile
                    elif tile.split("/")[0] == (base_tile or "").split("/")[0] and base_out is not None:
                        ok = ok and bool(torch.equal(out.view(torch.int16) if out.dtype == torch.bfloat16 else out,
                                                     base_out.view(torch.int16) if base_out.dtype == torch.bfloat16 else base_out))
                    if not ok:
                        fails.append(f"{key} {name}: diff {diff} (tile {tile}, default {base_tile})")
                    us = peers.time_kineto(fn, flusher, args.iters)[0]
                    r = dg_us / us if dg_us else None
                    re = None
                    if not args.no_events and dg is not None:
                        errs: Dict[str, str] = {}
                        e = peers.time_events({"deepgemm": dg, "qgemm": fn}, ["deepgemm", "qgemm"],
                                              flusher, args.iters, errs)
                        if "deepgemm" in e and "qgemm" in e:
                            re = e["deepgemm"] / e["qgemm"]
                    if name == "default":
                        base_cell = (r, re)
                    pending.append((name, r, re))
                    cells.append(f"{(format(r, '.3f') if r else '-'):>5} {(format(re, '.3f') if re else '-'):>5} "
                                 f"{us:>9.1f}us {'ok' if ok else 'FAIL':<4} {tile:<15}")
                except Exception as e:
                    fails.append(f"{key} {name}: {peers.short_err(e)}")
                    cells.append(f"{'error: ' + peers.short_err(e)[:30]:<38}")
            set_env({})
            print(f"{spec['kind']:<15} {spec['shape']:<18} {(format(dg_us, '.1f') if dg_us else '-'):>8} | "
                  + " | ".join(cells) + f"  ({time.time() - t_row:.1f} s)", flush=True)
            for name, r, re in pending:
                if r:
                    kin[name].append(r)
                    if name not in worst or r < worst[name][0]:
                        worst[name] = (r, key)
                if re:
                    evs[name].append(re)
            del row
            torch.cuda.empty_cache()
    except Stop:
        print("SIGTERM: stopped; the summary covers the rows printed", flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    set_env({})
    print()
    for name, env in variants:
        g, ge = geomean(kin[name]), geomean(evs[name])
        w = worst.get(name)
        print(f"SUMMARY {name:<10} {str(env or '(unset)'):<44} DeepGEMM/qgemm kineto geomean "
              f"{g if g is None else format(g, '.4f')} (worst {w[0]:.3f} {w[1]}) events "
              f"{ge if ge is None else format(ge, '.4f')} over {len(kin[name])} rows"
              if w else f"SUMMARY {name}: no rows")
    print(f"accuracy (diff < {args.max_diff:g} vs the fp64 reference; same tile bitwise the "
          f"default's): {'PASS' if not fails else 'FAIL'}")
    for f in fails:
        print("  FAIL " + f)
    print(f"total {time.time() - t0:.0f} s")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
