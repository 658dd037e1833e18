/*
 * qg_hc_prenorm.cuh -- the HyperConnection pre-norm GEMM (DeepGEMM's
 * tf32_hc_prenorm_gemm) for sm_90a.
 *
 *   d[s][m][j]  = sum_{k in split s} a[m][k] * b[j][k]      (TF32 products, FP32 sums)
 *   sqr[s][m]   = sum_{k in split s} a[m][k]^2              (FP32, exact squares)
 *
 * a [M][K] bf16 (K contiguous), b [N][K] fp32 (K contiguous), d fp32 [S][M][N]
 * (row stride ldd, split stride d_split_ld), sqr fp32 [S][M] (split stride M);
 * S = QG_HC_SPLITS (1: d is [M][N], sqr [M]). Split s covers the 64-wide K
 * blocks [s*q + min(s, r), ...) of count q + (s < r), q = nkb / S, r = nkb % S,
 * as DeepGEMM splits them (a split with no K block writes zeros).
 *
 * The JIT defines, before including this file:
 *   QG_HC_N          N: 8, 16, 24 or 32 (the wgmma N and the B box rows)
 *   QG_HC_K          K, a multiple of 64
 *   QG_HC_SPLITS     S >= 1
 *   QG_HC_CLUSTER    C in {1, 2, 4, 8}: the CTAs of one cluster share one
 *                    (m-block, split) and each sums a contiguous part of its
 *                    K blocks (same rule as the splits); CTA rank r > 0 writes
 *                    its sums into slot r - 1 of rank 0's shared memory
 *                    (st.shared::cluster), a cluster barrier orders them, and
 *                    rank 0 adds the slots in rank order and stores: the sum's
 *                    order never depends on timing (bitwise reproducible)
 *   QG_HC_STAGES     pipeline depth
 *   QG_HC_MATH_WGS   1 or 2 math warpgroups (block_m 64 or 128): with two, the
 *                    N x 64 fp32 B stage (read from L2 by every CTA) serves
 *                    128 rows of A, halving B's share of the L2 traffic
 *   QG_HC_MODE       how B meets the TF32 rounding DeepGEMM's test asks for
 *                    (its reference is torch's TF32 GEMM, which rounds B to
 *                    nearest; the TF32 wgmma truncates an fp32 operand):
 *                    0 "inplace": the math threads round each B stage in
 *                      shared memory before their wgmmas (a bar.sync of all
 *                      math threads a K block: on the critical path);
 *                    1 "rounder" (default): QG_HC_CVT_WARPS extra warps round
 *                      each B stage in place as soon as its TMA lands (B has
 *                      its own barrier), while the math warps still work on
 *                      earlier stages; the math loop is the truncating one;
 *                    2 "split": the converter warps write rna_tf32(b) as two
 *                      bf16 rows, hi = its top 8 significant bits and lo = the
 *                      remaining 3 (both exact in bf16, hi + lo = rna_tf32(b)
 *                      exactly), as one K-major bf16 tile of 2N rows; each
 *                      math warpgroup issues bf16 wgmmas m64 n2N k16 with A
 *                      straight from the TMA's smem tile (no fragment loads)
 *                      and adds the hi and lo columns at the end; A's squares
 *                      from 16-byte shared loads. Same tensor time as TF32
 *                      (bf16 runs at twice its rate), products exact;
 *                    3 "trunc": no rounding (DeepGEMM's SM90 kernel does this:
 *                      diff ~1.4e-7 > 1e-8 against torch's TF32 reference);
 *                      for timing comparisons only, never planned by default
 *   QG_HC_CVT_WARPS  converter warps (modes 1 and 2: 1 to 4; 0 otherwise)
 *   QG_HC_ACCS       accumulator sets a math warpgroup (modes 0, 1, 3; default
 *                    1, the planner's unless QGEMM_HC_VARIANT asks): 2, 4, 8
 *                    keep several wgmma chains in flight (the math loop's
 *                    comment below)
 *   QG_HC_MIN_CTAS   __launch_bounds__' CTAs an SM (default 1)
 *   QG_HC_SMEM_BYTES the host's shared-memory plan (checked below)
 * M arrives at run time; grid.x = C * ceil(M / block_m) * S (cluster dims C x 1 x 1),
 * 128 * QG_HC_MATH_WGS + 32 * (1 + QG_HC_CVT_WARPS) threads: the math
 * warpgroups (64 rows each), one producer warp, the converter warps.
 *
 * Why this shape: the product is memory-bound (N <= 32: ~2*N flops per A
 * element against 2 bytes), so the kernel only has to stream A once at HBM
 * speed with enough bytes in flight; B (N x 64 fp32 per K block) comes from
 * L2. The tensor cores take TF32 with A in registers: the math threads read
 * their A fragment from the swizzled bf16 stage (16-bit loads: lane t of a
 * quad needs elements t and t + 4 of each 8-wide K group, 9.7.15.5.1),
 * widen it to fp32 (a shift: bf16 is the high half of an fp32, exact, so A
 * loses nothing to TF32) and square-sum it on the way.
 *
 * Pipeline invariants: stage s and phase advance together, once per K
 * block, identically in producer, converters and consumers. Modes 0 and 3:
 * full[s]: one producer arrival + the stage's bytes (A block_m x 64 bf16 +
 * two B boxes of N x 32 fp32). Modes 1 and 2: bfull[s]: one producer
 * arrival + B's bytes; full[s]: one producer arrival + A's bytes + one
 * arrival per converter lane (per converter warp with 3-4 warps, after a
 * __syncwarp), each after its rounded / split B writes and a
 * proxy fence (the wgmmas read them through the async proxy). empty[s]: one
 * arrival per math thread, each after the wgmma that read stage s has
 * completed (wait_group 0 of the next K block, or of the last; mode 2:
 * wait_group 1 after the next K block's commit). The converters rewrite
 * stage s only after bfull[s]'s next phase, i.e. after the producer saw
 * empty[s]. In modes 0, 1, 3 the A
 * fragments are double-buffered in registers (frag[2]): K block i's loads go
 * into frag[i & 1] while K block i-1's wgmmas (reading frag[(i-1) & 1]) run.
 *
 * DeepGEMM's SM90 kernel (sm90_tf32_hc_prenorm_gemm.cuh) is mode 3 with
 * block_m 64, block_n = N rounded up to 16, 12 stages, no clusters, one CTA
 * per (m-block, split), 128 math + 128 TMA threads: it feeds B's fp32 bits
 * to the TF32 wgmma unrounded.
 */
