"""The indexer / HC family's Python layer on the CPU (qgemm/indexer.py and the
extension's entries in python/csrc/indexer.c): DeepGEMM's names exported and
no longer stubs, the package's own argument checks (torch tensors on the CPU:
every one fails before a launch), and the extension's shape / dtype / stride
checks reached exactly with fake DLPack CUDA tensors (fake_dlpack.FakeTensor),
each well-formed call ending at the library's missing-GPU error (the
library's own checks, past the context, are tests/test_indexer.c's)."""
from __future__ import annotations

import re

import pytest

import qgemm
import qgemm.deep_gemm as deep_gemm
from qgemm import _C, _deepgemm
from fake_dlpack import FakeTensor

NAMES = ("fp8_mqa_logits", "fp8_fp4_mqa_logits", "get_paged_mqa_logits_metadata",
         "fp8_paged_mqa_logits", "fp8_fp4_paged_mqa_logits", "tf32_hc_prenorm_gemm")
NO_GPU_MESSAGE = re.compile(r"libcuda|driver|device", re.IGNORECASE)


@pytest.mark.parametrize("name", NAMES)
def test_deepgemm_names_are_implemented(name):
    assert name not in _deepgemm.MISSING
    for mod in (qgemm, deep_gemm):
        fn = getattr(mod, name)
        assert fn is getattr(qgemm.indexer, name)
        assert name in mod.__all__
    assert getattr(deep_gemm, name).__doc__


def test_per_custom_dims_cast_to_fp8():
    torch = pytest.importorskip("torch")
    from qgemm.deep_gemm.utils import per_custom_dims_cast_to_fp8
    kv = torch.randn(37, 64)
    kv_fp8, sf = per_custom_dims_cast_to_fp8(kv, (0,), False)
    assert kv_fp8.dtype == torch.float8_e4m3fn and kv_fp8.shape == (37, 64)
    assert sf.shape == (37,) and sf.dtype == torch.float32
    back = kv_fp8.float() * sf[:, None]
    assert ((back - kv).abs() <= kv.abs().amax(1, keepdim=True) / 8).all()
    _, sf2 = per_custom_dims_cast_to_fp8(kv, (0,), True)
    assert torch.equal(sf2, qgemm.ceil_to_ue8m0(sf2))  # powers of two


# ---- the package's own checks (CPU torch tensors) -------------------------------------


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def mqa_inputs(torch, s=8, skv=64, h=32, d=64):
    q = torch.zeros(s, h, d).to(torch.float8_e4m3fn)
    kv = (torch.zeros(skv, d).to(torch.float8_e4m3fn), torch.ones(skv))
    w = torch.zeros(s, h)
    ks = torch.zeros(s, dtype=torch.int32)
    return q, kv, w, ks, ks.clone()


def test_mqa_logits_argument_errors(torch):
    q, kv, w, ks, ke = mqa_inputs(torch)
    with pytest.raises(TypeError, match="q must be a torch.Tensor"):
        qgemm.fp8_mqa_logits(object(), kv, w, ks, ke)
    with pytest.raises(TypeError, match="kv must be a pair"):
        qgemm.fp8_mqa_logits(q, kv[0], w, ks, ke)
    with pytest.raises(NotImplementedError, match="SM100"):
        qgemm.fp8_fp4_mqa_logits((q, torch.zeros(8, 32, dtype=torch.int32)), kv, w, ks, ke)
    with pytest.raises(ValueError, match="clean_logits=False"):
        qgemm.fp8_mqa_logits(q, kv, w, ks, ke, clean_logits=True, max_seqlen_k=16)
    with pytest.raises(ValueError, match="max_seqlen_k must be >= 0"):
        qgemm.fp8_mqa_logits(q, kv, w, ks, ke, clean_logits=False, max_seqlen_k=-1)
    with pytest.raises(ValueError, match="logits_dtype"):
        qgemm.fp8_fp4_mqa_logits((q, None), kv, w, ks, ke, logits_dtype=torch.float16)
    with pytest.raises(ValueError, match="weights must be float32"):
        qgemm.fp8_mqa_logits(q, kv, w.bfloat16(), ks, ke)
    with pytest.raises(ValueError, match=r"q must be \[seq_len, num_heads, head_dim\]"):
        qgemm.fp8_mqa_logits(q[0], kv, w, ks, ke)
    # a well-formed call on CPU tensors: refused by the extension (not device memory)
    with pytest.raises(ValueError, match="CUDA device memory"):
        qgemm.fp8_mqa_logits(q, kv, w, ks, ke)


