/*
 * cmd_compile.c -- `qgemm compile`: warm the on-disk kernel cache for the
 * DeepSeek-V3 shapes (or --shape / grouped ones), on the real device when
 * there is one, else on an offline H100. Needs no GPU.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* qgemm compile                                                             */
/* ------------------------------------------------------------------------ */

/* Contiguous problems' default total rows (the (N, K) pairs are
 * cli_grouped_nk, as in `qgemm bench --grouped`). */
#define GROUPED_TOTAL_ROWS 32768

/* How the command reports: the lines or one JSON document, and progress. */
typedef struct {
    bool json;
    int done; /* kernels reported so far */
    cli_progress progress;
} report;

static void label_of(const qg_problem *q, char *label, size_t len) {
    snprintf(label, len, "%-10s %dx%dx%d", cli_kind_name(q->kind), q->m, q->n, q->k);
    if (q->num_groups > 1)
        snprintf(label + strlen(label), len - strlen(label), " G=%d", q->num_groups);
}

/* Compile q's kernel: the forced configuration when `forced` is not NULL,
 * else the library's choice, with its fallback. */
static bool compile_one(qg_context *ctx, const qg_problem *q, const qg_config *forced, report *r) {
    qg_config cfg = {0};
    qg_kernel_info info;
    memset(&info, 0, sizeof info);
    char label[64];
    label_of(q, label, sizeof label);
    char what[96];
    snprintf(what, sizeof what, "compiling %s %dx%dx%d", cli_kind_name(q->kind), q->m, q->n, q->k);
    if (q->num_groups > 1)
        snprintf(what + strlen(what), sizeof what - strlen(what), " G=%d", q->num_groups);
    cli_progress_step(&r->progress, r->done + 1, what);
    qg_status s = cli_config_for(ctx, q, forced, &cfg);
    bool fell_back = false;
    if (s == QG_SUCCESS) s = qg_compile(ctx, q, &cfg, &info);
    /* Without --config, a refusal of the heuristic's choice is not the end:
     * the library compiles the next configuration it ranks, as a GEMM call
     * does (issue 27: this command used to stop here). Which one is not
     * reported by qg_compile, so the line says "fallback". (qg_compile
     * meets the refusal once more first: refusals are not cached. Rare.) */
    if (s == QG_ERROR_COMPILE && !forced) {
        fprintf(stderr, "the JIT refused %dx%d for %s (%s); compiling the next configuration the "
                "heuristic ranks ...\n", cfg.block_m, cfg.block_n, label, qg_last_error());
        s = qg_compile(ctx, q, NULL, &info);
        fell_back = true;
    }
    static const char *const hit[3] = {"compiled", "memory", "disk"};
    const char *source = info.cache_hit >= 0 && info.cache_hit <= 2 ? hit[info.cache_hit] : "?";
    if (r->json) {
        printf("%s\n    {\"kind\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, \"groups\": %d, "
               "\"ok\": %s", r->done ? "," : "", cli_kind_name(q->kind), q->m, q->n, q->k,
               q->num_groups, s == QG_SUCCESS ? "true" : "false");
        if (s != QG_SUCCESS) {
            printf(", \"status\": \"%s\", \"error\": ", qg_status_string(s));
            cli_json_string(stdout, qg_last_error());
        } else {
            if (fell_back)
                printf(", \"fallback_after\": \"%dx%d\"", cfg.block_m, cfg.block_n);
            else
                printf(", \"block_m\": %d, \"block_n\": %d, \"stages\": %d, \"cluster\": \"%s\"",
                       cfg.block_m, cfg.block_n, cfg.num_stages, cli_cluster_name(&cfg));
            printf(", \"registers\": %d, \"spill_store_bytes\": %d, \"spill_load_bytes\": %d, "
                   "\"stack_frame_bytes\": %d, \"compile_ms\": %.1f, \"source\": \"%s\", \"key\": ",
                   info.registers, info.spill_store_bytes, info.spill_load_bytes,
                   info.stack_frame_bytes, info.compile_ms, source);
            cli_json_string(stdout, info.key);
        }
        printf("}");
    } else if (s != QG_SUCCESS) {
        printf("FAIL %-34s %s: %s\n", label, qg_status_string(s), qg_last_error());
    } else if (fell_back) {
        printf("ok   %-34s fallback after %3dx%-3d refused  regs %3d spill %d/%d stack %d  %8.1f ms"
               "  %-8s %s\n", label, cfg.block_m, cfg.block_n, info.registers,
               info.spill_store_bytes, info.spill_load_bytes, info.stack_frame_bytes,
               info.compile_ms, source, info.key);
    } else {
        printf("ok   %-34s bm %3d bn %3d st %d mc %-4s  regs %3d spill %d/%d stack %d  %8.1f ms  %-8s "
               "%s\n",
               label, cfg.block_m, cfg.block_n, cfg.num_stages, cli_cluster_name(&cfg),
               info.registers, info.spill_store_bytes, info.spill_load_bytes,
               info.stack_frame_bytes, info.compile_ms, source, info.key);
    }
    fflush(stdout);
    r->done++;
    return s == QG_SUCCESS;
}

