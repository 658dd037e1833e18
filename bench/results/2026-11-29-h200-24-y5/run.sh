#!/bin/bash
# session y, call 5 (main + the per-channel kernels' shared row helper, qg_cast_channel_row: PTX differs from the
# former two copies): the casts' bitwise GPU tests, and the default's cast rows timed against -23-y4's.
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
wait
echo "built t=$((SECONDS-T0))"
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
timeout 60 python3 bench/cast_ab.py --variants default,all+lean,base --iters 20 --shapes 4096x7168,16384x7168 --out $OUT/cast_ab.json > $L/cast_ab.log 2>&1
echo "cast_ab rc=$? t=$((SECONDS-T0))"; grep -vE "profiler|_warn_once" $L/cast_ab.log | grep -E "per_channel|SUMMARY|default|copy" | cut -c1-200
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c 200 t1 stdbuf -oL build/qgemm_tests gpu_cast_ring_lut_bitwise gpu_cast_bitwise gpu_cast_variants_bitwise gpu_cast_sms_and_graph
c 200 p1 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_cast.py -k "channel or ring"
wait
echo "-- t1: $(grep -E "passed, |rc=" $L/t1.log | tr '\n' ' ')"; grep -E "^\[ (PASS|FAIL)|^    FAIL" $L/t1.log | head -8 | cut -c1-200
echo "-- p1: $(grep -E "passed|failed" $L/p1.log | tail -1)"; grep -E "^(FAILED|ERROR) " $L/p1.log | head -6 | cut -c1-200
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
