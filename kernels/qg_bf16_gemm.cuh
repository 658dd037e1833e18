/*
 * qg_bf16_gemm.cuh -- BF16 GEMM for sm_90a in every operand layout (NT, NN,
 * TN, TT), dense, m-grouped (contiguous, masked, psum) and k-grouped: one
 * kernel, compile-time switches.
 *
 *   D[m, n] (+)= sum_k A[m, k] * B[n, k]        (A, B bf16; D bf16 or FP32)
 *
 * No promotion step: the tensor cores accumulate the whole K range in FP32
 * wgmma registers; block_k is 64 (one 128-byte swizzle atom of bf16).
 *
 * The JIT (src/bf16_plan.c qg__bf16_kernel_source) defines, before including
 * this file:
 *   QG_KIND            0 dense, 1 contiguous (m_indices), 2 masked, 3 psum,
 *                      4 k-grouped (qg_scheduler.cuh; 4: the groups' K ranges
 *                      in the qg_bf16_kgroups parameter), 5 batched (G
 *                      independent GEMMs of the same shape, each operand a
 *                      rank-3 tensor map {inner, rows, G} with any batch
 *                      stride: tiles walked (batch, m-block, n-block) as the
 *                      k-grouped kind walks its groups; no multicast, no C),
 *                      6 batch sums (partial sums over batches: split g of
 *                      QG_NUM_GROUPS sums batches [g * QG_SPLIT_BATCHES, ..)
 *                      of QG_SUM_BATCHES, A_b B_b^T each, K of every batch
 *                      after the previous, into FP32 D slice g; A and B
 *                      K-major rank-3 maps {K, rows, batches}; no multicast,
 *                      no C; the caller sums the slices; with QG_SUM_REDUCE
 *                      the kernel sums them itself, below)
 *   QG_SUM_REDUCE      kind 6 only: 1 = the splits' partial sums are reduced
 *                      in the kernel by a fixed tree (deterministic, no CTA
 *                      waits for another) into D [M][ldd] (bf16 or FP32,
 *                      + FP32 C when QG_WITH_C): no TMA store, no shared
 *                      output tile (see "The batch sum's tree")
 *   QG_SUM_RADIX       the tree's radix, 2, 4 or 8 (default 2): children per
 *                      node; the last of a node's arrivals sums them all
 *   QG_SUM_ATOMIC      with QG_SUM_REDUCE: 1 = no tree; every split adds its
 *                      sum into an FP32 target with vector reductions
 *                      (red.global.add.v2.f32: one level, no CTA reads
 *                      another's partial sum; not bitwise deterministic).
 *                      FP32 D: the target is D itself (the host put C or
 *                      zeros there first); bf16 D: an FP32 workspace kept
 *                      zero between calls, whose last arrival per region
 *                      converts it into D and zeroes it again (see "The
 *                      batch sum's atomic reduction")
 *   QG_SUM_EPI_BATCHED with QG_SUM_ATOMIC and a bf16 D (QGEMM_BMK_VARIANT=v2):
 *                      the last arrival issues all its loads of W before any
 *                      store (one L2 round trip, not one per n8 piece)
 *   QG_SUM_RED_V4      with QG_SUM_ATOMIC (QGEMM_BMK_VARIANT=v3): 16-byte
 *                      reductions (red.global.add.v4.f32, lane pairs exchange
 *                      two values first), half as many as v1's 8-byte ones
 *   QG_SUM_PREFETCH    with QG_SUM_RED_V4 (QGEMM_BMK_VARIANT=v5, v6): once a
 *                      tile's loads are issued, the producer lane prefetches the
 *                      tile's region of the reductions' target into L2 (see
 *                      "The batch sum's L2 prefetch")
 *   QG_A_MN_MAJOR      0: A stored [M][K] (K contiguous); 1: A stored [K][M]
 *                      (M contiguous: the "T" of TN / TT; dense and k-grouped)
 *   QG_B_MN_MAJOR      0: B stored [N][K]; 1: B stored [K][N] (the second "N"
 *                      of NN / TN... DeepGEMM's naming: NT = both K-major)
 *   QG_D_F32           0: D bf16; 1: D FP32
 *   QG_WITH_C          1: D += the product by TMA reduce-add
 *                      (cp.reduce.async.bulk.tensor .add: the SMs never read
 *                      D); D = C + A*B with C != D is the host's copy of C
 *                      into D first (as DeepGEMM does). Dense and k-grouped.
 *   QG_SHAPE_N/K       problem N and K (baked in; k-grouped: K is the run-time
 *                      groups' and QG_SHAPE_K is unused); M arrives at run time
 *   QG_NUM_GROUPS      G (1 for dense and k-grouped)
 *   QG_BLOCK_M/N       tile (block_m 64 / 128 / 256; block_n a multiple of 16,
 *                      FP32 D of 8, up to 256; MN-major B: of 64)
 *   QG_NUM_STAGES      pipeline depth
 *   QG_BF16_MERGE      64-K sub-blocks per pipeline stage (default 1;
 *                      QGEMM_BF16_MERGE): a stage holds QG_BF16_MERGE
 *                      consecutive [rows][64 K] swizzle tiles of A and of B,
 *                      one full and one empty barrier, one expect_tx for all
 *                      its boxes, all its wgmmas issued before one wait.
 *                      Dense NT only (K-major A and B; see "Merged stages")
 *   QG_MULTICAST       0 none, 1 A (pairs along N), 2 B (pairs along M:
 *                      dense, or per tile in the contiguous, masked and psum
 *                      kinds, QG_PAIR_TILES); QG_CLUSTER 1 or 2
 *   QG_BF16_SPLITK     S = 1 (default), 2, 4 or 8 (QGEMM_BF16_SPLITK): split
 *                      K across a cluster of QG_CLUSTER = S CTAs that share
 *                      one output tile, the partial sums reduced through
 *                      distributed shared memory. Dense, no multicast; with
 *                      or without merged stages (see "Split-K")
 *   QG_SWIZZLE_GROUP   scheduler group size (blocks)
 *   QG_RASTER_M        1: the k-grouped kind walks its tiles in groups of
 *                      QG_SWIZZLE_GROUP m-blocks (DeepGEMM's order) without
 *                      multicast (QGEMM_BF16_KGROUPED; default 0: groups of
 *                      n-blocks); with QG_MULTICAST 2 the k-grouped kind
 *                      shares B over pairs of m-blocks (see the static_asserts)
 *   QG_STORE_COLS      columns of one TMA store chunk of D (128, 64 or 32 bytes)
 *   QG_SMEM_BYTES      the host's shared-memory plan (checked below)
 *   QG_PRODUCER_REGS / QG_MATH_REGS   the setmaxnreg register split
 *   QG_WGMMA_N, QG_WGMMA_OP_*, QG_WGMMA_ACC_LIST / _ARGS
 *                      the wgmma operand list for N = QG_BLOCK_N (qg_ptx.cuh)
 *
 * Anatomy (as qg_fp8_gemm.cuh): compile-time checks -> shared-memory plan ->
 * barrier init -> role split with setmaxnreg -> producer (one elected lane
 * issues every TMA load) / math warpgroups (4 x k16 wgmma per 64-K block,
 * accumulators in registers) -> epilogue per math warpgroup (bf16:
 * stmatrix, FP32: st.shared -> swizzled shared chunks -> TMA store or
 * reduce-add; row-predicated 16-byte stores where rows must stay untouched).
 *
 * Operands in shared memory (PTX ISA 9.7.15.5.1, shared memory matrix
 * layout; 128-byte swizzle for both majors):
 *   K-major tile [rows][64 K]: row r at r * 128 bytes, 8-row core groups
 *     1024 bytes apart (SBO), LBO unused; one k16 step = +32 bytes.
 *   MN-major tile: atoms of 64 MN x 64 K ([64 K rows][64 MN] = 8192 bytes,
 *     one TMA box {64, 64}), atom j (MN 64j..64j+63) at j * 8192: LBO = 8192
 *     (the next 64 MN), SBO = 1024 (the next 8 K rows); one k16 step =
 *     16 K rows = +2048 bytes. An m64 tile of A starts 8192 bytes after the
 *     previous one in both majors.
 *   So the descriptors' high words are equal (SBO 1024, 128B swizzle:
 *   QG_WGMMA_DESC_SW128_HI) and only the low word's LBO differs.
 *
 * Pipeline invariants: stage s and phase advance together (qg_bf16_advance),
 * once per K block, identically in the producer and the math warps (both run
 * the same scheduler over the same tiles and K ranges). full[s] completes on
 * the producer's arrival plus the stage's transaction bytes (both halves of a
 * multicast operand land in both CTAs); empty[s] completes when every math
 * warp of every CTA that received stage s has released it. The producer's
 * first wait on a fresh empty[s] uses parity 1 and passes. A K block's
 * wgmmas stay in flight while the next block is issued (wait_group 1), so a
 * stage is released one K block late, after the wgmma group that read it
 * has completed; the accumulators are touched by nothing but wgmma between a
 * tile's first issue and its final wait_group 0. Under a cluster, every math
 * warp releases each stage in both CTAs, whatever the tile's multicast: the
 * two CTAs run the same number of tiles of the same K blocks (grouped B
 * multicast: dummy tiles keep them in step, QG_PAIR_TILES), so each empty[s]
 * counts both CTAs' releases of the same use of stage s.
 *
 * Epilogue invariants: each math warpgroup writes its own rows of the shared
 * output tile and stores them (named barrier 2 + wg over its 128 threads);
 * before rewriting them its first thread waits until its previous TMA store
 * has read them (cp.async.bulk.wait_group.read 0).
 */
#if defined(QG_SUM_CONVERT) && QG_SUM_CONVERT
/*
 * The batch sum's conversion pass (QG_SUM_CONVERT; QGEMM_BMK_VARIANT=v4): a
 * bf16 D's atomic batch sum runs as the FP32-D kernel with the workspace's
 * FP32 matrix W [ceil(M / 64) * 64][N] as its D (no counters, no arrivals:
 * every CTA fires its reductions and exits, as for an FP32 D); this second
 * launch then writes D = bf16(W) and stores zeros over W, so W is zero again
 * for the next call (the host's contract). Why two launches: in the
 * one-launch form (the last arrival of each region converts it) the last
 * CTA's release of its reductions, its counter round trip and its loads sit
 * on the call's critical path after the reductions drain; here only this
 * small grid's loads do, spread over many CTAs (H200, 2026-11-29-h200-08-v2:
 * the one-launch bf16 rows ran 1.21-1.27x the FP32-D rows' time).
 * One thread: 4 adjacent FP32 sums (16 bytes; N % 8 == 0, W 16-byte aligned,
 * D rows 16-byte aligned: the host's checks) -> 8 bytes of D. W is read from
 * L2 (ld.global.cg: the reductions were performed there, in the previous
 * grid). Launched with programmatic stream serialization when the context
 * asks for it: griddepcontrol.wait then holds every load until the previous
 * grid (the FP32-D kernel) has completed and its reductions are visible; a
 * plain launch is ordered by the stream and the wait returns at once.
 * Rounding: cvt.rn.bf16x2.f32, the one-launch epilogue's.
 */
#include "qg_wgmma_placeholder.cuh" /* (this kernel calls no wgmma) */
#include "qg_ptx.cuh"
extern "C" __global__ void __launch_bounds__(256)
qg_bf16_batch_sum_convert(float *__restrict__ w, unsigned char *__restrict__ d, int64_t ldd,
                          int shape_m, int shape_n) {
    qg_grid_dependency_wait();
    const int64_t quads = (int64_t)shape_n / 4, total = (int64_t)shape_m * quads;
    for (int64_t i = (int64_t)blockIdx.x * 256 + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * 256) {
        const int64_t row = i / quads, q = i - row * quads;
        float4 *p = (float4 *)(w + row * shape_n) + q;
        const float4 v = __ldcg(p);
        __stcg(p, make_float4(0.0f, 0.0f, 0.0f, 0.0f));
        *(uint2 *)(d + (row * ldd + q * 4) * 2) =
            make_uint2(qg_pack_bf16x2(v.x, v.y), qg_pack_bf16x2(v.z, v.w));
    }
}
#else /* the GEMM kernel: the rest of this file */
#ifndef QG_A_MN_MAJOR
#define QG_A_MN_MAJOR 0
#endif
#ifndef QG_B_MN_MAJOR
#define QG_B_MN_MAJOR 0
#endif
#ifndef QG_D_F32
#define QG_D_F32 0
#endif
#ifndef QG_WITH_C
#define QG_WITH_C 0
#endif
#ifndef QG_SUM_REDUCE
#define QG_SUM_REDUCE 0
#endif
#ifndef QG_SUM_RADIX
#define QG_SUM_RADIX 2
#endif
#ifndef QG_SUM_ATOMIC
#define QG_SUM_ATOMIC 0
#endif
#ifndef QG_SUM_EPI_BATCHED
#define QG_SUM_EPI_BATCHED 0
#endif
#ifndef QG_SUM_RED_V4
#define QG_SUM_RED_V4 0
#endif
#ifndef QG_SUM_PREFETCH
#define QG_SUM_PREFETCH 0
#endif
/* The kernel's entry name: the batch sum's is named by the JIT
 * (src/bf16_plan.c) after DeepGEMM's kernel, which DeepGEMM's tests and
 * users' profiling scripts find by the substring 'bmn_bnk_mn_gemm_impl'
 * (kineto's kernel-name filter; the cast kernels name theirs the same way). */
