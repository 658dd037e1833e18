/*
 * bf16_compile_gen.c -- writes the JIT source of every BF16 GEMM variant the
 * planner picks (src/bf16_plan.c) over DeepSeek-V3 shapes, for
 * tools/bf16_compile_check.sh to compile offline (no GPU, no library).
 *
 *   bf16_compile_gen OUTDIR [num_sms] [smem_limit]
 *
 * Variants: 4 layouts x bf16 / FP32 D x without / with C x dense,
 * contiguous, masked, psum, k-grouped (where legal: MN-major A and C only
 * dense and k-grouped; k-grouped FP32 D, TN... see below) x M in {1, 64, 128,
 * 4096} x (N, K) in the six DeepSeek shapes; plus every legal multicast of the
 * chosen tile. Identical sources are written once (the file name is a hash
 * of the text); OUTDIR/list.txt names each file and its variant.
 */
#include "../../src/bf16_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long fnv(const char *s) {
    unsigned long long h = 1469598103934665603ull;
    for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

#define MAX_SEEN 8192
static unsigned long long seen[MAX_SEEN];
static int num_seen;

static int emit(const char *dir, FILE *list, const qg_bf16_problem *p, const qg_bf16_plan *pl) {
    static char src[16384];
    if (qg__bf16_kernel_source(src, sizeof src, p, pl) < 0) {
        fprintf(stderr, "source does not fit\n");
        return -1;
    }
    const unsigned long long h = fnv(src);
    for (int i = 0; i < num_seen; ++i)
        if (seen[i] == h) return 0;
    if (num_seen == MAX_SEEN) return -1;
    seen[num_seen++] = h;
    char path[1024];
    snprintf(path, sizeof path, "%s/v%016llx.cu", dir, h);
    FILE *f = fopen(path, "w");
    if (!f || fputs(src, f) < 0 || fclose(f)) {
        perror(path);
        return -1;
    }
    fprintf(list, "v%016llx.cu layout %d kind %d m %d n %d k %d d_f32 %d with_c %d block %dx%d "
                  "stages %d multicast %d smem %d radix %d merge %d splitk %d\n",
            h, (int)p->layout, (int)p->kind, p->m, p->n, p->k, p->d_f32, p->with_c, pl->block_m,
            pl->block_n, pl->num_stages, pl->multicast, pl->smem_bytes, p->sum_radix,
            pl->merge, pl->splitk);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [num_sms] [smem_limit]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    const int num_sms = argc > 2 ? atoi(argv[2]) : 132;
    const int smem = argc > 3 ? atoi(argv[3]) : 232448;
    char lpath[1024];
    snprintf(lpath, sizeof lpath, "%s/list.txt", dir);
    FILE *list = fopen(lpath, "w");
    if (!list) {
        perror(lpath);
        return 1;
    }
    static const int ms[] = {1, 64, 128, 4096};
    static const int nk[][2] = {{2112, 7168}, {24576, 1536}, {32768, 512},
                                {7168, 16384}, {4096, 7168}, {7168, 2048}};
    int planned = 0, failed = 0;
    /* QG_GEN_MERGED_ONLY=1: only the merged variants (below; a quick check);
     * QG_GEN_SPLITK_ONLY=1: only the split-K variants */
    const char *only = getenv("QG_GEN_MERGED_ONLY");
    const char *sk_only_env = getenv("QG_GEN_SPLITK_ONLY");
    const int splitk_only = sk_only_env && sk_only_env[0] == '1';
    /* QG_GEN_KGROUPED_ONLY=1: only the k-grouped organisations (QGEMM_BF16_KGROUPED) */
    const char *kg_only_env = getenv("QG_GEN_KGROUPED_ONLY");
    const int kgrouped_only = kg_only_env && kg_only_env[0] == '1';
    if (kgrouped_only) only = "1"; /* (every other section off: below, then return) */
    const int only_merged = only && only[0] == '1';
    /* QG_GEN_BMK_ONLY=1: only the atomic batch sums with the L2 prefetch (QGEMM_BMK_VARIANT=v5,
     * v6; below) */
    const char *bmk_only_env = getenv("QG_GEN_BMK_ONLY");
    const int bmk_only = bmk_only_env && bmk_only_env[0] == '1';
    if (bmk_only) {
        /* at the splits einsum picks (bmk_splits at B = 129, bmk_splits_dg at 4096), bf16 D
         * (v6's one launch) and FP32 D (v5's W, an FP32 D's call), with and without the
         * default's 4-stage cap (:s4) */
        static const int bk[][5] = {{129, 128, 384, 128, 15}, {129, 256, 256, 256, 26},
                                    {129, 384, 128, 384, 43}, {4096, 128, 384, 128, 44},
                                    {4096, 256, 256, 256, 33}, {4096, 384, 128, 384, 44},
                                    {129, 200, 136, 64, 8}};
        for (size_t i = 0; i < sizeof bk / sizeof bk[0]; ++i)
            for (int d_f32 = 0; d_f32 < 2; ++d_f32)
                for (int cap = 0; cap <= 4; cap += 4) {
                    qg_bf16_problem p = {0};
                    p.m = bk[i][1], p.n = bk[i][2], p.k = bk[i][3];
                    p.layout = QG_BF16_NT;
                    p.kind = QG_BF16_BATCH_SUM;
                    p.sum_batches = bk[i][0];
                    const int per = (bk[i][0] + bk[i][4] - 1) / bk[i][4];
                    p.num_groups = (bk[i][0] + per - 1) / per;
                    p.d_f32 = d_f32;
                    p.sum_atomic = 1;
                    p.sum_variant = 3;
                    p.sum_max_stages = cap;
                    p.num_sms = num_sms;
                    p.smem_limit = smem;
                    qg_bf16_plan pl;
                    ++planned;
                    if (qg__bf16_select(&p, &pl)) {
                        fprintf(stderr, "no plan: bmk s %d m %d n %d k %d\n", p.sum_batches, p.m,
                                p.n, p.k);
                        ++failed;
                        continue;
                    }
                    if (emit(dir, list, &p, &pl)) return 1;
                }
        fclose(list);
        printf("%d problems planned, %d without a plan, %d distinct kernels\n", planned, failed,
               num_seen);
        return failed ? 1 : 0;
    }
    const int merged_only = only_merged || splitk_only;
    for (int layout = 0; layout < 4 && !merged_only; ++layout)
        for (int kind = 0; kind <= 4; ++kind)
            for (int d_f32 = 0; d_f32 < 2; ++d_f32)
                for (int with_c = 0; with_c < 2; ++with_c)
                    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; ++mi)
                        for (size_t si = 0; si < sizeof nk / sizeof nk[0]; ++si) {
                            const int a_mn = qg__bf16_a_mn_major((qg_bf16_layout)layout);
                            if (a_mn && kind != 0 && kind != 4) continue;
                            if (with_c && kind != 0 && kind != 4) continue;
                            /* DeepGEMM's k-grouped BF16 is TT (both MN-major) with FP32 D */
                            if (kind == 4 && (layout != QG_BF16_TT || !d_f32)) continue;
                            qg_bf16_problem p = {0};
                            p.m = ms[mi];
                            p.n = nk[si][0];
                            p.k = nk[si][1];
                            p.layout = (qg_bf16_layout)layout;
                            p.kind = (qg_bf16_kind)kind;
                            p.num_groups = kind == 0 ? 1 : 8;
                            p.d_f32 = d_f32;
                            p.with_c = with_c;
                            p.num_sms = num_sms;
                            p.smem_limit = smem;
                            if (kind == 1 || kind == 3) p.m = ms[mi] < 128 ? 1024 : ms[mi] * 8;
                            if (kind == 2) p.expected_m = ms[mi] < 128 ? ms[mi] : 256, p.m = 512;
                            if (kind == 4) { /* weight gradient: M x N per expert, K = tokens */
                                p.m = nk[si][0];
                                p.n = nk[si][1] % 8 ? 2048 : nk[si][1];
                                p.k = ms[mi] < 128 ? 256 : ms[mi];
                            }
                            qg_bf16_plan pl;
                            ++planned;
                            if (qg__bf16_select(&p, &pl)) {
                                fprintf(stderr, "no plan: layout %d kind %d m %d n %d k %d\n", layout,
                                        kind, p.m, p.n, p.k);
                                ++failed;
                                continue;
                            }
                            if (emit(dir, list, &p, &pl)) return 1;
                            /* the chosen tile in every other legal multicast mode */
                            for (int mc = 0; mc <= 2; ++mc) {
                                qg_bf16_plan alt;
                                if (mc == pl.multicast ||
                                    qg__bf16_complete(&p, pl.block_m, pl.block_n, mc, &alt))
                                    continue;
                                if (emit(dir, list, &p, &alt)) return 1;
                            }
                        }
    /* the reduced batch sum (QG_BF16_BATCH_SUM): DeepGEMM's einsum 'bmk,bnk->mn' shapes and
     * one off the tiles, at split counts the heuristic and the sweep may use, bf16 D, FP32
     * D, FP32 D + C; the trees of radix 4 and 8 (QGEMM_BMK_RADIX) at the larger split counts
     * (bench/bmk_variants.py's candidates) */
    static const int sum_s[] = {129, 4096, 8192};
    static const int sum_mnk[][3] = {{128, 384, 128}, {256, 256, 256}, {384, 128, 384},
                                     {200, 136, 64}};
    /* (15, 26, 43, 88: the heuristic's at DeepGEMM's shapes; 33, 43, 44: the "dg" rule's) */
    static const int sum_splits[] = {1, 3, 8, 15, 16, 26, 33, 43, 44, 66, 88, 132};
    for (int radix = 2; radix <= 8 && !merged_only; radix *= 2)
    for (size_t si = 0; si < sizeof sum_s / sizeof sum_s[0]; ++si)
        for (size_t mi = 0; mi < sizeof sum_mnk / sizeof sum_mnk[0]; ++mi)
            for (size_t pi = 0; pi < sizeof sum_splits / sizeof sum_splits[0]; ++pi)
                for (int mode = 0; mode < 3; ++mode) {
                    if (radix != 2 && sum_splits[pi] < 15) continue;
                    qg_bf16_problem p = {0};
                    p.sum_radix = radix;
                    p.m = sum_mnk[mi][0], p.n = sum_mnk[mi][1], p.k = sum_mnk[mi][2];
                    p.layout = QG_BF16_NT;
                    p.kind = QG_BF16_BATCH_SUM;
                    p.sum_batches = sum_s[si];
                    int splits = sum_splits[pi] < sum_s[si] ? sum_splits[pi] : sum_s[si];
                    const int per = (sum_s[si] + splits - 1) / splits;
                    p.num_groups = (sum_s[si] + per - 1) / per; /* no empty split */
                    p.d_f32 = mode > 0;
                    p.with_c = mode == 2;
                    p.num_sms = num_sms;
                    p.smem_limit = smem;
                    qg_bf16_plan pl;
                    ++planned;
                    if (qg__bf16_select(&p, &pl)) {
                        fprintf(stderr, "no plan: batch sum s %d m %d n %d k %d splits %d\n",
                                p.sum_batches, p.m, p.n, p.k, p.num_groups);
                        ++failed;
                        continue;
                    }
                    if (emit(dir, list, &p, &pl)) return 1;
                }
    /* merged K stages (QGEMM_BF16_MERGE, dense NT): auto at DeepGEMM's test_bf16 NT shapes
     * and the DeepSeek shapes above, and forced 2..6 at K with every kind of tail (K a
     * multiple of 64 x merge, a partial last stage, a partial last 64-K block), bf16 / FP32
     * D, with and without C, each tile in its legal multicast modes */
    static const int mg_m[] = {1, 64, 128, 256, 4096};
    static const int mg_nk[][2] = {{2112, 7168}, {576, 7168}, {7168, 2048}, {4096, 7168},
                                   {2048, 7168}, {7168, 16384}, {24576, 1536}, {256, 200},
                                   {136, 1000}, {512, 448}};
    static const int mg_merge[] = {-1, 2, 3, 4, 6};
    /* the k-grouped organisations (QGEMM_BF16_KGROUPED m, mc, dg, each with and without
     * +d2, and d2 alone: modes 1..7): DeepGEMM's six
     * k-grouped rows (the largest group's K ~1.25 x the mean) and shapes off the tiles
     * (an odd m-block count: mc falls back to the walk alone), FP32 D with and without C */
    static const int kg_mn[][2] = {{4096, 7168}, {7168, 2048}, {200, 264}, {264, 200},
                                   {4000, 4104}, {384, 512}};
    static const int kg_g[] = {4, 8, 16};
    for (int mode = 1; mode <= 7 && (kgrouped_only || !merged_only); ++mode)
        for (int with_c = 0; with_c < 2; ++with_c)
            for (size_t si = 0; si < sizeof kg_mn / sizeof kg_mn[0]; ++si)
                for (size_t gi = 0; gi < sizeof kg_g / sizeof kg_g[0]; ++gi) {
                    qg_bf16_problem p = {0};
                    p.m = kg_mn[si][0], p.n = kg_mn[si][1];
                    p.k = kg_g[gi] == 4 ? 10240 : kg_g[gi] == 8 ? 5120 : 2560;
                    p.layout = QG_BF16_TT;
                    p.kind = QG_BF16_K_GROUPED;
                    p.num_groups = kg_g[gi];
                    p.d_f32 = 1;
                    p.with_c = with_c;
                    p.kgrouped = mode;
                    p.num_sms = num_sms;
                    p.smem_limit = smem;
                    qg_bf16_plan pl;
                    ++planned;
                    if (qg__bf16_select(&p, &pl)) {
                        fprintf(stderr, "no plan: k-grouped mode %d m %d n %d\n", mode, p.m, p.n);
                        ++failed;
                        continue;
                    }
                    if (emit(dir, list, &p, &pl)) return 1;
                }
    if (kgrouped_only) {
        fclose(list);
        printf("%d problems planned, %d without a plan, %d distinct kernels\n", planned, failed,
               num_seen);
        return failed ? 1 : 0;
    }
    for (size_t gi = 0; gi < sizeof mg_merge / sizeof mg_merge[0] && !splitk_only; ++gi)
        for (int d_f32 = 0; d_f32 < 2; ++d_f32)
            for (int with_c = 0; with_c < 2; ++with_c)
                for (size_t mi = 0; mi < sizeof mg_m / sizeof mg_m[0]; ++mi)
                    for (size_t si = 0; si < sizeof mg_nk / sizeof mg_nk[0]; ++si) {
                        qg_bf16_problem p = {0};
                        p.m = mg_m[mi], p.n = mg_nk[si][0], p.k = mg_nk[si][1];
                        p.layout = QG_BF16_NT;
                        p.kind = QG_BF16_DENSE;
                        p.num_groups = 1;
                        p.d_f32 = d_f32;
                        p.with_c = with_c;
                        p.merge = mg_merge[gi];
                        p.num_sms = num_sms;
                        p.smem_limit = smem;
                        qg_bf16_plan pl;
                        ++planned;
                        if (qg__bf16_select(&p, &pl)) {
                            fprintf(stderr, "no plan: merged m %d n %d k %d\n", p.m, p.n, p.k);
                            ++failed;
                            continue;
                        }
                        for (int mc = -1; mc <= 2; ++mc) {
                            qg_bf16_plan alt = pl;
                            if (mc >= 0 && (mc == pl.multicast ||
                                            qg__bf16_complete(&p, pl.block_m, pl.block_n, mc, &alt)))
                                continue;
                            if (alt.merge > 1 && emit(dir, list, &p, &alt)) return 1;
                        }
                    }
    /* split-K (QGEMM_BF16_SPLITK, dense): auto at the decode rows it is for,
     * forced 2 / 4 / 8 at K with every kind of tail (K a multiple of S x 64,
     * not, a partial last 64-K block), merged (auto) and unmerged stages,
     * bf16 / FP32 D, with and without C, NT and NN (the split is layout-blind) */
    static const int sk_m[] = {1, 128};
    static const int sk_nk[][2] = {{576, 7168}, {2112, 7168}, {1536, 7168}, {264, 1000},
                                   {4096, 448}, {136, 200}};
    static const int sk_split[] = {-1, 2, 4, 8};
    for (size_t gi = 0; gi < sizeof sk_split / sizeof sk_split[0] && !only_merged; ++gi)
        for (int layout = 0; layout < 2; ++layout)
            for (int merge = 0; merge < 2; ++merge)
                for (int d_f32 = 0; d_f32 < 2; ++d_f32)
                    for (int with_c = 0; with_c < 2; ++with_c)
                        for (size_t mi = 0; mi < sizeof sk_m / sizeof sk_m[0]; ++mi)
                            for (size_t si = 0; si < sizeof sk_nk / sizeof sk_nk[0]; ++si) {
                                qg_bf16_problem p = {0};
                                p.m = sk_m[mi], p.n = sk_nk[si][0], p.k = sk_nk[si][1];
                                p.layout = (qg_bf16_layout)layout;
                                p.kind = QG_BF16_DENSE;
                                p.num_groups = 1;
                                p.d_f32 = d_f32;
                                p.with_c = with_c;
                                p.merge = merge ? -1 : 0;
                                p.splitk = sk_split[gi];
                                p.num_sms = num_sms;
                                p.smem_limit = smem;
                                qg_bf16_plan pl;
                                ++planned;
                                if (qg__bf16_select(&p, &pl)) {
                                    fprintf(stderr, "no plan: split m %d n %d k %d\n", p.m, p.n,
                                            p.k);
                                    ++failed;
                                    continue;
                                }
                                if (pl.splitk > 1 && emit(dir, list, &p, &pl)) return 1;
                            }
    /* the batch sum's conversion pass (QGEMM_BMK_VARIANT=v4; qg__bf16_convert_source, the
     * text src/bf16_gemm.c compiles): one kernel for every shape, in the full sweep */
    if (!merged_only && !splitk_only) {
        char path[1024];
        snprintf(path, sizeof path, "%s/vbmkconvert.cu", dir);
        FILE *f = fopen(path, "w");
        if (!f || fputs(qg__bf16_convert_source(), f) < 0 ||
            fclose(f)) {
            perror(path);
            return 1;
        }
        fprintf(list, "vbmkconvert.cu layout 0 kind 7 m 0 n 0 k 0 d_f32 0 with_c 0 block 0x0 "
                      "stages 0 multicast 0 smem 0 radix 0 merge 0 splitk 0\n");
        ++num_seen;
    }
    fclose(list);
    printf("%d problems planned, %d without a plan, %d distinct kernels\n", planned, failed, num_seen);
    return failed ? 1 : 0;
}
