# Fourteenth session, run 1 (2026-11-22): wide 128-row tiles (two n-parts in
# one accumulator set) for the masked layout, which the config refuses today
# (QG_WIDE_MASKED=1, temporary, lets them through; they compile without
# spills at 176..224 columns). At 1024 rows x N 7168 the 256x128 tile leaves
# the second wave 92 of 132 CTAs full (224 tiles); 128x224 gives 256 tiles
# (132 + 124). Then decode-like masked tables beside the per-group cuBLASLt
# loop (many groups, fewer rows), for the closing note on #5's target.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
b() { echo "== $*" >> $E; QG_WIDE_MASKED=1 timeout 200 build/qgemm bench --runs 30 "$@" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+ |rror|speedup" | grep -vE " (compiled|disk|memory) " >> $E; }
for round in 1 2; do
  for gm in 1,1024 2,512; do
    b --no-cublas --grouped-masked $gm --shape 1024x7168x2048
    for c in 128,224,0,none 128,192,0,none 128,176,0,none 128,224,0,a 128,128,0,a; do
      b --no-cublas --grouped-masked $gm --shape 1024x7168x2048 --config $c
    done
  done
  b --no-cublas --shape 1024x7168x2048
  b --no-cublas --shape 1024x7168x2048 --config 128,224,0,none
done
for gm in 8,256 16,128 32,64 32,128 32,192; do
  b --grouped-masked $gm --shape 1024x4096x7168 --shape 1024x7168x2048
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
