# Tenth session, run 1 (2026-11-22): what would split-K buy at small M?
# A split-K by S of M x N x K on tile bm x bn gives each CTA a bm x bn tile
# over K / S. The same per-CTA work, without the reduction, is the GEMM
# M x (S N) x (K / S) on the same tile: the CTA count and the bytes of B
# streamed from DRAM are the same. qgemm alone, median of 20, two rounds.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
b() { echo "== $*" >> $E; timeout 100 build/qgemm bench --no-cublas --runs 20 "$@" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror" | grep -vE " (compiled|disk|memory) " >> $E; }
for round in 1 2; do
  b --shape 64x2112x7168 --shape 64x4096x7168 --shape 128x2112x7168 --shape 128x4096x7168 --shape 64x7168x16384 --shape 128x7168x16384
  b --config 64,32,0,none --shape 64x4224x3584
  b --config 64,64,0,none --shape 64x8448x1792 --shape 64x8192x3584
  b --config 64,128,0,none --shape 64x16384x1792 --shape 64x16896x896
  b --config 64,112,0,none --shape 64x14336x8192
  b --config 128,32,0,none --shape 128x4224x3584
  b --config 128,64,0,none --shape 128x8448x1792 --shape 128x8192x3584
  b --config 128,128,0,none --shape 128x16384x1792
  b --config 128,112,0,none --shape 128x14336x8192
  b --config 64,16,0,a --shape 64x2112x7168
  b --config 64,32,0,a --shape 64x4096x7168
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
