#!/usr/bin/env python3
"""bench/peers_fp8out.py -- the FP8-output GEMM (issue 51 item 1) against its
unfused path, one process, rows of kind ``fp8out``.

For M in {64, 128, 256, 4096} and DeepGEMM's 7 dense (N, K) (bench/peers.py
DG_NK), on the same quantized inputs (per-token 1x128 A, per-block 128x128 B,
as bench/peers.py casts them), kineto times (CUPTI GPU time of every kernel one
call launches, an 8 GB flush before each call, mean of --calls; DeepGEMM's
method, bench/peers.py time_kineto) of:

  qgemm_us    qgemm.fp8_gemm_nt_fp8out: e4m3 D + 1x128 scales from the epilogue
  bf16out_us  qgemm.fp8_gemm_nt: bf16 D (the same GEMM, bf16 output)
  unfused_us  qgemm.fp8_gemm_nt + qgemm.per_token_cast_to_fp8 of its D (the
              library's cast kernel; its row-major scales, no layout change:
              the unfused path is not charged for the M-major copy the next
              GEMM would need)

and the agreement of the fused bytes with the unfused ones: ``mismatch`` (the
fraction of D's bytes that differ), ``max_steps`` (the largest distance in
e4m3 codes), ``sf_rel_max`` (the largest relative difference of the scales).
They differ only where the bf16 rounding of the intermediate moves a value
across an e4m3 rounding boundary (or its row's amax).

One command on the H200 (the package built in place, as bench/peers.py):

    PYTHONPATH=python python3 bench/peers_fp8out.py --out fp8out.jsonl

runs the 28 rows (M in {64, 128, 256, 4096} x DeepGEMM's 7 (N, K)) and prints
one JSON row a shape, with the configuration each path runs (``fused_cfg``:
qgemm.select_config_fp8out, whose 64- and 32-column tiles split a scale group
over a cluster of 2 or 4 CTAs, ``cluster``; ``bf16out_cfg``:
qgemm.select_config), then the geometric means against the issue's targets
(fused / bf16-out <= 1.03 over the rows run, and per M; unfused / fused >=
1.2 at M <= 256 and >= 1.05 at M >= 4096). --rows picks rows: shapes MxNxK
and / or bare M values, comma-separated (``--rows 64,128x7168x2048``);
--quick is four of them; --ue8m0 for UE8M0 scales; --fused-config forces the
fused path's configuration (BMxBN, BMxBN:sk2 for split-K, BMxBN:swzN for a
swizzle group) to A/B a tile against the heuristic's pick on the same rows,
e.g. the whole-group tile the split replaced:

    PYTHONPATH=python python3 bench/peers_fp8out.py --rows 64x2112x7168 --fused-config 64x128:sk2

--variants A,B,...: the fused path under each QGEMM_FP8OUT_VARIANT value (src/env.c: old,
room, early, sfbpf, new, epi, last, nk and '+'-lists), side by side in one process: per row a
``variants`` dict (configuration, kineto time, fused / bf16-out, accuracy against the
unfused path, ``same_as_first``: bytes and scales bitwise equal to the first variant's,
required where the tile is the same), then one ``fp8out-variant`` line per variant
(geomean fused / bf16-out, worst row, accuracy PASS / FAIL); the first variant is also
the row's plain columns:

    PYTHONPATH=python python3 bench/peers_fp8out.py --rows 64,128 --calls 20 --variants old,room+early,new

--kind swiglu: the fused SwiGLU up-projection (issue 51 item 2), rows of kind
``swiglu`` with ``shape`` G x M x N x K (N = 2I, the gate | up rows), on the
DeepSeek MoE shapes (masked G 8/16/32 x M 64/128/256 with every row valid,
contiguous 8 experts x 512 = 4096 rows; N 4096 and 3072, K 7168):

  qgemm_us    qgemm.m_grouped_fp8_gemm_nt_{masked,contiguous}_swiglu on the
              interleaved weights: e4m3 silu(gate) * up + 1x128 scales
  bf16out_us  the same grouped GEMM with bf16 out alone ([.., N])
  unfused_us  that GEMM + qgemm.silu_and_mul_fp8_quant (the library's
              standalone silu_mul cast kernel, sf_mn_major=True: the layout
              the down-projection reads)

``mismatch`` / ``max_steps`` compare the fused bytes with the unfused ones.
Targets: unfused / fused >= 1.2 at M <= 256, >= 1.05 at 4096 rows:

    PYTHONPATH=python python3 bench/peers_fp8out.py --kind swiglu --out swiglu.jsonl

--kind swiglu --variants A,B,...: the fused path under each QGEMM_FP8OUT_VARIANT value (its
SwiGLU words swm64, swmca, swmcac move the heuristic's tile, never the math: every variant's
bytes and scales must equal the first's), per row a ``variants`` dict and one
``swiglu-variant`` line a variant (unfused / fused geomeans at M <= 256 and 4096 rows,
fused / bf16-out, per-row us, bitwise agreement, accuracy PASS / FAIL):

    PYTHONPATH=python python3 bench/peers_fp8out.py --kind swiglu --variants default,swm64+swmca+swmcac
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the shapes, casts, flush and kineto timing)

MS = [64, 128, 256, 4096]


def e4m3_steps(x, y):
    """Per-element distance in e4m3 codes of two float8_e4m3fn tensors (opposite signs:
    the sum of both magnitudes' codes)."""
    import torch
    a = x.view(torch.uint8).to(torch.int32)
    b = y.view(torch.uint8).to(torch.int32)
    ma, mb = a & 0x7F, b & 0x7F
    same = (a & 0x80) == (b & 0x80)
    return torch.where(same, (ma - mb).abs(), ma + mb)


def geomean(xs: List[float]) -> Optional[float]:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def parse_rows(spec: str) -> List[Tuple[int, int, int]]:
    """--rows: comma-separated MxNxK shapes (any N, K) and bare M values (that M
    with DeepGEMM's 7 (N, K)), in the order given."""
    out: List[Tuple[int, int, int]] = []
    for tok in (t.strip() for t in spec.split(",")):
        if not tok:
            continue
        parts = tok.lower().split("x")
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise SystemExit(f"peers_fp8out: --rows: {tok!r} is neither M nor MxNxK")
        if len(nums) == 1:
            out += [(nums[0], n, k) for (n, k) in peers.DG_NK]
        elif len(nums) == 3:
            out.append((nums[0], nums[1], nums[2]))
        else:
            raise SystemExit(f"peers_fp8out: --rows: {tok!r} is neither M nor MxNxK")
    return out


def parse_config(spec: Optional[str]) -> Optional[Dict[str, int]]:
    """--fused-config BMxBN, BMxBN:sk2 (split-K 2) or BMxBN:swz8 (swizzle group 8)."""
    if not spec:
        return None
    tile, _, extra = spec.partition(":")
    bm, bn = (int(v) for v in tile.lower().split("x"))
    cfg = {"block_m": bm, "block_n": bn}
    if extra.startswith("sk"):
        cfg["split_k"] = int(extra[2:])
    elif extra.startswith("swz"):
        cfg["swizzle_group"] = int(extra[3:])
    elif extra:
        raise SystemExit(f"peers_fp8out: --fused-config: {spec!r}: BMxBN[:skN|:swzN]")
    return cfg


def cfg_summary(cfg: Dict[str, Any], fp8out: bool) -> Dict[str, Any]:
    """The configuration's tile, cluster (the CTAs of one: split-K, multicast,
    or the split scale group of an FP8-output tile of 64 / 32 columns) and the
    rest of what the choice says."""
    bn = cfg["block_n"]
    cluster = cfg.get("cluster") or (2 if cfg["split_k"] == 2 or cfg["multicast"] else
                                     128 // bn if fp8out and bn < 128 else 1)
    return {"tile": f'{cfg["block_m"]}x{bn}', "cluster": cluster, "multicast": cfg["multicast"],
            "split_k": cfg["split_k"], "swizzle": cfg["swizzle_group"],
            "stages": cfg["num_stages"]}


VARIANT_ENV = "QGEMM_FP8OUT_VARIANT"


def set_variant(v: Optional[str]) -> None:
    """The library reads QGEMM_FP8OUT_VARIANT at every call (its launch cache keys on it)."""
    if v is None or v == "default":
        os.environ.pop(VARIANT_ENV, None)
    else:
        os.environ[VARIANT_ENV] = v


def run_variants(row: Dict[str, Any], variants: List[str], fused: Any, q: Any, sf: Any,
                 q_ref: Any, sf_ref: Any, flusher: Any, calls: int, cfg_of: Any) -> None:
    """--variants: the fused path under each QGEMM_FP8OUT_VARIANT value: its configuration,
    its bytes and scales against the first variant's (``same_as_first``: bitwise equal; the
    same math on the same tile must give the same bits) and against the unfused path's, and
    its kineto time over bf16-out. The first variant's are the row's plain fields too."""
    import torch
    first = None
    for v in variants:
        set_variant(v)
        try:
            cfg = cfg_of()
            q.view(torch.uint8).fill_(0xFF)  # (e4m3 NaN: a byte left unwritten shows)
            sf.fill_(-1.0)
            fused()
            torch.cuda.synchronize()
            got = (q.view(torch.uint8).clone(), sf.clone())
            r: Dict[str, Any] = {"cfg": cfg, **agreement(q, sf, q_ref, sf_ref)}
            if first is None:
                first = (got, cfg)
            else:
                same = bool(torch.equal(got[0], first[0][0]) and
                            torch.equal(got[1].view(torch.int32), first[0][1].view(torch.int32)))
                r["same_as_first"] = same
                # (the same tile and split-K: nk's split-K on a split tile sums K in two
                # halves, so its bytes may differ by FP32 rounding; it counts as a change)
                r["same_tile"] = (cfg.get("tile") == first[1].get("tile") and
                                  cfg.get("split_k") == first[1].get("split_k"))
            if first[1] is cfg and "qgemm_us" in row:  # (the row's own timing ran under it)
                us = row["qgemm_us"]
            else:
                us, _, _ = peers.time_kineto(fused, flusher, calls)
            r["qgemm_us"] = round(us, 2)
            r["fused_over_bf16out"] = round(us / row["bf16out_us"], 4)
            r["unfused_over_fused"] = round(row["unfused_us"] / us, 4)
        except Exception as e:  # a failing variant is recorded, the others still run
            r = {"error": peers.short_err(e)}
        row.setdefault("variants", {})[v] = r
    set_variant(variants[0])


def run_diag(row: Dict[str, Any], a: Any, sfa: Any, b: Any, sfb: Any, d16: Any, flusher: Any,
             calls: int) -> None:
    """--diag: where the fused path's time over bf16-out goes. The bf16-out GEMM forced to the
    fused path's tile (block_m x block_n, no cluster, no split-K), ``bf16_fused_tile_us``:
    ``tile_cost`` = that / bf16out_us (what the tile the 1x128 groups force costs a bf16
    GEMM), ``epi_cost`` = qgemm_us / that (the e4m3 epilogue, and on split tiles the
    cluster and the amax exchange, on the same tile); fused / bf16-out = their product."""
    import qgemm
    tile = row["fused_cfg"].get("tile")
    if not tile:
        return
    bm, bn = (int(v) for v in tile.split("x"))

    def bf16_tile() -> None:
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d16, config={"block_m": bm, "block_n": bn})
    try:
        us, _, _ = peers.time_kineto(bf16_tile, flusher, calls)
        row["diag"] = {"bf16_fused_tile_us": round(us, 2),
                       "tile_cost": round(us / row["bf16out_us"], 4),
                       "epi_cost": round(row["qgemm_us"] / us, 4)}
    except Exception as e:  # (a tile the bf16 path refuses: recorded, the row goes on)
        row["diag"] = {"error": peers.short_err(e)}


def run_shape(m: int, n: int, k: int, flusher: Any, calls: int, ue8m0: bool,
              fused_config: Optional[Dict[str, int]] = None,
              variants: Optional[List[str]] = None, diag: bool = False) -> Dict[str, Any]:
    import torch
    import qgemm
    g = torch.Generator(device="cuda").manual_seed(m * 1000003 + n * 101 + k)
    x = torch.randn(m, k, device="cuda", generator=g, dtype=torch.float32)
    w = torch.randn(n, k, device="cuda", generator=g, dtype=torch.float32)
    a, sfa = peers._cast_rows(x)
    sfa = peers._mn_major(sfa)
    b, sfb = peers._cast_blocks(w)
    d16 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    d8, sfd = qgemm.empty_fp8out(m, n, device="cuda")

    def fused() -> None:
        qgemm.fp8_gemm_nt_fp8out((a, sfa), (b, sfb), d8, sfd, use_ue8m0=ue8m0,
                                 config=fused_config)

    def bf16out() -> None:
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d16)

    def unfused() -> Any:
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d16)
        return qgemm.per_token_cast_to_fp8(d16, use_ue8m0=ue8m0)

    row: Dict[str, Any] = {"kind": "fp8out", "shape": f"{m}x{n}x{k}", "ue8m0": ue8m0}
    # the configurations the two paths run (the heuristic's on this device, or the forced one)
    if fused_config:
        row["fused_cfg"] = dict(fused_config, forced=True)
    else:
        row["fused_cfg"] = cfg_summary(qgemm.select_config_fp8out(m, n, k, use_ue8m0=ue8m0), True)
    row["bf16out_cfg"] = cfg_summary(qgemm.select_config(m, n, k), False)
    row = check_and_time(row, fused, bf16out, unfused, d8, sfd, flusher, calls)
    if diag:
        run_diag(row, a, sfa, b, sfb, d16, flusher, calls)
    if variants:
        _, q_ref, sf_ref = row.pop("_ref")

        def cfg_of() -> Dict[str, Any]:
            if fused_config:
                return dict(fused_config, forced=True)
            return cfg_summary(qgemm.select_config_fp8out(m, n, k, use_ue8m0=ue8m0), True)
        run_variants(row, variants, fused, d8, sfd, q_ref, sf_ref, flusher, calls, cfg_of)
    row.pop("_ref", None)
    return row


