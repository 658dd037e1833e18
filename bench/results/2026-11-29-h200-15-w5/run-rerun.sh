#!/bin/bash
# session w, call 6 (after 2ec8598, the conversion kernel renamed): DeepGEMM's test_einsum.test_bmk_bnk_mn through
# qgemm.deep_gemm and gpu_bf16_batch_sum_accuracy, side by side (the `run` command line of the session, as a script).
export QGEMM_CACHE_DIR=/tmp/qc DG_JIT_CACHE_DIR=/tmp/dgc PYTHONUNBUFFERED=1; R0=$OUT; mkdir -p /tmp/r6/logs; L=/tmp/r6/logs; T0=$SECONDS
(make -j16 all > $L/build.log 2>&1 || tail -5 $L/build.log) & (python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -5 $L/pybuild.log) & (bash .peers/build.sh > $L/dg.log 2>&1) & wait
echo built t=$((SECONDS-T0)); source .peers/env.sh; export PYTHONPATH=$PWD/python:$PWD/bench:$PYTHONPATH
(timeout 110 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out /tmp/r6/sD --file test_einsum --only test_bmk_bnk_mn > $L/sD.log 2>&1; echo "sD rc=$? t=$((SECONDS-T0))" >> $L/sD.log) &
(timeout 110 stdbuf -oL build/qgemm_tests gpu_bf16_batch_sum_accuracy > $L/c.log 2>&1; echo "c rc=$? t=$((SECONDS-T0))" >> $L/c.log) & wait
grep -E "^== |through|rc=|FAIL" $L/sD.log | cut -c1-200; grep -E "^\[ (PASS|FAIL)|passed,|rc=|    FAIL" $L/c.log | head -5; tar czf $R0/r.tgz -C /tmp r6
