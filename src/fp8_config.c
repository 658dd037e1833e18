/*
 * fp8_config.c -- the FP8 family's planner and heuristic: what
 * configuration is legal, what it costs in shared memory, and which one to
 * use for a problem (docs/DESIGN.md §5). Pure: it takes the device's
 * properties and the SM count as data and knows no context; the public
 * configuration calls (qg_select_config, qg_complete_config) are the API
 * unit's (src/fp8_gemm.c).
 *
 * Legal space (checked by CI: every variant compiles without spills):
 *   block_m in {64, 128, 256}; 64 -> one math warpgroup, else two.
 *   block_n a multiple of 16 up to a maximum: the two levels of FP32
 *   accumulators take block_n registers per m64 tile, so 64 -> 176,
 *   128 -> 192 (past 160 at a 232 / 40 register split), 256 (two m64
 *   tiles per warpgroup) -> 96; plus
 *   the wide tiles, whose wgmma units take turns in one accumulator set:
 *   128 x [208, 224] and 128 x 256 (two n-parts of block_n / 2) and
 *   256 x 128 (two m64 tiles). Every kind has the same tiles (the math
 *   warps run no scheduler: kernels/qg_scheduler.cuh), but
 *   the contiguous layout (m_indices): block_m <= 128 (an m-block's
 *   expert is that of its 128-row segment; psum walks its groups, whose
 *   256-row tiles store only their group's rows);
 *   the weight gradient: wgrad_tile.
 *   multicast A: the pair shares an m-block, so the n-block count and the
 *   swizzle group must be even; multicast B, dense and weight gradient:
 *   the m-block count and the swizzle group must be even; contiguous,
 *   masked, psum (bf16 D): any count, the kernel pairs tiles per tile
 *   (kernels/qg_scheduler.cuh QG_PAIR_TILES).
 * The shared-memory formula mirrors QG_SMEM_TOTAL in kernels/qg_fp8_gemm.cuh
 * (the kernel static_asserts that the two agree).
 */
#include "internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Pipeline depth: as many stages as fit, up to 32. The 64-row tiles of the
 * small-M shapes used to stop at 8; 13-21 stages ran 5-7% faster at K = 7168
 * (64x4096x7168: 20.5 against 21.9 us; 128x4096x7168: 23.0 against 24.4;
 * 2026-11-22-explore5 (bench/HISTORY.md), run 1) and within 1% elsewhere. */
#define QG_MAX_STAGES 32
#define QG_DEFAULT_SWIZZLE 16

static int ceil_div(long long a, long long b) { return (int)((a + b - 1) / b); }
static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* The contiguous layouts (m_indices, psum) start each group at a multiple of 128 rows. */
static bool is_contiguous(qg_gemm_kind kind) {
    return kind == QG_GEMM_GROUPED_CONTIGUOUS || kind == QG_GEMM_GROUPED_PSUM;
}

/* Groups the kernel walks like the masked layout (rows known only on the device). */
static bool walks_groups(qg_gemm_kind kind) {
    return kind == QG_GEMM_GROUPED_MASKED || kind == QG_GEMM_GROUPED_PSUM;
}

/* The weight-gradient tiles: block_m 64 or 128 (an FP32 output tile of
 * 128 x 152 is 76 KiB of shared memory), block_n a multiple of 8 (the wgmma
 * N step; FP32 D leaves in chunks of 32, 16 or 8 columns) up to
 * QG_WGRAD_MAX_BN. DeepGEMM's 1D1D kernel runs 128x136 and 128x152 on its
 * shapes: at N = 4096, 152 columns make 27 n-blocks where 128 make 32, and
 * M = 2112 fits 4 waves of 128x136 where 128x128 needs 5. */
#define QG_WGRAD_MAX_BN 160
static bool wgrad_tile(int bm, int bn) {
    return (bm == 64 || bm == 128) && bn >= 16 && bn % 8 == 0 && bn <= QG_WGRAD_MAX_BN;
}

/*
 * Where an FP32 D tile of an odd multiple of 8 columns (136, 152, ...)
 * leaves in one row-major chunk of its whole width (the kernel's QG_D_ROWS)
 * instead of 8-column chunks, whose TMA stores write 32-byte row pieces: at
 * a group's K of at most QG_D_ROWS_MAX_K, where a tile's main loop is short
 * beside its store. 128x136 whole-width against 128x136 in 8-column chunks
 * (H100, bench/results/2026-11-27-h100-15, qgemm alone, explore-c.log
 * whole136 / run-e/explore-e.log bn136, us): k-grouped 16 x 4096x7168 (K
 * ~2048 a group) 2311-2316 / 2780, 16 x 7168x2048 1231-1232 / 1372, 8 x
 * 4096x7168 (K ~4096) 2031-2032 / 2127, 8 x 7168x2048 1059-1062 / 1103;
 * weight gradient 24576x4096x1536 456-457 / 546, 32768x4096x512 569-571 /
 * 695, 7168x4096x2048 173-174 / 191. At longer K the chunks won (2112 x
 * 4096 x 7168 160 / 145, 7168x4096x16384 1194-1199 / 1031), and k-grouped
 * at K ~8192 ran level (4 x 4096x7168 1928 / 2016, 4 x 7168x2048 1024 /
 * 1046); why the layout matters at long K is not known.
 */
#define QG_D_ROWS_MAX_K 4096
static int one_d_group_k(const qg_problem *p) {
    return p->kind == QG_GEMM_K_GROUPED ? ceil_div(p->k, p->num_groups) : p->k;
}
static bool d_rows_major(const qg_problem *p, int bn) {
    return qg__one_d(p->kind) && bn % 16 == 8 && one_d_group_k(p) <= QG_D_ROWS_MAX_K;
}

/* The widest block_n whose wgmma units all run in one pass of separate
 * accumulator sets (acc + FP32 sums per m64 tile fit the math registers).
 * 128 x 176..192 need the 232 / 40 split (qg__plan). Until the math warps
 * stopped running the scheduler (2026-11-25 d), the masked and psum
 * walkers' live registers made 256 x 96 and the wide tiles spill there. */
static int max_plain_block_n(int block_m) {
    if (block_m == 256) return 96;
    return block_m == 64 ? 176 : 192;
}

/* Wide tiles: block_n past the plain maximum, whose wgmma units take turns
 * in one accumulator set, so a thread holds one unit's accumulators beside
 * all its FP32 sums: 256 x 128 (two m64 tiles per warpgroup; 112 spills;
 * not in the m_indices layout, whose segments are 128-row aligned) and
 * 128 x [208, 224] or 256 (two n-parts of block_n / 2; 240 spills with
 * multicast). */
static bool is_wide(qg_gemm_kind kind, int block_m, int block_n) {
    if (qg__one_d(kind)) return false;
    if (block_m == 256) return kind != QG_GEMM_GROUPED_CONTIGUOUS && block_n == 128;
    return block_m == 128 && ((block_n >= 208 && block_n <= 224) || block_n == 256);
}

/* SwiGLU's 64-row tile (forced configurations, and the heuristic under
 * QGEMM_FP8OUT_VARIANT swm64, QG_D_SWIGLU_M64): 64 x 256, one math
 * warpgroup whose two n-parts of 128 columns (a gate block and its up
 * block) take turns in one accumulator set, as each warpgroup of 128x256
 * runs them: the same wgmma units, promotion and epilogue a row, so the same
 * bytes. A thread holds 128 sums and 64 accumulators (256 registers: one math
 * warpgroup). */
static bool swiglu_m64_tile(int d_fp8, int block_m, int block_n) {
    return (d_fp8 & QG_D_SWIGLU) && block_m == 64 && block_n == 256;
}

int qg__max_block_n(qg_gemm_kind kind, int block_m) {
    if (qg__one_d(kind)) return QG_WGRAD_MAX_BN;
    if (is_wide(kind, block_m, 256)) return 256;
    if (is_wide(kind, block_m, 128)) return 128;
    return max_plain_block_n(block_m);
}

/* 128x176 runs its K loop in 8 copies (one per offset in its SFB block,
 * qg_dispatch_n_off): the grouped kinds spill 32-36 bytes there (CPU compile
 * sweep, 2026-11-25 d: the contiguous one too, which never walked groups);
 * 128x192 (two copies) compiles clean in every kind. */
static bool grouped_176(qg_gemm_kind kind, int block_m, int block_n) {
    return block_m == 128 && block_n == 176 && kind != QG_GEMM_DENSE;
}

static bool block_n_legal(qg_gemm_kind kind, int block_m, int block_n) {
    if (qg__one_d(kind)) return wgrad_tile(block_m, block_n);
    if (block_n < 16 || block_n % 16) return false;
    if (grouped_176(kind, block_m, block_n)) return false;
    return block_n <= max_plain_block_n(block_m) || is_wide(kind, block_m, block_n);
}

static int num_n_blocks(const qg_problem *p, int block_n) { return ceil_div(p->n, block_n); }

/* FP8 D (d_fp8 1 or 2): a tile row covers whole 128-column scale groups
 * (block_n 128, 256: the group's amax is one quad's), or a tile of 64 or 32
 * columns is one of the 128 / block_n CTAs of a cluster that share a group
 * and exchange their rows' partial amax through distributed shared memory
 * (the kernel's QG_FP8_SPLIT): narrow tiles fill the SMs at small M, where
 * whole groups leave most of them idle (64x2112x7168: 17 tiles of 64x128,
 * 68 of 64x32 in clusters of 4; bench/fp8out_configs.txt). */
static bool fp8_d_tile(int d_fp8, int block_n) {
    /* 0 and negative widths pass the modulo tests below (and 128 / block_n
     * would divide by zero: found by make fuzz, a forced block_n 0). */
    if (block_n <= 0) return false;
    /* SwiGLU (d_fp8 | QG_D_SWIGLU): whole 128-row gate | up block pairs, each
     * pair one 128-column group of D: block_n 256 (the widest tile; block_m
     * 128, or 64: swiglu_m64_tile), never a split tile (its two halves would
     * sit in different CTAs). */
    if (d_fp8 & QG_D_SWIGLU) return block_n % 256 == 0;
    return !d_fp8 || block_n % 128 == 0 || block_n == 64 || block_n == 32;
}
/* CTAs of a cluster that split a scale group (1: none; never under SwiGLU). */
/* Whether the e4m3-D heuristic may pick split tiles (QGEMM_FP8OUT_SPLIT, a
 * flag; a forced configuration may always ask for one). */
#define QG_FP8OUT_SPLIT_DEFAULT 1
static bool split_tiles_allowed(void) {
    return qg__env_string("QGEMM_FP8OUT_SPLIT") ? qg__env_flag("QGEMM_FP8OUT_SPLIT")
                                                 : QG_FP8OUT_SPLIT_DEFAULT;
}

/* QGEMM_FP8OUT_VARIANT (src/env.c; issue 51: the FP8-output GEMM's overhead
 * over the bf16-output one), A/B runs: unset or empty -> new+epi+last+nk+swm64 (below); a
 * '+'-separated list of old, room (QG_D_FP8_ROOM),
 * early (QG_D_FP8_EARLY), sfbpf (QG_D_FP8_SFBPF), new (all three), epi
 * (QG_D_FP8_EPI: the cheaper e4m3 epilogue, not in new) and last
 * (QG_D_FP8_LAST: the exchange's release off the critical path, with early;
 * not in new) and nk (QG_D_FP8_NK: split tiles with split-K 2 in the
 * heuristic and forced configurations; not in new), and the SwiGLU
 * heuristic's swm64 (QG_D_SWIGLU_M64), swmca (QG_D_SWIGLU_MCA) and swmcac
 * (QG_D_SWIGLU_MCAC), swm64 in the default since 2026-11-29 (H200, masked 8 x 64
 * rows 81.9 -> 75.9 us at N 4096 and 71.2 -> 66.4 at 3072; swmca 448.3 -> 425.1 and
 * 321.1 -> 329.6, swmcac 200.3 -> 198.9 and 151.5 -> 154.0: not default;
 * bench/results/2026-11-29-h200-21-y2; a list replaces the default:
 * new+epi+last+nk+swm64 is the default spelled out) -> those flags;
 * anything else -1: an empty word ("room+") or ',' (QGEMM_HC_VARIANT's
 * separator too) included. */
