/*
 * qg_fp8_gemm.cuh -- block-scaled FP8 GEMM for sm_90a (dense, contiguous-
 * grouped and masked-grouped: one kernel, the scheduler mode differs).
 *
 *   D[m, n] = sum_kb SFA[m, kb] * SFB[n/128, kb] * sum_{k in kb} A[m, k] B[n, k]
 *
 * The JIT defines, before including this file:
 *   QG_KIND            0 dense, 1 contiguous, 2 masked, 3 contiguous psum,
 *                      4 k-grouped (qg_scheduler.cuh; 4: QG_SFB_COLS, no
 *                      multicast, and the groups' A and B maps, K blocks and D
 *                      slices in the kgroups parameter, qg_kgroups)
 *                      5 batched (since 0.6.0): G independent GEMMs of
 *                      shape_m x N, one launch (DeepGEMM's fp8_bmm, the
 *                      einsum 'bhr,hdr->bhd'): A, B and D are rank-3 maps
 *                      with the batch as the third coordinate (any batch
 *                      strides, so A_h may be the column slice x[:, h, :]),
 *                      SFA per batch as the masked kind's ([G][K/128][sfa_ld]),
 *                      SFB as the grouped kinds' ([G][N/128][K/128]); the
 *                      maps' M extent is shape_m, so loads past a batch's
 *                      rows read zeros and TMA stores clip there: no tile
 *                      reaches the next batch. bf16 D only, no split-K, no
 *                      B multicast (a pair shares its m-block and batch)
 *   QG_SFB_COLS        1: the weight-gradient ("1D1D") mode: B is scaled per
 *                      column per 128 of K like A per row (SFB [K/128][sfb_ld],
 *                      N-major), each stage brings its block_n scales by TMA
 *                      and promotion multiplies every sum by its row's and its
 *                      column's scale; K is a run-time argument (num_k_blocks)
 *                      so that one kernel serves every K (the k-grouped GEMM);
 *                      dense scheduler, no split-K, no K-pipelining
 *   QG_D_F32           1: D is FP32 (QG_SFB_COLS only)
 *   QG_D_FP8           1: D is e4m3 with one FP32 scale per 1x128 block of a
 *                      row (sfd, M-major: the next GEMM's sfa), 2: the same
 *                      with the scales rounded up to powers of two (UE8M0);
 *                      1D2D kinds 0..3, block_n a multiple of 128, or 64 / 32
 *                      with the 128-column scale group split over the
 *                      QG_FP8_SPLIT = 128 / block_n CTAs of a cluster (see the
 *                      epilogue, "FP8 D", and "FP8 D split" below)
 *   QG_SWIGLU          1 (with QG_D_FP8): the MoE up-projection's SwiGLU
 *                      epilogue. B holds gate and up rows interleaved in
 *                      blocks of 128 (B rows [256 b, 256 b + 128) = gate rows
 *                      [128 b, 128 b + 128), the next 128 = the up rows of
 *                      the same columns), so a 256-column tile's thread holds
 *                      gate and up of the same output columns; D is
 *                      y = silu(min(gate, L)) * clamp(up, -L, L) * w[row]
 *                      (L = swiglu_limit > 0, else no clamp; w = row_weight,
 *                      NULL: 1) as e4m3 with 1x128 scales, N / 2 columns
 *                      (see the epilogue, "SwiGLU"); whole 256-column tiles,
 *                      so never with the split tiles
 *   QG_D_REDUCE        1: D += the product, by TMA reduce-add
 *                      (cp.reduce.async.bulk.tensor .add .f32: the SMs never
 *                      read D; QG_D_F32 only)
 *   QG_SHAPE_N/K       problem N and K (baked in); M arrives at run time
 *   QG_NUM_GROUPS      G (1 for dense)
 *   QG_BLOCK_M/N       tile; QG_NUM_STAGES pipeline depth
 *   QG_MULTICAST       0 none, 1 A, 2 B (dense: pairs along M; contiguous,
 *                      masked, psum: per tile, QG_PAIR_TILES); QG_CLUSTER 1 or 2
 *   QG_SPLIT_K         1, or 2 (dense, no multicast): the QG_CLUSTER = 2 CTAs
 *                      of a cluster share one tile, each summing half of K;
 *                      CTA 1 sends its FP32 sums to CTA 0 through distributed
 *                      shared memory, and CTA 0 adds them and stores D
 *   QG_SWIZZLE_GROUP   scheduler group size (blocks)
 *   QG_SFB_ROWS        128-row SFB blocks one tile can touch (1..3)
 *   QG_SMEM_BYTES      the host's shared-memory plan (checked below)
 *   QG_PRODUCER_REGS / QG_MATH_REGS   the setmaxnreg register split
 *   QG_WGMMA_N         N of one wgmma (QG_BLOCK_N, or half of it: a multiple of 8)
 *   QG_ACC_SETS        wgmma accumulator sets per math warpgroup
 *   QG_STORE_COLS      columns of one TMA store chunk of D (bf16: 16, 32 or 64;
 *                      FP32: 8, 16 or 32, or block_n with QG_D_ROWS)
 *   QG_D_ROWS          1: FP32 D leaves row-major in one chunk (see below)
 *   QG_KPIPE           1: K-pipelined main loop (one wgmma unit per warpgroup,
 *                      QG_ACC_SETS = 2): K block kb is issued before K block
 *                      kb - 1 is waited for and promoted
 *   QG_WGMMA_*         the wgmma operand list for N = QG_WGMMA_N
 *
 * Anatomy: compile-time checks -> shared-memory plan -> barrier init ->
 * role split with register reconfiguration -> producer (one elected lane
 * issues TMA; a second warp copies each tile's SFB) / consumers (WGMMA per
 * 128-K block, promotion into FP32 registers on the CUDA cores) -> epilogue (stmatrix -> shared -> TMA store, or a
 * row-predicated store where some rows must stay untouched).
 *
 * Pipeline invariants: stage s and phase advance together (qg_advance: s
 * wraps at QG_NUM_STAGES and flips the phase), once per K block, identically
 * in producer and consumers (the same tiles, the same K loop). full[s]
 * completes when the stage's TMA bytes have landed (one producer arrival +
 * transaction bytes); empty[s] completes when
 * every math warp of every CTA of the cluster has finished reading stage s
 * (multicast writes into both CTAs, so both must have released it; the two
 * CTAs run the same number of tiles of the same K blocks, in the grouped
 * kinds' B multicast by dummy tiles: QG_PAIR_TILES). The
 * producer's first wait on empty[s] uses parity 1, which passes on a fresh
 * barrier.
 *
 * Tile and SFB invariants: the math warps run no scheduler. The second
 * producer warp (the SFB warp) runs it and hands each tile over through one
 * of two buffers: a 16-byte slot with the tile (qg_tile_pack; group -1 after
 * the last tile) and the tile's SFB (QG_SFB_ROWS rows x all K blocks), so
 * that the main loop reads one float per row per K block from shared memory
 * (no global load on the MMA issue path) and holds no scheduler state in its
 * registers (the grouped walkers' made the large tiles spill). The SFB warp
 * fills the buffers one tile ahead: it waits sfb_empty[b], each lane copies
 * its share from global memory, lane 0 writes the slot, and every lane
 * arrives on sfb_full[b] (32 arrivals, release); the math warps wait
 * sfb_full[b] before a tile's main loop, read the slot again after it, and
 * every math thread then arrives on sfb_empty[b] (each
 * releases its own reads: a warp's one arrival after __syncwarp orders its
 * other lanes' reads only through the warp barrier, which compute-sanitizer
 * racecheck does not count, and it reported the buffer's reuse as a WAR
 * hazard once a CTA ran three tiles; 2026-11-25 c). Buffer
 * b and its parity advance once a tile, identically on both sides (the same
 * scheduler).
 *
 * 1D1D mode (QG_SFB_COLS): stage s also holds block_n column scales of its K
 * block (TMA, counted in the stage's bytes); the math warps read them into
 * registers before the K block's wgmma (with the row scales), so the stage is
 * released as soon as the wgmma is done (block_n <= 136: the wider tiles read
 * them while promoting and release the stage after it, QG_COLS_EARLY); the
 * SFB warp hands over the tiles only (its SFB buffers are unused).
 *
 * Split-K invariants (QG_SPLIT_K = 2): CTA 0 of a cluster runs K blocks
 * [0, ceil(nk / 2)) of the cluster's tile and CTA 1 the rest, each with its
 * own pipeline (no stage is shared). After its main loop each CTA r > 0 waits
 * for red_empty (CTA 0 has read its previous sums) and writes its sums into
 * slot r - 1 of CTA 0's reduction buffer with st.async, each store
 * completing its bytes on CTA 0's red_full; CTA 0 expects those bytes (one
 * arrival), waits for red_full, adds the slots in rank order (the sum does
 * not depend on timing), and each of its math warps arrives on every
 * partner's red_empty (release, cluster scope) before it stores D. Both
 * barriers flip once a tile.
 *
 * FP8 D split invariants (QG_FP8_SPLIT = 128 / block_n CTAs a cluster, block_n
 * 64 or 32, no multicast, no split-K but under nk, below): the scheduler counts N in whole
 * 128-column groups (QG_NUM_N_BLOCKS padded to a multiple of QG_FP8_SPLIT, the
 * swizzle group a multiple of it), so the CTAs of a cluster always hold the
 * QG_FP8_SPLIT tiles of one m-block and one scale group (a tile past N, in the
 * last group of an N that is not a multiple of 128, computes and stores
 * nothing of D but takes part in the exchange), and every CTA of a cluster
 * runs the same number of tiles. Per tile, each CTA's math threads send their
 * rows' partial amax (over the CTA's columns) to slot n_block % QG_FP8_SPLIT
 * of every CTA's exchange buffer with st.async, completing bytes on that
 * CTA's xchg_full (armed with expect_tx by its thread 0); each waits for its
 * xchg_full, takes the max of the slots, and each math warp then arrives on
 * every CTA's xchg_empty (release, cluster scope), which a CTA's writers wait
 * for (acquire) before they send the next tile's values. Both barriers
 * flip once a tile. The CTA of the group's first columns stores the scale.
 * With split-K as well (QGEMM_FP8OUT_VARIANT nk: dense, QG_SPLIT_K 2, a
 * cluster of QG_FP8_SPLIT x 2, no QG_FP8_EARLY): cluster rank = K rank x
 * QG_FP8_SPLIT + column slot; both K ranks of a slot get the same tile (the
 * scheduler numbers tiles by slot), K rank 1 sends its sums to K rank 0 of
 * its slot as in split-K (red_full / red_empty) and goes on, and the K-rank-0
 * CTAs (ranks 0 .. QG_FP8_SPLIT - 1) exchange the amax as above on their own
 * barrier pair (xchg_full / xchg_empty, after split-K's).
 *
 * QG_FP8_EARLY (with QG_FP8_SPLIT > 1; QGEMM_FP8OUT_VARIANT early): the
 * cluster exists for the exchange alone (no multicast, no split-K), so its
 * start-up barrier is split: every thread arrives (relaxed; the barrier
 * inits are ordered by fence.mbarrier_init) once the CTA's own barriers are
 * initialized (__syncthreads), and the producer starts loading at once; the
 * math threads wait on it only before their first st.async to a partner
 * (xchg_ready), every other thread (and a math thread that ran no tile)
 * before it exits. And no exit cluster barrier: the math threads wait
 * instead until every partner's release of their last tile's slots has
 * landed (xchg_empty), the last DSMEM operation aimed at their CTA. What it
 * removes: the partners' launch skew and the release fence (MEMBAR.ALL.GPU)
 * ahead of the first TMA load and at the exit, where it waits for the sfd
 * stores (ncu, 2026-11-29, 128x4096x7168 64x64: 65 samples at the exit's
 * arrive, 376 at its wait; the first tile's wait drew 298 against bf16 D's
 * 154). The math is the same code: bytes and scales equal the default's.
 */
#ifndef QG_FP8_EARLY
#define QG_FP8_EARLY 0
#endif
/* QG_FP8_LAST (with QG_FP8_EARLY; QGEMM_FP8OUT_VARIANT last): the
 * exchange's release leaves the critical path. Under QG_FP8_EARLY each math
 * warp releases its CTA's slots (mbarrier.arrive.release.cluster on every
 * partner's xchg_empty: MEMBAR.ALL.GPU + CGAERRBAR in the SASS, ptxas 13,
 * 64x64 split) between reading the group's amax and quantizing, and before
 * it exits waits for every partner's release of the last tile. Here a warp
 * releases at the end of a tile (after D's shared stores and the TMA store's
 * issue; its scale stores after the release, so that the fence does not
 * wait for them), and only where the SFB warp has handed over another tile
 * (its next slot, filled one tile ahead: qg_mbarrier_wait on that buffer's
 * sfb_full is the wait the next iteration makes anyway): the last tile's
 * slots are never reused, so no release and no wait for the partners'
 * releases at exit: the CTAs exit together on the cluster barrier's second
 * phase instead, arrived at relaxed (no MEMBAR). Safe: a CTA's shared
 * memory is a DSMEM target only of its partners' st.async (all landed once
 * its xchg_full completes) and of their releases, every one of which it
 * waited for before it sent the tile after it (xchg_empty); every CTA of a
 * cluster runs the same tiles, so all agree on the last. The same
 * math: bytes and scales equal the default's. Most CTAs of the small-M rows
 * run one tile, so there the exchange is: st.async, the wait, nothing else
 * on the way to D's store. */
#ifndef QG_FP8_LAST
#define QG_FP8_LAST 0
#endif
/* QG_FP8_SFB_PF (with QG_D_FP8; QGEMM_FP8OUT_VARIANT sfbpf): the TMA lane
 * asks L2 for its first tile's SFB lines before its first stage's loads. The
 * math warps start a tile only once the SFB warp has copied its SFB (global
 * loads issued beside the producer's first 13-odd stages of every CTA, all
 * queued at DRAM at once): ncu (2026-11-29, 128x4096x7168 64x64) had the
 * math warps' wait for the first tile at ~9 K cycles in the e4m3-D kernel,
 * ~4 K in bf16 D's, most of the 6 K cycles between them. A hint: nothing
 * waits for it, nothing else changes (the same bytes and scales). */
