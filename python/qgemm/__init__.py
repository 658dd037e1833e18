"""qgemm: block-scaled FP8 GEMMs for NVIDIA Hopper (sm_90a).

Tensors are taken through DLPack, so any framework works: PyTorch, JAX, CuPy
(anything with ``__dlpack__`` / ``__dlpack_device__``). Names and call shapes
follow DeepGEMM, so code ports by changing an import::

    import qgemm
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)

Every public name of DeepGEMM exists here with DeepGEMM's arguments (the ones
qgemm lacks raise NotImplementedError saying what is missing);
``import qgemm.deep_gemm as deep_gemm`` also gives DeepGEMM's acceptance of
row-major ``sfa`` under the plain GEMM names. See docs/DEEPGEMM.md.

Computes ``d[m, n] = sum_k (a[m, k] * sfa[m, k // 128]) * (b[n, k] * sfb[n // 128, k // 128])``
in FP32 with two-level accumulation, written as bfloat16:

========  ==============================  ==========================================
tensor    dtype                           layout
========  ==============================  ==========================================
a         float8_e4m3fn  [M, K]           row-major, row stride a multiple of 16 bytes
sfa       float32        [M, ceil(K/128)] M-major: ``get_col_major_tma_aligned_tensor``
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
implementations): under ``torch.compile`` the functions here call them, so
``fullgraph=True`` traces with no graph break, and the ops run on torch's
current stream, capturable in CUDA graphs once compiled (``qgemm.compile`` or
one eager call first). ``import qgemm`` never imports torch.

Errors: bad arguments raise ValueError (TypeError for non-tensors) before any
memory is written; failures of the driver, device, compiler or launch raise
RuntimeError with the library's message (e.g. "libcuda.so.1 not found" on a
machine without a GPU: ``import qgemm`` itself always works).
"""
from __future__ import annotations

import importlib.util
import operator
import sys
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _nvrtc_path  # noqa: F401  (QGEMM_NVRTC_DIR -> pip's NVRTC when unset)
from . import _C
from . import _deepgemm as _dg
from ._deepgemm import (
    get_mk_alignment_for_contiguous_layout,
    get_tc_util,
    get_theoretical_mk_alignment_for_contiguous_layout,
    set_block_size_multiple_of,
    set_ignore_compile_dims,
    set_mk_alignment_for_contiguous_layout,
    set_tc_util,
    transform_sf_into_required_layout,
)
from ._torch_helpers import (
    ceil_to_ue8m0,
    get_col_major_tma_aligned_tensor,
    per_block_cast_to_fp8,
    per_channel_cast_to_fp8,
    per_token_cast_to_fp8,
)

__version__: str = _C.version()
"""The version of the C library this package runs on (``qg_version_string()``, e.g. "0.5.0")."""

__all__ = [
    "__version__",
    "fp8_gemm_nt",
    "m_grouped_fp8_gemm_nt_contiguous",
    "m_grouped_fp8_gemm_nt_masked",
    "get_m_alignment_for_contiguous_layout",
    "get_tma_aligned_size",
    "get_col_major_tma_aligned_tensor",
    "per_token_cast_to_fp8",
    "per_block_cast_to_fp8",
    "set_num_sms",
    "get_num_sms",
    "set_pdl",
    "get_pdl",
    "ceil_div",
    "compile",
    "select_config",
    "get_device_props",
    "register_torch_ops",
    # DeepGEMM's names (docs/DEEPGEMM.md)
    "fp8_fp4_gemm_nt",
    "m_grouped_fp8_fp4_gemm_nt_contiguous",
    "m_grouped_fp8_fp4_gemm_nt_masked",
    "fp8_m_grouped_gemm_nt_masked",
    "get_mn_major_tma_aligned_tensor",
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
    "k_grouped_fp8_gemm_nt_contiguous",
    "ceil_to_ue8m0",
    "align",
] + sorted(_dg.STUBS) + sorted(_dg.CUBLASLT)

Tensor = Any
"""Any DLPack producer: torch.Tensor, jax.Array, cupy.ndarray, numpy.ndarray."""
Pair = Tuple[Tensor, Tensor]
"""An FP8 operand and its float32 scales: (a, sfa) or (b, sfb)."""
StreamLike = Any
"""An integer CUstream handle (0 = legacy default stream), or an object with a
``cuda_stream`` (torch) or ``ptr`` (CuPy) attribute."""
Config = Mapping[str, Any]
"""A forced kernel configuration: keys block_m, block_n, num_stages, multicast
("none", "a", "b"), swizzle_group (0/missing = library default), split_k (0/1
= none, 2: the two CTAs of a cluster each sum half of K; dense, multicast
"none")."""

_KINDS = {"dense": _C.KIND_DENSE, "contiguous": _C.KIND_CONTIGUOUS, "masked": _C.KIND_MASKED,
          "psum": _C.KIND_PSUM, "wgrad": _C.KIND_WGRAD, "k_grouped": _C.KIND_K_GROUPED}
_MULTICAST = {None: 0, "none": 0, "a": 1, "b": 2, 0: 0, 1: 1, 2: 2}
_CONFIG_KEYS = ("block_m", "block_n", "num_stages", "multicast", "swizzle_group", "split_k")
_DERIVED_KEYS = ("num_sms", "smem_bytes")  # what select_config adds; ignored on input


# ---- small helpers (DeepGEMM names) --------------------------------------------


def ceil_div(x: int, y: int) -> int:
    """``ceil(x / y)`` for non-negative integers."""
    return (x + y - 1) // y


