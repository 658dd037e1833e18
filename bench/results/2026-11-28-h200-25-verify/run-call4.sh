#!/bin/bash
# session r, call 4: correctness of the integrated tree (int: + fp8both, pagedfix, bmkfix, gmc test
# fix, blocking test stream), then the FP8-output rows (split tiles) and SwiGLU timed alone.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((400 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=python:bench:$PYTHONPATH
( timeout 230 build/qgemm_tests gpu_bf16 > $L/c1.log 2>&1; echo "c1 rc=$? t=$((SECONDS-T0))" >> $L/c1.log ) &
( timeout 230 build/qgemm_tests gpu_fp8out gpu_swiglu gpu_cast > $L/c2.log 2>&1; echo "c2 rc=$? t=$((SECONDS-T0))" >> $L/c2.log ) &
( timeout 230 build/qgemm_tests gpu_paged gpu_mqa gpu_hc gpu_grouped gpu_masked gpu_hostile gpu_dense gpu_forced gpu_split gpu_reference > $L/c3.log 2>&1; echo "c3 rc=$? t=$((SECONDS-T0))" >> $L/c3.log ) &
( timeout 230 python3 -m pytest -q -rs -p no:cacheprovider tests/python > $L/python.log 2>&1; echo "py rc=$? t=$((SECONDS-T0))" >> $L/python.log ) &
( timeout 230 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_einsum --file test_attention --file test_hyperconnection --file test_layout --out $L/suite1 > $L/suite1.log 2>&1; echo "suite1 rc=$? t=$((SECONDS-T0))" >> $L/suite1.log ) &
( timeout 200 python3 bench/peers_fp8out.py --rows 64,128 --calls 1 > $L/warm-fp8out.log 2>&1 ) &
( timeout 230 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_bf16 --out $L/suite2 > $L/suite2.log 2>&1; echo "suite2 rc=$? t=$((SECONDS-T0))" >> $L/suite2.log ) &
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c1 c2 c3; do grep -E "^\[ (PASS|FAIL)|rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "    FAIL" $L/$f.log | head -6 | cut -c1-220; done
tail -2 $L/python.log; grep -E "^_+ test" $L/python.log | head -12 | cut -c1-160
for f in suite1 suite2; do grep -iE "pass|fail|rc=" $L/$f.log | tail -8 | cut -c1-200; done
echo "== fp8out split rows t=$((SECONDS-T0))"
timeout $(cap 70) python3 bench/peers_fp8out.py --rows 64,128 --calls 20 --out $OUT/fp8out.jsonl > $OUT/fp8out.log 2>&1; echo "rc=$?"; grep -E "summary|geomean" $OUT/fp8out.log | cut -c1-300; tail -3 $OUT/fp8out.log | cut -c1-300
echo "done t=$((SECONDS-T0))"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
