#!/bin/bash
f=$1; b=${f%.cu}
{ echo '#define int64_t qg_int64_t'; echo '#define uint64_t qg_uint64_t'; cat $f; } > $b.k.cu
r=$(nvcc -arch=sm_90a -cubin -std=c++17 -Xptxas -v -I${QG_KERNELS:?the kernels/ directory} -o $b.cubin $b.k.cu 2>&1)
sp=$(echo "$r" | grep -o "[0-9]* bytes spill stores, [0-9]* bytes spill loads" | head -1)
w=$(echo "$r" | grep -ci "warning")
NVDISASM_PATH=${NVD:?pip nvidia-cuda-nvdisasm bin dir}/nvdisasm PATH=${NVD:?pip nvidia-cuda-nvdisasm bin dir}:$PATH ${CUOBJDUMP:?pip nvidia-cuda-cuobjdump cuobjdump} -sass $b.cubin > $b.sass
m2=$(python3 ${LOOPS:?bench/results/2026-11-29-cpu-pmqa-run}/loop.py $b.sass 2>/dev/null | grep ^loop | head -1 | awk '{print $3}')
r2=$(python3 ${LOOPS:?bench/results/2026-11-29-cpu-pmqa-run}/loop.py $b.sass 2>/dev/null | grep ^loop | head -1 | grep -o "'R2UR': [0-9]*" | grep -o "[0-9]*$")
p=$(python3 ${LOOPS:?bench/results/2026-11-29-cpu-pmqa-run}/loop2.py $b.sass UTMALDG 2>/dev/null | head -1 | awk '{print $3}')
echo "$b | $sp | warn $w | math $m2 R2UR ${r2:-0} | prod $p"
