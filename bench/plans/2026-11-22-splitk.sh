# Tenth session, run 4 (2026-11-22): split-K over a 2-CTA cluster, first GPU
# run: the split-K tests, the forced sweep (which now includes split-K), the
# quick check, then the small-M rows against cuBLASLt and each split row
# against the tile the heuristic chose before (--config, qgemm alone).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
timeout 200 build/qgemm_tests gpu_split > $OUT/tests.log 2>&1
timeout 200 build/qgemm_tests gpu_forced >> $OUT/tests.log 2>&1
timeout 100 build/qgemm check --quick >> $OUT/tests.log 2>&1
grep -E "PASS|FAIL|split|forced|ok  |passed" $OUT/tests.log | head -40 >> $E
b() { echo "== $*" >> $E; timeout 150 build/qgemm bench --runs 30 "$@" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror|geometric" | grep -vE " (compiled|disk|memory) " >> $E; }
S="--shape 64x2112x7168 --shape 128x2112x7168 --shape 128x4096x7168 --shape 64x4096x7168 --shape 64x7168x16384 --shape 128x7168x16384"
for round in 1 2; do
  b $S
  echo "== old tiles, qgemm alone" >> $E
  for c in "64,16,0,none --shape 64x2112x7168" "64,32,0,none --shape 128x2112x7168" "128,32,0,none --shape 128x4096x7168" "128,64,0,k2 --shape 128x2112x7168" "64,64,0,k2 --shape 64x2112x7168" "64,112,0,k2 --shape 64x7168x16384" "128,112,0,k2 --shape 128x7168x16384"; do
    timeout 60 build/qgemm bench --no-cublas --runs 30 --config $c 2>&1 | grep -E "^[0-9]+x[0-9]+x[0-9]+ +[0-9]" | grep -vE " (compiled|disk|memory) " >> $E
  done
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
