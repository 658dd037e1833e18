# Session l, run 5 (one GPU): the 1D1D K loop unrolled by 4 (DeepGEMM
# unrolls its 1D1D loop by its stage count), but at 128x136, which spills so
# (unroll.patch). Beside DeepGEMM, the heuristic's choices on every wgrad and
# k-grouped row, base / unrolled / base / unrolled, each tree in its own
# process; and 2112x4096x7168 as 128x128 on both.
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
run1() { timeout 120 python3 bench/explore.py --warm-jobs 8 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-e.log; }
for rep in 1 2; do
  run1 base$rep wgrad k-grouped
  [ $rep = 1 ] && run1 base-128x128-$rep --config block_m=128 --config block_n=128 wgrad:2112x4096x7168
  git apply $R/unroll.patch && build
  run1 unroll$rep wgrad k-grouped
  [ $rep = 1 ] && run1 unroll-128x128-$rep --config block_m=128 --config block_n=128 wgrad:2112x4096x7168
  git apply -R $R/unroll.patch && build
  echo "rep $rep at ${SECONDS}s"
done
echo "done at ${SECONDS}s"
