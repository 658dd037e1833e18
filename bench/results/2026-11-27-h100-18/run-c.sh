# Session m, run 3 (one GPU): the masked heuristic change (8d4d14e: groups of
# ~1024 rows at K >= 3072 take 256x128 A) beside DeepGEMM: every masked row
# with the new choice, and the three changed rows with the old choice
# (128x192 A) forced, new / old / new / old; then the masked GPU tests of the
# Python package and the C test suite (GPU tests included).
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /tmp/make.log 2>&1 || tail /tmp/make.log
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
timeout 200 build/qgemm_tests > $OUT/tests-c.log 2>&1; echo "qgemm_tests rc=$? at ${SECONDS}s"; tail -n 3 $OUT/tests-c.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
r() { timeout 100 python3 bench/explore.py --warm-jobs 8 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-c.log; }
for rep in 1 2; do
  r new$rep masked
  r old$rep --config block_m=128 --config block_n=192 --config multicast=a masked:6x1024x6144x7168 masked:6x1024x7168x3072 masked:6x1024x4096x4096
  echo "rep $rep at ${SECONDS}s"
done
timeout 120 python3 -m pytest -q -x tests/python/test_gpu.py -k "masked" 2>&1 | tail -n 5 | tee $OUT/pytest-c.log
echo "done at ${SECONDS}s"
