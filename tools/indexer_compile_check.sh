#!/usr/bin/env bash
# indexer_compile_check.sh -- compile every variant of the indexer / HC
# kernels offline (no GPU): the JIT sources come from src/indexer_plan.c's
# source writers, each is compiled with
#   nvcc -arch=sm_90a -cubin -std=c++17 -Xptxas -v -Ikernels
# and the check fails on any spill, stack frame, serialized wgmma or warning.
#   usage: tools/indexer_compile_check.sh [-j N] [filter-regex]
# Prints one line per variant (registers, spills, smem) and exits non-zero on
# any failure.
set -u
cd "$(dirname "$0")/.."
JOBS=2
if [ "${1:-}" = "-j" ]; then JOBS=$2; shift 2; fi
FILTER=${1:-.}
NVCC=${NVCC:-nvcc}
WORK=$(mktemp -d /tmp/qg-idx-check.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/gen.c" <<'CEOF'
#include "indexer_plan.h"
#include <stdio.h>
#include <string.h>
static char buf[65536];
static void emit(const char *dir, const char *name, int len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.cu", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || len < 0) { fprintf(stderr, "cannot write %s\n", path); return; }
    fwrite(buf, 1, (size_t)len, f);
    fclose(f);
}
int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    const char *why = "";
    /* HC prenorm: every N, the tests' K, with and without splits, and the
     * cluster sizes the planner picks for small and large M. */
    const int ns[] = {8, 16, 24, 32};
    const int ks[] = {28672, 7680, 7168, 64, 576};
    const int ms[] = {13, 137, 4096, 8192};
    const int splits[] = {1, 16};
    /* every rounding mode (QG_HC_MODE 0-3), the converter-warp counts of 1 and 2 */
    const int modes[][2] = {{0, 0}, {1, 1}, {1, 2}, {2, 1}, {2, 2}, {3, 0}};
    for (int mo = 0; mo < 6; ++mo)
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 5; ++b)
            for (int c = 0; c < 4; ++c)
                for (int s = 0; s < 2; ++s) {
                    qg_hc_plan p;
                    if (qg__hc_plan_variant(ms[c], ns[a], ks[b], splits[s], 132, 0, modes[mo][0],
                                            modes[mo][1], &p, &why)) {
                        fprintf(stderr, "hc plan: %s\n", why);
                        return 1;
                    }
                    char name[128];
                    snprintf(name, sizeof name, "hc_n%d_k%d_s%d_w%d_c%d_st%d_m%d_cw%d", p.n, p.k,
                             p.num_splits, p.math_wgs, p.cluster, p.stages, p.mode, p.cvt_warps);
                    emit(dir, name, qg__hc_source(buf, sizeof buf, &p));
                }
#ifdef QG_IDX_MQA
    const int hs[] = {32, 64};
    const int ds[] = {32, 64, 128};
    for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 3; ++d)
            for (int mode = 0; mode < 3; ++mode) /* clean, compressed, neither */
                for (int bf = 0; bf < 2; ++bf)
                    for (int v = 0; v < QG_MQA_VARIANT_COUNT; ++v) { /* every organisation */
                        qg_mqa_plan p;
                        if (qg__mqa_plan(2048, 65536, hs[h], ds[d], mode == 1, mode == 0, bf, 132,
                                         &p, &why) ||
                            qg__mqa_plan_variant(&p, v)) {
                            fprintf(stderr, "mqa plan: %s\n", why);
                            return 1;
                        }
                        char name[128];
                        snprintf(name, sizeof name, "mqa_h%d_d%d_cmp%d_cln%d_bf%d_%s_wg%d_st%d_p%d",
                                 p.heads, p.head_dim, p.compressed, p.clean, p.logits_bf16,
                                 qg__mqa_variant_name(v), p.math_wgs, p.kv_stages, p.pipe);
                        emit(dir, name, qg__mqa_source(buf, sizeof buf, &p));
                    }
