# Session i, run 6: compute-sanitizer racecheck and synccheck through
# device-check.sh (check --quick, one GEMM per store-chunk width, masked
# 256x128 / 128x256, hostile inputs), which run-d.sh's time limit cut short.
set -u
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || make 2>&1 | tail -20
timeout 500 bash bench/device-check.sh --only racecheck,synccheck > /dev/null 2>&1; echo "device-check rc=$?"; cat $OUT/summary.txt
grep -E "^=====|ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.log | paste - - | awk '{print $NF, $0}' | cut -c1-200
