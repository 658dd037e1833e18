/*
 * cast.c -- the cast family's API unit: the FP8 casts (per-token, per-block,
 * per-channel, silu_mul + per-token) and the scale-layout ops (MN-major
 * transpose, packed UE8M0, its k-grouped form) of include/qgemm.h: validate,
 * plan (src/cast_plan.c, the SM count as data), write and compile the
 * kernel's source (kernels/qg_cast.cuh), resolve it through the shared launch
 * path (src/launch.h), launch.
 *
 * Invariants (as the GEMM families'):
 *  - every argument is checked before anything touches the device, so a
 *    rejected call writes nothing;
 *  - a launch reads no device memory and allocates nothing (CUDA-graph
 *    capturable once the kernel is loaded): masked_m, m_indices and ks are
 *    read by the kernel only;
 *  - the launch cache's key is the planner's compile-time choice (op, input
 *    type, UE8M0, scale layout, row mask, K, N, access width, threads,
 *    unroll, CTAs per SM, the k-grouped op's groups and granularity): the
 *    rows, strides and pointers are the kernel's parameter, so one entry
 *    serves every M. The grid is the planner's for the context's SM count.
 *  - each op has its own kernel name (qg_per_token_cast_kernel, ...,
 *    qg_transpose_sf_kernel, qg_pack_fp32_into_ue8m0_kernel), so profiles
 *    (DeepGEMM's test_layout times kernels by name) say what ran.
 */
#include "cast_plan.h"
#include "launch.h"

#include <stdio.h>
#include <string.h>

/* The launch cache's key: the planner's compile-time fields (zeroed, then
 * filled: compared as bytes). */
typedef struct {
    int op, in_f32, ue8m0, sf_mn, rows_mask, k, n;
    int vec, threads, unroll, min_ctas;
    int kg_groups, gran_k, k_alignment, psum;
    int lean; /* QG_CAST_LEAN (ops 1-4) */
    int ring, lut, smem; /* QG_CAST_RING (op 3), QG_CAST_LUT (op 4), dynamic shared memory */
} cast_key;

typedef struct {
    qg_cast_plan plan;
} cast_entry_plan;

#define NUM_OPS 7


/* ---- planning and compiling ------------------------------------------------ */

static const qg_launch_family families[NUM_OPS + 1];

static void fill_key(const qg_cast_problem *p, const qg_cast_plan *plan, cast_key *k) {
    memset(k, 0, sizeof *k);
    const int q = p->op <= QG_CAST_SILU_MUL, kg = p->op == QG_CAST_SF_PACK_UE8M0_KGROUPED;
    k->op = (int)p->op;
    k->in_f32 = q ? p->in_f32 : 0;
    k->ue8m0 = q ? p->ue8m0 : 0;
    k->sf_mn = (p->op == QG_CAST_PER_TOKEN || p->op == QG_CAST_SILU_MUL) ? p->sf_mn_major : 0;
    k->rows_mask = p->op == QG_CAST_SILU_MUL ? (int)p->rows_mask : 0;
    k->k = p->k;
    k->n = p->op == QG_CAST_PER_BLOCK ? p->n : 0;
    k->vec = plan->vec, k->threads = plan->threads, k->unroll = plan->unroll;
    k->min_ctas = plan->min_ctas;
    k->lean = q ? p->lean : 0;
    k->ring = plan->ring, k->lut = plan->lut, k->smem = plan->smem;
    if (kg) k->kg_groups = p->groups, k->gran_k = p->gran_k, k->k_alignment = p->k_alignment,
            k->psum = p->psum;
}

/* Write p's source under plan (the op's entry name first) and compile it. */
static qg_status compile_kernel(qg_context *ctx, const qg_cast_problem *p, const qg_cast_plan *plan,
                                qg_jit_result *res) {
    char src[2048];
    const int n = snprintf(src, sizeof src, "#define QG_CAST_ENTRY %s\n", families[p->op].kernel);
    qg_status st = qg__cast_source(p, plan, src + n, sizeof src - (size_t)n);
    if (st != QG_SUCCESS) return st;
    return qg__jit_compile(ctx->jit, src, res);
}

