"""The training GEMMs on a Hopper GPU: the weight gradient (both operands
scaled per 1x128, FP32 D, D = C + A B^T by TMA reduce-add) and the psum
layout of the contiguous grouped GEMM (issue 30).

Every result is compared with a float64 product of the exactly dequantized
inputs (docs/DESIGN.md §7), diff < 1e-5; outputs are poisoned first and the
rows and columns a call must not write are checked unchanged; shapes are not
multiples of the tiles; each message carries the seed.
"""
from __future__ import annotations

import random

import pytest

import qgemm
from reference import calc_diff, dequant_a, dequant_b

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("skipped: no GPU (no CUDA device visible to torch)", allow_module_level=True)
_props = torch.cuda.get_device_properties(0)
if (_props.major, _props.minor) != (9, 0):
    pytest.skip(f"qgemm needs sm_90 (Hopper); cuda:0 is {_props.name}", allow_module_level=True)

DEV = "cuda"
PATTERN = -1234.0


def _gen(seed):
    return torch.Generator(device=DEV).manual_seed(seed)


def per_token(shape, seed, scale=1.0):
    """(e4m3, row-major float32 [.., rows, ceil(K/128)] scales) of random data."""
    g = _gen(seed)
    x = torch.randn(shape, device=DEV, generator=g) * scale
    x = x * torch.exp(torch.randn(*shape[:-1], 1, device=DEV, generator=g))
    return qgemm.per_token_cast_to_fp8(x.bfloat16())


# ---- weight gradient ----------------------------------------------------------------------

WGRAD_SHAPES = [(2112, 4096, 7168), (576, 4096, 7168), (300, 520, 400), (1000, 136, 2048),
                (64, 256, 128), (4096, 7168, 2048)]


def wgrad_problem(m, n, k, seed):
    a, sfa = per_token((m, k), seed)
    b, sfb = per_token((n, k), seed + 1, 0.05)
    ref = dequant_a(a, sfa) @ dequant_a(b, sfb).T
    mn = qgemm.get_mn_major_tma_aligned_tensor
    return (a, mn(sfa)), (b, mn(sfb)), ref


def check_wgrad(m, n, k, mode, config=None):
    """One weight-gradient call (mode: store, in-place or separate-c; config:
    a forced tile or None) on fresh inputs, against the fp64 reference, with D
    inside a poisoned wider array: columns past N must stay untouched."""
    seed = random.randrange(2 ** 31)
    what = f"seed {seed}: {m}x{n}x{k} {mode}" + (f" {config}" if config else "")
    a, b, ref = wgrad_problem(m, n, k, seed)
    c = torch.randn(m, n, device=DEV, generator=_gen(seed + 7), dtype=torch.float64) * 32
    full = torch.full((m, n + 8), PATTERN, device=DEV, dtype=torch.float32)
    d = full[:, :n]
    if mode == "store":
        qgemm.fp8_gemm_nt(a, b, d, recipe=(1, 1, 128), config=config)
        want = ref
    elif mode == "in-place":
        d.copy_(c)
        qgemm.fp8_gemm_nt(a, b, d, c=d, recipe=(1, 1, 128), config=config)
        want = c.float().double() + ref
    else:
        c32 = c.float()
        qgemm.fp8_gemm_nt(a, b, d, c=c32, recipe=(1, 1, 128), config=config)
        want = c32.double() + ref
        assert torch.equal(c32, c.float()), f"{what}: c was modified"
    torch.cuda.synchronize()
    assert not torch.isnan(d).any(), f"{what}: NaN in d"
    diff = calc_diff(d, want)
    assert diff < 1e-5, f"{what}: diff {diff:.3g}"
    assert (full[:, n:] == PATTERN).all(), f"{what}: columns past N were written"


@pytest.mark.parametrize("m,n,k", WGRAD_SHAPES)
@pytest.mark.parametrize("mode", ["store", "in-place", "separate-c"])
def test_wgrad(m, n, k, mode):
    check_wgrad(m, n, k, mode)


# Forced tiles of every FP32 store-chunk width (block_n a multiple of 32, 16,
# only 8), B multicast, 64-row tiles: N = 712 and M = 500 leave partial tiles
# at both edges; M = 500 has 4 m-blocks of 128 (even: multicast B pairs them).
# K = 640: 128x136 stores row-major and runs the unrolled loop
# (QG_ROWS_136_UNROLLED); 128x128 A is the heuristic's long-K tile.
WGRAD_TILES = [(128, 152, "none"), (128, 136, "none"), (128, 144, "b"), (128, 160, "b"),
               (128, 120, "a"), (128, 128, "a"), (64, 152, "none"), (64, 88, "none")]


