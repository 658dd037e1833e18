#define _POSIX_C_SOURCE 200809L
/* Compiles, on an offline context from an empty kernel cache, with every A/B knob unset (the
 * defaults): 27 FP8 GEMM kernels chosen by the heuristic or forced (dense at short and long K,
 * split-K, multicast, contiguous, masked and psum at K below and above 6144, wgrad / k-grouped
 * with and without accumulation, batched, e4m3 D with float and UE8M0 scales, SwiGLU) and the 48 paged
 * MQA logits kernels the planner builds by default (next_n 1/2 x H 32/64 x D 32/64/128 x clean
 * x bf16). Run with QGEMM_JIT_DUMP=<dir> to keep each kernel's .cu and .ptx; compare.sh pairs
 * two dumps. Prints one verdict line a kernel and the failure count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qgemm.h"
#include "qgtk.h"
int main(void) {
    qgtk_compile_sweep sw;
    if (qgtk_compile_sweep_open(&sw, 0, 1) != QG_SUCCESS) { printf("FAIL: offline context\n"); return 1; }
    /* out: 0 bf16 / FP32 D, 1 e4m3 D, 2 e4m3 D UE8M0, 3 SwiGLU, 4 SwiGLU UE8M0 */
    static const struct { int kind, m, n, k, g, em, acc, out, bm, bn, mc, sk; } c[] = {
        {0, 4096, 7168, 2048, 1, 0, 0, 0, 0, 0, 0, 0},    {0, 128, 2112, 7168, 1, 0, 0, 0, 0, 0, 0, 0},
        {0, 4096, 4096, 7168, 1, 0, 0, 0, 0, 0, 0, 0},    {0, 257, 24576, 1536, 1, 0, 0, 0, 0, 0, 0, 0},
        {0, 2048, 768, 7168, 1, 0, 0, 0, 128, 128, 0, 2}, {0, 2048, 1536, 7168, 1, 0, 0, 0, 128, 128, 1, 0},
        {0, 2048, 1536, 7168, 1, 0, 0, 0, 256, 128, 2, 0},
        {1, 8192, 4096, 7168, 4, 0, 0, 0, 0, 0, 0, 0},    {1, 4000, 3072, 4096, 8, 0, 0, 0, 0, 0, 0, 0},
        {2, 1024, 4096, 7168, 8, 300, 0, 0, 0, 0, 0, 0},  {2, 256, 7168, 2048, 16, 64, 0, 0, 0, 0, 0, 0},
        {2, 1024, 3072, 4096, 4, 1000, 0, 0, 0, 0, 0, 0},
        {3, 8192, 4096, 7168, 8, 0, 0, 0, 0, 0, 0, 0},    {3, 2000, 3072, 2048, 4, 0, 0, 0, 0, 0, 0, 0},
        {4, 2048, 7168, 4096, 1, 0, 0, 0, 0, 0, 0, 0},    {4, 1536, 2112, 8192, 1, 0, 1, 0, 0, 0, 0, 0},
        {5, 4096, 7168, 4 * 2048, 4, 0, 0, 0, 0, 0, 0, 0}, {5, 1536, 4096, 4 * 4096, 4, 0, 1, 0, 0, 0, 0, 0},
        {6, 1024, 4096, 7168, 4, 0, 0, 0, 0, 0, 0, 0},
        {0, 4096, 2112, 7168, 1, 0, 0, 1, 0, 0, 0, 0},    {0, 257, 7168, 2048, 1, 0, 0, 2, 0, 0, 0, 0},
        {1, 8192, 4096, 7168, 4, 0, 0, 1, 0, 0, 0, 0},    {2, 1024, 4096, 7168, 8, 300, 0, 2, 0, 0, 0, 0},
        {3, 4000, 3072, 2048, 4, 0, 0, 1, 0, 0, 0, 0},
        {0, 4096, 4096, 7168, 1, 0, 0, 3, 0, 0, 0, 0},    {1, 8192, 4096, 7168, 4, 0, 0, 4, 0, 0, 0, 0},
        {2, 1024, 4096, 7168, 8, 300, 0, 3, 0, 0, 0, 0}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; ++i) {
        qg_problem p = {(qg_gemm_kind)c[i].kind, c[i].m, c[i].n, c[i].k, c[i].g, c[i].em, c[i].acc};
        qg_config cfg = {.block_m = c[i].bm, .block_n = c[i].bn, .multicast = (qg_multicast)c[i].mc,
                         .split_k = c[i].sk};
        const qg_config *f = c[i].bm ? &cfg : NULL;
        qg_kernel_info info;
        memset(&info, 0, sizeof info);
        qg_status st = c[i].out == 0   ? qg_compile(sw.ctx, &p, f, &info)
                       : c[i].out <= 2 ? qg_compile_fp8out(sw.ctx, &p, c[i].out - 1, f, &info)
                                       : qg_compile_swiglu(sw.ctx, &p, c[i].out - 3, f, &info);
        char what[128];
        snprintf(what, sizeof what, "fp8 kind %d %dx%dx%d groups %d out %d%s", c[i].kind, c[i].m, c[i].n,
                 c[i].k, c[i].g, c[i].out, f ? " forced" : "");
        qgtk_compile_verdict(&sw, what, st, &info, 0, 0);
    }
    unsetenv("QGEMM_PMQA_VARIANT");
    for (int nn = 1; nn <= 2; ++nn) for (int h = 32; h <= 64; h *= 2) for (int d = 32; d <= 128; d *= 2)
    for (int cl = 0; cl < 2; ++cl) for (int b = 0; b < 2; ++b) {
        qg_paged_mqa_logits_args a;
        memset(&a, 0, sizeof a);
        a.batch = 8, a.next_n = nn, a.heads = h, a.head_dim = d;
        a.q = (void *)0x1000000, a.kv_cache = (void *)0x2000000, a.num_blocks = 100;
        a.weights = (void *)0x3000000, a.ld_weights = h;
        a.context_lens = (void *)0x3100000, a.block_table = (void *)0x3200000, a.block_table_ld = 16;
        a.max_context_len = 1024, a.schedule = (void *)0x3300000;
        a.logits = (void *)0x4000000, a.ld_logits = 1024, a.clean = cl, a.logits_bf16 = b;
        qg_kernel_info info;
        memset(&info, 0, sizeof info);
        qg_status st = qg_indexer_compile(sw.ctx, QG_INDEXER_PAGED_MQA_LOGITS, &a, &info);
        char what[96];
        snprintf(what, sizeof what, "paged next_n %d H %d D %d%s %s", nn, h, d, cl ? " clean" : "",
                 b ? "bf16" : "fp32");
        qgtk_compile_verdict(&sw, what, st, &info, 0, 0);
    }
    printf("%d kernels, %d failures\n", sw.checked, sw.failures);
    int fl = sw.failures;
    qgtk_compile_sweep_close(&sw);
    return fl != 0;
}
