"""qgemm's torch.library custom ops under torch.compile, without a GPU.

torch.compile(fullgraph=True) must trace a small MoE-style block that calls the
dense and both grouped GEMMs, through the public functions and through
torch.ops.qgemm.*, with no graph break. The inputs are meta tensors: tracing
needs only shapes, dtypes and strides, and running the traced graph on meta
tensors runs the ops' fake implementations, so no GPU is needed. (On a GPU,
test_gpu.py replays each op in a CUDA graph and checks the numbers.)
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import qgemm

try:
    import torch
    _TORCH_MISSING = None
except ImportError as e:  # run.sh installs torch into its venv; say why it is not here
    torch = None
    _TORCH_MISSING = str(e)

if _TORCH_MISSING is not None:
    pytest.skip(f"skipped: torch is not importable ({_TORCH_MISSING}); tests/python/run.sh "
                "installs it from PyPI unless QGEMM_TEST_TORCH is empty", allow_module_level=True)
if not hasattr(torch.library, "custom_op"):
    pytest.skip(f"skipped: torch {torch.__version__} has no torch.library.custom_op "
                "(PyTorch >= 2.4)", allow_module_level=True)

META = "meta"
M, N, K, G, M_MAX = 256, 512, 384, 4, 64


def _sfa(m, kb, groups=None):
    """M-major, 16-byte aligned scales as get_col_major_tma_aligned_tensor makes them."""
    ld = qgemm.get_tma_aligned_size(m, 4)
    if groups is None:
        return torch.empty_strided((m, kb), (1, ld), dtype=torch.float32, device=META)
    return torch.empty_strided((groups, m, kb), (kb * ld, 1, ld), dtype=torch.float32, device=META)


def _inputs():
    kb, nb = qgemm.ceil_div(K, 128), qgemm.ceil_div(N, 128)
    e4m3 = torch.float8_e4m3fn
    return dict(
        a=torch.empty(M, K, dtype=e4m3, device=META), sfa=_sfa(M, kb),
        w=torch.empty(N, K, dtype=e4m3, device=META),
        sw=torch.empty(nb, kb, dtype=torch.float32, device=META),
        we=torch.empty(G, N, K, dtype=e4m3, device=META),
        swe=torch.empty(G, nb, kb, dtype=torch.float32, device=META),
        m_indices=torch.empty(M, dtype=torch.int32, device=META),
        a3=torch.empty(G, M_MAX, K, dtype=e4m3, device=META), sfa3=_sfa(M_MAX, kb, G),
        masked_m=torch.empty(G, dtype=torch.int32, device=META),
    )


def moe_block(a, sfa, w, sw, we, swe, m_indices, a3, sfa3, masked_m):
    """A shared expert (dense), routed experts (contiguous), decode experts (masked)."""
    shared = torch.empty(M, N, dtype=torch.bfloat16, device=a.device)
    qgemm.fp8_gemm_nt((a, sfa), (w, sw), shared)
    routed = torch.empty(M, N, dtype=torch.bfloat16, device=a.device)
    qgemm.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (we, swe), routed, m_indices)
    decode = torch.empty(G, M_MAX, N, dtype=torch.bfloat16, device=a.device)
    qgemm.m_grouped_fp8_gemm_nt_masked((a3, sfa3), (we, swe), decode, masked_m, 16)
    return torch.relu(shared.float()) + routed.float(), decode.float().sum(dim=1)


def moe_block_ops(a, sfa, w, sw, we, swe, m_indices, a3, sfa3, masked_m):
    """The same through torch.ops.qgemm, with a forced config on the dense op."""
    shared = torch.empty(M, N, dtype=torch.bfloat16, device=a.device)
    torch.ops.qgemm.fp8_gemm_nt(a, sfa, w, sw, shared, [64, 128, 0, 0, 0, 0])
    routed = torch.empty(M, N, dtype=torch.bfloat16, device=a.device)
    torch.ops.qgemm.m_grouped_fp8_gemm_nt_contiguous(a, sfa, we, swe, routed, m_indices)
    decode = torch.empty(G, M_MAX, N, dtype=torch.bfloat16, device=a.device)
    torch.ops.qgemm.m_grouped_fp8_gemm_nt_masked(a3, sfa3, we, swe, decode, masked_m, 16)
    return shared.float() + routed.float(), decode.float().sum(dim=1)


OPS = ("fp8_gemm_nt", "m_grouped_fp8_gemm_nt_contiguous", "m_grouped_fp8_gemm_nt_masked")


def _qgemm_calls(gm):
    """Names of the qgemm ops a traced graph calls (directly, or wrapped by
    functionalization's auto_functionalized)."""
    found = []
    for node in gm.graph.nodes:
        for target in [node.target, *node.args]:
            name = str(target)
            for op in OPS:
                if f"qgemm.{op}" in name or f"qgemm::{op}" in name:
                    found.append(op)
    return found


def test_ops_are_registered_with_mutation_of_d():
    for op in OPS:
        schema = str(getattr(torch.ops.qgemm, op).default._schema)
        assert "Tensor(a4!) d" in schema, schema  # d is written in place
        assert schema.endswith("-> ()"), schema


@pytest.mark.parametrize("fn", [moe_block, moe_block_ops], ids=["public", "torch.ops"])
def test_dynamo_traces_the_block_without_graph_breaks(fn):
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(fn)(**_inputs())
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1
    assert sorted(set(_qgemm_calls(explanation.graphs[0]))) == sorted(OPS)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", [moe_block, moe_block_ops], ids=["public", "torch.ops"])
def test_compile_fullgraph(backend, fn):
    torch._dynamo.reset()
    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.lookup_backend(backend)(gm, example_inputs)

    compiled = torch.compile(fn, fullgraph=True, backend=recording)  # raises on a graph break
    out, dec = compiled(**_inputs())
    assert out.shape == (M, N) and dec.shape == (G, N)
    assert len(graphs) == 1
    assert sorted(_qgemm_calls(graphs[0])) == sorted(OPS)


def test_stream_argument_is_refused_while_tracing():
    torch._dynamo.reset()
    x = _inputs()

    def f(a, sfa, w, sw):
        d = torch.empty(M, N, dtype=torch.bfloat16, device=a.device)
        qgemm.fp8_gemm_nt((a, sfa), (w, sw), d, stream=0)
        return d

    with pytest.raises(Exception, match="stream= is not supported under torch.compile"):
        torch.compile(f, fullgraph=True, backend="eager")(x["a"], x["sfa"], x["w"], x["sw"])


def test_fake_tensors_go_to_the_fake_implementation():
    # FakeTensor is a tensor subclass: the public function hands it to the op,
    # whose fake implementation runs (no DLPack export, no error)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        x = {k: mode.from_tensor(v) for k, v in _inputs().items()}
        d = torch.empty(M, N, dtype=torch.bfloat16, device=META)
        qgemm.fp8_gemm_nt((x["a"], x["sfa"]), (x["w"], x["sw"]), d)


def test_meta_tensors_in_eager_run_the_fake_implementation():
    x = _inputs()
    d = torch.empty(M, N, dtype=torch.bfloat16, device=META)
    torch.ops.qgemm.fp8_gemm_nt(x["a"], x["sfa"], x["w"], x["sw"], d)


def test_plain_calls_go_straight_to_the_fast_path(monkeypatch):
    # The public GEMMs hand a plain call (pairs as tuples, no DeepGEMM extras, no
    # stream, no config) to _C.gemm_torch at once (qgemm._dispatch.FAST_GEMM, set when
    # qgemm registers with torch); any other call goes the whole way (_dispatch.gemm).
    qgemm.register_torch_ops()
    assert qgemm._dispatch.FAST_GEMM is qgemm._C.gemm_torch
    calls = []

    def record(kind, a, sfa, b, sfb, d, idx, expected_m, config):
        calls.append((kind, expected_m, config))  # (None: the call is taken)

    monkeypatch.setattr(qgemm._dispatch, "FAST_GEMM", record)
    x = _inputs()
    d = torch.empty(M, N, dtype=torch.bfloat16, device=META)
    d3 = torch.empty(G, M_MAX, N, dtype=torch.bfloat16, device=META)
    qgemm.fp8_gemm_nt((x["a"], x["sfa"]), (x["w"], x["sw"]), d)
    qgemm.m_grouped_fp8_gemm_nt_contiguous((x["a"], x["sfa"]), (x["we"], x["swe"]), d,
                                           x["m_indices"])
    qgemm.m_grouped_fp8_gemm_nt_masked((x["a3"], x["sfa3"]), (x["we"], x["swe"]), d3,
                                       x["masked_m"], 16)
    assert calls == [(qgemm._C.KIND_DENSE, 0, None), (qgemm._C.KIND_CONTIGUOUS, 0, None),
                     (qgemm._C.KIND_MASKED, 16, None)]
    # not plain: a list pair, a forced config, an expected_m that is not an int; they go
    # the whole way (_dispatch.gemm), which hands these meta tensors to the custom op's fake
    # implementation (the real _C.gemm_torch declines them), and refuses the bool
    qgemm.fp8_gemm_nt([x["a"], x["sfa"]], (x["w"], x["sw"]), d)
    qgemm.fp8_gemm_nt((x["a"], x["sfa"]), (x["w"], x["sw"]), d,
                      config={"block_m": 64, "block_n": 128})
    with pytest.raises(TypeError, match="expected_m must be an int"):
        qgemm.m_grouped_fp8_gemm_nt_masked((x["a3"], x["sfa3"]), (x["we"], x["swe"]), d3,
                                           x["masked_m"], True)
    assert len(calls) == 3, calls


def test_import_qgemm_neither_imports_torch_nor_fails_without_it(tmp_path):
    # a `torch` that cannot be imported stands first on the path: qgemm must
    # not try (and so not fail, nor take torch's import time)
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('torch is absent')\n")
    package = str(Path(qgemm.__file__).resolve().parent.parent)
    code = ("import sys, time; t = time.perf_counter(); import qgemm; "
            "dt = time.perf_counter() - t; assert 'torch' not in sys.modules; "
            "assert qgemm._dispatch.TORCH_OPS is None; print(f'{dt * 1e3:.1f}')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), package]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) < 500, f"import qgemm took {out.stdout.strip()} ms"
    # and its import hook leaves the failing import of that torch as it is
    code = ("import qgemm\ntry:\n    import torch\nexcept ImportError as e:\n"
            "    assert 'torch is absent' in str(e), e\nelse:\n    raise SystemExit('imported')")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_torch_imported_after_qgemm_gets_the_ops():
    package = str(Path(qgemm.__file__).resolve().parent.parent)
    code = ("import qgemm, torch; print(torch.ops.qgemm.fp8_gemm_nt); "
            "assert qgemm._dispatch.TORCH_OPS is not None")
    env = dict(os.environ, PYTHONPATH=package)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
