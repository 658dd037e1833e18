# Thirteenth session, run 4 (2026-11-22): run 3 showed that prefetching up to
# 24 MB of B into L2 during the PDL wait makes most chains slower (up to 1.3x:
# demand loads that reach lines still in flight appear to fetch them again),
# and that the K = 512 rows, whose whole B tile lands during the wait, gain
# 0.4-0.6 us. Here: only the first 1, 2 or 4 K blocks, --chain 8, in turn with
# none, twice.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
c() { echo "== chain, X_PREFETCH=$1" >> $E; QGEMM_X_PREFETCH=$1 timeout 200 build/qgemm bench --chain 8 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror" >> $E; }
for round in 1 2; do c 0; c 1; c 2; c 4; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
