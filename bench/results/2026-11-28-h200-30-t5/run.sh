#!/bin/bash
# session t, call 5 (the last 245 s of device time): gpu_mqa_logits alone, line-buffered, to see
# whether its three organisations (default pipe, lockstep2, lockstep4) pass: calls 3 and 4 ran it
# beside other processes and hit their timeouts with nothing printed (stdout block-buffered).
set -u
export QGEMM_CACHE_DIR=/tmp/qc
T0=$SECONDS
make -j16 build/qgemm_tests > $OUT/build.log 2>&1 || tail -20 $OUT/build.log
echo "built t=$((SECONDS-T0))"
timeout 130 stdbuf -oL build/qgemm_tests gpu_mqa_logits 2>&1 | tee $OUT/mqa.log | while read -r l; do echo "t=$((SECONDS-T0)) $l"; done
echo "done t=$((SECONDS-T0))"
