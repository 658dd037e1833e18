# Session i, run 3: rows past the end of M / of a group skipped per m64 tile
# (row-skip.patch) against the tree without it (per-warpgroup epilogue and
# the 256x128 unroll rule in both), A B A B, each process beside DeepGEMM
# (bench/explore.py), on the layouts with partial tiles.
set -u
R=bench/results/2026-11-25-h200-14
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH" QGEMM_CACHE_DIR=/tmp/qgemm-cache
ROWS="masked masked-psum:6x1024x6144x7168 masked-psum:32x192x6144x7168 masked-psum:32x192x4096x4096
 contiguous-psum:4x8192x6144x7168 contiguous:4x8192x6144x7168 dense:4096x7168x2112"
ext() { python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
log=$OUT/explore-c.log
run() { timeout 130 python3 bench/explore.py "$1" $ROWS 2>&1 | grep -v -i warn | tee -a $log; }
ext; run base
git apply $R/row-skip.patch && ext; run skip
git apply -R $R/row-skip.patch && ext; run base2
git apply $R/row-skip.patch && ext; run skip2
