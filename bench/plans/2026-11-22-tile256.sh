# Twelfth session, run 1 (2026-11-22): 256-row tiles where a group has 256 rows.
# The heuristic keeps block_m <= 128 for problems of at most 256 rows per group
# (small problems: fewest waves first). Masked 4x256 then runs 128x160 in 3
# waves (N 7168) or 128x128 in 2 (N 4096), while 256x128 would take 2 and 1.
# Dense M = 256 (one group) for the same question. qgemm alone, median of 20.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
git log -1 --format='commit %h %s' >> $E 2>/dev/null
b() { echo "== $*" >> $E; timeout 200 build/qgemm bench --runs 20 "$@" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror|speedup" | grep -vE " (compiled|disk|memory) " >> $E; }
D="--shape 256x2112x7168 --shape 256x24576x1536 --shape 256x32768x512 --shape 256x7168x16384 --shape 256x4096x7168 --shape 256x7168x2048 --shape 192x7168x2048 --shape 192x4096x7168"
for round in 1 2; do
  b --no-cublas $D
  b --no-cublas --config 256,64,0,none $D
  b --no-cublas --config 256,128,0,none $D
  b --no-cublas --grouped
  b --no-cublas --grouped --config 256,128,0,none
  b --no-cublas --grouped --config 256,80,0,none
done
# the same with cuBLASLt beside, for the ratio
b --grouped --config 256,128,0,none
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
