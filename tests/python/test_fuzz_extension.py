"""Seeded, time-bounded random property test of every entry point of qgemm._C (python/csrc)
with hostile input: the extension is C between users' tensors and the library, and must
never crash their process.

What it calls (each case one call; EVERY function of _C.pyi):
  - the launch entries, raw on _C (argument tuples, the nastiest values) and through the
    public functions where those are the natural way in: gemm (dense, contiguous, masked,
    psum, wgrad), gemm_fp8out, gemm_swiglu, gemm_torch, k_grouped_torch, bf16_gemm (every
    kind: dense, contiguous, psum, masked, k-grouped, batched, batch sums, batch sum), cast
    (4 kinds), sf_layout (3 kinds), mqa_logits, paged_mqa_schedule, paged_mqa_logits,
    hc_prenorm, the einsum fast paths' einsum_bmk_torch and fp8_einsum_torch; with no_sync's
    bit 31 (QGPY_TORCH_MODE) and without, and per-slot no_sync bits (the torch borrow of
    qgpy_tensor_take);
  - the rest: select_config, select_config_fp8out, compile (a fake NVRTC built from
    fuzz/fake_nvrtc.c when a C compiler is here, so a valid request fails at once; without
    one compile() only sees invalid requests), device_props, set_num_sms, get_num_sms,
    num_sms_setting, set_pdl, pdl_setting, context_pdl, sfa_ld, batch_sum_workspace_bytes,
    bmk_default_splits,
    version, m_alignment, torch_init (hostile modules first, then the fake torch).

With what: a well-formed call of the entry (random small and odd sizes), then 0..4
mutations of random arguments: fake_dlpack.FakeTensor capsules of another dtype (or raw
DLPack code/bits/lanes), ndim 0..5, ndim lies (33, 2^31 - 1, -1), a NULL shape or strides,
dimensions 0, 1, odd, 2^31, 2^32 + 256, 2^63 - 1, negative, strides 0, negative, huge,
overlapping another argument, devices CPU / CUDA_HOST / managed / ROCm / unknown / other
ordinals / negative, addresses 0, misaligned, the top of the address space, byte_offset up
to 2^64 - 16, READ_ONLY / IS_COPIED flags, DLPack versions 0.x and 2.x, pre-1.0 producers;
producers that raise, return non-capsules or used capsules; None in tensor slots; str,
float, list, object() for ints and tensors; ints 2^31, 2^32, 2^63, -1, 2^64. The torch mode
runs on a fake torch module handed to _C.torch_init (its Tensor type a FakeTensor subclass
with torch's attributes: is_cuda, dtype, shape, stride(), data_ptr(), get_device(), each
of which can lie or raise), so the fast path's checks run on "CUDA torch tensors" on a CPU.
A second run (where torch imports) passes real torch tensors the fast path must decline:
CPU, meta and non-contiguous ones, mixed with fake CUDA tensors, to the torch-mode entries
and the public functions.

Properties, per case:
  - no crash or abort: each run is a subprocess (this file run as a script), and a crash
    fails the test naming the seed and case index (replay: ``python
    tests/python/test_fuzz_extension.py --mode fake --seed S --case I``, which prints the
    arguments first);
  - a call raises ValueError, TypeError, NotImplementedError or RuntimeError (raw calls also
    the argument parser's OverflowError), never SystemError or anything else; the message of
    an error the extension or the package raise starts with "qgemm" (the library's own, as
    qg_last_error() words them, start with the qg_ function, "config:", "cast ", or say that
    no driver is there);
  - a launch that does not raise returns None only for an empty problem (some tensor has a
    zero dimension: there is no GPU, so anything else must have failed), NotImplemented only
    in the torch mode, ZERO_K only from gemm/gemm_torch for K = 0;
  - every FakeTensor's capsules were consumed correctly (renamed "used_...", the deleter
    called exactly once per export), whatever the outcome;
  - no message prints a raw pointer ("0x" and 8+ hex digits) except those that print
    addresses on purpose (overlap, alignment, not a device pointer).

Knobs: QGEMM_PYFUZZ_CASES (default 10000 for the fake run, a fifth of it for the torch run:
~4 s and ~5 s with torch's import on the 2-core development machine), QGEMM_PYFUZZ_SEED (default 1), QGEMM_PYFUZZ_SECONDS
(stop after this long, default 60). Long runs: QGEMM_PYFUZZ_CASES=200000, or run the script
directly (``--mode fake|torch --cases N --seed S``). Runs only where the library cannot
reach a GPU (fake device pointers: conftest.no_gpu).
"""
from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from fake_dlpack import (  # noqa: E402
    DTYPES,
    KDL_CPU,
    KDL_CUDA,
    KDL_CUDA_HOST,
    KDL_CUDA_MANAGED,
    FakeTensor,
)

KDL_ROCM = 10
I64 = (1 << 63) - 1
TORCH_MODE = 1 << 31

# ---- value pools -------------------------------------------------------------------------

DIMS = [0, 1, 2, 3, 7, 15, 16, 17, 64, 127, 128, 129, 255, 256, 4096, 2**31 - 1, 2**31, 2**32,
        2**32 + 256, 2**36 + 1, 2**62, I64, -1, -128, -(2**31), -(2**63)]
STRIDES = [0, 1, -1, -16, 2, 3, 4, 16, 17, 2**31, 2**36, 2**36 + 16, 2**62, I64, -(2**63)]
ADDRESSES = [0, 1, 8, 0x10, 0x7F0000000003, 0xFFFFFFFFFFFFFFF0, 0xFFFFFFFFFFFFFFFF, 2**63,
             0xFFFFFFFFFFFF0000]
OFFSETS = [1, 2, 16, 2**32, 2**63, 2**64 - 16]
DEVICES = [(KDL_CUDA, 1), (KDL_CUDA, 255), (KDL_CUDA, 256), (KDL_CUDA, -1),
           (KDL_CUDA, 2**31 - 1), (KDL_CPU, 0), (KDL_CUDA_HOST, 0), (KDL_CUDA_MANAGED, 0),
           (KDL_ROCM, 0), (0, 0), (99, 0), (-5, 0)]
INTS = [0, 1, -1, 2, 3, 4, 7, 16, 128, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1, 2**32,
        I64, 2**63, -(2**63), 2**64]
WRONG = ["3", 3.0, float("nan"), [1], (1, 2), object(), True, b"x", 2**100]


def wrap64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def contiguous_strides(shape: Sequence[int]) -> List[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.insert(0, wrap64(acc))
        acc *= s
    return out


# ---- producers ---------------------------------------------------------------------------

class Fake(FakeTensor):
    """A FakeTensor that wraps its shape and strides into int64 (ctypes would) and can
    have a NULL strides pointer."""

    def __init__(self, shape: Sequence[int], dtype: str = "e4m3", **kw: Any) -> None:
        self.null_strides = kw.pop("null_strides", False)
        super().__init__([wrap64(s) for s in shape], dtype, **kw)
        self.strides = [wrap64(s) for s in self.strides]
        self.dtype_name = dtype

    def __dlpack__(self, **kw: Any) -> Any:
        self.shape = [wrap64(s) for s in self.shape]
        self.strides = [wrap64(s) for s in self.strides]
        while len(self.strides) < len(self.shape):
            self.strides.append(1)
        capsule = super().__dlpack__(**kw)
        if self.null_strides:
            self._keep[-1].dl_tensor.strides = None  # the DLManagedTensor(Versioned)
        return capsule


TORCH_DTYPE_OF = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "uint8": "uint8",
                  "int8": "int8", "int32": "int32", "int64": "int64", "float16": "float16",
                  "float32": "float32", "bfloat16": "bfloat16", "e4m3_ieee": None}


class FakeDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"dtype.{self.name}"


class Unhashable:
    __hash__ = None  # type: ignore[assignment]


class FuzzSentinel(Exception):
    """What the fuzz's own fake producers raise: it must come back as the cause of a qgemm
    error or unchanged."""


def _raise(*_a: Any, **_k: Any) -> Any:
    raise FuzzSentinel("fake producer raised")


_MISSING = object()


class FTensor(Fake):
    """The fake torch's Tensor: a DLPack FakeTensor that also has the metadata the torch
    fast path reads (torch.c: is_cuda, dtype, shape (a tuple), stride(), data_ptr(),
    get_device()); torch_over makes any of them lie or raise (FuzzSentinel)."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        object.__setattr__(self, "torch_over", {})
        object.__setattr__(self, "_dl", False)
        super().__init__(*a, **kw)

    def __setattr__(self, name: str, v: Any) -> None:
        object.__setattr__(self, name, tuple(v) if name == "shape" else v)

    def __getattribute__(self, name: str) -> Any:
        if name in ("is_cuda", "dtype", "shape"):
            over = object.__getattribute__(self, "torch_over").get(name, _MISSING)
            if over is not _MISSING and not object.__getattribute__(self, "_dl"):
                return over() if over is _raise else over
            if name == "is_cuda":
                return object.__getattribute__(self, "device")[0] == KDL_CUDA
            if name == "dtype":
                t = TORCH_DTYPE_OF.get(object.__getattribute__(self, "dtype_name"))
                return FAKE_TORCH_DTYPES.get(t, FakeDtype("unknown"))
        return object.__getattribute__(self, name)

    def __dlpack__(self, **kw: Any) -> Any:
        object.__setattr__(self, "_dl", True)  # the DLPack view: the real shape
        try:
            return super().__dlpack__(**kw)
        finally:
            object.__setattr__(self, "_dl", False)

    def real_shape(self) -> List[int]:
        object.__setattr__(self, "_dl", True)
        try:
            return list(self.shape)
        finally:
            object.__setattr__(self, "_dl", False)

    def stride(self) -> Any:
        v = self.torch_over.get("stride", None)
        if v is not None:
            return v() if callable(v) else v
        return tuple(self.strides)

    def data_ptr(self) -> Any:
        v = self.torch_over.get("data_ptr", None)
        if v is not None:
            return v() if callable(v) else v
        return (self.address + self.byte_offset) & ((1 << 64) - 1)

    def get_device(self) -> Any:
        v = self.torch_over.get("get_device", None)
        if v is not None:
            return v() if callable(v) else v
        return self.device[1] if self.device[0] == KDL_CUDA else -1


def shape_of(x: FakeTensor) -> List[int]:
    return x.real_shape() if isinstance(x, FTensor) else list(x.shape)


class FParam(FTensor):
    pass


FAKE_TORCH_DTYPES: Dict[Optional[str], Any] = {}


def fake_torch_module() -> Any:
    import types
    mod = types.SimpleNamespace()
    mod.Tensor = FTensor
    mod.nn = types.SimpleNamespace(Parameter=FParam)
    for name in ["float8_e4m3fn", "float8_e5m2", "uint8", "int8", "int32", "int64", "float16",
                 "float32", "bfloat16"]:
        FAKE_TORCH_DTYPES[name] = FakeDtype(name)
        setattr(mod, name, FAKE_TORCH_DTYPES[name])
    return mod


STREAM_MODE = {"v": 0}


def fake_current_stream(device: int) -> Any:
    v = STREAM_MODE["v"]
    if v == "raise":
        raise FuzzSentinel("fake current_stream raised")
    return v


class RaisingDevice:
    def __dlpack_device__(self) -> Any:
        raise FuzzSentinel("__dlpack_device__ raised")

    def __dlpack__(self, **kw: Any) -> Any:
        return None


class BadDevice:
    def __init__(self, dev: Any) -> None:
        self.dev = dev

    def __dlpack_device__(self) -> Any:
        return self.dev

    def __dlpack__(self, **kw: Any) -> Any:
        raise AssertionError("unreachable")


class BadCapsule:
    """__dlpack__ returns something other than an unused DLPack capsule, or raises."""

    def __init__(self, what: str, inner: Optional[FakeTensor] = None) -> None:
        self.what, self.inner = what, inner

    def __dlpack_device__(self) -> Any:
        return (KDL_CUDA, 0)

    def __dlpack__(self, **kw: Any) -> Any:
        if self.what == "raise":
            raise FuzzSentinel("__dlpack__ raised")
        if self.what == "raise_base":
            raise KeyboardInterrupt  # must propagate unchanged: caught below
        if self.what == "int":
            return 42
        if self.what == "none":
            return None
        if self.what == "used" and self.inner is not None:
            cap = self.inner.__dlpack__(**kw)
            rename = __import__("ctypes").pythonapi.PyCapsule_SetName
            rename.argtypes = [__import__("ctypes").py_object, __import__("ctypes").c_char_p]
            rename(cap, USED_NAME)
            self.inner.deletes += 1  # nobody owes its deleter: count it as settled
            return cap
        return object()


USED_NAME = b"used_dltensor_versioned"


# ---- building well-formed calls ----------------------------------------------------------

class Case:
    def __init__(self, rng: random.Random, torch_cls: Optional[type]) -> None:
        self.rng = rng
        self.tensors: List[Any] = []
        self.torch_cls = torch_cls  # FTensor in the torch mode of the fake run

    def t(self, shape: Sequence[int], dtype: str, strides: Optional[Sequence[int]] = None,
          **kw: Any) -> Any:
        cls = self.torch_cls or Fake
        x = cls(shape, dtype, strides=strides, **kw)
        self.tensors.append(x)
        return x


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def sf_ld(m: int) -> int:
    return cdiv(m, 4) * 4


def small(rng: random.Random, choices: Sequence[int] = (0, 1, 2, 3, 16, 17, 64, 128, 129, 200,
                                                       256, 384)) -> int:
    return rng.choice(choices)


def mult(rng: random.Random, base: int, hi: int = 4) -> int:
    return base * rng.randint(0, hi)


def build_fp8(c: Case, kind: int, out: str) -> Dict[str, Any]:
    """a, sfa, b, sfb, d (+ sfd, row_weight), idx of a gemm / fp8out / swiglu call."""
    rng = c.rng
    m, n, k, g = small(rng), mult(rng, 16, 24), mult(rng, 16, 40), rng.choice([1, 2, 3])
    if out == "swiglu":
        n = mult(rng, 32, 8)
    kb, nb = cdiv(k, 128), cdiv(n, 128)
    masked, wgrad = kind == 2, kind == 4
    grouped = kind in (1, 2, 3)
    ld = sf_ld(m)
    if masked:
        a = c.t([g, m, k], "e4m3")
        sfa = c.t([g, m, kb], "float32", strides=[kb * ld, 1, ld])
    else:
        a = c.t([m, k], "e4m3")
        sfa = c.t([m, kb], "float32", strides=[1, ld])
    if grouped:
        b = c.t([g, n, k], "e4m3")
        sfb = c.t([g, nb, kb], "float32")
    else:
        b = c.t([n, k], "e4m3")
        sfb = (c.t([n, kb], "float32", strides=[1, sf_ld(n)]) if wgrad
               else c.t([nb, kb], "float32"))
    dn = n // 2 if out == "swiglu" else n
    ddt = "float32" if wgrad else ("e4m3" if out != "bf16" else "bfloat16")
    lead = [g] if masked else []
    d = c.t(lead + [m, dn], ddt)
    r: Dict[str, Any] = {"a": a, "sfa": sfa, "b": b, "sfb": sfb, "d": d}
    if out != "bf16":
        cols = cdiv(dn, 128)
        r["sfd"] = c.t(lead + [m, cols], "float32",
                       strides=([cols * ld, 1, ld] if masked else [1, ld]))
    if kind == 0:
        r["idx"] = None
    elif kind == 1:
        r["idx"] = c.t([m], "int32")
    elif kind in (2, 3):
        r["idx"] = c.t([g], "int32")
    else:
        r["idx"] = rng.choice([None, c.t([m, n], "float32"), d])
    if out == "swiglu":
        r["row_weight"] = rng.choice([None, c.t([m * (g if masked else 1)], "float32")])
    r["expected_m"] = rng.choice([0, m, 1])
    return r


def pick_config(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.7:
        return None
    if r < 0.85:
        return tuple(rng.choice([0, 1, 2, 4, 16, 32, 64, 128, 256, -1, -128, 2**31 - 1])
                     for _ in range(6))
    return rng.choice([(1, 2, 3), "config", [128, 128, 4, 0, 1, 1], (128, 128, 4, 0, 1, 1.5),
                       (128, 128, 4, 3, 1, 1), (128, 128, 4, 0, 1, 2**40), 5])


def gen_gemm(c: Case, raw_name: str) -> Tuple[str, List[Any]]:
    rng = c.rng
    if raw_name in ("gemm", "gemm_torch"):
        kind = rng.choice([0, 1, 2, 3, 4])
        r = build_fp8(c, kind, "bf16")
        cfg = pick_config(rng)
        if raw_name == "gemm_torch":
            return raw_name, [kind, r["a"], r["sfa"], r["b"], r["sfb"], r["d"], r["idx"],
                              r["expected_m"], cfg]
        return raw_name, [kind, r["a"], r["sfa"], r["b"], r["sfb"], r["d"], r["idx"],
                          r["expected_m"], rng.choice([0, 0, 1, 7, 2**64 - 1]), cfg,
                          rng.choice([0, 0, 1, 5, 0xFFFFFFFF]), pick_no_sync(rng)]
    if raw_name == "gemm_fp8out":
        kind = rng.choice([0, 1, 2, 3])
        r = build_fp8(c, kind, "fp8")
        return raw_name, [kind, r["a"], r["sfa"], r["b"], r["sfb"], r["d"], r["sfd"], r["idx"],
                          r["expected_m"], rng.choice([0, 1]), pick_config(rng),
                          rng.choice([0, 0, 1, 0x1F]), 0, pick_no_sync(rng)]
    kind = rng.choice([0, 1, 2])
    r = build_fp8(c, kind, "swiglu")
    return raw_name, [kind, r["a"], r["sfa"], r["b"], r["sfb"], r["d"], r["sfd"], r["idx"],
                      r["row_weight"], r["expected_m"], rng.choice([0, 1]),
                      rng.choice([0.0, 7.0, -1.0, float("inf"), float("nan")]),
                      pick_config(rng), rng.choice([0, 0, 1]), 0, pick_no_sync(rng)]


def pick_no_sync(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.4:
        return 0
    if r < 0.7:
        return TORCH_MODE
    return rng.choice([1, 3, 0x7F, 0xFFFFFFFF, TORCH_MODE | 5])


def gen_k_grouped_torch(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    g = rng.choice([1, 2, 3])
    ks = [mult(rng, 128, 3) for _ in range(g)]
    m, n = small(rng), small(rng)
    total = sum(ks)
    a = c.t([m * total], "e4m3")
    sfa = c.t([m, total // 128], "float32", strides=[1, sf_ld(m)])
    b = c.t([n * total], "e4m3")
    sfb = c.t([n, total // 128], "float32", strides=[1, sf_ld(n)])
    d = c.t([g, m, n], "float32")
    cc = rng.choice([None, c.t([g, m, n], "float32"), d])
    return "k_grouped_torch", [a, sfa, b, sfb, d, cc, ks, pick_config(rng)]


def gen_bf16(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    kind = rng.choice([0, 1, 2, 3, 5, 16, 17, 18])
    m, n, k, g = small(rng), mult(rng, 8, 40), mult(rng, 8, 40), rng.choice([1, 2, 3])
    ddt = rng.choice(["bfloat16", "float32"])
    ks, idx, em = None, None, 0
    if kind == 5:
        ks = [mult(rng, 64, 3) for _ in range(g)]
        a, b = c.t([sum(ks), m], "bfloat16"), c.t([sum(ks), n], "bfloat16")
        d = c.t([g, m, n], "float32")
    elif kind in (2, 16, 17, 18):
        a, b = c.t([g, m, k], "bfloat16"), c.t([g, n, k], "bfloat16")
        if kind == 17:
            d = c.t([rng.choice([1, 2, 4]), m, n], "float32")
        elif kind == 18:
            d = c.t([m, n], ddt)
            idx = c.t([rng.choice([0, 4, 64, 1024])], "int32")
            em = rng.choice([1, 2, 4])
        else:
            d = c.t([g, m, n], ddt)
        if kind == 2:
            idx = c.t([g], "int32")
            em = rng.choice([0, m])
        if kind == 16:
            em = rng.choice([0, 1, 2, 3])
    else:
        a = c.t([m, k], "bfloat16")
        if rng.random() < 0.3:  # an MN-major view
            a = c.t([m, k], "bfloat16", strides=[1, max(m, 1)])
        b = c.t([g, n, k], "bfloat16") if kind in (1, 3) else c.t([n, k], "bfloat16")
        d = c.t([m, n], ddt)
        if kind == 1:
            idx = c.t([m], "int32")
        elif kind == 3:
            idx = c.t([g], "int32")
            em = rng.choice([0, m])
    cc = None if kind in (17,) else rng.choice([None, None, d, c.t(shape_of(d), d.dtype_name)])
    return "bf16_gemm", [kind, a, b, d, cc, idx, em, ks, 0, pick_no_sync(rng)]


def gen_cast(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    kind = rng.choice([1, 2, 3, 4])
    m, groups, k = small(rng), rng.choice([1, 2]), mult(rng, 16, 20)
    rows = m * groups
    cols = 2 * k if kind == 4 else k
    x = c.t([rows, cols], rng.choice(["bfloat16", "float32"]))
    out = c.t([rows, k], rng.choice(["e4m3", "uint8"]))
    kb = cdiv(k, 128)
    mn_major = rng.choice([0, 1])
    ld = sf_ld(m)
    if kind == 2:
        sf = c.t([groups * cdiv(m, 128), kb], "float32")
    elif kind == 3:
        sf = c.t([m // 128, k], "float32")
    elif mn_major:
        sf = c.t([groups, kb, ld], "float32")
    else:
        sf = c.t([rows, kb], "float32")
    rows_mask = rng.choice([0, 1, 2]) if kind == 4 else 0
    aux = None
    if rows_mask == 1:
        aux = c.t([groups], "int32")
    elif rows_mask == 2:
        aux = c.t([rows], "int32")
    return "cast", [kind, x, out, sf, aux, m, groups, mn_major, ld, rng.choice([0, 1]),
                    rows_mask, 0, pick_no_sync(rng)]


def gen_sf_layout(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    kind = rng.choice([5, 6, 7])
    if kind == 7:
        g = rng.choice([1, 2, 3])
        mn, sfk = small(rng), rng.choice([0, 1, 4, 8, 12])
        sf = c.t([sfk, mn], "float32")
        out = c.t([cdiv(sfk, 4) + g, mn], "int32")
        ks = c.t([g], "int32")
        return "sf_layout", [kind, sf, out, ks, 0, rng.choice([32, 128]),
                             rng.choice([128, 32]), rng.choice([0, 1]), 0, pick_no_sync(rng)]
    g, mn, sfk = rng.choice([1, 2]), small(rng), rng.choice([0, 1, 3, 4, 7])
    sf = c.t([g, mn, sfk], "float32")
    if rng.random() < 0.4:
        sf = c.t([g, mn, sfk], "float32", strides=[mn * sfk, 1, max(mn, 1)])
    out_ld = sf_ld(mn)
    rows = sfk if kind == 5 else cdiv(sfk, 4)
    out = c.t([g, rows, out_ld], "float32" if kind == 5 else "int32")
    return "sf_layout", [kind, sf, out, None, out_ld, 0, 0, 0, 0, pick_no_sync(rng)]


def gen_mqa(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    s, h, dh, skv = small(rng), rng.choice([1, 32, 64]), rng.choice([32, 64, 128]), small(rng)
    q = c.t([s, h, dh], rng.choice(["e4m3", "uint8"]))
    kv = c.t([skv, dh], rng.choice(["e4m3", "uint8"]))
    sc = c.t([skv], "float32")
    w = c.t([s, h], "float32")
    ks, ke = c.t([s], "int32"), c.t([s], "int32")
    msk = rng.choice([0, 0, skv, 17])
    cols = msk if msk > 0 else skv
    logits = c.t([s, cols], rng.choice(["float32", "bfloat16"]),
                 strides=[sf_ld(cols) if rng.random() < 0.5 else max(cols, 1), 1])
    return "mqa_logits", [q, kv, sc, w, ks, ke, logits, rng.choice([0, 1]), msk, 0,
                          pick_no_sync(rng)]


def gen_paged_schedule(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    b, nn = small(rng, (0, 1, 2, 5, 64)), rng.choice([1, 2])
    lens = c.t([b, nn], "int32")
    sched = c.t([rng.choice([2, 133, 1, 65538]), 2], "int32")
    return "paged_mqa_schedule", [lens, sched, rng.choice([0, 64, 8192]), 0, pick_no_sync(rng)]


def gen_paged_logits(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    b, nn, h, dh = small(rng, (0, 1, 2, 5)), rng.choice([1, 2]), rng.choice([32, 64]), 128
    nblk, mctx = rng.choice([0, 1, 8]), rng.choice([0, 64, 256])
    q = c.t([b, nn, h, dh], rng.choice(["e4m3", "uint8"]))
    kv = c.t([nblk, 64, 1, dh + 4], "uint8")
    w = c.t([b * nn, h], "float32")
    lens = c.t([b, nn], "int32")
    bt = c.t([b, rng.choice([1, 4])], "int32")
    sched = c.t([rng.choice([2, 133]), 2], "int32")
    logits = c.t([b * nn, mctx], rng.choice(["float32", "bfloat16"]))
    return "paged_mqa_logits", [q, kv, w, lens, bt, sched, logits, mctx, rng.choice([0, 1]), 0,
                                pick_no_sync(rng)]


def gen_hc(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    m, n, k = small(rng), rng.choice([1, 24, 32]), mult(rng, 64, 8)
    splits = rng.choice([0, 0, 1, 2, 4])
    a = c.t([m, k], "bfloat16")
    b = c.t([n, k], "float32")
    d = c.t(([splits] if splits else []) + [m, n], "float32")
    s = c.t(([splits] if splits else []) + [m], "float32")
    return "hc_prenorm", [a, b, d, s, splits, 0, pick_no_sync(rng)]


def gen_einsum_fast(c: Case) -> Tuple[str, List[Any]]:
    """The einsum fast paths' torch-mode entries: einsum_bmk_torch, fp8_einsum_torch."""
    rng = c.rng
    if rng.random() < 0.5:
        s, m, n, k = rng.choice([0, 1, 2, 129, 1100]), small(rng), small(rng), mult(rng, 8, 40)
        a, b = c.t([s, m, k], "bfloat16"), c.t([s, n, k], "bfloat16")
        d = c.t([m, n], rng.choice(["float32", "bfloat16"]))
        rule = [264, 1024, 1024, 1024] if rng.random() < 0.8 else \
            [rng.choice(INTS) for _ in range(4)]
        return "einsum_bmk_torch", [a, b, d, rng.choice([True, False, 0, 1, None, d])] + rule
    batch, h, r, dd = small(rng), rng.choice([1, 2, 3]), rng.choice([64, 128, 256, 640]), small(rng)
    kb, nb, ld = cdiv(r, 128), cdiv(dd, 128), sf_ld(batch)
    x, sfx = c.t([batch, h, r], "e4m3"), c.t([batch, h, kb], "float32")
    y, sfy = c.t([h, dd, r], "e4m3"), c.t([h, nb, kb], "float32")
    z = c.t([batch, h, dd], "bfloat16")
    flags = rng.choice([0, 0, 1, 1, 2, -1, 2**40])
    sfa = c.t([h, kb, ld], "float32") if flags == 1 else \
        c.t([batch, h, kb], "float32", strides=[1, kb * ld, ld])
    return "fp8_einsum_torch", [x, sfx, y, sfy, z, sfa, flags]