def agreement(q: Any, sf: Any, q_ref: Any, sf_ref: Any) -> Dict[str, Any]:
    """The fused bytes q and scales sf against the unfused path's: ``mismatch`` (the fraction
    of bytes that differ), ``max_steps`` (the largest distance in e4m3 codes), ``sf_rel_max``
    (the largest relative difference of the scales)."""
    steps = e4m3_steps(q, q_ref)
    return {"mismatch": float((steps != 0).float().mean()), "max_steps": int(steps.max()),
            "sf_rel_max": float(((sf - sf_ref).abs() / sf_ref).max())}


def check_and_time(row: Dict[str, Any], fused: Any, bf16out: Any, unfused: Any, q: Any, sf: Any,
                   flusher: Any, calls: int) -> Dict[str, Any]:
    """One row's accuracy (the fused path's bytes q and scales sf, written by fused(), against
    the unfused path's, which unfused() returns) and its three kineto timings."""
    import torch
    fused()
    q_ref, sf_ref = unfused()
    torch.cuda.synchronize()
    row.update(agreement(q, sf, q_ref, sf_ref))
    for name, fn in (("qgemm_us", fused), ("bf16out_us", bf16out), ("unfused_us", unfused)):
        us, kernels, names = peers.time_kineto(fn, flusher, calls)
        row[name] = round(us, 2)
        row[name.replace("_us", "_kernels")] = kernels
    row["fused_over_bf16out"] = round(row["qgemm_us"] / row["bf16out_us"], 4)
    row["unfused_over_fused"] = round(row["unfused_us"] / row["qgemm_us"], 4)
    row["_ref"] = (None, q_ref, sf_ref)  # (for --variants; run_shape drops it)
    return row


