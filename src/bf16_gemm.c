/*
 * bf16_gemm.c -- the BF16 family's API unit: the BF16 GEMMs' entry points
 * (dense in the four layouts NT/NN/TN/TT, contiguous, psum, masked,
 * k-grouped, batched) and qg_bf16_compile: validate, plan (src/bf16_plan.c), write
 * and compile the kernel's source (kernels/qg_bf16_gemm.cuh), resolve it
 * through the shared launch path (src/launch.h), encode the tensor maps,
 * launch.
 *
 * Invariants (as the FP8 family's):
 *  - every argument is checked before anything touches the device, so a
 *    rejected call writes no output memory;
 *  - a launch reads no device memory and allocates nothing (CUDA-graph
 *    capturable); the k-grouped sizes are a host array;
 *  - D = C + A B^T with C another array: C is copied into D on the stream
 *    after the tensor maps are encoded, just before the first launch, and
 *    the kernel adds into D by TMA reduce-add (the SMs never read D).
 */
#include "bf16_plan.h"
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The launch cache's key: what chooses and compiles a kernel (zeroed, then
 * filled: compared as bytes). */
typedef struct {
    int kind;       /* qg_bf16_kind */
    int layout;     /* qg_bf16_layout */
    int m, n, k;    /* k-grouped: k = the largest group's K */
    int num_groups;
    int expected_m; /* masked and psum only */
    int d_f32, with_c;
    int sum_batches; /* batch sums only: the batches (num_groups: the splits) */
    int sum_radix;   /* the reduced batch sum only: its tree's radix (QGEMM_BMK_RADIX) */
    int legacy;      /* QGEMM_BF16_PLAN=v1 (1) or v2 (2): an earlier heuristic (qg_bf16_problem) */
    int force_bm, force_bn, force_mc; /* QGEMM_BF16_PLAN=BMxBN[:a|b]: a forced tile (0: none) */
    int sum_atomic;  /* the reduced batch sum over splits > 1: 1 = atomic (QGEMM_BMK_REDUCE) */
    int sum_variant; /* the reduced batch sum: QGEMM_BMK_VARIANT (0 v1, 1 v2, 2 v3, 3 v3 + the
                        L2 prefetch of the reductions' target: v5, v6) */
    int sum_max_stages; /* and its :sN stage cap (0: none) */
    int sum_convert; /* QGEMM_BMK_VARIANT=v4 or v5 into a bf16 D: the FP32-D kernel into W, then
                        the conversion launch (sum_variant then 2 or 3: v3's kernel) */
    int merge;       /* QGEMM_BF16_MERGE: 0 off, -1 auto, n (dense NT only: else 0) */
    int splitk;      /* QGEMM_BF16_SPLITK: 0 off, -1 auto, 2 / 4 / 8 (dense only: else 0) */
    int kgrouped;    /* QGEMM_BF16_KGROUPED: walk 0 n, 1 m, 2 mc, 3 dg, + 4 d2 (k-grouped only:
                        else 0; the knob's default m+d2 is 5) */
} bf16_key;

/* What an entry keeps. */
typedef struct {
    qg_bf16_problem problem;
    qg_bf16_plan plan;
} bf16_entry_plan;

static qg_bf16_kind bf16_kind_of(qg_gemm_kind kind) {
    if (kind == QG_GEMM_BF16_BATCHED) return QG_BF16_BATCHED; /* (not enumerators) */
    if (kind == QG_GEMM_BF16_BATCH_SUMS) return QG_BF16_BATCH_SUMS;
    if (kind == QG_GEMM_BF16_BATCH_SUM) return QG_BF16_BATCH_SUM;
    switch (kind) {
    case QG_GEMM_GROUPED_CONTIGUOUS: return QG_BF16_CONTIGUOUS;
    case QG_GEMM_GROUPED_MASKED: return QG_BF16_MASKED;
    case QG_GEMM_GROUPED_PSUM: return QG_BF16_PSUM;
    case QG_GEMM_K_GROUPED: return QG_BF16_K_GROUPED;
    default: return QG_BF16_DENSE;
    }
}

static qg_bf16_layout layout_of(const qg_bf16_gemm_args *a) {
    const int a_mn = a->a_major == QG_MAJOR_MN, b_mn = a->b_major == QG_MAJOR_MN;
    return a_mn ? (b_mn ? QG_BF16_TT : QG_BF16_TN) : (b_mn ? QG_BF16_NN : QG_BF16_NT);
}

static const char *layout_name(qg_bf16_layout l) {
    return l == QG_BF16_NT ? "NT" : l == QG_BF16_NN ? "NN" : l == QG_BF16_TN ? "TN" : "TT";
}

/* ---- planning and compiling ------------------------------------------------ */

/* Plan p on ctx's device for num_sms SMs and compile its kernel. */
static qg_status plan_and_compile(qg_context *ctx, const bf16_key *k, int num_sms,
                                  bf16_entry_plan *out, qg_jit_result *res) {
    qg_bf16_problem *p = &out->problem;
    memset(p, 0, sizeof *p);
    p->m = k->m, p->n = k->n, p->k = k->k;
    p->layout = (qg_bf16_layout)k->layout;
    p->kind = (qg_bf16_kind)k->kind;
    p->num_groups = k->num_groups;
    p->expected_m = k->expected_m;
    p->d_f32 = k->d_f32;
    p->with_c = k->with_c;
    p->sum_batches = k->sum_batches;
    p->sum_radix = k->sum_radix;
    p->legacy = k->legacy;
    p->sum_atomic = k->sum_atomic;
    p->sum_variant = k->sum_variant;
    p->sum_max_stages = k->sum_max_stages;
    p->merge = k->merge;
    p->splitk = k->splitk;
    p->kgrouped = k->kgrouped;
    p->num_sms = num_sms;
    p->smem_limit = (int)ctx->props.smem_optin_bytes;
    if (k->force_bm) {
        const char *why = NULL;
        if (!qg__bf16_legal(p, k->force_bm, k->force_bn, k->force_mc, &why))
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "QGEMM_BF16_PLAN forces the tile %dx%d, multicast %d, which %s %dx%dx%d "
                            "(%d groups) cannot take: %s", k->force_bm, k->force_bn, k->force_mc,
                            layout_name(p->layout), p->m, p->n, p->k, p->num_groups, why);
        if (qg__bf16_complete(p, k->force_bm, k->force_bn, k->force_mc, &out->plan) != 0)
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "QGEMM_BF16_PLAN forces the tile %dx%d, whose stages do not fit %d bytes "
                            "of shared memory", k->force_bm, k->force_bn, p->smem_limit);
        /* a forced split of the forced tile (QGEMM_BF16_SPLITK=n; auto
         * chooses its own tile, so it leaves a forced one alone) */
        qg__bf16_force_split(p, &out->plan);
    } else if (qg__bf16_select(p, &out->plan) != 0)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "no BF16 kernel configuration fits %s %dx%dx%d (%d groups, %s D%s) in "
                        "%d SMs with %d bytes of shared memory", layout_name(p->layout), p->m,
                        p->n, p->k, p->num_groups, p->d_f32 ? "FP32" : "bf16",
                        p->with_c ? ", + C" : "", num_sms, p->smem_limit);
    char src[8192];
    if (qg__bf16_kernel_source(src, sizeof src, p, &out->plan) < 0)
        return qg__fail(QG_ERROR_INTERNAL, "BF16 kernel source exceeds %zu bytes", sizeof src);
    qg_status st = qg__jit_compile(ctx->jit, src, res);
    if (st != QG_SUCCESS) return st;
    const qg_bf16_plan *pl = &out->plan;
    return qg__check_register_split(res, pl->num_threads, pl->producer_regs, pl->num_math_wgs,
                                    pl->math_regs);
}

