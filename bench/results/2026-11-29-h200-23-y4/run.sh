#!/bin/bash
# session y, call 4 (main d893d54: + branch castbw2's ring6 / lutpre words, the casts' shared run_cast): the two
# words against the default on the >= 32 MB cast rows, then the casts' GPU tests (bitwise, fast vs checked).
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((330 - (SECONDS - T0))); }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
wait
echo "built t=$((SECONDS-T0))"
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
timeout 120 python3 bench/cast_ab.py --variants default,all+lean+ring6+lut,all+lean+ring+lutpre,all+lean+ring6+lutpre --iters 20 --shapes 4096x7168,16384x7168 --out $OUT/cast_ab.json > $L/cast_ab.log 2>&1
echo "cast_ab rc=$? t=$((SECONDS-T0))"; grep -vE "profiler|_warn_once" $L/cast_ab.log | grep -E "per_channel|silu|SUMMARY|default|copy" | cut -c1-230
P=$(( $(left) - 8 ))
c $P t1 stdbuf -oL build/qgemm_tests gpu_cast_ring_lut_bitwise gpu_cast_sms_and_graph gpu_cast_bitwise
c $P p1 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_cast.py tests/python/test_cast_fast.py
wait
echo "== end t=$((SECONDS-T0))"
echo "-- t1: $(grep -E "passed, |rc=" $L/t1.log | tr '\n' ' ')"; grep -E "^\[ (PASS|FAIL)|^    FAIL" $L/t1.log | head -8 | cut -c1-200
echo "-- p1: $(grep -E "passed|failed" $L/p1.log | tail -1)"; grep -E "^(FAILED|ERROR) " $L/p1.log | head -6 | cut -c1-200; grep rc= $L/p1.log
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
