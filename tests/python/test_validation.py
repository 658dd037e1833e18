"""Every argument check of qgemm's Python layer, on the CPU.

Fake DLPack tensors (fake_dlpack.FakeTensor) claim to be CUDA tensors of any
dtype and layout, so each check is reached exactly; numpy arrays cover real
producers on the CPU. Every test also checks that each DLPack capsule the
call took was consumed correctly (renamed "used_..." and deleted once),
whichever way the call ended.
"""
from __future__ import annotations

import re
from typing import Any, Dict

import numpy as np
import pytest

import qgemm
from fake_dlpack import (
    KDL_CUDA,
    KDL_CUDA_HOST,
    READ_ONLY,
    FakeTensor,
    contiguous_operands,
    dense_operands,
    masked_operands,
)

# a message from the library's driver/device layer
NO_GPU_MESSAGE = re.compile(r"libcuda|driver|device", re.IGNORECASE)


def run(kind: str, ops: Dict[str, Any], **kw: Any) -> None:
    a, b = (ops["a"], ops["sfa"]), (ops["b"], ops["sfb"])
    expected_m = kw.pop("expected_m", 0)
    if kind == "dense":
        qgemm.fp8_gemm_nt(a, b, ops["d"], **kw)
    elif kind == "contiguous":
        qgemm.m_grouped_fp8_gemm_nt_contiguous(a, b, ops["d"], ops["idx"], **kw)
    else:
        qgemm.m_grouped_fp8_gemm_nt_masked(a, b, ops["d"], ops["idx"], expected_m, **kw)


def expect_error(exc: type, pattern: str, kind: str, ops: Dict[str, Any], **kw: Any) -> str:
    with pytest.raises(exc, match=pattern) as info:
        run(kind, ops, **kw)
    for name, t in ops.items():
        if isinstance(t, FakeTensor):
            assert t.consumed_correctly(), f"{name}: capsules {t.capsule_names()}, " \
                f"{t.exports} exported, {t.deletes} deleted"
    return str(info.value)


OPERANDS = {
    "dense": lambda **o: dense_operands(256, 512, 384, **o),
    "contiguous": lambda **o: contiguous_operands(256, 512, 384, 3, **o),
    "masked": lambda **o: masked_operands(3, 64, 512, 384, **o),
}


# ---- well-formed calls reach the device layer -------------------------------------


@pytest.mark.parametrize("kind", ["dense", "contiguous", "masked"])
def test_well_formed_call_reports_missing_gpu(kind, no_gpu):
    ops = OPERANDS[kind]()
    message = expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, kind, ops, expected_m=32)
    assert message == no_gpu  # the library's own message, unchanged
    for t in ops.values():
        assert t.exports == 1
        assert t.calls[0]["max_version"] == (1, 1)
        assert t.calls[0]["stream"] == 1  # no framework stream: the legacy default stream


@pytest.mark.parametrize("m,k,n", [(1, 128, 8), (1, 7168, 2112), (5, 16, 8), (3, 4096, 256)])
def test_size_one_dimensions_need_no_particular_stride(m, k, n, no_gpu):
    # PyTorch exports stride 1 for every dimension of size 1; such strides carry
    # no meaning and must not be rejected
    kb, nb = -(-k // 128), -(-n // 128)
    ld = -(-m // 4) * 4
    ops = dense_operands(m, n, k)
    if m == 1:
        ops["a"] = FakeTensor([1, k], strides=[1, 1])
        ops["d"] = FakeTensor([1, n], "bfloat16", strides=[1, 1])
    ops["sfa"] = FakeTensor([m, kb], "float32", strides=[1, 1 if kb == 1 else ld])
    ops["sfb"] = FakeTensor([nb, kb], "float32", strides=[1 if nb == 1 else kb, 1])
    expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, "dense", ops)


def test_padded_output_rows_are_accepted(no_gpu):
    ops = dense_operands(64, 256, 256, d=FakeTensor([64, 256], "bfloat16", strides=[264, 1]))
    expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, "dense", ops)


