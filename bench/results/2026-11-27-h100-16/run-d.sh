# Session k, run 4 (one GPU): what run 3 left: the hostile-input GPU tests after
# the fix of their psum case (plain, then under memcheck / racecheck /
# synccheck with device-check's flags), gpu_grouped alone (cut at 200 s in run
# 3 by the three lanes sharing the GPU), and DeepGEMM's SM90 suite through the
# alias (cut likewise).
set -u
W=/tmp/w; rm -rf $W; mkdir -p $W
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
nvidia-smi -L | tee $W/machine.txt; date -u >> $W/machine.txt
(bash .peers/build.sh > $W/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > $W/build.log 2>&1 || tail -30 $W/build.log
python3 python/setup.py build_ext --inplace > $W/ext.log 2>&1 || tail $W/ext.log
( timeout 120 build/qgemm_tests gpu_hostile > $W/hostile.log 2>&1; echo "gpu_hostile rc=$? at ${SECONDS}s" >> $W/lanes.txt
  for tool in memcheck racecheck synccheck; do
    api=(); [ $tool = memcheck ] && api=(--report-api-errors no)
    timeout 250 compute-sanitizer --tool $tool "${api[@]}" --error-exitcode 86 build/qgemm_tests gpu_hostile_ > $W/hostile-$tool.log 2>&1
    echo "$tool gpu_hostile_ rc=$? at ${SECONDS}s" >> $W/lanes.txt
  done ) &
( timeout 330 build/qgemm_tests gpu_grouped > $W/grouped.log 2>&1; echo "gpu_grouped rc=$? at ${SECONDS}s" >> $W/lanes.txt ) &
( while [ ! -f /tmp/dg.done ]; do sleep 2; done
  PYTHONPATH=python timeout 330 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $W > $W/suite.log 2>&1
  echo "suite rc=$? at ${SECONDS}s" >> $W/lanes.txt ) &
wait
cat $W/lanes.txt
grep -hE "passed, .* failed|^\[ FAIL|^    FAIL" $W/hostile.log $W/grouped.log | head
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|passed, .* failed" $W/hostile-*.log
grep -E "suite through|FAIL" $W/suite.log | cut -c1-200 | tail -4
tar czf $OUT/logs.tgz -C $W --exclude='*.so' . ; ls -la $OUT
