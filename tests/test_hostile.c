/*
 * test_hostile.c -- the public argument checks under extreme values
 * (issue 27): bounds are checked before anything is multiplied, one rule for
 * the masked expected_m, precise errors for forced configurations on an
 * offline context, the testkit's reference under huge n and k. CPU only.
 */
#include "qg_test.h"
#include "qgtk.h"

#include <limits.h>
#include <stdint.h>

#include "fake_args.h"
#include "hostile_configs.h"

static qg_gemm_args args_ok(void) { return fake_good_args(); }

static qg_context *offline(void) {
    qg_context *ctx = NULL;
    return qg_context_create_offline(&ctx, NULL) == QG_SUCCESS ? ctx : NULL;
}

/* A leading dimension past 2^36 is "too large" whatever its alignment: the
 * bound is checked before ld * element size is formed (which overflows). */
TEST(hostile_ld_bound_before_multiply) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    const int64_t huge[] = {(1ll << 62) + 1, INT64_MAX, INT64_MAX - 1, (1ll << 36) + 1};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        for (int f = 0; f < 4; f++) {
            qg_gemm_args a = args_ok();
            const char *name = f == 0 ? "lda" : f == 1 ? "ldb" : f == 2 ? "ldd" : "sfa_ld";
            *(f == 0 ? &a.lda : f == 1 ? &a.ldb : f == 2 ? &a.ldd : &a.sfa_ld) = huge[i];
            qg_status st = qg_fp8_gemm_nt(ctx, &a, NULL, NULL);
            CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), name) &&
                      strstr(qg_last_error(), "exceeds 2^36"),
                  "%s = %lld: %s (%s)", name, (long long)huge[i], qg_status_string(st),
                  qg_last_error());
        }
    }
    qg_context_destroy(ctx);
    PASS();
}

TEST(hostile_sfa_ld_extremes) {
    CHECK(qg_sfa_ld(INT64_MIN) == 0 && qg_sfa_ld(-1) == 0 && qg_sfa_ld(0) == 0, "negative m");
    CHECK(qg_sfa_ld(5) == 8 && qg_sfa_ld(8) == 8, "small m");
    CHECK(qg_sfa_ld(INT64_MAX - 3) == INT64_MAX - 3, "largest m with a multiple of 4: %lld",
          (long long)qg_sfa_ld(INT64_MAX - 3));
    for (int64_t m = INT64_MAX - 2; m > 0 && m <= INT64_MAX - 0; m++) {
        CHECK(qg_sfa_ld(m) == 0, "m = %lld: no multiple of 4 >= m fits in int64, got %lld",
              (long long)m, (long long)qg_sfa_ld(m));
        if (m == INT64_MAX) break;
    }
    PASS();
}

/* One rule for masked expected_m > M_max: the selection, qg_compile and the
 * masked GEMM call all reject it, with the same message. */
TEST(hostile_masked_expected_m_one_rule) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    qg_gemm_args a = args_ok();
    a.num_groups = 4;
    a.expected_m = 101;
    qg_status st = qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL);
    char gemm_msg[512];
    snprintf(gemm_msg, sizeof gemm_msg, "%s", qg_last_error());
    CHECK(st == QG_ERROR_INVALID_ARGUMENT, "masked GEMM with expected_m 101 > M_max 100: %s (%s)",
          qg_status_string(st), gemm_msg);
    qg_problem p = {QG_GEMM_GROUPED_MASKED, 100, 576, 400, 4, 101, 0};
    qg_config cfg;
    st = qg_select_config(ctx, &p, &cfg);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT, "qg_select_config: %s", qg_status_string(st));
    const char *sel = strchr(qg_last_error(), ':'), *gem = strchr(gemm_msg, ':');
    CHECK(sel && gem && strcmp(sel, gem) == 0, "two messages for one rule: '%s' vs '%s'",
          qg_last_error(), gemm_msg);
    st = qg_compile(ctx, &p, NULL, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strchr(qg_last_error(), ':') &&
              strcmp(strchr(qg_last_error(), ':'), gem) == 0,
          "qg_compile: %s (%s)", qg_status_string(st), qg_last_error());
    /* expected_m == M_max and 0 (= M_max) remain valid. */
    a.expected_m = 100;
    CHECK(qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL) == QG_ERROR_NO_DEVICE, "%s",
          qg_last_error());
    a.expected_m = 0;
    CHECK(qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL) == QG_ERROR_NO_DEVICE, "%s",
          qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* A forced configuration on an offline context: an illegal one gets the
 * configuration's own error (not "offline"); a legal one gets NO_DEVICE
 * with a message that says the configuration was checked. */
