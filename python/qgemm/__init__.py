"""qgemm: block-scaled FP8 GEMMs for NVIDIA Hopper (sm_90a).

Tensors are taken through DLPack, so any framework works: PyTorch, JAX, CuPy
(anything with ``__dlpack__`` / ``__dlpack_device__``). Names and call shapes
follow DeepGEMM, so code ports by changing an import::

    import qgemm
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)

Every public name of DeepGEMM exists here with DeepGEMM's arguments (the ones
qgemm lacks raise NotImplementedError saying what is missing). The drop-in
for DeepGEMM code is ``import qgemm.deep_gemm as deep_gemm`` (with
``deep_gemm.utils`` as DeepGEMM has it); ``import qgemm as deep_gemm`` works
too: the GEMMs take DeepGEMM's row-major ``sfa`` and convert it (a copy per
call) unless ``set_strict(True)`` asks for no hidden copy. See docs/DEEPGEMM.md.

Computes ``d[m, n] = sum_k (a[m, k] * sfa[m, k // 128]) * (b[n, k] * sfb[n // 128, k // 128])``
in FP32 with two-level accumulation, written as bfloat16:

========  ==============================  ==========================================
tensor    dtype                           layout
========  ==============================  ==========================================
a         float8_e4m3fn  [M, K]           row-major, row stride a multiple of 16 bytes
sfa       float32        [M, ceil(K/128)] M-major: ``get_col_major_tma_aligned_tensor`` (else converted)
b         float8_e4m3fn  [N, K]           row-major, row stride a multiple of 16 bytes
sfb       float32        [ceil(N/128), ceil(K/128)]  contiguous
d         bfloat16       [M, N]           row-major (the row stride may be padded)
========  ==============================  ==========================================

K must be a multiple of 16 and N of 8; every tensor 16-byte aligned, all on
one CUDA device. The GEMM runs on that device, whichever device is current
(tensors on two devices: ValueError naming the argument and both devices),
on the caller's current stream: PyTorch's ``torch.cuda.current_stream(device)``
when a tensor is a torch tensor, CuPy's current stream for CuPy arrays, else
the legacy default stream;
``stream=`` (an integer handle, a ``torch.cuda.Stream`` or a ``cupy`` stream)
overrides. Calls are asynchronous on that stream, like any framework op.

PyTorch: plain CUDA torch tensors without ``stream=`` take a fast path that
reads their metadata directly (no DLPack export, no stream object; the same
checks and messages). The GEMMs are also ``torch.library`` custom ops,
``torch.ops.qgemm.fp8_gemm_nt``, ``...m_grouped_fp8_gemm_nt_contiguous`` and
``...m_grouped_fp8_gemm_nt_masked`` (mutating ``d``, with fake
implementations), and so are the other families (``torch.ops.qgemm.bf16_gemm``
for every BF16 GEMM and the per-head einsums, ``einsum_bmk_bnk_mn``,
``fp8_gemm_fp8out``, ``fp8_gemm_swiglu``, the casts, the indexer and HC ops):
under ``torch.compile`` the functions here call them, so
``fullgraph=True`` traces with no graph break, and the ops run on torch's
current stream, capturable in CUDA graphs once compiled (``qgemm.compile`` or
one eager call first). ``import qgemm`` never imports torch.

Casts (qgemm.cast, docs/CAST.md): ``per_token_cast_to_fp8``,
``per_block_cast_to_fp8``, ``per_channel_cast_to_fp8``, the scale layouts
(``get_mn_major_tma_aligned_tensor``, the packed UE8M0 forms,
``transform_sf_into_required_layout``) and ``silu_and_mul_fp8_quant`` run GPU
kernels on CUDA tensors (the custom ops ``torch.ops.qgemm.cast`` /
``sf_layout`` under torch.compile), bit for bit the torch formulas, which CPU
tensors take.

Errors: bad arguments raise ValueError (TypeError for non-tensors) before any
memory is written; failures of the driver, device, compiler or launch raise
RuntimeError with the library's message (e.g. "libcuda.so.1 not found" on a
machine without a GPU: ``import qgemm`` itself always works).
"""
from __future__ import annotations