def test_paged_argument_errors(torch):
    lens = torch.zeros(4, 2, dtype=torch.int32)
    with pytest.raises(ValueError, match="block_kv must be 64"):
        qgemm.get_paged_mqa_logits_metadata(lens, 32, 132)
    with pytest.raises(ValueError, match="num_sms must be >= 1"):
        qgemm.get_paged_mqa_logits_metadata(lens, 64, 0)
    with pytest.raises(NotImplementedError, match="varlen"):
        qgemm.get_paged_mqa_logits_metadata(lens, 64, 132, indices=lens)
    with pytest.raises(ValueError, match="2-D"):
        qgemm.get_paged_mqa_logits_metadata(lens[:, 0], 64, 132)
    with pytest.raises(TypeError, match="context_lens must be a torch.Tensor"):
        qgemm.get_paged_mqa_logits_metadata([1, 2], 64, 132)
    q = torch.zeros(4, 2, 64, 128).to(torch.float8_e4m3fn)
    cache = torch.zeros(10, 64, 1, 132, dtype=torch.uint8)
    w = torch.zeros(8, 64)
    bt = torch.zeros(4, 3, dtype=torch.int32)
    sched = torch.zeros(133, 2, dtype=torch.int32)
    with pytest.raises(ValueError, match="max_context_len must be >= 1"):
        qgemm.fp8_paged_mqa_logits(q, cache, w, lens, bt, sched, 0)
    with pytest.raises(NotImplementedError, match="varlen"):
        qgemm.fp8_fp4_paged_mqa_logits((q, None), cache, w, lens, bt, sched, 192, indices=bt)
    with pytest.raises(ValueError, match=r"q must be \[batch_size, next_n"):
        qgemm.fp8_paged_mqa_logits(q[0], cache, w, lens, bt, sched, 192)
    with pytest.raises(ValueError, match="CUDA device memory"):
        qgemm.fp8_paged_mqa_logits(q, cache, w, lens, bt, sched, 192)


def test_hc_argument_errors(torch):
    a = torch.zeros(16, 128, dtype=torch.bfloat16)
    b = torch.zeros(24, 128)
    d = torch.zeros(16, 24)
    s = torch.zeros(16)
    with pytest.raises(ValueError, match="num_splits must be >= 1"):
        qgemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=0)
    with pytest.raises(TypeError, match="num_splits must be an int"):
        qgemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=1.5)
    with pytest.raises(TypeError, match="sqr_sum must be a torch.Tensor"):
        qgemm.tf32_hc_prenorm_gemm(a, b, d, None)
    with pytest.raises(ValueError, match="CUDA device memory"):
        qgemm.tf32_hc_prenorm_gemm(a, b, d, s)


# ---- the extension's checks (fake CUDA tensors) ----------------------------------------


def hc_ops(m=100, n=24, k=1280, splits=0, **over):
    ops = {"a": FakeTensor([m, k], "bfloat16"), "b": FakeTensor([n, k], "float32"),
           "d": FakeTensor([splits, m, n] if splits else [m, n], "float32"),
           "s": FakeTensor([splits, m] if splits else [m], "float32")}
    ops.update(over)
    return ops


def call_hc(ops, splits=0):
    _C.hc_prenorm(ops["a"], ops["b"], ops["d"], ops["s"], splits, 0, 0)


def consumed(ops):
    for name, t in ops.items():
        if isinstance(t, FakeTensor):
            assert t.consumed_correctly(), name


def test_hc_extension_checks(no_gpu):
    ops = hc_ops()
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE.pattern):
        call_hc(ops)
    consumed(ops)
    ops = hc_ops(splits=4)
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE.pattern):
        call_hc(ops, 4)
    bad = [
        (hc_ops(a=FakeTensor([100, 1280], "float32")), 0, "a must have dtype bfloat16"),
        (hc_ops(b=FakeTensor([24, 1024], "float32")), 0, "k"),
        (hc_ops(d=FakeTensor([100, 32], "float32")), 0, "n"),
        (hc_ops(s=FakeTensor([99], "float32")), 0, "m"),
        (hc_ops(splits=4), 3, "num_splits"),
        (hc_ops(), 4, r"\[num_splits, m, n\]"),
        (hc_ops(a=FakeTensor([100, 1280], "bfloat16", strides=[1, 100])), 0, "contiguous along"),
        (hc_ops(s=FakeTensor([100], "float32", strides=[2])), 0, "sqr_sum must be contiguous"),
    ]
    for ops, splits, pattern in bad:
        with pytest.raises(ValueError, match=pattern):
            call_hc(ops, splits)
        consumed(ops)


