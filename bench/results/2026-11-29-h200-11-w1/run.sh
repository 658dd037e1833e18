#!/bin/bash
# session w, call 1, tree main f20fd75 (session v's final tree). Phase 1 (correctness, parallel): the GPU tests
# session v could not reach on the final tree (gpu_swiglu, gpu_hc_prenorm, gpu_grouped_masked,
# gpu_masked_graph_replay, the paged default split4r112x in gpu_paged_mqa_logits and in DeepGEMM's
# test_attention through qgemm.deep_gemm), a warm-up of the FP8 rows' kernels. Phase 2 (timings, alone):
# paged split4r112p / u against the default; the 28 dense + 36 grouped FP8 rows with the heuristic default
# notall+nomcb; hc (8), bf16-k-grouped (5), fp8out M 64/128 (14) as the baselines of this session's work;
# ncu of three HC rows (DeepGEMM and qgemm).
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -1 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
P=170
c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c cA stdbuf -oL build/qgemm_tests gpu_swiglu
c cB stdbuf -oL build/qgemm_tests gpu_hc_prenorm
c cC stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits
c cD stdbuf -oL build/qgemm_tests gpu_grouped_masked
c cE stdbuf -oL build/qgemm_tests gpu_masked_graph_replay
c sE python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT/sE --file test_attention --only test_paged_mqa_logits
F='^(dense .*(deepgemm-fwd|deepgemm-dgrad)|(contiguous|masked) .*(deepgemm-test|issue52))$'
c warm python3 bench/peers.py --libs deepgemm,qgemm --filter "$F" --warm-jobs 4 --iters 1
wait
echo "== phase 1 t=$((SECONDS-T0))"
for f in cA cB cC cD cE; do grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "^    FAIL" $L/$f.log | head -4 | cut -c1-220; done
grep -E "^== |through|rc=|FAIL" $L/sE.log | cut -c1-200; grep rc= $L/warm.log
echo "== paged p/u t=$((SECONDS-T0))"
timeout $(cap 80) python3 bench/pmqa_ab.py --rows N128 --variants default,split4r112p,split4r112u --iters 10 > $OUT/pmqa.log 2>&1; echo "rc=$?"
grep -iE "summary|geomean|PASS|FAIL" $OUT/pmqa.log | head -10 | cut -c1-200
echo "== fp8 64 rows t=$((SECONDS-T0))"
timeout $(cap 150) python3 bench/peers.py --libs deepgemm,qgemm --filter "$F" --iters 20 --out $OUT/fp8 > $L/fp8.log 2>&1; echo "rc=$?"
grep -iE "geomean|worst" $OUT/fp8/peers.txt | head -16 | cut -c1-200
echo "== families t=$((SECONDS-T0))"
mkdir -p $OUT/fam
timeout $(cap 70) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds hc,bf16-k-grouped --iters 10 --out $OUT/fam > $L/fam.log 2>&1; echo "rc=$?"
grep -E "^(hc|bf16-k-grouped) " $OUT/fam/peers-families.txt | cut -c1-200
echo "== fp8out t=$((SECONDS-T0))"
[ $(left) -gt 40 ] && { timeout $(cap 60) python3 bench/peers_fp8out.py --rows 64,128 --out $OUT/fp8o.jsonl > $OUT/fp8o.log 2>&1; echo "rc=$?"; grep -iE "geomean|summary" $OUT/fp8o.log | head -5 | cut -c1-200; }
echo "== ncu hc t=$((SECONDS-T0))"
[ $(left) -gt 45 ] && { timeout $(cap 60) ncu --clock-control none --set full --import-source no -k "regex:qg_hc|hc_prenorm" --launch-count 6 -o /tmp/hc -f python3 bench/results/2026-11-29-h200-11-w1/ncu_hc.py > $L/ncu-hc.log 2>&1; echo rc=$?
  ncu -i /tmp/hc.ncu-rep --page details --print-units base > $OUT/hc-details.txt 2>&1
  ncu -i /tmp/hc.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/hc-sass.csv.gz; }
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
