/*
 * test_indexer.c -- the indexer / HC family (src/indexer.c): argument
 * validation of every entry point on an offline context, every kernel
 * variant compiled through the library (no spill, no stack frame, no
 * warning), and on a GPU: accuracy against an fp64 product of the quantized
 * inputs with DeepGEMM's metric (fresh random inputs, outputs poisoned
 * first, odd sizes, what must stay untouched still poisoned), bitwise
 * identity over repeated runs, and the paged decode step (schedule + logits)
 * captured in a CUDA graph and replayed with new context lengths, equal to
 * eager calls bitwise.
 */
#include "internal.h"
#include "gpu_ctx.h"
#include "qg_test.h"
#include "qgtk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE(x) ((void *)(uintptr_t)(x))

static qg_context *offline(void) {
    qg_context *ctx = NULL;
    return qg_context_create_offline(&ctx, NULL) == QG_SUCCESS ? ctx : NULL;
}

static qg_mqa_logits_args good_mqa(void) {
    qg_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    a.seq_len = 100, a.seq_len_kv = 1000, a.heads = 64, a.head_dim = 128;
    a.q = FAKE(0x1000000);
    a.kv = FAKE(0x2000000), a.ld_kv = 128;
    a.kv_scales = FAKE(0x3000000);
    a.weights = FAKE(0x3100000), a.ld_weights = 64;
    a.ks = FAKE(0x3200000), a.ke = FAKE(0x3300000);
    a.logits = FAKE(0x4000000), a.ld_logits = 1008;
    a.clean = 1;
    return a;
}

static qg_paged_mqa_logits_args good_paged(void) {
    qg_paged_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    a.batch = 8, a.next_n = 2, a.heads = 64, a.head_dim = 128;
    a.q = FAKE(0x1000000);
    a.kv_cache = FAKE(0x2000000), a.num_blocks = 100;
    a.weights = FAKE(0x3000000), a.ld_weights = 64;
    a.context_lens = FAKE(0x3100000);
    a.block_table = FAKE(0x3200000), a.block_table_ld = 16;
    a.max_context_len = 1024;
    a.schedule = FAKE(0x3300000);
    a.logits = FAKE(0x4000000), a.ld_logits = 1024;
    return a;
}

static qg_hc_prenorm_args good_hc(void) {
    qg_hc_prenorm_args a;
    memset(&a, 0, sizeof a);
    a.m = 100, a.n = 24, a.k = 1280, a.num_splits = 1;
    a.a = FAKE(0x1000000), a.lda = 1280;
    a.b = FAKE(0x2000000), a.ldb = 1280;
    a.d = FAKE(0x3000000), a.ldd = 24;
    a.sqr_sum = FAKE(0x4000000);
    return a;
}

