#!/bin/bash
# device call 4: the HC TF32 rounding fix through DeepGEMM's test, and the families' C GPU tests
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1
T0=$SECONDS
(make -j16 all > $OUT/build.log 2>&1 || tail -20 $OUT/build.log) &
python3 python/setup.py build_ext --inplace > $OUT/pybuild.log 2>&1 || tail -20 $OUT/pybuild.log
wait
echo "built t=$((SECONDS-T0))"
PYTHONPATH=python timeout 60 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT --file test_hyperconnection > $OUT/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-T0))"; grep -E "^== |FAIL|Perf" $OUT/suite.log | cut -c1-200 | head -30
timeout 120 build/qgemm_tests gpu_cast gpu_mqa gpu_paged gpu_hc gpu_bf16 > $OUT/c-families.log 2>&1
echo "c rc=$? t=$((SECONDS-T0))"; grep -E "FAIL|PASS|passed|cases" $OUT/c-families.log | cut -c1-200 | head -40
