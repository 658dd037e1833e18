#!/bin/bash
# session q, call 4: the two C GPU tests that failed in call 3 under nine concurrent GPU processes, alone
set -u
export QGEMM_CACHE_DIR=/tmp/qc4
T0=$SECONDS
make -j16 build/qgemm_tests > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
echo "built t=$((SECONDS-T0))"
for i in 1 2 3; do timeout 40 build/qgemm_tests gpu_cast_sms_and_graph > $OUT/cast-$i.log 2>&1; echo "cast run $i rc=$? t=$((SECONDS-T0))"; grep -E "FAIL" $OUT/cast-$i.log | head -3; done
timeout 200 build/qgemm_tests gpu_fp8out > $OUT/fp8out.log 2>&1; echo "fp8out rc=$? t=$((SECONDS-T0))"
grep -E "FAIL|passed" $OUT/fp8out.log | head -8 | cut -c1-250; grep -c "^    ok" $OUT/fp8out.log
