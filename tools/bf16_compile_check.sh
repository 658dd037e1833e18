#!/bin/sh
# bf16_compile_check.sh -- compile every BF16 GEMM variant the planner picks
# (src/bf16_plan.c) over the DeepSeek-V3 shapes, offline with NVRTC exactly as
# the library's JIT does, and fail on any compile error, warning, spill,
# stack frame or serialized wgmma. Also checks that the FP8 kernel's PTX is
# unchanged by this branch's additions to kernels/qg_ptx.cuh (against
# QG_PTX_BASE, default the merge base with main).
#
#   tools/bf16_compile_check.sh [num_sms] [smem_limit]     (default 132 232448)
#
# Environment: CUDA_HOME (default /usr/local/cuda), JOBS (parallel compiles,
# default 2), KEEP=1 keeps the work directory, QG_GEN_MERGED_ONLY=1 compiles
# only the merged-K-stage variants (QGEMM_BF16_MERGE: ~800 kernels, ~2 min on
# 2 cores; tests/bf16/compile_gen.c), QG_GEN_SPLITK_ONLY=1 only the split-K
# variants (QGEMM_BF16_SPLITK: ~340 kernels, ~2 min), QG_GEN_BMK_ONLY=1 only the
# atomic batch sums with the L2 prefetch (QGEMM_BMK_VARIANT=v5 / v6: 28 problems),
# QG_GEN_KGROUPED_ONLY=1 only the k-grouped organisations (QGEMM_BF16_KGROUPED: 94
# kernels, ~1 min).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/qg-bf16-check.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
cc=${CC:-cc}

$cc -std=c11 -O1 -Wall -Wextra -Werror -o "$work/gen" "$root/tests/bf16/compile_gen.c" \
    "$root/src/bf16_plan.c"
$cc -std=c11 -O1 -Wall -Wextra -Werror -I"$cuda/include" -o "$work/nvc" \
    "$root/tests/bf16/nvrtc_compile.c" -L"$cuda/lib64" -lnvrtc -Wl,-rpath,"$cuda/lib64"

mkdir -p "$work/src"
"$work/gen" "$work/src" "${1:-132}" "${2:-232448}"
count=$(ls "$work/src" | grep -c '\.cu$' || true)
echo "compiling $count kernels, $jobs at a time"
(cd "$work/src" && ls | grep '\.cu$' | xargs -P "$jobs" -n 16 "$work/nvc" "$root/kernels" \
    > "$work/log.txt" 2>&1) || true

# One line per kernel: file rc registers spill_stores spill_loads stack warnings
awk '
/^== / { if (f != "") print f, rc, regs, st, ld, fr, warn; f = $2; rc = "?"; regs = "?"; st = "?"; ld = "?"; fr = "?"; warn = 0; next }
/^rc=/ { rc = substr($0, 4); next }
/Used [0-9]+ registers/ { for (i = 1; i <= NF; ++i) if ($i == "Used") regs = $(i + 1) }
/bytes stack frame/ { for (i = 1; i <= NF; ++i) { if ($i == "stack") fr = $(i - 2); if ($i == "spill" && $(i + 1) == "stores,") st = $(i - 2); if ($i == "spill" && $(i + 1) == "loads") ld = $(i - 2) } }
/[Ww]arning|serialized|Performance Loss|error/ { warn++ }
END { if (f != "") print f, rc, regs, st, ld, fr, warn }
' "$work/log.txt" | sort > "$work/results.txt"

bad=$(awk '$2 != "0" || $4 != "0" || $5 != "0" || $6 != "0" || $7 != "0"' "$work/results.txt" | wc -l)
done_count=$(wc -l < "$work/results.txt")
# results joined with the variant descriptions
join "$work/results.txt" "$(sort "$work/src/list.txt" > "$work/list.sorted"; echo "$work/list.sorted")" \
    > "$work/table.txt"
echo "kernels compiled: $done_count of $count; failing (error, warning, spill or stack): $bad"
echo "registers by tile (math warps run under setmaxnreg; the entry count is the launch bound's):"
awk '{ key = "layout " $9 " kind " $11 " d_f32 " $19 " with_c " $21 " block " $23 " mc " $27;
       if (!(key in seen)) { seen[key] = 1; print "  " key ": " $3 " regs, spill " $4 "/" $5 ", stack " $6 } }' \
    "$work/table.txt" | sort | uniq | head -400
if [ "$bad" -ne 0 ]; then
    echo "FAILING KERNELS:"
    awk '$2 != "0" || $4 != "0" || $5 != "0" || $6 != "0" || $7 != "0"' "$work/table.txt"
    grep -B2 -A12 -i 'warning\|error\|serialized' "$work/log.txt" | head -80
