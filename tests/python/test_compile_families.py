"""torch.compile and CUDA graphs over every family of qgemm.deep_gemm (issue 49: "torch custom
ops that trace under torch.compile(fullgraph=True) and capture in CUDA graphs").

CPU (meta tensors, no GPU needed): each public function that launches a kernel traces in one
fullgraph=True graph (a graph break raises) whose nodes call its qgemm custom op, and runs
eagerly on meta tensors through the op's fake implementation. A table classifies every public
callable of qgemm.deep_gemm (traced here, traced by another test file, SM100-only stub, or no
kernel), so a function added without a trace test fails test_every_public_function_is_classified.

GPU (skipped without one): the compiled calls (aot_eager: functionalization and the ops' real
bodies) and CUDA-graph replays of the BF16, einsum and FP8-output calls against an fp64
reference on fresh random inputs, outputs poisoned first.
"""
from __future__ import annotations

import inspect
from typing import Callable, Dict, Tuple

import pytest

torch = pytest.importorskip("torch", reason="skipped: torch is not importable")
if not hasattr(torch.library, "custom_op"):
    pytest.skip(f"skipped: torch {torch.__version__} has no torch.library.custom_op",
                allow_module_level=True)

import qgemm  # noqa: E402
import qgemm.deep_gemm as dg  # noqa: E402

BF, F32, I32, E4M3 = torch.bfloat16, torch.float32, torch.int32, torch.float8_e4m3fn
M, N, K, G, M_MAX = 256, 384, 640, 4, 64  # K: 5 blocks of 128; N: 3 blocks


def _t(*shape, dtype=BF, device="meta"):
    return torch.empty(*shape, dtype=dtype, device=device)


def _sfa(m, kb, groups=None, device="meta"):
    """M-major, TMA-aligned 1x128 scales, as get_mn_major_tma_aligned_tensor makes them."""
    ld = qgemm.get_tma_aligned_size(m, 4)
    if groups is None:
        return torch.empty_strided((m, kb), (1, ld), dtype=F32, device=device)
    return torch.empty_strided((groups, m, kb), (kb * ld, 1, ld), dtype=F32, device=device)


KB, NB = K // 128, N // 128

# name -> (the qgemm op its graph must call, a function of no arguments that makes its meta
# inputs and calls it, returning what it wrote)
CASES: Dict[str, Tuple[str, Callable[[], object]]] = {}


def case(name: str, op: str):
    def deco(fn):
        CASES[name] = (op, fn)
        return fn
    return deco


@case("bf16_gemm_nt", "bf16_gemm")
def _bf16_nt():
    d = _t(M, N)
    dg.bf16_gemm_nt(_t(M, K), _t(N, K), d)
    return d


@case("bf16_gemm_nn", "bf16_gemm")
def _bf16_nn():
    d = _t(M, N)
    dg.bf16_gemm_nn(_t(M, K), _t(K, N), d)
    return d


@case("bf16_gemm_tn", "bf16_gemm")
def _bf16_tn():
    d = _t(M, N)
    dg.bf16_gemm_tn(_t(K, M), _t(N, K), d)
    return d


@case("bf16_gemm_tt", "bf16_gemm")
def _bf16_tt():
    d = _t(M, N)
    dg.bf16_gemm_tt(_t(K, M), _t(K, N), d)
    return d


@case("bf16_gemm_nt fp32 d, c = d", "bf16_gemm")
def _bf16_acc():
    d = _t(M, N, dtype=F32)
    dg.bf16_gemm_nt(_t(M, K), _t(N, K), d, c=d)
    return d


@case("bf16_gemm_nt fp32 d, c another", "bf16_gemm")
def _bf16_c():
    d = _t(M, N, dtype=F32)
    dg.bf16_gemm_nt(_t(M, K), _t(N, K), d, c=_t(M, N, dtype=F32))
    return d


@case("m_grouped_bf16_gemm_nt_contiguous", "bf16_gemm")
def _bf16_contig():
    d = _t(M, N)
    dg.m_grouped_bf16_gemm_nt_contiguous(_t(M, K), _t(G, N, K), d, _t(M, dtype=I32))
    return d


@case("m_grouped_bf16_gemm_nn_contiguous", "bf16_gemm")
def _bf16_contig_nn():
    d = _t(M, N)
    dg.m_grouped_bf16_gemm_nn_contiguous(_t(M, K), _t(G, K, N), d, _t(M, dtype=I32))
    return d


