# Session l, run 4 (one GPU): the 1D1D promotion's row scales plus +0 from
# the first sum (sa-dep.patch), so that ptxas cannot compute the scale
# products before the wgmma is issued (run 3's form, zero-dep.patch, made the
# products 3-operand FFMAs and slowed the chunked kernel). Beside DeepGEMM,
# each tree in its own process: the heuristic's choices on every wgrad and
# k-grouped row, and 128x136 forced (chunked D; row-major with
# rows-any-k.patch) on the four long-K wgrad rows: sa, sa+rows, old, old+rows
# is run 3's), then again.
set -u
R=bench/results/2026-11-27-h100-17
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
build() { make -j16 build/libqgemm.a > /tmp/make.log 2>&1 || tail /tmp/make.log; python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
git apply $R/sa-dep.patch && build
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
LONG='wgrad:2112x4096x7168 wgrad:7168x4096x16384 wgrad:4096x4096x7168 wgrad:7168x4096x2048'
run1() { timeout 120 python3 bench/explore.py --warm-jobs 8 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-d.log; }
f136="--config block_m=128 --config block_n=136"
for rep in 1 2; do
  run1 sa-heur$rep wgrad k-grouped
  run1 sa-chunk$rep $f136 $LONG
  git apply $R/rows-any-k.patch && build; run1 sa-rows$rep $f136 $LONG
  git apply -R $R/rows-any-k.patch; git apply -R $R/sa-dep.patch && build
  run1 old-heur$rep wgrad k-grouped
  [ $rep = 1 ] && run1 old-chunk$rep $f136 $LONG
  git apply $R/sa-dep.patch && build
  echo "rep $rep at ${SECONDS}s"; [ $SECONDS -gt 330 ] && break
done
echo "done at ${SECONDS}s"
