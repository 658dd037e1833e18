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
#include "indexer_plan.h"
#include "gpu_ctx.h"
#include "qg_test.h"
#include "qgtk.h"
#include "qgtk_cases.h"

#include <math.h>
#include <stdlib.h>
#include <limits.h>
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
        /* fuzz_family: INT_MAX + 1 overflowed the int (UBSan; a wrong size) */
        CHECK(qg_paged_mqa_schedule_size(INT_MAX) == ((size_t)INT_MAX + 1) * 8,
              "schedule size of INT_MAX: %zu", qg_paged_mqa_schedule_size(INT_MAX));
        CHECK(qg_paged_mqa_schedule_size(INT_MIN) == 0, "schedule size of INT_MIN");
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
    /* make fuzz (fuzz_family): m * ldd overflowed int64 (UBSan), and huge
     * plane strides wrapped d's extent in the overlap check */
    H((x.m = 1 << 30, x.ldd = 1ll << 36), "a plane of d, args->m * args->ldd = 1073741824 x 68719476736 elements, exceeds 2^40", UNS);
    H((x.num_splits = 4, x.d_split_ld = INT64_MAX - 1), "args->d_split_ld = 9223372036854775806 exceeds 2^40", UNS);
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
    { /* QGEMM_HC_VARIANT: token lists pass the checks (acc sets with split
       * fail as unsupported); any other token fails the call, naming it */
        qg_hc_prenorm_args h = good_hc();
        static const char *const good[] = {"", "base", "base+fit", "acc2", "acc4", "acc8", "fit",
                                           "w1", "w2", "k2", "k4", "acc2+fit", "acc4,fit,w2,k2",
                                           "cw2", "cw3", "cw4", "acc4+fit+cw4"};
        for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
            setenv("QGEMM_HC_VARIANT", good[i], 1);
            qg_status s = qg_tf32_hc_prenorm_gemm(ctx, &h, NULL);
            CHECK(s == QG_ERROR_NO_DEVICE, "QGEMM_HC_VARIANT=%s: %s (%s)", good[i],
                  qg_status_string(s), qg_last_error());
        }
        static const char *const bad[] = {"acc3", "fast", "acc2+", "fit+w3", "acc22", "k3", "cw1",
                                          "cw5"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
            setenv("QGEMM_HC_VARIANT", bad[i], 1);
            qg_status s = qg_tf32_hc_prenorm_gemm(ctx, &h, NULL);
            /* "acc2+" is acc2 and an empty token: accepted */
            const bool want_ok = !strcmp(bad[i], "acc2+");
            CHECK(want_ok ? s == QG_ERROR_NO_DEVICE
                          : s == INV && strstr(qg_last_error(), "QGEMM_HC_VARIANT") &&
                                strstr(qg_last_error(), bad[i]),
                  "QGEMM_HC_VARIANT=%s: %s (%s)", bad[i], qg_status_string(s), qg_last_error());
        }
        setenv("QGEMM_HC_VARIANT", "acc2", 1);
        setenv("QGEMM_HC_MODE", "split", 1);
        qg_status s = qg_tf32_hc_prenorm_gemm(ctx, &h, NULL);
        CHECK(s == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "split"),
              "acc2 with split: %s (%s)", qg_status_string(s), qg_last_error());
        /* the default (acc4+fit+cw4) takes split as fit+cw4: not refused */
        unsetenv("QGEMM_HC_VARIANT");
        s = qg_tf32_hc_prenorm_gemm(ctx, &h, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "default variant with split: %s (%s)", qg_status_string(s),
              qg_last_error());
        unsetenv("QGEMM_HC_MODE");
        unsetenv("QGEMM_HC_VARIANT");
    }
    { /* QGEMM_PMQA_VARIANT: the seven names (and NAME:sS, S 1..64) pass the checks; any other value
       * (the removed split2 / pipe2 / shared4 / shared3 / the *s forms / split4r /
       * split4r112 / split4r112m / split4r112y too) fails the logits call (not the schedule's),
       * naming the variable, the value and the valid names */
        qg_paged_mqa_logits_args p = good_paged();
        static const char *const good[] = {"shared2", "dual2", "split4", "split4r112w", "split4r112x",
                                           "split4r112p", "split4r112u", "split4r112u:s16",
                                           "shared2:s8", "split4:s64"};
        for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
            setenv("QGEMM_PMQA_VARIANT", good[i], 1);
            qg_status s = qg_fp8_paged_mqa_logits(ctx, &p, NULL);
            CHECK(s == QG_ERROR_NO_DEVICE, "QGEMM_PMQA_VARIANT=%s: %s (%s)", good[i],
                  qg_status_string(s), qg_last_error());
        }
        static const char *const bad[] = {"split", "split2", "SHARED2", "shared", "shared2 ",
                                          "4", "pipe", "pipe2", "pipe4", "dual",
                                          "shared4", "shared2s", "shared4s", "dual2s", "shared3",
                                          "split4r", "split4r112", "split4r112m", "split4r112y",
                                          "shared3s", "split4s", "shared2S", "split4R",
                                          "split4rr", "split4w", "split4r104",
                                          "split4r120", "split4r112M", "split4r112mm",
                                          "split4r112mw", "split4r112W", "split4r112X",
                                          "split4r112xx", "split4r112Y", "split4r112z",
                                          "split4r112P", "split4r112pp", "split4r112",
                                          "split4r112U", "split4r112up", "split4r112u:",
                                          "split4r112u:s", "split4r112u:s0", "split4r112u:s65",
                                          "split4r112u:16", "split4r112u:s16x", "nope:s16",
                                          ":s16", "split4r112u:S16", "split4r112u:s-4",
                                          "split4r112u:s16:s8", "split4r112u:s99999999999"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
            setenv("QGEMM_PMQA_VARIANT", bad[i], 1);
            qg_status s = qg_fp8_paged_mqa_logits(ctx, &p, NULL);
            char quoted[32];
            snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
            CHECK(s == INV && strstr(qg_last_error(), "QGEMM_PMQA_VARIANT") &&
                      strstr(qg_last_error(), quoted) &&
                      strstr(qg_last_error(), "shared2, dual2, split4, split4r112w, split4r112x, split4r112p or "
                             "split4r112u"),
                  "QGEMM_PMQA_VARIANT='%s': %s (%s)", bad[i], qg_status_string(s),
                  qg_last_error());
            s = qg_paged_mqa_logits_schedule(ctx, &p, NULL);
            CHECK(s == QG_ERROR_NO_DEVICE, "schedule with QGEMM_PMQA_VARIANT='%s': %s (%s)",
                  bad[i], qg_status_string(s), qg_last_error());
        }
        unsetenv("QGEMM_PMQA_VARIANT");
    }
    { /* QGEMM_MQA_VARIANT: the four names pass the checks; any other value
       * (lockstep4, the former name of deep4, too) fails the call naming the
       * variable, the value and the valid names, before any device work */
        qg_mqa_logits_args m = good_mqa();
        static const char *const good[] = {"pipe", "deep4", "deep4l", "lockstep2"};
        for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
            setenv("QGEMM_MQA_VARIANT", good[i], 1);
            qg_status s = qg_fp8_mqa_logits(ctx, &m, NULL);
            CHECK(s == QG_ERROR_NO_DEVICE, "QGEMM_MQA_VARIANT=%s: %s (%s)", good[i],
                  qg_status_string(s), qg_last_error());
        }
        static const char *const bad[] = {"lockstep4", "deep", "deep2", "DEEP4", "pipe ",
                                          "split4", "4", "lockstep", "pipe2", "deep4x",
                                          "deep4L", "deep4s"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
            setenv("QGEMM_MQA_VARIANT", bad[i], 1);
            qg_status s = qg_fp8_mqa_logits(ctx, &m, NULL);
            char quoted[32];
            snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
            CHECK(s == INV && strstr(qg_last_error(), "QGEMM_MQA_VARIANT") &&
                      strstr(qg_last_error(), quoted) &&
                      strstr(qg_last_error(), "pipe, deep4, deep4l or lockstep2"),
                  "QGEMM_MQA_VARIANT='%s': %s (%s)", bad[i], qg_status_string(s),
                  qg_last_error());
        }
        unsetenv("QGEMM_MQA_VARIANT");
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

