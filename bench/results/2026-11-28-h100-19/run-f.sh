# Session n, run 6 (one GPU, H100): the unrolled row-major 128x136 on the
# H100 (run 4's gain was measured on an H200; run 5's table showed none):
# qgemm alone, the tree (new) and rows136.patch reversed (old), new / old /
# new / old, peers.py's kineto on the three wgrad rows of 128x136.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
R=bench/results/2026-11-28-h100-19
export PYTHONPATH="python:${PYTHONPATH:-}"
b() { make -j16 build/libqgemm.a > /dev/null 2>&1; python3 python/setup.py build_ext --inplace > /dev/null 2>&1; }
p() { timeout 60 python3 bench/peers.py --libs qgemm --filter 'wgrad (24576x4096x1536|7168x4096x2048|2112x4096x7168)' --out /tmp/p-$1 > /dev/null 2>&1; echo "== $1"; grep "^wgrad" /tmp/p-$1/peers.txt | cut -c1-110; }
b; p new1
git apply -R $R/rows136.patch && b; p old1
git apply $R/rows136.patch && b; p new2
git apply -R $R/rows136.patch && b; p old2
git apply $R/rows136.patch
git diff --stat
echo "done at ${SECONDS}s"
