#!/usr/bin/env bash
# tests/python/run.sh [BUILD_DIR] -- build the Python package in place and run
# its tests; `make test` calls it after the C tests (`make pytest` alone).
#
#   1. the test dependencies (pytest, numpy, ml_dtypes; setuptools to build)
#      are pip-installed only when missing. Where pip refuses to install into
#      this Python (PEP 668: Debian's own python3), they go into a virtual
#      environment BUILD_DIR/venv that still sees the system's packages
#      (torch, cupy, jax where present);
#   2. python/setup.py build_ext --inplace, with -Werror as the Makefile
#      builds C, its temporary files under BUILD_DIR/python;
#   3. pytest on tests/python with PYTHONPATH=python, skip reasons shown (-rs).
#      Its exit status is the script's: non-zero when a test fails, or when
#      none ran (status 5).
#
# PYTHON names the interpreter (default python3). Without a GPU, or without
# PyTorch, the tests that need them skip themselves with the reason.
set -euo pipefail

cd "$(dirname "$0")/../.."
build="${1:-build}"
mkdir -p "$build/python"
build="$(cd "$build" && pwd)"
py="${PYTHON:-python3}"

have_deps() { "$1" -c "import pytest, numpy, ml_dtypes, setuptools" 2>/dev/null; }
# PEP 668: a distribution's Python (not a venv) marked EXTERNALLY-MANAGED
externally_managed() {
    "$1" -c "import os, sys, sysconfig; sys.exit(sys.prefix != sys.base_prefix or not os.path.isfile(
             os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"
}

command -v "$py" >/dev/null || { echo "error: $py not found: the Python tests need Python >= 3.9" >&2; exit 1; }
if ! have_deps "$py"; then
    if externally_managed "$py"; then
        [ -x "$build/venv/bin/python" ] || {
            echo "pip may not install into $py (PEP 668): using a virtual environment in $build/venv"
            "$py" -m venv --system-site-packages "$build/venv"
        }
        py="$build/venv/bin/python"
    fi
    have_deps "$py" || "$py" -m pip install -q pytest numpy ml_dtypes setuptools
fi

headers="$("$py" -c "import sysconfig; print(sysconfig.get_paths()['include'])")"
if [ ! -f "$headers/Python.h" ]; then
    echo "error: $headers/Python.h not found: install Python's headers (Debian: python3-dev)" >&2
    exit 1
fi

echo "building the Python package in place ($("$py" --version))"
QGEMM_WERROR=1 "$py" python/setup.py -q build_ext --inplace \
    --build-temp "$build/python" --parallel "$(nproc 2>/dev/null || echo 2)"

PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}" exec "$py" -m pytest -q -rs tests/python
