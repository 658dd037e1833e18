"""Hostile input to the Python package (issue 27): DLPack producers that lie,
device arguments of the wrong kind, out-of-range settings. Each test failed
(or crashed the interpreter) before its fix. CPU only."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

import qgemm
from fake_dlpack import FakeTensor, dense_operands


def _gemm(ops):
    qgemm.fp8_gemm_nt((ops["a"], ops["sfa"]), (ops["b"], ops["sfb"]), ops["d"])


def test_dlpack_null_shape_is_an_error_not_a_crash():
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], null_shape=True))
    with pytest.raises(ValueError, match=r"^qgemm: a has ndim 2 but shape == NULL") as info:
        _gemm(ops)
    assert ops["a"].consumed_correctly()
    assert "0x" not in str(info.value)


@pytest.mark.parametrize("ndim", [100000, 33, 2**31 - 1])
def test_dlpack_absurd_ndim_prints_no_heap(ndim):
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], ndim=ndim))
    with pytest.raises(ValueError) as info:
        _gemm(ops)
    message = str(info.value)
    assert message == f"qgemm: a has ndim {ndim}; qgemm reads tensors of at most 32 dimensions"
    assert ops["a"].consumed_correctly()


def test_device_string_is_parsed():
    assert qgemm._dispatch.device_ordinal("cuda:9") == 9
    assert qgemm._dispatch.device_ordinal(3) == 3
    for bad in ["cpu", "cuda:", "cuda:x", "cuda:-1", "9"]:
        with pytest.raises(ValueError, match="device"):
            qgemm._dispatch.device_ordinal(bad)


def test_get_num_sms_of_a_device_string_names_the_device():
    # it used to pick up str.index: "device must be an int, got builtin_function_or_method"
    with pytest.raises((RuntimeError, ValueError)) as info:
        qgemm.get_num_sms("cuda:9")
    assert "builtin" not in str(info.value)


@pytest.mark.parametrize("call", [qgemm.get_device_props, qgemm.get_num_sms])
def test_negative_device_is_refused(call):
    # -1 is the extension's offline slot: it used to return the offline H100
    with pytest.raises(ValueError, match=r"device must be >= 0, got -1"):
        call(-1)


def test_set_num_sms_beyond_any_device_in_a_fresh_process():
    code = "import qgemm\ntry:\n qgemm.set_num_sms(100000)\nexcept ValueError as e:\n print(e)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert re.search(r"num_sms = 100000 exceeds", out.stdout), out.stdout + out.stderr


@pytest.mark.parametrize("x,size", [(-1, 4), (-17, 1), (5, 0), (5, 3)])
def test_tma_aligned_size_refuses_negative_and_bad_sizes(x, size):
    with pytest.raises(ValueError):
        qgemm.get_tma_aligned_size(x, size)


def test_huge_dimensions_do_not_overflow_the_layout_checks():
    # K = 2^63 - 1 used to overflow ceil(K/128) (K + 127): the message asked for a
    # negative scale dimension
    k = 2**63 - 1
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, k], strides=[k, 1]),
                         b=FakeTensor([512, k], strides=[k, 1]))
    with pytest.raises(ValueError) as info:
        _gemm(ops)
    assert "must be 72057594037927936 (ceil(K/128)" in str(info.value), str(info.value)
    assert ops["a"].consumed_correctly()


@pytest.mark.parametrize("name,strides", [("a", [2**62, 1]), ("d", [2**62 + 8, 1]),
                                          ("sfa", [1, 2**62])])
def test_huge_strides_are_refused_by_the_layout_check(name, strides):
    shapes = {"a": ([256, 384], "e4m3"), "d": ([256, 512], "bfloat16"), "sfa": ([256, 3], "float32")}
    shape, dtype = shapes[name]
    ops = dense_operands(256, 512, 384, **{name: FakeTensor(shape, dtype, strides=strides)})
    with pytest.raises(ValueError, match=r"exceeds 2\^36"):
        _gemm(ops)
