# Session k, run 2 (one GPU): tile choices the heuristic may have wrong, qgemm
# alone (bench/explore.py --no-deepgemm), each configuration twice, alternating:
#  - psum at N = 4096, where the psum kernel's 128x256 (no multicast) ran 3-8%
#    behind the contiguous / masked kernels' 128x192 A on 2 of 3 rows (run 1):
#    heuristic, 128x256 A, 128x192 A, 128x192 none;
#  - wgrad 2112x4096x7168 (0.941 of DeepGEMM as 128x136 chunked): 128x128,
#    128x120, 128x144, 128x160;
set -u
export PYTHONPATH="python:${PYTHONPATH:-}" QGEMM_CACHE_DIR=/tmp/qgemm-cache
nvidia-smi -L
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
log=$OUT/explore-a.log
run1() { timeout 120 python3 bench/explore.py --no-deepgemm --reps 20 "$@" 2>&1 | grep -v -i warn | tee -a $log; }
PSUM="contiguous-psum:4x8192x4096x* contiguous-psum:8x4096x4096x* masked-psum:6x1024x4096x*"
cfg() { echo "--config block_m=$1 --config block_n=$2 --config multicast=$3"; }
for rep in 1 2; do
  run1 heur$rep $PSUM wgrad:2112x4096x7168
  run1 b256a$rep $(cfg 128 256 a) $PSUM
  run1 b192a$rep $(cfg 128 192 a) $PSUM
  run1 b192n$rep $(cfg 128 192 none) $PSUM
  for bn in 128 120 144 160; do run1 w$bn-$rep $(cfg 128 $bn none) wgrad:2112x4096x7168; done
done
echo "done at ${SECONDS}s"