/* One edit of the good arguments per case: the status and the words expected. */
#define CASE(type, good, call, edit_stmt, want_text, want_status)                                   \
    do {                                                                                            \
        type x = good();                                                                            \
        edit_stmt;                                                                                  \
        qg_status s = call(ctx, &x, NULL);                                                          \
        CHECK(s == (want_status) && strstr(qg_last_error(), want_text), "%s: %s: %s (%s)", #call,   \
              #edit_stmt, qg_status_string(s), qg_last_error());                                    \
    } while (0)

TEST(indexer_validation) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    const qg_status INV = QG_ERROR_INVALID_ARGUMENT, UNS = QG_ERROR_UNSUPPORTED;
    { /* good arguments: the offline context cannot run them */
        qg_mqa_logits_args m = good_mqa();
        qg_paged_mqa_logits_args p = good_paged();
        qg_hc_prenorm_args h = good_hc();
        qg_status s = qg_fp8_mqa_logits(ctx, &m, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "mqa: %s (%s)", qg_status_string(s), qg_last_error());
        m.clean = 0, m.max_seqlen_k = 700, m.ld_logits = 704;
        s = qg_fp8_mqa_logits(ctx, &m, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "mqa compressed: %s (%s)", qg_status_string(s), qg_last_error());
        s = qg_paged_mqa_logits_schedule(ctx, &p, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "schedule: %s (%s)", qg_status_string(s), qg_last_error());
        s = qg_fp8_paged_mqa_logits(ctx, &p, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "paged: %s (%s)", qg_status_string(s), qg_last_error());
        s = qg_tf32_hc_prenorm_gemm(ctx, &h, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "hc: %s (%s)", qg_status_string(s), qg_last_error());
        s = qg_fp8_mqa_logits(NULL, &m, NULL);
        CHECK(s == INV && strstr(qg_last_error(), "ctx is NULL"), "%s", qg_last_error());
        s = qg_fp8_mqa_logits(ctx, NULL, NULL);
        CHECK(s == INV && strstr(qg_last_error(), "args is NULL"), "%s", qg_last_error());
        s = qg_paged_mqa_logits_schedule(ctx, NULL, NULL);
        CHECK(s == INV && strstr(qg_last_error(), "args is NULL"), "%s", qg_last_error());
        s = qg_fp8_paged_mqa_logits(ctx, NULL, NULL);
        CHECK(s == INV && strstr(qg_last_error(), "args is NULL"), "%s", qg_last_error());
        s = qg_tf32_hc_prenorm_gemm(ctx, NULL, NULL);
        CHECK(s == INV && strstr(qg_last_error(), "args is NULL"), "%s", qg_last_error());
        CHECK(qg_paged_mqa_schedule_size(132) == 133 * 8, "schedule size");
        CHECK(qg_paged_mqa_schedule_size(0) == 0, "schedule size of 0");
    }
#define M(edit, text, st) CASE(qg_mqa_logits_args, good_mqa, qg_fp8_mqa_logits, edit, text, st)
    M(x.seq_len = -1, "args->seq_len must be >= 0", INV);
    M(x.seq_len_kv = 0, "args->seq_len_kv must be >= 1", INV);
    M(x.heads = 16, "args->heads must be 32 or 64", UNS);
    M(x.head_dim = 256, "args->head_dim must be 32, 64 or 128", UNS);
    M(x.clean = 2, "args->clean must be 0 or 1", INV);
    M(x.logits_bf16 = -1, "args->logits_bf16 must be 0 or 1", INV);
    M(x.max_seqlen_k = -3, "args->max_seqlen_k must be >= 0", INV);
    M(x.max_seqlen_k = 100, "args->clean must be 0", UNS);
    M(x.ld_kv = 64, "args->ld_kv must be >= head_dim", INV);
    M(x.ld_kv = 136, "args->ld_kv * 1 bytes must be a multiple of 16", INV);
    M(x.ld_weights = 63, "args->ld_weights must be >= heads", INV);
    M(x.ld_logits = 999, "args->ld_logits must be >= seq_len_kv", INV);
    M(x.ld_logits = 1002, "args->ld_logits * 4 bytes must be a multiple of 16", INV);
    M((x.logits_bf16 = 1, x.ld_logits = 1004), "args->ld_logits * 2 bytes", INV);
    M((x.clean = 0, x.max_seqlen_k = 800, x.ld_logits = 792), "args->ld_logits must be >= max_seqlen_k", INV);
    M(x.q = NULL, "q", INV);
    M(x.kv = FAKE(0x2000008), "kv", INV);
    M(x.kv_scales = FAKE(0x3000004), "kv_scales", INV);
    M(x.weights = FAKE(0x3100002), "weights", INV);
    M(x.ks = NULL, "ks", INV);
    M(x.ke = FAKE(0x3300001), "ke", INV);
    M(x.logits = FAKE(0x4000008), "logits", INV);
    M(x.logits = FAKE(0x2000000), "logits", INV); /* over kv */
    M(x.seq_len = 1 << 26, "2^25", UNS);
#undef M
#define P(edit, text, st) CASE(qg_paged_mqa_logits_args, good_paged, qg_fp8_paged_mqa_logits, edit, text, st)
#define S(edit, text, st) CASE(qg_paged_mqa_logits_args, good_paged, qg_paged_mqa_logits_schedule, edit, text, st)
    S(x.batch = -1, "args->batch must be in [0, 2^24]", INV);
    S(x.next_n = 3, "args->next_n must be 1 or 2", UNS);
    S(x.max_context_len = 0, "args->max_context_len must be in [1, 2^30]", INV);
    S(x.num_sms = -1, "args->num_sms must be 0", INV);
    S(x.num_sms = 100000, "args->num_sms must be 0", INV);
    S(x.context_lens = NULL, "context_lens", INV);
    S(x.schedule = FAKE(0x3300002), "schedule", INV);
    S(x.schedule = FAKE(0x3100000), "schedule", INV); /* over context_lens */
    { /* the schedule reads none of the logits' fields */
        qg_paged_mqa_logits_args x = good_paged();
        x.heads = 7, x.q = NULL, x.logits = NULL, x.num_blocks = 0;
        qg_status s = qg_paged_mqa_logits_schedule(ctx, &x, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "schedule with logits fields unset: %s (%s)",
              qg_status_string(s), qg_last_error());
    }
    P(x.batch = -1, "args->batch must be in [0, 2^24]", INV);
    P(x.next_n = 4, "args->next_n must be 1 or 2", UNS);
    P(x.heads = 128, "args->heads must be 32 or 64", UNS);
    P(x.head_dim = 96, "args->head_dim must be 32, 64 or 128", UNS);
    P(x.clean = 3, "args->clean must be 0 or 1", INV);
    P(x.logits_bf16 = 2, "args->logits_bf16 must be 0 or 1", INV);
    P(x.num_blocks = 0, "args->num_blocks must be >= 1", INV);
    P(x.block_stride = 64 * 132 - 16, "args->block_stride must be 0 or a multiple of 16", INV);
    P(x.block_stride = 64 * 132 + 8, "args->block_stride must be 0 or a multiple of 16", INV);
    P(x.ld_weights = 32, "args->ld_weights must be >= heads", INV);
    P(x.block_table_ld = 15, "args->block_table_ld must be >= ceil(max_context_len / 64)", INV);
    P(x.ld_logits = 1000, "args->ld_logits must be >= max_context_len", INV);
    P(x.ld_logits = 1026, "args->ld_logits * 4 bytes must be a multiple of 16", INV);
    P(x.q = FAKE(0x1000004), "q", INV);
    P(x.kv_cache = NULL, "kv_cache", INV);
    P(x.block_table = NULL, "block_table", INV);
    P(x.logits = FAKE(0x4000004), "logits", INV);
    P(x.logits = FAKE(0x3200000), "logits", INV); /* over block_table */
    P(x.num_sms = -2, "args->num_sms", INV);
#undef P
#undef S
#define H(edit, text, st) CASE(qg_hc_prenorm_args, good_hc, qg_tf32_hc_prenorm_gemm, edit, text, st)
    H(x.m = -1, "args->m must be in [0, 2^30]", INV);
    H(x.n = 40, "args->n must be 8, 16, 24 or 32", UNS);
    H(x.n = 12, "args->n must be 8, 16, 24 or 32", UNS);
    H(x.k = 100, "args->k must be a positive multiple of 64", UNS);
    H(x.k = 0, "args->k must be a positive multiple of 64", UNS);
    H(x.num_splits = -1, "args->num_splits must be in [0, 65536]", INV);
    H(x.lda = 1000, "args->lda must be >= k", INV);
    H(x.lda = 1284, "args->lda * 2 bytes must be a multiple of 16", INV);
    H(x.ldb = 1282, "args->ldb * 4 bytes must be a multiple of 16", INV);
    H(x.ldd = 16, "args->ldd must be >= n", INV);
    H(x.ldd = 25, "args->ldd must be even", INV);
    H((x.num_splits = 4, x.d_split_ld = 100), "args->d_split_ld must be 0 or an even number", INV);
    H(x.a = NULL, "a", INV);
    H(x.b = FAKE(0x2000004), "b", INV);
    H(x.d = FAKE(0x3000004), "d", INV);
    H(x.sqr_sum = FAKE(0x4000002), "sqr_sum", INV);
    H(x.d = FAKE(0x1000000), "d", INV);                 /* over a */
    H(x.sqr_sum = FAKE(0x3000000), "sqr_sum", INV);     /* over d */
#undef H
    { /* empty problems need no pointers and succeed... offline they still say offline */
        qg_hc_prenorm_args h = good_hc();
        h.m = 0, h.a = NULL, h.d = NULL, h.sqr_sum = NULL;
        qg_status s = qg_tf32_hc_prenorm_gemm(ctx, &h, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "hc m = 0: %s (%s)", qg_status_string(s), qg_last_error());
        qg_mqa_logits_args m = good_mqa();
        m.seq_len = 0, m.q = NULL, m.logits = NULL;
        s = qg_fp8_mqa_logits(ctx, &m, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "mqa seq_len = 0: %s (%s)", qg_status_string(s),
              qg_last_error());
    }
    { /* QGEMM_HC_MODE: the names (and converter warps) pass the checks; any
       * other value fails the call, naming the variable */
        qg_hc_prenorm_args h = good_hc();
        static const char *const good[] = {"inplace", "rounder", "rounder:3", "split", "split:1",
                                           "trunc"};
        for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
            setenv("QGEMM_HC_MODE", good[i], 1);
            qg_status s = qg_tf32_hc_prenorm_gemm(ctx, &h, NULL);
            CHECK(s == QG_ERROR_NO_DEVICE, "QGEMM_HC_MODE=%s: %s (%s)", good[i],
                  qg_status_string(s), qg_last_error());
        }
        static const char *const bad[] = {"fast", "split:4", "split:0", "inplace:2", "trunc:1",
                                          "rounder:", "splitx"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
            setenv("QGEMM_HC_MODE", bad[i], 1);
            qg_status s = qg_tf32_hc_prenorm_gemm(ctx, &h, NULL);
            CHECK(s == INV && strstr(qg_last_error(), "QGEMM_HC_MODE") &&
                      strstr(qg_last_error(), bad[i]),
                  "QGEMM_HC_MODE=%s: %s (%s)", bad[i], qg_status_string(s), qg_last_error());
        }
        unsetenv("QGEMM_HC_MODE");
    }
    { /* qg_indexer_compile: a bad kind, bad shapes */
        qg_hc_prenorm_args h = good_hc();
        qg_status s = qg_indexer_compile(ctx, (qg_indexer_kind)9, &h, NULL);
        CHECK(s == INV && strstr(qg_last_error(), "kind must be"), "%s", qg_last_error());
        h.n = 40;
        s = qg_indexer_compile(ctx, QG_INDEXER_HC_PRENORM, &h, NULL);
        CHECK(s == UNS && strstr(qg_last_error(), "args->n"), "%s", qg_last_error());
        qg_mqa_logits_args m = good_mqa();
        m.heads = 8;
        s = qg_indexer_compile(ctx, QG_INDEXER_MQA_LOGITS, &m, NULL);
        CHECK(s == UNS && strstr(qg_last_error(), "args->heads"), "%s", qg_last_error());
        s = qg_indexer_compile(ctx, QG_INDEXER_MQA_LOGITS, NULL, NULL);
        CHECK(s == INV && strstr(qg_last_error(), "args is NULL"), "%s", qg_last_error());
    }
    qg_context_destroy(ctx);
    PASS();
}

