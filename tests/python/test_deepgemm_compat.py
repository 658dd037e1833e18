"""DeepGEMM drop-in names (docs/DEEPGEMM.md).

CPU checks: the signatures of DeepGEMM's entry points (argument names, order,
defaults: the table below is written from DeepGEMM's csrc/apis/*.hpp pybind11
``py::arg`` lists and deep_gemm/utils/*.py, commit 54e2261) match qgemm's, the
unsupported values raise NotImplementedError naming the argument and value,
every entry point of deep_gemm/__init__.py resolves on qgemm, aliases are the
same objects, and torch.compile traces the DeepGEMM-style call with a
row-major sfa. A GPU test ports a DeepGEMM user's calling pattern
(``import qgemm as deep_gemm``) and compares with the dequantized reference.
"""
from __future__ import annotations

import inspect
import random

import pytest

import qgemm
import qgemm.deep_gemm as qdg
from qgemm import _deepgemm
from reference import calc_diff, dequant_a, dequant_b

R = inspect.Parameter.empty  # a required argument
_RECIPES = [("recipe", None), ("recipe_a", None), ("recipe_b", None)]
_GEMM_TAIL = _RECIPES + [("compiled_dims", "nk"), ("disable_ue8m0_cast", False)]

# name -> [(argument, default)] as DeepGEMM declares them (keyword-callable)
DEEPGEMM_SIGNATURES = {
    "fp8_fp4_gemm_nt": [("a", R), ("b", R), ("d", R), ("c", None)] + _GEMM_TAIL,
    "fp8_gemm_nt": [("a", R), ("b", R), ("d", R), ("c", None)] + _GEMM_TAIL,
    "m_grouped_fp8_fp4_gemm_nt_contiguous": [("a", R), ("b", R), ("d", R), ("grouped_layout", R)]
    + _GEMM_TAIL + [("use_psum_layout", False), ("ensure_zero_padding", True),
                    ("expected_m_for_psum_layout", None)],
    "m_grouped_fp8_gemm_nt_contiguous": [("a", R), ("b", R), ("d", R), ("grouped_layout", R)]
    + _GEMM_TAIL + [("use_psum_layout", False), ("ensure_zero_padding", True),
                    ("expected_m_for_psum_layout", None)],
    "m_grouped_fp8_fp4_gemm_nt_masked": [("a", R), ("b", R), ("d", R), ("masked_m", R),
                                         ("expected_m", R)] + _GEMM_TAIL,
    "m_grouped_fp8_gemm_nt_masked": [("a", R), ("b", R), ("d", R), ("masked_m", R),
                                     ("expected_m", R)] + _GEMM_TAIL,
    "fp8_m_grouped_gemm_nt_masked": [("a", R), ("b", R), ("d", R), ("masked_m", R),
                                     ("expected_m", R)] + _GEMM_TAIL,
    "transform_sf_into_required_layout": [
        ("sf", R), ("mn", R), ("k", R), ("recipe", R), ("num_groups", None), ("is_sfa", None),
        ("disable_ue8m0_cast", False), ("psum_layout", None)],
    "get_theoretical_mk_alignment_for_contiguous_layout": [("expected_m", None)],
    "k_grouped_fp8_gemm_nt_contiguous": [("a", R), ("b", R), ("d", R), ("ks_cpu", R),
                                         ("grouped_layout", R), ("c", None),
                                         ("recipe", (1, 1, 128)), ("compiled_dims", "mn"),
                                         ("use_psum_layout", False)],
    "per_token_cast_to_fp8": [("x", R), ("use_ue8m0", R), ("gran_k", 128),
                              ("use_packed_ue8m0", False)],
    "per_channel_cast_to_fp8": [("x", R), ("use_ue8m0", R), ("gran_k", 128)],
    "per_block_cast_to_fp8": [("x", R), ("use_ue8m0", R), ("gran_k", 128)],
    "ceil_div": [("x", R), ("y", R)],
    "align": [("x", R), ("y", R)],
    "ceil_to_ue8m0": [("x", R)],
    "per_custom_dims_cast_to_fp8": [("x", R), ("dims", R), ("use_ue8m0", R)],
    "fp8_fp4_mqa_logits": [("q", R), ("kv", R), ("weights", R), ("cu_seq_len_k_start", R),
                           ("cu_seq_len_k_end", R), ("clean_logits", True), ("max_seqlen_k", 0),
                           ("logits_dtype", "torch.float32")],
    "fp8_mqa_logits": [("q", R), ("kv", R), ("weights", R), ("cu_seq_len_k_start", R),
                       ("cu_seq_len_k_end", R), ("clean_logits", True), ("max_seqlen_k", 0)],
    "get_paged_mqa_logits_metadata": [("context_lens", R), ("block_kv", R), ("num_sms", R),
                                      ("indices", None)],
    "fp8_fp4_paged_mqa_logits": [("q", R), ("kv_cache", R), ("weights", R), ("context_lens", R),
                                 ("block_table", R), ("schedule_meta", R), ("max_context_len", R),
                                 ("clean_logits", False), ("logits_dtype", "torch.float32"),
                                 ("indices", None)],
    "fp8_paged_mqa_logits": [("q", R), ("kv_cache", R), ("weights", R), ("context_lens", R),
                             ("block_table", R), ("schedule_meta", R), ("max_context_len", R),
                             ("clean_logits", False), ("indices", None)],
    "tf32_hc_prenorm_gemm": [("a", R), ("b", R), ("d", R), ("sqr_sum", R), ("num_splits", None)],
    # csrc/apis/einsum.hpp and attention.hpp
    "einsum": [("expr", R), ("a", R), ("b", R), ("d", R), ("c", None), ("use_cublaslt", False)],
    "fp8_einsum": [("expr", R), ("a", R), ("b", R), ("d", R), ("c", None),
                   ("recipe", (1, 128, 128))],
    "fp8_gemm_nt_skip_head_mid": [("a", R), ("b", R), ("d", R), ("head_splits", R),
                                  ("recipe", None), ("compiled_dims", "nk"),
                                  ("disable_ue8m0_cast", False)],
}

