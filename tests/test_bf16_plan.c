/*
 * test_bf16_plan.c -- the BF16 GEMM planner and JIT source writer
 * (src/bf16_plan.c): every DeepSeek shape in every layout and kind gets a
 * legal plan that fits shared memory; the legality rules; the source's
 * macros. CPU only. (The kernels themselves are compiled offline by
 * tools/bf16_compile_check.sh.)
 */
#include "bf16_plan.h"
#include "qg_test.h"

#include <stdlib.h>

static qg_bf16_problem problem(int m, int n, int k, qg_bf16_layout l, qg_bf16_kind kind) {
    qg_bf16_problem p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.n = n;
    p.k = k;
    p.layout = l;
    p.kind = kind;
    p.num_groups = kind == QG_BF16_DENSE ? 1 : 8;
    p.num_sms = 132;
    p.smem_limit = 232448;
    return p;
}

TEST(bf16_plan_every_deepseek_shape) {
    static const int ms[] = {1, 64, 128, 4096};
    static const int nk[][2] = {{2112, 7168}, {24576, 1536}, {32768, 512},
                                {7168, 16384}, {4096, 7168}, {7168, 2048}};
    for (int l = 0; l < 4; ++l)
        for (int kind = 0; kind <= 4; ++kind)
            for (int f32 = 0; f32 < 2; ++f32)
                for (size_t i = 0; i < 4; ++i)
                    for (size_t j = 0; j < 6; ++j) {
                        if (qg__bf16_a_mn_major((qg_bf16_layout)l) && kind != 0 && kind != 4) continue;
                        qg_bf16_problem p = problem(ms[i], nk[j][0], nk[j][1], (qg_bf16_layout)l,
                                                    (qg_bf16_kind)kind);
                        p.d_f32 = f32 || kind == 4;
                        qg_bf16_plan pl;
                        CHECK(qg__bf16_select(&p, &pl) == 0, "no plan: layout %d kind %d %dx%dx%d", l,
                              kind, p.m, p.n, p.k);
                        CHECK(pl.smem_bytes <= p.smem_limit && pl.num_stages >= 3, "smem %d stages %d",
                              pl.smem_bytes, pl.num_stages);
                        CHECK(pl.smem_bytes ==
                                  qg__bf16_smem_bytes(pl.block_m, pl.block_n, pl.num_stages, p.d_f32),
                              "smem");
                        CHECK(qg__bf16_legal(&p, pl.block_m, pl.block_n, pl.multicast, NULL), "legal");
                        CHECK(128 * pl.producer_regs + 128 * pl.num_math_wgs * pl.math_regs <= 65536,
                              "register split");
                        CHECK(pl.grid % pl.cluster == 0 && pl.grid <= p.num_sms, "grid %d", pl.grid);
                        /* MN-major operands load whole 64-wide atoms */
                        if (qg__bf16_b_mn_major(p.layout)) CHECK(pl.block_n % 64 == 0, "bn %d", pl.block_n);
                        /* decode shapes take 64-row tiles */
                        if (p.kind == QG_BF16_DENSE && p.m <= 64) CHECK(pl.block_m == 64, "bm %d", pl.block_m);
                    }
    PASS();
}

TEST(bf16_plan_legality) {
    qg_bf16_problem p = problem(4096, 4096, 7168, QG_BF16_NN, QG_BF16_DENSE);
    const char *why = NULL;
    CHECK(!qg__bf16_legal(&p, 128, 96, 0, &why) && why, "MN-major B, block_n 96");
    CHECK(qg__bf16_legal(&p, 128, 192, 0, NULL), "MN-major B, block_n 192");
    CHECK(!qg__bf16_legal(&p, 256, 256, 0, NULL), "256x256");
    CHECK(!qg__bf16_legal(&p, 128, 192, 2, NULL), "B multicast, MN-major, 192 (not whole atom pairs)");
    p.layout = QG_BF16_TN;
    CHECK(!qg__bf16_legal(&p, 64, 128, 1, NULL), "A multicast, MN-major, block_m 64");
    CHECK(qg__bf16_legal(&p, 128, 128, 1, NULL), "A multicast, MN-major, block_m 128");
    p.kind = QG_BF16_CONTIGUOUS;
    CHECK(!qg__bf16_legal(&p, 128, 128, 0, NULL), "MN-major A, contiguous");
    p.layout = QG_BF16_NT;
    CHECK(!qg__bf16_legal(&p, 256, 128, 0, NULL), "contiguous, block_m 256");
    p.with_c = 1;
    CHECK(!qg__bf16_legal(&p, 128, 128, 0, NULL), "contiguous with C");
    p = problem(4096, 4096 + 128, 7168, QG_BF16_NT, QG_BF16_DENSE);
    CHECK(!qg__bf16_legal(&p, 128, 256, 1, NULL), "A multicast, odd n-block count");
    p = problem(4096, 4096, 7168, QG_BF16_NT, QG_BF16_K_GROUPED);
    CHECK(!qg__bf16_legal(&p, 128, 128, 1, NULL), "k-grouped multicast");
    p = problem(4096, 4096, 7168, QG_BF16_NT, QG_BF16_DENSE);
    p.d_f32 = 1;
    CHECK(!qg__bf16_legal(&p, 256, 128, 0, NULL), "FP32 D, block_m 256");
    p = problem(4096, 4096, 7000, QG_BF16_NN, QG_BF16_MASKED);
    CHECK(!qg__bf16_legal(&p, 128, 128, 0, NULL), "m-grouped MN-major B, K not a multiple of 64");
    /* B multicast: dense needs an even m-block count; the m-grouped layouts
     * decide per tile in the kernel (any count); not k-grouped, batched or
     * the batch sums */
    p = problem(4096 + 128, 4096, 7168, QG_BF16_NT, QG_BF16_DENSE);
    CHECK(!qg__bf16_legal(&p, 128, 256, 2, NULL), "dense B multicast, odd m-block count");
    for (int kind = QG_BF16_CONTIGUOUS; kind <= QG_BF16_PSUM; ++kind) {
        p = problem(4096 + 128, 4096 + 128, 7168, QG_BF16_NT, (qg_bf16_kind)kind);
        p.expected_m = 192;
        CHECK(qg__bf16_legal(&p, 128, 256, 2, &why), "kind %d B multicast, odd m- and n-blocks: %s",
              kind, why ? why : "");
        CHECK(qg__bf16_legal(&p, 64, 96, 2, NULL), "kind %d B multicast 64x96", kind);
        p.layout = QG_BF16_NN;
        CHECK(qg__bf16_legal(&p, 128, 256, 2, NULL), "kind %d NN B multicast", kind);
        CHECK(!qg__bf16_legal(&p, 128, 192, 2, NULL), "kind %d NN B multicast, 192", kind);
    }
    p = problem(4096, 4096, 7168, QG_BF16_NT, QG_BF16_K_GROUPED);
    CHECK(!qg__bf16_legal(&p, 128, 128, 2, NULL), "k-grouped B multicast");
    p = problem(4096, 4096, 7168, QG_BF16_NT, QG_BF16_BATCHED);
    CHECK(!qg__bf16_legal(&p, 128, 128, 2, NULL), "batched B multicast");
    PASS();
}

