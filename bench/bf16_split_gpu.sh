#!/bin/bash
# bench/bf16_split_gpu.sh -- the GPU check of dense BF16 split-K (QGEMM_BF16_SPLIT_K, branch
# bf16s) in about 90 s, after the usual build (make build/qgemm_tests, the Python extension,
# .peers/build.sh + source .peers/env.sh, PYTHONPATH=python:bench):
#   1. build/qgemm_tests gpu_bf16_split_k_accuracy: forced splits 2..8 and "on", with and without
#      the reduce-scatter (":rs"), every layout,
#      D type and C mode, poisoned D, fp64 reference, each case twice (bitwise reproducible);
#   2. bench/peers_families.py --kinds bf16 --split-k on: the 5 dense rows of the 2026-11-28
#      table, qgemm's default plan and the split-on column beside DeepGEMM and cuBLAS;
#   3. bench/bf16_split_ab.py: off / on / on:rs / forced 4:rs and 8:rs beside cuBLAS on the M = 1 and 128
#      decode shapes (18 rows), accuracy + reproducibility + kineto.
# Writes under $OUT (default .); prints PASS/FAIL and one summary line per variant.
set -u
OUT=${OUT:-.}
mkdir -p "$OUT"
echo "== split-K accuracy"
timeout 35 build/qgemm_tests gpu_bf16_split_k_accuracy > "$OUT/bf16-split-test.log" 2>&1
echo "rc=$?"; grep -E "FAIL|PASS|cases" "$OUT/bf16-split-test.log" | head -12 | cut -c1-220
echo "== peers_families bf16, split on"
timeout 30 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16 --split-k on \
    --max-rows 5 --iters 10 --out "$OUT/bf16-on" > "$OUT/bf16-on.log" 2>&1
echo "rc=$?"; sed -n '/^kind/,$p' "$OUT/bf16-on/peers-families.txt" 2>/dev/null | cut -c1-200
echo "== split A/B on the decode shapes"
timeout 25 python3 bench/bf16_split_ab.py --splits off,on,on:rs,4:rs,8:rs --iters 5 --out "$OUT" > "$OUT/bf16-split-ab.log" 2>&1
echo "rc=$?"; grep -E "^ |QGEMM_BF16_SPLIT_K|accuracy|FAIL" "$OUT/bf16-split-ab.log" | cut -c1-200