@pytest.mark.parametrize("bm,bn,mc", WGRAD_TILES)
@pytest.mark.parametrize("mode", ["store", "in-place"])
def test_wgrad_tiles(bm, bn, mc, mode):
    check_wgrad(500, 712 if mc != "a" else 720, 640, mode,
                {"block_m": bm, "block_n": bn, "multicast": mc})


def test_wgrad_deepgemm_names():
    """DeepGEMM's call (test_gemm's wgrad case): row-major scales from its casts, c = d."""
    import qgemm.deep_gemm as deep_gemm
    seed = random.randrange(2 ** 31)
    m, n, k = 576, 4096, 7168
    a, sfa = per_token((m, k), seed)
    b, sfb = per_token((n, k), seed + 1, 0.05)
    ref = dequant_a(a, sfa) @ dequant_a(b, sfb).T
    d = torch.randn(m, n, device=DEV, generator=_gen(seed + 2)) * 32
    want = d.double() + ref
    deep_gemm.fp8_fp4_gemm_nt((a, sfa), (b, sfb), d, c=d, recipe=(1, 1, 128),
                              disable_ue8m0_cast=True)
    torch.cuda.synchronize()
    assert calc_diff(d, want) < 1e-5, f"seed {seed}"


def test_wgrad_rejected_calls_leave_d_untouched():
    seed = random.randrange(2 ** 31)
    a, b, _ = wgrad_problem(256, 512, 1024, seed)
    d = torch.full((256, 512), PATTERN, device=DEV)
    overlap = torch.zeros(256 * 512 + 64, device=DEV)
    with pytest.raises(ValueError, match="overlaps args->d"):
        qgemm.fp8_gemm_nt(a, b, overlap[64:].view(256, 512), c=overlap[:-64].view(256, 512),
                          recipe=(1, 1, 128))
    with pytest.raises(ValueError, match="d must have dtype float32"):
        qgemm.fp8_gemm_nt(a, b, d.bfloat16(), recipe=(1, 1, 128))
    with pytest.raises(ValueError, match=r"sfb"):
        qgemm.fp8_gemm_nt(a, (b[0], b[1][:, :3]), d, recipe=(1, 1, 128))
    torch.cuda.synchronize()
    assert (d == PATTERN).all() and (overlap == 0).all(), "a rejected call wrote its output"


# ---- psum layout -------------------------------------------------------------------------


def psum_problem(seed, counts, n, k, align=128):
    starts, ends, m = [], [], 0
    for c in counts:
        starts.append(m)
        ends.append(m + c)
        m = qgemm.align(m + c, align)
    m = max(m, 1)
    a, sfa = per_token((m, k), seed)
    b, sfb = qgemm.per_block_cast_to_fp8(
        (torch.randn(len(counts), n, k, device=DEV, generator=_gen(seed + 1)) * 0.05).bfloat16())
    deq_a, deq_b = dequant_a(a, sfa), dequant_b(b, sfb)
    rows = torch.zeros(m, dtype=torch.bool, device=DEV)
    ref = torch.zeros(m, n, dtype=torch.float64, device=DEV)
    for g, (s, e) in enumerate(zip(starts, ends)):
        rows[s:e] = True
        ref[s:e] = deq_a[s:e] @ deq_b[g].T
    group_ends = torch.tensor(ends, dtype=torch.int32, device=DEV)
    return (a, qgemm.get_mn_major_tma_aligned_tensor(sfa)), (b, sfb), group_ends, rows, ref


def check_psum(counts, n, k, what, **kw):
    """One psum call (kw: its keyword arguments) on fresh inputs against the fp64 reference:
    every row of each group within 1e-5, nothing outside the groups written."""
    seed = random.randrange(2 ** 31)
    a, b, group_ends, rows, ref = psum_problem(seed, counts, n, k)
    d = torch.full((rows.shape[0], n), PATTERN, device=DEV, dtype=torch.bfloat16)
    qgemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, group_ends, use_psum_layout=True, **kw)
    torch.cuda.synchronize()
    diff = calc_diff(d[rows], ref[rows])
    assert diff < 1e-5, f"seed {seed}: {what}: diff {diff:.3g}"
    assert (d[~rows] == PATTERN).all(), f"seed {seed}: {what}: rows outside the groups were written"


@pytest.mark.parametrize("counts,n,k", [
    ([200, 0, 128, 77, 300], 576, 400),        # an empty group, full and partial blocks
    ([1, 129, 255, 256], 4096, 7168),
    ([5000, 3000, 4100, 6000], 6144, 7168),    # DeepGEMM's contiguous psum scale
    ([0, 0, 50], 512, 1024),                   # leading empty groups
])
def test_psum(counts, n, k):
    check_psum(counts, n, k, f"counts {counts}", expected_m_for_psum_layout=max(counts))


