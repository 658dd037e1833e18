#!/usr/bin/env python3
"""DeepGEMM's own SM90 test suites, run against qgemm.

DeepGEMM's test files (its public source, on the GPU machine in the
git-ignored ``.peers/``; nothing of it is committed) are imported with
``deep_gemm`` (and every submodule of it: ``deep_gemm.utils``,
``deep_gemm.utils.math``, ...) resolving to ``qgemm.deep_gemm`` (``--module
qgemm``: ``deep_gemm`` is qgemm's top level, ``import qgemm as deep_gemm``; its
submodules stay ``qgemm.deep_gemm``'s), so every call the tests make lands in
qgemm. Only DeepGEMM's pure-Python test helpers
(``deep_gemm/testing``: ``calc_diff``, ``bench_kineto``) are loaded from its
tree, as ``deep_gemm.testing``.

The SM90 test functions of each file (FILES below). A function that walks a
case generator (``enumerate_normal``, ...) runs one case at a time: the
generator is listed once, then the function runs with it replaced by one that
yields a single case, from a fixed seed. A function without one runs whole, as
one row. A row passes when its function returns (every accuracy assert held,
the perf print ran); anything raised fails it, with the message recorded.

    python3 bench/deepgemm_suite.py --deepgemm DIR [--out DIR] [--file test_bf16] [--only test_gemm]
                                    [--module qgemm.deep_gemm | qgemm]

DIR is DeepGEMM's source tree (default: $QG_DEEPGEMM_SRC, then .peers/DeepGEMM).
Writes ``deepgemm-suite.json``: {"cases": N, "pass": P, "module": M, "files": [...],
"rows": [...]}, one row
per case {"file", "test", "case", "params", "pass", "seconds", "error"}, and
prints a summary per test function and per file.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import time
import traceback
from typing import Any

# file -> [(test function, the generator it walks or None, the dtype it is
# listed with)]: DeepGEMM's SM90 tests (test_fp8_fp4: 42 + 16 + 32 + 6 = 96
# cases; the other files' 15 functions: issue 49 and 50).
FP8, BF16 = "float8_e4m3fn", "bfloat16"
FILES = {
    "test_fp8_fp4": [
        ("test_gemm", "enumerate_normal", FP8),
        ("test_m_grouped_gemm_contiguous", "enumerate_m_grouped_contiguous", FP8),
        ("test_m_grouped_gemm_masked", "enumerate_m_grouped_masked", FP8),
        ("test_k_grouped_gemm_contiguous", "enumerate_k_grouped_contiguous", FP8),
    ],
    "test_bf16": [
        ("test_gemm", "enumerate_normal", BF16),
        ("test_m_grouped_gemm_contiguous", "enumerate_m_grouped_contiguous", BF16),
        ("test_m_grouped_gemm_masked", "enumerate_m_grouped_masked", BF16),
        ("test_k_grouped_gemm_contiguous", "enumerate_k_grouped_contiguous", BF16),
        ("test_cublaslt_gemm", None, None),
    ],
    "test_einsum": [
        ("test_bmk_bnk_mn", None, None),
        ("test_bhr_hdr_bhd", None, None),
        ("test_bhd_hdr_bhr", None, None),
        ("test_fp8_bhr_hdr_bhd", None, None),
    ],
    "test_attention": [
        ("test_gemm_skip_head_mid", None, None),
        ("test_mqa_logits", None, None),
        ("test_paged_mqa_logits", None, None),
    ],
    "test_hyperconnection": [("test_hc_prenorm_gemm", None, None)],
    "test_layout": [
        ("test_sf_layout_kernels", None, None),
        ("test_k_grouped_sf_layout_kernels", None, None),
    ],
}
# the FP8 file alone, as before (what --file defaults to in a run that names none)
TESTS = [(t, g) for t, g, _ in FILES["test_fp8_fp4"]]


def load_alias(dg_root: str, module: str = "qgemm.deep_gemm") -> None:
    """deep_gemm -> `module`, each submodule of qgemm.deep_gemm -> deep_gemm's;
    deep_gemm.testing from DeepGEMM's tree; its tests/ directory on sys.path."""
    import pkgutil

    import qgemm.deep_gemm as package
    alias = importlib.import_module(module)  # qgemm.deep_gemm, or qgemm itself (issue 54)
    if not hasattr(alias, "utils") and hasattr(package, "utils"):
        alias.utils = package.utils  # `deep_gemm.utils.x` as an attribute too
    sys.modules["deep_gemm"] = alias
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), "qgemm.deep_gemm."):
        name = info.name
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        sys.modules["deep_gemm." + name[len("qgemm.deep_gemm."):]] = mod
    if "deep_gemm.utils" not in sys.modules:  # a flat qgemm.deep_gemm module
        sys.modules["deep_gemm.utils"] = alias
    tdir = os.path.join(dg_root, "deep_gemm", "testing")
    spec = importlib.util.spec_from_file_location(
        "deep_gemm.testing", os.path.join(tdir, "__init__.py"), submodule_search_locations=[tdir])
    testing = importlib.util.module_from_spec(spec)
    sys.modules["deep_gemm.testing"] = testing
    spec.loader.exec_module(testing)
    alias.testing = testing
    sys.path.insert(0, os.path.join(dg_root, "tests"))


