#!/bin/bash
# session y, call 3 (tree y-int with the new defaults: casts all+lean+ring+lut, SwiGLU swm64, the cast and
# einsum fast paths, the paged view after the launch): the GPU tests of every family changed this session and
# DeepGEMM's SM90 files through qgemm.deep_gemm, in parallel processes until the time guard.
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
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
S="python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM"
P=$(( $(left) - 10 ))
c $P g1 stdbuf -oL build/qgemm_tests gpu_swiglu gpu_cast gpu_nk_fp8out gpu_bf16_batch_sum gpu_paged_mqa_logits
c $P p1 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_cast.py tests/python/test_cast_fast.py tests/python/test_host_path.py tests/python/test_swiglu.py tests/python/test_fp8out.py
c $P p2 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_einsum.py tests/python/test_deepgemm_compat.py
c $P p3 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_indexer_gpu.py -k "paged_fast or graph"
c $P d1 $S --out $OUT/d1 --file test_einsum --file test_layout --file test_attention
c $P d2 $S --out $OUT/d2 --file test_bf16
wait
echo "== end t=$((SECONDS-T0))"
for f in g1; do echo "-- $f: $(grep -E "passed, |rc=" $L/$f.log | tr '\n' ' ')"; grep -E "^\[ FAIL|^    FAIL" $L/$f.log | head -8 | cut -c1-200; echo "   last: $(grep -E '^\[ (RUN|PASS)' $L/$f.log | tail -1)"; done
for f in p1 p2 p3; do echo "-- $f: $(grep -E "passed|failed" $L/$f.log | tail -1)"; grep -E "^(FAILED|ERROR) " $L/$f.log | head -6 | cut -c1-200; grep rc= $L/$f.log; done
for f in d1 d2; do grep -E "^== |through|rc=" $L/$f.log | cut -c1-160; grep -E "FAIL" $L/$f.log | head -3 | cut -c1-200; done
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
