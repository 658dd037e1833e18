/*
 * test_compile.c -- the JIT compiles every kernel variant for sm_90a with
 * NVRTC (no GPU needed): every legal (kind, block_m, block_n, multicast or
 * split-K) once, plus every configuration the heuristic picks for a sweep of shapes
 * (the DeepSeek-V3 table included). Each must have no spills, no stack
 * frame, no compiler warning (src/jit.c counts them: a new one fails the
 * sweep), and the Hopper instructions the design calls for in its PTX: the
 * testkit's qgtk_compile_verdict, which every family's compile sweep uses.
 */
#include "internal.h"
#include "qg_test.h"
#include "forced.h"
#include "qgtk.h"
#include "qgemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Compile p with cfg (NULL: the heuristic's choice, compiled as a forced
 * configuration, so that a refusal fails here instead of falling back to
 * the next choice as qg_compile would) and give the testkit's verdict (no
 * spill, no stack, no warning) with the Hopper instructions the design calls
 * for: wgmma, TMA loads and stores, setmaxnreg, stmatrix, multicast as cfg asks. */
/* d_fp8: 0 the bf16 (FP32) kernels, 1 / 2 the e4m3-D ones (ue8m0 0 / 1);
 * | QG_D_SWIGLU: the SwiGLU ones. */
static int check_kernel_out(qgtk_compile_sweep *sw, const qg_problem *p, int d_fp8,
                            const qg_config *cfg, const char *what) {
    qg_context *ctx = sw->ctx;
    qg_kernel_info info;
    qg_config chosen;
    qg_status st = QG_SUCCESS;
    const int ue = (d_fp8 & QG_D_FP8_SCALES) - 1;
    const bool swiglu = (d_fp8 & QG_D_SWIGLU) != 0;
    if (!cfg && (st = swiglu  ? qg_select_config_swiglu(ctx, p, ue, &chosen)
                      : d_fp8 ? qg_select_config_fp8out(ctx, p, ue, &chosen)
                              : qg_select_config(ctx, p, &chosen)) == QG_SUCCESS)
        cfg = &chosen;
    if (st == QG_SUCCESS)
        st = swiglu  ? qg_compile_swiglu(ctx, p, ue, cfg, &info)
             : d_fp8 ? qg_compile_fp8out(ctx, p, ue, cfg, &info)
                     : qg_compile(ctx, p, cfg, &info);
    const int multicast = cfg ? cfg->multicast != QG_MULTICAST_NONE : -1;
    /* FP32 D (weight gradient) and e4m3 D leave through plain shared stores */
    const bool stmatrix = !(p->kind == QG_GEMM_WGRAD || d_fp8 || p->kind == QG_GEMM_K_GROUPED);
    const unsigned need = QGTK_PTX_WGMMA | QGTK_PTX_TMA_LOAD | QGTK_PTX_TMA_STORE |
                          QGTK_PTX_SETMAXNREG | (stmatrix ? QGTK_PTX_STMATRIX : 0) |
                          (multicast == 1 ? QGTK_PTX_MULTICAST : 0);
    return qgtk_compile_verdict(sw, what, st, &info, need, multicast == 0 ? QGTK_PTX_MULTICAST : 0);
}

static int check_kernel(qgtk_compile_sweep *sw, const qg_problem *p, const qg_config *cfg,
                        const char *what) {
    return check_kernel_out(sw, p, 0, cfg, what);
}

/* The sweeps' progress: a line per PROGRESS_EVERY kernels (NVRTC takes
 * seconds per kernel on a small machine). */
#define PROGRESS_EVERY 20

/* QGEMM_FP8OUT_VARIANT's kernel switches: early (QG_FP8_EARLY: the split
 * tiles' producer starts before the cluster barrier), sfbpf
 * (QG_FP8_SFB_PF: the first tile's SFB prefetched into L2) and epi
 * (QG_FP8_EPI: the cheaper e4m3 epilogue, every case). Each compiles
 * clean on split tiles (64x32 and 128x32 in clusters of 4, 64x64 and 128x64
 * in clusters of 2) and a tile of whole groups, in the kinds 0, 2, 3, into a
 * kernel other than the default's where the switch applies (its key
 * differs: the switch is in the source) and into the default's own where it
 * does not (early on a tile of whole groups: no cluster); then the
 * heuristic's pick under new on the row room changes. */
