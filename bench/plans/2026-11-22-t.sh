# Run 3 of the sixth session (2026-11-22): qgemm check and the dense GPU grid with the
# wide store chunks, then plan t and the grouped tables with 16-column and wide chunks.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
C=$OUT/check-store.txt
timeout 150 build/qgemm check > $C 2>&1; echo "check rc=$?" >> $C
grep -q "check rc=0" $C || { cat $C; exit 1; }
timeout 200 build/qgemm_tests gpu_dense_grid 2>&1 | tail -4 >> $C
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-t.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for x in 16 0 16 0; do
  echo "== QGEMM_X_STORE=$x" >> $G
  if [ $x = 0 ]; then unset QGEMM_X_STORE; else export QGEMM_X_STORE=$x; fi
  timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ |rror|spread" | grep -v " disk \| compiled " >> $G
done
tail -4 $C; cat $OUT/explore.txt $G