@case("m_grouped_bf16_gemm_nt_contiguous psum", "bf16_gemm")
def _bf16_psum():
    d = _t(M, N)
    dg.m_grouped_bf16_gemm_nt_contiguous(_t(M, K), _t(G, N, K), d, _t(G, dtype=I32),
                                         use_psum_layout=True, expected_m_for_psum_layout=64)
    return d


@case("m_grouped_bf16_gemm_nt_masked", "bf16_gemm")
def _bf16_masked():
    d = _t(G, M_MAX, N)
    dg.m_grouped_bf16_gemm_nt_masked(_t(G, M_MAX, K), _t(G, N, K), d, _t(G, dtype=I32), 32)
    return d


@case("bf16_m_grouped_gemm_nt_masked", "bf16_gemm")
def _bf16_masked_alias():
    d = _t(G, M_MAX, N)
    dg.bf16_m_grouped_gemm_nt_masked(_t(G, M_MAX, K), _t(G, N, K), d, _t(G, dtype=I32), 32)
    return d


@case("k_grouped_bf16_gemm_tn_contiguous", "bf16_gemm")
def _bf16_kgrouped():
    d = _t(G, M, N, dtype=F32)
    dg.k_grouped_bf16_gemm_tn_contiguous(_t(G * 128, M), _t(G * 128, N), d, [128, 0, 256, 128],
                                         c=d)
    return d


@case("einsum bmk,bnk->mn fp32 d, c = d", "einsum_bmk_bnk_mn")
def _bmk():
    d = _t(M, N, dtype=F32)
    dg.einsum("bmk,bnk->mn", _t(8, M, K), _t(8, N, K), d, c=d)
    return d


@case("einsum bmk,bnk->mn bf16 d", "einsum_bmk_bnk_mn")
def _bmk_bf16():
    d = _t(M, N)
    dg.einsum("bmk,bnk->mn", _t(8, M, K), _t(8, N, K), d)
    return d


@case("einsum bhr,hdr->bhd", "bf16_gemm")
def _bhr():
    d = _t(4, 8, N)
    dg.einsum("bhr,hdr->bhd", _t(4, 8, K), _t(8, N, K), d)
    return d


@case("einsum bhd,hdr->bhr", "bf16_gemm")
def _bhd():
    d = _t(4, 8, K)
    dg.einsum("bhd,hdr->bhr", _t(4, 8, N), _t(8, N, K), d)
    return d


@case("fp8_einsum bhr,hdr->bhd", "fp8_gemm_nt")
def _fp8_einsum():
    d = _t(4, 8, N)
    dg.fp8_einsum("bhr,hdr->bhd", (_t(4, 8, K, dtype=E4M3), _t(4, 8, KB, dtype=F32)),
                  (_t(8, N, K, dtype=E4M3), _t(8, NB, KB, dtype=F32)), d)
    return d


@case("fp8_gemm_nt_skip_head_mid", "fp8_gemm_nt")
def _skip_head_mid():
    d = _t(M, 3 * (64 + 32 + 64))
    dg.fp8_gemm_nt_skip_head_mid((_t(M, K, dtype=E4M3), _sfa(M, KB)),
                                 (_t(3 * 128, K, dtype=E4M3), _t(3, KB, dtype=F32)), d,
                                 (64, 32, 64))
    return d


@case("k_grouped_fp8_gemm_nt_contiguous", "fp8_gemm_nt_wgrad")
def _fp8_kgrouped():
    ks = [128, 256, 0, 128]
    d = _t(G, M, N, dtype=F32)
    dg.k_grouped_fp8_gemm_nt_contiguous((_t(M * 512, dtype=E4M3), _t(M, 4, dtype=F32)),
                                        (_t(N * 512, dtype=E4M3), _t(N, 4, dtype=F32)), d, ks,
                                        _t(G, dtype=I32), c=d)
    return d


@case("fp8_gemm_nt_fp8out", "fp8_gemm_fp8out")
def _fp8out():
    d, sfd = qgemm.empty_fp8out(M, N, device="meta")
    dg.fp8_gemm_nt_fp8out((_t(M, K, dtype=E4M3), _sfa(M, KB)), (_t(N, K, dtype=E4M3),
                                                                _t(NB, KB, dtype=F32)), d, sfd)
    return d, sfd