def test_padding_rows_beyond_m_in_sfa_are_accepted(no_gpu):
    # M = 6: the M stride is padded to 8 floats (32 bytes)
    ops = dense_operands(6, 256, 512, sfa=FakeTensor([6, 4], "float32", strides=[1, 8]))
    expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, "dense", ops)


# ---- dtypes -----------------------------------------------------------------------


@pytest.mark.parametrize("name,dtype,want,got", [
    ("a", "uint8", "float8_e4m3fn", "uint8"),
    ("a", "e5m2", "float8_e4m3fn", "float8_e5m2"),
    ("a", "e4m3_ieee", "float8_e4m3fn", "float8_e4m3"),
    ("a", "int8", "float8_e4m3fn", "int8"),
    ("sfa", "bfloat16", "float32", "bfloat16"),
    ("b", "uint8", "float8_e4m3fn", "uint8"),
    ("sfb", "float16", "float32", "float16"),
    ("d", "float32", "bfloat16", "float32"),
])
def test_wrong_dtype(name, dtype, want, got):
    ops = dense_operands(256, 512, 384)
    shape, strides = ops[name].shape, ops[name].strides
    ops[name] = FakeTensor(shape, dtype, strides=strides)
    message = expect_error(ValueError, f"{name} must have dtype {want}, got {got}$", "dense", ops)
    assert message.startswith("qgemm: ")


def test_vector_dtype_is_named_with_its_lanes():
    ops = dense_operands(256, 512, 384, sfb=FakeTensor([4, 3], "float32", lanes=2))
    expect_error(ValueError, r"sfb must have dtype float32, got float32x2", "dense", ops)


@pytest.mark.parametrize("kind,dtype,got", [("contiguous", "int64", "int64"),
                                            ("masked", "float32", "float32")])
def test_wrong_index_dtype(kind, dtype, got):
    ops = OPERANDS[kind]()
    ops["idx"] = FakeTensor(ops["idx"].shape, dtype)
    name = "m_indices" if kind == "contiguous" else "masked_m"
    expect_error(ValueError, f"{name} must have dtype int32, got {got}", kind, ops)


def test_numpy_uint8_is_not_e4m3():
    a = np.ones((256, 384), np.uint8)
    ops = dense_operands(256, 512, 384, a=a)
    expect_error(ValueError, "a must have dtype float8_e4m3fn, got uint8", "dense", ops)


def test_numpy_float32_output_is_not_bfloat16():
    d = np.ones((256, 512), np.float32)
    ops = dense_operands(256, 512, 384, d=d)
    expect_error(ValueError, "d must have dtype bfloat16, got float32", "dense", ops)


def test_ml_dtypes_e4m3_numpy_array_is_rejected_with_a_reason():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.ones((256, 384), dtype=ml_dtypes.float8_e4m3fn)
    ops = dense_operands(256, 512, 384, a=a)
    # numpy cannot export this dtype through DLPack today; should it learn to,
    # the array is still host memory
    message = expect_error(ValueError, r"qgemm: a ", "dense", ops)
    assert "DLPack" in message or "CPU" in message


# ---- ranks and sizes ---------------------------------------------------------------


def test_wrong_rank():
    ops = dense_operands(256, 512, 384, a=FakeTensor([2, 256, 384]))
    expect_error(ValueError, re.escape("a must be 2-D [M, K], got 3-D") + "$",
                 "dense", ops)


def test_grouped_b_must_be_3d():
    ops = contiguous_operands(256, 512, 384, 3, b=FakeTensor([512, 384]))
    expect_error(ValueError, re.escape("b must be 3-D [G, N, K], got 2-D") + "$",
                 "contiguous", ops)


