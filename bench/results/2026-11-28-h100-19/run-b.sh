# Session n, run 2 (one GPU): DeepGEMM's own SM90 FP8 suite through the alias
# on this tree (issue 30's 96 cases), in two processes side by side (each case
# still runs alone within its process; correctness only, the suite's own perf
# prints are not used): test_gemm + the contiguous cases, and the masked +
# k-grouped cases.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
make -j16 > /tmp/make.log 2>&1 || tail /tmp/make.log
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
export PYTHONPATH="python:${PYTHONPATH:-}"
echo "build done at ${SECONDS}s"
S="timeout 520 python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM"
$S --only test_gemm --only test_m_grouped_gemm_contiguous --out /tmp/suite1 > $OUT/suite-1.log 2>&1 &
$S --only test_m_grouped_gemm_masked --only test_k_grouped_gemm_contiguous --out /tmp/suite2 > $OUT/suite-2.log 2>&1 &
wait
cp /tmp/suite1/deepgemm-suite.json $OUT/deepgemm-suite-1.json; cp /tmp/suite2/deepgemm-suite.json $OUT/deepgemm-suite-2.json
grep -E "^== |suite through" $OUT/suite-*.log
echo "done at ${SECONDS}s"
