"""PyTorch helpers that prepare qgemm's inputs (pure torch; torch is imported on use).

The casts follow the recipe of DeepSeek-V3 / DeepGEMM's test utilities: one
float32 scale per 1x128 (activations) or 128x128 (weights) block, equal to
the block's absolute maximum / 448 (the largest float8_e4m3fn value), so each
block uses the full FP8 range. A K (or N) that is not a multiple of 128 is
zero-padded for the scale computation only.
"""
from __future__ import annotations

from typing import Any, Tuple

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


def per_token_cast_to_fp8(x: Any) -> Tuple[Any, Any]:
    """Quantize activations ``x [..., M, K]`` per 1x128 block of each row.

    Returns ``(x_fp8 [..., M, K] float8_e4m3fn, scales [..., M, ceil(K/128)]
    float32)`` with ``x ~= x_fp8 * scales`` blockwise. The scales are
    row-major (as DeepGEMM returns them): pass them through
    ``get_col_major_tma_aligned_tensor`` before a GEMM.
    """
    torch = _torch()
    _check_tensor(torch, x, "x", 1)
    k = x.shape[-1]
    kp = _ceil_to(k, 128)
    xf = x.float()
    if kp != k:
        xf = torch.nn.functional.pad(xf, (0, kp - k))
    blocks = xf.view(*x.shape[:-1], kp // 128, 128)
    amax = blocks.abs().amax(dim=-1).clamp(min=_AMAX_FLOOR)
    q = (blocks * (FP8_E4M3_MAX / amax).unsqueeze(-1)).to(torch.float8_e4m3fn)
    q = q.view(*x.shape[:-1], kp)[..., :k].contiguous()
    return q, amax / FP8_E4M3_MAX


def per_block_cast_to_fp8(x: Any) -> Tuple[Any, Any]:
    """Quantize weights ``x [..., N, K]`` per 128x128 block.

    Returns ``(x_fp8 [..., N, K] float8_e4m3fn, scales [..., ceil(N/128),
    ceil(K/128)] float32)``, the scales contiguous as the GEMMs take them
    (a leading group dimension gives the grouped GEMMs' ``b``).
    """
    torch = _torch()
    _check_tensor(torch, x, "x", 2)
    *lead, n, k = x.shape
    np_, kp = _ceil_to(n, 128), _ceil_to(k, 128)
    padded = torch.zeros((*lead, np_, kp), dtype=torch.float32, device=x.device)
    padded[..., :n, :k] = x
    blocks = padded.view(*lead, np_ // 128, 128, kp // 128, 128)
    amax = blocks.abs().amax(dim=(-3, -1), keepdim=True).clamp(min=_AMAX_FLOOR)
    q = (blocks * (FP8_E4M3_MAX / amax)).to(torch.float8_e4m3fn)
    q = q.view(*lead, np_, kp)[..., :n, :k].contiguous()
    return q, (amax / FP8_E4M3_MAX).view(*lead, np_ // 128, kp // 128)


def get_col_major_tma_aligned_tensor(x: Any) -> Any:
    """The same float32 scales ``x [M, K/128]`` or ``[G, M, K/128]`` stored M-major.

    The result has strides ``(1, ld)`` (``(kb * ld, 1, ld)`` with groups), where
    ``ld`` is M rounded up to a multiple of 4 (16 bytes, the TMA alignment):
    the layout the GEMMs read ``sfa`` in. ``x`` itself is returned when it
    already has that layout (and a 16-byte aligned address).
    """
    torch = _torch()
    _check_tensor(torch, x, "x", 2)
    if x.dim() > 3:
        raise ValueError(f"qgemm: x must be [M, K/128] or [G, M, K/128], got shape {list(x.shape)}")
    if x.dtype != torch.float32:
        raise ValueError(f"qgemm: x must be float32 scales, got {x.dtype}")
    grouped = x.dim() == 3
    x3 = x if grouped else x.unsqueeze(0)
    g, m, kb = x3.shape
    ld = _ceil_to(m, 4)
    # strides of size-1 dimensions carry no meaning (torch reports 1 for them)
    wanted = ((g, kb * ld), (m, 1), (kb, ld))
    if x.data_ptr() % 16 == 0 and all(
            size <= 1 or x3.stride(i) == stride for i, (size, stride) in enumerate(wanted)):
        return x
    out = torch.empty((g, kb, ld), dtype=x.dtype, device=x.device).transpose(1, 2)[:, :m, :]
    out.copy_(x3)
    return out if grouped else out.squeeze(0)