@case("m_grouped_fp8_gemm_nt_contiguous_fp8out", "fp8_gemm_fp8out")
def _fp8out_contig():
    d, sfd = qgemm.empty_fp8out(M, N, device="meta")
    dg.m_grouped_fp8_gemm_nt_contiguous_fp8out(
        (_t(M, K, dtype=E4M3), _sfa(M, KB)), (_t(G, N, K, dtype=E4M3), _t(G, NB, KB, dtype=F32)),
        d, sfd, _t(M, dtype=I32))
    return d, sfd


@case("m_grouped_fp8_gemm_nt_masked_fp8out", "fp8_gemm_fp8out")
def _fp8out_masked():
    d, sfd = qgemm.empty_fp8out(M_MAX, N, num_groups=G, device="meta")
    dg.m_grouped_fp8_gemm_nt_masked_fp8out(
        (_t(G, M_MAX, K, dtype=E4M3), _sfa(M_MAX, KB, G)),
        (_t(G, N, K, dtype=E4M3), _t(G, NB, KB, dtype=F32)), d, sfd, _t(G, dtype=I32), 32)
    return d, sfd


for _lay in ("nt", "nn", "tn", "tt"):
    def _cublaslt(lay=_lay):
        a = _t(M, K) if lay[0] == "n" else _t(K, M)
        b = _t(N, K) if lay[1] == "t" else _t(K, N)
        d = _t(M, N)
        getattr(dg, "cublaslt_gemm_" + lay)(a, b, d)
        return d
    CASES["cublaslt_gemm_" + _lay] = ("", _cublaslt)  # cuBLAS through torch: no qgemm op

# Every public callable of qgemm.deep_gemm that CASES does not trace: where it is traced, or
# why it needs no trace test.
ELSEWHERE = {  # traced under fullgraph=True by another test file
    "test_torch_compile.py / test_deepgemm_compat.py": [
        "fp8_gemm_nt", "fp8_fp4_gemm_nt", "m_grouped_fp8_gemm_nt_contiguous",
        "m_grouped_fp8_fp4_gemm_nt_contiguous", "m_grouped_fp8_gemm_nt_masked",
        "m_grouped_fp8_fp4_gemm_nt_masked", "fp8_m_grouped_gemm_nt_masked"],
    "test_indexer.py": ["fp8_mqa_logits", "fp8_fp4_mqa_logits", "get_paged_mqa_logits_metadata",
                        "fp8_paged_mqa_logits", "fp8_fp4_paged_mqa_logits",
                        "tf32_hc_prenorm_gemm"],
    "test_swiglu.py": ["fp8_gemm_nt_swiglu", "m_grouped_fp8_gemm_nt_contiguous_swiglu",
                       "m_grouped_fp8_gemm_nt_masked_swiglu", "interleave_gate_up",
                       "empty_swiglu"],
    "test_cast.py / test_edges.py": [
        "per_token_cast_to_fp8", "per_block_cast_to_fp8", "per_channel_cast_to_fp8",
        "per_custom_dims_cast_to_fp8", "silu_and_mul_fp8_quant",
        "get_col_major_tma_aligned_tensor", "get_mn_major_tma_aligned_tensor",
        "get_mn_major_tma_aligned_packed_ue8m0_tensor",
        "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor",
        "transform_sf_into_required_layout"],
}
SM100_STUBS = [  # DeepGEMM's SM100-only functions: NotImplementedError on SM90 (test_deepgemm_compat)
    "fp8_gemm_nn", "fp8_gemm_tn", "fp8_gemm_tt", "fp8_fp4_gemm_nn", "fp8_fp4_gemm_tn",
    "fp8_fp4_gemm_tt", "m_grouped_fp8_gemm_nn_contiguous", "m_grouped_fp8_fp4_gemm_nn_contiguous",
    "k_grouped_fp8_gemm_tn_contiguous", "fp8_fp4_mega_moe", "bf16_mega_moe",
    "get_symm_buffer_for_mega_moe", "transform_weights_for_mega_moe", "per_token_cast_to_fp4",
    "transpose_packed_fp4", "cast_back_from_fp4", "init_dist", "uneven_all_gather", "SymmBuffer"]
NO_KERNEL = [  # settings, sizes, host math and allocation: nothing to trace into a graph op
    "align", "ceil_div", "ceil_to_ue8m0", "compile", "empty_fp8out", "get_device_props",
    "get_k_alignment_for_contiguous_layout", "get_m_alignment_for_contiguous_layout",
    "get_mk_alignment_for_contiguous_layout", "get_num_sms", "get_pdl", "get_strict",
    "get_tc_util", "get_theoretical_mk_alignment_for_contiguous_layout", "get_tma_aligned_size",
    "pack_ue8m0_to_int", "register_torch_ops", "select_config", "select_config_fp8out",
    "set_block_size_multiple_of", "set_ignore_compile_dims",
    "set_mk_alignment_for_contiguous_layout", "set_num_sms", "set_pdl", "set_strict",
    "set_tc_util", "unpack_ue8m0_from_int"]


