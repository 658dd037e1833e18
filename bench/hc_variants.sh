#!/bin/bash
# bench/hc_variants.sh -- issue 50's HC prenorm A/B on one H100/H200, one command:
#   bash bench/hc_variants.sh            (from the repository root; OUT=dir for the logs)
# 1. the standalone harness (no library): every rounding scheme of
#    kernels/qg_hc_prenorm.cuh (inplace, rounder, rounder-cw2, rounder-w1, split,
#    split-cw2, split-w1, trunc) on DeepGEMM's 24 test shapes: accuracy against
#    fp64 a * rna_tf32(b) (< 1e-8; trunc against the truncated reference), sqr
#    sums, 10-run bitwise repeat, CUDA-event time after an L2 flush; one table.
# 2. the library through Python beside DeepGEMM in one process (bench/hc_ab.py):
#    DeepGEMM's own accuracy criterion (torch TF32 reference) and interleaved times.
# 3. DeepGEMM's test_hyperconnection through qgemm.deep_gemm with the default mode
#    (its kineto timing lines), and DeepGEMM itself on that test.
# 4. the C GPU test gpu_hc_prenorm (every mode through the C API).
set -u
OUT=${OUT:-/tmp/hc-variants}
mkdir -p "$OUT"
export QGEMM_CACHE_DIR=${QGEMM_CACHE_DIR:-/tmp/qc} PYTHONUNBUFFERED=1
T0=$SECONDS
(make -j16 all > "$OUT/build.log" 2>&1 || tail -20 "$OUT/build.log") &
(python3 python/setup.py build_ext --inplace > "$OUT/pybuild.log" 2>&1 || tail -20 "$OUT/pybuild.log") &
[ -f .peers/build.sh ] && (bash .peers/build.sh > "$OUT/dgbuild.log" 2>&1 || tail -20 "$OUT/dgbuild.log") &
nvcc -arch=sm_90a -O2 -std=c++17 -Isrc -o "$OUT/indexer_harness" bench/standalone/indexer_harness.cu \
    -lcuda -lnvrtc || exit 1
echo "== 1. harness, every variant (t=$((SECONDS - T0)) s)"
timeout 420 "$OUT/indexer_harness" --only hc-variants ${VARIANTS:+--variants "$VARIANTS"} \
    > "$OUT/harness.log" 2>&1
echo "harness rc=$?"
grep -v "^PASS" "$OUT/harness.log" | cut -c1-260
wait
echo "== 2. library beside DeepGEMM (t=$((SECONDS - T0)) s)"
[ -f .peers/env.sh ] && source .peers/env.sh
PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH} timeout 400 python3 bench/hc_ab.py \
    ${MODES:+--modes "$MODES"} > "$OUT/hc_ab.log" 2>&1
echo "hc_ab rc=$?"
sed -n '/^µs/,$p' "$OUT/hc_ab.log"; grep -i "error\|Traceback" "$OUT/hc_ab.log" | head -5
echo "== 3. DeepGEMM's test_hyperconnection: qgemm (default mode), then DeepGEMM itself (t=$((SECONDS - T0)) s)"
PYTHONPATH=python timeout 120 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out "$OUT" \
    --file test_hyperconnection > "$OUT/suite.log" 2>&1
echo "suite rc=$?"; grep -E "^== |FAIL|Perf \(m= 8192" "$OUT/suite.log" | cut -c1-200
(cd .peers/DeepGEMM/tests && timeout 120 python3 test_hyperconnection.py) > "$OUT/deepgemm-own.log" 2>&1
echo "DeepGEMM own test rc=$?"; grep -E "Perf \(m= 8192|Assertion|Error" "$OUT/deepgemm-own.log" | cut -c1-200
echo "== 4. C GPU test (t=$((SECONDS - T0)) s)"
timeout 180 build/qgemm_tests gpu_hc_prenorm hc_compile_every_mode > "$OUT/c-hc.log" 2>&1
echo "c rc=$?"; grep -E "FAIL|PASS|passed" "$OUT/c-hc.log" | head -20
echo "done t=$((SECONDS - T0)) s; logs in $OUT"
