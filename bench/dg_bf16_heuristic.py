#!/usr/bin/env python3
"""bench/dg_bf16_heuristic.py -- DeepGEMM's SM90 BF16 tile choice beside qgemm's, offline (no GPU).

The BF16 counterpart of bench/dg_heuristic.py. DeepGEMM (csrc/jit_kernels/heuristics/sm90.hpp,
impls/sm90_bf16_gemm.hpp) picks every BF16 GEMM's tile by one data-movement model; this file
restates it in Python (our own code, written from reading it):

  candidates  block_m: dense and k-grouped {64, 128} (+16 at M <= 16, +32 at M <= 32, +256 with a
              BF16 D); contiguous {128} (its M alignment); masked {64, 128}. block_n 16..256 in
              steps of 16; never both > 128. block_k 64. Clusters (m, n) in the order (1, 1),
              (1, 2) = A shared along N (qgemm's multicast A), (2, 1) = B shared along M
              (multicast B); none for k-grouped with more than 4 groups. Masked: the n-block count
              a multiple of the cluster size. MN-major operands: the swizzle of the tile's MN
              extent (bytes) must be 64 or 128 bytes (so MN-major B: block_n a multiple of 32).
  stages      (232448 - D tile (bm bn x 2 or 4, 1024-aligned) - 256 barrier bytes - 512 k-grouped
              tensor maps) / ((bm + bn) x 128), at most 16; >= 3, and >= 4 below 128 x 192.
  cost        blocks = ceil(M'/bm) ceil(N/bn) G' (masked: M' = expected_m, G' = groups;
              k-grouped: G' = groups, K' = the largest K; else G' = 1). Per block, bytes through
              L2: 2K (bm / cluster_n + bn / cluster_m) + D (x2 with C); through L1: 2K (bm + bn)
              + 2K (max(64, bm) + bn) + D + D (x2 with C). Cycles max(L1 / (128 SMs), L2 / 6153)
              / (blocks / (waves x SMs)); a cluster over one wave or less never. Least wins; ties
              keep the first in the enumeration.
  launch      every SM (num_sms = 132), 128 + 128 or 256 threads; scheduler groups of 8 or 16
              1-D blocks (get_num_1d_blocks_per_group: the smaller L2 footprint).

qgemm's choice: src/bf16_plan.c compiled here into a small shared object (it is pure C) and
called through ctypes, for the planner as it is (new) and with legacy=1 (the plan before this
branch: what QGEMM_BF16_PLAN=v1 selects at run time).

Usage:  python3 bench/dg_bf16_heuristic.py [--sms 132] [--out FILE]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import struct
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional

SMEM = 232448
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")

# DeepGEMM time / qgemm time, kineto, H200, 2026-11-28 (bench/results/2026-11-28-h200-18-deepgemm-suites)
MEASURED = {
    "bf16 NT 1x2112x7168 bf16": "0.99/1.00", "bf16 NT 1x576x7168 bf16": "0.79/0.79",
    "bf16 NT 1x24576x1536 bf16": "1.01",
    "contig NT 4x8192x6144x7168": "0.99", "contig NN 4x8192x6144x7168": "0.98",
    "contig NT 4x8192x7168x3072": "0.98", "contig NN 4x8192x7168x3072": "0.99",
    "contig NT 4x8192x4096x4096": "0.99",
    "masked 32x192x6144x7168": "0.91", "masked 32x192x7168x3072": "0.90",
    "masked 32x192x4096x4096": "0.89", "masked 32x192x4096x2048": "0.89",
    "masked 6x1024x6144x7168": "0.97",
    "kgrp 4x4096x7168x8192": "0.92", "kgrp 4x7168x2048x8192": "0.99", "kgrp 8x4096x7168x4096": "0.95",
    "kgrp 8x7168x2048x4096": "1.00", "kgrp 16x4096x7168x2048": "0.94",
}

LAYOUTS = {"NT": 0, "NN": 1, "TN": 2, "TT": 3}
KIND = {"dense": 0, "contig": 1, "masked": 2, "kgrp": 4}


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def align(a: int, b: int) -> int:
    return cdiv(a, b) * b


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


# ---- the test shapes (DeepGEMM's tests/generators.py, SM90, BF16) ------------------------

def shapes() -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    bf16_nk = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168),
               (7168, 2048)]
    f32_nk = [(256, 7168), (129280, 7168)]

    def dense(m: int, n: int, k: int, lay: str, acc: bool, d32: bool) -> None:
        out.append({"kind": "dense", "m": m, "n": n, "k": k, "g": 1, "layout": lay, "acc": acc, "d32": d32,
                    "name": f"bf16 {lay} {m}x{n}x{k} {'fp32' if d32 else 'bf16'}{' +C' if acc else ''}"})
    for m in (1, 128, 4096):
        for i, (n, k) in enumerate(bf16_nk + f32_nk):
            d32 = i >= len(bf16_nk)
            dense(m, n, k, "NT", False, d32)
            if not d32:
                dense(m, n, k, "NT", True, False)
    for n, k in bf16_nk + f32_nk:
        dense(4096, k, n, "NN", False, False)    # dgrad
        dense(n, 4096, k, "TT", True, True)      # wgrad, FP32 + C
        dense(n, 4096, k, "TT", False, False)    # wgrad, bf16
    for g, mm in ((4, 8192), (8, 4096)):
        for n, k in ((6144, 7168), (7168, 3072), (4096, 4096), (4096, 2048)):
            for lay in ("NT", "NN"):
                # the rows' total as the generator draws it: ~G x mean, each group 128-aligned
                out.append({"kind": "contig", "m": g * mm, "n": n, "k": k, "g": g, "layout": lay,
                            "name": f"contig {lay} {g}x{mm}x{n}x{k}"})
    for g, mm in ((32, 192), (6, 1024), (32, 20), (6, 20)):
        for n, k in ((6144, 7168), (7168, 3072), (4096, 4096), (4096, 2048)):
            out.append({"kind": "masked", "m": 4096, "n": n, "k": k, "g": g, "expected_m": mm,
                        "layout": "NT", "name": f"masked {g}x{mm}x{n}x{k}"})
    for g, m, n, ek in ((4, 4096, 7168, 8192), (4, 7168, 2048, 8192), (8, 4096, 7168, 4096),
                        (8, 7168, 2048, 4096), (16, 4096, 7168, 2048), (16, 7168, 2048, 2048)):
        # the largest of G draws of 0.7-1.3 x the mean, 128-aligned: ~1.25 x for the heuristic
        out.append({"kind": "kgrp", "m": m, "n": n, "k": align(int(ek * 1.25), 128), "g": g,
                    "layout": "TT", "acc": True, "d32": True, "name": f"kgrp {g}x{m}x{n}x{ek}"})
    return out


# ---- DeepGEMM's rules --------------------------------------------------------------------

def swizzle(extent: int, elem: int) -> int:
    for mode in (128, 64, 32, 16):
        if extent * elem % mode == 0:
            return mode
    return 0


def dg_choice(s: Dict[str, Any], sms: int = 132) -> Dict[str, Any]:
    kind, m, n, k, g = s["kind"], s["m"], s["n"], s["k"], s["g"]
    d32, acc = s.get("d32", False), s.get("acc", False)
    lay = s.get("layout", "NT")
    a_mn, b_mn = lay[0] == "T", lay[1] == "N"
    cd = 4 if d32 else 2
    if kind in ("dense", "kgrp"):
        bms = [64, 128] + ([16] if m <= 16 else []) + ([32] if m <= 32 else []) + ([] if d32 else [256])
    elif kind == "contig":
        bms = [128]
    else:
        bms = [64, 128]
    em = s.get("expected_m", m) if kind == "masked" else m
    eg = g if kind in ("masked", "kgrp") else 1
    no_mc = kind == "kgrp" and g > 4
    l2_bw = int(min(64.0 * sms, 8e6 / 1.3e3))
    l1_bw = 128 * sms
    best: Optional[Dict[str, Any]] = None
    for cm, cn in ((1, 1), (1, 2), (2, 1)):
        if no_mc and cm * cn > 1:
            continue
        for bm in bms:
            for bn in range(16, 257, 16):
                if kind == "masked" and cdiv(n, bn) % (cm * cn):
                    continue
                if bm > 128 and bn > 128:
                    continue
                sa = swizzle(bm if a_mn else 64, 2)
                sb = swizzle(bn if b_mn else 64, 2)
                if sa % 64 or sb % 64:
                    continue
                extra = align(bm * bn * cd, 1024) + 256 + (512 if kind == "kgrp" else 0)
                per = (bm + bn) * 64 * 2
                stages = min((SMEM - extra) // per, 16)
                if stages < 3 or (bm * bn < 128 * 192 and stages < 4):
                    continue
                blocks = cdiv(em, bm) * cdiv(n, bn) * eg
                waves = cdiv(blocks, sms)
                cdb = bm * bn * cd * (2 if acc else 1)
                l2 = (k * (bm // cn + bn // cm) * 2 + cdb) * blocks // l2_bw
                l1 = (k * (bm + bn) * 2 + k * (max(64, bm) + bn) * 2 + bm * bn * cd + cdb) * blocks // l1_bw
                eff = f32(blocks / (waves * sms))
                cycles = int(f32(f32(float(max(l1, l2))) / eff))
                if cm * cn > 1 and waves <= 1:
                    cycles = 2 ** 63 - 1
                if best is None or cycles < best["cycles"]:
                    mc_a = cn == 2
                    usage = {c: (c * bn + cdiv(sms, c) * bm) if mc_a else (c * bm + cdiv(sms, c) * bn)
                             for c in (8, 16)}
                    best = {"block_m": bm, "block_n": bn, "multicast": "A" if cn == 2 else "B" if cm == 2 else "none",
                            "num_stages": stages, "smem": extra + stages * per, "waves": waves,
                            "blocks": blocks, "cycles": cycles, "swizzle_group": min(usage, key=usage.get),
                            "num_sms": sms}
    assert best is not None, s
    return best


# ---- qgemm's planner (src/bf16_plan.c through ctypes) --------------------------------------

class Problem(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int) for f in ("m", "n", "k", "layout", "kind", "num_groups", "expected_m",
                                            "d_f32", "with_c", "sum_batches", "sum_radix", "legacy",
                                            "sum_atomic", "sum_variant", "sum_max_stages",
                                            "num_sms", "smem_limit", "merge", "splitk", "kgrouped")]


class Plan(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int) for f in ("block_m", "block_n", "block_k", "num_stages", "multicast",
                                            "cluster", "swizzle_group", "store_cols", "smem_bytes",
                                            "producer_regs", "math_regs", "num_math_wgs", "num_threads",
                                            "a_box_rows", "b_box_rows", "d_box_rows", "grid")] + \
               [("est_cost", ctypes.c_double), ("merge", ctypes.c_int), ("splitk", ctypes.c_int),
                ("raster_m", ctypes.c_int), ("d_half", ctypes.c_int)]


def planner_lib() -> ctypes.CDLL:
    """src/bf16_plan.c as a shared object (pure C: no CUDA needed)."""
    out = os.path.join(tempfile.gettempdir(), f"qg_bf16_plan_{os.getuid()}.so")
    src = os.path.join(ROOT, "src", "bf16_plan.c")
    subprocess.check_call(["cc", "-O1", "-shared", "-fPIC", "-I", os.path.join(ROOT, "src"), src, "-o", out])
    return ctypes.CDLL(out)


def qg_choice(lib: ctypes.CDLL, s: Dict[str, Any], legacy: int, sms: int = 132) -> Dict[str, Any]:
    p = Problem(m=s["m"], n=s["n"], k=s["k"], layout=LAYOUTS[s.get("layout", "NT")], kind=KIND[s["kind"]],
                num_groups=s["g"], expected_m=s.get("expected_m", 0), d_f32=int(s.get("d32", False)),
                with_c=int(s.get("acc", False)), legacy=legacy, num_sms=sms, smem_limit=SMEM)
    pl = Plan()
    if lib.qg__bf16_select(ctypes.byref(p), ctypes.byref(pl)) != 0:
        raise RuntimeError(f"no plan for {s['name']}")
    rows = s.get("expected_m", s["m"]) if s["kind"] == "masked" else s["m"]
    g = s["g"] if s["kind"] in ("masked", "kgrp") else 1
    tiles = cdiv(rows, pl.block_m) * cdiv(s["n"], pl.block_n) * g
    return {"block_m": pl.block_m, "block_n": pl.block_n, "multicast": {0: "none", 1: "A", 2: "B"}[pl.multicast],
            "num_stages": pl.num_stages, "swizzle_group": pl.swizzle_group, "grid": pl.grid,
            "waves": cdiv(tiles, pl.grid), "blocks": tiles}


def tile(c: Dict[str, Any]) -> str:
    return f"{c['block_m']}x{c['block_n']} {c['multicast']:>4}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args()
    lib = planner_lib()
    lines = [f"# BF16 tile choices, {args.sms} SMs, {SMEM} B shared memory: DG = DeepGEMM's SM90 rules "
             "(bench/dg_bf16_heuristic.py), qg v1 = qgemm's planner before branch bf16h (QGEMM_BF16_PLAN=v1), "
             "qg = qgemm's planner now; tile bm x bn multicast, st stages, sw scheduler group, "
             "bl blocks/waves; meas = DG/qg kineto H200 2026-11-28",
             f"{'shape':<34} {'DG tile':<12} {'st':>2} {'sw':>2} {'bl/w':>9} | {'qg v1 tile':<12} {'st':>2} "
             f"{'bl/w':>9} | {'qg tile':<12} {'st':>2} {'sw':>2} {'bl/w':>9} | meas"]
    for s in shapes():
        dg = dg_choice(s, args.sms)
        old = qg_choice(lib, s, 1, args.sms)
        new = qg_choice(lib, s, 0, args.sms)
        same = "" if tile(new) != tile(old) else "="
        lines.append(f"{s['name']:<34} {tile(dg):<12} {dg['num_stages']:>2} {dg['swizzle_group']:>2} "
                     f"{str(dg['blocks']) + '/' + str(dg['waves']):>9} | {tile(old):<12} {old['num_stages']:>2} "
                     f"{str(old['blocks']) + '/' + str(old['waves']):>9} | {tile(new) + same:<12} "
                     f"{new['num_stages']:>2} {new['swizzle_group']:>2} "
                     f"{str(new['blocks']) + '/' + str(new['waves']):>9} | {MEASURED.get(s['name'], '')}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