int qg__fp8out_variant(void) {
    const char *v = qg__env_string("QGEMM_FP8OUT_VARIANT");
    /* unset: new+epi+last+nk+swm64 (swm64: SwiGLU's masked groups of <= 64 rows as 64x256,
     * above), new+epi+last+nk the default since 2026-11-29 (new: fused / bf16-output 1.186 ->
     * 1.147 over the 14 rows of M 64 and 128, h200-03-u3; epi: -> 1.116, h200-05-u5; last
     * and nk: 1.110 -> 1.098 -> 1.075, the N 576 rows 1.37 / 1.29 -> 1.12 / 1.08,
     * h200-14-w4) */
    if (!v) return QG_D_FP8_VARIANT | QG_D_FP8_EPI | QG_D_FP8_LAST | QG_D_FP8_NK | QG_D_SWIGLU_M64;
    /* (swm64, swmca, swmcac: the SwiGLU calls' heuristic only, QG_D_SWIGLU_FLAGS;
     * the e4m3-D calls ignore them, the SwiGLU calls ignore the others) */
    static const char *const names[] = {"old", "room", "early", "sfbpf", "new", "epi", "last", "nk",
                                        "swm64", "swmca", "swmcac"};
    /* epi is not in new: A/B against it, new+epi */
    static const int word_flags[] = {0, QG_D_FP8_ROOM, QG_D_FP8_EARLY, QG_D_FP8_SFBPF,
                                     QG_D_FP8_VARIANT, QG_D_FP8_EPI, QG_D_FP8_LAST, QG_D_FP8_NK,
                                     QG_D_SWIGLU_M64, QG_D_SWIGLU_MCA, QG_D_SWIGLU_MCAC};
    int flags = 0, i;
    while ((i = qg__env_next_word(&v, "+", false, names, 11)) >= 0) flags |= word_flags[i];
    return i == -1 ? flags : -1;
}

/* CTAs of clusters of `split` the launch finds resident on num_sms SMs
 * (cuOccupancyMaxActiveClusters; src/launch.c lower_grid_to_resident).
 * Clusters of 4 stay within a GPC, and GPCs of 18 SMs hold only 4 of them.
 * The default takes an H100 / H200's 132 SMs as 128 (a guess from the GPC
 * layout); QG_D_FP8_ROOM as the H200 reports them: 30 clusters of 4 on 132
 * SMs (ncu, 2026-11-29: 64x4096x7168 as 64x32 ran 120 CTAs for 128 tiles,
 * two rounds, 20.3 us against bf16 D's 11.8), the proportion
 * src/indexer_plan.c's hc_cluster_room uses. */
static int split_room(int d_fp8, int split, int num_sms) {
    if (split != 4 || num_sms <= 8) return num_sms;
    if (d_fp8 & QG_D_FP8_ROOM) return (int)((long)num_sms * 30 / 33 / 4 * 4);
    return num_sms - num_sms % 4 - 4;
}

static int fp8_split(int d_fp8, int block_n) {
    return d_fp8 && !(d_fp8 & QG_D_SWIGLU) && block_n < 128 ? 128 / block_n : 1;
}
/* Tiles along N as the kernel's scheduler counts them: split groups in whole
 * 128-column groups (in the last group of an N that is not a multiple of
 * 128, tiles past N take part in the exchange only). */
static int sched_n_blocks(const qg_problem *p, int d_fp8, int block_n) {
    const int split = fp8_split(d_fp8, block_n);
    return split > 1 ? ceil_div(p->n, 128) * split : num_n_blocks(p, block_n);
}

/*
 * The scheduler's group of blocks (QG_SWIZZLE_GROUP) when the caller leaves
 * it 0. Small dense problems without multicast (M <= 256: a few m-blocks,
 * bound by reading B) take 1: the m-blocks of one n-block go to consecutive
 * CTAs, which then read the same B tile at the same time and L2 serves it
 * once (ncu, 128x4096x7168 as 64x64: 128.0 MB through L2 in the default
 * order against DeepGEMM's 89.6, which orders its tiles this way; the same
 * 30.3 MB from DRAM). Measured beside DeepGEMM (H200, 2026-11-25 h,
 * bench/results/2026-11-25-h200-13, explore-i/j.log, kineto): 128x4096x7168
 * as 64x64 14.25-14.34 us against 16.29 with 16 (DeepGEMM 14.05-14.34, the
 * same tile); 128x7168x16384 as 64x112 39.50 against 48.34; 128x2112x7168
 * as 64x32 10.48-10.54 against 10.60-10.78. Everything else keeps 16 (M =
 * 4096: 1, 2, 4, 8 and 32 were slower or even, explore-i.log).
 */
static int default_swizzle(const qg_problem *p, qg_multicast mc) {
    return p->kind == QG_GEMM_DENSE && p->m <= 256 && mc == QG_MULTICAST_NONE ? 1
                                                                              : QG_DEFAULT_SWIZZLE;
}

/* The m-grouped layouts, whose B multicast pairs tiles per tile: a pair's
 * two m-blocks come from device data (masked_m, group ends, m_indices), so
 * the kernel multicasts B where both tiles are real tiles of one group and
 * n-block, loads B whole in each CTA elsewhere, and runs a dummy tile beside
 * a peer's tile where a CTA has none (kernels/qg_scheduler.cuh
 * QG_PAIR_TILES); any m-block count and swizzle group will do. */
static bool b_pairs_per_tile(qg_gemm_kind kind) {
    return kind == QG_GEMM_GROUPED_CONTIGUOUS || kind == QG_GEMM_GROUPED_MASKED ||
           kind == QG_GEMM_GROUPED_PSUM;
}

/* Whether the scheduler can pair the two CTAs of a cluster for `mc`: A pairs
 * tiles along N (even n-block count), B along M (dense and weight gradient:
 * an even m-block count; the m-grouped layouts per tile, b_pairs_per_tile;
 * each CTA loads block_n / 2 rows of B, whose 128-byte-swizzled half must
 * start 1024-byte aligned: block_n a multiple of 16); the fixed pairs need
 * an even swizzle group so that no pair straddles a group boundary. */
static bool b_pairs(qg_gemm_kind kind, int bn) {
    return (kind == QG_GEMM_DENSE || kind == QG_GEMM_WGRAD || b_pairs_per_tile(kind)) &&
           bn % 16 == 0;
}
/*
 * Whether the heuristic may pick B multicast in the m-grouped layouts
 * (QGEMM_FP8_GROUPED_MCB, a flag read per call; unset: on for HBM3e-class
 * devices, dram_gbps >= QG_HBM3E_MIN_GBPS, where it was timed, off on the
 * H100, where it was not: issue 52). On the H200 (2026-11-28,
 * bench/results/2026-11-28-h200-26-t1 grouped-mcb0/1, kineto) it lifted the
 * worst contiguous row 0.952 -> 0.991 of DeepGEMM (8 x 4096, 6144x7168), the
 * worst psum row 0.910 -> 0.973, masked 1 x 1024 6144x7168 0.961 -> 0.972,
 * the 36 grouped rows' geomean unchanged (1.009). DeepGEMM runs 128x192 with B shared along M
 * on nearly every contiguous and masked test row (bench/dg_heuristic.py):
 * a CTA then pulls 128 + 96 operand rows a K block through L2 instead of
 * 128 + 192 (none) or 64 + 192 (A), and at ~1,435 TFLOPS the unshared tile
 * is L2-bound (masked 1 x 1024 rows, 6144x7168: 0.72 of DeepGEMM as 128x192
 * none). bf16 D only (forced configurations refuse e4m3 / SwiGLU D).
 */
#define QG_HBM3E_MIN_GBPS 4500 /* an H200's 4,800; an H100 SXM's 3,352 */
bool qg__fp8_grouped_mcb(const qg_device_props *props, qg_gemm_kind kind, int d_fp8) {
    if (!b_pairs_per_tile(kind) || d_fp8) return false;
    return qg__env_string("QGEMM_FP8_GROUPED_MCB") ? qg__env_flag("QGEMM_FP8_GROUPED_MCB")
                                                   : props->dram_gbps >= QG_HBM3E_MIN_GBPS;
}

/*
 * QGEMM_FP8_HEUR (src/env.c; issue 52), A/B runs of alternatives to the
 * heuristic's choice, for the H200 rows where qgemm trails DeepGEMM. Those
 * share the longest K: at N x K 6144 x 7168 qgemm runs DeepGEMM's own
 * configuration (128x192, B multicast, 4 stages, swizzle group 16, the same
 * waves) on the contiguous, psum, masked 1 x 1024 and 4 x 256 rows and trails
 * by 1-3% (kineto), where at K <= 4096 the same configuration runs level or
 * ahead (bench/results/2026-11-29-cpu-heur-table). The alternatives are what
 * the heuristic can still move there; QG_HEUR_LONG_K draws the line between
 * the measured K (4096: the tall tile and the unshared small tiles won, 7168:
 * they lost). notall and nomcb won on the H200 (2026-11-29-h200-08-v2: masked
 * 6 x 1024, 6144x7168 1.032 -> 1.064 of DeepGEMM; masked 4 x 256 +0.4..+3.1%)
 * and are the default since; nomcbc (mixed, noise-sized) stays an A/B
 * choice; swN (the long-K swizzle group 2..64) lost (sw8 -0.1%, -09-v3) and
 * left the tree (tag exp/session-v-unpaid-2026-11-29). Unset or empty: QG_HEUR_DEFAULT (notall+nomcb). A '+'-separated
 * list (only its words: "nomcbc" alone is nomcbc without notall or nomcb) of
 *   none     no alternative: the heuristic as it was before that measurement
 *            (base: the same, its older name);
 *   default  notall+nomcb (so default+nomcbc adds nomcbc to the default);
 *   notall   masked and psum groups at K >= QG_HEUR_LONG_K take no tall 256x128 A
 *            tile (tall_walked_tile) where grouped B multicast is allowed:
 *            128x192 B, DeepGEMM's tile, takes them (psum 8 x ~4096 rows,
 *            6144x7168: 256x128 A ran at 0.910 of DeepGEMM, 128x192 B at 0.973;
 *            psum at K <= 4096 won as 256x128 A, 1.007-1.024: h200-26-t1
 *            grouped-mcb0/1, kineto); the masked row it moves is 6 x ~1024,
 *            6144x7168 (0.974 as 256x128 A, B never timed there);
 *   nomcb    masked and psum groups of at most QG_HEUR_SMALL_ROWS expected rows at
 *            K < QG_HEUR_LONG_K take no grouped B multicast (masked 4 x ~256 rows:
 *            B 0.969-0.997 against A / none 0.986-1.019 at 7168x3072, 4096x4096 and
 *            4096x2048; at 6144x7168 B won, 0.979 against 0.960);
 *   nomcbc   the contiguous kind takes no grouped B multicast where its groups
 *            average at most QG_HEUR_SMALL_ROWS rows (M / num_groups): its B pairs
 *            are two m-blocks of one n-block, which share B only where both are
 *            the same expert's, and experts of ~256 rows hold 2-3 m-blocks, so
 *            about half the pairs load B whole; A pairs (two n-blocks of one
 *            m-block) always share (contiguous 32 x ~256 rows, A / B: 0.997 / 0.981
 *            at 6144x7168, 0.977 / 0.991 at 7168x3072, h200-26-t1);
 * -> QG_HEUR_* flags; anything else -1 (the
 * heuristic's callers fail, naming the value). Part of the FP8 launch cache's
 * key (it changes the choice: none is 0, the default QG_HEUR_DEFAULT, so the
 * two never share an entry). Forced configurations ignore it.
 */
