/*
 * bf16_plan.c -- configurations of the BF16 GEMM family
 * (kernels/qg_bf16_gemm.cuh): what is legal, what it costs in shared memory,
 * which one a problem gets, and the JIT source of a plan. Pure C over its
 * arguments (src/bf16_plan.h).
 */
#include "bf16_plan.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define BF16_BLOCK_K 64
#define BF16_MAX_STAGES 16

static int ceil_div(long long a, long long b) { return (int)((a + b - 1) / b); }
static int round_up(int x, int a) { return (x + a - 1) / a * a; }

int qg__bf16_smem_bytes_sk(qg_bf16_kind kind, int block_m, int block_n, int num_stages, int d_f32,
                           int merge, int splitk) {
    /* the reduced batch sum: one broadcast word per math warpgroup, padded;
     * split-K: none (its owners store D from registers) */
    const int smem_d = kind == QG_BF16_BATCH_SUM ? 1024
                       : splitk > 1              ? 0
                                                 : round_up(block_m * block_n * (d_f32 ? 4 : 2), 1024);
    const int per_stage = (block_m + block_n) * BF16_BLOCK_K * 2 * merge;
    return 1024 /* alignment slack */ + smem_d + num_stages * (per_stage + 16 /* barriers */) +
           (splitk > 1 ? 32 : 0) /* split-K's barriers: ready x 2, full, done */;
}

int qg__bf16_smem_bytes_merged(qg_bf16_kind kind, int block_m, int block_n, int num_stages,
                               int d_f32, int merge) {
    return qg__bf16_smem_bytes_sk(kind, block_m, block_n, num_stages, d_f32, merge, 1);
}

int qg__bf16_smem_bytes_of(qg_bf16_kind kind, int block_m, int block_n, int num_stages,
                           int d_f32) {
    return qg__bf16_smem_bytes_merged(kind, block_m, block_n, num_stages, d_f32, 1);
}

/*
 * Merged K stages (kernels/qg_bf16_gemm.cuh "Merged stages"). Every 64-K
 * stage costs the math warps two barrier operations, a wgmma commit and wait
 * and a release; on a row whose tile is small (64x16: 16 wgmmas of n16 per
 * 64 K) that bookkeeping, not the tensor cores, paces the loop (ncu, H200,
 * 128x576x7168: qgemm 1.98 M warp instructions against DeepGEMM's 1.06 M,
 * `wait` and barrier lines its top stalls). auto is DeepGEMM's rule
 * (sm90_bf16_gemm.cuh): a tile of one math warpgroup (block_m 64) whose
 * pipeline has >= 10 stages merges stages / 5 of them, leaving >= 5 stages
 * of the same bytes in flight (64x16, 16 stages: 3 x 64 K per stage, 5
 * stages; 15 of the 16 stages' bytes). Larger tiles keep one 64-K block per
 * stage: their wgmmas per stage already cover the bookkeeping, and their
 * stage counts are below 10 anyway. Only dense NT (K-major A and B): the
 * kernel merges nothing else (its static_assert). A merge is capped at the
 * K's 64-K blocks (a longer stage would hold nothing more) and so that >= 3
 * stages remain (a forced n: QGEMM_BF16_MERGE=n).
 */
int qg__bf16_merge_of(const qg_bf16_problem *p, int bm, int bn, int stages) {
    if (!p || p->merge == 0 || p->kind != QG_BF16_DENSE || p->layout != QG_BF16_NT) return 1;
    int m;
    if (p->merge < 0) {
        /* auto merges only grids of few tiles (<= 0.6 of the SMs): on the H200
         * (2026-11-29-h200-02-u2) merging took 1x576x7168 from 13.9 to 10.9 us
         * (36 tiles) and 128x576x7168 from 14.2 to 12.2 (72), but lost 3-8% on
         * the rows of 128-132 tiles (1x2112, 128x2112, 128x4096 x 7168): there
         * every SM streams its own tile and the longer stages only delay the
         * first wgmma. */
        const long long tiles = (long long)ceil_div(p->m, bm) * ceil_div(p->n, bn > 0 ? bn : 1);
        m = bm == 64 && stages >= 10 && tiles * 5 <= 3ll * p->num_sms ? stages / 5 : 1;
    } else {
        m = p->merge;
    }
    const int k_blocks = ceil_div(p->k > 0 ? p->k : 64, BF16_BLOCK_K);
    if (m > k_blocks) m = k_blocks;
    if (m > stages / 3) m = stages / 3;
    if (m > 16) m = 16;
    return m > 1 ? m : 1;
}

int qg__bf16_smem_bytes(int block_m, int block_n, int num_stages, int d_f32) {
    return qg__bf16_smem_bytes_of(QG_BF16_DENSE, block_m, block_n, num_stages, d_f32);
}

static int is_sum_kind(qg_bf16_kind k) { return k == QG_BF16_BATCH_SUMS || k == QG_BF16_BATCH_SUM; }

/* QGEMM_BF16_KGROUPED (qg_bf16_problem.kgrouped): the k-grouped walk (0 n,
 * 1 m, 2 mc, 3 dg; other kinds 0) and the half-tile FP32 epilogue (d2: bit 2);
 * the knob's default, m+d2, is 5 */
static int kg_walk(const qg_bf16_problem *p) {
    return p->kind == QG_BF16_K_GROUPED ? (p->kgrouped & 3) : 0;
}
static int kg_d2(const qg_bf16_problem *p) {
    return p->kind == QG_BF16_K_GROUPED && (p->kgrouped & 4);
}

