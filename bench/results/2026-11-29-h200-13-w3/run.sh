#!/bin/bash
# session w, call 3, tree w-int (+ HC default acc4+fit+cw4, the lean per-block fix, kgrp: QGEMM_BF16_KGROUPED).
# Phase 1 (correctness, parallel): k-grouped organisations (C + pytest), the casts' lean bitwise test, the HC
# test on its new default (former default and split compared bitwise), DeepGEMM's test_hyperconnection through
# qgemm.deep_gemm, warm-ups. Phase 2 (alone): k-grouped A/B, casts A/B, einsum bmk 24 rows (v3:s4 vs v5:s4),
# HC 24 rows (default cw4 vs cw4+k4).
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
P=140
c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c c1 stdbuf -oL build/qgemm_tests gpu_bf16_kgrouped_variants
c c2 stdbuf -oL build/qgemm_tests gpu_cast_lean_bitwise
c c3 QG_TEST_HC_VARIANTS=rounder/acc4+fit,split/fit+cw4,rounder/acc4+fit+cw3 stdbuf -oL build/qgemm_tests gpu_hc_prenorm
c py python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_gpu.py tests/python/test_indexer_gpu.py -k "k_grouped_modes or hc_prenorm"
c sH python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT/sH --file test_hyperconnection
c w1 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds einsum --where 'expr=bmk,bnk->mn' --iters 1 --alt-env QGEMM_BMK_VARIANT=v5:s4 --out /tmp/w1
c w2 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds hc --iters 1 --alt-env QGEMM_HC_VARIANT=acc4+fit+cw4+k4 --out /tmp/w2
c w3 python3 bench/kgrp_ab.py --deepgemm-src .peers/DeepGEMM --variants default --iters 1 --out /tmp/w3
wait
echo "== phase 1 t=$((SECONDS-T0))"
for f in c1 c2 c3; do grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "^    FAIL|cast cases" $L/$f.log | head -6 | cut -c1-220; done
grep -E "passed|failed" $L/py.log | tail -1; grep -E "^(FAILED|ERROR) " $L/py.log | head -5 | cut -c1-200; grep rc= $L/py.log
grep -E "^== |through|rc=|FAIL" $L/sH.log | cut -c1-200; grep -h rc= $L/w1.log $L/w2.log $L/w3.log
echo "== kgrp t=$((SECONDS-T0))"
timeout $(cap 85) stdbuf -oL python3 bench/kgrp_ab.py --deepgemm-src .peers/DeepGEMM --variants default,m,mc,d2,m+d2,mc+d2 --iters 5 --out $OUT/kg > $OUT/kgrp.log 2>&1; echo rc=$?
grep -iE "summary|geomean|PASS|FAIL" $OUT/kgrp.log | head -12 | cut -c1-220
echo "== casts t=$((SECONDS-T0))"
timeout $(cap 80) python3 bench/cast_ab.py --variants base,lean,all,all+lean --iters 20 --out $OUT/cast_ab.json > $OUT/cast_ab.log 2>&1; echo rc=$?
grep -vE "profiler|_warn_once" $OUT/cast_ab.log | cut -c1-250
echo "== bmk 24 t=$((SECONDS-T0))"
[ $(left) -gt 50 ] && { timeout $(cap 70) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds einsum --where 'expr=bmk,bnk->mn' --iters 10 --alt-env QGEMM_BMK_VARIANT=v5:s4 --out $OUT/bmk > $L/bmk.log 2>&1; echo rc=$?
  grep -E "^einsum" $OUT/bmk/peers-families.txt | cut -c1-200; }
echo "== hc 24 t=$((SECONDS-T0))"
[ $(left) -gt 40 ] && { timeout $(cap 60) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds hc --iters 10 --alt-env QGEMM_HC_VARIANT=acc4+fit+cw4+k4 --out $OUT/hc > $L/hc.log 2>&1; echo rc=$?
  grep -E "^hc" $OUT/hc/peers-families.txt | cut -c1-200; }
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
