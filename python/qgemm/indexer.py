"""The indexer / HC family: DeepSeek-V3.2's lightning indexer and the
HyperConnection pre-norm GEMM, with DeepGEMM's names, arguments and defaults.

* ``fp8_mqa_logits`` / ``fp8_fp4_mqa_logits``: prefill, ragged key ranges::

      logits[i, j] = sum_h relu(q[i, h] . kv[j] * kv_scale[j]) * weights[i, h]
                     for cu_seq_len_k_start[i] <= j < cu_seq_len_k_end[i]

  (``clean_logits``: -inf elsewhere; ``max_seqlen_k > 0``: the compressed
  form, ``logits[i, j - ks[i]]``, [seq_len, max_seqlen_k]).
* ``get_paged_mqa_logits_metadata`` + ``fp8_paged_mqa_logits`` /
  ``fp8_fp4_paged_mqa_logits``: decode over the paged KV cache (DeepGEMM's
  fused ``[num_blocks, 64, 1, head_dim + 4]`` uint8 layout, 2-D
  ``context_lens [batch_size, next_n]``); the metadata is computed on the
  device, so both calls capture in a CUDA graph and replay with new lengths.
* ``tf32_hc_prenorm_gemm``: ``d = a @ b.T`` (a bf16, b float32, TF32 tensor
  cores, FP32 sums) and ``sqr_sum = (a * a).sum(-1)``, optionally as
  ``num_splits`` partial sums over K.

SM90 forms only (as DeepGEMM on Hopper): FP8 q and kv (FP4 is SM100's),
32 or 64 heads, head_dim 32, 64 or 128, next_n 1 or 2, 64-key cache blocks,
float32 weights. Results are bitwise reproducible. The functions run on
torch's current stream of the tensors' device (or ``stream=``); the logits
are allocated with a padded row stride, as DeepGEMM does, and returned as
views of the requested width.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from . import _dispatch as _d
from ._dispatch import StreamLike, Tensor, as_int

_CONTEXT_LEN_MAX = 1 << 30  # the schedule's clamp when it cannot know max_context_len


def _torch(name: str, x: Any) -> Any:
    torch = _d.torch_module()
    if torch is None or not isinstance(x, torch.Tensor):
        raise TypeError(f"qgemm: {name} must be a torch.Tensor, got {type(x).__name__}")
    return torch


def _bytes(torch: Any, x: Any) -> Any:
    """An 8-bit tensor as its uint8 bytes (PyTorch < 2.8 cannot export float8)."""
    if x.dtype == torch.uint8:
        return x
    if x.element_size() != 1:
        raise ValueError(f"qgemm: expected float8_e4m3fn values, got {x.dtype}")
    return x.view(torch.uint8)


def _logits_dtype(torch: Any, dtype: Any) -> Any:
    if dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"qgemm: logits_dtype must be torch.float32 or torch.bfloat16, got {dtype}")
    return dtype


def _padded(torch: Any, rows: int, cols: int, dtype: Any, device: Any) -> Any:
    """The [rows, ld] buffer of [rows, cols] logits, rows 256 elements (>= 512
    bytes) apart, as DeepGEMM pads them (the result is its [:, :cols] view)."""
    return torch.empty((rows, max(256, (cols + 255) // 256 * 256)), dtype=dtype, device=device)


def _pair(name: str, x: Any) -> Tuple[Any, Any]:
    if isinstance(x, (tuple, list)) and len(x) == 2:
        return x[0], x[1]
    raise TypeError(f"qgemm: {name} must be a pair (values, scales), got {type(x).__name__}")


def fp8_fp4_mqa_logits(q: Any, kv: Tuple[Tensor, Tensor], weights: Tensor,
                       cu_seq_len_k_start: Tensor, cu_seq_len_k_end: Tensor,
                       clean_logits: bool = True, max_seqlen_k: int = 0,
                       logits_dtype: Any = None, *, stream: Optional[StreamLike] = None) -> Tensor:
    """FP8 MQA logits over ragged key ranges (DeepGEMM's ``fp8_fp4_mqa_logits``).

    ``q``: ``(q_fp8, None)`` (or ``q_fp8`` alone), float8_e4m3fn
    [seq_len, num_heads, head_dim], contiguous; ``kv``: ``(kv_fp8
    [seq_len_kv, head_dim] float8_e4m3fn, kv_scales [seq_len_kv] float32)``;
    ``weights`` float32 [seq_len, num_heads]; ``cu_seq_len_k_start`` /
    ``cu_seq_len_k_end`` int32 [seq_len]: each query's key range.
    Returns the logits, ``logits_dtype`` (float32 by default, or bfloat16):
    [seq_len, seq_len_kv], -inf outside each range with ``clean_logits``
    (else undefined there); with ``max_seqlen_k > 0`` [seq_len, max_seqlen_k],
    row i holding keys ks[i]..ke[i]-1 (``clean_logits`` must be False).
    """
    if isinstance(q, (tuple, list)):
        q_fp, q_sf = _pair("q", q)
        if q_sf is not None:
            raise NotImplementedError("qgemm: FP4 q (with scales) is SM100's; SM90 takes FP8 q "
                                      "with q's scale None")
    else:
        q_fp = q
    kv_fp, kv_sf = _pair("kv", kv)
    torch = _torch("q", q_fp)
    for name, x in (("kv", kv_fp), ("kv scales", kv_sf), ("weights", weights),
                    ("cu_seq_len_k_start", cu_seq_len_k_start),
                    ("cu_seq_len_k_end", cu_seq_len_k_end)):
        _torch(name, x)
    dtype = _logits_dtype(torch, torch.float32 if logits_dtype is None else logits_dtype)
    max_seqlen_k = as_int(max_seqlen_k, "max_seqlen_k")
    if max_seqlen_k < 0:
        raise ValueError(f"qgemm: max_seqlen_k must be >= 0, got {max_seqlen_k}")
    clean = bool(clean_logits)
    if max_seqlen_k > 0 and clean:
        raise ValueError("qgemm: compressed logits (max_seqlen_k > 0) are not cleaned: pass "
                         "clean_logits=False")
    if q_fp.dim() != 3 or kv_fp.dim() != 2:
        raise ValueError("qgemm: q must be [seq_len, num_heads, head_dim] and kv "
                         f"[seq_len_kv, head_dim], got {tuple(q_fp.shape)} and {tuple(kv_fp.shape)}")
    if weights.dtype != torch.float32:
        raise ValueError(f"qgemm: weights must be float32 on SM90, got {weights.dtype}")
    seq_len, seq_len_kv = q_fp.shape[0], kv_fp.shape[0]
    cols = max_seqlen_k if max_seqlen_k > 0 else seq_len_kv
    logits = _padded(torch, seq_len, cols, dtype, q_fp.device)
    if _d.torch_mode_ok(stream):  # the [:, :cols] view by one as_strided (a slice is ~3 us)
        out = logits.as_strided((seq_len, cols), (logits.shape[1], 1))
        if _d.indexer_torch_mode("mqa_logits", (q_fp, kv_fp, kv_sf, weights, cu_seq_len_k_start,
                                                cu_seq_len_k_end, out),
                                 (int(clean), max_seqlen_k)):
            return out
    _d.launch_indexer("mqa_logits", [_bytes(torch, q_fp), _bytes(torch, kv_fp), kv_sf, weights,
                                     cu_seq_len_k_start, cu_seq_len_k_end, logits],
                      (cols, int(clean), max_seqlen_k), stream)
    return logits[:, :cols]


def fp8_mqa_logits(q: Tensor, kv: Tuple[Tensor, Tensor], weights: Tensor,
                   cu_seq_len_k_start: Tensor, cu_seq_len_k_end: Tensor,
                   clean_logits: bool = True, max_seqlen_k: int = 0, *,
                   stream: Optional[StreamLike] = None) -> Tensor:
    """DeepGEMM's legacy ``fp8_mqa_logits``: ``fp8_fp4_mqa_logits`` with ``q`` a
    float8_e4m3fn tensor and float32 logits."""
    return fp8_fp4_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end,
                              clean_logits, max_seqlen_k, None, stream=stream)


def get_paged_mqa_logits_metadata(context_lens: Tensor, block_kv: int, num_sms: int,
                                  indices: Any = None, *,
                                  stream: Optional[StreamLike] = None) -> Tensor:
    """The split of a decode step's work over ``num_sms`` CTAs (DeepGEMM's
    ``get_paged_mqa_logits_metadata``): int32 [num_sms + 1, 2], computed on the
    device from ``context_lens`` (int32 [batch_size, next_n], contiguous) by a
    kernel, so it captures in a CUDA graph. ``block_kv`` must be 64 (SM90);
    ``indices`` (SM100's varlen form) must be None. Pass the result to
    ``fp8_paged_mqa_logits`` with the same ``context_lens``, whose values must
    not exceed its ``max_context_len``.
    """
    torch = _torch("context_lens", context_lens)
    if as_int(block_kv, "block_kv") != 64:
        raise ValueError(f"qgemm: block_kv must be 64 on SM90, got {block_kv}")
    if indices is not None:
        raise NotImplementedError("qgemm: indices (the varlen form) is SM100's")
    num_sms = as_int(num_sms, "num_sms")
    if num_sms < 1:
        raise ValueError(f"qgemm: num_sms must be >= 1, got {num_sms}")
    if context_lens.dim() != 2:
        raise ValueError("qgemm: context_lens must be 2-D [batch_size, next_n] (DeepGEMM's "
                         f"2-D form), got shape {tuple(context_lens.shape)}")
    schedule = torch.empty((num_sms + 1, 2), dtype=torch.int32, device=context_lens.device)
    _d.launch_indexer("paged_mqa_schedule", [context_lens, schedule], (_CONTEXT_LEN_MAX,), stream)
    return schedule


def fp8_fp4_paged_mqa_logits(q: Any, kv_cache: Tensor, weights: Tensor, context_lens: Tensor,
                             block_table: Tensor, schedule_meta: Tensor, max_context_len: int,
                             clean_logits: bool = False, logits_dtype: Any = None,
                             indices: Any = None, *,
                             stream: Optional[StreamLike] = None) -> Tensor:
    """FP8 MQA logits over the paged KV cache (DeepGEMM's ``fp8_fp4_paged_mqa_logits``).

    ``q``: ``(q_fp8, None)`` (or ``q_fp8``), float8_e4m3fn [batch_size, next_n,
    num_heads, head_dim]; ``kv_cache`` uint8 [num_blocks, 64, 1, head_dim + 4]
    (each block: 64 rows of FP8 values, then their 64 float32 scales);
    ``weights`` float32 [batch_size * next_n, num_heads]; ``context_lens`` int32
    [batch_size, next_n]; ``block_table`` int32 [batch_size, max_blocks];
    ``schedule_meta`` from ``get_paged_mqa_logits_metadata``. Returns
    ``logits_dtype`` (float32 by default) [batch_size * next_n,
    max_context_len]: key j of row (b, t) for j < context_lens[b, t]; the other
    columns -inf with ``clean_logits``, else undefined.
    """
    # The fast path (the decode step's CPU time, issue 50: after a synchronize the GPU waits
    # for it): an int max_context_len, no stream, not traced, q 4-D -> the padded logits and
    # one call of the extension in its torch mode, which makes every check; anything it does
    # not take (NotImplemented) or any other argument goes the checked way below.
    q_fp = q[0] if type(q) is tuple and len(q) == 2 and q[1] is None else q
    torch = _d.torch_module()
    if (stream is None and indices is None and type(max_context_len) is int
            and 0 < max_context_len <= _CONTEXT_LEN_MAX and torch is not None
            and type(q_fp) is torch.Tensor and q_fp.dim() == 4 and not _d.COMPILING()):
        shape = q_fp.shape
        dtype = torch.float32 if logits_dtype is None else logits_dtype
        if dtype is torch.float32 or dtype is torch.bfloat16:
            buf = _padded(torch, shape[0] * shape[1], max_context_len, dtype, q_fp.device)
            # the padded buffer itself goes to the extension; its [:, :max_context_len]
            # view is made after the launch (CPU time the kernel hides), and not at all
            # where no column is padding
            if _d._C.paged_mqa_logits(q_fp, kv_cache, weights, context_lens, block_table,
                                      schedule_meta, buf, max_context_len, int(bool(clean_logits)),
                                      0, _d.TORCH_MODE) is not NotImplemented:
                return buf if buf.shape[1] == max_context_len else buf[:, :max_context_len]
    if isinstance(q, (tuple, list)):
        q_fp, q_sf = _pair("q", q)
        if q_sf is not None:
            raise NotImplementedError("qgemm: FP4 q (with scales) is SM100's")
    else:
        q_fp = q
    torch = _torch("q", q_fp)
    for name, x in (("kv_cache", kv_cache), ("weights", weights), ("context_lens", context_lens),
                    ("block_table", block_table), ("schedule_meta", schedule_meta)):
        _torch(name, x)
    if indices is not None:
        raise NotImplementedError("qgemm: indices (the varlen form) is SM100's")
    dtype = _logits_dtype(torch, torch.float32 if logits_dtype is None else logits_dtype)
    max_context_len = as_int(max_context_len, "max_context_len")
    if max_context_len < 1:
        raise ValueError(f"qgemm: max_context_len must be >= 1, got {max_context_len}")
    if q_fp.dim() != 4:
        raise ValueError("qgemm: q must be [batch_size, next_n, num_heads, head_dim], got "
                         f"{tuple(q_fp.shape)}")
    if weights.dtype != torch.float32:
        raise ValueError(f"qgemm: weights must be float32 on SM90, got {weights.dtype}")
    rows = q_fp.shape[0] * q_fp.shape[1]
    logits = _padded(torch, rows, max_context_len, dtype, q_fp.device)
    clean = int(bool(clean_logits))
    if _d.torch_mode_ok(stream):  # as fp8_fp4_mqa_logits
        out = logits.as_strided((rows, max_context_len), (logits.shape[1], 1))
        if _d.indexer_torch_mode("paged_mqa_logits", (q_fp, kv_cache, weights, context_lens,
                                                      block_table, schedule_meta, out),
                                 (max_context_len, clean)):
            return out
    _d.launch_indexer("paged_mqa_logits", [_bytes(torch, q_fp), _bytes(torch, kv_cache), weights,
                                           context_lens, block_table, schedule_meta, logits],
                      (max_context_len, max_context_len, clean), stream)
    return logits[:, :max_context_len]


def fp8_paged_mqa_logits(q: Tensor, kv_cache: Tensor, weights: Tensor, context_lens: Tensor,
                         block_table: Tensor, schedule_meta: Tensor, max_context_len: int,
                         clean_logits: bool = False, indices: Any = None, *,
                         stream: Optional[StreamLike] = None) -> Tensor:
    """DeepGEMM's legacy ``fp8_paged_mqa_logits``: ``fp8_fp4_paged_mqa_logits``
    with ``q`` a float8_e4m3fn tensor and float32 logits."""
    return fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta,
                                    max_context_len, clean_logits, None, indices, stream=stream)


def tf32_hc_prenorm_gemm(a: Tensor, b: Tensor, d: Tensor, sqr_sum: Tensor,
                         num_splits: Optional[int] = None, *,
                         stream: Optional[StreamLike] = None) -> None:
    """The HyperConnection pre-norm GEMM (DeepGEMM's ``tf32_hc_prenorm_gemm``).

    ``a`` bfloat16 [m, k] and ``b`` float32 [n, k], both K-major (unit last
    stride); n 8, 16, 24 or 32, k a multiple of 64. Writes ``d = a @ b.T``
    (TF32 products, FP32 sums; float32 [m, n]) and ``sqr_sum = (a * a).sum(-1)``
    (float32 [m], contiguous). With ``num_splits`` = S: d [S, m, n] and
    sqr_sum [S, m] hold the partial sums over S parts of K (DeepGEMM's split;
    their sum over dim 0 is the whole). m = 0 returns at once.
    """
    for name, x in (("a", a), ("b", b), ("d", d), ("sqr_sum", sqr_sum)):
        _torch(name, x)
    if num_splits is None:
        splits = 0
    else:
        splits = as_int(num_splits, "num_splits")
        if splits < 1:
            raise ValueError(f"qgemm: num_splits must be >= 1 (or None), got {splits}")
    _d.launch_indexer("hc_prenorm", [a, b, d, sqr_sum], (splits,), stream)
