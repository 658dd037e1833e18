# Session m, run 6 (one GPU): psum groups of ~1024 rows and more as 256x128
# with A multicast (the psum kernel's 256-row tile skips the m64 tiles past a
# group's end, as the masked one): every contiguous-psum row and the masked
# layout's 6 x ~1024 rows beside DeepGEMM, the heuristic's choice (128x192 A)
# and 256x128 A forced, twice.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 build/libqgemm.a > /tmp/make.log 2>&1 || tail /tmp/make.log
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
r() { timeout 130 python3 bench/explore.py --warm-jobs 8 "$@" 2>&1 | grep -v -i warn | tee -a $OUT/explore-f.log; }
for rep in 1 2; do
  r heur$rep contiguous-psum 'masked-psum:6x1024x*'
  r m256a$rep --config block_m=256 --config block_n=128 --config multicast=a contiguous-psum 'masked-psum:6x1024x*'
  echo "rep $rep at ${SECONDS}s"
done
echo "done at ${SECONDS}s"
