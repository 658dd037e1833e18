/*
 * qgemm.c -- the command-line tool's main: usage and dispatch to one unit per
 * command (declared in cli.h); the helpers they share are tools/cli.c.
 *
 *   qgemm bench    [options]   qgemm vs cuBLASLt timings; --host: the C
 *                              API's CPU cost per call (bench.c);
 *                  --family F [options]: the other families (bench_families.c)
 *   qgemm check    [--family F]... [--quick] [--seed N] [--json] [--progress]
 *                              (cmd_check.c, cmd_check_families.c)
 *   qgemm compile  [--shape MxNxK]... [--grouped-contiguous G]
 *                  [--grouped-masked G,M_max] [--config bm,bn,st,mc]
 *                  [--kind K [--groups G] [--accumulate]]...
 *                  [--dense] [--offline] [--json] [--progress]
 *                  [--refuse BMxBN: test fault]           (cmd_compile.c)
 *   qgemm compile  --family F [--shape S]... [--splits S] [--offline] [--json]
 *                                                         (compile_families.c)
 *   qgemm info     [--json]                               (cmd_info.c)
 *   qgemm cache    [--prune | --clear]                    (cmd_cache.c)
 *
 * `qgemm --help` prints the overview, `qgemm CMD --help` the command's
 * options; --option=value is split into --option value here, before any
 * command parses its arguments.
 *
 * Invariants: see cli.h (exit codes, one-line "no GPU" failure, stdout for
 * results, stderr for progress and errors).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* main                                                                      */
/* ------------------------------------------------------------------------ */

/* Each command's section of the help: `qgemm CMD --help` prints its own. */
static const struct {
    const char *name, *summary, *options;
} commands[] = {
    {"bench", "time qgemm against cuBLASLt on the DeepSeek-V3 shapes (FP8), or another family",
     "  --family F      fp8 (default: the FP8 GEMMs, the options below), or bf16,\n"
     "                  mqa, paged-mqa, hc, cast: that family's kernels, checked on\n"
     "                  16 sampled rows, then timed as the FP8 ones (CUDA events\n"
     "                  after an L2 flush, median): us, TFLOPS, GB/s; its --shape:\n"
     "                    bf16       MxNxK (N % 8 = 0)  --layout nt|nn|tn|tt (default nt)\n"
     "                               --out bf16|fp32 (D; default bf16)\n"
     "                    mqa        SQxSKVxHxD (H 32|64, D 32|64|128; every query\n"
     "                               scores all SKV keys)  --out fp32|bf16  --clean\n"
     "                    paged-mqa  BxNxHxDxL (batch, next_n 1|2, H, D, average\n"
     "                               context length)  --out fp32|bf16  --clean\n"
     "                    hc         MxNxK (N 8|16|24|32, K % 64 = 0)  --splits S\n"
     "                    cast       MxK  --cast per-token|per-block|per-channel|silu-mul\n"
     "                               (default per-token)  --in bf16|fp32  --ue8m0\n"
     "                  with --runs, --warmup, --flush, --seed, --json as below\n"
     "  --shape MxNxK   (repeatable; default: 18 shapes, M in {64,128,4096})\n"
     "  --csv | --json  machine-readable rows instead of the table\n"
     "  --runs N        timed runs per GEMM, median reported (20..100000, default 30)\n"
     "  --warmup N      untimed runs first (3..100000, default 5)\n"
     "  --grouped       MoE tables: contiguous and masked grouped GEMMs\n"
     "  --grouped-contiguous G,M   a contiguous table instead: G experts of M\n"
     "                  rows each (padded to the alignment) for each\n"
     "                  --shape's N and K, beside dense qgemm at G x M rows\n"
     "  --grouped-masked G,M_max[,M]   a masked table instead: G groups of\n"
     "                  M_max rows, M of them valid (default all), for\n"
     "                  each --shape's N and K (both tables: give both)\n"
     "  --config bm,bn,stages,mc   force a kernel configuration (mc: none|a|b\n"
     "                  multicast, or k2: the cluster's 2 CTAs split K)\n"
     "  --seed N        input seed, 0..2147483647 (default: from the clock, printed)\n"
     "  --no-cublas     time qgemm alone\n"
     "  --chain N       instead of the table: chains of N (2..16) GEMMs back to\n"
     "                  back on distinct inputs, per GEMM without and with\n"
     "                  programmatic dependent launch (default: M <= 128)\n"
     "  --flush clean|write  L2 flush before each timed run: write then read\n"
     "                  2x L2 (default), or the write alone, whose dirty lines\n"
     "                  the timed kernel writes back\n"
     "  --host          instead of kernel times: the C API's CPU cost of a call\n"
     "                  (qg_ call to return, the launch enqueued, cached kernel),\n"
     "                  median, p10 and p90 of --host-calls calls per --shape, or\n"
     "                  per row of the --grouped-contiguous / --grouped-masked\n"
     "                  tables; the stream is drained every 200 calls outside the\n"
     "                  timing, D checked after the calls (--warmup default 100)\n"
     "  --host-calls N  timed calls per problem for --host (implies it;\n"
     "                  100..10000000, default 10000)\n"},
    {"check", "correctness sweep against an exact fp64 reference (exit 1 on failure)",
     "  --family F      the families to check (repeatable, or a comma list): fp8,\n"
     "                  bf16, mqa, paged-mqa, hc, cast, or all (the default)\n"
     "  --quick         a few small cases per family (for compute-sanitizer)\n"
     "  --seed N        input seed, 0..2147483647 (default: from the clock, printed)\n"
     "  --json          one JSON document on stdout instead of the lines\n"
     "  --progress      a progress line per case before it runs (count / total,\n"
     "                  elapsed, the case) on stderr\n"},
    {"compile", "warm the on-disk kernel cache (works without a GPU)",
     "  --shape MxNxK   (repeatable; default: the 18 DeepSeek-V3 shapes)\n"
     "  --grouped-contiguous G    contiguous grouped kernels (M = total rows)\n"
     "  --grouped-masked G,M_max  masked grouped kernels\n"
     "  --kind KIND     the kernels of KIND for each --shape, as Python's\n"
     "                  compile(kind=...): dense, contiguous (M = total rows),\n"
     "                  masked (M = M_max), psum (M = total rows), wgrad (weight\n"
     "                  gradient), k_grouped (K = the groups' K summed); repeatable;\n"
     "                  wgrad and k_grouped want --shape; excludes the two below\n"
     "  --groups G      groups of the grouped --kind kernels (default 1)\n"
     "  --accumulate    wgrad, k_grouped: the D = C + A B^T kernels\n"
     "  --config bm,bn,stages,mc   this configuration instead of the heuristic's\n"
     "  --dense         also dense kernels when a grouped option is given\n"
     "  --offline       compile for an offline H100 even if a GPU is present\n"
     "  --family F      fp8 (default: the options above), or bf16, mqa, paged-mqa,\n"
     "                  hc, cast: every variant of that family's kernels for each\n"
     "                  --shape in the family's form (see qgemm bench --help;\n"
     "                  default: bench --family F's shapes); hc: --splits S\n"
     "  --json          one JSON document on stdout instead of the lines\n"
     "  --progress      a progress line per kernel (count / total, elapsed) on\n"
     "                  stderr even when stderr is not a terminal\n"},
    {"info", "device, library, NVRTC and cuBLASLt versions, cache directory",
     "  --json          one JSON document on stdout instead of the lines\n"},
    {"cache", "the kernel cache's directory, size and limit (QGEMM_CACHE_MAX_MB)",
     "  --prune         evict least recently used kernels down to the limit\n"
     "  --clear         remove every cached kernel\n"},
};
#define NUM_COMMANDS (int)(sizeof commands / sizeof commands[0])

