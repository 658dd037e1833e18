#!/bin/bash
# bench/einsum_ab.sh -- issue 49's einsum rows below 0.95x DeepGEMM and their host cost (helper
# "einsum", session v): one GPU command, under 90 s once built (.peers/build.sh, the extension).
#
#   source .peers/env.sh; OUT=/tmp/einsum-ab bash bench/einsum_ab.sh
#
# 1. peers_families.py, 13 einsum rows (bmk,bnk->mn at B = 129, fp8_einsum at B = 4, 32, 128,
#    4096, bhr,hdr->bhd at H = 128, B = 4, 32, 128), DeepGEMM beside, kineto and CUDA events
#    (--iters 10): the default column is the new fast paths (host only, no switch); the alt
#    column runs QGEMM_EINSUM_VARIANT=new (bf16cast: a bf16 d of bmk,bnk->mn as DeepGEMM's FP32
#    sum + cast; sfkernel: fp8_einsum's scale transpose by qgemm's kernel). Caveat: the alt
#    column's calls set and pop the variable around each call (os.environ, ~2-3 us of host
#    time inside its CUDA-event window; kineto is unaffected).
# 2. family_probe.py --host: CPU us per call of 4 of those calls, qgemm (default) and DeepGEMM.
# 3. pytest, 27 GPU tests of the paths changed: bmk,bnk->mn at B = 129 (the fast path's
#    default launches, the bf16cast variant, its explicit splits), fp8_einsum (default and
#    sfkernel bytes against the per-head loop, DeepGEMM's check), CUDA-graph replays of bmk
#    under both, and the compiled + graph-replayed bmk case of test_compile_families.
# Prints SUMMARY lines (one per group, column and timing), HOST lines, PASS / FAIL lines.
# Each step has a time limit out of BUDGET (88 s): a step cut short prints what it finished.
set -u
OUT=${OUT:-/tmp/einsum-ab}
mkdir -p "$OUT"
export QGEMM_CACHE_DIR=${QGEMM_CACHE_DIR:-/tmp/qc} PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD/python:$PWD/bench:${PYTHONPATH:-}
T0=$SECONDS
BUDGET=${BUDGET:-88}
left() { echo $((BUDGET - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }

F8='expr=fp8 bhr,hdr->bhd'
PH='expr=bhr,hdr->bhd|h=128'
timeout "$(cap 45)" python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds einsum \
    --where 'expr=bmk,bnk->mn|b=129' --where "$F8|b=4" --where "$F8|b=32" --where "$F8|b=128" \
    --where "$F8|b=4096" --where "$PH|b=4" --where "$PH|b=32" --where "$PH|b=128" \
    --iters 10 --alt-env QGEMM_EINSUM_VARIANT=new --out "$OUT/pf" > "$OUT/pf.log" 2>&1
rc=$?
echo "== peers_families rc=$rc t=$((SECONDS - T0))"
if [ -f "$OUT/pf/peers-families.json" ]; then
    [ -f "$OUT/pf/peers-families.txt" ] && grep -E "^einsum " "$OUT/pf/peers-families.txt" | cut -c1-175
    python3 - "$OUT/pf/peers-families.json" <<'PYEOF'
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
PYEOF
else
    echo "FAIL peers_families: no table (see $OUT/pf.log)"; tail -5 "$OUT/pf.log"
fi

# the host cost of one call (CPU us, median; the GPU kept busy), qgemm's default and DeepGEMM
timeout "$(cap 12)" python3 bench/family_probe.py --host --calls 200 --out "$OUT/host" --cases \
"kind=einsum|expr=bmk,bnk->mn|b=129|m=128|n=384|k=128|f32=True;\
kind=einsum|expr=bmk,bnk->mn|b=129|m=256|n=256|k=256|f32=False;\
kind=einsum|expr=bhr,hdr->bhd|b=4|h=128|r=512|d=128;kind=einsum|expr=fp8 bhr,hdr->bhd|b=4" \
    > "$OUT/host.log" 2>&1
echo "== host cost rc=$? t=$((SECONDS - T0))"
grep -E '^\{' "$OUT/host.log" > "$OUT/host.rows"
python3 - "$OUT/host.rows" <<'PYEOF'
import json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:  # (a setup failure's message)
        print("FAIL host:", line.strip()[:150])
        continue
    name = " ".join(f"{k}={v}" for k, v in r["case"].items() if k != "kind")
    q, d = r.get("qgemm_host_us", float("nan")), r.get("deepgemm_host_us", float("nan"))
    print(f"HOST {name:52} qgemm {q:6.1f} us  DeepGEMM {d:6.1f} us")
PYEOF

timeout "$(cap 40)" python3 -m pytest -q -x -p no:cacheprovider tests/python/test_einsum.py \
    tests/python/test_compile_families.py \
    -k "gpu and ((129- and (atomic-False or atomic-True or bf16cast-False)) or bf16cast-bf16 or batched_matches or gpu_fp8_einsum[ or bmk_graph_replay or replayed_bf16[2])" \
    > "$OUT/pytest.log" 2>&1
rc=$?
echo "== pytest rc=$rc t=$((SECONDS - T0))"
tail -3 "$OUT/pytest.log"
grep -E "^(FAILED|ERROR) " "$OUT/pytest.log" | head -8 | cut -c1-200
if [ $rc -eq 0 ] && grep -qE "[0-9]+ passed" "$OUT/pytest.log"; then echo "PASS pytest"
else echo "FAIL pytest (rc $rc; 124: the time limit; nothing passed: no GPU?)"; fi
echo "done t=$((SECONDS - T0))"
