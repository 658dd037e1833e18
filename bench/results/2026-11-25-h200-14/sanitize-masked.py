"""compute-sanitizer target (2026-11-25 session i): masked GEMMs whose groups end
inside a tile, so that the per-warpgroup epilogue stores part of a tile and a
math warpgroup skips m64 tiles past its group's end (QG_SKIP_ROWS): rows per
group 0, 50, 64, 65, 130, 200, 256, 300 (a warpgroup with no row, one m64 tile
of two, both), under 256x128 A multicast, 128x192 and 128x128 (forced), each
checked (D poisoned first) against the float64 reference, and the rows past
each group's end checked untouched. Run from the repository root:
compute-sanitizer --tool racecheck --kernel-name kns=qg_fp8 python3 sanitize-masked.py"""
import sys
sys.path.insert(0, "bench")
import peers  # noqa: E402
import explore  # noqa: E402
import torch  # noqa: E402

libs = peers.Libs(("qgemm",))
qg = libs.qgemm
worst, untouched = 0.0, True
ms = [0, 50, 64, 65, 130, 200, 256, 300]
for tile in ((256, 128, "a"), (128, 192, "none"), (128, 128, "none")):
    spec = peers.masked_spec(len(ms), 160, 1024, 512, 384, 0, "sanitize")
    spec.update(ms=ms, valid_m=sum(ms), expected_m=160)
    row = peers.Row(spec, libs, 0)
    cfg = dict(qg.select_config(384, 1024, 512, kind="masked", num_groups=len(ms), expected_m=160),
               block_m=tile[0], block_n=tile[1], multicast=tile[2], num_stages=0)
    row.d["qgemm"].fill_(float("nan"))
    explore.forced(qg, row, spec, cfg)()
    torch.cuda.synchronize()
    diff = peers.calc_diff(row.valid("qgemm"), row.reference())
    tail_ok = all(bool(torch.isnan(row.d["qgemm"][g, m:].float()).all()) for g, m in enumerate(ms))
    worst, untouched = max(worst, diff), untouched and tail_ok
    print(f"masked {ms} 1024x512 {tile[0]}x{tile[1]} mc {tile[2]}: diff {diff:.2e}, "
          f"rows past each group {'untouched' if tail_ok else 'WRITTEN'}", flush=True)
print("PASS" if worst < 1e-5 and untouched else "FAIL", f"worst diff {worst:.2e}")
