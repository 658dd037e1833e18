# Session j, run 5: the 1D1D kinds' 128-row tile width forced (exp-bn.patch)
# to 128 / 136 / 144 in the landed tree (FP32 D in swizzled chunks of 32, 8
# and 16 columns), beside DeepGEMM, on the weight-gradient and k-grouped rows.
set -u
R=bench/results/2026-11-27-h100-15
(bash .peers/build.sh > $OUT/dg-build-e.log 2>&1; touch /tmp/dg-build.done) &
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
git apply $R/exp-bn.patch && python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
while [ ! -f /tmp/dg-build.done ]; do sleep 2; done; tail -n 1 $OUT/dg-build-e.log
source .peers/env.sh; export PYTHONPATH="python:$PYTHONPATH"
for bn in 128 136 144; do
  QGEMM_EXP_BN=$bn timeout 100 python3 bench/explore.py bn$bn k-grouped wgrad 2>&1 | grep -v -i warn | tee -a $OUT/explore-e.log
done
git apply -R $R/exp-bn.patch
