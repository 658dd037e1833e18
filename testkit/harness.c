/*
 * harness.c -- test and benchmark support: GPU detection, random quantized
 * problems (host data + device copies), checking a GEMM's output against the
 * exact reference (CPU, or the fp64 kernel of testkit/kernels/reference.cuh for large
 * shapes), parallel kernel compilation and event timing. See qgtk.h for
 * the contracts.
 *
 * Invariants:
 *  - device work always runs inside the context's CUDA context, pushed and
 *    popped here;
 *  - random data depends only on (spec, seed): each A row and each 128-row
 *    block of B has its own generator, seeded from the seed and its position,
 *    so the thread count does not change the problem;
 *  - the stride padding of A and B holds NaN codes and the SFA padding NaN
 *    floats: a kernel that reads past K or past M into them produces NaN in
 *    rows it stores, which the check reports.
 */
#include "qgtk.h"
#include "kernels.h"

#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Driver plumbing                                                           */
/* ------------------------------------------------------------------------ */

/* The driver table of a device context (the seam, src/seam.h); NULL for
 * an offline one, which ctx_push refuses before anything dereferences it. */
static const qg_driver *drv_of(const qg_context *ctx) {
    const qg_driver *drv = NULL;
    return qg__context_cuda(ctx, &drv, NULL, NULL) ? drv : NULL;
}

/* The device properties of ctx (zeroed when ctx is NULL). */
static qg_device_props props_of(const qg_context *ctx) {
    qg_device_props props = {0};
    qg_context_get_props(ctx, &props);
    return props;
}

static qg_status ctx_push(qg_context *ctx) {
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "ctx: expected non-NULL");
    const qg_driver *drv = NULL;
    CUcontext cu_context = NULL;
    if (!qg__context_cuda(ctx, &drv, &cu_context, NULL))
        return qg__fail(QG_ERROR_NO_DEVICE, "ctx: an offline context cannot touch device memory");
    CUresult r = drv->cuCtxPushCurrent(cu_context);
    return r == CUDA_SUCCESS ? QG_SUCCESS : qg__cuda_fail(r, "cuCtxPushCurrent");
}

static void ctx_pop(qg_context *ctx) {
    CUcontext popped;
    drv_of(ctx)->cuCtxPopCurrent(&popped);
}

/* Inside a function with `qg_status st` and a `done:` label. */
#define CU_TRY(call, what)                                                      \
    do {                                                                        \
        CUresult cu_r_ = (call);                                                \
        if (cu_r_ != CUDA_SUCCESS) {                                            \
            st = qg__cuda_fail(cu_r_, what);                                    \
            goto done;                                                          \
        }                                                                       \
    } while (0)

/* ------------------------------------------------------------------------ */
/* GPU detection                                                             */
/* ------------------------------------------------------------------------ */

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static char detect_line[512];
static int detect_device = -1;

static void detect(void) {
    const qg_driver *drv = NULL;
    if (qg__driver_load(&drv) != QG_SUCCESS) {
        snprintf(detect_line, sizeof detect_line, "no GPU: %s", qg_last_error());
        return;
    }
    int count = 0;
    CUresult r = drv->cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count < 1) {
        snprintf(detect_line, sizeof detect_line, "no GPU: the driver reports no CUDA device");
        return;
    }
    size_t len = (size_t)snprintf(detect_line, sizeof detect_line,
                                  "no GPU: no device of compute capability 9.x among %d:", count);
    for (int i = 0; i < count; i++) {
        CUdevice dev;
        int major = 0, minor = 0, sms = 0;
        char name[128] = "?";
        if (drv->cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
        drv->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        drv->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        drv->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
        drv->cuDeviceGetName(name, (int)sizeof name, dev);
        if (major == 9) {
            detect_device = i;
            snprintf(detect_line, sizeof detect_line, "GPU %d: %s (sm_%d%d, %d SMs)", i, name,
                     major, minor, sms);
            return;
        }
        if (len < sizeof detect_line)
            len += (size_t)snprintf(detect_line + len, sizeof detect_line - len,
                                    " %s (sm_%d%d)", name, major, minor);
    }
}

bool qgtk_gpu_available(void) {
    pthread_once(&detect_once, detect);
    return detect_device >= 0;
}

const char *qgtk_gpu_status_line(void) {
    pthread_once(&detect_once, detect);
    return detect_line;
}

int qgtk_gpu_device(void) {
    pthread_once(&detect_once, detect);
    return detect_device;
}

qg_status qgtk_gpu_session_open(qg_context **ctx, CUstream *stream) {
    if (!ctx || !stream) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "ctx/stream: expected non-NULL");
    *ctx = NULL;
    *stream = NULL;
    if (!qgtk_gpu_available()) return qg__fail(QG_ERROR_NO_DEVICE, "%s", qgtk_gpu_status_line());
    return qgtk_gpu_session_open_on(qgtk_gpu_device(), ctx, stream);
}

qg_status qgtk_gpu_session_open_on(int device, qg_context **ctx, CUstream *stream) {
    if (!ctx || !stream) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "ctx/stream: expected non-NULL");
    *ctx = NULL;
    *stream = NULL;
    qg_status st = qg_context_create(ctx, device);
    if (st != QG_SUCCESS) return st;
    st = ctx_push(*ctx);
    if (st == QG_SUCCESS) {
        /* A blocking stream: the tests upload and poison on the legacy default
         * stream (cuMemcpyHtoD, cuMemsetD8), which can return before the GPU
         * has done them; a blocking stream waits for that work before the
         * library's, and the legacy stream's read-backs wait for the library's.
         * A non-blocking stream let a poison land after a kernel's stores under
         * load (the H200's "unwritten" gpu_fp8out / gpu_cast / batch-sum
         * failures with nine processes on the card, 2026-11-28). The library
         * itself treats every stream alike. */
        CU_TRY(drv_of(*ctx)->cuStreamCreate(stream, CU_STREAM_DEFAULT), "cuStreamCreate");
    done:
        ctx_pop(*ctx);
    }
    if (st != QG_SUCCESS) {
        qg_context_destroy(*ctx);
        *ctx = NULL;
    }
    return st;
}

void qgtk_gpu_session_close(qg_context *ctx, CUstream stream) {
    if (!ctx) return;
    if (ctx_push(ctx) == QG_SUCCESS) {
        drv_of(ctx)->cuCtxSynchronize();
        if (stream) drv_of(ctx)->cuStreamDestroy(stream);
        ctx_pop(ctx);
    }
    qg_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Random numbers                                                            */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint64_t state;
    float spare;
    bool has_spare;
} rng;

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* An independent generator for (seed, stream, index). */
static rng rng_for(uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t s = seed;
    uint64_t h = splitmix64(&s) ^ (stream * 0xd1b54a32d192ed03ull);
    h = splitmix64(&h) ^ index;
    splitmix64(&h);
    return (rng){.state = h};
}

static double rng_uniform(rng *r) { /* [0, 1) */
    return (double)(splitmix64(&r->state) >> 11) * 0x1p-53;
}

static int rng_int(rng *r, int lo, int hi) { /* [lo, hi] */
    return lo + (int)(rng_uniform(r) * (double)(hi - lo + 1));
}

/* Box-Muller in float (twice as fast as double; the values are quantized to
 * 4 significant bits anyway). u1 in (0, 1]: the tail ends at 5.8 sigma. */
static float rng_normal(rng *r) {
    if (r->has_spare) {
        r->has_spare = false;
        return r->spare;
    }
    uint64_t bits = splitmix64(&r->state);
    float u1 = 1.0f - (float)(bits >> 40) * 0x1p-24f;
    float u2 = (float)(bits & 0xffffffu) * 0x1p-24f;
    float rad = sqrtf(-2.0f * logf(u1)), th = 6.2831853f * u2;
    r->spare = rad * sinf(th);
    r->has_spare = true;
    return rad * cosf(th);
}