/* arg: the call's qg_cast_problem; the plan is made again for the context's
 * SM count (the key's compile-time fields do not depend on the rows beyond
 * the unroll, which the key holds). */
static qg_status cast_build(qg_context *ctx, const void *key, const void *arg, void *plan,
                            qg_launch_shape *shape, qg_jit_result *res) {
    const qg_cast_problem *p = arg;
    cast_entry_plan *cp = plan;
    qg_status st = qg__cast_plan(p, ctx->num_sms, &cp->plan);
    if (st != QG_SUCCESS) return st;
    cast_key again;
    fill_key(p, &cp->plan, &again);
    if (memcmp(&again, key, sizeof again) != 0)
        return qg__fail(QG_ERROR_INTERNAL, "cast %s: the plan changed between the key and the build",
                        qg__cast_op_name(p->op));
    if ((st = compile_kernel(ctx, p, &cp->plan, res)) != QG_SUCCESS) return st;
    shape->num_threads = (unsigned)cp->plan.threads;
    shape->smem_bytes = (size_t)cp->plan.smem;
    shape->cluster_size = 1;
    shape->grid = (int)cp->plan.grid;
    return QG_SUCCESS;
}

static const qg_launch_family families[NUM_OPS + 1] = {
    {0},
    {.kernel = "qg_per_token_cast_kernel", .plan_size = sizeof(cast_entry_plan), .build = cast_build},
    {.kernel = "qg_per_block_cast_kernel", .plan_size = sizeof(cast_entry_plan), .build = cast_build},
    {.kernel = "qg_per_channel_cast_kernel", .plan_size = sizeof(cast_entry_plan), .build = cast_build},
    {.kernel = "qg_silu_mul_quant_kernel", .plan_size = sizeof(cast_entry_plan), .build = cast_build},
    {.kernel = "qg_transpose_sf_kernel", .plan_size = sizeof(cast_entry_plan), .build = cast_build},
    {.kernel = "qg_pack_fp32_into_ue8m0_kernel", .plan_size = sizeof(cast_entry_plan),
     .build = cast_build},
    {.kernel = "qg_k_grouped_pack_fp32_into_ue8m0_kernel", .plan_size = sizeof(cast_entry_plan),
     .build = cast_build},
};

/* The launch family of op: one per kernel name (the name is the family's). */
static const qg_launch_family *family_of(qg_cast_op op) { return &families[op]; }

/* ---- validation -------------------------------------------------------------- */

/* The largest power of two <= 16 dividing the address. */
static int align_of(const void *ptr) {
    const uintptr_t a = (uintptr_t)ptr;
    int al = 16;
    while (al > 1 && a % (uintptr_t)al) al /= 2;
    return al;
}