@pytest.mark.parametrize("heur", [None, "none", "notall", "nomcb", "nomcbc"],
                         ids=lambda h: h or "default")
def test_psum_fp8_heur(monkeypatch, heur):
    """QGEMM_FP8_HEUR's alternatives (src/fp8_config.c qg__fp8_heur) in the psum layout, grouped
    B multicast on: groups of ~1024 rows at 4096 x 6144 (the tall 256x128 A under none, 128x192
    B under notall and the default, notall+nomcb) and of ~300 rows at K 1536 (128x192 B under
    none, no B under nomcb and the default; None: the variable unset, the default)."""
    monkeypatch.setenv("QGEMM_FP8_GROUPED_MCB", "1")
    if heur is None:
        monkeypatch.delenv("QGEMM_FP8_HEUR", raising=False)
    else:
        monkeypatch.setenv("QGEMM_FP8_HEUR", heur)
    check_psum([1024, 0, 1100, 900, 1024, 1000], 4096, 6144, f"QGEMM_FP8_HEUR {heur}",
               expected_m_for_psum_layout=1024)
    check_psum([300, 1, 290, 257], 4096, 1536, f"QGEMM_FP8_HEUR {heur}",
               expected_m_for_psum_layout=300)


@pytest.mark.parametrize("config", [
    {"block_m": 128, "block_n": 256, "multicast": "none"},
    {"block_m": 128, "block_n": 256, "multicast": "a"},
    {"block_m": 128, "block_n": 224, "multicast": "none"},
    {"block_m": 128, "block_n": 192, "multicast": "a"},
    {"block_m": 256, "block_n": 128, "multicast": "none"},
    {"block_m": 256, "block_n": 128, "multicast": "a"},
    {"block_m": 256, "block_n": 64, "multicast": "none"},
])
def test_psum_tiles(config):
    """The wide tiles the psum walker's registers kept psum from before the SFB warp handed
    the tiles over, and the 256-row tiles, which skip the m64 tiles past a group's end (groups
    of 300, 129 and 77 rows end in their first or second m64 tile of a warpgroup)."""
    check_psum([300, 0, 129, 1000, 77], 1536, 640, f"{config}", config=config)


def test_psum_masked_through_contiguous():
    """DeepGEMM's masked-as-psum case: 32 groups of up to 4096 rows, ~192 each."""
    seed = random.randrange(2 ** 31)
    rng = random.Random(seed)
    counts = [int(192 * rng.uniform(0.7, 1.3)) for _ in range(32)]
    a, b, group_ends, rows, ref = psum_problem(seed, counts, 4096, 2048)
    d = torch.full((rows.shape[0], 4096), PATTERN, device=DEV, dtype=torch.bfloat16)
    import qgemm.deep_gemm as deep_gemm
    deep_gemm.m_grouped_fp8_fp4_gemm_nt_contiguous(a, b, d, group_ends, use_psum_layout=True,
                                                   expected_m_for_psum_layout=230,
                                                   disable_ue8m0_cast=True)
    torch.cuda.synchronize()
    assert calc_diff(d[rows], ref[rows]) < 1e-5, f"seed {seed}"
    assert (d[~rows] == PATTERN).all(), f"seed {seed}: gap rows were written"


def test_psum_ends_out_of_range_stay_inside_d():
    """group_ends past M or decreasing are device data: clamped, nothing outside d is written."""
    seed = random.randrange(2 ** 31)
    a, b, _, _, _ = psum_problem(seed, [256, 256], 512, 256)
    full = torch.full((512 + 128, 512), PATTERN, device=DEV, dtype=torch.bfloat16)
    d = full[:512]
    bad = torch.tensor([300, 10 ** 6], dtype=torch.int32, device=DEV)  # second end past M
    qgemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, bad, use_psum_layout=True)
    bad = torch.tensor([400, 100], dtype=torch.int32, device=DEV)  # decreasing: group 1 empty
    qgemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, bad, use_psum_layout=True)
    torch.cuda.synchronize()
    assert (full[512:] == PATTERN).all(), f"seed {seed}: rows past M were written"