static qg_status bf16_build(qg_context *ctx, const void *key, const void *arg, void *plan,
                            qg_launch_shape *shape, qg_jit_result *res) {
    (void)arg;
    bf16_entry_plan *bp = plan;
    qg_status st = plan_and_compile(ctx, key, ctx->num_sms, bp, res);
    if (st != QG_SUCCESS) return st;
    shape->num_threads = (unsigned)bp->plan.num_threads;
    shape->smem_bytes = (size_t)bp->plan.smem_bytes;
    shape->cluster_size = bp->plan.cluster;
    shape->grid = bp->plan.grid;
    return QG_SUCCESS;
}

static const qg_launch_family bf16_family = {
    .kernel = "qg_bf16_gemm_kernel",
    .plan_size = sizeof(bf16_entry_plan),
    .build = bf16_build,
};

/* The reduced batch sum's kernel carries DeepGEMM's kernel name
 * (src/bf16_plan.c writes QG_BF16_ENTRY): DeepGEMM's tests and users'
 * profiling scripts find the kernel of einsum('bmk,bnk->mn') by the
 * substring 'bmn_bnk_mn_gemm_impl'. */
static const qg_launch_family bf16_sum_family = {
    .kernel = "qg_bf16_bmn_bnk_mn_gemm_impl",
    .plan_size = sizeof(bf16_entry_plan),
    .build = bf16_build,
};

/* The batch sum's conversion pass (QGEMM_BMK_VARIANT=v4, kernels/qg_bf16_gemm.cuh
 * QG_SUM_CONVERT): W -> bf16 D, W zeroed. One kernel for every shape (M, N
 * and ldd are arguments): its key is a constant. Its name carries DeepGEMM's
 * substring as the GEMM's does, so that kineto name filters count it too. */
typedef struct {
    int convert; /* 1 */
} bf16_convert_key;

#define QG_BF16_CONVERT_THREADS 256

static qg_status bf16_convert_build(qg_context *ctx, const void *key, const void *arg, void *plan,
                                    qg_launch_shape *shape, qg_jit_result *res) {
    (void)key, (void)arg, (void)plan;
    qg_status st = qg__jit_compile(ctx->jit, qg__bf16_convert_source(), res);
    if (st != QG_SUCCESS) return st;
    shape->num_threads = QG_BF16_CONVERT_THREADS;
    shape->smem_bytes = 0;
    shape->cluster_size = 1;
    shape->grid = ctx->num_sms * 8; /* (the launch takes fewer for small D) */
    return QG_SUCCESS;
}

/* (Its name does not contain the GEMM's "bmn_bnk_mn_gemm_impl": DeepGEMM's bench_kineto,
 * which its test_bmk_bnk_mn times through, refuses a name that matches two kernels of a
 * call; DeepGEMM's own bf16 D ends in torch's cast kernel, named apart from its GEMM too.
 * H200 2026-11-29-h200-15-w5: the first name failed that test under v5.) */
static const qg_launch_family bf16_convert_family = {
    .kernel = "qg_bf16_batch_sum_convert",
    .plan_size = sizeof(int),
    .build = bf16_convert_build,
};

/* The key of the GEMM kernel a call launches: v4 into a bf16 D runs the
 * FP32-D kernel (the same entry as an FP32-D call of the shape: no second
 * GEMM compile) into the workspace. */
static const bf16_key *gemm_key_of(const bf16_key *k, bf16_key *scratch) {
    if (!k->sum_convert) return k;
    *scratch = *k;
    scratch->d_f32 = 1;
    scratch->sum_convert = 0;
    return scratch;
}

static const qg_launch_family *family_of(const bf16_key *k) {
    return k->kind == QG_BF16_BATCH_SUM ? &bf16_sum_family : &bf16_family;
}

/* ---- validation -------------------------------------------------------------- */

/* QGEMM_BMK_RADIX (src/env.c): the reduced batch sum's tree radix; unset: 2.
 * Returns 0 for a value that is not 2, 4 or 8. */
static int bmk_radix(void) {
    const char *v = qg__env_string("QGEMM_BMK_RADIX");
    if (!v) return 2;
    if ((v[0] == '2' || v[0] == '4' || v[0] == '8') && v[1] == '\0') return v[0] - '0';
    return 0;
}

/* QGEMM_BF16_PLAN (src/env.c): which BF16 configuration a call gets, so that
 * one process times the alternatives (bench/peers_families.py --old-plan) and
 * the GPU tests reach tiles the heuristic would not pick for their shapes:
 * unset or "v3": the current heuristic; "v2": the one without B multicast
 * in the m-grouped layouts (contiguous, masked, psum); "v1": the one before
 * the DeepGEMM-mirroring rules (src/bf16_plan.c, qg_bf16_problem.legacy);
 * "BMxBN" with an optional ":a" or ":b" (multicast A or B): that tile, when
 * legal for the call (else the call fails, saying why). Part of the launch
 * cache's key. Returns 0, or -1 for another value. */
static int bf16_plan_override(int *legacy, int *bm, int *bn, int *mc) {
    const char *v = qg__env_string("QGEMM_BF16_PLAN");
    *legacy = *bm = *bn = *mc = 0;
    if (!v || strcmp(v, "v3") == 0) return 0;
    if (strcmp(v, "v1") == 0 || strcmp(v, "v2") == 0) {
        *legacy = v[1] - '0';
        return 0;
    }
    char tail[8] = "";
    int used = 0;
    if (sscanf(v, "%dx%d%n", bm, bn, &used) != 2 || *bm < 1 || *bn < 1) return -1;
    if (v[used] != '\0') {
        if (strlen(v + used) > 2 || v[used] != ':') return -1;
        snprintf(tail, sizeof tail, "%s", v + used + 1);
        if (!strcmp(tail, "a")) *mc = 1;
        else if (!strcmp(tail, "b")) *mc = 2;
        else return -1;
    }
    return 0;
}

/* QGEMM_BF16_MERGE (src/env.c): merged K stages in the dense NT GEMM
 * (src/bf16_plan.c qg__bf16_merge_of): "off" 0; unset, "" or "auto" -1
 * (DeepGEMM's rule on grids of few tiles); "1".."16" that many 64-K blocks a stage. Stores the
 * value in *merge and returns 0, or -1 for anything else. */
static int bf16_merge_knob(int *merge) {
    const char *v = qg__env_string("QGEMM_BF16_MERGE");
    *merge = -1; /* unset or "": auto, the default since 2026-11-29 (h200-02-u2) */
    if (!v || !v[0]) return 0;
    *merge = 0;
    if (!strcmp(v, "off")) return 0;
    if (!strcmp(v, "auto")) {
        *merge = -1;
        return 0;
    }
    int n = 0, used = 0;
    if (v[0] < '0' || v[0] > '9' || sscanf(v, "%d%n", &n, &used) != 1 || v[used] != '\0' ||
        n < 1 || n > 16)
        return -1;
    *merge = n == 1 ? 0 : n; /* one block a stage: the unmerged kernel */
    return 0;
}

/* QGEMM_BF16_SPLITK (src/env.c): split-K across a cluster in the dense GEMM
 * (src/bf16_plan.c, kernels/qg_bf16_gemm.cuh "Split-K"): "off" 0; unset, ""
 * or "auto" -1 (the planner's rule: the default since the H200 measured it,
 * 2026-11-29-h200-08-v2: 9 dense NT rows at K 7168, cuBLAS/qgemm 0.928 ->
 * 0.996, DeepGEMM/qgemm 0.998 -> 1.071, bitwise reproducible); "2", "4" or
 * "8" that split (of the chosen tile, halved until it fits). Stores the value
 * in *splitk and returns 0, or -1 for anything else. */
static int bf16_splitk_knob(int *splitk) {
    const char *v = qg__env_string("QGEMM_BF16_SPLITK");
    *splitk = -1;
    if (!v || !v[0] || !strcmp(v, "auto")) return 0;
    if (!strcmp(v, "off")) {
        *splitk = 0;
        return 0;
    }
    if (!strcmp(v, "2") || !strcmp(v, "4") || !strcmp(v, "8")) {
        *splitk = v[0] - '0';
        return 0;
    }
    return -1;
}