/* Rows per group the heuristic plans for. */
static int planned_rows(const qg_bf16_problem *p) {
    if (p->kind == QG_BF16_MASKED)
        return p->expected_m > 0 && p->expected_m < p->m ? p->expected_m : p->m;
    if (p->kind == QG_BF16_PSUM) {
        if (p->expected_m > 0) return p->expected_m;
        return p->num_groups > 0 ? ceil_div(p->m, p->num_groups) : p->m;
    }
    return p->m;
}

/* Groups of tiles (m-grouped layouts: the contiguous one counts its rows
 * once, as M holds every group's rows). */
static int planned_groups(const qg_bf16_problem *p) {
    return p->kind == QG_BF16_MASKED || p->kind == QG_BF16_PSUM || p->kind == QG_BF16_K_GROUPED ||
                   p->kind == QG_BF16_BATCHED || is_sum_kind(p->kind)
               ? p->num_groups
               : 1;
}

/* Batches of one split of the batch sums. */
static int split_batches(const qg_bf16_problem *p) {
    return p->num_groups > 0 ? ceil_div(p->sum_batches, p->num_groups) : 1;
}

static int problem_ok(const qg_bf16_problem *p) {
    if (!p || p->m < 1 || p->n < 8 || p->k < 0 || p->num_sms < 1 || p->smem_limit < 1) return 0;
    if ((unsigned)p->layout > QG_BF16_TT || (unsigned)p->kind > QG_BF16_BATCH_SUM) return 0;
    if (is_sum_kind(p->kind) &&
        (p->sum_batches < p->num_groups ||
         (long long)(p->num_groups - 1) * split_batches(p) >= p->sum_batches))
        return 0; /* every split has a batch */
    if (p->num_groups < 1) return 0;
    if (p->sum_radix != 0 && p->sum_radix != 2 && p->sum_radix != 4 && p->sum_radix != 8)
        return 0; /* the tree's radix (kernels/qg_bf16_gemm.cuh QG_SUM_RADIX) */
    if (p->sum_atomic && (p->kind != QG_BF16_BATCH_SUM || p->num_groups < 2 || p->with_c))
        return 0; /* the atomic reduction: splits > 1, C put into D by the host */
    if ((p->sum_variant || p->sum_max_stages) && !p->sum_atomic)
        return 0; /* QGEMM_BMK_VARIANT: the atomic reduction's */
    if (p->sum_variant < 0 || p->sum_variant > 3) return 0;
    if (p->sum_max_stages < 0 || p->sum_max_stages > BF16_MAX_STAGES) return 0;
    if (p->merge < -1 || p->merge > 16) return 0; /* QGEMM_BF16_MERGE: auto, off or 1..16 */
    if (p->splitk != 0 && p->splitk != -1 && p->splitk != 2 && p->splitk != 4 && p->splitk != 8)
        return 0; /* QGEMM_BF16_SPLITK: off, auto, 2, 4 or 8 */
    if (p->kgrouped < 0 || p->kgrouped > 7) return 0; /* QGEMM_BF16_KGROUPED: walk | d2 */
    /* the masked and psum layouts' row-predicated stores write 16 bytes at a time */
    if ((p->kind == QG_BF16_MASKED || p->kind == QG_BF16_PSUM) && p->n % 8) return 0;
    return 1;
}

