/*
 * indexer.c -- the indexer / HC family's API unit: DeepSeek-V3.2's lightning
 * indexer (FP8 MQA logits over ragged key ranges, and over the paged KV cache
 * with its device-side schedule) and the HyperConnection pre-norm GEMM:
 * validate, plan (src/indexer_plan.c), write and compile the kernels' source
 * (kernels/qg_mqa_logits.cuh, qg_paged_mqa_logits.cuh, qg_hc_prenorm.cuh),
 * resolve them through the shared launch path (src/launch.h), encode the
 * tensor maps, launch.
 *
 * Invariants (as the GEMM families'):
 *  - every argument is checked before anything touches the device, so a
 *    rejected call writes no output memory;
 *  - a launch reads no device memory and allocates nothing (CUDA-graph
 *    capturable): ks / ke, context_lens, block_table and the schedule are
 *    read by the kernels only;
 *  - the launch caches' keys hold what the JIT source depends on (and the
 *    SM count the paged schedule is made for), never the sequence lengths:
 *    a serving loop with ever-new lengths adds no entry. The grid of a call
 *    is computed at the launch from the plan and the call's sizes.
 */
#include "indexer_plan.h"
#include "launch.h"

#include <stdio.h>
#include <string.h>

/* ---- the families ------------------------------------------------------------ */

/* Ragged MQA logits: the plan is made for seq_len = seq_len_kv = 1 (the
 * source does not depend on them); the grid is computed per call. */
typedef struct {
    int heads, head_dim, compressed, clean, logits_bf16, num_sms, variant;
} mqa_key;

/* An organisation knob (QGEMM_MQA_VARIANT, QGEMM_PMQA_VARIANT; src/env.c):
 * unset -> fallback (the planner's default); else the index of the name
 * name_of gives among its count. Returns false for any other value. */
/* The index among name_of's count of the name equal to v[0 .. len), or -1. */
static int variant_named(const char *(*name_of)(int), int count, const char *v, size_t len) {
    for (int i = 0; i < count; ++i) {
        const char *name = name_of(i);
        if (strlen(name) == len && !strncmp(v, name, len)) return i;
    }
    return -1;
}

static bool env_variant(const char *knob, const char *(*name_of)(int), int count, int fallback,
                        int *variant) {
    *variant = fallback;
    const char *v = qg__env_string(knob);
    if (!v) return true;
    const int i = variant_named(name_of, count, v, strlen(v));
    if (i < 0) return false;
    *variant = i;
    return true;
}

/* QGEMM_MQA_VARIANT: unset -> qg__mqa_default_variant (deep4). */
static bool mqa_env_variant(int *variant) {
    return env_variant("QGEMM_MQA_VARIANT", qg__mqa_variant_name, QG_MQA_VARIANT_COUNT,
                       qg__mqa_default_variant(), variant);
}

/* Paged MQA logits: the SM count is the schedule's CTA count; variant:
 * QG_PMQA_VARIANT_* (QGEMM_PMQA_VARIANT). */
typedef struct {
    int next_n, heads, head_dim, clean, logits_bf16, num_sms, variant;
    int stages; /* 0: the plan's; else QGEMM_PMQA_VARIANT's ":sS" */
} pmqa_key;

/* QGEMM_PMQA_VARIANT: unset -> the planner's default for the shape
 * (qg__pmqa_default_variant); NAME, or NAME:sS with S kv stages (1..64 here;
 * the planner refuses what the organisation cannot take). */
static bool pmqa_env_variant(int next_n, int heads, int *variant, int *stages) {
    *variant = qg__pmqa_default_variant(next_n, heads);
    *stages = 0;
    const char *v = qg__env_string("QGEMM_PMQA_VARIANT");
    if (!v) return true;
    const char *colon = strchr(v, ':');
    const int i = variant_named(qg__pmqa_variant_name, QG_PMQA_VARIANT_COUNT, v,
                                colon ? (size_t)(colon - v) : strlen(v));
    if (i < 0) return false;
    int s = 0;
    if (colon) {
        if (colon[1] != 's') return false; /* (before reading past it: "NAME:" ends at colon[1]) */
        const char *end = colon + 2;
        for (; *end >= '0' && *end <= '9'; ++end)
            if (s <= 64) s = 10 * s + (*end - '0'); /* (past 64 only "too many" matters) */
        if (end == colon + 2 || *end || s < 1 || s > 64) return false;
    }
    *variant = i;
    *stages = s;
    return true;
}

/* The schedule kernel has one variant. */
typedef struct {
    int one;
} sched_key;

/* HC: the plan for the call's m is made before the lookup (pure, cheap);
 * the key is its compile-time part. */
typedef struct {
    int n, k, num_splits, math_wgs, cluster, stages, mode, cvt_warps, accs, min_ctas;
} hc_key;

/* QGEMM_HC_VARIANT (src/env.c), A/B runs of the planner options: unset or
 * empty -> the default, acc4+fit+cw4 (H200, 2026-11-29,
 * bench/results/2026-11-29-h200-12-w2: kineto 0.877 -> 1.119x DeepGEMM over
 * the 14 rows below 0.95, worst 0.690 -> 0.934, every row faster; acc4+fit
 * before it, 2026-11-28-h200-28-t3: 1.253x over 8 rows against the plain
 * plan's 1.223; with QGEMM_HC_MODE=split, which takes one accumulator set,
 * fit+cw4; where QGEMM_HC_MODE names converter warps (:N), no cw word: its N);
 * else '+'- or ','-separated tokens: base (no option: the plan before
 * 2026-11-28), acc2, acc4, acc8 (accumulator sets; 8 with one math
 * warpgroup, else 4), fit (clusters that fit one wave), w1, w2 (math
 * warpgroups), k2, k4 (the fewest K blocks a clustered CTA keeps; default
 * 8), cw2, cw3, cw4 (converter warps rounding B in the rounder and split
 * modes, over QGEMM_HC_MODE's :N; cw4 is 3 beside two math warpgroups).
 * Returns false for any other token. */
