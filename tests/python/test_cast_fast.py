"""The casts' fast path (_C.cast_new, issue 51: a small cast's host cost): it returns what
the checked path returns -- shapes, strides, dtypes and bytes -- and on input it does not
take it declines (NotImplemented) having done nothing, so errors and torch fallbacks are
the checked path's. QGEMM_CAST_VARIANT=checked turns the fast path off (the comparison's
other side), also beside kernel words (all+lean: the kernels without ring and lut). The
GPU comparisons skip without a GPU."""
from __future__ import annotations

import random

import pytest

from qgemm import _C, cast

torch = pytest.importorskip("torch")

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")

KINDS = (_C.CAST_PER_TOKEN, _C.CAST_PER_BLOCK, _C.CAST_PER_CHANNEL, _C.CAST_SILU_MUL)


# ---- CPU: what the fast path declines ---------------------------------------------------------


def test_cast_new_arguments():
    x = torch.zeros(4, 256, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="takes 6 arguments"):
        _C.cast_new(_C.CAST_PER_TOKEN, x, False, False, None)
    with pytest.raises(ValueError, match="unknown cast kind"):
        _C.cast_new(9, x, False, False, None, None)
    with pytest.raises(ValueError, match="unknown cast kind"):
        _C.cast_new(_C.CAST_SF_MN_MAJOR, x, False, False, None, None)


@pytest.mark.parametrize("kind", KINDS)
def test_cast_new_declines_what_it_does_not_take(kind):
    """CPU tensors, other objects, non-bool flags, layouts for silu only: NotImplemented,
    never an exception (the checked path words every refusal)."""
    x = torch.randn(256, 256, dtype=torch.bfloat16)
    idx = torch.zeros(256, dtype=torch.int32)
    for args in ((x, False, False, None, None), (x, True, False, None, None),
                 ([1.0], False, False, None, None), (None, False, False, None, None),
                 (x, 1, False, None, None), (x, False, 0, None, None),
                 (x, "no", False, None, None), (x, False, True, None, None),
                 (x.view(1, 256, 256), False, False, idx[:1], None),
                 (x, False, False, None, idx), (x, False, False, idx, idx),
                 (x.float(), False, False, None, None), (x.to(torch.float16), False, False, None, None),
                 (torch.zeros(0, 256, dtype=torch.bfloat16), False, False, None, None)):
        assert _C.cast_new(kind, *args) is NotImplemented, (kind, args)
    assert _C.cast_new(kind, torch.empty(256, 256, dtype=torch.bfloat16, device="meta"),
                       False, False, None, None) is NotImplemented


# ---- GPU: the fast path against the checked path ------------------------------------------------


def _bits(t):
    t = t.cpu()
    if t.dtype == torch.float8_e4m3fn:
        return t.view(torch.uint8)
    if t.dtype == torch.float32:
        return t.view(torch.int32)
    return t