/* ------------------------------------------------------------------------ */
/* Problem generation (host)                                                 */
/* ------------------------------------------------------------------------ */

#define E4M3_NAN 0x7fu

/* Scale and codes of one quantization block of `count` values. */
static float quantize_block(const float *x, size_t count, uint8_t *codes_out,
                            size_t row_len, size_t row_stride) {
    float amax = 0.0f;
    for (size_t i = 0; i < count; i++) amax = fmaxf(amax, fabsf(x[i]));
    float scale = amax > 0.0f ? amax / 448.0f : 1.0f;
    for (size_t i = 0; i < count; i++)
        codes_out[(i / row_len) * row_stride + i % row_len] = qg_fp8_e4m3_encode(x[i] / scale);
    return scale;
}

typedef struct {
    qgtk_problem_data *p;
    const qgtk_problem_spec *spec;
    atomic_int failed;
} gen_job;

#define GEN_A_ROWS 16 /* A rows per work unit */

/* SFA entry of row r (0 .. rows-1) for k-block kb. */
static float *sfa_at(const qgtk_problem_data *p, int64_t r, int kb) {
    if (p->kind == QG_GEMM_GROUPED_MASKED)
        return p->sfa + ((r / p->m) * p->kblocks + kb) * p->sfa_ld + r % p->m;
    return p->sfa + (int64_t)kb * p->sfa_ld + r;
}

static void gen_a_unit(void *user, int64_t unit, int worker) {
    (void)worker;
    gen_job *job = user;
    qgtk_problem_data *p = job->p;
    const int spread = job->spec->scale_spread;
    float x[128];
    int64_t end = (unit + 1) * GEN_A_ROWS < p->rows ? (unit + 1) * GEN_A_ROWS : p->rows;
    for (int64_t r = unit * GEN_A_ROWS; r < end; r++) {
        rng g = rng_for(job->spec->seed, 1, (uint64_t)r);
        uint8_t *row = p->a + r * p->lda;
        for (int kb = 0; kb < p->kblocks; kb++) {
            int len = p->k - kb * 128 < 128 ? p->k - kb * 128 : 128;
            float mul = ldexpf(1.0f, rng_int(&g, -spread, spread));
            for (int i = 0; i < len; i++) x[i] = rng_normal(&g) * mul;
            *sfa_at(p, r, kb) = quantize_block(x, (size_t)len, row + kb * 128, (size_t)len, 0);
        }
        memset(row + p->k, E4M3_NAN, (size_t)(p->lda - p->k));
    }
}

/* One unit = one 128-row block of B of one group, all of K. */
static void gen_b_unit(void *user, int64_t unit, int worker) {
    (void)worker;
    gen_job *job = user;
    qgtk_problem_data *p = job->p;
    const int spread = job->spec->scale_spread;
    const int g = (int)(unit / p->nblocks), nb = (int)(unit % p->nblocks);
    const int n0 = nb * 128, nrows = p->n - n0 < 128 ? p->n - n0 : 128;

    float *x = malloc(sizeof(float) * 128 * 128);
    int *expo = malloc(sizeof(int) * (size_t)p->kblocks);
    if (!x || !expo) {
        atomic_store(&job->failed, 1);
        free(x);
        free(expo);
        return;
    }
    rng r = rng_for(job->spec->seed, 2, (uint64_t)unit);
    for (int kb = 0; kb < p->kblocks; kb++) expo[kb] = rng_int(&r, -spread, spread);
    uint8_t *base = p->b + ((int64_t)g * p->n + n0) * p->ldb;
    for (int kb = 0; kb < p->kblocks; kb++) {
        /* Rows of the block in order, so each value depends only on (unit, kb, i). */
        int len = p->k - kb * 128 < 128 ? p->k - kb * 128 : 128;
        rng rb = rng_for(job->spec->seed, 3, (uint64_t)unit * (uint64_t)p->kblocks + (uint64_t)kb);
        float mul = ldexpf(1.0f, expo[kb]);
        for (int i = 0; i < nrows * len; i++) x[i] = rng_normal(&rb) * mul;
        p->sfb[((int64_t)g * p->nblocks + nb) * p->kblocks + kb] =
            quantize_block(x, (size_t)nrows * (size_t)len, base + kb * 128, (size_t)len,
                           (size_t)p->ldb);
    }
    for (int i = 0; i < nrows; i++) memset(base + (int64_t)i * p->ldb + p->k, E4M3_NAN,
                                           (size_t)(p->ldb - p->k));
    free(x);
    free(expo);
}

static qg_status check_spec(const qgtk_problem_spec *s) {
    if (s->kind != QG_GEMM_DENSE && s->kind != QG_GEMM_GROUPED_CONTIGUOUS &&
        s->kind != QG_GEMM_GROUPED_MASKED && s->kind != QG_GEMM_GROUPED_PSUM)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "spec.kind: expected 0, 1, 2 or 3, got %d",
                        (int)s->kind);
    if (s->m < 0) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "spec.m: expected >= 0, got %d", s->m);
    if (s->n < 1) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "spec.n: expected >= 1, got %d", s->n);
    if (s->k < 16 || s->k % 16)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "spec.k: expected a positive multiple of 16, got %d", s->k);
    if (s->num_groups < 0 || (s->kind == QG_GEMM_DENSE && s->num_groups > 1))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "spec.num_groups: expected %s, got %d",
                        s->kind == QG_GEMM_DENSE ? "0 or 1 for dense" : ">= 1", s->num_groups);
    if (s->lda_pad < 0 || s->lda_pad % 16 || s->ldb_pad < 0 || s->ldb_pad % 16)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "spec.lda_pad/ldb_pad: expected multiples of 16 >= 0, got %d/%d",
                        s->lda_pad, s->ldb_pad);
    if (s->ldd_pad < 0 || s->ldd_pad % 8)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "spec.ldd_pad: expected a multiple of 8 >= 0, got %d", s->ldd_pad);
    if (s->sfa_ld_pad < 0 || s->sfa_ld_pad % 4)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "spec.sfa_ld_pad: expected a multiple of 4 >= 0, got %d", s->sfa_ld_pad);
    if (s->scale_spread < 0 || s->scale_spread > 60)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "spec.scale_spread: expected 0 .. 60, got %d", s->scale_spread);
    if (s->expected_m < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "spec.expected_m: expected >= 0, got %d",
                        s->expected_m);
    return QG_SUCCESS;
}

/* Rows of -1 that spec.padding_blocks puts before expert g's segment (the
 * psum layout has no room for them). */
static int padding_block_rows(const qgtk_problem_spec *s, int g, int align) {
    return s->padding_blocks && s->kind != QG_GEMM_GROUPED_PSUM && g % 3 == 1 ? align : 0;
}

/* Group sizes and m_indices (contiguous) or group_ends (psum) of a problem
 * whose groups are 128-row aligned segments; sets p->m. */
