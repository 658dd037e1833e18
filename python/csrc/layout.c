/*
 * layout.c -- the tensors of one GEMM call -> qg_gemm_args.
 *
 * Logical shapes are DeepGEMM's, so code ports by changing an import
 * (kb = ceil(K/128), nb = ceil(N/128)):
 *
 *              a          sfa          b          sfb           d          idx
 *   dense      [M, K]     [M, kb]      [N, K]     [nb, kb]      [M, N]     -
 *   contiguous [M, K]     [M, kb]      [G, N, K]  [G, nb, kb]   [M, N]     m_indices [M]
 *   masked     [G, M, K]  [G, M, kb]   [G, N, K]  [G, nb, kb]   [G, M, N]  masked_m [G]
 *
 * Memory layouts the kernels read (qgemm.h):
 *  - a, b, d: last dimension contiguous; row stride a multiple of 16 bytes
 *    (TMA); groups packed (group stride = rows * row stride);
 *  - sfa: M-major, strides (.., 1, sfa_ld), sfa_ld >= M and a multiple of 4
 *    floats; groups packed (kb * sfa_ld): what get_col_major_tma_aligned_tensor
 *    makes;
 *  - sfb, m_indices, masked_m: contiguous;
 *  - every data address 16-byte aligned.
 * The stride of a dimension of size 1 is meaningless (PyTorch exports 1 for
 * it), so it is never checked: the value the layout implies is used instead.
 *
 * Checks run in this order so the first message is the most basic one:
 * dtypes and ranks (argument order), sizes, memory layouts, devices.
 */
#include "qgpy.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

/* x >= 0 (tensor dimensions), and no x + y - 1 that a hostile shape could
 * overflow (issue 27). */
static int64_t ceil_div(int64_t x, int64_t y)
{
    return x / y + (x % y != 0);
}

/* Strides past 2^36 elements are refused before anything multiplies them
 * (the library refuses them too, but only after it looked for a device). */
#define QGPY_MAX_LD (INT64_C(1) << 36)

static int check_ld_bound(const qgpy_tensor *t, const char *what, int64_t ld)
{
    char s[160];
    if (ld <= QGPY_MAX_LD)
        return 0;
    return qgpy_errorf(PyExc_ValueError, "qgemm: %s's %s = %" PRId64 " exceeds 2^36 (strides %s)",
                       t->name, what, ld, qgpy_strides_str(t, s, sizeof s));
}

static int check_int_range(const char *what, int64_t v)
{
    if (v >= 0 && v <= INT_MAX)
        return 0;
    return qgpy_errorf(PyExc_ValueError, "qgemm: %s = %" PRId64 " is out of range (0..%d)", what, v,
                       INT_MAX);
}

/* A tensor of no elements (M, N or K = 0): its strides mean nothing (torch
 * reports (1, 1) for a [256, 0] tensor), as those of size-1 dimensions, and
 * the call launches nothing (DeepGEMM's early return), so they are not checked. */
static int is_empty(const qgpy_tensor *t)
{
    for (int i = 0; i < t->t->ndim; i++)
        if (qgpy_dim(t, i) == 0)
            return 1;
    return 0;
}

