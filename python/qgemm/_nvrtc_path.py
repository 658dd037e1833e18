# SPDX-License-Identifier: MIT
"""Point the C library at NVRTC from PyPI (nvidia-cuda-nvrtc), imported once by
qgemm/__init__.py.

The C library loads NVRTC at its first compile (src/nvrtc.c) from, in order:
$QGEMM_NVRTC_DIR, $CUDA_HOME/lib64 and lib (CUDA_HOME defaults to
/usr/local/cuda), then the system loader. The wheel depends on the pip package
nvidia-cuda-nvrtc, whose library lies in site-packages/nvidia/cu13/lib
(CUDA 13; CUDA 12's nvidia-cuda-nvrtc-cu12 used nvidia/cuda_nvrtc/lib), where
none of those would look. So at import, when QGEMM_NVRTC_DIR is not in the
environment at all, this sets it to that directory when it holds libnvrtc.

Precedence, as a result:
  1. QGEMM_NVRTC_DIR set by the user: left as it is. Set to an empty string, it
     skips the pip NVRTC (the C library reads an empty value as unset), so the
     CUDA toolkit's ($CUDA_HOME/lib64, then the system loader) is used;
  2. the pip package's NVRTC (nvidia/cu13/lib, then nvidia/cuda_nvrtc/lib);
  3. $CUDA_HOME/lib64 and lib, then the system loader (the C library's own
     order, when no pip NVRTC is installed).

The variable is set in os.environ, so child processes inherit it. The C
library reads it once, at the first compile of the process: changing it after
that has no effect. Nothing here imports the nvidia package or loads NVRTC.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Optional

ENV = "QGEMM_NVRTC_DIR"

# Where the pip packages put libnvrtc, relative to an `nvidia` namespace folder.
_LAYOUTS = (("cu13", "lib", "libnvrtc.so.13"), ("cuda_nvrtc", "lib", "libnvrtc.so.12"))

PIP_NVRTC_DIR: Optional[str] = None
"""The pip NVRTC directory found at import (None: none installed), whether or
not it was used."""


def find_pip_nvrtc() -> Optional[str]:
    """The directory holding the pip package's libnvrtc, or None."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec else []:
        for sub, lib, name in _LAYOUTS:
            folder = os.path.join(base, sub, lib)
            if os.path.isfile(os.path.join(folder, name)):
                return folder
    return None


def configure() -> None:
    """Set QGEMM_NVRTC_DIR to the pip NVRTC unless it is already in the environment."""
    global PIP_NVRTC_DIR
    PIP_NVRTC_DIR = find_pip_nvrtc()
    if ENV not in os.environ and PIP_NVRTC_DIR:
        os.environ[ENV] = PIP_NVRTC_DIR


configure()