static qg_status plan_contiguous(qgtk_problem_data *p, const qgtk_problem_spec *s) {
    const int G = p->num_groups, align = qg_m_alignment_for_contiguous_layout();
    int *sizes = malloc(sizeof(int) * (size_t)G);
    if (!sizes) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "problem: host allocation failed");
    int expected = s->expected_m ? s->expected_m : s->m / G;
    rng r = rng_for(s->seed, 4, 0);
    int64_t total = 0;
    for (int g = 0; g < G; g++) {
        if (s->group_m) {
            sizes[g] = s->group_m[g];
        } else {
            sizes[g] = (int)lround(expected * (0.7 + 0.6 * rng_uniform(&r)));
        }
        if (sizes[g] < 0) {
            free(sizes);
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "spec.group_m[%d]: expected >= 0, got %d", g, s->group_m[g]);
        }
        total += padding_block_rows(s, g, align) + (sizes[g] + align - 1) / align * align;
    }
    if (total > 0x7fffffff - align) {
        free(sizes);
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "spec: %lld contiguous rows do not fit an int",
                        (long long)total);
    }
    p->m = (int)total;
    if (p->kind == QG_GEMM_GROUPED_PSUM) {
        /* group g starts at the previous end rounded up: where its segment starts */
        p->group_ends = malloc(sizeof(int32_t) * (size_t)G);
        if (!p->group_ends) {
            free(sizes);
            return qg__fail(QG_ERROR_OUT_OF_MEMORY, "problem: host allocation failed");
        }
        int64_t start = 0;
        for (int g = 0; g < G; g++) {
            p->group_ends[g] = (int32_t)(start + sizes[g]);
            start += (sizes[g] + align - 1) / align * align;
        }
        free(sizes);
        return QG_SUCCESS;
    }
    p->m_indices = malloc(sizeof(int32_t) * (size_t)(total ? total : 1));
    if (!p->m_indices) {
        free(sizes);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "problem: host allocation failed");
    }
    int64_t row = 0;
    for (int g = 0; g < G; g++) {
        int padded = (sizes[g] + align - 1) / align * align;
        for (int i = 0; i < padding_block_rows(s, g, align); i++) p->m_indices[row++] = -1;
        for (int i = 0; i < padded; i++) p->m_indices[row++] = i < sizes[g] ? g : -1;
    }
    free(sizes);
    return QG_SUCCESS;
}

static qg_status plan_masked(qgtk_problem_data *p, const qgtk_problem_spec *s) {
    const int G = p->num_groups;
    p->masked_m = malloc(sizeof(int32_t) * (size_t)G);
    if (!p->masked_m) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "problem: host allocation failed");
    rng r = rng_for(s->seed, 5, 0);
    int64_t sum = 0;
    for (int g = 0; g < G; g++) {
        int v = s->masked_m ? s->masked_m[g] : rng_int(&r, 0, p->m);
        if (v < 0 || v > p->m)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "spec.masked_m[%d]: expected 0 .. m = %d, got %d", g, p->m, v);
        p->masked_m[g] = v;
    }
    if (!s->masked_m && s->masked_extremes && G >= 2) {
        int g0 = rng_int(&r, 0, G - 1), g1 = rng_int(&r, 0, G - 2);
        if (g1 >= g0) g1++;
        p->masked_m[g0] = 0;
        p->masked_m[g1] = p->m;
    }
    for (int g = 0; g < G; g++) sum += p->masked_m[g];
    int mean = (int)(sum / G);
    p->expected_m = s->expected_m ? s->expected_m : (mean > 0 ? mean : 1);
    return QG_SUCCESS;
}

static qg_status alloc_host(qgtk_problem_data *p) {
    p->a = malloc(p->a_bytes ? p->a_bytes : 1);
    p->sfa = malloc(p->sfa_bytes ? p->sfa_bytes : 1);
    p->b = malloc(p->b_bytes);
    p->sfb = malloc(p->sfb_bytes);
    p->d = malloc(p->d_bytes ? p->d_bytes : 1);
    p->group_diff = calloc((size_t)p->num_groups, sizeof(double));
    if (!p->a || !p->sfa || !p->b || !p->sfb || !p->d || !p->group_diff)
        return qg__fail(QG_ERROR_OUT_OF_MEMORY,
                        "problem: could not allocate %zu bytes of host memory",
                        p->a_bytes + p->sfa_bytes + p->b_bytes + p->sfb_bytes + p->d_bytes);
    return QG_SUCCESS;
}

qg_status qgtk_problem_create_host(qgtk_problem_data **out, const qgtk_problem_spec *spec) {
    if (!out) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "out: expected non-NULL");
    *out = NULL;
    if (!spec) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "spec: expected non-NULL");
    qg_status st = check_spec(spec);
    if (st != QG_SUCCESS) return st;

    qgtk_problem_data *p = calloc(1, sizeof *p);
    if (!p) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "problem: host allocation failed");
    p->kind = spec->kind;
    p->m = spec->m;
    p->n = spec->n;
    p->k = spec->k;
    p->num_groups = spec->num_groups < 1 ? 1 : spec->num_groups;
    p->kblocks = (p->k + 127) / 128;
    p->nblocks = (p->n + 127) / 128;
    if (p->kind == QG_GEMM_GROUPED_CONTIGUOUS || p->kind == QG_GEMM_GROUPED_PSUM)
        st = plan_contiguous(p, spec);
    if (p->kind == QG_GEMM_GROUPED_MASKED) st = plan_masked(p, spec);
    if (st != QG_SUCCESS) {
        qgtk_problem_free(p);
        return st;
    }
    p->rows = (int64_t)p->m * (p->kind == QG_GEMM_GROUPED_MASKED ? p->num_groups : 1);
    p->lda = p->k + spec->lda_pad;
    p->ldb = p->k + spec->ldb_pad;
    p->ldd = p->n + spec->ldd_pad;
    p->sfa_ld = qg_sfa_ld(p->m) + spec->sfa_ld_pad;
    const int64_t sfa_groups = p->kind == QG_GEMM_GROUPED_MASKED ? p->num_groups : 1;
    p->a_bytes = (size_t)(p->rows * p->lda);
    p->sfa_bytes = sizeof(float) * (size_t)(sfa_groups * p->kblocks * p->sfa_ld);
    p->b_bytes = (size_t)((int64_t)p->num_groups * p->n * p->ldb);
    p->sfb_bytes = sizeof(float) * (size_t)((int64_t)p->num_groups * p->nblocks * p->kblocks);
    p->d_bytes = sizeof(uint16_t) * (size_t)(p->rows * p->ldd);
    st = alloc_host(p);
    if (st != QG_SUCCESS) {
        qgtk_problem_free(p);
        return st;
    }

    /* SFA padding (rows m .. sfa_ld-1 of every k-block column) is NaN. */
    for (size_t i = 0; i < p->sfa_bytes / sizeof(float); i++) p->sfa[i] = NAN;
    gen_job job = {.p = p, .spec = spec};
    atomic_init(&job.failed, 0);
    int workers = qgtk_num_workers();
    qgtk_parallel_for((p->rows + GEN_A_ROWS - 1) / GEN_A_ROWS, workers, gen_a_unit, &job);
    qgtk_parallel_for((int64_t)p->num_groups * p->nblocks, workers, gen_b_unit, &job);
    if (atomic_load(&job.failed)) {
        qgtk_problem_free(p);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "problem: host allocation failed");
    }
    memset(p->d, 0xff, p->d_bytes);
    *out = p;
    return QG_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Device copies                                                             */
/* ------------------------------------------------------------------------ */

static void free_device(qgtk_problem_data *p) {
    if (!p->ctx) return;
    if (ctx_push(p->ctx) == QG_SUCCESS) {
        CUdeviceptr *bufs[] = {&p->dev_a,         &p->dev_sfa,      &p->dev_b,
                               &p->dev_sfb,       &p->dev_d,        &p->dev_m_indices,
                               &p->dev_masked_m,  &p->dev_group_ends};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
            if (*bufs[i]) drv_of(p->ctx)->cuMemFree(*bufs[i]);
            *bufs[i] = 0;
        }
        ctx_pop(p->ctx);
    }
    p->ctx = NULL;
}