/* Row stride (elements) of a row-major matrix [(G,) R, C] with packed groups. */
static int matrix_ld(const qgpy_tensor *t, int64_t elem_bytes, int64_t *ld)
{
    char s[160];
    const int grouped = t->t->ndim == 3;
    const int64_t groups = grouped ? qgpy_dim(t, 0) : 1;
    const int64_t rows = qgpy_dim(t, -2), cols = qgpy_dim(t, -1);
    if (is_empty(t)) {
        *ld = (cols * elem_bytes + 15) / 16 * 16 / elem_bytes;
        return 0;
    }
    if (cols > 1 && qgpy_stride(t, -1) != 1)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s must be row-major with a contiguous last dimension "
                           "(stride 1), got strides %s (a transposed view? use .contiguous())",
                           t->name, qgpy_strides_str(t, s, sizeof s));
    if (rows > 1)
        *ld = qgpy_stride(t, -2);
    else if (groups > 1)
        *ld = qgpy_stride(t, 0); /* one row per group: the group stride is the row stride */
    else
        *ld = cols;
    if (*ld < cols)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s's row stride must be at least its row length %" PRId64
                           ", got %" PRId64 " (strides %s)",
                           t->name, cols, *ld, qgpy_strides_str(t, s, sizeof s));
    if (check_ld_bound(t, "row stride", *ld))
        return -1;
    if ((*ld * elem_bytes) % 16 != 0)
        return qgpy_errorf(
            PyExc_ValueError,
            "qgemm: %s's row stride must be a multiple of 16 bytes (TMA), got %" PRId64
            " elements = %" PRId64 " bytes (strides %s)",
            t->name, *ld, *ld * elem_bytes, qgpy_strides_str(t, s, sizeof s));
    int64_t group_stride;
    if (groups > 1 && __builtin_mul_overflow(rows, *ld, &group_stride))
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s's groups are %" PRId64 " rows x row stride %" PRId64
                           " elements apart: past 2^63", t->name, rows, *ld);
    if (groups > 1 && qgpy_stride(t, 0) != group_stride)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s's groups must be packed: the stride of dimension 0 must be "
                           "%" PRId64 " (%" PRId64 " rows x row stride %" PRId64
                           "), got strides %s",
                           t->name, group_stride, rows, *ld, qgpy_strides_str(t, s, sizeof s));
    return 0;
}

/* The leading dimension of a scale tensor [(G,) rows, kb] per 1x128 block,
 * rows-major (sfa: M, sfa_ld; the weight gradient's sfb: N, sfb_ld). */
static int scales_layout(const qgpy_tensor *t, char dim, const char *ld_name, int64_t *ld)
{
    char s[160], fix[96];
    snprintf(fix, sizeof fix, "convert it with qgemm.get_col_major_tma_aligned_tensor(%s)",
             t->name);
    const int64_t groups = t->t->ndim == 3 ? qgpy_dim(t, 0) : 1;
    const int64_t rows = qgpy_dim(t, -2), kb = qgpy_dim(t, -1);
    if (is_empty(t)) {
        *ld = qg_sfa_ld(rows);
        return 0;
    }
    if (rows > 1 && qgpy_stride(t, -2) != 1)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s must be %c-major (strides (1, %s): the scales of one "
                           "128-column block of K contiguous over %c), got strides %s; %s",
                           t->name, dim, ld_name, dim, qgpy_strides_str(t, s, sizeof s), fix);
    if (kb > 1)
        *ld = qgpy_stride(t, -1);
    else if (groups > 1)
        *ld = qgpy_stride(t, 0); /* one K block per group */
    else
        *ld = qg_sfa_ld(rows);
    if (*ld < rows || *ld % 4 != 0)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s's %c stride (%s) must be >= %c = %" PRId64
                           " and a multiple of 4 floats (16 bytes, TMA), got %" PRId64
                           " (strides %s); %s",
                           t->name, dim, ld_name, dim, rows, *ld,
                           qgpy_strides_str(t, s, sizeof s), fix);
    char what[32];
    snprintf(what, sizeof what, "%c stride (%s)", dim, ld_name);
    if (check_ld_bound(t, what, *ld))
        return -1;
    int64_t group_stride;
    if (groups > 1 && __builtin_mul_overflow(kb, *ld, &group_stride))
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s's groups are ceil(K/128) = %" PRId64 " x %s %" PRId64
                           " floats apart: past 2^63", t->name, kb, ld_name, *ld);
    if (groups > 1 && qgpy_stride(t, 0) != group_stride)
        return qgpy_errorf(
            PyExc_ValueError,
            "qgemm: %s's groups must be packed: the stride of dimension 0 must be "
            "%" PRId64 " (ceil(K/128) = %" PRId64 " x %s %" PRId64 "), got strides %s; %s",
            t->name, group_stride, kb, ld_name, *ld, qgpy_strides_str(t, s, sizeof s), fix);
    return 0;
}

