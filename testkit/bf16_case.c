/*
 * bf16_case.c -- the testkit's BF16 GEMM case (qgtk_cases.h): random bf16
 * inputs in the case's layout and kind, D poisoned (or holding C), the
 * library's call, D checked against an fp64 product of the bf16 inputs (plus
 * C) with DeepGEMM's metric; rows the call must not write (padding segments,
 * masked-out rows) must stay poisoned. Then, on request, the same call timed.
 */
#include "qgtk_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON16 0xFFFFu     /* a bf16 NaN */
#define POISON32 0xFFFFFFFFu /* an FP32 NaN */

const char *qgtk_bf16_layout_name(qg_major a_major, qg_major b_major) {
    static const char *const names[2][2] = {{"NT", "NN"}, {"TN", "TT"}};
    return names[a_major == QG_MAJOR_MN][b_major == QG_MAJOR_MN];
}

/* The inputs' generator: an LCG whose values are multiples of 2^-15 in [-1, 1). */
static double rnd_unit(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return ((*s >> 8) & 0xFFFF) / 32768.0 - 1.0;
}

/* Host data of one case and its reference. */
typedef struct {
    const qgtk_bf16_case *c;
    int sample;
    uint16_t *a, *b;
    float *cmat;
    int32_t *idx;    /* m_indices (contiguous), masked_m (masked), group_ends (psum) */
    int32_t ks[128];
    int64_t lda, ldb, ldd;
    size_t a_elems, b_elems, d_rows;
    double *ref;     /* d_rows x n; NAN where D must stay untouched */
    bool *skip;      /* rows written but not checked (opts->sample) */
} host_case;

static double bf(uint16_t v) { return (double)qg_bf16_decode(v); }

/* Row r of D's group and whether the call writes it. */
static int row_group(const host_case *h, int64_t r, bool *written) {
    const qgtk_bf16_case *c = h->c;
    *written = true;
    if (c->kind == QG_GEMM_GROUPED_CONTIGUOUS) {
        const int g = h->idx[r / 128 * 128];
        *written = g >= 0 && g < c->groups;
        return g;
    }
    if (c->kind == QG_GEMM_GROUPED_PSUM) {
        int64_t start = 0;
        for (int g = 0; g < c->groups; ++g) {
            const int64_t end = h->idx[g];
            if (r >= start && r < end) return g;
            start = (end + 127) / 128 * 128;
        }
        *written = false;
        return -1;
    }
    if (c->kind == QG_GEMM_GROUPED_MASKED || c->kind == QG_GEMM_K_GROUPED) {
        const int g = (int)(r / c->m);
        if (c->kind == QG_GEMM_GROUPED_MASKED) *written = r % c->m < h->idx[g];
        return g;
    }
    return 0;
}

static void ref_row(void *user, int64_t r, int worker) {
    (void)worker;
    host_case *h = user;
    const qgtk_bf16_case *c = h->c;
    bool written;
    const int g = row_group(h, r, &written);
    h->skip[r] = written && !qgtk_sampled(r, (int64_t)h->d_rows, h->sample);
    for (int n = 0; n < c->n; ++n) {
        if (!written || h->skip[r]) {
            h->ref[r * c->n + n] = NAN;
            continue;
        }
        double s = 0;
        if (c->kind == QG_GEMM_K_GROUPED) {
            int64_t k0 = 0;
            for (int q = 0; q < g; ++q) k0 += h->ks[q];
            const int64_t mrow = r % c->m;
            for (int64_t k = k0; k < k0 + h->ks[g]; ++k)
                s += bf(h->a[k * h->lda + mrow]) * bf(h->b[k * h->ldb + n]);
        } else {
            const int64_t arow = r; /* masked: a [G][m] rows as D's */
            for (int k = 0; k < c->k; ++k) {
                const double av = c->a_major == QG_MAJOR_MN ? bf(h->a[(int64_t)k * h->lda + arow])
                                                            : bf(h->a[arow * h->lda + k]);
                const int64_t bg = (int64_t)(g < 0 ? 0 : g);
                const double bv = c->b_major == QG_MAJOR_MN
                                      ? bf(h->b[(bg * c->k + k) * h->ldb + n])
                                      : bf(h->b[(bg * c->n + n) * h->ldb + k]);
                s += av * bv;
            }
        }
        if (c->c_mode) s += (double)h->cmat[r * h->ldd + n];
        h->ref[r * c->n + n] = s;
    }
}

typedef struct {
    qg_context *ctx;
    qg_gemm_kind kind;
    const qg_bf16_gemm_args *args;
} bf16_call;

