"""DeepGEMM's einsum family on qgemm (python/qgemm/einsum.py): ``einsum``,
``fp8_einsum``, ``fp8_gemm_nt_skip_head_mid``.

CPU: the expression parser; every argument error before anything is launched;
and each function's decomposition into GEMMs checked numerically on CPU
tensors, with the GEMM launchers replaced by a float64 torch product (the
views each GEMM gets: no copies of the per-head operands, their strides, the
scales made M-major). GPU (Hopper): DeepGEMM's own checks of
tests/test_einsum.py and test_attention.test_gemm_skip_head_mid on smaller
shapes, against the float64 reference, poisoned outputs.
"""
from __future__ import annotations

import sys

import pytest

import qgemm
import qgemm.deep_gemm as qdg
from qgemm import _deepgemm
from qgemm import _dispatch
from qgemm.einsum import (BHD_HDR_BHR, BHR_HDR_BHD, BMK_BNK_MN, parse_expr)
from reference import calc_diff, dequant_a, dequant_b

E = sys.modules["qgemm.einsum"]  # (qgemm.einsum is DeepGEMM's function of that name)


# ---- names ----------------------------------------------------------------------------------


def test_names_are_exported_and_no_longer_stubs():
    for name in ("einsum", "fp8_einsum", "fp8_gemm_nt_skip_head_mid"):
        assert name not in _deepgemm.MISSING
        assert getattr(qgemm, name) is getattr(E, name)
        assert getattr(qdg, name) is getattr(E, name)
        assert name in qgemm.__all__ and name in qdg.__all__


# ---- the parser -----------------------------------------------------------------------------


@pytest.mark.parametrize("expr,canon", [
    ("bmk,bnk->mn", BMK_BNK_MN), ("bhr,hdr->bhd", BHR_HDR_BHD), ("bhd,hdr->bhr", BHD_HDR_BHR),
    (" b m k , b n k -> m n ", BMK_BNK_MN), ("xyz,ywz->xyw", BHR_HDR_BHD),
    ("ijk,jkl->ijl", BHD_HDR_BHR), ("BMK,BNK->MN", BMK_BNK_MN),
])
def test_parser_canonical_forms(expr, canon):
    assert parse_expr(expr)[0] == canon


def test_parser_returns_subscripts():
    assert parse_expr("bhr, hdr -> bhd") == (BHR_HDR_BHD, ["bhr", "hdr"], "bhd")


@pytest.mark.parametrize("expr,pattern", [
    ("bmk,bnk", "no '->'"), ("bmk->mk", "two operands"), ("a,b,c->abc", "two operands"),
    ("bmk,->mn", "one or more letters"), ("bm1,bnk->mn", "one or more letters"),
    ("bmm,bnk->mn", "repeats"), ("bmk,bnk->mnz", "output letter 'z'"),
    ("bmk,bnk->m", "letter 'n' is in one operand only"), ("...k,bnk->mn", "letters"),
    ("bmk,bnk->mm", "repeats"),
])
def test_parser_refuses_malformed(expr, pattern):
    with pytest.raises(ValueError, match=pattern):
        parse_expr(expr)


def test_parser_type():
    with pytest.raises(TypeError, match="expr must be a str"):
        parse_expr(b"bmk,bnk->mn")


def test_unsupported_expressions():
    with pytest.raises(NotImplementedError, match=r"bmk,bnk->mn, bhr,hdr->bhd, bhd,hdr->bhr"):
        qgemm.einsum("mk,nk->mn", 1, 2, 3)
    with pytest.raises(NotImplementedError, match="SM100 only"):
        qgemm.fp8_einsum("bhd,hdr->bhr", (1, 2), (3, 4), 5)
    with pytest.raises(NotImplementedError, match="SM100 only"):
        qgemm.fp8_einsum("bhd,bhr->hdr", (1, 2), (3, 4), 5, 5, recipe=(1, 1, 128))


# ---- CPU: the decomposition, with the launchers replaced by a float64 product --------------

torch = None


def _torch():
    global torch
    if torch is None:
        torch = pytest.importorskip("torch")
    return torch