# Where qgemm's default differs on purpose: qgemm's own earlier calls keep working.
DEVIATIONS = {
    # qgemm also takes the tensor as m_indices= (its earlier name)
    ("m_grouped_fp8_gemm_nt_contiguous", "grouped_layout"): None,
    # qgemm's per_token_cast_to_fp8(x) / per_block_cast_to_fp8(x) predate use_ue8m0
    ("per_token_cast_to_fp8", "use_ue8m0"): False,
    ("per_block_cast_to_fp8", "use_ue8m0"): False,
    ("per_channel_cast_to_fp8", "use_ue8m0"): False,
    # DeepGEMM's default is torch.float32; qgemm's None means it (no torch at import)
    ("fp8_fp4_mqa_logits", "logits_dtype"): None,
    ("fp8_fp4_paged_mqa_logits", "logits_dtype"): None,
}

# pybind11 functions declared without py::arg: positional only, number of arguments
DEEPGEMM_POSITIONAL = {
    "set_num_sms": 1, "get_num_sms": 0, "set_tc_util": 1, "get_tc_util": 0,
    "set_pdl": 1, "get_pdl": 0, "set_ignore_compile_dims": 1, "set_block_size_multiple_of": 1,
    "set_mk_alignment_for_contiguous_layout": 1, "get_mk_alignment_for_contiguous_layout": 0,
    "get_m_alignment_for_contiguous_layout": 0, "get_k_alignment_for_contiguous_layout": 0,
    "get_tma_aligned_size": 2, "get_mn_major_tma_aligned_tensor": 1,
}

# every public name of deep_gemm/__init__.py (and what `from .utils import *` adds)
DEEPGEMM_NAMES = """
set_num_sms get_num_sms set_tc_util get_tc_util set_ignore_compile_dims
set_block_size_multiple_of set_pdl get_pdl
cublaslt_gemm_nt cublaslt_gemm_nn cublaslt_gemm_tn cublaslt_gemm_tt
fp8_fp4_gemm_nt fp8_fp4_gemm_nn fp8_fp4_gemm_tn fp8_fp4_gemm_tt
m_grouped_fp8_fp4_gemm_nt_contiguous m_grouped_fp8_fp4_gemm_nn_contiguous
m_grouped_fp8_fp4_gemm_nt_masked
fp8_gemm_nt fp8_gemm_nn fp8_gemm_tn fp8_gemm_tt fp8_gemm_nt_skip_head_mid
m_grouped_fp8_gemm_nt_contiguous m_grouped_fp8_gemm_nn_contiguous m_grouped_fp8_gemm_nt_masked
k_grouped_fp8_gemm_nt_contiguous k_grouped_fp8_gemm_tn_contiguous
bf16_gemm_nt bf16_gemm_nn bf16_gemm_tn bf16_gemm_tt
m_grouped_bf16_gemm_nt_contiguous m_grouped_bf16_gemm_nn_contiguous
m_grouped_bf16_gemm_nt_masked k_grouped_bf16_gemm_tn_contiguous
einsum fp8_einsum fp8_fp4_mqa_logits get_paged_mqa_logits_metadata fp8_fp4_paged_mqa_logits
fp8_mqa_logits fp8_paged_mqa_logits tf32_hc_prenorm_gemm transform_sf_into_required_layout
fp8_m_grouped_gemm_nt_masked bf16_m_grouped_gemm_nt_masked
SymmBuffer get_symm_buffer_for_mega_moe transform_weights_for_mega_moe fp8_fp4_mega_moe
bf16_mega_moe
get_tma_aligned_size get_mn_major_tma_aligned_tensor get_mn_major_tma_aligned_packed_ue8m0_tensor
get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor
set_mk_alignment_for_contiguous_layout get_mk_alignment_for_contiguous_layout
get_theoretical_mk_alignment_for_contiguous_layout get_m_alignment_for_contiguous_layout
get_k_alignment_for_contiguous_layout
ceil_div align ceil_to_ue8m0 pack_ue8m0_to_int per_token_cast_to_fp8 per_channel_cast_to_fp8
per_block_cast_to_fp8 per_custom_dims_cast_to_fp8 per_token_cast_to_fp4 transpose_packed_fp4
unpack_ue8m0_from_int cast_back_from_fp4 init_dist uneven_all_gather
""".split()