qg_status qgtk_problem_upload(qg_context *ctx, qgtk_problem_data *p) {
    if (!p) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "p: expected non-NULL");
    if (p->ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "p: already uploaded");
    qg_status st = ctx_push(ctx);
    if (st != QG_SUCCESS) return st;
    const qg_driver *drv = drv_of(ctx);
    p->ctx = ctx;
    struct {
        CUdeviceptr *dev;
        const void *host;
        size_t bytes;
        const char *what;
    } bufs[] = {
        {&p->dev_a, p->a, p->a_bytes, "cuMemAlloc(A)"},
        {&p->dev_sfa, p->sfa, p->sfa_bytes, "cuMemAlloc(SFA)"},
        {&p->dev_b, p->b, p->b_bytes, "cuMemAlloc(B)"},
        {&p->dev_sfb, p->sfb, p->sfb_bytes, "cuMemAlloc(SFB)"},
        {&p->dev_d, p->d, p->d_bytes, "cuMemAlloc(D)"},
        {&p->dev_m_indices, p->m_indices, sizeof(int32_t) * (size_t)p->m, "cuMemAlloc(m_indices)"},
        {&p->dev_masked_m, p->masked_m, sizeof(int32_t) * (size_t)p->num_groups,
         "cuMemAlloc(masked_m)"},
        {&p->dev_group_ends, p->group_ends, sizeof(int32_t) * (size_t)p->num_groups,
         "cuMemAlloc(group_ends)"},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (!bufs[i].host) continue; /* m_indices / masked_m / group_ends of other kinds */
        /* Never allocate 0 bytes (an error for the driver); 16 keeps alignment. */
        CU_TRY(drv->cuMemAlloc(bufs[i].dev, bufs[i].bytes ? bufs[i].bytes : 16), bufs[i].what);
        if (bufs[i].bytes)
            CU_TRY(drv->cuMemcpyHtoD(*bufs[i].dev, bufs[i].host, bufs[i].bytes), "cuMemcpyHtoD");
    }
done:
    ctx_pop(ctx);
    if (st != QG_SUCCESS) free_device(p);
    return st;
}

qg_status qgtk_problem_create(qgtk_problem_data **out, qg_context *ctx, const qgtk_problem_spec *spec) {
    qgtk_problem_data *p = NULL;
    qg_status st = qgtk_problem_create_host(&p, spec);
    if (st == QG_SUCCESS) st = qgtk_problem_upload(ctx, p);
    if (st != QG_SUCCESS) {
        qgtk_problem_free(p);
        p = NULL;
    }
    if (out) *out = p;
    return st;
}

void qgtk_problem_free(qgtk_problem_data *p) {
    if (!p) return;
    free_device(p);
    free(p->a);
    free(p->sfa);
    free(p->b);
    free(p->sfb);
    free(p->d);
    free(p->m_indices);
    free(p->masked_m);
    free(p->group_ends);
    free(p->ref);
    free(p->group_diff);
    free(p);
}

static qg_gemm_args base_args(const qgtk_problem_data *p) {
    qg_gemm_args a = {0};
    a.m = p->m;
    a.n = p->n;
    a.k = p->k;
    a.num_groups = p->num_groups;
    a.lda = p->lda;
    a.ldb = p->ldb;
    a.ldd = p->ldd;
    a.sfa_ld = p->sfa_ld;
    a.expected_m = p->kind == QG_GEMM_GROUPED_MASKED ? p->expected_m : 0;
    return a;
}

qg_gemm_args qgtk_problem_args(const qgtk_problem_data *p) {
    qg_gemm_args a = base_args(p);
    a.a = (const void *)(uintptr_t)p->dev_a;
    a.sfa = (const float *)(uintptr_t)p->dev_sfa;
    a.b = (const void *)(uintptr_t)p->dev_b;
    a.sfb = (const float *)(uintptr_t)p->dev_sfb;
    a.d = (void *)(uintptr_t)p->dev_d;
    a.m_indices = (const int32_t *)(uintptr_t)p->dev_m_indices;
    a.masked_m = (const int32_t *)(uintptr_t)p->dev_masked_m;
    a.group_ends = (const int32_t *)(uintptr_t)p->dev_group_ends;
    return a;
}

qg_gemm_args qgtk_problem_host_args(const qgtk_problem_data *p) {
    qg_gemm_args a = base_args(p);
    a.a = p->a;
    a.sfa = p->sfa;
    a.b = p->b;
    a.sfb = p->sfb;
    a.d = p->d;
    a.m_indices = p->m_indices;
    a.masked_m = p->masked_m;
    a.group_ends = p->group_ends;
    return a;
}

qg_status qgtk_problem_update_indices(qg_context *ctx, qgtk_problem_data *p) {
    if (!p) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "p: expected non-NULL");
    if (ctx != p->ctx)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "ctx: not the context the problem lives in");
    free(p->ref);
    p->ref = NULL;
    qg_status st = ctx_push(ctx);
    if (st != QG_SUCCESS) return st;
    if (p->m_indices && p->m > 0)
        CU_TRY(drv_of(ctx)->cuMemcpyHtoD(p->dev_m_indices, p->m_indices, sizeof(int32_t) * (size_t)p->m),
               "cuMemcpyHtoD(m_indices)");
    if (p->masked_m)
        CU_TRY(drv_of(ctx)->cuMemcpyHtoD(p->dev_masked_m, p->masked_m,
                                      sizeof(int32_t) * (size_t)p->num_groups),
               "cuMemcpyHtoD(masked_m)");
    if (p->group_ends)
        CU_TRY(drv_of(ctx)->cuMemcpyHtoD(p->dev_group_ends, p->group_ends,
                                      sizeof(int32_t) * (size_t)p->num_groups),
               "cuMemcpyHtoD(group_ends)");
done:
    ctx_pop(ctx);
    return st;
}

qg_status qgtk_problem_poison(qg_context *ctx, qgtk_problem_data *p, CUstream stream) {
    if (!p || !p->ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "p: expected an uploaded problem");
    qg_status st = ctx_push(ctx);
    if (st != QG_SUCCESS) return st;
    if (p->d_bytes) CU_TRY(drv_of(ctx)->cuMemsetD8Async(p->dev_d, 0xff, p->d_bytes, stream),
                           "cuMemsetD8Async(D)");
done:
    ctx_pop(ctx);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Reference and check                                                       */
/* ------------------------------------------------------------------------ */

qg_status qgtk_problem_reference(qg_context *ctx, qgtk_problem_data *p, qgtk_ref_where where) {
    if (!p) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "p: expected non-NULL");
    if (where == QGTK_REF_AUTO)
        where = p->rows * p->n * p->k <= QGTK_CPU_REFERENCE_MAX_WORK ? QGTK_REF_CPU : QGTK_REF_GPU;
    free(p->ref);
    size_t count = (size_t)(p->rows * p->n);
    p->ref = malloc(sizeof(double) * (count ? count : 1));
    if (!p->ref) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "reference: host allocation failed");
    qg_status st;
    if (where == QGTK_REF_CPU) {
        qg_gemm_args host = qgtk_problem_host_args(p);
        st = qgtk_reference_gemm(p->kind, &host, p->ref);
    } else {
        st = ctx_push(ctx);
        if (st == QG_SUCCESS) {
            CUdeviceptr dev_ref = 0;
            CU_TRY(drv_of(ctx)->cuMemAlloc(&dev_ref, sizeof(double) * (count ? count : 1)),
                   "cuMemAlloc(reference)");
            qg_gemm_args dev = qgtk_problem_args(p);
            st = qgtk_reference_gemm_device(ctx, p->kind, &dev, dev_ref, NULL);
            if (st == QG_SUCCESS && count)
                CU_TRY(drv_of(ctx)->cuMemcpyDtoH(p->ref, dev_ref, sizeof(double) * count),
                       "cuMemcpyDtoH(reference)");
        done:
            if (dev_ref) drv_of(ctx)->cuMemFree(dev_ref);
            ctx_pop(ctx);
        }
    }
    if (st != QG_SUCCESS) {
        free(p->ref);
        p->ref = NULL;
        return st;
    }
    p->ref_on_gpu = where == QGTK_REF_GPU;
    return QG_SUCCESS;
}

