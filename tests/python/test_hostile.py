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
    # negative scale dimension. (One row each: a [256, K] holds more than 2^63 elements, refused as it is
    # borrowed, test_shapes_past_int64_are_refused_at_import.)
    k = 2**63 - 1
    ops = dense_operands(1, 512, 384, a=FakeTensor([1, k], strides=[k, 1]),
                         b=FakeTensor([1, k], strides=[k, 1]))
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


# ---- found by test_fuzz_extension.py (each failed before its fix) -------------------------

@pytest.mark.parametrize("config", [1.5, [128, 128, 4, 0, 1, 1], "config"])
def test_config_that_is_not_a_tuple_is_a_type_error(config):
    # PyArg_ParseTuple on a non-tuple raised SystemError ("new style getargs format but
    # argument is not a tuple") from every entry that takes a config
    with pytest.raises(TypeError, match=r"^qgemm: config must be None or a tuple \(block_m, "
                                        r".*got (float|list|str)$"):
        qgemm._C.select_config(0, 256, 512, 384, 1, 0, qgemm._C.OFFLINE, config)


def test_config_tuple_of_the_wrong_length_names_qgemm():
    with pytest.raises(TypeError, match=r"^qgemm: config must be \(block_m"):
        qgemm._C.select_config(0, 256, 512, 384, 1, 0, qgemm._C.OFFLINE, (128, 128))


@pytest.mark.parametrize("out_shape,message", [
    ([-2**63, 16], r"qgemm: out has a negative dimension \(dimension 0 of 2\)"),
    ([2**62, 4], r"qgemm: out has more than 2\^63 elements \(at dimension 1 of 2\)"),
])
def test_shapes_past_int64_are_refused_at_import(out_shape, message):
    # sf_layout's element count of out wrapped to 0 (-2^63 x 16, 2^62 x 4): the call
    # answered None, an empty problem done, for a tensor of no sensible shape
    sf, out, ks = FakeTensor([1, 16], "float32"), FakeTensor(out_shape, "int32"), \
        FakeTensor([3], "int32")
    with pytest.raises(ValueError, match="^" + message + "$"):
        qgemm._C.sf_layout(qgemm._C.CAST_SF_PACK_UE8M0_K_GROUPED, sf, out, ks, 0, 128, 128, 0,
                           0, 0)
    assert out.consumed_correctly() and sf.consumed_correctly()


def test_psum_hint_past_int32_is_a_value_error():
    # the public psum GEMM let 2^32 through to the extension's int: OverflowError
    ops = dense_operands(256, 512, 384)
    with pytest.raises(ValueError, match=r"^qgemm: m_grouped_fp8_gemm_nt_contiguous: "
                                         r"expected_m_for_psum_layout must be an int in"):
        qgemm.m_grouped_fp8_gemm_nt_contiguous((ops["a"], ops["sfa"]), (ops["b"], ops["sfb"]),
                                               ops["d"], FakeTensor([1], "int32"),
                                               use_psum_layout=True,
                                               expected_m_for_psum_layout=2**32)


def test_k_grouped_ks_cpu_that_is_not_a_sequence():
    a, b = FakeTensor([128, 64], "bfloat16"), FakeTensor([128, 32], "bfloat16")
    d = FakeTensor([2, 64, 32], "float32")
    with pytest.raises(TypeError, match=r"^qgemm: ks_cpu must be a sequence of ints, got int$"):
        qgemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, 2)
    with pytest.raises(TypeError, match=r"^qgemm: k_grouped_fp8_gemm_nt_contiguous: ks_cpu must "
                                        r"be a sequence of ints, got int$"):
        qgemm.k_grouped_fp8_gemm_nt_contiguous((a, a), (b, b), d, 2, None)


def _raises(exc, pattern, fn, *args):
    with pytest.raises(exc, match=pattern):
        fn(*args)
    for x in args:
        if isinstance(x, FakeTensor):
            assert x.consumed_correctly()


def test_sizes_past_int32_are_not_cut():
    # bf16_gemm and sf_layout cast sizes to int unchecked: an a of 2^32 + 256 rows was
    # compared with d as 256 rows; ks [2^32 + 1] was read as one group, the call went on
    C = qgemm._C
    m = 2**32 + 256
    _raises(ValueError, r"^qgemm: M = 4294967552 \(a's dimension 0\) exceeds 2\^31 - 1$",
            C.bf16_gemm, 0, FakeTensor([m, 64], "bfloat16"), FakeTensor([32, 64], "bfloat16"),
            FakeTensor([m, 32], "bfloat16"), None, None, 0, None, 0, 0)
    _raises(ValueError, r"^qgemm: splits = 4294967297 \(d's dimension 0\) exceeds 2\^31 - 1$",
            C.bf16_gemm, C.KIND_BF16_BATCH_SUMS, FakeTensor([2, 64, 64], "bfloat16"),
            FakeTensor([2, 32, 64], "bfloat16"),
            FakeTensor([2**32 + 1, 64, 32], "float32"), None, None, 0, None,
            0, 0)
    _raises(ValueError, r"^qgemm: G = 4294967297 \(ks's dimension 0\) exceeds 2\^31 - 1$",
            C.sf_layout, C.CAST_SF_PACK_UE8M0_K_GROUPED, FakeTensor([16, 8], "float32"),
            FakeTensor([5, 8], "int32"), FakeTensor([2**32 + 1], "int32"), 0, 128, 128, 0, 0, 0)
    # gemm_torch read kind 2^32 as 0 (dense), 2^32 + 1 as contiguous
    _raises(ValueError, r"^qgemm: unknown GEMM kind 4294967296$", C.gemm_torch, 2**32,
            None, None, None, None, None, None, 0, None)


def test_hc_prenorm_splits_at_stride_0_are_refused(no_gpu):
    # d [2, m, n] at strides (0, n, 1) holds one plane: its stride was passed as 0, which
    # the library reads as m * n, so split 1 was written past d's memory
    m, n, k = 64, 32, 128
    _raises(ValueError, r"^qgemm: d's 2 splits must not alias one another: stride\(0\) = 0",
            qgemm._C.hc_prenorm, FakeTensor([m, k], "bfloat16"), FakeTensor([n, k], "float32"),
            FakeTensor([2, m, n], "float32", strides=[0, n, 1]), FakeTensor([2, m], "float32"),
            2, 0, 0)


def test_paged_kv_cache_blocks_at_stride_0_are_refused(no_gpu):
    # the same for the paged cache's block stride (0: packed, for the library): the blocks
    # of an expanded cache were read past its memory
    _raises(ValueError, r"^qgemm: kv_cache's blocks must not alias one another: stride\(0\) = 0 "
            r"with 2 blocks", qgemm._C.paged_mqa_logits, FakeTensor([1, 1, 32, 128]),
            FakeTensor([2, 64, 1, 132], "uint8", strides=[0, 132, 132, 1]),
            FakeTensor([1, 32], "float32"), FakeTensor([1, 1], "int32"),
            FakeTensor([1, 2], "int32"), FakeTensor([133, 2], "int32"),
            FakeTensor([1, 128], "float32"), 128, 0, 0, 0)


def test_select_config_kind_that_is_not_hashable():
    # `kind not in KINDS` on a list raised "unhashable type: 'list'"
    with pytest.raises(ValueError, match=r"^qgemm: kind must be one of .* got \[1\]$"):
        qgemm.select_config(256, 512, 384, kind=[1], offline=True)
