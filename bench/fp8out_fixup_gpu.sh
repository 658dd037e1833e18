#!/usr/bin/env bash
# bench/fp8out_fixup_gpu.sh -- the GPU check of QGEMM_FP8OUT_VARIANT=fixup (issue 51:
# e4m3 D on the bf16-D tile), in one run of about 90 s on an H200:
#   1. the bench first (what decides the default): bench/peers_fp8out.py over M 64 and
#      128 x DeepGEMM's 7 (N, K), once per variant; one summary line each (geomean
#      fused / bf16-out, by M, accuracy PASS / FAIL) -> $OUT/fp8out-{old,fixup}.jsonl
#   2. the C GPU test of the fixup (gpu_fp8out_fixup: heuristic and forced split tiles,
#      M and N off the tiles, repeated launches, bitwise equal to the cluster exchange
#      on the same tile) -> $OUT/fixup-tests.log
#   3. pytest tests/python/test_fp8out.py (its GPU cases run the fixup) -> the same log
# Run from the repository root: OUT=/some/dir bash bench/fp8out_fixup_gpu.sh
set -u
OUT=${OUT:-/tmp/fp8out-fixup}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
make -j16 build/qgemm_tests > "$OUT/build.log" 2>&1 || { echo "FAIL: make (see build.log)"; exit 1; }
# (always: an extension built from another tree would lack the variant)
$PY python/setup.py build_ext --inplace -j 16 >> "$OUT/build.log" 2>&1 ||
    { echo "FAIL: python extension (see build.log)"; exit 1; }
rc=0
for s in old fixup; do
    rm -f "$OUT/fp8out-$s.jsonl"
    QGEMM_FP8OUT_VARIANT=$s PYTHONPATH=python timeout 60 $PY bench/peers_fp8out.py --rows 64,128 \
        --calls 20 --out "$OUT/fp8out-$s.jsonl" > "$OUT/bench-$s.log" 2>&1 || rc=1
    tail -1 "$OUT/bench-$s.log"
done
timeout 60 build/qgemm_tests gpu_fp8out_fixup > "$OUT/fixup-tests.log" 2>&1 || rc=1
grep -E "^\[ (PASS|FAIL|SKIP)|FAIL|cases" "$OUT/fixup-tests.log" | tail -8
PYTHONPATH=python timeout 60 $PY -m pytest -q tests/python/test_fp8out.py >> "$OUT/fixup-tests.log" 2>&1 || rc=1
tail -1 "$OUT/fixup-tests.log"
echo "fp8out fixup GPU check: $([ $rc = 0 ] && echo PASS || echo FAIL)"
exit $rc