#ifndef QG_BF16_ENTRY
#define QG_BF16_ENTRY qg_bf16_gemm_kernel
#endif
#ifndef QG_BF16_SPLITK
#define QG_BF16_SPLITK 1
#endif
#ifndef QG_D_HALF
#define QG_D_HALF 0
#endif
/* qg_scheduler.cuh: 1, every CTA its own tiles; S > 1, the S CTAs of a
 * cluster share one */
#define QG_SPLIT_K QG_BF16_SPLITK
#ifndef QG_WG_SKIP
/* masked / psum: a math warpgroup with no valid row of a tile skips it (0:
 * QGEMM_BF16_PLAN=v1, every warpgroup runs every tile) */
#define QG_WG_SKIP 1
#endif

/* The wgmma transpose immediates (qg_ptx.cuh qg_wgmma_m64k16_bf16). */
#define QG_WGMMA_TRANS_A QG_A_MN_MAJOR
#define QG_WGMMA_TRANS_B QG_B_MN_MAJOR

/* B multicast in the contiguous, masked and psum kinds: a pair's two m-blocks
 * come from device data, so multicast is decided per tile and a CTA without
 * work beside its peer's tile runs a dummy tile (qg_scheduler.cuh
 * QG_PAIR_TILES). */
#if QG_MULTICAST == 2 && (QG_KIND == 1 || QG_KIND == 2 || QG_KIND == 3)
#define QG_PAIR_TILES 1
#else
#define QG_PAIR_TILES 0
#endif

#include "qg_ptx.cuh"
#include "qg_scheduler.cuh"

#if QG_KIND == 4
/* The k-grouped GEMM's groups, one launch's worth: group slot i sums K rows
 * [k_begin[i], k_begin[i] + 64 * num_kb[i]) of A [sum K][M] and B [sum K][N]
 * (one tensor map each: a group's K range is a coordinate offset) into D
 * slice first_group + i of D [G][M][N] (num_kb 0: its tiles add / store
 * zeros). Passed by value (__grid_constant__). */
#define QG_BF16_KGROUP_MAX 128
struct qg_bf16_kgroups {
    int k_begin[QG_BF16_KGROUP_MAX];
    int num_kb[QG_BF16_KGROUP_MAX];
    int count;
    int first_group;
};
#define QG_KGROUPS_PARAM , const __grid_constant__ qg_bf16_kgroups kgroups
#define QG_RUN_GROUPS kgroups.count
#else
#define QG_KGROUPS_PARAM
#define QG_RUN_GROUPS QG_NUM_GROUPS
#endif

#define QG_BLOCK_K 64
#ifndef QG_BF16_MERGE
#define QG_BF16_MERGE 1
#endif
/* Merged stages (QG_BF16_MERGE > 1). The ncu profile of the decode-sized
 * dense rows (128x576x7168, 64x16 tiles, H200) showed the per-64-K
 * bookkeeping (two barrier waits, the wgmma wait, the release) as the top
 * stalls of a latency-bound loop; DeepGEMM merges stages there. A merged
 * stage is QG_BF16_MERGE sub-blocks, sub-block j the same [rows][64 K] tile
 * (128B swizzle) as an unmerged stage, at j * QG_SUB_A (QG_SUB_B) in the
 * stage: descriptors and wgmmas are the unmerged ones at an offset. The
 * K steps of a tile are ceil(K64 / merge) (K64 = the 64-K blocks); the last
 * holds QG_MERGE_TAIL sub-blocks (compile time: K is baked in): the producer
 * loads and counts only those (a box wholly past K is never issued; the last
 * sub-block's columns past K are zero-filled by TMA, which counts the whole
 * box, as in the unmerged kernel), and the math warps issue only their
 * wgmmas. So the wgmma sequence of a tile (64-K block by block, k16 step by
 * step, m64 tile by m64 tile) is the unmerged one instruction for
 * instruction on the same shared-memory data: the FP32 accumulation order
 * and so D are bitwise the unmerged kernel's; only the commit groups, the
 * waits and the barriers between them differ. */
#define QG_NUM_K_BLOCKS ((QG_SHAPE_K + QG_BLOCK_K - 1) / QG_BLOCK_K)
#if QG_BF16_MERGE > 1
#define QG_NUM_K_STEPS ((QG_NUM_K_BLOCKS + QG_BF16_MERGE - 1) / QG_BF16_MERGE)
#define QG_MERGE_TAIL (QG_NUM_K_BLOCKS - (QG_NUM_K_STEPS - 1) * QG_BF16_MERGE)
#define QG_BF16_K_UNITS QG_NUM_K_STEPS /* pipeline steps of a tile's K */
#else
#define QG_BF16_K_UNITS QG_NUM_K_BLOCKS
#endif
#define QG_NUM_MATH_WGS (QG_BLOCK_M == 64 ? 1 : 2)
#define QG_NUM_MATH_THREADS (128 * QG_NUM_MATH_WGS)
#define QG_NUM_THREADS (QG_NUM_MATH_THREADS + 128)
#define QG_LOAD_CLUSTER (QG_MULTICAST ? QG_CLUSTER : 1)
#define QG_WG_TILES (QG_BLOCK_M / 64 / QG_NUM_MATH_WGS) /* m64 tiles per math warpgroup */
#define QG_WG_ROWS (QG_WG_TILES * 64)
#define QG_ACC (QG_BLOCK_N / 2) /* FP32 accumulators per thread per m64 tile */

/* Shared-memory plan (bytes); src/bf16_plan.c computes the same numbers. */
#define QG_ROUND_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define QG_D_BYTES (QG_D_F32 ? 4 : 2)
#if QG_SUM_REDUCE
/* no output tile: one word per math warpgroup (the tree's arrival
 * broadcast), padded to keep the stages 1024-byte aligned */
#define QG_SMEM_D 1024
#elif QG_BF16_SPLITK > 1
/* split-K: no output tile (the owners store D from registers); its bytes go
 * to the pipeline's stages */
#define QG_SMEM_D 0
#elif QG_D_HALF
/* the k-grouped FP32 D's half tile (QG_D_HALF): block_n / 2 columns a round */
#define QG_SMEM_D QG_ROUND_UP(QG_BLOCK_M * QG_BLOCK_N * QG_D_BYTES / 2, 1024)
#else
#define QG_SMEM_D QG_ROUND_UP(QG_BLOCK_M * QG_BLOCK_N * QG_D_BYTES, 1024)
#endif
#define QG_SUB_A (QG_BLOCK_M * QG_BLOCK_K * 2) /* one 64-K sub-block of a stage */
#define QG_SUB_B (QG_BLOCK_N * QG_BLOCK_K * 2)
#define QG_SMEM_A (QG_SUB_A * QG_BF16_MERGE)   /* one stage */
#define QG_SMEM_B (QG_SUB_B * QG_BF16_MERGE)
/* split-K: four more barriers (ready x 2, full, done) */
#define QG_SMEM_SPLITK_BARS (QG_BF16_SPLITK > 1 ? 32 : 0)
#define QG_SMEM_TOTAL (1024 /* alignment slack */ + QG_SMEM_D + \
                       QG_NUM_STAGES * (QG_SMEM_A + QG_SMEM_B) + QG_NUM_STAGES * 16 + \
                       QG_SMEM_SPLITK_BARS)
/* Rows of A a stage brings: block_m (both halves under A multicast), or the
 * host's QG_A_BOX_ROWS = round_up(M, 8) for a dense K-major M below block_m
 * (decode): the stage's other A rows are never loaded, and feed only
 * accumulator rows past M, which the TMA store clips (as qg_fp8_gemm.cuh). */
#ifndef QG_A_BOX_ROWS
#define QG_A_BOX_ROWS QG_BLOCK_M
#endif
/* (merged stages: per 64-K sub-block) */
#define QG_STAGE_TX_BYTES (QG_A_BOX_ROWS * QG_BLOCK_K * 2 + QG_SUB_B)
#define QG_ATOM_BYTES (64 * QG_BLOCK_K * 2) /* one MN-major atom: 64 MN x 64 K */
/* Load units of the multicast operand: K-major rows, MN-major atoms. Each
 * CTA of a pair loads half of them and multicasts them to both. */
#define QG_A_LOAD_ROWS (QG_MULTICAST == 1 ? QG_BLOCK_M / 2 : QG_BLOCK_M)
#define QG_B_LOAD_ROWS (QG_MULTICAST == 2 ? QG_BLOCK_N / 2 : QG_BLOCK_N)
/* one k16 step inside a stage's tile */
#define QG_A_K16_BYTES (QG_A_MN_MAJOR ? 16 * 128 : 32)
#define QG_B_K16_BYTES (QG_B_MN_MAJOR ? 16 * 128 : 32)

#if !defined(QG_PRODUCER_REGS) || !defined(QG_MATH_REGS)
#error "the JIT defines QG_PRODUCER_REGS and QG_MATH_REGS"
#endif

static_assert(QG_KIND >= 0 && QG_KIND <= 6, "kind");
static_assert(QG_BLOCK_M == 64 || QG_BLOCK_M == 128 || QG_BLOCK_M == 256, "block_m");
/* bf16 D leaves through stmatrix, 16 columns at a time; FP32 D through
 * 8-byte shared stores (the wgmma N step of 8 is enough). */
static_assert(QG_BLOCK_N % (QG_D_F32 ? 8 : 16) == 0 && QG_BLOCK_N >= 8 && QG_BLOCK_N <= 256,
              "block_n");
static_assert(QG_WGMMA_N == QG_BLOCK_N, "one wgmma covers the tile's width");
static_assert(QG_BLOCK_M * QG_BLOCK_N <= 128 * 256, "accumulators fit the math registers");
/* MN-major tiles are whole 64-wide swizzle atoms (a partial atom would be
 * outside the canonical layout); multicast halves are whole atoms. */
static_assert(!QG_A_MN_MAJOR || (QG_KIND == 0 || QG_KIND == 4 || QG_KIND == 5),
              "MN-major A: dense, k-grouped or batched");
static_assert(!QG_B_MN_MAJOR || QG_BLOCK_N % 64 == 0, "MN-major B: whole 64-column atoms");
static_assert(QG_MULTICAST == 0 || QG_CLUSTER == 2, "multicast needs a 2-CTA cluster");
static_assert(QG_CLUSTER == 1 || QG_MULTICAST != 0 || QG_CLUSTER == QG_BF16_SPLITK,
              "a cluster only for multicast or split-K");
static_assert(QG_BF16_SPLITK == 1 ||
                  ((QG_BF16_SPLITK == 2 || QG_BF16_SPLITK == 4 || QG_BF16_SPLITK == 8) &&
                   QG_KIND == 0 && QG_MULTICAST == 0 && QG_CLUSTER == QG_BF16_SPLITK),
              "split-K: 2, 4 or 8 CTAs a cluster, dense, no multicast");
static_assert(QG_MULTICAST != 1 || (QG_A_MN_MAJOR ? QG_BLOCK_M % 128 == 0 : QG_A_LOAD_ROWS % 8 == 0),
              "A multicast halves: whole atoms / 8-row groups");
static_assert(QG_MULTICAST != 2 || QG_KIND == 4 ||
                  (QG_B_MN_MAJOR ? QG_BLOCK_N % 128 == 0 : QG_B_LOAD_ROWS % 8 == 0),
              "B multicast halves: whole atoms / 8-row groups");
static_assert(QG_MULTICAST != 2 || QG_KIND <= 4,
              "B multicast: dense, contiguous, masked, psum or k-grouped (pairs along M)");