def get_m_alignment_for_contiguous_layout() -> int:
    """Rows each expert's segment must be padded to in the contiguous grouped layout."""
    return _C.m_alignment()


def get_tma_aligned_size(x: int, element_size: int) -> int:
    """``x`` rounded up so that ``x * element_size`` is a multiple of 16 bytes (TMA)."""
    x, element_size = _as_int(x, "x"), _as_int(element_size, "element_size")
    if x < 0:
        raise ValueError(f"qgemm: x must be >= 0, got {x}")
    if element_size <= 0 or 16 % element_size != 0:
        raise ValueError(f"qgemm: element_size must divide 16, got {element_size}")
    unit = 16 // element_size
    return ceil_div(x, unit) * unit


def set_num_sms(num_sms: int) -> None:
    """Limit the SMs the persistent kernels use on every device (0 = all SMs).

    Applies to existing contexts and to devices used later. Raises ValueError
    if ``num_sms`` is negative or exceeds the SM count of a device in use or
    of the offline H100 description (132, as many as any Hopper part).
    """
    _C.set_num_sms(_as_int(num_sms, "num_sms"))


def get_num_sms(device: Any = None) -> int:
    """The SMs kernels use: the value of set_num_sms, else the device's SM count.

    ``device``: a CUDA ordinal or a torch.device; default: PyTorch's current
    device when PyTorch is in use, else 0. Needs a GPU unless set_num_sms was called.
    """
    n = _C.num_sms_setting()
    return n if n else _C.get_num_sms(_device_ordinal(device))


def set_pdl(enabled: bool) -> None:
    """Launch GEMMs with programmatic dependent launch (PDL) on every device.

    Off by default. When on, a GEMM may be scheduled while the kernel before it
    on the stream still runs; it waits (``griddepcontrol.wait``) for that
    kernel to complete before it reads any input or writes D, so the inputs may
    come from it. It also lets the next PDL-launched kernel start early, which
    must then wait the same way before reading D (kernels launched without PDL
    are not affected). Works under CUDA graph capture. Applies to existing
    contexts and to devices used later. ``enabled``: True/False (or 1/0).
    """
    if isinstance(enabled, bool):
        on = enabled
    elif isinstance(enabled, int) and enabled in (0, 1):
        on = bool(enabled)
    else:
        raise TypeError(f"qgemm: set_pdl wants True or False, got {enabled!r}")
    _C.set_pdl(on)


def get_pdl() -> bool:
    """Whether GEMMs launch with programmatic dependent launch (see set_pdl)."""
    return _C.pdl_setting()


def get_device_props(device: Any = None) -> Dict[str, Any]:
    """Properties of a CUDA device as the library sees them (name, sm_count, ...)."""
    return _C.device_props(_device_ordinal(device))


# ---- GEMMs ------------------------------------------------------------------------


def fp8_gemm_nt(a: Pair, b: Pair, d: Tensor, c: Any = None, recipe: Any = None,
                recipe_a: Any = None, recipe_b: Any = None, compiled_dims: str = "nk",
                disable_ue8m0_cast: bool = False, *, stream: Optional[StreamLike] = None,
                config: Optional[Config] = None) -> None:
    """Dense ``d = (a * sfa) @ (b * sfb).T`` in bfloat16, for ``a = (a, sfa)``, ``b = (b, sfb)``.

    a [M, K] e4m3, sfa [M, ceil(K/128)] float32 M-major (use
    get_col_major_tma_aligned_tensor), b [N, K] e4m3, sfb [ceil(N/128),
    ceil(K/128)] float32 contiguous, d [M, N] bfloat16 (written).

    ``c``, ``recipe``, ``recipe_a``, ``recipe_b``, ``compiled_dims``,
    ``disable_ue8m0_cast``: DeepGEMM's arguments, in its order
    (docs/DEEPGEMM.md); compiled_dims and disable_ue8m0_cast have no effect.
    ``fp8_fp4_gemm_nt`` also takes DeepGEMM's row-major sfa.

    Weight gradient (DeepGEMM's 1D1D kernel): ``recipe=(1, 1, 128)`` (or
    recipe_a = recipe_b = (1, 128)) takes sfb per column, [N, ceil(K/128)]
    N-major like sfa, and writes FP32 d: ``d = a @ b.T``, or with ``c``
    ``d = c + a @ b.T`` (c is d: accumulated in place by TMA reduce-add,
    the SMs never read d; another FP32 [M, N] tensor: copied into d first).
    Otherwise c must be None.
    """
    if (_FAST_GEMM is not None and c is None and recipe is None and recipe_a is None
            and recipe_b is None and stream is None and config is None and compiled_dims == "nk"
            and disable_ue8m0_cast is False and type(a) is tuple and type(b) is tuple
            and len(a) == 2 and len(b) == 2 and not _COMPILING()
            and _FAST_GEMM(_KIND_DENSE, a[0], a[1], b[0], b[1], d, None, 0, None) is None):
        return
    wgrad = False
    if (c is not None or recipe is not None or recipe_a is not None or recipe_b is not None
            or compiled_dims != "nk" or disable_ue8m0_cast is not False):
        wgrad = _dg.check_gemm_args("fp8_gemm_nt", c, recipe, recipe_a, recipe_b, compiled_dims,
                                    disable_ue8m0_cast)
    if wgrad:
        _gemm(_C.KIND_WGRAD, a, b, d, c, 0, stream, config)
        return
    _gemm(_C.KIND_DENSE, a, b, d, None, 0, stream, config)