#define QG_HEUR_NOTALL 1
#define QG_HEUR_NOMCB_SMALL 2
#define QG_HEUR_NOMCB_CONTIG 4
#define QG_HEUR_DEFAULT (QG_HEUR_NOTALL | QG_HEUR_NOMCB_SMALL)
#define QG_HEUR_SMALL_ROWS 512
#define QG_HEUR_LONG_K 6144
int qg__fp8_heur(void) {
    const char *v = qg__env_string("QGEMM_FP8_HEUR");
    if (!v) return QG_HEUR_DEFAULT;
    static const char *const names[] = {"none", "base", "default", "notall", "nomcb", "nomcbc"};
    static const int word_flags[] = {0, 0, QG_HEUR_DEFAULT, QG_HEUR_NOTALL, QG_HEUR_NOMCB_SMALL,
                                     QG_HEUR_NOMCB_CONTIG};
    int flags = 0, words = 0, i;
    /* (an empty word, as in "notall+", is no word) */
    while ((i = qg__env_next_word(&v, "+", true, names, 6)) >= 0) {
        ++words;
        flags |= word_flags[i];
    }
    if (i != -1) return -1;
    return words ? flags : QG_HEUR_DEFAULT; /* ("+": no word, as unset) */
}

static bool multicast_pairs(const qg_problem *p, int bm, int bn, int swizzle, qg_multicast mc) {
    if (mc == QG_MULTICAST_A) return num_n_blocks(p, bn) % 2 == 0 && swizzle % 2 == 0;
    if (mc == QG_MULTICAST_B)
        return b_pairs(p->kind, bn) &&
               (b_pairs_per_tile(p->kind) || (ceil_div(p->m, bm) % 2 == 0 && swizzle % 2 == 0));
    return true;
}

/* Whether a tile runs the K-pipelined loop (kernel: QG_KPIPE): one wgmma
 * unit per warpgroup and room for a second accumulator set beside the FP32
 * sums, 3 * block_n / 2 registers: block_n <= 128 (the CPU compile sweeps
 * found spills at 64x144, at 128x128 with B multicast, and with the masked
 * scheduler's extra live registers above 96). Measured on an H100 against
 * the one-set loop (2026-11-21-explore4 (bench/HISTORY.md), run 3): 128x128 A at
 * 4096x7168x16384 785 vs 825 us, 128x96 A at 4096x2112x7168 144 vs 162 us,
 * M = 512..2048 128x128 1-1.5% and M = 64/128 up to 2-3% faster, none slower
 * beyond the run-to-run spread. */
static bool k_pipelined(qg_gemm_kind kind, int bm, int bn, qg_multicast mc, int units, bool wide,
                        int stages) {
    /* It holds K block kb's stage while it waits for kb + 1's: one stage
     * would deadlock. */
    if (units != 1 || wide || stages < 2 || qg__one_d(kind)) return false;
    return bn <= 128 && !(bm == 128 && bn == 128 && mc == QG_MULTICAST_B);
}

/* sfb_floats < 0: the weight-gradient (1D1D) kernel: FP32 D, and each
 * stage's block_n column scales instead of the two tiles' SFB buffers. */
/* d_bytes: bytes of one element of D in shared memory (FP32 4, bf16 2, e4m3 1);
 * d_cols: D's columns of the tile (block_n, or block_n / 2 under SwiGLU);
 * xchg: CTAs of a cluster that split an FP8 D scale group (1: none). */
static size_t smem_bytes_dc(int block_m, int block_n, int d_cols, int stages, int split_k,
                            int sfb_floats, int d_bytes, int xchg) {
    const bool cols = sfb_floats < 0;
    return 1024 + round_up((size_t)block_m * d_cols * (size_t)d_bytes, 1024) +
           (size_t)(split_k - 1) * block_m * block_n * 4 /* partners' FP32 sums */ +
           (xchg > 1 ? round_up((size_t)xchg * block_m * 4, 1024) : 0) /* exchanged amax */ +
           (size_t)stages * ((size_t)block_m * 128 + (size_t)block_n * 128 + (size_t)block_m * 4) +
           (cols ? (size_t)stages * round_up((size_t)block_n, 32) * 4 /* column scales, 128-byte aligned */
                 : 2 * round_up((size_t)sfb_floats, 4) * 4 /* two tiles' SFB buffers */) +
           (size_t)stages * 16 + 32 /* SFB buffers' */ +
           (split_k > 1 ? 16 : 0) + (xchg > 1 ? 16 : 0) /* reduction, exchange barriers */ +
           32 /* tile slots */;
}

static size_t smem_bytes_d(int block_m, int block_n, int stages, int split_k, int sfb_floats,
                           int d_bytes, int xchg) {
    return smem_bytes_dc(block_m, block_n, block_n, stages, split_k, sfb_floats, d_bytes, xchg);
}

size_t qg__smem_bytes(int block_m, int block_n, int stages, int split_k, int sfb_floats) {
    return smem_bytes_d(block_m, block_n, stages, split_k, sfb_floats, sfb_floats < 0 ? 4 : 2, 1);
}


/* The most 128-column SFB blocks any tile of width block_n can touch. */
static int sfb_rows_for(const qg_problem *p, int block_n) {
    int rows = 1;
    for (int nb = 0; nb < num_n_blocks(p, block_n) && nb < 128; ++nb) {
        const int off = (nb * block_n) % 128;
        const int r = (off + block_n - 1) / 128 + 1;
        if (r > rows) rows = r;
    }
    return rows;
}

/* Floats of one tile's SFB buffer in shared memory (the kernel keeps two):
 * every SFB row the tile touches, for every K block. */
static int sfb_floats(const qg_problem *p, int bn) {
    return qg__one_d(p->kind) ? -1 : sfb_rows_for(p, bn) * ceil_div(p->k, 128);
}


qg_status qg__check_problem(const qg_problem *p, const char *fn) {
    if (!p) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: problem is NULL", fn);
    if (p->kind < QG_GEMM_DENSE || p->kind > QG_GEMM_FP8_BATCHED)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: problem->kind must be QG_GEMM_DENSE (0), _GROUPED_CONTIGUOUS (1), "
                        "_GROUPED_MASKED (2), _GROUPED_PSUM (3), _WGRAD (4), _K_GROUPED (5) or "
                        "_FP8_BATCHED (6), got %d", fn, (int)p->kind);
    if (p->accumulate != 0 && (!qg__one_d(p->kind) || p->accumulate != 1))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: problem->accumulate must be 0%s, got %d", fn,
                        qg__one_d(p->kind) ? " or 1"
                                           : " (only QG_GEMM_WGRAD and _K_GROUPED accumulate)",
                        p->accumulate);
    /* A negative size is a bad argument; a size out of the supported range
     * (below) is unsupported. */
    if (p->m < 0 || p->n < 0 || p->k < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: problem->%s must be >= 0, got %d", fn,
                        p->m < 0 ? "m" : p->n < 0 ? "n" : "k",
                        p->m < 0 ? p->m : p->n < 0 ? p->n : p->k);
    if (p->m < 1 || p->m > (1 << 30))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: m must be in [1, 2^30], got %d", fn, p->m);
    if (p->n < 8 || p->n % 8)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: n must be a positive multiple of 8 (16-byte rows of D), got %d", fn, p->n);
    if (p->k < 16 || p->k % 16)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: k must be a positive multiple of 16 (16-byte rows of A and B), got %d",
                        fn, p->k);
    if ((p->kind == QG_GEMM_DENSE || p->kind == QG_GEMM_WGRAD) && p->num_groups != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: num_groups must be 1 for a %s GEMM, got %d",
                        fn, p->kind == QG_GEMM_DENSE ? "dense" : "weight-gradient", p->num_groups);
    if (p->num_groups < 1 || p->num_groups > 4096)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: num_groups must be in [1, 4096], got %d", fn,
                        p->num_groups);
    const bool group_rows = p->kind == QG_GEMM_GROUPED_MASKED || p->kind == QG_GEMM_K_GROUPED ||
                            p->kind == QG_GEMM_FP8_BATCHED;
    if ((long long)p->num_groups * p->n > (1ll << 31) - 1 ||
        (group_rows && (long long)p->num_groups * p->m > (1ll << 31) - 1))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: num_groups * rows exceeds 2^31 - 1", fn);
    /* D's elements: past 2^40 (2 TiB of bf16, more than any GPU holds) the
     * tile and wave counts of the selection would overflow an int (found by
     * make fuzz). Both factors are < 2^31 here, so the product cannot. */
    const long long d_rows = group_rows ? (long long)p->num_groups * p->m : p->m;
    if (d_rows * p->n >= (1ll << 40))
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "%s: D would have %lld x %d elements; at most 2^40 - 1 are supported", fn,
                        d_rows, p->n);
    if (walks_groups(p->kind) && (p->expected_m < 0 || p->expected_m > p->m))
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: expected_m must be in [0, m = %d], got %d",
                        fn, p->m, p->expected_m);
    return QG_SUCCESS;
}

/* The batched FP8 GEMM (QG_GEMM_FP8_BATCHED) is planned and selected as
 * the masked layout with every group full (expected_m = m): the kernel's
 * batched mode (QG_KIND 5) has the masked kind's tiles, shared memory,
 * SFA / SFB layouts and pair rule (multicast A: pairs along N inside one
 * group; never B), only its operands' maps are rank 3. bf16 D only. */
static bool batched_view(const qg_problem *p, int d_fp8, qg_problem *q, qg_status *st) {
    if (p->kind != QG_GEMM_FP8_BATCHED) return false;
    *st = d_fp8 ? qg__fail(QG_ERROR_INTERNAL, "config: FP8 D %d for kind %d", d_fp8, (int)p->kind)
                : QG_SUCCESS;
    *q = *p;
    q->kind = QG_GEMM_GROUPED_MASKED;
    q->expected_m = p->m;
    return true;
}