#ifndef QG_HC_PRENORM_CUH
#define QG_HC_PRENORM_CUH

#ifndef QG_HC_MODE
#define QG_HC_MODE 1
#endif
#ifndef QG_HC_CVT_WARPS
#define QG_HC_CVT_WARPS (QG_HC_MODE == 1 || QG_HC_MODE == 2 ? 1 : 0)
#endif

/* Mode 2's bf16 wgmma m64 n2N k16, both operands from shared memory:
 * qg_ptx.cuh's qg_wgmma_m64k16_bf16 with N = 2 * QG_HC_N (hi and lo columns),
 * K-major A and B. */
#if QG_HC_MODE == 2
#define QG_WGMMA_TRANS_A 0
#define QG_WGMMA_TRANS_B 0
#if QG_HC_N == 8
#define QG_WGMMA_N 16
#define QG_WGMMA_ACC_LIST "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define QG_WGMMA_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define QG_WGMMA_OP_DESC_A 8
#define QG_WGMMA_OP_DESC_B 9
#define QG_WGMMA_OP_SCALE_D 10
#define QG_WGMMA_OP_DESC_HI 11
#elif QG_HC_N == 16
#define QG_WGMMA_N 32
#define QG_WGMMA_ACC_LIST "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define QG_WGMMA_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define QG_WGMMA_OP_DESC_A 16
#define QG_WGMMA_OP_DESC_B 17
#define QG_WGMMA_OP_SCALE_D 18
#define QG_WGMMA_OP_DESC_HI 19
#elif QG_HC_N == 24
#define QG_WGMMA_N 48
#define QG_WGMMA_ACC_LIST "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}"
#define QG_WGMMA_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define QG_WGMMA_OP_DESC_A 24
#define QG_WGMMA_OP_DESC_B 25
#define QG_WGMMA_OP_SCALE_D 26
#define QG_WGMMA_OP_DESC_HI 27
#elif QG_HC_N == 32
#define QG_WGMMA_N 64
#define QG_WGMMA_ACC_LIST "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define QG_WGMMA_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define QG_WGMMA_OP_DESC_A 32
#define QG_WGMMA_OP_DESC_B 33
#define QG_WGMMA_OP_SCALE_D 34
#define QG_WGMMA_OP_DESC_HI 35
#else
#error "QG_HC_N must be 8, 16, 24 or 32"
#endif
#endif /* QG_HC_MODE == 2 */

/* Otherwise the generic wgmma wrappers are not called: the placeholder list. */
#include "qg_wgmma_placeholder.cuh"

/* The TF32 wgmma's operand list for N = QG_HC_N (qg_wgmma_m64k8_tf32_rs). */
#define QG_TF32_N QG_HC_N
#if QG_HC_N == 8
#define QG_TF32_ACC_LIST "{%0, %1, %2, %3}"
#define QG_TF32_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define QG_TF32_OP_A0 4
#define QG_TF32_OP_A1 5
#define QG_TF32_OP_A2 6
#define QG_TF32_OP_A3 7
#define QG_TF32_OP_B 8
#define QG_TF32_OP_SCALE_D 9
#define QG_TF32_OP_HI 10
#elif QG_HC_N == 16
#define QG_TF32_ACC_LIST "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define QG_TF32_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), \
    "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define QG_TF32_OP_A0 8
#define QG_TF32_OP_A1 9
#define QG_TF32_OP_A2 10
#define QG_TF32_OP_A3 11
#define QG_TF32_OP_B 12
#define QG_TF32_OP_SCALE_D 13
#define QG_TF32_OP_HI 14
#elif QG_HC_N == 24
#define QG_TF32_ACC_LIST "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}"
#define QG_TF32_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), \
    "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), \
    "+f"(d[10]), "+f"(d[11])
#define QG_TF32_OP_A0 12
#define QG_TF32_OP_A1 13
#define QG_TF32_OP_A2 14
#define QG_TF32_OP_A3 15
#define QG_TF32_OP_B 16
#define QG_TF32_OP_SCALE_D 17
#define QG_TF32_OP_HI 18
#elif QG_HC_N == 32
#define QG_TF32_ACC_LIST "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define QG_TF32_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), \
    "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), \
    "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define QG_TF32_OP_A0 16
#define QG_TF32_OP_A1 17
#define QG_TF32_OP_A2 18
#define QG_TF32_OP_A3 19
#define QG_TF32_OP_B 20
#define QG_TF32_OP_SCALE_D 21
#define QG_TF32_OP_HI 22
#else
#error "QG_HC_N must be 8, 16, 24 or 32"
#endif

#include "qg_ptx.cuh"

static_assert(QG_HC_K % 64 == 0 && QG_HC_K > 0, "K a multiple of 64");
static_assert(QG_HC_SPLITS >= 1, "splits");
static_assert(QG_HC_CLUSTER == 1 || QG_HC_CLUSTER == 2 || QG_HC_CLUSTER == 4 ||
                  QG_HC_CLUSTER == 8, "cluster of 1, 2, 4 or 8 CTAs");
static_assert(QG_HC_MODE >= 0 && QG_HC_MODE <= 3, "mode 0 (inplace), 1 (rounder), 2 (split), 3 (trunc)");
static_assert((QG_HC_MODE == 1 || QG_HC_MODE == 2) ? (QG_HC_CVT_WARPS >= 1 && QG_HC_CVT_WARPS <= 4)
                                                   : QG_HC_CVT_WARPS == 0,
              "1 to 4 converter warps in modes 1 and 2, none otherwise");

#ifndef QG_HC_MATH_WGS
#define QG_HC_MATH_WGS 1
#endif
/* Accumulator sets of a math warpgroup (modes 0, 1, 3): 1 = one set, the
 * K blocks' wgmmas in one chain; 2 = one set per K-block parity (block j+1
 * issued while block j runs); 4 / 8 = also 2 / 4 sets alternating within a
 * block (8: the planner gives it one math warpgroup only, for registers). */
