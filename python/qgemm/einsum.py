"""DeepGEMM's einsum family: ``einsum``, ``fp8_einsum`` and ``fp8_gemm_nt_skip_head_mid``.

``einsum(expr, a, b, d, c=None, use_cublaslt=False)`` (bfloat16 a, b):

=================  ==========================================  =====================================
expression         shapes                                      how
=================  ==========================================  =====================================
``bmk,bnk->mn``    a [B, M, K], b [B, N, K], d [M, N]          one kernel (the batch sum): B split
                   float32 (``c`` None, d itself: d += ...,    into ranges, each range's sum in
                   or another float32 [M, N]) or bfloat16      FP32, the ranges' sums added by the
                   (no ``c``)                                  kernel's FP32 atomics, one level
                                                               (QGEMM_BMK_REDUCE=tree: a fixed
                                                               tree, bitwise deterministic)
``bhr,hdr->bhd``   a [B, H, R], b [H, D, R] (any row stride,   one launch of the batched BF16 GEMM
                   e.g. ``fy[:, :, :r]``), d [B, H, D] bf16    (H batches of strided views, no
                                                               copies): a[:, h] (row stride H*R),
                                                               b[h], d[:, h]; NT
``bhd,hdr->bhr``   a [B, H, D], b [H, D, R], d [B, H, R] bf16  as above, NN (b[h] read MN-major)
=================  ==========================================  =====================================

The letters may be renamed and spaces are ignored (``"xyz, ywz -> xyw"`` is
``bhr,hdr->bhd``). K is accumulated whole, in ascending order, with no split,
so per-head results round to the same bf16 as a cuBLAS GEMM of the same
operands. ``use_cublaslt=True`` runs the per-head expressions on cuBLAS through
torch (DeepGEMM's reference path); ``bmk,bnk->mn`` refuses it, as DeepGEMM does.

``fp8_einsum("bhr,hdr->bhd", (x, sfx), (y, sfy), z, c=None, recipe=(1, 128, 128))``:
x [B, H, R] e4m3 with sfx [B, H, ceil(R/128)] (1x128 scales, as
``per_token_cast_to_fp8(x.view(-1, R))`` returns them, viewed [B, H, .]), y [H, D, R]
e4m3 with sfy [H, ceil(D/128), ceil(R/128)] (128x128 blocks), z [B, H, D]
bfloat16: one FP8 GEMM per head on strided views of x and z (the scales made
M-major once for all heads: one copy of B x H x R/128 floats).

``fp8_gemm_nt_skip_head_mid(a, b, d, head_splits, recipe=None, compiled_dims="nk",
disable_ue8m0_cast=False)``: the FP8 GEMM ``a @ b.T`` ([M, N], N = heads x
(left + right)) written into d [M, heads x (left + mid + right)] with the middle
``mid`` columns of every head skipped (left untouched): head j's first ``left``
columns of the product go to d's columns [j*(l+m+r), j*(l+m+r)+l), its last
``right`` to the last ``right`` of that head. Computed as the GEMM into a
bf16 temporary and a copy of its columns into d.

Every function checks its arguments before anything is launched (ValueError
for a bad value, TypeError for a wrong type, NotImplementedError for what
DeepGEMM accepts on SM100 or elsewhere and qgemm does not), and runs on the
caller's current stream (torch's: the copies and reductions some paths make are
torch operations on that stream too).
"""
from __future__ import annotations

import functools
import os
from typing import Any, List, Sequence, Tuple

from . import _C
from . import _deepgemm as _dg
from . import _dispatch as _d
from ._dispatch import Pair, Tensor, as_int
from ._torch_helpers import mn_major
from .fp8 import fp8_fp4_gemm_nt

_DENSE = _C.KIND_DENSE
_BATCHED = _C.KIND_BF16_BATCHED
_BATCH_SUMS = _C.KIND_BF16_BATCH_SUMS
_BATCH_SUM = _C.KIND_BF16_BATCH_SUM
MAX_BATCHES = 1024  # batches of one launch of the batched BF16 GEMM (qg_batched_bf16_gemm)

# the canonical form of each supported expression (letters renamed in order of appearance)
BMK_BNK_MN = "abc,adc->bd"
BHR_HDR_BHD = "abc,bdc->abd"
BHD_HDR_BHR = "abc,bcd->abd"
_NAMES = {BMK_BNK_MN: "bmk,bnk->mn", BHR_HDR_BHD: "bhr,hdr->bhd", BHD_HDR_BHR: "bhd,hdr->bhr"}
EINSUM_EXPRESSIONS = ("bmk,bnk->mn", "bhr,hdr->bhd", "bhd,hdr->bhr")
FP8_EINSUM_EXPRESSIONS = ("bhr,hdr->bhd",)


def parse_expr(expr: Any) -> Tuple[str, List[str], str]:
    """An einsum expression as (canonical form, operand subscripts, output subscripts).

    Spaces are ignored; the form must be ``<letters>,<letters>-><letters>`` with
    no letter repeated within an operand, every output letter in an input and
    every letter appearing in at least two places (no implicit output, no
    ellipsis, no trace or lone sum). The canonical form renames the letters
    a, b, c, ... in order of first appearance, so renamed expressions compare
    equal. ValueError names what is wrong, TypeError for a non-string."""
    if not isinstance(expr, str):
        raise TypeError(f"qgemm: einsum: expr must be a str such as 'bhr,hdr->bhd', "
                        f"got {type(expr).__name__}")
    if _d.COMPILING():  # (traced once into constants: dynamo warns about lru_cache wrappers)
        return _parse_expr.__wrapped__(expr)
    return _parse_expr(expr)


@functools.lru_cache(maxsize=256)
def _parse_expr(expr: str) -> Tuple[str, List[str], str]:
    # (cached: a model calls the same few expressions; ~10 us of Python each time otherwise)
    text = "".join(expr.split())
    lhs, arrow, out = text.partition("->")
    if not arrow:
        raise ValueError(f"qgemm: einsum: expr {expr!r} has no '->' (the output must be "
                         "given explicitly)")
    ops = lhs.split(",")
    if len(ops) != 2:
        raise ValueError(f"qgemm: einsum: expr {expr!r} must have two operands, got {len(ops)}")
    for sub in ops + [out]:
        if not sub or not all(ch.isascii() and ch.isalpha() for ch in sub):
            raise ValueError(f"qgemm: einsum: expr {expr!r}: every subscript must be one or "
                             f"more letters, got {sub!r}")
        if len(set(sub)) != len(sub):
            raise ValueError(f"qgemm: einsum: expr {expr!r}: a letter repeats within {sub!r}")
    for ch in out:
        if ch not in ops[0] and ch not in ops[1]:
            raise ValueError(f"qgemm: einsum: expr {expr!r}: output letter {ch!r} is in "
                             "no operand")
    for ch in set(ops[0]) ^ set(ops[1]):
        if ch not in out:
            raise ValueError(f"qgemm: einsum: expr {expr!r}: letter {ch!r} is in one operand "
                             "only and not in the output")
    rename: dict = {}
    for ch in text:
        if ch.isalpha() and ch not in rename:
            rename[ch] = chr(ord("a") + len(rename))
    canon = "".join(rename.get(ch, ch) for ch in text)
    return canon, ops, out


