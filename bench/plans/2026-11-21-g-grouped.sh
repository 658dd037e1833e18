# Run 2 of the third session (bench/results/2026-11-21-explore3/): plan g, then the
# grouped tables under forced configurations. QGEMM_SFB_GLOBAL and QGEMM_REGS were
# temporary experiment switches of that working tree (never committed).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
OUT=$OUT bash bench/explore.sh bench/plans/2026-11-21-g.plan > /dev/null 2>&1
G=$OUT/grouped-explore.txt
for v in "QGEMM_SFB_GLOBAL=1 QGEMM_REGS=72,216|128,128,0,a" "-|128,128,0,a" "-|auto" "QGEMM_SFB_GLOBAL=1|auto" "-|128,256,0,a"; do
  e=${v%%|*}; c=${v#*|}; [ "$e" = "-" ] && e=""
  args=(); [ "$c" = auto ] || args=(--config "$c")
  echo "== [$e] $c" >> $G
  env $e timeout 200 build/qgemm bench --grouped --no-cublas --runs 20 "${args[@]}" 2>&1 | grep -E "^[0-9]+x[0-9]+ |rror|spread" >> $G
done
cat $G | head -80
