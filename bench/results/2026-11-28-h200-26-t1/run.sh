#!/bin/bash
# session t, call 1, tree int-t (main 82ccc77 + fp8gmc + fp8bmm, merged; both off by default).
# Phase 1 (correctness, 5 processes): the GPU tests session s and the branches added, the Python
# suite, DeepGEMM's test files session r did not reach; a warm-up of the grouped rows' kernels.
# Phase 2 (timings, alone): grouped B multicast (QGEMM_FP8_GROUPED_MCB unset vs 1) and the FP8
# einsum in one batched launch (QGEMM_FP8_EINSUM unset vs batched), beside DeepGEMM.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench:$PYTHONPATH
P=$(cap 210)
F='^(contiguous|masked|contiguous-psum|masked-psum) .*(deepgemm-test|issue52)$'
( timeout $P build/qgemm_tests gpu_grouped_masked gpu_masked_graph_replay gpu_forced_configs gpu_split_k_edges gpu_reference_matches_cpu gpu_fp8_batched > $L/c1.log 2>&1; echo "c1 rc=$? t=$((SECONDS-T0))" >> $L/c1.log ) &
( QGEMM_FP8_GROUPED_MCB=1 timeout $P build/qgemm_tests gpu_grouped_contiguous gpu_hostile gpu_fp8out gpu_swiglu gpu_cast > $L/c2.log 2>&1; echo "c2 rc=$? t=$((SECONDS-T0))" >> $L/c2.log ) &
A="tests/python/test_compile_families.py tests/python/test_swiglu.py tests/python/test_indexer_gpu.py tests/python/test_hostile.py tests/python/test_einsum.py"
( timeout $P python3 -m pytest -q -rs -p no:cacheprovider $A > $L/py1.log 2>&1; echo "py1 rc=$? t=$((SECONDS-T0))" >> $L/py1.log ) &
IGN=$(for f in $A; do printf -- "--ignore=%s " $f; done)
( timeout $P python3 -m pytest -q -rs -p no:cacheprovider tests/python $IGN > $L/py2.log 2>&1; echo "py2 rc=$? t=$((SECONDS-T0))" >> $L/py2.log ) &
( timeout $P python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_bf16 --only test_k_grouped_gemm_contiguous --only test_cublaslt_gemm --out $L/suite-bf16 > $L/suite.log 2>&1
  echo "suite-bf16 rc=$? t=$((SECONDS-T0))" >> $L/suite.log
  timeout $(cap 100) python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_attention --only test_paged_mqa_logits --file test_hyperconnection --file test_layout --out $L/suite-att >> $L/suite.log 2>&1
  echo "suite-att rc=$? t=$((SECONDS-T0))" >> $L/suite.log
  QGEMM_FP8_EINSUM=batched timeout $(cap 40) python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_einsum --only test_fp8_bhr_hdr_bhd --out $L/suite-fp8e >> $L/suite.log 2>&1
  echo "suite-fp8einsum-batched rc=$? t=$((SECONDS-T0))" >> $L/suite.log ) &
( timeout $P python3 bench/peers.py --libs deepgemm,qgemm --filter "$F" --warm-jobs 6 --iters 1 > $L/warm.log 2>&1
  QGEMM_FP8_GROUPED_MCB=1 timeout $(cap 60) python3 bench/peers.py --libs qgemm --filter "$F" --warm-jobs 6 --iters 1 >> $L/warm.log 2>&1 ) &
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c1 c2; do grep -E "passed|rc=" $L/$f.log | tail -2 | tr '\n' ' '; echo; grep -E "^\[ FAIL|    FAIL" $L/$f.log | head -6 | cut -c1-240; done
for f in py1 py2; do tail -2 $L/$f.log | tr '\n' ' '; echo; grep -E "^(FAILED|ERROR) " $L/$f.log | head -10 | cut -c1-200; done
grep -E "^== |rc=|PASS|FAIL|passed|failed" $L/suite.log | cut -c1-200 | tail -30
# ---- phase 2: timings, alone
for v in 0 1; do
  echo "== grouped MCB=$v t=$((SECONDS-T0))"
  QGEMM_FP8_GROUPED_MCB=$v timeout $(cap 110) python3 bench/peers.py --libs deepgemm,qgemm --filter "$F" --iters 20 --out $OUT/grouped-mcb$v > $L/grouped-$v.log 2>&1
  echo "rc=$?"; grep -iE "geomean|worst" $OUT/grouped-mcb$v/peers.txt | head -12 | cut -c1-200
done
for v in perhead batched; do
  echo "== fp8 einsum $v t=$((SECONDS-T0))"
  E=; [ $v = batched ] && E=batched
  QGEMM_FP8_EINSUM=$E timeout $(cap 50) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds einsum --where 'expr=fp8 bhr,hdr->bhd' --iters 15 --out $OUT/fp8einsum-$v > $L/fp8e-$v.log 2>&1
  echo "rc=$?"; grep -E "^einsum" $OUT/fp8einsum-$v/peers-families.txt | cut -c1-200
done
echo "done t=$((SECONDS-T0))"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
