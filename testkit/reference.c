/*
 * reference.c -- the CPU reference GEMM (qgtk_reference_gemm), the accuracy
 * metric (qgtk_calc_diff) and the small thread pool both the reference and the
 * test harness use (qgtk_parallel_for).
 *
 * The reference dequantizes exactly: decode(e4m3) * scale is formed in double
 * (a 4-bit times a 24-bit significand: no rounding), and products are summed
 * in double, so the only error left is double rounding (~1e-16 relative),
 * far below the 1e-5 bound the tests apply (docs/DESIGN.md §7).
 *
 * Work is split into units of (group, 16 columns of N, 256 rows of the
 * group). A unit dequantizes its 16 B rows once into a per-thread double
 * buffer (16*K doubles: L2-resident for K <= 8192), then streams over its A
 * rows four at a time against them. Units are independent and write disjoint
 * parts of `ref`, so threads share nothing but an atomic counter.
 */
#include "qgtk.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

#define QGTK_MAX_WORKERS 64

int qgtk_num_workers(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    return n > QGTK_MAX_WORKERS ? QGTK_MAX_WORKERS : (int)n;
}

typedef struct {
    atomic_llong next;
    int64_t count;
    qgtk_parallel_fn fn;
    void *user;
} parallel_job;

typedef struct {
    parallel_job *job;
    int worker;
} parallel_worker;

static void *parallel_main(void *arg) {
    parallel_worker *w = arg;
    parallel_job *job = w->job;
    for (;;) {
        int64_t i = atomic_fetch_add(&job->next, 1);
        if (i >= job->count) break;
        job->fn(job->user, i, w->worker);
    }
    return NULL;
}

int qgtk_parallel_for(int64_t count, int max_workers, qgtk_parallel_fn fn, void *user) {
    if (count <= 0) return 0;
    int workers = max_workers < 1 ? 1 : max_workers;
    if (workers > QGTK_MAX_WORKERS) workers = QGTK_MAX_WORKERS;
    if ((int64_t)workers > count) workers = (int)count;

    parallel_job job = {.count = count, .fn = fn, .user = user};
    atomic_init(&job.next, 0);
    parallel_worker ws[QGTK_MAX_WORKERS];
    pthread_t threads[QGTK_MAX_WORKERS];
    int started = 0;
    /* Worker 0 is the calling thread. If a thread cannot be created the
     * others simply take its share: the result is the same. */
    for (int t = 1; t < workers; t++) {
        ws[t] = (parallel_worker){&job, t};
        if (pthread_create(&threads[started + 1], NULL, parallel_main, &ws[t]) != 0) break;
        started++;
    }
    ws[0] = (parallel_worker){&job, 0};
    parallel_main(&ws[0]);
    for (int t = 1; t <= started; t++) pthread_join(threads[t], NULL);
    return started + 1;
}

/* ------------------------------------------------------------------------ */
/* Accuracy metric                                                           */
/* ------------------------------------------------------------------------ */

void qgtk_diff_add(qgtk_diff_acc *acc, const double *x, const double *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(y[i])) continue;
        if (isnan(x[i])) acc->nan = true;
        acc->xy += x[i] * y[i];
        acc->xx_yy += x[i] * x[i] + y[i] * y[i];
        acc->count++;
    }
}

double qgtk_diff_result(const qgtk_diff_acc *acc) {
    if (acc->nan) return NAN;
    if (acc->xx_yy == 0.0) return 0.0; /* nothing compared, or both all zero */
    return 1.0 - 2.0 * acc->xy / acc->xx_yy;
}

double qgtk_calc_diff(const double *x, const double *y, size_t n) {
    qg__clear_error();
    if (!x || !y) return n ? NAN : 0.0;
    qgtk_diff_acc acc = {0};
    qgtk_diff_add(&acc, x, y, n);
    return qgtk_diff_result(&acc);
}