def gen_problem(c: Case, name: str) -> Tuple[str, List[Any]]:
    rng = c.rng
    kind = rng.choice([0, 1, 2, 3, 4, 5, 6, -1, 16])
    m, n, k = (rng.choice([0, 1, 128, 256, 4096, 7168, 2**31 - 1, -1]) for _ in range(3))
    g, em = rng.choice([1, 2, 8, 0, -1, 4097]), rng.choice([0, 1, 256, -1])
    dev = rng.choice([-1, -1, -1, 0, 1, 255, 256, -2])
    if name == "select_config_fp8out":
        return name, [kind, m, n, k, g, em, dev, rng.choice([0, 1])]
    args = [kind, m, n, k, g, em, dev, pick_config(rng)]
    if rng.random() < 0.5:
        args.append(rng.choice([True, False, 0, 1]))
    return name, args


def gen_misc(c: Case) -> Tuple[str, List[Any]]:
    rng = c.rng
    name = rng.choice(["device_props", "set_num_sms", "get_num_sms", "num_sms_setting",
                       "set_pdl", "pdl_setting", "context_pdl", "sfa_ld",
                       "batch_sum_workspace_bytes", "version", "m_alignment",
                       "bmk_default_splits"])
    if name in ("num_sms_setting", "pdl_setting", "version", "m_alignment"):
        return name, []
    if name == "batch_sum_workspace_bytes":
        return name, [rng.choice(INTS) for _ in range(3)]
    if name == "bmk_default_splits":
        return name, [rng.choice(INTS + [132, 264, 1024]) for _ in range(9)]
    if name == "set_pdl":
        return name, [rng.choice([True, False, 0, 1, None])]
    if name == "set_num_sms":
        return name, [rng.choice([0, 0, 1, 132, 133, -1, 2**31, 2**63 - 1, -(2**63), 100000])]
    return name, [rng.choice(INTS + [-1, 0, 0, 0])]