SWIGLU_NK = [(4096, 7168), (3072, 7168)]
SWIGLU_MASKED = [(8, 64), (16, 128), (32, 256)]


def run_swiglu(layout: str, g: int, m: int, n: int, k: int, flusher: Any, calls: int,
               ue8m0: bool, variants: Optional[List[str]] = None) -> Dict[str, Any]:
    """One swiglu row: masked G x M (every row valid) or contiguous G experts x M rows."""
    import torch
    import qgemm
    gen = torch.Generator(device="cuda").manual_seed(g * 7919 + m * 1000003 + n * 101 + k)
    rows = g * m
    x = torch.randn(rows, k, device="cuda", generator=gen, dtype=torch.float32)
    w = torch.randn(g, n, k, device="cuda", generator=gen, dtype=torch.float32) * 0.05
    a, sfa = peers._cast_rows(x)
    b, sfb = peers._cast_blocks(w)
    bi, sfbi = qgemm.interleave_gate_up(b, sfb)
    i = n // 2
    if layout == "masked":
        a, sfa = a.view(g, m, k), peers._mn_major(sfa.view(g, m, -1))
        idx = torch.full((g,), m, dtype=torch.int32, device="cuda")
        h = torch.empty(g, m, n, device="cuda", dtype=torch.bfloat16)
        y, sy = qgemm.empty_swiglu(m, i, num_groups=g, device="cuda")

        def fused() -> None:
            qgemm.m_grouped_fp8_gemm_nt_masked_swiglu((a, sfa), (bi, sfbi), y, sy, idx, m,
                                                      use_ue8m0=ue8m0)

        def bf16out() -> None:
            qgemm.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), h, idx, m)

        def unfused() -> Any:
            bf16out()
            return qgemm.silu_and_mul_fp8_quant(h, use_ue8m0=ue8m0, masked_m=idx,
                                                sf_mn_major=True)
    else:
        sfa = peers._mn_major(sfa)
        idx = torch.arange(g, dtype=torch.int32, device="cuda").repeat_interleave(m)
        h = torch.empty(rows, n, device="cuda", dtype=torch.bfloat16)
        y, sy = qgemm.empty_swiglu(rows, i, device="cuda")

        def fused() -> None:
            qgemm.m_grouped_fp8_gemm_nt_contiguous_swiglu((a, sfa), (bi, sfbi), y, sy, idx,
                                                          use_ue8m0=ue8m0)

        def bf16out() -> None:
            qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), h, idx)

        def unfused() -> Any:
            bf16out()
            return qgemm.silu_and_mul_fp8_quant(h, use_ue8m0=ue8m0, m_indices=idx,
                                                sf_mn_major=True)
    row: Dict[str, Any] = {"kind": "swiglu", "layout": layout, "shape": f"{g}x{m}x{n}x{k}",
                           "ue8m0": ue8m0}
    row = check_and_time(row, fused, bf16out, unfused, y, sy, flusher, calls)
    if variants:
        # (the SwiGLU words change the tile only, never the math: every variant's bytes and
        # scales must equal the first's, so all count as one tile for same_as_first; the tile
        # each word picks is the C suite's swiglu_variant_words)
        _, q_ref, sf_ref = row.pop("_ref")
        run_variants(row, variants, fused, y, sy, q_ref, sf_ref, flusher, calls, lambda: {})
    row.pop("_ref", None)
    return row