int qg__bf16_legal(const qg_bf16_problem *p, int bm, int bn, int mc, const char **why) {
    const char *w = NULL;
    const int a_mn = qg__bf16_a_mn_major(p->layout), b_mn = qg__bf16_b_mn_major(p->layout);
    const int m_blocks = ceil_div(planned_rows(p), bm), n_blocks = ceil_div(p->n, bn);
    if (!problem_ok(p)) w = "bad problem";
    else if (bm != 64 && bm != 128 && bm != 256) w = "block_m is 64, 128 or 256";
    else if (bn < 16 || bn > 256 || bn % 16) w = "block_n a multiple of 16 up to 256";
    else if (bm > 128 && bn > 128) w = "one of block_m, block_n at most 128 (registers)";
    else if (bm == 256 && p->d_f32 && p->kind != QG_BF16_BATCH_SUM)
        w = "FP32 D: block_m at most 128 (the output tile in shared memory)";
    else if (b_mn && bn % 64) w = "MN-major B: block_n a multiple of 64 (whole swizzle atoms)";
    else if (a_mn && p->kind != QG_BF16_DENSE && p->kind != QG_BF16_K_GROUPED &&
             p->kind != QG_BF16_BATCHED)
        w = "MN-major A: dense, k-grouped or batched";
    else if ((p->kind == QG_BF16_CONTIGUOUS || p->kind == QG_BF16_PSUM || p->kind == QG_BF16_MASKED) &&
             bm > 128)
        w = "m-grouped layouts: block_m at most 128";
    else if (b_mn && p->kind != QG_BF16_DENSE && p->kind != QG_BF16_K_GROUPED &&
             p->kind != QG_BF16_BATCHED && p->k % 64)
        w = "m-grouped, MN-major B: K a multiple of 64 (a box must not reach the next group)";
    else if (p->with_c && p->kind != QG_BF16_DENSE && p->kind != QG_BF16_K_GROUPED &&
             !(p->kind == QG_BF16_BATCH_SUM && p->d_f32))
        w = "C: dense, k-grouped, or the batch sum into an FP32 D";
    else if (mc < 0 || mc > 2) w = "multicast 0, 1 (A) or 2 (B)";
    else if (mc && p->num_sms % 2) w = "multicast: an even SM count";
    /* k-grouped B multicast (QGEMM_BF16_KGROUPED=mc / dg): the pairs are two
     * m-blocks of one n-block of one group; an even m-block count keeps every
     * pair inside its group (each group's tiles are then even in number) */
    else if (mc && p->kind == QG_BF16_K_GROUPED && (mc != 2 || kg_walk(p) < 2))
        w = "k-grouped: no multicast (B with QGEMM_BF16_KGROUPED=mc or dg)";
    else if (mc && p->kind == QG_BF16_K_GROUPED && m_blocks % 2)
        w = "k-grouped B multicast: an even m-block count";
    else if (mc && p->kind == QG_BF16_BATCHED) w = "batched: no multicast";
    else if (p->kind == QG_BF16_BATCH_SUMS && (a_mn || b_mn || !p->d_f32 || p->with_c || mc))
        w = "batch sums: K-major A and B, FP32 D, no C, no multicast";
    else if (p->kind == QG_BF16_BATCH_SUM && (a_mn || b_mn || mc))
        w = "batch sum: K-major A and B, no multicast";
    else if (mc == 1 && n_blocks % 2) w = "A multicast: an even n-block count";
    else if (mc == 1 && a_mn && bm % 128) w = "A multicast, MN-major: block_m 128 or 256";
    else if (mc == 2 && p->kind != QG_BF16_DENSE && p->kind != QG_BF16_CONTIGUOUS &&
             p->kind != QG_BF16_MASKED && p->kind != QG_BF16_PSUM && p->kind != QG_BF16_K_GROUPED)
        w = "B multicast: dense, contiguous, masked, psum or k-grouped";
    /* (the m-grouped layouts' pairs come from device data: the kernel decides
     * per tile, kernels/qg_scheduler.cuh QG_PAIR_TILES) */
    else if (mc == 2 && p->kind == QG_BF16_DENSE && m_blocks % 2)
        w = "B multicast: an even m-block count";
    /* (k-grouped: the pair's CTAs load alternate 64-column atoms of B, any
     * count of them; kernels/qg_bf16_gemm.cuh) */
    else if (mc == 2 && b_mn && bn % 128 && p->kind != QG_BF16_K_GROUPED)
        w = "B multicast, MN-major: block_n 128 or 256";
    if (why) *why = w;
    return w == NULL;
}

int qg__bf16_complete(const qg_bf16_problem *p, int bm, int bn, int mc, qg_bf16_plan *out) {
    return qg__bf16_complete_split(p, bm, bn, mc, 1, out);
}

int qg__bf16_complete_split(const qg_bf16_problem *p, int bm, int bn, int mc, int splitk,
                            qg_bf16_plan *out) {
    if (!qg__bf16_legal(p, bm, bn, mc, NULL)) return -1;
    if (splitk != 1 && (p->kind != QG_BF16_DENSE || mc || (splitk != 2 && splitk != 4 && splitk != 8)))
        return -1; /* split-K: dense, no multicast (the cluster is the split's) */
    int stages = 0;
    /* QGEMM_BMK_VARIANT's :sN: fewer stages (fewer bytes in flight per SM) */
    const int max_stages = p->sum_max_stages > 0 && p->sum_max_stages < BF16_MAX_STAGES
                               ? p->sum_max_stages
                               : BF16_MAX_STAGES;
    /* d2 (QGEMM_BF16_KGROUPED, the k-grouped FP32 D): the output tile holds half
     * of block_n at a time (two rounds of the epilogue), where the halves are
     * whole store chunks; its other half goes to the stages */
    const int store_cols = p->d_f32 ? (bn % 32 == 0 ? 32 : bn % 16 == 0 ? 16 : 8)
                                    : (bn % 64 == 0 ? 64 : bn % 32 == 0 ? 32 : 16);
    const int d_half = kg_d2(p) && p->d_f32 && splitk == 1 && (bn / 2) % store_cols == 0;
    const int d_saved =
        d_half ? round_up(bm * bn * 4, 1024) - round_up(bm * bn * 2, 1024) : 0;
    for (int s = max_stages; s >= 1; --s)
        if (qg__bf16_smem_bytes_sk(p->kind, bm, bn, s, p->d_f32, 1, splitk) - d_saved <=
            p->smem_limit) {
            stages = s;
            break;
        }
    /* At least 3 stages to hide TMA latency, 4 for small tiles (DeepGEMM's rule). */
    if (stages < 3 || (bm * bn < 128 * 192 && stages < 4)) return -1;
    qg_bf16_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.block_m = bm;
    pl.block_n = bn;
    pl.block_k = BF16_BLOCK_K;
    /* merged stages: the same shared memory in fewer, longer stages */
    pl.merge = qg__bf16_merge_of(p, bm, bn, stages);
    stages /= pl.merge;
    pl.num_stages = stages;
    pl.multicast = mc;
    pl.cluster = mc ? 2 : 1;
    /* Small dense problems without multicast: groups of 1, so the m-blocks
     * of one n-block run on neighbouring CTAs (qg_fp8_gemm's rule). */
    pl.swizzle_group = (p->kind == QG_BF16_DENSE && !mc && p->m <= 256) ? 1 : 16;
    if (kg_walk(p)) {
        /* QGEMM_BF16_KGROUPED: DeepGEMM's walk, groups of m-blocks whatever
         * the multicast, of 8 or 16 blocks, whichever spans fewer operand
         * rows in one wave of the grid (its get_num_1d_blocks_per_group:
         * 8 bm + ceil(SMs / 8) bn against the same for 16; ties: 8) */
        pl.raster_m = 1;
        const int grid = p->num_sms / pl.cluster * pl.cluster;
        const long long u8 = 8ll * bm + (long long)ceil_div(grid, 8) * bn;
        const long long u16 = 16ll * bm + (long long)ceil_div(grid, 16) * bn;
        pl.swizzle_group = u16 < u8 ? 16 : 8;
    }
    pl.store_cols = store_cols;
    pl.smem_bytes =
        qg__bf16_smem_bytes_sk(p->kind, bm, bn, stages, p->d_f32, pl.merge, splitk) - d_saved;
    pl.d_half = d_half;
    pl.num_math_wgs = bm == 64 ? 1 : 2;
    pl.splitk = splitk;
    if (splitk > 1) {
        /* every rank at least one K step (64-K blocks, or merged steps) */
        const int k_blocks = ceil_div(p->k, BF16_BLOCK_K);
        if (ceil_div(k_blocks, pl.merge) < splitk) return -1;
        /* the partners' partial sums land in the stages (the kernel's
         * QG_SK_BYTES): (S - 1) x ceil(units / S) x math threads x 16 */
        const int units = bm / 64 / pl.num_math_wgs * bn / 8;
        const int sk_bytes = (splitk - 1) * ceil_div(units, splitk) * 128 * pl.num_math_wgs * 16;
        if (sk_bytes > stages * (bm + bn) * BF16_BLOCK_K * 2 * pl.merge) return -1;
        pl.cluster = splitk;
        pl.swizzle_group = 1;
    }
    pl.num_threads = 128 * (pl.num_math_wgs + 1);
    /* 128 x 40 + 256 x 232 = 64512 registers <= 64 K; one math warpgroup
     * the same (the entry allocation of 256 threads holds more). */
    pl.producer_regs = 40;
    pl.math_regs = 232;
    pl.a_box_rows = qg__bf16_a_mn_major(p->layout) ? 64 : (mc == 1 ? bm / 2 : bm);
    /* decode-sized dense M: load only round_up(M, 8) rows of A */
    if (p->kind == QG_BF16_DENSE && !qg__bf16_a_mn_major(p->layout) && mc != 1 && p->m < bm)
        pl.a_box_rows = round_up(p->m, 8);
    pl.b_box_rows = qg__bf16_b_mn_major(p->layout) ? 64 : (mc == 2 ? bn / 2 : bn);
    pl.d_box_rows = bm / pl.num_math_wgs;
    pl.grid = p->num_sms / pl.cluster * pl.cluster;
    if (pl.grid < pl.cluster) return -1; /* fewer SMs than a cluster */
    *out = pl;
    return 0;
}

