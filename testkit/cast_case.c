/*
 * cast_case.c -- the testkit's cast case (qgtk_cases.h): per-token,
 * per-block, per-channel and silu_mul casts on inputs with special values
 * (magnitudes 2^-12..2^12 by row, zero rows, e4m3-subnormal values, inf,
 * -inf, NaN, -0), outputs poisoned, checked bit for bit against a host
 * implementation of the torch formulas (docs/CAST.md) -- silu_mul with a
 * tolerance, the host's expf not being the GPU's -- then, on request, timed.
 */
#include "qgtk_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *qgtk_cast_kind_name(qg_cast_kind kind) {
    switch (kind) {
    case QG_CAST_KIND_PER_TOKEN: return "per-token";
    case QG_CAST_KIND_PER_BLOCK: return "per-block";
    case QG_CAST_KIND_PER_CHANNEL: return "per-channel";
    case QG_CAST_KIND_SILU_MUL: return "silu-mul";
    default: return NULL;
    }
}

static uint32_t fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static float bitsf(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
/* The GPU's arithmetic returns the canonical NaN 0x7FFFFFFF. */
static float canon(float f) { return isnan(f) ? bitsf(0x7FFFFFFFu) : f; }
static const float inv448 = (float)(1.0 / 448.0);

/* c10::detail::fp8e4m3fn_from_fp32_value */
uint8_t qgtk_torch_e4m3(float f) {
    const uint32_t fp8_max = 1087u << 20, denorm_mask = 141u << 23;
    uint32_t b = fbits(f);
    const uint32_t sign = b & 0x80000000u;
    b ^= sign;
    uint8_t r;
    if (b >= fp8_max) r = 0x7F;
    else if (b < (121u << 23)) r = (uint8_t)(fbits(bitsf(b) + bitsf(denorm_mask)) - denorm_mask);
    else {
        const uint32_t odd = (b >> 20) & 1u;
        b += ((uint32_t)(7 - 127) << 23) + 0x7FFFFu;
        b += odd;
        r = (uint8_t)(b >> 20);
    }
    return (uint8_t)(r | (sign >> 24));
}

float qgtk_ceil_ue8m0(float s) {
    const uint32_t b = fbits(s) & 0x7FFFFFFFu;
    int e = (int)(b >> 23) + ((b & 0x7FFFFFu) != 0);
    e = e < 1 ? 1 : e > 254 ? 254 : e;
    return bitsf((uint32_t)e << 23);
}

void qgtk_fp8_scale(float amax, int ue, float *sf, float *mult) {
    if (amax < 1e-4f) amax = 1e-4f;
    if (ue) {
        *sf = qgtk_ceil_ue8m0(canon(amax * inv448));
        *mult = 1.0f / *sf;
    } else {
        *sf = canon(amax * inv448);
        *mult = canon(canon(1.0f / amax) * 448.0f);
    }
}

static int e4m3_ordinal(uint8_t x) { return (x & 0x80) ? -(int)(x & 0x7F) : (int)(x & 0x7F); }

int qgtk_e4m3_steps(uint8_t a, uint8_t b) {
    if ((a & 0x7F) == 0x7F || (b & 0x7F) == 0x7F) return a == b ? 0 : 1000;
    return abs(e4m3_ordinal(a) - e4m3_ordinal(b));
}

double qgtk_e4m3_value(uint8_t x) {
    const int e = (x >> 3) & 0xF, m = x & 7;
    const double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
    return (x & 0x80) ? -v : v;
}

float qgtk_fp8_group_check(qgtk_fp8_tally *t, const double *ref, const uint8_t *got, int64_t cols,
                           uint32_t got_sf_bits, int ue, double sf_tol) {
    double amax_d = 0;
    for (int64_t c = 0; c < cols; ++c) amax_d = fmax(amax_d, fabs(ref[c]));
    float sf, mult;
    qgtk_fp8_scale((float)amax_d, ue, &sf, &mult);
    if (got_sf_bits == 0xFFFFFFFFu) t->unwritten++;
    const float gs = bitsf(got_sf_bits);
    double rel = fabs((double)gs - sf) / sf;
    const float sf_ref = sf;
    if (ue && gs != sf) {
        /* the FP32 amax may sit on the other side of a power of two */
        float sf_plain, unused;
        qgtk_fp8_scale((float)amax_d, 0, &sf_plain, &unused);
        const double to_pow2 = fabs(log2((double)sf_plain) - nearbyint(log2((double)sf_plain)));
        if ((gs == 2 * sf || 2 * gs == sf) && to_pow2 < sf_tol) {
            rel = 0;
            mult = 1.0f / gs; /* then the bytes follow the kernel's scale */
        }
    }
    if (rel > t->sf_rel_max) t->sf_rel_max = rel;
    t->sf_bad += !(rel <= sf_tol);
    const float mult_ref = ue ? 1.0f / sf_ref : mult;
    for (int64_t c = 0; c < cols; ++c) {
        const uint8_t want = qgtk_torch_e4m3((float)ref[c] * mult);
        const int s = qgtk_e4m3_steps(got[c], want);
        t->elems++;
        t->mismatch += s > 0;
        t->far += s > 1 && fabs(ref[c] * mult) >= 16.0;
        if (s > t->max_steps) t->max_steps = s;
        const double eg = qgtk_e4m3_value(got[c]) * (double)gs - ref[c];
        const double ew = qgtk_e4m3_value(qgtk_torch_e4m3((float)ref[c] * mult_ref)) * (double)sf_ref - ref[c];
        t->err_got += eg * eg;
        t->err_want += ew * ew;
        t->ref_sq += ref[c] * ref[c];
    }
    return mult;
}

bool qgtk_fp8_tally_ok(const qgtk_fp8_tally *t, double *q_got, double *q_want) {
    *q_got = t->ref_sq > 0 ? t->err_got / t->ref_sq : 0;
    *q_want = t->ref_sq > 0 ? t->err_want / t->ref_sq : 0;
    return t->elems > 0 && t->mismatch * 50 <= t->elems && t->far == 0 && t->sf_bad == 0 &&
           *q_got <= 1.02 * *q_want + 1e-6 && t->unwritten == 0;
}

static uint32_t absbits(float f) { return fbits(f) & 0x7FFFFFFFu; }
static uint32_t umax(uint32_t a, uint32_t b) { return a > b ? a : b; }

static float urand(qgtk_rng *r) {
    return (float)((qgtk_rng_u64(r) >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* x [rows][ld] (ld >= cols) of bf16 values or floats: magnitudes 2^-12..2^12
 * by row, zero rows, e4m3-subnormal values, and inf / -inf / NaN / -0. */
static float *fill(qgtk_rng *rng, int64_t rows, int64_t cols, int64_t ld, int bf16) {
    float *x = calloc((size_t)(rows * ld + 1), sizeof *x);
    if (!x) return NULL;
    for (int64_t r = 0; r < rows; ++r) {
        const float mag = ldexpf(1.0f, (int)(qgtk_rng_u64(rng) % 25) - 12);
        const int zero_row = qgtk_rng_u64(rng) % 17 == 0;
        for (int64_t c = 0; c < cols; ++c) {
            float v = zero_row ? 0.0f : urand(rng) * mag;
            if (qgtk_rng_u64(rng) % 97 == 0) v *= 1e-6f;
            if (bf16) v = qg_bf16_decode(qg_bf16_encode(v));
            x[r * ld + c] = v;
        }
    }
    if (rows * cols > 1000) {
        x[17] = INFINITY;
        x[(rows / 2) * ld + 3] = -INFINITY;
        x[(rows / 3) * ld + cols / 2] = NAN;
        x[(rows / 4) * ld + 1] = -0.0f;
        x[(rows / 5) * ld] = 30000.0f; /* 29952 in bf16 */
        if (bf16)
            for (int64_t i = 0; i < rows * ld; ++i) x[i] = qg_bf16_decode(qg_bf16_encode(x[i]));
    }
    return x;
}

/* n values of x, as bf16 (x holds bf16 values) or floats (qgtk_device_upload). */
static CUdeviceptr upload(qg_context *ctx, const float *x, size_t n, int bf16) {
    if (!bf16) return qgtk_device_upload(ctx, x, n * 4);
    uint16_t *h = malloc(n * 2 + 2);
    if (!h) return 0;
    for (size_t i = 0; i < n; ++i) h[i] = (uint16_t)(fbits(x[i]) >> 16);
    const CUdeviceptr d = qgtk_device_upload(ctx, h, n * 2);
    free(h);
    return d;
}

typedef struct {
    int64_t bad_q, bad_sf, steps; /* mismatches; silu: bytes more than one step off */
} tally;

static int e4m3_step(uint8_t a, uint8_t b) {
    /* distance in codes for same-sign finite codes, large otherwise */
    if ((a ^ b) & 0x80) return (a & 0x7F) == 0 && (b & 0x7F) == 0 ? 0 : 100;
    return abs((int)(a & 0x7F) - (int)(b & 0x7F));
}

static void expect_q(tally *t, uint8_t got, uint8_t want, int silu) {
    if (got == want) return;
    t->bad_q++;
    if (!silu || e4m3_step(got, want) > 1) t->steps++;
}

static void expect_sf(tally *t, uint32_t got, uint32_t want, int silu) {
    if (got == want) return;
    if (silu && want != 0xFFFFFFFFu && got != 0xFFFFFFFFu) {
        const int64_t d = (int64_t)got - (int64_t)want;
        if (d >= -4 && d <= 4) return;
    }
    t->bad_sf++;
}

typedef qg_status (*cast_fn)(qg_context *, const qg_cast_args *, struct CUstream_st *);

typedef struct {
    qg_context *ctx;
    cast_fn fn;
    const qg_cast_args *args;
} cast_call;

static qg_status run_cast(void *user, CUstream stream) {
    const cast_call *x = user;
    return x->fn(x->ctx, x->args, stream);
}

/* Launch through a CUDA graph: compiled and loaded first, then captured (the
 * launch reads no device memory and allocates nothing), replayed once. */
static qg_status run_in_graph(const qg_driver *drv, const qgtk_cast_case *c, cast_call *call,
                              CUstream stream) {
    qg_status st = qg_cast_compile(call->ctx, c->kind, call->args, NULL, NULL);
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    if (st != QG_SUCCESS) return st;
    CUresult cr = drv->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (cr == CUDA_SUCCESS) {
        st = run_cast(call, stream);
        cr = drv->cuStreamEndCapture(stream, &graph);
    }
    if (cr == CUDA_SUCCESS && st == QG_SUCCESS) cr = drv->cuGraphInstantiate(&exec, graph, 0);
    if (cr == CUDA_SUCCESS && st == QG_SUCCESS) cr = drv->cuGraphLaunch(exec, stream);
    if (cr != CUDA_SUCCESS && st == QG_SUCCESS)
        st = qg__fail(QG_ERROR_CUDA, "capturing or replaying the cast in a CUDA graph: CUresult %d",
                      (int)cr);
    if (exec) drv->cuGraphExecDestroy(exec);
    if (graph) drv->cuGraphDestroy(graph);
    return st;
}

bool qgtk_cast_case_run(qg_context *ctx, CUstream stream, const qgtk_cast_case *c,
                        const qgtk_case_opts *opts, qgtk_case_result *res) {
    memset(res, 0, sizeof *res);
    res->diff = NAN;
    const qg_driver *drv;
    CUcontext cu, popped;
    if (!qg__context_cuda(ctx, &drv, &cu, NULL) || drv->cuCtxPushCurrent(cu) != CUDA_SUCCESS) {
        snprintf(res->why, sizeof res->why, "no device context");
        return false;
    }
    char *why = res->why;
    const size_t len = sizeof res->why;
    qgtk_rng rng;
    qgtk_rng_seed(&rng, opts->seed);
    const int G = c->groups < 1 ? 1 : c->groups, M = c->m, K = c->k;
    const int silu = c->kind == QG_CAST_KIND_SILU_MUL;
    const int64_t rows = (int64_t)G * M, in_cols = silu ? 2 * (int64_t)K : K;
    const int64_t ld_x = in_cols + c->pad, ld_out = K + c->pad;
    const int KB = (K + 127) / 128, sf_ld = (M + 3) / 4 * 4 + (c->pad ? 4 : 0);
    size_t sf_n;
    switch (c->kind) {
    case QG_CAST_KIND_PER_BLOCK: sf_n = (size_t)G * ((M + 127) / 128) * KB; break;
    case QG_CAST_KIND_PER_CHANNEL: sf_n = (size_t)(M / 128) * K; break;
    default: sf_n = c->mn ? (size_t)G * KB * sf_ld : (size_t)rows * KB;
    }
    int32_t *aux = NULL;
    size_t aux_n = 0;
    float *x = fill(&rng, rows, in_cols, ld_x, !c->f32);
    if (c->rows_mask == 1) {
        aux_n = (size_t)G;
        aux = malloc(aux_n * 4);
        static const int pick[] = {0, 1, -1, -2, 5, -3};
        for (int g = 0; aux && g < G; ++g)
            aux[g] = pick[g % 6] == -1 ? M : pick[g % 6] == -2 ? M + 5 : pick[g % 6] == 5 ? M / 2 + 1
                                                                     : pick[g % 6];
    } else if (c->rows_mask == 2) {
        aux_n = (size_t)rows;
        aux = malloc(aux_n * 4);
        for (int64_t r = 0; aux && r < rows; ++r) aux[r] = r % 128 < 100 ? (int)(r / 128 % 7) : -1;
    }
    /* bytes read and written once: x (silu: only the rows it casts count
     * alike; an upper bound), the e4m3 output, the scales */
    res->bytes = (double)rows * in_cols * (c->f32 ? 4 : 2) + (double)rows * K + (double)sf_n * 4;
    CUdeviceptr dx = 0, dq = 0, dsf = 0, daux = 0;
    uint8_t *q = malloc((size_t)(rows * ld_out) + 1);
    uint32_t *sf = malloc(sf_n * 4 + 4);
    if (!x || !q || !sf || (c->rows_mask && !aux)) {
        snprintf(why, len, "out of host memory");
        goto done;
    }
    dx = upload(ctx, x, (size_t)(rows * ld_x), !c->f32);
    dq = qgtk_device_poisoned(ctx, (size_t)(rows * ld_out));
    dsf = qgtk_device_poisoned(ctx, sf_n * 4);
    if (aux) daux = qgtk_device_upload(ctx, aux, aux_n * 4);
    if (!dx || !dq || !dsf || (aux && !daux)) {
        snprintf(why, len, "cuMemAlloc failed");
        goto done;
    }
    qg_cast_args a;
    memset(&a, 0, sizeof a);
    a.m = M, a.k = K, a.num_groups = G;
    a.x = (const void *)(uintptr_t)dx, a.ld_x = ld_x, a.x_fp32 = c->f32;
    a.out = (void *)(uintptr_t)dq, a.ld_out = ld_out;
    a.sf = (float *)(uintptr_t)dsf, a.sf_mn_major = c->mn, a.sf_ld = sf_ld, a.ue8m0 = c->ue;
    if (c->rows_mask == 1) a.masked_m = (const int32_t *)(uintptr_t)daux;
    if (c->rows_mask == 2) a.m_indices = (const int32_t *)(uintptr_t)daux;
    static const cast_fn fns[5] = {NULL, qg_per_token_cast, qg_per_block_cast, qg_per_channel_cast,
                                   qg_silu_mul_cast};
    if (c->kind < QG_CAST_KIND_PER_TOKEN || c->kind > QG_CAST_KIND_SILU_MUL) {
        snprintf(why, len, "cast kind %d is no quantizing cast", (int)c->kind);
        goto done;
    }
    cast_call call = {ctx, fns[c->kind], &a};
    qg_status st = c->graph ? run_in_graph(drv, c, &call, stream) : run_cast(&call, stream);
    if (st != QG_SUCCESS) {
        snprintf(why, len, "%s: %s", qg_status_string(st), qg_last_error());
        goto done;
    }
    if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
        snprintf(why, len, "the kernel faulted");
        goto done;
    }
    drv->cuMemcpyDtoH(q, dq, (size_t)(rows * ld_out));
    drv->cuMemcpyDtoH(sf, dsf, sf_n * 4);
    tally t = {0, 0, 0};
    if (c->kind == QG_CAST_KIND_PER_TOKEN || silu) {
        float *y = malloc((size_t)K * sizeof *y + 4);
        if (!y) {
            snprintf(why, len, "out of host memory");
            goto done;
        }
        for (int64_t r = 0; r < rows; ++r) {
            const int g = (int)(r / M), m = (int)(r % M);
            int live = 1;
            if (c->rows_mask == 1) live = m < aux[g];
            if (c->rows_mask == 2) live = aux[r] >= 0;
            const bool sampled = qgtk_sampled(r, rows, opts->sample);
            const float *row = x + r * ld_x;
            for (int col = 0; sampled && col < K; ++col)
                y[col] = silu ? canon(canon(row[col] / (1.0f + expf(-row[col]))) * row[K + col])
                              : row[col];
            for (int kb = 0; sampled && kb < KB; ++kb) {
                const int c0 = kb * 128, c1 = c0 + 128 < K ? c0 + 128 : K;
                uint32_t amax = 0;
                for (int col = c0; col < c1; ++col) amax = umax(amax, absbits(y[col]));
                float s, mult;
                qgtk_fp8_scale(bitsf(amax), c->ue, &s, &mult);
                for (int col = c0; col < c1; ++col)
                    expect_q(&t, q[r * ld_out + col], live ? qgtk_torch_e4m3(canon(y[col] * mult)) : 0xFF,
                             silu);
                const size_t at = c->mn ? ((size_t)g * KB + kb) * sf_ld + m : (size_t)r * KB + kb;
                expect_sf(&t, sf[at], live ? fbits(s) : 0xFFFFFFFFu, silu);
            }
            for (int64_t col = K; col < ld_out; ++col) expect_q(&t, q[r * ld_out + col], 0xFF, 0);
        }
        if (c->mn) /* the TMA padding rows are not written */
            for (int g = 0; g < G; ++g)
                for (int kb = 0; kb < KB; ++kb)
                    for (int m = M; m < sf_ld; ++m)
                        expect_sf(&t, sf[((size_t)g * KB + kb) * sf_ld + m], 0xFFFFFFFFu, 0);
        free(y);
    } else if (c->kind == QG_CAST_KIND_PER_BLOCK) {
        const int NB = (M + 127) / 128;
        for (int g = 0; g < G; ++g)
            for (int nb = 0; nb < NB; ++nb) {
                if (!qgtk_sampled((int64_t)g * NB + nb, (int64_t)G * NB, opts->sample)) continue;
                for (int kb = 0; kb < KB; ++kb) {
                    const int r1 = nb * 128 + 128 < M ? nb * 128 + 128 : M;
                    const int c1 = kb * 128 + 128 < K ? kb * 128 + 128 : K;
                    uint32_t amax = 0;
                    for (int r = nb * 128; r < r1; ++r)
                        for (int col = kb * 128; col < c1; ++col)
                            amax = umax(amax, absbits(x[((int64_t)g * M + r) * ld_x + col]));
                    float s, mult;
                    qgtk_fp8_scale(bitsf(amax), c->ue, &s, &mult);
                    expect_sf(&t, sf[((size_t)g * NB + nb) * KB + kb], fbits(s), 0);
                    for (int r = nb * 128; r < r1; ++r)
                        for (int col = kb * 128; col < c1; ++col) {
                            const int64_t row = (int64_t)g * M + r;
                            expect_q(&t, q[row * ld_out + col],
                                     qgtk_torch_e4m3(canon(x[row * ld_x + col] * mult)), 0);
                        }
                }
            }
    } else {
        for (int mb = 0; mb < M / 128; ++mb) {
            if (!qgtk_sampled(mb, M / 128, opts->sample)) continue;
            for (int col = 0; col < K; ++col) {
                uint32_t amax = 0;
                for (int r = mb * 128; r < mb * 128 + 128; ++r)
                    amax = umax(amax, absbits(x[(int64_t)r * ld_x + col]));
                float am = bitsf(amax);
                if (am < 1e-4f) am = 1e-4f;
                float s = canon(am * inv448);
                if (c->ue) s = qgtk_ceil_ue8m0(s);
                expect_sf(&t, sf[(size_t)mb * K + col], fbits(s), 0);
                for (int r = mb * 128; r < mb * 128 + 128; ++r)
                    expect_q(&t, q[(int64_t)r * ld_out + col],
                             qgtk_torch_e4m3(canon(x[(int64_t)r * ld_x + col] / s)), 0);
            }
        }
    }
    if (t.bad_sf || t.steps || (!silu && t.bad_q) || (silu && t.bad_q * 1000 > rows * K)) {
        snprintf(why, len, "%lld bytes differ (%lld beyond tolerance), %lld scales differ",
                 (long long)t.bad_q, (long long)t.steps, (long long)t.bad_sf);
        goto done;
    }
    res->diff = 0;
    res->passed = true;
    if (opts->runs > 0) {
        st = qgtk_time_us(ctx, stream, opts->flush, run_cast, &call, opts->warmup, opts->runs, &res->t);
        if (st != QG_SUCCESS) {
            res->passed = false;
            snprintf(why, len, "timing: %s", qg_last_error());
        }
        res->timed = res->passed;
    }
done:
    if (dx) drv->cuMemFree(dx);
    if (dq) drv->cuMemFree(dq);
    if (dsf) drv->cuMemFree(dsf);
    if (daux) drv->cuMemFree(daux);
    free(x), free(q), free(sf), free(aux);
    drv->cuCtxPopCurrent(&popped);
    return res->passed;
}
