# Session e, final run (c055367 + the commit that adds this file: no library
# change): the peers table (kineto, events; no host rows), the sanitizers on the
# 1D1D kinds' Python tests (the forced weight-gradient tiles, the small
# k-grouped cases).
export QGEMM_COMMIT=${QGEMM_COMMIT:-c055367}
python3 python/setup.py build_ext --inplace > $OUT/ext-build.log 2>&1 || tail $OUT/ext-build.log
make -j16 > $OUT/build.log 2>&1 || tail -20 $OUT/build.log
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
timeout 320 python3 bench/peers.py --warm-jobs 14 --out $OUT > $OUT/peers.log 2>&1; echo "peers rc=$?"; tail -45 $OUT/peers.log
for tool in memcheck racecheck; do
  timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -x tests/python/test_training.py -k "(test_k_grouped and 200) or test_wgrad_tiles" > $OUT/$tool-1d1d.log 2>&1; echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" $OUT/$tool-1d1d.log | tail -2
done
