# Part B of the sixth session's final run (2026-11-22): the benchmark steps of
# device-check.sh, the mid-size M rows, and compute-sanitizer (memcheck,
# racecheck) on the new store chunks: `qgemm check --quick` only runs 64x16
# tiles (16-column chunks), so one small GEMM per chunk width runs under both.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
OUT=$OUT bash bench/device-check.sh --only bench,json,grouped,python
mid=(); for s in 512x4096x7168 512x7168x16384 1024x4096x7168 1024x7168x2048 1024x7168x16384 \
    2048x4096x7168 2048x7168x2048 8192x2112x7168; do mid+=(--shape "$s"); done
timeout 200 build/qgemm bench "${mid[@]}" > "$OUT/bench-mid.txt" 2>&1
S=$OUT/sanitizer-store.log
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  for c in 256,128,0,a 128,256,0,none 128,96,0,none 64,16,0,none; do
    echo "===== compute-sanitizer --tool $tool: qgemm bench --shape 520x1000x384 --config $c" >> "$S"
    timeout 120 "$CS" --tool $tool build/qgemm bench --shape 520x1000x384 --config $c \
      --no-cublas --runs 20 --warmup 3 2>&1 | grep -E "^[0-9]+x|SUMMARY|rror" >> "$S"
  done
done
cat "$OUT/summary.txt" "$S"; grep -E "geometric|^[0-9]+x" "$OUT/bench.txt" | head -30
