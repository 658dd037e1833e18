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