/* k-grouped B multicast (QGEMM_BF16_KGROUPED=mc / dg): the host plans it only
 * for an even m-block count, so every group's tiles are even in number and a
 * pair (two consecutive slots, QG_MULTICAST 2's walk: m-blocks m, m + 1 of
 * one n-block) never straddles two groups: both CTAs run the same K blocks.
 * B is MN-major there (the TT layout): the pair's CTAs load alternate
 * 64-column atoms, each multicast into both (any atom count: block_n 192's
 * three atoms split 2 + 1). */
static_assert(QG_KIND != 4 || QG_MULTICAST == 0 || (QG_MULTICAST == 2 && QG_B_MN_MAJOR),
              "k-grouped: no multicast, or B multicast of an MN-major B");
/* QG_RASTER_M (k-grouped, QGEMM_BF16_KGROUPED): the walk in groups of
 * m-blocks without multicast (qg_scheduler.cuh qg_swizzle) */
static_assert(!QG_RASTER_M || (QG_KIND == 4 && QG_MULTICAST != 1),
              "QG_RASTER_M: the k-grouped kind, without A multicast");
/* QG_D_HALF (k-grouped FP32 D, QGEMM_BF16_KGROUPED's d2): the output tile in
 * shared memory holds block_n / 2 columns, whole store chunks; the epilogue
 * runs in two rounds (columns [0, block_n / 2), then the rest), the second
 * writing the buffer once the first round's TMA stores have read it. Each
 * element is still stored (or added) once, from the same accumulator: D is
 * the one-round epilogue's bit for bit. */
static_assert(!QG_D_HALF || (QG_KIND == 4 && QG_D_F32 && QG_BF16_SPLITK == 1 &&
                             (QG_BLOCK_N / 2) % QG_STORE_COLS == 0),
              "QG_D_HALF: the k-grouped FP32 D, halves of whole store chunks");
static_assert(QG_KIND != 5 || QG_MULTICAST == 0, "batched: no multicast (a pair could straddle batches)");
#if QG_KIND == 6
static_assert(QG_MULTICAST == 0 && !QG_A_MN_MAJOR && !QG_B_MN_MAJOR && (QG_D_F32 || QG_SUM_REDUCE),
              "batch sums: K-major A and B, FP32 D (the reduced sum: either), no multicast");
static_assert(!QG_WITH_C || (QG_SUM_REDUCE && QG_D_F32), "batch sum: C only into an FP32 D");
static_assert(QG_SPLIT_BATCHES >= 1 && QG_SUM_BATCHES >= 1 &&
                  (QG_NUM_GROUPS - 1) * QG_SPLIT_BATCHES < QG_SUM_BATCHES,
              "batch sums: every split has a batch");
#endif
static_assert(QG_KIND != 1 || QG_BLOCK_M <= 128, "contiguous segments are 128-row aligned");
static_assert(!QG_WITH_C || QG_KIND == 0 || QG_KIND == 4 || (QG_KIND == 6 && QG_SUM_REDUCE),
              "C: dense, k-grouped or the reduced batch sum");
static_assert(!QG_SUM_REDUCE || QG_KIND == 6, "QG_SUM_REDUCE: the batch sums only");
static_assert(!QG_SUM_ATOMIC || (QG_SUM_REDUCE && !QG_WITH_C && QG_NUM_GROUPS > 1),
              "the atomic batch sum: more than one split, C already in D (the host's)");
static_assert(!QG_SUM_EPI_BATCHED || (QG_SUM_ATOMIC && !QG_D_F32),
              "QG_SUM_EPI_BATCHED: the atomic batch sum into a bf16 D");
static_assert(!QG_SUM_RED_V4 || QG_SUM_ATOMIC, "QG_SUM_RED_V4: the atomic batch sum");
static_assert(!QG_SUM_PREFETCH || QG_SUM_RED_V4, "QG_SUM_PREFETCH: the atomic batch sum, v3's");
static_assert(QG_SUM_RADIX == 2 || QG_SUM_RADIX == 4 || QG_SUM_RADIX == 8,
              "the batch sum's tree: radix 2, 4 or 8 (a power of two: the counter index "
              "below is unique)");
static_assert(QG_A_BOX_ROWS == QG_BLOCK_M ||
                  (QG_KIND == 0 && !QG_A_MN_MAJOR && QG_MULTICAST != 1 && QG_A_BOX_ROWS % 8 == 0 &&
                   QG_A_BOX_ROWS < QG_BLOCK_M),
              "a short A box: dense, K-major, without A multicast");
static_assert(QG_SMEM_TOTAL == QG_SMEM_BYTES, "host and kernel disagree on shared memory");
static_assert(QG_SMEM_A % 1024 == 0 && QG_SMEM_B % 1024 == 0, "stages 1024-byte aligned");
static_assert(QG_BF16_MERGE >= 1 && QG_BF16_MERGE <= 16, "merged stages: 1..16 sub-blocks");
static_assert(QG_BF16_MERGE == 1 || (QG_KIND == 0 && !QG_A_MN_MAJOR && !QG_B_MN_MAJOR),
              "merged stages: dense, K-major A and B (NT) only");
#if QG_BF16_MERGE > 1
static_assert(QG_MERGE_TAIL >= 1 && QG_MERGE_TAIL <= QG_BF16_MERGE, "merged stages: the tail");
#endif

/* The output tile in shared memory: QG_BLOCK_N / QG_STORE_COLS chunks of
 * QG_STORE_COLS columns, each [QG_BLOCK_M rows][QG_STORE_BYTES] in the TMA
 * swizzle of that row size (PTX ISA "Tensors", swizzling modes: 16-byte unit
 * u of a row is stored at u ^ ((row offset >> 7) & (units - 1))), so the 8
 * rows one stmatrix matrix or a warp's 8-byte stores touch fall in
 * different banks; each chunk's TMA store (box QG_STORE_COLS x QG_WG_ROWS)
 * undoes the swizzle. */
#define QG_STORE_BYTES (QG_STORE_COLS * QG_D_BYTES)
#define QG_STORE_UNITS (QG_STORE_BYTES / 16)
static_assert(QG_STORE_BYTES == 32 || QG_STORE_BYTES == 64 || QG_STORE_BYTES == 128, "store chunk");
static_assert(QG_BLOCK_N % QG_STORE_COLS == 0, "store chunks tile block_n");

/* Byte offset in the output tile of 16-byte unit `unit16` of tile row `row`
 * (the tile's columns 16 bytes at a time, chunk after chunk). */
QG_DEVICE uint32_t qg_bf16_d_offset(uint32_t row, uint32_t unit16) {
    const uint32_t chunk = unit16 / QG_STORE_UNITS, unit = unit16 % QG_STORE_UNITS;
    const uint32_t swz = (row * QG_STORE_BYTES >> 7) & (QG_STORE_UNITS - 1);
    return chunk * QG_BLOCK_M * QG_STORE_BYTES + row * QG_STORE_BYTES + (unit ^ swz) * 16;
}

/* Next pipeline stage; the phase flips each time the stages wrap. */
QG_DEVICE void qg_bf16_advance(uint32_t &s, uint32_t &phase) {
    if (++s == QG_NUM_STAGES) {
        s = 0;
        phase ^= 1;
    }
}

/* Low word of a 128B-swizzle descriptor (qg_ptx.cuh QG_WGMMA_DESC_SW128_HI
 * holds the rest): start address >> 4, and the leading byte offset, which
 * MN-major tiles use for the stride between 64-wide atoms (8192 bytes). */
QG_DEVICE uint32_t qg_bf16_desc_lo(const void *smem, bool mn_major) {
    return ((qg_smem_addr(smem) & 0x3FFFFu) >> 4) |
           (uint32_t)((mn_major ? QG_ATOM_BYTES : 16) >> 4) << 16;
}

/* Stage s is consumed: release it in every CTA that received it. One lane
 * arrives for its warp after the warp has synchronized. */
QG_DEVICE void qg_bf16_release(uint64_t *empty, uint32_t s, uint32_t lane) {
    __syncwarp();
#if QG_LOAD_CLUSTER == 1
    if (lane == 0) qg_mbarrier_arrive(&empty[s]);
#else
    if (lane < QG_LOAD_CLUSTER) qg_mbarrier_arrive_cluster(&empty[s], lane);
#endif
}

QG_DEVICE void qg_bf16_fence_acc(float (&acc)[QG_WG_TILES][QG_ACC]) {
#pragma unroll
    for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
        for (int i = 0; i < QG_ACC; ++i) qg_fence_operand(acc[t][i]);
}

#if QG_D_HALF
/* QG_D_HALF's rounds (header above): round kH puts accumulator columns
 * [kH * block_n / 2, (kH + 1) * block_n / 2) of this thread's fragment into
 * the half tile (the one-round epilogue's layout, chunk by chunk), and its
 * warpgroup's first thread issues that half's TMA stores (or reduce-adds)
 * as one bulk group. */
template <int kH>
QG_DEVICE void qg_bf16_d_half_put(const float (&acc)[QG_WG_TILES][QG_ACC], uint32_t d_base,
                                  uint32_t wg_row, uint32_t lane) {
    constexpr int kHalfCols = QG_BLOCK_N / 2;
#pragma unroll
    for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
        for (int jj = 0; jj < kHalfCols / 8; ++jj)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int j = kH * kHalfCols / 8 + jj;
                const uint32_t row = wg_row + t * 64 + half * 8;
                const uint32_t col = jj * 8 + (lane % 4) * 2; /* within the half */
                qg_st_shared_f32x2(d_base + qg_bf16_d_offset(row, col / 4) + (col % 4) * 4,
                                   acc[t][j * 4 + half * 2], acc[t][j * 4 + half * 2 + 1]);
            }
}

QG_DEVICE void qg_bf16_d_half_store(const qg_tensor_map *tmap_d, const unsigned char *smem_d, int h,
                                    int n_begin, int d_row, int d_group, int epi_row0) {
    constexpr int kHalfCols = QG_BLOCK_N / 2;
    for (int i = 0; i < kHalfCols / QG_STORE_COLS; ++i) {
        const int col0 = n_begin + h * kHalfCols + i * QG_STORE_COLS;
        if (col0 >= QG_SHAPE_N) break;
        const unsigned char *chunk = smem_d + (i * QG_BLOCK_M + epi_row0) * QG_STORE_BYTES;
        if (QG_WITH_C) qg_tma_reduce_add_3d(tmap_d, chunk, col0, d_row, d_group);
        else qg_tma_store_3d(tmap_d, chunk, col0, d_row, d_group);
    }
    qg_bulk_commit_group();
}
#endif

#if QG_BF16_MERGE > 1
/* One merged K step of the math warps (the unmerged loop body, its wgmmas
 * those of kSubs 64-K sub-blocks): wait for stage s, issue, keep this step's
 * wgmmas in flight (wait_group 1) and release the previous step's stage. */
template <int kSubs>
QG_DEVICE void qg_bf16_merged_step(float (&acc)[QG_WG_TILES][QG_ACC], uint64_t *full,
                                   uint64_t *empty, uint32_t &s, uint32_t &phase,
                                   uint32_t &prev_s, bool release_prev, uint32_t desc_a0,
                                   uint32_t desc_b0, uint32_t lane) {
    qg_mbarrier_wait(&full[s], phase);
    qg_bf16_fence_acc(acc);
    qg_wgmma_fence();
#pragma unroll
    for (int j = 0; j < kSubs; ++j)
#pragma unroll
        for (int kk = 0; kk < QG_BLOCK_K / 16; ++kk)
#pragma unroll
            for (int t = 0; t < QG_WG_TILES; ++t)
                qg_wgmma_m64k16_bf16(
                    acc[t], desc_a0 + (s * QG_SMEM_A + j * QG_SUB_A + t * 8192 + kk * QG_A_K16_BYTES) / 16,
                    desc_b0 + (s * QG_SMEM_B + j * QG_SUB_B + kk * QG_B_K16_BYTES) / 16, 1);
    qg_wgmma_commit();
    qg_bf16_fence_acc(acc);
    qg_wgmma_wait1();
    if (release_prev) qg_bf16_release(empty, prev_s, lane);
    prev_s = s;
    qg_bf16_advance(s, phase);
}
#endif

