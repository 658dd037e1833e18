#!/bin/bash
# session u, call 3: tree u-int (main + bf16m (merge auto now the default, on grids of few
# tiles) + pmqa3 + fp8o). Phase 1: GPU tests of the FP8-output variants (memcheck too: `early`
# exits without a cluster barrier) and the BF16 default. Phase 2: FP8-output variants beside the
# bf16-output GEMM; paged MQA split4 on the 8 rows beside DeepGEMM.
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
c c-fp8ov 110 stdbuf -oL build/qgemm_tests gpu_fp8out_variants
c c-fp8o 110 stdbuf -oL build/qgemm_tests gpu_fp8out gpu_swiglu
c mc-fp8ov 130 QGEMM_FP8OUT_VARIANT=new compute-sanitizer --tool memcheck --print-limit 20 build/qgemm_tests gpu_fp8out
c c-bf16 110 stdbuf -oL build/qgemm_tests gpu_bf16_accuracy gpu_bf16_merged_accuracy
c py-fp8o 110 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_fp8out.py
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c-fp8ov c-fp8o mc-fp8ov c-bf16; do echo "-- $f"; grep -E "^\[ (PASS|FAIL)|passed, |rc=|ERROR SUMMARY" $L/$f.log | tr '\n' ' '; echo; grep -E "^    FAIL" $L/$f.log | head -6 | cut -c1-220; done
grep -E "passed|failed|rc=" $L/py-fp8o.log | tail -2; grep -E "^(FAILED|ERROR) " $L/py-fp8o.log | head -5 | cut -c1-200
echo "== fp8out variants t=$((SECONDS-T0))"
timeout $(cap 100) python3 bench/peers_fp8out.py --rows 64,128 --calls 20 --variants old,room+early,new --out $R/fp8o.jsonl > $L/fp8o-bench.log 2>&1; echo rc=$?
grep -E '"fp8out-(summary|variant)"' $R/fp8o.jsonl | cut -c1-400
echo "== paged split4 t=$((SECONDS-T0))"
timeout $(cap 120) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds paged-mqa --iters 10 --alt-env QGEMM_PMQA_VARIANT=split4 --out $R/paged > $L/paged.log 2>&1; echo rc=$?
grep -E "^paged-mqa|QGEMM_PMQA" $R/paged/peers-families.txt | cut -c1-200
echo "done t=$((SECONDS-T0))"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
