"""ncu of one row, both libraries, qgemm on a forced config (session h,
2026-11-25): the row's DeepGEMM and qgemm calls, each 3 times (profile the
third launch of each kernel: -s 2 -c 2 with -k regex:'qg_fp8|sm90').
Usage, from the repository root on the GPU machine:
    ncu ... python3 ncu-force.py KIND SHAPE ['{"block_m": 64, ...}']
KIND/SHAPE as in peers.py's table; no config: qgemm's heuristic."""
import json
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import torch  # noqa: E402

kind, shape = sys.argv[1], sys.argv[2]
cfg = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
libs = peers.Libs(("qgemm", "deepgemm"))
spec = [s for s in peers.table_specs(libs.align(), 0) if s["kind"] == kind and s["shape"] == shape][0]
row = peers.Row(spec, libs, 0)
qg = libs.qgemm
a, b, d = (row.a, row.sfa_qg), (row.b, row.sfb_qg), row.d["qgemm"]
calls = {"deepgemm": row.call("deepgemm"),
         "qgemm": row.call("qgemm") if cfg is None else (lambda: qg.fp8_gemm_nt(a, b, d, config=cfg))}
for lib in ("deepgemm", "qgemm"):
    for _ in range(3):
        calls[lib]()
    torch.cuda.synchronize()
    print(lib, "done", flush=True)
