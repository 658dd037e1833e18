#!/usr/bin/env python3
"""bench/paged_host.py -- where a paged-MQA decode call's CPU time goes (issue 50's events gap).

The events timing of bench/peers_families.py (2x L2 zeroed, start event, the call, end event,
synchronize) waits for the call's CPU time up to the kernel's launch: what a call does after the
launch hides behind the kernel. This probe times, on one row (B256 N1 H32 L8192, bf16 logits),
each part of the call, interleaved, as CPU us (perf_counter) after a synchronize, as events us
after 2x L2 zeroed, and as CPU us in a hot loop (drained every 16 calls):

  dg_full      DeepGEMM's fp8_fp4_paged_mqa_logits
  qg_full      qgemm's (the fast path: the padded buffer to the extension, the view after)
  qg_old       the fast path before 2026-11-29 y: torch.empty + as_strided, then the extension
  qg_C_buf     the extension's call alone, the padded buffer preallocated
  qg_C_decl1   the extension declining at once (q on the CPU): argument parsing + one read
  qg_C_decl7   the extension declining at the 7th tensor (logits on the CPU): 6 described
  torch_empty  the padded buffer's allocation alone
  nothing      the loop's own cost

With --perf N: N hot calls of qg_C_buf alone (for `perf record` around this process).
Needs DeepGEMM importable (source .peers/env.sh). Writes paged-host.json into $OUT (or .).
"""
import json
import os
import statistics
import sys
import time

import torch

import deep_gemm as dg
import qgemm.deep_gemm as qdg
from qgemm import _C
from qgemm import _dispatch as _d


def main() -> int:
    torch.manual_seed(0)
    bsz, nn, h, dim, avg, blk = 256, 1, 32, 128, 8192, 64
    ctx = torch.randint(int(0.7 * avg), int(1.3 * avg), (bsz,), device="cuda", dtype=torch.int)
    nblk = (ctx + blk - 1) // blk
    total, maxb = int(nblk.sum().item()), int(nblk.max().item())
    max_len = maxb * blk
    table = torch.randint(0, total, (bsz, maxb), device="cuda", dtype=torch.int)
    cache = torch.randint(0, 100, (total, blk, 1, dim + 4), device="cuda", dtype=torch.uint8)
    q = torch.randn((bsz, nn, h, dim), device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn((bsz * nn, h), device="cuda")
    lens = ctx.view(bsz, 1).contiguous()
    mq = qdg.get_paged_mqa_logits_metadata(lens, blk, qdg.get_num_sms())
    md = dg.get_paged_mqa_logits_metadata(lens, blk, dg.get_num_sms())
    ld = (max_len + 255) // 256 * 256
    rows = bsz * nn
    bf16 = torch.bfloat16
    buf = torch.empty((rows, ld), device="cuda", dtype=bf16)
    q_cpu = q.cpu()
    l_cpu = torch.empty((rows, ld), dtype=bf16)
    TM = _d.TORCH_MODE

    def qg_old():
        b = torch.empty((rows, ld), dtype=bf16, device=q.device)
        out = b.as_strided((rows, max_len), (ld, 1))
        _C.paged_mqa_logits(q, cache, w, lens, table, mq, out, max_len, 0, 0, TM)
        return out

    parts = {
        "dg_full": lambda: dg.fp8_fp4_paged_mqa_logits((q, None), cache, w, lens, table, md, max_len,
                                                       clean_logits=False, logits_dtype=bf16),
        "qg_full": lambda: qdg.fp8_fp4_paged_mqa_logits((q, None), cache, w, lens, table, mq, max_len,
                                                        clean_logits=False, logits_dtype=bf16),
        "qg_old": qg_old,
        "qg_C_buf": lambda: _C.paged_mqa_logits(q, cache, w, lens, table, mq, buf, max_len, 0, 0, TM),
        "qg_C_decl1": lambda: _C.paged_mqa_logits(q_cpu, cache, w, lens, table, mq, buf, max_len, 0, 0,
                                                  TM),
        "qg_C_decl7": lambda: _C.paged_mqa_logits(q, cache, w, lens, table, mq, l_cpu, max_len, 0, 0,
                                                  TM),
        "torch_empty": lambda: torch.empty((rows, ld), device="cuda", dtype=bf16),
        "nothing": lambda: None,
    }
    assert parts["qg_C_decl1"]() is NotImplemented and parts["qg_C_decl7"]() is NotImplemented
    a, b = parts["qg_full"](), qg_old()
    torch.cuda.synchronize()
    assert torch.equal(a, b), "the new and the old fast path differ"
    if "--perf" in sys.argv:
        n = int(sys.argv[sys.argv.index("--perf") + 1])
        f = parts["qg_C_buf"]
        for i in range(n):
            if i % 16 == 0:
                torch.cuda.synchronize()
            f()
        torch.cuda.synchronize()
        return 0
    small = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32,
                        device="cuda")
    for f in parts.values():
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    res = {k: {"after_sync": [], "events": [], "hot": []} for k in parts}
    for _ in range(int(os.environ.get("N", "80"))):
        for k, f in parts.items():
            small.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            t0 = time.perf_counter_ns()
            f()
            t1 = time.perf_counter_ns()
            e.record()
            e.synchronize()
            res[k]["after_sync"].append((t1 - t0) / 1e3)
            res[k]["events"].append(s.elapsed_time(e) * 1e3)
    for k, f in parts.items():
        for i in range(400):
            if i % 16 == 0:
                torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            f()
            res[k]["hot"].append((time.perf_counter_ns() - t0) / 1e3)
        torch.cuda.synchronize()
    out = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in res.items()}
    for k, d in out.items():
        print(f"{k:12s} after-sync {d['after_sync']:7.1f} us  events {d['events']:7.1f} us  "
              f"hot {d['hot']:6.1f} us")
    with open(os.path.join(os.environ.get("OUT", "."), "paged-host.json"), "w") as fh:
        json.dump({"row": f"B{bsz}xN{nn}xH{h}xL{avg} bf16", "max_len": max_len, "median_us": out}, fh,
                  indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