SUPPORTED = {
    "bf16_gemm_nt", "bf16_gemm_nn", "bf16_gemm_tn", "bf16_gemm_tt",
    "m_grouped_bf16_gemm_nt_contiguous", "m_grouped_bf16_gemm_nn_contiguous",
    "m_grouped_bf16_gemm_nt_masked", "k_grouped_bf16_gemm_tn_contiguous",
    "bf16_m_grouped_gemm_nt_masked",
    "fp8_fp4_gemm_nt", "fp8_gemm_nt", "m_grouped_fp8_fp4_gemm_nt_contiguous",
    "m_grouped_fp8_gemm_nt_contiguous", "m_grouped_fp8_fp4_gemm_nt_masked",
    "m_grouped_fp8_gemm_nt_masked", "fp8_m_grouped_gemm_nt_masked",
    "transform_sf_into_required_layout", "get_tma_aligned_size",
    "get_mn_major_tma_aligned_tensor", "set_mk_alignment_for_contiguous_layout",
    "get_mk_alignment_for_contiguous_layout", "get_theoretical_mk_alignment_for_contiguous_layout",
    "get_m_alignment_for_contiguous_layout", "get_k_alignment_for_contiguous_layout",
    "set_num_sms", "get_num_sms", "set_tc_util", "get_tc_util", "set_pdl", "get_pdl",
    "set_ignore_compile_dims", "set_block_size_multiple_of", "ceil_div", "align",
    "ceil_to_ue8m0", "per_token_cast_to_fp8", "per_channel_cast_to_fp8", "per_block_cast_to_fp8",
    "cublaslt_gemm_nt", "cublaslt_gemm_nn", "cublaslt_gemm_tn", "cublaslt_gemm_tt",
    "k_grouped_fp8_gemm_nt_contiguous", "get_mn_major_tma_aligned_packed_ue8m0_tensor",
    "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor", "pack_ue8m0_to_int",
    "unpack_ue8m0_from_int", "per_custom_dims_cast_to_fp8",
    "fp8_fp4_mqa_logits", "fp8_mqa_logits", "get_paged_mqa_logits_metadata",
    "fp8_fp4_paged_mqa_logits", "fp8_paged_mqa_logits", "tf32_hc_prenorm_gemm",
    "bf16_gemm_nt", "bf16_gemm_nn", "bf16_gemm_tn", "bf16_gemm_tt",
    "m_grouped_bf16_gemm_nt_contiguous", "m_grouped_bf16_gemm_nn_contiguous",
    "m_grouped_bf16_gemm_nt_masked", "k_grouped_bf16_gemm_tn_contiguous",
    "bf16_m_grouped_gemm_nt_masked",
    "unpack_ue8m0_from_int",
    # the einsum family (python/qgemm/einsum.py)
    "einsum", "fp8_einsum", "fp8_gemm_nt_skip_head_mid",
}

MODULES = [pytest.param(qgemm, id="qgemm"), pytest.param(qdg, id="qgemm.deep_gemm")]


# ---- names and signatures --------------------------------------------------------------------


@pytest.mark.parametrize("module", MODULES)
def test_every_deepgemm_name_resolves(module):
    missing = [name for name in DEEPGEMM_NAMES if not callable(getattr(module, name, None))]
    assert not missing, f"DeepGEMM names missing from {module.__name__}: {missing}"


def test_every_name_is_supported_or_a_stub():
    assert set(DEEPGEMM_NAMES) == SUPPORTED | set(_deepgemm.MISSING)
    assert not SUPPORTED & set(_deepgemm.MISSING)


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("name", sorted(DEEPGEMM_SIGNATURES))
def test_signature_matches_deepgemm(module, name):
    params = list(inspect.signature(getattr(module, name)).parameters.values())
    want = DEEPGEMM_SIGNATURES[name]
    got = [(p.name, p.default) for p in params[:len(want)]]
    expected = [(arg, DEVIATIONS.get((name, arg), default)) if module is qgemm or
                name not in ("m_grouped_fp8_gemm_nt_contiguous",) else (arg, default)
                for arg, default in want]
    assert got == expected, f"{module.__name__}.{name}"
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params[:len(want)])
    # anything qgemm adds (stream=, config=, m_indices=) is keyword-only: positional
    # DeepGEMM calls can never reach it
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[len(want):]), name


@pytest.mark.parametrize("name", sorted(DEEPGEMM_POSITIONAL))
def test_positional_only_deepgemm_functions_take_that_many_arguments(name):
    sig = inspect.signature(getattr(qgemm, name))
    sig.bind(*range(DEEPGEMM_POSITIONAL[name]))  # raises TypeError on a mismatch


def test_aliases():
    assert qgemm.get_mn_major_tma_aligned_tensor is qgemm.get_col_major_tma_aligned_tensor
    assert qdg.fp8_gemm_nt is qgemm.fp8_fp4_gemm_nt
    assert qdg.m_grouped_fp8_gemm_nt_contiguous is qgemm.m_grouped_fp8_fp4_gemm_nt_contiguous
    assert qdg.m_grouped_fp8_gemm_nt_masked is qgemm.m_grouped_fp8_fp4_gemm_nt_masked
    assert qgemm.fp8_m_grouped_gemm_nt_masked is qgemm.m_grouped_fp8_fp4_gemm_nt_masked
    # qgemm's own names keep qgemm's behaviour
    assert qgemm.fp8_gemm_nt is not qgemm.fp8_fp4_gemm_nt
    for name in ("get_m_alignment_for_contiguous_layout", "get_mk_alignment_for_contiguous_layout",
                 "get_k_alignment_for_contiguous_layout"):
        assert getattr(qgemm, name)() == 128
    assert qgemm.get_theoretical_mk_alignment_for_contiguous_layout() == 128
    assert qgemm.get_theoretical_mk_alignment_for_contiguous_layout(17) == 128
    assert qgemm.align(130, 128) == 256 and qgemm.ceil_div(130, 128) == 2
    assert qgemm.get_tma_aligned_size(6, 4) == 8


# ---- configuration ---------------------------------------------------------------------------


def test_mk_alignment_only_128():
    qgemm.set_mk_alignment_for_contiguous_layout(128)
    # DeepGEMM's own pattern: set what the theoretical alignment says
    qgemm.set_mk_alignment_for_contiguous_layout(
        qgemm.get_theoretical_mk_alignment_for_contiguous_layout(64))
    for value in (64, 256, 32):
        with pytest.raises(NotImplementedError,
                           match=rf"set_mk_alignment_for_contiguous_layout: new_value={value} "
                                 r"is not supported: .*multiple of 128"):
            qgemm.set_mk_alignment_for_contiguous_layout(value)
    assert qgemm.get_mk_alignment_for_contiguous_layout() == 128
    with pytest.raises(TypeError):
        qgemm.set_mk_alignment_for_contiguous_layout("128")


