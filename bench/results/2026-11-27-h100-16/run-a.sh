# Session k, run 1 (two GPUs): main as it landed (12ac368). First, on both
# GPUs alone: device-check's multigpu step (issue 31: two threads on their own
# devices, the JIT cache filled by both, foreign pointers refused, the Python
# two-device tests, examples/ep_moe.py under torchrun on 2 ranks). Then, at
# once: GPU 0 runs every C GPU test, `qgemm check` and the Python suite (no
# timings there); GPU 1, alone, the peers table with host rows beside DeepGEMM
# and cuBLASLt. Logs under /tmp/w, returned as $OUT/logs.tgz.
set -u
W=/tmp/w; rm -rf $W; mkdir -p $W
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-12ac368}
nvidia-smi -L | tee $W/machine.txt; date -u >> $W/machine.txt
(bash .peers/build.sh > $W/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j32 > $W/build.log 2>&1 || tail -30 $W/build.log
python3 python/setup.py build_ext --inplace > $W/ext.log 2>&1 || tail $W/ext.log
echo "setup done at ${SECONDS}s"
OUT=$W/mg STEP_TIMEOUT=140 bash bench/device-check.sh --only multigpu > $W/mg.out 2>&1
echo "multigpu rc=$? at ${SECONDS}s"; tail -n 25 $W/mg.out; cp $W/mg/multi-gpu.json $OUT/ 2>/dev/null
( export CUDA_VISIBLE_DEVICES=0
  OUT=$W/t STEP_TIMEOUT=290 bash bench/device-check.sh --only tests,check > $W/t.out 2>&1
  echo "tests+check rc=$? at ${SECONDS}s" >> $W/lanes.txt ) &
( export CUDA_VISIBLE_DEVICES=0
  PYTHONPATH=python timeout 250 python3 -m pytest -q -rs tests/python > $W/python.log 2>&1
  echo "python rc=$? at ${SECONDS}s" >> $W/lanes.txt ) &
( export CUDA_VISIBLE_DEVICES=1
  while [ ! -f /tmp/dg.done ]; do sleep 2; done
  source .peers/env.sh
  PYTHONPATH="python:$PYTHONPATH" timeout 270 python3 bench/peers.py --warm-jobs 14 --host \
      --qgemm-cli build/qgemm --out $W/p > $W/peers.log 2>&1
  echo "peers rc=$? at ${SECONDS}s" >> $W/lanes.txt ) &
wait
cat $W/lanes.txt; cat $W/t/summary.txt
grep -E "passed, .* failed|^\[ FAIL|FAIL" $W/t/tests.log | head; tail -n 3 $W/t/check.txt; tail -n 3 $W/python.log
grep -A 16 "^geomean" $W/peers.log | head -18; tail -n 1 $W/dg-build.log
cp $W/p/peers.txt $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $W --exclude='*.so' . ; ls -la $OUT
