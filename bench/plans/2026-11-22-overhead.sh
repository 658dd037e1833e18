# Tenth session, run 2 (2026-11-22): the fixed cost of a small-M GEMM.
# Run 1 fitted the memory-bound rows to about 5.4 us plus B at 3.06 TB/s.
# (1) bench rows with tiny K (one CTA and one K block; 132 CTAs and one or
#     four K blocks) against cuBLASLt: the event-timed cost of a launch;
# (2) Nsight Compute's gpu__time_duration of both libraries' kernels at
#     64x2112x7168 and 64x4096x7168 (clock not locked, caches flushed by ncu):
#     the kernel's own duration, without the launch gap the events include.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
b() { echo "== $*" >> $E; timeout 100 build/qgemm bench --runs 30 "$@" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror" | grep -vE " (compiled|disk|memory) " >> $E; }
b --shape 64x128x128 --shape 64x2112x128 --shape 64x2112x512 --shape 64x2112x1792 --shape 64x2112x7168 --shape 64x4096x7168
b --shape 64x128x128 --shape 64x2112x128 --shape 64x2112x512 --shape 64x2112x1792 --shape 64x2112x7168 --shape 64x4096x7168
N=$OUT/ncu.txt
for s in 64x2112x7168 64x4096x7168 64x2112x128; do
  echo "== ncu $s" >> $N
  timeout 150 ncu --clock-control none --cache-control all --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
     -c 120 build/qgemm bench --shape $s --runs 20 --warmup 3 2>&1 \
     | awk '/^  [a-zA-Z_].*\(/{name=substr($1,1,48)} /gpu__time_duration/{d=$NF} /per_second/{print name, d, $NF}' >> $N
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
