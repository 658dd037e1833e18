/*
 * test_cast.c -- the cast family (src/cast.c over src/cast_plan.c and
 * kernels/qg_cast.cuh): argument validation of every entry point on an
 * offline context, the planner on the CPU (grids from the SM count as data,
 * access widths, refusals), every kernel variant compiled through the
 * library (no spill, no stack frame, no compiler warning), and on a GPU the
 * outputs bit for bit against a host implementation of the torch formulas
 * (docs/CAST.md) on fresh random inputs with special values, shapes off
 * 128, outputs poisoned first (what the call must not write stays poisoned).
 *
 * silu_mul: the host's expf is not the GPU's, so its rows are compared with
 * a tolerance (scales within 4 ulp, bytes within one e4m3 step); the other
 * kernels are bitwise.
 */
#include "cast_plan.h"
#include "internal.h"
#include "gpu_ctx.h"
#include "qg_test.h"
#include "qgtk.h"
#include "qgtk_cases.h"
#include "seam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE(x) ((void *)(uintptr_t)(x))

static qg_context *offline(void) {
    qg_context *ctx = NULL;
    return qg_context_create_offline(&ctx, NULL) == QG_SUCCESS ? ctx : NULL;
}

static qg_cast_args good_cast(void) {
    qg_cast_args a;
    memset(&a, 0, sizeof a);
    a.m = 256, a.k = 512, a.num_groups = 1;
    a.x = FAKE(0x1000000), a.ld_x = 1024;
    a.out = FAKE(0x3000000), a.ld_out = 512;
    a.sf = FAKE(0x5000000);
    a.sf_ld = 256;
    return a;
}

static qg_sf_layout_args good_layout(int kgrouped) {
    qg_sf_layout_args a;
    memset(&a, 0, sizeof a);
    a.mn = 100, a.sf_k = 7, a.num_groups = 2;
    a.sf = FAKE(0x1000000);
    a.sf_stride[0] = 700, a.sf_stride[1] = 7, a.sf_stride[2] = 1;
    a.out = FAKE(0x3000000), a.out_ld = 100;
    if (kgrouped) {
        a.sf_stride[0] = a.sf_stride[1] = a.sf_stride[2] = 0;
        a.out_ld = 0;
        a.ks = FAKE(0x5000000);
        a.gran_k = 128, a.k_alignment = 128, a.packed_sf_k = 4;
    }
    return a;
}

typedef qg_status (*cast_fn)(qg_context *, const qg_cast_args *, struct CUstream_st *);
typedef qg_status (*layout_fn)(qg_context *, const qg_sf_layout_args *, struct CUstream_st *);

TEST(cast_validation) {
    qg_context *ctx = offline();
    CHECK(ctx, "offline context: %s", qg_last_error());
    static const cast_fn fns[4] = {qg_per_token_cast, qg_per_block_cast, qg_per_channel_cast,
                                   qg_silu_mul_cast};
    static const char *const fn_names[4] = {"qg_per_token_cast", "qg_per_block_cast",
                                            "qg_per_channel_cast", "qg_silu_mul_cast"};
    for (int f = 0; f < 4; ++f) {
        qg_cast_args a = good_cast();
        qg_status st = fns[f](ctx, &a, NULL);
        CHECK(st == QG_ERROR_NO_DEVICE && strstr(qg_last_error(), fn_names[f]),
              "%s good args offline: %s (%s)", fn_names[f], qg_status_string(st), qg_last_error());
        CHECK(fns[f](NULL, &a, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "ctx is NULL"), "%s NULL ctx: %s", fn_names[f], qg_last_error());
        CHECK(fns[f](ctx, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "args is NULL"), "%s NULL args: %s", fn_names[f], qg_last_error());
        a.m = 0; /* a no-op, but offline still says so */
        st = fns[f](ctx, &a, NULL);
        CHECK(st == QG_ERROR_NO_DEVICE, "%s m = 0 offline: %s", fn_names[f], qg_status_string(st));
        /* QGEMM_CAST_VARIANT: '+'-lists of base, all, lean accepted (offline: the device
         * refusal), optionally with the extension's host word checked, and the kernel words
         * ring and lut; another value refused by name before the device is asked */
        static const char *const variants[] = {
            "base", "all", "lean", "all+lean", "lean+all", "", "checked",
            "base+checked", "all+lean+checked", "checked+lean",
            "ring", "lut", "all+lean+ring+lut", "lut+ring", "all+lean+ring+checked",
            /* refused from here */
            "al", "ALL", "persistent", "all,lean", "lean+x", "lean+", "+", "base+lean",
            "all++lean", "checked+", "check", "base+all+checked", "checked,lean", "twoalloc",
            "rings", "base+ring", "lut+"};
        const int n_variants = (int)(sizeof variants / sizeof variants[0]);
        for (int g = 0; g < n_variants; ++g) {
            a = good_cast();
            setenv("QGEMM_CAST_VARIANT", variants[g], 1);
            st = fns[f](ctx, &a, NULL);
            unsetenv("QGEMM_CAST_VARIANT"); /* (before a CHECK can leave the test) */
            const bool good = g < 15;
            CHECK(good ? st == QG_ERROR_NO_DEVICE
                       : st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "QGEMM_CAST_VARIANT") &&
                             strstr(qg_last_error(), variants[g]) && strstr(qg_last_error(), fn_names[f]),
                  "%s QGEMM_CAST_VARIANT=%s: %s (%s)", fn_names[f], variants[g], qg_status_string(st),
                  qg_last_error());
        }
    }