static bool hc_env_variant(qg_hc_opts *o, int mode, int mode_cvt_warps) {
    memset(o, 0, sizeof *o);
    const char *v = qg__env_string("QGEMM_HC_VARIANT");
    if (!v) {
        o->accs = mode == QG_HC_MODE_SPLIT ? 0 : 4;
        o->fit = 1;
        o->cvt = mode_cvt_warps ? 0 : 4;
        return true;
    }
    static const char *const names[] = {"base", "acc2", "acc4", "acc8", "fit", "w1",
                                        "w2",   "k2",   "k4",   "cw2",  "cw3", "cw4"};
    int i;
    /* empty words ("acc2+", "fit,,w2") are skipped; a later word overrides an earlier one */
    while ((i = qg__env_next_word(&v, "+,", true, names, 12)) >= 0) {
        static const int value[] = {0, 2, 4, 8, 1, 1, 2, 2, 4, 2, 3, 4};
        if (i >= 1 && i <= 3) o->accs = value[i];
        else if (i == 4) o->fit = 1;
        else if (i == 5 || i == 6) o->wgs = value[i];
        else if (i == 7 || i == 8) o->kmin = value[i];
        else if (i >= 9) o->cvt = value[i];
        /* (base, 0: no option) */
    }
    return i == -1;
}

/* QGEMM_HC_MODE (src/env.c): unset -> mode -1 (the planner's default);
 * "inplace" / "rounder" / "split" / "trunc", optionally ":1".."3" converter
 * warps. Returns false for any other value. */
static bool hc_env_mode(int *mode, int *cvt_warps) {
    *mode = -1, *cvt_warps = 0;
    const char *v = qg__env_string("QGEMM_HC_MODE");
    if (!v) return true;
    static const char *const names[] = {"inplace", "rounder", "split", "trunc"};
    for (int i = 0; i < 4; ++i) {
        const size_t l = strlen(names[i]);
        if (strncmp(v, names[i], l)) continue;
        if (v[l] == '\0') {
            *mode = i;
            return true;
        }
        if (v[l] == ':' && v[l + 1] >= '1' && v[l + 1] <= '3' && v[l + 2] == '\0' &&
            (i == QG_HC_MODE_ROUNDER || i == QG_HC_MODE_SPLIT)) {
            *mode = i, *cvt_warps = v[l + 1] - '0';
            return true;
        }
    }
    return false;
}

static qg_status compile_source(qg_context *ctx, const char *src, int len, size_t cap,
                                const char *what, qg_jit_result *res) {
    if (len < 0 || (size_t)len >= cap)
        return qg__fail(QG_ERROR_INTERNAL, "%s kernel source exceeds %zu bytes", what, cap);
    return qg__jit_compile(ctx->jit, src, res);
}

static qg_status mqa_plan_of(const mqa_key *k, qg_mqa_plan *plan) {
    const char *why = "";
    int rc = qg__mqa_plan(1, 1, k->heads, k->head_dim, k->compressed, k->clean, k->logits_bf16,
                          k->num_sms, plan, &why);
    if (rc == 0 && qg__mqa_plan_variant(plan, k->variant) != 0) rc = -1, why = "unknown variant";
    if (rc != 0)
        return qg__fail(QG_ERROR_UNSUPPORTED, "no MQA logits kernel for %d heads of dim %d: %s",
                        k->heads, k->head_dim, why);
    return QG_SUCCESS;
}

static qg_status mqa_build(qg_context *ctx, const void *key, const void *arg, void *plan,
                           qg_launch_shape *shape, qg_jit_result *res) {
    (void)arg;
    qg_mqa_plan *p = plan;
    qg_status st = mqa_plan_of(key, p);
    if (st != QG_SUCCESS) return st;
    char src[1024];
    if ((st = compile_source(ctx, src, qg__mqa_source(src, sizeof src, p), sizeof src,
                             "MQA logits", res)))
        return st;
    shape->num_threads = (unsigned)p->block_x;
    shape->smem_bytes = p->smem_bytes;
    shape->cluster_size = 1;
    shape->grid = p->grid_x;
    return QG_SUCCESS;
}

static qg_status pmqa_plan_of(const pmqa_key *k, qg_pmqa_plan *plan) {
    const char *why = "";
    int rc = qg__pmqa_plan(1, k->next_n, k->heads, k->head_dim, k->clean, k->logits_bf16,
                           k->num_sms, plan, &why);
    if (rc == 0 && qg__pmqa_plan_variant(plan, k->variant) != 0)
        rc = -1, why = "unknown variant";
    if (rc == 0 && qg__pmqa_plan_stages(plan, k->stages) != 0)
        rc = -1, why = "QGEMM_PMQA_VARIANT's stages (':sS'): more than fit in shared memory, "
                       "or not a multiple of the organisation's math warpgroups";
    if (rc != 0)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "no paged MQA logits kernel for next_n %d, %d heads of dim %d: %s",
                        k->next_n, k->heads, k->head_dim, why);
    return QG_SUCCESS;
}

static qg_status pmqa_build(qg_context *ctx, const void *key, const void *arg, void *plan,
                            qg_launch_shape *shape, qg_jit_result *res) {
    (void)arg;
    qg_pmqa_plan *p = plan;
    qg_status st = pmqa_plan_of(key, p);
    if (st != QG_SUCCESS) return st;
    char src[1024];
    if ((st = compile_source(ctx, src, qg__pmqa_source(src, sizeof src, p), sizeof src,
                             "paged MQA logits", res)))
        return st;
    shape->num_threads = (unsigned)p->block_x;
    shape->smem_bytes = p->smem_bytes;
    shape->cluster_size = 1;
    shape->grid = p->grid_x;
    return QG_SUCCESS;
}

