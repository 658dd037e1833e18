# Session k, run 8 (one H100): the other dense rows the heuristic splits over a
# cluster (1x576x7168 as 64x16, 128x576x7168 as 64x32), qgemm alone: the
# heuristic's choice against 64x16 / 64x32 / 64x64 unsplit, twice.
set -u
export PYTHONPATH="python:${PYTHONPATH:-}" QGEMM_CACHE_DIR=/tmp/qgemm-cache
nvidia-smi -L
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
ROWS="dense:1x576x7168 dense:128x576x7168"
run1() { timeout 100 python3 bench/explore.py --no-deepgemm --warm-jobs 2 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-h.log; }
for rep in 1 2; do
  run1 heur$rep $ROWS
  for bn in 16 32 64; do run1 n$bn-$rep --config block_m=64 --config block_n=$bn --config split_k=1 $ROWS; done
done
echo "done at ${SECONDS}s"
