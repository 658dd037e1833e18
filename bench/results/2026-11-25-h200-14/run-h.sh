# Session i, run 8: issue 25's sustained target: 10 s loops of each library,
# alternating, twice, on 4096x7168x16384 and 4096x4096x7168 (TFLOPS, median
# SM clock and power), on 3313f6e.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
for s in 4096x7168x16384 4096x4096x7168; do
  mkdir -p $OUT/sus-$s
  timeout 150 python3 bench/peers.py --sustained 10 --sustained-reps 2 --shape $s --out $OUT/sus-$s 2>&1 | grep -i "sustained" | tee -a $OUT/sustained.log
done
