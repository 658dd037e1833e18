/*
 * qgemm.c -- the command-line tool: subcommand dispatch, `check`, `compile`,
 * `info`, and the helpers every subcommand shares (cli.h).
 *
 *   qgemm bench    [options]   qgemm vs cuBLASLt timings (bench.c)
 *   qgemm check    [--quick] [--seed N]
 *   qgemm compile  [--shape MxNxK]... [--grouped-contiguous G]
 *                  [--grouped-masked G,M_max] [--config bm,bn,st,mc]
 *                  [--dense] [--offline]
 *   qgemm info
 *
 * Invariants: see cli.h (exit codes, one-line "no GPU" failure, stdout for
 * results, stderr for progress and errors).
 */
#include "cli.h"

#include "cublaslt.h"

#include <nvrtc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------ */
/* Shared helpers (cli.h)                                                    */
/* ------------------------------------------------------------------------ */

void cli_deepseek_shapes(cli_shape out[CLI_NUM_DEEPSEEK_SHAPES]) {
    static const int ms[3] = {64, 128, 4096};
    static const int nk[6][2] = {{2112, 7168}, {24576, 1536}, {32768, 512},
                                 {7168, 16384}, {4096, 7168},  {7168, 2048}};
    int i = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 6; b++) out[i++] = (cli_shape){ms[a], nk[b][0], nk[b][1]};
}

bool cli_parse_int(const char *text, long lo, long hi, long *out) {
    if (!text || !*text) return false;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (*end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool cli_parse_shape(const char *text, cli_shape *out) {
    long v[3];
    const char *p = text;
    for (int i = 0; i < 3; i++) {
        char *end = NULL;
        v[i] = strtol(p, &end, 10);
        if (end == p || v[i] <= 0 || v[i] > (1L << 30)) return false;
        if (i < 2 && *end != 'x' && *end != 'X') return false;
        if (i == 2 && *end) return false;
        p = end + 1;
    }
    *out = (cli_shape){(int)v[0], (int)v[1], (int)v[2]};
    return true;
}

bool cli_parse_groups_rows(const char *text, int *groups, int *rows) {
    char buf[64];
    long g, m;
    snprintf(buf, sizeof buf, "%s", text ? text : "");
    char *comma = strchr(buf, ',');
    if (!comma) return false;
    *comma = '\0';
    if (!cli_parse_int(buf, 1, CLI_MAX_GROUPS, &g) || !cli_parse_int(comma + 1, 1, 1L << 20, &m))
        return false;
    *groups = (int)g, *rows = (int)m;
    return true;
}

const int cli_grouped_nk[2][2] = {{4096, 7168}, {7168, 2048}};

bool cli_parse_config(const char *text, qg_config *out) {
    char buf[128];
    if (strlen(text) >= sizeof buf) return false;
    strcpy(buf, text);
    char *field[4];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (n < 4) field[n++] = t; else return false;
    long bm, bn, st;
    if (n != 4 || !cli_parse_int(field[0], 1, 1024, &bm) || !cli_parse_int(field[1], 1, 1024, &bn) ||
        !cli_parse_int(field[2], 0, 64, &st))
        return false;
    qg_multicast mc = QG_MULTICAST_NONE;
    int split_k = 0;
    const char *m = field[3];
    if (!strcmp(m, "0") || !strcmp(m, "none")) mc = QG_MULTICAST_NONE;
    else if (!strcmp(m, "1") || !strcmp(m, "a") || !strcmp(m, "A")) mc = QG_MULTICAST_A;
    else if (!strcmp(m, "2") || !strcmp(m, "b") || !strcmp(m, "B")) mc = QG_MULTICAST_B;
    else if (!strcmp(m, "k2") || !strcmp(m, "K2")) split_k = 2;
    else return false;
    memset(out, 0, sizeof *out);
    out->block_m = (int)bm;
    out->block_n = (int)bn;
    out->num_stages = (int)st;
    out->multicast = mc;
    out->split_k = split_k;
    return true;
}

qg_status cli_config_for(const qg_context *ctx, const qg_problem *q, const qg_config *forced,
                         qg_config *out) {
    if (!forced) return qg_select_config(ctx, q, out);
    *out = *forced;
    return qg_complete_config(ctx, q, out);
}

const char *cli_cluster_name(const qg_config *cfg) {
    if (cfg->split_k > 1) return "K2";
    switch (cfg->multicast) {
    case QG_MULTICAST_NONE: return "none";
    case QG_MULTICAST_A: return "A";
    case QG_MULTICAST_B: return "B";
    }
    return "?";
}

uint64_t cli_fresh_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* Keep it short enough to retype. */
    return ((uint64_t)ts.tv_sec * 1000003u + (uint64_t)ts.tv_nsec / 1000u) % 1000000007u;
}

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("qgemm: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see qgemm --help)\n", stderr);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

bool cli_open_gpu(qg_context **ctx, const qg_driver **drv) {
    *ctx = NULL;
    int dev = qg__gpu_device();
    /* With no Hopper device, still ask for device 0: the library's message
     * says what is wrong (no driver, no device, wrong architecture). */
    qg_status s = qg_context_create(ctx, dev >= 0 ? dev : 0);
    if (s != QG_SUCCESS) {
        const char *why = qg_last_error();
        fprintf(stderr, "qgemm: no GPU: %s\n", why && *why ? why : qg_status_string(s));
        return false;
    }
    s = qg__driver_load(drv);
    CUresult r = s == QG_SUCCESS ? (*drv)->cuCtxPushCurrent((*ctx)->cu_context) : CUDA_ERROR_UNKNOWN;
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "qgemm: no GPU: cannot make the device's context current (CUresult %d)\n",
                (int)r);
        qg_context_destroy(*ctx);
        *ctx = NULL;
        return false;
    }
    return true;
}

