/*
 * test_overlap.c -- D may not alias its inputs (issue 53, src/overlap.c):
 * byte extents of strided matrices, the overlap rule (empty ranges, touching
 * ends, inputs sharing memory) and each GEMM kind's layout, with addresses
 * that are only numbers (never dereferenced): CPU only.
 */
#include "internal.h"
#include "qg_test.h"

#include <stdint.h>
#include <string.h>

#define AT(x) ((void *)(uintptr_t)(x))

TEST(overlap_matrix_range_extent) {
    /* 3 rows of 5 bf16, 8 apart: ((3 - 1) * 8 + 5) * 2 = 42 bytes */
    qg_byte_range r = qg__matrix_range("d", AT(0x10000), 3, 5, 8, 2);
    CHECK(r.begin == 0x10000 && r.end == 0x10000 + 42, "[%#lx, %#lx)", (unsigned long)r.begin,
          (unsigned long)r.end);
    CHECK(strcmp(r.name, "d") == 0, "name %s", r.name);
    r = qg__matrix_range("a", NULL, 3, 5, 8, 1);
    CHECK(r.begin == r.end, "a NULL pointer is not empty");
    r = qg__matrix_range("a", AT(0x1000), 0, 5, 8, 1);
    CHECK(r.begin == r.end, "no rows is not empty");
    r = qg__matrix_range("a", AT(0x1000), 7, 0, 8, 1);
    CHECK(r.begin == r.end, "no columns is not empty");
    /* saturates instead of wrapping around */
    r = qg__matrix_range("a", AT(UINTPTR_MAX - 100), UINT64_MAX, UINT64_MAX, UINT64_MAX, 4);
    CHECK(r.end == UINTPTR_MAX && r.begin < r.end, "the extent wrapped: end %#lx",
          (unsigned long)r.end);
    PASS();
}

TEST(overlap_rule_names_both_arguments) {
    const qg_byte_range d = {"d", 1000, 2000};
    const qg_byte_range apart[] = {{"a", 0, 1000}, {"b", 2000, 3000}, {"sfa", 1500, 1500}};
    qg__clear_error();
    CHECK(qg__check_no_overlap("f", &d, apart, 3) == QG_SUCCESS,
          "touching ends or an empty range refused: %s", qg_last_error());
    const qg_byte_range cases[][1] = {{{"a", 0, 1001}},   /* last byte of a is d's first */
                                      {{"b", 1999, 3000}}, /* first byte of b is d's last */
                                      {{"sfa", 1200, 1300}}, /* inside d */
                                      {{"sfb", 0, 5000}}};   /* around d */
    for (int i = 0; i < 4; i++) {
        qg__clear_error();
        qg_status s = qg__check_no_overlap("qg_fp8_gemm_nt", &d, cases[i], 1);
        char want[32];
        snprintf(want, sizeof want, "args->%s", cases[i][0].name);
        CHECK(s == QG_ERROR_INVALID_ARGUMENT, "case %d: status %d", i, s);
        CHECK(strstr(qg_last_error(), "qg_fp8_gemm_nt: args->d") && strstr(qg_last_error(), want),
              "case %d: the message names not both: %s", i, qg_last_error());
    }
    /* the first overlapping input is named, after a clean one */
    const qg_byte_range two[] = {{"a", 0, 10}, {"b", 1999, 2001}};
    CHECK(qg__check_no_overlap("f", &d, two, 2) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "args->b"), "%s", qg_last_error());
    /* an empty output overlaps nothing */
    const qg_byte_range empty = {"d", 1500, 1500};
    CHECK(qg__check_no_overlap("f", &empty, cases[2], 1) == QG_SUCCESS, "empty d refused");
    PASS();
}

/* m x n x k dense arguments at separate addresses, 1 MiB apart. */
static qg_gemm_args dense_args(int m, int n, int k) {
    qg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = m, a.n = n, a.k = k, a.num_groups = 1;
    a.a = AT(0x1000000), a.lda = k;
    a.b = AT(0x2000000), a.ldb = k;
    a.sfa = AT(0x3000000), a.sfa_ld = (m + 3) / 4 * 4;
    a.sfb = AT(0x4000000);
    a.d = AT(0x5000000), a.ldd = n;
    return a;
}