static int check_contiguous(const qgpy_tensor *t)
{
    if (is_empty(t))
        return 0;
    int64_t expect = 1;
    for (int i = t->t->ndim - 1; i >= 0; i--) {
        if (qgpy_dim(t, i) > 1 && qgpy_stride(t, i) != expect) {
            char sh[160], st[160];
            return qgpy_errorf(PyExc_ValueError,
                               "qgemm: %s must be contiguous (row-major), got shape %s with "
                               "strides %s; use .contiguous()",
                               t->name, qgpy_shape_str(t, sh, sizeof sh),
                               qgpy_strides_str(t, st, sizeof st));
        }
        if (__builtin_mul_overflow(expect, qgpy_dim(t, i), &expect)) {
            char sh[160];
            return qgpy_errorf(PyExc_ValueError, "qgemm: %s has shape %s: more than 2^63 elements",
                               t->name, qgpy_shape_str(t, sh, sizeof sh));
        }
    }
    return 0;
}

/* 1. dtypes and ranks, in argument order. */
/* d_e4m3: the e4m3-D calls (qg_fp8_out): d float8_e4m3fn, one byte an element. */
static int check_types(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS], int d_e4m3)
{
    const int masked = kind == QG_GEMM_GROUPED_MASKED;
    if (kind == QG_GEMM_WGRAD) /* sfb per column, FP32 d, the idx slot holds c (or nothing) */
        return qgpy_check_dtype(&t[QGPY_A], QGPY_E4M3) ||
                       qgpy_check_ndim(&t[QGPY_A], 2, "[M, K]") ||
                       qgpy_check_dtype(&t[QGPY_SFA], QGPY_F32) ||
                       qgpy_check_ndim(&t[QGPY_SFA], 2, "[M, ceil(K/128)]") ||
                       qgpy_check_dtype(&t[QGPY_B], QGPY_E4M3) ||
                       qgpy_check_ndim(&t[QGPY_B], 2, "[N, K]") ||
                       qgpy_check_dtype(&t[QGPY_SFB], QGPY_F32) ||
                       qgpy_check_ndim(&t[QGPY_SFB], 2, "[N, ceil(K/128)]") ||
                       qgpy_check_dtype(&t[QGPY_D], QGPY_F32) ||
                       qgpy_check_ndim(&t[QGPY_D], 2, "[M, N]") ||
                       (t[QGPY_IDX].t && (qgpy_check_dtype(&t[QGPY_IDX], QGPY_F32) ||
                                          qgpy_check_ndim(&t[QGPY_IDX], 2, "[M, N]")))
                   ? -1
                   : 0;
    const int grouped = kind != QG_GEMM_DENSE;
    if (qgpy_check_dtype(&t[QGPY_A], QGPY_E4M3) ||
        qgpy_check_ndim(&t[QGPY_A], masked ? 3 : 2, masked ? "[G, M, K]" : "[M, K]") ||
        qgpy_check_dtype(&t[QGPY_SFA], QGPY_F32) ||
        qgpy_check_ndim(&t[QGPY_SFA], masked ? 3 : 2,
                        masked ? "[G, M, ceil(K/128)]" : "[M, ceil(K/128)]") ||
        qgpy_check_dtype(&t[QGPY_B], QGPY_E4M3) ||
        qgpy_check_ndim(&t[QGPY_B], grouped ? 3 : 2, grouped ? "[G, N, K]" : "[N, K]") ||
        qgpy_check_dtype(&t[QGPY_SFB], QGPY_F32) ||
        qgpy_check_ndim(&t[QGPY_SFB], grouped ? 3 : 2,
                        grouped ? "[G, ceil(N/128), ceil(K/128)]" : "[ceil(N/128), ceil(K/128)]") ||
        qgpy_check_dtype(&t[QGPY_D], d_e4m3 ? QGPY_E4M3 : QGPY_BF16) ||
        qgpy_check_ndim(&t[QGPY_D], masked ? 3 : 2, masked ? "[G, M, N]" : "[M, N]"))
        return -1;
    if (grouped && (qgpy_check_dtype(&t[QGPY_IDX], QGPY_I32) ||
                    qgpy_check_ndim(&t[QGPY_IDX], 1,
                                    masked || kind == QG_GEMM_GROUPED_PSUM ? "[G]" : "[M]")))
        return -1;
    return 0;
}