/* What the indexer's and HC's tensor-core kernels' PTX holds. */
#define INDEXER_PTX (QGTK_PTX_WGMMA | QGTK_PTX_TMA_LOAD)

TEST(indexer_compile_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 16, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static idx_variant v[128];
    const int count = idx_variants(v);
    for (int i = 0; i < count; ++i) {
        const void *args = v[i].kind == QG_INDEXER_MQA_LOGITS   ? (const void *)&v[i].mqa
                           : v[i].kind == QG_INDEXER_HC_PRENORM ? (const void *)&v[i].hc
                                                                : (const void *)&v[i].paged;
        qg_kernel_info info;
        memset(&info, 0, sizeof info);
        qg_status st = qg_indexer_compile(sw.ctx, v[i].kind, args, &info);
        /* the paged schedule is a plain kernel: no wgmma, no TMA */
        const bool tma = v[i].kind != QG_INDEXER_PAGED_SCHEDULE;
        qgtk_compile_verdict(&sw, v[i].what, st, &info, tma ? INDEXER_PTX : 0, 0);
    }
    printf("    %d indexer / HC variants, %d failures\n", count, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* Every paged MQA organisation (QGEMM_PMQA_VARIANT; the default is also
 * in indexer_compile_every_variant) on the widest (next_n 2, H 64, D 128:
 * the most registers) and the narrowest shapes, clean and not, fp32 and
 * bf16: compiled offline, no spill, no stack, no warning, wgmma and TMA. */
TEST(pmqa_compile_every_variant) {
    { /* the planner's default is SPLIT4R112U at every width (split4r112w's plan, the run
       * loop, the producers' shared base and the uniform walk: 4 math warpgroups, each with its
       * own producer warp and kv ring: 640 threads, one CTA an SM; weights in registers,
       * setmaxnreg 32 / 112 and all 32 weights at 128 columns); SHARED2 and DUAL2,
       * the former defaults, stay selectable */
        qg_pmqa_plan pl;
        const char *why = "";
        CHECK(qg__pmqa_plan(64, 2, 64, 128, 0, 0, 132, &pl, &why) == 0, "plan: %s", why);
        CHECK(pl.variant == QG_PMQA_VARIANT_SPLIT4R112U && pl.run == 1 && pl.math_wgs == 4 && pl.block_x == 640 &&
                  pl.ctas == 1 && pl.grid_x == 132 && pl.split == 1 && pl.math112 == 1 &&
                  pl.wreg == 32 && pl.lean == 1,
              "default: variant %d, %d math wgs, %d threads, %d stages, %d ctas",
              pl.variant, pl.math_wgs, pl.block_x, pl.stages, pl.ctas);
        { /* the default's ring: 12 stages of the 20 that fit here; ":s12" is the same kernel,
           * ":s20" the plan before session x, ":s8" shallower; 24, 10 and 0 are refused (0:
           * the plan's own, kept) */
            char s0[2048], s12[2048];
            qg_pmqa_plan p12 = pl, p20 = pl, p8 = pl, bad = pl, keep = pl;
            CHECK(pl.stages == 12 && pl.max_stages == 20 && qg__pmqa_plan_stages(&p12, 12) == 0 &&
                      qg__pmqa_source(s0, sizeof s0, &pl) > 0 &&
                      qg__pmqa_source(s12, sizeof s12, &p12) > 0 && !strcmp(s0, s12) &&
                      qg__pmqa_plan_stages(&p20, 20) == 0 && p20.smem_bytes > pl.smem_bytes &&
                      qg__pmqa_plan_stages(&p8, 8) == 0 && p8.smem_bytes < pl.smem_bytes &&
                      qg__pmqa_plan_stages(&bad, 24) == -1 && qg__pmqa_plan_stages(&bad, 10) == -1 &&
                      bad.stages == 12 && qg__pmqa_plan_stages(&keep, 0) == 0 && keep.stages == 12,
                  "default ring: %d of %d stages; s12 same source %d; s20 %zu / s8 %zu / %zu bytes",
                  pl.stages, pl.max_stages, !strcmp(s0, s12), p20.smem_bytes, p8.smem_bytes,
                  pl.smem_bytes);
        }
        qg_pmqa_plan pn;
        CHECK(qg__pmqa_plan(64, 1, 64, 128, 0, 0, 132, &pn, &why) == 0 &&
                  pn.variant == QG_PMQA_VARIANT_SPLIT4R112U && pn.math112 == 0 &&
                  qg__pmqa_plan(64, 2, 32, 64, 1, 1, 132, &pn, &why) == 0 &&
                  pn.variant == QG_PMQA_VARIANT_SPLIT4R112U &&
                  qg__pmqa_default_variant(2, 64) == QG_PMQA_VARIANT_SPLIT4R112U &&
                  qg__pmqa_default_variant(1, 32) == QG_PMQA_VARIANT_SPLIT4R112U,
              "default below N 128: variant %d", pn.variant);
        /* the former default at 128 columns, re-planned */
        CHECK(qg__pmqa_plan_variant(&pl, QG_PMQA_VARIANT_SHARED2) == 0 && pl.math_wgs == 2 &&
                  pl.block_x == 384 && pl.stages == 16 && pl.ctas == 1,
              "shared2: %d math wgs, %d threads, %d stages", pl.math_wgs, pl.block_x, pl.stages);
        CHECK(!strcmp(qg__pmqa_variant_name(pl.variant), "shared2") &&
                  !strcmp(qg__pmqa_variant_name(QG_PMQA_VARIANT_DUAL2), "dual2") &&
                  !strcmp(qg__pmqa_variant_name(QG_PMQA_VARIANT_SPLIT4), "split4") &&
                  !strcmp(qg__pmqa_variant_name(QG_PMQA_VARIANT_SPLIT4R112W), "split4r112w") &&
                  !strcmp(qg__pmqa_variant_name(QG_PMQA_VARIANT_SPLIT4R112X), "split4r112x") &&
                  !strcmp(qg__pmqa_variant_name(QG_PMQA_VARIANT_SPLIT4R112P), "split4r112p") &&
                  !strcmp(qg__pmqa_variant_name(QG_PMQA_VARIANT_SPLIT4R112U), "split4r112u") &&
                  QG_PMQA_VARIANT_COUNT == 7 && !qg__pmqa_variant_name(7) &&
                  !qg__pmqa_variant_name(-1) && qg__pmqa_plan_variant(&pl, 7) == -1 &&
                  pl.run == 0 && pl.paddr == 0 && pl.uni == 0 &&
                  pl.stride_walk == 0 && pl.split == 0 && pl.wreg == 0 && pl.math112 == 0 &&
                  pl.math_tail == 0 && pl.lean == 0,
              "variant names / count");
        /* SPLIT4: 4 math warpgroups, a producer warp and ring each (warpgroup i's
         * stages are i + 4 j), the strided walk, weights from L1 */
        qg_pmqa_plan ps = pl;
        CHECK(qg__pmqa_plan_variant(&ps, QG_PMQA_VARIANT_SPLIT4) == 0 && ps.split == 1 &&
                  ps.math_wgs == 4 && ps.stride_walk == 1 && ps.ctas == 1 && ps.block_x == 640 &&
                  ps.stages % 4 == 0 && ps.stages >= 8 && ps.smem_bytes <= QG_IDX_SMEM_MAX &&
                  ps.wreg == 0 && ps.math112 == 0 && ps.lean == 0 && ps.math_tail == 0,
              "split4: %d math wgs, %d threads, %d stages", ps.math_wgs, ps.block_x, ps.stages);
        /* SPLIT4R112W: split4's plan with the weights in registers; at N 128
         * setmaxnreg 32 / 112, the lean loop, all 32 weights (28 clean at D 64),
         * the clean tail on the math warps; below 128 all N / 4 weights at 48 / 104 */
        {
            qg_pmqa_plan wr = pl, wc, w64, w32, wd64;
            CHECK(qg__pmqa_plan_variant(&wr, QG_PMQA_VARIANT_SPLIT4R112W) == 0 &&
                      qg__pmqa_plan(64, 2, 64, 128, 1, 0, 132, &wc, &why) == 0 &&
                      qg__pmqa_plan_variant(&wc, QG_PMQA_VARIANT_SPLIT4R112W) == 0 &&
                      qg__pmqa_plan(64, 1, 64, 64, 1, 1, 132, &w64, &why) == 0 &&
                      qg__pmqa_plan_variant(&w64, QG_PMQA_VARIANT_SPLIT4R112W) == 0 &&
                      qg__pmqa_plan(64, 1, 32, 128, 0, 0, 132, &w32, &why) == 0 &&
                      qg__pmqa_plan_variant(&w32, QG_PMQA_VARIANT_SPLIT4R112W) == 0 &&
                      qg__pmqa_plan(64, 2, 64, 64, 1, 0, 132, &wd64, &why) == 0 &&
                      qg__pmqa_plan_variant(&wd64, QG_PMQA_VARIANT_SPLIT4R112W) == 0 &&
                      wr.split == 1 && wr.math_wgs == 4 && wr.stride_walk == 1 &&
                      wr.stages == ps.stages && wr.smem_bytes == ps.smem_bytes &&
                      wr.block_x == 640 && wr.lean == 1 && wr.wreg == 32 && wr.math112 == 1 &&
                      wr.math_tail == 0 && wc.lean == 1 && wc.wreg == 32 && wc.math112 == 1 &&
                      wc.math_tail == 1 && wd64.wreg == 28 && wd64.math_tail == 1 &&
                      w64.lean == 0 && w64.math112 == 0 && w64.math_tail == 0 && w64.wreg == 16 &&
                      w32.wreg == 8 && w32.math112 == 0,
                  "split4r112w: lean %d / %d / %d, wreg %d / %d / %d / %d / %d", wr.lean, wc.lean,
                  w64.lean, wr.wreg, wc.wreg, w64.wreg, w32.wreg, wd64.wreg);
            char src[2048];
            CHECK(qg__pmqa_source(src, sizeof src, &wc) > 0 &&
                      strstr(src, "#define QG_PMQA_SPLIT 1\n#define QG_PMQA_WREG 32\n"
                                  "#define QG_PMQA_MATH112 1\n#define QG_PMQA_MATH_TAIL 1\n"
                                  "#define QG_PMQA_LEAN 1\n"),
                  "split4r112w clean N 128 source: %s", src);
            CHECK(qg__pmqa_source(src, sizeof src, &wr) > 0 &&
                      strstr(src, "#define QG_PMQA_WREG 32\n#define QG_PMQA_MATH112 1\n"
                                  "#define QG_PMQA_LEAN 1\n") && !strstr(src, "MATH_TAIL"),
                  "split4r112w N 128 source: %s", src);
            CHECK(qg__pmqa_source(src, sizeof src, &w64) > 0 &&
                      strstr(src, "#define QG_PMQA_SPLIT 1\n#define QG_PMQA_WREG 16\n") &&
                      !strstr(src, "MATH112") && !strstr(src, "QG_PMQA_LEAN"),
                  "split4r112w N 64 source: %s", src);
            /* SPLIT4R112X (issue 50): split4r112w's plan at every width, the run loop
             * added; only its source names QG_PMQA_RUN (split4r112w's stays as it was) */
            qg_pmqa_plan xr = wr, xc = wc, x64 = w64, x32 = w32, xd64 = wd64;
            qg_pmqa_plan *xs[] = {&xr, &xc, &x64, &x32, &xd64};
            const qg_pmqa_plan *ws[] = {&wr, &wc, &w64, &w32, &wd64};
            for (int i = 0; i < 5; ++i) {
                qg_pmqa_plan *x = xs[i];
                CHECK(qg__pmqa_plan_variant(x, QG_PMQA_VARIANT_SPLIT4R112X) == 0 && x->run == 1 &&
                          ws[i]->run == 0 && x->split == 1 && x->wreg == ws[i]->wreg &&
                          x->lean == ws[i]->lean && x->math112 == ws[i]->math112 &&
                          x->math_tail == ws[i]->math_tail && x->stages == ws[i]->stages &&
                          x->smem_bytes == ws[i]->smem_bytes && x->block_x == 640,
                      "split4r112x plan %d: run %d wreg %d / %d", i, x->run, x->wreg, ws[i]->wreg);
                char sw[2048];
                CHECK(qg__pmqa_source(src, sizeof src, x) > 0 &&
                          qg__pmqa_source(sw, sizeof sw, ws[i]) > 0 &&
                          strstr(src, "#define QG_PMQA_RUN 1\n") && !strstr(sw, "QG_PMQA_RUN"),
                      "split4r112x source %d: %s", i, src);
                char sx[2048];
                memcpy(sx, src, sizeof sx);
                /* SPLIT4R112P: split4r112x's plan, the producers' shared base added */
                qg_pmqa_plan pp = *x;
                CHECK(x->paddr == 0 && !strstr(src, "QG_PMQA_PADDR") &&
                          qg__pmqa_plan_variant(&pp, QG_PMQA_VARIANT_SPLIT4R112P) == 0 &&
                          pp.run == 1 && pp.paddr == 1 && pp.wreg == x->wreg &&
                          pp.lean == x->lean && pp.math_tail == x->math_tail &&
                          pp.stages == x->stages && pp.smem_bytes == x->smem_bytes &&
                          qg__pmqa_source(src, sizeof src, &pp) > 0 &&
                          strstr(src, "#define QG_PMQA_RUN 1\n#define QG_PMQA_PADDR 1\n") &&
                          !strstr(sx, "QG_PMQA_PADDR"),
                      "split4r112p plan / source %d: %s", i, src);
                /* SPLIT4R112U: split4r112p's plan, the uniform walk added, and a ring of
                 * 12 stages (3 a warpgroup; the others take all that fit, max_stages) */
                qg_pmqa_plan pu = *x;
                CHECK(pp.uni == 0 && !strstr(src, "QG_PMQA_UNI") &&
                          qg__pmqa_plan_variant(&pu, QG_PMQA_VARIANT_SPLIT4R112U) == 0 &&
                          pu.run == 1 && pu.paddr == 1 && pu.uni == 1 &&
                          pu.wreg == x->wreg && pu.lean == x->lean && pu.math_tail == x->math_tail &&
                          x->stages > 12 && pu.stages == 12 && pu.max_stages == x->stages &&
                          x->max_stages == x->stages && pu.smem_bytes < x->smem_bytes &&
                          qg__pmqa_source(src, sizeof src, &pu) > 0 &&
                          strstr(src, "#define QG_PMQA_RUN 1\n#define QG_PMQA_PADDR 1\n"
                                      "#define QG_PMQA_UNI 1\n") &&
                          !strstr(sx, "QG_PMQA_UNI"),
                      "split4r112u plan / source %d: %s", i, src);
            }
            CHECK(qg__pmqa_source(src, sizeof src, &ps) > 0 && !strstr(src, "QG_PMQA_WREG") &&
                      strstr(src, "#define QG_PMQA_STRIDE_WALK 1\n#define QG_PMQA_SPLIT 1\n"),
                  "split4 source: %s", src);
        }
        /* dual2: two CTAs an SM, each within half its shared memory (N = 128
         * D 128: 8 stages; N = 32: 12); re-planning the same plan does not
         * compound the grid; the schedule keeps one range an SM */
        qg_pmqa_plan pd = pl;
        CHECK(qg__pmqa_plan_variant(&pd, QG_PMQA_VARIANT_DUAL2) == 0 && pd.ctas == 2 &&
                  pd.grid_x == 264 && pd.stages == 8 &&
                  2 * (pd.smem_bytes + 1024) <= 233472 && pd.schedule_bytes == 133 * 8,
              "dual2 N 128: %d ctas, grid %d, %d stages, %zu bytes", pd.ctas, pd.grid_x,
              pd.stages, pd.smem_bytes);
        CHECK(qg__pmqa_plan(64, 1, 32, 128, 0, 0, 132, &pd, &why) == 0 &&
                  qg__pmqa_plan_variant(&pd, QG_PMQA_VARIANT_DUAL2) == 0 &&
                  qg__pmqa_plan_variant(&pd, QG_PMQA_VARIANT_DUAL2) == 0 && pd.ctas == 2 &&
                  pd.grid_x == 264 && pd.stages == 12 && pd.block_x == 384 &&
                  2 * (pd.smem_bytes + 1024) <= 233472 && pd.schedule_bytes == 133 * 8,
              "dual2 N 32: %d ctas, grid %d, %d stages, %zu bytes", pd.ctas, pd.grid_x,
              pd.stages, pd.smem_bytes);
    }
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 0, 1) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    /* (":sS": the ring's depth, issue 50's A/B: at the widest and the narrowest shape) */
    static const char *const variants[] = {"shared2", "dual2", "split4", "split4r112w", "split4r112x",
                                           "split4r112p", "split4r112u", "split4r112u:s20",
                                           "split4r112u:s8"};
    static const int P[][5] = {/* next_n, H, D, clean, bf16 */
                               {2, 64, 128, 0, 0}, {2, 64, 128, 1, 1}, {2, 64, 64, 1, 0},
                               {1, 32, 32, 0, 1},  {1, 64, 128, 1, 0}, {2, 32, 32, 1, 1}};
    for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; ++vi) {
        setenv("QGEMM_PMQA_VARIANT", variants[vi], 1);
        for (size_t i = 0; i < sizeof P / sizeof P[0]; ++i) {
            if (strchr(variants[vi], ':') && i != 0 && i != 3) continue;
            qg_paged_mqa_logits_args a = good_paged();
            a.next_n = P[i][0], a.heads = P[i][1], a.head_dim = P[i][2], a.ld_weights = P[i][1];
            a.clean = P[i][3], a.logits_bf16 = P[i][4];
            qg_kernel_info info;
            memset(&info, 0, sizeof info);
            qg_status st = qg_indexer_compile(sw.ctx, QG_INDEXER_PAGED_MQA_LOGITS, &a, &info);
            char what[96];
            snprintf(what, sizeof what, "paged %s next_n %d H %d D %d%s %s", variants[vi],
                     a.next_n, a.heads, a.head_dim, a.clean ? " clean" : "",
                     a.logits_bf16 ? "bf16" : "fp32");
            qgtk_compile_verdict(&sw, what, st, &info, INDEXER_PTX, 0);
        }
    }
    /* a ring deeper than fits, or not a multiple of the math warpgroups, is refused by
     * the planner, naming the stages */
    static const char *const too_deep[] = {"split4r112u:s6", "split4r112u:s28", "split4r112u:s2",
                                           "shared2:s18"};
    for (size_t vi = 0; vi < sizeof too_deep / sizeof too_deep[0]; ++vi) {
        setenv("QGEMM_PMQA_VARIANT", too_deep[vi], 1);
        qg_paged_mqa_logits_args a = good_paged();
        a.next_n = 2, a.heads = 64, a.head_dim = 128, a.ld_weights = 64;
        qg_kernel_info info;
        memset(&info, 0, sizeof info);
        qg_status st = qg_indexer_compile(sw.ctx, QG_INDEXER_PAGED_MQA_LOGITS, &a, &info);
        CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "stages"),
              "QGEMM_PMQA_VARIANT=%s: %s (%s)", too_deep[vi], qg_status_string(st),
              qg_last_error());
    }
    unsetenv("QGEMM_PMQA_VARIANT");
    printf("    %d paged variants, %d failures\n", sw.checked, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* Every HC rounding scheme (QGEMM_HC_MODE) on the shapes whose plans
 * differ most (DeepGEMM's headline, its split form, every N, short K, 1 and
 * 2 math warpgroups, clusters): compiled offline, no spill, no stack, no
 * warning, wgmma and TMA in the PTX; registers printed for each. */
TEST(hc_compile_every_mode) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 0, 1) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static const char *const modes[] = {"inplace", "rounder", "rounder:2", "split", "split:1",
                                        "split:2", "split:3", "trunc"};
    static const int HC[][4] = {{8192, 24, 28672, 1}, {8192, 24, 28672, 16}, {13, 32, 7168, 16},
                                {137, 24, 7680, 1},   {4096, 8, 640, 3},     {77, 16, 64, 1}};
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; ++mi) {
        setenv("QGEMM_HC_MODE", modes[mi], 1);
        for (size_t i = 0; i < sizeof HC / sizeof HC[0]; ++i) {
            qg_hc_prenorm_args h = good_hc();
            h.m = HC[i][0], h.n = HC[i][1], h.k = HC[i][2], h.num_splits = HC[i][3];
            h.lda = h.k, h.ldb = h.k, h.ldd = h.n;
            qg_kernel_info info;
            memset(&info, 0, sizeof info);
            qg_status st = qg_indexer_compile(sw.ctx, QG_INDEXER_HC_PRENORM, &h, &info);
            char what[96];
            snprintf(what, sizeof what, "hc %s %dx%dx%d splits %d", modes[mi], h.m, h.n, h.k,
                     h.num_splits);
            qgtk_compile_verdict(&sw, what, st, &info, INDEXER_PTX, 0);
        }
    }
    unsetenv("QGEMM_HC_MODE");
    /* the planner options (QGEMM_HC_VARIANT) with the TF32 modes */
    static const char *const variants[][2] = {{"rounder", "acc2"},       {"rounder", "acc4"},
                                              {"rounder:2", "acc4+fit"}, {"trunc", "acc4"},
                                              {"inplace", "acc2"},       {"rounder", "fit"},
                                              {"rounder", "acc4+fit+w2"}, {"rounder", "acc4+fit+w1"},
                                              {"trunc", "fit+w1"},       {"rounder", "acc8"},
                                              {"rounder:3", "acc8+fit"}, {"rounder:2", "acc4+fit+w1"},
                                              {"rounder", "acc8+fit+w1"}, {"rounder", "acc8+fit+k2"},
                                              {"rounder", "k4"}, {"rounder", "acc4+fit+cw4"},
                                              {"rounder", "acc4+fit+cw3"}, {"split", "fit+cw4"}};
    for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; ++vi) {
        setenv("QGEMM_HC_MODE", variants[vi][0], 1);
        setenv("QGEMM_HC_VARIANT", variants[vi][1], 1);
        for (size_t i = 0; i < sizeof HC / sizeof HC[0]; ++i) {
            qg_hc_prenorm_args h = good_hc();
            h.m = HC[i][0], h.n = HC[i][1], h.k = HC[i][2], h.num_splits = HC[i][3];
            h.lda = h.k, h.ldb = h.k, h.ldd = h.n;
            qg_kernel_info info;
            memset(&info, 0, sizeof info);
            qg_status st = qg_indexer_compile(sw.ctx, QG_INDEXER_HC_PRENORM, &h, &info);
            char what[112];
            snprintf(what, sizeof what, "hc %s/%s %dx%dx%d splits %d", variants[vi][0],
                     variants[vi][1], h.m, h.n, h.k, h.num_splits);
            qgtk_compile_verdict(&sw, what, st, &info, INDEXER_PTX, 0);
        }
    }
    unsetenv("QGEMM_HC_MODE");
    unsetenv("QGEMM_HC_VARIANT");
    printf("    %d HC mode variants, %d failures\n", sw.checked, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* The ragged MQA organisations (QGEMM_MQA_VARIANT) besides the default,
 * deep4 (DeepGEMM's 4 math warpgroups at setmaxnreg 32 / 112, q's weights and
 * ranges staged by the producer warp; indexer_compile_every_variant sweeps
 * it): pipe (the default until 2026-11-29) and deep4l (the math loads them)
 * over every (H, D, plain / clean / compressed, fp32 / bf16), lockstep2 over a few; 0 spills, no
 * stack, no warning, no serialized wgmma, wgmma and TMA in the PTX. */
TEST(mqa_compile_every_variant) {
    { /* the plans: the default is deep4, 640 threads, 256 keys a stage; pipe 384 */
        qg_mqa_plan p;
        const char *why = "";
        CHECK(qg__mqa_plan(2048, 65536, 64, 64, 0, 1, 0, 132, &p, &why) == 0 &&
                  p.variant == QG_MQA_VARIANT_DEEP4 && p.math_wgs == 4 && p.block_x == 640 &&
                  qg__mqa_default_variant() == QG_MQA_VARIANT_DEEP4,
              "default plan: variant %d, %d wgs, %d threads (%s)", p.variant, p.math_wgs,
              p.block_x, why);
        qg_mqa_plan pp = p;
        CHECK(qg__mqa_plan_variant(&pp, QG_MQA_VARIANT_PIPE) == 0 && pp.pipe == 1 &&
                  pp.math_wgs == 2 && pp.block_x == 384 && pp.block_kv == 128 && pp.stage_w == 0,
              "pipe: %d wgs, %d threads", pp.math_wgs, pp.block_x);
        CHECK(qg__mqa_plan_variant(&p, QG_MQA_VARIANT_DEEP4) == 0 && p.math_wgs == 4 &&
                  p.pipe == 0 && p.block_kv == 256 && p.block_x == 640 && p.kv_stages >= 3 &&
                  p.stage_w == 1 && p.smem_bytes <= QG_IDX_SMEM_MAX,
              "deep4: %d wgs, block_kv %d, %d threads, %d stages, %zu bytes", p.math_wgs,
              p.block_kv, p.block_x, p.kv_stages, p.smem_bytes);
        qg_mqa_plan l = p;
        CHECK(qg__mqa_plan_variant(&l, QG_MQA_VARIANT_DEEP4L) == 0 && l.math_wgs == 4 &&
                  l.stage_w == 0 && l.kv_stages == p.kv_stages &&
                  l.smem_bytes + 2 * 160 * 4 == p.smem_bytes,
              "deep4l: %d stages, %zu bytes", l.kv_stages, l.smem_bytes);
        for (int d = 32; d <= 128; d *= 2) { /* D 128: 5 stages of 256 keys fit with the staging */
            qg_mqa_plan q;
            CHECK(qg__mqa_plan(2048, 65536, 32, d, 1, 0, 1, 132, &q, &why) == 0 &&
                      qg__mqa_plan_variant(&q, QG_MQA_VARIANT_DEEP4) == 0 &&
                      q.kv_stages == (d == 128 ? 5 : 8) && q.smem_bytes <= QG_IDX_SMEM_MAX,
                  "deep4 D %d: %d stages, %zu bytes", d, q.kv_stages, q.smem_bytes);
        }
        CHECK(!strcmp(qg__mqa_variant_name(QG_MQA_VARIANT_DEEP4), "deep4") &&
                  !strcmp(qg__mqa_variant_name(QG_MQA_VARIANT_PIPE), "pipe") &&
                  !strcmp(qg__mqa_variant_name(QG_MQA_VARIANT_LOCKSTEP2), "lockstep2") &&
                  !strcmp(qg__mqa_variant_name(QG_MQA_VARIANT_DEEP4L), "deep4l") &&
                  QG_MQA_VARIANT_COUNT == 4 &&
                  !qg__mqa_variant_name(QG_MQA_VARIANT_COUNT) && !qg__mqa_variant_name(-1) &&
                  qg__mqa_plan_variant(&p, QG_MQA_VARIANT_COUNT) == -1,
              "variant names");
    }
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 0, 1) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static const char *const variants[] = {"pipe", "deep4l", "lockstep2"};
    static const int Hs[] = {32, 64}, Ds[] = {32, 64, 128};
    for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; ++vi) {
        setenv("QGEMM_MQA_VARIANT", variants[vi], 1);
        for (int h = 0; h < 2; ++h)
            for (int d = 0; d < 3; ++d)
                for (int mode = 0; mode < 3; ++mode) /* plain, clean, compressed */
                    for (int bf = 0; bf < 2; ++bf) {
                        /* lockstep2 (the 2026-11-28 path): H 64 D 128 and H 32 D 32 */
                        if (vi == 2 && !((h == 1 && d == 2) || (h == 0 && d == 0))) continue;
                        qg_mqa_logits_args a = good_mqa();
                        a.heads = Hs[h], a.head_dim = Ds[d], a.ld_kv = Ds[d], a.ld_weights = Hs[h];
                        a.clean = mode == 1, a.max_seqlen_k = mode == 2 ? 512 : 0;
                        a.logits_bf16 = bf;
                        qg_kernel_info info;
                        memset(&info, 0, sizeof info);
                        qg_status st = qg_indexer_compile(sw.ctx, QG_INDEXER_MQA_LOGITS, &a, &info);
                        char what[96];
                        snprintf(what, sizeof what, "mqa %s H %d D %d %s %s", variants[vi], Hs[h],
                                 Ds[d], mode == 0 ? "plain" : mode == 1 ? "clean" : "compressed",
                                 bf ? "bf16" : "fp32");
                        qgtk_compile_verdict(&sw, what, st, &info, INDEXER_PTX, 0);
                    }
    }
    unsetenv("QGEMM_MQA_VARIANT");
    printf("    %d MQA variants, %d failures\n", sw.checked, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* ---- on the GPU ------------------------------------------------------------------ */

/* The cases are the testkit's (testkit/indexer_case.c), the same functions
 * `qgemm check --family mqa|paged-mqa|hc` runs. */

/* The GPU tests' organisation loops (QGEMM_MQA_VARIANT, QGEMM_PMQA_VARIANT). */

/* QG_TEST_*_VARIANTS="a,b" (only): whether name is in the list; no list: every name. */
static bool variant_listed(const char *only, const char *name) {
    if (!only) return true;
    char pat[40], list[256];
    snprintf(pat, sizeof pat, ",%s,", name);
    snprintf(list, sizeof list, ",%s,", only);
    return strstr(list, pat) != NULL;
}

/* knob = value, or unset for NULL (the default organisation). */
static void set_knob(const char *knob, const char *value) {
    if (value)
        setenv(knob, value, 1);
    else
        unsetenv(knob);
}

/* One element of a kept output (res->output_esz: 2 bf16, 4 fp32) as a float. */
static float kept_value(const void *out, size_t idx, int esz) {
    uint32_t bits = 0;
    if (esz == 2) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)out + idx * 2, 2);
        bits = (uint32_t)h << 16;
    } else {
        memcpy(&bits, (const uint8_t *)out + idx * 4, 4);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* A case's output (opts.keep_output) against the default organisation's,
 * same inputs, byte for byte: false, with the first differing element (its
 * index in the output, both values and their bits) in res->why, unless equal. */
static bool same_as_default(qgtk_case_result *res, const qgtk_case_result *def) {
    if (!def->output) {
        snprintf(res->why, sizeof res->why, "no default output to compare with (its case failed)");
        return false;
    }
    if (!res->output || res->output_bytes != def->output_bytes || res->output_esz != def->output_esz) {
        snprintf(res->why, sizeof res->why, "output of %zu bytes (%d a value), the default's %zu (%d)",
                 res->output ? res->output_bytes : 0, res->output_esz, def->output_bytes,
                 def->output_esz);
        return false;
    }
    if (!memcmp(res->output, def->output, res->output_bytes)) return true;
    const int esz = res->output_esz;
    const uint8_t *g = res->output, *w = def->output;
    size_t i = 0;
    while (!memcmp(g + i * esz, w + i * esz, (size_t)esz)) i++; /* the buffers differ: it stops */
    const float got = kept_value(res->output, i, esz), want = kept_value(def->output, i, esz);
    uint32_t gb = 0, wb = 0;
    memcpy(&gb, g + i * esz, (size_t)esz); /* (little-endian: the element's bits) */
    memcpy(&wb, w + i * esz, (size_t)esz);
    snprintf(res->why, sizeof res->why,
             "not bitwise the default's: element %zu of %zu is %.9g (0x%0*x), the default's %.9g "
             "(0x%0*x)", i, res->output_bytes / (size_t)esz, got, 2 * esz, gb, want, 2 * esz, wb);
    return false;
}

/* The GPU tests' byte comparison on the CPU: equal outputs pass, a differing
 * element is named with both values, a missing default fails. */
TEST(indexer_same_as_default) {
    uint16_t a[5] = {0x3f80, 0x4000, 0xffff, 0xc040, 0x0000}, b[5];
    memcpy(b, a, sizeof a);
    qgtk_case_result def = {.output = a, .output_bytes = sizeof a, .output_esz = 2}, res = def;
    res.output = b;
    CHECK(same_as_default(&res, &def), "equal outputs: %s", res.why);
    b[3] = 0xc041;
    CHECK(!same_as_default(&res, &def), "a differing element passed");
    CHECK(strstr(res.why, "element 3 of 5 is -3.015625 (0xc041), the default's -3 (0xc040)"), "%s",
          res.why);
    float f[2] = {1.0f, 2.0f}, g[2] = {1.0f, 2.5f};
    qgtk_case_result fd = {.output = f, .output_bytes = sizeof f, .output_esz = 4}, fr = fd;
    fr.output = g;
    CHECK(!same_as_default(&fr, &fd) && strstr(fr.why, "element 1 of 2 is 2.5 (0x40200000), the "
                                                        "default's 2 (0x40000000)"), "%s", fr.why);
    qgtk_case_result none = {0};
    CHECK(!same_as_default(&res, &none) && strstr(res.why, "no default output"), "%s", res.why);
    PASS();
}

TEST(gpu_mqa_logits) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    static const qgtk_mqa_case cases[] = {
        {37, 300, 32, 64, 0, 1, 0},   {128, 1000, 64, 128, 1, 0, 0}, {5, 77, 32, 32, 0, 2, 0},
        {256, 2048, 64, 32, 1, 1, 0}, {3, 129, 64, 64, 1, 2, 0},     {1, 1, 32, 128, 0, 1, 0},
        {300, 513, 64, 128, 0, 2, 0}, {64, 2048, 32, 128, 1, 1, 0},  {99, 257, 64, 64, 0, 0, 0},
        /* many q blocks a CTA (600 and 500 on <= 132 SMs): the q ring's stages and phases wrap
         * several times (deep4 stages each q block's weights and ranges in it) */
        {1200, 200, 64, 32, 0, 1, 0}, {2000, 150, 32, 64, 1, 2, 0}};
    int failures = 0;
    /* every organisation (QGEMM_MQA_VARIANT; unset = the default, deep4). pipe,
     * deep4 and deep4l compute the same sums in the same order: each case's output (all its
     * bytes, poison included, same inputs; opts.keep_output) must equal the default's byte
     * for byte; lockstep2 (another head-sum order) is checked against the reference
     * only. QG_TEST_MQA_VARIANTS="a,b": the default and these only (a short GPU run). */
    static const char *const variants[] = {NULL, "pipe", "deep4l", "lockstep2"};
    static const bool bitwise[] = {true, true, true, false};
    static qgtk_case_result defaults[sizeof cases / sizeof cases[0]]; /* (their outputs) */
    const char *only = getenv("QG_TEST_MQA_VARIANTS");
    for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; ++vi) {
        if (vi && !variant_listed(only, variants[vi])) continue;
        set_knob("QGEMM_MQA_VARIANT", variants[vi]);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            const qgtk_mqa_case *c = &cases[i];
            const qgtk_case_opts opts = {.seed = 50 + i, .keep_output = bitwise[vi]};
            qgtk_case_result res;
            bool ok = qgtk_mqa_case_run(ctx, stream, c, &opts, &res);
            if (ok && vi && bitwise[vi]) ok = same_as_default(&res, &defaults[i]);
            printf("    %s mqa [%s] sq %d skv %d H %d D %d %s %s: diff %.2g %s\n",
                   ok ? "ok  " : "FAIL", variants[vi] ? variants[vi] : "default", c->seq_len,
                   c->seq_len_kv, c->heads, c->head_dim, c->bf16 ? "bf16" : "fp32",
                   c->mode == 0 ? "plain" : c->mode == 1 ? "clean" : "compressed", res.diff,
                   ok ? "" : res.why);
            failures += !ok;
            if (vi == 0) defaults[i] = res; /* keeps its output */
            else free(res.output);
        }
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) free(defaults[i].output);
    unsetenv("QGEMM_MQA_VARIANT");
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d MQA cases failed", failures);
    PASS();
}

