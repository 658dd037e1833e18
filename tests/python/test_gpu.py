"""qgemm on a Hopper GPU, through PyTorch (and CuPy / JAX where installed).

Every result is compared with a product computed by torch in float64 on the
exactly dequantized inputs (docs/DESIGN.md §7): the only differences left
are FP32 accumulation and bfloat16 rounding, so diff < 1e-5. Inputs are fresh
random numbers; each message carries the seed that reproduces it.
"""
from __future__ import annotations

import os
import random
import threading

import pytest

import qgemm
from entry_points import call_kind
from reference import calc_diff, dequant_a, dequant_b

# JAX (if a test imports it) must not grab most of the GPU memory torch needs
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("skipped: no GPU (no CUDA device visible to torch)", allow_module_level=True)
_props = torch.cuda.get_device_properties(0)
if (_props.major, _props.minor) != (9, 0):
    pytest.skip(f"qgemm needs sm_90 (Hopper); cuda:0 is {_props.name} "
                f"(sm_{_props.major}{_props.minor})", allow_module_level=True)

DEV = "cuda"
BF16_PATTERN = -1234.0  # exactly representable: marks rows a GEMM must not write


# ---- inputs and the reference ---------------------------------------------------


def _gen(seed):
    return torch.Generator(device=DEV).manual_seed(seed)


def activations(shape, seed):
    """(a e4m3, sfa row-major float32) for random activations of `shape` [..., M, K]."""
    g = _gen(seed)
    x = torch.randn(shape, device=DEV, generator=g)
    x = x * torch.exp(torch.randn(*shape[:-1], 1, device=DEV, generator=g))
    return qgemm.per_token_cast_to_fp8(x.bfloat16())


def weights(shape, seed):
    """(b e4m3, sfb float32) for random weights of `shape` [..., N, K]."""
    g = _gen(seed + 1)
    w = torch.randn(shape, device=DEV, generator=g) * 0.05
    return qgemm.per_block_cast_to_fp8(w.bfloat16())


def dense_problem(m, n, k):
    seed = random.randrange(2 ** 31)
    a, sfa = activations((m, k), seed)
    b, sfb = weights((n, k), seed)
    ref = dequant_a(a, sfa) @ dequant_b(b, sfb).T
    return seed, a, qgemm.get_col_major_tma_aligned_tensor(sfa), b, sfb, ref


def assert_matches(d, ref, seed, what=""):
    assert not torch.isnan(d).any(), f"seed {seed}{what}: NaN in the output (rows not written?)"
    diff = calc_diff(d, ref)
    assert diff < 1e-5, f"seed {seed}{what}: diff {diff:.3g} against the dequantized reference"


def bits(t):
    return t.view(torch.int16).clone()


