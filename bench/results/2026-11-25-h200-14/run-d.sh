# Session i, run 4: the tree to land (per-warpgroup epilogue, the 256x128
# unroll rule, masked row skipping): every C GPU test, qgemm check, the
# Python suite, compute-sanitizer memcheck / racecheck / synccheck through
# device-check.sh (check --quick, hostile inputs, one GEMM per store-chunk
# width) and memcheck / racecheck on sanitize-masked.py (groups ending inside
# tiles).
set -u
R=bench/results/2026-11-25-h200-14
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
: > $OUT/gpu-tests.log
for f in gpu_dense gpu_forced gpu_flat gpu_pdl gpu_split_k gpu_reference gpu_hostile gpu_invalid gpu_masked gpu_grouped; do
  timeout 250 build/qgemm_tests $f >> $OUT/gpu-tests.log 2>&1; echo "$f rc=$?" | tee -a $OUT/gpu-tests.log
done
grep -E "passed, .* failed|FAIL" $OUT/gpu-tests.log | head -20
timeout 100 build/qgemm check >> $OUT/gpu-tests.log 2>&1; echo "check rc=$?" | tee -a $OUT/gpu-tests.log
PYTHONPATH=python timeout 200 python3 -m pytest -q -rs tests/python > $OUT/python.log 2>&1; echo "python rc=$?"; tail -2 $OUT/python.log
for tool in memcheck racecheck; do
  PYTHONPATH=python timeout 100 compute-sanitizer --tool $tool --kernel-name kns=qg_fp8 --error-exitcode 9 \
    python3 $R/sanitize-masked.py > $OUT/$tool-masked.log 2>&1; echo "$tool masked rc=$?"; grep -E "SUMMARY|PASS|FAIL|diff" $OUT/$tool-masked.log | tail -5
done
timeout 150 bash bench/device-check.sh --only memcheck,racecheck,synccheck > /dev/null 2>&1; echo "device-check sanitize rc=$?"; cat $OUT/summary.txt 2>/dev/null; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" $OUT/sanitizer.log | sort | uniq -c | head