def m_grouped_fp8_gemm_nt_contiguous(a: Pair, b: Pair, d: Tensor, grouped_layout: Tensor = None,
                                     recipe: Any = None, recipe_a: Any = None,
                                     recipe_b: Any = None, compiled_dims: str = "nk",
                                     disable_ue8m0_cast: bool = False,
                                     use_psum_layout: bool = False,
                                     ensure_zero_padding: bool = True,
                                     expected_m_for_psum_layout: Optional[int] = None, *,
                                     m_indices: Tensor = None,
                                     stream: Optional[StreamLike] = None,
                                     config: Optional[Config] = None) -> None:
    """Grouped GEMM (MoE prefill/training) with the experts' rows concatenated along M.

    a [M, K], sfa [M, ceil(K/128)] (M-major), b [G, N, K], sfb [G, ceil(N/128),
    ceil(K/128)], d [M, N], grouped_layout (also accepted as ``m_indices=``,
    qgemm's earlier name) int32 [M]: the expert of each row, -1 for a padding
    row (its d row is left untouched). Each expert's segment must start at a
    multiple of get_m_alignment_for_contiguous_layout().

    Every row of a 128-row segment whose first row names an expert is written
    (its -1 rows with their A row times that expert's B: zero for zero rows,
    as DeepGEMM); segments that start with -1, or with any value outside
    [0, G), are left untouched (only each segment's first row is read).

    ``use_psum_layout=True`` (DeepGEMM's PSUM layout): grouped_layout is int32
    [G], the end row of each group; group g starts where the previous group
    ended, rounded up to 128 (0 for the first), and its end is clamped to
    [that start, M], so groups never overlap; rows outside the groups are
    left untouched. ``expected_m_for_psum_layout``: a hint of the rows per group
    (tile choice). The other arguments are DeepGEMM's, in its order
    (docs/DEEPGEMM.md); recipe etc. as in fp8_gemm_nt.
    """
    if (_FAST_GEMM is not None and m_indices is None and recipe is None and recipe_a is None
            and recipe_b is None and use_psum_layout is False and stream is None
            and config is None and compiled_dims == "nk" and disable_ue8m0_cast is False
            and ensure_zero_padding is True and expected_m_for_psum_layout is None
            and type(a) is tuple and type(b) is tuple and len(a) == 2 and len(b) == 2
            and grouped_layout is not None and not _COMPILING()
            and _FAST_GEMM(_KIND_CONTIGUOUS, a[0], a[1], b[0], b[1], d, grouped_layout, 0,
                           None) is None):
        return
    if grouped_layout is None or m_indices is not None:
        grouped_layout = _grouped_layout(grouped_layout, m_indices)
    if (recipe is not None or recipe_a is not None or recipe_b is not None
            or compiled_dims != "nk" or disable_ue8m0_cast is not False
            or use_psum_layout is not False or ensure_zero_padding is not True
            or expected_m_for_psum_layout is not None):
        name = "m_grouped_fp8_gemm_nt_contiguous"
        _check_grouped_recipe(name, recipe, recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast)
        hint = _dg.check_contiguous_args(name, use_psum_layout, ensure_zero_padding,
                                         expected_m_for_psum_layout)
        if use_psum_layout:
            _gemm(_C.KIND_PSUM, a, b, d, grouped_layout, hint, stream, config)
            return
    _gemm(_C.KIND_CONTIGUOUS, a, b, d, grouped_layout, 0, stream, config)


def _check_grouped_recipe(name: str, recipe: Any, recipe_a: Any, recipe_b: Any,
                          compiled_dims: Any, disable_ue8m0_cast: Any) -> None:
    """The grouped GEMMs take the (1, 128, 128) recipe only."""
    if _dg.check_gemm_args(name, None, recipe, recipe_a, recipe_b, compiled_dims,
                           disable_ue8m0_cast):
        arg = "recipe" if recipe is not None else "recipe_b" if recipe_b is not None else "recipe_a"
        raise _dg.unsupported(name, arg, {"recipe": recipe, "recipe_a": recipe_a,
                                          "recipe_b": recipe_b}[arg],
                              "the grouped GEMMs take 128x128 B scales; the 1x128 B recipe "
                              "is the dense weight-gradient GEMM's (fp8_gemm_nt)")


def _grouped_layout(grouped_layout: Any, m_indices: Any) -> Any:
    if m_indices is None:
        if grouped_layout is None:
            raise TypeError("qgemm: m_grouped_fp8_gemm_nt_contiguous: missing grouped_layout "
                            "(the int32 [M] expert index of each row, -1 for padding; "
                            "qgemm also accepts it as m_indices=)")
        return grouped_layout
    if grouped_layout is not None:
        raise TypeError("qgemm: m_grouped_fp8_gemm_nt_contiguous: give grouped_layout or "
                        "m_indices (the same tensor, DeepGEMM's and qgemm's name), not both")
    return m_indices


