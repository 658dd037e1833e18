# Session f, run 1: the one-set K loop unrolled (kernels/qg_fp8_gemm.cuh QG_K_UNROLL)
# for more tiles than 256x128, four variants, each a rebuild of the Python extension
# and the peers table's M = 4096 dense and grouped rows beside DeepGEMM (events now
# interleaved call by call); then the SASS of both libraries' 128x192 kernel for
# 4096x1536x24576 (kept out of the repository).
set -u
export QGEMM_COMMIT=${QGEMM_COMMIT:-unknown}
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
F='^(dense 4096x|contiguous|masked (32x192|6x1024)|contiguous-psum)'
K=kernels/qg_fp8_gemm.cuh
cp $K /tmp/orig.cuh
for v in base u4 u8; do
  cp /tmp/orig.cuh $K
  case $v in
    u2) sed -i 's/^#define QG_K_UNROLL .*/#define QG_K_UNROLL (QG_BLOCK_M == 256 \&\& QG_BLOCK_N == 128 \&\& !QG_SFB_COLS ? 4 : !QG_SFB_COLS ? 2 : 1)/' $K ;;
    u4) sed -i 's/^#define QG_K_UNROLL .*/#define QG_K_UNROLL (!QG_SFB_COLS ? 4 : 1)/' $K ;;
    u8) sed -i 's/^#define QG_K_UNROLL .*/#define QG_K_UNROLL (!QG_SFB_COLS ? 8 : 1)/' $K ;;
  esac
  grep "^#define QG_K_UNROLL" $K
  python3 python/setup.py build_ext --inplace > $OUT/ext-$v.log 2>&1 || tail $OUT/ext-$v.log
  mkdir -p $OUT/$v
  timeout 200 python3 bench/peers.py --libs deepgemm,qgemm --filter "$F" --warm-jobs 14 --out $OUT/$v > $OUT/$v/peers.log 2>&1
  echo "$v rc=$?"; grep -E "geomean|worst" $OUT/$v/peers.log | head -12
done
cp /tmp/orig.cuh $K
# SASS: qgemm's 128x192 kernel (PTX dumped by the JIT, assembled here), DeepGEMM's from its cache
mkdir -p /tmp/sass /tmp/qgd
QGEMM_JIT_DUMP=/tmp/qgd QGEMM_CACHE_DIR=/tmp/qgc-sass python3 - <<'PY' > /dev/null 2>&1
import sys; sys.path.insert(0, "bench"); import peers
libs = peers.Libs(("qgemm",)); spec = [s for s in peers.table_specs(libs.align(), 0) if s["kind"] == "dense" and s["shape"] == "4096x1536x24576"][0]
row = peers.Row(spec, libs, 0); row.call("qgemm")()
PY
for p in /tmp/qgd/*.ptx; do ptxas -arch=sm_90a -o /tmp/sass/qg.cubin $p && cuobjdump -sass /tmp/sass/qg.cubin > /tmp/sass/qg-128x192.sass; done
d=$(grep -l "1536u, 24576u\|1536, 24576" -r $DG_JIT_CACHE_DIR --include=*.cu 2>/dev/null | head -1)
[ -n "$d" ] && cuobjdump -sass $(dirname $d)/*.cubin > /tmp/sass/dg-128x192.sass
ls -la /tmp/sass; tar czf $OUT/sass.tgz -C /tmp sass