# parse_expr's canonical forms by expression string: a call parses its expression once per
# process (parsing costs more host time than the rest of a per-head call's Python). Only
# strings that parsed are stored; a bounded number (callers use a handful).
_CANON: dict = {}
_CANON_MAX = 256


def _canon(expr: Any) -> str:
    canon = _CANON.get(expr) if type(expr) is str else None
    if canon is None:
        canon = parse_expr(expr)[0]
        if len(_CANON) < _CANON_MAX:
            _CANON[expr] = canon
    return canon


def _torch_of(func: str, *tensors: Any) -> Any:
    """torch, when every tensor is a torch tensor (DeepGEMM's contract; the views,
    copies and the cuBLAS path are torch's); TypeError otherwise."""
    torch = _d.torch_module()
    if torch is None or not all(isinstance(t, torch.Tensor) for t in tensors):
        raise TypeError(f"qgemm: {func}: the tensors must be torch tensors, got "
                        f"{', '.join(type(t).__name__ for t in tensors)}")
    return torch


def _check_3d(func: str, name: str, t: Any, dtype: Any, what: str) -> Tuple[int, int, int]:
    if t.dim() != 3:
        raise ValueError(f"qgemm: {func}: {name} must be {what}, got shape {list(t.shape)}")
    if t.dtype != dtype:
        raise ValueError(f"qgemm: {func}: {name} must be {dtype}, got {t.dtype}")
    return tuple(t.shape)  # type: ignore[return-value]


def _unit_last(func: str, name: str, t: Any) -> None:
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(f"qgemm: {func}: {name} must be contiguous in its last dimension "
                         f"(stride 1), got strides {list(t.stride())}")


def einsum(expr: str, a: Tensor, b: Tensor, d: Tensor, c: Any = None,
           use_cublaslt: bool = False) -> None:
    """DeepGEMM's einsum: ``d = einsum(expr, a, b)`` for bfloat16 a and b.

    ``bmk,bnk->mn``: a [B, M, K], b [B, N, K], d [M, N] = the sum over B of
    a[i] @ b[i].T; d float32 (``c`` None, d itself to accumulate into d as
    DeepGEMM's users do, or another float32 [M, N]: d = c + ...) or bfloat16
    (no c). One kernel (``qg_bf16_gemm_batch_sum``: the B batches split into
    ranges, each range's products accumulated whole in FP32, a and b read where
    they are, no copy; the ranges' sums added in the kernel with FP32 atomics
    as DeepGEMM's, straight into an FP32 d, through a workspace kept zero
    between calls for a bf16 d; QGEMM_BMK_REDUCE=tree: a fixed tree instead,
    bitwise deterministic, slower). No fill or copy kernel of its own.
    ``QGEMM_EINSUM_VARIANT=bf16cast`` (or ``new``; A/B runs): a bf16 d with more
    than one split as DeepGEMM's: the FP32 sum into a kept FP32 scratch (zeroed
    by the library's memset), then torch's cast into d.

    ``bhr,hdr->bhd``: a [B, H, R], b [H, D, R], d [B, H, D]; ``bhd,hdr->bhr``:
    a [B, H, D], b [H, D, R], d [B, H, R]; all bfloat16 with a unit last stride
    (other strides free: ``fy[:, :, :r]`` views), no c. One launch of the batched
    BF16 GEMM (``qg_batched_bf16_gemm``: every head a batch of strided views, no
    copies), K accumulated whole in ascending order.
    ``use_cublaslt=True``: cuBLAS through torch instead (DeepGEMM's reference).

    Letters may be renamed and spaces are ignored; other expressions raise
    NotImplementedError. As DeepGEMM: empty M, N (or B, H) return at once.
    """
    canon = _CANON.get(expr) if type(expr) is str else None
    if canon is None:
        canon = _canon(expr)
    if use_cublaslt is False and c is None and canon in _PER_HEAD_FLAGS:
        if _per_head_fast(_PER_HEAD_FLAGS[canon], a, b, d):
            return
    elif canon == BMK_BNK_MN and use_cublaslt is False and _bmk_fast(a, b, d, c):
        return
    if canon not in _NAMES:
        raise NotImplementedError(
            f"qgemm: einsum: expression {expr!r} is not supported; qgemm (as DeepGEMM) "
            f"implements {', '.join(EINSUM_EXPRESSIONS)} (letters may be renamed)")
    if not isinstance(use_cublaslt, (bool, int)):
        raise TypeError(f"qgemm: einsum: use_cublaslt must be a bool, "
                        f"got {type(use_cublaslt).__name__}")
    torch = _torch_of("einsum", a, b, d)
    if canon == BMK_BNK_MN:
        if use_cublaslt:
            raise ValueError("qgemm: einsum: 'bmk,bnk->mn' has no cuBLASLt path "
                             "(use_cublaslt=False, as DeepGEMM)")
        _bmk_bnk_mn(torch, a, b, d, c)
        return
    if c is not None:
        raise ValueError(f"qgemm: einsum: {_NAMES[canon]!r} takes no c (as DeepGEMM)")
    _per_head(torch, canon, a, b, d, bool(use_cublaslt))


def _bmk_bnk_mn(torch: Any, a: Any, b: Any, d: Any, c: Any, splits: Any = None) -> None:
    # (splits: the split count instead of bmk_splits' choice; bench/bmk_variants.py)
    func = "einsum('bmk,bnk->mn')"
    s, m, k = _check_3d(func, "a", a, torch.bfloat16, "[B, M, K]")
    s_, n, k_ = _check_3d(func, "b", b, torch.bfloat16, "[B, N, K]")
    if s_ != s or k_ != k:
        raise ValueError(f"qgemm: {func}: b {list(b.shape)} must be [B, N, K] with a's B = {s} "
                         f"and K = {k}")
    if d.dim() != 2 or tuple(d.shape) != (m, n):
        raise ValueError(f"qgemm: {func}: d must be [M, N] = [{m}, {n}], got {list(d.shape)}")
    if d.dtype == torch.float32:
        if c is not None and (not isinstance(c, torch.Tensor) or c.dtype != torch.float32
                              or tuple(c.shape) != (m, n)):
            raise ValueError(f"qgemm: {func}: c must be None, d itself or a float32 [{m}, {n}] "
                             f"tensor, got {_dg._show(c)}")
    elif d.dtype == torch.bfloat16:
        if c is not None:
            raise ValueError(f"qgemm: {func}: a bfloat16 d takes no c (as DeepGEMM: "
                             "accumulate into a float32 d)")
    else:
        raise ValueError(f"qgemm: {func}: d must be float32 or bfloat16, got {d.dtype}")
    if m == 0 or n == 0:
        return
    if s == 0:  # an empty sum (as DeepGEMM: d = c, or zero)
        if c is None:
            d.zero_()
        elif c is not d:
            d.copy_(c)
        return
    if _d.COMPILING() or _d.fake_tensors((a, b, d, c)):
        # traced, or fake / meta tensors: the custom op, whose body is _bmk_eager (the split
        # rule and the workspace cache are host state a graph must not capture)
        _d.call_traced("einsum_bmk_bnk_mn", None, a, b, d, None if c is d else c,
                       c is not None and c is d)
        return
    _bmk_eager(a, b, d, c, splits)