/* 2. sizes: every tensor agrees with M, N, K (and G) taken from a and b. */
/* swiglu: d has N / 2 columns (the SwiGLU GEMMs: B's gate | up rows). */
static int check_sizes(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS], int expected_m,
                       qg_gemm_args *args, int swiglu)
{
    const int masked = kind == QG_GEMM_GROUPED_MASKED, psum = kind == QG_GEMM_GROUPED_PSUM;
    const int wgrad = kind == QG_GEMM_WGRAD, grouped = kind != QG_GEMM_DENSE && !wgrad;
    const qgpy_tensor *a = &t[QGPY_A], *sfa = &t[QGPY_SFA], *b = &t[QGPY_B], *sfb = &t[QGPY_SFB],
                      *d = &t[QGPY_D], *idx = &t[QGPY_IDX];
    const int64_t m = qgpy_dim(a, -2), k = qgpy_dim(a, -1), n = qgpy_dim(b, -2);
    const int64_t g = grouped ? qgpy_dim(b, 0) : 1;
    const int64_t kb = ceil_div(k, 128), nb = ceil_div(n, 128);

    if (qgpy_check_dim(b, -1, k, "K, from a") || (masked && qgpy_check_dim(a, 0, g, "G, from b")) ||
        (masked && qgpy_check_dim(sfa, 0, g, "G, from b")) ||
        qgpy_check_dim(sfa, -2, m, "M, from a") ||
        qgpy_check_dim(sfa, -1, kb, "ceil(K/128), K from a") ||
        (grouped && qgpy_check_dim(sfb, 0, g, "G, from b")) ||
        qgpy_check_dim(sfb, -2, wgrad ? n : nb, wgrad ? "N, from b" : "ceil(N/128), N from b") ||
        qgpy_check_dim(sfb, -1, kb, "ceil(K/128), K from a") ||
        (masked && qgpy_check_dim(d, 0, g, "G, from b")) || qgpy_check_dim(d, -2, m, "M, from a") ||
        (swiglu ? qgpy_check_dim(d, -1, n / 2, "N/2, from b (its gate and up rows)")
                : qgpy_check_dim(d, -1, n, "N, from b")) ||
        (grouped && qgpy_check_dim(idx, 0, masked || psum ? g : m,
                                   masked || psum ? "G, from b" : "M, from a")) ||
        (wgrad && idx->t && (qgpy_check_dim(idx, 0, m, "M, from a") ||
                             qgpy_check_dim(idx, 1, n, "N, from b"))))
        return -1;
    if (check_int_range("M", m) || check_int_range("N", n) || check_int_range("K", k) ||
        check_int_range("G", g))
        return -1;
    if (k % 16 != 0)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: K (a.shape[-1]) must be a multiple of 16, got %" PRId64, k);
    if (n % 8 != 0)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: N (b.shape[-2]) must be a multiple of 8, got %" PRId64, n);
    if ((masked || psum) && expected_m < 0)
        return qgpy_errorf(PyExc_ValueError, "qgemm: expected_m must be >= 0, got %d", expected_m);
    args->m = (int)m;
    args->n = (int)n;
    args->k = (int)k;
    args->num_groups = (int)g;
    args->expected_m = masked || psum ? expected_m : 0;
    return 0;
}

/* 3. memory layouts, alignment, writability of d. */
static int check_layouts(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS], qg_gemm_args *args,
                         int d_e4m3)
{
    const int wgrad = kind == QG_GEMM_WGRAD;
    if (matrix_ld(&t[QGPY_A], 1, &args->lda) ||
        scales_layout(&t[QGPY_SFA], 'M', "sfa_ld", &args->sfa_ld) ||
        matrix_ld(&t[QGPY_B], 1, &args->ldb) ||
        (wgrad ? scales_layout(&t[QGPY_SFB], 'N', "sfb_ld", &args->sfb_ld)
               : check_contiguous(&t[QGPY_SFB])) ||
        matrix_ld(&t[QGPY_D], wgrad ? 4 : d_e4m3 ? 1 : 2, &args->ldd))
        return -1;
    if (wgrad && t[QGPY_IDX].t && matrix_ld(&t[QGPY_IDX], 4, &args->ldc))
        return -1;
    if (kind != QG_GEMM_DENSE && !wgrad && check_contiguous(&t[QGPY_IDX]))
        return -1;
    for (int i = 0; i < QGPY_SLOTS; i++)
        if (t[i].t && !is_empty(&t[i]) && qgpy_check_aligned(&t[i]))
            return -1;
    if (qgpy_check_writable(&t[QGPY_D]))
        return -1;
    /* d aliasing an input (issue 53): a, sfa, b, sfb, and the grouped GEMMs'
     * index tensor; the weight gradient's c may be d itself (in place), which
     * the library checks. */
    for (int i = 0; i < QGPY_SLOTS; i++)
        if (i != QGPY_D && !(i == QGPY_IDX && wgrad) && qgpy_check_no_overlap(&t[QGPY_D], &t[i]))
            return -1;
    return 0;
}