def m_grouped_fp8_gemm_nt_masked(a: Pair, b: Pair, d: Tensor, masked_m: Tensor, expected_m: int,
                                 recipe: Any = None, recipe_a: Any = None, recipe_b: Any = None,
                                 compiled_dims: str = "nk", disable_ue8m0_cast: bool = False,
                                 *, stream: Optional[StreamLike] = None,
                                 config: Optional[Config] = None) -> None:
    """Grouped GEMM (MoE decoding) with a fixed M_max rows per group.

    a [G, M_max, K], sfa [G, M_max, ceil(K/128)] (M-major within each group),
    b [G, N, K], sfb [G, ceil(N/128), ceil(K/128)], d [G, M_max, N], masked_m
    int32 [G] on the device: the valid rows of each group (rows past it are
    left untouched). expected_m: a host-side hint of the typical rows per group
    (picks the tile shape; the call never reads device memory, so it is CUDA
    graph capturable once compiled). recipe etc.: DeepGEMM's, as in fp8_gemm_nt.
    """
    if (_FAST_GEMM is not None and recipe is None and recipe_a is None and recipe_b is None
            and stream is None and config is None and compiled_dims == "nk"
            and disable_ue8m0_cast is False and type(expected_m) is int
            and type(a) is tuple and type(b) is tuple and len(a) == 2 and len(b) == 2
            and not _COMPILING()
            and _FAST_GEMM(_KIND_MASKED, a[0], a[1], b[0], b[1], d, masked_m, expected_m,
                           None) is None):
        return
    if (recipe is not None or recipe_a is not None or recipe_b is not None
            or compiled_dims != "nk" or disable_ue8m0_cast is not False):
        _check_grouped_recipe("m_grouped_fp8_gemm_nt_masked", recipe, recipe_a, recipe_b,
                              compiled_dims, disable_ue8m0_cast)
    _gemm(_C.KIND_MASKED, a, b, d, masked_m, _as_int(expected_m, "expected_m"), stream, config)


# ---- DeepGEMM's names (docs/DEEPGEMM.md) ----------------------------------------------------


def fp8_fp4_gemm_nt(a: Pair, b: Pair, d: Tensor, c: Any = None, recipe: Any = None,
                    recipe_a: Any = None, recipe_b: Any = None, compiled_dims: str = "nk",
                    disable_ue8m0_cast: bool = False) -> None:
    """DeepGEMM's fp8_fp4_gemm_nt: fp8_gemm_nt taking sfa in any layout, as
    DeepGEMM does (its casts return row-major [M, K/128]: made M-major here,
    a copy unless already so). FP8 only (FP4 is SM100)."""
    name = "fp8_fp4_gemm_nt"
    wgrad = _dg.check_gemm_args(name, c, recipe, recipe_a, recipe_b, compiled_dims,
                                disable_ue8m0_cast)
    a_, sfa = _dg.split_pair(a, "a")
    b_, sfb = _dg.split_pair(b, "b")
    _dg.check_tensors(name, sfa, sfb, d, wgrad)
    if wgrad:  # sfb per column, as DeepGEMM's casts return it: made N-major
        _gemm(_C.KIND_WGRAD, (a_, _dg.mn_major_sf(sfa)), (b_, _dg.mn_major_sf(sfb)), d, c, 0,
              None, None)
        return
    _gemm(_C.KIND_DENSE, (a_, _dg.mn_major_sf(sfa)), (b_, _dg.block_sf(sfb)), d, None, 0, None, None)


def m_grouped_fp8_fp4_gemm_nt_contiguous(a: Pair, b: Pair, d: Tensor, grouped_layout: Tensor,
                                         recipe: Any = None, recipe_a: Any = None,
                                         recipe_b: Any = None, compiled_dims: str = "nk",
                                         disable_ue8m0_cast: bool = False,
                                         use_psum_layout: bool = False,
                                         ensure_zero_padding: bool = True,
                                         expected_m_for_psum_layout: Optional[int] = None) -> None:
    """DeepGEMM's m_grouped_fp8_fp4_gemm_nt_contiguous: m_grouped_fp8_gemm_nt_contiguous
    taking sfa in any layout (made M-major here, as DeepGEMM does)."""
    name = "m_grouped_fp8_fp4_gemm_nt_contiguous"
    _check_grouped_recipe(name, recipe, recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast)
    hint = _dg.check_contiguous_args(name, use_psum_layout, ensure_zero_padding,
                                     expected_m_for_psum_layout)
    a_, sfa = _dg.split_pair(a, "a")
    b_, sfb = _dg.split_pair(b, "b")
    _dg.check_tensors(name, sfa, sfb, d)
    _gemm(_C.KIND_PSUM if use_psum_layout else _C.KIND_CONTIGUOUS,
          (a_, _dg.mn_major_sf(sfa)), (b_, _dg.block_sf(sfb)), d, grouped_layout, hint, None, None)


def m_grouped_fp8_fp4_gemm_nt_masked(a: Pair, b: Pair, d: Tensor, masked_m: Tensor,
                                     expected_m: int, recipe: Any = None, recipe_a: Any = None,
                                     recipe_b: Any = None, compiled_dims: str = "nk",
                                     disable_ue8m0_cast: bool = False) -> None:
    """DeepGEMM's m_grouped_fp8_fp4_gemm_nt_masked: m_grouped_fp8_gemm_nt_masked
    taking sfa [G, M_max, K/128] in any layout (made M-major here, as DeepGEMM does)."""
    name = "m_grouped_fp8_fp4_gemm_nt_masked"
    _check_grouped_recipe(name, recipe, recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast)
    a_, sfa = _dg.split_pair(a, "a")
    b_, sfb = _dg.split_pair(b, "b")
    _dg.check_tensors(name, sfa, sfb, d)
    _gemm(_C.KIND_MASKED, (a_, _dg.mn_major_sf(sfa)), (b_, _dg.block_sf(sfb)), d, masked_m,
          _as_int(expected_m, "expected_m"), None, None)