# Re-exports only: the code lives in the modules named below (their layout and
# how to add a kernel family: the comment at the top of _dispatch.py).
from . import _nvrtc_path  # noqa: F401  (QGEMM_NVRTC_DIR -> pip's NVRTC when unset)
from . import _C
from . import _deepgemm as _dg
from . import _dispatch
from ._deepgemm import (
    get_k_alignment_for_contiguous_layout,
    get_mk_alignment_for_contiguous_layout,
    get_tc_util,
    get_theoretical_mk_alignment_for_contiguous_layout,
    set_block_size_multiple_of,
    set_ignore_compile_dims,
    set_mk_alignment_for_contiguous_layout,
    set_tc_util,
)
from ._dispatch import Config, Pair, StreamLike, Tensor, register_torch_ops
from ._runtime import (
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
from ._torch_helpers import (
    ceil_to_ue8m0,
    pack_ue8m0_to_int,
    per_custom_dims_cast_to_fp8,
    unpack_ue8m0_from_int,
)
from .cast import (
    get_col_major_tma_aligned_tensor,
    get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_mn_major_tma_aligned_tensor,
    per_block_cast_to_fp8,
    per_channel_cast_to_fp8,
    per_token_cast_to_fp8,
    silu_and_mul_fp8_quant,
    transform_sf_into_required_layout,
)
from .bf16 import (
    bf16_gemm_nn,
    bf16_gemm_nt,
    bf16_gemm_tn,
    bf16_gemm_tt,
    k_grouped_bf16_gemm_tn_contiguous,
    m_grouped_bf16_gemm_nn_contiguous,
    m_grouped_bf16_gemm_nt_contiguous,
    m_grouped_bf16_gemm_nt_masked,
)
from .einsum import (
    einsum,
    fp8_einsum,
    fp8_gemm_nt_skip_head_mid,
)
from .fp8 import (
    empty_fp8out,
    empty_swiglu,
    fp8_fp4_gemm_nt,
    fp8_gemm_nt,
    fp8_gemm_nt_fp8out,
    fp8_gemm_nt_swiglu,
    fp8_m_grouped_gemm_nt_masked,
    get_strict,
    interleave_gate_up,
    k_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_fp4_gemm_nt_contiguous,
    m_grouped_fp8_fp4_gemm_nt_masked,
    m_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_gemm_nt_contiguous_fp8out,
    m_grouped_fp8_gemm_nt_contiguous_swiglu,
    m_grouped_fp8_gemm_nt_masked,
    m_grouped_fp8_gemm_nt_masked_fp8out,
    m_grouped_fp8_gemm_nt_masked_swiglu,
    set_strict,
)

from .indexer import (
    fp8_fp4_mqa_logits,
    fp8_fp4_paged_mqa_logits,
    fp8_mqa_logits,
    fp8_paged_mqa_logits,
    get_paged_mqa_logits_metadata,
    tf32_hc_prenorm_gemm,
)

bf16_m_grouped_gemm_nt_masked = m_grouped_bf16_gemm_nt_masked  # DeepGEMM's older name

__version__: str = _C.version()
"""The version of the C library this package runs on (``qg_version_string()``, e.g. "0.5.0")."""

__all__ = [
    "__version__",
    "fp8_gemm_nt",
    "m_grouped_fp8_gemm_nt_contiguous",
    "m_grouped_fp8_gemm_nt_masked",
    # FP8 output (e4m3 D + 1x128 scales, the next GEMM's a pair)
    "fp8_gemm_nt_fp8out",
    "m_grouped_fp8_gemm_nt_contiguous_fp8out",
    "m_grouped_fp8_gemm_nt_masked_fp8out",
    "empty_fp8out",
    # fused SwiGLU (the MoE up-projection writes silu(gate) * up as FP8)
    "fp8_gemm_nt_swiglu",
    "m_grouped_fp8_gemm_nt_contiguous_swiglu",
    "m_grouped_fp8_gemm_nt_masked_swiglu",
    "empty_swiglu",
    "interleave_gate_up",
    "set_strict",
    "get_strict",
    "get_m_alignment_for_contiguous_layout",
    "get_tma_aligned_size",
    "get_col_major_tma_aligned_tensor",
    "per_token_cast_to_fp8",
    "per_custom_dims_cast_to_fp8",
    "per_block_cast_to_fp8",
    "set_num_sms",
    "get_num_sms",
    "set_pdl",
    "get_pdl",
    "ceil_div",
    "compile",
    "select_config",
    "select_config_fp8out",
    "get_device_props",
    "register_torch_ops",
    # DeepGEMM's names (docs/DEEPGEMM.md)
    "fp8_fp4_gemm_nt",
    "m_grouped_fp8_fp4_gemm_nt_contiguous",
    "m_grouped_fp8_fp4_gemm_nt_masked",
    "fp8_m_grouped_gemm_nt_masked",
    "get_mn_major_tma_aligned_tensor",
    "get_mn_major_tma_aligned_packed_ue8m0_tensor",
    "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor",
    "transform_sf_into_required_layout",
    "get_mk_alignment_for_contiguous_layout",
    "get_k_alignment_for_contiguous_layout",
    "get_theoretical_mk_alignment_for_contiguous_layout",
    "set_mk_alignment_for_contiguous_layout",
    "set_tc_util",
    "get_tc_util",
    "set_ignore_compile_dims",
    "set_block_size_multiple_of",
    "per_channel_cast_to_fp8",
    "silu_and_mul_fp8_quant",
    "k_grouped_fp8_gemm_nt_contiguous",
    "ceil_to_ue8m0",
    "pack_ue8m0_to_int",
    "unpack_ue8m0_from_int",
    "align",
    # the BF16 family (DeepGEMM's names)
    "bf16_gemm_nn",
    "bf16_gemm_nt",
    "bf16_gemm_tn",
    "bf16_gemm_tt",
    "k_grouped_bf16_gemm_tn_contiguous",
    "m_grouped_bf16_gemm_nn_contiguous",
    "m_grouped_bf16_gemm_nt_contiguous",
    "m_grouped_bf16_gemm_nt_masked",
    "bf16_m_grouped_gemm_nt_masked",
    "fp8_fp4_mqa_logits",
    "fp8_fp4_paged_mqa_logits",
    "fp8_mqa_logits",
    "fp8_paged_mqa_logits",
    "get_paged_mqa_logits_metadata",
    "tf32_hc_prenorm_gemm",
    # the einsum family (DeepGEMM's names)
    "einsum",
    "fp8_einsum",
    "fp8_gemm_nt_skip_head_mid",
] + sorted(_dg.STUBS) + sorted(_dg.CUBLASLT)

globals().update(_dg.STUBS)  # DeepGEMM entry points qgemm lacks: NotImplementedError
globals().update(_dg.CUBLASLT)  # DeepGEMM's cuBLASLt names, through torch

_dispatch.install_torch_hook()  # registers with torch now or once it is imported (never imports it)