static qg_test_result refused(qg_gemm_kind kind, const qg_gemm_args *a, const char *input) {
    qg__clear_error();
    qg_status s = qg__check_gemm_no_overlap("fn", kind, a);
    char want[32];
    snprintf(want, sizeof want, "args->%s ", input);
    CHECK(s == QG_ERROR_INVALID_ARGUMENT, "kind %d: d overlapping %s accepted", (int)kind, input);
    CHECK(strstr(qg_last_error(), "fn: args->d ") && strstr(qg_last_error(), want),
          "kind %d: the message does not name d and %s: %s", (int)kind, input, qg_last_error());
    return QG_T_PASS;
}

#define REFUSED(kind, args, input)                                                   \
    do {                                                                             \
        if (refused(kind, args, input) != QG_T_PASS) return QG_T_FAIL;              \
    } while (0)

TEST(overlap_dense_d_against_each_input) {
    qg_gemm_args a = dense_args(256, 512, 384);
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_DENSE, &a) == QG_SUCCESS, "%s", qg_last_error());
    /* A == B (a Gram product) is no aliasing of the output */
    qg_gemm_args g = a;
    g.b = g.a;
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_DENSE, &g) == QG_SUCCESS, "%s", qg_last_error());
    /* D on each input */
    qg_gemm_args x = a;
    x.d = (void *)x.a;
    REFUSED(QG_GEMM_DENSE, &x, "a");
    x = a, x.d = (void *)x.b;
    REFUSED(QG_GEMM_DENSE, &x, "b");
    x = a, x.d = (void *)x.sfa;
    REFUSED(QG_GEMM_DENSE, &x, "sfa");
    x = a, x.d = (void *)x.sfb;
    REFUSED(QG_GEMM_DENSE, &x, "sfb");
    /* D's last byte on A's first: d ends at d + ((m-1)*ldd + n)*2 */
    x = a;
    const uintptr_t d_bytes = ((uintptr_t)(a.m - 1) * (uintptr_t)a.ldd + (uintptr_t)a.n) * 2;
    x.d = AT((uintptr_t)a.a - d_bytes + 1);
    REFUSED(QG_GEMM_DENSE, &x, "a");
    x.d = AT((uintptr_t)a.a - d_bytes); /* touching: fine */
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_DENSE, &x) == QG_SUCCESS, "%s", qg_last_error());
    /* A's last row reaches D: A = m rows of lda bytes, K used of each */
    x = a;
    x.d = AT((uintptr_t)a.a + (uintptr_t)(a.m - 1) * (uintptr_t)a.lda + (uintptr_t)a.k - 2);
    REFUSED(QG_GEMM_DENSE, &x, "a");
    /* SFA's last K block row: ceil(k/128) rows of sfa_ld floats, m used */
    x = a;
    x.d = AT((uintptr_t)a.sfa + ((uintptr_t)(384 / 128 - 1) * (uintptr_t)a.sfa_ld + 255) * 4);
    REFUSED(QG_GEMM_DENSE, &x, "sfa");
    x.d = AT((uintptr_t)a.sfa + ((uintptr_t)(384 / 128 - 1) * (uintptr_t)a.sfa_ld + 256) * 4);
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_DENSE, &x) == QG_SUCCESS, "%s", qg_last_error());
    /* M = 0 writes nothing */
    x = a, x.m = 0, x.d = (void *)x.a;
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_DENSE, &x) == QG_SUCCESS, "M = 0 refused");
    PASS();
}

