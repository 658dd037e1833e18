/*
 * cmd_check.c -- `qgemm check [--family F]... [--quick] [--seed N] [--json] [--progress]`: the
 * correctness sweep, every case through the testkit (random problem, poison,
 * GEMM, check against the exact reference) with the pass rule of the tests
 * (qgtk_check_passed). The FP8 GEMMs' cases are here; the other families'
 * (BF16, MQA, paged MQA, HC, casts) are cmd_check_families.c's. Without
 * --family every family runs.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* qgemm check                                                               */
/* ------------------------------------------------------------------------ */

typedef struct {
    qg_gemm_kind kind;
    int m, n, k;     /* dense M; contiguous: intended M_total; masked: M_max */
    int groups;
} check_case;

/* Dense shapes: M from 1 to 4096, K from 16 to 7168, N a multiple of 8;
 * most are not multiples of any tile size. Then grouped cases (random
 * expert sizes with padding rows; masked groups including 0 and M_max rows). */
static const check_case full_cases[] = {
    {QG_GEMM_DENSE, 1, 128, 128, 1},       {QG_GEMM_DENSE, 1, 2112, 7168, 1},
    {QG_GEMM_DENSE, 7, 136, 144, 1},       {QG_GEMM_DENSE, 16, 24, 16, 1},
    {QG_GEMM_DENSE, 31, 72, 48, 1},        {QG_GEMM_DENSE, 33, 8, 7168, 1},
    {QG_GEMM_DENSE, 64, 128, 128, 1},      {QG_GEMM_DENSE, 64, 256, 512, 1},
    {QG_GEMM_DENSE, 65, 264, 400, 1},      {QG_GEMM_DENSE, 96, 576, 112, 1},
    {QG_GEMM_DENSE, 127, 1000, 256, 1},    {QG_GEMM_DENSE, 128, 128, 128, 1},
    {QG_GEMM_DENSE, 128, 4096, 7168, 1},   {QG_GEMM_DENSE, 129, 136, 1536, 1},
    {QG_GEMM_DENSE, 200, 512, 2064, 1},    {QG_GEMM_DENSE, 256, 7168, 2048, 1},
    {QG_GEMM_DENSE, 257, 2112, 7168, 1},   {QG_GEMM_DENSE, 300, 24, 4096, 1},
    {QG_GEMM_DENSE, 511, 576, 576, 1},     {QG_GEMM_DENSE, 512, 32768, 512, 1},
    {QG_GEMM_DENSE, 777, 1024, 1040, 1},   {QG_GEMM_DENSE, 1000, 520, 3072, 1},
    {QG_GEMM_DENSE, 1024, 4096, 16, 1},    {QG_GEMM_DENSE, 2048, 7168, 2048, 1},
    {QG_GEMM_DENSE, 2049, 264, 1024, 1},   {QG_GEMM_DENSE, 3000, 1536, 7168, 1},
    {QG_GEMM_DENSE, 4095, 7168, 128, 1},   {QG_GEMM_DENSE, 4096, 2112, 7168, 1},
    {QG_GEMM_DENSE, 4096, 24576, 1536, 1},
    {QG_GEMM_DENSE, 64, 1536, 7296, 1}, /* split-K, 57 K blocks: 29 + 28 */
    {QG_GEMM_DENSE, 100, 2112, 7296, 1}, /* two 64-row m-blocks, the second partial */
    {QG_GEMM_GROUPED_CONTIGUOUS, 1200, 576, 1536, 4},
    {QG_GEMM_GROUPED_CONTIGUOUS, 4096, 4096, 7168, 8},
    {QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 3},
    {QG_GEMM_GROUPED_MASKED, 100, 264, 400, 5},
    {QG_GEMM_GROUPED_MASKED, 1000, 4104, 1040, 2}, /* the masked 256x128 tile */
};

/* --quick: small enough for compute-sanitizer, one case of each path. */
static const check_case quick_cases[] = {
    {QG_GEMM_DENSE, 65, 264, 400, 1},
    {QG_GEMM_DENSE, 128, 256, 512, 1},
    {QG_GEMM_DENSE, 33, 576, 7168, 1}, /* split-K */
    {QG_GEMM_GROUPED_CONTIGUOUS, 200, 256, 256, 2},
    {QG_GEMM_GROUPED_MASKED, 128, 256, 384, 2},
    {QG_GEMM_GROUPED_MASKED, 1024, 4096, 256, 2}, /* the masked 256x128 tile */
};

