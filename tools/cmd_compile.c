/*
 * cmd_compile.c -- `qgemm compile`: warm the on-disk kernel cache for the
 * DeepSeek-V3 shapes (or --shape / grouped ones / any kind through --kind, as
 * Python's qgemm.compile(kind=...)), on the real device when there is one,
 * else on an offline H100. Needs no GPU.
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

/* --kind's names, Python's compile(kind=...) names (k_grouped also as
 * k-grouped, the name the lines print). */
static const struct {
    const char *name;
    qg_gemm_kind kind;
} kind_names[] = {
    {"dense", QG_GEMM_DENSE}, {"contiguous", QG_GEMM_GROUPED_CONTIGUOUS},
    {"masked", QG_GEMM_GROUPED_MASKED}, {"psum", QG_GEMM_GROUPED_PSUM},
    {"wgrad", QG_GEMM_WGRAD}, {"k_grouped", QG_GEMM_K_GROUPED}, {"k-grouped", QG_GEMM_K_GROUPED},
};
#define NUM_KIND_NAMES (int)(sizeof kind_names / sizeof kind_names[0])
#define NUM_KINDS 6

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
    /* --family other than fp8: the other families' kernels (compile_families.c) */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--family") && strcmp(argv[i + 1], "fp8"))
            return cli_compile_family(argc, argv);
    cli_shape shapes[CLI_MAX_SHAPES];
    int num_shapes = 0, contiguous_groups = 0, masked_groups = 0, masked_rows = 0;
    bool dense = false, offline = false, json = false, progress = false, accumulate = false;
    bool kinds[NUM_KINDS] = {false}; /* --kind, by qg_gemm_kind */
    int num_kinds = 0, groups = 0;   /* groups: --groups, 0 = not given */
    qg_config config = {0};
    const qg_config *forced = NULL; /* &config after a --config */
    /* The value of each option given once at most, to refuse a second. */
    const char *contiguous_text = NULL, *masked_text = NULL, *config_text = NULL,
               *groups_text = NULL;
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        long v;
        const char **once = !next ? NULL
                            : !strcmp(argv[i], "--grouped-contiguous") ? &contiguous_text
                            : !strcmp(argv[i], "--grouped-masked")     ? &masked_text
                            : !strcmp(argv[i], "--config")             ? &config_text
                            : !strcmp(argv[i], "--groups")             ? &groups_text
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
        } else if (!strcmp(argv[i], "--kind") && next) {
            int found = -1;
            for (int j = 0; j < NUM_KIND_NAMES && found < 0; j++)
                if (!strcmp(next, kind_names[j].name)) found = (int)kind_names[j].kind;
            if (found < 0)
                return cli_usage_error("compile: --kind wants dense, contiguous, masked, psum, "
                                       "wgrad or k_grouped, got '%s'", next);
            if (kinds[found])
                return cli_usage_error("compile: --kind %s given twice", next);
            kinds[found] = true, num_kinds++, i++;
        } else if (!strcmp(argv[i], "--groups") && next) {
            long g;
            if (!cli_parse_int(next, 1, CLI_MAX_GROUPS, &g))
                return cli_usage_error("compile: --groups wants G in 1..%d, got '%s'",
                                       CLI_MAX_GROUPS, next);
            groups = (int)g, i++;
        } else if (!strcmp(argv[i], "--accumulate")) {
            accumulate = true;
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
        } else if (!strcmp(argv[i], "--family") && next && !strcmp(next, "fp8")) {
            i++; /* these kernels */
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
    if (num_kinds) {
        /* --kind names every kind itself: the older options' kinds would
         * make the list ambiguous (which G, which M). */
        if (grouped || dense)
            return cli_usage_error("compile: --kind excludes --grouped-contiguous, "
                                   "--grouped-masked and --dense (use --kind with --groups)");
        if ((kinds[QG_GEMM_WGRAD] || kinds[QG_GEMM_K_GROUPED]) && !num_shapes)
            return cli_usage_error("compile: --kind %s wants --shape MxNxK (M and N of D, K "
                                   "the reduction%s)", kinds[QG_GEMM_WGRAD] ? "wgrad" : "k_grouped",
                                   kinds[QG_GEMM_K_GROUPED] ? "; k_grouped: the sum of the "
                                   "groups' K" : "");
        if (accumulate && !kinds[QG_GEMM_WGRAD] && !kinds[QG_GEMM_K_GROUPED])
            return cli_usage_error("compile: --accumulate is for --kind wgrad or k_grouped");
        if (groups > 1 && num_kinds == 1 && kinds[QG_GEMM_DENSE])
            return cli_usage_error("compile: --groups is for the grouped kinds, not dense");
    } else if (groups_text || accumulate) {
        return cli_usage_error("compile: %s needs --kind", groups_text ? "--groups" : "--accumulate");
    }
    if (!grouped && !num_kinds) dense = true;

    /* The real device when there is one (so the cache holds what this
     * machine will run), otherwise an offline H100. */
    cli_compile_context cc;
    if (!cli_compile_context_open(&cc, offline)) return CLI_EXIT_FAIL;
    qg_context *ctx = cc.ctx;
    const bool on_device = cc.on_device;
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
    qg_problem problems[NUM_KINDS * CLI_MAX_SHAPES];
    _Static_assert(CLI_MAX_SHAPES >= CLI_NUM_DEEPSEEK_SHAPES, "compile's problem list");
    _Static_assert(NUM_KINDS * CLI_MAX_SHAPES >= CLI_NUM_DEEPSEEK_SHAPES + 2 * 2,
                   "compile's problem list");
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
    /* --kind: each kind for each --shape, M, N, K as qg_problem (and Python's
     * compile) read them: contiguous and psum M = total rows, masked M =
     * M_max, k_grouped K = the sum of the groups' K; G from --groups (default
     * 1, as Python's; expected_m 0 = M, as its default). Without --shape: dense the DeepSeek shapes, the
     * contiguous-row kinds the bench's (N, K) pairs at 32768 rows, masked
     * those pairs at M_max 256 (wgrad and k_grouped want --shape, above). */
    for (int kind = 0; kind < NUM_KINDS; kind++) {
        if (!kinds[kind]) continue;
        const bool is_dense = kind == QG_GEMM_DENSE || kind == QG_GEMM_WGRAD;
        int n_list = num_shapes ? num_shapes : is_dense ? CLI_NUM_DEEPSEEK_SHAPES : 2;
        for (int i = 0; i < n_list; i++) {
            qg_problem q = {(qg_gemm_kind)kind, 0, 0, 0, is_dense ? 1 : (groups ? groups : 1), 0, 0};
            if (num_shapes) {
                q.m = shapes[i].m, q.n = shapes[i].n, q.k = shapes[i].k;
            } else if (kind == QG_GEMM_DENSE) {
                q.m = defaults[i].m, q.n = defaults[i].n, q.k = defaults[i].k;
            } else {
                q.m = kind == QG_GEMM_GROUPED_MASKED ? 256 : GROUPED_TOTAL_ROWS;
                q.n = cli_grouped_nk[i][0], q.k = cli_grouped_nk[i][1];
            }
            if (kind == QG_GEMM_WGRAD || kind == QG_GEMM_K_GROUPED) q.accumulate = accumulate;
            problems[total++] = q;
        }
    }
    report r = {.json = json};
    cli_progress_start(&r.progress, "compile", total, progress);
    int failed = 0;
    for (int i = 0; i < total; i++) failed += !compile_one(ctx, &problems[i], forced, &r);
    if (json)
        printf("\n  ],\n  \"total\": %d,\n  \"failed\": %d\n}\n", total, failed);
    else
        printf("qgemm compile: %d kernels, %d failed\n", total, failed);
    cli_compile_context_close(&cc);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
