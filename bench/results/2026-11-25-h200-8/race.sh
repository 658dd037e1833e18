#!/usr/bin/env bash
# Racecheck of the per-tile SFB pipeline (2026-11-25 c): CTAs that run three
# tiles or more reuse an SFB buffer. The tree's kernel (every math thread
# arrives on sfb_empty) beside the kernel of 9070e1e (one arrival a warp, lane
# 0 after __syncwarp), built in /tmp/old: a copy of the tree with
# kernels/qg_fp8_gemm.cuh from `git show 9070e1e:kernels/qg_fp8_gemm.cuh`
# (the device command of this folder's README).
set -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
race() {
    echo "== $1: racecheck ${*:2}"
    "$cs" --tool racecheck "${@:2}" 2>&1 | grep -E "^(520|8x).*,|SUMMARY|PASS|FAIL|Race reported" | sort | uniq -c | head -8
}
B="--no-cublas --runs 20 --warmup 3"
for dir in . /tmp/old; do
    race "$dir" "$dir/build/qgemm" bench --shape 520x1000x384 --config 64,16,0,none $B
    race "$dir" "$dir/build/qgemm" bench --grouped-masked 8,256,200 --shape 256x1024x384 --config 64,16,0,none $B
done
race . build/qgemm_tests gpu_hostile_contiguous
