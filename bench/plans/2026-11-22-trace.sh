# Tenth session, run 3 (2026-11-22): where a small GEMM's fixed ~4 us goes.
# Temporary hooks (QGEMM_X_FLAGS, bench/results/2026-11-22-explore10/trace.patch):
#   bit 1: each CTA of a dense GEMM records clock64 at kernel entry (t0),
#          after the barrier init (t1, producer), first and last TMA issue
#          (t2, t3), first full stage (t4, math thread 0), end of the main
#          loop (t5), TMA store issued (t6) and the final bulk wait (t7), plus
#          globaltimer at entry and exit; the host prints min/median/max.
#   bit 2: the final wait is cp.async.bulk.wait_group.read (smem read done)
#          instead of the full completion of the D store.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
for s in 64x2112x128 64x2112x7168 64x4096x7168 128x7168x2048 4096x7168x2048; do
  echo "== trace $s" >> $E
  QGEMM_X_FLAGS=1 timeout 100 build/qgemm bench --no-cublas --runs 20 --warmup 3 --shape $s 2>&1 | grep XTRACE | tail -4 >> $E
done
b() { echo "== $*" >> $E; timeout 150 build/qgemm bench --runs 30 "$@" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror|geometric" | grep -vE " (compiled|disk|memory) " >> $E; }
S="--shape 64x2112x128 --shape 64x2112x1792 --shape 64x2112x7168 --shape 64x24576x1536 --shape 64x32768x512 --shape 64x7168x16384 --shape 64x4096x7168 --shape 64x7168x2048 --shape 128x2112x7168 --shape 128x24576x1536 --shape 128x32768x512 --shape 128x7168x16384 --shape 128x4096x7168 --shape 128x7168x2048 --shape 4096x7168x2048"
for round in 1 2; do
  for f in 0 2; do echo "flags $f" >> $E; QGEMM_X_FLAGS=$f b $S; done
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
