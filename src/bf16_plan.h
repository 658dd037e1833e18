/*
 * bf16_plan.h -- the BF16 GEMM family's planner and JIT source writer
 * (kernels/qg_bf16_gemm.cuh). Pure C: no context, no driver, no device
 * query; the SM count and the shared-memory limit are data.
 *
 * Host side of a launch of a plan p (for the launch path to wire in):
 *   grid      num_sms rounded down to a multiple of p->cluster (persistent;
 *             split-K: tiles x p->splitk CTAs at most, a cluster a tile),
 *             cluster dimension p->cluster (1, 2; split-K 2, 4 or 8), block p->num_threads,
 *             dynamic shared memory p->smem_bytes (opt-in attribute).
 *   kernel    "qg_bf16_gemm_kernel"(tmap_a, tmap_b, tmap_d, d, ldd,
 *             m_indices, masked_m, shape_m [, qg_bf16_kgroups by value when
 *             kind == K_GROUPED]); see the kernel header for each field.
 *   tensor maps (all CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 but an FP32 D):
 *     A K-major  dims {K, rows} (rows: M; masked G * M_max), stride lda * 2,
 *                box {64, p->a_box_rows}, SWIZZLE_128B
 *     A MN-major dims {M, K} (k-grouped: sum K), stride lda * 2,
 *                box {64, 64}, SWIZZLE_128B (lda a multiple of 8)
 *     B K-major  dims {K, G * N}, stride ldb * 2, box {64, p->b_box_rows},
 *                SWIZZLE_128B
 *     B MN-major dims {N, G * K} (k-grouped: sum K), stride ldb * 2,
 *                box {64, 64}, SWIZZLE_128B
 *     D          dims {N, rows} (masked G * M_max), stride ldd * d_bytes,
 *                box {p->store_cols, p->d_box_rows}, swizzle of
 *                p->store_cols * d_bytes bytes (128B / 64B / 32B);
 *                k-grouped rank 3 {N, M, G}, box {store_cols, d_box_rows, 1}
 *     batched    every map rank 3, the batch its third dimension (batch
 *                stride * elem bytes, any multiple of 16): A {K, M, G} or
 *                {M, K, G}, B {K, N, G} or {N, K, G}, D {N, M, G}; boxes as
 *                above with a third extent of 1
 *     batch sums A {K, M, sum_batches}, B {K, N, sum_batches} (K-major, batch
 *                strides), D FP32 {N, M, splits} (slices M * ldd apart)
 *     batch sum  (reduced: QG_BF16_BATCH_SUM) A and B as the batch sums; no
 *                map of D (a zeroed map is passed): the kernel
 *                "qg_bf16_bmn_bnk_mn_gemm_impl" takes after shape_m the
 *                workspace's slots and counters, C and ldc
 *   with_c     the kernel adds into D by TMA reduce-add (split-K: each
 *              element's owner reads D, adds, stores): D = C + A B with
 *              C != D needs C copied into D before the launch.
 */
#ifndef QG_BF16_PLAN_H
#define QG_BF16_PLAN_H

#include <stddef.h>

typedef enum {
    QG_BF16_NT = 0, /* A [M][K], B [N][K] (both K-major) */
    QG_BF16_NN = 1, /* A [M][K], B [K][N] (B N-major) */
    QG_BF16_TN = 2, /* A [K][M] (M-major), B [N][K] */
    QG_BF16_TT = 3  /* A [K][M], B [K][N] */
} qg_bf16_layout;

/* QG_KIND of the kernel (the FP8 scheduler's numbering). */
typedef enum {
    QG_BF16_DENSE = 0,
    QG_BF16_CONTIGUOUS = 1,
    QG_BF16_MASKED = 2,
    QG_BF16_PSUM = 3,
    QG_BF16_K_GROUPED = 4,
    QG_BF16_BATCHED = 5, /* G GEMMs of one shape, any batch strides (rank-3 maps) */
    QG_BF16_BATCH_SUMS = 6, /* partial sums over batches: num_groups splits of sum_batches */
    QG_BF16_BATCH_SUM = 7   /* the same splits reduced in the kernel (QG_KIND 6 with
                               QG_SUM_REDUCE): one D, bf16 or FP32, + FP32 C */
} qg_bf16_kind;

static inline int qg__bf16_a_mn_major(qg_bf16_layout l) { return l == QG_BF16_TN || l == QG_BF16_TT; }
static inline int qg__bf16_b_mn_major(qg_bf16_layout l) { return l == QG_BF16_NN || l == QG_BF16_TT; }