#ifndef QG_FP8_SFB_PF
#define QG_FP8_SFB_PF 0
#endif
/* QG_FP8_EPI (with QG_D_FP8, not SwiGLU; QGEMM_FP8OUT_VARIANT epi): a
 * cheaper e4m3 epilogue, the same bytes and scales. The default's SASS
 * (64x128, NVRTC 13, 2026-11-29) spends per row group of 128 columns ~48
 * instructions on the amax (LOP3 |x| + VIMNMX3) and, around each of its 16
 * e4m3 pairs, a BSSY / BRA / BSYNC and a 0xffff mask for the per-pair
 * non-finite fix-up (`exact` is per row, so ptxas branches per pair): ~4
 * instructions of 7 a pair are overhead. Here: the amax is max.NaN of |x|
 * (one FMNMX a sum, abs folded, as a tree: depth 5, not a chain of 16; a
 * NaN gives the canonical NaN, whose scale and bytes equal the default's:
 * the sums are FFMA results, so any NaN among them is canonical already),
 * and the pairs of a row group take one warp-uniform branch (vote.all of
 * exact, false only for inf / NaN sums): the fast loop is FMUL, FMUL, F2FP,
 * STS.U16 a pair, its addresses one LOP3 a 16-byte unit (qg_fp8_d_pair_addr),
 * the slow loop the default's. */
#ifndef QG_FP8_EPI
#define QG_FP8_EPI 0
#endif
#ifndef QG_SFB_COLS
#define QG_SFB_COLS 0
#endif
#ifndef QG_D_F32
#define QG_D_F32 0
#endif
#ifndef QG_D_REDUCE
#define QG_D_REDUCE 0
#endif
#ifndef QG_D_FP8
#define QG_D_FP8 0
#endif
#ifndef QG_SWIGLU
#define QG_SWIGLU 0
#endif
/* CTAs of a cluster that split one 128-column scale group of FP8 D (1: none;
 * the scheduler reads it). */
#if QG_D_FP8 && QG_BLOCK_N < 128
#define QG_FP8_SPLIT (128 / QG_BLOCK_N)
#else
#define QG_FP8_SPLIT 1
#endif

/* B multicast in the contiguous, masked and psum kinds: a pair's two m-blocks
 * come from device data (masked_m, group ends, m_indices), so whether the
 * pair shares its B tile is decided per tile, and a CTA without work beside
 * its peer's tile runs a dummy tile (qg_scheduler.cuh QG_PAIR_TILES, as the
 * BF16 kernel's). A dummy tile (rows 0) loads nothing (its producer arrives
 * on each stage without bytes), its math warps wait for and release every
 * stage (both CTAs' empty barriers count both CTAs' releases of each use of a
 * stage), its SFB is not copied and its epilogue is skipped. Every other
 * variant compiles as before (QG_PAIR_TILES 0). */
#if QG_MULTICAST == 2 && (QG_KIND == 1 || QG_KIND == 2 || QG_KIND == 3)
#define QG_PAIR_TILES 1
#else
#define QG_PAIR_TILES 0
#endif

#include "qg_ptx.cuh"
#include "qg_scheduler.cuh"

#if QG_KIND == 4
/* The k-grouped GEMM's groups, one launch's worth (src/gemm.c fills the same
 * layout, qg_kgroup_params): group i's A_i [M][K_i] and B_i [N][K_i] each have
 * a tensor map of their own (their rows are K_i bytes apart), its scales
 * start at K block sf_kb[i] of the shared SFA / SFB arrays, it runs
 * num_kb[i] K blocks (0: its tiles store zeros) and writes D slice
 * d_group[i]. Passed by value (__grid_constant__: TMA reads the maps in the
 * parameter space; a launch reads no device memory to find them). */
#define QG_KGROUP_MAX 32
struct qg_kgroups {
    qg_tensor_map a[QG_KGROUP_MAX];
    qg_tensor_map b[QG_KGROUP_MAX];
    int sf_kb[QG_KGROUP_MAX];
    int num_kb[QG_KGROUP_MAX];
    int d_group[QG_KGROUP_MAX];
    int count;
};
#define QG_KGROUPS_PARAM , const __grid_constant__ qg_kgroups kgroups
#define QG_RUN_GROUPS kgroups.count
#else
#define QG_KGROUPS_PARAM
#define QG_RUN_GROUPS QG_NUM_GROUPS
#endif
/* FP8 D: where its scales go (sfd [ceil(N/128)][sfd_ld], masked [G][..]);
 * SwiGLU: its clamp limit (0: none) and per-row weights (NULL: none). */
#if QG_D_FP8 && QG_SWIGLU
#define QG_FP8_D_PARAM                                                               \
    , float *__restrict__ sfd, int64_t sfd_ld, float swiglu_limit,                   \
        const float *__restrict__ row_weight
#elif QG_D_FP8
#define QG_FP8_D_PARAM , float *__restrict__ sfd, int64_t sfd_ld
#else
#define QG_FP8_D_PARAM
#endif

#define QG_BLOCK_K 128
/* K blocks baked in (QG_SFB_COLS: a placeholder, K arrives at run time). */
#define QG_NUM_K_BLOCKS ((QG_SHAPE_K + QG_BLOCK_K - 1) / QG_BLOCK_K)
#define QG_NUM_SFB_N ((QG_SHAPE_N + 127) / 128)
/* D's columns: N, or N / 2 under SwiGLU (a 256-column tile of gate | up
 * pairs writes 128); per tile, per problem, and D's 1x128 scale groups. */
#define QG_D_COLS (QG_SWIGLU ? QG_BLOCK_N / 2 : QG_BLOCK_N)
#define QG_OUT_N (QG_SWIGLU ? QG_SHAPE_N / 2 : QG_SHAPE_N)
#define QG_NUM_SFD_N ((QG_OUT_N + 127) / 128)
#define QG_NUM_MATH_WGS (QG_BLOCK_M == 64 ? 1 : 2)
#define QG_NUM_MATH_THREADS (128 * QG_NUM_MATH_WGS)
#define QG_NUM_THREADS (QG_NUM_MATH_THREADS + 128)
/* CTAs whose TMA loads write into one another's stages (multicast pairs). */
#define QG_LOAD_CLUSTER (QG_MULTICAST ? QG_CLUSTER : 1)
#define QG_WG_TILES (QG_BLOCK_M / 64 / QG_NUM_MATH_WGS) /* m64 tiles per math warpgroup */
#define QG_WG_ROWS (QG_WG_TILES * 64) /* tile rows per math warpgroup */
/* The epilogue's unit (one store of D): each math warpgroup with its own
 * rows (bf16 D), or the whole tile by all math threads (FP32 D: the weight
 * gradient's TMA stores and reduce-adds ran slower per warpgroup, H200
 * 2026-11-25 i, explore-g.log, of DeepGEMM per warpgroup / whole:
 * k-grouped 4x4096x7168x8192 0.886-0.888 / 0.976-0.981, wgrad
 * 2112x4096x7168 0.834-0.840 / 0.935). QG_EPI_ROWS is the D map's box rows
 * (src/gemm.c d_box_rows). */
/* QG_D_ROWS: FP32 D in one row-major chunk of the tile's whole width (the
 * host's choice for an odd multiple of 8 at short K, with store_cols =
 * block_n: src/config.c qg__plan, plan.d_rows), unswizzled in shared memory ([rows][block_n]
 * floats), as DeepGEMM's 1D1D kernel stores it: one TMA store of the tile,
 * rows of block_n * 4 bytes (the swizzled chunks of such a width are 8
 * columns, 32-byte rows). A row pitch of 8 mod 16 words (mod 32 banks: 8 or
 * 24) spreads the 4 rows of a half-warp's 8-byte stores over all 32 banks;
 * widths of 0 mod 16 columns keep the chunks, whose swizzle does that. */
#ifndef QG_D_ROWS
#define QG_D_ROWS 0
#endif
static_assert(!QG_D_ROWS || (QG_D_F32 && QG_STORE_COLS == QG_BLOCK_N && QG_BLOCK_N % 16 == 8),
              "row-major D: FP32, one chunk of an odd multiple of 8 columns");
#define QG_EPI_PER_WG (!QG_D_F32)
#define QG_EPI_ROWS (QG_EPI_PER_WG ? QG_WG_ROWS : QG_BLOCK_M)
#define QG_EPI_THREADS (QG_EPI_PER_WG ? 128 : QG_NUM_MATH_THREADS)
/* masked, and psum's 256-row tiles: m64 tiles past a group's end are skipped */
#define QG_SKIP_ROWS (QG_KIND == 2 || QG_KIND == 5 || (QG_KIND == 3 && QG_BLOCK_M == 256))
#define QG_OUT (QG_BLOCK_N / 2)                         /* FP32 sums per thread per m64 tile */
/* A warpgroup's share of a K block is QG_UNITS WGMMA units of m64 x
 * QG_WGMMA_N: its m64 tiles times the QG_N_PARTS parts of block_n. The units
 * run in QG_PASSES passes of QG_ACC_SETS accumulator sets (issue, wait,
 * promote); large tiles (256x128, 128x256) take turns in one set, so that
 * a thread holds QG_WGMMA_N / 2 accumulators beside its QG_WG_TILES *
 * QG_OUT sums. */
#define QG_N_PARTS (QG_BLOCK_N / QG_WGMMA_N)
#define QG_UNITS (QG_WG_TILES * QG_N_PARTS)
#define QG_ACC (QG_WGMMA_N / 2)
#define QG_PASSES (QG_KPIPE ? 1 : QG_UNITS / QG_ACC_SETS)
#define QG_KCHUNK 4 /* K blocks per pipelined chunk (QG_KPIPE) */
#define QG_UNIT_TILE(u) ((u) / QG_N_PARTS) /* unit u: m64 tile of the warpgroup */
#define QG_UNIT_PART(u) ((u) % QG_N_PARTS) /* unit u: part of block_n */

/* K blocks per unrolled iteration of the one-set main loop: the next K
 * block's barrier wait and scale reads then issue among this one's
 * promotion. Measured per tile (H200, 2026-11-25 f, explore-g.log and
 * peers-unroll.txt, kineto beside DeepGEMM): 128x192 by 4 (4096x1536x24576
 * 0.940 -> 0.961-0.965 of DeepGEMM, 4096x2112x7168 0.964 -> 0.987; by 8 it
 * lost 1.5% of that at K = 24576); 128x256 by 8 (contiguous 4 x 8192,
 * 6144x7168: 2238.4 us rolled, 2196.8 by 4, 2163.5 by 8), and SwiGLU's
 * 64x256 (whose one warpgroup runs the loop of each of 128x256's) alike; 256x128 by 8
 * from 32 K blocks, by 4 below (2026-11-25 i, explore-b.log: by 8 against
 * by 4, of DeepGEMM: 4096x16384x7168 0.965-0.967 -> 0.979, 4096x7168x16384
 * 0.969-0.971 -> 0.977, 4096x4096x7168 0.971-0.974 -> 0.979; but
 * 4096x7168x576 1.020 / 0.997 -> 0.955 and 4096x24576x1536 0.999 / 0.991 ->
 * 0.987, and by 8 spills at K = 1152 and masked 1536, where by 4 does not).
 * The other one-set tiles were not measured unrolled and keep the rolled
 * loop (with the barrier tested ahead, QG_TEST_AHEAD). Some K still spill
 * (CPU sweep over K: masked 256x128 at 18432-28672 by 4 or by 8, contiguous
 * 128x192 at 16384):
 * the heuristic then falls back to the next tile (qg__select_avoiding).
 * The 1D1D loop (its trip count a run-time argument) by 4, as DeepGEMM
 * unrolls its own by its stage count: weight gradient 7168x4096x16384
 * 969.8-972.9 -> 957.4-959.9 us, 4096x4096x7168 259.5-260.6 -> 255.9-256.4,
 * 576x4096x7168 45.0-45.1 -> 43.7-43.9, k-grouped level (H100, beside
 * DeepGEMM, A B A B: bench/results/2026-11-27-h100-17 explore-e.log); but
 * not 128x136 with its column scales in registers (QG_COLS_EARLY), which
 * spills so (232 math registers: 52 bytes by 4, 16 by 2). The dense weight
 * gradient's 128x136 stored row-major (QG_D_ROWS, K <= 4096) reads them
 * while promoting instead and unrolls by 4 (QG_ROWS_136_UNROLLED): H200,
 * beside DeepGEMM, twice (2026-11-28-h200-15 explore-d.log): 24576x4096x1536
 * 431.8-433.6 -> 413.6-413.9 us, 7168x4096x2048 170.5-171.3 -> 166.2-167.0;
 * on an H100 level (2026-11-28-h100-19 explore-f.log, qgemm alone, twice:
 * 456.6-456.7 -> 456.0-456.6 us, 172.4 -> 172.0). The chunked store
 * (2112x4096x7168 142.9-143.8 -> 145.3-146.4 on the H200) and the k-grouped
 * kind (2-4% slower on its three 128x136 rows) keep the early reads, rolled;
 * by 2 it lost on five of six rows. */
#define QG_ROWS_136_UNROLLED (QG_SFB_COLS && QG_KIND == 0 && QG_D_ROWS && QG_BLOCK_N == 136)
#define QG_K_UNROLL                                                        \
    (QG_SFB_COLS ? (QG_BLOCK_N == 136 && !QG_ROWS_136_UNROLLED ? 1 : 4)    \
     : QG_BLOCK_M <= 128 && QG_BLOCK_N == 256 ? 8                          \
     : QG_BLOCK_M == 256 && QG_BLOCK_N == 128 ? (QG_NUM_K_BLOCKS >= 32 ? 8 : 4) \
     : QG_BLOCK_M == 128 && QG_BLOCK_N == 192 ? 4                          \
                                              : 1)
/* Without the unrolling, the next stage's full barrier is tested ahead of
 * the loop top. */