# os.environ's own bytes mapping where the platform has one (POSIX): a lookup there costs
# ~0.03 us where os.environ.get costs ~0.6 us (it encodes the key and decodes the value) on
# the CPU development machine; os.environ's setters and deleters keep it current. None
# elsewhere: os.environ.get then.
_ENV_BYTES: Any = getattr(os.environ, "_data", None) if os.name == "posix" else None
if _ENV_BYTES is not None and not isinstance(next(iter(_ENV_BYTES), b""), bytes):
    _ENV_BYTES = None


def _env(name: str, bname: bytes) -> str:
    """os.environ.get(name, ""), read now (every call), the cheap way where there is one."""
    if _ENV_BYTES is not None:
        v = _ENV_BYTES.get(bname)
        return "" if v is None else os.fsdecode(v)
    return os.environ.get(name, "")


# QGEMM_EINSUM_VARIANT (read at every call; A/B runs, issue 49): "old" (unset: the default)
# or "new" (every option below), or a '+'-separated list of the options:
#   sfkernel  fp8_einsum makes x's scales M-major with qgemm's scale transpose kernel
#             (qg_sf_transpose_mn_major, what get_mn_major_tma_aligned_tensor runs), launched
#             by the same extension call as the GEMM (_C.fp8_einsum_torch) instead of
#             torch's copy before it: the same values, no torch op but the storage's
#             allocation, where torch's TensorIterator copy costs several us of host time;
#   bf16cast  einsum('bmk,bnk->mn') with a bfloat16 d and more than one split (the atomic
#             reduction) runs as DeepGEMM's does: the FP32 batch sum into an FP32 scratch
#             [M, N] (zeroed by the library's memset first), then torch's cast into d. The
#             kernel's own bf16 epilogue (the last arrival of each tile converting the
#             workspace) ran 0.81-0.89x DeepGEMM's kineto time at B = 129 where the FP32 D
#             rows ran 0.97-1.15x (bench/results/2026-11-28-h200-29-t4). Same sums; the bf16
#             rounding of the FP32 total as before (not bitwise: the atomics' order is free).
# Another value: ValueError (where a call reads it: fp8_einsum, and bmk,bnk->mn with a
# bfloat16 d and more than one split).
EINSUM_VARIANT_ENV = "QGEMM_EINSUM_VARIANT"
_EINSUM_VARIANT_ENV_B = EINSUM_VARIANT_ENV.encode()
VARIANT_SFKERNEL, VARIANT_BF16CAST = 1, 2
_FP8_EINSUM_ENV_B = b"QGEMM_FP8_EINSUM"
_VARIANT_BITS = {"": 0, "old": 0, "new": VARIANT_SFKERNEL | VARIANT_BF16CAST,
                 "sfkernel": VARIANT_SFKERNEL, "bf16cast": VARIANT_BF16CAST}
_VARIANTS: dict = {}  # value -> bits, for the values met (bounded: a handful)


def _einsum_variant() -> int:
    """QGEMM_EINSUM_VARIANT's option bits (VARIANT_*): 0 unset or old; ValueError for a
    value that is not old, new or a '+'-list of sfkernel and bf16cast."""
    v = _env(EINSUM_VARIANT_ENV, _EINSUM_VARIANT_ENV_B)
    bits = _VARIANTS.get(v)
    if bits is None:
        bits = 0
        for tok in v.split("+"):
            if tok not in _VARIANT_BITS or (tok in ("", "old") and v != tok):
                raise ValueError(f"qgemm: einsum: {EINSUM_VARIANT_ENV}={v!r} must be old, new or "
                                 "a '+'-separated list of sfkernel and bf16cast")
            bits |= _VARIANT_BITS[tok]
        if len(_VARIANTS) < 64:
            _VARIANTS[v] = bits
    return bits


# The FP32 scratch of the bf16cast variant, by (device, stream): float32 tensors of at least
# M x N values, reused call after call on one stream (its calls run in order; the library
# zeroes the part it uses first). A CUDA graph capture gets its own from the graph's pool.
_SCRATCH: dict = {}


def _f32_scratch(torch: Any, device: Any, m: int, n: int) -> Any:
    if device.type == "cuda":
        if torch.cuda.is_current_stream_capturing():
            return torch.empty((m, n), dtype=torch.float32, device=device)
        index = device.index if device.index is not None else torch.cuda.current_device()
        key: Any = (index, torch._C._cuda_getCurrentRawStream(index))
    else:  # (CPU tensors: the tests' stand-in launches)
        key = (str(device), 0)
    buf = _SCRATCH.get(key)
    if buf is None or buf.numel() < m * n:
        buf = torch.empty(max(m * n, 1 << 16), dtype=torch.float32, device=device)
        _SCRATCH[key] = buf
    return buf[: m * n].view(m, n)


def _bmk_fast(a: Any, b: Any, d: Any, c: Any) -> bool:
    """einsum('bmk,bnk->mn')'s plain call: first ONE extension call that checks, picks the
    default split count and launches (_C.einsum_bmk_torch: plain CUDA torch tensors, no
    workspace to keep: an FP32 d under the atomic reduction or one split, QGEMM_BMK_SPLITS
    unset); what it declines (NotImplemented, nothing done) the Python fast path below, then
    the whole way. Issue 49: the Python steps of a call were most of its host cost (DeepGEMM
    21.6 vs 11.4 us on the H200 host at B = 129, bench/results/2026-11-29-h200-16-x1)."""
    torch = _d.TORCH
    if torch is None:
        return False
    T = torch.Tensor
    if type(a) is not T or type(b) is not T or type(d) is not T or \
            (c is not None and c is not d) or _d.COMPILING():
        return False
    # (a bfloat16 d: straight to the Python fast path, which keeps the workspace that d's
    # several splits need -- the extension would decline after describing the tensors)
    if d.dtype is torch.float32 and \
            _C.einsum_bmk_torch(a, b, d, c is d, SPLIT_TILES, SPLIT_MIN_K, MAX_BATCHES,
                                DG_RULE_MIN_BATCHES) is not NotImplemented:
        return True
    return _bmk_fast_py(torch, a, b, d, c)