#ifndef QG_HC_ACCS
#define QG_HC_ACCS 1
#endif
/* CTAs an SM that the registers must allow (the planner's 2 for a grid of
 * several waves of one-warpgroup CTAs, each with half the shared memory) */
#ifndef QG_HC_MIN_CTAS
#define QG_HC_MIN_CTAS 1
#endif
static_assert(QG_HC_ACCS == 1 ||
                  ((QG_HC_ACCS == 2 || QG_HC_ACCS == 4 || QG_HC_ACCS == 8) && QG_HC_MODE != 2),
              "1 accumulator set, or 2, 4 or 8 outside mode 2");
static_assert(QG_HC_MATH_WGS == 1 || QG_HC_MATH_WGS == 2, "one or two math warpgroups");
#define QG_HC_BLOCK_M (64 * QG_HC_MATH_WGS)
#define QG_HC_MATH_THREADS (128 * QG_HC_MATH_WGS)
#define QG_HC_PRODUCER_WARP (4 * QG_HC_MATH_WGS)
#define QG_HC_BLOCK_K 64
#define QG_HC_NKB (QG_HC_K / QG_HC_BLOCK_K)
#define QG_HC_ACC (QG_HC_N / 2)
/* math warpgroups + 1 producer warp + the converter warps */
#define QG_HC_THREADS (QG_HC_MATH_THREADS + 32 * (1 + QG_HC_CVT_WARPS))
#define QG_HC_SMEM_A (QG_HC_BLOCK_M * QG_HC_BLOCK_K * 2) /* rows of 128 bytes */
#define QG_HC_SMEM_BHALF (QG_HC_N * 128)                 /* N rows x 32 fp32: 1024-aligned */
#define QG_HC_SMEM_B (2 * QG_HC_SMEM_BHALF)
/* Mode 2: the bf16 hi rows 0..N-1 and lo rows N..2N-1 of 64 K each (128
 * bytes, 128-byte swizzle, as TMA would write them), 1024-aligned (N % 8 == 0) */
#define QG_HC_SMEM_BS (QG_HC_MODE == 2 ? 2 * QG_HC_N * 128 : 0)
#define QG_HC_STAGE_BYTES (QG_HC_SMEM_A + QG_HC_SMEM_B)
/* Converter arrivals on full[s] a stage: one per lane, or with 3-4 warps one
 * per warp (QGEMM_HC_VARIANT cw3 / cw4: 4 arrivals instead of 128). */
#define QG_HC_CVT_ARRIVALS (QG_HC_CVT_WARPS >= 3 ? QG_HC_CVT_WARPS : 32 * QG_HC_CVT_WARPS)
/* Barriers a stage: full, empty, and in modes 1 and 2 bfull (B's TMA alone). */
#define QG_HC_BARS (QG_HC_CVT_WARPS ? 3 : 2)
/* Partner slots in rank 0: per partner, (ACC + 2) floats per math thread,
 * stored [value][thread] (a warp's 32 stores hit 32 banks). */
#define QG_HC_SLOT_FLOATS ((QG_HC_ACC + 2) * QG_HC_MATH_THREADS)
#define QG_HC_SMEM_SLOTS ((QG_HC_CLUSTER - 1) * QG_HC_SLOT_FLOATS * 4)
#define QG_HC_SMEM_PLAN                                                                  \
    (1024 /* alignment slack */ +                                                        \
     QG_HC_STAGES * (QG_HC_SMEM_A + QG_HC_SMEM_B + QG_HC_SMEM_BS) + QG_HC_SMEM_SLOTS +     \
     QG_HC_STAGES * QG_HC_BARS * 8)
static_assert(QG_HC_SMEM_PLAN == QG_HC_SMEM_BYTES, "host and kernel shared-memory plans differ");
static_assert(QG_HC_SMEM_BYTES <= 232448, "shared memory");

/* The [first, first + count) share of `total` items for part `i` of `parts`
 * (DeepGEMM's split rule: the first total % parts parts take one more). */
QG_DEVICE void qg_hc_share(int total, int parts, int i, int &first, int &count) {
    const int q = total / parts, r = total % parts;
    first = i * q + (i < r ? i : r);
    count = q + (i < r ? 1 : 0);
}

/* Load K block's A fragments (8 wgmmas x 4 registers) from the swizzled
 * stage and add their squares. Row r's 16-byte chunk c lies at
 * r * 128 + ((c ^ (r & 7)) << 4) (128-byte swizzle); rows r0 = 16w + l/4
 * and r0 + 8 share (r & 7), so one XOR serves both. */
QG_DEVICE void qg_hc_load_frag(uint32_t (&f)[32], uint32_t a_stage, uint32_t row0, uint32_t t,
                               float &sq0, float &sq1) {
    const uint32_t base0 = a_stage + row0 * 128 + t * 2;
    const uint32_t base1 = base0 + 8 * 128;
    const uint32_t sw = row0 & 7;
#pragma unroll
    for (uint32_t i = 0; i < 8; ++i) {
        const uint32_t off = ((i ^ sw) << 4);
        f[4 * i + 0] = qg_ld_shared_u16(base0 + off) << 16;
        f[4 * i + 1] = qg_ld_shared_u16(base1 + off) << 16;
        f[4 * i + 2] = qg_ld_shared_u16(base0 + off + 8) << 16;
        f[4 * i + 3] = qg_ld_shared_u16(base1 + off + 8) << 16;
        const float x0 = __uint_as_float(f[4 * i + 0]), x2 = __uint_as_float(f[4 * i + 2]);
        const float x1 = __uint_as_float(f[4 * i + 1]), x3 = __uint_as_float(f[4 * i + 3]);
        sq0 = fmaf(x0, x0, sq0);
        sq0 = fmaf(x2, x2, sq0);
        sq1 = fmaf(x1, x1, sq1);
        sq1 = fmaf(x3, x3, sq1);
    }
}