#define QG_TEST_AHEAD (QG_K_UNROLL == 1 && !QG_SFB_COLS)
#define QG_PRAGMA(x) _Pragma(#x)
#define QG_UNROLL(n) QG_PRAGMA(unroll n)

/* Rows of the multicast operand each CTA of a pair loads (it loads its half
 * and multicasts it to both). */
#define QG_A_LOAD_ROWS (QG_MULTICAST == 1 ? QG_BLOCK_M / QG_CLUSTER : QG_BLOCK_M)
#define QG_B_LOAD_ROWS (QG_MULTICAST == 2 ? QG_BLOCK_N / QG_CLUSTER : QG_BLOCK_N)

/* Shared-memory plan (bytes); src/config.c computes the same numbers. */
#define QG_ROUND_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define QG_D_BYTES (QG_D_F32 ? 4 : QG_D_FP8 ? 1 : 2)
#define QG_SMEM_D (QG_ROUND_UP(QG_BLOCK_M * QG_D_COLS * QG_D_BYTES, 1024))
#define QG_SMEM_A (QG_BLOCK_M * QG_BLOCK_K)
#define QG_SMEM_B (QG_BLOCK_N * QG_BLOCK_K)
#define QG_SMEM_SFA (QG_BLOCK_M * 4)
/* SFB of one tile: its QG_SFB_ROWS 128-column blocks x every K block (row r
 * of K block kb at r * QG_NUM_K_BLOCKS + kb), two such buffers (this tile's
 * and the next one's), each a multiple of 16 bytes. */
#define QG_SFB_TILE (QG_SFB_ROWS * QG_NUM_K_BLOCKS)
#define QG_SFB_BUF_FLOATS QG_ROUND_UP(QG_SFB_TILE, 4)
/* QG_SFB_COLS: instead, each stage's block_n column scales (one TMA box),
 * stages QG_SFB_COLS_STRIDE floats apart: a TMA destination is 128-byte
 * aligned (block_n need only be a multiple of 8 there). */
#define QG_SFB_COLS_STRIDE QG_ROUND_UP(QG_BLOCK_N, 32)
#define QG_SMEM_SFB (QG_SFB_COLS ? QG_NUM_STAGES * QG_SFB_COLS_STRIDE * 4 : 2 * QG_SFB_BUF_FLOATS * 4)
/* Split-K: CTA 0's slots for its partners' FP32 sums (a multiple of 4 KiB,
 * so the stages stay 1024-byte aligned), and the two reduction barriers. */
#define QG_SMEM_RED ((QG_SPLIT_K - 1) * QG_BLOCK_M * QG_BLOCK_N * 4)
#define QG_SMEM_RED_BARRIERS ((QG_SPLIT_K > 1) * 16 + (QG_FP8_SPLIT > 1) * 16)
/* FP8 D split: QG_FP8_SPLIT slots of block_m partial amax words (1 KiB
 * multiples: the stages stay 1024-byte aligned). */
#define QG_SMEM_XCHG (QG_FP8_SPLIT > 1 ? QG_ROUND_UP(QG_FP8_SPLIT * QG_BLOCK_M * 4, 1024) : 0)
#define QG_SMEM_TOTAL                                                                  \
    (1024 /* alignment slack */ + QG_SMEM_D + QG_SMEM_RED + QG_SMEM_XCHG + QG_NUM_STAGES * (QG_SMEM_A + \
     QG_SMEM_B + QG_SMEM_SFA) + QG_SMEM_SFB + QG_NUM_STAGES * 16 + 32 /* SFB buffers' barriers */ + QG_SMEM_RED_BARRIERS + \
     32 /* tile slots */)
/* Rows of A (and SFA) a stage brings: block_m (both halves under A
 * multicast), or the host's QG_A_BOX_ROWS = round_up(M, 8) for a dense M
 * below block_m (the rest of the stage's A rows are never loaded: they feed
 * only rows of the tile that are never stored). */
#ifndef QG_A_BOX_ROWS
#define QG_A_BOX_ROWS QG_A_LOAD_ROWS
#endif
#define QG_A_ROWS_IN (QG_MULTICAST == 1 ? QG_BLOCK_M : QG_A_BOX_ROWS)
#define QG_STAGE_TX_BYTES (QG_A_ROWS_IN * QG_BLOCK_K + QG_SMEM_B + QG_A_ROWS_IN * 4 + \
                           (QG_SFB_COLS ? QG_BLOCK_N * 4 : 0))

/* Register split after setmaxnreg, chosen by the host (src/config.c). */
#if !defined(QG_PRODUCER_REGS) || !defined(QG_MATH_REGS)
#error "the JIT defines QG_PRODUCER_REGS and QG_MATH_REGS"
#endif

static_assert(QG_BLOCK_M == 64 || QG_BLOCK_M == 128 || QG_BLOCK_M == 256, "block_m");
/* block_n: a multiple of 16 (stmatrix writes bf16 D 16 columns at a time);
 * FP32 D leaves through plain shared stores, a multiple of 8 (the wgmma N
 * step) is enough there. */
static_assert(QG_BLOCK_N % (QG_D_F32 ? 8 : 16) == 0 && QG_BLOCK_N >= 16 && QG_BLOCK_N <= 256,
              "block_n");
static_assert(QG_WG_TILES >= 1 && QG_WG_TILES <= 2, "m64 tiles per warpgroup");
static_assert(QG_WGMMA_N % 8 == 0 && QG_BLOCK_N % QG_WGMMA_N == 0 && QG_N_PARTS <= 2, "wgmma n");
static_assert(QG_KPIPE ? QG_UNITS == 1 && QG_ACC_SETS == 2 : QG_UNITS % QG_ACC_SETS == 0,
              "accumulator sets");
static_assert(QG_MULTICAST == 0 || QG_CLUSTER == 2, "multicast needs a 2-CTA cluster");
static_assert(QG_CLUSTER == 1 || QG_CLUSTER == 2 ||
                  (QG_CLUSTER == QG_FP8_SPLIT * QG_SPLIT_K && QG_FP8_SPLIT > 1),
              "clusters of 1 or 2 CTAs (4, 8: FP8 D split over 32-column tiles, or split "
              "and split-K)");
static_assert(QG_A_LOAD_ROWS % 8 == 0 && QG_B_LOAD_ROWS % 8 == 0, "1024-byte aligned halves");
static_assert(QG_A_BOX_ROWS % 8 == 0 && QG_A_BOX_ROWS <= QG_A_LOAD_ROWS &&
                  (QG_A_BOX_ROWS == QG_A_LOAD_ROWS || (QG_KIND == 0 && !QG_SFB_COLS && QG_MULTICAST != 1)),
              "a short A box: dense, without A multicast");
static_assert(QG_SFB_ROWS >= 1 && QG_SFB_ROWS <= 3, "sfb rows");
static_assert(QG_SMEM_TOTAL == QG_SMEM_BYTES, "host and kernel disagree on shared memory");
static_assert(QG_KIND != 1 || QG_BLOCK_M <= 128, "contiguous segments are 128-row aligned");
static_assert(!QG_SFB_COLS || ((QG_KIND == 0 || QG_KIND == 4) && QG_SPLIT_K == 1 && !QG_KPIPE &&
                                QG_BLOCK_M <= 128),
              "1D1D mode: dense or k-grouped scheduler, no split-K, one-set loop, block_m <= 128");
static_assert(QG_KIND != 4 || (QG_SFB_COLS && QG_D_F32 && QG_MULTICAST == 0),
              "k-grouped: 1D1D mode, FP32 D, no multicast");
static_assert(QG_KIND != 5 || (!QG_SFB_COLS && !QG_D_FP8 && QG_SPLIT_K == 1 && QG_MULTICAST != 2),
              "batched: 1D2D, bf16 D, no split-K, no B multicast");
static_assert((!QG_D_F32 || QG_SFB_COLS) && (!QG_D_REDUCE || QG_D_F32),
              "FP32 D: 1D1D mode; reduce-add: FP32 D");
/* FP8 D: each tile row covers whole 128-column scale groups, so a group's
 * amax is one quad's; one 128-byte swizzled store chunk per group. Or a tile
 * of 64 or 32 columns, its group split over the cluster (QG_FP8_SPLIT), one
 * store chunk of its width (bf16-free e4m3 D only: never SwiGLU). */
static_assert(!QG_D_FP8 || (QG_KIND <= 3 && !QG_SFB_COLS &&
                            (QG_BLOCK_N % 128 == 0 || QG_BLOCK_N == 64 || QG_BLOCK_N == 32) &&
                            QG_STORE_COLS == (QG_BLOCK_N < 128 ? QG_BLOCK_N : 128)),
              "FP8 D: the 1D2D kinds, block_n a multiple of 128 (or 64, 32: split), "
              "128-column store chunks (or block_n)");
static_assert(!QG_FP8_SFB_PF || (QG_D_FP8 && !QG_SFB_COLS), "QG_FP8_SFB_PF: e4m3 D (1D2D) only");
static_assert(!QG_FP8_EPI || (QG_D_FP8 && !QG_SWIGLU), "QG_FP8_EPI: e4m3 D without SwiGLU only");
static_assert(!QG_FP8_EARLY || QG_FP8_SPLIT > 1,
              "QG_FP8_EARLY: the split tiles' cluster only (no multicast, no split-K)");
static_assert(!QG_FP8_LAST || QG_FP8_EARLY, "QG_FP8_LAST: with QG_FP8_EARLY (its exit)");
static_assert(QG_FP8_SPLIT == 1 || (QG_CLUSTER == QG_FP8_SPLIT * QG_SPLIT_K && QG_MULTICAST == 0 &&
                                    QG_SWIZZLE_GROUP % QG_FP8_SPLIT == 0 &&
                                    !QG_SWIGLU),
              "FP8 D split: a cluster of 128 / block_n CTAs (x 2 with split-K), no multicast, "
              "swizzle group a multiple of the split, not SwiGLU (whole 256-column tiles)");
/* SwiGLU: whole gate | up block pairs per tile (the host plans 256), N of
 * whole pairs, no split-K (its partial sums meet only before the epilogue,
 * which would work, but no plan asks for it); so never a split tile. */
static_assert(!QG_SWIGLU || (QG_D_FP8 && QG_KIND <= 2 && QG_BLOCK_N % 256 == 0 &&
                             QG_SHAPE_N % 256 == 0 && QG_SPLIT_K == 1 && QG_FP8_SPLIT == 1),
              "SwiGLU: e4m3 D, dense / contiguous / masked, block_n and N multiples of 256, "
              "no split tiles");
static_assert(QG_SPLIT_K == 1 || (QG_SPLIT_K == 2 && QG_KIND == 0 && QG_MULTICAST == 0 &&
                                  QG_CLUSTER == QG_SPLIT_K * QG_FP8_SPLIT &&
                                  QG_NUM_K_BLOCKS >= QG_SPLIT_K && !QG_FP8_EARLY),
              "split-K: dense, no multicast, one cluster of QG_SPLIT_K CTAs, a K block each");

/* The first row of B (in the flat [G * N][K] view) this CTA loads for tile t:
 * the tile's first row, or under B multicast the first row of the CTA's half,
 * which it multicasts to both CTAs of its pair. */
QG_DEVICE int qg_b_load_row(const qg_tile &t, uint32_t rank) {
#if QG_KIND == 4 || QG_KIND == 5
    (void)rank; /* 4: each group's B has its own map; 5: the batch is B's third coordinate */
    return t.n_block * QG_BLOCK_N;
#elif QG_MULTICAST == 2
    return t.group * QG_SHAPE_N + t.n_block * QG_BLOCK_N + (int)rank * QG_B_LOAD_ROWS;
#else
    (void)rank;
    return t.group * QG_SHAPE_N + t.n_block * QG_BLOCK_N;
#endif
}

/* Next pipeline stage; the phase flips each time the stages wrap. */
QG_DEVICE void qg_advance(uint32_t &s, uint32_t &phase) {
    if (++s == QG_NUM_STAGES) {
        s = 0;
        phase ^= 1;
    }
}

/* SFB of column group j (8 columns) of the tile: the tile starts n_off
 * columns into a 128-column scale block. */
QG_DEVICE float qg_sfb_for_group(const float (&sb)[QG_SFB_ROWS], int n_off, int j) {
#if QG_SFB_ROWS == 1
    (void)n_off;
    (void)j;
    return sb[0];
#else
    const int col = n_off + j * 8;
    return col < 128 ? sb[0] : (QG_SFB_ROWS > 2 && col >= 256 ? sb[QG_SFB_ROWS - 1] : sb[1]);
#endif
}

/* A compile-time int (NVRTC has no <type_traits>). */
template <int V> struct qg_const {
    enum { value = V }; /* an enum: a static member would become a global */
};

/* Where a tile starts within its 128-column SFB block, n_off = (n_block *
 * block_n) % 128, is a multiple of the largest power of two dividing block_n
 * (below 128). With more than one SFB row per tile, call f with n_off as a
 * qg_const of each such value (DeepGEMM dispatches on its num_former_iters
 * alike); with one row every value promotes the same, so f<0> alone. */
#define QG_N_OFF_STEP ((QG_BLOCK_N & -QG_BLOCK_N) < 128 ? (QG_BLOCK_N & -QG_BLOCK_N) : 128)
template <int V, typename F> QG_DEVICE void qg_dispatch_n_off(int n_off, F &f) {
    if constexpr (QG_SFB_ROWS == 1 || QG_SFB_COLS || V + QG_N_OFF_STEP >= 128) {
        (void)n_off;
        f(qg_const<V>{});
    } else {
        if (n_off == V) f(qg_const<V>{});
        else qg_dispatch_n_off<V + QG_N_OFF_STEP>(n_off, f);
    }
}

/* The tile's first 128-column block of N (its first SFB row within the group). */
QG_DEVICE int qg_sfb_block0(const qg_tile &t) { return t.n_block * QG_BLOCK_N / 128; }

/* Row of the tile's first 128-column block in the flat [G][N/128][K/128]
 * SFB array. */
