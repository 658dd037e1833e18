# Tenth session, run 6 (2026-11-22): the split-K reduction through st.async
# (each 16-byte store completes bytes on CTA 0's barrier: no per-thread
# release fence) and one red_empty arrival per warp. Correctness first
# (split-K tests, quick check), then A/B against the probe without the
# reduction (QGEMM_X_FLAGS=4) and the plain tiles, qgemm alone.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
timeout 100 build/qgemm_tests gpu_split 2>&1 | grep -E "PASS|FAIL|split" >> $E
timeout 100 build/qgemm check --quick 2>&1 | tail -4 >> $E
q() { echo "== flags ${X:-0} $*" >> $E; QGEMM_X_FLAGS=${X:-0} timeout 60 build/qgemm bench --no-cublas --runs 30 "$@" 2>&1 | grep -E "^[0-9]+x[0-9]+x[0-9]+ +[0-9]" | grep -vE " (compiled|disk|memory) " >> $E; }
for round in 1 2; do
  for X in 0 4; do
    q --config 128,64,0,k2 --shape 128x4096x7168 --shape 128x2112x7168
    q --config 64,32,0,k2 --shape 64x2112x7168
    q --config 128,32,0,k2 --shape 128x2112x7168
    q --config 64,64,0,k2 --shape 64x2112x7168 --shape 64x4096x7168
  done
  X=0 q --shape 64x2112x7168 --shape 128x2112x7168 --shape 128x4096x7168 --config 64,16,0,none
  X=0 q --shape 128x2112x7168 --config 64,32,0,none
  X=0 q --shape 128x4096x7168 --config 128,32,0,none
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
