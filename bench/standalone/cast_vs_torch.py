#!/usr/bin/env python3
"""Compare the cast kernels' outputs (written by bench/standalone/cast_harness.cu --dump DIR)
BITWISE with the torch helpers they replace (python/qgemm/_torch_helpers.py), run by
torch on the GPU as a caller would.

    /tmp/cast_harness --dump /tmp/cast_dump
    python3 bench/standalone/cast_vs_torch.py /tmp/cast_dump

silu_mul's reference is F.silu(gate.float()) * up.float() followed by
per_token_cast_to_fp8; the packed UE8M0 layouts' is DeepGEMM's torch fallback
(get_mn_major_tma_aligned_packed_ue8m0_tensor_torch: exponent bytes, zero-padded,
packed 4 per int32, MN-major). Prints PASS/FAIL per case; exit status 1 on any FAIL.
"""
import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "qg_torch_helpers", os.path.join(HERE, "..", "python", "qgemm", "_torch_helpers.py"))
helpers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(helpers)

dev = "cuda"


def load(path, dtype, shape):
    data = open(path, "rb").read()
    t = torch.frombuffer(bytearray(data), dtype=dtype)
    return t[: int(torch.tensor(shape).prod())].view(*shape).to(dev)


def same(a, b):
    """Bitwise equality of two tensors of equal shape (any dtype)."""
    a, b = a.contiguous(), b.contiguous()
    if a.shape != b.shape:
        return False, f"shape {list(a.shape)} vs {list(b.shape)}"
    av, bv = a.view(torch.uint8), b.view(torch.uint8)
    bad = (av != bv).sum().item()
    return bad == 0, f"{bad} differing bytes of {av.numel()}"


def main(d):
    failures = 0
    for line in open(os.path.join(d, "index.txt")):
        f = line.split()
        if not f:
            continue
        name, kv = f[0], dict(x.split("=", 1) for x in f[1:])
        p = lambda s: os.path.join(d, name + s)
        op = kv["op"]
        checks = []
        if op in ("per_token", "silu_mul"):
            g, m, k, ue, mn = (int(kv[x]) for x in ("groups", "m", "k", "ue8m0", "sf_mn"))
            rows_mask, sf_ld = int(kv["rows_mask"]), int(kv["sf_ld"])
            dt = torch.bfloat16 if kv["dtype"] == "bf16" else torch.float32
            cols = 2 * k if op == "silu_mul" else k
            x = load(p(".in.bin"), dt, (g, m, cols))
            if op == "silu_mul":
                x = torch.nn.functional.silu(x[..., :k].float()) * x[..., k:].float()
            q_ref, sf_ref = helpers.per_token_cast_to_fp8(x, use_ue8m0=bool(ue))
            kb = (k + 127) // 128
            q = load(p(".q.bin"), torch.uint8, (g, m, k))
            if mn:
                sf = load(p(".sf.bin"), torch.float32, (g, kb, sf_ld))[:, :, :m].transpose(1, 2)
            else:
                sf = load(p(".sf.bin"), torch.float32, (g, m, kb))
            live = torch.ones(g, m, dtype=torch.bool, device=dev)
            if rows_mask == 1:
                mm = load(p(".aux.bin"), torch.int32, (g,))
                live = torch.arange(m, device=dev)[None, :] < mm[:, None]
            elif rows_mask == 2:
                live = (load(p(".aux.bin"), torch.int32, (g * m,)) >= 0).view(g, m)
            checks.append(("q", q[live], q_ref.view(torch.uint8)[live]))
            checks.append(("sf", sf[live], sf_ref[live]))
        elif op == "per_block":
            g, n, k, ue = (int(kv[x]) for x in ("groups", "n", "k", "ue8m0"))
            dt = torch.bfloat16 if kv["dtype"] == "bf16" else torch.float32
            x = load(p(".in.bin"), dt, (g, n, k))
            q_ref, sf_ref = helpers.per_block_cast_to_fp8(x, use_ue8m0=bool(ue))
            checks.append(("q", load(p(".q.bin"), torch.uint8, (g, n, k)), q_ref.view(torch.uint8)))
            nb, kb = (n + 127) // 128, (k + 127) // 128
            checks.append(("sf", load(p(".sf.bin"), torch.float32, (g, nb, kb)), sf_ref))
        elif op == "per_channel":
            m, n, ue = int(kv["m"]), int(kv["n"]), int(kv["ue8m0"])
            dt = torch.bfloat16 if kv["dtype"] == "bf16" else torch.float32
            x = load(p(".in.bin"), dt, (m, n))
            q_ref, sf_ref = helpers.per_channel_cast_to_fp8(x, use_ue8m0=bool(ue))
            checks.append(("q", load(p(".q.bin"), torch.uint8, (m, n)), q_ref.view(torch.uint8)))
            checks.append(("sf", load(p(".sf.bin"), torch.float32, (m // 128, n)), sf_ref))
        elif op in ("sf_mn_major", "sf_pack_ue8m0"):
            g, mn_, sfk, tr, ld = (int(kv[x]) for x in ("groups", "mn", "sf_k", "transposed", "ld"))
            raw = load(p(".in.bin"), torch.float32, (g, sfk, mn_) if tr else (g, mn_, sfk))
            sf = raw.transpose(1, 2) if tr else raw          # [g][mn][sf_k], any strides
            if op == "sf_mn_major":
                ref = helpers.get_col_major_tma_aligned_tensor(sf)   # [g][mn][sf_k], strides (.., 1, ld)
                out = load(p(".out.bin"), torch.float32, (g, sfk, ld))[:, :, :mn_].transpose(1, 2)
                checks.append(("out", out, ref))
            else:
                ue = (sf.contiguous().view(torch.int32) >> 23).to(torch.uint8)
                aligned_k = (sfk + 3) // 4 * 4
                padded = torch.zeros(g, mn_, aligned_k, dtype=torch.uint8, device=dev)
                padded[:, :, :sfk] = ue
                ref = padded.view(torch.int32).view(g, mn_, aligned_k // 4)   # [g][mn][kp]
                out = load(p(".out.bin"), torch.int32, (g, aligned_k // 4, ld))[:, :, :mn_]
                checks.append(("out", out.transpose(1, 2), ref))
        elif op == "sf_contiguous":
            g, nb, kb = (int(kv[x]) for x in ("groups", "nb", "kb"))
            sf = load(p(".in.bin"), torch.float32, (g, kb, nb)).transpose(1, 2)   # [g][nb][kb], sfw.T
            checks.append(("out", load(p(".out.bin"), torch.float32, (g, nb, kb)), sf.contiguous()))
        else:
            print(f"SKIP {name}: op {op}")
            continue
        ok_all = True
        for what, got, want in checks:
            ok, why = same(got, want)
            if not ok:
                ok_all = False
                print(f"    {what}: {why}")
        print(f"{'PASS' if ok_all else 'FAIL'} {name} (vs torch {torch.__version__})")
        failures += not ok_all
    print(f"{'PASS' if failures == 0 else 'FAIL'}: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cast_dump"))