/* B multicast in the m-grouped layouts (issue 49, branch gmc): the current
 * heuristic (legacy 0, QGEMM_BF16_PLAN unset or v3) takes the tile v2 takes
 * with B shared where its pairs share B (DeepGEMM's choice on its masked and
 * contiguous test shapes); v1 and v2 never; never where a group has one
 * m-block (no pair shares B: masked 20 rows); only the multicast changes. */
TEST(bf16_plan_grouped_b_multicast) {
    qg_bf16_plan pl, v2;
    static char buf[16384];
    static const int nk[][2] = {{6144, 7168}, {7168, 3072}, {4096, 4096}, {4096, 2048}};
    for (size_t j = 0; j < 4; ++j) {
        /* masked, 32 groups of ~192 rows and 6 of ~1024: 128 x 256 (240) B */
        for (int e = 0; e < 2; ++e) {
            qg_bf16_problem p = problem(4096, nk[j][0], nk[j][1], QG_BF16_NT, QG_BF16_MASKED);
            p.num_groups = e ? 6 : 32, p.expected_m = e ? 1024 : 192;
            CHECK(qg__bf16_select(&p, &pl) == 0 && pl.block_m == 128 && pl.multicast == 2 &&
                      pl.cluster == 2 && pl.b_box_rows == pl.block_n / 2,
                  "masked %dx%d n %d: %dx%d mc %d", p.num_groups, p.expected_m, p.n, pl.block_m,
                  pl.block_n, pl.multicast);
            CHECK(qg__bf16_kernel_source(buf, sizeof buf, &p, &pl) > 0 &&
                      strstr(buf, "#define QG_KIND 2\n") && strstr(buf, "#define QG_MULTICAST 2\n") &&
                      strstr(buf, "#define QG_CLUSTER 2\n"),
                  "masked B multicast source");
            p.legacy = 2;
            CHECK(qg__bf16_select(&p, &v2) == 0 && v2.multicast == 1 && v2.block_n == pl.block_n,
                  "v2 masked: mc %d", v2.multicast);
            /* 20 rows: one m-block a group, nothing to share along M */
            p.legacy = 0, p.expected_m = 20;
            CHECK(qg__bf16_select(&p, &pl) == 0 && pl.multicast != 2, "masked x20: mc %d",
                  pl.multicast);
        }
        /* contiguous, 4 x 8192 and 8 x 4096 rows, NT and NN: 128 x 256 B */
        for (int l = 0; l < 2; ++l) {
            qg_bf16_problem p = problem(32768, nk[j][0], nk[j][1], l ? QG_BF16_NN : QG_BF16_NT,
                                        QG_BF16_CONTIGUOUS);
            p.num_groups = 4;
            CHECK(qg__bf16_select(&p, &pl) == 0 && pl.block_m == 128 && pl.block_n == 256 &&
                      pl.multicast == 2,
                  "contiguous n %d layout %d: %dx%d mc %d", p.n, l, pl.block_m, pl.block_n,
                  pl.multicast);
            p.legacy = 2;
            CHECK(qg__bf16_select(&p, &v2) == 0 && v2.multicast == 1, "v2 contiguous: mc %d",
                  v2.multicast);
        }
    }
    /* psum: as masked */
    qg_bf16_problem p = problem(8192, 4096, 4096, QG_BF16_NT, QG_BF16_PSUM);
    p.expected_m = 1024;
    CHECK(qg__bf16_select(&p, &pl) == 0 && pl.multicast == 2, "psum: mc %d", pl.multicast);
    /* v3 against v2 (and v1) over a grid: tile, stages and grid unchanged;
     * the multicast only ever turns to B, and only in the m-grouped layouts */
    static const int ms[] = {64, 128, 256, 1000, 4096, 16384};
    static const int es[] = {0, 20, 100, 192, 300, 1024};
    static const int nk2[][2] = {{2112, 7168}, {576, 7168}, {24576, 1536}, {7168, 2048},
                                 {4096, 7168}, {6144, 7168}, {4000, 4096}};
    int swapped = 0;
    for (int l = 0; l < 2; ++l)
        for (int kind = 0; kind <= 4; ++kind)
            for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i)
                for (size_t e = 0; e < sizeof es / sizeof es[0]; ++e)
                    for (size_t j = 0; j < sizeof nk2 / sizeof nk2[0]; ++j) {
                        p = problem(ms[i], nk2[j][0], nk2[j][1], (qg_bf16_layout)l, (qg_bf16_kind)kind);
                        p.expected_m = es[e];
                        p.d_f32 = p.with_c = kind == QG_BF16_K_GROUPED;
                        CHECK(qg__bf16_select(&p, &pl) == 0, "plan");
                        for (int legacy = 1; legacy <= 2; ++legacy) {
                            p.legacy = legacy;
                            CHECK(qg__bf16_select(&p, &v2) == 0, "v%d plan", legacy);
                            CHECK(kind == QG_BF16_DENSE || v2.multicast != 2,
                                  "v%d kind %d: B multicast", legacy, kind);
                        }
                        p.legacy = 0;
                        const int grouped = kind >= QG_BF16_CONTIGUOUS && kind <= QG_BF16_PSUM;
                        CHECK(pl.block_m == v2.block_m && pl.block_n == v2.block_n &&
                                  pl.num_stages == v2.num_stages && pl.grid == v2.grid,
                              "kind %d %dx%dx%d: %dx%d vs v2 %dx%d", kind, p.m, p.n, p.k, pl.block_m,
                              pl.block_n, v2.block_m, v2.block_n);
                        CHECK(pl.multicast == v2.multicast || (grouped && pl.multicast == 2),
                              "kind %d %dx%dx%d e %d: mc %d vs v2 %d", kind, p.m, p.n, p.k, p.expected_m,
                              pl.multicast, v2.multicast);
                        swapped += pl.multicast != v2.multicast;
                    }
    CHECK(swapped > 0, "the swap changed nothing");
    printf("    %d of the grid's plans share B where v2 did not\n", swapped);
    PASS();
}