TEST(overlap_grouped_layouts) {
    const int G = 4;
    /* contiguous: B [G][n][ldb], SFB [G][n/128][k/128], m_indices [m] */
    qg_gemm_args a = dense_args(512, 256, 256);
    a.num_groups = G, a.m_indices = AT(0x6000000);
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_GROUPED_CONTIGUOUS, &a) == QG_SUCCESS, "%s",
          qg_last_error());
    qg_gemm_args x = a;
    x.d = AT((uintptr_t)a.b + (uintptr_t)(G - 1) * 256 * 256); /* the last group of B */
    REFUSED(QG_GEMM_GROUPED_CONTIGUOUS, &x, "b");
    x = a, x.d = AT((uintptr_t)a.sfb + (uintptr_t)(G * 2 * 2 - 1) * 4); /* SFB's last float */
    REFUSED(QG_GEMM_GROUPED_CONTIGUOUS, &x, "sfb");
    x = a, x.d = AT((uintptr_t)a.m_indices + 4 * 511);
    REFUSED(QG_GEMM_GROUPED_CONTIGUOUS, &x, "m_indices");
    /* psum: group_ends [G] */
    x = a, x.m_indices = NULL, x.group_ends = AT(0x6000000);
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_GROUPED_PSUM, &x) == QG_SUCCESS, "%s",
          qg_last_error());
    x.d = AT(0x6000000 + 4 * (G - 1));
    REFUSED(QG_GEMM_GROUPED_PSUM, &x, "group_ends");
    /* masked: A [G][m][lda], D [G][m][ldd]: the last group's rows count */
    qg_gemm_args k = dense_args(128, 256, 256);
    k.num_groups = G, k.masked_m = AT(0x6000000), k.sfa_ld = 128;
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_GROUPED_MASKED, &k) == QG_SUCCESS, "%s",
          qg_last_error());
    x = k, x.d = AT((uintptr_t)k.a + (uintptr_t)(G - 1) * 128 * 256 + 5);
    REFUSED(QG_GEMM_GROUPED_MASKED, &x, "a");
    /* D's group G-1 reaches a buffer past G-1 groups of D */
    x = k, x.d = AT((uintptr_t)k.b - (uintptr_t)(G - 1) * 128 * 256 * 2 - 256 * 2 + 2);
    REFUSED(QG_GEMM_GROUPED_MASKED, &x, "b");
    x = k, x.d = AT((uintptr_t)k.masked_m);
    REFUSED(QG_GEMM_GROUPED_MASKED, &x, "masked_m");
    PASS();
}

TEST(overlap_weight_gradient_layouts) {
    /* wgrad: FP32 D [m][ldd], SFB [k/128][sfb_ld]; C == D in place is fine */
    qg_gemm_args a = dense_args(256, 512, 384);
    a.sfb_ld = 512;
    a.c = (const float *)a.d, a.ldc = a.ldd;
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_WGRAD, &a) == QG_SUCCESS, "%s", qg_last_error());
    qg_gemm_args x = a;
    x.c = (const float *)AT((uintptr_t)a.d + 4 * 100); /* overlaps D without being it */
    REFUSED(QG_GEMM_WGRAD, &x, "c");
    x = a, x.d = AT((uintptr_t)a.sfb + ((uintptr_t)2 * 512 + 511) * 4), x.c = NULL;
    REFUSED(QG_GEMM_WGRAD, &x, "sfb");
    /* FP32: D is 4 bytes an element; its last byte reaches past a bf16 extent */
    x = a, x.c = NULL;
    x.d = AT((uintptr_t)a.a - ((uintptr_t)255 * 512 + 512) * 4 + 1);
    REFUSED(QG_GEMM_WGRAD, &x, "a");
    /* k-grouped: A_g packed, m * k bytes; D [G][m][ldd] */
    qg_gemm_args k = dense_args(256, 512, 384);
    static const int32_t ks[3] = {128, 0, 256};
    k.num_groups = 3, k.ks = ks, k.sfb_ld = 512, k.lda = 0, k.ldb = 0;
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_K_GROUPED, &k) == QG_SUCCESS, "%s",
          qg_last_error());
    x = k, x.d = AT((uintptr_t)k.a + (uintptr_t)256 * 384 - 1);
    REFUSED(QG_GEMM_K_GROUPED, &x, "a");
    x.d = AT((uintptr_t)k.a + (uintptr_t)256 * 384);
    CHECK(qg__check_gemm_no_overlap("fn", QG_GEMM_K_GROUPED, &x) == QG_SUCCESS, "%s",
          qg_last_error());
    x = k, x.d = AT((uintptr_t)k.b - ((uintptr_t)3 * 256 - 1) * 512 * 4 - 512 * 4 + 4);
    REFUSED(QG_GEMM_K_GROUPED, &x, "b");
    PASS();
}
