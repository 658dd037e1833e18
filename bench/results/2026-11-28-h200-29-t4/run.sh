#!/bin/bash
# session t, call 4: the tree about to land (main + fp8gmc, fp8bmm, pmqa, hc, bmk; the defaults
# flipped from call 3: paged dual2 below 128 columns, HC acc4+fit, batch sum v3:s4, grouped FP8 B
# multicast on the H200, fp8_einsum batched). Phase 1: the GPU tests of what changed, the whole
# Python suite, DeepGEMM's whole SM90 suite through qgemm.deep_gemm. Phase 2: the new defaults
# timed beside DeepGEMM (kineto and events), and MQA lockstep4 (call 3's step timed out).
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
PF="python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM"
P=$(cap 250)
c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c c-paged build/qgemm_tests gpu_paged_mqa_logits
c c-mqa build/qgemm_tests gpu_mqa_logits
c c-bmk build/qgemm_tests gpu_bf16_batch_sum_accuracy
A="tests/python/test_gpu.py tests/python/test_einsum.py tests/python/test_indexer_gpu.py tests/python/test_training.py"
c py1 python3 -m pytest -q -rs -p no:cacheprovider $A
IGN=$(for f in $A; do printf -- "--ignore=%s " $f; done)
c py2 python3 -m pytest -q -rs -p no:cacheprovider tests/python $IGN
c suite python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $R/suite
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c-paged c-mqa c-bmk; do grep -E "^\[ (PASS|FAIL)|passed|rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "^    FAIL" $L/$f.log | head -5 | cut -c1-220; done
for f in py1 py2; do grep -E "passed|failed" $L/$f.log | tail -1; grep -E "^(FAILED|ERROR) " $L/$f.log | head -8 | cut -c1-200; done
grep -E "^== " $L/suite.log | cut -c1-160
t() { echo "== $1 t=$((SECONDS-T0))"; }
t "paged-mqa, hc (defaults)"; timeout $(cap 90) $PF --kinds paged-mqa,hc --max-rows 8 --iters 10 --out $R/ph > $L/ph.log 2>&1; echo rc=$?; grep -E "^(paged-mqa|hc) " $R/ph/peers-families.txt | cut -c1-150
t "einsum bmk (default v3:s4)"; timeout $(cap 60) $PF --kinds einsum --where 'expr=bmk,bnk->mn' --iters 10 --out $R/bmk > $L/bmk.log 2>&1; echo rc=$?; grep -E "^einsum " $R/bmk/peers-families.txt | cut -c1-150
t "mqa lockstep4"; timeout $(cap 80) $PF --kinds mqa --max-rows 8 --iters 5 --alt-env QGEMM_MQA_VARIANT=lockstep4 --out $R/mqa > $L/mqa.log 2>&1; echo rc=$?; grep -E "^mqa " $R/mqa/peers-families.txt | cut -c1-150; grep -A1 -E "^mqa +(kineto|events)" $R/mqa/peers-families.txt | cut -c1-170
echo "done t=$((SECONDS-T0))"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
