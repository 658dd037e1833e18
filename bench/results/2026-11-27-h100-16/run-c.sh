# Session k, run 3 (one GPU): the tree to land (12ac368 + psum at N 4096 rated
# 128x192 A): what run 1's time limit left of the C GPU tests (gpu_forced_configs
# on; gpu_dense_grid and gpu_flat_memory_cached_calls passed there), device-check's
# memcheck / racecheck / synccheck, the Python suite and DeepGEMM's SM90 suite
# through the alias, in three lanes at once (correctness only, nothing timed);
# then, alone, the peers table's psum rows beside DeepGEMM.
set -u
W=/tmp/w; rm -rf $W; mkdir -p $W
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L | tee $W/machine.txt; date -u >> $W/machine.txt
(bash .peers/build.sh > $W/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > $W/build.log 2>&1 || tail -30 $W/build.log
python3 python/setup.py build_ext --inplace > $W/ext.log 2>&1 || tail $W/ext.log
echo "setup done at ${SECONDS}s"
( for f in gpu_forced gpu_grouped gpu_masked gpu_pdl gpu_reference gpu_split_k gpu_hostile gpu_invalid; do
    timeout 200 build/qgemm_tests $f >> $W/gpu-tests.log 2>&1; echo "$f rc=$? at ${SECONDS}s" >> $W/lanes.txt
  done ) &
( OUT=$W/s STEP_TIMEOUT=400 bash bench/device-check.sh --only sanitize > $W/s.out 2>&1
  echo "sanitize rc=$? at ${SECONDS}s" >> $W/lanes.txt ) &
( PYTHONPATH=python timeout 200 python3 -m pytest -q -rs tests/python > $W/python.log 2>&1
  echo "python rc=$? at ${SECONDS}s" >> $W/lanes.txt
  while [ ! -f /tmp/dg.done ]; do sleep 2; done
  PYTHONPATH=python timeout 200 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $W > $W/suite.log 2>&1
  echo "suite rc=$? at ${SECONDS}s" >> $W/lanes.txt ) &
wait
cat $W/lanes.txt; cat $W/s/summary.txt
grep -E "passed, .* failed|^\[ FAIL" $W/gpu-tests.log; tail -n 2 $W/python.log
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $W/s/sanitizer.log | sort | uniq -c
grep -E "suite through|FAIL" $W/suite.log | cut -c1-200 | tail -4
source .peers/env.sh
PYTHONPATH="python:$PYTHONPATH" timeout 150 python3 bench/peers.py --filter 'psum' --warm-jobs 14 --out $W/p > $W/peers.log 2>&1
echo "peers rc=$? at ${SECONDS}s"; grep -A 12 "^geomean" $W/peers.log | grep psum
cp $W/p/peers.txt $OUT/peers-psum.txt 2>/dev/null
tar czf $OUT/logs.tgz -C $W --exclude='*.so' . ; ls -la $OUT