def k_grouped_fp8_gemm_nt_contiguous(a: Pair, b: Pair, d: Tensor, ks_cpu: Optional[Sequence[int]],
                                     grouped_layout: Tensor, c: Any = None,
                                     recipe: Any = (1, 1, 128), compiled_dims: str = "mn",
                                     use_psum_layout: bool = False) -> None:
    """DeepGEMM's k-grouped weight gradient (SM90, K-major): for every group g,
    ``d[g] = c[g] + A_g @ B_g.T`` (FP32), where the groups split K (the tokens
    of each expert): a is flat, group g's A_g [M, K_g] (row-major) starting
    at element M * (K_0 + ... + K_{g-1}), b likewise [N, K_g]; sfa [M,
    sum(K)/128] and sfb [N, sum(K)/128] (DeepGEMM's per-channel casts,
    transposed) hold each group's 1x128 scales in its K range. ``ks_cpu``:
    the K of each group (multiples of 128; 0 = an empty group, whose d[g] is
    c[g], or zero without c); ``grouped_layout`` the same on the device
    (unused: qgemm reads the host list). One kernel launch runs up to 32
    groups, each with its own A and B tensor maps (the C library's
    qg_k_grouped_fp8_gemm_nt_contiguous); c is d (DeepGEMM's use) accumulates
    in place by TMA reduce-add. Under torch.compile, and for tensors the
    fast path cannot read, each non-empty group is one weight-gradient GEMM.
    """
    name = "k_grouped_fp8_gemm_nt_contiguous"
    if _dg._as_tuple(recipe) != _dg.WGRAD_RECIPE:
        raise _dg.unsupported(name, "recipe", recipe, "the k-grouped GEMM takes (1, 1, 128)")
    if use_psum_layout:
        raise _dg.unsupported(name, "use_psum_layout", use_psum_layout,
                              "the psum form of the k-grouped GEMM is SM100's (DeepGEMM too)")
    if ks_cpu is None or len(ks_cpu) == 0:  # (a numpy array has no truth value)
        raise ValueError(f"qgemm: {name}: ks_cpu (the K of each group, on the host) is required")
    a_, sfa = _dg.split_pair(a, "a")
    b_, sfb = _dg.split_pair(b, "b")
    if getattr(d, "dim", lambda: 0)() != 3:
        raise ValueError(f"qgemm: {name}: d must be a float32 [G, M, N] tensor")
    g, m, n = d.shape
    ks = [_as_int(k, "ks_cpu[i]") for k in ks_cpu]
    if len(ks) != g or any(k < 0 or k % 128 for k in ks):
        raise ValueError(f"qgemm: {name}: ks_cpu must hold G = {g} multiples of 128 (>= 0), "
                         f"got {list(ks_cpu)}")
    total = sum(ks)
    if a_.numel() != total * m or b_.numel() != total * n:
        raise ValueError(f"qgemm: {name}: a must hold M * sum(K) = {total * m} and b N * sum(K) "
                         f"= {total * n} elements, got {a_.numel()} and {b_.numel()}")
    if c is not None and (getattr(c, "shape", None) != d.shape):
        raise ValueError(f"qgemm: {name}: c must be shaped like d {list(d.shape)}")
    a_flat, b_flat = a_.reshape(-1), b_.reshape(-1)
    ops = _TORCH_OPS
    if ops is None and _TORCH_ERROR is None and "torch" in sys.modules:
        ops = _register_torch()
    if ops is not None and not ops.compiling():
        # One launch for every group (the C library's k-grouped GEMM); a
        # tensor the fast path cannot read (a subclass, another framework's)
        # takes the loop below.
        if _C.k_grouped_torch(a_flat, _dg.mn_major_sf(sfa), b_flat, _dg.mn_major_sf(sfb), d, c,
                              ks, None) is None:
            return
    # The groups with work first: every group's call checks the same tensors, so the first
    # one refuses a bad call before anything is written; the empty groups' D after them.
    prefix = 0
    for i, k in enumerate(ks):
        if k:
            c_i = None if c is None else (d[i] if c is d else c[i])
            kb0, kb1 = prefix // 128, (prefix + k) // 128
            a_i = a_flat[prefix * m:(prefix + k) * m].view(m, k)
            b_i = b_flat[prefix * n:(prefix + k) * n].view(n, k)
            fp8_gemm_nt((a_i, _dg.mn_major_sf(sfa[:, kb0:kb1])),
                        (b_i, _dg.mn_major_sf(sfb[:, kb0:kb1])), d[i], c=c_i, recipe=(1, 1, 128))
        prefix += k
    for i, k in enumerate(ks):
        if k == 0 and c is None:
            d[i].zero_()
        elif k == 0 and c is not d:
            d[i].copy_(c[i])


fp8_m_grouped_gemm_nt_masked = m_grouped_fp8_fp4_gemm_nt_masked  # DeepGEMM's legacy alias
get_mn_major_tma_aligned_tensor = get_col_major_tma_aligned_tensor  # DeepGEMM's name
get_k_alignment_for_contiguous_layout = get_mk_alignment_for_contiguous_layout


def align(x: int, y: int) -> int:
    """``x`` rounded up to a multiple of ``y`` (DeepGEMM's utils.align)."""
    return ceil_div(x, y) * y


globals().update(_dg.STUBS)  # DeepGEMM entry points qgemm lacks: NotImplementedError
globals().update(_dg.CUBLASLT)  # DeepGEMM's cuBLASLt names, through torch


