"""DeepGEMM's API with DeepGEMM's behaviour, on qgemm: ``import qgemm.deep_gemm as deep_gemm``.

A package laid out as DeepGEMM's ``deep_gemm`` is: every qgemm name, DeepGEMM's
GEMM names bound to the variants that, like DeepGEMM, take ``sfa`` in any
layout (DeepGEMM's casts return it row-major) and make it M-major themselves,
whatever ``qgemm.set_strict`` says (``fp8_gemm_nt`` is ``fp8_fp4_gemm_nt``
here), and ``deep_gemm.utils`` (``utils.math``, ``utils.layout``) with the
casts and layout helpers DeepGEMM's users import from it::

    import qgemm.deep_gemm as deep_gemm
    from qgemm.deep_gemm.utils import per_token_cast_to_fp8

To run code that says ``import deep_gemm`` unchanged, alias the modules:
``sys.modules["deep_gemm"] = qgemm.deep_gemm`` and
``sys.modules["deep_gemm.utils"] = qgemm.deep_gemm.utils`` (bench/deepgemm_suite.py
does). See docs/DEEPGEMM.md.
"""
from __future__ import annotations

from .. import _C  # noqa: F401
from .. import _deepgemm as _dg
from .._deepgemm import (  # noqa: F401
    get_k_alignment_for_contiguous_layout,
    get_mk_alignment_for_contiguous_layout,
    get_tc_util,
    get_theoretical_mk_alignment_for_contiguous_layout,
    set_block_size_multiple_of,
    set_ignore_compile_dims,
    set_mk_alignment_for_contiguous_layout,
    set_tc_util,
)
from .._dispatch import register_torch_ops  # noqa: F401
from ..cast import (  # noqa: F401
    get_col_major_tma_aligned_tensor,
    get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_mn_major_tma_aligned_tensor,
    transform_sf_into_required_layout,
)
from .._runtime import (  # noqa: F401
    align,
    ceil_div,
    compile,
    get_device_props,
    get_m_alignment_for_contiguous_layout,
    get_num_sms,
    get_pdl,
    get_tma_aligned_size,
    select_config,
    select_config_fp8out,
    set_num_sms,
    set_pdl,
)
from .._torch_helpers import (  # noqa: F401
    ceil_to_ue8m0,
    pack_ue8m0_to_int,
    per_custom_dims_cast_to_fp8,
    unpack_ue8m0_from_int,
)
from ..cast import (  # noqa: F401
    per_block_cast_to_fp8,
    per_channel_cast_to_fp8,
    per_token_cast_to_fp8,
    silu_and_mul_fp8_quant,
)
from ..bf16 import (  # noqa: F401
    bf16_gemm_nn,
    bf16_gemm_nt,
    bf16_gemm_tn,
    bf16_gemm_tt,
    k_grouped_bf16_gemm_tn_contiguous,
    m_grouped_bf16_gemm_nn_contiguous,
    m_grouped_bf16_gemm_nt_contiguous,
    m_grouped_bf16_gemm_nt_masked,
)
from ..einsum import (  # noqa: F401
    einsum,
    fp8_einsum,
    fp8_gemm_nt_skip_head_mid,
)
from ..fp8 import (  # noqa: F401
    fp8_fp4_gemm_nt,
    fp8_m_grouped_gemm_nt_masked,
    get_strict,
    k_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_fp4_gemm_nt_contiguous,
    m_grouped_fp8_fp4_gemm_nt_masked,
    set_strict,
)
# qgemm's own beyond DeepGEMM (GEMMs writing FP8 for the next layer): the same
# names as the top level, so porting code sees one namespace
from ..fp8 import (  # noqa: F401
    empty_fp8out,
    fp8_gemm_nt_fp8out,
    m_grouped_fp8_gemm_nt_contiguous_fp8out,
    m_grouped_fp8_gemm_nt_masked_fp8out,
    empty_swiglu,
    fp8_gemm_nt_swiglu,
    interleave_gate_up,
    m_grouped_fp8_gemm_nt_contiguous_swiglu,
    m_grouped_fp8_gemm_nt_masked_swiglu,
)
from ..indexer import (  # noqa: F401
    fp8_fp4_mqa_logits,
    fp8_fp4_paged_mqa_logits,
    fp8_mqa_logits,
    fp8_paged_mqa_logits,
    get_paged_mqa_logits_metadata,
    tf32_hc_prenorm_gemm,
)
from . import utils  # noqa: F401

__version__: str = _C.version()
"""The version of the C library (as ``qgemm.__version__``)."""

fp8_gemm_nt = fp8_fp4_gemm_nt
bf16_m_grouped_gemm_nt_masked = m_grouped_bf16_gemm_nt_masked  # DeepGEMM's older name
m_grouped_fp8_gemm_nt_contiguous = m_grouped_fp8_fp4_gemm_nt_contiguous
m_grouped_fp8_gemm_nt_masked = m_grouped_fp8_fp4_gemm_nt_masked

globals().update(_dg.STUBS)  # DeepGEMM entry points qgemm lacks: NotImplementedError
globals().update(_dg.CUBLASLT)  # DeepGEMM's cuBLASLt names, through torch

__all__ = sorted(name for name in globals() if not name.startswith("_") and name not in (
    "annotations", "utils")) + ["__version__"]