static const char *cast_fn(qg_cast_op op) {
    switch (op) {
    case QG_CAST_PER_TOKEN: return "qg_per_token_cast";
    case QG_CAST_PER_BLOCK: return "qg_per_block_cast";
    case QG_CAST_PER_CHANNEL: return "qg_per_channel_cast";
    case QG_CAST_SILU_MUL: return "qg_silu_mul_cast";
    case QG_CAST_SF_MN_MAJOR: return "qg_sf_transpose_mn_major";
    case QG_CAST_SF_PACK_UE8M0: return "qg_sf_pack_ue8m0";
    default: return "qg_sf_pack_ue8m0_k_grouped";
    }
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

typedef struct {
    const void *ptr;
    size_t align;
    const char *name;
    bool output;
    qg_byte_range range;
} named_ptr;

/* Pointers present and aligned, outputs over no input nor each other. */
static qg_status check_ptrs(named_ptr *ptrs, int n, const char *fn) {
    qg_status st;
    for (int i = 0; i < n; ++i)
        if ((st = qg__check_ptr(ptrs[i].ptr, ptrs[i].align, fn, ptrs[i].name))) return st;
    for (int i = 0; i < n; ++i) {
        if (!ptrs[i].output) continue;
        qg_byte_range others[6];
        int m = 0;
        for (int j = 0; j < n; ++j)
            if (j != i && !(ptrs[j].output && j < i)) others[m++] = ptrs[j].range;
        if ((st = qg__check_no_overlap(fn, &ptrs[i].range, others, m))) return st;
    }
    return QG_SUCCESS;
}

static qg_status check_flag(int v, const char *fn, const char *name) {
    if (v != 0 && v != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s must be 0 or 1, got %d", fn, name, v);
    return QG_SUCCESS;
}

/* A quantizing cast's arguments -> the planner's problem; *empty when there
 * is nothing to do. Checks everything that needs no device. */
static qg_status check_cast(const qg_context *ctx, qg_cast_op op, const qg_cast_args *a,
                            bool pointers, const char *fn, qg_cast_problem *p, bool *empty) {
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!a) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args is NULL", fn);
    if (a->m < 0 || a->k < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s must be >= 0, got %d", fn,
                        a->m < 0 ? "m" : "k", a->m < 0 ? a->m : a->k);
    if (a->num_groups < 0 || a->num_groups > (1 << 20))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->num_groups must be in [0, 2^20], got %d",
                        fn, a->num_groups);
    qg_status st;
    if ((st = check_flag(a->x_fp32, fn, "x_fp32")) || (st = check_flag(a->ue8m0, fn, "ue8m0")) ||
        (st = check_flag(a->sf_mn_major, fn, "sf_mn_major")))
        return st;
    const int groups = a->num_groups ? a->num_groups : 1;
    const bool token = op == QG_CAST_PER_TOKEN || op == QG_CAST_SILU_MUL;
    if (a->sf_mn_major && !token)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->sf_mn_major must be 0 (M-major scales are "
                        "the per-token and silu_mul casts')", fn);
    if (op == QG_CAST_PER_CHANNEL && groups != 1)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->num_groups must be 1 (or 0), got %d", fn,
                        a->num_groups);
    if (op != QG_CAST_SILU_MUL && (a->masked_m || a->m_indices))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s must be NULL (silu_mul's only)", fn,
                        a->masked_m ? "masked_m" : "m_indices");
    if (a->masked_m && a->m_indices)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: give args->masked_m (masked layout) or "
                        "args->m_indices (contiguous layout), not both", fn);
    if (a->m > (1 << 30) || a->k > (1 << 30) || (int64_t)groups * a->m > ((int64_t)1 << 40))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: m, k must be at most 2^30 and num_groups x m at "
                        "most 2^40", fn);
    if ((double)groups * a->m * (op == QG_CAST_SILU_MUL ? 2.0 * a->k : (double)a->k) > 0x1p44)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: x holds more than 2^44 elements (num_groups x m x "
                        "%s)", fn, op == QG_CAST_SILU_MUL ? "2k" : "k");
    if (op == QG_CAST_PER_CHANNEL && a->m % 128)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->m must be a multiple of 128, got %d", fn,
                        a->m);
    const int64_t rows = (int64_t)groups * a->m;
    const int64_t in_cols = op == QG_CAST_SILU_MUL ? 2 * (int64_t)a->k : a->k;
    if (a->ld_x < in_cols || a->ld_x > ((int64_t)1 << 36))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->ld_x must be in [%s = %lld, 2^36], "
                        "got %lld", fn, op == QG_CAST_SILU_MUL ? "2k" : "k", (long long)in_cols,
                        (long long)a->ld_x);
    if (a->ld_out < a->k || a->ld_out > ((int64_t)1 << 36))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->ld_out must be in [k = %d, 2^36], got "
                        "%lld", fn, a->k, (long long)a->ld_out);
    if (a->sf_mn_major && (a->sf_ld < (a->m + 3) / 4 * 4 || a->sf_ld > (1 << 30)))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->sf_ld must be >= m = %d rounded up to "
                        "4 (%d) with sf_mn_major, got %d", fn, a->m, (a->m + 3) / 4 * 4, a->sf_ld);
    memset(p, 0, sizeof *p);
    p->op = op;
    p->in_f32 = a->x_fp32;
    p->ue8m0 = a->ue8m0;
    p->sf_mn_major = a->sf_mn_major;
    p->rows_mask = a->masked_m ? QG_CAST_ROWS_MASKED
                   : a->m_indices ? QG_CAST_ROWS_CONTIGUOUS : QG_CAST_ROWS_ALL;
    p->rows = rows;
    p->m = a->m;
    p->groups = groups;
    p->k = a->k;
    p->n = a->m;
    p->ld_in = a->ld_x;
    p->ld_out = a->ld_out;
    p->sf_ld = a->sf_ld;
    p->in_align = align_of(a->x);
    p->out_align = align_of(a->out);
    *empty = rows == 0 || a->k == 0;
    if (*empty) {
        /* the planner's checks on a stand-in shape: an empty call compiles nothing */
        return QG_SUCCESS;
    }
    if (!pointers) return QG_SUCCESS;
    const int xb = a->x_fp32 ? 4 : 2;
    const int64_t kb = cdiv(a->k, 128);
    uint64_t sf_rows, sf_cols, sf_ld;
    switch (op) {
    case QG_CAST_PER_BLOCK: sf_rows = 1, sf_cols = (uint64_t)(groups * cdiv(a->m, 128) * kb); break;
    case QG_CAST_PER_CHANNEL: sf_rows = 1, sf_cols = (uint64_t)(a->m / 128) * (uint64_t)a->k; break;
    default:
        if (a->sf_mn_major) sf_rows = (uint64_t)(groups * kb), sf_cols = (uint64_t)a->m;
        else sf_rows = 1, sf_cols = (uint64_t)(rows * kb);
    }
    sf_ld = a->sf_mn_major ? (uint64_t)a->sf_ld : sf_cols;
    named_ptr ptrs[4] = {
        {a->x, (size_t)xb, "x", false,
         qg__matrix_range("x", a->x, (uint64_t)rows, (uint64_t)in_cols, (uint64_t)a->ld_x, xb)},
        {a->out, 1, "out", true,
         qg__matrix_range("out", a->out, (uint64_t)rows, (uint64_t)a->k, (uint64_t)a->ld_out, 1)},
        {a->sf, 4, "sf", true, qg__matrix_range("sf", a->sf, sf_rows, sf_cols, sf_ld, 4)},
    };
    int n = 3;
    if (a->masked_m)
        ptrs[n++] = (named_ptr){a->masked_m, 4, "masked_m", false,
                                qg__matrix_range("masked_m", a->masked_m, 1, (uint64_t)groups,
                                                 (uint64_t)groups, 4)};
    if (a->m_indices)
        ptrs[n++] = (named_ptr){a->m_indices, 4, "m_indices", false,
                                qg__matrix_range("m_indices", a->m_indices, 1, (uint64_t)rows,
                                                 (uint64_t)rows, 4)};
    return check_ptrs(ptrs, n, fn);
}