qg_status qg__plan_out(const qg_device_props *props, const qg_problem *p, int d_fp8,
                       const qg_config *cfg, qg_kernel_plan *out) {
    qg_problem batched;
    qg_status batched_st;
    /* (the batched kernel, QG_KIND 5, pairs tiles along N only: its masked
     * view would accept the m-grouped layouts' per-tile B pairs) */
    if (p->kind == QG_GEMM_FP8_BATCHED && cfg->multicast == QG_MULTICAST_B)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: multicast B is for the dense, weight-gradient, contiguous, masked "
                        "and psum GEMMs, not the batched one (its kernel pairs tiles along N "
                        "only: multicast A)");
    if (batched_view(p, d_fp8, &batched, &batched_st))
        return batched_st ? batched_st : qg__plan_out(props, &batched, d_fp8, cfg, out);
    const int bm = cfg->block_m, bn = cfg->block_n;
    const bool swiglu = (d_fp8 & QG_D_SWIGLU) != 0;
    if (d_fp8 < 0 || (d_fp8 & ~(QG_D_SWIGLU | QG_D_FP8_SCALES | QG_D_FP8_FLAGS | QG_D_SWIGLU_FLAGS)) ||
        ((d_fp8 & QG_D_FP8_FLAGS) && (swiglu || !(d_fp8 & QG_D_FP8_SCALES))) ||
        ((d_fp8 & QG_D_SWIGLU_FLAGS) && !swiglu) ||
        (d_fp8 & QG_D_FP8_SCALES) == 3 || (swiglu && !(d_fp8 & QG_D_FP8_SCALES)) ||
        (d_fp8 && qg__one_d(p->kind)) ||
        (swiglu && p->kind != QG_GEMM_DENSE && p->kind != QG_GEMM_GROUPED_CONTIGUOUS &&
         p->kind != QG_GEMM_GROUPED_MASKED))
        return qg__fail(QG_ERROR_INTERNAL, "config: FP8 D %d for kind %d", d_fp8, (int)p->kind);
    if (swiglu && p->n % 256)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: the SwiGLU epilogue needs n (gate and up rows of B, 2 x the "
                        "intermediate size) a multiple of 256, got %d", p->n);
    if (swiglu && !fp8_d_tile(d_fp8, bn))
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: the SwiGLU epilogue needs block_n 256 (a tile holds one 128-row "
                        "gate block and its 128-row up block, and writes one whole 1x128 scale "
                        "group of D), got %d", bn);
    if (swiglu && cfg->split_k > 1)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: the SwiGLU epilogue runs without split-K, got split_k %d",
                        cfg->split_k);
    if (!fp8_d_tile(d_fp8, bn))
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: FP8 output needs block_n 128 or 256 (a tile row covers whole "
                        "1x128 scale groups), or 64 or 32 (a cluster of 2 or 4 CTAs splits a "
                        "group), got %d", bn);
    const int split = fp8_split(d_fp8, bn);
    if (bm != 64 && bm != 128 && bm != 256)
        return qg__fail(QG_ERROR_UNSUPPORTED, "config: block_m must be 64, 128 or 256, got %d", bm);
    if (p->kind == QG_GEMM_GROUPED_CONTIGUOUS && bm > 128)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: the contiguous layout needs block_m <= 128 (the segment alignment), "
                        "got %d", bm);
    if (qg__one_d(p->kind) && !wgrad_tile(bm, bn))
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: the %sweight-gradient kernel takes block_m 64 or 128 and block_n "
                        "a multiple of 8 in [16, %d], got %dx%d",
                        p->kind == QG_GEMM_K_GROUPED ? "k-grouped " : "", QG_WGRAD_MAX_BN, bm, bn);
    /* (a pair of CTAs may hold tiles of two groups, whose A and B differ) */
    if (p->kind == QG_GEMM_K_GROUPED && cfg->multicast != QG_MULTICAST_NONE)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: the k-grouped kernel runs without multicast, got multicast %d",
                        (int)cfg->multicast);
    if (grouped_176(p->kind, bm, bn))
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: block_n 176 with block_m 128 is for dense GEMMs (its K loop "
                        "spills in the grouped kinds), got kind %d", (int)p->kind);
    if (!block_n_legal(p->kind, bm, bn) && !swiglu_m64_tile(d_fp8, bm, bn)) {
        const char *wide = is_wide(p->kind, bm, 256)   ? " or 208..224 or 256"
                           : is_wide(p->kind, bm, 128) ? " or 128"
                                                       : "";
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: block_n must be a multiple of 16 in [16, %d]%s for block_m %d "
                        "(%s), got %d", max_plain_block_n(bm), wide, bm,
                        p->kind == QG_GEMM_DENSE ? "dense" : p->kind == QG_GEMM_GROUPED_MASKED
                        ? "masked" : p->kind == QG_GEMM_GROUPED_PSUM ? "psum" : "contiguous", bn);
    }
    if (cfg->num_stages < 0 || cfg->num_stages > QG_MAX_STAGES)
        return qg__fail(QG_ERROR_UNSUPPORTED, "config: num_stages must be in [0, %d], got %d",
                        QG_MAX_STAGES, cfg->num_stages);
    /* (a split group's tiles are consecutive n-blocks of one swizzle group:
     * the default 1 becomes the cluster size) */
    const int def_swizzle = default_swizzle(p, cfg->multicast);
    const int swizzle = cfg->swizzle_group ? cfg->swizzle_group
                        : split > 1 && def_swizzle % split ? split
                                                           : def_swizzle;
    if (swizzle < 1 || swizzle > 256)
        return qg__fail(QG_ERROR_UNSUPPORTED, "config: swizzle_group must be in [0, 256], got %d",
                        cfg->swizzle_group);
    if (split > 1) {
        if (cfg->multicast != QG_MULTICAST_NONE)
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: FP8 output with block_n %d splits each scale group over a "
                            "cluster of %d CTAs; it needs multicast none, got multicast %d", bn,
                            split, (int)cfg->multicast);
        /* (QGEMM_FP8OUT_VARIANT nk: split-K 2 beside the split, dense only,
         * a cluster of split x 2, its K-rank-0 CTAs exchanging the amax) */
        if (cfg->split_k > 1 && !((d_fp8 & QG_D_FP8_NK) && p->kind == QG_GEMM_DENSE))
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: FP8 output with block_n %d splits each scale group over a "
                            "cluster of %d CTAs; it needs split_k 0 or 1, got %d", bn, split,
                            cfg->split_k);
        if (swizzle % split)
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: FP8 output with block_n %d runs a scale group's %d tiles on "
                            "one cluster: swizzle_group must be a multiple of %d, got %d", bn,
                            split, split, swizzle);
    }
    switch (cfg->multicast) {
    case QG_MULTICAST_NONE: break;
    case QG_MULTICAST_A:
        if (!multicast_pairs(p, bm, bn, swizzle, QG_MULTICAST_A))
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: multicast A pairs tiles along N: needs an even number of "
                            "n-blocks (N %d / block_n %d gives %d) and an even swizzle group (%d)",
                            p->n, bn, num_n_blocks(p, bn), swizzle);
        break;
    case QG_MULTICAST_B:
        /* (the k-grouped kind was refused above: its pairs could hold tiles
         * of two groups' maps) */
        if (b_pairs_per_tile(p->kind) && d_fp8)
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: multicast B in the contiguous, masked and psum kinds is for "
                            "bf16 D (its per-tile pairs are not built for the %s epilogue yet), "
                            "got %s D", swiglu ? "SwiGLU" : "e4m3",
                            swiglu ? "SwiGLU" : "e4m3");
        if (!b_pairs(p->kind, bn))
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: multicast B splits B's block_n rows between the pair at a "
                            "1024-byte boundary: needs block_n a multiple of 16, got %d", bn);
        if (!multicast_pairs(p, bm, bn, swizzle, QG_MULTICAST_B))
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: multicast B pairs tiles along M in %s GEMMs: needs an even "
                            "number of m-blocks (M %d / block_m %d gives %d) and an even swizzle "
                            "group (%d)", p->kind == QG_GEMM_DENSE ? "dense" : "weight-gradient",
                            p->m, bm, ceil_div(p->m, bm), swizzle);
        break;
    default:
        return qg__fail(QG_ERROR_UNSUPPORTED, "config: multicast must be 0 (none), 1 (A) or 2 (B), "
                        "got %d", (int)cfg->multicast);
    }
    const int split_k = cfg->split_k ? cfg->split_k : 1;
    if (split_k != 1 && split_k != 2)
        return qg__fail(QG_ERROR_UNSUPPORTED, "config: split_k must be 0, 1 or 2, got %d",
                        cfg->split_k);
    if (split_k > 1) {
        if (p->kind != QG_GEMM_DENSE)
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: split_k %d is for dense GEMMs (grouped kind %d)", split_k,
                            (int)p->kind);
        if (cfg->multicast != QG_MULTICAST_NONE)
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: split_k %d needs multicast none (the cluster's CTAs share a "
                            "tile, not an operand), got multicast %d", split_k, (int)cfg->multicast);
        if (ceil_div(p->k, 128) < split_k)
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: split_k %d needs at least %d K blocks of 128, K %d has %d",
                            split_k, split_k, p->k, ceil_div(p->k, 128));
        if (props->sm_count < split_k)
            return qg__fail(QG_ERROR_UNSUPPORTED, "config: split_k %d needs at least %d SMs",
                            split_k, split_k);
    }
    const int cluster = split > 1 ? split * split_k
                        : cfg->multicast == QG_MULTICAST_NONE ? split_k : 2;
    if (split > 1 && props->sm_count < cluster)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: FP8 output with block_n %d runs clusters of %d CTAs: needs at "
                        "least %d SMs", bn, cluster, cluster);
    if (cluster == 2 && props->sm_count < 2)
        return qg__fail(QG_ERROR_UNSUPPORTED, "config: multicast needs at least 2 SMs");

    const int sfb_rows = sfb_rows_for(p, bn);
    const int d_bytes = qg__one_d(p->kind) ? 4 : d_fp8 ? 1 : 2;
    const int d_cols = swiglu ? bn / 2 : bn; /* (SwiGLU: D holds one column per gate | up pair) */
    int stages = cfg->num_stages;
    if (stages == 0) {
        for (stages = QG_MAX_STAGES; stages > 0; --stages)
            if (smem_bytes_dc(bm, bn, d_cols, stages, split_k, sfb_floats(p, bn), d_bytes, split) <=
                props->smem_optin_bytes)
                break;
        if (stages == 0) {
            /* The 1D2D tile keeps two tiles' B scales for all of K: past
             * K ~ 2^21 they alone outgrow shared memory. */
            const int sfb = sfb_floats(p, bn);
            char k_part[96] = "";
            if (sfb > 0)
                snprintf(k_part, sizeof k_part, " (its B scales for K %d take %zu bytes)", p->k,
                         2 * round_up((size_t)sfb, 4) * 4);
            return qg__fail(QG_ERROR_UNSUPPORTED,
                            "config: block %dx%d%s does not fit %zu bytes of shared memory even "
                            "with one stage%s", bm, bn,
                            split_k > 1 ? " with its split-K buffer (block_m x block_n x 4 bytes)"
                                        : "",
                            props->smem_optin_bytes, k_part);
        }
    }
    const size_t smem = smem_bytes_dc(bm, bn, d_cols, stages, split_k, sfb_floats(p, bn), d_bytes, split);
    if (smem > props->smem_optin_bytes)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: block %dx%d with %d stages needs %zu bytes of shared memory; the "
                        "device allows %zu", bm, bn, stages, smem, props->smem_optin_bytes);

    memset(out, 0, sizeof *out);
    out->num_math_wgs = bm == 64 ? 1 : 2;
    out->num_threads = 128 * (out->num_math_wgs + 1);
    out->cluster_size = cluster;
    out->split_k = split_k;
    out->num_k_blocks = ceil_div(p->k, 128);
    out->sfb_rows = sfb_rows;
    out->smem_bytes = smem;
    out->num_stages = stages;
    /* Register split after setmaxnreg; the CTA's pool is what ptxas gives every
     * thread at entry (168 x 384, or 255 x 256 with one math warpgroup). The
     * 256x128 tiles take 232 / 40 (DeepGEMM's split: their main loop, unrolled
     * by 4, spills at 216); the other two-warpgroup tiles 224 / 56 up to 6
     * stages (with SFB read from the per-tile buffer, 128x112 and the
     * contiguous 128x256 A spilled at 216; 128x128 A with 5 stages spills a
     * 40-register producer), 216 / 72 past that (128x64 with 8 stages spills
     * a 56-register producer);
     * one math warpgroup 256 (64x176 masked spilled at 240). CPU compile
     * sweep of 2026-11-25. */
    const bool tall_wide = bm == 256 && is_wide(p->kind, bm, bn); /* 256x128 */
    /* 128 x 176..192 in one pass: 2 x 96 accumulators and sums a thread
     * (DeepGEMM's 128x192 runs at the same split). */
    const bool plain_192 = bm == 128 && bn > 160 && !is_wide(p->kind, bm, bn);
    const bool deep = stages > 6; /* the producer's loop state grows with the stages */
    out->producer_regs = tall_wide || plain_192 ? 40 : out->num_math_wgs == 1 || deep ? 72 : 56;
    out->math_regs = out->num_math_wgs == 1 ? 256 : tall_wide || plain_192 ? 232 : deep ? 216 : 224;
    /* The 1D1D kinds' tiles up to 128 x 136 hold a K block's column scales
     * in registers beside the accumulators and sums from before the wgmma to
     * the end of the promotion (DeepGEMM's order; the kernel's
     * QG_COLS_EARLY): 232 / 40, as DeepGEMM's k-grouped 1D1D kernel. */
    if (qg__one_d(p->kind) && out->num_math_wgs == 2 && bn <= 136)
        out->producer_regs = 40, out->math_regs = 232;
    out->swizzle_group = swizzle;
    /* A wide 128-row tile splits N in two parts (a thread cannot hold that
     * many columns of both accumulator levels); the wide tiles' units take
     * turns in one accumulator set. */
    /* (SwiGLU's 64x256 splits N alike: swiglu_m64_tile) */
    const bool sw64 = swiglu_m64_tile(d_fp8, bm, bn);
    const bool wide = is_wide(p->kind, bm, bn) || sw64, n_split = (wide && bm == 128) || sw64;
    out->wgmma_n = n_split ? bn / 2 : bn;
    const int units = (bm == 256 ? 2 : 1) * (bn / out->wgmma_n);
    out->kpipe = k_pipelined(p->kind, bm, bn, cfg->multicast, units, wide, stages);
    out->acc_sets = out->kpipe ? 2 : wide ? 1 : units;
    /* D leaves in chunks of the widest TMA store row (128, 64 or 32 bytes)
     * that divides block_n; the N-split 128-row tiles stop at 64 bytes.
     * Against the 32-byte chunks of before (2026-11-22-explore6, runs 3-4):
     * 128-byte rows 13% faster at 4096x32768x512, 4-5% at K = 2048 and
     * 128x32768x512, 0-2% elsewhere; but 128x256 in the contiguous layout ran
     * 13% slower with them at N = 4096, K = 7168, and 1-5% faster with 64-byte
     * rows than with 32-byte ones. FP32 D (weight gradient): the same 128-,
     * 64- or 32-byte rows, half the columns; or, for an odd multiple of 8 at
     * short K, the tile's whole width in one row-major chunk (the kernel's
     * QG_D_ROWS; see wgrad_efficiency). */
    out->d_rows = d_rows_major(p, bn);
    out->store_cols = qg__one_d(p->kind) ? (out->d_rows   ? bn
                                            : bn % 32 == 0 ? 32
                                            : bn % 16 == 0 ? 16
                                                           : 8)
                      : bn % 64 == 0 && !n_split ? 64 : bn % 32 == 0 ? 32 : 16;
    /* e4m3 D: one 128-byte chunk per scale group (a split group's tile: one
     * chunk of its width) */
    out->d_fp8 = d_fp8;
    if (d_fp8) out->store_cols = bn < 128 ? bn : 128;
    /* A dense M below block_m: the A and SFA boxes hold round_up(M, 8) rows
     * instead of block_m, so that a decode GEMM (M = 1..32) does not ask
     * TMA for up to 63 rows out of bounds every K block (DeepGEMM takes
     * BLOCK_M 16 or 32 there for that reason). The tile's other rows of A
     * keep what shared memory held: their products land in rows of the
     * tile that are never stored (TMA clips D at M), and no valid row's
     * sum depends on another row of A. */
    out->a_box_rows = cfg->multicast == QG_MULTICAST_A ? bm / cluster : bm;
    if (p->kind == QG_GEMM_DENSE && p->m < bm && cfg->multicast != QG_MULTICAST_A)
        out->a_box_rows = (p->m + 7) / 8 * 8;
    return QG_SUCCESS;
}