#if QG_BF16_SPLITK > 1
/*
 * Split-K (QG_BF16_SPLITK = S > 1). The decode-sized dense rows (M <= 128,
 * N of a few hundred, K 7168) have a few dozen tiles for 132 SMs, each CTA
 * streaming all of K alone; here the S CTAs of a cluster share one output
 * tile (qg_scheduler.cuh: the cluster's tile, not one per CTA), and CTA r
 * runs K steps [r T / S, (r + 1) T / S) of the T = QG_SK_STEPS (64-K blocks,
 * or merged steps: the last, short, merged step is always the last rank's),
 * each with its own pipeline (no stage is shared: QG_LOAD_CLUSTER 1).
 *
 * The reduction is a reduce-scatter through distributed shared memory. A
 * math thread's fragment is QG_SK_UNITS float4 units, unit u = (m64 tile t,
 * n8 piece j), u = t (QG_BLOCK_N / 8) + j: rows r, r + 8 by two columns.
 * Rank o owns units [first(o), first(o + 1)), first(o) = o U / S (an empty
 * range when U < S). For every unit it does not own, each thread st.asyncs
 * its partial (16 bytes) into the owner's receive buffer, slot [source
 * index][unit - first(owner)][thread] (source index: the sender's rank,
 * minus one past the owner's), completing 16 bytes on the owner's `full`
 * barrier; the owner's thread 0 expects (S - 1) x its units x threads x 16
 * bytes. The owner's thread then sums the S partials of each unit it owns
 * in rank order 0, 1, .., S - 1 (its own from registers at its rank's
 * place): a fixed order, so D is bitwise the same run to run and whichever
 * rank owns a unit. The owner stores its units into D from registers
 * (row- and column-predicated 4- or 8-byte stores; + C read from D first
 * with QG_WITH_C: one thread owns each element, so the accumulation is one
 * ordinary add), no shared output tile, no TMA store.
 *
 * The receive buffer is the CTA's own pipeline stages (QG_SK_BYTES fit in
 * them: static_assert below): after its main loop (wgmma wait_group 0) every
 * math warp arrives (release, cluster scope) on each partner's `ready`
 * barrier; a thread sends only after its own `ready` phase completed (every
 * partner's wgmmas are done reading its stages: acquire, cluster scope). The
 * producer does not load a CTA's next tile before its math warps are done
 * reading the received partials (`done`, arrived after a proxy fence: the
 * generic reads precede the next TMA writes). `full` and `done` complete one
 * phase per tile, `full` on thread 0's arrival and the bytes, `done` on the
 * math warps' arrivals; `ready` is two barriers, tile t's arrivals on ready[t
 * % 2] ((S - 1) x the math warps' each), so that a fast partner's arrival
 * for the next tile never counts toward this one's, whatever the order the
 * arrivals travel in. A tile's partials can reach a CTA only after its
 * `ready` arrival for that tile, which follows its reads of the previous
 * tile's. The CTAs of a
 * cluster run the same tiles (the same scheduler index), so every exchange
 * has all S parties; no CTA waits for another cluster.
 */
#define QG_SK_STEPS QG_BF16_K_UNITS
#define QG_SK_UNITS (QG_WG_TILES * QG_BLOCK_N / 8)
#define QG_SK_UMAX ((QG_SK_UNITS + QG_BF16_SPLITK - 1) / QG_BF16_SPLITK)
#define QG_SK_BYTES ((QG_BF16_SPLITK - 1) * QG_SK_UMAX * QG_NUM_MATH_THREADS * 16)
static_assert(QG_SK_BYTES <= QG_NUM_STAGES * (QG_SMEM_A + QG_SMEM_B),
              "split-K: the partners' partial sums fit the pipeline stages");
static_assert(QG_SK_STEPS >= QG_BF16_SPLITK, "split-K: every rank has a K step");

/* First unit of rank r (r = S: the end). */
QG_DEVICE constexpr int qg_sk_first(int r) { return r * QG_SK_UNITS / QG_BF16_SPLITK; }
/* The rank that owns unit u: the least r with u < first(r + 1). */
QG_DEVICE constexpr int qg_sk_owner(int u) {
    return ((u + 1) * QG_BF16_SPLITK - 1) / QG_SK_UNITS;
}
/* Byte offset of (source index, owner-local unit, thread) in a receive buffer. */
QG_DEVICE constexpr uint32_t qg_sk_slot(int src, int unit, uint32_t thread) {
    return ((uint32_t)(src * QG_SK_UMAX + unit) * QG_NUM_MATH_THREADS + thread) * 16;
}

QG_DEVICE float4 qg_sk_ld_shared_f32x4(uint32_t addr) {
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

/* The reduce-scatter of a CTA's tile number `tile` (header above): on
 * return, the units this rank owns hold the sum of the S partials, the
 * others are stale. bars: ready[2], full, done. */
QG_DEVICE void qg_bf16_splitk_reduce(float (&acc)[QG_WG_TILES][QG_ACC], unsigned char *xbuf,
                                     uint64_t *bars, int rank, uint32_t tile, uint32_t lane,
                                     uint32_t thread) {
    uint64_t *ready = bars + (tile & 1), *full = bars + 2, *done = bars + 3;
    const uint32_t phase = tile & 1, ready_phase = (tile >> 1) & 1;
    /* this warp's wgmmas are complete (wait_group 0): its reads of the stages
     * are done; tell every partner */
    __syncwarp();
    if (lane < QG_BF16_SPLITK && (int)lane != rank) qg_mbarrier_arrive_release_cluster(ready, lane);
    if (thread == 0)
        qg_mbarrier_arrive_expect_tx(full, (uint32_t)((QG_BF16_SPLITK - 1) *
                                                      (qg_sk_first(rank + 1) - qg_sk_first(rank)) *
                                                      QG_NUM_MATH_THREADS * 16));
    qg_mbarrier_wait_acquire_cluster(ready, ready_phase);
#pragma unroll
    for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
        for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
            const int u = t * (QG_BLOCK_N / 8) + j, owner = qg_sk_owner(u);
            if (owner == rank) continue;
            const int src = rank < owner ? rank : rank - 1;
            qg_st_async_v4(qg_map_cluster(xbuf + qg_sk_slot(src, u - qg_sk_first(owner), thread),
                                          (uint32_t)owner),
                           acc[t][j * 4 + 0], acc[t][j * 4 + 1], acc[t][j * 4 + 2],
                           acc[t][j * 4 + 3], qg_map_cluster(full, (uint32_t)owner));
        }
    qg_mbarrier_wait_acquire_cluster(full, phase);
    const uint32_t base = qg_smem_addr(xbuf);
#pragma unroll
    for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
        for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
            const int u = t * (QG_BLOCK_N / 8) + j;
            if (qg_sk_owner(u) != rank) continue;
            float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int r = 0; r < QG_BF16_SPLITK; ++r) {
                const float4 v =
                    r == rank ? make_float4(acc[t][j * 4 + 0], acc[t][j * 4 + 1], acc[t][j * 4 + 2],
                                            acc[t][j * 4 + 3])
                              : qg_sk_ld_shared_f32x4(
                                    base + qg_sk_slot(r < rank ? r : r - 1, u - qg_sk_first(rank),
                                                      thread));
                if (r == 0) {
                    sum = v;
                } else {
                    sum.x += v.x;
                    sum.y += v.y;
                    sum.z += v.z;
                    sum.w += v.w;
                }
            }
            acc[t][j * 4 + 0] = sum.x;
            acc[t][j * 4 + 1] = sum.y;
            acc[t][j * 4 + 2] = sum.z;
            acc[t][j * 4 + 3] = sum.w;
        }
    /* the received partials are read: the producer may refill the stages
     * (generic reads before the async proxy's writes) */
    qg_fence_proxy_async_shared();
    __syncwarp();
    if (lane == 0) qg_mbarrier_arrive(done);
}
#endif /* QG_BF16_SPLITK > 1 */

/* The producer's loads of one operand tile for K block kb (global K row /
 * column k): K-major, one box of `rows` rows at (k, row0) into dst; MN-major,
 * `rows` / 64 boxes of 64 MN x 64 K at (mn0 + 64 j, k) into atom j. With
 * multicast the CTA loads its half (dst and row0 already offset) into both
 * CTAs. */
template <bool kMnMajor, int kRows, bool kMulticast>
QG_DEVICE void qg_bf16_load(unsigned char *dst, const qg_tensor_map *map, uint64_t *bar, int k,
                            int mn0) {
    if constexpr (kMnMajor) {
#pragma unroll
        for (int j = 0; j < kRows / 64; ++j) {
            if constexpr (kMulticast)
                qg_tma_load_2d_multicast(dst + j * QG_ATOM_BYTES, map, bar, mn0 + 64 * j, k, 0x3);
            else
                qg_tma_load_2d(dst + j * QG_ATOM_BYTES, map, bar, mn0 + 64 * j, k);
        }
    } else {
        if constexpr (kMulticast) qg_tma_load_2d_multicast(dst, map, bar, k, mn0, 0x3);
        else qg_tma_load_2d(dst, map, bar, k, mn0);
    }
}

#if QG_KIND == 5 || QG_KIND == 6
/* The batched kind's loads: as qg_bf16_load (no multicast) from a rank-3 map
 * {inner, rows, G}, batch `batch` (the map's dimensions bound every box to its
 * batch: rows past M or N are zero-filled, never the next batch's). */
template <bool kMnMajor, int kRows>
QG_DEVICE void qg_bf16_load_batched(unsigned char *dst, const qg_tensor_map *map, uint64_t *bar,
                                    int k, int mn0, int batch) {
    if constexpr (kMnMajor) {
#pragma unroll
        for (int j = 0; j < kRows / 64; ++j)
            qg_tma_load_3d(dst + j * QG_ATOM_BYTES, map, bar, mn0 + 64 * j, k, batch);
    } else {
        qg_tma_load_3d(dst, map, bar, k, mn0, batch);
    }
}
#endif

#if QG_SUM_REDUCE
/*
 * The batch sum's tree (kind 6, QG_SUM_REDUCE). Split g of the G =
 * QG_NUM_GROUPS splits leaves its tile's partial sum in the math warpgroups'
 * accumulators. Each math warpgroup (its own rows, independently of the
 * other) then walks a fixed tree of radix R = QG_SUM_RADIX over the splits:
 * at level L (span S = R^L), node j covers splits [j S, (j + 1) S) of [0, G),
 * and its value is kept in the workspace slot of its first split, j S. Node
 * j's parent p = j / R has c = min(R, ceil((G - p R S) / S)) children (the
 * ones that start inside [0, G)). While S < G (not the root):
 *   - c == 1 (j is its parent's only child): go up (j /= R, S *= R);
 *   - else store the fragment into slot j S; arrive on the parent's counter
 *     (index p R S + S - 1, its first child's last split: every internal
 *     node has its own, in [0, G - 2]; unique because R is a power of two,
 *     so index + 1 = S (p R + 1) with p R + 1 odd gives S, then p); the
 *     first c - 1 arrivals are done with the tile, the last sums the c
 *     children's slots in index order (its own included, read back: so the
 *     order of the additions never depends on which child arrived last) and
 *     goes up.
 * The root writes D = acc (+ C). Every node's value is the fixed-order sum
 * of values fixed by the same rule below it: bitwise deterministic for a
 * given R (radix 2 adds a + b as the binary tree always did; another radix
 * rounds differently, as any other order would). No warpgroup ever waits
 * for another CTA (the persistent scheduler cannot deadlock), and a counter
 * sees exactly c arrivals per call: atom.inc with limit c - 1 (old >= c - 1 ?
 * 0 : old + 1) returns 0 .. c - 1 and leaves it 0 again, so a zeroed counter
 * area stays zero between calls (the host's contract).
 *
 * Workspace (the host's qg_bf16_gemm_batch_sum_workspace_bytes, the same for
 * every radix): counters [ceil(M / 64) x ceil(N / 16) regions][G - 1] (u32;
 * region = the warpgroup's first m64 block x its first 16-column group, so
 * the index does not depend on the tile shape), then slots [G][ceil(M / 64)]
 * [N / 8][128 threads][4] FP32: each m64 x n8 piece of a fragment in the
 * wgmma D layout's thread order (thread i's four values of that piece at
 * 16 i), so every store and load is a whole 512-byte warp line of st/ld .v4
 * and rows past M need no check (they are in the slot; never copied to D).
 *
 * Memory model (PTX ISA, "Memory Consistency Model": 8.8 release and
 * acquire patterns, 8.9.2 causality order, 8.10 axioms):
 *   release: every thread's st.global of its fragment is ordered before the
 *     named barrier (bar.sync synchronizes the warpgroup's threads: "base
 *     causality order" includes program order and synchronizes-with, and is
 *     transitive), which is before thread 0's atom.acq_rel.gpu on the
 *     counter: a release operation, so every store of the warpgroup precedes
 *     the atom in causality order;
 *   acquire: each arrival's atom.acq_rel.gpu reads the previous arrival's
 *     value (the atomics of one location are totally ordered), so the
 *     previous release synchronizes with it; each is also a release, so the
 *     chain carries every earlier arrival's stores to the last one
 *     (transitivity); thread 0 then passes the named barrier before its
 *     warpgroup's loads, so the children's stores precede every load in
 *     causality order and the causality axiom makes each load see them. The
 *     loads are ld.global.cg (L2, not the SM's L1, which is not coherent
 *     across SMs: a stale line of a slot read earlier at another level must
 *     not be hit), the stores st.global.cg.
 * (This is the split-K semaphore's pattern: barrier, then one thread's
 * release; acquire, then barrier.)
 */
