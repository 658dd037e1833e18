"""The package's house (issue 48): one dispatch path, a module per kernel family,
no import cycles, ``qgemm.deep_gemm`` laid out as DeepGEMM's package; and
``import qgemm as deep_gemm`` taking DeepGEMM's scales unless strict (issue 54).
CPU only."""
from __future__ import annotations

import ast
import importlib
import os
import pathlib
import subprocess
import sys
from typing import Dict, Set

import pytest

import qgemm

ROOT = pathlib.Path(qgemm.__file__).resolve().parent


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> Dict[str, Set[str]]:
    """module -> the package modules it imports (anywhere in its code, function
    bodies included), read with ast."""
    graph: Dict[str, Set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("qgemm"):
                    continue
                # `from . import x` names a module when x is one
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    deps.add(sub if _is_module(sub) else target)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("qgemm")}
        graph[name] = {d for d in deps if d != name}
    return graph


def _is_module(name: str) -> bool:
    rel = pathlib.Path(*name.split(".")[1:])
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file() \
        or any((ROOT / rel.parent).glob(rel.name + ".*.so"))


def test_no_module_imports_the_package_root():
    graph = _imports()
    offenders = sorted(m for m, deps in graph.items() if m != "qgemm" and "qgemm" in deps)
    assert not offenders, f"these modules import qgemm/__init__.py: {offenders}"


def test_no_import_cycles():
    graph = _imports()
    state: Dict[str, int] = {}
    stack = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycle = stack[stack.index(d):] + [d]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if d in graph and not state.get(d):
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if not state.get(m):
            visit(m)


def test_every_module_imports_alone():
    # each module in a fresh interpreter: none needs another to be imported first
    for m in sorted(_imports()):
        out = subprocess.run([sys.executable, "-c", f"import {m}"], capture_output=True,
                             text=True, timeout=120,
                             env={"PYTHONPATH": str(ROOT.parent), "PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, f"import {m}: {out.stderr[-2000:]}"


def test_init_only_reexports():
    tree = ast.parse((ROOT / "__init__.py").read_text())
    defs = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert not defs, f"qgemm/__init__.py defines {defs}: put them in their module"


def test_families_and_dispatch_are_modules():
    for name in ("_dispatch", "_torch_ops", "_runtime", "fp8", "_layout", "_deepgemm"):
        importlib.import_module(f"qgemm.{name}")
    assert qgemm.fp8_gemm_nt is qgemm.fp8.fp8_gemm_nt
    assert qgemm.register_torch_ops is qgemm._dispatch.register_torch_ops


def test_deep_gemm_is_a_package_with_utils():
    out = subprocess.run([sys.executable, "-c",
                          "import qgemm.deep_gemm.utils\n"
                          "from qgemm.deep_gemm.utils import per_token_cast_to_fp8, ceil_div\n"
                          "from qgemm.deep_gemm.utils.layout import get_mn_major_tma_aligned_tensor\n"
                          "from qgemm.deep_gemm.utils.math import align\n"
                          "import qgemm.deep_gemm as dg\n"
                          "assert dg.utils is qgemm.deep_gemm.utils\n"
                          "print('ok')"],
                         capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT.parent), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_deep_gemm_names_match_qgemm_and_deepgemm_utils():
    import qgemm.deep_gemm as dg
    import qgemm.deep_gemm.utils as utils
    assert set(dg.__all__) == set(qgemm.__all__)
    # what DeepGEMM's deep_gemm/utils/__init__.py exports (layout, math, dist)
    for name in ("ceil_div", "align", "ceil_to_ue8m0", "pack_ue8m0_to_int",
                 "unpack_ue8m0_from_int", "per_token_cast_to_fp8", "per_channel_cast_to_fp8",
                 "per_block_cast_to_fp8", "per_custom_dims_cast_to_fp8", "per_token_cast_to_fp4",
                 "transpose_packed_fp4", "cast_back_from_fp4", "get_tma_aligned_size",
                 "get_mn_major_tma_aligned_tensor", "get_mn_major_tma_aligned_packed_ue8m0_tensor",
                 "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor",
                 "set_mk_alignment_for_contiguous_layout",
                 "get_mk_alignment_for_contiguous_layout",
                 "get_theoretical_mk_alignment_for_contiguous_layout",
                 "get_m_alignment_for_contiguous_layout", "get_k_alignment_for_contiguous_layout",
                 "init_dist", "uneven_all_gather"):
        assert callable(getattr(utils, name)), name
        assert name in utils.__all__, name
    assert utils.per_token_cast_to_fp8 is qgemm.per_token_cast_to_fp8
    assert utils.get_mn_major_tma_aligned_tensor is qgemm.get_mn_major_tma_aligned_tensor
    with pytest.raises(NotImplementedError):
        utils.init_dist()


def test_the_suite_aliases_resolve(tmp_path):
    # what bench/deepgemm_suite.py does: `import deep_gemm` and `from deep_gemm.utils import`
    code = ("import sys, qgemm.deep_gemm as dg, qgemm.deep_gemm.utils as u\n"
            "sys.modules['deep_gemm'] = dg; sys.modules['deep_gemm.utils'] = u\n"
            "import deep_gemm\nfrom deep_gemm.utils import per_token_cast_to_fp8, align\n"
            "assert deep_gemm.fp8_gemm_nt is dg.fp8_fp4_gemm_nt\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": str(ROOT.parent), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_pyproject_ships_the_subpackages():
    text = (ROOT.parent / "pyproject.toml").read_text()
    for sub in ("qgemm.deep_gemm", "qgemm.deep_gemm.utils"):
        assert f'"{sub}"' in text, sub


# ---- strict mode (issue 54 item 5) ------------------------------------------------------


@pytest.fixture
def reset_strict():
    yield
    qgemm.set_strict(False)


def _cpu_dense():
    torch = pytest.importorskip("torch")
    a = torch.zeros(256, 512, dtype=torch.float8_e4m3fn)
    sfa_rows = torch.ones(256, 4)  # row-major, as per_token_cast_to_fp8 returns it
    b = torch.zeros(256, 512, dtype=torch.float8_e4m3fn)
    sfb = torch.ones(2, 4)
    d = torch.empty(256, 256, dtype=torch.bfloat16)
    return a, sfa_rows, b, sfb, d


def test_top_level_takes_deepgemms_row_major_sfa(reset_strict):
    # CPU tensors: the call gets as far as the memory check, past the sfa layout check
    a, sfa, b, sfb, d = _cpu_dense()
    assert not qgemm.get_strict()
    with pytest.raises(ValueError, match="CUDA device memory"):
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)


@pytest.mark.parametrize("how", ["keyword", "setting"])
def test_strict_refuses_a_row_major_sfa(reset_strict, how):
    a, sfa, b, sfb, d = _cpu_dense()
    kw = {}
    if how == "keyword":
        kw["strict"] = True
    else:
        qgemm.set_strict(True)
    with pytest.raises(ValueError, match="sfa must be M-major"):
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d, **kw)


def test_strict_keyword_overrides_the_setting(reset_strict):
    a, sfa, b, sfb, d = _cpu_dense()
    qgemm.set_strict(True)
    with pytest.raises(ValueError, match="CUDA device memory"):
        qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d, strict=False)