def _traced_names():
    """The public names CASES calls (a case's first word)."""
    return {name.split()[0] for name in CASES}


def test_every_public_function_is_classified():
    public = {n for n in dir(dg) if not n.startswith("_") and callable(getattr(dg, n))
              and not inspect.isclass(getattr(dg, n))}
    groups = [_traced_names(), *map(set, ELSEWHERE.values()), set(SM100_STUBS), set(NO_KERNEL)]
    listed = set().union(*groups)
    assert public - listed == set(), "public functions with no trace test (add a case here)"
    assert listed - public == set(), "names listed here that qgemm.deep_gemm does not have"
    assert sum(map(len, groups)) == len(listed), "a name is listed twice"


def _recording(graphs, then="eager"):
    def backend(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.lookup_backend(then)(gm, example_inputs)
    return backend


@pytest.fixture
def ops_ready():
    qgemm.register_torch_ops()
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(CASES))
def test_traces_in_one_graph_with_its_op(name, backend, ops_ready):
    """eager: dynamo's graph as traced; aot_eager: also functionalized (the mutated outputs
    through auto_functionalized), run on the meta inputs by the fake implementations."""
    op, fn = CASES[name]
    graphs = []
    out = torch.compile(fn, fullgraph=True, backend=_recording(graphs, backend))()  # no break
    assert len(graphs) == 1
    calls = " ".join(str(t) for n in graphs[0].graph.nodes for t in [n.target, *n.args])
    if op:
        assert f"qgemm.{op}" in calls or f"qgemm::{op}" in calls, calls
    for t in out if isinstance(out, tuple) else (out,):
        assert t.device.type == "meta"


@pytest.mark.parametrize("name", [n for n, (op, _) in CASES.items() if op])
def test_meta_tensors_in_eager_run_the_fake_implementation(name, ops_ready):
    CASES[name][1]()


@pytest.mark.parametrize("op", ["bf16_gemm", "einsum_bmk_bnk_mn", "fp8_gemm_fp8out"])
def test_new_ops_mutate_only_their_outputs(op, ops_ready):
    schema = getattr(torch.ops.qgemm, op).default._schema
    assert not schema.returns, str(schema)
    mutated = {a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write}
    assert mutated == ({"d", "sfd"} if op == "fp8_gemm_fp8out" else {"d"}), str(schema)


def test_traced_call_refuses_a_stream(ops_ready):
    def f(a, b, d):
        dg.bf16_gemm_nt(a, b, d)
        qgemm.bf16.bf16_gemm_nt(a, b, d, stream=0)
        return d
    with pytest.raises(Exception, match="stream= is not supported under torch.compile"):
        torch.compile(f, fullgraph=True, backend="eager")(_t(M, K), _t(N, K), _t(M, N))


# ---- GPU: compiled and graph-replayed calls against an fp64 reference ---------------------


def _gpu_reason():
    if not torch.cuda.is_available():
        return "skipped: no GPU (no CUDA device visible to torch)"
    if torch.cuda.get_device_capability() != (9, 0):
        return "skipped: no GPU (sm_90 needed)"
    return None


gpu = pytest.mark.skipif(_gpu_reason() is not None, reason=_gpu_reason() or "")


def _calc_diff(x, y):
    x, y = x.double(), y.double()
    return float(1 - 2 * (x * y).sum() / (x * x + y * y).sum())