def _queue_delay(stream):
    """Keep `stream` busy for a while, so work queued after it is clearly late."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU clock cycles


def _assert_still_busy(stream):
    """The delay must outlast the host's work up to the GEMM's launch: had it
    ended, a GEMM launched on the wrong stream would read the finished copy
    and the test could not tell streams apart."""
    assert not stream.query(), ("the delay ended before the GEMM was queued (compiled inside "
                                "the call?): this test cannot tell streams apart")


# ---- dense ---------------------------------------------------------------------------


@pytest.mark.parametrize("m,n,k", [
    (1, 2112, 7168),       # decode: a single token
    (64, 2112, 7168),
    (128, 24576, 1536),
    (100, 200, 304),       # nothing a multiple of 128
    (333, 1000, 640),
    (64, 7168, 16384),     # long K: two-level accumulation matters
    (4096, 7168, 2048),
])
def test_dense_matches_dequantized_reference(m, n, k):
    seed, a, sfa, b, sfb, ref = dense_problem(m, n, k)
    d = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=DEV)
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
    torch.cuda.synchronize()
    assert_matches(d, ref, seed)


def test_dense_padded_output_rows():
    m, n, k = 200, 512, 1024
    seed, a, sfa, b, sfb, ref = dense_problem(m, n, k)
    full = torch.full((m, n + 64), BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
    d = full[:, :n]
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
    torch.cuda.synchronize()
    assert_matches(d, ref, seed)
    assert (full[:, n:] == BF16_PATTERN).all(), "the GEMM wrote past N into the row padding"


def test_dense_through_the_uint8_fallback(monkeypatch):
    # what happens with PyTorch < 2.8, which cannot export float8 through DLPack
    # (stream= takes the DLPack path instead of the torch fast path)
    monkeypatch.setattr(qgemm._dispatch, "TORCH_FP8_DLPACK", False)
    seed, a, sfa, b, sfb, ref = dense_problem(256, 1024, 512)
    d = torch.empty(256, 1024, dtype=torch.bfloat16, device=DEV)
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb.requires_grad_()), d,  # and a tensor requiring grad
                      stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    assert_matches(d, ref, seed)


def test_forced_config():
    seed, a, sfa, b, sfb, ref = dense_problem(256, 2112, 7168)
    cfg = qgemm.select_config(256, 2112, 7168)
    # another tile that fits the register budget (one side below 128)
    forced = {"block_m": 64, "block_n": 128 if (cfg["block_m"], cfg["block_n"]) != (64, 128) else 64}
    d = torch.empty(256, 2112, dtype=torch.bfloat16, device=DEV)
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d, config=forced)
    torch.cuda.synchronize()
    assert_matches(d, ref, seed, f", config {forced}")


# ---- other DLPack producers ---------------------------------------------------------


def test_dense_with_cupy_scales():
    cupy = pytest.importorskip("cupy")
    seed, a, sfa, b, sfb, ref = dense_problem(300, 768, 1024)
    sfa_cp, sfb_cp = cupy.from_dlpack(sfa), cupy.from_dlpack(sfb)
    assert sfa_cp.strides == (4, 4 * sfa.stride(1))  # still M-major
    d = torch.empty(300, 768, dtype=torch.bfloat16, device=DEV)
    qgemm.fp8_gemm_nt((a, sfa_cp), (b, sfb_cp), d)
    torch.cuda.synchronize()
    assert_matches(d, ref, seed)


def test_cupy_has_no_e4m3_and_bytes_are_not_accepted():
    # CuPy has no FP8 dtype: its uint8 view of FP8 data is refused, not guessed at
    cupy = pytest.importorskip("cupy")
    _, a, sfa, b, sfb, _ = dense_problem(128, 256, 256)
    d = torch.empty(128, 256, dtype=torch.bfloat16, device=DEV)
    with pytest.raises(ValueError, match="a must have dtype float8_e4m3fn, got uint8"):
        qgemm.fp8_gemm_nt((cupy.from_dlpack(a.view(torch.uint8)), sfa), (b, sfb), d)


def test_dense_with_jax_fp8_operands():
    jax = pytest.importorskip("jax")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    gpus = [dev for dev in jax.devices() if dev.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU")
    seed, a, sfa, b, sfb, ref = dense_problem(256, 512, 768)

    def to_jax(t):
        host = t.view(torch.uint8).cpu().numpy().view(ml_dtypes.float8_e4m3fn)
        return jax.device_put(host, gpus[0])

    a_j, b_j = to_jax(a), to_jax(b)
    sfb_j = jax.device_put(sfb.cpu().numpy(), gpus[0])
    try:
        stream = torch.cuda.current_stream().cuda_stream or 1
        a_j.__dlpack__(stream=stream, max_version=(1, 1))
    except TypeError:
        pass  # a pre-1.0 JAX: qgemm retries without max_version
    except Exception as e:
        pytest.skip(f"this JAX cannot export float8_e4m3fn through DLPack: {e}")
    d = torch.empty(256, 512, dtype=torch.bfloat16, device=DEV)
    qgemm.fp8_gemm_nt((a_j, sfa), (b_j, sfb_j), d)
    torch.cuda.synchronize()
    assert_matches(d, ref, seed)


# ---- streams ----------------------------------------------------------------------------


def test_runs_on_the_current_torch_stream():
    m, n, k = 512, 1024, 2048
    seed, a, sfa, b, sfb, ref = dense_problem(m, n, k)
    a_late = torch.zeros_like(a)
    d = torch.zeros(m, n, dtype=torch.bfloat16, device=DEV)
    qgemm.compile(m, n, k)  # JIT and module loading must not pass while the delay runs
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)  # and neither may any first-call work
    d.zero_()  # the result checked below must come from the call under test
    torch.cuda.synchronize()
    side = torch.cuda.Stream()  # torch's streams do not sync with the legacy stream
    _queue_delay(side)
    with torch.cuda.stream(side):
        a_late.copy_(a)  # queued behind the delay
        qgemm.fp8_gemm_nt((a_late, sfa), (b, sfb), d)  # must wait for the copy
        _assert_still_busy(side)
        out = d.clone()  # must wait for the GEMM
    side.synchronize()
    assert_matches(out, ref, seed, " (the GEMM ran outside the current stream's order?)")


@pytest.mark.parametrize("as_handle", [False, True])
def test_stream_argument_overrides_the_current_stream(as_handle):
    m, n, k = 512, 1024, 2048
    seed, a, sfa, b, sfb, ref = dense_problem(m, n, k)
    a_late = torch.zeros_like(a)
    d = torch.zeros(m, n, dtype=torch.bfloat16, device=DEV)
    qgemm.compile(m, n, k)  # JIT and module loading must not pass while the delay runs
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)  # and neither may any first-call work
    d.zero_()  # the result checked below must come from the call under test
    torch.cuda.synchronize()
    other = torch.cuda.Stream()
    _queue_delay(other)
    with torch.cuda.stream(other):
        a_late.copy_(a)
    # called from the default stream, but told to run on `other`
    qgemm.fp8_gemm_nt((a_late, sfa), (b, sfb), d,
                      stream=other.cuda_stream if as_handle else other)
    _assert_still_busy(other)
    with torch.cuda.stream(other):
        out = d.clone()
    other.synchronize()
    assert_matches(out, ref, seed, " (stream= was not honoured?)")


def test_cuda_graph_capture():
    m, n, k = 256, 2112, 7168
    seed, a, sfa, b, sfb, ref = dense_problem(m, n, k)
    d = torch.empty(m, n, dtype=torch.bfloat16, device=DEV)
    qgemm.compile(m, n, k)  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
    d.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(d, ref, seed, " (graph replay)")
    # new values in the captured buffers: the replay computes with them
    a2, sfa2 = activations((m, k), seed + 7)
    a.copy_(a2)
    sfa.copy_(qgemm.get_col_major_tma_aligned_tensor(sfa2))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(d, dequant_a(a2, sfa2) @ dequant_b(b, sfb).T, seed, " (second replay)")


def test_threads_share_one_context():
    failures = []

    def work(i):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for j in range(4):
                m, n, k = 64 * (i + 1) + j, 256 * (j + 1), 512 + 128 * i
                seed, a, sfa, b, sfb, ref = dense_problem(m, n, k)
                d = torch.empty(m, n, dtype=torch.bfloat16, device=DEV)
                qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
                stream.synchronize()
                diff = calc_diff(d, ref)
                if not diff < 1e-5:
                    failures.append((i, j, seed, diff))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


# ---- grouped GEMMs -------------------------------------------------------------------


def contiguous_problem(seed, g=4, n=576, k=1024, sizes=None):
    """Inputs of a contiguous grouped GEMM with uneven experts (one empty) and
    an all-padding segment, and reference(a, sfa) -> (float64 product of the
    rows the GEMM writes, their mask). Every row of a 128-row segment whose
    first row names an expert is written, its -1 rows with that expert's B
    (as DeepGEMM); segments that start with -1 are not."""
    align = qgemm.get_m_alignment_for_contiguous_layout()
    rng = random.Random(seed)
    if sizes is None:
        sizes = [rng.randrange(1, 3 * align), 0, align, rng.randrange(1, align)][:g]
    g = len(sizes)
    starts, m = [], 0
    for e, size in enumerate(sizes):
        if e == 1:
            m += align  # a whole segment of padding rows before expert 1
        starts.append(m)
        m += qgemm.ceil_div(size, align) * align
    m_indices = torch.full((m,), -1, dtype=torch.int32, device=DEV)
    for e, (start, size) in enumerate(zip(starts, sizes)):
        m_indices[start:start + size] = e
    a, sfa = activations((m, k), seed)
    b, sfb = weights((g, n, k), seed)
    segment_expert = m_indices[torch.arange(m, device=DEV) // align * align]
    valid = segment_expert >= 0

    def reference(a, sfa):
        ref = torch.empty(m, n, dtype=torch.float64, device=DEV)
        deq_a, deq_b = dequant_a(a, sfa), dequant_b(b, sfb)
        for e in range(g):
            rows = segment_expert == e
            ref[rows] = deq_a[rows] @ deq_b[e].T
        return ref[valid]

    sfa = qgemm.get_col_major_tma_aligned_tensor(sfa)  # the same values, as the GEMM reads them
    return sizes, a, sfa, b, sfb, m_indices, valid, reference(a, sfa), reference


def test_grouped_contiguous():
    seed = random.randrange(2 ** 31)
    sizes, a, sfa, b, sfb, m_indices, valid, ref, _ = contiguous_problem(seed)
    d = torch.full((a.shape[0], b.shape[1]), BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
    qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, m_indices)
    torch.cuda.synchronize()
    assert_matches(d[valid], ref, seed, f", sizes {sizes}")
    assert (~valid).any(), "the problem must hold an all-padding segment"
    assert (d[~valid] == BF16_PATTERN).all(), f"seed {seed}: an all-padding segment was written"


# The tiles whose K loop runs unrolled (kernels/qg_fp8_gemm.cuh, QG_K_UNROLL: 128x192 and
# 256x128 by 4, 128x256 by 8), forced, at K = 1280: 10 K blocks, so the unrolled loop also runs
# a remainder. (K = 1152 spills 256x128 A, as it did rolled: the heuristic falls back there,
# a forced config is refused.) (kind, config)
UNROLLED = [
    ("dense", {"block_m": 128, "block_n": 192, "multicast": "none"}),
    ("dense", {"block_m": 128, "block_n": 192, "multicast": "b"}),
    ("dense", {"block_m": 256, "block_n": 128, "multicast": "a"}),
    ("dense", {"block_m": 128, "block_n": 256, "multicast": "none"}),
    ("contiguous", {"block_m": 128, "block_n": 192, "multicast": "a"}),
    ("contiguous", {"block_m": 128, "block_n": 256, "multicast": "none"}),
    ("contiguous", {"block_m": 128, "block_n": 192, "multicast": "b"}),
    ("masked", {"block_m": 256, "block_n": 128, "multicast": "a"}),
    ("masked", {"block_m": 128, "block_n": 192, "multicast": "b"}),
    ("masked", {"block_m": 128, "block_n": 256, "multicast": "a"}),
]


@pytest.mark.parametrize("kind,config", UNROLLED, ids=lambda x: x if isinstance(x, str) else
                         f"{x['block_m']}x{x['block_n']}{x['multicast'][0]}")
def test_unrolled_tiles(kind, config):
    seed = random.randrange(2 ** 31)
    what = f", {kind} {config}"
    if kind == "dense":
        seed, a, sfa, b, sfb, ref = dense_problem(512, 1024, 1280)
        d = torch.full(ref.shape, BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d, config=config)
        torch.cuda.synchronize()
        assert_matches(d, ref, seed, what)
    elif kind == "contiguous":
        sizes, a, sfa, b, sfb, m_indices, valid, ref, _ = contiguous_problem(seed, n=1536, k=1280)
        d = torch.full((a.shape[0], b.shape[1]), BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
        qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, m_indices, config=config)
        torch.cuda.synchronize()
        assert_matches(d[valid], ref, seed, f"{what}, sizes {sizes}")
        assert (d[~valid] == BF16_PATTERN).all(), f"seed {seed}{what}: padding rows were written"
    else:
        counts, a, sfa, b, sfb, masked_m, reference = masked_problem(seed, m_max=384, n=1024,
                                                                     k=1280)
        g, m_max, n = a.shape[0], a.shape[1], b.shape[1]
        d = torch.full((g, m_max, n), BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
        qgemm.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), d, masked_m, 300, config=config)
        torch.cuda.synchronize()
        assert_masked(d, counts, reference, a, sfa, seed, what)


def masked_problem(seed, g=4, m_max=256, n=512, k=1536, counts=None):
    """Inputs of a masked grouped GEMM (groups of 0, 1, some and m_max rows, or the given
    counts) and reference(a, sfa, d) -> (the valid rows of d, their float64 product)."""
    if counts is None:
        counts = [0, 1, random.Random(seed).randrange(2, m_max), m_max][:g]
    g = len(counts)
    masked_m = torch.tensor(counts, dtype=torch.int32, device=DEV)
    a, sfa = activations((g, m_max, k), seed)
    b, sfb = weights((g, n, k), seed)

    def reference(a, sfa, d):
        deq_a, deq_b = dequant_a(a, sfa), dequant_b(b, sfb)
        got = [d[e, :rows] for e, rows in enumerate(counts)]
        want = [deq_a[e, :rows] @ deq_b[e].T for e, rows in enumerate(counts)]
        return torch.cat(got), torch.cat(want)

    return counts, a, qgemm.get_col_major_tma_aligned_tensor(sfa), b, sfb, masked_m, reference


def assert_masked(d, counts, reference, a, sfa, seed, what=""):
    """Rows past each group's masked_m still hold the pattern; the others match the reference."""
    for e, rows in enumerate(counts):
        assert (d[e, rows:] == BF16_PATTERN).all(), f"seed {seed}{what}: group {e} rows past masked_m written"
    got, want = reference(a, sfa, d)
    assert_matches(got, want, seed, f"{what}, masked_m {counts}")


