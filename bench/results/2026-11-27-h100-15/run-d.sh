# Session j, run 4: the tree to land (psum's 256x128 tile with row skipping;
# the row-major FP32 epilogue left out): the Python training tests (psum,
# wgrad, k-grouped) and DeepGEMM-name psum tests, memcheck / racecheck on
# sanitize-new.py (psum groups ending inside 256-row tiles), and the peers
# table's psum rows beside DeepGEMM (its build needs the system libstdc++
# preloaded: .peers/env.sh).
set -u
R=bench/results/2026-11-27-h100-15
(bash .peers/build.sh > $OUT/dg-build.log 2>&1; touch /tmp/dg-build.done) &
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
git log -1 --format='tree %h %s' | cut -c1-100
PYTHONPATH=python timeout 170 python3 -m pytest -q -rs tests/python/test_training.py \
  tests/python/test_deepgemm_compat.py > $OUT/python.log 2>&1; echo "python rc=$?"; tail -3 $OUT/python.log
for tool in memcheck racecheck; do
  PYTHONPATH=python timeout 90 compute-sanitizer --tool $tool --kernel-name kns=qg_fp8 --error-exitcode 9 \
    python3 $R/sanitize-new.py > $OUT/$tool-new.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|PASS|FAIL" $OUT/$tool-new.log | tail -3
done
while [ ! -f /tmp/dg-build.done ]; do sleep 2; done; tail -n 1 $OUT/dg-build.log
source .peers/env.sh
PYTHONPATH="python:$PYTHONPATH" timeout 170 python3 bench/peers.py --filter psum --warm-jobs 14 --out $OUT 2>&1 | tail -45
