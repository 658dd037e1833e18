/*
 * indexer_case.c -- the testkit's cases of the indexer / HC family
 * (qgtk_cases.h): FP8 MQA logits over ragged key ranges, over the paged KV
 * cache (schedule + logits, optionally replayed from a CUDA graph with new
 * context lengths), and the TF32 HC prenorm GEMM. Inputs as DeepGEMM's tests
 * make them (bf16-rounded normals cast to e4m3 per row with scale amax / 448),
 * outputs poisoned, every call run 4 times and required bitwise equal, the
 * result against an fp64 reference of the quantized inputs with DeepGEMM's
 * metric; what must stay untouched (columns past the defined part, a guard
 * row past the last) still poisoned. Then, on request, the call timed.
 */
#include "qgtk_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DP(x) ((void *)(uintptr_t)(x))

static float bf16_round(float x) { return qg_bf16_decode(qg_bf16_encode(x)); }

/* An FP8 row of d values as DeepGEMM's per-row cast makes it: codes and the
 * scale amax / 448. */
static float fp8_row(qgtk_rng *rng, uint8_t *codes, int d) {
    float v[128], amax = 0;
    for (int i = 0; i < d; ++i) {
        v[i] = bf16_round(qgtk_rng_normal(rng));
        amax = fmaxf(amax, fabsf(v[i]));
    }
    const float sc = fmaxf(amax, 1e-4f) / 448.0f;
    for (int i = 0; i < d; ++i) codes[i] = qg_fp8_e4m3_encode(v[i] / sc);
    return sc;
}

static double e4m3_table[256];

static void e4m3_table_init(void) {
    if (e4m3_table[0x38] == 0) /* 0x38 is 1.0 */
        for (int v = 0; v < 256; ++v) e4m3_table[v] = qg_fp8_e4m3_decode((uint8_t)v);
}

static double logit_ref(const uint8_t *q, const uint8_t *kv, double kv_scale, const float *w,
                        int heads, int d) {
    double sum = 0;
    for (int h = 0; h < heads; ++h) {
        double dot = 0;
        for (int i = 0; i < d; ++i) dot += e4m3_table[q[(size_t)h * d + i]] * e4m3_table[kv[i]];
        if (dot > 0) sum += dot * w[h];
    }
    return sum * kv_scale;
}

static double read_logit(const void *buf, size_t idx, int bf16) {
    if (bf16) return qg_bf16_decode(((const uint16_t *)buf)[idx]);
    return ((const float *)buf)[idx];
}

static bool is_poison(const void *buf, size_t idx, int bf16) {
    if (bf16) return ((const uint16_t *)buf)[idx] == 0xFFFFu;
    return ((const uint32_t *)buf)[idx] == 0xFFFFFFFFu;
}

typedef struct {
    const qg_driver *drv;
    CUdeviceptr ptr[12];
    int n;
} dev_mem;

static CUdeviceptr dalloc(dev_mem *m, size_t bytes) {
    CUdeviceptr p = 0;
    if (m->drv->cuMemAlloc(&p, bytes ? bytes : 16) != CUDA_SUCCESS) return 0;
    m->ptr[m->n++] = p;
    return p;
}

static void dfree(dev_mem *m) {
    for (int i = 0; i < m->n; ++i) m->drv->cuMemFree(m->ptr[i]);
    m->n = 0;
}

/* The runners' common start: the context current, res cleared. */
static bool begin(qg_context *ctx, const qg_driver **drv, qgtk_case_result *res) {
    memset(res, 0, sizeof *res);
    res->diff = NAN;
    CUcontext cu;
    e4m3_table_init();
    if (!qg__context_cuda(ctx, drv, &cu, NULL) || (*drv)->cuCtxPushCurrent(cu) != CUDA_SUCCESS) {
        snprintf(res->why, sizeof res->why, "no device context");
        return false;
    }
    return true;
}

static void end(const qg_driver *drv) {
    CUcontext popped;
    drv->cuCtxPopCurrent(&popped);
}

/* After a passing check: time fn on request (opts->runs > 0). */
static void time_call(qg_context *ctx, CUstream stream, const qgtk_case_opts *opts,
                      qgtk_timed_fn fn, void *user, qgtk_case_result *res) {
    res->passed = true;
    if (opts->runs <= 0) return;
    if (qgtk_time_us(ctx, stream, opts->flush, fn, user, opts->warmup, opts->runs, &res->t) !=
        QG_SUCCESS) {
        res->passed = false;
        snprintf(res->why, sizeof res->why, "timing: %s", qg_last_error());
        return;
    }
    res->timed = true;
}

/* opts->keep_output: a copy of the checked output into res (false, with the
 * reason, when out of host memory). */