GENERATORS: List[Tuple[float, Callable[[Case], Tuple[str, List[Any]]]]] = [
    (3, lambda c: gen_gemm(c, "gemm")),
    (2, lambda c: gen_gemm(c, "gemm_torch")),
    (2, lambda c: gen_gemm(c, "gemm_fp8out")),
    (2, lambda c: gen_gemm(c, "gemm_swiglu")),
    (1, gen_k_grouped_torch),
    (3, gen_bf16),
    (2, gen_cast),
    (1.5, gen_sf_layout),
    (1.5, gen_mqa),
    (1, gen_paged_schedule),
    (1.5, gen_paged_logits),
    (1.5, gen_hc),
    (1.5, gen_einsum_fast),
    (0.5, lambda c: gen_problem(c, "select_config")),
    (0.3, lambda c: gen_problem(c, "select_config_fp8out")),
    (0.3, lambda c: gen_problem(c, "compile")),
    (0.6, gen_misc),
]
TENSOR_ENTRIES = {"gemm", "gemm_torch", "gemm_fp8out", "gemm_swiglu", "k_grouped_torch",
                  "bf16_gemm", "cast", "sf_layout", "mqa_logits", "paged_mqa_schedule",
                  "paged_mqa_logits", "hc_prenorm", "einsum_bmk_torch", "fp8_einsum_torch"}