uint64_t qgtk_fnv1a64(const void *data, size_t n) {
    const unsigned char *b = data;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* a word at a time: D can be hundreds of MB */
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Synchronize the context and copy D to p->d. */
static qg_status download_d(qg_context *ctx, qgtk_problem_data *p) {
    if (!p || !p->ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "p: expected an uploaded problem");
    qg_status st = ctx_push(ctx);
    if (st != QG_SUCCESS) return st;
    /* The GEMM may have run on a non-blocking stream, which a synchronous copy
     * would not wait for. */
    CU_TRY(drv_of(ctx)->cuCtxSynchronize(), "cuCtxSynchronize (the GEMM failed asynchronously?)");
    if (p->d_bytes) CU_TRY(drv_of(ctx)->cuMemcpyDtoH(p->d, p->dev_d, p->d_bytes), "cuMemcpyDtoH(D)");
done:
    ctx_pop(ctx);
    return st;
}

qg_status qgtk_problem_hash(qg_context *ctx, qgtk_problem_data *p, uint64_t *hash) {
    if (!hash) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "hash: expected non-NULL");
    qg_status st = download_d(ctx, p);
    if (st == QG_SUCCESS) *hash = qgtk_fnv1a64(p->d, p->d_bytes);
    return st;
}

qg_status qgtk_problem_check(qg_context *ctx, qgtk_problem_data *p, qgtk_check_result *res) {
    if (!res) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "res: expected non-NULL");
    memset(res, 0, sizeof *res);
    qg_status st = download_d(ctx, p);
    if (st == QG_SUCCESS && !p->ref) st = qgtk_problem_reference(ctx, p, QGTK_REF_AUTO);
    if (st != QG_SUCCESS) return st;

    const int G = p->num_groups;
    qgtk_diff_acc all = {0};
    qgtk_diff_acc *per_group = calloc((size_t)G, sizeof *per_group);
    double *x = malloc(sizeof(double) * (size_t)p->n);
    /* the group of each row (-1: must keep the poison), by the layout's rule */
    int32_t *group_of = malloc(sizeof(int32_t) * (size_t)(p->rows ? p->rows : 1));
    if (!per_group || !x || !group_of) {
        free(per_group);
        free(x);
        free(group_of);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "check: host allocation failed");
    }
    const qg_gemm_args host = qgtk_problem_host_args(p);
    if ((st = qgtk_row_groups(p->kind, &host, group_of)) != QG_SUCCESS) {
        free(per_group);
        free(x);
        free(group_of);
        return st;
    }
    for (int64_t r = 0; r < p->rows; r++) {
        const uint16_t *drow = p->d + r * p->ldd;
        int g = group_of[r];
        if (g < 0) {
            for (int64_t c = 0; c < p->ldd; c++) res->modified_count += drow[c] != 0xffff;
            continue;
        }
        const double *ref = p->ref + r * p->n;
        bool row_unwritten = false;
        for (int c = 0; c < p->n; c++) {
            x[c] = (double)qg_bf16_decode(drow[c]);
            if (drow[c] == 0xffff) {
                /* where: the rows and columns that kept the poison */
                if (res->unwritten_count++ == 0) {
                    res->unwritten_rows[0] = res->unwritten_rows[1] = r;
                    res->unwritten_cols[0] = res->unwritten_cols[1] = c;
                }
                if (r > res->unwritten_rows[1]) res->unwritten_rows[1] = r;
                if (c < res->unwritten_cols[0]) res->unwritten_cols[0] = c;
                if (c > res->unwritten_cols[1]) res->unwritten_cols[1] = c;
                row_unwritten = true;
            }
            if (isnan(x[c])) {
                res->nan_count++;
            } else {
                double e = fabs(x[c] - ref[c]);
                if (e > res->max_abs_err || isnan(e)) res->max_abs_err = e;
            }
        }
        res->unwritten_row_count += row_unwritten;
        for (int64_t c = p->n; c < p->ldd; c++) res->modified_count += drow[c] != 0xffff;
        res->checked += p->n;
        qgtk_diff_add(&all, x, ref, (size_t)p->n);
        qgtk_diff_add(&per_group[g], x, ref, (size_t)p->n);
    }
    res->diff = qgtk_diff_result(&all);
    res->group_diff_max = 0.0;
    for (int g = 0; g < G; g++) {
        p->group_diff[g] = qgtk_diff_result(&per_group[g]);
        if (!(p->group_diff[g] <= res->group_diff_max)) res->group_diff_max = p->group_diff[g];
    }
    res->hash = qgtk_fnv1a64(p->d, p->d_bytes);
    res->gpu_reference = p->ref_on_gpu;
    free(per_group);
    free(x);
    free(group_of);
    return QG_SUCCESS;
}

qg_status qgtk_gemm_launch(qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *args,
                          const qg_config *cfg, CUstream stream) {
    switch (kind) {
    case QG_GEMM_DENSE: return qg_fp8_gemm_nt(ctx, args, cfg, stream);
    case QG_GEMM_GROUPED_CONTIGUOUS:
        return qg_m_grouped_fp8_gemm_nt_contiguous(ctx, args, cfg, stream);
    case QG_GEMM_GROUPED_MASKED: return qg_m_grouped_fp8_gemm_nt_masked(ctx, args, cfg, stream);
    case QG_GEMM_GROUPED_PSUM: return qg_m_grouped_fp8_gemm_nt_psum(ctx, args, cfg, stream);
    case QG_GEMM_WGRAD: return qg_fp8_gemm_nt_wgrad(ctx, args, cfg, stream);
    case QG_GEMM_K_GROUPED: return qg_k_grouped_fp8_gemm_nt_contiguous(ctx, args, cfg, stream);
    case QG_GEMM_FP8_BATCHED: break; /* batch strides: qg_batched_fp8_gemm_nt itself */
    }
    return qg__fail(QG_ERROR_INVALID_ARGUMENT, "kind: expected 0..5, got %d", (int)kind);
}

qg_status qgtk_problem_run_check(qg_context *ctx, qgtk_problem_data *p, const qg_config *cfg,
                                CUstream stream, qgtk_check_result *res) {
    if (!res) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "res: expected non-NULL");
    memset(res, 0, sizeof *res);
    qg_status st = qgtk_problem_poison(ctx, p, stream);
    if (st != QG_SUCCESS) return st;
    qg_gemm_args args = qgtk_problem_args(p);
    st = qgtk_gemm_launch(ctx, p->kind, &args, cfg, stream);
    if (st != QG_SUCCESS) return st;
    return qgtk_problem_check(ctx, p, res);
}

static qg_status load_helper_kernel(qg_context *ctx, const char *header, const char *name,
                                    CUmodule *module, CUfunction *fn);

