#!/bin/bash
# session r, call 3: branch int = main + bf16h + gmc (grouped B multicast) + swiglu + host + bmk
# (atomic batch sum) + paged (split4). Correctness first (parallel), then A/B timings alone.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L $L/warm
left() { echo $((550 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=python:bench:$PYTHONPATH
# ---- phase 1
( timeout 200 build/qgemm_tests gpu_bf16 > $L/c-bf16.log 2>&1; echo "c rc=$? t=$((SECONDS-T0))" >> $L/c-bf16.log ) &
( timeout 200 build/qgemm_tests gpu_paged gpu_mqa gpu_hc gpu_swiglu gpu_fp8out gpu_cast gpu_grouped gpu_masked > $L/c-fam.log 2>&1; echo "c rc=$? t=$((SECONDS-T0))" >> $L/c-fam.log ) &
( timeout 200 python3 -m pytest -q -rs -p no:cacheprovider tests/python > $L/python.log 2>&1; echo "py rc=$? t=$((SECONDS-T0))" >> $L/python.log ) &
( timeout 200 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_einsum --file test_attention --out $L/suite1 > $L/suite1.log 2>&1; echo "suite rc=$? t=$((SECONDS-T0))" >> $L/suite1.log ) &
( timeout 200 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_bf16 --file test_layout --out $L/suite2 > $L/suite2.log 2>&1; echo "suite rc=$? t=$((SECONDS-T0))" >> $L/suite2.log ) &
for v in split4 shared2; do
( QGEMM_PMQA_VARIANT=$v timeout 190 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds paged-mqa --max-rows 8 --iters 1 --out $L/warm/$v > $L/warm/p-$v.log 2>&1 ) &
done
( timeout 190 python3 bench/bmk_variants.py --runs 1 > $L/warm/bmk.log 2>&1 ) &
( timeout 190 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16-masked,bf16-contiguous --old-plan v2 --max-rows 5 --iters 1 --out $L/warm/bf16 > $L/warm/bf16.log 2>&1 ) &
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c-bf16 c-fam; do grep -E "passed|c rc" $L/$f.log | tail -2; grep -E "^\[ FAIL|    FAIL" $L/$f.log | head -8 | cut -c1-240; done
tail -2 $L/python.log; grep -E "^_+ test" $L/python.log | head -12 | cut -c1-160
for f in suite1 suite2; do tail -8 $L/$f.log | cut -c1-200; done
# ---- phase 2: timings, alone
for v in split4 shared2; do
  echo "== paged $v t=$((SECONDS-T0))"
  QGEMM_PMQA_VARIANT=$v timeout $(cap 60) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds paged-mqa --max-rows 8 --out $OUT/paged-$v > $L/paged-$v.log 2>&1
  echo "rc=$?"; grep -E "^paged|geomean" $OUT/paged-$v/peers-families.txt | cut -c1-170
done
echo "== bmk t=$((SECONDS-T0))"
timeout $(cap 90) python3 bench/bmk_variants.py --out $OUT/bmk-variants.json > $OUT/bmk-variants.log 2>&1; echo "bmk rc=$?"; tail -24 $OUT/bmk-variants.log | cut -c1-200
echo "== bf16 grouped v3 vs v2 t=$((SECONDS-T0))"
timeout $(cap 90) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds bf16-masked,bf16-contiguous --old-plan v2 --max-rows 5 --iters 15 --out $OUT/bf16 > $L/bf16.log 2>&1
echo "rc=$?"; sed -n '/^kind/,$p' $OUT/bf16/peers-families.txt | cut -c1-200 | tail -22
echo "== host t=$((SECONDS-T0))"
timeout $(cap 40) python3 bench/family_probe.py --host --calls 200 --out $OUT > $L/host.log 2>&1; echo "host rc=$?"; grep '^{' $L/host.log | cut -c1-200
echo "done t=$((SECONDS-T0))"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
