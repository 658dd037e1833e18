/*
 * cast_jit_check.c -- compile cast kernels through the library's own JIT
 * (qg__jit_compile: NVRTC loaded at run time, the embedded kernel files, the
 * ptxas report parsed, spills and stack frames refused). No GPU needed.
 *   make -j2 lib
 *   cc -std=c11 -O1 -D_GNU_SOURCE -Iinclude -Isrc -I$CUDA_HOME/include bench/standalone/cast_jit_check.c \
 *      build/libqgemm.a -ldl -lpthread -lm -o /tmp/cast_jit_check
 *   QGEMM_CACHE_DIR=$(mktemp -d) /tmp/cast_jit_check
 */
#include "cast_plan.h"
#include "internal.h"

#include <stdio.h>

static int failures;

static void one(qg_jit_cache *jit, qg_cast_problem p) {
    qg_cast_plan plan;
    char src[4096];
    p.in_align = p.out_align = 16;
    qg_jit_result res;
    if (qg__cast_plan(&p, 132, &plan) != QG_SUCCESS || qg__cast_source(&p, &plan, src, sizeof src) != QG_SUCCESS ||
        qg__jit_compile(jit, src, &res) != QG_SUCCESS) {
        printf("FAIL %s: %s\n", qg__cast_op_name(p.op), qg_last_error());
        ++failures;
        return;
    }
    printf("ok   %-24s f32=%d ue8m0=%d k=%d vec=%d: %d registers, %zu-byte cubin\n", qg__cast_op_name(p.op),
           p.in_f32, p.ue8m0, p.k, plan.vec, res.info.registers, res.cubin_size);
}

int main(void) {
    qg_jit_cache *jit;
    if (qg__jit_cache_create(&jit) != QG_SUCCESS) { printf("%s\n", qg_last_error()); return 2; }
    for (int f32 = 0; f32 < 2; ++f32)
        for (int ue = 0; ue < 2; ++ue) {
            one(jit, (qg_cast_problem){.op = QG_CAST_PER_TOKEN, .in_f32 = f32, .ue8m0 = ue, .sf_mn_major = 1,
                                       .rows = 4096, .m = 4096, .groups = 1, .k = 7168, .ld_in = 7168,
                                       .ld_out = 7168, .sf_ld = 4096});
            one(jit, (qg_cast_problem){.op = QG_CAST_SILU_MUL, .in_f32 = f32, .ue8m0 = ue, .sf_mn_major = 1,
                                       .rows_mask = QG_CAST_ROWS_MASKED, .rows = 1024, .m = 256, .groups = 4,
                                       .k = 2048, .ld_in = 4096, .ld_out = 2048, .sf_ld = 256});
            one(jit, (qg_cast_problem){.op = QG_CAST_PER_BLOCK, .in_f32 = f32, .ue8m0 = ue, .groups = 1,
                                       .n = 7168, .k = 7168, .ld_in = 7168, .ld_out = 7168});
            one(jit, (qg_cast_problem){.op = QG_CAST_PER_CHANNEL, .in_f32 = f32, .ue8m0 = ue, .rows = 4096,
                                       .k = 7168, .ld_in = 7168, .ld_out = 7168});
        }
    one(jit, (qg_cast_problem){.op = QG_CAST_SF_MN_MAJOR, .m = 4096, .groups = 1, .k = 56, .sf_ld = 4096,
                               .in_stride = {4096 * 56, 56, 1}});
    one(jit, (qg_cast_problem){.op = QG_CAST_SF_PACK_UE8M0, .m = 4096, .groups = 1, .k = 56, .sf_ld = 4096,
                               .in_stride = {4096 * 56, 56, 1}});
    one(jit, (qg_cast_problem){.op = QG_CAST_SF_PACK_UE8M0_KGROUPED, .m = 4096, .groups = 8, .k = 64,
                               .packed_sf_k = 16, .gran_k = 128, .k_alignment = 128});
    qg__jit_cache_destroy(jit);
    printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