/* A scale-layout op's arguments -> the planner's problem. */
static qg_status check_layout(const qg_context *ctx, qg_cast_op op, const qg_sf_layout_args *a,
                              bool pointers, const char *fn, qg_cast_problem *p, bool *empty) {
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!a) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args is NULL", fn);
    if (a->mn < 0 || a->sf_k < 0 || a->num_groups < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s must be >= 0, got %d", fn,
                        a->mn < 0 ? "mn" : a->sf_k < 0 ? "sf_k" : "num_groups",
                        a->mn < 0 ? a->mn : a->sf_k < 0 ? a->sf_k : a->num_groups);
    if (a->mn > (1 << 30) || a->sf_k > (1 << 30) || a->num_groups > (1 << 20))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: mn and sf_k must be at most 2^30, num_groups 2^20",
                        fn);
    const bool kg = op == QG_CAST_SF_PACK_UE8M0_KGROUPED;
    const int groups = a->num_groups ? a->num_groups : 1;
    memset(p, 0, sizeof *p);
    p->op = op;
    p->m = a->mn;
    p->k = a->sf_k;
    p->groups = groups;
    p->in_align = align_of(a->sf);
    p->out_align = align_of(a->out);
    if (!kg) {
        if (a->out_ld < a->mn || a->out_ld > (1 << 30))
            return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->out_ld must be in [mn = %d, 2^30], "
                            "got %d", fn, a->mn, a->out_ld);
        for (int i = 0; i < 3; ++i)
            if (a->sf_stride[i] < 0 || a->sf_stride[i] > ((int64_t)1 << 40))
                return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->sf_stride[%d] must be in "
                                "[0, 2^40], got %lld", fn, i, (long long)a->sf_stride[i]);
        if (a->ks || a->packed_sf_k)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->ks and args->packed_sf_k are the "
                            "k-grouped layout's (NULL, 0)", fn);
        const double out_rows = op == QG_CAST_SF_MN_MAJOR ? a->sf_k : (a->sf_k + 3) / 4;
        if ((double)groups * out_rows * a->out_ld > 0x1p40)
            return qg__fail(QG_ERROR_UNSUPPORTED, "%s: the output holds more than 2^40 values "
                            "(num_groups x rows x out_ld)", fn);
        if ((double)(groups - 1) * (double)a->sf_stride[0] +
                (double)(a->mn ? a->mn - 1 : 0) * (double)a->sf_stride[1] +
                (double)(a->sf_k ? a->sf_k - 1 : 0) * (double)a->sf_stride[2] > 0x1p50)
            return qg__fail(QG_ERROR_UNSUPPORTED, "%s: the input spans more than 2^50 elements "
                            "(args->sf_stride)", fn);
        p->sf_ld = a->out_ld;
        p->in_stride[0] = a->sf_stride[0], p->in_stride[1] = a->sf_stride[1];
        p->in_stride[2] = a->sf_stride[2];
        *empty = a->out_ld == 0 || a->sf_k == 0;
    } else {
        if (a->num_groups < 1 || a->num_groups > 128)
            return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->num_groups must be in [1, 128], got %d",
                            fn, a->num_groups);
        if (a->mn % 4)
            return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->mn must be a multiple of 4, got %d", fn,
                            a->mn);
        if (a->gran_k != 32 && a->gran_k != 128)
            return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->gran_k must be 32 or 128, got %d", fn,
                            a->gran_k);
        if (a->k_alignment < 32 || a->k_alignment % 32 || a->k_alignment > (1 << 20))
            return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->k_alignment must be a positive multiple "
                            "of 32 (at most 2^20), got %d", fn, a->k_alignment);
        qg_status st;
        if ((st = check_flag(a->psum, fn, "psum"))) return st;
        if (a->packed_sf_k < 0 || a->packed_sf_k > (1 << 30))
            return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->packed_sf_k must be in [0, 2^30], "
                            "got %d", fn, a->packed_sf_k);
        p->gran_k = a->gran_k;
        p->k_alignment = a->k_alignment;
        p->psum = a->psum;
        p->packed_sf_k = a->packed_sf_k;
        *empty = a->packed_sf_k == 0 || a->mn == 0;
    }
    if (*empty || !pointers) return QG_SUCCESS;
    const size_t al = kg ? 16 : 4;
    uint64_t in_bytes_hi; /* the input's extent in elements: 1 + sum (size - 1) * stride */
    if (kg) {
        in_bytes_hi = (uint64_t)a->sf_k * (uint64_t)a->mn;
    } else {
        in_bytes_hi = 1 + (uint64_t)(groups - 1) * (uint64_t)a->sf_stride[0] +
                      (uint64_t)(a->mn ? a->mn - 1 : 0) * (uint64_t)a->sf_stride[1] +
                      (uint64_t)(a->sf_k - 1) * (uint64_t)a->sf_stride[2];
        if (a->mn == 0) in_bytes_hi = 0;
    }
    const uint64_t out_rows = kg ? (uint64_t)a->packed_sf_k
                                 : (uint64_t)groups * (uint64_t)(op == QG_CAST_SF_MN_MAJOR
                                                                     ? a->sf_k : cdiv(a->sf_k, 4));
    const uint64_t out_ld = kg ? (uint64_t)a->mn : (uint64_t)a->out_ld;
    named_ptr ptrs[3] = {
        {a->sf, al, "sf", false, qg__matrix_range("sf", a->sf, 1, in_bytes_hi, in_bytes_hi, 4)},
        {a->out, al, "out", true, qg__matrix_range("out", a->out, out_rows, out_ld, out_ld, 4)},
    };
    int n = 2;
    if (kg)
        ptrs[n++] = (named_ptr){a->ks, 4, "ks", false,
                                qg__matrix_range("ks", a->ks, 1, (uint64_t)groups,
                                                 (uint64_t)groups, 4)};
    if (a->mn == 0 && !kg) ptrs[0].ptr = ptrs[0].ptr ? ptrs[0].ptr : (const void *)a->out;
    return check_ptrs(ptrs, n, fn);
}