/* One arrival of a node with `limit` + 1 children: returns 0 .. limit, and
 * the last (limit) leaves the counter 0. */
QG_DEVICE uint32_t qg_bf16_tree_arrive(uint32_t *counter, uint32_t limit) {
    uint32_t old;
    asm volatile("atom.acq_rel.gpu.global.inc.u32 %0, [%1], %2;"
                 : "=r"(old)
                 : "l"(counter), "r"(limit)
                 : "memory");
    return old;
}

QG_DEVICE void qg_bf16_st_cg_f32x4(float *p, float x, float y, float z, float w) {
    asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x), "f"(y), "f"(z),
                 "f"(w)
                 : "memory");
}

QG_DEVICE float4 qg_bf16_ld_cg_f32x4(const float *p) {
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

#define QG_TREE_N8 (QG_SHAPE_N / 8)         /* n8 pieces of a slot's m64 row block */
#define QG_TREE_N16 ((QG_SHAPE_N + 15) / 16) /* counter regions along N */
static_assert(QG_SHAPE_N % 8 == 0, "batch sum: N a multiple of 8");

/* The warpgroup's fragment (m64 tiles from m64 block mb0, n8 pieces from
 * ng0) into slot `slot`; pieces past M's m64 blocks or past N are not in the
 * slot. */
QG_DEVICE void qg_bf16_tree_store(const float (&acc)[QG_WG_TILES][QG_ACC], float *slot, int mb0,
                                  int ng0, int m64_blocks, uint32_t thread) {
#pragma unroll
    for (int t = 0; t < QG_WG_TILES; ++t) {
        if (mb0 + t >= m64_blocks) break;
#pragma unroll
        for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
            if (ng0 + j >= QG_TREE_N8) break;
            float *p = slot + (((size_t)(mb0 + t) * QG_TREE_N8 + ng0 + j) * 128 + thread) * 4;
            qg_bf16_st_cg_f32x4(p, acc[t][j * 4 + 0], acc[t][j * 4 + 1], acc[t][j * 4 + 2],
                                acc[t][j * 4 + 3]);
        }
    }
}

/* acc = slot (kFirst) or acc += slot, the same pieces as qg_bf16_tree_store.
 * The loads of QG_TREE_CHUNK pieces are issued before their additions, so
 * that many L2 round trips are in flight at once whatever the scheduler
 * does. */
#ifndef QG_TREE_CHUNK /* (a definition before the include: experiments) */
/* as many as the registers allow beside the accumulators (168 a thread in
 * the three-warpgroup kernels: 128 accumulators leave room for one piece) */
#define QG_TREE_CHUNK (QG_WG_TILES * QG_ACC >= 128 ? 1 : QG_WG_TILES * QG_ACC >= 96 ? 2 : 8)
#endif

template <bool kFirst>
QG_DEVICE void qg_bf16_tree_add(float (&acc)[QG_WG_TILES][QG_ACC], const float *slot, int mb0,
                                int ng0, int m64_blocks, uint32_t thread) {
#pragma unroll
    for (int t = 0; t < QG_WG_TILES; ++t) {
        if (mb0 + t >= m64_blocks) break;
#pragma unroll
        for (int j0 = 0; j0 < QG_BLOCK_N / 8; j0 += QG_TREE_CHUNK) {
            float4 v[QG_TREE_CHUNK];
#pragma unroll
            for (int i = 0; i < QG_TREE_CHUNK; ++i) {
                const int j = j0 + i;
                if (j < QG_BLOCK_N / 8 && ng0 + j < QG_TREE_N8)
                    v[i] = qg_bf16_ld_cg_f32x4(
                        slot + (((size_t)(mb0 + t) * QG_TREE_N8 + ng0 + j) * 128 + thread) * 4);
            }
#pragma unroll
            for (int i = 0; i < QG_TREE_CHUNK; ++i) {
                const int j = j0 + i;
                if (j < QG_BLOCK_N / 8 && ng0 + j < QG_TREE_N8) {
                    acc[t][j * 4 + 0] = kFirst ? v[i].x : acc[t][j * 4 + 0] + v[i].x;
                    acc[t][j * 4 + 1] = kFirst ? v[i].y : acc[t][j * 4 + 1] + v[i].y;
                    acc[t][j * 4 + 2] = kFirst ? v[i].z : acc[t][j * 4 + 2] + v[i].z;
                    acc[t][j * 4 + 3] = kFirst ? v[i].w : acc[t][j * 4 + 3] + v[i].w;
                }
            }
        }
    }
}

/*
 * The batch sum's atomic reduction (QG_SUM_ATOMIC; kind 6 with
 * QG_SUM_REDUCE). Each math warpgroup adds its fragment of split g's partial
 * sum into an FP32 target with red.global.add.v2.f32 (the wgmma D layout
 * gives a thread two adjacent columns of a row: one 8-byte reduction each),
 * performed in L2, fire-and-forget: one level whatever the split count,
 * where the tree's critical path held ceil(log_R G) store / arrival / load
 * round trips of the whole fragment (on the H200 the tree's 44 splits of a
 * 128x128 tile cost ~14-20 us of a 290 us call, and at b = 129 it forced
 * fewer, thinner splits that read 1.7x the operand bytes per CTA). The sum's
 * order depends on the order the reductions reach L2: not bitwise
 * deterministic (DeepGEMM's kernel adds with the same atomics).
 *   FP32 D: the target is D itself (ld = ldd); the host put C (or zeros)
 *     there before the launch; nothing else.
 *   bf16 D: the target is the workspace's FP32 matrix W [ceil(M / 64) * 64]
 *     [N] (after the counters), zero before the call. The warpgroup then
 *     arrives on its region's counter (one u32 per m64 block x n16 group,
 *     as the tree's regions: every split's tile covers the same regions)
 *     with atom.inc limit G - 1: the last of the G arrivals reads the
 *     region's sums (ld.relaxed.gpu: from L2), writes them into D as bf16
 *     and stores zeros over them, so W and the counter are zero again for
 *     the next call (the host's contract: zeroed once, at allocation).
 *     Memory model as the tree's (release: every thread's reductions, the
 *     named barrier, thread 0's atom.acq_rel.gpu; acquire: the last
 *     arrival's atom, the named barrier, the loads); the zeros reach the
 *     next kernel on the stream through the launch boundary.
 */
QG_DEVICE void qg_bf16_red_add_f32x2(float *p, float x, float y) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(x), "f"(y) : "memory");
}

/* (v3, QG_SUM_RED_V4: one 16-byte reduction; PTX ISA 8.1+, sm_90) */
QG_DEVICE void qg_bf16_red_add_f32x4(float *p, float x, float y, float z, float w) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x), "f"(y),
                 "f"(z), "f"(w)
                 : "memory");
}

QG_DEVICE float2 qg_bf16_ld_relaxed_f32x2(const float *p) {
    float2 v;
    asm volatile("ld.relaxed.gpu.global.v2.f32 {%0, %1}, [%2];"
                 : "=f"(v.x), "=f"(v.y)
                 : "l"(p)
                 : "memory");
    return v;
}

QG_DEVICE void qg_bf16_st_cg_zero2(float *p) {
    asm volatile("st.global.cg.v2.f32 [%0], {%1, %1};" ::"l"(p), "f"(0.0f) : "memory");
}

/*
 * The batch sum's L2 prefetch (QG_SUM_PREFETCH; QGEMM_BMK_VARIANT=v5, v6).
 * The reductions' target (an FP32 D, which holds C, or the workspace's W) has
 * normally left L2 between calls; an L2 reduction on a line that is not
 * there first waits for the line from DRAM, and every split's reductions
 * into that line queue behind the fill, at the tile's end, on the call's
 * critical path. So the producer lane, right after issuing a tile's last
 * loads (the math warps then still have up to QG_NUM_STAGES K blocks to
 * run, microseconds at these shapes), asks L2 for the tile's region of the
 * target with bulk prefetches (cp.async.bulk.prefetch.L2: a hint that moves
 * no data into the SM, writes nothing, and cannot fault the kernel's
 * results): one per row of the region, or one for the whole region where its
 * rows are contiguous (the tile spans the target's rows). Every split of the
 * tile asks; L2 serves all but the first from the line it already holds.
 * Addresses: the target and its rows 16-byte aligned, the tile's first
 * column a multiple of 8 FP32 values, N a multiple of 8 (the host's checks):
 * every prefetch starts 16-byte aligned and spans a multiple of 16 bytes.
 */
QG_DEVICE void qg_bf16_prefetch_l2_bulk(const void *p, uint32_t bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}
#define QG_SUM_PARAMS                                                                           \
    , float *__restrict__ sum_ws, uint32_t *__restrict__ sum_counters, const float *sum_c,      \
        int64_t ldc
#else
#define QG_SUM_PARAMS
#endif

/*
 * Kernel parameters (src/bf16_plan.h documents the host side):
 *   tmap_a, tmap_b  A and B (boxes: K-major {64, rows}, MN-major {64, 64})
 *   tmap_d          D (box {QG_STORE_COLS, QG_WG_ROWS}; k-grouped and batched
 *                   rank 3 {N, M, G} with box {QG_STORE_COLS, QG_WG_ROWS, 1};
 *                   batched: A and B rank 3 too, {K or MN, rows, G})
 *   d, ldd          D and its row stride in elements: the row-predicated
 *                   stores of the masked / psum layouts' last tiles
 *   m_indices       contiguous: the expert of each row (-1 padding)
 *   masked_m        masked: valid rows per group; psum: group end rows
 *   shape_m         M (masked: M_max per group)
 *   sum_ws, sum_counters, sum_c, ldc   (QG_SUM_REDUCE) the tree's slots and
 *                   counters (the workspace), and C (FP32 [M][ldc], may be
 *                   D itself: each element is read, then written, by one
 *                   thread) or NULL; tmap_d is not used (zeroed)
 */
