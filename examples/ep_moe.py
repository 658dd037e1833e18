"""ep_moe.py -- expert parallelism over NCCL: one MoE expert GEMM step, one process per GPU.

torchrun --nproc_per_node 2 examples/ep_moe.py     two GPUs, each holding half of the experts
torchrun --nproc_per_node 1 examples/ep_moe.py     one GPU holding all of them (also: python ...)
    --json PATH    rank 0 also writes {"gpus", "threads_ok", "ep_ok", "per_gpu_tflops_alone",
                   "per_gpu_tflops_together"} there (bench/device-check.sh: multi-gpu.json)

Each rank holds the FP8 weights (128x128-block scales) of experts / world experts and its own
tokens. A step: route every token to its top-k experts, send each (token, expert) pair to the
rank holding the expert (all_to_all_single, bf16), quantize what arrived (1x128-block scales),
lay it out by expert with each expert's rows padded to qgemm's 128-row alignment, run one
contiguous grouped GEMM (qgemm.m_grouped_fp8_gemm_nt_contiguous), send the rows back
(all_to_all_single) and sum each token's k outputs with its routing weights.

Checked: each rank recomputes its own tokens on its own GPU with every expert's weights (made
one expert at a time from the same seeds, so no rank ever holds more than its half), in float64
on the exactly dequantized FP8 inputs; the step must match within diff < 1e-5 (only FP32
accumulation and bf16 rounding are left). Timed: the grouped GEMM alone (CUDA events, L2
flushed before each run, median), first on each rank in turn while the others wait at a host
barrier ("alone"), then on every rank at once ("together"); TFLOPS count the rows that arrived,
not the padding. The last line printed is one JSON object.
"""
import os

# NVLink multicast stays off, in this process and any it starts (the shared GPUs of a host can
# be put out of service by a program that uses it): set before torch.distributed starts NCCL.
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import argparse  # noqa: E402  (after the environment above)
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import qgemm  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=4096, help="tokens per rank (4096)")
    p.add_argument("--hidden", type=int, default=7168, help="K: the tokens' width (7168)")
    p.add_argument("--out", type=int, default=4096, help="N: each expert's output width (4096)")
    p.add_argument("--experts", type=int, default=32, help="experts in all, split over the ranks")
    p.add_argument("--topk", type=int, default=8, help="experts per token (8)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", type=int, default=30, help="timed GEMMs per measurement (30)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--json", metavar="PATH", help="rank 0 writes the run's summary here")
    return p.parse_args(argv)


# ---- weights and tokens -----------------------------------------------------------------


def expert_weight(e, n, k, seed, device):
    """Expert e's weight [n, k] as FP8 with 128x128-block scales: the same bits on any rank."""
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + e)
    w = torch.randn(n, k, device=device, generator=g) * k ** -0.5
    return qgemm.per_block_cast_to_fp8(w.bfloat16())


def local_experts(first, count, n, k, seed, device):
    """This rank's experts [first, first + count): b [count, n, k], sfb [count, n/128, k/128]."""
    pairs = [expert_weight(first + i, n, k, seed, device) for i in range(count)]
    return torch.stack([b for b, _ in pairs]), torch.stack([sf for _, sf in pairs])


def tokens_and_routes(t, k, experts, topk, seed, rank, device):
    """This rank's tokens x [t, k] (bf16), the experts of each (topk_idx [t, topk]) and
    their weights (topk_w [t, topk], summing to 1)."""
    g = torch.Generator(device=device).manual_seed(seed * 7919 + 1 + rank)
    x = (torch.randn(t, k, device=device, generator=g) *
         torch.exp(torch.randn(t, 1, device=device, generator=g))).bfloat16()
    scores = torch.randn(t, experts, device=device, generator=g).softmax(dim=-1)
    topk_w, topk_idx = scores.topk(topk, dim=-1)
    return x, topk_idx, topk_w / topk_w.sum(dim=-1, keepdim=True)


# ---- the step: dispatch, expert GEMM, combine ---------------------------------------------


