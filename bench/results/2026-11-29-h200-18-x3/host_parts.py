"""Where a paged-MQA call's CPU time goes when it follows a synchronize (the events regime
of bench/peers_families.py): per part, CPU us (perf_counter) and events us after 2x L2
zeroed, medians of N calls, interleaved."""
import os, sys, time, statistics, json
import torch
sys.path.insert(0, "bench")
import peers_families as pf
import qgemm.deep_gemm as qdg
from qgemm import _C
from qgemm import _dispatch as _d
import deep_gemm as dg

torch.manual_seed(0)
row = {"errors": {}}
case = next(c for c in pf.family_cases() if c["kind"] == "paged-mqa" and c["bsz"] == 256 and c["next_n"] == 1 and c["h"] == 32 and c["avg_kv"] == 8192 and not c["f32"])
bsz, nn, h, dim, avg = 256, 1, 32, 128, 8192
blk = 64
ctx = torch.randint(int(0.7 * avg), int(1.3 * avg), (bsz,), device="cuda", dtype=torch.int)
nblk = (ctx + blk - 1) // blk
total = int(nblk.sum().item()); maxb = int(nblk.max().item()); max_len = maxb * blk
table = torch.randint(0, total, (bsz, maxb), device="cuda", dtype=torch.int)
cache = torch.randint(0, 100, (total, blk, 1, dim + 4), device="cuda", dtype=torch.uint8)
q = torch.randn((bsz, nn, h, dim), device="cuda").to(torch.float8_e4m3fn)
w = torch.randn((bsz * nn, h), device="cuda")
ctx2 = ctx.view(bsz, 1).contiguous()
mq = qdg.get_paged_mqa_logits_metadata(ctx2, blk, qdg.get_num_sms())
md = dg.get_paged_mqa_logits_metadata(ctx2, blk, dg.get_num_sms())
ld = (max_len + 255) // 256 * 256
pre = torch.empty((bsz * nn, ld), device="cuda", dtype=torch.bfloat16)
view = pre.as_strided((bsz * nn, max_len), (ld, 1))
TM = _d.TORCH_MODE
parts = {
    "dg_full": lambda: dg.fp8_fp4_paged_mqa_logits((q, None), cache, w, ctx2, table, md, max_len, clean_logits=False, logits_dtype=torch.bfloat16),
    "qg_full": lambda: qdg.fp8_fp4_paged_mqa_logits((q, None), cache, w, ctx2, table, mq, max_len, clean_logits=False, logits_dtype=torch.bfloat16),
    "qg_C_only": lambda: _C.paged_mqa_logits(q, cache, w, ctx2, table, mq, view, max_len, 0, 0, TM),
    "torch_empty": lambda: torch.empty((bsz * nn, ld), device="cuda", dtype=torch.bfloat16),
    "empty_plus_view": lambda: torch.empty((bsz * nn, ld), device="cuda", dtype=torch.bfloat16).as_strided((bsz * nn, max_len), (ld, 1)),
    "nothing": lambda: None,
}
small = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32, device="cuda")
for f in parts.values():
    for _ in range(3): f()
torch.cuda.synchronize()
res = {k: {"host": [], "ev": [], "hot": []} for k in parts}
for it in range(int(os.environ.get("N", "60"))):
    for k, f in parts.items():
        small.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); t0 = time.perf_counter_ns(); f(); t1 = time.perf_counter_ns(); e.record(); e.synchronize()
        res[k]["host"].append((t1 - t0) / 1e3); res[k]["ev"].append(s.elapsed_time(e) * 1e3)
for k, f in parts.items():  # hot: back to back, drained every 16
    for i in range(200):
        if i % 16 == 0: torch.cuda.synchronize()
        t0 = time.perf_counter_ns(); f(); res[k]["hot"].append((time.perf_counter_ns() - t0) / 1e3)
    torch.cuda.synchronize()
out = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in res.items()}
for k, d in out.items():
    print(f"{k:16s} after-sync host {d['host']:7.1f} us  events {d['ev']:7.1f} us   hot host {d['hot']:6.1f} us")
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "host-parts.json"), "w"), indent=1)
