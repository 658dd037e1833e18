#!/usr/bin/env bash
# PTX of FP8 kernel variants compiled by two trees (OLD, NEW: each a built
# checkout), offline through the public API (qg_compile / qg_compile_fp8out /
# qg_compile_swiglu with a forced configuration, QGEMM_JIT_DUMP), compared
# with NVRTC's .loc/.file lines removed (source line numbers move with the
# new code). The method of ../2026-11-28-cpu-ptx-identity/run.sh, with the
# output kind and split-K added. Usage: run.sh OLD_TREE NEW_TREE WORKDIR [JOBS]
set -euo pipefail
old=$1 new=$2 work=$3 jobs=${4:-2}
mkdir -p "$work"
cat > "$work/c4.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qgemm.h"
/* out kind m n k groups block_m block_n multicast split_k: compile one forced
 * variant offline. out: 0 bf16 / FP32 D, 1 e4m3 D, 2 e4m3 D UE8M0, 3 SwiGLU. */
int main(int argc, char **argv) {
    if (argc < 11) return 2;
    qg_context *ctx;
    if (qg_context_create_offline(&ctx, NULL)) { puts(qg_last_error()); return 1; }
    qg_problem p;
    memset(&p, 0, sizeof p);
    const int out = atoi(argv[1]);
    p.kind = atoi(argv[2]); p.m = atoi(argv[3]); p.n = atoi(argv[4]); p.k = atoi(argv[5]);
    p.num_groups = atoi(argv[6]); p.accumulate = p.kind >= 4;
    qg_config c;
    memset(&c, 0, sizeof c);
    c.block_m = atoi(argv[7]); c.block_n = atoi(argv[8]); c.multicast = (qg_multicast)atoi(argv[9]);
    c.split_k = atoi(argv[10]);
    qg_status st = out == 0 ? qg_compile(ctx, &p, &c, NULL)
                 : out == 3 ? qg_compile_swiglu(ctx, &p, 0, &c, NULL)
                            : qg_compile_fp8out(ctx, &p, out - 1, &c, NULL);
    puts(st ? qg_last_error() : "ok");
    qg_context_destroy(ctx);
    return st != 0;
}
C
for t in old new; do
    d=${!t}
    cc -O1 -I"$d/include" "$work/c4.c" "$d/build/libqgemm.a" -ldl -lpthread -lm -o "$work/c4-$t"
done
# out kind M N K G block_m block_n multicast split_k
variants=(
  "0 0 4096 7168 16384 1 128 128 0 0" "0 0 4096 7168 16384 1 128 128 1 0" "0 0 4096 7168 16384 1 128 128 2 0"
  "0 0 4096 7168 16384 1 256 128 1 0" "0 0 4096 7168 16384 1 256 128 2 0" "0 0 4096 2112 7168 1 128 192 0 0"
  "0 0 4096 2112 7168 1 128 192 2 0" "0 0 4096 4096 7168 1 128 256 1 0" "0 0 128 4096 7168 1 64 64 0 0"
  "0 0 64 2112 7168 1 64 32 0 2" "0 0 128 7168 16384 1 64 112 0 2" "0 0 4096 4096 7168 1 128 96 2 0"
  "0 1 8192 4096 7168 8 128 192 1 0" "0 1 8192 4096 7168 8 128 192 0 0" "0 1 8192 4096 7168 8 128 128 0 0"
  "0 1 8192 4096 7168 8 64 128 0 0" "0 1 32768 6144 7168 4 128 256 1 0"
  "0 2 1024 6144 7168 1 128 192 1 0" "0 2 1024 6144 7168 1 128 192 0 0" "0 2 4096 4096 7168 8 256 128 1 0"
  "0 2 256 4096 7168 4 64 128 0 0" "0 2 256 4096 7168 4 128 128 0 0" "0 2 1024 4096 7168 6 128 256 1 0"
  "0 3 8192 4096 7168 4 256 128 1 0" "0 3 8192 4096 7168 4 128 192 1 0" "0 3 8192 6144 7168 4 128 192 0 0"
  "0 4 7168 4096 16384 1 128 128 1 0" "0 4 7168 4096 16384 1 128 128 0 0" "0 4 2112 4096 7168 1 128 136 0 0"
  "0 4 24576 4096 1536 1 128 136 0 0" "0 5 4096 7168 8192 4 128 128 0 0" "0 5 4096 7168 2048 8 128 136 0 0"
  "1 0 4096 7168 7168 1 128 128 1 0" "2 0 64 2112 7168 1 64 32 0 0" "1 1 8192 4096 7168 8 128 256 1 0"
  "1 2 1024 4096 7168 4 128 128 0 0" "2 3 8192 4096 7168 4 128 256 0 0" "1 0 4096 4096 7168 1 128 256 2 0"
  "3 0 4096 4096 7168 1 128 256 1 0" "3 1 8192 4096 7168 8 128 256 0 0" "3 2 1024 4096 7168 4 128 256 0 0"
)
strip() { grep -v -E '^\s*\.(loc|file)\b' "$1"; }
one() { # index tree
    local i=$1 t=$2
    rm -rf "$work/dump-$t-$i" "$work/cache-$t-$i"
    mkdir -p "$work/dump-$t-$i"
    QGEMM_CACHE_DIR="$work/cache-$t-$i" QGEMM_JIT_DUMP="$work/dump-$t-$i" \
        "$work/c4-$t" ${variants[$i]} > "$work/log-$t-$i" 2>&1 || true
}
export -f one; export work
n=${#variants[@]}
for i in $(seq 0 $((n - 1))); do
    one "$i" old &
    one "$i" new &
    wait
done
for i in $(seq 0 $((n - 1))); do
    a=$(ls "$work/dump-old-$i"/*.ptx 2>/dev/null | head -1 || true)
    b=$(ls "$work/dump-new-$i"/*.ptx 2>/dev/null | head -1 || true)
    if [ -z "$a" ] || [ -z "$b" ]; then
        r="not compiled (old: $(head -c 120 "$work/log-old-$i"); new: $(head -c 120 "$work/log-new-$i"))"
    elif cmp -s <(strip "$a") <(strip "$b"); then
        r="identical ($(strip "$b" | wc -l) lines)"
    else
        r="DIFFERENT ($( (diff <(strip "$a") <(strip "$b") || true) | grep -c '^[<>]') lines differ)"
    fi
    printf 'out %s kind %s  M %-5s N %-5s K %-5s G %s  %sx%s mc %s split_k %s: %s\n' ${variants[$i]} "$r"
done
