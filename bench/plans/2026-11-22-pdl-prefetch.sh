# Thirteenth session, run 3 (2026-11-22): weights into L2 during the PDL wait.
# With PDL on, the TMA thread prefetches the first K blocks of its first B
# tile into L2 (cp.async.bulk.prefetch.tensor) before griddepcontrol.wait; the
# host passes how many (default: up to 24 MB over the grid; QGEMM_X_PREFETCH=n
# forces n, 0 none, temporary). (1) the PDL gpu test (correctness of the path);
# (2) --chain 8 with the default against X_PREFETCH=0, in turn, twice;
# (3) plain launches (no PDL) with a forced prefetch of 8 / 64 K blocks against
# none, qgemm alone, twice (is it worth doing without PDL too?).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
echo "== gpu_pdl test" >> $E
timeout 200 build/qgemm_tests gpu_pdl 2>&1 | tail -8 >> $E
c() { echo "== chain, X_PREFETCH=$1" >> $E; QGEMM_X_PREFETCH=$1 timeout 200 build/qgemm bench --chain 8 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror" >> $E; }
for round in 1 2; do c -1; c 0; done
b() { echo "== plain, X_PREFETCH=$1" >> $E; QGEMM_X_PREFETCH=$1 timeout 200 build/qgemm bench --runs 30 --no-cublas "${@:2}" 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror" | grep -vE " (compiled|disk|memory) " >> $E; }
S=""
for m in 64 128; do for nk in 2112x7168 24576x1536 32768x512 7168x16384 4096x7168 7168x2048; do S="$S --shape ${m}x$nk"; done; done
S="$S --shape 4096x7168x2048 --shape 4096x4096x7168"
for round in 1 2; do b 0 $S; b 8 $S; b 64 $S; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