static bool keep_output(const qgtk_case_opts *opts, const void *out, size_t bytes, int esz,
                        qgtk_case_result *res) {
    if (!opts->keep_output) return true;
    res->output = malloc(bytes);
    if (!res->output) {
        snprintf(res->why, sizeof res->why, "out of host memory for the output's copy");
        return false;
    }
    memcpy(res->output, out, bytes);
    res->output_bytes = bytes, res->output_esz = esz;
    return true;
}

/* An element of the kept output whose value the contract leaves open: set to
 * the poison bytes, so that a byte comparison holds two organisations to what
 * they must write. */
static void open_element(qgtk_case_result *res, size_t idx) {
    memset((uint8_t *)res->output + idx * (size_t)res->output_esz, 0xFF, (size_t)res->output_esz);
}

/* ---- MQA logits over ragged ranges ------------------------------------------------ */

typedef struct {
    qg_context *ctx;
    const void *args;
} idx_call;

static qg_status run_mqa(void *user, CUstream stream) {
    const idx_call *x = user;
    return qg_fp8_mqa_logits(x->ctx, x->args, stream);
}

bool qgtk_mqa_case_run(qg_context *ctx, CUstream stream, const qgtk_mqa_case *c,
                       const qgtk_case_opts *opts, qgtk_case_result *res) {
    const qg_driver *drv;
    if (!begin(ctx, &drv, res)) return false;
    qgtk_rng rng;
    qgtk_rng_seed(&rng, opts->seed);
    const int S = c->seq_len, SK = c->seq_len_kv, H = c->heads, D = c->head_dim;
    const int esz = c->bf16 ? 2 : 4;
    const int64_t ld_w = S % 2 ? H + 3 : H; /* odd cases: padded weight rows */
    uint8_t *q = malloc((size_t)S * H * D + 1), *kv = malloc((size_t)SK * D + 1);
    float *sc = malloc((size_t)SK * 4 + 4), *w = malloc((size_t)S * ld_w * 4 + 4);
    int32_t *ks = malloc((size_t)S * 4 + 4), *ke = malloc((size_t)S * 4 + 4);
    void *got = NULL, *first = NULL;
    dev_mem m = {drv, {0}, 0};
    if (!q || !kv || !sc || !w || !ks || !ke) {
        snprintf(res->why, sizeof res->why, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < (size_t)S * H * D; ++i)
        q[i] = qg_fp8_e4m3_encode(bf16_round(qgtk_rng_normal(&rng)));
    for (int j = 0; j < SK; ++j) sc[j] = fp8_row(&rng, kv + (size_t)j * D, D);
    for (size_t i = 0; i < (size_t)S * ld_w; ++i) w[i] = qgtk_rng_normal(&rng);
    int max_len = 0;
    double keys = 0;
    for (int i = 0; i < S; ++i) {
        int a = (int)(qgtk_rng_u64(&rng) % (uint64_t)(SK + 1));
        int b = (int)(qgtk_rng_u64(&rng) % (uint64_t)(SK + 1));
        if (a > b) { const int t = a; a = b; b = t; }
        if (qgtk_rng_u64(&rng) % 8 == 0) b = a;                               /* empty */
        if (c->mode != 2 && qgtk_rng_u64(&rng) % 8 == 0) b = SK + 5;          /* past the end */
        if (c->full_ranges) a = 0, b = SK;
        ks[i] = a, ke[i] = b;
        if (b - a > max_len) max_len = b - a;
        keys += (b > SK ? SK : b) - a;
    }
    if (max_len == 0) max_len = 1;
    const int cols = c->mode == 2 ? max_len : SK;
    const int64_t ld = ((int64_t)cols + 8 + 15) / 16 * 16;
    const size_t out_elems = (size_t)(S + 1) * ld, out_bytes = out_elems * esz;
    res->flops = 2.0 * keys * H * D;
    res->bytes = (double)S * H * D + (double)SK * (D + 4) + (double)S * H * 4 + 8.0 * S +
                 (c->mode == 1 ? (double)S * SK : keys) * esz;
    got = malloc(out_bytes);
    first = malloc(out_bytes);
    CUdeviceptr dq = dalloc(&m, (size_t)S * H * D), dkv = dalloc(&m, (size_t)SK * D),
                dsc = dalloc(&m, (size_t)SK * 4), dw = dalloc(&m, (size_t)S * ld_w * 4),
                dks = dalloc(&m, (size_t)S * 4), dke = dalloc(&m, (size_t)S * 4),
                dout = dalloc(&m, out_bytes);
    if (!got || !first) {
        snprintf(res->why, sizeof res->why, "out of host memory");
        goto done;
    }
    if (!dq || !dkv || !dsc || !dw || !dks || !dke || !dout) {
        snprintf(res->why, sizeof res->why, "cuMemAlloc failed");
        goto done;
    }
    drv->cuMemcpyHtoD(dq, q, (size_t)S * H * D);
    drv->cuMemcpyHtoD(dkv, kv, (size_t)SK * D);
    drv->cuMemcpyHtoD(dsc, sc, (size_t)SK * 4);
    drv->cuMemcpyHtoD(dw, w, (size_t)S * ld_w * 4);
    drv->cuMemcpyHtoD(dks, ks, (size_t)S * 4);
    drv->cuMemcpyHtoD(dke, ke, (size_t)S * 4);
    qg_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    a.seq_len = S, a.seq_len_kv = SK, a.heads = H, a.head_dim = D;
    a.q = DP(dq), a.kv = DP(dkv), a.ld_kv = D, a.kv_scales = DP(dsc);
    a.weights = DP(dw), a.ld_weights = ld_w, a.ks = DP(dks), a.ke = DP(dke);
    a.logits = DP(dout), a.ld_logits = ld, a.logits_bf16 = c->bf16;
    a.clean = c->mode == 1, a.max_seqlen_k = c->mode == 2 ? max_len : 0;
    idx_call call = {ctx, &a};
    for (int rep = 0; rep < 4; ++rep) {
        drv->cuMemsetD8Async(dout, 0xFF, out_bytes, stream);
        qg_status st = qg_fp8_mqa_logits(ctx, &a, stream);
        if (st != QG_SUCCESS) {
            snprintf(res->why, sizeof res->why, "run %d: %s", rep, qg_last_error());
            goto done;
        }
        if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(res->why, sizeof res->why, "run %d: the kernel faulted", rep);
            goto done;
        }
        drv->cuMemcpyDtoH(rep ? got : first, dout, out_bytes);
        if (rep && memcmp(got, first, out_bytes)) {
            snprintf(res->why, sizeof res->why, "run %d differs bitwise from the first", rep);
            goto done;
        }
    }
    qgtk_diff_acc acc;
    memset(&acc, 0, sizeof acc);
    for (int i = 0; i < S; ++i) {
        const int lo = ks[i] < 0 ? 0 : ks[i] > SK ? SK : ks[i];
        const int hi = ke[i] < 0 ? 0 : ke[i] > SK ? SK : ke[i];
        const bool row_sampled = qgtk_sampled(i, S, opts->sample);
        for (int64_t col = 0; col < ld; ++col) {
            const size_t idx = (size_t)i * ld + col;
            /* the key this column holds, or -1 past the row's defined part */
            const int j = c->mode == 2 ? (col < hi - lo ? lo + (int)col : -1)
                                       : (col < SK ? (int)col : -1);
            const bool in = j >= lo && j < hi && j >= 0;
            if (col >= cols || (c->mode == 2 && !in)) {
                if (!is_poison(first, idx, c->bf16)) {
                    snprintf(res->why, sizeof res->why, "row %d column %lld written (must stay "
                             "untouched)", i, (long long)col);
                    goto done;
                }
                continue;
            }
            const double y = read_logit(first, idx, c->bf16);
            if (!in) {
                /* plain: the q block's key range is computed whole, so a key
                 * outside the row's range may hold any value (DeepGEMM's
                 * contract: undefined there) */
                if (c->mode == 0) continue;
                if (!(isinf(y) && y < 0)) {
                    snprintf(res->why, sizeof res->why, "row %d column %lld outside [%d, %d): %g",
                             i, (long long)col, ks[i], ke[i], y);
                    goto done;
                }
                continue;
            }
            if (isnan(y) || isinf(y)) {
                snprintf(res->why, sizeof res->why, "row %d key %d: %g", i, j, y);
                goto done;
            }
            if (!row_sampled || !qgtk_sampled(j - lo, hi - lo, opts->sample)) continue;
            const double x = logit_ref(q + (size_t)i * H * D, kv + (size_t)j * D, sc[j],
                                       w + (size_t)i * ld_w, H, D);
            qgtk_diff_add(&acc, &x, &y, 1);
        }
    }
    for (int64_t col = 0; col < ld; ++col)
        if (!is_poison(first, (size_t)S * ld + col, c->bf16)) {
            snprintf(res->why, sizeof res->why, "the guard row past the last was written");
            goto done;
        }
    res->diff = qgtk_diff_result(&acc);
    if (!(res->diff < (c->bf16 ? 3e-5 : 5e-6))) {
        snprintf(res->why, sizeof res->why, "diff %.3g", res->diff);
        goto done;
    }
    if (!keep_output(opts, first, out_bytes, esz, res)) goto done;
    if (res->output && c->mode == 0) /* plain: a key outside its row's range holds any value */
        for (int i = 0; i < S; ++i)
            for (int col = 0; col < SK; ++col)
                if (col < ks[i] || col >= ke[i]) open_element(res, (size_t)i * ld + col);
    time_call(ctx, stream, opts, run_mqa, &call, res);
done:
    dfree(&m);
    free(q), free(kv), free(sc), free(w), free(ks), free(ke), free(got), free(first);
    end(drv);
    return res->passed;
}

