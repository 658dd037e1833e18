# Session n, run 4 (one GPU): the 1D1D 128x136 tile with its column scales
# read while promoting (as the wider tiles do) instead of held in registers
# from before the wgmma, which frees the registers to unroll its K loop
# (rolled until now: unrolled it spilled at 232 math registers). Base /
# late-u4.patch / late-u2.patch, twice, beside DeepGEMM, on every row whose
# heuristic tile is 128x136. Patches applied with git apply and reverted.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
R=bench/results/2026-11-28-h200-15
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /tmp/make.log 2>&1 || tail /tmp/make.log
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:${PYTHONPATH:-}"
echo "build done at ${SECONDS}s"
W="wgrad:2112x4096x7168 wgrad:24576x4096x1536 wgrad:7168x4096x2048 k-grouped:8x4096x7168x4096 k-grouped:16x4096x7168x2048 k-grouped:16x7168x2048x2048"
r() { timeout 80 python3 bench/explore.py --warm-jobs 8 "$@" $W 2>&1 | grep -v -i warn | tee -a $OUT/explore-d.log; }
for rep in 1 2; do
  r base$rep
  git apply $R/late-u4.patch && make -j16 build/libqgemm.a > /dev/null 2>&1 && python3 python/setup.py build_ext --inplace > /dev/null 2>&1
  r lateu4-$rep
  git apply -R $R/late-u4.patch && git apply $R/late-u2.patch && make -j16 build/libqgemm.a > /dev/null 2>&1 && python3 python/setup.py build_ext --inplace > /dev/null 2>&1
  r lateu2-$rep
  git apply -R $R/late-u2.patch && make -j16 build/libqgemm.a > /dev/null 2>&1 && python3 python/setup.py build_ext --inplace > /dev/null 2>&1
  echo "rep $rep at ${SECONDS}s"
done
git diff --stat
echo "done at ${SECONDS}s"
