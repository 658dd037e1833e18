/*
 * fuzz_cli.c -- the command-line tool's parsers under arbitrary text: the
 * value parsers of tools/cli.c (integers, MxNxK, G,M_max, bm,bn,stages,mc)
 * with their invariants (an accepted value is in range and is what the whole
 * text says: nothing cut, nothing clamped), and the argument parsing of
 * `qgemm bench` and `qgemm check` with NUL-separated argv (on a machine
 * without a GPU only: an accepted command line then stops at "no GPU").
 */
#include "fuzz.h"
#include "cli.h"

#include <ctype.h>
#include <string.h>

fuzz_figures fuzz_stats = {"cli", 0, 0, 0};
static bool no_gpu;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    no_gpu = !qgtk_gpu_available();
    atexit(fuzz_print_figures);
    return 0;
}

/* The digits (optional '-') of [s, s + len) as a long long, for the
 * invariants; false when s is not such a number. */
static bool decimal(const char *s, size_t len, long long *out) {
    bool neg = len > 1 && s[0] == '-';
    size_t i = neg;
    if (len == 0) return false;
    for (size_t j = i; j < len; j++)
        if (!isdigit((unsigned char)s[j])) return false;
    while (i + 1 < len && s[i] == '0') i++; /* leading zeros say nothing */
    if (len - i > 18) return false;         /* no accepted value is that long */
    long long v = 0;
    for (; i < len; i++) v = v * 10 + (s[i] - '0');
    *out = neg ? -v : v;
    return true;
}

static void count(bool accepted) {
    if (accepted) fuzz_stats.accepted++;
    else fuzz_stats.clean_errors++;
}

static void parsers(const char *s) {
    long v;
    long long w;
    const long los[] = {0, 1, 2, -5}, his[] = {2147483647L, 16, 1024, 5};
    for (int r = 0; r < 4; r++) {
        bool ok = cli_parse_int(s, los[r], his[r], &v);
        if (ok && (v < los[r] || v > his[r] || !decimal(s, strlen(s), &w) || w != v)) abort();
        count(ok);
    }
    cli_shape sh;
    bool ok = cli_parse_shape(s, &sh);
    if (ok) {
        const char *x1 = strpbrk(s, "xX"), *x2 = x1 ? strpbrk(x1 + 1, "xX") : NULL;
        long long a, b, c;
        if (!x1 || !x2 || !decimal(s, (size_t)(x1 - s), &a) ||
            !decimal(x1 + 1, (size_t)(x2 - x1 - 1), &b) || !decimal(x2 + 1, strlen(x2 + 1), &c) ||
            a != sh.m || b != sh.n || c != sh.k || sh.m < 1 || sh.n < 1 || sh.k < 1 ||
            sh.m > (1 << 30) || sh.n > (1 << 30) || sh.k > (1 << 30))
            abort();
    }
    count(ok);
    int g = 0, m = 0;
    ok = cli_parse_groups_rows(s, &g, &m);
    if (ok) {
        const char *comma = strchr(s, ',');
        long long a, b;
        if (!comma || !decimal(s, (size_t)(comma - s), &a) ||
            !decimal(comma + 1, strlen(comma + 1), &b) || a != g || b != m || g < 1 ||
            g > CLI_MAX_GROUPS || m < 1 || m > (1 << 20))
            abort();
    }
    count(ok);
    qg_config cfg;
    ok = cli_parse_config(s, &cfg);
    if (ok && (cfg.block_m < 1 || cfg.block_m > 1024 || cfg.block_n < 1 || cfg.block_n > 1024 ||
               cfg.num_stages < 0 || cfg.num_stages > 64))
        abort();
    count(ok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_stats.cases++;
    if (size == 0 || size > 4096) return 0;
    /* argv: the NUL-separated strings after the first byte (the command). */
    char *text = malloc(size + 1);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    char *argv[18];
    int argc = 0;
    static char cmd_bench[] = "bench", cmd_check[] = "check";
    argv[argc++] = data[0] & 1 ? cmd_check : cmd_bench;
    for (char *p = text; p < text + size - 1 && argc < 17; p += strlen(p) + 1) argv[argc++] = p;
    argv[argc] = NULL;
    for (int i = 1; i < argc; i++) parsers(argv[i]);
    if (no_gpu && (data[0] & 2)) {
        int rc = data[0] & 1 ? cli_check(argc, argv) : cli_bench(argc, argv);
        /* without a GPU every path ends in a usage error (2) or "no usable GPU" (3) */
        if (rc != CLI_EXIT_USAGE && rc != CLI_EXIT_NO_GPU) abort();
    }
    free(text);
    return 0;
}
