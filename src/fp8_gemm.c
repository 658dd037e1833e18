/*
 * fp8_gemm.c -- the FP8 family's API unit: the block-scaled FP8 GEMMs'
 * entry points and configuration calls: validate, write the kernel's source
 * (kernels/qg_fp8_gemm.cuh), resolve it through the shared launch path
 * (src/launch.h), encode the tensor maps, launch. The heuristic is
 * src/fp8_config.c.
 *
 * Invariants:
 *  - Every argument is checked before anything touches the device, so a
 *    rejected call writes no output memory.
 *  - A launch reads no device memory and allocates nothing: the tensor maps
 *    are built on the host and passed by value (CUDA-graph capturable).
 *  - Resolution (heuristic, source generation, JIT, module load) happens once
 *    per (problem, forced config) and is cached in the context's launch cache
 *    (src/launch.c); modules are shared between entries with the same JIT key.
 *  - A configuration the heuristic chose does not end a GEMM in a compile
 *    error while another tile compiles: if the JIT refuses it, the next tile
 *    the heuristic ranks is used, up to three times (resolve_and_compile).
 *    A refusal is not remembered: a later process (or qg_compile, then the
 *    first GEMM call) compiles the refused kernel again before falling back.
 */
#include "launch.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QG_CONTIGUOUS_ALIGNMENT 128

int qg_m_alignment_for_contiguous_layout(void) { return QG_CONTIGUOUS_ALIGNMENT; }

/* 0 also when no multiple of 4 >= m fits in int64 (m + 3 would overflow). */
int64_t qg_sfa_ld(int64_t m) { return m < 0 || m > INT64_MAX - 3 ? 0 : (m + 3) / 4 * 4; }

/* Rows of the TMA box in which one CTA loads B: block_n, or its half of the
 * tile when a pair multicasts B (each CTA loads half and sends it to both). */
static uint32_t b_box_rows(const qg_config *cfg, const qg_kernel_plan *plan) {
    return (uint32_t)(cfg->multicast == QG_MULTICAST_B ? cfg->block_n / plan->cluster_size
                                                       : cfg->block_n);
}

/* ---- weights into L2 during the PDL wait ---------------------------------- */

/* Measured with chains of 8 GEMMs (2026-11-22-explore13 (bench/HISTORY.md), runs
 * 3-5): 1-4 K blocks gain 6-7% at K = 512 and 2-4% at N = 24576, K = 1536,
 * 0-1% elsewhere; 24 MiB over the grid made chains up to 1.3x slower (demand
 * loads that reach a line still in flight seem to fetch it again), and so did
 * a small prefetch where two CTAs read each B tile (256x7168x2048: 4% slower)
 * and with split-K (1-3%). */
int qg__pdl_prefetch_kb(const qg_problem *p, const qg_config *cfg, const qg_kernel_plan *plan,
                        int grid) {
    if (p->kind != QG_GEMM_DENSE || plan->split_k != 1 || p->m > cfg->block_m || grid < 1)
        return 0;
    /* One K block of every CTA's B. */
    const long long per_kb = (long long)grid * b_box_rows(cfg, plan) * 128;
    const long long fit = (6ll << 20) / per_kb;
    const int kb = fit < 1 ? 1 : fit > 4 ? 4 : (int)fit;
    return kb < plan->num_k_blocks ? kb : plan->num_k_blocks;
}

/* ---- kernel source ------------------------------------------------------ */

/* The short source the JIT compiles: the problem and config as macros, the
 * wgmma operand list for N = wgmma_n, then the kernel. */
/* The kernel's scheduler mode (QG_KIND): the weight-gradient GEMM runs the
 * dense scheduler in the 1D1D mode (QG_SFB_COLS), the k-grouped one its own
 * (4) in that mode, the batched one its rank-3 mode (5). */
static int kernel_kind(qg_gemm_kind kind) {
    return kind == QG_GEMM_WGRAD ? 0 : kind == QG_GEMM_K_GROUPED ? 4
           : kind == QG_GEMM_FP8_BATCHED ? 5 : (int)kind;
}

/* K as baked into the kernel: the 1D1D kernel takes K at run time (one
 * kernel for every K: weight gradients of any token count, and the
 * k-grouped GEMM's groups), so its source says 128. */
static int kernel_k(const qg_problem *p) { return qg__one_d(p->kind) ? 128 : p->k; }

/* Groups as baked into the kernel: the k-grouped kernel takes its groups at
 * run time (qg_kgroups), so one kernel serves every G. */
static int kernel_groups(const qg_problem *p) {
    return p->kind == QG_GEMM_K_GROUPED ? 1 : p->num_groups;
}

static qg_status kernel_source(char *buf, size_t cap, const qg_problem *p, const qg_config *cfg,
                               const qg_kernel_plan *plan) {
    const int acc = plan->wgmma_n / 2;
    const int wgrad = qg__one_d(p->kind); /* the 1D1D mode */
    size_t n = (size_t)snprintf(
        buf, cap,
        "// qgemm kernel: kind %d, N %d, K %d, groups %d, block %dx%d, %d stages, multicast %d, "
        "split-K %d\n"
        "#define QG_KIND %d\n#define QG_SHAPE_N %d\n#define QG_SHAPE_K %d\n"
        "#define QG_NUM_GROUPS %d\n#define QG_BLOCK_M %d\n#define QG_BLOCK_N %d\n"
        "#define QG_NUM_STAGES %d\n#define QG_MULTICAST %d\n#define QG_CLUSTER %d\n"
        "#define QG_SPLIT_K %d\n"
        "#define QG_SWIZZLE_GROUP %d\n#define QG_SFB_ROWS %d\n#define QG_SMEM_BYTES %zu\n"
        "#define QG_PRODUCER_REGS %d\n#define QG_MATH_REGS %d\n"
        "#define QG_WGMMA_N %d\n#define QG_ACC_SETS %d\n"
        "#define QG_KPIPE %d\n#define QG_STORE_COLS %d\n#define QG_D_ROWS %d\n"
        "#define QG_SFB_COLS %d\n#define QG_D_F32 %d\n#define QG_D_REDUCE %d\n"
        "#define QG_WGMMA_OP_DESC_A %d\n#define QG_WGMMA_OP_DESC_B %d\n"
        "#define QG_WGMMA_OP_SCALE_D %d\n#define QG_WGMMA_OP_DESC_HI %d\n"
        "#define QG_A_BOX_ROWS %d\n"
        "#define QG_WGMMA_ACC_LIST \"{",
        (int)p->kind, p->n, kernel_k(p), kernel_groups(p), cfg->block_m, cfg->block_n,
        plan->num_stages, (int)cfg->multicast, plan->split_k, kernel_kind(p->kind), p->n,
        kernel_k(p), kernel_groups(p), cfg->block_m,
        cfg->block_n, plan->num_stages, (int)cfg->multicast, plan->cluster_size, plan->split_k,
        plan->swizzle_group, plan->sfb_rows, plan->smem_bytes, plan->producer_regs,
        plan->math_regs, plan->wgmma_n, plan->acc_sets,
        (int)plan->kpipe, plan->store_cols, (int)plan->d_rows, wgrad, wgrad, wgrad && p->accumulate, acc, acc + 1,
        acc + 2, acc + 3, plan->a_box_rows);
    for (int i = 0; i < acc && n < cap; ++i)
        n += (size_t)snprintf(buf + n, cap - n, "%s%%%d", i ? ", " : "", i);
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "}\"\n#define QG_WGMMA_ACC_ARGS(d)");
    for (int i = 0; i < acc && n < cap; ++i)
        n += (size_t)snprintf(buf + n, cap - n, "%s \"+f\"(d[%d])", i ? "," : "", i);
    /* (the e4m3-D switch only where it is on: the bf16 kernels' sources, so
     * their cache keys and PTX, are those of before) */
    if (n < cap && plan->d_fp8)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_D_FP8 %d", plan->d_fp8 & QG_D_FP8_SCALES);
    if (n < cap && (plan->d_fp8 & QG_D_SWIGLU))
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_SWIGLU 1");
    /* (QGEMM_FP8OUT_VARIANT early: the split tiles only, whose cluster serves
     * the amax exchange alone) */
    /* (not beside split-K: its partial sums' st.async come before the
     * exchange, so the cluster barrier stays whole) */
    if (n < cap && (plan->d_fp8 & QG_D_FP8_EARLY) && cfg->block_n < 128 && plan->cluster_size > 1 &&
        plan->split_k == 1)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_FP8_EARLY 1");
    /* (last: where early applies, whose exit it changes) */
    if (n < cap && (plan->d_fp8 & QG_D_FP8_LAST) && (plan->d_fp8 & QG_D_FP8_EARLY) &&
        cfg->block_n < 128 && plan->cluster_size > 1 && plan->split_k == 1)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_FP8_LAST 1");
    if (n < cap && (plan->d_fp8 & QG_D_FP8_SFBPF))
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_FP8_SFB_PF 1");
    if (n < cap && (plan->d_fp8 & QG_D_FP8_EPI))
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_FP8_EPI 1");
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "\n#include \"qg_fp8_gemm.cuh\"\n");
    if (n >= cap) return qg__fail(QG_ERROR_INTERNAL, "kernel source exceeds %zu bytes", cap);
    return QG_SUCCESS;
}