static qg_status sched_build(qg_context *ctx, const void *key, const void *arg, void *plan,
                             qg_launch_shape *shape, qg_jit_result *res) {
    (void)key, (void)arg, (void)plan;
    char src[256];
    qg_status st = compile_source(ctx, src, qg__pmqa_schedule_source(src, sizeof src), sizeof src,
                                  "paged MQA schedule", res);
    if (st != QG_SUCCESS) return st;
    shape->num_threads = 1024;
    shape->smem_bytes = 0;
    shape->cluster_size = 1;
    shape->grid = 1;
    return QG_SUCCESS;
}

static qg_status hc_build(qg_context *ctx, const void *key, const void *arg, void *plan,
                          qg_launch_shape *shape, qg_jit_result *res) {
    (void)key;
    qg_hc_plan *p = plan;
    *p = *(const qg_hc_plan *)arg; /* the call's plan; grid_x is recomputed per call */
    char src[1024];
    qg_status st = compile_source(ctx, src, qg__hc_source(src, sizeof src, p), sizeof src,
                                  "HC prenorm", res);
    if (st != QG_SUCCESS) return st;
    shape->num_threads = (unsigned)p->block_x;
    shape->smem_bytes = p->smem_bytes;
    shape->cluster_size = p->cluster;
    shape->grid = p->grid_x;
    return QG_SUCCESS;
}

static const qg_launch_family mqa_family = {
    .kernel = "qg_mqa_logits_kernel", .plan_size = sizeof(qg_mqa_plan), .build = mqa_build};
static const qg_launch_family pmqa_family = {
    .kernel = "qg_paged_mqa_logits_kernel", .plan_size = sizeof(qg_pmqa_plan), .build = pmqa_build};
static const qg_launch_family sched_family = {
    .kernel = "qg_paged_mqa_schedule_kernel", .plan_size = 1, .build = sched_build};
static const qg_launch_family hc_family = {
    .kernel = "qg_tf32_hc_prenorm_gemm_kernel", .plan_size = sizeof(qg_hc_plan), .build = hc_build};

/* ---- shared checks ------------------------------------------------------------- */

#define BAD(...) qg__fail(QG_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

/* The SMs the context's kernels may use (qg_context_set_num_sms). */
static int sms_of(const qg_context *ctx) {
    const int n = qg_context_get_num_sms(ctx);
    return n > 0 ? n : 1;
}

static bool is_pow2_dim(int d) { return d == 32 || d == 64 || d == 128; }

static qg_status check_heads_dim(int heads, int head_dim, const char *fn) {
    if (heads != 32 && heads != 64)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->heads must be 32 or 64, got %d", fn, heads);
    if (!is_pow2_dim(head_dim))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->head_dim must be 32, 64 or 128, got %d",
                        fn, head_dim);
    return QG_SUCCESS;
}

static qg_status check_flag(int v, const char *fn, const char *name) {
    if (v != 0 && v != 1) return BAD("%s: args->%s must be 0 or 1, got %d", fn, name, v);
    return QG_SUCCESS;
}

/* A row stride with no TMA rule: >= min, <= 2^36. */
static qg_status check_plain_ld(int64_t ld, int64_t min, const char *fn, const char *name,
                                const char *what) {
    if (ld < min)
        return BAD("%s: args->%s must be >= %s (%lld), got %lld", fn, name, what, (long long)min,
                   (long long)ld);
    if (ld > (1ll << 36))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->%s = %lld exceeds 2^36", fn, name,
                        (long long)ld);
    return QG_SUCCESS;
}

typedef struct {
    const void *ptr;
    size_t align;
    const char *name;
} named_ptr;

static qg_status check_ptrs(const named_ptr *p, int n, const char *fn) {
    qg_status st;
    for (int i = 0; i < n; ++i)
        if ((st = qg__check_ptr(p[i].ptr, p[i].align, fn, p[i].name))) return st;
    return QG_SUCCESS;
}

static qg_status check_device_ptrs(const qg_context *ctx, const named_ptr *p, int n,
                                   const char *fn) {
    qg_status st;
    for (int i = 0; i < n; ++i)
        if ((st = qg__check_device_ptr(ctx, p[i].ptr, fn, p[i].name))) return st;
    return QG_SUCCESS;
}

static CUtensorMapSwizzle swizzle_of_dim(int head_dim) {
    return head_dim == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
           : head_dim == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                            : CU_TENSOR_MAP_SWIZZLE_32B;
}

/* Resolve (family, key) under the lock; `arg` goes to build. */
static qg_status resolve(qg_context *ctx, const qg_launch_family *f, const void *key,
                         size_t key_size, const void *arg, const qg_launch_entry **e, bool *pdl,
                         const char *fn) {
    pthread_mutex_lock(&ctx->lock);
    qg_status st = qg__launch_resolve(ctx, f, key, key_size, arg, e);
    if (pdl) *pdl = ctx->pdl;
    pthread_mutex_unlock(&ctx->lock);
    if (st != QG_SUCCESS) return qg__fail(st, "%s: %s", fn, qg_last_error());
    return QG_SUCCESS;
}

/* Compile-only: build the entry's plan and compile its source without the
 * launch cache (offline contexts), or resolve it (device contexts). */
