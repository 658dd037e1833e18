# sourced by a call script after the build: phase A, the acceptance run of the tree (parallel, <= $1 s)
# DeepGEMM's whole SM90 suite through qgemm.deep_gemm in 4 processes, the Python suite in 2, the C GPU
# tests of the families in 1 (stdbuf: line-buffered).
acc() {
  local P=$1
  local S="python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM"
  c() { local n=$1; shift; ( timeout $P env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
  mkdir -p $R/sA $R/sB $R/sC $R/sD
  c sA $S --out $R/sA --file test_fp8_fp4 --only test_gemm --only test_k_grouped_gemm_contiguous --only test_m_grouped_gemm_contiguous
  c sB $S --out $R/sB --file test_fp8_fp4 --only test_m_grouped_gemm_masked
  c sC $S --out $R/sC --file test_bf16
  c sD $S --out $R/sD --file test_einsum --file test_attention --file test_hyperconnection --file test_layout
  local A="tests/python/test_gpu.py tests/python/test_einsum.py tests/python/test_indexer_gpu.py tests/python/test_training.py"
  c py1 python3 -m pytest -q -rs -p no:cacheprovider $A
  local IGN=$(for f in $A; do printf -- "--ignore=%s " $f; done)
  c py2 python3 -m pytest -q -rs -p no:cacheprovider tests/python $IGN
  c cfam stdbuf -oL build/qgemm_tests gpu_paged_mqa_logits gpu_mqa_logits gpu_hc_prenorm gpu_fp8out gpu_swiglu gpu_bf16_accuracy gpu_bf16_batch_sum_accuracy gpu_fp8_batched gpu_cast_bitwise
  wait
  echo "== acceptance t=$((SECONDS-T0))"
  for f in sA sB sC sD; do grep -E "^== |through|rc=" $L/$f.log | cut -c1-160; done
  for f in py1 py2; do grep -E "passed|failed" $L/$f.log | tail -1; grep -E "^(FAILED|ERROR) " $L/$f.log | head -8 | cut -c1-200; grep rc= $L/$f.log; done
  grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/cfam.log | tr '\n' ' '; echo
  grep -E "^    FAIL" $L/cfam.log | head -8 | cut -c1-220
}