qg_status qgtk_pdl_probe(qg_context *ctx, qgtk_problem_data *p, const qg_config *cfg,
                        CUstream stream, char operand, unsigned *control_differing,
                        qgtk_check_result *res) {
    if (!p || !p->ctx || p->kind == QG_GEMM_GROUPED_MASKED || !control_differing || !res ||
        (operand != 'A' && operand != 'B'))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qgtk_pdl_probe: expected an uploaded dense or contiguous problem and "
                        "operand 'A' or 'B'");
    memset(res, 0, sizeof *res);
    *control_differing = 0;
    qg_status st = ctx_push(ctx);
    if (st != QG_SUCCESS) return st;
    const qg_driver *drv = drv_of(ctx);
    CUmodule module = NULL;
    CUfunction copy_fn, read_fn;
    CUdeviceptr saved = 0, counter = 0;
    /* The operand the slow copy writes (lda and ldb are multiples of 16). */
    CUdeviceptr *target = operand == 'A' ? &p->dev_a : &p->dev_b;
    const size_t bytes = operand == 'A' ? p->a_bytes : p->b_bytes;
    unsigned long long words = bytes / 16;
    if ((st = load_helper_kernel(ctx, "pdl_probe.cuh", "qg_pdl_slow_copy_kernel", &module,
                                 &copy_fn)) != QG_SUCCESS)
        goto done;
    CU_TRY(drv->cuModuleGetFunction(&read_fn, module, "qg_pdl_reader_kernel"),
           "cuModuleGetFunction(qg_pdl_reader_kernel)");
    CU_TRY(drv->cuMemAlloc(&saved, bytes), "cuMemAlloc(copy of the operand)");
    CU_TRY(drv->cuMemAlloc(&counter, sizeof(unsigned)), "cuMemAlloc(counter)");
    CU_TRY(drv->cuMemcpyDtoD(saved, *target, bytes), "cuMemcpyDtoD(operand)");
    CU_TRY(drv->cuMemsetD8(counter, 0, sizeof(unsigned)), "cuMemsetD8(counter)");

    CUlaunchAttribute pdl_attr;
    memset(&pdl_attr, 0, sizeof pdl_attr);
    pdl_attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    pdl_attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig one_cta = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64,
                              .blockDimY = 1, .blockDimZ = 1, .hStream = stream};
    CUlaunchConfig reader = {.gridDimX = 132, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256,
                             .blockDimY = 1, .blockDimZ = 1, .hStream = stream,
                             .attrs = &pdl_attr, .numAttrs = 1};
    void *copy_params[] = {target, &saved, &words};
    void *read_params[] = {target, &saved, &words, &counter};
    for (int pass = 0; pass < 2; pass++) {
        CU_TRY(drv->cuMemsetD8Async(*target, 0, bytes, stream), "cuMemsetD8Async(operand)");
        if (pass == 1 && (st = qgtk_problem_poison(ctx, p, stream)) != QG_SUCCESS) goto done;
        CU_TRY(drv->cuLaunchKernelEx(&one_cta, copy_fn, copy_params, NULL),
               "launching qg_pdl_slow_copy_kernel");
        if (pass == 0) {
            CU_TRY(drv->cuLaunchKernelEx(&reader, read_fn, read_params, NULL),
                   "launching qg_pdl_reader_kernel");
            CU_TRY(drv->cuStreamSynchronize(stream), "cuStreamSynchronize(control)");
            CU_TRY(drv->cuMemcpyDtoH(control_differing, counter, sizeof(unsigned)),
                   "cuMemcpyDtoH(counter)");
        } else {
            qg_gemm_args args = qgtk_problem_args(p);
            if ((st = qgtk_gemm_launch(ctx, p->kind, &args, cfg, stream)) != QG_SUCCESS) goto done;
            st = qgtk_problem_check(ctx, p, res);
        }
    }
done:
    if (st != QG_SUCCESS) drv->cuStreamSynchronize(stream); /* nothing in flight uses them */
    if (saved) {
        drv->cuMemcpyDtoD(*target, saved, bytes); /* as uploaded, whatever happened */
        drv->cuMemFree(saved);
    }
    if (counter) drv->cuMemFree(counter);
    if (module) drv->cuModuleUnload(module);
    ctx_pop(ctx);
    return st;
}

bool qgtk_check_passed(const qgtk_check_result *res, double bound) {
    /* Written so that a NaN diff fails. */
    return res->diff < bound && res->group_diff_max < bound && res->nan_count == 0 &&
           res->unwritten_count == 0 && res->modified_count == 0;
}

const char *qgtk_check_describe(const qgtk_check_result *res, char *buf, size_t len) {
    char where[128] = "";
    if (res->unwritten_count > 0)
        snprintf(where, sizeof where, " (in %lld rows of rows %lld..%lld, cols %d..%d)",
                 (long long)res->unwritten_row_count, (long long)res->unwritten_rows[0],
                 (long long)res->unwritten_rows[1], res->unwritten_cols[0], res->unwritten_cols[1]);
    snprintf(buf, len,
             "diff %.3g (worst group %.3g), nan %lld, unwritten %lld%s, modified %lld, of %lld "
             "checked, max abs err %.3g, %s reference",
             res->diff, res->group_diff_max, (long long)res->nan_count,
             (long long)res->unwritten_count, where, (long long)res->modified_count,
             (long long)res->checked, res->max_abs_err, res->gpu_reference ? "gpu" : "cpu");
    return buf;
}

/* ------------------------------------------------------------------------ */
/* GPU reference                                                             */
/* ------------------------------------------------------------------------ */

/* JIT-compile one of the testkit's helper kernels (testkit/kernels/<header>,
 * embedded in the testkit as the library embeds its own) through ctx's JIT
 * and caches, and load it; ctx must be current. *module is left NULL on
 * failure. */
static qg_status load_helper_kernel(qg_context *ctx, const char *header, const char *name,
                                    CUmodule *module, CUfunction *fn) {
    const char *source = qgtk_kernel_source(header);
    if (!source) return qg__fail(QG_ERROR_INTERNAL, "testkit kernel %s is not embedded", header);
    const void *cubin = NULL;
    size_t cubin_size = 0;
    qg_status st = qg__context_compile_source(ctx, source, &cubin, &cubin_size, NULL);
    if (st != QG_SUCCESS) return st;
    CU_TRY(drv_of(ctx)->cuModuleLoadData(module, cubin), "cuModuleLoadData(helper kernel)");
    CU_TRY(drv_of(ctx)->cuModuleGetFunction(fn, *module, name), "cuModuleGetFunction(helper kernel)");
done:
    if (st != QG_SUCCESS && *module) {
        drv_of(ctx)->cuModuleUnload(*module);
        *module = NULL;
    }
    return st;
}

#define REF_TILE 64     /* QG_REF_TILE of testkit/kernels/reference.cuh */
#define REF_THREADS 256 /* QG_REF_THREADS */

