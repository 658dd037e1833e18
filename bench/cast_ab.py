"""bench/cast_ab.py -- qgemm's quantizing casts under QGEMM_CAST_VARIANT values, side by side
(issue 51 item 3: >= 80% of the card's copy bandwidth for tensors >= 32 MB). 'default' times the
library's default (the knob unset); any other value is set as QGEMM_CAST_VARIANT around each call.

For each cast and shape: kineto (bench/peers_families.Timer: 8 GB zeroed before each call) and
CUDA-events time of each variant, GB/s (bytes read + written / kineto time) and its share of a
2 GiB device copy timed in the same run, and whether the variant's outputs equal the default's
byte for byte (the variants' contract) and the torch formulas' (qgemm._torch_helpers).

    python3 bench/cast_ab.py [--variants base,lean,all,all+lean] [--iters 20] [--out FILE.json]

Prints one line a row and a SUMMARY line a variant (geomean of base time / variant time, the
smallest share of the copy bandwidth over the rows >= 32 MB, bitwise PASS/FAIL)."""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default="base,lean,all,all+lean",
                    help="QGEMM_CAST_VARIANT values, comma-separated; 'default': unset (all+lean+ring+lut since 2026-11-29 y; all+lean since "
                         "2026-11-29); the first is the ratios' reference")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--shapes", default="64x7168,4096x7168,16384x7168,4096x2048")
    ap.add_argument("--out")
    args = ap.parse_args()
    import torch
    import qgemm
    from qgemm import _torch_helpers as th
    from qgemm import cast as qc
    from peers_families import Timer

    timer = Timer(torch, args.iters)
    big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(big)
    copy_us = timer.events_us({"copy": lambda: dst.copy_(big)})["copy"]
    hbm = 2 * big.numel() / copy_us / 1e3
    del big, dst
    print(f"copy bandwidth {hbm:.0f} GB/s (2 GiB device copy, events)")

    def silu_torch(x):
        n = x.shape[-1] // 2
        return th.per_token_cast_to_fp8(torch.nn.functional.silu(x[..., :n].float()) * x[..., n:].float(), False)

    ops = [
        ("per_token", lambda x: qgemm.per_token_cast_to_fp8(x), lambda x: th.per_token_cast_to_fp8(x)),
        ("per_token_ue8m0", lambda x: qgemm.per_token_cast_to_fp8(x, use_ue8m0=True),
         lambda x: th.per_token_cast_to_fp8(x, use_ue8m0=True)),
        ("per_block", lambda x: qgemm.per_block_cast_to_fp8(x), lambda x: th.per_block_cast_to_fp8(x)),
        ("per_channel", lambda x: qgemm.per_channel_cast_to_fp8(x), lambda x: th.per_channel_cast_to_fp8(x)),
        ("silu_and_mul", lambda x: qc.silu_and_mul_fp8_quant(x), silu_torch),
    ]
    variants = [v for v in args.variants.split(",") if v]
    shapes = [tuple(int(d) for d in s.split("x")) for s in args.shapes.split(",") if s]

    def under(v, fn):
        def call():
            if v == "default":
                os.environ.pop("QGEMM_CAST_VARIANT", None)
            else:
                os.environ["QGEMM_CAST_VARIANT"] = v
            try:
                return fn()
            finally:
                os.environ.pop("QGEMM_CAST_VARIANT", None)
        return call

    def same(a, b):
        return all(torch.equal(g.view(torch.uint8) if g.element_size() == 1 else g,
                               w.view(torch.uint8) if w.element_size() == 1 else w) for g, w in zip(a, b))

    rows = []
    for name, fq, ft in ops:
        for m, k in shapes:
            if name == "per_channel" and m % 128:
                continue  # (per_channel_cast_to_fp8 takes M a multiple of 128 only)
            x = torch.randn((m, k), dtype=torch.bfloat16, device="cuda")
            x[0, :7] = torch.tensor([0.0, -0.0, 1e-39, -3e-38, 65504.0, -1e-30, 2.5], dtype=torch.bfloat16)
            want = ft(x)
            row = {"name": name, "shape": f"{m}x{k}", "hbm_gbps": hbm}
            base_out = under(variants[0], lambda: fq(x))()
            row["bytes"] = x.numel() * 2 + sum(t.numel() * t.element_size() for t in base_out)
            for v in variants:
                out = under(v, lambda: fq(x))()
                row[f"{v}_bitwise_default"] = same(out, base_out)
                row[f"{v}_bitwise_torch"] = same(out, want)
                row[f"{v}_us"] = timer.kineto_us(under(v, lambda: fq(x)))
            ev = timer.events_us({v: under(v, lambda: fq(x)) for v in variants})
            for v in variants:
                row[f"{v}_events_us"] = ev[v]
            line = f"{name:16} {m}x{k:<6} {row['bytes'] / 1e6:7.1f} MB"
            for v in variants:
                gbps = row["bytes"] / row[f"{v}_us"] / 1e3
                line += (f" | {v} {row[f'{v}_us']:7.1f} us {100 * gbps / hbm:3.0f}% ev {ev[v]:6.1f}"
                         f" {'ok' if row[f'{v}_bitwise_default'] and row[f'{v}_bitwise_torch'] else 'DIFF'}")
            print(line, flush=True)
            rows.append(row)
    print("SUMMARY (kineto base/variant geomean; events; the smallest share of the copy bandwidth over rows >= 32 MB)")
    ok_all = True
    for v in variants:
        g = math.exp(sum(math.log(r[f"{variants[0]}_us"] / r[f"{v}_us"]) for r in rows) / len(rows))
        ge = math.exp(sum(math.log(r[f"{variants[0]}_events_us"] / r[f"{v}_events_us"]) for r in rows) / len(rows))
        big_rows = [r for r in rows if r["bytes"] >= 32e6]
        share = min((r["bytes"] / r[f"{v}_us"] / 1e3 / hbm for r in big_rows), default=float("nan"))
        ok = all(r[f"{v}_bitwise_default"] and r[f"{v}_bitwise_torch"] for r in rows)
        ok_all &= ok
        print(f"  {v:10} {variants[0]}/{v} kineto {g:.3f} events {ge:.3f}; min share >= 32 MB {100 * share:.0f}%; "
              f"bytes {'PASS' if ok else 'FAIL'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
