# Session h, run 5: the grouped masked GPU tests that run 4's 150 s limit cut off (after
# gpu_grouped_contiguous passed), and the masked graph test.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
for f in gpu_grouped_masked gpu_masked_graph; do
  timeout 250 build/qgemm_tests $f >> $OUT/gpu-tests-masked.log 2>&1; echo "$f rc=$?" | tee -a $OUT/gpu-tests-masked.log
done
grep -E "passed, .* failed|FAIL|cases" $OUT/gpu-tests-masked.log | head
