set -x
R=bench/results/2026-11-25-h200-10
python3 python/setup.py build_ext --inplace > $OUT/ext-build.log 2>&1 || tail $OUT/ext-build.log
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
timeout 200 python3 bench/peers.py --filter '^dense (1|32|64|128)x' --warm-jobs 14 --out $OUT > $OUT/peers-smallm.log 2>&1; tail -30 $OUT/peers-smallm.log
timeout 120 ncu --clock-control none -k regex:'qg_fp8|sm90' -s 2 -c 2 --section SpeedOfLight --section InstructionStats --section WarpStateStats python3 $R/ncu-pair.py wgrad 4096x4096x7168 > $OUT/ncu-wgrad.txt 2>&1; grep -E "sm90|qg_fp8|Throughput|Executed Instructions |Duration|SM Frequency" $OUT/ncu-wgrad.txt | head -40
