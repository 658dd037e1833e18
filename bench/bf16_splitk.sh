#!/bin/bash
# bench/bf16_splitk.sh -- issue 49's BF16 split-K across a cluster (QGEMM_BF16_SPLITK,
# kernels/qg_bf16_gemm.cuh "Split-K") on one H100/H200, one command, from the repository
# root of a built tree (build/qgemm_tests, the Python extension in python/, DeepGEMM built
# beside in .peers: `source .peers/env.sh` done or doable here). OUT=dir for the logs.
#   1. C GPU test gpu_bf16_splitk_accuracy: forced 2 / 4 / 8 and auto against fp64
#      (calc_diff < 1e-5), poisoned D, K tails, more tiles than clusters, D bf16 / FP32 x
#      C modes, merged stages on / off, two runs bitwise equal. PASS / FAIL line.
#   2. pytest tests/python/test_gpu.py -k splitk (the same through torch, NT and NN).
#   3. the 9 dense NT K 7168 rows beside DeepGEMM and cuBLAS (kineto), default (auto since
#      2026-11-29) and QGEMM_BF16_SPLITK=${ALT:-off} (the unsplit kernel): the summary lines
#      (cuBLAS/qgemm geomean both).
# GPU time ~60-90 s cold (the split kernels' JIT, DeepGEMM's).
set -u
OUT=${OUT:-/tmp/bf16-splitk}
mkdir -p "$OUT"
export QGEMM_CACHE_DIR=${QGEMM_CACHE_DIR:-/tmp/qc} PYTHONUNBUFFERED=1
[ -f .peers/env.sh ] && source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench:${PYTHONPATH:-}
T0=$SECONDS
echo "== 1. C gpu_bf16_splitk_accuracy"
stdbuf -oL timeout 60 build/qgemm_tests gpu_bf16_splitk_accuracy > "$OUT/c.log" 2>&1
echo "rc=$? t=$((SECONDS - T0)) s"
grep -E "^    FAIL|split-K runs|^\[ (PASS|FAIL|SKIP)" "$OUT/c.log" | head -20 | cut -c1-220
echo "== 2. pytest test_bf16_splitk"
timeout 40 python3 -m pytest -q -p no:cacheprovider tests/python/test_gpu.py -k splitk \
    > "$OUT/py.log" 2>&1
echo "rc=$? t=$((SECONDS - T0)) s"
grep -E "passed|failed|^(FAILED|ERROR) " "$OUT/py.log" | tail -6 | cut -c1-220
echo "== 3. peers_families bf16, QGEMM_BF16_SPLITK=${ALT:-off}"
timeout 90 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16 --iters 10 \
    --alt-env "QGEMM_BF16_SPLITK=${ALT:-off}" \
    --where 'k=7168|accumulate=False|out_dtype=torch.bfloat16|major_a=MajorTypeAB.KMajor|major_b=MajorTypeAB.KMajor' \
    --out "$OUT" > "$OUT/bench.log" 2>&1
echo "rc=$? t=$((SECONDS - T0)) s"
grep -E "^bf16 " "$OUT/peers-families.txt" | grep -v "kineto\|events" | cut -c1-170
grep -A1 -E "^bf16 +(kineto|events)" "$OUT/peers-families.txt" | cut -c1-170
