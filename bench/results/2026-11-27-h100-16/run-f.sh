# Session k, run 6 (one GPU, nothing else running): the tree to land (673c21c):
# the whole peers table with the host rows (the README's table; run 1's host
# rows shared the machine's CPUs with two test lanes), then the driver-call
# probe and `qgemm bench --host` (device-check's hostprobe step), then issue
# 25's sustained loops on 4096x7168x16384 while the call's time lasts.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache QGEMM_COMMIT=${QGEMM_COMMIT:-?}
nvidia-smi -L
(bash .peers/build.sh > /tmp/dg-build.log 2>&1; touch /tmp/dg.done) &
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
while [ ! -f /tmp/dg.done ]; do sleep 2; done; tail -n 1 /tmp/dg-build.log
source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
timeout 330 python3 bench/peers.py --warm-jobs 14 --host --qgemm-cli build/qgemm --out $OUT > $OUT/peers.log 2>&1; echo "peers rc=$? at ${SECONDS}s"
grep -A 14 "^geomean" $OUT/peers.log | head -16; grep -A 11 "^host overhead" $OUT/peers.txt
OUT=$OUT STEP_TIMEOUT=60 bash bench/device-check.sh --only hostprobe > /dev/null 2>&1; echo "hostprobe rc=$? at ${SECONDS}s"
grep -E "cuLaunchKernelEx|cuPointer|Encode|^host|median" $OUT/host.log | head -20
left=$((560 - SECONDS))
[ $left -gt 60 ] && timeout $left python3 bench/peers.py --sustained 10 --sustained-reps 2 --shape 4096x7168x16384 --out $OUT/sus 2>&1 | grep -i sustained | tee $OUT/sustained.log
rm -f $OUT/summary.txt; echo "done at ${SECONDS}s"; ls $OUT