void qg__bf16_force_split(const qg_bf16_problem *p, qg_bf16_plan *pl) {
    if (!p || !pl || p->splitk <= 0) return;
    for (int s = p->splitk >= 8 ? 8 : p->splitk >= 4 ? 4 : 2; s >= 2; s /= 2) {
        qg_bf16_plan sp;
        /* (the cluster is the split's: the tile without its multicast) */
        if (qg__bf16_complete_split(p, pl->block_m, pl->block_n, 0, s, &sp) == 0) {
            sp.est_cost = pl->est_cost;
            *pl = sp;
            return;
        }
    }
}

/*
 * B multicast in the m-grouped layouts (contiguous, masked, psum): the share
 * of tiles whose pair neighbour is a tile of the same group and n-block (the
 * kernel multicasts only those; kernels/qg_scheduler.cuh QG_PAIR_TILES).
 * Masked / psum, m planned m-blocks per group: pairs run along M inside a
 * swizzle group, so an even m pairs every tile, an odd m all but about one in
 * m, and m = 1 none. Contiguous, all groups' m-blocks in one walk: about half
 * the groups' boundaries split a pair. 1 for dense (its m-block count is
 * even), 0 without B multicast.
 */
static double b_share(const qg_bf16_problem *p, const qg_bf16_plan *pl) {
    if (pl->multicast != 2) return 0.0;
    if (p->kind == QG_BF16_MASKED || p->kind == QG_BF16_PSUM) {
        const int mb = ceil_div(planned_rows(p), pl->block_m);
        return mb < 2 ? 0.0 : (double)(mb - mb % 2) / mb;
    }
    if (p->kind == QG_BF16_CONTIGUOUS) {
        const double mb = ceil_div(p->m, pl->block_m);
        const double share = 1.0 - 0.5 * p->num_groups / mb;
        return share > 0.0 ? share : 0.0;
    }
    return 1.0;
}

/*
 * The estimate (SM clocks, relative): a CTA runs ceil(tiles / grid) tiles
 * one after another (the persistent grid's waves), each
 *   K x max(tensor-core time, operand-feed time) + fill + epilogue,
 * tensor cores at 2048 bf16 MACs a clock an SM (989 TFLOPS / 132 SMs /
 * 1.83 GHz), operands from L2 at about 46 bytes a clock an SM (the
 * multicast operand counted once per pair), the pipeline's fill at the
 * latency of one stage (~700 clocks), the epilogue at 64 bytes a clock.
 * Among equal waves the model prefers the fuller last wave only through the
 * tile time (a larger tile that fills fewer SMs costs the same waves);
 * ties go to the fuller last wave, then the larger tile, then more stages.
 */
