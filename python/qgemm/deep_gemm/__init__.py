"""DeepGEMM's API with DeepGEMM's behaviour, on qgemm: ``import qgemm.deep_gemm as deep_gemm``.

Everything in qgemm, with DeepGEMM's GEMM names bound to the variants that,
like DeepGEMM, take ``sfa`` in any layout (DeepGEMM's casts return it
row-major) and make it M-major themselves: ``fp8_gemm_nt`` is
``fp8_fp4_gemm_nt`` here (qgemm's own ``qgemm.fp8_gemm_nt`` keeps requiring
M-major scales and raising ValueError otherwise). See docs/DEEPGEMM.md.
"""
from __future__ import annotations

from . import *  # noqa: F401,F403  (qgemm's names, DeepGEMM's included)
from . import __all__ as _qgemm_all
from . import (
    fp8_fp4_gemm_nt,
    m_grouped_fp8_fp4_gemm_nt_contiguous,
    m_grouped_fp8_fp4_gemm_nt_masked,
)

fp8_gemm_nt = fp8_fp4_gemm_nt
m_grouped_fp8_gemm_nt_contiguous = m_grouped_fp8_fp4_gemm_nt_contiguous
m_grouped_fp8_gemm_nt_masked = m_grouped_fp8_fp4_gemm_nt_masked
fp8_m_grouped_gemm_nt_masked = m_grouped_fp8_fp4_gemm_nt_masked

__all__ = list(_qgemm_all)