qg_status qg__plan(const qg_device_props *props, const qg_problem *p, const qg_config *cfg,
                   qg_kernel_plan *out) {
    return qg__plan_out(props, p, 0, cfg, out);
}

qg_status qg__complete_config_sms(const qg_device_props *props, int num_sms, const qg_problem *p,
                                  qg_config *cfg, qg_kernel_plan *plan) {
    return qg__complete_config_out(props, num_sms, p, 0, cfg, plan);
}

qg_status qg__complete_config_out(const qg_device_props *props, int num_sms, const qg_problem *p,
                                  int d_fp8, qg_config *cfg, qg_kernel_plan *plan) {
    qg_status st = qg__plan_out(props, p, d_fp8, cfg, plan);
    if (st != QG_SUCCESS) return st;
    /* The device may have the SMs, the context's limit not: its grid would
     * hold no whole cluster (a launch of 0 CTAs). */
    if (plan->cluster_size > num_sms)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: %s runs clusters of %d CTAs, one per SM; the context uses %d "
                        "SM%s (qg_context_set_num_sms)",
                        plan->split_k > 1 ? "split-K" : cfg->multicast ? "multicast"
                                                      : "FP8 output split over N",
                        plan->cluster_size, num_sms,
                        num_sms == 1 ? "" : "s");
    cfg->num_stages = plan->num_stages;
    cfg->swizzle_group = plan->swizzle_group;
    cfg->split_k = plan->split_k;
    cfg->num_sms = num_sms - num_sms % plan->cluster_size;
    cfg->smem_bytes = plan->smem_bytes;
    return QG_SUCCESS;
}

/*
 * Relative throughput of a tile shape when the problem is compute-bound
 * (1.0 = 128x128 with A multicast): waves x tile area / time, compared on the
 * same problem. The 128x128, 256x128 and 128x256 numbers were re-measured
 * on an H100 after the K-pipelined loop and SFB in shared memory
 * (2026-11-22-explore5 (bench/HISTORY.md), run 3: M = 512..4096 x five (N, K)
 * pairs; geometric means over the 19 shapes of at least one full wave):
 * 256x128 without multicast 1.05 (1.03-1.10 per shape), with A 1.04
 * (0.98-1.12: ahead at K = 512 and over many waves, where it is rated a
 * little higher, behind at one or two waves), 128x256 0.99 / 0.98, 128x128
 * without multicast 0.98 (0.92-1.06). The contiguous kernel ran 1-5% faster
 * as 128x256 (either) than as 128x128 A at M = 32768 (same run), hence 1.02;
 * the dense kernel never picks it over 256x128.
 * The others come from earlier runs: an H200 sweep of forced configurations
 * (2026-11-21-h200-sweep.txt (bench/HISTORY.md)) corrected on an H100
 * (2026-11-21-explore3): the two-part 128-row tiles (n-parts of 88..112
 * columns) run at 0.66-0.73; B multicast lost wherever it was timed: 256x64
 * by 18-21% (N = 2112: 256x64 without multicast took 123.0 us at M = 4096,
 * against 149.5 with B and 136.1 as 128x176; again 124 against 149 and
 * 256x96 139 in 2026-11-22-explore5 run 2), 128x128 B took 256.9 us at
 * 8192x2112x7168 against 237.0 for 256x64 without multicast.
 *
 * Plain 128x192 (one 64x192 wgmma a warpgroup, DeepGEMM's tile for N = 2112
 * and its grouped shapes), after the promotion stopped selecting each column
 * group's SFB at run time (H200, 2026-11-25 b, qgemm alone, events): 4096 x
 * 2112 x 7168 99.6 us against 102.3 as 256x64 (B 101.8); 4096x1536x24576
 * 219.2 (A 221.9, B 222.4) against 232.5 as 128x128 A; but 4096x4096x7168
 * 195.7-197.4 against 174.0 as 256x128 A, 4096x7168x16384 739-760 against
 * 681.8: rated 1.03 (A 1.04, B 1.02). In the contiguous layout it ran level
 * with 128x256 (4 x 8192, N x K = 6144x7168: 2386.0 us, A 2412.2, against
 * 2395.9; 8 x 4096, 4096x4096: 878.6, A 851.9, against 843.6): rated
 * below it there (0.99, A 1.00). The masked 256x128 tile, while the math
 * warps' walker kept it neither unrolled nor multicast, ran behind 128x192 A
 * (6 groups of 1024 rows, N x K = 6144x7168 472.1 us against 442.7) and was
 * rated 1.0; unrolled, with A, it ran level with it (431.5 against 442.9,
 * 2026-11-25-h200-9 explore-d.log) and is rated as the dense one.
 */
static double tile_efficiency(qg_gemm_kind kind, int bm, int bn, qg_multicast mc) {
    const bool a = mc == QG_MULTICAST_A, b = mc == QG_MULTICAST_B;
    if (bm == 256 && bn == 128) return a ? 1.06 : b ? 0.94 : 1.05;
    /* masked and psum, once the math warps stopped running the scheduler
     * (H200, 2026-11-25-h200-9 explore-d.log, kineto): 128x256 ran 0.5-12%
     * ahead of 128x192 on every psum and masked shape timed (A and none
     * within 1% of each other), and level with 256x128 A at K = 7168 (masked
     * 6 x ~1024 rows: 440.8 against 431.5 us; 4096x2048: 83.2 against 93.9). */
    if (bm == 128 && bn == 256 && walks_groups(kind)) return a ? 1.08 : 1.07;
    /* Masked groups of more than 256 rows, once 128x192's K loop ran
     * unrolled by 4 (H200, 2026-11-25-h200-12 explore-h*.log, kineto,
     * DeepGEMM's time / qgemm's, 6 x ~1024 rows): 128x192 A 0.951 / 0.985 /
     * 0.966 / 0.988 at N x K 6144x7168 / 7168x3072 / 4096x4096 / 4096x2048,
     * against 128x256 A 0.946 / 0.952 / 1.010 / 0.939 (DeepGEMM runs 128x192,
     * with B multicast, on all four; qgemm's masked kernel has no B
     * multicast). Rated so that 128x192 A wins at all four. */
    if (bm == 128 && bn == 192 && kind == QG_GEMM_GROUPED_MASKED && a) return 1.12;
    /* (psum groups of 1024 rows and more are rated as the contiguous layout,
     * qg__select_avoiding: rate_kind) Those psum groups at N 4096, where
     * 128x256 saves 1% of waves x area over 128x192 A, ran as fast as 128x192 A
     * or slower on 5 of 6 rows (H100, 2026-11-27-h100-16 explore-a.log,
     * qgemm alone, twice each: 8 x ~4096 rows, K 4096 794.1-796.9 us against
     * 819.8-820.6; masked layout 6 x ~1024, K 2048 90.4-91.0 against
     * 97.0-97.2; 4 x 8192 level; behind at 6 x ~1024, K 4096, 191.5 against
     * 183.4-183.8): rated level with it in the contiguous layouts. */
    if (bm == 128 && bn == 256) return b ? 0.94 : is_contiguous(kind) ? 1.0 : 1.02;
    /* psum (H200, 2026-11-25-h200-8 explore-c2.log): 128x192 without
     * multicast ran 2.3-4.4% ahead of 128x128 A on DeepGEMM's four shapes
     * timed, against 0.5-2.4% more waves x area; with A, 0-1.7% behind that. */
    if (bm == 128 && bn == 192 && kind == QG_GEMM_GROUPED_PSUM) return a ? 1.04 : 1.05;
    /* Contiguous, once the K loop ran unrolled (QG_K_UNROLL: 128x192 by 4,
     * 128x256 by 8; H200, 2026-11-25 f, explore-g.log, kineto, DeepGEMM's
     * time / qgemm's): 4 x 8192, 6144x7168 128x192 A 0.963 (none 0.951-0.955)
     * against 128x256 0.943-0.957 (A 0.952-0.957); 8 x 4096, 4096x4096 0.983-0.985
     * either against 0.967-0.973. DeepGEMM runs 128x192 on all its contiguous
     * shapes. */
    if (bm == 128 && bn == 192)
        return is_contiguous(kind) ? (a ? 1.04 : 1.03) : a ? 1.04 : b ? 1.02 : 1.03;
    if (bm == 128 && bn > 192) return a || b ? 0.66 : 0.73;
    /* H100, N = 2112: 1008-1046 TFLOPS without multicast (A: the H200 table) */
    if (bm == 256 && bn == 64) return a ? 0.92 : b ? 0.64 : 0.85;
    double e;
    if (bm == 128) /* 128 wide: one SFB block per tile, no per-column scale select */
        e = bn == 128 ? 1.0 : bn == 160 ? 0.85 : bn >= 96 ? 0.8 : bn == 64 ? 0.7 : 0.55;
    else if (bm == 256)
        e = bn >= 80 ? 0.86 : 0.55;
    else
        e = bn >= 128 ? 0.7 : 0.5;
    /* Without multicast: 128x128 0.98 and 128x96 within 1% of A (4096x2112x7168,
     * 2026-11-21-explore4 run 3). */
    return e * (a ? 1.0 : b ? (bm == 256 ? 0.70 : 0.80) : 0.98);
}

/* Its rating (QGEMM_FP8_GROUPED_MCB): 128x192 with B above every tile the
 * m-grouped kinds rate now (128x192 A 1.12 masked, 256x128 A 1.13 in the
 * walked layouts' tall groups), so that it takes the rows where DeepGEMM
 * takes it and saves waves x area or ties; the other tiles with B just
 * below the same tile with A (not measured: B shares half as much of a tile
 * whose block_n is below block_m). A guess to be replaced by the H200's
 * numbers. */