static qg_status compile_only(qg_context *ctx, const qg_launch_family *f, const void *key,
                              size_t key_size, const void *arg, qg_kernel_info *info,
                              const char *fn) {
    unsigned char plan[512];
    qg_launch_shape shape;
    qg_jit_result res;
    memset(plan, 0, sizeof plan);
    memset(&shape, 0, sizeof shape);
    if (f->plan_size > sizeof plan) return qg__fail(QG_ERROR_INTERNAL, "%s: plan too large", fn);
    qg_status st = f->build(ctx, key, arg, plan, &shape, &res);
    if (st != QG_SUCCESS) return qg__fail(st, "%s: %s", fn, qg_last_error());
    if (info) *info = res.info;
    if (ctx->offline) return QG_SUCCESS;
    if ((st = qg__enter(ctx, NULL, fn)) != QG_SUCCESS) return st;
    const qg_launch_entry *e;
    st = resolve(ctx, f, key, key_size, arg, &e, NULL, fn);
    qg__leave(ctx);
    return st;
}

/* ---- fp8_mqa_logits -------------------------------------------------------------- */

static qg_status mqa_check(const qg_context *ctx, const qg_mqa_logits_args *a, bool pointers,
                           const char *fn, mqa_key *key) {
    if (!ctx) return BAD("%s: ctx is NULL", fn);
    if (!a) return BAD("%s: args is NULL", fn);
    qg_status st;
    if (a->seq_len < 0) return BAD("%s: args->seq_len must be >= 0, got %d", fn, a->seq_len);
    if (a->seq_len_kv < 1)
        return BAD("%s: args->seq_len_kv must be >= 1, got %d", fn, a->seq_len_kv);
    if (a->seq_len > (1 << 25) || a->seq_len_kv > (1 << 30))
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: args->seq_len (%d) must be <= 2^25 and args->seq_len_kv (%d) <= 2^30",
                        fn, a->seq_len, a->seq_len_kv);
    if ((st = check_heads_dim(a->heads, a->head_dim, fn)) || (st = check_flag(a->clean, fn, "clean")) ||
        (st = check_flag(a->logits_bf16, fn, "logits_bf16")))
        return st;
    if (a->max_seqlen_k < 0)
        return BAD("%s: args->max_seqlen_k must be >= 0, got %d", fn, a->max_seqlen_k);
    if (a->max_seqlen_k > 0 && a->clean)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: compressed logits (args->max_seqlen_k = %d) are not cleaned: "
                        "args->clean must be 0", fn, a->max_seqlen_k);
    const int esz = a->logits_bf16 ? 2 : 4;
    const int cols = a->max_seqlen_k > 0 ? a->max_seqlen_k : a->seq_len_kv;
    if ((st = qg__check_ld(a->ld_kv, a->head_dim, 1, fn, "ld_kv", "head_dim")) ||
        (st = check_plain_ld(a->ld_weights, a->heads, fn, "ld_weights", "heads")) ||
        (st = qg__check_ld(a->ld_logits, cols, esz, fn, "ld_logits",
                           a->max_seqlen_k > 0 ? "max_seqlen_k" : "seq_len_kv")))
        return st;
    memset(key, 0, sizeof *key);
    key->heads = a->heads;
    key->head_dim = a->head_dim;
    key->compressed = a->max_seqlen_k > 0;
    key->clean = a->clean;
    key->logits_bf16 = a->logits_bf16;
    key->num_sms = sms_of(ctx);
    if (!mqa_env_variant(&key->variant))
        return BAD("%s: QGEMM_MQA_VARIANT='%.64s' is not pipe, deep4, deep4l or lockstep2", fn,
                   qg__env_string("QGEMM_MQA_VARIANT"));
    if (!pointers || a->seq_len == 0) return QG_SUCCESS;
    const named_ptr ptrs[] = {{a->q, 16, "q"},           {a->kv, 16, "kv"},
                              {a->kv_scales, 16, "kv_scales"}, {a->weights, 4, "weights"},
                              {a->ks, 4, "ks"},           {a->ke, 4, "ke"},
                              {a->logits, 16, "logits"}};
    if ((st = check_ptrs(ptrs, 7, fn))) return st;
    const uint64_t sl = (uint64_t)a->seq_len, skv = (uint64_t)a->seq_len_kv;
    const qg_byte_range out = qg__matrix_range("logits", a->logits, sl, (uint64_t)cols,
                                               (uint64_t)a->ld_logits, (uint64_t)esz);
    const qg_byte_range in[] = {
        qg__matrix_range("q", a->q, 1, sl * (uint64_t)a->heads * (uint64_t)a->head_dim, 0, 1),
        qg__matrix_range("kv", a->kv, skv, (uint64_t)a->head_dim, (uint64_t)a->ld_kv, 1),
        qg__matrix_range("kv_scales", a->kv_scales, 1, skv, 0, 4),
        qg__matrix_range("weights", a->weights, sl, (uint64_t)a->heads, (uint64_t)a->ld_weights, 4),
        qg__matrix_range("ks", a->ks, 1, sl, 0, 4),
        qg__matrix_range("ke", a->ke, 1, sl, 0, 4)};
    return qg__check_no_overlap(fn, &out, in, 6);
}

