"""qgemm's PyTorch helpers (casts to FP8, scale layout): on the CPU, and on the GPU
when there is one. Skipped where PyTorch is not installed."""
from __future__ import annotations

import math
import random

import pytest

import qgemm

torch = pytest.importorskip("torch")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
E4M3_SUBNORMAL_STEP = 2.0 ** -9  # smallest positive float8_e4m3fn


def _random(shape, device, seed):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape, generator=gen)
    # rows (and groups) of very different magnitudes, so each block needs its own scale
    x = x * torch.exp(3 * torch.randn(*shape[:-1], 1, generator=gen))
    return x.to(device)


def _assert_quantized(x, q, scales_per_element, seed):
    """|q * s - x| is within e4m3's rounding error: half an ulp of 3 mantissa
    bits (2^-4 relative) for normal values, half the subnormal step otherwise."""
    deq = q.float() * scales_per_element
    err = (deq - x.float()).abs()
    bound = x.float().abs() * 2.0 ** -4 + scales_per_element * E4M3_SUBNORMAL_STEP / 2
    worst = (err / bound).max().item()
    assert worst <= 1 + 1e-5, f"seed {seed}: error {worst:.3f}x the rounding bound"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(4, 128), (3, 300), (2, 5, 256), (1, 16), (3, 100), (7, 1000)])
def test_per_token_cast(shape, device):
    seed = random.randrange(2 ** 31)
    x = _random(shape, device, seed)
    x[(0,) * (x.dim() - 1)][:128] = 0  # the first row's first block: still a finite scale
    q, s = qgemm.per_token_cast_to_fp8(x)
    k, kb = shape[-1], math.ceil(shape[-1] / 128)
    assert q.dtype == torch.float8_e4m3fn and q.shape == x.shape and q.is_contiguous()
    assert s.dtype == torch.float32 and s.shape == (*shape[:-1], kb)
    for j in range(kb):
        amax = x[..., j * 128:(j + 1) * 128].abs().amax(dim=-1).clamp(min=1e-4)
        torch.testing.assert_close(s[..., j], amax / 448, rtol=1e-6, atol=0)
    assert torch.isfinite(q.float()).all()
    _assert_quantized(x, q, s.repeat_interleave(128, dim=-1)[..., :k], seed)
    # the largest element of each block uses the top of the FP8 range (a zero
    # block stays zero; one below the amax floor cannot reach it)
    for j in range(kb):
        top = q[..., j * 128:(j + 1) * 128].float().abs().amax(dim=-1)
        amax = x[..., j * 128:(j + 1) * 128].abs().amax(dim=-1)
        assert (top[amax >= 1e-4] == 448).all(), f"seed {seed}: block {j} does not reach 448"
        assert (top[amax == 0] == 0).all(), f"seed {seed}: zero block {j} quantized to nonzero"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(256, 384), (200, 300), (3, 130, 256), (16, 16)])
def test_per_block_cast(shape, device):
    seed = random.randrange(2 ** 31)
    x = _random(shape, device, seed)
    q, s = qgemm.per_block_cast_to_fp8(x)
    *lead, n, k = shape
    nb, kb = math.ceil(n / 128), math.ceil(k / 128)
    assert q.dtype == torch.float8_e4m3fn and q.shape == x.shape and q.is_contiguous()
    assert s.dtype == torch.float32 and s.shape == (*lead, nb, kb) and s.is_contiguous()
    for i in range(nb):
        for j in range(kb):
            block = x[..., i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            amax = block.abs().amax(dim=(-2, -1)).clamp(min=1e-4)
            torch.testing.assert_close(s[..., i, j], amax / 448, rtol=1e-6, atol=0)
    per_element = s.repeat_interleave(128, dim=-2)[..., :n, :].repeat_interleave(128, dim=-1)[..., :k]
    _assert_quantized(x, q, per_element, seed)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m,kb", [(1, 1), (1, 56), (3, 2), (4, 1), (129, 3), (2112, 56)])
def test_col_major_tma_aligned_tensor_2d(m, kb, device):
    x = torch.rand(m, kb, device=device) + 0.5
    y = qgemm.get_col_major_tma_aligned_tensor(x)
    ld = math.ceil(m / 4) * 4
    assert torch.equal(y, x)
    assert y.data_ptr() % 16 == 0
    if m > 1:
        assert y.stride(0) == 1
    if kb > 1:
        assert y.stride(1) == ld
    assert qgemm.get_col_major_tma_aligned_tensor(y) is y  # already in place: no copy


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("g,m,kb", [(2, 3, 2), (4, 256, 56), (3, 1, 5), (2, 6, 1)])
def test_col_major_tma_aligned_tensor_grouped(g, m, kb, device):
    x = torch.rand(g, m, kb, device=device) + 0.5
    y = qgemm.get_col_major_tma_aligned_tensor(x)
    ld = math.ceil(m / 4) * 4
    assert torch.equal(y, x)
    wanted = (kb * ld, 1, ld)
    for i, size in enumerate((g, m, kb)):
        if size > 1:
            assert y.stride(i) == wanted[i], (y.stride(), wanted)
    assert qgemm.get_col_major_tma_aligned_tensor(y) is y


def test_col_major_tma_aligned_tensor_rejects_what_it_cannot_mean():
    with pytest.raises(ValueError, match="float32"):
        qgemm.get_col_major_tma_aligned_tensor(torch.ones(4, 2, dtype=torch.float16))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        qgemm.get_col_major_tma_aligned_tensor(torch.ones(4))
    with pytest.raises(ValueError, match=r"\[M, K/128\]"):
        qgemm.get_col_major_tma_aligned_tensor(torch.ones(2, 2, 4, 2))
    with pytest.raises(TypeError, match="torch.Tensor"):
        qgemm.get_col_major_tma_aligned_tensor([[1.0]])


def test_torch_cpu_tensors_are_rejected():
    a, sfa = qgemm.per_token_cast_to_fp8(torch.randn(64, 256))
    b, sfb = qgemm.per_block_cast_to_fp8(torch.randn(128, 256))
    d = torch.empty(64, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="must be in CUDA device memory, got a tensor on CPU"):
        qgemm.fp8_gemm_nt((a, qgemm.get_col_major_tma_aligned_tensor(sfa)), (b, sfb), d)