TEST(bf16_plan_source) {
    qg_bf16_problem p = problem(1, 576, 7168, QG_BF16_TN, QG_BF16_DENSE);
    qg_bf16_plan pl;
    CHECK(qg__bf16_select(&p, &pl) == 0, "plan");
    char buf[16384];
    const int n = qg__bf16_kernel_source(buf, sizeof buf, &p, &pl);
    CHECK(n > 0 && (size_t)n == strlen(buf), "length %d", n);
    CHECK(strstr(buf, "#define QG_A_MN_MAJOR 1\n") && strstr(buf, "#define QG_B_MN_MAJOR 0\n"), "majors");
    CHECK(strstr(buf, "#define QG_A_BOX_ROWS 64\n"), "MN-major A: whole block_m");
    CHECK(strstr(buf, "#include \"qg_bf16_gemm.cuh\"\n"), "include");
    p.layout = QG_BF16_NT;
    CHECK(qg__bf16_select(&p, &pl) == 0 && pl.a_box_rows == 8, "decode A box %d", pl.a_box_rows);
    CHECK(qg__bf16_kernel_source(buf, sizeof buf, &p, &pl) > 0 && strstr(buf, "#define QG_A_BOX_ROWS 8\n"),
          "short A box");
    CHECK(qg__bf16_kernel_source(buf, 64, &p, &pl) < 0, "a short buffer is refused");
    p = problem(4096, 7168, 2048, QG_BF16_TT, QG_BF16_K_GROUPED);
    p.d_f32 = p.with_c = 1;
    CHECK(qg__bf16_select(&p, &pl) == 0 && pl.multicast == 0, "k-grouped plan");
    CHECK(qg__bf16_kernel_source(buf, sizeof buf, &p, &pl) > 0 && strstr(buf, "#define QG_KIND 4\n") &&
              strstr(buf, "#define QG_WITH_C 1\n") && strstr(buf, "#define QG_NUM_GROUPS 1\n"),
          "k-grouped source");
    PASS();
}

/* The multicast tie-break (branch bf16h): where A and B multicast of one tile
 * tie in the estimate, the plan shares the larger operand, as DeepGEMM's L2
 * model does; QGEMM_BF16_PLAN=v1 (legacy) keeps the old first choice, A. The
 * rule only ever swaps A for B: tile, stages and grid stay those of v1 on
 * every DeepSeek shape, kind and layout. */
