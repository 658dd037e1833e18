/*
 * indexer_plan.c -- plans and JIT sources of the indexer / HC kernels
 * (indexer_plan.h). Pure functions of the problem and the SM count.
 */
#include "indexer_plan.h"

#include <stdio.h>

static int fail(const char **why, const char *msg) {
    if (why) *why = msg;
    return -1;
}

/* ---- tf32_hc_prenorm_gemm ----------------------------------------------- */

static size_t hc_smem(int n, int wgs, int stages, int cluster, int mode) {
    /* A, B's two fp32 boxes, and in mode 2 the bf16 hi / lo tile of B */
    const size_t stage = 64 * 64 * 2 * (size_t)wgs + 2 * (size_t)n * 128 +
                         (mode == QG_HC_MODE_SPLIT ? 2 * (size_t)n * 128 : 0);
    const size_t slots = (size_t)(cluster - 1) * (size_t)(n / 2 + 2) * 128 * (size_t)wgs * 4;
    const size_t bars = mode == QG_HC_MODE_ROUNDER || mode == QG_HC_MODE_SPLIT ? 3 : 2;
    return 1024 + (size_t)stages * stage + slots + (size_t)stages * bars * 8;
}

/* CTAs that clusters of c CTAs can hold at once on num_sms SMs. A cluster
 * lives in one GPC; Hopper's GPCs hold 14 to 18 SMs, so clusters of 4 and 8
 * leave some out: cuOccupancyMaxActiveClusters gave 30 clusters of 4 on the
 * H200's 132 SMs (ncu, 2026-11-28-h200-22-probe: a 128-CTA grid of clusters
 * of 4 ran 8 CTAs as a second wave, 41 us against DeepGEMM's 31). Clusters
 * of 8 assumed 14 (112 CTAs). Pairs fill every TPC. */
static long hc_cluster_room(int c, int num_sms) {
    if (c <= 2) return num_sms;
    if (c == 4) return (long)num_sms * 30 / 33 / 4 * 4;
    return (long)num_sms * 28 / 33 / 8 * 8;
}

/* Clusters for `base` (m-block, split) pairs of per_split K blocks. */
static int hc_cluster(long base, int per_split, int num_sms, int fit, int kmin) {
    int cluster = 1;
    while (cluster < 8 && per_split / (cluster * 2) >= kmin &&
           base * cluster * 2 <= (fit ? hc_cluster_room(cluster * 2, num_sms) : num_sms))
        cluster *= 2;
    return cluster;
}

/* force_wgs: 0 = choose; 1 or 2 = that many math warpgroups. mode: < 0 =
 * QG_HC_MODE_DEFAULT. cvt_warps: 0 = 1 converter warp where the mode has
 * them (measurements and A/B runs choose others) */
int qg__hc_plan_variant(int m, int n, int k, int num_splits, int num_sms, int force_wgs, int mode,
                        int cvt_warps, qg_hc_plan *out, const char **why) {
    const qg_hc_opts o = {.accs = 0, .fit = 0, .wgs = force_wgs, .kmin = 0, .cvt = 0};
    return qg__hc_plan_opts(m, n, k, num_splits, num_sms, mode, cvt_warps, &o, out, why);
}

