"""The cast family (qgemm.cast): the GPU casts and scale layouts are the
default of qgemm's and qgemm.deep_gemm's names, bit for bit the torch
formulas (qgemm._torch_helpers, qgemm._layout) they replace; CPU tensors take
the torch path; argument errors. The GPU comparisons skip without a GPU."""
from __future__ import annotations

import random

import pytest

import qgemm
import qgemm.deep_gemm as deep_gemm
from qgemm import _C, _layout, _torch_helpers, cast

torch = pytest.importorskip("torch")

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")


def _same_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype == torch.float8_e4m3fn:
        a, b = a.view(torch.uint8), b.view(torch.uint8)
    elif a.dtype == torch.float32:
        a, b = a.view(torch.int32), b.view(torch.int32)
    diff = (a.cpu() != b.cpu()).sum().item()
    assert diff == 0, f"{diff} of {a.numel()} values differ"


def _input(shape, dtype, device, seed, special=True):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape, generator=gen)
    x = x * torch.exp(3 * torch.randn(*shape[:-1], 1, generator=gen))
    if special and x.numel() > 1000:
        flat = x.view(-1)
        flat[17] = float("inf")
        flat[300] = float("-inf")
        flat[x.numel() // 2] = float("nan")
        flat[x.numel() // 3] = -0.0
        flat[x.numel() // 5] = 1e-30
    return x.to(dtype).to(device)


# ---- the public names are the cast family's --------------------------------------------


def test_public_names():
    for name in ("per_token_cast_to_fp8", "per_block_cast_to_fp8", "per_channel_cast_to_fp8",
                 "get_mn_major_tma_aligned_tensor", "get_col_major_tma_aligned_tensor",
                 "get_mn_major_tma_aligned_packed_ue8m0_tensor",
                 "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor",
                 "transform_sf_into_required_layout", "silu_and_mul_fp8_quant"):
        assert getattr(qgemm, name) is getattr(cast, name), name
        assert getattr(deep_gemm, name) is getattr(cast, name), name
        assert name in qgemm.__all__
    from qgemm.deep_gemm.utils import layout, math
    assert math.per_token_cast_to_fp8 is cast.per_token_cast_to_fp8
    assert layout.get_mn_major_tma_aligned_tensor is cast.get_mn_major_tma_aligned_tensor
    assert _C.CAST_SF_MN_MAJOR == 5 and _C.CAST_SF_PACK_UE8M0 == 6


# ---- CPU: the torch path, the same results ------------------------------------------------


@pytest.mark.parametrize("ue8m0", [False, True])
def test_cpu_falls_back(ue8m0):
    x = _input((3, 300), torch.bfloat16, "cpu", 1)
    for a, b in ((cast.per_token_cast_to_fp8(x, ue8m0), _torch_helpers.per_token_cast_to_fp8(x, ue8m0)),
                 (cast.per_block_cast_to_fp8(x, ue8m0), _torch_helpers.per_block_cast_to_fp8(x, ue8m0))):
        _same_bits(a[0], b[0])
        _same_bits(a[1], b[1])
    y = _input((256, 40), torch.float32, "cpu", 2)
    a, b = cast.per_channel_cast_to_fp8(y, ue8m0), _torch_helpers.per_channel_cast_to_fp8(y, ue8m0)
    _same_bits(a[0], b[0])
    _same_bits(a[1], b[1])
    sf = torch.rand(5, 7)
    _same_bits(cast.get_mn_major_tma_aligned_tensor(sf), _layout.get_mn_major_tma_aligned_tensor(sf))
    p2 = _torch_helpers.ceil_to_ue8m0(sf)
    _same_bits(cast.get_mn_major_tma_aligned_packed_ue8m0_tensor(p2),
               _layout.get_mn_major_tma_aligned_packed_ue8m0_tensor(p2))


def test_cpu_silu_and_mul():
    x = _input((2, 6, 512), torch.bfloat16, "cpu", 3)
    q, sf = cast.silu_and_mul_fp8_quant(x)
    y = torch.nn.functional.silu(x[..., :256].float()) * x[..., 256:].float()
    rq, rsf = _torch_helpers.per_token_cast_to_fp8(y)
    _same_bits(q, rq)
    _same_bits(sf, rsf)
    q, sf = cast.silu_and_mul_fp8_quant(x, sf_mn_major=True)
    assert sf.shape == (2, 6, 2) and sf.stride() == (16, 1, 8)
    _same_bits(sf.contiguous(), rsf)


def test_argument_errors():
    x = torch.zeros(4, 256, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError):
        cast.per_token_cast_to_fp8(x, gran_k=64)
    with pytest.raises(NotImplementedError):
        cast.per_token_cast_to_fp8(x, use_packed_ue8m0=True)
    with pytest.raises(TypeError):
        cast.per_token_cast_to_fp8([1.0, 2.0])
    with pytest.raises(ValueError, match="multiple of 128"):
        cast.per_channel_cast_to_fp8(torch.zeros(100, 8))
    with pytest.raises(ValueError, match="must be even"):
        cast.silu_and_mul_fp8_quant(torch.zeros(4, 255))
    with pytest.raises(ValueError, match="not both"):
        cast.silu_and_mul_fp8_quant(x, masked_m=torch.zeros(4, dtype=torch.int32),
                                    m_indices=torch.zeros(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="masked_m"):
        cast.silu_and_mul_fp8_quant(x.view(1, 4, 256), masked_m=torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match="x must be \\[G, M, 2N\\]"):
        cast.silu_and_mul_fp8_quant(x, masked_m=torch.zeros(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="m_indices"):
        cast.silu_and_mul_fp8_quant(x, m_indices=torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError):
        cast.get_mn_major_tma_aligned_tensor(torch.zeros(4, 4, dtype=torch.float64))


def test_extension_argument_errors():
    """_C.cast / _C.sf_layout check kinds and tensors before any device work."""
    x = torch.zeros(4, 256, dtype=torch.bfloat16)
    q = torch.zeros(4, 256, dtype=torch.uint8)
    sf = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="unknown cast kind"):
        _C.cast(9, x, q, sf, None, 4, 1, 0, 0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="unknown scale-layout kind"):
        _C.sf_layout(1, sf, sf, None, 4, 0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="must be a tensor"):
        _C.cast(_C.CAST_PER_TOKEN, x, None, sf, None, 4, 1, 0, 0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="CUDA|device"):  # CPU tensors: not device memory
        _C.cast(_C.CAST_PER_TOKEN, x, q, sf, None, 4, 1, 0, 0, 0, 0, 0, 0)


# ---- GPU: bitwise against the torch formulas ------------------------------------------------


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("shape", [(1, 128), (37, 200), (2, 65, 1000), (300, 7168), (4, 8)])
def test_gpu_per_token(shape, dtype, ue8m0):
    x = _input(shape, dtype, "cuda", random.randrange(2**31))
    q, sf = qgemm.per_token_cast_to_fp8(x, ue8m0)
    rq, rsf = _torch_helpers.per_token_cast_to_fp8(x, ue8m0)
    _same_bits(q, rq)
    _same_bits(sf, rsf)
    # a strided view (narrow accesses)
    xs = _input((shape[-2] if len(shape) > 1 else 1, shape[-1] + 3), dtype, "cuda", 5)[:, 1:-2]
    q, sf = qgemm.per_token_cast_to_fp8(xs, ue8m0)
    rq, rsf = _torch_helpers.per_token_cast_to_fp8(xs, ue8m0)
    _same_bits(q, rq)
    _same_bits(sf, rsf)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("shape", [(200, 300), (3, 256, 1000), (129, 7168), (1, 8)])
def test_gpu_per_block(shape, dtype, ue8m0):
    x = _input(shape, dtype, "cuda", random.randrange(2**31))
    q, sf = qgemm.per_block_cast_to_fp8(x, ue8m0)
    rq, rsf = _torch_helpers.per_block_cast_to_fp8(x, ue8m0)
    _same_bits(q, rq)
    _same_bits(sf, rsf)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("shape", [(128, 300), (512, 1001), (256, 4096)])
def test_gpu_per_channel(shape, dtype, ue8m0):
    x = _input(shape, dtype, "cuda", random.randrange(2**31), special=False)
    q, sf = qgemm.per_channel_cast_to_fp8(x, ue8m0)
    rq, rsf = _torch_helpers.per_channel_cast_to_fp8(x, ue8m0)
    _same_bits(q, rq)
    _same_bits(sf, rsf)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("layout", ["all", "masked", "contiguous", "all_mn"])
def test_gpu_silu_and_mul(dtype, ue8m0, layout):
    g, m, n = 4, 150, 384
    x = _input((g, m, 2 * n) if layout == "masked" else (g * m, 2 * n), dtype, "cuda",
               random.randrange(2**31))
    y = torch.nn.functional.silu(x[..., :n].float()) * x[..., n:].float()
    rq, rsf = _torch_helpers.per_token_cast_to_fp8(y, ue8m0)
    if layout == "masked":
        masked_m = torch.tensor([m, 0, 17, m + 9], dtype=torch.int32, device="cuda")
        q, sf = qgemm.silu_and_mul_fp8_quant(x, ue8m0, masked_m=masked_m)
        for gi, rows in enumerate((m, 0, 17, m)):
            _same_bits(q[gi, :rows], rq[gi, :rows])
            _same_bits(sf[gi, :rows], rsf[gi, :rows])
    elif layout == "contiguous":
        idx = torch.arange(g * m, device="cuda", dtype=torch.int32) // 128
        idx[100:128] = -1
        q, sf = qgemm.silu_and_mul_fp8_quant(x, ue8m0, m_indices=idx)
        live = idx >= 0
        _same_bits(q[live], rq[live])
        _same_bits(sf[live], rsf[live])
    else:
        q, sf = qgemm.silu_and_mul_fp8_quant(x, ue8m0, sf_mn_major=layout == "all_mn")
        _same_bits(q, rq)
        if layout == "all_mn":
            assert sf.stride() == (1, (g * m + 3) // 4 * 4)
            sf = sf.contiguous()
        _same_bits(sf, rsf)


@needs_gpu
@pytest.mark.parametrize("shape", [(37, 5), (2, 4096, 56), (3, 129, 9), (1, 1)])
@pytest.mark.parametrize("transposed", [False, True])
def test_gpu_layouts(shape, transposed):
    sf = torch.rand(*shape, device="cuda") + 0.5
    if transposed:  # a K-major storage seen as [.., MN, SF_K]
        sf = sf.transpose(-1, -2).contiguous().transpose(-1, -2)
    got = qgemm.get_mn_major_tma_aligned_tensor(sf)
    want = _layout.get_mn_major_tma_aligned_tensor(sf)
    assert got.stride() == want.stride()
    _same_bits(got, want)
    p2 = _torch_helpers.ceil_to_ue8m0(sf)
    got = qgemm.get_mn_major_tma_aligned_packed_ue8m0_tensor(p2)
    want = _layout.get_mn_major_tma_aligned_packed_ue8m0_tensor(p2)
    assert got.stride() == want.stride()
    _same_bits(got, want)
    if len(shape) == 2:
        got = qgemm.transform_sf_into_required_layout(sf, shape[0], shape[1] * 128, (1, 128),
                                                      is_sfa=None)
        _same_bits(got, _layout.transform_sf_into_required_layout(sf, shape[0], shape[1] * 128,
                                                                  (1, 128)))


@needs_gpu
@pytest.mark.parametrize("gran_k", [32, 128])
@pytest.mark.parametrize("ks", [[512, 0, 256, 384, 1024], [128] * 5, [4096]])
def test_gpu_k_grouped_pack(gran_k, ks):
    mn = 260
    sf_k = sum((k + gran_k - 1) // gran_k for k in ks)
    sf = _torch_helpers.ceil_to_ue8m0(torch.rand(sf_k, mn, device="cuda") + 1e-3)
    layout = torch.tensor(ks, dtype=torch.int32, device="cuda")
    got = qgemm.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, layout, ks, gran_k, 128)
    want = _layout.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, layout, ks, gran_k,
                                                                          128)
    _same_bits(got, want)


@needs_gpu
def test_gpu_kernel_names():
    """DeepGEMM's test_layout finds the layout kernels by name in a profile."""
    from torch.profiler import ProfilerActivity, profile
    sf = torch.rand(4096, 56, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        qgemm.get_mn_major_tma_aligned_tensor(sf)
        qgemm.get_mn_major_tma_aligned_packed_ue8m0_tensor(_torch_helpers.ceil_to_ue8m0(sf))
        torch.cuda.synchronize()
    names = " ".join(e.key for e in prof.key_averages())
    assert "qg_transpose_sf_kernel" in names and "qg_pack_fp32_into_ue8m0_kernel" in names, names


# ---- torch.compile: the kernels as custom ops ---------------------------------------------


def test_ops_are_registered():
    qgemm.register_torch_ops()
    assert hasattr(torch.ops.qgemm, "cast") and hasattr(torch.ops.qgemm, "sf_layout")


@pytest.mark.skipif(not hasattr(torch.library, "custom_op"), reason="torch < 2.4")
def test_compile_fullgraph_meta():
    """torch.compile(fullgraph=True) traces the casts and layouts as the custom
    ops (meta tensors: no GPU; the fake implementations run)."""
    import torch._dynamo

    def block(x, w, sf):
        q, s = qgemm.per_token_cast_to_fp8(x)
        wq, ws = qgemm.per_block_cast_to_fp8(w, True)
        y, ys = qgemm.silu_and_mul_fp8_quant(x, sf_mn_major=True)
        t = qgemm.get_mn_major_tma_aligned_tensor(s)
        p = qgemm.get_mn_major_tma_aligned_packed_ue8m0_tensor(sf)
        return q, t, wq, ws, y, ys, p

    x = torch.empty(96, 512, dtype=torch.bfloat16, device="meta")
    w = torch.empty(2, 256, 384, dtype=torch.bfloat16, device="meta")
    sf = torch.empty(96, 7, dtype=torch.float32, device="meta")
    torch._dynamo.reset()
    explain = torch._dynamo.explain(block)(x, w, sf)
    assert explain.graph_break_count == 0, explain.break_reasons
    text = "\n".join(str(g.graph) for g in explain.graphs)
    assert "qgemm.cast" in text and "qgemm.sf_layout" in text, text
    out = torch.compile(block, fullgraph=True, backend="aot_eager")(x, w, sf)
    assert out[0].shape == (96, 512) and out[0].dtype == torch.float8_e4m3fn
    assert out[1].shape == (96, 4) and out[1].stride() == (1, 96)
    assert out[4].shape == (96, 256) and out[5].stride() == (1, 96)
    assert out[6].shape == (96, 2) and out[6].dtype == torch.int32


def test_meta_eager_shapes():
    x = torch.empty(3, 5, 300, dtype=torch.float32, device="meta")
    q, s = qgemm.per_token_cast_to_fp8(x)
    assert q.shape == x.shape and s.shape == (3, 5, 3)
    q, s = qgemm.per_block_cast_to_fp8(x)
    assert q.shape == x.shape and s.shape == (3, 1, 3)


@needs_gpu
def test_gpu_compiled_matches_eager():
    """Compiled, the casts run the same kernels (the custom ops): the same bits."""
    x = _input((200, 1000), torch.bfloat16, "cuda", random.randrange(2**31))

    def block(x):
        q, s = qgemm.per_token_cast_to_fp8(x)
        return q, qgemm.get_mn_major_tma_aligned_tensor(s), qgemm.silu_and_mul_fp8_quant(x)[0]

    want = block(x)
    got = torch.compile(block, fullgraph=True)(x)
    for a, b in zip(got, want):
        _same_bits(a, b)


@needs_gpu
@pytest.mark.parametrize("view", ["transposed", "expanded", "sliced"])
def test_gpu_views(view):
    """Inputs that are not row-major with rows apart: a copy or a narrow access, same bits."""
    base = _input((640, 256), torch.bfloat16, "cuda", random.randrange(2**31))
    x = {"transposed": base.t(), "expanded": base[:1].expand(640, 256),
         "sliced": base[:, 3:200]}[view]
    for fn in (qgemm.per_token_cast_to_fp8, qgemm.per_block_cast_to_fp8):
        a, b = fn(x), getattr(_torch_helpers, fn.__name__)(x)
        _same_bits(a[0], b[0])
        _same_bits(a[1], b[1])
    if x.shape[0] % 128 == 0:
        a, b = qgemm.per_channel_cast_to_fp8(x), _torch_helpers.per_channel_cast_to_fp8(x)
        _same_bits(a[0], b[0])
        _same_bits(a[1], b[1])


@needs_gpu
def test_gpu_k_grouped_pack_unaligned_falls_back():
    ks, mn = [256, 256], 8
    base = _torch_helpers.ceil_to_ue8m0(torch.rand(4 * mn + 1, device="cuda") + 0.1)
    sf = base[1:].view(4, mn)  # 4-byte offset: not the kernel's 16-byte alignment
    layout = torch.tensor(ks, dtype=torch.int32, device="cuda")
    got = qgemm.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, layout, ks, 128, 128)
    want = _layout.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, layout, ks, 128, 128)
    _same_bits(got, want)


# ---- QGEMM_CAST_VARIANT words ring (per-channel) and lut (silu_mul): all+lean's bits ----


@needs_gpu
@pytest.mark.parametrize("variant", ["all+lean+ring+lut", "ring+lut"])
@pytest.mark.parametrize("ue8m0", [False, True])
def test_gpu_ring_lut_variants(monkeypatch, variant, ue8m0):
    """The ring kernel (per-channel, 16-byte rows) and the table kernel (silu_mul of bf16
    with enough rows for a table a CTA) give the torch formulas' bits -- all+lean's --
    on shapes large enough for them on every SM, special values included, k off the
    tiles. (tests/test_cast.c's gpu_cast_ring_lut_bitwise covers small shapes on 2 SMs,
    the narrow accesses and every bf16 gate.)"""
    seed = random.randrange(2**31)
    monkeypatch.setenv("QGEMM_CAST_VARIANT", variant)
    for dtype, shape in ((torch.bfloat16, (4096, 7168)), (torch.float32, (384, 1000)),
                         (torch.bfloat16, (256, 7176))):
        x = _input(shape, dtype, "cuda", seed, special=False)
        x.view(-1)[123] = float("nan") if dtype == torch.float32 else 1e-30  # an inexact tile / a tiny value
        q, sf = qgemm.per_channel_cast_to_fp8(x, ue8m0)
        rq, rsf = _torch_helpers.per_channel_cast_to_fp8(x, ue8m0)
        _same_bits(q, rq)
        _same_bits(sf, rsf)
    g, m, n = 8, 512, 3584
    x = _input((g * m, 2 * n), torch.bfloat16, "cuda", seed)
    y = torch.nn.functional.silu(x[..., :n].float()) * x[..., n:].float()
    rq, rsf = _torch_helpers.per_token_cast_to_fp8(y, ue8m0)
    q, sf = qgemm.silu_and_mul_fp8_quant(x, ue8m0)
    _same_bits(q, rq)
    _same_bits(sf, rsf)
    q, sf = qgemm.silu_and_mul_fp8_quant(x, ue8m0, sf_mn_major=True)
    _same_bits(q, rq)
    _same_bits(sf.contiguous(), rsf)
    masked_m = torch.tensor([m, 0, 17, m + 9, 1, 300, m, 2], dtype=torch.int32, device="cuda")
    q, sf = qgemm.silu_and_mul_fp8_quant(x.view(g, m, 2 * n), ue8m0, masked_m=masked_m)
    for gi, rows in enumerate((m, 0, 17, m, 1, 300, m, 2)):
        _same_bits(q[gi, :rows], rq.view(g, m, n)[gi, :rows])
        _same_bits(sf[gi, :rows], rsf.view(g, m, -1)[gi, :rows])
    idx = torch.arange(g * m, device="cuda", dtype=torch.int32) // 128
    idx[100:128] = -1
    q, sf = qgemm.silu_and_mul_fp8_quant(x, ue8m0, m_indices=idx)
    live = idx >= 0
    _same_bits(q[live], rq[live])
    _same_bits(sf[live], rsf[live])
    # every bf16 gate pattern (x 128 up values; 65536 rows of 128: the table's threshold
    # on 132 SMs): the table's 8192 entries and the fallback
    gate = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    x = torch.cat([gate.view(512, 128).repeat(128, 1),
                   torch.randn(65536, 128, dtype=torch.bfloat16)], dim=1).cuda()
    q, sf = qgemm.silu_and_mul_fp8_quant(x, ue8m0)
    monkeypatch.setenv("QGEMM_CAST_VARIANT", "all+lean")  # no table (the default before
    dq, dsf = qgemm.silu_and_mul_fp8_quant(x, ue8m0)      # 2026-11-29 y; NaN gates: NaN scales)
    _same_bits(q, dq)
    _same_bits(sf, dsf)
