#!/usr/bin/env python3
"""bench/host_cpu.py -- the Python host cost of the family calls on a machine without a GPU.

Times the public functions of bench/family_probe.py --host's rows (the einsum, indexer, HC,
BF16 and cast calls) from the Python call to its return, with the extension's launching entry
points (_C.bf16_gemm, _C.cast, _C.mqa_logits, ... and the FP8 GEMM's _C.gemm_torch) replaced
by stubs that check their argument count and return None (a taken call). So what is timed is
the package's Python (argument checks, views, allocations, the dispatch) and torch's CPU-side
cost of the views and allocations it makes; what the extension does in C (describing the
tensors, ~1 us each on the H200 host, the library's checks, the driver's launch) is not in it:
family_probe.py --host measures the whole call on the GPU machine.

CPU tensors stand in for CUDA ones: ``torch.Tensor.is_cuda`` is patched to answer True and
``torch._C._cuda_getCurrentRawStream`` to answer 0, so the package takes the paths it takes for
CUDA tensors (a tree whose casts test ``x.device.type == "cuda"`` gets that test patched too:
--tree of an older checkout). Shapes are family_probe's, except that the indexer rows' logits
are smaller (a CPU torch.empty of tens of MB is an mmap, not the CUDA caching allocator's
free-list pop); sizes do not change the Python path.

    PYTHONPATH=python python3 bench/host_cpu.py [--tree DIR] [--calls N] [--repeat R] [--json F]
    python3 bench/host_cpu.py --fake-driver DIR [--tree DIR] [--variants checked,] ...

--fake-driver DIR: the casts' whole call instead, the extension's C included: DIR holds
bench/fake_libcuda.c built as libcuda.so.1 (cc -O2 -shared -fPIC -o DIR/libcuda.so.1
bench/fake_libcuda.c -lpthread); the script re-runs itself with LD_LIBRARY_PATH=DIR and
FAKE_CUDA_ANY_POINTER=1, patches torch.Tensor.get_device to answer 0 (so the extension
describes the CPU tensors as device 0's), and times the cast rows and the launch floor
(torch.empty of 16 floats + zero_(), the floor family_probe.py --host times on the GPU) only:
the package's Python, the extension's C (tensor descriptions, outputs, the library's checks,
its launch-cache lookup) and torch's CPU-side cost of the allocations and views, with the
driver's launch (~3 us on the H200 host) and the CUDA caching allocator taken out (a CPU
allocation stands in). Each cast row is timed under each QGEMM_CAST_VARIANT of --variants
(comma-separated; an empty item = unset), set between rows in the same process; before
timing, the rows' outputs are compared across variants (shape, strides, dtype, storage
offset: the fake launch writes no bytes).

--whole DIR: the whole call instead, the extension's C side (describing the tensors, its checks)
and the library's host work (its checks, the plan, the parameter block) included, only the
driver taken out: DIR holds bench/fake_libcuda.c built as libcuda.so.1 (`cc -O2 -shared -fPIC
-o DIR/libcuda.so.1 bench/fake_libcuda.c -lpthread`), whose launches, fills and tensor-map
encodes return at once and which, under FAKE_CUDA_ANY_POINTER=1 (set here), takes any address
for device 0's; torch.Tensor.get_device is patched to answer 0 as well (a Python lambda: the
torch tensors' description costs a little more than on CUDA tensors). The kernels compile
once (NVRTC, this machine) into DIR/cache unless QGEMM_CACHE_DIR says otherwise. Rows that
fail (a path that needs the real driver) print the error.

--tree: the directory holding the qgemm package to time (default: this checkout's python/),
e.g. an export of an older commit with its extension built or copied in. Prints one row per
call: the least, over --repeat runs, of the mean us per call over --calls calls (the
least disturbed run: a shared machine adds, never removes, time).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# the extension's launching entry points and the argument counts they take
STUBS = {"bf16_gemm": 10, "cast": 13, "sf_layout": 10, "mqa_logits": 11, "paged_mqa_schedule": 5,
         "paged_mqa_logits": 11, "hc_prenorm": 7, "gemm_torch": 9, "gemm": 12,
         "fp8_bmm": 9, "einsum_bmk_torch": 8, "fp8_einsum_torch": 7}


def make_stub(name, nargs):
    def stub(*args):
        if len(args) != nargs:
            raise TypeError(f"stub _C.{name}: {len(args)} arguments, the extension takes {nargs}")
        return None
    return stub


def setup(tree, fake=False):
    sys.path.insert(0, tree)
    import torch
    if fake:  # before qgemm registers torch: its C side keeps the stream function it is given
        torch.Tensor.is_cuda = property(lambda self: True)
        torch.Tensor.get_device = lambda self: 0
    torch._C._cuda_getCurrentRawStream = lambda device: 0
    import qgemm
    from qgemm import _C, _dispatch as _d
    qgemm.register_torch_ops()
    torch.Tensor.is_cuda = property(lambda self: True)
    if fake:  # the extension runs, on "device 0" (the fake driver's)
        return torch, qgemm
    for name, n in STUBS.items():
        setattr(_C, name, make_stub(name, n))
    if getattr(_d, "FAST_GEMM", None) is not None:
        _d.FAST_GEMM = _C.gemm_torch
    from qgemm import cast as _cast
    src = open(_cast.__file__).read()
    if 'x.device.type not in ("cuda", "meta")' in src:  # an older tree: its CUDA test
        def _kernel_ok(torch_, x, dtypes):
            return isinstance(x, torch_.Tensor) and x.dtype in dtypes
        _cast._kernel_ok = _kernel_ok
    return torch, qgemm


def cases(torch, qgemm):
    bf = torch.bfloat16
    out = {}
    # bf16_gemm_nt 128x4096x7168
    a = torch.randn(128, 256, dtype=bf)
    b = torch.randn(512, 256, dtype=bf)
    d = torch.empty(128, 512, dtype=bf)
    out["bf16_gemm_nt 128x4096x7168"] = lambda: qgemm.bf16_gemm_nt(a, b, d)
    # einsum bmk,bnk->mn 129x128x384x128 fp32 + C (d accumulated in place)
    ea = torch.randn(129, 128, 128, dtype=bf)
    eb = torch.randn(129, 384, 128, dtype=bf)
    ed = torch.zeros(128, 384, dtype=torch.float32)
    out["einsum bmk,bnk->mn 129x128x384x128 +C"] = \
        lambda: qgemm.einsum("bmk,bnk->mn", ea, eb, ed, c=ed)
    ed16 = torch.zeros(128, 384, dtype=bf)  # (15 splits: the kept workspace)
    out["einsum bmk,bnk->mn 129x128x384x128 bf16"] = \
        lambda: qgemm.einsum("bmk,bnk->mn", ea, eb, ed16)
    # einsum bhr,hdr->bhd 4x128x512x128 (y a [:, :, :r] view, as family_probe)
    x = torch.randn(4, 128, 512, dtype=bf)
    y = torch.randn(128, 128, 640, dtype=bf)[:, :, :512]
    z = torch.empty(4, 128, 128, dtype=bf)
    out["einsum bhr,hdr->bhd 4x128x512x128"] = lambda: qgemm.einsum("bhr,hdr->bhd", x, y, z)
    # fp8_einsum bhr,hdr->bhd b=4 h=8 r=4096 d=1024
    e4 = torch.float8_e4m3fn
    fx = torch.empty(4, 8, 4096, dtype=e4)
    fsx = torch.rand(4, 8, 32)
    fy = torch.empty(8, 1024, 4096, dtype=e4)
    fsy = torch.rand(8, 8, 32)
    fz = torch.empty(4, 8, 1024, dtype=bf)
    out["fp8_einsum bhr,hdr->bhd b=4 h=8"] = \
        lambda: qgemm.fp8_einsum("bhr,hdr->bhd", (fx, fsx), (fy, fsy), fz)
    # fp8_fp4_mqa_logits (H32 D32; logits 256 x 1024)
    sq, sk = 256, 1024
    q = torch.empty(sq, 32, 32, dtype=e4)
    kv = (torch.empty(sk, 32, dtype=e4), torch.rand(sk))
    w = torch.rand(sq, 32)
    ks = torch.zeros(sq, dtype=torch.int32)
    ke = torch.arange(sq, dtype=torch.int32) + (sk - sq)
    out["fp8_fp4_mqa_logits H32 D32"] = lambda: qgemm.fp8_fp4_mqa_logits(
        (q, None), kv, w, ks, ke, clean_logits=True, max_seqlen_k=0, logits_dtype=torch.float)
    # fp8_fp4_paged_mqa_logits B256 N1 H32 D128 bf16 logits (max_len 512)
    bsz, ml = 256, 512
    pq = torch.empty(bsz, 1, 32, 128, dtype=e4)
    cache = torch.empty(64, 64, 1, 132, dtype=torch.uint8)
    pw = torch.rand(bsz, 32)
    ctx = torch.full((bsz, 1), 300, dtype=torch.int32)
    table = torch.zeros(bsz, 8, dtype=torch.int32)
    meta = torch.zeros(133, 2, dtype=torch.int32)
    out["fp8_fp4_paged_mqa_logits B256 N1 H32"] = lambda: qgemm.fp8_fp4_paged_mqa_logits(
        (pq, None), cache, pw, ctx, table, meta, ml, clean_logits=False, logits_dtype=bf)
    # tf32_hc_prenorm_gemm 13x24x7680 / 16 splits and 4096x24x7168
    ha = torch.randn(13, 7680, dtype=bf)
    hb = torch.randn(24, 7680)
    hd = torch.empty(16, 13, 24)
    hs = torch.empty(16, 13)
    out["tf32_hc_prenorm_gemm 13x24x7680/16"] = \
        lambda: qgemm.tf32_hc_prenorm_gemm(ha, hb, hd, hs, num_splits=16)
    ha2 = torch.randn(4096, 7168 // 16, dtype=bf)
    hb2 = torch.randn(24, 7168 // 16)
    hd2 = torch.empty(4096, 24)
    hs2 = torch.empty(4096)
    out["tf32_hc_prenorm_gemm 4096x24x7168"] = \
        lambda: qgemm.tf32_hc_prenorm_gemm(ha2, hb2, hd2, hs2, num_splits=None)
    # casts
    cx = torch.randn(64, 7168, dtype=bf)
    out["per_token_cast_to_fp8 64x7168"] = lambda: qgemm.per_token_cast_to_fp8(cx)
    sx = torch.randn(64, 4096, dtype=bf)
    out["silu_and_mul_fp8_quant 64x4096"] = lambda: qgemm.silu_and_mul_fp8_quant(sx)
    return out


def cast_cases(torch, qgemm):
    """The casts' rows of --fake-driver (family_probe.py --host's cast cases)."""
    bf = torch.bfloat16
    out = {}
    cx = torch.randn(64, 7168, dtype=bf)
    out["per_token_cast_to_fp8 64x7168"] = lambda: qgemm.per_token_cast_to_fp8(cx)
    bx = torch.randn(512, 7168, dtype=bf)
    out["per_block_cast_to_fp8 512x7168"] = lambda: qgemm.per_block_cast_to_fp8(bx)
    px = torch.randn(256, 2048, dtype=bf)
    out["per_channel_cast_to_fp8 256x2048"] = lambda: qgemm.per_channel_cast_to_fp8(px)
    sx = torch.randn(64, 4096, dtype=bf)
    out["silu_and_mul_fp8_quant 64x4096"] = lambda: qgemm.silu_and_mul_fp8_quant(sx)
    mx = torch.randn(8, 64, 4096, dtype=bf)
    mm = torch.full((8,), 40, dtype=torch.int32)
    out["silu_and_mul_fp8_quant masked 8x64x4096 mn"] = \
        lambda: qgemm.silu_and_mul_fp8_quant(mx, masked_m=mm, sf_mn_major=True)
    return out


def floor_case(torch):
    """The launch floor: one tiny torch kernel (a fill), timed as the casts are."""
    return lambda: torch.empty(16, device="cpu").zero_()


def fake_main(args, torch, qgemm):
    variants = args.variants.split(",")
    rows = {}
    us = time_us(floor_case(torch), args.calls, args.repeat)
    rows["floor: torch.empty(16) + zero_()"] = us
    print(f"{'floor: torch.empty(16) + zero_()':46s} {'':10s} {us:8.2f} us", flush=True)
    for name, fn in cast_cases(torch, qgemm).items():
        metas = {}
        for v in variants:
            if v:
                os.environ["QGEMM_CAST_VARIANT"] = v
            else:
                os.environ.pop("QGEMM_CAST_VARIANT", None)
            q, sf = fn()
            metas[v] = [(tuple(t.shape), t.stride(), str(t.dtype)) for t in (q, sf)]
            us = time_us(fn, args.calls, args.repeat)
            rows[f"{name} [{v or 'default'}]"] = us
            print(f"{name:46s} {v or 'default':10s} {us:8.2f} us", flush=True)
        os.environ.pop("QGEMM_CAST_VARIANT", None)
        first = next(iter(metas.values()))
        if any(m != first for m in metas.values()):
            print(f"MISMATCH {name}: {metas}", flush=True)
            rows[f"{name} mismatch"] = str(metas)
    return rows


def time_us(fn, calls, repeat):
    fn()  # warm (first-call caches, lazy imports)
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter_ns() - t0) / calls / 1e3)
    return min(runs)  # the least disturbed run: the machine is shared


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tree", default=os.path.join(HERE, "..", "python"))
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json")
    p.add_argument("--whole", metavar="DIR",
                   help="time the whole call, the extension's C side and the library included: "
                        "DIR holds bench/fake_libcuda.c built as libcuda.so.1 (re-executes with "
                        "LD_LIBRARY_PATH=DIR and FAKE_CUDA_ANY_POINTER=1)")
    p.add_argument("--fake-driver", metavar="DIR",
                   help="--whole for the casts' rows and the launch floor, under each of --variants")
    p.add_argument("--variants", default="checked,")
    p.add_argument("--only", help="the rows whose name contains this text")
    args = p.parse_args()
    fake_dir = args.whole or args.fake_driver
    if fake_dir:
        lib = os.path.abspath(fake_dir)
        if os.environ.get("LD_LIBRARY_PATH", "").split(":")[0] != lib:
            path = lib + ":" + os.environ.get("LD_LIBRARY_PATH", "")
            env = dict(os.environ, LD_LIBRARY_PATH=path, FAKE_CUDA_ANY_POINTER="1")
            env.setdefault("QGEMM_CACHE_DIR", os.path.join(lib, "cache"))
            os.execve(sys.executable, [sys.executable] + sys.argv, env)
    torch, qgemm = setup(os.path.abspath(args.tree), bool(fake_dir))
    torch.set_num_threads(1)
    print(f"# python {platform.python_version()}, torch {torch.__version__}, "
          f"{platform.machine()}, qgemm from {os.path.dirname(qgemm.__file__)}"
          f"{', fake driver ' + args.fake_driver if args.fake_driver else ''}")
    if args.fake_driver:
        rows = fake_main(args, torch, qgemm)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        return
    rows = {}
    for name, fn in cases(torch, qgemm).items():
        if args.only and args.only not in name:
            continue
        try:
            us = time_us(fn, args.calls, args.repeat)
        except Exception as e:  # noqa: BLE001 (--whole: a path the fake driver cannot take)
            print(f"{name:42s} {type(e).__name__}: {str(e)[:120]}", flush=True)
            continue
        rows[name] = us
        print(f"{name:42s} {us:8.2f} us", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
