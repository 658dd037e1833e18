#!/usr/bin/env python3
"""DeepGEMM's own SM90 FP8 test suite, run against qgemm.

DeepGEMM's ``tests/test_fp8_fp4.py`` (its public source, on the GPU machine in
the git-ignored ``.peers/``; nothing of it is committed) is imported with
``deep_gemm`` resolving to ``qgemm.deep_gemm`` (``--module qgemm``: to qgemm's
top level, ``import qgemm as deep_gemm``; ``deep_gemm.utils`` is
``qgemm.deep_gemm.utils`` either way), so every call the tests make lands in
qgemm. Only DeepGEMM's pure-Python test helpers (``deep_gemm/testing``:
``calc_diff``, ``bench_kineto``) are loaded from its tree, as ``deep_gemm.testing``.

Each case runs alone: the suite's generators (``enumerate_normal``, ...) are
listed once, then each test function runs with its generator replaced by one
that yields a single case, from a fixed seed. A case passes when its test
function returns (every accuracy assert held, the perf print ran); anything
raised fails it, with the message recorded.

    python3 bench/deepgemm_suite.py --deepgemm DIR [--out DIR] [--only test_gemm]
                                    [--module qgemm.deep_gemm | qgemm]

DIR is DeepGEMM's source tree (default: $QG_DEEPGEMM_SRC, then .peers/DeepGEMM).
Writes ``deepgemm-suite.json``: {"cases": N, "pass": P, "module": M, "rows": [...]}, one row
per case {"test", "case", "params", "pass", "seconds", "error"}, and prints a
summary per test function.
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

# test function -> the generator it walks (SM90 FP8: 42 + 16 + 32 + 6 = 96 cases)
TESTS = [
    ("test_gemm", "enumerate_normal"),
    ("test_m_grouped_gemm_contiguous", "enumerate_m_grouped_contiguous"),
    ("test_m_grouped_gemm_masked", "enumerate_m_grouped_masked"),
    ("test_k_grouped_gemm_contiguous", "enumerate_k_grouped_contiguous"),
]


def load_alias(dg_root: str, module: str = "qgemm.deep_gemm"):
    import importlib

    import qgemm.deep_gemm.utils as utils  # a package laid out as DeepGEMM's
    alias = importlib.import_module(module)  # qgemm.deep_gemm, or qgemm itself (issue 54)
    if not hasattr(alias, "utils"):
        alias.utils = utils  # `deep_gemm.utils.x` as an attribute too (qgemm's top level)
    sys.modules["deep_gemm"] = alias
    sys.modules["deep_gemm.utils"] = utils
    sys.modules["deep_gemm.utils.math"] = utils.math
    sys.modules["deep_gemm.utils.layout"] = utils.layout
    tdir = os.path.join(dg_root, "deep_gemm", "testing")
    spec = importlib.util.spec_from_file_location(
        "deep_gemm.testing", os.path.join(tdir, "__init__.py"), submodule_search_locations=[tdir])
    testing = importlib.util.module_from_spec(spec)
    sys.modules["deep_gemm.testing"] = testing
    spec.loader.exec_module(testing)
    alias.testing = testing
    sys.path.insert(0, os.path.join(dg_root, "tests"))
    import test_fp8_fp4  # DeepGEMM's suite, importing generators.py beside it
    return test_fp8_fp4


def reseed() -> None:
    import torch
    torch.manual_seed(0)
    random.seed(0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--deepgemm", default=os.environ.get("QG_DEEPGEMM_SRC", ".peers/DeepGEMM"))
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--only", action="append", default=[], help="run only this test function")
    p.add_argument("--module", default="qgemm.deep_gemm", choices=("qgemm.deep_gemm", "qgemm"),
                   help="what `deep_gemm` resolves to: the drop-in package (default) or qgemm's "
                        "top level (`import qgemm as deep_gemm`); deep_gemm.utils is "
                        "qgemm.deep_gemm.utils either way")
    args = p.parse_args()
    if not os.path.isfile(os.path.join(args.deepgemm, "tests", "test_fp8_fp4.py")):
        print(f"DeepGEMM: not installed (no tests/test_fp8_fp4.py under {args.deepgemm})")
        return 2
    suite = load_alias(args.deepgemm, args.module)
    rows = []
    for test_name, gen_name in TESTS:
        if args.only and test_name not in args.only:
            continue
        test, gen = getattr(suite, test_name), getattr(suite, gen_name)
        reseed()
        import torch
        cases = list(gen(torch.float8_e4m3fn))
        passed = 0
        for i, case in enumerate(cases):
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
            setattr(suite, gen_name, gen)
            ok = err is None
            passed += ok
            params = ", ".join(str(getattr(x, "name", x)) for x in case
                               if not hasattr(x, "max_diff"))[:300]
            rows.append({"test": test_name, "case": i, "params": params, "pass": ok,
                         "seconds": round(time.time() - t0, 2), "error": err})
            print(f"{test_name}[{i}] {'pass' if ok else 'FAIL'} ({params})"
                  + ("" if ok else f": {err}"), flush=True)
        print(f"== {test_name}: {passed} of {len(cases)} pass", flush=True)
    total = len(rows)
    npass = sum(r["pass"] for r in rows)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "deepgemm-suite.json"), "w") as f:
        json.dump({"cases": total, "pass": npass, "module": args.module, "rows": rows}, f,
                  indent=1)
    print(f"DeepGEMM SM90 FP8 suite through {args.module}: {npass} of {total} cases pass")
    return 0 if npass == total else 1


if __name__ == "__main__":
    sys.exit(main())