#define CASE(fn, edit_stmt, want_text, want_status)                                                 \
    do {                                                                                            \
        qg_cast_args x = good_cast();                                                               \
        edit_stmt;                                                                                  \
        qg_status s = fn(ctx, &x, NULL);                                                            \
        CHECK(s == (want_status) && strstr(qg_last_error(), want_text), "%s: %s: %s (%s)", #fn,     \
              #edit_stmt, qg_status_string(s), qg_last_error());                                    \
    } while (0)
    CASE(qg_per_token_cast, x.m = -1, "args->m must be >= 0", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.k = -5, "args->k must be >= 0", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.num_groups = -1, "args->num_groups", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.x_fp32 = 2, "args->x_fp32 must be 0 or 1", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.ue8m0 = -1, "args->ue8m0 must be 0 or 1", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.sf_mn_major = 3, "args->sf_mn_major must be 0 or 1",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.ld_x = 100, "args->ld_x must be in [k = 512", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.ld_out = 511, "args->ld_out must be in [k = 512",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, (x.sf_mn_major = 1, x.sf_ld = 255), "args->sf_ld must be >= m = 256",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, (x.sf_mn_major = 1, x.m = 5, x.sf_ld = 5), "rounded up to 4 (8)",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.x = NULL, "x", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.out = NULL, "out", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.sf = NULL, "sf", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.x = FAKE(0x1000001), "x", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.sf = FAKE(0x5000002), "sf", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.masked_m = FAKE(0x7000000), "args->masked_m must be NULL",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.m_indices = FAKE(0x7000000), "args->m_indices must be NULL",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.m = (1 << 30) + 1, "at most 2^30", QG_ERROR_UNSUPPORTED);
    /* outputs over an input or each other */
    CASE(qg_per_token_cast, x.out = FAKE(0x1000000 + 1024), "overlap", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_token_cast, x.sf = (float *)FAKE(0x3000000 + 4096), "overlap",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_per_block_cast, x.sf_mn_major = 1, "args->sf_mn_major must be 0", QG_ERROR_UNSUPPORTED);
    CASE(qg_per_channel_cast, x.m = 200, "args->m must be a multiple of 128", QG_ERROR_UNSUPPORTED);
    CASE(qg_per_channel_cast, x.num_groups = 2, "args->num_groups must be 1", QG_ERROR_UNSUPPORTED);
    CASE(qg_silu_mul_cast, x.ld_x = 1000, "args->ld_x must be in [2k = 1024",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_silu_mul_cast, (x.masked_m = FAKE(0x7000000), x.m_indices = FAKE(0x7100000)), "not both",
         QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_silu_mul_cast, x.masked_m = FAKE(0x7000002), "masked_m", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_silu_mul_cast, x.m_indices = FAKE(0x3000000 + 64), "overlap", QG_ERROR_INVALID_ARGUMENT);
    CASE(qg_silu_mul_cast, x.masked_m = FAKE(0x7000000), "offline", QG_ERROR_NO_DEVICE);
#undef CASE

    static const layout_fn lfns[3] = {qg_sf_transpose_mn_major, qg_sf_pack_ue8m0,
                                      qg_sf_pack_ue8m0_k_grouped};
    for (int f = 0; f < 3; ++f) {
        qg_sf_layout_args a = good_layout(f == 2);
        qg_status st = lfns[f](ctx, &a, NULL);
        CHECK(st == QG_ERROR_NO_DEVICE, "layout %d good args offline: %s (%s)", f,
              qg_status_string(st), qg_last_error());
        CHECK(lfns[f](ctx, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT, "layout %d NULL args", f);
    }
#define LCASE(fn, kg, edit_stmt, want_text, want_status)                                            \
    do {                                                                                            \
        qg_sf_layout_args x = good_layout(kg);                                                      \
        edit_stmt;                                                                                  \
        qg_status s = fn(ctx, &x, NULL);                                                            \
        CHECK(s == (want_status) && strstr(qg_last_error(), want_text), "%s: %s: %s (%s)", #fn,     \
              #edit_stmt, qg_status_string(s), qg_last_error());                                    \
    } while (0)
    LCASE(qg_sf_transpose_mn_major, 0, x.mn = -1, "args->mn must be >= 0", QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_transpose_mn_major, 0, x.out_ld = 99, "args->out_ld must be in [mn = 100",
          QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_transpose_mn_major, 0, x.sf_stride[1] = -7, "args->sf_stride[1]",
          QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_transpose_mn_major, 0, x.ks = FAKE(0x5000000), "k-grouped layout's",
          QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_transpose_mn_major, 0, x.sf = FAKE(0x1000002), "sf", QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_transpose_mn_major, 0, x.out = NULL, "out", QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_pack_ue8m0, 0, x.out = FAKE(0x1000000 + 400), "overlap", QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_pack_ue8m0_k_grouped, 1, x.num_groups = 129, "args->num_groups must be in [1, 128]",
          QG_ERROR_UNSUPPORTED);
    LCASE(qg_sf_pack_ue8m0_k_grouped, 1, x.mn = 102, "args->mn must be a multiple of 4",
          QG_ERROR_UNSUPPORTED);
    LCASE(qg_sf_pack_ue8m0_k_grouped, 1, x.gran_k = 64, "args->gran_k must be 32 or 128",
          QG_ERROR_UNSUPPORTED);
    LCASE(qg_sf_pack_ue8m0_k_grouped, 1, x.k_alignment = 48, "args->k_alignment",
          QG_ERROR_UNSUPPORTED);
    LCASE(qg_sf_pack_ue8m0_k_grouped, 1, x.psum = 2, "args->psum must be 0 or 1",
          QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_pack_ue8m0_k_grouped, 1, x.ks = NULL, "ks", QG_ERROR_INVALID_ARGUMENT);
    LCASE(qg_sf_pack_ue8m0_k_grouped, 1, x.out = FAKE(0x3000008), "out", QG_ERROR_INVALID_ARGUMENT);
#undef LCASE
    /* qg_cast_compile's own checks */
    qg_cast_args ca = good_cast();
    CHECK(qg_cast_compile(ctx, (qg_cast_kind)0, &ca, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
          strstr(qg_last_error(), "qg_cast_kind"), "kind 0: %s", qg_last_error());
    CHECK(qg_cast_compile(ctx, QG_CAST_KIND_PER_TOKEN, NULL, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT,
          "NULL cast args: %s", qg_last_error());
    CHECK(qg_cast_compile(ctx, QG_CAST_KIND_SF_PACK_UE8M0, &ca, NULL, NULL) ==
          QG_ERROR_INVALID_ARGUMENT, "NULL layout args: %s", qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* The planner on the CPU: the grid follows the SM count given, never more
 * CTAs than stay resident, zero for nothing to do; the access width follows
 * the alignment; refusals. */
TEST(cast_plan) {
    qg_cast_problem p;
    memset(&p, 0, sizeof p);
    p.op = QG_CAST_PER_TOKEN, p.rows = 4096, p.m = 4096, p.groups = 1, p.k = 7168;
    p.ld_in = p.ld_out = 7168, p.in_align = p.out_align = 16;
    qg_cast_plan a, b;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qg__cast_plan(&p, 20, &b) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(a.grid <= 132u * 4 && b.grid <= 20u * 4 && b.grid < a.grid && a.vec == 8,
          "grids %u / %u vec %d", a.grid, b.grid, a.vec);
    p.rows = 1;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.grid >= 1 && a.unroll == 1, "one row: grid %u",
          a.grid);
    p.rows = 0;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.grid == 0, "no rows: grid %u", a.grid);
    p.rows = 100, p.ld_in = 7169;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.vec == 1, "odd ld: vec %d", a.vec);
    p.ld_in = 7168, p.in_align = 4;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.vec == 2, "4-byte x: vec %d", a.vec);
    CHECK(qg__cast_plan(&p, 0, &a) == QG_ERROR_INVALID_ARGUMENT, "0 SMs");
    p.in_align = 1;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_ERROR_INVALID_ARGUMENT, "misaligned bf16");
    /* per-block: one CTA per block, capped by the SMs */
    memset(&p, 0, sizeof p);
    p.op = QG_CAST_PER_BLOCK, p.groups = 8, p.n = 4096, p.k = 7168, p.ld_in = p.ld_out = 7168;
    p.in_align = p.out_align = 16;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.grid == 132u * 3 && a.min_ctas == 3,
          "per-block grid %u min_ctas %d", a.grid, a.min_ctas);
    CHECK(qg__cast_plan(&p, 7, &a) == QG_SUCCESS && a.grid == 21, "per-block on 7 SMs: %u", a.grid);
    p.groups = 1, p.n = 100, p.k = 100;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.grid == 1, "one block: %u", a.grid);
    /* one_pass (QGEMM_CAST_VARIANT=all): a CTA per block, the SM count no cap; the same kernel */
    p.groups = 8, p.n = 4096, p.k = 7168, p.one_pass = 1;
    CHECK(qg__cast_plan(&p, 132, &b) == QG_SUCCESS && b.grid == 8u * 32 * 56 && b.min_ctas == 3 &&
              b.vec == 8, "per-block one pass: grid %u min_ctas %d", b.grid, b.min_ctas);
    /* per-channel needs rows % 128 */
    memset(&p, 0, sizeof p);
    p.op = QG_CAST_PER_CHANNEL, p.rows = 200, p.k = 64, p.ld_in = p.ld_out = 64;
    p.in_align = p.out_align = 16;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_ERROR_UNSUPPORTED, "per-channel rows 200");
    p.rows = 256;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.min_ctas == 2 && a.vec == 8, "per-channel");
    p.ld_in = 65; /* narrow bf16 accesses: one CTA per SM */
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.min_ctas == 1 && a.vec == 1, "narrow");
    /* 4096 x 7168: 32 x 28 tiles of 128 x 256, 264 resident; one_pass launches all 896 */
    p.rows = 4096, p.k = 7168, p.ld_in = p.ld_out = 7168;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.grid == 264, "per-channel grid %u", a.grid);
    p.one_pass = 1;
    CHECK(qg__cast_plan(&p, 132, &b) == QG_SUCCESS && b.grid == 896 && b.vec == a.vec &&
              b.min_ctas == a.min_ctas, "per-channel one pass: grid %u", b.grid);
    /* ring (QGEMM_CAST_VARIANT word ring): 16-byte rows only; tiles of 128 rows x 256
     * bytes (4096 x 7168 bf16: 32 x 56), persistent (2 CTAs a SM), 3 stages of 32 KB */
    p.one_pass = 0, p.ring = 1;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.ring == 3 && a.threads == 512 &&
              a.min_ctas == 2 && a.work == 32 * 56 && a.grid == 264 && a.smem == 3 * 32768 && !a.lut,
          "ring: ring %d threads %d min_ctas %d work %lld grid %u smem %d", a.ring, a.threads, a.min_ctas,
          (long long)a.work, a.grid, a.smem);
    p.in_f32 = 1; /* 64 float columns a tile; 1000 columns: 16 tiles a row block, the last partial */
    p.k = p.ld_in = p.ld_out = 1000, p.rows = 256;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.ring == 3 && a.work == 2 * 16 && a.grid == 32,
          "ring f32: ring %d work %lld grid %u", a.ring, (long long)a.work, a.grid);
    p.in_f32 = 0, p.k = p.ld_in = p.ld_out = 1001; /* narrower rows: the plain kernel */
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.ring == 0 && a.smem == 0 && a.threads == 256,
          "ring, odd k: ring %d smem %d", a.ring, a.smem);
    p.ring = 0;
    /* per-token 4096 x 7168: the grid-stride grid <= 4 a SM, one pass past it, same unroll */
    memset(&p, 0, sizeof p);
    p.op = QG_CAST_PER_TOKEN, p.rows = 4096, p.m = 4096, p.groups = 1, p.k = 7168;
    p.ld_in = p.ld_out = 7168, p.in_align = p.out_align = 16;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS, "%s", qg_last_error());
    p.one_pass = 1;
    CHECK(qg__cast_plan(&p, 132, &b) == QG_SUCCESS && b.grid > 132u * 4 && a.grid == 132u * 4 &&
              b.unroll == a.unroll && b.work == a.work, "per-token one pass: grid %u / %u unroll %d / %d",
          a.grid, b.grid, a.unroll, b.unroll);
    /* lut (word lut): silu_mul of bf16 with 2-byte or wider accesses and >= 4 rounds of
     * 96 items a CTA (768 threads, one CTA a SM, unroll 2); else the plain kernel */
    memset(&p, 0, sizeof p);
    p.op = QG_CAST_SILU_MUL, p.rows = 4096, p.m = 4096, p.groups = 1, p.k = 3584, p.ld_in = 7168;
    p.ld_out = 3584, p.in_align = p.out_align = 16, p.lut = 1, p.one_pass = 1;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.lut == 1 && a.threads == 768 && a.min_ctas == 1 &&
              a.unroll == 2 && a.grid == 132 && a.work == 4096 * 28 && a.smem == 0 && !a.ring,
          "lut: lut %d threads %d grid %u unroll %d", a.lut, a.threads, a.grid, a.unroll);
    p.rows = p.m = 64; /* 1792 items: under 4 rounds on 132 SMs, over on 3 */
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.lut == 0 && a.threads == 256, "lut, 64 rows");
    CHECK(qg__cast_plan(&p, 3, &a) == QG_SUCCESS && a.lut == 1 && a.grid == 3, "lut, 64 rows, 3 SMs");
    p.in_f32 = 1;
    CHECK(qg__cast_plan(&p, 3, &a) == QG_SUCCESS && a.lut == 0, "lut, float input");
    p.in_f32 = 0, p.k = 3583, p.ld_in = 7166, p.ld_out = 3583; /* vec 1 */
    CHECK(qg__cast_plan(&p, 3, &a) == QG_SUCCESS && a.lut == 0 && a.vec == 1, "lut, vec 1");
    p.k = 3582, p.ld_in = 7164, p.ld_out = 3582; /* vec 2 */
    CHECK(qg__cast_plan(&p, 3, &a) == QG_SUCCESS && a.lut == 1 && a.vec == 2, "lut, vec 2");
    p.op = QG_CAST_PER_TOKEN, p.ld_in = 3582; /* the words are per-channel's and silu_mul's only */
    p.ring = 1;
    CHECK(qg__cast_plan(&p, 3, &a) == QG_SUCCESS && a.lut == 0 && a.ring == 0 && a.threads == 256,
          "per-token under ring+lut");
    char lsrc[2048];
    p.op = QG_CAST_SILU_MUL, p.ld_in = 7164;
    CHECK(qg__cast_plan(&p, 3, &a) == QG_SUCCESS && qg__cast_source(&p, &a, lsrc, sizeof lsrc) == QG_SUCCESS &&
              strstr(lsrc, "#define QG_CAST_LUT 1") && !strstr(lsrc, "QG_CAST_RING"), "lut source:\n%s", lsrc);
    /* layouts */
    memset(&p, 0, sizeof p);
    p.op = QG_CAST_SF_MN_MAJOR, p.m = 4096, p.k = 56, p.groups = 1, p.sf_ld = 4095;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_ERROR_INVALID_ARGUMENT, "sf_ld < mn");
    p.sf_ld = 4096;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS && a.grid <= 132u * 4 && a.grid > 0, "grid %u",
          a.grid);
    p.op = QG_CAST_SF_PACK_UE8M0_KGROUPED, p.groups = 0;
    CHECK(qg__cast_plan(&p, 132, &a) != QG_SUCCESS, "k-grouped 0 groups");
    p.op = (qg_cast_op)9;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_ERROR_INVALID_ARGUMENT, "op 9");
    /* the source names every compile-time choice */
    memset(&p, 0, sizeof p);
    p.op = QG_CAST_SILU_MUL, p.rows = 64, p.m = 32, p.groups = 2, p.k = 256, p.ld_in = 512;
    p.ld_out = 256, p.in_align = p.out_align = 16, p.rows_mask = QG_CAST_ROWS_MASKED;
    CHECK(qg__cast_plan(&p, 132, &a) == QG_SUCCESS, "%s", qg_last_error());
    char src[2048];
    CHECK(qg__cast_source(&p, &a, src, sizeof src) == QG_SUCCESS &&
          strstr(src, "#define QG_CAST_OP 4") && strstr(src, "#define QG_CAST_ROW_MASK 1") &&
          strstr(src, "#define QG_CAST_K 256"), "source:\n%s", src);
    CHECK(qg__cast_source(&p, &a, src, 16) == QG_ERROR_INTERNAL, "small buffer");
    PASS();
}