@pytest.mark.parametrize("kind,name,shape,strides,dim,want", [
    ("dense", "b", [512, 256], None, 1, 384),  # K differs from a's
    ("dense", "sfa", [128, 3], [1, 128], 0, 256),  # M differs
    ("dense", "sfa", [256, 2], [1, 256], 1, 3),  # ceil(384 / 128) = 3 blocks
    ("dense", "sfb", [3, 3], None, 0, 4),  # ceil(512 / 128) = 4 blocks
    ("dense", "d", [128, 512], None, 0, 256),
    ("dense", "d", [256, 256], None, 1, 512),
    ("contiguous", "sfb", [2, 4, 3], None, 0, 3),  # G from b
    ("contiguous", "idx", [255], None, 0, 256),  # one index per row
    ("masked", "a", [2, 64, 384], None, 0, 3),
    ("masked", "d", [3, 64, 256], None, 2, 512),
    ("masked", "idx", [4], None, 0, 3),  # one count per group
])
def test_shape_mismatch(kind, name, shape, strides, dim, want):
    ops = OPERANDS[kind]()
    dtype = {"a": "e4m3", "b": "e4m3", "sfa": "float32", "sfb": "float32",
             "d": "bfloat16", "idx": "int32"}[name]
    ops[name] = FakeTensor(shape, dtype, strides=strides)
    label = {"idx": "m_indices" if kind == "contiguous" else "masked_m"}.get(name, name)
    message = expect_error(ValueError, f"{label} has shape", kind, ops)
    assert f"dimension {dim} must be {want}" in message
    assert f"got {shape[dim]}" in message


def test_k_must_be_a_multiple_of_16():
    ops = dense_operands(64, 256, 200)
    expect_error(ValueError, "K .* multiple of 16, got 200", "dense", ops)


def test_n_must_be_a_multiple_of_8():
    ops = dense_operands(64, 260, 256)
    expect_error(ValueError, "N .* multiple of 8, got 260", "dense", ops)


def test_negative_expected_m():
    ops = masked_operands(3, 64, 512, 384)
    expect_error(ValueError, "expected_m must be >= 0, got -1", "masked", ops, expected_m=-1)


# ---- strides ----------------------------------------------------------------------------


def test_transposed_a_is_rejected():
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], strides=[1, 256]))
    expect_error(ValueError, r"a must be row-major .* got strides \(1, 256\)", "dense", ops)


def test_row_stride_must_be_16_bytes():
    # a [256, 384] view of [256, 392]: 392 bytes per row is not a multiple of 16
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], strides=[392, 1]))
    expect_error(ValueError, "a's row stride must be a multiple of 16 bytes .* 392 elements",
                 "dense", ops)


def test_output_row_stride_must_be_16_bytes():
    # 516 bfloat16 = 1032 bytes per row
    ops = dense_operands(256, 512, 384, d=FakeTensor([256, 512], "bfloat16", strides=[516, 1]))
    expect_error(ValueError, "d's row stride must be a multiple of 16 bytes .* 1032 bytes",
                 "dense", ops)


def test_overlapping_rows_are_rejected():
    ops = dense_operands(256, 512, 384, b=FakeTensor([512, 384], strides=[128, 1]))
    expect_error(ValueError, "b's row stride must be at least its row length 384, got 128",
                 "dense", ops)


def test_k_major_sfa_points_to_the_helper():
    # DeepGEMM's per-token scales as they come: [M, K/128] row-major
    ops = dense_operands(256, 512, 384, sfa=FakeTensor([256, 3], "float32"))
    message = expect_error(ValueError, "sfa must be M-major", "dense", ops)
    assert "get_col_major_tma_aligned_tensor" in message


def test_sfa_stride_must_be_a_multiple_of_4():
    # M-major but not TMA aligned: M = 6 floats = 24 bytes between K blocks
    ops = dense_operands(6, 512, 384, sfa=FakeTensor([6, 3], "float32", strides=[1, 6]))
    message = expect_error(ValueError, r"sfa's M stride \(sfa_ld\) .* got 6", "dense", ops)
    assert "get_col_major_tma_aligned_tensor" in message


def test_non_contiguous_sfb():
    ops = dense_operands(256, 512, 384, sfb=FakeTensor([4, 3], "float32", strides=[1, 4]))
    expect_error(ValueError, r"sfb must be contiguous .* strides \(1, 4\)", "dense", ops)


def test_grouped_b_must_be_packed():
    g, n, k = 3, 512, 384
    ops = contiguous_operands(256, n, k, g, b=FakeTensor([g, n, k], strides=[n * k + 16, k, 1]))
    expect_error(ValueError, "b's groups must be packed", "contiguous", ops)