/* The fault seam of src/seam.h: a tile the JIT is to refuse, as it refuses a
 * kernel that spills. No legal configuration spills on the shapes the tests
 * cover, and resolve_and_compile's fallback to the next ranked configuration
 * must still be tested; the testkit sets it. 0: none. */
static atomic_int refused_tile;

static int tile_code(int block_m, int block_n) { return block_m * 1024 + block_n; }

void qg__refuse_tile(int block_m, int block_n) {
    atomic_store(&refused_tile, block_m > 0 && block_n > 0 ? tile_code(block_m, block_n) : 0);
}

static qg_status compile_kernel(qg_context *ctx, const qg_problem *p, const qg_config *cfg,
                                const qg_kernel_plan *plan, qg_jit_result *res) {
    char src[8192];
    qg_status st = kernel_source(src, sizeof src, p, cfg, plan);
    if (st != QG_SUCCESS) return st;
    const int refused = atomic_load(&refused_tile);
    if (refused && refused == tile_code(cfg->block_m, cfg->block_n))
        return qg__fail(QG_ERROR_COMPILE, "kernel %dx%d refused (fault injected by qg__refuse_tile)",
                        cfg->block_m, cfg->block_n);
    if ((st = qg__jit_compile(ctx->jit, src, res)) != QG_SUCCESS) return st;
    return qg__check_register_split(res, plan->num_threads, plan->producer_regs,
                                    plan->num_math_wgs, plan->math_regs);
}

/* The launch cache's view of a problem: expected_m only matters for the
 * masked layout (0 = M_max, never above it); the other kinds ignore it. */
static qg_problem launch_key(qg_problem p) {
    if (p.kind == QG_GEMM_GROUPED_PSUM) return p; /* 0: the heuristic takes m / num_groups */
    if (p.kind != QG_GEMM_GROUPED_MASKED) p.expected_m = 0;
    else if (p.expected_m == 0 || p.expected_m > p.m) p.expected_m = p.m;
    return p;
}

/* Choose (or complete a forced) configuration for p on ctx and compile its
 * kernel. The JIT refuses a kernel that spills or whose wgmmas ptxas
 * serialized; the CI compile sweeps keep every legal configuration clear of
 * that on the shapes they cover, but ptxas's allocation depends on the baked
 * N and K. So where the JIT refuses the heuristic's own choice, the next tile
 * the heuristic ranks (the refused block_m x block_n avoided in every
 * multicast mode) is compiled instead, at most QG_FALLBACKS times; after
 * that the last refusal is returned. A forced configuration is the
 * caller's, and its refusal is returned. */
#define QG_FALLBACKS 3
static qg_status resolve_and_compile(qg_context *ctx, int num_sms, const qg_problem *p, int d_fp8,
                                     const qg_config *forced, qg_config *cfg, qg_kernel_plan *plan,
                                     qg_jit_result *res) {
    qg_config refused[QG_FALLBACKS];
    for (int n = 0;; ++n) {
        qg_status st;
        if (forced) {
            *cfg = *forced;
            st = qg__complete_config_out(&ctx->props, num_sms, p, d_fp8, cfg, plan);
        } else {
            st = qg__select_out(&ctx->props, num_sms, p, d_fp8, refused, n, cfg, plan);
        }
        if (st != QG_SUCCESS) return st;
        st = compile_kernel(ctx, p, cfg, plan, res);
        if (st == QG_SUCCESS && n > 0) qg__clear_error(); /* the refusal was handled */
        if (st != QG_ERROR_COMPILE || forced || n == QG_FALLBACKS) return st;
        refused[n] = *cfg;
    }
}

/* ---- the FP8 family on the shared launch path ---------------------------- */

/* The launch cache's key: the problem (launch_key()'d) and the fields of a
 * forced configuration that choose a kernel (split_k 0 read as 1); zeroed
 * before it is filled, as qg__launch_resolve compares bytes. */
typedef struct {
    qg_problem problem;
    int d_fp8; /* the plan's d_fp8: 0 bf16 / FP32 D, 1 e4m3, 2 e4m3 with UE8M0 scales (| QG_D_SWIGLU) */
    int grouped_mcb; /* the heuristic's: QGEMM_FP8_GROUPED_MCB for this kind (qg__fp8_grouped_mcb) */
    int heur; /* the heuristic's: QGEMM_FP8_HEUR's flags (qg__fp8_heur; -1 fails the build) */
    int forced;
    int block_m, block_n, num_stages, multicast, swizzle_group, split_k;
} fp8_key;

/* What an entry keeps: the configuration and the plan it was compiled with. */
typedef struct {
    qg_config cfg;
    qg_kernel_plan plan;
} fp8_plan;

/* qg_launch_family.build: the heuristic's (or the forced `arg`'s)
 * configuration, compiled; the SM limit is the context's at build time. */
static qg_status fp8_build(qg_context *ctx, const void *key, const void *arg, void *plan,
                           qg_launch_shape *shape, qg_jit_result *res) {
    const fp8_key *k = key;
    fp8_plan *fp = plan;
    qg_status st = resolve_and_compile(ctx, ctx->num_sms, &k->problem, k->d_fp8, arg, &fp->cfg,
                                       &fp->plan, res);
    if (st != QG_SUCCESS) return st;
    shape->num_threads = (unsigned)fp->plan.num_threads;
    shape->smem_bytes = fp->plan.smem_bytes;
    shape->cluster_size = fp->plan.cluster_size;
    shape->grid = fp->cfg.num_sms;
    return QG_SUCCESS;
}

static const qg_launch_family fp8_family = {
    .kernel = "qg_fp8_gemm_kernel",
    .plan_size = sizeof(fp8_plan),
    .build = fp8_build,
};

/* Find or build the launch entry; called with ctx->lock held and ctx current. */
static qg_status resolve_launch(qg_context *ctx, const qg_problem *p, int d_fp8,
                                const qg_config *forced, const qg_launch_entry **out) {
    fp8_key key;
    memset(&key, 0, sizeof key);
    key.problem = *p;
    key.d_fp8 = d_fp8;
    key.grouped_mcb = !forced && qg__fp8_grouped_mcb(&ctx->props, p->kind, d_fp8);
    key.heur = forced ? 0 : qg__fp8_heur();
    if (forced) {
        key.forced = 1;
        key.block_m = forced->block_m;
        key.block_n = forced->block_n;
        key.num_stages = forced->num_stages;
        key.multicast = (int)forced->multicast;
        key.swizzle_group = forced->swizzle_group;
        key.split_k = forced->split_k ? forced->split_k : 1;
    }
    return qg__launch_resolve(ctx, &fp8_family, &key, sizeof key, forced, out);
}

/* QGEMM_FP8OUT_VARIANT's flags into *flags, read once a call (the value
 * checked is the value used); refused where it is not a variant. */
static qg_status fp8out_variant(const char *fn, int *flags) {
    if ((*flags = qg__fp8out_variant()) >= 0) return QG_SUCCESS;
    return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                    "%s: QGEMM_FP8OUT_VARIANT='%.64s' is not a '+'-separated list of old, room, "
                    "early, sfbpf, new, epi, last, nk, swm64, swmca, swmcac", fn, qg__env_string("QGEMM_FP8OUT_VARIANT"));
}

/* The 1D2D kinds, which have an e4m3-D kernel. */
static bool has_fp8_d(qg_gemm_kind kind) {
    return kind == QG_GEMM_DENSE || kind == QG_GEMM_GROUPED_CONTIGUOUS ||
           kind == QG_GEMM_GROUPED_MASKED || kind == QG_GEMM_GROUPED_PSUM;
}