qg_status qg_fp8_mqa_logits(qg_context *ctx, const qg_mqa_logits_args *a,
                            struct CUstream_st *stream) {
    qg__clear_error();
    const char *fn = "qg_fp8_mqa_logits";
    mqa_key key;
    qg_status st = mqa_check(ctx, a, true, fn, &key);
    if (st != QG_SUCCESS) return st;
    if (ctx->offline) return qg__fail(QG_ERROR_NO_DEVICE, "%s: the context is offline (compile-only)", fn);
    if (a->seq_len == 0) return QG_SUCCESS;
    const named_ptr ptrs[] = {{a->q, 16, "q"},           {a->kv, 16, "kv"},
                              {a->kv_scales, 16, "kv_scales"}, {a->weights, 4, "weights"},
                              {a->ks, 4, "ks"},           {a->ke, 4, "ke"},
                              {a->logits, 16, "logits"}};
    if ((st = check_device_ptrs(ctx, ptrs, 7, fn))) return st;
    if ((st = qg__enter(ctx, stream, fn)) != QG_SUCCESS) return st;
    const qg_launch_entry *e = NULL;
    bool pdl = false;
    if ((st = resolve(ctx, &mqa_family, &key, sizeof key, NULL, &e, &pdl, fn))) goto out;
    const qg_mqa_plan *p = qg__launch_plan(e);
    const uint64_t D = (uint64_t)a->head_dim;
    const CUtensorMapSwizzle swz = swizzle_of_dim(a->head_dim);
    CUtensorMap tq, tkv, tsc;
    if ((st = qg__encode_tiled(ctx, &tq, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->q, D,
                               (uint64_t)a->seq_len * (uint64_t)a->heads, D, (uint32_t)D, 128, swz,
                               "tensor map of q")) ||
        (st = qg__encode_tiled(ctx, &tkv, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->kv, D,
                               (uint64_t)a->seq_len_kv, (uint64_t)a->ld_kv, (uint32_t)D,
                               (uint32_t)p->block_kv, swz, "tensor map of kv")) ||
        (st = qg__encode_tiled(ctx, &tsc, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->kv_scales,
                               (uint64_t)a->seq_len_kv, 0, 0, (uint32_t)p->block_kv, 0,
                               CU_TENSOR_MAP_SWIZZLE_NONE, "tensor map of kv_scales")))
        goto out;
    {
        const int q_blocks = (a->seq_len + p->block_q - 1) / p->block_q;
        const int grid = q_blocks < key.num_sms ? q_blocks : key.num_sms;
        CUdeviceptr w = (CUdeviceptr)(uintptr_t)a->weights, ks = (CUdeviceptr)(uintptr_t)a->ks,
                    ke = (CUdeviceptr)(uintptr_t)a->ke, lg = (CUdeviceptr)(uintptr_t)a->logits;
        int64_t ld_w = a->ld_weights, ld_l = a->ld_logits;
        int sl = a->seq_len, skv = a->seq_len_kv;
        void *params[] = {&tq, &tkv, &tsc, &w, &ld_w, &ks, &ke, &lg, &ld_l, &sl, &skv};
        st = qg__launch(ctx, e, grid, params, stream, pdl, "MQA logits");
    }
out:
    qg__leave(ctx);
    return st;
}

/* ---- fp8_paged_mqa_logits and its schedule ---------------------------------------- */

size_t qg_paged_mqa_schedule_size(int num_sms) {
    /* In size_t before the + 1: num_sms = INT_MAX must not overflow an int. */
    return num_sms < 1 ? 0 : ((size_t)num_sms + 1) * 2 * sizeof(int32_t);
}

/* The schedule's fields (schedule_only) or all of them. */
static qg_status pmqa_check(const qg_context *ctx, const qg_paged_mqa_logits_args *a,
                            bool schedule_only, bool pointers, const char *fn, pmqa_key *key) {
    if (!ctx) return BAD("%s: ctx is NULL", fn);
    if (!a) return BAD("%s: args is NULL", fn);
    qg_status st;
    if (a->batch < 0 || a->batch > (1 << 24))
        return BAD("%s: args->batch must be in [0, 2^24], got %d", fn, a->batch);
    if (a->next_n != 1 && a->next_n != 2)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->next_n must be 1 or 2, got %d", fn,
                        a->next_n);
    if (a->max_context_len < 1 || a->max_context_len > (1 << 30))
        return BAD("%s: args->max_context_len must be in [1, 2^30], got %d", fn,
                   a->max_context_len);
    const int dev_sms = ctx->props.sm_count;
    if (a->num_sms < 0 || (dev_sms > 0 && a->num_sms > dev_sms))
        return BAD("%s: args->num_sms must be 0 (the context's SM count) or in [1, %d], got %d",
                   fn, dev_sms, a->num_sms);
    memset(key, 0, sizeof *key);
    key->next_n = a->next_n;
    key->num_sms = a->num_sms ? a->num_sms : sms_of(ctx);
    if (!schedule_only) {
        if ((st = check_heads_dim(a->heads, a->head_dim, fn)) ||
            (st = check_flag(a->clean, fn, "clean")) ||
            (st = check_flag(a->logits_bf16, fn, "logits_bf16")))
            return st;
        if (a->num_blocks < 1)
            return BAD("%s: args->num_blocks must be >= 1, got %d", fn, a->num_blocks);
        const int64_t min_stride = 64 * ((int64_t)a->head_dim + 4);
        if (a->block_stride != 0 && (a->block_stride < min_stride || a->block_stride % 16 ||
                                     a->block_stride > (1ll << 36)))
            return BAD("%s: args->block_stride must be 0 or a multiple of 16 in [64 * (head_dim + "
                       "4) = %lld, 2^36] bytes, got %lld", fn, (long long)min_stride,
                       (long long)a->block_stride);
        const int esz = a->logits_bf16 ? 2 : 4;
        if ((st = check_plain_ld(a->ld_weights, a->heads, fn, "ld_weights", "heads")) ||
            (st = check_plain_ld(a->block_table_ld, (a->max_context_len + 63) / 64, fn,
                                 "block_table_ld", "ceil(max_context_len / 64)")) ||
            (st = qg__check_ld(a->ld_logits, a->max_context_len, esz, fn, "ld_logits",
                               "max_context_len")))
            return st;
        key->heads = a->heads;
        key->head_dim = a->head_dim;
        key->clean = a->clean;
        key->logits_bf16 = a->logits_bf16;
        if (!pmqa_env_variant(key->next_n, key->heads, &key->variant, &key->stages))
            return BAD("%s: QGEMM_PMQA_VARIANT='%.64s' is not shared2, dual2, split4, "
                       "split4r112w, split4r112x, split4r112p or split4r112u, optionally "
                       "followed by :sS (S kv stages, 1..64)",
                       fn, qg__env_string("QGEMM_PMQA_VARIANT"));
    }
    if (!pointers || a->batch == 0) return QG_SUCCESS;
    const uint64_t rows = (uint64_t)a->batch * (uint64_t)a->next_n;
    const named_ptr sp[] = {{a->context_lens, 4, "context_lens"}, {a->schedule, 4, "schedule"}};
    if ((st = check_ptrs(sp, 2, fn))) return st;
    const qg_byte_range sched = qg__matrix_range("schedule", a->schedule, 1,
                                                 (uint64_t)(key->num_sms + 1) * 2, 0, 4);
    const qg_byte_range lens = qg__matrix_range("context_lens", a->context_lens, 1, rows, 0, 4);
    if (schedule_only) return qg__check_no_overlap(fn, &sched, &lens, 1);
    const named_ptr lp[] = {{a->q, 16, "q"},           {a->kv_cache, 16, "kv_cache"},
                            {a->weights, 4, "weights"}, {a->block_table, 4, "block_table"},
                            {a->logits, 16, "logits"}};
    if ((st = check_ptrs(lp, 5, fn))) return st;
    const int esz = a->logits_bf16 ? 2 : 4;
    const uint64_t stride = a->block_stride ? (uint64_t)a->block_stride
                                            : 64 * ((uint64_t)a->head_dim + 4);
    const qg_byte_range out = qg__matrix_range("logits", a->logits, rows,
                                               (uint64_t)a->max_context_len,
                                               (uint64_t)a->ld_logits, (uint64_t)esz);
    const qg_byte_range in[] = {
        qg__matrix_range("q", a->q, 1, rows * (uint64_t)a->heads * (uint64_t)a->head_dim, 0, 1),
        qg__matrix_range("kv_cache", a->kv_cache, (uint64_t)a->num_blocks,
                         64 * ((uint64_t)a->head_dim + 4), stride, 1),
        qg__matrix_range("weights", a->weights, rows, (uint64_t)a->heads,
                         (uint64_t)a->ld_weights, 4),
        lens,
        qg__matrix_range("block_table", a->block_table, (uint64_t)a->batch,
                         (uint64_t)(a->max_context_len + 63) / 64, (uint64_t)a->block_table_ld, 4),
        sched};
    return qg__check_no_overlap(fn, &out, in, 6);
}

