/*
 * test_bf16.c -- the BF16 GEMM family (src/bf16_gemm.c): argument
 * validation on an offline context, every kernel variant the planner picks
 * compiled offline (no spill, no stack frame, no warning), and on a GPU the
 * accuracy of every layout and kind against an fp64 product of the bf16
 * inputs (fresh random inputs, D poisoned first, shapes off the tiles,
 * padding rows left untouched), and bitwise determinism.
 *
 * Pass rule: diff < 1e-5 (docs/DESIGN.md §7's metric), no NaN, every output
 * element written, every element the call must not write still poisoned.
 */
#include "internal.h"
#include "bf16_plan.h"
#include "gpu_ctx.h"
#include "qg_test.h"
#include "qgtk.h"
#include "qgtk_cases.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE(x) ((void *)(uintptr_t)(x))

static qg_bf16_gemm_args good_args(void) {
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = 100, a.n = 576, a.k = 400, a.num_groups = 1;
    a.a = FAKE(0x1000000), a.lda = 400;
    a.b = FAKE(0x3000000), a.ldb = 400;
    a.d = FAKE(0x5000000), a.ldd = 576;
    a.m_indices = FAKE(0x6000000);
    a.masked_m = FAKE(0x7000000);
    a.group_ends = FAKE(0x7100000);
    return a;
}

static qg_context *offline(void) {
    qg_context *ctx = NULL;
    return qg_context_create_offline(&ctx, NULL) == QG_SUCCESS ? ctx : NULL;
}

/* Each bad field is refused with the class of error and a message naming
 * it; a good call on an offline context says it cannot run. */
TEST(bf16_validation) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    qg_bf16_gemm_args a = good_args();
    qg_status st = qg_bf16_gemm(ctx, &a, NULL);
    CHECK(st == QG_ERROR_NO_DEVICE, "good args offline: %s (%s)", qg_status_string(st),
          qg_last_error());
    /* one edit of the good arguments per case: the status and the words expected */
#define CASE(edit_stmt, want_text, want_status)                                                     \
    do {                                                                                            \
        qg_bf16_gemm_args x = good_args();                                                          \
        edit_stmt;                                                                                  \
        qg_status s = qg_bf16_gemm(ctx, &x, NULL);                                                  \
        CHECK(s == (want_status) && strstr(qg_last_error(), want_text), "%s: %s (%s)", #edit_stmt,  \
              qg_status_string(s), qg_last_error());                                                \
    } while (0)
    CASE(x.m = -1, "args->m must be >= 0", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.n = -8, "args->n must be >= 0", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.k = -64, "args->k must be >= 0", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.a_major = (qg_major)2, "args->a_major", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.b_major = (qg_major)-1, "args->b_major", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.d_fp32 = 2, "args->d_fp32 must be 0 or 1", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.num_groups = 3, "args->num_groups must be 1", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.n = 100, "n must be a multiple of 8", QG_ERROR_UNSUPPORTED);
    CASE(x.lda = 399, "args->lda must be >= k", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.lda = 404, "args->lda * 2 bytes must be a multiple of 16", QG_ERROR_INVALID_ARGUMENT);
    CASE((x.a_major = QG_MAJOR_MN, x.lda = 96), "args->lda must be >= m", QG_ERROR_INVALID_ARGUMENT);
    CASE((x.b_major = QG_MAJOR_MN, x.ldb = 568), "args->ldb must be >= n", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.ldd = 570, "args->ldd must be >= n", QG_ERROR_INVALID_ARGUMENT);
    CASE((x.d_fp32 = 1, x.ldd = 578), "args->ldd * 4 bytes", QG_ERROR_INVALID_ARGUMENT);
    CASE((x.c = FAKE(0x9000000), x.ldc = 570), "args->ldc must be >= n", QG_ERROR_INVALID_ARGUMENT);
    CASE((x.d_fp32 = 1, x.c = x.d, x.ldc = 600), "args->ldc (600) is not args->ldd",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(x.a = NULL, "args->a is NULL", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.b = FAKE(0x3000008), "args->b (0x3000008) must be 16-byte aligned",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(x.d = (void *)x.a, "overlaps args->a", QG_ERROR_INVALID_ARGUMENT);
    CASE(x.d = (void *)((const char *)x.b + 64), "overlaps args->b", QG_ERROR_INVALID_ARGUMENT);
    CASE((x.d_fp32 = 1, x.c = (const float *)((char *)x.d + 16), x.ldc = 576), "overlaps args->c",
         QG_ERROR_INVALID_ARGUMENT);
#undef CASE
    /* the grouped entry points' own rules */
    qg_bf16_gemm_args g = good_args();
    g.num_groups = 4;
    g.a_major = QG_MAJOR_MN;
    g.lda = 128;
    st = qg_m_grouped_bf16_gemm_contiguous(ctx, &g, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "a_major must be QG_MAJOR_K"),
          "contiguous, MN-major A: %s (%s)", qg_status_string(st), qg_last_error());
    g = good_args();
    g.num_groups = 4;
    g.b_major = QG_MAJOR_MN;
    g.ldb = 576;
    st = qg_m_grouped_bf16_gemm_masked(ctx, &g, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "b_major must be QG_MAJOR_K"),
          "masked, MN-major B: %s (%s)", qg_status_string(st), qg_last_error());
    g = good_args();
    g.num_groups = 4;
    g.expected_m = 101;
    st = qg_m_grouped_bf16_gemm_masked(ctx, &g, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "expected_m must be in [0"),
          "masked, expected_m > m: %s (%s)", qg_status_string(st), qg_last_error());
    g = good_args();
    g.num_groups = 4;
    g.masked_m = NULL;
    st = qg_m_grouped_bf16_gemm_masked(ctx, &g, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "args->masked_m is NULL"),
          "masked, no masked_m: %s (%s)", qg_status_string(st), qg_last_error());
    g = good_args();
    g.num_groups = 4;
    g.c = FAKE(0x9000000);
    g.d_fp32 = 1;
    st = qg_m_grouped_bf16_gemm_contiguous(ctx, &g, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED, "contiguous with C: %s (%s)", qg_status_string(st),
          qg_last_error());
    /* k-grouped: TN only, FP32 D, ks present, multiples of 64 summing to k */
    int32_t ks[3] = {128, 0, 256};
    qg_bf16_gemm_args kg = good_args();
    kg.num_groups = 3, kg.k = 384, kg.ks = ks, kg.d_fp32 = 1;
    kg.a_major = kg.b_major = QG_MAJOR_MN, kg.lda = 104, kg.ldb = 576;
    st = qg_k_grouped_bf16_gemm(ctx, &kg, NULL);
    CHECK(st == QG_ERROR_NO_DEVICE, "good k-grouped offline: %s (%s)", qg_status_string(st),
          qg_last_error());
    ks[1] = 32;
    kg.k = 416;
    st = qg_k_grouped_bf16_gemm(ctx, &kg, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "args->ks[1] must be a multiple of 64"),
          "ks[1] = 32: %s (%s)", qg_status_string(st), qg_last_error());
    ks[1] = 0;
    kg.k = 512;
    st = qg_k_grouped_bf16_gemm(ctx, &kg, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "sum of args->ks (384)"),
          "k not the sum: %s (%s)", qg_status_string(st), qg_last_error());
    kg.k = 384;
    kg.d_fp32 = 0;
    st = qg_k_grouped_bf16_gemm(ctx, &kg, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "d_fp32 must be 1"),
          "k-grouped bf16 D: %s (%s)", qg_status_string(st), qg_last_error());
    kg.d_fp32 = 1;
    kg.a_major = QG_MAJOR_K, kg.lda = 384;
    st = qg_k_grouped_bf16_gemm(ctx, &kg, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "QG_MAJOR_MN"),
          "k-grouped K-major A: %s (%s)", qg_status_string(st), qg_last_error());
    /* QGEMM_BF16_PLAN: v1, v2 or a tile BMxBN[:a|:b]; anything else refused,
     * naming it; a forced tile the call cannot take fails its planning, saying
     * why (qg_bf16_compile plans offline; nothing is compiled for it) */
    static const char *plan_ok[] = {"v1", "v2", "v3", "64x48", "128x96:a", "128x64:b"};
    for (size_t i = 0; i < sizeof plan_ok / sizeof plan_ok[0]; ++i) {
        setenv("QGEMM_BF16_PLAN", plan_ok[i], 1);
        st = qg_bf16_gemm(ctx, &a, NULL);
        CHECK(st == QG_ERROR_NO_DEVICE, "QGEMM_BF16_PLAN=%s: %s (%s)", plan_ok[i],
              qg_status_string(st), qg_last_error());
    }
    static const char *plan_bad[] = {"v4", "v0", "128", "128x", "x64", "128x64:", "128x64:c", "128x64a",
                                     "0x64", "128x64:ab"};
    for (size_t i = 0; i < sizeof plan_bad / sizeof plan_bad[0]; ++i) {
        setenv("QGEMM_BF16_PLAN", plan_bad[i], 1);
        st = qg_bf16_gemm(ctx, &a, NULL);
        CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "QGEMM_BF16_PLAN") &&
                  strstr(qg_last_error(), plan_bad[i]),
              "QGEMM_BF16_PLAN=%s: %s (%s)", plan_bad[i], qg_status_string(st), qg_last_error());
    }
    setenv("QGEMM_BF16_PLAN", "96x64", 1);
    st = qg_bf16_compile(ctx, QG_GEMM_DENSE, &a, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "96x64") &&
              strstr(qg_last_error(), "block_m is 64, 128 or 256"),
          "forced 96x64: %s (%s)", qg_status_string(st), qg_last_error());
    setenv("QGEMM_BF16_PLAN", "128x48:a", 1); /* 576 / 48 = 12 n-blocks: legal; 80: 8 */
    st = qg_bf16_compile(ctx, QG_GEMM_DENSE, &a, NULL);
    CHECK(st == QG_SUCCESS, "forced 128x48:a: %s (%s)", qg_status_string(st), qg_last_error());
    setenv("QGEMM_BF16_PLAN", "128x64:b", 1); /* one m-block of 100 rows: B pairs need two */
    st = qg_bf16_compile(ctx, QG_GEMM_DENSE, &a, NULL);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "even m-block count"),
          "forced 128x64:b, one m-block: %s (%s)", qg_status_string(st), qg_last_error());
    unsetenv("QGEMM_BF16_PLAN");
    /* QGEMM_BF16_MERGE: off, auto or 1..16; anything else refused, naming it.
     * A merged plan compiles offline (the good args: NT 100x576x400; a
     * forced 64x16 tile has 16 stages: auto merges 3) */
    static const char *merge_ok[] = {"", "off", "auto", "1", "2", "6", "16"};
    for (size_t i = 0; i < sizeof merge_ok / sizeof merge_ok[0]; ++i) {
        setenv("QGEMM_BF16_MERGE", merge_ok[i], 1);
        st = qg_bf16_gemm(ctx, &a, NULL);
        CHECK(st == QG_ERROR_NO_DEVICE, "QGEMM_BF16_MERGE=%s: %s (%s)", merge_ok[i],
              qg_status_string(st), qg_last_error());
    }
    static const char *merge_bad[] = {"0", "17", "-1", "on", "3x", "auto2", " 3"};
    for (size_t i = 0; i < sizeof merge_bad / sizeof merge_bad[0]; ++i) {
        setenv("QGEMM_BF16_MERGE", merge_bad[i], 1);
        st = qg_bf16_gemm(ctx, &a, NULL);
        CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "QGEMM_BF16_MERGE") &&
                  strstr(qg_last_error(), merge_bad[i]),
              "QGEMM_BF16_MERGE=%s: %s (%s)", merge_bad[i], qg_status_string(st), qg_last_error());
    }
    setenv("QGEMM_BF16_MERGE", "auto", 1);
    setenv("QGEMM_BF16_PLAN", "64x16", 1);
    st = qg_bf16_compile(ctx, QG_GEMM_DENSE, &a, NULL);
    CHECK(st == QG_SUCCESS, "merged 64x16: %s (%s)", qg_status_string(st), qg_last_error());
    unsetenv("QGEMM_BF16_PLAN");
    unsetenv("QGEMM_BF16_MERGE");
    /* QGEMM_BF16_SPLITK: off, auto, 2, 4 or 8; anything else refused, naming
     * it. A split plan compiles offline (a forced split of the chosen tile,
     * and of a forced tile, merged or not) */
    static const char *splitk_ok[] = {"", "off", "auto", "2", "4", "8"};
    for (size_t i = 0; i < sizeof splitk_ok / sizeof splitk_ok[0]; ++i) {
        setenv("QGEMM_BF16_SPLITK", splitk_ok[i], 1);
        st = qg_bf16_gemm(ctx, &a, NULL);
        CHECK(st == QG_ERROR_NO_DEVICE, "QGEMM_BF16_SPLITK=%s: %s (%s)", splitk_ok[i],
              qg_status_string(st), qg_last_error());
    }
    static const char *splitk_bad[] = {"0", "1", "3", "16", "-1", "on", "8x", " 2", "auto2"};
    for (size_t i = 0; i < sizeof splitk_bad / sizeof splitk_bad[0]; ++i) {
        setenv("QGEMM_BF16_SPLITK", splitk_bad[i], 1);
        st = qg_bf16_gemm(ctx, &a, NULL);
        CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "QGEMM_BF16_SPLITK") &&
                  strstr(qg_last_error(), splitk_bad[i]),
              "QGEMM_BF16_SPLITK=%s: %s (%s)", splitk_bad[i], qg_status_string(st), qg_last_error());
    }
    for (int f = 0; f < 2; ++f) {
        setenv("QGEMM_BF16_SPLITK", "8", 1);
        if (f) setenv("QGEMM_BF16_PLAN", "64x32", 1);
        qg_kernel_info info;
        st = qg_bf16_compile(ctx, QG_GEMM_DENSE, &a, &info);
        CHECK(st == QG_SUCCESS, "split%s: %s (%s)", f ? " 64x32" : "", qg_status_string(st),
              qg_last_error());
        unsetenv("QGEMM_BF16_PLAN");
    }
    unsetenv("QGEMM_BF16_SPLITK");
    /* QGEMM_BF16_KGROUPED: n, m, mc or dg, each optionally +d2 (in
     * either order); anything else refused by the k-grouped GEMM, naming it
     * (other kinds do not read it). Each mode
     * compiles offline; mc's kernel multicasts (100 rows: two m-blocks of 64,
     * B shared by the pair), m's, n's and the default's (m+d2) do not, and all
     * are clean (no spill, no stack); "default" is no word (unset is) */
    kg.a_major = QG_MAJOR_MN, kg.lda = 104; /* (the good k-grouped call again) */
    static const char *kgrp_ok[] = {"", "n", "m", "mc", "dg", "d2", "m+d2", "d2+mc",
                                    "n+d2", "dg+d2"};
    static const int kgrp_mc[] = {0, 0, 0, 1, 1, 0, 0, 1, 0, 1};
    for (size_t i = 0; i < sizeof kgrp_ok / sizeof kgrp_ok[0]; ++i) {
        setenv("QGEMM_BF16_KGROUPED", kgrp_ok[i], 1);
        st = qg_k_grouped_bf16_gemm(ctx, &kg, NULL);
        CHECK(st == QG_ERROR_NO_DEVICE, "QGEMM_BF16_KGROUPED=%s: %s (%s)", kgrp_ok[i],
              qg_status_string(st), qg_last_error());
        qg_kernel_info info;
        st = qg_bf16_compile(ctx, QG_GEMM_K_GROUPED, &kg, &info);
        CHECK(st == QG_SUCCESS && info.spill_store_bytes == 0 && info.spill_load_bytes == 0 &&
                  info.stack_frame_bytes == 0,
              "compile under QGEMM_BF16_KGROUPED=%s: %s (%s), spills %d/%d, stack %d", kgrp_ok[i],
              qg_status_string(st), qg_last_error(), info.spill_store_bytes,
              info.spill_load_bytes, info.stack_frame_bytes);
        CHECK(info.ptx_has_multicast == kgrp_mc[i], "QGEMM_BF16_KGROUPED=%s: multicast in the PTX %d",
              kgrp_ok[i], info.ptx_has_multicast);
    }
    static const char *kgrp_bad[] = {"M", "mc2", "1", "on", " m", "dgx", "m+mc", "d2+d2", "+d2",
                                     "m+", "mc+d3", "d2 ", "default", "n+m"};
    for (size_t i = 0; i < sizeof kgrp_bad / sizeof kgrp_bad[0]; ++i) {
        setenv("QGEMM_BF16_KGROUPED", kgrp_bad[i], 1);
        st = qg_k_grouped_bf16_gemm(ctx, &kg, NULL);
        CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "QGEMM_BF16_KGROUPED") &&
                  strstr(qg_last_error(), kgrp_bad[i]),
              "QGEMM_BF16_KGROUPED=%s: %s (%s)", kgrp_bad[i], qg_status_string(st), qg_last_error());
        st = qg_bf16_gemm(ctx, &a, NULL); /* (the dense GEMM ignores it) */
        CHECK(st == QG_ERROR_NO_DEVICE, "dense under QGEMM_BF16_KGROUPED=%s: %s (%s)", kgrp_bad[i],
              qg_status_string(st), qg_last_error());
    }
    unsetenv("QGEMM_BF16_KGROUPED");
    st = qg_bf16_compile(ctx, QG_GEMM_WGRAD, &a, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "kind must be"),
          "compile of the wgrad kind: %s (%s)", qg_status_string(st), qg_last_error());
    st = qg_bf16_gemm(NULL, &a, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "ctx is NULL"), "NULL ctx");
    st = qg_bf16_gemm(ctx, NULL, NULL);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "args is NULL"), "NULL args");
    qg_context_destroy(ctx);
    PASS();
}

