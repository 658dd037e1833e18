"""Hostile input, round three, and DeepGEMM's behaviour at the edges (issue 53,
the Python package's part). Each test failed before its fix. CPU only: fake
DLPack producers (fake_dlpack.py) and torch CPU tensors, with every call
stopped before it could reach a GPU."""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

import qgemm
from fake_dlpack import FakeTensor, contiguous_operands, dense_operands

IS_COPIED = 2  # DLPACK_FLAG_BITMASK_IS_COPIED
NO_GPU = re.compile(r"libcuda|driver|device", re.IGNORECASE)


def _gemm(ops, **kw):
    qgemm.fp8_gemm_nt((ops["a"], ops["sfa"]), (ops["b"], ops["sfb"]), ops["d"], **kw)


def _consumed(ops):
    for name, t in ops.items():
        if isinstance(t, FakeTensor):
            assert t.consumed_correctly(), name


# ---- item 3: d aliasing an input, a copied d ----------------------------------------------


@pytest.mark.parametrize("victim", ["a", "sfa", "b", "sfb"])
def test_d_overlapping_an_input_is_refused_naming_both(victim):
    ops = dense_operands(256, 512, 384)
    base = ops[victim].address
    # d starts 64 bytes before the input and spans 256 KiB: their byte ranges overlap
    ops["d"] = FakeTensor([256, 512], "bfloat16", address=base - 64)
    with pytest.raises(ValueError, match=rf"^qgemm: d overlaps {victim} in memory") as info:
        _gemm(ops)
    assert "pass a separate output tensor" in str(info.value)
    _consumed(ops)


def test_d_overlapping_the_grouped_index_is_refused():
    ops = contiguous_operands(256, 512, 384, 3)
    ops["d"] = FakeTensor([256, 512], "bfloat16", address=ops["idx"].address)
    with pytest.raises(ValueError, match=r"d overlaps m_indices"):
        qgemm.m_grouped_fp8_gemm_nt_contiguous((ops["a"], ops["sfa"]), (ops["b"], ops["sfb"]),
                                               ops["d"], ops["idx"])


def test_d_next_to_an_input_is_fine(no_gpu):
    ops = dense_operands(256, 512, 384)
    a = ops["a"]
    ops["d"] = FakeTensor([256, 512], "bfloat16", address=a.address + 256 * 384)  # just past a
    with pytest.raises(RuntimeError, match=NO_GPU.pattern):
        _gemm(ops)


def test_torch_d_aliasing_a_is_refused_through_the_torch_path():
    torch = pytest.importorskip("torch")
    buf = torch.zeros(256 * 512 * 2, dtype=torch.uint8)
    a = buf[: 256 * 384].view(torch.float8_e4m3fn).view(256, 384)
    d = buf.view(torch.bfloat16)[: 256 * 512].view(256, 512)
    sfa = qgemm.get_col_major_tma_aligned_tensor(torch.ones(256, 3))
    b = torch.zeros(512, 384, dtype=torch.float8_e4m3fn)
    # CPU tensors: refused for their memory first; the overlap check runs on what the
    # library would launch, so a DLPack view of CUDA memory is what it guards (above)
    with pytest.raises(ValueError, match="CUDA device memory|overlaps"):
        qgemm.fp8_gemm_nt((a, sfa), (b, torch.ones(4, 3)), d)


def test_copied_output_is_refused():
    ops = dense_operands(256, 512, 384, d=FakeTensor([256, 512], "bfloat16", flags=IS_COPIED))
    with pytest.raises(ValueError, match=r"^qgemm: d was exported as a copy .*IS_COPIED"):
        _gemm(ops)
    _consumed(ops)


def test_copied_inputs_are_fine(no_gpu):
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], flags=IS_COPIED))
    with pytest.raises(RuntimeError, match=NO_GPU.pattern):
        _gemm(ops)


# ---- item 5: DeepGEMM's contract at the edges ---------------------------------------------