/* ---- paged MQA logits -------------------------------------------------------------- */

/* Context lengths as DeepGEMM's test draws them (2-D: the last token's the
 * row's, the others below it), some rows 0..2; each <= max_len. */
static void draw_lens(qgtk_rng *rng, int32_t *lens, const qgtk_paged_case *c, int max_len) {
    for (int b = 0; b < c->batch; ++b) {
        const int lo = (int)(0.7 * c->avg_len), hi = (int)(1.3 * c->avg_len) + 1;
        int len = lo + (int)(qgtk_rng_u64(rng) % (uint64_t)(hi - lo));
        if (qgtk_rng_u64(rng) % 5 == 0) len = (int)(qgtk_rng_u64(rng) % 3);
        if (len > max_len) len = max_len;
        for (int t = 0; t < c->next_n; ++t)
            lens[b * c->next_n + t] =
                t == c->next_n - 1 ? len : (int)((len + 1) * qgtk_rng_unit(rng));
    }
}

typedef struct {
    const qgtk_paged_case *c;
    int max_len, sample;
    int64_t ld, stride, ld_w, bt_ld;
    const uint8_t *q, *cache;
    const float *w;
    const int32_t *bt;
} paged_host;

static bool check_paged(const paged_host *p, const void *out, const int32_t *lens, char *why,
                        size_t wl, double *diff_out) {
    const qgtk_paged_case *c = p->c;
    const int H = c->heads, D = c->head_dim, rows = c->batch * c->next_n, max_len = p->max_len;
    const int64_t ld = p->ld;
    qgtk_diff_acc acc;
    memset(&acc, 0, sizeof acc);
    for (int r = 0; r < rows; ++r) {
        const int b = r / c->next_n;
        const int len = lens[r] < 0 ? 0 : lens[r] > max_len ? max_len : lens[r];
        const bool row_sampled = qgtk_sampled(r, rows, p->sample);
        for (int64_t j = 0; j < ld; ++j) {
            const size_t idx = (size_t)r * ld + j;
            if (j >= max_len) {
                if (!is_poison(out, idx, c->bf16)) {
                    snprintf(why, wl, "row %d column %lld past max_context_len written", r, (long long)j);
                    return false;
                }
                continue;
            }
            const double y = read_logit(out, idx, c->bf16);
            if (j >= len) {
                if (c->clean ? !(isinf(y) && y < 0)
                             : !(is_poison(out, idx, c->bf16) || (isinf(y) && y < 0))) {
                    snprintf(why, wl, "row %d column %lld past its length %d: %g", r, (long long)j,
                             len, y);
                    return false;
                }
                continue;
            }
            if (isnan(y) || isinf(y)) {
                snprintf(why, wl, "row %d key %lld: %g", r, (long long)j, y);
                return false;
            }
            if (!row_sampled || !qgtk_sampled(j, len, p->sample)) continue;
            const uint8_t *blk = p->cache + (size_t)p->bt[(size_t)b * p->bt_ld + j / 64] * (size_t)p->stride;
            float s;
            memcpy(&s, blk + 64 * D + (j % 64) * 4, 4);
            const double x = logit_ref(p->q + (size_t)r * H * D, blk + (j % 64) * D, s,
                                       p->w + (size_t)r * p->ld_w, H, D);
            qgtk_diff_add(&acc, &x, &y, 1);
        }
    }
    for (int64_t j = 0; j < ld; ++j)
        if (!is_poison(out, (size_t)rows * ld + j, c->bf16)) {
            snprintf(why, wl, "the guard row past the last was written");
            return false;
        }
    *diff_out = qgtk_diff_result(&acc);
    if (!(*diff_out < (c->bf16 ? 3e-5 : 5e-6))) {
        snprintf(why, wl, "diff %.3g", *diff_out);
        return false;
    }
    return true;
}