/* QGEMM_BF16_KGROUPED (src/env.c): the k-grouped GEMM's organisation
 * (src/bf16_plan.h qg_bf16_problem.kgrouped; issue 49: DeepGEMM 0.91x on the
 * 4096x7168 rows): a '+'-list of at most one walk and "d2". Unset or "": m+d2,
 * the default since 2026-11-29 (H200, bench/results/2026-11-29-h200-13-w3: kineto
 * 0.953 -> 1.060x DeepGEMM over the 6 rows, worst 0.889 -> 1.026; events 0.983 ->
 * 1.043). Walks: "n" 0 (tiles walked in groups of n-blocks, no multicast: the
 * organisation before); "m" 1 (DeepGEMM's walk, groups of m-blocks);
 * "mc" 2 (and B multicast where the m-block count is even); "dg" 3
 * (DeepGEMM's rule: mc at <= 4 groups, else m). "d2" adds 4: the FP32
 * output tile in shared memory halved (two epilogue rounds), its bytes to
 * the stages. The same tile, the same wgmmas per tile and one add into D per
 * element in every mode: D is bitwise the default's. Stores it in *mode and
 * returns 0, or -1 for anything else. */
static int bf16_kgrouped_knob(int *mode) {
    const char *v = qg__env_string("QGEMM_BF16_KGROUPED");
    *mode = 1 | 4; /* m+d2 */
    if (!v) return 0; /* (unset or "") */
    *mode = 0;
    static const char *const names[] = {"n", "m", "mc", "dg", "d2"}; /* walks 0-3, then d2 */
    int walk = -1, d2 = 0, i;
    /* (no empty word: "+d2", "m+" are refused like any unknown word) */
    while ((i = qg__env_next_word(&v, "+", false, names, 5)) >= 0) {
        if (i == 4) {
            if (d2++) return -1; /* d2 once */
        } else {
            if (walk >= 0) return -1; /* one walk */
            walk = i;
        }
    }
    if (i != -1) return -1;
    *mode = (walk > 0 ? walk : 0) | (d2 ? 4 : 0);
    return 0;
}

/* QGEMM_BMK_REDUCE (src/env.c): how the reduced batch sum adds its splits:
 * unset, "" or "atomic" the atomic reduction (1: one level of FP32 vector
 * reductions, DeepGEMM's scheme, not bitwise deterministic), "tree" the fixed
 * tree of QGEMM_BMK_RADIX (0: bitwise deterministic). -1 for anything else. */
static int bmk_atomic(void) {
    const char *v = qg__env_string("QGEMM_BMK_REDUCE");
    if (!v || !v[0] || !strcmp(v, "atomic")) return 1;
    if (!strcmp(v, "tree")) return 0;
    return -1;
}

/* QGEMM_BMK_VARIANT (src/env.c): the reduced batch sum's organisation, so
 * that one process times the alternatives (bench/bmk_variants.py): unset or
 * "" the default, v5:s4 since 2026-11-29 (H200, bench/results/2026-11-29-h200-13-w3:
 * kineto 0.988 -> 1.001x DeepGEMM over test_bmk_bnk_mn's 18 rows, worst 0.799 ->
 * 0.905, events 0.994 -> 1.013; -12-w2 bmk.log, B 129 with DeepGEMM's memset counted:
 * kineto 0.972 -> 1.014, events 0.823 -> 1.030); v3:s4 before it (2026-11-28-h200-28-t3
 * bmk.log: kineto 0.999x over the 18 rows against v1's 0.891, worst 0.828 against
 * 0.624); "v1" as it was before (0); "v2" (1): a bf16 D's last arrival issues every
 * load of its region's FP32 sums before any store (v1 took one L2 round
 * trip per n8 piece: 32 in a row for a 128x128 tile, ~10 us of a 20 us
 * call), and the planner counts that epilogue as one round trip; "v3" (2):
 * v2 and 16-byte reductions (red.global.add.v4.f32), half as many as the
 * 8-byte ones (DeepGEMM's). Each may end in ":sN", N in 4..16 (4: the fewest the planner's small tiles
 * take): the atomic reduction's pipeline at most N stages deep
 * (*max_stages; else 0: as many as fit, 7 for 128x128, where DeepGEMM's
 * kernel runs 4). "v4" (3): v3's reductions; a bf16 D's sum as an FP32 D's
 * (the FP32-D kernel, its plan, into the workspace's W: no counters, no last
 * arrival), then a second launch converts W into D and zeroes W (kernels/
 * qg_bf16_gemm.cuh QG_SUM_CONVERT; H200 2026-11-29-h200-08-v2: the one-launch
 * bf16 rows at B = 129 ran 1.21-1.27x the FP32 rows' time, 0.80-0.96x
 * DeepGEMM); an FP32 D runs as under v3. "v5" (4): v4 with the reductions'
 * target prefetched into L2 (kernels/qg_bf16_gemm.cuh QG_SUM_PREFETCH: the
 * producer, once a tile's loads are issued, pulls the tile's region of the
 * FP32 D, or of W, into L2, so that the reductions at the tile's end find
 * their lines there and do not each wait for a DRAM fill: a caller's D, or
 * the kept W, has left L2 between calls; DeepGEMM's bf16 path gets it from
 * its memset just before its kernel). "v6" (5): v3 (one launch) with that
 * prefetch. An FP32 D runs v3's kernel with the prefetch under both. -1 for
 * anything else. */
static int bmk_variant(int *max_stages) {
    const char *v = qg__env_string("QGEMM_BMK_VARIANT");
    *max_stages = 0;
    if (!v) {
        *max_stages = 4;
        return 4; /* v5:s4 */
    }
    int variant = -1;
    if (!strncmp(v, "v1", 2)) variant = 0;
    else if (!strncmp(v, "v2", 2)) variant = 1;
    else if (!strncmp(v, "v3", 2)) variant = 2;
    else if (!strncmp(v, "v4", 2)) variant = 3;
    else if (!strncmp(v, "v5", 2)) variant = 4;
    else if (!strncmp(v, "v6", 2)) variant = 5;
    else return -1;
    if (v[2] == '\0') return variant;
    /* ":s" and one or two digits, nothing after */
    if (v[2] != ':' || v[3] != 's' || v[4] < '0' || v[4] > '9') return -1;
    int stages = v[4] - '0', at = 5;
    if (v[at] >= '0' && v[at] <= '9') stages = stages * 10 + (v[at++] - '0');
    if (v[at] != '\0' || stages < 4 || stages > 16) return -1;
    *max_stages = stages;
    return variant;
}

/* The batch sum's workspace for a reduction mode: total bytes, and in
 * *zero_bytes the leading bytes that must be zero before the first call
 * (every call leaves them zero). The tree: counters [ceil(m / 64) x
 * ceil(n / 16)][splits - 1] (u32, rounded up to 256 bytes) zeroed, then the
 * slots, FP32 [splits][ceil(m / 64) x 64][n], scratch. The atomic
 * reduction: counters [ceil(m / 64) x ceil(n / 16)] (rounded up to 256),
 * then FP32 W [ceil(m / 64) x 64][n], all zeroed (used by a bf16 D only).
 * One split uses none. Saturates at SIZE_MAX (unreachable sizes). */
static uint64_t sum_counter_bytes(int m, int n, int splits, int atomic) {
    const uint64_t m64 = ((uint64_t)m + 63) / 64, n16 = ((uint64_t)n + 15) / 16;
    const uint64_t per_region = atomic ? 1 : (uint64_t)(splits - 1);
    return (m64 * n16 * per_region * 4 + 255) / 256 * 256;
}

static size_t sum_ws_bytes(int m, int n, int splits, int atomic, size_t *zero_bytes) {
    if (zero_bytes) *zero_bytes = 0;
    if (m <= 0 || n <= 0 || splits <= 1) return 0;
    const uint64_t m64 = ((uint64_t)m + 63) / 64;
    const uint64_t counters = sum_counter_bytes(m, n, splits, atomic);
    const uint64_t slots = (atomic ? 1 : (uint64_t)splits) * m64 * 64 * (uint64_t)n * 4;
    if (counters + slots > (uint64_t)SIZE_MAX) return SIZE_MAX;
    if (zero_bytes) *zero_bytes = (size_t)(atomic ? counters + slots : counters);
    return (size_t)(counters + slots);
}

