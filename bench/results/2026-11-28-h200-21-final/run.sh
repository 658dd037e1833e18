#!/bin/bash
# session q, call 3 (final): correctness of main after the fixes (C GPU tests touched since call 1,
# the whole Python suite, the CLI's GPU checks), then the tables beside DeepGEMM, timed alone.
# The JIT caches (qgemm's and DeepGEMM's) are warmed during the correctness phase by a first,
# discarded pass of each timing script, so the timed passes compile nothing.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L $L/warm
left() { echo $((560 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=python:$PYTHONPATH
KINDS=einsum,mqa,paged-mqa,hc,cast
# ---- phase 1: correctness, side by side, with the warm-up passes
( timeout 230 build/qgemm_tests gpu_fp8out gpu_bf16 gpu_hc gpu_mqa gpu_paged gpu_cast gpu_hostile_rejected gpu_grouped_masked gpu_masked_graph > $L/c-gpu.log 2>&1; echo "c rc=$? t=$((SECONDS-T0))" >> $L/c-gpu.log ) &
( timeout 230 python3 -m pytest -q -rs -p no:cacheprovider tests/python > $L/python.log 2>&1; echo "py rc=$? t=$((SECONDS-T0))" >> $L/python.log ) &
( timeout 150 build/qgemm check --family all > $L/check.log 2>&1; echo "check rc=$? t=$((SECONDS-T0))" >> $L/check.log
  timeout 75 bash tests/cli.sh build > $L/cli.log 2>&1; echo "cli rc=$? t=$((SECONDS-T0))" >> $L/cli.log ) &
for k in einsum mqa paged-mqa hc; do
  ( timeout 225 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds $k --max-rows 8 --iters 2 --out $L/warm/$k > $L/warm/$k.log 2>&1 ) &
done
( timeout 225 python3 bench/ab_configs.py --rounds 1 > $L/warm/ab.log 2>&1 ) &
( timeout 225 python3 bench/bmk_variants.py --runs 2 --out $L/warm/bmk.json > $L/warm/bmk.log 2>&1 ) &
wait
echo "== correctness t=$((SECONDS-T0))"
grep -E "^\[ (PASS|FAIL)|passed|c rc" $L/c-gpu.log | tail -16; grep -E "    FAIL" $L/c-gpu.log | head -6 | cut -c1-240
tail -2 $L/python.log; grep -E "^FAILED" $L/python.log | head | cut -c1-200
tail -2 $L/check.log; grep -E " FAIL" $L/check.log | head -5 | cut -c1-200; tail -3 $L/cli.log
# ---- phase 2: timings, alone
echo "== peers families t=$((SECONDS-T0))"
timeout $(cap 170) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds $KINDS --max-rows 8 --out $OUT > $L/peers.log 2>&1
echo "peers rc=$?"; sed -n '/^kind/,$p' $OUT/peers-families.txt | cut -c1-170 | tail -60
echo "== heuristic A/B t=$((SECONDS-T0))"
timeout $(cap 80) python3 bench/ab_configs.py --rounds 2 2>&1 | grep -vi warn > $OUT/ab-configs.log
echo "ab rc=$?"; grep -E "SUMMARY|CHECK|PASS|FAIL" $OUT/ab-configs.log | cut -c1-200
echo "== bmk variants t=$((SECONDS-T0))"
timeout $(cap 75) python3 bench/bmk_variants.py --out $OUT/bmk-variants.json > $OUT/bmk-variants.log 2>&1; echo "bmk rc=$?"; tail -30 $OUT/bmk-variants.log | cut -c1-200
echo "done t=$((SECONDS-T0))"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
