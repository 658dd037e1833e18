# Session j, run 2: DeepGEMM's extension segfaults in this session's build (its
# JIT, on the first call), so qgemm alone, A B A B across the two trees
# (bench/explore.py --no-deepgemm): the row-major FP32 epilogue for odd
# multiples of 8 (QG_D_ROWS) and psum's 256x128 tile with row skipping
# (change.patch) against the tree without them, on the weight-gradient,
# k-grouped and masked-psum 32 x ~192 rows; then the new tree with the 1D1D
# kinds' 128-row tile width forced (exp-bn.patch) to 128 / 136 / 152 / 160.
set -u
R=bench/results/2026-11-27-h100-15
export PYTHONPATH="python:${PYTHONPATH:-}" QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_PRINT_CONFIG=1
ROWS="wgrad k-grouped masked-psum:32x192x*"
ext() { python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
log=$OUT/explore-b.log
run1() { timeout 150 python3 bench/explore.py --no-deepgemm "$@" 2>&1 | grep -v -i warn | tee -a $log; }
ext; run1 new $ROWS
git apply -R $R/change.patch && ext; run1 old $ROWS
git apply $R/change.patch && ext; run1 new2 $ROWS
git apply -R $R/change.patch && ext; run1 old2 $ROWS
git apply $R/change.patch
git apply $R/exp-bn.patch && ext
for bn in 128 136 152 160; do QGEMM_EXP_BN=$bn run1 bn$bn wgrad k-grouped; done
git apply -R $R/exp-bn.patch