/* ---- every variant compiled offline ------------------------------------------- */

typedef struct {
    qg_gemm_kind kind;
    int m, n, k, groups, expected_m;
    qg_major a_major, b_major;
    int d_fp32, with_c;
} bf16_variant;

static int add_variant(bf16_variant *v, int count, qg_gemm_kind kind, int m, int n, int k, int groups,
                       int expected_m, qg_major am, qg_major bm, int d_fp32, int with_c) {
    v[count] = (bf16_variant){kind, m, n, k, groups, expected_m, am, bm, d_fp32, with_c};
    return count + 1;
}

/* DeepSeek-V3's dense shapes and DeepGEMM's BF16 test shapes in every layout,
 * D type and C mode, and the grouped kinds; shapes off the tiles too. */
static int bf16_variants(bf16_variant *v) {
    static const int Ms[] = {1, 64, 129, 4096};
    static const int NKs[][2] = {{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                                 {4096, 7168}, {7168, 2048}, {264, 320}};
    int count = 0;
    for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; ++i)
        for (size_t j = 0; j < sizeof NKs / sizeof NKs[0]; ++j)
            for (int layout = 0; layout < 4; ++layout)
                for (int mode = 0; mode < 3; ++mode) /* bf16 D, FP32 D, FP32 D + C */
                    count = add_variant(v, count, QG_GEMM_DENSE, Ms[i], NKs[j][0], NKs[j][1], 1, 0,
                                        layout >= 2 ? QG_MAJOR_MN : QG_MAJOR_K,
                                        layout % 2 ? QG_MAJOR_MN : QG_MAJOR_K, mode > 0, mode == 2);
    static const int GNK[][3] = {{4, 4096, 7168}, {8, 7168, 2048}, {4, 576, 7168}};
    for (size_t j = 0; j < sizeof GNK / sizeof GNK[0]; ++j) {
        const int g = GNK[j][0], n = GNK[j][1], k = GNK[j][2];
        for (int bmn = 0; bmn < 2; ++bmn) {
            count = add_variant(v, count, QG_GEMM_GROUPED_CONTIGUOUS, g * 8192 / 4, n, k, g, 0,
                                QG_MAJOR_K, bmn ? QG_MAJOR_MN : QG_MAJOR_K, 0, 0);
            count = add_variant(v, count, QG_GEMM_GROUPED_PSUM, g * 1000, n, k, g, 0, QG_MAJOR_K,
                                bmn ? QG_MAJOR_MN : QG_MAJOR_K, 0, 0);
        }
        count = add_variant(v, count, QG_GEMM_GROUPED_MASKED, 1024, n, k, g, 256, QG_MAJOR_K,
                            QG_MAJOR_K, 0, 0);
        count = add_variant(v, count, QG_GEMM_GROUPED_MASKED, 256, n, k, g, 32, QG_MAJOR_K,
                            QG_MAJOR_K, 0, 0);
    }
    static const int KG[][2] = {{4096, 7168}, {7168, 2048}, {2112, 7168}, {576, 448}};
    for (size_t j = 0; j < sizeof KG / sizeof KG[0]; ++j)
        for (int c = 0; c < 2; ++c)
            count = add_variant(v, count, QG_GEMM_K_GROUPED, KG[j][0], KG[j][1], 4 * 4096, 4, 0,
                                QG_MAJOR_MN, QG_MAJOR_MN, 1, c);
    return count;
}

static qg_bf16_gemm_args variant_args(const bf16_variant *v, int32_t *ks) {
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = v->m, a.n = v->n, a.k = v->k, a.num_groups = v->groups, a.expected_m = v->expected_m;
    a.a_major = v->a_major, a.b_major = v->b_major, a.d_fp32 = v->d_fp32;
    a.lda = v->a_major == QG_MAJOR_MN ? (v->m + 7) / 8 * 8 : v->k;
    a.ldb = v->b_major == QG_MAJOR_MN ? v->n : v->k;
    a.ldd = v->n;
    a.c = v->with_c ? FAKE(0x9000000) : NULL;
    a.ldc = v->n;
    if (v->kind == QG_GEMM_K_GROUPED) {
        for (int g = 0; g < v->groups; ++g) ks[g] = v->k / v->groups;
        a.ks = ks;
    }
    return a;
}

/* What every BF16 GEMM kernel's PTX holds (the batch sums ask their own). */
#define BF16_PTX (QGTK_PTX_WGMMA | QGTK_PTX_TMA_LOAD | QGTK_PTX_TMA_STORE | QGTK_PTX_SETMAXNREG)

