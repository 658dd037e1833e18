"""The FP8 GEMM family: block-scaled FP8 GEMMs (DeepGEMM's SM90 recipe).

``fp8_gemm_nt`` (dense, and the weight gradient with recipe (1, 1, 128)),
``m_grouped_fp8_gemm_nt_contiguous`` (with DeepGEMM's psum layout),
``m_grouped_fp8_gemm_nt_masked``, ``k_grouped_fp8_gemm_nt_contiguous``, and
DeepGEMM's ``fp8_fp4_*`` names. Each checks its own arguments and hands the
tensors to the shared dispatch path (_dispatch.py).

Scale layouts: like DeepGEMM, the GEMMs take ``sfa`` as DeepGEMM's casts
return it (row-major ``[.., M, K/128]``) and make it M-major and TMA-aligned
themselves (``get_mn_major_tma_aligned_tensor``: a copy of M x K/128 floats,
an extra kernel and allocation per call); an ``sfb`` given as the transpose of
a row-major tensor is made row-major (a copy of N/128 x K/128 floats). Scales
already in the layout the kernels read pass through untouched (no copy).
``set_strict(True)`` (or ``strict=True`` on a call) turns the conversion off:
a scale tensor in any other layout then raises ValueError, so no call pays
for a hidden copy.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from . import _C
from . import _deepgemm as _dg
from . import _dispatch as _d
from ._dispatch import Config, Pair, StreamLike, Tensor, as_int, gemm, pair
from ._torch_helpers import fp8_as_bytes

_STRICT = [False]
_KIND_DENSE, _KIND_CONTIGUOUS, _KIND_MASKED = _C.KIND_DENSE, _C.KIND_CONTIGUOUS, _C.KIND_MASKED


def set_strict(enabled: bool) -> None:
    """Strict scale layouts for qgemm's own GEMM names (default off).

    Off: ``fp8_gemm_nt`` and the grouped GEMMs take the scales as DeepGEMM
    does, converting a row-major ``sfa`` (what ``per_token_cast_to_fp8``
    returns) to the M-major layout the kernels read, at the cost of a copy
    per call. On: no hidden copy; a scale tensor not already in the kernels'
    layout raises ValueError (prepare it once with
    ``get_col_major_tma_aligned_tensor``). A call's ``strict=`` overrides it.
    """
    if not isinstance(enabled, (bool, int)) or enabled not in (0, 1):
        raise TypeError(f"qgemm: set_strict wants True or False, got {enabled!r}")
    _STRICT[0] = bool(enabled)


def get_strict() -> bool:
    """Whether qgemm's GEMM names refuse scales they would have to convert (see set_strict)."""
    return _STRICT[0]


def _strict(strict: Optional[bool]) -> bool:
    if strict is None:
        return _STRICT[0]
    if not isinstance(strict, (bool, int)) or strict not in (0, 1):
        raise TypeError(f"qgemm: strict must be True, False or None, got {strict!r}")
    return bool(strict)


# The plain call (pairs as tuples, no DeepGEMM extras, no stream, config or strict)
# goes straight to _C.gemm_torch (_dispatch.FAST_GEMM) while torch.compile is not
# tracing. A ValueError there (e.g. a row-major sfa) is raised in strict mode;
# otherwise the call goes the whole way, where the scales are converted and the
# checks run again (so the message is the same when the conversion does not help).


def _convert(a: Any, b: Any, strict: bool, wgrad: bool = False,
             trust_strides: bool = True) -> Tuple[Any, Any]:
    """(a, sfa), (b, sfb) with the scales in the kernels' layout, as DeepGEMM converts
    them (nothing changes in strict mode or for tensors that are not torch tensors)."""
    a_, sfa = pair(a, "a")
    b_, sfb = pair(b, "b")
    if strict:
        return (a_, sfa), (b_, sfb)
    # qgemm's own names (trust_strides) leave tensor subclasses (FakeTensor, DTensor, ...)
    # to the dispatcher as they are; DeepGEMM's names convert whatever torch hands them
    eager_own = trust_strides and not _d.COMPILING()
    if not (eager_own and not _plain(sfb)):
        sfb = _dg.mn_major_sf(sfb, trust_strides) if wgrad else _dg.block_sf(sfb)
    if not (eager_own and not _plain(sfa)):
        sfa = _dg.mn_major_sf(sfa, trust_strides)
    return (a_, sfa), (b_, sfb)