/* ---- every variant through the library's JIT -------------------------------- */

/* The casts are plain CUDA kernels: no PTX feature is asked of them. */
static int compile_one(qgtk_compile_sweep *sw, qg_cast_kind kind, const qg_cast_args *c,
                       const qg_sf_layout_args *l, const char *what) {
    qg_kernel_info info;
    memset(&info, 0, sizeof info);
    const qg_status st = qg_cast_compile(sw->ctx, kind, c, l, &info);
    return qgtk_compile_verdict(sw, what, st, &info, 0, 0);
}

/* The host word (checked: python/csrc/cast.c) changes no kernel: given alone, the default's
 * kernels (all+lean+ring+lut); with kernel words, those words' kernels. Compared by the
 * kernels' cache keys (their source and options). */
TEST(cast_variant_host_words) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 0, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    static const char *const same[][2] = {
        {NULL, "checked"}, {NULL, "all+lean+ring+lut+checked"}, {"all+lean", "checked+all+lean"},
        {"base", "base+checked"}, {"lean", "checked+lean"}, {"all", "checked+all"}};
    char key[2][65];
    for (int kind = 1; kind <= 4; kind += 3)
        for (int c = 0; c < 6; ++c) {
            for (int j = 0; j < 2; ++j) {
                qg_cast_args a = good_cast();
                if (same[c][j]) setenv("QGEMM_CAST_VARIANT", same[c][j], 1);
                qg_kernel_info info;
                memset(&info, 0, sizeof info);
                const qg_status st = qg_cast_compile(sw.ctx, (qg_cast_kind)kind, &a, NULL, &info);
                unsetenv("QGEMM_CAST_VARIANT");
                CHECK(st == QG_SUCCESS, "kind %d QGEMM_CAST_VARIANT=%s: %s", kind,
                      same[c][j] ? same[c][j] : "(unset)", qg_last_error());
                memcpy(key[j], info.key, sizeof key[j]);
            }
            CHECK(key[0][0] && !strcmp(key[0], key[1]), "kind %d: %s and %s compile different "
                  "kernels (%s, %s)", kind, same[c][0] ? same[c][0] : "(unset)", same[c][1],
                  key[0], key[1]);
        }
    /* and the kernel words still matter: base's kernel is not the default's */
    qg_cast_args a = good_cast();
    qg_kernel_info info[2];
    memset(info, 0, sizeof info);
    setenv("QGEMM_CAST_VARIANT", "base+checked", 1);
    qg_status st = qg_cast_compile(sw.ctx, QG_CAST_KIND_PER_TOKEN, &a, NULL, &info[0]);
    unsetenv("QGEMM_CAST_VARIANT");
    CHECK(st == QG_SUCCESS && qg_cast_compile(sw.ctx, QG_CAST_KIND_PER_TOKEN, &a, NULL, &info[1]) ==
          QG_SUCCESS && strcmp(info[0].key, info[1].key), "base+checked vs unset: %s / %s (%s)",
          info[0].key, info[1].key, qg_last_error());
    qgtk_compile_sweep_close(&sw);
    PASS();
}