def _gemm(kind: int, a: Any, b: Any, d: Any, idx: Any, expected_m: int,
          stream: Optional[StreamLike], config: Optional[Config]) -> None:
    """The three public GEMMs: under torch.compile the custom op; else the
    torch fast path when every tensor is a plain CUDA torch tensor and no
    stream is given; else DLPack."""
    a, sfa = _pair(a, "a")
    b, sfb = _pair(b, "b")
    cfg = _config_tuple(config)
    ops = _TORCH_OPS
    if ops is None and _TORCH_ERROR is None and "torch" in sys.modules:
        ops = _register_torch()
    if ops is not None:
        if ops.compiling():
            ops.call_op(kind, a, sfa, b, sfb, d, idx, expected_m, stream, cfg)
            return
        if stream is None:
            _launch_torch(kind, a, sfa, b, sfb, d, idx, expected_m, cfg, ops)
            return
    _launch_dlpack(kind, a, sfa, b, sfb, d, idx, expected_m, stream, cfg)


def _launch_torch(kind: int, a: Any, sfa: Any, b: Any, sfb: Any, d: Any, idx: Any,
                  expected_m: int, cfg: Any, ops: Any = None) -> None:
    """On the current torch stream: the fast path (_C.gemm_torch) when it takes
    the tensors; tensor subclasses (FakeTensor, ...) go to the custom op when
    `ops` is given (not from inside the op itself); all else to DLPack."""
    if _C.gemm_torch(kind, a, sfa, b, sfb, d, idx, expected_m, cfg) is None:
        return
    if ops is not None and any(ops.is_subclass_tensor(t) for t in (a, sfa, b, sfb, d, idx)):
        ops.call_op(kind, a, sfa, b, sfb, d, idx, expected_m, None, cfg)
        return
    _launch_dlpack(kind, a, sfa, b, sfb, d, idx, expected_m, None, cfg)


def _launch_dlpack(kind: int, a: Any, sfa: Any, b: Any, sfb: Any, d: Any, idx: Any,
                   expected_m: int, stream: Optional[StreamLike], cfg: Any) -> None:
    tensors = [_detach(t) for t in (a, sfa, b, sfb, d, idx)]
    device = _torch_cuda_device(kind, tensors)
    # A torch stream of another device: said here, before torch would
    # synchronize it with the tensors' device while exporting them.
    stream_device = getattr(getattr(stream, "device", None), "index", None)
    if device is not None and isinstance(stream_device, int) and stream_device != device:
        raise ValueError(f"qgemm: stream is a stream of cuda:{stream_device}, the tensors are on "
                         f"cuda:{device}")
    if device is not None and device != sys.modules["torch"].cuda.current_device():
        # torch exports a CUDA tensor through DLPack only while its device is
        # the current one (its stream synchronization uses the current
        # device): export them there, the GEMM runs on their device anyway.
        with sys.modules["torch"].cuda.device(device):
            _export_and_launch(kind, tensors, expected_m, stream, cfg)
        return
    _export_and_launch(kind, tensors, expected_m, stream, cfg)


def _export_and_launch(kind: int, tensors: List[Any], expected_m: int,
                       stream: Optional[StreamLike], cfg: Any) -> None:
    if stream is not None:
        handle, no_sync = _stream_handle(stream), 0
    else:
        handle, no_sync = _current_stream(tensors)
    e4m3_bytes = _torch_fp8_as_bytes(tensors)
    a, sfa, b, sfb, d, idx = tensors
    _C.gemm(kind, a, sfa, b, sfb, d, idx, expected_m, handle, cfg, e4m3_bytes, no_sync)


# ---- PyTorch: fast path and custom ops ------------------------------------------------

_TORCH_OPS: Any = None  # the module qgemm._torch_ops once registered
# The public GEMMs' shortcut, set with _TORCH_OPS: _C.gemm_torch, called straight
# away for the plain call (pairs as tuples, none of DeepGEMM's extra arguments,
# torch's current stream, the heuristic's configuration) while torch.compile is
# not tracing (_COMPILING: torch.compiler.is_compiling). It skips _gemm,
# _pair, _config_tuple and _launch_torch (1843-1885 -> 506-578 ns of Python a
# dense call on the CPU development machine, the C call stubbed out:
# bench/results/2026-11-27-cpu-pylayer). Anything gemm_torch does not take
# (NotImplemented) goes the whole way, which asks it again.
_FAST_GEMM: Any = None
_COMPILING: Callable[[], bool] = bool  # (bool() is False)
_KIND_DENSE, _KIND_CONTIGUOUS, _KIND_MASKED = _C.KIND_DENSE, _C.KIND_CONTIGUOUS, _C.KIND_MASKED
_TORCH_ERROR: Optional[BaseException] = None  # why registration failed (then: DLPack only)
_TORCH_LOCK = threading.Lock()


def _register_torch() -> Any:
    """Register qgemm with the imported torch (the C fast path, the custom ops);
    the module qgemm._torch_ops, or None when torch is not imported or failed."""
    global _TORCH_OPS, _TORCH_ERROR, _FAST_GEMM, _COMPILING
    with _TORCH_LOCK:
        if _TORCH_OPS is None and _TORCH_ERROR is None and "torch" in sys.modules:
            try:
                from . import _torch_ops
                _torch_ops.register(_launch_torch)
                _TORCH_OPS = _torch_ops
                _COMPILING = _torch_ops.compiling
                _FAST_GEMM = _C.gemm_torch
            except Exception as e:  # a broken or partly imported torch: DLPack still works
                _TORCH_ERROR = e
    return _TORCH_OPS