def dispatch(x, topk_idx, per_rank, world, group):
    """Send each (token, expert) pair's row to the rank of its expert. Returns the rows
    that arrived (by source rank, then by expert), recv_counts [world, per_rank] (rows from
    each source for each local expert) and what combine() needs to undo it."""
    flat = topk_idx.reshape(-1)  # pair p = token * topk + slot
    order = torch.argsort(flat, stable=True)  # pairs by expert, hence by destination rank
    send_x = x[order // topk_idx.shape[1]]
    send_counts = torch.bincount(flat, minlength=world * per_rank).view(world, per_rank)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    send_splits, recv_splits = send_counts.sum(1).tolist(), recv_counts.sum(1).tolist()
    recv_x = x.new_empty(sum(recv_splits), x.shape[1])
    dist.all_to_all_single(recv_x, send_x, recv_splits, send_splits, group=group)
    return recv_x, recv_counts, (order, send_splits, recv_splits)


class ExpertGemm:
    """The rows that arrived, quantized and laid out for the contiguous grouped GEMM: each
    local expert's rows together, padded with -1 rows to qgemm's alignment."""

    def __init__(self, recv_x, recv_counts, w, sfw):
        world, per_rank = recv_counts.shape
        dev = recv_x.device
        rows = recv_x.shape[0]
        # the local expert of every row that arrived, then the rows by expert
        expert = torch.arange(per_rank, device=dev).repeat(world)
        expert = expert.repeat_interleave(recv_counts.reshape(-1))
        self.perm = torch.argsort(expert, stable=True)
        expert = expert[self.perm]
        count = recv_counts.sum(0)
        align = qgemm.get_m_alignment_for_contiguous_layout()
        padded = (count + align - 1) // align * align
        start = torch.cumsum(padded, 0) - padded  # each expert's first row in the layout
        first = torch.cumsum(count, 0) - count  # ... among the sorted rows
        self.dst = start[expert] + torch.arange(rows, device=dev) - first[expert]
        m = int(padded.sum())
        a = recv_x.new_zeros(m, recv_x.shape[1])
        a[self.dst] = recv_x[self.perm]
        self.m_indices = torch.full((m,), -1, dtype=torch.int32, device=dev)
        self.m_indices[self.dst] = expert.int()
        a, sfa = qgemm.per_token_cast_to_fp8(a)  # zero padding rows stay zero
        self.a = (a, qgemm.get_col_major_tma_aligned_tensor(sfa))
        self.w = (w, sfw)
        self.out = torch.empty(m, w.shape[1], dtype=torch.bfloat16, device=dev)
        self.rows = rows

    def run(self):
        qgemm.m_grouped_fp8_gemm_nt_contiguous(self.a, self.w, self.out, self.m_indices)

    def results(self):
        """Each arrived row's output, in the order the rows arrived."""
        y = torch.empty(self.rows, self.out.shape[1], dtype=self.out.dtype, device=self.out.device)
        y[self.perm] = self.out[self.dst]
        return y


def combine(y_recv, topk_w, undo, group):
    """Send the outputs back and sum each token's k of them with its routing weights (fp32)."""
    order, send_splits, recv_splits = undo
    y_send = y_recv.new_empty(sum(send_splits), y_recv.shape[1])
    dist.all_to_all_single(y_send, y_recv, send_splits, recv_splits, group=group)
    y_pairs = torch.empty_like(y_send)
    y_pairs[order] = y_send
    t, topk = topk_w.shape
    return (y_pairs.view(t, topk, -1).float() * topk_w[..., None]).sum(dim=1)


# ---- the one-GPU reference ----------------------------------------------------------------


def dequant_rows(a, sfa):
    """FP8 rows times their 1x128-block scales (row-major sfa), in float64."""
    return a.double() * sfa.double().repeat_interleave(128, dim=-1)[:, :a.shape[1]]


def dequant_weight(b, sfb):
    """FP8 weight [n, k] times its 128x128-block scales, in float64."""
    n, k = b.shape
    s = sfb.double().repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)[:, :k]
    return b.double() * s


def reference(x, topk_idx, topk_w, experts, n, seed):
    """This rank's step on this GPU alone, every expert in turn, float64 on the exactly
    dequantized inputs (the tokens quantized as the receiving rank quantizes them: per row)."""
    da = dequant_rows(*qgemm.per_token_cast_to_fp8(x))
    y = torch.zeros(x.shape[0], n, dtype=torch.float64, device=x.device)
    for e in range(experts):
        token, slot = (topk_idx == e).nonzero(as_tuple=True)
        if token.numel():
            db = dequant_weight(*expert_weight(e, n, x.shape[1], seed, x.device))
            y.index_add_(0, token, (da[token] @ db.T) * topk_w[token, slot, None].double())
    return y