TEST(bf16_compile_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 64, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static bf16_variant v[512];
    const int count = bf16_variants(v);
    /* the unsplit kernels (a TMA store of D; the default, auto, splits some
     * dense NT rows: bf16_splitk_compile_every_variant compiles those) */
    setenv("QGEMM_BF16_SPLITK", "off", 1);
    for (int i = 0; i < count; ++i) {
        int32_t ks[16];
        qg_bf16_gemm_args a = variant_args(&v[i], ks);
        qg_kernel_info info;
        qg_status st = qg_bf16_compile(sw.ctx, v[i].kind, &a, &info);
        char what[96];
        snprintf(what, sizeof what, "kind %d %dx%dx%d G %d majors %d%d %s%s", (int)v[i].kind,
                 v[i].m, v[i].n, v[i].k, v[i].groups, (int)v[i].a_major, (int)v[i].b_major,
                 v[i].d_fp32 ? "f32" : "bf16", v[i].with_c ? "+C" : "");
        qgtk_compile_verdict(&sw, what, st, &info, BF16_PTX, 0);
    }
    unsetenv("QGEMM_BF16_SPLITK");
    printf("    %d BF16 variants, %d compiled, %d failures\n", count, sw.compiled, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* Split-K (QGEMM_BF16_SPLITK): the dense variants at auto and every forced
 * split, every layout, D type and C mode, compiled through the library (no
 * TMA store in a split kernel: its owners store D directly), 0 spills and 0
 * warnings (qgtk_compile_verdict); the planner (132 SMs) says which split: the
 * test fails unless most do. */
TEST(bf16_splitk_compile_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 64, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static const int ms[] = {1, 128, 129};
    static const int nk[][2] = {{576, 7168}, {2112, 7168}, {264, 320}, {4096, 448}, {136, 200}};
    static const char *knobs[] = {"auto", "2", "4", "8"};
    int count = 0, split = 0;
    for (size_t g = 0; g < sizeof knobs / sizeof knobs[0]; ++g)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i)
            for (size_t j = 0; j < sizeof nk / sizeof nk[0]; ++j)
                for (int layout = 0; layout < 4; ++layout)
                    for (int mode = 0; mode < 3; ++mode) { /* bf16 D, FP32 D, FP32 D + C */
                        /* auto and 8 everywhere; 2 and 4 in NT */
                        if (g != 0 && g != 3 && layout != 0) continue;
                        bf16_variant v;
                        add_variant(&v, 0, QG_GEMM_DENSE, ms[i], nk[j][0], nk[j][1], 1, 0,
                                    layout >= 2 ? QG_MAJOR_MN : QG_MAJOR_K,
                                    layout % 2 ? QG_MAJOR_MN : QG_MAJOR_K, mode > 0, mode == 2);
                        qg_bf16_problem p;
                        memset(&p, 0, sizeof p);
                        p.m = v.m, p.n = v.n, p.k = v.k, p.kind = QG_BF16_DENSE, p.num_groups = 1;
                        p.layout = (qg_bf16_layout)(layout == 0 ? QG_BF16_NT : layout == 1 ? QG_BF16_NN
                                                    : layout == 2 ? QG_BF16_TN : QG_BF16_TT);
                        p.d_f32 = v.d_fp32, p.with_c = v.with_c;
                        p.merge = p.layout == QG_BF16_NT ? -1 : 0;
                        p.splitk = g == 0 ? -1 : atoi(knobs[g]);
                        p.num_sms = 132, p.smem_limit = 232448;
                        qg_bf16_plan pl;
                        const int s = qg__bf16_select(&p, &pl) == 0 ? pl.splitk : 0;
                        if (s <= 1) continue; /* the unsplit kernels: bf16_compile_every_variant */
                        ++split;
                        int32_t ks[16];
                        qg_bf16_gemm_args a = variant_args(&v, ks);
                        qg_kernel_info info;
                        setenv("QGEMM_BF16_SPLITK", knobs[g], 1);
                        qg_status st = qg_bf16_compile(sw.ctx, QG_GEMM_DENSE, &a, &info);
                        unsetenv("QGEMM_BF16_SPLITK");
                        char what[112];
                        snprintf(what, sizeof what, "split %s (%d) %dx%dx%d majors %d%d %s%s",
                                 knobs[g], s, v.m, v.n, v.k, (int)v.a_major, (int)v.b_major,
                                 v.d_fp32 ? "f32" : "bf16", v.with_c ? "+C" : "");
                        qgtk_compile_verdict(&sw, what, st, &info,
                                             QGTK_PTX_WGMMA | QGTK_PTX_TMA_LOAD | QGTK_PTX_SETMAXNREG,
                                             QGTK_PTX_TMA_STORE);
                        ++count;
                    }
    printf("    %d split-K BF16 variants, %d compiled, %d failures\n", count, sw.compiled,
           sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    CHECK(split > 100, "only %d split plans", split);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* Merged K stages (QGEMM_BF16_MERGE): DeepGEMM's forward NT shapes at M 1 and
 * 128 and off-tile ones (K tails), bf16 D, FP32 D and FP32 D + C, at auto
 * and forced 2 and 5, through the library's own JIT: no spill, no stack
 * frame, no warning (no serialized wgmma). tools/bf16_compile_check.sh
 * compiles the larger set of tests/bf16/compile_gen.c. */
TEST(bf16_compile_merged_variants) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 64, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static const int MNK[][3] = {{1, 2112, 7168}, {1, 576, 7168}, {1, 4096, 7168}, {1, 7168, 2048},
                                 {128, 576, 7168}, {128, 2112, 7168}, {128, 4096, 7168},
                                 {129, 264, 320}, {200, 136, 200}, {300, 1000, 1000},
                                 {4096, 512, 256}};
    static const char *merges[] = {"auto", "2", "5"};
    int count = 0;
    unsetenv("QGEMM_BF16_PLAN");
    /* (unsplit: split-K's own sweep compiles the merged split kernels) */
    setenv("QGEMM_BF16_SPLITK", "off", 1);
    for (size_t g = 0; g < sizeof merges / sizeof merges[0]; ++g) {
        setenv("QGEMM_BF16_MERGE", merges[g], 1);
        for (size_t i = 0; i < sizeof MNK / sizeof MNK[0]; ++i)
            for (int mode = 0; mode < 3; ++mode) {
                const bf16_variant v = {QG_GEMM_DENSE, MNK[i][0], MNK[i][1], MNK[i][2], 1, 0,
                                        QG_MAJOR_K, QG_MAJOR_K, mode > 0, mode == 2};
                int32_t ks[1];
                qg_bf16_gemm_args a = variant_args(&v, ks);
                qg_kernel_info info;
                qg_status st = qg_bf16_compile(sw.ctx, v.kind, &a, &info);
                char what[96];
                snprintf(what, sizeof what, "merge %s %dx%dx%d %s%s", merges[g], v.m, v.n, v.k,
                         v.d_fp32 ? "f32" : "bf16", v.with_c ? "+C" : "");
                qgtk_compile_verdict(&sw, what, st, &info, BF16_PTX, 0);
                ++count;
            }
    }
    unsetenv("QGEMM_BF16_MERGE");
    unsetenv("QGEMM_BF16_SPLITK");
    printf("    %d merged-stage variants, %d compiled, %d failures\n", count, sw.compiled,
           sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* ---- accuracy on the GPU ------------------------------------------------------- */

/* The batched case's inputs and checks (the other cases' are the testkit's,
 * qgtk_cases.h). */
#define POISON16 0xFFFFu /* a bf16 NaN */

static double bf(uint16_t v) { return (double)qg_bf16_decode(v); }

static double rnd_unit(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return ((*s >> 8) & 0xFFFF) / 32768.0 - 1.0;
}

/* Every layout and kind through the testkit's case (testkit/bf16_case.c), the
 * same function `qgemm check --family bf16` runs. */
TEST(gpu_bf16_accuracy) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    static const int shapes[][3] = {{129, 264, 320}, {1, 576, 7168}, {300, 1000, 1000},
                                    {4096, 512, 256}, {64, 7168, 448}};
    static qgtk_bf16_case cases[256];
    int count = 0;
    unsetenv("QGEMM_BF16_PLAN");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
        for (int layout = 0; layout < 4; ++layout)
            for (int mode = 0; mode < 6; ++mode) /* D bf16 / FP32, x no C / C / in place */
                cases[count++] = (qgtk_bf16_case){QG_GEMM_DENSE, shapes[i][0], shapes[i][1], shapes[i][2], 1,
                                            layout >= 2 ? QG_MAJOR_MN : QG_MAJOR_K,
                                            layout % 2 ? QG_MAJOR_MN : QG_MAJOR_K, mode % 2,
                                            mode / 2};
    for (int bmn = 0; bmn < 2; ++bmn) {
        cases[count++] = (qgtk_bf16_case){QG_GEMM_GROUPED_CONTIGUOUS, 1280, 576, 448, 4, QG_MAJOR_K,
                                    bmn ? QG_MAJOR_MN : QG_MAJOR_K, 0, 0};
        cases[count++] = (qgtk_bf16_case){QG_GEMM_GROUPED_PSUM, 1500, 264, 320, 4, QG_MAJOR_K,
                                    bmn ? QG_MAJOR_MN : QG_MAJOR_K, 0, 0};
    }
    cases[count++] = (qgtk_bf16_case){QG_GEMM_GROUPED_MASKED, 200, 576, 448, 4, QG_MAJOR_K, QG_MAJOR_K, 0, 0};
    cases[count++] = (qgtk_bf16_case){QG_GEMM_GROUPED_MASKED, 1024, 4096, 7168, 2, QG_MAJOR_K, QG_MAJOR_K, 0, 0};
    for (int cm = 0; cm < 3; ++cm)
        cases[count++] = (qgtk_bf16_case){QG_GEMM_K_GROUPED, 200, 264, 0, 5, QG_MAJOR_MN, QG_MAJOR_MN, 1, cm};
    /* Forced 128-row tiles (QGEMM_BF16_PLAN) on masked and psum rows whose last
     * m-block leaves the second math warpgroup no row, so it skips the tile:
     * masked 192 rows x 5 groups holds 192, 0, 67, 99 and 131 rows (second
     * blocks of 64 and 3 rows); psum 1200 x 6 groups, 200, 0, 200, 163 (35
     * rows past 128), 200, 163. Poisoned rows past each group stay poisoned. */
    const int first_forced = count;
    static const char *forced[] = {"128x64", "128x96:a", "128x64", "128x128",
                                   "128x176:b", "128x128:b", "128x256:b"};
    cases[count++] = (qgtk_bf16_case){QG_GEMM_GROUPED_MASKED, 192, 576, 448, 5, QG_MAJOR_K, QG_MAJOR_K, 0, 0};
    cases[count++] = (qgtk_bf16_case){QG_GEMM_GROUPED_MASKED, 192, 576, 448, 5, QG_MAJOR_K, QG_MAJOR_K, 0, 0};
    cases[count++] = (qgtk_bf16_case){QG_GEMM_GROUPED_PSUM, 1200, 264, 320, 6, QG_MAJOR_K, QG_MAJOR_K, 0, 0};
    cases[count++] = (qgtk_bf16_case){QG_GEMM_GROUPED_PSUM, 1200, 264, 320, 6, QG_MAJOR_K, QG_MAJOR_MN, 0, 0};
    /* B multicast (pairs along M), which v2 now picks for large dense shapes
     * where v1 took A: K-major and MN-major B, FP32 D + C, in place, off-tile M */
    cases[count++] = (qgtk_bf16_case){QG_GEMM_DENSE, 4096, 512, 256, 1, QG_MAJOR_K, QG_MAJOR_K, 0, 0};
    cases[count++] = (qgtk_bf16_case){QG_GEMM_DENSE, 4096, 512, 256, 1, QG_MAJOR_K, QG_MAJOR_MN, 1, 1};
    cases[count++] = (qgtk_bf16_case){QG_GEMM_DENSE, 1000, 520, 448, 1, QG_MAJOR_MN, QG_MAJOR_MN, 0, 2};
    int failures = 0;
    double lo = 1, hi = 0;
    for (int i = 0; i < count; ++i) {
        qgtk_case_opts opts = {.seed = 1234u + (unsigned)i * 77u};
        qgtk_case_result res;
        if (i >= first_forced) setenv("QGEMM_BF16_PLAN", forced[i - first_forced], 1);
        const bool ok = qgtk_bf16_case_run(ctx, stream, &cases[i], &opts, &res);
        unsetenv("QGEMM_BF16_PLAN");
        const double diff = res.diff;
        if (ok) {
            if (diff < lo) lo = diff;
            if (diff > hi) hi = diff;
        } else {
            failures++;
            printf("    FAIL kind %d %dx%dx%d G %d majors %d%d %s c %d: %s\n", (int)cases[i].kind,
                   cases[i].m, cases[i].n, cases[i].k, cases[i].groups, (int)cases[i].a_major,
                   (int)cases[i].b_major, cases[i].d_fp32 ? "f32" : "bf16", cases[i].c_mode, res.why);
        }
    }
    printf("    %d BF16 cases, %d failed, diff max %.2g min %.2g\n", count, failures, hi, lo);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d cases failed", failures, count);
    PASS();
}

/* Merged K stages (QGEMM_BF16_MERGE, dense NT; kernels/qg_bf16_gemm.cuh
 * "Merged stages"): every case through the testkit's checks (fp64
 * reference, D poisoned, shapes off the tiles, K tails: K a multiple of
 * 64 x merge or not, a partial last 64-K block) with the knob off, then on
 * (auto and forced merges): each merged run must pass and leave D bitwise
 * equal to the unmerged run's (the same inputs: the same seed; the same
 * wgmma sequence). The planner (H200's 132 SMs and 232448 bytes) says which
 * cases merge: the test fails unless most do, so it cannot pass vacuously. */
TEST(gpu_bf16_merged_accuracy) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    unsetenv("QGEMM_BF16_PLAN");
    /* (m, n, k): the ncu row of issue 49 (64x16, 16 stages: auto 3 x 5, K tail
     * 112 = 37 x 3 + 1 blocks), decode rows, K of 1000 (15.6 blocks), 200
     * (3.1), 448 (7), 320 (5), off-tile M and N */
    static const int shapes[][3] = {{128, 576, 7168}, {1, 576, 7168}, {129, 264, 320},
                                    {300, 1000, 1000}, {64, 7168, 448}, {200, 136, 200},
                                    {4096, 512, 256}, {64, 2112, 7168}};
    /* every shape with bf16 D and no C at auto (64x16: 3 blocks a stage) and
     * forced 2, 4 and 5; the FP32 D and C modes at auto on the shapes marked
     * (K tails of 2 and 1 blocks, a partial last block, 2 math warpgroups
     * with B multicast: 4096x512x256 at merge 2) */
    static const char *merges[] = {"auto", "2", "4", "5"};
    static const bool all_modes[] = {true, false, true, false, false, true, true, false};
    int failures = 0, runs = 0, merged = 0;
    /* unsplit (QGEMM_BF16_SPLITK=off; the default, auto, would split some rows
     * with a split and tile of its own per merge setting: another summation
     * order, so not bitwise; gpu_bf16_splitk_accuracy tests those) */
    setenv("QGEMM_BF16_SPLITK", "off", 1);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
        for (int mode = 0; mode < 6; ++mode) { /* D bf16 / FP32, x no C / C / in place */
            if (mode > 0 && !all_modes[i]) continue;
            const qgtk_bf16_case c = {QG_GEMM_DENSE, shapes[i][0], shapes[i][1], shapes[i][2], 1,
                                      QG_MAJOR_K, QG_MAJOR_K, mode % 2, mode / 2};
            /* the reference on 64 rows (the bitwise comparison covers all of D;
             * the poison checks every element) */
            qgtk_case_opts opts = {.seed = 777u + (unsigned)i * 31u + (unsigned)mode, .sample = 64};
            qgtk_case_result base, res;
            unsetenv("QGEMM_BF16_MERGE");
            const bool ok0 = qgtk_bf16_case_run(ctx, stream, &c, &opts, &base);
            /* (the FP32 D and C modes: auto, forced 2 on the 128x128 tile auto leaves) */
            const size_t g0 = mode > 0 && c.m == 4096 ? 1 : 0;
            for (size_t g = g0; g < sizeof merges / sizeof merges[0]; ++g) {
                if (mode > 0 && g > g0) break;
                setenv("QGEMM_BF16_MERGE", merges[g], 1);
                const bool ok1 = qgtk_bf16_case_run(ctx, stream, &c, &opts, &res);
                unsetenv("QGEMM_BF16_MERGE");
                qg_bf16_problem p;
                memset(&p, 0, sizeof p);
                p.m = c.m, p.n = c.n, p.k = c.k, p.layout = QG_BF16_NT, p.kind = QG_BF16_DENSE;
                p.num_groups = 1, p.d_f32 = c.d_fp32, p.with_c = c.c_mode > 0;
                p.merge = strcmp(merges[g], "auto") ? atoi(merges[g]) : -1;
                p.num_sms = 132, p.smem_limit = 232448;
                qg_bf16_plan pl;
                const int m = qg__bf16_select(&p, &pl) == 0 ? pl.merge : 0;
                merged += m > 1;
                ++runs;
                if (!ok0 || !ok1 || base.d_hash != res.d_hash) {
                    failures++;
                    printf("    FAIL %dx%dx%d %s c %d merge %s (plan: %d): %s%s%s\n", c.m, c.n, c.k,
                           c.d_fp32 ? "f32" : "bf16", c.c_mode, merges[g], m, ok0 ? "" : base.why,
                           ok1 ? "" : res.why, ok0 && ok1 ? "D differs from the unmerged kernel's" : "");
                } else if (m > 1) {
                    printf("    ok %dx%dx%d %s c %d merge %s: %d x 64 K a stage, diff %.2g, D bitwise "
                           "the unmerged D\n", c.m, c.n, c.k, c.d_fp32 ? "f32" : "bf16", c.c_mode,
                           merges[g], m, res.diff);
                }
            }
        }
    unsetenv("QGEMM_BF16_SPLITK");
    printf("    %d merged-stage runs (%d merged on an H200), %d failed\n", runs, merged, failures);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d runs failed", failures, runs);
    CHECK(merged * 2 > runs, "only %d of %d runs merged", merged, runs);
    PASS();
}

/* Split-K across a cluster (QGEMM_BF16_SPLITK, dense; kernels/qg_bf16_gemm.cuh
 * "Split-K"): every case through the testkit's checks (fp64 reference,
 * calc_diff < 1e-5, D poisoned, shapes off the tiles) with the split forced
 * (2, 4, 8) or auto: the decode rows auto splits (1x576x7168, 128x576x7168:
 * merged stages with a short tail step), K not a multiple of S x 64 (1000:
 * 15.6 blocks; 320: 5, S 8 halved to 4; 200: a partial last block), a grid of
 * more tiles than clusters (each CTA several tiles, the stages refilled after
 * each exchange: 512x1024x512 at 8), D bf16 / FP32 x no C / C /
 * C in place, merged stages on (auto) and off. Each case runs twice from the same seed: D must
 * be bitwise the same (the fixed reduction order); auto's cases a third time
 * with the variable unset (the default since 2026-11-29): bitwise auto's D. The
 * unsplit kernel (off) is gpu_bf16_merged_accuracy's. The planner (H200's 132
 * SMs) says which cases split: the test fails unless most do. */
TEST(gpu_bf16_splitk_accuracy) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    unsetenv("QGEMM_BF16_PLAN");
    static const int shapes[][3] = {{1, 576, 7168}, {128, 576, 7168}, {300, 1000, 1000},
                                    {129, 264, 320}, {200, 136, 200}, {512, 1024, 512}};
    static const char *knobs[] = {"auto", "2", "4", "8"};
    int failures = 0, runs = 0, split = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
        for (int mode = 0; mode < 6; ++mode) /* D bf16 / FP32, x no C / C / in place */
            for (size_t g = 0; g < sizeof knobs / sizeof knobs[0]; ++g)
                for (int merge = 0; merge < 2; ++merge) {
                    /* bf16 D without C at every split merged, at 2 and 8 unmerged
                     * too; FP32 D at auto and 8, FP32 D + C at auto and 2, bf16 D
                     * + C in place at auto and 4 (merged; ~60 kernels in all) */
                    static const int want[6][4] = {{1, 1, 1, 1}, {1, 0, 0, 1}, {0, 0, 0, 0},
                                                   {1, 1, 0, 0}, {1, 0, 1, 0}, {0, 0, 0, 0}};
                    if (!want[mode][g] || (!merge && (mode > 0 || g == 0 || g == 2))) continue;
                    const qgtk_bf16_case c = {QG_GEMM_DENSE, shapes[i][0], shapes[i][1],
                                              shapes[i][2], 1, QG_MAJOR_K, QG_MAJOR_K, mode % 2,
                                              mode / 2};
                    qgtk_case_opts opts = {.seed = 4242u + (unsigned)i * 17u + (unsigned)mode};
                    qg_bf16_problem p;
                    memset(&p, 0, sizeof p);
                    p.m = c.m, p.n = c.n, p.k = c.k, p.layout = QG_BF16_NT, p.kind = QG_BF16_DENSE;
                    p.num_groups = 1, p.d_f32 = c.d_fp32, p.with_c = c.c_mode > 0;
                    p.merge = merge ? -1 : 0;
                    p.splitk = g == 0 ? -1 : atoi(knobs[g]);
                    p.num_sms = 132, p.smem_limit = 232448;
                    qg_bf16_plan pl;
                    const int s = qg__bf16_select(&p, &pl) == 0 ? pl.splitk : 0;
                    if (g == 0 && s <= 1) continue; /* auto leaves it unsplit: not this test's */
                    qgtk_case_result r1, r2;
                    setenv("QGEMM_BF16_SPLITK", knobs[g], 1);
                    setenv("QGEMM_BF16_MERGE", merge ? "auto" : "off", 1);
                    const bool ok1 = qgtk_bf16_case_run(ctx, stream, &c, &opts, &r1);
                    const bool ok2 = qgtk_bf16_case_run(ctx, stream, &c, &opts, &r2);
                    unsetenv("QGEMM_BF16_SPLITK");
                    /* auto is the default: unset runs its kernel (one cache entry) */
                    qgtk_case_result r3 = r1;
                    const bool ok3 = g != 0 || qgtk_bf16_case_run(ctx, stream, &c, &opts, &r3);
                    unsetenv("QGEMM_BF16_MERGE");
                    split += s > 1;
                    ++runs;
                    if (!ok1 || !ok2 || !ok3 || r1.d_hash != r2.d_hash || r1.d_hash != r3.d_hash) {
                        failures++;
                        const char *more = !(ok1 && ok2) ? ""
                                           : !ok3        ? r3.why
                                           : r1.d_hash != r2.d_hash
                                               ? "D differs between two runs"
                                               : "the default (unset) differs from auto";
                        printf("    FAIL %dx%dx%d %s c %d split %s (plan: %d, %dx%d, merge %d): "
                               "%s%s%s\n", c.m, c.n, c.k, c.d_fp32 ? "f32" : "bf16", c.c_mode,
                               knobs[g], s, pl.block_m, pl.block_n, pl.merge, ok1 ? "" : r1.why,
                               ok2 ? "" : r2.why, more);
                    } else {
                        printf("    ok %dx%dx%d %s c %d split %s: %d x %dx%d, merge %d, diff "
                               "%.2g, two runs bitwise equal\n", c.m, c.n, c.k,
                               c.d_fp32 ? "f32" : "bf16", c.c_mode, knobs[g], s, pl.block_m,
                               pl.block_n, pl.merge, r1.diff);
                    }
                }
    printf("    %d split-K runs (%d split on an H200), %d failed\n", runs, split, failures);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d runs failed", failures, runs);
    CHECK(split * 4 > runs * 3, "only %d of %d runs split", split, runs);
    PASS();
}

/* The k-grouped organisations (QGEMM_BF16_KGROUPED: n, m, mc, dg, d2, mc+d2; the default m+d2; src/bf16_plan.h
 * qg_bf16_problem.kgrouped): every case through the testkit's checks (fp64
 * reference, calc_diff < 1e-5, D poisoned, an empty group, groups of 64-320
 * K, shapes off the tiles) under the default, then under each mode: each must
 * pass and leave D bitwise equal to the default's (the same tile, the same
 * wgmmas per tile, one add into D per element; only the walk, the loads of
 * B and the epilogue's rounds differ). D = A B, D = C + A B and D += A B in place. The shapes: even
 * m-block counts (mc shares B; dg too at <= 4 groups), odd ones (mc falls
 * back to the walk), 64- and 128-row tiles, 1 to 3 atoms of B (block_n 64 to
 * 192), more tiles than SMs (several tiles a CTA), and 128 groups (the
 * testkit's most; one launch). The planner (H200's 132 SMs and 232448 bytes) says
 * which runs multicast: the test fails unless some do.
 * QG_TEST_KGROUPED_VARIANTS="m,mc+d2": the default and these only. */
TEST(gpu_bf16_kgrouped_variants) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    unsetenv("QGEMM_BF16_PLAN");
    /* (m, n, groups) */
    static const int shapes[][3] = {{200, 264, 5}, {256, 384, 4}, {264, 200, 3}, {1000, 520, 4},
                                    {2048, 1536, 4}, {2048, 1536, 9}, {4096, 7168, 2},
                                    {7168, 2048, 3}, {136, 128, 128}};
    static const char *modes[] = {"n", "m", "mc", "dg", "d2", "mc+d2"};
    static const int mode_bits[] = {0, 1, 2, 3, 4, 6}; /* (qg_bf16_problem.kgrouped) */
    const char *only = getenv("QG_TEST_KGROUPED_VARIANTS");
    int failures = 0, runs = 0, shared = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
        for (int cm = 0; cm < 3; ++cm) {
            if (cm > 0 && shapes[i][0] * (long long)shapes[i][1] > 4000000) continue;
            const qgtk_bf16_case c = {QG_GEMM_K_GROUPED, shapes[i][0], shapes[i][1], 0,
                                      shapes[i][2], QG_MAJOR_MN, QG_MAJOR_MN, 1, cm};
            /* the reference on 64 rows of each group (the bitwise comparison
             * covers all of D; the poison checks every element) */
            qgtk_case_opts opts = {.seed = 4242u + (unsigned)i * 13u + (unsigned)cm, .sample = 64};
            qgtk_case_result base, res;
            unsetenv("QGEMM_BF16_KGROUPED");
            const bool ok0 = qgtk_bf16_case_run(ctx, stream, &c, &opts, &base);
            if (!ok0) {
                failures++;
                printf("    FAIL %dx%d G %d c %d default: %s\n", c.m, c.n, c.groups, cm, base.why);
                continue;
            }
            for (size_t v = 0; v < sizeof modes / sizeof modes[0]; ++v) {
                if (only) {
                    char pat[16], list[256];
                    snprintf(pat, sizeof pat, ",%s,", modes[v]);
                    snprintf(list, sizeof list, ",%s,", only);
                    if (!strstr(list, pat)) continue;
                }
                setenv("QGEMM_BF16_KGROUPED", modes[v], 1);
                const bool ok1 = qgtk_bf16_case_run(ctx, stream, &c, &opts, &res);
                unsetenv("QGEMM_BF16_KGROUPED");
                /* the plan this run got (the testkit's ks: group 1 empty, the
                 * others 64 x (1 + (3g + 1) % 5), at most 320) */
                qg_bf16_problem p;
                memset(&p, 0, sizeof p);
                int max_k = 0;
                for (int g = 0; g < c.groups && g < 128; ++g) {
                    const int kg = g == 1 ? 0 : 64 * (1 + (g * 3 + 1) % 5);
                    if (kg > max_k) max_k = kg;
                }
                p.m = c.m, p.n = c.n, p.k = max_k;
                p.layout = QG_BF16_TT, p.kind = QG_BF16_K_GROUPED;
                p.num_groups = c.groups, p.d_f32 = 1, p.with_c = cm > 0;
                p.kgrouped = mode_bits[v], p.num_sms = 132, p.smem_limit = 232448;
                qg_bf16_plan pl;
                const int mc = qg__bf16_select(&p, &pl) == 0 ? pl.multicast : -1;
                shared += mc == 2;
                ++runs;
                if (!ok1 || base.d_hash != res.d_hash) {
                    failures++;
                    printf("    FAIL %dx%d G %d c %d QGEMM_BF16_KGROUPED=%s (plan multicast %d): %s%s\n",
                           c.m, c.n, c.groups, cm, modes[v], mc, ok1 ? "" : res.why,
                           ok1 ? "D differs from the default's" : "");
                } else {
                    printf("    ok %dx%d G %d c %d %s: multicast %d, diff %.2g, D bitwise the "
                           "default's\n", c.m, c.n, c.groups, cm, modes[v], mc, res.diff);
                }
            }
        }
    unsetenv("QGEMM_BF16_KGROUPED");
    printf("    %d k-grouped variant runs (%d with B multicast on an H200), %d failed\n", runs,
           shared, failures);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d runs failed", failures, runs);
    CHECK(runs > 0 && (shared > 0 || (only && !strstr(only, "mc") && !strstr(only, "dg"))),
          "%d runs, %d with B multicast", runs, shared);
    PASS();
}