/* Everything about args that needs no device; fills the key. `kind` is the
 * entry point's. */
/* The batched GEMM's batch strides (elements) of A, B and D. */
typedef struct {
    int64_t a, b, d;
    int splits; /* batch sums: the split count */
    void *ws;   /* the batch sum: its workspace and its size in bytes */
    size_t ws_bytes;
} batch_strides;

static qg_status check_args(const qg_context *ctx, qg_gemm_kind kind, const qg_bf16_gemm_args *a,
                            bool pointers, const char *fn, const batch_strides *bs,
                            bf16_key *key) {
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!a) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args is NULL", fn);
    if (a->m < 0 || a->n < 0 || a->k < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->%s must be >= 0, got %d", fn,
                        a->m < 0 ? "m" : a->n < 0 ? "n" : "k",
                        a->m < 0 ? a->m : a->n < 0 ? a->n : a->k);
    if ((a->a_major != QG_MAJOR_K && a->a_major != QG_MAJOR_MN) ||
        (a->b_major != QG_MAJOR_K && a->b_major != QG_MAJOR_MN))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->%s must be QG_MAJOR_K (0) or QG_MAJOR_MN (1), got %d", fn,
                        a->a_major != QG_MAJOR_K && a->a_major != QG_MAJOR_MN ? "a_major" : "b_major",
                        (int)(a->a_major != QG_MAJOR_K && a->a_major != QG_MAJOR_MN ? a->a_major
                                                                                     : a->b_major));
    if (a->d_fp32 != 0 && a->d_fp32 != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->d_fp32 must be 0 or 1, got %d", fn,
                        a->d_fp32);
    const bool dense = kind == QG_GEMM_DENSE, kgrouped = kind == QG_GEMM_K_GROUPED;
    const bool masked = kind == QG_GEMM_GROUPED_MASKED;
    const bool sums = kind == QG_GEMM_BF16_BATCH_SUMS;
    const bool sum1 = kind == QG_GEMM_BF16_BATCH_SUM; /* the splits reduced in the kernel */
    const bool split_sum = sums || sum1;
    const bool batched = kind == QG_GEMM_BF16_BATCHED || split_sum; /* rank-3 operands */
    const bool m_grouped = !dense && !kgrouped && !batched;
    const char *need_major = NULL;
    if (m_grouped && a->a_major != QG_MAJOR_K) need_major = "args->a_major must be QG_MAJOR_K";
    else if (masked && a->b_major != QG_MAJOR_K) need_major = "args->b_major must be QG_MAJOR_K";
    else if (kgrouped && (a->a_major != QG_MAJOR_MN || a->b_major != QG_MAJOR_MN))
        need_major = "args->a_major and args->b_major must be QG_MAJOR_MN (the TN layout)";
    else if (split_sum && (a->a_major != QG_MAJOR_K || a->b_major != QG_MAJOR_K))
        need_major = "args->a_major and args->b_major must be QG_MAJOR_K (the NT layout)";
    if (need_major) return qg__fail(QG_ERROR_UNSUPPORTED, "%s: %s", fn, need_major);
    if (sums && !a->d_fp32)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: the batch sums are FP32: args->d_fp32 must be 1",
                        fn);
    if (kgrouped && !a->d_fp32)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: the k-grouped GEMM writes FP32 D: args->d_fp32 "
                        "must be 1", fn);
    if (a->c && m_grouped)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->c must be NULL (the m-grouped GEMMs do "
                        "not accumulate)", fn);
    if (a->c && batched && !sum1)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->c must be NULL (the batched GEMMs do "
                        "not accumulate)", fn);
    if (a->c && sum1 && !a->d_fp32)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: args->c must be NULL with a bf16 D (as "
                        "DeepGEMM: accumulate into an FP32 D, args->d_fp32 = 1)", fn);
    if (m_grouped && a->d_fp32)
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: the m-grouped GEMMs write bf16 D: args->d_fp32 "
                        "must be 0", fn);
    int groups = a->num_groups;
    if (dense) {
        if (groups != 0 && groups != 1)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->num_groups must be 1 (or 0) for "
                            "a dense GEMM, got %d", fn, groups);
        groups = 1;
    } else if (groups < 1 || groups > (kgrouped ? 4096 : split_sum ? (1 << 24) : 1024)) {
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: args->num_groups must be in [1, %d], got %d",
                        fn, kgrouped ? 4096 : split_sum ? (1 << 24) : 1024, groups);
    }
    int legacy, force_bm, force_bn, force_mc;
    if (bf16_plan_override(&legacy, &force_bm, &force_bn, &force_mc) != 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: QGEMM_BF16_PLAN='%.64s' is not v1, v2, v3 or a tile BMxBN[:a|:b] "
                        "(the BF16 configuration)", fn, qg__env_string("QGEMM_BF16_PLAN"));
    int merge = 0;
    if (bf16_merge_knob(&merge) != 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: QGEMM_BF16_MERGE='%.64s' is not off, auto or a number 1..16 (64-K "
                        "blocks per pipeline stage of the dense NT GEMM)", fn,
                        qg__env_string("QGEMM_BF16_MERGE"));
    int splitk = 0;
    if (bf16_splitk_knob(&splitk) != 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: QGEMM_BF16_SPLITK='%.64s' is not off, auto, 2, 4 or 8 (CTAs of a "
                        "cluster that split the dense GEMM's K)", fn,
                        qg__env_string("QGEMM_BF16_SPLITK"));
    int kg_mode = 0;
    if (kgrouped && bf16_kgrouped_knob(&kg_mode) != 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: QGEMM_BF16_KGROUPED='%.64s' is not n, m, mc or dg, optionally "
                        "+d2 (the k-grouped GEMM's tile walk, B multicast and output tile)", fn,
                        qg__env_string("QGEMM_BF16_KGROUPED"));
    int splits = 1, radix = 0, atomic = 0;
    if (sum1 && !(radix = bmk_radix()))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: QGEMM_BMK_RADIX='%.64s' is not 2, 4 or 8 (the batch sum's tree radix)",
                        fn, qg__env_string("QGEMM_BMK_RADIX"));
    if (sum1 && (atomic = bmk_atomic()) < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: QGEMM_BMK_REDUCE='%.64s' is not atomic or tree (how the batch sum "
                        "adds its splits)", fn, qg__env_string("QGEMM_BMK_REDUCE"));
    int variant = 0, max_stages = 0;
    if (sum1 && (variant = bmk_variant(&max_stages)) < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: QGEMM_BMK_VARIANT='%.64s' is not v1, v2, v3, v4, v5 or v6, optionally "
                        "with :sN "
                        "(N = 4..16 stages; the batch sum's organisation)", fn,
                        qg__env_string("QGEMM_BMK_VARIANT"));
    if (split_sum) {
        splits = bs ? bs->splits : a->expected_m; /* (qg_bf16_compile: expected_m) */
        const long long per = splits >= 1 ? ((long long)groups + splits - 1) / splits : 1;
        if (splits < 1 || splits > 1024 || splits > groups || (long long)(splits - 1) * per >= groups)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: splits must be in [1, min(1024, %d batches)] with no empty split "
                            "((splits - 1) * ceil(batches / splits) < batches), got %d", fn, groups,
                            splits);
    }
    if ((masked || kind == QG_GEMM_GROUPED_PSUM) && (a->expected_m < 0 || a->expected_m > a->m))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: expected_m must be in [0, m = %d], got %d",
                        fn, a->m, a->expected_m);
    if (a->n % 8)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: n must be a multiple of 8 (16-byte rows of D), got %d", fn, a->n);
    if (a->m > (1 << 30) || a->n > (1 << 30) || a->k > (1 << 30))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: m, n and k must be at most 2^30", fn);
    int max_k = a->k;
    if (kgrouped) {
        if (!a->ks)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: args->ks is NULL: the k-grouped GEMM needs the K of each of its "
                            "%d groups (a host array)", fn, groups);
        long long total = 0;
        max_k = 0;
        for (int g = 0; g < groups; ++g) {
            if (a->ks[g] < 0 || a->ks[g] % 64)
                return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                                "%s: args->ks[%d] must be a multiple of 64 (>= 0, 0 = an empty "
                                "group), got %d", fn, g, (int)a->ks[g]);
            total += a->ks[g];
            if (a->ks[g] > max_k) max_k = a->ks[g];
        }
        if (total != a->k)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: args->k must be the sum of args->ks (%lld), got %d", fn, total,
                            a->k);
    }
    /* strides: rows of each operand */
    const bool a_mn = a->a_major == QG_MAJOR_MN, b_mn = a->b_major == QG_MAJOR_MN;
    const int d_bytes = a->d_fp32 ? 4 : 2;
    qg_status st;
    if (batched && bs &&
        ((st = qg__check_batch_stride(bs->a, 2, fn, "batch_stride_a")) ||
         (st = qg__check_batch_stride(bs->b, 2, fn, "batch_stride_b")) ||
         (!split_sum && (st = qg__check_batch_stride(bs->d, d_bytes, fn, "batch_stride_d")))))
        return st;
    if ((st = qg__check_ld(a->lda, a_mn ? a->m : a->k, 2, fn, "lda", a_mn ? "m" : "k")) ||
        (st = qg__check_ld(a->ldb, b_mn ? a->n : a->k, 2, fn, "ldb", b_mn ? "n" : "k")) ||
        (st = qg__check_ld(a->ldd, a->n, d_bytes, fn, "ldd", "n")))
        return st;
    if (a->c && a->c != a->d &&
        (st = qg__check_ld(a->ldc, a->n, d_bytes, fn, "ldc", "n")))
        return st;
    if (a->c && a->c == a->d && a->ldc != 0 && a->ldc != a->ldd)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: args->c is args->d (in-place accumulation) but args->ldc (%lld) is not "
                        "args->ldd (%lld)", fn, (long long)a->ldc, (long long)a->ldd);
    memset(key, 0, sizeof *key);
    key->kind = (int)bf16_kind_of(kind);
    key->layout = (int)layout_of(a);
    key->m = a->m ? a->m : 1;
    key->n = a->n ? a->n : 8;
    key->k = kgrouped ? (max_k ? max_k : 64) : (a->k ? a->k : 64);
    key->num_groups = split_sum ? splits : groups;
    key->sum_batches = split_sum ? groups : 0;
    key->legacy = legacy;
    key->force_bm = force_bm, key->force_bn = force_bn, key->force_mc = force_mc;
    /* the atomic reduction: over more than one split (one split writes D
     * directly); C is put into D by the host (key without C), the radix
     * unused */
    key->sum_atomic = sum1 && atomic && splits > 1;
    key->sum_radix = sum1 && !key->sum_atomic ? radix : 0;
    /* (only where it changes the kernel or its plan: v2 the atomic reduction into a bf16 D,
     * v3 the atomic reduction; v5 and v6 v3's with the prefetch, one entry for an FP32 D) */
    key->sum_variant = !key->sum_atomic || (variant == 1 && a->d_fp32) ? 0
                       : variant == 3                               ? 2 /* v4: v3's kernel */
                       : variant >= 4                               ? 3 /* v5, v6 */
                                                                    : variant;
    key->sum_convert = key->sum_atomic && (variant == 3 || variant == 4) && !a->d_fp32;
    key->sum_max_stages = key->sum_atomic ? max_stages : 0;
    /* (only where it can change the plan: other calls keep one cache entry) */
    key->merge = key->kind == QG_BF16_DENSE && key->layout == QG_BF16_NT ? merge : 0;
    key->splitk = key->kind == QG_BF16_DENSE ? splitk : 0;
    key->kgrouped = kgrouped ? kg_mode : 0;
    key->expected_m = masked || kind == QG_GEMM_GROUPED_PSUM
                          ? (a->expected_m ? a->expected_m : (masked ? key->m : 0))
                          : 0;
    key->d_f32 = a->d_fp32;
    key->with_c = a->c != NULL && !key->sum_atomic;
    if (!pointers) return QG_SUCCESS;

    /* pointers: present, aligned, D over no input */
    const uint64_t g = (uint64_t)groups;
    const uint64_t a_rows = a_mn ? (uint64_t)a->k : (uint64_t)a->m * (masked ? g : 1);
    const uint64_t a_cols = a_mn ? (uint64_t)a->m : (uint64_t)a->k;
    const uint64_t b_rows = batched ? (b_mn ? (uint64_t)a->k : (uint64_t)a->n)
                            : b_mn ? (uint64_t)a->k * (kgrouped ? 1 : g) : (uint64_t)a->n * g;
    const uint64_t b_cols = b_mn ? (uint64_t)a->n : (uint64_t)a->k;
    const uint64_t d_rows = (uint64_t)a->m * (masked || kgrouped ? g : sums ? (uint64_t)splits : 1);
    typedef struct { const void *ptr; size_t align; const char *name; } named_ptr;
    named_ptr ptrs[5] = {{a->a, 16, "a"}, {a->b, 16, "b"}, {a->d, 16, "d"}};
    int num_ptrs = 3;
    if (kind == QG_GEMM_GROUPED_CONTIGUOUS) ptrs[num_ptrs++] = (named_ptr){a->m_indices, 4, "m_indices"};
    if (masked) ptrs[num_ptrs++] = (named_ptr){a->masked_m, 4, "masked_m"};
    if (kind == QG_GEMM_GROUPED_PSUM) ptrs[num_ptrs++] = (named_ptr){a->group_ends, 4, "group_ends"};
    if (a->c && a->c != a->d) ptrs[num_ptrs++] = (named_ptr){a->c, 16, "c"};
    const bool empty = a->m == 0 || a->n == 0;
    /* the batch sum's workspace: only a launch over more than one split uses
     * it, and the atomic reduction only for a bf16 D (an FP32 D is its own
     * target) */
    const bool need_ws = sum1 && splits > 1 && !empty && a->k > 0 && !(atomic && a->d_fp32);
    size_t need = 0, counter_bytes = 0;
    if (need_ws) {
        need = sum_ws_bytes(a->m, a->n, splits, atomic, &counter_bytes);
        if (!bs->ws)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: workspace is NULL: %d splits of m %d x n %d need %zu bytes "
                            "(qg_bf16_gemm_batch_sum_workspace_bytes), the first %zu zeroed", fn,
                            splits, a->m, a->n, need, counter_bytes);
        if ((uintptr_t)bs->ws % 16)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: workspace (%p) must be 16-byte aligned", fn, bs->ws);
        if (bs->ws_bytes < need)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: workspace_bytes must be >= %zu for m %d, n %d and %d splits "
                            "(qg_bf16_gemm_batch_sum_workspace_bytes), got %zu", fn, need, a->m,
                            a->n, splits, bs->ws_bytes);
    }
    for (int i = 0; i < num_ptrs; ++i) {
        /* an empty operand (k = 0) may be NULL, as torch's empty tensors are */
        if (!ptrs[i].ptr && a->k == 0 && (ptrs[i].name[0] == 'a' || ptrs[i].name[0] == 'b') &&
            ptrs[i].name[1] == '\0')
            continue;
        if (!ptrs[i].ptr && empty) continue;
        if ((st = qg__check_ptr(ptrs[i].ptr, ptrs[i].align, fn, ptrs[i].name))) return st;
    }
    if (!empty) {
        const uint64_t nb = batched ? g : 1;
        qg_byte_range d_range =
            qg__batched_range("d", a->d, d_rows, (uint64_t)a->n, (uint64_t)a->ldd,
                              (uint64_t)d_bytes, split_sum ? 1 : nb, batched && !split_sum ? bs->d : 0);
        qg_byte_range in[5];
        int n_in = 0;
        in[n_in++] = qg__batched_range("a", a->a, a_rows, a_cols, (uint64_t)a->lda, 2, nb,
                                       batched ? bs->a : 0);
        in[n_in++] = qg__batched_range("b", a->b, b_rows, b_cols, (uint64_t)a->ldb, 2, nb,
                                       batched ? bs->b : 0);
        if (kind == QG_GEMM_GROUPED_CONTIGUOUS)
            in[n_in++] = qg__matrix_range("m_indices", a->m_indices, 1, (uint64_t)a->m, (uint64_t)a->m, 4);
        if (masked) in[n_in++] = qg__matrix_range("masked_m", a->masked_m, 1, g, g, 4);
        if (kind == QG_GEMM_GROUPED_PSUM)
            in[n_in++] = qg__matrix_range("group_ends", a->group_ends, 1, g, g, 4);
        if (a->c && a->c != a->d)
            in[n_in++] = qg__matrix_range("c", a->c, d_rows, (uint64_t)a->n, (uint64_t)a->ldc,
                                          (uint64_t)d_bytes);
        if ((st = qg__check_no_overlap(fn, &d_range, in, n_in))) return st;
        if (need_ws) {
            /* the workspace: over no argument (it is written and read back) */
            in[n_in++] = d_range;
            const uintptr_t wb = (uintptr_t)bs->ws, we = wb + need; /* the bytes it touches */
            for (int i = 0; i < n_in; ++i)
                if (in[i].begin < in[i].end && in[i].begin < we && wb < in[i].end)
                    return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                                    "%s: workspace (bytes [%#llx, %#llx)) overlaps args->%s (bytes "
                                    "[%#llx, %#llx)): pass separate memory", fn,
                                    (unsigned long long)wb, (unsigned long long)we, in[i].name,
                                    (unsigned long long)in[i].begin,
                                    (unsigned long long)in[i].end);
        }
    }
    return QG_SUCCESS;
}

