# Ninth session, run 1 (2026-11-22): the bench's new L2 flush (--flush clean:
# write then read 2x L2, kernels/l2_flush.cuh) against the old write-only
# flush, both beside cuBLASLt on the 18-shape table; the mid-size rows and the
# grouped tables with the new flush; and two forced tiles for the grouped
# tables (the masked 4x256 rows: 128x112 and 128x96 against the heuristic's
# 128x160 / 128x128), qgemm alone.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
B=build/qgemm
timeout 200 $B bench > "$OUT/bench.txt" 2>&1
timeout 200 $B bench --flush write > "$OUT/bench-write.txt" 2>&1
mid=(); for s in 512x4096x7168 512x7168x16384 1024x4096x7168 1024x7168x2048 1024x7168x16384 \
    2048x4096x7168 2048x7168x2048 8192x2112x7168; do mid+=(--shape "$s"); done
timeout 200 $B bench "${mid[@]}" > "$OUT/bench-mid.txt" 2>&1
timeout 250 $B bench --grouped > "$OUT/bench_grouped.txt" 2>&1
G=$OUT/grouped-explore.txt
for c in 128,112,0,none 128,96,0,none; do
    echo "== --config $c" >> $G
    timeout 200 $B bench --grouped --no-cublas --runs 20 --config $c 2>&1 \
        | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror" >> $G
done
for f in bench bench-write bench-mid bench_grouped; do
    echo "== $f"; grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|geometric|flushed|bandwidth" "$OUT/$f.txt"
done
cat $G