TEST(hostile_forced_config_offline_precise) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    qg_gemm_args a = args_ok();
    qg_config bad = {.block_m = 128, .block_n = 200};
    qg_status st = qg_fp8_gemm_nt(ctx, &a, &bad, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "block_n") &&
              strstr(qg_last_error(), "qg_fp8_gemm_nt"),
          "illegal forced config offline: %s (%s)", qg_status_string(st), qg_last_error());
    qg_config stages = {.block_m = 128, .block_n = 128, .num_stages = 40};
    st = qg_fp8_gemm_nt(ctx, &a, &stages, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "stages"),
          "40 stages offline: %s (%s)", qg_status_string(st), qg_last_error());
    qg_config good = {.block_m = 128, .block_n = 64};
    st = qg_fp8_gemm_nt(ctx, &a, &good, NULL);
    CHECK(st == QG_ERROR_NO_DEVICE && strstr(qg_last_error(), "offline"),
          "legal forced config offline: %s (%s)", qg_status_string(st), qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* The configurations the GPU test forces as illegal (hostile_configs.h) are
 * still refused, with the message it looks for, on the problems it forces
 * them on (test_hostile_gpu.c: setup_kind, setup_wgrad). */
TEST(hostile_illegal_configs_still_refused) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    const qg_problem probs[] = {
        {QG_GEMM_DENSE, 128, 256, 256, 1, 0, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 256, 256, 256, 2, 0, 0},
        {QG_GEMM_GROUPED_MASKED, 128, 256, 256, 2, 0, 0},
        {QG_GEMM_GROUPED_PSUM, 256, 256, 256, 2, 0, 0},
        {QG_GEMM_WGRAD, 128, 256, 256, 1, 0, 1},
    };
    for (size_t i = 0; i < sizeof probs / sizeof probs[0]; i++) {
        const qg_illegal_config *ill = &qg_illegal_configs[probs[i].kind];
        qg_config c = ill->cfg;
        const qg_status st = qg_complete_config(ctx, &probs[i], &c);
        CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), ill->needle),
              "kind %d, %dx%d forced: %s (%s), want QG_ERROR_UNSUPPORTED naming '%s'",
              (int)probs[i].kind, ill->cfg.block_m, ill->cfg.block_n, qg_status_string(st),
              qg_last_error(), ill->needle);
    }
    qg_context_destroy(ctx);
    PASS();
}

/* The testkit's CPU reference: n and k near INT_MAX are refused before
 * (k + 127) / 128 or row * ld is formed. */
TEST(hostile_reference_huge_n_k) {
    static const uint8_t byte[16];
    static const float scale[4] = {1, 1, 1, 1};
    static double ref[4];
    qg_gemm_args a = {0};
    a.m = 1, a.n = 8, a.k = 16, a.num_groups = 1;
    a.a = byte, a.b = byte, a.sfa = scale, a.sfb = scale;
    a.lda = a.ldb = 16, a.sfa_ld = 4, a.ldd = 8;
    qg_gemm_args h = a;
    h.k = INT_MAX - 15, h.lda = h.ldb = h.k;
    qg_status st = qgtk_reference_gemm(QG_GEMM_DENSE, &h, ref);
    CHECK(st != QG_SUCCESS && strstr(qg_last_error(), "k"), "k = %d: %s (%s)", h.k,
          qg_status_string(st), qg_last_error());
    h = a;
    h.n = INT_MAX;
    st = qgtk_reference_gemm(QG_GEMM_DENSE, &h, ref);
    CHECK(st != QG_SUCCESS && strstr(qg_last_error(), "n"), "n = %d: %s (%s)", h.n,
          qg_status_string(st), qg_last_error());
    h = a;
    h.lda = INT64_MAX;
    st = qgtk_reference_gemm(QG_GEMM_DENSE, &h, ref);
    CHECK(st != QG_SUCCESS && strstr(qg_last_error(), "lda"), "lda = INT64_MAX: %s (%s)",
          qg_status_string(st), qg_last_error());
    h = a;
    h.sfa_ld = INT64_MAX - 3;
    st = qgtk_reference_gemm(QG_GEMM_DENSE, &h, ref);
    CHECK(st != QG_SUCCESS && strstr(qg_last_error(), "sfa_ld"), "sfa_ld huge: %s (%s)",
          qg_status_string(st), qg_last_error());
    PASS();
}

