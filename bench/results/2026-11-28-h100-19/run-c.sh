# Session n, run 3 (one GPU): the weight gradient with multicast (DeepGEMM runs
# its 128x136 wgrad tiles with B multicast; run 1 could not force one without a
# tile): 128x128 with B or A multicast against the heuristic, twice, on the
# rows whose block counts let qgemm pair CTAs (M = 2112 has 17 m-blocks of
# 128: no B pairs; 31 n-blocks of 136: no A pairs; 128x128 A there).
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /tmp/make.log 2>&1 || tail /tmp/make.log
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:${PYTHONPATH:-}"
echo "build done at ${SECONDS}s"
r() { timeout 70 python3 bench/explore.py --warm-jobs 8 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-c.log; }
W="wgrad:7168x4096x16384 wgrad:4096x4096x7168 wgrad:24576x4096x1536"
F="--config block_m=128 --config block_n=128"
for rep in 1 2; do
  r heur$rep $W wgrad:2112x4096x7168
  r b128$rep $F --config multicast=b $W
  r a128$rep $F --config multicast=a $W wgrad:2112x4096x7168
  echo "rep $rep at ${SECONDS}s"
done
echo "done at ${SECONDS}s"
