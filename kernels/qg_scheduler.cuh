/*
 * qg_scheduler.cuh -- persistent tile scheduler.
 *
 * Every CTA of the persistent grid walks a linear tile index
 *     tile = (cluster_id + iter * num_clusters) * QG_CLUSTER + cluster_rank
 * so the two CTAs of a cluster always receive neighbouring tiles (split-K:
 * tile = cluster_id + iter * num_clusters, the same tile for both). The linear
 * index is mapped to (group, m_block, n_block) in L2-friendly swizzled
 * groups of QG_SWIZZLE_GROUP blocks:
 *   - multicast none or A: groups of n-blocks; inside a group, consecutive
 *     tiles share the m-block (so a cluster pair shares its A tile);
 *   - multicast B: groups of m-blocks; consecutive tiles share the n-block.
 * The host guarantees that a pair never straddles a group boundary (group
 * sizes and block counts are even when multicast is on), except under
 * QG_PAIR_TILES (below).
 *
 * QG_PAIR_TILES (the BF16 and FP8 kernels' B multicast in the contiguous,
 * masked and psum kinds; 0 by default, so no other variant's text changes):
 * pairs along
 * M whose two m-blocks come from device data (masked_m, group ends,
 * m_indices), so neither the host nor the kernel can align them. The two
 * CTAs of a cluster must still run the same number of tiles of the same
 * number of K blocks (each CTA's producer waits for both CTAs' releases of
 * a stage, and a multicast writes the same stage of both), so:
 *   - every tile slot pairs with its neighbour idx ^ 1 (cluster_rank 0 / 1);
 *   - masked / psum: each group's slots are rounded up to an even count, so
 *     a pair never straddles two groups; the extra slot (odd m-blocks x odd
 *     n-blocks) is a dummy tile;
 *   - contiguous: the slots are rounded up to even; a slot with no work (an
 *     all-padding segment, or the extra slot) is skipped when its
 *     neighbour's has none either (both CTAs skip it), else it is a dummy;
 *   - a dummy tile (rows 0) loads nothing and stores nothing: its producer
 *     arrives on each stage without bytes and its math warps wait for and
 *     release every stage, so the pair stays in step;
 *   - t.b_multicast: both slots of the pair are real tiles of the same group
 *     and n-block, so each CTA loads half of B into both; otherwise each
 *     loads its whole B tile itself. Both CTAs derive it from the same data
 *     (the pair's two slots), so they always agree, and the transaction
 *     bytes a stage expects are the same either way.
 *
 * Modes (QG_KIND):
 *   0 dense       one group; M = shape_m rows.
 *   1 contiguous  rows of all experts concatenated; m_indices[row] names the
 *                 expert, -1 = padding. Segments are 128-row aligned; the
 *                 expert of an m-block is that of the first row of its
 *                 128-row segment (no other row is read): a segment whose
 *                 first row is -1, or any value outside [0, QG_NUM_GROUPS)
 *                 (device data the host never saw: issue 27), is all padding
 *                 and is skipped (both CTAs of a pair share the m-block, so
 *                 they skip together), so no expert's B or SFB past the last
 *                 is ever addressed; every other block is stored whole, its
 *                 padding rows included (as DeepGEMM: they get A_row B_g^T,
 *                 zero for zero rows of A), so which rows are written does
 *                 not depend on block_m.
 *   2 masked      groups of shape_m (= M_max) rows; group g has masked_m[g]
 *                 valid rows, clamped to [0, M_max]; only m-blocks holding
 *                 valid rows are tiles.
 *   3 psum        contiguous rows, group_ends[g] (the masked_m argument) the
 *                 end row of group g. Group g starts where group g - 1
 *                 really ended, rounded up to 128 (0 for g = 0), and ends at
 *                 group_ends[g] clamped to [its start, shape_m]: for valid
 *                 ends (non-decreasing, each at or past its group's start)
 *                 that is DeepGEMM's layout, and for any ends the groups
 *                 never overlap (a decreasing end makes an empty group; it
 *                 does not pull the next group's start back over rows a
 *                 group before it wrote). Rows outside the groups are neither
 *                 read into D nor written. Walked like masked, the cursor
 *                 carrying the group's start; m_begin is a row of the whole
 *                 [shape_m] array.
 *   4 k-grouped   the weight gradient of experts whose groups split K: every
 *                 group of the launch (run_groups of them, the kernel's
 *                 qg_kgroups) has the same M x N tiles; the linear index runs
 *                 group after group. t.group is the launch's group slot (its
 *                 tensor maps, K blocks and D slice are the kernel's).
 *   5 batched     (the BF16 kernel's, and the FP8 kernel's since 0.6.0) G =
 *                 run_groups independent GEMMs of shape_m x N tiles each,
 *                 walked as the k-grouped kind: the linear index runs batch
 *                 after batch.
 *   6 batch sums  (the BF16 kernel's) as 5, a group being a split of the
 *                 batches (its D slice sums them).
 * The producer's TMA lane and its SFB warp run identical schedulers, so they
 * agree on the sequence of tiles without communicating; the SFB warp hands
 * each tile to the math warps (qg_tile_pack) with the tile's scales.
 */