/* B multicast in the m-grouped layouts (kernels/qg_scheduler.cuh
 * QG_PAIR_TILES): forced B tiles (QGEMM_BF16_PLAN=BMxBN:b) over the testkit's
 * pair pattern (qgtk_case_opts.group_pattern 1: groups of odd and even
 * m-block counts, empty groups, masked_m 0 and M_max, groups straddling
 * pairs, contiguous expert runs with -1 padding runs, a partial last
 * segment), n-block counts odd (dummy tiles beside a group's last tile) and
 * even, N not a multiple of block_n, K-major and MN-major B, bf16 and FP32 D;
 * the default pattern too (its contiguous pairs always straddle experts);
 * and the default plan (v3) where it shares B. Every valid row against the
 * fp64 reference; every row outside the groups still poisoned. A wrong pair
 * decision shows as a hang (caught by the GPU watchdog of the run) or as
 * rows of the wrong B. */
TEST(gpu_bf16_grouped_b_multicast) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    typedef struct {
        qgtk_bf16_case c;
        const char *plan; /* NULL: the default heuristic */
        int pattern;
    } mc_case;
    const qg_major K = QG_MAJOR_K, MN = QG_MAJOR_MN;
    static const mc_case cases[] = {
        /* masked, M_max 640 (5 blocks of 128, 10 of 64), 10 groups */
        {{QG_GEMM_GROUPED_MASKED, 640, 1000, 448, 10, K, K, 0, 0}, "128x256:b", 1}, /* 4 n-blocks */
        {{QG_GEMM_GROUPED_MASKED, 640, 600, 448, 10, K, K, 0, 0}, "128x256:b", 1},  /* 3: odd */
        {{QG_GEMM_GROUPED_MASKED, 640, 600, 320, 10, K, K, 0, 0}, "64x96:b", 1},    /* 7: odd */
        {{QG_GEMM_GROUPED_MASKED, 640, 520, 320, 10, K, K, 0, 0}, "128x128:b", 1},  /* 5: odd (the m-grouped D is bf16) */
        {{QG_GEMM_GROUPED_MASKED, 192, 576, 448, 5, K, K, 0, 0}, "128x64:b", 0},
        {{QG_GEMM_GROUPED_MASKED, 512, 2048, 256, 10, K, K, 0, 0}, NULL, 1},       /* v3's own */
        /* psum */
        {{QG_GEMM_GROUPED_PSUM, 2000, 600, 320, 10, K, K, 0, 0}, "128x256:b", 1},
        {{QG_GEMM_GROUPED_PSUM, 2000, 520, 320, 10, K, MN, 0, 0}, "128x128:b", 1},
        {{QG_GEMM_GROUPED_PSUM, 2000, 600, 320, 10, K, K, 0, 0}, "64x96:b", 1},
        {{QG_GEMM_GROUPED_PSUM, 1200, 264, 320, 6, K, K, 0, 0}, "128x128:b", 0},
        /* contiguous, 3000 rows: 23 segments and a partial one */
        {{QG_GEMM_GROUPED_CONTIGUOUS, 3000, 600, 448, 4, K, K, 0, 0}, "128x256:b", 1},
        {{QG_GEMM_GROUPED_CONTIGUOUS, 3000, 520, 448, 4, K, MN, 0, 0}, "128x128:b", 1},
        {{QG_GEMM_GROUPED_CONTIGUOUS, 3000, 600, 320, 4, K, K, 0, 0}, "64x96:b", 1},
        {{QG_GEMM_GROUPED_CONTIGUOUS, 3000, 1000, 320, 4, K, K, 0, 0}, "128x128:b", 1},
        {{QG_GEMM_GROUPED_CONTIGUOUS, 1280, 576, 448, 4, K, K, 0, 0}, "128x96:b", 0},
        {{QG_GEMM_GROUPED_CONTIGUOUS, 4096, 2048, 256, 4, K, K, 0, 0}, NULL, 1},   /* v3's own */
    };
    const int count = (int)(sizeof cases / sizeof cases[0]);
    int failures = 0;
    double hi = 0;
    for (int i = 0; i < count; ++i) {
        qgtk_case_opts opts = {.seed = 4321u + (unsigned)i * 31u, .group_pattern = cases[i].pattern};
        qgtk_case_result res;
        if (cases[i].plan) setenv("QGEMM_BF16_PLAN", cases[i].plan, 1);
        else unsetenv("QGEMM_BF16_PLAN");
        const bool ok = qgtk_bf16_case_run(ctx, stream, &cases[i].c, &opts, &res);
        unsetenv("QGEMM_BF16_PLAN");
        const qgtk_bf16_case *c = &cases[i].c;
        printf("    %s kind %d %dx%dx%d G %d %s %s pattern %d plan %s: diff %.2g%s%s\n",
               ok ? "PASS" : "FAIL", (int)c->kind, c->m, c->n, c->k, c->groups,
               qgtk_bf16_layout_name(c->a_major, c->b_major), c->d_fp32 ? "f32" : "bf16",
               cases[i].pattern, cases[i].plan ? cases[i].plan : "default", res.diff,
               ok ? "" : ": ", ok ? "" : res.why);
        if (ok && res.diff > hi) hi = res.diff;
        failures += !ok;
    }
    printf("    %d grouped B-multicast cases, %d failed, diff max %.2g\n", count, failures, hi);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d cases failed", failures, count);
    PASS();
}

/* ---- the batched GEMM (qg_batched_bf16_gemm) ------------------------------------ */

/* DeepGEMM's einsum 'bhr,hdr->bhd' as H batches: x [B=100][H=4][R=256] (batch
 * stride R, lda H R), y [4][D=576][R] (batch stride D R), z [B][H][D] (batch
 * stride D, ldd H D). */
static qg_bf16_gemm_args batched_args(void) {
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = 100, a.n = 576, a.k = 256, a.num_groups = 4;
    a.a = FAKE(0x1000000), a.lda = 4 * 256;
    a.b = FAKE(0x3000000), a.ldb = 256;
    a.d = FAKE(0x5000000), a.ldd = 4 * 576;
    return a;
}

TEST(bf16_batched_validation) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    qg_bf16_gemm_args a = batched_args();
    qg_status st = qg_batched_bf16_gemm(ctx, &a, 256, 576 * 256, 576, NULL);
    CHECK(st == QG_ERROR_NO_DEVICE, "good args offline: %s (%s)", qg_status_string(st),
          qg_last_error());
