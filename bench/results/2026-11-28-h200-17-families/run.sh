#!/bin/bash
# device call 2: the BF16 family (harness, C GPU test, DeepGEMM's test_bf16/test_layout), indexer and cast harnesses
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1
T0=$SECONDS
make -j16 all > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
(python3 python/setup.py build_ext --inplace > $OUT/pybuild.log 2>&1 || tail -20 $OUT/pybuild.log) &
nvcc -arch=sm_90a -O2 -o /tmp/bf16h scratch/bf16_harness.cu -lcuda -lnvrtc -lpthread > $OUT/bf16-harness.log 2>&1
(cd .scratch/indexer && nvcc -arch=sm_90a -O2 -std=c++17 -Isrc -o /tmp/idxh scratch/indexer_harness.cu -lcuda -lnvrtc) > $OUT/indexer.log 2>&1 &
(cd .scratch/cast && cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc -I/usr/local/cuda/include -c src/cast_plan.c -o /tmp/cp.o && cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc -I/usr/local/cuda/include -c src/status.c -o /tmp/cs.o && nvcc -O2 -std=c++17 -arch=sm_90a -Iinclude -Isrc -Xcompiler -ffp-contract=off scratch/cast_harness.cu /tmp/cp.o /tmp/cs.o -lnvrtc -o /tmp/casth) > $OUT/cast.log 2>&1 &
timeout 100 /tmp/bf16h >> $OUT/bf16-harness.log 2>&1; echo "bf16 harness rc=$? t=$((SECONDS-T0))"
grep -E "FAIL|PASS|TFLOPS" $OUT/bf16-harness.log | grep -c PASS; grep -E "FAIL" $OUT/bf16-harness.log | head -8; tail -3 $OUT/bf16-harness.log
timeout 90 build/qgemm_tests gpu_bf16 > $OUT/c-bf16.log 2>&1; echo "c gpu_bf16 rc=$? t=$((SECONDS-T0))"; grep -E "FAIL|passed|cases" $OUT/c-bf16.log | head -12
wait
PYTHONPATH=python timeout 170 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT --file test_bf16 --file test_layout > $OUT/suite.log 2>&1; echo "suite rc=$? t=$((SECONDS-T0))"
grep -E "^== |Error" $OUT/suite.log | cut -c1-250 | head -20
(cd .scratch/indexer && timeout 80 /tmp/idxh --quick) >> $OUT/indexer.log 2>&1; echo "indexer rc=$? t=$((SECONDS-T0))"; grep -cE "PASS" $OUT/indexer.log; grep -E "FAIL" $OUT/indexer.log | head -5
(cd .scratch/cast && timeout 60 /tmp/casth --kernels kernels) >> $OUT/cast.log 2>&1; echo "cast rc=$? t=$((SECONDS-T0))"; grep -cE "PASS" $OUT/cast.log; grep -E "FAIL" $OUT/cast.log | head -5