def _bmk_fast_py(torch: Any, a: Any, b: Any, d: Any, c: Any) -> bool:
    """einsum('bmk,bnk->mn') for the plain call, the same launch as _bmk_bnk_mn's whole way
    with fewer Python steps (its host cost is most of a call's at DeepGEMM's B = 129 rows,
    issue 49's CUDA-event times), on what _bmk_fast let through (plain torch tensors, not
    traced, c None or d): bfloat16 a [B, M, K] and b [B, N, K] with unit last strides, d
    [M, N] float32 (c None or d itself) or bfloat16 (c None) that the kernel addresses in
    place, M, N, B > 0, and the extension's torch mode takes them (CUDA tensors). False,
    having done nothing, for anything else: the whole way then checks, words any error and
    launches."""
    bf = torch.bfloat16
    if a.dtype is not bf or b.dtype is not bf or a.dim() != 3 or b.dim() != 3 or d.dim() != 2:
        return False
    s, m, k = a.shape
    s_, n, k_ = b.shape
    f32 = d.dtype is torch.float32
    if s_ != s or k_ != k or not s or not m or not n or d.shape[0] != m or d.shape[1] != n or \
            not (f32 or (d.dtype is bf and c is None)) or a.stride(2) != 1 or b.stride(2) != 1:
        return False
    # _kernel_writable(d)
    if (n > 1 and d.stride(1) != 1) or (m > 1 and d.stride(0) * (4 if f32 else 2) % 16) or \
            d.data_ptr() % 16:
        return False
    if a.is_meta or b.is_meta or d.is_meta:
        return False
    reduce = _env(REDUCE_ENV, _REDUCE_ENV_B)
    atomic = reduce in ("", "atomic")
    v = _env(SPLITS_ENV, _SPLITS_ENV_B)
    if v or s >= DG_RULE_MIN_BATCHES:
        splits = _splits_of_env(m, n, s, k, d.device, atomic)
    else:
        splits = bmk_splits(m, n, s, k)
    ws = None
    if not f32 and atomic and splits > 1 and _einsum_variant() & VARIANT_BF16CAST:
        # the FP32 sum into the scratch (the library zeroes it: c None), then torch's cast
        w = _f32_scratch(torch, d.device, m, n)
        if _C.bf16_gemm(_BATCH_SUM, a, b, w, None, None, splits, None, 0,
                        _d.TORCH_MODE) is NotImplemented:
            return False
        d.copy_(w)
        return True
    if not (atomic and f32) and splits > 1:  # (one split: no workspace, _batch_sum's rule)
        total, zero = _C.batch_sum_workspace_bytes(m, n, splits)
        if total:
            ws = _workspace(torch, d.device, total, zero)
    return _C.bf16_gemm(_BATCH_SUM, a, b, d, c, ws, splits, None, 0,
                        _d.TORCH_MODE) is not NotImplemented


def _bmk_eager(a: Any, b: Any, d: Any, c: Any, splits: Any = None) -> None:
    """bmk,bnk->mn on checked, non-empty arguments (m, n, batches > 0): the batch sum."""
    torch = _d.torch_module()
    if a.stride(-1) != 1:
        a = a.contiguous()
    if b.stride(-1) != 1:
        b = b.contiguous()
    m, n = d.shape
    s, _, k = a.shape
    atomic = _reduce_is_atomic()
    if splits is None:
        splits = _splits_of_env(m, n, s, k, d.device, atomic)
    _batch_sum(torch, a, b, d, c, splits, atomic)


def _kernel_writable(t: Any) -> bool:
    """Whether the batch sum's kernel can write (or read) t [M, N] where it is: unit last
    stride, 16-byte rows and a 16-byte aligned start."""
    es = t.element_size()
    return ((t.shape[1] <= 1 or t.stride(1) == 1) and (t.shape[0] <= 1 or t.stride(0) * es % 16 == 0)
            and t.data_ptr() % 16 == 0)


# QGEMM_BMK_REDUCE (read by the library at every call, and here for the split rule and the
# workspace): "atomic" (unset: the default) adds the splits with FP32 atomics in one level,
# "tree" with the deterministic tree (QGEMM_BMK_RADIX). Another value: the library's error.
# (QGEMM_BMK_VARIANT, v1 .. v6[:sN], is the library's alone: the kernel's organisation, no
# change here; v4's, v5's and v6's bf16 d use the same workspace as v3's.)
REDUCE_ENV = "QGEMM_BMK_REDUCE"
_REDUCE_ENV_B = REDUCE_ENV.encode()


def _reduce_is_atomic() -> bool:
    return os.environ.get(REDUCE_ENV, "") in ("", "atomic")


# The batch sum's workspaces kept between calls: (device, stream, zero bytes) -> int32 tensor,
# zeroed once when allocated. Every call leaves its first `zero bytes` zero again (the
# kernel's contract), so the same buffer serves every later call on that stream with the
# same zero area (a call with another zero area would find scratch there: its own buffer).
# One per stream: calls on one stream run in order; other streams get their own.
_WORKSPACES: dict = {}


