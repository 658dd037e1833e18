# Session l, run 6 (one GPU): the tree to land (1D1D loop unrolled by 4, split-K
# by DRAM bandwidth): the Python training tests and the device-props test;
# compute-sanitizer memcheck / racecheck / synccheck over the 1D1D forced tiles
# (K = 640: 5 K blocks, the unrolled loop's remainder) and a k-grouped case;
# qgemm check; DeepGEMM's own test suite against qgemm.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
W=/tmp/w; mkdir -p $W
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
export PYTHONPATH="python:${PYTHONPATH:-}"
timeout 150 python3 -m pytest -q tests/python/test_training.py "tests/python/test_gpu.py::test_device_props_agree_with_torch" > $W/python.log 2>&1; echo "pytest rc=$? at ${SECONDS}s"; tail -n 1 $W/python.log
timeout 100 build/qgemm check > $W/check.log 2>&1; echo "check rc=$?"; tail -n 1 $W/check.log
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -x tests/python/test_training.py -k "test_wgrad_tiles or (test_k_grouped and 200)" > $W/$tool-1d1d.log 2>&1
  echo "$tool rc=$? at ${SECONDS}s"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" $W/$tool-1d1d.log | tail -2
done
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
left=$((580 - SECONDS))
timeout $left python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $W > $W/suite.log 2>&1; echo "suite rc=$? at ${SECONDS}s"
grep -E "suite through|FAIL" $W/suite.log | cut -c1-200 | tail -4
tar czf $OUT/logs.tgz -C $W --exclude='*.so' . ; ls $W
