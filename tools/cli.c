/*
 * cli.c -- the helpers every command of the CLI shares (cli.h): argument
 * parsing, the shape tables, opening the GPU, names for the output. It takes
 * nothing from the command units; they take from it.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
    /* Digits with an optional '-' only (strtol would also take blanks and
     * '+'), and nothing strtol had to clamp (ERANGE). */
    if (!text || !(isdigit((unsigned char)text[0]) ||
                   (text[0] == '-' && isdigit((unsigned char)text[1]))))
        return false;
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno == ERANGE || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool cli_parse_int_field(const char *text, size_t len, long lo, long hi, long *out) {
    char buf[32]; /* any long fits in 20 characters: a longer field is refused, not cut */
    if (len >= sizeof buf) return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    return cli_parse_int(buf, lo, hi, out);
}

int cli_bench_count(const char *opt, const char *next, int *runs, int *warmup) {
    const bool r = !strcmp(opt, "--runs");
    const long lo = r ? CLI_BENCH_MIN_RUNS : CLI_BENCH_MIN_WARMUP;
    const long hi = r ? CLI_BENCH_MAX_RUNS : CLI_BENCH_MAX_WARMUP;
    long v;
    if (!cli_parse_int(next, lo, hi, &v))
        return cli_usage_error("bench: %s wants an integer in [%ld, %ld], got '%s'", r ? "--runs" : "--warmup",
                               lo, hi, next);
    *(r ? runs : warmup) = (int)v;
    return 0;
}

int cli_single_value(const char *cmd, const char *opt, const char *next,
                     const char *const single[], const char *given[], size_t n) {
    for (size_t j = 0; next && j < n; j++) {
        if (strcmp(opt, single[j])) continue;
        if (given[j])
            return cli_usage_error("%s: %s given twice ('%s', then '%s')", cmd, opt, given[j], next);
        given[j] = next;
    }
    return 0;
}

bool cli_compile_context_open(cli_compile_context *c, bool offline) {
    *c = (cli_compile_context){0};
    CUcontext cu_context = NULL;
    if (!offline && qgtk_gpu_available() && qg_context_create(&c->ctx, qgtk_gpu_device()) == QG_SUCCESS)
        c->pushed = qg__context_cuda(c->ctx, &c->drv, &cu_context, NULL) &&
                    c->drv->cuCtxPushCurrent(cu_context) == CUDA_SUCCESS;
    c->on_device = c->ctx != NULL;
    if (!c->ctx && qg_context_create_offline(&c->ctx, NULL) != QG_SUCCESS) {
        fprintf(stderr, "qgemm: compile: cannot create an offline context: %s\n", qg_last_error());
        return false;
    }
    return true;
}

void cli_compile_context_close(cli_compile_context *c) {
    if (c->pushed) {
        CUcontext popped;
        c->drv->cuCtxPopCurrent(&popped);
    }
    qg_context_destroy(c->ctx);
}

bool cli_parse_shape(const char *text, cli_shape *out) {
    long v[3];
    const char *p = text;
    for (int i = 0; i < 3; i++) {
        size_t len = strcspn(p, i < 2 ? "xX" : "");
        if ((i < 2 && p[len] == '\0') || !cli_parse_int_field(p, len, 1, 1L << 30, &v[i]))
            return false;
        p += len + (i < 2);
    }
    *out = (cli_shape){(int)v[0], (int)v[1], (int)v[2]};
    return true;
}

bool cli_parse_groups_rows(const char *text, int *groups, int *rows) {
    long g, m;
    const char *comma = text ? strchr(text, ',') : NULL;
    if (!comma || !cli_parse_int_field(text, (size_t)(comma - text), 1, CLI_MAX_GROUPS, &g) ||
        !cli_parse_int(comma + 1, 1, 1L << 20, &m))
        return false;
    *groups = (int)g, *rows = (int)m;
    return true;
}

const int cli_grouped_nk[2][2] = {{4096, 7168}, {7168, 2048}};

bool cli_parse_config(const char *text, qg_config *out) {
    char buf[128];
    if (strlen(text) >= sizeof buf) return false;
    strcpy(buf, text);
    /* exactly four fields, none empty (strtok would merge ",,") */
    char *field[4];
    int n = 0;
    for (char *t = buf;;) {
        char *comma = strchr(t, ',');
        if (comma) *comma = '\0';
        if (!*t || n == 4) return false; /* an empty field, or a fifth */
        field[n++] = t;
        if (!comma) break;
        t = comma + 1;
    }
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

static const char *usage_command; /* cli_set_command's: whose --help to point at */

void cli_set_command(const char *name) { usage_command = name; }

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("qgemm: ", stderr);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see qgemm %s%s--help)\n", usage_command ? usage_command : "",
            usage_command ? " " : "");
    va_end(ap);
    return CLI_EXIT_USAGE;
}

/* Options that take no value: "--json=1" is refused, not split. */
static const char *const flag_options[] = {"--quick", "--json", "--csv", "--dense", "--offline",
                                           "--progress", "--grouped", "--no-cublas", "--prune",
                                           "--clear", "--help", "--version", "--host",
                                           "--ue8m0", "--clean"};

