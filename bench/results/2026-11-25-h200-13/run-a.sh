# Session h, run 1: the tile-order exploration (explore-i.py), ncu of the 64x64 tile at
# 128x4096x7168 beside DeepGEMM's (memory side), and SASS-level stall sampling of both
# kernels at 4096x1536x24576 (where qgemm runs fewer instructions in more cycles).
set -u
R=bench/results/2026-11-25-h200-13
(bash .peers/build.sh | tail -n 1; source .peers/env.sh) > $OUT/setup.log 2>&1
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log >> $OUT/setup.log
timeout 240 python3 $R/explore-i.py 2>&1 | grep -v -i warn | tee $OUT/explore-i.log | tail -3
NCU="ncu --clock-control none -k regex:qg_fp8|sm90 -s 2 -c 2"
MEM="--metrics dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,sm__cycles_active.avg,smsp__inst_executed.sum,gpu__time_duration.sum"
timeout 120 $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
  --section SchedulerStats --section LaunchStats $MEM python3 $R/ncu-force.py dense 128x4096x7168 \
  '{"block_m": 64, "block_n": 64, "multicast": "none"}' > $OUT/ncu-64.log 2>&1
timeout 150 $NCU --section SpeedOfLight --section WarpStateStats --section SourceCounters \
  --section InstructionStats -o /tmp/src python3 $R/ncu-force.py dense 4096x1536x24576 > $OUT/ncu-src.log 2>&1
for k in qg_fp8 sm90; do
  ncu -i /tmp/src.ncu-rep -k regex:$k --page source --csv --print-source sass > /tmp/src-$k.csv 2>&1 || \
  ncu -i /tmp/src.ncu-rep -k regex:$k --page source --csv > /tmp/src-$k.csv 2>&1
  gzip -c /tmp/src-$k.csv > $OUT/src-$k.csv.gz
  head -c 600 /tmp/src-$k.csv >> $OUT/ncu-src.log
done
ncu -i /tmp/src.ncu-rep --page details >> $OUT/ncu-src.log 2>&1
tail -3 $OUT/ncu-64.log