def swiglu_variant_summaries(ok: List[Dict[str, Any]], variants: List[str], out: Any) -> int:
    """--kind swiglu --variants: one ``swiglu-variant`` line a variant: geomean unfused / fused
    at M <= 256 (masked) and at 4096 rows (contiguous), geomean fused / bf16-out, the rows
    whose bytes or scales differ from the first variant's (must be none), accuracy against the
    unfused path. Returns the failures."""
    bad = 0
    for v in variants:
        rs = [(r, r["variants"][v]) for r in ok if v in r.get("variants", {})]
        good = [(r, x) for r, x in rs if "error" not in x]
        differ = [r["shape"] for r, x in good if not x.get("same_as_first", True)]
        acc_ok = all(x["max_steps"] <= 1 and x["mismatch"] < 0.05 for _, x in good)
        line = {"kind": "swiglu-variant", "variant": v, "rows": len(rs),
                "errors": len(rs) - len(good),
                "unfused_over_fused_geomean_m_le_256": geomean(
                    [x["unfused_over_fused"] for r, x in good if r["layout"] == "masked"]),
                "unfused_over_fused_geomean_m_ge_4096": geomean(
                    [x["unfused_over_fused"] for r, x in good if r["layout"] == "contiguous"]),
                "fused_over_bf16out_geomean": geomean([x["fused_over_bf16out"] for _, x in good]),
                "per_row_us": {r["layout"][0] + ":" + r["shape"]: x["qgemm_us"] for r, x in good},
                "bitwise_differs_from_first": differ,
                "accuracy": "PASS" if acc_ok and not differ and len(good) == len(rs) else "FAIL"}
        bad += line["accuracy"] != "PASS"
        text = json.dumps(line)
        print(text)
        if out:
            out.write(text + "\n")
    return bad