def test_tc_util_is_stored():
    assert qgemm.get_tc_util() == 100  # DeepGEMM's reading when unset
    try:
        qgemm.set_tc_util(75)
        assert qgemm.get_tc_util() == 75
        with pytest.raises(ValueError, match=r"\[0, 100\], got 101"):
            qgemm.set_tc_util(101)
        assert qgemm.get_tc_util() == 75
    finally:
        qgemm.set_tc_util(0)
    assert qgemm.get_tc_util() == 100


def test_other_knobs_are_accepted():
    qgemm.set_ignore_compile_dims(True)
    qgemm.set_ignore_compile_dims(False)
    qgemm.set_block_size_multiple_of(8)
    qgemm.set_block_size_multiple_of((8, 16))
    qgemm.set_block_size_multiple_of(1)
    with pytest.raises(TypeError):
        qgemm.set_block_size_multiple_of("8")


def test_pdl_and_num_sms_round_trip(reset_pdl, reset_num_sms):
    qgemm.set_pdl(True)
    assert qgemm.get_pdl() is True
    qgemm.set_pdl(False)
    assert qgemm.get_pdl() is False
    qgemm.set_num_sms(100)
    assert qgemm.get_num_sms() == 100


# ---- NotImplementedError for what qgemm lacks --------------------------------------------------


@pytest.mark.parametrize("name", sorted(_deepgemm.MISSING))
@pytest.mark.parametrize("module", MODULES)
def test_missing_entry_points_raise_naming_what_is_missing(module, name):
    with pytest.raises(NotImplementedError) as info:
        getattr(module, name)(1, 2, 3, key="value")
    message = str(info.value)
    assert name in message and _deepgemm.MISSING[name] in message
    assert "docs/DEEPGEMM.md" in message


_torch = None


def _t():
    global _torch
    if _torch is None:
        _torch = pytest.importorskip("torch")
    return _torch


def _cpu_dense():
    torch = _t()
    a = torch.zeros(256, 512, dtype=torch.float8_e4m3fn)
    sfa = qgemm.get_col_major_tma_aligned_tensor(torch.ones(256, 4))  # what qgemm.fp8_gemm_nt takes
    b = torch.zeros(256, 512, dtype=torch.float8_e4m3fn)
    sfb = torch.ones(2, 4)
    d = torch.empty(256, 256, dtype=torch.bfloat16)
    return (a, sfa), (b, sfb), d


DENSE = ["fp8_gemm_nt", "fp8_fp4_gemm_nt"]
UNSUPPORTED_GEMM_ARGS = [
    ("c", lambda: _t().zeros(256, 256), r"c=<Tensor \[256, 256\] torch.float32> is not supported: "
                                         r"qgemm adds C .* only in the weight-gradient GEMM"),
    ("recipe", (1, 128, 32), r"recipe=\(1, 128, 32\) is not supported"),
    ("recipe", (1, 1, 32), r"recipe=\(1, 1, 32\) is not supported"),
]


@pytest.mark.parametrize("name", DENSE)
@pytest.mark.parametrize("arg,value,pattern", UNSUPPORTED_GEMM_ARGS)
def test_dense_unsupported_values(name, arg, value, pattern):
    a, b, d = _cpu_dense()
    value = value() if callable(value) else value
    with pytest.raises(NotImplementedError, match=rf"qgemm: {name}: {pattern}"):
        getattr(qgemm, name)(a, b, d, **{arg: value})


@pytest.mark.parametrize("name", DENSE)
def test_recipe_pairs(name):
    a, b, d = _cpu_dense()
    fn = getattr(qgemm, name)
    with pytest.raises(NotImplementedError, match=r"recipe_a=\(1, 32\) is not supported"):
        fn(a, b, d, recipe_a=(1, 32), recipe_b=(128, 128))
    with pytest.raises(NotImplementedError, match=r"recipe_b=\(1, 32\) is not supported"):
        fn(a, b, d, recipe_a=(1, 128), recipe_b=(1, 32))
    with pytest.raises(ValueError, match="recipe_a and recipe_b come together"):
        fn(a, b, d, recipe_a=(1, 128))
    with pytest.raises(ValueError, match="either recipe or the pair"):
        fn(a, b, d, recipe=(1, 128, 128), recipe_a=(1, 128), recipe_b=(128, 128))


@pytest.mark.parametrize("name", DENSE)
@pytest.mark.parametrize("kw", [
    dict(recipe=(1, 128, 128)), dict(recipe=[1, 128, 128]),
    dict(recipe_a=(1, 128), recipe_b=(128, 128)), dict(compiled_dims="mn"),
    dict(disable_ue8m0_cast=True), dict(disable_ue8m0_cast=False), dict(c=None),
])
def test_supported_values_reach_the_gemm(name, kw):
    # accepted: the call gets as far as qgemm's own checks (CPU tensors are refused there)
    a, b, d = _cpu_dense()
    with pytest.raises(ValueError, match="CUDA device memory"):
        getattr(qgemm, name)(a, b, d, **kw)


@pytest.mark.parametrize("name", DENSE)
@pytest.mark.parametrize("kw", [dict(recipe=(1, 1, 128)), dict(recipe_a=(1, 128), recipe_b=(1, 128)),
                                dict(recipe=(1, 1, 128), c="d"), dict(recipe=(1, 1, 128), c="other")])
def test_wgrad_values_reach_the_gemm(name, kw):
    # the weight-gradient recipe: sfb per column [N, K/128], FP32 d, c None, d or another tensor
    torch = _t()
    a, (b, _), _ = _cpu_dense()
    sfb = qgemm.get_col_major_tma_aligned_tensor(torch.ones(256, 4))
    d = torch.zeros(256, 256)
    kw = dict(kw)
    if kw.get("c") == "d":
        kw["c"] = d
    elif kw.get("c") == "other":
        kw["c"] = torch.zeros(256, 256)
    with pytest.raises(ValueError, match="CUDA device memory"):
        getattr(qgemm, name)(a, (b, sfb), d, **kw)