/* ---- every variant compiled through the library ------------------------------------ */

typedef struct {
    qg_indexer_kind kind;
    qg_mqa_logits_args mqa;
    qg_paged_mqa_logits_args paged;
    qg_hc_prenorm_args hc;
    char what[96];
} idx_variant;

static int idx_variants(idx_variant *v) {
    int count = 0;
    static const int Hs[] = {32, 64}, Ds[] = {32, 64, 128};
    for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 3; ++d)
            for (int mode = 0; mode < 3; ++mode) /* plain, clean, compressed */
                for (int bf = 0; bf < 2; ++bf) {
                    idx_variant *x = &v[count++];
                    memset(x, 0, sizeof *x);
                    x->kind = QG_INDEXER_MQA_LOGITS;
                    x->mqa = good_mqa();
                    x->mqa.heads = Hs[h], x->mqa.head_dim = Ds[d], x->mqa.ld_kv = Ds[d];
                    x->mqa.ld_weights = Hs[h];
                    x->mqa.clean = mode == 1, x->mqa.max_seqlen_k = mode == 2 ? 512 : 0;
                    x->mqa.logits_bf16 = bf;
                    snprintf(x->what, sizeof x->what, "mqa H %d D %d %s %s", Hs[h], Ds[d],
                             mode == 0 ? "plain" : mode == 1 ? "clean" : "compressed",
                             bf ? "bf16" : "fp32");
                }
    for (int nn = 1; nn <= 2; ++nn)
        for (int h = 0; h < 2; ++h)
            for (int d = 0; d < 3; ++d)
                for (int mode = 0; mode < 4; ++mode) { /* clean x bf16 */
                    idx_variant *x = &v[count++];
                    memset(x, 0, sizeof *x);
                    x->kind = QG_INDEXER_PAGED_MQA_LOGITS;
                    x->paged = good_paged();
                    x->paged.next_n = nn, x->paged.heads = Hs[h], x->paged.head_dim = Ds[d];
                    x->paged.ld_weights = Hs[h];
                    x->paged.clean = mode & 1, x->paged.logits_bf16 = mode >> 1;
                    snprintf(x->what, sizeof x->what, "paged next_n %d H %d D %d%s %s", nn, Hs[h],
                             Ds[d], mode & 1 ? " clean" : "", mode >> 1 ? "bf16" : "fp32");
                }
    {
        idx_variant *x = &v[count++];
        memset(x, 0, sizeof *x);
        x->kind = QG_INDEXER_PAGED_SCHEDULE;
        x->paged = good_paged();
        snprintf(x->what, sizeof x->what, "paged schedule");
    }
    /* HC: DeepGEMM's test shapes (m up to 8192, n 24 / 32, k 7168 / 28672,
     * splits 1 / 16) and odd ones: every (math warpgroups, cluster, stages) the
     * planner reaches for them */
    static const int HC[][4] = {{1, 24, 7168, 1},     {13, 32, 7168, 16},  {1024, 24, 28672, 1},
                                {8192, 24, 28672, 1}, {8192, 32, 7168, 16}, {4096, 8, 640, 3},
                                {77, 16, 64, 1},      {3000, 24, 28672, 16}, {200, 32, 1024, 4}};
    for (size_t i = 0; i < sizeof HC / sizeof HC[0]; ++i) {
        idx_variant *x = &v[count++];
        memset(x, 0, sizeof *x);
        x->kind = QG_INDEXER_HC_PRENORM;
        x->hc = good_hc();
        x->hc.m = HC[i][0], x->hc.n = HC[i][1], x->hc.k = HC[i][2], x->hc.num_splits = HC[i][3];
        x->hc.lda = x->hc.k, x->hc.ldb = x->hc.k, x->hc.ldd = x->hc.n;
        snprintf(x->what, sizeof x->what, "hc %dx%dx%d splits %d", HC[i][0], HC[i][1], HC[i][2],
                 HC[i][3]);
    }
    return count;
}