extern "C" __global__ void __launch_bounds__(QG_NUM_THREADS, 1)
QG_BF16_ENTRY(const __grid_constant__ qg_tensor_map tmap_a,
                    const __grid_constant__ qg_tensor_map tmap_b,
                    const __grid_constant__ qg_tensor_map tmap_d,
                    unsigned char *__restrict__ d, int64_t ldd,
                    const int *__restrict__ m_indices,
                    const int *__restrict__ masked_m,
                    int shape_m QG_KGROUPS_PARAM QG_SUM_PARAMS) {
    /* ---- shared-memory plan (tiles 1024-byte aligned for the swizzle) ---- */
    extern __shared__ __align__(1024) unsigned char qg_smem_raw[];
    unsigned char *smem = qg_smem_raw + ((1024 - (qg_smem_addr(qg_smem_raw) & 1023)) & 1023);
    [[maybe_unused]] unsigned char *smem_d = smem; /* (unused by the atomic FP32-D batch sum) */
    unsigned char *smem_a = smem + QG_SMEM_D;
    unsigned char *smem_b = smem_a + QG_NUM_STAGES * QG_SMEM_A;
    uint64_t *full = (uint64_t *)(smem_b + QG_NUM_STAGES * QG_SMEM_B);
    uint64_t *empty = full + QG_NUM_STAGES;
    [[maybe_unused]] uint64_t *sk_bars = empty + QG_NUM_STAGES; /* split-K: ready x 2, full, done */

    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#if QG_BF16_SPLITK > 1
    /* this CTA's K steps of the cluster's tile (header: "Split-K") */
    const int sk_rank = (int)qg_cluster_ctarank();
    const int sk_begin = sk_rank * QG_SK_STEPS / QG_BF16_SPLITK;
    const int sk_end = (sk_rank + 1) * QG_SK_STEPS / QG_BF16_SPLITK;
#endif

    /* ---- barrier init ---------------------------------------------------- */
    if (threadIdx.x == QG_NUM_MATH_THREADS) {
        qg_tma_prefetch_descriptor(&tmap_a);
        qg_tma_prefetch_descriptor(&tmap_b);
        if (!QG_SUM_REDUCE) qg_tma_prefetch_descriptor(&tmap_d);
        for (int s = 0; s < QG_NUM_STAGES; ++s) {
            qg_mbarrier_init(&full[s], 1); /* the TMA lane's expect_tx */
            qg_mbarrier_init(&empty[s], QG_LOAD_CLUSTER * QG_NUM_MATH_THREADS / 32);
        }
#if QG_BF16_SPLITK > 1
        qg_mbarrier_init(&sk_bars[0], (QG_BF16_SPLITK - 1) * QG_NUM_MATH_THREADS / 32); /* ready */
        qg_mbarrier_init(&sk_bars[1], (QG_BF16_SPLITK - 1) * QG_NUM_MATH_THREADS / 32);
        qg_mbarrier_init(&sk_bars[2], 1); /* full: thread 0's expect_tx, bytes from st.async */
        qg_mbarrier_init(&sk_bars[3], QG_NUM_MATH_THREADS / 32); /* done */
#endif
        qg_fence_proxy_async_shared();
        qg_fence_mbarrier_init();
    }
#if QG_CLUSTER > 1
    qg_cluster_sync();
#else
    __syncthreads();
#endif

    /* ---- programmatic dependent launch (no-ops without it): every global
     * read and write comes after the wait. */
    qg_grid_dependency_wait();
    if (threadIdx.x == 0) qg_launch_dependents();

    qg_scheduler sched;
    qg_scheduler_init(sched, shape_m, m_indices, masked_m, QG_RUN_GROUPS);
    qg_tile tile;
    uint32_t s = 0, phase = 0;

    if (threadIdx.x >= QG_NUM_MATH_THREADS) {
        /* ==== producer warpgroup: one elected lane issues every TMA load ==== */
        qg_setmaxnreg_dec<QG_PRODUCER_REGS>();
        if (warp == QG_NUM_MATH_THREADS / 32 && qg_elect_one()) {
            const int rank = QG_CLUSTER > 1 ? (int)qg_cluster_ctarank() : 0;
#if QG_BF16_SPLITK > 1
            uint32_t done_phase = 0;
            bool first_tile = true;
#endif
            while (qg_scheduler_next(sched, tile)) {
#if QG_BF16_SPLITK > 1
                /* the stages held the previous tile's received partials:
                 * refill them once the math warps have read those */
                if (!first_tile) {
                    qg_mbarrier_wait(&sk_bars[3], done_phase);
                    done_phase ^= 1;
                }
                first_tile = false;
#endif
                /* A's first row (masked: in the flat [G * M_max] rows) */
                const int a_mn = (QG_KIND == 2 ? tile.group * shape_m : 0) + tile.m_begin;
                /* B's first row / column: K-major in the flat [G * N] rows;
                 * MN-major, the group's K rows start at group * K */
                const int b_mn = (QG_B_MN_MAJOR || QG_KIND == 4 ? 0 : tile.group * QG_SHAPE_N) +
                                 tile.n_block * QG_BLOCK_N;
#if QG_KIND == 4
                const int k0 = kgroups.k_begin[tile.group];
                const int num_kb = kgroups.num_kb[tile.group];
                const int b_k0 = k0;
#elif QG_KIND == 6
                /* this split's batches, K block after K block of each */
                const int batch0 = tile.group * QG_SPLIT_BATCHES;
                const int num_kb = min(QG_SPLIT_BATCHES, QG_SUM_BATCHES - batch0) * QG_NUM_K_BLOCKS;
                const int k0 = 0, b_k0 = 0;
#elif QG_BF16_SPLITK > 1
                /* this rank's steps [sk_begin, sk_end) of the tile (global
                 * step indices: the merged tail is the last step's) */
                const int k0 = 0, num_kb = sk_end, b_k0 = 0;
#elif QG_BF16_MERGE > 1
                const int k0 = 0, num_kb = QG_NUM_K_STEPS, b_k0 = 0;
#else
                const int k0 = 0, num_kb = QG_NUM_K_BLOCKS;
                const int b_k0 = QG_B_MN_MAJOR ? tile.group * QG_SHAPE_K : 0;
#endif
#if QG_BF16_SPLITK > 1
                const int kb_first = sk_begin;
#else
                constexpr int kb_first = 0;
#endif
                /* The loop's end is hidden from the compiler: with a short K
                 * of compile-time length it unrolled the loop whole, and at
                 * 40 registers that spilled (NN 64x256, K = 512; as the FP8
                 * kernel's producer, qg_fp8_gemm.cuh). */
                uint32_t load_end = (uint32_t)num_kb;
                qg_pin(load_end);
#pragma unroll 1
                for (int kb = kb_first; kb < (int)load_end; ++kb, qg_bf16_advance(s, phase)) {
                    qg_mbarrier_wait(&empty[s], phase ^ 1);
#if QG_PAIR_TILES
                    /* a dummy tile: the stage completes on the arrival alone
                     * (its peer's tile does not multicast: b_multicast needs
                     * both tiles real) */
                    if (tile.rows == 0) {
                        qg_mbarrier_arrive(&full[s]);
                        continue;
                    }
#endif
#if QG_BF16_MERGE > 1
                    /* a merged stage (dense NT): its sub-blocks inside K, all
                     * counted by one expect_tx (header: "Merged stages") */
                    {
                        const int subs = kb == QG_NUM_K_STEPS - 1 ? QG_MERGE_TAIL : QG_BF16_MERGE;
                        qg_mbarrier_arrive_expect_tx(&full[s], (uint32_t)subs * QG_STAGE_TX_BYTES);
#pragma unroll
                        for (int j = 0; j < QG_BF16_MERGE; ++j) {
                            if (j >= subs) break;
                            unsigned char *a_dst = smem_a + s * QG_SMEM_A + j * QG_SUB_A;
                            unsigned char *b_dst = smem_b + s * QG_SMEM_B + j * QG_SUB_B;
                            const int kx = (kb * QG_BF16_MERGE + j) * QG_BLOCK_K;
#if QG_MULTICAST == 1
                            const int a_half = rank * QG_A_LOAD_ROWS;
                            qg_bf16_load<false, QG_A_LOAD_ROWS, true>(a_dst + a_half * 128, &tmap_a,
                                                                     &full[s], kx, a_mn + a_half);
#else
                            qg_bf16_load<false, QG_BLOCK_M, false>(a_dst, &tmap_a, &full[s], kx, a_mn);
#endif
#if QG_MULTICAST == 2
                            const int b_half = rank * QG_B_LOAD_ROWS;
                            qg_bf16_load<false, QG_B_LOAD_ROWS, true>(b_dst + b_half * 128, &tmap_b,
                                                                     &full[s], kx, b_mn + b_half);
#else
                            qg_bf16_load<false, QG_BLOCK_N, false>(b_dst, &tmap_b, &full[s], kx, b_mn);
#endif
                        }
                        (void)k0, (void)b_k0, (void)rank;
                        continue;
                    }
#endif
                    qg_mbarrier_arrive_expect_tx(&full[s], QG_STAGE_TX_BYTES);
                    unsigned char *a_dst = smem_a + s * QG_SMEM_A;
                    unsigned char *b_dst = smem_b + s * QG_SMEM_B;
#if QG_KIND == 6
                    {
                        const int batch = batch0 + kb / QG_NUM_K_BLOCKS;
                        const int kk = (kb % QG_NUM_K_BLOCKS) * QG_BLOCK_K;
                        qg_bf16_load_batched<false, QG_BLOCK_M>(a_dst, &tmap_a, &full[s], kk,
                                                                tile.m_begin, batch);
                        qg_bf16_load_batched<false, QG_BLOCK_N>(
                            b_dst, &tmap_b, &full[s], kk, tile.n_block * QG_BLOCK_N, batch);
                    }
                    (void)a_mn, (void)b_mn, (void)b_k0, (void)k0;
#elif QG_KIND == 5
                    qg_bf16_load_batched<QG_A_MN_MAJOR, QG_BLOCK_M>(
                        a_dst, &tmap_a, &full[s], kb * QG_BLOCK_K, tile.m_begin, tile.group);
                    qg_bf16_load_batched<QG_B_MN_MAJOR, QG_BLOCK_N>(
                        b_dst, &tmap_b, &full[s], kb * QG_BLOCK_K, tile.n_block * QG_BLOCK_N,
                        tile.group);
                    (void)a_mn, (void)b_mn, (void)b_k0, (void)k0;
#else
#if QG_MULTICAST == 1
                    /* this CTA's half: rows (K-major) or atoms (MN-major) */
                    const int a_half = rank * QG_A_LOAD_ROWS;
                    qg_bf16_load<QG_A_MN_MAJOR, QG_A_LOAD_ROWS, true>(
                        a_dst + a_half * 128, &tmap_a, &full[s], k0 + kb * QG_BLOCK_K, a_mn + a_half);
#else
                    qg_bf16_load<QG_A_MN_MAJOR, QG_BLOCK_M, false>(a_dst, &tmap_a, &full[s],
                                                                  k0 + kb * QG_BLOCK_K, a_mn);
#endif
#if QG_MULTICAST == 2 && QG_PAIR_TILES
                    /* per tile: half of B into both CTAs, or both halves
                     * into this one (the map's K-major box is half a tile;
                     * the same bytes land either way) */
                    if (tile.b_multicast) {
                        const int b_half = rank * QG_B_LOAD_ROWS;
                        qg_bf16_load<QG_B_MN_MAJOR, QG_B_LOAD_ROWS, true>(
                            b_dst + b_half * 128, &tmap_b, &full[s], b_k0 + kb * QG_BLOCK_K,
                            b_mn + b_half);
                    } else {
#pragma unroll
                        for (int h = 0; h < 2; ++h)
                            qg_bf16_load<QG_B_MN_MAJOR, QG_B_LOAD_ROWS, false>(
                                b_dst + h * QG_B_LOAD_ROWS * 128, &tmap_b, &full[s],
                                b_k0 + kb * QG_BLOCK_K, b_mn + h * QG_B_LOAD_ROWS);
                    }
#elif QG_MULTICAST == 2 && QG_KIND == 4
                    /* k-grouped: alternate 64-column atoms of B (header above) */
#pragma unroll
                    for (int j = 0; j < QG_BLOCK_N / 64; ++j)
                        if (j % 2 == rank)
                            qg_tma_load_2d_multicast(b_dst + j * QG_ATOM_BYTES, &tmap_b, &full[s],
                                                     b_mn + 64 * j, b_k0 + kb * QG_BLOCK_K, 0x3);
#elif QG_MULTICAST == 2
                    const int b_half = rank * QG_B_LOAD_ROWS;
                    qg_bf16_load<QG_B_MN_MAJOR, QG_B_LOAD_ROWS, true>(
                        b_dst + b_half * 128, &tmap_b, &full[s], b_k0 + kb * QG_BLOCK_K, b_mn + b_half);
#else
                    qg_bf16_load<QG_B_MN_MAJOR, QG_BLOCK_N, false>(b_dst, &tmap_b, &full[s],
                                                                  b_k0 + kb * QG_BLOCK_K, b_mn);
#endif
#endif /* QG_KIND == 5 / 6 */
                    (void)rank;
                }
#if QG_SUM_PREFETCH
                /* the tile's region of the reductions' target into L2
                 * (comment above qg_bf16_prefetch_l2_bulk) */
                {
#if QG_D_F32
                    const unsigned char *target = d; /* FP32 D, or v5's W (the host's d) */
                    const int64_t ld_bytes = ldd * 4;
#else
                    const unsigned char *target = (const unsigned char *)sum_ws;
                    constexpr int64_t ld_bytes = (int64_t)QG_SHAPE_N * 4;
#endif
                    const int n_begin = tile.n_block * QG_BLOCK_N;
                    const uint32_t bytes = (uint32_t)min(QG_BLOCK_N, QG_SHAPE_N - n_begin) * 4u;
                    const int rows = min(QG_BLOCK_M, shape_m - tile.m_begin);
                    const unsigned char *first =
                        target + (int64_t)tile.m_begin * ld_bytes + (int64_t)n_begin * 4;
                    if (ld_bytes == (int64_t)bytes) {
                        if (rows > 0) qg_bf16_prefetch_l2_bulk(first, bytes * (uint32_t)rows);
                    } else {
#pragma unroll 1
                        for (int r = 0; r < rows; ++r)
                            qg_bf16_prefetch_l2_bulk(first + (int64_t)r * ld_bytes, bytes);
                    }
                }
#endif
            }
        }
    } else {
        /* ==== math warpgroups ============================================== */
        qg_setmaxnreg_inc<QG_MATH_REGS>();
        /* warp-uniform through a shuffle: the descriptors stay uniform */
        const uint32_t wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
        const uint32_t warp_in_wg = warp % 4;
        /* first row of this thread's accumulator fragment in m64 tile t:
         * rows r and r + 8 (wgmma D layout, 9.7.15.5.1.1) */
        const uint32_t wg_row = wg * QG_WG_ROWS + warp_in_wg * 16 + lane / 4;
        /* The m64 tiles of this warpgroup start 8192 bytes apart in both
         * majors (header comment). */
        const uint32_t desc_a0 = __shfl_sync(
            0xffffffffu, qg_bf16_desc_lo(smem_a + wg * QG_WG_TILES * 8192, QG_A_MN_MAJOR), 0);
        const uint32_t desc_b0 = __shfl_sync(0xffffffffu, qg_bf16_desc_lo(smem_b, QG_B_MN_MAJOR), 0);

        float acc[QG_WG_TILES][QG_ACC];
        const uint32_t epi_bar = 2 + wg;
        const uint32_t epi_thread = threadIdx.x % 128;
        const int epi_row0 = (int)wg * QG_WG_ROWS; /* the warpgroup's first tile row */
#if QG_BF16_SPLITK > 1
        uint32_t sk_tile = 0; /* this CTA's tiles so far (the split-K barriers' phases) */
#endif

        while (qg_scheduler_next(sched, tile)) {
#if QG_KIND == 4
            const int num_kb = kgroups.num_kb[tile.group];
#elif QG_KIND == 6
            const int num_kb =
                min(QG_SPLIT_BATCHES, QG_SUM_BATCHES - tile.group * QG_SPLIT_BATCHES) *
                QG_NUM_K_BLOCKS;
#elif QG_BF16_SPLITK > 1
            const int num_kb = sk_end - sk_begin; /* >= 1 (static_assert) */
#elif QG_BF16_MERGE > 1
            const int num_kb = QG_NUM_K_STEPS;
#else
            const int num_kb = QG_NUM_K_BLOCKS;
#endif
#if ((QG_KIND == 2 || QG_KIND == 3) && QG_WG_SKIP) || QG_PAIR_TILES
            /* (QG_PAIR_TILES: a dummy tile, rows 0, is skipped by every
             * warpgroup the same way, in every kind.)
             * masked / psum: a warpgroup whose rows all lie past the group's
             * valid rows (the last m-block of a group: 134-249 rows in
             * 128-row blocks leave the second warpgroup idle half the time)
             * issues no wgmma and stores nothing; it still waits for and
             * releases every stage (the producer counts both warpgroups'
             * releases, and the phases stay in step), then takes the next
             * tile: its epilogue would write no row (its barriers are its
             * own). The skip is a whole-tile branch before the accumulators
             * are touched, so no wgmma sits in a divergent path (ptxas
             * C7520). */
#if (QG_KIND == 2 || QG_KIND == 3) && QG_WG_SKIP
            const bool wg_idle = epi_row0 >= tile.rows;
#else
            const bool wg_idle = tile.rows == 0;
#endif
            if (wg_idle) {
                for (int kb = 0; kb < num_kb; ++kb) {
                    qg_mbarrier_wait(&full[s], phase);
                    qg_bf16_release(empty, s, lane);
                    qg_bf16_advance(s, phase);
                }
                continue;
            }
#endif
#pragma unroll
            for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                for (int i = 0; i < QG_ACC; ++i) acc[t][i] = 0.0f;
#if QG_SUM_REDUCE && QG_WITH_C
            /* The batch sum's C is added by split 0 (below, after its products:
             * D = (split 0 + C) + the other splits, a fixed order); its lines
             * are prefetched into L2 now, under the main loop. (At the root,
             * after the tree, C took a round trip per n8 piece: C may be D, so
             * no load could pass a store of D; most of the FP32-D + C call's
             * extra time at small batch counts. Loads into the accumulators
             * here would serialize the wgmmas, ptxas C7515.) */
            if (tile.group == 0) {
                constexpr int lines = (QG_BLOCK_N * 4 + 127) / 128; /* 128-byte lines a row */
                const int n_begin = tile.n_block * QG_BLOCK_N;
                for (int i = (int)epi_thread; i < QG_WG_ROWS * lines; i += 128) {
                    const int row = tile.m_begin + epi_row0 + i / lines;
                    const int col = n_begin + (i % lines) * 32;
                    if (row < shape_m && col < QG_SHAPE_N)
                        asm volatile("prefetch.global.L2 [%0];" ::"l"(sum_c + (int64_t)row * ldc + col));
                }
            }
#endif

            /* K block kb is issued before kb - 1 is waited for (wait_group
             * 1), and kb - 1's stage is released then. */
            uint32_t prev_s = 0;
#if QG_BF16_MERGE > 1
            /* merged stages: the full steps, then the tail step (its
             * sub-block count known at compile time: no wgmma under a
             * run-time condition) */
            for (int kb = 0; kb < num_kb - 1; ++kb)
                qg_bf16_merged_step<QG_BF16_MERGE>(acc, full, empty, s, phase, prev_s, kb > 0,
                                                   desc_a0, desc_b0, lane);
#if QG_BF16_SPLITK > 1 && QG_MERGE_TAIL != QG_BF16_MERGE
            /* the tail step is the last rank's; the others end on a full one */
            if (sk_end == QG_NUM_K_STEPS)
                qg_bf16_merged_step<QG_MERGE_TAIL>(acc, full, empty, s, phase, prev_s, num_kb > 1,
                                                   desc_a0, desc_b0, lane);
            else
                qg_bf16_merged_step<QG_BF16_MERGE>(acc, full, empty, s, phase, prev_s, num_kb > 1,
                                                   desc_a0, desc_b0, lane);
#else
            qg_bf16_merged_step<QG_MERGE_TAIL>(acc, full, empty, s, phase, prev_s, num_kb > 1,
                                               desc_a0, desc_b0, lane);
#endif
#else
            for (int kb = 0; kb < num_kb; ++kb) {
                qg_mbarrier_wait(&full[s], phase);
                qg_bf16_fence_acc(acc);
                qg_wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < QG_BLOCK_K / 16; ++kk)
#pragma unroll
                    for (int t = 0; t < QG_WG_TILES; ++t)
                        qg_wgmma_m64k16_bf16(acc[t],
                                             desc_a0 + (s * QG_SMEM_A + t * 8192 + kk * QG_A_K16_BYTES) / 16,
                                             desc_b0 + (s * QG_SMEM_B + kk * QG_B_K16_BYTES) / 16, 1);
                qg_wgmma_commit();
                qg_bf16_fence_acc(acc);
                qg_wgmma_wait1();
                if (kb > 0) qg_bf16_release(empty, prev_s, lane);
                prev_s = s;
                qg_bf16_advance(s, phase);
            }
#endif
            qg_wgmma_wait0();
            qg_bf16_fence_acc(acc);
            if (num_kb > 0) qg_bf16_release(empty, prev_s, lane);

#if QG_BF16_SPLITK > 1
            /* ---- split-K: reduce-scatter, then this rank's units into D
             * (header: "Split-K") ----------------------------------------- */
            qg_bf16_splitk_reduce(acc, smem_a, sk_bars, sk_rank, sk_tile, lane, threadIdx.x);
            ++sk_tile;
            (void)epi_bar, (void)epi_row0; /* (no shared output tile) */
            {
                const int n_begin = tile.n_block * QG_BLOCK_N;
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
                        if (qg_sk_owner(t * (QG_BLOCK_N / 8) + j) != sk_rank) continue;
                        if (n_begin + j * 8 >= QG_SHAPE_N) continue; /* N: a multiple of 8 */
                        const int col = n_begin + j * 8 + (int)(lane % 4) * 2;
#pragma unroll
                        for (int half = 0; half < 2; ++half) {
                            const int row = tile.m_begin + (int)wg_row + t * 64 + half * 8;
                            if (row >= shape_m) continue;
                            float x = acc[t][j * 4 + half * 2], y = acc[t][j * 4 + half * 2 + 1];
                            const int64_t at = (int64_t)row * ldd + col;
#if QG_D_F32
                            float2 *p = (float2 *)(d + at * 4);
#if QG_WITH_C
                            const float2 c = *p; /* D holds C (the host's copy) */
                            x = c.x + x;
                            y = c.y + y;
#endif
                            *p = make_float2(x, y);
#else
                            uint32_t *p = (uint32_t *)(d + at * 2);
#if QG_WITH_C
                            const uint32_t c = *p;
                            x = __uint_as_float(c << 16) + x;
                            y = __uint_as_float(c & 0xffff0000u) + y;
#endif
                            *p = qg_pack_bf16x2(x, y);
#endif
                        }
                    }
            }
#elif QG_SUM_REDUCE
            /* ---- the batch sum's tree (header comment above the helpers) -- */
            const int wg_m0 = tile.m_begin + epi_row0;
            if (wg_m0 >= shape_m) continue; /* no row of D: no node in any split */
#if QG_SUM_ATOMIC
            /* ---- the batch sum's atomic reduction (comment above the helpers) */
            {
                const int n_begin = tile.n_block * QG_BLOCK_N;
#if QG_D_F32
                float *target = (float *)d; /* C (or zeros) already there */
                const int64_t ldt = ldd;
#else
                float *target = sum_ws;
                constexpr int64_t ldt = QG_SHAPE_N;
#endif
#if QG_SUM_RED_V4
                /* v3: 16-byte reductions, half as many. Lanes 2i and 2i + 1
                 * (lane % 4 = 0, 1 or 2, 3) hold columns 0-1 and 2-3 of four
                 * adjacent ones, rows r and r + 8; one exchange of two values
                 * gives the even lane row r's four, the odd lane row r + 8's
                 * (every lane shuffles: the row checks come after). The
                 * target's rows are 16-byte aligned (ldd * 4 and N * 4 are
                 * multiples of 16, D and W 16-byte aligned: the host's). */
                const bool odd = (lane & 1) != 0;
                const int col4 = (int)(lane % 4 / 2) * 4;
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
                        if (n_begin + j * 8 >= QG_SHAPE_N) break;
                        const float a0 = acc[t][j * 4 + 0], a1 = acc[t][j * 4 + 1];
                        const float a2 = acc[t][j * 4 + 2], a3 = acc[t][j * 4 + 3];
                        /* the even lane sends its row r + 8 pair, the odd its row r pair */
                        const float r0 = __shfl_xor_sync(0xffffffffu, odd ? a0 : a2, 1);
                        const float r1 = __shfl_xor_sync(0xffffffffu, odd ? a1 : a3, 1);
                        const int row = tile.m_begin + (int)wg_row + t * 64 + (odd ? 8 : 0);
                        if (row >= shape_m) continue;
                        float *p = target + (int64_t)row * ldt + n_begin + j * 8 + col4;
                        qg_bf16_red_add_f32x4(p, odd ? r0 : a0, odd ? r1 : a1, odd ? a2 : r0,
                                              odd ? a3 : r1);
                    }
#else
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
                        if (n_begin + j * 8 >= QG_SHAPE_N) break;
#pragma unroll
                        for (int half = 0; half < 2; ++half) {
                            const int row = tile.m_begin + (int)wg_row + t * 64 + half * 8;
                            if (row >= shape_m) continue;
                            qg_bf16_red_add_f32x2(target + (int64_t)row * ldt + n_begin + j * 8 +
                                                      (int)(lane % 4) * 2,
                                                  acc[t][j * 4 + half * 2],
                                                  acc[t][j * 4 + half * 2 + 1]);
                        }
                    }
