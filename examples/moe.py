"""moe.py -- qgemm from PyTorch: a dense and a contiguous grouped (MoE) FP8 GEMM against bf16 torch.

python examples/moe.py            on a Hopper GPU: run both GEMMs, print each one's diff
python examples/moe.py --trace    anywhere: torch.compile(fullgraph=True) them on meta tensors
"""
import sys
import torch
import qgemm

M, N, K, G = 512, 1024, 2048, 4  # G experts of M // G rows (a multiple of 128: the contiguous layout)


def moe(a, sfa, b, sfb, be, sfbe, m_indices):
    dense = torch.empty(a.shape[0], b.shape[0], dtype=torch.bfloat16, device=a.device)
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), dense)
    grouped = torch.empty_like(dense)  # row m: a[m] @ be[m_indices[m]].T
    qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (be, sfbe), grouped, m_indices)
    return dense, grouped


trace = "--trace" in sys.argv[1:]
dev = "meta" if trace else "cuda"
x, w, we = (torch.randn(*s, K, device=dev, dtype=torch.bfloat16) for s in ((M,), (N,), (G, N)))
m_indices = torch.arange(M, device=dev, dtype=torch.int32) // (M // G)
a, sfa = qgemm.per_token_cast_to_fp8(x)  # 1x128 blocks; the GEMMs read sfa M-major:
args = (a, qgemm.get_col_major_tma_aligned_tensor(sfa), *qgemm.per_block_cast_to_fp8(w),
        *qgemm.per_block_cast_to_fp8(we), m_indices)  # weights: 128x128 blocks
if trace:  # fullgraph=True raises on any graph break
    dense, grouped = torch.compile(moe, fullgraph=True, backend="eager")(*args)
    assert dense.shape == grouped.shape == (M, N) and dense.device.type == "meta"
    print("traced: no graph break")
else:
    dense, grouped = moe(*args)
    refs = (x @ w.T, torch.cat([xg @ we[g].T for g, xg in enumerate(x.split(M // G))]))
    for name, out, ref in zip(("dense", "contiguous"), (dense, grouped), refs):
        o, r = out.double(), ref.double()
        diff = (1 - 2 * (o * r).sum() / (o * o + r * r).sum()).item()
        print(f"{name:10s} {M}x{N}x{K}: diff vs bf16 torch {diff:.2e}")
        assert diff < 1e-2, f"{name}: diff {diff} too large"