def _plain(x: Any) -> bool:
    torch = _d.torch_module()
    return torch is not None and type(x) in (torch.Tensor, torch.nn.Parameter)


def fp8_gemm_nt(a: Pair, b: Pair, d: Tensor, c: Any = None, recipe: Any = None,
                recipe_a: Any = None, recipe_b: Any = None, compiled_dims: str = "nk",
                disable_ue8m0_cast: bool = False, *, stream: Optional[StreamLike] = None,
                config: Optional[Config] = None, strict: Optional[bool] = None) -> None:
    """Dense ``d = (a * sfa) @ (b * sfb).T`` in bfloat16, for ``a = (a, sfa)``, ``b = (b, sfb)``.

    a [M, K] e4m3, sfa [M, ceil(K/128)] float32, b [N, K] e4m3, sfb
    [ceil(N/128), ceil(K/128)] float32, d [M, N] bfloat16 (written). The
    kernels read sfa M-major (``get_col_major_tma_aligned_tensor``) and sfb
    contiguous; torch scales in another layout (DeepGEMM's casts return sfa
    row-major) are converted as DeepGEMM does, a copy per call, unless
    ``strict`` (or ``set_strict(True)``): then they raise ValueError.

    ``c``, ``recipe``, ``recipe_a``, ``recipe_b``, ``compiled_dims``,
    ``disable_ue8m0_cast``: DeepGEMM's arguments, in its order
    (docs/DEEPGEMM.md); compiled_dims and disable_ue8m0_cast have no effect.

    Weight gradient (DeepGEMM's 1D1D kernel): ``recipe=(1, 1, 128)`` (or
    recipe_a = recipe_b = (1, 128)) takes sfb per column, [N, ceil(K/128)]
    N-major like sfa, and writes FP32 d: ``d = a @ b.T``, or with ``c``
    ``d = c + a @ b.T`` (c is d: accumulated in place by TMA reduce-add,
    the SMs never read d; another FP32 [M, N] tensor: copied into d first).
    Otherwise c must be None. As DeepGEMM: M = 0 or N = 0 returns at once;
    K = 0 sets d to c (or zero).
    """
    if (_d.FAST_GEMM is not None and c is None and recipe is None and recipe_a is None
            and recipe_b is None and stream is None and config is None and strict is None
            and compiled_dims == "nk" and disable_ue8m0_cast is False and type(a) is tuple
            and type(b) is tuple and len(a) == 2 and len(b) == 2 and not _d.COMPILING()):
        try:  # the plain call straight to _C.gemm_torch (see _fast)
            if _d.FAST_GEMM(_KIND_DENSE, a[0], a[1], b[0], b[1], d, None, 0, None) is None:
                return
        except ValueError:
            if _STRICT[0]:
                raise
    wgrad = False
    if (c is not None or recipe is not None or recipe_a is not None or recipe_b is not None
            or compiled_dims != "nk" or disable_ue8m0_cast is not False):
        wgrad = _dg.check_gemm_args("fp8_gemm_nt", c, recipe, recipe_a, recipe_b, compiled_dims,
                                    disable_ue8m0_cast)
    a, b = _convert(a, b, _strict(strict), wgrad)
    if wgrad:
        gemm(_C.KIND_WGRAD, a, b, d, c, 0, stream, config)
        return
    gemm(_C.KIND_DENSE, a, b, d, None, 0, stream, config)