def main_swiglu(args: Any, flusher: Any) -> int:
    cases = [("masked", g, m, n, k) for (n, k) in SWIGLU_NK for (g, m) in SWIGLU_MASKED]
    cases += [("contiguous", 8, 512, n, k) for (n, k) in SWIGLU_NK]
    if args.quick:
        cases = [("masked", 8, 64, 4096, 7168), ("contiguous", 8, 512, 4096, 7168)]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()] if args.variants else None
    if variants:
        set_variant(variants[0])
    rows = []
    out = open(args.out, "a") if args.out else None
    for layout, g, m, n, k in cases:
        try:
            r = run_swiglu(layout, g, m, n, k, flusher, args.calls, args.ue8m0, variants)
        except Exception as e:  # a failing shape is a row with its error
            r = {"kind": "swiglu", "layout": layout, "shape": f"{g}x{m}x{n}x{k}",
                 "error": peers.short_err(e)}
        rows.append(r)
        line = json.dumps(r)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
    ok = [r for r in rows if "error" not in r]
    small = [r for r in ok if r["layout"] == "masked"]
    large = [r for r in ok if r["layout"] == "contiguous"]
    summary = {
        "kind": "swiglu-summary", "rows": len(rows), "errors": len(rows) - len(ok),
        "unfused_over_fused_geomean_m_le_256": geomean([r["unfused_over_fused"] for r in small]),
        "unfused_over_fused_geomean_m_ge_4096": geomean([r["unfused_over_fused"] for r in large]),
        "fused_over_bf16out_geomean": geomean([r["fused_over_bf16out"] for r in ok]),
        "mismatch_max": max((r["mismatch"] for r in ok), default=None),
        "max_steps": max((r["max_steps"] for r in ok), default=None),
        "targets": "unfused/fused >= 1.2 (M <= 256), >= 1.05 (4096 rows)",
    }
    line = json.dumps(summary)
    print(line)
    if out:
        out.write(line + "\n")
    bad = swiglu_variant_summaries(ok, variants or [], out)
    if out:
        out.close()
    return 0 if not summary["errors"] and not bad else 1


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=30, help="calls a kineto mean (default 30)")
    ap.add_argument("--flush-gb", type=float, default=8.0, help="flush before each call (GB)")
    ap.add_argument("--ue8m0", action="store_true", help="UE8M0 scales (both paths)")
    ap.add_argument("--quick", action="store_true", help="4 shapes only")
    ap.add_argument("--rows", help="rows to run: MxNxK shapes and / or bare M values, "
                    "comma-separated (default: all 28)")
    ap.add_argument("--fused-config", help="force the fused path's config: BMxBN, BMxBN:sk2 "
                    "(split-K) or BMxBN:swzN (swizzle group)")
    ap.add_argument("--out", help="also append the JSON rows to this file")
    ap.add_argument("--variants", help="comma-separated QGEMM_FP8OUT_VARIANT values to time "
                    "the fused path under, side by side (e.g. old,room+early,new; 'default': "
                    "unset); the first is the row's plain columns; one summary line each")
    ap.add_argument("--diag", action="store_true", help="also time the bf16-out GEMM on the "
                    "fused path's tile: per row tile_cost and epi_cost (their product is "
                    "fused / bf16-out), geomeans in the summary")
    ap.add_argument("--kind", choices=("fp8out", "swiglu"), default="fp8out",
                    help="fp8out (default) or swiglu rows")
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("peers_fp8out: no usable GPU", file=sys.stderr)
        return 3
    flusher = peers.Flusher(int(args.flush_gb * (1 << 30)))
    if args.kind == "swiglu":
        return main_swiglu(args, flusher)
    shapes = [(m, n, k) for (n, k) in peers.DG_NK for m in MS]
    if args.quick:
        shapes = [(64, 2112, 7168), (128, 7168, 2048), (256, 24576, 1536), (4096, 4096, 7168)]
    if args.rows:
        shapes = parse_rows(args.rows)
    fused_config = parse_config(args.fused_config)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()] if args.variants else None
    if variants:
        set_variant(variants[0])
    rows = []
    out = open(args.out, "a") if args.out else None
    for m, n, k in shapes:
        try:
            r = run_shape(m, n, k, flusher, args.calls, args.ue8m0, fused_config, variants,
                          args.diag)
        except Exception as e:  # a failing shape is a row with its error
            r = {"kind": "fp8out", "shape": f"{m}x{n}x{k}", "error": peers.short_err(e)}
        rows.append(r)
        line = json.dumps(r)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
    ok = [r for r in rows if "error" not in r]
    small = [r for r in ok if int(r["shape"].split("x")[0]) <= 256]
    large = [r for r in ok if int(r["shape"].split("x")[0]) >= 4096]
    summary = {
        "kind": "fp8out-summary", "rows": len(rows), "errors": len(rows) - len(ok),
        "fused_over_bf16out_geomean": geomean([r["fused_over_bf16out"] for r in ok]),
        "fused_over_bf16out_geomean_by_m": {
            str(mm): geomean([r["fused_over_bf16out"] for r in ok
                              if int(r["shape"].split("x")[0]) == mm])
            for mm in sorted({int(r["shape"].split("x")[0]) for r in ok})},
        "unfused_over_fused_geomean_m_le_256": geomean([r["unfused_over_fused"] for r in small]),
        "unfused_over_fused_geomean_m_ge_4096": geomean([r["unfused_over_fused"] for r in large]),
        "mismatch_max": max((r["mismatch"] for r in ok), default=None),
        "max_steps": max((r["max_steps"] for r in ok), default=None),
        "targets": "fused/bf16out <= 1.03; unfused/fused >= 1.2 (M <= 256), >= 1.05 (M >= 4096)",
        "fused_config": args.fused_config,
    }
    diags = [r["diag"] for r in ok if "tile_cost" in r.get("diag", {})]
    if diags:
        summary["diag_tile_cost_geomean"] = geomean([d["tile_cost"] for d in diags])
        summary["diag_epi_cost_geomean"] = geomean([d["epi_cost"] for d in diags])
    line = json.dumps(summary)
    print(line)
    if out:
        out.write(line + "\n")
    bad = variant_summaries(ok, variants or [], out)
    if out:
        out.close()
    return 0 if not summary["errors"] and not bad else 1


