# Session n, run 1 (one GPU): (1) the host rows of the peers bench on the tree
# with the Python shortcut (issue 26: first GPU figures of ea92029);
# (2) the weight gradient's multicast beside DeepGEMM (DeepGEMM runs its
# 128x136 wgrad tiles with B multicast): heuristic / multicast=b / multicast=a,
# twice; (3) per-instruction stall sampling (ncu SourceCounters) of both
# kernels at 4096x7168x16384 (issue 25; DeepGEMM's listing stays out of the tree).
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /tmp/make.log 2>&1 || tail /tmp/make.log
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
echo "build done at ${SECONDS}s"
timeout 150 python3 bench/peers.py --host-only --qgemm-cli build/qgemm --out $OUT > $OUT/peers-host.log 2>&1; echo "host rc=$? at ${SECONDS}s"
grep -A 11 "^host overhead" $OUT/peers.txt
R=bench/results/2026-11-25-h200-10
timeout 150 ncu --clock-control none -k regex:'qg_fp8|sm90' -s 2 -c 2 --section SpeedOfLight \
  --section WarpStateStats --section SourceCounters --section InstructionStats -o /tmp/src \
  python3 $R/ncu-pair.py dense 4096x7168x16384 > $OUT/ncu-src.log 2>&1; echo "ncu rc=$? at ${SECONDS}s"
for k in qg_fp8 sm90; do
  ncu -i /tmp/src.ncu-rep -k regex:$k --page source --csv --print-source sass > /tmp/src-$k.csv 2>&1
  gzip -c /tmp/src-$k.csv > $OUT/src-$k.csv.gz
done
ncu -i /tmp/src.ncu-rep --page details >> $OUT/ncu-src.log 2>&1
grep -E "Duration|SM Busy|Executed Instructions  " $OUT/ncu-src.log
r() { timeout 80 python3 bench/explore.py --warm-jobs 8 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-a.log; }
W="wgrad:2112x4096x7168 wgrad:7168x4096x16384 wgrad:4096x4096x7168 wgrad:24576x4096x1536"
for rep in 1 2; do
  r heur$rep $W
  r mcb$rep --config multicast=b $W
  r mca$rep --config multicast=a $W
  echo "rep $rep at ${SECONDS}s"
done
echo "done at ${SECONDS}s"
