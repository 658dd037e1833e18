#!/usr/bin/env python3
"""bench/heur_table.py -- DeepGEMM's FP8 configuration beside qgemm's on the H200 (issue 52), offline.

For DeepGEMM's 28 dense forward test shapes (M 1, 64, 128, 4096 x its 7 (N, K); M 64 as the
measured table has it), its 36 grouped rows (contiguous 4 x 8192, 8 x 4096, 32 x ~256; masked
32 x ~192, 6 x ~1024, 32 x ~20, 6 x ~20, 1 x 1024, 4 x ~256; each at the four N x K) and, for
context, the 8 contiguous-psum rows, as bench/peers.py draws them (seed 0), one line each:

  DG ran      the configuration DeepGEMM 54e2261 chose on the H200: its own printed line
              (DG_PRINT_CONFIGS=1 under bench/peers.py, 2026-11-29: --dg-configs, condensed in
              bench/results/2026-11-29-cpu-heur-table/dg-configs-printed.txt), else its kernel's
              template arguments in a peers.json ("(k)"), else the model ("(model)"); its
              stages, shared memory (its formula), swizzle group (get_num_1d_blocks_per_group:
              8 or 16 blocks along M, or N under A multicast), and waves / last-wave CTAs over
              the rows it really runs;
  model       '=' where bench/dg_heuristic.py's restatement of its heuristic picks the same
              block and multicast, else what it picks (a stale-model check; '-': psum, not
              modelled);
  qg          qgemm's choice on H200 properties (qg_context_create_offline +
              qg_select_config: this checkout's build/libqgemm.so, QGEMM_FP8_GROUPED_MCB
              unset, i.e. on for the H200), the same columns (waves over the real rows: the
              m-grouped pairs of B multicast round each group's tiles up to even);
  meas        DeepGEMM time / qgemm time, kineto, on the H200 with the default of then
              (QGEMM_FP8_HEUR=none's choice since notall+nomcb became the default, 2026-11-29)
              (grouped: bench/results/2026-11-28-h200-26-t1/grouped-mcb1; dense:
              /work/shared/peers/measured-2026-11-28-h200/dense-deepgemm-shapes.txt);
  alternatives  qgemm's choice under each QGEMM_FP8_HEUR value (src/fp8_config.c
              qg__fp8_heur) and QGEMM_FP8_GROUPED_MCB=0, where it differs.

Usage: python3 bench/heur_table.py [--lib build/libqgemm.so] [--out DIR]
(needs build/libqgemm.so: make build/libqgemm.so; no GPU, no torch).
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dg_heuristic as dgh  # noqa: E402
import peers  # noqa: E402  (pure Python at import)

SMS = 132
GROUPED_JSON = os.path.join(HERE, "results", "2026-11-28-h200-26-t1", "grouped-mcb1", "peers.json")
GROUPED_MCB0_JSON = os.path.join(HERE, "results", "2026-11-28-h200-26-t1", "grouped-mcb0",
                                 "peers.json")
DENSE_JSON = os.path.join(HERE, "results", "2026-11-25-h200-14", "peers.json")
# DeepGEMM time / qgemm time, kineto, H200, qgemm ff337ef (the dense rows' configurations are
# unchanged since: bench/dg_heuristic.py), /work/shared/peers/measured-2026-11-28-h200
DENSE_MEASURED = {k.split(" ", 1)[1]: v for k, v in dgh.MEASURED.items() if k.startswith("dense ")}
ALTS = ["none", "notall", "nomcb", "default+nomcbc"]  # (swN left the tree on 2026-11-29)


def dg_ran(paths: List[str]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """(kind, shape) -> DeepGEMM's kernel template arguments, from peers.json files."""
    out: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            doc = json.load(f)
        for r in doc["rows"]:
            k = r.get("kernels")
            if not k:
                continue
            k = ast.literal_eval(k) if isinstance(k, str) else k
            names = k.get("deepgemm", {}).get("names") or []
            m = re.search(r"sm90_fp8_gemm_1d2d_impl<([^>]*)>", names[0]) if names else None
            if not m:
                continue
            a = [x.strip() for x in m.group(1).split(",")]
            # <kMajorSFB, M, N, K, groups, BLOCK_M, BLOCK_N, BLOCK_K, swizzle A, B, D, stages,
            #  TMA threads, math threads, multicast, multicast on A, SMs, GemmType, ...>
            u = [int(x.rstrip("u")) if x.rstrip("u").isdigit() else x for x in a]
            mc = "none" if u[14] == 1 else ("A" if u[15] == "true" else "B")
            out.setdefault((r["kind"], r["shape"]), {
                "block_m": u[5], "block_n": u[6], "num_stages": u[11], "multicast": mc})
    return out


