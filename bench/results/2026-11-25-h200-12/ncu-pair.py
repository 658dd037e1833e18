"""ncu of one row, both libraries (session e, 2026-11-25): the row's qgemm and
DeepGEMM calls, each 3 times (ncu profiles the third launch of each kernel with
-s 2 -c 1 per name). Usage, from the repository root on the GPU machine:
    ncu --clock-control none -k regex:'qg_fp8|sm90' -s 2 -c 2 --section SpeedOfLight \
        --section InstructionStats python3 ncu-pair.py KIND SHAPE
KIND/SHAPE as in peers.py's table (e.g. wgrad 4096x4096x7168)."""
import sys
sys.path.insert(0, "bench")  # noqa
import peers  # noqa: E402
import torch  # noqa: E402

kind, shape = sys.argv[1], sys.argv[2]
libs = peers.Libs(("qgemm", "deepgemm"))
spec = [s for s in peers.table_specs(libs.align(), 0) if s["kind"] == kind and s["shape"] == shape][0]
row = peers.Row(spec, libs, 0)
for lib in ("deepgemm", "qgemm"):
    fn = row.call(lib)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    print(lib, "done", flush=True)