int qg__hc_plan_opts(int m, int n, int k, int num_splits, int num_sms, int mode, int cvt_warps,
                     const qg_hc_opts *opts, qg_hc_plan *out, const char **why) {
    static const qg_hc_opts none = {0, 0, 0, 0, 0};
    if (!opts) opts = &none;
    const int force_wgs = opts->wgs;
    if (!out) return fail(why, "no plan to fill");
    if (m < 0) return fail(why, "m must be >= 0");
    if (n <= 0 || n > 32 || n % 8) return fail(why, "n must be 8, 16, 24 or 32");
    if (k <= 0 || k % 64) return fail(why, "k must be a positive multiple of 64");
    if (num_splits < 1) return fail(why, "num_splits must be >= 1");
    if (num_sms < 1) return fail(why, "num_sms must be >= 1");
    if (force_wgs < 0 || force_wgs > 2) return fail(why, "math warpgroups must be 0 (choose), 1 or 2");
    if (mode < 0) mode = QG_HC_MODE_DEFAULT;
    if (mode > QG_HC_MODE_TRUNC) return fail(why, "mode must be 0 (inplace), 1 (rounder), 2 (split) or 3 (trunc)");
    const int has_cvt = mode == QG_HC_MODE_ROUNDER || mode == QG_HC_MODE_SPLIT;
    if (cvt_warps < 0 || cvt_warps > 4) return fail(why, "converter warps must be 0 (default) to 4");
    if (opts->cvt != 0 && (opts->cvt < 2 || opts->cvt > 4))
        return fail(why, "the converter-warp option must be 0 (the mode's), 2, 3 or 4");
    cvt_warps = has_cvt ? (cvt_warps ? cvt_warps : 1) : 0;
    int accs = opts->accs ? opts->accs : 1;
    if (accs != 1 && accs != 2 && accs != 4 && accs != 8)
        return fail(why, "accumulator sets must be 1, 2, 4 or 8");
    if (accs > 1 && mode == QG_HC_MODE_SPLIT)
        return fail(why, "several accumulator sets need a TF32 mode (inplace, rounder or trunc), not split");
    const int nkb = k / 64, per_split = nkb / num_splits;
    const int kmin = opts->kmin ? opts->kmin : 8;
    if (kmin < 1 || kmin > 8) return fail(why, "the fewest K blocks a clustered CTA keeps must be 1 to 8");
    /* Two math warpgroups (128 rows a CTA) once M can still fill the SMs
     * through the K clusters: every CTA reads B (N x 64 fp32 a K block) from
     * L2, so 128 rows a stage halve that traffic beside A's stream. With
     * fit, one warpgroup where it puts more CTAs on the SMs in one wave
     * (4096 rows unsplit: 64 CTAs of 128 rows in pairs against 128 of 64). */
    int wgs = force_wgs ? force_wgs : m >= 1024 ? 2 : 1;
    if (!force_wgs && opts->fit && wgs == 2) {
        const long b2 = (long)((m + 127) / 128) * num_splits, b1 = (long)((m + 63) / 64) * num_splits;
        const long c2 = b2 * hc_cluster(b2, per_split, num_sms, 1, kmin);
        const long c1 = b1 * hc_cluster(b1, per_split, num_sms, 1, kmin);
        if (c2 < num_sms && c1 <= num_sms && c1 > c2) wgs = 1;
    }
    /* 8 sets (96-128 registers beside the 64 of the A fragments) fit one
     * math warpgroup's threads only; two get 4 */
    if (accs == 8 && wgs == 2) accs = 4;
    /* cw2..cw4: B's TF32 rounding spread over more converter warps (the one
     * warp rounds N x 64 fp32 a K block alone: H200 2026-11-28, the same
     * plans without rounding (trunc) ran 1.2-1.4x faster at M 13 with 16
     * splits and at M 4096 / 8192 unsplit). Four only beside one math
     * warpgroup: 128 * 2 + 32 * 5 = 416 threads leave 152 registers. */
    if (has_cvt && opts->cvt) cvt_warps = opts->cvt == 4 && wgs == 2 ? 3 : opts->cvt;
    const int block_m = 64 * wgs;
    const int m_blocks = m > 0 ? (m + block_m - 1) / block_m : 1;
    const long base = (long)m_blocks * num_splits;
    /* Cluster: split each (m-block, split) along K over up to 8 CTAs while
     * the CTAs still fit one wave and each keeps >= 8 K blocks (the
     * reduction through rank 0 costs about one K block). */
    const int cluster = hc_cluster(base, per_split, num_sms, opts->fit, kmin);
    const long ctas = base * cluster;
    /* Stages: one wave -> as many as fit (bytes in flight per SM); several
     * waves -> two CTAs per SM, so one's prologue and tail hide behind the
     * other's stream. Never more than a CTA's K blocks. */
    const int per_cta = (per_split + cluster - 1) / cluster;
    /* With fit, the two CTAs an SM are made real: two math warpgroups (320+
     * threads at ~126 registers) never fit twice in 64K registers, so such a
     * CTA takes the whole shared memory instead of half of it and idling the
     * rest; one warpgroup asks ptxas for two CTAs' registers (min_ctas 2)
     * where its sets leave room, else takes the whole shared memory too. */
    int min_ctas = 1;
    size_t budget = ctas <= num_sms ? QG_IDX_SMEM_MAX : QG_IDX_SMEM_MAX / 2 - 1024;
    if (opts->fit && ctas > num_sms) {
        /* registers of two CTAs an SM against an estimate of the kernel's:
         * 64 A-fragment words, the sets, ~46 more (ptxas, 2026-11-28: acc4
         * N 32 154, N 24 140; acc1 ~126; capped at 144, acc4 N 24 had its
         * wgmmas serialized) */
        const int threads = 128 * wgs + 32 * (1 + cvt_warps);
        const int regs_two = (65536 / (2 * threads)) & ~7;
        if (wgs == 1 && 64 + accs * n / 2 + 46 <= regs_two)
            min_ctas = 2;
        else
            budget = QG_IDX_SMEM_MAX;
    }
    int stages = 16;
    if (stages > per_cta) stages = per_cta > 2 ? per_cta : 2;
    while (stages > 2 && hc_smem(n, wgs, stages, cluster, mode) > budget) --stages;
    if (hc_smem(n, wgs, stages, cluster, mode) > QG_IDX_SMEM_MAX) return fail(why, "shared memory");
    if (ctas > 0x7fffffffL) return fail(why, "grid too large");
    out->m = m;
    out->n = n;
    out->k = k;
    out->num_splits = num_splits;
    out->math_wgs = wgs;
    out->block_m = block_m;
    out->cluster = cluster;
    out->stages = stages;
    out->mode = mode;
    out->cvt_warps = cvt_warps;
    out->accs = accs;
    out->min_ctas = min_ctas;
    out->grid_x = (int)ctas;
    out->block_x = 128 * wgs + 32 * (1 + cvt_warps);
    out->smem_bytes = hc_smem(n, wgs, stages, cluster, mode);
    return 0;
}

