#!/bin/bash
# session r, call 1: diagnostics. host cost of the family calls (qgemm vs DeepGEMM) and ncu
# profiles of the slow rows (paged MQA, bmk einsum, HC, MQA H64), both libraries.
set -u
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L/ncu
(python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1 || tail -5 $L/dgbuild.log) &
wait
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
export PYTHONPATH=python:bench:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $L/smi.txt
timeout 150 python3 bench/family_probe.py --host --out $L > $L/host.log 2>&1; echo "host rc=$? t=$((SECONDS-T0))"
cat $L/host.log | cut -c1-400
i=0
for c in "kind=paged-mqa|bsz=4096|next_n=2|h=64|f32=True" "kind=paged-mqa|bsz=256|next_n=1|h=32|avg_kv=8192|f32=False" \
         "kind=einsum|expr=bmk,bnk->mn|b=129|m=128|n=384|k=128|f32=True" "kind=einsum|expr=bmk,bnk->mn|b=8192|m=128|n=384|k=128|f32=True" \
         "kind=hc|m=4096|n=24|k=7168|splits=None" "kind=hc|m=13|n=24|k=7680|splits=16" "kind=mqa|sq=2048|sk=65536|h=64|dim=64"; do
  i=$((i+1))
  for lib in deepgemm qgemm; do
    [ $((SECONDS-T0)) -gt 470 ] && { echo "skip $i $lib (time)"; continue; }
    timeout 60 ncu --clock-control none --set detailed --import-source no --profile-from-start off \
      python3 bench/family_probe.py --ncu --lib $lib --cases "$c" > $L/ncu/$i-$lib.txt 2>&1
    echo "ncu $i $lib rc=$? t=$((SECONDS-T0)) $c"
    grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Grid Size|Block Size|Dynamic Shared|Threads  " $L/ncu/$i-$lib.txt | head -24 | cut -c1-150
  done
done
echo "done t=$((SECONDS-T0))"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