TEST(gpu_paged_mqa_logits) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    /* every other case also captured in a CUDA graph and replayed with new lengths */
    static const qgtk_paged_case cases[] = {
        {1, 1, 32, 128, 0, 1, 100, 1},  {7, 2, 64, 128, 1, 0, 300, 0},  {33, 1, 64, 64, 0, 0, 70, 1},
        {16, 2, 32, 32, 1, 1, 500, 0},  {300, 1, 64, 128, 0, 1, 64, 1}, {5, 2, 64, 64, 0, 1, 2000, 0},
        {32, 2, 64, 128, 1, 1, 1000, 1}, {64, 2, 64, 128, 0, 0, 900, 0}};
    int failures = 0;
    /* every organisation (QGEMM_PMQA_VARIANT; unset = the default, split4r112u;
     * dual2 and shared2 named: every width; the default's ring at 20 and 8 stages too). All compute the same sums in the same
     * order: each case's output (all its bytes, poison included, same inputs;
     * opts.keep_output) must equal the default's byte for byte. */
    static const char *const variants[] = {NULL, "shared2", "dual2", "split4", "split4r112w",
                                           "split4r112x", "split4r112p", "split4r112u",
                                           "split4r112u:s20", "split4r112u:s8"};
    static qgtk_case_result defaults[sizeof cases / sizeof cases[0]]; /* (their outputs) */
    /* QG_TEST_PMQA_VARIANTS="a,b": the default and these only (a short GPU run) */
    const char *only = getenv("QG_TEST_PMQA_VARIANTS");
    for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; ++vi) {
        if (vi && !variant_listed(only, variants[vi])) continue;
        set_knob("QGEMM_PMQA_VARIANT", variants[vi]);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            const qgtk_paged_case *c = &cases[i];
            const qgtk_case_opts opts = {.seed = 51 + i, .keep_output = true};
            qgtk_case_result res;
            bool ok = qgtk_paged_case_run(ctx, stream, c, &opts, &res);
            if (ok && vi) ok = same_as_default(&res, &defaults[i]);
            printf("    %s paged [%s] bsz %d next_n %d H %d D %d L %d %s%s%s: diff %.2g %s\n",
                   ok ? "ok  " : "FAIL", variants[vi] ? variants[vi] : "default", c->batch,
                   c->next_n, c->heads, c->head_dim, c->avg_len, c->bf16 ? "bf16" : "fp32",
                   c->clean ? " clean" : "", c->graph ? " +graph" : "", res.diff,
                   ok ? "" : res.why);
            failures += !ok;
            if (vi == 0) defaults[i] = res; /* keeps its output */
            else free(res.output);
        }
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) free(defaults[i].output);
    unsetenv("QGEMM_PMQA_VARIANT");
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d paged cases failed", failures);
    PASS();
}

