/*
 * cmd_check_families.c -- `qgemm check`'s cases of the families beside the
 * FP8 GEMMs (cli.h): BF16 GEMMs in every layout and kind, FP8 MQA logits
 * (ragged and paged, the paged ones also replayed from a CUDA graph), the
 * TF32 HC prenorm GEMM, the casts. Each case runs through the testkit's
 * runner (testkit/qgtk_cases.h): fresh random inputs from the seed, outputs
 * poisoned, checked against the host reference by the C tests' pass rule.
 * Shapes are mostly off the tiles (odd M, N off 128, K off 64 where allowed).
 */
#include "cli.h"

#include "qgtk_cases.h"

#include <math.h>
#include <string.h>

#define K_ QG_MAJOR_K
#define MN QG_MAJOR_MN

/* BF16: all four layouts, D bf16 / FP32, C none / separate / in place, then
 * every grouped kind. */
static const qgtk_bf16_case bf16_full[] = {
    {QG_GEMM_DENSE, 129, 264, 320, 1, K_, K_, 0, 0},  {QG_GEMM_DENSE, 129, 264, 320, 1, K_, MN, 1, 1},
    {QG_GEMM_DENSE, 129, 264, 320, 1, MN, K_, 0, 2},  {QG_GEMM_DENSE, 129, 264, 320, 1, MN, MN, 1, 0},
    {QG_GEMM_DENSE, 1, 576, 7168, 1, K_, K_, 1, 1},   {QG_GEMM_DENSE, 300, 1000, 1000, 1, MN, K_, 0, 0},
    {QG_GEMM_DENSE, 4096, 512, 256, 1, K_, MN, 0, 2}, {QG_GEMM_DENSE, 64, 7168, 448, 1, MN, MN, 1, 1},
    {QG_GEMM_GROUPED_CONTIGUOUS, 1280, 576, 448, 4, K_, K_, 0, 0},
    {QG_GEMM_GROUPED_CONTIGUOUS, 1280, 576, 448, 4, K_, MN, 0, 0},
    {QG_GEMM_GROUPED_PSUM, 1500, 264, 320, 4, K_, K_, 0, 0},
    {QG_GEMM_GROUPED_MASKED, 200, 576, 448, 4, K_, K_, 0, 0},
    {QG_GEMM_GROUPED_MASKED, 1024, 4096, 7168, 2, K_, K_, 0, 0},
    {QG_GEMM_K_GROUPED, 200, 264, 0, 5, MN, MN, 1, 1},
};
static const qgtk_bf16_case bf16_quick[] = {
    {QG_GEMM_DENSE, 129, 264, 320, 1, K_, K_, 0, 0}, {QG_GEMM_DENSE, 65, 136, 192, 1, MN, MN, 1, 1},
    {QG_GEMM_GROUPED_CONTIGUOUS, 384, 264, 192, 2, K_, K_, 0, 0},
    {QG_GEMM_GROUPED_MASKED, 100, 264, 192, 3, K_, K_, 0, 0},
    {QG_GEMM_K_GROUPED, 72, 136, 0, 3, MN, MN, 1, 0},
};

/* MQA: {seq_len, seq_len_kv, heads, head_dim, bf16, mode (0 plain, 1 clean,
 * 2 compressed), full_ranges} */
static const qgtk_mqa_case mqa_full[] = {
    {37, 300, 32, 64, 0, 1, 0},   {128, 1000, 64, 128, 1, 0, 0}, {5, 77, 32, 32, 0, 2, 0},
    {256, 2048, 64, 32, 1, 1, 0}, {3, 129, 64, 64, 1, 2, 0},     {1, 1, 32, 128, 0, 1, 0},
    {300, 513, 64, 128, 0, 2, 0}, {99, 257, 64, 64, 0, 0, 0},
};
static const qgtk_mqa_case mqa_quick[] = {{37, 300, 32, 64, 0, 1, 0}, {5, 77, 64, 128, 1, 2, 0}};

/* paged: {batch, next_n, heads, head_dim, bf16, clean, avg_len, graph} */
static const qgtk_paged_case paged_full[] = {
    {1, 1, 32, 128, 0, 1, 100, 1}, {7, 2, 64, 128, 1, 0, 300, 0}, {33, 1, 64, 64, 0, 0, 70, 1},
    {16, 2, 32, 32, 1, 1, 500, 0}, {300, 1, 64, 128, 0, 1, 64, 1}, {5, 2, 64, 64, 0, 1, 2000, 0},
};
static const qgtk_paged_case paged_quick[] = {{3, 2, 64, 128, 0, 1, 100, 1},
                                              {5, 1, 32, 64, 1, 0, 70, 0}};