int cli_split_option_values(int argc, char **argv, char ***out) {
    int extra = 0;
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], "--", 2) && strchr(argv[i], '=')) extra++;
    char **args = malloc(((size_t)argc + (size_t)extra + 1) * sizeof *args);
    if (!args) {
        fprintf(stderr, "qgemm: out of memory\n");
        return -1;
    }
    int n = 0;
    args[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        char *eq = strncmp(argv[i], "--", 2) ? NULL : strchr(argv[i], '=');
        if (!eq) {
            args[n++] = argv[i];
            continue;
        }
        size_t len = (size_t)(eq - argv[i]);
        for (size_t f = 0; f < sizeof flag_options / sizeof flag_options[0]; f++)
            if (strlen(flag_options[f]) == len && !strncmp(argv[i], flag_options[f], len)) {
                free(args);
                cli_usage_error("%s: %.*s takes no value, got '%s'", argv[0], (int)len, argv[i],
                                argv[i]);
                return -1;
            }
        /* argv's strings are writable (C11 5.1.2.2.1): cut at the '='. */
        *eq = '\0';
        args[n++] = argv[i];
        args[n++] = eq + 1;
    }
    args[n] = NULL;
    *out = args;
    return n;
}

void cli_json_string(FILE *f, const char *s) {
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void cli_json_number(FILE *f, const char *fmt, double v) {
    if (isfinite(v)) fprintf(f, fmt, v);
    else fputs("null", f);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_start(cli_progress *p, const char *what, int total, bool forced) {
    p->enabled = forced || isatty(fileno(stderr));
    p->total = total;
    p->start = now_seconds();
    p->what = what;
}

void cli_progress_step(cli_progress *p, int count, const char *label) {
    if (!p->enabled) return;
    fprintf(stderr, "qgemm %s: [%d/%d] %.1f s elapsed, %s\n", p->what, count, p->total,
            now_seconds() - p->start, label);
    fflush(stderr);
}

bool cli_open_gpu_json(qg_context **ctx, const qg_driver **drv, const char *json_command) {
    *ctx = NULL;
    int dev = qgtk_gpu_device();
    char why[1024];
    /* With no Hopper device, still ask for device 0: the library's message
     * says what is wrong (no driver, no device, wrong architecture). */
    qg_status s = qg_context_create(ctx, dev >= 0 ? dev : 0);
    if (s != QG_SUCCESS) {
        const char *e = qg_last_error();
        snprintf(why, sizeof why, "%s", e && *e ? e : qg_status_string(s));
    } else {
        CUcontext cu_context = NULL;
        CUresult r = qg__context_cuda(*ctx, drv, &cu_context, NULL)
                         ? (*drv)->cuCtxPushCurrent(cu_context)
                         : CUDA_ERROR_UNKNOWN;
        if (r == CUDA_SUCCESS) return true;
        snprintf(why, sizeof why, "cannot make the device's context current (CUresult %d)", (int)r);
        qg_context_destroy(*ctx);
        *ctx = NULL;
    }
    fprintf(stderr, "qgemm: no GPU: %s\n", why);
    if (json_command) { /* --json: still one document on stdout, saying why (issue 53) */
        printf("{\n  \"command\": ");
        cli_json_string(stdout, json_command);
        printf(",\n  \"device\": null,\n  \"device_error\": ");
        cli_json_string(stdout, why);
        printf(",\n  \"exit_status\": %d\n}\n", CLI_EXIT_NO_GPU);
        fflush(stdout);
    }
    return false;
}

bool cli_open_gpu(qg_context **ctx, const qg_driver **drv) {
    return cli_open_gpu_json(ctx, drv, NULL);
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
    case QG_GEMM_GROUPED_PSUM: return "psum";
    case QG_GEMM_WGRAD: return "wgrad";
    case QG_GEMM_K_GROUPED: return "k-grouped";
    case QG_GEMM_FP8_BATCHED: return "batched";
    }
    return "?";
}

qg_problem cli_problem_of(const qgtk_problem_data *p) {
    qg_problem q = {p->kind, p->m, p->n, p->k, p->num_groups, 0, 0};
    if (p->kind == QG_GEMM_GROUPED_MASKED) q.expected_m = p->expected_m;
    return q;
}

const char *cli_cache_dir_unsafe(const char *dir, char *why, size_t len) {
    /* Only an existing directory: the library creates a missing one 0700. */
    struct stat st;
    if (stat(dir, &st) != 0) return NULL;
    char reason[128];
    if (!qg__cache_dir_unsafe(dir, reason, sizeof reason)) return NULL;
    snprintf(why, len, "%s: another user could plant or deny its entries, so the library caches "
             "kernels in memory only", reason);
    return why;
}

const char *cli_cache_dir(char *buf, size_t len) {
    /* The library's own rule (src/env.c), so the CLI never disagrees with it. */
    if (!qg__cache_dir(buf, len)) snprintf(buf, len, "none (none of QGEMM_CACHE_DIR, XDG_CACHE_HOME, HOME is set)");
    return buf;
}