def mqa_ops(s=100, skv=1000, h=64, d=128, cols=None, dtype="float32", **over):
    cols = skv if cols is None else cols
    ld = (cols + 255) // 256 * 256
    ops = {"q": FakeTensor([s, h, d], "e4m3"), "kv": FakeTensor([skv, d], "uint8"),
           "sc": FakeTensor([skv], "float32"), "w": FakeTensor([s, h], "float32"),
           "ks": FakeTensor([s], "int32"), "ke": FakeTensor([s], "int32"),
           "l": FakeTensor([s, cols], dtype, strides=[ld, 1])}
    ops.update(over)
    return ops


def call_mqa(ops, clean=1, max_seqlen_k=0):
    _C.mqa_logits(ops["q"], ops["kv"], ops["sc"], ops["w"], ops["ks"], ops["ke"], ops["l"],
                  clean, max_seqlen_k, 0, 0)


def test_mqa_extension_checks(no_gpu):
    for ops, kw in ((mqa_ops(), {}), (mqa_ops(dtype="bfloat16"), {}),
                    (mqa_ops(cols=700), {"clean": 0, "max_seqlen_k": 700})):
        with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE.pattern):
            call_mqa(ops, **kw)
        consumed(ops)
    bad = [
        (mqa_ops(q=FakeTensor([100, 64, 128], "bfloat16")), {}, "q must have dtype float8"),
        (mqa_ops(kv=FakeTensor([1000, 64], "uint8")), {}, "head_dim"),
        (mqa_ops(sc=FakeTensor([999], "float32")), {}, "seq_len_kv"),
        (mqa_ops(w=FakeTensor([100, 32], "float32")), {}, "num_heads"),
        (mqa_ops(ks=FakeTensor([100], "int64")), {}, "int32"),
        (mqa_ops(l=FakeTensor([100, 1000], "float16")), {}, "float32 or bfloat16"),
        (mqa_ops(cols=512), {}, "seq_len_kv"),
        (mqa_ops(cols=512), {"clean": 0, "max_seqlen_k": 700}, "max_seqlen_k"),
        (mqa_ops(q=FakeTensor([100, 64, 128], "e4m3", strides=[64 * 256, 256, 1])), {},
         "q must be contiguous"),
    ]
    for ops, kw, pattern in bad:
        with pytest.raises(ValueError, match=pattern):
            call_mqa(ops, **kw)
        consumed(ops)


def paged_ops(b=8, nn=2, h=64, d=128, max_len=1024, sms=132, dtype="float32", **over):
    ld = (max_len + 255) // 256 * 256
    ops = {"q": FakeTensor([b, nn, h, d], "e4m3"), "kv": FakeTensor([100, 64, 1, d + 4], "uint8"),
           "w": FakeTensor([b * nn, h], "float32"), "lens": FakeTensor([b, nn], "int32"),
           "bt": FakeTensor([b, (max_len + 63) // 64], "int32"),
           "sched": FakeTensor([sms + 1, 2], "int32"),
           "l": FakeTensor([b * nn, max_len], dtype, strides=[ld, 1])}
    ops.update(over)
    return ops


def call_paged(ops, max_len=1024, clean=0):
    _C.paged_mqa_logits(ops["q"], ops["kv"], ops["w"], ops["lens"], ops["bt"], ops["sched"],
                        ops["l"], max_len, clean, 0, 0)


def test_paged_extension_checks(no_gpu):
    ops = paged_ops()
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE.pattern):
        call_paged(ops)
    consumed(ops)
    # the padded buffer itself (the package's fast path passes [rows, ld] and makes the
    # [:, :max_context_len] view after the launch): wider than max_context_len is taken
    ops = paged_ops(l=FakeTensor([16, 1280], "float32"))
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE.pattern):
        call_paged(ops)
    consumed(ops)
    ops = paged_ops()
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE.pattern):
        _C.paged_mqa_schedule(ops["lens"], ops["sched"], 1 << 30, 0, 0)
    consumed(ops)
    bad = [
        (paged_ops(kv=FakeTensor([100, 32, 1, 132], "uint8")), "block_kv 64"),
        (paged_ops(kv=FakeTensor([100, 64, 1, 128], "uint8")), "head_dim \\+ 4"),
        (paged_ops(lens=FakeTensor([8], "int32")), r"\[batch_size, next_n\]"),
        (paged_ops(lens=FakeTensor([8, 1], "int32")), "next_n"),
        (paged_ops(sched=FakeTensor([133, 3], "int32")), "schedule_meta"),
        (paged_ops(sched=FakeTensor([1, 2], "int32")), "num_sms \\+ 1 rows"),
        (paged_ops(w=FakeTensor([16, 32], "float32")), "num_heads"),
        (paged_ops(bt=FakeTensor([7, 16], "int32")), "batch_size"),
        (paged_ops(l=FakeTensor([16, 1000], "float32")), "at least max_context_len \\(1024\\)"),
    ]
    for ops, pattern in bad:
        with pytest.raises(ValueError, match=pattern):
            call_paged(ops)
        consumed(ops)
    # max_context_len below 1: refused before the logits' width is compared (a batch of
    # none included, which the library would otherwise answer with nothing done)
    for b in (8, 0):
        ops = paged_ops(b=b)
        with pytest.raises(ValueError, match="max_context_len must be >= 1, got 0"):
            call_paged(ops, max_len=0)
        consumed(ops)