/* The 8 wgmmas of one K block: wgmma i takes K [8i, 8i + 8), which is 32
 * bytes into B half i / 4 (rows of 128 bytes, 128-byte swizzle: the same
 * descriptor rule as the FP8 tiles, qg_wgmma_desc_sw128_lo). */
QG_DEVICE void qg_hc_issue(float (&acc)[QG_HC_ACC], const uint32_t (&f)[32], uint32_t b_desc_lo,
                           int scale_first) {
#pragma unroll
    for (uint32_t i = 0; i < 8; ++i) {
        const uint32_t desc = b_desc_lo + ((i / 4) * QG_HC_SMEM_BHALF >> 4) + ((i % 4) * 32 >> 4);
        qg_wgmma_m64k8_tf32_rs(acc, f[4 * i], f[4 * i + 1], f[4 * i + 2], f[4 * i + 3], desc,
                               i == 0 ? scale_first : 1);
    }
}

#if QG_HC_ACCS > 1
/* accumulator sets q < W += sets q + W (the several-set loop's final sum) */
template <int W>
QG_DEVICE void qg_hc_fold(float (&a)[QG_HC_ACCS][QG_HC_ACC]) {
#pragma unroll
    for (int q = 0; q < W; ++q)
#pragma unroll
        for (int j = 0; j < QG_HC_ACC; ++j) a[q][j] += a[q + W][j];
}
#endif

#if QG_HC_MODE == 1
/* Converter lane g (of 32 * CVT_WARPS) rounds 16-byte chunks g, g + G, ...
 * of the stage's fp32 B (both boxes) to TF32 in place (the layout does not
 * matter: element-wise). */
QG_DEVICE void qg_hc_round_stage(uint32_t b_stage, uint32_t g) {
#if QG_HC_CVT_WARPS >= 3
    /* Three or four converter warps (QGEMM_HC_VARIANT cw3 / cw4; four: one
     * per SM sub-partition beside the math warps): a lane's few chunks (3 or
     * 4 at N 24) all loaded before any is rounded and stored, so a stage
     * costs about one shared load's latency plus its ALU work. One warp
     * rounds 12 chunks a lane in three dependent rounds of four; the H200's
     * trunc-vs-rounder timings (2026-11-28-h200-20-families hc_ab) point at
     * that as the K block's critical path at small M and where one CTA
     * streams A alone. */
    constexpr uint32_t kChunks = QG_HC_SMEM_B / 16, kLanes = 32 * QG_HC_CVT_WARPS;
    constexpr uint32_t kIter = (kChunks + kLanes - 1) / kLanes;
    int4 v[kIter];
#pragma unroll
    for (uint32_t i = 0; i < kIter; ++i)
        if (g + i * kLanes < kChunks) v[i] = qg_ld_shared_s32x4(b_stage + (g + i * kLanes) * 16);
#pragma unroll
    for (uint32_t i = 0; i < kIter; ++i)
        if (g + i * kLanes < kChunks) {
            v[i].x = (int)qg_cvt_rna_tf32(__int_as_float(v[i].x));
            v[i].y = (int)qg_cvt_rna_tf32(__int_as_float(v[i].y));
            v[i].z = (int)qg_cvt_rna_tf32(__int_as_float(v[i].z));
            v[i].w = (int)qg_cvt_rna_tf32(__int_as_float(v[i].w));
            qg_st_shared_s32x4(b_stage + (g + i * kLanes) * 16, v[i]);
        }
#else
#pragma unroll 4
    for (uint32_t c = g; c < QG_HC_SMEM_B / 16; c += 32 * QG_HC_CVT_WARPS) {
        int4 v = qg_ld_shared_s32x4(b_stage + c * 16);
        v.x = (int)qg_cvt_rna_tf32(__int_as_float(v.x));
        v.y = (int)qg_cvt_rna_tf32(__int_as_float(v.y));
        v.z = (int)qg_cvt_rna_tf32(__int_as_float(v.z));
        v.w = (int)qg_cvt_rna_tf32(__int_as_float(v.w));
        qg_st_shared_s32x4(b_stage + c * 16, v);
    }
#endif
}
#endif

#if QG_HC_MODE == 2
/* rna_tf32(x) = hi + lo exactly: hi its top 8 significant bits (a bf16: the
 * high half of the fp32 word), lo the remaining 3 (t - hi is exact by
 * Sterbenz, and has <= 3 significant bits, so its high half holds it
 * exactly). Inf / NaN keep lo = 0 (inf - inf would make NaN of an inf). */
QG_DEVICE void qg_hc_hi_lo(uint32_t x, uint32_t &hi, uint32_t &lo) {
    const uint32_t t = qg_cvt_rna_tf32(__uint_as_float(x));
    hi = t & 0xFFFF0000u;
    const uint32_t l = __float_as_uint(__uint_as_float(t) - __uint_as_float(hi));
    lo = (t & 0x7F800000u) == 0x7F800000u ? 0u : l;
}

/* Converter lane g writes the hi / lo bf16 tile of one stage: item
 * (row j, 16-byte chunk c = K [8c, 8c + 8)) from the fp32 chunks 2c, 2c + 1
 * of box c / 4 (rows of 32 fp32, 128-byte swizzle: chunk q of row j at
 * ((q ^ (j & 7)) << 4)), to hi row j and lo row N + j, chunk c at
 * ((c ^ (j & 7)) << 4) ((N + j) & 7 == j & 7: N % 8 == 0). Eight lanes
 * of a quarter warp write the 8 chunks of one row: no bank conflict. */
