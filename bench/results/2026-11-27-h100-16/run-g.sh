# Session k, run 7 (one H100): dense 64x2112x7168 (0.871 of DeepGEMM as 64x32
# split over a cluster) and its M = 1 / 128 neighbours, qgemm alone: the
# heuristic's choice, then 64x16, 64x32, 64x48 and 64x64 without split, twice.
set -u
export PYTHONPATH="python:${PYTHONPATH:-}" QGEMM_CACHE_DIR=/tmp/qgemm-cache
nvidia-smi -L
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
ROWS="dense:64x2112x7168 dense:1x2112x7168 dense:128x2112x7168"
run1() { timeout 100 python3 bench/explore.py --no-deepgemm --warm-jobs 3 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-g.log; }
for rep in 1 2; do
  run1 heur$rep $ROWS
  for bn in 16 32 48 64; do run1 n$bn-$rep --config block_m=64 --config block_n=$bn --config split_k=1 $ROWS; done
done
echo "done at ${SECONDS}s"
