# Session j, run 3: the row-major FP32 epilogue (QG_D_ROWS) stored per
# warpgroup (the tree) or as whole tiles (rows-whole.patch), at the 1D1D
# kinds' 128-row tile widths 136 and 120 (exp-bn.patch), qgemm alone
# (DeepGEMM's extension segfaults in this session's build), A B A B.
set -u
R=bench/results/2026-11-27-h100-15
export PYTHONPATH="python:${PYTHONPATH:-}" QGEMM_CACHE_DIR=/tmp/qgemm-cache
ext() { python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
log=$OUT/explore-c.log
run1() { timeout 120 python3 bench/explore.py --no-deepgemm "$@" 2>&1 | grep -v -i warn | tee -a $log; }
git apply $R/exp-bn.patch && ext
for bn in 136 120; do QGEMM_EXP_BN=$bn run1 perwg$bn wgrad k-grouped; done
git apply $R/rows-whole.patch && ext
for bn in 136 120; do QGEMM_EXP_BN=$bn run1 whole$bn wgrad k-grouped; done
git apply -R $R/rows-whole.patch && ext
QGEMM_EXP_BN=136 run1 perwg136b wgrad k-grouped
git apply $R/rows-whole.patch && ext
QGEMM_EXP_BN=136 run1 whole136b wgrad k-grouped
git apply -R $R/rows-whole.patch
git apply -R $R/exp-bn.patch