static int hc_plan_with(int m, int n, int k, int num_splits, int num_sms, int force_wgs,
                        qg_hc_plan *out, const char **why) {
    return qg__hc_plan_variant(m, n, k, num_splits, num_sms, force_wgs, -1, 0, out, why);
}

int qg__hc_plan(int m, int n, int k, int num_splits, int num_sms, qg_hc_plan *out,
                const char **why) {
    return hc_plan_with(m, n, k, num_splits, num_sms, 0, out, why);
}

int qg__hc_source(char *buf, size_t cap, const qg_hc_plan *p) {
    /* QG_HC_ACCS only where it is not 1: the default kernels' sources (and
     * so their cache keys) stay as they were */
    char accs[96] = "";
    if (p->accs > 1 || p->min_ctas > 1)
        snprintf(accs, sizeof accs, "#define QG_HC_ACCS %d\n#define QG_HC_MIN_CTAS %d\n",
                 p->accs > 1 ? p->accs : 1, p->min_ctas > 1 ? p->min_ctas : 1);
    const int len = snprintf(buf, cap,
                             "// qgemm hc prenorm: N %d, K %d, splits %d, %d math wgs, cluster %d, "
                             "%d stages, mode %d, %d converter warps\n"
                             "#define QG_HC_N %d\n#define QG_HC_K %d\n#define QG_HC_SPLITS %d\n"
                             "#define QG_HC_MATH_WGS %d\n#define QG_HC_CLUSTER %d\n"
                             "#define QG_HC_STAGES %d\n#define QG_HC_MODE %d\n"
                             "#define QG_HC_CVT_WARPS %d\n#define QG_HC_SMEM_BYTES %zu\n"
                             "%s#include \"qg_hc_prenorm.cuh\"\n",
                             p->n, p->k, p->num_splits, p->math_wgs, p->cluster, p->stages, p->mode,
                             p->cvt_warps, p->n, p->k, p->num_splits, p->math_wgs, p->cluster,
                             p->stages, p->mode, p->cvt_warps, p->smem_bytes, accs);
    return len < 0 || (size_t)len >= cap ? -1 : len;
}

