#!/usr/bin/env bash
# pmqa_walk_check.sh -- the paged MQA kernel's walks on the CPU: extracts the part of
# kernels/qg_paged_mqa_logits.cuh between its "the walks" markers (the producer's qg_pmqa_walk
# and the math warpgroups' strided qg_pmqa_swalk, as the kernel compiles them) and runs
# tools/pmqa_walk_check.cpp on it for 1 and 2 CTAs an SM; then a negative control (a strided
# walk broken on purpose must fail).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/qg-pmqa-walk.XXXXXX")
trap 'rm -rf "$work"' EXIT
cxx=${CXX:-g++}
sed -n '/---- the walks (tools/,/---- end of the walks ----/p' "$root/kernels/qg_paged_mqa_logits.cuh" > "$work/pmqa_walks.inc"
grep -q "struct qg_pmqa_swalk" "$work/pmqa_walks.inc" || { echo "FAIL: walks not found"; exit 1; }
fails=0
for ctas in 1 2; do
    "$cxx" -std=c++17 -O1 -w -I"$work" -DQG_PMQA_CTAS=$ctas "$root/tools/pmqa_walk_check.cpp" -o "$work/sim"
    "$work/sim" || fails=$((fails + 1))
done
# negative control: the CTA's first unit in a new entry taken as 0 (wrong for 2 CTAs an SM)
sed 's/const int c = k % QG_PMQA_CTAS;/const int c = 0;/' "$work/pmqa_walks.inc" > "$work/neg.inc"
mkdir -p "$work/neg" && cp "$work/neg.inc" "$work/neg/pmqa_walks.inc"
"$cxx" -std=c++17 -O1 -w -I"$work/neg" -DQG_PMQA_CTAS=2 "$root/tools/pmqa_walk_check.cpp" -o "$work/negsim"
if "$work/negsim" > "$work/neg.out"; then echo "FAIL: the negative control passed"; fails=$((fails + 1))
else echo "negative control failed as it must: $(tail -1 "$work/neg.out")"; fi
# negative control: the run's end without the range's end (a run past the CTA's last unit)
sed 's/return b == end_b ? min(nb, end_k) : nb;/return nb;/' "$work/pmqa_walks.inc" > "$work/neg2.inc"
cmp -s "$work/neg2.inc" "$work/pmqa_walks.inc" && { echo "FAIL: run_end not found"; fails=$((fails + 1)); }
mkdir -p "$work/neg2" && cp "$work/neg2.inc" "$work/neg2/pmqa_walks.inc"
"$cxx" -std=c++17 -O1 -w -I"$work/neg2" -DQG_PMQA_CTAS=1 "$root/tools/pmqa_walk_check.cpp" -o "$work/negsim2"
if "$work/negsim2" > "$work/neg2.out"; then echo "FAIL: the run_end negative control passed"; fails=$((fails + 1))
else echo "run_end negative control failed as it must: $(tail -1 "$work/neg2.out")"; fi
[ $fails = 0 ] && echo "pmqa walk check: PASS" || { echo "pmqa walk check: $fails FAIL"; exit 1; }
