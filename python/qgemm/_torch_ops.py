"""PyTorch integration of qgemm: the C fast path and the ``torch.library`` custom ops.

Imported by the package only once ``torch`` is in ``sys.modules`` (``import
qgemm`` never imports torch), through ``qgemm._dispatch.register_torch``.

- The fast path (``_C.gemm_torch``, python/csrc/torch.c): plain CUDA torch
  tensors are described from their own metadata instead of a DLPack export,
  and the GEMM runs on ``torch._C._cuda_getCurrentRawStream(device)``, torch's
  current stream as a raw handle (no ``torch.cuda.Stream`` object).
- The indexer / HC ops ``torch.ops.qgemm.mqa_logits``, ``paged_mqa_schedule``,
  ``paged_mqa_logits`` and ``hc_prenorm`` (outputs mutated in place, fake
  implementations), which qgemm/indexer.py's functions call while tracing.
- The custom ops ``torch.ops.qgemm.fp8_gemm_nt``,
  ``torch.ops.qgemm.m_grouped_fp8_gemm_nt_contiguous`` and
  ``torch.ops.qgemm.m_grouped_fp8_gemm_nt_masked`` (``mutates_args=("d",)``,
  returning nothing) with fake implementations, so that
  ``torch.compile(fullgraph=True)`` puts them in the graph. The public
  functions of qgemm call them by themselves while torch.compile traces.
  ``config`` is the optional 6-int list (block_m, block_n, num_stages,
  multicast, swizzle_group, split_k) that ``qgemm._dispatch.config_tuple`` makes of a
  config dict.
- ``torch.ops.qgemm.bf16_gemm`` (every BF16 GEMM kind), ``einsum_bmk_bnk_mn`` and
  ``fp8_gemm_fp8out`` (``mutates_args`` their outputs): what qgemm.bf16,
  qgemm.einsum and qgemm.fp8's ``*_fp8out`` call while traced; their bodies are
  the families' eager functions (qgemm._dispatch.EAGER_OPS).
- ``torch.ops.qgemm.fp8_gemm_swiglu`` (``mutates_args=("d", "sfd")``): the fused
  SwiGLU GEMMs (qgemm.fp8's ``*_swiglu``), what they call while traced.
- The cast family's ``torch.ops.qgemm.cast`` and ``torch.ops.qgemm.sf_layout``
  (writing the outputs qgemm.cast allocates), what qgemm.cast's functions call
  while torch.compile traces a CUDA tensor (and for meta tensors).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import torch

from . import _C
from ._torch_helpers import fp8_as_bytes

Tensor = torch.Tensor
_launch: Optional[Callable[..., None]] = None  # qgemm._dispatch.launch_torch, set by register()
_launch_cast: Optional[Callable[..., None]] = None  # qgemm._dispatch.launch_cast, likewise
_launch_indexer: Optional[Callable[..., None]] = None  # qgemm._dispatch.launch_indexer_eager
_eager: Dict[str, Callable[..., None]] = {}  # qgemm._dispatch.EAGER_OPS, set by register()

OPS_ERROR: Optional[str] = None
"""Why the custom ops are not available (None when they are)."""

compiling: Callable[[], bool] = getattr(getattr(torch, "compiler", None), "is_compiling",
                                        lambda: False)
"""torch.compiler.is_compiling: True while dynamo traces (constant-folded there)."""


def register(launch: Callable[..., None], launch_cast: Optional[Callable[..., None]] = None,
             launch_indexer: Optional[Callable[..., None]] = None,
             eager: Optional[Dict[str, Callable[..., None]]] = None) -> None:
    """Enable the C fast path and define the custom ops (once per process). `eager`:
    qgemm._dispatch.EAGER_OPS, the eager bodies of the family ops (looked up when an op
    runs: the families fill it at import)."""
    global _launch, _launch_cast, _launch_indexer, _eager, OPS_ERROR
    _launch = launch
    _launch_cast = launch_cast
    _launch_indexer = launch_indexer
    if eager is not None:
        _eager = eager
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    _C.torch_init(torch, raw if raw is not None else _current_stream_handle)
    if not hasattr(torch.library, "custom_op"):
        OPS_ERROR = (f"torch {torch.__version__} has no torch.library.custom_op "
                     "(PyTorch >= 2.4 needed for the qgemm custom ops)")
        return
    _define_ops()


def _current_stream_handle(device: int) -> int:
    return torch.cuda.current_stream(device).cuda_stream


def _config(config: Optional[List[int]]) -> Any:
    if config is None:
        return None
    for v in config:  # one exception type for a bad value (the extension takes 32-bit ints)
        if not -2**31 <= v < 2**31:
            raise ValueError(f"qgemm: config value {v} is out of range (a 32-bit int)")
    return tuple(config)


def _define_ops() -> None:
    op = torch.library.custom_op

    @op("qgemm::fp8_gemm_nt", mutates_args=("d",))
    def fp8_gemm_nt(a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, d: Tensor,
                    config: Optional[List[int]] = None) -> None:
        """qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d) on torch's current stream."""
        _launch(_C.KIND_DENSE, a, sfa, b, sfb, d, None, 0, _config(config))

    @op("qgemm::m_grouped_fp8_gemm_nt_contiguous", mutates_args=("d",))
    def contiguous(a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, d: Tensor, m_indices: Tensor,
                   config: Optional[List[int]] = None) -> None:
        """qgemm.m_grouped_fp8_gemm_nt_contiguous on torch's current stream."""
        _launch(_C.KIND_CONTIGUOUS, a, sfa, b, sfb, d, m_indices, 0, _config(config))

    @op("qgemm::m_grouped_fp8_gemm_nt_masked", mutates_args=("d",))
    def masked(a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, d: Tensor, masked_m: Tensor,
               expected_m: int, config: Optional[List[int]] = None) -> None:
        """qgemm.m_grouped_fp8_gemm_nt_masked on torch's current stream."""
        _launch(_C.KIND_MASKED, a, sfa, b, sfb, d, masked_m, expected_m, _config(config))

    # Fake (meta) implementations: the ops only write d in place and return
    # nothing, so tracing needs no shapes from them; the checks run when the
    # real op runs (before the launch, writing nothing on rejection).
    @op("qgemm::m_grouped_fp8_gemm_nt_psum", mutates_args=("d",))
    def psum(a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, d: Tensor, group_ends: Tensor,
             expected_m: int, config: Optional[List[int]] = None) -> None:
        """qgemm.m_grouped_fp8_gemm_nt_contiguous(use_psum_layout=True) on torch's current stream."""
        _launch(_C.KIND_PSUM, a, sfa, b, sfb, d, group_ends, expected_m, _config(config))

    # c is an input other than d; in-place accumulation (c is d) is accumulate=True
    # with c None, so that no input aliases the mutated d.
    @op("qgemm::fp8_gemm_nt_wgrad", mutates_args=("d",))
    def wgrad(a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, d: Tensor, accumulate: bool,
              c: Optional[Tensor] = None, config: Optional[List[int]] = None) -> None:
        """qgemm.fp8_gemm_nt with recipe (1, 1, 128) on torch's current stream."""
        _launch(_C.KIND_WGRAD, a, sfa, b, sfb, d, d if accumulate and c is None else c, 0,
                _config(config))

    # The cast family (qgemm.cast): the outputs are allocated by the caller
    # and written in place, so the fake implementations need no shapes.
    @op("qgemm::cast", mutates_args=("out", "sf"))
    def cast(kind: int, x: Tensor, out: Tensor, sf: Tensor, aux: Optional[Tensor], m: int,
             groups: int, sf_mn_major: int, sf_ld: int, ue8m0: int, rows_mask: int) -> None:
        """A quantizing cast (_C.cast): x [.., cols] -> out e4m3 [.., k] + sf (contiguous)."""
        _launch_cast(_C.cast, kind, (_as_rows(x), _as_rows(out.view(torch.uint8)), sf, aux),
                     (m, groups, sf_mn_major, sf_ld, ue8m0, rows_mask))

    @op("qgemm::sf_layout", mutates_args=("out",))
    def sf_layout(kind: int, sf: Tensor, out: Tensor, ks: Optional[Tensor], out_ld: int,
                  gran_k: int, k_alignment: int, psum: int) -> None:
        """A scale-layout kernel (_C.sf_layout) into the contiguous out."""
        _launch_cast(_C.sf_layout, kind, (sf, out, ks), (out_ld, gran_k, k_alignment, psum))

    # The indexer / HC family (qgemm/indexer.py): each op writes its outputs in
    # place (the logits ops the padded [rows, ld] buffer, of which the public
    # functions return the [:, :cols] view) and returns nothing.
    @op("qgemm::mqa_logits", mutates_args=("logits",))
    def mqa_logits(q: Tensor, kv: Tensor, kv_scales: Tensor, weights: Tensor, ks: Tensor,
                   ke: Tensor, logits: Tensor, cols: int, clean: int, max_seqlen_k: int) -> None:
        """qgemm.fp8_mqa_logits's kernel on torch's current stream."""
        _indexer("mqa_logits", [q, kv, kv_scales, weights, ks, ke, logits],
                 (cols, clean, max_seqlen_k), None)

    @op("qgemm::paged_mqa_schedule", mutates_args=("schedule",))
    def paged_mqa_schedule(context_lens: Tensor, schedule: Tensor, max_context_len: int) -> None:
        """qgemm.get_paged_mqa_logits_metadata's kernel on torch's current stream."""
        _indexer("paged_mqa_schedule", [context_lens, schedule], (max_context_len,), None)

    @op("qgemm::paged_mqa_logits", mutates_args=("logits",))
    def paged_mqa_logits(q: Tensor, kv_cache: Tensor, weights: Tensor, context_lens: Tensor,
                         block_table: Tensor, schedule: Tensor, logits: Tensor, cols: int,
                         max_context_len: int, clean: int) -> None:
        """qgemm.fp8_paged_mqa_logits's kernel on torch's current stream."""
        _indexer("paged_mqa_logits", [q, kv_cache, weights, context_lens, block_table, schedule,
                                      logits], (cols, max_context_len, clean), None)

    @op("qgemm::hc_prenorm", mutates_args=("d", "sqr_sum"))
    def hc_prenorm(a: Tensor, b: Tensor, d: Tensor, sqr_sum: Tensor, num_splits: int) -> None:
        """qgemm.tf32_hc_prenorm_gemm on torch's current stream."""
        _indexer("hc_prenorm", [a, b, d, sqr_sum], (num_splits,), None)

    # The fused SwiGLU GEMMs (qgemm.*_swiglu): d and sfd written in place.
    @op("qgemm::fp8_gemm_swiglu", mutates_args=("d", "sfd"))
    def swiglu(kind: int, a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, d: Tensor, sfd: Tensor,
               idx: Optional[Tensor], row_weight: Optional[Tensor], expected_m: int, ue8m0: int,
               swiglu_limit: float, config: Optional[List[int]] = None) -> None:
        """qgemm.*_swiglu (kind dense, contiguous or masked) on torch's current stream."""
        tensors = [a, sfa, b, sfb, d, sfd, idx, row_weight]
        e4m3 = fp8_as_bytes(torch, tensors, (0, 2, 4))  # a, b, d
        dev = d.device.index if d.device.index is not None else torch.cuda.current_device()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        handle = raw(dev) if raw is not None else _current_stream_handle(dev)
        with torch.cuda.device(dev):  # every tensor is on torch's current stream: no sync
            _C.gemm_swiglu(kind, *tensors, expected_m, ue8m0, swiglu_limit, _config(config),
                           e4m3, handle, 0xFF)

    # The BF16 family (qgemm.bf16, qgemm.einsum's per-head and batched calls): every kind of
    # _C.bf16_gemm; c is an input other than d, the in-place accumulation (c is d) is
    # accumulate=True, as wgrad's. idx: m_indices, masked_m or group_ends.
    @op("qgemm::bf16_gemm", mutates_args=("d",))
    def bf16_gemm(kind: int, a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor],
                  idx: Optional[Tensor], expected_m: int, ks: Optional[List[int]],
                  accumulate: bool) -> None:
        """qgemm's BF16 GEMM of `kind` (_C.bf16_gemm) on torch's current stream."""
        _eager["bf16_gemm"](kind, a, b, d, d if accumulate else c, idx, expected_m, ks)

    # einsum('bmk,bnk->mn'): the batch sum with its workspace, which the op takes from
    # qgemm.einsum's per-stream cache when it runs (a traced graph holds no workspace).
    @op("qgemm::einsum_bmk_bnk_mn", mutates_args=("d",))
    def einsum_bmk(a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor],
                   accumulate: bool) -> None:
        """qgemm.einsum('bmk,bnk->mn', a, b, d, c) on torch's current stream."""
        _eager["einsum_bmk_bnk_mn"](a, b, d, d if accumulate else c)

    # The FP8-output GEMMs (qgemm.*_fp8out): e4m3 d and its scales sfd written in place.
    @op("qgemm::fp8_gemm_fp8out", mutates_args=("d", "sfd"))
    def fp8out(kind: int, a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, d: Tensor,
               sfd: Tensor, idx: Optional[Tensor], expected_m: int, ue8m0: int,
               config: Optional[List[int]] = None) -> None:
        """qgemm.*_fp8out (kind dense, contiguous or masked) on torch's current stream."""
        _eager["fp8_gemm_fp8out"](kind, a, sfa, b, sfb, d, sfd, idx, expected_m, ue8m0,
                                  _config(config))

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    for defined in (fp8_gemm_nt, contiguous, masked, psum, wgrad, cast, sf_layout, mqa_logits,
                    paged_mqa_schedule, paged_mqa_logits, hc_prenorm, swiglu, bf16_gemm,
                    einsum_bmk, fp8out):
        defined.register_fake(nothing)