/* ---- fp8_mqa_logits ------------------------------------------------------ */

static size_t mqa_smem(int d, int math_wgs, int stages, int stage_w) {
    const size_t block_kv = 64 * (size_t)math_wgs;
    /* per stage: the key tile and two boxes of block_kv scales (the kernel's
     * QG_MQA_SMEM_SCALE: the first from a 16-byte aligned key); with
     * stage_w, per q stage 128 weights and 32 ints (QG_MQA_SMEM_QP) */
    return 1024 + 2 * 128 * (size_t)d + (size_t)stages * (block_kv * (size_t)d + 2 * block_kv * 4) +
           (stage_w ? 2 * (128 + 32) * 4 : 0) + (size_t)(4 + 2 * stages) * 8;
}

int qg__mqa_plan(int seq_len, int seq_len_kv, int heads, int head_dim, int compressed, int clean,
                 int logits_bf16, int num_sms, qg_mqa_plan *out, const char **why) {
    if (!out) return fail(why, "no plan to fill");
    if (seq_len < 0 || seq_len_kv < 0) return fail(why, "sequence lengths must be >= 0");
    if (heads != 32 && heads != 64) return fail(why, "heads must be 32 or 64");
    if (head_dim != 32 && head_dim != 64 && head_dim != 128)
        return fail(why, "head_dim must be 32, 64 or 128");
    if (compressed && clean) return fail(why, "compressed logits (max_seqlen_k > 0) are not cleaned");
    if (num_sms < 1) return fail(why, "num_sms must be >= 1");
    const int block_q = 128 / heads;
    const int q_blocks = (seq_len + block_q - 1) / block_q;
    out->seq_len = seq_len;
    out->seq_len_kv = seq_len_kv;
    out->heads = heads;
    out->head_dim = head_dim;
    out->compressed = compressed ? 1 : 0;
    out->clean = clean ? 1 : 0;
    out->logits_bf16 = logits_bf16 ? 1 : 0;
    out->block_q = block_q;
    out->grid_x = q_blocks < num_sms ? (q_blocks > 0 ? q_blocks : 1) : num_sms;
    /* The organisation's fields (warpgroups, stages, threads, shared memory)
     * are qg__mqa_plan_variant's, for the default (qg__mqa_default_variant) or
     * the one QGEMM_MQA_VARIANT names: PIPE, two math warpgroups of two
     * accumulator sets (the next key block's wgmma under the epilogue,
     * QG_MQA_PIPE; the default until 2026-11-29), LOCKSTEP2 (the 2026-11-28
     * path, one set), DEEP4 / DEEP4L (DeepGEMM's four math warpgroups at
     * setmaxnreg 32 / 112). */
    return qg__mqa_plan_variant(out, qg__mqa_default_variant()) == 0 ? 0 : fail(why, "default plan");
}

int qg__mqa_default_variant(void) {
    /* DEEP4 since 2026-11-29 (H200, the 24 rows of bench/peers_families.py beside
     * DeepGEMM: PIPE 1.013 -> 1.080 geomean, -08-v2; with the staged row offsets
     * and uniform descriptors 1.200, worst 1.085, against PIPE's 1.014, -09-v3) */
    return QG_MQA_VARIANT_DEEP4;
}