TEST(bf16_plan_multicast_tiebreak) {
    qg_bf16_problem p = problem(4096, 2112, 7168, QG_BF16_NT, QG_BF16_DENSE);
    qg_bf16_plan pl, old;
    CHECK(qg__bf16_select(&p, &pl) == 0 && pl.block_m == 128 && pl.block_n == 176 && pl.multicast == 2,
          "4096x2112x7168: %dx%d mc %d, want 128x176 B", pl.block_m, pl.block_n, pl.multicast);
    p.legacy = 1;
    CHECK(qg__bf16_select(&p, &old) == 0 && old.block_m == 128 && old.block_n == 176 && old.multicast == 1,
          "v1 4096x2112x7168: %dx%d mc %d, want 128x176 A", old.block_m, old.block_n, old.multicast);
    /* 128 x 256 over 4096 x 4096: B shared (pairs along M), as DeepGEMM's 256 x 128 with A shared */
    p = problem(4096, 4096, 7168, QG_BF16_NT, QG_BF16_DENSE);
    CHECK(qg__bf16_select(&p, &pl) == 0 && pl.block_m == 128 && pl.block_n == 256 && pl.multicast == 2,
          "4096x4096x7168: %dx%d mc %d", pl.block_m, pl.block_n, pl.multicast);
    /* masked under v2 (QGEMM_BF16_PLAN=v2): B multicast is dense-only there, A
     * stays (the current heuristic shares B: bf16_plan_grouped_b_multicast) */
    p = problem(4096, 4096, 4096, QG_BF16_NT, QG_BF16_MASKED);
    p.num_groups = 32, p.expected_m = 192, p.legacy = 2;
    CHECK(qg__bf16_select(&p, &pl) == 0 && pl.block_m == 128 && pl.block_n == 256 && pl.multicast == 1,
          "masked 32x192: %dx%d mc %d", pl.block_m, pl.block_n, pl.multicast);
    static const int ms[] = {1, 64, 128, 256, 1000, 4096, 16384};
    static const int nk[][2] = {{2112, 7168}, {576, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                                {4096, 7168}, {7168, 2048}, {256, 7168}, {129280, 7168}, {6144, 7168}};
    int swapped = 0;
    for (int l = 0; l < 4; ++l)
        for (int kind = 0; kind <= 4; ++kind)
            for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i)
                for (size_t j = 0; j < sizeof nk / sizeof nk[0]; ++j) {
                    if (qg__bf16_a_mn_major((qg_bf16_layout)l) && kind != 0 && kind != 4) continue;
                    p = problem(ms[i], nk[j][0], nk[j][1], (qg_bf16_layout)l, (qg_bf16_kind)kind);
                    p.d_f32 = kind == 4;
                    p.with_c = kind == 4;
                    p.legacy = 2; /* v2: the tie-break without m-grouped B multicast */
                    CHECK(qg__bf16_select(&p, &pl) == 0, "plan");
                    p.legacy = 1;
                    CHECK(qg__bf16_select(&p, &old) == 0, "v1 plan");
                    CHECK(pl.block_m == old.block_m && pl.block_n == old.block_n &&
                              pl.num_stages == old.num_stages && pl.grid == old.grid,
                          "layout %d kind %d %dx%dx%d: %dx%d/%d vs v1 %dx%d/%d", l, kind, p.m, p.n, p.k,
                          pl.block_m, pl.block_n, pl.num_stages, old.block_m, old.block_n, old.num_stages);
                    CHECK(pl.multicast == old.multicast || (pl.multicast == 2 && old.multicast == 1),
                          "layout %d kind %d %dx%dx%d: multicast %d vs v1 %d", l, kind, p.m, p.n, p.k,
                          pl.multicast, old.multicast);
                    swapped += pl.multicast != old.multicast;
                }
    CHECK(swapped > 0, "the rule changed nothing");
    /* v1's masked and psum kernels run every tile in both math warpgroups
     * (QG_WG_SKIP 0); v2's source does not carry the switch at all */
    static char buf[16384];
    for (int kind = QG_BF16_CONTIGUOUS; kind <= QG_BF16_PSUM; ++kind)
        for (int legacy = 0; legacy < 3; ++legacy) {
            p = problem(4096, 4096, 4096, QG_BF16_NT, (qg_bf16_kind)kind);
            p.expected_m = 192, p.legacy = legacy;
            CHECK(qg__bf16_select(&p, &pl) == 0 && qg__bf16_kernel_source(buf, sizeof buf, &p, &pl) > 0,
                  "source");
            const int want = legacy == 1 && kind != QG_BF16_CONTIGUOUS;
            CHECK(!strstr(buf, "QG_WG_SKIP") == !want && (!want || strstr(buf, "#define QG_WG_SKIP 0\n")),
                  "kind %d legacy %d: QG_WG_SKIP", kind, legacy);
        }
    printf("    %d of the grid's plans share B where v1 shared A\n", swapped);
    PASS();
}

/* Shapes whose waves do not fit an int (m, n near 2^31, several groups): the
 * estimate counted ceil(tiles / grid) in an int, which wrapped to INT_MIN
 * and overflowed (UBSan; found by make fuzz through qg_bf16_compile). The
 * plan must still be legal and its estimate finite and positive. */
TEST(bf16_plan_huge_shapes) {
    static const int dims[][3] = {{2147483647, 2147483640, 64}, {2147483647, 16, 64},
                                  {64, 2147483640, 2147483584}};
    for (int i = 0; i < 3; i++)
        for (int kind = QG_BF16_DENSE; kind <= QG_BF16_MASKED; kind++) {
            qg_bf16_problem p = problem(dims[i][0], dims[i][1], dims[i][2], QG_BF16_NT,
                                        (qg_bf16_kind)kind);
            p.num_groups = kind == QG_BF16_DENSE ? 1 : 1024;
            qg_bf16_plan pl;
            CHECK(qg__bf16_select(&p, &pl) == 0, "no plan: kind %d %dx%dx%d", kind, p.m, p.n, p.k);
            CHECK(pl.est_cost > 0.0 && pl.est_cost < 1e300, "estimate %g: kind %d %dx%dx%d",
                  pl.est_cost, kind, p.m, p.n, p.k);
        }
    PASS();
}

