"""CPU tests of the family calls' host path (issues 49-51): the extension's torch mode
(QGPY_TORCH_MODE in python/csrc/qgpy.h) declines, having done nothing, what is not a plain
CUDA torch tensor, so the DLPack way still decides and words every rejection; einsum's
parsed-expression cache. The mode's launches themselves need a GPU (tests/python/test_gpu.py,
test_einsum.py, test_indexer_gpu.py, test_cast.py run through it there)."""
import sys

import pytest

import qgemm
from qgemm import _C, _dispatch

E = sys.modules["qgemm.einsum"]  # (qgemm.einsum is DeepGEMM's function of that name)

torch = pytest.importorskip("torch")
MODE = _dispatch.TORCH_MODE


def _cpu(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype)


def test_torch_mode_declines_cpu_tensors():
    bf, i32, u8 = torch.bfloat16, torch.int32, torch.uint8
    a, b, d = _cpu(8, 64, dtype=bf), _cpu(16, 64, dtype=bf), _cpu(8, 16, dtype=bf)
    calls = {
        "bf16_gemm": lambda: _C.bf16_gemm(_C.KIND_DENSE, a, b, d, None, None, 0, None, 0, MODE),
        "cast": lambda: _C.cast(_C.CAST_PER_TOKEN, a, _cpu(8, 64, dtype=u8), _cpu(8), None, 8, 1,
                                0, 0, 0, 0, 0, MODE),
        "sf_layout": lambda: _C.sf_layout(_C.CAST_SF_MN_MAJOR,
                                          _cpu(8, 1), _cpu(1, 8), None, 8, 128, 1, 0, 0, MODE),
        "mqa_logits": lambda: _C.mqa_logits(_cpu(4, 32, 32, dtype=u8), _cpu(8, 32, dtype=u8),
                                            _cpu(8), _cpu(4, 32), _cpu(4, dtype=i32),
                                            _cpu(4, dtype=i32), _cpu(4, 8), 1, 0, 0, MODE),
        "paged_mqa_schedule": lambda: _C.paged_mqa_schedule(_cpu(2, 1, dtype=i32),
                                                            _cpu(5, 2, dtype=i32), 64, 0, MODE),
        "paged_mqa_logits": lambda: _C.paged_mqa_logits(
            _cpu(2, 1, 32, 128, dtype=u8), _cpu(4, 64, 1, 132, dtype=u8), _cpu(2, 32),
            _cpu(2, 1, dtype=i32), _cpu(2, 2, dtype=i32), _cpu(5, 2, dtype=i32), _cpu(2, 128),
            128, 0, 0, MODE),
        "hc_prenorm": lambda: _C.hc_prenorm(_cpu(8, 64, dtype=bf), _cpu(24, 64), _cpu(8, 24),
                                            _cpu(8), 0, 0, MODE),
        # the e4m3-D and SwiGLU GEMMs (fp8out_call): before they knew the mode they exported
        # through DLPack on the legacy stream, which broke CUDA-graph capture on the H200
        "gemm_fp8out": lambda: _C.gemm_fp8out(_C.KIND_DENSE, _cpu(8, 128, dtype=u8), _cpu(8, 1),
                                              _cpu(128, 128, dtype=u8), _cpu(1, 1),
                                              _cpu(8, 128, dtype=u8), _cpu(8, 1), None, 0, 0,
                                              None, 0b10101, 0, MODE),
        "gemm_swiglu": lambda: _C.gemm_swiglu(_C.KIND_DENSE, _cpu(8, 128, dtype=u8), _cpu(8, 1),
                                              _cpu(256, 128, dtype=u8), _cpu(2, 1),
                                              _cpu(8, 128, dtype=u8), _cpu(8, 1), None, _cpu(8),
                                              0, 0, 0.0, None, 0b10101, 0, MODE),
    }
    for name, call in calls.items():
        assert call() is NotImplemented, name


def test_torch_mode_declines_none_and_other_objects():
    from fake_dlpack import FakeTensor
    x = FakeTensor([8, 64], "bfloat16")
    assert _C.hc_prenorm(x, x, x, x, 0, 0, MODE) is NotImplemented
    assert _C.hc_prenorm(None, None, None, None, 0, 0, MODE) is NotImplemented
    assert _C.bf16_gemm(_C.KIND_DENSE, None, None, None, None, None, 0, None, 0,
                        MODE) is NotImplemented
    assert _C.gemm_swiglu(_C.KIND_DENSE, x, x, x, x, x, x, None, None, 0, 0, 0.0, None, 0, 0,
                          MODE) is NotImplemented
    assert _C.gemm_fp8out(_C.KIND_DENSE, None, None, None, None, None, None, None, 0, 0, None,
                          0, 0, MODE) is NotImplemented


def test_public_calls_still_word_the_rejection():
    # a CPU tensor: declined by the torch mode, then refused by the DLPack way's checks
    a = torch.zeros(8, 64, dtype=torch.bfloat16)
    with pytest.raises((ValueError, RuntimeError)):
        qgemm.tf32_hc_prenorm_gemm(a, torch.zeros(24, 64), torch.zeros(8, 24), torch.zeros(8))


def test_einsum_expression_cache():
    E._CANON.clear()
    assert E._canon("bhr,hdr->bhd") == E.BHR_HDR_BHD
    assert E._canon(" xyz , ywz -> xyw ") == E.BHR_HDR_BHD
    assert E._CANON["bhr,hdr->bhd"] == E.BHR_HDR_BHD
    with pytest.raises(ValueError):
        E._canon("bhr,hdr")
    assert "bhr,hdr" not in E._CANON  # only what parsed is kept
    with pytest.raises(TypeError):
        E._canon(["bhr,hdr->bhd"])
