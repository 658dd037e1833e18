# Run 1 of the fourth session: GPU correctness of the direct-store epilogue
# (QGEMM_EPILOGUE, a temporary switch of that working tree), plan k, and the
# grouped tables with either epilogue.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
T=$OUT/tests-direct.log
for t in gpu_dense_grid gpu_grouped_contiguous gpu_grouped_masked gpu_masked_graph_replay; do
  QGEMM_EPILOGUE=direct timeout 200 build/qgemm_tests $t >> $T 2>&1; echo "rc=$?" >> $T
done
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-21-k.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for e in tma direct tma direct; do
  echo "== [QGEMM_EPILOGUE=$e] auto" >> $G
  QGEMM_EPILOGUE=$e timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ |rror|spread" >> $G
done
grep -E 'PASS|FAIL|SKIP|rc=|passed' $T; cat $OUT/explore.txt | head -120; cat $G
