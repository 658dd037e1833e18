/*
 * cast_plan.c -- validation, launch plan and JIT source of the cast kernels
 * (kernels/qg_cast.cuh; the contract is in cast_plan.h).
 *
 * Launch shapes (all 256 threads; grids grid-stride, capped at what the SMs
 * hold at once so a large tensor never launches more CTAs than run):
 *   per-token, silu_mul  one 128-group per 16 (bf16) / 32 (float) threads,
 *                        `unroll` groups per thread per round; the largest
 *                        unroll (4, 2 for silu_mul) that still gives two CTAs
 *                        per SM, so small M spreads over every SM; 4 CTAs per SM;
 *   per-block            one CTA per 128x128 block, 3 (bf16) / 2 (float) per SM;
 *   per-channel          one CTA per 128 rows x 256 (bf16) / 128 (float) columns, 2 per SM;
 *   scale layouts        one thread per output column and 8 output rows.
 * QGEMM_CAST_VARIANT=all (qg_cast_problem.one_pass; A/B runs) lifts the quantizing ops'
 * cap: one CTA per unit of work, the hardware scheduling CTAs as others retire;
 * QGEMM_CAST_VARIANT=lean (qg_cast_problem.lean) compiles QG_CAST_LEAN kernels.
 * QGEMM_CAST_VARIANT word ring (qg_cast_problem.ring): per-channel with 16-byte rows
 * (vec = 8 bf16 / 4 float) runs the ring kernel: 512 threads, 2 CTAs per SM, persistent
 * (grid <= 2 per SM), tiles of 128 rows x 256 bytes, QG_CAST_RING_STAGES of them in
 * flight a CTA (dynamic shared memory); narrower rows keep the plain kernel.
 * Word lut (qg_cast_problem.lut): silu_mul of bf16 input with at least
 * QG_CAST_LUT_ROUNDS rounds a CTA runs the table kernel: 768 threads (80 registers:
 * two rounds live), one CTA per SM (one 32 KB table each, built while the first loads
 * are in flight), unroll 2; float input, 2-byte accesses (vec 1: NVRTC spilled) and
 * smaller calls keep the plain kernel (the table costs ~1 us a CTA).
 */
#include "cast_plan.h"
#include "internal.h"

#include <stdio.h>

#define QG_CAST_THREADS_DEFAULT 256
#define QG_CAST_MAX_INNER (1 << 30)
/* CTAs per SM of each grid: what stays resident at the kernels' register
 * counts at 256 threads (tools/cast_compile_check.sh: per-token <= 74,
 * silu_mul <= 60, layouts <= 64 under NVRTC), so a grid-stride grid runs in one wave and
 * no CTA waits for another to finish all its work. Per-block and per-channel
 * are compiled to fit (the launch bounds' minimum CTAs, plan.min_ctas: 85 /
 * 128 registers); NVRTC gave one per-channel variant 180 without it. */
#define QG_CAST_CTAS_TOKEN 4
#define QG_CAST_CTAS_BLOCK_BF16 3
#define QG_CAST_CTAS_BLOCK_F32 2
#define QG_CAST_CTAS_CHANNEL 2
#define QG_CAST_CTAS_LAYOUT 4
/* ring: 3 stages of 32 KB + ~5 KB static a CTA, 2 CTAs in 228 KB; 64 registers a
 * thread at 2 x 512 threads */
#define QG_CAST_RING_STAGES 3
#define QG_CAST_RING_THREADS 512
#define QG_CAST_RING_CTAS 2
#define QG_CAST_RING_STAGE_BYTES (128 * 256)
/* lut: a CTA of 768 threads per SM (80 registers), 96 items a round; the table only
 * when every CTA runs at least this many rounds (4096 x 3584: 9 on 132 SMs) */
#define QG_CAST_LUT_THREADS 768
#define QG_CAST_LUT_UNROLL 2
#define QG_CAST_LUT_ROUNDS 4

