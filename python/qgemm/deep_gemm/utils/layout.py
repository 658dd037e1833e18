"""``deep_gemm.utils.layout``: DeepGEMM's scale-factor layout helpers and the
contiguous-layout alignment, on qgemm's (GPU kernels for CUDA tensors, torch otherwise)."""
from __future__ import annotations

from ..._deepgemm import (  # noqa: F401
    get_k_alignment_for_contiguous_layout,
    get_mk_alignment_for_contiguous_layout,
    get_theoretical_mk_alignment_for_contiguous_layout,
    set_mk_alignment_for_contiguous_layout,
)
from ...cast import (  # noqa: F401
    get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_mn_major_tma_aligned_tensor,
)
from ..._runtime import get_tma_aligned_size  # noqa: F401

from ..._runtime import get_m_alignment_for_contiguous_layout  # noqa: F401,E402

__all__ = ["get_tma_aligned_size", "get_mn_major_tma_aligned_tensor",
           "get_mn_major_tma_aligned_packed_ue8m0_tensor",
           "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor",
           "set_mk_alignment_for_contiguous_layout", "get_mk_alignment_for_contiguous_layout",
           "get_theoretical_mk_alignment_for_contiguous_layout",
           "get_m_alignment_for_contiguous_layout", "get_k_alignment_for_contiguous_layout"]
