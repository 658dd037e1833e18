#!/bin/bash
# session v, call 1, tree main c5cb96b: (a) DeepGEMM's test_attention (mqa + paged) through qgemm.deep_gemm
# on a cold kernel cache, timed, with the cache's files listed after (how many MQA kernels, when each
# landed); (b) DeepGEMM's and qgemm's chosen configurations for the 28 dense + 36 grouped FP8 shapes
# (DG_PRINT_CONFIGS=1, QGEMM_PRINT_CONFIG=1), one call each, timings of this call not used.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
( QGEMM_CACHE_DIR=/tmp/qc-att timeout 330 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_attention --only test_mqa_logits --only test_paged_mqa_logits --out $OUT/suite-att > $L/att.log 2>&1
  echo "att rc=$? t=$((SECONDS-T0))" >> $L/att.log
  ls -l --time-style=+%s -R /tmp/qc-att > $OUT/qc-att-listing.txt 2>&1 ) &
F='^(dense .*(deepgemm-fwd|deepgemm-dgrad)|(contiguous|masked|contiguous-psum|masked-psum) .*(deepgemm-test|issue52))$'
( DG_PRINT_CONFIGS=1 QGEMM_PRINT_CONFIG=1 timeout 300 python3 bench/peers.py --libs deepgemm,qgemm --filter "$F" --iters 1 --out $OUT/cfg > $OUT/configs.log 2>&1
  echo "cfg rc=$? t=$((SECONDS-T0))" >> $OUT/configs.log ) &
wait
echo "== t=$((SECONDS-T0))"
grep -E "^== |through|rc=|Error|error" $L/att.log | cut -c1-200 | tail -20
tail -3 $OUT/configs.log; grep -c . $OUT/configs.log
find /tmp/qc-att -type f | wc -l
cd $OUT && tar czf logs.tgz logs suite-att 2>/dev/null; true
