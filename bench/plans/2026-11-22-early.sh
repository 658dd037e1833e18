# Thirteenth session, run 1 (2026-11-22): the first loads issued in the prologue.
# explore10's trace put the first TMA of a small GEMM ~1200 cycles after kernel
# entry, and the launch-floor probe (bench/probes/launch_floor.cu) shows an
# empty kernel with our launch shape costs 3.2 us event to event, a prologue
# with one DRAM read 3.9, our 1-K-block GEMM 5.4. QGEMM_X_EARLY=n (temporary)
# makes the TMA thread issue the first n K blocks of its first tile right after
# the barrier init, before __syncthreads and setmaxnreg (dense, no multicast).
# Correctness first (check --quick with early 4 and all), then qgemm alone,
# early 0 / 2 / 4 / all, two rounds, then one round beside cuBLASLt.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
for e in 4 64; do echo "== check --quick early $e" >> $E; QGEMM_X_EARLY=$e timeout 200 build/qgemm check --quick 2>&1 | tail -3 >> $E; done
b() { echo "== early $1: ${*:2}" >> $E; QGEMM_X_EARLY=$1 timeout 200 build/qgemm bench --runs 30 "${@:2}" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror|speedup" | grep -vE " (compiled|disk|memory) " >> $E; }
S="--shape 64x2112x128 --shape 64x2112x1792"
for m in 64 128; do for nk in 2112x7168 24576x1536 32768x512 7168x16384 4096x7168 7168x2048; do S="$S --shape ${m}x$nk"; done; done
for round in 1 2; do
  for e in 0 2 4 64; do b $e --no-cublas $S; done
done
b 0 $S
b 64 $S
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
