#!/bin/bash
# session y, call 2 (tree y-int: main + branches bmk, swiglu, ehost, chost, castbw): each branch's A/B beside
# DeepGEMM, timings one at a time (the branches' GPU tests: call 3).
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -1 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
# 1. swiglu (branch swiglu): default vs the three tile words, bitwise checked
timeout $(cap 110) python3 bench/peers_fp8out.py --kind swiglu --variants default,swm64+swmca+swmcac --out $OUT/swiglu-ab.jsonl > $L/swiglu-ab.log 2>&1
echo "swiglu rc=$? t=$((SECONDS-T0))"; grep -E "swiglu-variant|geomean|accuracy" $L/swiglu-ab.log | cut -c1-220 | head -12
# 2. bmk (branch bmk) + the einsum fast paths (branch ehost): the 18 bmk rows, alt v7:s4
timeout $(cap 80) python3 bench/peers_families.py --kinds einsum --where 'expr=bmk,bnk->mn' --iters 10 --alt-env QGEMM_BMK_VARIANT=v7:s4 --out $OUT/bmk > $L/bmk.log 2>&1
echo "bmk rc=$? t=$((SECONDS-T0))"; grep -A3 "kineto:\|events:" $OUT/bmk/peers-families.txt | head -8
# 3. einsum host / events (branch ehost): default (old) and sfkernel
BMK='kind=einsum|expr=bmk,bnk->mn|b=129|m=128|n=384|k=128'
F8='kind=einsum|expr=fp8 bhr,hdr->bhd'
EC="$BMK|f32=True;$BMK|f32=False;$F8|b=4;$F8|b=32;$F8|b=128"
for v in old sfkernel; do
  QGEMM_EINSUM_VARIANT=$v timeout $(cap 60) python3 bench/family_probe.py --events --cases "$EC" --out $OUT/eevents-$v > $L/eevents-$v.log 2>&1; echo "eevents $v rc=$? t=$((SECONDS-T0))"
done
timeout $(cap 50) python3 bench/peers_families.py --kinds einsum --where 'expr=fp8 bhr,hdr->bhd' --iters 10 --out $OUT/fp8e > $L/fp8e.log 2>&1
echo "fp8e rc=$? t=$((SECONDS-T0))"; grep -A3 "kineto:\|events:" $OUT/fp8e/peers-families.txt | head -6
# 4. casts' host cost against the launch floor (branch chost): checked / default (one buffer) / twoalloc, twice
C="kind=floor;kind=floor|what=zero"; for n in "per_token|m=64|k=7168" "silu|m=64|k=4096" "per_block|m=512|k=7168" "per_channel|m=256|k=2048" "silu_masked|m=64|k=4096"; do for e in checked "" twoalloc; do C="$C;kind=cast|name=$n${e:+|env=$e}"; done; done
timeout $(cap 60) python3 bench/family_probe.py --host --calls 2000 --out $OUT/chost --cases "$C" > $L/chost.log 2>&1; echo "chost rc=$? t=$((SECONDS-T0))"
# 5. cast kernels (branch castbw): ring (per-channel) and lut (silu) against the default, % of the copy bandwidth
timeout $(cap 120) python3 bench/cast_ab.py --variants default,all+lean+ring+lut --iters 20 --shapes 4096x7168,16384x7168,4096x2048 --out $OUT/cast_ab.json > $L/cast_ab.log 2>&1
echo "cast_ab rc=$? t=$((SECONDS-T0))"; grep -vE "profiler|_warn_once" $L/cast_ab.log | tail -30 | cut -c1-200
echo "== timing done t=$((SECONDS-T0))"
# what time is left: the branches' C GPU tests (call 3 runs whatever these do not finish)
P=$(( $(left) - 8 ))
if [ $P -gt 40 ]; then
  c $P t1 stdbuf -oL build/qgemm_tests gpu_swiglu gpu_bf16_batch_sum_v7_exact_and_graph gpu_bf16_batch_sum_accuracy
  c $P t2 stdbuf -oL build/qgemm_tests gpu_cast_ring_lut_bitwise gpu_cast_sms_and_graph
  wait
  for f in t1 t2; do echo "-- $f: $(grep -E "passed, |rc=" $L/$f.log | tr '\n' ' ')"; grep -E "^\[ (PASS|FAIL)|^    FAIL" $L/$f.log | head -8 | cut -c1-200; done
fi
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
