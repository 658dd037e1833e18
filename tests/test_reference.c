/*
 * test_reference.c -- the CPU reference GEMM against a naive triple loop
 * written here (dense, contiguous, masked, psum, and the layouts' contents
 * out of range), the accuracy metric, argument validation, and the host half
 * of the test harness (problem generation; no GPU needed).
 */
#include "qg_test.h"
#include "qgtk.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return rs * 0x2545f4914f6cdd1dull;
}

/* A random finite, non-zero e4m3 code. */
static uint8_t rnd_code(void) {
    for (;;) {
        uint8_t c = (uint8_t)rnd();
        if ((c & 0x7f) != 0x7f && (c & 0x7f) != 0) return c;
    }
}

/* A random positive scale: a random significand times 2^[-8, 8]. */
static float rnd_scale(void) {
    return ldexpf(1.0f + (float)(rnd() % 1000) / 1000.0f, (int)(rnd() % 17) - 8);
}

typedef struct {
    qg_gemm_kind kind;
    int m, n, k, groups;
    int lda_pad, ldb_pad, sfa_pad;
    qg_gemm_args args;
    uint8_t *a, *b;
    float *sfa, *sfb;
    int32_t *idx, *mm, *ends;
    int64_t rows;
} small_problem;

static void small_free(small_problem *p) {
    free(p->a);
    free(p->b);
    free(p->sfa);
    free(p->sfb);
    free(p->idx);
    free(p->mm);
    free(p->ends);
}

/* Fill a problem with random codes and scales. Contiguous m_indices are
 * random runs (not 128-aligned: each row takes its 128-row segment's first
 * row's expert, which the reference must follow), with -1 rows;
 * masked_m covers 0, M_max and an inner value. */
static void small_make(small_problem *p) {
    const int kb = (p->k + 127) / 128, nb = (p->n + 127) / 128;
    const int G = p->groups;
    p->rows = p->kind == QG_GEMM_GROUPED_MASKED ? (int64_t)G * p->m : p->m;
    int64_t lda = p->k + p->lda_pad, ldb = p->k + p->ldb_pad;
    int64_t sfa_ld = qg_sfa_ld(p->m) + p->sfa_pad;
    int64_t sfa_n = (p->kind == QG_GEMM_GROUPED_MASKED ? G : 1) * kb * sfa_ld;
    p->a = malloc((size_t)(p->rows * lda));
    p->b = malloc((size_t)((int64_t)G * p->n * ldb));
    p->sfa = malloc(sizeof(float) * (size_t)sfa_n);
    p->sfb = malloc(sizeof(float) * (size_t)(G * nb * kb));
    for (int64_t i = 0; i < p->rows * lda; i++) p->a[i] = rnd_code();
    for (int64_t i = 0; i < (int64_t)G * p->n * ldb; i++) p->b[i] = rnd_code();
    for (int64_t i = 0; i < sfa_n; i++) p->sfa[i] = rnd_scale();
    for (int64_t i = 0; i < G * nb * kb; i++) p->sfb[i] = rnd_scale();
    p->idx = NULL;
    p->mm = NULL;
    p->ends = NULL;
    if (p->kind == QG_GEMM_GROUPED_PSUM) {
        /* valid ends: each group a random size (some empty) from the previous
         * end rounded up to 128, the last one ending at or before m */
        p->ends = malloc(sizeof(int32_t) * (size_t)G);
        int start = 0;
        for (int g = 0; g < G; g++) {
            const int room = p->m - start;
            const int size = room > 0 && rnd() % 4 ? (int)(rnd() % (uint64_t)(room / 2 + 1)) : 0;
            p->ends[g] = start + size;
            start = (start + size + 127) / 128 * 128;
            if (start > p->m) start = p->m;
        }
    }
    if (p->kind == QG_GEMM_GROUPED_CONTIGUOUS) {
        p->idx = malloc(sizeof(int32_t) * (size_t)p->m);
        int g = -1;
        for (int r = 0; r < p->m; r++) {
            /* the first segment starts with a real expert (rows get computed),
             * later ones may start with -1 (their rows must stay NaN) */
            if (r == 0) g = (int)(rnd() % (uint64_t)G);
            else if (r == 128) g = -1; /* a second segment that is all padding */
            else if (rnd() % 9 == 0) g = (int)(rnd() % (uint64_t)(G + 1)) - 1;
            p->idx[r] = g;
        }
    }
    if (p->kind == QG_GEMM_GROUPED_MASKED) {
        p->mm = malloc(sizeof(int32_t) * (size_t)G);
        for (int g = 0; g < G; g++) p->mm[g] = (int32_t)(rnd() % (uint64_t)(p->m + 1));
        p->mm[0] = 0;
        if (G > 1) p->mm[1] = p->m;
    }
    p->args = (qg_gemm_args){.m = p->m, .n = p->n, .k = p->k, .num_groups = G,
                             .a = p->a, .lda = lda, .sfa = p->sfa, .sfa_ld = sfa_ld,
                             .b = p->b, .ldb = ldb, .sfb = p->sfb, .d = NULL, .ldd = p->n,
                             .m_indices = p->idx, .masked_m = p->mm, .group_ends = p->ends};
}