TEST(compile_fp8out_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    const char *saved = getenv("QGEMM_FP8OUT_VARIANT");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    static const struct { int kind, m, n, k, bm, bn, ue; } cases[] = {
        {0, 257, 2112, 7168, 64, 32, 0}, {0, 257, 2112, 7168, 128, 64, 0},
        {2, 300, 1160, 1536, 64, 64, 1}, {3, 1200, 4096, 2048, 128, 32, 0},
        {0, 257, 2112, 7168, 64, 128, 0}};
    /* (early+last: QG_FP8_LAST, the split tiles' release at a tile's end,
     * where early applies) */
    static const char *const variants[] = {"early", "sfbpf", "epi", "early+last"};
    for (size_t v = 0; v < 4; ++v)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            if (v == 1 && i % 2) continue; /* (sfbpf: a split tile of 4 and 2, whole groups) */
            qg_problem p = {(qg_gemm_kind)cases[i].kind, cases[i].m, cases[i].n, cases[i].k,
                            cases[i].kind ? 4 : 1, cases[i].kind == 2 ? 300 : 0, 0};
            qg_config cfg = {.block_m = cases[i].bm, .block_n = cases[i].bn};
            qg_kernel_info base, alt;
            setenv("QGEMM_FP8OUT_VARIANT", "old", 1); /* (the default is new+epi+last+nk+swm64) */
            CHECK(qg_compile_fp8out(ctx, &p, cases[i].ue, &cfg, &base) == QG_SUCCESS,
                  "default %zu: %s", i, qg_last_error());
            setenv("QGEMM_FP8OUT_VARIANT", variants[v], 1);
            char what[112];
            snprintf(what, sizeof what, "e4m3 D %s kind %d %dx%dx%d block %dx%d%s", variants[v],
                     cases[i].kind, p.m, p.n, p.k, cfg.block_m, cfg.block_n,
                     cases[i].ue ? " ue8m0" : "");
            check_kernel_out(&sw, &p, 1 + cases[i].ue, &cfg, what);
            CHECK(qg_compile_fp8out(ctx, &p, cases[i].ue, &cfg, &alt) == QG_SUCCESS, "%s",
                  qg_last_error());
            const bool applies = v == 1 || v == 2 || cases[i].bn < 128;
            CHECK((strcmp(base.key, alt.key) != 0) == applies,
                  "%s: key %s the default's (want %s)", what, applies ? "equals" : "differs from",
                  applies ? "another kernel" : "the same kernel");
        }
    setenv("QGEMM_FP8OUT_VARIANT", "new", 1);
    {
        qg_problem q = {QG_GEMM_DENSE, 64, 4096, 7168, 1, 0, 0};
        qg_config c;
        CHECK(qg_select_config_fp8out(ctx, &q, 0, &c) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(c.block_n == 64, "new 64x4096x7168: block_n %d, want 64", c.block_n);
        check_kernel_out(&sw, &q, 1, &c, "e4m3 D new heuristic 64x4096x7168");
    }
    /* nk (QG_D_FP8_NK): split tiles with split-K 2, clusters of 8 (64x32, 128x32) and
     * 4 (128x64): the heuristic's pick at N 576, forced ones */
    setenv("QGEMM_FP8OUT_VARIANT", "new+epi+nk", 1);
    {
        qg_problem q = {QG_GEMM_DENSE, 64, 576, 7168, 1, 0, 0};
        qg_config c;
        CHECK(qg_select_config_fp8out(ctx, &q, 0, &c) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(c.block_n == 32 && c.split_k == 2, "nk 64x576x7168: 64x%d split_k %d, want 64x32 2",
              c.block_n, c.split_k);
        check_kernel_out(&sw, &q, 1, &c, "e4m3 D nk heuristic 64x576x7168");
        static const int forced[][5] = {{257, 2112, 7168, 128, 32}, {300, 4096, 1024, 128, 64}};
        for (int i = 0; i < 2; ++i) {
            qg_problem f = {QG_GEMM_DENSE, forced[i][0], forced[i][1], forced[i][2], 1, 0, 0};
            qg_config fc = {.block_m = forced[i][3], .block_n = forced[i][4], .split_k = 2};
            char what[96];
            snprintf(what, sizeof what, "e4m3 D nk %dx%dx%d block %dx%d split-K 2", f.m, f.n, f.k,
                     fc.block_m, fc.block_n);
            check_kernel_out(&sw, &f, 2 - i, &fc, what);
        }
    }
    if (saved) setenv("QGEMM_FP8OUT_VARIANT", keep, 1);
    else unsetenv("QGEMM_FP8OUT_VARIANT");
    printf("    %d kernels compiled, %d failures\n", sw.compiled, sw.failures);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* The verdict itself (no compile): each finding fails the variant and is
 * counted, a clean report passes. */
TEST(compile_verdict_rules) {
    qgtk_compile_sweep sw;
    memset(&sw, 0, sizeof sw);
    sw.warnings_seen = qg__jit_warnings(NULL, 0);
    qg_kernel_info clean;
    memset(&clean, 0, sizeof clean);
    clean.registers = 128, clean.ptx_has_wgmma = 1, clean.ptx_has_tma_load = 1;
    const unsigned need = QGTK_PTX_WGMMA | QGTK_PTX_TMA_LOAD;
    CHECK(qgtk_compile_verdict(&sw, "clean", QG_SUCCESS, &clean, need, QGTK_PTX_MULTICAST),
          "a clean report failed");
    qg_kernel_info bad[6];
    for (int i = 0; i < 6; ++i) bad[i] = clean;
    bad[0].spill_store_bytes = 4, bad[1].spill_load_bytes = 4, bad[2].stack_frame_bytes = 16;
    bad[3].registers = 0, bad[4].ptx_has_tma_load = 0, bad[5].ptx_has_multicast = 1;
    printf("    (six findings expected below)\n");
    for (int i = 0; i < 6; ++i)
        CHECK(!qgtk_compile_verdict(&sw, "expected finding", QG_SUCCESS, &bad[i], need,
                                    QGTK_PTX_MULTICAST),
              "finding %d passed", i);
    qg__fail(QG_ERROR_COMPILE, "expected refusal");
    CHECK(!qgtk_compile_verdict(&sw, "expected refusal", QG_ERROR_COMPILE, NULL, 0, 0),
          "a failed compile passed");
    sw.warnings_seen++; /* as if NVRTC had logged a warning since the last variant */
    CHECK(!qgtk_compile_verdict(&sw, "expected warning", QG_SUCCESS, &clean, need, 0),
          "a new warning passed");
    CHECK(qgtk_compile_verdict(&sw, "clean again", QG_SUCCESS, &clean, need, 0),
          "the warning was blamed twice");
    CHECK(sw.checked == 10 && sw.compiled == 9 && sw.failures == 8, "counted %d / %d / %d",
          sw.checked, sw.compiled, sw.failures);
    PASS();
}

TEST(compile_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    /* the weight-gradient kinds twice: D = A B^T and D += A B^T */
    const qg_gemm_kind kinds[] = {QG_GEMM_DENSE, QG_GEMM_GROUPED_CONTIGUOUS, QG_GEMM_GROUPED_MASKED,
                                  QG_GEMM_GROUPED_PSUM, QG_GEMM_WGRAD, QG_GEMM_WGRAD,
                                  QG_GEMM_K_GROUPED, QG_GEMM_K_GROUPED};
    const int bms[] = {64, 128, 256};
    int refused = 0;
    for (int ki = 0; ki < 8; ++ki)
        for (int bi = 0; bi < 3; ++bi)
            /* the weight gradient's FP32 D takes block_n in steps of 8 */
            for (int bn = 16; bn <= 256; bn += ki >= 4 ? 8 : 16)
                for (int mc = 0; mc < 4; ++mc) { /* 3: split-K 2 (dense only) */
                    /* N = 2 * 3 * bn: an even n-block count, and off-128 column offsets. */
                    const bool grouped = kinds[ki] != QG_GEMM_DENSE && kinds[ki] != QG_GEMM_WGRAD;
                    const bool accumulate = ki == 5 || ki == 7;
                    /* (k-grouped: k is the 4 groups' sum) */
                    qg_problem p = {kinds[ki], 2048, 6 * bn, ki >= 6 ? 4 * 7168 : 7168,
                                    grouped ? 4 : 1, 0, accumulate};
                    qg_config cfg = {.block_m = bms[bi], .block_n = bn,
                                     .multicast = mc < 3 ? (qg_multicast)mc : QG_MULTICAST_NONE,
                                     .split_k = mc < 3 ? 0 : 2};
                    if (qg_complete_config(ctx, &p, &cfg) != QG_SUCCESS) {
                        refused++;
                        continue;
                    }
                    char what[96];
                    snprintf(what, sizeof what, "kind %d%s block %dx%d multicast %d split-K %d",
                             (int)kinds[ki], accumulate ? " accumulate" : "", bms[bi], bn,
                             (int)cfg.multicast, cfg.split_k);
                    check_kernel(&sw, &p, &cfg, what);
                }
    printf("    %d kernels compiled, %d configurations refused as illegal, %d failures\n",
           sw.compiled, refused, sw.failures);
    CHECK(sw.compiled >= 150, "too few variants compiled: %d", sw.compiled);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* The e4m3-D kernels (qg_fp8_out): every legal tile of whole 128-column
 * groups and of 64 / 32 columns (a group split over a cluster of 2 / 4 CTAs;
 * refused with multicast or split-K) in the 1D2D kinds, every multicast and
 * split-K, FP32 scales, and
 * UE8M0 without multicast; N a multiple of 128 (6 n-blocks) and N = 2112,
 * 576 (a last group of 64 columns: the amax's column mask). Every other
 * block_n is refused with the reason, the heuristic picks only such tiles,
 * and what it picks for the DeepSeek shapes compiles clean. */
TEST(compile_fp8out_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    const int bms[] = {64, 128, 256}, ns[] = {0, 2112, 1160};
    int refused = 0;
    for (int kind = 0; kind <= 3; ++kind)
        for (int bi = 0; bi < 3; ++bi)
            for (int bn = 32; bn <= 256; bn *= 2)
                for (int mc = 0; mc < 4; ++mc)
                    for (int ni = 0; ni < 3; ++ni)
                        for (int ue = 0; ue < 2; ++ue) {
                            if ((ue || ni) && mc) continue; /* (those lines run in the plain tiles) */
                            qg_problem p = {(qg_gemm_kind)kind, 2048, ns[ni] ? ns[ni] : 6 * bn, 7168,
                                            kind ? 4 : 1, 0, 0};
                            qg_config cfg = {.block_m = bms[bi], .block_n = bn,
                                             .multicast = mc < 3 ? (qg_multicast)mc : QG_MULTICAST_NONE,
                                             .split_k = mc < 3 ? 0 : 2};
                            qg_kernel_plan plan;
                            if (qg__complete_config_out(&ctx->props, ctx->num_sms, &p, 1 + ue, &cfg,
                                                        &plan) != QG_SUCCESS) {
                                refused++;
                                continue;
                            }
                            char what[112];
                            snprintf(what, sizeof what,
                                     "e4m3 D%s kind %d N %d block %dx%d multicast %d split-K %d",
                                     ue ? " ue8m0" : "", kind, p.n, bms[bi], bn, (int)cfg.multicast,
                                     cfg.split_k);
                            check_kernel_out(&sw, &p, 1 + ue, &cfg, what);
                        }
    printf("    %d e4m3-D kernels compiled, %d configurations refused as illegal, %d failures\n",
           sw.compiled, refused, sw.failures);
    CHECK(sw.compiled >= 30, "too few variants compiled: %d", sw.compiled);

    /* a tile of part of a scale group that no cluster splits is refused, saying why */
    qg_problem p = {QG_GEMM_DENSE, 64, 2112, 7168, 1, 0, 0};
    qg_config narrow = {.block_m = 64, .block_n = 96};
    CHECK(qg_compile_fp8out(ctx, &p, 0, &narrow, NULL) == QG_ERROR_UNSUPPORTED &&
              strstr(qg_last_error(), "FP8 output needs block_n 128 or 256") &&
              strstr(qg_last_error(), "got 96"),
          "block_n 96 with e4m3 D: %s", qg_last_error());
    CHECK(qg_compile_fp8out(ctx, &p, 2, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "ue8m0 must be 0 or 1"), "%s", qg_last_error());
    p.kind = QG_GEMM_WGRAD;
    CHECK(qg_compile_fp8out(ctx, &p, 0, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "problem->kind must be"), "%s", qg_last_error());

    /* the heuristic, the DeepSeek dense shapes at M 64..4096 and grouped ones */
    static const int nk[][2] = {{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                                {4096, 7168}, {7168, 2048}, {576, 7168}};
    static const int ms[] = {1, 64, 128, 256, 4096};
    for (size_t i = 0; i < sizeof nk / sizeof nk[0]; ++i)
        for (size_t j = 0; j < sizeof ms / sizeof ms[0]; ++j) {
            qg_problem q = {QG_GEMM_DENSE, ms[j], nk[i][0], nk[i][1], 1, 0, 0};
            qg_config c;
            CHECK(qg_select_config_fp8out(ctx, &q, 0, &c) == QG_SUCCESS, "%s", qg_last_error());
            CHECK(c.block_n % 128 == 0 || c.block_n == 64 || c.block_n == 32,
                  "M %d N %d K %d: block_n %d", q.m, q.n, q.k, c.block_n);
            char what[96];
            snprintf(what, sizeof what, "e4m3 D heuristic %dx%dx%d -> %dx%d split-K %d", q.m, q.n,
                     q.k, c.block_m, c.block_n, c.split_k);
            check_kernel_out(&sw, &q, 1, &c, what);
        }
    static const qg_problem grouped[] = {{QG_GEMM_GROUPED_CONTIGUOUS, 8192, 4096, 7168, 8, 0, 0},
                                         {QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 32, 192, 0},
                                         {QG_GEMM_GROUPED_MASKED, 1024, 7168, 2048, 6, 1024, 0},
                                         {QG_GEMM_GROUPED_PSUM, 8192, 6144, 7168, 32, 0, 0}};
    for (size_t i = 0; i < sizeof grouped / sizeof grouped[0]; ++i) {
        qg_config c;
        CHECK(qg_select_config_fp8out(ctx, &grouped[i], 1, &c) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(c.block_n % 128 == 0 || c.block_n == 64 || c.block_n == 32, "grouped %zu: block_n %d",
              i, c.block_n);
        char what[96];
        snprintf(what, sizeof what, "e4m3 D ue8m0 heuristic kind %d %dx%dx%d -> %dx%d",
                 (int)grouped[i].kind, grouped[i].m, grouped[i].n, grouped[i].k, c.block_m, c.block_n);
        check_kernel_out(&sw, &grouped[i], 2, &c, what);
    }
    CHECK(sw.failures == 0, "%d e4m3-D variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* The SwiGLU kernels (qg_swiglu_out): the default tile, 128x256, in the dense,
 * contiguous and masked kinds, without and with multicast (B: dense only),
 * FP32 and UE8M0 scales, N = 2I of the DeepSeek MoE shapes and of one 128-row
 * pair; 64x256 (QGEMM_FP8OUT_VARIANT swm64's tile) likewise without
 * multicast; the heuristic's choice on the DeepSeek MoE shapes by default and
 * under swm64+swmca+swmcac (64x256 for the masked groups of 64 rows, 128x256
 * A for 256 rows and the contiguous 4096); every other block_n, split-K and N
 * off 256 refused with the reason. */
TEST(compile_swiglu_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    static const int ns[] = {4096, 3072, 256};
    int refused = 0;
    for (int bm = 128; bm >= 64; bm -= 64)
    for (int kind = 0; kind <= 2; ++kind)
        for (int mc = 0; mc < 3; ++mc)
            for (int ni = 0; ni < 3; ++ni)
                for (int ue = 0; ue < 2; ++ue) {
                    if ((ue || ni) && mc) continue; /* (those lines run without multicast) */
                    if (bm == 64 && mc) continue;   /* (64x256: never multicast by the heuristic) */
                    qg_problem p = {(qg_gemm_kind)kind, 2048, ns[ni], 7168, kind ? 8 : 1, 0, 0};
                    qg_config cfg = {.block_m = bm, .block_n = 256, .multicast = (qg_multicast)mc};
                    qg_kernel_plan plan;
                    if (qg__complete_config_out(&ctx->props, ctx->num_sms, &p, (1 + ue) | QG_D_SWIGLU,
                                                &cfg, &plan) != QG_SUCCESS) {
                        refused++;
                        continue;
                    }
                    char what[112];
                    snprintf(what, sizeof what, "SwiGLU%s kind %d N %d block %dx%d multicast %d stages %d",
                             ue ? " ue8m0" : "", kind, p.n, cfg.block_m, cfg.block_n,
                             (int)cfg.multicast, cfg.num_stages);
                    check_kernel_out(&sw, &p, (1 + ue) | QG_D_SWIGLU, &cfg, what);
                }
    printf("    %d SwiGLU kernels compiled, %d configurations refused as illegal, %d failures\n",
           sw.compiled, refused, sw.failures);
    CHECK(sw.compiled >= 30, "too few variants compiled: %d", sw.compiled);

    /* refusals, each saying why */
    qg_problem p = {QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 8, 128, 0};
    qg_config narrow = {.block_m = 128, .block_n = 128};
    CHECK(qg_compile_swiglu(ctx, &p, 0, &narrow, NULL) == QG_ERROR_UNSUPPORTED &&
              strstr(qg_last_error(), "SwiGLU epilogue needs block_n 256") &&
              strstr(qg_last_error(), "got 128"),
          "block_n 128 with SwiGLU: %s", qg_last_error());
    qg_config split = {.block_m = 128, .block_n = 256, .split_k = 2};
    p.kind = QG_GEMM_DENSE, p.num_groups = 1, p.expected_m = 0;
    CHECK(qg_compile_swiglu(ctx, &p, 0, &split, NULL) == QG_ERROR_UNSUPPORTED &&
              strstr(qg_last_error(), "without split-K"), "split-K with SwiGLU: %s", qg_last_error());
    p.n = 4096 + 128;
    CHECK(qg_compile_swiglu(ctx, &p, 0, NULL, NULL) == QG_ERROR_UNSUPPORTED &&
              strstr(qg_last_error(), "multiple of 256, got 4224"), "N 4224: %s", qg_last_error());
    p.n = 4096;
    CHECK(qg_compile_swiglu(ctx, &p, 2, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "ue8m0 must be 0 or 1"), "%s", qg_last_error());
    p.kind = QG_GEMM_GROUPED_PSUM;
    CHECK(qg_compile_swiglu(ctx, &p, 0, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "problem->kind must be"), "%s", qg_last_error());
    qg_config c;
    CHECK(qg_select_config_swiglu(ctx, &p, 0, &c) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "qg_select_config_swiglu: problem->kind"), "%s", qg_last_error());

    /* the heuristic on the DeepSeek MoE shapes: masked G x M, contiguous 4096 rows,
     * by default and under the SwiGLU words (the e4m3 ones' default kept) */
    static const int moe_n[] = {4096, 3072};
    static const int masked[][2] = {{8, 64}, {16, 128}, {32, 256}};
    const char *saved = getenv("QGEMM_FP8OUT_VARIANT");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    for (int words = 0; words < 2; ++words) {
    if (words) setenv("QGEMM_FP8OUT_VARIANT", "new+epi+last+nk+swm64+swmca+swmcac", 1);
    else unsetenv("QGEMM_FP8OUT_VARIANT");
    for (int ni = 0; ni < 2; ++ni) {
        for (int i = 0; i < 3; ++i) {
            qg_problem q = {QG_GEMM_GROUPED_MASKED, masked[i][1], moe_n[ni], 7168, masked[i][0],
                            masked[i][1], 0};
            CHECK(qg_select_config_swiglu(ctx, &q, i % 2, &c) == QG_SUCCESS, "%s", qg_last_error());
            CHECK(c.block_n == 256 && c.split_k <= 1, "masked %d: block %dx%d", i, c.block_m, c.block_n);
            /* swm64 (in the default since 2026-11-29 y): 64 rows a group -> 64x256; swmca:
             * 256 rows (1024 / 768 tiles) -> A */
            const int want_bm = i == 0 ? 64 : 128, want_mc = words && i == 2;
            CHECK(c.block_m == want_bm && (int)c.multicast == want_mc,
                  "masked %dx%dx%d words %d: block %dx%d mc %d, want %dx256 mc %d", q.num_groups, q.m,
                  q.n, words, c.block_m, c.block_n, (int)c.multicast, want_bm, want_mc);
            char what[128];
            snprintf(what, sizeof what, "SwiGLU heuristic%s masked %dx%dx%dx7168 -> %dx%d mc %d stages %d",
                     words ? " (sw words)" : "", q.num_groups, q.m, q.n, c.block_m, c.block_n,
                     (int)c.multicast, c.num_stages);
            check_kernel_out(&sw, &q, (1 + i % 2) | QG_D_SWIGLU, &c, what);
        }
        qg_problem q = {QG_GEMM_GROUPED_CONTIGUOUS, 4096, moe_n[ni], 7168, 8, 0, 0};
        CHECK(qg_select_config_swiglu(ctx, &q, 0, &c) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(c.block_m == 128 && c.block_n == 256 && (int)c.multicast == words,
              "contiguous 4096x%d words %d: block %dx%d mc %d", q.n, words, c.block_m, c.block_n,
              (int)c.multicast);
        char what[128];
        snprintf(what, sizeof what, "SwiGLU heuristic%s contiguous 4096x%dx7168 -> %dx%d mc %d stages %d",
                 words ? " (sw words)" : "", q.n, c.block_m, c.block_n, (int)c.multicast, c.num_stages);
        check_kernel_out(&sw, &q, 1 | QG_D_SWIGLU, &c, what);
    }
    }
    if (saved) setenv("QGEMM_FP8OUT_VARIANT", keep, 1);
    else unsetenv("QGEMM_FP8OUT_VARIANT");
    CHECK(sw.failures == 0, "%d SwiGLU variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* Every configuration the GPU's forced sweep runs (tests/forced.h). */
TEST(compile_forced_sweep) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    static qg_config cfgs[QG_FORCED_MAX];
    static qg_problem probs[QG_FORCED_MAX];
    int first[QG_FORCED_NSHAPES + 1], unsupported[QG_FORCED_NSHAPES];
    const int total = qg_forced_configs(ctx, probs, cfgs, first, unsupported);
    CHECK(total > 0, "enumerating the forced configurations: %s", qg_last_error());
    qgtk_compile_many(ctx, probs, cfgs, total, NULL); /* in parallel; checked below */
    for (int i = 0; i < total; i++) {
        char what[96];
        snprintf(what, sizeof what, "%dx%dx%d block %dx%d stages %d multicast %d split-K %d",
                 probs[i].m, probs[i].n, probs[i].k, cfgs[i].block_m, cfgs[i].block_n,
                 cfgs[i].num_stages, (int)cfgs[i].multicast, cfgs[i].split_k);
        check_kernel(&sw, &probs[i], &cfgs[i], what);
    }
    printf("    %d kernels checked, %d failures\n", sw.checked, sw.failures);
    CHECK(sw.failures == 0, "%d forced configurations failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* B multicast in the contiguous, masked and psum kinds (per-tile pairs and
 * dummy tiles, kernels/qg_scheduler.cuh QG_PAIR_TILES): every legal tile
 * with the stages the planner gives it at K 7168 and, where that is more
 * than 6 for a two-warpgroup tile, with 4 (the 56-register producer instead
 * of 72), plus the 128 x 160..256 and 256x128 tiles at K 1536 (the short K
 * loop whose unrolling spilled a 40-register producer before, qg_pin). N =
 * 3 block_n: an odd n-block count, off-128 column offsets. */
TEST(compile_grouped_multicast_b) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    static qg_config cfgs[512];
    static qg_problem probs[512];
    const qg_gemm_kind kinds[] = {QG_GEMM_GROUPED_CONTIGUOUS, QG_GEMM_GROUPED_MASKED,
                                  QG_GEMM_GROUPED_PSUM};
    const int bms[] = {64, 128, 256};
    int total = 0, refused = 0;
    for (int ki = 0; ki < 3; ++ki)
        for (int bi = 0; bi < 3; ++bi)
            for (int bn = 16; bn <= 256; bn += 16)
                for (int v = 0; v < 3; ++v) { /* K 7168; K 7168 at 4 stages; K 1536 */
                    const int bm = bms[bi];
                    if (v == 2 && !((bm == 128 && bn >= 160) || (bm == 256 && bn == 128))) continue;
                    qg_problem p = {kinds[ki], 2048, 3 * bn, v == 2 ? 1536 : 7168, 4,
                                    kinds[ki] == QG_GEMM_GROUPED_MASKED ? 1000 : 0, 0};
                    qg_config cfg = {.block_m = bm, .block_n = bn, .multicast = QG_MULTICAST_B};
                    if (qg_complete_config(ctx, &p, &cfg) != QG_SUCCESS) {
                        refused += v == 0;
                        continue;
                    }
                    if (v == 1) {
                        if (bm == 64 || cfg.num_stages <= 6) continue;
                        cfg.num_stages = 4;
                        if (qg_complete_config(ctx, &p, &cfg) != QG_SUCCESS) continue;
                    }
                    CHECK(total < 512, "too many variants");
                    probs[total] = p, cfgs[total++] = cfg;
                }
    qgtk_compile_many(ctx, probs, cfgs, total, NULL); /* in parallel; checked below */
    for (int i = 0; i < total; i++) {
        char what[128];
        snprintf(what, sizeof what, "kind %d %dx%dx%d block %dx%d stages %d multicast B",
                 (int)probs[i].kind, probs[i].m, probs[i].n, probs[i].k, cfgs[i].block_m,
                 cfgs[i].block_n, cfgs[i].num_stages);
        check_kernel(&sw, &probs[i], &cfgs[i], what);
    }
    printf("    %d kernels checked (%d tiles refused as illegal), %d failures\n", sw.checked,
           refused, sw.failures);
    CHECK(sw.checked >= 90, "too few variants: %d", sw.checked);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* The split-K edge cases the GPU runs (tests/forced.h). */
TEST(compile_split_k_edges) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    for (int i = 0; i < QG_SPLIT_EDGES; i++) {
        const qg_split_edge *e = &qg_split_edges[i];
        const qg_problem p = {QG_GEMM_DENSE, e->m, e->n, e->k, 1, 0, 0};
        qg_config cfg = e->cfg;
        char what[96];
        snprintf(what, sizeof what, "%dx%dx%d block %dx%d stages %d split-K", e->m, e->n, e->k,
                 cfg.block_m, cfg.block_n, cfg.num_stages);
        if (qg_complete_config(ctx, &p, &cfg) != QG_SUCCESS || cfg.split_k != 2) {
            printf("    %s: refused: %s\n", what, qg_last_error());
            sw.failures++; /* a failure of the sweep, not of a compile */
            continue;
        }
        check_kernel(&sw, &p, &cfg, what);
    }
    printf("    %d kernels checked, %d failures\n", sw.checked, sw.failures);
    CHECK(sw.failures == 0, "%d split-K edge cases failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

TEST(compile_heuristic_choices) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    const int ns_ks[][2] = {{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                            {4096, 7168}, {7168, 2048},  {576, 400},   {8, 16},   {112, 112}};
    const int ms[] = {1, 7, 64, 100, 128, 257, 1000, 4096};
    for (size_t j = 0; j < sizeof ns_ks / sizeof ns_ks[0]; ++j)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i) {
            qg_problem p = {QG_GEMM_DENSE, ms[i], ns_ks[j][0], ns_ks[j][1], 1, 0, 0};
            char what[64];
            snprintf(what, sizeof what, "dense %dx%dx%d", ms[i], ns_ks[j][0], ns_ks[j][1]);
            check_kernel(&sw, &p, NULL, what);
        }
    /* Grouped layouts as the MoE benchmarks use them, then other tests' shapes. */
    const qg_problem more[] = {
        {QG_GEMM_GROUPED_CONTIGUOUS, 32768, 4096, 7168, 4, 0, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 32768, 7168, 2048, 8, 0, 0},
        {QG_GEMM_GROUPED_MASKED, 1024, 4096, 7168, 1, 1024, 0},
        {QG_GEMM_GROUPED_MASKED, 512, 7168, 2048, 2, 512, 0},
        {QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 4, 256, 0},
        {QG_GEMM_GROUPED_MASKED, 192, 576, 400, 32, 100, 0},
        /* the shapes of the grouped GPU tests (tests/test_grouped_gpu.c) */
        {QG_GEMM_GROUPED_CONTIGUOUS, 2944, 576, 400, 8, 0, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 4096, 576, 400, 32, 0, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 1024, 576, 400, 4, 0, 0},
        {QG_GEMM_GROUPED_MASKED, 1024, 576, 400, 6, 700, 0},
        {QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 4, 128, 0},
        {QG_GEMM_GROUPED_MASKED, 1024, 7168, 2048, 1, 512, 0},
        {QG_GEMM_GROUPED_MASKED, 1024, 4096, 7168, 1, 1024, 0},
        {QG_GEMM_GROUPED_MASKED, 1024, 7168, 2048, 6, 1024, 0},
        {QG_GEMM_GROUPED_MASKED, 1024, 576, 400, 6, 1024, 0},
        /* the psum and weight-gradient shapes of DeepGEMM's tests (the Python GPU tests) */
        {QG_GEMM_GROUPED_PSUM, 34304, 6144, 7168, 4, 0, 0},
        {QG_GEMM_GROUPED_PSUM, 131072, 4096, 7168, 32, 230, 0},
        {QG_GEMM_WGRAD, 2112, 4096, 7168, 1, 0, 1}, {QG_GEMM_WGRAD, 24576, 4096, 1536, 1, 0, 1},
        {QG_GEMM_WGRAD, 576, 4096, 7168, 1, 0, 0},
        /* DeepGEMM's k-grouped shapes (G groups of the mean K; peers.py) */
        {QG_GEMM_K_GROUPED, 4096, 7168, 4 * 8192, 4, 0, 1},
        {QG_GEMM_K_GROUPED, 7168, 2048, 8 * 4096, 8, 0, 1},
        {QG_GEMM_K_GROUPED, 4096, 7168, 16 * 2048, 16, 0, 1},
        {QG_GEMM_K_GROUPED, 7168, 2048, 16 * 2048, 16, 0, 0},
        /* qgemm check's split-K cases (tools/qgemm.c) */
        {QG_GEMM_DENSE, 64, 1536, 7296, 1, 0, 0}, {QG_GEMM_DENSE, 33, 576, 7168, 1, 0, 0},
        {QG_GEMM_DENSE, 64, 2112, 7296, 1, 0, 0},
        {QG_GEMM_DENSE, 100, 2112, 7296, 1, 0, 0},
        /* qgemm check's masked 256x128 cases (tools/qgemm.c), whose rows name
         * the heuristic's choice */
        {QG_GEMM_GROUPED_MASKED, 1000, 4104, 1040, 2, 1000, 0},
        {QG_GEMM_GROUPED_MASKED, 1024, 4096, 256, 2, 1024, 0},
        /* the Python GPU tests' dense shapes (tests/python/test_gpu.py) */
        {QG_GEMM_DENSE, 512, 1024, 2048, 1, 0, 0}, {QG_GEMM_DENSE, 256, 512, 1024, 1, 0, 0},
        {QG_GEMM_DENSE, 1024, 2048, 1024, 1, 0, 0}, {QG_GEMM_DENSE, 128, 256, 256, 1, 0, 0},
        {QG_GEMM_DENSE, 256, 1024, 512, 1, 0, 0}, {QG_GEMM_DENSE, 256, 2112, 7168, 1, 0, 0},
        {QG_GEMM_DENSE, 256, 512, 768, 1, 0, 0}, {QG_GEMM_DENSE, 300, 768, 1024, 1, 0, 0},
        {QG_GEMM_DENSE, 200, 512, 1024, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; ++i) {
        char what[96];
        snprintf(what, sizeof what, "kind %d %dx%dx%d G=%d", (int)more[i].kind, more[i].m,
                 more[i].n, more[i].k, more[i].num_groups);
        check_kernel(&sw, &more[i], NULL, what);
    }
    printf("    %d kernels checked, %d failures\n", sw.checked, sw.failures);
    CHECK(sw.failures == 0, "%d heuristic choices failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* The cubin's own resource attributes (the fallback when NVRTC's log has no
 * ptxas report) agree with ptxas's report, and malformed input is refused.
 * The testkit's helper kernels (the fp64 reference, the bench's L2 read, the
 * PDL probe of the GPU tests) compile with the library's JIT, without a
 * stack frame. */
#include "internal.h"
TEST(compile_cubin_resources_match_ptxas) {
    qg_jit_cache *cache = NULL;
    CHECK(qg__jit_cache_create(&cache) == QG_SUCCESS, "%s", qg_last_error());
    const char *names[] = {"reference.cuh", "l2_flush.cuh", "pdl_probe.cuh", "a spilling kernel"};
    const char *sources[] = {
        qgtk_kernel_source(names[0]),
        qgtk_kernel_source(names[1]),
        qgtk_kernel_source(names[2]),
        "extern \"C\" __global__ void k(float *x, int i) { float a[256];\n"
        "  for (int j = 0; j < 256; j++) a[j] = x[j] * j;\n"
        "  x[0] = a[i & 255] + a[(i * 7) & 255]; }\n",
    };
    const int helpers = 3;
    for (int i = 0; i <= helpers; ++i) {
        CHECK(sources[i], "the testkit does not embed %s", names[i]);
        qg_jit_result res;
        qg_status st = qg__jit_compile(cache, sources[i], &res);
        int regs = -1, frame = -1;
        if (i < helpers) {
            CHECK(st == QG_SUCCESS, "%s: %s", names[i], qg_last_error());
            CHECK(qg__cubin_resources(res.cubin, res.cubin_size, &regs, &frame), "parse");
            CHECK(regs == res.info.registers && frame == res.info.stack_frame_bytes,
                  "cubin says %d regs / %d frame, ptxas %d / %d", regs, frame,
                  res.info.registers, res.info.stack_frame_bytes);
            CHECK(!qg__cubin_resources(res.cubin, 40, &regs, &frame), "truncated cubin accepted");
        } else {
            /* A run-time indexed local array needs a stack frame: rejected. */
            CHECK(st == QG_ERROR_COMPILE && strstr(qg_last_error(), "stack"), "%s", qg_last_error());
        }
    }
    qg__jit_cache_destroy(cache);
    PASS();
}

/* Problems where the heuristic's tile spills at this K with this compiler
 * (CPU sweep over K, 2026-11-25 f: 256x128 A at K = 1152, dense and masked;
 * contiguous and psum 128x192 A at K = 16384; masked 256x128 also spills
 * at 1536 and 24576, where the heuristic takes 128x192 A for 6 x ~1024 rows):
 * the call without a forced configuration must
 * still compile a clean kernel (qg_compile falls back to the next tile).
 * Whether a given NVRTC spills there or not, the kernel qg_compile returns
 * has no spill. */
TEST(compile_spilling_k_falls_back) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    static const qg_problem problems[] = {
        {QG_GEMM_DENSE, 4096, 4096, 1152, 1, 0, 0},
        {QG_GEMM_GROUPED_MASKED, 4096, 4096, 1152, 32, 230, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 32768, 4608, 16384, 4, 0, 0},
        {QG_GEMM_GROUPED_PSUM, 32768, 4608, 16384, 4, 0, 0},
    };
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++) {
        const qg_problem *p = &problems[i];
        qg_config chosen;
        qg_kernel_info info;
        CHECK(qg_select_config(ctx, p, &chosen) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(qg_compile(ctx, p, NULL, &info) == QG_SUCCESS, "kind %d %dx%dx%d: %s", (int)p->kind,
              p->m, p->n, p->k, qg_last_error());
        CHECK(info.spill_store_bytes == 0 && info.spill_load_bytes == 0 &&
                  info.stack_frame_bytes == 0,
              "kind %d %dx%dx%d: the compiled kernel spills %d/%d", (int)p->kind, p->m, p->n, p->k,
              info.spill_store_bytes, info.spill_load_bytes);
        /* (the first choice forced: refused where it spills) */
        const bool first_spills = qg_compile(ctx, p, &chosen, NULL) != QG_SUCCESS;
        printf("    kind %d %dx%dx%d: heuristic %dx%d multicast %d%s\n", (int)p->kind, p->m, p->n,
               p->k, chosen.block_m, chosen.block_n, (int)chosen.multicast,
               first_spills ? " refused (spills): fell back to the next tile" : " compiled clean");
    }
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* A configuration the heuristic chose never ends in a compile failure: when
 * the JIT refuses it (for a real kernel: spills or serialized wgmma for this
 * N and K), the next one the heuristic ranks is compiled. A forced
 * configuration is the caller's, and its refusal is returned.
 * The testkit's fault (qgtk_refuse_tile) stands in for a kernel that spills. */
TEST(compile_falls_back_when_refused) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, PROGRESS_EVERY, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    qg_context *ctx = sw.ctx;
    const qg_problem p = {QG_GEMM_DENSE, 4096, 7168, 2048, 1, 0, 0};
    qg_config first, next;
    qg_kernel_plan plan;
    CHECK(qg_select_config(ctx, &p, &first) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qg__select_avoiding(&ctx->props, ctx->num_sms, &p, &first, 1, &next, &plan) ==
              QG_SUCCESS, "%s", qg_last_error());
    char refuse[32];
    snprintf(refuse, sizeof refuse, "%dx%d", first.block_m, first.block_n);
    qgtk_refuse_tile(first.block_m, first.block_n);
    qg_kernel_info got, want;
    const qg_status st = qg_compile(ctx, &p, NULL, &got);
    char got_error[256];
    snprintf(got_error, sizeof got_error, "%s", qg_last_error());
    /* Forced: the refusal is the answer. */
    const qg_status forced_st = qg_compile(ctx, &p, &first, NULL);
    char forced_error[256];
    snprintf(forced_error, sizeof forced_error, "%s", qg_last_error());
    qgtk_refuse_tile(0, 0); /* before any CHECK can return */
    CHECK(st == QG_SUCCESS, "heuristic's choice %s refused and no fallback: %s", refuse, got_error);
    /* A refused tile is avoided in every multicast mode: the fallback is the
     * heuristic's choice among the other tiles. */
    CHECK(next.block_m != first.block_m || next.block_n != first.block_n,
          "avoiding %dx%d chose it again", first.block_m, first.block_n);
    CHECK(qg_compile(ctx, &p, &next, &want) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(!strcmp(got.key, want.key), "fallback compiled %s, the heuristic's next choice %dx%d is %s",
          got.key, next.block_m, next.block_n, want.key);
    CHECK(forced_st == QG_ERROR_COMPILE && strstr(forced_error, refuse) &&
              strstr(forced_error, "refused"),
          "forced %s: %s", refuse, forced_error);
    qgtk_compile_sweep_close(&sw);
    PASS();
}