qg_status qgtk_reference_gemm_device(qg_context *ctx, qg_gemm_kind kind,
                                    const qg_gemm_args *dev_args, CUdeviceptr ref,
                                    CUstream stream) {
    if (!dev_args) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "dev_args: expected non-NULL");
    if (!ref) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "ref: expected a device pointer");
    const qg_gemm_args *p = dev_args;
    if (kind != QG_GEMM_DENSE && kind != QG_GEMM_GROUPED_CONTIGUOUS &&
        kind != QG_GEMM_GROUPED_MASKED && kind != QG_GEMM_GROUPED_PSUM)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "kind: expected 0, 1, 2 or 3, got %d", (int)kind);
    if (p->m < 0 || p->n < 1 || p->k < 16 || p->k % 16 || p->num_groups < 1 ||
        (kind == QG_GEMM_DENSE && p->num_groups != 1))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "dev_args: bad shape m=%d n=%d k=%d num_groups=%d", p->m, p->n, p->k,
                        p->num_groups);
    if (!p->a || !p->sfa || !p->b || !p->sfb ||
        (kind == QG_GEMM_GROUPED_CONTIGUOUS && !p->m_indices) ||
        (kind == QG_GEMM_GROUPED_MASKED && !p->masked_m) ||
        (kind == QG_GEMM_GROUPED_PSUM && !p->group_ends))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "dev_args: a NULL input pointer");
    if (p->lda < p->k || p->ldb < p->k || p->sfa_ld < p->m || p->sfa_ld % 4)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "dev_args: strides lda=%lld ldb=%lld sfa_ld=%lld too small or misaligned",
                        (long long)p->lda, (long long)p->ldb, (long long)p->sfa_ld);
    long long rows = (long long)p->m * (kind == QG_GEMM_GROUPED_MASKED ? p->num_groups : 1);
    if (rows == 0) return QG_SUCCESS;
    long long ytiles = (rows + REF_TILE - 1) / REF_TILE;
    if (ytiles > 65535)
        return qg__fail(QG_ERROR_UNSUPPORTED, "reference kernel: %lld rows exceed %d", rows,
                        65535 * REF_TILE);

    qg_status st = ctx_push(ctx);
    if (st != QG_SUCCESS) return st;
    const qg_driver *drv = drv_of(ctx);
    CUmodule module = NULL;
    CUfunction fn;
    if ((st = load_helper_kernel(ctx, "reference.cuh", "qg_reference_kernel", &module, &fn)) !=
        QG_SUCCESS)
        goto done;
    {
        int kind_i = (int)kind, m = p->m, n = p->n, k = p->k, groups = p->num_groups;
        CUdeviceptr a = (CUdeviceptr)(uintptr_t)p->a, sfa = (CUdeviceptr)(uintptr_t)p->sfa,
                    b = (CUdeviceptr)(uintptr_t)p->b, sfb = (CUdeviceptr)(uintptr_t)p->sfb,
                    mi = (CUdeviceptr)(uintptr_t)p->m_indices,
                    /* psum: the ends travel as masked_m, as in the library */
                    mm = (CUdeviceptr)(uintptr_t)(kind == QG_GEMM_GROUPED_PSUM ? p->group_ends
                                                                               : p->masked_m),
                    out = ref;
        long long lda = p->lda, sfa_ld = p->sfa_ld, ldb = p->ldb;
        /* Same order and types as qg_reference_kernel's parameters. */
        void *params[] = {&kind_i, &m,   &n,   &k,  &groups, &a,  &lda,  &sfa,
                          &sfa_ld, &b,   &ldb, &sfb, &mi,    &mm, &rows, &out};
        CUlaunchConfig cfg = {0};
        cfg.gridDimX = (unsigned)((p->n + REF_TILE - 1) / REF_TILE);
        cfg.gridDimY = (unsigned)ytiles;
        cfg.gridDimZ = 1;
        cfg.blockDimX = REF_THREADS;
        cfg.blockDimY = 1;
        cfg.blockDimZ = 1;
        cfg.hStream = stream;
        CU_TRY(drv->cuLaunchKernelEx(&cfg, fn, params, NULL), "cuLaunchKernelEx(reference)");
    }
    CU_TRY(drv->cuStreamSynchronize(stream), "cuStreamSynchronize(reference)");
done:
    if (module) drv->cuModuleUnload(module);
    ctx_pop(ctx);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Compiling many kernels                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
    qg_context *ctx;
    const qg_problem *problems;
    const qg_config *cfgs;
    qg_status *statuses;
    atomic_int failures;
    atomic_int done;
    int count;
    struct timespec start;
} compile_job;

/* A progress line (stdout, as the tests' own lines) per this many kernels:
 * a sweep of hundreds takes many minutes on a small machine. */
#define COMPILE_PROGRESS_EVERY 20

static void compile_one(void *user, int64_t i, int worker) {
    (void)worker;
    compile_job *job = user;
    qg_status st = qg_compile(job->ctx, &job->problems[i], job->cfgs ? &job->cfgs[i] : NULL, NULL);
    if (job->statuses) job->statuses[i] = st;
    if (st != QG_SUCCESS) atomic_fetch_add(&job->failures, 1);
    const int done = atomic_fetch_add(&job->done, 1) + 1;
    if (done % COMPILE_PROGRESS_EVERY == 0 && done < job->count) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        printf("    ... compiled %d of %d kernels, %.0f s\n", done, job->count,
               (double)(now.tv_sec - job->start.tv_sec) + (now.tv_nsec - job->start.tv_nsec) * 1e-9);
        fflush(stdout);
    }
}

int qgtk_compile_many(qg_context *ctx, const qg_problem *problems, const qg_config *cfgs,
                     int count, qg_status *statuses) {
    compile_job job = {.ctx = ctx, .problems = problems, .cfgs = cfgs, .statuses = statuses,
                       .count = count};
    atomic_init(&job.failures, 0);
    atomic_init(&job.done, 0);
    clock_gettime(CLOCK_MONOTONIC, &job.start);
    qgtk_parallel_for(count, qgtk_num_workers(), compile_one, &job);
    return atomic_load(&job.failures);
}

/* ------------------------------------------------------------------------ */
/* Timing                                                                    */
/* ------------------------------------------------------------------------ */

struct qgtk_l2_flusher {
    qg_context *ctx;
    qgtk_l2_flush_mode mode;
    CUdeviceptr buf, sink;
    size_t bytes;
    unsigned char value;
    CUmodule module;   /* QGTK_L2_FLUSH_CLEAN: testkit/kernels/l2_flush.cuh */
    CUfunction read;
};

#define L2_READ_THREADS 256
#define L2_READ_NEVER 0x9e3779b9u /* the buffer's words XOR to 0: never stored */

qg_status qgtk_l2_flusher_create(qg_context *ctx, qgtk_l2_flush_mode mode, qgtk_l2_flusher **out) {
    if (!out) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "out: expected non-NULL");
    *out = NULL;
    if (mode != QGTK_L2_FLUSH_WRITE && mode != QGTK_L2_FLUSH_CLEAN)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "l2 flusher: mode must be 0 (write) or 1 "
                        "(clean), got %d", (int)mode);
    qg_status st = ctx_push(ctx);
    if (st != QG_SUCCESS) return st;
    qgtk_l2_flusher *f = calloc(1, sizeof *f);
    if (!f) {
        ctx_pop(ctx);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "l2 flusher: host allocation failed");
    }
    f->ctx = ctx;
    f->mode = mode;
    f->bytes = 2 * (props_of(ctx).l2_bytes ? props_of(ctx).l2_bytes : (size_t)64 << 20);
    CU_TRY(drv_of(ctx)->cuMemAlloc(&f->buf, f->bytes), "cuMemAlloc(L2 flush buffer)");
    if (mode == QGTK_L2_FLUSH_CLEAN) {
        CU_TRY(drv_of(ctx)->cuMemAlloc(&f->sink, sizeof(unsigned int)), "cuMemAlloc(L2 flush sink)");
        st = load_helper_kernel(ctx, "l2_flush.cuh", "qg_l2_read_kernel", &f->module, &f->read);
    }
done:
    ctx_pop(ctx);
    if (st != QG_SUCCESS) {
        qgtk_l2_flusher_destroy(f);
        return st;
    }
    *out = f;
    return QG_SUCCESS;
}