/* sfd (the e4m3-D calls' scales; NULL: none): checked after the other
 * tensors' shapes and layouts, before any device. */
static int check_sfd(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS], const qgpy_tensor *sfd,
                     const qg_gemm_args *args, int64_t *sfd_ld, int swiglu);

static int gemm_args(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS], int expected_m,
                     qg_gemm_args *args, int *device, const qgpy_tensor *sfd, int64_t *sfd_ld,
                     int swiglu)
{
    const int d_e4m3 = sfd != NULL;
    memset(args, 0, sizeof *args);
    if (check_types(kind, t, d_e4m3) || check_sizes(kind, t, expected_m, args, swiglu) ||
        check_layouts(kind, t, args, d_e4m3) ||
        (sfd && check_sfd(kind, t, sfd, args, sfd_ld, swiglu)))
        return -1;
    *device = -1;
    if (sfd && qgpy_check_device(sfd, device))
        return -1;
    for (int i = 0; i < QGPY_SLOTS; i++)
        if (t[i].t && qgpy_check_device(&t[i], device))
            return -1;
    args->a = qgpy_address(&t[QGPY_A]);
    args->sfa = qgpy_address(&t[QGPY_SFA]);
    args->b = qgpy_address(&t[QGPY_B]);
    args->sfb = qgpy_address(&t[QGPY_SFB]);
    args->d = qgpy_address(&t[QGPY_D]);
    if (kind == QG_GEMM_GROUPED_CONTIGUOUS)
        args->m_indices = qgpy_address(&t[QGPY_IDX]);
    else if (kind == QG_GEMM_GROUPED_MASKED)
        args->masked_m = qgpy_address(&t[QGPY_IDX]);
    else if (kind == QG_GEMM_GROUPED_PSUM)
        args->group_ends = qgpy_address(&t[QGPY_IDX]);
    else if (kind == QG_GEMM_WGRAD && t[QGPY_IDX].t)
        args->c = qgpy_address(&t[QGPY_IDX]); /* d's own address when c is d: in place */
    return 0;
}

int qgpy_gemm_args(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS], int expected_m,
                   qg_gemm_args *args, int *device)
{
    return gemm_args(kind, t, expected_m, args, device, NULL, NULL, 0);
}

static int check_sfd(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS], const qgpy_tensor *sfd,
                     const qg_gemm_args *args, int64_t *sfd_ld, int swiglu)
{
    /* the next GEMM's sfa layout: [(G,) M, ceil(N/128)] float32, M-major */
    const int masked = kind == QG_GEMM_GROUPED_MASKED;
    if (qgpy_check_dtype(sfd, QGPY_F32) ||
        qgpy_check_ndim(sfd, masked ? 3 : 2,
                        swiglu ? (masked ? "[G, M, ceil(N/256)]" : "[M, ceil(N/256)]")
                               : (masked ? "[G, M, ceil(N/128)]" : "[M, ceil(N/128)]")) ||
        (masked && qgpy_check_dim(sfd, 0, args->num_groups, "G, from b")) ||
        qgpy_check_dim(sfd, -2, args->m, "M, from a") ||
        (swiglu ? qgpy_check_dim(sfd, -1, ceil_div(args->n / 2, 128), "ceil(N/256), N from b")
                : qgpy_check_dim(sfd, -1, ceil_div(args->n, 128), "ceil(N/128), N from b")) ||
        scales_layout(sfd, 'M', "sfd_ld", sfd_ld) ||
        (!is_empty(sfd) && qgpy_check_aligned(sfd)) || qgpy_check_writable(sfd) ||
        qgpy_check_no_overlap(&t[QGPY_D], sfd))
        return -1;
    for (int i = 0; i < QGPY_SLOTS; i++)
        if (i != QGPY_D && qgpy_check_no_overlap(sfd, &t[i]))
            return -1;
    return 0;
}