static double grouped_b_efficiency(qg_gemm_kind kind, int bm, int bn) {
    if (bm == 128 && bn == 192) return 1.14;
    return 0.99 * tile_efficiency(kind, bm, bn, QG_MULTICAST_A);
}

/*
 * The walked layouts' (masked, psum) groups of ~1024 rows and more: 256x128
 * with A multicast, which skips the m64 tiles past a group's end
 * (QG_SKIP_ROWS), against 128x192 A, whose ratings above were set against
 * 128x256 only (H100, 2026-11-27-h100-18, twice each; 256x128 A / 128x192 A):
 * - masked, 6 x ~1024 rows, expected_m 1228 (explore-b.log, qgemm alone):
 *   N x K 6144x7168 375.1-376.0 / 385.5-386.0 us, 7168x3072 234.2-234.9 /
 *   240.6-240.8, 4096x4096 184.8-185.8 / 186.4-187.8, but 4096x2048 92.9-93.6
 *   / 88.5-88.9;
 * - psum (explore-f.log, beside DeepGEMM, DeepGEMM's time / qgemm's): the
 *   masked layout's 6 x ~1024 rows alike (0.979-0.983 / 0.952-0.953 at
 *   6144x7168, 0.959-0.961 / 0.998 at 4096x2048); groups of ~8192 rows
 *   0.983-1.027 / 0.968-1.000 on all four (N, K); of ~4096 rows 1.002-1.026 /
 *   0.989-1.009 on three, 0.962-0.964 / 0.968-0.972 at 6144x7168.
 * So 256x128 A is rated 1.13 (it wins over 128x192 A's 1.04..1.12 by waves x
 * area) from 1024 rows a group at K >= 3072, and in psum groups of 4096 rows
 * and more at any K.
 */
static bool tall_walked_tile(const qg_problem *p, int rows, int bm, int bn, qg_multicast mc) {
    return walks_groups(p->kind) && bm == 256 && bn == 128 && mc == QG_MULTICAST_A &&
           rows >= 1024 && (p->k >= 3072 || (p->kind == QG_GEMM_GROUPED_PSUM && rows >= 4096));
}

/*
 * The weight gradient's 128-row tiles (FP32 D, 1D1D promotion). Without
 * multicast every tile ran 1-12% faster than with A or B multicast (H200,
 * bench/results/2026-11-25-h200-8 explore-c.log: 4096x4096x7168 128x128
 * 285.2 us, A 293.7; 128x160 281.9, B 309.0). On the later kernel (the
 * column scales read before the wgmma, the loop unrolled by 4) 128x128 with
 * A multicast pays at long K (H100, 2026-11-28-h100-19 explore-c.log,
 * kineto, beside DeepGEMM, twice each, none / A / B): 7168x4096x16384
 * 946.2-946.8 / 930.5-931.1 / 933.5-934.0 us (0.971 -> 0.988 of
 * DeepGEMM); 4096x4096x7168 level (255.2-255.5 / 255.1-255.2 / 255.0-255.1);
 * 24576x4096x1536 456.6-457.4 / 479.3 / 481.4-482.2 (5% slower). So 128x128
 * A is rated 1.015 from a group K of 16384 (the one measured point past the
 * level 7168), and nothing else multicasts here.
 * Since tiles up to 128x136 read a K block's column scales before its wgmma
 * and release the stage after it (QG_COLS_EARLY), 128x128 is the reference
 * (h200-10 explore-f.log, kineto, accumulating in place, waves x area / time
 * against 128x128): 128x160, which must read them while
 * promoting, 0.99-1.02 at K = 7168..16384, 0.93-0.96 at K = 1536..2048 (1.02
 * at 512); 128x144 0.90-0.96; 128x112 0.92-0.99; 128x136 (D leaves in
 * 32-byte rows) 0.93-0.99 at K >= 7168, 0.82-0.93 below, but a wave fewer
 * at M = 2112, N = 4096: 144.9 us against 159.0 as 128x128 (DeepGEMM's
 * tile there). 4096x4096x7168: 254.0 us as 128x128, 279.1 as 128x160
 * (DeepGEMM 247.7). 64-row tiles keep the generic rating. Since 128x136
 * leaves in one row-major chunk at K <= 4096 (d_rows_major): 1.01-1.09 of
 * 128x128 there (2026-11-27-h100-15 explore-c.log, whole136 against
 * explore-b.log bn128: k-grouped 16 x 4096x7168 1.054, 8 x 4096x7168 1.025,
 * weight gradient 24576x4096x1536 1.059, 32768x4096x512 1.020), rated 1.02:
 * it takes the k-grouped 4096x7168 rows of 8 and 16 groups, where it saves
 * 6-12 waves of ~200. At a K of 1536..2048 it ran faster than 128x128
 * even where it saves no wave (H100, kineto, qgemm alone, waves x area /
 * time against 128x128; 2026-11-27-h100-15 explore-b.log bn136 / bn128 and
 * explore-c.log whole136, peers.txt of run-f and of 2026-11-27-h100-16):
 * k-grouped 16 x 7168x2048, group K ~2160, 1231-1233 us against 1260-1268
 * (1.09); weight gradient 7168x4096x2048 167.3-174.1 against 173.2-174.4
 * (1.06-1.10), 24576x4096x1536 455.9-460.1 against 464.5-466.4 (1.05);
 * at K 512 1.01, at K ~4096 1.01. Rated 1.07 for 1024 < K <= 3072 (3072:
 * between the measured 2160 and 3984, not measured itself); beside DeepGEMM,
 * new / old / new / old (2026-11-27-h100-16 explore-e.log): k-grouped
 * 16 x 7168x2048 1215.0 / 1258.6 / 1217.1 / 1259.0 us.
 */
#define QG_WGRAD_MULTICAST_MIN_K 16384
static double wgrad_efficiency(int bm, int bn, int k, bool rows_major, qg_multicast mc) {
    if (mc != QG_MULTICAST_NONE) {
        const bool rated = bm == 128 && bn == 128 && mc == QG_MULTICAST_A &&
                           k >= QG_WGRAD_MULTICAST_MIN_K;
        return rated ? 1.015 : 0.0; /* 0: not taken */
    }
    if (bm != 128) return tile_efficiency(QG_GEMM_WGRAD, bm, bn, QG_MULTICAST_NONE);
    if (bn == 128) return 1.0;
    if (bn == 160) return k >= 4096 ? 1.0 : 0.95;
    /* rows_major: the plan stores it in one row-major chunk (d_rows_major) */
    if (bn == 136) return !rows_major ? 0.95 : k > 1024 && k <= 3072 ? 1.07 : 1.02;
    if (bn == 144) return 0.92;
    if (bn == 112) return 0.93;
    return tile_efficiency(QG_GEMM_WGRAD, bm, bn, QG_MULTICAST_NONE);
}

/*
 * What a small problem's tile costs each SM: waves x the rows of A and B one
 * CTA streams per K block. Where default_swizzle puts the m-blocks that
 * share a B tile on consecutive CTAs (small dense problems), the tile counts
 * once (b_once): L2 serves them together (H200, 2026-11-25-h200-13
 * explore-j.log, kineto: 128x4096x7168 as 64x64 14.34 us against 15.47 as 128x32; 128x7168x16384
 * as 64x112 39.50 against 40.83 as 128x64; 128x7168x2048 8.30 against
 * 8.34). Masked groups count a B row once per m-block that reads it: their
 * tiles keep the default order, where two m-blocks sharing a B tile ran
 * slower than one CTA holding all the rows (H100, 2026-11-22-explore9:
 * dense 128x7168x16384 as 128x64 47.4 us against 56.7 as 64x112 in that
 * order, 48.4 with B multicast). Where B tiles are narrow, A's rows
 * dominate and 64-row tiles stay ahead: 128x2112x7168 14.4 us as 64x32,
 * 15.4 as 128x16, 16.1 as 128x32 (H100).
 */
static long long small_tile_cost(int rows, int bm, int bn, int waves, bool b_once) {
    return (long long)waves * (bm + (long long)bn * (b_once ? 1 : ceil_div(rows, bm)));
}

/*
 * Split-K for small dense problems whose tiles stream more bytes per SM than
 * DRAM can feed the grid: the two CTAs of a cluster share a tile, each
 * reading half of K (e.g. 64x2112x7168: 64x16 tiles fill 132 SMs but each
 * reads all 64 rows of A beside its 16 of B; 64x32 over half of K reads half
 * of 64 + 32 rows). A model in microseconds, fitted on an H100
 * (2026-11-22-explore10, runs 1, 5 and 6; the ~5 us every launch costs left
 * out): a CTA streams its rows of A and B (an m-block's B rows counted once:
 * a second m-block reads them from L2) at about 70 GB/s with one math
 * warpgroup and 100 GB/s with two; the time is the larger of that and B's
 * bytes over DRAM. Splitting costs about 1 us plus block_m x block_n / 3000
 * us (64x32: 1.8, 128x32: 2.6, 128x64: 3.7 us measured: the cluster, the
 * partner's sums, one stage less). 64x2112x7168: 64x16 14.0 us, 64x32 split
 * 12.3; 128x2112x7168: 64x32 14.4, 128x32 split 13.8; 128x4096x7168: 128x32
 * 17.0, 128x64 split 19.0 (the model keeps a plain tile there: 64x64 since
 * 2026-11-25-h200-13, in tile order 1, 14.34 us). On the H200 the 128-row
 * split lost where the H100 had it win (2026-11-25-h200-12, explore-h*.log,
 * kineto, two runs): 128x2112x7168 as 128x32 split 11.32 us against 10.82 /
 * 10.66 as 64x32 without (DeepGEMM's tile there: 10.82-10.97 us);
 * 128x4096x7168 128x32 split 18.29 against 15.45 plain. Only 64-row tiles
 * split now (64x2112x7168 64x32 split 9.74-9.87 us against 10.10-10.33 as
 * 64x16 / 64x32).
 *
 * DRAM streams B at 73% of the device's peak (props->dram_gbps; an H100's
 * 3352 GB/s when unknown). The kernel outgrew the streaming rates above, and
 * the H100 then lost the 64x2112x7168 split the H200 wins (2026-11-27-h100-16
 * explore-g.log, kineto, two runs: 64x16 11.18-11.29 us, 64x32 split
 * 12.43-12.57; 1x2112x7168 10.69-11.11 against 12.16-12.18 split): unsplit,
 * the grid already reads B at about 73% of the H100's peak (15.1 MB in ~6.2
 * us past the launch's ~5), so halving each CTA's stream cannot help there
 * and the split only adds its cost; the H200's 4915 GB/s leave room for it.
 * The N 576 splits win on both (1x576x7168 8.2 us split against 9.3-9.4 on
 * the H100, explore-h.log: 36 or 72 CTAs are far from DRAM's bound).
 * With the bandwidth in the model (2026-11-27-h100-17 explore-a.log, beside
 * DeepGEMM, two runs, new choice / old split): H100 64x2112x7168 11.15-11.16
 * / 12.37-12.40 us, 1x2112x7168 11.08-11.20 / 12.17-12.19, 32x2048x8192
 * 11.51-11.64 / 12.79-12.81, 128x4096x16384 (64x64) 35.28 / 38.68-38.75
 * (64x128 split), 128x3072x16384 (64x48) 28.51-28.59 / 32.69-32.73 (64x96
 * split). Still wrong on the H100: 64x1536x7168 keeps 64x32 split
 * (10.58-10.71) where 64x16 runs 10.25-10.38, and 64x3072x16384 now takes
 * 64x32 (29.25-29.33) where the 64x48 split ran 28.62: no single DRAM
 * efficiency fits these and 64x2112x7168 (96 or 128 CTAs reach less of it
 * than 132), which the model does not see.
 */
static double stream_us(const qg_device_props *props, const qg_problem *p, int bm, int bn,
                        int split_k) {
    const double rate = bm == 64 ? 70e3 : 100e3; /* bytes per us per SM */
    const double sm = (double)(bm + bn) * p->k / split_k / rate;
    const double dram_gbps = props->dram_gbps > 0 ? props->dram_gbps : 3352;
    const double dram = (double)p->n * p->k / (0.73 * dram_gbps * 1e3); /* bytes per us */
    return (sm > dram ? sm : dram) + (split_k > 1 ? 1.0 + bm * bn / 3000.0 : 0.0);
}

