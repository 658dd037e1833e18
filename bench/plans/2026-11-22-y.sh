# Run 1 of the eighth session (2026-11-22): the next tile's first wgmma issue
# before the epilogue (overlap) and per-warpgroup epilogue sync, A B A B
# against the same tree with the switches off and against main's bdd67f5
# (built from git in /tmp/base). qgemm alone, median of 20.
export QGEMM_CACHE_DIR=/tmp/qgemm-cache
make -j16 > /dev/null 2>&1 || { echo build failed; exit 1; }
rm -rf /tmp/base && git worktree add -f /tmp/base bdd67f5 > /dev/null 2>&1 && make -C /tmp/base -j16 > /dev/null 2>&1 || echo "base build failed"
E=$OUT/explore.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $E
git log -1 --format='commit %h %s' >> $E
DENSE="--shape 4096x7168x2048 --shape 4096x24576x1536 --shape 4096x32768x512 --shape 4096x7168x16384 --shape 4096x4096x7168 --shape 4096x2112x7168 --shape 2048x7168x2048 --shape 1024x4096x7168 --shape 64x7168x16384 --shape 128x4096x7168"
V0="QG_X_NO_OVERLAP=1,QG_X_ALL_SYNC=1"; V1="QG_X_NO_OVERLAP=1"; V2="QG_X_ALL_SYNC=1"; V3=""
one() { # label binary env args...
    local label=$1 bin=$2 x=$3; shift 3
    echo "== $label [$x]" >> $E
    QGEMM_X_DEFINES=$x timeout 300 $bin bench "$@" --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ +[0-9]|rror|spread" | grep -vE " (compiled|disk|memory) " >> $E
}
for round in 1 2; do
    one base /tmp/base/build/qgemm "" $DENSE
    one v0 build/qgemm "$V0" $DENSE
    one v1 build/qgemm "$V1" $DENSE
    one v2 build/qgemm "$V2" $DENSE
    one v3 build/qgemm "$V3" $DENSE
done
G=$OUT/grouped-explore.txt
: > $G
for round in 1 2; do
    for v in base v0 v3; do
        case $v in base) bin=/tmp/base/build/qgemm; x="";; v0) bin=build/qgemm; x=$V0;; v3) bin=build/qgemm; x="";; esac
        echo "== $v [$x]" >> $G
        QGEMM_X_DEFINES=$x timeout 200 $bin bench --grouped --no-cublas --runs 20 2>&1 | grep -E "^[0-9]+x[0-9]+ +[0-9]|rror|spread" >> $G
    done
done
# Correctness of the new kernel beyond the bench rows' diff: the check sweep.
timeout 200 build/qgemm check > $OUT/check.txt 2>&1; echo "check rc=$?" >> $OUT/check.txt
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $E
tail -3 $OUT/check.txt
cat $E $G