def register_torch_ops() -> None:
    """Register qgemm's GEMMs as torch.library custom ops (``torch.ops.qgemm.*``)
    and enable the fast path for torch tensors. Done by itself: by ``import
    qgemm`` when torch is imported, else as soon as ``import torch`` completes.
    Calling it imports torch and raises what went wrong (e.g. a torch without
    ``torch.library.custom_op``), so it also checks that the ops are there."""
    import torch  # noqa: F401  (what registration needs)
    ops = _register_torch()
    if ops is None:
        raise RuntimeError(f"qgemm: registering with torch failed: {_TORCH_ERROR!r}") \
            from _TORCH_ERROR
    if ops.OPS_ERROR is not None:
        raise RuntimeError(f"qgemm: {ops.OPS_ERROR}")


# ---- kernels and configurations ---------------------------------------------------


def select_config(
    m: int, n: int, k: int, *, kind: str = "dense", num_groups: int = 1, expected_m: int = 0,
    device: Any = None, offline: bool = False, config: Optional[Config] = None,
    accumulate: bool = False,
) -> Dict[str, Any]:
    """The kernel configuration the library picks for a problem (or completes, when
    ``config`` forces one). ``offline=True`` describes an H100 without needing a GPU.
    ``kind``: "dense", "contiguous" (m the total rows), "masked" (m is M_max), "psum" (m the
    total rows; expected_m the hint), "wgrad" (the weight gradient, recipe (1, 1, 128)) or
    "k_grouped" (k the sum of the groups' K, num_groups G). ``accumulate``: "wgrad" and
    "k_grouped" with ``c`` given (D = C + A B^T), a kernel of its own."""
    return _problem_call(_C.select_config, m, n, k, kind, num_groups, expected_m, device,
                         offline, config, accumulate)


def compile(
    m: int, n: int, k: int, *, kind: str = "dense", num_groups: int = 1, expected_m: int = 0,
    device: Any = None, offline: bool = False, config: Optional[Config] = None,
    accumulate: bool = False,
) -> Dict[str, Any]:
    """Compile (or find in the memory/disk cache) the kernel a call with this shape
    will use, so the first real call does not pay for it (and can be captured in a
    CUDA graph). ``offline=True`` compiles for an H100 without a GPU (warms the disk
    cache, e.g. on a build machine). Returns the compiler's report (registers,
    spills, cache_hit, compile_ms, ...).

    A call of a compiled shape does no compilation, no device allocation and no
    host synchronization: it encodes its tensor maps and launches (with
    set_pdl/set_num_sms changes applied once, on the next call after them). The
    first call of a device also creates its context (cuInit, the primary context)
    and the first call of a shape loads the module: compile() does both. ``kind`` and
    ``accumulate``: as in select_config."""
    return _problem_call(_C.compile, m, n, k, kind, num_groups, expected_m, device, offline,
                         config, accumulate)


def _problem_call(fn: Any, m: int, n: int, k: int, kind: str, num_groups: int, expected_m: int,
                  device: Any, offline: bool, config: Optional[Config],
                  accumulate: bool = False) -> Dict[str, Any]:
    """fn (_C.select_config or _C.compile) of the problem, arguments checked."""
    if kind not in _KINDS:
        raise ValueError(f"qgemm: kind must be one of {sorted(_KINDS)}, got {kind!r}")
    ordinal = _C.OFFLINE if offline else _device_ordinal(device)
    return fn(_KINDS[kind], _as_int(m, "m"), _as_int(n, "n"), _as_int(k, "k"),
              _as_int(num_groups, "num_groups"), _as_int(expected_m, "expected_m"), ordinal,
              _config_tuple(config), bool(accumulate))


# ---- argument plumbing --------------------------------------------------------------


def _as_int(x: Any, name: str) -> int:
    if isinstance(x, bool) or not hasattr(x, "__index__"):
        raise TypeError(f"qgemm: {name} must be an int, got {type(x).__name__}")
    return operator.index(x)


def _pair(x: Any, name: str) -> Tuple[Any, Any]:
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise TypeError(f"qgemm: {name} must be a pair ({name}, sf{name}) of the FP8 tensor "
                        f"and its float32 scales, got {type(x).__name__}")
    return x[0], x[1]


def _detach(t: Any) -> Any:
    # torch refuses to export tensors that require grad; the GEMM has no autograd
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(t, torch.Tensor) and t.requires_grad:
        return t.detach()
    return t


_E4M3_SLOTS = (0, 2)  # a and b in _C.gemm's argument order
_TORCH_FP8_DLPACK: Optional[bool] = None  # can this torch export float8 through DLPack?


def _torch_fp8_as_bytes(tensors: List[Any]) -> int:
    """PyTorch < 2.8 refuses to export float8 tensors through DLPack: hand their
    bytes over as uint8 and tell _C to read them as e4m3 (which the torch dtype
    guarantees). Returns the bit mask of the slots so replaced."""
    global _TORCH_FP8_DLPACK
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    mask = 0
    for slot in _E4M3_SLOTS:
        t = tensors[slot]
        if isinstance(t, torch.Tensor) and t.dtype == torch.float8_e4m3fn:
            if _TORCH_FP8_DLPACK is None:
                try:
                    torch.empty(1, dtype=torch.float8_e4m3fn).__dlpack__()
                    _TORCH_FP8_DLPACK = True
                except Exception:
                    _TORCH_FP8_DLPACK = False
            if not _TORCH_FP8_DLPACK:
                tensors[slot] = t.view(torch.uint8)
                mask |= 1 << slot
    return mask


