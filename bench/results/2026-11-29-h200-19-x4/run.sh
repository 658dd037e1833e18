#!/bin/bash
# session x, call 4 (split4r112u at 12 stages by default; the paged call's fast path in Python): the depth
# around 12 on the 10 rows, the 24 rows with the best other depth as the alt column, the host parts after a
# synchronize, then the paged tests (C, pytest, DeepGEMM's test_paged_mqa_logits through qgemm.deep_gemm).
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((400 - (SECONDS - T0))); }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -1 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
ROWS="256,1,32,8192,0;256,1,64,8192,0;256,2,32,8192,0;256,2,64,8192,0;256,1,32,8192,1;256,1,64,8192,1;256,2,32,8192,1;256,2,64,8192,1;4096,1,32,8192,0;256,2,64,65536,1"
timeout 100 python3 bench/pmqa_ab.py --rows "$ROWS" --iters 20 --variants default,split4r112u:s8,split4r112u:s16,split4r112u:s4 > $L/ab-zero.log 2>&1; echo "ab-zero rc=$? t=$((SECONDS-T0))"
grep -A5 "^summary" $L/ab-zero.log
timeout 40 python3 bench/results/2026-11-29-h200-18-x3/host_parts.py > $L/host-parts.log 2>&1; echo "host-parts rc=$?"; tail -7 $L/host-parts.log
P="kind=paged-mqa|bsz=256|next_n=1|h=32|avg_kv=8192|f32=False;kind=paged-mqa|bsz=256|next_n=2|h=64|avg_kv=8192|f32=False"
timeout 40 python3 bench/family_probe.py --events --cases "$P" --out $OUT > $L/events.log 2>&1; echo "events rc=$? t=$((SECONDS-T0))"
ALT=$(python3 - $L/ab-zero.log <<'PY'
import re,sys
g={}
for l in open(sys.argv[1]):
    m=re.match(r"\s+(\S+)\s+dg/qg ([0-9.]+) over (\d+) rows.*PASS", l)
    if m: g[m.group(1)]=float(m.group(2))
g.pop("default", None)
print(max(g, key=g.get) if g else "split4r112u:s24")
PY
)
echo "alt: '${ALT}'"
timeout 60 python3 bench/peers_families.py --kinds paged-mqa --alt-env QGEMM_PMQA_VARIANT=$ALT --out $OUT/paged > $L/paged24.log 2>&1
echo "paged24 rc=$? t=$((SECONDS-T0))"; grep -A4 "kineto:" $OUT/paged/peers-families.txt | head -8
P=$(( $(left) - 8 ))
c $P k1 stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits
c $P k2 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_indexer_gpu.py -k "paged"
wait
c $(( $(left) - 5 )) dg python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT/suite --file test_attention --only test_paged_mqa_logits
wait
echo "== end t=$((SECONDS-T0))"
echo "-- k1: $(grep -E "passed, |rc=" $L/k1.log | tr '\n' ' ')"; grep -E "^\[ FAIL|^    FAIL" $L/k1.log | head -5 | cut -c1-200
grep -E "passed|failed" $L/k2.log | tail -1; grep -E "^(FAILED|ERROR) " $L/k2.log | head -5 | cut -c1-200; grep rc= $L/k2.log
grep -E "^== |through|rc=|FAIL" $L/dg.log | cut -c1-200
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