def _bf16_cases(dev):
    """(name, inputs maker, call(inputs) -> output, fp64 reference(inputs)); shapes not
    multiples of the tiles (M 300, N 200, K 520)."""
    m, n, k, g = 300, 200, 520, 3

    def r(*s):
        return torch.randn(*s, device=dev, dtype=BF)

    def dense():
        return dict(a=r(m, k), b=r(n, k), d=torch.full((m, n), float("nan"), device=dev,
                                                         dtype=BF))

    def dense_call(x):
        dg.bf16_gemm_nt(x["a"], x["b"], x["d"])
        return x["d"]

    def masked():
        return dict(a=r(g, 96, k), b=r(g, n, k),
                    d=torch.full((g, 96, n), float("nan"), device=dev, dtype=BF),
                    mm=torch.tensor([96, 17, 64], device=dev, dtype=I32))

    def masked_call(x):
        dg.m_grouped_bf16_gemm_nt_masked(x["a"], x["b"], x["d"], x["mm"], 64)
        return x["d"]

    def masked_ref(x):
        return torch.cat([x["a"][i, :int(v)].double() @ x["b"][i].double().T
                          for i, v in enumerate(x["mm"].tolist())])

    def masked_rows(x, out):  # the valid rows, on the host after the call
        return torch.cat([out[i, :int(v)] for i, v in enumerate(x["mm"].tolist())])

    def bmk():
        c = torch.randn(m, n, device=dev)
        return dict(a=r(6, m, k), b=r(6, n, k), d=c.clone(), c0=c)

    def bmk_call(x):
        x["d"].copy_(x["c0"])
        dg.einsum("bmk,bnk->mn", x["a"], x["b"], x["d"], c=x["d"])
        return x["d"]

    def bhr():
        return dict(a=r(5, 8, k), b=r(8, n, k),
                    d=torch.full((5, 8, n), float("nan"), device=dev, dtype=BF))

    def bhr_call(x):
        dg.einsum("bhr,hdr->bhd", x["a"], x["b"], x["d"])
        return x["d"]

    def whole(x, out):
        return out

    return [
        ("bf16_gemm_nt", dense, dense_call, lambda x: x["a"].double() @ x["b"].double().T,
         whole),
        ("m_grouped_bf16_gemm_nt_masked", masked, masked_call, masked_ref, masked_rows),
        ("einsum bmk,bnk->mn c = d", bmk, bmk_call,
         lambda x: x["c0"].double() + torch.einsum("bmk,bnk->mn", x["a"].double(),
                                                   x["b"].double()), whole),
        ("einsum bhr,hdr->bhd", bhr, bhr_call,
         lambda x: torch.einsum("bhr,hdr->bhd", x["a"].double(), x["b"].double()), whole),
    ]


@gpu
@pytest.mark.parametrize("idx", range(4))
def test_gpu_compiled_and_graph_replayed_bf16(idx):
    name, make, call, ref, rows = _bf16_cases("cuda")[idx]
    qgemm.register_torch_ops()
    torch._dynamo.reset()
    x = make()
    eager = rows(x, call(x))
    assert not eager.isnan().any() and _calc_diff(eager, ref(x)) < 1e-5, name
    # compiled (aot_eager: functionalization, the op's real body) on fresh inputs
    x = make()
    compiled = rows(x, torch.compile(call, fullgraph=True, backend="aot_eager")(x))
    assert not compiled.isnan().any() and _calc_diff(compiled, ref(x)) < 1e-5, name
    # captured once, replayed on new values in the same buffers
    x = make()
    call(x)  # warm-up outside the graph (the JIT compiles and loads there)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = call(x)
    for _ in range(2):
        fresh = make()
        for key, t in x.items():
            t.copy_(fresh[key])
        graph.replay()
        torch.cuda.synchronize()
        got = rows(x, out)
        assert not got.isnan().any() and _calc_diff(got, ref(x)) < 1e-5, name


@gpu
def test_gpu_compiled_fp8out_matches_eager_bytes():
    """The FP8-output GEMM compiled writes the bytes the eager call writes (same kernel)."""
    from qgemm.deep_gemm.utils.math import per_block_cast_to_fp8, per_token_cast_to_fp8
    qgemm.register_torch_ops()
    torch._dynamo.reset()
    m, n, k = 200, 384, 640
    a_q, a_s = per_token_cast_to_fp8(torch.randn(m, k, device="cuda", dtype=BF), use_ue8m0=False)
    a = (a_q, qgemm.get_mn_major_tma_aligned_tensor(a_s))
    b = per_block_cast_to_fp8(torch.randn(n, k, device="cuda", dtype=BF), use_ue8m0=False)

    def call(a0, s0, b0, s1):
        d, sfd = qgemm.empty_fp8out(m, n, device="cuda")
        dg.fp8_gemm_nt_fp8out((a0, s0), (b0, s1), d, sfd)
        return d, sfd

    d1, s1 = call(*a, *b)
    d2, s2 = torch.compile(call, fullgraph=True, backend="aot_eager")(*a, *b)
    assert d1.float().abs().max() > 0 and not s1.isnan().any()
    assert torch.equal(d1.view(torch.uint8), d2.view(torch.uint8))
    assert torch.equal(s1, s2)