def test_masked_sfa_groups_must_be_packed():
    ops = masked_operands(3, 64, 512, 384,
                          sfa=FakeTensor([3, 64, 3], "float32", strides=[64 * 3 + 4, 1, 64]))
    expect_error(ValueError, "sfa's groups must be packed", "masked", ops)


def test_strided_index_vector():
    ops = contiguous_operands(256, 512, 384, 3, idx=FakeTensor([256], "int32", strides=[2]))
    expect_error(ValueError, r"m_indices must be contiguous", "contiguous", ops)


# ---- alignment --------------------------------------------------------------------------


@pytest.mark.parametrize("name,dtype,shape,strides,offset", [
    ("a", "e4m3", [256, 384], [384, 1], 1),  # a view starting one element in
    ("sfa", "float32", [256, 3], [1, 256], 4),
    ("b", "e4m3", [512, 384], [384, 1], 8),
    ("d", "bfloat16", [256, 512], [512, 1], 2),
])
@pytest.mark.parametrize("how", ["byte_offset", "address"])
def test_misaligned_view(name, dtype, shape, strides, offset, how):
    kw = {"byte_offset": offset} if how == "byte_offset" else {"address": 0x7E0000000000 + offset}
    ops = dense_operands(256, 512, 384, **{name: FakeTensor(shape, dtype, strides=strides, **kw)})
    expect_error(ValueError, f"{name}'s data must be 16-byte aligned .*{offset} bytes past",
                 "dense", ops)


def test_misaligned_numpy_view():
    # numpy arrays are on the CPU, but the layout is checked first
    base = np.zeros((3 * 256 + 1,), np.float32)
    assert base.ctypes.data % 16 == 0
    sfa = np.lib.stride_tricks.as_strided(base[1:], shape=(256, 3), strides=(4, 1024))
    ops = dense_operands(256, 512, 384, sfa=sfa)
    expect_error(ValueError, "sfa's data must be 16-byte aligned", "dense", ops)


# ---- devices --------------------------------------------------------------------------


def test_numpy_array_is_host_memory():
    # a correctly laid out M-major scale tensor, but in host memory
    sfa = np.zeros((3, 256), np.float32).T
    assert sfa.ctypes.data % 16 == 0
    ops = dense_operands(256, 512, 384, sfa=sfa)
    expect_error(ValueError, "sfa must be in CUDA device memory, got a tensor on CPU", "dense", ops)


def test_pinned_host_memory_is_rejected():
    ops = dense_operands(256, 512, 384,
                         b=FakeTensor([512, 384], device=(KDL_CUDA_HOST, 0)))
    expect_error(ValueError, "b must be in CUDA device memory, got a tensor on CUDA pinned host",
                 "dense", ops)
    assert ops["b"].calls[0]["stream"] is None  # streams are for device memory only


@pytest.mark.parametrize("device,named", [((7, 0), "DLPack device type 7"),  # Vulkan
                                          ((10, 0), "a tensor on ROCm"),
                                          ((13, 0), "a tensor on CUDA managed memory")])
def test_other_devices_are_rejected(device, named):
    ops = dense_operands(256, 512, 384, sfb=FakeTensor([4, 3], "float32", device=device))
    expect_error(ValueError, f"sfb must be in CUDA device memory, got {named}", "dense", ops)


def test_negative_device_id_is_rejected():
    # -1 must not read as "no device yet" (the next tensor's device would then win)
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], device=(KDL_CUDA, -1)))
    expect_error(ValueError, "a has DLPack device_id -1: not a CUDA device ordinal", "dense", ops)


def test_tensors_on_two_devices():
    ops = dense_operands(256, 512, 384, d=FakeTensor([256, 512], "bfloat16", device=(KDL_CUDA, 1)))
    expect_error(ValueError, "all tensors must be on one device: d is on cuda:1", "dense", ops)


def _torch_on(torch: Any, shape: Any, dtype: Any, index: int) -> Any:
    """A torch tensor (of CPU memory) that claims to be on cuda:index, as the
    package's device check sees it; never exported (the call is refused first)."""

    class OnDevice(torch.Tensor):
        @property
        def is_cuda(self) -> bool:
            return True

        @property
        def device(self) -> Any:
            return torch.device("cuda", index)

        def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("exported a tensor of a call that must be refused first")

    return torch.Tensor._make_subclass(OnDevice, torch.zeros(shape, dtype=dtype))


