"""The three inference entry points (dense, contiguous, masked) called by kind name, through
the public functions or through their torch.ops.qgemm custom ops. Shared by test_gpu.py and
test_multi_gpu.py."""
import qgemm


def call_kind(kind, a, sfa, b, sfb, d, idx, expected_m, via="public", **kw):
    """kind "dense" | "contiguous" | "masked"; via "op": torch.ops.qgemm (kw unused), else the
    public function with kw (e.g. stream=)."""
    if via == "op":
        import torch
        ops = torch.ops.qgemm
        if kind == "dense":
            ops.fp8_gemm_nt(a, sfa, b, sfb, d)
        elif kind == "contiguous":
            ops.m_grouped_fp8_gemm_nt_contiguous(a, sfa, b, sfb, d, idx)
        else:
            ops.m_grouped_fp8_gemm_nt_masked(a, sfa, b, sfb, d, idx, expected_m)
    elif kind == "dense":
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d, **kw)
    elif kind == "contiguous":
        qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, idx, **kw)
    else:
        qgemm.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), d, idx, expected_m, **kw)