qg_status qg_paged_mqa_logits_schedule(qg_context *ctx, const qg_paged_mqa_logits_args *a,
                                       struct CUstream_st *stream) {
    qg__clear_error();
    const char *fn = "qg_paged_mqa_logits_schedule";
    pmqa_key key;
    qg_status st = pmqa_check(ctx, a, true, true, fn, &key);
    if (st != QG_SUCCESS) return st;
    if (ctx->offline) return qg__fail(QG_ERROR_NO_DEVICE, "%s: the context is offline (compile-only)", fn);
    /* batch 0: the schedule is still written (all CTAs start at the end) */
    if (a->batch == 0 && (st = qg__check_ptr(a->schedule, 4, fn, "schedule"))) return st;
    const named_ptr ptrs[] = {{a->context_lens, 4, "context_lens"}, {a->schedule, 4, "schedule"}};
    if ((st = check_device_ptrs(ctx, a->batch ? ptrs : ptrs + 1, a->batch ? 2 : 1, fn))) return st;
    if ((st = qg__enter(ctx, stream, fn)) != QG_SUCCESS) return st;
    const qg_launch_entry *e = NULL;
    bool pdl = false;
    sched_key skey = {1};
    if ((st = resolve(ctx, &sched_family, &skey, sizeof skey, NULL, &e, &pdl, fn)) == QG_SUCCESS) {
        CUdeviceptr lens = (CUdeviceptr)(uintptr_t)a->context_lens;
        CUdeviceptr sched = (CUdeviceptr)(uintptr_t)a->schedule;
        int batch = a->batch, next_n = a->next_n, max_len = a->max_context_len,
            ctas = key.num_sms;
        void *params[] = {&lens, &batch, &next_n, &max_len, &ctas, &sched};
        st = qg__launch(ctx, e, 1, params, stream, pdl, "paged MQA schedule");
    }
    qg__leave(ctx);
    return st;
}