/* Merged K stages (QGEMM_BF16_MERGE; qg_bf16_problem.merge): off changes
 * nothing; auto merges as DeepGEMM (a one-warpgroup tile with >= 10 stages
 * merges stages / 5: 64x16's 16 stages become 5 of 3 x 64 K); only dense NT;
 * the tile is the unmerged plan's whatever the knob; the merged plan fits
 * shared memory with >= 3 stages; its source says QG_BF16_MERGE, the
 * unmerged source never does. */
TEST(bf16_plan_merged_stages) {
    /* the issue-49 ncu row: 128x576x7168 NT, 64x16, 16 stages -> 3 x 5 */
    qg_bf16_problem p = problem(128, 576, 7168, QG_BF16_NT, QG_BF16_DENSE);
    qg_bf16_plan off, on;
    CHECK(qg__bf16_select(&p, &off) == 0 && off.merge == 1, "off: merge %d", off.merge);
    p.merge = -1;
    CHECK(qg__bf16_select(&p, &on) == 0, "auto: no plan");
    CHECK(on.block_m == off.block_m && on.block_n == off.block_n && on.multicast == off.multicast,
          "auto changed the tile: %dx%d mc %d vs %dx%d mc %d", on.block_m, on.block_n,
          on.multicast, off.block_m, off.block_n, off.multicast);
    CHECK(off.block_m == 64 && off.block_n == 16 && off.num_stages == 16,
          "the row's unmerged plan: %dx%d, %d stages", off.block_m, off.block_n, off.num_stages);
    CHECK(on.merge == 3 && on.num_stages == 5, "auto: merge %d, %d stages", on.merge, on.num_stages);
    CHECK(on.smem_bytes == qg__bf16_smem_bytes_merged(QG_BF16_DENSE, 64, 16, 5, 0, 3) &&
              on.smem_bytes <= p.smem_limit && on.smem_bytes < off.smem_bytes,
          "auto smem %d (unmerged %d)", on.smem_bytes, off.smem_bytes);
    static char src[16384];
    CHECK(qg__bf16_kernel_source(src, sizeof src, &p, &on) > 0 &&
              strstr(src, "#define QG_BF16_MERGE 3\n") && strstr(src, "#define QG_NUM_STAGES 5\n"),
          "merged source: %s", src);
    p.merge = 0;
    CHECK(qg__bf16_kernel_source(src, sizeof src, &p, &off) > 0 && !strstr(src, "QG_BF16_MERGE"),
          "unmerged source names QG_BF16_MERGE");
    /* every other layout and kind: ignored; and every dense NT shape: the same tile,
     * a merge within the rules */
    static const int ms[] = {1, 64, 128, 129, 4096};
    static const int nk[][2] = {{2112, 7168}, {576, 7168}, {24576, 1536}, {7168, 16384},
                                {4096, 7168}, {7168, 2048}, {256, 200}, {136, 1000}};
    int merged = 0;
    for (int l = 0; l < 4; ++l)
        for (int kind = 0; kind <= 4; ++kind)
            for (int knob = -1; knob <= 16; ++knob)
                for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i)
                    for (size_t j = 0; j < sizeof nk / sizeof nk[0]; ++j) {
                        if (knob > 6 && knob != 16) continue;
                        if (qg__bf16_a_mn_major((qg_bf16_layout)l) && kind != 0 && kind != 4) continue;
                        qg_bf16_problem q = problem(ms[i], nk[j][0], nk[j][1], (qg_bf16_layout)l,
                                                    (qg_bf16_kind)kind);
                        q.d_f32 = kind == 4;
                        qg_bf16_plan a, b;
                        if (qg__bf16_select(&q, &a) != 0) continue; /* (not this test's) */
                        q.merge = knob;
                        CHECK(qg__bf16_select(&q, &b) == 0, "no plan with merge %d", knob);
                        CHECK(a.block_m == b.block_m && a.block_n == b.block_n &&
                                  a.multicast == b.multicast,
                              "merge %d changed the tile", knob);
                        const int k_blocks = (q.k + 63) / 64;
                        if (l != QG_BF16_NT || kind != QG_BF16_DENSE || knob == 0 || knob == 1) {
                            CHECK(b.merge == 1 && b.num_stages == a.num_stages &&
                                      b.smem_bytes == a.smem_bytes,
                                  "layout %d kind %d knob %d merged (%d)", l, kind, knob, b.merge);
                            continue;
                        }
                        /* auto: one-warpgroup tiles of >= 10 stages, on grids of at most
                         * 0.6 x the SMs' tiles (qg__bf16_merge_of) */
                        const long long tiles = (long long)((q.m + a.block_m - 1) / a.block_m) *
                                                ((q.n + a.block_n - 1) / a.block_n);
                        const int want_auto = a.block_m == 64 && a.num_stages >= 10 &&
                                                      tiles * 5 <= 3ll * q.num_sms
                                                  ? a.num_stages / 5
                                                  : 1;
                        int want = knob < 0 ? want_auto : knob;
                        if (want > k_blocks) want = k_blocks;
                        if (want > a.num_stages / 3) want = a.num_stages / 3;
                        if (want < 1) want = 1;
                        CHECK(b.merge == want, "%dx%dx%d knob %d: merge %d, want %d", q.m, q.n, q.k,
                              knob, b.merge, want);
                        CHECK(b.num_stages == a.num_stages / b.merge && b.num_stages >= 3 &&
                                  b.smem_bytes == qg__bf16_smem_bytes_merged(
                                                      QG_BF16_DENSE, b.block_m, b.block_n,
                                                      b.num_stages, q.d_f32, b.merge) &&
                                  b.smem_bytes <= q.smem_limit,
                              "%dx%dx%d knob %d: %d stages, smem %d", q.m, q.n, q.k, knob,
                              b.num_stages, b.smem_bytes);
                        merged += b.merge > 1;
                    }
    CHECK(merged > 100, "only %d merged plans", merged);
    /* a forced tile (QGEMM_BF16_PLAN) merges the same way: qg__bf16_complete */
    p.merge = 4;
    qg_bf16_plan forced;
    CHECK(qg__bf16_complete(&p, 64, 32, 0, &forced) == 0 && forced.merge == 4 &&
              forced.num_stages >= 3,
          "forced 64x32 merge 4: merge %d, %d stages", forced.merge, forced.num_stages);
    /* out of range: not a problem */
    p.merge = 17;
    CHECK(qg__bf16_select(&p, &on) == -1, "merge 17 accepted");
    p.merge = -2;
    CHECK(qg__bf16_select(&p, &on) == -1, "merge -2 accepted");
    PASS();
}