@pytest.mark.parametrize("slot,named", [("a", "sfa is on cuda:0, the arguments before it are "
                                                "on cuda:1"),
                                        ("b", "b is on cuda:1, the arguments before it are on "
                                              "cuda:0"),
                                        ("idx", "masked_m is on cuda:1")])
def test_torch_tensors_on_two_devices_through_dlpack(slot, named):
    """stream= takes the DLPack path, where torch refuses to export a tensor
    off the current device (naming neither argument); the package refuses
    torch tensors on two devices first, with the extension's message.
    (tests/python/test_multi_gpu.py runs both paths on two GPUs.)"""
    torch = pytest.importorskip("torch")
    shapes = {"a": ([3, 64, 384], torch.uint8), "sfa": ([3, 64, 3], torch.float32),
              "b": ([3, 512, 384], torch.uint8), "sfb": ([3, 4, 3], torch.float32),
              "d": ([3, 64, 512], torch.bfloat16), "idx": ([3], torch.int32)}
    ops = {name: _torch_on(torch, *shapes[name], 1 if name == slot else 0) for name in shapes}
    expect_error(ValueError, f"all tensors must be on one device: {named}", "masked", ops,
                 expected_m=32, stream=0)


def test_torch_stream_of_another_device():
    torch = pytest.importorskip("torch")

    class StreamOfDevice0:  # what the package reads of a torch.cuda.Stream
        device = torch.device("cuda", 0)
        cuda_stream = 1234

    ops = {name: _torch_on(torch, shape, torch.float32, 1) for name, shape in
           (("a", [256, 384]), ("sfa", [256, 3]), ("b", [512, 384]), ("sfb", [4, 3]),
            ("d", [256, 512]))}
    expect_error(ValueError, "stream is a stream of cuda:0, the tensors are on cuda:1", "dense",
                 ops, stream=StreamOfDevice0())


def test_read_only_output():
    ops = dense_operands(256, 512, 384, d=FakeTensor([256, 512], "bfloat16", flags=READ_ONLY))
    expect_error(ValueError, "d is read-only", "dense", ops)


def test_read_only_inputs_are_fine(no_gpu):
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], flags=READ_ONLY))
    expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, "dense", ops)


# ---- the DLPack protocol ---------------------------------------------------------------


def test_pre_1_0_producer_gets_the_unversioned_call(no_gpu):
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], legacy=True))
    expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, "dense", ops)
    assert ops["a"].calls == [{"stream": 1, "max_version": None}]
    assert ops["a"].capsule_names() == ["used_dltensor"]
    assert ops["b"].capsule_names() == ["used_dltensor_versioned"]


def test_unknown_major_version_is_deleted_unread():
    ops = dense_operands(256, 512, 384, b=FakeTensor([512, 384], version=(2, 0)))
    expect_error(ValueError, r"b is a DLPack 2\.0 tensor; qgemm reads DLPack 1\.x", "dense", ops)


def test_newer_minor_version_is_read(no_gpu):
    ops = dense_operands(256, 512, 384, b=FakeTensor([512, 384], version=(1, 7)))
    expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, "dense", ops)


def test_not_a_tensor():
    ops = dense_operands(256, 512, 384, sfb=[[1.0] * 3] * 4)
    expect_error(TypeError, "sfb must be a DLPack tensor .* got list", "dense", ops)


class _Refuses:
    def __dlpack_device__(self):
        return (KDL_CUDA, 0)

    def __dlpack__(self, **kw):
        raise BufferError("cannot export this dtype")


class _NotACapsule(_Refuses):
    def __dlpack__(self, **kw):
        return 42


def test_producer_export_failure_is_chained():
    ops = dense_operands(256, 512, 384, b=_Refuses())
    with pytest.raises(ValueError, match="b could not be exported through DLPack") as info:
        run("dense", ops)
    assert isinstance(info.value.__cause__, BufferError)
    assert ops["a"].consumed_correctly() and ops["sfa"].consumed_correctly()


