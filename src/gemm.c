/*
 * gemm.c -- the GEMM entry points: validate, resolve a kernel, launch.
 *
 * Invariants:
 *  - Every argument is checked before anything touches the device, so a
 *    rejected call writes no output memory.
 *  - A launch reads no device memory and allocates nothing: the tensor maps
 *    are built on the host and passed by value (CUDA-graph capturable).
 *  - Resolution (heuristic, source generation, JIT, module load) happens once
 *    per (problem, forced config) and is cached in the context's launch cache;
 *    modules are shared between entries with the same JIT key.
 *  - A configuration the heuristic chose does not end a GEMM in a compile
 *    error while another tile compiles: if the JIT refuses it, the next tile
 *    the heuristic ranks is used, up to three times (resolve_and_compile).
 *    A refusal is not remembered: a later process (or qg_compile, then the
 *    first GEMM call) compiles the refused kernel again before falling back.
 */
#include "internal.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QG_CONTIGUOUS_ALIGNMENT 128

struct qg_module {
    qg_module *next;
    char key[65];
    CUmodule module;
    CUfunction function;
};

struct qg_launch_entry {
    qg_launch_entry *next;
    qg_problem problem;
    bool forced;
    qg_config forced_cfg;
    int num_sms;
    qg_config cfg;
    qg_kernel_plan plan;
    qg_module *module;
    int max_grid;   /* CTAs that can be resident at once (clusters fit the GPCs) */
};

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
 * (4) in that mode. */
static int kernel_kind(qg_gemm_kind kind) {
    return kind == QG_GEMM_WGRAD ? 0 : kind == QG_GEMM_K_GROUPED ? 4 : (int)kind;
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
    /* setmaxnreg.inc waits for registers the CTA does not own if the entry
     * allocation cannot hold the producer's and math warpgroups' shares. */
    const int pool = res->info.registers * plan->num_threads;
    const int need = 128 * plan->producer_regs + 128 * plan->num_math_wgs * plan->math_regs;
    if (pool < need)
        return qg__fail(QG_ERROR_COMPILE,
                        "kernel %s: %d registers x %d threads at entry cannot hold the %d that "
                        "the warpgroup register split needs", res->info.key, res->info.registers,
                        plan->num_threads, need);
    return QG_SUCCESS;
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
static qg_status resolve_and_compile(qg_context *ctx, int num_sms, const qg_problem *p,
                                     const qg_config *forced, qg_config *cfg,
                                     qg_kernel_plan *plan, qg_jit_result *res) {
    qg_config refused[QG_FALLBACKS];
    for (int n = 0;; ++n) {
        qg_status st;
        if (forced) {
            *cfg = *forced;
            st = qg__complete_config_sms(&ctx->props, num_sms, p, cfg, plan);
        } else {
            st = qg__select_avoiding(&ctx->props, num_sms, p, refused, n, cfg, plan);
        }
        if (st != QG_SUCCESS) return st;
        st = compile_kernel(ctx, p, cfg, plan, res);
        if (st == QG_SUCCESS && n > 0) qg__clear_error(); /* the refusal was handled */
        if (st != QG_ERROR_COMPILE || forced || n == QG_FALLBACKS) return st;
        refused[n] = *cfg;
    }
}

static qg_status resolve_launch(qg_context *ctx, const qg_problem *p, const qg_config *forced,
                                const qg_launch_entry **out);

qg_status qg_compile(qg_context *ctx, const qg_problem *problem, const qg_config *cfg,
                     qg_kernel_info *info) {
    qg__clear_error();
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_compile: ctx is NULL");
    qg_status st = qg__check_problem(problem, "qg_compile");
    if (st != QG_SUCCESS) return st;
    const int num_sms = qg_context_get_num_sms(ctx);
    qg_config c;
    qg_kernel_plan plan;
    qg_jit_result res;
    if ((st = resolve_and_compile(ctx, num_sms, problem, cfg, &c, &plan, &res)) != QG_SUCCESS)
        return qg__fail(st, "qg_compile: %s", qg_last_error());
    if (info) *info = res.info;
    if (ctx->offline) return QG_SUCCESS;
    /* On a device, also load the module and build the launch entry: loading a
     * module can synchronize the device, so the first GEMM call of this shape
     * must not be where it happens (CUDA-graph capture, busy streams). */
    const qg_problem p = launch_key(*problem);
    CUcontext prev;
    CUresult r = ctx->drv->cuCtxPushCurrent(ctx->cu_context);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "cuCtxPushCurrent");
    pthread_mutex_lock(&ctx->lock);
    const qg_launch_entry *e;
    st = resolve_launch(ctx, &p, cfg, &e);
    pthread_mutex_unlock(&ctx->lock);
    ctx->drv->cuCtxPopCurrent(&prev);
    return st;
}