QG_DEVICE void qg_hc_split_stage(uint32_t b_stage, uint32_t bs_stage, uint32_t g) {
#pragma unroll 2
    for (uint32_t it = g; it < QG_HC_N * 8; it += 32 * QG_HC_CVT_WARPS) {
        const uint32_t j = it >> 3, c = it & 7, sw = j & 7;
        const uint32_t src = b_stage + (c >> 2) * QG_HC_SMEM_BHALF + j * 128;
        const int4 v0 = qg_ld_shared_s32x4(src + ((((2 * c) & 7) ^ sw) << 4));
        const int4 v1 = qg_ld_shared_s32x4(src + ((((2 * c + 1) & 7) ^ sw) << 4));
        const uint32_t e[8] = {(uint32_t)v0.x, (uint32_t)v0.y, (uint32_t)v0.z, (uint32_t)v0.w,
                               (uint32_t)v1.x, (uint32_t)v1.y, (uint32_t)v1.z, (uint32_t)v1.w};
        uint32_t h[8], l[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) qg_hc_hi_lo(e[q], h[q], l[q]);
        /* bf16 pairs: the lower K in the low half */
        const int4 hv = make_int4((int)__byte_perm(h[0], h[1], 0x7632), (int)__byte_perm(h[2], h[3], 0x7632),
                                  (int)__byte_perm(h[4], h[5], 0x7632), (int)__byte_perm(h[6], h[7], 0x7632));
        const int4 lv = make_int4((int)__byte_perm(l[0], l[1], 0x7632), (int)__byte_perm(l[2], l[3], 0x7632),
                                  (int)__byte_perm(l[4], l[5], 0x7632), (int)__byte_perm(l[6], l[7], 0x7632));
        const uint32_t off = (c ^ sw) << 4;
        qg_st_shared_s32x4(bs_stage + j * 128 + off, hv);
        qg_st_shared_s32x4(bs_stage + (QG_HC_N + j) * 128 + off, lv);
    }
}

/* Squares of A for mode 2: math thread tw of its warpgroup sums half hf of
 * row rr (K [32 hf, 32 hf + 32): chunks 4 hf .. 4 hf + 3, four 16-byte
 * loads; a quarter warp = 4 rows x 2 halves hits 8 distinct chunks). Even
 * and odd elements into two sums (shorter dependency chains). */
QG_DEVICE void qg_hc_sqr_chunk(uint32_t row_addr, uint32_t sw, uint32_t hf, float &sq0, float &sq1) {
#pragma unroll
    for (uint32_t q = 0; q < 4; ++q) {
        const int4 v = qg_ld_shared_s32x4(row_addr + (((4 * hf + q) ^ sw) << 4));
        const uint32_t w[4] = {(uint32_t)v.x, (uint32_t)v.y, (uint32_t)v.z, (uint32_t)v.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float x0 = __uint_as_float(w[e] << 16), x1 = __uint_as_float(w[e] & 0xFFFF0000u);
            sq0 = fmaf(x0, x0, sq0);
            sq1 = fmaf(x1, x1, sq1);
        }
    }
}
#endif