/* One case of --json's "cases" array (first: no comma before it). */
static void case_json(const check_case *c, bool first, bool ok, const char *error,
                      const qgtk_check_result *res, const qg_config *cfg, const char *desc) {
    printf("%s\n    {\"family\": \"fp8\", \"kind\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, \"groups\": %d, "
           "\"passed\": %s", first ? "" : ",", cli_kind_name(c->kind), c->m, c->n, c->k, c->groups,
           ok ? "true" : "false");
    if (error) {
        printf(", \"error\": ");
        cli_json_string(stdout, error);
    } else {
        printf(", \"diff\": ");
        cli_json_number(stdout, "%.6e", res->diff);
        printf(", \"block_m\": %d, \"block_n\": %d, \"stages\": %d, \"cluster\": \"%s\", "
               "\"gpu_reference\": %s",
               cfg->block_m, cfg->block_n, cfg->num_stages, cli_cluster_name(cfg),
               res->gpu_reference ? "true" : "false");
        if (c->groups > 1) {
            printf(", \"worst_group_diff\": ");
            cli_json_number(stdout, "%.6e", res->group_diff_max);
        }
        if (!ok) {
            printf(", \"why\": ");
            cli_json_string(stdout, desc);
        }
    }
    printf("}");
}

/* Run one case; print one line (or, with json, one object of the "cases"
 * array); @return true when it passed. */
static bool check_one(qg_context *ctx, const check_case *c, uint64_t seed, bool json, bool first) {
    qgtk_problem_spec spec = {.kind = c->kind, .m = c->m, .n = c->n, .k = c->k,
                            .num_groups = c->groups, .seed = seed, .scale_spread = 3,
                            .masked_extremes = c->kind == QG_GEMM_GROUPED_MASKED};
    char label[64];
    snprintf(label, sizeof label, "%-10s %dx%dx%d", cli_kind_name(c->kind), c->m, c->n, c->k);
    if (c->groups > 1) snprintf(label + strlen(label), sizeof label - strlen(label), " G=%d",
                                c->groups);
    qgtk_problem_data *p = NULL;
    qg_config cfg = {0};
    qgtk_check_result res;
    qg_status s = qgtk_problem_create(&p, ctx, &spec);
    const char *stage = "creating the problem";
    if (s == QG_SUCCESS) {
        qg_problem q = cli_problem_of(p);
        stage = "selecting a configuration";
        s = qg_select_config(ctx, &q, &cfg);
    }
    if (s == QG_SUCCESS) {
        qg_gemm_args args = qgtk_problem_args(p);
        stage = "poisoning D";
        s = qgtk_problem_poison(ctx, p, NULL);
        if (s == QG_SUCCESS) {
            stage = "running the GEMM";
            s = qgtk_gemm_launch(ctx, c->kind, &args, NULL, NULL);
        }
        if (s == QG_SUCCESS) {
            stage = "checking the result";
            s = qgtk_problem_check(ctx, p, &res);
        }
    }
    if (s != QG_SUCCESS) {
        if (json) {
            char error[1024];
            snprintf(error, sizeof error, "error while %s: %s", stage, qg_last_error());
            case_json(c, first, false, error, NULL, NULL, NULL);
        } else {
            printf("FAIL fp8       %-44s error while %s: %s\n", label, stage, qg_last_error());
        }
        qgtk_problem_free(p);
        return false;
    }
    const bool ok = qgtk_check_passed(&res, CLI_DIFF_BOUND);
    char desc[256] = "";
    if (!ok) qgtk_check_describe(&res, desc, sizeof desc);
    if (json) {
        case_json(c, first, ok, NULL, &res, &cfg, desc);
        fflush(stdout);
        qgtk_problem_free(p);
        return ok;
    }
    printf("%s fp8       %-44s diff %.3e  (bm %d bn %d st %d mc %s)%s", ok ? "ok  " : "FAIL", label,
           res.diff, cfg.block_m, cfg.block_n, cfg.num_stages, cli_cluster_name(&cfg),
           res.gpu_reference ? " [gpu ref]" : "");
    if (c->groups > 1) printf("  worst group %.3e", res.group_diff_max);
    if (!ok) printf("  %s", desc);
    printf("\n");
    fflush(stdout);
    qgtk_problem_free(p);
    return ok;
}

