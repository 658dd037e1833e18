#!/bin/bash
# device call 3: every new family on the H200 through the library: DeepGEMM's SM90 test files
# through qgemm.deep_gemm, the C GPU tests of the families, the BF16 rows beside DeepGEMM and cuBLAS
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc DG_MQA_NUM_CASES=12
T0=$SECONDS
(make -j16 all > $OUT/build.log 2>&1 || tail -20 $OUT/build.log) &
python3 python/setup.py build_ext --inplace > $OUT/pybuild.log 2>&1 || tail -20 $OUT/pybuild.log
wait
echo "built t=$((SECONDS-T0))"
PYTHONPATH=python timeout 250 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out $OUT \
  --file test_hyperconnection --file test_layout --file test_einsum --file test_attention --file test_bf16 > $OUT/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-T0))"; grep -E "^== " $OUT/suite.log | head -20
grep -E "FAIL" $OUT/suite.log | cut -c1-220 | head -12
timeout 80 build/qgemm_tests gpu_bf16 gpu_batched gpu_cast gpu_mqa gpu_paged gpu_hc > $OUT/c-families.log 2>&1
echo "c rc=$? t=$((SECONDS-T0))"; grep -E "FAIL|passed|skipped:" $OUT/c-families.log | head -12
bash .peers/build.sh | tail -1; source .peers/env.sh
PYTHONPATH=python:$PYTHONPATH timeout $((570-(SECONDS-T0))) python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --max-rows 5 --iters 20 --out $OUT > $OUT/peers.log 2>&1
echo "peers rc=$? t=$((SECONDS-T0))"; tail -12 $OUT/peers.log
