# Run 1 of the fifth session (2026-11-22): plan n (small M: stages, A / B
# multicast), then the 18-shape bench and mid-M shapes with cuBLASLt, whose
# algorithm (tile, cluster) the bench now prints.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-n.plan > /dev/null 2>&1
timeout 240 build/qgemm bench > $OUT/bench.txt 2>&1
timeout 120 build/qgemm bench --shape 512x4096x7168 --shape 1024x4096x7168 --shape 1024x7168x2048 \
    --shape 2048x7168x2048 --shape 2048x4096x7168 > $OUT/bench-mid.txt 2>&1
cat $OUT/explore.txt $OUT/bench.txt $OUT/bench-mid.txt