extern "C" __global__ void __launch_bounds__(QG_HC_THREADS, QG_HC_MIN_CTAS)
qg_tf32_hc_prenorm_gemm_kernel(const __grid_constant__ qg_tensor_map tmap_a, /* bf16 K x M, box 64 x block_m, SW128 */
                     const __grid_constant__ qg_tensor_map tmap_b, /* fp32 K x N, box 32 x N, SW128 */
                     float *__restrict__ d, int64_t ldd, int64_t d_split_ld,
                     float *__restrict__ sqr, int shape_m) {
    extern __shared__ __align__(1024) unsigned char qg_smem_raw[];
    unsigned char *smem = qg_smem_raw + ((1024 - (qg_smem_addr(qg_smem_raw) & 1023)) & 1023);
    unsigned char *smem_a = smem;
    unsigned char *smem_b = smem_a + QG_HC_STAGES * QG_HC_SMEM_A;
    unsigned char *smem_bs = smem_b + QG_HC_STAGES * QG_HC_SMEM_B; /* mode 2 only */
    float *slots = (float *)(smem_bs + QG_HC_STAGES * QG_HC_SMEM_BS);
    uint64_t *full = (uint64_t *)((unsigned char *)slots + QG_HC_SMEM_SLOTS);
    uint64_t *empty = full + QG_HC_STAGES;
#if QG_HC_CVT_WARPS
    uint64_t *bfull = empty + QG_HC_STAGES; /* modes 1 and 2: B's TMA alone */
#endif

    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int rank = (int)(blockIdx.x % QG_HC_CLUSTER);
    const int m_blocks = (shape_m + QG_HC_BLOCK_M - 1) / QG_HC_BLOCK_M;
    const int mb = (int)(blockIdx.x / QG_HC_CLUSTER) % m_blocks;
    const int split = (int)(blockIdx.x / QG_HC_CLUSTER) / m_blocks;
    int split_first, split_count, kb_first, kb_count;
    qg_hc_share(QG_HC_NKB, QG_HC_SPLITS, split, split_first, split_count);
    qg_hc_share(split_count, QG_HC_CLUSTER, rank, kb_first, kb_count);
    kb_first += split_first;

    if (warp == QG_HC_PRODUCER_WARP && qg_elect_one()) {
        qg_tma_prefetch_descriptor(&tmap_a);
        qg_tma_prefetch_descriptor(&tmap_b);
        for (int s = 0; s < QG_HC_STAGES; ++s) {
            /* full: the producer's arrival (+ bytes), and each converter lane's */
            qg_mbarrier_init(&full[s], 1 + QG_HC_CVT_ARRIVALS);
            qg_mbarrier_init(&empty[s], QG_HC_MATH_THREADS);
#if QG_HC_CVT_WARPS
            qg_mbarrier_init(&bfull[s], 1);
#endif
        }
        qg_fence_mbarrier_init();
    }
    /* Every CTA of the cluster has started (and its barriers are live)
     * before any partner writes into it. */
    if (QG_HC_CLUSTER > 1)
        qg_cluster_sync();
    else
        __syncthreads();
    qg_grid_dependency_wait();

    float acc[QG_HC_ACC];
#pragma unroll
    for (int j = 0; j < QG_HC_ACC; ++j) acc[j] = 0.0f;
    float sq0 = 0.0f, sq1 = 0.0f;

    if (warp == QG_HC_PRODUCER_WARP) {
        /* ---- producer: one elected lane issues the TMA loads ---- */
        if (qg_elect_one()) {
            int s = 0;
            uint32_t phase = 0;
            for (int i = 0; i < kb_count; ++i) {
                qg_mbarrier_wait(&empty[s], phase ^ 1);
                const int k = (kb_first + i) * QG_HC_BLOCK_K;
                unsigned char *bs = smem_b + s * QG_HC_SMEM_B;
#if QG_HC_CVT_WARPS
                /* B first, on its own barrier: the converters start on it
                 * while A (from HBM) is still in flight. */
                qg_mbarrier_arrive_expect_tx(&bfull[s], QG_HC_SMEM_B);
                qg_tma_load_2d(bs, &tmap_b, &bfull[s], k, 0);
                qg_tma_load_2d(bs + QG_HC_SMEM_BHALF, &tmap_b, &bfull[s], k + 32, 0);
                qg_mbarrier_arrive_expect_tx(&full[s], QG_HC_SMEM_A);
                qg_tma_load_2d(smem_a + s * QG_HC_SMEM_A, &tmap_a, &full[s], k,
                               mb * QG_HC_BLOCK_M);
#else
                qg_mbarrier_arrive_expect_tx(&full[s], QG_HC_STAGE_BYTES);
                qg_tma_load_2d(smem_a + s * QG_HC_SMEM_A, &tmap_a, &full[s], k,
                               mb * QG_HC_BLOCK_M);
                qg_tma_load_2d(bs, &tmap_b, &full[s], k, 0);
                qg_tma_load_2d(bs + QG_HC_SMEM_BHALF, &tmap_b, &full[s], k + 32, 0);
#endif
                if (++s == QG_HC_STAGES) { s = 0; phase ^= 1; }
            }
        }
        __syncwarp();
    }
#if QG_HC_CVT_WARPS
    else if (warp > QG_HC_PRODUCER_WARP) {
        /* ---- converters: B of stage s once its TMA landed, then their
         * generic-proxy writes made visible to the wgmmas (async proxy)
         * before each lane's arrival on full[s] ---- */
        const uint32_t g = (warp - QG_HC_PRODUCER_WARP - 1) * 32 + lane;
        const uint32_t b0 = qg_smem_addr(smem_b);
#if QG_HC_MODE == 2
        const uint32_t bs0 = qg_smem_addr(smem_bs);
#endif
        int s = 0;
        uint32_t phase = 0;
        for (int i = 0; i < kb_count; ++i) {
            qg_mbarrier_wait(&bfull[s], phase);
#if QG_HC_MODE == 1
            qg_hc_round_stage(b0 + s * QG_HC_SMEM_B, g);
#else
            qg_hc_split_stage(b0 + s * QG_HC_SMEM_B, bs0 + s * QG_HC_SMEM_BS, g);
#endif
            qg_fence_proxy_async_shared();
#if QG_HC_CVT_WARPS >= 3
            /* each lane's writes fenced to the async proxy, the warp's
             * lanes ordered by __syncwarp, then one release arrival a warp
             * (as a TMA store follows a fence and a barrier) */
            __syncwarp();
            if (lane == 0) qg_mbarrier_arrive(&full[s]);
#else
            qg_mbarrier_arrive(&full[s]);
#endif
            if (++s == QG_HC_STAGES) { s = 0; phase ^= 1; }
        }
    }
#endif
    else {
#if QG_HC_MODE == 2
        /* ---- math warpgroup, mode 2: bf16 wgmmas m64 n2N k16 from shared
         * memory (A: this warpgroup's 64 rows of the TMA tile; B: the hi /
         * lo tile), four a K block; A's squares from 16-byte loads.
         * wait_group 1 after K block i's commit: K block i-1's wgmmas are
         * done, so its stage is released. ---- */
        const uint32_t wg = warp / 4, tw = threadIdx.x % 128, rr = tw / 2, hf = tw % 2;
        const uint32_t a_row = qg_smem_addr(smem_a) + (wg * 64 + rr) * 128;
        const uint32_t a_lo0 = qg_wgmma_desc_sw128_lo(smem_a) + ((wg * 64 * 128) >> 4);
        const uint32_t bs_lo0 = qg_wgmma_desc_sw128_lo(smem_bs);
        float acc2[QG_HC_N];
#pragma unroll
        for (int j = 0; j < QG_HC_N; ++j) acc2[j] = 0.0f;
        int s = 0;
        uint32_t phase = 0;
        int prev_s = 0;
        for (int i = 0; i < kb_count; ++i) {
            qg_mbarrier_wait(&full[s], phase);
#pragma unroll
            for (int j = 0; j < QG_HC_N; ++j) qg_fence_operand(acc2[j]);
            qg_wgmma_fence();
            const uint32_t a_lo = a_lo0 + ((s * QG_HC_SMEM_A) >> 4);
            const uint32_t b_lo = bs_lo0 + ((s * QG_HC_SMEM_BS) >> 4);
#pragma unroll
            for (uint32_t kk = 0; kk < 4; ++kk) /* K [16 kk, 16 kk + 16): 32 bytes */
                qg_wgmma_m64k16_bf16(acc2, a_lo + kk * 2, b_lo + kk * 2, 1);
            qg_wgmma_commit();
#pragma unroll
            for (int j = 0; j < QG_HC_N; ++j) qg_fence_operand(acc2[j]);
            qg_hc_sqr_chunk(a_row + s * QG_HC_SMEM_A, rr & 7, hf, sq0, sq1);
            qg_wgmma_wait1();
            if (i > 0) qg_mbarrier_arrive(&empty[prev_s]);
            prev_s = s;
            if (++s == QG_HC_STAGES) { s = 0; phase ^= 1; }
        }
        qg_wgmma_wait0();
#pragma unroll
        for (int j = 0; j < QG_HC_N; ++j) qg_fence_operand(acc2[j]);
        if (kb_count > 0) qg_mbarrier_arrive(&empty[prev_s]);
        /* d = hi columns + lo columns (groups jj and jj + N / 8 of 8
         * columns sit at the same positions of the same thread) */
#pragma unroll
        for (int jj = 0; jj < QG_HC_N / 8; ++jj)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[4 * jj + e] = acc2[4 * jj + e] + acc2[4 * (jj + QG_HC_N / 8) + e];
        /* row rr's two halves: sq0 of the even lane holds the row */
        sq0 += sq1;
        sq0 += __shfl_xor_sync(0xffffffffu, sq0, 1);
        sq1 = 0.0f;
#elif QG_HC_ACCS > 1
        /* ---- math warpgroup, several accumulator sets (QG_HC_ACCS 2, 4, 8) ----
         * K block j's wgmmas accumulate into set (j & 1) (and with P =
         * ACCS / 2 > 1 sets a block, wgmma i of the block into set
         * P (j & 1) + i % P), so the tensor
         * pipe always has independent chains: at N <= 32 one m64nNk8 wgmma
         * is a few cycles of work against a much longer accumulate
         * latency, and the one-set loop waits for all 8 of block j before
         * it issues block j + 1. Here block j + 1 issues while block j
         * runs: wait_group 1 at the top of iteration j + 1 only waits for
         * block j - 1 (the last reader of frag[(j + 1) & 1] and of the
         * sets block j + 1 writes), which also releases its stage. The
         * sets are added in a fixed order at the end (bitwise reproducible). */
        const uint32_t row0 = warp * 16 + lane / 4, t = lane % 4; /* warp 4..7: rows 64.. */
        const uint32_t a0 = qg_smem_addr(smem_a);
        const uint32_t b_lo0 = qg_wgmma_desc_sw128_lo(smem_b);
        constexpr int SETS_PER_BLOCK = QG_HC_ACCS / 2;
        uint32_t frag[2][32];
        float accs[QG_HC_ACCS][QG_HC_ACC];
#pragma unroll
        for (int q = 0; q < QG_HC_ACCS; ++q)
#pragma unroll
            for (int j = 0; j < QG_HC_ACC; ++j) {
                accs[q][j] = 0.0f;
                /* pinned here: a zero sunk into the loop would define a
                 * set while the other set's wgmmas run (ptxas then
                 * serializes every wgmma) */
                qg_fence_operand(accs[q][j]);
            }
        int s = 0;
        uint32_t phase = 0;
        int prev_s = 0, prev2_s = 0;
        for (int i = 0; i < kb_count; i += 2) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                if (i + h < kb_count) {
                    /* K block i+h-2 done (i+h-1 may still run): frag[h] and
                     * sets of parity h are free, its stage is released
                     * (before waiting on full: with 2 stages, s is its stage). */
                    qg_wgmma_wait1();
                    if (i + h >= 2) qg_mbarrier_arrive(&empty[prev2_s]);
                    qg_mbarrier_wait(&full[s], phase);
#if QG_HC_MODE == 0
                    { /* as in the one-set loop below */
                        uint32_t *bw = (uint32_t *)(smem_b + s * QG_HC_SMEM_B);
                        for (int e = (int)threadIdx.x; e < QG_HC_SMEM_B / 4; e += QG_HC_MATH_THREADS)
                            bw[e] = qg_cvt_rna_tf32(__uint_as_float(bw[e]));
                        qg_fence_proxy_async_shared();
                        qg_named_barrier(1, QG_HC_MATH_THREADS);
                    }
#endif
                    qg_hc_load_frag(frag[h], a0 + s * QG_HC_SMEM_A, row0, t, sq0, sq1);
#pragma unroll
                    for (int q = 0; q < SETS_PER_BLOCK; ++q)
#pragma unroll
                        for (int j = 0; j < QG_HC_ACC; ++j) qg_fence_operand(accs[h * SETS_PER_BLOCK + q][j]);
                    qg_wgmma_fence();
                    const uint32_t b_lo = b_lo0 + (s * QG_HC_SMEM_B >> 4);
#pragma unroll
                    for (uint32_t w = 0; w < 8; ++w) {
                        const uint32_t desc = b_lo + ((w / 4) * QG_HC_SMEM_BHALF >> 4) + ((w % 4) * 32 >> 4);
                        qg_wgmma_m64k8_tf32_rs(accs[h * SETS_PER_BLOCK + (w % SETS_PER_BLOCK)],
                                               frag[h][4 * w], frag[h][4 * w + 1],
                                               frag[h][4 * w + 2], frag[h][4 * w + 3], desc, 1);
                    }
                    qg_wgmma_commit();
#pragma unroll
                    for (int q = 0; q < SETS_PER_BLOCK; ++q)
#pragma unroll
                        for (int j = 0; j < QG_HC_ACC; ++j) qg_fence_operand(accs[h * SETS_PER_BLOCK + q][j]);
                    prev2_s = prev_s;
                    prev_s = s;
                    if (++s == QG_HC_STAGES) { s = 0; phase ^= 1; }
                }
            }
        }
        qg_wgmma_wait0();