QG_DEVICE int qg_sfb_row(const qg_tile &t) { return t.group * QG_NUM_SFB_N + qg_sfb_block0(t); }

/* The scales of one K block for this thread: SFA of its rows (r and r + 8 of
 * each m64 tile) and SFB of the tile's 128-column blocks. */
struct qg_scales {
    float sa[QG_WG_TILES][2];
    float sb[QG_SFB_ROWS];
};

/* The SFB warp (32 lanes) copies tile t's SFB from global memory into a
 * shared buffer. The tile's SFB rows are consecutive in the flat
 * [G][N/128][K/128] array; rows past N read as 0 (their columns are never
 * stored). */
QG_DEVICE void qg_sfb_copy(float *buf, const float *sfb, const qg_tile &t, uint32_t lane) {
    const float *src = sfb + (size_t)qg_sfb_row(t) * QG_NUM_K_BLOCKS;
    const int rows_in_n = QG_NUM_SFB_N - qg_sfb_block0(t);
    /* Four loads a lane in flight: unrolled whole, a long K's copy spilled
     * in this 40-register warp (dense 128x192 at K = 16384). */
#pragma unroll 4
    for (int i = lane; i < QG_SFB_TILE; i += 32)
        buf[i] = i / QG_NUM_K_BLOCKS < rows_in_n ? __ldg(src + i) : 0.0f;
}

/* Read K block kb's scales: SFA from stage s (sfa_addr: this thread's first
 * row of stage 0, a shared-window address), SFB from the tile's buffer. */
QG_DEVICE void qg_read_scales(qg_scales &sc, uint32_t sfa_addr, uint32_t sfb_addr, uint32_t s,
                              int kb) {
#pragma unroll
    for (int r = 0; r < QG_SFB_ROWS && !QG_SFB_COLS; ++r)
        sc.sb[r] = qg_ld_shared_f32(sfb_addr + (r * QG_NUM_K_BLOCKS + kb) * 4);
#pragma unroll
    for (int t = 0; t < QG_WG_TILES; ++t) {
        const uint32_t a = sfa_addr + (s * QG_BLOCK_M + t * 64) * 4;
        sc.sa[t][0] = qg_ld_shared_f32(a);
        sc.sa[t][1] = qg_ld_shared_f32(a + 8 * 4);
    }
}

QG_DEVICE void qg_fence_acc(float (&acc)[QG_ACC]) {
#pragma unroll
    for (int i = 0; i < QG_ACC; ++i) qg_fence_operand(acc[i]);
}

/* One wgmma unit of stage s: m64 tile t of the warpgroup x part h of block_n,
 * 4 x k32 (the first overwrites acc). */
QG_DEVICE void qg_issue_unit(float (&acc)[QG_ACC], uint32_t desc_a0, uint32_t desc_b0, uint32_t s,
                             int t, int h) {
    const uint32_t desc_a = desc_a0 + (s * QG_SMEM_A + t * 64 * QG_BLOCK_K) / 16;
    const uint32_t desc_b = desc_b0 + (s * QG_SMEM_B + h * QG_WGMMA_N * QG_BLOCK_K) / 16;
#pragma unroll
    for (int kk = 0; kk < QG_BLOCK_K / 32; ++kk)
        qg_wgmma_m64k32_e4m3(acc, desc_a + kk * 32 / 16, desc_b + kk * 32 / 16, kk > 0);
}

/* Split-K: where float4 number v of a math thread's sums (v = (t * QG_OUT +
 * i) / 4 for sums i..i+3 of m64 tile t) sits in a reduction slot, in
 * float4s: (v * threads + thread), so a warp's 16-byte stores and loads are
 * contiguous. */
QG_DEVICE uint32_t qg_red_index(int t, int i) {
    return (t * QG_OUT + i) / 4 * QG_NUM_MATH_THREADS + threadIdx.x;
}

/* Stage s is consumed: release it (in both CTAs of a multicast pair). One
 * lane arrives for its warp, so the warp first synchronizes: every lane's
 * reads of the stage's scales then happen before the arrival. */
QG_DEVICE void qg_release_stage(uint64_t *empty, uint32_t s, uint32_t lane) {
    __syncwarp();
#if QG_LOAD_CLUSTER == 1
    if (lane == 0) qg_mbarrier_arrive(&empty[s]);
#else
    if (lane < QG_LOAD_CLUSTER) qg_mbarrier_arrive_cluster(&empty[s], lane);
#endif
}

/* Promotion: scale one unit's partial sums (m64 tile t, part h) into the FP32
 * sums o of tile t (column group j of part h is group h * QG_WGMMA_N / 8 + j
 * of the tile). */
QG_DEVICE void qg_promote(float *o, const float (&acc)[QG_ACC], const qg_scales &sc, int t, int h,
                          int n_off) {
    o += h * QG_ACC;
#pragma unroll
    for (int j = 0; j < QG_WGMMA_N / 8; ++j) {
        const float b = qg_sfb_for_group(sc.sb, n_off, h * QG_WGMMA_N / 8 + j);
        const float s0 = sc.sa[t][0] * b, s1 = sc.sa[t][1] * b;
        o[j * 4 + 0] += s0 * acc[j * 4 + 0];
        o[j * 4 + 1] += s0 * acc[j * 4 + 1];
        o[j * 4 + 2] += s1 * acc[j * 4 + 2];
        o[j * 4 + 3] += s1 * acc[j * 4 + 3];
    }
}

/* 1D1D (QG_SFB_COLS): the thread's column scales of one K block. The
 * thread's columns of 8-column group j are 8j + 2 (lane % 4) and the next
 * one (wgmma D layout, PTX ISA 9.7.15.5.1.1): one 8-byte shared load a group
 * (sfb_addr: this thread's first column of the stage). Read before the
 * K block's wgmma is issued, as DeepGEMM does: the promotion after the wait
 * then finds them in registers, and the stage can be released at once. */
/* Wider tiles have no registers for them beside their accumulators and sums
 * (CPU compile sweep, 232 math registers: 128x144 spilled 4 bytes, 128x160
 * 100): they read each group's scales from the stage while promoting, and
 * release the stage after the promotion; so does the row-major dense 128x136,
 * to unroll its loop (QG_ROWS_136_UNROLLED). */
#define QG_COLS_EARLY (QG_SFB_COLS && QG_BLOCK_N <= 136 && !QG_ROWS_136_UNROLLED)
struct qg_col_scales {
    float2 b[QG_COLS_EARLY ? QG_BLOCK_N / 8 : 1];
    uint32_t addr; /* late reads: the stage's first scale of this thread */
};
QG_DEVICE void qg_read_col_scales(qg_col_scales &cs, uint32_t sfb_addr) {
    cs.addr = sfb_addr;
#pragma unroll
    for (int j = 0; j < QG_BLOCK_N / 8 && QG_COLS_EARLY; ++j)
        cs.b[j] = qg_ld_shared_f32x2(sfb_addr + j * 8 * 4);
}

/* 1D1D promotion: every sum times its row's and its column's scale (part h
 * of block_n: its column groups' scales). */
QG_DEVICE void qg_promote_cols(float *o, const float (&acc)[QG_ACC], const qg_scales &sc, int t,
                               int h, const qg_col_scales &cs) {
    o += h * QG_ACC;
#pragma unroll
    for (int j = 0; j < QG_WGMMA_N / 8; ++j) {
        const int g = h * QG_WGMMA_N / 8 + j;
        const float2 b = QG_COLS_EARLY ? cs.b[QG_COLS_EARLY ? g : 0]
                                       : qg_ld_shared_f32x2(cs.addr + g * 8 * 4);
        o[j * 4 + 0] += sc.sa[t][0] * b.x * acc[j * 4 + 0];
        o[j * 4 + 1] += sc.sa[t][0] * b.y * acc[j * 4 + 1];
        o[j * 4 + 2] += sc.sa[t][1] * b.x * acc[j * 4 + 2];
        o[j * 4 + 3] += sc.sa[t][1] * b.y * acc[j * 4 + 3];
    }
}

/*
 * The output tile in shared memory: QG_BLOCK_N / QG_STORE_COLS chunks of
 * QG_STORE_COLS columns (chosen by the host: bf16 D 16, 32 or 64, FP32 D 8,
 * 16 or 32), each [QG_BLOCK_M rows][QG_STORE_BYTES = 32, 64 or 128] in the
 * TMA swizzle of that row size (32B, 64B, 128B; PTX ISA "Tensors",
 * swizzling modes): the 16-byte unit of a row is XORed with bits 7 and up of
 * the row's byte offset within the chunk. Each chunk's TMA store (box
 * QG_STORE_COLS x QG_BLOCK_M) undoes the swizzle, and the 8 rows an stmatrix
 * 8x8 matrix (or a warp's FP32 pair stores) touch land in different bank
 * groups. Wider chunks write D in fewer, longer row segments.
 */
#define QG_STORE_BYTES (QG_STORE_COLS * QG_D_BYTES)
#define QG_STORE_UNITS (QG_STORE_BYTES / 16)
static_assert(QG_D_ROWS || QG_STORE_BYTES == 32 || QG_STORE_BYTES == 64 || QG_STORE_BYTES == 128,
              "store chunk");
static_assert(QG_D_COLS % QG_STORE_COLS == 0, "store chunks tile D's columns");
/* Byte offset in the output tile of 16-byte unit `unit16` of tile row `row`
 * (unit16: the tile's columns 16 bytes at a time, chunk after chunk). */
QG_DEVICE uint32_t qg_smem_d_offset(uint32_t row, uint32_t unit16) {
    const uint32_t chunk = unit16 / QG_STORE_UNITS, unit = unit16 % QG_STORE_UNITS;
    const uint32_t swz = (row * QG_STORE_BYTES >> 7) & (QG_STORE_UNITS - 1);
    return chunk * QG_BLOCK_M * QG_STORE_BYTES + row * QG_STORE_BYTES + (unit ^ swz) * 16;
}
/* bf16 D: the address of 8-column unit col8 of tile row `row` (the same
 * layout as qg_smem_d_offset, in elements: this form keeps the masked
 * 128x192 and 256x128 tiles clear of spills, the byte form does not). */
QG_DEVICE uint16_t *qg_smem_d_addr(uint16_t *smem_d, uint32_t row, uint32_t col8) {
    const uint32_t chunk = col8 / QG_STORE_UNITS, unit = col8 % QG_STORE_UNITS;
    const uint32_t swz = (row * QG_STORE_BYTES >> 7) & (QG_STORE_UNITS - 1);
    return smem_d + chunk * QG_BLOCK_M * QG_STORE_COLS + row * QG_STORE_COLS + (unit ^ swz) * 8;
}

#if QG_D_FP8
/*
 * FP8 D: the per-token cast's formula (kernels/qg_cast.cuh, "Bitwise
 * contract"), applied to the FP32 sums instead of bf16 values, so that this
 * GEMM's e4m3 output and scales equal qg_per_token_cast of its bf16 output
 * up to the bf16 rounding of that intermediate:
 *   amax = max |sum| over the row's 128 columns (those that exist), clamped
 *          below at 1e-4 (0 -> 1e-4; NaN propagates);
 *   sf   = amax * fp32(1/448), or (QG_D_FP8 2) 2^ceil(log2) of it from its
 *          exponent bits, clamped to [2^-126, 2^127];
 *   q    = sum * (rcp(amax) * 448), or sum * (1 / sf) for UE8M0 (a power of
 *          two, exact), each product IEEE-rounded; e4m3 by cvt.rn.satfinite,
 *          and where amax * mult > 464 (inf / NaN sums only) c10's conversion
 *          (|v| > 464 and NaN -> 0x7F | sign).
 */
#define QG_FP8_INV448 __uint_as_float(0x3B124925u) /* float(1 / 448) */
QG_DEVICE void qg_st_shared_b16(uint32_t addr, uint32_t v) {
    asm volatile("st.shared.b16 [%0], %1;" ::"r"(addr), "h"((uint16_t)v) : "memory");
}
QG_DEVICE void qg_fp8_d_scale(uint32_t amax_bits, float &sf, float &mult) {
    float amax = __uint_as_float(amax_bits);
    if (amax < 1e-4f) amax = 1e-4f; /* NaN compares false: kept */
#if QG_D_FP8 == 2
    const uint32_t bits = __float_as_uint(__fmul_rn(amax, QG_FP8_INV448)) & 0x7FFFFFFFu;
    int e = (int)(bits >> 23) + ((bits & 0x7FFFFFu) != 0u);
    e = min(max(e, 1), 254);
    sf = __uint_as_float((uint32_t)e << 23);
    mult = __fdiv_rn(1.0f, sf);
#else
    sf = __fmul_rn(amax, QG_FP8_INV448);
    mult = __fmul_rn(__fdiv_rn(1.0f, amax), 448.0f);
#endif
}
/* Two sums -> two e4m3 bytes (a in the low byte). */
QG_DEVICE uint32_t qg_fp8_d_pack2(float a, float b, float mult, bool exact) {
    const float qa = __fmul_rn(a, mult), qb = __fmul_rn(b, mult);
    uint32_t v = qg_cvt_e4m3x2(qa, qb);
    if (!exact) {
        if (!(fabsf(qa) <= 464.0f)) v = (v & 0xFF00u) | 0x7Fu | ((__float_as_uint(qa) >> 24) & 0x80u);
        if (!(fabsf(qb) <= 464.0f)) v = (v & 0x00FFu) | (0x7Fu | ((__float_as_uint(qb) >> 24) & 0x80u)) << 8;
    }
    return v;
}
#if QG_FP8_EPI
/* max.NaN of a and b (a NaN -> the canonical NaN); of |a| and |b| below
 * (ptxas folds the |.| into FMNMX's operands) */
