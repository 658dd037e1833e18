"""The one dispatch path every qgemm op takes: argument helpers, the torch fast
path, DLPack export, stream handling, the launch, torch op registration.

How the package is laid out (issue 48, the house for four kernel families):

  _dispatch.py     this file: what every op shares (below); knows no family
  _torch_ops.py    the ``torch.library`` custom ops (imported once torch is)
  _runtime.py      settings and planning shared by the families: set_num_sms,
                   set_pdl, get_device_props, select_config, compile, ...
  fp8.py           the FP8 GEMM family (fp8_gemm_nt, the grouped GEMMs, the
                   weight gradient, DeepGEMM's fp8_fp4_* names)
  _deepgemm.py     DeepGEMM's argument checks, its stubs and cuBLASLt names
  _layout.py       scale-factor layouts (get_mn_major_tma_aligned_tensor, the
                   packed UE8M0 forms, transform_sf_into_required_layout)
  _torch_helpers.py  the torch casts (per_token_cast_to_fp8, ...) and math
  cast.py          the cast family: the casts and layouts above on the GPU
                   (their public names), silu_and_mul_fp8_quant
  deep_gemm/       DeepGEMM's layout: ``import qgemm.deep_gemm as deep_gemm``,
                   ``deep_gemm.utils`` (math, layout) as DeepGEMM has them
  __init__.py      re-exports only: the public names and ``__all__``

Adding a kernel family (bf16.py, indexer.py, cast.py, ...):
  1. its C entry points in python/csrc: a new kind of _C.gemm/_C.gemm_torch
     when its tensors fit the GEMM slots (a, sfa, b, sfb, d, idx), else a _C
     function of its own built the same way (borrow, check, the overlap and
     writable checks of tensor.c, launch on the given or torch's stream);
  2. ``qgemm/<family>.py``: the public functions, which check the family's own
     arguments and then call ``gemm``/``launch`` here (or, for a _C function of
     its own, a ``launch_<family>`` added here beside ``launch``, using the same
     helpers: stream_handle, current_stream, torch_cuda_device, detach), never
     the extension directly;
  3. its custom ops: defined in _torch_ops._define_ops, either routed by kind in
     _torch_ops.call_op (the GEMM slots: what ``launch`` calls while torch.compile
     traces) or, for a family's own signature, called through ``call_traced`` while
     ``COMPILING()`` or for ``fake_tensors``, their bodies the family's eager function
     registered in ``EAGER_OPS`` (bf16_gemm, einsum_bmk_bnk_mn, fp8_gemm_fp8out);
  4. re-export its names in ``__init__.py`` (and ``deep_gemm/__init__.py``
     for DeepGEMM's), add them to ``__all__``, run ``make docs``.
Modules import downward only: __init__ and deep_gemm import the families; a
family imports _dispatch, _runtime, _deepgemm, _layout, _torch_helpers;
_dispatch imports _C, _torch_helpers (which imports nothing of the package) and
(once torch is imported) _torch_ops, which imports _C and _torch_helpers; nothing
imports the package's __init__ (tests/python/test_package.py checks it).

What every op gets here: the arguments checked (``as_int``, ``pair``,
``config_tuple``, ``device_ordinal``; one exception type, ValueError, for a bad
value, TypeError for a wrong type), then under torch.compile the custom op;
else the torch fast path (``_C.gemm_torch``: plain CUDA torch tensors on
torch's current stream); else DLPack (``_C.gemm``) on the stream given or the
framework's current one. The extension refuses a ``d`` that overlaps another
input and returns early for an empty M or N (as DeepGEMM does); a K = 0 call
answers ``_C.ZERO_K`` and ``d`` is then set here to C or zero (DeepGEMM).
"""
from __future__ import annotations

import importlib.util
import numbers
import operator
import sys
import threading
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

from . import _C
from ._torch_helpers import fp8_as_bytes

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

