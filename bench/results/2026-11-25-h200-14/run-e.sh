# Session i, run 5: the peers table (with the host rows) and DeepGEMM's SM90
# suite through the alias, on 395e778.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
timeout 340 python3 bench/peers.py --warm-jobs 14 --host --qgemm-cli build/qgemm --out $OUT > $OUT/peers.log 2>&1; echo "peers rc=$?"; grep -A 14 "^geomean" $OUT/peers.log | head -16
timeout 130 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT > $OUT/suite.log 2>&1; echo "suite rc=$?"; grep -E "suite through|FAIL" $OUT/suite.log | cut -c1-200 | tail -5
