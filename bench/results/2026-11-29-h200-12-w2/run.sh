#!/bin/bash
# session w, call 2, tree w-int (main c033765 + pdef: paged default split4r112u; castg: QGEMM_CAST_VARIANT
# all / lean; hc: QGEMM_HC_VARIANT cw2-4; bmk: QGEMM_BMK_VARIANT v5 / v6). Phase 1 (correctness, parallel):
# the casts' bitwise tests under lean and all+lean, the paged test with the new default (x and p compared
# bitwise against it), DeepGEMM's test_paged_mqa_logits through qgemm.deep_gemm, the bmk accuracy tests
# (v5, v6). Phase 2 (alone): paged 24 rows (default u vs x), the casts under 4 variants, HC cw4 (helper's
# script), bmk v3/v4/v5/v6; ncu of three casts, base and lean.
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
P=150
c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c c1 stdbuf -oL build/qgemm_tests gpu_cast_lean_bitwise
c c2 stdbuf -oL build/qgemm_tests gpu_cast_bitwise gpu_cast_sms_and_graph
c c3 QG_TEST_PMQA_VARIANTS=split4r112x,split4r112p stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits
c c4 stdbuf -oL build/qgemm_tests gpu_bf16_batch_sum_accuracy
c py python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_einsum.py -k "bmk_bnk_mn and (v5 or v6) and not 4096"
c sE python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT/sE --file test_attention --only test_paged_mqa_logits
c warm python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds paged-mqa --iters 1 --alt-env QGEMM_PMQA_VARIANT=split4r112x --out /tmp/warm-paged
wait
echo "== phase 1 t=$((SECONDS-T0))"
for f in c1 c2 c3 c4; do grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "^    FAIL|cast cases" $L/$f.log | head -6 | cut -c1-220; done
grep -E "passed|failed" $L/py.log | tail -1; grep -E "^(FAILED|ERROR) " $L/py.log | head -5 | cut -c1-200; grep rc= $L/py.log
grep -E "^== |through|rc=|FAIL" $L/sE.log | cut -c1-200; grep rc= $L/warm.log
echo "== paged 24 t=$((SECONDS-T0))"
timeout $(cap 100) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds paged-mqa --iters 10 --alt-env QGEMM_PMQA_VARIANT=split4r112x --out $OUT/paged > $L/paged.log 2>&1; echo rc=$?
grep -E "^paged-mqa " $OUT/paged/peers-families.txt | cut -c1-200
echo "== casts t=$((SECONDS-T0))"
timeout $(cap 90) python3 bench/cast_ab.py --variants base,lean,all,all+lean --iters 20 --out $OUT/cast_ab.json > $OUT/cast_ab.log 2>&1; echo rc=$?
cat $OUT/cast_ab.log | cut -c1-250
echo "== hc t=$((SECONDS-T0))"
[ $(left) -gt 60 ] && { OUT=$OUT/hc-cw timeout $(cap 85) bash bench/hc_cw_ab.sh > $L/hc.log 2>&1; echo rc=$?; grep -E "SUMMARY|^  |PASS|FAIL|cases:" $L/hc.log | head -20 | cut -c1-200; }
echo "== bmk t=$((SECONDS-T0))"
[ $(left) -gt 45 ] && { timeout $(cap 70) stdbuf -oL python3 bench/bmk_variants.py --batches 129 --runs 10 --kernels --variants 'v3s4=atomic:auto:2:v3+s4,v6s4=atomic:auto:2:v6+s4,v4s4=atomic:auto:2:v4+s4,v5s4=atomic:auto:2:v5+s4' > $OUT/bmk.log 2>&1; echo rc=$?; grep -iE "geomean|checks|summary" $OUT/bmk.log | head -12 | cut -c1-200; }
echo "== ncu casts t=$((SECONDS-T0))"
[ $(left) -gt 30 ] && { timeout $(cap 45) ncu --clock-control none --set full --import-source no -k "regex:qg_per_channel|qg_silu|qg_per_token" --launch-skip 3 --launch-count 9 -o /tmp/cast -f python3 bench/results/2026-11-29-h200-12-w2/ncu_cast.py > $L/ncu-cast.log 2>&1; echo rc=$?
  [ $(left) -gt 12 ] && { ncu -i /tmp/cast.ncu-rep --page details --print-units base > $OUT/cast-details.txt 2>&1
  ncu -i /tmp/cast.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/cast-sass.csv.gz; }; }
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