#pragma unroll
        for (int q = 0; q < QG_HC_ACCS; ++q)
#pragma unroll
            for (int j = 0; j < QG_HC_ACC; ++j) qg_fence_operand(accs[q][j]);
        if (kb_count > 1) qg_mbarrier_arrive(&empty[prev2_s]);
        if (kb_count > 0) qg_mbarrier_arrive(&empty[prev_s]);
        /* a fixed pairwise tree: set q += set q + W, W = ACCS / 2 .. 1
         * (constant widths: a loop over W left accs in local memory) */
#if QG_HC_ACCS >= 8
        qg_hc_fold<4>(accs);
#endif
#if QG_HC_ACCS >= 4
        qg_hc_fold<2>(accs);
#endif
        qg_hc_fold<1>(accs);
#pragma unroll
        for (int j = 0; j < QG_HC_ACC; ++j) acc[j] = accs[0][j];
        sq0 += __shfl_xor_sync(0xffffffffu, sq0, 1);
        sq1 += __shfl_xor_sync(0xffffffffu, sq1, 1);
        sq0 += __shfl_xor_sync(0xffffffffu, sq0, 2);
        sq1 += __shfl_xor_sync(0xffffffffu, sq1, 2);
#else
        /* ---- math warpgroup ---- */
        const uint32_t row0 = warp * 16 + lane / 4, t = lane % 4; /* warp 4..7: rows 64.. */
        const uint32_t a0 = qg_smem_addr(smem_a);
        const uint32_t b_lo0 = qg_wgmma_desc_sw128_lo(smem_b);
        uint32_t frag[2][32];
        int s = 0;
        uint32_t phase = 0;
        int prev_s = 0;
        /* Two K blocks per iteration so that each register set is named
         * statically (ptxas keeps a set live until its wgmma completes). */
        for (int i = 0; i < kb_count; i += 2) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                if (i + h < kb_count) {
                    qg_mbarrier_wait(&full[s], phase);
#if QG_HC_MODE == 0
                    /* B to TF32 rounded to nearest, as cuBLAS converts FP32
                     * operands (DeepGEMM's test compares with torch's TF32
                     * GEMM; the wgmma would truncate B's low 13 mantissa
                     * bits: diff 1.4e-7 against that reference, 2026-11-28).
                     * The math threads round the stage in place, make their
                     * generic-proxy writes visible to wgmma's async proxy,
                     * then wait for one another (A comes from bf16: exact). */
                    {
                        uint32_t *bw = (uint32_t *)(smem_b + s * QG_HC_SMEM_B);
                        for (int e = (int)threadIdx.x; e < QG_HC_SMEM_B / 4; e += QG_HC_MATH_THREADS)
                            bw[e] = qg_cvt_rna_tf32(__uint_as_float(bw[e]));
                        qg_fence_proxy_async_shared();
                        qg_named_barrier(1, QG_HC_MATH_THREADS);
                    }
#endif
                    qg_hc_load_frag(frag[h], a0 + s * QG_HC_SMEM_A, row0, t, sq0, sq1);
                    /* K block i+h-1's wgmmas are done: release its stage. */
                    qg_wgmma_wait0();
                    if (i + h > 0) qg_mbarrier_arrive(&empty[prev_s]);
#pragma unroll
                    for (int j = 0; j < QG_HC_ACC; ++j) qg_fence_operand(acc[j]);
                    qg_wgmma_fence();
                    qg_hc_issue(acc, frag[h], b_lo0 + (s * QG_HC_SMEM_B >> 4), 1);
                    qg_wgmma_commit();
#pragma unroll
                    for (int j = 0; j < QG_HC_ACC; ++j) qg_fence_operand(acc[j]);
                    prev_s = s;
                    if (++s == QG_HC_STAGES) { s = 0; phase ^= 1; }
                }
            }
        }
        qg_wgmma_wait0();