void cli_close_gpu(qg_context *ctx, const qg_driver *drv) {
    if (!ctx) return;
    CUcontext popped;
    drv->cuCtxPopCurrent(&popped);
    qg_context_destroy(ctx);
}

const char *cli_kind_name(qg_gemm_kind kind) {
    switch (kind) {
    case QG_GEMM_DENSE: return "dense";
    case QG_GEMM_GROUPED_CONTIGUOUS: return "contiguous";
    case QG_GEMM_GROUPED_MASKED: return "masked";
    }
    return "?";
}

qg_problem cli_problem_of(const qg_problem_data *p) {
    qg_problem q = {p->kind, p->m, p->n, p->k, p->num_groups, 0};
    if (p->kind == QG_GEMM_GROUPED_MASKED) q.expected_m = p->expected_m;
    return q;
}

/* The disk cache directory, by the rule of src/jit.c: $QGEMM_CACHE_DIR, else
 * $HOME/.cache/qgemm, else none. */
static const char *cache_dir(char *buf, size_t len) {
    const char *dir = getenv("QGEMM_CACHE_DIR"), *home = getenv("HOME");
    if (dir && *dir) snprintf(buf, len, "%s", dir);
    else if (home && *home) snprintf(buf, len, "%s/.cache/qgemm", home);
    else snprintf(buf, len, "none (neither QGEMM_CACHE_DIR nor HOME is set)");
    return buf;
}

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
    {QG_GEMM_DENSE, 100, 2112, 7296, 1}, /* split-K, 57 K blocks: 29 + 28 */
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

/* Run one case; print one line; @return true when it passed. */
static bool check_one(qg_context *ctx, const check_case *c, uint64_t seed) {
    qg_problem_spec spec = {.kind = c->kind, .m = c->m, .n = c->n, .k = c->k,
                            .num_groups = c->groups, .seed = seed, .scale_spread = 3,
                            .masked_extremes = c->kind == QG_GEMM_GROUPED_MASKED};
    char label[64];
    snprintf(label, sizeof label, "%-10s %dx%dx%d", cli_kind_name(c->kind), c->m, c->n, c->k);
    if (c->groups > 1) snprintf(label + strlen(label), sizeof label - strlen(label), " G=%d",
                                c->groups);
    qg_problem_data *p = NULL;
    qg_config cfg = {0};
    qg_check_result res;
    qg_status s = qg__problem_create(&p, ctx, &spec);
    const char *stage = "creating the problem";
    if (s == QG_SUCCESS) {
        qg_problem q = cli_problem_of(p);
        stage = "selecting a configuration";
        s = qg_select_config(ctx, &q, &cfg);
    }
    if (s == QG_SUCCESS) {
        qg_gemm_args args = qg__problem_args(p);
        stage = "poisoning D";
        s = qg__problem_poison(ctx, p, NULL);
        if (s == QG_SUCCESS) {
            stage = "running the GEMM";
            s = qg__gemm_launch(ctx, c->kind, &args, NULL, NULL);
        }
        if (s == QG_SUCCESS) {
            stage = "checking the result";
            s = qg__problem_check(ctx, p, &res);
        }
    }
    if (s != QG_SUCCESS) {
        printf("FAIL %-36s error while %s: %s\n", label, stage, qg_last_error());
        qg__problem_free(p);
        return false;
    }
    const bool ok = qg__check_passed(&res, CLI_DIFF_BOUND);
    printf("%s %-36s diff %.3e  (bm %d bn %d st %d mc %s)%s", ok ? "ok  " : "FAIL", label,
           res.diff, cfg.block_m, cfg.block_n, cfg.num_stages, cli_cluster_name(&cfg),
           res.gpu_reference ? " [gpu ref]" : "");
    if (c->groups > 1) printf("  worst group %.3e", res.group_diff_max);
    char desc[256];
    if (!ok) printf("  %s", qg__check_describe(&res, desc, sizeof desc));
    printf("\n");
    fflush(stdout);
    qg__problem_free(p);
    return ok;
}

