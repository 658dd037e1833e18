# Run 2 of the seventh session (2026-11-22): qgemm check with both switches on,
# plan w, then the grouped tables (qgemm alone) with the switches.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
C=$OUT/check-rs-pp.txt
QGEMM_X_DEFINES=QG_A_REGS=1,QG_PINGPONG=1 timeout 150 build/qgemm check > $C 2>&1; echo "check rc=$?" >> $C
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-w.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for x in - QG_A_REGS=1,QG_PINGPONG=1 QG_PINGPONG=1 QG_A_REGS=1 - QG_A_REGS=1,QG_PINGPONG=1 QG_PINGPONG=1 QG_A_REGS=1; do
  echo "== $x" >> $G
  QGEMM_X_DEFINES=${x#-} timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ +[0-9]|rror|spread" >> $G
done
tail -3 $C; cat $OUT/explore.txt $G
