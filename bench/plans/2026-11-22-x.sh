# Run 3 of the seventh session (2026-11-22): plan x, then the contiguous table for comparison.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-x.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ +[0-9]|rror|spread" >> $G
cat $OUT/explore.txt $G
