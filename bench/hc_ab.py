#!/usr/bin/env python3
"""tf32_hc_prenorm_gemm A/B: qgemm's rounding schemes (QGEMM_HC_MODE) beside
DeepGEMM, in one process, on DeepGEMM's test_hc_prenorm_gemm shapes.

    PYTHONPATH=python[:.peers/DeepGEMM] python3 bench/hc_ab.py [--modes rounder,split,...]
                                                             [--iters 30] [--no-deepgemm]

Per shape (m in 13, 137, 4096, 8192; n 24; k 28672, 7680, 7168; num_splits
None and 16), fresh N(0, 1) inputs, each library:
  * acc: DeepGEMM's criterion, max(calc_diff(d, torch TF32 a @ b.T),
    calc_diff(sqr, fp32 sum of squares)) < 1e-8, exactly as its test computes
    the reference (allow_tf32 = True); and calc_diff against fp64 a @ rna_tf32(b)
    (the harness's reference) beside it;
  * time: CUDA events around one call after a 2 x L2 flush, libraries
    interleaved call by call, median of --iters (µs).
Prints one table (µs, "!" after a time whose accuracy failed), the geomean of
each column, and each column's speedup over DeepGEMM (> 1: faster).
DeepGEMM (deep_gemm on PYTHONPATH, built by .peers/build.sh) is optional.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

import torch


def calc_diff(x: torch.Tensor, y: torch.Tensor) -> float:
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    return float(1 - 2 * (x * y).sum() / denom) if denom != 0 else 0.0


def rna_tf32(b: torch.Tensor) -> torch.Tensor:
    """fp32 -> TF32 to nearest, ties away (cvt.rna.tf32.f32), as fp32 bits."""
    u = b.contiguous().view(torch.int32)
    r = ((u + 0x1000) & ~0x1FFF).to(torch.int32)
    return r.view(torch.float32)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default="inplace,rounder,rounder:2,split,split:2,trunc")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--no-deepgemm", action="store_true")
    ap.add_argument("--shapes", default="all", help="all, or 'big' (m >= 4096 only)")
    ap.add_argument("--max-rows", type=int, default=0, help="only the first N shapes (0: all)")
    args = ap.parse_args()

    import qgemm
    libs = {}
    modes = [m for m in args.modes.split(",") if m]
    for mode in modes:
        # "mode/variant": QGEMM_HC_MODE=mode, QGEMM_HC_VARIANT=variant ('+'-separated)
        hc_mode, _, hc_variant = mode.partition("/")

        def qg_call(a, b, d, s, ns, hc_mode=hc_mode, hc_variant=hc_variant):
            os.environ["QGEMM_HC_MODE"] = hc_mode  # both read at every call (src/env.c)
            os.environ["QGEMM_HC_VARIANT"] = hc_variant
            qgemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=ns)
        libs[f"qg:{mode}"] = qg_call
    if not args.no_deepgemm:
        try:
            import deep_gemm
            libs["deepgemm"] = lambda a, b, d, s, ns: deep_gemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=ns)
        except Exception as e:  # noqa: BLE001
            print(f"DeepGEMM not importable ({e}); qgemm only")

    torch.manual_seed(0)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    flush = torch.empty(2 * props.L2_cache_size, dtype=torch.uint8, device=dev)
    print(f"device: {props.name}, {props.multi_processor_count} SMs; columns: {', '.join(libs)}")

    shapes = []
    for m in (13, 137, 4096, 8192):
        if args.shapes == "big" and m < 4096:
            continue
        for n, k in ((24, 28672), (24, 7680), (24, 7168)):
            for ns in (None, 16):
                shapes.append((m, n, k, ns))
    if args.max_rows > 0:
        shapes = shapes[:args.max_rows]

    names = list(libs)
    table = []
    for (m, n, k, ns) in shapes:
        a = torch.randn((m, k), dtype=torch.bfloat16, device=dev)
        b = torch.randn((n, k), dtype=torch.float, device=dev)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        ref_d = a.float() @ b.T                      # DeepGEMM's reference (cuBLAS TF32)
        ref_s = a.float().square().sum(-1)
        ref64 = a.double() @ rna_tf32(b).double().T  # fp64 of a * rna_tf32(b)
        row = {"shape": f"{m}x{n}x{k} s{ns or 0}"}
        outs = {}
        for name in names:
            d = torch.empty((m, n) if ns is None else (ns, m, n), dtype=torch.float, device=dev)
            s = torch.empty((m,) if ns is None else (ns, m), dtype=torch.float, device=dev)
            d.fill_(float("nan")), s.fill_(float("nan"))
            try:
                libs[name](a, b, d, s, ns)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                row[name] = {"err": str(e)[:80]}
                continue
            fd = d if ns is None else d.sum(0)
            fs = s if ns is None else s.sum(0)
            diff = max(calc_diff(fd, ref_d), calc_diff(fs, ref_s))
            diff64 = calc_diff(fd, ref64)
            rep_ok = True
            d0, s0 = d.clone(), s.clone()
            for _ in range(5):
                libs[name](a, b, d, s, ns)
            torch.cuda.synchronize()
            rep_ok = torch.equal(d.view(torch.int32), d0.view(torch.int32)) and \
                torch.equal(s.view(torch.int32), s0.view(torch.int32))
            outs[name] = (d, s)
            row[name] = {"diff": diff, "diff64": diff64, "ok": diff < 1e-8 and rep_ok, "rep": rep_ok, "t": []}
        live = [nm for nm in names if "t" in row.get(nm, {})]
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in live]
        for _ in range(3):
            for nm in live:
                libs[nm](a, b, *outs[nm], ns)
        for _ in range(args.iters):
            for i, nm in enumerate(live):
                flush.zero_()
                ev[i][0].record()
                libs[nm](a, b, *outs[nm], ns)
                ev[i][1].record()
                torch.cuda.synchronize()
                row[nm]["t"].append(ev[i][0].elapsed_time(ev[i][1]) * 1e3)
        for nm in live:
            row[nm]["us"] = statistics.median(row[nm]["t"])
        table.append(row)
        cells = []
        for nm in names:
            r = row.get(nm, {})
            if "err" in r:
                cells.append(f"{nm}: ERROR {r['err']}")
            else:
                cells.append(f"{nm}: {r['us']:.1f} us diff {r['diff']:.2e} fp64-rna {r['diff64']:.2e}"
                             f"{'' if r['rep'] else ' NOT-REPEATABLE'}{'' if r['ok'] else ' FAIL'}")
        print(f"{row['shape']:>20}: " + " | ".join(cells), flush=True)

    print("\nµs (CUDA events, 2 x L2 flushed, median); '!' = DeepGEMM's accuracy check (diff < 1e-8 "
          "vs torch TF32) or 5-run bitwise repeat failed")
    print(f"{'shape':>20} " + " ".join(f"{nm:>13}" for nm in names))
    logs = {nm: [] for nm in names}
    for row in table:
        cells = []
        for nm in names:
            r = row.get(nm, {})
            if "us" not in r:
                cells.append(f"{'ERR':>13}")
                continue
            cells.append(f"{r['us']:12.1f}{' ' if r['ok'] else '!'}")
            logs[nm].append(math.log(r["us"]))
        print(f"{row['shape']:>20} " + " ".join(cells))
    gm = {nm: math.exp(sum(v) / len(v)) if v else float("nan") for nm, v in logs.items()}
    print(f"{'geomean':>20} " + " ".join(f"{gm[nm]:12.1f} " for nm in names))
    if "deepgemm" in gm:
        print(f"{'vs DeepGEMM':>20} " + " ".join(f"{gm['deepgemm'] / gm[nm]:12.3f} " for nm in names))
        worst = {nm: min((row["deepgemm"]["us"] / row[nm]["us"]) for row in table
                         if "us" in row.get(nm, {}) and "us" in row.get("deepgemm", {})) for nm in names}
        print(f"{'worst vs DeepGEMM':>20} " + " ".join(f"{worst[nm]:12.3f} " for nm in names))
        below = {nm: sum(1 for row in table if "us" in row.get(nm, {}) and "us" in row.get("deepgemm", {})
                         and row["deepgemm"]["us"] / row[nm]["us"] < 0.95) for nm in names}
        print(f"{'rows < 0.95x':>20} " + " ".join(f"{below[nm]:12d} " for nm in names))
        # one line per column: geomean, worst row (name), accuracy verdict
        for nm in names:
            if nm == "deepgemm":
                continue
            rs = [(row["deepgemm"]["us"] / row[nm]["us"], row["shape"]) for row in table
                  if "us" in row.get(nm, {}) and "us" in row.get("deepgemm", {})]
            if not rs:
                continue
            w = min(rs)
            acc = all(row.get(nm, {}).get("ok", False) for row in table)
            print(f"SUMMARY {nm}: DeepGEMM/qgemm geomean {gm['deepgemm'] / gm[nm]:.3f}, worst {w[0]:.3f} "
                  f"({w[1]}), rows < 0.95: {below[nm]}, accuracy+repeat "
                  f"{'PASS' if acc else ('FAIL' if 'trunc' not in nm else 'FAIL (trunc: expected)')}")
    bad = [(row["shape"], nm) for row in table for nm in names
           if nm.startswith("qg:") and "trunc" not in nm and not row.get(nm, {}).get("ok", False)]
    print(f"\nqgemm (rounding modes) accuracy/determinism failures: {len(bad)} {bad[:8]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