def _as_rows(t: Tensor) -> Tensor:
    """t as [rows, last] with a unit last stride and rows at least `last` apart
    (a view where one exists; out tensors are contiguous, so theirs is)."""
    cols = t.shape[-1]
    y = t.reshape(-1, cols)
    if (cols > 1 and y.stride(1) != 1) or (y.shape[0] > 1 and y.stride(0) < cols):
        y = y.contiguous()
    return y


def _indexer(func: str, tensors: List[Any], scalars: Any, stream: Any) -> None:
    _launch_indexer(func, tensors, scalars, stream)


def check_traceable(what: str, stream: Any) -> None:
    """What every custom-op call checks first: the ops exist, and no stream is given (an
    op runs on torch's current stream). `what` names the call in the message."""
    if OPS_ERROR is not None:
        raise RuntimeError(f"qgemm: cannot trace {what}: {OPS_ERROR}")
    if stream is not None:
        raise ValueError("qgemm: stream= is not supported under torch.compile: the op runs on "
                         "torch's current stream (use `with torch.cuda.stream(s):` instead)")


def call_family(name: str, stream: Any, *args: Any) -> None:
    """torch.ops.qgemm.<name>(*args), a family op of its own signature (what
    qgemm._dispatch.call_traced runs)."""
    check_traceable(name, stream)
    getattr(torch.ops.qgemm, name)(*args)


