# Session h, run 2: explore-j.py's small list (the 128-row dense rows under tile order 1) on
# the tree as it is, then its multicast list on the tree as it is and with mc-whole.patch
# applied (CTA 0 of a pair loads the whole shared tile); the patch is reverted after. One log.
set -u
R=bench/results/2026-11-25-h200-13
bash .peers/build.sh | tail -n 1; source .peers/env.sh
export PYTHONPATH="python:$PYTHONPATH"
python3 python/setup.py build_ext --inplace > /tmp/ext.log 2>&1 || tail /tmp/ext.log
timeout 200 python3 $R/explore-j.py base small 2>&1 | grep -v -i warn | tee -a $OUT/explore-j.log
timeout 200 python3 $R/explore-j.py base mc 2>&1 | grep -v -i warn | tee -a $OUT/explore-j.log
git apply $R/mc-whole.patch && git diff --stat | tail -1
python3 python/setup.py build_ext --inplace > /tmp/ext2.log 2>&1 || tail /tmp/ext2.log
timeout 200 python3 $R/explore-j.py whole mc 2>&1 | grep -v -i warn | tee -a $OUT/explore-j.log
git apply -R $R/mc-whole.patch && git status --short | head -3