#endif
#if !QG_D_F32
                /* the region's last arrival: W -> bf16 D, W zeroed again */
                uint32_t *counter =
                    sum_counters + (size_t)(wg_m0 / 64) * QG_TREE_N16 + n_begin / 16;
                uint32_t *arrival = (uint32_t *)smem_d + wg; /* the warpgroup's broadcast word */
                qg_named_barrier(epi_bar, 128);
                if (epi_thread == 0)
                    *arrival = qg_bf16_tree_arrive(counter, (uint32_t)(QG_NUM_GROUPS - 1));
                qg_named_barrier(epi_bar, 128);
                if (*arrival == (uint32_t)(QG_NUM_GROUPS - 1)) {
#if QG_SUM_EPI_BATCHED
                    /* v2: every load first, into the accumulators (dead after
                     * the reductions), then the stores. The loads and stores
                     * are volatile asm with memory clobbers, kept in program
                     * order: v1's load, store, load, ... put one L2 round
                     * trip per n8 piece on the path (32 for a 128x128 tile,
                     * ~10 us); here the loads share one. */
#pragma unroll
                    for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                        for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
                            if (n_begin + j * 8 >= QG_SHAPE_N) break;
                            const int col = n_begin + j * 8 + (int)(lane % 4) * 2;
#pragma unroll
                            for (int half = 0; half < 2; ++half) {
                                const int row = tile.m_begin + (int)wg_row + t * 64 + half * 8;
                                if (row >= shape_m) continue;
                                const float2 v =
                                    qg_bf16_ld_relaxed_f32x2(target + (int64_t)row * ldt + col);
                                acc[t][j * 4 + half * 2] = v.x;
                                acc[t][j * 4 + half * 2 + 1] = v.y;
                            }
                        }