KINDS = {"dense": _C.KIND_DENSE, "contiguous": _C.KIND_CONTIGUOUS, "masked": _C.KIND_MASKED,
         "psum": _C.KIND_PSUM, "wgrad": _C.KIND_WGRAD, "k_grouped": _C.KIND_K_GROUPED}
_MULTICAST = {None: 0, "none": 0, "a": 1, "b": 2, 0: 0, 1: 1, 2: 2}
CONFIG_KEYS = ("block_m", "block_n", "num_stages", "multicast", "swizzle_group", "split_k")
# what select_config (and select_config_fp8out: cluster) adds; ignored on input
_DERIVED_KEYS = ("num_sms", "smem_bytes", "cluster")
_INT_MAX = 2**31 - 1
_STREAM_MAX = 2**64 - 1

# ---- the torch state: fast path and custom ops --------------------------------------

TORCH_OPS: Any = None  # the module qgemm._torch_ops once registered
# The public GEMMs' shortcut, set with TORCH_OPS: _C.gemm_torch, called straight
# away for the plain call (pairs as tuples, none of DeepGEMM's extra arguments,
# torch's current stream, the heuristic's configuration) while torch.compile is
# not tracing (COMPILING: torch.compiler.is_compiling). It skips gemm(), pair(),
# config_tuple() and launch_torch() (1843-1885 -> 506-578 ns of Python a dense
# call on the CPU development machine, the C call stubbed out:
# bench/results/2026-11-27-cpu-pylayer). Anything gemm_torch does not take
# (NotImplemented) goes the whole way, which asks it again.
FAST_GEMM: Any = None
COMPILING: Callable[[], bool] = bool  # (bool() is False)
KIND_DENSE, KIND_CONTIGUOUS, KIND_MASKED = _C.KIND_DENSE, _C.KIND_CONTIGUOUS, _C.KIND_MASKED
TORCH_ERROR: Optional[BaseException] = None  # why registration failed (then: DLPack only)
_TORCH_LOCK = threading.Lock()
TORCH_FP8_DLPACK: Optional[bool] = None  # can this torch export float8 through DLPack?
TORCH: Any = None  # the torch module, kept once register_torch saw it imported


def torch_module() -> Any:
    """The torch module when it is imported, else None; never imports it.
    Code that torch.compile traces must not read ``sys.modules``: dynamo (torch
    2.11) wraps the whole dict and fails with "dictionary changed size during
    iteration" when an import lands meanwhile. By the time anything is traced,
    register_torch has stored the module in a global, which dynamo reads as a
    constant; ``sys.modules`` is only looked at before that."""
    t = TORCH
    if t is None:
        t = sys.modules.get("torch")
    return t


def register_torch() -> Any:
    """Register qgemm with the imported torch (the C fast path, the custom ops);
    the module qgemm._torch_ops, or None when torch is not imported or failed."""
    global TORCH_OPS, TORCH_ERROR, FAST_GEMM, COMPILING, TORCH
    with _TORCH_LOCK:
        if TORCH is None:
            TORCH = sys.modules.get("torch")
        if TORCH_OPS is None and TORCH_ERROR is None and "torch" in sys.modules:
            try:
                from . import _torch_ops
                _torch_ops.register(launch_torch, launch_cast, launch_indexer_eager, EAGER_OPS)
                TORCH_OPS = _torch_ops
                COMPILING = _torch_ops.compiling
                FAST_GEMM = _C.gemm_torch
            except Exception as e:  # a broken or partly imported torch: DLPack still works
                TORCH_ERROR = e
    return TORCH_OPS


# The eager bodies of the custom ops that families define beyond the GEMM slots
# (name -> function; the families fill it at import, _torch_ops's ops call it when they
# run): "bf16_gemm" (launch_bf16_eager), "einsum_bmk" (qgemm.einsum), "fp8_gemm_fp8out"
# (qgemm.fp8). A dict shared by reference, so the order of the imports does not matter.
EAGER_OPS: dict = {}


