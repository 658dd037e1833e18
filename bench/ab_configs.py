#!/usr/bin/env python3
"""bench/ab_configs.py -- issue 52: the H200 rows qgemm loses to DeepGEMM, each timed with
qgemm's old choice, its new one and DeepGEMM's tile, beside DeepGEMM, in one process.

One GPU call (after `make -j16 && python3 python/setup.py build_ext --inplace`, DeepGEMM
built with `bash .peers/build.sh`, then `source .peers/env.sh`):

    PYTHONPATH=python:$PYTHONPATH python3 bench/ab_configs.py [--rounds 2] [--reps 30] [--only RE]

For every row: DeepGEMM's call (its own heuristic), then qgemm forced to each variant:
  old   the planner of ff337ef (the 2026-11-28 measurement's tree), forced;
  new   this tree's planner, unforced (the call a user makes; the line says its config);
  dg*   DeepGEMM's tile (bench/dg_heuristic.py) with what qgemm's kind allows of its
        multicast (qgemm's grouped kernels have no B multicast: none, and A where legal);
  alt*  other candidates named per row.
Rounds alternate (DeepGEMM, variants..., DeepGEMM, variants...) so that every ratio DeepGEMM /
qgemm is taken against a DeepGEMM time of the same round. Timing: peers.py's kineto (8 GB
memset before each call, mean of --reps calls); every variant's output checked once
(poisoned with NaN first) against the float64 product of the dequantized inputs.
Lines:
    ROUND r ROW VARIANT block mc st | dg US qg US ratio R | diff D
and a summary per row: mean ratio of each variant over the rounds, the best, and
    CHECK new-choice ROW: OK | MISMATCH (the planner on this device picked X, expected Y)
which proves the device gate (dram_gbps >= 4500 on the H200) reads the real card.
Exit status 0 unless a check or a call failed.
"""
import argparse
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, "bench")
import dg_heuristic  # noqa: E402
import explore  # noqa: E402
import peers  # noqa: E402

Cfg = Dict[str, Any]


def cfg(bm: int, bn: int, mc: str = "none") -> Cfg:
    return {"block_m": bm, "block_n": bn, "multicast": mc, "num_stages": 0, "swizzle_group": 0,
            "split_k": 0}


def masked_exact(g: int, rows: int, n: int, k: int) -> Dict[str, Any]:
    """measured-2026-11-28-h200's masked 1 x 1024 rows: one group of exactly 1024 valid rows,
    M_max = expected_m = 1024."""
    return {"kind": "masked", "set": "issue52", "g": g, "m_mean": rows, "n": n, "k": k,
            "ms": [rows] * g, "max_m": rows, "expected_m": rows, "valid_m": g * rows,
            "shape": f"{g}x{rows}x{n}x{k}"}


def masked(g: int, mean: int, n: int, k: int) -> Dict[str, Any]:
    """peers.py's masked rows: rows 0.7-1.3 x the mean (seeded), M_max 4096, expected_m 1.2 x."""
    return peers.masked_spec(g, mean, n, k, peers.DG_MASKED_MAX_M, 0, "issue52")


def contig(g: int, mean: int, n: int, k: int) -> Dict[str, Any]:
    return peers.contiguous_spec(g, mean, n, k, peers.DEFAULT_ALIGN, 0, "issue52")


