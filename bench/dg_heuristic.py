#!/usr/bin/env python3
"""bench/dg_heuristic.py -- DeepGEMM's SM90 FP8 tile choice beside qgemm's, offline (no GPU).

DeepGEMM (54e2261, csrc/jit_kernels/heuristics/sm90.hpp) picks the tile of its
1D2D FP8 kernel (BF16 D, K-major A and B) by a data-movement model; this file
restates that procedure in Python (our own code, written from reading it) so
that its choices can be set next to qgemm's planner without a GPU:

  candidates  block_m: dense {64, 128} (+16 at M <= 16, +32 at M <= 32, +256:
              BF16 D); contiguous {128} (its segment alignment); masked
              {64, 128}. block_n 16..192 in steps of 16, minus those whose
              excess over the 128-deep K block divides neither block_n nor 128
              (176: the 1D2D kernel's unrolling). Clusters (m, n) of (1, 1),
              (1, 2) = A shared along N (qgemm's multicast A), (2, 1) = B
              shared along M (multicast B). Masked: the n-block count must be
              a multiple of the cluster size. Never block_m > 128 with
              block_n > 128. The most stages that fit 232448 bytes (at most
              16) must be >= 3, and >= 4 below 128 x 192 of tile area.
  smem        D tile (bm x bn x 2, 1024-aligned) + 256 bytes of barriers + K/128
              SFB floats (twice unless block_n divides 128, 8-aligned) +
              stages x (bm x 128 + bn x 128 + bm x 4 rounded to 128).
  cost        blocks = ceil(M'/bm) x ceil(N/bn) x G' (M' = expected_m for
              masked, else M; G' = groups for masked, 1 otherwise -- the
              contiguous layout counts its total rows as one group); per
              block, bytes through L2: K x (bm / cluster_n + bn / cluster_m)
              + the D tile; through L1: K x (bm + bn) + K x (max(64, bm) + bn)
              + 2 x the D tile. Cycles: max(L1 bytes x blocks / (128 x SMs),
              L2 bytes x blocks / min(64 x SMs, 6153)) divided by the wave
              efficiency blocks / (waves x SMs) (float32). Clusters at one
              wave or less are never taken. The smallest cost wins; ties keep
              the first in the enumeration order (cluster_m, cluster_n,
              block_m in the order above, block_n ascending).
  grid        every SM (num_sms = the device's count, 132 here).

Usage (needs build/libqgemm.so: make build/libqgemm.so):
    python3 bench/dg_heuristic.py [--device h200|h100] [--changed] [--csv]
prints one line per DeepGEMM test shape: DeepGEMM's choice, qgemm's choice on
that device (through qg_context_create_offline + qg_select_config), the
measured DeepGEMM / qgemm kineto ratio of 2026-11-28 on the H200 where known.
--table-h100 FILE / --compare FILE: write / check qgemm's choices (every shape,
both devices) to prove that a planner change leaves a device's table alone.
--grouped-mcb: qgemm's choices with QGEMM_FP8_GROUPED_MCB=1 (the heuristic may
pick B multicast in the contiguous, masked and psum kinds; the library reads
the variable per call, so setting it in the environment does the same).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import struct
import sys
from typing import Any, Dict, List, Optional, Tuple

SMEM = 232448
DENSE_NK = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168),
            (7168, 2048)]
GROUPED_NK = [(6144, 7168), (7168, 3072), (4096, 4096), (4096, 2048)]
# (groups, mean rows a group): DeepGEMM's test lists, plus the extra rows of
# /work/shared/peers/measured-2026-11-28-h200/grouped.txt (contiguous 32 x 256, masked 1 x 1024
# and 4 x 256)
CONTIG = [(4, 8192), (8, 4096), (32, 256)]
MASKED = [(32, 192), (6, 1024), (32, 20), (6, 20), (1, 1024), (4, 256)]

# DeepGEMM time / qgemm time, kineto, H200, 2026-11-28 (qgemm ff337ef; measured-2026-11-28-h200)
MEASURED = {
    "dense 1x2112x7168": 1.321, "dense 1x576x7168": 1.448, "dense 1x24576x1536": 1.169,
    "dense 1x32768x512": 1.037, "dense 1x7168x16384": 1.094, "dense 1x4096x7168": 1.122,
    "dense 1x7168x2048": 1.062, "dense 64x2112x7168": 1.034, "dense 64x576x7168": 1.296,
    "dense 64x24576x1536": 1.065, "dense 64x32768x512": 1.052, "dense 64x7168x16384": 1.020,
    "dense 64x4096x7168": 1.002, "dense 64x7168x2048": 1.033, "dense 128x2112x7168": 1.035,
    "dense 128x576x7168": 1.249, "dense 128x24576x1536": 1.013, "dense 128x32768x512": 1.091,
    "dense 128x7168x16384": 1.103, "dense 128x4096x7168": 0.977, "dense 128x7168x2048": 1.087,
    "dense 4096x2112x7168": 0.996, "dense 4096x576x7168": 1.155, "dense 4096x24576x1536": 0.997,
    "dense 4096x32768x512": 1.015, "dense 4096x7168x16384": 0.979, "dense 4096x4096x7168": 0.973,
    "dense 4096x7168x2048": 0.996,
    "contig 4x8192x6144x7168": 0.97, "contig 4x8192x7168x3072": 1.00,
    "contig 4x8192x4096x4096": 0.954, "contig 4x8192x4096x2048": 1.00,
    "contig 8x4096x6144x7168": 0.97, "contig 8x4096x7168x3072": 1.00,
    "contig 8x4096x4096x4096": 0.99, "contig 8x4096x4096x2048": 0.96,
    "contig 32x256x6144x7168": 0.98, "contig 32x256x7168x3072": 0.99,
    "contig 32x256x4096x4096": 0.99, "contig 32x256x4096x2048": 1.00,
    "masked 32x192x6144x7168": 1.00, "masked 32x192x7168x3072": 1.02,
    "masked 32x192x4096x4096": 1.03, "masked 32x192x4096x2048": 1.05,
    "masked 6x1024x6144x7168": 0.95, "masked 6x1024x7168x3072": 0.96,
    "masked 6x1024x4096x4096": 0.96, "masked 6x1024x4096x2048": 1.03,
    "masked 32x20x6144x7168": 1.01, "masked 32x20x7168x3072": 1.06,
    "masked 32x20x4096x4096": 1.00, "masked 32x20x4096x2048": 1.01,
    "masked 6x20x6144x7168": 1.00, "masked 6x20x7168x3072": 1.01,
    "masked 6x20x4096x4096": 1.06, "masked 6x20x4096x2048": 1.07,
    "masked 1x1024x6144x7168": 0.72, "masked 1x1024x7168x3072": 1.08,
    "masked 1x1024x4096x4096": 1.01, "masked 1x1024x4096x2048": 1.02,
    "masked 4x256x6144x7168": 0.92, "masked 4x256x7168x3072": 1.01,
    "masked 4x256x4096x4096": 0.85, "masked 4x256x4096x2048": 0.92,
}


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def align(a: int, b: int) -> int:
    return cdiv(a, b) * b


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


# ---- the shapes -------------------------------------------------------------------------

def contig_rows(g: int, mm: int, n: int, k: int) -> int:
    """The contiguous rows' total M as bench/peers.py draws them (seeded: rows 0.7-1.3 x the
    mean, each group padded to 128), else every group at its mean."""
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import peers  # noqa: E402  (pure Python at import; torch only inside its rows)
        return int(peers.contiguous_spec(g, mm, n, k, 128, 0)["m_total"])
    except Exception:
        return g * align(mm, 128)


def shapes() -> List[Dict[str, Any]]:
    """DeepGEMM's dense test shapes (forward M 1, 128, 4096; dgrad M 4096 with N, K swapped;
    and M 64, which the measured table has) and the grouped ones. Contiguous: peers.py's
    seeded rows (DeepGEMM's heuristic sees only the total M); masked:
    max_m 4096 and expected_m = 1.2 x the mean, as DeepGEMM's test passes it, but the
    1 x 1024 row at max_m = expected_m = 1024 (its table's rows are exactly 1024)."""
    out: List[Dict[str, Any]] = []
    seen = set()
    for m in (1, 64, 128, 4096):
        for n, k in DENSE_NK:
            out.append({"kind": "dense", "m": m, "n": n, "k": k, "g": 1, "name": f"dense {m}x{n}x{k}"})
            seen.add((m, n, k))
    for n, k in DENSE_NK:  # dgrad: M 4096, N and K swapped
        if (4096, k, n) not in seen:
            out.append({"kind": "dense", "m": 4096, "n": k, "k": n, "g": 1,
                        "name": f"dense 4096x{k}x{n}", "dgrad": True})
    for g, mm in CONTIG:
        for n, k in GROUPED_NK:
            out.append({"kind": "contig", "m": contig_rows(g, mm, n, k), "n": n, "k": k, "g": g,
                        "name": f"contig {g}x{mm}x{n}x{k}"})
    for g, mm in MASKED:
        for n, k in GROUPED_NK:
            max_m, em = (1024, 1024) if (g, mm) == (1, 1024) else (4096, int(mm * 1.2))
            out.append({"kind": "masked", "m": max_m, "n": n, "k": k, "g": g, "expected_m": em,
                        "name": f"masked {g}x{mm}x{n}x{k}"})
    return out


def training_shapes() -> List[Dict[str, Any]]:
    """The training kinds as peers.py runs them (qgemm's choice only; the psum rows with the
    contiguous and masked rows' mean sizes): for the identity check of --compare."""
    out: List[Dict[str, Any]] = []
    for n, k in DENSE_NK:  # weight gradient: M = N of the forward, N 4096 (peers.py's wgrad_spec)
        out.append({"kind": "wgrad", "m": n, "n": 4096, "k": k, "g": 1, "name": f"wgrad {n}x4096x{k}"})
    for g, m, n, km in [(4, 4096, 7168, 8192), (4, 7168, 2048, 8192), (8, 4096, 7168, 4096),
                        (8, 7168, 2048, 4096), (16, 4096, 7168, 2048), (16, 7168, 2048, 2048)]:
        out.append({"kind": "k-grouped", "m": m, "n": n, "k": g * km, "g": g,
                    "name": f"k-grouped {g}x{m}x{n}x{km}"})
    for g, mm in CONTIG + MASKED:
        for n, k in GROUPED_NK:
            em = int(mm * 1.2) if (g, mm) in MASKED else 0
            out.append({"kind": "psum", "m": g * align(int(mm * 1.3), 128), "n": n, "k": k, "g": g,
                        "expected_m": em, "name": f"psum {g}x{mm}x{n}x{k}" + (" em" if em else "")})
    return out


def sweep_shapes() -> List[Dict[str, Any]]:
    """A grid around the test shapes, for the identity check only."""
    out: List[Dict[str, Any]] = []
    for m in (1, 16, 33, 64, 96, 128, 200, 256, 384, 512, 1024, 2048, 3000, 4096, 8192, 16384):
        for n in (256, 576, 1536, 2112, 3072, 4096, 6144, 7168, 24576):
            for k in (512, 1536, 2048, 4096, 7168, 16384):
                out.append({"kind": "dense", "m": m, "n": n, "k": k, "g": 1,
                            "name": f"sweep dense {m}x{n}x{k}"})
    for g in (1, 2, 4, 6, 8, 16, 32, 64):
        for em in (8, 20, 64, 100, 192, 230, 256, 307, 400, 512, 768, 1024, 1228, 2048, 4096):
            for n, k in GROUPED_NK + [(2048, 7168), (1536, 4096)]:
                out.append({"kind": "masked", "m": 4096, "n": n, "k": k, "g": g, "expected_m": em,
                            "name": f"sweep masked {g}x{em}x{n}x{k}"})
                out.append({"kind": "masked", "m": em, "n": n, "k": k, "g": g, "expected_m": em,
                            "name": f"sweep masked-exact {g}x{em}x{n}x{k}"})
                out.append({"kind": "contig", "m": g * align(em, 128), "n": n, "k": k, "g": g,
                            "name": f"sweep contig {g}x{em}x{n}x{k}"})
    return out


# ---- DeepGEMM's rules ---------------------------------------------------------------------

def dg_smem(bm: int, bn: int, k: int) -> Tuple[int, int]:
    """(stages, shared memory bytes) of DeepGEMM's 1D2D kernel with BF16 D."""
    extra = align(bm * bn * 2, 1024) + 16 * 8 * 2
    extra += align(cdiv(k, 128) * 4 * (1 if 128 % bn == 0 else 2), 8)
    per_stage = bm * 128 + bn * 128 + align(bm * 4, 128)
    stages = min((SMEM - extra) // per_stage, 16)
    return stages, extra + stages * per_stage


def dg_choice(s: Dict[str, Any], sms: int = 132) -> Dict[str, Any]:
    kind, m, n, k, g = s["kind"], s["m"], s["n"], s["k"], s["g"]
    if kind == "dense":
        bms = [64, 128] + ([16] if m <= 16 else []) + ([32] if m <= 32 else []) + [256]
        em, eg = m, 1
    elif kind == "contig":
        bms, em, eg = [128], m, 1
    else:
        bms, em, eg = [64, 128], s["expected_m"], g
    l2_bw = int(min(64.0 * sms, 8e6 / 1.3e3))
    l1_bw = 128 * sms
    best: Optional[Tuple[int, Dict[str, Any]]] = None
    for cm, cn in ((1, 1), (1, 2), (2, 1)):
        for bm in bms:
            for bn in range(16, 193, 16):
                if bn > 128 and bn % (bn - 128) and 128 % (bn - 128):
                    continue
                if kind == "masked" and cdiv(n, bn) % (cm * cn):
                    continue
                if bm > 128 and bn > 128:
                    continue
                stages, smem = dg_smem(bm, bn, k)
                if stages < 3 or (bm * bn < 128 * 192 and stages < 4):
                    continue
                blocks = cdiv(em, bm) * cdiv(n, bn) * eg
                waves = cdiv(blocks, sms)
                cd = bm * bn * 2
                l2 = (k * (bm // cn + bn // cm) + cd) * blocks // l2_bw
                l1 = (k * (bm + bn) + k * (max(64, bm) + bn) + cd + cd) * blocks // l1_bw
                eff = f32(blocks / (waves * sms))
                cycles = int(f32(float(max(l1, l2)) / eff))
                if cm * cn > 1 and waves <= 1:
                    cycles = 2 ** 63 - 1
                if best is None or cycles < best[0]:
                    mc = "A" if cn == 2 else "B" if cm == 2 else "none"
                    best = (cycles, {"block_m": bm, "block_n": bn, "multicast": mc,
                                     "num_stages": stages, "num_sms": sms, "smem": smem,
                                     "waves": waves, "cycles": cycles})
    assert best is not None
    return best[1]


# ---- qgemm's planner, through the C library ---------------------------------------------

class Props(ctypes.Structure):
    _fields_ = [("sm_count", ctypes.c_int), ("cc_major", ctypes.c_int), ("cc_minor", ctypes.c_int),
                ("smem_optin_bytes", ctypes.c_size_t), ("l2_bytes", ctypes.c_size_t),
                ("clock_khz", ctypes.c_int), ("name", ctypes.c_char * 128),
                ("dram_gbps", ctypes.c_int)]


class Problem(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("m", ctypes.c_int), ("n", ctypes.c_int), ("k", ctypes.c_int),
                ("num_groups", ctypes.c_int), ("expected_m", ctypes.c_int),
                ("accumulate", ctypes.c_int)]


class Config(ctypes.Structure):
    _fields_ = [("block_m", ctypes.c_int), ("block_n", ctypes.c_int), ("num_stages", ctypes.c_int),
                ("multicast", ctypes.c_int), ("swizzle_group", ctypes.c_int),
                ("split_k", ctypes.c_int), ("num_sms", ctypes.c_int),
                ("smem_bytes", ctypes.c_size_t)]


# What the driver reports (src/context.c): 132 SMs, 227 KiB of opt-in shared memory,
# 50 MiB of L2 on both; DRAM 2 x memory clock x bus width.
DEVICES = {
    "h200": dict(sm_count=132, dram_gbps=4915, clock_khz=1980000, name=b"NVIDIA H200"),
    "h100": dict(sm_count=132, dram_gbps=3352, clock_khz=1980000, name=b"NVIDIA H100 80GB HBM3"),
}
KINDS = {"dense": 0, "contig": 1, "masked": 2, "psum": 3, "wgrad": 4, "k-grouped": 5}
MC = {0: "none", 1: "A", 2: "B"}


class Planner:
    def __init__(self, lib_path: str, device: str) -> None:
        self.lib = ctypes.CDLL(lib_path)
        self.lib.qg_last_error.restype = ctypes.c_char_p
        d = DEVICES[device]
        props = Props(sm_count=d["sm_count"], cc_major=9, cc_minor=0, smem_optin_bytes=SMEM,
                      l2_bytes=50 << 20, clock_khz=d["clock_khz"], name=d["name"],
                      dram_gbps=d["dram_gbps"])
        self.ctx = ctypes.c_void_p()
        st = self.lib.qg_context_create_offline(ctypes.byref(self.ctx), ctypes.byref(props))
        if st:
            raise RuntimeError(self.lib.qg_last_error().decode())

    def choice(self, s: Dict[str, Any]) -> Dict[str, Any]:
        p = Problem(kind=KINDS[s["kind"]], m=s["m"], n=s["n"], k=s["k"], num_groups=s["g"],
                    expected_m=s.get("expected_m", 0), accumulate=0)
        c = Config()
        st = self.lib.qg_select_config(self.ctx, ctypes.byref(p), ctypes.byref(c))
        if st:
            raise RuntimeError(self.lib.qg_last_error().decode())
        return {"block_m": c.block_m, "block_n": c.block_n, "multicast": MC[c.multicast],
                "num_stages": c.num_stages, "swizzle_group": c.swizzle_group,
                "split_k": c.split_k, "num_sms": c.num_sms, "smem": c.smem_bytes}


def tile(c: Dict[str, Any]) -> str:
    sk = " split2" if c.get("split_k", 1) > 1 else ""
    return f"{c['block_m']}x{c['block_n']} {c['multicast']:>4}{sk}"


def default_lib() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("QGEMM_LIB", os.path.join(here, "..", "build", "libqgemm.so"))


def table(device: str, lib: str) -> Dict[str, Dict[str, Any]]:
    pl = Planner(lib, device)
    return {s["name"]: pl.choice(s) for s in shapes() + training_shapes() + sweep_shapes()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=sorted(DEVICES), default="h200")
    ap.add_argument("--lib", default=default_lib())
    ap.add_argument("--changed", action="store_true",
                    help="only rows whose qgemm tile differs from --compare's")
    ap.add_argument("--dump", metavar="FILE",
                    help="write qgemm's choices (both devices; the test shapes, the training kinds "
                         "and a grid of %d more) as JSON" % len(sweep_shapes()))
    ap.add_argument("--all", action="store_true",
                    help="print the training kinds and the grid too (qgemm only past the test "
                         "shapes)")
    ap.add_argument("--grouped-mcb", action="store_true",
                    help="set QGEMM_FP8_GROUPED_MCB=1: the heuristic may pick B multicast in the "
                         "m-grouped kinds")
    ap.add_argument("--compare", metavar="FILE",
                    help="a --dump of another tree: print old -> new per row, and exit 1 if any "
                         "H100 choice differs")
    args = ap.parse_args()
    if args.grouped_mcb:
        os.environ["QGEMM_FP8_GROUPED_MCB"] = "1"
    if args.dump:
        with open(args.dump, "w") as f:
            json.dump({d: table(d, args.lib) for d in sorted(DEVICES)}, f, indent=1, sort_keys=True)
        print(f"wrote {args.dump}")
        return 0
    old = None
    if args.compare:
        with open(args.compare) as f:
            old = json.load(f)
        h100 = table("h100", args.lib)
        diff = [n for n in h100 if h100[n] != old["h100"][n]]
        print(f"# H100: {len(h100) - len(diff)} / {len(h100)} choices identical to {args.compare}"
              + ("" if not diff else f"; CHANGED ({len(diff)}): " + ", ".join(diff[:12])
                 + (" ..." if len(diff) > 12 else "")))
        other = table(args.device, args.lib)
        moved = [n for n in other if other[n] != old[args.device][n]]
        print(f"# {args.device}: {len(moved)} of {len(other)} choices changed "
              f"({sum(n.startswith('sweep') for n in moved)} in the grid)")
    pl = Planner(args.lib, args.device)
    print(f"# device {args.device} (132 SMs); DG = DeepGEMM 54e2261's rules (this file); "
          f"qg = qgemm's planner ({args.lib}); meas = DG/qg kineto, H200 2026-11-28")
    print(f"{'shape':<28} {'DG tile':<13} {'st':>2} {'smem':>6} {'w':>2} | "
          f"{'qg tile':<18} {'st':>2} {'sw':>2} {'smem':>6}" + (" | old qg tile" if old else "")
          + " | meas")
    rows = shapes() + (training_shapes() + sweep_shapes() if args.all else [])
    for s in rows:
        dg = dg_choice(s) if s["kind"] in ("dense", "contig", "masked") else None
        qg = pl.choice(s)
        prev = old[args.device][s["name"]] if old else None
        if args.changed and prev == qg:
            continue
        meas = MEASURED.get(s["name"])
        dgs = (f"{tile(dg):<13} {dg['num_stages']:>2} {dg['smem']:>6} {dg['waves']:>2}" if dg
               else f"{'-':<13} {'':>2} {'':>6} {'':>2}")
        line = (f"{s['name']:<28} {dgs} | {tile(qg):<18} {qg['num_stages']:>2} "
                f"{qg['swizzle_group']:>2} {qg['smem']:>6}")
        if old:
            line += f" | {tile(prev) if prev != qg else '=':<13}"
        line += f" | {meas:.3f}" if meas else " |"
        print(line)
    if old and diff:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
