#!/bin/bash
# session u, call 4: tree u-int (defaults: paged split4, FP8-output `new`, BF16 merge auto).
# Phase 1: gpu_paged_mqa_logits over split4 / split4r / split4r112, then (alone) their timing
# beside DeepGEMM. Phase 2: the acceptance run of the tree (DeepGEMM's whole SM90 suite through
# qgemm.deep_gemm, the Python suite, the C GPU tests of the families), in parallel.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
R=$OUT/r; L=$R/logs; mkdir -p $L
left() { echo $((585 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench:$PYTHONPATH
QG_TEST_PMQA_VARIANTS=shared2,dual2,split4r,split4r112 timeout 100 stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits > $L/c-paged.log 2>&1; echo "c-paged rc=$? t=$((SECONDS-T0))"
grep -E "^\[ (PASS|FAIL)|passed, " $L/c-paged.log | tr '\n' ' '; echo; grep -E "FAIL" $L/c-paged.log | head -5 | cut -c1-200
echo "== pmqa_ab t=$((SECONDS-T0))"
timeout $(cap 80) python3 bench/pmqa_ab.py --rows N128 --variants default,split4r,split4r112 --iters 10 > $L/pmqa_ab.log 2>&1; echo rc=$?
grep -A8 "^summary" $L/pmqa_ab.log | cut -c1-160
timeout $(cap 80) python3 bench/pmqa_ab.py --rows families --variants default,split4r,split4r112 --iters 10 > $L/pmqa_ab_fam.log 2>&1; echo rc=$?
grep -A8 "^summary" $L/pmqa_ab_fam.log | cut -c1-160
source .scratch/u/accept.sh
acc $(cap 300)
echo "done t=$((SECONDS-T0))"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
