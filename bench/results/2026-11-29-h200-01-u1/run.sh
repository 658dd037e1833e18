#!/bin/bash
# session u, call 1: ncu on the worst rows (paged MQA N 128, FP8-output GEMM at M 64/128 vs
# its bf16-output twin, BF16 128x576x7168) beside DeepGEMM; then the paged rows per variant.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
R=$OUT/r; L=$R/logs; mkdir -p $L
left() { echo $((570 - (SECONDS - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench:$PYTHONPATH
which ncu; ncu --version | tail -1
N="ncu --clock-control none --set full --import-source no"
prof() { # name regex skip count -- driver args
  local n=$1 re=$2 sk=$3 ct=$4; shift 4
  echo "== ncu $n t=$((SECONDS-T0))"
  timeout $(cap 150) $N -k "regex:$re" --launch-skip $sk --launch-count $ct -o $R/$n -f python3 bench/results/2026-11-29-h200-01-u1/ncu_drv.py "$@" > $L/$n.log 2>&1; echo "rc=$?"
  tail -3 $L/$n.log
  ncu -i $R/$n.ncu-rep --page details --print-units base > $R/$n-details.txt 2>&1
  ncu -i $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-sass.csv 2>&1
  grep -E "^  [a-z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Issue Slots Busy|Grid Size|Cluster Size" $R/$n-details.txt | head -40
}
prof paged 'qg_paged_mqa_logits_kernel|sm90_fp8_paged_mqa_logits' 2 2 paged 4096 2 64 8192 f32
prof paged1 'qg_paged_mqa_logits_kernel|sm90_fp8_paged_mqa_logits' 2 2 paged 4096 1 32 8192 f32
prof fp8out128 'qg_fp8_gemm_kernel' 2 2 fp8out 128 4096 7168
prof fp8out64 'qg_fp8_gemm_kernel' 2 2 fp8out 64 4096 7168
prof bf16 'qg_bf16_gemm_kernel|sm90_bf16_gemm' 2 2 bf16 128 576 7168
echo "done t=$((SECONDS-T0))"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
