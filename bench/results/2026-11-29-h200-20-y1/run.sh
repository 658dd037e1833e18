#!/bin/bash
# session y, call 1: the paged call's view after the launch (issue 50's events gap): where the CPU time goes
# (bench/paged_host.py; perf if the machine has it), the 24 paged rows beside DeepGEMM (kineto, events), the
# paged tests (C, pytest, DeepGEMM's test_attention through qgemm.deep_gemm), then pytest's GPU files until the guard.
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((470 - (SECONDS - T0))); }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -1 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
timeout 60 python3 bench/paged_host.py > $L/paged-host.log 2>&1; echo "paged-host rc=$? t=$((SECONDS-T0))"; cat $L/paged-host.log | tail -9
if command -v perf >/dev/null; then
  timeout 60 perf record -F 20000 -g -o /tmp/perf.data python3 bench/paged_host.py --perf 20000 > $L/perf-rec.log 2>&1
  timeout 60 perf report -i /tmp/perf.data --stdio --no-children --sort dso,symbol 2>/dev/null | head -150 > $OUT/perf-report.txt
  echo "perf rc=$? t=$((SECONDS-T0))"; head -40 $OUT/perf-report.txt | grep -v "^$" | head -30
else echo "no perf on this machine"; fi
timeout 90 python3 bench/peers_families.py --kinds paged-mqa --out $OUT/paged > $L/paged24.log 2>&1
echo "paged24 rc=$? t=$((SECONDS-T0))"; grep -A3 "kineto:\|events:" $OUT/paged/peers-families.txt | head -8
P=$(( $(left) - 8 ))
c $P k1 stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits gpu_mqa_logits gpu_hc
c $P k2 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_indexer_gpu.py
c $P dg python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT/suite --file test_attention --file test_hyperconnection
wait
echo "== end t=$((SECONDS-T0))"
echo "-- k1: $(grep -E "passed, |rc=" $L/k1.log | tr '\n' ' ')"; grep -E "^\[ FAIL|^    FAIL" $L/k1.log | head -5 | cut -c1-200
grep -E "passed|failed" $L/k2.log | tail -1; grep -E "^(FAILED|ERROR) " $L/k2.log | head -5 | cut -c1-200; grep rc= $L/k2.log
grep -E "^== |through|rc=|FAIL" $L/dg.log | cut -c1-200
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