/* HC: {m, n, k, splits} */
static const qgtk_hc_case hc_full[] = {{1, 24, 7168, 1},  {13, 32, 1024, 16}, {77, 16, 64, 1},
                                       {300, 8, 640, 3},  {1025, 24, 4096, 1}, {129, 32, 2048, 4},
                                       {512, 24, 28672, 0}};
static const qgtk_hc_case hc_quick[] = {{77, 16, 64, 1}, {13, 24, 1024, 3}};

/* casts: {kind, f32, ue, mn, rows_mask, groups, m, k, pad, graph} */
static const qgtk_cast_case cast_full[] = {
    {QG_CAST_KIND_PER_TOKEN, 0, 0, 0, 0, 1, 37, 200, 0, 0},
    {QG_CAST_KIND_PER_TOKEN, 0, 1, 1, 0, 1, 300, 7168, 0, 0},
    {QG_CAST_KIND_PER_TOKEN, 1, 0, 1, 0, 3, 50, 1000, 1, 0},
    {QG_CAST_KIND_PER_BLOCK, 0, 0, 0, 0, 2, 200, 300, 0, 0},
    {QG_CAST_KIND_PER_BLOCK, 1, 1, 0, 0, 1, 256, 1000, 1, 0},
    {QG_CAST_KIND_PER_CHANNEL, 0, 0, 0, 0, 1, 256, 300, 0, 0},
    {QG_CAST_KIND_PER_CHANNEL, 1, 1, 0, 0, 1, 128, 1001, 1, 0},
    {QG_CAST_KIND_SILU_MUL, 0, 0, 0, 0, 6, 150, 256, 0, 0},
    {QG_CAST_KIND_SILU_MUL, 0, 1, 1, 1, 6, 150, 256, 0, 1},
    {QG_CAST_KIND_SILU_MUL, 1, 0, 0, 2, 6, 150, 256, 1, 0},
};
static const qgtk_cast_case cast_quick[] = {
    {QG_CAST_KIND_PER_TOKEN, 0, 0, 1, 0, 1, 37, 200, 0, 0},
    {QG_CAST_KIND_PER_BLOCK, 0, 1, 0, 0, 1, 200, 300, 0, 0},
    {QG_CAST_KIND_PER_CHANNEL, 1, 0, 0, 0, 1, 128, 300, 1, 0},
    {QG_CAST_KIND_SILU_MUL, 0, 0, 0, 1, 4, 100, 256, 0, 0},
};

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

int cli_check_family_count(cli_family f, bool quick) {
    switch (f) {
    case CLI_FAMILY_BF16: return quick ? COUNT(bf16_quick) : COUNT(bf16_full);
    case CLI_FAMILY_MQA: return quick ? COUNT(mqa_quick) : COUNT(mqa_full);
    case CLI_FAMILY_PAGED_MQA: return quick ? COUNT(paged_quick) : COUNT(paged_full);
    case CLI_FAMILY_HC: return quick ? COUNT(hc_quick) : COUNT(hc_full);
    case CLI_FAMILY_CAST: return quick ? COUNT(cast_quick) : COUNT(cast_full);
    default: return 0;
    }
}

/* Case i of family f: its label (for the lines, --progress and JSON) and its
 * run through the testkit. */