/* ---- launch -------------------------------------------------------------------- */

static CUtensorMapSwizzle swizzle_of(int row_bytes) {
    return row_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
           : row_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                             : CU_TENSOR_MAP_SWIZZLE_32B;
}

/* C into D (rows of n values of D's type), on the stream. */
static qg_status copy_c_into_d(const qg_context *ctx, const qg_bf16_gemm_args *a, uint64_t rows,
                               CUstream stream) {
    const size_t elem = a->d_fp32 ? 4 : 2;
    return qg__copy_c_into_d(ctx, a->d, (size_t)a->ldd * elem, a->c, (size_t)a->ldc * elem,
                             (size_t)a->n * elem, rows, stream);
}

/* K = 0: D = C (a separate C copied; C == D: nothing), or zeros. */
static qg_status empty_k(const qg_context *ctx, const qg_bf16_gemm_args *a, uint64_t rows,
                         CUstream stream) {
    if (a->c) return a->c == a->d ? QG_SUCCESS : copy_c_into_d(ctx, a, rows, stream);
    const size_t elem = a->d_fp32 ? 4 : 2;
    return qg__zero_d(ctx, a->d, (size_t)a->ldd * elem, (size_t)a->n * elem, rows, stream);
}

/* A validated call with m, n > 0; ctx current. */
static qg_status run(qg_context *ctx, qg_gemm_kind kind, const qg_bf16_gemm_args *a,
                     const bf16_key *key, const batch_strides *bs, CUstream stream,
                     const char *fn) {
    const bool kgrouped = kind == QG_GEMM_K_GROUPED, masked = kind == QG_GEMM_GROUPED_MASKED;
    const bool sums = kind == QG_GEMM_BF16_BATCH_SUMS;
    const bool sum1 = kind == QG_GEMM_BF16_BATCH_SUM; /* one D: the splits reduced in the kernel */
    const bool batched = kind == QG_GEMM_BF16_BATCHED || sums || sum1;
    const uint64_t g = (uint64_t)key->num_groups; /* batch sums: the splits */
    const uint64_t d_rows = (uint64_t)a->m * (masked || kgrouped || sums ? g : 1);
    if (a->k == 0 && sums) return empty_k(ctx, a, d_rows, stream); /* every slice zeroed */
    if (a->k == 0 && sum1) return empty_k(ctx, a, d_rows, stream); /* D = C, or zero */
    if (a->k == 0 && batched) { /* every batch's D zeroed */
        qg_bf16_gemm_args one = *a;
        for (uint64_t i = 0; i < g; ++i) {
            one.d = (char *)a->d + i * (uint64_t)bs->d * (a->d_fp32 ? 4 : 2);
            qg_status st = empty_k(ctx, &one, (uint64_t)a->m, stream);
            if (st != QG_SUCCESS) return st;
        }
        return QG_SUCCESS;
    }
    if (a->k == 0) return empty_k(ctx, a, d_rows, stream);

    pthread_mutex_lock(&ctx->lock);
    const qg_launch_entry *e = NULL, *e_convert = NULL;
    bf16_key gk;
    const bf16_key *rk = gemm_key_of(key, &gk);
    qg_status st = qg__launch_resolve(ctx, family_of(rk), rk, sizeof *rk, NULL, &e);
    if (st == QG_SUCCESS && key->sum_convert) {
        const bf16_convert_key ck = {1};
        st = qg__launch_resolve(ctx, &bf16_convert_family, &ck, sizeof ck, NULL, &e_convert);
    }
    const bool pdl = ctx->pdl;
    pthread_mutex_unlock(&ctx->lock);
    if (st != QG_SUCCESS) return qg__fail(st, "%s: %s", fn, qg_last_error());
    const bf16_entry_plan *bp = qg__launch_plan(e);
    const qg_bf16_plan *pl = &bp->plan;
    const bool a_mn = a->a_major == QG_MAJOR_MN, b_mn = a->b_major == QG_MAJOR_MN;
    const int d_bytes = a->d_fp32 ? 4 : 2;
    const CUtensorMapDataType BF = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;

    /* Operand maps (src/bf16_plan.h): K-major {K, rows} with a box of 64 x
     * block rows; MN-major {M or N, K rows} with 64 x 64 boxes; 128-byte
     * swizzle for both. */
    CUtensorMap map_a, map_b, map_d;
    memset(&map_d, 0, sizeof map_d);
    const uint64_t a_rows = (uint64_t)a->m * (masked ? g : 1);
    if (batched) {
        /* every map rank 3, the batch the third dimension (src/bf16_plan.h) */
        const CUtensorMapDataType d_type = a->d_fp32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : BF;
        const uint64_t db = (uint64_t)d_bytes;
        /* batch sums: A and B hold every batch, D the splits' slices, packed */
        const uint64_t nb = sums || sum1 ? (uint64_t)key->sum_batches : g;
        const uint64_t d_slice = sums ? (uint64_t)a->m * (uint64_t)a->ldd : (uint64_t)bs->d;
        if ((st = qg__encode_map(ctx, &map_a, BF, a->a, a_mn ? (uint64_t)a->m : (uint64_t)a->k,
                                 a_mn ? (uint64_t)a->k : (uint64_t)a->m, nb, (uint64_t)a->lda * 2,
                                 (uint64_t)bs->a * 2, 64, a_mn ? 64 : (uint32_t)pl->a_box_rows,
                                 CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of A")) ||
            (st = qg__encode_map(ctx, &map_b, BF, a->b, b_mn ? (uint64_t)a->n : (uint64_t)a->k,
                                 b_mn ? (uint64_t)a->k : (uint64_t)a->n, nb, (uint64_t)a->ldb * 2,
                                 (uint64_t)bs->b * 2, 64, b_mn ? 64 : (uint32_t)pl->b_box_rows,
                                 CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of B")) ||
            /* the batch sum writes D with plain stores: no map (a zeroed one is passed) */
            (!sum1 && (st = qg__encode_map(ctx, &map_d, d_type, a->d, (uint64_t)a->n, (uint64_t)a->m, g,
                                 (uint64_t)a->ldd * db, d_slice * db,
                                 (uint32_t)pl->store_cols, (uint32_t)pl->d_box_rows,
                                 swizzle_of(pl->store_cols * d_bytes), "tensor map of D"))))
            return st;
    } else if ((st = a_mn ? qg__encode_tiled(ctx, &map_a, BF, a->a, (uint64_t)a->m, (uint64_t)a->k,
                                      (uint64_t)a->lda * 2, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B,
                                      "tensor map of A")
                   : qg__encode_tiled(ctx, &map_a, BF, a->a, (uint64_t)a->k, a_rows,
                                      (uint64_t)a->lda * 2, 64, (uint32_t)pl->a_box_rows,
                                      CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of A")) ||
        (st = b_mn ? qg__encode_tiled(ctx, &map_b, BF, a->b, (uint64_t)a->n,
                                      (uint64_t)a->k * (kgrouped ? 1 : g), (uint64_t)a->ldb * 2,
                                      64, 64, CU_TENSOR_MAP_SWIZZLE_128B, "tensor map of B")
                   : qg__encode_tiled(ctx, &map_b, BF, a->b, (uint64_t)a->k,
                                      (uint64_t)a->n * g, (uint64_t)a->ldb * 2, 64,
                                      (uint32_t)pl->b_box_rows, CU_TENSOR_MAP_SWIZZLE_128B,
                                      "tensor map of B")))
        return st;
    const CUtensorMapDataType d_type = a->d_fp32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : BF;
    const CUtensorMapSwizzle d_swizzle = swizzle_of(pl->store_cols * d_bytes);
    st = batched    ? QG_SUCCESS /* encoded above */
         : kgrouped ? qg__encode_map(ctx, &map_d, d_type, a->d, (uint64_t)a->n, (uint64_t)a->m, g,
                                   (uint64_t)a->ldd * (uint64_t)d_bytes,
                                   (uint64_t)a->m * (uint64_t)a->ldd * (uint64_t)d_bytes,
                                   (uint32_t)pl->store_cols, (uint32_t)pl->d_box_rows, d_swizzle,
                                   "tensor map of D")
                  : qg__encode_tiled(ctx, &map_d, d_type, a->d, (uint64_t)a->n, d_rows,
                                     (uint64_t)a->ldd * (uint64_t)d_bytes, (uint32_t)pl->store_cols,
                                     (uint32_t)pl->d_box_rows, d_swizzle, "tensor map of D");
    if (st != QG_SUCCESS) return st;
    if (a->c && a->c != a->d && !sum1 && (st = copy_c_into_d(ctx, a, d_rows, stream)))
        return st; /* (the batch sum reads C itself) */

    const qg_launch_shape *shape = qg__launch_shape(e);
    const int cluster = shape->cluster_size;
    const long long tiles_per_group = (((long long)a->m + pl->block_m - 1) / pl->block_m) *
                                      (((long long)a->n + pl->block_n - 1) / pl->block_n);
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)a->d;
    CUdeviceptr m_indices = (CUdeviceptr)(uintptr_t)a->m_indices;
    /* psum: the group ends travel as the kernel's masked_m argument */
    CUdeviceptr masked_m = (CUdeviceptr)(uintptr_t)(kind == QG_GEMM_GROUPED_PSUM ? a->group_ends
                                                                                 : a->masked_m);
    int64_t ldd = a->ldd;
    int shape_m = a->m;
    if (!kgrouped) {
        int grid = shape->grid;
        if (kind == QG_GEMM_DENSE || kind == QG_GEMM_GROUPED_CONTIGUOUS || batched) {
            /* (split-K: a cluster of pl->splitk CTAs a tile) */
            const long long tiles =
                (tiles_per_group * (batched ? (long long)g : 1) * (pl->splitk > 1 ? pl->splitk : 1) +
                 cluster - 1) / cluster * cluster;
            if (tiles < grid) grid = (int)tiles;
        }
        if (sum1) {
            /* the workspace (sum_ws_bytes): counters first, then the slots
             * (the atomic reduction: W); none for the atomic FP32 D */
            const bool ws_used = g > 1 && !(key->sum_atomic && a->d_fp32);
            const uint64_t counter_bytes =
                ws_used ? sum_counter_bytes(a->m, a->n, (int)g, key->sum_atomic) : 0;
            CUdeviceptr counters = ws_used ? (CUdeviceptr)(uintptr_t)bs->ws : 0;
            CUdeviceptr slots = ws_used ? counters + counter_bytes : 0;
            /* the atomic reduction into an FP32 D adds to what D holds: C
             * (copied there unless C is D) or zeros */
            if (key->sum_atomic && a->d_fp32) {
                qg_status zst = !a->c ? qg__zero_d(ctx, a->d, (size_t)a->ldd * 4, (size_t)a->n * 4,
                                                   (uint64_t)a->m, stream)
                                : a->c != a->d ? copy_c_into_d(ctx, a, (uint64_t)a->m, stream)
                                               : QG_SUCCESS;
                if (zst != QG_SUCCESS) return zst;
            }
            CUdeviceptr c = (CUdeviceptr)(uintptr_t)a->c;
            int64_t ldc = a->c == a->d || a->ldc == 0 ? a->ldd : a->ldc;
            if (key->sum_convert) {
                /* v4 into a bf16 D: the FP32-D kernel's target is W [rows][N] */
                d = slots;
                ldd = a->n;
            }
            void *sum_params[] = {&map_a, &map_b, &map_d, &d, &ldd, &m_indices, &masked_m,
                                  &shape_m, &slots, &counters, &c, &ldc};
            st = qg__launch(ctx, e, grid, sum_params, stream, pdl, "BF16 batch sum");
            if (st != QG_SUCCESS || !key->sum_convert) return st;
            /* then W -> bf16 D, W zeroed: a thread per 4 sums */
            CUdeviceptr w = slots, dd = (CUdeviceptr)(uintptr_t)a->d;
            int64_t ld_out = a->ldd;
            int shape_n = a->n;
            const long long threads = (long long)a->m * (a->n / 4);
            long long cgrid = (threads + QG_BF16_CONVERT_THREADS - 1) / QG_BF16_CONVERT_THREADS;
            const int cmax = qg__launch_shape(e_convert)->grid;
            if (cgrid > cmax) cgrid = cmax;
            void *cvt_params[] = {&w, &dd, &ld_out, &shape_m, &shape_n};
            st = qg__launch(ctx, e_convert, (int)cgrid, cvt_params, stream, pdl,
                            "BF16 batch sum conversion");
            if (st == QG_SUCCESS) return st;
            /* The sum is enqueued and will add into W, which only this launch
             * would have zeroed again: the caller must know the workspace's
             * contract is broken (W [ceil(m / 64) * 64][n] FP32 after the counters). */
            const uint64_t w_bytes = (uint64_t)(a->m + 63) / 64 * 64 * (uint64_t)a->n * 4;
            return qg__fail(st, "%s: %s; the batch sum's launch before it ran: the workspace's FP32 "
                            "sum matrix (bytes [%llu, %llu) of workspace) will hold its sums, not "
                            "zeros, and D is not written: zero those bytes (or the whole workspace, "
                            "after the stream's work) before the workspace serves another call",
                            fn, qg_last_error(), (unsigned long long)counter_bytes,
                            (unsigned long long)(counter_bytes + w_bytes));
        }
        void *params[] = {&map_a, &map_b, &map_d, &d, &ldd, &m_indices, &masked_m, &shape_m};
        return qg__launch(ctx, e, grid, params, stream, pdl, "BF16 GEMM");
    }
    /* k-grouped: up to QG_BF16_KGROUP_MAX consecutive groups a launch, each
     * its K rows of A and B (a coordinate offset in the one map) into its D
     * slice; an empty group stores zeros, or adds nothing to C. */
    qg_bf16_kgroups groups;
    void *params[] = {&map_a, &map_b, &map_d, &d, &ldd, &m_indices, &masked_m, &shape_m, &groups};
    int k_begin = 0;
    for (int first = 0; first < key->num_groups; first += QG_BF16_KGROUP_MAX) {
        memset(&groups, 0, sizeof groups);
        groups.first_group = first;
        for (int i = 0; i < QG_BF16_KGROUP_MAX && first + i < key->num_groups; ++i) {
            groups.k_begin[i] = k_begin;
            groups.num_kb[i] = a->ks[first + i] / 64;
            k_begin += a->ks[first + i];
            groups.count++;
        }
        const long long tiles = tiles_per_group * groups.count;
        int grid = shape->grid;
        if ((tiles + cluster - 1) / cluster * cluster < grid)
            grid = (int)((tiles + cluster - 1) / cluster * cluster);
        if ((st = qg__launch(ctx, e, grid, params, stream, pdl, "BF16 GEMM"))) return st;
    }
    return QG_SUCCESS;
}

static qg_status gemm(qg_context *ctx, qg_gemm_kind kind, const qg_bf16_gemm_args *a,
                      const batch_strides *bs, CUstream stream, const char *fn) {
    qg__clear_error();
    bf16_key key;
    qg_status st = check_args(ctx, kind, a, true, fn, bs, &key);
    if (st != QG_SUCCESS) return st;
    if (ctx->offline)
        return qg__fail(QG_ERROR_NO_DEVICE, "%s: the context is offline (compile-only)", fn);
    if (a->m == 0 || a->n == 0) return QG_SUCCESS;
    const char *names[] = {"a", "b", "d", "m_indices", "masked_m", "group_ends", "c"};
    const void *ptrs[] = {a->k ? a->a : NULL,
                          a->k ? a->b : NULL,
                          a->d,
                          kind == QG_GEMM_GROUPED_CONTIGUOUS ? a->m_indices : NULL,
                          kind == QG_GEMM_GROUPED_MASKED ? a->masked_m : NULL,
                          kind == QG_GEMM_GROUPED_PSUM ? a->group_ends : NULL,
                          a->c != a->d ? a->c : NULL};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; ++i)
        if (ptrs[i] && (st = qg__check_device_ptr(ctx, ptrs[i], fn, names[i]))) return st;
    if (kind == QG_GEMM_BF16_BATCH_SUM && key.num_groups > 1 && a->k > 0 &&
        !(key.sum_atomic && a->d_fp32) && (st = qg__check_device_ptr(ctx, bs->ws, fn, "workspace")))
        return st;
    if ((st = qg__enter(ctx, stream, fn)) != QG_SUCCESS) return st;
    st = run(ctx, kind, a, &key, bs, stream, fn);
    qg__leave(ctx);
    return st;
}

qg_status qg_bf16_gemm(qg_context *ctx, const qg_bf16_gemm_args *args, struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_DENSE, args, NULL, stream, "qg_bf16_gemm");
}

qg_status qg_m_grouped_bf16_gemm_contiguous(qg_context *ctx, const qg_bf16_gemm_args *args,
                                            struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_GROUPED_CONTIGUOUS, args, NULL, stream, "qg_m_grouped_bf16_gemm_contiguous");
}

qg_status qg_m_grouped_bf16_gemm_psum(qg_context *ctx, const qg_bf16_gemm_args *args,
                                      struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_GROUPED_PSUM, args, NULL, stream, "qg_m_grouped_bf16_gemm_psum");
}

qg_status qg_m_grouped_bf16_gemm_masked(qg_context *ctx, const qg_bf16_gemm_args *args,
                                        struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_GROUPED_MASKED, args, NULL, stream, "qg_m_grouped_bf16_gemm_masked");
}

