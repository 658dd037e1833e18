# Session m, run 7 (one GPU, nothing else running): the tree to land (psum and
# masked groups of ~1024 rows and more as 256x128 A): the psum and masked GPU
# tests of the Python package, then the whole peers table with the host rows
# (the README's table).
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
export PYTHONPATH="python:${PYTHONPATH:-}"
timeout 150 python3 -m pytest -q tests/python/test_training.py tests/python/test_gpu.py -k "psum or masked" 2>&1 | tail -n 4 | tee $OUT/pytest-h.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
timeout 400 python3 bench/peers.py --warm-jobs 14 --host --qgemm-cli build/qgemm --out $OUT > $OUT/peers.log 2>&1; echo "peers rc=$? at ${SECONDS}s"
grep -A 14 "^geomean" $OUT/peers.log | head -16; grep -A 11 "^host overhead" $OUT/peers.txt