TEST(indexer_compile_every_variant) {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/qgemm-test-cache-XXXXXX");
    CHECK(mkdtemp(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    static idx_variant v[128];
    const int count = idx_variants(v);
    int failures = 0;
    unsigned warnings_seen = qg__jit_warnings(NULL, 0);
    for (int i = 0; i < count; ++i) {
        const void *args = v[i].kind == QG_INDEXER_MQA_LOGITS   ? (const void *)&v[i].mqa
                           : v[i].kind == QG_INDEXER_HC_PRENORM ? (const void *)&v[i].hc
                                                                : (const void *)&v[i].paged;
        qg_kernel_info info;
        memset(&info, 0, sizeof info);
        qg_status st = qg_indexer_compile(ctx, v[i].kind, args, &info);
        char first[512];
        const unsigned warnings = qg__jit_warnings(first, sizeof first);
        const bool tma = v[i].kind != QG_INDEXER_PAGED_SCHEDULE;
        const bool ok = st == QG_SUCCESS && info.spill_store_bytes == 0 &&
                        info.spill_load_bytes == 0 && info.stack_frame_bytes == 0 &&
                        info.registers > 0 && (!tma || (info.ptx_has_wgmma && info.ptx_has_tma_load)) &&
                        warnings == warnings_seen;
        if (!ok) {
            failures++;
            printf("    %s: %s %s regs %d spills %d/%d stack %d wgmma %d tma %d%s%s\n", v[i].what,
                   qg_status_string(st), st ? qg_last_error() : "", info.registers,
                   info.spill_store_bytes, info.spill_load_bytes, info.stack_frame_bytes,
                   info.ptx_has_wgmma, info.ptx_has_tma_load,
                   warnings != warnings_seen ? "; warning: " : "",
                   warnings != warnings_seen ? first : "");
            warnings_seen = warnings;
        }
        if ((i + 1) % 16 == 0) {
            printf("    ... %d of %d variants\n", i + 1, count);
            fflush(stdout);
        }
    }
    printf("    %d indexer / HC variants, %d failures\n", count, failures);
    CHECK(failures == 0, "%d variants failed", failures);
    qg_context_destroy(ctx);
    qgtk_remove_tree(dir);
    PASS();
}

/* Every HC rounding scheme (QGEMM_HC_MODE) on the shapes whose plans
 * differ most (DeepGEMM's headline, its split form, every N, short K, 1 and
 * 2 math warpgroups, clusters): compiled offline, no spill, no stack, no
 * warning, wgmma and TMA in the PTX; registers printed for each. */
TEST(hc_compile_every_mode) {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/qgemm-test-cache-XXXXXX");
    CHECK(mkdtemp(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    static const char *const modes[] = {"inplace", "rounder", "rounder:2", "split", "split:2",
                                        "split:3", "trunc"};
    static const int HC[][4] = {{8192, 24, 28672, 1}, {8192, 24, 28672, 16}, {13, 32, 7168, 16},
                                {137, 24, 7680, 1},   {4096, 8, 640, 3},     {77, 16, 64, 1}};
    int failures = 0, count = 0;
    unsigned warnings_seen = qg__jit_warnings(NULL, 0);
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; ++mi) {
        setenv("QGEMM_HC_MODE", modes[mi], 1);
        for (size_t i = 0; i < sizeof HC / sizeof HC[0]; ++i) {
            qg_hc_prenorm_args h = good_hc();
            h.m = HC[i][0], h.n = HC[i][1], h.k = HC[i][2], h.num_splits = HC[i][3];
            h.lda = h.k, h.ldb = h.k, h.ldd = h.n;
            qg_kernel_info info;
            memset(&info, 0, sizeof info);
            qg_status st = qg_indexer_compile(ctx, QG_INDEXER_HC_PRENORM, &h, &info);
            char first[512];
            const unsigned warnings = qg__jit_warnings(first, sizeof first);
            const bool ok = st == QG_SUCCESS && info.spill_store_bytes == 0 &&
                            info.spill_load_bytes == 0 && info.stack_frame_bytes == 0 &&
                            info.registers > 0 && info.ptx_has_wgmma && info.ptx_has_tma_load &&
                            warnings == warnings_seen;
            printf("    %s hc %s %dx%dx%d splits %d: %s regs %d spills %d/%d stack %d%s%s\n",
                   ok ? "ok  " : "FAIL", modes[mi], h.m, h.n, h.k, h.num_splits,
                   qg_status_string(st), info.registers, info.spill_store_bytes,
                   info.spill_load_bytes, info.stack_frame_bytes,
                   warnings != warnings_seen ? "; warning: " : "",
                   warnings != warnings_seen ? first : "");
            fflush(stdout);
            warnings_seen = warnings;
            failures += !ok;
            ++count;
        }
    }
    unsetenv("QGEMM_HC_MODE");
    printf("    %d HC mode variants, %d failures\n", count, failures);
    CHECK(failures == 0, "%d variants failed", failures);
    qg_context_destroy(ctx);
    qgtk_remove_tree(dir);
    PASS();
}

/* ---- on the GPU ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static void rng_seed(uint64_t s) { rng_state = s * 0x9E3779B97F4A7C15ull + 1; }
static uint64_t rng_u64(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double rng_unit(void) { return (rng_u64() >> 11) * (1.0 / 9007199254740992.0); }
static float rng_normal(void) {
    const double u = rng_unit() + 1e-12, w = rng_unit();
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * w));
}

static float bf16_round(float x) { return qg_bf16_decode(qg_bf16_encode(x)); }

/* An FP8 row of d values as DeepGEMM's per-row cast makes it: codes and the
 * scale amax / 448. */
static float fp8_row(uint8_t *codes, int d) {
    float v[128], amax = 0;
    for (int i = 0; i < d; ++i) {
        v[i] = bf16_round(rng_normal());
        amax = fmaxf(amax, fabsf(v[i]));
    }
    const float sc = fmaxf(amax, 1e-4f) / 448.0f;
    for (int i = 0; i < d; ++i) codes[i] = qg_fp8_e4m3_encode(v[i] / sc);
    return sc;
}

static double e4m3_table[256];

static double logit_ref(const uint8_t *q, const uint8_t *kv, double kv_scale, const float *w,
                        int heads, int d) {
    if (e4m3_table[0x38] == 0) /* 0x38 is 1.0 */
        for (int v = 0; v < 256; ++v) e4m3_table[v] = qg_fp8_e4m3_decode((uint8_t)v);
    double sum = 0;
    for (int h = 0; h < heads; ++h) {
        double dot = 0;
        for (int i = 0; i < d; ++i) dot += e4m3_table[q[(size_t)h * d + i]] * e4m3_table[kv[i]];
        if (dot > 0) sum += dot * w[h];
    }
    return sum * kv_scale;
}

static double read_logit(const void *buf, size_t idx, int bf16) {
    if (bf16) return qg_bf16_decode(((const uint16_t *)buf)[idx]);
    return ((const float *)buf)[idx];
}

static bool is_poison(const void *buf, size_t idx, int bf16) {
    if (bf16) return ((const uint16_t *)buf)[idx] == 0xFFFFu;
    return ((const uint32_t *)buf)[idx] == 0xFFFFFFFFu;
}

typedef struct {
    const qg_driver *drv;
    CUdeviceptr ptr[12];
    int n;
} dev_mem;

static CUdeviceptr dalloc(dev_mem *m, size_t bytes) {
    CUdeviceptr p = 0;
    if (m->drv->cuMemAlloc(&p, bytes ? bytes : 16) != CUDA_SUCCESS) return 0;
    m->ptr[m->n++] = p;
    return p;
}

static void dfree(dev_mem *m) {
    for (int i = 0; i < m->n; ++i) m->drv->cuMemFree(m->ptr[i]);
    m->n = 0;
}

#define DP(x) ((void *)(uintptr_t)(x))

typedef struct {
    int seq_len, seq_len_kv, heads, head_dim, bf16, mode; /* mode 0 plain, 1 clean, 2 compressed */
} mqa_case;

static bool run_mqa_case(qg_context *ctx, CUstream stream, const mqa_case *c, char *why, size_t wl,
                         double *diff_out) {
    const qg_driver *drv;
    qg__context_cuda(ctx, &drv, NULL, NULL);
    const int S = c->seq_len, SK = c->seq_len_kv, H = c->heads, D = c->head_dim;
    const int esz = c->bf16 ? 2 : 4;
    const int64_t ld_w = S % 2 ? H + 3 : H; /* odd cases: padded weight rows */
    uint8_t *q = malloc((size_t)S * H * D), *kv = malloc((size_t)SK * D);
    float *sc = malloc((size_t)SK * 4), *w = malloc((size_t)S * ld_w * 4);
    int32_t *ks = malloc((size_t)S * 4), *ke = malloc((size_t)S * 4);
    for (size_t i = 0; i < (size_t)S * H * D; ++i) q[i] = qg_fp8_e4m3_encode(bf16_round(rng_normal()));
    for (int j = 0; j < SK; ++j) sc[j] = fp8_row(kv + (size_t)j * D, D);
    for (size_t i = 0; i < (size_t)S * ld_w; ++i) w[i] = rng_normal();
    int max_len = 0;
    for (int i = 0; i < S; ++i) {
        int a = (int)(rng_u64() % (uint64_t)(SK + 1)), b = (int)(rng_u64() % (uint64_t)(SK + 1));
        if (a > b) { const int t = a; a = b; b = t; }
        if (rng_u64() % 8 == 0) b = a;                                   /* empty */
        if (c->mode != 2 && rng_u64() % 8 == 0) b = SK + 5;              /* past the end */
        ks[i] = a, ke[i] = b;
        if (b - a > max_len) max_len = b - a;
    }
    if (max_len == 0) max_len = 1;
    const int cols = c->mode == 2 ? max_len : SK;
    const int64_t ld = ((int64_t)cols + 8 + 15) / 16 * 16;
    const size_t out_elems = (size_t)(S + 1) * ld, out_bytes = out_elems * esz;
    void *got = malloc(out_bytes), *first = malloc(out_bytes);
    dev_mem m = {drv, {0}, 0};
    CUdeviceptr dq = dalloc(&m, (size_t)S * H * D), dkv = dalloc(&m, (size_t)SK * D),
                dsc = dalloc(&m, (size_t)SK * 4), dw = dalloc(&m, (size_t)S * ld_w * 4),
                dks = dalloc(&m, (size_t)S * 4), dke = dalloc(&m, (size_t)S * 4),
                dout = dalloc(&m, out_bytes);
    bool ok = false;
    if (!dq || !dkv || !dsc || !dw || !dks || !dke || !dout) {
        snprintf(why, wl, "cuMemAlloc failed");
        goto done;
    }
    drv->cuMemcpyHtoD(dq, q, (size_t)S * H * D);
    drv->cuMemcpyHtoD(dkv, kv, (size_t)SK * D);
    drv->cuMemcpyHtoD(dsc, sc, (size_t)SK * 4);
    drv->cuMemcpyHtoD(dw, w, (size_t)S * ld_w * 4);
    drv->cuMemcpyHtoD(dks, ks, (size_t)S * 4);
    drv->cuMemcpyHtoD(dke, ke, (size_t)S * 4);
    qg_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    a.seq_len = S, a.seq_len_kv = SK, a.heads = H, a.head_dim = D;
    a.q = DP(dq), a.kv = DP(dkv), a.ld_kv = D, a.kv_scales = DP(dsc);
    a.weights = DP(dw), a.ld_weights = ld_w, a.ks = DP(dks), a.ke = DP(dke);
    a.logits = DP(dout), a.ld_logits = ld, a.logits_bf16 = c->bf16;
    a.clean = c->mode == 1, a.max_seqlen_k = c->mode == 2 ? max_len : 0;
    for (int rep = 0; rep < 4; ++rep) {
        drv->cuMemsetD8Async(dout, 0xFF, out_bytes, stream);
        qg_status st = qg_fp8_mqa_logits(ctx, &a, stream);
        if (st != QG_SUCCESS) {
            snprintf(why, wl, "run %d: %s", rep, qg_last_error());
            goto done;
        }
        if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "run %d: the kernel faulted", rep);
            goto done;
        }
        drv->cuMemcpyDtoH(rep ? got : first, dout, out_bytes);
        if (rep && memcmp(got, first, out_bytes)) {
            snprintf(why, wl, "run %d differs bitwise from the first", rep);
            goto done;
        }
    }
    qgtk_diff_acc acc;
    memset(&acc, 0, sizeof acc);
    for (int i = 0; i < S; ++i) {
        const int lo = ks[i] < 0 ? 0 : ks[i] > SK ? SK : ks[i];
        const int hi = ke[i] < 0 ? 0 : ke[i] > SK ? SK : ke[i];
        for (int64_t col = 0; col < ld; ++col) {
            const size_t idx = (size_t)i * ld + col;
            /* the key this column holds, or -1 past the row's defined part */
            const int j = c->mode == 2 ? (col < hi - lo ? lo + (int)col : -1)
                                       : (col < SK ? (int)col : -1);
            const bool in = j >= lo && j < hi && j >= 0;
            if (col >= cols || (c->mode == 2 && !in)) {
                if (!is_poison(first, idx, c->bf16)) {
                    snprintf(why, wl, "row %d column %lld written (must stay untouched)", i,
                             (long long)col);
                    goto done;
                }
                continue;
            }
            const double y = read_logit(first, idx, c->bf16);
            if (!in) {
                /* plain: the q block's key range is computed whole, so a key
                 * outside the row's range may hold any value (DeepGEMM's
                 * contract: undefined there) */
                if (c->mode == 0) continue;
                if (!(isinf(y) && y < 0)) {
                    snprintf(why, wl, "row %d column %lld outside [%d, %d): %g", i, (long long)col,
                             ks[i], ke[i], y);
                    goto done;
                }
                continue;
            }
            const double x = logit_ref(q + (size_t)i * H * D, kv + (size_t)j * D, sc[j],
                                       w + (size_t)i * ld_w, H, D);
            if (isnan(y) || isinf(y)) {
                snprintf(why, wl, "row %d key %d: %g (want %g)", i, j, y, x);
                goto done;
            }
            qgtk_diff_add(&acc, &x, &y, 1);
        }
    }
    for (int64_t col = 0; col < ld; ++col)
        if (!is_poison(first, (size_t)S * ld + col, c->bf16)) {
            snprintf(why, wl, "the guard row past the last was written");
            goto done;
        }
    *diff_out = qgtk_diff_result(&acc);
    ok = *diff_out < (c->bf16 ? 3e-5 : 5e-6);
    if (!ok) snprintf(why, wl, "diff %.3g", *diff_out);
done:
    dfree(&m);
    free(q), free(kv), free(sc), free(w), free(ks), free(ke), free(got), free(first);
    return ok;
}

TEST(gpu_mqa_logits) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    static const mqa_case cases[] = {
        {37, 300, 32, 64, 0, 1},   {128, 1000, 64, 128, 1, 0}, {5, 77, 32, 32, 0, 2},
        {256, 2048, 64, 32, 1, 1}, {3, 129, 64, 64, 1, 2},     {1, 1, 32, 128, 0, 1},
        {300, 513, 64, 128, 0, 2}, {64, 2048, 32, 128, 1, 1},  {99, 257, 64, 64, 0, 0}};
    int failures = 0;
    rng_seed(50);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char why[256] = "";
        double diff = NAN;
        const mqa_case *c = &cases[i];
        const bool ok = run_mqa_case(ctx, stream, c, why, sizeof why, &diff);
        printf("    %s mqa sq %d skv %d H %d D %d %s %s: diff %.2g %s\n", ok ? "ok  " : "FAIL",
               c->seq_len, c->seq_len_kv, c->heads, c->head_dim, c->bf16 ? "bf16" : "fp32",
               c->mode == 0 ? "plain" : c->mode == 1 ? "clean" : "compressed", diff, ok ? "" : why);
        failures += !ok;
    }
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d MQA cases failed", failures);
    PASS();
}

