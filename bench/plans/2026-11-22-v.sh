# Run 1 of the seventh session (2026-11-22): qgemm check under the register-A
# switch (its forced sweep does not reach the N-split tiles; the bench rows of
# the plan print each one's diff against the fp64 reference), plan v, then the
# grouped tables with and without register A.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
RS=QG_A_REGS=1,QG_MATH_REGS=232,QG_PRODUCER_REGS=40
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-v.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for x in - $RS - $RS; do
  echo "== $x" >> $G
  QGEMM_X_DEFINES=${x#-} timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ |rror|spread" >> $G
done
cat $OUT/explore.txt $G