const char *qg__mqa_variant_name(int variant) {
    static const char *const names[QG_MQA_VARIANT_COUNT] = {"lockstep2", "deep4", "pipe", "deep4l"};
    return variant >= 0 && variant < QG_MQA_VARIANT_COUNT ? names[variant] : NULL;
}

int qg__mqa_plan_variant(qg_mqa_plan *p, int variant) {
    if (!p) return -1;
    int wgs, pipe, stage_w = 0;
    switch (variant) {
    case QG_MQA_VARIANT_LOCKSTEP2: wgs = 2, pipe = 0; break;
    case QG_MQA_VARIANT_DEEP4: wgs = 4, pipe = 0, stage_w = 1; break;
    case QG_MQA_VARIANT_PIPE: wgs = 2, pipe = 1; break;
    case QG_MQA_VARIANT_DEEP4L: wgs = 4, pipe = 0; break;
    default: return -1;
    }
    int stages = 8;
    while (stages > 2 && mqa_smem(p->head_dim, wgs, stages, stage_w) > QG_IDX_SMEM_MAX) --stages;
    p->variant = variant;
    p->math_wgs = wgs;
    p->pipe = pipe;
    p->stage_w = stage_w;
    p->block_kv = 64 * wgs;
    p->kv_stages = stages;
    p->block_x = 128 * (wgs + 1);
    p->smem_bytes = mqa_smem(p->head_dim, wgs, stages, stage_w);
    return 0;
}

int qg__mqa_source(char *buf, size_t cap, const qg_mqa_plan *p) {
    const int len = snprintf(
        buf, cap,
        "// qgemm mqa logits: H %d, D %d, compressed %d, clean %d, bf16 %d, %d math wgs, %d stages, "
        "pipe %d\n"
        "#define QG_MQA_H %d\n#define QG_MQA_D %d\n#define QG_MQA_COMPRESSED %d\n"
        "#define QG_MQA_CLEAN %d\n#define QG_MQA_BF16 %d\n#define QG_MQA_MATH_WGS %d\n"
        "#define QG_MQA_KV_STAGES %d\n#define QG_MQA_PIPE %d\n%s#define QG_MQA_SMEM_BYTES %zu\n"
        "#include \"qg_mqa_logits.cuh\"\n",
        p->heads, p->head_dim, p->compressed, p->clean, p->logits_bf16, p->math_wgs, p->kv_stages,
        p->pipe, p->heads, p->head_dim, p->compressed, p->clean, p->logits_bf16, p->math_wgs,
        p->kv_stages, p->pipe,
        /* only deep4 names it: the other variants' sources stay byte for byte */
        p->stage_w ? "#define QG_MQA_STAGE_W 1\n" : "", p->smem_bytes);
    return len < 0 || (size_t)len >= cap ? -1 : len;
}

/* ---- fp8_paged_mqa_logits ------------------------------------------------ */

/* The kernel's QG_PMQA_SMEM_PLAN: q's two stages, `stages` kv stages (64 x
 * D codes + 64 scales), the barriers. */
static size_t pmqa_smem(int n_cols, int d, int stages) {
    const size_t q = ((size_t)n_cols * d + 1023) / 1024 * 1024;
    return 1024 + 2 * q + (size_t)stages * (64 * (size_t)d + 64 * 4) + (size_t)(4 + 2 * stages) * 8;
}

