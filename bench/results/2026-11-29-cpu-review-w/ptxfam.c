#define _POSIX_C_SOURCE 200809L
/* Compiles, on an offline context from an empty kernel cache, with every A/B knob unset (the
 * defaults), one or more kernels of each source that includes the wgmma placeholder operand list
 * (kernels/qg_wgmma_placeholder.cuh, formerly copied into each): the casts (every kind), the
 * paged schedule, MQA logits, paged MQA logits, the HC prenorm GEMM (the default mode and the
 * non-bf16-wgmma ones), the BF16 batch sum's conversion kernel; and BF16 GEMMs of
 * kernels/qg_bf16_gemm.cuh (dense, batch sum v1 / v4), whose file also changed. Run with
 * QGEMM_JIT_DUMP=<dir>; compare.sh pairs two dumps by JIT source. Prints one line a kernel. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qgemm.h"
#include "internal.h"
#include "bf16_plan.h"
#define FAKE(addr) ((void *)(uintptr_t)(addr))
static int fails;
static void verdict(const char *what, qg_status st, const qg_kernel_info *i) {
    printf("%-40s %s regs %d spills %d/%d stack %d\n", what, st ? qg_last_error() : "ok",
           st ? 0 : i->registers, st ? 0 : i->spill_store_bytes, st ? 0 : i->spill_load_bytes,
           st ? 0 : i->stack_frame_bytes);
    fails += st != QG_SUCCESS;
}
int main(void) {
    qg_context *ctx;
    if (qg_context_create_offline(&ctx, NULL) != QG_SUCCESS) return 1;
    qg_kernel_info info;
    char what[80];
    for (int kind = 1; kind <= 4; ++kind)
        for (int f32 = 0; f32 < 2; ++f32) {
            qg_cast_args a;
            memset(&a, 0, sizeof a);
            a.m = kind == 3 ? 256 : 300, a.k = 512, a.num_groups = 1;
            a.x = FAKE(0x1000000), a.ld_x = 1024, a.out = FAKE(0x3000000), a.ld_out = 512;
            a.sf = FAKE(0x5000000), a.sf_ld = 300, a.x_fp32 = f32, a.ue8m0 = f32;
            snprintf(what, sizeof what, "cast kind %d f32 %d", kind, f32);
            verdict(what, qg_cast_compile(ctx, (qg_cast_kind)kind, &a, NULL, &info), &info);
        }
    for (int kind = 5; kind <= 7; ++kind) {
        qg_sf_layout_args l;
        memset(&l, 0, sizeof l);
        l.mn = 100, l.sf_k = 7, l.num_groups = 2, l.sf = FAKE(0x1000000);
        l.sf_stride[0] = 700, l.sf_stride[1] = 7, l.sf_stride[2] = 1;
        l.out = FAKE(0x3000000), l.out_ld = 100;
        if (kind == 7) {
            l.sf_stride[0] = l.sf_stride[1] = l.sf_stride[2] = 0, l.out_ld = 0;
            l.ks = FAKE(0x5000000), l.gran_k = 128, l.k_alignment = 128, l.packed_sf_k = 4;
        }
        snprintf(what, sizeof what, "layout kind %d", kind);
        verdict(what, qg_cast_compile(ctx, (qg_cast_kind)kind, NULL, &l, &info), &info);
    }
    static const int HD[][2] = {{64, 128}, {32, 64}};
    for (int i = 0; i < 2; ++i)
        for (int bf = 0; bf < 2; ++bf) {
            qg_mqa_logits_args a;
            memset(&a, 0, sizeof a);
            a.seq_len = 100, a.seq_len_kv = 1000, a.heads = HD[i][0], a.head_dim = HD[i][1];
            a.ld_kv = a.head_dim, a.ld_weights = a.heads, a.ld_logits = 1008, a.clean = bf;
            a.logits_bf16 = bf;
            snprintf(what, sizeof what, "mqa H %d D %d bf16 %d", a.heads, a.head_dim, bf);
            verdict(what, qg_indexer_compile(ctx, QG_INDEXER_MQA_LOGITS, &a, &info), &info);
            qg_paged_mqa_logits_args p;
            memset(&p, 0, sizeof p);
            p.batch = 8, p.next_n = 2 - bf, p.heads = HD[i][0], p.head_dim = HD[i][1];
            p.num_blocks = 100, p.ld_weights = p.heads, p.block_table_ld = 16;
            p.max_context_len = 1024, p.ld_logits = 1024, p.clean = bf, p.logits_bf16 = bf;
            snprintf(what, sizeof what, "paged H %d D %d next_n %d bf16 %d", p.heads, p.head_dim,
                     p.next_n, bf);
            verdict(what, qg_indexer_compile(ctx, QG_INDEXER_PAGED_MQA_LOGITS, &p, &info), &info);
            if (i == 0) {
                snprintf(what, sizeof what, "paged schedule next_n %d", p.next_n);
                verdict(what, qg_indexer_compile(ctx, QG_INDEXER_PAGED_SCHEDULE, &p, &info), &info);
            }
        }
    static const char *const modes[] = {NULL, "inplace", "trunc", "split"};
    static const int HC[][4] = {{8192, 24, 28672, 16}, {137, 24, 7680, 1}};
    for (int mi = 0; mi < 4; ++mi)
        for (int i = 0; i < 2; ++i) {
            if (modes[mi]) setenv("QGEMM_HC_MODE", modes[mi], 1);
            else unsetenv("QGEMM_HC_MODE");
            qg_hc_prenorm_args h;
            memset(&h, 0, sizeof h);
            h.m = HC[i][0], h.n = HC[i][1], h.k = HC[i][2], h.num_splits = HC[i][3];
            h.lda = h.k, h.ldb = h.k, h.ldd = h.n;
            snprintf(what, sizeof what, "hc %s %dx%dx%d/%d", modes[mi] ? modes[mi] : "default",
                     h.m, h.n, h.k, h.num_splits);
            verdict(what, qg_indexer_compile(ctx, QG_INDEXER_HC_PRENORM, &h, &info), &info);
        }
    unsetenv("QGEMM_HC_MODE");
    /* the batch sum's conversion kernel (QGEMM_BMK_VARIANT=v4; not built offline by
     * qg_bf16_compile): its fixed source through the JIT */
    qg_jit_result res;
    qg_status st = qg__jit_compile(ctx->jit, qg__bf16_convert_source(), &res);
    verdict("bf16 batch-sum convert", st, &res.info);
    for (int i = 0; i < 3; ++i) {
        qg_bf16_gemm_args a;
        memset(&a, 0, sizeof a);
        qg_gemm_kind kind = i == 0 ? QG_GEMM_DENSE : QG_GEMM_BF16_BATCH_SUM;
        a.m = 4096, a.n = 7168, a.k = 2048, a.num_groups = 1;
        if (i) a.m = 256, a.n = 256, a.k = 256, a.num_groups = 4096, a.expected_m = 44;
        if (i == 2) setenv("QGEMM_BMK_VARIANT", "v4", 1);
        a.lda = a.k, a.ldb = a.k, a.ldd = a.n;
        snprintf(what, sizeof what, "bf16 %s%s", i ? "batch sum" : "dense", i == 2 ? " v4" : "");
        verdict(what, qg_bf16_compile(ctx, kind, &a, &info), &info);
        unsetenv("QGEMM_BMK_VARIANT");
    }
    printf("%d failures\n", fails);
    qg_context_destroy(ctx);
    return fails != 0;
}