ALWAYS_TORCH = {"gemm_torch", "k_grouped_torch", "einsum_bmk_torch", "fp8_einsum_torch"}


# ---- mutations ---------------------------------------------------------------------------

def mutate_tensor(rng: random.Random, x: Any, others: List[Any]) -> Any:
    """Change one property of fake tensor x in place, or return a replacement."""
    op = rng.randrange(22)
    shape = shape_of(x)
    n = len(shape)
    if op == 0 and n:
        shape[rng.randrange(n)] = rng.choice(DIMS)
        x.shape = shape
    elif op == 1 and n:
        x.strides[rng.randrange(n)] = rng.choice(STRIDES)
    elif op == 2:
        if n and rng.random() < 0.5:
            del shape[rng.randrange(n)]
        else:
            shape.insert(rng.randrange(n + 1), rng.choice([1, 2, 0, 3]))
        x.shape = shape[:6]
        x.strides = contiguous_strides(shape[:6])
    elif op == 3:
        name = rng.choice(list(DTYPES))
        x.code, x.bits = DTYPES[name]
        x.dtype_name = name
    elif op == 4:
        x.code, x.bits = rng.choice([(200, 8), (2, 0), (2, 255), (10, 16), (4, 32), (6, 8),
                                     (3, 64), (17, 4)])
        x.dtype_name = "e4m3_ieee"
    elif op == 5:
        x.lanes = rng.choice([0, 2, 4, 65535])
    elif op == 6:
        x.device = rng.choice(DEVICES)
    elif op == 7:
        x.address = rng.choice(ADDRESSES)
    elif op == 8:
        x.byte_offset = rng.choice(OFFSETS)
    elif op == 9:
        x.ndim = rng.choice([n + 1, max(n - 1, 0), 33, 2**31 - 1, -1, 0, 32, 8, 9])
    elif op == 10:
        x.null_shape = True
    elif op == 11:
        x.null_strides = True
        x.legacy = rng.random() < 0.5
    elif op == 12:
        x.flags = rng.choice([1, 2, 3, 2**63])
    elif op == 13:
        x.legacy = True
    elif op == 14:
        x.version = rng.choice([(0, 9), (2, 0), (1, 0), (1, 99), (2**32 - 1, 0)])
    elif op == 15 and others:  # alias another argument's memory
        o = rng.choice(others)
        x.address = o.address + rng.choice([0, 16, 256, -16, 1 << 20])
        x.address &= (1 << 64) - 1
    elif op == 16:
        x.strides = [rng.choice(STRIDES) for _ in shape]
    elif op == 17 and isinstance(x, FTensor):
        key = rng.choice(["is_cuda", "dtype", "shape", "stride", "data_ptr", "get_device"])
        x.torch_over[key] = rng.choice({
            "is_cuda": [1, False, _raise, None],
            "dtype": [Unhashable(), _raise, FakeDtype("float8_e4m3fn"), "float32", None],
            "shape": [shape, tuple(shape) + (1,), (2**63,), ("1", 2), _raise,
                      tuple([1] * 9), (-(2**63),), None],
            "stride": [(1,), (2**64,), lambda: [1, 1], _raise, (0,) * n,
                       tuple([-1] * n), "x"],
            "data_ptr": [-1, 2**64, 1.5, 3, _raise, 0, 2**63 + 1],
            "get_device": [-1, 2**31, 2**40, "0", _raise, 256, 1],
        }[key])
    elif op == 18:
        return rng.choice([None, "tensor", 3, 1.5, [1, 2], object(), RaisingDevice(),
                           BadDevice(rng.choice([(2,), "cuda", (2**70, 0), (-1, 0), None,
                                                 (2, 0, 0), ("2", 0)])),
                           BadCapsule(rng.choice(["raise", "int", "none", "object", "used",
                                                  "raise_base"]),
                                      Fake([4, 16], "e4m3"))])
    elif op == 19 and others:
        return rng.choice(others)  # the same object in two slots
    elif op == 20 and isinstance(x, FTensor):
        # the DLPack-only twin: not the (fake) torch type
        y = Fake(shape, x.dtype_name, strides=list(x.strides), device=x.device,
                 address=x.address)
        return y
    else:
        x.shape = [rng.choice(DIMS) for _ in shape]
    return x


def mutate_int(rng: random.Random, v: Any) -> Any:
    r = rng.random()
    if r < 0.6:
        return rng.choice(INTS)
    if r < 0.8:
        return rng.choice(WRONG)
    return None


