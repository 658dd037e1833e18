#!/usr/bin/env python3
"""bench/explore.py -- one tree's qgemm beside DeepGEMM on chosen rows, for A/B runs.

An exploration compares two kernel trees (a patch applied or not) in
separate processes, each timing DeepGEMM beside it, so that a row's
ratio DeepGEMM / qgemm is comparable across the processes even when the
GPU's clock drifts between them. Run it once per tree, alternating (A B A
or A B A B), and compare the ratios. Rows and inputs are peers.py's (same
specs, same seed); timing is peers.py's kineto (8 GB memset before each
call, mean of N calls), each library warmed once first.

    python3 bench/explore.py TAG [--reps N] [--warm-jobs J] [--config KEY=VALUE ...] ROW...

ROW is KIND:SHAPE as peers.py names rows (dense:4096x7168x16384,
contiguous:4x8192x6144x7168, masked:6x1024x6144x7168, ...); a bare set name
picks every row of that set: m4096 (the dense rows of M = 4096), or a kind
(contiguous, masked, wgrad, k-grouped, contiguous-psum, masked-psum); a ROW
ending in * every row whose KIND:SHAPE starts with the rest
(masked-psum:32x192x*); dense:MxNxK outside the table is timed as well.
--config overrides keys of the heuristic's configuration (block_m, block_n,
num_stages, multicast, swizzle_group, split_k; num_stages is then re-derived
unless given). One line per row:

    TAG KIND SHAPE dg US qg US ratio R [block_m x block_n mcM stS swW] diff D

(D: peers.py's diff of qgemm's output, poisoned with NaN before the
checked call, or reset to C for the accumulating kinds, against the float64
product of the dequantized inputs.)

Other explorations import heuristic(), forced() and kineto() from here.
"""
import argparse
import sys
from typing import Any, Callable, Dict, List

sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402


def heuristic(qg: Any, row: Any, spec: Dict[str, Any]) -> Dict[str, Any]:
    """The configuration qgemm's heuristic picks for the row's problem."""
    n, k = spec["n"], spec["k"]
    if spec["kind"] == "dense":
        return qg.select_config(spec["m"], n, k)
    if spec["kind"] == "contiguous":
        return qg.select_config(row.a.shape[0], n, k, kind="contiguous", num_groups=spec["g"])
    if spec["kind"] == "masked":
        return qg.select_config(spec["max_m"], n, k, kind="masked", num_groups=spec["g"],
                                expected_m=spec["expected_m"])
    raise ValueError(f"explore: no forced call for kind {spec['kind']}")


def forced(qg: Any, row: Any, spec: Dict[str, Any], cfg: Dict[str, Any]) -> Callable[[], Any]:
    """A call of the row's problem under configuration cfg."""
    a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
    if spec["kind"] == "dense":
        return lambda: qg.fp8_gemm_nt(a, b, d, config=cfg)
    if spec["kind"] == "contiguous":
        return lambda: qg.m_grouped_fp8_gemm_nt_contiguous(a, b, d, row.m_indices, config=cfg)
    if spec["kind"] == "wgrad":
        return lambda: qg.fp8_gemm_nt(a, b, d, c=d, recipe=peers.WGRAD_RECIPE, config=cfg)
    if spec["kind"] in ("contiguous-psum", "masked-psum"):
        em = spec["expected_m"] if spec["kind"] == "masked-psum" else None
        return lambda: qg.m_grouped_fp8_gemm_nt_contiguous(
            a, b, d, row.group_ends, use_psum_layout=True, expected_m_for_psum_layout=em,
            config=cfg)
    if spec["kind"] == "masked":
        return lambda: qg.m_grouped_fp8_gemm_nt_masked(a, b, d, row.masked_m, spec["expected_m"],
                                                       config=cfg)
    raise ValueError(f"explore: no forced call for kind {spec['kind']}")


def kineto(fn: Callable[[], Any], flusher: Any, reps: int) -> float:
    """Kineto GPU time of one call (us), after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    return peers.time_kineto(fn, flusher, reps)[0]


def wanted(spec: Dict[str, Any], rows: List[str]) -> bool:
    name = f"{spec['kind']}:{spec['shape']}"
    for r in rows:
        if r == name or (r == "m4096" and spec["kind"] == "dense" and spec["m"] == 4096
                              and spec["set"].startswith("deepgemm")) or \
                r == spec["kind"] or (r.endswith("*") and name.startswith(r[:-1])):
            return True
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tag")
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warm-jobs", type=int, default=8,
                    help="compile both libraries' kernels first in this many processes (0: no)")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--no-deepgemm", action="store_true",
                    help="time qgemm alone (dg and ratio print as nan): A/B across trees only")
    args = ap.parse_args()
    over: Dict[str, Any] = {}
    for kv in args.config:
        key, value = kv.split("=", 1)
        over[key] = value if key == "multicast" else int(value)

    libs = peers.Libs(("qgemm",) if args.no_deepgemm else ("qgemm", "deepgemm"))
    qg = libs.qgemm
    flusher = peers.Flusher(8 << 30)
    specs, seen = [], set()
    for spec in peers.table_specs(libs.align(), 0):
        key = (spec["kind"], spec["shape"])
        if key not in seen and wanted(spec, args.rows):
            seen.add(key)
            specs.append(spec)
    for r in args.rows:  # a dense shape outside the table: dense:MxNxK
        if r.startswith("dense:") and ("dense", r[6:]) not in seen and not r.endswith("*"):
            m, n, k = peers.parse_shape(r[6:])
            seen.add(("dense", r[6:]))
            specs.append(peers.dense_spec(m, n, k, "explore"))
    if not over:
        peers.warm_parallel(specs, args.warm_jobs, libs)
    for spec in specs:
        row = peers.Row(spec, libs, 0)
        try:
            cfg = heuristic(qg, row, spec)
        except ValueError:  # (the psum and training kinds: no heuristic lookup here)
            cfg = {}
        call = row.call("qgemm")
        if over:
            cfg = dict(cfg, **over)
            if "num_stages" not in over:
                cfg["num_stages"] = 0
            call = forced(qg, row, spec, cfg)
        dg_call = row.call("deepgemm")
        dg = kineto(dg_call, flusher, args.reps) if dg_call else float("nan")
        us = kineto(call, flusher, args.reps)
        if row.c is None:
            row.d["qgemm"].fill_(float("nan"))  # poisoned: the checked call must write every row
        else:
            row.reset("qgemm")  # the accumulating kinds: D = C before the checked call
        call()
        torch.cuda.synchronize()
        diff = peers.calc_diff(row.valid("qgemm"), row.reference())
        print(f"{args.tag} {spec['kind']} {spec['shape']} dg {dg:.2f} qg {us:.2f} ratio {dg / us:.3f} "
              f"[{cfg.get('block_m')}x{cfg.get('block_n')} mc{cfg.get('multicast')} "
              f"st{cfg.get('num_stages')} sw{cfg.get('swizzle_group')}] diff {diff:.1e}",
              flush=True)
        del row
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