def test_transposed_block_sfb_is_taken_by_the_deepgemm_names():
    # DeepGEMM on SM90 takes 128x128 B scales row-major or as a row-major tensor's transpose
    # (a transposed weight's sfw.T); its names here make it row-major, and so do qgemm's own
    # unless strict
    torch = _t()
    a, (b, _), d = _cpu_dense()
    sfb_t = torch.ones(4, 2).T  # [N/128, K/128] = [2, 4], strides (1, 2)
    for fn in (qdg.fp8_gemm_nt, qgemm.fp8_fp4_gemm_nt):
        with pytest.raises(ValueError, match="CUDA device memory"):
            fn(a, (b, sfb_t), d)
    with pytest.raises(ValueError, match="sfb must be contiguous"):  # strict: no hidden copy
        qgemm.fp8_gemm_nt(a, (b, sfb_t), d, strict=True)
    with pytest.raises(ValueError, match="CUDA device memory"):  # else converted, as DeepGEMM
        qgemm.fp8_gemm_nt(a, (b, sfb_t), d)
    (a_, _), _, _ = _cpu_dense()
    idx = torch.zeros(256, dtype=torch.int32)
    we = torch.zeros(3, 256, 512, dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="CUDA device memory"):
        qdg.m_grouped_fp8_gemm_nt_contiguous(a, (we, torch.ones(3, 4, 2).transpose(1, 2)), d, idx)


def test_wgrad_sfb_layout_error_names_n_and_sfb():
    torch = _t()
    a, (b, _), _ = _cpu_dense()
    d = torch.zeros(256, 256)
    with pytest.raises(ValueError, match=r"sfb must be N-major \(strides \(1, sfb_ld\).*"
                                         r"get_col_major_tma_aligned_tensor\(sfb\)"):
        qgemm.fp8_gemm_nt(a, (b, torch.ones(256, 4)), d, c=d, recipe=(1, 1, 128), strict=True)


def test_grouped_recipe_names_the_argument_given():
    torch = _t()
    a, (b, _), d = _cpu_dense()
    we = torch.zeros(3, 256, 512, dtype=torch.float8_e4m3fn)
    idx = torch.zeros(256, dtype=torch.int32)
    with pytest.raises(NotImplementedError, match=r"recipe_b=\(1, 128\) is not supported"):
        qgemm.m_grouped_fp8_gemm_nt_contiguous(a, (we, torch.ones(3, 2, 4)), d, idx,
                                               recipe_a=(1, 128), recipe_b=(1, 128))
    with pytest.raises(NotImplementedError, match=r"recipe=\(1, 1, 128\) is not supported"):
        qgemm.m_grouped_fp8_gemm_nt_contiguous(a, (we, torch.ones(3, 2, 4)), d, idx,
                                               recipe=(1, 1, 128))


def test_k_grouped_loop_refuses_before_writing_d():
    # CPU tensors take the per-group loop (the fast path is for CUDA tensors): its first GEMM
    # refuses them, and the empty group's D (zeroed when it runs) is still what it was
    torch = _t()
    m, n, ks = 128, 256, [0, 128]
    a = torch.zeros(m * 128, dtype=torch.float8_e4m3fn)
    b = torch.zeros(n * 128, dtype=torch.float8_e4m3fn)
    sfa, sfb = torch.ones(m, 1), torch.ones(n, 1)
    d = torch.ones(2, m, n)
    with pytest.raises(ValueError, match="CUDA device memory"):
        qgemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, ks,
                                               torch.tensor(ks, dtype=torch.int32))
    assert bool((d == 1).all())
    np = pytest.importorskip("numpy")
    with pytest.raises(ValueError, match="CUDA device memory"):  # a numpy ks_cpu, as DeepGEMM's
        qgemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, np.array(ks),
                                               torch.tensor(ks, dtype=torch.int32))
    with pytest.raises(ValueError, match="ks_cpu .* is required"):
        qgemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, np.array([], dtype=int),
                                               torch.tensor(ks, dtype=torch.int32))


def _unused_supported_values_reach_the_gemm(name, kw):
    # accepted: the call gets as far as qgemm's own checks (CPU tensors are refused there)
    a, b, d = _cpu_dense()
    with pytest.raises(ValueError, match="CUDA device memory"):
        getattr(qgemm, name)(a, b, d, **kw)


def test_fp32_output_and_packed_scales_raise():
    torch = _t()
    (a, sfa), b, d = _cpu_dense()
    with pytest.raises(NotImplementedError,
                       match=r"fp8_fp4_gemm_nt: d=<Tensor \[256, 256\] torch.float32> is not "
                             r"supported: .*FP32 D only in the weight-gradient GEMM"):
        qgemm.fp8_fp4_gemm_nt((a, sfa), b, d.float())
    with pytest.raises(NotImplementedError,
                       match=r"d=<Tensor \[256, 256\] torch.bfloat16> is not supported: the "
                             r"weight-gradient GEMM .* writes FP32 D only"):
        qgemm.fp8_fp4_gemm_nt((a, sfa), b, d, recipe=(1, 1, 128))
    with pytest.raises(NotImplementedError, match=r"sfa=<Tensor \[256, 1\] torch.int32> .*SM100"):
        qgemm.fp8_fp4_gemm_nt((a, torch.ones(256, 1, dtype=torch.int32)), b, d)