PRINTED = os.path.join(HERE, "results", "2026-11-29-cpu-heur-table", "dg-configs-printed.txt")
PRINTED_KEYS = ("gemm_type", "m", "n", "k", "num_groups", "expected_m", "expected_num_groups",
                "block_m", "block_n", "cluster_m", "cluster_n", "smem_size", "num_stages",
                "num_waves", "last_wave_util", "num_cycles")


def dg_printed(path: str) -> Dict[Tuple[str, str], Dict[str, int]]:
    """(kind, shape) -> DeepGEMM's own printed choice (DG_PRINT_CONFIGS=1 under bench/peers.py:
    a GemmDesc(...): GemmConfig(...), LayoutInfo(...) line before the row's "[i/N] kind shape"
    line), or the condensed "kind shape | key=value ..." lines of --condense."""
    out: Dict[Tuple[str, str], Dict[str, int]] = {}
    if not os.path.exists(path):
        return out
    pending = None
    with open(path) as f:
        for line in f:
            fields = {k: int(v) for k, v in re.findall(r"\b(\w+)=(-?\d+)\b", line) if k in PRINTED_KEYS}
            if line.startswith("GemmDesc("):
                pending = fields
                continue
            m = re.match(r"\[\d+/\d+\] (\S+)\s+(\S+)", line)
            if m and pending:
                out[(m.group(1), m.group(2))] = pending
                pending = None
                continue
            m = re.match(r"(\S+) (\S+) \|", line)
            if m and "block_m" in fields:
                out[(m.group(1), m.group(2))] = fields
    return out


def condense(src: str, dst: str) -> None:
    rows = dg_printed(src)
    with open(dst, "w") as f:
        f.write(f"# DeepGEMM 54e2261's printed choices (DG_PRINT_CONFIGS=1) under bench/peers.py on the "
                f"H200, condensed from {src}\n")
        for (kind, shape), d in rows.items():
            f.write(f"{kind} {shape} | " + " ".join(f"{k}={d[k]}" for k in PRINTED_KEYS if k in d) + "\n")
    print(f"wrote {dst}: {len(rows)} rows")


def measured(path: str) -> Dict[Tuple[str, str], float]:
    out: Dict[Tuple[str, str], float] = {}
    if os.path.exists(path):
        with open(path) as f:
            for r in json.load(f)["rows"]:
                if r["timing"] == "kineto" and r.get("qgemm_us") and r.get("deepgemm_us"):
                    out[(r["kind"], r["shape"])] = r["deepgemm_us"] / r["qgemm_us"]
    return out