#define BCASE(edit_stmt, sa, sb, sd, want_text, want_status)                                        \
    do {                                                                                            \
        qg_bf16_gemm_args x = batched_args();                                                       \
        edit_stmt;                                                                                  \
        qg_status s = qg_batched_bf16_gemm(ctx, &x, sa, sb, sd, NULL);                              \
        CHECK(s == (want_status) && strstr(qg_last_error(), want_text), "%s %lld %lld %lld: %s (%s)",\
              #edit_stmt, (long long)(sa), (long long)(sb), (long long)(sd), qg_status_string(s),   \
              qg_last_error());                                                                     \
    } while (0)
    BCASE((void)0, -8, 576 * 256, 576, "batch_stride_a must be >= 0", QG_ERROR_INVALID_ARGUMENT);
    BCASE((void)0, 260, 576 * 256, 576, "batch_stride_a must be >= 0, a multiple of 16 bytes",
          QG_ERROR_INVALID_ARGUMENT);
    BCASE((void)0, 256, 4, 576, "batch_stride_b", QG_ERROR_INVALID_ARGUMENT);
    BCASE((void)0, 256, 576 * 256, 572, "batch_stride_d", QG_ERROR_INVALID_ARGUMENT);
    BCASE(x.d_fp32 = 1, 256, 576 * 256, 574, "batch_stride_d", QG_ERROR_INVALID_ARGUMENT);
    BCASE((void)0, 256, (int64_t)1 << 40, 576, "2^40 bytes", QG_ERROR_INVALID_ARGUMENT);
    BCASE(x.num_groups = 0, 256, 576 * 256, 576, "num_groups must be in [1, 1024]",
          QG_ERROR_INVALID_ARGUMENT);
    BCASE(x.num_groups = 1025, 256, 576 * 256, 576, "num_groups must be in [1, 1024]",
          QG_ERROR_INVALID_ARGUMENT);
    BCASE((x.d_fp32 = 1, x.c = FAKE(0x9000000), x.ldc = 576), 256, 576 * 256, 576,
          "args->c must be NULL (the batched GEMM", QG_ERROR_UNSUPPORTED);
    BCASE(x.n = 100, 256, 576 * 256, 576, "n must be a multiple of 8", QG_ERROR_UNSUPPORTED);
    /* D over the last batch of A: refused (the batched extent is checked) */
    BCASE(x.d = FAKE(0x1000000 + 2 * (99 * 1024 + 3 * 256)), 256, 576 * 256, 576, "overlap",
          QG_ERROR_INVALID_ARGUMENT);
    /* the same D past A's last batch: accepted (offline: no device) */
    BCASE(x.d = FAKE(0x1000000 + 2 * (99 * 1024 + 4 * 256)), 256, 576 * 256, 576, "offline",
          QG_ERROR_NO_DEVICE);
    /* either major for A and B */
    BCASE((x.a_major = QG_MAJOR_MN, x.lda = 4 * 104), 104, 576 * 256, 576, "offline",
          QG_ERROR_NO_DEVICE);
    BCASE((x.b_major = QG_MAJOR_MN, x.ldb = 640), 256, 256 * 640, 576, "offline",
          QG_ERROR_NO_DEVICE);
#undef BCASE
    /* the compile entry takes the kind (no strides needed) */
    qg_kernel_info info;
    st = qg_bf16_compile(ctx, QG_GEMM_BF16_BATCHED, &a, &info);
    CHECK(st == QG_SUCCESS, "compile batched: %s (%s)", qg_status_string(st), qg_last_error());
    a.c = FAKE(0x9000000), a.d_fp32 = 1;
    st = qg_bf16_compile(ctx, QG_GEMM_BF16_BATCHED, &a, &info);
    CHECK(st == QG_ERROR_UNSUPPORTED, "compile batched with C: %s", qg_status_string(st));
    qg_context_destroy(ctx);
    PASS();
}

/* DeepGEMM's einsum shapes as batched GEMMs ('bhr,hdr->bhd': NT, m = b,
 * n = d, k = r, batches h; 'bhd,hdr->bhr': NN, n = r, k = d), FP32 D and
 * MN-major A too: every one compiles offline without spills or warnings. */
TEST(bf16_batched_compile_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 0, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static const int HRD[][3] = {{128, 512, 128}, {8, 4096, 1024}};
    static const int Bs[] = {4, 128, 4096};
    bf16_variant v[64];
    int count = 0;
    for (size_t i = 0; i < sizeof HRD / sizeof HRD[0]; ++i)
        for (size_t j = 0; j < sizeof Bs / sizeof Bs[0]; ++j) {
            const int h = HRD[i][0], r = HRD[i][1], d = HRD[i][2], b = Bs[j];
            count = add_variant(v, count, QG_GEMM_BF16_BATCHED, b, d, r, h, 0, QG_MAJOR_K,
                                QG_MAJOR_K, 0, 0);
            count = add_variant(v, count, QG_GEMM_BF16_BATCHED, b, r, d, h, 0, QG_MAJOR_K,
                                QG_MAJOR_MN, 0, 0);
        }
    count = add_variant(v, count, QG_GEMM_BF16_BATCHED, 300, 264, 320, 6, 0, QG_MAJOR_K,
                        QG_MAJOR_K, 1, 0);
    count = add_variant(v, count, QG_GEMM_BF16_BATCHED, 300, 256, 320, 6, 0, QG_MAJOR_MN,
                        QG_MAJOR_MN, 0, 0);
    count = add_variant(v, count, QG_GEMM_BF16_BATCHED, 1, 576, 448, 3, 0, QG_MAJOR_MN,
                        QG_MAJOR_K, 1, 0);
    for (int i = 0; i < count; ++i) {
        int32_t ks[16];
        qg_bf16_gemm_args a = variant_args(&v[i], ks);
        qg_kernel_info info;
        qg_status st = qg_bf16_compile(sw.ctx, v[i].kind, &a, &info);
        char what[96];
        snprintf(what, sizeof what, "batched %dx%dx%d G %d majors %d%d %s", v[i].m, v[i].n,
                 v[i].k, v[i].groups, (int)v[i].a_major, (int)v[i].b_major,
                 v[i].d_fp32 ? "f32" : "bf16");
        qgtk_compile_verdict(&sw, what, st, &info, BF16_PTX, 0);
    }
    printf("    %d batched BF16 variants, %d failures\n", count, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* One batched case on the GPU, laid out as DeepGEMM's einsum lays it out:
 * A [m][G][k] (K-major: batch stride k, lda G k; MN-major: [k][G][m8]),
 * B [G][n][k + 8] or [G][k][n + 8], D [m][G][n + 8] poisoned (batch stride
 * n + 8, ldd G (n + 8)): the 8 columns after each batch's n must stay
 * poisoned. Against an fp64 product; and bitwise against one dense GEMM per
 * batch (the per-head einsum's path) -- printed, not required. */
static bool run_batched_case(qg_context *ctx, CUstream stream, int m, int n, int k, int G,
                             qg_major am, qg_major bm, unsigned seed, double *diff_out,
                             bool *same_as_dense, char *why, size_t why_len) {
    const qg_driver *drv;
    qg__context_cuda(ctx, &drv, NULL, NULL);
    const int m8 = (m + 7) / 8 * 8;
    const int64_t sa = am == QG_MAJOR_K ? k : m8, lda = (int64_t)G * sa;
    const int64_t a_elems = (am == QG_MAJOR_K ? (int64_t)m : k) * lda;
    const int64_t ldb = bm == QG_MAJOR_K ? k + 8 : n + 8;
    const int64_t sb = (bm == QG_MAJOR_K ? n : k) * ldb, b_elems = sb * G;
    const int64_t sd = n + 8, ldd = (int64_t)G * sd, d_elems = (int64_t)m * ldd;
    uint16_t *ha = malloc((size_t)a_elems * 2), *hb = malloc((size_t)b_elems * 2);
    uint16_t *got = malloc((size_t)d_elems * 2), *dense = malloc((size_t)d_elems * 2);
    unsigned s = seed;
    for (int64_t i = 0; i < a_elems; ++i) ha[i] = qg_bf16_encode((float)rnd_unit(&s));
    for (int64_t i = 0; i < b_elems; ++i) hb[i] = qg_bf16_encode((float)rnd_unit(&s));
    CUdeviceptr da = 0, db = 0, dd = 0, dd2 = 0;
    bool ok = false;
    if (drv->cuMemAlloc(&da, (size_t)a_elems * 2) || drv->cuMemAlloc(&db, (size_t)b_elems * 2) ||
        drv->cuMemAlloc(&dd, (size_t)d_elems * 2) || drv->cuMemAlloc(&dd2, (size_t)d_elems * 2)) {
        snprintf(why, why_len, "cuMemAlloc failed");
        goto done;
    }
    drv->cuMemcpyHtoD(da, ha, (size_t)a_elems * 2);
    drv->cuMemcpyHtoD(db, hb, (size_t)b_elems * 2);
    drv->cuMemsetD8(dd, 0xFF, (size_t)d_elems * 2);
    drv->cuMemsetD8(dd2, 0xFF, (size_t)d_elems * 2);
    if (gpu_legacy_done(ctx)) { /* (tests/gpu_ctx.h) */
        snprintf(why, why_len, "cuCtxSynchronize failed");
        goto done;
    }
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = m, a.n = n, a.k = k, a.num_groups = G;
    a.a = (void *)(uintptr_t)da, a.lda = lda, a.a_major = am;
    a.b = (void *)(uintptr_t)db, a.ldb = ldb, a.b_major = bm;
    a.d = (void *)(uintptr_t)dd, a.ldd = ldd;
    qg_status st = qg_batched_bf16_gemm(ctx, &a, sa, sb, sd, stream);
    for (int g = 0; g < G && st == QG_SUCCESS; ++g) {
        qg_bf16_gemm_args one = a;
        one.num_groups = 1;
        one.a = (void *)(uintptr_t)(da + (CUdeviceptr)(g * sa * 2));
        one.b = (void *)(uintptr_t)(db + (CUdeviceptr)(g * sb * 2));
        one.d = (void *)(uintptr_t)(dd2 + (CUdeviceptr)(g * sd * 2));
        st = qg_bf16_gemm(ctx, &one, stream);
    }
    if (st != QG_SUCCESS) {
        snprintf(why, why_len, "%s: %s", qg_status_string(st), qg_last_error());
        goto done;
    }
    if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
        snprintf(why, why_len, "the kernel faulted");
        goto done;
    }
    drv->cuMemcpyDtoH(got, dd, (size_t)d_elems * 2);
    drv->cuMemcpyDtoH(dense, dd2, (size_t)d_elems * 2);
    *same_as_dense = memcmp(got, dense, (size_t)d_elems * 2) == 0;
    qgtk_diff_acc acc;
    memset(&acc, 0, sizeof acc);
    int64_t unwritten = 0, overwritten = 0;
    for (int r = 0; r < m; ++r)
        for (int g = 0; g < G; ++g)
            for (int64_t c = 0; c < sd; ++c) {
                const uint16_t v = got[r * ldd + g * sd + c];
                if (c >= n) {
                    overwritten += v != POISON16;
                    continue;
                }
                double y = 0;
                for (int kk = 0; kk < k; ++kk) {
                    const uint16_t x = am == QG_MAJOR_K ? ha[r * lda + g * sa + kk]
                                                        : ha[kk * lda + g * sa + r];
                    const uint16_t w = bm == QG_MAJOR_K ? hb[g * sb + c * ldb + kk]
                                                        : hb[g * sb + kk * ldb + c];
                    y += bf(x) * bf(w);
                }
                const double x = bf(v);
                if (isnan(x)) unwritten++;
                else qgtk_diff_add(&acc, &x, &y, 1);
            }
    *diff_out = qgtk_diff_result(&acc);
    ok = unwritten == 0 && overwritten == 0 && *diff_out < 1e-5;
    if (!ok)
        snprintf(why, why_len, "diff %.3g, %lld elements unwritten, %lld written that must not be",
                 *diff_out, (long long)unwritten, (long long)overwritten);
done:
    if (da) drv->cuMemFree(da);
    if (db) drv->cuMemFree(db);
    if (dd) drv->cuMemFree(dd);
    if (dd2) drv->cuMemFree(dd2);
    free(ha);
    free(hb);
    free(got);
    free(dense);
    return ok;
}

TEST(gpu_bf16_batched_accuracy) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    static const int cases[][4] = {{4, 128, 512, 16}, {130, 256, 320, 3}, {1, 576, 448, 2},
                                   {300, 64, 1024, 4}};
    int failures = 0, count = 0, differ = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        for (int layout = 0; layout < 4; ++layout) {
            const qg_major am = layout >= 2 ? QG_MAJOR_MN : QG_MAJOR_K;
            const qg_major bm = layout % 2 ? QG_MAJOR_MN : QG_MAJOR_K;
            double diff = NAN;
            bool same = false;
            char why[256] = "";
            count++;
            if (!run_batched_case(ctx, stream, cases[i][0], cases[i][1], cases[i][2], cases[i][3],
                                  am, bm, 99u + (unsigned)count * 31u, &diff, &same, why,
                                  sizeof why)) {
                failures++;
                printf("    FAIL batched %dx%dx%d G %d majors %d%d: %s\n", cases[i][0],
                       cases[i][1], cases[i][2], cases[i][3], (int)am, (int)bm, why);
            }
            differ += !same;
        }
    printf("    %d batched BF16 cases, %d failed; %d not bitwise equal to the per-batch dense "
           "GEMMs\n", count, failures, differ);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d cases failed", failures, count);
    PASS();
}

/* ---- the batch sums (qg_bf16_gemm_batch_sums) ------------------------------------ */

/* DeepGEMM's einsum 'bmk,bnk->mn' (b = 129, m 128, n 384, k 128), 15 splits
 * of 9 batches: a [129][128][128], b [129][384][128], D FP32 [15][128][384]. */
static qg_bf16_gemm_args sums_args(void) {
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = 128, a.n = 384, a.k = 128, a.num_groups = 129;
    a.a = FAKE(0x10000000), a.lda = 128;
    a.b = FAKE(0x20000000), a.ldb = 128;
    a.d = FAKE(0x40000000), a.ldd = 384, a.d_fp32 = 1;
    return a;
}

TEST(bf16_batch_sums_validation) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    qg_bf16_gemm_args a = sums_args();
    qg_status st = qg_bf16_gemm_batch_sums(ctx, &a, 128 * 128, 384 * 128, 15, NULL);
    CHECK(st == QG_ERROR_NO_DEVICE, "good args offline: %s (%s)", qg_status_string(st),
          qg_last_error());
#define SCASE(edit_stmt, sa, splits, want_text, want_status)                                        \
    do {                                                                                            \
        qg_bf16_gemm_args x = sums_args();                                                          \
        edit_stmt;                                                                                  \
        qg_status s = qg_bf16_gemm_batch_sums(ctx, &x, sa, 384 * 128, splits, NULL);                \
        CHECK(s == (want_status) && strstr(qg_last_error(), want_text), "%s %d: %s (%s)",           \
              #edit_stmt, splits, qg_status_string(s), qg_last_error());                            \
    } while (0)
    SCASE((void)0, 128 * 128, 0, "splits must be in [1", QG_ERROR_INVALID_ARGUMENT);
    SCASE((void)0, 128 * 128, 130, "splits must be in [1", QG_ERROR_INVALID_ARGUMENT);
    SCASE((void)0, 128 * 128, 16, "no empty split", QG_ERROR_INVALID_ARGUMENT); /* 15 x 9 >= 129 */
    SCASE(x.num_groups = 10, 128 * 128, 4, "offline", QG_ERROR_NO_DEVICE);      /* 3 + 3 + 3 + 1 */
    SCASE(x.num_groups = 10, 128 * 128, 6, "no empty split", QG_ERROR_INVALID_ARGUMENT); /* 2 x 5 */
    SCASE(x.d_fp32 = 0, 128 * 128, 15, "FP32", QG_ERROR_UNSUPPORTED);
    SCASE((x.b_major = QG_MAJOR_MN, x.ldb = 384), 128 * 128, 15, "QG_MAJOR_K", QG_ERROR_UNSUPPORTED);
    SCASE((x.c = (const float *)x.d), 128 * 128, 15, "args->c must be NULL", QG_ERROR_UNSUPPORTED);
    SCASE((void)0, 100, 15, "batch_stride_a", QG_ERROR_INVALID_ARGUMENT);
    /* D over the last batch of A: refused */
    SCASE(x.d = FAKE(0x10000000 + 2 * 128 * 128 * 128), 128 * 128, 15, "overlap",
          QG_ERROR_INVALID_ARGUMENT);
#undef SCASE
    a.expected_m = 15;
    qg_kernel_info info;
    st = qg_bf16_compile(ctx, QG_GEMM_BF16_BATCH_SUMS, &a, &info);
    CHECK(st == QG_SUCCESS, "compile: %s (%s)", qg_status_string(st), qg_last_error());
    a.expected_m = 0;
    st = qg_bf16_compile(ctx, QG_GEMM_BF16_BATCH_SUMS, &a, &info);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT, "compile without splits: %s", qg_status_string(st));
    qg_context_destroy(ctx);
    PASS();
}