def variant_summaries(ok: List[Dict[str, Any]], variants: List[str], out: Any) -> int:
    """One line a variant: geomean fused / bf16-out over the rows, the worst row, the rows
    whose bytes or scales differ from the first variant's on the same tile (must be none:
    the variants change no math), accuracy against the unfused path. Returns the failures."""
    bad = 0
    for v in variants:
        rs = [(r["shape"], r["variants"][v]) for r in ok if v in r.get("variants", {})]
        good = [(s, x) for s, x in rs if "error" not in x]
        worst = max(good, key=lambda sx: sx[1]["fused_over_bf16out"], default=None)
        differ = [s for s, x in good if x.get("same_tile") and not x.get("same_as_first", True)]
        acc_ok = all(x["max_steps"] <= 1 and x["mismatch"] < 0.05 for _, x in good)
        line = {"kind": "fp8out-variant", "variant": v, "rows": len(rs),
                "errors": len(rs) - len(good),
                "fused_over_bf16out_geomean": geomean([x["fused_over_bf16out"] for _, x in good]),
                "worst": {"shape": worst[0], "fused_over_bf16out": worst[1]["fused_over_bf16out"],
                          "cfg": worst[1]["cfg"]} if worst else None,
                "tiles_changed": [s for s, x in good if x.get("same_tile") is False],
                "bitwise_differs_on_same_tile": differ,
                "accuracy": "PASS" if acc_ok and not differ and len(good) == len(rs) else "FAIL"}
        bad += line["accuracy"] != "PASS"
        text = json.dumps(line)
        print(text)
        if out:
            out.write(text + "\n")
    return bad


if __name__ == "__main__":
    sys.exit(main())
