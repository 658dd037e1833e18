#!/usr/bin/env python3
"""The fast path against the checked path on CPU tensors posing as CUDA ones under
bench/fake_libcuda.c (run as bench/host_cpu.py --fake-driver sets it up): outputs' shape,
strides, dtype (the fake launch writes no bytes) or the exception (type and message), for
the GPU tests' inputs (tests/python/test_cast_fast.py), and whether _C.cast_new took each.

  LD_LIBRARY_PATH=/tmp/fk FAKE_CUDA_ANY_POINTER=1 PYTHONPATH=python python3 fake_check.py
"""
import os
import sys

import torch

torch._C._cuda_getCurrentRawStream = lambda device: 0
import qgemm  # noqa: E402
from qgemm import _C, cast  # noqa: E402

qgemm.register_torch_ops()
torch.Tensor.is_cuda = property(lambda self: True)
torch.Tensor.get_device = lambda self: 0


def outcome(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001
        return ("error", type(e).__name__, str(e))
    return ("ok", [(tuple(t.shape), t.stride(), str(t.dtype)) for t in out])


def run(fn, variant):
    if variant:
        os.environ["QGEMM_CAST_VARIANT"] = variant
    else:
        os.environ.pop("QGEMM_CAST_VARIANT", None)
    try:
        return outcome(fn)
    finally:
        os.environ.pop("QGEMM_CAST_VARIANT", None)


bf, f32, i32 = torch.bfloat16, torch.float32, torch.int32
cases = []
for dt in (bf, f32):
    for ue in (False, True):
        for sh in ((64, 7168), (1, 128), (130, 100), (3, 5, 200), (7, 1, 300)):
            x = torch.randn(sh, dtype=dt)
            cases.append((f"per_token {sh} {dt} ue={ue}", lambda x=x, ue=ue: cast.per_token_cast_to_fp8(x, use_ue8m0=ue),
                          lambda x=x, ue=ue: _C.cast_new(_C.CAST_PER_TOKEN, x, ue, False, None, None)))
            xs = torch.randn(sh[0], sh[-1] + 3, dtype=dt)[:, 1:-2]
            cases.append((f"per_token slice {tuple(xs.shape)} {dt}", lambda x=xs: cast.per_token_cast_to_fp8(x),
                          lambda x=xs: _C.cast_new(_C.CAST_PER_TOKEN, x, False, False, None, None)))
for sh in ((512, 7168), (300, 500), (2, 130, 256), (1, 1, 64)):
    x = torch.randn(sh, dtype=bf)
    cases.append((f"per_block {sh}", lambda x=x: cast.per_block_cast_to_fp8(x),
                  lambda x=x: _C.cast_new(_C.CAST_PER_BLOCK, x, False, False, None, None)))
for sh in ((256, 2048), (128, 300)):
    x = torch.randn(sh, dtype=f32)
    cases.append((f"per_channel {sh}", lambda x=x: cast.per_channel_cast_to_fp8(x),
                  lambda x=x: _C.cast_new(_C.CAST_PER_CHANNEL, x, False, False, None, None)))
g, m, n = 3, 70, 300
for layout in ("plain", "plain3d", "masked", "indices"):
    for mn in (False, True):
        shape = {"plain": (m, 2 * n), "plain3d": (g, m, 2 * n), "masked": (g, m, 2 * n),
                 "indices": (g * m, 2 * n)}[layout]
        x = torch.randn(shape, dtype=bf)
        mm = torch.tensor([m, 0, 17], dtype=i32) if layout == "masked" else None
        idx = torch.arange(g * m, dtype=i32) % 5 - 1 if layout == "indices" else None
        cases.append((f"silu {layout} mn={mn}",
                      lambda x=x, mm=mm, idx=idx, mn=mn: cast.silu_and_mul_fp8_quant(x, masked_m=mm, m_indices=idx, sf_mn_major=mn),
                      lambda x=x, mm=mm, idx=idx, mn=mn: _C.cast_new(_C.CAST_SILU_MUL, x, False, mn, mm, idx)))
x = torch.randn(256, 512, dtype=bf)
bad = [
    ("per_channel M=100", lambda: cast.per_channel_cast_to_fp8(x[:100])),
    ("gran_k=64", lambda: cast.per_token_cast_to_fp8(x, gran_k=64)),
    ("packed", lambda: cast.per_token_cast_to_fp8(x, use_packed_ue8m0=True)),
    ("ue8m0='yes'", lambda: cast.per_token_cast_to_fp8(x, use_ue8m0="yes")),
    ("x.t()", lambda: cast.per_token_cast_to_fp8(x.t())),
    ("expand", lambda: cast.per_token_cast_to_fp8(x[:1].expand(4, 512))),
    ("per_block 1-D", lambda: cast.per_block_cast_to_fp8(x[0])),
    ("silu odd", lambda: cast.silu_and_mul_fp8_quant(x[:, :511])),
    ("masked int64", lambda: cast.silu_and_mul_fp8_quant(x.view(2, 128, 512), masked_m=torch.zeros(2, dtype=torch.int64))),
    ("m_indices strided", lambda: cast.silu_and_mul_fp8_quant(x, m_indices=torch.zeros(512, dtype=i32)[::2])),
    ("masked with 2-D x", lambda: cast.silu_and_mul_fp8_quant(x, masked_m=torch.zeros(256, dtype=i32))),
    ("mn-major 4-D", lambda: cast.silu_and_mul_fp8_quant(x.view(2, 2, 64, 512), sf_mn_major=True)),
]
fails = 0
for name, fn, taken in cases:
    want = run(fn, "checked")
    took = taken() is not NotImplemented
    for v in ("", "twoalloc"):
        got = run(fn, v)
        if got != want or not took:
            fails += 1
            print(f"FAIL {name} [{v or 'default'}] taken={took}: {got} != {want}")
    print(f"ok   {name}: taken={took} {want[1] if want[0] == 'ok' else want}")
for name, fn in bad:
    want, got = run(fn, "checked"), run(fn, "")
    print(f"{'ok  ' if got == want else 'FAIL'} bad input {name}: {got}")
    fails += got != want
for v in ("bogus", "base+all"):
    fast = run(lambda: cast.per_token_cast_to_fp8(x), v)
    checked = run(lambda: cast.per_token_cast_to_fp8(x), v + "+checked")
    same = fast[0] == checked[0] == "error" and fast[1] == checked[1] and \
        fast[2].replace(v, "V") == checked[2].replace(v + "+checked", "V")
    print(f"{'ok  ' if same else 'FAIL'} knob {v}: {fast}")
    fails += not same
print(f"{fails} failures, {len(cases)} cases, {len(bad) + 2} error cases")
sys.exit(1 if fails else 0)