/* ------------------------------------------------------------------------ */
/* Reference GEMM                                                            */
/* ------------------------------------------------------------------------ */

#define REF_NB 16   /* B rows (output columns) per unit */
#define REF_MB 256  /* A rows per unit */

typedef struct {
    const qg_gemm_args *args;
    qg_gemm_kind kind;
    int kblocks, nblocks, ntiles;
    double table[256];     /* e4m3 code -> exact value */
    int64_t *rows;         /* output rows to compute, grouped by group */
    int64_t *group_start;  /* [G+1]: rows[group_start[g] .. group_start[g+1]) */
    int64_t *unit_start;   /* [G+1]: first unit of each group */
    double *ref;
    double **scratch;      /* per worker: REF_NB*k + 4*k doubles */
    atomic_int failed;     /* a worker could not allocate its scratch */
} ref_job;

/* Row `r` of the output (0 .. rows-1): its A row and SFA column. For masked,
 * r = g*m + i and A is [G][m][lda], so the A row is r in both cases. */
static void dequant_a_row(const ref_job *job, int64_t r, double *out) {
    const qg_gemm_args *p = job->args;
    const uint8_t *a = (const uint8_t *)p->a + r * p->lda;
    const float *sfa = p->sfa + r;
    if (job->kind == QG_GEMM_GROUPED_MASKED) {
        int64_t g = r / p->m, i = r % p->m;
        sfa = p->sfa + g * job->kblocks * p->sfa_ld + i;
    }
    for (int kb = 0; kb < job->kblocks; kb++) {
        double s = (double)sfa[(int64_t)kb * p->sfa_ld];
        int end = (kb + 1) * 128 < p->k ? (kb + 1) * 128 : p->k;
        for (int kk = kb * 128; kk < end; kk++) out[kk] = job->table[a[kk]] * s;
    }
}

static void dequant_b_row(const ref_job *job, int g, int col, double *out) {
    const qg_gemm_args *p = job->args;
    const uint8_t *b = (const uint8_t *)p->b + ((int64_t)g * p->n + col) * p->ldb;
    const float *sfb = p->sfb + ((int64_t)g * job->nblocks + col / 128) * job->kblocks;
    for (int kb = 0; kb < job->kblocks; kb++) {
        double s = (double)sfb[kb];
        int end = (kb + 1) * 128 < p->k ? (kb + 1) * 128 : p->k;
        for (int kk = kb * 128; kk < end; kk++) out[kk] = job->table[b[kk]] * s;
    }
}

/* out[i][j] = dot(a[i], b[j]) for a 4x2 block: eight independent double
 * accumulators keep the FP units busy without spilling SSE registers. */
static void dot_4x2(const double *const a[4], const double *const b[2], int k,
                    double out[4][2]) {
    double c00 = 0, c01 = 0, c10 = 0, c11 = 0, c20 = 0, c21 = 0, c30 = 0, c31 = 0;
    const double *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *b0 = b[0], *b1 = b[1];
    for (int kk = 0; kk < k; kk++) {
        double x0 = b0[kk], x1 = b1[kk];
        c00 += a0[kk] * x0; c01 += a0[kk] * x1;
        c10 += a1[kk] * x0; c11 += a1[kk] * x1;
        c20 += a2[kk] * x0; c21 += a2[kk] * x1;
        c30 += a3[kk] * x0; c31 += a3[kk] * x1;
    }
    out[0][0] = c00; out[0][1] = c01; out[1][0] = c10; out[1][1] = c11;
    out[2][0] = c20; out[2][1] = c21; out[3][0] = c30; out[3][1] = c31;
}

