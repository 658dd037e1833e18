"""Scale-factor layouts, as DeepGEMM's ``deep_gemm.utils.layout`` gives them
(torch implementations; torch is imported on use).

- ``get_mn_major_tma_aligned_tensor`` (qgemm's older name:
  ``get_col_major_tma_aligned_tensor``): float32 scales ``[.., MN, SF_K]``
  stored MN-major with the TMA-aligned leading dimension, strides
  ``(SF_K * tma_aligned_mn, 1, tma_aligned_mn)``: what the FP8 GEMMs read as sfa;
- ``get_mn_major_tma_aligned_packed_ue8m0_tensor`` and its k-grouped form:
  power-of-two scales as UE8M0 bytes packed four to an int32 along K, MN-major
  (SM100's scale format in DeepGEMM; DeepGEMM's test_layout runs them on SM90 too);
- ``transform_sf_into_required_layout``: DeepGEMM's SM90 transform.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ._deepgemm import _as_tuple, unsupported
from ._torch_helpers import _check_tensor, _torch, mn_major


def _ceil_div(x: int, y: int) -> int:
    return (x + y - 1) // y


def _tma_aligned(mn: int, element_size: int) -> int:
    unit = 16 // element_size
    return _ceil_div(mn, unit) * unit


def get_col_major_tma_aligned_tensor(x: Any, copy: Any = None) -> Any:
    """The same float32 scales ``x [MN, SF_K]`` or ``[G, MN, SF_K]`` stored MN-major.

    The result has strides ``(1, ld)`` (``(SF_K * ld, 1, ld)`` with groups), where
    ``ld`` is MN rounded up to a multiple of 4 (16 bytes, the TMA alignment):
    the layout the GEMMs read ``sfa`` in, every stride as DeepGEMM's
    get_mn_major_tma_aligned_tensor checks it. ``x`` itself is returned when it
    already has that layout and a 16-byte aligned address; under torch.compile
    (no address to check) a copy is made whenever the strides already fit.
    """
    torch = _torch()
    _check_tensor(torch, x, "x", 2)
    if x.dim() > 3:
        raise ValueError(f"qgemm: x must be [M, K/128] or [G, M, K/128], got shape {list(x.shape)}")
    if x.dtype != torch.float32:
        raise ValueError(f"qgemm: x must be float32 scales, got {x.dtype}")
    return mn_major(torch, x, trust_strides=False, exact=True, copy=copy)


get_mn_major_tma_aligned_tensor = get_col_major_tma_aligned_tensor  # DeepGEMM's name


def _ue8m0_bytes(torch: Any, sf: Any) -> Any:
    """The exponent byte of each float32 scale (UE8M0: the scale is 2 ** (byte - 127))."""
    return (sf.view(torch.int32) >> 23).to(torch.uint8)


def _check_sf(torch: Any, func: str, sf: Any, dims: Sequence[int]) -> None:
    if not isinstance(sf, torch.Tensor):
        raise TypeError(f"qgemm: {func}: sf must be a torch.Tensor, got {type(sf).__name__}")
    if sf.dtype != torch.float32 or sf.dim() not in dims:
        raise ValueError(f"qgemm: {func}: sf must be float32 scales of "
                         f"{' or '.join(map(str, dims))} dimensions, got {sf.dtype} "
                         f"{list(sf.shape)}")


def get_mn_major_tma_aligned_packed_ue8m0_tensor(sf: Any, psum_layout: Any = None,
                                                 pack: Any = None) -> Any:
    """Power-of-two float32 scales ``sf [MN, SF_K]`` or ``[G, MN, SF_K]`` as UE8M0 bytes
    packed four to an int32 along SF_K (the lowest K index in the lowest byte, SF_K
    padded with zero bytes to a multiple of 4), stored MN-major and TMA-aligned:
    int32 ``[.., MN, ceil(SF_K/4)]`` with strides ``(ceil(SF_K/4) * tma_aligned_mn,
    1, tma_aligned_mn)``, as DeepGEMM's. ``psum_layout`` (DeepGEMM: lets its kernel
    skip the gap rows of the psum layout, whose values are then undefined) is
    checked and otherwise has no effect: every row is packed."""
    torch = _torch()
    func = "get_mn_major_tma_aligned_packed_ue8m0_tensor"
    _check_sf(torch, func, sf, (2, 3))
    if psum_layout is not None:
        if not isinstance(psum_layout, torch.Tensor) or psum_layout.dtype != torch.int32 \
                or psum_layout.numel() == 0 or sf.dim() != 2:
            raise ValueError(f"qgemm: {func}: psum_layout must be a non-empty int32 tensor "
                             "and sf 2-dimensional (as DeepGEMM)")
    x3 = sf if sf.dim() == 3 else sf.unsqueeze(0)
    b, mn, k = x3.shape
    tma_mn, packed_k = _tma_aligned(mn, 4), _ceil_div(k, 4)
    if pack is not None:  # the GPU kernel of qgemm.cast: pack(x3, storage, tma_mn)
        storage = torch.empty((b, packed_k, tma_mn), dtype=torch.int32, device=sf.device)
        if pack(x3, storage, tma_mn):
            out = storage.transpose(1, 2)[:, :mn, :]
            return out if sf.dim() == 3 else out.squeeze(0)
    padded = torch.zeros((b, mn, packed_k * 4), dtype=torch.uint8, device=sf.device)
    padded[:, :, :k] = _ue8m0_bytes(torch, x3)
    out = torch.empty((b, packed_k, tma_mn), dtype=torch.int32,
                      device=sf.device).transpose(1, 2)[:, :mn, :]
    out.copy_(padded.view(torch.int32))
    return out if sf.dim() == 3 else out.squeeze(0)


def get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(
        sf: Any, grouped_layout: Any, ks_cpu: Optional[Sequence[int]], gran_k: int,
        k_alignment: int, use_psum_layout: bool = False, pack: Any = None) -> Any:
    """The k-grouped form (the weight gradient's per-channel scales): ``sf [SF_K, MN]``
    float32 contiguous, the groups' scale rows one after another (``ceil(K_g/gran_k)``
    rows for group g, ``ks_cpu`` the groups' K). Each group's rows are packed four to
    an int32 as in get_mn_major_tma_aligned_packed_ue8m0_tensor (padded per group),
    giving int32 ``[sum_g ceil(K_g / (4 gran_k)), MN]`` contiguous, as DeepGEMM's.
    ``grouped_layout`` (int32 [G], the K of each group on the device) is checked, not
    read; ``use_psum_layout`` (SM100's) raises NotImplementedError."""
    torch = _torch()
    func = "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor"
    _check_sf(torch, func, sf, (2,))
    if use_psum_layout:
        raise unsupported(func, "use_psum_layout", use_psum_layout,
                          "the psum form is SM100's (DeepGEMM too)")
    if gran_k not in (32, 128):
        raise ValueError(f"qgemm: {func}: gran_k must be 32 or 128, got {gran_k!r}")
    if not isinstance(k_alignment, int) or k_alignment % 32 != 0:
        raise ValueError(f"qgemm: {func}: k_alignment must be a multiple of 32, "
                         f"got {k_alignment!r}")
    sf_k, mn = sf.shape
    if not sf.is_contiguous() or mn % 4 != 0:
        raise ValueError(f"qgemm: {func}: sf must be contiguous with MN a multiple of 4, got "
                         f"shape {list(sf.shape)} strides {list(sf.stride())}")
    if not isinstance(grouped_layout, torch.Tensor) or grouped_layout.dtype != torch.int32 \
            or not grouped_layout.is_contiguous():
        raise ValueError(f"qgemm: {func}: grouped_layout must be a contiguous int32 tensor")
    num_groups = grouped_layout.numel()
    if num_groups > 128:
        raise ValueError(f"qgemm: {func}: at most 128 groups, got {num_groups}")
    if ks_cpu is None or len(ks_cpu) != num_groups:
        raise ValueError(f"qgemm: {func}: ks_cpu must hold the K of each of the {num_groups} "
                         f"groups, got {ks_cpu!r}")
    ks = [int(k) for k in ks_cpu]
    if any(k < 0 for k in ks) or sum(_ceil_div(k, gran_k) for k in ks) != sf_k:
        raise ValueError(f"qgemm: {func}: the groups' scale rows sum(ceil(K_g/{gran_k})) must "
                         f"be sf's {sf_k}, got ks_cpu {ks}")
    if pack is not None:  # the GPU kernel of qgemm.cast: pack(sf, ks, gran_k) -> tensor or None
        out = pack(sf, ks, gran_k)
        if out is not None:
            return out
    parts, row = [], 0
    for k in ks:
        rows = _ceil_div(k, gran_k)
        packed = _ceil_div(rows, 4)
        if packed == 0:  # an empty group: no rows (K_g = 0)
            continue
        padded = torch.zeros((packed * 4, mn), dtype=torch.uint8, device=sf.device)
        padded[:rows] = _ue8m0_bytes(torch, sf[row:row + rows])
        parts.append(padded.view(packed, 4, mn).permute(0, 2, 1).contiguous()
                     .view(torch.int32).view(packed, mn))
        row += rows
    if not parts:
        return torch.empty((0, mn), dtype=torch.int32, device=sf.device)
    return torch.cat(parts)


def transform_sf_into_required_layout(sf: Any, mn: int, k: int, recipe: Any,
                                      num_groups: Optional[int] = None,
                                      is_sfa: Optional[bool] = None,
                                      disable_ue8m0_cast: bool = False,
                                      psum_layout: Any = None, copy: Any = None) -> Any:
    """DeepGEMM's scale transform, as its SM90 path does it: float32 1x128 scales
    ([G,] mn, ceil(k/128)) become MN-major and TMA-aligned
    (get_mn_major_tma_aligned_tensor); float32 128x128 scales ([G,]
    ceil(mn/128), ceil(k/128)) are returned contiguous (qgemm's kernels read
    them row-major; DeepGEMM also takes their transpose)."""
    func = "transform_sf_into_required_layout"
    if psum_layout is not None:
        raise unsupported(func, "psum_layout", psum_layout,
                          "qgemm does not implement the PSUM layout")
    rec = _as_tuple(recipe)
    if isinstance(rec, tuple) and len(rec) == 3:
        if is_sfa is None:
            raise ValueError(f"qgemm: {func}: a 3-element recipe needs is_sfa=True/False "
                             "(as DeepGEMM)")
        if rec[2] != 128:
            raise unsupported(func, "recipe", recipe, "qgemm implements gran_k 128 only")
        gran_mn = rec[0] if is_sfa else rec[1]
    elif isinstance(rec, tuple) and len(rec) == 2:
        if is_sfa is not None:
            raise ValueError(f"qgemm: {func}: a 2-element recipe takes no is_sfa (as DeepGEMM)")
        if rec[1] != 128:
            raise unsupported(func, "recipe", recipe, "qgemm implements gran_k 128 only")
        gran_mn = rec[0]
    else:
        raise ValueError(f"qgemm: {func}: recipe must be (gran_mn, gran_k) or "
                         f"(gran_m, gran_n, gran_k), got {recipe!r}")
    torch = _torch()
    if not isinstance(sf, torch.Tensor):
        raise TypeError(f"qgemm: {func}: sf must be a torch.Tensor, got {type(sf).__name__}")
    if sf.dtype != torch.float32:
        raise unsupported(func, "sf", sf, "qgemm's SM90 kernels take float32 scales only "
                          "(int32 packed UE8M0 is SM100's format)")
    if gran_mn not in (1, 128):
        raise unsupported(func, "recipe", recipe,
                          f"granularity {gran_mn} along M/N: qgemm implements 1 (A) and 128 (B)")
    rows = mn if gran_mn == 1 else (mn + 127) // 128
    want = ([num_groups] if num_groups is not None else []) + [rows, (k + 127) // 128]
    if list(sf.shape) != want:
        raise ValueError(f"qgemm: {func}: sf must have shape {want} for mn={mn}, k={k}, "
                         f"recipe={recipe!r}, num_groups={num_groups!r}; got {list(sf.shape)}")
    return get_col_major_tma_aligned_tensor(sf, copy) if gran_mn == 1 else sf.contiguous()
