# Twelfth session, run 3 (2026-11-22): the masked 256x128 rule (config.c,
# masked_full_group) on masked problems beyond the bench's 4x256 rows: the
# heuristic's choice against what it chose before (128-row tiles), qgemm
# alone, median of 20, two rounds. `qgemm bench --grouped-masked G,M_max
# --shape 1xNxK`: G groups of M_max rows, all valid, expected_m = M_max.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
[ -x build/qgemm ] || make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
b() { echo "== $*" >> $E; timeout 100 build/qgemm bench --no-cublas --runs 20 "$@" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror" | grep -vE " (compiled|disk|memory) " >> $E; }
# G,M_max  N x K  the old choice
cases="8,256:4096x7168:128,128 8,256:7168x2048:128,160 32,192:4096x7168:128,160
32,192:7168x2048:128,160 4,200:4096x7168:128,128 4,200:7168x2048:128,160
2,256:7168x2048:128,112 16,256:4096x7168:128,160 16,256:7168x2048:128,160
4,160:7168x2048:128,160"
for round in 1 2; do
  for c in $cases; do
    g=${c%%:*}; rest=${c#*:}; nk=${rest%%:*}; old=${rest#*:}
    b --grouped-masked $g --shape 1x$nk
    b --grouped-masked $g --shape 1x$nk --config $old,0,none
  done
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
