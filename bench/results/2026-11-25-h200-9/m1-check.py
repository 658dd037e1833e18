"""Re-timing (2026-11-25 d) of the dense rows whose qgemm time moved in peers.json:
1x7168x16384 (53.8 us against 47.05 in h200-8) beside 64x7168x16384 (the same 64x64
kernel) and 1x4096x7168; DeepGEMM first, three rounds, kineto mean of 30 (peers.py)."""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
flusher = peers.Flusher(8 << 30)
for rnd in range(3):
    for m, n, k in [(1, 7168, 16384), (64, 7168, 16384), (1, 4096, 7168), (1, 7168, 2048)]:
        row = peers.Row(peers.dense_spec(m, n, k, "check"), libs, 7)
        out = []
        for lib in ("deepgemm", "qgemm"):
            fn = row.call(lib)
            fn()
            torch.cuda.synchronize()
            out.append(peers.time_kineto(fn, flusher, 30)[0])
        print(f"round {rnd} {m}x{n}x{k}: DeepGEMM {out[0]:.2f} us, qgemm {out[1]:.2f} us, "
              f"dg/qg {out[0] / out[1]:.3f}", flush=True)
        del row
