#!/bin/bash
# session q, call 5: the cast rows of bench/peers_families.py (call 3's stopped on a bug of the script)
set -u
export QGEMM_CACHE_DIR=/tmp/qc5 PYTHONUNBUFFERED=1
T0=$SECONDS
python3 python/setup.py build_ext --inplace > $OUT/pybuild.log 2>&1 || { tail -20 $OUT/pybuild.log; exit 1; }
echo "built t=$((SECONDS-T0))"
source .peers/env.sh
PYTHONPATH=python:$PYTHONPATH timeout 150 python3 bench/peers_families.py --deepgemm-src .peers/DeepGEMM --kinds cast --out $OUT > $OUT/peers-cast.log 2>&1
echo "cast rc=$? t=$((SECONDS-T0))"; tail -24 $OUT/peers-families.txt