/* ---- launch -------------------------------------------------------------------- */

/* Plan p for the context's SMs, resolve its entry (build on a miss) and, with
 * params, launch it. ctx current (device) and validated. */
static qg_status run(qg_context *ctx, const qg_cast_problem *p, const qg_cast_params *params,
                     CUstream stream, const char *fn) {
    pthread_mutex_lock(&ctx->lock);
    qg_cast_plan plan;
    qg_status st = qg__cast_plan(p, ctx->num_sms, &plan);
    const qg_launch_entry *e = NULL;
    if (st == QG_SUCCESS && plan.grid > 0) {
        cast_key key;
        fill_key(p, &plan, &key);
        st = qg__launch_resolve(ctx, family_of(p->op), &key, sizeof key, p, &e);
    }
    const bool pdl = ctx->pdl;
    pthread_mutex_unlock(&ctx->lock);
    if (st != QG_SUCCESS) return qg__fail(st, "%s: %s", fn, qg_last_error());
    if (!e || !params) return QG_SUCCESS;
    qg_cast_params prm = *params;
    void *args[] = {&prm};
    return qg__launch(ctx, e, (int)plan.grid, args, stream, pdl, qg__cast_op_name(p->op));
}

/* A checked call before its launch: the planner's own checks (a non-empty
 * call; before the device is touched), then an offline context refused. */