def test_contiguous_arguments():
    torch = _t()
    a, _, d = _cpu_dense()
    b = (torch.zeros(2, 256, 512, dtype=torch.float8_e4m3fn), torch.ones(2, 2, 4))
    idx = torch.zeros(256, dtype=torch.int32)
    for name in ("m_grouped_fp8_gemm_nt_contiguous", "m_grouped_fp8_fp4_gemm_nt_contiguous"):
        fn = getattr(qgemm, name)
        # the psum layout: group_ends [G] (G = 2 from b), a hint, checked before the device
        ends = torch.tensor([100, 256], dtype=torch.int32)
        for kw in (dict(use_psum_layout=True),
                   dict(use_psum_layout=True, expected_m_for_psum_layout=64)):
            with pytest.raises(ValueError, match="CUDA device memory"):
                fn(a, b, d, ends, **kw)
        with pytest.raises(ValueError, match=r"group_ends has shape \[256\]: its dimension 0 "
                                             r"must be 2 \(G, from b\)"):
            fn(a, b, d, idx, use_psum_layout=True)
        with pytest.raises(ValueError, match=r"expected_m_for_psum_layout=64 only applies with "
                                             r"use_psum_layout=True"):
            fn(a, b, d, idx, expected_m_for_psum_layout=64)
        with pytest.raises(ValueError, match=r"expected_m_for_psum_layout must be an int in 0\.\.2147483647"):
            fn(a, b, d, ends, use_psum_layout=True, expected_m_for_psum_layout=-1)
        with pytest.raises(NotImplementedError, match=r"recipe=\(1, 1, 128\)"):
            fn(a, b, d, idx, recipe=(1, 1, 128))
        for kw in ({}, dict(ensure_zero_padding=False), dict(disable_ue8m0_cast=True)):
            with pytest.raises(ValueError, match="CUDA device memory"):
                fn(a, b, d, idx, **kw)
        with pytest.raises(ValueError, match="CUDA device memory"):
            fn(a, b, d, grouped_layout=idx)
    # qgemm's earlier keyword still works; both or neither is an error
    with pytest.raises(ValueError, match="CUDA device memory"):
        qgemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, m_indices=idx)
    with pytest.raises(TypeError, match="not both"):
        qgemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, idx, m_indices=idx)
    with pytest.raises(TypeError, match="missing grouped_layout"):
        qgemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d)


def test_masked_arguments():
    torch = _t()
    a = (torch.zeros(2, 64, 512, dtype=torch.float8_e4m3fn),
         qgemm.get_col_major_tma_aligned_tensor(torch.ones(2, 64, 4)))
    b = (torch.zeros(2, 256, 512, dtype=torch.float8_e4m3fn), torch.ones(2, 2, 4))
    d = torch.empty(2, 64, 256, dtype=torch.bfloat16)
    masked_m = torch.zeros(2, dtype=torch.int32)
    for name in ("m_grouped_fp8_gemm_nt_masked", "m_grouped_fp8_fp4_gemm_nt_masked",
                 "fp8_m_grouped_gemm_nt_masked"):
        fn = getattr(qgemm, name)
        with pytest.raises(NotImplementedError, match=r"recipe=\(1, 1, 128\) is not supported"):
            fn(a, b, d, masked_m, 32, recipe=(1, 1, 128))
        with pytest.raises(ValueError, match="CUDA device memory"):
            fn(a, b, d, masked_m, 32, recipe=(1, 128, 128), disable_ue8m0_cast=True)


# ---- layout helpers and casts -----------------------------------------------------------------


def test_transform_sf_into_required_layout():
    torch = _t()
    t = qgemm.transform_sf_into_required_layout
    sfa = torch.randn(6, 3)
    out = t(sfa, 6, 300, (1, 128, 128), is_sfa=True)
    assert out.stride() == (1, 8) and torch.equal(out, sfa)
    out = t(sfa, 6, 300, (1, 128))
    assert out.stride() == (1, 8) and torch.equal(out, sfa)
    grouped = torch.randn(2, 6, 3)
    out = t(grouped, 6, 300, (1, 128, 128), num_groups=2, is_sfa=True)
    assert out.stride() == (24, 1, 8) and torch.equal(out, grouped)
    sfb = torch.randn(3, 2).T  # 128x128 scales come back contiguous
    out = t(sfb, 256, 300, (1, 128, 128), is_sfa=False)
    assert out.is_contiguous() and torch.equal(out, sfb)
    with pytest.raises(ValueError, match=r"shape \[6, 3\]"):
        t(torch.randn(6, 2), 6, 300, (1, 128, 128), is_sfa=True)
    with pytest.raises(NotImplementedError, match="psum_layout=.* is not supported"):
        t(sfa, 6, 300, (1, 128, 128), is_sfa=True, psum_layout=torch.zeros(2))
    with pytest.raises(NotImplementedError, match=r"recipe=\(1, 1, 32\) is not supported"):
        t(sfa, 6, 300, (1, 1, 32), is_sfa=True)
    with pytest.raises(NotImplementedError, match="int32"):
        t(sfa.int(), 6, 300, (1, 128, 128), is_sfa=True)
    with pytest.raises(ValueError, match="needs is_sfa"):
        t(sfa, 6, 300, (1, 128, 128))


def test_mn_major_tensor_is_the_helper():
    torch = _t()
    x = torch.randn(6, 3)
    y = qgemm.get_mn_major_tma_aligned_tensor(x)
    assert y.stride() == (1, 8) and torch.equal(x, y)