static void ref_unit(void *user, int64_t unit, int worker) {
    ref_job *job = user;
    const qg_gemm_args *p = job->args;
    const int k = p->k, n = p->n;

    int g = 0;
    while (unit >= job->unit_start[g + 1]) g++;
    int64_t local = unit - job->unit_start[g];
    int col0 = (int)(local % job->ntiles) * REF_NB;
    int64_t row_begin = job->group_start[g] + (local / job->ntiles) * REF_MB;
    int64_t row_end = row_begin + REF_MB < job->group_start[g + 1] ? row_begin + REF_MB
                                                                    : job->group_start[g + 1];
    int cols = n - col0 < REF_NB ? n - col0 : REF_NB;

    double *buf = job->scratch[worker];
    if (!buf) {
        buf = malloc(sizeof(double) * (size_t)k * (REF_NB + 4));
        if (!buf) {
            atomic_store(&job->failed, 1);
            return;
        }
        job->scratch[worker] = buf;
    }
    double *bdq = buf, *adq = buf + (size_t)REF_NB * k;
    for (int j = 0; j < cols; j++) dequant_b_row(job, g, col0 + j, bdq + (size_t)j * k);

    for (int64_t ri = row_begin; ri < row_end; ri += 4) {
        int nrows = row_end - ri < 4 ? (int)(row_end - ri) : 4;
        const double *arow[4];
        for (int i = 0; i < 4; i++) {
            /* Missing rows of the last block repeat row 0; their results are dropped. */
            if (i < nrows) dequant_a_row(job, job->rows[ri + i], adq + (size_t)i * k);
            arow[i] = adq + (size_t)(i < nrows ? i : 0) * k;
        }
        for (int j = 0; j < cols; j += 2) {
            const double *brow[2] = {bdq + (size_t)j * k,
                                     bdq + (size_t)(j + 1 < cols ? j + 1 : j) * k};
            double out[4][2];
            dot_4x2(arow, brow, k, out);
            for (int i = 0; i < nrows; i++) {
                double *dst = job->ref + job->rows[ri + i] * n + col0 + j;
                dst[0] = out[i][0];
                if (j + 1 < cols) dst[1] = out[i][1];
            }
        }
    }
}

static qg_status validate(qg_gemm_kind kind, const qg_gemm_args *p, const double *ref) {
    if (kind != QG_GEMM_DENSE && kind != QG_GEMM_GROUPED_CONTIGUOUS &&
        kind != QG_GEMM_GROUPED_MASKED && kind != QG_GEMM_GROUPED_PSUM)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "kind: expected 0, 1, 2 or 3, got %d", (int)kind);
    if (!p) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "host_args: expected non-NULL");
    if (!ref) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "ref: expected non-NULL");
    if (p->m < 0) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "m: expected >= 0, got %d", p->m);
    /* Bounds first (issue 27): (n + 127) / 128, (k + 127) / 128 and row * ld
     * below must not overflow, whatever the caller passes. */
    if (p->n < 1 || p->n > (1 << 30))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "n: expected 1 .. 2^30, got %d", p->n);
    if (p->k < 16 || p->k % 16 || p->k > (1 << 30))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "k: expected a positive multiple of 16 up to 2^30, got %d", p->k);
    if (p->lda > (1ll << 36) || p->ldb > (1ll << 36) || p->sfa_ld > (1ll << 36))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: expected <= 2^36, got %lld",
                        p->lda > (1ll << 36) ? "lda" : p->ldb > (1ll << 36) ? "ldb" : "sfa_ld",
                        (long long)(p->lda > (1ll << 36)   ? p->lda
                                    : p->ldb > (1ll << 36) ? p->ldb
                                                           : p->sfa_ld));
    if (kind == QG_GEMM_DENSE ? p->num_groups != 1 : p->num_groups < 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "num_groups: expected %s, got %d",
                        kind == QG_GEMM_DENSE ? "1 for dense" : ">= 1", p->num_groups);
    if (!p->a) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "a: expected non-NULL");
    if (!p->sfa) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "sfa: expected non-NULL");
    if (!p->b) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "b: expected non-NULL");
    if (!p->sfb) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "sfb: expected non-NULL");
    if (p->lda < p->k)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "lda: expected >= k = %d, got %lld", p->k,
                        (long long)p->lda);
    if (p->ldb < p->k)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "ldb: expected >= k = %d, got %lld", p->k,
                        (long long)p->ldb);
    if (p->sfa_ld < p->m || p->sfa_ld % 4)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "sfa_ld: expected a multiple of 4 >= m = %d, got %lld", p->m,
                        (long long)p->sfa_ld);
    /* The layouts' contents are device data the library never checks: every
     * value is legal and means what include/qgemm.h says (qgtk_row_groups),
     * so the reference follows the same rule rather than refusing it. */
    if (kind == QG_GEMM_GROUPED_CONTIGUOUS && !p->m_indices)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "m_indices: expected non-NULL for the contiguous layout");
    if (kind == QG_GEMM_GROUPED_MASKED && !p->masked_m)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "masked_m: expected non-NULL for the masked layout");
    if (kind == QG_GEMM_GROUPED_PSUM && !p->group_ends)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "group_ends: expected non-NULL for the psum layout");
    return QG_SUCCESS;
}