/* Split-K (QGEMM_BF16_SPLITK; qg_bf16_problem.splitk; kernels/qg_bf16_gemm.cuh
 * "Split-K"): off changes nothing; auto splits the decode-sized K 7168 rows of
 * few tiles (1x576, 128x576) and leaves the full grids (the 2112 and 4096 rows,
 * M 4096) alone; a split plan is dense, without multicast, a cluster of S CTAs
 * with a grid of whole clusters, every rank at least one K step, its shared
 * memory the kernel's (split-K's barriers included) and within the limit, its
 * partners' partial sums within its stages; a forced split keeps the chosen
 * tile (dropping its multicast) and halves until the K takes it; other kinds
 * never split; the split source says QG_BF16_SPLITK, the
 * unsplit one never does. */
TEST(bf16_plan_splitk) {
    qg_bf16_problem p = problem(1, 576, 7168, QG_BF16_NT, QG_BF16_DENSE);
    p.merge = -1;
    qg_bf16_plan off, on;
    CHECK(qg__bf16_select(&p, &off) == 0 && off.splitk == 1 && off.cluster == 1,
          "off: split %d cluster %d", off.splitk, off.cluster);
    static char src[16384];
    CHECK(qg__bf16_kernel_source(src, sizeof src, &p, &off) > 0 && !strstr(src, "QG_BF16_SPLITK"),
          "unsplit source names QG_BF16_SPLITK");
    static const int auto_rows[][3] = {{1, 576, 7168}, {128, 576, 7168}};
    for (size_t i = 0; i < 2; ++i) {
        p = problem(auto_rows[i][0], auto_rows[i][1], auto_rows[i][2], QG_BF16_NT, QG_BF16_DENSE);
        p.merge = -1;
        p.splitk = -1;
        CHECK(qg__bf16_select(&p, &on) == 0 && on.splitk > 1, "auto did not split %dx%dx%d",
              p.m, p.n, p.k);
        const long long ctas = (long long)((p.m + on.block_m - 1) / on.block_m) *
                               ((p.n + on.block_n - 1) / on.block_n) * on.splitk;
        CHECK(ctas <= on.grid && ctas > 66, "%dx%dx%d auto: %lld CTAs, grid %d", p.m, p.n, p.k,
              ctas, on.grid);
        CHECK(qg__bf16_kernel_source(src, sizeof src, &p, &on) > 0, "source");
        char want[64];
        snprintf(want, sizeof want, "#define QG_BF16_SPLITK %d\n", on.splitk);
        CHECK(strstr(src, want) != NULL, "split source: %s", src);
        snprintf(want, sizeof want, "#define QG_CLUSTER %d\n", on.splitk);
        CHECK(strstr(src, want) != NULL, "split source's cluster: %s", src);
    }
    static const int big_rows[][3] = {{1, 2112, 7168}, {128, 4096, 7168}, {4096, 576, 7168},
                                      {4096, 4096, 7168}, {1, 576, 512}};
    for (size_t i = 0; i < sizeof big_rows / sizeof big_rows[0]; ++i) {
        p = problem(big_rows[i][0], big_rows[i][1], big_rows[i][2], QG_BF16_NT, QG_BF16_DENSE);
        p.splitk = -1;
        CHECK(qg__bf16_select(&p, &on) == 0 && on.splitk == 1, "auto split %dx%dx%d by %d",
              p.m, p.n, p.k, on.splitk);
    }
    /* every forced split and auto over shapes, layouts and kinds: the invariants */
    static const int ms[] = {1, 64, 128, 129, 4096};
    static const int nk[][2] = {{2112, 7168}, {576, 7168}, {24576, 1536}, {4096, 7168},
                                {7168, 2048}, {256, 200}, {136, 1000}, {264, 128}, {512, 64}};
    static const int knobs[] = {-1, 2, 4, 8};
    int split = 0;
    for (int l = 0; l < 4; ++l)
        for (int kind = 0; kind <= 4; ++kind)
            for (size_t g = 0; g < 4; ++g)
                for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i)
                    for (size_t j = 0; j < sizeof nk / sizeof nk[0]; ++j) {
                        if (qg__bf16_a_mn_major((qg_bf16_layout)l) && kind != 0 && kind != 4) continue;
                        qg_bf16_problem q = problem(ms[i], nk[j][0], nk[j][1], (qg_bf16_layout)l,
                                                    (qg_bf16_kind)kind);
                        q.d_f32 = kind == 4;
                        q.merge = -1;
                        qg_bf16_plan a, b;
                        if (qg__bf16_select(&q, &a) != 0) continue; /* (not this test's) */
                        q.splitk = knobs[g];
                        CHECK(qg__bf16_select(&q, &b) == 0, "no plan with split %d", knobs[g]);
                        const int k_steps = ((q.k + 63) / 64 + b.merge - 1) / b.merge;
                        if (kind != QG_BF16_DENSE) {
                            CHECK(b.splitk == 1 && b.cluster == a.cluster, "kind %d split", kind);
                            continue;
                        }
                        if (knobs[g] > 0) { /* forced: the chosen tile, S halved until it fits */
                            CHECK(b.block_m == a.block_m && b.block_n == a.block_n,
                                  "forced %d changed the tile", knobs[g]);
                            if (k_steps >= 2)
                                CHECK(b.splitk > 1 && b.splitk <= knobs[g],
                                      "%dx%dx%d forced %d: split %d", q.m, q.n, q.k, knobs[g],
                                      b.splitk);
                        }
                        if (b.splitk == 1) continue;
                        ++split;
                        CHECK(b.multicast == 0 && b.cluster == b.splitk && b.grid % b.splitk == 0 &&
                                  k_steps >= b.splitk,
                              "%dx%dx%d split %d: mc %d cluster %d grid %d, %d K steps", q.m, q.n,
                              q.k, b.splitk, b.multicast, b.cluster, b.grid, k_steps);
                        const int units = b.block_m / 64 / b.num_math_wgs * b.block_n / 8;
                        const int xbytes = (b.splitk - 1) * ((units + b.splitk - 1) / b.splitk) *
                                           b.num_math_wgs * 128 * 16;
                        CHECK(b.smem_bytes == qg__bf16_smem_bytes_sk(QG_BF16_DENSE, b.block_m,
                                                                     b.block_n, b.num_stages,
                                                                     q.d_f32, b.merge, b.splitk) &&
                                  b.smem_bytes <= q.smem_limit &&
                                  xbytes <= b.num_stages * b.merge * (b.block_m + b.block_n) * 128,
                              "%dx%dx%d split %d: smem %d, exchange %d", q.m, q.n, q.k, b.splitk,
                              b.smem_bytes, xbytes);
                    }
    CHECK(split > 100, "only %d split plans", split);
    /* out of range: not a problem */
    p.splitk = 3;
    CHECK(qg__bf16_select(&p, &on) == -1, "split 3 accepted");
    p.splitk = 16;
    CHECK(qg__bf16_select(&p, &on) == -1, "split 16 accepted");
    PASS();
}