QG_DEVICE float qg_fmax_nan(float a, float b) {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
/* The amax (as bits) of this thread's J column pairs j0.. of row half
 * `half` of m64 tile `t` (columns past N: 8 j >= cols_left, left out), as a
 * tree: depth log2(2 J) instead of the default's chain of J. */
template <int J, typename Out>
QG_DEVICE uint32_t qg_fp8_d_amax(const Out &o, int j0, int half, int cols_left) {
    float m[J];
#pragma unroll
    for (int jj = 0; jj < J; ++jj) {
        const int j = j0 + jj;
        m[jj] = qg_fmax_nan(fabsf(o[j * 4 + half * 2]), fabsf(o[j * 4 + half * 2 + 1]));
        if (QG_SHAPE_N % 128 != 0 && j * 8 >= cols_left) m[jj] = 0.0f;
    }
#pragma unroll
    for (int w = 1; w < J; w *= 2)
#pragma unroll
        for (int jj = 0; jj < J; jj += 2 * w) m[jj] = qg_fmax_nan(m[jj], m[jj + w]);
    return __float_as_uint(m[0]);
}
/* The shared address of this thread's e4m3 pair of column pair j of tile row
 * `row`: qg_smem_d_offset's, as (rowbase ^ unit * 16) + constants. The XOR
 * touches bits 4.. log2(QG_STORE_BYTES) - 1 only, which in rowbase are the
 * row's swizzle (d_base is 1024-aligned, row * QG_STORE_BYTES has them 0):
 * one LOP3 a 16-byte unit, the rest immediate offsets. */
QG_DEVICE uint32_t qg_fp8_d_rowbase(uint32_t d_base, uint32_t row, uint32_t lane) {
    const uint32_t swz = (row * QG_STORE_BYTES >> 7) & (QG_STORE_UNITS - 1);
    return d_base + row * QG_STORE_BYTES + swz * 16 + (lane % 4) * 2;
}
QG_DEVICE uint32_t qg_fp8_d_pair_addr(uint32_t rowbase, int j) {
    const uint32_t unit16 = (uint32_t)j / 2, chunk = unit16 / QG_STORE_UNITS, unit = unit16 % QG_STORE_UNITS;
    return (rowbase ^ (unit * 16)) + chunk * QG_BLOCK_M * QG_STORE_BYTES + (j % 2) * 8;
}
/* Two sums -> two e4m3 bytes at addr (a in the low byte): qg_fp8_d_pack2
 * with exact true, the conversion's b16 stored as it is (no widening). */
QG_DEVICE void qg_fp8_d_store2(uint32_t addr, float a, float b, float mult) {
    asm volatile("{\n\t.reg .b16 t;\n\t"
                 "cvt.rn.satfinite.e4m3x2.f32 t, %1, %2;\n\t"
                 "st.shared.b16 [%0], t;\n\t}" ::"r"(addr),
                 "f"(__fmul_rn(b, mult)), "f"(__fmul_rn(a, mult))
                 : "memory");
}
#endif
#endif

extern "C" __global__ void __launch_bounds__(QG_NUM_THREADS, 1)
qg_fp8_gemm_kernel(const __grid_constant__ qg_tensor_map tmap_a,
                   const __grid_constant__ qg_tensor_map tmap_b,
                   const __grid_constant__ qg_tensor_map tmap_sfa,
                   const __grid_constant__ qg_tensor_map tmap_d,
                   const __grid_constant__ qg_tensor_map tmap_sfb, /* QG_SFB_COLS only */
                   const float *__restrict__ sfb,
                   uint16_t *__restrict__ d, int64_t ldd,
                   const int *__restrict__ m_indices,
                   const int *__restrict__ masked_m,
                   int shape_m, int prefetch_kb, int num_k_blocks QG_KGROUPS_PARAM QG_FP8_D_PARAM) {
    /* ---- shared-memory plan (tiles 1024-byte aligned for the swizzle) ---- */
    extern __shared__ __align__(1024) unsigned char qg_smem_raw[];
    unsigned char *smem = qg_smem_raw + ((1024 - (qg_smem_addr(qg_smem_raw) & 1023)) & 1023);
    uint16_t *smem_d = (uint16_t *)smem;
    [[maybe_unused]] float *smem_red = (float *)(smem + QG_SMEM_D);
    [[maybe_unused]] uint32_t *smem_xchg = (uint32_t *)(smem + QG_SMEM_D + QG_SMEM_RED);
    unsigned char *smem_a = smem + QG_SMEM_D + QG_SMEM_RED + QG_SMEM_XCHG;
    unsigned char *smem_b = smem_a + QG_NUM_STAGES * QG_SMEM_A;
    float *smem_sfa = (float *)(smem_b + QG_NUM_STAGES * QG_SMEM_B);
    float *smem_sfb = smem_sfa + QG_NUM_STAGES * QG_BLOCK_M; /* two tiles' SFB buffers */
    uint64_t *full = (uint64_t *)((unsigned char *)smem_sfb + QG_SMEM_SFB);
    uint64_t *empty = full + QG_NUM_STAGES;
    uint64_t *sfb_full = empty + QG_NUM_STAGES, *sfb_empty = sfb_full + 2; /* per SFB buffer */
    uint64_t *red_full = sfb_empty + 2; /* split-K and FP8 D split only */
    [[maybe_unused]] uint64_t *red_empty = red_full + 1;
    /* the FP8 D split's exchange barriers: after split-K's where both run */
    [[maybe_unused]] uint64_t *xchg_full = red_full + (QG_SPLIT_K > 1 ? 2 : 0);
    [[maybe_unused]] uint64_t *xchg_empty = xchg_full + 1;
    /* The tile of each SFB buffer (qg_tile_pack), 16-byte aligned: every
     * region above is a multiple of 16 bytes. */
    const uint32_t tile_slots =
        qg_smem_addr((unsigned char *)(sfb_empty + 2) + QG_SMEM_RED_BARRIERS);

    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    /* The K blocks of this CTA: all, or its rank's share of the cluster's
     * tile (rank 0 takes the odd one out). */
#if QG_SPLIT_K > 1
#define QG_KB_RANK0 ((QG_NUM_K_BLOCKS + 1) / 2)
    /* (with an FP8 D split, QG_FP8_SPLIT > 1: cluster rank = K rank x
     * QG_FP8_SPLIT + column slot; the scheduler gives a slot's K ranks one
     * tile, and a K rank's slots one scale group) */
#if QG_FP8_SPLIT > 1
    const uint32_t split_cta = qg_cluster_ctarank();
    const uint32_t split_rank = split_cta / QG_FP8_SPLIT;
    /* the CTA of K rank 0 in this CTA's column slot: the partial sums' target */
    const uint32_t split_peer0 = split_cta % QG_FP8_SPLIT;
#else
    const uint32_t split_rank = qg_cluster_ctarank();
    constexpr uint32_t split_peer0 = 0;
#endif
    const int kb_begin = split_rank ? QG_KB_RANK0 : 0;
    const int kb_end = split_rank ? QG_NUM_K_BLOCKS : QG_KB_RANK0;
#else
    [[maybe_unused]] const int kb_begin = 0, kb_end = QG_SFB_COLS ? num_k_blocks : QG_NUM_K_BLOCKS;
    (void)num_k_blocks;
#endif

    /* ---- barrier init ---------------------------------------------------- */
    if (threadIdx.x == QG_NUM_MATH_THREADS) {
        qg_tma_prefetch_descriptor(&tmap_a);
        qg_tma_prefetch_descriptor(&tmap_b);
        qg_tma_prefetch_descriptor(&tmap_sfa);
        qg_tma_prefetch_descriptor(&tmap_d);
        if (QG_SFB_COLS) qg_tma_prefetch_descriptor(&tmap_sfb);
        for (int s = 0; s < QG_NUM_STAGES; ++s) {
            qg_mbarrier_init(&full[s], 1); /* the TMA thread's expect_tx */
            qg_mbarrier_init(&empty[s], QG_LOAD_CLUSTER * QG_NUM_MATH_THREADS / 32);
        }
        for (int b = 0; b < 2; ++b) {
            qg_mbarrier_init(&sfb_full[b], 32);                         /* the SFB warp's lanes */
            qg_mbarrier_init(&sfb_empty[b], QG_NUM_MATH_THREADS); /* every math thread */
        }
#if QG_SPLIT_K > 1
        qg_mbarrier_init(red_full, 1);                     /* CTA 0's expect_tx; bytes from st.async */
        qg_mbarrier_init(red_empty, QG_NUM_MATH_THREADS / 32); /* CTA 0's math warps */
#endif
#if QG_FP8_SPLIT > 1
        qg_mbarrier_init(xchg_full, 1); /* xchg_full: thread 0's expect_tx; bytes from st.async */
        qg_mbarrier_init(xchg_empty, QG_FP8_SPLIT * QG_NUM_MATH_THREADS / 32); /* xchg_empty: every
                                                                            CTA's math warps */
#endif
        qg_fence_proxy_async_shared();
        qg_fence_mbarrier_init();
#if QG_KIND == 0
        /* Launched with PDL, the host asks for the first prefetch_kb K blocks
         * of this CTA's first B tile (the weights) to be fetched into L2 now,
         * while the grid may still wait for the previous kernel below: the
         * DRAM latency and the first bytes overlap that kernel's tail. The
         * dense scheduler reads no memory, so the tile is known here. */
        if (prefetch_kb > 0) {
            qg_scheduler first_sched;
            qg_scheduler_init(first_sched, shape_m, m_indices, masked_m, QG_RUN_GROUPS);
            qg_tile first;
            if (qg_scheduler_next(first_sched, first)) {
                const int b_row = qg_b_load_row(first, QG_CLUSTER > 1 ? qg_cluster_ctarank() : 0);
                const int kb_stop = min(kb_end, kb_begin + prefetch_kb);
                for (int kb = kb_begin; kb < kb_stop; ++kb)
                    qg_tma_prefetch_l2_2d(&tmap_b, kb * QG_BLOCK_K, b_row);
            }
        }
#endif
    }
#if QG_FP8_EARLY
    __syncthreads(); /* this CTA's barriers, initialized */
    qg_cluster_arrive_relaxed();
    /* whether this thread has waited for the cluster barrier's first phase */
    [[maybe_unused]] bool xchg_ready = false;
#elif QG_CLUSTER > 1
    qg_cluster_sync();
#else
    __syncthreads();
#endif

    /* ---- programmatic dependent launch (no-ops without it) --------------- */
    /* Everything above touches only shared memory and the kernel parameters,
     * so under PDL it overlaps the previous kernel's tail. Every global read
     * (the scheduler's masked_m / m_indices, A, B, the scales) and every
     * store of D comes after the wait. The next kernel may be scheduled from
     * now on: this grid's CTAs are all resident (persistent), and that
     * kernel waits for this one's completion before it reads D. */
    qg_grid_dependency_wait();
    if (threadIdx.x == 0) qg_launch_dependents();

    qg_scheduler sched;
    qg_scheduler_init(sched, shape_m, m_indices, masked_m, QG_RUN_GROUPS);
    qg_tile tile;
    uint32_t s = 0, phase = 0; /* pipeline stage and its parity */

    if (threadIdx.x >= QG_NUM_MATH_THREADS) {
        /* ==== producer warpgroup: one lane issues every TMA load ============ */
        qg_setmaxnreg_dec<QG_PRODUCER_REGS>();
        /* A warp-uniform test, then one elected lane: the compiler sees a
         * single lane and wraps no TMA in a per-lane loop. */
        if (warp == QG_NUM_MATH_THREADS / 32 && qg_elect_one()) {
            const uint32_t rank = QG_CLUSTER > 1 ? qg_cluster_ctarank() : 0;
            [[maybe_unused]] bool first_tile = true;
            while (qg_scheduler_next(sched, tile)) {
                const int a_row = (QG_KIND == 2 ? tile.group * shape_m : 0) + tile.m_begin;
#if QG_PAIR_TILES
                /* (a tile that does not multicast loads B whole from its first row) */
                const int b_row = qg_b_load_row(tile, tile.b_multicast ? rank : 0);
#else
                const int b_row = qg_b_load_row(tile, rank);
#endif
                int sfa_row = QG_KIND == 2 || QG_KIND == 5 ? tile.group * QG_NUM_K_BLOCKS : 0;
#if QG_KIND == 4
                /* the group's own A and B, its K blocks of the shared scales */
                const qg_tensor_map *map_a = &kgroups.a[tile.group], *map_b = &kgroups.b[tile.group];
                sfa_row = kgroups.sf_kb[tile.group];
                const int tile_kb_end = kgroups.num_kb[tile.group];
#else
                const qg_tensor_map *map_a = &tmap_a, *map_b = &tmap_b;
                const int tile_kb_end = kb_end;
#endif
                /* Plain 128 x 176..192: the loop's end is hidden from the
                 * compiler. With a short K loop of compile-time length it
                 * unrolled the loop whole (past #pragma unroll 1), and at 40
                 * registers that spilled (128x192 B, K = 1536); the other
                 * tiles spill the other way (masked 256x128 at K = 640, wide
                 * 128x256 A at K = 512): CPU compile sweep, 2026-11-25 b. */
                uint32_t load_end = (uint32_t)tile_kb_end;
                if (QG_BLOCK_M == 128 && QG_BLOCK_N > 160 && QG_WGMMA_N == QG_BLOCK_N)
                    qg_pin(load_end);
#if QG_FP8_SFB_PF
                /* (first tile only: the SFB warp copies the later ones a
                 * whole main loop ahead) */
                if (first_tile) {
                    first_tile = false;
                    const int rows = min(QG_SFB_ROWS, QG_NUM_SFB_N - qg_sfb_block0(tile));
                    const char *src = (const char *)(sfb + (size_t)qg_sfb_row(tile) * QG_NUM_K_BLOCKS);
                    const char *end = src + (size_t)rows * QG_NUM_K_BLOCKS * 4;
                    for (const char *l = (const char *)((uint64_t)src & ~(uint64_t)127); l < end; l += 128)
                        qg_prefetch_l2(l);
                }
#endif
                for (int kb = kb_begin; kb < (int)load_end; ++kb, qg_advance(s, phase)) {
                    qg_mbarrier_wait(&empty[s], phase ^ 1);
#if QG_PAIR_TILES
                    /* a dummy tile: the stage completes on the arrival alone
                     * (the peer's tile does not multicast into it:
                     * b_multicast needs both tiles real) */
                    if (tile.rows == 0) {
                        qg_mbarrier_arrive(&full[s]);
                        continue;
                    }
#endif
                    qg_mbarrier_arrive_expect_tx(&full[s], QG_STAGE_TX_BYTES);
                    unsigned char *a_dst = smem_a + s * QG_SMEM_A;
                    unsigned char *b_dst = smem_b + s * QG_SMEM_B;
#if QG_KIND == 5
                    /* batched: A and B rank 3, the batch the third coordinate */
#if QG_MULTICAST == 1
                    qg_tma_load_3d_multicast(a_dst + rank * QG_A_LOAD_ROWS * QG_BLOCK_K, map_a,
                                             &full[s], kb * QG_BLOCK_K,
                                             a_row + rank * QG_A_LOAD_ROWS, tile.group, 0x3);
#else
                    qg_tma_load_3d(a_dst, map_a, &full[s], kb * QG_BLOCK_K, a_row, tile.group);
#endif
                    qg_tma_load_3d(b_dst, map_b, &full[s], kb * QG_BLOCK_K, b_row, tile.group);
#else
#if QG_MULTICAST == 1
                    qg_tma_load_2d_multicast(a_dst + rank * QG_A_LOAD_ROWS * QG_BLOCK_K, map_a,
                                             &full[s], kb * QG_BLOCK_K,
                                             a_row + rank * QG_A_LOAD_ROWS, 0x3);
#else
                    qg_tma_load_2d(a_dst, map_a, &full[s], kb * QG_BLOCK_K, a_row);
#endif
#if QG_MULTICAST == 2 && QG_PAIR_TILES
                    /* per tile: this CTA's half of B into both CTAs, or both
                     * halves into this one (b_row: the tile's first row
                     * then; the map's box is half a tile; the stage's bytes
                     * are the same either way) */
                    if (tile.b_multicast) {
                        qg_tma_load_2d_multicast(b_dst + rank * QG_B_LOAD_ROWS * QG_BLOCK_K, map_b,
                                                 &full[s], kb * QG_BLOCK_K, b_row, 0x3);
                    } else {
#pragma unroll
                        for (int h = 0; h < 2; ++h)
                            qg_tma_load_2d(b_dst + h * QG_B_LOAD_ROWS * QG_BLOCK_K, map_b, &full[s],
                                           kb * QG_BLOCK_K, b_row + h * QG_B_LOAD_ROWS);
                    }
#elif QG_MULTICAST == 2
                    qg_tma_load_2d_multicast(b_dst + rank * QG_B_LOAD_ROWS * QG_BLOCK_K, map_b,
                                             &full[s], kb * QG_BLOCK_K, b_row, 0x3);
#else
                    qg_tma_load_2d(b_dst, map_b, &full[s], kb * QG_BLOCK_K, b_row);
#endif
#endif /* QG_KIND == 5 */
                    qg_tma_load_2d(smem_sfa + s * QG_BLOCK_M, &tmap_sfa, &full[s], tile.m_begin,
                                   sfa_row + kb);
#if QG_SFB_COLS
                    /* Each CTA loads its own column scales (not multicast):
                     * with B multicast the pair shares them, but they are
                     * 512 bytes against 16 KiB of B. */
                    qg_tma_load_2d(smem_sfb + s * QG_SFB_COLS_STRIDE, &tmap_sfb, &full[s],
                                   tile.n_block * QG_BLOCK_N, sfa_row + kb);
#endif
                }
            }
        }
        else if (warp == QG_NUM_MATH_THREADS / 32 + 1) {
            /* The SFB warp: each tile, and its SFB (not in 1D1D mode), into
             * the next free buffer; then the end of the tiles. */
            uint32_t b = 0, b_phase = 0;
            bool more;
            do {
                more = qg_scheduler_next(sched, tile);
                qg_mbarrier_wait(&sfb_empty[b], b_phase ^ 1);
#if QG_PAIR_TILES
                /* (a dummy tile's scales are never read) */
                if (more && tile.rows > 0) qg_sfb_copy(smem_sfb + b * QG_SFB_BUF_FLOATS, sfb, tile, lane);
#else
                if (more && !QG_SFB_COLS) qg_sfb_copy(smem_sfb + b * QG_SFB_BUF_FLOATS, sfb, tile, lane);
#endif
                if (lane == 0) qg_st_shared_s32x4(tile_slots + b * 16, more ? qg_tile_pack(tile) : qg_tile_end());
                qg_mbarrier_arrive(&sfb_full[b]);
                b ^= 1;
                b_phase ^= b == 0;
            } while (more);
        }
    } else {
        /* ==== math warpgroups ============================================== */
        qg_setmaxnreg_inc<QG_MATH_REGS>();
        /* The warpgroup index through a shuffle from lane 0: the compiler
         * then knows it is the same in every lane and keeps what derives
         * from it (the A descriptor) in uniform registers, instead of moving
         * it there (R2UR) before every wgmma. */
        const uint32_t wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
        const uint32_t warp_in_wg = warp % 4;
        /* First tile row of this thread's accumulator fragment for m64 tile t
         * (rows r and r + 8; wgmma D layout, 9.7.15.5.1.1). */
        const uint32_t wg_row = wg * QG_WG_TILES * 64 + warp_in_wg * 16 + lane / 4;

        /* Descriptors of stage 0; a stage / K offset adds (bytes / 16) to the
         * start-address field, which cannot carry out of its 14 bits because
         * shared memory ends below 256 KiB. */
        /* Loop invariants are pinned in registers: left to itself the
         * compiler sinks their arithmetic into the K loop and redoes it every
         * K block (kernel-anatomy of 2026-11-25: ~19 instructions a K block). */
        uint32_t desc_a0 = __shfl_sync(
            0xffffffffu, qg_wgmma_desc_sw128_lo(smem_a + wg * QG_WG_TILES * 64 * QG_BLOCK_K), 0);
        uint32_t desc_b0 = __shfl_sync(0xffffffffu, qg_wgmma_desc_sw128_lo(smem_b), 0);
        uint32_t sfa_addr = qg_smem_addr(smem_sfa + wg_row); /* this thread's SFA, stage 0 */
        /* 1D1D: this thread's first column scale of stage 0 */
        const uint32_t sfb_cols_addr = qg_smem_addr(smem_sfb) + (lane % 4) * 2 * 4;
        (void)sfb_cols_addr;
#if QG_K_UNROLL > 1
        qg_pin(desc_a0);
        qg_pin(desc_b0);
        qg_pin(sfa_addr);
#endif

        float acc[QG_ACC_SETS][QG_ACC];
        float out[QG_WG_TILES][QG_OUT];
#if QG_SPLIT_K > 1
        uint32_t red_phase = 0; /* parity of the reduction barriers' current phase */
#endif
#if QG_FP8_SPLIT > 1
        uint32_t xchg_phase = 0; /* parity of the amax exchange barriers' current phase */
#endif

        /* Tiles done so far: bit 0 names this tile's SFB buffer, bit 1 its parity. */
        uint32_t tile_iter = 0;

        for (;;) {
            /* The next tile from the SFB warp (its buffer's slot), and the
             * tile's SFB in that buffer. Only n_block is read here: the
             * epilogue reads the slot again, so that nothing of the tile
             * stays in a register through the main loop. */
            const uint32_t slot = tile_slots + (tile_iter & 1) * 16;
            qg_mbarrier_wait(&sfb_full[tile_iter & 1], (tile_iter >> 1) & 1);
            const int4 tile_head = qg_ld_shared_s32x4(slot);
            if (tile_head.x < 0) break; /* no more tiles */
            const int n_off = tile_head.z * QG_BLOCK_N % 128; /* where the tile starts in its SFB block */
#if QG_KIND == 4
            const int tile_kb_end = kgroups.num_kb[tile_head.x]; /* the group's K */
#else
            const int tile_kb_end = kb_end;
#endif
            const uint32_t sfb_addr =
                qg_smem_addr(smem_sfb) + (tile_iter & 1) * QG_SFB_BUF_FLOATS * 4;

#pragma unroll
            for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                for (int i = 0; i < QG_OUT; ++i) out[t][i] = 0.0f;

            /* The K loop, compiled once per value n_off can take (see
             * qg_dispatch_n_off): with n_off a constant, each column group's
             * SFB row is known at compile time, so promotion is one FFMA a
             * sum and an FMUL per (row, SFB row) pair, instead of a select and
             * two FMULs per column group redone every K block (128x192:
             * 281 instructions a K block, 96 of them FFMA). */
            /* ... and once per number of this warpgroup's m64 tiles that hold
             * a row of the problem (active_tiles: QG_WG_TILES, or 1 of 2 in
             * a masked tile at a group's end, QG_SKIP_ROWS); the units of
             * an m64 tile past the last row are not issued. */
            auto k_loop = [&](auto n_off_const, auto active_const) {
            [[maybe_unused]] constexpr int tile_n_off = decltype(n_off_const)::value;
            [[maybe_unused]] constexpr int active_tiles = decltype(active_const)::value;
            /* Wait for stage s (K block kb) and read its scales. */
            auto wait_stage = [&](qg_scales &sc, int kb) {
                qg_mbarrier_wait(&full[s], phase);
                qg_read_scales(sc, sfa_addr, sfb_addr, s, kb);
            };

#if QG_KPIPE
            /* K-pipelined: K block kb goes to the tensor cores in one
             * accumulator set before K block kb - 1, in the other, is waited
             * for (wait_group 1), released and promoted, so that the CUDA
             * cores promote while the tensor cores multiply. ptxas keeps the
             * wgmmas asynchronous only when it can see which group a wait
             * retires, which it cannot across a loop's back edge: the K
             * blocks therefore run in chunks of QG_KCHUNK that start and end
             * with no group in flight (the last promotion of a chunk is not
             * overlapped). Scales are read before a stage is released. */
            auto kissue = [&](float (&acc_k)[QG_ACC], qg_scales &sc, uint32_t &stage, int kb) {
                wait_stage(sc, kb);
                qg_fence_acc(acc_k);
                qg_wgmma_fence();
                qg_issue_unit(acc_k, desc_a0, desc_b0, s, 0, 0);
                qg_wgmma_commit();
                stage = s;
                qg_advance(s, phase);
            };
            auto kfinish = [&](float (&acc_k)[QG_ACC], const qg_scales &sc, uint32_t stage) {
                qg_fence_acc(acc_k);
                qg_release_stage(empty, stage, lane);
                qg_promote(out[0], acc_k, sc, 0, 0, tile_n_off);
            };
            auto kchunk = [&](int kb0, int count) {
                qg_scales sc[2];
                uint32_t stage[2];
                kissue(acc[0], sc[0], stage[0], kb0);
#pragma unroll
                for (int i = 1; i < QG_KCHUNK; ++i) {
                    if (i >= count) break;
                    kissue(acc[i % 2], sc[i % 2], stage[i % 2], kb0 + i);
                    qg_wgmma_wait1();
                    kfinish(acc[(i - 1) % 2], sc[(i - 1) % 2], stage[(i - 1) % 2]);
                }
                qg_wgmma_wait0();
                if ((count - 1) % 2) kfinish(acc[1], sc[1], stage[1]);
                else kfinish(acc[0], sc[0], stage[0]);
            };
            /* K blocks [kb0, kb0 + count) in chunks. ptxas keeps the wgmmas
             * asynchronous only when it can see the chunks' structure (with a
             * run-time first K block and one block per CTA, K = 256 split,
             * it serialized them), so each split-K rank takes its own path
             * with compile-time bounds. */
            auto k_blocks = [&](int kb0, int count) {
                for (int c = 0; c < count / QG_KCHUNK; ++c) kchunk(kb0 + c * QG_KCHUNK, QG_KCHUNK);
                if (count % QG_KCHUNK) kchunk(kb0 + count - count % QG_KCHUNK, count % QG_KCHUNK);
            };
#if QG_SPLIT_K > 1
            if (split_rank == 0) k_blocks(0, QG_KB_RANK0);
            else k_blocks(QG_KB_RANK0, QG_NUM_K_BLOCKS - QG_KB_RANK0);
#else
            k_blocks(0, QG_NUM_K_BLOCKS);
#endif
#else
            /* Unrolled so that the next K block's barrier wait is issued
             * among this one's promotion instead of exposed at a loop top
             * (kernel-anatomy of 2026-11-25: 17% of the waits failed their
             * first try without it, 0.7% with it). */
            /* QG_TEST_AHEAD: the next stage's barrier is tested before the
             * last promotion of this one, so that the loop top waits only
             * when the test failed. */
            bool next_ready = false;
            QG_UNROLL(QG_K_UNROLL)
            for (int kb = kb_begin; kb < tile_kb_end; ++kb, qg_advance(s, phase)) {
                qg_scales sc;
                if (!QG_TEST_AHEAD || !next_ready) qg_mbarrier_wait(&full[s], phase);
                qg_read_scales(sc, sfa_addr, sfb_addr, s, kb);
#if QG_SFB_COLS
                qg_col_scales cs;
                qg_read_col_scales(cs, sfb_cols_addr + s * QG_SFB_COLS_STRIDE * 4);
#endif

                /* One 128-K block on the tensor cores, in QG_PASSES passes of
                 * QG_ACC_SETS units (issue, wait, promote). */
#pragma unroll
                for (int p = 0; p < QG_PASSES; ++p) {
                    /* (a pass's units share its first unit's m64 tile, or
                     * take every tile: then the pass runs when tile 0 does) */
                    const bool pass_on = QG_UNIT_TILE(p * QG_ACC_SETS) < active_tiles;
                    if (pass_on) {
#pragma unroll
                        for (int a = 0; a < QG_ACC_SETS; ++a) qg_fence_acc(acc[a]);
                        qg_wgmma_fence();
#pragma unroll
                        for (int a = 0; a < QG_ACC_SETS; ++a)
                            qg_issue_unit(acc[a], desc_a0, desc_b0, s,
                                          QG_UNIT_TILE(p * QG_ACC_SETS + a),
                                          QG_UNIT_PART(p * QG_ACC_SETS + a));
                        qg_wgmma_commit();
#pragma unroll
                        for (int a = 0; a < QG_ACC_SETS; ++a) qg_fence_acc(acc[a]);
                        qg_wgmma_wait0();
                    }
                    /* (every scale of the stage is in registers by now,
                     * but the wide 1D1D tiles' column scales) */
                    if (p == QG_PASSES - 1 && (!QG_SFB_COLS || QG_COLS_EARLY)) {
                        qg_release_stage(empty, s, lane);
                        if (QG_TEST_AHEAD) {
                            uint32_t ns = s, np = phase;
                            qg_advance(ns, np);
                            next_ready = qg_mbarrier_test(&full[ns], np);
                        }
                    }
#pragma unroll
                    for (int a = 0; a < QG_ACC_SETS && pass_on; ++a) {
                        const int t = QG_UNIT_TILE(p * QG_ACC_SETS + a);
#if QG_SFB_COLS
                        qg_promote_cols(out[t], acc[a], sc, t, QG_UNIT_PART(p * QG_ACC_SETS + a), cs);
#else
                        qg_promote(out[t], acc[a], sc, t, QG_UNIT_PART(p * QG_ACC_SETS + a),
                                   tile_n_off);
#endif
                    }
                }
                if (QG_SFB_COLS && !QG_COLS_EARLY) qg_release_stage(empty, s, lane);
            }
#endif
            };
            /* Masked: this warpgroup's m64 tiles that hold a row of the
             * group (QG_SKIP_ROWS). Rows past the group's end are neither
             * computed nor stored; with none, the warpgroup only passes the
             * stages through (waits for each and releases it), as DeepGEMM
             * skips a warpgroup past a group's end. Measured (H200,
             * 2026-11-25 i, explore-c.log, of DeepGEMM): masked 32 x ~192
             * rows 0.965-0.966 -> 0.992 (6144x7168), 1.026-1.027 -> 1.067-1.069
             * (4096x2048); 6 x ~1024 0.977 -> 1.000-1.001 (4096x4096). The psum
             * layout's small groups ran 1.5-2% slower with it as 128x256
             * (reason not found): psum skips rows in its 256-row tiles only,
             * and the other kinds, which rarely have such tiles, compute
             * every row of a tile, as before. */
            const int wg_rows = QG_SKIP_ROWS ? qg_tile_rows(tile_head) - (int)wg * QG_WG_ROWS : QG_WG_ROWS;
            /* (QG_PAIR_TILES: a dummy tile, rows 0, is passed through by
             * every warpgroup the same way, in every kind) */
#if QG_PAIR_TILES
            if ((QG_SKIP_ROWS && wg_rows <= 0) || qg_tile_rows(tile_head) == 0) {
#else
            if (QG_SKIP_ROWS && wg_rows <= 0) {
#endif
                for (int kb = kb_begin; kb < tile_kb_end; ++kb, qg_advance(s, phase)) {
                    qg_mbarrier_wait(&full[s], phase);
                    qg_release_stage(empty, s, lane);
                }
            } else if (!QG_SKIP_ROWS || QG_WG_TILES == 1 || wg_rows > 64) {
                auto all_tiles = [&](auto n_off_const) { k_loop(n_off_const, qg_const<QG_WG_TILES>{}); };
                qg_dispatch_n_off<0>(n_off, all_tiles);
            } else {
                auto first_tile = [&](auto n_off_const) { k_loop(n_off_const, qg_const<1>{}); };
                qg_dispatch_n_off<0>(n_off, first_tile);
            }

            /* The tile for the epilogue; then its SFB and slot are read:
             * free the buffer for the SFB warp. */
            qg_tile_unpack(qg_ld_shared_s32x4(slot), tile);
            [[maybe_unused]] const int n_begin = tile.n_block * QG_BLOCK_N;
            const int d_n_begin = tile.n_block * QG_D_COLS; /* the tile's first column of D */
            qg_mbarrier_arrive(&sfb_empty[tile_iter & 1]);
            ++tile_iter;
#if QG_PAIR_TILES
            if (tile.rows == 0) continue; /* a dummy tile stores nothing */
#endif

#if QG_SPLIT_K > 1
            /* ---- split-K: the partners' sums into CTA 0 (slots: qg_red_index) */
            if (split_rank != 0) {
                qg_mbarrier_wait_acquire_cluster(red_empty, red_phase ^ 1);
                const uint32_t slot = qg_map_cluster(
                    smem_red + (split_rank - 1) * QG_BLOCK_M * QG_BLOCK_N, split_peer0);
                const uint32_t bar = qg_map_cluster(red_full, split_peer0);
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int i = 0; i < QG_OUT; i += 4)
                        qg_st_async_v4(slot + qg_red_index(t, i) * 16, out[t][i], out[t][i + 1],
                                       out[t][i + 2], out[t][i + 3], bar);
                red_phase ^= 1;
                continue; /* CTA 0 stores the tile */
            }
            if (threadIdx.x == 0)
                qg_mbarrier_arrive_expect_tx(red_full, QG_SMEM_RED); /* every partner's sums */
            qg_mbarrier_wait_acquire_cluster(red_full, red_phase);
#pragma unroll
            for (int r = 1; r < QG_SPLIT_K; ++r) {
                const float4 *slot = (const float4 *)(smem_red + (r - 1) * QG_BLOCK_M * QG_BLOCK_N);
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int i = 0; i < QG_OUT; i += 4) {
                        const float4 v = slot[qg_red_index(t, i)];
                        out[t][i] += v.x;
                        out[t][i + 1] += v.y;
                        out[t][i + 2] += v.z;
                        out[t][i + 3] += v.w;
                    }
            }
            __syncwarp(); /* the warp's reads of the slots come before its release */
#pragma unroll
            for (int r = 1; r < QG_SPLIT_K; ++r)
                if (lane == 0) qg_mbarrier_arrive_release_cluster(red_empty, r * QG_FP8_SPLIT + split_peer0);
            red_phase ^= 1;
#endif

            /* ---- epilogue: D -> smem_d (bf16: stmatrix; FP32: st.shared) -> TMA --- */
            /* Each math warpgroup stores its own QG_WG_ROWS rows of the tile
             * (QG_EPI_PER_WG), synchronizing only its own 128 threads
             * (named barrier 2 + wg), and its first thread issues (and later
             * waits for) their TMA store: one warpgroup's epilogue then runs
             * while the other's last wgmmas are still on the tensor cores,
             * and it goes on to the next tile without waiting for the other.
             * (FP32 D: one unit of every math thread, barrier 1, the whole
             * tile.) The unit's previous TMA store must have finished reading
             * its rows of smem_d (it had a whole main loop to do so) and each
             * of its threads must be done with its previous row-predicated
             * copy. */
            const uint32_t epi_unit = QG_EPI_PER_WG ? wg : 0;
            const uint32_t epi_bar = QG_EPI_PER_WG ? 2 + wg : 1;
            const uint32_t epi_thread = threadIdx.x % QG_EPI_THREADS;
            const int epi_row0 = (int)epi_unit * QG_EPI_ROWS; /* the unit's first tile row */
            if (epi_thread == 0) qg_bulk_wait_group_read0();
            qg_named_barrier(epi_bar, QG_EPI_THREADS);
#if QG_D_F32
            /* FP32 D: one 8-byte store per column pair, into the chunk
             * layout of qg_smem_d_offset (4 columns a 16-byte unit), or
             * row-major (QG_D_ROWS). */
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
                            const uint32_t off = QG_D_ROWS ? (row * QG_BLOCK_N + col) * 4
                                                           : qg_smem_d_offset(row, col / 4) + (col % 4) * 4;
                            qg_st_shared_f32x2(d_base + off, out[t][j * 4 + half * 2],
                                               out[t][j * 4 + half * 2 + 1]);
                        }
            }
#elif QG_D_FP8 && QG_SWIGLU
            /* SwiGLU, then FP8 D. The tile's 8-column groups j < 16 of each
             * 256 are gate columns, j + 16 the up columns of the same
             * output columns (the interleaved B), and a thread holds both
             * (wgmma D layout: columns 8j + 2 (lane % 4) and the next one,
             * rows r and r + 8). y replaces the gate sums in place; then the
             * FP8 D epilogue's amax (one quad), scale and e4m3 pairs over
             * the 128 output columns, into the 128-byte swizzled chunk of
             * output group c. silu and the product are qg_silu_mul_cast's
             * (kernels/qg_cast.cuh): from the same FP32 inputs the same
             * bits. The row weight multiplies y (one more rounding) before
             * the amax, so the scales are those of the weighted rows. */
            {
                const uint32_t d_base = qg_smem_addr(smem_d);
                const int64_t sf_row0 = (QG_KIND == 2 ? (int64_t)tile.group * QG_NUM_SFD_N * sfd_ld : 0) +
                                        (d_n_begin / 128) * sfd_ld + tile.m_begin;
                const int64_t w_row0 = (QG_KIND == 2 ? (int64_t)tile.group * shape_m : 0) + tile.m_begin;
                const bool clamp = swiglu_limit > 0.0f;
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const uint32_t row = wg_row + t * 64 + half * 8;
                        const bool row_in = (int)row < tile.rows;
                        const float w = row_weight && row_in ? __ldg(row_weight + w_row0 + row) : 1.0f;
#pragma unroll
                        for (int c = 0; c < QG_BLOCK_N / 256; ++c) {
                            uint32_t amax = 0;
#pragma unroll
                            for (int jj = 0; jj < 16; ++jj)
#pragma unroll
                                for (int e = 0; e < 2; ++e) {
                                    float &g = out[t][(c * 32 + jj) * 4 + half * 2 + e];
                                    float u = out[t][(c * 32 + 16 + jj) * 4 + half * 2 + e];
                                    float gv = g;
                                    if (clamp) { /* (comparisons: a NaN stays NaN) */
                                        gv = gv > swiglu_limit ? swiglu_limit : gv;
                                        u = u > swiglu_limit ? swiglu_limit : u < -swiglu_limit ? -swiglu_limit : u;
                                    }
                                    const float silu = gv / (1.0f + expf(-gv));
                                    float y = __fmul_rn(silu, u);
                                    if (row_weight) y = __fmul_rn(y, w);
                                    g = y;
                                    amax = max(amax, __float_as_uint(y) & 0x7FFFFFFFu);
                                }
                            amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
                            amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
                            float sf, mult;
                            qg_fp8_d_scale(amax, sf, mult);
                            const bool exact = __fmul_rn(__uint_as_float(amax), mult) <= 464.0f;
#pragma unroll
                            for (int jj = 0; jj < 16; ++jj) {
                                const int j = c * 32 + jj, jo = c * 16 + jj; /* tile group, D group */
                                qg_st_shared_b16(d_base + qg_smem_d_offset(row, jo / 2) + (jo % 2) * 8 + (lane % 4) * 2,
                                                 qg_fp8_d_pack2(out[t][j * 4 + half * 2],
                                                                out[t][j * 4 + half * 2 + 1], mult, exact));
                            }
                            if (lane % 4 == 0 && row_in) sfd[sf_row0 + c * sfd_ld + row] = sf;
                        }
                    }
            }