/* ---- launch cache ----------------------------------------------------------- */

static unsigned bucket_of(const qg_problem *p, const qg_config *forced) {
    unsigned h = 2166136261u;
    const int v[] = {(int)p->kind, p->m, p->n, p->k, p->num_groups, p->expected_m, p->accumulate,
                     forced ? forced->block_m : -1, forced ? forced->block_n : -1};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i) h = (h ^ (unsigned)v[i]) * 16777619u;
    return h % 256;
}

static bool same_forced(const qg_config *a, const qg_config *b) {
    return a->block_m == b->block_m && a->block_n == b->block_n &&
           a->num_stages == b->num_stages && a->multicast == b->multicast &&
           a->swizzle_group == b->swizzle_group &&
           (a->split_k ? a->split_k : 1) == (b->split_k ? b->split_k : 1);
}

static bool entry_matches(const qg_launch_entry *e, const qg_problem *p, const qg_config *forced,
                          int num_sms) {
    return e->problem.kind == p->kind && e->problem.m == p->m && e->problem.n == p->n &&
           e->problem.k == p->k && e->problem.num_groups == p->num_groups &&
           e->problem.expected_m == p->expected_m && e->problem.accumulate == p->accumulate &&
           e->num_sms == num_sms &&
           e->forced == (forced != NULL) && (!forced || same_forced(&e->forced_cfg, forced));
}

/* Load a compiled kernel: module, function, dynamic shared memory. On
 * failure *module is NULL and *step names the call that failed. */
static CUresult load_module(const qg_context *ctx, const void *cubin, size_t smem_bytes,
                            CUmodule *module, CUfunction *function, const char **step) {
    const qg_driver *drv = ctx->drv;
    *module = NULL;
    *step = "cuModuleLoadData";
    CUresult r = drv->cuModuleLoadData(module, cubin);
    if (r == CUDA_SUCCESS) {
        *step = "cuModuleGetFunction(qg_fp8_gemm_kernel)";
        r = drv->cuModuleGetFunction(function, *module, "qg_fp8_gemm_kernel");
    }
    if (r == CUDA_SUCCESS) {
        *step = "cuFuncSetAttribute(max dynamic shared memory)";
        r = drv->cuFuncSetAttribute(*function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    (int)smem_bytes);
    }
    if (r != CUDA_SUCCESS && *module) {
        drv->cuModuleUnload(*module);
        *module = NULL;
    }
    return r;
}

/* Errors that say the context or the device cannot load anything now (or
 * memory ran out), not that the image is bad: a cubin from the disk cache
 * that fails with one of these is not discarded. */
static bool context_unusable(CUresult r) {
    switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return true;
    default:
        return false;
    }
}