/* The k-grouped organisations (QGEMM_BF16_KGROUPED; qg_bf16_problem.kgrouped):
 * kgrouped 0 (n, the default before 2026-11-29) plans and writes as before (no
 * QG_RASTER_M, no multicast, the walk's group of 16); every mode keeps its tile and stages;
 * m walks along M (QG_RASTER_M) with DeepGEMM's group size and no multicast;
 * mc shares B (multicast 2, a cluster of 2, an even grid) exactly where the
 * m-block count is even, else it is m; dg is mc at <= 4 groups and m above;
 * the legality rules refuse k-grouped multicast without the knob, A
 * multicast with it, and B multicast over an odd m-block count; +d2 (4)
 * halves the FP32 output tile where its halves are whole store chunks and
 * gives the bytes to the stages (128x192: 4 instead of 3), the tile unchanged;
 * other kinds ignore the knob. DeepGEMM's six k-grouped rows (4096x7168, 7168x2048 at 4,
 * 8, 16 groups) all take 128x192 and, under mc, B multicast. */
TEST(bf16_plan_kgrouped_modes) {
    static const int mn[][2] = {{4096, 7168}, {7168, 2048}, {200, 264}, {264, 200},
                                {4000, 4104}, {384, 512}, {1, 8}, {4096, 512}};
    static const int gs[] = {1, 4, 5, 8, 16, 128};
    static char src[16384];
    int shared = 0, odd = 0, halved = 0, more = 0;
    for (size_t i = 0; i < sizeof mn / sizeof mn[0]; ++i)
        for (size_t g = 0; g < sizeof gs / sizeof gs[0]; ++g)
            for (int with_c = 0; with_c < 2; ++with_c) {
                qg_bf16_problem p = problem(mn[i][0], mn[i][1], 8192 / gs[g] + 64, QG_BF16_TT,
                                            QG_BF16_K_GROUPED);
                p.num_groups = gs[g];
                p.d_f32 = 1;
                p.with_c = with_c;
                qg_bf16_plan base, pl;
                CHECK(qg__bf16_select(&p, &base) == 0, "no default plan %dx%d", p.m, p.n);
                CHECK(base.raster_m == 0 && base.multicast == 0 && base.swizzle_group == 16,
                      "default: raster %d multicast %d group %d", base.raster_m, base.multicast,
                      base.swizzle_group);
                CHECK(qg__bf16_kernel_source(src, sizeof src, &p, &base) > 0 &&
                          !strstr(src, "QG_RASTER_M"),
                      "the default source names QG_RASTER_M");
                CHECK(!qg__bf16_legal(&p, base.block_m, base.block_n, 2, NULL) &&
                          !qg__bf16_legal(&p, base.block_m, base.block_n, 1, NULL),
                      "k-grouped multicast legal without the knob");
                const int m_blocks = (p.m + base.block_m - 1) / base.block_m;
                for (int mode = 1; mode <= 7; ++mode) {
                    const int walk = mode & 3, d2 = mode >> 2;
                    p.kgrouped = mode;
                    CHECK(qg__bf16_select(&p, &pl) == 0, "no plan, mode %d", mode);
                    CHECK(pl.block_m == base.block_m && pl.block_n == base.block_n,
                          "mode %d changed the tile: %dx%d against %dx%d", mode, pl.block_m,
                          pl.block_n, base.block_m, base.block_n);
                    /* d2: the output tile halved where the halves are whole store
                     * chunks, its bytes to the stages; else the default's stages */
                    const int d_half = d2 && (pl.block_n / 2) % pl.store_cols == 0;
                    const int saved = d_half ? (pl.block_m * pl.block_n * 4 + 1023) / 1024 * 1024 -
                                                   (pl.block_m * pl.block_n * 2 + 1023) / 1024 * 1024
                                             : 0;
                    CHECK(pl.d_half == d_half && base.d_half == 0, "mode %d: d_half %d", mode,
                          pl.d_half);
                    CHECK(pl.smem_bytes == qg__bf16_smem_bytes(pl.block_m, pl.block_n,
                                                               pl.num_stages, 1) - saved &&
                              pl.smem_bytes <= p.smem_limit,
                          "mode %d: smem %d", mode, pl.smem_bytes);
                    CHECK(d_half ? pl.num_stages >= base.num_stages &&
                                       (qg__bf16_smem_bytes(pl.block_m, pl.block_n,
                                                            pl.num_stages + 1, 1) - saved > p.smem_limit
                                        || pl.num_stages == 16)
                                 : pl.num_stages == base.num_stages,
                          "mode %d: %d stages, default %d", mode, pl.num_stages, base.num_stages);
                    halved += d_half;
                    more += pl.num_stages > base.num_stages;
                    CHECK(pl.raster_m == (walk != 0), "mode %d: raster %d", mode, pl.raster_m);
                    if (!walk) {
                        CHECK(pl.multicast == 0 && pl.swizzle_group == 16, "d2 alone: mc %d group %d",
                              pl.multicast, pl.swizzle_group);
                        continue;
                    }
                    const int grid = p.num_sms / pl.cluster * pl.cluster;
                    const long long u8 = 8ll * pl.block_m + (grid + 7) / 8 * pl.block_n;
                    const long long u16 = 16ll * pl.block_m + (grid + 15) / 16 * pl.block_n;
                    CHECK(pl.swizzle_group == (u16 < u8 ? 16 : 8), "group %d", pl.swizzle_group);
                    const int want_mc = (walk == 2 || (walk == 3 && gs[g] <= 4)) && m_blocks % 2 == 0;
                    CHECK(pl.multicast == (want_mc ? 2 : 0), "%dx%d G %d mode %d: multicast %d",
                          p.m, p.n, gs[g], mode, pl.multicast);
                    CHECK(pl.cluster == (want_mc ? 2 : 1) && pl.grid % pl.cluster == 0 &&
                              pl.grid <= p.num_sms,
                          "cluster %d grid %d", pl.cluster, pl.grid);
                    CHECK(!qg__bf16_legal(&p, pl.block_m, pl.block_n, 1, NULL), "A multicast legal");
                    if (walk >= 2)
                        CHECK(qg__bf16_legal(&p, pl.block_m, pl.block_n, 2, NULL) == (m_blocks % 2 == 0),
                              "B multicast legality at %d m-blocks", m_blocks);
                    CHECK(qg__bf16_kernel_source(src, sizeof src, &p, &pl) > 0 &&
                              strstr(src, "#define QG_RASTER_M 1\n"),
                          "mode %d source: %s", mode, src);
                    shared += pl.multicast == 2;
                    odd += walk == 2 && m_blocks % 2;
                    if (mn[i][0] >= 4096 && mn[i][1] >= 2048 && gs[g] >= 4 && gs[g] <= 16 &&
                        mn[i][1] != 512)
                        CHECK(pl.block_m == 128 && pl.block_n == 192 &&
                                  pl.multicast == (walk == 2 || (walk == 3 && gs[g] <= 4) ? 2 : 0) &&
                                  pl.num_stages == (d2 ? 4 : 3),
                              "DeepGEMM's row %dx%d G %d mode %d: %dx%d mc %d", p.m, p.n, gs[g],
                              mode, pl.block_m, pl.block_n, pl.multicast);
                }
            }
    CHECK(shared > 50 && odd > 4, "B multicast in %d plans, %d odd-count fallbacks", shared, odd);
    CHECK(halved > 100 && more > 50, "d2: %d halved output tiles, %d with more stages", halved, more);
    /* other kinds ignore the knob */
    qg_bf16_problem d = problem(4096, 7168, 7168, QG_BF16_NT, QG_BF16_DENSE);
    qg_bf16_plan a, b;
    CHECK(qg__bf16_select(&d, &a) == 0, "dense");
    d.kgrouped = 2;
    CHECK(qg__bf16_select(&d, &b) == 0 && b.raster_m == 0 && b.block_m == a.block_m &&
              b.block_n == a.block_n && b.multicast == a.multicast,
          "dense under the k-grouped knob");
    d.kgrouped = 6;
    CHECK(qg__bf16_select(&d, &b) == 0 && b.d_half == 0 && b.raster_m == 0 &&
              b.num_stages == a.num_stages,
          "dense under the k-grouped knob's d2");
    d.kgrouped = 8;
    CHECK(qg__bf16_select(&d, &b) == -1, "kgrouped 8 accepted");
    PASS();
}
