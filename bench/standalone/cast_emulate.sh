#!/usr/bin/env bash
# cast_emulate.sh -- run the cast kernels on the CPU (bench/standalone/cast_emulate.cpp)
# for a set of variants, each built from the JIT source qg__cast_source writes.
# No GPU needed. Usage: bench/standalone/cast_emulate.sh   (from anywhere; ~1-2 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
work="$(mktemp -d "${TMPDIR:-/tmp}/qg_cast_emu.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cat > "$work/gen.c" <<'GEN'
#include "cast_plan.h"
#include <stdio.h>
#include <string.h>
static int count; static const char *dir;
static void emit(qg_cast_problem p) {
    qg_cast_plan plan; p.in_align = 16; p.out_align = 16;
    if (qg__cast_plan(&p, 3, &plan) != QG_SUCCESS) { fprintf(stderr, "refused: %s\n", qg_last_error()); return; }
    char src[4096], path[512];
    qg__cast_source(&p, &plan, src, sizeof src);
    *strstr(src, "#include") = 0;
    snprintf(path, sizeof path, "%s/v%02d.h", dir, count++);
    FILE *f = fopen(path, "w"); fputs(src, f); fclose(f);
}
int main(int argc, char **argv) {
    dir = argv[1];
    for (int f32 = 0; f32 < 2; ++f32) for (int ue = 0; ue < 2; ++ue) {
        const int ks[] = {300, 258, 260};   /* vec 4/2, 2, 4 (bf16: 4 | 260, 2 | 258) */
        for (int i = 0; i < 3; ++i) {
            qg_cast_problem p = {.op = QG_CAST_PER_TOKEN, .in_f32 = f32, .ue8m0 = ue, .sf_mn_major = i != 1,
                                 .rows = 111, .m = 37, .groups = 3, .k = ks[i], .ld_in = ks[i], .ld_out = ks[i], .sf_ld = 40};
            emit(p);
        }
        for (int mask = 0; mask < 3; ++mask) {
            qg_cast_problem p = {.op = QG_CAST_SILU_MUL, .in_f32 = f32, .ue8m0 = ue, .sf_mn_major = mask != 0,
                                 .rows_mask = (qg_cast_rows)mask, .rows = 111, .m = 37, .groups = 3,
                                 .k = mask == 2 ? 257 : 256, .ld_in = mask == 2 ? 514 : 512, .ld_out = mask == 2 ? 257 : 256, .sf_ld = 40};
            emit(p);
        }
        qg_cast_problem b = {.op = QG_CAST_PER_BLOCK, .in_f32 = f32, .ue8m0 = ue, .groups = 2, .n = 200, .k = 300, .ld_in = 300, .ld_out = 300};
        emit(b);
        qg_cast_problem c = {.op = QG_CAST_PER_CHANNEL, .in_f32 = f32, .ue8m0 = ue, .rows = 256, .k = 301, .ld_in = 301, .ld_out = 301};
        emit(c);
    }
    for (int op = QG_CAST_SF_MN_MAJOR; op <= QG_CAST_SF_PACK_UE8M0; ++op) {
        qg_cast_problem p = {.op = (qg_cast_op)op, .m = 45, .groups = 2, .k = 7, .sf_ld = 48};
        emit(p);
    }
    for (int g = 1; g <= 5; g += 4) for (int psum = 0; psum < 2; ++psum) {
        qg_cast_problem p = {.op = QG_CAST_SF_PACK_UE8M0_KGROUPED, .m = 40, .groups = g, .k = 8, .packed_sf_k = 4,
                             .gran_k = psum ? 128 : 32, .k_alignment = 128, .psum = psum, .in_align = 16, .out_align = 16};
        emit(p);
    }
    printf("%d\n", count);
    return 0;
}
GEN
cc -std=c11 -O1 -D_GNU_SOURCE -Iinclude -Isrc -I"$CUDA_HOME/include" "$work/gen.c" src/cast_plan.c src/status.c -o "$work/gen"
cc -std=c11 -O1 -D_GNU_SOURCE -Iinclude -Isrc -I"$CUDA_HOME/include" -c src/cast_plan.c -o "$work/cast_plan.o"
cc -std=c11 -O1 -D_GNU_SOURCE -Iinclude -Isrc -I"$CUDA_HOME/include" -c src/status.c -o "$work/status.o"
n="$("$work/gen" "$work")"
fails=0
for h in "$work"/v*.h; do
    if ! g++ -std=c++17 -O1 -ffp-contract=off -w -Iinclude -Isrc -Ikernels -I"$CUDA_HOME/include" -include "$h" \
        bench/standalone/cast_emulate.cpp "$work/cast_plan.o" "$work/status.o" -o "$work/emu" 2> "$work/err"; then
        echo "BUILD FAIL $(head -1 "$h")"; head -20 "$work/err"; fails=$((fails + 1)); continue
    fi
    printf '%s: ' "$(grep -E 'QG_CAST_(IN_F32|UE8M0|SF_MN|ROW_MASK|K|VEC|GROUPS|PSUM) ' "$h" | awk '{printf "%s=%s ", substr($2, 9), $3}')"
    "$work/emu" || fails=$((fails + 1))
done
echo "cast_emulate: $n variants, $fails failed"
[ "$fails" = 0 ]
