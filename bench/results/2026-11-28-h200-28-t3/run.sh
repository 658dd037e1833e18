#!/bin/bash
# session t, call 3, tree int2 (main + the helper branches bf16s, pmqa, hc, bmk, fp8out: every new
# path behind a run-time variable, defaults unchanged). Phase 1 (parallel): the new paths' GPU
# tests, and one-iteration passes of the benches to fill the JIT caches (qgemm's and DeepGEMM's).
# Phase 2 (alone, sequential): each family's A/B beside DeepGEMM (kineto and events).
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L $L/warm
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
P=$(cap 140)
c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
# ---- phase 1: tests (5) + warm-ups (3)
c c-idx build/qgemm_tests gpu_paged_mqa_logits gpu_hc_prenorm gpu_mqa_logits
c c-bf16 build/qgemm_tests gpu_bf16_split_k_accuracy gpu_bf16_batch_sum_accuracy
c c-fp8o build/qgemm_tests gpu_fp8out
c py python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_indexer_gpu.py tests/python/test_fp8out.py tests/python/test_einsum.py
( timeout $P $PF --kinds paged-mqa,hc,mqa --max-rows 8 --iters 1 --out $L/warm/f1 > $L/warm/f1.log 2>&1
  for v in pipe2 dual2; do QGEMM_PMQA_VARIANT=$v timeout $(cap 30) $PF --kinds paged-mqa --max-rows 8 --iters 1 --out $L/warm/p-$v > $L/warm/p-$v.log 2>&1; done ) &
( timeout $P python3 bench/hc_ab.py --modes rounder,rounder/acc4,rounder/acc8,rounder/fit,rounder/acc4+fit,rounder/acc4+fit+w1,rounder/acc8+fit+k2 --iters 1 --no-deepgemm > $L/warm/hc_ab.log 2>&1
  QGEMM_MQA_VARIANT=lockstep4 timeout $(cap 40) $PF --kinds mqa --max-rows 8 --iters 1 --out $L/warm/m4 > $L/warm/m4.log 2>&1 ) &
( timeout $P $PF --kinds bf16 --split-k on --max-rows 5 --iters 1 --out $L/warm/b > $L/warm/b.log 2>&1
  timeout $(cap 60) python3 bench/bf16_split_ab.py --splits off,on,on:rs,4:rs,8:rs --iters 1 > $L/warm/bs.log 2>&1 ) &
( timeout $P python3 bench/bmk_variants.py --runs 1 > $L/warm/bmk.log 2>&1
  for s in old fixup; do QGEMM_FP8OUT_VARIANT=$s timeout $(cap 40) python3 bench/peers_fp8out.py --rows 64,128 --calls 1 > $L/warm/fp8out-$s.log 2>&1; done ) &
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c-idx c-bf16 c-fp8o; do grep -E "^\[ (PASS|FAIL)|passed|rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "^    FAIL" $L/$f.log | head -5 | cut -c1-220; done
tail -2 $L/py.log | tr '\n' ' '; echo; grep -E "^(FAILED|ERROR) " $L/py.log | head -8 | cut -c1-200
# ---- phase 2: timings, one at a time
t() { echo "== $1 t=$((SECONDS-T0))"; }
t paged-dual2; timeout $(cap 45) $PF --kinds paged-mqa --max-rows 8 --iters 10 --alt-env QGEMM_PMQA_VARIANT=dual2 --out $OUT/paged-dual2 > $L/paged-dual2.log 2>&1; echo rc=$?; grep -A1 -E "^paged-mqa +(kineto|events)" $OUT/paged-dual2/peers-families.txt | cut -c1-170
t paged-pipe2; timeout $(cap 45) $PF --kinds paged-mqa --max-rows 8 --iters 10 --alt-env QGEMM_PMQA_VARIANT=pipe2 --out $OUT/paged-pipe2 > $L/paged-pipe2.log 2>&1; echo rc=$?; grep -A1 -E "^paged-mqa +(kineto|events)" $OUT/paged-pipe2/peers-families.txt | cut -c1-170
t hc_ab; timeout $(cap 35) python3 bench/hc_ab.py --modes rounder,rounder/acc4,rounder/acc8,rounder/fit,rounder/acc4+fit,rounder/acc4+fit+w1,rounder/acc8+fit+k2 --iters 15 > $OUT/hc_ab.log 2>&1; echo rc=$?; grep -E "^SUMMARY" $OUT/hc_ab.log | cut -c1-200
t hc; timeout $(cap 25) $PF --kinds hc --max-rows 8 --iters 10 --alt-env QGEMM_HC_VARIANT=acc4+fit --out $OUT/hc > $L/hc.log 2>&1; echo rc=$?; grep -A1 -E "^hc +(kineto|events)" $OUT/hc/peers-families.txt | cut -c1-170
t mqa; timeout $(cap 35) $PF --kinds mqa --max-rows 8 --iters 10 --alt-env QGEMM_MQA_VARIANT=lockstep4 --out $OUT/mqa > $L/mqa.log 2>&1; echo rc=$?; grep -A1 -E "^mqa +(kineto|events)" $OUT/mqa/peers-families.txt | cut -c1-170
t bf16; timeout $(cap 30) $PF --kinds bf16 --split-k on --max-rows 5 --iters 10 --out $OUT/bf16 > $L/bf16.log 2>&1; echo rc=$?; grep -E "^bf16 " $OUT/bf16/peers-families.txt | cut -c1-200; grep -A1 -E "^bf16 +(kineto|events)" $OUT/bf16/peers-families.txt | cut -c1-170
t bf16-split-ab; timeout $(cap 35) python3 bench/bf16_split_ab.py --splits off,on,on:rs,4:rs,8:rs --iters 5 --out $OUT > $OUT/bf16-split-ab.log 2>&1; echo rc=$?; grep -E "QGEMM_BF16_SPLIT_K|accuracy|FAIL|geomean" $OUT/bf16-split-ab.log | cut -c1-200 | tail -12
t bmk; timeout $(cap 60) python3 bench/bmk_variants.py --out $OUT/bmk.json > $OUT/bmk.log 2>&1; echo rc=$?; tail -12 $OUT/bmk.log | cut -c1-200
for s in old fixup; do t fp8out-$s; QGEMM_FP8OUT_VARIANT=$s timeout $(cap 35) python3 bench/peers_fp8out.py --rows 64,128 --calls 10 --out $OUT/fp8out-$s.jsonl > $L/fp8out-$s.log 2>&1; echo rc=$?; grep -E "fp8out-summary" $L/fp8out-$s.log | tail -1 | cut -c1-330; done
echo "done t=$((SECONDS-T0))"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
