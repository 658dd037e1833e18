# Run 2 of the eighth session (2026-11-22): run 1 (plan y) lost its dense rows
# to a grep pattern and found contiguous 128x256 at K = 7168 11% slower with
# the new kernel even with both switches off. This run separates the register
# split from the rest: variants of the same tree against main's bdd67f5
# (/tmp/base), A B A B. PART=dense or PART=grouped (two device calls).
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
[ -x /tmp/base/build/qgemm ] || { rm -rf /tmp/base; git worktree add -f /tmp/base bdd67f5 > /dev/null 2>&1 && make -C /tmp/base -j16 > /dev/null 2>&1; } || echo "base build failed"
E=$OUT/$PART-explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
DENSE="--shape 4096x7168x2048 --shape 4096x24576x1536 --shape 4096x32768x512 --shape 4096x7168x16384 --shape 4096x4096x7168 --shape 4096x2112x7168 --shape 2048x7168x2048 --shape 1024x4096x7168 --shape 64x7168x16384 --shape 128x4096x7168"
R216="QG_MATH_REGS=216,QG_PRODUCER_REGS=72"; R232="QG_MATH_REGS=232,QG_PRODUCER_REGS=40"
NO="QG_X_NO_OVERLAP=1,QG_X_ALL_SYNC=1"
if [ "$PART" = dense ]; then
    ARGS="$DENSE"; VARIANTS="base v0:$NO v0r216:$NO,$R216 v2:QG_X_ALL_SYNC=1 v3: v3r216:$R216 v3r232:$R232"
else
    ARGS="--grouped"; VARIANTS="base v0:$NO v0r216:$NO,$R216 v3: v3r216:$R216 v3r232:$R232"
fi
for round in 1 2; do
    for v in $VARIANTS; do
        label=${v%%:*}; x=${v#*:}; bin=build/qgemm
        [ "$label" = base ] && { bin=/tmp/base/build/qgemm; x=""; }
        echo "== $label [$x]" >> $E
        QGEMM_X_DEFINES=$x timeout 250 $bin bench $ARGS --no-cublas --runs 20 2>&1 \
            | grep -E "^[0-9]+x[0-9]+(x[0-9]+)? +[0-9]|rror|spread" >> $E
    done
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
cat $E
