#!/bin/bash
# CPU (no GPU): the casts' whole host path under bench/fake_libcuda.c, before (main 4a3cf0e,
# its extension built in /tmp/chost-main) and after (branch chost: checked / fast / twoalloc).
set -e
mkdir -p /tmp/chost-fk && cc -O2 -shared -fPIC -o /tmp/chost-fk/libcuda.so.1 bench/fake_libcuda.c -lpthread
mkdir -p /tmp/chost-main && git archive 4a3cf0e | tar -x -C /tmp/chost-main
(cd /tmp/chost-main && python3 python/setup.py build_ext --inplace)
R=bench/results/2026-11-29-cpu-chost
for i in 1 2; do
  python3 bench/host_cpu.py --fake-driver /tmp/chost-fk --tree /tmp/chost-main/python --variants "" --calls 1000 --repeat 7
  python3 bench/host_cpu.py --fake-driver /tmp/chost-fk --variants "checked,,twoalloc" --calls 1000 --repeat 7 --json $R/host_cpu_after_$i.json
done > $R/host_cpu.txt
LD_LIBRARY_PATH=/tmp/chost-fk FAKE_CUDA_ANY_POINTER=1 PYTHONPATH=python python3 $R/fake_check.py > $R/fake_check.txt
