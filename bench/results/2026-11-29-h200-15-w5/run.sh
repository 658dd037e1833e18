#!/bin/bash
# session w, call 5, the final tree (w-int with the FP8-output default new+epi+last+nk): DeepGEMM's SM90 suite
# through qgemm.deep_gemm on the families whose defaults changed this session. Phase 1: test_attention (mqa, paged,
# skip_head_mid) beside the light fp8out / swiglu tests. Phase 2: test_bf16, test_einsum + test_layout +
# test_hyperconnection, test_fp8_fp4 in two processes.
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((570 - (SECONDS - T0))); }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -1 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
S="python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM"
c 235 sE $S --out $OUT/sE --file test_attention
c 200 cF stdbuf -oL build/qgemm_tests gpu_fp8out gpu_swiglu
c 200 py python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_fp8out.py tests/python/test_swiglu.py
wait
echo "== phase 1 t=$((SECONDS-T0))"
grep -E "^== |through|rc=|FAIL" $L/sE.log | cut -c1-200
echo "-- cF: $(grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/cF.log | tr '\n' ' ')"; grep -E "^    FAIL" $L/cF.log | head -5 | cut -c1-200
grep -E "passed|failed" $L/py.log | tail -1; grep -E "^(FAILED|ERROR) " $L/py.log | head -5 | cut -c1-200; grep rc= $L/py.log
P=$(( $(left) - 15 ))
c $P sC $S --out $OUT/sC --file test_bf16
c $P sD $S --out $OUT/sD --file test_einsum --file test_layout --file test_hyperconnection
c $P sA $S --out $OUT/sA --file test_fp8_fp4 --only test_gemm --only test_k_grouped_gemm_contiguous --only test_m_grouped_gemm_contiguous
c $P sB $S --out $OUT/sB --file test_fp8_fp4 --only test_m_grouped_gemm_masked
wait
echo "== phase 2 t=$((SECONDS-T0))"
for f in sC sD sA sB; do grep -E "^== |through|rc=" $L/$f.log | cut -c1-160; grep -E "FAIL" $L/$f.log | head -3 | cut -c1-200; done
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