static double estimate(const qg_bf16_problem *p, const qg_bf16_plan *pl, int *waves, int *last) {
    const int rows = planned_rows(p);
    const long long tiles = (long long)ceil_div(rows, pl->block_m) * ceil_div(p->n, pl->block_n) *
                            planned_groups(p);
    const int grid = pl->grid;
    /* in 64 bits: hostile shapes (m, n near 2^31, many groups) make more
     * waves than an int holds (found by make fuzz: ceil_div's int result
     * wrapped to INT_MIN); the count saturates, the last wave stays exact */
    const long long waves_ll = (tiles + grid - 1) / grid;
    *waves = waves_ll > INT_MAX ? INT_MAX : (int)waves_ll;
    *last = (int)(tiles - (waves_ll - 1) * grid);
    const double k = (p->k > 0 ? p->k : 64) *
                     (is_sum_kind(p->kind) ? (double)split_batches(p) : 1.0);
    const double mma = (double)pl->block_m * pl->block_n / 2048.0;
    const double a_bytes = pl->block_m * 2.0 / (pl->multicast == 1 ? 2 : 1);
    const double b_bytes = pl->block_n * 2.0 * (1.0 - 0.5 * b_share(p, pl));
    /* decode-sized M: the rows of A past M are zero-filled by TMA, not read */
    const double a_real = rows < pl->block_m ? a_bytes * rows / pl->block_m : a_bytes;
    const double feed = (a_real + b_bytes) / 46.0;
    /* v2's atomic batch sum into a bf16 D is planned as into an FP32 D (below) */
    const int v2_bf16 =
        p->kind == QG_BF16_BATCH_SUM && p->sum_atomic && p->sum_variant >= 1 && !p->d_f32;
    const int d_f32 = p->d_f32 || v2_bf16;
    double t = k * (mma > feed ? mma : feed) + 700.0 +
               (double)pl->block_m * pl->block_n * (d_f32 ? 4 : 2) * (p->with_c ? 2 : 1) / 64.0;
    double cost = t * *waves;
    if (p->kind == QG_BF16_BATCH_SUM && p->sum_atomic) {
        /* the atomic reduction: the fragment's reductions (8 bytes each,
         * fire-and-forget) in place of the epilogue counted in t; a bf16 D
         * adds the last arrival's round trip, its load of the FP32 sums, and
         * its stores of zeros and of D. v2 (QGEMM_BMK_VARIANT): all of those
         * loads in flight at once, the stores fire-and-forget like the
         * reductions: one round trip, the tile chosen as for an FP32 D (v1's
         * bytes term, added once for a tile-sized epilogue, made the 129-batch
         * 128x384 call pick 260 CTAs of 128x96 over 130 of 128x192) */
        const double frag = (double)pl->block_m * pl->block_n * 4;
        cost += frag / 64.0 - (double)pl->block_m * pl->block_n * (d_f32 ? 4 : 2) / 64.0;
        if (v2_bf16) cost += 2000.0;
        else if (!p->d_f32) cost += 2000.0 + (frag * 2 + frag / 2) / 64.0;
    } else if (p->kind == QG_BF16_BATCH_SUM) {
        /* the tree's critical path: ceil(log2 splits) levels, each a store,
         * an arrival round trip and a load of the tile's FP32 fragment
         * (~2000 clocks of latency, the bytes at 64 a clock), in place of the
         * epilogue counted in t */
        const int radix = p->sum_radix ? p->sum_radix : 2;
        int levels = 0;
        for (long long span = 1; span < p->num_groups; span *= radix) ++levels;
        /* radix R: a level stores the fragment and loads up to R of them */
        cost += levels * (2000.0 + (double)pl->block_m * pl->block_n * 4 * (1 + radix) / 64.0 -
                          (radix == 2 ? (double)pl->block_m * pl->block_n * 4 / 64.0 : 0.0)) -
                (double)pl->block_m * pl->block_n * (p->d_f32 ? 4 : 2) / 64.0;
    }
    /* multicast over one wave only shares what L2 already serves (DeepGEMM) */
    if (pl->multicast && *waves <= 1) cost *= 4.0; /* in effect: never (DeepGEMM disables it) */
    return cost;
}

/* Operand rows a CTA of the plan pulls through L2 per K element (the
 * multicast operand's half: its pair loads it once). Between multicast A and
 * B of one tile the estimate ties whenever the tile is MMA-bound, yet the
 * operand feed is near its limit there (128 x 256 with A shared: 40 bytes a
 * clock an SM of ~46); DeepGEMM shares the larger operand (its L2 model,
 * heuristics/sm90.hpp), and so does the tie-break (not with legacy 1: v1 kept
 * the first, A). In the m-grouped layouts only the share of B the pairs
 * really multicast counts (b_share). */
static double l2_rows(const qg_bf16_problem *p, const qg_bf16_plan *pl) {
    return pl->block_m / (pl->multicast == 1 ? 2 : 1) + pl->block_n * (1.0 - 0.5 * b_share(p, pl));
}

