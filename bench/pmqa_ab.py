#!/usr/bin/env python3
"""fp8_paged_mqa_logits A/B: qgemm's organisations (QGEMM_PMQA_VARIANT) beside
DeepGEMM, in one process, inputs built once a row.

    PYTHONPATH=python[:.peers/DeepGEMM] python3 bench/pmqa_ab.py
        [--variants default,split4,shared2]
        [--rows N128|all|families[:N]|B,NN,H,L,f32;...]
        [--iters 10] [--no-deepgemm] [--clean]

Rows: bench/peers_families.py's paged-mqa inputs (context lengths uniform in
[0.7 L, 1.3 L), the second query's a random fraction of the first's, a random
block permutation, D 128, DeepGEMM's fused cache); the default set is the
rows that move at next_n x H = 128 (B4096 x N2 x H64 x L8192 fp32 and bf16,
B256 x N2 x H64 x L65536 fp32) and one at 32 columns (B4096 x N1 x H32 x
L8192, dual2's home); --rows families[:N]: the first N (8) paged-mqa rows of
bench/peers_families.py (its --kinds paged-mqa --max-rows N). Per row and variant:
  * bitwise: the logits (inside each row's length) equal the default's
    (QGEMM_PMQA_VARIANT unset) bit for bit: every organisation computes the
    same sums in the same order; diff against DeepGEMM (calc_diff) < 1e-5;
  * time: kineto, 8 GB zeroed before each call (cold L2), mean of --iters (us),
    TB/s of the bytes it must move, DeepGEMM's time over it (> 1: faster).
--flush read: the kineto loop reads the 8 GB (a sum) instead of zeroing it, so
each call starts with an L2 of clean lines, not the memset's dirty ones (the
session-x question: under ncu, whose flush leaves L2 clean, qgemm's kernel ran
at DeepGEMM's time, in the kineto loop 2-4% slower); only the kernels named
*paged_mqa_logits* are summed then.
--clean: both libraries write -inf past each row's length (clean_logits=True;
split4r112m differs from split4r112 only there); the bytes then count every
logit of the [B x NN, max_len] output.
Prints a line per row and variant, then one summary line per variant: the
geomean of DeepGEMM / qgemm over the rows and PASS / FAIL (bitwise and diff).
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import torch

BLK = 64


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers_families  # noqa: E402  (calc_diff, the kineto Timer, the FP8 key rows)

calc_diff = peers_families.calc_diff


def inputs(bsz: int, nn: int, h: int, avg: int, dim: int = 128):
    ctx = torch.randint(int(0.7 * avg), int(1.3 * avg), (bsz,), device="cuda", dtype=torch.int)
    nblk = (ctx + BLK - 1) // BLK
    total = int(nblk.sum().item())
    maxb = int(nblk.max().item())
    max_len = maxb * BLK
    # a random permutation of the blocks, entry b's first nb(b) slots (the rest 0, unread)
    pool = torch.randperm(total, device="cuda", dtype=torch.int)
    starts = torch.cumsum(nblk, 0) - nblk
    j = torch.arange(maxb, device="cuda", dtype=torch.int)[None, :]
    idx = (starts[:, None] + j).clamp(max=total - 1).long()
    table = torch.where(j < nblk[:, None], pool[idx], torch.zeros_like(j)).int().contiguous()
    cache = torch.empty((total, BLK * (dim + 4)), device="cuda", dtype=torch.uint8)
    step = 1 << 16  # blocks a chunk: bounded temporaries
    for b0 in range(0, total, step):
        b1 = min(total, b0 + step)
        keys = torch.randn((b1 - b0, BLK, dim), device="cuda", dtype=torch.bfloat16)
        kvq, kvs = peers_families._fp8_rows(torch, keys)
        cache[b0:b1, :BLK * dim] = kvq.view(b1 - b0, BLK * dim).view(torch.uint8)
        cache[b0:b1, BLK * dim:] = kvs.contiguous().view(b1 - b0, BLK).view(torch.uint8)
    cache = cache.view(total, BLK, 1, dim + 4)
    q = torch.randn((bsz, nn, h, dim), device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    w = torch.randn((bsz * nn, h), device="cuda", dtype=torch.float)
    ctx2 = ((ctx.unsqueeze(1) + 1) * torch.rand(bsz, nn, device="cuda")).int()
    ctx2[:, -1] = ctx
    return q, cache, w, ctx, ctx2.contiguous(), table, max_len


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default="default,split4,shared2",
                    help="QGEMM_PMQA_VARIANT values, 'default' = unset (the reference for bitwise)")
    ap.add_argument("--rows", default="N128",
                    help="N128 (the default set), all (+ B4096 N1 H64, B4096 N2 H32), "
                         "families[:N] (peers_families.py's first N paged-mqa rows, 8 if no N), or "
                         "'B,NN,H,L,f32;...' (f32 1 or 0)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--no-deepgemm", action="store_true")
    ap.add_argument("--clean", action="store_true", help="clean_logits=True on both sides")
    ap.add_argument("--flush", choices=("zero", "read"), default="zero",
                    help="before each timed call: zero 8 GB (default) or read them (clean L2)")
    args = ap.parse_args()

    import qgemm.deep_gemm as qdg
    dg = None
    if not args.no_deepgemm:
        try:
            import deep_gemm as dg  # noqa: F811
        except Exception as e:  # noqa: BLE001
            print(f"DeepGEMM: not installed ({type(e).__name__}: {e})")
    variants = [v for v in args.variants.split(",") if v]
    if "default" in variants:
        variants.remove("default")
    variants.insert(0, "default")
    rows = [(4096, 2, 64, 8192, 1), (4096, 2, 64, 8192, 0), (256, 2, 64, 65536, 1), (4096, 1, 32, 8192, 1)]
    if args.rows == "all":
        rows += [(4096, 1, 64, 8192, 1), (4096, 2, 32, 8192, 1)]
    elif args.rows.split(":")[0] == "families":
        n = int(args.rows.split(":")[1]) if ":" in args.rows else 8
        rows = [(c["bsz"], c["next_n"], c["h"], c["avg_kv"], int(c["f32"]))
                for c in peers_families.family_cases() if c["kind"] == "paged-mqa"][:n]
    elif args.rows != "N128":
        rows = [tuple(int(x) for x in r.split(",")) for r in args.rows.split(";") if r]
    timer = peers_families.Timer(torch, args.iters)  # kineto after 8 GB zeroed, each call
    if args.flush == "read":  # the 8 GB summed, not zeroed; only the logits kernels summed
        kineto = timer.kineto_us
        timer.kineto_us = lambda fn: kineto(fn, flush=timer.big.sum, only="paged_mqa_logits")
    env0 = os.environ.pop("QGEMM_PMQA_VARIANT", None)
    ratios = {v: [] for v in variants}
    ok = {v: True for v in variants}
    for (bsz, nn, h, avg, f32) in rows:
        torch.manual_seed(bsz + nn + h + avg)
        q, cache, w, ctx, ctx2, table, max_len = inputs(bsz, nn, h, avg)
        ldt = torch.float if f32 else torch.bfloat16
        nbytes = q.numel() + w.numel() * 4 + int(ctx.sum().item()) * (128 + 4) + \
            (ctx2.numel() * max_len if args.clean else int(ctx2.sum().item())) * ldt.itemsize
        inside = torch.arange(max_len, device="cuda")[None, :] < ctx2.view(-1, 1)
        name = f"B{bsz}xN{nn}xH{h}xL{avg} {'fp32' if f32 else 'bf16'}{' clean' if args.clean else ''}"

        def caller(mod):
            meta = mod.get_paged_mqa_logits_metadata(ctx2, BLK, mod.get_num_sms())
            res = {}

            def fn():
                res["x"] = mod.fp8_fp4_paged_mqa_logits((q, None), cache, w, ctx2, table, meta, max_len,
                                                        clean_logits=args.clean, logits_dtype=ldt)
            return fn, res

        t_dg, out_dg = None, None
        if dg is not None:
            fn, res = caller(dg)
            t_dg = timer.kineto_us(fn)
            out_dg = res["x"].float().masked_fill(~inside, 0)
            print(f"{name:32s} deepgemm  {t_dg:9.1f} us {nbytes / t_dg / 1e6:5.2f} TB/s", flush=True)
        fn, res = caller(qdg)
        ref = None
        for v in variants:
            if v == "default":
                os.environ.pop("QGEMM_PMQA_VARIANT", None)
            else:
                os.environ["QGEMM_PMQA_VARIANT"] = v
            try:
                t = timer.kineto_us(fn)
                full = res["x"].float()
                out = full.masked_fill(~inside, 0)
                # --clean: every column past the row's length is -inf (compared in full below)
                tail_ok = not args.clean or bool((full[~inside] == float("-inf")).all().item())
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                print(f"{name:32s} {v:9s} FAIL {type(e).__name__}: {str(e)[:200]}", flush=True)
                ok[v] = False
                continue
            finally:
                os.environ.pop("QGEMM_PMQA_VARIANT", None)
            if ref is None:
                ref = full if args.clean else out
            same = torch.equal(full if args.clean else out, ref)
            diff = calc_diff(out, out_dg) if out_dg is not None else float("nan")
            good = same and tail_ok and (out_dg is None or diff < 1e-5)
            ok[v] &= good
            r = t_dg / t if t_dg else None
            if r:
                ratios[v].append(r)
            print(f"{name:32s} {v:9s} {t:9.1f} us {nbytes / t / 1e6:5.2f} TB/s dg/qg "
                  f"{(f'{r:.3f}' if r else '-'):>6s} bitwise {'yes' if same else 'NO'} diff {diff:.2g}"
                  f"{'' if good else '  FAIL'}", flush=True)
        del q, cache, w, ctx, ctx2, table, inside, ref, out_dg, res
        torch.cuda.empty_cache()
    if env0 is not None:
        os.environ["QGEMM_PMQA_VARIANT"] = env0
    print("summary (DeepGEMM time / qgemm time, geomean over the rows; > 1: qgemm faster)")
    for v in variants:
        rs = ratios[v]
        g = math.exp(sum(math.log(x) for x in rs) / len(rs)) if rs else float("nan")
        print(f"  {v:9s} dg/qg {g:.3f} over {len(rs)} rows, min {min(rs) if rs else float('nan'):.3f}: "
              f"{'PASS' if ok[v] else 'FAIL'}", flush=True)
    return 0 if all(ok.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
