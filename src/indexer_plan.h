/*
 * indexer_plan.h -- launch plans and JIT sources of the indexer / HC family
 * (kernels/qg_hc_prenorm.cuh, kernels/qg_mqa_logits.cuh).
 *
 * Pure C: no driver, no NVRTC, no library state. Each planner checks a
 * problem, chooses the compile-time configuration and the launch (grid,
 * block, cluster, dynamic shared memory) from the problem and the device's
 * SM count, and each source writer turns a plan into the short program the
 * JIT compiles (#defines + #include). Errors: the planners return 0, or -1
 * with *why set to a static message naming the rule that failed.
 *
 * Not yet wired into the library's launch path (the lead's shared launch
 * path will call these); the tensor maps each kernel expects are listed
 * beside its plan.
 */
#ifndef QG_INDEXER_PLAN_H
#define QG_INDEXER_PLAN_H

#include <stddef.h>

/* The opt-in shared memory of one sm_90 block (bytes). */
#define QG_IDX_SMEM_MAX 232448

/* ---- tf32_hc_prenorm_gemm ----------------------------------------------- */

/*
 * Tensor maps (cuTensorMapEncodeTiled, L2 promotion 256B, OOB fill zeros):
 *   tmap_a: BFLOAT16 (or UINT16), rank 2, dims {K, M}, strides {lda * 2},
 *           box {64, block_m}, swizzle 128B
 *   tmap_b: FLOAT32, rank 2, dims {K, N}, strides {ldb * 4}, box {32, N},
 *           swizzle 128B
 * Kernel "qg_tf32_hc_prenorm_gemm_kernel"(tmap_a, tmap_b, float *d, int64 ldd,
 *   int64 d_split_ld, float *sqr, int m); d needs 8-byte aligned rows (ldd
 *   even); sqr is [splits][m] dense.
 */
/* How the kernel meets torch's TF32 rounding of B (qg_hc_prenorm.cuh's
 * QG_HC_MODE): the math threads round each B stage in place (inplace);
 * converter warps round it as it lands (rounder); converter warps split it
 * into bf16 hi + lo and the math runs bf16 wgmmas from shared memory
 * (split); no rounding, DeepGEMM's way, failing its own test's 1e-8 (trunc:
 * timing comparisons only). */
#define QG_HC_MODE_INPLACE 0
#define QG_HC_MODE_ROUNDER 1
#define QG_HC_MODE_SPLIT 2
#define QG_HC_MODE_TRUNC 3
#define QG_HC_MODE_DEFAULT QG_HC_MODE_ROUNDER

typedef struct {
    int m, n, k, num_splits;   /* the problem (num_splits 1 = the unsplit form) */
    int math_wgs;              /* 1 or 2 math warpgroups: block_m = 64 * math_wgs */
    int block_m;
    int cluster;               /* CTAs sharing one (m-block, split) along K */
    int stages;
    int mode;                  /* QG_HC_MODE_*: how B is rounded to TF32 (qg_hc_prenorm.cuh) */
    int cvt_warps;             /* converter warps (modes rounder and split), else 0 */
    int accs;                  /* accumulator sets a math warpgroup: 1, 2, 4 or 8 (QG_HC_ACCS) */
    int min_ctas;              /* CTAs an SM the registers must allow (QG_HC_MIN_CTAS) */
    int grid_x, block_x;       /* grid (grid_x, 1, 1), cluster (cluster, 1, 1) */
    size_t smem_bytes;         /* dynamic shared memory (cuFuncSetAttribute) */
} qg_hc_plan;

/* Planner options beyond the rounding mode (QGEMM_HC_VARIANT, A/B runs;
 * all zero = the default plan):
 *   accs  0 or 1 = one accumulator set; 2, 4 or 8 sets (modes other than
 *         split; 8 with one math warpgroup, else 4)
 *   fit   1 = clusters only where they fit one wave (GPCs of 14-18 SMs leave
 *         SMs out of clusters of 4 and 8), one math warpgroup where two
 *         would leave SMs idle, and for grids of several waves either the
 *         whole shared memory (two warpgroups) or registers for two CTAs an
 *         SM (one)
 *   wgs   0 = choose, 1 or 2 forced
 *   kmin  0 = 8: the fewest K blocks a CTA of a cluster keeps (2 or 4: more
 *         CTAs on the latency-bound small-M rows)
 *   cvt   0 = the mode's converter warps (QGEMM_HC_MODE's :N, else 1); 2, 3
 *         or 4 = that many in the modes that have them (rounder, split): 4
 *         where the CTA has one math warpgroup, 3 with two (416 threads
 *         would cap the registers at 152, below acc4's need at N 32) */
