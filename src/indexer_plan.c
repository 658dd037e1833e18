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

#define HC_BLOCK_M 64
#define HC_THREADS 160

static size_t hc_smem(int n, int stages, int cluster) {
    const size_t stage = 64 * 64 * 2 + 2 * (size_t)n * 128;
    const size_t slots = (size_t)(cluster - 1) * (size_t)(n / 2 + 2) * 128 * 4;
    return 1024 + (size_t)stages * stage + slots + (size_t)stages * 16;
}

int qg__hc_plan(int m, int n, int k, int num_splits, int num_sms, qg_hc_plan *out,
                const char **why) {
    if (!out) return fail(why, "no plan to fill");
    if (m < 0) return fail(why, "m must be >= 0");
    if (n <= 0 || n > 32 || n % 8) return fail(why, "n must be 8, 16, 24 or 32");
    if (k <= 0 || k % 64) return fail(why, "k must be a positive multiple of 64");
    if (num_splits < 1) return fail(why, "num_splits must be >= 1");
    if (num_sms < 1) return fail(why, "num_sms must be >= 1");
    const int m_blocks = m > 0 ? (m + HC_BLOCK_M - 1) / HC_BLOCK_M : 1;
    const long base = (long)m_blocks * num_splits;
    const int nkb = k / 64, per_split = nkb / num_splits;
    /* Cluster: split each (m-block, split) along K over up to 8 CTAs while
     * the CTAs still fit one wave and each keeps >= 8 K blocks (the
     * reduction through rank 0 costs about one K block). */
    int cluster = 1;
    while (cluster < 8 && base * cluster * 2 <= num_sms && per_split / (cluster * 2) >= 8)
        cluster *= 2;
    const long ctas = base * cluster;
    /* Stages: one wave -> as many as fit (bytes in flight per SM); several
     * waves -> two CTAs per SM, so one's prologue and tail hide behind the
     * other's stream. Never more than a CTA's K blocks. */
    const int per_cta = (per_split + cluster - 1) / cluster;
    const size_t budget = ctas <= num_sms ? QG_IDX_SMEM_MAX : QG_IDX_SMEM_MAX / 2 - 1024;
    int stages = 16;
    if (stages > per_cta) stages = per_cta > 2 ? per_cta : 2;
    while (stages > 2 && hc_smem(n, stages, cluster) > budget) --stages;
    if (hc_smem(n, stages, cluster) > QG_IDX_SMEM_MAX) return fail(why, "shared memory");
    if (ctas > 0x7fffffffL) return fail(why, "grid too large");
    out->m = m;
    out->n = n;
    out->k = k;
    out->num_splits = num_splits;
    out->cluster = cluster;
    out->stages = stages;
    out->grid_x = (int)ctas;
    out->block_x = HC_THREADS;
    out->smem_bytes = hc_smem(n, stages, cluster);
    return 0;
}

int qg__hc_source(char *buf, size_t cap, const qg_hc_plan *p) {
    const int len = snprintf(buf, cap,
                             "// qgemm hc prenorm: N %d, K %d, splits %d, cluster %d, %d stages\n"
                             "#define QG_HC_N %d\n#define QG_HC_K %d\n#define QG_HC_SPLITS %d\n"
                             "#define QG_HC_CLUSTER %d\n#define QG_HC_STAGES %d\n"
                             "#define QG_HC_SMEM_BYTES %zu\n#include \"qg_hc_prenorm.cuh\"\n",
                             p->n, p->k, p->num_splits, p->cluster, p->stages, p->n, p->k,
                             p->num_splits, p->cluster, p->stages, p->smem_bytes);
    return len < 0 || (size_t)len >= cap ? -1 : len;
}