class FakeBF16:
    """_dispatch.launch_bf16 computing D (+)= A @ B^T in float64 (the dense kind, and
    the batched kind: [G, M, K] @ [G, N, K]^T per batch; the batch sum: D = (C +) the sum
    over the batches, its workspace checked: the size the C API asks, counters zeroed)."""

    def __init__(self):
        self.calls = []

    def __call__(self, kind, a, b, d, c, idx, expected_m, ks, stream):
        assert kind in (qgemm._C.KIND_DENSE, qgemm._C.KIND_BF16_BATCHED,
                        qgemm._C.KIND_BF16_BATCH_SUMS, qgemm._C.KIND_BF16_BATCH_SUM)
        assert ks is None
        if kind == qgemm._C.KIND_BF16_BATCH_SUM:  # idx: the workspace, expected_m: the splits
            self.calls.append((kind, a, b, d, c, idx, expected_m))
            splits, batches = expected_m, a.shape[0]
            per = -(-batches // splits)
            assert 1 <= splits and (splits - 1) * per < batches, "an empty split"
            total, counters = qgemm._C.batch_sum_workspace_bytes(d.shape[0], d.shape[1], splits)
            atomic = E._reduce_is_atomic()
            if total == 0 or (atomic and d.dtype == _torch().float32):  # FP32 d: the target
                assert idx is None
            else:
                assert idx.dtype == _torch().int32 and idx.numel() * 4 >= total
                assert not idx[: counters // 4].any(), "zero area not zero"
                idx.view(-1)[counters // 4:] = -1  # scratch: garbage for the next call
            assert d.stride(-1) == 1 and (c is None or c.stride(-1) == 1)
            out = (a.double() @ b.double().transpose(-2, -1)).sum(0)
            if c is not None:
                out = out + c.double()
            d.copy_(out)
            return
        assert idx is None
        if kind == qgemm._C.KIND_BF16_BATCHED:  # the view flags (python/csrc/bf16.c)
            assert 0 <= expected_m <= 3
            if expected_m & 1:
                a, d = a.transpose(0, 1), d.transpose(0, 1)
            if expected_m & 2:
                b = b.transpose(1, 2)
        self.calls.append((kind, a, b, d, c))
        if kind == qgemm._C.KIND_BF16_BATCH_SUMS:  # d[g] = the sum over batch range g
            assert c is None and d.dtype == _torch().float32
            splits, batches = d.shape[0], a.shape[0]
            per = -(-batches // splits)
            assert (splits - 1) * per < batches, "an empty split"
            prod = a.double() @ b.double().transpose(-2, -1)
            d.copy_(_torch().stack([prod[g * per:(g + 1) * per].sum(0) for g in range(splits)]))
            return
        out = a.double() @ b.double().transpose(-2, -1)
        if c is not None:
            out = out + c.double()
        d.copy_(out)


class FakeFP8:
    """_dispatch.gemm computing the dequantized D = A @ B^T (dense kind, sfa M-major)."""

    def __init__(self):
        self.calls = []

    def __call__(self, kind, a, b, d, idx, expected_m, stream, config):
        assert kind == qgemm._C.KIND_DENSE and idx is None
        (x, sfa), (y, sfb) = a, b
        assert sfa.shape[0] <= 1 or sfa.stride(0) == 1, "sfa must be M-major"
        assert sfb.is_contiguous()
        self.calls.append((x, sfa, y, sfb, d))
        d.copy_(dequant_a(x, sfa) @ dequant_b(y, sfb).T)


def _same_storage(view, base):
    return view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


def _rand(*shape, dtype=None):
    t = _torch()
    return t.randn(*shape, dtype=t.float32).to(dtype or t.bfloat16)


@pytest.mark.parametrize("nt", [True, False], ids=["bhr_hdr_bhd", "bhd_hdr_bhr"])
@pytest.mark.parametrize("batch,h,r,dd", [(3, 2, 16, 8), (1, 3, 24, 16), (5, 1, 8, 8)])
def test_per_head_is_one_batched_launch(monkeypatch, nt, batch, h, r, dd):
    t = _torch()
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    fy = _rand(h, dd, r + 8)
    y = fy[:, :, :r]  # DeepGEMM's strided y
    if nt:
        x, expr, z_shape = _rand(batch, h, r), "bhr,hdr->bhd", (batch, h, dd)
    else:
        x, expr, z_shape = _rand(batch, h, dd), "bhd,hdr->bhr", (batch, h, r)
    z = t.full(z_shape, 7.0, dtype=t.bfloat16)
    qdg.einsum(expr, x, y, z)
    ref = t.einsum(expr, x.double(), y.double())
    assert calc_diff(z, ref) < 1e-5
    (kind, a, b, d, c), = fake.calls  # every head in one launch
    assert kind == qgemm._C.KIND_BF16_BATCHED and c is None
    assert _same_storage(a, x) and _same_storage(b, fy) and _same_storage(d, z)  # no copies
    assert a.shape == (h, batch, x.shape[2]) and d.shape == (h, batch, z_shape[2])
    assert a.stride() == (x.shape[2], h * x.shape[2], 1)  # batch stride K, row stride H*K
    assert d.stride() == (z_shape[2], h * z_shape[2], 1)
    # NT: b[h] K-major [D, R]; NN: b[h].T [R, D] read MN-major (unit stride along N)
    assert b.stride()[1:] == ((r + 8, 1) if nt else (1, r + 8))


def test_per_head_cublaslt_path():
    t = _torch()
    x, fy = _rand(4, 2, 16), _rand(2, 8, 24)
    y = fy[:, :, :16]
    for expr, xx, z in (("bhr,hdr->bhd", x, t.empty(4, 2, 8, dtype=t.bfloat16)),
                        ("bhd,hdr->bhr", _rand(4, 2, 8), t.empty(4, 2, 16, dtype=t.bfloat16))):
        qgemm.einsum(expr, xx, y, z, use_cublaslt=True)
        assert t.equal(z, t.einsum(expr, xx, y))


@pytest.mark.parametrize("d_dtype,c_mode", [("float32", None), ("float32", "d"),
                                            ("float32", "other"), ("bfloat16", None)])
@pytest.mark.parametrize("s,min_k", [(1, 1024), (3, 1024), (5, 16), (40, 16)])
@pytest.mark.parametrize("reduce", ["tree", "atomic"])
def test_bmk_bnk_mn_decomposition(monkeypatch, d_dtype, c_mode, s, min_k, reduce):
    t = _torch()
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    monkeypatch.setenv("QGEMM_BMK_REDUCE", reduce)
    import qgemm._runtime as runtime
    monkeypatch.setattr(runtime, "get_num_sms", lambda device=None: 132)
    monkeypatch.setattr(E, "SPLIT_MIN_K", min_k)  # 16: several splits at these small shapes
    m, n, k = 24, 16, 8
    a, b = _rand(s, m, k), _rand(s, n, k)
    d = t.randn(m, n).to(getattr(t, d_dtype))
    d0 = d.double()
    c = {None: None, "d": d, "other": t.randn(m, n)}[c_mode]
    ref = (a.double() @ b.double().mT).sum(0)
    if c_mode == "d":
        ref = ref + d0
    elif c_mode == "other":
        ref = ref + c.double()
    qdg.einsum("bmk,bnk->mn", a, b, d, c=c)
    assert calc_diff(d, ref) < 1e-5
    (kind, a2, b2, d2, c2, ws, splits), = fake.calls  # one launch, the operands as they are
    assert kind == qgemm._C.KIND_BF16_BATCH_SUM
    assert a2 is a and b2 is b and d2 is d  # no copies; c as given (d itself, or another)
    assert c2 is c
    # bmk_splits below 1024 batches, under either reduction
    assert splits == E.bmk_splits(m, n, s, k)
    if reduce == "tree":
        assert (splits > 1) == (min_k == 16 and s > 1) and (ws is None) == (splits == 1)
    else:  # an FP32 d is the atomics' target: no workspace
        assert (ws is None) == (splits == 1 or d_dtype == "float32")
    if c_mode != "d":  # the same bits again (the stand-in launch is deterministic)
        again = d.clone()
        qgemm.einsum("bmk,bnk->mn", a, b, d, c=c)
        assert t.equal(d, again)
        if ws is not None:  # the workspace kept, not allocated (nor zeroed) again
            assert fake.calls[1][5] is ws


@pytest.mark.parametrize("c_mode", [None, "d", "other"])
def test_bmk_bnk_mn_d_not_addressable(monkeypatch, c_mode):
    """A d the kernel cannot write in place (a transposed view) goes through a contiguous
    copy, its values (c = d) read first; a c with a non-unit last stride is copied."""
    t = _torch()
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    monkeypatch.setattr(E, "SPLIT_MIN_K", 16)
    import qgemm._runtime as runtime
    monkeypatch.setattr(runtime, "get_num_sms", lambda device=None: 132)  # (the atomic rule's)
    s, m, n, k = 6, 16, 24, 8
    a, b = _rand(s, m, k), _rand(s, n, k)
    d = t.randn(n, m).T  # [m, n], unit stride along m
    d0 = d.double().clone()
    c = {None: None, "d": d, "other": t.randn(n, m).T}[c_mode]
    ref = (a.double() @ b.double().mT).sum(0) + (d0 if c_mode == "d" else
                                                  c.double() if c_mode == "other" else 0)
    qdg.einsum("bmk,bnk->mn", a, b, d, c=c)
    assert calc_diff(d, ref) < 1e-5
    (kind, _, _, d2, c2, _, _), = fake.calls
    assert d2 is not d and d2.is_contiguous() and (c2 is None or c2.is_contiguous())
    if c_mode == "d":
        assert c2 is not d2  # c read from a copy of d, not from the output buffer


def test_batch_sum_workspace_bytes(monkeypatch):
    wb = qgemm._C.batch_sum_workspace_bytes
    monkeypatch.delenv("QGEMM_BMK_REDUCE", raising=False)
    # atomic (the default): counters 2 x 24 x 4 -> 256, then W 128 x 384 FP32, all zeroed
    assert wb(128, 384, 15) == (256 + 128 * 384 * 4,) * 2
    assert wb(128, 384, 1) == (0, 0)
    monkeypatch.setenv("QGEMM_BMK_REDUCE", "tree")
    assert wb(128, 384, 1) == (0, 0)
    # counters: 2 m64 x 24 n16 regions x 14 gaps x 4 bytes -> 2816; slots 15 x 128 x 384 x 4
    assert wb(128, 384, 15) == (2816 + 15 * 128 * 384 * 4, 2816)
    assert wb(200, 136, 3) == (512 + 3 * 256 * 136 * 4, 512)


@pytest.mark.parametrize("c_mode", [None, "d", "other"])
def test_bmk_bnk_mn_empty_batch(monkeypatch, c_mode):
    t = _torch()
    _no_launch(monkeypatch)
    d = t.ones(8, 8)
    c = {None: None, "d": d, "other": t.full((8, 8), 2.0)}[c_mode]
    qgemm.einsum("bmk,bnk->mn", _rand(0, 8, 16), _rand(0, 8, 16), d, c=c)
    assert t.equal(d, t.full((8, 8), {None: 0.0, "d": 1.0, "other": 2.0}[c_mode]))


def _fp8_inputs(batch, h, r, dd):
    t = _torch()
    x = _rand(batch, h, r, dtype=t.float8_e4m3fn)
    sfx = t.rand(batch, h, -(-r // 128)) + 0.5
    y = _rand(h, dd, r, dtype=t.float8_e4m3fn)
    sfy = t.rand(h, -(-dd // 128), -(-r // 128)) + 0.5
    return x, sfx, y, sfy


@pytest.mark.parametrize("batch,h,r,dd", [(3, 2, 256, 128), (1, 3, 384, 256), (130, 2, 128, 64)])
def test_fp8_einsum_decomposition(monkeypatch, batch, h, r, dd):
    """QGEMM_FP8_EINSUM=loop: one FP8 GEMM a head on strided views of x, y and d."""
    t = _torch()
    monkeypatch.setenv("QGEMM_FP8_EINSUM", "loop")
    fake = FakeFP8()
    monkeypatch.setattr(_dispatch, "gemm", fake)
    x, sfx, y, sfy = _fp8_inputs(batch, h, r, dd)
    z = t.full((batch, h, dd), 7.0, dtype=t.bfloat16)
    qdg.fp8_einsum("bhr,hdr->bhd", (x, sfx), (y, sfy), z)
    ref = t.einsum("bhr,hdr->bhd", dequant_a(x, sfx), dequant_b(y, sfy))
    assert calc_diff(z, ref) < 1e-5
    assert len(fake.calls) == h
    for xa, sfa, yb, sfb, d in fake.calls:
        assert _same_storage(xa, x) and _same_storage(yb, y) and _same_storage(d, z)
        assert xa.stride() == (h * r, 1) and d.stride() == (h * dd, 1)
        assert sfa.shape == (batch, -(-r // 128))


def _apply_skip_head_mid(d, head_splits):
    """DeepGEMM's apply_skip_head_mid (tests/test_attention.py), mid filled with `fill`."""
    t = _torch()
    left, mid, right = head_splits
    m, n = d.shape
    heads = n // (left + right)
    d = d.view(m, heads, -1)
    pad = t.full((m, heads, mid), 3.0, dtype=d.dtype)
    return t.cat([d[:, :, :left], pad, d[:, :, -right:] if right else d[:, :, :0]],
                 dim=2).view(m, -1)


@pytest.mark.parametrize("head_splits", [(128, 64, 128), (128, 0, 128), (64, 32, 0),
                                         (0, 16, 64)])
def test_skip_head_mid_layout(monkeypatch, head_splits):
    t = _torch()
    seen = []

    def fake_gemm(a, b, d, c, recipe, recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast):
        seen.append(d)
        d.copy_(dequant_a(*a) @ dequant_b(*b).T)

    monkeypatch.setattr(E, "fp8_fp4_gemm_nt", fake_gemm)
    left, mid, right = head_splits
    m, k, heads = 8, 256, 3
    n = heads * (left + right)
    a = (_rand(m, k, dtype=t.float8_e4m3fn), t.rand(m, 2) + 0.5)
    b = (_rand(n, k, dtype=t.float8_e4m3fn), t.rand(-(-n // 128), 2) + 0.5)
    full = (dequant_a(*a) @ dequant_b(*b).T).to(t.bfloat16)
    d = t.full((m, n + heads * mid), 3.0, dtype=t.bfloat16)
    qdg.fp8_gemm_nt_skip_head_mid(a, b, d, head_splits)
    assert t.equal(d, _apply_skip_head_mid(full, head_splits))  # mid columns untouched
    assert (seen[0] is d) == (mid == 0)


# ---- CPU: argument errors (raised before any launch) ---------------------------------------


def _no_launch(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("launched despite a bad argument")
    monkeypatch.setattr(_dispatch, "launch_bf16", boom)
    monkeypatch.setattr(_dispatch, "gemm", boom)
    monkeypatch.setattr(E, "fp8_fp4_gemm_nt", boom)


def test_einsum_argument_errors(monkeypatch):
    t = _torch()
    _no_launch(monkeypatch)
    bf = t.bfloat16
    x, y, z = t.zeros(4, 2, 16, dtype=bf), t.zeros(2, 8, 16, dtype=bf), t.zeros(4, 2, 8, dtype=bf)
    cases = [
        (lambda: qgemm.einsum("bhr,hdr->bhd", x.float(), y, z), ValueError, "a must be"),
        (lambda: qgemm.einsum("bhr,hdr->bhd", x, t.zeros(3, 8, 16, dtype=bf), z), ValueError,
         r"b must be \[2, 8, 16\]"),
        (lambda: qgemm.einsum("bhr,hdr->bhd", x, y, t.zeros(4, 2, 9, dtype=bf)), ValueError,
         r"d must be \[4, 2, 8\]"),
        (lambda: qgemm.einsum("bhr,hdr->bhd", x, y, z.float()), ValueError, "d must be"),
        (lambda: qgemm.einsum("bhr,hdr->bhd", x, y, z, c=z), ValueError, "takes no c"),
        (lambda: qgemm.einsum("bhr,hdr->bhd", x, y.transpose(1, 2).contiguous().transpose(1, 2),
                              z), ValueError, "contiguous in its last dimension"),
        (lambda: qgemm.einsum("bhd,hdr->bhr", x, y, z), ValueError, "b must be"),
        (lambda: qgemm.einsum("bhr,hdr->bhd", x, y, z, use_cublaslt="yes"), TypeError,
         "use_cublaslt"),
        (lambda: qgemm.einsum("bhr,hdr->bhd", 1, y, z), TypeError,
         "torch tensors"),
    ]
    a, b = t.zeros(3, 8, 16, dtype=bf), t.zeros(3, 16, 16, dtype=bf)
    d32, d16 = t.zeros(8, 16), t.zeros(8, 16, dtype=bf)
    cases += [
        (lambda: qgemm.einsum("bmk,bnk->mn", a, b, d32, use_cublaslt=True), ValueError,
         "no cuBLASLt path"),
        (lambda: qgemm.einsum("bmk,bnk->mn", a, t.zeros(2, 16, 16, dtype=bf), d32), ValueError,
         "B = 3"),
        (lambda: qgemm.einsum("bmk,bnk->mn", a, b, t.zeros(16, 8)), ValueError,
         r"d must be \[M, N\] = \[8, 16\]"),
        (lambda: qgemm.einsum("bmk,bnk->mn", a, b, d16, c=d16), ValueError, "takes no c"),
        (lambda: qgemm.einsum("bmk,bnk->mn", a, b, d32, c=t.zeros(8, 16, dtype=bf)), ValueError,
         "c must be None, d itself"),
        (lambda: qgemm.einsum("bmk,bnk->mn", a, b, d32.half()), ValueError,
         "float32 or bfloat16"),
    ]
    for call, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            call()


def test_fp8_einsum_argument_errors(monkeypatch):
    t = _torch()
    _no_launch(monkeypatch)
    x, sfx, y, sfy = _fp8_inputs(4, 2, 256, 128)
    z = t.zeros(4, 2, 128, dtype=t.bfloat16)
    f = qgemm.fp8_einsum
    cases = [
        (lambda: f("bhr,hdr->bhd", (x, sfx), (y, sfy), z, recipe=(1, 1, 128)),
         NotImplementedError, r"recipe=\(1, 1, 128\)"),
        (lambda: f("bhr,hdr->bhd", (x, sfx), (y, sfy), z, c=z), NotImplementedError, "c="),
        (lambda: f("bhr,hdr->bhd", (x, sfx), (y, sfy), z.float()), NotImplementedError,
         "bfloat16 d"),
        (lambda: f("bhr,hdr->bhd", (x, sfx[:, :, :1]), (y, sfy), z), ValueError,
         r"a\[1\] must be \[4, 2, 2\]"),
        (lambda: f("bhr,hdr->bhd", (x, sfx), (y, sfy[:, :, :1]), z), ValueError,
         r"b\[1\] must be \[2, 1, 2\]"),
        (lambda: f("bhr,hdr->bhd", (x.to(t.bfloat16), sfx), (y, sfy), z), ValueError,
         "float8_e4m3fn"),
        (lambda: f("bhr,hdr->bhd", x, (y, sfy), z), TypeError, "must be a pair"),
        (lambda: f("bhr,hdr->bhd", (x, sfx), (y, sfy), t.zeros(4, 2, 64, dtype=t.bfloat16)),
         ValueError, r"d must be \[4, 2, 128\]"),
    ]
    for call, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            call()


def test_skip_head_mid_argument_errors(monkeypatch):
    t = _torch()
    _no_launch(monkeypatch)
    a = (t.zeros(8, 256, dtype=t.float8_e4m3fn), t.ones(8, 2))
    b = (t.zeros(512, 256, dtype=t.float8_e4m3fn), t.ones(4, 2))
    d = t.zeros(8, 640, dtype=t.bfloat16)  # 2 heads of 128 + 64 + 128
    f = qgemm.fp8_gemm_nt_skip_head_mid
    cases = [
        (lambda: f(a, b, d, (128, 64)), TypeError, "head_splits"),
        (lambda: f(a, b, d, (128, -1, 128)), ValueError, r"head_splits\[1\]"),
        (lambda: f(a, b, d, (0, 64, 0)), ValueError, "left \\+ right must be > 0"),
        (lambda: f(a, b, d, (100, 64, 100)), ValueError, "multiple of left \\+ right = 200"),
        (lambda: f(a, b, t.zeros(8, 512, dtype=t.bfloat16), (128, 64, 128)), ValueError,
         r"\[8, 640\]"),
        (lambda: f(a, b, d.float(), (128, 64, 128)), NotImplementedError, "bfloat16"),
        (lambda: f(a, b, d, (128, 64, 128), recipe=(1, 1, 128)), NotImplementedError,
         "recipe"),
        (lambda: f(a, b, d, (128, 64, 128), recipe=(1, 128, 32)), NotImplementedError,
         "recipe"),
    ]
    for call, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            call()


def test_empty_problems_launch_nothing(monkeypatch):
    t = _torch()
    _no_launch(monkeypatch)
    bf = t.bfloat16
    qgemm.einsum("bhr,hdr->bhd", t.zeros(0, 2, 16, dtype=bf), t.zeros(2, 8, 16, dtype=bf),
                 t.zeros(0, 2, 8, dtype=bf))
    qgemm.einsum("bmk,bnk->mn", t.zeros(3, 0, 16, dtype=bf), t.zeros(3, 8, 16, dtype=bf),
                 t.zeros(0, 8))
    x, sfx, y, sfy = _fp8_inputs(0, 2, 256, 128)
    qgemm.fp8_einsum("bhr,hdr->bhd", (x, sfx), (y, sfy), t.zeros(0, 2, 128, dtype=bf))
    qgemm.fp8_gemm_nt_skip_head_mid((t.zeros(0, 256, dtype=t.float8_e4m3fn), t.ones(0, 2)),
                                    (t.zeros(256, 256, dtype=t.float8_e4m3fn), t.ones(2, 2)),
                                    t.zeros(0, 384, dtype=bf), (64, 64, 64))


# ---- GPU: DeepGEMM's checks (tests/test_einsum.py, test_attention.py) on smaller shapes -----


def _gpu():
    t = _torch()
    if not t.cuda.is_available():
        pytest.skip("skipped: no GPU (no CUDA device visible to torch)")
    props = t.cuda.get_device_properties(0)
    if (props.major, props.minor) != (9, 0):
        pytest.skip(f"qgemm needs sm_90 (Hopper); cuda:0 is {props.name}")
    return t


@pytest.mark.parametrize("s,m,n,k", [(s, m, n, k) for s in (1, 129)
                                      for m, n, k in ((128, 384, 128), (256, 256, 256),
                                                      (200, 136, 64))] + [(4096, 256, 256, 256)])
@pytest.mark.parametrize("fp32", [True, False])
@pytest.mark.parametrize("reduce", ["atomic", "tree", "atomic-v3", "atomic-v3-wide",
                                    "atomic-bf16cast", "atomic-v4", "atomic-v5", "atomic-v6"])
def test_gpu_bmk_bnk_mn(monkeypatch, s, m, n, k, fp32, reduce):
    """DeepGEMM's check (calc_diff < 1e-5 vs float64) under each reduction; atomic-v3:
    QGEMM_BMK_VARIANT=v3 (16-byte reductions; a bf16 d's batched last-arrival loads, its
    plan as an FP32 d's: v2's); atomic-v3-wide: and QGEMM_BMK_SPLITS=wide (the wider
    tiles: 128x192, 128x256); atomic-bf16cast: QGEMM_EINSUM_VARIANT=bf16cast (a bf16 d
    as DeepGEMM's: the FP32 sum into a kept scratch, then torch's cast), the default
    QGEMM_BMK_VARIANT; atomic-v4: QGEMM_BMK_VARIANT=v4 (a bf16 d summed by the FP32-d
    kernel into the workspace, then the library's conversion launch; an FP32 d as v3);
    atomic-v5 / atomic-v6: QGEMM_BMK_VARIANT=v5 / v6 (v4 / v3 with the reductions' target
    prefetched into L2; an FP32 d: v3 with the prefetch)."""
    t = _gpu()
    if reduce.endswith("-wide") and s == 1:
        pytest.skip("one batch: one split, no reduction")
    if reduce.endswith("-bf16cast"):
        monkeypatch.setenv("QGEMM_EINSUM_VARIANT", "bf16cast")
        monkeypatch.delenv("QGEMM_BMK_VARIANT", raising=False)
    else:
        monkeypatch.delenv("QGEMM_EINSUM_VARIANT", raising=False)
        monkeypatch.setenv("QGEMM_BMK_VARIANT", "v3" if "-v3" in reduce
                           else reduce[-2:] if reduce[-3:] in ("-v4", "-v5", "-v6") else "v1")
    if reduce.endswith("-wide"):
        monkeypatch.setenv("QGEMM_BMK_SPLITS", "wide")
    reduce = reduce.split("-")[0]
    monkeypatch.setenv("QGEMM_BMK_REDUCE", reduce)
    a = t.randn((s, m, k), dtype=t.bfloat16, device="cuda")
    b = t.randn((s, n, k), dtype=t.bfloat16, device="cuda")
    d = t.randn((m, n), dtype=t.float if fp32 else t.bfloat16, device="cuda")
    c = d if fp32 else None
    ref = (d.double() if fp32 else 0) + t.bmm(a.double(), b.double().mT).sum(0)
    qdg.einsum("bmk,bnk->mn", a, b, d, c=c)
    assert calc_diff(d, ref) < 1e-5
    if reduce == "atomic":  # again: the kept workspace (zero again) gives the sum again
        for _ in range(3):
            d2 = t.randn((m, n), dtype=d.dtype, device="cuda")
            ref2 = (d2.double() if fp32 else 0) + t.bmm(a.double(), b.double().mT).sum(0)
            qdg.einsum("bmk,bnk->mn", a, b, d2, c=d2 if fp32 else None)
            assert calc_diff(d2, ref2) < 1e-5
    elif not fp32:  # deterministic: bit-identical on a second run
        again = d.clone()
        qdg.einsum("bmk,bnk->mn", a, b, d, c=c)
        assert t.equal(d, again)
    else:  # the same sum added twice gives the same bits each time
        d0 = t.zeros_like(d)
        d1 = t.zeros_like(d)
        qdg.einsum("bmk,bnk->mn", a, b, d0, c=d0)
        qdg.einsum("bmk,bnk->mn", a, b, d1, c=d1)
        assert t.equal(d0, d1)


@pytest.mark.parametrize("s,splits", [(1, 1), (2, 2), (3, 3), (3, 2), (129, 43), (129, 129),
                                      (129, 1)])
@pytest.mark.parametrize("mode", ["fp32 += d", "fp32 = c +", "fp32", "bf16"])
@pytest.mark.parametrize("reduce", ["atomic", "tree", "atomic-v3", "atomic-bf16cast",
                                    "atomic-v4", "atomic-v5", "atomic-v6"])
def test_gpu_bmk_bnk_mn_splits(monkeypatch, s, splits, mode, reduce):
    """The one-kernel batch sum at explicit split counts (the tree from 1 to S leaves), M
    and N off the tiles: against float64, bit-identical over 5 calls (d reset to the same
    values before each), columns past N untouched (d a view of a wider buffer). atomic-v3:
    QGEMM_BMK_VARIANT=v3 (16-byte reductions, a bf16 d's batched loads); atomic-bf16cast:
    QGEMM_EINSUM_VARIANT=bf16cast (a bf16 d through the FP32 scratch and torch's cast);
    atomic-v4: QGEMM_BMK_VARIANT=v4 (a bf16 d: the FP32-d kernel into the workspace, then
    the conversion launch); atomic-v5 / atomic-v6: v4 / v3 with the reductions' target
    prefetched into L2."""
    t = _gpu()
    if reduce == "atomic-bf16cast":
        monkeypatch.setenv("QGEMM_EINSUM_VARIANT", "bf16cast")
        monkeypatch.delenv("QGEMM_BMK_VARIANT", raising=False)
    else:
        monkeypatch.delenv("QGEMM_EINSUM_VARIANT", raising=False)
        monkeypatch.setenv("QGEMM_BMK_VARIANT", {"atomic-v3": "v3", "atomic-v4": "v4",
                                                 "atomic-v5": "v5", "atomic-v6": "v6"}.get(reduce,
                                                                                           "v1"))
    reduce = reduce.split("-")[0]
    monkeypatch.setenv("QGEMM_BMK_REDUCE", reduce)
    m, n, k = 200, 136, 64
    a = t.randn((s, m, k), dtype=t.bfloat16, device="cuda")
    b = t.randn((s, n, k), dtype=t.bfloat16, device="cuda")
    dtype = t.bfloat16 if mode == "bf16" else t.float32
    c0 = t.randn((m, n), device="cuda")
    ref = t.bmm(a.double(), b.double().mT).sum(0) + (c0.double() if mode.startswith("fp32 ")
                                                     else 0)
    runs = []
    for _ in range(5):
        wide = t.full((m, n + 8), float("nan"), dtype=dtype, device="cuda")
        d = wide[:, :n]
        c = None
        if mode == "fp32 += d":
            d.copy_(c0)
            c = d
        elif mode == "fp32 = c +":
            c = c0
        E._bmk_bnk_mn(t, a, b, d, c, splits=splits)
        assert t.isnan(wide[:, n:].float()).all()  # padding untouched
        runs.append(d.clone())
    for r in runs:
        assert calc_diff(r, ref) < 1e-5 and not t.isnan(r.float()).any()
    if reduce == "tree":
        for r in runs[1:]:
            assert t.equal(r, runs[0])  # deterministic


@pytest.mark.parametrize("expr", ["bhr,hdr->bhd", "bhd,hdr->bhr"])
@pytest.mark.parametrize("h,r,dd", [(128, 512, 128), (8, 4096, 1024)])
@pytest.mark.parametrize("batch", [4, 130])
def test_gpu_per_head(expr, h, r, dd, batch):
    t = _gpu()
    nt = expr == "bhr,hdr->bhd"
    x = t.randn((batch, h, r if nt else dd), device="cuda", dtype=t.bfloat16)
    fy = t.randn((h, dd, r + 128), device="cuda", dtype=t.bfloat16)
    y = fy[:, :, :r]
    ref = t.einsum(expr, x, y)
    z = t.full((batch, h, dd if nt else r), -1234.0, device="cuda", dtype=t.bfloat16)
    qdg.einsum(expr, x, y, z)
    assert calc_diff(z, ref) < 1e-10  # DeepGEMM's bound: the same bf16 as cuBLAS
    assert calc_diff(z, t.einsum(expr, x.double(), y.double())) < 1e-5


@pytest.mark.parametrize("batch", [4, 130])
def test_gpu_fp8_einsum(batch):
    t = _gpu()
    h, r, dd = 8, 4096, 1024
    x = t.randn((batch, h, r), device="cuda", dtype=t.bfloat16)
    y = t.randn((h, dd, r), device="cuda", dtype=t.bfloat16)
    xq, sx = qgemm.per_token_cast_to_fp8(x.view(-1, r), use_ue8m0=True)
    xq, sx = xq.view(batch, h, r), sx.view(batch, h, r // 128)
    yq = t.empty_like(y, dtype=t.float8_e4m3fn)
    sy = t.empty((h, dd // 128, r // 128), device="cuda", dtype=t.float)
    for i in range(h):
        yq[i], sy[i] = qgemm.per_block_cast_to_fp8(y[i], use_ue8m0=True)
    z = t.full((batch, h, dd), -1234.0, device="cuda", dtype=t.bfloat16)
    qdg.fp8_einsum("bhr,hdr->bhd", (xq, sx), (yq, sy), z)
    assert calc_diff(z, t.einsum("bhr,hdr->bhd", x, y)) < 1e-3
    ref = t.einsum("bhr,hdr->bhd", dequant_a(xq, sx), dequant_b(yq, sy))
    assert calc_diff(z, ref) < 1e-5


@pytest.mark.parametrize("batch,h,r,dd", [(1, 8, 512, 128), (4, 16, 512, 128), (130, 8, 640, 200),
                                          (300, 4, 128, 512)])
def test_gpu_fp8_einsum_batched_matches_per_head(monkeypatch, batch, h, r, dd):
    """The default fp8_einsum (one launch of qg_batched_fp8_gemm_nt) against
    QGEMM_FP8_EINSUM=loop (one GEMM a head): the same kernel arithmetic per head (tiles
    chosen from the same problem shape), so the same bytes; both against the fp64 reference;
    d's padding columns between the heads (a d view of a wider buffer) left as they were.
    D = 200, R = 640: each head's sfb is 2 x 5 floats, 40 bytes, so the loop's per-head
    views of it are not 16-byte aligned (the loop copies them to aligned rows)."""
    t = _gpu()
    x = t.randn((batch, h, r), device="cuda", dtype=t.bfloat16)
    y = t.randn((h, dd, r), device="cuda", dtype=t.bfloat16)
    xq, sx = qgemm.per_token_cast_to_fp8(x.view(-1, r), use_ue8m0=False)
    xq, sx = xq.view(batch, h, r), sx.view(batch, h, -1)
    yq = t.empty_like(y, dtype=t.float8_e4m3fn)
    sy = t.empty((h, -(-dd // 128), -(-r // 128)), device="cuda", dtype=t.float)
    for i in range(h):
        yq[i], sy[i] = qgemm.per_block_cast_to_fp8(y[i], use_ue8m0=False)
    ref = t.einsum("bhr,hdr->bhd", dequant_a(xq, sx), dequant_b(yq, sy))
    outs = {}
    for mode in ("loop", "batched", "batched-sfkernel"):
        if mode.startswith("batched"):
            monkeypatch.delenv("QGEMM_FP8_EINSUM", raising=False)
        else:
            monkeypatch.setenv("QGEMM_FP8_EINSUM", "loop")
        # QGEMM_EINSUM_VARIANT=sfkernel: x's scales transposed by qgemm's kernel, same bytes
        monkeypatch.setenv("QGEMM_EINSUM_VARIANT", "sfkernel" if mode.endswith("sfkernel")
                           else "old")
        wide = t.full((batch, h, dd + 8), -1234.0, device="cuda", dtype=t.bfloat16)
        z = wide[:, :, :dd]
        sxx = sx
        if mode == "batched-sfkernel":  # (and x's scales a strided view: the kernel's strides)
            kb = sx.shape[2]
            sxx = t.full((batch, h, kb + 3), float("nan"), device="cuda")[:, :, :kb]
            sxx.copy_(sx)
        qdg.fp8_einsum("bhr,hdr->bhd", (xq, sxx), (yq, sy), z)
        t.cuda.synchronize()
        assert (wide[:, :, dd:] == -1234.0).all(), f"{mode}: padding between heads written"
        assert calc_diff(z, ref) < 1e-5, mode
        outs[mode] = z.clone()
    for mode in ("batched", "batched-sfkernel"):
        assert t.equal(outs["loop"].view(t.int16), outs[mode].view(t.int16)), \
            f"{mode} and per-head bytes differ: calc_diff {calc_diff(outs['loop'], outs[mode])}"


@pytest.mark.parametrize("m", [128, 300])
@pytest.mark.parametrize("n,k", [(8192, 512), (2048, 512)])
def test_gpu_skip_head_mid(m, n, k):
    t = _gpu()
    head_splits = (128, 64, 128)
    a = t.randn((m, k), device="cuda", dtype=t.bfloat16)
    b = t.randn((n, k), device="cuda", dtype=t.bfloat16)
    aq, sa = qgemm.per_token_cast_to_fp8(a, use_ue8m0=False)
    bq, sb = qgemm.per_block_cast_to_fp8(b, use_ue8m0=False)
    full = (dequant_a(aq, sa) @ dequant_b(bq, sb).T)
    heads = n // 256
    d = t.full((m, n + heads * 64), -1234.0, device="cuda", dtype=t.bfloat16)
    qdg.fp8_gemm_nt_skip_head_mid((aq, sa), (bq, sb), d, head_splits)
    dv = d.view(m, heads, 320)
    fv = full.view(m, heads, 256)
    assert calc_diff(dv[:, :, :128], fv[:, :, :128]) < 1e-5
    assert calc_diff(dv[:, :, 192:], fv[:, :, 128:]) < 1e-5
    assert bool((dv[:, :, 128:192] == -1234.0).all())  # the middle is untouched


def test_per_head_more_heads_than_one_launch_takes(monkeypatch):
    t = _torch()
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    monkeypatch.setattr(E, "MAX_BATCHES", 2)
    x, y = _rand(3, 5, 16), _rand(5, 8, 16)
    z = t.empty(3, 5, 8, dtype=t.bfloat16)
    qgemm.einsum("bhr,hdr->bhd", x, y, z)
    assert [call[1].shape[0] for call in fake.calls] == [2, 2, 1]
    assert calc_diff(z, t.einsum("bhr,hdr->bhd", x.double(), y.double())) < 1e-5


# ---- CPU: the extension takes the batched kind (fake DLPack tensors, no GPU) ----------------


def _fake_einsum_operands(b=100, h=4, r=256, dd=576, hg=None):
    from fake_dlpack import FakeTensor
    # x [B, H, R] as [H, B, R]; y [H, D, R + 128][:, :, :R]; z [B, H, D] as [H, B, D]
    a = FakeTensor([h, b, r], "bfloat16", strides=[r, h * r, 1])
    bb = FakeTensor([hg or h, dd, r], "bfloat16", strides=[dd * (r + 128), r + 128, 1])
    d = FakeTensor([h, b, dd], "bfloat16", strides=[dd, h * dd, 1])
    return a, bb, d


def test_extension_accepts_the_batched_layout(no_gpu):
    a, b, d = _fake_einsum_operands()
    with pytest.raises(RuntimeError) as info:
        qgemm._C.bf16_gemm(qgemm._C.KIND_BF16_BATCHED, a, b, d, None, None, 0, None, 0, 0)
    assert str(info.value) == no_gpu  # every check passed: the call reached the device layer


def test_extension_checks_the_batched_shapes(no_gpu):
    a, b, d = _fake_einsum_operands(hg=3)
    with pytest.raises(ValueError, match=r"G \(b.shape\[0\]\)"):
        qgemm._C.bf16_gemm(qgemm._C.KIND_BF16_BATCHED, a, b, d, None, None, 0, None, 0, 0)


@pytest.mark.parametrize("nt", [True, False])
def test_extension_makes_the_per_head_views(no_gpu, nt):
    """The batched kind's view flags (what einsum passes): x [B, H, R] and z [B, H, D] read as
    [H, B, .] (bit 0), y's last two dimensions swapped for NN (bit 1), made in C."""
    from fake_dlpack import FakeTensor
    b, h, r, dd = 100, 4, 256, 576
    x = FakeTensor([b, h, r], "bfloat16")
    if nt:  # y [H, D, R + 128][:, :, :R]
        y = FakeTensor([h, dd, r], "bfloat16", strides=[dd * (r + 128), r + 128, 1])
        z = FakeTensor([b, h, dd], "bfloat16")
    else:  # bhd,hdr->bhr: x [B, H, D=r], y [H, r, dd], z [B, H, dd]
        y = FakeTensor([h, r, dd], "bfloat16")
        z = FakeTensor([b, h, dd], "bfloat16")
    flags = 1 if nt else 3
    with pytest.raises(RuntimeError) as info:
        qgemm._C.bf16_gemm(qgemm._C.KIND_BF16_BATCHED, x, y, z, None, None, flags, None, 0, 0)
    assert str(info.value) == no_gpu  # every check passed on the swapped views
    # without the flags the same tensors are no batched GEMM (G = B != H, NN: K != D)
    with pytest.raises(ValueError, match=r"G \(b.shape\[0\]\)" if nt else "K"):
        qgemm._C.bf16_gemm(qgemm._C.KIND_BF16_BATCHED, x, y, z, None, None, 0, None, 0, 0)
    # a wrong d under the flags is still refused
    bad = FakeTensor([b, h, dd + 1], "bfloat16")
    with pytest.raises(ValueError):
        qgemm._C.bf16_gemm(qgemm._C.KIND_BF16_BATCHED, x, y, bad, None, None, flags, None, 0, 0)
    with pytest.raises(ValueError, match="view flags"):
        qgemm._C.bf16_gemm(qgemm._C.KIND_BF16_BATCHED, x, y, z, None, None, 4, None, 0, 0)


# ---- bmk,bnk->mn: the split of the batches -------------------------------------------------


@pytest.mark.parametrize("m,n,s,k,want", [
    (128, 384, 129, 128, 15),     # DeepGEMM's b=129: 3 tiles, 16 wanted -> 15 ranges of 9
    (256, 256, 8192, 256, 66),    # b=8192: 4 tiles, 66 ranges of 125 (the last 67)
    (384, 128, 4096, 384, 88),    # 3 tiles: 88 wanted -> 88 ranges of 47 (the last 7)
    (4096, 4096, 8, 1024, 1),     # 1024 tiles: one range
    (128, 128, 3, 128, 1),        # short K': one range
])
def test_bmk_splits(m, n, s, k, want):
    splits = E.bmk_splits(m, n, s, k)
    assert splits == want
    per = -(-s // splits)
    assert (splits - 1) * per < s <= splits * per  # no empty range (the C API's rule)


def test_extension_accepts_the_batch_sum_layout(no_gpu):
    from fake_dlpack import FakeTensor
    a = FakeTensor([129, 128, 128], "bfloat16")
    b = FakeTensor([129, 384, 128], "bfloat16")
    total, _ = qgemm._C.batch_sum_workspace_bytes(128, 384, 15)
    ws = FakeTensor([total // 4], "int32")
    kind = qgemm._C.KIND_BF16_BATCH_SUM
    for d in (FakeTensor([128, 384], "float32"), FakeTensor([128, 384], "bfloat16")):
        with pytest.raises(RuntimeError) as info:
            qgemm._C.bf16_gemm(kind, a, b, d, None, ws, 15, None, 0, 0)
        assert str(info.value) == no_gpu  # every check passed: the call reached the device layer
    d = FakeTensor([128, 384], "float32")
    with pytest.raises(RuntimeError) as info:  # C = D
        qgemm._C.bf16_gemm(kind, a, b, d, d, ws, 15, None, 0, 0)
    assert str(info.value) == no_gpu
    with pytest.raises(ValueError, match=r"\[M, N\]"):  # the batch sums' [splits, M, N] D
        qgemm._C.bf16_gemm(kind, a, b, FakeTensor([15, 128, 384], "float32"), None, ws, 15,
                           None, 0, 0)
    with pytest.raises(ValueError, match="workspace"):  # a 2-D workspace
        qgemm._C.bf16_gemm(kind, a, b, d, None, FakeTensor([2, total // 8], "int32"), 15, None,
                           0, 0)
    with pytest.raises(ValueError, match="int32"):  # a float workspace
        qgemm._C.bf16_gemm(kind, a, b, d, None, FakeTensor([total // 4], "float32"), 15, None,
                           0, 0)
    # (the workspace's size, NULL and the splits are the library's checks, which need a
    # device context: tests/test_bf16.c bf16_batch_sum_validation)


def test_extension_accepts_the_batch_sums_layout(no_gpu):
    from fake_dlpack import FakeTensor
    a = FakeTensor([129, 128, 128], "bfloat16")
    b = FakeTensor([129, 384, 128], "bfloat16")
    ws = FakeTensor([15, 128, 384], "float32")
    with pytest.raises(RuntimeError) as info:
        qgemm._C.bf16_gemm(qgemm._C.KIND_BF16_BATCH_SUMS, a, b, ws, None, None, 0, None, 0, 0)
    assert str(info.value) == no_gpu  # every check passed: the call reached the device layer
    bad = FakeTensor([15, 128, 384], "float32", strides=[128 * 400 + 64, 400, 1])  # not packed
    with pytest.raises(ValueError, match="packed"):
        qgemm._C.bf16_gemm(qgemm._C.KIND_BF16_BATCH_SUMS, a, b, bad, None, None, 0, None, 0, 0)


@pytest.mark.parametrize("m,n,s,k,sms,want", [
    (128, 384, 129, 128, 132, 43),   # 3 tiles: 44 CTAs a tile, 6 k-blocks = 3 batches each
    (256, 256, 129, 256, 132, 33),   # 4 tiles: 33 a tile, 16 k-blocks = 4 batches
    (384, 128, 4096, 384, 132, 44),  # 3 tiles: 44 a tile, 559 k-blocks -> 94 batches
    (128, 128, 3, 64, 132, 2),       # at least 2 k-blocks a split: 2 ranges (of 2 and 1)
    (4096, 4096, 8, 1024, 132, 1),   # 1024 tiles: one CTA per tile, one range
])
def test_bmk_splits_dg(m, n, s, k, sms, want):
    splits = E.bmk_splits_dg(m, n, s, k, sms)
    assert splits == want
    per = -(-s // splits)
    assert (splits - 1) * per < s <= splits * per  # no empty range (the C API's rule)


@pytest.mark.parametrize("m,n,s,k,sms,want", [
    (128, 384, 129, 128, 132, 65),    # 128x256 tiles: 2, 66 CTAs a tile, 4 k-blocks = 2 batches
    (256, 256, 4096, 256, 132, 66),   # 2 tiles: 66 a tile, 249 k-blocks -> 63 batches -> 66
    (384, 128, 8192, 384, 132, 66),   # 256x128 tiles: 2 (M > N), 745 k-blocks -> 125 batches
    (128, 128, 3, 64, 132, 2),        # at least 2 k-blocks a split
    (4096, 4096, 8, 1024, 132, 1),    # 256 wide tiles: one range
])
def test_bmk_splits_wide(m, n, s, k, sms, want):
    splits = E.bmk_splits_wide(m, n, s, k, sms)
    assert splits == want
    per = -(-s // splits)
    assert (splits - 1) * per < s <= splits * per  # no empty range (the C API's rule)


def test_bmk_splits_env(monkeypatch):
    """QGEMM_BMK_SPLITS: auto (bmk_splits below DG_RULE_MIN_BATCHES batches, bmk_splits_dg
    from there), tiles (bmk_splits), dg (bmk_splits_dg) or a count (made whole)."""
    monkeypatch.setattr(E, "bmk_splits_dg", lambda m, n, s, k, sms: ("dg", sms))
    monkeypatch.setattr(sys.modules["qgemm._runtime"], "get_num_sms", lambda device=None: 77)
    for v, want in (("", 15), ("auto", 15), (" AUTO ", 15), ("tiles", 15), ("dg", ("dg", 77)),
                    ("16", 15), ("4", 4), ("1", 1), ("500", 129)):
        monkeypatch.setenv(E.SPLITS_ENV, v)
        assert E._splits_of_env(128, 384, 129, 128) == want, v
    big = E.DG_RULE_MIN_BATCHES
    for v, want in (("", ("dg", 77)), ("auto", ("dg", 77)), ("tiles", E.bmk_splits(128, 384, big, 128))):
        monkeypatch.setenv(E.SPLITS_ENV, v)
        assert E._splits_of_env(128, 384, big, 128) == want, v
    for v in ("0", "-3", "two", "dg2"):
        monkeypatch.setenv(E.SPLITS_ENV, v)
        with pytest.raises(ValueError, match="QGEMM_BMK_SPLITS"):
            E._splits_of_env(128, 384, 129, 128)
    # the atomic reduction's auto: the same rule as the tree's
    for v in ("", "auto"):
        monkeypatch.setenv(E.SPLITS_ENV, v)
        assert E._splits_of_env(128, 384, 129, 128, atomic=True) == 15
        assert E._splits_of_env(128, 384, big, 128, atomic=True) == ("dg", 77)
    monkeypatch.setenv(E.SPLITS_ENV, "tiles")
    assert E._splits_of_env(128, 384, 129, 128, atomic=True) == 15
    monkeypatch.setattr(E, "bmk_splits_wide", lambda m, n, s, k, sms: ("wide", sms))
    monkeypatch.setenv(E.SPLITS_ENV, "wide")
    assert E._splits_of_env(128, 384, 129, 128) == ("wide", 77)


def test_bmk_bnk_mn_uses_the_split_env(monkeypatch):
    t = _torch()
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    monkeypatch.setenv(E.SPLITS_ENV, "4")
    s, m, n, k = 10, 24, 16, 8
    a, b = _rand(s, m, k), _rand(s, n, k)
    d = t.zeros(m, n)
    qdg.einsum("bmk,bnk->mn", a, b, d)
    (kind, _, _, _, _, ws, splits), = fake.calls
    assert splits == 4 and ws is None  # ranges of 3: 4 splits; FP32 d: the atomics' target
    ref = (a.double() @ b.double().mT).sum(0)
    assert calc_diff(d, ref) < 1e-5
    d16 = t.zeros(m, n, dtype=t.bfloat16)
    qdg.einsum("bmk,bnk->mn", a, b, d16)
    assert fake.calls[1][6] == 4 and fake.calls[1][5] is not None  # bf16 d: W


def test_fp8_einsum_batched_cpu_refusals(monkeypatch):
    """The batched default on CPU tensors: refused as the per-head loop refuses them
    (same message); _C.fp8_bmm names the operand and its expected shape."""
    t = _torch()
    if not hasattr(t, "float8_e4m3fn"):
        pytest.skip("torch without float8_e4m3fn")
    from qgemm import _C
    x = t.zeros(4, 8, 256).to(t.float8_e4m3fn)
    y = t.zeros(8, 128, 256).to(t.float8_e4m3fn)
    sx, sy = t.ones(4, 8, 2), t.ones(8, 1, 2)
    d = t.zeros(4, 8, 128, dtype=t.bfloat16)
    msgs = []
    for mode in ("loop", "batched"):
        monkeypatch.setenv("QGEMM_FP8_EINSUM", mode)  # ("batched": not "loop", the default)
        with pytest.raises(ValueError) as e:
            qgemm.fp8_einsum("bhr,hdr->bhd", (x, sx), (y, sy), d)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "CUDA device memory" in msgs[0]
    with pytest.raises(ValueError, match=r"\[G, M, K\]"):
        _C.fp8_bmm(x[0].view(t.uint8), sx, y.view(t.uint8), sy, d, None, 5, 0, 0)
    # the torch mode (no_sync bit 31) takes CUDA torch tensors only: anything else is
    # NotImplemented, having checked nothing (the DLPack path then decides)
    from qgemm import _dispatch as dsp
    assert _C.fp8_bmm(x, sx.view(4, 8, 2), y, sy, d, None, 0, 0, dsp.TORCH_MODE) is NotImplemented
    assert _C.fp8_bmm(x[0], sx, y, sy, d, None, 0, 0, dsp.TORCH_MODE) is NotImplemented


# ---- the plain calls' fast paths (issue 49: host cost) --------------------------------------


class _Recorder:
    """A stand-in for an extension entry point: records its arguments, answers `answer`."""

    def __init__(self, answer=None, action=None):
        self.calls, self.answer, self.action = [], answer, action

    def __call__(self, *args):
        self.calls.append(args)
        if self.action is not None:
            self.action(*args)
        return self.answer


@pytest.mark.parametrize("d_dtype,c_mode", [("float32", None), ("float32", "d"), ("bfloat16", None)])
@pytest.mark.parametrize("reduce", ["", "tree", "atomic"])
@pytest.mark.parametrize("splits_env", ["", "3", "dg"])
@pytest.mark.parametrize("s", [1, 6, 1100])
def test_bmk_fast_path_launches_what_the_whole_way_launches(monkeypatch, d_dtype, c_mode,
                                                            reduce, splits_env, s):
    """einsum('bmk,bnk->mn')'s fast path (_bmk_fast) hands _C.bf16_gemm exactly what the whole
    way hands launch_bf16 (kind, the tensors themselves, the same kept workspace, the split
    count under QGEMM_BMK_REDUCE / QGEMM_BMK_SPLITS), in the extension's torch mode."""
    t = _torch()
    import qgemm._runtime as runtime
    monkeypatch.setattr(runtime, "get_num_sms", lambda device=None: 132)
    monkeypatch.setattr(E, "SPLIT_MIN_K", 16)  # several splits at these small shapes
    for name, v in ((E.REDUCE_ENV, reduce), (E.SPLITS_ENV, splits_env)):
        if v:
            monkeypatch.setenv(name, v)
        else:
            monkeypatch.delenv(name, raising=False)
    m, n, k = 24, 16, 8
    a, b = _rand(s, m, k), _rand(s, n, k)
    d = t.zeros(m, n, dtype=getattr(t, d_dtype))
    c = d if c_mode == "d" else None
    # the whole way: on CPU tensors the extension's torch mode declines, launch_bf16 runs
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    qdg.einsum("bmk,bnk->mn", a, b, d, c=c)
    (kind, a1, b1, d1, c1, ws1, splits1), = fake.calls
    # the fast path: the extension (stubbed) takes the call
    rec = _Recorder()
    monkeypatch.setattr(qgemm._C, "bf16_gemm", rec)
    qdg.einsum("bmk,bnk->mn", a, b, d, c=c)
    assert len(fake.calls) == 1, "the fast path went the whole way"
    (args,) = rec.calls
    assert args[0] == kind and args[1] is a1 and args[2] is b1 and args[3] is d1
    assert args[4] is c1 and args[5] is ws1 and args[6] == splits1
    assert args[7:] == (None, 0, _dispatch.TORCH_MODE)


def test_bmk_fast_path_declines(monkeypatch):
    """What the fast path leaves to the whole way (which copies, words or refuses): a d the
    kernel cannot write in place, operands with a non-unit last stride, a c that is not d,
    use_cublaslt, other dtypes and shapes, and the extension's NotImplemented."""
    t = _torch()
    rec = _Recorder(answer=NotImplemented)
    monkeypatch.setattr(qgemm._C, "bf16_gemm", rec)
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    a, b = _rand(3, 16, 8), _rand(3, 24, 8)
    d = t.zeros(16, 24)
    bad = [(a, b, t.zeros(24, 16).T, None),            # d not addressable: the copy
           (_rand(3, 8, 16).mT, b, d, None),             # a's last stride 16: the copy
           (a, b, d, t.zeros(16, 24)),                   # c another tensor
           (a, b, t.zeros(16, 24, dtype=t.float16), None)]  # d half: the whole way's error
    for aa, bb, dd, cc in bad:
        try:
            qdg.einsum("bmk,bnk->mn", aa, bb, dd, c=cc)
        except ValueError as e:
            assert "float32 or bfloat16" in str(e)
    assert rec.calls == []  # none of them reached the fast path's launch
    assert len(fake.calls) == 3
    with pytest.raises(ValueError, match="no cuBLASLt path"):
        qdg.einsum("bmk,bnk->mn", a, b, d, use_cublaslt=True)
    qdg.einsum("bmk,bnk->mn", a, b, d)  # the extension declines: the whole way
    assert len(rec.calls) == 1 and len(fake.calls) == 4


@pytest.mark.parametrize("variant", ["", "old", "new", "sfkernel", "bf16cast"])
@pytest.mark.parametrize("batch,h,r,dd", [(3, 2, 256, 128), (1, 3, 384, 256), (130, 2, 128, 64),
                                          (4, 8, 640, 200)])
def test_fp8_einsum_fast_path_launches_what_the_whole_way_launches(monkeypatch, variant, batch,
                                                                   h, r, dd):
    """fp8_einsum's fast path (_fp8_fast) makes ONE extension call, _C.fp8_einsum_torch, with
    x, sfx, y, sfy and d themselves and the M-major storage of x's scales: by default a
    [B, H, kb] tensor holding sfx's values with strides (1, kb * ld, ld) (ld = B rounded up to
    4), whose [H, kb, B] view (what the extension reads) has the shape, strides and values of
    the sfa the whole way hands _C.fp8_bmm; under QGEMM_EINSUM_VARIANT=new / sfkernel a
    contiguous [H, kb, ld] tensor for the C call's transpose kernel to fill (flag
    FP8_EINSUM_SF_TRANSPOSE). The whole way's x and d are the [H, B, .] views the extension
    makes itself on the fast path (FP8_BMM_EINSUM_VIEWS there)."""
    t = _torch()
    if variant:
        monkeypatch.setenv(E.EINSUM_VARIANT_ENV, variant)
    else:
        monkeypatch.delenv(E.EINSUM_VARIANT_ENV, raising=False)
    monkeypatch.delenv("QGEMM_FP8_EINSUM", raising=False)
    monkeypatch.setattr(_dispatch, "TORCH_FP8_DLPACK", True)
    x, sfx, y, sfy = _fp8_inputs(batch, h, r, dd)
    z = t.full((batch, h, dd), 7.0, dtype=t.bfloat16)
    kb, ld = -(-r // 128), (batch + 3) // 4 * 4
    fast = _Recorder()
    monkeypatch.setattr(qgemm._C, "fp8_einsum_torch", fast)
    bmm = _Recorder()
    monkeypatch.setattr(qgemm._C, "fp8_bmm", bmm)
    assert qdg.fp8_einsum("bhr,hdr->bhd", (x, sfx), (y, sfy), z) is None  # the fast path
    assert bmm.calls == []
    (xa, sxa, yb, syb, d, sfa, flags), = fast.calls
    assert xa is x and sxa is sfx and yb is y and syb is sfy and d is z
    fast.answer = NotImplemented  # the extension declines: the whole way
    assert qdg.fp8_einsum("bhr,hdr->bhd", (x, sfx), (y, sfy), z) is None
    assert len(fast.calls) == 2
    (wx, wsfa, wy, wsfb, wd, cfg, e4, stream, no_sync), = bmm.calls
    assert wy is y and wsfb is sfy and e4 == 0 and no_sync == _dispatch.TORCH_MODE
    for mine, whole in ((x, wx), (z, wd)):  # the views the extension makes on the fast path
        mine = mine.permute(1, 0, 2)
        assert (mine.data_ptr(), mine.shape, mine.stride()) == \
            (whole.data_ptr(), whole.shape, whole.stride())
    assert wsfa.shape == (h, kb, batch) and wsfa.stride() == (kb * ld, ld, 1)
    assert t.equal(wsfa, sfx.permute(1, 2, 0))
    if variant in ("new", "sfkernel"):
        assert flags == qgemm._C.FP8_EINSUM_SF_TRANSPOSE
        assert sfa.shape == (h, kb, ld) and sfa.is_contiguous() and sfa.dtype == t.float32
        view = sfa[:, :, :batch]  # what the extension reads once its kernel wrote sfa
    else:
        assert flags == 0
        assert sfa.shape == (batch, h, kb) and sfa.stride() == (1, kb * ld, ld)
        assert sfa.dtype == t.float32 and t.equal(sfa, sfx)
        assert sfa.untyped_storage().nbytes() >= h * kb * ld * 4  # the whole [H, kb, ld]
        view = sfa.permute(1, 2, 0)
    assert view.shape == wsfa.shape and view.stride() == wsfa.stride()
    assert sfa.data_ptr() % 16 == 0
    assert (z == 7.0).all()  # (the stubbed GEMMs wrote nothing)


def test_fp8_einsum_fast_path_declines(monkeypatch):
    """What _fp8_fast leaves to the whole way before any extension call: a list for a pair,
    sfx of another dtype or shape (torch's copy would convert or broadcast it), x not 3-D,
    an empty B, H or R, QGEMM_FP8_EINSUM=loop; the whole way's errors are its own."""
    t = _torch()
    monkeypatch.setattr(_dispatch, "TORCH_FP8_DLPACK", True)
    monkeypatch.delenv(E.EINSUM_VARIANT_ENV, raising=False)
    fast = _Recorder()
    monkeypatch.setattr(qgemm._C, "fp8_einsum_torch", fast)
    x, sfx, y, sfy = _fp8_inputs(4, 2, 256, 128)
    z = t.zeros(4, 2, 128, dtype=t.bfloat16)
    assert E._fp8_fast([x, sfx], (y, sfy), z) is False
    assert E._fp8_fast((x, sfx.double()), (y, sfy), z) is False
    assert E._fp8_fast((x, sfx[:, :, :1]), (y, sfy), z) is False
    assert E._fp8_fast((x[0], sfx), (y, sfy), z) is False
    assert E._fp8_fast((x[:0], sfx[:0]), (y, sfy), z[:0]) is False
    monkeypatch.setenv("QGEMM_FP8_EINSUM", "loop")
    assert E._fp8_fast((x, sfx), (y, sfy), z) is False
    assert fast.calls == []


def test_bmk_fast_path_is_one_extension_call(monkeypatch):
    """einsum('bmk,bnk->mn')'s plain call is ONE call of _C.einsum_bmk_torch (a, b, d
    themselves, whether c is d, the split rule's constants) when it takes it; c another
    tensor or use_cublaslt never reach it; its NotImplemented falls to the Python fast path."""
    t = _torch()
    rec = _Recorder()
    monkeypatch.setattr(qgemm._C, "einsum_bmk_torch", rec)
    py = _Recorder(answer=NotImplemented)
    monkeypatch.setattr(qgemm._C, "bf16_gemm", py)
    a, b = _rand(3, 16, 8), _rand(3, 24, 8)
    d = t.full((16, 24), 5.0)
    assert qdg.einsum("bmk,bnk->mn", a, b, d) is None
    assert qdg.einsum("bmk,bnk->mn", a, b, d, c=d) is None
    rule = (E.SPLIT_TILES, E.SPLIT_MIN_K, E.MAX_BATCHES, E.DG_RULE_MIN_BATCHES)
    assert rec.calls == [(a, b, d, False) + rule, (a, b, d, True) + rule]
    assert py.calls == [] and (d == 5.0).all()
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    qdg.einsum("bmk,bnk->mn", a, b, d, c=t.zeros(16, 24))  # c another tensor: not here
    assert len(rec.calls) == 2 and len(fake.calls) == 1
    d16 = t.zeros(16, 24, dtype=t.bfloat16)  # a bf16 d: straight to the Python fast path
    qdg.einsum("bmk,bnk->mn", a, b, d16)
    assert len(rec.calls) == 2 and len(py.calls) == 1 and py.calls[0][3] is d16
    rec.answer = NotImplemented
    qdg.einsum("bmk,bnk->mn", a, b, d)  # declined: the Python fast path, then the whole way
    assert len(rec.calls) == 3 and len(py.calls) == 2 and len(fake.calls) == 3


def _python_default_splits(m, n, s, k, sms):
    if s < E.DG_RULE_MIN_BATCHES:
        return E.bmk_splits(m, n, s, k)
    return E.bmk_splits_dg(m, n, s, k, sms)


def test_bmk_default_splits_match_the_python_rules(monkeypatch):
    """The split rule einsum_bmk_torch applies in C (_C.bmk_default_splits) gives the count
    the Python rules give (bmk_splits below DG_RULE_MIN_BATCHES batches, bmk_splits_dg from
    there) over a grid of shapes, SM counts and constants (the fast path hands C the
    module's constants, which tests change)."""
    import itertools
    import random
    rng = random.Random(49)
    sizes = [1, 2, 63, 64, 127, 128, 129, 200, 384, 1000, 4096, 7168, 65536, 2**31 - 1]
    batches = [1, 2, 3, 8, 129, 1000, 1023, 1024, 1025, 4096, 8192, 100000, 2**31 - 1]
    ks = [0, 1, 8, 64, 65, 128, 129, 512, 7168, 2**31 - 1]
    cases = [(rng.choice(sizes), rng.choice(sizes), rng.choice(batches), rng.choice(ks),
              rng.choice([1, 78, 132, 144])) for _ in range(4000)]
    cases += list(itertools.product([128, 256], [384, 128], [129, 1024, 4096], [128, 256], [132]))
    for consts in ((264, 1024, 1024, 1024), (264, 16, 1024, 1024), (7, 3, 5, 2)):
        for name, v in zip(("SPLIT_TILES", "SPLIT_MIN_K", "MAX_BATCHES", "DG_RULE_MIN_BATCHES"),
                           consts):
            monkeypatch.setattr(E, name, v)
        for m, n, s, k, sms in cases:
            want = _python_default_splits(m, n, s, k, sms)
            got = qgemm._C.bmk_default_splits(m, n, s, k, sms, *consts)
            assert got == want, (m, n, s, k, sms, consts)
    with pytest.raises(ValueError):
        qgemm._C.bmk_default_splits(0, 1, 1, 1, 132, 264, 1024, 1024, 1024)
    with pytest.raises(ValueError):
        qgemm._C.bmk_default_splits(1, 1, 2**31, 1, 132, 264, 1024, 1024, 1024)


@pytest.fixture
def cuda_posing(monkeypatch):
    """CPU torch tensors the extension's torch mode takes for CUDA ones of device 0
    (torch.c reads is_cuda and get_device()), so that the fast entries' own checks run
    here: a call they take reaches the device layer (no GPU: the library's RuntimeError,
    before any stream or launch), one they decline answers NotImplemented."""
    t = _torch()
    _dispatch.register_torch()
    monkeypatch.setattr(t.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(t.Tensor, "get_device", lambda self: 0)
    return t


def _aligned(t, *shape, dtype):
    """A fresh tensor whose data starts 16-byte aligned (torch's CPU allocations are 64)."""
    x = t.zeros(*shape, dtype=dtype)
    assert x.data_ptr() % 16 == 0
    return x


def test_einsum_bmk_torch_takes_and_declines(monkeypatch, no_gpu, cuda_posing):
    t = cuda_posing
    bf, f32 = t.bfloat16, t.float32
    rule = (E.SPLIT_TILES, E.SPLIT_MIN_K, E.MAX_BATCHES, E.DG_RULE_MIN_BATCHES)
    for name in ("QGEMM_BMK_SPLITS", "QGEMM_BMK_REDUCE"):
        monkeypatch.delenv(name, raising=False)

    def call(a, b, d, c_is_d=False):
        return qgemm._C.einsum_bmk_torch(a, b, d, c_is_d, *rule)

    def taken(*args):
        with pytest.raises(RuntimeError) as info:
            call(*args)
        assert str(info.value) == no_gpu  # every check passed: the device layer refused

    a, b = _aligned(t, 129, 128, 128, dtype=bf), _aligned(t, 129, 384, 128, dtype=bf)
    d32, d16 = _aligned(t, 128, 384, dtype=f32), _aligned(t, 128, 384, dtype=bf)
    taken(a, b, d32)
    taken(a, b, d32, True)
    taken(a[:2, :, :8], b[:2, :, :8], d16)  # a bf16 d with one split: no workspace
    big_a, big_b = _aligned(t, 1100, 8, 64, dtype=bf), _aligned(t, 1100, 8, 64, dtype=bf)
    taken(big_a, big_b, _aligned(t, 8, 8, dtype=f32))  # bmk_splits_dg: the context's SMs
    declined = [
        (a, b, d16),                                  # bf16 d, 15 splits: a workspace to keep
        (a, b, d16, True),                            # c = d with a bf16 d
        (a, b, d32.half()),                           # d half
        (a.float(), b, d32),                          # a float32
        (a, b[:128], d32),                            # b's B
        (a, b[:, :, :64], d32),                       # b's K
        (a, b, d32[:, :383]),                         # d's N
        (a[:0], b[:0], d32),                          # B = 0
        (a[:, :0], b, d32[:0]),                       # M = 0
        (a.transpose(1, 2).contiguous().transpose(1, 2), b, d32),  # a's last stride 128
        (a[:, :, :127], b[:, :, :127], d32),          # (fine strides, K 127: taken below)
        (a, b[:, :3], _aligned(t, 128, 3, dtype=f32)),          # d rows of 12 bytes
        (a, b[:, :383], _aligned(t, 128, 384, dtype=f32)[:, 1:]),  # d starts 4 bytes in
        (a[0], b, d32),                               # a 2-D
        (a, b, d32.unsqueeze(0)),                     # d 3-D
        (None, b, d32), ([1], b, d32),                # not tensors
    ]
    for i, args in enumerate(declined):
        if i == 10:
            taken(*args)
            continue
        assert call(*args) is NotImplemented, i
    monkeypatch.setenv("QGEMM_BMK_SPLITS", "4")       # another split rule: Python's
    assert call(a, b, d32) is NotImplemented
    monkeypatch.setenv("QGEMM_BMK_SPLITS", "")
    taken(a, b, d32)
    monkeypatch.setenv("QGEMM_BMK_REDUCE", "tree")    # the tree's workspace: Python's
    assert call(a, b, d32) is NotImplemented
    taken(a[:2, :, :8], b[:2, :, :8], d32)            # (one split: none)
    monkeypatch.setenv("QGEMM_BMK_REDUCE", "atomic")
    taken(a, b, d32)
    with pytest.raises(ValueError, match="split rule"):
        qgemm._C.einsum_bmk_torch(a, b, d32, False, 0, 1, 1, 1)


def test_fp8_einsum_torch_takes_and_declines(no_gpu, cuda_posing):
    t = cuda_posing
    e4, f32, bf = t.float8_e4m3fn, t.float32, t.bfloat16
    flag = qgemm._C.FP8_EINSUM_SF_TRANSPOSE

    def ops(batch=3, h=2, r=256, dd=128):
        kb, ld = -(-r // 128), (batch + 3) // 4 * 4
        x, sfx = _aligned(t, batch, h, r, dtype=e4), _aligned(t, batch, h, kb, dtype=f32)
        y, sfy = _aligned(t, h, dd, r, dtype=e4), _aligned(t, h, -(-dd // 128), kb, dtype=f32)
        z = _aligned(t, batch, h, dd, dtype=bf)
        strided = t.empty_strided((ld, h, kb), (1, kb * ld, ld))[:batch]
        storage = _aligned(t, h, kb, ld, dtype=f32)
        return x, sfx, y, sfy, z, strided, storage

    def taken(*args):
        with pytest.raises(RuntimeError) as info:
            qgemm._C.fp8_einsum_torch(*args)
        assert str(info.value) == no_gpu

    for shape in ((3, 2, 256, 128), (4, 8, 640, 200), (1, 1, 128, 64)):
        x, sfx, y, sfy, z, strided, storage = ops(*shape)
        taken(x, sfx, y, sfy, z, strided, 0)
        taken(x, sfx, y, sfy, z, storage, flag)
        taken(x, sfx.transpose(0, 1).contiguous().transpose(0, 1), y, sfy, z, storage, flag)
    x, sfx, y, sfy, z, strided, storage = ops()
    bad = [
        (x.view(t.uint8), sfx, y, sfy, z, strided, 0),      # x not e4m3
        (x, sfx.double(), y, sfy, z, strided, 0),           # sfx float64
        (x, sfx, y, sfy, z.float(), strided, 0),            # d float32
        (x, sfx[:, :, :1], y, sfy, z, strided, 0),          # sfx's kb
        (x, sfx, y[:1], sfy[:1], z[:, :1], strided, 0),     # y's H
        (x, sfx, y, sfy[:, :, :1], z, strided, 0),          # sfy's kb
        (x, sfx, y, _aligned(t, 2, 1, 3, dtype=f32)[:, :, :2], z, strided, 0),  # sfy strided
        (x, sfx, y, sfy, z[:, :, :127], strided, 0),        # d's D
        (x, sfx, y, sfy, z.transpose(0, 1).contiguous().transpose(0, 1)[:, :, :], strided, 0),
        (x, sfx, y, sfy, z, storage, 0),                    # the storage without the flag
        (x, sfx, y, sfy, z, strided, flag),                 # the view with the flag
        (x, sfx, y, sfy, z, storage[:, :, :3], flag),       # storage rows not ld
        (x, sfx, y, sfy, z, strided.contiguous(), 0),       # the scales not transposed
        (x[:0], sfx[:0], y, sfy, z[:0], strided[:0], 0),    # B = 0
        (x, sfx, y[:, :0], sfy[:, :0], z[:, :, :0], strided, 0),  # D = 0
        (x, sfx, y, sfy, None, strided, 0),                 # not a tensor
    ]
    for i, args in enumerate(bad):
        if i == 8:  # d [B, H, D] with other strides: taken (only the last stride matters)
            taken(*args)
            continue
        assert qgemm._C.fp8_einsum_torch(*args) is NotImplemented, i
    with pytest.raises(ValueError, match="flags"):
        qgemm._C.fp8_einsum_torch(x, sfx, y, sfy, z, strided, 2)
    # the flag's sfa storage is written first: refused where it shares bytes with any operand
    h, kb, ld = storage.shape
    for name, other in (("x", x), ("y", y), ("d", z)):
        alias = other.view(-1).view(t.uint8)[:h * kb * ld * 4].view(f32).view(h, kb, ld)
        with pytest.raises(ValueError, match="overlaps"):
            qgemm._C.fp8_einsum_torch(x, sfx, y, sfy, z, alias, flag)


def _same_error(call_fast, call_checked):
    """Both calls raise, the same exception type and message."""
    errs = []
    for call in (call_fast, call_checked):
        with pytest.raises(Exception) as info:
            call()
        errs.append((type(info.value), str(info.value)))
    assert errs[0] == errs[1]
    return errs[0]


def test_fast_and_checked_ways_raise_the_same_errors(monkeypatch, cuda_posing):
    """Bad arguments of the plain calls on tensors the fast entries take (CUDA-posing CPU
    tensors): the fast path declines them, so the checked way words the error: the same
    exception and message as with the fast paths disabled, d never written."""
    t = cuda_posing
    bf, f32, e4 = t.bfloat16, t.float32, t.float8_e4m3fn
    monkeypatch.setattr(_dispatch, "TORCH_FP8_DLPACK", True)
    monkeypatch.delenv(E.EINSUM_VARIANT_ENV, raising=False)
    monkeypatch.delenv("QGEMM_FP8_EINSUM", raising=False)
    a, b = _aligned(t, 5, 16, 64, dtype=bf), _aligned(t, 5, 24, 64, dtype=bf)
    d = t.full((16, 24), 3.0)
    bmk_bad = [(a, b, d.half(), None), (a.float(), b, d, None), (a, b[:4], d, None),
               (a, b[:, :, :32], d, None), (a, b, d[:, :23], None), (a[0], b, d, None),
               (a, b, d.to(bf), d.to(bf))]
    for aa, bb, dd, cc in bmk_bad:
        fast = (lambda: qdg.einsum("bmk,bnk->mn", aa, bb, dd, c=cc))
        with monkeypatch.context() as m:
            m.setattr(E, "_bmk_fast", lambda *args: False)
            checked_err = None
            try:
                qdg.einsum("bmk,bnk->mn", aa, bb, dd, c=cc)
            except Exception as e:  # noqa: BLE001
                checked_err = (type(e), str(e))
        with pytest.raises(Exception) as info:
            fast()
        assert checked_err == (type(info.value), str(info.value))
    assert (d == 3.0).all()
    x, sfx = _aligned(t, 4, 2, 256, dtype=e4), _aligned(t, 4, 2, 2, dtype=f32)
    y, sfy = _aligned(t, 2, 128, 256, dtype=e4), _aligned(t, 2, 1, 2, dtype=f32)
    z = t.full((4, 2, 128), 3.0, dtype=bf)
    fp8_bad = [((x, sfx.double()), (y, sfy), z), ((x, sfx[:, :, :1]), (y, sfy), z),
               ((x, sfx), (y[:1], sfy[:1]), z), ((x, sfx), (y, sfy[:, :, :1]), z),
               ((x, sfx), (y, sfy), z[:, :, :100]), ((x, sfx), (y, sfy), z.float()),
               ((x.to(bf), sfx), (y, sfy), z), ((x, sfx), (y, sfy), z[:, :1])]
    for variant in ("old", "sfkernel"):
        monkeypatch.setenv(E.EINSUM_VARIANT_ENV, variant)
        for aa, bb, zz in fp8_bad:
            with monkeypatch.context() as m:
                m.setattr(E, "_fp8_fast", lambda *args: False)
                with pytest.raises(Exception) as info:
                    qdg.fp8_einsum("bhr,hdr->bhd", aa, bb, zz)
                checked_err = (type(info.value), str(info.value))
            with pytest.raises(Exception) as info:
                qdg.fp8_einsum("bhr,hdr->bhd", aa, bb, zz)
            assert checked_err == (type(info.value), str(info.value))
    assert (z == 3.0).all()


@pytest.mark.parametrize("s,m,n,k,fp32,c_is_d", [
    (129, 128, 384, 128, True, True),     # DeepGEMM's b=129 row: 15 splits, atomics into d
    (129, 128, 384, 128, True, False),
    (4, 200, 136, 64, True, True),        # one split: bitwise
    (4, 200, 136, 64, False, False),      # a bf16 d (one split): the Python fast path
    (129, 200, 136, 64, False, False),    # a bf16 d with splits: the Python fast path
    (2048, 256, 256, 64, True, True),     # from DG_RULE_MIN_BATCHES: the SM-count rule in C
])
def test_gpu_bmk_fast_matches_checked(monkeypatch, s, m, n, k, fp32, c_is_d):
    """einsum('bmk,bnk->mn')'s fast path against the checked way on the GPU: the same split
    count and kernel, so bitwise the same d where the sum is deterministic (one split, or
    the tree), and within the atomics' reordering (calc_diff < 1e-9) where the splits meet in
    FP32 atomics; both against float64; the C entry took the FP32 ones (a bf16 d never
    reaches it: the Python fast path keeps its workspace)."""
    t = _gpu()
    for name in ("QGEMM_BMK_SPLITS", "QGEMM_BMK_REDUCE", "QGEMM_EINSUM_VARIANT"):
        monkeypatch.delenv(name, raising=False)
    a = t.randn((s, m, k), dtype=t.bfloat16, device="cuda")
    b = t.randn((s, n, k), dtype=t.bfloat16, device="cuda")
    dt = t.float32 if fp32 else t.bfloat16
    d0 = t.randn((m, n), dtype=dt, device="cuda") if c_is_d else \
        t.full((m, n), float("nan"), dtype=dt, device="cuda")
    ref = t.einsum("bmk,bnk->mn", a.double(), b.double()) + (d0.double() if c_is_d else 0)
    taken = []
    real = qgemm._C.einsum_bmk_torch
    monkeypatch.setattr(qgemm._C, "einsum_bmk_torch",
                        lambda *args: taken.append(real(*args)) or taken[-1])
    outs = []
    for fast in (True, False):
        with monkeypatch.context() as mp:
            if not fast:
                mp.setattr(E, "_bmk_fast", lambda *args: False)
            d = d0.clone()
            assert qdg.einsum("bmk,bnk->mn", a, b, d, c=d if c_is_d else None) is None
            t.cuda.synchronize()
            assert calc_diff(d, ref) < 1e-5
            outs.append(d)
    splits = qgemm._C.bmk_default_splits(m, n, s, k, qgemm.get_num_sms(), E.SPLIT_TILES,
                                         E.SPLIT_MIN_K, E.MAX_BATCHES, E.DG_RULE_MIN_BATCHES)
    assert taken == ([None] if fp32 else []), taken
    if splits == 1:
        assert t.equal(outs[0].view(t.int16 if not fp32 else t.int32),
                       outs[1].view(t.int16 if not fp32 else t.int32))
    else:
        assert calc_diff(outs[0], outs[1]) < 1e-9


@pytest.mark.parametrize("variant", ["old", "sfkernel"])
@pytest.mark.parametrize("batch,h,r,dd", [(4, 8, 4096, 1024), (3, 8, 640, 200), (130, 2, 128, 512)])
def test_gpu_fp8_einsum_fast_matches_checked(monkeypatch, variant, batch, h, r, dd):
    """fp8_einsum's fast path (one extension call: torch's scale copy before it, or the
    transpose kernel inside it) against the checked way: bitwise the same d (the same
    batched GEMM on the same scale values), d's padding between heads untouched, the C entry
    taking the call; B = 3 and 130: ld != B (the storage's padding rows)."""
    t = _gpu()
    monkeypatch.setenv("QGEMM_EINSUM_VARIANT", variant)
    monkeypatch.delenv("QGEMM_FP8_EINSUM", raising=False)
    x = t.randn((batch, h, r), device="cuda", dtype=t.bfloat16)
    y = t.randn((h, dd, r), device="cuda", dtype=t.bfloat16)
    xq, sx = qgemm.per_token_cast_to_fp8(x.view(-1, r), use_ue8m0=False)
    xq, sx = xq.view(batch, h, r), sx.view(batch, h, -1)
    yq = t.empty_like(y, dtype=t.float8_e4m3fn)
    sy = t.empty((h, -(-dd // 128), -(-r // 128)), device="cuda", dtype=t.float)
    for i in range(h):
        yq[i], sy[i] = qgemm.per_block_cast_to_fp8(y[i], use_ue8m0=False)
    ref = t.einsum("bhr,hdr->bhd", dequant_a(xq, sx), dequant_b(yq, sy))
    qdg.fp8_einsum("bhr,hdr->bhd", (xq, sx), (yq, sy), t.empty((batch, h, dd), device="cuda",
                                                               dtype=t.bfloat16))  # (warm)
    taken = []
    real = qgemm._C.fp8_einsum_torch
    monkeypatch.setattr(qgemm._C, "fp8_einsum_torch",
                        lambda *args: taken.append(real(*args)) or taken[-1])
    outs = []
    for fast in (True, False):
        with monkeypatch.context() as mp:
            if not fast:
                mp.setattr(E, "_fp8_fast", lambda *args: False)
            wide = t.full((batch, h, dd + 8), -1234.0, device="cuda", dtype=t.bfloat16)
            z = wide[:, :, :dd]
            assert qdg.fp8_einsum("bhr,hdr->bhd", (xq, sx), (yq, sy), z) is None
            t.cuda.synchronize()
            assert (wide[:, :, dd:] == -1234.0).all()
            assert calc_diff(z, ref) < 1e-5
            outs.append(z.clone())
    assert taken == [None]
    assert t.equal(outs[0].view(t.int16), outs[1].view(t.int16))


def test_fp8_einsum_variant_env_is_checked(monkeypatch):
    t = _torch()
    monkeypatch.setattr(_dispatch, "TORCH_FP8_DLPACK", True)
    monkeypatch.setattr(qgemm._C, "fp8_bmm", _Recorder())
    x, sfx, y, sfy = _fp8_inputs(4, 2, 256, 128)
    z = t.zeros(4, 2, 128, dtype=t.bfloat16)
    monkeypatch.setenv(E.EINSUM_VARIANT_ENV, "newer")
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(E, "_fp8_fast", lambda *args: False)
        with pytest.raises(ValueError, match="QGEMM_EINSUM_VARIANT='newer' must be old, new or"):
            qdg.fp8_einsum("bhr,hdr->bhd", (x, sfx), (y, sfy), z)
    assert (z == 0).all()


@pytest.mark.parametrize("variant", ["bf16cast", "new", "sfkernel+bf16cast"])
@pytest.mark.parametrize("s", [1, 6, 40])
def test_bmk_bf16cast_variant(monkeypatch, variant, s):
    """QGEMM_EINSUM_VARIANT=bf16cast (or new): a bfloat16 d with more than one split under
    the atomic reduction is DeepGEMM's composition: the FP32 batch sum into a kept FP32
    scratch (c None: the library zeroes it), then torch's cast into d; the whole way and
    the fast path launch the same; one split (or the tree) is the default's launch."""
    t = _torch()
    monkeypatch.setenv(E.EINSUM_VARIANT_ENV, variant)
    monkeypatch.delenv(E.REDUCE_ENV, raising=False)
    monkeypatch.delenv(E.SPLITS_ENV, raising=False)
    monkeypatch.setattr(E, "SPLIT_MIN_K", 16)
    m, n, k = 24, 16, 8
    a, b = _rand(s, m, k), _rand(s, n, k)
    ref = (a.double() @ b.double().mT).sum(0)
    splits = E.bmk_splits(m, n, s, k)
    fake = FakeBF16()
    monkeypatch.setattr(_dispatch, "launch_bf16", fake)
    d = t.full((m, n), 3.0, dtype=t.bfloat16)
    qdg.einsum("bmk,bnk->mn", a, b, d)  # (CPU tensors: the whole way)
    assert calc_diff(d, ref) < 1e-5
    (kind, _, _, w, c, ws, sp), = fake.calls
    assert sp == splits and c is None and ws is None
    if splits > 1:
        assert w is not d and w.dtype == t.float32 and w.shape == (m, n) and w.is_contiguous()
        assert t.equal(d, w.to(t.bfloat16))
    else:
        assert w is d
    rec = _Recorder(action=lambda kind, a_, b_, d_, c_, *rest: fake(kind, a_, b_, d_, c_, rest[0],
                                                                     rest[1], None, None))
    monkeypatch.setattr(qgemm._C, "bf16_gemm", rec)
    d2 = t.full((m, n), 3.0, dtype=t.bfloat16)
    qdg.einsum("bmk,bnk->mn", a, b, d2)  # the fast path, the stub computing as the fake
    assert len(rec.calls) == 1 and t.equal(d2, d)
    got = rec.calls[0]
    assert got[0] == kind and got[4] is None and got[5] is None and got[6] == splits
    assert (got[3] is d2) == (splits == 1)
    if splits > 1:
        assert got[3].data_ptr() == w.data_ptr()  # the kept scratch
    monkeypatch.setenv(E.REDUCE_ENV, "tree")  # the tree: the default's launch
    qdg.einsum("bmk,bnk->mn", a, b, d2)
    assert rec.calls[-1][3] is d2


@pytest.mark.parametrize("expr", ["bhr,hdr->bhd", "bhd,hdr->bhr", "xyz, ywz -> xyw"])
@pytest.mark.parametrize("batch,h", [(4, 2), (1, 1), (3, 5)])
def test_per_head_fast_path_launches_what_the_whole_way_launches(monkeypatch, expr, batch, h):
    """The per-head expressions' fast path (_per_head_fast) hands _C.bf16_gemm what the whole
    way hands launch_bf16: the batched kind, a, b and d themselves (b a [:, :, :r] view), the
    view flags (1: bhr,hdr->bhd, 3: bhd,hdr->bhr), in the extension's torch mode; what it
    does not take (a c, use_cublaslt, a bad shape, the extension's NotImplemented) goes the
    whole way."""
    t = _torch()
    nt = parse_expr(expr)[0] == BHR_HDR_BHD
    r, dd = 16, 8
    x = _rand(batch, h, r if nt else dd)
    fy = _rand(h, dd, r + 8)
    y = fy[:, :, :r] if nt else _rand(h, dd, r)
    z = t.zeros(batch, h, dd if nt else r, dtype=t.bfloat16)
    fake, raw = FakeBF16(), []
    monkeypatch.setattr(_dispatch, "launch_bf16",
                        lambda *args: raw.append(args[:7]) or fake(*args))
    qgemm.einsum(expr, x, y, z)  # CPU tensors: the extension declines, the whole way
    assert calc_diff(z, t.einsum("bhr,hdr->bhd" if nt else "bhd,hdr->bhr", x.double(),
                                 y.double())) < 1e-5
    (kind, a1, b1, d1, c1, idx1, flags1), = raw
    rec = _Recorder()
    monkeypatch.setattr(qgemm._C, "bf16_gemm", rec)
    qgemm.einsum(expr, x, y, z)
    assert len(raw) == 1, "the fast path went the whole way"
    (args,) = rec.calls
    assert args[0] == kind == qgemm._C.KIND_BF16_BATCHED and args[6] == flags1 == (1 if nt else 3)
    assert args[1] is a1 is x and args[2] is b1 is y and args[3] is d1 is z
    assert args[4] is None is c1 and args[5] is None is idx1
    assert args[7:] == (None, 0, _dispatch.TORCH_MODE)
    with pytest.raises(ValueError, match="takes no c"):
        qgemm.einsum(expr, x, y, z, c=z)
    with pytest.raises(ValueError):
        qgemm.einsum(expr, x, y, z[:, :, :-1])
    qgemm.einsum(expr, x, y, z, use_cublaslt=True)
    assert len(rec.calls) == 1 and len(raw) == 1
    rec.answer = NotImplemented
    qgemm.einsum(expr, x, y, z)
    assert len(rec.calls) == 2 and len(raw) == 2


@pytest.mark.parametrize("variant", ["old", "bf16cast"])
@pytest.mark.parametrize("fp32", [True, False])
def test_gpu_bmk_graph_replay(monkeypatch, variant, fp32):
    """einsum('bmk,bnk->mn') captured in a CUDA graph (the fast path's workspace, or the
    bf16cast variant's FP32 scratch, from the graph's pool) and replayed on new values in
    the same buffers, with an eager call on the same stream between the replays (its kept
    workspace / scratch must not be the graph's): each against float64."""
    t = _gpu()
    monkeypatch.setenv("QGEMM_EINSUM_VARIANT", variant)
    monkeypatch.delenv("QGEMM_BMK_REDUCE", raising=False)
    s, m, n, k = 129, 200, 136, 64
    dt = t.float32 if fp32 else t.bfloat16

    def make():
        return (t.randn((s, m, k), dtype=t.bfloat16, device="cuda"),
                t.randn((s, n, k), dtype=t.bfloat16, device="cuda"))

    a, b = make()
    d = t.full((m, n), float("nan"), dtype=dt, device="cuda")
    if fp32:
        d.zero_()
    qdg.einsum("bmk,bnk->mn", a, b, d)  # warm-up: the JIT outside the graph
    t.cuda.synchronize()
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        qdg.einsum("bmk,bnk->mn", a, b, d)
    for _ in range(2):
        na, nb = make()
        a.copy_(na)
        b.copy_(nb)
        d.fill_(float("nan"))
        graph.replay()
        a2, b2 = make()
        d2 = t.full((m, n), float("nan"), dtype=dt, device="cuda")
        qdg.einsum("bmk,bnk->mn", a2, b2, d2)  # eager, between the replays
        t.cuda.synchronize()
        assert calc_diff(d, t.bmm(a.double(), b.double().mT).sum(0)) < 1e-5
        assert calc_diff(d2, t.bmm(a2.double(), b2.double().mT).sum(0)) < 1e-5
