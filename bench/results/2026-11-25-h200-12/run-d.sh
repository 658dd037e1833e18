# Session g, final run 2: the C GPU tests the heuristic's changes reach (the kernel source is
# 44f4ba0's: its forced-config and sanitizer runs of session f stand), qgemm check, the Python
# suite, memcheck and racecheck on the masked 128x192 A tile.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
: > $OUT/gpu-tests.log
for f in gpu_dense gpu_flat gpu_grouped gpu_pdl gpu_split_k gpu_masked_graph gpu_reference gpu_hostile gpu_invalid; do
  timeout 200 build/qgemm_tests $f >> $OUT/gpu-tests.log 2>&1; echo "$f rc=$?" | tee -a $OUT/gpu-tests.log
done
grep -E "passed, .* failed" $OUT/gpu-tests.log
timeout 120 build/qgemm check >> $OUT/gpu-tests.log 2>&1; echo "check rc=$?" | tee -a $OUT/gpu-tests.log
PYTHONPATH=python timeout 200 python3 -m pytest -q -rs tests/python > $OUT/python.log 2>&1; echo "python rc=$?"; tail -2 $OUT/python.log
# memcheck and racecheck on the masked 128x192 A tile (6 groups of up to 1024 rows, N 4096, K 512):
# tests/python/test_gpu.py::test_grouped_masked_groups_of_1024_rows.
# Only qgemm's kernel is instrumented (--kernel-name kns=qg_fp8: torch's float64 reference GEMM
# under racecheck would take minutes); without that filter if this compute-sanitizer refuses it.
for tool in memcheck racecheck; do
  for filt in "--kernel-name kns=qg_fp8" ""; do
    PYTHONPATH=python timeout 150 compute-sanitizer --tool $tool $filt --error-exitcode 9 python3 -m pytest -q \
      tests/python/test_gpu.py -k test_grouped_masked_groups_of_1024_rows > $OUT/$tool.log 2>&1; rc=$?
    grep -q "SUMMARY" $OUT/$tool.log && break
  done
  echo "$tool rc=$rc filter '$filt'"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" $OUT/$tool.log | tail -2
done
