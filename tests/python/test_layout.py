"""Scale-factor layout helpers as DeepGEMM's tests/test_layout.py checks them (issue 49
item 5): shapes, strides and values against reference formulas written here (element
loops over plain Python numbers, no qgemm code), on torch CPU tensors; and
transform_sf_into_required_layout as DeepGEMM's SM90 path does it."""
from __future__ import annotations

import struct

import pytest

import qgemm
import qgemm.deep_gemm.utils as dgu

torch = pytest.importorskip("torch")


def _tma(mn: int) -> int:
    return (mn + 3) // 4 * 4


def _pow2_scales(*shape: int, seed: int = 0) -> "torch.Tensor":
    g = torch.Generator().manual_seed(seed)
    return torch.pow(2.0, torch.randint(-20, 20, shape, generator=g).float())


def _exp_byte(v: float) -> int:
    return (struct.unpack("<I", struct.pack("<f", v))[0] >> 23) & 0xFF


def _packed_ref(rows):
    """[mn][k] floats -> [mn][ceil(k/4)] int32: bytes k0..k3 of each word, lowest first."""
    out = []
    for row in rows:
        k = len(row)
        words = []
        for w in range((k + 3) // 4):
            word = 0
            for j in range(4):
                kk = 4 * w + j
                if kk < k:
                    word |= _exp_byte(row[kk]) << (8 * j)
            words.append(struct.unpack("<i", struct.pack("<I", word))[0])
        out.append(words)
    return out


# ---- get_mn_major_tma_aligned_tensor --------------------------------------------------------

# (mn, sf_k, groups, input made M-major first): the cases of DeepGEMM's enumerate_sf_layout
# kind, with the size-1 dimensions that used to keep their strides (issue 49)
CASES = [(mn, k, g, t) for mn in (1, 3, 4, 64, 127, 4096) for k in (1, 3, 56)
         for g in (1, 2) for t in (False, True)]


@pytest.mark.parametrize("mn,sf_k,groups,m_major", CASES)
def test_mn_major_tma_aligned_tensor_strides_and_values(mn, sf_k, groups, m_major):
    x = torch.randn(groups * mn, sf_k)
    x = x if groups == 1 else x.view(groups, mn, sf_k)
    if m_major:  # DeepGEMM's "with_transpose=False" input: already M-major, unaligned ld
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    y = dgu.get_mn_major_tma_aligned_tensor(x)
    tma = _tma(mn)
    assert y.shape == x.shape
    assert y.stride()[-2:] == (1, tma), (y.stride(), tma)
    if groups > 1:
        assert y.stride(0) == tma * sf_k
    assert torch.equal(x, y)
    again = dgu.get_mn_major_tma_aligned_tensor(y)
    assert again.data_ptr() == y.data_ptr() and again.stride() == y.stride()


def test_mn_major_size_one_dimensions_get_the_tma_stride():
    # what test_layout.test_sf_layout_kernels failed on: [mn, 1] row-major has strides
    # (1, 1), which is M-major in memory but not stride (1, tma_aligned_mn)
    x = torch.randn(4096, 1)
    assert x.stride() == (1, 1)
    y = qgemm.get_mn_major_tma_aligned_tensor(x)
    assert y.stride() == (1, 4096)
    assert torch.equal(x, y)


# ---- packed UE8M0 ------------------------------------------------------------------------------

@pytest.mark.parametrize("mn,sf_k,groups,m_major", [
    (mn, k, g, t) for mn in (1, 5, 64, 130) for k in (1, 4, 7, 56) for g in (1, 3)
    for t in (False, True)])
def test_packed_ue8m0_tensor(mn, sf_k, groups, m_major):
    x = _pow2_scales(groups * mn, sf_k, seed=mn * 100 + sf_k)
    x = x if groups == 1 else x.view(groups, mn, sf_k)
    if m_major:
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    y = qgemm.get_mn_major_tma_aligned_packed_ue8m0_tensor(x)
    packed_k, tma = (sf_k + 3) // 4, _tma(mn)
    assert y.dtype == torch.int32
    assert tuple(y.shape) == ((groups,) if groups > 1 else ()) + (mn, packed_k)
    want_strides = (packed_k * tma, 1, tma) if groups > 1 else (1, tma)
    assert y.stride() == want_strides
    x3 = x if groups > 1 else x.unsqueeze(0)
    y3 = y if groups > 1 else y.unsqueeze(0)
    for gi in range(groups):
        assert y3[gi].tolist() == _packed_ref(x3[gi].tolist()), gi


def test_pack_and_unpack_ue8m0():
    x = _pow2_scales(6, 8)
    packed = qgemm.pack_ue8m0_to_int(x)
    assert packed.dtype == torch.int32 and tuple(packed.shape) == (6, 2)
    assert packed.tolist() == _packed_ref(x.tolist())
    assert torch.equal(qgemm.unpack_ue8m0_from_int(packed), x)
    with pytest.raises(ValueError, match="powers of two"):
        qgemm.pack_ue8m0_to_int(torch.full((1, 4), 3.0))
    with pytest.raises(ValueError, match="multiple of 4"):
        qgemm.pack_ue8m0_to_int(torch.ones(1, 3))


@pytest.mark.parametrize("mn,ks,gran_k", [
    (128, [128, 256, 0, 384], 128), (64, [512, 128], 128), (256, [4096, 1024, 128], 128),
    (128, [64, 96, 32], 32), (8, [0], 128)])
def test_k_grouped_packed_ue8m0_tensor(mn, ks, gran_k):
    # DeepGEMM's test_k_grouped_sf_layout_kernels: each group's rows of sf [sum(ceil(K/gran_k)),
    # MN] packed four K rows to an int32, groups padded on their own
    rows = [(k + gran_k - 1) // gran_k for k in ks]
    sf = _pow2_scales(sum(rows), mn, seed=len(ks))
    layout = torch.tensor(ks, dtype=torch.int32)
    y = qgemm.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, layout, ks, gran_k,
                                                                     gran_k)
    packed = [(r + 3) // 4 for r in rows]
    assert y.dtype == torch.int32 and tuple(y.shape) == (sum(packed), mn) and y.is_contiguous()
    start, out = 0, 0
    for r, p in zip(rows, packed):
        group = sf[start:start + r].T.tolist()  # [mn][r]
        ref = _packed_ref(group)  # [mn][p]
        got = y[out:out + p].T.tolist()
        assert got == ref
        start, out = start + r, out + p


def test_k_grouped_packed_refuses_what_deepgemm_refuses():
    f = qgemm.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor
    sf = _pow2_scales(3, 8)
    layout = torch.tensor([128, 256], dtype=torch.int32)
    with pytest.raises(ValueError, match="sum"):
        f(sf, layout, [128, 128], 128, 128)
    with pytest.raises(ValueError, match="MN a multiple of 4"):
        f(_pow2_scales(3, 6), layout, [128, 256], 128, 128)
    with pytest.raises(ValueError, match="ks_cpu"):
        f(sf, layout, [384], 128, 128)
    with pytest.raises(NotImplementedError, match="use_psum_layout"):
        f(sf, layout, [128, 256], 128, 128, use_psum_layout=True)


# ---- transform_sf_into_required_layout (SM90) ------------------------------------------------


def test_transform_sfa_is_the_mn_major_helper():
    sf = torch.randn(130, 1)  # [mn, ceil(k/128)], k = 100: the size-1 case
    out = qgemm.transform_sf_into_required_layout(sf, 130, 100, (1, 128, 128), is_sfa=True)
    assert out.stride() == (1, 132) and torch.equal(out, sf)
    out = qgemm.transform_sf_into_required_layout(sf, 130, 100, (1, 128))
    assert out.stride() == (1, 132)


def test_transform_sfb_keeps_the_values_row_major():
    sf = torch.randn(2, 3)
    out = qgemm.transform_sf_into_required_layout(sf, 256, 300, (1, 128, 128), is_sfa=False)
    assert out.is_contiguous() and torch.equal(out, sf)


def test_transform_refuses_shapes_as_deepgemm():
    with pytest.raises(ValueError, match="shape"):
        qgemm.transform_sf_into_required_layout(torch.randn(4, 3), 5, 300, (1, 128))


# ---- cublaslt_gemm_* FP32 output (issue 49 item 6) ----------------------------------------


def _calc_diff(x, y):  # DeepGEMM's deep_gemm/testing calc_diff
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    return float(1 - 2 * (x * y).sum() / denominator)


@pytest.mark.parametrize("m,n,k", [(1, 256, 7168), (16, 512, 1024)])
def test_cublaslt_gemm_fp32_out_is_accurate(m, n, k):
    # DeepGEMM's test_bf16.test_cublaslt_gemm: bf16 in, FP32 out, diff < 6e-7 against the
    # FP32 product; a bf16 intermediate gave 1.42e-6 at m=1, n=256, k=7168
    g = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=g).bfloat16()
    b = torch.randn(n, k, generator=g).bfloat16()
    ref = a.double() @ b.double().T
    d = torch.empty(m, n)
    qgemm.cublaslt_gemm_nt(a, b, d)
    assert _calc_diff(d, ref) < 6e-7
    # and with C (accumulate): the product is not rounded to 16 bits before C is added
    c = torch.randn(m, n, generator=g)
    qgemm.cublaslt_gemm_nt(a, b, d, c=c)
    assert _calc_diff(d, ref + c.double()) < 6e-7
    dn = torch.empty(m, n)
    qgemm.cublaslt_gemm_nn(a, b.T.contiguous(), dn)
    assert _calc_diff(dn, ref) < 6e-7