# (spec, the planner of ff337ef, the new planner's choice on an H200, other candidates)
# old / new from `python3 bench/dg_heuristic.py --compare` (ff337ef's table against this tree's).
ROWS: List[Tuple[Dict[str, Any], Cfg, Cfg, Dict[str, Cfg]]] = [
    # moved by the planner change (masked_whole_waves)
    (masked_exact(1, 1024, 6144, 7168), cfg(128, 256), cfg(128, 192), {}),
    (masked(4, 256, 4096, 4096), cfg(128, 256), cfg(128, 192), {}),
    (masked(4, 256, 4096, 2048), cfg(128, 256), cfg(128, 192), {}),
    (masked(6, 1024, 4096, 4096), cfg(256, 128, "a"), cfg(128, 192, "a"), {}),
    # losing rows the planner change leaves: candidates only
    (masked(4, 256, 6144, 7168), cfg(128, 192, "a"), cfg(128, 192, "a"),
     {"alt-256x128": cfg(256, 128), "alt-256x128A": cfg(256, 128, "a")}),
    (masked(6, 1024, 6144, 7168), cfg(256, 128, "a"), cfg(256, 128, "a"), {}),
    (masked(6, 1024, 7168, 3072), cfg(256, 128, "a"), cfg(256, 128, "a"), {}),
    (contig(4, 8192, 4096, 4096), cfg(128, 192, "a"), cfg(128, 192, "a"),
     {"alt-128x256A": cfg(128, 256, "a")}),
    (contig(8, 4096, 4096, 2048), cfg(128, 192, "a"), cfg(128, 192, "a"),
     {"alt-128x256A": cfg(128, 256, "a")}),
    # a control qgemm wins (1.08x) whose choice must not move
    (masked_exact(1, 1024, 7168, 3072), cfg(128, 256), cfg(128, 256), {}),
]


def dg_tile(spec: Dict[str, Any]) -> Dict[str, Any]:
    kind = {"masked": "masked", "contiguous": "contig", "dense": "dense"}[spec["kind"]]
    s = {"kind": kind, "n": spec["n"], "k": spec["k"], "g": spec.get("g", 1)}
    if kind == "masked":
        s.update(m=spec["max_m"], expected_m=spec["expected_m"])
    elif kind == "contig":
        s.update(m=spec["m_total"])
    else:
        s.update(m=spec["m"])
    return dg_heuristic.dg_choice(s)


