#!/usr/bin/env bash
# PTX of BF16 kernel variants compiled by two trees (OLD, NEW: each a built
# checkout), offline through qg_bf16_compile with QGEMM_JIT_DUMP, compared
# with NVRTC's .loc/.file lines removed (as ../2026-11-28-cpu-ptx-identity
# does for the FP8 kernels). Usage: run.sh OLD_TREE NEW_TREE WORKDIR
set -euo pipefail
old=$1 new=$2 work=$3
mkdir -p "$work"
cat > "$work/b3.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qgemm.h"
/* kind m n k groups a_major b_major d_fp32 with_c: compile one variant offline */
int main(int argc, char **argv) {
    if (argc < 10) return 2;
    qg_context *ctx;
    if (qg_context_create_offline(&ctx, NULL)) { puts(qg_last_error()); return 1; }
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    int kind = atoi(argv[1]);
    a.m = atoi(argv[2]); a.n = atoi(argv[3]); a.k = atoi(argv[4]); a.num_groups = atoi(argv[5]);
    a.a_major = (qg_major)atoi(argv[6]); a.b_major = (qg_major)atoi(argv[7]);
    a.d_fp32 = atoi(argv[8]);
    a.c = atoi(argv[9]) ? (const float *)0x9000000 : NULL;
    a.lda = a.a_major ? (a.m + 7) / 8 * 8 : a.k; a.ldb = a.b_major ? a.n : a.k; a.ldd = a.ldc = a.n;
    int32_t ks[64];
    if (kind == QG_GEMM_K_GROUPED) {
        for (int g = 0; g < a.num_groups; ++g) ks[g] = a.k / a.num_groups;
        a.ks = ks;
    }
    if (kind == QG_GEMM_GROUPED_MASKED) a.expected_m = a.m / 4;
    qg_status st = qg_bf16_compile(ctx, (qg_gemm_kind)kind, &a, NULL);
    puts(st ? qg_last_error() : "ok");
    qg_context_destroy(ctx);
    return st != 0;
}
C
for t in old new; do
    d=${!t}
    cc -O1 -I"$d/include" "$work/b3.c" "$d/build/libqgemm.a" -ldl -lpthread -lm -o "$work/b3-$t"
done
variants=(
  "0 4096 7168 16384 1 0 0 0 0" "0 4096 7168 16384 1 0 1 0 0" "0 4096 7168 16384 1 1 0 0 0"
  "0 4096 7168 16384 1 1 1 0 0" "0 4096 7168 2048 1 0 0 1 0" "0 4096 7168 2048 1 0 0 1 1"
  "0 1 576 7168 1 0 0 0 0" "0 64 2112 7168 1 0 1 1 1" "0 129 264 320 1 1 1 1 0"
  "1 8192 4096 7168 4 0 0 0 0" "1 8192 4096 7168 4 0 1 0 0"
  "2 1024 4096 7168 4 0 0 0 0" "2 256 7168 2048 8 0 0 0 0"
  "3 8000 4096 7168 4 0 0 0 0" "3 8000 4096 7168 4 0 1 0 0"
  "5 4096 7168 16384 4 1 1 1 0" "5 576 448 16384 4 1 1 1 1"
)
strip() { grep -v -E '^\s*\.(loc|file)\b' "$1"; }
for i in "${!variants[@]}"; do
    for t in old new; do
        rm -rf "$work/dump-$t-$i" "$work/cache-$t-$i"
        mkdir -p "$work/dump-$t-$i"
        QGEMM_CACHE_DIR="$work/cache-$t-$i" QGEMM_JIT_DUMP="$work/dump-$t-$i" \
            "$work/b3-$t" ${variants[$i]} > "$work/log-$t-$i" 2>&1 || true
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
    printf 'kind %s  M %-5s N %-5s K %-5s G %s  majors %s%s f32 %s c %s: %s\n' ${variants[$i]} "$r"
done
