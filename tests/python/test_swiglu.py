"""The fused SwiGLU GEMMs (qgemm.*_swiglu) and interleave_gate_up.

CPU: the interleave and its inverse, argument errors raised before any device
is needed, and torch.compile(fullgraph=True) tracing an MoE expert block (up +
SwiGLU -> FP8, down) on meta tensors. GPU (skipped without one): the fused
masked / contiguous GEMMs on interleaved weights against the float64
reference of the original (gate | up) weights, against qgemm's unfused path
(bf16 GEMM + silu_and_mul_fp8_quant), and a CUDA-graph replay of the masked
call with new row counts. The C suite's gpu_swiglu (tests/test_swiglu.c)
covers the layouts' corners (padding, UE8M0, clamp, weights, forced tiles).
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import qgemm  # noqa: E402

E4M3 = torch.float8_e4m3fn
HAVE_GPU = torch.cuda.is_available() and torch.cuda.get_device_capability(0) == (9, 0)
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="skipped: no GPU (sm_90 needed)")


# ---- CPU ------------------------------------------------------------------------------


def test_interleave_layout_and_inverse():
    g, i, k = 2, 256, 64
    w13 = torch.arange(g * 2 * i, dtype=torch.float32).view(g, 2 * i, 1).expand(g, 2 * i, k)
    s13 = torch.arange(g * 2 * i // 128 * 1, dtype=torch.float32).view(g, 2 * i // 128, 1)
    w, s = qgemm.interleave_gate_up(w13, s13)
    assert w.shape == w13.shape and s.shape == s13.shape and w.is_contiguous()
    for r in range(2 * i):
        blk, pos = divmod(r, 256)
        src = blk * 128 + pos if pos < 128 else i + blk * 128 + pos - 128
        assert torch.equal(w[:, r], w13[:, src]), r
    assert s[0, :, 0].tolist() == [0.0, 2.0, 1.0, 3.0]
    w_back, s_back = qgemm.interleave_gate_up(w, s, inverse=True)
    assert torch.equal(w_back, w13) and torch.equal(s_back, s13)
    assert torch.equal(qgemm.interleave_gate_up(w13[0]), w[0])  # [2I, K] alone
    with pytest.raises(ValueError, match="I a multiple of 128"):
        qgemm.interleave_gate_up(torch.zeros(2, 384, 16))


def _operands(m=128, i=256, k=256, device="cpu"):
    a = torch.zeros(m, k, dtype=E4M3, device=device)
    sfa = qgemm.get_mn_major_tma_aligned_tensor(torch.ones(m, k // 128, device=device))
    b = torch.zeros(2 * i, k, dtype=E4M3, device=device)
    sfb = torch.ones(2 * i // 128, k // 128, device=device)
    return (a, sfa), (b, sfb)


@pytest.mark.parametrize("change,message", [
    (dict(d=lambda: torch.empty(128, 512, dtype=E4M3)), "N/2, from b"),
    (dict(d=lambda: torch.empty(128, 256, dtype=torch.bfloat16)), "d must have dtype float8_e4m3fn"),
    (dict(sfd=lambda: torch.empty_strided((128, 4), (1, 128))), "ceil(N/256), N from b"),
    (dict(row_weight=torch.ones(127)), "row_weight must hold one float32 per row of a (128"),
    (dict(row_weight=torch.ones(128, dtype=torch.float64)), "row_weight must have dtype float32"),
    (dict(swiglu_limit=-1.0), "swiglu_limit must be >= 0 and finite"),
    (dict(swiglu_limit=float("nan")), "swiglu_limit must be >= 0 and finite"),
    (dict(use_ue8m0=2), "use_ue8m0 must be a bool"),
    (dict(row_weight=torch.ones(128)), "in CUDA device memory"),  # valid but for the device
])
def test_dense_argument_errors(change, message):
    a, b = _operands()
    d, sfd = qgemm.empty_swiglu(128, 256)
    kw = {}
    if "d" in change:
        d = change["d"]()
    if "sfd" in change:
        sfd = change["sfd"]()
    for key in ("row_weight", "swiglu_limit", "use_ue8m0"):
        if key in change:
            kw[key] = change[key]
    with pytest.raises(ValueError) as e:
        qgemm.fp8_gemm_nt_swiglu(a, b, d, sfd, **kw)
    assert message in str(e.value)


def test_empty_swiglu_layout():
    d, sfd = qgemm.empty_swiglu(100, 2048, num_groups=3)
    assert d.shape == (3, 100, 2048) and d.dtype == E4M3
    assert sfd.shape == (3, 100, 16) and sfd.stride() == (16 * 100, 1, 100)


G, M_MAX, H, I = 4, 64, 256, 256


def _meta_block(x, sx, w13, s13, w2, s2, masked_m, weights):
    """An MoE expert block, masked layout: up + SwiGLU -> FP8 (with routing
    weights and a clamp), then the down-projection, bf16 out."""
    y, sy = qgemm.empty_swiglu(M_MAX, I, num_groups=G, device=x.device)
    qgemm.m_grouped_fp8_gemm_nt_masked_swiglu((x, sx), (w13, s13), y, sy, masked_m, M_MAX,
                                              row_weight=weights, swiglu_limit=7.0)
    out = torch.empty(G, M_MAX, H, dtype=torch.bfloat16, device=x.device)
    qgemm.m_grouped_fp8_gemm_nt_masked((y, sy), (w2, s2), out, masked_m, M_MAX)
    return out.float().sum()


def test_compile_fullgraph_expert_block():
    if not hasattr(torch.library, "custom_op"):
        pytest.skip("torch has no torch.library.custom_op")
    meta = "meta"
    ld = qgemm.get_tma_aligned_size(M_MAX, 4)
    inputs = dict(
        x=torch.empty(G, M_MAX, H, dtype=E4M3, device=meta),
        sx=torch.empty_strided((G, M_MAX, H // 128), (H // 128 * ld, 1, ld), device=meta),
        w13=torch.empty(G, 2 * I, H, dtype=E4M3, device=meta),
        s13=torch.empty(G, 2 * I // 128, H // 128, device=meta),
        w2=torch.empty(G, H, I, dtype=E4M3, device=meta),
        s2=torch.empty(G, H // 128, I // 128, device=meta),
        masked_m=torch.empty(G, dtype=torch.int32, device=meta),
        weights=torch.empty(G, M_MAX, device=meta))
    torch._dynamo.reset()
    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.lookup_backend("eager")(gm, example_inputs)

    torch.compile(_meta_block, fullgraph=True, backend=recording)(**inputs)
    assert len(graphs) == 1
    names = " ".join(str(t) for n in graphs[0].graph.nodes for t in [n.target, *n.args])
    assert "fp8_gemm_swiglu" in names and "m_grouped_fp8_gemm_nt_masked" in names
    schema = str(torch.ops.qgemm.fp8_gemm_swiglu.default._schema)
    assert "!) d" in schema and "!) sfd" in schema, schema


# ---- GPU ------------------------------------------------------------------------------


def _quantize(y, ue8m0=False):
    """The fp8out formula on float64 y [.., cols] (cols a multiple of 128):
    amax as float32 (>= 1e-4), sf = amax * f32(1/448), q = e4m3(f32(y) * (1/amax * 448));
    ue8m0: sf rounded up to a power of two (the float32 exponent of amax * f32(1/448), + 1
    where its mantissa is not zero, as the kernel's qg_fp8_d_scale), q = e4m3(f32(y) / sf)."""
    yf = y.float().unflatten(-1, (-1, 128))
    amax = y.abs().unflatten(-1, (-1, 128)).amax(-1, keepdim=True).float().clamp_min(1e-4)
    sf = amax * torch.tensor(1 / 448, dtype=torch.float32)
    if ue8m0:
        bits = sf.view(torch.int32) & 0x7FFFFFFF
        e = (bits >> 23) + ((bits & 0x7FFFFF) != 0).int()
        sf = (e.clamp(1, 254) << 23).view(torch.float32)
        q = (yf * (1.0 / sf)).to(E4M3).flatten(-2)
    else:
        q = (yf * ((1.0 / amax) * 448.0)).to(E4M3).flatten(-2)
    return q, sf.squeeze(-1)


def test_reference_ue8m0_scales():
    """The test reference's UE8M0 rounding (CPU): powers of two at or above amax / 448,
    and the bytes of a row whose amax is a power of two times 448 equal the FP32-scale
    bytes. (H200: the reference without UE8M0 put 94% of a use_ue8m0 call's bytes 5-8
    steps off.)"""
    gen = torch.Generator().manual_seed(20261128)
    y = torch.randn(3, 256, dtype=torch.float64, generator=gen) * torch.tensor(
        [[1e-3], [1.0], [300.0]], dtype=torch.float64)
    y[1, :128] *= 448.0 / y[1, :128].abs().max()  # amax exactly 448: sf 1 either way
    # row 2: amax 1.5 * 448 * 2^k per group, so the FP32 scale is 1.5 * 2^k and UE8M0 rounds
    # it up to 2^(k + 1): every byte is quantized at 3/4 of its FP32-scale size (with random
    # amaxes that ratio lies anywhere in (1/2, 1], and near 1 few bytes change)
    g2 = y[2].view(2, 128)
    g2 *= (1.5 * 448.0 * torch.tensor([[2.0 ** 3], [2.0 ** -2]], dtype=torch.float64)
           / g2.abs().amax(-1, keepdim=True))
    q, sf = _quantize(y, ue8m0=True)
    q32, sf32 = _quantize(y)
    assert torch.equal(torch.exp2(torch.log2(sf).round()), sf)  # powers of two
    assert (sf >= sf32).all() and (sf < 2 * sf32).all()
    assert float(sf[1, 0]) == 1.0 and torch.equal(q[1, :128].view(torch.uint8),
                                                  q32[1, :128].view(torch.uint8))
    assert (q.float().abs() <= 448).all()
    # the bytes of other groups differ from the FP32-scale ones (the H200 failure's cause)
    assert float((_steps(q[2], q32[2]) > 0).float().mean()) > 0.8


def _steps(x, y):
    """e4m3 steps between two byte tensors (codes in value order)."""
    def ordinal(t):
        u = t.view(torch.uint8).int()
        return torch.where(u >= 128, -(u - 128), u)
    return (ordinal(x) - ordinal(y)).abs()


def _far_steps(x, ref):
    """_steps where the reference's e4m3 value is at least 16 in magnitude; below that (values
    under 16/448 of their group's amax) an element passes within 1.0 of the reference, the C
    tests' rule (tests/test_fp8out.c): a sum near zero may change sign between the FP32
    accumulation and the fp64 reference, which the code order counts as many steps."""
    s = _steps(x, ref)
    xf, rf = x.float(), ref.float()
    small_ok = (rf.abs() < 16) & ((xf - rf).abs() <= 1.0)
    return torch.where(small_ok, torch.zeros_like(s), s)


def _expert_inputs(g, m, h, i, seed, device="cuda"):
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(g, m, h, device=device, generator=gen)
    w13 = torch.randn(g, 2 * i, h, device=device, generator=gen) * 0.05
    xq, sx = zip(*(qgemm.per_token_cast_to_fp8(x[e]) for e in range(g)))
    wq, sw = zip(*(qgemm.per_block_cast_to_fp8(w13[e]) for e in range(g)))
    return torch.stack(xq), torch.stack(sx), torch.stack(wq), torch.stack(sw)


def _reference(xq, sx, wq, sw, weights, limit, ue8m0=False):
    a = xq.double() * sx.double().repeat_interleave(128, -1)[..., :xq.shape[-1]]
    b = wq.double() * sw.double().repeat_interleave(128, -2).repeat_interleave(128, -1)[
        ..., :wq.shape[-2], :wq.shape[-1]]
    hh = a @ b.transpose(-1, -2)
    i = hh.shape[-1] // 2
    gate, up = hh[..., :i], hh[..., i:]
    if limit:
        gate, up = gate.clamp(max=limit), up.clamp(-limit, limit)
    y = gate * torch.sigmoid(gate) * up
    if weights is not None:
        y = y * weights.double().unsqueeze(-1)
    return _quantize(y, ue8m0)


@needs_gpu
@pytest.mark.parametrize("limit,weighted,ue8m0", [(0.0, False, False), (2.0, True, False),
                                                  (2.0, True, True)])
def test_masked_matches_reference_and_unfused(limit, weighted, ue8m0):
    g, m, h, i = 4, 96, 1024, 512
    xq, sx, wq, sw = _expert_inputs(g, m, h, i, 51)
    masked_m = torch.tensor([96, 0, 37, 64], dtype=torch.int32, device="cuda")
    weights = torch.rand(g, m, device="cuda") + 0.05 if weighted else None
    wi, si = qgemm.interleave_gate_up(wq, sw)
    y, sy = qgemm.empty_swiglu(m, i, num_groups=g, device="cuda")
    y.view(torch.uint8).fill_(0x7F)
    sy.fill_(float("nan"))
    qgemm.m_grouped_fp8_gemm_nt_masked_swiglu((xq, sx), (wi, si), y, sy, masked_m, m,
                                              row_weight=weights, swiglu_limit=limit,
                                              use_ue8m0=ue8m0)
    torch.cuda.synchronize()
    q_ref, sf_ref = _reference(xq, sx, wq, sw, weights, limit, ue8m0)
    total = mism = 0
    for e in range(g):
        rows = int(masked_m[e])
        assert (y[e, rows:].view(torch.uint8) == 0x7F).all(), f"group {e}: masked rows written"
        assert torch.isnan(sy[e, rows:]).all(), f"group {e}: masked rows' scales written"
        if rows == 0:
            continue
        rel = ((sy[e, :rows] - sf_ref[e, :rows]).abs() / sf_ref[e, :rows]).max().item()
        if ue8m0:  # powers of two: equal but where amax sits within rounding of a boundary
            rel = float((sy[e, :rows] != sf_ref[e, :rows]).float().mean())
            assert rel <= 0.01, f"group {e}: {rel:.2%} of the UE8M0 scales differ"
        else:
            assert rel < 9e-3, f"group {e}: scale rel {rel}"
        s = _steps(y[e, :rows], q_ref[e, :rows])
        total += s.numel()
        mism += int((s > 0).sum())
        far = int(_far_steps(y[e, :rows], q_ref[e, :rows]).max())
        assert far <= 1 or rel > 0, f"group {e}: {far} steps where |ref| >= 16"
    print(f"masked swiglu: mismatch vs fp64 {mism / total:.2e}")
    assert mism <= 0.02 * total
    if limit == 0.0 and not weighted and not ue8m0:  # the unfused qgemm path: bf16 GEMM + silu_and_mul
        hb = torch.empty(g, m, 2 * i, dtype=torch.bfloat16, device="cuda")
        qgemm.m_grouped_fp8_gemm_nt_masked((xq, sx), (wq, sw), hb, masked_m, m)
        yu, syu = qgemm.silu_and_mul_fp8_quant(hb, masked_m=masked_m, sf_mn_major=True)
        n = diff = 0
        for e in range(g):
            rows = int(masked_m[e])
            s = _steps(y[e, :rows], yu[e, :rows])
            n += s.numel()
            diff += int((s > 0).sum())
        print(f"masked swiglu: mismatch vs unfused (bf16 h) {diff / max(n, 1):.2e}")
        assert diff <= 0.05 * max(n, 1)


@needs_gpu
def test_contiguous_matches_reference():
    g, h, i = 3, 512, 256
    sizes = [128, 256, 128]
    m = sum(sizes)
    xq1, sx1, wq, sw = _expert_inputs(1, m, h, i, 77)
    _, _, wq, sw = _expert_inputs(g, 1, h, i, 78)
    xq, sx = xq1[0], sx1[0]
    m_indices = torch.cat([torch.full((s,), e, dtype=torch.int32) for e, s in enumerate(sizes)]).cuda()
    m_indices[120:128] = -1  # padding rows of expert 0's segment: computed as expert 0's
    wi, si = qgemm.interleave_gate_up(wq, sw)
    y, sy = qgemm.empty_swiglu(m, i, device="cuda")
    weights = torch.rand(m, device="cuda") + 0.05
    qgemm.m_grouped_fp8_gemm_nt_contiguous_swiglu((xq, sx), (wi, si), y, sy, m_indices,
                                                  row_weight=weights, use_ue8m0=True)
    torch.cuda.synchronize()
    start = 0
    for e, s in enumerate(sizes):
        q_ref, _ = _reference(xq[start:start + s], sx[start:start + s], wq[e], sw[e],
                              weights[start:start + s], 0.0, ue8m0=True)
        st = _steps(y[start:start + s], q_ref)
        assert float((st > 0).float().mean()) <= 0.03, f"expert {e}"
        start += s


@needs_gpu
def test_masked_cuda_graph_replay():
    g, m, h, i = 2, 64, 512, 256
    xq, sx, wq, sw = _expert_inputs(g, m, h, i, 91)
    wi, si = qgemm.interleave_gate_up(wq, sw)
    masked_m = torch.tensor([64, 10], dtype=torch.int32, device="cuda")
    y, sy = qgemm.empty_swiglu(m, i, num_groups=g, device="cuda")
    call = lambda: qgemm.m_grouped_fp8_gemm_nt_masked_swiglu(  # noqa: E731
        (xq, sx), (wi, si), y, sy, masked_m, m)
    call()  # compiles outside the capture
    torch.cuda.synchronize()
    want = y.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    y.view(torch.uint8).fill_(0)
    masked_m.copy_(torch.tensor([30, 64], dtype=torch.int32))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y[0, :30].view(torch.uint8), want[0, :30].view(torch.uint8))
    assert (y[0, 30:].view(torch.uint8) == 0).all()  # rows past the new masked_m untouched
    q_ref, _ = _reference(xq[1:], sx[1:], wq[1:], sw[1:], None, 0.0)
    assert float((_steps(y[1], q_ref[0]) > 0).float().mean()) <= 0.03


@needs_gpu
def test_fp8out_cuda_graph_replay():
    """The e4m3-D GEMM (no SwiGLU) shares the extension entry (fp8out_call) and its torch
    mode: captured and replayed as the SwiGLU one."""
    g, m, h, n = 2, 64, 512, 256
    xq, sx, wq, sw = _expert_inputs(g, m, h, n // 2, 92)
    masked_m = torch.tensor([64, 10], dtype=torch.int32, device="cuda")
    d, sfd = qgemm.empty_fp8out(m, n, num_groups=g, device="cuda")
    call = lambda: qgemm.m_grouped_fp8_gemm_nt_masked_fp8out(  # noqa: E731
        (xq, sx), (wq, sw), d, sfd, masked_m, m)
    call()
    torch.cuda.synchronize()
    want = d.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    d.view(torch.uint8).fill_(0)
    masked_m.copy_(torch.tensor([30, 64], dtype=torch.int32))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(d[0, :30].view(torch.uint8), want[0, :30].view(torch.uint8))
    assert (d[0, 30:].view(torch.uint8) == 0).all()
    assert (d[1].view(torch.uint8) != 0).any()
