# Run 2 of the fourth session: plan l, then one bench row with cuBLASLt (the
# bench now also measures the card's write-only bandwidth).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-21-l.plan > /dev/null 2>&1
build/qgemm bench --shape 4096x32768x512 --shape 128x32768x512 > $OUT/bench-write.txt 2>&1
cat $OUT/bench-write.txt; grep -E "Frequency|Throughput|Duration|Warp Cycles|Eligible|Issued" $OUT/ncu.txt
