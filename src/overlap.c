/*
 * overlap.c -- the output of a GEMM may not alias its inputs (issue 53): D
 * written while A, B, SFA, SFB (or the grouped kinds' index arrays, or a
 * separate C) are still read gives silently wrong results, so a call whose
 * D extent overlaps any input's is refused, naming both arguments.
 *
 * Invariants:
 *  - ranges are extents: [first byte, one past the last byte) of a strided
 *    matrix, computed from its rows, columns, leading dimension and element
 *    size; two extents that interleave without sharing a byte (D in the
 *    stride padding of A) are refused too (the check is conservative);
 *  - an empty range (NULL pointer, no rows or columns) overlaps nothing;
 *    arithmetic saturates, so no extent wraps around the address space;
 *  - only the output is checked against the inputs: inputs may share memory
 *    (A == B is a legal Gram product), and C == D is the in-place
 *    accumulation of the weight gradient (a C that overlaps D without being
 *    it is refused);
 *  - nothing here touches the device or reads memory: the pointers are
 *    numbers, so the checks run on the CPU (tests/test_overlap.c).
 */
#include "internal.h"

#include <stdint.h>

/* a * b + c, saturated at UINT64_MAX. */
static uint64_t mul_add_sat(uint64_t a, uint64_t b, uint64_t c) {
    if (a && b > UINT64_MAX / a) return UINT64_MAX;
    const uint64_t p = a * b;
    return p > UINT64_MAX - c ? UINT64_MAX : p + c;
}

qg_status qg__check_batch_stride(int64_t stride, int elem_bytes, const char *fn, const char *name) {
    if (stride < 0 || stride >= ((int64_t)1 << 40) / elem_bytes || (stride * elem_bytes) % 16)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: %s must be >= 0, a multiple of 16 bytes (%d elements) and below "
                        "2^40 bytes, got %lld", fn, name, 16 / elem_bytes, (long long)stride);
    return QG_SUCCESS;
}

qg_byte_range qg__batched_range(const char *name, const void *ptr, uint64_t rows, uint64_t cols,
                                uint64_t ld, uint64_t elem_bytes, uint64_t batches, int64_t stride) {
    qg_byte_range r = qg__matrix_range(name, ptr, rows, cols, ld, elem_bytes);
    if (r.end > r.begin && batches > 1) {
        const uint64_t extra = (batches - 1) * (uint64_t)stride * elem_bytes; /* < 2^52 */
        r.end = extra > (uint64_t)(UINTPTR_MAX - r.end) ? UINTPTR_MAX : r.end + (uintptr_t)extra;
    }
    return r;
}

qg_byte_range qg__matrix_range(const char *name, const void *ptr, uint64_t rows, uint64_t cols,
                               uint64_t ld, uint64_t elem_bytes) {
    qg_byte_range r = {name, (uintptr_t)ptr, (uintptr_t)ptr};
    if (!ptr || !rows || !cols || !elem_bytes) return r;
    if (ld < cols) ld = cols; /* (validation refuses it; the extent covers the row anyway) */
    /* ((rows - 1) * ld + cols) * elem_bytes bytes from ptr */
    const uint64_t elems = mul_add_sat(rows - 1, ld, cols);
    const uint64_t bytes = mul_add_sat(elems, elem_bytes, 0);
    const uint64_t begin = (uint64_t)(uintptr_t)ptr;
    r.end = (uintptr_t)(bytes > (uint64_t)UINTPTR_MAX - begin ? (uint64_t)UINTPTR_MAX
                                                                 : begin + bytes);
    return r;
}

