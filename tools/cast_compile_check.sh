#!/usr/bin/env bash
# cast_compile_check.sh -- compile every variant of the cast kernels
# (kernels/qg_cast.cuh) as the JIT would, from the sources that
# src/cast_plan.c's qg__cast_source writes, with
#   nvcc -arch=sm_90a -cubin -Xptxas -v -Werror all-warnings
# and fail on any error, warning, spill or stack frame. Needs no GPU.
#
#   tools/cast_compile_check.sh [-j JOBS] [-k]     (-k: keep the work folder)
#
# nvcc (unlike NVRTC) includes the host's <stdint.h>, whose int64_t/uint64_t
# are `long` where kernels/qg_ptx.cuh typedefs `long long`; each unit renames
# those two typedefs with a macro first (both are 64-bit: nothing changes).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=2 keep=0
while [ $# -gt 0 ]; do
    case "$1" in
    -j) jobs="$2"; shift 2 ;;
    -k) keep=1; shift ;;
    *) echo "usage: $0 [-j JOBS] [-k]" >&2; exit 2 ;;
    esac
done
CUDA_HOME="${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}"
work="$(mktemp -d "${TMPDIR:-/tmp}/qg_cast_check.XXXXXX")"
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT

# The variant writer: every op, input type, scale form and access width.
cat > "$work/variants.c" <<'EOF'
#include "cast_plan.h"
#include <stdio.h>
#include <string.h>

static int count;
static const char *dir;

static void emit(qg_cast_problem p) {
    qg_cast_plan plan;
    if (p.in_align == 0) p.in_align = 16;
    if (p.out_align == 0) p.out_align = 16;
    if (qg__cast_plan(&p, 132, &plan) != QG_SUCCESS) {
        fprintf(stderr, "plan refused (%s): %s\n", qg__cast_op_name(p.op), qg_last_error());
        return;
    }
    char src[4096], path[512];
    if (qg__cast_source(&p, &plan, src, sizeof src) != QG_SUCCESS) return;
    snprintf(path, sizeof path, "%s/v%03d.cu", dir, count++);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "#define int64_t qg_int64_t\n#define uint64_t qg_uint64_t\n%s", src);
    fclose(f);
}

int main(int argc, char **argv) {
    dir = argc > 1 ? argv[1] : ".";
    const int ks[] = {7168, 7169, 7170, 7172, 128};
    for (int f32 = 0; f32 < 2; ++f32)
        for (int ue = 0; ue < 2; ++ue) {
            for (int mn = 0; mn < 2; ++mn)
                for (int i = 0; i < 5; ++i) {
                    qg_cast_problem p = {.op = QG_CAST_PER_TOKEN, .in_f32 = f32, .ue8m0 = ue,
                                         .sf_mn_major = mn, .rows = 4096, .m = 4096, .groups = 1,
                                         .k = ks[i], .ld_in = ks[i], .ld_out = ks[i], .sf_ld = 4096};
                    emit(p);
                }
            for (int mn = 0; mn < 2; ++mn)
                for (int mask = 0; mask < 3; ++mask)
                    for (int i = 0; i < 2; ++i) {
                        const int k = i ? 7169 : 2048;
                        qg_cast_problem p = {.op = QG_CAST_SILU_MUL, .in_f32 = f32, .ue8m0 = ue,
                                             .sf_mn_major = mn, .rows_mask = (qg_cast_rows)mask,
                                             .rows = 4 * 256, .m = 256, .groups = 4, .k = k,
                                             .ld_in = 2 * k, .ld_out = k, .sf_ld = 256};
                        emit(p);
                    }
            for (int i = 0; i < 2; ++i) {
                qg_cast_problem p = {.op = QG_CAST_PER_BLOCK, .in_f32 = f32, .ue8m0 = ue,
                                     .groups = 2, .n = i ? 129 : 7168, .k = i ? 7169 : 7168,
                                     .ld_in = i ? 7169 : 7168, .ld_out = i ? 7169 : 7168};
                emit(p);
                qg_cast_problem c = {.op = QG_CAST_PER_CHANNEL, .in_f32 = f32, .ue8m0 = ue,
                                     .rows = 4096, .k = i ? 7169 : 7168, .ld_in = i ? 7169 : 7168,
                                     .ld_out = i ? 7169 : 7168};
                emit(c);
            }
        }
    const int sfks[] = {56, 57, 1};
    for (int op = QG_CAST_SF_MN_MAJOR; op <= QG_CAST_SF_PACK_UE8M0; ++op)
        for (int i = 0; i < 3; ++i) {
            qg_cast_problem p = {.op = (qg_cast_op)op, .m = 4097, .groups = 2, .k = sfks[i],
                                 .sf_ld = 4100, .in_stride = {4097LL * sfks[i], sfks[i], 1}};
            emit(p);
        }
    for (int g = 1; g <= 4; g += 3)
        for (int psum = 0; psum < 2; ++psum)
            for (int gran = 32; gran <= 128; gran += 96) {
                qg_cast_problem p = {.op = QG_CAST_SF_PACK_UE8M0_KGROUPED, .m = 4096, .groups = g,
                                     .k = 64, .packed_sf_k = 20, .gran_k = gran, .k_alignment = 128,
                                     .psum = psum};
                emit(p);
            }
    printf("%d\n", count);
    return 0;
}
EOF
cc -std=c11 -O1 -Wall -Werror -D_GNU_SOURCE -Iinclude -Isrc -I"$CUDA_HOME/include" \
    "$work/variants.c" src/cast_plan.c src/status.c -o "$work/variants"
mkdir -p "$work/src"
n="$("$work/variants" "$work/src")"
echo "cast_compile_check: $n variants"

compile_one() {
    local cu="$1" log="${1%.cu}.log"
    if ! "$CUDA_HOME/bin/nvcc" -arch=sm_90a -cubin -std=c++17 -Xptxas -v -Werror all-warnings \
        -Ikernels -o "${cu%.cu}.cubin" "$cu" > "$log" 2>&1; then
        echo "FAIL $(head -1 "$cu" | tail -c +1) $(sed -n 3p "$cu"): compile error"; cat "$log"; return 1
    fi
    if grep -Eq '[1-9][0-9]* bytes (spill|stack)|[1-9][0-9]* bytes stack frame' "$log" ||
       grep -qi 'warning' "$log"; then
        echo "FAIL $cu: spill, stack frame or warning"; cat "$log"; return 1
    fi
    local regs; regs="$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$log" | head -1)"
    echo "ok   $(sed -n 's,^// qgemm cast kernel: ,,p' "$cu") $(grep -E 'QG_CAST_(IN_F32|UE8M0|SF_MN|ROW_MASK|K|N|VEC|UNROLL|GROUPS|PSUM|GRAN_K) ' "$cu" | awk '{printf "%s=%s ", substr($2, 9), $3}')regs=$regs"
}
export -f compile_one
export CUDA_HOME
if ls "$work"/src/*.cu | xargs -P "$jobs" -I{} bash -c 'compile_one {}' > "$work/report" 2>&1; then
    status=0
else
    status=1
fi
sort "$work/report"
fails="$(grep -c '^FAIL' "$work/report" || true)"
echo "cast_compile_check: $n variants, $fails failed"
[ "$status" = 0 ] && [ "$fails" = 0 ]