TEST(cast_compile_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 0, 0) == QG_SUCCESS, "offline context: %s",
          qg_last_error());
    char what[160];
    /* quantizing kinds: type x UE8M0 x scale layout / row mask x aligned or not, the
     * default kernels, QGEMM_CAST_VARIANT=lean's, and the ring / table kernels with and
     * without lean (ring: per-channel with 16-byte rows; lut: silu_mul of bf16 with
     * enough rows, below) */
    static const char *const sweep_variants[] = {"base", "lean", "ring+lut", "all+lean+ring+lut"};
    for (int lean = 0; lean < 4; ++lean) {
    setenv("QGEMM_CAST_VARIANT", sweep_variants[lean], 1);
    for (int kind = 1; kind <= 4; ++kind)
        for (int f32 = 0; f32 < 2; ++f32)
            for (int ue = 0; ue < 2; ++ue)
                for (int variant = 0; variant < (kind == 4 ? 6 : kind == 1 ? 4 : 2); ++variant) {
                    qg_cast_args a = good_cast();
                    a.x_fp32 = f32, a.ue8m0 = ue;
                    const int misaligned = variant % 2;
                    if (misaligned) a.k = 200, a.ld_x = 2 * 201, a.ld_out = 203; /* narrow accesses */
                    if (kind == 1 || kind == 4) a.sf_mn_major = (variant / 2) % 2;
                    if (kind == 4) {
                        a.ld_x = misaligned ? 2 * a.k + 2 : 2 * a.k;
                        if (variant / 2 == 2) a.masked_m = FAKE(0x7000000), a.sf_mn_major = 0;
                        if (variant / 2 == 1) a.m_indices = FAKE(0x7000000);
                        if (variant / 2 == 1) a.sf_mn_major = 1;
                    }
                    if (kind == 3) a.m = 256;
                    /* a per-block shape whose float lean kernel spilled on the H200 (200 x 300:
                     * QG_CAST_N / QG_CAST_K not multiples of 128), compiled here too */
                    if (kind == 2 && f32 && !misaligned) a.m = 200, a.k = 300, a.ld_x = a.ld_out = 300;
                    /* silu_mul: rows enough for the table kernel on the sweep's SMs
                     * (QG_CAST_LUT_ROUNDS rounds of 96 items a CTA) under lut */
                    if (kind == 4 && lean >= 2) a.m = a.sf_ld = 32768;
                    /* per-channel: a partial last ring tile (k = 1000 bf16 / float) */
                    if (kind == 3 && !misaligned && ue) a.k = 1000, a.ld_x = a.ld_out = 1000;
                    snprintf(what, sizeof what, "kind %d %s ue8m0 %d variant %d %s", kind,
                             f32 ? "f32" : "bf16", ue, variant, sweep_variants[lean]);
                    compile_one(&sw, (qg_cast_kind)kind, &a, NULL, what);
                }
    unsetenv("QGEMM_CAST_VARIANT");
    }
    /* the table kernel at 4- and 2-byte accesses (vec 2 and 4), every row mask and scale
     * layout; the plan must take it (QG_CAST_LUT in the source) */
    setenv("QGEMM_CAST_VARIANT", "all+lean+ring+lut", 1);
    for (int ue = 0; ue < 2; ++ue)
        for (int mask = 0; mask < 3; ++mask)
            for (int vec = 2; vec <= 4; vec += 2) {
                qg_cast_args a = good_cast();
                a.ue8m0 = ue, a.m = a.sf_ld = 32768, a.sf_mn_major = mask != 1;
                a.k = vec == 2 ? 3582 : 3580, a.ld_x = 2 * a.k, a.ld_out = a.k;
                if (mask == 1) a.masked_m = FAKE(0x7000000);
                if (mask == 2) a.m_indices = FAKE(0x7000000);
                snprintf(what, sizeof what, "silu table ue8m0 %d mask %d vec %d", ue, mask, vec);
                compile_one(&sw, QG_CAST_KIND_SILU_MUL, &a, NULL, what);
            }
    unsetenv("QGEMM_CAST_VARIANT");
    /* per-token small M (the unroll follows the rows) */
    for (int m = 1; m <= 4096; m *= 64) {
        qg_cast_args a = good_cast();
        a.m = m, a.k = 7168, a.ld_x = a.ld_out = 7168;
        snprintf(what, sizeof what, "per-token m %d", m);
        compile_one(&sw, QG_CAST_KIND_PER_TOKEN, &a, NULL, what);
    }
    for (int kind = 5; kind <= 6; ++kind) {
        qg_sf_layout_args l = good_layout(0);
        snprintf(what, sizeof what, "layout kind %d", kind);
        compile_one(&sw, (qg_cast_kind)kind, NULL, &l, what);
    }
    for (int psum = 0; psum < 2; ++psum)
        for (int gran = 32; gran <= 128; gran *= 4)
            for (int groups = 1; groups <= 4; groups += 3) {
                qg_sf_layout_args l = good_layout(1);
                l.psum = psum, l.gran_k = gran, l.num_groups = groups;
                snprintf(what, sizeof what, "k-grouped psum %d gran %d groups %d", psum, gran, groups);
                compile_one(&sw, QG_CAST_KIND_SF_PACK_UE8M0_K_GROUPED, NULL, &l, what);
            }
    printf("    %d of %d cast kernels compiled clean\n", sw.checked - sw.failures, sw.checked);
    qgtk_compile_sweep_close(&sw);
    CHECK(sw.failures == 0, "%d of %d variants failed", sw.failures, sw.checked);
    PASS();
}