def test_casts_take_deepgemm_arguments():
    torch = _t()
    x = torch.randn(4, 300) * 3
    q, s = qgemm.per_token_cast_to_fp8(x, False)
    q0, s0 = qgemm.per_token_cast_to_fp8(x)
    assert torch.equal(s, s0) and torch.equal(q.view(torch.uint8), q0.view(torch.uint8))
    q, s = qgemm.per_token_cast_to_fp8(x, use_ue8m0=True)
    assert torch.equal(torch.exp2(torch.log2(s).round()), s)  # powers of two
    assert (s >= s0).all()
    back = (q.float().view(4, -1)[:, :256].view(4, 2, 128) * s[:, :2, None]).view(4, 256)
    assert torch.allclose(back, x[:, :256], rtol=0.07, atol=1e-3)
    w = torch.randn(256, 384)
    qb, sb = qgemm.per_block_cast_to_fp8(w, True)
    assert sb.shape == (2, 3) and torch.equal(torch.exp2(torch.log2(sb).round()), sb)
    qc, sc = qgemm.per_channel_cast_to_fp8(w, False)
    assert sc.shape == (2, 384)
    assert torch.allclose(qc.float().view(2, 128, 384) * sc[:, None, :], w.view(2, 128, 384),
                          rtol=0.07, atol=1e-3)
    with pytest.raises(NotImplementedError, match="gran_k=32 is not supported"):
        qgemm.per_token_cast_to_fp8(x, False, gran_k=32)
    with pytest.raises(NotImplementedError, match="use_packed_ue8m0=True is not supported"):
        qgemm.per_token_cast_to_fp8(x, True, use_packed_ue8m0=True)
    assert torch.equal(qgemm.ceil_to_ue8m0(torch.tensor([0.3, 0.5, 3.0])),
                       torch.tensor([0.5, 0.5, 4.0]))


# ---- torch.compile -----------------------------------------------------------------------------


def test_compile_traces_the_deepgemm_call_with_row_major_sfa():
    torch = _t()
    if not hasattr(torch.library, "custom_op"):
        pytest.skip("skipped: torch has no torch.library.custom_op (PyTorch >= 2.4)")
    meta = "meta"
    m, n, k, g, m_max = 256, 512, 384, 4, 64
    e4m3 = torch.float8_e4m3fn
    a = torch.empty(m, k, dtype=e4m3, device=meta)
    sfa = torch.empty(m, 3, device=meta)  # row-major, as DeepGEMM's cast returns it
    w = torch.empty(n, k, dtype=e4m3, device=meta)
    sw = torch.empty(4, 3, device=meta)
    we = torch.empty(g, n, k, dtype=e4m3, device=meta)
    swe = torch.empty(g, 4, 3, device=meta)
    idx = torch.empty(m, dtype=torch.int32, device=meta)
    a3 = torch.empty(g, m_max, k, dtype=e4m3, device=meta)
    sfa3 = torch.empty(g, m_max, 3, device=meta)
    masked_m = torch.empty(g, dtype=torch.int32, device=meta)

    def block(a, sfa, w, sw, we, swe, idx, a3, sfa3, masked_m):
        d = torch.empty(m, n, dtype=torch.bfloat16, device=a.device)
        qdg.fp8_gemm_nt((a, sfa), (w, sw), d, recipe=(1, 128, 128), disable_ue8m0_cast=True)
        d2 = torch.empty(m, n, dtype=torch.bfloat16, device=a.device)
        qdg.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (we, swe), d2, idx)
        d3 = torch.empty(g, m_max, n, dtype=torch.bfloat16, device=a.device)
        qdg.m_grouped_fp8_gemm_nt_masked((a3, sfa3), (we, swe), d3, masked_m, 32)
        return d, d2, d3

    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(block, fullgraph=True, backend=recording)(a, sfa, w, sw, we, swe, idx, a3,
                                                            sfa3, masked_m)
    targets = [str(node.target) for gm in graphs for node in gm.graph.nodes
               if node.op in ("call_function", "call_method")]
    assert sum("qgemm" in t for t in targets) == 3, targets
    assert "copy_" in targets, targets  # the sfa transform is in the graph


def test_compile_copies_a_misaligned_m_major_sfa_as_eager_does():
    # an M-major sfa view 4 bytes past a 16-byte boundary: eager copies it (TMA needs 16-byte
    # aligned addresses); tracing sees no address, so the storage offset decides, alike
    torch = _t()
    if not hasattr(torch.library, "custom_op"):
        pytest.skip("skipped: torch has no torch.library.custom_op (PyTorch >= 2.4)")
    base = torch.ones(3 * 256 + 4)
    sfa = base.as_strided((256, 3), (1, 256), 1)
    assert qgemm.get_col_major_tma_aligned_tensor(sfa).data_ptr() != sfa.data_ptr()
    aligned = base.as_strided((256, 3), (1, 256), 4)
    assert qgemm.get_col_major_tma_aligned_tensor(aligned).data_ptr() == aligned.data_ptr()

    def helper(x):
        return qgemm.get_mn_major_tma_aligned_tensor(x) * 2

    torch._dynamo.reset()
    out = torch.compile(helper, fullgraph=True, backend="eager")(sfa)
    assert out.stride() == (1, 256) and torch.equal(out, sfa * 2)
    (a, _), (b, sfb), d = _cpu_dense()  # K 512: four K blocks
    sfa4 = torch.ones(4 * 256 + 4).as_strided((256, 4), (1, 256), 1)

    def call(a, sfa, b, sfb, d):
        qdg.fp8_gemm_nt((a, sfa), (b, sfb), d)

    for run in (call, torch.compile(call, fullgraph=True, backend="eager")):
        torch._dynamo.reset()
        with pytest.raises(Exception, match="CUDA device memory"):  # past the alignment check
            run(a, sfa4, b, sfb, d)


# ---- GPU: a DeepGEMM user's calling pattern -------------------------------------------------------


def _gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("skipped: no GPU (no CUDA device visible to torch)")
    props = torch.cuda.get_device_properties(0)
    if (props.major, props.minor) != (9, 0):
        pytest.skip(f"qgemm needs sm_90 (Hopper); cuda:0 is {props.name}")
    return torch


