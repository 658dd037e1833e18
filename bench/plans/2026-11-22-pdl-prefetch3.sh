# Thirteenth session, run 5 (2026-11-22): the landed rule (PDL, dense, no
# split-K: about 6 MiB of B over the grid, 1 to 4 K blocks a CTA), against
# none (QGEMM_X_NOPREFETCH, temporary), in turn, twice: the default chain table
# and chains of larger GEMMs (M = 256 and 4096, where a GEMM is compute-bound).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
c() { echo "== chain, ${1:-prefetch} ${*:2}" >> $E; env $1 timeout 250 build/qgemm bench --chain 8 "${@:2}" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror" >> $E; }
L="--shape 256x7168x2048 --shape 256x4096x7168 --shape 4096x7168x2048 --shape 4096x4096x7168 --shape 4096x2112x7168 --shape 4096x32768x512"
for round in 1 2; do
  c QGEMM_X_NOPREFETCH=1; c QGEMM_X_PREFETCH_ON=1
  c QGEMM_X_NOPREFETCH=1 $L; c QGEMM_X_PREFETCH_ON=1 $L
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