/* "CUresult 200: device kernel image is invalid", for a debug line. */
static void cuda_error_text(const qg_context *ctx, CUresult r, char *buf, size_t len) {
    const char *text = NULL;
    if (ctx->drv->cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "?";
    snprintf(buf, len, "CUresult %d: %s", (int)r, text);
}

/* Find or build the launch entry; called with ctx->lock held and ctx current. */
static qg_status resolve_launch(qg_context *ctx, const qg_problem *p, const qg_config *forced,
                                const qg_launch_entry **out) {
    const unsigned b = bucket_of(p, forced);
    const int num_sms = ctx->num_sms;
    for (qg_launch_entry *e = ctx->launches[b]; e; e = e->next)
        if (entry_matches(e, p, forced, num_sms)) {
            *out = e;
            return QG_SUCCESS;
        }
    qg_launch_entry *e = calloc(1, sizeof *e);
    if (!e) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "launch cache: out of host memory");
    e->problem = *p;
    e->forced = forced != NULL;
    if (forced) e->forced_cfg = *forced;
    e->num_sms = num_sms;
    qg_jit_result res;
    qg_status st = resolve_and_compile(ctx, num_sms, p, forced, &e->cfg, &e->plan, &res);
    if (st != QG_SUCCESS) {
        free(e);
        return st;
    }
    /* Share the module with any entry of the same kernel. */
    qg_module *m = ctx->modules;
    while (m && strcmp(m->key, res.info.key)) m = m->next;
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m) {
            free(e);
            return qg__fail(QG_ERROR_OUT_OF_MEMORY, "launch cache: out of host memory");
        }
        const char *step;
        CUresult r = load_module(ctx, res.cubin, e->plan.smem_bytes, &m->module, &m->function, &step);
        char path[1024] = "";
        bool recompiled = false;
        /* A cache entry passed the cache's checks (whole, its hash right,
         * ours) but the driver cannot load it: forged with a recomputed hash,
         * another kernel's or another GPU's cubin. Delete it and compile the
         * kernel again, once (issue 27). */
        if (r != CUDA_SUCCESS && res.from_disk && !context_unusable(r) &&
            qg__jit_discard(ctx->jit, res.info.key, res.cubin, path, sizeof path)) {
            char text[160];
            cuda_error_text(ctx, r, text, sizeof text);
            qg__jit_debug("kernel %s from the disk cache (%s) refused by the driver (%s: %s): "
                          "entry deleted, recompiling", res.info.key, path[0] ? path : "?", step,
                          text);
            recompiled = true;
            st = resolve_and_compile(ctx, num_sms, p, forced, &e->cfg, &e->plan, &res);
            if (st != QG_SUCCESS) {
                free(m);
                free(e);
                return st;
            }
            r = load_module(ctx, res.cubin, e->plan.smem_bytes, &m->module, &m->function, &step);
        }
        if (r != CUDA_SUCCESS) {
            free(m);
            free(e);
            /* Name the kernel and where its cubin came from: a cache entry
             * the user can delete, or a fresh compile (a driver problem). */
            char dir[900], what[1536];
            if (!path[0] && res.from_disk && qg__cache_dir(dir, sizeof dir))
                snprintf(path, sizeof path, "%s/%s.cubin", dir, res.info.key);
            snprintf(what, sizeof what, "%s failed for kernel %s (%s%s)", step, res.info.key,
                     recompiled    ? "compiled again after the driver refused the disk cache entry "
                     : res.from_disk ? "read from the disk cache entry "
                                     : "compiled now",
                     recompiled || res.from_disk ? (path[0] ? path : "?") : "");
            return qg__cuda_fail(r, what);
        }
        memcpy(m->key, res.info.key, sizeof m->key);
        m->next = ctx->modules;
        ctx->modules = m;
    }
    e->module = m;
    /* A persistent grid must be co-resident: with 2-CTA clusters, GPCs with an
     * odd SM count cannot host a cluster on every SM, and a cluster that does
     * not fit would run as a second wave. */
    e->max_grid = e->cfg.num_sms;
    if (e->plan.cluster_size > 1) {
        CUlaunchAttribute attr;
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = (unsigned)e->plan.cluster_size;
        attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
        CUlaunchConfig lc;
        memset(&lc, 0, sizeof lc);
        lc.gridDimX = (unsigned)e->cfg.num_sms;
        lc.gridDimY = lc.gridDimZ = 1;
        lc.blockDimX = (unsigned)e->plan.num_threads;
        lc.blockDimY = lc.blockDimZ = 1;
        lc.sharedMemBytes = (unsigned)e->plan.smem_bytes;
        lc.attrs = &attr;
        lc.numAttrs = 1;
        int clusters = 0;
        CUresult r = ctx->drv->cuOccupancyMaxActiveClusters(&clusters, m->function, &lc);
        if (r == CUDA_SUCCESS && clusters > 0 && clusters * e->plan.cluster_size < e->max_grid)
            e->max_grid = clusters * e->plan.cluster_size;
        if (qg__env_flag("QGEMM_PRINT_CONFIG"))
            fprintf(stderr, "qgemm: cluster occupancy query: rc %d, %d clusters of %d -> grid %d\n",
                    (int)r, clusters, e->plan.cluster_size, e->max_grid);
    }
    e->next = ctx->launches[b];
    ctx->launches[b] = e;
    *out = e;
    return QG_SUCCESS;
}