typedef struct {
    int batch, next_n, heads, head_dim, bf16, clean, avg_len;
} paged_case;

/* Context lengths as DeepGEMM's test draws them (2-D: the last token's the
 * row's, the others below it), some rows 0..2; each <= max_len. */
static void draw_lens(int32_t *lens, const paged_case *c, int max_len) {
    for (int b = 0; b < c->batch; ++b) {
        const int lo = (int)(0.7 * c->avg_len), hi = (int)(1.3 * c->avg_len) + 1;
        int len = lo + (int)(rng_u64() % (uint64_t)(hi - lo));
        if (rng_u64() % 5 == 0) len = (int)(rng_u64() % 3);
        if (len > max_len) len = max_len;
        for (int t = 0; t < c->next_n; ++t)
            lens[b * c->next_n + t] = t == c->next_n - 1 ? len : (int)((len + 1) * rng_unit());
    }
}

static bool check_paged(const paged_case *c, const void *out, int64_t ld, int max_len,
                        const uint8_t *q, const uint8_t *cache, int64_t stride, const float *w,
                        int64_t ld_w, const int32_t *lens, const int32_t *bt, int64_t bt_ld,
                        char *why, size_t wl, double *diff_out) {
    const int H = c->heads, D = c->head_dim, rows = c->batch * c->next_n;
    qgtk_diff_acc acc;
    memset(&acc, 0, sizeof acc);
    for (int r = 0; r < rows; ++r) {
        const int b = r / c->next_n;
        const int len = lens[r] < 0 ? 0 : lens[r] > max_len ? max_len : lens[r];
        for (int64_t j = 0; j < ld; ++j) {
            const size_t idx = (size_t)r * ld + j;
            if (j >= max_len) {
                if (!is_poison(out, idx, c->bf16)) {
                    snprintf(why, wl, "row %d column %lld past max_context_len written", r, (long long)j);
                    return false;
                }
                continue;
            }
            const double y = read_logit(out, idx, c->bf16);
            if (j >= len) {
                if (c->clean ? !(isinf(y) && y < 0) : !(is_poison(out, idx, c->bf16) || (isinf(y) && y < 0))) {
                    snprintf(why, wl, "row %d column %lld past its length %d: %g", r, (long long)j, len, y);
                    return false;
                }
                continue;
            }
            const uint8_t *blk = cache + (size_t)bt[(size_t)b * bt_ld + j / 64] * (size_t)stride;
            float s;
            memcpy(&s, blk + 64 * D + (j % 64) * 4, 4);
            const double x = logit_ref(q + (size_t)r * H * D, blk + (j % 64) * D, s,
                                       w + (size_t)r * ld_w, H, D);
            if (isnan(y) || isinf(y)) {
                snprintf(why, wl, "row %d key %lld: %g (want %g)", r, (long long)j, y, x);
                return false;
            }
            qgtk_diff_add(&acc, &x, &y, 1);
        }
    }
    for (int64_t j = 0; j < ld; ++j)
        if (!is_poison(out, (size_t)rows * ld + j, c->bf16)) {
            snprintf(why, wl, "the guard row past the last was written");
            return false;
        }
    *diff_out = qgtk_diff_result(&acc);
    if (*diff_out >= (c->bf16 ? 3e-5 : 5e-6)) {
        snprintf(why, wl, "diff %.3g", *diff_out);
        return false;
    }
    return true;
}

