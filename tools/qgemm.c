/*
 * qgemm.c -- the command-line tool's main: usage and dispatch to one unit per
 * command (declared in cli.h); the helpers they share are tools/cli.c.
 *
 *   qgemm bench    [options]   qgemm vs cuBLASLt timings (bench.c)
 *   qgemm check    [--quick] [--seed N]                   (cmd_check.c)
 *   qgemm compile  [--shape MxNxK]... [--grouped-contiguous G]
 *                  [--grouped-masked G,M_max] [--config bm,bn,st,mc]
 *                  [--dense] [--offline] [--refuse BMxBN: test fault] (cmd_compile.c)
 *   qgemm info                                            (cmd_info.c)
 *
 * Invariants: see cli.h (exit codes, one-line "no GPU" failure, stdout for
 * results, stderr for progress and errors).
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

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
        "  cache     the kernel cache's directory, size and limit (QGEMM_CACHE_MAX_MB)\n"
        "            --prune         evict least recently used kernels down to the limit\n"
        "            --clear         remove every cached kernel\n"
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
    if (!strcmp(cmd, "check")) return cli_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "compile")) return cli_compile(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return cli_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "cache")) return cli_cache(argc - 1, argv + 1);
    return cli_usage_error("unknown command '%s'", cmd);
}
