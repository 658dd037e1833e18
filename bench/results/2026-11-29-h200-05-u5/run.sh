#!/bin/bash
# session u, call 5: the integration tree with the round-3 branches (pmqa5: split4r112m / split4r112w;
# fp8o2: the e4m3 epilogue `epi`). Phase 1 (parallel): their GPU tests, and the rest of the
# acceptance run (DeepGEMM's test_attention MQA / paged, test_hyperconnection, test_layout through
# qgemm.deep_gemm; the C GPU tests of HC, MQA, SwiGLU). Phase 2 (alone): A/B beside DeepGEMM, the
# paged default over 24 rows, BF16 dense 9 rows; last, ncu of the MQA prefill H64 row (next session).
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
R=$OUT/r; L=$R/logs; mkdir -p $L
left() { echo $((540 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench:$PYTHONPATH
c() { local n=$1 p=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
S="python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM"
mkdir -p $R/sE $R/sF
c sE 150 $S --out $R/sE --file test_attention --only test_mqa_logits --only test_paged_mqa_logits
c sF 150 $S --out $R/sF --file test_hyperconnection --file test_layout
c c-rest 150 stdbuf -oL build/qgemm_tests gpu_hc_prenorm gpu_mqa_logits gpu_swiglu
c c-paged 150 QG_TEST_PMQA_VARIANTS=split4r112m,split4r112w stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits
c c-fp8o 150 stdbuf -oL build/qgemm_tests gpu_fp8out_variants
c py-new 150 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_fp8out.py tests/python/test_indexer_gpu.py -k "variant or paged"
wait
echo "== phase 1 t=$((SECONDS-T0))"
for f in sE sF; do grep -E "^== |through|rc=" $L/$f.log | cut -c1-160; done
for f in c-rest c-paged c-fp8o; do echo "-- $f"; grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "^    FAIL" $L/$f.log | head -5 | cut -c1-200; done
grep -E "passed|failed|rc=" $L/py-new.log | tail -2; grep -E "^(FAILED|ERROR) " $L/py-new.log | head -5 | cut -c1-200
echo "== pmqa_ab t=$((SECONDS-T0))"
timeout $(cap 70) python3 bench/pmqa_ab.py --rows N128 --variants default,split4r112m,split4r112w --iters 10 > $L/pmqa_ab.log 2>&1; echo rc=$?
grep -A6 "^summary" $L/pmqa_ab.log | cut -c1-160
timeout $(cap 50) python3 bench/pmqa_ab.py --clean --rows '4096,2,64,8192,1;256,2,64,65536,1;256,2,64,8192,0' --variants default,split4r112m,split4r112w --iters 10 > $L/pmqa_ab_clean.log 2>&1; echo rc=$?
grep -A6 "^summary" $L/pmqa_ab_clean.log | cut -c1-160
echo "== fp8out t=$((SECONDS-T0))"
timeout $(cap 80) python3 bench/peers_fp8out.py --rows 64,128 --calls 20 --variants new,new+epi --out $R/fp8o.jsonl > $L/fp8o-bench.log 2>&1; echo rc=$?
grep -E '"fp8out-variant"' $R/fp8o.jsonl | cut -c1-300
echo "== paged 24 rows t=$((SECONDS-T0))"
timeout $(cap 100) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds paged-mqa --iters 10 --alt-env QGEMM_PMQA_VARIANT=split4r112w --out $R/paged > $L/paged.log 2>&1; echo rc=$?
grep -A1 -E "^paged-mqa +(kineto|events)" $R/paged/peers-families.txt | cut -c1-170
echo "== bf16 t=$((SECONDS-T0))"
timeout $(cap 60) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16 --iters 10 --alt-env QGEMM_BF16_MERGE=off --where 'k=7168|accumulate=False|out_dtype=torch.bfloat16|major_a=MajorTypeAB.KMajor|major_b=MajorTypeAB.KMajor' --out $R/bf16 > $L/bf16.log 2>&1; echo rc=$?
grep -A1 -E "^bf16 +(kineto|events)" $R/bf16/peers-families.txt | cut -c1-170
echo "== ncu mqa t=$((SECONDS-T0))"
timeout $(cap 60) ncu --clock-control none --set full --import-source no -k "regex:qg_mqa_logits_kernel|sm90_fp8_mqa_logits" --launch-skip 2 --launch-count 2 -o $R/mqa -f python3 bench/results/2026-11-29-h200-05-u5/ncu_mqa.py > $L/ncu-mqa.log 2>&1; echo rc=$?
ncu -i $R/mqa.ncu-rep --page details --print-units base > $R/mqa-details.txt 2>&1
ncu -i $R/mqa.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/mqa-sass.csv.gz
grep -E "^  [a-z_0-9]+.*\(|Duration|Registers Per|Issue Slots Busy|DRAM Throughput" $R/mqa-details.txt | head -20 | cut -c1-160
rm -f $R/mqa.ncu-rep
echo "done t=$((SECONDS-T0))"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