TEST(gpu_hc_prenorm) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    static const qgtk_hc_case cases[] = {{1, 24, 7168, 1},  {13, 32, 1024, 16}, {77, 16, 64, 1},
                                         {300, 8, 640, 3},  {1025, 24, 4096, 1}, {129, 32, 2048, 4},
                                         {512, 24, 28672, 0}, {4096, 24, 2048, 1},
                                         {200, 16, 8192, 64}};
    int failures = 0;
    /* every rounding scheme that meets DeepGEMM's criterion (QGEMM_HC_MODE;
     * unset = the default), each case held to the TF32-rounded reference */
    /* and the planner options (QGEMM_HC_VARIANT, "mode/variant") */
    static const char *const modes[] = {NULL,           "inplace",        "rounder:2",
                                        "split",        "split:2",        "rounder/acc2",
                                        "rounder/acc4", "rounder:2/acc4+fit", "inplace/acc4",
                                        "rounder/fit",  "rounder/acc2+fit+w2",
                                        "rounder/acc4+fit+w1", "rounder:2/acc8+fit",
                                        "rounder/acc8+fit+k2", "rounder/acc4+fit+cw4",
                                        "rounder/acc4+fit+cw3", "split/fit+cw4", "rounder/acc4+fit",
                                        "split:1"};
    /* The converter-warp options (cw2..cw4) only spread B's rounding over
     * more warps: the plan's sums are the same, so the default's cases
     * (acc4+fit+cw4, rounder) must come out bit for bit the same through
     * rounder/acc4+fit+cwN and through rounder/acc4+fit (one converter warp,
     * the default before 2026-11-29). QG_TEST_HC_VARIANTS="a,b": the default
     * and these modes only (a short GPU run). */
    static qgtk_case_result defaults[sizeof cases / sizeof cases[0]]; /* (their d and sqr_sum bytes) */
    const char *only = getenv("QG_TEST_HC_VARIANTS");
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; ++mi) {
        if (mi && !variant_listed(only, modes[mi])) continue;
        const bool bitwise = mi && (!strncmp(modes[mi], "rounder/acc4+fit+cw", 19) ||
                                    !strcmp(modes[mi], "rounder/acc4+fit"));
        unsetenv("QGEMM_HC_VARIANT");
        if (modes[mi]) {
            char mode[32];
            snprintf(mode, sizeof mode, "%s", modes[mi]);
            char *slash = strchr(mode, '/');
            if (slash) {
                *slash = '\0';
                setenv("QGEMM_HC_VARIANT", slash + 1, 1);
            }
            setenv("QGEMM_HC_MODE", mode, 1);
        } else {
            unsetenv("QGEMM_HC_MODE");
        }
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            const qgtk_hc_case *c = &cases[i];
            const qgtk_case_opts opts = {.seed = 52 + i, .keep_output = mi == 0 || bitwise};
            qgtk_case_result res;
            bool ok = qgtk_hc_case_run(ctx, stream, c, &opts, &res);
            if (ok && bitwise) ok = same_as_default(&res, &defaults[i]);
            printf("    %s hc %dx%dx%d splits %d [%s]: diff %.2g %s\n", ok ? "ok  " : "FAIL", c->m,
                   c->n, c->k, c->splits, modes[mi] ? modes[mi] : "default", res.diff,
                   ok ? "" : res.why);
            failures += !ok;
            if (mi == 0) defaults[i] = res; /* keeps its output */
            else free(res.output);
        }
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) free(defaults[i].output);
    unsetenv("QGEMM_HC_MODE");
    unsetenv("QGEMM_HC_VARIANT");
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d HC cases failed", failures);
    PASS();
}