def test_producer_returning_garbage():
    ops = dense_operands(256, 512, 384, d=_NotACapsule())
    expect_error(TypeError, r"d.__dlpack__\(\) returned int", "dense", ops)


@pytest.mark.parametrize("stream,handle", [(0, 1), (1, 1), (2, 2), (0x5000, 0x5000)])
def test_stream_handle_is_offered_to_producers(stream, handle, no_gpu):
    ops = dense_operands(256, 512, 384)
    expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, "dense", ops, stream=stream)
    assert all(t.calls[0]["stream"] == handle for t in ops.values())


class _TorchLikeStream:
    cuda_stream = 0x1234


class _CupyLikeStream:
    ptr = 0x4321


@pytest.mark.parametrize("stream,handle", [(_TorchLikeStream(), 0x1234), (_CupyLikeStream(), 0x4321)])
def test_stream_objects(stream, handle, no_gpu):
    ops = dense_operands(256, 512, 384)
    expect_error(RuntimeError, NO_GPU_MESSAGE.pattern, "dense", ops, stream=stream)
    assert ops["d"].calls[0]["stream"] == handle


@pytest.mark.parametrize("stream,exc", [(-1, ValueError), ("default", TypeError), (True, TypeError)])
def test_bad_stream(stream, exc):
    ops = dense_operands(256, 512, 384)
    with pytest.raises(exc, match="stream"):
        run("dense", ops, stream=stream)
    assert all(t.exports == 0 for t in ops.values())  # nothing was borrowed


# ---- Python-level arguments ---------------------------------------------------------


def test_operand_must_be_a_pair():
    ops = dense_operands(256, 512, 384)
    with pytest.raises(TypeError, match=r"a must be a pair \(a, sfa\)"):
        qgemm.fp8_gemm_nt(ops["a"], (ops["b"], ops["sfb"]), ops["d"])


@pytest.mark.parametrize("config,exc,pattern", [
    ({"block_m": 128, "bogus": 1}, ValueError, r"unknown config keys \['bogus'\]"),
    ({"block_m": 128, "multicast": "c"}, ValueError, "multicast must be"),
    ([128, 128], TypeError, "config must be a dict"),
    ({"block_m": "128"}, TypeError, "block_m must be an int"),
])
def test_bad_config(config, exc, pattern):
    ops = dense_operands(256, 512, 384)
    with pytest.raises(exc, match=pattern):
        run("dense", ops, config=config)


def test_expected_m_must_be_an_int():
    ops = masked_operands(3, 64, 512, 384)
    with pytest.raises(TypeError, match="expected_m must be an int"):
        run("masked", ops, expected_m=32.0)


# ---- _C.gemm's per-tensor options (set by the package for PyTorch tensors) ----------


def _raw_dense(ops, e4m3_bytes, stream=0, no_sync=0):
    qgemm._C.gemm(qgemm._C.KIND_DENSE, ops["a"], ops["sfa"], ops["b"], ops["sfb"], ops["d"],
                  None, 0, stream, None, e4m3_bytes, no_sync)


def test_producers_already_on_the_stream_are_told_not_to_sync(no_gpu):
    # what the package does for PyTorch tensors on PyTorch's current stream
    ops = dense_operands(256, 512, 384)
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE):
        _raw_dense(ops, 0, stream=0x777, no_sync=(1 << 0) | (1 << 4))
    got = {name: t.calls[0]["stream"] for name, t in ops.items()}
    assert got == {"a": -1, "sfa": 0x777, "b": 0x777, "sfb": 0x777, "d": -1}


def test_bytes_vouched_for_as_e4m3_are_read_as_e4m3(no_gpu):
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], "uint8"),
                         b=FakeTensor([512, 384], "int8"))
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE):
        _raw_dense(ops, (1 << 0) | (1 << 2))
    with pytest.raises(ValueError, match="b must have dtype float8_e4m3fn, got int8"):
        _raw_dense(ops, 1 << 0)  # only a vouched for


def test_vouching_does_not_relabel_wider_types():
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], "float16"))
    with pytest.raises(ValueError, match="a must have dtype float8_e4m3fn, got float16"):
        _raw_dense(ops, 1 << 0)