typedef struct {
    int m;            /* rows (masked: M_max per group; k-grouped: M) */
    int n;
    int k;            /* K (k-grouped: the largest group's K, for the heuristic) */
    qg_bf16_layout layout;
    qg_bf16_kind kind;
    int num_groups;   /* 1 for dense */
    int expected_m;   /* masked / psum: rows per group to plan for (0: m, psum m / G) */
    int d_f32;        /* 1: FP32 D */
    int with_c;       /* 1: D += A B (reduce-add; dense and k-grouped) */
                      /* batched: num_groups is the batch count; batch sums: the splits */
    int sum_batches;  /* batch sums: the batches summed (0 otherwise) */
    int sum_radix;    /* the reduced batch sum: its tree's radix, 2, 4 or 8 (0: 2) */
    int legacy;       /* 0: the current heuristic (QGEMM_BF16_PLAN unset or v3);
                         1: as it was before the DeepGEMM-mirroring rules
                         (QGEMM_BF16_PLAN=v1: one process times both);
                         2: those rules without B multicast in the m-grouped
                         layouts (QGEMM_BF16_PLAN=v2, the heuristic of branch bf16h) */
    int sum_atomic;   /* the reduced batch sum: 1 = atomic reduction (QG_SUM_ATOMIC), no tree */
    int sum_variant;  /* the reduced batch sum's organisation (QGEMM_BMK_VARIANT): 0 = v1, as
                         it was; 1 = v2: a bf16 D's last arrival loads its region's sums at
                         once (QG_SUM_EPI_BATCHED), its cost planned as one round trip;
                         2 = v3: v2 and 16-byte reductions (QG_SUM_RED_V4); 3 = v3 and
                         the reductions' target prefetched into L2 (QG_SUM_PREFETCH;
                         QGEMM_BMK_VARIANT=v5 or v6) */
    int sum_max_stages; /* the atomic reduced batch sum: at most this many pipeline stages
                         (QGEMM_BMK_VARIANT's :sN; 0: no cap) */
    int num_sms;      /* the device's SM count */
    int smem_limit;   /* the device's opt-in shared memory per block (232448 on H100/H200) */
    int merge;        /* merged K stages (QGEMM_BF16_MERGE; kernels/qg_bf16_gemm.cuh
                         QG_BF16_MERGE): 0 off (every stage one 64-K block, as before),
                         -1 auto (DeepGEMM's rule: a one-warpgroup tile with >= 10 stages
                         merges stages / 5 of them), n > 0 n sub-blocks per stage; only
                         dense NT takes a merged plan (else ignored), capped so that >= 3
                         stages remain and at the 64-K blocks of K */
    int splitk;       /* split-K across a cluster (QGEMM_BF16_SPLITK; kernels/qg_bf16_gemm.cuh
                         QG_BF16_SPLITK): 0 off, -1 auto (NT, few tiles, long K: the split and
                         tile of least estimated time, qg__bf16_select), n in {2, 4, 8} that
                         split of the chosen tile (halved until K and shared memory take it);
                         dense only, without multicast (else ignored) */
    int kgrouped;     /* the k-grouped GEMM's organisation (QGEMM_BF16_KGROUPED; issue 49):
                         0 as it was (tiles walked in groups of n-blocks, no multicast);
                         1 "m": DeepGEMM's walk, groups of m-blocks (QG_RASTER_M, the
                         group size by DeepGEMM's L2 rule); 2 "mc": that walk and B
                         multicast over pairs of m-blocks where the m-block count is
                         even; 3 "dg": DeepGEMM's rule, mc at <= 4 groups, else m; plus
                         4 ("+d2"): the FP32 output tile in shared memory halved (two
                         epilogue rounds; QG_D_HALF), its bytes to the stages. The tile
                         is the default's in every mode; other kinds ignore it */
                      /* (last: bench/dg_bf16_heuristic.py mirrors the fields above) */
} qg_bf16_problem;

typedef struct {
    int block_m, block_n, block_k; /* block_k 64 */
    int num_stages;     /* pipeline stages (merged: of merge x 64 K each) */
    int multicast;      /* 0 none, 1 A (pairs along N), 2 B (pairs along M) */
    int cluster;        /* 1 or 2 */
    int swizzle_group;  /* scheduler swizzle group (blocks) */
    int store_cols;     /* columns of one TMA store chunk of D */
    int smem_bytes;     /* dynamic shared memory of the launch */
    int producer_regs, math_regs; /* setmaxnreg split */
    int num_math_wgs, num_threads;
    int a_box_rows, b_box_rows;   /* K-major boxes' rows (MN-major: 64) */
    int d_box_rows;               /* rows of D's TMA box: one math warpgroup's */
    int grid;                     /* persistent grid: num_sms rounded to the cluster */
    double est_cost;              /* the heuristic's estimate (relative) */
    int merge;                    /* 64-K sub-blocks per pipeline stage (1: not merged) */
    int splitk;                   /* CTAs of a cluster that split one tile's K (1: none;
                                     then cluster == splitk, multicast 0; last:
                                     bench/dg_bf16_heuristic.py mirrors the fields) */
    int raster_m;                 /* 1: tiles walked in groups of m-blocks without multicast
                                     (QG_RASTER_M; k-grouped under QGEMM_BF16_KGROUPED);
                                     0: as before (B multicast walks so anyway) */
    int d_half;                   /* 1: the FP32 output tile in shared memory holds half of
                                     block_n, stored in two rounds (QG_D_HALF; k-grouped
                                     under QGEMM_BF16_KGROUPED's d2): its other half's bytes
                                     go to the pipeline's stages */
} qg_bf16_plan;

