"""PyTorch helpers that prepare qgemm's inputs (pure torch; torch is imported on use).

The casts follow the recipe of DeepSeek-V3 / DeepGEMM's test utilities: one
float32 scale per 1x128 (activations) or 128x128 (weights) block, equal to
the block's absolute maximum / 448 (the largest float8_e4m3fn value), so each
block uses the full FP8 range. A K (or N) that is not a multiple of 128 is
zero-padded for the scale computation only.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

FP8_E4M3_MAX = 448.0
_AMAX_FLOOR = 1e-4  # all-zero blocks get a finite scale instead of 0 / 0


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("qgemm: this helper needs PyTorch (pip install torch)") from e
    return torch


def _ceil_to(x: int, unit: int) -> int:
    return (x + unit - 1) // unit * unit


def _check_tensor(torch: Any, x: Any, name: str, min_dim: int) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"qgemm: {name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_dim:
        raise ValueError(f"qgemm: {name} must have at least {min_dim} dimensions, "
                         f"got shape {list(x.shape)}")


def fp8_as_bytes(torch: Any, tensors: List[Any], slots: Sequence[int]) -> int:
    """The float8_e4m3fn torch tensors at ``slots`` of ``tensors`` as their bytes (uint8
    views), in place: torch < 2.8 exports no float8 through DLPack. Returns the mask of
    the slots so replaced (bit ``slot``), which _C reads as e4m3. ``torch`` is the
    caller's module (code that torch.compile traces must not look it up here)."""
    mask = 0
    for slot in slots:
        t = tensors[slot]
        if isinstance(t, torch.Tensor) and t.dtype == torch.float8_e4m3fn:
            tensors[slot] = t.view(torch.uint8)
            mask |= 1 << slot
    return mask


def ceil_to_ue8m0(x: Any) -> Any:
    """Each (positive) float32 value rounded up to a power of two (an unsigned
    8-bit exponent, UE8M0), as DeepGEMM's utils.ceil_to_ue8m0."""
    torch = _torch()
    bits = x.abs().float().view(torch.int32)
    exponent = ((bits >> 23) & 0xFF) + ((bits & 0x7FFFFF) != 0).int()
    return (exponent.clamp(1, 254) << 23).view(torch.float32)


def per_custom_dims_cast_to_fp8(x: Any, dims: Tuple[int, ...], use_ue8m0: bool) -> Tuple[Any, Any]:
    """Quantize ``x`` to float8_e4m3fn with one float32 scale per index of the
    dimensions ``dims`` (the amax over every other dimension, floored at 1e-4,
    / 448; rounded up to a power of two with ``use_ue8m0``), as DeepGEMM's
    utils.per_custom_dims_cast_to_fp8. Returns ``(x_fp8, scales)``, the scales
    squeezed (``dims=(0,)`` on [seq_len_kv, head_dim]: the per-row kv scales
    of ``fp8_mqa_logits``)."""
    torch = _torch()
    _check_tensor(torch, x, "x", 1)
    keep = {d % x.dim() for d in dims}
    excluded = tuple(i for i in range(x.dim()) if i not in keep)
    amax = x.abs().float().amax(dim=excluded, keepdim=True).clamp(1e-4) if excluded else \
        x.abs().float().clamp(1e-4)
    sf = amax / 448.0
    if use_ue8m0:
        sf = ceil_to_ue8m0(sf)
    return (x * (1.0 / sf)).to(torch.float8_e4m3fn), sf.squeeze()


def pack_ue8m0_to_int(x: Any) -> Any:
    """Power-of-two float32 scales [..., K] (K a multiple of 4) as UE8M0 bytes, four
    to an int32 [..., K/4], the lowest K index in the lowest byte (DeepGEMM's
    utils.pack_ue8m0_to_int). ValueError for anything that is not such a scale."""
    torch = _torch()
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.dim() < 1 \
            or x.size(-1) % 4 != 0:
        raise ValueError("qgemm: pack_ue8m0_to_int: x must be a float32 tensor whose last "
                         "dimension is a multiple of 4, got "
                         f"{getattr(x, 'dtype', type(x).__name__)} {list(getattr(x, 'shape', []))}")
    bits = x.view(torch.int32)
    if bool(((bits < 0) | ((bits & 0x7FFFFF) != 0)).any()):
        raise ValueError("qgemm: pack_ue8m0_to_int: x must hold non-negative powers of two "
                         "(UE8M0: ceil_to_ue8m0 makes them)")
    return (bits >> 23).to(torch.uint8).view(torch.int32)