def _workspace(torch: Any, device: Any, total: int, zero: int) -> Any:
    if device.type == "cuda":
        if torch.cuda.is_current_stream_capturing():
            # a CUDA graph: its own buffer from the graph's pool, zeroed inside the graph (a
            # memset node): replays on any stream never share it with eager calls
            ws = torch.empty(total // 4, dtype=torch.int32, device=device)
            ws[: zero // 4].zero_()
            return ws
        index = device.index if device.index is not None else torch.cuda.current_device()
        key: Any = (index, torch._C._cuda_getCurrentRawStream(index), zero)
    else:  # (CPU tensors: the tests' stand-in launches)
        key = (str(device), 0, zero)
    ws = _WORKSPACES.get(key)
    if ws is None or ws.numel() * 4 < total:
        ws = torch.zeros(total // 4, dtype=torch.int32, device=device)  # once
        _WORKSPACES[key] = ws
    return ws


def _batch_sum(torch: Any, a: Any, b: Any, d: Any, c: Any, splits: int,
               atomic: bool = True) -> None:
    """One launch of qg_bf16_gemm_batch_sum: d = (c +) the sum over a's batches of
    a[i] @ b[i].T, the batches in `splits` ranges whose FP32 sums the kernel adds: with
    atomics (``atomic``, QGEMM_BMK_REDUCE unset or atomic: straight into an FP32 d, or through
    an FP32 workspace for a bf16 d) or by the fixed tree (QGEMM_BMK_REDUCE=tree) through a
    workspace. The workspace (int32 words) is kept per device and stream and zeroed once
    (_workspace): the kernel leaves its zero area zero, so no call launches a fill. A d (or a
    c that is not d) the kernel cannot address in place (strides, alignment) goes through a
    contiguous copy."""
    m, n = d.shape
    if atomic and splits > 1 and d.dtype == torch.bfloat16 and \
            _einsum_variant() & VARIANT_BF16CAST:
        # QGEMM_EINSUM_VARIANT=bf16cast: the FP32 sum into the scratch, then torch's cast
        w = _f32_scratch(torch, d.device, m, n)
        _d.launch_bf16(_BATCH_SUM, a, b, w, None, None, splits, None, None)
        d.copy_(w)
        return
    ws = None
    if not (atomic and d.dtype == torch.float32):  # an FP32 d is the atomics' own target
        total, zero = _C.batch_sum_workspace_bytes(m, n, splits)
        if total:
            ws = _workspace(torch, d.device, total, zero)
    out = d if _kernel_writable(d) else torch.empty((m, n), dtype=d.dtype, device=d.device)
    if c is d:
        c = out if out is d else d.contiguous()
    elif c is not None and not _kernel_writable(c):
        c = c.contiguous()
    _d.launch_bf16(_BATCH_SUM, a, b, out, c, ws, splits, None, None)
    if out is not d:
        d.copy_(out)


_d.EAGER_OPS["einsum_bmk_bnk_mn"] = _bmk_eager


# The split of bmk,bnk->mn's batches: enough CTAs for the SMs (SPLIT_TILES: two per SM of
# a 132-SM H100 / H200), at least SPLIT_MIN_K of K' = B*K per split.
SPLIT_TILES = 264
SPLIT_MIN_K = 1024


def bmk_splits(m: int, n: int, batches: int, k: int) -> int:
    """The split count of bmk,bnk->mn's batch sums: ranges of ceil(batches / splits)
    batches, none empty (what qg_bf16_gemm_batch_sums takes); 1 for one range."""
    tiles = -(-m // 128) * -(-n // 128)
    want = min(-(-SPLIT_TILES // tiles), batches, batches * k // SPLIT_MIN_K, MAX_BATCHES)
    if want <= 1:
        return 1
    per = -(-batches // want)
    return -(-batches // per)


# QGEMM_BMK_SPLITS: which split rule einsum('bmk,bnk->mn') uses (A/B measurements,
# bench/bmk_variants.py): unset or "auto" the default below, "tiles" bmk_splits, "dg"
# bmk_splits_dg, "wide" bmk_splits_wide, or a number (the nearest split count with no empty range, at most
# min(batches, 1024)). Read at every call.
SPLITS_ENV = "QGEMM_BMK_SPLITS"
_SPLITS_ENV_B = SPLITS_ENV.encode()
# The default, under either reduction: bmk_splits below DG_RULE_MIN_BATCHES batches,
# bmk_splits_dg from there. Under the atomic reduction on the H200
# (bench/results/2026-11-28-h200-24-int2/bmk-variants.log, "atomic" = dg everywhere,
# "atomic-tiles" = bmk_splits everywhere): at B = 129 bmk_splits ran 9.9 / 19.7 / 17.8 / 31.1 /
# 22.5 / 32.1 us where dg ran 12.4 / 24.5 / 17.7 / 31.2 / 22.5 / 32.2; from B = 4096 each won
# half of the 12 rows (dg's losses the smaller), so dg stays there.
# Measured on the H200 (bench/results/2026-11-28-h200-21-final/bmk-variants.log, DeepGEMM's
# 12 test rows, radix 2): at B = 129 bmk_splits ran 17.6-38.2 us where the DeepGEMM-like
# rule ran 33.3-38.2; at B = 4096 / 8192 the DeepGEMM-like rule ran 160.7 / 314.0 / 438.3 /
# 292.4 / 603.7 / 839.0 us where bmk_splits ran 196.6 / 344.2 / 489.8 / 344.1 / 581.5 /
# 937.9 (better on 5 of those 6 rows).
DG_RULE_MIN_BATCHES = 1024


def _splits_of_env(m: int, n: int, batches: int, k: int, device: Any = None,
                   atomic: bool = False) -> int:
    v = os.environ.get(SPLITS_ENV, "").strip().lower()
    if v in ("", "auto"):
        # below DG_RULE_MIN_BATCHES fewer, thinner splits (bmk_splits); from there
        # DeepGEMM's rule (about one 128x128-tile CTA per SM): measured under both reductions
        if batches < DG_RULE_MIN_BATCHES:
            return bmk_splits(m, n, batches, k)
        from ._runtime import get_num_sms
        return bmk_splits_dg(m, n, batches, k, get_num_sms(device))
    if v == "tiles":
        return bmk_splits(m, n, batches, k)
    if v == "dg":
        from ._runtime import get_num_sms
        return bmk_splits_dg(m, n, batches, k, get_num_sms(device))
    if v == "wide":
        from ._runtime import get_num_sms
        return bmk_splits_wide(m, n, batches, k, get_num_sms(device))
    if v.isdigit() and int(v) >= 1:
        return _whole_splits(batches, min(int(v), batches, MAX_BATCHES))
    raise ValueError(f"qgemm: einsum('bmk,bnk->mn'): {SPLITS_ENV}={v!r} must be auto, tiles, dg, "
                     "wide or a split count >= 1")


def _whole_splits(batches: int, want: int) -> int:
    """The split count of ranges of ceil(batches / want) batches: none empty."""
    if want <= 1:
        return 1
    per = -(-batches // want)
    return -(-batches // per)


def bmk_splits_dg(m: int, n: int, batches: int, k: int, num_sms: int) -> int:
    """A candidate split rule (QGEMM_BMK_SPLITS=dg), after DeepGEMM's: about one CTA per SM in
    all. DeepGEMM gives each CTA ceil(B*ceil(K/64) / max(num_sms // tiles, 1)) of the B*K/64
    k-blocks (128x128 tiles); here that many k-blocks rounded up to whole batches (a split
    is a range of batches), and at least 2 k-blocks per split (the pipeline's overlap)."""
    tiles = -(-m // 128) * -(-n // 128)
    kb = max(1, -(-k // 64))  # k-blocks of one batch
    per_cta = -(-(batches * kb) // max(num_sms // tiles, 1))
    per = max(-(-per_cta // kb), -(-2 // kb), 1)  # batches per split
    want = min(-(-batches // per), MAX_BATCHES)
    return _whole_splits(batches, want)


def bmk_splits_wide(m: int, n: int, batches: int, k: int, num_sms: int) -> int:
    """A candidate split rule (QGEMM_BMK_SPLITS=wide): bmk_splits_dg's, the tiles counted as
    128 x 256 (or 256 x 128 for M > N) instead of 128 x 128, so that about one CTA per SM
    runs the wider tile the planner then picks (at 2 tiles a split: 128x192 for M 128 x N 384,
    256x128 for 384 x 128, 128x256 for 256 x 256). The batches are memory-bound from a few
    hundred on: a wider tile pulls fewer operand bytes through L2 per product (128 x 256:
    384 rows a K element for 32K products, 128 x 128: 512), and at 4096 batches 128x256 ran
    the 256x256x256 row at DeepGEMM's time where 128x128 ran 14% slower
    (bench/results/2026-11-28-h200-24-int2, "atomic" vs "atomic-tiles")."""
    if n >= m:
        tiles = -(-m // 128) * -(-n // 256)
    else:
        tiles = -(-m // 256) * -(-n // 128)
    kb = max(1, -(-k // 64))
    per_cta = -(-(batches * kb) // max(num_sms // tiles, 1))
    per = max(-(-per_cta // kb), -(-2 // kb), 1)
    want = min(-(-batches // per), MAX_BATCHES)
    return _whole_splits(batches, want)


# the batched kind's view flags of each per-head expression (_per_head: bit 0 a and d read
# [H, B, .], bit 1 b's last two dimensions swapped)
_PER_HEAD_FLAGS = {BHR_HDR_BHD: 1, BHD_HDR_BHR: 3}


def _per_head_fast(flags: int, a: Any, b: Any, d: Any) -> bool:
    """The per-head expressions' plain call, the same launch as _per_head's with fewer Python
    steps (issue 49: at B = 4-128 a call's host cost is most of its CUDA-event time): plain
    torch tensors (not traced), bfloat16, a [B, H, R] (resp. [B, H, D]), b [H, D, R] and d as
    _per_head wants them, unit last strides, B, H, N > 0, H <= MAX_BATCHES, and the
    extension's torch mode taking them (CUDA tensors). False, nothing done, otherwise."""
    torch = _d.TORCH
    if torch is None:
        return False
    T = torch.Tensor
    if type(a) is not T or type(b) is not T or type(d) is not T or _d.COMPILING():
        return False
    bf = torch.bfloat16
    if a.dtype is not bf or b.dtype is not bf or d.dtype is not bf or a.dim() != 3 or \
            b.dim() != 3 or d.dim() != 3:
        return False
    batch, h, r = a.shape
    if flags == 1:  # bhr,hdr->bhd: b [H, N, R]
        h_, n, r_ = b.shape
    else:  # bhd,hdr->bhr: b [H, R, N] (R here the contracted D)
        h_, r_, n = b.shape
    if h_ != h or r_ != r or d.shape[0] != batch or d.shape[1] != h or d.shape[2] != n or \
            not batch or not h or not n or h > MAX_BATCHES or \
            (r > 1 and a.stride(2) != 1) or (b.shape[2] > 1 and b.stride(2) != 1) or \
            (n > 1 and d.stride(2) != 1):
        return False
    return _C.bf16_gemm(_BATCHED, a, b, d, None, None, flags, None, 0,
                        _d.TORCH_MODE) is not NotImplemented


def _per_head(torch: Any, canon: str, a: Any, b: Any, d: Any, use_cublaslt: bool) -> None:
    nt = canon == BHR_HDR_BHD
    func = f"einsum({_NAMES[canon]!r})"
    bf = torch.bfloat16
    if nt:  # a [B, H, R], b [H, D, R] -> d [B, H, D]
        batch, h, r = _check_3d(func, "a", a, bf, "[B, H, R]")
        h_, n, r_ = _check_3d(func, "b", b, bf, "[H, D, R]")
        want_b, want_d = (h, n, r), (batch, h, n)
        ok = h_ == h and r_ == r
    else:  # a [B, H, D], b [H, D, R] -> d [B, H, R]
        batch, h, r = _check_3d(func, "a", a, bf, "[B, H, D]")
        h_, r_, n = _check_3d(func, "b", b, bf, "[H, D, R]")
        want_b, want_d = (h, r, n), (batch, h, n)
        ok = h_ == h and r_ == r
    if not ok:
        raise ValueError(f"qgemm: {func}: b must be {list(want_b)} for a {list(a.shape)}, got "
                         f"{list(b.shape)}")
    _check_3d(func, "d", d, bf, "[B, H, N]")
    if tuple(d.shape) != want_d:
        raise ValueError(f"qgemm: {func}: d must be {list(want_d)}, got {list(d.shape)}")
    for name, t in (("a", a), ("b", b), ("d", d)):
        _unit_last(func, name, t)
    if batch == 0 or h == 0 or n == 0:
        return
    if use_cublaslt:  # cuBLAS through torch, as DeepGEMM's reference path
        bt = b.transpose(1, 2) if nt else b  # [H, R, N]
        d.transpose(0, 1).copy_(torch.matmul(a.transpose(0, 1), bt))
        return
    # every head in one launch (the batched BF16 GEMM, H batches of strided views, nothing
    # copied): A [H, B, K] (batch stride K, row stride H*K), B [H, N, K] (NT: K-major; NN: the
    # transposed view, MN-major), D [H, B, N]; K = R (resp. D) accumulated whole. Up to
    # MAX_BATCHES heads the extension makes those views itself (the batched kind's view flags,
    # python/csrc/bf16.c: bit 0 a and d read [H, B, .], bit 1 b's last two dimensions
    # swapped): torch's transpose and slice cost ~3 us of host time each.
    if h <= MAX_BATCHES:
        _d.launch_bf16(_BATCHED, a, b, d, None, None, 1 if nt else 3, None, None)
        return
    a3 = a.transpose(0, 1)
    b3 = b if nt else b.transpose(1, 2)
    d3 = d.transpose(0, 1)
    for h0 in range(0, h, MAX_BATCHES):
        h1 = min(h, h0 + MAX_BATCHES)
        _d.launch_bf16(_BATCHED, a3[h0:h1], b3[h0:h1], d3[h0:h1], None, None, 0, None, None)


# ---- FP8 ------------------------------------------------------------------------------------


def fp8_einsum(expr: str, a: Pair, b: Pair, d: Tensor, c: Any = None,
               recipe: Any = (1, 128, 128)) -> None:
    """DeepGEMM's fp8_einsum on SM90: ``bhr,hdr->bhd`` with block-scaled FP8 operands.

    ``a = (x, sfx)``: x [B, H, R] e4m3, sfx [B, H, ceil(R/128)] float32 (1x128
    scales: ``per_token_cast_to_fp8(x.view(-1, R))`` viewed [B, H, .]); ``b =
    (y, sfy)``: y [H, D, R] e4m3, sfy [H, ceil(D/128), ceil(R/128)] float32
    (128x128 blocks); d [B, H, D] bfloat16, written. ``recipe`` (1, 128, 128)
    only and ``c`` None (qgemm's SM90 FP8 GEMM writes bf16 D). The scales are
    made M-major once for all heads (a copy of B x H x R/128 floats), then the
    heads run in ONE launch of the batched FP8 GEMM (``qg_batched_fp8_gemm_nt``,
    H batches of strided views of x, y and d, as DeepGEMM's fp8_bmm): about 3x
    less GPU time than one GEMM a head at B <= 128 (H 8, R 4096, D 1024) and 1.03-1.09x
    at B 4096-8192 on an H200 (bench/results/2026-11-28-h200-26-t1), the same bytes.

    The environment variable ``QGEMM_FP8_EINSUM=loop`` (read at each call)
    selects one FP8 GEMM a head instead (the path under torch.compile, whose
    custom ops are the per-head GEMMs). ``QGEMM_EINSUM_VARIANT=sfkernel`` (or
    ``new``; A/B runs) copies the scales with qgemm's scale transpose kernel
    instead of torch's copy (the same values).
    """
    canon = _CANON.get(expr) if type(expr) is str else None
    if canon is None:
        canon = _canon(expr)
    if canon == BHR_HDR_BHD and c is None and type(recipe) is tuple and \
            recipe == _dg.SUPPORTED_RECIPE and _fp8_fast(a, b, d):
        return
    if canon != BHR_HDR_BHD:
        raise NotImplementedError(
            f"qgemm: fp8_einsum: expression {expr!r} is not supported; on SM90 qgemm (as "
            "DeepGEMM) implements 'bhr,hdr->bhd' (DeepGEMM's 'bhd,hdr->bhr' and "
            "'bhd,bhr->hdr' are SM100 only)")
    func = "fp8_einsum('bhr,hdr->bhd')"
    if _dg._as_tuple(recipe) != _dg.SUPPORTED_RECIPE:
        raise _dg.unsupported(func, "recipe", recipe, "SM90's FP8 einsum takes the (1, 128, 128) "
                              "recipe (1x128 scales for x, 128x128 for y)")
    if c is not None:
        raise _dg.unsupported(func, "c", c, "qgemm's FP8 einsum writes d = x @ y.T (bfloat16); "
                              "pass c=None")
    x, sfx = _d.pair(a, "a")
    y, sfy = _d.pair(b, "b")
    torch = _torch_of(func, x, sfx, y, sfy, d)
    e4m3, f32 = torch.float8_e4m3fn, torch.float32
    batch, h, r = _check_3d(func, "a[0]", x, e4m3, "[B, H, R]")
    h_, n, r_ = _check_3d(func, "b[0]", y, e4m3, "[H, D, R]")
    if h_ != h or r_ != r:
        raise ValueError(f"qgemm: {func}: b[0] must be [{h}, D, {r}], got {list(y.shape)}")
    kb, nb = -(-r // 128), -(-n // 128)
    _check_3d(func, "a[1]", sfx, f32, "[B, H, ceil(R/128)]")
    if tuple(sfx.shape) != (batch, h, kb):
        raise ValueError(f"qgemm: {func}: a[1] must be [{batch}, {h}, {kb}], "
                         f"got {list(sfx.shape)}")
    _check_3d(func, "b[1]", sfy, f32, "[H, ceil(D/128), ceil(R/128)]")
    if tuple(sfy.shape) != (h, nb, kb):
        raise ValueError(f"qgemm: {func}: b[1] must be [{h}, {nb}, {kb}], got {list(sfy.shape)}")
    if d.dim() != 3 or tuple(d.shape) != (batch, h, n):
        raise ValueError(f"qgemm: {func}: d must be [{batch}, {h}, {n}], got {list(d.shape)}")
    if d.dtype != torch.bfloat16:
        raise _dg.unsupported(func, "d", d, "qgemm's FP8 einsum writes bfloat16 d")
    for name, t in (("a[0]", x), ("b[0]", y), ("d", d)):
        _unit_last(func, name, t)
    if batch == 0 or h == 0 or n == 0:
        return
    # every head's 1x128 scales M-major at once ([H, B, R/128], one copy), then one GEMM a head.
    # The heads' views by one unbind a tensor (8 selects cost ~4x one unbind of 8 on the host),
    # each GEMM straight to the torch fast path (_C.gemm_torch) while not traced; what it does
    # not take (NotImplemented, or K = 0's ZERO_K) goes the whole way, which asks it again.
    _einsum_variant()  # (a bad QGEMM_EINSUM_VARIANT refused here too, as on the fast path)
    sfa = mn_major(torch, sfx.permute(1, 0, 2), False)
    # (R = 0: the loop's K = 0 handling zeroes d)
    if os.environ.get("QGEMM_FP8_EINSUM") != "loop" and r > 0 and not _d.COMPILING() and \
            _fp8_bmm(x.permute(1, 0, 2), sfa.transpose(1, 2), y,
                     sfy if sfy.is_contiguous() else sfy.contiguous(), d.permute(1, 0, 2)):
        return
    xs, ds, ys, sfas = x.unbind(1), d.unbind(1), y.unbind(0), sfa.unbind(0)
    if sfy.is_contiguous() and (h == 1 or nb * kb % 4 == 0):
        sfbs = sfy.unbind(0)
    else:  # each head's sfb row-major at a 16-byte aligned address (the GEMM's sfb check)
        per = -(-nb * kb // 4) * 4
        padded = torch.empty((h, per), dtype=f32, device=sfy.device)
        padded[:, :nb * kb].view(h, nb, kb).copy_(sfy)
        sfbs = [padded[i, :nb * kb].view(nb, kb) for i in range(h)]
    fast = None if _d.COMPILING() else _d.FAST_GEMM
    for i in range(h):
        if fast is None or fast(_DENSE, xs[i], sfas[i], ys[i], sfbs[i], ds[i], None, 0,
                                None) is not None:
            _d.gemm(_DENSE, (xs[i], sfas[i]), (ys[i], sfbs[i]), ds[i], None, 0, None, None)


_BMM_NAMES = ("a", "sfa", "b", "sfb", "d")


def _fp8_fast(a: Any, b: Any, d: Any) -> bool:
    """fp8_einsum('bhr,hdr->bhd') for the plain call in ONE extension call (issue 49: qgemm's
    host path cost 45.9 us a call where DeepGEMM's cost 28.9 on the H200 host,
    bench/results/2026-11-29-h200-16-x1): the M-major storage of x's scales allocated here
    (one torch op), then _C.fp8_einsum_torch, which checks every tensor, makes the [H, B, .]
    views of x and d and the [H, kb, B] view of the scales, and launches the batched FP8
    GEMM. The scales are copied there by torch's copy before the call (the default), or
    under QGEMM_EINSUM_VARIANT=sfkernel by qgemm's scale transpose kernel that the same C
    call launches first. (x, sfx) and (y, sfy) tuples, the batched GEMM (QGEMM_FP8_EINSUM
    not loop), not traced, a torch that exports float8 through DLPack (what the whole way
    needs: its first call finds out); anything the extension declines (NotImplemented:
    another dtype, shape, stride, device, a tensor it does not take) returns False having
    written no output (at most the fresh scale storage): the whole way then checks, words
    and launches."""
    if type(a) is not tuple or type(b) is not tuple or len(a) != 2 or len(b) != 2 or \
            _d.TORCH_FP8_DLPACK is not True or _d.COMPILING():
        return False
    x, sfx = a
    T = _d.TORCH.Tensor
    if type(x) is not T or type(sfx) is not T:
        return False
    shape = x.shape
    if len(shape) != 3:
        return False
    batch, h, r = shape
    if not batch or not h or not r or \
            _env("QGEMM_FP8_EINSUM", _FP8_EINSUM_ENV_B) == "loop":
        return False
    kb, ld = (r + 127) >> 7, (batch + 3) & ~3
    if _einsum_variant() & VARIANT_SFKERNEL:
        # [H, kb, ld], written whole (the padding columns zeroed) by the C call's kernel
        sfa, flags = sfx.new_empty((h, kb, ld)), _C.FP8_EINSUM_SF_TRANSPOSE
    else:
        # [H, kb, ld] storage allocated as its [ld, H, kb] transpose, so that its first B
        # rows are a view shaped like sfx (torch's copy needs no permuted view of sfx); the
        # extension reads it [H, kb, B]. (sfx's dtype and shape checked first: copy_ would
        # convert or broadcast what the whole way refuses.)
        if sfx.dtype is not _d.TORCH.float32 or sfx.shape != (batch, h, kb):
            return False
        sfa = sfx.new_empty_strided((ld, h, kb), (1, kb * ld, ld))
        if ld != batch:
            sfa = sfa[:batch]
        sfa.copy_(sfx)
        flags = 0
    y, sfy = b
    return _C.fp8_einsum_torch(x, sfx, y, sfy, d, sfa, flags) is not NotImplemented


def _fp8_bmm(a: Any, sfa: Any, b: Any, sfb: Any, d: Any) -> bool:
    """One launch of the batched FP8 GEMM (_C.fp8_bmm) through launch_family (torch's
    current stream of the tensors' device; its torch mode first): a [G, M, K], sfa [G, K/128,
    M] (M-major), b [G, N, K], sfb [G, N/128, K/128], d [G, M, N], any batch and row strides
    (the extension and the library check them). False, having done nothing, for fake or
    meta tensors: the per-head loop's custom ops then run their fake implementations."""
    tensors = [a, sfa, b, sfb, d]
    e4m3_bytes = _d.torch_fp8_as_bytes(tensors)  # (replaces a and b by uint8 views in place)
    return _d.launch_family(_C.fp8_bmm, _BMM_NAMES, tensors, (), (None, e4m3_bytes), None,
                            decline_fake=True) is not _d.FAKE


def _head_splits(func: str, head_splits: Any) -> Tuple[int, int, int]:
    if not isinstance(head_splits, (tuple, list)) or len(head_splits) != 3:
        raise TypeError(f"qgemm: {func}: head_splits must be a (left, mid, right) tuple of ints, "
                        f"got {head_splits!r}")
    left, mid, right = (as_int(v, f"head_splits[{i}]", lo=0) for i, v in enumerate(head_splits))
    if left + right == 0:
        raise ValueError(f"qgemm: {func}: head_splits {tuple(head_splits)}: left + right must "
                         "be > 0")
    return left, mid, right


def fp8_gemm_nt_skip_head_mid(a: Pair, b: Pair, d: Tensor, head_splits: Sequence[int],
                              recipe: Any = None, compiled_dims: str = "nk",
                              disable_ue8m0_cast: bool = False) -> None:
    """DeepGEMM's fp8_gemm_nt_skip_head_mid: the FP8 GEMM ``a @ b.T`` ([M, N], N =
    heads x (left + right)) written into d bfloat16 [M, heads x (left + mid + right)]
    with the middle of every head skipped.

    ``head_splits = (left, mid, right)``: head j's first ``left`` product
    columns go to d's columns [j*w, j*w + left) and its last ``right`` to
    [j*w + left + mid, (j+1)*w), w = left + mid + right; the ``mid`` columns
    between are left untouched (DeepGEMM's apply_skip_head_mid layout). a and
    b as fp8_fp4_gemm_nt takes them (sfa in any layout, made M-major; the
    (1, 128, 128) recipe). Computed as the GEMM into a bf16 temporary [M, N]
    and a copy of its columns (mid = 0: straight into d).
    """
    func = "fp8_gemm_nt_skip_head_mid"
    left, mid, right = _head_splits(func, head_splits)
    if _dg.check_gemm_args(func, None, recipe, None, None, compiled_dims, disable_ue8m0_cast):
        raise _dg.unsupported(func, "recipe", recipe, "the skip-head-mid GEMM takes the "
                              "(1, 128, 128) recipe (DeepGEMM's SM90 1D2D kernel)")
    a_, _ = _d.pair(a, "a")
    b_, _ = _d.pair(b, "b")
    torch = _torch_of(func, a_, b_, d)
    if a_.dim() != 2 or b_.dim() != 2 or d.dim() != 2:
        raise ValueError(f"qgemm: {func}: want a [M, K], b [N, K] and d [M, N'], got a "
                         f"{list(a_.shape)}, b {list(b_.shape)}, d {list(d.shape)}")
    m, k = a_.shape
    n = b_.shape[0]
    width = left + right
    if n % width:
        raise ValueError(f"qgemm: {func}: N = {n} (b.shape[0]) must be a multiple of left + "
                         f"right = {width}")
    heads = n // width
    n_full = n + heads * mid
    if d.shape[0] != m or d.shape[1] != n_full:
        raise ValueError(f"qgemm: {func}: d must be [M, N + N / (left + right) * mid] = "
                         f"[{m}, {n_full}], got {list(d.shape)}")
    if d.dtype != torch.bfloat16:
        raise _dg.unsupported(func, "d", d, "qgemm writes the skip-head-mid output in bfloat16")
    _unit_last(func, "d", d)
    if m == 0 or n == 0:
        return
    if mid == 0:  # nothing skipped: d is the product
        fp8_fp4_gemm_nt(a, b, d, None, recipe, None, None, compiled_dims, disable_ue8m0_cast)
        return
    tmp = torch.empty((m, n), dtype=torch.bfloat16, device=d.device)
    fp8_fp4_gemm_nt(a, b, tmp, None, recipe, None, None, compiled_dims, disable_ue8m0_cast)
    dv = d.unflatten(1, (heads, left + mid + right))
    tv = tmp.view(m, heads, width)
    if left:
        dv[:, :, :left].copy_(tv[:, :, :left])
    if right:
        dv[:, :, left + mid:].copy_(tv[:, :, left:])


__all__ = ["einsum", "fp8_einsum", "fp8_gemm_nt_skip_head_mid"]
