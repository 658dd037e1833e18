#!/bin/bash
# session v, call 2, tree v-int1 (main 85afc19 + heur, einsum, cleanup, bf16sk, mqa, kloop as of 04:40; every new
# path behind its knob, defaults unchanged). Phase 1 (correctness, parallel) + ncu of paged split4r112w beside
# DeepGEMM; phase 2 (timings, alone): heur_ab, BF16 split-K, MQA deep4, einsum, FP8 K loop.
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((575 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
wait
echo "built t=$((SECONDS-T0))"
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -2 $L/dgbuild.log; echo "dg built t=$((SECONDS-T0))") &
DGB=$!
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
P=150
c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c c1 QG_TEST_MQA_VARIANTS=deep4 stdbuf -oL build/qgemm_tests gpu_mqa_logits gpu_paged_mqa_logits
c c2 stdbuf -oL build/qgemm_tests gpu_bf16_splitk_accuracy gpu_bf16_accuracy
c c3 QGEMM_FP8_KLOOP=new stdbuf -oL build/qgemm_tests gpu_forced_configs gpu_grouped_contiguous gpu_reference_matches_cpu
c py1 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_gpu.py tests/python/test_training.py -k "heur or splitk"
c py2 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_indexer_gpu.py -k "mqa_logits and not paged"
wait $DGB
N="ncu --clock-control none --set full --import-source no"
R=$OUT/ncu; mkdir -p $R
( timeout 150 $N -k "regex:qg_paged_mqa_logits_kernel|sm90_fp8_paged_mqa_logits" --launch-skip 2 --launch-count 2 -o $R/paged -f python3 .scratch/u/ncu_drv.py paged 4096 2 64 8192 f32 > $L/ncu.log 2>&1; echo "ncu rc=$?" >> $L/ncu.log
  ncu -i $R/paged.ncu-rep --page details --print-units base > $R/paged-details.txt 2>&1
  ncu -i $R/paged.ncu-rep --page source --csv --print-source sass > $R/paged-sass.csv 2>&1; gzip -f $R/paged-sass.csv; rm -f $R/paged.ncu-rep ) &
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c1 c2 c3; do grep -E "passed|rc=" $L/$f.log | tail -2 | tr '\n' ' '; echo; grep -E "^\[ FAIL|    FAIL" $L/$f.log | head -6 | cut -c1-240; done
for f in py1 py2; do tail -2 $L/$f.log | tr '\n' ' '; echo; grep -E "^(FAILED|ERROR) " $L/$f.log | head -8 | cut -c1-200; done
tail -2 $L/ncu.log; grep -E "Duration|Registers Per|Block Size|Issue Slots Busy|Executed Instructions  " $R/paged-details.txt | head -12
echo "== mqa deep4 t=$((SECONDS-T0))"
mkdir -p $OUT/mqa
timeout $(cap 100) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds mqa --iters 5 --alt-env QGEMM_MQA_VARIANT=deep4 --out $OUT/mqa > $L/mqa.log 2>&1; echo "rc=$?"
grep -A1 -E "^mqa +(kineto|events)" $OUT/mqa/peers-families.txt | cut -c1-170
echo "== bf16 split-K t=$((SECONDS-T0))"
mkdir -p $OUT/bf16
timeout $(cap 80) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16 --iters 10 --alt-env QGEMM_BF16_SPLITK=auto --where 'k=7168|accumulate=False|out_dtype=torch.bfloat16|major_a=MajorTypeAB.KMajor|major_b=MajorTypeAB.KMajor' --out $OUT/bf16 > $L/bf16.log 2>&1; echo "rc=$?"
grep -A1 -E "^bf16 +(kineto|events)" $OUT/bf16/peers-families.txt | cut -c1-170
echo "== heur t=$((SECONDS-T0))"
timeout $(cap 95) python3 bench/heur_ab.py --iters 10 --warm-jobs 12 --budget 75 --filter '^contiguous (4x8192|8x4096)x6144x7168 |^contiguous-psum 8x4096x6144x7168 |^masked (6x1024|1x1024|4x256)x6144x7168 |^masked 4x256x(7168x3072|4096x4096|4096x2048) |^contiguous 32x256x|^dense 4096x4096x7168 ' > $OUT/heur.log 2>&1; echo "rc=$?"
grep -E "SUMMARY|PASS|FAIL" $OUT/heur.log | head -12 | cut -c1-200
echo "== kloop t=$((SECONDS-T0))"
KF='^dense 4096x(4096x7168|7168x16384) |^contiguous (4x8192|8x4096)x6144x7168 '
[ $(left) -gt 40 ] && { timeout $(cap 40) python3 bench/peers.py --libs deepgemm,qgemm --filter "$KF" --iters 10 --out $OUT/kloop-old > $L/kloop-old.log 2>&1
  QGEMM_FP8_KLOOP=new timeout $(cap 40) python3 bench/peers.py --libs deepgemm,qgemm --filter "$KF" --iters 10 --out $OUT/kloop-new > $L/kloop-new.log 2>&1
  grep -E "^(dense|contiguous) " $OUT/kloop-old/peers.txt $OUT/kloop-new/peers.txt | cut -c1-130; }
echo "== einsum t=$((SECONDS-T0))"
[ $(left) -gt 60 ] && { OUT=$OUT/einsum BUDGET=$(cap 88) timeout $(cap 92) bash bench/einsum_ab.sh > $OUT/einsum.log 2>&1; echo "rc=$?"; grep -E "SUMMARY|HOST|PASS|FAIL" $OUT/einsum.log | head -16 | cut -c1-200; }
echo "== end t=$((SECONDS-T0))"
gzip -c .peers/DeepGEMM/deep_gemm/_C*.so > $R0/dgso.gz 2>/dev/null; ls -la $R0/dgso.gz
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