static bool run_paged_case(qg_context *ctx, CUstream stream, const paged_case *c, bool graph,
                           char *why, size_t wl, double *diff_out) {
    const qg_driver *drv;
    qg__context_cuda(ctx, &drv, NULL, NULL);
    const int B = c->batch, NN = c->next_n, H = c->heads, D = c->head_dim, rows = B * NN;
    const int esz = c->bf16 ? 2 : 4;
    const int max_blocks = (int)(((int64_t)c->avg_len * 13 / 10 + 2 + 63) / 64);
    const int max_len = max_blocks * 64;
    const int64_t bt_ld = max_blocks + 1, stride = 64 * (D + 4) + 16 * (D == 32);
    const int num_blocks = B * max_blocks + 3;
    const int64_t ld_w = B % 2 ? H + 1 : H;
    const int64_t ld = ((int64_t)max_len + 8 + 15) / 16 * 16;
    const size_t out_bytes = (size_t)(rows + 1) * ld * esz;
    const int sms = qg_context_get_num_sms(ctx);
    uint8_t *q = malloc((size_t)rows * H * D), *cache = calloc((size_t)num_blocks, (size_t)stride);
    float *w = malloc((size_t)rows * ld_w * 4);
    int32_t *lens = malloc((size_t)rows * 4), *lens2 = malloc((size_t)rows * 4);
    int32_t *bt = malloc((size_t)B * bt_ld * 4);
    void *first = malloc(out_bytes), *got = malloc(out_bytes);
    for (size_t i = 0; i < (size_t)rows * H * D; ++i) q[i] = qg_fp8_e4m3_encode(bf16_round(rng_normal()));
    for (int p = 0; p < num_blocks; ++p)
        for (int r = 0; r < 64; ++r) {
            uint8_t *blk = cache + (size_t)p * stride;
            const float s = fp8_row(blk + r * D, D);
            memcpy(blk + 64 * D + r * 4, &s, 4);
        }
    for (size_t i = 0; i < (size_t)rows * ld_w; ++i) w[i] = rng_normal();
    { /* the block table: a random permutation of the blocks */
        int32_t *perm = malloc((size_t)num_blocks * 4);
        for (int i = 0; i < num_blocks; ++i) perm[i] = i;
        for (int i = num_blocks - 1; i > 0; --i) {
            const int k = (int)(rng_u64() % (uint64_t)(i + 1));
            const int32_t t = perm[i];
            perm[i] = perm[k], perm[k] = t;
        }
        for (int b = 0; b < B; ++b)
            for (int64_t x = 0; x < bt_ld; ++x)
                bt[(size_t)b * bt_ld + x] = x < max_blocks ? perm[b * max_blocks + x] : -1;
        free(perm);
    }
    draw_lens(lens, c, max_len);
    draw_lens(lens2, c, max_len);
    dev_mem m = {drv, {0}, 0};
    CUdeviceptr dq = dalloc(&m, (size_t)rows * H * D), dc = dalloc(&m, (size_t)num_blocks * stride),
                dw = dalloc(&m, (size_t)rows * ld_w * 4), dl = dalloc(&m, (size_t)rows * 4),
                dbt = dalloc(&m, (size_t)B * bt_ld * 4),
                ds = dalloc(&m, qg_paged_mqa_schedule_size(sms)), dout = dalloc(&m, out_bytes);
    CUgraph g = NULL;
    CUgraphExec ge = NULL;
    bool ok = false;
    if (!dq || !dc || !dw || !dl || !dbt || !ds || !dout) {
        snprintf(why, wl, "cuMemAlloc failed");
        goto done;
    }
    drv->cuMemcpyHtoD(dq, q, (size_t)rows * H * D);
    drv->cuMemcpyHtoD(dc, cache, (size_t)num_blocks * stride);
    drv->cuMemcpyHtoD(dw, w, (size_t)rows * ld_w * 4);
    drv->cuMemcpyHtoD(dl, lens, (size_t)rows * 4);
    drv->cuMemcpyHtoD(dbt, bt, (size_t)B * bt_ld * 4);
    qg_paged_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    a.batch = B, a.next_n = NN, a.heads = H, a.head_dim = D;
    a.q = DP(dq), a.kv_cache = DP(dc), a.num_blocks = num_blocks, a.block_stride = stride;
    a.weights = DP(dw), a.ld_weights = ld_w, a.context_lens = DP(dl);
    a.block_table = DP(dbt), a.block_table_ld = bt_ld, a.max_context_len = max_len;
    a.schedule = DP(ds), a.logits = DP(dout), a.ld_logits = ld;
    a.logits_bf16 = c->bf16, a.clean = c->clean;
    for (int rep = 0; rep < 4; ++rep) {
        drv->cuMemsetD8Async(dout, 0xFF, out_bytes, stream);
        qg_status st = qg_paged_mqa_logits_schedule(ctx, &a, stream);
        if (st == QG_SUCCESS) st = qg_fp8_paged_mqa_logits(ctx, &a, stream);
        if (st != QG_SUCCESS) {
            snprintf(why, wl, "run %d: %s", rep, qg_last_error());
            goto done;
        }
        if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "run %d: the kernels faulted", rep);
            goto done;
        }
        drv->cuMemcpyDtoH(rep ? got : first, dout, out_bytes);
        if (rep && memcmp(got, first, out_bytes)) {
            snprintf(why, wl, "run %d differs bitwise from the first", rep);
            goto done;
        }
    }
    if (!check_paged(c, first, ld, max_len, q, cache, stride, w, ld_w, lens, bt, bt_ld, why, wl,
                     diff_out))
        goto done;
    if (graph) {
        /* capture schedule + logits, replay with the second lengths: equal to
         * eager calls with them, bitwise (and right against the reference) */
        if (drv->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) {
            snprintf(why, wl, "cuStreamBeginCapture failed");
            goto done;
        }
        qg_status st = qg_paged_mqa_logits_schedule(ctx, &a, stream);
        if (st == QG_SUCCESS) st = qg_fp8_paged_mqa_logits(ctx, &a, stream);
        const CUresult er = drv->cuStreamEndCapture(stream, &g);
        if (st != QG_SUCCESS || er != CUDA_SUCCESS ||
            drv->cuGraphInstantiate(&ge, g, 0) != CUDA_SUCCESS) {
            snprintf(why, wl, "capture: %s", st ? qg_last_error() : "the driver refused the graph");
            goto done;
        }
        drv->cuMemcpyHtoD(dl, lens2, (size_t)rows * 4);
        drv->cuMemsetD8Async(dout, 0xFF, out_bytes, stream);
        if (drv->cuGraphLaunch(ge, stream) != CUDA_SUCCESS ||
            drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "graph replay failed");
            goto done;
        }
        drv->cuMemcpyDtoH(got, dout, out_bytes);
        drv->cuMemsetD8Async(dout, 0xFF, out_bytes, stream);
        st = qg_paged_mqa_logits_schedule(ctx, &a, stream);
        if (st == QG_SUCCESS) st = qg_fp8_paged_mqa_logits(ctx, &a, stream);
        if (st != QG_SUCCESS || drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "eager run with the new lengths: %s", st ? qg_last_error() : "fault");
            goto done;
        }
        drv->cuMemcpyDtoH(first, dout, out_bytes);
        if (memcmp(got, first, out_bytes)) {
            snprintf(why, wl, "the graph replayed with new lengths differs from eager calls");
            goto done;
        }
        double d2 = 0;
        if (!check_paged(c, got, ld, max_len, q, cache, stride, w, ld_w, lens2, bt, bt_ld, why, wl,
                         &d2))
            goto done;
    }
    ok = true;
