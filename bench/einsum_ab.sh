#!/bin/bash
# bench/einsum_ab.sh -- issue 49's einsum rows below 0.95x DeepGEMM and their host cost (helper
# "einsum", session v): one GPU command, under 90 s once built (.peers/build.sh, the extension).
#
#   source .peers/env.sh; OUT=/tmp/einsum-ab bash bench/einsum_ab.sh
#
# 1. peers_families.py, 16 einsum rows (bmk,bnk->mn at B = 129, the 5 fp8_einsum rows, the 5
#    bhr,hdr->bhd rows at H = 128), DeepGEMM beside, kineto and CUDA events: the default column
#    is the new fast paths (host only, no switch); the alt column runs QGEMM_EINSUM_VARIANT=new
#    (bf16cast: a bf16 d of bmk,bnk->mn as DeepGEMM's FP32 sum + cast; sfkernel: fp8_einsum's
#    scale transpose by qgemm's kernel). Caveat: the alt column's calls set and pop the variable
#    around each call (os.environ, ~2-3 us of host time inside its CUDA-event window).
# 2. pytest, 27 GPU tests of the paths changed: bmk,bnk->mn at B = 129 (the fast path's
#    default launches, the bf16cast variant, its explicit splits), fp8_einsum (default and
#    sfkernel bytes against the per-head loop, DeepGEMM's check), CUDA-graph replays of bmk
#    under both, and the compiled + graph-replayed bmk case of test_compile_families.
# Prints one summary line per kind and variant, and PASS / FAIL lines.
set -u
OUT=${OUT:-/tmp/einsum-ab}
mkdir -p "$OUT"
export QGEMM_CACHE_DIR=${QGEMM_CACHE_DIR:-/tmp/qc} PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD/python:$PWD/bench:${PYTHONPATH:-}
T0=$SECONDS

timeout 50 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds einsum \
    --where 'expr=bmk,bnk->mn|b=129' --where 'expr=fp8 bhr,hdr->bhd' \
    --where 'expr=bhr,hdr->bhd|h=128' --iters 10 --alt-env QGEMM_EINSUM_VARIANT=new \
    --out "$OUT/pf" > "$OUT/pf.log" 2>&1
rc=$?
echo "== peers_families rc=$rc t=$((SECONDS - T0))"
if [ -f "$OUT/pf/peers-families.txt" ]; then
    grep -E "^einsum " "$OUT/pf/peers-families.txt" | cut -c1-175
    grep -A1 -E "^einsum +(kineto|events)" "$OUT/pf/peers-families.txt" | cut -c1-175
    python3 - "$OUT/pf/peers-families.json" <<'EOF'
import json, math, sys
rows = json.load(open(sys.argv[1]))["rows"]
groups = {"bmk": lambda r: r.get("expr") == "bmk,bnk->mn",
          "fp8": lambda r: str(r.get("expr", "")).startswith("fp8"),
          "per-head": lambda r: r.get("expr") == "bhr,hdr->bhd"}
bad = 0
for name, sel in groups.items():
    rs = [r for r in rows if sel(r)]
    for col, key in (("default", "qgemm"), ("variant new", "qgemm-v1")):
        for t in ("kineto", "events"):
            v = [r.get("deepgemm_over_qgemm_" + t) if key == "qgemm"
                 else r.get("deepgemm_over_qgemm-v1_" + t) for r in rs]
            v = [x for x in v if x]
            if v:
                g = math.exp(sum(map(math.log, v)) / len(v))
                print(f"SUMMARY {name:8} {col:11} {t:6} DeepGEMM/qgemm geomean {g:.3f} "
                      f"worst {min(v):.3f} over {len(v)} rows")
    for r in rs:
        for key in ("qgemm", "qgemm-v1"):
            d = r.get(key + "_diff")
            lim = 2e-3 if str(r.get("expr", "")).startswith("fp8") else 1e-5
            if d is None or d >= lim or r.get("errors"):
                bad += 1
                print(f"FAIL accuracy {name} {r.get('shape')} {r.get('d')} {key}: diff {d} "
                      f"errors {r.get('errors')}")
print("PASS accuracy (every qgemm / variant row diff below its bound)" if not bad
      else f"FAIL accuracy: {bad} rows")
EOF
else
    echo "FAIL peers_families: no table (see $OUT/pf.log)"; tail -5 "$OUT/pf.log"
fi

timeout 35 python3 -m pytest -q -x -p no:cacheprovider tests/python/test_einsum.py \
    tests/python/test_compile_families.py \
    -k "gpu and ((129- and (atomic-False or atomic-True or bf16cast-False)) or bf16cast-bf16 or batched_matches or gpu_fp8_einsum[ or bmk_graph_replay or replayed_bf16[2])" \
    > "$OUT/pytest.log" 2>&1
rc=$?
echo "== pytest rc=$rc t=$((SECONDS - T0))"
tail -3 "$OUT/pytest.log"
grep -E "^(FAILED|ERROR) " "$OUT/pytest.log" | head -8 | cut -c1-200
[ $rc -eq 0 ] && echo "PASS pytest" || echo "FAIL pytest (rc $rc; 124: the time limit)"
echo "done t=$((SECONDS - T0))"