def reseed() -> None:
    import torch
    torch.manual_seed(0)
    random.seed(0)


def write_json(out: str, module: str, files: list, rows: list) -> None:
    """deepgemm-suite.json as it stands (written after every row: a run stopped
    by a time limit keeps what it did)."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "deepgemm-suite.json"), "w") as f:
        json.dump({"cases": len(rows), "pass": sum(r["pass"] for r in rows), "module": module,
                   "files": files, "rows": rows}, f, indent=1)


def run_file(file: str, only: list, rows: list, save: Any = None) -> None:
    """Every SM90 test function of one DeepGEMM test file, into rows."""
    import torch
    try:
        suite = importlib.import_module(file)
    except BaseException as e:  # noqa: BLE001 - an import error fails every row of the file
        if isinstance(e, KeyboardInterrupt):
            raise
        err = f"import {file}: {type(e).__name__}: {str(e)[:400]}"
        for test_name, _, _ in FILES[file]:
            if not only or test_name in only:
                rows.append({"file": file, "test": test_name, "case": 0, "params": "",
                             "pass": False, "seconds": 0.0, "error": err})
                print(f"{file}.{test_name} FAIL: {err}", flush=True)
        return
    for test_name, gen_name, dtype in FILES[file]:
        if only and test_name not in only:
            continue
        test = getattr(suite, test_name)
        if gen_name:
            gen = getattr(suite, gen_name)
            reseed()
            cases = list(gen(getattr(torch, dtype)))
        else:
            gen, cases = None, [()]
        passed = 0
        for i, case in enumerate(cases):
            if gen:
                setattr(suite, gen_name, lambda *_a, _c=case, **_k: iter([_c]))
            reseed()
            t0 = time.time()
            err = None
            try:
                # the suite's own prints (its perf lines) go to stdout as they are:
                # its bench_kineto needs a real file descriptor there
                test()
                torch.cuda.synchronize()
            except BaseException as e:  # noqa: BLE001 - a case fails on anything raised
                if isinstance(e, KeyboardInterrupt):
                    raise
                tb = traceback.extract_tb(e.__traceback__)
                where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else "?"
                err = f"{type(e).__name__} at {where}: {str(e)[:400]}"
            if gen:
                setattr(suite, gen_name, gen)
            ok = err is None
            passed += ok
            params = ", ".join(str(getattr(x, "name", x)) for x in case
                               if not hasattr(x, "max_diff"))[:300]
            rows.append({"file": file, "test": test_name, "case": i, "params": params,
                         "pass": ok, "seconds": round(time.time() - t0, 2), "error": err})
            print(f"{file}.{test_name}[{i}] {'pass' if ok else 'FAIL'} ({params})"
                  + ("" if ok else f": {err}"), flush=True)
            if save:
                save()
        print(f"== {file}.{test_name}: {passed} of {len(cases)} pass", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--deepgemm", default=os.environ.get("QG_DEEPGEMM_SRC", ".peers/DeepGEMM"))
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--file", action="append", default=[], choices=sorted(FILES),
                   help="run only this test file (repeatable; default: every file)")
    p.add_argument("--only", action="append", default=[], help="run only this test function")
    p.add_argument("--module", default="qgemm.deep_gemm", choices=("qgemm.deep_gemm", "qgemm"),
                   help="what `deep_gemm` resolves to: the drop-in package (default) or qgemm's "
                        "top level (`import qgemm as deep_gemm`); its submodules are "
                        "qgemm.deep_gemm's either way")
    args = p.parse_args()
    if not os.path.isfile(os.path.join(args.deepgemm, "tests", "test_fp8_fp4.py")):
        print(f"DeepGEMM: not installed (no tests/test_fp8_fp4.py under {args.deepgemm})")
        return 2
    load_alias(args.deepgemm, args.module)
    rows: list = []
    files = args.file or list(FILES)
    for file in files:
        run_file(file, args.only, rows, lambda: write_json(args.out, args.module, files, rows))
    total = len(rows)
    npass = sum(r["pass"] for r in rows)
    write_json(args.out, args.module, files, rows)
    for file in files:
        fr = [r for r in rows if r["file"] == file]
        funcs = sorted({r["test"] for r in fr})
        fpass = [t for t in funcs if all(r["pass"] for r in fr if r["test"] == t)]
        print(f"== {file}: {sum(r['pass'] for r in fr)} of {len(fr)} cases, "
              f"{len(fpass)} of {len(funcs)} functions pass", flush=True)
    print(f"DeepGEMM SM90 suite through {args.module}: {npass} of {total} cases pass")
    return 0 if npass == total else 1


if __name__ == "__main__":
    sys.exit(main())
