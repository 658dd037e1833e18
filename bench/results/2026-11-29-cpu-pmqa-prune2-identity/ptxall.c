#define _POSIX_C_SOURCE 200809L
/* Compiles, on an offline context from an empty kernel cache, every paged MQA logits kernel
 * the planner builds: the 4 organisations x next_n 1/2 x H 32/64 x D 32/64/128 x clean x bf16
 * (192); run with QGEMM_JIT_DUMP=<dir> to keep each kernel's .cu and .ptx. Prints one verdict
 * line a kernel (registers, spills) and the failure count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qgemm.h"
#include "qgtk.h"
int main(void) {
    qgtk_compile_sweep sw;
    if (qgtk_compile_sweep_open(&sw, 0, 1) != QG_SUCCESS) { printf("FAIL: offline context\n"); return 1; }
    static const char *const variants[] = {"shared2", "dual2", "split4", "split4r112w"};
    for (int vi = 0; vi < 4; ++vi) {
        setenv("QGEMM_PMQA_VARIANT", variants[vi], 1);
        for (int nn = 1; nn <= 2; ++nn) for (int h = 32; h <= 64; h *= 2) for (int d = 32; d <= 128; d *= 2)
        for (int c = 0; c < 2; ++c) for (int b = 0; b < 2; ++b) {
            qg_paged_mqa_logits_args a;
            memset(&a, 0, sizeof a);
            a.batch = 8, a.next_n = nn, a.heads = h, a.head_dim = d;
            a.q = (void *)0x1000000, a.kv_cache = (void *)0x2000000, a.num_blocks = 100;
            a.weights = (void *)0x3000000, a.ld_weights = h;
            a.context_lens = (void *)0x3100000, a.block_table = (void *)0x3200000, a.block_table_ld = 16;
            a.max_context_len = 1024, a.schedule = (void *)0x3300000;
            a.logits = (void *)0x4000000, a.ld_logits = 1024, a.clean = c, a.logits_bf16 = b;
            qg_kernel_info info;
            memset(&info, 0, sizeof info);
            qg_status st = qg_indexer_compile(sw.ctx, QG_INDEXER_PAGED_MQA_LOGITS, &a, &info);
            char what[96];
            snprintf(what, sizeof what, "%s next_n %d H %d D %d%s %s", variants[vi], nn, h, d,
                     c ? " clean" : "", b ? "bf16" : "fp32");
            qgtk_compile_verdict(&sw, what, st, &info, 0, 0);
        }
    }
    printf("%d kernels, %d failures\n", sw.checked, sw.failures);
    int f = sw.failures;
    qgtk_compile_sweep_close(&sw);
    return f != 0;
}