static int cmd_check(int argc, char **argv) {
    bool quick = false;
    uint64_t seed = cli_fresh_seed();
    for (int i = 1; i < argc; i++) {
        long v;
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (!cli_parse_int(argv[i + 1], 0, 2147483647L, &v))
                return cli_usage_error("check: --seed wants a non-negative integer, got '%s'",
                                       argv[i + 1]);
            seed = (uint64_t)v, i++;
        } else return cli_usage_error("check: unknown or incomplete option '%s'", argv[i]);
    }
    qg_context *ctx;
    const qg_driver *drv;
    if (!cli_open_gpu(&ctx, &drv)) return CLI_EXIT_USAGE;
    const check_case *cases = quick ? quick_cases : full_cases;
    int count = quick ? (int)(sizeof quick_cases / sizeof quick_cases[0])
                      : (int)(sizeof full_cases / sizeof full_cases[0]);
    printf("qgemm check: %d cases, seed %llu, bound diff < %.0e\n", count,
           (unsigned long long)seed, CLI_DIFF_BOUND);
    int failed = 0;
    for (int i = 0; i < count; i++) failed += !check_one(ctx, &cases[i], seed + (uint64_t)i);
    printf("qgemm check: %d passed, %d failed (reproduce with --seed %llu)\n", count - failed,
           failed, (unsigned long long)seed);
    cli_close_gpu(ctx, drv);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* qgemm compile                                                             */
/* ------------------------------------------------------------------------ */

/* Contiguous problems' default total rows (the (N, K) pairs are
 * cli_grouped_nk, as in `qgemm bench --grouped`). */
#define GROUPED_TOTAL_ROWS 32768

/* Compile q's kernel: the forced configuration when `forced` is not NULL,
 * else the heuristic's. */
static bool compile_one(qg_context *ctx, const qg_problem *q, const qg_config *forced) {
    qg_config cfg = {0};
    qg_kernel_info info;
    memset(&info, 0, sizeof info);
    char label[64];
    snprintf(label, sizeof label, "%-10s %dx%dx%d", cli_kind_name(q->kind), q->m, q->n, q->k);
    if (q->num_groups > 1)
        snprintf(label + strlen(label), sizeof label - strlen(label), " G=%d", q->num_groups);
    qg_status s = cli_config_for(ctx, q, forced, &cfg);
    if (s == QG_SUCCESS) {
        fprintf(stderr, "compiling kernel for %s ...\n", label);
        s = qg_compile(ctx, q, &cfg, &info);
    }
    if (s != QG_SUCCESS) {
        printf("FAIL %-34s %s: %s\n", label, qg_status_string(s), qg_last_error());
        return false;
    }
    static const char *const hit[3] = {"compiled", "memory", "disk"};
    printf("ok   %-34s bm %3d bn %3d st %d mc %-4s  regs %3d spill %d/%d stack %d  %8.1f ms  %-8s "
           "%s\n",
           label, cfg.block_m, cfg.block_n, cfg.num_stages, cli_cluster_name(&cfg),
           info.registers, info.spill_store_bytes, info.spill_load_bytes, info.stack_frame_bytes,
           info.compile_ms, info.cache_hit >= 0 && info.cache_hit <= 2 ? hit[info.cache_hit] : "?",
           info.key);
    fflush(stdout);
    return true;
}