def dg_swizzle(bm: int, bn: int, mc: str) -> int:
    best, use = 0, None
    for c in (8, 16):
        u = c * bn + -(-SMS // c) * bm if mc == "A" else c * bm + -(-SMS // c) * bn
        if use is None or u < use:
            best, use = c, u
    return best


def real_tiles(spec: Dict[str, Any], bm: int, bn: int, pairs: bool) -> int:
    """Tiles the kernel runs over the rows peers.py draws (pairs: the m-grouped B multicast's
    per-group even slot count; qgemm only)."""
    nb = -(-spec["n"] // bn)
    kind = spec["kind"]
    if kind == "dense":
        return -(-spec["m"] // bm) * nb
    if kind == "contiguous":
        t = -(-spec["m_total"] // bm) * nb
        return t + (t & 1 if pairs else 0)
    per = [-(-x // bm) * nb for x in spec["ms"]]
    return sum(t + (t & 1 if pairs else 0) for t in per)


def waves(tiles: int) -> str:
    w = -(-tiles // SMS)
    return f"{w}/{tiles - (w - 1) * SMS}" if tiles else "0/0"


def problem(spec: Dict[str, Any]) -> Dict[str, Any]:
    """dg_heuristic's problem dict (qgemm's planner) for a peers.py spec."""
    k = spec["kind"]
    if k == "dense":
        return {"kind": "dense", "m": spec["m"], "n": spec["n"], "k": spec["k"], "g": 1}
    if k == "contiguous":
        return {"kind": "contig", "m": spec["m_total"], "n": spec["n"], "k": spec["k"],
                "g": spec["g"]}
    if k == "contiguous-psum":  # (no expected_m: DeepGEMM's test passes none)
        return {"kind": "psum", "m": spec["m_rows"], "n": spec["n"], "k": spec["k"],
                "g": spec["g"]}
    return {"kind": "masked", "m": spec["max_m"], "n": spec["n"], "k": spec["k"],
            "g": spec["g"], "expected_m": spec["expected_m"]}


def fmt_cfg(c: Optional[Dict[str, Any]]) -> str:
    if not c:
        return "-"
    sk = "s2" if c.get("split_k", 1) > 1 else ""
    return f"{c['block_m']}x{c['block_n']}{c['multicast'][0].lower() if c['multicast'] != 'none' else ''}{sk}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=dgh.default_lib())
    ap.add_argument("--out", help="write DIR/table.txt and DIR/table.json")
    ap.add_argument("--dg-configs", default=PRINTED,
                    help="DeepGEMM's printed choices: a peers.py log run with DG_PRINT_CONFIGS=1, or "
                         "the condensed file (default: %(default)s)")
    ap.add_argument("--condense", nargs=2, metavar=("LOG", "OUT"),
                    help="write the condensed form of a DG_PRINT_CONFIGS=1 log and exit")
    args = ap.parse_args()
    if args.condense:
        condense(*args.condense)
        return 0
    for v in ("QGEMM_FP8_HEUR", "QGEMM_FP8_GROUPED_MCB"):
        os.environ.pop(v, None)
    pl = dgh.Planner(args.lib, "h200")
    ran = dg_ran([GROUPED_JSON, DENSE_JSON])
    printed = dg_printed(args.dg_configs)
    for key, d in printed.items():  # DeepGEMM's own word first
        ran[key] = {"block_m": d["block_m"], "block_n": d["block_n"], "num_stages": d["num_stages"],
                    "multicast": "A" if d["cluster_n"] == 2 else "B" if d["cluster_m"] == 2 else "none",
                    "printed": d}
    meas = measured(GROUPED_JSON)
    meas0 = measured(GROUPED_MCB0_JSON)
    specs = [s for s in peers.table_specs(128, 0)
             if (s["kind"] == "dense" and s["set"] == "deepgemm-fwd")
             or s["kind"] in ("contiguous", "masked", "contiguous-psum")]
    # the 28 dense rows: DeepGEMM's forward M 1, 128, 4096 and M 64 (the measured table's)
    specs = ([s for s in specs if s["kind"] == "dense"]
             + [peers.dense_spec(64, n, k, "m64") for n, k in peers.DG_NK]
             + [s for s in specs if s["kind"] != "dense"])
    specs.sort(key=lambda s: ({"dense": 0, "contiguous": 1, "masked": 2}.get(s["kind"], 3),
                              s["kind"] == "dense" and s["m"]))
    lines: List[str] = []
    rows_json = []
    hdr = (f"{'kind':<15} {'shape':<18} | {'DG ran':<9} {'st':>2} {'smem':>6} {'sw':>2} "
           f"{'waves':>7} {'model':<9} | {'qg':<9} {'st':>2} {'smem':>6} {'sw':>2} {'waves':>7} | "
           f"{'meas':>5} {'mcb0':>5} | alternatives (QGEMM_FP8_HEUR=..., mcb0 = QGEMM_FP8_GROUPED_MCB=0)")
    lines.append(hdr)
    sets: Dict[str, List[float]] = {}
    by_k: Dict[int, List[Tuple[float, str]]] = {}
    for s in specs:
        kind, shape = s["kind"], s["shape"]
        prob = problem(s)
        dg = ran.get((kind, shape))
        model = dgh.dg_choice(prob) if prob["kind"] in ("dense", "contig", "masked") else None
        if dg is None and model is not None:  # not recorded: the model's
            dg = dict(model, ran=False)
        qg = pl.choice(prob)
        alts = {}
        for h in ALTS + ["mcb0"]:
            if h == "mcb0":
                os.environ["QGEMM_FP8_GROUPED_MCB"] = "0"
            else:
                os.environ["QGEMM_FP8_HEUR"] = h
            c = pl.choice(prob)
            os.environ.pop("QGEMM_FP8_HEUR", None)
            os.environ.pop("QGEMM_FP8_GROUPED_MCB", None)
            if (c["block_m"], c["block_n"], c["multicast"], c["swizzle_group"], c["split_k"]) != (
                    qg["block_m"], qg["block_n"], qg["multicast"], qg["swizzle_group"], qg["split_k"]):
                alts[h] = c
        dgs = "-"
        if dg:
            st, smem = dgh.dg_smem(dg["block_m"], dg["block_n"], s["k"])
            dg_tiles = real_tiles(s, dg["block_m"], dg["block_n"], False)
            mod = "-" if model is None else "=" if (model["block_m"], model["block_n"], model["multicast"]) == (
                dg["block_m"], dg["block_n"], dg["multicast"]) else fmt_cfg(model)
            if dg.get("ran") is False:
                mod = "(model)"
            elif "printed" not in dg:
                mod += " (k)"  # from its kernel's name, not its printed line
            dgs = (f"{fmt_cfg(dg):<9} {dg['num_stages']:>2} {smem:>6} "
                   f"{dg_swizzle(dg['block_m'], dg['block_n'], dg['multicast']):>2} "
                   f"{waves(dg_tiles):>7} {mod:<9}")
        pairs = qg["multicast"] == "B" and kind != "dense"
        qg_tiles = real_tiles(s, qg["block_m"], qg["block_n"], pairs)
        m = DENSE_MEASURED.get(shape) if kind == "dense" else meas.get((kind, shape))
        m0 = None if kind == "dense" else meas0.get((kind, shape))
        alt_s = "; ".join(f"{h}: {fmt_cfg(c)}" + (f" sw{c['swizzle_group']}"
                                                   if c["swizzle_group"] != qg["swizzle_group"] else "")
                          for h, c in alts.items())
        lines.append(f"{kind:<15} {shape:<18} | {dgs} | {fmt_cfg(qg):<9} {qg['num_stages']:>2} "
                     f"{qg['smem']:>6} {qg['swizzle_group']:>2} {waves(qg_tiles):>7} | "
                     f"{'-' if m is None else format(m, '.3f'):>5} {'-' if m0 is None else format(m0, '.3f'):>5} | {alt_s}")
        group = "dense" if kind == "dense" else "grouped" if kind in ("contiguous", "masked") else kind
        if m:
            sets.setdefault(group, []).append(m)
            same = dg and (dg["block_m"], dg["block_n"], dg["multicast"]) == (
                qg["block_m"], qg["block_n"], qg["multicast"]) and dg["num_stages"] == qg["num_stages"]
            if same and (kind != "dense" or s["m"] >= 4096):
                by_k.setdefault((kind == "dense", s["n"], s["k"]), []).append((m, f"{kind} {shape}"))
        rows_json.append({"kind": kind, "shape": shape, "deepgemm": dg, "deepgemm_model": model,
                          "qgemm": qg, "qgemm_tiles": qg_tiles, "measured": m, "measured_mcb0": m0,
                          "alternatives": alts})
    lines.append("")
    for g, xs in sets.items():
        lines.append(f"geomean meas {g}: {math.exp(sum(map(math.log, xs)) / len(xs)):.4f} over "
                     f"{len(xs)} rows (worst {min(xs):.3f})")
    lines.append("")
    lines.append("rows where qgemm runs DeepGEMM's tile, multicast and stages (dense: M 4096), "
                 "DeepGEMM / qgemm kineto by N x K:")
    for k in sorted(by_k):
        xs = [x for x, _ in by_k[k]]
        w = min(by_k[k])
        lines.append(f"  {'dense' if k[0] else 'grouped':<7} {k[1]:>5} x {k[2]:<5}: geomean "
                     f"{math.exp(sum(map(math.log, xs)) / len(xs)):.4f} over "
                     f"{len(xs):>2} rows, range {w[0]:.3f} ({w[1]}) .. {max(xs):.3f}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "table.txt"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, "table.json"), "w") as f:
            json.dump(rows_json, f, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