/* DeepGEMM's test_bmk_bnk_mn shapes (b 129 / 4096 / 8192; m, n, k of 128-384)
 * with Python's split choice (python/qgemm/einsum.py bmk_splits): compiled
 * offline without spills or warnings. */
TEST(bf16_batch_sums_compile_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 0, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static const int S[] = {129, 4096, 8192};
    static const int MNK[][3] = {{128, 384, 128}, {256, 256, 256}, {384, 128, 384}, {200, 136, 64}};
    for (size_t i = 0; i < sizeof S / sizeof S[0]; ++i)
        for (size_t j = 0; j < sizeof MNK / sizeof MNK[0]; ++j) {
            const int m = MNK[j][0], n = MNK[j][1], k = MNK[j][2], s = S[i];
            const int tiles = ((m + 127) / 128) * ((n + 127) / 128);
            int splits = (264 + tiles - 1) / tiles;
            if (splits > s) splits = s;
            const int per = (s + splits - 1) / splits;
            splits = (s + per - 1) / per;
            qg_bf16_gemm_args a;
            memset(&a, 0, sizeof a);
            a.m = m, a.n = n, a.k = k, a.num_groups = s, a.expected_m = splits;
            a.lda = k, a.ldb = k, a.ldd = n, a.d_fp32 = 1;
            qg_kernel_info info;
            qg_status st = qg_bf16_compile(sw.ctx, QG_GEMM_BF16_BATCH_SUMS, &a, &info);
            char what[96];
            snprintf(what, sizeof what, "batch sums b %d %dx%dx%d splits %d", s, m, n, k, splits);
            qgtk_compile_verdict(&sw, what, st, &info,
                                 QGTK_PTX_WGMMA | QGTK_PTX_TMA_LOAD | QGTK_PTX_TMA_STORE, 0);
        }
    printf("    %d batch-sum variants, %d failures\n", sw.checked, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* On the GPU: a [S][m][k + 8] (batch stride m (k + 8)), b [S][n][k], the
 * slices poisoned first (every element of every slice written), summed on the
 * host against an fp64 sum of the products; bitwise the same on a second run. */
TEST(gpu_bf16_batch_sums_accuracy) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    const qg_driver *drv;
    qg__context_cuda(ctx, &drv, NULL, NULL);
    static const int cases[][5] = {{129, 128, 384, 128, 16}, {37, 200, 136, 64, 5},
                                   {300, 256, 256, 256, 66}, {5, 64, 64, 320, 5}};
    int failures = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
        const int S = cases[ci][0], m = cases[ci][1], n = cases[ci][2], k = cases[ci][3];
        int splits = cases[ci][4];
        const int per = (S + splits - 1) / splits;
        splits = (S + per - 1) / per;
        const int64_t lda = k + 8, sa = (int64_t)m * lda, sb = (int64_t)n * k;
        const size_t a_el = (size_t)(S * sa), b_el = (size_t)(S * sb), d_el = (size_t)splits * m * n;
        uint16_t *ha = malloc(a_el * 2), *hb = malloc(b_el * 2);
        float *got = malloc(d_el * 4), *again = malloc(d_el * 4);
        unsigned s = 777u + (unsigned)ci;
        for (size_t i = 0; i < a_el; ++i) ha[i] = qg_bf16_encode((float)rnd_unit(&s));
        for (size_t i = 0; i < b_el; ++i) hb[i] = qg_bf16_encode((float)rnd_unit(&s));
        CUdeviceptr da = 0, db = 0, dd = 0;
        char why[256] = "";
        if (drv->cuMemAlloc(&da, a_el * 2) || drv->cuMemAlloc(&db, b_el * 2) ||
            drv->cuMemAlloc(&dd, d_el * 4)) {
            snprintf(why, sizeof why, "cuMemAlloc failed");
        } else {
            drv->cuMemcpyHtoD(da, ha, a_el * 2);
            drv->cuMemcpyHtoD(db, hb, b_el * 2);
            qg_bf16_gemm_args a;
            memset(&a, 0, sizeof a);
            a.m = m, a.n = n, a.k = k, a.num_groups = S;
            a.a = (void *)(uintptr_t)da, a.lda = lda;
            a.b = (void *)(uintptr_t)db, a.ldb = k;
            a.d = (void *)(uintptr_t)dd, a.ldd = n, a.d_fp32 = 1;
            for (int run = 0; run < 2 && !why[0]; ++run) {
                drv->cuMemsetD8(dd, 0xFF, d_el * 4);
                /* the poison done before the kernel (tests/gpu_ctx.h): the H200
                 * saw the two largest D's "not bitwise deterministic" without */
                if (gpu_legacy_done(ctx)) {
                    snprintf(why, sizeof why, "cuCtxSynchronize failed");
                    break;
                }
                qg_status st = qg_bf16_gemm_batch_sums(ctx, &a, sa, sb, splits, stream);
                if (st != QG_SUCCESS)
                    snprintf(why, sizeof why, "%s: %s", qg_status_string(st), qg_last_error());
                else if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS)
                    snprintf(why, sizeof why, "the kernel faulted");
                else
                    drv->cuMemcpyDtoH(run ? again : got, dd, d_el * 4);
            }
        }
        /* bitwise whatever QGEMM_BMK_REDUCE says: the batch sums (plural)
         * store each split's slice with plain stores, no atomics (those are
         * the reduced batch sum's, qg_bf16_gemm_batch_sum, only) */
        if (!why[0] && memcmp(got, again, d_el * 4) != 0)
            snprintf(why, sizeof why, "not bitwise deterministic");
        if (!why[0]) {
            qgtk_diff_acc acc;
            memset(&acc, 0, sizeof acc);
            int64_t nans = 0;
            for (int r = 0; r < m; ++r)
                for (int c = 0; c < n; ++c) {
                    double x = 0, y = 0;
                    for (int g = 0; g < splits; ++g) {
                        const float v = got[((size_t)g * m + r) * n + c];
                        nans += isnan(v);
                        x += v;
                    }
                    for (int b = 0; b < S; ++b)
                        for (int kk = 0; kk < k; ++kk)
                            y += bf(ha[b * sa + r * lda + kk]) * bf(hb[b * sb + (int64_t)c * k + kk]);
                    qgtk_diff_add(&acc, &x, &y, 1);
                }
            const double diff = qgtk_diff_result(&acc);
            if (nans || !(diff < 1e-5))
                snprintf(why, sizeof why, "diff %.3g, %lld unwritten", diff, (long long)nans);
        }
        if (why[0]) {
            failures++;
            printf("    FAIL batch sums S %d %dx%dx%d splits %d: %s\n", S, m, n, k, splits, why);
        }
        if (da) drv->cuMemFree(da);
        if (db) drv->cuMemFree(db);
        if (dd) drv->cuMemFree(dd);
        free(ha);
        free(hb);
        free(got);
        free(again);
    }
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d cases failed", failures);
    PASS();
}

/* ---- the reduced batch sum (qg_bf16_gemm_batch_sum) ------------------------------ */

/* As sums_args, D one FP32 [128][384] and a fake workspace of the right size. */
static qg_bf16_gemm_args sum_args(void) {
    qg_bf16_gemm_args a = sums_args();
    a.d = FAKE(0x40000000);
    return a;
}
#define SUM_WS FAKE(0x50000000)

TEST(bf16_batch_sum_workspace_bytes) {
    /* the atomic reduction (the default): counters [m64 x n16] (2 x 24 x 4 = 192 -> 256),
     * then W [128][384] FP32, all of it zeroed */
    unsetenv("QGEMM_BMK_REDUCE");
    size_t counters = 7;
    const size_t at = qg_bf16_gemm_batch_sum_workspace_bytes(128, 384, 15, &counters);
    CHECK(at == 256 + (size_t)128 * 384 * 4 && counters == at, "atomic 15 splits: %zu, %zu", at,
          counters);
    CHECK(qg_bf16_gemm_batch_sum_workspace_bytes(128, 384, 1, &counters) == 0 && counters == 0,
          "atomic, one split: no workspace");
    /* the tree */
    setenv("QGEMM_BMK_REDUCE", "tree", 1);
    counters = 7;
    CHECK(qg_bf16_gemm_batch_sum_workspace_bytes(128, 384, 1, &counters) == 0 && counters == 0,
          "one split: no workspace");
    CHECK(qg_bf16_gemm_batch_sum_workspace_bytes(0, 384, 8, NULL) == 0, "m = 0: none");
    /* 2 m64 blocks x 24 n16 groups x 14 gaps x 4 = 2688 -> 2816; slots 15 x 128 x 384 x 4 */
    const size_t total = qg_bf16_gemm_batch_sum_workspace_bytes(128, 384, 15, &counters);
    CHECK(counters == 2816 && total == 2816 + (size_t)15 * 128 * 384 * 4, "15 splits: %zu, %zu",
          counters, total);
    /* rows rounded up to 64, columns to 16 for the counters: 200 x 136 -> 4 x 9 regions x 2
     * gaps x 4 = 288 -> 512 bytes */
    const size_t t2 = qg_bf16_gemm_batch_sum_workspace_bytes(200, 136, 3, &counters);
    CHECK(counters == 512 && t2 == 512 + (size_t)3 * 256 * 136 * 4, "200x136: %zu, %zu", counters,
          t2);
    unsetenv("QGEMM_BMK_REDUCE");
    PASS();
}

TEST(bf16_batch_sum_validation) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    /* the atomic reduction (the default): an FP32 D needs no workspace, a bf16 D does */
    unsetenv("QGEMM_BMK_REDUCE");
    {
        const size_t need_at = qg_bf16_gemm_batch_sum_workspace_bytes(128, 384, 15, NULL);
        qg_bf16_gemm_args x = sum_args();
        qg_status s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, 15, NULL, 0, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "atomic FP32 D without workspace: %s (%s)",
              qg_status_string(s), qg_last_error());
        x.c = x.d, x.ldc = 0;
        s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, 15, NULL, 0, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "atomic FP32 D += without workspace: %s (%s)",
              qg_status_string(s), qg_last_error());
        x = sum_args();
        x.d_fp32 = 0;
        s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, 15, NULL, 0, NULL);
        CHECK(s == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "workspace is NULL"),
              "atomic bf16 D without workspace: %s (%s)", qg_status_string(s), qg_last_error());
        s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, 15, SUM_WS, need_at - 4, NULL);
        CHECK(s == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "workspace_bytes must be"),
              "atomic bf16 D, short workspace: %s (%s)", qg_status_string(s), qg_last_error());
        s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, 15, SUM_WS, need_at, NULL);
        CHECK(s == QG_ERROR_NO_DEVICE, "atomic bf16 D: %s (%s)", qg_status_string(s),
              qg_last_error());
        static const char *reduce_bad[] = {"atomics", "Tree", "1", " "};
        for (int i = 0; i < 4; ++i) {
            setenv("QGEMM_BMK_REDUCE", reduce_bad[i], 1);
            s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, 15, SUM_WS, need_at, NULL);
            CHECK(s == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "QGEMM_BMK_REDUCE"),
                  "QGEMM_BMK_REDUCE='%s': %s (%s)", reduce_bad[i], qg_status_string(s),
                  qg_last_error());
        }
        unsetenv("QGEMM_BMK_REDUCE");
        /* QGEMM_BMK_VARIANT: v1 .. v6 taken, anything else refused, naming it */
        static const char *variant_ok[] = {"v1", "v2", "v3", "v1:s4", "v2:s4", "v3:s16", "v4", "v4:s4",
                                           "v5", "v5:s4", "v6", "v6:s16"};
        for (int i = 0; i < 12; ++i) {
            setenv("QGEMM_BMK_VARIANT", variant_ok[i], 1);
            s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, 15, SUM_WS, need_at, NULL);
            CHECK(s == QG_ERROR_NO_DEVICE, "QGEMM_BMK_VARIANT=%s: %s (%s)", variant_ok[i],
                  qg_status_string(s), qg_last_error());
        }
        static const char *variant_bad[] = {"v7", "V2", "2", "v2 ", "v2:s3", "v2:s17", "v2:4",
                                            "v2:s", "v2:s4x", "v2:s-4", "v2:s+4", "v2:s160",
                                            "v0", "v5 ", "v6:s3"};
        for (int i = 0; i < 15; ++i) {
            setenv("QGEMM_BMK_VARIANT", variant_bad[i], 1);
            s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, 15, SUM_WS, need_at, NULL);
            CHECK(s == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "QGEMM_BMK_VARIANT"),
                  "QGEMM_BMK_VARIANT='%s': %s (%s)", variant_bad[i], qg_status_string(s),
                  qg_last_error());
        }
        unsetenv("QGEMM_BMK_VARIANT");
    }
    /* the tree: every case below */
    setenv("QGEMM_BMK_REDUCE", "tree", 1);
    const size_t need = qg_bf16_gemm_batch_sum_workspace_bytes(128, 384, 15, NULL);
    qg_bf16_gemm_args a = sum_args();
    qg_status st = qg_bf16_gemm_batch_sum(ctx, &a, 128 * 128, 384 * 128, 15, SUM_WS, need, NULL);
    CHECK(st == QG_ERROR_NO_DEVICE, "good args offline: %s (%s)", qg_status_string(st),
          qg_last_error());