def calc_diff(x, y):
    """1 - 2<x, y> / (|x|^2 + |y|^2) in float64 (DeepGEMM's measure)."""
    x, y = x.double(), y.double()
    return (1 - 2 * (x * y).sum() / (x * x + y * y).sum()).item()


# ---- timing -------------------------------------------------------------------------------


def time_s(fn, runs, warmup, flush):
    """Median seconds of fn on the current stream (CUDA events, L2 flushed before each run)."""
    for _ in range(warmup):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(runs)]
    for start, end in events:
        flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events) * 1e-3


# ---- main ---------------------------------------------------------------------------------


def main(argv=None):
    args = parse_args(argv)
    for name, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"),
                        ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29511")):
        os.environ.setdefault(name, value)  # run as plain `python`: a world of one
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if args.experts % world:
        sys.exit(f"ep_moe.py: --experts {args.experts} does not split over {world} ranks")
    local = int(os.environ["LOCAL_RANK"])
    if local >= torch.cuda.device_count():
        sys.exit(f"ep_moe.py: local rank {local} needs a CUDA device of its own; torch sees "
                 f"{torch.cuda.device_count()}")
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    host = dist.new_group(backend="gloo")  # barriers and results: no GPU work while one times
    per_rank = args.experts // world
    n, k = args.out, args.hidden

    w, sfw = local_experts(rank * per_rank, per_rank, n, k, args.seed, dev)
    x, topk_idx, topk_w = tokens_and_routes(args.tokens, k, args.experts, args.topk,
                                            args.seed, rank, dev)
    recv_x, recv_counts, undo = dispatch(x, topk_idx, per_rank, world, None)
    gemm = ExpertGemm(recv_x, recv_counts, w, sfw)
    gemm.run()
    y = combine(gemm.results(), topk_w, undo, None)
    want = reference(x, topk_idx, topk_w, args.experts, n, args.seed)
    diff = calc_diff(y, want)
    ok = bool(diff < 1e-5 and not torch.isnan(y).any())

    flops = 2.0 * gemm.rows * n * k
    flush = torch.empty(2 * torch.cuda.get_device_properties(dev).L2_cache_size // 4,
                        dtype=torch.float32, device=dev)
    alone = together = None
    torch.cuda.synchronize()
    for turn in range(world):  # each rank alone, the others waiting at the host barrier
        dist.barrier(group=host)
        if rank == turn:
            alone = flops / time_s(gemm.run, args.runs, args.warmup, flush) / 1e12
        dist.barrier(group=host)
    if world > 1:  # every rank at once
        dist.barrier(group=host)
        together = flops / time_s(gemm.run, args.runs, args.warmup, flush) / 1e12

    mine = {"rank": rank, "ok": ok, "diff": diff, "rows": gemm.rows, "m_total": gemm.a[0].shape[0],
            "alone": alone, "together": together}
    results = [None] * world
    dist.all_gather_object(results, mine, group=host)
    all_ok = all(r["ok"] for r in results)
    if rank == 0:
        def mean(key):
            return None if results[0][key] is None else statistics.fmean(r[key] for r in results)

        for r in results:
            print(f"rank {r['rank']}: {r['rows']} rows arrived ({r['m_total']} with padding), "
                  f"diff {r['diff']:.2e} {'ok' if r['ok'] else 'FAILED'}, grouped GEMM "
                  f"{r['alone']:.0f} TFLOPS alone" +
                  (f", {r['together']:.0f} together" if r["together"] is not None else ""))
        summary = {"gpus": world, "threads_ok": None, "ep_ok": all_ok,
                   "per_gpu_tflops_alone": mean("alone"),
                   "per_gpu_tflops_together": mean("together")}  # issue 31's record
        if args.json:
            with open(args.json, "w") as f:
                json.dump(summary, f, indent=1)
                f.write("\n")
        line = {"ok": all_ok, "gpus": world, "max_diff": max(r["diff"] for r in results),
                "per_gpu_tflops_alone": summary["per_gpu_tflops_alone"],
                "per_gpu_tflops_together": summary["per_gpu_tflops_together"],
                "together_over_alone": (None if world == 1 else statistics.fmean(
                    r["together"] / r["alone"] for r in results)),
                "tflops_alone_by_rank": [r["alone"] for r in results],
                "tflops_together_by_rank": [r["together"] for r in results],
                "tokens_per_rank": args.tokens, "experts": args.experts, "topk": args.topk,
                "n": n, "k": k}
        print(json.dumps(line))
    dist.destroy_process_group()
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
