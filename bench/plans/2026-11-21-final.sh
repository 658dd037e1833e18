# runs 3 and 5 of the third session: the full device check, then plan $PLAN (h, j); its
# output is appended to summary.txt (the device returns at most 8 files).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
OUT=$OUT STEP_TIMEOUT=300 bash bench/device-check.sh
rm -f "$OUT/build.log"
mkdir -p /tmp/explore && OUT=/tmp/explore bash bench/explore.sh bench/plans/2026-11-21-${PLAN:-h}.plan > /dev/null 2>&1
{ echo; echo "== bench/plans/2026-11-21-${PLAN:-h}.plan"; cat /tmp/explore/explore.txt; } >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
