# Session l, run 2 (one GPU): (1) the SASS of the weight gradient's 128x136
# kernel for 2112x4096x7168, chunked FP32 D (the choice) and row-major (the
# plan's K bound lifted), both from the same PTX main loop (tmp_sass/, built
# here from the JIT's PTX: ptxas -arch=sm_90a -O3); (2) the ncu pair of issue
# 25 on 4096x7168x16384 (both libraries); (3) sustained 10 s loops on
# 4096x4096x7168, twice.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
CU=${CUDA_HOME:-/usr/local/cuda}
for v in chunk rows; do $CU/bin/cuobjdump -sass tmp_sass/$v.cubin > /tmp/$v.sass 2>&1 || $CU/bin/nvdisasm tmp_sass/$v.cubin > /tmp/$v.sass 2>&1; wc -l /tmp/$v.sass; done
tar czf $OUT/sass.tgz -C /tmp chunk.sass rows.sass
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
echo "=== dense 4096x7168x16384" > $OUT/ncu-pair.log
timeout 200 ncu --clock-control none -k regex:'qg_fp8|sm90' -s 2 -c 2 --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats \
    --section SchedulerStats --section LaunchStats \
    python3 bench/results/2026-11-25-h200-10/ncu-pair.py dense 4096x7168x16384 >> $OUT/ncu-pair.log 2>&1
echo "ncu rc=$?"; grep -E "Duration|SM Busy|Executed Instructions  |Issue Slots Busy|sm90_|qg_fp8" $OUT/ncu-pair.log | cut -c1-110
timeout 150 python3 bench/peers.py --sustained 10 --sustained-reps 2 --shape 4096x4096x7168 --out $OUT/sus 2>&1 | grep -i -A3 sustained | tee $OUT/sustained.log
ls $OUT/sus 2>/dev/null
echo "done at ${SECONDS}s"