static qg_status compile_call(qg_context *ctx, const qg_problem *problem, int d_fp8,
                              const qg_config *cfg, qg_kernel_info *info, const char *fn);

qg_status qg_compile(qg_context *ctx, const qg_problem *problem, const qg_config *cfg,
                     qg_kernel_info *info) {
    return compile_call(ctx, problem, 0, cfg, info, "qg_compile");
}

qg_status qg_compile_fp8out(qg_context *ctx, const qg_problem *problem, int ue8m0,
                            const qg_config *cfg, qg_kernel_info *info) {
    qg__clear_error();
    if (ue8m0 != 0 && ue8m0 != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_compile_fp8out: ue8m0 must be 0 or 1, got %d",
                        ue8m0);
    if (problem && !has_fp8_d(problem->kind))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_compile_fp8out: problem->kind must be QG_GEMM_DENSE (0), "
                        "_GROUPED_CONTIGUOUS (1), _GROUPED_MASKED (2) or _GROUPED_PSUM (3) (the "
                        "kinds with e4m3 D), got %d", (int)problem->kind);
    int variant;
    qg_status st = fp8out_variant("qg_compile_fp8out", &variant);
    if (st != QG_SUCCESS) return st;
    return compile_call(ctx, problem, (1 + ue8m0) | (variant & QG_D_FP8_FLAGS), cfg, info,
                        "qg_compile_fp8out");
}

/* The SwiGLU kernel's kinds (qg_swiglu_out). */
static bool has_swiglu(qg_gemm_kind kind) {
    return kind == QG_GEMM_DENSE || kind == QG_GEMM_GROUPED_CONTIGUOUS || kind == QG_GEMM_GROUPED_MASKED;
}

qg_status qg_compile_swiglu(qg_context *ctx, const qg_problem *problem, int ue8m0,
                            const qg_config *cfg, qg_kernel_info *info) {
    qg__clear_error();
    if (ue8m0 != 0 && ue8m0 != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_compile_swiglu: ue8m0 must be 0 or 1, got %d",
                        ue8m0);
    if (problem && !has_swiglu(problem->kind))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_compile_swiglu: problem->kind must be QG_GEMM_DENSE (0), "
                        "_GROUPED_CONTIGUOUS (1) or _GROUPED_MASKED (2) (the kinds with the SwiGLU "
                        "epilogue), got %d", (int)problem->kind);
    /* (QGEMM_FP8OUT_VARIANT's SwiGLU words: the heuristic's choice, cfg NULL) */
    int variant;
    qg_status st = fp8out_variant("qg_compile_swiglu", &variant);
    if (st != QG_SUCCESS) return st;
    return compile_call(ctx, problem, (1 + ue8m0) | QG_D_SWIGLU | (variant & QG_D_SWIGLU_FLAGS), cfg,
                        info, "qg_compile_swiglu");
}

static qg_status compile_call(qg_context *ctx, const qg_problem *problem, int d_fp8,
                              const qg_config *cfg, qg_kernel_info *info, const char *fn) {
    qg__clear_error();
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    qg_status st = qg__check_problem(problem, fn);
    if (st != QG_SUCCESS) return st;
    const int num_sms = qg_context_get_num_sms(ctx);
    qg_config c;
    qg_kernel_plan plan;
    qg_jit_result res;
    if ((st = resolve_and_compile(ctx, num_sms, problem, d_fp8, cfg, &c, &plan, &res)) != QG_SUCCESS)
        return qg__fail(st, "%s: %s", fn, qg_last_error());
    if (info) *info = res.info;
    if (ctx->offline) return QG_SUCCESS;
    /* On a device, also load the module and build the launch entry: loading a
     * module can synchronize the device, so the first GEMM call of this shape
     * must not be where it happens (CUDA-graph capture, busy streams). */
    const qg_problem p = launch_key(*problem);
    if ((st = qg__enter(ctx, NULL, fn)) != QG_SUCCESS) return st;
    pthread_mutex_lock(&ctx->lock);
    const qg_launch_entry *e;
    st = resolve_launch(ctx, &p, d_fp8, cfg, &e);
    pthread_mutex_unlock(&ctx->lock);
    qg__leave(ctx);
    return st;
}

/* ---- argument validation ------------------------------------------------ */

/* Check args: first everything that needs no device (shape, strides,
 * pointer presence and alignment), then that the context can launch, then
 * that every pointer is memory of the context's device. */
/* fo: the e4m3-D calls' scales (NULL: bf16 or FP32 D); sw: the SwiGLU
 * calls' whole output spec (NULL: none; fo then holds its first fields). */
/* The kernels' d_fp8 (src/internal.h): 0 for bf16 / FP32 D, else 1 + ue8m0
 * with QGEMM_FP8OUT_VARIANT's flags of the call (`variant`, >= 0: validate
 * read and checked them): QG_D_SWIGLU and its SwiGLU words, or e4m3 D's. */
static int d_fp8_of(const qg_fp8_out *fo, const qg_swiglu_out *sw, int variant) {
    if (!fo) return 0;
    return (1 + (fo->ue8m0 != 0)) |
           (sw ? QG_D_SWIGLU | (variant & QG_D_SWIGLU_FLAGS) : variant & QG_D_FP8_FLAGS);
}

/* The batched GEMM's batch strides (elements = bytes of A and B; elements
 * of D, 2 bytes). */
typedef struct {
    int64_t a, b, d;
} batch_strides;

/* The batched GEMM: the layout's own rules (its strides, the fields it does
 * not take) and D's extent over all batches against every input's. */
static qg_status check_batched(const qg_gemm_args *a, const batch_strides *bs, const char *fn) {
    qg_status st;
    if ((st = qg__check_batch_stride(bs->a, 1, fn, "batch_stride_a")) ||
        (st = qg__check_batch_stride(bs->b, 1, fn, "batch_stride_b")) ||
        (st = qg__check_batch_stride(bs->d, 2, fn, "batch_stride_d")))
        return st;
    const char *extra = a->m_indices ? "m_indices" : a->masked_m ? "masked_m"
                        : a->group_ends ? "group_ends" : a->c ? "c" : a->ks ? "ks" : NULL;
    if (extra)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->%s must be NULL (the batched GEMM has no %s)", fn, extra,
                        a->c ? "C: D = A B^T" : "index array");
    if (a->expected_m != 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->expected_m must be 0 (every batch has m rows), got %d", fn,
                        a->expected_m);
    return QG_SUCCESS;
}

static qg_status check_batched_overlap(const qg_gemm_args *a, const batch_strides *bs,
                                       const char *fn) {
    if (a->m <= 0 || a->n <= 0) return QG_SUCCESS; /* nothing is written */
    const uint64_t g = (uint64_t)a->num_groups, m = (uint64_t)a->m, n = (uint64_t)a->n;
    const uint64_t k = (uint64_t)a->k, kb = (k + 127) / 128, nb = (n + 127) / 128;
    const qg_byte_range d = qg__batched_range("d", a->d, m, n, (uint64_t)a->ldd, 2, g, bs->d);
    const qg_byte_range in[4] = {
        qg__batched_range("a", a->a, m, k, (uint64_t)a->lda, 1, g, bs->a),
        qg__batched_range("b", a->b, n, k, (uint64_t)a->ldb, 1, g, bs->b),
        qg__matrix_range("sfa", a->sfa, g * kb, m, (uint64_t)a->sfa_ld, 4),
        qg__matrix_range("sfb", a->sfb, 1, g * nb * kb, g * nb * kb, 4),
    };
    return qg__check_no_overlap(fn, &d, in, 4);
}