static qg_status plan_online(const qg_context *ctx, const qg_cast_problem *p, bool empty,
                             const char *fn) {
    if (!empty) {
        qg_cast_plan plan;
        qg_status st = qg__cast_plan(p, qg_context_get_num_sms(ctx), &plan);
        if (st != QG_SUCCESS) return qg__fail(st, "%s: %s", fn, qg_last_error());
    }
    if (ctx->offline)
        return qg__fail(QG_ERROR_NO_DEVICE, "%s: the context is offline (compile-only)", fn);
    return QG_SUCCESS;
}

/* An online, non-empty call (plan_online): its pointers on the device, then the launch. */
static qg_status launch_checked(qg_context *ctx, const qg_cast_problem *p, const void *ptrs[],
                                const char *const names[], int n, uint64_t in, uint64_t out,
                                uint64_t sf, uint64_t aux, CUstream stream, const char *fn) {
    qg_status st;
    for (int i = 0; i < n; ++i)
        if (ptrs[i] && (st = qg__check_device_ptr(ctx, ptrs[i], fn, names[i]))) return st;
    if ((st = qg__enter(ctx, stream, fn)) != QG_SUCCESS) return st;
    qg_cast_params params;
    qg__cast_params(p, in, out, sf, aux, &params);
    st = run(ctx, p, &params, stream, fn);
    qg__leave(ctx);
    return st;
}

