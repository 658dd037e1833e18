# Session f, run 2: explore-g.py (forced tiles and multicast) under the K loop
# unrolled by 4 and by 8 for every one-set tile (QG_K_UNROLL); one log.
set -u
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
K=kernels/qg_fp8_gemm.cuh R=bench/results/2026-11-25-h200-11
cp $K /tmp/orig.cuh
for v in u4 u8; do
  cp /tmp/orig.cuh $K
  case $v in
    u4) sed -i 's/^#define QG_K_UNROLL .*/#define QG_K_UNROLL (!QG_SFB_COLS ? 4 : 1)/' $K ;;
    u8) sed -i 's/^#define QG_K_UNROLL .*/#define QG_K_UNROLL (!QG_SFB_COLS ? 8 : 1)/' $K ;;
  esac
  python3 python/setup.py build_ext --inplace > /tmp/ext-$v.log 2>&1 || tail /tmp/ext-$v.log
  timeout 270 python3 $R/explore-g.py $v 2>&1 | grep -v Warning | tee -a $OUT/explore-g.log
done
cp /tmp/orig.cuh $K
