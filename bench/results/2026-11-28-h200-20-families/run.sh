#!/bin/bash
# session q, call 2: first GPU run of the merged branches (fp8out, cli families, hc modes,
# one-kernel bmk einsum, mqa/paged pipelines); correctness side by side, then A/B timings alone
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
left() { echo $((550 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $OUT/build.log 2>&1 || tail -20 $OUT/build.log) &
(python3 python/setup.py build_ext --inplace > $OUT/pybuild.log 2>&1 || tail -20 $OUT/pybuild.log) &
(bash .peers/build.sh > $OUT/dgbuild.log 2>&1 || tail -5 $OUT/dgbuild.log) &
(nvcc -arch=sm_90a -O2 -std=c++17 -Isrc -o /tmp/ih bench/standalone/indexer_harness.cu -lcuda -lnvrtc > $OUT/ih-build.log 2>&1 || tail -5 $OUT/ih-build.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=python:$PYTHONPATH
( timeout 200 build/qgemm_tests gpu_fp8out gpu_hc_prenorm gpu_bf16 gpu_cast gpu_mqa gpu_paged gpu_hostile_rejected > $OUT/c-gpu.log 2>&1; echo "c rc=$? t=$((SECONDS-T0))" >> $OUT/c-gpu.log ) &
( timeout 200 python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_fp8out.py tests/python/test_torch_compile.py tests/python/test_indexer.py tests/python/test_indexer_gpu.py tests/python/test_einsum.py tests/python/test_cast.py "tests/python/test_gpu.py::test_compiled_moe_block_in_a_cuda_graph" "tests/python/test_gpu.py::test_fast_path_and_dlpack_path_word_errors_alike" > $OUT/python.log 2>&1; echo "py rc=$? t=$((SECONDS-T0))" >> $OUT/python.log ) &
( timeout 200 build/qgemm check --family all --quick > $OUT/check.log 2>&1; echo "check rc=$? t=$((SECONDS-T0))" >> $OUT/check.log ) &
wait
echo "== correctness t=$((SECONDS-T0))"; grep -E "^\[ (PASS|FAIL)|passed|c rc" $OUT/c-gpu.log | tail -14; grep -E "FAIL" $OUT/c-gpu.log | head -6 | cut -c1-220
tail -2 $OUT/python.log; grep -E "^FAILED" $OUT/python.log | head | cut -c1-200; tail -3 $OUT/check.log; grep FAIL $OUT/check.log | head -5 | cut -c1-200
echo "== mqa/paged A/B t=$((SECONDS-T0))"
timeout $(cap 110) /tmp/ih --quick --only mqa > $OUT/ih-mqa.log 2>&1; echo "ih mqa rc=$?"
grep -E "FAIL" $OUT/ih-mqa.log | head -5 | cut -c1-200; grep -cE "PASS" $OUT/ih-mqa.log; tail -12 $OUT/ih-mqa.log | cut -c1-220
timeout $(cap 90) /tmp/ih --quick --only paged > $OUT/ih-paged.log 2>&1; echo "ih paged rc=$?"
grep -E "FAIL" $OUT/ih-paged.log | head -5 | cut -c1-200; grep -cE "PASS" $OUT/ih-paged.log; tail -8 $OUT/ih-paged.log | cut -c1-220
echo "== hc A/B t=$((SECONDS-T0))"
timeout $(cap 120) python3 bench/hc_ab.py --modes inplace,rounder,split,trunc > $OUT/hc_ab.log 2>&1; echo "hc_ab rc=$?"
sed -n '/^µs/,$p' $OUT/hc_ab.log | tail -36
echo "== test_einsum t=$((SECONDS-T0))"
timeout $(cap 60) python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT --file test_einsum > $OUT/suite-einsum.log 2>&1; echo "suite rc=$?"
grep -E "^== |Perf" $OUT/suite-einsum.log | head -30 | cut -c1-160
echo "== fp8out quick t=$((SECONDS-T0))"
timeout $(cap 80) python3 bench/peers_fp8out.py --quick --out $OUT/fp8out.jsonl > $OUT/fp8out.log 2>&1; echo "fp8out rc=$?"; tail -14 $OUT/fp8out.log | cut -c1-200
echo "done t=$((SECONDS-T0))"