static qg_status validate(const qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *a,
                          const qg_fp8_out *fo, const qg_swiglu_out *sw, const batch_strides *bs,
                          const qg_config *forced, const char *fn, qg_problem *p, int *d_fp8) {
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!a) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args is NULL", fn);
    qg_status vst;
    int variant = 0;
    if (fo && (vst = fp8out_variant(fn, &variant))) return vst;
    *d_fp8 = d_fp8_of(fo, sw, variant);
    if (a->m < 0) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->m must be >= 0, got %d", fn, a->m);
    if (a->n < 0) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->n must be >= 0, got %d", fn, a->n);
    if (a->k < 0) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->k must be >= 0, got %d", fn, a->k);
    /* (before m == 0 becomes 1 below: the message names the m given) */
    if ((kind == QG_GEMM_GROUPED_MASKED || kind == QG_GEMM_GROUPED_PSUM) &&
        (a->expected_m < 0 || a->expected_m > a->m))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: expected_m must be in [0, m = %d], got %d", fn, a->m,
                        a->expected_m); /* qg__check_problem's words: one rule, one message */
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->m = a->m ? a->m : 1; /* m == 0 is checked like m == 1, then skipped */
    p->n = a->n;
    p->k = a->k;
    const bool kgrouped = kind == QG_GEMM_K_GROUPED;
    const bool wgrad = qg__one_d(kind); /* FP32 D, per-column SFB, optional C */
    p->num_groups = (kind == QG_GEMM_DENSE || kind == QG_GEMM_WGRAD) && a->num_groups == 0
                        ? 1 : a->num_groups;
    p->expected_m = a->expected_m;
    p->accumulate = wgrad && a->c != NULL;
    qg_status st;
    const bool batched = kind == QG_GEMM_FP8_BATCHED;
    if (batched && (st = check_batched(a, bs, fn))) return st;
    if (kgrouped) {
        /* The groups' K: each a multiple of 128 (0 = empty), k their sum.
         * All empty: k 0 is checked as one K block (gemm() then only
         * zeroes D or copies C into it). */
        if (a->num_groups < 1 || a->num_groups > 4096)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: args->num_groups must be in [1, 4096], got %d", fn, a->num_groups);
        if (!a->ks)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: args->ks is NULL: the k-grouped GEMM needs the K of each of its "
                            "%d groups (a host array)", fn, a->num_groups);
        long long total = 0;
        for (int g = 0; g < a->num_groups; ++g) {
            if (a->ks[g] < 0 || a->ks[g] % 128)
                return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                                "%s: args->ks[%d] must be a multiple of 128 (>= 0, 0 = an empty "
                                "group), got %d", fn, g, (int)a->ks[g]);
            total += a->ks[g];
        }
        if (total != a->k)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: args->k must be the sum of args->ks (%lld), got %d", fn, total, a->k);
        if (total == 0) p->k = 128;
    }
    /* The problem is checked as given (masked expected_m > M_max is refused,
     * as by qg_select_config and qg_compile), then normalized for the cache. */
    if ((st = qg__check_problem(p, fn)) != QG_SUCCESS) return st;
    *p = launch_key(*p);
    /* SwiGLU: B's rows are 128-row gate | up block pairs; D has half of them */
    if (sw && a->n % 256)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: args->n (B's rows: gate and up, 2 x the intermediate size) must be a "
                        "multiple of 256 for the SwiGLU epilogue (128-row gate | up block pairs), "
                        "got %d", fn, a->n);
    if (sw && !(sw->swiglu_limit >= 0.0f && sw->swiglu_limit <= 3.4028234663852886e38f))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: out->swiglu_limit must be >= 0 and finite (0: no clamp), got %g", fn,
                        (double)sw->swiglu_limit);
    const int d_cols = sw ? a->n / 2 : a->n; /* D's columns */
    /* (k-grouped: group g's rows of A and B are K_g bytes apart; lda, ldb unused) */
    if ((!kgrouped && ((st = qg__check_ld(a->lda, a->k, 1, fn, "lda", "k")) ||
                       (st = qg__check_ld(a->ldb, a->k, 1, fn, "ldb", "k")))) ||
        (st = qg__check_ld(a->ldd, d_cols, wgrad ? 4 : fo ? 1 : 2, fn, "ldd", sw ? "n / 2" : "n")) ||
        (fo && (st = qg__check_ld(fo->sfd_ld, a->m, 4, fn, "out->sfd_ld", "m"))) ||
        (st = qg__check_ld(a->sfa_ld, a->m, 4, fn, "sfa_ld", "m")) ||
        (wgrad && (st = qg__check_ld(a->sfb_ld, a->n, 4, fn, "sfb_ld", "n"))))
        return st;
    /* rows of D (and of a separate C): k-grouped G x M */
    const uint64_t d_rows = (uint64_t)a->m * (kgrouped ? (uint64_t)a->num_groups : 1);
    typedef struct { const void *ptr; size_t align; const char *name; } named_ptr;
    named_ptr ptrs[9] = {
        {a->a, 16, "a"}, {a->b, 16, "b"}, {a->sfa, 16, "sfa"}, {a->sfb, 16, "sfb"}, {a->d, 16, "d"}};
    int num_ptrs = 5;
    if (fo) ptrs[num_ptrs++] = (named_ptr){fo->sfd, 4, "out->sfd"};
    if (sw && sw->row_weight) ptrs[num_ptrs++] = (named_ptr){sw->row_weight, 4, "out->row_weight"};
    if (kind == QG_GEMM_GROUPED_CONTIGUOUS) ptrs[num_ptrs++] = (named_ptr){a->m_indices, 4, "m_indices"};
    if (kind == QG_GEMM_GROUPED_MASKED) ptrs[num_ptrs++] = (named_ptr){a->masked_m, 4, "masked_m"};
    if (kind == QG_GEMM_GROUPED_PSUM) ptrs[num_ptrs++] = (named_ptr){a->group_ends, 4, "group_ends"};
    if (wgrad && a->c && a->c != (const float *)a->d) {
        /* C is copied into D first: a separate array, not overlapping D. */
        if ((st = qg__check_ld(a->ldc, a->n, 4, fn, "ldc", "n"))) return st;
        const uintptr_t c0 = (uintptr_t)a->c, d0 = (uintptr_t)a->d;
        const uintptr_t c1 = c0 + ((uintptr_t)(d_rows - 1) * (uintptr_t)a->ldc + (uintptr_t)a->n) * 4;
        const uintptr_t d1 = d0 + ((uintptr_t)(d_rows - 1) * (uintptr_t)a->ldd + (uintptr_t)a->n) * 4;
        if (a->m > 0 && c0 < d1 && d0 < c1)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: args->c overlaps args->d without being it: pass c == d (with "
                            "ldc == ldd) to accumulate in place, or a separate C", fn);
        ptrs[num_ptrs++] = (named_ptr){a->c, 16, "c"};
    } else if (wgrad && a->c && a->ldc != 0 && a->ldc != a->ldd) {
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->c is args->d (in-place accumulation) but args->ldc (%lld) is not "
                        "args->ldd (%lld)", fn, (long long)a->ldc, (long long)a->ldd);
    }
    for (int i = 0; i < num_ptrs; ++i)
        if ((st = qg__check_ptr(ptrs[i].ptr, ptrs[i].align, fn, ptrs[i].name))) return st;
    /* D written over an input would be read back half-overwritten (issue 53). */
    if ((st = batched ? check_batched_overlap(a, bs, fn)
              : fo    ? qg__check_gemm_fp8_d_no_overlap(fn, kind, a, d_cols, fo->sfd, fo->sfd_ld,
                                                        sw ? sw->row_weight : NULL)
                      : qg__check_gemm_no_overlap(fn, kind, a)))
        return st;
    /* A forced configuration is checked here where no launch follows to
     * check it (resolve_launch does, once per cached entry): on an offline
     * context, and before gemm()'s shortcuts (m == 0; k-grouped with every
     * group empty, which writes D without a kernel), so an illegal one is
     * refused by every call, naming the call. */
    const bool no_launch = ctx->offline || a->m == 0 || (kgrouped && a->k == 0);
    qg_config c = {0};
    if (forced && no_launch) {
        c = *forced;
        qg_kernel_plan plan;
        if ((st = qg__complete_config_out(&ctx->props, qg_context_get_num_sms(ctx), p, *d_fp8, &c,
                                          &plan)))
            return qg__fail(st, "%s: %s", fn, qg_last_error());
    }
    if (ctx->offline) {
        if (forced)
            return qg__fail(QG_ERROR_NO_DEVICE,
                            "%s: the context is offline (compile-only): the forced configuration "
                            "(%dx%d, %d stages) is legal for this problem, but cannot run here",
                            fn, c.block_m, c.block_n, c.num_stages);
        return qg__fail(QG_ERROR_NO_DEVICE, "%s: the context is offline (compile-only)", fn);
    }
    for (int i = 0; i < num_ptrs; ++i)
        if ((st = qg__check_device_ptr(ctx, ptrs[i].ptr, fn, ptrs[i].name))) return st;
    return QG_SUCCESS;
}

/* ---- tensor maps and launch -------------------------------------------- */

/* Rows of the TMA box in which the kernel stores D (its QG_EPI_ROWS): each
 * math warpgroup stores its own rows of a bf16 tile; an FP32 D (the weight
 * gradient's) leaves as whole tiles. */
