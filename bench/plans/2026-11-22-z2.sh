# Runs 4 and 5 of the eighth session (2026-11-22). Run 4: per-warpgroup epilogue stores
# (QG_WG_STORE, off for the N-split tiles) and the 224/56 split for the
# K-pipelined 128-row tiles (wg-store.patch). Run 5: 32-bit wgmma descriptors with
# a warp-uniform warpgroup index. Each against main's bdd67f5 (/tmp/base), A B A B;
# dense rows then the grouped tables. qgemm alone, median of 20.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
[ -x /tmp/base/build/qgemm ] || { rm -rf /tmp/base; git worktree add -f /tmp/base bdd67f5 > /dev/null 2>&1 && make -C /tmp/base -j16 > /dev/null 2>&1; } || echo "base build failed"
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
DENSE="--shape 4096x7168x2048 --shape 4096x24576x1536 --shape 4096x32768x512 --shape 4096x7168x16384 --shape 4096x4096x7168 --shape 4096x2112x7168 --shape 2048x7168x2048 --shape 1024x4096x7168 --shape 64x7168x16384 --shape 128x4096x7168 --shape 64x2112x7168 --shape 128x7168x2048"
for ARGS in "$DENSE" "--grouped"; do
    for round in 1 2; do
        for label in base new; do
            bin=build/qgemm; [ $label = base ] && bin=/tmp/base/build/qgemm
            echo "== $label" >> $E
            timeout 250 $bin bench $ARGS --no-cublas --runs 20 2>&1 \
                | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror|spread" >> $E
        done
    done
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