def m_grouped_fp8_gemm_nt_contiguous(a: Pair, b: Pair, d: Tensor, grouped_layout: Tensor = None,
                                     recipe: Any = None, recipe_a: Any = None,
                                     recipe_b: Any = None, compiled_dims: str = "nk",
                                     disable_ue8m0_cast: bool = False,
                                     use_psum_layout: bool = False,
                                     ensure_zero_padding: bool = True,
                                     expected_m_for_psum_layout: Optional[int] = None, *,
                                     m_indices: Tensor = None,
                                     stream: Optional[StreamLike] = None,
                                     config: Optional[Config] = None,
                                     strict: Optional[bool] = None) -> None:
    """Grouped GEMM (MoE prefill/training) with the experts' rows concatenated along M.

    a [M, K], sfa [M, ceil(K/128)] (M-major, or converted as in fp8_gemm_nt),
    b [G, N, K], sfb [G, ceil(N/128), ceil(K/128)], d [M, N], grouped_layout
    (also accepted as ``m_indices=``, qgemm's earlier name) int32 [M]: the
    expert of each row, -1 for a padding row (its d row is left untouched).
    Each expert's segment must start at a multiple of
    get_m_alignment_for_contiguous_layout().

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
    (docs/DEEPGEMM.md); recipe, strict etc. as in fp8_gemm_nt.
    """
    if (_d.FAST_GEMM is not None and m_indices is None and recipe is None and recipe_a is None
            and recipe_b is None and use_psum_layout is False and stream is None
            and config is None and strict is None and compiled_dims == "nk"
            and disable_ue8m0_cast is False and ensure_zero_padding is True
            and expected_m_for_psum_layout is None and type(a) is tuple and type(b) is tuple
            and len(a) == 2 and len(b) == 2 and grouped_layout is not None
            and not _d.COMPILING()):
        try:
            if _d.FAST_GEMM(_KIND_CONTIGUOUS, a[0], a[1], b[0], b[1], d, grouped_layout, 0,
                            None) is None:
                return
        except ValueError:
            if _STRICT[0]:
                raise
    if grouped_layout is None or m_indices is not None:
        grouped_layout = _grouped_layout(grouped_layout, m_indices)
    kind, hint = _C.KIND_CONTIGUOUS, 0
    if (recipe is not None or recipe_a is not None or recipe_b is not None
            or compiled_dims != "nk" or disable_ue8m0_cast is not False
            or use_psum_layout is not False or ensure_zero_padding is not True
            or expected_m_for_psum_layout is not None):
        name = "m_grouped_fp8_gemm_nt_contiguous"
        _check_grouped_recipe(name, recipe, recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast)
        hint = _dg.check_contiguous_args(name, use_psum_layout, ensure_zero_padding,
                                         expected_m_for_psum_layout)
        if use_psum_layout:
            kind = _C.KIND_PSUM
    a, b = _convert(a, b, _strict(strict))
    gemm(kind, a, b, d, grouped_layout, hint, stream, config)


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
                                 config: Optional[Config] = None,
                                 strict: Optional[bool] = None) -> None:
    """Grouped GEMM (MoE decoding) with a fixed M_max rows per group.

    a [G, M_max, K], sfa [G, M_max, ceil(K/128)] (M-major within each group,
    or converted as in fp8_gemm_nt), b [G, N, K], sfb [G, ceil(N/128),
    ceil(K/128)], d [G, M_max, N], masked_m int32 [G] on the device: the
    valid rows of each group (rows past it are left untouched). expected_m: a
    host-side hint of the typical rows per group (picks the tile shape; the
    call never reads device memory, so it is CUDA graph capturable once
    compiled). recipe, strict etc.: as in fp8_gemm_nt.
    """
    if (_d.FAST_GEMM is not None and recipe is None and recipe_a is None and recipe_b is None
            and stream is None and config is None and strict is None and compiled_dims == "nk"
            and disable_ue8m0_cast is False and type(expected_m) is int
            and -2**31 <= expected_m < 2**31
            and type(a) is tuple and type(b) is tuple and len(a) == 2 and len(b) == 2
            and not _d.COMPILING()):
        try:
            if _d.FAST_GEMM(_KIND_MASKED, a[0], a[1], b[0], b[1], d, masked_m, expected_m,
                            None) is None:
                return
        except ValueError:
            if _STRICT[0]:
                raise
    if (recipe is not None or recipe_a is not None or recipe_b is not None
            or compiled_dims != "nk" or disable_ue8m0_cast is not False):
        _check_grouped_recipe("m_grouped_fp8_gemm_nt_masked", recipe, recipe_a, recipe_b,
                              compiled_dims, disable_ue8m0_cast)
    expected_m = as_int(expected_m, "expected_m")
    a, b = _convert(a, b, _strict(strict))
    gemm(_C.KIND_MASKED, a, b, d, masked_m, expected_m, stream, config)


# ---- DeepGEMM's names (docs/DEEPGEMM.md) ----------------------------------------------------