/* ---- bitwise on the GPU ---------------------------------------------------------- */

static uint32_t fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

/* The layout cases' inputs (the casts' are the testkit's, qgtk_cases.h). */
static uint64_t rng;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static float urand(void) { return (float)((rnd() >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

/* The casts through the testkit's case (testkit/cast_case.c), the same
 * function `qgemm check --family cast` runs. */
static int run_cast_case(qg_context *ctx, CUstream stream, const qgtk_cast_case *c, char *why,
                         size_t len) {
    const qgtk_case_opts opts = {.seed = rnd()};
    qgtk_case_result res;
    const bool ok = qgtk_cast_case_run(ctx, stream, c, &opts, &res);
    snprintf(why, len, "%s", res.why);
    return ok;
}

/* Every cast kind x input type x scale form x layout against the host's bits, under
 * QGEMM_CAST_VARIANT = variant (NULL: unset, the default). @return failures. */
static int cast_bitwise_cases(const char *variant) {
    qg_context *ctx;
    CUstream stream;
    if (qgtk_gpu_session_open(&ctx, &stream) != QG_SUCCESS) {
        printf("    FAIL session: %s\n", qg_last_error());
        return 1;
    }
    if (variant) setenv("QGEMM_CAST_VARIANT", variant, 1);
    else unsetenv("QGEMM_CAST_VARIANT");
    gpu_ctx_push(ctx);
    rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)time(NULL);
    qgtk_cast_case cases[160];
    int n = 0;
    static const int token_shapes[][3] = {{1, 1, 128}, {1, 37, 200}, {1, 300, 7168}, {3, 50, 1000}};
    for (int f32 = 0; f32 < 2; ++f32)
        for (int ue = 0; ue < 2; ++ue) {
            for (size_t s = 0; s < 4; ++s)
                for (int mn = 0; mn < 2; ++mn)
                    cases[n++] = (qgtk_cast_case){1, f32, ue, mn, 0, token_shapes[s][0], token_shapes[s][1],
                                             token_shapes[s][2], (int)s == 3, 0};
            cases[n++] = (qgtk_cast_case){2, f32, ue, 0, 0, 2, 200, 300, 0, 0};
            cases[n++] = (qgtk_cast_case){2, f32, ue, 0, 0, 1, 256, 1000, 1, 0};
            cases[n++] = (qgtk_cast_case){3, f32, ue, 0, 0, 1, 256, 300, 0, 0};
            cases[n++] = (qgtk_cast_case){3, f32, ue, 0, 0, 1, 128, 1001, 1, 0};
            for (int mask = 0; mask < 3; ++mask)
                cases[n++] = (qgtk_cast_case){4, f32, ue, mask == 1, mask, 6, 150, 256, mask == 2, 0};
        }
    int failures = 0;
    for (int i = 0; i < n; ++i) {
        char why[256] = "";
        if (!run_cast_case(ctx, stream, &cases[i], why, sizeof why)) {
            failures++;
            printf("    FAIL %s kind %d %s ue8m0 %d mn %d mask %d %dx%dx%d pad %d: %s\n",
                   variant ? variant : "default", cases[i].kind, cases[i].f32 ? "f32" : "bf16",
                   cases[i].ue, cases[i].mn, cases[i].rows_mask, cases[i].groups, cases[i].m, cases[i].k,
                   cases[i].pad, why);
        }
    }
    printf("    %s: %d cast cases, %d failed\n", variant ? variant : "default", n, failures);
    unsetenv("QGEMM_CAST_VARIANT");
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    return failures;
}

TEST(gpu_cast_bitwise) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    const int failures = cast_bitwise_cases(NULL);
    CHECK(failures == 0, "%d cast cases failed", failures);
    PASS();
}

/* The same cases under QGEMM_CAST_VARIANT base (the plain kernels, the default before
 * 2026-11-29) and lean alone (the default is all+lean+ring+lut): the same bytes are their contract. */
TEST(gpu_cast_variants_bitwise) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    const int failures = cast_bitwise_cases("base") + cast_bitwise_cases("lean");
    CHECK(failures == 0, "%d cast cases failed under base / lean", failures);
    PASS();
}

/* The grid-stride loops (QGEMM_CAST_VARIANT lean: the lean kernels, the grid capped
 * by qg_context_set_num_sms; base: the plain ones) over many units a CTA on 3 SMs, the
 * same bits; a captured launch replays in a CUDA graph; the default (all+lean+ring+lut: a CTA a
 * unit, the SM count no cap) on all SMs. */
TEST(gpu_cast_sms_and_graph) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    rng = 0x5DEECE66Dull ^ (uint64_t)time(NULL);
    static const qgtk_cast_case cases[] = {
        {1, 0, 0, 1, 0, 2, 300, 7168, 0, 0}, {2, 1, 1, 0, 0, 2, 300, 1000, 0, 0},
        {3, 0, 0, 0, 0, 1, 512, 700, 1, 0},  {4, 0, 1, 1, 1, 6, 150, 256, 0, 0},
        {4, 1, 0, 0, 2, 6, 150, 256, 1, 0},
    };
    const int n = (int)(sizeof cases / sizeof cases[0]);
    int failures = 0;
    char why[256];
    static const char *const pass_name[] = {"default, all SMs", "lean, 3 SMs", "lean, 3 SMs, CUDA graph",
                                            "base, 3 SMs"};
    for (int pass = 0; pass < 4; ++pass) {
        if (pass == 1) CHECK(qg_context_set_num_sms(ctx, 3) == QG_SUCCESS, "%s", qg_last_error());
        if (pass == 1) setenv("QGEMM_CAST_VARIANT", "lean", 1); /* grid-stride: several units a CTA */
        if (pass == 3) setenv("QGEMM_CAST_VARIANT", "base", 1);
        for (int i = 0; i < n; ++i) {
            qgtk_cast_case c = cases[i];
            c.graph = pass == 2;
            if (!run_cast_case(ctx, stream, &c, why, sizeof why)) {
                failures++;
                printf("    FAIL pass %d (%s) case %d: %s\n", pass, pass_name[pass], i, why);
            }
        }
    }
    unsetenv("QGEMM_CAST_VARIANT");
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d cases failed", failures, 4 * n);
    PASS();
}