qg_status qg__check_no_overlap(const char *fn, const qg_byte_range *out,
                               const qg_byte_range *inputs, int num_inputs) {
    if (!out || out->begin >= out->end) return QG_SUCCESS;
    for (int i = 0; i < num_inputs; i++) {
        const qg_byte_range *in = &inputs[i];
        if (in->begin >= in->end || in->begin >= out->end || out->begin >= in->end) continue;
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->%s (bytes [%#llx, %#llx)) overlaps args->%s (bytes [%#llx, "
                        "%#llx)): the output may not alias an input (it would be written while "
                        "the input is read); pass separate memory",
                        fn ? fn : "qgemm", out->name, (unsigned long long)out->begin,
                        (unsigned long long)out->end, in->name, (unsigned long long)in->begin,
                        (unsigned long long)in->end);
    }
    return QG_SUCCESS;
}

/* The inputs of a GEMM call (their extents into in[], at most 8), and the
 * extent of D with elements of d_bytes, d_cols columns (n, or n / 2 under
 * SwiGLU). */
static int gemm_inputs(qg_gemm_kind kind, const qg_gemm_args *a, int d_bytes, uint64_t d_cols,
                       qg_byte_range *d_out, qg_byte_range *in) {
    const bool kgrouped = kind == QG_GEMM_K_GROUPED, masked = kind == QG_GEMM_GROUPED_MASKED;
    const bool wgrad = qg__one_d(kind);
    const uint64_t m = (uint64_t)a->m, n = (uint64_t)a->n, k = (uint64_t)a->k;
    const uint64_t g = a->num_groups > 0 ? (uint64_t)a->num_groups : 1;
    const uint64_t kb = (k + 127) / 128, nb = (n + 127) / 128;
    /* B has G groups of n rows in the grouped kinds of one K (docs/DESIGN.md §1). */
    const bool b_groups = kind == QG_GEMM_GROUPED_CONTIGUOUS || masked ||
                          kind == QG_GEMM_GROUPED_PSUM;
    const uint64_t d_rows = kgrouped || masked ? g * m : m;
    const uint64_t ld = (uint64_t)(a->ldd > 0 ? a->ldd : 0);
    *d_out = qg__matrix_range("d", a->d, d_rows, d_cols, ld, (uint64_t)d_bytes);
    int num = 0;
    if (kgrouped) {
        /* A_g [m][K_g] packed one after another: m * k bytes; B likewise n * k. */
        in[num++] = qg__matrix_range("a", a->a, 1, m * k, 0, 1);
        in[num++] = qg__matrix_range("b", a->b, 1, n * k, 0, 1);
    } else {
        in[num++] = qg__matrix_range("a", a->a, masked ? g * m : m, k,
                                     (uint64_t)(a->lda > 0 ? a->lda : 0), 1);
        in[num++] = qg__matrix_range("b", a->b, b_groups ? g * n : n, k,
                                     (uint64_t)(a->ldb > 0 ? a->ldb : 0), 1);
    }
    /* SFA [K blocks (masked: x G)][sfa_ld], m used per row */
    in[num++] = qg__matrix_range("sfa", a->sfa, masked ? g * kb : kb, m,
                                 (uint64_t)(a->sfa_ld > 0 ? a->sfa_ld : 0), 4);
    if (wgrad) /* SFB [K blocks][sfb_ld], n used per row */
        in[num++] = qg__matrix_range("sfb", a->sfb, kb, n,
                                     (uint64_t)(a->sfb_ld > 0 ? a->sfb_ld : 0), 4);
    else /* SFB [G][ceil(n/128)][K blocks], dense */
        in[num++] = qg__matrix_range("sfb", a->sfb, 1, (b_groups ? g : 1) * nb * kb, 0, 4);
    if (kind == QG_GEMM_GROUPED_CONTIGUOUS)
        in[num++] = qg__matrix_range("m_indices", a->m_indices, 1, m, 0, 4);
    if (masked) in[num++] = qg__matrix_range("masked_m", a->masked_m, 1, g, 0, 4);
    if (kind == QG_GEMM_GROUPED_PSUM)
        in[num++] = qg__matrix_range("group_ends", a->group_ends, 1, g, 0, 4);
    if (wgrad && a->c && (const void *)a->c != a->d) /* c == d: in place, by design */
        in[num++] = qg__matrix_range("c", a->c, d_rows, n, (uint64_t)(a->ldc > 0 ? a->ldc : 0), 4);
    return num;
}

qg_status qg__check_gemm_no_overlap(const char *fn, qg_gemm_kind kind, const qg_gemm_args *a) {
    if (!a || a->m <= 0 || a->n <= 0 || a->k < 0) return QG_SUCCESS; /* nothing is written */
    qg_byte_range d, in[8];
    const int num = gemm_inputs(kind, a, qg__one_d(kind) ? 4 : 2, (uint64_t)a->n, &d, in);
    return qg__check_no_overlap(fn, &d, in, num);
}

qg_status qg__check_gemm_fp8_d_no_overlap(const char *fn, qg_gemm_kind kind, const qg_gemm_args *a,
                                          int64_t d_cols, const float *sfd, int64_t sfd_ld,
                                          const float *row_weight) {
    if (!a || a->m <= 0 || a->n <= 0 || a->k < 0 || d_cols <= 0) return QG_SUCCESS; /* nothing is written */
    qg_byte_range d, in[10];
    int num = gemm_inputs(kind, a, 1, (uint64_t)d_cols, &d, in);
    if (row_weight) /* [rows]: G x M masked */
        in[num++] = qg__matrix_range("row_weight", row_weight, 1,
                                     (uint64_t)a->m * (kind == QG_GEMM_GROUPED_MASKED && a->num_groups > 0
                                                           ? (uint64_t)a->num_groups : 1),
                                     0, 4);
    qg_status st = qg__check_no_overlap(fn, &d, in, num);
    if (st != QG_SUCCESS) return st;
    /* the scales [G][ceil(n/128)][sfd_ld] (G: masked only), m used per row;
     * neither over an input nor over D */
    const uint64_t g = kind == QG_GEMM_GROUPED_MASKED && a->num_groups > 0 ? (uint64_t)a->num_groups : 1;
    const qg_byte_range sf = qg__matrix_range("sfd", sfd, g * (((uint64_t)d_cols + 127) / 128),
                                              (uint64_t)a->m, (uint64_t)(sfd_ld > 0 ? sfd_ld : 0), 4);
    in[num] = d;
    if (sf.begin >= sf.end) return QG_SUCCESS;
    for (int i = 0; i <= num; i++) {
        if (in[i].begin >= in[i].end || in[i].begin >= sf.end || sf.begin >= in[i].end) continue;
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: out->sfd (bytes [%#llx, %#llx)) overlaps args->%s (bytes [%#llx, "
                        "%#llx)): the output may not alias an input or D; pass separate memory",
                        fn ? fn : "qgemm", (unsigned long long)sf.begin, (unsigned long long)sf.end,
                        in[i].name, (unsigned long long)in[i].begin, (unsigned long long)in[i].end);
    }
    return QG_SUCCESS;
}
