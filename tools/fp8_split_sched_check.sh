#!/usr/bin/env bash
# fp8_split_sched_check.sh -- the FP8-output split tiles' scheduler invariants on the
# CPU (tools/fp8_split_sched_check.cpp): kinds 0..3, clusters of 2 and 4, N a multiple
# of 128 and not (2112: a last group of 64 columns; 1160: of 8), the default swizzle
# group (the cluster) and 16; then the negative control (swizzle 3 must fail).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/qg-split-sched.XXXXXX")
trap 'rm -rf "$work"' EXIT
cxx=${CXX:-g++}
fails=0
build() { # kind split n swizzle groups
    "$cxx" -std=c++17 -O1 -w -I"$root/kernels" -DQG_KIND="$1" -DQG_FP8_SPLIT="$2" \
        -DQG_BLOCK_N=$((128 / $2)) -DQG_BLOCK_M=64 -DQG_SHAPE_N="$3" -DQG_NUM_GROUPS="$5" \
        -DQG_CLUSTER="$2" -DQG_SPLIT_K=1 -DQG_MULTICAST=0 -DQG_SWIZZLE_GROUP="$4" -DGRID=128 \
        -DSHAPE_M=1000 "$root/tools/fp8_split_sched_check.cpp" -o "$work/sim"
}
for kind in 0 1 2 3; do
    groups=1; [ "$kind" != 0 ] && groups=5
    for split in 2 4; do
        for n in 2112 1160 4096; do
            for swz in "$split" 16; do
                build "$kind" "$split" "$n" "$swz" "$groups"
                if "$work/sim" > "$work/out"; then tail -1 "$work/out"
                else echo "FAIL kind $kind split $split N $n swizzle $swz:"; head -3 "$work/out"; fails=$((fails + 1)); fi
            done
        done
    done
done
build 0 2 2112 3 1
if "$work/sim" > /dev/null; then echo "FAIL: the negative control (swizzle 3, clusters of 2) passed"; fails=$((fails + 1))
else echo "negative control (swizzle 3, clusters of 2) fails, as it must"; fi
[ "$fails" = 0 ] && echo "PASS: split scheduler invariants" || { echo "FAIL: $fails"; exit 1; }