const char *qg__cast_op_name(qg_cast_op op) {
    switch (op) {
    case QG_CAST_PER_TOKEN: return "per_token";
    case QG_CAST_PER_BLOCK: return "per_block";
    case QG_CAST_PER_CHANNEL: return "per_channel";
    case QG_CAST_SILU_MUL: return "silu_mul";
    case QG_CAST_SF_MN_MAJOR: return "sf_mn_major";
    case QG_CAST_SF_PACK_UE8M0: return "sf_pack_ue8m0";
    case QG_CAST_SF_PACK_UE8M0_KGROUPED: return "sf_pack_ue8m0_kgrouped";
    }
    return "unknown";
}

#define QG_CAST_STR_(x) #x
#define QG_CAST_STR(x) QG_CAST_STR_(x)

static int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t align4(int64_t x) { return (x + 3) / 4 * 4; }
static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int quantizes(qg_cast_op op) { return op >= QG_CAST_PER_TOKEN && op <= QG_CAST_SILU_MUL; }

/* Elements one thread loads per 128-group: 16 bytes. */
static int elems_per_thread(const qg_cast_problem *p) { return p->in_f32 ? 4 : 8; }

static qg_status check_quantizing(const qg_cast_problem *p, const char *name) {
    if ((p->in_f32 != 0 && p->in_f32 != 1) || (p->ue8m0 != 0 && p->ue8m0 != 1) ||
        (p->sf_mn_major != 0 && p->sf_mn_major != 1))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast %s: in_f32, ue8m0 and sf_mn_major are 0 or 1",
                        name);
    if (p->k < 1 || p->k > QG_CAST_MAX_INNER)
        return qg__fail(QG_ERROR_UNSUPPORTED, "cast %s: k = %d is outside [1, 2^30]", name, p->k);
    const int64_t in_cols = p->op == QG_CAST_SILU_MUL ? 2 * (int64_t)p->k : p->k;
    if (p->ld_in < in_cols || p->ld_out < p->k)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "cast %s: ld_in = %lld must be >= %lld and ld_out = %lld >= k = %d", name,
                        (long long)p->ld_in, (long long)in_cols, (long long)p->ld_out, p->k);
    if (!is_pow2(p->in_align) || !is_pow2(p->out_align))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "cast %s: in_align = %d and out_align = %d must be powers of two", name,
                        p->in_align, p->out_align);
    const int elem = p->in_f32 ? 4 : 2;
    if (p->in_align < elem)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast %s: x must be %d-byte aligned (in_align = %d)",
                        name, elem, p->in_align);
    return QG_SUCCESS;
}

/* Rows in groups: M-major scales and the masked layout need rows = groups x m. */
static qg_status check_token_rows(const qg_cast_problem *p, const char *name) {
    if (p->rows < 0) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast %s: rows = %lld < 0", name,
                                     (long long)p->rows);
    if (p->op == QG_CAST_PER_TOKEN && p->rows_mask != QG_CAST_ROWS_ALL)
        return qg__fail(QG_ERROR_UNSUPPORTED, "cast %s: row masks are silu_mul's only", name);
    if (p->rows_mask != QG_CAST_ROWS_ALL && p->rows_mask != QG_CAST_ROWS_MASKED &&
        p->rows_mask != QG_CAST_ROWS_CONTIGUOUS)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast %s: rows_mask = %d is no qg_cast_rows", name,
                        (int)p->rows_mask);
    if (p->sf_mn_major || p->rows_mask == QG_CAST_ROWS_MASKED) {
        if (p->m < 1 || p->groups < 1 || (int64_t)p->groups * p->m != p->rows)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "cast %s: rows = %lld must be groups (%d) x m (%d), both >= 1", name,
                            (long long)p->rows, p->groups, p->m);
    }
    if (p->sf_mn_major && p->sf_ld < align4(p->m))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast %s: sf_ld = %d < m = %d rounded up to 4", name,
                        p->sf_ld, p->m);
    return QG_SUCCESS;
}

