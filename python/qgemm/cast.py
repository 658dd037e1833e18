"""The cast family: FP8 casts and scale-factor layouts on the GPU (qgemm's cast
kernels, docs/CAST.md), bit for bit the torch formulas they replace.

``per_token_cast_to_fp8``, ``per_block_cast_to_fp8``, ``per_channel_cast_to_fp8``,
``get_mn_major_tma_aligned_tensor`` (``get_col_major_tma_aligned_tensor``),
``get_mn_major_tma_aligned_packed_ue8m0_tensor``, its k-grouped form and
``transform_sf_into_required_layout`` keep DeepGEMM's signatures and results;
on a CUDA torch tensor of a type the kernels take (bfloat16 or float32 input,
float32 scales) they run one kernel on torch's current stream, else (a CPU
tensor, another dtype, an empty tensor, under torch.compile tracing) the torch
implementation (``qgemm._torch_helpers``, ``qgemm._layout``) with the same
results. ``silu_and_mul_fp8_quant`` is ``silu(gate) * up`` and the per-token
cast in one kernel, for every row or the masked / contiguous MoE layouts.

Kernel names (what a profiler shows): qg_per_token_cast_kernel,
qg_per_block_cast_kernel, qg_per_channel_cast_kernel, qg_silu_mul_quant_kernel,
qg_transpose_sf_kernel, qg_pack_fp32_into_ue8m0_kernel,
qg_k_grouped_pack_fp32_into_ue8m0_kernel.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from . import _C
from . import _dispatch as _d
from . import _layout as _L
from . import _torch_helpers as _th
from ._torch_helpers import _check_cast_args, _check_tensor, _torch

_INT_MAX = 2**31 - 1
_ROWS_MAX = 2**30  # the library's limit on rows (m) and columns (k)

# The fast path (issue 51: a small cast's host cost next to a kernel launch's): not traced
# and DeepGEMM's granularity -> one call of _C.cast_new, which takes a plain CUDA torch x
# that the kernels read as it is, allocates the outputs (one buffer, carved into q and sf
# after the launch), launches on torch's current stream and returns them, with the
# shapes, strides, dtypes and bytes of the checked path below; anything else it answers
# NotImplemented having done nothing, and the checked path decides (its messages, its
# torch fallbacks). QGEMM_CAST_VARIANT's word "checked" turns it off (A/B runs).
_FAST_PER_TOKEN = _C.CAST_PER_TOKEN
_FAST_PER_BLOCK = _C.CAST_PER_BLOCK
_FAST_PER_CHANNEL = _C.CAST_PER_CHANNEL
_FAST_SILU_MUL = _C.CAST_SILU_MUL


def _compiling(torch: Any) -> bool:
    return bool(getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)())


def _traced(torch: Any, x: Any) -> bool:
    """x is traced (torch.compile), a tensor subclass (FakeTensor, ...) or a meta
    tensor: the kernels run as the custom ops torch.ops.qgemm.cast / sf_layout
    (their fake implementations for meta tensors)."""
    return _compiling(torch) or type(x) not in (torch.Tensor, torch.nn.Parameter) or x.is_meta


def _ops_ready() -> bool:
    ops = _d.torch_ops()
    return ops is not None and ops.OPS_ERROR is None


def _kernel_ok(torch: Any, x: Any, dtypes: Sequence[Any]) -> bool:
    """The kernels take x: a CUDA torch tensor of one of dtypes (or a meta one:
    the custom op's fake implementation); traced only when the custom ops exist."""
    # (is_cuda / is_meta: reading x.device makes a torch.device, ~4x their host cost)
    if not isinstance(x, torch.Tensor) or x.dtype not in dtypes or not (x.is_cuda or x.is_meta):
        return False
    return not _traced(torch, x) or _ops_ready()


def _run_cast(kind: int, x2: Any, q: Any, sf: Any, aux: Any, ints: Sequence[int]) -> None:
    """_C.cast, or its custom op while traced (q the whole e4m3 output)."""
    torch = _torch()
    if _traced(torch, x2):
        torch.ops.qgemm.cast(kind, x2, q, sf, aux, *ints)
        return
    # the extension's torch mode first (launch_family's docstring): q as it is (e4m3 is 8-bit,
    # all the kernel asks), no uint8 view or reshape where q is already [rows, k]
    if _d.torch_mode_ok(None) and _d.cast_torch_mode(
            _C.cast, kind, (x2, q if q.dim() == 2 else q.view(-1, q.shape[-1]), sf, aux), ints):
        return
    _d.launch_cast(_C.cast, kind, (x2, q.view(torch.uint8).reshape(-1, q.shape[-1]), sf, aux),
                   ints)


def _run_layout(kind: int, sf: Any, out: Any, ks: Any, ints: Sequence[int]) -> None:
    torch = _torch()
    if _traced(torch, sf):
        torch.ops.qgemm.sf_layout(kind, sf, out, ks, *ints)
        return
    _d.launch_cast(_C.sf_layout, kind, (sf, out, ks), ints)


def _ceil_div(x: int, y: int) -> int:
    return (x + y - 1) // y


def _rows(x: Any, rows: int, cols: int) -> Any:
    """x as [rows, cols] with a unit last stride and rows at least cols apart
    (what the kernels read): a view where one exists, else a copy (an expanded
    or transposed tensor); x itself when it is that already (no reshape: ~2 us)."""
    y = x if x.dim() == 2 else x.reshape(rows, cols)
    if (cols > 1 and y.stride(1) != 1) or (rows > 1 and y.stride(0) < cols):
        y = y.contiguous()
    return y


def _quant(kind: int, x2: Any, q: Any, sf: Any, aux: Any, m: int, groups: int, sf_mn: bool,
           sf_ld: int, ue8m0: bool, rows_mask: int) -> None:
    _run_cast(kind, x2, q, sf, aux, (m, groups, int(sf_mn), sf_ld, int(bool(ue8m0)), rows_mask))


def per_token_cast_to_fp8(x: Any, use_ue8m0: bool = False, gran_k: int = 128,
                          use_packed_ue8m0: bool = False) -> Tuple[Any, Any]:
    """Quantize activations ``x [..., M, K]`` per 1x128 block of each row.

    Returns ``(x_fp8 [..., M, K] float8_e4m3fn, scales [..., M, ceil(K/128)]
    float32)`` with ``x ~= x_fp8 * scales`` blockwise (scale = amax / 448 of the
    block, amax at least 1e-4; ``use_ue8m0=True`` rounds it up to a power of
    two). The scales are row-major (as DeepGEMM returns them): pass them
    through ``get_mn_major_tma_aligned_tensor`` before a GEMM. One GPU kernel
    for a CUDA bfloat16/float32 ``x`` (``qg_per_token_cast_kernel``), the torch
    formulas otherwise, bit for bit the same. ``gran_k`` must be 128 and
    ``use_packed_ue8m0`` False (else NotImplementedError).
    """
    if gran_k == 128 and use_packed_ue8m0 is False and not _d.COMPILING():
        r = _C.cast_new(_FAST_PER_TOKEN, x, use_ue8m0, False, None, None)
        if r is not NotImplemented:
            return r
    torch = _torch()
    _check_cast_args("per_token_cast_to_fp8", use_ue8m0, gran_k, use_packed_ue8m0)
    _check_tensor(torch, x, "x", 1)
    k = x.shape[-1]
    rows = x.numel() // k if k else 0
    if not _kernel_ok(torch, x, (torch.bfloat16, torch.float32)) or rows == 0 or \
            rows > _ROWS_MAX or k > _ROWS_MAX:
        return _th.per_token_cast_to_fp8(x, use_ue8m0, gran_k, use_packed_ue8m0)
    x2 = _rows(x, rows, k)
    q = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    sf = torch.empty((*x.shape[:-1], _ceil_div(k, 128)), dtype=torch.float32, device=x.device)
    _quant(_C.CAST_PER_TOKEN, x2, q, sf, None, rows, 1, False, 0, use_ue8m0, 0)
    return q, sf


def per_block_cast_to_fp8(x: Any, use_ue8m0: bool = False, gran_k: int = 128) -> Tuple[Any, Any]:
    """Quantize weights ``x [..., N, K]`` per 128x128 block.

    Returns ``(x_fp8 [..., N, K] float8_e4m3fn, scales [..., ceil(N/128),
    ceil(K/128)] float32)``, the scales contiguous as the GEMMs take them (a
    leading group dimension gives the grouped GEMMs' ``b``). One GPU kernel for
    a CUDA bfloat16/float32 ``x`` (``qg_per_block_cast_kernel``), the torch
    formulas otherwise, bit for bit the same. ``use_ue8m0``/``gran_k`` as in
    per_token_cast_to_fp8.
    """
    if gran_k == 128 and not _d.COMPILING():
        r = _C.cast_new(_FAST_PER_BLOCK, x, use_ue8m0, False, None, None)
        if r is not NotImplemented:
            return r
    torch = _torch()
    _check_cast_args("per_block_cast_to_fp8", use_ue8m0, gran_k)
    _check_tensor(torch, x, "x", 2)
    *lead, n, k = x.shape
    groups = 1
    for d in lead:
        groups *= d
    if not _kernel_ok(torch, x, (torch.bfloat16, torch.float32)) or groups * n * k == 0 or \
            n > _ROWS_MAX or k > _ROWS_MAX or groups > _INT_MAX // 2:
        return _th.per_block_cast_to_fp8(x, use_ue8m0, gran_k)
    x2 = _rows(x, groups * n, k)
    q = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    sf = torch.empty((*lead, _ceil_div(n, 128), _ceil_div(k, 128)), dtype=torch.float32,
                     device=x.device)
    _quant(_C.CAST_PER_BLOCK, x2, q, sf, None, n, groups, False, 0,
           use_ue8m0, 0)
    return q, sf


def per_channel_cast_to_fp8(x: Any, use_ue8m0: bool = False,
                            gran_k: int = 128) -> Tuple[Any, Any]:
    """Quantize ``x [M, N]`` per 128x1 block of each column (DeepGEMM's
    per_channel_cast_to_fp8; M must be a multiple of 128). Returns ``(x_fp8
    [M, N], scales [M/128, N] float32)``, ``x_fp8 = x / scale``. One GPU kernel
    for a CUDA bfloat16/float32 ``x`` (``qg_per_channel_cast_kernel``), the
    torch formulas otherwise, bit for bit the same."""
    if gran_k == 128 and not _d.COMPILING():
        r = _C.cast_new(_FAST_PER_CHANNEL, x, use_ue8m0, False, None, None)
        if r is not NotImplemented:
            return r
    torch = _torch()
    _check_cast_args("per_channel_cast_to_fp8", use_ue8m0, gran_k)
    _check_tensor(torch, x, "x", 2)
    if not _kernel_ok(torch, x, (torch.bfloat16, torch.float32)) or x.dim() != 2 or \
            x.shape[0] % 128 != 0 or x.numel() == 0 or x.shape[0] > _ROWS_MAX or \
            x.shape[1] > _ROWS_MAX:
        return _th.per_channel_cast_to_fp8(x, use_ue8m0, gran_k)
    m, n = x.shape
    q = torch.empty((m, n), dtype=torch.float8_e4m3fn, device=x.device)
    sf = torch.empty((m // 128, n), dtype=torch.float32, device=x.device)
    _quant(_C.CAST_PER_CHANNEL, _rows(x, m, n), q, sf, None, m, 1, False, 0, use_ue8m0, 0)
    return q, sf


def _silu_mul_torch(torch: Any, x: Any) -> Any:
    n = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :n].float()) * x[..., n:].float()


def silu_and_mul_fp8_quant(x: Any, use_ue8m0: bool = False, masked_m: Any = None,
                           m_indices: Any = None, sf_mn_major: bool = False) -> Tuple[Any, Any]:
    """``silu(gate) * up`` quantized per 1x128 block of each row, in one kernel
    (``qg_silu_mul_quant_kernel``; vLLM's ``silu_mul_fp8_quant_deep_gemm``):
    ``x [..., M, 2N]`` holds gate (columns ``[0, N)``) and up (``[N, 2N)``);
    ``y = F.silu(gate.float()) * up.float()`` is cast as per_token_cast_to_fp8
    casts it. Returns ``(y_fp8 [..., M, N] float8_e4m3fn, scales [..., M,
    ceil(N/128)] float32)``; with ``sf_mn_major=True`` the scales are M-major
    and TMA-aligned (the layout of get_mn_major_tma_aligned_tensor, what the
    FP8 GEMMs read as sfa) straight from the kernel.

    MoE layouts: ``masked_m`` (int32 [G], x [G, M, 2N]): rows past
    ``masked_m[g]`` of group g are skipped (their outputs unspecified);
    ``m_indices`` (int32 [M], x [M, 2N]): rows whose index is negative are
    skipped. Both are read by the kernel only (CUDA-graph capturable). A CPU
    ``x`` (or another dtype) takes the torch formulas and computes every row.
    """
    if not _d.COMPILING():
        r = _C.cast_new(_FAST_SILU_MUL, x, use_ue8m0, sf_mn_major, masked_m, m_indices)
        if r is not NotImplemented:
            return r
    torch = _torch()
    func = "silu_and_mul_fp8_quant"
    if not isinstance(use_ue8m0, (bool, int)):
        raise TypeError(f"qgemm: {func}: use_ue8m0 must be a bool, got {type(use_ue8m0).__name__}")
    _check_tensor(torch, x, "x", 1)
    if x.shape[-1] % 2:
        raise ValueError(f"qgemm: {func}: x's last dimension (gate | up) must be even, got "
                         f"shape {list(x.shape)}")
    if masked_m is not None and m_indices is not None:
        raise ValueError(f"qgemm: {func}: give masked_m (masked layout) or m_indices "
                         "(contiguous layout), not both")
    if masked_m is not None:
        if x.dim() != 3:
            raise ValueError(f"qgemm: {func}: with masked_m, x must be [G, M, 2N], got shape "
                             f"{list(x.shape)}")
        if not isinstance(masked_m, torch.Tensor) or masked_m.dtype != torch.int32 or \
                masked_m.shape != (x.shape[0],):
            raise ValueError(f"qgemm: {func}: masked_m must be an int32 tensor of shape "
                             f"[{x.shape[0]}]")
    if m_indices is not None:
        if x.dim() != 2:
            raise ValueError(f"qgemm: {func}: with m_indices, x must be [M, 2N], got shape "
                             f"{list(x.shape)}")
        if not isinstance(m_indices, torch.Tensor) or m_indices.dtype != torch.int32 or \
                m_indices.shape != (x.shape[0],):
            raise ValueError(f"qgemm: {func}: m_indices must be an int32 tensor of shape "
                             f"[{x.shape[0]}]")
    if sf_mn_major and x.dim() not in (2, 3):
        raise ValueError(f"qgemm: {func}: sf_mn_major needs x [M, 2N] or [G, M, 2N], got shape "
                         f"{list(x.shape)}")
    n = x.shape[-1] // 2
    m = x.shape[-2] if x.dim() >= 2 else 1
    rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
    groups = rows // m if m else 0
    idx = masked_m if masked_m is not None else m_indices
    eligible = _kernel_ok(torch, x, (torch.bfloat16, torch.float32)) and rows > 0 and n > 0 and \
        m <= _ROWS_MAX and n <= _ROWS_MAX and groups <= _INT_MAX and \
        (idx is None or idx.device == x.device)
    if not eligible:
        q, sf = _th.per_token_cast_to_fp8(_silu_mul_torch(torch, x), use_ue8m0)
        return q, (_L.get_col_major_tma_aligned_tensor(sf) if sf_mn_major else sf)
    x2 = _rows(x, rows, 2 * n)
    q = torch.empty((*x.shape[:-1], n), dtype=torch.float8_e4m3fn, device=x.device)
    kb = _ceil_div(n, 128)
    mask = 1 if masked_m is not None else 2 if m_indices is not None else 0
    if sf_mn_major:
        ld = (m + 3) // 4 * 4
        storage = torch.empty((groups, kb, ld), dtype=torch.float32, device=x.device)
        _quant(_C.CAST_SILU_MUL, x2, q, storage, idx, m, groups, True, ld,
               use_ue8m0, mask)
        sf = storage.transpose(1, 2)[:, :m, :]
        return q, (sf if x.dim() == 3 else sf.squeeze(0))
    sf = torch.empty((*x.shape[:-1], kb), dtype=torch.float32, device=x.device)
    _quant(_C.CAST_SILU_MUL, x2, q, sf, idx, m, groups, False, 0, use_ue8m0, mask)
    return q, sf


# ---- scale-factor layouts -------------------------------------------------------------


def _transpose_kernel(x3: Any, storage: Any, ld: int) -> bool:
    """x3 [G, MN, SF_K] float32 -> storage [G, SF_K, ld] on the GPU; False when
    the kernel cannot take them (the caller copies with torch)."""
    torch = _torch()
    if not _kernel_ok(torch, x3, (torch.float32,)) or storage.device != x3.device or \
            x3.shape[2] == 0:
        return False
    _run_layout(_C.CAST_SF_MN_MAJOR, x3, storage, None, (ld, 0, 0, 0))
    return True


def _pack_kernel(x3: Any, storage: Any, ld: int) -> bool:
    torch = _torch()
    if not _kernel_ok(torch, x3, (torch.float32,)) or x3.shape[2] == 0:
        return False
    _run_layout(_C.CAST_SF_PACK_UE8M0, x3, storage, None, (ld, 0, 0, 0))
    return True


def _k_grouped_pack_kernel(sf: Any, ks: Sequence[int], gran_k: int) -> Any:
    torch = _torch()
    if not _kernel_ok(torch, sf, (torch.float32,)) or not ks or sf.shape[1] == 0:
        return None
    if not _traced(torch, sf) and sf.data_ptr() % 16:  # the kernel's 16-byte accesses
        return None
    packed = sum(_ceil_div(_ceil_div(k, gran_k), 4) for k in ks)
    out = torch.empty((packed, sf.shape[1]), dtype=torch.int32, device=sf.device)
    if packed == 0:
        return out
    sizes = torch.tensor(list(ks), dtype=torch.int32, device=sf.device)
    _run_layout(_C.CAST_SF_PACK_UE8M0_K_GROUPED, sf, out, sizes, (0, gran_k, 128, 0))
    return out


def get_col_major_tma_aligned_tensor(x: Any) -> Any:
    """The same float32 scales ``x [MN, SF_K]`` or ``[G, MN, SF_K]`` stored MN-major.

    The result has strides ``(1, ld)`` (``(SF_K * ld, 1, ld)`` with groups), where
    ``ld`` is MN rounded up to a multiple of 4 (16 bytes, the TMA alignment):
    the layout the GEMMs read ``sfa`` in, every stride as DeepGEMM's
    get_mn_major_tma_aligned_tensor checks it. ``x`` itself is returned when it
    already has that layout and a 16-byte aligned address; under torch.compile
    (no address to check) a copy is made whenever the strides already fit. The
    copy of a CUDA tensor is one kernel (``qg_transpose_sf_kernel``; its padding
    rows are zero), a torch copy otherwise.
    """
    return _L.get_col_major_tma_aligned_tensor(x, _transpose_kernel)


get_mn_major_tma_aligned_tensor = get_col_major_tma_aligned_tensor  # DeepGEMM's name


def get_mn_major_tma_aligned_packed_ue8m0_tensor(sf: Any, psum_layout: Any = None) -> Any:
    """Power-of-two float32 scales ``sf [MN, SF_K]`` or ``[G, MN, SF_K]`` as UE8M0 bytes
    packed four to an int32 along SF_K (the lowest K index in the lowest byte, SF_K
    padded with zero bytes to a multiple of 4), stored MN-major and TMA-aligned:
    int32 ``[.., MN, ceil(SF_K/4)]`` with strides ``(ceil(SF_K/4) * tma_aligned_mn,
    1, tma_aligned_mn)``, as DeepGEMM's. One kernel for a CUDA tensor
    (``qg_pack_fp32_into_ue8m0_kernel``). ``psum_layout`` (DeepGEMM: lets its
    kernel skip the gap rows of the psum layout, whose values are then
    undefined) is checked and otherwise has no effect: every row is packed."""
    return _L.get_mn_major_tma_aligned_packed_ue8m0_tensor(sf, psum_layout, _pack_kernel)


def get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(
        sf: Any, grouped_layout: Any, ks_cpu: Optional[Sequence[int]], gran_k: int,
        k_alignment: int, use_psum_layout: bool = False) -> Any:
    """The k-grouped form (the weight gradient's per-channel scales): ``sf [SF_K, MN]``
    float32 contiguous, the groups' scale rows one after another (``ceil(K_g/gran_k)``
    rows for group g, ``ks_cpu`` the groups' K). Each group's rows are packed four to
    an int32 as in get_mn_major_tma_aligned_packed_ue8m0_tensor (padded per group),
    giving int32 ``[sum_g ceil(K_g / (4 gran_k)), MN]`` contiguous, as DeepGEMM's.
    One kernel for a CUDA tensor (``qg_k_grouped_pack_fp32_into_ue8m0_kernel``,
    reading the group sizes ``ks_cpu`` copied to the device). ``grouped_layout``
    (int32 [G], the K of each group on the device) is checked, not read;
    ``use_psum_layout`` (SM100's) raises NotImplementedError."""
    return _L.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(
        sf, grouped_layout, ks_cpu, gran_k, k_alignment, use_psum_layout, _k_grouped_pack_kernel)


def transform_sf_into_required_layout(sf: Any, mn: int, k: int, recipe: Any,
                                      num_groups: Optional[int] = None,
                                      is_sfa: Optional[bool] = None,
                                      disable_ue8m0_cast: bool = False,
                                      psum_layout: Any = None) -> Any:
    """DeepGEMM's scale transform, as its SM90 path does it: float32 1x128 scales
    ([G,] mn, ceil(k/128)) become MN-major and TMA-aligned
    (get_mn_major_tma_aligned_tensor, on the GPU for a CUDA tensor); float32
    128x128 scales ([G,] ceil(mn/128), ceil(k/128)) are returned contiguous
    (qgemm's kernels read them row-major; DeepGEMM also takes their transpose)."""
    return _L.transform_sf_into_required_layout(sf, mn, k, recipe, num_groups, is_sfa,
                                                disable_ue8m0_cast, psum_layout,
                                                _transpose_kernel)


__all__ = ["per_token_cast_to_fp8", "per_block_cast_to_fp8", "per_channel_cast_to_fp8",
           "silu_and_mul_fp8_quant", "get_col_major_tma_aligned_tensor",
           "get_mn_major_tma_aligned_tensor", "get_mn_major_tma_aligned_packed_ue8m0_tensor",
           "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor",
           "transform_sf_into_required_layout"]