def variants(spec: Dict[str, Any], old: Cfg, new: Cfg, alts: Dict[str, Cfg]) -> Dict[str, Optional[Cfg]]:
    """label -> forced config (None: the unforced heuristic call), duplicates dropped."""
    out: Dict[str, Optional[Cfg]] = {"new": None}
    seen = [tuple(sorted(new.items()))]

    def add(label: str, c: Cfg) -> None:
        key = tuple(sorted(c.items()))
        if key not in seen:
            seen.append(key)
            out[label] = c

    add("old", old)
    dg = dg_tile(spec)
    mcs = ["none", "a"] if dg["multicast"] in ("B", "A") else ["none"]
    if spec["kind"] == "dense" and dg["multicast"] == "B":
        mcs = ["b", "none"]
    for mc in mcs:
        c = cfg(dg["block_m"], dg["block_n"], mc)
        n_blocks = -(-spec["n"] // c["block_n"])
        if mc == "a" and n_blocks % 2:
            continue
        add(f"dg-{c['block_m']}x{c['block_n']}{'' if mc == 'none' else mc.upper()}", c)
    for label, c in alts.items():
        add(label, c)
    return out


def describe(c: Dict[str, Any]) -> str:
    mc = c.get("multicast")
    mc = {0: "none", 1: "A", 2: "B"}.get(mc, mc) if not isinstance(mc, str) else mc
    return f"{c.get('block_m')}x{c.get('block_n')} mc {mc} st {c.get('num_stages')}"


def same_tile(a: Dict[str, Any], b: Cfg) -> bool:
    mc = a.get("multicast")
    mc = {0: "none", 1: "a", 2: "b"}.get(mc, mc) if not isinstance(mc, str) else mc.lower()
    return a.get("block_m") == b["block_m"] and a.get("block_n") == b["block_n"] and mc == b["multicast"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", default=None, help="regex on 'kind shape'")
    ap.add_argument("--warm-jobs", type=int, default=8)
    args = ap.parse_args()
    import torch

    libs = peers.Libs(("qgemm", "deepgemm"))
    if libs.qgemm is None:
        print(f"qgemm not importable: {libs.why.get('qgemm')}")
        return 2
    qg = libs.qgemm
    props = qg.get_device_props()
    print(f"# device {torch.cuda.get_device_name()} | qgemm sees {props.get('sm_count')} SMs, "
          f"dram_gbps {props.get('dram_gbps')} | DeepGEMM: "
          f"{'loaded' if libs.dg is not None else 'not installed: ' + libs.why.get('deepgemm', '')}")
    rows = [r for r in ROWS if not args.only or re.search(args.only, peers.spec_key(r[0]))]
    peers.warm_parallel([r[0] for r in rows], args.warm_jobs, libs)
    flusher = peers.Flusher(8 << 30)
    failed = 0
    summary: List[str] = []
    for spec, old, new, alts in rows:
        name = peers.spec_key(spec)
        row = peers.Row(spec, libs, 0)
        chosen = explore.heuristic(qg, row, spec)
        ok = same_tile(chosen, new)
        failed += not ok
        check = (f"CHECK new-choice {name}: " + ("OK" if ok else
                 f"MISMATCH (the planner picked {describe(chosen)}, expected {describe(new)})"))
        print(check, flush=True)
        summary.append(check)
        calls: Dict[str, Callable[[], Any]] = {}
        shown: Dict[str, Dict[str, Any]] = {}
        for label, c in variants(spec, old, new, alts).items():
            try:
                if c is None:
                    calls[label], shown[label] = row.call("qgemm"), chosen
                else:
                    full = completed(qg, row, spec, c)
                    calls[label], shown[label] = explore.forced(qg, row, spec, c), full
                # compile + check once: poisoned output, every valid row written
                row.d["qgemm"].fill_(float("nan"))
                calls[label]()
                torch.cuda.synchronize()
                diff = peers.calc_diff(row.valid("qgemm"), row.reference())
                print(f"{name} {label:<14} {describe(shown[label])}: diff {diff:.1e}", flush=True)
                if not diff < 1e-3:
                    print(f"FAIL {name} {label}: diff {diff}")
                    failed += 1
            except Exception as e:  # an illegal forced config: say so, go on
                print(f"SKIP {name} {label}: {peers.short_err(e)}", flush=True)
                calls.pop(label, None)
        dg_call = row.call("deepgemm")
        ratios: Dict[str, List[float]] = {label: [] for label in calls}
        times: Dict[str, List[float]] = {label: [] for label in calls}
        for rnd in range(args.rounds):
            dg = explore.kineto(dg_call, flusher, args.reps) if dg_call else float("nan")
            for label, fn in calls.items():
                us = explore.kineto(fn, flusher, args.reps)
                ratios[label].append(dg / us)
                times[label].append(us)
                print(f"ROUND {rnd + 1} {name} {label:<14} {describe(shown[label]):<28} | dg "
                      f"{dg:8.2f} qg {us:8.2f} ratio {dg / us:.3f}", flush=True)
        mean = {label: sum(v) / len(v) for label, v in ratios.items() if v}
        if mean:
            best = max(mean, key=lambda x: mean[x])
            line = (f"SUMMARY {name}: " + ", ".join(
                f"{label} {describe(shown[label]).rsplit(' st', 1)[0]} {mean[label]:.3f} "
                f"({min(times[label]):.1f} us)" for label in mean) + f" | best {best}")
            print(line, flush=True)
            summary.append(line)
        del row
        torch.cuda.empty_cache()
    print("\n# DeepGEMM time / qgemm time (kineto, mean over rounds); 'new' is this tree's planner")
    for line in summary:
        print(line)
    print("PASS" if not failed else f"FAIL: {failed} check(s) failed")
    return 0 if not failed else 1


def completed(qg: Any, row: Any, spec: Dict[str, Any], c: Cfg) -> Dict[str, Any]:
    """The forced config as the library completes it (stages, swizzle, grid), for the lines;
    raises for an illegal one (the same problem explore.heuristic describes)."""
    n, k = spec["n"], spec["k"]
    if spec["kind"] == "dense":
        return qg.select_config(spec["m"], n, k, config=c)
    if spec["kind"] == "contiguous":
        return qg.select_config(row.a.shape[0], n, k, kind="contiguous", num_groups=spec["g"],
                                config=c)
    return qg.select_config(spec["max_m"], n, k, kind="masked", num_groups=spec["g"],
                            expected_m=spec["expected_m"], config=c)


if __name__ == "__main__":
    sys.exit(main())