/* The widest access (elements) that every row start, k, and both base
 * addresses allow, at most 16 bytes of input. */
static int plan_vec(const qg_cast_problem *p) {
    const int elem = p->in_f32 ? 4 : 2;
    int v = elems_per_thread(p);
    while (v > 1 && !(p->k % v == 0 && p->ld_in % v == 0 && p->ld_out % v == 0 &&
                      p->in_align % (v * elem) == 0 && p->out_align % v == 0))
        v /= 2;
    return v;
}

static unsigned grid_of(int64_t ctas, int64_t cap) {
    return (unsigned)(ctas <= 0 ? 0 : min64(ctas, cap));
}

/* The quantizing ops' grid cap: what the SMs hold at once (the grid-stride default),
 * or, under one_pass, the launch's limit (a CTA per unit; the kernels' loops run once). */
static int64_t quant_cap(const qg_cast_problem *p, int64_t resident) {
    return p->one_pass ? (int64_t)0x7FFFFFFF : resident;
}

qg_status qg__cast_plan(const qg_cast_problem *p, int num_sms, qg_cast_plan *out) {
    if (!p || !out) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast plan: NULL problem or plan");
    if (num_sms < 1 || num_sms > 4096)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast plan: num_sms = %d is outside [1, 4096]",
                        num_sms);
    const char *name = qg__cast_op_name(p->op);
    qg_cast_plan plan = {.vec = 1, .threads = QG_CAST_THREADS_DEFAULT, .unroll = 1, .min_ctas = 1};
    const int warps = plan.threads / 32;
    qg_status st;
    if (quantizes(p->op) && (st = check_quantizing(p, name)) != QG_SUCCESS) return st;
    switch (p->op) {
    case QG_CAST_PER_TOKEN:
    case QG_CAST_SILU_MUL: {
        if ((st = check_token_rows(p, name)) != QG_SUCCESS) return st;
        plan.vec = plan_vec(p);
        const int tpg = 128 / elems_per_thread(p), ipw = 32 / tpg;
        plan.work = p->rows * ceil_div64(p->k, 128);
        const int max_unroll = p->op == QG_CAST_SILU_MUL ? 2 : 4;
        for (plan.unroll = max_unroll; plan.unroll > 1; plan.unroll /= 2)
            if (ceil_div64(plan.work, (int64_t)ipw * plan.unroll * warps) >= 2 * (int64_t)num_sms) break;
        plan.grid = grid_of(ceil_div64(plan.work, (int64_t)ipw * plan.unroll * warps),
                            quant_cap(p, (int64_t)num_sms * QG_CAST_CTAS_TOKEN));
        const int64_t lut_round = (int64_t)ipw * QG_CAST_LUT_UNROLL * (QG_CAST_LUT_THREADS / 32);
        if (p->op == QG_CAST_SILU_MUL && p->lut && !p->in_f32 && plan.vec >= 2 &&
            plan.work >= (int64_t)QG_CAST_LUT_ROUNDS * num_sms * lut_round) {
            plan.lut = 1;
            plan.threads = QG_CAST_LUT_THREADS;
            plan.unroll = QG_CAST_LUT_UNROLL;
            plan.min_ctas = 1;
            plan.grid = grid_of(ceil_div64(plan.work, lut_round), num_sms);
        }
        break;
    }
    case QG_CAST_PER_BLOCK:
        if (p->n < 1 || p->groups < 1)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast %s: n = %d and groups = %d must be >= 1",
                            name, p->n, p->groups);
        plan.vec = plan_vec(p);
        plan.work = (int64_t)p->groups * ceil_div64(p->n, 128) * ceil_div64(p->k, 128);
        /* three CTAs (85 registers) only for aligned bf16: narrower accesses need more */
        plan.min_ctas = !p->in_f32 && plan.vec == elems_per_thread(p) ? QG_CAST_CTAS_BLOCK_BF16
                                                                       : QG_CAST_CTAS_BLOCK_F32;
        plan.grid = grid_of(plan.work, quant_cap(p, (int64_t)num_sms * plan.min_ctas));
        break;
    case QG_CAST_PER_CHANNEL:
        if (p->rows < 0 || p->rows % 128 != 0)
            return qg__fail(QG_ERROR_UNSUPPORTED, "cast %s: rows = %lld must be a multiple of 128",
                            name, (long long)p->rows);
        plan.vec = plan_vec(p);
        plan.work = p->rows / 128 * ceil_div64(p->k, 32 * elems_per_thread(p));
        /* narrow bf16 accesses (vec < 8) hold more registers: one CTA per SM
         * (NVRTC spilled at the two-CTA cap of 128 registers) */
        plan.min_ctas = !p->in_f32 && plan.vec < elems_per_thread(p) ? 1 : QG_CAST_CTAS_CHANNEL;
        plan.grid = grid_of(plan.work, quant_cap(p, plan.min_ctas * (int64_t)num_sms));
        if (p->ring && plan.vec == elems_per_thread(p)) {
            /* tiles of 128 rows x 256 bytes: 128 bf16 / 64 float columns */
            plan.ring = QG_CAST_RING_STAGES;
            plan.threads = QG_CAST_RING_THREADS;
            plan.min_ctas = QG_CAST_RING_CTAS;
            plan.work = p->rows / 128 * ceil_div64(p->k, 256 / (p->in_f32 ? 4 : 2));
            plan.grid = grid_of(plan.work, (int64_t)QG_CAST_RING_CTAS * num_sms);
            plan.smem = QG_CAST_RING_STAGES * QG_CAST_RING_STAGE_BYTES;
        }
        break;
    case QG_CAST_SF_MN_MAJOR:
    case QG_CAST_SF_PACK_UE8M0: {
        if (p->m < 0 || p->k < 1 || p->k > QG_CAST_MAX_INNER || p->groups < 1)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "cast %s: mn = %d >= 0, sf_k = %d >= 1 and groups = %d >= 1 required", name,
                            p->m, p->k, p->groups);
        /* sf_ld = mn rounded up to 4 is the TMA-aligned layout; sf_ld = mn a dense
         * transposed copy (transform_sf_into_required_layout's sf.contiguous() of
         * a transposed SFB: mn = K blocks, k = N blocks, strides swapped). */
        if (p->sf_ld < p->m)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast %s: sf_ld = %d < mn = %d", name,
                            p->sf_ld, p->m);
        const int64_t out_rows = p->op == QG_CAST_SF_MN_MAJOR ? p->k : ceil_div64(p->k, 4);
        plan.work = (int64_t)p->groups * ceil_div64(out_rows, 8) * p->sf_ld;
        plan.grid = grid_of(ceil_div64(plan.work, plan.threads),
                            (int64_t)num_sms * QG_CAST_CTAS_LAYOUT);
        break;
    }
    case QG_CAST_SF_PACK_UE8M0_KGROUPED:
        if (p->m < 0 || p->m % 4 != 0 || p->k < 0 || p->packed_sf_k < 0)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "cast %s: mn = %d must be a multiple of 4, sf_k = %d and packed_sf_k = %d "
                            ">= 0", name, p->m, p->k, p->packed_sf_k);
        if (p->groups < 1 || p->groups > 128)
            return qg__fail(QG_ERROR_UNSUPPORTED, "cast %s: groups = %d is outside [1, 128]", name,
                            p->groups);
        if ((p->gran_k != 32 && p->gran_k != 128) || p->k_alignment < 32 || p->k_alignment % 32 != 0 ||
            (p->psum != 0 && p->psum != 1))
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "cast %s: gran_k = %d must be 32 or 128, k_alignment = %d a positive "
                            "multiple of 32, psum = %d 0 or 1", name, p->gran_k, p->k_alignment, p->psum);
        if (p->in_align < 16 || p->out_align < 16)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast %s: both tensors must be 16-byte aligned",
                            name);
        plan.work = (int64_t)p->packed_sf_k * (p->m / 4);
        plan.grid = grid_of(ceil_div64(plan.work, plan.threads),
                            (int64_t)num_sms * QG_CAST_CTAS_LAYOUT);
        break;
    default:
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cast plan: op = %d is no qg_cast_op", (int)p->op);
    }
    *out = plan;
    return QG_SUCCESS;
}