def mutate_args(rng: random.Random, name: str, args: List[Any], nmut: int) -> List[Any]:
    args = list(args)
    for _ in range(nmut):
        if not args:
            break
        fakes = [a for a in args if isinstance(a, FakeTensor)]
        if fakes and rng.random() < 0.15:
            # one size changed everywhere it occurs (M in a, sfa, d, ...): the tensors stay
            # consistent with each other, so only range checks can refuse a huge value
            sizes = sorted({s for f in fakes for s in shape_of(f) if s > 1})
            if sizes:
                old, new = rng.choice(sizes), rng.choice(DIMS)
                for f in fakes:
                    shape = shape_of(f)
                    if old in shape:
                        f.shape = [new if s == old else s for s in shape]
                        if rng.random() < 0.5:
                            f.strides = contiguous_strides(shape_of(f))
                continue
        i = rng.randrange(len(args))
        v = args[i]
        if isinstance(v, FakeTensor):
            args[i] = mutate_tensor(rng, v, [f for f in fakes if f is not v])
        elif v is None and name in TENSOR_ENTRIES and rng.random() < 0.5:
            args[i] = Fake([rng.choice([0, 1, 16])] * rng.choice([1, 2, 3]),
                           rng.choice(list(DTYPES)))
        elif isinstance(v, (list, tuple)) and rng.random() < 0.6:
            args[i] = rng.choice([[], [0], [-128], [2**31], [2**63], [128] * 4097, ["a"],
                                  [1.5], (128, 2**32), [object()], "abc", 7,
                                  tuple(v) + (1,), list(v)[:-1]])
        else:
            args[i] = mutate_int(rng, v)
    if rng.random() < 0.05 and args:  # wrong arity
        args = args[:-1] if rng.random() < 0.5 else args + [0]
    return args


# ---- public functions (the natural way in) -----------------------------------------------

def public_call(name: str, args: List[Any]) -> Optional[Callable[[], Any]]:
    """A thunk calling the public function that leads to this raw call, or None."""
    import qgemm
    if name == "gemm" and len(args) == 12:
        kind, a, sfa, b, sfb, d, idx, em = args[:8]
        if kind == 0:
            return lambda: qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
        if kind == 1:
            return lambda: qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, idx)
        if kind == 2:
            return lambda: qgemm.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), d, idx, em)
        if kind == 3:
            return lambda: qgemm.m_grouped_fp8_gemm_nt_contiguous(
                (a, sfa), (b, sfb), d, idx, use_psum_layout=True,
                expected_m_for_psum_layout=em)
    if name == "gemm_fp8out" and len(args) == 14:
        kind, a, sfa, b, sfb, d, sfd, idx, em, ue = args[:10]
        f = {0: lambda: qgemm.fp8_gemm_nt_fp8out((a, sfa), (b, sfb), d, sfd, use_ue8m0=ue),
             1: lambda: qgemm.m_grouped_fp8_gemm_nt_contiguous_fp8out(
                 (a, sfa), (b, sfb), d, sfd, idx, use_ue8m0=ue),
             2: lambda: qgemm.m_grouped_fp8_gemm_nt_masked_fp8out(
                 (a, sfa), (b, sfb), d, sfd, idx, em, use_ue8m0=ue)}
        return f.get(kind) if type(kind) is int else None
    if name == "gemm_swiglu" and len(args) == 16:
        kind, a, sfa, b, sfb, d, sfd, idx, rw, em, ue, lim = args[:12]
        f = {0: lambda: qgemm.fp8_gemm_nt_swiglu((a, sfa), (b, sfb), d, sfd, row_weight=rw,
                                                 swiglu_limit=lim, use_ue8m0=ue),
             1: lambda: qgemm.m_grouped_fp8_gemm_nt_contiguous_swiglu(
                 (a, sfa), (b, sfb), d, sfd, idx, row_weight=rw, swiglu_limit=lim),
             2: lambda: qgemm.m_grouped_fp8_gemm_nt_masked_swiglu(
                 (a, sfa), (b, sfb), d, sfd, idx, em, row_weight=rw)}
        return f.get(kind) if type(kind) is int else None
    if name == "bf16_gemm" and len(args) == 10:
        kind, a, b, d, cc, idx, em, ks = args[:8]
        f = {0: lambda: qgemm.bf16_gemm_nt(a, b, d, cc),
             1: lambda: qgemm.m_grouped_bf16_gemm_nt_contiguous(a, b, d, idx),
             2: lambda: qgemm.m_grouped_bf16_gemm_nt_masked(a, b, d, idx, em),
             5: lambda: qgemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, c=cc)}
        return f.get(kind) if type(kind) is int else None
    if name == "hc_prenorm" and len(args) == 7:
        a, b, d, s, sp = args[:5]
        return lambda: qgemm.tf32_hc_prenorm_gemm(a, b, d, s, sp if sp else None)
    if name == "paged_mqa_schedule" and len(args) == 5:
        lens, sched = args[:2]
        sms = (shape_of(sched) or [2])[0] - 1 if isinstance(sched, FakeTensor) else 132
        return lambda: qgemm.get_paged_mqa_logits_metadata(lens, 64, sms)
    if name == "mqa_logits" and len(args) == 11:
        q, kv, sc, w, ks, ke, _l, clean, msk = args[:9]
        return lambda: qgemm.fp8_mqa_logits(q, (kv, sc), w, ks, ke, clean, msk)
    if name == "paged_mqa_logits" and len(args) == 11:
        q, kv, w, lens, bt, sched, _l, mctx = args[:8]
        return lambda: qgemm.fp8_paged_mqa_logits(q, kv, w, lens, bt, sched, mctx)
    if name == "select_config" and len(args) >= 8:
        kind, m, n, k, g, em = args[:6]
        names = {0: "dense", 1: "contiguous", 2: "masked", 3: "psum", 4: "wgrad",
                 5: "k_grouped"}
        kname = names.get(kind, kind) if type(kind) is int else kind
        return lambda: qgemm.select_config(m, n, k, kind=kname, num_groups=g,
                                           expected_m=em, offline=True)
    return None


# ---- the checks --------------------------------------------------------------------------

POINTER = re.compile(r"0x[0-9a-fA-F]{8,}")
ADDRESS_ON_PURPOSE = ("overlaps", "aligned", "device pointer")
LIBRARY_MESSAGE = re.compile(r"^(qg_\w+|qg__\w+|config: |cast |libcuda|NVRTC|no CUDA|CUDA |"
                             r"cannot |launch )")
PARSER_MESSAGE = re.compile(r"argument|takes|expected|must be|integer|int too|"
                            r"cannot be interpreted|object cannot|required|not supported")
ALLOWED = (ValueError, TypeError, NotImplementedError, RuntimeError)


class Failure(Exception):
    pass


def has_zero_dim(args: Sequence[Any]) -> bool:
    for a in args:
        if isinstance(a, FakeTensor):
            shape = shape_of(a)
            if isinstance(a, FTensor) and isinstance(a.torch_over.get("shape"), tuple):
                shape = shape + list(a.torch_over["shape"])
            if any(s == 0 for s in shape):
                return True
    return False


