#!/usr/bin/env bash
# tests/python/run.sh [BUILD_DIR] -- build the Python package in place and run
# its tests; `make test` calls it after the C tests (`make pytest` alone).
#
#   1. the test dependencies (pytest, numpy, ml_dtypes; setuptools to build;
#      torch for the torch.compile trace test) are pip-installed only when
#      missing, into a virtual environment .venv-test at the repository's
#      root (QGEMM_TEST_VENV names another; `make clean` keeps it, `make
#      distclean` removes it) that still sees the
#      system's packages (torch, cupy, jax where present): this Python itself
#      is never changed. torch comes from PyPI (QGEMM_TEST_TORCH, default
#      "torch"; empty = do not install it): the Linux wheel with its CUDA
#      libraries, ~5 GB in the venv and ~100 s on a 2-core CI machine the
#      first time (measured 2026-11-25, torch 2.15.0), which imports and
#      traces on a machine without a GPU. No PyPI wheel without the CUDA
#      libraries imports (`pip install --no-deps torch` fails on
#      libcufile.so.0). If it cannot be installed, the tests that need it
#      say "skipped: ..." with the reason;
#   2. python/setup.py build_ext --inplace, with -Werror as the Makefile
#      builds C, its temporary files under BUILD_DIR/python;
#   3. pytest on tests/python with PYTHONPATH=python, skip reasons shown (-rs);
#      the script stops with its status when a test fails, or when none ran
#      (status 5);
#   4. examples/moe.py --trace (torch.compile on meta tensors), where torch
#      imports: its status is the script's.
#
# PYTHON names the interpreter (default python3). Without a GPU, or without
# PyTorch, the tests that need them skip themselves with the reason.
set -euo pipefail

cd "$(dirname "$0")/../.."
build="${1:-build}"
mkdir -p "$build/python"
build="$(cd "$build" && pwd)"
py="${PYTHON:-python3}"
venv="${QGEMM_TEST_VENV:-$PWD/.venv-test}"

have_deps() { "$1" -c "import pytest, numpy, ml_dtypes, setuptools" 2>/dev/null; }
have_torch() { "$1" -c "import torch" 2>/dev/null; }
torch_spec="${QGEMM_TEST_TORCH-torch}"
want_torch() { [ -n "$torch_spec" ] && ! have_torch "$1"; }

command -v "$py" >/dev/null || { echo "error: $py not found: the Python tests need Python >= 3.9" >&2; exit 1; }
if ! have_deps "$py" || want_torch "$py"; then
    if [ ! -x "$venv/bin/python" ]; then
        echo "installing the test dependencies into a virtual environment in $venv"
        "$py" -m venv --system-site-packages "$venv"
    fi
    py="$venv/bin/python"
    have_deps "$py" || "$py" -m pip install -q pytest numpy ml_dtypes setuptools
    if want_torch "$py"; then
        echo "pip install $torch_spec (PyPI, with its CUDA libraries: ~5 GB, ~100 s the first time)"
        start=$SECONDS
        if "$py" -m pip install -q --progress-bar off --retries 2 --timeout 60 "$torch_spec"; then
            echo "torch installed in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1) in $venv)"
        else
            echo "warning: torch could not be installed: its tests skip with the reason" >&2
        fi
    fi
fi

headers="$("$py" -c "import sysconfig; print(sysconfig.get_paths()['include'])")"
if [ ! -f "$headers/Python.h" ]; then
    echo "error: $headers/Python.h not found: install Python's headers (Debian: python3-dev)" >&2
    exit 1
fi

echo "building the Python package in place ($("$py" --version))"
QGEMM_WERROR=1 "$py" python/setup.py -q build_ext --inplace \
    --build-temp "$build/python" --parallel "$(nproc 2>/dev/null || echo 2)"

# The extension's C units call one another one way only, as the library's do
# (docs/DESIGN.md §2; `make house-check` checks the library, testkit and CLI).
# (the extension's objects only: setup.py builds the wheel's CLI under cli/)
objs=$(find "$build/python" -path "$build/python/cli" -prune -o -name '*.o' -print | sort)
if [ -n "$objs" ]; then python3 tools/unit_graph.py $(printf 'python=%s ' $objs); fi

export PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}"
"$py" -m pytest -q -rs tests/python

# The README's Python example, traced under torch.compile(fullgraph=True) on
# meta tensors (no GPU needed): a graph break fails it, and so the script.
if have_torch "$py"; then
    echo "examples/moe.py --trace"
    "$py" examples/moe.py --trace
else
    echo "skipped: examples/moe.py --trace: torch is not importable"
fi
