"""Exploration (2026-11-25 d, second kernel change): the weight gradient's (1D1D)
main loop reads a stage's column scales into registers once the K block's wgmma
is done and releases the stage before promoting (it used to read them while
promoting and release after), and tests the next stage's barrier ahead. The
weight-gradient and k-grouped rows of peers.py (same specs, seed 0 as peers.py), beside
DeepGEMM; kineto (8 GB memset before each call, mean of 30). Run from the
repository root on the GPU machine."""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

libs = peers.Libs(("qgemm", "deepgemm"))
print("\n".join(libs.describe()), flush=True)
flusher = peers.Flusher(8 << 30)
specs = [s for s in peers.table_specs(libs.align(), 0) if s["kind"] in ("wgrad", "k-grouped")]
for spec in specs:
    row = peers.Row(spec, libs, 0)
    out = []
    for lib in ("deepgemm", "qgemm"):
        fn = row.call(lib)
        fn()
        torch.cuda.synchronize()
        out.append(peers.time_kineto(fn, flusher, 30)[0])
    print(f"{spec['kind']:10s} {spec['shape']:20s} DeepGEMM {out[0]:9.2f} us  qgemm {out[1]:9.2f} us  "
          f"dg/qg {out[0] / out[1]:.3f}", flush=True)
    del row
    torch.cuda.empty_cache()