def fake_tensors(tensors: Sequence[Any]) -> bool:
    """Whether the eager extension cannot take these tensors and the custom op must
    (torch tensor subclasses such as FakeTensor and FunctionalTensor, or meta tensors, whose
    ops run their fake implementations): checked after the extension's torch mode
    answered NotImplemented, or where a family's eager path would touch torch state first
    (qgemm.einsum's workspace cache: ~0.3 us for four tensors on the CPU development machine)."""
    torch = TORCH
    if torch is None:
        return False
    for t in tensors:
        kind = type(t)
        if kind is torch.Tensor or kind is torch.nn.Parameter:
            if t.is_meta:
                return True
        elif isinstance(t, torch.Tensor):
            return True
    return False


def call_traced(name: str, stream: Optional[StreamLike], *args: Any) -> None:
    """torch.ops.qgemm.<name>(*args): a family's call under torch.compile (or with
    fake_tensors); the op runs on torch's current stream, so no stream may be given."""
    ops = torch_ops()
    if ops is None:
        raise RuntimeError(f"qgemm: cannot trace {name}: torch ops are unavailable ({TORCH_ERROR})")
    ops.call_family(name, stream, *args)


def torch_ops() -> Any:
    """The registered _torch_ops module (registering now if torch was imported
    since), or None."""
    ops = TORCH_OPS
    if ops is None and TORCH_ERROR is None and "torch" in sys.modules:
        ops = register_torch()
    return ops


def register_torch_ops() -> None:
    """Register qgemm's GEMMs as torch.library custom ops (``torch.ops.qgemm.*``)
    and enable the fast path for torch tensors. Done by itself: by ``import
    qgemm`` when torch is imported, else as soon as ``import torch`` completes.
    Calling it imports torch and raises what went wrong (e.g. a torch without
    ``torch.library.custom_op``), so it also checks that the ops are there."""
    import torch  # noqa: F401  (what registration needs)
    ops = register_torch()
    if ops is None:
        raise RuntimeError(f"qgemm: registering with torch failed: {TORCH_ERROR!r}") \
            from TORCH_ERROR
    if ops.OPS_ERROR is not None:
        raise RuntimeError(f"qgemm: {ops.OPS_ERROR}")