typedef struct {
    int accs, fit, wgs, kmin, cvt;
} qg_hc_opts;

int qg__hc_plan(int m, int n, int k, int num_splits, int num_sms, qg_hc_plan *out,
                const char **why);
/* The same with a variant forced (A/B measurements, QGEMM_HC_MODE):
 * force_wgs 0 (choose), 1 or 2; mode < 0 for the default; cvt_warps 0 for
 * the default (1 where the mode has converter warps), else 1 to 4. */
int qg__hc_plan_variant(int m, int n, int k, int num_splits, int num_sms, int force_wgs, int mode,
                        int cvt_warps, qg_hc_plan *out, const char **why);
/* The same with the options (NULL = all zero). */
int qg__hc_plan_opts(int m, int n, int k, int num_splits, int num_sms, int mode, int cvt_warps,
                     const qg_hc_opts *opts, qg_hc_plan *out, const char **why);
/* Writes the JIT source; returns its length, or -1 if cap is too small. */
int qg__hc_source(char *buf, size_t cap, const qg_hc_plan *plan);

/* ---- fp8_mqa_logits ------------------------------------------------------ */

/*
 * Tensor maps:
 *   tmap_q:  UINT8, rank 2, dims {D, seq_len * H}, strides {D}, box {D, 128},
 *            swizzle D bytes (32B / 64B / 128B)
 *   tmap_kv: UINT8, rank 2, dims {D, seq_len_kv}, strides {ld_kv}, box
 *            {D, block_kv}, swizzle D bytes
 *   tmap_kv_scale: FLOAT32, rank 1, dims {seq_len_kv}, box {block_kv}, no swizzle
 * Kernel "qg_mqa_logits_kernel"(tmap_q, tmap_kv, tmap_kv_scale,
 *   const float *weights, int64 ld_weights, const int *ks, const int *ke, void *logits,
 *   int64 ld_logits (elements), int seq_len, int seq_len_kv).
 * logits rows need 16-byte alignment (ld_logits * elem_size % 16 == 0).
 */
typedef struct {
    int seq_len, seq_len_kv, heads, head_dim;
    int compressed;            /* 1: logits[i][j - ks[i]] (DeepGEMM's max_seqlen_k > 0) */
    int clean;                 /* 1: -inf outside [ks, ke) (not with compressed) */
    int logits_bf16;           /* 0: fp32 logits */
    int block_q;               /* 128 / heads */
    int math_wgs;              /* math warpgroups; block_kv = 64 * math_wgs */
    int block_kv;
    int kv_stages;
    int pipe;                  /* QG_MQA_PIPE: 1 = two accumulator sets a warpgroup */
    int stage_w;               /* QG_MQA_STAGE_W: 1 = the producer warp stages q's weights / ranges */
    int variant;               /* QG_MQA_VARIANT_* */
    int grid_x, block_x;
    size_t smem_bytes;
} qg_mqa_plan;

/* The kernel organisations, for A/B measurements (QGEMM_MQA_VARIANT; the
 * planner picks qg__mqa_default_variant's, DEEP4 since 2026-11-29; PIPE
 * before):
 *   LOCKSTEP2: 2 math warpgroups, one accumulator set (the 2026-11-28 path)
 *   DEEP4:     4 math warpgroups, one set each, one producer and one ring of
 *              256-key stages shared by all four (DeepGEMM's organisation),
 *              setmaxnreg 32 / 112, PIPE's epilogue: bitwise PIPE's logits
 *              (the former LOCKSTEP4, whose 40 / 112 overdrew the register
 *              pool); each q block's weights and key ranges staged in shared
 *              memory by the producer warp (QG_MQA_STAGE_W)
 *   PIPE:      2 math warpgroups, two sets (next block's wgmma under the epilogue)
 *   DEEP4L:    DEEP4 with the math loading weights and ranges from global
 *              memory at each q block itself (as PIPE does) */