#endif
#pragma unroll
                    for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                        for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
                            if (n_begin + j * 8 >= QG_SHAPE_N) break;
                            const int col = n_begin + j * 8 + (int)(lane % 4) * 2;
#pragma unroll
                            for (int half = 0; half < 2; ++half) {
                                const int row = tile.m_begin + (int)wg_row + t * 64 + half * 8;
                                if (row >= shape_m) continue;
                                float *w = target + (int64_t)row * ldt + col;
#if QG_SUM_EPI_BATCHED
                                const float2 v =
                                    make_float2(acc[t][j * 4 + half * 2], acc[t][j * 4 + half * 2 + 1]);
#else
                                const float2 v = qg_bf16_ld_relaxed_f32x2(w);
#endif
                                qg_bf16_st_cg_zero2(w);
                                *(uint32_t *)(d + ((int64_t)row * ldd + col) * 2) =
                                    qg_pack_bf16x2(v.x, v.y);
                            }
                        }
                }
#else
                (void)sum_ws, (void)sum_counters, (void)epi_bar;
#endif
                (void)sum_c, (void)ldc;
            }
#else
            {
                const int n_begin = tile.n_block * QG_BLOCK_N;
#if QG_WITH_C
                /* split 0 adds C (prefetched): loads only, no store between
                 * them, so they overlap (C == D: this read precedes split 0's
                 * arrival, which precedes the root's writes of D) */
                if (tile.group == 0) {
#pragma unroll
                    for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                        for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
                            if (n_begin + j * 8 >= QG_SHAPE_N) break;
#pragma unroll
                            for (int half = 0; half < 2; ++half) {
                                const int row = tile.m_begin + (int)wg_row + t * 64 + half * 8;
                                if (row >= shape_m) continue;
                                const float2 cv = *(const float2 *)(sum_c + (int64_t)row * ldc +
                                                                   n_begin + j * 8 +
                                                                   (int)(lane % 4) * 2);
                                acc[t][j * 4 + half * 2] += cv.x;
                                acc[t][j * 4 + half * 2 + 1] += cv.y;
                            }
                        }
                }
#endif
                const int m64_blocks = (shape_m + 63) / 64;
                const int mb0 = wg_m0 / 64, ng0 = n_begin / 8;
                const size_t slot_floats = (size_t)m64_blocks * 64 * QG_SHAPE_N;
                uint32_t *counters = sum_counters + ((size_t)mb0 * QG_TREE_N16 + n_begin / 16) *
                                                        (QG_NUM_GROUPS - 1);
                uint32_t *arrival = (uint32_t *)smem_d + wg; /* the warpgroup's broadcast word */
                int node = tile.group, span = 1; /* this level's node and its splits */
                bool root = true;
                while (span < QG_NUM_GROUPS) {
                    const int first = node / QG_SUM_RADIX * QG_SUM_RADIX * span; /* parent's */
                    const int kids = min(QG_SUM_RADIX, (QG_NUM_GROUPS - first + span - 1) / span);
                    if (kids > 1) {
                        qg_bf16_tree_store(acc, sum_ws + (size_t)(node * span) * slot_floats, mb0,
                                           ng0, m64_blocks, epi_thread);
                        qg_named_barrier(epi_bar, 128);
                        if (epi_thread == 0)
                            *arrival = qg_bf16_tree_arrive(counters + first + span - 1,
                                                           (uint32_t)(kids - 1));
                        qg_named_barrier(epi_bar, 128);
                        if (*arrival != (uint32_t)(kids - 1)) { /* others still to come */
                            root = false;
                            break;
                        }
                        /* the children in index order (own value read back too);
                         * child 0's is in acc already when it is this one */
                        if (node != first / span)
                            qg_bf16_tree_add<true>(acc, sum_ws + (size_t)first * slot_floats, mb0,
                                                   ng0, m64_blocks, epi_thread);
                        for (int c = 1; c < kids; ++c)
                            qg_bf16_tree_add<false>(
                                acc, sum_ws + (size_t)(first + c * span) * slot_floats, mb0, ng0,
                                m64_blocks, epi_thread);
                    }
                    node /= QG_SUM_RADIX;
                    span *= QG_SUM_RADIX;
                }
                if (!root) continue;
                /* the root: D = acc (+ C), the fragment's own layout (rows r and
                 * r + 8 of each m64 tile, two columns of each n8 piece) */
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
                        const int col = n_begin + j * 8 + (int)(lane % 4) * 2;
                        if (n_begin + j * 8 >= QG_SHAPE_N) break;
#pragma unroll
                        for (int half = 0; half < 2; ++half) {
                            const int row = tile.m_begin + (int)wg_row + t * 64 + half * 8;
                            if (row >= shape_m) continue;
                            const float x = acc[t][j * 4 + half * 2], y = acc[t][j * 4 + half * 2 + 1];
                            const int64_t at = (int64_t)row * ldd + col;
#if QG_D_F32
                            *(float2 *)(d + at * 4) = make_float2(x, y);
#else
                            *(uint32_t *)(d + at * 2) = qg_pack_bf16x2(x, y);
#endif
                        }
                    }
            }
#endif /* QG_SUM_ATOMIC */
#else
            /* ---- epilogue: accumulators -> smem_d -> TMA ------------------- */
#if QG_D_HALF
            /* two rounds of block_n / 2 columns through the half tile (header:
             * QG_D_HALF); the k-grouped tile is stored whole (the rank-3 map
             * clips rows past M), so every round is TMA. The rounds are
             * written out (compile-time halves: the accumulators stay in
             * registers, no wgmma serialization) */
            {
                const int n_begin = tile.n_block * QG_BLOCK_N;
                const int d_row = tile.m_begin + epi_row0;
                const int d_group = kgroups.first_group + tile.group;
                const uint32_t d_base = qg_smem_addr(smem_d);
                const bool issuer = epi_thread == 0 && epi_row0 < tile.rows;
                if (epi_thread == 0) qg_bulk_wait_group_read0();
                qg_named_barrier(epi_bar, 128);
                qg_bf16_d_half_put<0>(acc, d_base, wg_row, lane);
                qg_fence_proxy_async_shared();
                qg_named_barrier(epi_bar, 128);
                if (issuer) qg_bf16_d_half_store(&tmap_d, smem_d, 0, n_begin, d_row, d_group, epi_row0);
                if (epi_thread == 0) qg_bulk_wait_group_read0();
                qg_named_barrier(epi_bar, 128);
                qg_bf16_d_half_put<1>(acc, d_base, wg_row, lane);
                qg_fence_proxy_async_shared();
                qg_named_barrier(epi_bar, 128);
                if (issuer) qg_bf16_d_half_store(&tmap_d, smem_d, 1, n_begin, d_row, d_group, epi_row0);
            }
#else
            if (epi_thread == 0) qg_bulk_wait_group_read0();
            qg_named_barrier(epi_bar, 128);
#if QG_D_F32
            {
                const uint32_t d_base = qg_smem_addr(smem_d);
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int j = 0; j < QG_BLOCK_N / 8; ++j)
#pragma unroll
                        for (int half = 0; half < 2; ++half) {
                            const uint32_t row = wg_row + t * 64 + half * 8;
                            const uint32_t col = j * 8 + (lane % 4) * 2;
                            qg_st_shared_f32x2(d_base + qg_bf16_d_offset(row, col / 4) + (col % 4) * 4,
                                               acc[t][j * 4 + half * 2], acc[t][j * 4 + half * 2 + 1]);
                        }
            }
#else
#pragma unroll
            for (int t = 0; t < QG_WG_TILES; ++t) {
                /* lane l addresses row l % 16 of the warp's 16 rows, the right
                 * 8-column half for lanes 16..31: the four 8x8 matrices are
                 * (rows 0-7 | 8-15) x (cols 0-7 | 8-15) of columns 16i.. */
                const uint32_t row = wg_row - lane / 4 + t * 64 + lane % 16;
#pragma unroll
                for (int i = 0; i < QG_BLOCK_N / 16; ++i)
                    qg_stmatrix_x4(smem_d + qg_bf16_d_offset(row, i * 2 + lane / 16),
                                   qg_pack_bf16x2(acc[t][i * 8 + 0], acc[t][i * 8 + 1]),
                                   qg_pack_bf16x2(acc[t][i * 8 + 2], acc[t][i * 8 + 3]),
                                   qg_pack_bf16x2(acc[t][i * 8 + 4], acc[t][i * 8 + 5]),
                                   qg_pack_bf16x2(acc[t][i * 8 + 6], acc[t][i * 8 + 7]));
            }
#endif
            qg_fence_proxy_async_shared();
            qg_named_barrier(epi_bar, 128);

            const int n_begin = tile.n_block * QG_BLOCK_N;
            const int d_row = (QG_KIND == 2 ? tile.group * shape_m : 0) + tile.m_begin + epi_row0;
            if (tile.tma_store || tile.rows >= epi_row0 + QG_WG_ROWS) {
                if (epi_thread == 0 && epi_row0 < tile.rows) {
                    for (int i = 0; i < QG_BLOCK_N / QG_STORE_COLS &&
                                    n_begin + i * QG_STORE_COLS < QG_SHAPE_N; ++i) {
                        const unsigned char *chunk =
                            smem_d + (i * QG_BLOCK_M + epi_row0) * QG_STORE_BYTES;
#if QG_KIND == 4 || QG_KIND == 5 || QG_KIND == 6
#if QG_KIND == 4
                        const int d_group = kgroups.first_group + tile.group;
#else
                        const int d_group = tile.group;
#endif
                        if (QG_WITH_C)
                            qg_tma_reduce_add_3d(&tmap_d, chunk, n_begin + i * QG_STORE_COLS,
                                                 d_row, d_group);
                        else
                            qg_tma_store_3d(&tmap_d, chunk, n_begin + i * QG_STORE_COLS, d_row,
                                            d_group);
#else
                        if (QG_WITH_C)
                            qg_tma_reduce_add_2d(&tmap_d, chunk, n_begin + i * QG_STORE_COLS, d_row);
                        else
                            qg_tma_store_2d(&tmap_d, chunk, n_begin + i * QG_STORE_COLS, d_row);
#endif
                    }
                    qg_bulk_commit_group();
                }
            } else {
                /* Rows past the group's end must stay untouched (masked-out
                 * and inter-group rows): 16-byte stores of the rows that may
                 * be written (QG_SHAPE_N * QG_D_BYTES is a multiple of 16). */
                constexpr int units = QG_BLOCK_N * QG_D_BYTES / 16;
                for (int c = epi_thread; c < QG_WG_ROWS * units; c += 128) {
                    const int row = c / units, u = c % units;
                    const int col = n_begin + u * (16 / QG_D_BYTES);
                    if (epi_row0 + row < tile.rows && col < QG_SHAPE_N)
                        *(uint4 *)(d + ((int64_t)(d_row + row) * ldd + col) * QG_D_BYTES) =
                            *(const uint4 *)(smem_d + qg_bf16_d_offset(epi_row0 + row, u));
                }
            }
#endif /* QG_D_HALF */
#endif /* QG_BF16_SPLITK / QG_SUM_REDUCE */
        }
        if (epi_thread == 0) qg_bulk_wait_group0(); /* the warpgroup's stores */
    }

#if QG_CLUSTER > 1
    /* Neither CTA may exit while its partner can still multicast into it or
     * arrive on its barriers. */
    qg_cluster_sync();
#endif
}
#endif /* QG_SUM_CONVERT */