/* Psum: the group of row r by include/qgemm.h's words, written out again
 * (start_0 = 0; end_g = group_ends[g] clamped to [start_g, m]; start_g+1 =
 * end_g rounded up to 128, at most m), -1 outside every group. */
static int naive_psum_group(const qg_gemm_args *x, int64_t r) {
    int64_t start = 0;
    for (int g = 0; g < x->num_groups; g++) {
        int64_t end = x->group_ends[g];
        if (end < start) end = start;
        if (end > x->m) end = x->m;
        if (start <= r && r < end) return g;
        start = (end + 127) / 128 * 128;
        if (start > x->m) start = x->m;
    }
    return -1;
}

/* The formula of qgemm.h, element by element, no cleverness. */
static double naive_element(const small_problem *p, int64_t r, int c, int *group) {
    const qg_gemm_args *x = &p->args;
    const int kb_count = (x->k + 127) / 128, nb_count = (x->n + 127) / 128;
    int g = 0;
    int64_t local = r;
    /* every row of a 128-row segment takes the expert of the segment's first
     * row; a first row naming no expert ([0, G) excluded) makes it padding */
    if (p->kind == QG_GEMM_GROUPED_CONTIGUOUS) {
        g = x->m_indices[r - r % 128];
        if (g >= x->num_groups) g = -1;
    }
    if (p->kind == QG_GEMM_GROUPED_MASKED) {
        g = (int)(r / x->m);
        local = r % x->m;
        if (local >= x->masked_m[g]) g = -1; /* a count past m keeps every row */
    }
    if (p->kind == QG_GEMM_GROUPED_PSUM) g = naive_psum_group(x, r);
    *group = g;
    if (g < 0) return NAN;
    const uint8_t *a = x->a, *b = x->b;
    double sum = 0.0;
    for (int kk = 0; kk < x->k; kk++) {
        int kb = kk / 128;
        double sa = p->kind == QG_GEMM_GROUPED_MASKED
                        ? x->sfa[((int64_t)g * kb_count + kb) * x->sfa_ld + local]
                        : x->sfa[(int64_t)kb * x->sfa_ld + r];
        double sb = x->sfb[((int64_t)g * nb_count + c / 128) * kb_count + kb];
        double av = qg_fp8_e4m3_decode(a[r * x->lda + kk]);
        double bv = qg_fp8_e4m3_decode(b[((int64_t)g * x->n + c) * x->ldb + kk]);
        sum += (av * sa) * (bv * sb);
    }
    return sum;
}

/* Compare the reference with the naive loop on a problem small_make made
 * (and a test may have edited since); frees it. */