class _AfterTorchImport:
    """A one-shot import hook: when qgemm is imported before torch, registers
    qgemm with torch as soon as ``import torch`` completes, so the custom ops
    exist before torch.compile traces a call (registering while dynamo traces
    would break the graph). Costs other imports one name comparison."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        remove_hook()
        spec = importlib.util.find_spec("torch")  # the real finders, this one removed
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_register(module: Any) -> None:
            exec_module(module)
            register_torch()  # failures only disable the fast path and the ops

        loader.exec_module = exec_then_register
        return spec


HOOK = _AfterTorchImport()


def remove_hook() -> None:
    try:
        sys.meta_path.remove(HOOK)
    except ValueError:
        pass


def install_torch_hook() -> None:
    """Register with torch now if it is imported, else once it is (never imports torch)."""
    if "torch" in sys.modules:
        register_torch()
    elif HOOK not in sys.meta_path:
        sys.meta_path.insert(0, HOOK)


# ---- argument helpers ------------------------------------------------------------------


def as_int(x: Any, name: str, lo: Optional[int] = -_INT_MAX - 1,
           hi: Optional[int] = _INT_MAX) -> int:
    """x as an int: TypeError for a non-integer, ValueError naming `name` outside [lo, hi]
    (the C side takes 32-bit ints: a bigger value is a bad value, not an OverflowError)."""
    if isinstance(x, bool) or not hasattr(x, "__index__"):
        raise TypeError(f"qgemm: {name} must be an int, got {type(x).__name__}")
    v = operator.index(x)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        bounds = f"{'' if lo is None else lo}..{'' if hi is None else hi}"
        raise ValueError(f"qgemm: {name} = {v} is out of range ({bounds})")
    return v


def pair(x: Any, name: str) -> Tuple[Any, Any]:
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise TypeError(f"qgemm: {name} must be a pair ({name}, sf{name}) of the FP8 tensor "
                        f"and its float32 scales, got {type(x).__name__}")
    return x[0], x[1]


def detach(t: Any) -> Any:
    # torch refuses to export tensors that require grad; the GEMM has no autograd
    torch = torch_module()
    if torch is not None and isinstance(t, torch.Tensor) and t.requires_grad:
        return t.detach()
    return t


_E4M3_SLOTS = (0, 2)  # a and b in _C.gemm's argument order


def torch_fp8_as_bytes(tensors: List[Any]) -> int:
    """PyTorch < 2.8 refuses to export float8 tensors through DLPack: hand their
    bytes over as uint8 and tell _C to read them as e4m3 (which the torch dtype
    guarantees). Returns the bit mask of the slots so replaced."""
    global TORCH_FP8_DLPACK
    torch = torch_module()
    if torch is None:
        return 0
    if TORCH_FP8_DLPACK is None and any(
            isinstance(tensors[s], torch.Tensor) and tensors[s].dtype == torch.float8_e4m3fn
            for s in _E4M3_SLOTS):
        try:  # (asked once, on the first float8 tensor)
            torch.empty(1, dtype=torch.float8_e4m3fn).__dlpack__()
            TORCH_FP8_DLPACK = True
        except Exception:
            TORCH_FP8_DLPACK = False
    return 0 if TORCH_FP8_DLPACK else fp8_as_bytes(torch, tensors, _E4M3_SLOTS)


def stream_handle(stream: StreamLike) -> int:
    """A CUstream handle from an int or a stream object: TypeError for what is no
    stream (a float, a bool), ValueError for a handle outside 0..2**64-1."""
    if isinstance(stream, bool):
        raise TypeError("qgemm: stream must be an int handle or a stream object, got bool")
    if isinstance(stream, int):
        handle = stream
    elif hasattr(stream, "cuda_stream"):  # torch.cuda.Stream / ExternalStream
        handle = stream.cuda_stream
    elif hasattr(stream, "ptr"):  # cupy.cuda.Stream
        handle = stream.ptr
    elif hasattr(stream, "__index__"):  # numpy integers
        handle = operator.index(stream)
    elif hasattr(stream, "__int__") and not isinstance(stream, numbers.Number):
        handle = int(stream)  # cuda-python's CUstream (a float is no handle: 1.5 is refused)
    else:
        raise TypeError("qgemm: stream must be an int CUstream handle or an object with a "
                        f"cuda_stream or ptr attribute, got {type(stream).__name__}")
    if isinstance(handle, bool) or not isinstance(handle, int):
        raise TypeError(f"qgemm: stream handle must be an int, got {type(handle).__name__}")
    if not 0 <= handle <= _STREAM_MAX:
        raise ValueError(f"qgemm: stream handle must be in 0..2**64-1, got {handle}")
    return handle


def current_stream(tensors: Sequence[Any]) -> Tuple[int, int]:
    """The stream the caller's framework would run on (0 = legacy default), and
    the bit mask of the tensors whose producer already orders its work on that
    stream (their __dlpack__ is told not to synchronize: with PyTorch that
    saves an event per tensor).

    Only frameworks already imported are consulted: a tensor of a framework
    that was never imported cannot exist.
    """
    torch = torch_module()
    if torch is not None:
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.is_cuda:
                device = t.device
                same = [isinstance(u, torch.Tensor) and u.device == device for u in tensors]
                raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # ~0.3 us, not ~5
                handle = raw(device.index) if raw is not None else \
                    torch.cuda.current_stream(device).cuda_stream
                return handle, _mask(same)
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        for t in tensors:
            if isinstance(t, cupy.ndarray):
                device = t.device
                same = [isinstance(u, cupy.ndarray) and u.device == device for u in tensors]
                with device:
                    return cupy.cuda.get_current_stream().ptr, _mask(same)
    return 0, 0


def torch_cuda_device(kind: int, tensors: Sequence[Any]) -> Optional[int]:
    """The device index of the CUDA torch tensors among `tensors` (a, sfa, b,
    sfb, d, idx), None when there are none; ValueError naming the argument
    and both devices when they are on two (the extension's own check and
    message, made here because torch refuses to export the second device's
    tensor before the extension could say so)."""
    torch = torch_module()
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


def device_ordinal(device: Any) -> int:
    """A CUDA ordinal from None (the current device), an int, "cuda", "cuda:N" or a
    torch.device; ValueError naming `device` for anything else or out of range."""
    if device is None:
        torch = torch_module()
        if torch is not None and torch.cuda.is_available():
            return int(torch.cuda.current_device())
        return 0
    if isinstance(device, str):  # "cuda", "cuda:1" (as torch.device takes them)
        kind, sep, index_text = device.partition(":")
        if kind != "cuda" or (sep and not (index_text.isascii() and index_text.isdigit())):
            raise ValueError(f"qgemm: device must be a CUDA ordinal, 'cuda' or 'cuda:N', "
                             f"got {device!r}")
        if not sep:
            return device_ordinal(None)
        return as_int(int(index_text), "device", 0)
    device_type = getattr(device, "type", None)
    if isinstance(device_type, str) and device_type != "cuda":
        raise ValueError(f"qgemm: device must be a CUDA device, got {device}")
    index = getattr(device, "index", device) if device_type is not None else device
    if index is None:  # torch.device("cuda"): the current device
        return device_ordinal(None)
    ordinal = as_int(index, "device")
    if ordinal < 0:  # -1 would reach the extension's offline slot
        raise ValueError(f"qgemm: device must be >= 0, got {ordinal}")
    return ordinal


def config_tuple(config: Optional[Config]) -> Optional[Tuple[int, int, int, int, int, int]]:
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise TypeError(f"qgemm: config must be a dict, got {type(config).__name__}")
    unknown = set(config) - set(CONFIG_KEYS) - set(_DERIVED_KEYS)
    if unknown:
        raise ValueError(f"qgemm: unknown config keys {sorted(unknown)}; "
                         f"known: {list(CONFIG_KEYS)}")
    multicast = config.get("multicast", 0)
    key = multicast.lower() if isinstance(multicast, str) else multicast
    if key not in _MULTICAST:
        raise ValueError(f"qgemm: config multicast must be 'none', 'a' or 'b', got {multicast!r}")
    return tuple(as_int(config.get(k, 0), k)  # type: ignore[return-value]
                 if k != "multicast" else _MULTICAST[key] for k in CONFIG_KEYS)


# ---- the launch ----------------------------------------------------------------------


def gemm(kind: int, a: Any, b: Any, d: Any, idx: Any, expected_m: int,
         stream: Optional[StreamLike], config: Optional[Config]) -> None:
    """A GEMM-shaped op (a, b pairs; d; idx): under torch.compile the custom op;
    else the torch fast path when every tensor is a plain CUDA torch tensor and
    no stream is given; else DLPack."""
    a, sfa = pair(a, "a")
    b, sfb = pair(b, "b")
    launch(kind, a, sfa, b, sfb, d, idx, expected_m, stream, config_tuple(config))


def launch(kind: int, a: Any, sfa: Any, b: Any, sfb: Any, d: Any, idx: Any, expected_m: int,
           stream: Optional[StreamLike], cfg: Any) -> None:
    """The tensors of one op, checked arguments (cfg: config_tuple's), to the right path."""
    ops = torch_ops()
    if ops is not None:
        if ops.compiling():
            ops.call_op(kind, a, sfa, b, sfb, d, idx, expected_m, stream, cfg)
            return
        if stream is None:
            launch_torch(kind, a, sfa, b, sfb, d, idx, expected_m, cfg, ops)
            return
    launch_dlpack(kind, a, sfa, b, sfb, d, idx, expected_m, stream, cfg)


def launch_torch(kind: int, a: Any, sfa: Any, b: Any, sfb: Any, d: Any, idx: Any,
                 expected_m: int, cfg: Any, ops: Any = None) -> None:
    """On the current torch stream: the fast path (_C.gemm_torch) when it takes
    the tensors; tensor subclasses (FakeTensor, ...) and meta tensors go to the custom op when
    `ops` is given (not from inside the op itself); all else to DLPack."""
    r = _C.gemm_torch(kind, a, sfa, b, sfb, d, idx, expected_m, cfg)
    if r is None:
        return
    if r is _C.ZERO_K:
        zero_k(kind, d, idx)
        return
    if ops is not None and fake_tensors((a, sfa, b, sfb, d, idx)):
        ops.call_op(kind, a, sfa, b, sfb, d, idx, expected_m, None, cfg)
        return
    launch_dlpack(kind, a, sfa, b, sfb, d, idx, expected_m, None, cfg)


def launch_dlpack(kind: int, a: Any, sfa: Any, b: Any, sfb: Any, d: Any, idx: Any,
                  expected_m: int, stream: Optional[StreamLike], cfg: Any) -> None:
    tensors = [detach(t) for t in (a, sfa, b, sfb, d, idx)]
    handle = None if stream is None else stream_handle(stream)
    device = torch_cuda_device(kind, tensors)
    # A torch stream of another device: said here, before torch would
    # synchronize it with the tensors' device while exporting them.
    stream_device = getattr(getattr(stream, "device", None), "index", None)
    if device is not None and isinstance(stream_device, int) and stream_device != device:
        raise ValueError(f"qgemm: stream is a stream of cuda:{stream_device}, the tensors are on "
                         f"cuda:{device}")
    if device is not None and device != torch_module().cuda.current_device():
        # torch exports a CUDA tensor through DLPack only while its device is
        # the current one (its stream synchronization uses the current
        # device): export them there, the GEMM runs on their device anyway.
        with torch_module().cuda.device(device):
            _export_and_launch(kind, tensors, expected_m, handle, cfg)
        return
    _export_and_launch(kind, tensors, expected_m, handle, cfg)


def _export_and_launch(kind: int, tensors: List[Any], expected_m: int,
                       handle: Optional[int], cfg: Any) -> None:
    if handle is not None:
        no_sync = 0
    else:
        handle, no_sync = current_stream(tensors)
    e4m3_bytes = torch_fp8_as_bytes(tensors)
    a, sfa, b, sfb, d, idx = tensors
    if _C.gemm(kind, a, sfa, b, sfb, d, idx, expected_m, handle, cfg, e4m3_bytes,
               no_sync) is _C.ZERO_K:
        zero_k(kind, d, idx)


def zero_k(kind: int, d: Any, c: Any) -> None:
    """K = 0 (the extension checked the call and launched nothing): as DeepGEMM,
    D = C for the weight gradient with a C other than D, else D = 0 (C is D:
    nothing to do). Needs D to be a torch tensor (DeepGEMM's own contract)."""
    if kind == _C.KIND_WGRAD and c is not None and c is d:
        return
    torch = torch_module()
    if torch is None or not isinstance(d, torch.Tensor):
        raise ValueError("qgemm: K = 0: d (to be set to C or zero, as DeepGEMM does) must be a "
                         f"torch tensor, got {type(d).__name__}")
    if kind == _C.KIND_WGRAD and c is not None:
        if c.data_ptr() != d.data_ptr():
            d.copy_(c)
        return
    d.zero_()


# ---- the BF16 family's launch (qgemm/bf16.py) ---------------------------------------------

# The family entries' no_sync bit asking for their torch mode (qgpy.h, QGPY_TORCH_MODE).
TORCH_MODE = 1 << 31

BF16_KINDS = {"dense": _C.KIND_DENSE, "contiguous": _C.KIND_CONTIGUOUS, "masked": _C.KIND_MASKED,
              "psum": _C.KIND_PSUM, "k_grouped": _C.KIND_K_GROUPED,
              "batched": _C.KIND_BF16_BATCHED, "batch_sums": _C.KIND_BF16_BATCH_SUMS}


FAKE = object()
"""What launch_family(decline_fake=True) answers for fake or meta tensors: nothing was done,
the caller runs its custom op."""


def launch_family(fn: Callable[..., Any], names: Sequence[str], tensors: Sequence[Any],
                  before: Sequence[Any] = (), after: Sequence[Any] = (),
                  stream: Optional[StreamLike] = None, decline_fake: bool = False) -> Any:
    """The launch every family beyond the FP8 GEMMs shares:
    ``fn(*before, *tensors, *after, stream_handle, no_sync)`` with the tensors
    (detached; None entries are absent ones) through DLPack on the stream
    given, or on the framework's current one (torch's for torch tensors, whose
    producers then need no synchronization: no_sync's bits), run with the
    tensors' device current (ValueError naming the argument when they are on
    two devices). ``names`` names the tensors in that message.

    Without ``stream``, the extension is asked first in its torch mode
    (``TORCH_MODE``, python/csrc/qgpy.h): plain CUDA torch tensors described
    from their metadata and run on torch's current stream of their device,
    all checks in C; it answers NotImplemented, having done nothing, for
    anything else (CPU, meta or subclass tensors, other frameworks), which
    then takes the way below (issues 49-51: this is most of a family call's
    host cost). With ``decline_fake``, tensors the torch mode declined that are fake or
    meta (fake_tensors) are not launched: the answer is FAKE, and the caller runs its
    custom op."""
    if stream is None:
        r = fn(*before, *tensors, *after, 0, TORCH_MODE)
        if r is not NotImplemented:
            return r
        if decline_fake and fake_tensors(tensors):
            return FAKE
    tensors = [None if t is None else detach(t) for t in tensors]
    handle = None if stream is None else stream_handle(stream)
    torch = torch_module()
    device = None
    if torch is not None:
        for name, t in zip(names, tensors):
            if isinstance(t, torch.Tensor) and t.is_cuda:
                if device is None:
                    device = t.device.index
                elif t.device.index != device:
                    raise ValueError(f"qgemm: all tensors must be on one device: {name} is on "
                                     f"cuda:{t.device.index}, the arguments before it are on "
                                     f"cuda:{device}")
    if handle is None:
        handle, no_sync = current_stream(tensors)
    else:
        no_sync = 0
    if device is not None and device != torch.cuda.current_device():
        with torch.cuda.device(device):
            return fn(*before, *tensors, *after, handle, no_sync)
    return fn(*before, *tensors, *after, handle, no_sync)


# ---- the BF16 family's launch (qgemm/bf16.py, qgemm/einsum.py) ------------------------------


def launch_bf16(kind: int, a: Any, b: Any, d: Any, c: Any, idx: Any, expected_m: int,
                ks: Optional[Sequence[int]], stream: Optional[StreamLike]) -> None:
    """One BF16 GEMM (_C.bf16_gemm); a, b the logical [.., M, K] / [.., N, K]
    operands (views: their strides say which dimension is contiguous). Under
    torch.compile, and for fake or meta tensors, the custom op
    torch.ops.qgemm.bf16_gemm (c is d, the in-place accumulation, passed as
    accumulate=True so that no input aliases the mutated d); else
    launch_bf16_eager."""
    if COMPILING() or launch_bf16_eager(kind, a, b, d, c, idx, expected_m, ks, stream,
                                        decline_fake=True) is FAKE:
        call_traced("bf16_gemm", stream, kind, a, b, d, None if c is d else c, idx, expected_m,
                    None if ks is None else [int(k) for k in ks], c is not None and c is d)


def launch_bf16_eager(kind: int, a: Any, b: Any, d: Any, c: Any, idx: Any, expected_m: int,
                      ks: Optional[Sequence[int]], stream: Optional[StreamLike] = None,
                      decline_fake: bool = False) -> Any:
    """launch_bf16 without the custom op (what the op itself runs): launch_family."""
    return launch_family(_C.bf16_gemm, ("a", "b", "d", "c", "idx"), (a, b, d, c, idx), (kind,),
                         (expected_m, ks), stream, decline_fake)


EAGER_OPS["bf16_gemm"] = launch_bf16_eager


# ---- the cast family's launch (qgemm/cast.py) ---------------------------------------------


def launch_cast(fn: Callable[..., None], kind: int, tensors: Sequence[Any], ints: Sequence[int],
                stream: Optional[StreamLike] = None) -> None:
    """One cast or scale-layout kernel (_C.cast / _C.sf_layout) through
    launch_family: ``fn(kind, *tensors, *ints, stream, no_sync)``."""
    launch_family(fn, [f"tensor {i}" for i in range(len(tensors))], tensors, (kind,), ints, stream)


def cast_torch_mode(fn: Callable[..., Any], kind: int, tensors: Sequence[Any],
                    ints: Sequence[int]) -> bool:
    """One cast or scale-layout kernel in the extension's torch mode (when torch_mode_ok):
    True when launched (or raised), False, nothing done, for tensors that are not plain CUDA
    torch tensors (launch_cast then)."""
    return fn(kind, *tensors, *ints, 0, TORCH_MODE) is not NotImplemented


# ---- the indexer / HC family's launch (qgemm/indexer.py) -----------------------------------

_INDEXER_FUNCS = ("mqa_logits", "paged_mqa_schedule", "paged_mqa_logits", "hc_prenorm")


def launch_indexer(func: str, tensors: Sequence[Any], scalars: Sequence[int],
                   stream: Optional[StreamLike]) -> None:
    """One indexer / HC call (_C.<func>: mqa_logits, paged_mqa_schedule,
    paged_mqa_logits or hc_prenorm): under torch.compile (or with tensor
    subclasses, or meta tensors) the custom op torch.ops.qgemm.<func>; else the tensors through
    DLPack on the stream given, or on the framework's current one (torch's for
    torch tensors), on the tensors' device, followed by the function's int
    arguments. The logits functions take the padded [rows, ld] logits buffer
    last and its width first among the ints: the extension gets its
    [:, :width] view."""
    if func not in _INDEXER_FUNCS:
        raise ValueError(f"qgemm: unknown indexer function {func!r}")
    if stream is None and func not in _LOGITS_FUNCS and not COMPILING() and \
            getattr(_C, func)(*tensors, *scalars, 0, TORCH_MODE) is not NotImplemented:
        return  # the torch mode (launch_family's docstring): launched, or raised
    ops = torch_ops()
    if ops is not None and (ops.compiling() or any(
            ops.is_subclass_tensor(t) or getattr(t, "is_meta", False) is True for t in tensors)):
        ops.call_indexer(func, list(tensors), tuple(scalars), stream)
        return
    launch_indexer_eager(func, tensors, scalars, stream)


_LOGITS_FUNCS = ("mqa_logits", "paged_mqa_logits")


def torch_mode_ok(stream: Optional[StreamLike]) -> bool:
    """Whether a call may try the extension's torch mode: no stream given, not traced."""
    return stream is None and not COMPILING()


def indexer_torch_mode(func: str, tensors: Sequence[Any], scalars: Sequence[int]) -> bool:
    """A logits call in the extension's torch mode (when torch_mode_ok): `tensors` end with
    the logits as the [rows, cols] view to write (launch_indexer's padded buffer and its
    width are for the other ways), `scalars` without the width. True when launched (or
    raised); False, nothing done, when the tensors are not plain CUDA torch tensors."""
    return getattr(_C, func)(*tensors, *scalars, 0, TORCH_MODE) is not NotImplemented


def launch_indexer_eager(func: str, tensors: Sequence[Any], scalars: Sequence[int],
                         stream: Optional[StreamLike]) -> None:
    """launch_indexer without the custom op (what the op itself runs)."""
    tensors = list(tensors)
    if func in ("mqa_logits", "paged_mqa_logits"):
        tensors[-1] = detach(tensors[-1])[:, :scalars[0]]
        scalars = scalars[1:]
    launch_family(getattr(_C, func), [f"tensor {i}" for i in range(len(tensors))], tensors, (),
                  scalars, stream)
