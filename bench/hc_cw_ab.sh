#!/bin/bash
# bench/hc_cw_ab.sh -- issue 50, session w (helper hc): QGEMM_HC_VARIANT=acc4+fit+cw4 (B's TF32
# rounding over 4 converter warps, 3 beside two math warpgroups) against acc4+fit (one converter
# warp) beside DeepGEMM (run as bench/results/2026-11-29-h200-12-w2 when acc4+fit was the default;
# since then cw4 is, and the alt column, HC_ALT, is the former default acc4+fit), on the HC rows that were below 0.95x on the H200
# (2026-11-29-h200-11-w1: M 13 / 137 with 16 splits, M 4096 / 8192 unsplit, K 28672 with 16
# splits: 14 rows; HC_ROWS=all for the 24). About 60 s once built:
#   bash bench/hc_cw_ab.sh      (repository root; build/qgemm_tests, the Python extension and .peers
#                                built; OUT=dir for the logs; HC_ALT=NAME=VALUE another variant)
# Phase 1 (parallel, <= 35 s): gpu_hc_prenorm on the default and rounder/acc4+fit+cw4 only (9 cases
#   each against fp64, the cw4 output asserted bit for bit the default's), while one-iteration passes
#   of the timing rows fill qgemm's and DeepGEMM's JIT caches (five processes: NVRTC is serial in one).
# Phase 2 (alone, <= 35 s): peers_families.py --kinds hc --iters 10 --alt-env, kineto and events:
#   its "hc kineto/events" lines (default) and the "QGEMM_HC_VARIANT=...: ... (PASS|CHECK)" lines
#   (the variant), then one SUMMARY line per column and timing: geomean, worst row, rows < 0.95.
# Phase 2b (alone, <= 10 s): the one row that k4 changes (13x24x28672/16, clusters of 4 instead
#   of 2) under acc4+fit+cw4+k4, in the table's alt columns.
set -u
OUT=${OUT:-/tmp/hc-cw}
mkdir -p "$OUT/warm"
export QGEMM_CACHE_DIR=${QGEMM_CACHE_DIR:-/tmp/qc} DG_JIT_CACHE_DIR=${DG_JIT_CACHE_DIR:-/tmp/dgc}
export PYTHONUNBUFFERED=1
[ -f .peers/env.sh ] && source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
HC_ALT=${HC_ALT:-QGEMM_HC_VARIANT=acc4+fit}
SMALL=(--where 'kind=hc|m=13|splits=16' --where 'kind=hc|m=137|splits=16')
LARGE=(--where 'kind=hc|m=4096|splits=None' --where 'kind=hc|m=8192|splits=None'
       --where 'kind=hc|m=4096|k=28672' --where 'kind=hc|m=8192|k=28672')
if [ "${HC_ROWS:-}" = all ]; then
    SMALL=(--where 'kind=hc|m=13' --where 'kind=hc|m=137')
    LARGE=(--where 'kind=hc|m=4096' --where 'kind=hc|m=8192')
fi
PF=(python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds hc --alt-env "$HC_ALT")
PF2=(python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds hc
     --alt-env QGEMM_HC_VARIANT=acc4+fit+cw4+k4 --where 'kind=hc|m=13|k=28672|splits=16')
T0=$SECONDS
# ---- phase 1
( timeout 35 env QG_TEST_HC_VARIANTS=rounder/acc4+fit+cw4 build/qgemm_tests gpu_hc_prenorm \
    > "$OUT/c-gpu.log" 2>&1; echo "c rc=$? t=$((SECONDS - T0))" >> "$OUT/c-gpu.log" ) &
# one warm process per K (DeepGEMM's kernels are keyed by K and splits, its JIT is nvcc), two for
# K 28672 (small and large M: 6 rows)
for KG in 28672:S 28672:L 7680:SL 7168:SL; do
    K=${KG%:*} G=${KG#*:} W=() R=()
    [[ $G == *S* ]] && R+=("${SMALL[@]}")
    [[ $G == *L* ]] && R+=("${LARGE[@]}")
    for w in "${R[@]}"; do [ "$w" = --where ] && W+=(--where) || W+=("$w|k=$K"); done
    ( timeout 35 "${PF[@]}" "${W[@]}" --iters 1 --out "$OUT/warm/k$K$G" > "$OUT/warm/k$K$G.log" 2>&1 ) &
done
# (phase 2b's variant: cw4 + k4, which only changes 13x24x28672/16: clusters of 4, 64 CTAs)
( timeout 35 "${PF2[@]}" --iters 1 --out "$OUT/warm/k4" > "$OUT/warm/k4.log" 2>&1 ) &
wait
echo "== gpu_hc_prenorm, default + rounder/acc4+fit+cw4 (t=$((SECONDS - T0)) s)"
grep -E "^\[ (PASS|FAIL|SKIP)|passed|c rc" "$OUT/c-gpu.log"
echo "cases: $(grep -c '^    ok' "$OUT/c-gpu.log") ok, $(grep -c '^    FAIL' "$OUT/c-gpu.log") FAIL"
grep -E "^    FAIL" "$OUT/c-gpu.log" | head -6 | cut -c1-200
# ---- phase 2
echo "== peers_families hc, default vs $HC_ALT (t=$((SECONDS - T0)) s)"
timeout 35 "${PF[@]}" "${SMALL[@]}" "${LARGE[@]}" --iters 10 --out "$OUT/hc" > "$OUT/hc.log" 2>&1
echo "rc=$?"
grep -E "^hc " "$OUT/hc/peers-families.txt" 2>/dev/null | cut -c1-190
python3 - "$OUT/hc/peers-families.json" "$HC_ALT" <<'EOF'
import json, math, sys
try:
    rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r.get("kind") == "hc"]
except Exception as e:  # noqa: BLE001
    sys.exit(f"no rows: {e}")
for col, name in (("qgemm", "default (acc4+fit+cw4 since 2026-11-29)"), ("qgemm-v1", sys.argv[2])):
    for t in ("kineto", "events"):
        v = [(r[f"deepgemm_{t}_us"] / r[f"{col}_{t}_us"], r["shape"]) for r in rows
             if r.get(f"deepgemm_{t}_us") and r.get(f"{col}_{t}_us")]
        if not v:
            print(f"SUMMARY {name} {t}: no timings"); continue
        g = math.exp(sum(math.log(x) for x, _ in v) / len(v))
        w = min(v)
        low = [f"{s} {x:.2f}" for x, s in v if x < 0.95]
        d = [r.get(f"{col}_diff") for r in rows if r.get(f"{col}_diff") is not None]
        err = sum(1 for r in rows if col in r.get("errors", {}))
        print(f"SUMMARY {name} {t}: DeepGEMM/qgemm geomean {g:.3f} over {len(v)} rows, worst {w[0]:.3f} "
              f"({w[1]}), rows < 0.95: {len(low)} {low}; max diff vs fp64 "
              f"{max(d) if d else float('nan'):.1e}, errors {err}")
EOF
echo "== 2b: 13x24x28672/16, default vs acc4+fit+cw4+k4 (t=$((SECONDS - T0)) s)"
timeout 10 "${PF2[@]}" --iters 10 --out "$OUT/hc-k4" > "$OUT/hc-k4.log" 2>&1
echo "rc=$?"; grep -E "^hc " "$OUT/hc-k4/peers-families.txt" 2>/dev/null | cut -c1-190
echo "done t=$((SECONDS - T0)) s; logs in $OUT"
