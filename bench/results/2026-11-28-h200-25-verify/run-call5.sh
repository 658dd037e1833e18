#!/bin/bash
# session r, call 5 (final): the GPU tests call 4 did not reach (paged, mqa, hc, FP8 grouped and
# hostile, swiglu), the Python suite in three parts, DeepGEMM's attention / HC / layout tests, then
# the FP8-output split-tile A/B (QGEMM_FP8OUT_SPLIT on/off) on the 14 rows of M 64 and 128.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((330 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=python:bench:$PYTHONPATH
P=195
c() { local n=$1; shift; ( timeout $P build/qgemm_tests "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c c-paged gpu_paged_mqa_logits
c c-mqa gpu_mqa_logits gpu_hc_prenorm
c c-grouped gpu_grouped_contiguous gpu_grouped_masked gpu_masked_graph_replay
c c-hostile gpu_hostile
c c-swiglu gpu_swiglu
py() { local n=$1; shift; ( timeout $P python3 -m pytest -q -rs -p no:cacheprovider "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
cd tests/python
py py1 test_gpu.py test_einsum.py test_cast.py test_api.py test_deepgemm_compat.py test_edges.py
py py2 test_indexer_gpu.py test_training.py test_fp8out.py test_swiglu.py test_torch_compile.py
py py3 test_host_path.py test_hostile.py test_indexer.py test_layout.py test_multi_gpu.py test_package.py test_torch_helpers.py test_validation.py
cd ../..
( timeout $P python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --file test_attention --file test_hyperconnection --file test_layout --out $L/suite > $L/suite.log 2>&1; echo "suite rc=$? t=$((SECONDS-T0))" >> $L/suite.log ) &
for s in 0 1; do ( QGEMM_FP8OUT_SPLIT=$s timeout $P python3 bench/peers_fp8out.py --rows 64,128 --calls 1 > $L/warm-$s.log 2>&1 ) & done
wait
echo "== correctness t=$((SECONDS-T0))"
for f in c-paged c-mqa c-grouped c-hostile c-swiglu; do grep -E "^\[ (PASS|FAIL)|rc=" $L/$f.log | tr '\n' ' '; echo; grep -E "    FAIL" $L/$f.log | head -4 | cut -c1-220; done
for f in py1 py2 py3; do tail -2 $L/$f.log | tr '\n' ' '; echo; grep -E "^_+ test" $L/$f.log | head -6 | cut -c1-160; done
grep -E "^== |rc=" $L/suite.log | cut -c1-160
for s in 0 1; do
  echo "== fp8out QGEMM_FP8OUT_SPLIT=$s t=$((SECONDS-T0))"
  QGEMM_FP8OUT_SPLIT=$s timeout $(cap 45) python3 bench/peers_fp8out.py --rows 64,128 --calls 20 --out $OUT/fp8out-split$s.jsonl > $L/fp8out-$s.log 2>&1; echo "rc=$?"
  grep -E "fp8out-summary" $L/fp8out-$s.log | tail -1 | cut -c1-330
done
echo "done t=$((SECONDS-T0))"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