def check_outcome(name: str, args: List[Any], raw: bool, result: Any,
                  exc: Optional[BaseException], torch_mode: bool, meta: bool) -> None:
    if exc is not None:
        if isinstance(exc, FuzzSentinel):
            return  # the fake producer's own exception, unchanged (torch.c, current_stream)
        if raw and isinstance(exc, OverflowError):
            return  # the argument parser's range check of the internal entry
        if not isinstance(exc, ALLOWED) or isinstance(exc, (SystemError,)):
            raise Failure(f"{type(exc).__name__} is not an allowed exception: {exc!r}")
        msg = str(exc)
        if not msg:
            raise Failure(f"{type(exc).__name__} without a message")
        if not (msg.startswith("qgemm") or LIBRARY_MESSAGE.match(msg) or meta or
                (raw and isinstance(exc, TypeError) and PARSER_MESSAGE.search(msg))):
            raise Failure(f"message does not start with 'qgemm': {type(exc).__name__}: {msg}")
        # (a Python repr of the caller's own object, "<object object at 0x...>", is no leak)
        if POINTER.search(re.sub(r" at 0x[0-9a-f]+>", ">", msg)) and \
                not any(w in msg for w in ADDRESS_ON_PURPOSE):
            raise Failure(f"message leaks a pointer: {msg}")
        cause = exc.__cause__
        if cause is not None and not isinstance(cause, (FuzzSentinel, TypeError, ValueError,
                                                        OverflowError)):
            raise Failure(f"unexpected cause {cause!r}")
        return
    if name in TENSOR_ENTRIES:
        if result is NotImplemented:
            if not (torch_mode or name in ALWAYS_TORCH) or not raw:
                raise Failure("NotImplemented outside the torch mode")
            return
        if result == "ZERO_K":
            if name not in ("gemm", "gemm_torch") or not has_zero_dim(args):
                raise Failure("ZERO_K without K = 0")
            return
        if result is not None:
            if meta or not raw:
                return
            raise Failure(f"a launch returned {result!r}")
        if not (has_zero_dim(args) or meta):
            raise Failure("returned None (success) without an empty tensor and without a GPU")


def check_capsules(args: Sequence[Any]) -> None:
    seen = set()
    for a in args:
        for x in ([a] if isinstance(a, FakeTensor) else
                  [a.inner] if isinstance(a, BadCapsule) and a.inner is not None else []):
            if id(x) in seen:
                continue
            seen.add(id(x))
            if not x.consumed_correctly():
                raise Failure(f"capsules not consumed correctly: {x.exports} exported, "
                              f"{x.deletes} deleted, names {x.capsule_names()}")


def describe(v: Any) -> str:
    if isinstance(v, FakeTensor):
        extra = []
        for attr, dflt in (("device", (KDL_CUDA, 0)), ("byte_offset", 0), ("legacy", False),
                           ("version", (1, 1)), ("flags", 0), ("lanes", 1), ("ndim", None),
                           ("null_shape", False), ("null_strides", False)):
            val = getattr(v, attr, dflt)
            if val != dflt:
                extra.append(f"{attr}={val}")
        if isinstance(v, FTensor) and v.torch_over:
            extra.append(f"torch={v.torch_over}")
        return (f"{type(v).__name__}({shape_of(v)}, code={v.code}, bits={v.bits}, "
                f"strides={v.strides}, address={v.address:#x}{', ' if extra else ''}"
                f"{', '.join(extra)})")
    if isinstance(v, BadCapsule):
        return f"BadCapsule({v.what})"
    if type(v).__module__.startswith("torch"):
        return (f"{type(v).__name__}({list(v.shape)}, {v.dtype}, {v.device}, "
                f"strides={v.stride()})")
    if isinstance(v, BadDevice):
        return f"BadDevice({v.dev!r})"
    return repr(v)


# ---- the worker --------------------------------------------------------------------------

OUTCOMES: Dict[str, int] = {}


def outcome_key(exc: Optional[BaseException], result: Any) -> str:
    if exc is None:
        return ("NotImplemented" if result is NotImplemented else "None" if result is None
                else "value")
    if isinstance(exc, RuntimeError) and "libcuda" in str(exc):
        return "reached-library"  # every check passed; the driver is missing
    return type(exc).__name__


def run_case(C: Any, seed: int, index: int, mode: str, verbose: bool) -> str:
    rng = random.Random(seed * 1_000_003 + index)
    use_torch_cls = mode == "fake" and rng.random() < 0.5
    case = Case(rng, FTensor if use_torch_cls else None)
    weights = [w for w, _ in GENERATORS]
    gen = rng.choices([g for _, g in GENERATORS], weights)[0]
    name, args = gen(case)
    torch_objs: List[Any] = []
    if mode == "torch":
        args, torch_objs = torchify(rng, name, args)
    nmut = rng.choice([0, 1, 1, 1, 2, 2, 3, 4])
    args = mutate_args(rng, name, args, nmut)
    STREAM_MODE["v"] = 0 if rng.random() < 0.9 else rng.choice([-1, 2**64, "x", "raise", 2**63])
    raw = rng.random() < 0.7 or name not in TENSOR_ENTRIES | {"select_config"}
    thunk = None if raw else public_call(name, args)
    if thunk is None:
        raw = True
        fn = getattr(C, name)
        thunk = lambda: fn(*args)  # noqa: E731
    torch_mode = name in ALWAYS_TORCH or (
        name in TENSOR_ENTRIES and len(args) > 0 and isinstance(args[-1], int) and
        not isinstance(args[-1], bool) and (args[-1] & TORCH_MODE) != 0)
    meta = any(getattr(t, "is_meta", False) for t in torch_objs if t is not None)
    desc = f"{'_C.' if raw else 'public '}{name}(" + ", ".join(describe(a) for a in args) + ")"
    if verbose:
        print(f"case {index}: {desc}", flush=True)
    result, exc = None, None
    base_exc = any(isinstance(x, BadCapsule) and x.what == "raise_base" for x in args)
    try:
        result = thunk()
    except KeyboardInterrupt:  # a producer's BaseException: must propagate as it is
        if not base_exc:
            raise
        check_capsules(args)
        return name
    except BaseException as e:  # noqa: BLE001 (checked below)
        exc = e
    OUTCOMES[outcome_key(exc, result)] = OUTCOMES.get(outcome_key(exc, result), 0) + 1
    try:
        check_outcome(name, args, raw, result, exc, torch_mode, meta)
        check_capsules(args)
    except Failure as f:
        raise Failure(f"seed {seed} case {index}: {f}\n  call: {desc}\n  outcome: "
                      f"{'raised ' + type(exc).__name__ + ': ' + str(exc) if exc else repr(result)}"
                      ) from None
    return name