void qg__launch_cache_destroy(qg_context *ctx) {
    for (int b = 0; b < 256; ++b)
        for (qg_launch_entry *e = ctx->launches[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    for (qg_module *m = ctx->modules, *next; m; m = next) {
        next = m->next;
        if (ctx->drv && m->module) ctx->drv->cuModuleUnload(m->module);
        free(m);
    }
}

/* ---- argument validation ------------------------------------------------ */

/* Presence and alignment: checkable without a device. */
static qg_status check_ptr(const void *ptr, size_t align, const char *fn, const char *name) {
    if (!ptr) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s is NULL", fn, name);
    if ((uintptr_t)ptr % align)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s (%p) must be %zu-byte aligned", fn,
                        name, ptr, align);
    return QG_SUCCESS;
}

/* The pointer is device memory of the context's device. */
static qg_status check_device_ptr(const qg_context *ctx, const void *ptr, const char *fn,
                                  const char *name) {
    int ordinal = -1;
    CUresult r = ctx->drv->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                 (CUdeviceptr)(uintptr_t)ptr);
    if (r != CUDA_SUCCESS)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->%s (%p) is not a CUDA device pointer", fn, name, ptr);
    if (ordinal != ctx->device)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->%s is memory of device %d; the context is on device %d", fn,
                        name, ordinal, ctx->device);
    return QG_SUCCESS;
}

static qg_status check_ld(int64_t ld, int64_t min, int elem_bytes, const char *fn, const char *name,
                          const char *what) {
    if (ld < min)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s must be >= %s (%lld), got %lld",
                        fn, name, what, (long long)min, (long long)ld);
    /* Bound first, multiply after: ld * elem_bytes overflows past 2^61. */
    if (ld > (1ll << 36))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->%s = %lld exceeds 2^36", fn, name,
                        (long long)ld);
    if ((ld * elem_bytes) % 16)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->%s * %d bytes must be a multiple of 16 (TMA), got %lld", fn,
                        name, elem_bytes, (long long)ld);
    return QG_SUCCESS;
}

/* Check args: first everything that needs no device (shape, strides,
 * pointer presence and alignment), then that the context can launch, then
 * that every pointer is memory of the context's device. */
