# Session i, run 1: the per-warpgroup epilogue (wg-epilogue.patch: each math
# warpgroup stores its own rows of D and syncs only itself) against the tree
# without it, A B A, each process timing DeepGEMM beside qgemm
# (bench/explore.py); then B multicast on the two 128x192 rows, new tree.
set -u
R=bench/results/2026-11-25-h200-14
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH" QGEMM_CACHE_DIR=/tmp/qgemm-cache
ROWS="m4096 contiguous:4x8192x6144x7168 contiguous:8x4096x6144x7168 contiguous:4x8192x4096x2048
 masked:6x1024x6144x7168 masked:6x1024x7168x3072 masked:6x1024x4096x4096 masked:6x1024x4096x2048
 masked:32x192x6144x7168 masked:32x192x7168x3072"
ext() { python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
log=$OUT/explore-a.log
ext
timeout 170 python3 bench/explore.py new $ROWS 2>&1 | grep -v -i warn | tee -a $log
git apply -R $R/wg-epilogue.patch && ext
timeout 170 python3 bench/explore.py old $ROWS 2>&1 | grep -v -i warn | tee -a $log
git apply $R/wg-epilogue.patch && ext
timeout 120 python3 bench/explore.py new2 $ROWS 2>&1 | grep -v -i warn | tee -a $log
timeout 60 python3 bench/explore.py newB --config multicast=b dense:4096x1536x24576 dense:4096x2112x7168 2>&1 | grep -v -i warn | tee -a $log