def test_deepgemm_names_convert_even_when_strict(reset_strict):
    import qgemm.deep_gemm as dg
    a, sfa, b, sfb, d = _cpu_dense()
    qgemm.set_strict(True)
    with pytest.raises(ValueError, match="CUDA device memory"):
        dg.fp8_gemm_nt((a, sfa), (b, sfb), d)


def test_set_strict_wants_a_bool(reset_strict):
    with pytest.raises(TypeError):
        qgemm.set_strict("yes")
    with pytest.raises(TypeError):
        qgemm.fp8_gemm_nt((None, None), (None, None), None, strict="yes")


def test_top_level_conversion_is_the_deepgemm_one(reset_strict, monkeypatch):
    # the converted sfa reaches the launch M-major and TMA-aligned, the values kept
    torch = pytest.importorskip("torch")
    a, sfa, b, sfb, d = _cpu_dense()
    sfa = torch.arange(256 * 4, dtype=torch.float32).view(256, 4)
    seen = {}

    def gemm(kind, a_, b_, d_, idx, expected_m, stream, config):
        seen["sfa"] = a_[1]

    monkeypatch.setattr(qgemm.fp8, "gemm", gemm)
    qgemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
    assert seen["sfa"].stride() == (1, 256) and torch.equal(seen["sfa"], sfa)
    seen.clear()
    qgemm.fp8_gemm_nt((a, seen.get("x", sfa)), (b, sfb), d, strict=True)
    assert seen["sfa"] is sfa  # strict: handed over as given


def test_traced_code_never_reads_sys_modules():
    """torch.compile (dynamo, torch 2.11) fails with "dictionary changed size during
    iteration" on a ``sys.modules`` lookup it traces (H200 run of 2026-11-28,
    bench/results/2026-11-28-h200-19-verify): only the registration functions that
    run before anything is traced may read it; everything else asks
    ``_dispatch.torch_module()``."""
    allowed = {("_dispatch.py", f) for f in  # current_stream: eager only (cupy's stream)
               ("torch_module", "register_torch", "torch_ops", "install_torch_hook", "current_stream")}
    root = pathlib.Path(qgemm.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Attribute) and node.attr == "modules" and \
                        isinstance(node.value, ast.Name) and node.value.id == "sys" and \
                        (path.name, fn.name) not in allowed:
                    found.append(f"{path.relative_to(root)}:{node.lineno} in {fn.name}")
    assert not found, "sys.modules read where torch.compile may trace: " + ", ".join(found)


def test_import_initializes_no_cuda(tmp_path):
    """DeepGEMM's test_lazy_init: serving frameworks import the kernels, then fork one worker
    per GPU, each picking its device; a CUDA context made at import would be inherited by
    the forks and break them. Importing qgemm.deep_gemm with torch, and registering the ops,
    must neither initialize torch's CUDA nor load the driver or NVRTC (the library loads them
    at the first call that needs a device)."""
    script = tmp_path / "lazy.py"
    script.write_text(
        "import torch, torch.cuda\n"
        "def cuda_libs():\n"
        "    return {line.split()[-1] for line in open('/proc/self/maps')\n"
        "            if 'libcuda.so' in line or 'libnvrtc' in line}\n"
        "before = cuda_libs()  # (torch itself maps NVRTC's builtins)\n"
        "calls = []\n"
        "torch.cuda._lazy_init = lambda *a, **k: calls.append(1)\n"
        "import qgemm, qgemm.deep_gemm as dg, qgemm.deep_gemm.utils\n"
        "qgemm.register_torch_ops()\n"
        "print(len(calls), sorted(cuda_libs() - before))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "0 []", out.stdout