int cli_check(int argc, char **argv) {
    bool quick = false, json = false, progress = false;
    bool families[CLI_NUM_FAMILIES] = {false}, any_family = false;
    const char *seed_text = NULL; /* the --seed given, to refuse a second one */
    uint64_t seed = cli_fresh_seed();
    for (int i = 1; i < argc; i++) {
        long v;
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--progress")) progress = true;
        else if (!strcmp(argv[i], "--family") && i + 1 < argc) {
            if (!cli_parse_family_set(argv[i + 1], families))
                return cli_usage_error("check: --family wants %s or all (or a comma list of "
                                       "them), got '%s'", CLI_FAMILY_CHOICES, argv[i + 1]);
            any_family = true, i++;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (!cli_parse_int(argv[i + 1], 0, 2147483647L, &v))
                return cli_usage_error("check: --seed wants an integer in [0, 2147483647], got "
                                       "'%s'", argv[i + 1]);
            if (seed_text)
                return cli_usage_error("check: --seed given twice ('%s', then '%s')", seed_text,
                                       argv[i + 1]);
            seed_text = argv[i + 1];
            seed = (uint64_t)v, i++;
        } else return cli_usage_error("check: unknown or incomplete option '%s'", argv[i]);
    }
    if (!any_family) /* every family, as a user checking the install expects */
        for (int f = 0; f < CLI_NUM_FAMILIES; f++) families[f] = true;
    qg_context *ctx;
    const qg_driver *drv;
    if (!cli_open_gpu_json(&ctx, &drv, json ? "check" : NULL)) return CLI_EXIT_NO_GPU;
    const check_case *cases = quick ? quick_cases : full_cases;
    int fp8_count = !families[CLI_FAMILY_FP8] ? 0
                    : quick ? (int)(sizeof quick_cases / sizeof quick_cases[0])
                            : (int)(sizeof full_cases / sizeof full_cases[0]);
    int count = fp8_count;
    for (int f = 1; f < CLI_NUM_FAMILIES; f++)
        if (families[f]) count += cli_check_family_count((cli_family)f, quick);
    if (json) {
        printf("{\n  \"command\": \"check\",\n  \"seed\": %llu,\n  \"bound\": %.1e,\n  "
               "\"families\": [", (unsigned long long)seed, CLI_DIFF_BOUND);
        for (int f = 0, n = 0; f < CLI_NUM_FAMILIES; f++)
            if (families[f]) printf("%s\"%s\"", n++ ? ", " : "", cli_family_name((cli_family)f));
        printf("],\n  \"cases\": [");
    } else {
        printf("qgemm check: %d cases (", count);
        for (int f = 0, n = 0; f < CLI_NUM_FAMILIES; f++)
            if (families[f])
                printf("%s%s %d", n++ ? ", " : "", cli_family_name((cli_family)f),
                       f == CLI_FAMILY_FP8 ? fp8_count : cli_check_family_count((cli_family)f, quick));
        printf("), seed %llu; FP8 bound diff < %.0e, the others their tests' rules\n",
               (unsigned long long)seed, CLI_DIFF_BOUND);
    }
    /* --progress: a line per case on stderr before it runs (the first run
     * compiles each case's kernel, seconds each on a small host). Only when
     * asked: on a terminal the result lines already show the pace. */
    cli_progress bar;
    cli_progress_start(&bar, "check", count, progress);
    bar.enabled = progress;
    int failed = 0;
    for (int i = 0; i < fp8_count; i++) {
        char what[96];
        snprintf(what, sizeof what, "fp8 %s %dx%dx%d", cli_kind_name(cases[i].kind), cases[i].m,
                 cases[i].n, cases[i].k);
        if (cases[i].groups > 1)
            snprintf(what + strlen(what), sizeof what - strlen(what), " G=%d", cases[i].groups);
        cli_progress_step(&bar, i + 1, what);
        failed += !check_one(ctx, &cases[i], seed + (uint64_t)i, json, i == 0);
    }
    bool first = fp8_count == 0;
    int done = fp8_count;
    for (int f = 1; f < CLI_NUM_FAMILIES; f++)
        if (families[f])
            failed += cli_check_family_run(ctx, (cli_family)f, quick, seed, json, &first, &bar, &done);
    if (json)
        printf("\n  ],\n  \"passed\": %d,\n  \"failed\": %d\n}\n", count - failed, failed);
    else
        printf("qgemm check: %d passed, %d failed (reproduce with --seed %llu)\n", count - failed,
               failed, (unsigned long long)seed);
    cli_close_gpu(ctx, drv);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
