"""The FP8-output GEMMs' Python entry points (qgemm.fp8_gemm_nt_fp8out and the
grouped ones): argument errors raised on the CPU before any device is needed,
and empty_fp8out's layout (the next GEMM's sfa layout). The GPU accuracy test
is the C suite's gpu_fp8out (tests/test_fp8out.c); QGEMM_FP8OUT_VARIANT: the heuristic
offline, and on the GPU each variant bitwise against the default (the C suite's
gpu_variants_fp8out_a and _b check them against the fp64 reference)."""
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


# ---- QGEMM_FP8OUT_VARIANT (issue 51's A/B runs; src/env.c) ----------------------------------

def test_variant_heuristic_offline(monkeypatch):
    """room (in new) counts 30 clusters of 4 on 132 SMs: 64x4096x7168's 128 tiles of 64x32
    would run two rounds, so it takes 64x64 in clusters of 2; rows that fit keep their tile."""
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", "old")
    old = qgemm.select_config_fp8out(64, 4096, 7168, offline=True)
    keep = qgemm.select_config_fp8out(64, 2112, 7168, offline=True)
    assert (old["block_n"], old["cluster"]) == (32, 4)
    for v in ("new", None):  # new is the default (unset)
        if v is None:
            monkeypatch.delenv("QGEMM_FP8OUT_VARIANT", raising=False)
        else:
            monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", v)
        new = qgemm.select_config_fp8out(64, 4096, 7168, offline=True)
        assert (new["block_n"], new["cluster"]) == (64, 2)
    assert qgemm.select_config_fp8out(64, 2112, 7168, offline=True) == keep
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", "early+sfbpf")  # kernel switches only
    assert qgemm.select_config_fp8out(64, 4096, 7168, offline=True) == old
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", "epi")  # the epilogue: a kernel switch only
    assert qgemm.select_config_fp8out(64, 4096, 7168, offline=True) == old
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", "new+epi")
    new = qgemm.select_config_fp8out(64, 4096, 7168, offline=True)
    assert (new["block_n"], new["cluster"]) == (64, 2)
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", "early+last")  # kernel switches only
    assert qgemm.select_config_fp8out(64, 4096, 7168, offline=True) == old
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", "new+epi+last")
    new = qgemm.select_config_fp8out(64, 4096, 7168, offline=True)
    assert (new["block_n"], new["cluster"]) == (64, 2)
    # nk: split tiles with split-K 2 where the split leaves most SMs idle (N 576)
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", "new+epi+nk")
    nk = qgemm.select_config_fp8out(64, 576, 7168, offline=True)
    assert (nk["block_n"], nk["split_k"], nk["cluster"]) == (32, 2, 8)
    assert qgemm.select_config_fp8out(64, 4096, 7168, offline=True) == new
    monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", "fast")
    with pytest.raises(Exception, match="QGEMM_FP8OUT_VARIANT='fast'"):
        qgemm.select_config_fp8out(64, 4096, 7168, offline=True)


