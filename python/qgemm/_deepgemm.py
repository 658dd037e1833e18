"""DeepGEMM's public names on qgemm (docs/DEEPGEMM.md has the table).

DeepGEMM (deepseek-ai/DeepGEMM, ``deep_gemm/__init__.py``) exposes its SM90
FP8 GEMMs as ``fp8_fp4_gemm_nt(a, b, d, c=None, recipe=None, recipe_a=None,
recipe_b=None, compiled_dims="nk", disable_ue8m0_cast=False)`` and friends.
This module gives those names, with DeepGEMM's argument names, order and
defaults, mapped onto qgemm's GEMMs:

- arguments qgemm implements pass through; a value qgemm does not implement
  (``c=`` a tensor, a recipe other than (1, 128, 128), the PSUM layout, an FP32
  ``d``, packed UE8M0 scales, ...) raises ``NotImplementedError`` naming the
  argument and the value;
- like DeepGEMM, the ``fp8_fp4_*`` names take ``sfa`` as DeepGEMM's casts
  return it (row-major ``[M, K/128]``) and make it M-major themselves
  (qgemm's own ``fp8_gemm_nt`` keeps insisting on M-major scales: use
  ``qgemm.deep_gemm`` to get DeepGEMM's behaviour under DeepGEMM's names);
- every other DeepGEMM entry point (FP8 NN/TN/TT, mega MoE, ...) exists and raises ``NotImplementedError`` saying
  what is missing, so ``import qgemm as deep_gemm`` fails clearly instead of
  with ``AttributeError``.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from . import _C
from . import _dispatch as _d
from ._torch_helpers import mn_major

SUPPORTED_RECIPE = (1, 128, 128)
_MK_ALIGNMENT = _C.m_alignment()  # qgemm's contiguous layout: 128-row blocks (docs/DESIGN.md §1)
_TC_UTIL = [0]  # DeepGEMM's set_tc_util value (0 = unset, reads back as 100)
_IGNORE_COMPILE_DIMS = [False]
_BLOCK_SIZE_MULTIPLE_OF = [(1, 1)]


# ---- argument checks ---------------------------------------------------------------------


def _show(value: Any) -> str:
    """A short description of an argument value for messages (no tensor dumps)."""
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return f"<{type(value).__name__} {list(shape)} {value.dtype}>"
    return repr(value)


def unsupported(func: str, arg: str, value: Any, why: str) -> NotImplementedError:
    return NotImplementedError(f"qgemm: {func}: {arg}={_show(value)} is not supported: {why}")


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, (tuple, list)) else value


WGRAD_RECIPE = (1, 1, 128)


def is_wgrad(recipe: Any, recipe_a: Any, recipe_b: Any) -> bool:
    """The weight-gradient (1D1D) recipe: A and B both scaled per 1x128."""
    return _as_tuple(recipe) == WGRAD_RECIPE or (
        _as_tuple(recipe_a) == (1, 128) and _as_tuple(recipe_b) == (1, 128))


def check_gemm_args(func: str, c: Any, recipe: Any, recipe_a: Any, recipe_b: Any,
                    compiled_dims: Any, disable_ue8m0_cast: Any) -> bool:
    """DeepGEMM's optional GEMM arguments: accept what qgemm computes, refuse the
    rest. Returns True for the weight-gradient recipe (1, 1, 128)."""
    wgrad = is_wgrad(recipe, recipe_a, recipe_b) and not (
        recipe is not None and (recipe_a is not None or recipe_b is not None))
    if c is not None and not wgrad:
        raise unsupported(func, "c", c, "qgemm adds C (D = C + A @ B.T, FP32) only in the "
                          "weight-gradient GEMM, recipe=(1, 1, 128); pass c=None")
    if recipe is not None and (recipe_a is not None or recipe_b is not None):
        raise ValueError(f"qgemm: {func}: give either recipe or the pair recipe_a/recipe_b, "
                         "not both (as DeepGEMM)")
    if (recipe_a is None) != (recipe_b is None):
        raise ValueError(f"qgemm: {func}: recipe_a and recipe_b come together "
                         f"(got recipe_a={recipe_a!r}, recipe_b={recipe_b!r})")
    if recipe is not None and _as_tuple(recipe) not in (SUPPORTED_RECIPE, WGRAD_RECIPE):
        raise unsupported(func, "recipe", recipe,
                          "qgemm implements the (1, 128, 128) recipe (1x128 scales for A, "
                          "128x128 for B) and the weight-gradient (1, 1, 128) (1x128 for both); "
                          "no gran_k 32")
    if recipe_a is not None and _as_tuple(recipe_a) != (1, 128):
        raise unsupported(func, "recipe_a", recipe_a,
                          "qgemm implements only recipe_a=(1, 128) (1x128 scales for A)")
    if recipe_b is not None and _as_tuple(recipe_b) not in ((128, 128), (1, 128)):
        raise unsupported(func, "recipe_b", recipe_b,
                          "qgemm implements recipe_b=(128, 128) and (1, 128) (weight gradient)")
    if not isinstance(compiled_dims, str):
        raise TypeError(f"qgemm: {func}: compiled_dims must be a str such as 'nk', "
                        f"got {type(compiled_dims).__name__}")
    if not isinstance(disable_ue8m0_cast, (bool, int)):
        raise TypeError(f"qgemm: {func}: disable_ue8m0_cast must be a bool, "
                        f"got {type(disable_ue8m0_cast).__name__}")
    # compiled_dims (which dimensions DeepGEMM's JIT bakes in) and disable_ue8m0_cast
    # (an SM100 cast of FP32 scales to UE8M0) change nothing for qgemm's SM90 kernels:
    # any string / either bool is accepted.
    return wgrad


def check_contiguous_args(func: str, use_psum_layout: Any, ensure_zero_padding: Any,
                          expected_m_for_psum_layout: Any) -> int:
    """The psum arguments; returns the expected_m hint for the psum layout (0: none)."""
    if not isinstance(use_psum_layout, (bool, int)):
        raise TypeError(f"qgemm: {func}: use_psum_layout must be a bool, "
                        f"got {type(use_psum_layout).__name__}")
    if expected_m_for_psum_layout is not None and not use_psum_layout:
        raise ValueError(f"qgemm: {func}: expected_m_for_psum_layout="
                         f"{expected_m_for_psum_layout!r} only applies with use_psum_layout=True")
    if not isinstance(ensure_zero_padding, (bool, int)):
        raise TypeError(f"qgemm: {func}: ensure_zero_padding must be a bool, "
                        f"got {type(ensure_zero_padding).__name__}")
    # ensure_zero_padding (DeepGEMM: SM100's psum path zero-fills the gap rows of
    # d) is accepted; qgemm leaves the psum layout's gap rows untouched.
    if expected_m_for_psum_layout is None:
        return 0
    if isinstance(expected_m_for_psum_layout, bool) or \
            not isinstance(expected_m_for_psum_layout, int) or \
            not 0 <= expected_m_for_psum_layout <= 2**31 - 1:  # (the C side's int)
        raise ValueError(f"qgemm: {func}: expected_m_for_psum_layout must be an int in "
                         f"0..2147483647, got {expected_m_for_psum_layout!r}")
    return expected_m_for_psum_layout


def _torch_tensor(x: Any) -> Any:
    torch = _d.torch_module()
    return torch if torch is not None and isinstance(x, torch.Tensor) else None


def check_tensors(func: str, sfa: Any, sfb: Any, d: Any, wgrad: bool = False) -> None:
    """What DeepGEMM accepts on SM100 or for FP32 output and qgemm does not: NotImplementedError."""
    torch = _torch_tensor(d)
    if torch is not None and d.dtype == torch.float32 and not wgrad:
        raise unsupported(func, "d", d, "qgemm writes FP32 D only in the weight-gradient GEMM "
                          "(recipe=(1, 1, 128)); with 128x128 B scales D is bfloat16")
    if torch is not None and wgrad and d.dtype != torch.float32:
        raise unsupported(func, "d", d, "the weight-gradient GEMM (recipe=(1, 1, 128)) writes "
                          "FP32 D only")
    for name, sf in (("sfa", sfa), ("sfb", sfb)):
        torch = _torch_tensor(sf)
        if torch is not None and sf.dtype == torch.int32:
            raise unsupported(func, name, sf, "packed UE8M0 scales (int32) are SM100's format; "
                              "qgemm takes float32 scales")


def mn_major_sf(sf: Any, trust_strides: bool = True) -> Any:
    """DeepGEMM's SFA handling on SM90: float32 scales [.., M, K/128] in any layout
    become M-major and TMA-aligned (``sf`` itself when already so;
    _torch_helpers.mn_major, which says what ``trust_strides`` does under
    torch.compile). Only torch tensors of that dtype and rank are transformed
    (DeepGEMM is torch-only); others pass as given, for the checks to name."""
    torch = _torch_tensor(sf)
    if torch is None or sf.dtype != torch.float32 or sf.dim() not in (2, 3):
        return sf
    return mn_major(torch, sf, trust_strides)


def block_sf(sf: Any) -> Any:
    """DeepGEMM's SFB handling on SM90 for 128x128 block scales [.., N/128, K/128]: it takes
    them row-major or as the transpose of a row-major tensor (a transposed weight's ``sfw.T``,
    csrc/utils/layout.hpp's sm90_sfb_check), qgemm row-major only; anything else is made
    row-major here (a copy of N/128 x K/128 floats; ``sf`` itself when already so).
    Traceable by torch.compile (no data pointer)."""
    torch = _torch_tensor(sf)
    if torch is None or sf.is_contiguous():
        return sf
    return sf.contiguous()


# ---- contiguous-layout alignment and stored settings ---------------------------------------


def get_mk_alignment_for_contiguous_layout() -> int:
    """Rows (M) each group's segment is padded to in the contiguous layout: 128."""
    return _MK_ALIGNMENT


def get_theoretical_mk_alignment_for_contiguous_layout(expected_m: Optional[int] = None) -> int:
    """DeepGEMM picks a smaller alignment for small expected M on SM100; qgemm's
    kernels need 128-row segments for every M: always 128."""
    return _MK_ALIGNMENT


get_k_alignment_for_contiguous_layout = get_mk_alignment_for_contiguous_layout  # DeepGEMM's name


def set_mk_alignment_for_contiguous_layout(new_value: int) -> None:
    """Only 128 (qgemm's fixed alignment) is accepted; other values raise."""
    if isinstance(new_value, bool) or not isinstance(new_value, int):
        raise TypeError(f"qgemm: set_mk_alignment_for_contiguous_layout wants an int, "
                        f"got {type(new_value).__name__}")
    if new_value != _MK_ALIGNMENT:
        raise unsupported("set_mk_alignment_for_contiguous_layout", "new_value", new_value,
                          "qgemm's contiguous grouped GEMM needs each group's rows padded to a "
                          f"multiple of {_MK_ALIGNMENT} (its M block); only {_MK_ALIGNMENT} is accepted")


def set_tc_util(new_tc_util: int) -> None:
    """Stored for get_tc_util only: it has NO effect on qgemm's kernels (DeepGEMM
    uses it in its SM100 heuristics). 0 <= new_tc_util <= 100, as DeepGEMM."""
    if isinstance(new_tc_util, bool) or not isinstance(new_tc_util, int):
        raise TypeError(f"qgemm: set_tc_util wants an int, got {type(new_tc_util).__name__}")
    if not 0 <= new_tc_util <= 100:
        raise ValueError(f"qgemm: set_tc_util: new_tc_util must be in [0, 100], got {new_tc_util}")
    _TC_UTIL[0] = new_tc_util


def get_tc_util() -> int:
    """The value of set_tc_util (100 when unset, as DeepGEMM); it has no effect in qgemm."""
    return _TC_UTIL[0] or 100


def set_ignore_compile_dims(new_value: bool) -> None:
    """Stored only: qgemm's kernels bake in no 'compiled dims' (no effect)."""
    _IGNORE_COMPILE_DIMS[0] = bool(new_value)


def set_block_size_multiple_of(new_value: Any) -> None:
    """Stored only: it has no effect on qgemm's block-size choice."""
    if isinstance(new_value, int) and not isinstance(new_value, bool):
        _BLOCK_SIZE_MULTIPLE_OF[0] = (new_value, new_value)
    elif isinstance(new_value, (tuple, list)) and len(new_value) == 2:
        _BLOCK_SIZE_MULTIPLE_OF[0] = (int(new_value[0]), int(new_value[1]))
    else:
        raise TypeError("qgemm: set_block_size_multiple_of wants an int or a pair of ints, "
                        f"got {new_value!r}")


# ---- DeepGEMM entry points qgemm does not implement ----------------------------------------

_WHY_NN = "qgemm's kernels take K-major A and B only (NT); transpose B to [N, K] K-major"
_WHY_TN = "qgemm's kernels take K-major A and B only (NT); make A [M, K] K-major"
_WHY_KG = ("the TN form of the k-grouped GEMM is SM100's; on SM90 use "
           "k_grouped_fp8_gemm_nt_contiguous (K-major A and B)")
_WHY_SM100 = "an SM100 (Blackwell) format; qgemm targets SM90 with float32 scales"

MISSING: Dict[str, str] = {
    "fp8_fp4_gemm_nn": _WHY_NN, "fp8_fp4_gemm_tn": _WHY_TN, "fp8_fp4_gemm_tt": _WHY_TN,
    "fp8_gemm_nn": _WHY_NN, "fp8_gemm_tn": _WHY_TN, "fp8_gemm_tt": _WHY_TN,
    "m_grouped_fp8_fp4_gemm_nn_contiguous": _WHY_NN,
    "m_grouped_fp8_gemm_nn_contiguous": _WHY_NN,
    "k_grouped_fp8_gemm_tn_contiguous": _WHY_KG,
    "SymmBuffer": "mega MoE kernels (symmetric memory) are not implemented",
    "get_symm_buffer_for_mega_moe": "mega MoE kernels are not implemented",
    "transform_weights_for_mega_moe": "mega MoE kernels are not implemented",
    "fp8_fp4_mega_moe": "mega MoE kernels are not implemented",
    "bf16_mega_moe": "mega MoE kernels are not implemented",
    "per_token_cast_to_fp4": "FP4 is " + _WHY_SM100,
    "transpose_packed_fp4": "FP4 is " + _WHY_SM100,
    "cast_back_from_fp4": "FP4 is " + _WHY_SM100,
    "init_dist": "DeepGEMM's distributed test utilities are not provided",
    "uneven_all_gather": "DeepGEMM's distributed test utilities are not provided",
}


def _missing(name: str, why: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"qgemm: {name} (DeepGEMM) is not implemented: {why}. qgemm implements the SM90 "
            "FP8 NT GEMMs fp8_gemm_nt, m_grouped_fp8_gemm_nt_contiguous and "
            "m_grouped_fp8_gemm_nt_masked (see docs/DEEPGEMM.md)")
    missing.__name__ = missing.__qualname__ = name
    missing.__doc__ = f"DeepGEMM's {name}: not implemented in qgemm ({why}); always raises."
    return missing


STUBS: Dict[str, Callable[..., Any]] = {name: _missing(name, why) for name, why in MISSING.items()}


# ---- DeepGEMM's cuBLASLt entry points, through torch -----------------------------------------


def _cublaslt(name: str, a: Any, b: Any, d: Any, c: Any) -> None:
    """D = A @ B.T (+ C) on cuBLASLt through torch, without scales, as DeepGEMM's
    ``cublaslt_gemm_nt`` (a reference its tests time beside its kernels): FP8
    operands through ``torch._scaled_mm`` with unit scales, others through
    ``torch.matmul``. a is [M, K] and b is [N, K] as the NT form sees them."""
    torch = _torch_tensor(d)
    if torch is None or _torch_tensor(a) is None or _torch_tensor(b) is None:
        raise TypeError(f"qgemm: {name}: a, b and d must be torch tensors (cuBLASLt through torch)")
    if a.dim() != 2 or b.dim() != 2 or d.dim() != 2 or a.shape[1] != b.shape[1] or \
            tuple(d.shape) != (a.shape[0], b.shape[0]):
        raise ValueError(f"qgemm: {name}: want a [M, K], b [N, K] (as the NT form sees them) and "
                         f"d [M, N]; got a {list(a.shape)}, b {list(b.shape)}, d {list(d.shape)}")
    if c is not None and (_torch_tensor(c) is None or c.shape != d.shape):
        raise ValueError(f"qgemm: {name}: c must be a tensor shaped like d {list(d.shape)}")
    # FP32 out, or a C to add: the product stays FP32 (cuBLASLt's accumulator), never
    # rounded to 16 bits first (DeepGEMM's test_bf16.test_cublaslt_gemm wants diff < 6e-7
    # at m=1, n=256, k=7168, FP32 out: a bf16 product gave 1.42e-6)
    wide = d.dtype == torch.float32 or c is not None
    if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        one = torch.ones((), dtype=torch.float32, device=a.device)
        out = torch._scaled_mm(a.contiguous(), b.contiguous().t(), scale_a=one, scale_b=one,
                               out_dtype=torch.float32 if wide else torch.bfloat16)
    elif wide:
        out = _mm_fp32(torch, a, b.t())
    else:
        out = torch.matmul(a, b.t())
    if c is not None:
        out = out.float() + c.float()
    d.copy_(out)


def _mm_fp32(torch: Any, a: Any, b: Any) -> Any:
    """a @ b with an FP32 result: 16-bit operands through cuBLASLt with FP32 output
    (``torch.mm(..., out_dtype=torch.float32)``) where this torch has it, else the
    operands widened to FP32 (exact for bf16/fp16) and multiplied in FP32."""
    if a.is_cuda and a.dtype in (torch.bfloat16, torch.float16) and b.dtype == a.dtype:
        try:
            return torch.mm(a, b, out_dtype=torch.float32)
        except (TypeError, RuntimeError):
            pass
    return torch.mm(a.float(), b.float())


def cublaslt_gemm_nt(a: Any, b: Any, d: Any, c: Any = None) -> None:
    """DeepGEMM's cublaslt_gemm_nt: D = A @ B.T (+ C), a [M, K], b [N, K]."""
    _cublaslt("cublaslt_gemm_nt", a, b, d, c)


def cublaslt_gemm_nn(a: Any, b: Any, d: Any, c: Any = None) -> None:
    """DeepGEMM's cublaslt_gemm_nn: D = A @ B (+ C), a [M, K], b [K, N]."""
    _cublaslt("cublaslt_gemm_nn", a, b.transpose(0, 1), d, c)


def cublaslt_gemm_tn(a: Any, b: Any, d: Any, c: Any = None) -> None:
    """DeepGEMM's cublaslt_gemm_tn: D = A.T @ B (+ C), a [K, M], b [K, N]."""
    _cublaslt("cublaslt_gemm_tn", a.transpose(0, 1), b.transpose(0, 1), d, c)


def cublaslt_gemm_tt(a: Any, b: Any, d: Any, c: Any = None) -> None:
    """DeepGEMM's cublaslt_gemm_tt: D = A.T @ B.T (+ C), a [K, M], b [N, K]."""
    _cublaslt("cublaslt_gemm_tt", a.transpose(0, 1), b, d, c)


CUBLASLT = {f.__name__: f for f in (cublaslt_gemm_nt, cublaslt_gemm_nn, cublaslt_gemm_tn,
                                    cublaslt_gemm_tt)}


def split_pair(x: Any, name: str) -> Tuple[Any, Any]:
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise TypeError(f"qgemm: {name} must be a pair ({name}, sf{name}) of the FP8 tensor "
                        f"and its float32 scales, got {type(x).__name__}")
    return x[0], x[1]