static const char footer[] =
    "options are also accepted as --option=value\n"
    "environment:\n"
    "  QGEMM_CACHE_DIR     the kernel cache's directory (default $XDG_CACHE_HOME/qgemm,\n"
    "                      else $HOME/.cache/qgemm)\n"
    "  XDG_CACHE_HOME      an absolute path: the default cache directory is under it\n"
    "  QGEMM_CACHE_MAX_MB  the cache's size limit in MiB (default 1024; 0: no limit)\n"
    "  QGEMM_NVRTC_DIR     a directory holding libnvrtc.so.* (searched first)\n"
    "  QGEMM_JIT_DEBUG     1: print compiles and cache hits on stderr\n"
    "  QGEMM_JIT_DUMP      a directory: write each kernel's <key>.cu and <key>.ptx there\n"
    "  QGEMM_PRINT_CONFIG  1: print each chosen configuration on stderr\n"
    "exit status: 0 ok, 1 a check or compile failed, 2 usage error, 3 no usable GPU\n";

/* The overview: the commands, one line each. */
static void usage(FILE *f) {
    fprintf(f,
            "usage: qgemm <command> [options]\n"
            "\n"
            "Block-scaled FP8 GEMMs, BF16 GEMMs, the DeepSeek-V3.2 indexer and casts for\n"
            "NVIDIA Hopper (sm_90a), version %s.\n"
            "\n"
            "commands:\n",
            qg_version_string());
    for (int i = 0; i < NUM_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'qgemm <command> --help' lists the command's options.\n"
               "options: --help, --version\n%s", footer);
}

static void command_usage(int c) {
    printf("usage: qgemm %s [options]\n\n%s.\n\noptions:\n%s  --help          this text\n\n%s",
           commands[c].name, commands[c].summary, commands[c].options, footer);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    int c = 0;
    while (c < NUM_COMMANDS && strcmp(cmd, commands[c].name)) c++;
    const bool help = !strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help");
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (c < NUM_COMMANDS) command_usage(c);
            else if (help || !strcmp(cmd, "--version")) usage(stdout);
            else return cli_usage_error("unknown command '%s'", cmd); /* not hidden by --help */
            return CLI_EXIT_OK;
        }
    if (help) {
        if (argc > 2) {
            for (c = 0; c < NUM_COMMANDS && strcmp(argv[2], commands[c].name);) c++;
            if (c == NUM_COMMANDS) return cli_usage_error("help: unknown command '%s'", argv[2]);
            command_usage(c);
        } else {
            usage(stdout);
        }
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("qgemm %s\n", qg_version_string());
        return CLI_EXIT_OK;
    }
    if (c == NUM_COMMANDS) return cli_usage_error("unknown command '%s'", cmd);
    cli_set_command(commands[c].name);
    /* --option=value becomes --option value, so every command's parser sees
     * one form. */
    char **args = NULL;
    int n = cli_split_option_values(argc - 1, argv + 1, &args);
    if (n < 0) return CLI_EXIT_USAGE;
    int rc;
    if (!strcmp(cmd, "bench")) rc = cli_bench(n, args);
    else if (!strcmp(cmd, "check")) rc = cli_check(n, args);
    else if (!strcmp(cmd, "compile")) rc = cli_compile(n, args);
    else if (!strcmp(cmd, "info")) rc = cli_info(n, args);
    else rc = cli_cache(n, args);
    free(args);
    return rc;
}