@pytest.mark.parametrize("m,n", [(0, 512), (256, 0), (0, 0)])
def test_empty_m_or_n_returns_early(m, n):
    # empty tensors have NULL data: "args->a is NULL" used to be raised
    kb, nb = 3, -(-n // 128)
    ops = dense_operands(m, n, 384, a=FakeTensor([m, 384], address=0),
                         sfa=FakeTensor([m, kb], "float32", strides=[1, max(4, -(-m // 4) * 4)],
                                        address=0),
                         b=FakeTensor([n, 384], address=0 if n == 0 else None),
                         sfb=FakeTensor([nb, kb], "float32", address=0 if n == 0 else None),
                         d=FakeTensor([m, n], "bfloat16", address=0))
    _gemm(ops)  # no error, nothing launched
    _consumed(ops)


def test_empty_m_still_checks_the_arguments():
    ops = dense_operands(0, 512, 384, a=FakeTensor([0, 384], address=0),
                         d=FakeTensor([0, 512], "float32", address=0))
    with pytest.raises(ValueError, match="d must have dtype bfloat16"):
        _gemm(ops)


_CUDA_LOOKING = None


def _torch_d(torch, shape, dtype, fill):
    """A torch CPU tensor that exports itself through DLPack as CUDA memory (a fake
    producer's capsule): the call passes every check, and what the package then writes
    into d lands in this tensor's CPU storage."""

    global _CUDA_LOOKING
    if _CUDA_LOOKING is None:
        class CudaLooking(torch.Tensor):
            def __dlpack__(self, **kw):
                return self.fake.__dlpack__(**kw)

            def __dlpack_device__(self):
                return self.fake.__dlpack_device__()

        _CUDA_LOOKING = CudaLooking
    t = torch.Tensor._make_subclass(_CUDA_LOOKING, torch.full(shape, fill, dtype=dtype))
    t.fake = FakeTensor(list(shape), {torch.bfloat16: "bfloat16", torch.float32: "float32"}[dtype])
    return t


def _k0_ops(m, n, **kw):
    ops = dict(a=FakeTensor([m, 0]), b=FakeTensor([n, 0]),
               sfa=FakeTensor([m, 0], "float32", strides=[1, m]),
               sfb=FakeTensor([-(-n // 128), 0], "float32"))
    ops.update(kw)
    return dense_operands(m, n, 0, **ops)


def test_k_zero_zeroes_d_as_deepgemm():
    torch = pytest.importorskip("torch")
    d = _torch_d(torch, (256, 512), torch.bfloat16, 7.0)
    ops = _k0_ops(256, 512, d=d)
    _gemm(ops, stream=0)  # stream=: the DLPack path, which the fake producer answers
    assert bool((d == 0).all())
    _consumed(ops)


def test_k_zero_weight_gradient_copies_c_as_deepgemm():
    torch = pytest.importorskip("torch")
    d = _torch_d(torch, (256, 512), torch.float32, 7.0)
    c = _torch_d(torch, (256, 512), torch.float32, 3.0)
    ops = _k0_ops(256, 512, d=d, sfb=FakeTensor([512, 0], "float32", strides=[1, 512]))
    qgemm.fp8_gemm_nt((ops["a"], ops["sfa"]), (ops["b"], ops["sfb"]), d, c=c, recipe=(1, 1, 128),
                      stream=0)
    assert bool((d == 3).all())


def test_k_zero_takes_the_strides_torch_gives_empty_tensors():
    # torch reports strides (1, 1) for a [256, 0] tensor: meaningless, as DeepGEMM treats
    # them (the row-stride check used to refuse a)
    torch = pytest.importorskip("torch")
    d = _torch_d(torch, (256, 512), torch.bfloat16, 7.0)
    ops = _k0_ops(256, 512, d=d, a=FakeTensor([256, 0], strides=[1, 1]),
                  b=FakeTensor([512, 0], strides=[1, 1]),
                  sfa=FakeTensor([256, 0], "float32", strides=[1, 1]),
                  sfb=FakeTensor([4, 0], "float32", strides=[1, 1]))
    _gemm(ops, stream=0)
    assert bool((d == 0).all())


def test_k_zero_with_a_d_no_torch_can_write_names_d():
    ops = _k0_ops(256, 512)
    with pytest.raises(ValueError, match=r"K = 0: d .* must be a torch tensor"):
        _gemm(ops)


def test_keyboard_interrupt_in_dlpack_is_reraised_as_is():
    class Interrupting(FakeTensor):
        def __dlpack__(self, **kw):
            raise KeyboardInterrupt

    ops = dense_operands(256, 512, 384, b=Interrupting([512, 384]))
    with pytest.raises(KeyboardInterrupt):
        _gemm(ops)
    _consumed({k: v for k, v in ops.items() if k != "b"})


def test_an_ordinary_error_in_dlpack_is_still_a_value_error():
    class Failing(FakeTensor):
        def __dlpack__(self, **kw):
            raise RuntimeError("no export today")

    ops = dense_operands(256, 512, 384, b=Failing([512, 384]))
    with pytest.raises(ValueError, match="b could not be exported through DLPack"):
        _gemm(ops)


@pytest.mark.parametrize("stream,exc,pattern", [
    (1.5, TypeError, "stream must be an int"),
    (2.0, TypeError, "stream must be an int"),
    (2**64, ValueError, r"stream handle must be in 0\.\.2\*\*64-1, got 18446744073709551616"),
    (2**64 + 1, ValueError, "stream handle must be in"),
    (-1, ValueError, "stream handle must be in"),
])
def test_bad_stream_handles_are_refused(stream, exc, pattern):
    ops = dense_operands(256, 512, 384)
    with pytest.raises(exc, match=pattern):
        _gemm(ops, stream=stream)
    assert all(t.exports == 0 for t in ops.values())  # refused before any export


def test_largest_stream_handle_is_taken(no_gpu):
    ops = dense_operands(256, 512, 384)
    with pytest.raises(RuntimeError, match=NO_GPU.pattern):
        _gemm(ops, stream=2**64 - 1)


@pytest.mark.parametrize("call,name", [
    (lambda: qgemm.set_num_sms(2**63), "num_sms"),
    (lambda: qgemm.set_num_sms(2**31), "num_sms"),
    (lambda: qgemm.select_config(256, 512, 384, offline=True, config={"block_m": 2**31}),
     "block_m"),
    (lambda: qgemm.select_config(256, 512, 384, offline=True, config={"split_k": 2**63}),
     "split_k"),
    (lambda: qgemm.select_config(2**31, 512, 384, offline=True), "m"),
    (lambda: qgemm.select_config(256, 512, 384, kind="masked", expected_m=2**40, offline=True),
     "expected_m"),
    (lambda: qgemm.get_device_props("cuda:99999999999999999999"), "device"),
    (lambda: qgemm.get_num_sms(2**40), "device"),
])
def test_huge_values_raise_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


def test_huge_expected_m_is_a_value_error_on_every_path():
    ops = dense_operands(256, 512, 384)
    g_ops = {k: v for k, v in ops.items()}
    with pytest.raises(ValueError, match="expected_m"):
        qgemm.m_grouped_fp8_gemm_nt_masked((g_ops["a"], g_ops["sfa"]), (g_ops["b"], g_ops["sfb"]),
                                           g_ops["d"], g_ops["d"], 2**31)
    with pytest.raises(ValueError, match="expected_m"):
        qgemm.m_grouped_fp8_fp4_gemm_nt_masked((g_ops["a"], g_ops["sfa"]),
                                               (g_ops["b"], g_ops["sfb"]), g_ops["d"], g_ops["d"],
                                               -2**63)


def test_device_strings_of_other_digits_are_refused():
    for bad in ["cuda:١", "cuda:²", "cuda:+1", "cuda: 1"]:
        with pytest.raises(ValueError, match="device"):
            qgemm._dispatch.device_ordinal(bad)


# ---- item 6: an ndim beyond the shape array leaks nothing ---------------------------------


def test_ndim_beyond_the_shape_array_prints_no_heap_words():
    # the producer says 3 dimensions but its shape array holds 2: the message used to
    # print shape[2], a word of the heap, as the third dimension
    # (the import's size check reads that word too, as it must read every dimension the
    # producer declares; its messages name the dimension, never a value: which one fires
    # depends on the word, none of them prints it; seen on the H200 2026-11-29 when the
    # word was a pointer)
    ops = dense_operands(256, 512, 384, a=FakeTensor([256, 384], ndim=3))
    with pytest.raises(ValueError) as info:
        _gemm(ops)
    assert str(info.value) in ("qgemm: a must be 2-D [M, K], got 3-D",
                               "qgemm: a has a negative dimension (dimension 2 of 3)",
                               "qgemm: a has more than 2^63 elements (at dimension 2 of 3)")
    _consumed(ops)


# ---- item 7: torch.compile without storage_offset ----------------------------------------


def test_no_storage_offset_call_in_the_package():
    # torch 2.11's dynamo cannot trace Tensor.storage_offset() ("torch.* op returned
    # non-Tensor ... storage_offset": test_compile_copies_a_misaligned_m_major_sfa_as_eager_does
    # failed on the H200), and newer ones trace it natively, so no CPU run can tell:
    # the package's code (all of which torch.compile may trace) must not call it.
    root = pathlib.Path(qgemm.__file__).parent
    calls = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "storage_offset":
                calls.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not calls, calls


def test_traced_scale_transform_on_cpu_copies_as_eager():
    # what the GPU test checks, on CPU tensors under torch.compile (CI's torch)
    torch = pytest.importorskip("torch")
    sfa = torch.ones(4 * 256 + 4).as_strided((256, 4), (1, 256), 1)  # M-major, misaligned
    aligned = torch.ones(4 * 256 + 4).as_strided((256, 4), (1, 256), 4)

    def helper(x):
        return qgemm.get_mn_major_tma_aligned_tensor(x) * 2

    for x in (sfa, aligned):
        torch._dynamo.reset()
        out = torch.compile(helper, fullgraph=True, backend="eager")(x)
        assert out.stride() == (1, 256) and torch.equal(out, x * 2)
    torch._dynamo.reset()


def test_custom_op_config_out_of_range_is_a_value_error():
    torch = pytest.importorskip("torch")
    qgemm.register_torch_ops()
    a = torch.zeros(256, 384, dtype=torch.float8_e4m3fn)
    sfa = qgemm.get_col_major_tma_aligned_tensor(torch.ones(256, 3))
    b = torch.zeros(512, 384, dtype=torch.float8_e4m3fn)
    d = torch.empty(256, 512, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="config value 2147483648 is out of range"):
        torch.ops.qgemm.fp8_gemm_nt(a, sfa, b, torch.ones(4, 3), d, [2**31, 128, 0, 0, 0, 0])


def test_k_grouped_with_every_group_empty_sets_d_to_c_or_zero():
    # DeepGEMM's early_return(m, n, sum_k, d, c): no launch (empty a and b have no data)
    torch = pytest.importorskip("torch")
    a = torch.empty(0, dtype=torch.float8_e4m3fn)
    b = torch.empty(0, dtype=torch.float8_e4m3fn)
    sfa, sfb = torch.empty(64, 0), torch.empty(32, 0)
    d = torch.full((2, 64, 32), 5.0)
    layout = torch.zeros(2, dtype=torch.int32)
    qgemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, [0, 0], layout)
    assert bool((d == 0).all())
    c = torch.full((2, 64, 32), 3.0)
    qgemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, [0, 0], layout, c=c)
    assert torch.equal(d, c)
    qgemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, [0, 0], layout, c=d)
    assert torch.equal(d, c)  # c is d: unchanged
    e = torch.empty(2, 0, 32)
    qgemm.k_grouped_fp8_gemm_nt_contiguous((a, torch.empty(0, 1)), (b, sfb),
                                           e, [0, 0], layout)  # M = 0: nothing to do
