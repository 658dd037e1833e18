#!/usr/bin/env bash
# PTX of FP8 kernel variants compiled by two trees (OLD, NEW: each a built
# checkout, `make build/libqgemm.a`), offline through the public API
# (qg_complete_config + qg_compile / qg_compile_fp8out / qg_compile_swiglu
# with QGEMM_JIT_DUMP), compared with NVRTC's .loc/.file lines removed.
# Method of ../2026-11-28-cpu-ptx-identity/run.sh, extended with split-K,
# e4m3 D (FP32 and UE8M0 scales) and SwiGLU variants, and the batched kind
# (6, QG_KIND 5: OLD cannot compile it; NEW's PTX must exist).
# Usage: run.sh OLD_TREE NEW_TREE WORKDIR
set -euo pipefail
old=$1 new=$2 work=$3
mkdir -p "$work"
cat > "$work/c3.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qgemm.h"
/* kind m n k groups block_m block_n multicast [out [split_k]]: compile one
 * forced variant offline; out 0 bf16 / FP32 D, 1 e4m3 D, 2 e4m3 D with
 * UE8M0 scales, 3 SwiGLU (FP32 scales) */
int main(int argc, char **argv) {
    if (argc < 9) return 2;
    qg_context *ctx;
    if (qg_context_create_offline(&ctx, NULL)) { puts(qg_last_error()); return 1; }
    qg_problem p;
    memset(&p, 0, sizeof p);
    p.kind = atoi(argv[1]); p.m = atoi(argv[2]); p.n = atoi(argv[3]); p.k = atoi(argv[4]);
    p.num_groups = atoi(argv[5]); p.accumulate = p.kind == 4 || p.kind == 5;
    const int out = argc > 9 ? atoi(argv[9]) : 0;
    qg_config c;
    memset(&c, 0, sizeof c);
    c.block_m = atoi(argv[6]); c.block_n = atoi(argv[7]); c.multicast = (qg_multicast)atoi(argv[8]);
    c.split_k = argc > 10 ? atoi(argv[10]) : 0;
    qg_status st = out == 0   ? qg_compile(ctx, &p, &c, NULL)
                   : out < 3 ? qg_compile_fp8out(ctx, &p, out - 1, &c, NULL)
                             : qg_compile_swiglu(ctx, &p, 0, &c, NULL);
    puts(st ? qg_last_error() : "ok");
    qg_context_destroy(ctx);
    return st != 0;
}
C
for t in old new; do
    d=${!t}
    cc -O1 -I"$d/include" "$work/c3.c" "$d/build/libqgemm.a" -ldl -lpthread -lm -o "$work/c3-$t"
done
variants=(
  "0 4096 7168 16384 1 128 128 0" "0 4096 7168 16384 1 128 128 1" "0 4096 7168 16384 1 128 128 2"
  "0 4096 7168 16384 1 256 128 1" "0 4096 2112 7168 1 128 192 0" "0 4096 4096 7168 1 128 256 1"
  "0 128 4096 7168 1 64 64 0" "0 64 2112 7168 1 64 32 0" "0 4096 4096 7168 1 128 112 0"
  "0 4096 4096 7168 1 128 160 0" "0 4096 4096 7168 1 128 208 0"
  "0 128 7168 2048 1 64 64 0 0 2" "0 256 4096 7168 1 128 128 0 0 2"
  "1 8192 4096 7168 8 128 192 1" "1 8192 4096 7168 8 128 128 0" "1 8192 4096 7168 8 64 128 0"
  "2 4096 4096 7168 8 256 128 1" "2 1024 4096 7168 4 128 192 1" "2 256 4096 7168 4 64 128 0"
  "2 256 512 512 8 64 128 0" "2 256 512 512 8 64 128 1"
  "3 8192 4096 7168 4 256 128 1" "3 8192 4096 7168 4 128 192 1"
  "4 7168 4096 16384 1 128 128 1" "4 7168 4096 16384 1 128 128 0" "4 2112 4096 7168 1 128 136 0"
  "4 4096 4096 7168 1 128 160 0" "4 576 4096 7168 1 64 128 0"
  "4 24576 4096 1536 1 128 136 0" "4 7168 4096 2048 1 128 136 0"
  "5 4096 7168 2048 8 128 136 0" "5 4096 7168 8192 4 128 128 0" "5 4096 7168 8192 4 128 160 0"
  "0 4096 7168 7168 1 128 128 0 1" "0 4096 7168 7168 1 128 128 1 2" "0 128 7168 7168 1 64 64 0 1"
  "1 8192 4096 7168 8 128 128 1 1" "2 256 4096 7168 4 64 128 0 2" "3 8192 4096 7168 4 128 128 0 1"
  "0 4096 4096 7168 1 128 256 0 3" "1 8192 4096 7168 8 128 256 0 3" "2 256 4096 7168 4 128 256 0 3"
  "6 64 512 512 8 64 128 0" "6 64 512 512 8 64 128 1" "6 300 200 640 4 128 128 0"
  "6 256 4096 7168 8 256 128 1" "6 1024 4096 7168 4 128 192 1"
)
strip() { grep -v -E '^\s*\.(loc|file)\b' "$1"; }
for i in "${!variants[@]}"; do
    for t in old new; do
        rm -rf "$work/dump-$t-$i" "$work/cache-$t-$i"
        mkdir -p "$work/dump-$t-$i"
        QGEMM_CACHE_DIR="$work/cache-$t-$i" QGEMM_JIT_DUMP="$work/dump-$t-$i" \
            "$work/c3-$t" ${variants[$i]} > "$work/log-$t-$i" 2>&1 || true
    done
    a=$(ls "$work/dump-old-$i"/*.ptx 2>/dev/null | head -1 || true)
    b=$(ls "$work/dump-new-$i"/*.ptx 2>/dev/null | head -1 || true)
    if [ -z "$a" ] || [ -z "$b" ]; then
        r="not compiled (old: $(head -c 120 "$work/log-old-$i"); new: $(head -c 120 "$work/log-new-$i"))"
    elif cmp -s <(strip "$a") <(strip "$b"); then
        r="identical ($(strip "$b" | wc -l) lines)"
    else
        r="DIFFERENT ($( (diff <(strip "$a") <(strip "$b") || true) | grep -c '^[<>]') lines differ)"
    fi
    printf '%-40s %s\n' "${variants[$i]}" "$r"
done