static uint32_t d_box_rows(const qg_config *cfg, const qg_kernel_plan *plan, bool fp32_d) {
    return (uint32_t)(fp32_d ? cfg->block_m : cfg->block_m / plan->num_math_wgs);
}

/* The TMA swizzle of D's store chunks: rows of 128, 64 or 32 bytes; none
 * for an FP32 tile stored row-major in one chunk of its whole width (odd
 * multiples of 8 columns, the kernel's QG_D_ROWS). */
static CUtensorMapSwizzle d_swizzle(const qg_kernel_plan *plan, bool fp32_d) {
    if (plan->d_rows) return CU_TENSOR_MAP_SWIZZLE_NONE;
    const int chunk_bytes = plan->store_cols * (fp32_d ? 4 : plan->d_fp8 ? 1 : 2);
    return chunk_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
           : chunk_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                               : CU_TENSOR_MAP_SWIZZLE_32B;
}

/* The k-grouped kernel's groups parameter: the layout of the kernel's
 * struct qg_kgroups (kernels/qg_fp8_gemm.cuh; CUtensorMap is 64-byte
 * aligned like its qg_tensor_map). */
#define QG_KGROUP_MAX 32
typedef struct {
    CUtensorMap a[QG_KGROUP_MAX];
    CUtensorMap b[QG_KGROUP_MAX];
    int32_t sf_kb[QG_KGROUP_MAX];
    int32_t num_kb[QG_KGROUP_MAX];
    int32_t d_group[QG_KGROUP_MAX];
    int32_t count;
} qg_kgroup_params;
/* The kernel's fields sit at the same offsets (its maps are 64-byte aligned,
 * cuda.h's may be 128: the size may differ by tail padding only, and the
 * launch copies the kernel's size). */
_Static_assert(offsetof(qg_kgroup_params, b) == 32 * 128 &&
                   offsetof(qg_kgroup_params, sf_kb) == 64 * 128 &&
                   offsetof(qg_kgroup_params, count) == 64 * 128 + 3 * 32 * 4,
               "qg_kgroups layout: 2 x 32 maps, then 97 ints");

/* D = C + ... with C another array (weight gradients): C into D first, on
 * the stream; rows of n FP32 values. */
static qg_status copy_c_into_d(const qg_context *ctx, const qg_gemm_args *a, uint64_t rows,
                               CUstream stream) {
    return qg__copy_c_into_d(ctx, a->d, (size_t)a->ldd * 4, a->c, (size_t)a->ldc * 4,
                             (size_t)a->n * 4, rows, stream);
}

/*
 * The k-grouped weight gradient (ctx current, e resolved): the groups with
 * work go to the kernel QG_KGROUP_MAX at a time, each with its own A and B
 * tensor maps (their rows are K_g bytes apart) in the launch's qg_kgroups
 * parameter. Accumulating, D already holds C and the empty groups are left
 * out; otherwise they are launched too, with no K block: their tiles store
 * zeros. D is one rank-3 map [G][M][N], so no tile's rows past M reach the
 * next group.
 */
static qg_status k_grouped_launches(qg_context *ctx, const qg_launch_entry *e,
                                    const qg_gemm_args *a, bool copy_c, CUstream stream, bool pdl) {
    const fp8_plan *fp = qg__launch_plan(e);
    const qg_config *cfg = &fp->cfg;
    const qg_kernel_plan *plan = &fp->plan;
    const int max_grid = qg__launch_shape(e)->grid;
    const uint64_t total_kb = (uint64_t)a->k / 128;
    CUtensorMap map_sfa, map_sfb, map_d;
    qg_status st;
    if ((st = qg__encode_tiled(ctx, &map_sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfa, (uint64_t)a->m,
                           total_kb, (uint64_t)a->sfa_ld * 4, (uint32_t)cfg->block_m, 1,
                           CU_TENSOR_MAP_SWIZZLE_NONE, "tensor map of SFA")) ||
        (st = qg__encode_tiled(ctx, &map_sfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfb, (uint64_t)a->n,
                           total_kb, (uint64_t)a->sfb_ld * 4, (uint32_t)cfg->block_n, 1,
                           CU_TENSOR_MAP_SWIZZLE_NONE, "tensor map of SFB")) ||
        (st = qg__encode_map(ctx, &map_d, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->d, (uint64_t)a->n,
                         (uint64_t)a->m, (uint64_t)a->num_groups, (uint64_t)a->ldd * 4,
                         (uint64_t)a->m * (uint64_t)a->ldd * 4, (uint32_t)plan->store_cols,
                         d_box_rows(cfg, plan, true), d_swizzle(plan, true),
                         "tensor map of D")))
        return st;
    qg_kgroup_params groups;
    const long long tiles_per_group = (long long)((a->m + cfg->block_m - 1) / cfg->block_m) *
                                      ((a->n + cfg->block_n - 1) / cfg->block_n);
    CUdeviceptr none = 0;
    int64_t ldd = a->ldd;
    int shape_m = a->m, prefetch_kb = 0, num_k_blocks = 0;
    void *params[] = {&groups.a[0], &groups.b[0], &map_sfa, &map_d, &map_sfb, &none, &none, &ldd,
                      &none, &none, &shape_m, &prefetch_kb, &num_k_blocks, &groups};
    const uint8_t *a_base = (const uint8_t *)a->a, *b_base = (const uint8_t *)a->b;
    uint64_t k_prefix = 0;
    int g = 0;
    while (g < a->num_groups) {
        memset(&groups, 0, sizeof groups);
        for (; g < a->num_groups && groups.count < QG_KGROUP_MAX; k_prefix += (uint64_t)a->ks[g++]) {
            const uint64_t k = (uint64_t)a->ks[g];
            if (k == 0 && a->c) continue; /* D[g] already is C[g] */
            const int i = groups.count++;
            /* an empty group's maps are never used: any valid ones */
            const uint64_t k_map = k ? k : 128, prefix = k ? k_prefix : 0;
            if ((st = qg__encode_tiled(ctx, &groups.a[i], CU_TENSOR_MAP_DATA_TYPE_UINT8,
                                   a_base + prefix * (uint64_t)a->m, k_map, (uint64_t)a->m, k_map,
                                   128, (uint32_t)cfg->block_m, CU_TENSOR_MAP_SWIZZLE_128B,
                                   "tensor map of a group's A")) ||
                (st = qg__encode_tiled(ctx, &groups.b[i], CU_TENSOR_MAP_DATA_TYPE_UINT8,
                                   b_base + prefix * (uint64_t)a->n, k_map, (uint64_t)a->n, k_map,
                                   128, (uint32_t)cfg->block_n, CU_TENSOR_MAP_SWIZZLE_128B,
                                   "tensor map of a group's B")))
                return st;
            groups.sf_kb[i] = (int32_t)(k_prefix / 128);
            groups.num_kb[i] = (int32_t)(k / 128);
            groups.d_group[i] = g;
        }
        if (groups.count == 0) continue;
        /* C into D before the first launch, after its batch's maps are
         * encoded (past 32 groups, a later batch's are encoded after it) */
        if (copy_c && (st = copy_c_into_d(ctx, a, (uint64_t)a->m * (uint64_t)a->num_groups,
                                          stream)))
            return st;
        copy_c = false;
        const long long tiles = tiles_per_group * groups.count;
        const int grid = tiles < max_grid ? (int)tiles : max_grid;
        if ((st = qg__launch(ctx, e, grid, params, stream, pdl, "GEMM"))) return st;
    }
    return QG_SUCCESS;
}

/* A validated call with m > 0, ctx's CUDA context current: resolve, encode
 * the tensor maps, launch. */