static qg_test_result compare_made(small_problem *p) {
    double *ref = malloc(sizeof(double) * (size_t)(p->rows * p->n));
    qg_status st = qgtk_reference_gemm(p->kind, &p->args, ref);
    CHECK(st == QG_SUCCESS, "qgtk_reference_gemm: %s", qg_last_error());
    double max_rel = 0.0;
    int64_t skipped = 0, computed = 0;
    for (int64_t r = 0; r < p->rows; r++) {
        for (int c = 0; c < p->n; c++) {
            int g;
            double want = naive_element(p, r, c, &g), got = ref[r * p->n + c];
            if (g < 0) {
                CHECK(isnan(got), "kind %d row %lld must be NaN, got %g", p->kind, (long long)r, got);
                skipped++;
                continue;
            }
            CHECK(!isnan(got), "kind %d row %lld col %d is NaN", p->kind, (long long)r, c);
            /* Only the summation order differs: relative to the magnitude of
             * the terms, the difference is a few double ulps. */
            double rel = fabs(got - want) / (fabs(want) + 1e-300);
            if (rel > max_rel && fabs(want) > 1e-6) max_rel = rel;
            CHECK(fabs(got - want) <= 1e-9 * (fabs(want) + 1.0),
                  "kind %d (%d,%d,%d) r %lld c %d: got %.17g, naive %.17g", p->kind, p->m, p->n,
                  p->k, (long long)r, c, got, want);
            computed++;
        }
    }
    CHECK(computed > 0, "nothing computed");
    if (p->kind != QG_GEMM_DENSE) CHECK(skipped > 0, "no skipped rows exercised");
    free(ref);
    small_free(p);
    PASS();
}

static qg_test_result compare_with_naive(small_problem *p) {
    small_make(p);
    return compare_made(p);
}