done:
    if (ge) drv->cuGraphExecDestroy(ge);
    if (g) drv->cuGraphDestroy(g);
    dfree(&m);
    free(q), free(cache), free(w), free(lens), free(lens2), free(bt), free(first), free(got);
    return ok;
}

TEST(gpu_paged_mqa_logits) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    static const paged_case cases[] = {
        {1, 1, 32, 128, 0, 1, 100},  {7, 2, 64, 128, 1, 0, 300},  {33, 1, 64, 64, 0, 0, 70},
        {16, 2, 32, 32, 1, 1, 500},  {300, 1, 64, 128, 0, 1, 64}, {5, 2, 64, 64, 0, 1, 2000},
        {32, 2, 64, 128, 1, 1, 1000}};
    int failures = 0;
    rng_seed(51);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char why[256] = "";
        double diff = NAN;
        const paged_case *c = &cases[i];
        const bool graph = i % 2 == 0;
        const bool ok = run_paged_case(ctx, stream, c, graph, why, sizeof why, &diff);
        printf("    %s paged bsz %d next_n %d H %d D %d L %d %s%s%s: diff %.2g %s\n",
               ok ? "ok  " : "FAIL", c->batch, c->next_n, c->heads, c->head_dim, c->avg_len,
               c->bf16 ? "bf16" : "fp32", c->clean ? " clean" : "", graph ? " +graph" : "", diff,
               ok ? "" : why);
        failures += !ok;
    }
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d paged cases failed", failures);
    PASS();
}

typedef struct {
    int m, n, k, splits;
} hc_case;