/* Found by make fuzz (fuzz/fuzz_args.c): a problem with more output tiles
 * than an int holds overflowed the heuristic's wave count (fp8_config.c, UBSan:
 * "-2147483648 - 1"). Problems whose D has 2^40 elements or more (2 TiB of
 * bf16, more than any GPU holds) are refused up front. */
TEST(hostile_problem_too_large_for_any_gpu) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    const qg_problem big[] = {
        {QG_GEMM_DENSE, 1 << 30, 2147483640, 128, 1, 0, 0},
        {QG_GEMM_GROUPED_MASKED, 1 << 20, 1 << 20, 128, 1024, 0, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 1 << 30, 1 << 20, 128, 2, 0, 0},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        qg_config cfg;
        qg_status st = qg_select_config(ctx, &big[i], &cfg);
        CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "2^40"),
              "problem %zu: %s (%s)", i, qg_status_string(st), qg_last_error());
    }
    /* The largest DeepSeek-V3-like problems stay legal. */
    const qg_problem ok = {QG_GEMM_DENSE, 1 << 20, 1 << 19, 7168, 1, 0, 0};
    qg_config cfg;
    CHECK(qg_select_config(ctx, &ok, &cfg) == QG_SUCCESS, "%s", qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* The k-grouped GEMM's own arguments (offline: every check before the
 * device's): the group sizes, their sum, multicast; then the offline refusal
 * once everything is valid. */
TEST(hostile_k_grouped_arguments) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    static const int32_t ks_ok[3] = {256, 0, 128};
    static const int32_t ks_bad[3] = {256, 100, 128}, ks_neg[3] = {256, -128, 128};
    static const struct { const int32_t *ks; int k, groups; qg_status want; const char *msg; } cases[] = {
        {NULL, 384, 3, QG_ERROR_INVALID_ARGUMENT, "args->ks is NULL"},
        {ks_bad, 484, 3, QG_ERROR_INVALID_ARGUMENT, "args->ks[1] must be a multiple of 128"},
        {ks_neg, 256, 3, QG_ERROR_INVALID_ARGUMENT, "args->ks[1] must be a multiple of 128"},
        {ks_ok, 512, 3, QG_ERROR_INVALID_ARGUMENT, "args->k must be the sum of args->ks (384)"},
        {ks_ok, 384, 0, QG_ERROR_INVALID_ARGUMENT, "num_groups must be in [1, 4096]"},
        {ks_ok, 384, 3, QG_ERROR_NO_DEVICE, "offline"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qg_gemm_args a = args_ok();
        a.ks = cases[i].ks;
        a.k = cases[i].k;
        a.num_groups = cases[i].groups;
        a.sfb_ld = a.n; /* sfb [k/128][>= n] */
        a.ldd = a.n;    /* FP32 rows: n * 4 bytes */
        qg_status st = qg_k_grouped_fp8_gemm_nt_contiguous(ctx, &a, NULL, NULL);
        CHECK(st == cases[i].want && strstr(qg_last_error(), cases[i].msg),
              "case %zu: want %s '%s', got %s (%s)", i, qg_status_string(cases[i].want),
              cases[i].msg, qg_status_string(st), qg_last_error());
    }
    /* a forced configuration: no multicast in this kind */
    qg_gemm_args a = args_ok();
    a.ks = ks_ok, a.k = 384, a.num_groups = 3, a.sfb_ld = a.n, a.ldd = a.n;
    qg_config cfg = {.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_A};
    qg_status st = qg_k_grouped_fp8_gemm_nt_contiguous(ctx, &a, &cfg, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "without multicast"), "%s (%s)",
          qg_status_string(st), qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* A forced multicast or split-K configuration needs a whole 2-CTA cluster in
 * the context's grid: with qg_context_set_num_sms(ctx, 1) it is refused by
 * every call that takes it, naming the limit (it used to complete with a grid
 * of 0 CTAs, which the launch then refused as a driver error). */
TEST(hostile_forced_cluster_needs_two_sms) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    CHECK(qg_context_set_num_sms(ctx, 1) == QG_SUCCESS, "%s", qg_last_error());
    const qg_problem p = {QG_GEMM_DENSE, 256, 512, 512, 1, 0, 0};
    const qg_config forced[] = {{.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_A},
                                {.block_m = 64, .block_n = 64, .split_k = 2}};
    for (size_t i = 0; i < 2; i++) {
        qg_config c = forced[i];
        qg_status st = qg_complete_config(ctx, &p, &c);
        CHECK(st == QG_ERROR_UNSUPPORTED &&
                  strstr(qg_last_error(), "qg_complete_config: config: ") &&
                  strstr(qg_last_error(), "clusters of 2 CTAs") &&
                  strstr(qg_last_error(), "the context uses 1 SM (qg_context_set_num_sms)"),
              "forced %zu with 1 SM: %s (%s)", i, qg_status_string(st), qg_last_error());
        st = qg_compile(ctx, &p, &forced[i], NULL);
        CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "qg_compile: config: "),
              "qg_compile, forced %zu with 1 SM: %s (%s)", i, qg_status_string(st), qg_last_error());
        qg_gemm_args a = args_ok();
        st = qg_fp8_gemm_nt(ctx, &a, &forced[i], NULL);
        CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "qg_fp8_gemm_nt: config: "),
              "GEMM, forced %zu with 1 SM: %s (%s)", i, qg_status_string(st), qg_last_error());
    }
    /* with 2 SMs both are legal again, and the heuristic never picks a cluster for 1 */
    CHECK(qg_context_set_num_sms(ctx, 2) == QG_SUCCESS, "%s", qg_last_error());
    for (size_t i = 0; i < 2; i++) {
        qg_config c = forced[i];
        CHECK(qg_complete_config(ctx, &p, &c) == QG_SUCCESS && c.num_sms == 2, "forced %zu, 2 SMs: %s",
              i, qg_last_error());
    }
    CHECK(qg_context_set_num_sms(ctx, 1) == QG_SUCCESS, "%s", qg_last_error());
    const qg_problem small = {QG_GEMM_DENSE, 64, 2112, 7168, 1, 0, 0};
    qg_config c;
    CHECK(qg_select_config(ctx, &small, &c) == QG_SUCCESS && c.multicast == QG_MULTICAST_NONE &&
              c.split_k <= 1 && c.num_sms == 1,
          "heuristic with 1 SM: %s (mc %d split %d grid %d)", qg_last_error(), (int)c.multicast,
          c.split_k, c.num_sms);
    qg_context_destroy(ctx);
    PASS();
}