qg_status qg_fp8_paged_mqa_logits(qg_context *ctx, const qg_paged_mqa_logits_args *a,
                                  struct CUstream_st *stream) {
    qg__clear_error();
    const char *fn = "qg_fp8_paged_mqa_logits";
    pmqa_key key;
    qg_status st = pmqa_check(ctx, a, false, true, fn, &key);
    if (st != QG_SUCCESS) return st;
    if (ctx->offline) return qg__fail(QG_ERROR_NO_DEVICE, "%s: the context is offline (compile-only)", fn);
    if (a->batch == 0) return QG_SUCCESS;
    const named_ptr ptrs[] = {{a->q, 16, "q"},
                              {a->kv_cache, 16, "kv_cache"},
                              {a->weights, 4, "weights"},
                              {a->context_lens, 4, "context_lens"},
                              {a->block_table, 4, "block_table"},
                              {a->schedule, 4, "schedule"},
                              {a->logits, 16, "logits"}};
    if ((st = check_device_ptrs(ctx, ptrs, 7, fn))) return st;
    if ((st = qg__enter(ctx, stream, fn)) != QG_SUCCESS) return st;
    const qg_launch_entry *e = NULL;
    bool pdl = false;
    if ((st = resolve(ctx, &pmqa_family, &key, sizeof key, NULL, &e, &pdl, fn))) goto out;
    const qg_pmqa_plan *p = qg__launch_plan(e);
    const uint64_t D = (uint64_t)a->head_dim;
    const uint64_t stride = a->block_stride ? (uint64_t)a->block_stride : 64 * (D + 4);
    const CUtensorMapSwizzle swz = swizzle_of_dim(a->head_dim);
    CUtensorMap tq, tkv, tsc;
    if ((st = qg__encode_tiled(ctx, &tq, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->q, D,
                               (uint64_t)a->batch * (uint64_t)a->next_n * (uint64_t)a->heads, D,
                               (uint32_t)D, (uint32_t)(a->next_n * a->heads), swz,
                               "tensor map of q")) ||
        (st = qg__encode_map(ctx, &tkv, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->kv_cache, D, 64,
                             (uint64_t)a->num_blocks, D, stride, (uint32_t)D, 64, swz,
                             "tensor map of the kv cache")) ||
        (st = qg__encode_tiled(ctx, &tsc, CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                               (const uint8_t *)a->kv_cache + 64 * D, 64,
                               (uint64_t)a->num_blocks, stride, 64, 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                               "tensor map of the kv cache's scales")))
        goto out;
    {
        CUdeviceptr w = (CUdeviceptr)(uintptr_t)a->weights,
                    lens = (CUdeviceptr)(uintptr_t)a->context_lens,
                    bt = (CUdeviceptr)(uintptr_t)a->block_table,
                    sched = (CUdeviceptr)(uintptr_t)a->schedule,
                    lg = (CUdeviceptr)(uintptr_t)a->logits;
        int64_t ld_w = a->ld_weights, bt_ld = a->block_table_ld, ld_l = a->ld_logits;
        int batch = a->batch, max_len = a->max_context_len;
        void *params[] = {&tq, &tkv, &tsc, &w, &ld_w, &lens, &bt, &bt_ld, &sched, &lg, &ld_l,
                          &batch, &max_len};
        st = qg__launch(ctx, e, p->grid_x, params, stream, pdl, "paged MQA logits");
    }
out:
    qg__leave(ctx);
    return st;
}

/* ---- tf32_hc_prenorm_gemm --------------------------------------------------------- */

static qg_status hc_check(const qg_context *ctx, const qg_hc_prenorm_args *a, bool pointers,
                          const char *fn, qg_hc_plan *plan, hc_key *key) {
    if (!ctx) return BAD("%s: ctx is NULL", fn);
    if (!a) return BAD("%s: args is NULL", fn);
    qg_status st;
    if (a->m < 0 || a->m > (1 << 30)) return BAD("%s: args->m must be in [0, 2^30], got %d", fn, a->m);
    if (a->n != 8 && a->n != 16 && a->n != 24 && a->n != 32)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->n must be 8, 16, 24 or 32, got %d", fn,
                        a->n);
    if (a->k <= 0 || a->k % 64 || a->k > (1 << 30))
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: args->k must be a positive multiple of 64 (<= 2^30), got %d", fn, a->k);
    if (a->num_splits < 0 || a->num_splits > 65536)
        return BAD("%s: args->num_splits must be in [0, 65536] (0 means 1), got %d", fn,
                   a->num_splits);
    const int splits = a->num_splits ? a->num_splits : 1;
    if ((st = qg__check_ld(a->lda, a->k, 2, fn, "lda", "k")) ||
        (st = qg__check_ld(a->ldb, a->k, 4, fn, "ldb", "k")) ||
        (st = check_plain_ld(a->ldd, a->n, fn, "ldd", "n")))
        return st;
    if (a->ldd % 2) return BAD("%s: args->ldd must be even (8-byte rows of d), got %lld", fn, (long long)a->ldd);
    /* m <= 2^30 and ldd <= 2^36 here: their product could pass 2^63 (found
     * by make fuzz), and the planes' extent below must not wrap either. */
    if (a->m > 0 && a->ldd > (1ll << 40) / a->m)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: a plane of d, args->m * args->ldd = %d x %lld elements, exceeds 2^40",
                        fn, a->m, (long long)a->ldd);
    if (a->d_split_ld > (1ll << 40))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->d_split_ld = %lld exceeds 2^40", fn,
                        (long long)a->d_split_ld);
    const int64_t min_split = (int64_t)a->m * a->ldd;
    if (splits > 1 && a->d_split_ld != 0 && (a->d_split_ld < min_split || a->d_split_ld % 2))
        return BAD("%s: args->d_split_ld must be 0 or an even number >= m * ldd (%lld), got %lld",
                   fn, (long long)min_split, (long long)a->d_split_ld);
    const int64_t split_ld = a->d_split_ld && splits > 1 ? a->d_split_ld : min_split;
    const char *why = "";
    int mode, cvt_warps;
    if (!hc_env_mode(&mode, &cvt_warps))
        return BAD("%s: QGEMM_HC_MODE='%.64s' is not inplace, rounder, split or trunc (rounder and "
                   "split optionally :1, :2 or :3 converter warps)",
                   fn, qg__env_string("QGEMM_HC_MODE"));
    qg_hc_opts opts;
    if (!hc_env_variant(&opts, mode < 0 ? QG_HC_MODE_DEFAULT : mode, cvt_warps))
        return BAD("%s: QGEMM_HC_VARIANT='%.64s' is not a '+'-separated list of base, acc2, acc4, "
                   "acc8, fit, w1, w2, k2, k4, cw2, cw3, cw4",
                   fn, qg__env_string("QGEMM_HC_VARIANT"));
    if (qg__hc_plan_opts(a->m, a->n, a->k, splits, sms_of(ctx), mode, cvt_warps, &opts, plan, &why))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: no HC prenorm kernel for %dx%dx%d in %d splits: %s",
                        fn, a->m, a->n, a->k, splits, why);
    memset(key, 0, sizeof *key);
    key->n = plan->n;
    key->k = plan->k;
    key->num_splits = plan->num_splits;
    key->math_wgs = plan->math_wgs;
    key->cluster = plan->cluster;
    key->stages = plan->stages;
    key->mode = plan->mode;
    key->cvt_warps = plan->cvt_warps;
    key->accs = plan->accs;
    key->min_ctas = plan->min_ctas;
    if (!pointers || a->m == 0) return QG_SUCCESS;
    const named_ptr ptrs[] = {{a->a, 16, "a"}, {a->b, 16, "b"}, {a->d, 8, "d"},
                              {a->sqr_sum, 4, "sqr_sum"}};
    if ((st = check_ptrs(ptrs, 4, fn))) return st;
    const uint64_t m = (uint64_t)a->m, S = (uint64_t)splits;
    const qg_byte_range in[] = {
        qg__matrix_range("a", a->a, m, (uint64_t)a->k, (uint64_t)a->lda, 2),
        qg__matrix_range("b", a->b, (uint64_t)a->n, (uint64_t)a->k, (uint64_t)a->ldb, 4)};
    /* d as S x (m x ldd) planes: the extent from the first row to the last
     * plane's last row */
    const qg_byte_range d = qg__matrix_range("d", a->d, 1,
                                             (S - 1) * (uint64_t)split_ld + (m - 1) * (uint64_t)a->ldd +
                                                 (uint64_t)a->n, 0, 4);
    const qg_byte_range sq = qg__matrix_range("sqr_sum", a->sqr_sum, 1, S * m, 0, 4);
    if ((st = qg__check_no_overlap(fn, &d, in, 2)) || (st = qg__check_no_overlap(fn, &sq, in, 2)))
        return st;
    return qg__check_no_overlap(fn, &sq, &d, 1);
}