/* The cache's blocks, each from its own generator (seed, block): filled in
 * parallel, the same bytes for any number of threads. */
typedef struct {
    uint8_t *cache;
    int64_t stride;
    int head_dim;
    uint64_t seed;
} cache_fill;

static void fill_block(void *user, int64_t p, int worker) {
    (void)worker;
    const cache_fill *f = user;
    qgtk_rng rng;
    qgtk_rng_seed(&rng, f->seed * 1000003u + (uint64_t)p + 1);
    uint8_t *blk = f->cache + (size_t)p * (size_t)f->stride;
    for (int r = 0; r < 64; ++r) {
        const float s = fp8_row(&rng, blk + r * f->head_dim, f->head_dim);
        memcpy(blk + 64 * f->head_dim + r * 4, &s, 4);
    }
}

static qg_status run_paged(void *user, CUstream stream) {
    const idx_call *x = user;
    return qg_fp8_paged_mqa_logits(x->ctx, x->args, stream);
}

static qg_status run_paged_step(qg_context *ctx, const qg_paged_mqa_logits_args *a, CUstream stream) {
    qg_status st = qg_paged_mqa_logits_schedule(ctx, a, stream);
    return st == QG_SUCCESS ? qg_fp8_paged_mqa_logits(ctx, a, stream) : st;
}

