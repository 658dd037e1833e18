#!/bin/bash
# session u, call 2: tree int (main + bf16m + pmqa3; every new path behind a run-time knob).
# Phase 1 (parallel): the GPU tests of the new paths. Phase 2 (alone): paged MQA organisations
# beside DeepGEMM (bench/pmqa_ab.py), BF16 merged stages beside DeepGEMM (peers_families --alt-env).
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
R=$OUT/r; L=$R/logs; mkdir -p $L
left() { echo $((580 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench:$PYTHONPATH
c() { local n=$1 p=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c c-paged 120 QG_TEST_PMQA_VARIANTS=shared2s,shared3,dual2s,split4 stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits
c c-bf16m 110 stdbuf -oL build/qgemm_tests gpu_bf16_merged_accuracy
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c-paged c-bf16m; do grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "FAIL|merged|variant" $L/$f.log | head -12 | cut -c1-220; done
echo "== pmqa_ab t=$((SECONDS-T0))"
timeout $(cap 170) python3 bench/pmqa_ab.py --variants default,shared2s,shared3,dual2s,split4 --iters 10 > $L/pmqa_ab.log 2>&1; echo rc=$?
tail -30 $L/pmqa_ab.log | cut -c1-200
echo "== bf16 merge t=$((SECONDS-T0))"
timeout $(cap 170) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16 --iters 10 --alt-env QGEMM_BF16_MERGE=auto --where 'k=7168|accumulate=False|out_dtype=torch.bfloat16|major_a=MajorTypeAB.KMajor|major_b=MajorTypeAB.KMajor' --out $R/bf16m > $L/bf16m.log 2>&1; echo rc=$?
grep -E "^bf16 |geomean" $R/bf16m/peers-families.txt | cut -c1-200; tail -3 $L/bf16m.log | cut -c1-200
echo "done t=$((SECONDS-T0))"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
