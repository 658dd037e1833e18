# Session i, run 7: FP32 D (weight gradient, k-grouped) stored as whole tiles
# again (fp32-whole.patch) against per warpgroup (395e778), A B A B beside
# DeepGEMM (bench/explore.py), on the wgrad and k-grouped rows.
set -u
R=bench/results/2026-11-25-h200-14
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH" QGEMM_CACHE_DIR=/tmp/qgemm-cache
ROWS="wgrad k-grouped"
ext() { python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
log=$OUT/explore-g.log
run() { timeout 120 python3 bench/explore.py "$1" $ROWS 2>&1 | grep -v -i warn | tee -a $log; }
ext; run whole
git apply -R $R/fp32-whole.patch && ext; run perwg
git apply $R/fp32-whole.patch && ext; run whole2
git apply -R $R/fp32-whole.patch && ext; run perwg2
git apply $R/fp32-whole.patch
