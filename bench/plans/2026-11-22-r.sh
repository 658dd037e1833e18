# Run 1 of the sixth session (2026-11-22): correctness of the ping-pong kernels
# (qgemm check with QG_PINGPONG=1), then plan r
# and the grouped tables (qgemm alone) with and without ping-pong.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
C=$OUT/check-pingpong.txt
QGEMM_X_DEFINES=QG_PINGPONG=1 timeout 150 build/qgemm check > $C 2>&1; echo "check rc=$?" >> $C
grep -q "check rc=0" $C || { cat $C; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-r.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for x in - QG_PINGPONG=1 - QG_PINGPONG=1; do
  echo "== $x" >> $G
  QGEMM_X_DEFINES=${x#-} timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ |rror|spread" >> $G
done
cat $C $OUT/explore.txt $G
