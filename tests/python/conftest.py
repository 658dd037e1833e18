"""Shared fixtures of qgemm's Python tests.

Tests run against the installed package (``pip install ./python``) or an
in-place build (``PYTHONPATH=python`` after ``python3 python/setup.py
build_ext --inplace``).
"""
from __future__ import annotations

import functools
from typing import Optional

import pytest

import qgemm


@functools.lru_cache(maxsize=None)
def gpu_unavailable_reason() -> Optional[str]:
    """None when the library can open CUDA device 0, else its error message."""
    try:
        qgemm.get_device_props(0)
    except RuntimeError as e:
        return str(e)
    return None


@pytest.fixture(autouse=True)
def _seeded_rng(request):
    """Every test draws from torch's and Python's generators seeded from its own name
    (and QGEMM_TEST_SEED, default 0, to explore other draws): inputs stay random but a
    failure reproduces, and a CPU assertion on a statistic of random data cannot pass
    one CI run and fail the next."""
    import os
    import random
    import zlib
    seed = (zlib.crc32(request.node.nodeid.encode())
            + int(os.environ.get("QGEMM_TEST_SEED", "0"))) & 0x7FFFFFFF
    random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)


@pytest.fixture
def no_gpu() -> str:
    """For tests that hand fake device pointers to the library: they may only run
    where the library cannot reach a GPU (it fails before touching memory).
    Returns the library's reason."""
    reason = gpu_unavailable_reason()
    if reason is None:
        pytest.skip("a GPU is present: this test passes fake device pointers (GPU tests "
                    "cover the same paths with real tensors)")
    return reason


@pytest.fixture
def reset_num_sms():
    yield
    qgemm.set_num_sms(0)


@pytest.fixture
def reset_pdl():
    yield
    qgemm.set_pdl(False)
