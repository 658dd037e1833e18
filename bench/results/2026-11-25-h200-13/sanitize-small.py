"""compute-sanitizer target (2026-11-25 session h): small dense GEMMs under the
new tile order (swizzle group 1, two to four m-blocks on consecutive CTAs),
each checked against the float64 reference. Run from the repository root:
compute-sanitizer --tool racecheck --kernel-name kns=qg_fp8 python3 sanitize-small.py"""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

libs = peers.Libs(("qgemm",))
worst = 0.0
for m, n, k in ((100, 4096, 1024), (128, 4096, 1024), (256, 2112, 1024), (200, 7168, 512)):
    spec = peers.dense_spec(m, n, k, "sanitize")
    row = peers.Row(spec, libs, 0)
    cfg = libs.qgemm.select_config(m, n, k)
    row.d["qgemm"].fill_(float("nan"))
    row.call("qgemm")()
    torch.cuda.synchronize()
    diff = peers.calc_diff(row.valid("qgemm"), row.reference())
    worst = max(worst, diff)
    print(f"{m}x{n}x{k}: {cfg['block_m']}x{cfg['block_n']} sw{cfg['swizzle_group']} diff {diff:.2e}", flush=True)
print("PASS" if worst < 1e-5 else "FAIL", f"worst diff {worst:.2e}")
