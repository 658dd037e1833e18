"""The BF16 GEMM family: DeepGEMM's ``bf16_gemm_{nt,nn,tn,tt}``, the grouped
``m_grouped_bf16_gemm_{nt,nn}_contiguous`` (with the psum layout),
``m_grouped_bf16_gemm_nt_masked`` and ``k_grouped_bf16_gemm_tn_contiguous``.

``d (+)= a @ b.T`` with a, b bfloat16, accumulated in FP32 by the tensor cores
over the whole K; d bfloat16 or float32. The two letters name the stored
layouts as DeepGEMM does: the first is A's (``n``: a [M, K]; ``t``: a [K, M]),
the second B's (``t``: b [N, K]; ``n``: b [K, N]). Any operand may also be a
transposed view: the kernels read it K-major or MN-major as its strides say
(one of its last two strides must be 1), so ``bf16_gemm_nt(a, b, d)`` with an
MN-major ``a`` view runs the TN kernel, with no copy.

Each function checks its own arguments and hands the tensors to the shared
dispatch path (``_dispatch.launch_bf16``), on the caller's current stream (or
``stream=``). As DeepGEMM: M = 0 or N = 0 returns at once; K = 0 sets d to c,
or to zero.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _dispatch as _d
from ._dispatch import StreamLike, Tensor, as_int

_K = _d.BF16_KINDS


def _t(x: Any, name: str, dims: int) -> Any:
    """x with its last two dimensions swapped (DeepGEMM's stored layouts to the
    logical [.., M, K] / [.., N, K] operands)."""
    if not hasattr(x, "transpose") or not hasattr(x, "ndim"):
        raise TypeError(f"qgemm: {name} must be a tensor with .transpose (torch), got "
                        f"{type(x).__name__}")
    if x.ndim != dims:
        raise ValueError(f"qgemm: {name} must have {dims} dimensions, got {x.ndim}")
    return x.transpose(-2, -1)


def _dense(layout: str, a: Tensor, b: Tensor, d: Tensor, c: Any, stream: Any) -> None:
    a = _t(a, "a", 2) if layout[0] == "t" else a
    b = _t(b, "b", 2) if layout[1] == "n" else b
    _d.launch_bf16(_K["dense"], a, b, d, c, None, 0, None, stream)


def bf16_gemm_nt(a: Tensor, b: Tensor, d: Tensor, c: Any = None, compiled_dims: str = "nk", *,
                 stream: Optional[StreamLike] = None) -> None:
    """``d = a @ b.T`` (``d = c + a @ b.T`` with ``c``): a [M, K], b [N, K], d [M, N].

    d bfloat16 or float32; ``c`` ([M, N], d's dtype) may be ``d`` itself
    (accumulated in place: the kernel adds into d by TMA reduce-add, never
    reading it on the SMs) or another tensor (copied into d first). ``compiled_dims`` is
    DeepGEMM's and has no effect.
    """
    _dense("nt", a, b, d, c, stream)


def bf16_gemm_nn(a: Tensor, b: Tensor, d: Tensor, c: Any = None, compiled_dims: str = "nk", *,
                 stream: Optional[StreamLike] = None) -> None:
    """``d (+)= a @ b``: a [M, K], b [K, N] (as bf16_gemm_nt otherwise)."""
    _dense("nn", a, b, d, c, stream)


def bf16_gemm_tn(a: Tensor, b: Tensor, d: Tensor, c: Any = None, compiled_dims: str = "mn", *,
                 stream: Optional[StreamLike] = None) -> None:
    """``d (+)= a.T @ b.T``: a [K, M], b [N, K] (as bf16_gemm_nt otherwise)."""
    _dense("tn", a, b, d, c, stream)


def bf16_gemm_tt(a: Tensor, b: Tensor, d: Tensor, c: Any = None, compiled_dims: str = "mn", *,
                 stream: Optional[StreamLike] = None) -> None:
    """``d (+)= a.T @ b``: a [K, M], b [K, N] (as bf16_gemm_nt otherwise)."""
    _dense("tt", a, b, d, c, stream)


def _m_grouped(b_layout: str, a: Tensor, b: Tensor, d: Tensor, grouped_layout: Tensor,
               use_psum_layout: bool, expected_m: Optional[int], stream: Any) -> None:
    if b_layout == "n":
        b = _t(b, "b", 3)
    if use_psum_layout:
        em = 0 if expected_m is None else as_int(expected_m, "expected_m_for_psum_layout", lo=0)
        _d.launch_bf16(_K["psum"], a, b, d, None, grouped_layout, em, None, stream)
        return
    if expected_m is not None:
        raise ValueError("qgemm: expected_m_for_psum_layout is for the psum layout only "
                         "(use_psum_layout=True)")
    _d.launch_bf16(_K["contiguous"], a, b, d, None, grouped_layout, 0, None, stream)


def m_grouped_bf16_gemm_nt_contiguous(a: Tensor, b: Tensor, d: Tensor, grouped_layout: Tensor,
                                      compiled_dims: str = "nk", use_psum_layout: bool = False,
                                      ensure_zero_padding: bool = True,
                                      expected_m_for_psum_layout: Optional[int] = None, *,
                                      stream: Optional[StreamLike] = None) -> None:
    """Grouped ``d = a @ b[g].T`` over contiguous rows: a [M, K] (each group's rows
    starting at a multiple of 128), b [G, N, K], d [M, N] bfloat16.

    ``grouped_layout``: int32 [M], each row's group (-1: a padding row, its
    128-row segment left untouched); or with ``use_psum_layout`` int32 [G],
    each group's end row (group g starts at the previous end rounded up to a
    multiple of 128), ``expected_m_for_psum_layout`` the typical rows a group
    (a tile hint). Rows outside every group are left untouched
    (``ensure_zero_padding`` is DeepGEMM's SM100 option and, as on its SM90
    kernels, has no effect here).
    """
    _m_grouped("t", a, b, d, grouped_layout, use_psum_layout, expected_m_for_psum_layout, stream)


def m_grouped_bf16_gemm_nn_contiguous(a: Tensor, b: Tensor, d: Tensor, grouped_layout: Tensor,
                                      compiled_dims: str = "nk", use_psum_layout: bool = False,
                                      ensure_zero_padding: bool = True, *,
                                      stream: Optional[StreamLike] = None) -> None:
    """As m_grouped_bf16_gemm_nt_contiguous with b [G, K, N]: ``d = a @ b[g]``."""
    _m_grouped("n", a, b, d, grouped_layout, use_psum_layout, None, stream)


def m_grouped_bf16_gemm_nt_masked(a: Tensor, b: Tensor, d: Tensor, masked_m: Tensor,
                                  expected_m: int, compiled_dims: str = "nk", *,
                                  stream: Optional[StreamLike] = None) -> None:
    """Masked grouped ``d[g, :masked_m[g]] = a[g, :masked_m[g]] @ b[g].T``: a [G, M_max, K],
    b [G, N, K], d [G, M_max, N] bfloat16, masked_m int32 [G] on the device
    (read by the kernel only: CUDA-graph capturable), ``expected_m`` the
    typical valid rows a group (a tile hint, 0..M_max). Rows past masked_m[g]
    are left untouched."""
    em = as_int(expected_m, "expected_m", lo=0)
    _d.launch_bf16(_K["masked"], a, b, d, None, masked_m, em, None, stream)


def k_grouped_bf16_gemm_tn_contiguous(a: Tensor, b: Tensor, d: Tensor, ks_cpu: Sequence[int],
                                      grouped_layout: Any = None, c: Any = None,
                                      compiled_dims: str = "mn", use_psum_layout: bool = False, *,
                                      stream: Optional[StreamLike] = None) -> None:
    """The experts' weight gradients: ``d[g] = (c[g] +) a[K_g].T @ b[K_g]`` for groups
    splitting K: a [sum K, M], b [sum K, N] (group g's K_g = ks_cpu[g] rows
    after the groups before it; each a multiple of 64, 0 = an empty group),
    d float32 [G, M, N]; ``c`` None, d itself (accumulated in place) or
    another float32 [G, M, N]. ``grouped_layout`` (the sizes on the device)
    is DeepGEMM's and not read: the launch needs the host's ``ks_cpu``.
    """
    if use_psum_layout:
        raise NotImplementedError("qgemm: the k-grouped BF16 psum layout is DeepGEMM's SM100 form; "
                                  "pass ks_cpu with use_psum_layout=False")
    if ks_cpu is None:
        raise ValueError("qgemm: ks_cpu (the host list of group K sizes) is required")
    if not hasattr(ks_cpu, "__iter__"):
        raise TypeError(f"qgemm: ks_cpu must be a sequence of ints, got {type(ks_cpu).__name__}")
    ks = [as_int(k, f"ks_cpu[{i}]", lo=0) for i, k in enumerate(ks_cpu)]
    _d.launch_bf16(_K["k_grouped"], a, b, d, c, None, 0, ks, stream)


__all__ = ["bf16_gemm_nt", "bf16_gemm_nn", "bf16_gemm_tn", "bf16_gemm_tt",
           "m_grouped_bf16_gemm_nt_contiguous", "m_grouped_bf16_gemm_nn_contiguous",
           "m_grouped_bf16_gemm_nt_masked", "k_grouped_bf16_gemm_tn_contiguous"]