enum {
    QG_MQA_VARIANT_LOCKSTEP2 = 0,
    QG_MQA_VARIANT_DEEP4 = 1,
    QG_MQA_VARIANT_PIPE = 2,
    QG_MQA_VARIANT_DEEP4L = 3,
    QG_MQA_VARIANT_COUNT = 4
};
/* "lockstep2", "deep4", "pipe", "deep4l"; NULL for another value */
const char *qg__mqa_variant_name(int variant);

/* The organisation qg__mqa_plan plans and QGEMM_MQA_VARIANT unset selects
 * (one place to change the default). */
int qg__mqa_default_variant(void);

int qg__mqa_plan(int seq_len, int seq_len_kv, int heads, int head_dim, int compressed, int clean,
                 int logits_bf16, int num_sms, qg_mqa_plan *out, const char **why);
/* Re-plans *p (from qg__mqa_plan) as `variant`; 0, or -1 for an unknown one. */
int qg__mqa_plan_variant(qg_mqa_plan *p, int variant);
int qg__mqa_source(char *buf, size_t cap, const qg_mqa_plan *plan);

/* ---- fp8_paged_mqa_logits and its schedule ------------------------------ */

/*
 * Tensor maps (cache = the fused [blocks][64][1][D + 4] bytes, block_stride
 * bytes apart, a multiple of 16):
 *   tmap_q:  UINT8, rank 2, dims {D, batch * next_n * H}, strides {D}, box
 *            {D, next_n * H}, swizzle D bytes
 *   tmap_kv: UINT8, rank 3, dims {D, 64, blocks}, strides {D, block_stride},
 *            box {D, 64, 1}, swizzle D bytes
 *   tmap_sc: FLOAT32, rank 2 at cache + 64 * D, dims {64, blocks}, strides
 *            {block_stride}, box {64, 1}, no swizzle
 * Kernels: "qg_paged_mqa_schedule_kernel"(const int *context_lens, int batch,
 *   int next_n, int max_context_len, int num_ctas, int *schedule) with grid 1,
 *   block 1024 (schedule: (num_ctas + 1) x 2 int32, the plan's grid_x as
 *   num_ctas), then "qg_paged_mqa_logits_kernel"(tmap_q, tmap_kv, tmap_sc,
 *   const float *weights, int64 ld_weights, const int *context_lens [batch][next_n],
 *   const int *block_table, int64 block_table_ld, const int *schedule,
 *   void *logits, int64 ld_logits, int batch, int max_context_len). Both read
 *   device data only: the pair captures in a CUDA graph.
 */
typedef struct {
    int batch, next_n, heads, head_dim;
    int clean, logits_bf16;
    int stages;                /* the kv ring's stages */
    int max_stages;            /* the most that fit (QGEMM_PMQA_VARIANT's :sS, up to 24) */
    int math_wgs;              /* QG_PMQA_MATH_WGS: 2 or 4 (block_x = 128 (math_wgs + 1)) */
    int stride_walk;           /* QG_PMQA_STRIDE_WALK: a math warpgroup walks its own units only */
    int split;                 /* QG_PMQA_SPLIT: a producer warp per math warpgroup (split4) */
    int math112;               /* QG_PMQA_MATH112: setmaxnreg 32 / 112 (split4r112w, N 128) */
    int math_tail;             /* QG_PMQA_MATH_TAIL: the math warps write the clean tail (split4r112w, N 128) */
    int lean;                  /* QG_PMQA_LEAN: split4r112w's unit loop (all 32 weights at N 128) */
    int run;                   /* QG_PMQA_RUN: the run loop (split4r112x, p, u) */
    int paddr;                 /* QG_PMQA_PADDR: the producers' shared addresses from one base (split4r112p) */
    int uni;                   /* QG_PMQA_UNI: the walk's control values broadcast from lane 0 (split4r112u) */
    int wreg;                  /* QG_PMQA_WREG: how many of a thread's N / 4 weights are registers (split4r112w) */
    int ctas;                  /* QG_PMQA_CTAS: CTAs per SM (grid_x = ctas * num_sms) */
    int num_sms;               /* the schedule's ranges (one per SM) */
    int variant;               /* QG_PMQA_VARIANT_* */
    int grid_x, block_x;       /* logits kernel */
    size_t smem_bytes;
    int sched_block_x;         /* schedule kernel: grid 1 */
    size_t schedule_bytes;     /* the schedule buffer the caller provides */
} qg_pmqa_plan;