# ---- torch.compile(fullgraph=True): the custom ops, on meta tensors -----------------------


def indexer_block(q, kv, sc, w, ks, ke, pq, cache, pw, lens, bt, a, b):
    """A V3.2 decode-and-prefill step: ragged logits, the paged schedule and
    logits, and the HC prenorm (with splits) feeding a norm."""
    logits = qgemm.fp8_mqa_logits(q, (kv, sc), w, ks, ke)
    bf = qgemm.fp8_fp4_mqa_logits((q, None), (kv, sc), w, ks, ke, clean_logits=False,
                                  max_seqlen_k=48, logits_dtype=torch_mod().bfloat16)
    sched = qgemm.get_paged_mqa_logits_metadata(lens, 64, 8)
    paged = qgemm.fp8_paged_mqa_logits(pq, cache, pw, lens, bt, sched, 192, True)
    d = torch_mod().empty(4, a.shape[0], b.shape[0], device=a.device)
    s = torch_mod().empty(4, a.shape[0], device=a.device)
    qgemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=4)
    return logits.sum(1), bf.float().sum(1), paged.sum(1), d.sum(0) / s.sum(0)[:, None]


def torch_mod():
    import torch
    return torch


def meta_inputs(torch):
    e4m3 = torch.float8_e4m3fn
    m = dict(device="meta")
    return dict(q=torch.empty(16, 32, 64, dtype=e4m3, **m), kv=torch.empty(100, 64, dtype=e4m3, **m),
                sc=torch.empty(100, **m), w=torch.empty(16, 32, **m),
                ks=torch.empty(16, dtype=torch.int32, **m), ke=torch.empty(16, dtype=torch.int32, **m),
                pq=torch.empty(4, 2, 64, 128, dtype=e4m3, **m),
                cache=torch.empty(20, 64, 1, 132, dtype=torch.uint8, **m),
                pw=torch.empty(8, 64, **m), lens=torch.empty(4, 2, dtype=torch.int32, **m),
                bt=torch.empty(4, 3, dtype=torch.int32, **m),
                a=torch.empty(48, 1280, dtype=torch.bfloat16, **m), b=torch.empty(24, 1280, **m))


INDEXER_OPS = ("mqa_logits", "paged_mqa_schedule", "paged_mqa_logits", "hc_prenorm")


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compile_fullgraph_indexer(torch, backend):
    if not hasattr(torch.library, "custom_op"):
        pytest.skip("torch has no torch.library.custom_op")
    qgemm.register_torch_ops()
    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.lookup_backend(backend)(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(indexer_block, fullgraph=True, backend=recording)  # no graph break
    out = compiled(**meta_inputs(torch))
    assert [tuple(t.shape) for t in out] == [(16,), (16,), (8,), (48, 24)]
    text = "\n".join(str(n.target) + " " + " ".join(map(str, n.args))
                     for gm in graphs for n in gm.graph.nodes)
    for op in INDEXER_OPS:
        assert f"qgemm.{op}" in text or f"qgemm::{op}" in text, op
    for op in INDEXER_OPS:
        schema = str(getattr(torch.ops.qgemm, op).default._schema)
        assert "!" in schema and schema.endswith("-> ()"), schema


def test_meta_tensors_in_eager_run_the_fake_implementation(torch):
    qgemm.register_torch_ops()
    out = indexer_block(**meta_inputs(torch))
    assert out[0].device.type == "meta" and out[3].shape == (48, 24)