static int select_unmerged(const qg_bf16_problem *p, qg_bf16_plan *out) {
    int found = 0, best_waves = 0, best_last = 0;
    qg_bf16_plan best;
    memset(&best, 0, sizeof best);
    for (int mc = 0; mc <= 2; ++mc)
        for (int bm = 64; bm <= 256; bm *= 2)
            for (int bn = 16; bn <= 256; bn += 16) {
                qg_bf16_plan pl;
                /* no tile with half its rows or more past the (planned) rows:
                 * the wgmmas of those m64 tiles still run */
                if (bm > 64 && planned_rows(p) <= bm / 2) continue;
                /* m-grouped and k-grouped B multicast: only the swaps below
                 * and in qg__bf16_select */
                if (mc == 2 && p->kind != QG_BF16_DENSE) continue;
                if (qg__bf16_complete(p, bm, bn, mc, &pl)) continue;
                int waves, last;
                pl.est_cost = estimate(p, &pl, &waves, &last);
                int better = !found;
                if (found) {
                    const double rel = pl.est_cost / best.est_cost;
                    if (rel < 0.99) better = 1;
                    else if (rel <= 1.01) {
                        if (waves != best_waves) better = waves < best_waves;
                        else if (last != best_last) better = last > best_last;
                        else if (bm * bn != best.block_m * best.block_n)
                            better = bm * bn > best.block_m * best.block_n;
                        else if (p->legacy != 1 && mc && best.multicast && mc != best.multicast)
                            better = l2_rows(p, &pl) < l2_rows(p, &best);
                        else better = pl.num_stages > best.num_stages;
                    }
                }
                if (better) {
                    best = pl;
                    best_waves = waves;
                    best_last = last;
                    found = 1;
                }
            }
    if (!found) return -1;
    /* The m-grouped layouts (contiguous, masked, psum; not v1 or v2): the
     * chosen tile with B shared instead, where that costs no more and pulls
     * fewer operand rows through L2 -- the share of B its pairs really
     * multicast counted (b_share; the masked 32 x 192 rows: 128 x 256 with B
     * shared, DeepGEMM's choice, in place of A). Only the tile's multicast
     * changes (its stages and grid do not depend on it): a swap, not a new
     * search, as the estimate would otherwise trade the tile itself for a
     * share of B it cannot see in the run-time row counts. */
    if (!p->legacy && best.multicast != 2 &&
        (p->kind == QG_BF16_CONTIGUOUS || p->kind == QG_BF16_MASKED || p->kind == QG_BF16_PSUM)) {
        qg_bf16_plan pl;
        if (qg__bf16_complete(p, best.block_m, best.block_n, 2, &pl) == 0) {
            int waves, last;
            pl.est_cost = estimate(p, &pl, &waves, &last);
            if (pl.est_cost <= best.est_cost * 1.01 && l2_rows(p, &pl) < l2_rows(p, &best))
                best = pl;
        }
    }
    *out = best;
    return 0;
}

/*
 * Split-K's choice (QGEMM_BF16_SPLITK=auto; kernels/qg_bf16_gemm.cuh
 * "Split-K"). On the rows it is for (M <= 128, N of a few hundred, K 7168:
 * a few dozen tiles for 132 SMs) a CTA's time is not the tensor cores' but
 * the latency-bound stream of its operands: measured on the H200
 * (2026-11-29-h200-05-u5), 1x576x7168 (36 CTAs of 64x16, 3 x 5 merged
 * stages, ~45 KB in flight) fed each SM ~12 bytes a clock, 128x576x7168
 * (72 of 64x32, ~180 KB in flight) ~64. So this model: a CTA streams its
 * operand bytes (the real A rows, B) over its K at min(46, bytes in flight /
 * 2800) bytes a clock after a first latency of 2800 clocks (both fit the two
 * rows within ~20%), at least its tensor-core time; waves of CTAs; at least
 * the unique operand bytes at HBM speed (~2600 bytes a clock); plus, split,
 * the exchange: ~1500 clocks of barriers and the (S - 1) / S of the FP32
 * tile through distributed shared memory at 32 bytes a clock. Checked
 * against the H200's times (2026-11-29-h200-08-v2: of the 9 dense NT rows at
 * K 7168 it split 1x576x7168 and 128x576x7168 8 ways, 1.50x and 1.20x the
 * unsplit kernel, and left the other 7): the default since (QGEMM_BF16_SPLITK
 * unset = auto; bench/bf16_splitk.sh times it against off).
 */
static double stream_time(const qg_bf16_problem *p, const qg_bf16_plan *pl) {
    const double lat = 2800.0;
    const int k_blocks = ceil_div(p->k > 0 ? p->k : 64, BF16_BLOCK_K);
    const int steps = ceil_div(k_blocks, pl->merge);
    const int s = pl->splitk > 1 ? pl->splitk : 1;
    const double rank_k = (double)ceil_div(steps, s) * pl->merge * BF16_BLOCK_K;
    const int a_rows = qg__bf16_a_mn_major(p->layout) ? pl->block_m : pl->a_box_rows;
    const double row_bytes = (double)(a_rows + pl->block_n) * 2.0; /* per K element */
    const double in_flight = (double)pl->num_stages * pl->merge * BF16_BLOCK_K * row_bytes;
    double rate = in_flight / lat;
    if (rate > 46.0) rate = 46.0;
    double t = lat + rank_k * row_bytes / rate;
    const double mma = lat + rank_k * pl->block_m * pl->block_n / 2048.0;
    if (mma > t) t = mma;
    const long long ctas =
        (long long)ceil_div(p->m, pl->block_m) * ceil_div(p->n, pl->block_n) * s;
    t *= (double)((ctas + pl->grid - 1) / pl->grid);
    const double hbm = ((double)p->n + p->m) * (p->k > 0 ? p->k : 64) * 2.0 / 2600.0;
    if (hbm > t) t = hbm;
    if (s > 1) t += 1500.0 + (double)(s - 1) / s * pl->block_m * pl->block_n * 4.0 / 32.0;
    return t;
}