/* The calls that write nothing (m == 0) or write D without a kernel (every
 * k-grouped group empty) check a forced configuration first, as the others
 * do: an illegal one is refused, with the call's name. */
TEST(hostile_forced_config_checked_before_shortcuts) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    qg_gemm_args a = args_ok();
    a.m = 0;
    qg_config bad = {.block_m = 96, .block_n = 128};
    qg_status st = qg_fp8_gemm_nt(ctx, &a, &bad, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "qg_fp8_gemm_nt: config: block_m"),
          "m 0, block_m 96: %s (%s)", qg_status_string(st), qg_last_error());
    static const int32_t ks_empty[2] = {0, 0};
    a = args_ok();
    a.ks = ks_empty, a.k = 0, a.num_groups = 2, a.sfb_ld = a.n, a.ldd = a.n;
    qg_config mc = {.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_A};
    st = qg_k_grouped_fp8_gemm_nt_contiguous(ctx, &a, &mc, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "without multicast"),
          "k-grouped, every group empty, multicast A: %s (%s)", qg_status_string(st),
          qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* Masked M_max = 0 is checked against the expected_m given: 0 takes only 0,
 * and the message names m = 0 (it named the 1 that M = 0 is planned as). */
TEST(hostile_masked_m_zero_expected_m) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    qg_gemm_args a = args_ok();
    a.m = 0, a.num_groups = 4, a.expected_m = 5;
    qg_status st = qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "in [0, m = 0], got 5"),
          "m 0, expected_m 5: %s (%s)", qg_status_string(st), qg_last_error());
    a.expected_m = 1;
    st = qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "in [0, m = 0], got 1"),
          "m 0, expected_m 1: %s (%s)", qg_status_string(st), qg_last_error());
    a.expected_m = 0;
    st = qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL);
    CHECK(st == QG_ERROR_NO_DEVICE, "m 0, expected_m 0: %s (%s)", qg_status_string(st),
          qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* A K whose 1D2D scale buffers outgrow shared memory by themselves: the
 * refusal says so (it blamed the block size alone), with the call's name. */
TEST(hostile_huge_k_names_the_scale_buffers) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    const qg_problem p = {QG_GEMM_DENSE, 256, 512, 1 << 22, 1, 0, 0};
    qg_config c;
    qg_status st = qg_select_config(ctx, &p, &c);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "qg_select_config: ") &&
              strstr(qg_last_error(), "its B scales for K 4194304 take"),
          "K 2^22: %s (%s)", qg_status_string(st), qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* A negative n or k is a bad argument, as a negative m is (all three used to
 * differ: m INVALID_ARGUMENT, n and k UNSUPPORTED), in the GEMM calls and in
 * the problem calls, and the message names the field (issue 53). */