qg_status qg_k_grouped_bf16_gemm(qg_context *ctx, const qg_bf16_gemm_args *args,
                                 struct CUstream_st *stream) {
    return gemm(ctx, QG_GEMM_K_GROUPED, args, NULL, stream, "qg_k_grouped_bf16_gemm");
}

qg_status qg_batched_bf16_gemm(qg_context *ctx, const qg_bf16_gemm_args *args,
                               int64_t batch_stride_a, int64_t batch_stride_b,
                               int64_t batch_stride_d, struct CUstream_st *stream) {
    const batch_strides bs = {batch_stride_a, batch_stride_b, batch_stride_d, 0, NULL, 0};
    return gemm(ctx, QG_GEMM_BF16_BATCHED, args, &bs, stream, "qg_batched_bf16_gemm");
}

qg_status qg_bf16_gemm_batch_sums(qg_context *ctx, const qg_bf16_gemm_args *args,
                                  int64_t batch_stride_a, int64_t batch_stride_b, int splits,
                                  struct CUstream_st *stream) {
    const batch_strides bs = {batch_stride_a, batch_stride_b, 0, splits, NULL, 0};
    return gemm(ctx, QG_GEMM_BF16_BATCH_SUMS, args, &bs, stream, "qg_bf16_gemm_batch_sums");
}