qg_status qgtk_l2_flush(qgtk_l2_flusher *f, CUstream stream) {
    if (!f) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "f: expected non-NULL");
    qg_status st = ctx_push(f->ctx);
    if (st != QG_SUCCESS) return st;
    const qg_driver *drv = drv_of(f->ctx);
    f->value++; /* a different value each time, so no write can be elided */
    CU_TRY(drv->cuMemsetD8Async(f->buf, f->value, f->bytes, stream), "cuMemsetD8Async(L2)");
    if (f->mode == QGTK_L2_FLUSH_CLEAN) {
        unsigned long long words = f->bytes / 16;
        unsigned int never = L2_READ_NEVER;
        void *params[] = {&f->buf, &words, &never, &f->sink};
        CUlaunchConfig cfg = {0};
        cfg.gridDimX = (unsigned)(4 * (props_of(f->ctx).sm_count > 0 ? props_of(f->ctx).sm_count : 132));
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = L2_READ_THREADS;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = stream;
        CU_TRY(drv->cuLaunchKernelEx(&cfg, f->read, params, NULL), "cuLaunchKernelEx(l2 read)");
    }
done:
    ctx_pop(f->ctx);
    return st;
}

void qgtk_l2_flusher_destroy(qgtk_l2_flusher *f) {
    if (!f) return;
    if (ctx_push(f->ctx) == QG_SUCCESS) {
        if (f->module) drv_of(f->ctx)->cuModuleUnload(f->module);
        if (f->sink) drv_of(f->ctx)->cuMemFree(f->sink);
        if (f->buf) drv_of(f->ctx)->cuMemFree(f->buf);
        ctx_pop(f->ctx);
    }
    free(f);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

qg_status qgtk_time_interleaved_us(qg_context *ctx, CUstream stream, qgtk_l2_flush_mode flush,
                                  int count, const qgtk_timed_fn *fns, void *const *users,
                                  int warmup, int runs, qgtk_timing *outs) {
    if (count < 1 || count > QGTK_TIME_MAX_FNS || !fns || !users || !outs || runs < 1 || warmup < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "time: expected 1..%d functions, fns, users and outs non-NULL, runs >= 1, "
                        "warmup >= 0 (count %d, runs %d, warmup %d)", QGTK_TIME_MAX_FNS, count, runs,
                        warmup);
    for (int f = 0; f < count; f++) {
        if (!fns[f]) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "time: fns[%d] is NULL", f);
        memset(&outs[f], 0, sizeof outs[f]);
    }
    qgtk_l2_flusher *flusher = NULL;
    qg_status st = qgtk_l2_flusher_create(ctx, flush, &flusher);
    if (st != QG_SUCCESS) return st;
    double *us = malloc(sizeof(double) * (size_t)runs * (size_t)count);
    if (!us) {
        qgtk_l2_flusher_destroy(flusher);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "time: host allocation failed");
    }
    st = ctx_push(ctx);
    if (st != QG_SUCCESS) {
        free(us);
        qgtk_l2_flusher_destroy(flusher);
        return st;
    }
    const qg_driver *drv = drv_of(ctx);
    CUevent start = NULL, stop = NULL;
    CU_TRY(drv->cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    CU_TRY(drv->cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
    for (int i = 0; i < warmup; i++)
        for (int f = 0; f < count; f++) {
            st = fns[f](users[f], stream);
            if (st != QG_SUCCESS) goto done;
        }
    /* Round i times every function once, so that a change of clocks or of
     * the machine's load during the measurement reaches all of them. */
    for (int i = 0; i < runs; i++)
        for (int f = 0; f < count; f++) {
            st = qgtk_l2_flush(flusher, stream);
            if (st != QG_SUCCESS) goto done;
            CU_TRY(drv->cuEventRecord(start, stream), "cuEventRecord");
            st = fns[f](users[f], stream);
            if (st != QG_SUCCESS) goto done;
            CU_TRY(drv->cuEventRecord(stop, stream), "cuEventRecord");
            CU_TRY(drv->cuEventSynchronize(stop), "cuEventSynchronize");
            float ms = 0.0f;
            CU_TRY(drv->cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
            us[(size_t)f * runs + i] = (double)ms * 1000.0;
        }
    for (int f = 0; f < count; f++) {
        double *t = us + (size_t)f * runs, sum = 0.0;
        for (int i = 0; i < runs; i++) sum += t[i];
        qsort(t, (size_t)runs, sizeof t[0], cmp_double);
        outs[f].runs = runs;
        outs[f].min_us = t[0];
        outs[f].max_us = t[runs - 1];
        outs[f].mean_us = sum / runs;
        outs[f].median_us = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    }
done:
    /* After an error, flushes or timed work may still be queued: let them
     * finish before their buffers and module go. */
    if (st != QG_SUCCESS) drv->cuStreamSynchronize(stream);
    if (start) drv->cuEventDestroy(start);
    if (stop) drv->cuEventDestroy(stop);
    ctx_pop(ctx);
    free(us);
    qgtk_l2_flusher_destroy(flusher);
    return st;
}

qg_status qgtk_time_us(qg_context *ctx, CUstream stream, qgtk_l2_flush_mode flush, qgtk_timed_fn fn,
                      void *user, int warmup, int runs, qgtk_timing *out) {
    return qgtk_time_interleaved_us(ctx, stream, flush, 1, &fn, &user, warmup, runs, out);
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */
/* ------------------------------------------------------------------------ */

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st, (void)type, (void)ftw;
    remove(path); /* best effort: keep walking */
    return 0;
}

void qgtk_remove_tree(const char *dir) { nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

/* ------------------------------------------------------------------------ */
/* Scratch device buffers                                                    */
/* ------------------------------------------------------------------------ */

CUdeviceptr qgtk_device_poisoned(qg_context *ctx, size_t bytes) {
    if (ctx_push(ctx) != QG_SUCCESS) return 0;
    const qg_driver *drv = drv_of(ctx);
    CUdeviceptr d = 0;
    if (drv->cuMemAlloc(&d, bytes + 16) == CUDA_SUCCESS &&
        drv->cuMemsetD8(d, 0xFF, bytes + 16) != CUDA_SUCCESS) {
        drv->cuMemFree(d);
        d = 0;
    }
    ctx_pop(ctx);
    return d;
}

CUdeviceptr qgtk_device_upload(qg_context *ctx, const void *host, size_t bytes) {
    if (ctx_push(ctx) != QG_SUCCESS) return 0;
    const qg_driver *drv = drv_of(ctx);
    CUdeviceptr d = 0;
    if (drv->cuMemAlloc(&d, bytes + 16) == CUDA_SUCCESS &&
        drv->cuMemcpyHtoD(d, host, bytes) != CUDA_SUCCESS) {
        drv->cuMemFree(d);
        d = 0;
    }
    ctx_pop(ctx);
    return d;
}

/* ------------------------------------------------------------------------ */
/* Memory figures                                                            */
/* ------------------------------------------------------------------------ */

size_t qgtk_host_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long size = 0, resident = 0;
    const int got = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    const long page = sysconf(_SC_PAGESIZE);
    return got == 2 && page > 0 ? (size_t)resident * (size_t)page : 0;
}

qg_status qgtk_device_memory(qg_context *ctx, size_t *free_bytes, size_t *total_bytes) {
    qg_status st = ctx_push(ctx);
    if (st != QG_SUCCESS) return st;
    size_t f = 0, t = 0;
    CU_TRY(drv_of(ctx)->cuMemGetInfo(&f, &t), "cuMemGetInfo");
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
done:
    ctx_pop(ctx);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Fault injection                                                           */
/* ------------------------------------------------------------------------ */

void qgtk_refuse_tile(int block_m, int block_n) { qg__refuse_tile(block_m, block_n); }

/* ------------------------------------------------------------------------ */
/* The helper kernels' sources                                               */
/* ------------------------------------------------------------------------ */

const char *qgtk_kernel_source(const char *name) {
    for (int i = 0; i < qgtk__num_kernel_files; ++i)
        if (!strcmp(qgtk__kernel_files[i].name, name)) return qgtk__kernel_files[i].text;
    return NULL;
}