def _outcome(fn):
    """("ok", [(shape, strides, dtype, bits)...]) or ("error", type, message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - compared across the two paths
        return ("error", type(e), str(e))
    torch.cuda.synchronize()
    return ("ok", [(tuple(t.shape), t.stride(), t.dtype, t.device, _bits(t)) for t in out])


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1:] == b[1:]
        return
    assert len(a[1]) == len(b[1])
    for x, y in zip(a[1], b[1]):
        assert x[:4] == y[:4], (x[:4], y[:4])
        assert torch.equal(x[4], y[4]), f"{(x[4] != y[4]).sum().item()} values differ"


def _compare(monkeypatch, fn, taken=None):
    """fn under the fast path (the default kernels, and all+lean's) against
    QGEMM_CAST_VARIANT=checked;
    taken: the fast path's own call, asserted to run (not declined) for this input."""
    monkeypatch.setenv("QGEMM_CAST_VARIANT", "checked")
    want = _outcome(fn)
    for v in (None, "all+lean"):
        if v is None:
            monkeypatch.delenv("QGEMM_CAST_VARIANT", raising=False)
        else:
            monkeypatch.setenv("QGEMM_CAST_VARIANT", v)
        if taken is not None:
            assert taken() is not NotImplemented
        _same(_outcome(fn), want)
    monkeypatch.delenv("QGEMM_CAST_VARIANT", raising=False)
    return want


def _x(shape, dtype, seed):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape, generator=gen) * torch.exp(3 * torch.randn(*shape[:-1], 1,
                                                                      generator=gen))
    if x.numel() > 1000:
        x.view(-1)[17] = float("inf")
        x.view(-1)[x.numel() // 2] = float("nan")
    return x.to(dtype).cuda()


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("shape", [(64, 7168), (1, 128), (130, 100), (3, 5, 200), (7, 1, 300)])
def test_gpu_per_token_fast_equals_checked(monkeypatch, dtype, ue8m0, shape):
    x = _x(shape, dtype, random.randrange(2**31))
    _compare(monkeypatch, lambda: cast.per_token_cast_to_fp8(x, use_ue8m0=ue8m0),
             lambda: _C.cast_new(_C.CAST_PER_TOKEN, x, ue8m0, False, None, None))
    # rows wider apart than k (a column slice): read in place, no copy
    xs = _x((shape[0], shape[-1] + 3), dtype, 5)[:, 1:-2]
    _compare(monkeypatch, lambda: cast.per_token_cast_to_fp8(xs, use_ue8m0=ue8m0),
             lambda: _C.cast_new(_C.CAST_PER_TOKEN, xs, ue8m0, False, None, None))


@needs_gpu
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("shape", [(512, 7168), (300, 500), (2, 130, 256), (1, 1, 64)])
def test_gpu_per_block_fast_equals_checked(monkeypatch, ue8m0, shape):
    x = _x(shape, torch.bfloat16, random.randrange(2**31))
    _compare(monkeypatch, lambda: cast.per_block_cast_to_fp8(x, use_ue8m0=ue8m0),
             lambda: _C.cast_new(_C.CAST_PER_BLOCK, x, ue8m0, False, None, None))


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(256, 2048), (128, 300)])
def test_gpu_per_channel_fast_equals_checked(monkeypatch, dtype, shape):
    x = _x(shape, dtype, random.randrange(2**31))
    _compare(monkeypatch, lambda: cast.per_channel_cast_to_fp8(x),
             lambda: _C.cast_new(_C.CAST_PER_CHANNEL, x, False, False, None, None))


@needs_gpu
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("layout", ["plain", "plain3d", "masked", "indices"])
@pytest.mark.parametrize("mn_major", [False, True])
def test_gpu_silu_fast_equals_checked(monkeypatch, ue8m0, layout, mn_major):
    g, m, n = 3, 70, 300
    shape = {"plain": (m, 2 * n), "plain3d": (g, m, 2 * n), "masked": (g, m, 2 * n),
             "indices": (g * m, 2 * n)}[layout]
    x = _x(shape, torch.bfloat16, random.randrange(2**31))
    masked = torch.tensor([m, 0, 17], dtype=torch.int32, device="cuda") \
        if layout == "masked" else None
    idx = (torch.arange(g * m, dtype=torch.int32, device="cuda") % 5) - 1 \
        if layout == "indices" else None
    if masked is not None or idx is not None:
        # the rows the kernel skips hold unspecified bytes (each path allocates its own
        # outputs): their metadata and the computed rows' bytes are compared
        def fn():
            q, sf = cast.silu_and_mul_fp8_quant(x, use_ue8m0=ue8m0, masked_m=masked,
                                                m_indices=idx, sf_mn_major=mn_major)
            keep = _rows_kept(masked, idx, x.shape)
            return (q, sf, q[keep].contiguous(), sf[keep].contiguous())
        taken = (lambda: _C.cast_new(_C.CAST_SILU_MUL, x, ue8m0, mn_major, masked, idx))
        monkeypatch.setenv("QGEMM_CAST_VARIANT", "checked")
        want = _outcome(fn)
        for v in (None, "all+lean"):
            if v is None:
                monkeypatch.delenv("QGEMM_CAST_VARIANT", raising=False)
            else:
                monkeypatch.setenv("QGEMM_CAST_VARIANT", v)
            assert taken() is not NotImplemented
            got = _outcome(fn)
            assert got[0] == want[0] == "ok"
            for a, b in zip(got[1][:2], want[1][:2]):  # metadata of q, sf
                assert a[:4] == b[:4]
            for a, b in zip(got[1][2:], want[1][2:]):  # bytes of the computed rows
                assert a[:4] == b[:4] and torch.equal(a[4], b[4])
        return
    _compare(monkeypatch, lambda: cast.silu_and_mul_fp8_quant(x, use_ue8m0=ue8m0,
                                                                sf_mn_major=mn_major),
             lambda: _C.cast_new(_C.CAST_SILU_MUL, x, ue8m0, mn_major, None, None))


