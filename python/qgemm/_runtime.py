"""Settings and planning every kernel family shares: the SM count and PDL
switches, device properties, the configuration the library picks and the JIT
warm-up (select_config, compile), and the small integer helpers of
DeepGEMM's API. See _dispatch.py for how the package is laid out."""
from __future__ import annotations

from typing import Any, Dict, Optional

from . import _C
from ._dispatch import KINDS, Config, as_int, config_tuple, device_ordinal


def ceil_div(x: int, y: int) -> int:
    """``ceil(x / y)`` for non-negative integers."""
    return (x + y - 1) // y


def align(x: int, y: int) -> int:
    """``x`` rounded up to a multiple of ``y`` (DeepGEMM's utils.align)."""
    return ceil_div(x, y) * y


def get_m_alignment_for_contiguous_layout() -> int:
    """Rows each expert's segment must be padded to in the contiguous grouped layout."""
    return _C.m_alignment()


def get_tma_aligned_size(x: int, element_size: int) -> int:
    """``x`` rounded up so that ``x * element_size`` is a multiple of 16 bytes (TMA)."""
    x, element_size = as_int(x, "x", None, None), as_int(element_size, "element_size", None, None)
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
    _C.set_num_sms(as_int(num_sms, "num_sms"))


def get_num_sms(device: Any = None) -> int:
    """The SMs kernels use: the value of set_num_sms, else the device's SM count.

    ``device``: a CUDA ordinal or a torch.device; default: PyTorch's current
    device when PyTorch is in use, else 0. Needs a GPU unless set_num_sms was called.
    """
    n = _C.num_sms_setting()
    return n if n else _C.get_num_sms(device_ordinal(device))


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
    return _C.device_props(device_ordinal(device))


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


def select_config_fp8out(
    m: int, n: int, k: int, *, kind: str = "dense", num_groups: int = 1, expected_m: int = 0,
    use_ue8m0: bool = False, device: Any = None, offline: bool = False,
) -> Dict[str, Any]:
    """The configuration the library picks for the FP8-output GEMM of a problem
    (fp8_gemm_nt_fp8out and the grouped ``*_fp8out`` calls; ``kind`` "dense", "contiguous",
    "masked" or "psum", the arguments as in select_config): its tiles cover whole 128-column
    scale groups, or 64 / 32 columns of one, split over a cluster of 2 / 4 CTAs. The dict is
    select_config's with ``cluster``, the CTAs of a cluster (1: none)."""
    if kind not in ("dense", "contiguous", "masked", "psum"):
        raise ValueError(f"qgemm: kind must be dense, contiguous, masked or psum, got {kind!r}")
    ordinal = _C.OFFLINE if offline else device_ordinal(device)
    return _C.select_config_fp8out(KINDS[kind], as_int(m, "m"), as_int(n, "n"), as_int(k, "k"),
                                   as_int(num_groups, "num_groups"),
                                   as_int(expected_m, "expected_m"), ordinal, bool(use_ue8m0))


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
    if not isinstance(kind, str) or kind not in KINDS:  # (a list is not hashable)
        raise ValueError(f"qgemm: kind must be one of {sorted(KINDS)}, got {kind!r}")
    ordinal = _C.OFFLINE if offline else device_ordinal(device)
    return fn(KINDS[kind], as_int(m, "m"), as_int(n, "n"), as_int(k, "k"),
              as_int(num_groups, "num_groups"), as_int(expected_m, "expected_m"), ordinal,
              config_tuple(config), bool(accumulate))