TEST(reference_dense_vs_naive) {
    const int shapes[][6] = {
        /* m, n, k, lda_pad, ldb_pad, sfa_pad */
        {1, 8, 16, 0, 0, 0},     {37, 72, 400, 16, 32, 4}, {130, 136, 256, 0, 16, 0},
        {5, 200, 144, 48, 0, 8}, {64, 264, 528, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        small_problem p = {.kind = QG_GEMM_DENSE, .m = shapes[i][0], .n = shapes[i][1],
                           .k = shapes[i][2], .groups = 1, .lda_pad = shapes[i][3],
                           .ldb_pad = shapes[i][4], .sfa_pad = shapes[i][5]};
        if (compare_with_naive(&p) != QG_T_PASS) return QG_T_FAIL;
    }
    PASS();
}

TEST(reference_contiguous_vs_naive) {
    small_problem p1 = {.kind = QG_GEMM_GROUPED_CONTIGUOUS, .m = 300, .n = 136, .k = 272,
                        .groups = 3, .lda_pad = 16};
    if (compare_with_naive(&p1) != QG_T_PASS) return QG_T_FAIL;
    small_problem p2 = {.kind = QG_GEMM_GROUPED_CONTIGUOUS, .m = 177, .n = 16, .k = 16,
                        .groups = 5, .sfa_pad = 4};
    return compare_with_naive(&p2);
}

TEST(reference_masked_vs_naive) {
    small_problem p1 = {.kind = QG_GEMM_GROUPED_MASKED, .m = 20, .n = 144, .k = 400,
                        .groups = 3, .ldb_pad = 16};
    if (compare_with_naive(&p1) != QG_T_PASS) return QG_T_FAIL;
    small_problem p2 = {.kind = QG_GEMM_GROUPED_MASKED, .m = 130, .n = 24, .k = 160,
                        .groups = 4, .sfa_pad = 8};
    return compare_with_naive(&p2);
}

TEST(reference_psum_vs_naive) {
    small_problem p1 = {.kind = QG_GEMM_GROUPED_PSUM, .m = 600, .n = 136, .k = 272,
                        .groups = 4, .lda_pad = 16};
    if (compare_with_naive(&p1) != QG_T_PASS) return QG_T_FAIL;
    small_problem p2 = {.kind = QG_GEMM_GROUPED_PSUM, .m = 300, .n = 24, .k = 160,
                        .groups = 6, .sfa_pad = 8};
    return compare_with_naive(&p2);
}

/* The layouts' contents are device data the library never checks (issue
 * 27): every value is legal and means what include/qgemm.h says. The
 * reference follows the same rules (it used to refuse these values, so the
 * GPU tests could not check what the kernel does with them). */
TEST(reference_out_of_range_layout_contents) {
    /* contiguous: first rows naming no expert make their segment padding;
     * values inside a segment are never read */
    small_problem c = {.kind = QG_GEMM_GROUPED_CONTIGUOUS, .m = 1000, .n = 40, .k = 272,
                       .groups = 3};
    small_make(&c);
    const int32_t firsts[] = {0, 3, INT_MAX, -2, INT_MIN, 2, 4, 1};
    for (int s = 0; s < 8; s++) {
        for (int i = 0; i < 128 && s * 128 + i < c.m; i++) c.idx[s * 128 + i] = s % 2 ? 1 : 2;
        c.idx[s * 128] = firsts[s];
    }
    c.idx[5] = INT_MAX; /* inside segment 0 (expert 0): not read */
    c.idx[5 * 128 + 77] = -9;
    if (compare_made(&c) != QG_T_PASS) return QG_T_FAIL;

    /* masked: counts clamped to [0, M_max] */
    small_problem m = {.kind = QG_GEMM_GROUPED_MASKED, .m = 40, .n = 24, .k = 144, .groups = 6};
    small_make(&m);
    const int32_t counts[] = {-1, INT_MIN, 41, INT_MAX, 40, 7};
    memcpy(m.mm, counts, sizeof counts);
    if (compare_made(&m) != QG_T_PASS) return QG_T_FAIL;

    /* psum: negative, decreasing, past m, INT_MAX / INT_MIN ends; the
     * decreasing end must not start a group over rows an earlier one owns */
    const int32_t sets[][6] = {
        {300, 50, 400, 600, 2000, 900},      /* decreasing, then past m */
        {-5, INT_MIN, 129, 100, INT_MAX, 0}, /* negative, decreasing, INT_MAX */
        {0, 0, 0, 0, 0, 0},                  /* all empty */
        {650, 700, 700, 700, 700, 700},      /* the next start (768) clamped to m */
    };
    for (int t = 0; t < 4; t++) {
        small_problem ps = {.kind = QG_GEMM_GROUPED_PSUM, .m = 700, .n = 16, .k = 128,
                            .groups = 6};
        small_make(&ps);
        memcpy(ps.ends, sets[t], sizeof sets[t]);
        /* the all-empty set computes nothing: compare_made needs one row */
        if (t == 2) ps.ends[5] = 1;
        if (compare_made(&ps) != QG_T_PASS) return QG_T_FAIL;
    }

    /* qgtk_row_groups spells the rules out: check them directly too. */
    int32_t ends[3] = {300, 50, 400}, groups[512];
    qg_gemm_args a = {.m = 512, .num_groups = 3, .group_ends = ends};
    CHECK(qgtk_row_groups(QG_GEMM_GROUPED_PSUM, &a, groups) == QG_SUCCESS, "%s", qg_last_error());
    for (int r = 0; r < 512; r++) {
        /* group 0 rows 0..299; group 1 empty (starts at 384, ends there);
         * group 2 starts at 384 (not at 128, over group 0), ends at 400 */
        const int want = r < 300 ? 0 : r >= 384 && r < 400 ? 2 : -1;
        CHECK(groups[r] == want, "psum {300, 50, 400} row %d: group %d, expected %d", r,
              groups[r], want);
    }
    int64_t st[3], en[3];
    qgtk_psum_bounds(ends, 3, 512, st, en);
    CHECK(st[0] == 0 && en[0] == 300 && st[1] == 384 && en[1] == 384 && st[2] == 384 &&
              en[2] == 400,
          "bounds [%lld,%lld) [%lld,%lld) [%lld,%lld)", (long long)st[0], (long long)en[0],
          (long long)st[1], (long long)en[1], (long long)st[2], (long long)en[2]);
    PASS();
}

TEST(reference_rejects_bad_arguments) {
    small_problem p = {.kind = QG_GEMM_DENSE, .m = 8, .n = 16, .k = 128, .groups = 1};
    small_make(&p);
    double ref[8 * 16];
    qg_gemm_args bad;
#define EXPECT_BAD(kind, field_text, mutate)                                            \
    do {                                                                                 \
        bad = p.args;                                                                    \
        mutate;                                                                          \
        qg_status st_ = qgtk_reference_gemm(kind, &bad, ref);                              \
        CHECK(st_ == QG_ERROR_INVALID_ARGUMENT, "%s: got status %d", #mutate, (int)st_); \
        CHECK(strstr(qg_last_error(), field_text), "%s: message '%s' should name %s",    \
              #mutate, qg_last_error(), field_text);                                     \
    } while (0)
    EXPECT_BAD(QG_GEMM_DENSE, "a:", bad.a = NULL);
    EXPECT_BAD(QG_GEMM_DENSE, "sfb", bad.sfb = NULL);
    EXPECT_BAD(QG_GEMM_DENSE, "k:", bad.k = 120);
    EXPECT_BAD(QG_GEMM_DENSE, "lda", bad.lda = 64);
    EXPECT_BAD(QG_GEMM_DENSE, "ldb", bad.ldb = 100);
    EXPECT_BAD(QG_GEMM_DENSE, "sfa_ld", bad.sfa_ld = 4);
    EXPECT_BAD(QG_GEMM_DENSE, "sfa_ld", bad.sfa_ld = 10);
    EXPECT_BAD(QG_GEMM_DENSE, "num_groups", bad.num_groups = 2);
    EXPECT_BAD(QG_GEMM_GROUPED_CONTIGUOUS, "m_indices", (void)0);
    EXPECT_BAD(QG_GEMM_GROUPED_MASKED, "masked_m", (void)0);
    EXPECT_BAD(QG_GEMM_GROUPED_PSUM, "group_ends", (void)0);
    /* Out-of-range contents are not bad arguments (the library cannot check
     * device data): reference_out_of_range_layout_contents. */
    EXPECT_BAD((qg_gemm_kind)7, "kind", (void)0);
    EXPECT_BAD(QG_GEMM_WGRAD, "kind", (void)0);
    CHECK(qgtk_reference_gemm(QG_GEMM_DENSE, &p.args, NULL) == QG_ERROR_INVALID_ARGUMENT, "ref NULL");
    CHECK(qgtk_reference_gemm(QG_GEMM_DENSE, NULL, ref) == QG_ERROR_INVALID_ARGUMENT, "args NULL");
#undef EXPECT_BAD
    CHECK(qgtk_reference_gemm(QG_GEMM_DENSE, &p.args, ref) == QG_SUCCESS, "the good call: %s",
          qg_last_error());
    small_free(&p);
    PASS();
}

/* ---- the metric ------------------------------------------------------------- */

TEST(calc_diff_values) {
    enum { N = 1000 };
    static double x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (double)(int64_t)(rnd() % 2001) / 100.0 - 10.0 + 0.001;
        y[i] = 2.0 * x[i];
    }
    CHECK(qgtk_calc_diff(x, x, N) == 0.0, "identical: %g", qgtk_calc_diff(x, x, N));
    /* 1 - 2*sum(2x^2) / sum(x^2 + 4x^2) = 1 - 4/5 */
    CHECK(fabs(qgtk_calc_diff(x, y, N) - 0.2) < 1e-12, "x vs 2x: %.15g", qgtk_calc_diff(x, y, N));
    CHECK(fabs(qgtk_calc_diff(y, x, N) - 0.2) < 1e-12, "symmetric");
    for (int i = 0; i < N; i++) y[i] = -x[i];
    CHECK(fabs(qgtk_calc_diff(x, y, N) - 2.0) < 1e-12, "x vs -x: %g", qgtk_calc_diff(x, y, N));

    /* NaN in y skips the pair, whatever x holds there. */
    for (int i = 0; i < N; i++) y[i] = 2.0 * x[i];
    double full = qgtk_calc_diff(x + 10, y + 10, N - 10);
    double saved[10];
    for (int i = 0; i < 10; i++) {
        saved[i] = x[i];
        y[i] = NAN;
        x[i] = i % 2 ? NAN : 1e30;
    }
    CHECK(qgtk_calc_diff(x, y, N) == full, "NaN skip: %.17g vs %.17g", qgtk_calc_diff(x, y, N), full);
    /* NaN in x where y is a number poisons the result. */
    x[500] = NAN;
    CHECK(isnan(qgtk_calc_diff(x, y, N)), "x NaN must give NaN");
    for (int i = 0; i < 10; i++) x[i] = saved[i];
    CHECK(qgtk_calc_diff(x, y, 0) == 0.0, "empty");
    PASS();
}

/* ---- the harness, host side ------------------------------------------------- */

static int is_max_code(uint8_t c) { return (c & 0x7f) == 0x7e; }

TEST(harness_host_problem_dense) {
    qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = 100, .n = 200, .k = 400,
                            .num_groups = 1, .seed = 7, .lda_pad = 16, .ldb_pad = 32,
                            .ldd_pad = 8, .sfa_ld_pad = 4, .scale_spread = 4};
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create_host(&p, &spec) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(p->lda == 416 && p->ldb == 432 && p->ldd == 208 && p->sfa_ld == 104, "strides");
    CHECK(p->kblocks == 4 && p->nblocks == 2 && p->rows == 100, "blocks");

    /* Codes cover the range; every quantization block reaches +-448 exactly
     * once its scale is amax/448; stride padding holds NaN codes. */
    int seen[256] = {0};
    for (int64_t r = 0; r < p->rows; r++) {
        for (int kb = 0; kb < p->kblocks; kb++) {
            int has_max = 0;
            int end = (kb + 1) * 128 < p->k ? (kb + 1) * 128 : p->k;
            for (int kk = kb * 128; kk < end; kk++) {
                uint8_t c = p->a[r * p->lda + kk];
                seen[c] = 1;
                has_max |= is_max_code(c);
                CHECK((c & 0x7f) != 0x7f, "NaN code inside A");
            }
            CHECK(has_max, "A row %lld block %d never reaches 448", (long long)r, kb);
            float s = p->sfa[(int64_t)kb * p->sfa_ld + r];
            CHECK(s > 0 && isfinite(s), "sfa");
        }
        for (int64_t kk = p->k; kk < p->lda; kk++) CHECK(p->a[r * p->lda + kk] == 0x7f, "A pad");
    }
    for (int kb = 0; kb < p->kblocks; kb++)
        for (int64_t r = p->rows; r < p->sfa_ld; r++)
            CHECK(isnan(p->sfa[kb * p->sfa_ld + r]), "SFA padding must be NaN");
    int distinct = 0;
    for (int c = 0; c < 256; c++) distinct += seen[c];
    CHECK(distinct > 200, "only %d distinct A codes", distinct);
    for (int nb = 0; nb < p->nblocks; nb++)
        for (int kb = 0; kb < p->kblocks; kb++) {
            int has_max = 0;
            for (int i = nb * 128; i < p->n && i < (nb + 1) * 128; i++)
                for (int kk = kb * 128; kk < p->k && kk < (kb + 1) * 128; kk++)
                    has_max |= is_max_code(p->b[(int64_t)i * p->ldb + kk]);
            CHECK(has_max, "B block (%d,%d) never reaches 448", nb, kb);
        }

    /* Scales spread over several octaves. */
    double lo = INFINITY, hi = 0;
    for (int64_t r = 0; r < p->rows; r++)
        for (int kb = 0; kb < p->kblocks; kb++) {
            double s = p->sfa[(int64_t)kb * p->sfa_ld + r];
            lo = fmin(lo, s);
            hi = fmax(hi, s);
        }
    CHECK(log2(hi / lo) > 5.0, "SFA spans only %.1f octaves", log2(hi / lo));

    /* Deterministic per seed, different across seeds. */
    qgtk_problem_data *q = NULL;
    CHECK(qgtk_problem_create_host(&q, &spec) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(memcmp(p->a, q->a, p->a_bytes) == 0 && memcmp(p->b, q->b, p->b_bytes) == 0 &&
              memcmp(p->sfb, q->sfb, p->sfb_bytes) == 0,
          "same seed, different data");
    qgtk_problem_free(q);
    spec.seed = 8;
    CHECK(qgtk_problem_create_host(&q, &spec) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(memcmp(p->a, q->a, p->a_bytes) != 0 && memcmp(p->b, q->b, p->b_bytes) != 0,
          "different seeds, same data");
    qgtk_problem_free(q);

    /* The host reference of a generated problem has no NaN (dense) and a
     * plausible magnitude. */
    CHECK(qgtk_problem_reference(NULL, p, QGTK_REF_CPU) == QG_SUCCESS, "%s", qg_last_error());
    for (int64_t i = 0; i < p->rows * p->n; i++) CHECK(isfinite(p->ref[i]), "ref[%lld]", (long long)i);
    qgtk_problem_free(p);
    PASS();
}

TEST(harness_host_problem_grouped) {
    const int align = qg_m_alignment_for_contiguous_layout();
    qgtk_problem_spec spec = {.kind = QG_GEMM_GROUPED_CONTIGUOUS, .n = 64, .k = 256,
                            .num_groups = 6, .seed = 3, .expected_m = 200, .scale_spread = 2};
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create_host(&p, &spec) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(p->m % align == 0 && p->m > 0, "M_total %d", p->m);
    /* Segments: in group order, each starting at a multiple of the
     * alignment, real rows first, then -1 padding; sizes 140..260. */
    int row = 0;
    for (int g = 0; g < 6; g++) {
        CHECK(row % align == 0, "group %d starts at %d", g, row);
        int real = 0;
        while (row < p->m && p->m_indices[row] == g) real++, row++;
        CHECK(real >= 140 && real <= 260, "group %d has %d rows (expected 200 +-30%%)", g, real);
        while (row < p->m && p->m_indices[row] == -1) row++;
    }
    CHECK(row == p->m, "m_indices has stray values at row %d", row);
    qgtk_problem_free(p);

    int sizes[3] = {0, 128, 5};
    spec.num_groups = 3;
    spec.group_m = sizes;
    CHECK(qgtk_problem_create_host(&p, &spec) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(p->m == 2 * align, "M_total with sizes {0,128,5}: %d", p->m);
    qgtk_problem_free(p);

    qgtk_problem_spec ms = {.kind = QG_GEMM_GROUPED_MASKED, .m = 96, .n = 32, .k = 128,
                          .num_groups = 8, .seed = 11, .masked_extremes = true};
    CHECK(qgtk_problem_create_host(&p, &ms) == QG_SUCCESS, "%s", qg_last_error());
    int zero = 0, full = 0;
    for (int g = 0; g < 8; g++) {
        CHECK(p->masked_m[g] >= 0 && p->masked_m[g] <= 96, "masked_m[%d] = %d", g, p->masked_m[g]);
        zero += p->masked_m[g] == 0;
        full += p->masked_m[g] == 96;
    }
    CHECK(zero >= 1 && full >= 1, "extremes missing");
    CHECK(p->expected_m >= 1 && p->expected_m <= 96, "expected_m %d", p->expected_m);
    CHECK(p->rows == 8 * 96, "rows");
    qg_gemm_args h = qgtk_problem_host_args(p);
    CHECK(h.masked_m == p->masked_m && h.m == 96 && h.num_groups == 8 && h.expected_m == p->expected_m,
          "host args");
    CHECK(qgtk_problem_reference(NULL, p, QGTK_REF_CPU) == QG_SUCCESS, "%s", qg_last_error());
    for (int g = 0; g < 8; g++)
        for (int i = 0; i < 96; i++)
            CHECK(!!isnan(p->ref[((int64_t)g * 96 + i) * p->n]) == (i >= p->masked_m[g]),
                  "group %d row %d NaN-ness", g, i);
    qgtk_problem_free(p);

    /* psum: the contiguous segments as group ends, no m_indices. */
    int psizes[4] = {200, 0, 128, 77};
    qgtk_problem_spec ps = {.kind = QG_GEMM_GROUPED_PSUM, .n = 64, .k = 256, .num_groups = 4,
                          .seed = 5, .group_m = psizes, .padding_blocks = true};
    CHECK(qgtk_problem_create_host(&p, &ps) == QG_SUCCESS, "%s", qg_last_error());
    /* segments of 256, 0, 128 and 128 rows; padding_blocks has no room here */
    CHECK(p->m == 4 * align && !p->m_indices && p->group_ends, "psum M_total %d", p->m);
    CHECK(p->group_ends[0] == 200 && p->group_ends[1] == 256 && p->group_ends[2] == 384 &&
              p->group_ends[3] == 461,
          "psum ends %d %d %d %d", p->group_ends[0], p->group_ends[1], p->group_ends[2],
          p->group_ends[3]);
    h = qgtk_problem_host_args(p);
    CHECK(h.group_ends == p->group_ends && h.m == 4 * align, "psum host args");
    CHECK(qgtk_problem_reference(NULL, p, QGTK_REF_CPU) == QG_SUCCESS, "%s", qg_last_error());
    for (int r = 0; r < p->m; r++)
        CHECK(!!isnan(p->ref[(int64_t)r * p->n]) == !(r < 200 || (r >= 256 && r < 461)),
              "psum row %d NaN-ness", r);
    qgtk_problem_free(p);

    /* Spec validation. */
    qgtk_problem_spec bad = {.kind = QG_GEMM_DENSE, .m = 4, .n = 8, .k = 24, .num_groups = 1};
    CHECK(qgtk_problem_create_host(&p, &bad) == QG_ERROR_INVALID_ARGUMENT && !p, "k = 24");
    bad.k = 32;
    bad.ldd_pad = 4;
    CHECK(qgtk_problem_create_host(&p, &bad) == QG_ERROR_INVALID_ARGUMENT && !p, "ldd_pad 4");
    PASS();
}

/* A generated problem big enough to use every thread and unit boundary of
 * the reference (N and M not multiples of its 16x256 units): sampled
 * elements against the naive loop; prints the reference's speed, which the
 * GPU tests' CPU path depends on. */
TEST(reference_generated_problem_sampled) {
    qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = 600, .n = 2056, .k = 2064,
                            .num_groups = 1, .seed = 5, .scale_spread = 3};
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create_host(&p, &spec) == QG_SUCCESS, "%s", qg_last_error());
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(qgtk_problem_reference(NULL, p, QGTK_REF_CPU) == QG_SUCCESS, "%s", qg_last_error());
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("    reference 600x2056x2064 on %d threads: %.3f s (%.2f GMAC/s)\n", qgtk_num_workers(),
           s, 600.0 * 2056 * 2064 / s / 1e9);
    small_problem view = {.kind = QG_GEMM_DENSE, .args = qgtk_problem_host_args(p)};
    for (int i = 0; i < 400; i++) {
        int64_t r = (int64_t)(rnd() % 600);
        int c = (int)(rnd() % 2056), g;
        if (i < 4) r = i % 2 ? 599 : 0, c = i / 2 ? 2055 : 0; /* the corners */
        double want = naive_element(&view, r, c, &g), got = p->ref[r * p->n + c];
        CHECK(fabs(got - want) <= 1e-9 * (fabs(want) + 1.0), "r %lld c %d: got %.17g, naive %.17g",
              (long long)r, c, got, want);
    }
    qgtk_problem_free(p);
    PASS();
}
