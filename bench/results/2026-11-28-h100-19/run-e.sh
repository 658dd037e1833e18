# Session n, run 5 (one GPU): the tree to land (480aa2c + the wgrad tile
# test): the training GPU tests of the Python package (every forced 1D1D
# tile, 128x136 row-major now unrolled, 128x128 A), the C suite's forced
# configurations, then the whole peers table with the host rows.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /tmp/make.log 2>&1 || tail /tmp/make.log
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
export PYTHONPATH="python:${PYTHONPATH:-}"
timeout 150 python3 -m pytest -q tests/python/test_training.py 2>&1 | tail -n 4 | tee $OUT/pytest-e.log
timeout 100 build/qgemm_tests gpu_forced_configs > $OUT/tests-e.log 2>&1; echo "qgemm_tests rc=$? at ${SECONDS}s"; tail -n 2 $OUT/tests-e.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
timeout $((585 - SECONDS)) python3 bench/peers.py --warm-jobs 14 --host --qgemm-cli build/qgemm --out $OUT > $OUT/peers.log 2>&1; echo "peers rc=$? at ${SECONDS}s"
grep -A 14 "^geomean" $OUT/peers.txt | head -16; grep -A 11 "^host overhead" $OUT/peers.txt | tail -9