/* ---- which rows are written: the layouts' rules (include/qgemm.h) --------- */

void qgtk_psum_bounds(const int32_t *group_ends, int num_groups, int m, int64_t *start,
                      int64_t *end) {
    int64_t s = 0;
    for (int g = 0; g < num_groups; g++) {
        int64_t e = group_ends[g];
        e = e < s ? s : e > m ? m : e;
        start[g] = s;
        end[g] = e;
        s = (e + 127) / 128 * 128;
        if (s > m) s = m;
    }
}

qg_status qgtk_row_groups(qg_gemm_kind kind, const qg_gemm_args *p, int32_t *out) {
    if (!p || !out) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qgtk_row_groups: a NULL argument");
    if (p->m < 0 || p->num_groups < 1 ||
        (kind == QG_GEMM_GROUPED_CONTIGUOUS && !p->m_indices) ||
        (kind == QG_GEMM_GROUPED_MASKED && !p->masked_m) ||
        (kind == QG_GEMM_GROUPED_PSUM && !p->group_ends))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qgtk_row_groups: m %d, num_groups %d, or the layout's array missing",
                        p->m, p->num_groups);
    const int G = p->num_groups, m = p->m;
    switch (kind) {
    case QG_GEMM_DENSE:
        for (int64_t r = 0; r < m; r++) out[r] = 0;
        return QG_SUCCESS;
    case QG_GEMM_GROUPED_CONTIGUOUS:
        /* the first row of each 128-row segment names the expert of every row
         * in it; no expert ([0, G) excluded, -1 included): padding */
        for (int64_t r = 0; r < m; r++) {
            const int32_t g = p->m_indices[r - r % 128];
            out[r] = g >= 0 && g < G ? g : -1;
        }
        return QG_SUCCESS;
    case QG_GEMM_GROUPED_MASKED:
        /* masked_m clamped to [0, m]: r % m < masked_m holds for none when it
         * is negative and for all when it is past m */
        for (int64_t r = 0; r < (int64_t)G * m; r++)
            out[r] = r % m < p->masked_m[r / m] ? (int32_t)(r / m) : -1;
        return QG_SUCCESS;
    case QG_GEMM_GROUPED_PSUM: {
        int64_t *start = malloc(sizeof(int64_t) * 2 * (size_t)G);
        if (!start) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "qgtk_row_groups: host allocation failed");
        int64_t *end = start + G;
        qgtk_psum_bounds(p->group_ends, G, m, start, end);
        for (int64_t r = 0; r < m; r++) out[r] = -1;
        for (int g = 0; g < G; g++)
            for (int64_t r = start[g]; r < end[g]; r++) out[r] = g;
        free(start);
        return QG_SUCCESS;
    }
    default:
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qgtk_row_groups: kind %d has no row groups",
                        (int)kind);
    }
}

