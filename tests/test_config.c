/*
 * test_config.c -- the configuration heuristic, forced-config checks and
 * argument validation of the GEMM entry points. CPU only: uses offline
 * contexts (an H100 description) and fake, well-aligned pointers that are
 * never dereferenced because validation stops before any launch; and the
 * kernel plan of a configuration (src/config.c's qg__plan, internal).
 */
#include "internal.h"
#include "qg_test.h"
#include "qgemm.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static qg_context *h100(void) {
    qg_context *ctx = NULL;
    return qg_context_create_offline(&ctx, NULL) == QG_SUCCESS ? ctx : NULL;
}

static const int ds_mnk[][3] = {
    {64, 2112, 7168},  {64, 24576, 1536},  {64, 32768, 512},  {64, 7168, 16384},
    {64, 4096, 7168},  {64, 7168, 2048},   {128, 2112, 7168}, {128, 24576, 1536},
    {128, 32768, 512}, {128, 7168, 16384}, {128, 4096, 7168}, {128, 7168, 2048},
    {4096, 2112, 7168}, {4096, 24576, 1536}, {4096, 32768, 512}, {4096, 7168, 16384},
    {4096, 4096, 7168}, {4096, 7168, 2048}, {1, 8, 16}, {7, 112, 112}, {257, 576, 400},
    {1000, 2112, 1536}, {100, 24576, 7168}, {4096, 8, 16384}};

static long long waves_of(int m, int n, int bm, int bn, int sms) {
    long long tiles = (long long)((m + bm - 1) / bm) * ((n + bn - 1) / bn);
    return (tiles + sms - 1) / sms;
}

/* The selected config is legal and fits the device. For small problems (at
 * most 256 rows: bound by reading B) no legal tile shape needs fewer waves
 * over the persistent grid (docs/DESIGN.md §5, rule 2); for large ones the
 * cost model trades waves for tile efficiency, but never by more than 1.5x. */
TEST(config_heuristic_minimises_waves) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context: %s", qg_last_error());
    for (size_t i = 0; i < sizeof ds_mnk / sizeof ds_mnk[0]; ++i) {
        const int m = ds_mnk[i][0], n = ds_mnk[i][1], k = ds_mnk[i][2];
        qg_problem p = {QG_GEMM_DENSE, m, n, k, 1, 0, 0};
        qg_config cfg;
        CHECK(qg_select_config(ctx, &p, &cfg) == QG_SUCCESS, "%dx%dx%d: %s", m, n, k, qg_last_error());
        CHECK(cfg.smem_bytes <= 232448, "%dx%dx%d: smem %zu", m, n, k, cfg.smem_bytes);
        CHECK(cfg.num_stages >= 1 && cfg.num_stages <= 32, "stages %d", cfg.num_stages);
        /* As many stages as fit: one more is refused (or the cap of 32 is reached). */
        qg_config deeper = cfg;
        deeper.num_stages++;
        CHECK(cfg.num_stages == 32 || qg_complete_config(ctx, &p, &deeper) == QG_ERROR_UNSUPPORTED,
              "%dx%dx%d: %d stages chosen but %d fit", m, n, k, cfg.num_stages, deeper.num_stages);
        CHECK(cfg.num_sms == 132, "num_sms %d", cfg.num_sms);
        qg_config again = cfg;
        CHECK(qg_complete_config(ctx, &p, &again) == QG_SUCCESS, "selected config rejected: %s",
              qg_last_error());
        const long long chosen = waves_of(m, n, cfg.block_m, cfg.block_n, 132);
        const int bms[] = {64, 128, 256};
        for (int a = 0; a < 3; ++a)
            for (int bn = 16; bn <= 256; bn += 16) {
                qg_config c = {0};
                c.block_m = bms[a];
                c.block_n = bn;
                if (m <= 64 && bms[a] > 64) continue; /* the heuristic's own exclusion */
                if (m <= 256 && bms[a] == 256) continue; /* 256-row tiles: large only */
                if (m <= 256 && bms[a] == 128 && bn >= 176) continue; /* wide: large only */
                if (qg_complete_config(ctx, &p, &c) != QG_SUCCESS) continue;
                const long long w = waves_of(m, n, bms[a], bn, 132);
                CHECK(m > 256 ? 2 * chosen <= 3 * w : w >= chosen,
                      "%dx%dx%d: chose %dx%d (%lld waves) but %dx%d needs %lld", m, n, k,
                      cfg.block_m, cfg.block_n, chosen, bms[a], bn, w);
            }
    }
    qg_context_destroy(ctx);
    PASS();
}