def unpack_ue8m0_from_int(packed_sf: Any) -> Any:
    """The float32 powers of two of packed UE8M0 scales (int32 [..., K/4] ->
    float32 [..., K]): the inverse of pack_ue8m0_to_int (DeepGEMM's utils name)."""
    torch = _torch()
    if not isinstance(packed_sf, torch.Tensor) or packed_sf.dtype != torch.int32:
        raise ValueError("qgemm: unpack_ue8m0_from_int: packed_sf must be an int32 tensor, got "
                         f"{getattr(packed_sf, 'dtype', type(packed_sf).__name__)}")
    return (packed_sf.view(torch.uint8).to(torch.int32) << 23).view(torch.float32)


def _check_cast_args(func: str, use_ue8m0: Any, gran_k: Any, packed: Any = False) -> None:
    if not isinstance(use_ue8m0, (bool, int)):
        raise TypeError(f"qgemm: {func}: use_ue8m0 must be a bool, got {type(use_ue8m0).__name__}")
    if gran_k != 128:
        raise NotImplementedError(f"qgemm: {func}: gran_k={gran_k!r} is not supported: qgemm's "
                                  "kernels take 128-wide scale blocks only")
    if packed:
        raise NotImplementedError(f"qgemm: {func}: use_packed_ue8m0={packed!r} is not supported: "
                                  "packed int32 UE8M0 scales are SM100's format; qgemm takes "
                                  "float32 scales")