#endif
#ifdef QG_IDX_PMQA
    emit(dir, "pmqa_schedule", qg__pmqa_schedule_source(buf, sizeof buf));
    for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 3; ++d)
            for (int nn = 1; nn <= 2; ++nn)
                for (int mode = 0; mode < 4 * QG_PMQA_VARIANT_COUNT; ++mode) { /* clean x bf16 x variant */
                    qg_pmqa_plan p;
                    if (qg__pmqa_plan(4096, nn, hs[h], ds[d], mode & 1, (mode >> 1) & 1, 132, &p,
                                      &why) ||
                        qg__pmqa_plan_variant(&p, mode >> 2)) {
                        fprintf(stderr, "pmqa plan: %s\n", why);
                        return 1;
                    }
                    char name[128];
                    snprintf(name, sizeof name, "pmqa_h%d_d%d_n%d_cln%d_bf%d_%s_st%d", p.heads,
                             p.head_dim, p.next_n, p.clean, p.logits_bf16,
                             qg__pmqa_variant_name(p.variant), p.stages);
                    emit(dir, name, qg__pmqa_source(buf, sizeof buf, &p));
                }
#endif
    return 0;
}
CEOF
MQA_FLAG=""
grep -q qg__mqa_source src/indexer_plan.c && MQA_FLAG=-DQG_IDX_MQA
grep -q qg__pmqa_source src/indexer_plan.c && MQA_FLAG="$MQA_FLAG -DQG_IDX_PMQA"
cc -std=c11 -O1 -Wall -Wextra -Werror $MQA_FLAG -Isrc "$WORK/gen.c" src/indexer_plan.c -o "$WORK/gen" || exit 1
mkdir -p "$WORK/src"
"$WORK/gen" "$WORK/src" || exit 1

check_one() {
    local cu=$1 name log
    name=$(basename "$cu" .cu)
    log="${cu%.cu}.log"
    # nvcc (unlike NVRTC) pre-includes the host's <stdint.h>, whose 64-bit
    # types are `long`; qg_ptx.cuh's own typedefs (for NVRTC) are `long long`.
    # Rename them for this compile only.
    { printf '#define int64_t qg_int64_t\n#define uint64_t qg_uint64_t\n'; cat "$cu"; } > "${cu%.cu}.nvcc.cu"
    if ! $NVCC -arch=sm_90a -cubin -std=c++17 -Xptxas -v -Ikernels -o "${cu%.cu}.cubin" "${cu%.cu}.nvcc.cu" >"$log" 2>&1; then
        echo "FAIL $name: compile error"; sed 's/^/    /' "$log" | head -20; return 1
    fi
    local regs spill_st spill_ld stack smem bad=""
    regs=$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$log" | head -1)
    stack=$(sed -n 's/.*\([0-9][0-9]*\) bytes stack frame.*/\1/p' "$log" | head -1)
    spill_st=$(sed -n 's/.* \([0-9][0-9]*\) bytes spill stores.*/\1/p' "$log" | head -1)
    spill_ld=$(sed -n 's/.* \([0-9][0-9]*\) bytes spill loads.*/\1/p' "$log" | head -1)
    [ "${stack:-0}" != 0 ] && bad="$bad stack=$stack"
    [ "${spill_st:-0}" != 0 ] && bad="$bad spill_stores=$spill_st"
    [ "${spill_ld:-0}" != 0 ] && bad="$bad spill_loads=$spill_ld"
    grep -qi "warning" "$log" && bad="$bad warning"
    grep -qi "serialized" "$log" && bad="$bad wgmma-serialized"
    if [ -n "$bad" ]; then
        echo "FAIL $name: regs=$regs$bad"; grep -i "warning\|serialized" "$log" | head -5 | sed 's/^/    /'; return 1
    fi
    echo "ok   $name: regs=$regs spills=0 stack=0"
}
export -f check_one
export NVCC
ls "$WORK"/src/*.cu | grep -v "\.nvcc\.cu$" | grep -E "$FILTER" | sort | uniq > "$WORK/list"
echo "indexer compile check: $(wc -l < "$WORK/list") variants, -j $JOBS"
xargs -P "$JOBS" -I{} bash -c 'check_one {}' < "$WORK/list" > "$WORK/results" 2>&1
sort "$WORK/results"
fails=$(grep -c '^FAIL' "$WORK/results")
echo "indexer compile check: $fails failed"
[ "$fails" = 0 ]