/* QGEMM_CAST_VARIANT (A/B runs, issue 51): a '+'-list of all (a CTA per unit of work:
 * p->one_pass), lean (the QG_CAST_LEAN kernels: p->lean), ring (per-channel through a
 * shared-memory ring of bulk copies: p->ring) and lut (silu_mul's silu from a
 * shared-memory table: p->lut), no empty word, or base alone (none: grid-stride grids
 * capped at what the SMs hold, the plain kernels). Unset: all+lean+ring+lut since 2026-11-29 y
 * (H200, bench/results/2026-11-29-h200-21-y2: kineto 1.055x all+lean over 15 rows, per-channel
 * 64 -> 78% / 78 -> 91% of the copy bandwidth at 4096x7168 / 16384x7168, silu 72 -> 78% /
 * 81 -> 90%, the same bytes); all+lean from 2026-11-29 w (H200,
 * bench/results/2026-11-29-h200-13-w3: kineto 1.100x base over 19 rows, per-channel
 * 43 -> 63% of the copy bandwidth at 4096x7168, per-token 77 -> 82%, per-block 79 -> 85%,
 * silu 60 -> 70%; the same bytes). The word checked (the Python casts' host path: python/csrc/cast.c,
 * cast_new) may be added to either form and changes nothing here;
 * given alone, the kernels are the default's (all+lean+ring+lut).
 * @return QG_SUCCESS, or QG_ERROR_INVALID_ARGUMENT naming another value. */
static qg_status cast_env_variant(const char *fn, qg_cast_problem *p) {
    const char *const all = qg__env_string("QGEMM_CAST_VARIANT");
    /* checked: the Python extension's word (python/csrc/cast.c, cast_new), no effect
     * here: it may follow base or the kernel words */
    static const char *const names[] = {"base", "all", "lean", "ring", "lut", "checked"};
    const char *v = all;
    int i;
    p->one_pass = p->lean = p->ring = p->lut = 0;
    if (!all) {
        p->one_pass = p->lean = p->ring = p->lut = 1;
        return QG_SUCCESS;
    }
    int words = 0, base = 0;
    while ((i = qg__env_next_word(&v, "+", false, names, 6)) >= 0) {
        words += i <= 4, base |= i == 0;
        if (i == 1) p->one_pass = 1;
        if (i == 2) p->lean = 1;
        if (i == 3) p->ring = 1;
        if (i == 4) p->lut = 1;
    }
    if (i == -1 && words == 0) /* the host word alone: the default kernels */
        p->one_pass = p->lean = p->ring = p->lut = 1;
    if (i == -1 && !(base && words > 1)) return QG_SUCCESS;
    p->one_pass = p->lean = p->ring = p->lut = 0;
    return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                    "%s: QGEMM_CAST_VARIANT = \"%.64s\" is not base alone or a '+'-list of all, lean, "
                    "ring and lut (either optionally with checked)",
                    fn, all);
}

static qg_status cast(qg_context *ctx, qg_cast_op op, const qg_cast_args *a, CUstream stream) {
    qg__clear_error();
    const char *fn = cast_fn(op);
    qg_cast_problem p;
    bool empty;
    qg_status st = check_cast(ctx, op, a, true, fn, &p, &empty);
    if (st != QG_SUCCESS) return st;
    if ((st = cast_env_variant(fn, &p)) != QG_SUCCESS) return st;
    if ((st = plan_online(ctx, &p, empty, fn)) != QG_SUCCESS || empty) return st;
    const void *ptrs[] = {a->x, a->out, a->sf, a->masked_m ? (const void *)a->masked_m
                                                           : (const void *)a->m_indices};
    static const char *const names[] = {"x", "out", "sf", "masked_m / m_indices"};
    const void *aux = a->masked_m ? (const void *)a->masked_m : (const void *)a->m_indices;
    return launch_checked(ctx, &p, ptrs, names, 4, (uint64_t)(uintptr_t)a->x,
                          (uint64_t)(uintptr_t)a->out, (uint64_t)(uintptr_t)a->sf,
                          (uint64_t)(uintptr_t)aux, stream, fn);
}