int qgpy_gemm_fp8out_args(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS],
                          const qgpy_tensor *sfd, int expected_m, int ue8m0, qg_gemm_args *args,
                          qg_fp8_out *out, int *device)
{
    if (kind == QG_GEMM_WGRAD)
        return qgpy_errorf(PyExc_ValueError, "qgemm: the weight gradient has no e4m3-D form");
    memset(out, 0, sizeof *out);
    if (gemm_args(kind, t, expected_m, args, device, sfd, &out->sfd_ld, 0))
        return -1;
    out->sfd = qgpy_address(sfd);
    out->ue8m0 = ue8m0 != 0;
    return 0;
}

int qgpy_gemm_swiglu_args(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS],
                          const qgpy_tensor *sfd, const qgpy_tensor *row_weight, int expected_m,
                          int ue8m0, float limit, qg_gemm_args *args, qg_swiglu_out *out,
                          int *device)
{
    if (kind != QG_GEMM_DENSE && kind != QG_GEMM_GROUPED_CONTIGUOUS && kind != QG_GEMM_GROUPED_MASKED)
        return qgpy_errorf(PyExc_ValueError, "qgemm: the SwiGLU GEMMs are dense, contiguous or masked");
    memset(out, 0, sizeof *out);
    /* row_weight's type and shape first (before any device is asked for), its
     * rows those of a: [M, K] or masked [G, M, K] (a's own checks follow) */
    const qgpy_tensor *a = &t[QGPY_A];
    if (row_weight->t && a->t && a->t->ndim >= 2) {
        const int64_t rows = qgpy_dim(a, -2) * (a->t->ndim == 3 ? qgpy_dim(a, 0) : 1);
        int64_t numel = 1;
        for (int i = 0; i < row_weight->t->ndim; i++)
            numel *= qgpy_dim(row_weight, i);
        if (qgpy_check_dtype(row_weight, QGPY_F32) || check_contiguous(row_weight))
            return -1;
        if (numel != rows || row_weight->t->ndim < 1 || row_weight->t->ndim > 2) {
            char sh[160];
            return qgpy_errorf(PyExc_ValueError,
                               "qgemm: row_weight must hold one float32 per row of a (%" PRId64
                               "%s), got shape %s", rows,
                               kind == QG_GEMM_GROUPED_MASKED ? ": [G, M] or [G * M]" : ": [M]",
                               qgpy_shape_str(row_weight, sh, sizeof sh));
        }
    }
    if (gemm_args(kind, t, expected_m, args, device, sfd, &out->sfd_ld, 1))
        return -1;
    if (row_weight->t) {
        if ((!is_empty(row_weight) && qgpy_check_aligned(row_weight)) ||
            qgpy_check_device(row_weight, device) || qgpy_check_no_overlap(&t[QGPY_D], row_weight) ||
            qgpy_check_no_overlap(sfd, row_weight))
            return -1;
        out->row_weight = (const float *)qgpy_address(row_weight);
    }
    out->sfd = qgpy_address(sfd);
    out->ue8m0 = ue8m0 != 0;
    out->swiglu_limit = limit; /* (the library checks it: >= 0, finite) */
    return 0;
}

/*
 * The k-grouped weight gradient (QG_GEMM_K_GROUPED): t[QGPY_IDX] holds c (or
 * nothing). a [M * sum(K)] and b [N * sum(K)] flat e4m3 (group g's rows K_g
 * apart, as DeepGEMM lays them out), sfa [M, sum(K)/128] and sfb [N,
 * sum(K)/128] M-/N-major, d (and c) FP32 [G, M, N] with packed groups; ks the
 * G group sizes (host, checked by the library: multiples of 128).
 */
