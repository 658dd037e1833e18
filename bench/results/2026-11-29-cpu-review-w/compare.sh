#!/usr/bin/env bash
# compare.sh BEFORE AFTER -- two QGEMM_JIT_DUMP directories: pairs the kernels by their JIT
# source (<key>.cu, the planner's text, which this change leaves alone) and compares their PTX
# with the `//` lines (compiler banner, file names) dropped. Prints one line a difference and a
# summary; exit 0 when every kernel of BEFORE has an identical twin in AFTER and vice versa.
set -euo pipefail
idx() { for c in "$1"/*.cu; do echo "$(sha256sum < "$c" | cut -c1-64) ${c%.cu}.ptx"; done | sort; }
b=$(idx "$1"); a=$(idx "$2")
same=0 diff=0 missing=0
while read -r h p; do
    q=$(awk -v h="$h" '$1 == h {print $2}' <<< "$a")
    if [ -z "$q" ]; then echo "missing after: $p"; missing=$((missing + 1)); continue; fi
    if cmp -s <(grep -v '^//' "$p") <(grep -v '^//' "$q"); then same=$((same + 1))
    else echo "differs: $(head -1 "${p%.ptx}.cu")"; diff=$((diff + 1)); fi
done <<< "$b"
[ "$(wc -l <<< "$a")" = "$(wc -l <<< "$b")" ] || { echo "kernel counts differ"; missing=$((missing + 1)); }
echo "$same identical, $diff differ, $missing missing (of $(wc -l <<< "$b"))"
[ $diff = 0 ] && [ $missing = 0 ]
