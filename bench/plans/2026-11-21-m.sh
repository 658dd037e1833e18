# Run 3 of the fourth session: every test with the K-pipelined loop on, plan m,
# and the grouped tables with the loop off and on (QGEMM_KPIPE, a temporary
# switch of that working tree).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
timeout 400 build/qgemm_tests > $OUT/tests.log 2>&1; echo "rc=$?" >> $OUT/tests.log
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-21-m.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for e in 0 1 0 1; do
  echo "== [QGEMM_KPIPE=$e] auto" >> $G
  QGEMM_KPIPE=$e timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ |rror|spread" >> $G
done
grep -E "FAIL|passed|rc=" $OUT/tests.log; cat $OUT/explore.txt; cat $G
