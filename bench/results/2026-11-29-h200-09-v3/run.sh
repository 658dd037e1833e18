#!/bin/bash
# session v, call 3, tree v-int1 with the new defaults (MQA deep4, BF16 split-K auto, FP8 heuristic
# notall+nomcb). Phase 1: acceptance, parallel (DeepGEMM's SM90 suite through qgemm.deep_gemm in 5 processes,
# the Python GPU suites in 2, the C GPU tests of the families in 1). Phase 2 (alone): the flipped defaults
# against their former settings beside DeepGEMM (MQA 24 rows, BF16 9 rows, heuristic 14 rows).
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((570 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -1 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
P=290
c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
S="python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM"
c sA $S --out $OUT/sA --file test_fp8_fp4 --only test_gemm --only test_k_grouped_gemm_contiguous --only test_m_grouped_gemm_contiguous
c sB $S --out $OUT/sB --file test_fp8_fp4 --only test_m_grouped_gemm_masked
c sC $S --out $OUT/sC --file test_bf16
c sD $S --out $OUT/sD --file test_einsum --file test_hyperconnection --file test_layout
c sE $S --out $OUT/sE --file test_attention
A="tests/python/test_gpu.py tests/python/test_einsum.py tests/python/test_indexer_gpu.py tests/python/test_training.py"
c py1 python3 -m pytest -q -rs -p no:cacheprovider $A
IGN=$(for f in $A; do printf -- "--ignore=%s " $f; done)
c py2 python3 -m pytest -q -rs -p no:cacheprovider tests/python $IGN
c cfam stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits gpu_mqa_logits gpu_hc_prenorm gpu_bf16_accuracy gpu_bf16_merged_accuracy gpu_bf16_splitk_accuracy gpu_bf16_batch_sum_accuracy gpu_fp8out gpu_swiglu gpu_cast_bitwise gpu_grouped_masked gpu_masked_graph_replay
wait
echo "== acceptance t=$((SECONDS-T0))"
for f in sA sB sC sD sE; do grep -E "^== |through|rc=" $L/$f.log | cut -c1-160; done
for f in py1 py2; do grep -E "passed|failed" $L/$f.log | tail -1; grep -E "^(FAILED|ERROR) " $L/$f.log | head -8 | cut -c1-200; grep rc= $L/$f.log; done
grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/cfam.log | tr '\n' ' '; echo
grep -E "^    FAIL" $L/cfam.log | head -8 | cut -c1-220
echo "== mqa t=$((SECONDS-T0))"
mkdir -p $OUT/mqa
timeout $(cap 80) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds mqa --iters 5 --alt-env QGEMM_MQA_VARIANT=pipe --out $OUT/mqa > $L/mqa.log 2>&1; echo "rc=$?"
grep -A1 -E "^mqa +(kineto|events)" $OUT/mqa/peers-families.txt | cut -c1-170
echo "== bf16 t=$((SECONDS-T0))"
mkdir -p $OUT/bf16
timeout $(cap 60) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16 --iters 10 --alt-env QGEMM_BF16_SPLITK=off --where 'k=7168|accumulate=False|out_dtype=torch.bfloat16|major_a=MajorTypeAB.KMajor|major_b=MajorTypeAB.KMajor' --out $OUT/bf16 > $L/bf16.log 2>&1; echo "rc=$?"
grep -A1 -E "^bf16 +(kineto|events)" $OUT/bf16/peers-families.txt | cut -c1-170
echo "== heur t=$((SECONDS-T0))"
[ $(left) -gt 40 ] && { timeout $(cap 90) python3 bench/heur_ab.py --iters 10 --warm-jobs 12 --budget $(( $(left) - 12 )) --variant default --variant none=QGEMM_FP8_HEUR=none --filter '^masked (6x1024|1x1024|4x256)x6144x7168 |^masked 4x256x(7168x3072|4096x4096|4096x2048) |^contiguous 32x256x|^contiguous (4x8192|8x4096)x6144x7168 |^dense 4096x4096x7168 ' > $OUT/heur.log 2>&1; echo "rc=$?"
  grep -E "SUMMARY|PASS|FAIL" $OUT/heur.log | head -8 | cut -c1-200; }
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
