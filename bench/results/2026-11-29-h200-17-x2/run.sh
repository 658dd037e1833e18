#!/bin/bash
# session x, call 2: the paged kernel's ring depth (QGEMM_PMQA_VARIANT :sS) and the L2 state (--flush read)
# on the B256 L8192 rows beside DeepGEMM; where the call's CPU time goes after a synchronize (host_parts);
# then the GPU test suites (C gpu_* in 3 processes, pytest) in parallel until the time guard.
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((565 - (SECONDS - T0))); }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -1 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
ROWS="256,1,32,8192,0;256,1,64,8192,0;256,2,32,8192,0;256,2,64,8192,0;256,1,32,8192,1;256,1,64,8192,1;256,2,32,8192,1;256,2,64,8192,1;4096,1,32,8192,0;256,2,64,65536,1"
timeout 150 python3 bench/pmqa_ab.py --rows "$ROWS" --iters 20 --variants default,split4r112u:s20,split4r112u:s16,split4r112u:s12 > $L/ab-zero.log 2>&1; echo "ab-zero rc=$? t=$((SECONDS-T0))"
grep -E "summary|  (default|split)" $L/ab-zero.log | tail -5
timeout 100 python3 bench/pmqa_ab.py --rows "$ROWS" --iters 20 --flush read --variants default,split4r112u:s16 > $L/ab-read.log 2>&1; echo "ab-read rc=$? t=$((SECONDS-T0))"
grep -E "summary|  (default|split)" $L/ab-read.log | tail -3
timeout 60 python3 bench/results/2026-11-29-h200-18-x3/host_parts.py > $L/host-parts.log 2>&1; echo "host-parts rc=$?"; cat $L/host-parts.log | tail -7
P="kind=paged-mqa|bsz=256|next_n=1|h=32|avg_kv=8192|f32=False;kind=paged-mqa|bsz=256|next_n=2|h=64|avg_kv=8192|f32=False"
timeout 60 python3 bench/family_probe.py --events --cases "$P" --out $OUT > $L/events.log 2>&1; echo "events rc=$?"
echo "== timing done t=$((SECONDS-T0))"
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
P=$(( $(left) - 12 ))
c $P g1 stdbuf -oL build/qgemm_tests gpu_ -gpu_grouped -gpu_variants -gpu_bf16 -gpu_cast
c $P g2 stdbuf -oL build/qgemm_tests gpu_grouped gpu_variants
c $P g3 stdbuf -oL build/qgemm_tests gpu_bf16 gpu_cast
c $P py python3 -m pytest -q -rs -p no:cacheprovider tests/python --deselect tests/python/test_multi_gpu.py
wait
echo "== end t=$((SECONDS-T0))"
for f in g1 g2 g3; do echo "-- $f: $(grep -E "passed, |rc=" $L/$f.log | tr '\n' ' ')"; grep -E "^\[ FAIL|^    FAIL" $L/$f.log | head -5 | cut -c1-200; echo "   last: $(grep -E '^\[ (RUN|PASS)' $L/$f.log | tail -1)"; done
grep -E "passed|failed" $L/py.log | tail -2; grep -E "^(FAILED|ERROR) " $L/py.log | head -5 | cut -c1-200; grep rc= $L/py.log
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
