"""compute-sanitizer target (2026-11-27 session j), the two kernel paths this
session added, each checked against the float64 reference with what a call must
not write checked unchanged (tests/python/test_training.py's checks): psum's
256-row tiles, which skip the m64 tiles past a group's end (QG_SKIP_ROWS), on
groups of 0, 50, 64, 65, 130, 200, 256 and 300 rows (a warpgroup with no row,
one m64 tile of two, both), as 256x128 A and none and 256x64; and FP32 D stored
row-major (QG_D_ROWS: odd multiples of 8 columns at K <= 4096): weight gradient
500x712x640 as 128x136, 128x152, 64x88 and 128x120 A, stored and accumulated in
place, and the k-grouped GEMM of 35 groups (two launches, empty groups) as
128x136. Run from the repository root:
compute-sanitizer --tool racecheck --kernel-name kns=qg_fp8 python3 sanitize-new.py"""
import sys
sys.path.insert(0, "tests/python")
import test_training as t  # noqa: E402

for cfg in ({"block_m": 256, "block_n": 128, "multicast": "a"},
            {"block_m": 256, "block_n": 128, "multicast": "none"},
            {"block_m": 256, "block_n": 64, "multicast": "none"}):
    t.check_psum([0, 50, 64, 65, 130, 200, 256, 300], 1024, 512, f"{cfg}", config=cfg)
    print(f"psum {cfg}: ok", flush=True)
for bm, bn, mc in ((128, 136, "none"), (128, 152, "none"), (64, 88, "none"), (128, 120, "a")):
    for mode in ("store", "in-place"):
        t.check_wgrad(500, 712 if mc != "a" else 720, 640, mode,
                      {"block_m": bm, "block_n": bn, "multicast": mc})
        print(f"wgrad 500x712x640 {bm}x{bn} mc {mc} {mode}: ok", flush=True)
t.test_k_grouped(t._MANY_KS, 136, 264, "inplace")
print("k-grouped 35 groups 136x264 in place: ok", flush=True)
print("PASS")
