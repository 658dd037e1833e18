"""A DLPack producer built with ctypes, for testing qgemm's DLPack consumer on a CPU.

No framework on a machine without a GPU can export a float8_e4m3fn tensor that
claims to live on a CUDA device, yet that is what every validation path of
qgemm needs to see. FakeTensor describes any tensor (dtype, shape, strides,
device, address) through a real DLPack capsule, counts how the consumer
treats it (exports, deleter calls, the keyword arguments it passed) and
never has memory behind its address: tests that use it must not let a call
reach a GPU (see ``conftest.no_gpu``).
"""
from __future__ import annotations

import ctypes
import itertools
from typing import Any, Dict, List, Optional, Sequence, Tuple

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13

# name -> (DLPack type code, bits) per the DLPack 1.1 specification
DTYPES: Dict[str, Tuple[int, int]] = {
    "e4m3": (10, 8),  # kDLFloat8_e4m3fn
    "e4m3_ieee": (8, 8),  # kDLFloat8_e4m3 (has infinities): not what the tensor cores read
    "e5m2": (12, 8),
    "uint8": (1, 8),
    "int8": (0, 8),
    "int32": (0, 32),
    "int64": (0, 64),
    "float16": (2, 16),
    "float32": (2, 32),
    "bfloat16": (4, 16),
}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]

# capsule names must outlive the capsules: module constants do
_NAME_VERSIONED = b"dltensor_versioned"
_NAME_LEGACY = b"dltensor"

# distinct, 256-byte aligned fake device addresses (never dereferenced)
_addresses = itertools.count(0x7F0000000000, 1 << 24)

READ_ONLY = 1


class FakeTensor:
    """A tensor description exported through DLPack; see the module docstring.

    shape/strides in elements (strides None: contiguous row-major);
    device (type, id); ``legacy``: a pre-1.0 producer (no max_version keyword,
    unversioned capsule); ``version``: what a versioned capsule claims.
    """

    def __init__(self, shape: Sequence[int], dtype: str = "e4m3", *,
                 strides: Optional[Sequence[int]] = None, device: Tuple[int, int] = (KDL_CUDA, 0),
                 address: Optional[int] = None, byte_offset: int = 0, legacy: bool = False,
                 version: Tuple[int, int] = (1, 1), flags: int = 0, lanes: int = 1,
                 ndim: Optional[int] = None, null_shape: bool = False) -> None:
        self.shape = list(shape)
        if strides is None:
            strides, acc = [], 1
            for s in reversed(self.shape):
                strides.insert(0, acc)
                acc *= s
        self.strides = list(strides)
        self.code, self.bits = DTYPES[dtype]
        self.lanes = lanes
        self.device = device
        self.address = next(_addresses) if address is None else address
        self.byte_offset = byte_offset
        self.legacy = legacy
        self.version = version
        self.flags = flags
        # hostile producers (issue 27): ndim that disagrees with the shape
        # array, a NULL shape pointer
        self.ndim = ndim
        self.null_shape = null_shape
        # what the consumer did
        self.exports = 0
        self.deletes = 0
        self.calls: List[Dict[str, Any]] = []
        self.capsules: List[Any] = []
        self._keep: List[Any] = []  # ctypes objects that must outlive the capsules

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, **kw: Any) -> Any:
        if self.legacy and max_version is not None:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.calls.append({"stream": stream, "max_version": max_version, **kw})
        versioned = max_version is not None and max_version[0] >= 1 and not self.legacy

        n = len(self.shape)
        shape = (ctypes.c_int64 * n)(*self.shape)
        strides = (ctypes.c_int64 * n)(*self.strides)
        deleter = _DELETER(self._on_delete)
        managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        t = managed.dl_tensor
        t.data = self.address
        t.device = DLDevice(*self.device)
        t.ndim = n if self.ndim is None else self.ndim
        t.dtype = DLDataType(self.code, self.bits, self.lanes)
        if not self.null_shape:
            t.shape = shape
        t.strides = strides
        t.byte_offset = self.byte_offset
        managed.deleter = ctypes.cast(deleter, ctypes.c_void_p).value
        if versioned:
            managed.version = DLPackVersion(*self.version)
            managed.flags = self.flags
        self._keep += [shape, strides, deleter, managed]
        self.exports += 1
        capsule = _capsule_new(ctypes.addressof(managed),
                               _NAME_VERSIONED if versioned else _NAME_LEGACY, None)
        self.capsules.append(capsule)
        return capsule

    def _on_delete(self, _ptr: int) -> None:
        self.deletes += 1

    def capsule_names(self) -> List[str]:
        return [_capsule_name(c).decode() for c in self.capsules]

    def consumed_correctly(self) -> bool:
        """Every capsule exported was renamed "used_..." and deleted exactly once."""
        return (self.deletes == self.exports and
                all(name.startswith("used_") for name in self.capsule_names()))


def dense_operands(m: int, n: int, k: int, **overrides: Any) -> Dict[str, FakeTensor]:
    """Well-formed fake operands of fp8_gemm_nt; ``overrides`` replace some by name."""
    kb, nb = -(-k // 128), -(-n // 128)
    ld = -(-m // 4) * 4
    ops = {
        "a": FakeTensor([m, k], "e4m3"),
        "sfa": FakeTensor([m, kb], "float32", strides=[1, ld]),
        "b": FakeTensor([n, k], "e4m3"),
        "sfb": FakeTensor([nb, kb], "float32"),
        "d": FakeTensor([m, n], "bfloat16"),
    }
    ops.update(overrides)
    return ops


def contiguous_operands(m: int, n: int, k: int, g: int, **overrides: Any) -> Dict[str, FakeTensor]:
    kb, nb = -(-k // 128), -(-n // 128)
    ld = -(-m // 4) * 4
    ops = {
        "a": FakeTensor([m, k], "e4m3"),
        "sfa": FakeTensor([m, kb], "float32", strides=[1, ld]),
        "b": FakeTensor([g, n, k], "e4m3"),
        "sfb": FakeTensor([g, nb, kb], "float32"),
        "d": FakeTensor([m, n], "bfloat16"),
        "idx": FakeTensor([m], "int32"),
    }
    ops.update(overrides)
    return ops


def masked_operands(g: int, m: int, n: int, k: int, **overrides: Any) -> Dict[str, FakeTensor]:
    kb, nb = -(-k // 128), -(-n // 128)
    ld = -(-m // 4) * 4
    ops = {
        "a": FakeTensor([g, m, k], "e4m3"),
        "sfa": FakeTensor([g, m, kb], "float32", strides=[kb * ld, 1, ld]),
        "b": FakeTensor([g, n, k], "e4m3"),
        "sfb": FakeTensor([g, nb, kb], "float32"),
        "d": FakeTensor([g, m, n], "bfloat16"),
        "idx": FakeTensor([g], "int32"),
    }
    ops.update(overrides)
    return ops