#ifndef QG_SCHEDULER_CUH
#define QG_SCHEDULER_CUH

/* (FP8 D split over a cluster, QG_FP8_SPLIT of the FP8 kernel: N counted in
 * whole 128-column groups, so that a cluster's tiles are one group's) */
/* (the split's CTAs of one K rank in a split-K cluster: 1 where none) */
#if defined(QG_FP8_SPLIT)
#define QG_SCHED_FP8_SPLIT QG_FP8_SPLIT
#else
#define QG_SCHED_FP8_SPLIT 1
#endif
#if defined(QG_FP8_SPLIT) && QG_FP8_SPLIT > 1
#define QG_NUM_N_BLOCKS ((QG_SHAPE_N + 127) / 128 * QG_FP8_SPLIT)
#else
#define QG_NUM_N_BLOCKS ((QG_SHAPE_N + QG_BLOCK_N - 1) / QG_BLOCK_N)
#endif
#ifndef QG_PAIR_TILES
#define QG_PAIR_TILES 0
#endif
/* 1: tiles walked in groups of QG_SWIZZLE_GROUP m-blocks, as B multicast walks
 * them, without multicast (the BF16 k-grouped kind under QGEMM_BF16_KGROUPED:
 * DeepGEMM's order); 0: groups of n-blocks */
#ifndef QG_RASTER_M
#define QG_RASTER_M 0
#endif

struct qg_tile {
    int group;     /* expert / group index (0 for dense) */
    int m_block;   /* block of rows within the group (contiguous: global) */
    int n_block;
    int m_begin;   /* first row of the tile within the group's rows */
    int rows;      /* rows of the tile that exist and may be written */
    bool tma_store; /* every in-bounds row may be written: the TMA store can be used */
#if QG_PAIR_TILES
    bool b_multicast; /* the pair's two tiles share group and n-block: B half each */
#endif
};

struct qg_scheduler {
    int shape_m;
    const int *m_indices;
    const int *masked_m;
    int iter;
    /* masked mode: cursor over groups (tile indices only grow). The group's
     * row count is read again from masked_m (an L1 hit, once per tile) rather
     * than kept between tiles (written when the math warps ran the scheduler
     * and had no register to spare; the producer warps' 40 still have few). */
    int cur_group;
    int group_first_tile;
    int group_start; /* psum: first row of cur_group in the [shape_m] array */
    int run_groups;  /* k-grouped: the groups of this launch */
};

/* The tile as the SFB warp hands it to the math warps through a 16-byte
 * shared slot (the math warps run no scheduler: the grouped walkers' live
 * registers made the large tiles spill there): x the group (-1: no more
 * tiles), y m_begin, z n_block, w rows, bit 30 set when the TMA store may be
 * used. m_block is the producer's alone. */
#define QG_TILE_TMA_STORE (1 << 30)
QG_DEVICE int4 qg_tile_pack(const qg_tile &t) {
    return make_int4(t.group, t.m_begin, t.n_block, t.rows | (t.tma_store ? QG_TILE_TMA_STORE : 0));
}
QG_DEVICE int4 qg_tile_end(void) { return make_int4(-1, 0, 0, 0); }
/* The rows field of a packed tile. */
QG_DEVICE int qg_tile_rows(int4 v) { return v.w & ~QG_TILE_TMA_STORE; }
QG_DEVICE void qg_tile_unpack(int4 v, qg_tile &t) {
    t.group = v.x;
    t.m_begin = v.y;
    t.n_block = v.z;
    t.m_block = 0; /* not carried */
    t.rows = qg_tile_rows(v);
    t.tma_store = (v.w & QG_TILE_TMA_STORE) != 0;
}

/* Valid rows of group g, clamped to [0, M_max]: masked_m is device data the
 * host never saw, so a bad value must not make the kernel write past a group. */
QG_DEVICE int qg_masked_rows(const qg_scheduler &s, int g) {
    return min(max(__ldg(s.masked_m + g), 0), s.shape_m);
}