TEST(hostile_negative_sizes_one_code) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    for (int f = 0; f < 3; f++) {
        const char *name = f == 0 ? "m" : f == 1 ? "n" : "k";
        qg_gemm_args a = args_ok();
        *(f == 0 ? &a.m : f == 1 ? &a.n : &a.k) = f == 0 ? -1 : f == 1 ? -8 : -16;
        qg_status st = qg_fp8_gemm_nt(ctx, &a, NULL, NULL);
        char want[32];
        snprintf(want, sizeof want, "args->%s must be >= 0", name);
        CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), want),
              "gemm, negative %s: %s (%s)", name, qg_status_string(st), qg_last_error());
        qg_problem p = {QG_GEMM_DENSE, 128, 256, 512, 1, 0, 0};
        *(f == 0 ? &p.m : f == 1 ? &p.n : &p.k) = -16;
        qg_config cfg;
        st = qg_select_config(ctx, &p, &cfg);
        snprintf(want, sizeof want, "problem->%s must be >= 0", name);
        CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), want),
              "select, negative %s: %s (%s)", name, qg_status_string(st), qg_last_error());
    }
    qg_context_destroy(ctx);
    PASS();
}

/* D over an input is refused before anything runs, naming both arguments
 * (issue 53: only C vs D was checked). */
TEST(hostile_d_aliasing_an_input_is_refused) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    const char *names[] = {"a", "b", "sfa", "sfb"};
    for (int f = 0; f < 4; f++) {
        qg_gemm_args a = args_ok();
        a.d = (void *)(f == 0 ? a.a : f == 1 ? a.b : f == 2 ? (const void *)a.sfa : (const void *)a.sfb);
        qg_status st = qg_fp8_gemm_nt(ctx, &a, NULL, NULL);
        char want[32];
        snprintf(want, sizeof want, "args->%s", names[f]);
        CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), want) &&
                  strstr(qg_last_error(), "args->d") && strstr(qg_last_error(), "overlap"),
              "d = %s: %s (%s)", names[f], qg_status_string(st), qg_last_error());
    }
    qg_context_destroy(ctx);
    PASS();
}
