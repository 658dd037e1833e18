/* SPDX-License-Identifier: MIT */
/*
 * cmd_cache.c -- `qgemm cache`: where the kernel cache is, what it holds and
 * its size limit; --prune evicts least-recently-used kernels down to the
 * limit (what the library does after each write), --clear removes them all.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

int cli_cache(int argc, char **argv) {
    bool prune = false, clear = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--prune")) prune = true;
        else if (!strcmp(argv[i], "--clear")) clear = true;
        else return cli_usage_error("cache: unknown option '%s' (--prune, --clear)", argv[i]);
    }
    if (prune && clear) return cli_usage_error("cache: --prune and --clear exclude each other");
    char dir[4096];
    if (!qg__cache_dir(dir, sizeof dir)) {
        printf("cache dir:   %s\n", cli_cache_dir(dir, sizeof dir));
        return CLI_EXIT_OK;
    }
    bool limit_valid;
    uint64_t limit = qg__cache_limit_bytes_valid(&limit_valid);
    qg_cache_usage removed = {0, 0}, kept = {0, 0};
    /* Listing is a prune to a limit no cache reaches. */
    uint64_t target = clear ? 0 : prune && limit ? limit : UINT64_MAX;
    if (qg__cache_prune(dir, target, &removed, &kept) != QG_SUCCESS) {
        fprintf(stderr, "qgemm cache: %s\n", qg_last_error());
        return CLI_EXIT_FAIL;
    }
    printf("cache dir:   %s\n", dir);
    char unsafe[320];
    if (cli_cache_dir_unsafe(dir, unsafe, sizeof unsafe))
        printf("             not used: %s\n", unsafe);
    if (!limit_valid) {
        /* (stderr too: the library takes the default silently, so say it here) */
        const char *v = getenv("QGEMM_CACHE_MAX_MB");
        fprintf(stderr, "qgemm cache: QGEMM_CACHE_MAX_MB='%s' is not a number of MiB (digits, "
                "0 = no limit): the default %d MiB applies\n", v ? v : "", QG_CACHE_DEFAULT_MAX_MB);
        printf("limit:       %.0f MiB (default; QGEMM_CACHE_MAX_MB ignored)\n", mib(limit));
    } else if (!limit) {
        printf("limit:       none (QGEMM_CACHE_MAX_MB=0)\n");
    } else {
        const char *v = getenv("QGEMM_CACHE_MAX_MB"); /* (empty: unset, as the library reads it) */
        printf("limit:       %.0f MiB (%s)\n", mib(limit),
               v && *v ? "QGEMM_CACHE_MAX_MB" : "default");
    }
    if (prune || clear)
        printf("removed:     %llu files, %.1f MiB\n", (unsigned long long)removed.files,
               mib(removed.bytes));
    printf("kernels:     %llu files, %.1f MiB\n", (unsigned long long)kept.files, mib(kept.bytes));
    return CLI_EXIT_OK;
}