static qg_status validate(const qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *a,
                          const qg_config *forced, const char *fn, qg_problem *p) {
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!a) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args is NULL", fn);
    if (a->m < 0) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->m must be >= 0, got %d", fn, a->m);
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
    /* (k-grouped: group g's rows of A and B are K_g bytes apart; lda, ldb unused) */
    if ((!kgrouped && ((st = check_ld(a->lda, a->k, 1, fn, "lda", "k")) ||
                       (st = check_ld(a->ldb, a->k, 1, fn, "ldb", "k")))) ||
        (st = check_ld(a->ldd, a->n, wgrad ? 4 : 2, fn, "ldd", "n")) ||
        (st = check_ld(a->sfa_ld, a->m, 4, fn, "sfa_ld", "m")) ||
        (wgrad && (st = check_ld(a->sfb_ld, a->n, 4, fn, "sfb_ld", "n"))))
        return st;
    /* rows of D (and of a separate C): k-grouped G x M */
    const uint64_t d_rows = (uint64_t)a->m * (kgrouped ? (uint64_t)a->num_groups : 1);
    typedef struct { const void *ptr; size_t align; const char *name; } named_ptr;
    named_ptr ptrs[7] = {
        {a->a, 16, "a"}, {a->b, 16, "b"}, {a->sfa, 16, "sfa"}, {a->sfb, 16, "sfb"}, {a->d, 16, "d"}};
    int num_ptrs = 5;
    if (kind == QG_GEMM_GROUPED_CONTIGUOUS) ptrs[num_ptrs++] = (named_ptr){a->m_indices, 4, "m_indices"};
    if (kind == QG_GEMM_GROUPED_MASKED) ptrs[num_ptrs++] = (named_ptr){a->masked_m, 4, "masked_m"};
    if (kind == QG_GEMM_GROUPED_PSUM) ptrs[num_ptrs++] = (named_ptr){a->group_ends, 4, "group_ends"};
    if (wgrad && a->c && a->c != (const float *)a->d) {
        /* C is copied into D first: a separate array, not overlapping D. */
        if ((st = check_ld(a->ldc, a->n, 4, fn, "ldc", "n"))) return st;
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
        if ((st = check_ptr(ptrs[i].ptr, ptrs[i].align, fn, ptrs[i].name))) return st;
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
        if ((st = qg__complete_config_sms(&ctx->props, qg_context_get_num_sms(ctx), p, &c, &plan)))
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
        if ((st = check_device_ptr(ctx, ptrs[i].ptr, fn, ptrs[i].name))) return st;
    return QG_SUCCESS;
}

/* ---- tensor maps and launch -------------------------------------------- */

/*
 * The tensor maps of a thread's recent calls. A cached launch encodes the
 * same maps call after call (the same weights, activation buffers the
 * caching allocator hands out again): cuTensorMapEncodeTiled costs about
 * 0.11 us a map on an H200 (bench/results/2026-11-25-h200-7/host-probe.log),
 * 4-5 maps a call. The key is every argument of the encode (zeroed first, so
 * that padding compares equal), so a hit is the map the driver would return:
 * the map holds no context or stream, only the address and the layout. One
 * table per thread (no lock); direct-mapped, a miss replaces its slot.
 */
typedef struct {
    const void *ptr;
    uint64_t inner, rows, groups, row_bytes, group_bytes;
    uint32_t box_inner, box_rows;
    int type, swizzle;
} map_key;
#define QG_MAP_CACHE_SLOTS 32
typedef struct {
    CUtensorMap map;
    map_key key;
    bool used;
} map_slot;
static _Thread_local map_slot map_cache[QG_MAP_CACHE_SLOTS];

static unsigned map_slot_of(const map_key *k) {
    uint64_t h = (uint64_t)(uintptr_t)k->ptr ^ (k->inner * 0x9e3779b97f4a7c15ull) ^
                 (k->rows * 0xc2b2ae3d27d4eb4full) ^ (k->groups + k->row_bytes + k->box_rows) ^
                 ((uint64_t)k->type << 40) ^ ((uint64_t)k->box_inner << 20);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (unsigned)(h % QG_MAP_CACHE_SLOTS);
}

/* A tiled tensor map of rank 3 (inner x rows x groups elements: rows
 * row_bytes apart, groups group_bytes apart; box box_inner x box_rows x 1),
 * of rank 2 (groups = 0) or of rank 1 (rows = groups = 0: inner elements,
 * box box_inner); from the thread's cache when it encoded the same map
 * lately. */