/* QGEMM_BF16_SPLITK=auto: dense NT, a grid of few tiles (<= 0.6 of the SMs, as
 * merged stages' auto) in one wave, K of >= 16 blocks: the split and tile of
 * least stream_time among the splits whose clusters fit one resident wave,
 * taken when it is below 0.85 of the unsplit plan's (ties: the smaller
 * split). */
static void auto_split(const qg_bf16_problem *p, qg_bf16_plan *best) {
    /* (NT only: the rows measured; a forced split takes every layout) */
    if (p->kind != QG_BF16_DENSE || p->layout != QG_BF16_NT || best->multicast ||
        p->k < 16 * BF16_BLOCK_K)
        return;
    const long long tiles = (long long)ceil_div(p->m, best->block_m) * ceil_div(p->n, best->block_n);
    if (tiles * 5 > 3ll * p->num_sms) return;
    const double base = stream_time(p, best);
    qg_bf16_plan chosen;
    memset(&chosen, 0, sizeof chosen);
    double chosen_t = 0.0;
    int found = 0;
    for (int s = 2; s <= 8; s *= 2)
        for (int bm = 64; bm <= 256; bm *= 2)
            for (int bn = 16; bn <= 256; bn += 16) {
                if (bm > 64 && p->m <= bm / 2) continue; /* as select_unmerged */
                qg_bf16_plan pl;
                if (qg__bf16_complete_split(p, bm, bn, 0, s, &pl) != 0) continue;
                /* one wave of the clusters that can be resident: GPCs host
                 * fewer clusters than SMs / S (cuOccupancyMaxActiveClusters
                 * gave 30 clusters of 4 on the H200, src/indexer_plan.c;
                 * src/launch.c lowers the grid to them) */
                const long long ctas = (long long)ceil_div(p->m, bm) * ceil_div(p->n, bn) * s;
                const int resident = (int)(p->num_sms * (s == 2 ? 0.96 : 0.9)) / s * s;
                if (ctas > resident) continue;
                const double t = stream_time(p, &pl);
                if (!found || t < chosen_t * 0.99) {
                    chosen = pl;
                    chosen_t = t;
                    found = 1;
                }
            }
    if (found && chosen_t < 0.85 * base) {
        chosen.est_cost = best->est_cost;
        *best = chosen;
    }
}

/* The tile is chosen as without merged stages (QGEMM_BF16_MERGE changes the
 * stages of the chosen tile, never which tile: the stage-count tie-break
 * would otherwise see the merged, fewer stages), then completed with them. */
int qg__bf16_select(const qg_bf16_problem *p, qg_bf16_plan *out) {
    if (!problem_ok(p)) return -1;
    qg_bf16_problem q = *p;
    q.merge = 0;
    q.kgrouped = p->kgrouped & 3; /* (the tile as without d2's stages) */
    qg_bf16_plan best;
    if (select_unmerged(&q, &best) != 0) return -1;
    /* QGEMM_BF16_KGROUPED=mc (or dg at <= 4 groups, DeepGEMM's rule): the
     * k-grouped tile chosen as without it, with B shared by pairs of m-blocks
     * where that is legal (an even m-block count); only the walk otherwise */
    if (p->kind == QG_BF16_K_GROUPED &&
        (kg_walk(p) == 2 || (kg_walk(p) == 3 && p->num_groups <= 4))) {
        qg_bf16_plan pl;
        if (qg__bf16_complete(&q, best.block_m, best.block_n, 2, &pl) == 0) {
            pl.est_cost = best.est_cost;
            best = pl;
        }
    }
    /* d2: the same tile and multicast, the stages the halved output tile frees */
    if (kg_d2(p)) {
        qg_bf16_plan pl;
        if (qg__bf16_complete(p, best.block_m, best.block_n, best.multicast, &pl) == 0) {
            pl.est_cost = best.est_cost;
            best = pl;
        }
    }
    if (p->merge) {
        qg_bf16_plan pl;
        if (qg__bf16_complete(p, best.block_m, best.block_n, best.multicast, &pl) == 0) {
            pl.est_cost = best.est_cost;
            best = pl;
        }
    }
    /* split-K (QGEMM_BF16_SPLITK): auto, or the chosen tile's forced split */
    if (p->splitk < 0) auto_split(p, &best);
    else if (p->splitk > 0) qg__bf16_force_split(p, &best);
    *out = best;
    return 0;
}

