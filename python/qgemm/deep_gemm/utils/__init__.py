"""``deep_gemm.utils`` as DeepGEMM has it: ``from qgemm.deep_gemm.utils import
per_token_cast_to_fp8`` (``utils.math``: casts and integer helpers;
``utils.layout``: scale-factor layouts and the contiguous-layout alignment;
DeepGEMM's distributed helpers raise NotImplementedError)."""
from __future__ import annotations

from . import layout, math  # noqa: F401
from .layout import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from ..._deepgemm import STUBS as _STUBS

init_dist = _STUBS["init_dist"]
uneven_all_gather = _STUBS["uneven_all_gather"]

__all__ = list(layout.__all__) + list(math.__all__) + ["init_dist", "uneven_all_gather"]
