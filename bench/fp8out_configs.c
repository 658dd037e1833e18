/*
 * bench/fp8out_configs.c -- offline (no GPU): the configuration the
 * bf16-output heuristic and the FP8-output heuristic pick for the 28 rows of
 * issue 51's target (M in {64, 128, 256, 4096} x DeepGEMM's 7 dense (N, K),
 * bench/peers.py DG_NK) on an offline H200 (132 SMs, 4915 GB/s, 227 KiB of
 * shared memory), with each pick's tiles, CTAs per tile (cluster), CTAs that
 * hold a tile and waves over the persistent grid. Rows where FP8 output runs
 * on fewer CTAs than bf16 output are marked "<".
 *
 *   cc -Iinclude bench/fp8out_configs.c build/libqgemm.a -ldl -lpthread -lm -o build/fp8out_configs
 *   build/fp8out_configs > bench/fp8out_configs.txt
 */
#include <qgemm.h>

#include <stdio.h>
#include <string.h>

static const int MS[] = {64, 128, 256, 4096};
static const int NK[][2] = {{2112, 7168}, {576, 7168},  {24576, 1536}, {32768, 512},
                            {7168, 16384}, {4096, 7168}, {7168, 2048}};

static int cdiv(long long a, long long b) { return (int)((a + b - 1) / b); }

/* CTAs one tile takes: split-K shares a tile between a cluster's two CTAs;
 * an FP8-output tile narrower than 128 columns is one of the 128 / block_n
 * CTAs of a cluster that split a scale group. */
static int ctas_per_tile(const qg_config *c) { return c->split_k == 2 ? 2 : 1; }
static int cluster_of(const qg_config *c, int fp8) {
    if (c->split_k == 2 || c->multicast != QG_MULTICAST_NONE) return 2;
    return fp8 && c->block_n < 128 ? 128 / c->block_n : 1;
}

/* Tiles (the n-block count padded to whole scale groups where a cluster
 * splits them). */
static long long busy_ctas(const qg_problem *p, const qg_config *c, int fp8) {
    int nb = cdiv(p->n, c->block_n);
    if (fp8 && c->block_n < 128) nb = cdiv(p->n, 128) * (128 / c->block_n);
    return (long long)cdiv(p->m, c->block_m) * nb * ctas_per_tile(c);
}

static void cell(char *buf, size_t len, const qg_problem *p, const qg_config *c, int fp8, int sms,
                 long long *ctas) {
    *ctas = busy_ctas(p, c, fp8);
    const int waves = cdiv(*ctas, sms);
    snprintf(buf, len, "%3dx%-3d cl %d mc %d sk %d  ctas %4lld  waves %2d", c->block_m, c->block_n,
             cluster_of(c, fp8), (int)c->multicast, c->split_k ? c->split_k : 1, *ctas, waves);
}

int main(void) {
    qg_device_props props;
    memset(&props, 0, sizeof props);
    props.sm_count = 132;
    props.cc_major = 9;
    props.cc_minor = 0;
    props.smem_optin_bytes = 232448;
    props.l2_bytes = 60u << 20;
    props.dram_gbps = 4915;
    snprintf(props.name, sizeof props.name, "offline H200");
    qg_context *ctx = NULL;
    if (qg_context_create_offline(&ctx, &props) != QG_SUCCESS) {
        fprintf(stderr, "fp8out_configs: %s\n", qg_last_error());
        return 1;
    }
    printf("# offline H200 (132 SMs, 4915 GB/s): heuristic picks, bf16 D vs e4m3 D (FP32 scales)\n");
    printf("# cl: CTAs of a cluster; sk: split-K; ctas: CTAs holding a tile; '<': FP8 D on fewer CTAs\n");
    printf("%-16s | %-44s | %-44s\n", "shape", "bf16 out", "fp8 out");
    int fewer = 0;
    for (int ni = 0; ni < 7; ++ni)
        for (int mi = 0; mi < 4; ++mi) {
            qg_problem p;
            memset(&p, 0, sizeof p);
            p.kind = QG_GEMM_DENSE;
            p.m = MS[mi], p.n = NK[ni][0], p.k = NK[ni][1], p.num_groups = 1;
            qg_config b, f;
            char sb[96] = "error", sf[96] = "error";
            long long cb = 0, cf = 0;
            if (qg_select_config(ctx, &p, &b) == QG_SUCCESS) cell(sb, sizeof sb, &p, &b, 0, 132, &cb);
            else snprintf(sb, sizeof sb, "error: %s", qg_last_error());
            if (qg_select_config_fp8out(ctx, &p, 0, &f) == QG_SUCCESS) cell(sf, sizeof sf, &p, &f, 1, 132, &cf);
            else snprintf(sf, sizeof sf, "error: %s", qg_last_error());
            char shape[32];
            snprintf(shape, sizeof shape, "%dx%dx%d", p.m, p.n, p.k);
            const int less = cf && cb && cf < cb;
            fewer += less;
            printf("%-16s | %-44s | %-44s %s\n", shape, sb, sf, less ? "<" : "");
        }
    printf("# rows where FP8 output runs on fewer CTAs: %d of 28\n", fewer);
    qg_context_destroy(ctx);
    return 0;
}
