# Session g, run 1: small-M / masked exploration (explore-h.py), an ncu pair of two
# dense rows (both libraries), and the host probe; one log each.
set -u
R=bench/results/2026-11-25-h200-12
(bash .peers/build.sh | tail -n 1; source .peers/env.sh) > $OUT/setup.log 2>&1
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log >> $OUT/setup.log
timeout 200 python3 $R/explore-h.py 2>&1 | grep -v -i warn | tee $OUT/explore-h.log | tail -3
M=$(ncu --query-metrics 2>/dev/null | awk '{print $1}' | grep -m1 '^sm__pipe_tensor_op_gmma_cycles_active$')
MET=${M:+--metrics $M.avg.pct_of_peak_sustained_active,$M.avg.pct_of_peak_sustained_elapsed}
echo "gmma metric: ${M:-none}" > $OUT/ncu-pair.log
for shape in 4096x1536x24576 4096x7168x16384; do
  echo "=== dense $shape" >> $OUT/ncu-pair.log
  timeout 150 ncu --clock-control none -k regex:'qg_fp8|sm90' -s 2 -c 2 --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section LaunchStats $MET \
    python3 bench/results/2026-11-25-h200-10/ncu-pair.py dense $shape >> $OUT/ncu-pair.log 2>&1
done
make -j16 build/libqgemm.a > /tmp/make.log 2>&1 || tail /tmp/make.log >> $OUT/setup.log
cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -I"${CUDA_HOME:-/usr/local/cuda}/include" \
   bench/host_probe.c build/libqgemm.a -ldl -lpthread -lm -o build/host_probe && build/host_probe > $OUT/host-probe.log 2>&1
tail -3 $OUT/ncu-pair.log