#define WCASE(edit_stmt, splits, ws, ws_bytes, want_text, want_status)                              \
    do {                                                                                            \
        qg_bf16_gemm_args x = sum_args();                                                           \
        edit_stmt;                                                                                  \
        qg_status s = qg_bf16_gemm_batch_sum(ctx, &x, 128 * 128, 384 * 128, splits, ws, ws_bytes,   \
                                             NULL);                                                 \
        CHECK(s == (want_status) && strstr(qg_last_error(), want_text), "%s %d: %s (%s)",           \
              #edit_stmt, splits, qg_status_string(s), qg_last_error());                            \
    } while (0)
    /* bf16 D, C into FP32 D (d itself, or another array), one split without a workspace */
    WCASE(x.d_fp32 = 0, 15, SUM_WS, need, "offline", QG_ERROR_NO_DEVICE);
    WCASE((x.c = x.d, x.ldc = 0), 15, SUM_WS, need, "offline", QG_ERROR_NO_DEVICE);
    WCASE((x.c = FAKE(0x48000000), x.ldc = 384), 15, SUM_WS, need, "offline", QG_ERROR_NO_DEVICE);
    WCASE((void)0, 1, NULL, 0, "offline", QG_ERROR_NO_DEVICE);
    WCASE(x.k = 0, 15, NULL, 0, "offline", QG_ERROR_NO_DEVICE); /* k = 0: D = C or 0, no kernel */
    /* refused */
    WCASE((x.d_fp32 = 0, x.c = FAKE(0x48000000), x.ldc = 384), 15, SUM_WS, need,
          "args->c must be NULL with a bf16 D", QG_ERROR_UNSUPPORTED);
    WCASE((x.c = x.d, x.ldc = 392), 15, SUM_WS, need, "args->ldc (392) is not args->ldd",
          QG_ERROR_INVALID_ARGUMENT);
    WCASE((void)0, 15, NULL, need, "workspace is NULL", QG_ERROR_INVALID_ARGUMENT);
    WCASE((void)0, 15, FAKE(0x50000008), need, "workspace (0x50000008) must be 16-byte aligned",
          QG_ERROR_INVALID_ARGUMENT);
    WCASE((void)0, 15, SUM_WS, need - 4, "workspace_bytes must be >=", QG_ERROR_INVALID_ARGUMENT);
    WCASE((void)0, 15, FAKE(0x40000000 + 4096), need, "workspace (bytes", QG_ERROR_INVALID_ARGUMENT);
    WCASE((void)0, 15, FAKE(0x10000000 + 128 * 128 * 2), need, "overlaps args->a",
          QG_ERROR_INVALID_ARGUMENT);
    WCASE((x.c = FAKE(0x48000000), x.ldc = 384), 15, FAKE(0x48000000 - 4096), need,
          "overlaps args->c", QG_ERROR_INVALID_ARGUMENT);
    WCASE((void)0, 0, SUM_WS, need, "splits must be in [1", QG_ERROR_INVALID_ARGUMENT);
    WCASE((void)0, 16, SUM_WS, need, "no empty split", QG_ERROR_INVALID_ARGUMENT);
    WCASE((x.a_major = QG_MAJOR_MN, x.lda = 128), 15, SUM_WS, need, "QG_MAJOR_K",
          QG_ERROR_UNSUPPORTED);
    WCASE(x.d = FAKE(0x10000000 + 2 * 128 * 128 * 128), 15, SUM_WS, need, "overlap",
          QG_ERROR_INVALID_ARGUMENT);
    WCASE(x.d = FAKE(0x40000004), 15, SUM_WS, need, "args->d (0x40000004) must be 16-byte aligned",
          QG_ERROR_INVALID_ARGUMENT);
    /* the tree's radix (QGEMM_BMK_RADIX): 2, 4 or 8; anything else refused, naming it */
    static const char *radix_ok[] = {"2", "4", "8", ""};
    for (int i = 0; i < 4; ++i) {
        setenv("QGEMM_BMK_RADIX", radix_ok[i], 1);
        WCASE((void)0, 15, SUM_WS, need, "offline", QG_ERROR_NO_DEVICE);
    }
    static const char *radix_bad[] = {"3", "16", "1", "0", "4x", "two"};
    for (int i = 0; i < 6; ++i) {
        setenv("QGEMM_BMK_RADIX", radix_bad[i], 1);
        WCASE((void)0, 15, SUM_WS, need, "QGEMM_BMK_RADIX", QG_ERROR_INVALID_ARGUMENT);
    }
    unsetenv("QGEMM_BMK_RADIX");
    unsetenv("QGEMM_BMK_REDUCE");
#undef WCASE
    a.expected_m = 15;
    qg_kernel_info info;
    st = qg_bf16_compile(ctx, QG_GEMM_BF16_BATCH_SUM, &a, &info);
    CHECK(st == QG_SUCCESS, "compile: %s (%s)", qg_status_string(st), qg_last_error());
    a.expected_m = 0;
    st = qg_bf16_compile(ctx, QG_GEMM_BF16_BATCH_SUM, &a, &info);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT, "compile without splits: %s", qg_status_string(st));
    qg_context_destroy(ctx);
    PASS();
}

/* Every reduced batch-sum variant of DeepGEMM's test_bmk_bnk_mn shapes (b 129 /
 * 4096 / 8192, FP32 D + C and bf16 D) at the splits the sweep may try, plus
 * shapes off the tiles: compiled offline without spills, stack or warnings,
 * under DeepGEMM's kernel name, with no TMA store (the tree writes D). */
TEST(bf16_batch_sum_compile_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 0, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static const int S[] = {129, 4096, 8192};
    static const int MNK[][3] = {{128, 384, 128}, {256, 256, 256}, {384, 128, 384}, {200, 136, 64}};
    /* (66: QGEMM_BMK_SPLITS=wide's count, at which the planner picks 128x192, 128x256 and
     * 256x128: the atomic reductions only) */
    static const int SPLITS[] = {1, 3, 16, 44, 132, 66};
    /* the trees of radix 4 and 8 (QGEMM_BMK_RADIX): 44 splits, and 16 at b 129, FP32 D + C
     * and bf16 D; rv 3: the atomic reduction (QGEMM_BMK_REDUCE=atomic, the default) in every
     * shape, split count and mode; rv 4: the atomic reduction's v2 (QGEMM_BMK_VARIANT=v2,
     * which changes only a bf16 D's kernel and plan) in every shape and split count, bf16 D;
     * rv 5: v3:s4 (4 stages at most) at 44 and 66 splits, FP32 D and bf16 D; rv 6: v3
     * (16-byte reductions, and v2) at 16, 44 and 66 splits, FP32 D and bf16 D; rv 7: v6:s4
     * (v3 and the L2 prefetch of the reductions' target, QG_SUM_PREFETCH) at 16 and 44
     * splits, FP32 D and bf16 D; rv 8: v5 (a bf16 D: the FP32-D kernel with the prefetch
     * into W) at 16 and 44 splits, bf16 D */
    for (int rv = 0; rv < 9; ++rv)
    for (size_t i = 0; i < sizeof S / sizeof S[0]; ++i)
        for (size_t j = 0; j < sizeof MNK / sizeof MNK[0]; ++j)
            for (size_t sp = 0; sp < sizeof SPLITS / sizeof SPLITS[0]; ++sp)
                for (int mode = 0; mode < 3; ++mode) { /* FP32 D + C, FP32 D, bf16 D */
                    const int m = MNK[j][0], n = MNK[j][1], k = MNK[j][2], s = S[i];
                    int splits = SPLITS[sp] < s ? SPLITS[sp] : s;
                    const int per = (s + splits - 1) / splits;
                    splits = (s + per - 1) / per;
                    if (i > 0 && sp != 3 && mode == 1) continue; /* fewer FP32-without-C copies */
                    const int radix = rv < 3 ? 2 << rv : 2;
                    if (radix != 2 && (mode == 1 || !(sp == 3 || (i == 0 && sp == 2))))
                        continue;
                    if (rv == 4 && mode != 2) continue;
                    if (rv == 5 && (mode == 0 || sp < 3 || sp == 4)) continue;
                    if (rv == 6 && (mode == 0 || sp < 2 || sp == 4)) continue;
                    if (rv == 7 && (mode == 0 || (sp != 2 && sp != 3))) continue;
                    if (rv == 8 && (mode != 2 || (sp != 2 && sp != 3))) continue;
                    if (sp == 5 && rv < 3) continue;
                    char radix_text[2] = {(char)('0' + radix), 0};
                    setenv("QGEMM_BMK_RADIX", radix_text, 1);
                    setenv("QGEMM_BMK_REDUCE", rv < 3 ? "tree" : "atomic", 1);
                    setenv("QGEMM_BMK_VARIANT",
                           rv == 4 ? "v2" : rv == 5 ? "v3:s4" : rv == 6 ? "v3" : rv == 7 ? "v6:s4"
                           : rv == 8 ? "v5" : "v1", 1);
                    qg_bf16_gemm_args a;
                    memset(&a, 0, sizeof a);
                    a.m = m, a.n = n, a.k = k, a.num_groups = s, a.expected_m = splits;
                    a.lda = k, a.ldb = k, a.ldd = n, a.d_fp32 = mode < 2;
                    a.c = mode == 0 ? FAKE(0x1000) : NULL, a.ldc = n;
                    qg_kernel_info info;
                    memset(&info, 0, sizeof info);
                    qg_status st = qg_bf16_compile(sw.ctx, QG_GEMM_BF16_BATCH_SUM, &a, &info);
                    char what[112];
                    snprintf(what, sizeof what, "batch sum b %d %dx%dx%d splits %d %s %d mode %d", s,
                             m, n, k, splits,
                             rv < 3 ? "radix" : rv == 3 ? "atomic" : rv == 4 ? "atomic v2"
                                    : rv == 5 ? "v3:s4" : rv == 6 ? "atomic v3"
                                    : rv == 7 ? "v6:s4" : "v5",
                             radix, mode);
                    /* no TMA store: the tree writes D */
                    qgtk_compile_verdict(&sw, what, st, &info, QGTK_PTX_WGMMA | QGTK_PTX_TMA_LOAD,
                                         QGTK_PTX_TMA_STORE);
                }
    unsetenv("QGEMM_BMK_RADIX");
    unsetenv("QGEMM_BMK_REDUCE");
    unsetenv("QGEMM_BMK_VARIANT");
    printf("    %d reduced batch-sum variants, %d failures\n", sw.checked, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* The reduced batch sum's D of one call (gpu_bf16_batch_sum_accuracy):
 * its diff against the fp64 reference (+ C in modes 0 and 1), its NaNs
 * (unwritten elements) and the padding bytes written (they stay poisoned, or
 * C's where D was set to C: mode 0). */
static double sum_check(const float *got, int m, int n, int64_t ldd, int mode, const double *ref,
                        const float *hc, int64_t *nans, int64_t *touched) {
    const int d_fp32 = mode < 3, el = d_fp32 ? 4 : 2;
    qgtk_diff_acc acc;
    memset(&acc, 0, sizeof acc);
    *nans = *touched = 0;
    const unsigned char *bytes = (const unsigned char *)got;
    for (int r = 0; r < m; ++r) {
        for (int c = 0; c < n; ++c) {
            const size_t at = (size_t)r * ldd + c;
            double x;
            if (d_fp32) x = got[at];
            else {
                uint16_t v;
                memcpy(&v, bytes + at * 2, 2);
                x = bf(v);
            }
            *nans += isnan(x);
            const double y = ref[(size_t)r * n + c] + (mode < 2 ? (double)hc[at] : 0.0);
            qgtk_diff_add(&acc, &x, &y, 1);
        }
        for (int c = n * el; c < (int)ldd * el; ++c)
            *touched += bytes[(size_t)r * ldd * el + c] !=
                        (mode == 0 ? ((const unsigned char *)hc)[(size_t)r * ldd * 4 + c] : 0xFF);
    }
    return qgtk_diff_result(&acc);
}

/* On the GPU: D = (C +) sum_b A_b B_b^T by the reduced batch sum against an
 * fp64 reference, fresh random inputs, a [S][m][k + 8] (batch stride m (k +
 * 8)), M and N off the tiles, S = 1, 2, 3, 129 (splits = 1 .. S), in four
 * modes: FP32 D with C = D (D += the sum, D set to C before each call), FP32
 * D with another C, FP32 D, bf16 D. D has 8 padding columns (ldd = n + 8):
 * they must stay poisoned (C's, with C = D); D is poisoned (NaN) before each call, the
 * workspace's slots too (a slot read before it was written would show as
 * NaN), its counters zeroed once: they must be zero again after every call.
 * Five calls per mode: bitwise identical D. Every mode at each tree radix
 * (QGEMM_BMK_RADIX 2, 4, 8), then under the atomic reduction
 * (QGEMM_BMK_REDUCE=atomic): its zero area (counters and the FP32 W of a
 * bf16 D) zeroed once, zero again after every call; no bitwise check (the
 * atomics' order varies): each of the five calls checked for accuracy
 * instead; then the same under QGEMM_BMK_VARIANT=v2 (the bf16 D's batched
 * last-arrival loads), v3 (and 16-byte reductions after a lane-pair
 * exchange) and, for a bf16 D, v4 (the FP32-D kernel into W, then the
 * conversion launch: D from W, W zeroed again), v6 (v3 with the L2 prefetch
 * of the reductions' target, every mode) and, for a bf16 D, v5 (v4 with that
 * prefetch) (:sN only changes the stage count: compile-checked,
 * and checked against float64 by bench/bmk_variants.py). The last two
 * cases (QGEMM_BMK_SPLITS=wide's 256x128 and 128x192 tiles) run the atomic
 * reductions only (each kernel compiled costs GPU-machine time). Every upload and poison is done (gpu_legacy_done) before the call
 * on the session's non-blocking stream. */
TEST(gpu_bf16_batch_sum_accuracy) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    const qg_driver *drv;
    qg__context_cuda(ctx, &drv, NULL, NULL);
    /* S, m, n, k, splits */
    static const int cases[][5] = {{1, 100, 72, 64, 1},      {2, 128, 384, 128, 2},
                                   {3, 200, 136, 64, 3},     {3, 200, 136, 64, 2},
                                   {129, 128, 384, 128, 43}, {129, 72, 48, 64, 129},
                                   {37, 64, 64, 320, 5},     {129, 256, 256, 64, 16},
                                   {65, 64, 48, 64, 65},
                                   /* QGEMM_BMK_SPLITS=wide's tiles, off the tiles: 256x128
                                    * (the second m-block's second warpgroup past M) and
                                    * 128x192 (FP32 D and v2's bf16 D) */
                                   {129, 360, 120, 64, 65},  {129, 120, 360, 64, 65}};
    static const char *mode_names[] = {"FP32 D += (C = D)", "FP32 D = C +", "FP32 D", "bf16 D"};
    int failures = 0, count = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
        const int S = cases[ci][0], m = cases[ci][1], n = cases[ci][2], k = cases[ci][3];
        int splits = cases[ci][4];
        const int per = (S + splits - 1) / splits;
        splits = (S + per - 1) / per;
        const int64_t lda = k + 8, sa = (int64_t)m * lda, sb = (int64_t)n * k, ldd = n + 8;
        const size_t a_el = (size_t)S * (size_t)sa, b_el = (size_t)S * (size_t)sb;
        const size_t d_el = (size_t)m * (size_t)ldd;
        size_t counter_bytes = 0, atomic_zero = 0;
        setenv("QGEMM_BMK_REDUCE", "atomic", 1);
        const size_t atomic_bytes = qg_bf16_gemm_batch_sum_workspace_bytes(m, n, splits, &atomic_zero);
        setenv("QGEMM_BMK_REDUCE", "tree", 1); /* (the larger: serves both) */
        const size_t ws_bytes = qg_bf16_gemm_batch_sum_workspace_bytes(m, n, splits, &counter_bytes);
        (void)atomic_bytes;
        uint16_t *ha = malloc(a_el * 2), *hb = malloc(b_el * 2);
        float *hc = malloc(d_el * 4), *got = malloc(d_el * 4), *first = malloc(d_el * 4);
        double *ref = malloc((size_t)m * n * sizeof(double));
        uint32_t *cnt = malloc((counter_bytes > atomic_zero ? counter_bytes : atomic_zero) + 4);
        unsigned s = 4242u + (unsigned)ci;
        for (size_t i = 0; i < a_el; ++i) ha[i] = qg_bf16_encode((float)rnd_unit(&s));
        for (size_t i = 0; i < b_el; ++i) hb[i] = qg_bf16_encode((float)rnd_unit(&s));
        for (size_t i = 0; i < d_el; ++i) hc[i] = (float)rnd_unit(&s);
        for (int r = 0; r < m; ++r)
            for (int c = 0; c < n; ++c) {
                double y = 0;
                for (int b = 0; b < S; ++b)
                    for (int kk = 0; kk < k; ++kk)
                        y += bf(ha[b * sa + r * lda + kk]) * bf(hb[b * sb + (int64_t)c * k + kk]);
                ref[(size_t)r * n + c] = y;
            }
        CUdeviceptr da = 0, db = 0, dd = 0, dc = 0, dw = 0;
        char why[320] = "";
        if (drv->cuMemAlloc(&da, a_el * 2) || drv->cuMemAlloc(&db, b_el * 2) ||
            drv->cuMemAlloc(&dd, d_el * 4) || drv->cuMemAlloc(&dc, d_el * 4) ||
            (ws_bytes && drv->cuMemAlloc(&dw, ws_bytes))) {
            snprintf(why, sizeof why, "cuMemAlloc failed");
        } else {
            drv->cuMemcpyHtoD(da, ha, a_el * 2);
            drv->cuMemcpyHtoD(db, hb, b_el * 2);
            drv->cuMemcpyHtoD(dc, hc, d_el * 4);
            if (ws_bytes) {
                drv->cuMemsetD8(dw, 0, counter_bytes);
                drv->cuMemsetD8(dw + counter_bytes, 0xFF, ws_bytes - counter_bytes);
            }
        }
        /* every tree radix (QGEMM_BMK_RADIX): 65 splits of radix 8 leave a
         * node of one child (it goes up without storing) */
        /* (the wide-tile cases, the last two: the atomic reductions only) */
        const bool atomic_only = ci + 2 >= sizeof cases / sizeof cases[0];
        for (int rm = atomic_only ? 12 : 0; rm < 36 && !why[0]; ++rm) {
            /* QGEMM_BMK_VARIANT v2 from 16, v3 from 20, v4 from 24, v6 from 28, v5 from 32 */
            const bool atomic = rm >= 12;
            const char *variant = rm >= 32 ? "v5" : rm >= 28 ? "v6" : rm >= 24 ? "v4"
                                  : rm >= 20 ? "v3" : rm >= 16 ? "v2" : "v1";
            /* v4 and v5 change only a bf16 D's call (an FP32 D runs v3's, v5's v6's): that
             * mode alone */
            if ((rm >= 32 || (rm >= 24 && rm < 28)) && rm % 4 != 3) continue;
            const int radix = atomic ? 2 : 2 << (rm / 4), mode = rm % 4;
            char radix_text[2] = {(char)('0' + radix), 0};
            setenv("QGEMM_BMK_RADIX", radix_text, 1);
            setenv("QGEMM_BMK_REDUCE", atomic ? "atomic" : "tree", 1);
            setenv("QGEMM_BMK_VARIANT", variant, 1);
            const size_t zero_bytes = atomic ? atomic_zero : counter_bytes;
            if (rm == 12 && atomic_zero) /* the trees left their slots in W's bytes */
                drv->cuMemsetD8(dw, 0, atomic_zero);
            const int d_fp32 = mode < 3;
            qg_bf16_gemm_args a;
            memset(&a, 0, sizeof a);
            a.m = m, a.n = n, a.k = k, a.num_groups = S;
            a.a = (void *)(uintptr_t)da, a.lda = lda;
            a.b = (void *)(uintptr_t)db, a.ldb = k;
            a.d = (void *)(uintptr_t)dd, a.ldd = ldd, a.d_fp32 = d_fp32;
            if (mode == 0) a.c = a.d, a.ldc = 0;
            if (mode == 1) a.c = (const void *)(uintptr_t)dc, a.ldc = ldd;
            for (int run = 0; run < 5 && !why[0]; ++run) {
                if (mode == 0) drv->cuMemcpyHtoD(dd, hc, d_el * 4); /* D = C, then D += sum */
                else drv->cuMemsetD8(dd, 0xFF, d_el * 4);
                /* uploads, poison and zeroed workspace done before the call
                 * (tests/gpu_ctx.h): without it the H200 saw C's upload land
                 * after a splits-1 kernel read D (mode 0: run 1 != run 0) and
                 * the poison land after the library's copy of C into D (mode
                 * 1, atomic: all NaN) */
                if (gpu_legacy_done(ctx)) {
                    snprintf(why, sizeof why, "cuCtxSynchronize failed");
                    break;
                }
                qg_status st = qg_bf16_gemm_batch_sum(ctx, &a, sa, sb, splits,
                                                      (void *)(uintptr_t)dw, ws_bytes, stream);
                if (st != QG_SUCCESS) {
                    snprintf(why, sizeof why, "%s: %s", qg_status_string(st), qg_last_error());
                    break;
                }
                if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
                    snprintf(why, sizeof why, "the kernel faulted (run %d)", run);
                    break;
                }
                drv->cuMemcpyDtoH(got, dd, d_el * 4);
                if (zero_bytes) {
                    drv->cuMemcpyDtoH(cnt, dw, zero_bytes);
                    size_t bad = 0;
                    for (size_t i = 0; i < zero_bytes / 4; ++i) bad += cnt[i] != 0;
                    if (bad)
                        snprintf(why, sizeof why, "%zu words of the zero area (counters%s) not "
                                 "zero after run %d", bad, atomic ? ", W" : "", run);
                }
                /* the tree: bitwise equal runs; the atomic reduction: its
                 * order varies, every run checked for accuracy instead */
                if (run == 0) memcpy(first, got, d_el * 4);
                else if (!atomic && memcmp(first, got, d_el * 4) != 0)
                    snprintf(why, sizeof why, "run %d not bitwise equal to run 0", run);
                if (!why[0] && (run == 0 || atomic)) {
                    int64_t nans = 0, touched = 0;
                    const double diff = sum_check(got, m, n, ldd, mode, ref, hc, &nans, &touched);
                    if (nans || touched || !(diff < 1e-5))
                        snprintf(why, sizeof why, "run %d: diff %.3g, %lld NaN (unwritten), %lld "
                                 "padding bytes written", run, diff, (long long)nans,
                                 (long long)touched);
                }
            }
            if (why[0]) {
                snprintf(why + strlen(why), sizeof why - strlen(why), " (%s, %s %d)",
                         mode_names[mode], atomic ? "atomic" : "radix", radix);
                snprintf(why + strlen(why), sizeof why - strlen(why), " QGEMM_BMK_VARIANT=%s",
                         variant);
                break;
            }
            count++;
        }
        unsetenv("QGEMM_BMK_RADIX");
        unsetenv("QGEMM_BMK_REDUCE");
        unsetenv("QGEMM_BMK_VARIANT");
        if (why[0]) {
            failures++;
            printf("    FAIL batch sum S %d %dx%dx%d splits %d: %s\n", S, m, n, k, splits, why);
        }
        if (da) drv->cuMemFree(da);
        if (db) drv->cuMemFree(db);
        if (dd) drv->cuMemFree(dd);
        if (dc) drv->cuMemFree(dc);
        if (dw) drv->cuMemFree(dw);
        free(ha), free(hb), free(hc), free(got), free(first), free(ref), free(cnt);
    }
    printf("    %d reduced batch-sum cases x modes x radices checked, %d cases failed\n", count, failures);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d cases failed", failures);
    PASS();
}

