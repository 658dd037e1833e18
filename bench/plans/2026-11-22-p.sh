# Run 3 of the fifth session (2026-11-22): plan p (tile ratings, M = 512..4096),
# then the grouped tables (qgemm alone) with forced tiles.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-p.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for c in auto 128,128,0,a 128,128,0,none 128,256,0,a 128,256,0,none auto; do
  echo "== $c" >> $G
  args=(); [ $c = auto ] || args=(--config $c)
  timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 "${args[@]}" 2>&1 | grep -E "^[0-9]+x[0-9]+ |rror|spread" >> $G
done
cat $OUT/explore.txt $G