static qg_status run(qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *a,
                     const qg_fp8_out *fo, const qg_swiglu_out *sw, const batch_strides *bs,
                     const qg_problem *problem, int d_fp8, const qg_config *forced,
                     CUstream stream, const char *fn) {
    const qg_problem p = *problem;
    qg_status st = QG_SUCCESS;
    const bool wgrad = qg__one_d(kind); /* FP32 D, optionally from C */
    const bool kgrouped = kind == QG_GEMM_K_GROUPED;
    const uint64_t d_rows = (uint64_t)a->m * (kgrouped ? (uint64_t)a->num_groups : 1);
    /* k-grouped with every group empty: D is C, or zero; no kernel. */
    if (kgrouped && a->k == 0) {
        if (a->c && a->c != (const float *)a->d) st = copy_c_into_d(ctx, a, d_rows, stream);
        else if (!a->c) {
            st = qg__zero_d(ctx, a->d, (size_t)a->ldd * 4, (size_t)a->n * 4, d_rows, stream);
        }
        return st;
    }
    pthread_mutex_lock(&ctx->lock);
    const qg_launch_entry *e = NULL;
    st = resolve_launch(ctx, &p, d_fp8, forced, &e);
    const bool pdl = ctx->pdl;
    pthread_mutex_unlock(&ctx->lock);
    if (st != QG_SUCCESS) return qg__fail(st, "%s: %s", fn, qg_last_error());
    /* D = C + A B^T with C another array: C goes into D on the stream just
     * before the first launch, once the tensor maps are encoded (a refused
     * encode then leaves D untouched). */
    const bool copy_c = wgrad && a->c && a->c != (const float *)a->d;
    if (kgrouped) return k_grouped_launches(ctx, e, a, copy_c, stream, pdl);
    const fp8_plan *fp = qg__launch_plan(e);
    const qg_config *cfg = &fp->cfg;
    const qg_kernel_plan *plan = &fp->plan;
    const int groups = p.num_groups;
    const bool batched = kind == QG_GEMM_FP8_BATCHED;
    const uint64_t a_rows = kind == QG_GEMM_GROUPED_MASKED ? (uint64_t)groups * a->m : (uint64_t)a->m;
    const int d_bytes = wgrad ? 4 : fo ? 1 : 2; /* FP32, e4m3 or bf16 D */
    const int cluster = plan->cluster_size;
    const uint32_t a_box = (uint32_t)plan->a_box_rows; /* (a multicast pair: each its half) */
    const uint32_t b_box = b_box_rows(cfg, plan);
    const uint64_t sfa_rows =
        (uint64_t)plan->num_k_blocks * (kind == QG_GEMM_GROUPED_MASKED || batched ? groups : 1);

    /* SFB needs no tensor map: the kernel copies each tile's scales into
     * shared memory with plain loads (kernels/qg_fp8_gemm.cuh, "SFB
     * invariants"). */
    CUtensorMap map_a, map_b, map_sfa, map_d, map_sfb;
    /* Batched: A {K, M, G}, B {K, N, G} and D {N, M, G}, the batch strides
     * the third dimension's (kernel: QG_KIND 5). Each batch's map extent is
     * M (N) rows, so a tile's rows past M load zeros and are not stored:
     * nothing of another batch is read into a tile or written. */
    if (batched) {
        if ((st = qg__encode_map(ctx, &map_a, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->a, (uint64_t)a->k,
                                 (uint64_t)a->m, (uint64_t)groups, (uint64_t)a->lda,
                                 (uint64_t)bs->a, 128, a_box, CU_TENSOR_MAP_SWIZZLE_128B,
                                 "tensor map of A")) ||
            (st = qg__encode_map(ctx, &map_b, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->b, (uint64_t)a->k,
                                 (uint64_t)a->n, (uint64_t)groups, (uint64_t)a->ldb,
                                 (uint64_t)bs->b, 128, b_box, CU_TENSOR_MAP_SWIZZLE_128B,
                                 "tensor map of B")) ||
            (st = qg__encode_map(ctx, &map_d, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, a->d, (uint64_t)a->n,
                                 (uint64_t)a->m, (uint64_t)groups, (uint64_t)a->ldd * 2,
                                 (uint64_t)bs->d * 2, (uint32_t)plan->store_cols,
                                 d_box_rows(cfg, plan, false), d_swizzle(plan, false),
                                 "tensor map of D")) ||
            (st = qg__encode_tiled(ctx, &map_sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfa,
                                   (uint64_t)a->m, sfa_rows, (uint64_t)a->sfa_ld * 4,
                                   cfg->multicast == QG_MULTICAST_A ? (uint32_t)cfg->block_m : a_box,
                                   1, CU_TENSOR_MAP_SWIZZLE_NONE, "tensor map of SFA")))
            return st;
    } else if ((st = qg__encode_tiled(ctx, &map_a, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->a, (uint64_t)a->k, a_rows,
                        (uint64_t)a->lda, 128, a_box, CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of A")) ||
        (st = qg__encode_tiled(ctx, &map_b, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->b, (uint64_t)a->k,
                        (uint64_t)groups * a->n, (uint64_t)a->ldb, 128, b_box,
                        CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of B")) ||
        (st = qg__encode_tiled(ctx, &map_sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfa, (uint64_t)a->m,
                        sfa_rows, (uint64_t)a->sfa_ld * 4,
                        cfg->multicast == QG_MULTICAST_A ? (uint32_t)cfg->block_m : a_box, 1,
                        CU_TENSOR_MAP_SWIZZLE_NONE, "tensor map of SFA")) ||
        /* D (bf16; the weight gradient's FP32) in chunks of store_cols
         * columns: rows of 128, 64 or 32 bytes, the swizzle of that size. */
        (st = qg__encode_tiled(ctx, &map_d,
                           wgrad ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                           : fo  ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                           a->d, (uint64_t)(sw ? a->n / 2 : a->n), a_rows, (uint64_t)a->ldd * d_bytes,
                           (uint32_t)plan->store_cols, d_box_rows(cfg, plan, wgrad),
                           d_swizzle(plan, wgrad), "tensor map of D")) ||
        /* 1D1D: column scales of B [K/128][sfb_ld], a box of block_n per
         * stage. */
        (wgrad &&
         (st = qg__encode_tiled(ctx, &map_sfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfb,
                            (uint64_t)a->n, (uint64_t)plan->num_k_blocks, (uint64_t)a->sfb_ld * 4,
                            (uint32_t)cfg->block_n, 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                            "tensor map of SFB"))))
        return st;

    /* Persistent grid: never more CTAs than tiles (split-K: than tiles x
     * split_k; masked: unknown on the host). */
    if (!wgrad) map_sfb = map_sfa; /* unused by the kernel */
    if (copy_c && (st = copy_c_into_d(ctx, a, d_rows, stream)) != QG_SUCCESS) return st;
    int grid = qg__launch_shape(e)->grid;
    if (kind != QG_GEMM_GROUPED_MASKED && kind != QG_GEMM_GROUPED_PSUM) {
        /* (e4m3 D split over a cluster: N in whole 128-column groups, as the
         * kernel's scheduler counts it) */
        const long long n_blocks = fo && cfg->block_n < 128
                                       ? ((long long)a->n + 127) / 128 * (128 / cfg->block_n)
                                       : ((long long)a->n + cfg->block_n - 1) / cfg->block_n;
        const long long tiles = (((long long)a->m + cfg->block_m - 1) / cfg->block_m) * n_blocks *
                                plan->split_k * (batched ? groups : 1);
        const long long tiles_rounded = (tiles + cluster - 1) / cluster * cluster;
        if (tiles_rounded < grid) grid = (int)tiles_rounded;
    }

    CUdeviceptr sfb = (CUdeviceptr)(uintptr_t)a->sfb, d = (CUdeviceptr)(uintptr_t)a->d;
    CUdeviceptr m_indices = (CUdeviceptr)(uintptr_t)a->m_indices;
    /* psum: the group ends travel as the kernel's masked_m argument */
    CUdeviceptr masked_m = (CUdeviceptr)(uintptr_t)(kind == QG_GEMM_GROUPED_PSUM ? a->group_ends
                                                                                 : a->masked_m);
    int64_t ldd = a->ldd;
    int shape_m = a->m;
    int prefetch_kb = pdl ? qg__pdl_prefetch_kb(&p, cfg, plan, grid) : 0;
    int num_k_blocks = plan->num_k_blocks;
    /* e4m3 D: its scales follow (the kernel's QG_FP8_D_PARAM) */
    CUdeviceptr sfd = fo ? (CUdeviceptr)(uintptr_t)fo->sfd : 0;
    int64_t sfd_ld = fo ? fo->sfd_ld : 0;
    /* SwiGLU: its clamp and row weights follow (ignored by the other kernels,
     * whose parameter lists end before them) */
    float swiglu_limit = sw ? sw->swiglu_limit : 0.0f;
    CUdeviceptr row_weight = sw ? (CUdeviceptr)(uintptr_t)sw->row_weight : 0;
    void *params[] = {&map_a, &map_b, &map_sfa, &map_d, &map_sfb, &sfb, &d, &ldd,
                      &m_indices, &masked_m, &shape_m, &prefetch_kb, &num_k_blocks, &sfd, &sfd_ld,
                      &swiglu_limit, &row_weight};
    return qg__launch(ctx, e, grid, params, stream, pdl, "GEMM");
}

static qg_status gemm_out(qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *a,
                          const qg_fp8_out *fo, const qg_swiglu_out *sw, const batch_strides *bs,
                          const qg_config *forced, CUstream stream, const char *fn) {
    qg__clear_error();
    qg_problem p;
    int d_fp8;
    qg_status st = validate(ctx, kind, a, fo, sw, bs, forced, fn, &p, &d_fp8);
    if (st != QG_SUCCESS) return st;
    if (a->m == 0) return QG_SUCCESS;
    if ((st = qg__enter(ctx, stream, fn)) != QG_SUCCESS) return st;
    st = run(ctx, kind, a, fo, sw, bs, &p, d_fp8, forced, stream, fn);
    qg__leave(ctx);
    return st;
}

static qg_status gemm(qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *a,
                      const qg_config *forced, CUstream stream, const char *fn) {
    return gemm_out(ctx, kind, a, NULL, NULL, NULL, forced, stream, fn);
}

/* The e4m3-D calls: `out` checked first (present, ue8m0 0 or 1), then as
 * the bf16 calls with it. */
static qg_status gemm_fp8out(qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *a,
                             const qg_fp8_out *out, const qg_config *forced, CUstream stream,
                             const char *fn) {
    qg__clear_error();
    if (!out) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: out is NULL (the scales of D)", fn);
    if (out->ue8m0 != 0 && out->ue8m0 != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: out->ue8m0 must be 0 or 1, got %d", fn,
                        out->ue8m0);
    return gemm_out(ctx, kind, a, out, NULL, NULL, forced, stream, fn);
}

/* The SwiGLU calls: `out` checked first (present, ue8m0 0 or 1), then as the
 * e4m3-D calls, with its clamp and row weights. */
static qg_status gemm_swiglu(qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *a,
                             const qg_swiglu_out *out, const qg_config *forced, CUstream stream,
                             const char *fn) {
    qg__clear_error();
    if (!out)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: out is NULL (the scales of D and the SwiGLU "
                        "options)", fn);
    if (out->ue8m0 != 0 && out->ue8m0 != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: out->ue8m0 must be 0 or 1, got %d", fn,
                        out->ue8m0);
    const qg_fp8_out fo = {out->sfd, out->sfd_ld, out->ue8m0};
    return gemm_out(ctx, kind, a, &fo, out, NULL, forced, stream, fn);
}

qg_status qg_fp8_gemm_nt_swiglu(qg_context *ctx, const qg_gemm_args *args, const qg_swiglu_out *out,
                                const qg_config *cfg, struct CUstream_st *stream) {
    return gemm_swiglu(ctx, QG_GEMM_DENSE, args, out, cfg, stream, "qg_fp8_gemm_nt_swiglu");
}

qg_status qg_m_grouped_fp8_gemm_nt_contiguous_swiglu(qg_context *ctx, const qg_gemm_args *args,
                                                     const qg_swiglu_out *out, const qg_config *cfg,
                                                     struct CUstream_st *stream) {
    return gemm_swiglu(ctx, QG_GEMM_GROUPED_CONTIGUOUS, args, out, cfg, stream,
                       "qg_m_grouped_fp8_gemm_nt_contiguous_swiglu");
}

qg_status qg_m_grouped_fp8_gemm_nt_masked_swiglu(qg_context *ctx, const qg_gemm_args *args,
                                                 const qg_swiglu_out *out, const qg_config *cfg,
                                                 struct CUstream_st *stream) {
    return gemm_swiglu(ctx, QG_GEMM_GROUPED_MASKED, args, out, cfg, stream,
                       "qg_m_grouped_fp8_gemm_nt_masked_swiglu");
}

qg_status qg_fp8_gemm_nt_fp8out(qg_context *ctx, const qg_gemm_args *args, const qg_fp8_out *out,
                                const qg_config *cfg, struct CUstream_st *stream) {
    return gemm_fp8out(ctx, QG_GEMM_DENSE, args, out, cfg, stream, "qg_fp8_gemm_nt_fp8out");
}

qg_status qg_m_grouped_fp8_gemm_nt_contiguous_fp8out(qg_context *ctx, const qg_gemm_args *args,
                                                     const qg_fp8_out *out, const qg_config *cfg,
                                                     struct CUstream_st *stream) {
    return gemm_fp8out(ctx, QG_GEMM_GROUPED_CONTIGUOUS, args, out, cfg, stream,
                       "qg_m_grouped_fp8_gemm_nt_contiguous_fp8out");
}

qg_status qg_m_grouped_fp8_gemm_nt_masked_fp8out(qg_context *ctx, const qg_gemm_args *args,
                                                 const qg_fp8_out *out, const qg_config *cfg,
                                                 struct CUstream_st *stream) {
    return gemm_fp8out(ctx, QG_GEMM_GROUPED_MASKED, args, out, cfg, stream,
                       "qg_m_grouped_fp8_gemm_nt_masked_fp8out");
}

qg_status qg_m_grouped_fp8_gemm_nt_psum_fp8out(qg_context *ctx, const qg_gemm_args *args,
                                               const qg_fp8_out *out, const qg_config *cfg,
                                               struct CUstream_st *stream) {
    return gemm_fp8out(ctx, QG_GEMM_GROUPED_PSUM, args, out, cfg, stream,
                       "qg_m_grouped_fp8_gemm_nt_psum_fp8out");
}

qg_status qg_fp8_gemm_nt(qg_context *ctx, const qg_gemm_args *args, const qg_config *cfg,
                         struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_DENSE, args, cfg, stream, "qg_fp8_gemm_nt");
}

qg_status qg_m_grouped_fp8_gemm_nt_contiguous(qg_context *ctx, const qg_gemm_args *args,
                                              const qg_config *cfg, struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_GROUPED_CONTIGUOUS, args, cfg, stream,
                "qg_m_grouped_fp8_gemm_nt_contiguous");
}

qg_status qg_m_grouped_fp8_gemm_nt_masked(qg_context *ctx, const qg_gemm_args *args,
                                          const qg_config *cfg, struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_GROUPED_MASKED, args, cfg, stream, "qg_m_grouped_fp8_gemm_nt_masked");
}

qg_status qg_m_grouped_fp8_gemm_nt_psum(qg_context *ctx, const qg_gemm_args *args,
                                        const qg_config *cfg, struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_GROUPED_PSUM, args, cfg, stream, "qg_m_grouped_fp8_gemm_nt_psum");
}

