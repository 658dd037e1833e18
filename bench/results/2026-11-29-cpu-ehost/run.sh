#!/bin/bash
# The CPU figures of this directory (the shared 2-core development machine, no GPU).
# before = main 4a3cf0e exported to $BEFORE with its extension built there; after = this tree.
#   git archive 4a3cf0e | tar -x -C $BEFORE && (cd $BEFORE && python python/setup.py build_ext --inplace)
#   cc -O2 -shared -fPIC -o $FK/libcuda.so.1 bench/fake_libcuda.c -lpthread
set -u
BEFORE=${BEFORE:-/tmp/ehost-before}; FK=${FK:-/tmp/ehost-fk}; PY=${PY:-/work/venv/bin/python}
OUT=${OUT:-bench/results/2026-11-29-cpu-ehost}
for i in 1 2 3; do
  for tree in before after; do
    dir=$([ $tree = before ] && echo $BEFORE/python || echo python)
    echo "== run $i $tree python-only (stubbed launches)"
    PYTHONPATH=$dir $PY bench/host_cpu.py --tree $dir --calls 2000 --repeat 7 --only einsum
    echo "== run $i $tree whole (fake driver)"
    PYTHONPATH=$dir $PY bench/host_cpu.py --tree $dir --whole $FK --calls 2000 --repeat 7
    echo "== run $i $tree whole, QGEMM_EINSUM_VARIANT=sfkernel"
    QGEMM_EINSUM_VARIANT=sfkernel PYTHONPATH=$dir $PY bench/host_cpu.py --tree $dir --whole $FK \
      --calls 2000 --repeat 7 --only fp8_einsum
  done
done 2>&1 | tee $OUT/host_cpu.txt