static qg_status run_call(void *user, CUstream stream) {
    const bf16_call *x = user;
    const qg_bf16_gemm_args *a = x->args;
    switch (x->kind) {
    case QG_GEMM_DENSE: return qg_bf16_gemm(x->ctx, a, stream);
    case QG_GEMM_GROUPED_CONTIGUOUS: return qg_m_grouped_bf16_gemm_contiguous(x->ctx, a, stream);
    case QG_GEMM_GROUPED_PSUM: return qg_m_grouped_bf16_gemm_psum(x->ctx, a, stream);
    case QG_GEMM_GROUPED_MASKED: return qg_m_grouped_bf16_gemm_masked(x->ctx, a, stream);
    case QG_GEMM_K_GROUPED: return qg_k_grouped_bf16_gemm(x->ctx, a, stream);
    default: return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qgtk_bf16_case_run: kind %d is no "
                             "BF16 case kind", (int)x->kind);
    }
}

/* Work of the call: FLOPs over the rows it writes, bytes of A and B read and
 * D (and C) moved once. */
static void workload(const host_case *h, int k_total, qgtk_case_result *res) {
    const qgtk_bf16_case *c = h->c;
    int64_t rows = 0;
    for (size_t r = 0; r < h->d_rows; ++r) {
        bool written;
        row_group(h, (int64_t)r, &written);
        rows += written;
    }
    const double esz = c->d_fp32 ? 4 : 2;
    const double b_mats = c->kind == QG_GEMM_K_GROUPED ? 1 : c->groups;
    res->flops = 2.0 * (c->kind == QG_GEMM_K_GROUPED ? (double)c->m : (double)rows) * c->n * k_total;
    res->bytes = (c->kind == QG_GEMM_K_GROUPED ? (double)c->m * k_total : (double)rows * k_total) * 2 +
                 b_mats * (double)c->n * k_total * 2 + (double)rows * c->n * esz * (c->c_mode ? 2 : 1);
}

