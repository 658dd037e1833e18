# Session k, run 5 (one GPU): 128x136 (FP32 D row-major) rated 1.07 at a
# group's K of 1024..3072 (k136.patch, on 5a0b7dd): the Python training tests
# on the new choices; then the three rows whose choice changes (wgrad
# 7168x4096x2048 and 24576x4096x1536, k-grouped 16x7168x2048x2048) beside
# DeepGEMM, new / old (patch reversed) / new / old, each in its own process;
# then the weight-gradient and k-grouped rows of the peers table on the new tree.
set -u
R=bench/results/2026-11-27-h100-16
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
ext() { python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
ext
PYTHONPATH=python timeout 150 python3 -m pytest -q -rs tests/python/test_training.py > $OUT/python-e.log 2>&1; echo "test_training rc=$?"; tail -n 1 $OUT/python-e.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
ROWS='wgrad:7168x4096x2048 wgrad:24576x4096x1536 k-grouped:16x7168x2048x2048'
run1() { timeout 100 python3 bench/explore.py --warm-jobs 3 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-e.log; }
run1 new1 $ROWS
git apply -R $R/k136.patch && ext; run1 old1 $ROWS
git apply $R/k136.patch && ext; run1 new2 $ROWS
git apply -R $R/k136.patch && ext; run1 old2 $ROWS
git apply $R/k136.patch && ext
timeout 200 python3 bench/peers.py --filter 'wgrad|k-grouped' --warm-jobs 14 --out $OUT > $OUT/peers-e.log 2>&1; echo "peers rc=$?"
grep -A 12 "^geomean" $OUT/peers-e.log | grep -E "wgrad|k-grouped"; grep -E "^(wgrad|k-grouped) " $OUT/peers.txt | cut -c1-100
echo "done at ${SECONDS}s"
