# Session g, run 2: explore-h.py's masked list on the tree as it is, then its small-M list
# under three variants of the small tiles' K loop: base (K-pipelined, QG_KPIPE), nokp (the
# one-set loop, barrier tested ahead) and nokp-u4 (the one-set loop unrolled by 4); each
# variant rewrites src/config.c / the kernel and rebuilds the Python extension. One log.
set -u
R=bench/results/2026-11-25-h200-12
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
K=kernels/qg_fp8_gemm.cuh C=src/config.c
cp $K /tmp/orig.cuh; cp $C /tmp/orig.c
for v in base nokp nokp-u4; do
  cp /tmp/orig.cuh $K; cp /tmp/orig.c $C
  case $v in
    nokp) sed -i 's/    return bn <= 128 \&\& !(bm == 128/    return false \&\& bn <= 128 \&\& !(bm == 128/' $C ;;
    nokp-u4) sed -i 's/    return bn <= 128 \&\& !(bm == 128/    return false \&\& bn <= 128 \&\& !(bm == 128/' $C
             sed -i 's/^    (QG_SFB_COLS ? 1  /    (QG_SFB_COLS ? 1 : QG_BLOCK_N <= 128 \&\& QG_BLOCK_M <= 128 ? 4/' $K ;;
  esac
  grep -c "return false && bn" $C; grep -c "QG_BLOCK_M <= 128 ? 4" $K
  python3 python/setup.py build_ext --inplace > /tmp/ext-$v.log 2>&1 || tail /tmp/ext-$v.log
  [ $v = base ] && timeout 200 python3 $R/explore-h.py $v masked 2>&1 | grep -v -i warn | tee -a $OUT/explore-h2.log
  timeout 150 python3 $R/explore-h.py $v small 2>&1 | grep -v -i warn | tee -a $OUT/explore-h2.log
done
cp /tmp/orig.cuh $K; cp /tmp/orig.c $C