/*
 * Whether the masked kind rates its tiles by whole waves of expected_m rows
 * (as DeepGEMM's heuristic does) instead of the fractional fill the walked
 * layouts use elsewhere: on HBM3e parts (the H200: 4915 GB/s; an H100 SXM
 * reports 3352, and an unknown bandwidth, 0, is taken as an H100's), where
 * the fill picked 128x256 over 128x192 on the rows of a second, part-empty
 * wave and lost (H200, measured-2026-11-28-h200 grouped.txt, DeepGEMM's
 * time / qgemm's, kineto, qgemm ff337ef): masked 1 x 1024 rows, N x K
 * 6144x7168 128x256 0.72 (87.5 against 62.9 us: 192 tiles, 1.45 waves of
 * 128x256 against 256 tiles, 1.94 waves of DeepGEMM's 128x192: both run two
 * waves, and each of 128x256's is a third longer); 4 x ~256 rows
 * (expected_m 307), 4096x4096 0.85 and 4096x2048 0.92 as 128x256 (DeepGEMM
 * 128x192 B). Whole waves pick 128x192 on those three and 128x192 A on 6 x
 * ~1024 rows, 4096x4096 (256x128 A, 0.96; DeepGEMM 128x192 B), and change no
 * other masked test row (bench/dg_heuristic.py). The H100 keeps the fill:
 * its masked rows were tuned with it and these rows were not timed there.
 */
static bool masked_whole_waves(const qg_device_props *props, const qg_problem *p) {
    return p->kind == QG_GEMM_GROUPED_MASKED && props->dram_gbps >= QG_HBM3E_MIN_GBPS;
}

/* A tile the compiler refused is avoided in every multicast mode: what
 * spills is the tile's register use, which multicast hardly changes. */
static bool avoided(const qg_config *avoid, int num_avoid, int bm, int bn) {
    for (int i = 0; i < num_avoid; ++i)
        if (avoid[i].block_m == bm && avoid[i].block_n == bn) return true;
    return false;
}

/*
 * The heuristic. Small problems (at most 256 rows per group) are bound by
 * reading B: keep the fewest waves over the persistent grid, then the lowest
 * small_tile_cost, then the fullest last wave, then the larger tile (at
 * most 128 rows; masked groups of 129..256 rows may then take 256x128).
 * Larger
 * problems are bound by the tensor cores and L2: minimise waves x tile area /
 * tile efficiency over every legal (block_m, block_n, multicast).
 */
qg_status qg__select_avoiding(const qg_device_props *props, int num_sms, const qg_problem *p,
                              const qg_config *avoid, int num_avoid, qg_config *out,
                              qg_kernel_plan *plan) {
    return qg__select_out(props, num_sms, p, 0, avoid, num_avoid, out, plan);
}

/* FP8 D (d_fp8 1, 2): only the FP8-legal tiles (fp8_d_tile) are
 * candidates: whole 128-column groups (split-K too), and 64 or 32 columns
 * whose group a cluster splits (no multicast, no split-K), counted in the
 * scheduler's padded n-blocks (sched_n_blocks). */
static qg_status select_out(const qg_device_props *props, int num_sms, const qg_problem *p,
                            int d_fp8, const qg_config *avoid, int num_avoid, qg_config *out,
                            qg_kernel_plan *plan, bool batched_kernel);

qg_status qg__select_out(const qg_device_props *props, int num_sms, const qg_problem *p, int d_fp8,
                         const qg_config *avoid, int num_avoid, qg_config *out,
                         qg_kernel_plan *plan) {
    qg_problem batched;
    qg_status batched_st;
    if (batched_view(p, d_fp8, &batched, &batched_st))
        return batched_st ? batched_st
                          : select_out(props, num_sms, &batched, d_fp8, avoid, num_avoid, out, plan,
                                       true);
    return select_out(props, num_sms, p, d_fp8, avoid, num_avoid, out, plan, false);
}

/* batched_kernel: p is the batched GEMM's masked view (batched_view), whose
 * kernel has no B pairs: B multicast is never a candidate. */