static qg_status layout(qg_context *ctx, qg_cast_op op, const qg_sf_layout_args *a,
                        CUstream stream) {
    qg__clear_error();
    const char *fn = cast_fn(op);
    qg_cast_problem p;
    bool empty;
    qg_status st = check_layout(ctx, op, a, true, fn, &p, &empty);
    if (st != QG_SUCCESS) return st;
    if ((st = plan_online(ctx, &p, empty, fn)) != QG_SUCCESS || empty) return st;
    const void *ptrs[] = {a->mn ? (const void *)a->sf : NULL, a->out, a->ks};
    static const char *const names[] = {"sf", "out", "ks"};
    return launch_checked(ctx, &p, ptrs, names, 3, (uint64_t)(uintptr_t)a->sf,
                          (uint64_t)(uintptr_t)a->out, 0, (uint64_t)(uintptr_t)a->ks, stream, fn);
}

qg_status qg_per_token_cast(qg_context *ctx, const qg_cast_args *args, struct CUstream_st *stream) {
    return cast(ctx, QG_CAST_PER_TOKEN, args, stream);
}

qg_status qg_per_block_cast(qg_context *ctx, const qg_cast_args *args, struct CUstream_st *stream) {
    return cast(ctx, QG_CAST_PER_BLOCK, args, stream);
}

qg_status qg_per_channel_cast(qg_context *ctx, const qg_cast_args *args,
                              struct CUstream_st *stream) {
    return cast(ctx, QG_CAST_PER_CHANNEL, args, stream);
}

qg_status qg_silu_mul_cast(qg_context *ctx, const qg_cast_args *args, struct CUstream_st *stream) {
    return cast(ctx, QG_CAST_SILU_MUL, args, stream);
}

qg_status qg_sf_transpose_mn_major(qg_context *ctx, const qg_sf_layout_args *args,
                                   struct CUstream_st *stream) {
    return layout(ctx, QG_CAST_SF_MN_MAJOR, args, stream);
}

qg_status qg_sf_pack_ue8m0(qg_context *ctx, const qg_sf_layout_args *args,
                           struct CUstream_st *stream) {
    return layout(ctx, QG_CAST_SF_PACK_UE8M0, args, stream);
}

qg_status qg_sf_pack_ue8m0_k_grouped(qg_context *ctx, const qg_sf_layout_args *args,
                                     struct CUstream_st *stream) {
    return layout(ctx, QG_CAST_SF_PACK_UE8M0_KGROUPED, args, stream);
}

qg_status qg_cast_compile(qg_context *ctx, qg_cast_kind kind, const qg_cast_args *cast_args,
                          const qg_sf_layout_args *layout_args, qg_kernel_info *info) {
    qg__clear_error();
    const char *fn = "qg_cast_compile";
    if ((int)kind < 1 || (int)kind > NUM_OPS)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: kind must be a qg_cast_kind (1..7), got %d",
                        fn, (int)kind);
    const qg_cast_op op = (qg_cast_op)kind;
    qg_cast_problem p;
    bool empty;
    qg_status st = op <= QG_CAST_SILU_MUL ? check_cast(ctx, op, cast_args, false, fn, &p, &empty)
                                          : check_layout(ctx, op, layout_args, false, fn, &p, &empty);
    if (st != QG_SUCCESS) return st;
    /* the kernel a call would run now: QGEMM_CAST_VARIANT's lean kernels included */
    if (op <= QG_CAST_SILU_MUL && (st = cast_env_variant(fn, &p)) != QG_SUCCESS) return st;
    if (empty) return QG_SUCCESS;
    qg_cast_plan plan;
    if ((st = qg__cast_plan(&p, qg_context_get_num_sms(ctx), &plan)) != QG_SUCCESS)
        return qg__fail(st, "%s: %s", fn, qg_last_error());
    qg_jit_result res;
    if ((st = compile_kernel(ctx, &p, &plan, &res)) != QG_SUCCESS)
        return qg__fail(st, "%s: %s", fn, qg_last_error());
    if (info) *info = res.info;
    if (ctx->offline) return QG_SUCCESS;
    if ((st = qg__enter(ctx, NULL, fn)) != QG_SUCCESS) return st;
    st = run(ctx, &p, NULL, NULL, fn);
    qg__leave(ctx);
    return st;
}
