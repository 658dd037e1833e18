#!/usr/bin/env bash
# bench/sweep.sh SHAPE[,SHAPE...] CONFIG [CONFIG...] -- time forced configurations
# of qgemm on the GPU (no cuBLASLt), one line per (shape, config): the tool for
# tuning the heuristic in src/config.c. CONFIG is bm,bn,stages,mc (mc none|a|b),
# or "auto" for the heuristic's own choice. Needs build/qgemm.
set -u
shapes="$1"; shift
for s in ${shapes//,/ }; do
    for c in "$@"; do
        if [ "$c" = auto ]; then args=(); else args=(--config "$c"); fi
        line=$(timeout 120 build/qgemm bench --shape "$s" "${args[@]}" --no-cublas --runs 20 2>&1 |
               grep -E "^$s " | head -1)
        printf '%-8s %s\n' "$c" "${line:-$s error}"
    done
done