/* The k-grouped kernel's last parameter, by value (the kernel's
 * qg_bf16_kgroups): group slot i sums K rows [k_begin[i], k_begin[i] +
 * 64 num_kb[i]) of A [sum K][M] and B [sum K][N] into D slice
 * first_group + i; more groups than QG_BF16_KGROUP_MAX take several launches.
 * Every group's K must be a multiple of 64 (a K block never straddles two
 * groups); a group of K = 0 stores zeros (adds nothing with C). */
#define QG_BF16_KGROUP_MAX 128
typedef struct {
    int k_begin[QG_BF16_KGROUP_MAX];
    int num_kb[QG_BF16_KGROUP_MAX];
    int count;
    int first_group;
} qg_bf16_kgroups;

/* Shared memory of a configuration (the kernel's QG_SMEM_TOTAL); the
 * reduced batch sum (QG_BF16_BATCH_SUM) has no output tile:
 * qg__bf16_smem_bytes_of(kind, ...). */
int qg__bf16_smem_bytes(int block_m, int block_n, int num_stages, int d_f32);
int qg__bf16_smem_bytes_of(qg_bf16_kind kind, int block_m, int block_n, int num_stages, int d_f32);
/* ... with stages of `merge` 64-K sub-blocks each */
int qg__bf16_smem_bytes_merged(qg_bf16_kind kind, int block_m, int block_n, int num_stages,
                               int d_f32, int merge);

/* ... and split-K's barriers (splitk > 1: QG_BF16_SPLITK) */
int qg__bf16_smem_bytes_sk(qg_bf16_kind kind, int block_m, int block_n, int num_stages, int d_f32,
                           int merge, int splitk);

/* The sub-blocks per stage a plan of this problem gets (1: not merged) for a
 * tile of block_m rows whose unmerged pipeline has `stages` stages. */
int qg__bf16_merge_of(const qg_bf16_problem *p, int block_m, int block_n, int stages);

/* Whether (block_m, block_n, multicast) is legal for p (non-zero) and, when
 * not, why (a static string) in *why if why is not NULL. */
int qg__bf16_legal(const qg_bf16_problem *p, int block_m, int block_n, int multicast,
                  const char **why);

/* Complete a configuration whose block_m, block_n and multicast are set:
 * stages (the most up to 16 that fit), store chunk, registers, boxes, grid.
 * Returns 0, or -1 when it is not legal or does not fit (nothing written). */
int qg__bf16_complete(const qg_bf16_problem *p, int block_m, int block_n, int multicast,
                     qg_bf16_plan *out);

/* qg__bf16_complete with the tile's K split over a cluster of `splitk` CTAs
 * (2, 4 or 8; 1: qg__bf16_complete): dense, no multicast, every CTA at
 * least one K step, the partners' partial sums fitting the stages.
 * Returns 0, or -1 (nothing written). */
int qg__bf16_complete_split(const qg_bf16_problem *p, int block_m, int block_n, int multicast,
                            int splitk, qg_bf16_plan *out);

/* A forced split (p->splitk > 0) of a completed plan: *pl's tile, without
 * multicast, split by p->splitk, halved until it fits
 * (qg__bf16_complete_split); unchanged when none does or p->splitk <= 0. */
void qg__bf16_force_split(const qg_bf16_problem *p, qg_bf16_plan *pl);

/* The heuristic: the legal configuration of least estimated time (fewest
 * waves of the fullest last wave, operand bytes per SM, most stages).
 * Returns 0, or -1 for a problem it cannot plan (bad arguments). */
int qg__bf16_select(const qg_bf16_problem *p, qg_bf16_plan *out);

/* Write the JIT source of plan `pl` for problem `p` into buf (cap bytes):
 * a comment naming the variant, the kernel's #defines and
 * #include "qg_bf16_gemm.cuh". Returns the length, or -1 when it does not fit. */
int qg__bf16_kernel_source(char *buf, size_t cap, const qg_bf16_problem *p, const qg_bf16_plan *pl);

/* The batch sum's conversion pass (QGEMM_BMK_VARIANT=v4; kernels/qg_bf16_gemm.cuh
 * QG_SUM_CONVERT): its JIT source, one text for every shape (src/bf16_gemm.c
 * compiles it; tests/bf16/compile_gen.c checks it). */
const char *qg__bf16_convert_source(void);

#endif /* QG_BF16_PLAN_H */
