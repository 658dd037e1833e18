# Session m, run 1 (one GPU): do the waiting warps that are not on the
# critical path take issue slots from the math warps? The SFB warp waits a
# whole tile on sfb_empty, spinning on try_wait; sfb-sleep.patch gives its
# try_wait a suspend-time hint (ptxas: NANOSLEEP.SYNCS), all-sleep.patch the
# TMA producer's empty wait as well. The M = 4096 dense rows beside
# DeepGEMM, base / sfb / all / base / sfb, each tree in its own process.
set -u
R=bench/results/2026-11-27-h100-18
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
build() { make -j16 build/libqgemm.a > /tmp/make.log 2>&1 || tail /tmp/make.log; python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log; }
# (the device copy's git metadata is stale: patches are applied and reversed, never checked out)
cur=base
tree() { [ $cur = base ] || git apply -R $R/$cur.patch; [ "$1" = base ] || git apply $R/$1.patch; cur=$1; build; }
tree base
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
run1() { timeout 100 python3 bench/explore.py --warm-jobs 8 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-a.log; }
first=1
for v in base sfb-sleep all-sleep base sfb-sleep; do
  [ $first = 1 ] || tree $v; first=0
  run1 $v m4096
  echo "$v at ${SECONDS}s"
done
[ $cur = base ] || git apply -R $R/$cur.patch
echo "done at ${SECONDS}s"
