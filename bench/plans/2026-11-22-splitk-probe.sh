# Tenth session, run 5 (2026-11-22): why split-K ran slower than its
# simulation at 128x4096x7168 (19.3 us against 15.9 for the per-CTA work
# alone). Temporary hook QGEMM_X_FLAGS=4 drops the reduction (the partner
# sends nothing, CTA 0 waits for nothing; D is wrong, only timing counts).
# QGEMM_PRINT_CONFIG shows the cluster occupancy query's grid.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
q() { echo "== flags ${X:-0} $*" >> $E; QGEMM_X_FLAGS=${X:-0} QGEMM_PRINT_CONFIG=1 timeout 60 build/qgemm bench --no-cublas --runs 30 "$@" 2>&1 | grep -E "^[0-9]+x[0-9]+x[0-9]+ +[0-9]|occupancy" | grep -vE " (compiled|disk|memory) " >> $E; }
for round in 1 2; do
  for X in 0 4; do
    q --config 128,64,0,k2 --shape 128x4096x7168 --shape 128x2112x7168
    q --config 64,32,0,k2 --shape 64x2112x7168 --shape 64x4096x7168
    q --config 128,32,0,k2 --shape 128x2112x7168 --shape 128x4096x7168
  done
  X=0 q --config 128,64,0,none --shape 128x8192x3584 --shape 128x4224x3584
  X=0 q --config 64,32,0,none --shape 64x4224x3584
  X=0 q --config 128,32,0,none --shape 128x4224x3584
  X=0 q --config 128,64,0,a --shape 128x4096x7168
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
