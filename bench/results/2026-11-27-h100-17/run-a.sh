# Session l, run 1 (one GPU): the split-K choice by the device's DRAM bandwidth.
# qgemm info (the dram_gbps the driver reports), qgemm check (its split-K case
# is now 64x1536x7296), gpu_split_k; then the rows whose choice changes on an
# H100, beside DeepGEMM, each twice: the heuristic's new choice, and the old
# one forced (split_k 2 with its block_n), one process per configuration.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L; nvidia-smi --query-gpu=memory.total,clocks.max.memory --format=csv
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
build/qgemm info | tee $OUT/info.log
timeout 120 build/qgemm check > $OUT/check.log 2>&1; echo "check rc=$?"; tail -n 2 $OUT/check.log
grep -E "1536x7296|2112x7296|576x7168" $OUT/check.log
timeout 150 build/qgemm_tests gpu_split_k > $OUT/gpu-split-k.log 2>&1; echo "gpu_split_k rc=$?"; tail -n 1 $OUT/gpu-split-k.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
run1() { timeout 100 python3 bench/explore.py --warm-jobs 4 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-a.log; }
N2112='dense:64x2112x7168 dense:1x2112x7168 dense:32x2048x8192 dense:64x1536x7168'
for rep in 1 2; do
  run1 heur$rep $N2112 dense:128x4096x16384 dense:128x3072x16384 dense:64x3072x16384
  run1 old-64x32s$rep --config block_m=64 --config block_n=32 --config split_k=2 $N2112
  run1 plain-64x16-$rep --config block_m=64 --config block_n=16 --config split_k=1 dense:64x1536x7168
  run1 old-64x128s$rep --config block_m=64 --config block_n=128 --config split_k=2 dense:128x4096x16384
  run1 old-64x96s$rep --config block_m=64 --config block_n=96 --config split_k=2 dense:128x3072x16384
  run1 old-64x48s$rep --config block_m=64 --config block_n=48 --config split_k=2 dense:64x3072x16384
done
echo "done at ${SECONDS}s"