def _gpu_operands(m, n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=g)
    w = torch.randn(n, k, device="cuda", generator=g)
    xa = x.view(m, -1, 128).abs().amax(-1).clamp_min(1e-4)
    a = (x.view(m, -1, 128) * (448.0 / xa)[..., None]).view(m, k).to(torch.float8_e4m3fn)
    sfa = qgemm.get_mn_major_tma_aligned_tensor((xa / 448.0).contiguous())
    wb = w.view(n // 128, 128, k // 128, 128).abs().amax((1, 3)).clamp_min(1e-4)
    b = (w.view(n // 128, 128, k // 128, 128) * (448.0 / wb)[:, None, :, None]).view(n, k)
    return (a, sfa), (b.to(torch.float8_e4m3fn), (wb / 448.0).contiguous())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
@pytest.mark.parametrize("variant", ["early", "sfbpf", "new", "epi", "new+epi",
                                     "new+epi+last"])
@pytest.mark.parametrize("m,n,k,tile", [(64, 4096, 7168, None), (100, 2048, 1536, (64, 32)),
                                        (257, 640, 512, (128, 64)), (100, 1024, 1536, (64, 128))])
def test_variant_bitwise_default(monkeypatch, variant, m, n, k, tile):
    """Each variant's fused output (bytes and scales) on old's tile is bitwise old's (the
    variants change no math), and close to bf16 D + the per-token cast."""
    a, b = _gpu_operands(m, n, k, m * 7 + n + k)
    config = {"block_m": tile[0], "block_n": tile[1]} if tile else None
    outs = {}
    for v in ("old", variant):
        if v is None:
            monkeypatch.delenv("QGEMM_FP8OUT_VARIANT", raising=False)
        else:
            monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", v)
        d, sfd = qgemm.empty_fp8out(m, n, device="cuda")
        d.view(torch.uint8).fill_(0xFF)
        sfd.fill_(float("nan"))
        qgemm.fp8_gemm_nt_fp8out(a, b, d, sfd, config=config)
        cfg = config or qgemm.select_config_fp8out(m, n, k)
        outs[v] = (d.view(torch.uint8).clone(), sfd.clone(), (cfg["block_m"], cfg["block_n"]))
    (d0, s0, t0), (d1, s1, t1) = outs["old"], outs[variant]
    if t0 == t1:
        assert torch.equal(d0, d1), f"{variant}: bytes differ from the default's on {t0}"
        assert torch.equal(s0.view(torch.int32), s1.view(torch.int32)), f"{variant}: scales differ"
    ref = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    qgemm.fp8_gemm_nt(a, b, ref)
    q_ref, sf_ref = qgemm.per_token_cast_to_fp8(ref)
    diff = (d1 != q_ref.view(torch.uint8)).float().mean().item()
    assert diff < 0.05, f"{variant}: {diff:.3%} of the bytes differ from bf16 D + cast"
    assert torch.isfinite(s1).all(), f"{variant}: a scale left unwritten"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
@pytest.mark.parametrize("variant", ["epi", "new+epi"])
@pytest.mark.parametrize("tile", [(64, 128), (64, 32), (128, 64)])
def test_variant_epi_nonfinite(monkeypatch, variant, tile):
    """epi's row groups take the default's slow loop where a sum is inf / NaN (vote.all of
    exact): rows 5 (sfa inf: +-inf sums), 17 (sfa NaN) and 40 (sfa 3e38 on one K block: some
    sums overflow, the rest are finite) beside finite rows in the same warps and tiles; bytes
    and scales bitwise old's on the same tile (whole groups, split over 4 and over 2)."""
    m, n, k = 100, 1024, 512
    a, b = _gpu_operands(m, n, k, 4242)
    sfa = a[1]
    sfa[5, 0] = float("inf")
    sfa[17, 1] = float("nan")
    sfa[40, 2] = 3e38
    config = {"block_m": tile[0], "block_n": tile[1]}
    outs = {}
    for v in ("old", variant):
        monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", v)
        d, sfd = qgemm.empty_fp8out(m, n, device="cuda")
        d.view(torch.uint8).fill_(0xA5)
        sfd.fill_(-1.0)
        qgemm.fp8_gemm_nt_fp8out((a[0], sfa), b, d, sfd, config=config)
        outs[v] = (d.view(torch.uint8).clone(), sfd.clone())
    (d0, s0), (d1, s1) = outs["old"], outs[variant]
    assert torch.equal(d0, d1), f"{variant} {tile}: bytes differ from old's"
    assert torch.equal(s0.view(torch.int32), s1.view(torch.int32)), f"{variant} {tile}: scales differ"
    # (the slow loop was reached: the rows' scales are those of inf / NaN sums)
    assert not torch.isfinite(s1[5]).any() and torch.isnan(s1[17]).all(), "non-finite rows' scales"
    assert torch.isfinite(s1[0]).all() and torch.isfinite(s1[99]).all(), "finite rows' scales"


# ---- QGEMM_FP8OUT_VARIANT's SwiGLU words (swm64, swmca, swmcac) ----------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
@pytest.mark.parametrize("layout,g,m,n", [("masked", 8, 64, 4096), ("masked", 32, 256, 3072),
                                          ("contiguous", 8, 512, 4096)])
@pytest.mark.parametrize("run", ["swm64+swmca+swmcac", "swm64", "swmca+swmcac",
                                 {"block_m": 64, "block_n": 256},
                                 {"block_m": 128, "block_n": 256, "multicast": "a"}])
def test_swiglu_variant_bitwise_default(monkeypatch, layout, g, m, n, run):
    """The SwiGLU words move the heuristic's tile only (64x256 for masked groups of <= 64
    rows, 128x256 with A multicast for 256-row groups and the contiguous 4096): the fused
    bytes and scales under each, and on the forced 64x256 and 128x256 A tiles, are bitwise
    the default's (the same wgmma units, promotion and epilogue a row), rows weighted and
    clamped; and close to the unfused path (bf16 GEMM + silu_and_mul_fp8_quant)."""
    k = 512
    rows = g * m
    (a, sfa), (b, sfb) = _gpu_operands(rows, g * n, k, g * 31 + m + n)
    b, sfb = b.view(g, n, k), sfb.view(g, n // 128, k // 128)
    bi, sfbi = qgemm.interleave_gate_up(b, sfb)
    gen = torch.Generator(device="cuda").manual_seed(7)
    w = torch.rand(rows, device="cuda", generator=gen) + 0.05
    if layout == "masked":
        a = a.view(g, m, k)
        sfa = qgemm.get_mn_major_tma_aligned_tensor(sfa.contiguous().view(g, m, -1))
        idx = torch.full((g,), m, dtype=torch.int32, device="cuda")
        idx[1] = m - 3  # a group not full: its last rows stay untouched
    else:
        idx = torch.arange(g, dtype=torch.int32, device="cuda").repeat_interleave(m)
    config = run if isinstance(run, dict) else None
    outs = {}
    for key in ("default", "run"):
        if key == "run" and config is None:
            monkeypatch.setenv("QGEMM_FP8OUT_VARIANT", run)
        else:
            monkeypatch.delenv("QGEMM_FP8OUT_VARIANT", raising=False)
        if layout == "masked":
            y, sy = qgemm.empty_swiglu(m, n // 2, num_groups=g, device="cuda")
        else:
            y, sy = qgemm.empty_swiglu(rows, n // 2, device="cuda")
        y.view(torch.uint8).fill_(0xA5)
        sy.fill_(-1.0)
        cfg = config if key == "run" else None
        if layout == "masked":
            qgemm.m_grouped_fp8_gemm_nt_masked_swiglu((a, sfa), (bi, sfbi), y, sy, idx, m,
                                                      row_weight=w.view(g, m), swiglu_limit=6.0,
                                                      config=cfg)
        else:
            qgemm.m_grouped_fp8_gemm_nt_contiguous_swiglu((a, sfa), (bi, sfbi), y, sy, idx,
                                                          row_weight=w, swiglu_limit=6.0,
                                                          config=cfg)
        torch.cuda.synchronize()
        outs[key] = (y.view(torch.uint8).clone(), sy.clone())
    (d0, s0), (d1, s1) = outs["default"], outs["run"]
    assert torch.equal(d0, d1), f"{run}: bytes differ from the default's"
    assert torch.equal(s0.view(torch.int32), s1.view(torch.int32)), f"{run}: scales differ"
    # (the default itself against the unfused path, rows unweighted: one check of the math)
    monkeypatch.delenv("QGEMM_FP8OUT_VARIANT", raising=False)
    h = torch.empty(*(a.shape[:-1]), n, device="cuda", dtype=torch.bfloat16)
    if layout == "masked":
        y, sy = qgemm.empty_swiglu(m, n // 2, num_groups=g, device="cuda")
        qgemm.m_grouped_fp8_gemm_nt_masked_swiglu((a, sfa), (bi, sfbi), y, sy, idx, m)
        qgemm.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), h, idx, m)
        q_ref, _ = qgemm.silu_and_mul_fp8_quant(h, masked_m=idx, sf_mn_major=True)
        sel = torch.arange(m, device="cuda")[None, :] < idx[:, None]
        got, want = y.view(torch.uint8)[sel], q_ref.view(torch.uint8)[sel]
    else:
        y, sy = qgemm.empty_swiglu(rows, n // 2, device="cuda")
        qgemm.m_grouped_fp8_gemm_nt_contiguous_swiglu((a, sfa), (bi, sfbi), y, sy, idx)
        qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), h, idx)
        q_ref, _ = qgemm.silu_and_mul_fp8_quant(h, m_indices=idx, sf_mn_major=True)
        got, want = y.view(torch.uint8), q_ref.view(torch.uint8)
    diff = (got != want).float().mean().item()
    assert diff < 0.05, f"{diff:.3%} of the bytes differ from the unfused path"