int qgpy_k_grouped_args(const qgpy_tensor t[QGPY_SLOTS], const int32_t *ks, int num_groups,
                        qg_gemm_args *args, int *device)
{
    memset(args, 0, sizeof *args);
    const qgpy_tensor *a = &t[QGPY_A], *sfa = &t[QGPY_SFA], *b = &t[QGPY_B], *sfb = &t[QGPY_SFB],
                      *d = &t[QGPY_D], *c = &t[QGPY_IDX];
    if (qgpy_check_dtype(a, QGPY_E4M3) || qgpy_check_ndim(a, 1, "[M * sum(K)]") ||
        qgpy_check_dtype(sfa, QGPY_F32) || qgpy_check_ndim(sfa, 2, "[M, sum(K)/128]") ||
        qgpy_check_dtype(b, QGPY_E4M3) || qgpy_check_ndim(b, 1, "[N * sum(K)]") ||
        qgpy_check_dtype(sfb, QGPY_F32) || qgpy_check_ndim(sfb, 2, "[N, sum(K)/128]") ||
        qgpy_check_dtype(d, QGPY_F32) || qgpy_check_ndim(d, 3, "[G, M, N]") ||
        (c->t && (qgpy_check_dtype(c, QGPY_F32) || qgpy_check_ndim(c, 3, "[G, M, N]"))))
        return -1;
    const int64_t g = qgpy_dim(d, 0), m = qgpy_dim(d, 1), n = qgpy_dim(d, 2);
    int64_t total = 0;
    for (int i = 0; i < num_groups; i++)
        total += ks[i] > 0 ? ks[i] : 0; /* the library says which ks[i] is wrong */
    if (g != num_groups)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: d must be [G, M, N] with G = len(ks) = %d, got G = %" PRId64,
                           num_groups, g);
    if (check_int_range("M", m) || check_int_range("N", n) || check_int_range("sum(K)", total))
        return -1;
    if (qgpy_check_dim(a, 0, m * total, "M * sum(K), M from d, K from ks") ||
        qgpy_check_dim(b, 0, n * total, "N * sum(K), N from d, K from ks") ||
        qgpy_check_dim(sfa, 0, m, "M, from d") ||
        qgpy_check_dim(sfa, 1, total / 128, "sum(K)/128, K from ks") ||
        qgpy_check_dim(sfb, 0, n, "N, from d") ||
        qgpy_check_dim(sfb, 1, total / 128, "sum(K)/128, K from ks") ||
        (c->t && (qgpy_check_dim(c, 0, g, "G, from d") || qgpy_check_dim(c, 1, m, "M, from d") ||
                  qgpy_check_dim(c, 2, n, "N, from d"))))
        return -1;
    if ((qgpy_dim(a, 0) > 1 && qgpy_stride(a, 0) != 1) || (qgpy_dim(b, 0) > 1 && qgpy_stride(b, 0) != 1))
        return qgpy_errorf(PyExc_ValueError, "qgemm: a and b must be contiguous (flat)");
    if (scales_layout(sfa, 'M', "sfa_ld", &args->sfa_ld) ||
        scales_layout(sfb, 'N', "sfb_ld", &args->sfb_ld) ||
        matrix_ld(d, 4, &args->ldd) || (c->t && matrix_ld(c, 4, &args->ldc)))
        return -1;
    for (int i = 0; i < QGPY_SLOTS; i++)
        if (t[i].t && !is_empty(&t[i]) && qgpy_check_aligned(&t[i]))
            return -1;
    if (qgpy_check_writable(d))
        return -1;
    for (int i = QGPY_A; i <= QGPY_SFB; i++)
        if (qgpy_check_no_overlap(d, &t[i]))
            return -1;
    *device = -1;
    for (int i = 0; i < QGPY_SLOTS; i++)
        if (t[i].t && qgpy_check_device(&t[i], device))
            return -1;
    args->m = (int)m;
    args->n = (int)n;
    args->k = (int)total;
    args->num_groups = num_groups;
    args->ks = ks;
    args->a = qgpy_address(a);
    args->sfa = qgpy_address(sfa);
    args->b = qgpy_address(b);
    args->sfb = qgpy_address(sfb);
    args->d = qgpy_address(d);
    if (c->t)
        args->c = qgpy_address(c); /* d's own address when c is d: in place */
    return 0;
}
