#!/usr/bin/env bash
# Exploration (2026-11-25 b): the promotion with a compile-time n_off, and
# plain 128x192 tiles, forced beside the heuristic's choice; qgemm alone,
# events after an L2 flush, median of 30. Not committed (results are).
set -u
make -j16 build/qgemm > $OUT/explore-build.log 2>&1 || { tail -30 $OUT/explore-build.log; exit 1; }
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
B="build/qgemm bench --no-cublas --runs 30 --seed 7"
run() { echo "=== $*"; timeout 120 $B "$@" 2>&1 | grep -E "^[0-9].*[0-9]+,[0-9]+,[0-9]+,|rror|refus|illegal" ; }
for s in 4096x2112x7168 4096x7168x16384 4096x1536x24576 4096x4096x7168 4096x24576x1536 4096x7168x2112; do
  run --shape $s
  for c in 128,192,0,none 128,192,0,a 128,192,0,b 256,96,0,none 128,96,0,a; do run --shape $s --config $c; done
done
for g in "--grouped-masked 6,4096,1024 --shape 4096x6144x7168" "--grouped-masked 32,256,192 --shape 256x6144x7168" \
         "--grouped-contiguous 4,8192 --shape 32768x6144x7168" "--grouped-contiguous 8,4096 --shape 32768x4096x4096" \
         "--grouped-masked 6,4096,1024 --shape 4096x4096x2048"; do
  run $g
  for c in 128,192,0,none 128,192,0,a 128,160,0,a 128,96,0,a; do run $g --config $c; done
done