#if QG_KIND == 3
/* psum: the row count of the cursor's group, which starts at s.group_start:
 * its end clamped to [group_start, shape_m] (the ends are device data the
 * host never saw), so a group never reaches back over an earlier one. */
QG_DEVICE int qg_psum_rows(const qg_scheduler &s) {
    return min(max(__ldg(s.masked_m + s.cur_group), s.group_start), s.shape_m) - s.group_start;
}
#endif

QG_DEVICE void qg_scheduler_init(qg_scheduler &s, int shape_m, const int *m_indices,
                                 const int *masked_m, int run_groups) {
    s.shape_m = shape_m;
    s.run_groups = run_groups;
    s.m_indices = m_indices;
    s.masked_m = masked_m;
    s.iter = 0;
    s.cur_group = 0;
    s.group_first_tile = 0;
    s.group_start = 0;
}

/* Swizzle a linear index inside one group of num_m_blocks x QG_NUM_N_BLOCKS tiles. */
QG_DEVICE void qg_swizzle(int idx, int num_m_blocks, int &m_block, int &n_block) {
#if QG_MULTICAST == 2 || QG_RASTER_M
    const int per_group = QG_SWIZZLE_GROUP * QG_NUM_N_BLOCKS;
    const int first_m = (idx / per_group) * QG_SWIZZLE_GROUP;
    const int in_group = idx % per_group;
    const int m_in_group = min(QG_SWIZZLE_GROUP, num_m_blocks - first_m);
    m_block = first_m + in_group % m_in_group;
    n_block = in_group / m_in_group;
#else
    const int per_group = QG_SWIZZLE_GROUP * num_m_blocks;
    const int first_n = (idx / per_group) * QG_SWIZZLE_GROUP;
    const int in_group = idx % per_group;
    const int n_in_group = min(QG_SWIZZLE_GROUP, QG_NUM_N_BLOCKS - first_n);
    m_block = in_group / n_in_group;
    n_block = first_n + in_group % n_in_group;
#endif
}

/* Next tile of this CTA; false when the CTA has no more work. Run by the
 * producer's TMA lane and the SFB warp. */