bool qgtk_bf16_case_run(qg_context *ctx, CUstream stream, const qgtk_bf16_case *c,
                        const qgtk_case_opts *opts, qgtk_case_result *res) {
    memset(res, 0, sizeof *res);
    res->diff = NAN;
    const qg_driver *drv;
    CUcontext cu, popped;
    if (!qg__context_cuda(ctx, &drv, &cu, NULL) || drv->cuCtxPushCurrent(cu) != CUDA_SUCCESS) {
        snprintf(res->why, sizeof res->why, "no device context");
        return false;
    }
    host_case h;
    memset(&h, 0, sizeof h);
    h.c = c;
    h.sample = opts->sample;
    const bool masked = c->kind == QG_GEMM_GROUPED_MASKED, kg = c->kind == QG_GEMM_K_GROUPED;
    const int G = c->groups < 1 ? 1 : c->groups > 128 ? 128 : c->groups;
    int k_total = c->k;
    if (kg) {
        k_total = 0;
        for (int g = 0; g < G; ++g) {
            h.ks[g] = g == 1 ? 0 : 64 * (1 + (g * 3 + 1) % 5);
            k_total += h.ks[g];
        }
    }
    h.lda = c->a_major == QG_MAJOR_MN ? (c->m * (masked ? G : 1) + 7) / 8 * 8 + 8 : c->k + 8;
    h.ldb = c->b_major == QG_MAJOR_MN ? c->n + 8 : c->k + 8;
    h.ldd = c->n + 8;
    const int64_t a_rows = c->a_major == QG_MAJOR_MN ? k_total : (int64_t)c->m * (masked ? G : 1);
    const int64_t b_rows = c->b_major == QG_MAJOR_MN ? (int64_t)k_total * (kg ? 1 : G)
                                                     : (int64_t)c->n * G;
    h.a_elems = (size_t)(a_rows * h.lda);
    h.b_elems = (size_t)(b_rows * h.ldb);
    h.d_rows = (size_t)c->m * (masked || kg ? G : 1);
    const size_t d_elems = h.d_rows * (size_t)h.ldd, d_bytes = d_elems * (c->d_fp32 ? 4 : 2);
    h.a = malloc(h.a_elems * 2 + 2);
    h.b = malloc(h.b_elems * 2 + 2);
    h.ref = malloc(h.d_rows * (size_t)c->n * sizeof(double) + 8);
    h.skip = calloc(h.d_rows + 1, sizeof *h.skip);
    h.cmat = malloc(d_elems * 4 + 4);
    h.idx = calloc((size_t)(c->m + G + 1), 4);
    uint8_t *got = malloc(d_bytes + 4), *c_bytes = malloc(d_bytes + 4);
    CUdeviceptr da = 0, db = 0, dd = 0, dc = 0, di = 0;
    if (!h.a || !h.b || !h.ref || !h.skip || !h.cmat || !h.idx || !got || !c_bytes) {
        snprintf(res->why, sizeof res->why, "out of host memory");
        goto done;
    }
    unsigned s = (unsigned)(opts->seed ^ (opts->seed >> 32));
    for (size_t i = 0; i < h.a_elems; ++i) h.a[i] = qg_bf16_encode((float)rnd_unit(&s));
    for (size_t i = 0; i < h.b_elems; ++i) h.b[i] = qg_bf16_encode((float)rnd_unit(&s));
    /* C's values are bf16 numbers, so that C in either type is the same C */
    for (size_t i = 0; i < d_elems; ++i)
        h.cmat[i] = qg_bf16_decode(qg_bf16_encode((float)(4 * rnd_unit(&s))));
    if (c->kind == QG_GEMM_GROUPED_CONTIGUOUS && opts->group_pattern == 1) {
        /* runs of 128-row segments: (expert, segments), -1 padding runs of 1
         * and 2 segments, so pairs of m-blocks fall inside one expert, across
         * two experts, across an expert and padding, and inside padding; the
         * last rows of a segment -1 here and there (stored as their segment's
         * expert: only a segment's first row is read) */
        static const int runs[][2] = {{0, 3}, {-1, 1}, {1, 2}, {2, 1}, {-1, 2}, {3, 5},
                                      {1, 1}, {-1, 3}, {0, 2}, {2, 4}};
        int seg = 0;
        for (int i = 0; seg * 128 < c->m; i = (i + 1) % 10)
            for (int j = 0; j < runs[i][1] && seg * 128 < c->m; ++j, ++seg)
                for (int r = seg * 128; r < c->m && r < seg * 128 + 128; ++r)
                    h.idx[r] = runs[i][0] < 0 ? -1
                               : r % 128 >= 100 && seg % 3 == 1 ? -1
                                                                : runs[i][0] % G;
    } else if (c->kind == QG_GEMM_GROUPED_CONTIGUOUS) {
        for (int seg = 0; seg < (c->m + 127) / 128; ++seg) /* one padding segment in five */
            for (int r = seg * 128; r < c->m && r < seg * 128 + 128; ++r)
                h.idx[r] = seg % 5 == 3 ? -1 : seg % G;
    } else if (masked && opts->group_pattern == 1) {
        /* M_max, empty, one row, one whole block, 2 blocks + 1 row (odd at
         * 128 rows), 2 whole blocks, M_max - 1, 64 + 1 rows (one 128-row block,
         * two 64-row blocks), 0 again ... */
        const int m = c->m;
        const int rows[] = {m, 0, 1, 128, 257, 256, m - 1, 65, 0, 3 * 128 + 7};
        for (int g = 0; g < G; ++g) {
            const int v = rows[g % 10];
            h.idx[g] = v < 0 ? 0 : v > m ? m : v;
        }
    } else if (masked) {
        for (int g = 0; g < G; ++g) h.idx[g] = g == 0 ? c->m : g == 1 ? 0 : (c->m * g) / (G + 1) + 3;
    } else if (c->kind == QG_GEMM_GROUPED_PSUM && opts->group_pattern == 1) {
        /* group sizes as the masked pattern's, each group starting at the
         * previous one's end rounded up to 128 */
        static const int sizes[] = {300, 0, 1, 128, 257, 256, 129, 65, 0, 391};
        int64_t start = 0;
        for (int g = 0; g < G; ++g) {
            int64_t end = start + sizes[g % 10];
            if (end > c->m) end = c->m;
            h.idx[g] = (int32_t)end;
            start = (end + 127) / 128 * 128;
            if (start > c->m) start = c->m;
        }
    } else if (c->kind == QG_GEMM_GROUPED_PSUM) {
        int64_t start = 0;
        for (int g = 0; g < G; ++g) {
            int64_t end = start + (g == 1 ? 0 : (c->m / G) - 37 * (g % 2));
            if (end > c->m) end = c->m;
            if (end < start) end = start;
            h.idx[g] = (int32_t)end;
            start = (end + 127) / 128 * 128;
            if (start > c->m) start = c->m;
        }
    }
    qgtk_parallel_for((int64_t)h.d_rows, qgtk_num_workers(), ref_row, &h);
    workload(&h, k_total, res);

    for (size_t i = 0; i < d_elems; ++i) { /* C in D's type */
        if (c->d_fp32) memcpy(c_bytes + i * 4, &h.cmat[i], 4);
        else {
            const uint16_t v = qg_bf16_encode(h.cmat[i]);
            memcpy(c_bytes + i * 2, &v, 2);
        }
    }
    if (drv->cuMemAlloc(&da, h.a_elems * 2 + 16) || drv->cuMemAlloc(&db, h.b_elems * 2 + 16) ||
        drv->cuMemAlloc(&dd, d_bytes + 16) || drv->cuMemAlloc(&dc, d_bytes + 16) ||
        drv->cuMemAlloc(&di, (size_t)(c->m + G + 1) * 4)) {
        snprintf(res->why, sizeof res->why, "cuMemAlloc failed");
        goto done;
    }
    drv->cuMemcpyHtoD(da, h.a, h.a_elems * 2);
    drv->cuMemcpyHtoD(db, h.b, h.b_elems * 2);
    drv->cuMemcpyHtoD(dc, c_bytes, d_bytes);
    drv->cuMemcpyHtoD(di, h.idx, (size_t)(c->m + G + 1) * 4);
    if (c->c_mode == 2) drv->cuMemcpyHtoD(dd, c_bytes, d_bytes); /* D holds C */
    else drv->cuMemsetD8(dd, 0xFF, d_bytes);                    /* poison */
    /* those ran on the legacy default stream, which a non-blocking stream
     * does not wait for (the memset returns before it runs, a pageable
     * upload before its DMA lands): done before the call, or the poison can
     * land after the library's copy of C into D */
    if (drv->cuCtxSynchronize() != CUDA_SUCCESS) {
        snprintf(res->why, sizeof res->why, "cuCtxSynchronize failed");
        goto done;
    }
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = c->m, a.n = c->n, a.k = k_total, a.num_groups = G;
    a.a = (void *)(uintptr_t)da, a.lda = h.lda, a.a_major = c->a_major;
    a.b = (void *)(uintptr_t)db, a.ldb = h.ldb, a.b_major = c->b_major;
    a.d = (void *)(uintptr_t)dd, a.ldd = h.ldd, a.d_fp32 = c->d_fp32;
    a.c = c->c_mode == 1 ? (const void *)(uintptr_t)dc : c->c_mode == 2 ? (const void *)a.d : NULL;
    a.ldc = h.ldd;
    a.m_indices = a.masked_m = a.group_ends = (const int32_t *)(uintptr_t)di;
    a.ks = h.ks;
    a.expected_m = masked ? c->m / 2 : 0;
    bf16_call call = {ctx, c->kind, &a};
    qg_status st = run_call(&call, stream);
    if (st != QG_SUCCESS) {
        snprintf(res->why, sizeof res->why, "%s: %s", qg_status_string(st), qg_last_error());
        goto done;
    }
    if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
        snprintf(res->why, sizeof res->why, "the kernel faulted");
        goto done;
    }
    drv->cuMemcpyDtoH(got, dd, d_bytes);
    {
        uint64_t hsh = 1469598103934665603ull;
        for (size_t i = 0; i < d_bytes; ++i) hsh = (hsh ^ got[i]) * 1099511628211ull;
        res->d_hash = hsh;
    }
    qgtk_diff_acc acc;
    memset(&acc, 0, sizeof acc);
    int64_t unwritten = 0, overwritten = 0;
    for (size_t r = 0; r < h.d_rows; ++r)
        for (int n = 0; n < c->n; ++n) {
            const size_t i = r * (size_t)h.ldd + (size_t)n;
            double x;
            uint32_t bits;
            if (c->d_fp32) {
                float f;
                memcpy(&f, got + i * 4, 4);
                memcpy(&bits, &f, 4);
                x = f;
            } else {
                uint16_t v;
                memcpy(&v, got + i * 2, 2);
                bits = v;
                x = bf(v);
            }
            const double y = h.ref[r * (size_t)c->n + (size_t)n];
            if (h.skip[r]) { /* written, not sampled: at least not left poisoned */
                unwritten += isnan(x);
                continue;
            }
            if (isnan(y)) {
                overwritten += bits != (c->d_fp32 ? POISON32 : POISON16);
                continue;
            }
            if (isnan(x)) unwritten++;
            else qgtk_diff_add(&acc, &x, &y, 1);
        }
    res->diff = qgtk_diff_result(&acc);
    if (!(unwritten == 0 && overwritten == 0 && res->diff < 1e-5)) {
        snprintf(res->why, sizeof res->why,
                 "diff %.3g, %lld elements unwritten, %lld written that must not be", res->diff,
                 (long long)unwritten, (long long)overwritten);
        goto done;
    }
    res->passed = true;
    if (opts->runs > 0) {
        st = qgtk_time_us(ctx, stream, opts->flush, run_call, &call, opts->warmup, opts->runs, &res->t);
        if (st != QG_SUCCESS) {
            res->passed = false;
            snprintf(res->why, sizeof res->why, "timing: %s", qg_last_error());
        }
        res->timed = res->passed;
    }
done:
    if (da) drv->cuMemFree(da);
    if (db) drv->cuMemFree(db);
    if (dd) drv->cuMemFree(dd);
    if (dc) drv->cuMemFree(dc);
    if (di) drv->cuMemFree(di);
    free(got);
    free(c_bytes);
    free(h.a);
    free(h.b);
    free(h.ref);
    free(h.skip);
    free(h.cmat);
    free(h.idx);
    drv->cuCtxPopCurrent(&popped);
    return res->passed;
}