@pytest.mark.parametrize("expected_m", [1, 64, 256])
def test_grouped_masked(expected_m):
    seed = random.randrange(2 ** 31)
    counts, a, sfa, b, sfb, masked_m, reference = masked_problem(seed)
    g, m_max, n = a.shape[0], a.shape[1], b.shape[1]
    d = torch.full((g, m_max, n), BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
    qgemm.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), d, masked_m, expected_m)
    torch.cuda.synchronize()
    assert_masked(d, counts, reference, a, sfa, seed)


@pytest.mark.parametrize("k,expected_m,tile", [(512, 1000, (128, 192, 1)),
                                                (3072, 1024, (256, 128, 1))])
def test_grouped_masked_groups_of_1024_rows(monkeypatch, k, expected_m, tile):
    # the heuristic's tiles for masked groups of ~1024 rows without B multicast
    # (QGEMM_FP8_GROUPED_MCB=0; src/fp8_config.c: 128x192 with A multicast; 256x128 with A
    # multicast, skipping the m64 tiles past a group's end, from K 3072 and 1024 expected
    # rows), one group empty and one full, against the float64 reference; then the default
    # choice (on HBM3e devices such as the H200 B multicast may be picked: 128x192 B, per-tile
    # pairs), the same check
    seed = random.randrange(2 ** 31)
    m_max, n = 1024, 4096
    counts, a, sfa, b, sfb, masked_m, reference = masked_problem(
        seed, m_max=m_max, n=n, k=k,
        counts=[1000, 0, 1024, random.Random(seed).randrange(129, 1024), 640, 1])
    for mcb in ("0", None):
        if mcb is None:
            monkeypatch.delenv("QGEMM_FP8_GROUPED_MCB", raising=False)
        else:
            monkeypatch.setenv("QGEMM_FP8_GROUPED_MCB", mcb)
        cfg = qgemm.select_config(m_max, n, k, kind="masked", num_groups=len(counts),
                                  expected_m=expected_m)
        if mcb == "0":
            assert (cfg["block_m"], cfg["block_n"], cfg["multicast"]) == tile, cfg
        d = torch.full((len(counts), m_max, n), BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
        qgemm.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), d, masked_m, expected_m)
        torch.cuda.synchronize()
        assert_masked(d, counts, reference, a, sfa, seed, f", QGEMM_FP8_GROUPED_MCB {mcb}, {cfg}")


