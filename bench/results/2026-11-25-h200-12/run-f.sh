# Session g, run 6: gpu_dense_grid four times, each with a fresh (empty) kernel cache, as in
# run 4 where its one failure happened (370 kernels compiled on 16 threads just before the
# cases ran); run 5's repeat had a warm cache. One log.
set -u
make -j16 > /tmp/make.log 2>&1 || tail -5 /tmp/make.log
for i in 1 2 3 4; do
  export QGEMM_CACHE_DIR=/tmp/qgemm-cold-$i
  rm -rf $QGEMM_CACHE_DIR
  timeout 120 build/qgemm_tests gpu_dense_grid > /tmp/grid-$i.log 2>&1; echo "cold run $i rc=$?" | tee -a $OUT/gpu-dense-grid-cold.log
  grep -E "FAIL|compiled|cases" /tmp/grid-$i.log | tee -a $OUT/gpu-dense-grid-cold.log
done