/* The scale layouts: MN-major transpose (TMA-aligned and dense), packed
 * UE8M0, and the k-grouped packed form, against their definitions. */
static int run_layout_case(qg_context *ctx, CUstream stream, int kind, int G, int MN, int SFK,
                           int transposed, int out_ld, char *why, size_t len) {
    const qg_driver *drv = ctx->drv;
    const int out_rows = kind == 5 ? SFK : (SFK + 3) / 4;
    const size_t in_n = (size_t)G * MN * SFK, out_n = (size_t)G * out_rows * out_ld;
    float *in = malloc(in_n * 4 + 4);
    for (size_t i = 0; i < in_n; ++i) {
        const float s = ldexpf(1.0f, (int)(rnd() % 60) - 30);
        in[i] = kind == 6 ? s : s * (1.0f + urand() * 0.4f);
    }
    int64_t st[3] = {(int64_t)MN * SFK, SFK, 1};
    if (transposed) st[1] = 1, st[2] = MN;
    CUdeviceptr din = qgtk_device_upload(ctx, in, in_n * 4),
                dout = qgtk_device_poisoned(ctx, out_n * 4);
    uint32_t *out = malloc(out_n * 4 + 4);
    int ok = 0;
    qg_sf_layout_args a;
    memset(&a, 0, sizeof a);
    a.mn = MN, a.sf_k = SFK, a.num_groups = G;
    a.sf = (const float *)(uintptr_t)din;
    memcpy(a.sf_stride, st, sizeof st);
    a.out = (void *)(uintptr_t)dout, a.out_ld = out_ld;
    qg_status s = kind == 5 ? qg_sf_transpose_mn_major(ctx, &a, stream) : qg_sf_pack_ue8m0(ctx, &a, stream);
    if (s != QG_SUCCESS) {
        snprintf(why, len, "%s: %s", qg_status_string(s), qg_last_error());
        goto done;
    }
    if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
        snprintf(why, len, "the kernel faulted");
        goto done;
    }
    drv->cuMemcpyDtoH(out, dout, out_n * 4);
    int64_t bad = 0;
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < out_rows; ++r)
            for (int m = 0; m < out_ld; ++m) {
                uint32_t want = 0;
                if (m < MN) {
                    const float *src = in + g * st[0] + m * st[1];
                    if (kind == 5) want = fbits(src[r * st[2]]);
                    else
                        for (int j = 0; j < 4; ++j)
                            if (4 * r + j < SFK) want |= ((fbits(src[(4 * r + j) * st[2]]) >> 23) & 0xFFu) << (8 * j);
                }
                bad += out[((size_t)g * out_rows + r) * out_ld + m] != want;
            }
    if (bad) {
        snprintf(why, len, "%lld of %zu values differ", (long long)bad, out_n);
        goto done;
    }
    ok = 1;
done:
    if (din) drv->cuMemFree(din);
    if (dout) drv->cuMemFree(dout);
    free(in), free(out);
    return ok;
}

static int run_kgrouped_case(qg_context *ctx, CUstream stream, const int *ks, int G, int MN, int gran,
                             int psum, char *why, size_t len) {
    const qg_driver *drv = ctx->drv;
    const int kal = 128;
    int32_t layout[16];
    int end = 0, sf_k = 0, packed = 0;
    for (int g = 0; g < G; ++g) {
        const int start = psum ? (end + kal - 1) / kal * kal : 0;
        end = psum ? start + ks[g] : 0;
        layout[g] = psum ? end : ks[g];
        const int rows = (ks[g] + gran - 1) / gran;
        sf_k += rows;
        packed += (rows + 3) / 4;
    }
    float *in = malloc((size_t)sf_k * MN * 4 + 4);
    for (int64_t i = 0; i < (int64_t)sf_k * MN; ++i) in[i] = ldexpf(1.0f, (int)(rnd() % 60) - 30);
    CUdeviceptr din = qgtk_device_upload(ctx, in, (size_t)sf_k * MN * 4),
                dout = qgtk_device_poisoned(ctx, (size_t)packed * MN * 4);
    CUdeviceptr dks = 0;
    drv->cuMemAlloc(&dks, 64);
    drv->cuMemcpyHtoD(dks, layout, (size_t)G * 4);
    uint32_t *out = malloc((size_t)packed * MN * 4 + 4);
    int ok = 0;
    qg_sf_layout_args a;
    memset(&a, 0, sizeof a);
    a.mn = MN, a.sf_k = sf_k, a.num_groups = G, a.sf = (const float *)(uintptr_t)din;
    a.out = (void *)(uintptr_t)dout, a.ks = (const int32_t *)(uintptr_t)dks;
    a.gran_k = gran, a.k_alignment = kal, a.psum = psum, a.packed_sf_k = packed;
    qg_status s = qg_sf_pack_ue8m0_k_grouped(ctx, &a, stream);
    if (s != QG_SUCCESS) {
        snprintf(why, len, "%s: %s", qg_status_string(s), qg_last_error());
        goto done;
    }
    if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
        snprintf(why, len, "the kernel faulted");
        goto done;
    }
    drv->cuMemcpyDtoH(out, dout, (size_t)packed * MN * 4);
    int64_t bad = 0;
    int row = 0, prow = 0;
    for (int g = 0; g < G; ++g) {
        const int rows = (ks[g] + gran - 1) / gran;
        for (int p = 0; p < (rows + 3) / 4; ++p, ++prow)
            for (int m = 0; m < MN; ++m) {
                uint32_t want = 0;
                for (int j = 0; j < 4; ++j)
                    if (4 * p + j < rows) want |= ((fbits(in[(int64_t)(row + 4 * p + j) * MN + m]) >> 23) & 0xFFu) << (8 * j);
                bad += out[(size_t)prow * MN + m] != want;
            }
        row += rows;
    }
    if (bad) {
        snprintf(why, len, "%lld values differ", (long long)bad);
        goto done;
    }
    ok = 1;
done:
    if (din) drv->cuMemFree(din);
    if (dout) drv->cuMemFree(dout);
    if (dks) drv->cuMemFree(dks);
    free(in), free(out);
    return ok;
}

