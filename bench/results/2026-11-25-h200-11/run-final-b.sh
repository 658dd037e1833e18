# Session f, final run B: the C GPU tests run A did not finish (it stopped at its time limit in
# gpu_grouped_masked) or ran with the earlier unrolling (gpu_forced_configs), the Python suite,
# memcheck and racecheck on the unrolled tiles' Python test.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
: > $OUT/gpu-tests.log
for f in gpu_forced_configs gpu_grouped gpu_hostile gpu_invalid gpu_masked_graph gpu_multi gpu_pdl gpu_reference gpu_split_k; do
  timeout 250 build/qgemm_tests $f >> $OUT/gpu-tests.log 2>&1; echo "$f rc=$?" | tee -a $OUT/gpu-tests.log
done
grep -E "passed, .* failed" $OUT/gpu-tests.log
PYTHONPATH=python timeout 200 python3 -m pytest -q -rs tests/python > $OUT/python.log 2>&1; echo "python rc=$?"; tail -2 $OUT/python.log
for tool in memcheck racecheck; do
  PYTHONPATH=python timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q tests/python/test_gpu.py -k test_unrolled_tiles > $OUT/$tool-unrolled.log 2>&1; echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" $OUT/$tool-unrolled.log | tail -2
done
