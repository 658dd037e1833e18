# Session h, run 4: the C GPU tests the heuristic's change reaches (small dense tiles now run
# in tile order 1), qgemm check, the Python suite, and memcheck / racecheck on small dense
# GEMMs in the new order (sanitize-small.py, each checked against the float64 reference).
set -u
R=bench/results/2026-11-25-h200-13
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
: > $OUT/gpu-tests.log
for f in gpu_dense gpu_flat gpu_pdl gpu_split_k gpu_reference gpu_hostile gpu_invalid gpu_grouped; do
  timeout 150 build/qgemm_tests $f >> $OUT/gpu-tests.log 2>&1; echo "$f rc=$?" | tee -a $OUT/gpu-tests.log
done
grep -E "passed, .* failed|FAIL" $OUT/gpu-tests.log | head
timeout 100 build/qgemm check >> $OUT/gpu-tests.log 2>&1; echo "check rc=$?" | tee -a $OUT/gpu-tests.log
PYTHONPATH=python timeout 200 python3 -m pytest -q -rs tests/python > $OUT/python.log 2>&1; echo "python rc=$?"; tail -2 $OUT/python.log
for tool in memcheck racecheck; do
  PYTHONPATH=python timeout 100 compute-sanitizer --tool $tool --kernel-name kns=qg_fp8 --error-exitcode 9 \
    python3 $R/sanitize-small.py > $OUT/$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|PASS|FAIL" $OUT/$tool.log | tail -2
done
