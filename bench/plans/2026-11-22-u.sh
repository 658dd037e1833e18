# Run 4 of the sixth session (2026-11-22): plan u, then the grouped tables with store widths 16 / 32 / 64.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-u.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for x in 16 32 64 16 32 64; do
  echo "== QGEMM_X_STORE=$x" >> $G
  QGEMM_X_STORE=$x timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[48]x[0-9]+ |rror|spread" | grep -v " disk \| compiled " >> $G
done
cat $OUT/explore.txt $G