qg_status qg__cast_source(const qg_cast_problem *p, const qg_cast_plan *plan, char *buf, size_t cap) {
    const int q = quantizes(p->op), kg = p->op == QG_CAST_SF_PACK_UE8M0_KGROUPED;
    const int n = snprintf(
        buf, cap,
        "// qgemm cast kernel: %s\n"
        "#define QG_CAST_OP %d\n#define QG_CAST_IN_F32 %d\n#define QG_CAST_UE8M0 %d\n"
        "#define QG_CAST_SF_MN %d\n#define QG_CAST_ROW_MASK %d\n#define QG_CAST_K %d\n"
        "#define QG_CAST_N %d\n#define QG_CAST_VEC %d\n#define QG_CAST_THREADS %d\n"
        "#define QG_CAST_UNROLL %d\n#define QG_CAST_GROUPS %d\n#define QG_CAST_GRAN_K %d\n"
        "#define QG_CAST_K_ALIGN %d\n#define QG_CAST_PSUM %d\n#define QG_CAST_MIN_CTAS %d\n"
        "#define QG_CAST_PARAMS_BYTES %zu\n%s%s%s#include \"qg_cast.cuh\"\n",
        qg__cast_op_name(p->op), (int)p->op, q ? p->in_f32 : 0, q ? p->ue8m0 : 0,
        (p->op == QG_CAST_PER_TOKEN || p->op == QG_CAST_SILU_MUL) ? p->sf_mn_major : 0,
        p->op == QG_CAST_SILU_MUL ? (int)p->rows_mask : 0, p->k, p->op == QG_CAST_PER_BLOCK ? p->n : 0,
        plan->vec, plan->threads, plan->unroll, kg ? p->groups : 1, kg ? p->gran_k : 128,
        kg ? p->k_alignment : 128, kg ? p->psum : 0, plan->min_ctas, sizeof(qg_cast_params),
        /* (absent for base: the plain kernels' source and cache key as before the knob) */
        q && p->lean ? "#define QG_CAST_LEAN 1\n" : "",
        /* (absent unless the plan takes them: the other kernels' sources as before) */
        plan->ring ? "#define QG_CAST_RING " QG_CAST_STR(QG_CAST_RING_STAGES) "\n" : "",
        plan->lut ? "#define QG_CAST_LUT 1\n" : "");
    if (n < 0 || (size_t)n >= cap)
        return qg__fail(QG_ERROR_INTERNAL, "cast kernel source exceeds %zu bytes", cap);
    return QG_SUCCESS;
}

void qg__cast_params(const qg_cast_problem *p, uint64_t in, uint64_t out, uint64_t sf, uint64_t aux,
                     qg_cast_params *params) {
    *params = (qg_cast_params){
        .in = in,
        .out = out,
        .sf = sf,
        .aux = aux,
        .rows = p->op == QG_CAST_PER_BLOCK ? (int64_t)p->groups * p->n : p->rows,
        .ld_in = p->ld_in,
        .ld_out = p->ld_out,
        .in_stride = {p->in_stride[0], p->in_stride[1], p->in_stride[2]},
        .m = p->m,
        .groups = p->groups,
        .sf_ld = p->sf_ld,
        .sf_k = p->k,
        .packed_sf_k = p->packed_sf_k,
    };
}