qg_status qg_tf32_hc_prenorm_gemm(qg_context *ctx, const qg_hc_prenorm_args *a,
                                  struct CUstream_st *stream) {
    qg__clear_error();
    const char *fn = "qg_tf32_hc_prenorm_gemm";
    qg_hc_plan plan;
    hc_key key;
    qg_status st = hc_check(ctx, a, true, fn, &plan, &key);
    if (st != QG_SUCCESS) return st;
    if (ctx->offline) return qg__fail(QG_ERROR_NO_DEVICE, "%s: the context is offline (compile-only)", fn);
    if (a->m == 0) return QG_SUCCESS;
    const named_ptr ptrs[] = {{a->a, 16, "a"}, {a->b, 16, "b"}, {a->d, 8, "d"},
                              {a->sqr_sum, 4, "sqr_sum"}};
    if ((st = check_device_ptrs(ctx, ptrs, 4, fn))) return st;
    if ((st = qg__enter(ctx, stream, fn)) != QG_SUCCESS) return st;
    const qg_launch_entry *e = NULL;
    bool pdl = false;
    if ((st = resolve(ctx, &hc_family, &key, sizeof key, &plan, &e, &pdl, fn))) goto out;
    const qg_hc_plan *p = qg__launch_plan(e);
    CUtensorMap ta, tb;
    if ((st = qg__encode_tiled(ctx, &ta, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, a->a, (uint64_t)a->k,
                               (uint64_t)a->m, (uint64_t)a->lda * 2, 64, (uint32_t)p->block_m,
                               CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of a")) ||
        (st = qg__encode_tiled(ctx, &tb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->b, (uint64_t)a->k,
                               (uint64_t)a->n, (uint64_t)a->ldb * 4, 32, (uint32_t)a->n,
                               CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of b")))
        goto out;
    {
        const int splits = a->num_splits ? a->num_splits : 1;
        CUdeviceptr d = (CUdeviceptr)(uintptr_t)a->d, sq = (CUdeviceptr)(uintptr_t)a->sqr_sum;
        int64_t ldd = a->ldd;
        int64_t split_ld = a->d_split_ld && splits > 1 ? a->d_split_ld : (int64_t)a->m * a->ldd;
        int m = a->m;
        void *params[] = {&ta, &tb, &d, &ldd, &split_ld, &sq, &m};
        /* the call's grid: this m's plan (the entry may come from another m
         * with the same compile-time plan) */
        st = qg__launch(ctx, e, plan.grid_x, params, stream, pdl, "HC prenorm");
    }
out:
    qg__leave(ctx);
    return st;
}

/* ---- compile-only ------------------------------------------------------------------ */

qg_status qg_indexer_compile(qg_context *ctx, qg_indexer_kind kind, const void *args,
                             qg_kernel_info *info) {
    qg__clear_error();
    const char *fn = "qg_indexer_compile";
    qg_status st;
    switch (kind) {
    case QG_INDEXER_MQA_LOGITS: {
        mqa_key key;
        if ((st = mqa_check(ctx, args, false, fn, &key))) return st;
        return compile_only(ctx, &mqa_family, &key, sizeof key, NULL, info, fn);
    }
    case QG_INDEXER_PAGED_SCHEDULE:
    case QG_INDEXER_PAGED_MQA_LOGITS: {
        pmqa_key key;
        const bool sched = kind == QG_INDEXER_PAGED_SCHEDULE;
        if ((st = pmqa_check(ctx, args, sched, false, fn, &key))) return st;
        if (sched) {
            sched_key skey = {1};
            return compile_only(ctx, &sched_family, &skey, sizeof skey, NULL, info, fn);
        }
        return compile_only(ctx, &pmqa_family, &key, sizeof key, NULL, info, fn);
    }
    case QG_INDEXER_HC_PRENORM: {
        qg_hc_plan plan;
        hc_key key;
        if ((st = hc_check(ctx, args, false, fn, &plan, &key))) return st;
        return compile_only(ctx, &hc_family, &key, sizeof key, &plan, info, fn);
    }
    }
    if (!ctx) return BAD("%s: ctx is NULL", fn);
    return BAD("%s: kind must be QG_INDEXER_MQA_LOGITS, _PAGED_SCHEDULE, _PAGED_MQA_LOGITS or "
               "_HC_PRENORM, got %d", fn, (int)kind);
}
