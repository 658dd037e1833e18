# Fourteenth session, run 2 (2026-11-22): the contiguous layout with few rows
# per expert. h100-14's 32 experts x 256 rows ran at 0.73-0.75x of dense
# qgemm at the same total M (which reads one B, not 32) and 1.51-1.59x of the
# cuBLASLt loop, at 978 / 936 TFLOPS against 1110 / 908 for the masked 8x256
# (one 256x128 m-block per group). Which tile serves 256 / 512 rows per expert?
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
b() { echo "== $*" >> $E; timeout 200 build/qgemm bench --runs 30 --no-cublas "$@" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+ |rror" | grep -vE " (compiled|disk|memory) " >> $E; }
S="--shape 1x4096x7168 --shape 1x7168x2048"
for gm in 32,256 16,512; do
  b --grouped-contiguous $gm $S
  for c in 128,128,0,a 128,128,0,none 128,256,0,a 128,160,0,none 128,192,0,none 128,96,0,a; do
    b --grouped-contiguous $gm $S --config $c
  done
done
b --grouped-masked 32,256 $S
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