#elif QG_D_FP8 && QG_FP8_SPLIT > 1
            /* FP8 D, the scale group split over the cluster (see "FP8 D split
             * invariants" at the top): this CTA's partial amax of each row
             * over its block_n columns (those < N), the exchange, then the
             * group's scale quantizes this CTA's columns as below. */
#if QG_FP8_LAST
            float xchg_sf[QG_WG_TILES][2]; /* the rows' scales, stored after the release */
            int64_t xchg_sf_row0 = 0;
            bool xchg_sf_first = false;
#endif
            {
                const uint32_t d_base = qg_smem_addr(smem_d);
                [[maybe_unused]] const int cols_left = QG_SHAPE_N - n_begin;
                const uint32_t slot_of_cta = (uint32_t)(tile.n_block % QG_FP8_SPLIT);
                uint32_t amax[QG_WG_TILES][2];
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
#if QG_FP8_EPI
                        uint32_t a = qg_fp8_d_amax<QG_BLOCK_N / 8>(out[t], 0, half, cols_left);
#else
                        uint32_t a = 0;
#pragma unroll
                        for (int j = 0; j < QG_BLOCK_N / 8; ++j) {
                            uint32_t m2 = max(__float_as_uint(out[t][j * 4 + half * 2]) & 0x7FFFFFFFu,
                                              __float_as_uint(out[t][j * 4 + half * 2 + 1]) & 0x7FFFFFFFu);
                            if (QG_SHAPE_N % 128 != 0 && j * 8 >= cols_left) m2 = 0;
                            a = max(a, m2);
                        }
#endif
                        a = max(a, __shfl_xor_sync(0xffffffffu, a, 1));
                        a = max(a, __shfl_xor_sync(0xffffffffu, a, 2));
                        amax[t][half] = a;
                    }
                /* (|x| as bits orders like |x|; a NaN's bits exceed inf's and
                 * win the max, as fmaxf would not guarantee) */
                if (threadIdx.x == 0)
                    qg_mbarrier_arrive_expect_tx(xchg_full, QG_FP8_SPLIT * QG_BLOCK_M * 4);