/* Work of one logits call with these lengths: keys scored, and bytes (each
 * batch entry's cache rows read once for its next_n tokens). */
static void paged_workload(const qgtk_paged_case *c, const int32_t *lens, int max_len,
                           qgtk_case_result *res) {
    const int H = c->heads, D = c->head_dim, rows = c->batch * c->next_n;
    double keys = 0, kv_rows = 0;
    for (int b = 0; b < c->batch; ++b) {
        int most = 0;
        for (int t = 0; t < c->next_n; ++t) {
            int len = lens[b * c->next_n + t];
            len = len < 0 ? 0 : len > max_len ? max_len : len;
            keys += len;
            if (len > most) most = len;
        }
        kv_rows += most;
    }
    res->flops = 2.0 * keys * H * D;
    res->bytes = kv_rows * (D + 4) + (double)rows * H * D + (double)rows * H * 4 +
                 (c->clean ? (double)rows * max_len : keys) * (c->bf16 ? 2 : 4);
}

bool qgtk_paged_case_run(qg_context *ctx, CUstream stream, const qgtk_paged_case *c,
                         const qgtk_case_opts *opts, qgtk_case_result *res) {
    const qg_driver *drv;
    if (!begin(ctx, &drv, res)) return false;
    qgtk_rng rng;
    qgtk_rng_seed(&rng, opts->seed);
    char *why = res->why;
    const size_t wl = sizeof res->why;
    const int B = c->batch, NN = c->next_n, H = c->heads, D = c->head_dim, rows = B * NN;
    const int esz = c->bf16 ? 2 : 4;
    const int max_blocks = (int)(((int64_t)c->avg_len * 13 / 10 + 2 + 63) / 64);
    const int max_len = max_blocks * 64;
    const int64_t bt_ld = max_blocks + 1, stride = 64 * (D + 4) + 16 * (D == 32);
    const int num_blocks = B * max_blocks + 3;
    const int64_t ld_w = B % 2 ? H + 1 : H;
    const int64_t ld = ((int64_t)max_len + 8 + 15) / 16 * 16;
    const size_t out_bytes = (size_t)(rows + 1) * ld * esz;
    const int sms = qg_context_get_num_sms(ctx);
    uint8_t *q = malloc((size_t)rows * H * D + 1), *cache = calloc((size_t)num_blocks, (size_t)stride);
    float *w = malloc((size_t)rows * ld_w * 4 + 4);
    int32_t *lens = malloc((size_t)rows * 4 + 4), *lens2 = malloc((size_t)rows * 4 + 4);
    int32_t *bt = malloc((size_t)B * bt_ld * 4 + 4), *perm = malloc((size_t)num_blocks * 4);
    void *first = malloc(out_bytes), *got = malloc(out_bytes);
    dev_mem m = {drv, {0}, 0};
    CUgraph g = NULL;
    CUgraphExec ge = NULL;
    if (!q || !cache || !w || !lens || !lens2 || !bt || !perm || !first || !got) {
        snprintf(why, wl, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < (size_t)rows * H * D; ++i)
        q[i] = qg_fp8_e4m3_encode(bf16_round(qgtk_rng_normal(&rng)));
    cache_fill fill = {cache, stride, D, opts->seed};
    qgtk_parallel_for(num_blocks, qgtk_num_workers(), fill_block, &fill);
    for (size_t i = 0; i < (size_t)rows * ld_w; ++i) w[i] = qgtk_rng_normal(&rng);
    /* the block table: a random permutation of the blocks */
    for (int i = 0; i < num_blocks; ++i) perm[i] = i;
    for (int i = num_blocks - 1; i > 0; --i) {
        const int k = (int)(qgtk_rng_u64(&rng) % (uint64_t)(i + 1));
        const int32_t t = perm[i];
        perm[i] = perm[k], perm[k] = t;
    }
    for (int b = 0; b < B; ++b)
        for (int64_t x = 0; x < bt_ld; ++x)
            bt[(size_t)b * bt_ld + x] = x < max_blocks ? perm[b * max_blocks + x] : -1;
    draw_lens(&rng, lens, c, max_len);
    draw_lens(&rng, lens2, c, max_len);
    const paged_host host = {c, max_len, opts->sample, ld, stride, ld_w, bt_ld, q, cache, w, bt};
    CUdeviceptr dq = dalloc(&m, (size_t)rows * H * D), dc = dalloc(&m, (size_t)num_blocks * stride),
                dw = dalloc(&m, (size_t)rows * ld_w * 4), dl = dalloc(&m, (size_t)rows * 4),
                dbt = dalloc(&m, (size_t)B * bt_ld * 4),
                ds = dalloc(&m, qg_paged_mqa_schedule_size(sms)), dout = dalloc(&m, out_bytes);
    if (!dq || !dc || !dw || !dl || !dbt || !ds || !dout) {
        snprintf(why, wl, "cuMemAlloc failed");
        goto done;
    }
    drv->cuMemcpyHtoD(dq, q, (size_t)rows * H * D);
    drv->cuMemcpyHtoD(dc, cache, (size_t)num_blocks * stride);
    drv->cuMemcpyHtoD(dw, w, (size_t)rows * ld_w * 4);
    drv->cuMemcpyHtoD(dl, lens, (size_t)rows * 4);
    drv->cuMemcpyHtoD(dbt, bt, (size_t)B * bt_ld * 4);
    qg_paged_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    a.batch = B, a.next_n = NN, a.heads = H, a.head_dim = D;
    a.q = DP(dq), a.kv_cache = DP(dc), a.num_blocks = num_blocks, a.block_stride = stride;
    a.weights = DP(dw), a.ld_weights = ld_w, a.context_lens = DP(dl);
    a.block_table = DP(dbt), a.block_table_ld = bt_ld, a.max_context_len = max_len;
    a.schedule = DP(ds), a.logits = DP(dout), a.ld_logits = ld;
    a.logits_bf16 = c->bf16, a.clean = c->clean;
    for (int rep = 0; rep < 4; ++rep) {
        drv->cuMemsetD8Async(dout, 0xFF, out_bytes, stream);
        qg_status st = run_paged_step(ctx, &a, stream);
        if (st != QG_SUCCESS) {
            snprintf(why, wl, "run %d: %s", rep, qg_last_error());
            goto done;
        }
        if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "run %d: the kernels faulted", rep);
            goto done;
        }
        drv->cuMemcpyDtoH(rep ? got : first, dout, out_bytes);
        if (rep && memcmp(got, first, out_bytes)) {
            snprintf(why, wl, "run %d differs bitwise from the first", rep);
            goto done;
        }
    }
    if (!check_paged(&host, first, lens, why, wl, &res->diff)) goto done;
    if (!keep_output(opts, first, out_bytes, esz, res)) goto done;
    for (int r = 0; res->output && !c->clean && r < rows; ++r) /* past a row's length: poison or -inf */
        for (int j = lens[r] < 0 ? 0 : lens[r]; j < max_len; ++j) open_element(res, (size_t)r * ld + j);
    if (c->graph) {
        /* capture schedule + logits, replay with the second lengths: equal to
         * eager calls with them, bitwise (and right against the reference) */
        if (drv->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) {
            snprintf(why, wl, "cuStreamBeginCapture failed");
            goto done;
        }
        qg_status st = run_paged_step(ctx, &a, stream);
        const CUresult er = drv->cuStreamEndCapture(stream, &g);
        if (st != QG_SUCCESS || er != CUDA_SUCCESS ||
            drv->cuGraphInstantiate(&ge, g, 0) != CUDA_SUCCESS) {
            snprintf(why, wl, "capture: %s", st ? qg_last_error() : "the driver refused the graph");
            goto done;
        }
        drv->cuMemcpyHtoD(dl, lens2, (size_t)rows * 4);
        drv->cuMemsetD8Async(dout, 0xFF, out_bytes, stream);
        if (drv->cuGraphLaunch(ge, stream) != CUDA_SUCCESS ||
            drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "graph replay failed");
            goto done;
        }
        drv->cuMemcpyDtoH(got, dout, out_bytes);
        drv->cuMemsetD8Async(dout, 0xFF, out_bytes, stream);
        st = run_paged_step(ctx, &a, stream);
        if (st != QG_SUCCESS || drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "eager run with the new lengths: %s", st ? qg_last_error() : "fault");
            goto done;
        }
        drv->cuMemcpyDtoH(first, dout, out_bytes);
        if (memcmp(got, first, out_bytes)) {
            snprintf(why, wl, "the graph replayed with new lengths differs from eager calls");
            goto done;
        }
        double d2 = 0;
        if (!check_paged(&host, got, lens2, why, wl, &d2)) goto done;
    }
    /* the lengths on the device now (the schedule was computed from them) */
    paged_workload(c, c->graph ? lens2 : lens, max_len, res);
    idx_call call = {ctx, &a};
    time_call(ctx, stream, opts, run_paged, &call, res);