def per_token_cast_to_fp8(x: Any, use_ue8m0: bool = False, gran_k: int = 128,
                          use_packed_ue8m0: bool = False) -> Tuple[Any, Any]:
    """Quantize activations ``x [..., M, K]`` per 1x128 block of each row.

    Returns ``(x_fp8 [..., M, K] float8_e4m3fn, scales [..., M, ceil(K/128)]
    float32)`` with ``x ~= x_fp8 * scales`` blockwise. The scales are
    row-major (as DeepGEMM returns them): pass them through
    ``get_col_major_tma_aligned_tensor`` before a GEMM.

    DeepGEMM's arguments: ``use_ue8m0=True`` rounds each scale up to a power
    of two (still float32, which qgemm's kernels take as any other scale);
    ``gran_k`` must be 128 and ``use_packed_ue8m0`` False (else
    NotImplementedError).
    """
    torch = _torch()
    _check_cast_args("per_token_cast_to_fp8", use_ue8m0, gran_k, use_packed_ue8m0)
    _check_tensor(torch, x, "x", 1)
    k = x.shape[-1]
    kp = _ceil_to(k, 128)
    xf = x.float()
    if kp != k:
        xf = torch.nn.functional.pad(xf, (0, kp - k))
    blocks = xf.view(*x.shape[:-1], kp // 128, 128)
    amax = blocks.abs().amax(dim=-1).clamp(min=_AMAX_FLOOR)
    if use_ue8m0:
        sf = ceil_to_ue8m0(amax / FP8_E4M3_MAX)
        q = (blocks / sf.unsqueeze(-1)).to(torch.float8_e4m3fn)
    else:
        sf = amax / FP8_E4M3_MAX
        q = (blocks * (FP8_E4M3_MAX / amax).unsqueeze(-1)).to(torch.float8_e4m3fn)
    q = q.view(*x.shape[:-1], kp)[..., :k].contiguous()
    return q, sf


def per_channel_cast_to_fp8(x: Any, use_ue8m0: bool = False,
                            gran_k: int = 128) -> Tuple[Any, Any]:
    """Quantize ``x [M, N]`` per 128x1 block of each column (DeepGEMM's
    per_channel_cast_to_fp8; M must be a multiple of 128). Returns ``(x_fp8
    [M, N], scales [M/128, N] float32)``. No qgemm GEMM takes this layout (it
    is DeepGEMM's k-grouped wgrad input); provided for ported test code."""
    torch = _torch()
    _check_cast_args("per_channel_cast_to_fp8", use_ue8m0, gran_k)
    _check_tensor(torch, x, "x", 2)
    if x.dim() != 2 or x.shape[0] % 128 != 0:
        raise ValueError(f"qgemm: per_channel_cast_to_fp8: x must be [M, N] with M a multiple "
                         f"of 128, got shape {list(x.shape)}")
    m, n = x.shape
    blocks = x.float().view(m // 128, 128, n)
    amax = blocks.abs().amax(dim=1).clamp(min=_AMAX_FLOOR)
    sf = amax / FP8_E4M3_MAX
    if use_ue8m0:
        sf = ceil_to_ue8m0(sf)
    q = (blocks / sf.unsqueeze(1)).to(torch.float8_e4m3fn).view(m, n)
    return q, sf


def per_block_cast_to_fp8(x: Any, use_ue8m0: bool = False, gran_k: int = 128) -> Tuple[Any, Any]:
    """Quantize weights ``x [..., N, K]`` per 128x128 block.

    Returns ``(x_fp8 [..., N, K] float8_e4m3fn, scales [..., ceil(N/128),
    ceil(K/128)] float32)``, the scales contiguous as the GEMMs take them
    (a leading group dimension gives the grouped GEMMs' ``b``).
    ``use_ue8m0``/``gran_k``: DeepGEMM's, as in per_token_cast_to_fp8.
    """
    torch = _torch()
    _check_cast_args("per_block_cast_to_fp8", use_ue8m0, gran_k)
    _check_tensor(torch, x, "x", 2)
    *lead, n, k = x.shape
    np_, kp = _ceil_to(n, 128), _ceil_to(k, 128)
    padded = torch.zeros((*lead, np_, kp), dtype=torch.float32, device=x.device)
    padded[..., :n, :k] = x
    blocks = padded.view(*lead, np_ // 128, 128, kp // 128, 128)
    amax = blocks.abs().amax(dim=(-3, -1), keepdim=True).clamp(min=_AMAX_FLOOR)
    if use_ue8m0:
        sf = ceil_to_ue8m0(amax / FP8_E4M3_MAX)
        q = (blocks / sf).to(torch.float8_e4m3fn)
    else:
        sf = amax / FP8_E4M3_MAX
        q = (blocks * (FP8_E4M3_MAX / amax)).to(torch.float8_e4m3fn)
    q = q.view(*lead, np_, kp)[..., :n, :k].contiguous()
    return q, sf.view(*lead, np_ // 128, kp // 128)


def mn_major(torch: Any, x: Any, trust_strides: bool = True, exact: bool = False,
             copy: Any = None) -> Any:
    """float32 scales [M, K/128] or [G, M, K/128] as M-major and TMA-aligned (strides (1, ld),
    ld = M rounded up to 4, group stride K/128 x ld, a 16-byte aligned address): ``x`` itself
    when already so, else a copy.

    ``exact``: every stride must be what the layout says, as DeepGEMM's
    get_mn_major_tma_aligned_tensor checks them; otherwise the strides of size-1
    dimensions, which carry no meaning (torch reports 1 for them) and which the
    kernels' checks skip, are not compared (no copy where none is needed).

    Traceable by torch.compile: while tracing there is no data pointer to prove
    the 16-byte alignment of an ``x`` whose strides already fit, so it is passed
    as it is when ``trust_strides`` (a misaligned one is then refused by the
    GEMM's own check, as in strict mode) and copied otherwise (eager and
    compiled calls then give the same result; the compiled one may copy where
    eager did not). No storage_offset() either: dynamo before torch 2.12 cannot
    trace it.

    ``copy``: called as ``copy(x3, storage, ld)`` to fill the new [G, K/128, ld]
    storage (the GPU transpose of qgemm.cast); True when it did, else the torch
    copy runs."""
    grouped = x.dim() == 3
    x3 = x if grouped else x.unsqueeze(0)
    g, m, kb = x3.shape
    ld = _ceil_to(m, 4)
    wanted = ((g, kb * ld), (m, 1), (kb, ld))
    if all((size <= 1 and not exact) or (i == 0 and not grouped) or x3.stride(i) == stride
           for i, (size, stride) in enumerate(wanted)):
        compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)()
        # a tensor subclass (FakeTensor, ...) has no address to read either
        no_address = compiling or type(x) not in (torch.Tensor, torch.nn.Parameter)
        if trust_strides if no_address else x.data_ptr() % 16 == 0:
            return x
    storage = torch.empty((g, kb, ld), dtype=x.dtype, device=x.device)
    out = storage.transpose(1, 2)[:, :m, :]
    # ``copy(x3, storage, ld)``: the transpose kernel (qgemm.cast) when it can run it
    if copy is None or not copy(x3, storage, ld):
        out.copy_(x3)
    return out if grouped else out.squeeze(0)