int qg__pmqa_plan(int batch, int next_n, int heads, int head_dim, int clean, int logits_bf16,
                  int num_sms, qg_pmqa_plan *out, const char **why) {
    if (!out) return fail(why, "no plan to fill");
    if (batch < 0) return fail(why, "batch must be >= 0");
    if (next_n != 1 && next_n != 2) return fail(why, "next_n must be 1 or 2");
    if (heads != 32 && heads != 64) return fail(why, "heads must be 32 or 64");
    if (head_dim != 32 && head_dim != 64 && head_dim != 128)
        return fail(why, "head_dim must be 32, 64 or 128");
    if (num_sms < 1) return fail(why, "num_sms must be >= 1");
    out->batch = batch;
    out->next_n = next_n;
    out->heads = heads;
    out->head_dim = head_dim;
    out->clean = clean ? 1 : 0;
    out->logits_bf16 = logits_bf16 ? 1 : 0;
    out->num_sms = num_sms;
    out->grid_x = num_sms;
    out->sched_block_x = 1024;
    out->schedule_bytes = (size_t)(num_sms + 1) * 2 * 4;
    /* The default (qg__pmqa_default_variant): SPLIT4R112X, DeepGEMM's organisation
     * (a producer warp and kv ring per math warpgroup, 4 of them) with the
     * weights in registers and the run loop: split4 alone was 0.943x DeepGEMM
     * over 24 rows on the H200 against 0.829 for the former default (DUAL2
     * below 128 columns, SHARED2 at 128), 2026-11-29-h200-03-u3; the registers
     * add 2-5% (split4r112w), the run loop 0.962 -> 0.976 on 4 rows
     * (2026-11-29-h200-10-v4). The old organisations stay selectable
     * (QGEMM_PMQA_VARIANT) for A/B runs.
     * (The split form of 2026-11-28 that hung took more registers at the
     * setmaxnreg increase than the producers released; tag
     * exp/pmqa-split-2026-11-28.) */
    return qg__pmqa_plan_variant(out, qg__pmqa_default_variant(next_n, heads));
}

int qg__pmqa_default_variant(int next_n, int heads) {
    /* split4r112w at every width since 2026-11-29: split4 (a producer warp and kv ring per
     * math warpgroup) took DeepGEMM/qgemm 0.829 -> 0.943 over the 24 rows of
     * bench/peers_families.py --kinds paged-mqa (h200-03-u3); its weights in registers at
     * setmaxnreg 32 / 112 (split4r112) 0.941 -> 0.966 on 8 of them (h200-04-u4) and 0.970 over
     * the 24; all 32 weights in registers at 128 columns (split4r112w, the lean unit loop)
     * 0.978 over the 24, worst 0.910 -> 0.935, and 0.941 -> 0.966 on the 128-column rows
     * (h200-05-u5) */
    /* split4r112x since 2026-11-29 (the run loop: split4r112w's walk bookkeeping once a run
     * of units instead of once a unit): 4 rows of bench/pmqa_ab.py (the three at 128
     * columns and B4096 N1 H32) 0.962 -> 0.976, worst 0.947 -> 0.962, bitwise the same
     * logits (h200-10-v4) */
    /* split4r112u since 2026-11-29 (session w: split4r112x's run loop, the producers' unit from
     * one shared base and the walk's control values broadcast from lane 0, so the stage,
     * descriptors and barrier addresses live in uniform registers): the same 4 rows 0.976 ->
     * 1.008, worst 0.959 -> 0.999 (h200-11-w1); split4r112p alone 0.977 */
    (void)next_n;
    (void)heads;
    return QG_PMQA_VARIANT_SPLIT4R112U;
}

int qg__pmqa_plan_stages(qg_pmqa_plan *p, int stages) {
    if (!p) return -1;
    if (stages == 0) return 0;
    if (stages < p->math_wgs || stages > p->max_stages || stages % p->math_wgs) return -1;
    p->stages = stages;
    p->smem_bytes = pmqa_smem(p->next_n * p->heads, p->head_dim, stages);
    return 0;
}

const char *qg__pmqa_variant_name(int variant) {
    static const char *const names[QG_PMQA_VARIANT_COUNT] = {"shared2", "dual2", "split4",
                                                             "split4r112w", "split4r112x", "split4r112p",
                                                             "split4r112u"};
    return variant >= 0 && variant < QG_PMQA_VARIANT_COUNT ? names[variant] : NULL;
}