def test_gpu_deepgemm_calling_pattern():
    torch = _gpu()
    import qgemm as deep_gemm  # the port: only the import changes

    random.seed(0)
    torch.manual_seed(0)
    dev = "cuda"
    pattern = -1234.0

    # dense, as DeepGEMM's test_gemm: casts return row-major sfa
    for m, n, k in ((128, 4096, 7168), (4096, 2112, 7168), (77, 576, 384)):
        a = deep_gemm.per_token_cast_to_fp8(torch.randn(m, k, device=dev, dtype=torch.bfloat16),
                                            use_ue8m0=False)
        b = deep_gemm.per_block_cast_to_fp8(torch.randn(n, k, device=dev, dtype=torch.bfloat16),
                                            use_ue8m0=False)
        ref = dequant_a(*a) @ dequant_b(*b).T
        d = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        deep_gemm.fp8_fp4_gemm_nt(a, b, d, c=None, disable_ue8m0_cast=True, recipe=None,
                                  recipe_a=None, recipe_b=None)
        assert calc_diff(d, ref) < 1e-5, (m, n, k)
        d.zero_()
        qdg.fp8_gemm_nt(a, b, d)  # DeepGEMM's fp8_gemm_nt with its row-major sfa
        assert calc_diff(d, ref) < 1e-5, (m, n, k)
        d.zero_()  # qgemm's fp8_gemm_nt with the M-major scales DeepGEMM's helper makes
        deep_gemm.fp8_gemm_nt((a[0], deep_gemm.get_mn_major_tma_aligned_tensor(a[1])), b, d,
                              recipe=(1, 128, 128))
        assert calc_diff(d, ref) < 1e-5, (m, n, k)
        d.zero_()  # qgemm's own fp8_gemm_nt with the row-major sfa: converted (issue 54)
        deep_gemm.fp8_gemm_nt(a, b, d)
        assert calc_diff(d, ref) < 1e-5, (m, n, k)
        with pytest.raises(ValueError, match="sfa must be M-major"):  # unless strict
            deep_gemm.fp8_gemm_nt(a, b, d, strict=True)

    # m-grouped contiguous, as DeepGEMM's generate_m_grouped_contiguous
    num_groups, expected_m, n, k = 4, 200, 4096, 7168
    deep_gemm.set_mk_alignment_for_contiguous_layout(
        deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout())
    align_m = deep_gemm.get_mk_alignment_for_contiguous_layout()
    actual_ms = [int(expected_m * random.uniform(0.7, 1.3)) for _ in range(num_groups)]
    aligned_ms = [deep_gemm.align(x, align_m) for x in actual_ms]
    m = sum(aligned_ms)
    grouped_layout = torch.empty(m, device=dev, dtype=torch.int32)
    start = 0
    for i, (actual, aligned) in enumerate(zip(actual_ms, aligned_ms)):
        grouped_layout[start:start + actual] = i
        grouped_layout[start + actual:start + aligned] = -1
        start += aligned
    a = deep_gemm.per_token_cast_to_fp8(torch.randn(m, k, device=dev, dtype=torch.bfloat16),
                                        use_ue8m0=False)
    bw = torch.randn(num_groups, n, k, device=dev, dtype=torch.bfloat16)
    b = deep_gemm.per_block_cast_to_fp8(bw, use_ue8m0=False)
    ref_a, ref_b = dequant_a(*a), dequant_b(*b)
    for fn in (deep_gemm.m_grouped_fp8_fp4_gemm_nt_contiguous, qdg.m_grouped_fp8_gemm_nt_contiguous):
        d = torch.full((m, n), pattern, device=dev, dtype=torch.bfloat16)
        fn(a, b, d, grouped_layout, disable_ue8m0_cast=True, use_psum_layout=False,
           ensure_zero_padding=True, recipe=None, recipe_a=None, recipe_b=None)
        # as DeepGEMM, every row of a segment is written, its -1 rows with the
        # segment's expert (their A rows are random here, not zero)
        segment = grouped_layout[torch.arange(m, device=dev) // align_m * align_m]
        for row_group in range(num_groups):
            rows = segment == row_group
            ref = ref_a[rows] @ ref_b[row_group].T
            assert calc_diff(d[rows], ref) < 1e-5, (fn.__name__, row_group)
        assert not (d == pattern).any(), "rows of a segment were left unwritten"

    # m-grouped masked, as DeepGEMM's generate_m_grouped_masked
    num_groups, max_m, expected_m, n, k = 4, 256, 96, 4096, 7168
    masked_m = torch.tensor([int(expected_m * random.uniform(0.7, 1.3)) for _ in range(num_groups)],
                            device=dev, dtype=torch.int32)
    a = deep_gemm.per_token_cast_to_fp8(
        torch.randn(num_groups * max_m, k, device=dev, dtype=torch.bfloat16), use_ue8m0=False)
    a = (a[0].view(num_groups, max_m, k), a[1].view(num_groups, max_m, -1))
    ref_a = dequant_a(*a)
    for fn in (deep_gemm.m_grouped_fp8_fp4_gemm_nt_masked, qdg.m_grouped_fp8_gemm_nt_masked):
        d = torch.full((num_groups, max_m, n), pattern, device=dev, dtype=torch.bfloat16)
        fn(a, b, d, masked_m, int(expected_m * 1.2), disable_ue8m0_cast=True,
           recipe=None, recipe_a=None, recipe_b=None)
        for j in range(num_groups):
            valid = masked_m[j].item()
            ref = ref_a[j, :valid] @ ref_b[j].T
            assert calc_diff(d[j, :valid], ref) < 1e-5, (fn.__name__, j)
            assert (d[j, valid:] == pattern).all(), "rows past masked_m were written"
    torch.cuda.synchronize()


def test_docs_table_names_every_entry_point():
    import pathlib
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "DEEPGEMM.md").read_text()
    missing = [name for name in DEEPGEMM_NAMES if f"`{name}" not in doc]
    assert not missing, f"docs/DEEPGEMM.md does not list {missing}"
