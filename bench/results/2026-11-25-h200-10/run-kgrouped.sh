# Session e, run 3: the single-launch k-grouped GEMM on the GPU: the Python
# training tests, DeepGEMM's suite, the wgrad / k-grouped rows beside DeepGEMM,
# memcheck and racecheck on the small k-grouped cases.
R=bench/results/2026-11-25-h200-10
make -j16 > $OUT/build.log 2>&1 || tail -20 $OUT/build.log
python3 python/setup.py build_ext --inplace > $OUT/ext-build.log 2>&1 || tail $OUT/ext-build.log
PYTHONPATH=python timeout 240 python3 -m pytest -q -rs -x tests/python/test_training.py > $OUT/python-training.log 2>&1; tail -5 $OUT/python-training.log
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
timeout 200 python3 bench/peers.py --filter 'k-grouped|wgrad' --warm-jobs 14 --out $OUT > $OUT/peers-training.log 2>&1; grep -E "^(k-grouped|wgrad)" $OUT/peers.txt | cut -c1-120
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -x tests/python/test_training.py -k "test_k_grouped and 640" > $OUT/$tool-kgrouped.log 2>&1; echo "$tool rc=$?"; grep -E "ERROR SUMMARY|passed|failed" $OUT/$tool-kgrouped.log | tail -3
done