int qg__pmqa_plan_variant(qg_pmqa_plan *p, int variant) {
    if (!p || variant < 0 || variant >= QG_PMQA_VARIANT_COUNT) return -1;
    const int split = variant == QG_PMQA_VARIANT_SPLIT4 || variant == QG_PMQA_VARIANT_SPLIT4R112W ||
                      variant == QG_PMQA_VARIANT_SPLIT4R112X || variant == QG_PMQA_VARIANT_SPLIT4R112P ||
                      variant == QG_PMQA_VARIANT_SPLIT4R112U;
    const int math_wgs = split ? 4 : 2;
    const int n_cols = p->next_n * p->heads;
    /* DUAL2: two CTAs per SM (80 registers: N = 128 runs two N = 64 wgmma
     * passes a unit, QG_PMQA_NSPLIT) */
    const int ctas = variant == QG_PMQA_VARIANT_DUAL2 ? 2 : 1;
    const size_t budget = ctas == 2 ? QG_IDX_SMEM_MAX / 2 - 1024 : QG_IDX_SMEM_MAX;
    /* one ring (SHARED2, DUAL2) or one a math warpgroup (SPLIT4*: warpgroup
     * i's stages are i + 4 j): a multiple of the warpgroups (unit u ->
     * warpgroup u % W, stage u % stages), as many as fit, <= 24; SHARED2 <= 16
     * (its 2026-11-28 plan); DUAL2 all that fit in half an SM */
    int stages = 24 / math_wgs * math_wgs;
    while (stages > math_wgs && pmqa_smem(n_cols, p->head_dim, stages) > budget)
        stages -= math_wgs;
    if (variant == QG_PMQA_VARIANT_SHARED2 && stages > 16) stages = 16;
    p->max_stages = stages;
    /* SPLIT4R112U: 12 stages (3 a warpgroup's ring), not the 24 that fit: on the H200 the
     * shallower ring ran faster, 24 -> 20 -> 16 -> 12 stages 0.983 -> 0.989 -> 0.996 -> 1.003 of
     * DeepGEMM's time on 10 rows (8 of them B256 L8192, where 24 trailed most), and over the 24
     * rows of bench/peers_families.py 0.996 -> 1.005, worst 0.968 -> 0.990 (2026-11-29-h200-18-x3;
     * the same with an L2 of clean lines before each call, so not the flush's write-backs) */
    if (variant == QG_PMQA_VARIANT_SPLIT4R112U && stages > 12) stages = 12;
    p->variant = variant;
    p->math_wgs = math_wgs;
    /* the split organisations walk strided (each math warpgroup its own units) */
    p->stride_walk = split;
    p->split = split;
    /* SPLIT4R112X: split4r112w's plan, the run loop added (QG_PMQA_RUN);
     * SPLIT4R112P: split4r112x's, the producers' unit from one shared base (QG_PMQA_PADDR);
     * SPLIT4R112U: split4r112p's, the walk's control values from lane 0 (QG_PMQA_UNI) */
    const int pu = variant == QG_PMQA_VARIANT_SPLIT4R112P || variant == QG_PMQA_VARIANT_SPLIT4R112U;
    const int r112w = variant == QG_PMQA_VARIANT_SPLIT4R112W || variant == QG_PMQA_VARIANT_SPLIT4R112X || pu;
    p->run = variant == QG_PMQA_VARIANT_SPLIT4R112X || pu;
    p->paddr = pu;
    p->uni = variant == QG_PMQA_VARIANT_SPLIT4R112U;
    /* SPLIT4R112W at N = 128: the math warps write the clean form's -inf tail
     * after their last unit (the producers then need only the walk and fit
     * 32 registers), setmaxnreg 32 / 112 (the most a 640-thread CTA's launch
     * pool lets the math take), the lean unit loop, and all 32 weights in
     * registers, clean or not, except the clean form at D 64: 28 (ptxas -v,
     * 2026-11-29: 0 spills; there 32 spilled 4 bytes). Below 128 columns all
     * N / 4 weights in registers at 48 / 104. */
    p->math_tail = r112w && n_cols == 128 && p->clean;
    p->math112 = r112w && n_cols == 128;
    p->lean = r112w && n_cols == 128;
    const int wlean = p->clean && p->head_dim == 64 ? 28 : 32;
    p->wreg = !r112w ? 0 : n_cols < 128 ? n_cols / 4 : wlean;
    p->ctas = ctas;
    p->grid_x = ctas * p->num_sms;
    p->stages = stages;
    p->block_x = 128 * (math_wgs + 1);
    p->smem_bytes = pmqa_smem(n_cols, p->head_dim, stages);
    return 0;
}

