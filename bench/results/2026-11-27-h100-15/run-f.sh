# Session j, run 6: the tree to land (psum 256x128 with row skipping, and FP32
# D stored row-major for odd multiples of 8 columns at a group's K <= 4096,
# which the heuristic takes as 128x136 for the k-grouped 4096x7168 rows of 8
# and 16 groups): the Python training and DeepGEMM-name tests, memcheck /
# racecheck on sanitize-new.py, then the peers table's weight-gradient and
# k-grouped rows beside DeepGEMM.
set -u
R=bench/results/2026-11-27-h100-15
(bash .peers/build.sh > $OUT/dg-build.log 2>&1; touch /tmp/dg-build.done) &
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
PYTHONPATH=python timeout 150 python3 -m pytest -q -rs tests/python/test_training.py \
  tests/python/test_deepgemm_compat.py > $OUT/python.log 2>&1; echo "python rc=$?"; tail -2 $OUT/python.log
for tool in memcheck racecheck; do
  PYTHONPATH=python timeout 100 compute-sanitizer --tool $tool --kernel-name kns=qg_fp8 --error-exitcode 9 \
    python3 $R/sanitize-new.py > $OUT/$tool-new.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|PASS|FAIL|Error" $OUT/$tool-new.log | tail -3
done
while [ ! -f /tmp/dg-build.done ]; do sleep 2; done; tail -n 1 $OUT/dg-build.log
source .peers/env.sh
PYTHONPATH="python:$PYTHONPATH" timeout 150 python3 bench/peers.py --filter 'wgrad|k-grouped' --warm-jobs 14 --out $OUT 2>&1 | tail -30