TEST(config_multicast_rules) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context");
    qg_problem big = {QG_GEMM_DENSE, 4096, 7168, 7168, 1, 0, 0};
    qg_config cfg;
    CHECK(qg_select_config(ctx, &big, &cfg) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(cfg.multicast != QG_MULTICAST_NONE, "M=4096 on an even SM count should multicast");
    CHECK(cfg.num_sms % 2 == 0, "cluster grid must be even, got %d", cfg.num_sms);
    qg_problem small = {QG_GEMM_DENSE, 64, 7168, 7168, 1, 0, 0};
    CHECK(qg_select_config(ctx, &small, &cfg) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(cfg.multicast == QG_MULTICAST_NONE, "M=64 should not multicast");

    /* The tile order (swizzle_group 0 = the library's): small dense problems
     * without multicast put the m-blocks of one n-block on consecutive CTAs
     * (1), everything else groups 16 blocks; a caller's value is kept. */
    const struct { qg_problem p; int bm, bn; qg_multicast mc; int swizzle; } order[] = {
        {{QG_GEMM_DENSE, 128, 4096, 7168, 1, 0, 0}, 64, 64, QG_MULTICAST_NONE, 1},
        {{QG_GEMM_DENSE, 256, 7168, 2048, 1, 0, 0}, 128, 112, QG_MULTICAST_NONE, 1},
        {{QG_GEMM_DENSE, 257, 7168, 2048, 1, 0, 0}, 128, 112, QG_MULTICAST_NONE, 16},
        {{QG_GEMM_DENSE, 4096, 7168, 7168, 1, 0, 0}, 256, 128, QG_MULTICAST_A, 16},
        {{QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 4, 128, 0}, 64, 64, QG_MULTICAST_NONE, 16},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        qg_config c = (qg_config){.block_m = order[i].bm, .block_n = order[i].bn, .multicast = order[i].mc};
        CHECK(qg_complete_config(ctx, &order[i].p, &c) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(c.swizzle_group == order[i].swizzle, "%dx%dx%d kind %d %dx%d: swizzle %d, expected %d",
              order[i].p.m, order[i].p.n, order[i].p.k, (int)order[i].p.kind, order[i].bm,
              order[i].bn, c.swizzle_group, order[i].swizzle);
        c = (qg_config){.block_m = order[i].bm, .block_n = order[i].bn, .multicast = order[i].mc,
                        .swizzle_group = 8};
        CHECK(qg_complete_config(ctx, &order[i].p, &c) == QG_SUCCESS && c.swizzle_group == 8,
              "a caller's swizzle_group 8 became %d", c.swizzle_group);
    }

    /* Multicast A with an odd number of n-blocks is refused, naming the rule. */
    qg_problem odd = {QG_GEMM_DENSE, 1024, 48, 512, 1, 0, 0};
    qg_config c = {.block_m = 128, .block_n = 16, .multicast = QG_MULTICAST_A};
    CHECK(qg_complete_config(ctx, &odd, &c) == QG_ERROR_UNSUPPORTED, "odd n-blocks accepted");
    CHECK(strstr(qg_last_error(), "n-blocks"), "message: %s", qg_last_error());
    /* Multicast B in the grouped kinds: see config_grouped_multicast_b. */

    /* The weight gradient runs the dense scheduler: B multicast is legal when
     * half of block_n rows of B start 1024-byte aligned (block_n % 16 == 0);
     * block_n a multiple of 8 up to 160. */
    qg_problem wgrad = {QG_GEMM_WGRAD, 4096, 4096, 7168, 1, 0, 1};
    c = (qg_config){.block_m = 128, .block_n = 144, .multicast = QG_MULTICAST_B};
    CHECK(qg_complete_config(ctx, &wgrad, &c) == QG_SUCCESS, "wgrad 128x144 B: %s", qg_last_error());
    c = (qg_config){.block_m = 128, .block_n = 152, .multicast = QG_MULTICAST_B};
    CHECK(qg_complete_config(ctx, &wgrad, &c) == QG_ERROR_UNSUPPORTED, "wgrad 128x152 B accepted");
    CHECK(strstr(qg_last_error(), "multiple of 16, got 152"), "message: %s", qg_last_error());
    c = (qg_config){.block_m = 128, .block_n = 152};
    CHECK(qg_complete_config(ctx, &wgrad, &c) == QG_SUCCESS, "wgrad 128x152: %s", qg_last_error());
    static const int bad_bn[] = {156, 168, 8, 256};
    for (size_t i = 0; i < sizeof bad_bn / sizeof bad_bn[0]; i++) {
        c = (qg_config){.block_m = 128, .block_n = bad_bn[i]};
        CHECK(qg_complete_config(ctx, &wgrad, &c) == QG_ERROR_UNSUPPORTED, "wgrad bn %d accepted",
              bad_bn[i]);
        CHECK(strstr(qg_last_error(), "multiple of 8 in [16, 160]"), "message: %s", qg_last_error());
    }
    /* bf16 D keeps block_n a multiple of 16 */
    c = (qg_config){.block_m = 128, .block_n = 152};
    CHECK(qg_complete_config(ctx, &big, &c) == QG_ERROR_UNSUPPORTED, "dense 128x152 accepted");
    qg_context_destroy(ctx);
    PASS();
}

/* B multicast in the contiguous, masked and psum kinds (per-tile pairs,
 * kernels/qg_scheduler.cuh QG_PAIR_TILES): accepted when forced with bf16 D,
 * whatever the m-block count and swizzle group; refused with e4m3 or SwiGLU
 * D and in the k-grouped kind, naming why; dense keeps its even-m-block rule.
 * The heuristic picks it with QGEMM_FP8_GROUPED_MCB on (read per call; unset:
 * on for the H200, dram_gbps >= 4500, off for the H100), and then takes
 * 128x192 B where DeepGEMM does on the rows below (bench/dg_heuristic.py
 * --grouped-mcb), never at one wave, never for e4m3 D. */
TEST(config_grouped_multicast_b) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context");
    qg_device_props props = {.sm_count = 132, .cc_major = 9, .cc_minor = 0,
                             .smem_optin_bytes = 232448, .l2_bytes = 50u << 20, .dram_gbps = 4915};
    qg_context *h200 = NULL;
    CHECK(qg_context_create_offline(&h200, &props) == QG_SUCCESS, "%s", qg_last_error());
    const char *saved_env = getenv("QGEMM_FP8_GROUPED_MCB");
    char *saved = saved_env ? strdup(saved_env) : NULL;
    unsetenv("QGEMM_FP8_GROUPED_MCB");
    /* the rule itself, DeepGEMM's rows: the heuristic without QGEMM_FP8_HEUR's
     * alternatives (none; the default's nomcb drops B on the 4 x 307 rows at
     * K 4096: config_fp8_heur) */
    const char *saved_heur_env = getenv("QGEMM_FP8_HEUR");
    char *saved_heur = saved_heur_env ? strdup(saved_heur_env) : NULL;
    setenv("QGEMM_FP8_HEUR", "none", 1);

    /* forced: odd m-block counts, an odd swizzle group, every grouped kind */
    const qg_problem forced[] = {
        {QG_GEMM_GROUPED_MASKED, 384, 576, 7168, 5, 200, 0},   /* 3 m-blocks of 128 a group */
        {QG_GEMM_GROUPED_CONTIGUOUS, 1152, 576, 400, 4, 0, 0}, /* 9 m-blocks */
        {QG_GEMM_GROUPED_PSUM, 1000, 4096, 7168, 3, 0, 0},
    };
    for (size_t i = 0; i < sizeof forced / sizeof forced[0]; i++) {
        qg_config c = {.block_m = 128, .block_n = 192, .multicast = QG_MULTICAST_B, .swizzle_group = 3};
        CHECK(qg_complete_config(ctx, &forced[i], &c) == QG_SUCCESS, "kind %d 128x192 B: %s",
              (int)forced[i].kind, qg_last_error());
        CHECK(c.multicast == QG_MULTICAST_B && c.swizzle_group == 3 && c.num_sms % 2 == 0,
              "kind %d: multicast %d swizzle %d grid %d", (int)forced[i].kind, (int)c.multicast,
              c.swizzle_group, c.num_sms);
        c = (qg_config){.block_m = 64, .block_n = 96, .multicast = QG_MULTICAST_B};
        CHECK(qg_complete_config(ctx, &forced[i], &c) == QG_SUCCESS, "kind %d 64x96 B: %s",
              (int)forced[i].kind, qg_last_error());
        /* e4m3 and SwiGLU D: refused, naming the output (bf16 D only) */
        c = (qg_config){.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_B};
        qg_config out;
        CHECK(qg_select_config_fp8out(ctx, &forced[i], 0, &out) == QG_SUCCESS, "%s", qg_last_error());
        qg_kernel_info info;
        CHECK(qg_compile_fp8out(ctx, &forced[i], 0, &c, &info) == QG_ERROR_UNSUPPORTED,
              "kind %d e4m3 D with B multicast accepted", (int)forced[i].kind);
        CHECK(strstr(qg_last_error(), "multicast B in the contiguous, masked and psum kinds is for "
                                      "bf16 D") && strstr(qg_last_error(), "got e4m3 D"),
              "message: %s", qg_last_error());
    }
    qg_problem sw = {QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 4, 256, 0};
    qg_config c = {.block_m = 128, .block_n = 256, .multicast = QG_MULTICAST_B};
    CHECK(qg_compile_swiglu(ctx, &sw, 0, &c, NULL) == QG_ERROR_UNSUPPORTED, "SwiGLU B accepted");
    CHECK(strstr(qg_last_error(), "got SwiGLU D"), "message: %s", qg_last_error());
    /* k-grouped: no multicast at all */
    qg_problem kg = {QG_GEMM_K_GROUPED, 4096, 7168, 4 * 2048, 4, 0, 1};
    c = (qg_config){.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_B};
    CHECK(qg_complete_config(ctx, &kg, &c) == QG_ERROR_UNSUPPORTED, "k-grouped B accepted");
    CHECK(strstr(qg_last_error(), "k-grouped kernel runs without multicast"), "message: %s",
          qg_last_error());
    /* dense keeps its rule: an odd m-block count is refused, naming it */
    qg_problem dense = {QG_GEMM_DENSE, 384, 4096, 7168, 1, 0, 0};
    c = (qg_config){.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_B};
    CHECK(qg_complete_config(ctx, &dense, &c) == QG_ERROR_UNSUPPORTED, "dense odd m-blocks B");
    CHECK(strstr(qg_last_error(), "in dense GEMMs: needs an even number of m-blocks (M 384 / "
                                  "block_m 128 gives 3)"), "message: %s", qg_last_error());

    /* The heuristic: DeepGEMM's B rows (bench/dg_heuristic.py; contiguous
     * M as peers.py draws it does not matter here: every row's total) */
    const qg_problem rows[] = {
        {QG_GEMM_GROUPED_MASKED, 1024, 6144, 7168, 1, 1024, 0},
        {QG_GEMM_GROUPED_MASKED, 4096, 4096, 4096, 4, 307, 0},
        {QG_GEMM_GROUPED_MASKED, 4096, 6144, 7168, 4, 307, 0},
        {QG_GEMM_GROUPED_MASKED, 4096, 4096, 2048, 6, 1228, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 32768, 4096, 4096, 4, 0, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 32768, 6144, 7168, 8, 0, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 8192, 4096, 2048, 32, 0, 0},
    };
    static const char *const modes[3] = {NULL, "1", "0"}; /* unset: the device's default */
    for (int mode = 0; mode < 3; ++mode) {
        if (modes[mode]) setenv("QGEMM_FP8_GROUPED_MCB", modes[mode], 1);
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            for (int dev = 0; dev < 2; ++dev) {
                qg_config cfg;
                CHECK(qg_select_config(dev ? h200 : ctx, &rows[i], &cfg) == QG_SUCCESS, "%s",
                      qg_last_error());
                const bool want_b = mode == 1 || (mode == 0 && dev == 1);
                CHECK((cfg.multicast == QG_MULTICAST_B) == want_b &&
                          (!want_b || (cfg.block_m == 128 && cfg.block_n == 192)),
                      "%s, QGEMM_FP8_GROUPED_MCB %s: kind %d %d x %d (M %d) N %d K %d chose %dx%d "
                      "multicast %d", dev ? "H200" : "H100", modes[mode] ? modes[mode] : "unset",
                      (int)rows[i].kind, rows[i].num_groups, rows[i].expected_m, rows[i].m,
                      rows[i].n, rows[i].k, cfg.block_m, cfg.block_n, (int)cfg.multicast);
                /* e4m3 D: never B in these kinds */
                CHECK(qg_select_config_fp8out(dev ? h200 : ctx, &rows[i], 0, &cfg) == QG_SUCCESS,
                      "%s", qg_last_error());
                CHECK(cfg.multicast != QG_MULTICAST_B, "e4m3 D picked B multicast (kind %d)",
                      (int)rows[i].kind);
            }
        /* one wave or less: never multicast (1 group of 256 rows, N 4096:
         * 2 x 16 tiles) */
        qg_problem one_wave = {QG_GEMM_GROUPED_MASKED, 512, 4096, 7168, 1, 300, 0};
        qg_config cfg;
        CHECK(qg_select_config(h200, &one_wave, &cfg) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(cfg.multicast != QG_MULTICAST_B, "one wave: picked B (%dx%d)", cfg.block_m,
              cfg.block_n);
    }
    if (saved) setenv("QGEMM_FP8_GROUPED_MCB", saved, 1);
    else unsetenv("QGEMM_FP8_GROUPED_MCB");
    free(saved);
    if (saved_heur) setenv("QGEMM_FP8_HEUR", saved_heur, 1);
    else unsetenv("QGEMM_FP8_HEUR");
    free(saved_heur);
    qg_context_destroy(h200);
    qg_context_destroy(ctx);
    PASS();
}

/* The wide tiles: legal where their registers fit (256 x 128 where 256-row
 * tiles exist, 128 x [208, 224] and 128 x 256 in every kind but the weight
 * gradient), chosen for large problems (dense: 256x128 with A multicast
 * measured fastest; masked and psum: 128x256), never for small dense ones. */
TEST(config_wide_tiles) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context");
    qg_config cfg;
    /* Measured choices. 4096x7168x16384: 256x128 with A multicast fastest. On
     * an H100 (2026-11-21-explore3 (bench/HISTORY.md)): N = 2112 ran fastest as
     * 256x64 without multicast (4096x2112x7168: 123.0 us, against
     * 136.1 as 128x176 and 149.5 as 256x64 B; 2048x2112x7168: 61.6 against
     * 86.4 as 128x96 A). 2026-11-22-explore5: 8192x2112x7168 ran as fast as
     * 128x128 without multicast (9 waves) as 256x64 (8): 234.2-236.0 against
     * 237.3-237.4 us (run 4). Run 3: the contiguous layout
     * ran 1-5% faster as 128x256 than as 128x128 A, without multicast as fast
     * as with; at one or two waves 256x128 without multicast ran fastest
     * (1024x4096x7168: 52.5 us, 128x128 56.0, 256x128 A 54.7; 2048x4096x7168:
     * 98.8, 128x128 A 104.3, 256x128 A 101.1). M = 128 (2026-11-22-explore9,
     * L2 left clean before each run, in the default tile order of then):
     * one 128-row tile where B is wide (128x7168x16384: 128x64 47.4 us
     * against 56.7 as 64x112; 128x4096x7168: 128x32 17.1 against 18.3 as
     * 64x64); superseded for dense rows by the tile order of h200-13 below. Masked groups of 256 rows
     * (2026-11-22-explore12, run 1): one 256x128 m-block per group, where it
     * saves waves (4x256 N 4096 K 7168: 55.0 us against 61.7 as 128x128;
     * N 7168 K 2048: 34.3 against 38.4 as 128x160). Since the plain 128x192
     * tile (H200, 2026-11-25 b): 4096x2112x7168 99.6 us against 102.3 as
     * 256x64 and 101.8 as 128x192 B; 8192x2112x7168 takes it by the model
     * (6 waves against 9 of 128x128), not timed there. Weight gradient and
     * psum (H200, 2026-11-25-h200-8, explore-c*.log, kineto): 24576x4096x1536
     * 128x128 410.6 against 437.7 as 128x160; since the 1D1D tiles up to
     * 128x136 read the column scales before the wgmma (h200-10,
     * explore-f.log): 2112x4096x7168 128x136 144.9 us against 159.0 as
     * 128x128 and 161.3 as 128x160; 4096x4096x7168 128x128 254.0 against
     * 279.1 as 128x160 (4096x7168x8192 takes 128x160 by the model: 11
     * waves against 14, not timed since); psum 4 x 8192 rows, N 6144,
     * K 7168 128x192 2163.2 against 2262.3 as 128x128 A. Once the math
     * warps ran no scheduler (2026-11-25-h200-9, explore-d.log), psum took
     * 128x256 (4 x 8192 rows, N 6144, K 7168: 1962.7 us A against 2026.0 as
     * 128x192; 32 groups of ~192 rows: 582.6 against 613.3), and so did
     * masked groups of ~1024 rows (N 4096, K 2048: 83.2 against 93.2 as
     * 128x192 A; at K 7168 level with 256x128 A, 440.8 against 431.5).
     * Once the 128x192 K loop ran unrolled by 4 and 128x256's by 8
     * (2026-11-25 f, explore-g.log, kineto, DeepGEMM's time / qgemm's):
     * contiguous 4 x 8192 rows, N 6144, K 7168 128x192 A 0.963 against
     * 0.943-0.957 as 128x256, psum there 128x192 0.966-0.972 against
     * 0.946-0.959 as 128x256 A; masked 32 groups of ~192 rows 256x128 A
     * 568.7 us against 581.6 without. Masked groups of ~1024 rows then
     * (2026-11-25-h200-12, explore-h*.log): 128x192 A ahead of 128x256 A at
     * N x K 6144x7168, 7168x3072 and 4096x2048 (0.5-5.8%), behind at
     * 4096x4096 (4%). Small dense rows once the m-blocks of an n-block ran
     * on consecutive CTAs (2026-11-25-h200-13, explore-j.log): 128x7168x16384
     * 64x112 39.50 us against 40.83 as 128x64; 128x7168x2048 8.30 against
     * 8.34; 128x4096x7168 64x64 14.34 against 15.47 as 128x32. */
    const struct { qg_problem p; int bm, bn; qg_multicast mc; } measured[] = {
        {{QG_GEMM_DENSE, 4096, 7168, 16384, 1, 0, 0}, 256, 128, QG_MULTICAST_A},
        {{QG_GEMM_DENSE, 4096, 2112, 7168, 1, 0, 0}, 128, 192, QG_MULTICAST_NONE},
        {{QG_GEMM_DENSE, 2048, 2112, 7168, 1, 0, 0}, 256, 64, QG_MULTICAST_NONE},
        {{QG_GEMM_DENSE, 8192, 2112, 7168, 1, 0, 0}, 128, 192, QG_MULTICAST_NONE},
        {{QG_GEMM_GROUPED_CONTIGUOUS, 32768, 4096, 7168, 4, 0, 0}, 128, 192, QG_MULTICAST_A},
        {{QG_GEMM_GROUPED_CONTIGUOUS, 32768, 6144, 7168, 4, 0, 0}, 128, 192, QG_MULTICAST_A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 6144, 7168, 32, 230, 0}, 256, 128, QG_MULTICAST_A},
        {{QG_GEMM_DENSE, 1024, 4096, 7168, 1, 0, 0}, 256, 128, QG_MULTICAST_NONE},
        {{QG_GEMM_DENSE, 2048, 4096, 7168, 1, 0, 0}, 256, 128, QG_MULTICAST_NONE},
        {{QG_GEMM_DENSE, 128, 7168, 16384, 1, 0, 0}, 64, 112, QG_MULTICAST_NONE},
        {{QG_GEMM_DENSE, 128, 7168, 2048, 1, 0, 0}, 64, 112, QG_MULTICAST_NONE},
        {{QG_GEMM_DENSE, 128, 4096, 7168, 1, 0, 0}, 64, 64, QG_MULTICAST_NONE},
        {{QG_GEMM_DENSE, 64, 7168, 16384, 1, 0, 0}, 64, 64, QG_MULTICAST_NONE},
        {{QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 4, 256, 0}, 256, 128, QG_MULTICAST_NONE},
        {{QG_GEMM_GROUPED_MASKED, 256, 7168, 2048, 4, 256, 0}, 256, 128, QG_MULTICAST_NONE},
        {{QG_GEMM_WGRAD, 2112, 4096, 7168, 1, 0, 1}, 128, 136, QG_MULTICAST_NONE},
        {{QG_GEMM_WGRAD, 4096, 4096, 7168, 1, 0, 1}, 128, 128, QG_MULTICAST_NONE},
        {{QG_GEMM_WGRAD, 4096, 7168, 8192, 1, 0, 1}, 128, 160, QG_MULTICAST_NONE},
        /* 128x136 stored row-major at K 1024..3072 (config.c, wgrad_efficiency:
         * 455.9-460.1 us against 464.5-466.4 as 128x128, H100) */
        {{QG_GEMM_WGRAD, 24576, 4096, 1536, 1, 0, 1}, 128, 136, QG_MULTICAST_NONE},
        {{QG_GEMM_WGRAD, 7168, 4096, 2048, 1, 0, 1}, 128, 136, QG_MULTICAST_NONE},
        {{QG_GEMM_K_GROUPED, 7168, 2048, 34560, 16, 0, 1}, 128, 136, QG_MULTICAST_NONE},
        /* ... but not at K 512 (564.3 against 569.1-572.0) nor ~4096 */
        {{QG_GEMM_WGRAD, 32768, 4096, 512, 1, 0, 1}, 128, 128, QG_MULTICAST_NONE},
        {{QG_GEMM_K_GROUPED, 7168, 2048, 31872, 8, 0, 1}, 128, 128, QG_MULTICAST_NONE},
        /* the weight gradient at K >= 16384: 128x128 with A multicast (config.c,
         * wgrad_efficiency: 2026-11-28-h100-19 explore-c.log, 930.5-931.1 us
         * against 946.2-946.8 without); not at 7168 (level) nor in the
         * k-grouped kind (not measured) */
        {{QG_GEMM_WGRAD, 7168, 4096, 16384, 1, 0, 1}, 128, 128, QG_MULTICAST_A},
        {{QG_GEMM_WGRAD, 7168, 4096, 16384, 1, 0, 0}, 128, 128, QG_MULTICAST_A},
        {{QG_GEMM_K_GROUPED, 4096, 7168, 65536, 4, 0, 1}, 128, 128, QG_MULTICAST_NONE},
        /* psum groups of 4096 rows and more, and of ~1024 rows at K >= 3072:
         * 256x128 A skipping the m64 tiles past a group's end (config.c,
         * tall_walked_tile: 2026-11-27-h100-18 explore-f.log, 4 x ~8192 rows,
         * 6144x7168 0.983-0.990 of DeepGEMM against 0.968-0.973 as 128x192
         * A); groups of ~1024 rows at K 2048 keep 128x192 A (0.998 against
         * 0.959-0.961; 2026-11-27-h100-16 explore-a.log: 90.4-91.0 us against
         * 97.0-97.2 as 128x256) */
        {{QG_GEMM_GROUPED_PSUM, 32768, 6144, 7168, 4, 0, 0}, 256, 128, QG_MULTICAST_A},
        {{QG_GEMM_GROUPED_PSUM, 32768, 4096, 2048, 8, 0, 0}, 256, 128, QG_MULTICAST_A},
        {{QG_GEMM_GROUPED_PSUM, 24576, 4096, 4096, 6, 1228, 0}, 256, 128, QG_MULTICAST_A},
        {{QG_GEMM_GROUPED_PSUM, 24576, 4096, 2048, 6, 1228, 0}, 128, 192, QG_MULTICAST_A},
        /* psum groups of 129..256 rows: 256x128 A skipping the m64 tiles
         * past a group's end, as the masked kind (2026-11-27-h100-15
         * explore-b.log: 10-15% ahead of 128x256, see qg__select_avoiding) */
        {{QG_GEMM_GROUPED_PSUM, 6144, 6144, 7168, 32, 230, 0}, 256, 128, QG_MULTICAST_A},
        /* masked groups of ~1024 rows: 256x128 A (row skipping) at K >= 3072,
         * 128x192 A at K 2048 (config.c, tall_walked_tile: 2026-11-27-h100-18
         * explore-b.log, 6144x7168 375.1-376.0 us against 385.5-386.0;
         * 4096x2048 92.9-93.6 against 88.5-88.9) */
        {{QG_GEMM_GROUPED_MASKED, 4096, 4096, 2048, 6, 1228, 0}, 128, 192, QG_MULTICAST_A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 6144, 7168, 6, 1228, 0}, 256, 128, QG_MULTICAST_A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 7168, 3072, 6, 1228, 0}, 256, 128, QG_MULTICAST_A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 4096, 4096, 6, 1228, 0}, 256, 128, QG_MULTICAST_A},
    };
    for (size_t i = 0; i < sizeof measured / sizeof measured[0]; i++) {
        CHECK(qg_select_config(ctx, &measured[i].p, &cfg) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(cfg.block_m == measured[i].bm && cfg.block_n == measured[i].bn &&
                  cfg.multicast == measured[i].mc,
              "%dx%dx%d kind %d: chose %dx%d multicast %d", measured[i].p.m, measured[i].p.n,
              measured[i].p.k, (int)measured[i].p.kind, cfg.block_m, cfg.block_n,
              (int)cfg.multicast);
    }
    static const int small_m[] = {1, 64, 128, 256};
    for (int i = 0; i < 4; i++) {
        qg_problem p = {QG_GEMM_DENSE, small_m[i], 32768, 512, 1, 0, 0};
        CHECK(qg_select_config(ctx, &p, &cfg) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(cfg.block_n <= 176, "M=%d: wide tile %dx%d chosen", small_m[i], cfg.block_m,
              cfg.block_n);
    }
    /* 256-row tiles at most 256 rows per group: only the masked 256x128, and
     * only where it saves waves (config.c, masked_full_group). */
    static const int pairs[6][2] = {{2112, 7168}, {24576, 1536}, {32768, 512},
                                    {7168, 16384}, {4096, 7168}, {7168, 2048}};
    for (int i = 0; i < 6; i++) {
        const int n = pairs[i][0], k = pairs[i][1];
        static const int dense_m[] = {129, 200, 256};
        for (int j = 0; j < 3; j++) {
            qg_problem p = {QG_GEMM_DENSE, dense_m[j], n, k, 1, 0, 0};
            CHECK(qg_select_config(ctx, &p, &cfg) == QG_SUCCESS, "%s", qg_last_error());
            CHECK(cfg.block_m <= 128, "dense %dx%dx%d: %dx%d", dense_m[j], n, k, cfg.block_m,
                  cfg.block_n);
        }
        qg_problem p128 = {QG_GEMM_GROUPED_MASKED, 128, n, k, 4, 128, 0};
        CHECK(qg_select_config(ctx, &p128, &cfg) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(cfg.block_m <= 128, "masked 4x128 %dx%d: %dx%d", n, k, cfg.block_m, cfg.block_n);
    }
    /* One wave either way: 128x144 (120 CTAs) against 256x128 (68 CTAs, each
     * with twice the MMA work). */
    qg_problem narrow = {QG_GEMM_GROUPED_MASKED, 256, 2112, 7168, 4, 256, 0};
    CHECK(qg_select_config(ctx, &narrow, &cfg) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(cfg.block_m == 128, "masked 4x256 2112x7168: %dx%d", cfg.block_m, cfg.block_n);
    /* The hint decides: M_max 1024 but about 200 rows expected per group. */
    qg_problem hinted = {QG_GEMM_GROUPED_MASKED, 1024, 4096, 7168, 4, 200, 0};
    CHECK(qg_select_config(ctx, &hinted, &cfg) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(cfg.block_m == 256 && cfg.block_n == 128 && cfg.multicast == QG_MULTICAST_NONE,
          "masked 4x1024 (expected 200) 4096x7168: %dx%d mc %d", cfg.block_m, cfg.block_n,
          (int)cfg.multicast);
    struct { qg_gemm_kind kind; int bm, bn; bool legal; } cases[] = {
        {QG_GEMM_DENSE, 256, 128, true},           {QG_GEMM_DENSE, 256, 112, false},
        {QG_GEMM_DENSE, 128, 256, true},           {QG_GEMM_DENSE, 128, 176, true},
        {QG_GEMM_DENSE, 128, 168, false},          {QG_GEMM_DENSE, 256, 144, false},
        {QG_GEMM_DENSE, 128, 224, true},           {QG_GEMM_DENSE, 128, 240, false},
        {QG_GEMM_GROUPED_CONTIGUOUS, 128, 256, true}, {QG_GEMM_GROUPED_MASKED, 128, 256, true},
        {QG_GEMM_GROUPED_CONTIGUOUS, 128, 192, true}, {QG_GEMM_GROUPED_MASKED, 128, 176, false},
        {QG_GEMM_GROUPED_CONTIGUOUS, 128, 176, false}, {QG_GEMM_GROUPED_PSUM, 128, 176, false},
        {QG_GEMM_GROUPED_MASKED, 128, 192, true},
        {QG_GEMM_GROUPED_MASKED, 128, 208, true},  {QG_GEMM_GROUPED_PSUM, 128, 224, true},
        {QG_GEMM_GROUPED_PSUM, 128, 256, true},    {QG_GEMM_GROUPED_PSUM, 128, 240, false},
        {QG_GEMM_GROUPED_MASKED, 256, 128, true},  {QG_GEMM_DENSE, 64, 256, false},
        {QG_GEMM_GROUPED_MASKED, 256, 112, false}, {QG_GEMM_GROUPED_MASKED, 256, 96, true},
        {QG_GEMM_DENSE, 64, 192, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qg_problem p = {cases[i].kind, 1024, 4096, 1024, cases[i].kind == QG_GEMM_DENSE ? 1 : 4,
                        cases[i].kind == QG_GEMM_GROUPED_MASKED ? 512 : 0, 0};
        if (cases[i].kind == QG_GEMM_GROUPED_PSUM) p.m = 4096;
        qg_config c = {.block_m = cases[i].bm, .block_n = cases[i].bn};
        const qg_status st = qg_complete_config(ctx, &p, &c);
        CHECK((st == QG_SUCCESS) == cases[i].legal, "kind %d %dx%d: status %d (%s)",
              (int)cases[i].kind, cases[i].bm, cases[i].bn, (int)st, qg_last_error());
        if (!cases[i].legal) CHECK(strstr(qg_last_error(), "block_n"), "%s", qg_last_error());
    }
    /* The masked 256x128 tile takes A multicast since the math warps run no
     * scheduler (it used to spill with it); one group of 1024 rows (one
     * wave) takes a wide tile without multicast (256x128 ran 6-11% faster
     * than 128x128 there, 2026-11-22-explore9 run 11). */
    qg_problem masked = {QG_GEMM_GROUPED_MASKED, 1024, 4096, 7168, 1, 1024, 0};
    qg_config c = {.block_m = 256, .block_n = 128, .multicast = QG_MULTICAST_A};
    CHECK(qg_complete_config(ctx, &masked, &c) == QG_SUCCESS, "masked 256x128 A: %s",
          qg_last_error());
    CHECK(qg_select_config(ctx, &masked, &cfg) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(cfg.block_m * cfg.block_n == 256 * 128 && cfg.multicast == QG_MULTICAST_NONE,
          "masked 1x1024: chose %dx%d multicast %d", cfg.block_m, cfg.block_n, (int)cfg.multicast);
    qg_context_destroy(ctx);
    PASS();
}

TEST(config_forced_out_of_range) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context");
    qg_problem p = {QG_GEMM_DENSE, 512, 4096, 7168, 1, 0, 0};
    struct { qg_config c; const char *word; } bad[] = {
        {{.block_m = 96, .block_n = 128}, "block_m"},
        {{.block_m = 128, .block_n = 120}, "block_n"},
        {{.block_m = 64, .block_n = 192}, "block_n"},  /* over the register budget */
        {{.block_m = 256, .block_n = 112}, "block_n"},
        {{.block_m = 128, .block_n = 128, .num_stages = 33}, "num_stages"},
        {{.block_m = 128, .block_n = 128, .num_stages = 8}, "shared memory"},
        {{.block_m = 128, .block_n = 128, .multicast = 7}, "multicast"},
        {{.block_m = 128, .block_n = 128, .swizzle_group = -1}, "swizzle_group"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        qg_config c = bad[i].c;
        CHECK(qg_complete_config(ctx, &p, &c) == QG_ERROR_UNSUPPORTED, "case %zu accepted", i);
        CHECK(strstr(qg_last_error(), bad[i].word), "case %zu: '%s' lacks '%s'", i, qg_last_error(),
              bad[i].word);
    }
    qg_problem contiguous = {QG_GEMM_GROUPED_CONTIGUOUS, 1024, 4096, 7168, 4, 0, 0};
    qg_config c = {.block_m = 256, .block_n = 64};
    CHECK(qg_complete_config(ctx, &contiguous, &c) == QG_ERROR_UNSUPPORTED, "contiguous bm 256");
    /* Shape rules. */
    qg_problem shapes[] = {{QG_GEMM_DENSE, 0, 4096, 7168, 1, 0, 0}, {QG_GEMM_DENSE, 64, 4100, 7168, 1, 0, 0},
                           {QG_GEMM_DENSE, 64, 4096, 7160, 1, 0, 0}, {QG_GEMM_DENSE, 64, 4096, 7168, 2, 0, 0},
                           {(qg_gemm_kind)9, 64, 4096, 7168, 1, 0, 0},
                           {QG_GEMM_GROUPED_MASKED, 64, 4096, 7168, 2, 65, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
        qg_config out;
        qg_status st = qg_select_config(ctx, &shapes[i], &out);
        CHECK(st == QG_ERROR_UNSUPPORTED || st == QG_ERROR_INVALID_ARGUMENT, "shape %zu accepted", i);
        CHECK(qg_last_error()[0], "shape %zu: empty message", i);
    }
    CHECK(qg_select_config(NULL, &p, &c) == QG_ERROR_INVALID_ARGUMENT, "NULL ctx");
    CHECK(qg_select_config(ctx, NULL, &c) == QG_ERROR_INVALID_ARGUMENT, "NULL problem");
    CHECK(qg_select_config(ctx, &p, NULL) == QG_ERROR_INVALID_ARGUMENT, "NULL out");
    qg_context_destroy(ctx);
    PASS();
}

TEST(context_offline_and_sms) {
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(NULL, NULL) == QG_ERROR_INVALID_ARGUMENT, "NULL out");
    qg_device_props bad = {.sm_count = 132, .cc_major = 8, .cc_minor = 0, .smem_optin_bytes = 232448};
    CHECK(qg_context_create_offline(&ctx, &bad) == QG_ERROR_WRONG_ARCH, "sm_80 accepted");
    CHECK(ctx == NULL, "out set on failure");
    bad.cc_major = 9;
    bad.sm_count = 0;
    CHECK(qg_context_create_offline(&ctx, &bad) == QG_ERROR_INVALID_ARGUMENT, "0 SMs accepted");
    qg_device_props h20 = {.sm_count = 78, .cc_major = 9, .cc_minor = 0, .smem_optin_bytes = 232448};
    CHECK(qg_context_create_offline(&ctx, &h20) == QG_SUCCESS, "%s", qg_last_error());
    qg_device_props got;
    CHECK(qg_context_get_props(ctx, &got) == QG_SUCCESS && got.sm_count == 78, "props");
    CHECK(qg_context_get_num_sms(ctx) == 78, "num_sms");
    CHECK(qg_context_set_num_sms(ctx, 79) == QG_ERROR_INVALID_ARGUMENT, "79 > 78 accepted");
    CHECK(qg_context_set_num_sms(ctx, 64) == QG_SUCCESS && qg_context_get_num_sms(ctx) == 64, "64");
    qg_problem p = {QG_GEMM_DENSE, 4096, 7168, 7168, 1, 0, 0};
    qg_config cfg;
    CHECK(qg_select_config(ctx, &p, &cfg) == QG_SUCCESS && cfg.num_sms <= 64, "grid %d", cfg.num_sms);
    CHECK(qg_context_set_num_sms(ctx, 0) == QG_SUCCESS && qg_context_get_num_sms(ctx) == 78, "reset");
    /* Programmatic dependent launch: off by default, 0 or 1 only. */
    CHECK(qg_context_get_pdl(ctx) == 0 && qg_context_get_pdl(NULL) == -1, "pdl default");
    CHECK(qg_context_set_pdl(NULL, 1) == QG_ERROR_INVALID_ARGUMENT, "NULL ctx accepted");
    CHECK(qg_context_set_pdl(ctx, 2) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "enable must be 0 or 1, got 2"),
          "pdl 2: %s", qg_last_error());
    CHECK(qg_context_set_pdl(ctx, 1) == QG_SUCCESS && qg_context_get_pdl(ctx) == 1, "pdl on");
    CHECK(qg_context_set_pdl(ctx, 0) == QG_SUCCESS && qg_context_get_pdl(ctx) == 0, "pdl off");
    CHECK(qg_context_get_num_sms(NULL) == -1, "NULL ctx");
    qg_context_destroy(ctx);
    qg_context_destroy(NULL);
    CHECK(qg_context_create(NULL, 0) == QG_ERROR_INVALID_ARGUMENT, "NULL out");
    CHECK(qg_context_create(&ctx, -1) == QG_ERROR_INVALID_ARGUMENT && ctx == NULL, "device -1");
    PASS();
}

TEST(helpers_alignment) {
    CHECK(qg_m_alignment_for_contiguous_layout() == 128, "alignment");
    CHECK(qg_sfa_ld(1) == 4 && qg_sfa_ld(4) == 4 && qg_sfa_ld(5) == 8 && qg_sfa_ld(4096) == 4096,
          "sfa_ld");
    CHECK(qg_sfa_ld(-3) == 0, "negative");
    PASS();
}

/* ---- argument validation of the GEMM entry points ---------------------- */

#include "fake_args.h"

static qg_gemm_args good_args(void) { return fake_good_args(); }

TEST(gemm_argument_validation) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context");
    struct { const char *field; qg_status want; } cases[] = {
        {"a=NULL", QG_ERROR_INVALID_ARGUMENT},    {"a+1", QG_ERROR_INVALID_ARGUMENT},
        {"b=NULL", QG_ERROR_INVALID_ARGUMENT},    {"sfa+4", QG_ERROR_INVALID_ARGUMENT},
        {"sfb=NULL", QG_ERROR_INVALID_ARGUMENT},  {"d+2", QG_ERROR_INVALID_ARGUMENT},
        {"lda<k", QG_ERROR_INVALID_ARGUMENT},     {"lda%16", QG_ERROR_INVALID_ARGUMENT},
        {"ldb<k", QG_ERROR_INVALID_ARGUMENT},     {"ldd<n", QG_ERROR_INVALID_ARGUMENT},
        {"ldd%8", QG_ERROR_INVALID_ARGUMENT},     {"sfa_ld<m", QG_ERROR_INVALID_ARGUMENT},
        {"sfa_ld%4", QG_ERROR_INVALID_ARGUMENT},  {"m<0", QG_ERROR_INVALID_ARGUMENT},
        {"n%8", QG_ERROR_UNSUPPORTED},            {"k%16", QG_ERROR_UNSUPPORTED},
        {"groups=2", QG_ERROR_INVALID_ARGUMENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        qg_gemm_args a = good_args();
        const char *f = cases[i].field;
        if (!strcmp(f, "a=NULL")) a.a = NULL;
        else if (!strcmp(f, "a+1")) a.a = FAKE(0x10001);
        else if (!strcmp(f, "b=NULL")) a.b = NULL;
        else if (!strcmp(f, "sfa+4")) a.sfa = FAKE(0x20004);
        else if (!strcmp(f, "sfb=NULL")) a.sfb = NULL;
        else if (!strcmp(f, "d+2")) a.d = FAKE(0x50002);
        else if (!strcmp(f, "lda<k")) a.lda = 384;
        else if (!strcmp(f, "lda%16")) a.lda = 408;
        else if (!strcmp(f, "ldb<k")) a.ldb = 16;
        else if (!strcmp(f, "ldd<n")) a.ldd = 568;
        else if (!strcmp(f, "ldd%8")) a.ldd = 580;
        else if (!strcmp(f, "sfa_ld<m")) a.sfa_ld = 96;
        else if (!strcmp(f, "sfa_ld%4")) a.sfa_ld = 102;
        else if (!strcmp(f, "m<0")) a.m = -1;
        else if (!strcmp(f, "n%8")) a.n = 570, a.ldd = 576;
        else if (!strcmp(f, "k%16")) a.k = 392;
        else if (!strcmp(f, "groups=2")) a.num_groups = 2;
        qg_status st = qg_fp8_gemm_nt(ctx, &a, NULL, NULL);
        CHECK(st == cases[i].want, "%s: got %s (%s)", f, qg_status_string(st), qg_last_error());
        CHECK(strstr(qg_last_error(), "qg_fp8_gemm_nt"), "%s: message lacks the function: %s", f,
              qg_last_error());
    }
    /* Valid arguments reach the device check: an offline context cannot launch. */
    qg_gemm_args a = good_args();
    CHECK(qg_fp8_gemm_nt(ctx, &a, NULL, NULL) == QG_ERROR_NO_DEVICE, "%s", qg_last_error());
    CHECK(qg_fp8_gemm_nt(NULL, &a, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT, "NULL ctx");
    CHECK(qg_fp8_gemm_nt(ctx, NULL, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT, "NULL args");
    /* Grouped: the index arrays are required. */
    a = good_args();
    a.num_groups = 4;
    a.m_indices = NULL;
    CHECK(qg_m_grouped_fp8_gemm_nt_contiguous(ctx, &a, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "m_indices"), "%s", qg_last_error());
    a = good_args();
    a.num_groups = 4;
    a.masked_m = FAKE(0x70002);
    CHECK(qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "masked_m"), "%s", qg_last_error());
    a = good_args();
    a.num_groups = 0;
    CHECK(qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT,
          "0 groups: %s", qg_last_error());
    a = good_args();
    a.num_groups = 4;
    a.expected_m = 101;  /* > M_max: refused, as by qg_select_config (issue 27) */
    CHECK(qg_m_grouped_fp8_gemm_nt_masked(ctx, &a, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "expected_m"), "%s", qg_last_error());
    /* A forced config that does not fit is refused before launch. */
    a = good_args();
    qg_config bad = {.block_m = 128, .block_n = 200};
    CHECK(qg_fp8_gemm_nt(ctx, &a, &bad, NULL) != QG_SUCCESS, "bad forced config");
    qg_context_destroy(ctx);
    PASS();
}

/* Two per-plan rules of src/config.c. Which plans run the K-pipelined loop:
 * one wgmma unit per warpgroup, block_n <= 128, never 128x128
 * with B multicast, and never with one stage (the loop holds a stage while it
 * waits for the next: one stage would deadlock). How wide D's store chunks
 * are: the widest of 64 / 32 / 16 columns that divides block_n, at most 32
 * for the N-split 128-row tiles (block_n 208..256). */
TEST(config_kernel_plans) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context: %s", qg_last_error());
    static const struct {
        qg_gemm_kind kind;
        int bm, bn, stages;
        qg_multicast mc;
        bool kpipe;
        int store_cols;
    } cases[] = {
        {QG_GEMM_DENSE, 64, 128, 0, QG_MULTICAST_NONE, true, 64},
        {QG_GEMM_DENSE, 64, 144, 0, QG_MULTICAST_NONE, false, 16},
        {QG_GEMM_DENSE, 128, 128, 0, QG_MULTICAST_A, true, 64},
        {QG_GEMM_DENSE, 128, 128, 2, QG_MULTICAST_A, true, 64},
        {QG_GEMM_DENSE, 128, 128, 1, QG_MULTICAST_A, false, 64},
        {QG_GEMM_DENSE, 64, 64, 1, QG_MULTICAST_NONE, false, 64},
        {QG_GEMM_DENSE, 128, 128, 0, QG_MULTICAST_B, false, 64},
        {QG_GEMM_DENSE, 128, 160, 0, QG_MULTICAST_NONE, false, 32},
        {QG_GEMM_DENSE, 128, 96, 0, QG_MULTICAST_NONE, true, 32},
        {QG_GEMM_DENSE, 64, 16, 0, QG_MULTICAST_NONE, true, 16},
        {QG_GEMM_DENSE, 256, 64, 0, QG_MULTICAST_NONE, false, 64},  /* two units */
        {QG_GEMM_DENSE, 256, 128, 0, QG_MULTICAST_A, false, 64},    /* wide */
        {QG_GEMM_DENSE, 128, 256, 0, QG_MULTICAST_A, false, 32},    /* wide, N split */
        {QG_GEMM_DENSE, 128, 192, 0, QG_MULTICAST_NONE, false, 64}, /* plain, 232 / 40 */
        {QG_GEMM_DENSE, 128, 208, 0, QG_MULTICAST_NONE, false, 16}, /* wide, N split */
        {QG_GEMM_GROUPED_MASKED, 128, 96, 0, QG_MULTICAST_NONE, true, 32},
        {QG_GEMM_GROUPED_MASKED, 128, 112, 0, QG_MULTICAST_NONE, true, 16},
        {QG_GEMM_GROUPED_PSUM, 128, 256, 0, QG_MULTICAST_A, false, 32},
        {QG_GEMM_GROUPED_CONTIGUOUS, 128, 128, 0, QG_MULTICAST_A, true, 64},
        {QG_GEMM_GROUPED_CONTIGUOUS, 128, 256, 0, QG_MULTICAST_NONE, false, 32},
        /* weight gradient: FP32 D in chunks of 32, 16 or 8 columns */
        {QG_GEMM_WGRAD, 128, 128, 0, QG_MULTICAST_A, false, 32},
        {QG_GEMM_WGRAD, 128, 144, 0, QG_MULTICAST_B, false, 16},
        {QG_GEMM_WGRAD, 128, 152, 0, QG_MULTICAST_NONE, false, 8},
        {QG_GEMM_WGRAD, 64, 136, 0, QG_MULTICAST_NONE, false, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bool one_group = cases[i].kind == QG_GEMM_DENSE || cases[i].kind == QG_GEMM_WGRAD;
        const qg_problem p = {cases[i].kind, 4096, 4096, 7168, one_group ? 1 : 4, 0, 0};
        const qg_config cfg = {.block_m = cases[i].bm, .block_n = cases[i].bn,
                               .num_stages = cases[i].stages, .multicast = cases[i].mc};
        qg_kernel_plan plan;
        CHECK(qg__plan(&ctx->props, &p, &cfg, &plan) == QG_SUCCESS, "case %zu: %s", i,
              qg_last_error());
        CHECK(plan.kpipe == cases[i].kpipe && (!plan.kpipe || plan.acc_sets == 2),
              "case %zu: kind %d %dx%d stages %d mc %d: kpipe %d, expected %d", i,
              (int)cases[i].kind, cases[i].bm, cases[i].bn, cases[i].stages, (int)cases[i].mc,
              (int)plan.kpipe, (int)cases[i].kpipe);
        CHECK(plan.store_cols == cases[i].store_cols,
              "case %zu: kind %d %dx%d: store chunks of %d columns, expected %d", i,
              (int)cases[i].kind, cases[i].bm, cases[i].bn, plan.store_cols,
              cases[i].store_cols);
    }
    /* FP32 D of an odd multiple of 8 columns at a group's K <= 4096: one
     * row-major chunk of the whole width (QG_D_ROWS); at longer K, or 0 mod 16
     * columns, the swizzled chunks. */
    static const struct { qg_gemm_kind kind; int k, groups, bm, bn, store_cols; } rows_major[] = {
        {QG_GEMM_WGRAD, 2048, 1, 128, 136, 136},
        {QG_GEMM_WGRAD, 4096, 1, 64, 152, 152},
        {QG_GEMM_WGRAD, 4224, 1, 128, 136, 8},
        {QG_GEMM_WGRAD, 2048, 1, 128, 144, 16},
        {QG_GEMM_WGRAD, 2048, 1, 128, 24, 24},
        {QG_GEMM_K_GROUPED, 4 * 4096, 4, 128, 136, 136},
        {QG_GEMM_K_GROUPED, 4 * 8192, 4, 128, 136, 8},
    };
    for (size_t i = 0; i < sizeof rows_major / sizeof rows_major[0]; i++) {
        const qg_problem p = {rows_major[i].kind, 4096, 4096, rows_major[i].k, rows_major[i].groups,
                              0, 1};
        const qg_config cfg = {.block_m = rows_major[i].bm, .block_n = rows_major[i].bn};
        qg_kernel_plan plan;
        CHECK(qg__plan(&ctx->props, &p, &cfg, &plan) == QG_SUCCESS, "rows %zu: %s", i,
              qg_last_error());
        const bool rows = rows_major[i].store_cols == rows_major[i].bn;
        CHECK(plan.store_cols == rows_major[i].store_cols && plan.d_rows == rows,
              "kind %d K %d %dx%d: store chunks of %d columns (row-major %d), expected %d (%d)",
              (int)p.kind, p.k, cfg.block_m, cfg.block_n, plan.store_cols, (int)plan.d_rows,
              rows_major[i].store_cols, (int)rows);
    }
    /* The A (and SFA) box: the CTA's rows of the tile, or round_up(M, 8) for
     * a dense M below block_m (not under A multicast, not grouped). */
    static const struct { qg_gemm_kind kind; int m, bm, bn; qg_multicast mc; int split_k, rows; } boxes[] = {
        {QG_GEMM_DENSE, 1, 64, 64, QG_MULTICAST_NONE, 0, 8},
        {QG_GEMM_DENSE, 17, 64, 32, QG_MULTICAST_NONE, 2, 24},
        {QG_GEMM_DENSE, 64, 64, 64, QG_MULTICAST_NONE, 0, 64},
        {QG_GEMM_DENSE, 100, 128, 64, QG_MULTICAST_NONE, 0, 104},
        {QG_GEMM_DENSE, 200, 256, 64, QG_MULTICAST_NONE, 0, 200},
        {QG_GEMM_DENSE, 4096, 256, 128, QG_MULTICAST_A, 0, 128},
        {QG_GEMM_DENSE, 4096, 128, 128, QG_MULTICAST_NONE, 0, 128},
        {QG_GEMM_GROUPED_CONTIGUOUS, 50, 128, 128, QG_MULTICAST_NONE, 0, 128},
        {QG_GEMM_GROUPED_MASKED, 50, 128, 128, QG_MULTICAST_NONE, 0, 128},
        {QG_GEMM_WGRAD, 50, 128, 128, QG_MULTICAST_NONE, 0, 128},
    };
    for (size_t i = 0; i < sizeof boxes / sizeof boxes[0]; i++) {
        const bool one_group = boxes[i].kind == QG_GEMM_DENSE || boxes[i].kind == QG_GEMM_WGRAD;
        const qg_problem p = {boxes[i].kind, boxes[i].m, 4096, 7168, one_group ? 1 : 4, 0, 0};
        const qg_config cfg = {.block_m = boxes[i].bm, .block_n = boxes[i].bn,
                               .multicast = boxes[i].mc, .split_k = boxes[i].split_k};
        qg_kernel_plan plan;
        CHECK(qg__plan(&ctx->props, &p, &cfg, &plan) == QG_SUCCESS, "box %zu: %s", i,
              qg_last_error());
        CHECK(plan.a_box_rows == boxes[i].rows, "kind %d M %d %dx%d mc %d: A box of %d rows, expected %d",
              (int)boxes[i].kind, boxes[i].m, boxes[i].bm, boxes[i].bn, (int)boxes[i].mc,
              plan.a_box_rows, boxes[i].rows);
    }
    qg_context_destroy(ctx);
    PASS();
}

/* Split-K: chosen for small dense problems whose tiles would each stream
 * more rows per K block than DRAM can feed the grid (the narrow-N rows of
 * the DeepSeek-V3 table at M <= 128), with 64-row tiles only (128-row
 * splits measured slower on the H200: 128x2112x7168, 128x4096x7168), never
 * where DRAM is already the limit or the split's fixed cost outweighs it
 * (short K), for large M or for grouped layouts; forced, it is checked
 * like every other field, and its reduction buffer is in the plan. The
 * device's DRAM bandwidth decides N 2112 at K 7168: the H100 (3352 GB/s,
 * also assumed when unknown) reads B there at DRAM's pace unsplit, the
 * H200 (4915 GB/s) has room for the split. */
TEST(config_split_k) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context: %s", qg_last_error());
    qg_device_props h200_props = {.sm_count = 132, .cc_major = 9, .cc_minor = 0,
                                  .smem_optin_bytes = 232448, .l2_bytes = 50u << 20,
                                  .dram_gbps = 4915};
    qg_context *h200 = NULL;
    CHECK(qg_context_create_offline(&h200, &h200_props) == QG_SUCCESS, "%s", qg_last_error());
    qg_device_props negative = h200_props;
    negative.dram_gbps = -1;
    qg_context *refused = NULL;
    CHECK(qg_context_create_offline(&refused, &negative) == QG_ERROR_INVALID_ARGUMENT && !refused &&
              strstr(qg_last_error(), "dram_gbps must be in [0, 100000] (0: unknown), got -1"),
          "dram_gbps -1: %s", qg_last_error());
    /* (33x576x7168 and 64x1536x7296 are qgemm check's split-K cases.) */
    static const struct { int h100, m, n, k, bm, bn; } split[] = {
        {1, 128, 576, 7168, 64, 32}, {1, 33, 576, 7168, 64, 16}, {1, 64, 1536, 7296, 64, 32},
        {0, 64, 2112, 7168, 64, 32}, {0, 1, 2112, 7168, 64, 32}, {0, 64, 2112, 7296, 64, 32},
        {0, 128, 576, 7168, 64, 32}, {0, 33, 576, 7168, 64, 16}, {0, 64, 1536, 7296, 64, 32}};
    for (size_t i = 0; i < sizeof split / sizeof split[0]; i++) {
        qg_problem p = {QG_GEMM_DENSE, split[i].m, split[i].n, split[i].k, 1, 0, 0};
        qg_config cfg;
        CHECK(qg_select_config(split[i].h100 ? ctx : h200, &p, &cfg) == QG_SUCCESS, "%s",
              qg_last_error());
        CHECK(cfg.split_k == 2 && cfg.block_m == split[i].bm && cfg.block_n == split[i].bn &&
              cfg.multicast == QG_MULTICAST_NONE,
              "%s %dx%dx%d: chose %dx%d split-K %d multicast %d, expected %dx%d split-K 2",
              split[i].h100 ? "H100" : "H200", p.m, p.n, p.k, cfg.block_m, cfg.block_n,
              cfg.split_k, (int)cfg.multicast, split[i].bm, split[i].bn);
        const long long ctas = 2ll * ((p.m + cfg.block_m - 1) / cfg.block_m) *
                               ((p.n + cfg.block_n - 1) / cfg.block_n);
        CHECK(ctas <= cfg.num_sms, "%dx%dx%d: %lld CTAs on %d SMs", p.m, p.n, p.k, ctas,
              cfg.num_sms);
    }
    static const qg_problem plain[] = {
        {QG_GEMM_DENSE, 64, 4096, 7168, 1, 0, 0},   {QG_GEMM_DENSE, 64, 7168, 16384, 1, 0, 0},
        {QG_GEMM_DENSE, 128, 4096, 7168, 1, 0, 0},  {QG_GEMM_DENSE, 64, 2112, 1024, 1, 0, 0},
        {QG_GEMM_DENSE, 128, 2112, 7168, 1, 0, 0},  {QG_GEMM_DENSE, 100, 2112, 7296, 1, 0, 0},
        {QG_GEMM_DENSE, 200, 2112, 7168, 1, 0, 0},
        {QG_GEMM_DENSE, 64, 24576, 1536, 1, 0, 0},  {QG_GEMM_DENSE, 64, 2112, 896, 1, 0, 0},
        {QG_GEMM_DENSE, 4096, 2112, 7168, 1, 0, 0}, {QG_GEMM_DENSE, 1000, 2112, 7168, 1, 0, 0},
        {QG_GEMM_GROUPED_MASKED, 64, 2112, 7168, 2, 64, 0},
        {QG_GEMM_GROUPED_CONTIGUOUS, 128, 2112, 7168, 1, 0, 0},
        /* (the H100 only: DRAM-bound unsplit, the H200 splits these) */
        {QG_GEMM_DENSE, 64, 2112, 7168, 1, 0, 0},   {QG_GEMM_DENSE, 1, 2112, 7168, 1, 0, 0},
        {QG_GEMM_DENSE, 64, 2112, 7296, 1, 0, 0}};
    const size_t both = sizeof plain / sizeof plain[0] - 3;
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        for (int dev = 0; dev < (i < both ? 2 : 1); ++dev) {
            qg_config cfg;
            CHECK(qg_select_config(dev ? h200 : ctx, &plain[i], &cfg) == QG_SUCCESS, "%s",
                  qg_last_error());
            CHECK(cfg.split_k == 1, "%s kind %d %dx%dx%d: split-K %d chosen",
                  dev ? "H200" : "H100", (int)plain[i].kind, plain[i].m, plain[i].n, plain[i].k,
                  cfg.split_k);
        }
    qg_context_destroy(h200);

    /* Forced: the field's rules, each refusal naming split_k. */
    const qg_problem p = {QG_GEMM_DENSE, 64, 2112, 7168, 1, 0, 0};
    struct { qg_problem p; qg_config c; const char *word; } bad[] = {
        {p, {.block_m = 64, .block_n = 32, .split_k = 3}, "split_k must be 0, 1 or 2"},
        {p, {.block_m = 64, .block_n = 32, .split_k = -1}, "split_k must be 0, 1 or 2"},
        {p, {.block_m = 64, .block_n = 32, .split_k = 2, .multicast = QG_MULTICAST_A},
         "multicast none"},
        {{QG_GEMM_DENSE, 64, 2112, 128, 1, 0, 0}, {.block_m = 64, .block_n = 32, .split_k = 2},
         "K blocks"},
        {{QG_GEMM_GROUPED_MASKED, 64, 2112, 7168, 2, 64, 0}, {.block_m = 64, .block_n = 32, .split_k = 2},
         "dense"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        qg_config c = bad[i].c;
        CHECK(qg_complete_config(ctx, &bad[i].p, &c) == QG_ERROR_UNSUPPORTED, "case %zu accepted", i);
        CHECK(strstr(qg_last_error(), bad[i].word), "case %zu: '%s' lacks '%s'", i,
              qg_last_error(), bad[i].word);
    }
    /* 256x128: the partner's sums (128 KiB) leave no room for a stage. */
    qg_config wide = {.block_m = 256, .block_n = 128, .split_k = 2};
    qg_problem big = {QG_GEMM_DENSE, 512, 4096, 1024, 1, 0, 0};
    CHECK(qg_complete_config(ctx, &big, &wide) == QG_ERROR_UNSUPPORTED &&
              strstr(qg_last_error(), "split-K buffer"),
          "256x128 split-K: %s", qg_last_error());
    /* K = 256 (two K blocks, one per CTA) is the least it takes. */
    qg_problem two = {QG_GEMM_DENSE, 64, 2112, 256, 1, 0, 0};
    qg_config c = {.block_m = 64, .block_n = 32, .split_k = 2};
    CHECK(qg_complete_config(ctx, &two, &c) == QG_SUCCESS, "K = 256: %s", qg_last_error());
    /* The plan: a 2-CTA cluster, and the partner's FP32 sums (block_m x
     * block_n x 4 bytes) plus two barriers in shared memory. */
    qg_config none = {.block_m = 64, .block_n = 32, .num_stages = 4};
    qg_config two_k = {.block_m = 64, .block_n = 32, .num_stages = 4, .split_k = 2};
    qg_kernel_plan plan_none, plan_split;
    CHECK(qg__plan(&ctx->props, &p, &none, &plan_none) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qg__plan(&ctx->props, &p, &two_k, &plan_split) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(plan_none.split_k == 1 && plan_none.cluster_size == 1, "plain: split %d cluster %d",
          plan_none.split_k, plan_none.cluster_size);
    CHECK(plan_split.split_k == 2 && plan_split.cluster_size == 2, "split: split %d cluster %d",
          plan_split.split_k, plan_split.cluster_size);
    CHECK(plan_split.smem_bytes == plan_none.smem_bytes + 64 * 32 * 4 + 16,
          "split smem %zu vs %zu", plan_split.smem_bytes, plan_none.smem_bytes);
    qg_context_destroy(ctx);
    PASS();
}

/* The masked kind on an H200 (HBM3e: dram_gbps >= 4500) rates tiles by whole
 * waves of expected_m rows, as DeepGEMM does, where the H100 (and an unknown
 * bandwidth) keeps the walked layouts' fractional fill (config.c,
 * masked_whole_waves). The rows that rule moves are those the fill lost on the
 * H200 (measured-2026-11-28-h200 grouped.txt, DeepGEMM's time / qgemm's):
 * 1 x 1024 rows 6144x7168 as 128x256 0.72, 4 x ~256 rows 4096x4096 0.85 and
 * 4096x2048 0.92 as 128x256, 6 x ~1024 rows 4096x4096 as 256x128 A 0.96; the
 * masked test rows qgemm won there keep their tiles on both devices. B
 * multicast (QGEMM_FP8_GROUPED_MCB, on by default on the H200) is held off
 * here: config_grouped_multicast_b checks it. */
TEST(config_h200_masked_whole_waves) {
    const char *saved_env = getenv("QGEMM_FP8_GROUPED_MCB");
    char *saved = saved_env ? strdup(saved_env) : NULL;
    setenv("QGEMM_FP8_GROUPED_MCB", "0", 1);
    qg_context *h100_ctx = h100();
    CHECK(h100_ctx, "offline context: %s", qg_last_error());
    qg_device_props props = {.sm_count = 132, .cc_major = 9, .cc_minor = 0,
                             .smem_optin_bytes = 232448, .l2_bytes = 50u << 20, .dram_gbps = 4915};
    qg_context *h200 = NULL, *unknown = NULL, *below = NULL;
    CHECK(qg_context_create_offline(&h200, &props) == QG_SUCCESS, "%s", qg_last_error());
    props.dram_gbps = 0;
    CHECK(qg_context_create_offline(&unknown, &props) == QG_SUCCESS, "%s", qg_last_error());
    props.dram_gbps = 4499;
    CHECK(qg_context_create_offline(&below, &props) == QG_SUCCESS, "%s", qg_last_error());
    const qg_multicast N = QG_MULTICAST_NONE, A = QG_MULTICAST_A;
    static const struct {
        qg_problem p;
        int h200_bm, h200_bn, h200_mc, h100_bm, h100_bn, h100_mc;
    } rows[] = {
        /* moved on the H200 */
        {{QG_GEMM_GROUPED_MASKED, 1024, 6144, 7168, 1, 1024, 0}, 128, 192, N, 128, 256, N},
        {{QG_GEMM_GROUPED_MASKED, 4096, 4096, 4096, 4, 307, 0}, 128, 192, N, 128, 256, N},
        {{QG_GEMM_GROUPED_MASKED, 4096, 4096, 2048, 4, 307, 0}, 128, 192, N, 128, 256, N},
        {{QG_GEMM_GROUPED_MASKED, 4096, 4096, 4096, 6, 1228, 0}, 128, 192, A, 256, 128, A},
        /* kept on both: the rows qgemm won or where the tile was DeepGEMM's */
        {{QG_GEMM_GROUPED_MASKED, 1024, 7168, 3072, 1, 1024, 0}, 128, 256, N, 128, 256, N},
        {{QG_GEMM_GROUPED_MASKED, 1024, 4096, 4096, 1, 1024, 0}, 128, 256, N, 128, 256, N},
        {{QG_GEMM_GROUPED_MASKED, 1024, 4096, 2048, 1, 1024, 0}, 128, 256, N, 128, 256, N},
        {{QG_GEMM_GROUPED_MASKED, 4096, 7168, 3072, 4, 307, 0}, 128, 192, A, 128, 192, A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 6144, 7168, 4, 307, 0}, 128, 192, A, 128, 192, A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 4096, 2048, 6, 1228, 0}, 128, 192, A, 128, 192, A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 6144, 7168, 6, 1228, 0}, 256, 128, A, 256, 128, A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 6144, 7168, 32, 230, 0}, 256, 128, A, 256, 128, A},
        {{QG_GEMM_GROUPED_MASKED, 4096, 4096, 2048, 32, 24, 0}, 64, 176, N, 64, 176, N},
        /* not masked: psum walks its groups too but keeps the fill */
        {{QG_GEMM_GROUPED_PSUM, 24576, 4096, 2048, 6, 1228, 0}, 128, 192, A, 128, 192, A},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int dev = 0; dev < 4; ++dev) {
            qg_context *ctx = dev == 0 ? h200 : dev == 1 ? h100_ctx : dev == 2 ? unknown : below;
            const bool hbm3e = dev == 0;
            qg_config cfg;
            CHECK(qg_select_config(ctx, &rows[i].p, &cfg) == QG_SUCCESS, "%s", qg_last_error());
            const int bm = hbm3e ? rows[i].h200_bm : rows[i].h100_bm;
            const int bn = hbm3e ? rows[i].h200_bn : rows[i].h100_bn;
            const int mc = hbm3e ? rows[i].h200_mc : rows[i].h100_mc;
            CHECK(cfg.block_m == bm && cfg.block_n == bn && (int)cfg.multicast == mc,
                  "%s kind %d %d groups x %d (M %d) %dx%d: chose %dx%d mc %d, expected %dx%d mc %d",
                  dev == 0 ? "H200" : dev == 1 ? "H100" : dev == 2 ? "unknown DRAM" : "4499 GB/s",
                  (int)rows[i].p.kind, rows[i].p.num_groups, rows[i].p.expected_m, rows[i].p.m,
                  rows[i].p.n, rows[i].p.k, cfg.block_m, cfg.block_n, (int)cfg.multicast, bm, bn,
                  mc);
        }
    qg_context_destroy(below);
    qg_context_destroy(unknown);
    qg_context_destroy(h200);
    qg_context_destroy(h100_ctx);
    if (saved) setenv("QGEMM_FP8_GROUPED_MCB", saved, 1);
    else unsetenv("QGEMM_FP8_GROUPED_MCB");
    free(saved);
    PASS();
}

/* The words of a QGEMM_FP8_HEUR value as the test reads them (its own
 * parser, not the library's): notall / nomcb / nomcbc flags; unset, ""
 * and a list of no words (only '+') the default, notall+nomcb. */
static void heur_words(const char *v, bool *notall, bool *nomcb, bool *nomcbc) {
    *notall = *nomcb = *nomcbc = false;
    int words = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v ? v : "");
    for (char *save = NULL, *w = strtok_r(buf, "+", &save); w; w = strtok_r(NULL, "+", &save)) {
        ++words;
        if (!strcmp(w, "default")) *notall = *nomcb = true;
        else if (!strcmp(w, "notall")) *notall = true;
        else if (!strcmp(w, "nomcb")) *nomcb = true;
        else if (!strcmp(w, "nomcbc")) *nomcbc = true;
    }
    if (!words) *notall = *nomcb = true;
}

/* QGEMM_FP8_HEUR (issue 52; src/fp8_config.c qg__fp8_heur), read per call:
 * none / base leave every choice alone (the heuristic before 2026-11-29);
 * unset, "" and default are notall+nomcb (the H200's winners); notall moves
 * the masked and psum tall groups at K >= 6144 from 256x128 A to DeepGEMM's
 * 128x192 B where grouped B is allowed (H200 default, or
 * QGEMM_FP8_GROUPED_MCB=1), and nothing where it is not; nomcb drops grouped
 * B for groups of <= 512 expected rows at K < 6144 only, nomcbc for
 * contiguous experts averaging <= 512 rows only; none of them touches the
 * swizzle group (16, the small dense problems' 1) or forced configurations;
 * other words (swN too: the long-K swizzle probe left the tree on
 * 2026-11-29) fail the heuristic's callers, naming the variable. */
TEST(config_fp8_heur) {
    const char *names[2] = {"QGEMM_FP8_HEUR", "QGEMM_FP8_GROUPED_MCB"};
    char *saved[2];
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(names[i]);
    }
    qg_context *h100_ctx = h100();
    CHECK(h100_ctx, "offline context: %s", qg_last_error());
    qg_device_props props = {.sm_count = 132, .cc_major = 9, .cc_minor = 0,
                             .smem_optin_bytes = 232448, .l2_bytes = 50u << 20, .dram_gbps = 4915};
    qg_context *h200 = NULL;
    CHECK(qg_context_create_offline(&h200, &props) == QG_SUCCESS, "%s", qg_last_error());
    const qg_problem tall = {QG_GEMM_GROUPED_MASKED, 4096, 6144, 7168, 6, 1228, 0};
    const qg_problem tall_psum = {QG_GEMM_GROUPED_PSUM, 8 * 4224, 6144, 7168, 8, 4096, 0};
    const qg_problem small = {QG_GEMM_GROUPED_MASKED, 4096, 4096, 4096, 4, 307, 0};
    const qg_problem contig = {QG_GEMM_GROUPED_CONTIGUOUS, 33920, 6144, 7168, 4, 0, 0};
    const qg_problem dense = {QG_GEMM_DENSE, 4096, 4096, 7168, 1, 0, 0};
    const qg_problem dense_small = {QG_GEMM_DENSE, 128, 4096, 7168, 1, 0, 0};
    /* (past the line, QG_HEUR_LONG_K 6144: a small group at long K keeps B under
     * nomcb, a tall group at short K keeps 256x128 A under notall) */
    const qg_problem small_long = {QG_GEMM_GROUPED_MASKED, 4096, 6144, 7168, 4, 307, 0};
    const qg_problem tall_short = {QG_GEMM_GROUPED_MASKED, 4096, 7168, 3072, 6, 1228, 0};
    /* (contiguous experts of ~308 rows: B under the H200 default, not under nomcbc) */
    const qg_problem contig_small = {QG_GEMM_GROUPED_CONTIGUOUS, 9856, 6144, 7168, 32, 0, 0};
    const qg_problem *all[] = {&tall, &tall_psum, &small, &contig, &dense, &dense_small,
                               &small_long, &tall_short, &contig_small};
    const int num = (int)(sizeof all / sizeof all[0]);
    /* base: the heuristic without alternatives (none) */
    setenv("QGEMM_FP8_HEUR", "none", 1);
    qg_config base[2][9], cfg;
    for (int dev = 0; dev < 2; dev++)
        for (int i = 0; i < num; i++)
            CHECK(qg_select_config(dev ? h100_ctx : h200, all[i], &base[dev][i]) == QG_SUCCESS,
                  "%s", qg_last_error());
    unsetenv("QGEMM_FP8_HEUR");
    /* (the defaults these checks rest on: tall groups 256x128 A, small 128x192 B on the H200) */
    CHECK(base[0][0].block_m == 256 && base[0][0].multicast == QG_MULTICAST_A, "tall %dx%d",
          base[0][0].block_m, base[0][0].block_n);
    CHECK(base[0][2].block_n == 192 && base[0][2].multicast == QG_MULTICAST_B, "small %dx%d %d",
          base[0][2].block_m, base[0][2].block_n, (int)base[0][2].multicast);
    CHECK(base[0][4].swizzle_group == 16 && base[0][5].swizzle_group == 1, "swizzle %d %d",
          base[0][4].swizzle_group, base[0][5].swizzle_group);
    CHECK(base[0][6].multicast == QG_MULTICAST_B && base[0][7].block_m == 256 &&
              base[0][7].multicast == QG_MULTICAST_A, "small_long mc %d, tall_short %dx%d mc %d",
          (int)base[0][6].multicast, base[0][7].block_m, base[0][7].block_n,
          (int)base[0][7].multicast);

    CHECK(base[0][8].multicast == QG_MULTICAST_B, "contig_small mc %d", (int)base[0][8].multicast);
    /* (NULL: unset, the default) */
    static const char *const values[] = {NULL, "", "none", "base", "default", "notall", "nomcb",
                                         "nomcbc", "notall+nomcb+nomcbc", "base+", "+",
                                         "default+nomcbc", "none+nomcbc", "nomcb+notall"};
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        if (values[v]) setenv("QGEMM_FP8_HEUR", values[v], 1);
        else unsetenv("QGEMM_FP8_HEUR");
        bool notall, nomcb, nomcbc;
        heur_words(values[v], &notall, &nomcb, &nomcbc);
        const char *name = values[v] ? values[v] : "(unset)";
        for (int dev = 0; dev < 2; dev++)
            for (int i = 0; i < num; i++) {
                CHECK(qg_select_config(dev ? h100_ctx : h200, all[i], &cfg) == QG_SUCCESS,
                      "QGEMM_FP8_HEUR %s: %s", name, qg_last_error());
                const qg_config *b = &base[dev][i];
                const bool h200_grouped_b = dev == 0 && all[i]->kind != QG_GEMM_DENSE;
                int bm = b->block_m, bn = b->block_n;
                qg_multicast mc = b->multicast;
                if (notall && h200_grouped_b && i < 2) bm = 128, bn = 192, mc = QG_MULTICAST_B;
                const bool moved_small = (nomcb && dev == 0 && i == 2) ||
                                         (nomcbc && dev == 0 && i == 8);
                CHECK(cfg.block_m == bm && cfg.block_n == bn &&
                          (moved_small ? cfg.multicast != QG_MULTICAST_B : cfg.multicast == mc),
                      "QGEMM_FP8_HEUR '%s', %s, problem %d: %dx%d mc %d, expected %dx%d mc %d%s",
                      name, dev ? "H100" : "H200", i, cfg.block_m, cfg.block_n,
                      (int)cfg.multicast, bm, bn, (int)mc, moved_small ? " (any but B)" : "");
                const int want_sw = i == 5 ? 1 : 16;
                CHECK(cfg.swizzle_group == want_sw, "QGEMM_FP8_HEUR '%s', %s, problem %d: "
                      "swizzle %d, expected %d", name, dev ? "H100" : "H200", i,
                      cfg.swizzle_group, want_sw);
            }
        /* a forced configuration keeps the default swizzle */
        qg_config forced = {.block_m = 128, .block_n = 192, .multicast = QG_MULTICAST_B};
        CHECK(qg_complete_config(h200, &contig, &forced) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(forced.swizzle_group == 16, "forced: swizzle %d under '%s'", forced.swizzle_group,
              name);
    }
    /* grouped B off: notall changes nothing (no B tile to take the rows) */
    setenv("QGEMM_FP8_GROUPED_MCB", "0", 1);
    setenv("QGEMM_FP8_HEUR", "notall", 1);
    CHECK(qg_select_config(h200, &tall, &cfg) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(cfg.block_m == 256 && cfg.multicast == QG_MULTICAST_A, "notall without B: %dx%d %d",
          cfg.block_m, cfg.block_n, (int)cfg.multicast);
    unsetenv("QGEMM_FP8_GROUPED_MCB");
    /* (sw2 .. sw64: the removed swizzle probe) */
    static const char *const bad[] = {"sw2",  "sw4",     "sw8",   "sw32",    "sw64",   "notall+sw8",
                                      "sw16", "sw",      "sw8x",  "notall+tall", "NOTALL",
                                      "nomcbcc", "defaults", "nones", "Default", "none+x",
                                      "notall,nomcb", "sw 8"};
    for (size_t v = 0; v < sizeof bad / sizeof bad[0]; v++) {
        setenv("QGEMM_FP8_HEUR", bad[v], 1);
        CHECK(qg_select_config(h200, &dense, &cfg) == QG_ERROR_INVALID_ARGUMENT,
              "QGEMM_FP8_HEUR '%s' accepted", bad[v]);
        CHECK(strstr(qg_last_error(), "QGEMM_FP8_HEUR") && strstr(qg_last_error(), bad[v]),
              "message: %s", qg_last_error());
        CHECK(qg_select_config_fp8out(h200, &dense, 0, &cfg) == QG_ERROR_INVALID_ARGUMENT,
              "QGEMM_FP8_HEUR '%s' accepted (e4m3 D)", bad[v]);
    }
    for (int i = 0; i < 2; i++) {
        if (saved[i]) setenv(names[i], saved[i], 1);
        else unsetenv(names[i]);
        free(saved[i]);
    }
    qg_context_destroy(h200);
    qg_context_destroy(h100_ctx);
    PASS();
}

/* The B prefetch under PDL (qg__pdl_prefetch_kb): dense problems of one
 * m-block without split-K only, 1 to 4 K blocks a CTA, about 6 MiB of B over
 * the grid, never more K blocks than K has. */
TEST(config_pdl_prefetch) {
    qg_context *ctx = h100();
    CHECK(ctx, "offline context: %s", qg_last_error());
    static const struct { int m, n, k; qg_gemm_kind kind; int groups; int bm, bn, split; int grid, want; } cases[] = {
        {64, 4096, 7168, QG_GEMM_DENSE, 1, 64, 32, 1, 128, 4},    /* 2 MiB for 4 K blocks */
        {128, 32768, 512, QG_GEMM_DENSE, 1, 128, 128, 1, 132, 2}, /* 132 x 16 KiB a K block */
        {64, 24576, 1536, QG_GEMM_DENSE, 1, 64, 96, 1, 132, 3},
        {64, 65536, 7168, QG_GEMM_DENSE, 1, 64, 64, 1, 1024, 1},  /* at least one */
        {64, 4096, 256, QG_GEMM_DENSE, 1, 64, 32, 1, 128, 2},     /* K has two K blocks */
        {129, 4096, 7168, QG_GEMM_DENSE, 1, 128, 32, 1, 132, 0},  /* two m-blocks */
        {64, 2112, 7168, QG_GEMM_DENSE, 1, 64, 32, 2, 132, 0},    /* split-K */
        {4096, 7168, 2048, QG_GEMM_DENSE, 1, 256, 128, 1, 132, 0},
        {128, 4096, 7168, QG_GEMM_GROUPED_CONTIGUOUS, 4, 128, 32, 1, 128, 0},
        {64, 4096, 7168, QG_GEMM_GROUPED_MASKED, 4, 64, 32, 1, 132, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qg_problem p = {cases[i].kind, cases[i].m, cases[i].n, cases[i].k, cases[i].groups, 0, 0};
        qg_config cfg = {.block_m = cases[i].bm, .block_n = cases[i].bn, .split_k = cases[i].split};
        qg_kernel_plan plan;
        CHECK(qg__plan(&ctx->props, &p, &cfg, &plan) == QG_SUCCESS, "case %zu: %s", i,
              qg_last_error());
        const int kb = qg__pdl_prefetch_kb(&p, &cfg, &plan, cases[i].grid);
        CHECK(kb == cases[i].want, "case %zu (%dx%dx%d, %dx%d, split %d): %d K blocks, want %d",
              i, p.m, p.n, p.k, cfg.block_m, cfg.block_n, cfg.split_k, kb, cases[i].want);
    }
    qg_context_destroy(ctx);
    PASS();
}