static qg_status encode_map(const qg_context *ctx, CUtensorMap *map, CUtensorMapDataType type,
                            const void *ptr, uint64_t inner, uint64_t rows, uint64_t groups,
                            uint64_t row_bytes, uint64_t group_bytes, uint32_t box_inner,
                            uint32_t box_rows, CUtensorMapSwizzle swizzle, const char *what) {
    map_key key;
    memset(&key, 0, sizeof key);
    key.ptr = ptr, key.inner = inner, key.rows = rows, key.groups = groups;
    key.row_bytes = row_bytes, key.group_bytes = group_bytes;
    key.box_inner = box_inner, key.box_rows = box_rows;
    key.type = (int)type, key.swizzle = (int)swizzle;
    map_slot *slot = &map_cache[map_slot_of(&key)];
    if (slot->used && memcmp(&slot->key, &key, sizeof key) == 0) {
        *map = slot->map;
        return QG_SUCCESS;
    }
    const cuuint64_t dims[3] = {inner, rows, groups};
    const cuuint64_t strides[2] = {row_bytes, group_bytes};
    const cuuint32_t box[3] = {box_inner, box_rows, 1};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    CUresult r = ctx->drv->cuTensorMapEncodeTiled(
        map, type, groups ? 3 : rows ? 2 : 1, (void *)ptr, dims, strides, box, elem_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, what);
    slot->map = *map;
    slot->key = key;
    slot->used = true;
    return QG_SUCCESS;
}

/* encode_map of rank 2 (inner x outer, rows stride_bytes apart), or of rank
 * 1 (outer = 0). */
static qg_status encode_tiled(const qg_context *ctx, CUtensorMap *map, CUtensorMapDataType type,
                              const void *ptr, uint64_t inner, uint64_t outer,
                              uint64_t stride_bytes, uint32_t box_inner, uint32_t box_outer,
                              CUtensorMapSwizzle swizzle, const char *what) {
    return encode_map(ctx, map, type, ptr, inner, outer, 0, stride_bytes, 0, box_inner, box_outer,
                      swizzle, what);
}

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
    const int chunk_bytes = plan->store_cols * (fp32_d ? 4 : 2);
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

/* Enqueue the entry's kernel on `stream` over `grid` CTAs. */
static qg_status launch_kernel(const qg_context *ctx, const qg_launch_entry *e, int grid,
                               void **params, CUstream stream, bool pdl) {
    CUlaunchAttribute attrs[2];
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = (unsigned)grid;
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = (unsigned)e->plan.num_threads;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = (unsigned)e->plan.smem_bytes;
    lc.hStream = stream;
    lc.attrs = attrs;
    if (e->plan.cluster_size > 1) {
        CUlaunchAttribute *at = &attrs[lc.numAttrs++];
        at->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at->value.clusterDim.x = (unsigned)e->plan.cluster_size;
        at->value.clusterDim.y = 1;
        at->value.clusterDim.z = 1;
    }
    if (pdl) { /* the kernel waits for the previous one (griddepcontrol.wait) */
        CUlaunchAttribute *at = &attrs[lc.numAttrs++];
        at->id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at->value.programmaticStreamSerializationAllowed = 1;
    }
    CUresult r = ctx->drv->cuLaunchKernelEx(&lc, e->module->function, params, NULL);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "launching the GEMM kernel");
    return QG_SUCCESS;
}

/* D = C + ... with C another array (weight gradients): C into D first, on
 * the stream; rows of n FP32 values. */