#pragma unroll
        for (int j = 0; j < QG_HC_ACC; ++j) qg_fence_operand(acc[j]);
        if (kb_count > 0) qg_mbarrier_arrive(&empty[prev_s]);
        /* The quad's four lanes hold disjoint K columns of rows r0, r0 + 8. */
        sq0 += __shfl_xor_sync(0xffffffffu, sq0, 1);
        sq1 += __shfl_xor_sync(0xffffffffu, sq1, 1);
        sq0 += __shfl_xor_sync(0xffffffffu, sq0, 2);
        sq1 += __shfl_xor_sync(0xffffffffu, sq1, 2);
#endif
    }

#if QG_HC_CLUSTER > 1
    /* ---- cluster reduction: partners write, rank 0 adds in rank order ---- */
    if (rank > 0 && warp < QG_HC_PRODUCER_WARP) {
        const uint32_t slot = qg_map_cluster(slots + (rank - 1) * QG_HC_SLOT_FLOATS, 0) +
                              threadIdx.x * 4;
#pragma unroll
        for (int j = 0; j < QG_HC_ACC; ++j)
            qg_st_shared_cluster_f32(slot + j * QG_HC_MATH_THREADS * 4, acc[j]);
        qg_st_shared_cluster_f32(slot + QG_HC_ACC * QG_HC_MATH_THREADS * 4, sq0);
        qg_st_shared_cluster_f32(slot + (QG_HC_ACC + 1) * QG_HC_MATH_THREADS * 4, sq1);
    }
    qg_cluster_sync();
    if (rank > 0) return;
    if (warp < QG_HC_PRODUCER_WARP) {
        for (int r = 0; r < QG_HC_CLUSTER - 1; ++r) {
            const float *sl = slots + r * QG_HC_SLOT_FLOATS + threadIdx.x;
#pragma unroll
            for (int j = 0; j < QG_HC_ACC; ++j) acc[j] += sl[j * QG_HC_MATH_THREADS];
            sq0 += sl[QG_HC_ACC * QG_HC_MATH_THREADS];
            sq1 += sl[(QG_HC_ACC + 1) * QG_HC_MATH_THREADS];
        }
    }
#endif
    qg_launch_dependents();
    if (warp >= QG_HC_PRODUCER_WARP) return;

    /* ---- epilogue: plain stores (D is M x N x 4 bytes, tiny beside A) ---- */
    const int r0 = mb * QG_HC_BLOCK_M + (int)(warp * 16 + lane / 4), r1 = r0 + 8;
    const int c = (int)(lane % 4) * 2;
    float *ds = d + (int64_t)split * d_split_ld;
    if (r0 < shape_m) {
#pragma unroll
        for (int j = 0; j < QG_HC_N / 8; ++j)
            *(float2 *)(ds + (int64_t)r0 * ldd + 8 * j + c) = make_float2(acc[4 * j], acc[4 * j + 1]);
#if QG_HC_MODE != 2
        if (lane % 4 == 0) sqr[(int64_t)split * shape_m + r0] = sq0;
#endif
    }
    if (r1 < shape_m) {
#pragma unroll
        for (int j = 0; j < QG_HC_N / 8; ++j)
            *(float2 *)(ds + (int64_t)r1 * ldd + 8 * j + c) =
                make_float2(acc[4 * j + 2], acc[4 * j + 3]);
#if QG_HC_MODE != 2
        if (lane % 4 == 0) sqr[(int64_t)split * shape_m + r1] = sq1;
#endif
    }
#if QG_HC_MODE == 2
    {   /* the even lane of a pair holds row rr = (thread % 128) / 2 of its warpgroup */
        const int rq = mb * QG_HC_BLOCK_M + (int)((warp / 4) * 64 + (threadIdx.x % 128) / 2);
        if (lane % 2 == 0 && rq < shape_m) sqr[(int64_t)split * shape_m + rq] = sq0;
    }
#endif
}

#endif /* QG_HC_PRENORM_CUH */