def call_indexer(func: str, tensors: List[Any], scalars: Any, stream: Any) -> None:
    """Run the indexer / HC custom op `func` (qgemm._dispatch.launch_indexer's
    arguments) under torch.compile or with tensor subclasses."""
    check_traceable("an indexer / HC op", stream)
    getattr(torch.ops.qgemm, func)(*tensors, *scalars)


def call_op(kind: int, a: Any, sfa: Any, b: Any, sfb: Any, d: Any, idx: Any, expected_m: int,
            stream: Any, config: Any) -> None:
    """Run the custom op of `kind` (what the public functions do under torch.compile
    or with tensor subclasses such as FakeTensor)."""
    check_traceable("a GEMM", stream)
    cfg = None if config is None else list(config)
    ops = torch.ops.qgemm
    if kind == _C.KIND_DENSE:
        ops.fp8_gemm_nt(a, sfa, b, sfb, d, cfg)
    elif kind == _C.KIND_CONTIGUOUS:
        ops.m_grouped_fp8_gemm_nt_contiguous(a, sfa, b, sfb, d, idx, cfg)
    elif kind == _C.KIND_PSUM:
        ops.m_grouped_fp8_gemm_nt_psum(a, sfa, b, sfb, d, idx, expected_m, cfg)
    elif kind == _C.KIND_WGRAD:
        in_place = idx is d
        ops.fp8_gemm_nt_wgrad(a, sfa, b, sfb, d, in_place or idx is not None,
                              None if in_place else idx, cfg)
    else:
        ops.m_grouped_fp8_gemm_nt_masked(a, sfa, b, sfb, d, idx, expected_m, cfg)


def is_subclass_tensor(x: Any) -> bool:
    """A torch tensor of a subclass (FakeTensor, FunctionalTensor, DTensor, ...):
    the fast path leaves those to torch's dispatcher."""
    return isinstance(x, torch.Tensor) and type(x) not in (torch.Tensor, torch.nn.Parameter)