def _stream_handle(stream: StreamLike) -> int:
    if isinstance(stream, bool):
        raise TypeError("qgemm: stream must be an int handle or a stream object, got bool")
    if isinstance(stream, int):
        handle = stream
    elif hasattr(stream, "cuda_stream"):  # torch.cuda.Stream / ExternalStream
        handle = stream.cuda_stream
    elif hasattr(stream, "ptr"):  # cupy.cuda.Stream
        handle = stream.ptr
    elif hasattr(stream, "__int__"):  # cuda-python's CUstream
        handle = int(stream)
    else:
        raise TypeError("qgemm: stream must be an int CUstream handle or an object with a "
                        f"cuda_stream or ptr attribute, got {type(stream).__name__}")
    if not isinstance(handle, int) or handle < 0:
        raise ValueError(f"qgemm: stream handle must be a non-negative int, got {handle!r}")
    return handle


def _current_stream(tensors: Sequence[Any]) -> Tuple[int, int]:
    """The stream the caller's framework would run on (0 = legacy default), and
    the bit mask of the tensors whose producer already orders its work on that
    stream (their __dlpack__ is told not to synchronize: with PyTorch that
    saves an event per tensor).

    Only frameworks already imported are consulted: a tensor of a framework
    that was never imported cannot exist.
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.is_cuda:
                device = t.device
                same = [isinstance(u, torch.Tensor) and u.device == device for u in tensors]
                return torch.cuda.current_stream(device).cuda_stream, _mask(same)
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        for t in tensors:
            if isinstance(t, cupy.ndarray):
                device = t.device
                same = [isinstance(u, cupy.ndarray) and u.device == device for u in tensors]
                with device:
                    return cupy.cuda.get_current_stream().ptr, _mask(same)
    return 0, 0


def _torch_cuda_device(kind: int, tensors: Sequence[Any]) -> Optional[int]:
    """The device index of the CUDA torch tensors among `tensors` (a, sfa, b,
    sfb, d, idx), None when there are none; ValueError naming the argument
    and both devices when they are on two (the extension's own check and
    message, made here because torch refuses to export the second device's
    tensor before the extension could say so)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    device = None
    for slot, t in enumerate(tensors):
        if isinstance(t, torch.Tensor) and t.is_cuda:
            index = t.device.index
            if device is None:
                device = index
            elif index != device:
                name = _C.SLOT_NAMES[slot] if slot < len(_C.SLOT_NAMES) else _C.IDX_NAMES[kind]
                raise ValueError(f"qgemm: all tensors must be on one device: {name} is on "
                                 f"cuda:{index}, the arguments before it are on cuda:{device}")
    return device


def _mask(flags: Sequence[bool]) -> int:
    return sum(1 << i for i, flag in enumerate(flags) if flag)


def _device_ordinal(device: Any) -> int:
    if device is None:
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            return int(torch.cuda.current_device())
        return 0
    if isinstance(device, str):  # "cuda", "cuda:1" (as torch.device takes them)
        kind, sep, index_text = device.partition(":")
        if kind != "cuda" or (sep and not index_text.isdigit()):
            raise ValueError(f"qgemm: device must be a CUDA ordinal, 'cuda' or 'cuda:N', "
                             f"got {device!r}")
        return int(index_text) if sep else _device_ordinal(None)
    device_type = getattr(device, "type", None)
    if isinstance(device_type, str) and device_type != "cuda":
        raise ValueError(f"qgemm: device must be a CUDA device, got {device}")
    index = getattr(device, "index", device) if device_type is not None else device
    if index is None:  # torch.device("cuda"): the current device
        return _device_ordinal(None)
    ordinal = _as_int(index, "device")
    if ordinal < 0:  # -1 would reach the extension's offline slot
        raise ValueError(f"qgemm: device must be >= 0, got {ordinal}")
    return ordinal


def _config_tuple(config: Optional[Config]) -> Optional[Tuple[int, int, int, int, int, int]]:
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise TypeError(f"qgemm: config must be a dict, got {type(config).__name__}")
    unknown = set(config) - set(_CONFIG_KEYS) - set(_DERIVED_KEYS)
    if unknown:
        raise ValueError(f"qgemm: unknown config keys {sorted(unknown)}; "
                         f"known: {list(_CONFIG_KEYS)}")
    multicast = config.get("multicast", 0)
    key = multicast.lower() if isinstance(multicast, str) else multicast
    if key not in _MULTICAST:
        raise ValueError(f"qgemm: config multicast must be 'none', 'a' or 'b', got {multicast!r}")
    return (_as_int(config.get("block_m", 0), "block_m"),
            _as_int(config.get("block_n", 0), "block_n"),
            _as_int(config.get("num_stages", 0), "num_stages"),
            _MULTICAST[key],
            _as_int(config.get("swizzle_group", 0), "swizzle_group"),
            _as_int(config.get("split_k", 0), "split_k"))


class _AfterTorchImport:
    """A one-shot import hook: when qgemm is imported before torch, registers
    qgemm with torch as soon as ``import torch`` completes, so the custom ops
    exist before torch.compile traces a call (registering while dynamo traces
    would break the graph). Costs other imports one name comparison."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        _remove_hook()
        spec = importlib.util.find_spec("torch")  # the real finders, this one removed
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_register(module: Any) -> None:
            exec_module(module)
            _register_torch()  # failures only disable the fast path and the ops

        loader.exec_module = exec_then_register
        return spec


_HOOK = _AfterTorchImport()


def _remove_hook() -> None:
    try:
        sys.meta_path.remove(_HOOK)
    except ValueError:
        pass


if "torch" in sys.modules:  # never imports torch itself
    _register_torch()
else:
    sys.meta_path.insert(0, _HOOK)