/* A launch that fails: the fail_launch-th through the driver table since
 * launch_count was reset (gpu_bf16_batch_sum_v4_conversion_fails). */
static int launch_count, fail_launch;
static CUresult (*real_launch)(const CUlaunchConfig *, CUfunction, void **, void **);
static CUresult failing_launch(const CUlaunchConfig *c, CUfunction f, void **p, void **e) {
    if (++launch_count == fail_launch) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    return real_launch(c, f, p, e);
}

/* QGEMM_BMK_VARIANT=v4 into a bf16 D, the conversion launch (the call's
 * second) made to fail after the sum's: the call fails, and its message's
 * two claims hold: the workspace's W (the byte range it names) holds the
 * sums, not zeros, and D is not written (still poisoned). Then W zeroed as
 * the message asks: the next call passes against the fp64 reference. */
TEST(gpu_bf16_batch_sum_v4_conversion_fails) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    const qg_driver *drv;
    qg__context_cuda(ctx, &drv, NULL, NULL);
    enum { S = 4, M = 100, N = 256, K = 64, SPLITS = 2 };
    unsetenv("QGEMM_BMK_REDUCE"); /* the atomic reduction, v4's */
    setenv("QGEMM_BMK_VARIANT", "v4", 1);
    size_t zero_bytes = 0; /* (atomic: the whole workspace, counters then W) */
    const size_t ws_bytes = qg_bf16_gemm_batch_sum_workspace_bytes(M, N, SPLITS, &zero_bytes);
    const size_t w_bytes = (size_t)(M + 63) / 64 * 64 * N * 4, d_bytes = (size_t)M * N * 2;
    const size_t counter_bytes = ws_bytes - w_bytes;
    static uint16_t ha[S * M * K], hb[S * N * K], hd[M * N];
    static float hw[(M + 63) / 64 * 64 * N];
    static double ref[M * N];
    unsigned s = 777u;
    for (size_t i = 0; i < sizeof ha / 2; ++i) ha[i] = qg_bf16_encode((float)rnd_unit(&s));
    for (size_t i = 0; i < sizeof hb / 2; ++i) hb[i] = qg_bf16_encode((float)rnd_unit(&s));
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) {
            double y = 0;
            for (int b = 0; b < S; ++b)
                for (int kk = 0; kk < K; ++kk)
                    y += bf(ha[(b * M + r) * K + kk]) * bf(hb[(b * N + c) * K + kk]);
            ref[r * N + c] = y;
        }
    CUdeviceptr da = 0, db = 0, dd = 0, dw = 0;
    CHECK(zero_bytes == ws_bytes && ws_bytes > w_bytes && !drv->cuMemAlloc(&da, sizeof ha) &&
              !drv->cuMemAlloc(&db, sizeof hb) && !drv->cuMemAlloc(&dd, d_bytes) &&
              !drv->cuMemAlloc(&dw, ws_bytes),
          "workspace %zu bytes (%zu to zero; W %zu), or cuMemAlloc failed", ws_bytes, zero_bytes,
          w_bytes);
    drv->cuMemcpyHtoD(da, ha, sizeof ha);
    drv->cuMemcpyHtoD(db, hb, sizeof hb);
    drv->cuMemsetD8(dw, 0, ws_bytes);
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = M, a.n = N, a.k = K, a.num_groups = S;
    a.a = (void *)(uintptr_t)da, a.lda = K, a.b = (void *)(uintptr_t)db, a.ldb = K;
    a.d = (void *)(uintptr_t)dd, a.ldd = N;
    char why[480] = "";
    for (int call = 0; call < 3 && !why[0]; ++call) {
        drv->cuMemsetD8(dd, 0xFF, d_bytes);
        if (gpu_legacy_done(ctx)) { snprintf(why, sizeof why, "cuCtxSynchronize failed"); break; }
        /* call 0 compiles and loads both kernels; call 1 fails the second launch */
        qg_driver *mut = (qg_driver *)drv; /* (the library's table: a static, not const) */
        if (call == 1) real_launch = mut->cuLaunchKernelEx, mut->cuLaunchKernelEx = failing_launch;
        launch_count = 0, fail_launch = 2;
        const qg_status st = qg_bf16_gemm_batch_sum(ctx, &a, (int64_t)M * K, (int64_t)N * K, SPLITS,
                                                    (void *)(uintptr_t)dw, ws_bytes, stream);
        if (call == 1) mut->cuLaunchKernelEx = real_launch;
        const CUresult sync = drv->cuStreamSynchronize(stream);
        drv->cuMemcpyDtoH(hd, dd, d_bytes);
        drv->cuMemcpyDtoH(hw, dw + counter_bytes, w_bytes);
        int64_t w_nonzero = 0, d_written = 0;
        for (size_t i = 0; i < sizeof hw / 4; ++i) w_nonzero += hw[i] != 0.0f;
        for (size_t i = 0; i < sizeof hd / 2; ++i) d_written += hd[i] != 0xFFFF;
        if (sync != CUDA_SUCCESS) {
            snprintf(why, sizeof why, "call %d: the kernels faulted", call);
        } else if (call != 1) { /* passes; W zero again */
            qgtk_diff_acc acc;
            memset(&acc, 0, sizeof acc);
            for (int i = 0; i < M * N; ++i) {
                const double x = bf(hd[i]);
                qgtk_diff_add(&acc, &x, &ref[i], 1);
            }
            const double diff = qgtk_diff_result(&acc);
            if (st != QG_SUCCESS || w_nonzero || !(diff < 1e-5))
                snprintf(why, sizeof why, "call %d: %s (%s), W %lld non-zero, diff %.3g", call,
                         qg_status_string(st), st ? qg_last_error() : "", (long long)w_nonzero, diff);
        } else {
            char range[128];
            snprintf(range, sizeof range, "(bytes [%zu, %zu) of workspace) will hold its sums",
                     counter_bytes, counter_bytes + w_bytes);
            if (st == QG_SUCCESS || launch_count != 2 || !strstr(qg_last_error(), range) ||
                !strstr(qg_last_error(), "D is not written") || !w_nonzero || d_written)
                snprintf(why, sizeof why, "failed conversion: %s, %d launches, W %lld non-zero, D "
                         "%lld written: %.300s", qg_status_string(st), launch_count,
                         (long long)w_nonzero, (long long)d_written, qg_last_error());
            else
                printf("    conversion failed as made to: W %lld of %zu sums non-zero, D untouched:"
                       " %.200s\n", (long long)w_nonzero, sizeof hw / 4, qg_last_error());
            drv->cuMemsetD8(dw + counter_bytes, 0, w_bytes); /* as the message asks */
        }
    }
    unsetenv("QGEMM_BMK_VARIANT");
    drv->cuMemFree(da), drv->cuMemFree(db), drv->cuMemFree(dd), drv->cuMemFree(dw);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(!why[0], "%s", why);
    PASS();
}