int qg__bf16_kernel_source(char *buf, size_t cap, const qg_bf16_problem *p, const qg_bf16_plan *pl) {
    static const char *layout_names[] = {"NT", "NN", "TN", "TT"};
    static const char *kind_names[] = {"dense", "contiguous", "masked", "psum", "k-grouped",
                                       "batched", "batch sums", "batch sum"};
    if (!buf || !p || !pl || (unsigned)p->layout > QG_BF16_TT || (unsigned)p->kind > QG_BF16_BATCH_SUM)
        return -1;
    const int reduce = p->kind == QG_BF16_BATCH_SUM;
    const int acc = pl->block_n / 2;
    /* k-grouped: K and G arrive at run time (qg_bf16_kgroups) */
    const int k = p->kind == QG_BF16_K_GROUPED ? 64 : p->k;
    const int groups = p->kind == QG_BF16_K_GROUPED ? 1 : p->num_groups;
    size_t n = (size_t)snprintf(
        buf, cap,
        "// qgemm bf16 kernel: %s %s, N %d, K %d, groups %d, D %s%s, block %dx%d, %d stages, "
        "multicast %d\n"
        "#define QG_KIND %d\n#define QG_A_MN_MAJOR %d\n#define QG_B_MN_MAJOR %d\n"
        "#define QG_D_F32 %d\n#define QG_WITH_C %d\n"
        "#define QG_SHAPE_N %d\n#define QG_SHAPE_K %d\n#define QG_NUM_GROUPS %d\n"
        "#define QG_BLOCK_M %d\n#define QG_BLOCK_N %d\n#define QG_NUM_STAGES %d\n"
        "#define QG_MULTICAST %d\n#define QG_CLUSTER %d\n#define QG_SWIZZLE_GROUP %d\n"
        "#define QG_STORE_COLS %d\n#define QG_SMEM_BYTES %d\n"
        "#define QG_PRODUCER_REGS %d\n#define QG_MATH_REGS %d\n"
        "#define QG_WGMMA_N %d\n#define QG_A_BOX_ROWS %d\n"
        "#define QG_WGMMA_OP_DESC_A %d\n#define QG_WGMMA_OP_DESC_B %d\n"
        "#define QG_WGMMA_OP_SCALE_D %d\n#define QG_WGMMA_OP_DESC_HI %d\n"
        "#define QG_WGMMA_ACC_LIST \"{",
        layout_names[p->layout], kind_names[p->kind], p->n, k, groups, p->d_f32 ? "fp32" : "bf16",
        p->with_c ? " += C" : "", pl->block_m, pl->block_n, pl->num_stages, pl->multicast,
        reduce ? (int)QG_BF16_BATCH_SUMS : (int)p->kind, qg__bf16_a_mn_major(p->layout), qg__bf16_b_mn_major(p->layout), p->d_f32 ? 1 : 0,
        p->with_c ? 1 : 0, p->n, k, groups, pl->block_m, pl->block_n, pl->num_stages, pl->multicast,
        pl->cluster, pl->swizzle_group, pl->store_cols, pl->smem_bytes, pl->producer_regs,
        pl->math_regs, pl->block_n,
        qg__bf16_a_mn_major(p->layout) || pl->multicast == 1 ? pl->block_m : pl->a_box_rows, acc,
        acc + 1, acc + 2, acc + 3);
    for (int i = 0; i < acc && n < cap; ++i)
        n += (size_t)snprintf(buf + n, cap - n, "%s%%%d", i ? ", " : "", i);
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "}\"\n#define QG_WGMMA_ACC_ARGS(d)");
    for (int i = 0; i < acc && n < cap; ++i)
        n += (size_t)snprintf(buf + n, cap - n, "%s \"+f\"(d[%d])", i ? "," : "", i);
    if (n < cap && is_sum_kind(p->kind)) /* (only here: other kinds' text unchanged) */
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_SUM_BATCHES %d\n#define QG_SPLIT_BATCHES %d",
                              p->sum_batches, split_batches(p));
    /* the reduced batch sum: the tree, and DeepGEMM's kernel name (kineto
     * filters and profiling scripts look for 'bmn_bnk_mn_gemm_impl') */
    if (n < cap && reduce)
        n += (size_t)snprintf(buf + n, cap - n,
                              "\n#define QG_SUM_REDUCE 1\n#define QG_SUM_RADIX %d"
                              "\n#define QG_BF16_ENTRY qg_bf16_bmn_bnk_mn_gemm_impl",
                              p->sum_radix ? p->sum_radix : 2);
    /* v1 (QGEMM_BF16_PLAN=v1): the masked and psum kernels as they were,
     * every math warpgroup running every tile (only here: v2's text is
     * unchanged by the switch) */
    if (n < cap && p->legacy == 1 && (p->kind == QG_BF16_MASKED || p->kind == QG_BF16_PSUM))
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_WG_SKIP 0");
    if (n < cap && reduce && p->sum_atomic) /* (only here: the tree's text unchanged) */
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_SUM_ATOMIC 1");
    /* v2 (QGEMM_BMK_VARIANT): the bf16 D's last arrival loads its sums at once
     * (only here: v1's text unchanged) */
    if (n < cap && reduce && p->sum_atomic && p->sum_variant >= 1 && !p->d_f32)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_SUM_EPI_BATCHED 1");
    /* v3: and 16-byte reductions, half as many */
    if (n < cap && reduce && p->sum_atomic && p->sum_variant >= 2)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_SUM_RED_V4 1");
    /* v5 / v6: and the reductions' target prefetched into L2 (only here: v3's text unchanged) */
    if (n < cap && reduce && p->sum_atomic && p->sum_variant >= 3)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_SUM_PREFETCH 1");
    /* merged stages (QGEMM_BF16_MERGE; only here: unmerged text unchanged) */
    if (n < cap && pl->merge > 1)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_BF16_MERGE %d", pl->merge);
    /* split-K (QGEMM_BF16_SPLITK; only here: unsplit text unchanged) */
    if (n < cap && pl->splitk > 1)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_BF16_SPLITK %d", pl->splitk);
    /* the k-grouped walk (QGEMM_BF16_KGROUPED; only here: the n walk's text as before) */
    if (n < cap && pl->raster_m)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_RASTER_M 1");
    if (n < cap && pl->d_half)
        n += (size_t)snprintf(buf + n, cap - n, "\n#define QG_D_HALF 1");
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "\n#include \"qg_bf16_gemm.cuh\"\n");
    if (n >= cap) return -1;
    return (int)n;
}

const char *qg__bf16_convert_source(void) {
    return "// qgemm bf16 batch sum: FP32 workspace -> bf16 D\n"
           "#define QG_SUM_CONVERT 1\n#include \"qg_bf16_gemm.cuh\"\n";
}
