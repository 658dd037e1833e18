#!/bin/bash
# bench/einsum_host_ab.sh -- issue 49's einsum host cost (helper "ehost"): the one-call fast paths
# of einsum('bmk,bnk->mn') and fp8_einsum('bhr,hdr->bhd') on the H200, DeepGEMM beside, in one
# GPU command (~9 min with the builds; each step has a time limit out of BUDGET, 570 s):
#
#   OUT=$OUT bash bench/einsum_host_ab.sh      (tree with .peers/, as bench/results/*/run.sh)
#
# 0. builds: the library, the extension (QGEMM_WERROR=1), DeepGEMM (.peers/build.sh).
# 1. pytest: the GPU tests of the paths changed -- the fast paths against the checked ways
#    (bitwise where the sum is deterministic: test_gpu_bmk_fast_matches_checked,
#    test_gpu_fp8_einsum_fast_matches_checked), fp8_einsum's accuracy and its batched bytes
#    against the per-head loop (default and sfkernel), bmk's CUDA-graph replays; then
#    DeepGEMM's own test_einsum through qgemm.deep_gemm (bench/deepgemm_suite.py).
# 2. family_probe.py --host: CPU us per call, qgemm and DeepGEMM, of bmk 129x128x384x128 (fp32 d
#    += and bf16 d), bhr 4x128x512x128 and fp8_einsum B = 4, 32, 128; once with the default
#    (QGEMM_EINSUM_VARIANT unset: torch's scale copy before the one C call) and once with
#    QGEMM_EINSUM_VARIANT=sfkernel (the scale transpose kernel inside the one C call).
# 3. family_probe.py --events of the same rows under both (kineto, events after 2x L2 / 1 GiB,
#    graph replay, each with the call's CPU time).
# 4. peers_families.py --kinds einsum, the 18 bmk rows and the 5 fp8 rows, default then
#    sfkernel (the variable set for the whole process: no per-call setenv in the window).
# Prints HOST / EVENTS / SUMMARY lines; logs and JSON under $OUT.
set -u
OUT=${OUT:-/tmp/ehost}
mkdir -p "$OUT"
L=$OUT/logs; mkdir -p "$L"
export QGEMM_CACHE_DIR=${QGEMM_CACHE_DIR:-/tmp/qc} DG_JIT_CACHE_DIR=${DG_JIT_CACHE_DIR:-/tmp/dgc}
export PYTHONUNBUFFERED=1
T0=$SECONDS
BUDGET=${BUDGET:-570}
left() { echo $((BUDGET - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }

(make -j16 all > "$L/build.log" 2>&1 || tail -20 "$L/build.log") &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > "$L/pybuild.log" 2>&1 || tail -20 "$L/pybuild.log") &
(bash .peers/build.sh > "$L/dgbuild.log" 2>&1 || tail -5 "$L/dgbuild.log") &
wait
echo "== built t=$((SECONDS - T0))"
[ -f .peers/env.sh ] && source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}

timeout "$(cap 150)" python3 -m pytest -q -x tests/python/test_einsum.py \
    -k "gpu_bmk_fast or gpu_fp8_einsum or gpu_bmk_graph" > "$L/pytest.log" 2>&1
echo "== pytest rc=$? t=$((SECONDS - T0)): $(tail -1 "$L/pytest.log")"
grep -E "^(FAILED|ERROR)" "$L/pytest.log" | head -10
timeout "$(cap 90)" python3 bench/deepgemm_suite.py --file test_einsum --out "$OUT/dgsuite" \
    > "$L/dgsuite.log" 2>&1
echo "== deepgemm_suite test_einsum rc=$? t=$((SECONDS - T0))"; tail -4 "$L/dgsuite.log"

BMK='kind=einsum|expr=bmk,bnk->mn|b=129|m=128|n=384|k=128'
F8='kind=einsum|expr=fp8 bhr,hdr->bhd'
CASES="$BMK|f32=True;$BMK|f32=False;kind=einsum|expr=bhr,hdr->bhd|b=4|h=128|r=512|d=128;$F8|b=4;$F8|b=32;$F8|b=128"
for v in old sfkernel; do
    QGEMM_EINSUM_VARIANT=$v timeout "$(cap 60)" python3 bench/family_probe.py --host --cases "$CASES" \
        --out "$OUT/host-$v" > "$L/host-$v.log" 2>&1
    echo "== host $v rc=$? t=$((SECONDS - T0))"
    grep -E '^\{' "$L/host-$v.log" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line); c = r["case"]
    print("HOST %-9s %-60s DeepGEMM %6.1f  qgemm %6.1f us" % (sys.argv[1], "|".join(f"{k}={v}" for k, v in c.items() if k != "kind"),
          r.get("deepgemm_host_us", float("nan")), r.get("qgemm_host_us", float("nan"))))' "$v"
done
for v in old sfkernel; do
    QGEMM_EINSUM_VARIANT=$v timeout "$(cap 90)" python3 bench/family_probe.py --events --cases "$CASES" \
        --out "$OUT/events-$v" > "$L/events-$v.log" 2>&1
    echo "== events $v rc=$? t=$((SECONDS - T0))"
    [ -f "$OUT/events-$v/family-events.json" ] && python3 - "$OUT/events-$v/family-events.json" "$v" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    c = r["case"]; s = "|".join(f"{k}={v}" for k, v in c.items() if k != "kind")
    for lib in ("deepgemm", "qgemm"):
        g = lambda m: r.get(f"{lib}_{m}_us", float("nan"))
        print("EVENTS %-9s %-52s %-8s kin %7.1f ev_l2 %7.1f (cpu %5.1f) ev_1g %7.1f graph %7.1f" % (
            sys.argv[2], s, lib, g("kineto"), g("events_l2"), g("events_l2_host"), g("events_1g"), g("graph_l2")))
PY
done
for v in old sfkernel; do
    QGEMM_EINSUM_VARIANT=$v timeout "$(cap 120)" python3 bench/peers_families.py --kinds einsum \
        --where 'expr=bmk,bnk->mn' --where 'expr=fp8 bhr,hdr->bhd' --iters 10 \
        --out "$OUT/pf-$v" > "$L/pf-$v.log" 2>&1
    echo "== peers_families $v rc=$? t=$((SECONDS - T0))"
    [ -f "$OUT/pf-$v/peers-families.json" ] && python3 - "$OUT/pf-$v/peers-families.json" "$v" <<'PY'
import json, math, sys
rows = json.load(open(sys.argv[1]))["rows"]
for name, sel in (("bmk", lambda r: r.get("expr") == "bmk,bnk->mn"),
                  ("fp8", lambda r: str(r.get("expr", "")).startswith("fp8"))):
    for t in ("kineto", "events"):
        v = [r.get("deepgemm_over_qgemm_" + t) for r in rows if sel(r)]
        v = [x for x in v if x]
        if v:
            g = math.exp(sum(map(math.log, v)) / len(v))
            print(f"SUMMARY {sys.argv[2]:9} {name:4} {t:6} DeepGEMM/qgemm geomean {g:.3f} worst {min(v):.3f} over {len(v)} rows")
PY
done
echo "== end t=$((SECONDS - T0))"
