# Session f, run D (44f4ba0): does the order within a row bias the largest rows' kineto
# times? The same rows with DeepGEMM first (the table's order) and with qgemm first.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=44f4ba0
make -j16 > /dev/null 2>&1
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
F='^(contiguous-psum 4x8192x6144|contiguous 4x8192x6144|k-grouped 4x4096x7168|dense 4096x7168x16384|masked 6x1024x6144)'
for order in deepgemm,qgemm qgemm,deepgemm deepgemm,qgemm qgemm,deepgemm; do
  echo "== order $order"
  timeout 150 python3 bench/peers.py --libs deepgemm,qgemm --order $order --filter "$F" 2>&1 | grep -E "^\[[0-9]" | cut -c1-170
done
