# Run 2 of the sixth session (2026-11-22): qgemm check with the B prefetch on, then plan s.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
C=$OUT/check-prefetch.txt
QGEMM_X_PF=16 timeout 150 build/qgemm check > $C 2>&1; echo "check rc=$?" >> $C
grep -q "check rc=0" $C || { cat $C; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-22-s.plan > /dev/null 2>&1
tail -3 $C; cat $OUT/explore.txt