static bool run_case(qg_context *ctx, CUstream stream, cli_family f, bool quick, int i,
                     const qgtk_case_opts *opts, qgtk_case_result *res, char *label, size_t len) {
    switch (f) {
    case CLI_FAMILY_BF16: {
        const qgtk_bf16_case *c = quick ? &bf16_quick[i] : &bf16_full[i];
        static const char *const c_modes[3] = {"", " +C", " +=C"};
        snprintf(label, len, "%s %s %dx%dx%d%s", cli_kind_name(c->kind),
                 qgtk_bf16_layout_name(c->a_major, c->b_major), c->m, c->n, c->k,
                 c->d_fp32 ? " fp32" : " bf16");
        if (c->kind == QG_GEMM_K_GROUPED) /* the groups draw their own K */
            snprintf(label, len, "%s %s %dx%d %s", cli_kind_name(c->kind),
                     qgtk_bf16_layout_name(c->a_major, c->b_major), c->m, c->n,
                     c->d_fp32 ? "fp32" : "bf16");
        if (c->groups > 1) snprintf(label + strlen(label), len - strlen(label), " G=%d", c->groups);
        snprintf(label + strlen(label), len - strlen(label), "%s", c_modes[c->c_mode % 3]);
        return ctx && qgtk_bf16_case_run(ctx, stream, c, opts, res);
    }
    case CLI_FAMILY_MQA: {
        const qgtk_mqa_case *c = quick ? &mqa_quick[i] : &mqa_full[i];
        static const char *const modes[3] = {"plain", "clean", "compressed"};
        snprintf(label, len, "sq %d skv %d H %d D %d %s %s", c->seq_len, c->seq_len_kv, c->heads,
                 c->head_dim, c->bf16 ? "bf16" : "fp32", modes[c->mode % 3]);
        return ctx && qgtk_mqa_case_run(ctx, stream, c, opts, res);
    }
    case CLI_FAMILY_PAGED_MQA: {
        const qgtk_paged_case *c = quick ? &paged_quick[i] : &paged_full[i];
        snprintf(label, len, "bsz %d next_n %d H %d D %d L %d %s%s%s", c->batch, c->next_n,
                 c->heads, c->head_dim, c->avg_len, c->bf16 ? "bf16" : "fp32",
                 c->clean ? " clean" : "", c->graph ? " +graph" : "");
        return ctx && qgtk_paged_case_run(ctx, stream, c, opts, res);
    }
    case CLI_FAMILY_HC: {
        const qgtk_hc_case *c = quick ? &hc_quick[i] : &hc_full[i];
        snprintf(label, len, "%dx%dx%d splits %d", c->m, c->n, c->k, c->splits);
        return ctx && qgtk_hc_case_run(ctx, stream, c, opts, res);
    }
    case CLI_FAMILY_CAST: {
        const qgtk_cast_case *c = quick ? &cast_quick[i] : &cast_full[i];
        static const char *const masks[3] = {"", " masked", " contiguous"};
        snprintf(label, len, "%s %s%s%s %dx%dx%d%s%s%s", qgtk_cast_kind_name(c->kind),
                 c->f32 ? "fp32" : "bf16", c->ue ? " ue8m0" : "", c->mn ? " mn-major" : "",
                 c->groups, c->m, c->k, masks[c->rows_mask % 3], c->pad ? " padded" : "",
                 c->graph ? " +graph" : "");
        return ctx && qgtk_cast_case_run(ctx, stream, c, opts, res);
    }
    default:
        snprintf(label, len, "?");
        return false;
    }
}

int cli_check_family_run(qg_context *ctx, cli_family f, bool quick, uint64_t seed, bool json,
                         bool *first, cli_progress *bar, int *done) {
    const int count = cli_check_family_count(f, quick);
    const qg_driver *drv = NULL;
    CUstream stream = NULL;
    char stream_error[128] = "";
    /* Its own stream: the paged case captures a CUDA graph, which the legacy
     * default stream cannot. */
    if (!qg__context_cuda(ctx, &drv, NULL, NULL) ||
        drv->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        snprintf(stream_error, sizeof stream_error, "cannot create a CUDA stream");
    int failed = 0;
    for (int i = 0; i < count; i++) {
        char label[128], what[160];
        qgtk_case_result res;
        memset(&res, 0, sizeof res);
        res.diff = NAN;
        run_case(NULL, NULL, f, quick, i, NULL, &res, label, sizeof label); /* the label alone */
        snprintf(what, sizeof what, "%s %s", cli_family_name(f), label);
        cli_progress_step(bar, ++*done, what);
        const qgtk_case_opts opts = {.seed = seed + (uint64_t)f * 1000003u + (uint64_t)i};
        bool ok = false;
        if (stream_error[0]) snprintf(res.why, sizeof res.why, "%s", stream_error);
        else ok = run_case(ctx, stream, f, quick, i, &opts, &res, label, sizeof label);
        failed += !ok;
        if (json) {
            printf("%s\n    {\"family\": \"%s\", \"case\": ", *first ? "" : ",", cli_family_name(f));
            cli_json_string(stdout, label);
            printf(", \"passed\": %s, \"diff\": ", ok ? "true" : "false");
            cli_json_number(stdout, "%.6e", res.diff);
            if (!ok) {
                printf(", \"why\": ");
                cli_json_string(stdout, res.why);
            }
            printf("}");
            *first = false;
        } else {
            printf("%s %-9s %-44s diff %.3e%s%s\n", ok ? "ok  " : "FAIL", cli_family_name(f), label,
                   res.diff, ok ? "" : "  ", ok ? "" : res.why);
        }
        fflush(stdout);
    }
    if (stream) drv->cuStreamDestroy(stream);
    return failed;
}