def _rows_kept(masked, idx, shape):
    if masked is not None:
        g, m = shape[0], shape[1]
        rows = torch.arange(m, device="cuda").expand(g, m)
        return rows < masked.long().unsqueeze(1)
    return idx >= 0


@needs_gpu
def test_gpu_fast_path_outputs_are_fresh_and_separate():
    """One buffer holds q and sf: writing one never changes the other, and each call's
    outputs are new memory."""
    x = _x((64, 1024), torch.bfloat16, 3)
    q, sf = cast.per_token_cast_to_fp8(x)
    q2, sf2 = cast.per_token_cast_to_fp8(x)
    assert q.data_ptr() != q2.data_ptr() and sf.data_ptr() != sf2.data_ptr()
    sf_before = sf.clone()
    q.view(torch.uint8).fill_(0x7E)
    torch.cuda.synchronize()
    assert torch.equal(sf.view(torch.int32), sf_before.view(torch.int32))
    assert q.is_contiguous() and sf.is_contiguous() and sf.data_ptr() % 256 == 0


@needs_gpu
def test_gpu_same_errors_and_fallbacks(monkeypatch):
    """Input the fast path declines gives the checked path's result or exception."""
    x = _x((256, 512), torch.bfloat16, 11)
    i32 = torch.int32
    cases = [
        lambda: cast.per_channel_cast_to_fp8(x[:100]),                       # M not 128k
        lambda: cast.per_token_cast_to_fp8(x, gran_k=64),
        lambda: cast.per_token_cast_to_fp8(x, use_packed_ue8m0=True),
        lambda: cast.per_token_cast_to_fp8(x, use_ue8m0=1),                  # int flag: checked
        lambda: cast.per_token_cast_to_fp8(x, use_ue8m0="yes"),              # TypeError
        lambda: cast.per_token_cast_to_fp8(x.to(torch.float16)),             # torch formulas
        lambda: cast.per_token_cast_to_fp8(x.t()),                           # a copy first
        lambda: cast.per_token_cast_to_fp8(x[:1].expand(4, 512)),            # zero stride
        lambda: cast.per_block_cast_to_fp8(x[0]),                            # 1-D: ValueError
        lambda: cast.silu_and_mul_fp8_quant(x[:, :511]),                     # odd width
        lambda: cast.silu_and_mul_fp8_quant(x.view(2, 128, 512),
                                            masked_m=torch.zeros(2, dtype=torch.int64,
                                                                 device="cuda")),
        lambda: cast.silu_and_mul_fp8_quant(x.view(2, 128, 512),
                                            masked_m=torch.full((2,), 3, dtype=i32)),  # CPU
        lambda: cast.silu_and_mul_fp8_quant(x, m_indices=torch.zeros(512, dtype=i32,
                                                                     device="cuda")[::2]),
        lambda: cast.silu_and_mul_fp8_quant(x, masked_m=torch.zeros(256, dtype=i32,
                                                                    device="cuda")),
        lambda: cast.silu_and_mul_fp8_quant(x.view(2, 2, 64, 512), sf_mn_major=True),
    ]
    for i, fn in enumerate(cases):
        monkeypatch.setenv("QGEMM_CAST_VARIANT", "checked")
        want = _outcome(fn)
        monkeypatch.delenv("QGEMM_CAST_VARIANT")
        got = _outcome(fn)
        try:
            _same(got, want)
        except AssertionError as e:
            raise AssertionError(f"case {i}: {e}") from e
    # a bad knob value: the library's refusal, word for word, on both paths
    for v in ("bogus", "base+all"):
        monkeypatch.setenv("QGEMM_CAST_VARIANT", v)
        fast = _outcome(lambda: cast.per_token_cast_to_fp8(x))
        monkeypatch.setenv("QGEMM_CAST_VARIANT", v + "+checked")
        checked = _outcome(lambda: cast.per_token_cast_to_fp8(x))
        assert fast[0] == checked[0] == "error" and fast[1] is checked[1]
        assert fast[2].replace(v, "V") == checked[2].replace(v + "+checked", "V")


@needs_gpu
def test_gpu_fast_path_on_a_side_stream():
    """The kernel runs on torch's current stream (a side stream here), before the event."""
    x = _x((64, 7168), torch.bfloat16, 21)
    want = cast.per_token_cast_to_fp8(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        got = cast.per_token_cast_to_fp8(x)
        ev = torch.cuda.Event()
        ev.record()
    ev.synchronize()
    for a, b in zip(got, want):
        assert torch.equal(_bits(a), _bits(b))
