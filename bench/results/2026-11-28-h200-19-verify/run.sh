#!/bin/bash
# session q, call 1: verification of main after the house refactor and the families
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
mkdir -p $OUT/fp8mod $OUT/fam
(make -j16 all > $OUT/build.log 2>&1 || tail -20 $OUT/build.log) &
python3 python/setup.py build_ext --inplace > $OUT/pybuild.log 2>&1 || tail -20 $OUT/pybuild.log
wait
echo "built t=$((SECONDS-T0))"
# three correctness streams side by side on the one GPU (timings inside them are not used)
( timeout 420 build/qgemm_tests gpu_ -gpu_dense_grid -gpu_forced_configs -gpu_grouped_contiguous -gpu_flat_memory -gpu_multi > $OUT/c-gpu.log 2>&1; echo "c rc=$? t=$((SECONDS-T0))" >> $OUT/c-gpu.log
  QGEMM_JIT_DEBUG=1 timeout 100 compute-sanitizer --tool memcheck build/qgemm_tests gpu_mqa_logits gpu_paged_mqa_logits > $OUT/memcheck-mqa.log 2>&1; echo "memcheck rc=$? t=$((SECONDS-T0))" >> $OUT/c-gpu.log ) &
( PYTHONPATH=python timeout 430 python3 -m pytest -q -rs -p no:cacheprovider tests/python > $OUT/python.log 2>&1; echo "py rc=$? t=$((SECONDS-T0))" >> $OUT/python.log ) &
( PYTHONPATH=python timeout 300 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT/fp8mod --module qgemm --file test_fp8_fp4 > $OUT/fp8mod/suite.log 2>&1; echo "fp8mod rc=$? t=$((SECONDS-T0))" >> $OUT/fp8mod/suite.log ) &
wait
echo "streams done t=$((SECONDS-T0))"
tail -3 $OUT/c-gpu.log; grep -E "FAIL" $OUT/c-gpu.log | head; grep -E "ERROR SUMMARY|Invalid" $OUT/memcheck-mqa.log | head -3
tail -15 $OUT/python.log | cut -c1-200
grep -E "cases pass|FAIL" $OUT/fp8mod/suite.log | cut -c1-200 | head
# the non-FP8 files alone on the GPU (their perf lines are DeepGEMM's own timing of qgemm)
DG_MQA_NUM_CASES=24 PYTHONPATH=python timeout $((585-(SECONDS-T0))) python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT/fam \
  --file test_hyperconnection --file test_layout --file test_einsum --file test_attention --file test_bf16 > $OUT/fam/suite.log 2>&1
echo "fam rc=$? t=$((SECONDS-T0))"; grep -E "cases pass|^== " $OUT/fam/suite.log | head -20