def test_psum_cuda_graph_and_compile():
    seed = random.randrange(2 ** 31)
    a, b, group_ends, rows, ref = psum_problem(seed, [100, 300, 0, 129], 576, 512)
    d = torch.full((rows.shape[0], 576), PATTERN, device=DEV, dtype=torch.bfloat16)

    def step(a0, sfa, d):
        qgemm.m_grouped_fp8_gemm_nt_contiguous((a0, sfa), b, d, group_ends,
                                               use_psum_layout=True)
        return d

    step(*a, d)  # compile and load outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(*a, d)
    d.fill_(PATTERN)
    graph.replay()
    torch.cuda.synchronize()
    assert calc_diff(d[rows], ref[rows]) < 1e-5, f"seed {seed}: graph replay"
    assert (d[~rows] == PATTERN).all()
    compiled = torch.compile(step, fullgraph=True)
    d.fill_(PATTERN)
    compiled(*a, d)
    torch.cuda.synchronize()
    assert calc_diff(d[rows], ref[rows]) < 1e-5, f"seed {seed}: torch.compile"


def test_wgrad_compile():
    seed = random.randrange(2 ** 31)
    a, b, ref = wgrad_problem(256, 512, 640, seed)
    c = torch.randn(256, 512, device=DEV, generator=_gen(seed + 3))

    @torch.compile(fullgraph=True)
    def step(a0, sfa, b0, sfb, d):
        qgemm.fp8_gemm_nt((a0, sfa), (b0, sfb), d, c=d, recipe=(1, 1, 128))
        return d

    d = c.clone()
    step(*a, *b, d)
    torch.cuda.synchronize()
    assert calc_diff(d, c.double() + ref) < 1e-5, f"seed {seed}"


# ---- k-grouped weight gradient -------------------------------------------------------------


# 35 groups: more than one launch's 32 (the C library's QG_KGROUP_MAX), empty ones among them
_MANY_KS = [128 * (1 + (7 * i) % 5) if i % 6 else 0 for i in range(35)]


@pytest.mark.parametrize("mode", ["inplace", "none", "separate"])
@pytest.mark.parametrize("ks,m,n", [([384, 0, 128, 1024], 256, 384), ([2048, 1536, 2560], 4096, 520),
                                    ([640, 256], 200, 136), (_MANY_KS, 136, 264)])
def test_k_grouped(ks, m, n, mode):
    """DeepGEMM's layout: group g's A_g [M, K_g] and B_g [N, K_g] one after the
    other in flat tensors, per-channel scales [M|N, sum(K)/128]; d = c + A_g B_g^T
    in place (mode inplace, DeepGEMM's use), d = A_g B_g^T (none: d poisoned
    first, an empty group's d is zero), or d = c + A_g B_g^T with c another
    tensor (separate: c unchanged); an empty group keeps c."""
    import qgemm.deep_gemm as deep_gemm
    seed = random.randrange(2 ** 31)
    g = len(ks)
    parts_a, parts_b, sfa_cols, sfb_cols, ref = [], [], [], [], []
    c = torch.randn(g, m, n, device=DEV, generator=_gen(seed + 5)) * 32
    c_ref = torch.zeros_like(c) if mode == "none" else c
    for i, k in enumerate(ks):
        if k == 0:
            ref.append(c_ref[i].double())
            continue
        a_i, sfa_i = per_token((m, k), seed + 10 * i)
        b_i, sfb_i = per_token((n, k), seed + 10 * i + 1, 0.05)
        parts_a.append(a_i.reshape(-1))
        parts_b.append(b_i.reshape(-1))
        sfa_cols.append(sfa_i)
        sfb_cols.append(sfb_i)
        ref.append(c_ref[i].double() + dequant_a(a_i, sfa_i) @ dequant_a(b_i, sfb_i).T)
    a = torch.cat(parts_a)
    b = torch.cat(parts_b)
    # DeepGEMM hands the scales over as sf.T of a [sum(K)/128, M] tensor: M-major
    sfa = torch.cat(sfa_cols, dim=1).T.contiguous().T
    sfb = torch.cat(sfb_cols, dim=1).T.contiguous().T
    c_saved = c.clone()
    d = c.clone() if mode == "inplace" else torch.full_like(c, float("nan"))
    c_arg = {"inplace": d, "none": None, "separate": c}[mode]
    layout = torch.tensor(ks, dtype=torch.int32, device=DEV)
    deep_gemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, ks, layout, c_arg,
                                               recipe=(1, 1, 128))
    torch.cuda.synchronize()
    for i in range(g):
        if ks[i] == 0 and mode == "none":  # (calc_diff of zeros is 0 / 0)
            assert bool((d[i] == 0).all()), f"group {i} is empty: its d must be zero"
            continue
        diff = calc_diff(d[i], ref[i])
        assert diff < 1e-5, f"seed {seed}: group {i} (K {ks[i]}): diff {diff:.3g}"
    if mode == "separate":
        assert torch.equal(c, c_saved), "c was modified"