# QGEMM_FP8_HEUR's alternatives to the heuristic's choice (issue 52; src/fp8_config.c
# qg__fp8_heur), read per call: each must compute the same product as `none` (the heuristic
# without alternatives, the baseline here). notall+nomcb is the default since 2026-11-29 (None:
# the variable unset). With grouped B multicast on (QGEMM_FP8_GROUPED_MCB=1, as the H200's
# default) the masked problem of 4 x ~1228 expected rows, 4096 x 6144, takes the tall 256x128 A
# under none and 128x192 B under notall (K >= 6144), on H100 and H200 alike
# (bench/heur_table.py); 4 x ~300 rows at K 1536 take 128x192 B under none and no B under
# nomcb. (swN, the long-K swizzle group, left the tree on 2026-11-29: refused now.)
HEURS = [None, "notall", "nomcb", "nomcbc", "default+nomcbc"]


def _tile(cfg):
    return cfg["block_m"], cfg["block_n"], cfg["multicast"]


def _heur_words(heur):
    """The flags a QGEMM_FP8_HEUR value names (None, unset: the default, notall+nomcb)."""
    toks = (heur or "default").split("+")
    return set(toks) | ({"notall", "nomcb"} if "default" in toks else set())


@pytest.mark.parametrize("heur", HEURS, ids=lambda h: h or "default")
def test_fp8_heur_alternatives(monkeypatch, heur):
    monkeypatch.setenv("QGEMM_FP8_GROUPED_MCB", "1")
    seed = random.randrange(2 ** 31)
    rng = random.Random(seed)
    toks = _heur_words(heur)

    def both(run, cfg_of, k):
        """(baseline result, alternative result, baseline config, alternative config)"""
        out = []
        for h in ("none", heur):
            if h is None:
                monkeypatch.delenv("QGEMM_FP8_HEUR", raising=False)
            else:
                monkeypatch.setenv("QGEMM_FP8_HEUR", h)
            out.append((run(), cfg_of()))
        (d0, c0), (d1, c1) = out
        if _tile(c0) == _tile(c1):
            assert torch.equal(bits(d0), bits(d1)), \
                f"seed {seed}, {heur}: same tile {c1}, different bits from none's {c0}"
        return d0, d1, c0, c1

    # masked: the tall groups (notall) and the small ones (nomcb); the tiles none takes are
    # the CPU planner's on 132 SMs (H100 and H200), checked there
    sms = torch.cuda.get_device_properties(DEV).multi_processor_count
    for m_max, n, k, em, counts in [
            (1280, 4096, 6144, 1228, [1280, 0, rng.randrange(129, 1280), 1000]),
            (384, 4096, 1536, 300, [384, 0, rng.randrange(1, 384), 300])]:
        counts_, a, sfa, b, sfb, masked_m, reference = masked_problem(
            seed, m_max=m_max, n=n, k=k, counts=counts)

        def run():
            d = torch.full((len(counts), m_max, n), BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
            qgemm.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), d, masked_m, em)
            torch.cuda.synchronize()
            return d

        def cfg():
            return qgemm.select_config(m_max, n, k, kind="masked", num_groups=len(counts),
                                       expected_m=em)
        d0, d1, c0, c1 = both(run, cfg, k)
        what = f", QGEMM_FP8_HEUR {heur}, {c1} (none: {c0}), {sms} SMs"
        assert_masked(d1, counts, reference, a, sfa, seed, what)
        if "notall" in toks and em > 1024 and sms == 132:
            assert _tile(c0) == (256, 128, 1) and _tile(c1) == (128, 192, 2), what
        if "nomcb" in toks and em <= 512:
            assert c1["multicast"] != 2, what
            assert c0["multicast"] == 2 or sms != 132, what

    # contiguous: the swizzle group; 16 experts of 129..384 rows (M 4224..6272), 6144 x 6144:
    # 128x192 B under none, 128x192 or 128x128 A under nomcbc (experts averaging <= 512 rows).
    # (At N 4096 none takes 128x128 A at M 4736 on 132 SMs: the CPU planner on H100 and H200
    # properties takes B at N 6144 for every M of the range.) What is checked comes from the
    # heuristic's own answers on this device: nomcbc never B; and that it moved the choice
    # where none took B, which it does on 132 SMs (checked there).
    for n, sizes in [(1536, None), (6144, [rng.randrange(129, 385) for _ in range(16)])]:
        sizes, a, sfa, b, sfb, m_indices, valid, ref, _ = contiguous_problem(seed, n=n, k=6144,
                                                                              sizes=sizes)

        def run_c():
            d = torch.full((a.shape[0], b.shape[1]), BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
            qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, m_indices)
            torch.cuda.synchronize()
            return d
        _, d1, c0, c1 = both(run_c, lambda: qgemm.select_config(
            a.shape[0], b.shape[1], 6144, kind="contiguous", num_groups=b.shape[0]), 6144)
        what = (f", contiguous, QGEMM_FP8_HEUR {heur}, {c1} (none: {c0}), sizes {sizes}, "
                f"{sms} SMs")
        assert_matches(d1[valid], ref, seed, what)
        assert (d1[~valid] == BF16_PATTERN).all(), f"seed {seed}{what}: padding rows written"
        if "nomcbc" in toks and n == 6144:
            assert c1["multicast"] != 2, what
            assert c0["multicast"] == 2 or sms != 132, what

    # dense: the swizzle group
    dseed, a, sfa, b, sfb, ref = dense_problem(1000, 2112, 6144)

    def run_d():
        d = torch.full(ref.shape, BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
        torch.cuda.synchronize()
        return d
    _, d1, _, c1 = both(run_d, lambda: qgemm.select_config(1000, 2112, 6144), 6144)
    assert_matches(d1, ref, dseed, f", dense, QGEMM_FP8_HEUR {heur}, {c1}")


def test_fp8_heur_refuses_unknown_words(monkeypatch):
    seed, a, sfa, b, sfb, ref = dense_problem(1000, 2112, 1536)
    d = torch.full(ref.shape, BF16_PATTERN, dtype=torch.bfloat16, device=DEV)
    for bad in ("sw8", "sw16", "sw", "notall+tall", "NOTALL"):
        monkeypatch.setenv("QGEMM_FP8_HEUR", bad)
        with pytest.raises(Exception, match="QGEMM_FP8_HEUR"):
            qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
        torch.cuda.synchronize()
        assert (d == BF16_PATTERN).all(), f"QGEMM_FP8_HEUR={bad}: a refused call wrote D"


# ---- rejected calls write nothing -------------------------------------------------------


def test_rejected_calls_leave_d_untouched():
    m, n, k = 256, 512, 1024
    _, a, sfa, b, sfb, _ = dense_problem(m, n, k)
    d = torch.randn(m, n, device=DEV).bfloat16()
    before = bits(d)
    shifted = torch.empty(m * k + 16, dtype=torch.uint8, device=DEV)[1:m * k + 1]
    a_misaligned = shifted.view(m, k).view(torch.float8_e4m3fn)
    a_misaligned.copy_(a)
    sfa_k_major = sfa.contiguous()  # [M, K/128] row-major: what DeepGEMM's cast returns
    bad_calls = [
        (ValueError, "dtype float8_e4m3fn", ((a.view(torch.uint8), sfa), (b, sfb)), {}),
        (ValueError, "16-byte aligned", ((a_misaligned, sfa), (b, sfb)), {}),
        (ValueError, "M-major", ((a, sfa_k_major), (b, sfb)), {"strict": True}),  # no copy
        (ValueError, "aliases|overlaps", ((a, sfa), (b, sfb)), {"_d_is_a": True}),
        (ValueError, "dimension 1 must be 1024", ((a, sfa), (b[:, :896], sfb[:, :7])), {}),
        (ValueError, "block_m", ((a, sfa), (b, sfb)), {"config": {"block_m": 100, "block_n": 128}}),
    ]
    # d aliasing a (issue 53): one buffer holds a in its first bytes and is also d
    for exc, pattern, (lhs, rhs), kw in bad_calls:
        out = d
        if kw.pop("_d_is_a", False):
            spare = torch.empty(m * n * 2, dtype=torch.uint8, device=DEV)
            spare[: m * k].copy_(a.view(torch.uint8).view(-1))
            lhs = (spare[: m * k].view(m, k).view(torch.float8_e4m3fn), sfa)
            out = spare.view(torch.bfloat16).view(m, n)
            saved = bits(out)
        with pytest.raises(exc, match=pattern):
            qgemm.fp8_gemm_nt(lhs, rhs, out, **kw)
        torch.cuda.synchronize()
        if out is not d:
            assert torch.equal(bits(out), saved), "d aliasing a was written"
        torch.cuda.synchronize()
        assert torch.equal(bits(d), before), f"d changed by a call rejected with {pattern!r}"


# ---- device, SMs, compilation ------------------------------------------------------------


def test_device_props_agree_with_torch():
    props = qgemm.get_device_props(0)
    assert props["sm_count"] == _props.multi_processor_count
    assert props["compute_capability"] == (9, 0)
    # peak DRAM bandwidth from the memory clock and bus width (H100 SXM 3352, H200 4915 GB/s;
    # the split-K choice reads it): a Hopper part has 2-5 TB/s
    assert 2000 <= props["dram_gbps"] <= 6000, props


def test_num_sms_limits_the_grid(reset_num_sms):
    sms = _props.multi_processor_count
    assert qgemm.get_num_sms() == sms
    with pytest.raises(ValueError, match="num_sms"):
        qgemm.set_num_sms(sms + 1)
    qgemm.set_num_sms(sms // 2)
    assert qgemm.get_num_sms() == sms // 2
    assert qgemm.select_config(4096, 7168, 2048)["num_sms"] <= sms // 2
    seed, a, sfa, b, sfb, ref = dense_problem(1024, 2048, 1024)
    d = torch.empty(1024, 2048, dtype=torch.bfloat16, device=DEV)
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
    torch.cuda.synchronize()
    assert_matches(d, ref, seed, f", num_sms {sms // 2}")


def test_pdl_back_to_back_and_in_a_graph(reset_pdl):
    """With set_pdl(True) the device's context launches with PDL: GEMMs queued
    back to back on one stream, the second overwriting the first's D and the
    third reading an input the second's neighbour wrote, keep stream order,
    and a captured graph replays correctly. (That a PDL launch really waits
    for a kernel still running is the C test gpu_pdl_waits_for_previous_kernel.)"""
    qgemm.set_pdl(True)
    assert qgemm._C.context_pdl(0) is True
    m, n, k = 128, 2112, 7168
    seed1, a1, sfa1, b1, sfb1, ref1 = dense_problem(m, n, k)
    seed2, a2, sfa2, b2, sfb2, ref2 = dense_problem(m, n, k)
    qgemm.compile(m, n, k)
    d = torch.empty(m, n, dtype=torch.bfloat16, device=DEV)
    d1 = torch.empty_like(d)
    a_late = torch.zeros_like(a2)
    qgemm.fp8_gemm_nt((a1, sfa1), (b1, sfb1), d1)
    qgemm.fp8_gemm_nt((a1, sfa1), (b1, sfb1), d)
    a_late.copy_(a2)
    qgemm.fp8_gemm_nt((a_late, sfa2), (b2, sfb2), d)  # overwrites D, reads the copy
    torch.cuda.synchronize()
    assert_matches(d1, ref1, seed1, " (PDL, first GEMM)")
    assert_matches(d, ref2, seed2, " (PDL, last GEMM)")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        qgemm.fp8_gemm_nt((a1, sfa1), (b1, sfb1), d)
        qgemm.fp8_gemm_nt((a2, sfa2), (b2, sfb2), d1)
    d.fill_(float("nan"))
    d1.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(d, ref1, seed1, " (PDL, graph replay)")
    assert_matches(d1, ref2, seed2, " (PDL, graph replay)")
    qgemm.set_pdl(False)
    assert qgemm._C.context_pdl(0) is False


def test_compile_then_cache():
    info = qgemm.compile(192, 4096, 7168)
    assert info["registers"] > 0 and info["spill_store_bytes"] == 0
    assert qgemm.compile(192, 4096, 7168)["cache_hit"] in (1, 2)


# ---- every entry point: fast path, custom ops, CUDA graphs, torch.compile ------------

EXPECTED_M = 64


class Case:
    """One GEMM of `kind` ("dense", "contiguous", "masked") on fresh inputs, callable
    through the public function or its torch.ops.qgemm op, checkable against the
    float64 product of the dequantized inputs as they are when checked."""

    def __init__(self, kind, seed):
        self.kind, self.seed = kind, seed
        self.idx = self.valid = self.reference = None
        if kind == "dense":
            _, self.a, self.sfa, self.b, self.sfb, _ = dense_problem(192, 2112, 7168)
            shape = (192, 2112)
        elif kind == "contiguous":
            (_, self.a, self.sfa, self.b, self.sfb, self.idx, self.valid, _,
             self.reference) = contiguous_problem(seed)
            shape = (self.a.shape[0], self.b.shape[1])
        else:
            _, self.a, self.sfa, self.b, self.sfb, self.idx, self.reference = masked_problem(seed)
            shape = (self.a.shape[0], self.a.shape[1], self.b.shape[1])
        self.d = torch.full(shape, float("nan"), dtype=torch.bfloat16, device=DEV)

    def call(self, via="public"):
        call_kind(self.kind, self.a, self.sfa, self.b, self.sfb, self.d, self.idx, EXPECTED_M,
                  via=via)

    def new_inputs(self, seed):
        """New values in the same buffers (what a graph replay reads)."""
        a2, sfa2 = activations(tuple(self.a.shape), seed)
        self.a.copy_(a2)
        self.sfa.copy_(qgemm.get_col_major_tma_aligned_tensor(sfa2))
        self.seed = seed

    def check(self, what):
        if self.kind == "dense":
            got = self.d
            want = dequant_a(self.a, self.sfa) @ dequant_b(self.b, self.sfb).T
        elif self.kind == "contiguous":
            got, want = self.d[self.valid], self.reference(self.a, self.sfa)
        else:
            got, want = self.reference(self.a, self.sfa, self.d)
        assert_matches(got, want, self.seed, f" ({self.kind}, {what})")


KINDS = ["dense", "contiguous", "masked"]


@pytest.mark.parametrize("via", ["public", "op"])
@pytest.mark.parametrize("kind", KINDS)
def test_cuda_graph_replay_of_each_entry_point(kind, via):
    case = Case(kind, random.randrange(2 ** 31))
    case.call(via)  # warm-up: compiles and loads the kernel outside the capture
    torch.cuda.synchronize()
    case.check("eager call")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        case.call(via)
    for replay in range(2):
        case.new_inputs(case.seed + 1 + replay)
        case.d.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        case.check(f"graph replay {replay + 1} with new inputs, via {via}")


def test_compiled_moe_block_in_a_cuda_graph():
    cases = [Case(kind, random.randrange(2 ** 31)) for kind in KINDS]

    def block():
        for case in cases:
            case.call("public")
        return cases[0].d.float().sum()  # (a boolean mask would be a data-dependent shape)

    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    compiled()  # traces, and compiles the kernels outside the capture
    torch.cuda.synchronize()
    for case in cases:
        case.check("torch.compile")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        compiled()
    for i, case in enumerate(cases):
        case.new_inputs(case.seed + 11 + i)
        case.d.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    for case in cases:
        case.check("torch.compile, graph replay with new inputs")


def test_fast_path_and_dlpack_path_word_errors_alike():
    # stream= takes the DLPack path; without it plain torch tensors take the fast path.
    # strict=True: the row-major sfa below is an error only there (the default converts
    # it as DeepGEMM does, issue 54)
    m, n, k = 256, 512, 1024
    _, a, sfa, b, sfb, _ = dense_problem(m, n, k)
    d = torch.empty(m, n, dtype=torch.bfloat16, device=DEV)
    shifted = torch.empty(m * k + 16, dtype=torch.uint8, device=DEV)[1:m * k + 1]
    bad = [
        ((a.view(torch.uint8), sfa), (b, sfb), d),
        ((shifted.view(m, k).view(torch.float8_e4m3fn), sfa), (b, sfb), d),
        ((a, sfa.contiguous()), (b, sfb), d),
        ((a, sfa), (b[:, :896], sfb[:, :7]), d),
        ((a, sfa), (b, sfb), d.float()),
        ((a, sfa), (b, sfb), d.t()),
        ((a, sfa), (b, sfb), d[:, :500]),
        ((a, sfa), (b, sfb.cpu()), d),
    ]
    for lhs, rhs, out in bad:
        messages = []
        for stream in (None, torch.cuda.current_stream()):
            with pytest.raises(ValueError) as e:
                qgemm.fp8_gemm_nt(lhs, rhs, out, stream=stream, strict=True)
            messages.append(str(e.value))
        assert messages[0] == messages[1]


# ---- BF16 split-K across a cluster (QGEMM_BF16_SPLITK; kernels/qg_bf16_gemm.cuh "Split-K") ----


@pytest.mark.parametrize("m,n,k,knob,layout,out,c_mode", [
    (1, 576, 7168, None, "nt", "bf16", None),         # unset: the default, auto (bitwise auto's)
    (1, 576, 7168, "off", "nt", "bf16", None),        # the unsplit kernel
    (128, 576, 7168, "off", "nt", "f32", "inplace"),
    (1, 576, 7168, "auto", "nt", "bf16", None),       # the decode rows auto splits (S 8)
    (128, 576, 7168, "auto", "nt", "bf16", "other"),
    (128, 576, 7168, "auto", "nt", "f32", "inplace"),
    (1, 576, 7168, "8", "nt", "f32", None),
    (129, 264, 320, "8", "nt", "bf16", None),        # 5 K blocks: S 8 halved
    (200, 136, 200, "4", "nt", "f32", "other"),      # a partial last 64-K block
    (300, 1000, 1000, "2", "nt", "bf16", "inplace"),  # K 15.6 blocks
    (512, 1024, 512, "8", "nt", "bf16", None),       # more tiles than clusters
    (64, 2112, 7168, "4", "nn", "bf16", None),       # MN-major B
])
def test_bf16_splitk(monkeypatch, m, n, k, knob, layout, out, c_mode):
    """D (+)= A B^T with the K split over a cluster: diff < 1e-5 against float64, D's
    padding columns untouched, and two runs bitwise equal (the fixed reduction order). off
    the unsplit kernel; None (unset) the default, auto since 2026-11-29: bitwise auto's D."""
    if knob is None:
        monkeypatch.delenv("QGEMM_BF16_SPLITK", raising=False)
    else:
        monkeypatch.setenv("QGEMM_BF16_SPLITK", knob)
    seed = random.randrange(2 ** 31)
    g = _gen(seed)
    a = torch.randn(m, k, device=DEV, generator=g).bfloat16()
    b = torch.randn(n, k, device=DEV, generator=g).bfloat16()
    dt = torch.bfloat16 if out == "bf16" else torch.float32
    c = torch.randn(m, n, device=DEV, generator=g).to(dt) if c_mode else None
    ref = a.double() @ b.double().T + (c.double() if c is not None else 0.0)
    results = []
    for run in range(3 if knob is None else 2):
        if run == 2:
            monkeypatch.setenv("QGEMM_BF16_SPLITK", "auto")
        buf = torch.full((m, n + 16), BF16_PATTERN, device=DEV, dtype=dt)
        d = buf[:, :n]
        if c_mode == "inplace":
            d.copy_(c)
        if c_mode is None:
            d.fill_(float("nan"))
        cc = d if c_mode == "inplace" else c
        if layout == "nt":
            qgemm.bf16_gemm_nt(a, b, d, cc)
        else:
            qgemm.bf16_gemm_nn(a, b.T.contiguous(), d, cc)
        torch.cuda.synchronize()
        assert not d.isnan().any(), f"seed {seed}: unwritten elements"
        assert (buf[:, n:] == BF16_PATTERN).all(), f"seed {seed}: padding written"
        diff = calc_diff(d, ref)
        assert diff < 1e-5, f"seed {seed}: diff {diff}"
        results.append(d.clone())
    assert torch.equal(results[0], results[1]), f"seed {seed}: two runs differ"
    if knob is None:
        assert torch.equal(results[0], results[2]), f"seed {seed}: the default differs from auto"


# ---- BF16 k-grouped organisations (QGEMM_BF16_KGROUPED: m, mc, dg, d2; src/bf16_plan.h) ----


@pytest.mark.parametrize("g,m,n,c_mode", [
    (4, 256, 384, "inplace"),    # 64-row tiles, 4 m-blocks: mc and dg share B (one atom: rank 0's)
    (5, 200, 264, None),         # dg: > 4 groups, the walk alone; mc: B shared
    (3, 264, 200, "other"),      # 5 m-blocks: mc falls back to the walk
    (4, 1000, 520, "inplace"),   # 128 x 192: three atoms of B, split 2 + 1
    (4, 4096, 7168, "inplace"),  # DeepGEMM's row (shorter K): 38 n-blocks, several tiles a CTA
])
def test_bf16_k_grouped_modes(monkeypatch, g, m, n, c_mode):
    """k_grouped_bf16_gemm_tn_contiguous under QGEMM_BF16_KGROUPED unset (m+d2), n, m, mc, dg, d2 and mc+d2: diff < 1e-5
    against float64 (empty group included, C in place or another tensor), and D bitwise the
    default's (the same tile and wgmmas per tile, one add into D per element)."""
    seed = random.randrange(2 ** 31)
    gen = _gen(seed)
    ks = [64 * (1 + (i * 3 + 1) % 5) if i != 1 else 0 for i in range(g)]
    total = sum(ks)
    a = torch.randn(total, m, device=DEV, generator=gen).bfloat16()
    b = torch.randn(total, n, device=DEV, generator=gen).bfloat16()
    c = torch.randn(g, m, n, device=DEV, generator=gen) if c_mode else None
    starts = [sum(ks[:i]) for i in range(g)]
    ref = torch.stack([a[s:s + k].double().T @ b[s:s + k].double() for s, k in zip(starts, ks)])
    if c is not None:
        ref = ref + c.double()
    results = {}
    for mode in (None, "n", "m", "mc", "dg", "d2", "mc+d2"):
        if mode is None:
            monkeypatch.delenv("QGEMM_BF16_KGROUPED", raising=False)
        else:
            monkeypatch.setenv("QGEMM_BF16_KGROUPED", mode)
        d = torch.full((g, m, n), float("nan"), device=DEV)
        if c_mode == "inplace":
            d.copy_(c)
        qgemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, None, d if c_mode == "inplace" else c)
        torch.cuda.synchronize()
        assert not d.isnan().any(), f"seed {seed} mode {mode}: unwritten elements"
        diff = calc_diff(d, ref)
        assert diff < 1e-5, f"seed {seed} mode {mode}: diff {diff}"
        results[mode] = d
    for mode in ("n", "m", "mc", "dg", "d2", "mc+d2"):
        assert torch.equal(results[mode], results[None]), f"seed {seed}: {mode} differs from the default"