static bool run_hc_case(qg_context *ctx, CUstream stream, const hc_case *c, char *why, size_t wl,
                        double *diff_out) {
    const qg_driver *drv;
    qg__context_cuda(ctx, &drv, NULL, NULL);
    const int M = c->m, N = c->n, K = c->k, S = c->splits ? c->splits : 1;
    const int64_t lda = K + 8 * (M % 2), ldb = K + 4 * (M % 2), ldd = N + 2 * (M % 2);
    const int64_t split_ld = (int64_t)M * ldd + 2 * (S > 1);
    const size_t d_elems = (size_t)S * split_ld + 16, s_elems = (size_t)S * M + 16;
    uint16_t *a = malloc((size_t)M * lda * 2);
    float *b = malloc((size_t)N * ldb * 4), *d = malloc(d_elems * 4), *d0 = malloc(d_elems * 4);
    float *sq = malloc(s_elems * 4), *sq0 = malloc(s_elems * 4);
    for (size_t i = 0; i < (size_t)M * lda; ++i) a[i] = qg_bf16_encode(rng_normal());
    for (size_t i = 0; i < (size_t)N * ldb; ++i) b[i] = rng_normal();
    dev_mem m = {drv, {0}, 0};
    CUdeviceptr da = dalloc(&m, (size_t)M * lda * 2), db = dalloc(&m, (size_t)N * ldb * 4),
                dd = dalloc(&m, d_elems * 4), ds = dalloc(&m, s_elems * 4);
    bool ok = false;
    if (!da || !db || !dd || !ds) {
        snprintf(why, wl, "cuMemAlloc failed");
        goto done;
    }
    drv->cuMemcpyHtoD(da, a, (size_t)M * lda * 2);
    drv->cuMemcpyHtoD(db, b, (size_t)N * ldb * 4);
    qg_hc_prenorm_args x;
    memset(&x, 0, sizeof x);
    x.m = M, x.n = N, x.k = K, x.num_splits = c->splits;
    x.a = DP(da), x.lda = lda, x.b = DP(db), x.ldb = ldb;
    x.d = DP(dd), x.ldd = ldd, x.d_split_ld = S > 1 ? split_ld : 0, x.sqr_sum = DP(ds);
    for (int rep = 0; rep < 4; ++rep) {
        drv->cuMemsetD8Async(dd, 0xFF, d_elems * 4, stream);
        drv->cuMemsetD8Async(ds, 0xFF, s_elems * 4, stream);
        qg_status st = qg_tf32_hc_prenorm_gemm(ctx, &x, stream);
        if (st != QG_SUCCESS) {
            snprintf(why, wl, "run %d: %s", rep, qg_last_error());
            goto done;
        }
        if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "run %d: the kernel faulted", rep);
            goto done;
        }
        drv->cuMemcpyDtoH(rep ? d : d0, dd, d_elems * 4);
        drv->cuMemcpyDtoH(rep ? sq : sq0, ds, s_elems * 4);
        if (rep && (memcmp(d, d0, d_elems * 4) || memcmp(sq, sq0, s_elems * 4))) {
            snprintf(why, wl, "run %d differs bitwise from the first", rep);
            goto done;
        }
    }
    { /* the reference, split by split as DeepGEMM splits K */
        const int nkb = K / 64, qk = nkb / S, rk = nkb % S;
        qgtk_diff_acc acc, acc_t, acc_sq;
        memset(&acc, 0, sizeof acc);
        memset(&acc_t, 0, sizeof acc_t);
        memset(&acc_sq, 0, sizeof acc_sq);
        const int64_t sl = S > 1 ? split_ld : (int64_t)M * ldd;
        for (int s = 0; s < S; ++s) {
            const int k0 = 64 * (s * qk + (s < rk ? s : rk)), k1 = k0 + 64 * (qk + (s < rk));
            for (int i = 0; i < M; ++i) {
                double sqr = 0;
                for (int k = k0; k < k1; ++k) {
                    const double v = qg_bf16_decode(a[(size_t)i * lda + k]);
                    sqr += v * v;
                }
                const double y = sq0[(size_t)s * M + i];
                if (isnan(y)) {
                    snprintf(why, wl, "sqr_sum[%d][%d] not written", s, i);
                    goto done;
                }
                qgtk_diff_add(&acc_sq, &sqr, &y, 1);
                for (int j = 0; j < ldd; ++j) {
                    const size_t idx = (size_t)s * sl + (size_t)i * ldd + j;
                    if (j >= N) {
                        if (((uint32_t *)d0)[idx] != 0xFFFFFFFFu) {
                            snprintf(why, wl, "d[%d][%d][%d] (padding) written", s, i, j);
                            goto done;
                        }
                        continue;
                    }
                    /* the exact product, and with b as the tensor cores read an
                     * fp32 operand as TF32 (the low 13 mantissa bits dropped) */
                    double ref = 0, ref_t = 0;
                    for (int k = k0; k < k1; ++k) {
                        const double av = qg_bf16_decode(a[(size_t)i * lda + k]);
                        const float bv = b[(size_t)j * ldb + k];
                        uint32_t bits;
                        memcpy(&bits, &bv, 4);
                        bits = (bits + 0x1000u) & ~0x1FFFu; /* TF32, to nearest (ties away), as cvt.rna */
                        float bt;
                        memcpy(&bt, &bits, 4);
                        ref += av * bv;
                        ref_t += av * bt;
                    }
                    const double y2 = d0[idx];
                    if (isnan(y2)) {
                        snprintf(why, wl, "d[%d][%d][%d] not written", s, i, j);
                        goto done;
                    }
                    qgtk_diff_add(&acc, &ref, &y2, 1);
                    qgtk_diff_add(&acc_t, &ref_t, &y2, 1);
                }
            }
        }
        if (((uint32_t *)d0)[(size_t)S * sl] != 0xFFFFFFFFu || ((uint32_t *)sq0)[(size_t)S * M] != 0xFFFFFFFFu) {
            snprintf(why, wl, "written past the end of d or sqr_sum");
            goto done;
        }
        /* DeepGEMM's criterion: diff < 1e-8 against a TF32 product (its
         * reference is torch's TF32 matmul); the exact product's diff is
         * reported beside it */
        const double d_exact = qgtk_diff_result(&acc), d_tf32 = qgtk_diff_result(&acc_t);
        const double dsq = qgtk_diff_result(&acc_sq);
        *diff_out = d_tf32;
        ok = d_tf32 < 1e-8 && d_exact < 1e-5 && dsq < 1e-8;
        if (!ok)
            snprintf(why, wl, "diff d %.3g (tf32 b) / %.3g (exact b), sqr_sum %.3g", d_tf32,
                     d_exact, dsq);
    }
done:
    dfree(&m);
    free(a), free(b), free(d), free(d0), free(sq), free(sq0);
    return ok;
}

TEST(gpu_hc_prenorm) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    static const hc_case cases[] = {{1, 24, 7168, 1},  {13, 32, 1024, 16}, {77, 16, 64, 1},
                                    {300, 8, 640, 3},  {1025, 24, 4096, 1}, {129, 32, 2048, 4},
                                    {512, 24, 28672, 0}};
    int failures = 0;
    rng_seed(52);
    /* every rounding scheme that meets DeepGEMM's criterion (QGEMM_HC_MODE;
     * unset = the default), each case held to the TF32-rounded reference */
    static const char *const modes[] = {NULL, "inplace", "rounder:2", "split", "split:2"};
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; ++mi) {
        if (modes[mi])
            setenv("QGEMM_HC_MODE", modes[mi], 1);
        else
            unsetenv("QGEMM_HC_MODE");
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            char why[256] = "";
            double diff = NAN;
            const hc_case *c = &cases[i];
            const bool ok = run_hc_case(ctx, stream, c, why, sizeof why, &diff);
            printf("    %s hc %dx%dx%d splits %d [%s]: diff %.2g %s\n", ok ? "ok  " : "FAIL", c->m,
                   c->n, c->k, c->splits, modes[mi] ? modes[mi] : "default", diff, ok ? "" : why);
            failures += !ok;
        }
    }
    unsetenv("QGEMM_HC_MODE");
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d HC cases failed", failures);
    PASS();
}