/* The batch sum's workspace (kernels/qg_bf16_gemm.cuh, "The batch sum's
 * tree"): the counters, u32 [ceil(m / 64) x ceil(n / 16)][splits - 1],
 * rounded up to 256 bytes, then the slots, FP32 [splits][ceil(m / 64) x 64]
 * [n]. One split uses none. Saturates at SIZE_MAX (unreachable sizes). */
size_t qg_bf16_gemm_batch_sum_workspace_bytes(int m, int n, int splits, size_t *counter_bytes) {
    /* the mode of QGEMM_BMK_REDUCE (a bad value: the tree's, the larger) */
    return sum_ws_bytes(m, n, splits, bmk_atomic() == 1, counter_bytes);
}

qg_status qg_bf16_gemm_batch_sum(qg_context *ctx, const qg_bf16_gemm_args *args,
                                 int64_t batch_stride_a, int64_t batch_stride_b, int splits,
                                 void *workspace, size_t workspace_bytes,
                                 struct CUstream_st *stream) {
    const batch_strides bs = {batch_stride_a, batch_stride_b, 0, splits, workspace, workspace_bytes};
    return gemm(ctx, QG_GEMM_BF16_BATCH_SUM, args, &bs, stream, "qg_bf16_gemm_batch_sum");
}