#if QG_FP8_EARLY
                /* every partner's barriers are initialized (the first tile) */
                if (!xchg_ready) {
                    qg_cluster_wait();
                    xchg_ready = true;
                }
#endif
                /* every CTA has read the previous tile's values from its slots */
                qg_mbarrier_wait_acquire_cluster(xchg_empty, xchg_phase ^ 1);
                if (lane % 4 == 0) {
#pragma unroll
                    for (int q = 0; q < QG_FP8_SPLIT; ++q) {
                        const uint32_t bar = qg_map_cluster(xchg_full, (uint32_t)q);
#pragma unroll
                        for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                            for (int half = 0; half < 2; ++half) {
                                const uint32_t row = wg_row + t * 64 + half * 8;
                                qg_st_async_b32(qg_map_cluster(smem_xchg + slot_of_cta * QG_BLOCK_M + row,
                                                               (uint32_t)q),
                                                amax[t][half], bar);
                            }
                    }
                }
                qg_mbarrier_wait_acquire_cluster(xchg_full, xchg_phase);
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const uint32_t row = wg_row + t * 64 + half * 8;
                        uint32_t a = 0;
#pragma unroll
                        for (int q = 0; q < QG_FP8_SPLIT; ++q)
                            a = max(a, qg_ld_shared_u32(qg_smem_addr(smem_xchg + q * QG_BLOCK_M + row)));
                        amax[t][half] = a;
                    }