/* The organisations of the paged kernel (QGEMM_PMQA_VARIANT). SHARED2: 2
 * math warpgroups fed by one producer warp through one kv ring (the
 * 2026-11-28 default at 128 columns); DUAL2: SHARED2 at two CTAs per SM
 * (each half of an SM: every other unit of the schedule's range, half the
 * shared memory, <= 80 registers; N = next_n x H = 128 as two N = 64 wgmma
 * passes, QG_PMQA_NSPLIT; the 2026-11-28 default below 128 columns); SPLIT4:
 * DeepGEMM's organisation, 4 math warpgroups each fed by its own producer
 * warp and kv ring (QG_PMQA_SPLIT, the strided walk QG_PMQA_STRIDE_WALK: a
 * math warpgroup steps over its own units only; weights read from L1);
 * SPLIT4R112W (the default since 2026-11-29): split4 with the weights in
 * registers (QG_PMQA_WREG), at N = 128 setmaxnreg 32 / 112
 * (QG_PMQA_MATH112), the clean form's -inf tail written by the math warps
 * (QG_PMQA_MATH_TAIL) and the lean unit loop (QG_PMQA_LEAN) so all 32
 * weights fit; SPLIT4R112X (issue 50, A/B): split4r112w with the run loop
 * (QG_PMQA_RUN: one compare a unit instead of the walk's settle()); SPLIT4R112P: split4r112x with the producer warps' unit
 * issued from one shared base register (QG_PMQA_PADDR); SPLIT4R112U:
 * split4r112p with the walk's control values broadcast from lane 0, so the
 * stage, descriptors and barrier addresses are uniform-register values
 * (QG_PMQA_UNI). Every organisation computes the same sums in the same order:
 * bitwise the same logits. Removed after the H200 A/B of 2026-11-29
 * (bench/HISTORY.md; tag exp/pmqa-organisations-2026-11-29): shared4,
 * shared2s, shared4s, dual2s, shared3, split4r, split4r112, split4r112m; split4r112y
 * (tag exp/session-v-unpaid-2026-11-29); and pipe2 (tag exp/pmqa-pipe2-2026-11-28). The values are dense (names and
 * loops index by them); they live only inside the process. */
enum {
    QG_PMQA_VARIANT_SHARED2 = 0,
    QG_PMQA_VARIANT_DUAL2 = 1,
    QG_PMQA_VARIANT_SPLIT4 = 2,
    QG_PMQA_VARIANT_SPLIT4R112W = 3,
    QG_PMQA_VARIANT_SPLIT4R112X = 4,
    QG_PMQA_VARIANT_SPLIT4R112P = 5,
    QG_PMQA_VARIANT_SPLIT4R112U = 6,
    QG_PMQA_VARIANT_COUNT = 7
};
/* The default organisation for next_n x heads = N columns: DUAL2 below N =
 * 128, SHARED2 at 128 (H200, 2026-11-28, bench/results/2026-11-28-h200-28-t3
 * paged-dual2: dual2 ran 10-17% faster than shared2 on the six rows of N 32
 * and 64, 15-17% slower on the two of N 128, whose two N = 64 passes read the
 * weights from L1). */
int qg__pmqa_default_variant(int next_n, int heads);

int qg__pmqa_plan(int batch, int next_n, int heads, int head_dim, int clean, int logits_bf16,
                  int num_sms, qg_pmqa_plan *out, const char **why);
/* Re-plans *p (from qg__pmqa_plan) as QG_PMQA_VARIANT_* `variant`; 0, or -1. */
int qg__pmqa_plan_variant(qg_pmqa_plan *p, int variant);
/* Re-plans *p (from qg__pmqa_plan_variant) with `stages` kv stages (A/B of the
 * ring's depth, QGEMM_PMQA_VARIANT's ":sS"): 0 keeps the plan's; else at most
 * max_stages, a multiple of its math warpgroups (2 or 4: even, as the kernel
 * asks). 0, or -1. */
int qg__pmqa_plan_stages(qg_pmqa_plan *p, int stages);
/* The variant's name ("shared2", "dual2", "split4", "split4r112w", "split4r112x",
 * "split4r112p", "split4r112u"), or NULL. */
const char *qg__pmqa_variant_name(int variant);
int qg__pmqa_source(char *buf, size_t cap, const qg_pmqa_plan *plan);
int qg__pmqa_schedule_source(char *buf, size_t cap);

#endif /* QG_INDEXER_PLAN_H */