qg_status qg_bf16_compile(qg_context *ctx, qg_gemm_kind kind, const qg_bf16_gemm_args *args,
                          qg_kernel_info *info) {
    qg__clear_error();
    const char *fn = "qg_bf16_compile";
    if (kind != QG_GEMM_DENSE && kind != QG_GEMM_GROUPED_CONTIGUOUS &&
        kind != QG_GEMM_GROUPED_MASKED && kind != QG_GEMM_GROUPED_PSUM &&
        kind != QG_GEMM_K_GROUPED && kind != QG_GEMM_BF16_BATCHED &&
        kind != QG_GEMM_BF16_BATCH_SUMS && kind != QG_GEMM_BF16_BATCH_SUM)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: kind must be QG_GEMM_DENSE, _GROUPED_CONTIGUOUS, _GROUPED_MASKED, "
                        "_GROUPED_PSUM, _K_GROUPED, QG_GEMM_BF16_BATCHED, _BATCH_SUMS or "
                        "_BATCH_SUM, got %d", fn, (int)kind);
    bf16_key key;
    qg_status st = check_args(ctx, kind, args, false, fn, NULL, &key);
    if (st != QG_SUCCESS) return st;
    bf16_entry_plan plan;
    qg_jit_result res;
    bf16_key gk;
    const bf16_key *rk = gemm_key_of(&key, &gk); /* (v4: the conversion kernel below) */
    if ((st = plan_and_compile(ctx, rk, qg_context_get_num_sms(ctx), &plan, &res)) != QG_SUCCESS)
        return qg__fail(st, "%s: %s", fn, qg_last_error());
    if (info) *info = res.info;
    if (ctx->offline) return QG_SUCCESS;
    /* On a device, also load the module and build the launch entry (loading
     * can synchronize the device: not in the first call, nor in a capture). */
    if ((st = qg__enter(ctx, NULL, fn)) != QG_SUCCESS) return st;
    pthread_mutex_lock(&ctx->lock);
    const qg_launch_entry *e;
    st = qg__launch_resolve(ctx, family_of(rk), rk, sizeof *rk, NULL, &e);
    if (st == QG_SUCCESS && key.sum_convert) {
        const bf16_convert_key ck = {1};
        st = qg__launch_resolve(ctx, &bf16_convert_family, &ck, sizeof ck, NULL, &e);
    }
    pthread_mutex_unlock(&ctx->lock);
    qg__leave(ctx);
    return st;
}
