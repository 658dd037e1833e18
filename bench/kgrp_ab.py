#!/usr/bin/env python3
"""k_grouped_bf16_gemm_tn_contiguous A/B (issue 49): qgemm's organisations
(QGEMM_BF16_KGROUPED) beside DeepGEMM, in one process, inputs built once a row.

    PYTHONPATH=python[:.peers/DeepGEMM] python3 bench/kgrp_ab.py
        [--deepgemm-src .peers/DeepGEMM] [--variants default,m,mc,dg,d2,mc+d2]
        [--iters 5] [--out DIR] [--no-deepgemm]

Rows: bench/peers_families.py's bf16-k-grouped rows (DeepGEMM's test_bf16 k-grouped
shapes through its own generators: 4, 8, 16 groups x 4096x7168 and 7168x2048, K per
group drawn around the mean, 128-aligned), the weight gradient accumulated in place
(c = d, FP32). Variants (src/bf16_plan.h qg_bf16_problem.kgrouped): default (unset: m+d2 since
2026-11-29), n (tiles walked in groups of 16 n-blocks, no multicast: the former default), m
(DeepGEMM's walk, groups of m-blocks),
mc (m and B multicast over pairs of m-blocks), dg (DeepGEMM's rule: mc at <= 4 groups,
else m), each optionally +d2 (the FP32 output tile in shared memory halved: two epilogue
rounds, the freed bytes one more pipeline stage; d2 alone: the n walk). Per row and
variant:
  * accuracy: one call from C: calc_diff against the fp64 reference < 1e-5, and D bitwise
    the default's (the same tile and wgmmas per tile, one add into D per element);
  * time: kineto (8 GB zeroed before each call) and CUDA events (2x L2 zeroed), both as
    bench/peers_families.py takes them (its Timer), and DeepGEMM's time over it (> 1:
    qgemm faster).
Prints a line per row and variant, then one summary line per variant: DeepGEMM/qgemm
geomean and worst over the rows, kineto and events, and PASS / FAIL. Writes
DIR/kgrp-ab.json (the rows) when --out is given.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers_families  # noqa: E402  (the kineto / events Timer, calc_diff, DeepGEMM's rows)

KNOB = "QGEMM_BF16_KGROUPED"


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deepgemm-src", default=os.environ.get("QG_DEEPGEMM_SRC", ".peers/DeepGEMM"))
    ap.add_argument("--variants", default="default,m,mc,dg,d2,mc+d2",
                    help=f"{KNOB} values, 'default' = unset (the reference for bitwise)")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-deepgemm", action="store_true")
    args = ap.parse_args()

    import torch
    sys.path.insert(0, os.path.join(args.deepgemm_src, "tests"))
    import qgemm.deep_gemm as qdg
    dg = None
    if not args.no_deepgemm:
        try:
            dg = importlib.import_module("deep_gemm")
        except Exception as e:  # noqa: BLE001
            print(f"DeepGEMM: not installed ({type(e).__name__}: {e})", flush=True)
    if dg is None:  # DeepGEMM's generators import deep_gemm: qgemm's names then
        sys.modules["deep_gemm"] = qdg
    gen = importlib.import_module("generators")
    variants = [v for v in args.variants.split(",") if v]
    if "default" in variants:
        variants.remove("default")
    variants.insert(0, "default")
    torch.manual_seed(0)
    random.seed(0)
    cases = [c for c in peers_families.bf16_cases(gen, torch) if c["kind"] == "bf16-k-grouped"]
    timer = peers_families.Timer(torch, args.iters)
    env0 = os.environ.pop(KNOB, None)
    ratios = {v: {"kineto": [], "events": []} for v in variants}
    ok = {v: True for v in variants}
    rows = []
    for i, case in enumerate(cases):
        torch.manual_seed(i)
        random.seed(i)
        total_k, a, b, c, d, ref, layout_t, ks = gen.generate_k_grouped_contiguous(
            case["g"], case["m"], case["n"], case["major_a"], case["major_b"], case["ks"], use_bf16=True)
        name = f"{case['g']}x{case['m']}x{case['n']}x{total_k}"
        c0 = c.clone()
        starts = [sum(ks[:j]) for j in range(len(ks))]
        ref = torch.stack([c0[j].double() + a[s:s + kk].double().t() @ b[s:s + kk].double()
                           for j, (s, kk) in enumerate(zip(starts, ks))])
        flops = 2.0 * case["m"] * case["n"] * total_k
        row = {"shape": name, "ks": list(ks)}

        def call(mod, dl):
            return lambda: mod.k_grouped_bf16_gemm_tn_contiguous(a, b, dl, ks, layout_t, dl)

        fns, bufs = {}, {}
        if dg is not None:
            bufs["deepgemm"] = c0.clone()
            fns["deepgemm"] = call(dg, bufs["deepgemm"])
        for v in variants:
            bufs[v] = c0.clone()
            f = call(qdg, bufs[v])

            def with_knob(f=f, v=v):
                if v == "default":
                    os.environ.pop(KNOB, None)
                else:
                    os.environ[KNOB] = v
                try:
                    return f()
                finally:
                    os.environ.pop(KNOB, None)
            fns[v] = with_knob
        # one checked call of each from C
        outs = {}
        for lib, f in fns.items():
            try:
                bufs[lib].copy_(c0)
                f()
                torch.cuda.synchronize()
                outs[lib] = bufs[lib].clone()
                row[f"{lib}_diff"] = peers_families.calc_diff(outs[lib], ref)
            except Exception as e:  # noqa: BLE001
                row[f"{lib}_error"] = f"{type(e).__name__}: {str(e)[:200]}"
                print(f"{name:24s} {lib:9s} FAIL {row[f'{lib}_error']}", flush=True)
                if lib in ok:
                    ok[lib] = False
        del ref
        for lib, f in list(fns.items()):
            if lib not in outs:
                del fns[lib]
                continue
            row[f"{lib}_kineto_us"] = timer.kineto_us(f)
        ev = timer.events_us(fns)
        for lib, t in ev.items():
            row[f"{lib}_events_us"] = t
        t_dg, e_dg = row.get("deepgemm_kineto_us"), row.get("deepgemm_events_us")
        if t_dg:
            print(f"{name:24s} deepgemm  {t_dg:9.1f} us (events {e_dg:9.1f}) {flops / t_dg / 1e6:5.0f} TFLOPS"
                  f" diff {row.get('deepgemm_diff', float('nan')):.2g}", flush=True)
        for v in variants:
            if v not in outs:
                continue
            same = torch.equal(outs[v], outs["default"]) if "default" in outs else False
            diff = row[f"{v}_diff"]
            good = same and diff < 1e-5
            ok[v] &= good
            t, e = row[f"{v}_kineto_us"], row[f"{v}_events_us"]
            rk = t_dg / t if t_dg else None
            re = e_dg / e if e_dg else None
            if rk:
                ratios[v]["kineto"].append(rk)
            if re:
                ratios[v]["events"].append(re)
            row[f"{v}_bitwise_default"] = same
            print(f"{name:24s} {v:9s} {t:9.1f} us (events {e:9.1f}) {flops / t / 1e6:5.0f} TFLOPS dg/qg "
                  f"{(f'{rk:.3f}' if rk else '-'):>6s} ev {(f'{re:.3f}' if re else '-'):>6s} "
                  f"bitwise {'yes' if same else 'NO'} diff {diff:.2g}{'' if good else '  FAIL'}", flush=True)
        rows.append(row)
        del a, b, c, d, c0, outs, bufs, fns
        torch.cuda.empty_cache()
    if env0 is not None:
        os.environ[KNOB] = env0
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "kgrp-ab.json"), "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "variants": variants, "rows": rows}, f,
                      indent=1, default=str)
    print(f"summary ({KNOB}; DeepGEMM time / qgemm time over {len(rows)} k-grouped rows; > 1: qgemm faster)")
    for v in variants:
        rk, re = ratios[v]["kineto"], ratios[v]["events"]
        print(f"  {v:9s} kineto geomean {geomean(rk):.3f} worst {min(rk) if rk else float('nan'):.3f} | "
              f"events geomean {geomean(re):.3f} worst {min(re) if re else float('nan'):.3f} | "
              f"{'PASS' if ok[v] else 'FAIL'} (diff < 1e-5, D bitwise the default's)", flush=True)
    return 0 if all(ok.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