done:
    if (ge) drv->cuGraphExecDestroy(ge);
    if (g) drv->cuGraphDestroy(g);
    dfree(&m);
    free(q), free(cache), free(w), free(lens), free(lens2), free(bt), free(perm), free(first),
        free(got);
    end(drv);
    return res->passed;
}

/* ---- the HC prenorm GEMM ----------------------------------------------------------- */

static qg_status run_hc(void *user, CUstream stream) {
    const idx_call *x = user;
    return qg_tf32_hc_prenorm_gemm(x->ctx, x->args, stream);
}

bool qgtk_hc_case_run(qg_context *ctx, CUstream stream, const qgtk_hc_case *c,
                      const qgtk_case_opts *opts, qgtk_case_result *res) {
    const qg_driver *drv;
    if (!begin(ctx, &drv, res)) return false;
    qgtk_rng rng;
    qgtk_rng_seed(&rng, opts->seed);
    char *why = res->why;
    const size_t wl = sizeof res->why;
    const int M = c->m, N = c->n, K = c->k, S = c->splits ? c->splits : 1;
    const int64_t lda = K + 8 * (M % 2), ldb = K + 4 * (M % 2), ldd = N + 2 * (M % 2);
    const int64_t split_ld = (int64_t)M * ldd + 2 * (S > 1);
    const size_t d_elems = (size_t)S * split_ld + 16, s_elems = (size_t)S * M + 16;
    uint16_t *a = malloc((size_t)M * lda * 2 + 2);
    float *b = malloc((size_t)N * ldb * 4 + 4), *d = malloc(d_elems * 4), *d0 = malloc(d_elems * 4);
    float *sq = malloc(s_elems * 4), *sq0 = malloc(s_elems * 4);
    dev_mem m = {drv, {0}, 0};
    res->flops = 2.0 * M * N * (double)K;
    res->bytes = (double)M * K * 2 + (double)N * K * 4 + (double)S * M * N * 4 + (double)S * M * 4;
    if (!a || !b || !d || !d0 || !sq || !sq0) {
        snprintf(why, wl, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < (size_t)M * lda; ++i) a[i] = qg_bf16_encode(qgtk_rng_normal(&rng));
    for (size_t i = 0; i < (size_t)N * ldb; ++i) b[i] = qgtk_rng_normal(&rng);
    CUdeviceptr da = dalloc(&m, (size_t)M * lda * 2), db = dalloc(&m, (size_t)N * ldb * 4),
                dd = dalloc(&m, d_elems * 4), ds = dalloc(&m, s_elems * 4);
    if (!da || !db || !dd || !ds) {
        snprintf(why, wl, "cuMemAlloc failed");
        goto done;
    }
    drv->cuMemcpyHtoD(da, a, (size_t)M * lda * 2);
    drv->cuMemcpyHtoD(db, b, (size_t)N * ldb * 4);
    qg_hc_prenorm_args x;
    memset(&x, 0, sizeof x);
    x.m = M, x.n = N, x.k = K, x.num_splits = c->splits;
    x.a = DP(da), x.lda = lda, x.b = DP(db), x.ldb = ldb;
    x.d = DP(dd), x.ldd = ldd, x.d_split_ld = S > 1 ? split_ld : 0, x.sqr_sum = DP(ds);
    for (int rep = 0; rep < 4; ++rep) {
        drv->cuMemsetD8Async(dd, 0xFF, d_elems * 4, stream);
        drv->cuMemsetD8Async(ds, 0xFF, s_elems * 4, stream);
        qg_status st = qg_tf32_hc_prenorm_gemm(ctx, &x, stream);
        if (st != QG_SUCCESS) {
            snprintf(why, wl, "run %d: %s", rep, qg_last_error());
            goto done;
        }
        if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
            snprintf(why, wl, "run %d: the kernel faulted", rep);
            goto done;
        }
        drv->cuMemcpyDtoH(rep ? d : d0, dd, d_elems * 4);
        drv->cuMemcpyDtoH(rep ? sq : sq0, ds, s_elems * 4);
        if (rep && (memcmp(d, d0, d_elems * 4) || memcmp(sq, sq0, s_elems * 4))) {
            snprintf(why, wl, "run %d differs bitwise from the first", rep);
            goto done;
        }
    }
    { /* the reference, split by split as DeepGEMM splits K */
        const int nkb = K / 64, qk = nkb / S, rk = nkb % S;
        qgtk_diff_acc acc, acc_t, acc_sq;
        memset(&acc, 0, sizeof acc);
        memset(&acc_t, 0, sizeof acc_t);
        memset(&acc_sq, 0, sizeof acc_sq);
        const int64_t sl = S > 1 ? split_ld : (int64_t)M * ldd;
        for (int s = 0; s < S; ++s) {
            const int k0 = 64 * (s * qk + (s < rk ? s : rk)), k1 = k0 + 64 * (qk + (s < rk));
            for (int i = 0; i < M; ++i) {
                const bool sampled = qgtk_sampled(i, M, opts->sample);
                double sqr = 0;
                for (int k = k0; sampled && k < k1; ++k) {
                    const double v = qg_bf16_decode(a[(size_t)i * lda + k]);
                    sqr += v * v;
                }
                const double y = sq0[(size_t)s * M + i];
                if (isnan(y)) {
                    snprintf(why, wl, "sqr_sum[%d][%d] not written", s, i);
                    goto done;
                }
                if (sampled) qgtk_diff_add(&acc_sq, &sqr, &y, 1);
                for (int j = 0; j < ldd; ++j) {
                    const size_t idx = (size_t)s * sl + (size_t)i * ldd + j;
                    if (j >= N) {
                        if (((uint32_t *)d0)[idx] != 0xFFFFFFFFu) {
                            snprintf(why, wl, "d[%d][%d][%d] (padding) written", s, i, j);
                            goto done;
                        }
                        continue;
                    }
                    const double y2 = d0[idx];
                    if (isnan(y2)) {
                        snprintf(why, wl, "d[%d][%d][%d] not written", s, i, j);
                        goto done;
                    }
                    if (!sampled) continue;
                    /* the exact product, and with b as the tensor cores read an
                     * fp32 operand as TF32 (the low 13 mantissa bits dropped) */
                    double ref = 0, ref_t = 0;
                    for (int k = k0; k < k1; ++k) {
                        const double av = qg_bf16_decode(a[(size_t)i * lda + k]);
                        const float bv = b[(size_t)j * ldb + k];
                        uint32_t bits;
                        memcpy(&bits, &bv, 4);
                        bits = (bits + 0x1000u) & ~0x1FFFu; /* TF32, to nearest (ties away), as cvt.rna */
                        float bt;
                        memcpy(&bt, &bits, 4);
                        ref += av * bv;
                        ref_t += av * bt;
                    }
                    qgtk_diff_add(&acc, &ref, &y2, 1);
                    qgtk_diff_add(&acc_t, &ref_t, &y2, 1);
                }
            }
        }
        if (((uint32_t *)d0)[(size_t)S * sl] != 0xFFFFFFFFu ||
            ((uint32_t *)sq0)[(size_t)S * M] != 0xFFFFFFFFu) {
            snprintf(why, wl, "written past the end of d or sqr_sum");
            goto done;
        }
        /* DeepGEMM's criterion: diff < 1e-8 against a TF32 product (its
         * reference is torch's TF32 matmul); the exact product's diff is
         * reported beside it */
        const double d_exact = qgtk_diff_result(&acc), d_tf32 = qgtk_diff_result(&acc_t);
        const double dsq = qgtk_diff_result(&acc_sq);
        res->diff = d_tf32;
        if (!(d_tf32 < 1e-8 && d_exact < 1e-5 && dsq < 1e-8)) {
            snprintf(why, wl, "diff d %.3g (tf32 b) / %.3g (exact b), sqr_sum %.3g", d_tf32,
                     d_exact, dsq);
            goto done;
        }
        /* opts->keep_output: d's bytes then sqr_sum's (poison and sentinels included) */
        if (opts->keep_output) {
            uint8_t *both = malloc(d_elems * 4 + s_elems * 4);
            const bool kept = both && (memcpy(both, d0, d_elems * 4),
                                       memcpy(both + d_elems * 4, sq0, s_elems * 4),
                                       keep_output(opts, both, d_elems * 4 + s_elems * 4, 4, res));
            free(both);
            if (!kept) {
                if (!both) snprintf(why, wl, "out of host memory for the output's copy");
                res->passed = false;
                goto done;
            }
        }
    }
    idx_call call = {ctx, &x};
    time_call(ctx, stream, opts, run_hc, &call, res);
done:
    dfree(&m);
    free(a), free(b), free(d), free(d0), free(sq), free(sq0);
    end(drv);
    return res->passed;
}
