#!/bin/bash
# bench/pmqa_variants.sh -- the paged MQA logits organisations (QGEMM_PMQA_VARIANT values, e.g.
# shared2, dual2, split4, split4r112w, split4r112x, split4r112p; unset: split4r112u, the default since
# session w, 2026-11-29 (split4r112x before h200-11-w1, split4r112w before h200-10-v4); pipe2 was removed, tag
# exp/pmqa-pipe2-2026-11-28) checked and timed beside DeepGEMM in one GPU run (bench/pmqa_ab.py
# times several organisations on inputs built once a row instead). Checks first
# (each bounded by timeout: a hung variant costs its limit, not the run): the C GPU test (every
# variant, bitwise repeats, graph replay with new context_lens), then pytest -k paged restricted
# to PYK (each new variant also compared bitwise with the default); then
# bench/peers_families.py --kinds paged-mqa under each of VARIANTS.
#   usage (repository root, H200): bash bench/pmqa_variants.sh   [OUT=dir] [ROWS=8] [ITERS=10]
#     [VARIANTS="shared2 dual2"] [PYK="paged and (shared2 or dual2) and (700 or 2000)"; PYK= skips pytest] [BUILD=1]
set -u
OUT=${OUT:-/tmp/pmqa-variants}
ROWS=${ROWS:-8}
ITERS=${ITERS:-10}
VARIANTS=${VARIANTS:-"shared2 dual2"}
PYK=${PYK-"paged and (shared2 or dual2) and (700 or 2000)"}
mkdir -p "$OUT"
export QGEMM_CACHE_DIR=${QGEMM_CACHE_DIR:-/tmp/qc} DG_JIT_CACHE_DIR=${DG_JIT_CACHE_DIR:-/tmp/dgc}
export PYTHONUNBUFFERED=1
T0=$SECONDS
if [ "${BUILD:-1}" = 1 ]; then
    (make -j16 build/qgemm_tests > "$OUT/make.log" 2>&1 || tail -20 "$OUT/make.log") &
    (python3 python/setup.py build_ext --inplace > "$OUT/pybuild.log" 2>&1 || tail -20 "$OUT/pybuild.log") &
    [ -f .peers/env.sh ] || (bash .peers/build.sh > "$OUT/dgbuild.log" 2>&1 || tail -5 "$OUT/dgbuild.log") &
    wait
fi
source .peers/env.sh
export PYTHONPATH=python:bench:${PYTHONPATH:-}
echo "built t=$((SECONDS - T0))"
unset QGEMM_PMQA_VARIANT
fail=0
# the C test (all variants) and pytest side by side: both JIT-compile on the CPU most of the time
(timeout 150 build/qgemm_tests gpu_paged_mqa_logits > "$OUT/c-gpu.log" 2>&1; echo "rc=$?" >> "$OUT/c-gpu.log") &
if [ -n "$PYK" ]; then
    (timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_indexer_gpu.py -k "$PYK" \
        > "$OUT/py.log" 2>&1; echo "rc=$?" >> "$OUT/py.log") &
else
    echo "pytest skipped (PYK empty)" > "$OUT/py.log"; echo "rc=0" >> "$OUT/py.log"
fi
wait
rc=$(sed -n 's/^rc=//p' "$OUT/c-gpu.log" | tail -1); [ "$rc" = 0 ] || fail=1
echo "C gpu_paged_mqa_logits rc=$rc: $(grep -c '^    ok' "$OUT/c-gpu.log") ok, $(grep -c '^    FAIL' "$OUT/c-gpu.log") FAIL t=$((SECONDS - T0))"
grep '^    FAIL' "$OUT/c-gpu.log" | head -8
rc=$(sed -n 's/^rc=//p' "$OUT/py.log" | tail -1); [ "$rc" = 0 ] || fail=1
echo "pytest -k '$PYK' rc=$rc: $(grep -E 'passed|failed|error' "$OUT/py.log" | tail -1) t=$((SECONDS - T0))"
grep -E "^(FAILED|ERROR)" "$OUT/py.log" | head -8 | cut -c1-200
for v in $VARIANTS; do
    QGEMM_PMQA_VARIANT=$v timeout 120 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM \
        --kinds paged-mqa --max-rows "$ROWS" --iters "$ITERS" --out "$OUT/paged-$v" > "$OUT/bench-$v.log" 2>&1
    echo "== [$v] bench rc=$? t=$((SECONDS - T0))"
    grep -E "^paged|geomean" "$OUT/paged-$v/peers-families.txt" 2>/dev/null | cut -c1-170 || tail -5 "$OUT/bench-$v.log"
done
echo "pmqa variants: $([ $fail = 0 ] && echo PASS || echo FAIL) t=$((SECONDS - T0))"
exit $fail