static qg_status copy_c_into_d(const qg_context *ctx, const qg_gemm_args *a, uint64_t rows,
                               CUstream stream) {
    CUDA_MEMCPY2D copy;
    memset(&copy, 0, sizeof copy);
    copy.srcMemoryType = copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = (CUdeviceptr)(uintptr_t)a->c;
    copy.srcPitch = (size_t)a->ldc * 4;
    copy.dstDevice = (CUdeviceptr)(uintptr_t)a->d;
    copy.dstPitch = (size_t)a->ldd * 4;
    copy.WidthInBytes = (size_t)a->n * 4;
    copy.Height = (size_t)rows;
    CUresult r = ctx->drv->cuMemcpy2DAsync(&copy, stream);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "copying C into D (cuMemcpy2DAsync)");
    return QG_SUCCESS;
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
    const qg_config *cfg = &e->cfg;
    const qg_kernel_plan *plan = &e->plan;
    const uint64_t total_kb = (uint64_t)a->k / 128;
    CUtensorMap map_sfa, map_sfb, map_d;
    qg_status st;
    if ((st = encode_tiled(ctx, &map_sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfa, (uint64_t)a->m,
                           total_kb, (uint64_t)a->sfa_ld * 4, (uint32_t)cfg->block_m, 1,
                           CU_TENSOR_MAP_SWIZZLE_NONE, "tensor map of SFA")) ||
        (st = encode_tiled(ctx, &map_sfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfb, (uint64_t)a->n,
                           total_kb, (uint64_t)a->sfb_ld * 4, (uint32_t)cfg->block_n, 1,
                           CU_TENSOR_MAP_SWIZZLE_NONE, "tensor map of SFB")) ||
        (st = encode_map(ctx, &map_d, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->d, (uint64_t)a->n,
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
            if ((st = encode_tiled(ctx, &groups.a[i], CU_TENSOR_MAP_DATA_TYPE_UINT8,
                                   a_base + prefix * (uint64_t)a->m, k_map, (uint64_t)a->m, k_map,
                                   128, (uint32_t)cfg->block_m, CU_TENSOR_MAP_SWIZZLE_128B,
                                   "tensor map of a group's A")) ||
                (st = encode_tiled(ctx, &groups.b[i], CU_TENSOR_MAP_DATA_TYPE_UINT8,
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
        const int grid = tiles < e->max_grid ? (int)tiles : e->max_grid;
        if ((st = launch_kernel(ctx, e, grid, params, stream, pdl))) return st;
    }
    return QG_SUCCESS;
}

static qg_status gemm(qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *a,
                      const qg_config *forced, CUstream stream, const char *fn) {
    qg__clear_error();
    qg_problem p;
    qg_status st = validate(ctx, kind, a, forced, fn, &p);
    if (st != QG_SUCCESS) return st;
    if (a->m == 0) return QG_SUCCESS;

    const qg_driver *drv = ctx->drv;
    CUcontext prev;
    CUresult r = drv->cuCtxPushCurrent(ctx->cu_context);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "cuCtxPushCurrent");
    if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD) {
        CUcontext sctx = NULL;
        if (drv->cuStreamGetCtx(stream, &sctx) == CUDA_SUCCESS && sctx != ctx->cu_context) {
            drv->cuCtxPopCurrent(&prev);
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: stream belongs to another CUDA context than device %d's primary "
                            "context", fn, ctx->device);
        }
    }
    const bool wgrad = qg__one_d(kind); /* FP32 D, optionally from C */
    const bool kgrouped = kind == QG_GEMM_K_GROUPED;
    const uint64_t d_rows = (uint64_t)a->m * (kgrouped ? (uint64_t)a->num_groups : 1);
    /* k-grouped with every group empty: D is C, or zero; no kernel. */
    if (kgrouped && a->k == 0) {
        if (a->c && a->c != (const float *)a->d) st = copy_c_into_d(ctx, a, d_rows, stream);
        else if (!a->c) {
            r = drv->cuMemsetD2D32Async((CUdeviceptr)(uintptr_t)a->d, (size_t)a->ldd * 4, 0,
                                        (size_t)a->n, (size_t)d_rows, stream);
            if (r != CUDA_SUCCESS) st = qg__cuda_fail(r, "zeroing D (cuMemsetD2D32Async)");
        }
        drv->cuCtxPopCurrent(&prev);
        return st;
    }
    pthread_mutex_lock(&ctx->lock);
    const qg_launch_entry *e = NULL;
    st = resolve_launch(ctx, &p, forced, &e);
    const bool pdl = ctx->pdl;
    pthread_mutex_unlock(&ctx->lock);
    if (st != QG_SUCCESS) {
        drv->cuCtxPopCurrent(&prev);
        return qg__fail(st, "%s: %s", fn, qg_last_error());
    }
    /* D = C + A B^T with C another array: C goes into D on the stream just
     * before the first launch, once the tensor maps are encoded (a refused
     * encode then leaves D untouched). */
    const bool copy_c = wgrad && a->c && a->c != (const float *)a->d;
    if (kgrouped) {
        st = k_grouped_launches(ctx, e, a, copy_c, stream, pdl);
        drv->cuCtxPopCurrent(&prev);
        return st;
    }
    const qg_config *cfg = &e->cfg;
    const qg_kernel_plan *plan = &e->plan;
    const int groups = p.num_groups;
    const uint64_t a_rows = kind == QG_GEMM_GROUPED_MASKED ? (uint64_t)groups * a->m : (uint64_t)a->m;
    const int d_bytes = wgrad ? 4 : 2; /* FP32 or bf16 D */
    const int cluster = plan->cluster_size;
    const uint32_t a_box = (uint32_t)plan->a_box_rows; /* (a multicast pair: each its half) */
    const uint32_t b_box = b_box_rows(cfg, plan);
    const uint64_t sfa_rows = (uint64_t)plan->num_k_blocks * (kind == QG_GEMM_GROUPED_MASKED ? groups : 1);

    /* SFB needs no tensor map: the kernel copies each tile's scales into
     * shared memory with plain loads (kernels/qg_fp8_gemm.cuh, "SFB
     * invariants"). */
    CUtensorMap map_a, map_b, map_sfa, map_d, map_sfb;
    if ((st = encode_tiled(ctx, &map_a, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->a, (uint64_t)a->k, a_rows,
                        (uint64_t)a->lda, 128, a_box, CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of A")) ||
        (st = encode_tiled(ctx, &map_b, CU_TENSOR_MAP_DATA_TYPE_UINT8, a->b, (uint64_t)a->k,
                        (uint64_t)groups * a->n, (uint64_t)a->ldb, 128, b_box,
                        CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of B")) ||
        (st = encode_tiled(ctx, &map_sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfa, (uint64_t)a->m,
                        sfa_rows, (uint64_t)a->sfa_ld * 4,
                        cfg->multicast == QG_MULTICAST_A ? (uint32_t)cfg->block_m : a_box, 1,
                        CU_TENSOR_MAP_SWIZZLE_NONE, "tensor map of SFA")) ||
        /* D (bf16; the weight gradient's FP32) in chunks of store_cols
         * columns: rows of 128, 64 or 32 bytes, the swizzle of that size. */
        (st = encode_tiled(ctx, &map_d,
                           wgrad ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                           a->d, (uint64_t)a->n, a_rows, (uint64_t)a->ldd * d_bytes,
                           (uint32_t)plan->store_cols, d_box_rows(cfg, plan, wgrad),
                           d_swizzle(plan, wgrad), "tensor map of D")) ||
        /* 1D1D: column scales of B [K/128][sfb_ld], a box of block_n per
         * stage. */
        (wgrad &&
         (st = encode_tiled(ctx, &map_sfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a->sfb,
                            (uint64_t)a->n, (uint64_t)plan->num_k_blocks, (uint64_t)a->sfb_ld * 4,
                            (uint32_t)cfg->block_n, 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                            "tensor map of SFB")))) {
        drv->cuCtxPopCurrent(&prev);
        return st;
    }

    /* Persistent grid: never more CTAs than tiles (split-K: than tiles x
     * split_k; masked: unknown on the host). */
    if (!wgrad) map_sfb = map_sfa; /* unused by the kernel */
    if (copy_c && (st = copy_c_into_d(ctx, a, d_rows, stream)) != QG_SUCCESS) {
        drv->cuCtxPopCurrent(&prev);
        return st;
    }
    int grid = e->max_grid;
    if (kind != QG_GEMM_GROUPED_MASKED && kind != QG_GEMM_GROUPED_PSUM) {
        const long long tiles = (((long long)a->m + cfg->block_m - 1) / cfg->block_m) *
                                (((long long)a->n + cfg->block_n - 1) / cfg->block_n) * plan->split_k;
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
    void *params[] = {&map_a, &map_b, &map_sfa, &map_d, &map_sfb, &sfb, &d, &ldd,
                      &m_indices, &masked_m, &shape_m, &prefetch_kb, &num_k_blocks};
    st = launch_kernel(ctx, e, grid, params, stream, pdl);
    drv->cuCtxPopCurrent(&prev);
    return st;
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