/* Collect the rows that must be computed, grouped by group (counting sort),
 * and set every other row of ref to NaN. */
static qg_status plan_rows(ref_job *job, int64_t total_rows) {
    const qg_gemm_args *p = job->args;
    const int G = p->num_groups;
    job->rows = malloc(sizeof(int64_t) * (size_t)(total_rows ? total_rows : 1));
    job->group_start = calloc((size_t)G + 1, sizeof(int64_t));
    job->unit_start = calloc((size_t)G + 1, sizeof(int64_t));
    int32_t *group_of = malloc(sizeof(int32_t) * (size_t)(total_rows ? total_rows : 1));
    if (!job->rows || !job->group_start || !job->unit_start || !group_of) {
        free(group_of);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "qgtk_reference_gemm: host allocation failed");
    }
    /* group_of[r]: the group of output row r, or -1 when it is skipped. */
    qg_status st = qgtk_row_groups(job->kind, p, group_of);
    if (st != QG_SUCCESS) {
        free(group_of);
        return st;
    }
    for (int64_t r = 0; r < total_rows; r++) {
        int g = group_of[r];
        if (g >= 0) job->group_start[g + 1]++;
        else
            for (int c = 0; c < p->n; c++) job->ref[r * p->n + c] = NAN;
    }
    for (int g = 0; g < G; g++) job->group_start[g + 1] += job->group_start[g];
    int64_t *fill = calloc((size_t)G, sizeof(int64_t));
    if (!fill) {
        free(group_of);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "qgtk_reference_gemm: host allocation failed");
    }
    for (int64_t r = 0; r < total_rows; r++) {
        int g = group_of[r];
        if (g >= 0) job->rows[job->group_start[g] + fill[g]++] = r;
    }
    free(fill);
    free(group_of);
    for (int g = 0; g < G; g++) {
        int64_t count = job->group_start[g + 1] - job->group_start[g];
        job->unit_start[g + 1] = job->unit_start[g] + (count + REF_MB - 1) / REF_MB * job->ntiles;
    }
    return QG_SUCCESS;
}

qg_status qgtk_reference_gemm(qg_gemm_kind kind, const qg_gemm_args *host_args, double *ref) {
    qg__clear_error();
    qg_status st = validate(kind, host_args, ref);
    if (st != QG_SUCCESS) return st;

    ref_job job = {.args = host_args, .kind = kind, .ref = ref};
    job.kblocks = (host_args->k + 127) / 128;
    job.nblocks = (host_args->n + 127) / 128;
    job.ntiles = (host_args->n + REF_NB - 1) / REF_NB;
    atomic_init(&job.failed, 0);
    for (int c = 0; c < 256; c++) job.table[c] = (double)qg_fp8_e4m3_decode((uint8_t)c);
    int64_t total_rows = (int64_t)host_args->m *
                         (kind == QG_GEMM_GROUPED_MASKED ? host_args->num_groups : 1);

    st = plan_rows(&job, total_rows);
    int workers = qgtk_num_workers();
    if (st == QG_SUCCESS) {
        job.scratch = calloc((size_t)workers, sizeof(double *));
        if (!job.scratch)
            st = qg__fail(QG_ERROR_OUT_OF_MEMORY, "qgtk_reference_gemm: host allocation failed");
    }
    if (st == QG_SUCCESS) {
        qgtk_parallel_for(job.unit_start[host_args->num_groups], workers, ref_unit, &job);
        if (atomic_load(&job.failed))
            st = qg__fail(QG_ERROR_OUT_OF_MEMORY,
                          "qgtk_reference_gemm: could not allocate %zu bytes of scratch",
                          sizeof(double) * (size_t)host_args->k * (REF_NB + 4));
    }
    if (job.scratch)
        for (int w = 0; w < workers; w++) free(job.scratch[w]);
    free(job.scratch);
    free(job.rows);
    free(job.group_start);
    free(job.unit_start);
    return st;
}