int cli_compile(int argc, char **argv) {
    cli_shape shapes[CLI_MAX_SHAPES];
    int num_shapes = 0, contiguous_groups = 0, masked_groups = 0, masked_rows = 0;
    bool dense = false, offline = false, json = false, progress = false;
    qg_config config = {0};
    const qg_config *forced = NULL; /* &config after a --config */
    /* The value of each option given once at most, to refuse a second. */
    const char *contiguous_text = NULL, *masked_text = NULL, *config_text = NULL;
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        long v;
        const char **once = !next ? NULL
                            : !strcmp(argv[i], "--grouped-contiguous") ? &contiguous_text
                            : !strcmp(argv[i], "--grouped-masked")     ? &masked_text
                            : !strcmp(argv[i], "--config")             ? &config_text
                                                                       : NULL;
        if (once && *once)
            return cli_usage_error("compile: %s given twice ('%s', then '%s')", argv[i], *once,
                                   next);
        if (once) *once = next;
        if (!strcmp(argv[i], "--shape") && next) {
            if (num_shapes == CLI_MAX_SHAPES) return cli_usage_error("compile: too many --shape");
            if (!cli_parse_shape(next, &shapes[num_shapes++]))
                return cli_usage_error("compile: --shape wants MxNxK, got '%s'", next);
            i++;
        } else if (!strcmp(argv[i], "--grouped-contiguous") && next) {
            if (!cli_parse_int(next, 1, CLI_MAX_GROUPS, &v))
                return cli_usage_error("compile: --grouped-contiguous wants G in 1..%d, got '%s'",
                                       CLI_MAX_GROUPS, next);
            contiguous_groups = (int)v, i++;
        } else if (!strcmp(argv[i], "--grouped-masked") && next) {
            if (!cli_parse_groups_rows(next, &masked_groups, &masked_rows))
                return cli_usage_error("compile: --grouped-masked wants G,M_max (G in 1..%d), "
                                       "got '%s'", CLI_MAX_GROUPS, next);
            i++;
        } else if (!strcmp(argv[i], "--config") && next) {
            if (!cli_parse_config(next, &config))
                return cli_usage_error("compile: --config wants bm,bn,stages,mc (mc: none|a|b|k2), "
                                       "got '%s'", next);
            forced = &config, i++;
        } else if (!strcmp(argv[i], "--refuse") && next) {
            /* Fault injection for tests (tests/cli.sh): the JIT refuses this
             * tile as if it spilled (qgtk_refuse_tile). */
            cli_shape t;
            char buf[64];
            if (strlen(next) > 20 || snprintf(buf, sizeof buf, "%sx1", next) < 0 ||
                !cli_parse_shape(buf, &t))
                return cli_usage_error("compile: --refuse wants BMxBN, got '%s'", next);
            qgtk_refuse_tile(t.m, t.n);
            i++;
        } else if (!strcmp(argv[i], "--dense")) {
            dense = true;
        } else if (!strcmp(argv[i], "--offline")) {
            offline = true;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--progress")) {
            progress = true;
        } else {
            return cli_usage_error("compile: unknown or incomplete option '%s'", argv[i]);
        }
    }
    bool grouped = contiguous_groups || masked_groups;
    if (!grouped) dense = true;

    /* The real device when there is one (so the cache holds what this
     * machine will run), otherwise an offline H100. */
    qg_context *ctx = NULL;
    const qg_driver *drv = NULL;
    CUcontext cu_context = NULL;
    bool pushed = false;
    if (!offline && qgtk_gpu_available() && qg_context_create(&ctx, qgtk_gpu_device()) == QG_SUCCESS)
        pushed = qg__context_cuda(ctx, &drv, &cu_context, NULL) &&
                 drv->cuCtxPushCurrent(cu_context) == CUDA_SUCCESS;
    const bool on_device = ctx != NULL;
    if (!ctx) {
        qg_status s = qg_context_create_offline(&ctx, NULL);
        if (s != QG_SUCCESS) {
            fprintf(stderr, "qgemm: compile: cannot create an offline context: %s\n", qg_last_error());
            return CLI_EXIT_FAIL;
        }
    }
    qg_device_props props;
    qg_context_get_props(ctx, &props);
    char dir[4096];
    const bool have_dir = qg__cache_dir(dir, sizeof dir);
    if (json) {
        printf("{\n  \"command\": \"compile\",\n  \"target\": {\"name\": ");
        cli_json_string(stdout, props.name);
        printf(", \"arch\": \"sm_%d%d\", \"sms\": %d, \"offline\": %s},\n  \"cache_dir\": ",
               props.cc_major, props.cc_minor, props.sm_count, on_device ? "false" : "true");
        cli_json_string(stdout, have_dir ? dir : NULL);
        printf(",\n  \"kernels\": [");
    } else {
        printf("qgemm compile: target %s (sm_%d%d, %d SMs)%s, cache %s\n", props.name,
               props.cc_major, props.cc_minor, props.sm_count, on_device ? "" : " [offline]",
               cli_cache_dir(dir, sizeof dir));
    }
    fflush(stdout);

    /* The problems first, so that progress can say "count / total". */
    cli_shape defaults[CLI_NUM_DEEPSEEK_SHAPES];
    cli_deepseek_shapes(defaults);
    /* dense: the --shape list or the DeepSeek shapes; grouped: up to two
     * kernels (contiguous, masked) per --shape or per bench pair */
    qg_problem problems[3 * CLI_MAX_SHAPES];
    _Static_assert(3 * CLI_MAX_SHAPES >= CLI_NUM_DEEPSEEK_SHAPES + 2 * 2, "compile's problem list");
    int total = 0;
    if (dense) {
        const cli_shape *list = num_shapes ? shapes : defaults;
        int count = num_shapes ? num_shapes : CLI_NUM_DEEPSEEK_SHAPES;
        for (int i = 0; i < count; i++)
            problems[total++] = (qg_problem){QG_GEMM_DENSE, list[i].m, list[i].n, list[i].k, 1, 0, 0};
    }
    /* Grouped problems: the --shape list (M = total rows for contiguous; N, K
     * only for masked), or the bench's (N, K) pairs. */
    int count = num_shapes ? num_shapes : 2;
    for (int i = 0; grouped && i < count; i++) {
        int n = num_shapes ? shapes[i].n : cli_grouped_nk[i][0];
        int k = num_shapes ? shapes[i].k : cli_grouped_nk[i][1];
        if (contiguous_groups) {
            int m = num_shapes ? shapes[i].m : GROUPED_TOTAL_ROWS;
            problems[total++] = (qg_problem){QG_GEMM_GROUPED_CONTIGUOUS, m, n, k,
                                             contiguous_groups, 0, 0};
        }
        if (masked_groups)
            problems[total++] = (qg_problem){QG_GEMM_GROUPED_MASKED, masked_rows, n, k,
                                             masked_groups, masked_rows, 0};
    }
    report r = {.json = json};
    cli_progress_start(&r.progress, "compile", total, progress);
    int failed = 0;
    for (int i = 0; i < total; i++) failed += !compile_one(ctx, &problems[i], forced, &r);
    if (json)
        printf("\n  ],\n  \"total\": %d,\n  \"failed\": %d\n}\n", total, failed);
    else
        printf("qgemm compile: %d kernels, %d failed\n", total, failed);
    if (pushed) {
        CUcontext popped;
        drv->cuCtxPopCurrent(&popped);
    }
    qg_context_destroy(ctx);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