fi

# The FP8 kernel's PTX must not change: one FP8 source compiled against the
# base's qg_ptx.cuh and against this tree's.
base=${QG_PTX_BASE:-$(git -C "$root" merge-base HEAD main 2>/dev/null || echo)}
ptx_ok=1
if [ -n "$base" ]; then
    mkdir -p "$work/base"
    for h in qg_ptx.cuh qg_scheduler.cuh qg_fp8_gemm.cuh qg_bf16_gemm.cuh; do
        git -C "$root" show "$base:kernels/$h" > "$work/base/$h" 2>/dev/null || cp "$root/kernels/$h" "$work/base/$h"
    done
    for cfg in "0 7168 7168 1 128 128 5 0 1 1 64" "1 4096 7168 8 128 192 4 1 2 16 32" "2 2112 7168 4 64 112 8 0 1 16 16"; do
        set -- $cfg
        acc=$(( $6 / 2 ))
        {
            echo "#define QG_KIND $1"; echo "#define QG_SHAPE_N $2"; echo "#define QG_SHAPE_K $3"
            echo "#define QG_NUM_GROUPS $4"; echo "#define QG_BLOCK_M $5"; echo "#define QG_BLOCK_N $6"
            echo "#define QG_NUM_STAGES $7"; echo "#define QG_MULTICAST $8"; echo "#define QG_CLUSTER $9"
            echo "#define QG_SPLIT_K 1"; echo "#define QG_SWIZZLE_GROUP ${10}"; echo "#define QG_SFB_ROWS 2"
            echo "#define QG_SMEM_BYTES QG_SMEM_TOTAL"; echo "#define QG_PRODUCER_REGS 40"
            echo "#define QG_MATH_REGS 232"; echo "#define QG_WGMMA_N $6"; echo "#define QG_ACC_SETS 1"
            echo "#define QG_KPIPE 0"; echo "#define QG_STORE_COLS ${11}"; echo "#define QG_D_ROWS 0"
            echo "#define QG_SFB_COLS 0"; echo "#define QG_D_F32 0"; echo "#define QG_D_REDUCE 0"
            echo "#define QG_WGMMA_OP_DESC_A $acc"; echo "#define QG_WGMMA_OP_DESC_B $((acc + 1))"
            echo "#define QG_WGMMA_OP_SCALE_D $((acc + 2))"; echo "#define QG_WGMMA_OP_DESC_HI $((acc + 3))"
            if [ "$8" = 1 ]; then echo "#define QG_A_BOX_ROWS $(( $5 / 2 ))"; else echo "#define QG_A_BOX_ROWS $5"; fi
            printf '#define QG_WGMMA_ACC_LIST "{'
            i=0; while [ $i -lt $acc ]; do [ $i -gt 0 ] && printf ', '; printf '%%%d' $i; i=$((i + 1)); done
            printf '}"\n#define QG_WGMMA_ACC_ARGS(d)'
            i=0; while [ $i -lt $acc ]; do [ $i -gt 0 ] && printf ','; printf ' "+f"(d[%d])' $i; i=$((i + 1)); done
            printf '\n#include "qg_fp8_gemm.cuh"\n'
        } > "$work/fp8.cu"
        "$work/nvc" "$work/base" --ptx "$work/fp8_base.ptx" "$work/fp8.cu" > "$work/fp8_base.log" 2>&1 || true
        "$work/nvc" "$root/kernels" --ptx "$work/fp8_new.ptx" "$work/fp8.cu" > "$work/fp8_new.log" 2>&1 || true
        if [ -s "$work/fp8_base.ptx" ] && cmp -s "$work/fp8_base.ptx" "$work/fp8_new.ptx"; then
            echo "FP8 PTX identical to $base (kind $1, ${5}x$6)"
        else
            echo "FP8 PTX DIFFERS from $base (kind $1, ${5}x$6)"; ptx_ok=0
            tail -n 5 "$work/fp8_base.log"; tail -n 5 "$work/fp8_new.log"
        fi
        rm -f "$work/fp8_base.ptx" "$work/fp8_new.ptx"
    done
else
    echo "no base commit: FP8 PTX identity not checked"
fi

[ "${KEEP:-0}" = 1 ] && echo "work directory kept: $work"
if [ "$bad" -ne 0 ] || [ "$done_count" -ne "$count" ] || [ "$ptx_ok" -ne 1 ]; then
    echo "bf16 compile check: FAIL"
    exit 1
fi
echo "bf16 compile check: PASS"