qg_status qg_fp8_gemm_nt_wgrad(qg_context *ctx, const qg_gemm_args *args, const qg_config *cfg,
                               struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_WGRAD, args, cfg, stream, "qg_fp8_gemm_nt_wgrad");
}

qg_status qg_k_grouped_fp8_gemm_nt_contiguous(qg_context *ctx, const qg_gemm_args *args,
                                              const qg_config *cfg, struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_K_GROUPED, args, cfg, stream, "qg_k_grouped_fp8_gemm_nt_contiguous");
}

qg_status qg_batched_fp8_gemm_nt(qg_context *ctx, const qg_gemm_args *args, int64_t batch_stride_a,
                                 int64_t batch_stride_b, int64_t batch_stride_d,
                                 const qg_config *cfg, struct CUstream_st *stream) {
    const batch_strides bs = {batch_stride_a, batch_stride_b, batch_stride_d};
    return gemm_out(ctx, QG_GEMM_FP8_BATCHED, args, NULL, NULL, &bs, cfg, stream,
                    "qg_batched_fp8_gemm_nt");
}

/* ---- configuration calls ---------------------------------------------- */

/* The checks both public configuration calls make before their work: the
 * context, the output and the problem (fn names the call in messages). */
static qg_status check_config_call(const qg_context *ctx, const qg_problem *problem,
                                   const qg_config *cfg, const char *fn, const char *cfg_name) {
    qg__clear_error();
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!cfg) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, cfg_name);
    return qg__check_problem(problem, fn);
}

qg_status qg_complete_config(const qg_context *ctx, const qg_problem *problem, qg_config *cfg) {
    qg_status st = check_config_call(ctx, problem, cfg, "qg_complete_config", "cfg");
    if (st != QG_SUCCESS) return st;
    qg_kernel_plan plan;
    st = qg__complete_config_sms(&ctx->props, qg_context_get_num_sms(ctx), problem, cfg, &plan);
    if (st != QG_SUCCESS) return qg__fail(st, "qg_complete_config: %s", qg_last_error());
    return QG_SUCCESS;
}

