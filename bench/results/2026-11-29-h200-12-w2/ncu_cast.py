"""The casts below 80% of HBM (bench/results/2026-11-28-h200-21-final) at 4096x7168: per_channel,
silu_and_mul and per_token, one call each under the default (base), then the same three under
QGEMM_CAST_VARIANT=lean (after a warm-up call each: the JIT is not profiled but its first launch is)."""
import os
import torch
import qgemm
from qgemm import cast as qc
x = torch.randn((4096, 7168), dtype=torch.bfloat16, device="cuda")
calls = (lambda: qgemm.per_channel_cast_to_fp8(x), lambda: qc.silu_and_mul_fp8_quant(x),
         lambda: qgemm.per_token_cast_to_fp8(x))
for v in ("base", "lean"):
    os.environ["QGEMM_CAST_VARIANT"] = v
    for f in calls:
        f()
    torch.cuda.synchronize()
    for f in calls:
        f()
    torch.cuda.synchronize()
print("done")