def fp8_fp4_gemm_nt(a: Pair, b: Pair, d: Tensor, c: Any = None, recipe: Any = None,
                    recipe_a: Any = None, recipe_b: Any = None, compiled_dims: str = "nk",
                    disable_ue8m0_cast: bool = False) -> None:
    """DeepGEMM's fp8_fp4_gemm_nt: fp8_gemm_nt taking sfa in any layout, as
    DeepGEMM does (its casts return row-major [M, K/128]: made M-major here,
    a copy unless already so, also under torch.compile), whatever set_strict
    says, and DeepGEMM's NotImplementedError for what only its SM100 or FP32
    paths take. FP8 only (FP4 is SM100)."""
    name = "fp8_fp4_gemm_nt"
    wgrad = _dg.check_gemm_args(name, c, recipe, recipe_a, recipe_b, compiled_dims,
                                disable_ue8m0_cast)
    _dg.check_tensors(name, pair(a, "a")[1], pair(b, "b")[1], d, wgrad)
    a, b = _convert(a, b, False, wgrad, trust_strides=False)
    if wgrad:  # sfb per column, as DeepGEMM's casts return it: made N-major
        gemm(_C.KIND_WGRAD, a, b, d, c, 0, None, None)
        return
    gemm(_C.KIND_DENSE, a, b, d, None, 0, None, None)


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
    _dg.check_tensors(name, pair(a, "a")[1], pair(b, "b")[1], d)
    a, b = _convert(a, b, False, trust_strides=False)
    gemm(_C.KIND_PSUM if use_psum_layout else _C.KIND_CONTIGUOUS, a, b, d, grouped_layout, hint,
         None, None)


