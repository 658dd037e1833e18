# Session h, run 3: the peers table with the host rows on the new heuristic, DeepGEMM's SM90
# suite through the alias, then explore-k.py (M = 100 and 256: the new small dense choice
# against the old one).
set -u
R=bench/results/2026-11-25-h200-13
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
timeout 330 python3 bench/peers.py --warm-jobs 14 --host --qgemm-cli build/qgemm --out $OUT > $OUT/peers.log 2>&1; echo "peers rc=$?"; grep -A 14 "^geomean" $OUT/peers.log | head -16
timeout 130 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT > $OUT/suite.log 2>&1; echo "suite rc=$?"; grep -E "suite through|FAIL" $OUT/suite.log | cut -c1-200 | tail -5
timeout 100 python3 $R/explore-k.py 2>&1 | grep -v -i warn | tee $OUT/explore-k.log
