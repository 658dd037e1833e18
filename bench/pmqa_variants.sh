#!/bin/bash
# bench/pmqa_variants.sh -- the paged MQA logits organisations (QGEMM_PMQA_VARIANT: shared2, the
# default; shared4) checked and timed beside DeepGEMM in one GPU run. Checks first (each bounded
# by timeout: a hung variant costs its limit, not the run): the C GPU test (both variants,
# bitwise repeats, graph replay with new context_lens), then
# pytest -k paged under each variant; then bench/peers_families.py --kinds paged-mqa under each.
#   usage (repository root, H200): bash bench/pmqa_variants.sh   [OUT=dir] [ROWS=8]
set -u
OUT=${OUT:-/tmp/pmqa-variants}
ROWS=${ROWS:-8}
mkdir -p "$OUT"
export QGEMM_CACHE_DIR=${QGEMM_CACHE_DIR:-/tmp/qc} DG_JIT_CACHE_DIR=${DG_JIT_CACHE_DIR:-/tmp/dgc}
export PYTHONUNBUFFERED=1
T0=$SECONDS
(make -j16 build/qgemm_tests > "$OUT/make.log" 2>&1 || tail -20 "$OUT/make.log") &
(python3 python/setup.py build_ext --inplace > "$OUT/pybuild.log" 2>&1 || tail -20 "$OUT/pybuild.log") &
[ -f .peers/env.sh ] || (bash .peers/build.sh > "$OUT/dgbuild.log" 2>&1 || tail -5 "$OUT/dgbuild.log") &
wait
source .peers/env.sh
export PYTHONPATH=python:bench:${PYTHONPATH:-}
echo "built t=$((SECONDS - T0))"
VARIANTS="shared2 shared4"
fail=0
timeout 300 build/qgemm_tests gpu_paged_mqa_logits > "$OUT/c-gpu.log" 2>&1
rc=$?; [ $rc = 0 ] || fail=1
echo "C gpu_paged_mqa_logits rc=$rc: $(grep -c '^    ok' "$OUT/c-gpu.log") ok, $(grep -c '^    FAIL' "$OUT/c-gpu.log") FAIL t=$((SECONDS - T0))"
grep '^    FAIL' "$OUT/c-gpu.log" | head -8
for v in $VARIANTS; do
    QGEMM_PMQA_VARIANT=$v timeout 240 python3 -m pytest -q -rs -p no:cacheprovider tests/python -k paged > "$OUT/py-$v.log" 2>&1
    rc=$?; [ $rc = 0 ] || fail=1
    echo "pytest -k paged [$v] rc=$rc: $(tail -1 "$OUT/py-$v.log") t=$((SECONDS - T0))"
done
for v in $VARIANTS; do
    QGEMM_PMQA_VARIANT=$v timeout 300 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM \
        --kinds paged-mqa --max-rows "$ROWS" --out "$OUT/$v" > "$OUT/bench-$v.log" 2>&1
    echo "== [$v] bench rc=$? t=$((SECONDS - T0))"
    grep -iE "paged|geomean" "$OUT/$v/peers-families.txt" 2>/dev/null | cut -c1-200 || tail -5 "$OUT/bench-$v.log"
done
echo "pmqa variants: $([ $fail = 0 ] && echo PASS || echo FAIL) t=$((SECONDS - T0))"
exit $fail
