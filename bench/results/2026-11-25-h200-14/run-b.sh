# Session i, run 2: on the tree with the per-warpgroup epilogue, two more
# variants, each in its own process beside DeepGEMM (bench/explore.py):
# unroll8.patch (the 256x128 K loop unrolled by 8, as DeepGEMM's) and
# rul10.patch (ptxas --register-usage-level=10, DeepGEMM's flag); base, u8,
# rul, base again.
set -u
R=bench/results/2026-11-25-h200-14
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH" QGEMM_CACHE_DIR=/tmp/qgemm-cache
ROWS="m4096 contiguous:4x8192x6144x7168 masked:6x1024x6144x7168 masked:32x192x6144x7168"
ext() { python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
log=$OUT/explore-b.log
run() { timeout 150 python3 bench/explore.py "$1" $ROWS 2>&1 | grep -v -i warn | tee -a $log; }
ext; run base
git apply $R/unroll8.patch && ext; run u8; git apply -R $R/unroll8.patch
git apply $R/rul10.patch && ext; run rul; git apply -R $R/rul10.patch
ext; run base2