qg_status qg_select_config_fp8out(const qg_context *ctx, const qg_problem *problem, int ue8m0,
                                  qg_config *out) {
    qg_status st = check_config_call(ctx, problem, out, "qg_select_config_fp8out", "out");
    if (st != QG_SUCCESS) return st;
    if (ue8m0 != 0 && ue8m0 != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_select_config_fp8out: ue8m0 must be 0 or 1, got %d", ue8m0);
    if (!has_fp8_d(problem->kind))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_select_config_fp8out: problem->kind must be QG_GEMM_DENSE (0), "
                        "_GROUPED_CONTIGUOUS (1), _GROUPED_MASKED (2) or _GROUPED_PSUM (3), got %d",
                        (int)problem->kind);
    int variant;
    if ((st = fp8out_variant("qg_select_config_fp8out", &variant)) != QG_SUCCESS) return st;
    qg_kernel_plan plan;
    st = qg__select_out(&ctx->props, qg_context_get_num_sms(ctx), problem,
                        (1 + ue8m0) | (variant & QG_D_FP8_FLAGS), NULL, 0, out, &plan);
    if (st != QG_SUCCESS) return qg__fail(st, "qg_select_config_fp8out: %s", qg_last_error());
    return QG_SUCCESS;
}

qg_status qg_select_config_swiglu(const qg_context *ctx, const qg_problem *problem, int ue8m0,
                                  qg_config *out) {
    qg_status st = check_config_call(ctx, problem, out, "qg_select_config_swiglu", "out");
    if (st != QG_SUCCESS) return st;
    if (ue8m0 != 0 && ue8m0 != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_select_config_swiglu: ue8m0 must be 0 or 1, got %d", ue8m0);
    if (!has_swiglu(problem->kind))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_select_config_swiglu: problem->kind must be QG_GEMM_DENSE (0), "
                        "_GROUPED_CONTIGUOUS (1) or _GROUPED_MASKED (2), got %d", (int)problem->kind);
    int variant;
    if ((st = fp8out_variant("qg_select_config_swiglu", &variant)) != QG_SUCCESS) return st;
    qg_kernel_plan plan;
    st = qg__select_out(&ctx->props, qg_context_get_num_sms(ctx), problem,
                        (1 + ue8m0) | QG_D_SWIGLU | (variant & QG_D_SWIGLU_FLAGS), NULL, 0, out,
                        &plan);
    if (st != QG_SUCCESS) return qg__fail(st, "qg_select_config_swiglu: %s", qg_last_error());
    return QG_SUCCESS;
}

qg_status qg_select_config(const qg_context *ctx, const qg_problem *problem, qg_config *out) {
    qg_status st = check_config_call(ctx, problem, out, "qg_select_config", "out");
    if (st != QG_SUCCESS) return st;
    qg_kernel_plan plan;
    st = qg__select(&ctx->props, qg_context_get_num_sms(ctx), problem, out, &plan);
    if (st != QG_SUCCESS) return qg__fail(st, "qg_select_config: %s", qg_last_error());
    return QG_SUCCESS;
}

/* ---- the SwiGLU weights' layout ------------------------------------------ */

/* One strided copy of the halves of each group (gate, then up): block b of a
 * half is `block` bytes at src (group g, half h) + b * block, to dst + b * 2
 * block (+ block for up); the inverse swaps the two pitches. I/128 blocks a
 * copy, 2G copies. */
static qg_status interleave_copies(const qg_context *ctx, const void *src, void *dst, uint64_t block,
                                   int num_groups, int blocks, bool inverse, CUstream stream) {
    const uint64_t group = 2 * (uint64_t)blocks * block;
    for (int g = 0; g < num_groups; ++g)
        for (int h = 0; h < 2; ++h) {
            const uint64_t plain = (uint64_t)g * group + (uint64_t)h * blocks * block;
            const uint64_t fused = (uint64_t)g * group + (uint64_t)h * block;
            CUDA_MEMCPY2D copy;
            memset(&copy, 0, sizeof copy);
            copy.srcMemoryType = copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            copy.srcDevice = (CUdeviceptr)(uintptr_t)src + (inverse ? fused : plain);
            copy.srcPitch = inverse ? 2 * block : block;
            copy.dstDevice = (CUdeviceptr)(uintptr_t)dst + (inverse ? plain : fused);
            copy.dstPitch = inverse ? block : 2 * block;
            copy.WidthInBytes = block;
            copy.Height = (size_t)blocks;
            CUresult r = ctx->drv->cuMemcpy2DAsync(&copy, stream);
            if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "interleaving gate and up (cuMemcpy2DAsync)");
        }
    return QG_SUCCESS;
}

qg_status qg_interleave_gate_up(qg_context *ctx, const qg_interleave_args *a,
                                struct CUstream_st *stream) {
    static const char fn[] = "qg_interleave_gate_up";
    qg__clear_error();
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!a) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args is NULL", fn);
    if (a->num_groups < 1 || a->num_groups > 4096)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->num_groups must be in [1, 4096], got %d",
                        fn, a->num_groups);
    if (a->i < 128 || a->i % 128)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->i (the intermediate size: B holds 2i rows a group) must be a "
                        "positive multiple of 128, got %d", fn, a->i);
    if (a->k < 16 || a->k % 16)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->k must be a positive multiple of 16, got %d", fn, a->k);
    if (a->inverse != 0 && a->inverse != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->inverse must be 0 or 1, got %d", fn,
                        a->inverse);
    if (!a->w != !a->w_out)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s is NULL but args->%s is not (give "
                        "both, or neither to skip the weights)", fn, a->w ? "w_out" : "w",
                        a->w ? "w" : "w_out");
    if (!a->sf != !a->sf_out)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s is NULL but args->%s is not (give "
                        "both, or neither to skip the scales)", fn, a->sf ? "sf_out" : "sf",
                        a->sf ? "sf" : "sf_out");
    qg_status st;
    if (a->w && (st = qg__check_ld(a->ld_w, a->k, 1, fn, "ld_w", "k"))) return st;
    const uint64_t rows = 2 * (uint64_t)a->i * (uint64_t)a->num_groups;
    const uint64_t kb = ((uint64_t)a->k + 127) / 128;
    const qg_byte_range in[2] = {
        qg__matrix_range("w", a->w, rows, (uint64_t)a->k, (uint64_t)a->ld_w, 1),
        qg__matrix_range("sf", a->sf, 1, rows / 128 * kb, 0, 4)};
    const qg_byte_range w_out = qg__matrix_range("w_out", a->w_out, rows, (uint64_t)a->k,
                                                 (uint64_t)a->ld_w, 1);
    const qg_byte_range sf_out = qg__matrix_range("sf_out", a->sf_out, 1, rows / 128 * kb, 0, 4);
    if ((a->w && ((st = qg__check_ptr(a->w, 16, fn, "w")) || (st = qg__check_ptr(a->w_out, 16, fn, "w_out")))) ||
        (a->sf && ((st = qg__check_ptr(a->sf, 4, fn, "sf")) || (st = qg__check_ptr(a->sf_out, 4, fn, "sf_out")))) ||
        (st = qg__check_no_overlap(fn, &w_out, in, 2)) || (st = qg__check_no_overlap(fn, &sf_out, in, 2)) ||
        (st = qg__check_no_overlap(fn, &w_out, &sf_out, 1)))
        return st;
    if (ctx->offline) return qg__fail(QG_ERROR_NO_DEVICE, "%s: the context is offline (compile-only)", fn);
    const void *ptrs[4] = {a->w, a->w_out, a->sf, a->sf_out};
    static const char *const names[4] = {"w", "w_out", "sf", "sf_out"};
    for (int i = 0; i < 4; ++i)
        if (ptrs[i] && (st = qg__check_device_ptr(ctx, ptrs[i], fn, names[i]))) return st;
    if ((st = qg__enter(ctx, stream, fn)) != QG_SUCCESS) return st;
    const int blocks = a->i / 128;
    if (a->w)
        st = interleave_copies(ctx, a->w, a->w_out, 128 * (uint64_t)a->ld_w, a->num_groups, blocks,
                               a->inverse, stream);
    if (st == QG_SUCCESS && a->sf)
        st = interleave_copies(ctx, a->sf, a->sf_out, kb * 4, a->num_groups, blocks, a->inverse,
                               stream);
    qg__leave(ctx);
    if (st != QG_SUCCESS) return qg__fail(st, "%s: %s", fn, qg_last_error());
    return QG_SUCCESS;
}
