# Session l, run 3 (one GPU): the weight gradient's 128x136 tile, chunked FP32
# D against row-major (rows-any-k.patch lifts the plan's K <= 4096 bound), on
# the kernel whose scale products wait for the wgmma (zero-dep.patch, in the
# tree) and on the previous kernel (zero-dep.patch reversed); beside
# DeepGEMM, 128x136 forced, each tree in its own process: new/chunk,
# new/rows, old/chunk, old/rows, then new/chunk and new/rows again; then the
# Python training tests on new/rows.
set -u
R=bench/results/2026-11-27-h100-17
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
build() { make -j16 build/libqgemm.a > /tmp/make.log 2>&1 || tail /tmp/make.log; python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
build
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
ROWS='wgrad:2112x4096x7168 wgrad:7168x4096x16384 wgrad:4096x4096x7168 wgrad:24576x4096x1536 k-grouped:4x4096x7168x8192 k-grouped:16x4096x7168x2048'
run1() { timeout 100 python3 bench/explore.py --warm-jobs 4 --config block_m=128 --config block_n=136 "$@" $ROWS 2>&1 | grep -v -i warn | tee -a $OUT/explore-c.log; }
run1 new-chunk1
git apply $R/rows-any-k.patch && build; run1 new-rows1
git apply -R $R/zero-dep.patch && build; run1 old-rows1
git apply -R $R/rows-any-k.patch && build; run1 old-chunk1
git apply $R/zero-dep.patch && build; echo "at ${SECONDS}s"
[ $SECONDS -lt 420 ] && run1 new-chunk2
git apply $R/rows-any-k.patch && build
[ $SECONDS -lt 470 ] && run1 new-rows2
left=$((570 - SECONDS)); [ $left -gt 40 ] && timeout $left python3 -m pytest -q -x tests/python/test_training.py > $OUT/python-c.log 2>&1; echo "test_training rc=$?"; tail -n 2 $OUT/python-c.log
git apply -R $R/rows-any-k.patch
echo "done at ${SECONDS}s"