TEST(gpu_cast_layouts) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    rng = 0x2545F4914F6CDD1Dull ^ (uint64_t)time(NULL);
    int failures = 0, n = 0;
    char why[256];
    static const int shapes[][3] = {{1, 37, 5}, {2, 4096, 56}, {3, 129, 9}, {1, 1, 1}};
    for (int kind = 5; kind <= 6; ++kind)
        for (size_t s = 0; s < 4; ++s)
            for (int tr = 0; tr < 2; ++tr)
                for (int dense = 0; dense < 2; ++dense) {
                    const int mn = shapes[s][1], ld = dense ? mn : (mn + 3) / 4 * 4;
                    n++;
                    if (!run_layout_case(ctx, stream, kind, shapes[s][0], mn, shapes[s][2], tr, ld, why,
                                         sizeof why)) {
                        failures++;
                        printf("    FAIL layout %d G %d mn %d sf_k %d transposed %d ld %d: %s\n", kind,
                               shapes[s][0], mn, shapes[s][2], tr, ld, why);
                    }
                }
    static const int ks[][5] = {{512, 0, 256, 384, 1024}, {128, 128, 128, 128, 128}};
    for (int psum = 0; psum < 2; ++psum)
        for (int gran = 32; gran <= 128; gran *= 4)
            for (int v = 0; v < 2; ++v) {
                n++;
                if (!run_kgrouped_case(ctx, stream, ks[v], 5, 260, gran, psum, why, sizeof why)) {
                    failures++;
                    printf("    FAIL k-grouped psum %d gran %d set %d: %s\n", psum, gran, v, why);
                }
            }
    printf("    %d layout cases, %d failed\n", n, failures);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d layout cases failed", failures, n);
    PASS();
}

/* ---- the ring and table kernels against the default, byte for byte ------------------ */

/* One cast of x (host bytes) into poisoned outputs under QGEMM_CAST_VARIANT = variant
 * (NULL: unset, the default); q and sf come back whole (padding and unwritten bytes
 * included). @return 1, or 0 with why. */
static int cast_once(qg_context *ctx, CUstream stream, const char *variant, int kind,
                     const qg_cast_args *tmpl, const void *x, size_t x_bytes, const int32_t *aux,
                     size_t aux_n, uint8_t *q, size_t q_bytes, uint32_t *sf, size_t sf_n, char *why,
                     size_t len) {
    const qg_driver *drv = ctx->drv;
    CUdeviceptr dx = qgtk_device_upload(ctx, x, x_bytes), dq = qgtk_device_poisoned(ctx, q_bytes),
                dsf = qgtk_device_poisoned(ctx, sf_n * 4), daux = 0;
    if (aux) daux = qgtk_device_upload(ctx, aux, aux_n * 4);
    int ok = 0;
    if (!dx || !dq || !dsf || (aux && !daux)) {
        snprintf(why, len, "cuMemAlloc failed");
        goto done;
    }
    qg_cast_args a = *tmpl;
    a.x = (const void *)(uintptr_t)dx, a.out = (void *)(uintptr_t)dq, a.sf = (float *)(uintptr_t)dsf;
    if (a.masked_m) a.masked_m = (const int32_t *)(uintptr_t)daux;
    if (a.m_indices) a.m_indices = (const int32_t *)(uintptr_t)daux;
    if (variant) setenv("QGEMM_CAST_VARIANT", variant, 1);
    else unsetenv("QGEMM_CAST_VARIANT");
    const qg_status st = kind == 3 ? qg_per_channel_cast(ctx, &a, stream) : qg_silu_mul_cast(ctx, &a, stream);
    unsetenv("QGEMM_CAST_VARIANT");
    if (st != QG_SUCCESS) {
        snprintf(why, len, "%s: %s: %s", variant ? variant : "default", qg_status_string(st), qg_last_error());
        goto done;
    }
    if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
        snprintf(why, len, "%s: the kernel faulted", variant ? variant : "default");
        goto done;
    }
    drv->cuMemcpyDtoH(q, dq, q_bytes);
    drv->cuMemcpyDtoH(sf, dsf, sf_n * 4);
    ok = 1;
done:
    if (dx) drv->cuMemFree(dx);
    if (dq) drv->cuMemFree(dq);
    if (dsf) drv->cuMemFree(dsf);
    if (daux) drv->cuMemFree(daux);
    return ok;
}

/* A bf16 or float input value: magnitudes 2^-20..2^12 by row (2^-30 now and then),
 * with zeros; specials (inf, -inf, NaN, -0, subnormals, 30000) when asked. */
static float ring_lut_value(int64_t r, int64_t c, int specials) {
    const int e = (int)((uint64_t)(r * 2654435761u) % 33) - 20;
    float v = urand() * ldexpf(1.0f, e);
    if (rnd() % 61 == 0) v *= 0x1p-30f;
    if (rnd() % 97 == 0) v = 0.0f;
    if (specials && rnd() % 4001 == 0) {
        static const float sp[] = {INFINITY, -INFINITY, NAN, -0.0f, 1e-40f, -3e-39f, 30000.0f, 300.0f};
        v = sp[rnd() % 8];
    }
    (void)c;
    return v;
}

/* Per-channel (kind 3) or silu_mul (kind 4) under `variant` against the default: the
 * e4m3 bytes and the scales equal, byte for byte, padding and unwritten bytes included.
 * Shape m x k (silu: groups x m rows, 2k input columns), row strides k + pad.
 * exhaustive (silu, bf16): the gates are every bf16 pattern in turn.
 * @return 1 when equal; *took: whether the plan ran the ring / table kernel. */
