"""The indexer / HC family on a GPU through torch, as DeepGEMM's tests check it
(test_attention.test_mqa_logits / test_paged_mqa_logits, test_hyperconnection
.test_hc_prenorm_gemm): the reference in float32 on the dequantized inputs,
DeepGEMM's diff metric and thresholds, -inf masks, 20 repeats bitwise equal,
and the decode step (metadata + logits) captured in a CUDA graph and replayed
with new context lengths equal to eager calls. Smaller sizes than DeepGEMM's."""
from __future__ import annotations

import pytest

import qgemm.deep_gemm as deep_gemm

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("skipped: no GPU (no CUDA device visible to torch)", allow_module_level=True)
if torch.cuda.get_device_capability(0) != (9, 0):
    pytest.skip("qgemm's indexer kernels need sm_90 (Hopper)", allow_module_level=True)

DEV = "cuda"


def calc_diff(x, y):
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    return 0.0 if denominator == 0 else float(1 - 2 * (x * y).sum() / denominator)


def ref_mqa(q, kv, weights, ks, ke):
    """float32 logits of dequantized q [S, H, D], kv [SK, D]; -inf outside [ks, ke)."""
    seq_len_kv = kv.shape[0]
    score = torch.einsum("mhd,nd->hmn", q.float(), kv.float())
    logits = (score.relu() * weights.t().unsqueeze(-1)).sum(0)
    j = torch.arange(seq_len_kv, device=q.device)
    mask = (j[None, :] >= ks[:, None]) & (j[None, :] < ke[:, None])
    return logits.masked_fill(~mask, float("-inf"))