QG_DEVICE bool qg_scheduler_next(qg_scheduler &s, qg_tile &t) {
    const int num_clusters = gridDim.x / QG_CLUSTER;
    const int cluster_id = blockIdx.x / QG_CLUSTER;
    const int rank = blockIdx.x % QG_CLUSTER;
    for (;;) {
#if QG_SPLIT_K > 1
        /* the CTAs of a split-K cluster share its tile; with an FP8 D split
         * (QG_FP8_SPLIT > 1) each K rank's QG_FP8_SPLIT CTAs (rank % split)
         * hold one scale group's tiles */
        const int idx = (cluster_id + s.iter * num_clusters) * QG_SCHED_FP8_SPLIT +
                        rank % QG_SCHED_FP8_SPLIT;
#else
        const int idx = (cluster_id + s.iter * num_clusters) * QG_CLUSTER + rank;
#endif
        s.iter++;
#if QG_KIND == 2 || QG_KIND == 3
        /* Walk the group cursor forward until idx falls inside it. */
        int group_rows, m_blocks;
        for (;;) {
#if QG_KIND == 3
            group_rows = qg_psum_rows(s);
#else
            group_rows = qg_masked_rows(s, s.cur_group);
#endif
            m_blocks = (group_rows + QG_BLOCK_M - 1) / QG_BLOCK_M;
#if QG_PAIR_TILES
            /* an even number of slots: a pair never straddles two groups */
            if (idx < s.group_first_tile + ((m_blocks * QG_NUM_N_BLOCKS + 1) & ~1)) break;
            s.group_first_tile += (m_blocks * QG_NUM_N_BLOCKS + 1) & ~1;
#else
            if (idx < s.group_first_tile + m_blocks * QG_NUM_N_BLOCKS) break;
            s.group_first_tile += m_blocks * QG_NUM_N_BLOCKS;
#endif
#if QG_KIND == 3
            /* the next group starts where this one really ended, rounded up */
            s.group_start = min((s.group_start + group_rows + 127) / 128 * 128, s.shape_m);
#endif
            if (++s.cur_group >= QG_NUM_GROUPS) return false;
        }
        t.group = s.cur_group;
#if QG_PAIR_TILES
        {
            const int local = idx - s.group_first_tile, group_tiles = m_blocks * QG_NUM_N_BLOCKS;
            if (local >= group_tiles) { /* the group's extra slot: a dummy tile */
                t.m_block = t.n_block = 0;
                t.m_begin = 0;
                t.rows = 0;
                t.tma_store = false;
                t.b_multicast = false;
#if QG_KIND == 3
                t.m_begin = s.group_start;
#endif
                return true;
            }
            qg_swizzle(local, m_blocks, t.m_block, t.n_block);
            /* the group's first slot is even: the peer's slot is local ^ 1 */
            int peer_m, peer_n = -1;
            if ((local ^ 1) < group_tiles) qg_swizzle(local ^ 1, m_blocks, peer_m, peer_n);
            t.b_multicast = peer_n == t.n_block;
        }
#else
        qg_swizzle(idx - s.group_first_tile, m_blocks, t.m_block, t.n_block);
#endif
        t.m_begin = t.m_block * QG_BLOCK_M;
        t.rows = min(QG_BLOCK_M, group_rows - t.m_begin);
        t.tma_store = t.rows == QG_BLOCK_M;
#if QG_KIND == 3
        t.m_begin += s.group_start; /* a row of the whole array */
#endif
        return true;
#elif QG_KIND == 4 || QG_KIND == 5 || QG_KIND == 6
        const int num_m_blocks = (s.shape_m + QG_BLOCK_M - 1) / QG_BLOCK_M;
        const int per_group = num_m_blocks * QG_NUM_N_BLOCKS;
        if (idx >= per_group * s.run_groups) return false;
        t.group = idx / per_group;
        qg_swizzle(idx - t.group * per_group, num_m_blocks, t.m_block, t.n_block);
        t.m_begin = t.m_block * QG_BLOCK_M;
        t.rows = min(QG_BLOCK_M, s.shape_m - t.m_begin);
        t.tma_store = true; /* the rank-3 map of D clips rows past M in each group */
        return true;
#elif QG_KIND == 1 && QG_PAIR_TILES
        const int num_m_blocks = (s.shape_m + QG_BLOCK_M - 1) / QG_BLOCK_M;
        const int total = num_m_blocks * QG_NUM_N_BLOCKS;
        if (idx >= ((total + 1) & ~1)) return false;
        /* this slot's expert and its pair neighbour's (-1: no work: padding,
         * an expert out of range, or the extra slot) */
        int g = -1, peer_g = -1, peer_n = -1;
        if (idx < total) {
            qg_swizzle(idx, num_m_blocks, t.m_block, t.n_block);
            g = __ldg(s.m_indices + ((t.m_block * QG_BLOCK_M) & ~127));
        }
        if ((idx ^ 1) < total) {
            int peer_m;
            qg_swizzle(idx ^ 1, num_m_blocks, peer_m, peer_n);
            peer_g = __ldg(s.m_indices + ((peer_m * QG_BLOCK_M) & ~127));
        }
        const bool mine = (unsigned)g < (unsigned)QG_NUM_GROUPS;
        const bool peers = (unsigned)peer_g < (unsigned)QG_NUM_GROUPS;
        if (!mine && !peers) continue; /* the pair skips the slot together */
        if (!mine) {                   /* a dummy tile beside the peer's */
            t.group = 0;
            t.m_block = t.n_block = 0;
            t.m_begin = 0;
            t.rows = 0;
            t.tma_store = false;
            t.b_multicast = false;
            return true;
        }
        t.group = g;
        t.m_begin = t.m_block * QG_BLOCK_M;
        t.rows = min(QG_BLOCK_M, s.shape_m - t.m_begin);
        t.tma_store = true; /* stored whole; TMA clips rows past M */
        t.b_multicast = peers && peer_g == g && peer_n == t.n_block;
        return true;
#else
        const int num_m_blocks = (s.shape_m + QG_BLOCK_M - 1) / QG_BLOCK_M;
        if (idx >= num_m_blocks * QG_NUM_N_BLOCKS) return false;
        qg_swizzle(idx, num_m_blocks, t.m_block, t.n_block);
        t.m_begin = t.m_block * QG_BLOCK_M;
        t.rows = min(QG_BLOCK_M, s.shape_m - t.m_begin);
#if QG_KIND == 1
        t.group = __ldg(s.m_indices + (t.m_begin & ~127)); /* the 128-row segment's expert */
        /* -1, or no expert at all: an all-padding segment, no work */
        if ((unsigned)t.group >= (unsigned)QG_NUM_GROUPS) continue;
        t.tma_store = true;        /* stored whole; TMA clips rows past M */
#else
        t.group = 0;
        t.tma_store = true; /* TMA clips rows past M */
#endif
        return true;
#endif
    }
}

#endif /* QG_SCHEDULER_CUH */
