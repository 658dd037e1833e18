#!/bin/bash
# session u, call 6: the final tree (u-int: paged default split4r112w): DeepGEMM's
# test_attention.test_mqa_logits and test_paged_mqa_logits through qgemm.deep_gemm (the part of
# the suite calls 4 and 5 did not reach), gpu_paged_mqa_logits and the Python paged tests.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
R=$OUT/r; L=$R/logs; mkdir -p $L $R/sE
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
wait
echo "built t=$((SECONDS-T0))"
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
c() { local n=$1 p=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c sE 150 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $R/sE --file test_attention --only test_mqa_logits --only test_paged_mqa_logits
c c-paged 100 QG_TEST_PMQA_VARIANTS=shared2 stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits
c py-paged 100 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_indexer_gpu.py -k "paged and (None or split4r112w)"
wait
echo "== t=$((SECONDS-T0))"
grep -E "^== |through|rc=" $L/sE.log | cut -c1-160
grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/c-paged.log | tr '\n' ' '; echo
grep -E "passed|failed|rc=" $L/py-paged.log | tail -2; grep -E "^(FAILED|ERROR) " $L/py-paged.log | head -5 | cut -c1-200
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
