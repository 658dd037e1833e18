# Ninth session, run 8 (2026-11-22): D stored straight from the accumulator
# registers (no shared-memory D tile), which frees room for one more stage
# (256x128: 3 -> 4, 128x256: 3 -> 4, 256x64: 4 -> 5). Temporary switch
# QGEMM_X_DIRECT in src/config.c. A B A B, qgemm alone, median of 20; then
# `qgemm check` with the switch on.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
MID="--shape 512x4096x7168 --shape 1024x4096x7168 --shape 2048x7168x2048 --shape 8192x2112x7168 --shape 1000x1000x1008 --shape 4100x7000x7168"
for ARGS in "" "$MID" "--grouped"; do
    for round in 1 2; do
        for d in 0 1; do
            echo "== direct $d ${ARGS:0:20}" >> $E
            QGEMM_X_DIRECT=$d timeout 250 build/qgemm bench $ARGS --no-cublas --runs 20 2>&1 \
                | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror|spread" | grep -vE " (compiled|disk|memory) " >> $E
        done
    done
done
QGEMM_X_DIRECT=1 timeout 200 build/qgemm check > $OUT/check-direct.txt 2>&1; tail -3 $OUT/check-direct.txt
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
