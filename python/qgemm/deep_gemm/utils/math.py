"""``deep_gemm.utils.math``: DeepGEMM's casts and integer helpers, on qgemm's
cast kernels (torch for CPU tensors) (FP4 and custom-dims casts raise NotImplementedError)."""
from __future__ import annotations

from ..._deepgemm import STUBS as _STUBS
from ..._runtime import align, ceil_div  # noqa: F401
from ..._torch_helpers import (  # noqa: F401
    ceil_to_ue8m0,
    pack_ue8m0_to_int,
    unpack_ue8m0_from_int,
)
from ...cast import (  # noqa: F401
    per_block_cast_to_fp8,
    per_channel_cast_to_fp8,
    per_token_cast_to_fp8,
)

per_custom_dims_cast_to_fp8 = _STUBS["per_custom_dims_cast_to_fp8"]
per_token_cast_to_fp4 = _STUBS["per_token_cast_to_fp4"]
transpose_packed_fp4 = _STUBS["transpose_packed_fp4"]
cast_back_from_fp4 = _STUBS["cast_back_from_fp4"]

__all__ = ["ceil_div", "align", "ceil_to_ue8m0", "pack_ue8m0_to_int", "unpack_ue8m0_from_int",
           "per_token_cast_to_fp8", "per_channel_cast_to_fp8", "per_block_cast_to_fp8",
           "per_custom_dims_cast_to_fp8", "per_token_cast_to_fp4", "transpose_packed_fp4",
           "cast_back_from_fp4"]