static int ring_lut_case(qg_context *ctx, CUstream stream, const char *variant, int kind, int f32, int ue,
                         int mask, int mn, int groups, int m, int k, int pad, int specials, int exhaustive,
                         int *took, char *why, size_t len) {
    const int silu = kind == 4, G = silu ? groups : 1, eb = f32 ? 4 : 2;
    const int64_t rows = (int64_t)G * m, in_cols = silu ? 2 * (int64_t)k : k;
    const int64_t ld_x = in_cols + pad, ld_out = k + pad;
    const int KB = (k + 127) / 128, sf_ld = (m + 3) / 4 * 4 + (pad ? 4 : 0);
    const size_t x_bytes = (size_t)(rows * ld_x) * eb, q_bytes = (size_t)(rows * ld_out);
    const size_t sf_n = kind == 3 ? (size_t)(m / 128) * k : mn ? (size_t)G * KB * sf_ld : (size_t)rows * KB;
    unsigned char *x = malloc(x_bytes + 4);
    uint8_t *q0 = malloc(q_bytes + 1), *q1 = malloc(q_bytes + 1);
    uint32_t *s0 = malloc(sf_n * 4 + 4), *s1 = malloc(sf_n * 4 + 4);
    int32_t *aux = NULL;
    size_t aux_n = 0;
    int ok = 0;
    if (!x || !q0 || !q1 || !s0 || !s1) {
        snprintf(why, len, "out of host memory");
        goto done;
    }
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < ld_x; ++c) {
            const float v = ring_lut_value(r, c, specials);
            if (f32) memcpy(x + (size_t)(r * ld_x + c) * 4, &v, 4);
            else {
                uint16_t h = qg_bf16_encode(v);
                if (exhaustive && c < k) h = (uint16_t)((r * k + c) & 0xFFFF); /* every gate pattern */
                memcpy(x + (size_t)(r * ld_x + c) * 2, &h, 2);
            }
        }
    if (mask == 1) {
        aux_n = (size_t)G;
        aux = malloc(aux_n * 4);
        static const int pick[] = {-1, 0, 17, -2, 1};
        for (int g = 0; aux && g < G; ++g) aux[g] = pick[g % 5] == -1 ? m : pick[g % 5] == -2 ? m + 9 : pick[g % 5];
    } else if (mask == 2) {
        aux_n = (size_t)rows;
        aux = malloc(aux_n * 4);
        for (int64_t r = 0; aux && r < rows; ++r) aux[r] = r % 128 < 100 ? (int)(r / 128 % 7) : -1;
    }
    if (mask && !aux) {
        snprintf(why, len, "out of host memory");
        goto done;
    }
    qg_cast_args a;
    memset(&a, 0, sizeof a);
    a.m = m, a.k = k, a.num_groups = G, a.ld_x = ld_x, a.x_fp32 = f32, a.ld_out = ld_out;
    a.sf_mn_major = mn, a.sf_ld = sf_ld, a.ue8m0 = ue;
    if (mask == 1) a.masked_m = FAKE(1);
    if (mask == 2) a.m_indices = FAKE(1);
    if (!cast_once(ctx, stream, "all+lean", kind, &a, x, x_bytes, aux, aux_n, q0, q_bytes, s0, sf_n, why, len) ||
        !cast_once(ctx, stream, variant, kind, &a, x, x_bytes, aux, aux_n, q1, q_bytes, s1, sf_n, why, len))
        goto done;
    /* the plan the call made (src/cast.c's problem for these arguments) */
    qg_cast_problem p;
    memset(&p, 0, sizeof p);
    p.op = (qg_cast_op)kind, p.in_f32 = f32, p.ue8m0 = ue, p.sf_mn_major = mn;
    p.rows_mask = (qg_cast_rows)mask, p.rows = rows, p.m = m, p.groups = G, p.k = k;
    p.ld_in = ld_x, p.ld_out = ld_out, p.sf_ld = sf_ld, p.in_align = p.out_align = 16;
    p.ring = strstr(variant, "ring") != NULL, p.lut = strstr(variant, "lut") != NULL;
    qg_cast_plan plan;
    *took = qg__cast_plan(&p, qg_context_get_num_sms(ctx), &plan) == QG_SUCCESS && (plan.ring || plan.lut);
    int64_t bq = 0, bs = 0;
    for (size_t i = 0; i < q_bytes; ++i) bq += q0[i] != q1[i];
    for (size_t i = 0; i < sf_n; ++i) bs += s0[i] != s1[i];
    if (bq || bs) {
        snprintf(why, len, "%lld of %zu bytes and %lld of %zu scales differ from all+lean's", (long long)bq,
                 q_bytes, (long long)bs, sf_n);
        goto done;
    }
    ok = 1;
done:
    free(x), free(q0), free(q1), free(s0), free(s1), free(aux);
    return ok;
}

/* QGEMM_CAST_VARIANT words ring (per-channel) and lut (silu_mul, bf16) -- with and
 * without lean -- give all+lean's bytes and scales exactly (the default before
 * 2026-11-29 y, without ring and lut): shapes off the tiles
 * (k not a multiple of 128 or of a ring tile, 2- and 4-byte silu accesses), padded
 * strides, inf / NaN / -0 / subnormal inputs (the ring's inexact tiles, the table's
 * fallback), every row mask and scale layout, every bf16 gate pattern; on all SMs and
 * on 2 (several ring tiles and table rounds a CTA, the table threshold reached). */
TEST(gpu_cast_ring_lut_bitwise) {
    if (!qgtk_gpu_available()) SKIP("no GPU (%s)", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    rng = 0x1234ABCD5678EF01ull ^ (uint64_t)time(NULL);
    const int all_sms = qg_context_get_num_sms(ctx);
    static const char *const variants[] = {"all+lean+ring+lut", "ring+lut"};
    /* per-channel: m, k, pad (k % 8 == 0: 16-byte rows for bf16 and float) */
    static const int channel[][3] = {{128, 1000, 0}, {384, 7176, 8}, {256, 72, 0}, {128, 8, 24}, {4096, 7168, 0}};
    /* silu: groups, m, k, pad, exhaustive (1024 x 128 gates: every bf16 pattern twice),
     * where (0: on 2 SMs, 1: on all; the table needs 4 rounds of 96 items a CTA) */
    static const int silu[][6] = {{6, 150, 256, 0, 0, 0}, {1, 700, 1000, 0, 0, 0}, {2, 300, 3582, 2, 0, 0},
                                  {3, 77, 3580, 4, 0, 0},  {1, 1024, 128, 0, 1, 0}, {1, 4096, 3584, 0, 0, 1},
                                  {8, 512, 3584, 0, 0, 1}};
    int failures = 0, n = 0, took_ring = 0, took_lut = 0;
    char why[256];
    for (int sms = 0; sms < 2; ++sms) {
        CHECK(qg_context_set_num_sms(ctx, sms ? 2 : all_sms) == QG_SUCCESS, "%s", qg_last_error());
        for (int v = 0; v < 2; ++v)
            for (int ue = 0; ue < 2; ++ue) {
                for (int f32 = 0; f32 < 2; ++f32)
                    for (size_t s = 0; s < sizeof channel / sizeof channel[0]; ++s) {
                        if (sms && channel[s][0] > 512) continue; /* (2 SMs: small shapes only) */
                        int took = 0;
                        n++;
                        if (!ring_lut_case(ctx, stream, variants[v], 3, f32, ue, 0, 0, 1, channel[s][0],
                                           channel[s][1], channel[s][2], s % 2, 0, &took, why, sizeof why)) {
                            failures++;
                            printf("    FAIL %s %d SMs per-channel %s ue8m0 %d %dx%d pad %d: %s\n", variants[v],
                                   sms ? 2 : all_sms, f32 ? "f32" : "bf16", ue, channel[s][0], channel[s][1],
                                   channel[s][2], why);
                        }
                        took_ring += took;
                    }
                for (size_t s = 0; s < sizeof silu / sizeof silu[0]; ++s)
                    for (int mask = 0; mask < 3; ++mask)
                        for (int mn = 0; mn < 2; ++mn) {
                            if (mask == 1 && !mn) continue; /* (masked: M-major scales as vLLM's) */
                            if (silu[s][4] && (mask || mn)) continue;
                            if (silu[s][5] != !sms) continue;
                            int took = 0;
                            n++;
                            if (!ring_lut_case(ctx, stream, variants[v], 4, 0, ue, mask, mn, silu[s][0], silu[s][1],
                                               silu[s][2], silu[s][3], !silu[s][4] && s % 2 == 0, silu[s][4],
                                               &took, why, sizeof why)) {
                                failures++;
                                printf("    FAIL %s %d SMs silu ue8m0 %d mask %d mn %d %dx%dx%d pad %d: %s\n",
                                       variants[v], sms ? 2 : all_sms, ue, mask, mn, silu[s][0], silu[s][1],
                                       silu[s][2], silu[s][3], why);
                            }
                            took_lut += took;
                        }
            }
    }
    qg_context_set_num_sms(ctx, all_sms);
    printf("    %d cases (%d through the ring kernel, %d through the table kernel), %d failed\n", n, took_ring,
           took_lut, failures);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d cases differ from all+lean", failures, n);
    CHECK(took_ring > 0 && took_lut > 0, "the new kernels ran in %d / %d cases", took_ring, took_lut);
    PASS();
}
