# Session f, final run A (96d4ea8): the C GPU tests (the CPU ones ran in CI and on the
# CPU machine), the Python suite, memcheck on the unrolled tiles' Python test.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
timeout 330 build/qgemm_tests gpu_ > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "^\[ (FAIL|SKIP)|passed|FAIL" $OUT/gpu-tests.log | tail -8
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
PYTHONPATH=python timeout 200 python3 -m pytest -q -rs tests/python > $OUT/python.log 2>&1; echo "python rc=$?"; tail -4 $OUT/python.log
PYTHONPATH=python timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -x tests/python/test_gpu.py -k test_unrolled_tiles > $OUT/memcheck-unrolled.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|passed|failed" $OUT/memcheck-unrolled.log | tail -2