def m_grouped_fp8_fp4_gemm_nt_masked(a: Pair, b: Pair, d: Tensor, masked_m: Tensor,
                                     expected_m: int, recipe: Any = None, recipe_a: Any = None,
                                     recipe_b: Any = None, compiled_dims: str = "nk",
                                     disable_ue8m0_cast: bool = False) -> None:
    """DeepGEMM's m_grouped_fp8_fp4_gemm_nt_masked: m_grouped_fp8_gemm_nt_masked
    taking sfa [G, M_max, K/128] in any layout (made M-major here, as DeepGEMM does)."""
    name = "m_grouped_fp8_fp4_gemm_nt_masked"
    _check_grouped_recipe(name, recipe, recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast)
    _dg.check_tensors(name, pair(a, "a")[1], pair(b, "b")[1], d)
    expected_m = as_int(expected_m, "expected_m")
    a, b = _convert(a, b, False, trust_strides=False)
    gemm(_C.KIND_MASKED, a, b, d, masked_m, expected_m, None, None)


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
    As DeepGEMM: M = 0 or N = 0 returns at once; every group empty (sum K = 0)
    sets d to c or zero without a launch.
    """
    name = "k_grouped_fp8_gemm_nt_contiguous"
    if _dg._as_tuple(recipe) != _dg.WGRAD_RECIPE:
        raise _dg.unsupported(name, "recipe", recipe, "the k-grouped GEMM takes (1, 1, 128)")
    if use_psum_layout:
        raise _dg.unsupported(name, "use_psum_layout", use_psum_layout,
                              "the psum form of the k-grouped GEMM is SM100's (DeepGEMM too)")
    if ks_cpu is not None and not hasattr(ks_cpu, "__len__"):
        raise TypeError(f"qgemm: {name}: ks_cpu must be a sequence of ints, got "
                        f"{type(ks_cpu).__name__}")
    if ks_cpu is None or len(ks_cpu) == 0:  # (a numpy array has no truth value)
        raise ValueError(f"qgemm: {name}: ks_cpu (the K of each group, on the host) is required")
    a_, sfa = pair(a, "a")
    b_, sfb = pair(b, "b")
    if getattr(d, "dim", lambda: 0)() != 3:
        raise ValueError(f"qgemm: {name}: d must be a float32 [G, M, N] tensor")
    g, m, n = d.shape
    ks = [as_int(k, "ks_cpu[i]") for k in ks_cpu]
    if len(ks) != g or any(k < 0 or k % 128 for k in ks):
        raise ValueError(f"qgemm: {name}: ks_cpu must hold G = {g} multiples of 128 (>= 0), "
                         f"got {list(ks_cpu)}")
    total = sum(ks)
    if a_.numel() != total * m or b_.numel() != total * n:
        raise ValueError(f"qgemm: {name}: a must hold M * sum(K) = {total * m} and b N * sum(K) "
                         f"= {total * n} elements, got {a_.numel()} and {b_.numel()}")
    if c is not None and (getattr(c, "shape", None) != d.shape):
        raise ValueError(f"qgemm: {name}: c must be shaped like d {list(d.shape)}")
    if m == 0 or n == 0:
        return  # DeepGEMM's early return: d holds nothing
    a_flat, b_flat = a_.reshape(-1), b_.reshape(-1)
    ops = _d.torch_ops() if _d.torch_module() is not None and total else None
    if ops is not None and not ops.compiling():
        # One launch for every group (the C library's k-grouped GEMM); a
        # tensor the fast path cannot read (a subclass, another framework's)
        # takes the loop below.
        if _C.k_grouped_torch(a_flat, _dg.mn_major_sf(sfa, False), b_flat,
                              _dg.mn_major_sf(sfb, False), d, c, ks, None) is None:
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
            fp8_gemm_nt((a_i, _dg.mn_major_sf(sfa[:, kb0:kb1], False)),
                        (b_i, _dg.mn_major_sf(sfb[:, kb0:kb1], False)), d[i], c=c_i,
                        recipe=(1, 1, 128))
        prefix += k
    for i, k in enumerate(ks):
        if k == 0 and c is None:
            d[i].zero_()
        elif k == 0 and c is not d:
            d[i].copy_(c[i])


fp8_m_grouped_gemm_nt_masked = m_grouped_fp8_fp4_gemm_nt_masked  # DeepGEMM's legacy alias


# ---- FP8 output (issue 51): e4m3 D and its 1x128 scales, ready as the next GEMM's A --------

_FP8OUT_NAMES = ("a", "sfa", "b", "sfb", "d", "sfd", "idx")
_E4M3_OUT_SLOTS = (0, 2, 4)  # a, b, d in _C.gemm_fp8out's and _C.gemm_swiglu's order


def _e4m3_as_bytes(tensors: List[Any]) -> int:
    """The e4m3-D calls' float8 torch tensors (a, b, d: slots 0, 2, 4) as their bytes
    (_torch_helpers.fp8_as_bytes); the mask of the slots so replaced."""
    torch = _d.torch_module()
    return 0 if torch is None else fp8_as_bytes(torch, tensors, _E4M3_OUT_SLOTS)


def _fp8out(kind: int, a: Pair, b: Pair, d: Tensor, sfd: Tensor, idx: Any, expected_m: int,
            use_ue8m0: bool, stream: Optional[StreamLike], config: Optional[Config],
            strict: Optional[bool]) -> None:
    if use_ue8m0 not in (False, True, 0, 1):
        raise ValueError(f"qgemm: use_ue8m0 must be a bool, got {use_ue8m0!r}")
    (a_, sfa), (b_, sfb) = _convert(a, b, _strict(strict))
    ue8m0, cfg = int(bool(use_ue8m0)), _d.config_tuple(config)
    args = (kind, a_, sfa, b_, sfb, d, sfd, idx, expected_m, ue8m0, cfg)
    if _d.COMPILING() or _fp8out_eager(*args, stream, decline_fake=True) is _d.FAKE:
        # traced, or fake / meta tensors: the custom op (its body: _fp8out_eager)
        _d.call_traced("fp8_gemm_fp8out", stream, *args[:-1], None if cfg is None else list(cfg))


def _fp8out_eager(kind: int, a: Any, sfa: Any, b: Any, sfb: Any, d: Any, sfd: Any, idx: Any,
                  expected_m: int, ue8m0: int, cfg: Any, stream: Optional[StreamLike] = None,
                  decline_fake: bool = False) -> Any:
    """_C.gemm_fp8out through launch_family (torch's current stream for torch tensors;
    decline_fake: launch_family's)."""
    tensors = [_d.detach(t) for t in (a, sfa, b, sfb, d, sfd, idx)]
    e4m3 = _e4m3_as_bytes(tensors)
    return _d.launch_family(_C.gemm_fp8out, _FP8OUT_NAMES, tensors, (kind,),
                            (expected_m, ue8m0, cfg, e4m3), stream, decline_fake)


_d.EAGER_OPS["fp8_gemm_fp8out"] = _fp8out_eager


def empty_fp8out(m: int, n: int, *, num_groups: Optional[int] = None, device: Any = None
                 ) -> Tuple[Tensor, Tensor]:
    """Allocate (d, sfd) for the ``*_fp8out`` GEMMs (torch): d ``[M, N]``
    float8_e4m3fn and sfd ``[M, ceil(N/128)]`` float32, M-major and TMA-aligned
    (strides ``(1, tma_aligned_m)``, as ``get_mn_major_tma_aligned_tensor``
    returns scales): the layout the next GEMM reads as sfa. ``num_groups``:
    the masked layout's ``[G, M, N]`` / ``[G, M, ceil(N/128)]``."""
    import torch
    m, n = as_int(m, "m"), as_int(n, "n")
    nb, ld = (n + 127) // 128, (m + 3) // 4 * 4
    if num_groups is None:
        d = torch.empty((m, n), dtype=torch.float8_e4m3fn, device=device)
        sfd = torch.empty_strided((m, nb), (1, ld), dtype=torch.float32, device=device)
    else:
        g = as_int(num_groups, "num_groups")
        d = torch.empty((g, m, n), dtype=torch.float8_e4m3fn, device=device)
        sfd = torch.empty_strided((g, m, nb), (nb * ld, 1, ld), dtype=torch.float32, device=device)
    return d, sfd


def fp8_gemm_nt_fp8out(a: Pair, b: Pair, d: Tensor, sfd: Tensor, *, use_ue8m0: bool = False,
                       stream: Optional[StreamLike] = None, config: Optional[Config] = None,
                       strict: Optional[bool] = None) -> None:
    """Dense ``(d, sfd) = quantize((a * sfa) @ (b * sfb).T)``: the GEMM writes FP8.

    As fp8_gemm_nt, but d is ``[M, N]`` float8_e4m3fn and sfd ``[M,
    ceil(N/128)]`` float32 M-major TMA-aligned (``empty_fp8out`` allocates
    both): one scale per 1x128 block of each row of the product, computed in
    the GEMM's epilogue from its FP32 sums by per_token_cast_to_fp8's formula
    (amax >= 1e-4, scale = amax / 448; ``use_ue8m0=True``: rounded up to a
    power of two). ``(d, sfd)`` is then the next GEMM's ``a`` pair as it is
    (where no activation comes between the two; docs/MOE.md) and equals
    ``per_token_cast_to_fp8`` of the bf16 GEMM's output but for that bf16
    rounding, without writing or reading the bf16 tensor. Tiles of whole
    128-column groups (block_n 128 or 256), or of 64 / 32 columns of one, the
    group split over a cluster of 2 / 4 CTAs (no multicast or split-K with
    them); ``select_config_fp8out`` says which the library picks.
    """
    _fp8out(_C.KIND_DENSE, a, b, d, sfd, None, 0, use_ue8m0, stream, config, strict)


def m_grouped_fp8_gemm_nt_contiguous_fp8out(a: Pair, b: Pair, d: Tensor, sfd: Tensor,
                                            m_indices: Tensor, *, use_ue8m0: bool = False,
                                            stream: Optional[StreamLike] = None,
                                            config: Optional[Config] = None,
                                            strict: Optional[bool] = None) -> None:
    """m_grouped_fp8_gemm_nt_contiguous (m_indices layout) writing FP8: d ``[M, N]``
    float8_e4m3fn, sfd ``[M, ceil(N/128)]`` as fp8_gemm_nt_fp8out. Rows the bf16
    call leaves untouched keep their bytes and scales."""
    _fp8out(_C.KIND_CONTIGUOUS, a, b, d, sfd, m_indices, 0, use_ue8m0, stream, config, strict)


def m_grouped_fp8_gemm_nt_masked_fp8out(a: Pair, b: Pair, d: Tensor, sfd: Tensor,
                                        masked_m: Tensor, expected_m: int, *,
                                        use_ue8m0: bool = False,
                                        stream: Optional[StreamLike] = None,
                                        config: Optional[Config] = None,
                                        strict: Optional[bool] = None) -> None:
    """m_grouped_fp8_gemm_nt_masked writing FP8: d ``[G, M, N]`` float8_e4m3fn, sfd
    ``[G, M, ceil(N/128)]`` (``empty_fp8out(m, n, num_groups=G)``), the next masked
    GEMM's a pair. Rows past masked_m keep their bytes and scales."""
    _fp8out(_C.KIND_MASKED, a, b, d, sfd, masked_m, as_int(expected_m, "expected_m"), use_ue8m0,
            stream, config, strict)


# ---- fused SwiGLU (issue 51 item 2): the up-projection writes silu(gate) * up as FP8 ---------

_SWIGLU_NAMES = ("a", "sfa", "b", "sfb", "d", "sfd", "idx", "row_weight")


def _swiglu_args(use_ue8m0: Any, swiglu_limit: Any) -> Tuple[int, float]:
    if use_ue8m0 not in (False, True, 0, 1):
        raise ValueError(f"qgemm: use_ue8m0 must be a bool, got {use_ue8m0!r}")
    try:
        limit = float(swiglu_limit if swiglu_limit is not None else 0.0)
    except (TypeError, ValueError):
        raise ValueError(f"qgemm: swiglu_limit must be a number (None or 0: no clamp), got "
                         f"{swiglu_limit!r}") from None
    if not 0.0 <= limit < float("inf"):  # (NaN fails too)
        raise ValueError(f"qgemm: swiglu_limit must be >= 0 and finite (0: no clamp), got {limit!r}")
    return int(bool(use_ue8m0)), limit


def _swiglu_eager(kind: int, a: Any, sfa: Any, b: Any, sfb: Any, d: Any, sfd: Any, idx: Any,
                  row_weight: Any, expected_m: int, ue8m0: int, limit: float, config: Any,
                  stream: Optional[StreamLike]) -> None:
    """_C.gemm_swiglu through launch_family (torch's current stream for torch tensors)."""
    tensors = [None if t is None else _d.detach(t) for t in (a, sfa, b, sfb, d, sfd, idx, row_weight)]
    e4m3 = _e4m3_as_bytes(tensors)
    _d.launch_family(_C.gemm_swiglu, _SWIGLU_NAMES, tensors, (kind,),
                     (expected_m, ue8m0, limit, _d.config_tuple(config), e4m3), stream)


def _swiglu(kind: int, a: Pair, b: Pair, d: Tensor, sfd: Tensor, idx: Any, expected_m: int,
            row_weight: Any, swiglu_limit: Any, use_ue8m0: Any, stream: Optional[StreamLike],
            config: Optional[Config], strict: Optional[bool]) -> None:
    ue8m0, limit = _swiglu_args(use_ue8m0, swiglu_limit)
    (a_, sfa), (b_, sfb) = _convert(a, b, _strict(strict))
    torch = _d.torch_module()
    if torch is not None and isinstance(d, torch.Tensor) and (
            _d.COMPILING() or type(d) not in (torch.Tensor, torch.nn.Parameter) or
            d.device.type == "meta"):
        # traced (torch.compile), a tensor subclass or meta tensors: the custom op
        cfg = _d.config_tuple(config)
        _d.call_traced("fp8_gemm_swiglu", stream, kind, a_, sfa, b_, sfb, d, sfd, idx,
                       row_weight, expected_m, ue8m0, limit, None if cfg is None else list(cfg))
        return
    _swiglu_eager(kind, a_, sfa, b_, sfb, d, sfd, idx, row_weight, expected_m, ue8m0, limit,
                  config, stream)


def empty_swiglu(m: int, intermediate: int, *, num_groups: Optional[int] = None,
                 device: Any = None) -> Tuple[Tensor, Tensor]:
    """Allocate (d, sfd) for the ``*_swiglu`` GEMMs: ``empty_fp8out(m, I)``, I the
    intermediate size (B has 2I rows)."""
    return empty_fp8out(m, intermediate, num_groups=num_groups, device=device)


def interleave_gate_up(w13: Tensor, s13: Optional[Tensor] = None, *, inverse: bool = False
                       ) -> Any:
    """The SwiGLU GEMMs' weight layout from a gate | up weight (torch; once at load).

    ``w13`` ``[G, 2I, K]`` (or ``[2I, K]``): gate rows ``[0, I)``, up rows ``[I, 2I)``,
    I a multiple of 128; ``s13`` its ``[G, 2I/128, ceil(K/128)]`` block scales. Returns
    ``w`` (and ``s`` when s13 is given), new contiguous tensors with the rows in
    blocks of 128 alternating gate / up: rows ``[256 b, 256 b + 128)`` = gate rows
    ``[128 b, 128 b + 128)``, the next 128 the up rows of the same columns (the
    scales likewise, block 2b gate, 2b + 1 up). ``inverse=True`` undoes it. The C
    library's ``qg_interleave_gate_up`` does the same with device copies."""
    def perm(t: Any, rows_per_block: int, name: str) -> Any:
        if t.dim() not in (2, 3):
            raise ValueError(f"qgemm: {name} must be [G, 2I, ..] or [2I, ..], got shape "
                             f"{tuple(t.shape)}")
        x = t if t.dim() == 3 else t.unsqueeze(0)
        g, rows = x.shape[0], x.shape[1]
        if rows % (2 * rows_per_block):
            raise ValueError(f"qgemm: {name}'s rows ({rows}) must be 2I with I a multiple of 128 "
                             f"(the interleave is in 128-row blocks)")
        nb = rows // (2 * rows_per_block)
        if not inverse:  # [G, 2 (gate, up), nb, rows_per_block, ..] -> [G, nb, 2, ..]
            y = x.reshape(g, 2, nb, rows_per_block, *x.shape[2:]).transpose(1, 2)
        else:
            y = x.reshape(g, nb, 2, rows_per_block, *x.shape[2:]).transpose(1, 2)
        y = y.reshape(x.shape).contiguous()
        return y if t.dim() == 3 else y.squeeze(0)

    w = perm(w13, 128, "w13")
    if s13 is None:
        return w
    return w, perm(s13, 1, "s13")


def fp8_gemm_nt_swiglu(a: Pair, b: Pair, d: Tensor, sfd: Tensor, *,
                       row_weight: Optional[Tensor] = None, swiglu_limit: float = 0.0,
                       use_ue8m0: bool = False, stream: Optional[StreamLike] = None,
                       config: Optional[Config] = None, strict: Optional[bool] = None) -> None:
    """Dense ``(d, sfd) = quantize(silu(g) * u * w)`` with ``[g | u] = (a * sfa) @ (b * sfb).T``.

    b ``[2I, K]`` (``[N, K]``, N = 2I a multiple of 256) holds gate and up rows
    interleaved in 128-row blocks (``interleave_gate_up``), sfb its ``[2I/128,
    K/128]`` block scales likewise; the epilogue takes silu(x) = x / (1 + exp(-x))
    of the gate sums, times the up sums (float32; with ``swiglu_limit`` > 0 gate
    clamped to <= limit and up to [-limit, limit] first), times ``row_weight[m]``
    (float32 ``[M]``, None: 1), and writes d ``[M, I]`` float8_e4m3fn with sfd
    ``[M, ceil(I/128)]`` float32 M-major TMA-aligned (``empty_swiglu``) by the
    fp8out formula: the down-projection's ``a`` pair as it is. Equals
    ``silu_and_mul_fp8_quant`` of the bf16 GEMM's output but for that bf16
    rounding. Tile 128x256, or 64x256 (forced, or the heuristic's for masked groups of <= 64
    rows under QGEMM_FP8OUT_VARIANT swm64): a forced ``config`` needs block_n 256."""
    _swiglu(_C.KIND_DENSE, a, b, d, sfd, None, 0, row_weight, swiglu_limit, use_ue8m0, stream,
            config, strict)


def m_grouped_fp8_gemm_nt_contiguous_swiglu(a: Pair, b: Pair, d: Tensor, sfd: Tensor,
                                            m_indices: Tensor, *,
                                            row_weight: Optional[Tensor] = None,
                                            swiglu_limit: float = 0.0, use_ue8m0: bool = False,
                                            stream: Optional[StreamLike] = None,
                                            config: Optional[Config] = None,
                                            strict: Optional[bool] = None) -> None:
    """m_grouped_fp8_gemm_nt_contiguous (m_indices layout) with the SwiGLU epilogue:
    b ``[G, 2I, K]`` interleaved, d ``[M, I]`` float8_e4m3fn, sfd ``[M, ceil(I/128)]``,
    row_weight ``[M]`` (see fp8_gemm_nt_swiglu). Rows the bf16 call leaves
    untouched keep their bytes and scales."""
    _swiglu(_C.KIND_CONTIGUOUS, a, b, d, sfd, m_indices, 0, row_weight, swiglu_limit, use_ue8m0,
            stream, config, strict)


def m_grouped_fp8_gemm_nt_masked_swiglu(a: Pair, b: Pair, d: Tensor, sfd: Tensor,
                                        masked_m: Tensor, expected_m: int, *,
                                        row_weight: Optional[Tensor] = None,
                                        swiglu_limit: float = 0.0, use_ue8m0: bool = False,
                                        stream: Optional[StreamLike] = None,
                                        config: Optional[Config] = None,
                                        strict: Optional[bool] = None) -> None:
    """m_grouped_fp8_gemm_nt_masked with the SwiGLU epilogue: b ``[G, 2I, K]``
    interleaved, d ``[G, M, I]`` float8_e4m3fn, sfd ``[G, M, ceil(I/128)]``
    (``empty_swiglu(m, I, num_groups=G)``), row_weight ``[G, M]`` (see
    fp8_gemm_nt_swiglu). Rows past masked_m keep their bytes and scales; reads
    masked_m on the device only (CUDA-graph capturable)."""
    _swiglu(_C.KIND_MASKED, a, b, d, sfd, masked_m, as_int(expected_m, "expected_m"), row_weight,
            swiglu_limit, use_ue8m0, stream, config, strict)