static int cmd_compile(int argc, char **argv) {
    cli_shape shapes[CLI_MAX_SHAPES];
    int num_shapes = 0, contiguous_groups = 0, masked_groups = 0, masked_rows = 0;
    bool dense = false, offline = false;
    qg_config config = {0};
    const qg_config *forced = NULL; /* &config after a --config */
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        long v;
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
        } else if (!strcmp(argv[i], "--dense")) {
            dense = true;
        } else if (!strcmp(argv[i], "--offline")) {
            offline = true;
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
    bool pushed = false;
    if (!offline && qg__gpu_available() && qg_context_create(&ctx, qg__gpu_device()) == QG_SUCCESS)
        pushed = qg__driver_load(&drv) == QG_SUCCESS &&
                 drv->cuCtxPushCurrent(ctx->cu_context) == CUDA_SUCCESS;
    if (!ctx) {
        qg_status s = qg_context_create_offline(&ctx, NULL);
        if (s != QG_SUCCESS) {
            fprintf(stderr, "qgemm: compile: cannot create an offline context: %s\n", qg_last_error());
            return CLI_EXIT_FAIL;
        }
    }
    qg_device_props props;
    qg_context_get_props(ctx, &props);
    char dir[512];
    printf("qgemm compile: target %s (sm_%d%d, %d SMs)%s, cache %s\n", props.name, props.cc_major,
           props.cc_minor, props.sm_count, ctx->offline ? " [offline]" : "",
           cache_dir(dir, sizeof dir));
    fflush(stdout);

    cli_shape defaults[CLI_NUM_DEEPSEEK_SHAPES];
    cli_deepseek_shapes(defaults);
    int failed = 0, total = 0;
    if (dense) {
        const cli_shape *list = num_shapes ? shapes : defaults;
        int count = num_shapes ? num_shapes : CLI_NUM_DEEPSEEK_SHAPES;
        for (int i = 0; i < count; i++, total++) {
            qg_problem q = {QG_GEMM_DENSE, list[i].m, list[i].n, list[i].k, 1, 0};
            failed += !compile_one(ctx, &q, forced);
        }
    }
    /* Grouped problems: the --shape list (M = total rows for contiguous; N, K
     * only for masked), or the bench's (N, K) pairs. */
    int count = num_shapes ? num_shapes : 2;
    for (int i = 0; grouped && i < count; i++) {
        int n = num_shapes ? shapes[i].n : cli_grouped_nk[i][0];
        int k = num_shapes ? shapes[i].k : cli_grouped_nk[i][1];
        if (contiguous_groups) {
            int m = num_shapes ? shapes[i].m : GROUPED_TOTAL_ROWS;
            qg_problem q = {QG_GEMM_GROUPED_CONTIGUOUS, m, n, k, contiguous_groups, 0};
            failed += !compile_one(ctx, &q, forced);
            total++;
        }
        if (masked_groups) {
            qg_problem q = {QG_GEMM_GROUPED_MASKED, masked_rows, n, k, masked_groups, masked_rows};
            failed += !compile_one(ctx, &q, forced);
            total++;
        }
    }
    printf("qgemm compile: %d kernels, %d failed\n", total, failed);
    if (pushed) {
        CUcontext popped;
        drv->cuCtxPopCurrent(&popped);
    }
    qg_context_destroy(ctx);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* qgemm info                                                                */
/* ------------------------------------------------------------------------ */

static int cmd_info(int argc, char **argv) {
    (void)argv;
    if (argc > 1) return cli_usage_error("info takes no options");
    int nvrtc_major = 0, nvrtc_minor = 0;
    nvrtcVersion(&nvrtc_major, &nvrtc_minor);
    char dir[512];
    printf("library:     qgemm %s (header %s)\n", qg_version_string(), QG_VERSION_STRING);
    printf("nvrtc:       %d.%d\n", nvrtc_major, nvrtc_minor);
    printf("cache dir:   %s\n", cache_dir(dir, sizeof dir));

    char why[512] = "";
    size_t lt_version = lt_probe_version(why, sizeof why);
    if (lt_version) printf("cuBLASLt:    %zu\n", lt_version);
    else printf("cuBLASLt:    unavailable (%s)\n", why);

    if (!qg__gpu_available()) {
        printf("device:      none (%s)\n", qg__gpu_status_line());
        return CLI_EXIT_OK;
    }
    qg_context *ctx = NULL;
    if (qg_context_create(&ctx, qg__gpu_device()) != QG_SUCCESS) {
        printf("device:      unusable (%s)\n", qg_last_error());
        return CLI_EXIT_OK;
    }
    const qg_driver *drv = NULL;
    int driver_version = 0;
    if (qg__driver_load(&drv) == QG_SUCCESS) drv->cuDriverGetVersion(&driver_version);
    qg_device_props pr;
    qg_context_get_props(ctx, &pr);
    printf("device:      %d: %s\n", ctx->device, pr.name);
    printf("driver:      CUDA %d.%d\n", driver_version / 1000, driver_version % 1000 / 10);
    printf("arch:        sm_%d%d\n", pr.cc_major, pr.cc_minor);
    printf("SMs:         %d (kernels use %d)\n", pr.sm_count, qg_context_get_num_sms(ctx));
    printf("SM clock:    %d MHz\n", pr.clock_khz / 1000);
    printf("smem optin:  %zu bytes per block\n", pr.smem_optin_bytes);
    printf("L2:          %.1f MiB\n", (double)pr.l2_bytes / (1 << 20));
    qg_context_destroy(ctx);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* main                                                                      */
/* ------------------------------------------------------------------------ */

static void usage(FILE *f) {
    fprintf(f,
        "usage: qgemm <command> [options]\n"
        "\n"
        "Block-scaled FP8 GEMMs for NVIDIA Hopper (sm_90a), version %s.\n"
        "\n"
        "commands:\n"
        "  bench     time qgemm against cuBLASLt on the DeepSeek-V3 shapes\n"
        "            --shape MxNxK   (repeatable; default: 18 shapes, M in {64,128,4096})\n"
        "            --csv | --json  machine-readable rows instead of the table\n"
        "            --runs N        timed runs per GEMM, median reported (>= 20, default 30)\n"
        "            --warmup N      untimed runs first (>= 3, default 5)\n"
        "            --grouped       MoE tables: contiguous and masked grouped GEMMs\n"
        "            --grouped-contiguous G,M   a contiguous table instead: G experts of M\n"
        "                            rows each (padded to the alignment) for each\n"
        "                            --shape's N and K, beside dense qgemm at G x M rows\n"
        "            --grouped-masked G,M_max[,M]   a masked table instead: G groups of\n"
        "                            M_max rows, M of them valid (default all), for\n"
        "                            each --shape's N and K (both tables: give both)\n"
        "            --config bm,bn,stages,mc   force a kernel configuration (mc: none|a|b\n"
        "                            multicast, or k2: the cluster's 2 CTAs split K)\n"
        "            --seed N        input seed (default: from the clock, printed)\n"
        "            --no-cublas     time qgemm alone\n"
        "            --chain N       instead of the table: chains of N (2..16) GEMMs back to\n"
        "                            back on distinct inputs, per GEMM without and with\n"
        "                            programmatic dependent launch (default: M <= 128)\n"
        "            --flush clean|write  L2 flush before each timed run: write then read\n"
        "                            2x L2 (default), or the write alone, whose dirty lines\n"
        "                            the timed kernel writes back\n"
        "  check     correctness sweep against an exact fp64 reference (exit 1 on failure)\n"
        "            --quick         6 small cases (for compute-sanitizer)\n"
        "            --seed N        input seed (default: from the clock, printed)\n"
        "  compile   warm the on-disk kernel cache (works without a GPU)\n"
        "            --shape MxNxK   (repeatable; default: the 18 DeepSeek-V3 shapes)\n"
        "            --grouped-contiguous G    contiguous grouped kernels (M = total rows)\n"
        "            --grouped-masked G,M_max  masked grouped kernels\n"
        "            --config bm,bn,stages,mc   this configuration instead of the heuristic's\n"
        "            --dense         also dense kernels when a grouped option is given\n"
        "            --offline       compile for an offline H100 even if a GPU is present\n"
        "  info      device, library, NVRTC and cuBLASLt versions, cache directory\n"
        "\n"
        "options: --help, --version\n"
        "environment: QGEMM_CACHE_DIR (kernel cache), QGEMM_JIT_DEBUG, QGEMM_PRINT_CONFIG\n"
        "exit status: 0 ok, 1 a check failed, 2 usage error or no usable GPU\n",
        qg_version_string());
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("qgemm %s\n", qg_version_string());
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "bench")) return cli_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "compile")) return cmd_compile(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    return cli_usage_error("unknown command '%s'", cmd);
}