int qg__pmqa_source(char *buf, size_t cap, const qg_pmqa_plan *p) {
    char wreg[16];
    snprintf(wreg, sizeof wreg, "%d\n", p->wreg);
    const int len = snprintf(
        buf, cap,
        "// qgemm paged mqa logits: H %d, D %d, next_n %d, clean %d, bf16 %d, %d stages, "
        "%d math wgs, %d ctas an SM%s%s%s%s%s%s%s%s%s\n"
        "#define QG_PMQA_SCHEDULE 0\n#define QG_PMQA_H %d\n#define QG_PMQA_D %d\n"
        "#define QG_PMQA_NEXT_N %d\n#define QG_PMQA_CLEAN %d\n#define QG_PMQA_BF16 %d\n"
        "#define QG_PMQA_STAGES %d\n#define QG_PMQA_MATH_WGS %d\n"
        "#define QG_PMQA_CTAS %d\n"
        "%s%s%s%s%s%s%s%s%s%s"
        "#define QG_PMQA_SMEM_BYTES %zu\n"
        "#include \"qg_paged_mqa_logits.cuh\"\n",
        p->heads, p->head_dim, p->next_n, p->clean, p->logits_bf16, p->stages, p->math_wgs,
        p->ctas, p->stride_walk ? ", strided walk" : "", p->split ? ", a producer warp a warpgroup" : "",
        p->wreg ? ", weights in registers" : "", p->math112 ? ", setmaxnreg 32 / 112" : "",
        p->math_tail ? ", the clean tail on the math warps" : "", p->lean ? ", lean unit loop" : "",
        p->run ? ", run loop" : "",
        p->paddr ? ", producer shared base" : "", p->uni ? ", uniform walk" : "", p->heads, p->head_dim, p->next_n,
        p->clean, p->logits_bf16, p->stages, p->math_wgs, p->ctas,
        /* only the strided forms name it: the older variants' sources stay byte for byte */
        p->stride_walk ? "#define QG_PMQA_STRIDE_WALK 1\n" : "",
        p->split ? "#define QG_PMQA_SPLIT 1\n" : "", p->wreg ? "#define QG_PMQA_WREG " : "", p->wreg ? wreg : "",
        p->math112 ? "#define QG_PMQA_MATH112 1\n" : "",
        /* only split4r112w's clean form at N = 128 names it */
        p->math_tail ? "#define QG_PMQA_MATH_TAIL 1\n" : "",
        p->lean ? "#define QG_PMQA_LEAN 1\n" : "",
        /* only split4r112x / p / u name it: split4r112w's source stays byte for byte */
        p->run ? "#define QG_PMQA_RUN 1\n" : "",
        p->paddr ? "#define QG_PMQA_PADDR 1\n" : "",
        p->uni ? "#define QG_PMQA_UNI 1\n" : "",
        p->smem_bytes);
    return len < 0 || (size_t)len >= cap ? -1 : len;
}

int qg__pmqa_schedule_source(char *buf, size_t cap) {
    const int len = snprintf(buf, cap,
                             "// qgemm paged mqa logits schedule\n#define QG_PMQA_SCHEDULE 1\n"
                             "#include \"qg_paged_mqa_logits.cuh\"\n");
    return len < 0 || (size_t)len >= cap ? -1 : len;
}
