# Run 2 of the fifth session (2026-11-22): plan o (M = 512..2048 tiles; N =
# 2112), then the grouped tables and the mid-M shapes with cuBLASLt (whose
# tile and cluster the bench now prints).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-o.plan > /dev/null 2>&1
timeout 200 build/qgemm bench --grouped > $OUT/bench_grouped.txt 2>&1
timeout 120 build/qgemm bench --shape 512x4096x7168 --shape 1024x4096x7168 --shape 1024x7168x2048 \
    --shape 2048x7168x2048 --shape 2048x4096x7168 --shape 4096x7168x16384 --shape 4096x2112x7168 \
    --shape 128x32768x512 --shape 64x7168x16384 > $OUT/bench-mid.txt 2>&1
cat $OUT/explore.txt $OUT/bench_grouped.txt $OUT/bench-mid.txt
