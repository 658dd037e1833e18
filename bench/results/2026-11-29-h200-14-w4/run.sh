#!/bin/bash
# session w, call 4, tree w-int (all branches merged; defaults: paged split4r112u, HC acc4+fit+cw4, casts all+lean,
# k-grouped m+d2, bmk v5:s4). Phase 1 (correctness, parallel): review's split tests (grouped masked a/b/c, fp8out
# variants a/b with new+epi+last, the v4 conversion failure), fp8out's nk test, the byte comparisons of MQA / paged /
# HC against their former defaults, the casts (default and base / lean), k-grouped n vs the new default.
# Phase 2 (alone): FP8-output GEMM default vs new+epi+last vs +nk; k-grouped (m+d2 vs n), casts (default vs base),
# einsum bmk 18 rows (v5:s4 vs v3:s4) beside DeepGEMM.
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((565 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -1 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
P=160
c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c c1 stdbuf -oL build/qgemm_tests gpu_grouped_masked_a
c c2 stdbuf -oL build/qgemm_tests gpu_grouped_masked_b
c c3 stdbuf -oL build/qgemm_tests gpu_grouped_masked_c gpu_bf16_batch_sum_v4_conversion_fails
c c4 QG_TEST_FP8OUT_VARIANTS=new+epi+last stdbuf -oL build/qgemm_tests gpu_variants_fp8out_a gpu_variants_fp8out_b
c c5 stdbuf -oL build/qgemm_tests gpu_nk_fp8out
c c6 QG_TEST_MQA_VARIANTS=pipe QG_TEST_PMQA_VARIANTS=split4r112x stdbuf -oL build/qgemm_tests gpu_mqa_logits gpu_paged_mqa_logits
c c7 QG_TEST_HC_VARIANTS=rounder/acc4+fit,rounder/acc4+fit+cw3 stdbuf -oL build/qgemm_tests gpu_hc_prenorm
c c8 stdbuf -oL build/qgemm_tests gpu_cast_bitwise gpu_cast_variants_bitwise gpu_cast_sms_and_graph
c c9 QG_TEST_KGROUPED_VARIANTS=n,mc stdbuf -oL build/qgemm_tests gpu_bf16_kgrouped_variants
wait
echo "== phase 1 t=$((SECONDS-T0))"
for f in c1 c2 c3 c4 c5 c6 c7 c8 c9; do echo "-- $f: $(grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/$f.log | tr '\n' ' ')"; grep -E "^    FAIL|compiled ahead|cast cases|conversion" $L/$f.log | head -5 | cut -c1-220; done
echo "== fp8out t=$((SECONDS-T0))"
timeout $(cap 110) python3 bench/peers_fp8out.py --rows 64,128 --calls 20 --variants default,new+epi+last,new+epi+last+nk --out $OUT/fp8o.jsonl > $OUT/fp8o.log 2>&1; echo rc=$?
grep -E '"fp8out-variant"|summary' $OUT/fp8o.jsonl $OUT/fp8o.log | cut -c1-300 | head -8
echo "== kgrp t=$((SECONDS-T0))"
mkdir -p $OUT/kg
timeout $(cap 60) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16-k-grouped --iters 5 --alt-env QGEMM_BF16_KGROUPED=n --out $OUT/kg > $L/kg.log 2>&1; echo rc=$?
grep -E "^bf16-k-grouped" $OUT/kg/peers-families.txt | cut -c1-200
echo "== bmk t=$((SECONDS-T0))"
[ $(left) -gt 50 ] && { timeout $(cap 60) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds einsum --where 'expr=bmk,bnk->mn' --iters 10 --alt-env QGEMM_BMK_VARIANT=v3:s4 --out $OUT/bmk > $L/bmk.log 2>&1; echo rc=$?
  grep -E "^einsum +(kineto|events)" $OUT/bmk/peers-families.txt | cut -c1-200; }
echo "== casts t=$((SECONDS-T0))"
[ $(left) -gt 40 ] && { timeout $(cap 60) python3 bench/cast_ab.py --variants default,base --iters 20 --out $OUT/cast_ab.json > $OUT/cast_ab.log 2>&1; echo rc=$?
  grep -vE "profiler|_warn_once" $OUT/cast_ab.log | cut -c1-200 | tail -25; }
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