def torchify(rng: random.Random, name: str, args: List[Any]) -> Tuple[List[Any], List[Any]]:
    """Replace some fake tensors by real torch tensors the fast path must decline."""
    import torch
    out, made = [], []
    tmap = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "uint8": torch.uint8,
            "int8": torch.int8, "int32": torch.int32, "int64": torch.int64,
            "float16": torch.float16, "float32": torch.float32, "bfloat16": torch.bfloat16,
            "e4m3_ieee": torch.uint8}
    for a in args:
        if isinstance(a, FakeTensor) and rng.random() < 0.5 and \
                all(0 <= s <= 4096 for s in a.shape) and len(a.shape) <= 4:
            dev = rng.choice(["cpu", "cpu", "meta"])
            shape = [int(s) for s in a.shape]
            t = torch.empty(shape, dtype=tmap[a.dtype_name], device=dev)
            r = rng.random()
            if r < 0.2 and t.dim() >= 2:
                t = t.transpose(-1, -2)
            elif r < 0.3:
                t = torch.nn.Parameter(t, requires_grad=False)
            elif r < 0.4 and t.dim() >= 1 and t.shape[-1] >= 2:
                t = t[..., 1:]
            made.append(t)
            out.append(t)
        else:
            out.append(a)
    return out, made


def worker(mode: str, seed: int, cases: int, seconds: float, only: Optional[int],
           keep_going: bool = False) -> int:
    os.environ.setdefault("QGEMM_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                          f"qgemm-pyfuzz-{os.getpid()}"))
    from qgemm import _C
    if mode == "fake":
        # hostile torch_init calls first (before any takes): errors, never a crash
        for bad in [(object(), fake_current_stream), (fake_torch_module(), 3),
                    (type("M", (), {"Tensor": 3, "nn": None})(), fake_current_stream)]:
            try:
                _C.torch_init(*bad)
            except (TypeError, AttributeError, ValueError):
                pass
        _C.torch_init(fake_torch_module(), fake_current_stream)
    else:
        import torch  # noqa: F401  (the package registers: _C.torch_init(torch, ...))
        import qgemm._dispatch as dispatch
        if dispatch.torch_ops() is None:
            print("torch registration failed: nothing to fuzz in this mode")
            return 0
    start = time.monotonic()
    counts: Dict[str, int] = {}
    done = 0
    indices = [only] if only is not None else range(cases)
    progress = os.environ.get("QGEMM_PYFUZZ_PROGRESS")
    fd = os.open(progress, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) if progress else -1
    failures: Dict[str, int] = {}
    for i in indices:
        if fd >= 0:  # the case a crash happened in (one syscall a case)
            os.pwrite(fd, b"%12d\n" % i, 0)
        try:
            name = run_case(_C, seed, i, mode, verbose=only is not None)
        except Failure as f:
            if not keep_going:
                raise
            key = re.sub(r"\d+", "N", str(f).split("\n")[0].split(": ", 1)[1])[:90]
            if key not in failures:
                print(f"PYFUZZ FAILURE: {f}", flush=True)
            failures[key] = failures.get(key, 0) + 1
            continue
        counts[name] = counts.get(name, 0) + 1
        done += 1
        if time.monotonic() - start > seconds:
            break
    elapsed = time.monotonic() - start
    print(f"PYFUZZ mode={mode} seed={seed} cases={done} seconds={elapsed:.1f} "
          f"entries={len(counts)} " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())),
          flush=True)
    print("  outcomes: " + " ".join(f"{k}={v}" for k, v in sorted(OUTCOMES.items())))
    for key, n in sorted(failures.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d} x {key}")
    return 1 if failures else 0


def main(argv: Sequence[str]) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["fake", "torch"], default="fake")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cases", type=int, default=10000)
    p.add_argument("--seconds", type=float, default=1e9)
    p.add_argument("--case", type=int, default=None, help="replay one case, printing it")
    p.add_argument("--keep-going", action="store_true",
                   help="report each distinct failure once and go on")
    ns = p.parse_args(argv)
    try:
        return worker(ns.mode, ns.seed, ns.cases, ns.seconds, ns.case, ns.keep_going)
    except Failure as f:
        print(f"PYFUZZ FAILURE: {f}", flush=True)
        return 1


# ---- the pytest side ---------------------------------------------------------------------

def fake_nvrtc_dir(tmp: Path) -> Optional[str]:
    """fuzz/fake_nvrtc.c built into tmp (every compile fails at once), or None."""
    import shutil
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        return None
    out = tmp / "fake-nvrtc"
    out.mkdir(exist_ok=True)
    r = subprocess.run([cc, "-shared", "-fPIC", "-O1", str(ROOT / "fuzz" / "fake_nvrtc.c"),
                        "-o", str(out / "libnvrtc.so.13")], capture_output=True, text=True)
    return str(out) if r.returncode == 0 else None


def run_worker(mode: str, tmp: Path, cases: int) -> str:
    seed = int(os.environ.get("QGEMM_PYFUZZ_SEED", "1"))
    seconds = float(os.environ.get("QGEMM_PYFUZZ_SECONDS", "60"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(HERE)] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["QGEMM_CACHE_DIR"] = str(tmp / "cache")
    nvrtc = fake_nvrtc_dir(tmp)
    if nvrtc:
        env["QGEMM_NVRTC_DIR"] = nvrtc
    else:  # no fake NVRTC: compile() must not see valid requests (seconds each)
        env["QGEMM_NVRTC_DIR"] = str(tmp / "none")
        env["CUDA_HOME"] = str(tmp / "none")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--mode", mode, "--seed", str(seed),
           "--cases", str(cases), "--seconds", str(seconds)]
    progress = tmp / f"progress-{mode}"
    env["QGEMM_PYFUZZ_PROGRESS"] = str(progress)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=seconds + 600)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        replay = ""
        if "PYFUZZ FAILURE" not in out and progress.exists():
            idx = progress.read_text().strip()  # a crash: the case it happened in
            rr = subprocess.run(cmd[:2] + ["--mode", mode, "--seed", str(seed), "--case", idx],
                                capture_output=True, text=True, env=env, timeout=300)
            replay = (f"\ncrashed in case {idx}; its replay (status {rr.returncode}): "
                      f"{' '.join(cmd[:2])} --mode {mode} --seed {seed} --case {idx}\n"
                      + (rr.stdout + rr.stderr)[-4000:])
        raise AssertionError(f"fuzz worker failed (status {r.returncode}):\n{out[-6000:]}"
                             f"{replay}")
    return out


def _cases(default: int) -> int:
    return int(os.environ.get("QGEMM_PYFUZZ_CASES", str(default)))


def test_fuzz_extension_fake_tensors(no_gpu, tmp_path):
    """Raw _C calls and public functions on fake DLPack tensors and a fake torch module."""
    out = run_worker("fake", tmp_path, _cases(10000))
    summary = re.search(r"PYFUZZ mode=fake .* entries=(\d+)", out)
    assert summary, out[-3000:]
    print(summary.group(0))
    # every tensor entry and most others were reached (so the test cannot pass vacuously)
    assert int(summary.group(1)) >= 20 or _cases(10000) < 1000, summary.group(0)


def test_fuzz_extension_real_torch(no_gpu, tmp_path):
    """Real torch tensors (CPU, meta, views) the torch mode must decline, mixed with fakes."""
    import pytest
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("torch is not installed")
    out = run_worker("torch", tmp_path, max(_cases(10000) // 5, 1))
    summary = re.search(r"PYFUZZ mode=torch .*", out)
    assert summary, out[-3000:]
    print(summary.group(0))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