#if !QG_FP8_LAST /* (QG_FP8_LAST: at the end of the tile, below) */
                __syncwarp(); /* the warp's reads of the slots come before its release */
                if (lane < QG_FP8_SPLIT) qg_mbarrier_arrive_release_cluster(xchg_empty, lane);
#endif
                xchg_phase ^= 1;
                const int64_t sf_row0 = (QG_KIND == 2 ? (int64_t)tile.group * QG_NUM_SFB_N * sfd_ld : 0) +
                                        (n_begin / 128) * sfd_ld + tile.m_begin;
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const uint32_t row = wg_row + t * 64 + half * 8;
                        float sf, mult;
                        qg_fp8_d_scale(amax[t][half], sf, mult);
                        const bool exact = __fmul_rn(__uint_as_float(amax[t][half]), mult) <= 464.0f;
#if QG_FP8_EPI
                        if (__all_sync(0xffffffffu, exact)) {
                            const uint32_t rowbase = qg_fp8_d_rowbase(d_base, row, lane);
#pragma unroll
                            for (int j = 0; j < QG_BLOCK_N / 8; ++j)
                                qg_fp8_d_store2(qg_fp8_d_pair_addr(rowbase, j), out[t][j * 4 + half * 2],
                                                out[t][j * 4 + half * 2 + 1], mult);
                        } else
#endif
#pragma unroll
                        for (int j = 0; j < QG_BLOCK_N / 8; ++j)
                            qg_st_shared_b16(d_base + qg_smem_d_offset(row, j / 2) + (j % 2) * 8 + (lane % 4) * 2,
                                             qg_fp8_d_pack2(out[t][j * 4 + half * 2],
                                                            out[t][j * 4 + half * 2 + 1], mult, exact));
                        /* the group's first CTA stores its scale (QG_FP8_LAST: after
                         * the release at the end of the tile) */
#if QG_FP8_LAST
                        xchg_sf[t][half] = sf;
#else
                        if (slot_of_cta == 0 && lane % 4 == 0 && (int)row < tile.rows)
                            sfd[sf_row0 + row] = sf;
#endif
                    }
#if QG_FP8_LAST
                xchg_sf_row0 = sf_row0;
                xchg_sf_first = slot_of_cta == 0;
#endif
            }
#elif QG_D_FP8
            /* FP8 D. A thread holds columns 8j + 2 (lane % 4) and the next
             * one of rows r and r + 8 (wgmma D layout), so a row's 128-column
             * group is one quad's: each thread's max over its 32 sums of the
             * group, then two xor-shuffles. The e4m3 pairs go to the 128-byte
             * swizzled chunk of the group as 2-byte shared stores (a warp's
             * 8 rows land in 8 different 16-byte units: no bank conflict),
             * then leave by TMA like bf16 D; lane 0 of the quad stores the
             * row's scale (rows that are written only). Columns past N are
             * left out of the amax: in the grouped layouts they hold the next
             * group's B rows, not zeros. */
            {
                const uint32_t d_base = qg_smem_addr(smem_d);
                [[maybe_unused]] const int cols_left = QG_SHAPE_N - n_begin;
                const int64_t sf_row0 = (QG_KIND == 2 ? (int64_t)tile.group * QG_NUM_SFB_N * sfd_ld : 0) +
                                        (n_begin / 128) * sfd_ld + tile.m_begin;
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const uint32_t row = wg_row + t * 64 + half * 8;
#pragma unroll
                        for (int c = 0; c < QG_BLOCK_N / 128; ++c) {
#if QG_FP8_EPI
                            uint32_t amax = qg_fp8_d_amax<16>(out[t], c * 16, half, cols_left);
#else
                            uint32_t amax = 0;
#pragma unroll
                            for (int j = c * 16; j < c * 16 + 16; ++j) {
                                uint32_t m2 = max(__float_as_uint(out[t][j * 4 + half * 2]) & 0x7FFFFFFFu,
                                                  __float_as_uint(out[t][j * 4 + half * 2 + 1]) & 0x7FFFFFFFu);
                                if (QG_SHAPE_N % 128 != 0 && j * 8 >= cols_left) m2 = 0;
                                amax = max(amax, m2);
                            }
#endif
                            amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
                            amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
                            float sf, mult;
                            qg_fp8_d_scale(amax, sf, mult);
                            const bool exact = __fmul_rn(__uint_as_float(amax), mult) <= 464.0f;
#if QG_FP8_EPI
                            if (__all_sync(0xffffffffu, exact)) {
                                const uint32_t rowbase = qg_fp8_d_rowbase(d_base, row, lane);
#pragma unroll
                                for (int j = c * 16; j < c * 16 + 16; ++j)
                                    qg_fp8_d_store2(qg_fp8_d_pair_addr(rowbase, j), out[t][j * 4 + half * 2],
                                                    out[t][j * 4 + half * 2 + 1], mult);
                            } else
#endif
#pragma unroll
                            for (int j = c * 16; j < c * 16 + 16; ++j)
                                qg_st_shared_b16(d_base + qg_smem_d_offset(row, j / 2) + (j % 2) * 8 + (lane % 4) * 2,
                                                 qg_fp8_d_pack2(out[t][j * 4 + half * 2],
                                                                out[t][j * 4 + half * 2 + 1], mult, exact));
                            if (lane % 4 == 0 && (int)row < tile.rows)
                                sfd[sf_row0 + c * sfd_ld + row] = sf;
                        }
                    }
            }
#else
#pragma unroll
            for (int t = 0; t < QG_WG_TILES; ++t) {
                /* Lane l addresses row l % 16 of the warp's 16 rows, the right
                 * 8-column half for lanes 16..31: the four 8x8 matrices are
                 * (rows 0-7 | 8-15) x (cols 0-7 | 8-15) of columns 16i..16i+15,
                 * col8 2i and 2i + 1. */
                const uint32_t row = wg_row - lane / 4 + t * 64 + lane % 16;
#pragma unroll
                for (int i = 0; i < QG_BLOCK_N / 16; ++i)
                    qg_stmatrix_x4(qg_smem_d_addr(smem_d, row, i * 2 + lane / 16),
                                   qg_pack_bf16x2(out[t][i * 8 + 0], out[t][i * 8 + 1]),
                                   qg_pack_bf16x2(out[t][i * 8 + 2], out[t][i * 8 + 3]),
                                   qg_pack_bf16x2(out[t][i * 8 + 4], out[t][i * 8 + 5]),
                                   qg_pack_bf16x2(out[t][i * 8 + 6], out[t][i * 8 + 7]));
            }
#endif
            qg_fence_proxy_async_shared();
            qg_named_barrier(epi_bar, QG_EPI_THREADS);

            const int d_row = (QG_KIND == 2 ? tile.group * shape_m : 0) + tile.m_begin + epi_row0;
#if QG_D_FP8 && QG_OUT_N % 16
            /* e4m3 rows whose N is not a multiple of 16 bytes: the TMA store
             * wrote the whole last 16-byte unit of each row, 8 bytes past N
             * (H200, bench/results/2026-11-28-h200-20-families c-gpu.log),
             * so the tiles holding the last columns take the predicated
             * stores, which end at N */
            const bool tail_n = d_n_begin + QG_D_COLS > QG_OUT_N;
#else
            const bool tail_n = false;
#endif
            /* the masked and psum layouts' last tile of a group: a warpgroup
             * whose rows are all in the group still stores by TMA */
            /* (batched: always by TMA, the rank-3 map clipping rows past
             * shape_m; the predicated stores below know no batch stride) */
            if (!tail_n && (QG_KIND == 5 || tile.tma_store || tile.rows >= epi_row0 + QG_EPI_ROWS)) {
                if (epi_thread == 0 && epi_row0 < tile.rows) {
                    for (int i = 0; i < QG_D_COLS / QG_STORE_COLS &&
                                    d_n_begin + i * QG_STORE_COLS < QG_OUT_N; ++i) {
                        const unsigned char *chunk =
                            (const unsigned char *)smem_d +
                            (i * QG_BLOCK_M + epi_row0) * QG_STORE_COLS * QG_D_BYTES;
#if QG_KIND == 4
                        const int d_group = kgroups.d_group[tile.group];
                        if (QG_D_REDUCE)
                            qg_tma_reduce_add_3d(&tmap_d, chunk, d_n_begin + i * QG_STORE_COLS, d_row,
                                                 d_group);
                        else
                            qg_tma_store_3d(&tmap_d, chunk, d_n_begin + i * QG_STORE_COLS, d_row,
                                            d_group);
#elif QG_KIND == 5
                        /* the batch's rank-3 D: rows past shape_m are clipped */
                        qg_tma_store_3d(&tmap_d, chunk, d_n_begin + i * QG_STORE_COLS, d_row,
                                        tile.group);
#else
                        if (QG_D_REDUCE)
                            qg_tma_reduce_add_2d(&tmap_d, chunk, d_n_begin + i * QG_STORE_COLS, d_row);
                        else
                            qg_tma_store_2d(&tmap_d, chunk, d_n_begin + i * QG_STORE_COLS, d_row);
#endif
                    }
                    qg_bulk_commit_group();
                }
            } else {
                /* Some rows of the warpgroup's share must stay untouched
                 * (masked-out rows, padding rows): 16-byte stores of the rows
                 * that may be written. */
#if QG_D_FP8
                /* (e4m3: 16 columns a unit; N a multiple of 8 only, so the
                 * last unit of a row may hold 8) */
                for (int c = epi_thread; c < QG_EPI_ROWS * QG_D_COLS / 16; c += QG_EPI_THREADS) {
                    const int row = c / (QG_D_COLS / 16), unit = c % (QG_D_COLS / 16);
                    const int col = d_n_begin + unit * 16;
                    if (epi_row0 + row < tile.rows && col < QG_OUT_N) {
                        const uint4 v = *(const uint4 *)((const unsigned char *)smem_d +
                                                         qg_smem_d_offset(epi_row0 + row, unit));
                        unsigned char *dst = (unsigned char *)d + (int64_t)(d_row + row) * ldd + col;
                        if (QG_OUT_N % 16 == 0 || col + 16 <= QG_OUT_N) *(uint4 *)dst = v;
                        else *(uint2 *)dst = make_uint2(v.x, v.y);
                    }
                }
#else
                for (int c = epi_thread; c < QG_EPI_ROWS * QG_BLOCK_N / 8; c += QG_EPI_THREADS) {
                    const int row = c / (QG_BLOCK_N / 8), col8 = c % (QG_BLOCK_N / 8);
                    const int col = n_begin + col8 * 8;
                    bool ok = epi_row0 + row < tile.rows && col < QG_SHAPE_N;
                    if (ok)
                        *(uint4 *)(d + (int64_t)(d_row + row) * ldd + col) =
                            *(const uint4 *)qg_smem_d_addr(smem_d, epi_row0 + row, col8);
                }
#endif
            }
#if QG_FP8_LAST
            /* (see QG_FP8_LAST) D is on its way: release this tile's slots
             * where another tile follows (the SFB warp's next slot, which the
             * next iteration waits for anyway), then the scales */
            qg_mbarrier_wait(&sfb_full[tile_iter & 1], (tile_iter >> 1) & 1);
            if (qg_ld_shared_s32x4(tile_slots + (tile_iter & 1) * 16).x >= 0) {
                __syncwarp(); /* the warp's reads of the slots come before its release */
                if (lane < QG_FP8_SPLIT) qg_mbarrier_arrive_release_cluster(xchg_empty, lane);
            }
            if (xchg_sf_first && lane % 4 == 0) {
#pragma unroll
                for (int t = 0; t < QG_WG_TILES; ++t)
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const uint32_t row = wg_row + t * 64 + half * 8;
                        if ((int)row < tile.rows) sfd[xchg_sf_row0 + row] = xchg_sf[t][half];
                    }
            }
#endif
        }
        if (threadIdx.x % QG_EPI_THREADS == 0) qg_bulk_wait_group0(); /* each unit's stores */
#if QG_FP8_EARLY && !QG_FP8_LAST
        /* (no exit cluster barrier, below) every partner's release of the
         * last tile's slots has landed on this CTA's xchg_empty: no DSMEM
         * operation still targets this CTA's shared memory */
        if (xchg_ready) qg_mbarrier_wait_acquire_cluster(xchg_empty, xchg_phase ^ 1);
#endif
    }

#if QG_FP8_EARLY
    /* The start-up phase, not yet waited for here (the producer, a math
     * thread that ran no tile). No exit barrier: the split tiles' DSMEM
     * operations are the exchange's st.async, which their target waits for
     * (xchg_full) before it goes on, and the release arrivals, which their
     * target waits for above; so a CTA may exit once its own are in, and
     * its sfd stores need no release fence (arrive.release: MEMBAR.ALL.GPU,
     * ncu 2026-11-29: 65 samples at the exit's arrive). */
    if (!xchg_ready) qg_cluster_wait();
#if QG_FP8_LAST
    /* (QG_FP8_LAST) The CTAs of a cluster exit together, on the cluster
     * barrier's second phase, arrived at relaxed (no fence): a CTA's last
     * st.async to its partners has landed once they are here (each waited
     * for its xchg_full), whatever the rules for a DSMEM store whose source
     * has exited; the wait only keeps a CTA resident until its partners are
     * done, which does not move the kernel's end. */
    qg_cluster_arrive_relaxed();
    qg_cluster_wait();
#endif
#elif QG_CLUSTER > 1
    /* Neither CTA may exit while its partner can still multicast into it or
     * arrive on its barriers. */
    qg_cluster_sync();
#endif
}
