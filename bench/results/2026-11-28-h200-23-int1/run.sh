#!/bin/bash
# session r, call 2: branch int = main + bf16h (BF16 planner v2, masked WG skip) + swiglu (fused
# SwiGLU) + host (family host path) + hc2 (HC swap mode). Correctness first, then A/B timings.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L $L/warm
left() { echo $((555 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=python:bench:$PYTHONPATH
# ---- phase 1: correctness (parallel) + warm-up passes of the timing scripts
( timeout 210 build/qgemm_tests bf16 swiglu gpu_hc_prenorm hc_compile_every_mode indexer_validation gpu_fp8out > $L/c-gpu.log 2>&1; echo "c rc=$? t=$((SECONDS-T0))" >> $L/c-gpu.log ) &
( timeout 210 python3 -m pytest -q -rs -p no:cacheprovider tests/python > $L/python.log 2>&1; echo "py rc=$? t=$((SECONDS-T0))" >> $L/python.log ) &
( timeout 210 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_bf16 --file test_hyperconnection --file test_einsum --file test_attention --out $L/suite > $L/suite.log 2>&1; echo "suite rc=$? t=$((SECONDS-T0))" >> $L/suite.log ) &
( timeout 200 python3 bench/hc_ab.py --iters 2 > $L/warm/hc.log 2>&1 ) &
( timeout 200 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16,bf16-masked,bf16-contiguous,bf16-k-grouped --old-plan --max-rows 5 --iters 1 --out $L/warm/bf16 > $L/warm/bf16.log 2>&1 ) &
( timeout 200 python3 bench/peers_fp8out.py --kind swiglu --calls 2 > $L/warm/swiglu.log 2>&1 ) &
wait
echo "== correctness t=$((SECONDS-T0))"
grep -E "^\[ (PASS|FAIL)|passed|c rc" $L/c-gpu.log | tail -12; grep -E "FAIL" $L/c-gpu.log | head -8 | cut -c1-240
tail -2 $L/python.log; grep -E "^FAILED" $L/python.log | head -12 | cut -c1-220
tail -12 $L/suite.log | cut -c1-200
# ---- phase 2: timings, alone
echo "== hc A/B t=$((SECONDS-T0))"
timeout $(cap 80) python3 bench/hc_ab.py > $OUT/hc-ab.log 2>&1; echo "hc rc=$?"; tail -22 $OUT/hc-ab.log | cut -c1-200
echo "== bf16 v1/v2 t=$((SECONDS-T0))"
timeout $(cap 130) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16,bf16-masked,bf16-contiguous,bf16-k-grouped --old-plan --max-rows 5 --iters 15 --out $OUT > $L/peers.log 2>&1
echo "peers rc=$?"; sed -n '/^kind/,$p' $OUT/peers-families.txt | cut -c1-200 | tail -40
echo "== host t=$((SECONDS-T0))"
timeout $(cap 40) python3 bench/family_probe.py --host --calls 200 --out $OUT > $L/host.log 2>&1; echo "host rc=$?"; grep '^{' $L/host.log | cut -c1-200
echo "== swiglu t=$((SECONDS-T0))"
timeout $(cap 70) python3 bench/peers_fp8out.py --kind swiglu --out $OUT/swiglu.jsonl > $OUT/swiglu.log 2>&1; echo "swiglu rc=$?"; tail -16 $OUT/swiglu.log | cut -c1-200
echo "done t=$((SECONDS-T0))"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