# (1200, 200, 64, 32): 600 q blocks, several a CTA (the q ring wraps)
@pytest.mark.parametrize("s,skv,h,d", [(128, 1024, 64, 128), (37, 300, 32, 64), (256, 2048, 32, 32),
                                       (1200, 200, 64, 32)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("variant", [None, "pipe"])
def test_mqa_logits(monkeypatch, s, skv, h, d, dtype, compressed, variant):
    """variant: QGEMM_MQA_VARIANT (None: the default, deep4, DeepGEMM's four math warpgroups;
    pipe: two warpgroups, the same sums in the same order, so it must also equal the default
    bitwise)."""
    torch.manual_seed(s + skv + h + d)
    q = torch.randn(s, h, d, device=DEV, dtype=torch.bfloat16)
    kv = torch.randn(skv, d, device=DEV, dtype=torch.bfloat16)
    weights = torch.randn(s, h, device=DEV)
    ks = torch.randint(0, skv // 2, (s,), device=DEV, dtype=torch.int32)
    ke = torch.minimum(ks + torch.randint(0, skv, (s,), device=DEV, dtype=torch.int32),
                       torch.tensor(skv, device=DEV, dtype=torch.int32))
    q8 = q.to(torch.float8_e4m3fn)
    kv8, sf = deep_gemm.utils.per_custom_dims_cast_to_fp8(kv, (0,), False)
    ref = ref_mqa(q8.float(), kv8.float() * sf[:, None], weights, ks, ke)
    kw = dict(q=(q8, None), kv=(kv8, sf), weights=weights, cu_seq_len_k_start=ks,
              cu_seq_len_k_end=ke, clean_logits=not compressed, max_seqlen_k=0,
              logits_dtype=dtype)
    if compressed:
        kw["max_seqlen_k"] = max(int((ke - ks).max().item()), 1)
    if variant is not None:
        monkeypatch.delenv("QGEMM_MQA_VARIANT", raising=False)
        default = deep_gemm.fp8_fp4_mqa_logits(**kw)
        monkeypatch.setenv("QGEMM_MQA_VARIANT", variant)
    logits = deep_gemm.fp8_fp4_mqa_logits(**kw)
    assert logits.dtype == dtype
    if compressed:
        assert logits.shape == (s, kw["max_seqlen_k"])
        self_mask = torch.arange(logits.size(1), device=DEV)[None, :] < (ke - ks)[:, None]
        masked = logits.masked_fill(~self_mask, 0)
    else:
        assert logits.shape == (s, skv)
        masked = logits
    if variant is not None:
        default = default.masked_fill(~self_mask, 0) if compressed else default
        assert torch.equal(masked, default)  # bitwise the default's
    for _ in range(20):
        again = deep_gemm.fp8_fp4_mqa_logits(**kw)
        if compressed:
            again = again.masked_fill(~self_mask, 0)
        assert torch.equal(again, masked)  # bitwise (no NaN: -inf compares equal)
    if compressed:
        full = torch.full((s, skv), float("-inf"), device=DEV)
        for i in range(s):
            full[i, ks[i]:ke[i]] = logits[i, :ke[i] - ks[i]].float()
        logits = full
    logits = logits.float()
    neginf = ref == float("-inf")
    assert torch.equal(logits == float("-inf"), neginf)
    diff = calc_diff(logits.masked_fill(neginf, 0), ref.masked_fill(neginf, 0))
    assert diff < (3e-5 if dtype == torch.bfloat16 else 5e-6), diff


def paged_inputs(batch, next_n, h, d, avg):
    lens1 = torch.randint(int(0.7 * avg), int(1.3 * avg) + 1, (batch,), device=DEV, dtype=torch.int32)
    max_blocks = int((int(1.3 * avg) + 2 + 63) // 64)
    max_len = max_blocks * 64
    num_blocks = batch * max_blocks
    perm = torch.randperm(num_blocks, device=DEV, dtype=torch.int32)
    block_table = perm.view(batch, max_blocks).contiguous()
    kv = torch.randn(num_blocks, 64, 1, d, device=DEV, dtype=torch.bfloat16)
    amax = kv.abs().float().amax(dim=3, keepdim=True).clamp(1e-4)
    sf = amax / 448.0
    kv8 = (kv * (1.0 / sf)).to(torch.float8_e4m3fn)
    cache = torch.empty(num_blocks, 64 * (d + 4), device=DEV, dtype=torch.uint8)
    cache[:, :64 * d] = kv8.view(num_blocks, 64 * d).view(torch.uint8)
    cache[:, 64 * d:] = sf.view(num_blocks, 64).view(torch.uint8)
    cache = cache.view(num_blocks, 64, 1, d + 4)
    kv_deq = (kv8.float() * sf).view(num_blocks, 64, d)
    q8 = torch.randn(batch, next_n, h, d, device=DEV, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    weights = torch.randn(batch * next_n, h, device=DEV)
    return q8, cache, kv_deq, weights, block_table, max_len, lens1


def draw_lens(lens1, next_n):
    lens = ((lens1.unsqueeze(1) + 1) * torch.rand(lens1.shape[0], next_n, device=DEV)).int()
    lens[:, -1] = lens1
    return lens.contiguous()


def ref_paged(q8, kv_deq, weights, lens, block_table, max_len):
    batch, next_n, h, d = q8.shape
    keys = kv_deq[block_table.long()].view(batch, -1, d)[:, :max_len]  # [B, L, D]
    score = torch.einsum("bthd,bld->bthl", q8.float(), keys)
    logits = (score.relu() * weights.view(batch, next_n, h, 1)).sum(2).view(batch * next_n, -1)
    j = torch.arange(max_len, device=DEV)
    mask = j[None, :] < lens.view(-1, 1)
    return logits.masked_fill(~mask, float("-inf")), mask


@pytest.mark.parametrize("batch,next_n,h,d,avg", [(64, 1, 64, 128, 700), (33, 2, 32, 128, 300),
                                                  (8, 2, 64, 64, 2000), (128, 1, 32, 32, 90)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("clean", [False, True])
@pytest.mark.parametrize("variant", [None, "shared2", "dual2", "split4", "split4r112w", "split4r112x",
                                     "split4r112p", "split4r112u", "split4r112u:s20", "split4r112u:s8"])
def test_paged_mqa_logits_and_graph_replay(monkeypatch, batch, next_n, h, d, avg, dtype, clean,
                                           variant):
    """variant: QGEMM_PMQA_VARIANT (None: the default, split4r112u; split4r112w: split4 with the weights in
    registers; split4r112x: split4r112w with the run loop, issue 50;
    split4r112p: split4r112x with the producers' unit from one shared base;
    split4r112u: split4r112p with the walk broadcast from lane 0 (uniform stage / descriptors), a ring of
    12 stages (:s20 and :s8: of 20 and 8, the ring's depth); split4: DeepGEMM's organisation, a producer warp and ring per math warpgroup;
    shared2 / dual2: the 2026-11-28 defaults); every organisation computes the same sums in the
    same order, so each also equals the default bitwise."""
    torch.manual_seed(batch * 7 + next_n + h + d)
    q8, cache, kv_deq, weights, bt, max_len, lens1 = paged_inputs(batch, next_n, h, d, avg)
    lens = draw_lens(lens1, next_n)
    num_sms = deep_gemm.get_num_sms()

    def step(lens_buf):
        sched = deep_gemm.get_paged_mqa_logits_metadata(lens_buf, 64, num_sms)
        return deep_gemm.fp8_fp4_paged_mqa_logits((q8, None), cache, weights, lens_buf, bt, sched,
                                                  max_len, clean, dtype)

    if variant is not None:
        monkeypatch.delenv("QGEMM_PMQA_VARIANT", raising=False)
        default = step(lens)
        monkeypatch.setenv("QGEMM_PMQA_VARIANT", variant)
    logits = step(lens)
    ref, mask = ref_paged(q8, kv_deq, weights, lens, bt, max_len)
    assert logits.shape == (batch * next_n, max_len) and logits.dtype == dtype
    masked = logits.float().masked_fill(~mask, 0)
    if variant is not None:
        assert torch.equal(masked, default.float().masked_fill(~mask, 0))
        if clean:
            assert torch.equal(logits, default)
    for _ in range(20):
        assert torch.equal(step(lens).float().masked_fill(~mask, 0), masked)
    if clean:
        assert torch.equal(logits.float() == float("-inf"), ~mask)
    diff = calc_diff(masked, ref.masked_fill(~mask, 0))
    assert diff < (3e-5 if dtype == torch.bfloat16 else 5e-6), diff

    # the decode step in a CUDA graph, replayed with new lengths in the same buffer
    lens_buf = lens.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step(lens_buf)  # warm: compiled and loaded outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step(lens_buf)
    new_lens = draw_lens(lens1, next_n)
    lens_buf.copy_(new_lens)
    graph.replay()
    torch.cuda.synchronize()
    eager = step(new_lens)
    _, new_mask = ref_paged(q8, kv_deq, weights, new_lens, bt, max_len)
    assert torch.equal(out.float().masked_fill(~new_mask, 0), eager.float().masked_fill(~new_mask, 0))


@pytest.mark.parametrize("dtype", [None, torch.float32, torch.bfloat16])
def test_paged_fast_path_is_the_checked_path(dtype):
    """fp8_fp4_paged_mqa_logits without stream= takes its fast path (the padded logits and one
    call of the extension's torch mode, issue 50's decode-step CPU time); with stream= the
    checked path (Python's checks, DLPack). Both write the same logits bit for bit, and what
    the extension refuses on the fast path raises as the checked path would: a ValueError
    naming the argument."""
    torch.manual_seed(5)
    q8, cache, kv_deq, weights, bt, max_len, lens1 = paged_inputs(16, 2, 64, 128, 500)
    lens = draw_lens(lens1, 2)
    sched = deep_gemm.get_paged_mqa_logits_metadata(lens, 64, deep_gemm.get_num_sms())
    # max_context_len a multiple of the 256-column padding (the fast path returns its buffer)
    # and one that is not (it returns the buffer's [:, :max_context_len] view)
    # (a block table wide enough for both: ceil(max_context_len / 64) columns at least)
    exact = (max_len + 255) // 256 * 256
    wide = torch.zeros((bt.shape[0], (exact + 64) // 64), dtype=bt.dtype, device=bt.device)
    wide[:, :bt.shape[1]] = bt
    for cols in (exact, exact + 64):
        fast = deep_gemm.fp8_fp4_paged_mqa_logits((q8, None), cache, weights, lens, wide, sched,
                                                  cols, True, dtype)
        checked = deep_gemm.fp8_fp4_paged_mqa_logits((q8, None), cache, weights, lens, wide, sched,
                                                     cols, True, dtype,
                                                     stream=torch.cuda.current_stream())
        torch.cuda.synchronize()
        assert fast.dtype == (torch.float32 if dtype is None else dtype)
        assert fast.shape == (32, cols) and fast.stride() == checked.stride()
        assert torch.equal(fast, checked)
    for bad, name in ((weights.half(), "weights"), (lens.long(), "context_lens"),
                      (bt.to(torch.int16), "block_table")):
        args = [(q8, None), cache, weights, lens, bt, sched, max_len, True, dtype]
        args[{"weights": 2, "context_lens": 3, "block_table": 4}[name]] = bad
        with pytest.raises((ValueError, TypeError), match=name):
            deep_gemm.fp8_fp4_paged_mqa_logits(*args)


@pytest.mark.parametrize("m", [13, 137, 1024])
@pytest.mark.parametrize("n,k", [(24, 7168), (24, 1280), (32, 640)])
@pytest.mark.parametrize("num_splits", [None, 16])
@pytest.mark.parametrize("variant", [None, "acc4+fit"])
def test_hc_prenorm_gemm(monkeypatch, m, n, k, num_splits, variant):
    """variant: QGEMM_HC_VARIANT (None: the default, acc4+fit+cw4: B rounded by four
    converter warps, three beside two math warpgroups; acc4+fit: one converter warp, the
    default before 2026-11-29, the same sums: equal to the default bitwise)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(m + n + k)
    a = torch.randn(m, k, dtype=torch.bfloat16, device=DEV)
    b = torch.randn(n, k, dtype=torch.float, device=DEV)
    d = torch.empty((m, n) if num_splits is None else (num_splits, m, n), device=DEV)
    s = torch.empty((m,) if num_splits is None else (num_splits, m), device=DEV)
    if variant is not None:
        monkeypatch.delenv("QGEMM_HC_VARIANT", raising=False)
        deep_gemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=num_splits)
        d_default, s_default = d.clone(), s.clone()
        d.fill_(float("nan"))
        s.fill_(float("nan"))
        monkeypatch.setenv("QGEMM_HC_VARIANT", variant)
    deep_gemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=num_splits)
    if variant is not None:
        assert torch.equal(d, d_default) and torch.equal(s, s_default)
    final_d = d if num_splits is None else d.sum(0)
    final_s = s if num_splits is None else s.sum(0)
    ref_d = a.float() @ b.T
    ref_s = a.float().square().sum(-1)
    diff = max(calc_diff(final_d, ref_d), calc_diff(final_s, ref_s))
    assert diff < 1e-8, diff
    d0, s0 = d.clone(), s.clone()
    for _ in range(5):
        deep_gemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=num_splits)
        assert torch.equal(d, d0) and torch.equal(s, s0)


def test_torch_compile_on_the_gpu():
    torch.manual_seed(1)
    a = torch.randn(64, 1280, dtype=torch.bfloat16, device=DEV)
    b = torch.randn(24, 1280, device=DEV)

    def f(a, b):
        d = torch.empty(64, 24, device=DEV)
        s = torch.empty(64, device=DEV)
        deep_gemm.tf32_hc_prenorm_gemm(a, b, d, s)
        return d / s.sqrt()[:, None]

    eager = f(a, b)
    compiled = torch.compile(f, fullgraph=True)(a, b)
    torch.testing.assert_close(compiled, eager, rtol=1e-6, atol=0)
