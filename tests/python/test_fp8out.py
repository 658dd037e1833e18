"""The FP8-output GEMMs' Python entry points (qgemm.fp8_gemm_nt_fp8out and the
grouped ones): argument errors raised on the CPU before any device is needed,
and empty_fp8out's layout (the next GEMM's sfa layout). The GPU accuracy test
is the C suite's gpu_fp8out (tests/test_fp8out.c)."""
import pytest

torch = pytest.importorskip("torch")
import qgemm  # noqa: E402

M, N, K = 100, 576, 256


def operands(m=M, n=N, k=K):
    a = torch.zeros(m, k, dtype=torch.float8_e4m3fn)
    sfa = qgemm.get_mn_major_tma_aligned_tensor(torch.ones(m, (k + 127) // 128))
    b = torch.zeros(n, k, dtype=torch.float8_e4m3fn)
    sfb = torch.ones((n + 127) // 128, (k + 127) // 128)
    return (a, sfa), (b, sfb)


def test_empty_fp8out_layout():
    d, sfd = qgemm.empty_fp8out(M, N)
    assert d.dtype == torch.float8_e4m3fn and d.shape == (M, N)
    assert sfd.dtype == torch.float32 and sfd.shape == (M, 5) and sfd.stride() == (1, 100)
    d, sfd = qgemm.empty_fp8out(62, N, num_groups=3)
    assert d.shape == (3, 62, N) and sfd.shape == (3, 62, 5) and sfd.stride() == (5 * 64, 1, 64)


@pytest.mark.parametrize("change,message", [
    (dict(d=lambda: torch.empty(M, N, dtype=torch.bfloat16)), "d must have dtype float8_e4m3fn"),
    (dict(d=lambda: torch.empty(M, N - 8, dtype=torch.float8_e4m3fn)), "d has shape"),
    (dict(sfd=lambda: torch.empty(M, 5)), "sfd must be M-major"),
    (dict(sfd=lambda: torch.empty_strided((M, 4), (1, 100))), "ceil(N/128), N from b"),
    (dict(sfd=lambda: torch.empty_strided((M, 5), (1, 100), dtype=torch.float64)),
     "sfd must have dtype float32"),
    (dict(sfd=lambda: torch.empty_strided((M, 5), (1, 102))), "multiple of 4 floats"),
    (dict(use_ue8m0=2), "use_ue8m0 must be a bool"),
    (dict(), "sfd must be in CUDA device memory"),  # valid: only the device is missing
])
def test_dense_argument_errors(change, message):
    a, b = operands()
    d, sfd = qgemm.empty_fp8out(M, N)
    kw = {}
    if "d" in change:
        d = change["d"]()
    if "sfd" in change:
        sfd = change["sfd"]()
    if "use_ue8m0" in change:
        kw["use_ue8m0"] = change["use_ue8m0"]
    with pytest.raises(ValueError) as e:
        qgemm.fp8_gemm_nt_fp8out(a, b, d, sfd, **kw)
    assert message in str(e.value)


def test_grouped_argument_errors():
    g = 3
    a = torch.zeros(g, 64, K, dtype=torch.float8_e4m3fn)
    sfa = qgemm.get_mn_major_tma_aligned_tensor(torch.ones(g, 64, 2))
    b = torch.zeros(g, N, K, dtype=torch.float8_e4m3fn)
    sfb = torch.ones(g, 5, 2)
    d, sfd = qgemm.empty_fp8out(64, N, num_groups=g)
    masked_m = torch.zeros(g, dtype=torch.int32)
    with pytest.raises(ValueError, match="G, from b"):
        qgemm.m_grouped_fp8_gemm_nt_masked_fp8out((a, sfa), (b, sfb), d, sfd[:2], masked_m, 64)
    with pytest.raises(ValueError, match="CUDA device memory"):
        qgemm.m_grouped_fp8_gemm_nt_masked_fp8out((a, sfa), (b, sfb), d, sfd, masked_m, 64)
    a2, b2 = operands(256)
    d2, sfd2 = qgemm.empty_fp8out(256, N)
    with pytest.raises(ValueError, match="d must have dtype float8_e4m3fn"):
        qgemm.m_grouped_fp8_gemm_nt_contiguous_fp8out(
            a2, (b, sfb), torch.empty(256, N, dtype=torch.bfloat16), sfd2,
            torch.zeros(256, dtype=torch.int32))


# ---- the fixup variant on the GPU (QGEMM_FP8OUT_VARIANT=fixup) ---------------------------

HAVE_GPU = torch.cuda.is_available() and torch.cuda.get_device_capability(0) == (9, 0)
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="skipped: no GPU (sm_90 needed)")


def gpu_operands(m, n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
    kb, nb = (k + 127) // 128, (n + 127) // 128
    sfa = 0.5 + 1.5 * torch.rand(m, kb, device="cuda", generator=g)
    sfb = 0.5 + 1.5 * torch.rand(nb, kb, device="cuda", generator=g)
    ref = ((a.float() * sfa.repeat_interleave(128, dim=1)[:, :k])
           @ (b.float() * sfb.repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:n, :k]).T)
    return (a, qgemm.get_mn_major_tma_aligned_tensor(sfa)), (b, sfb), ref


def run_fp8out(monkeypatch, variant, a, b, m, n, config=None, ue8m0=False):
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", variant)
    d, sfd = qgemm.empty_fp8out(m, n, device="cuda")
    d.view(torch.uint8).fill_(0xFF)
    sfd.fill_(float("nan"))
    qgemm.fp8_gemm_nt_fp8out(a, b, d, sfd, config=config, use_ue8m0=ue8m0)
    torch.cuda.synchronize()
    return d, sfd


@needs_gpu
@pytest.mark.parametrize("m,n,k,config", [
    (100, 1160, 1536, {"block_m": 64, "block_n": 32}),
    (65, 2112, 2048, {"block_m": 64, "block_n": 32}),
    (257, 576, 512, {"block_m": 128, "block_n": 32}),
])
def test_fixup_bitwise_equal_to_cluster_exchange(monkeypatch, m, n, k, config):
    """The same split tile under both variants: the same FP32 sums and rule, so the
    same bytes and scales (N, M off the tiles)."""
    a, b, _ = gpu_operands(m, n, k, seed=m + n)
    d0, s0 = run_fp8out(monkeypatch, "old", a, b, m, n, config)
    d1, s1 = run_fp8out(monkeypatch, "fixup", a, b, m, n, config)
    assert torch.equal(d0.view(torch.uint8), d1.view(torch.uint8))
    assert torch.equal(s0.view(torch.int32), s1.view(torch.int32))


@needs_gpu
@pytest.mark.parametrize("m,n,k,config,ue8m0", [
    (64, 576, 7168, None, False),       # the heuristic's 64x16 split-K 2
    (64, 2112, 7168, None, True),       # 64x32 split-K 2
    (100, 1160, 1536, {"block_m": 64, "block_n": 16, "split_k": 2}, False),
    (257, 576, 512, {"block_m": 64, "block_n": 16, "split_k": 2}, False),  # several tiles a CTA
])
def test_fixup_matches_reference(monkeypatch, m, n, k, config, ue8m0):
    """The fixup's tiles (16 columns, split-K) against the FP32 product: scales by the
    rule from the reference's amax (to the accumulation error), dequantized output as
    close as e4m3 allows, twice in a row (the counters return to 0)."""
    a, b, ref = gpu_operands(m, n, k, seed=7 * m + n)
    nb = (n + 127) // 128
    for _ in range(2):
        d, sfd = run_fp8out(monkeypatch, "fixup", a, b, m, n, config, ue8m0)
        amax = torch.nn.functional.pad(ref.abs(), (0, nb * 128 - n)).view(m, nb, 128).amax(-1)
        want = amax.clamp(min=1e-4) / 448
        if ue8m0:
            want = torch.pow(2.0, torch.ceil(torch.log2(want)))
            assert ((sfd / want - 1).abs() < 1e-6).float().mean() > 0.99
        else:
            assert ((sfd / want - 1).abs() < 4.5e-3).all()
        deq = d.float() * sfd.repeat_interleave(128, dim=1)[:, :n]
        diff = 1 - 2 * (deq.double() * ref.double()).sum() / (deq.double() ** 2 + ref.double() ** 2).sum()
        assert diff < 2e-3, diff