static qg_status select_out(const qg_device_props *props, int num_sms, const qg_problem *p,
                            int d_fp8, const qg_config *avoid, int num_avoid, qg_config *out,
                            qg_kernel_plan *plan, bool batched_kernel) {
    /* psum: rows per group from the hint, else the average (M_total / G). */
    const int rows = walks_groups(p->kind) && p->expected_m > 0 ? p->expected_m
                     : p->kind == QG_GEMM_GROUPED_PSUM ? ceil_div(p->m, p->num_groups)
                                                       : p->m;
    const int groups = p->kind == QG_GEMM_GROUPED_CONTIGUOUS ? 1 : p->num_groups;
    /* k-grouped: k is the groups' sum; a group's K, on average */
    const int group_k = one_d_group_k(p);
    const bool large = rows > 256;
    /* psum groups of 1024 rows and more tile like the contiguous layout's
     * (H200, 2026-11-25 f, explore-g.log: 4 x 8192, 6144x7168 128x192 0.972
     * of DeepGEMM against 0.946-0.959 as 128x256 A); smaller ones keep the
     * walked groups' rating of 128x256 (32 x ~192 rows: explore-d.log). */
    const qg_gemm_kind rate_kind =
        p->kind == QG_GEMM_GROUPED_PSUM && rows >= 1024 ? QG_GEMM_GROUPED_CONTIGUOUS : p->kind;
    static const int block_ms[] = {64, 128, 256};
    const int heur = qg__fp8_heur();
    if (heur < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "config: QGEMM_FP8_HEUR='%.64s' is not a '+'-separated list of none, "
                        "default, notall, nomcb, nomcbc",
                        qg__env_string("QGEMM_FP8_HEUR"));
    /* (nomcb: groups of at most QG_HEUR_SMALL_ROWS expected rows at short K keep no B) */
    const bool long_k = p->k >= QG_HEUR_LONG_K;
    const bool grouped_mcb = !batched_kernel && qg__fp8_grouped_mcb(props, p->kind, d_fp8) &&
                             !((heur & QG_HEUR_NOMCB_SMALL) && walks_groups(p->kind) &&
                               rows <= QG_HEUR_SMALL_ROWS && !long_k) &&
                             !((heur & QG_HEUR_NOMCB_CONTIG) &&
                               p->kind == QG_GEMM_GROUPED_CONTIGUOUS &&
                               p->m <= (long long)QG_HEUR_SMALL_ROWS * p->num_groups);
    qg_config best;
    memset(&best, 0, sizeof best);
    int best_waves = 0, best_last = 0;
    double best_cost = 0;
    /* SwiGLU: 128x256 is its one tile (fp8_d_tile), small problems too; the
     * masked kind skips the m64 tiles past a group's end (QG_SKIP_ROWS).
     * Under swm64 64x256 as well (swiglu_m64_tile): at <= 64 rows a group
     * the same tiles and waves, fewer rows of A a tile (small_tile_cost). */
    const bool swiglu = (d_fp8 & QG_D_SWIGLU) != 0;
    for (int i = 0; i < 3; ++i) {
        const int bm = block_ms[i];
        if (bm > 64 && rows <= 64 && !swiglu) continue; /* a half-empty tile wastes the MMA */
        if (bm == 256 && !large) continue;
        /* (the 1D1D kinds' block_n steps by 8: 128x136 saves waves there) */
        /* (swm64: SwiGLU's 64x256 too, past the plain 64-row maximum) */
        const bool m64 = swiglu && (d_fp8 & QG_D_SWIGLU_M64) && bm == 64;
        for (int bn = 16; bn <= (m64 ? 256 : qg__max_block_n(p->kind, bm)); bn += qg__one_d(p->kind) ? 8 : 16)
            for (int mc = 0; mc < (large ? 3 : 1); ++mc) {
                if ((!block_n_legal(p->kind, bm, bn) && !(m64 && swiglu_m64_tile(d_fp8, bm, bn))) ||
                    !fp8_d_tile(d_fp8, bn))
                    continue;
                qg_config c;
                memset(&c, 0, sizeof c);
                c.block_m = bm, c.block_n = bn, c.multicast = (qg_multicast)mc;
                if (mc && num_sms % 2) continue;
                /* (a split group's cluster is taken: no multicast there) */
                const int split = fp8_split(d_fp8, bn);
                if (split > 1 && (mc || num_sms < split || !split_tiles_allowed())) continue;
                if (avoided(avoid, num_avoid, bm, bn)) continue;
                /* (the contiguous layouts: no 256-row tiles but psum's tall
                 * ones, and those below for groups of 129..256 rows) */
                if (is_contiguous(p->kind) && bm > 128 &&
                    !tall_walked_tile(p, rows, bm, bn, c.multicast))
                    continue;
                /* (notall: 128x192 B, not the tall tile, where grouped B may be taken at long K) */
                if ((heur & QG_HEUR_NOTALL) && grouped_mcb && long_k &&
                    tall_walked_tile(p, rows, bm, bn, c.multicast))
                    continue;
                /* (the m-grouped layouts' per-tile B multicast: forced
                 * configurations only, unless QGEMM_FP8_GROUPED_MCB) */
                const bool grouped_b = c.multicast == QG_MULTICAST_B && b_pairs_per_tile(p->kind);
                if (grouped_b && !grouped_mcb) continue;
                if (!multicast_pairs(p, bm, bn, QG_DEFAULT_SWIZZLE, c.multicast)) continue;
                const long long tiles =
                    (long long)ceil_div(rows, bm) * sched_n_blocks(p, d_fp8, bn) * groups;
                /* Clusters of 4: the CTAs resident (split_room; not
                 * queried here: the launch lowers the grid to
                 * cuOccupancyMaxActiveClusters). */
                const int sms = split_room(d_fp8, split, num_sms);
                const int waves = (int)((tiles + sms - 1) / sms);
                const int last = (int)(tiles - (long long)(waves - 1) * sms);
                /* Multicast pays off only over several waves: at one or two
                 * the paired CTAs' lock-step costs more than it saves
                 * (256x128 and 128x128 at M = 512..2048 ran 2-5% slower with
                 * A than without, 2026-11-22-explore5 run 3). The wide tiles
                 * are for large problems; 256x128 without multicast won at
                 * one and two waves there too (1024x4096x7168: 52.5 us
                 * against 56.0 for 128x128). */
                const bool few_waves = 2 * tiles < 5ll * num_sms;
                /* (grouped B, as DeepGEMM: from two waves on; one wave only
                 * shares what L2 already serves) */
                if (grouped_b && waves <= 1) continue;
                /* (psum: a group of at most 256 rows, but many groups
                 * make a large problem, and 256-row tiles do not exist
                 * there: 32 x ~192 rows, N 6144, K 7168 ran 582.6 us as
                 * 128x256 A against 613.3 as 128x192, explore-d.log) */
                const bool many = p->kind == QG_GEMM_GROUPED_PSUM && tiles >= 4ll * num_sms;
                /* the 1D1D kinds: multicast only in the dense weight
                 * gradient over several waves, and only what wgrad_efficiency
                 * rates (128x128 A at long K; 0 for the rest, below) */
                if (qg__one_d(p->kind) && mc && (p->kind != QG_GEMM_WGRAD || few_waves)) continue;
                if (is_wide(p->kind, bm, bn) && !large && !many && !swiglu) continue;
                const double eff = qg__one_d(p->kind)
                                       ? wgrad_efficiency(bm, bn, group_k, d_rows_major(p, bn),
                                                          c.multicast)
                                   : grouped_b ? grouped_b_efficiency(rate_kind, bm, bn)
                                   : mc && few_waves
                                       ? 0.95 * tile_efficiency(rate_kind, bm, bn, QG_MULTICAST_NONE)
                                   : tall_walked_tile(p, rows, bm, bn, c.multicast)
                                       ? 1.13
                                       : tile_efficiency(rate_kind, bm, bn, c.multicast);
                if (qg__one_d(p->kind) && eff <= 0.0) continue; /* a multicast wgrad_efficiency does not rate */
                /* Walked groups (masked, psum): the rows are an estimate
                 * (expected_m), so the last wave's fill is unknown: whole
                 * waves would rank tiles by a rounding the real rows do not
                 * follow (masked 6 x ~1024 rows, N 4096, K 2048: 128x256 83.2
                 * us against 93.2 for 128x192 A, which whole waves of
                 * expected_m = 1228 rows preferred; explore-d.log). But on
                 * the H200 (masked_whole_waves) the masked kind counts whole
                 * waves, as DeepGEMM does. */
                const double fill = walks_groups(p->kind) && !masked_whole_waves(props, p)
                                        ? (double)tiles / num_sms
                                        : waves;
                /* (a B tile counts once where the m-blocks sharing it run
                 * on consecutive CTAs: the order the tile will get) */
                const bool b_once = default_swizzle(p, c.multicast) == 1;
                /* A split group's exchange (an st.async round trip through
                 * the cluster and two barrier waits a tile, about 1 us: not
                 * measured) in the small problems' unit, rows of A and B a
                 * CTA streams per K block (~0.1 us a row at 56 K blocks:
                 * see stream_us), so ~550 / K blocks rows: it decides only
                 * between tiles of equal waves. */
                const long long xchg =
                    split > 1 ? (long long)waves * ceil_div(550, ceil_div(p->k, 128)) : 0;
                const double cost =
                    large ? fill * bm * bn / eff
                          : (double)(small_tile_cost(rows, bm, bn, waves, b_once) + xchg);
                bool better;
                if (best.block_m == 0) better = true;
                else if (large) better = cost < best_cost * 0.999;
                else better = waves < best_waves ||
                              (waves == best_waves &&
                               (cost < best_cost ||
                                (cost == best_cost &&
                                 (last > best_last ||
                                  (last == best_last && bm * bn > best.block_m * best.block_n)))));
                if (better) best = c, best_waves = waves, best_last = last, best_cost = cost;
            }
    }
    /* A masked group of 129..256 rows fits one 256x128 m-block: half the
     * tiles of 128-row blocks, each reading its B tile once, but twice the
     * MMA work per tile, so it replaces the small problem's choice only where
     * it costs less by the large problems' measure (waves x tile area /
     * efficiency), that is where it saves waves. At 4x256
     * (2026-11-22-explore12 (bench/HISTORY.md), run 1) 256x128 took 55.0 us
     * against 61.7 as 128x128 (N 4096, K 7168: 1 wave against 2) and 34.3
     * against 38.4 as 128x160 (N 7168, K 2048: 2 against 3). Dense rows get
     * no such tile: one group of 256 rows has too few tiles for it
     * (256x7168x2048: 13.3 us as 128x112, 18.1 as 256x128). */
    /* The psum layout's groups of 129..256 rows always take it: there its
     * 128x256 ran at 0.920-0.976 of DeepGEMM where the masked kind's 256x128
     * A, which skips the m64 tiles past a group's end, ran at 0.995-1.063 on
     * the same shapes (H200, 2026-11-25-h200-14 peers.txt, 32 x ~192 rows).
     * The psum kernel skips those rows the same way at 256 rows
     * (QG_SKIP_ROWS): 32 x ~192 rows, 128x256 / 256x128 A, A B A B (H100,
     * 2026-11-27-h100-15 explore-b.log, qgemm alone): N x K 6144x7168
     * 671.9-673.8 / 601.9-602.4 us, 7168x3072 348.6-351.5 / 318.7-318.8,
     * 4096x4096 278.1-279.6 / 243.5-243.6, 4096x2048 144.1-144.3 /
     * 129.1-129.3. */
    if ((p->kind == QG_GEMM_GROUPED_MASKED || p->kind == QG_GEMM_GROUPED_PSUM) && !large &&
        rows > 128 && best.block_m && !avoided(avoid, num_avoid, 256, 128) &&
        fp8_d_tile(d_fp8, 128)) {
        const long long tiles = (long long)num_n_blocks(p, 128) * groups;
        const int waves = (int)((tiles + num_sms - 1) / num_sms);
        /* (rated as the dense tile: this comparison was measured on its own) */
        const double cost =
            (double)waves * 256 * 128 / tile_efficiency(QG_GEMM_DENSE, 256, 128, QG_MULTICAST_NONE);
        if (p->kind == QG_GEMM_GROUPED_PSUM ||
            cost < (double)best_waves * best.block_m * best.block_n /
                       tile_efficiency(p->kind, best.block_m, best.block_n, best.multicast)) {
            memset(&best, 0, sizeof best);
            best.block_m = 256, best.block_n = 128;
            /* Over many waves, with A multicast (32 groups of ~192 rows, N
             * 6144, K 7168: 568.7 us against 581.6 without; H200,
             * 2026-11-25 f, explore-g.log). */
            if (num_sms % 2 == 0 && tiles >= 4ll * num_sms &&
                multicast_pairs(p, 256, 128, QG_DEFAULT_SWIZZLE, QG_MULTICAST_A))
                best.multicast = QG_MULTICAST_A;
            best_waves = waves, best_last = (int)(tiles - (long long)(waves - 1) * num_sms);
        }
    }
    if (best.block_m == 0)
        return qg__fail(QG_ERROR_UNSUPPORTED,
                        "config: no tile left for m %d n %d k %d after %d refused by the compiler",
                        p->m, p->n, p->k, num_avoid);
    /* QGEMM_FP8OUT_VARIANT swmca / swmcac (QG_D_SWIGLU_MCA, _MCAC): SwiGLU's
     * 128x256 with A multicast in the masked (contiguous) kind over 2.5 waves
     * of tiles and more (the large-problem rule's few_waves; the small path
     * never tries multicast). At masked 32 x 256 rows, N 4096, K 7168 (1024
     * tiles, ~7.75 waves) the unshared tile moves 48 KB a stage a CTA from
     * L2 (2.75 GB in 444 us, ~6.2 TB/s: H200 2026-11-29-h200-16-x1) where
     * the bf16-output GEMM's 256x128 A moves 32 KB (373 us); A pairs make it
     * 40 KB. Not measured. */
    if (swiglu && best.block_m == 128 && best.block_n == 256 && best.multicast == QG_MULTICAST_NONE &&
        ((p->kind == QG_GEMM_GROUPED_MASKED && (d_fp8 & QG_D_SWIGLU_MCA)) ||
         (p->kind == QG_GEMM_GROUPED_CONTIGUOUS && (d_fp8 & QG_D_SWIGLU_MCAC))) &&
        num_sms % 2 == 0 && multicast_pairs(p, 128, 256, QG_DEFAULT_SWIZZLE, QG_MULTICAST_A)) {
        const long long tiles = (long long)ceil_div(rows, 128) * num_n_blocks(p, 256) * groups;
        if (2 * tiles >= 5ll * num_sms) best.multicast = QG_MULTICAST_A;
    }
    /* Split-K (see stream_us): one wave of clusters, plain tiles that fit
     * shared memory beside the partner's sums, and at least a 10% gain in the
     * model over the tile chosen above. */
    if (p->kind == QG_GEMM_DENSE && !large && num_sms >= 2 && ceil_div(p->k, 128) >= 8 && !swiglu) {
        double best_split = 0.9 * best_waves * stream_us(props, p, best.block_m, best.block_n, 1);
        qg_config split;
        memset(&split, 0, sizeof split);
        int split_ctas = 0;
        const int bm = 64; /* (see stream_us: 128-row splits lost on the H200) */
        for (int bn = 16; bn <= max_plain_block_n(bm); bn += 16) {
            /* (FP8 D: whole groups only; a split group's cluster is taken) */
            if (avoided(avoid, num_avoid, bm, bn) || !fp8_d_tile(d_fp8, bn) ||
                fp8_split(d_fp8, bn) > 1)
                continue;
            if (smem_bytes_d(bm, bn, 1, 2, sfb_floats(p, bn), d_fp8 ? 1 : 2, 1) > props->smem_optin_bytes)
                continue;
            const long long ctas = 2ll * ceil_div(rows, bm) * num_n_blocks(p, bn);
            if (ctas > num_sms - num_sms % 2) continue;
            const double t = stream_us(props, p, bm, bn, 2);
            if (t < best_split) {
                split.block_m = bm, split.block_n = bn, split.split_k = 2;
                best_split = t, split_ctas = (int)ctas;
            }
        }
        if (split.block_m) best = split, best_waves = 1, best_last = split_ctas;
    }
    /* QGEMM_FP8OUT_VARIANT nk (QG_D_FP8_NK): where the choice is a split tile
     * (64x32 in clusters of 4 at N 576: 20 CTAs at M 64, each streaming all
     * of K, against bf16 D's 72 of 64x16 with split-K), the same split with
     * split-K 2 as well (clusters of 8 or 4) where the model above saves
     * 10% and one round of clusters holds it: clusters of 8 taken as 3/4 of
     * the SMs (two a GPC of 16-18), of 4 as split_room's. Not measured. */
    if ((d_fp8 & QG_D_FP8_NK) && !swiglu && p->kind == QG_GEMM_DENSE && !large && num_sms >= 8 &&
        ceil_div(p->k, 128) >= 8 && split_tiles_allowed() && best.split_k <= 1 &&
        fp8_split(d_fp8, best.block_n) > 1) {
        double best_t = 0.9 * best_waves * stream_us(props, p, best.block_m, best.block_n, 1);
        qg_config nk;
        memset(&nk, 0, sizeof nk);
        long long nk_ctas = 0;
        for (int bn = 32; bn <= 64; bn *= 2) {
            const int split = fp8_split(d_fp8, bn);
            if (avoided(avoid, num_avoid, 64, bn) ||
                smem_bytes_d(64, bn, 1, 2, sfb_floats(p, bn), 1, split) > props->smem_optin_bytes)
                continue;
            const long long ctas = 2ll * ceil_div(rows, 64) * sched_n_blocks(p, d_fp8, bn);
            const int room = split == 4 ? num_sms * 3 / 4 / 8 * 8 : split_room(d_fp8, 4, num_sms);
            if (ctas > room) continue;
            const double t = stream_us(props, p, 64, bn, 2);
            if (t < best_t) {
                nk.block_m = 64, nk.block_n = bn, nk.split_k = 2;
                best_t = t, nk_ctas = ctas;
            }
        }
        if (nk.block_m) best = nk, best_waves = 1, best_last = (int)nk_ctas;
    }
    qg_config cfg = best;
    qg_status st = qg__complete_config_out(props, num_sms, p, d_fp8, &cfg, plan);
    if (st != QG_SUCCESS && cfg.multicast != QG_MULTICAST_NONE) {
        cfg.multicast = QG_MULTICAST_NONE;
        cfg.num_stages = 0;
        st = qg__complete_config_out(props, num_sms, p, d_fp8, &cfg, plan);
    }
    if (st != QG_SUCCESS) return st;
    *out = cfg;
    if (qg__env_flag("QGEMM_PRINT_CONFIG"))
        fprintf(stderr,
                "qgemm: kind %d%s m %d n %d k %d groups %d -> block %dx%d stages %d multicast %d "
                "split-K %d swizzle %d sms %d smem %zu (waves %d, last wave %d CTAs)\n",
                (int)p->kind, swiglu ? " (SwiGLU, FP8 D)" : d_fp8 ? " (FP8 D)" : "", p->m, p->n, p->k, p->num_groups, cfg.block_m, cfg.block_n,
                cfg.num_stages, (int)cfg.multicast, cfg.split_k, cfg.swizzle_group, cfg.num_sms,
                cfg.smem_bytes, best_waves, best_last);
    return QG_SUCCESS;
}

qg_status qg__select(const qg_device_props *props, int num_sms, const qg_problem *p,
                     qg_config *out, qg_kernel_plan *plan) {
    return qg__select_avoiding(props, num_sms, p, NULL, 0, out, plan);
}
