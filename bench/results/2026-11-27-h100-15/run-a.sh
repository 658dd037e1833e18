# Session j, run 1: the row-major FP32 epilogue for odd-multiple-of-8 tiles
# (QG_D_ROWS) and psum's 256x128 tile with row skipping (change.patch) against
# the tree without them, A B A B beside DeepGEMM (bench/explore.py), on the
# weight-gradient, k-grouped and masked-psum 32 x ~192 rows; then the new tree
# with the 1D1D kinds' 128-row tile width forced (exp-bn.patch) to 136 / 152.
set -u
R=bench/results/2026-11-27-h100-15
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH" QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_PRINT_CONFIG=1
ROWS="wgrad k-grouped masked-psum:32x192x*"
ext() { python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
log=$OUT/explore-a.log
run1() { timeout 150 python3 bench/explore.py "$@" 2>&1 | grep -v -i warn | tee -a $log; }
ext; run1 new $ROWS
git apply -R $R/change.patch && ext; run1 old $ROWS
git apply $R/change.patch && ext; run1 new2 $ROWS
git apply -R $R/change.patch && ext; run1 old2 $ROWS
git apply $R/change.patch
git apply $R/exp-bn.patch && ext
QGEMM_EXP_BN=136 run1 bn136 wgrad k-grouped
QGEMM_EXP_BN=152 run1 bn152 wgrad k-grouped
git apply -R $R/exp-bn.patch
