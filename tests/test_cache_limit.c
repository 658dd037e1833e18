/* SPDX-License-Identifier: MIT */
/*
 * test_cache_limit.c -- the disk cache's size limit (CPU only, no NVRTC): files are
 * evicted least recently used first (mtime, refreshed at every disk hit) until
 * the cache fits; other files and fresh temporaries are left alone; a limit of
 * 0 clears it; QGEMM_CACHE_MAX_MB gives the limit.
 */
#include "internal.h"
#include "qg_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/<64 hex of `tag`>.cubin of `bytes` bytes, last used `age` seconds ago. */
static bool make_file(const char *dir, int tag, const char *suffix, size_t bytes, long age) {
    char path[512];
    snprintf(path, sizeof path, "%s/%064x%s", dir, tag, suffix);
    FILE *f = fopen(path, "w");
    if (!f) return false;
    for (size_t i = 0; i < bytes; i++) fputc('x', f);
    fclose(f);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age;
    t[1] = t[0];
    return utimensat(AT_FDCWD, path, t, 0) == 0;
}

static bool exists(const char *dir, int tag, const char *suffix) {
    char path[512];
    snprintf(path, sizeof path, "%s/%064x%s", dir, tag, suffix);
    return access(path, F_OK) == 0;
}

static void remove_all(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

TEST(cache_prune_evicts_least_recently_used) {
    char dir[] = "/tmp/qgemm-prune-test-XXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp");
    /* Files 1..4 of 1000 bytes, file 1 the oldest; an unrelated file; a
     * temporary in flight and one abandoned two hours ago. */
    bool ok = true;
    for (int i = 1; i <= 4; i++) ok &= make_file(dir, i, ".cubin", 1000, 100 * (5 - i));
    ok &= make_file(dir, 9, ".txt", 5000, 10000);
    ok &= make_file(dir, 7, ".tmp.1.2.3", 500, 10);
    ok &= make_file(dir, 8, ".tmp.1.2.4", 500, 7200);
    qg_cache_usage removed, kept;
    qg_status st = ok ? qg__cache_prune(dir, 2500, &removed, &kept) : QG_ERROR_INTERNAL;
    bool gone1 = !exists(dir, 1, ".cubin"), gone2 = !exists(dir, 2, ".cubin");
    bool have3 = exists(dir, 3, ".cubin"), have4 = exists(dir, 4, ".cubin");
    bool other = exists(dir, 9, ".txt"), fresh_tmp = exists(dir, 7, ".tmp.1.2.3");
    bool old_tmp = exists(dir, 8, ".tmp.1.2.4");
    qg_cache_usage cleared, after;
    qg_status st2 = qg__cache_prune(dir, 0, &cleared, &after);
    bool empty = !exists(dir, 3, ".cubin") && !exists(dir, 4, ".cubin") && exists(dir, 9, ".txt");
    remove_all(dir);
    CHECK(ok, "cannot create the files");
    CHECK(st == QG_SUCCESS, "%s", qg_last_error());
    CHECK(gone1 && gone2 && have3 && have4, "evicted %d %d kept %d %d", gone1, gone2, have3, have4);
    CHECK(other && fresh_tmp && !old_tmp, "other %d fresh tmp %d old tmp %d", other, fresh_tmp,
          old_tmp);
    CHECK(removed.files == 3 && removed.bytes == 2500, "removed %llu files %llu bytes",
          (unsigned long long)removed.files, (unsigned long long)removed.bytes);
    CHECK(kept.files == 2 && kept.bytes == 2000, "kept %llu files %llu bytes",
          (unsigned long long)kept.files, (unsigned long long)kept.bytes);
    CHECK(st2 == QG_SUCCESS && empty && after.files == 0 && cleared.files == 3,
          "clear: %d, %llu removed, %llu left", st2, (unsigned long long)cleared.files,
          (unsigned long long)after.files);
    /* A directory that does not exist is an empty cache. */
    CHECK(qg__cache_prune("/nonexistent/qgemm-cache", 0, &removed, &kept) == QG_SUCCESS &&
              removed.files == 0 && kept.files == 0,
          "missing directory: %s", qg_last_error());
    PASS();
}

TEST(cache_limit_from_environment) {
    const char *v = getenv("QGEMM_CACHE_MAX_MB");
    char *saved = v ? strdup(v) : NULL;
    unsetenv("QGEMM_CACHE_MAX_MB");
    uint64_t dflt = qg__cache_limit_bytes();
    setenv("QGEMM_CACHE_MAX_MB", "7", 1);
    uint64_t seven = qg__cache_limit_bytes();
    setenv("QGEMM_CACHE_MAX_MB", "0", 1);
    uint64_t zero = qg__cache_limit_bytes();
    setenv("QGEMM_CACHE_MAX_MB", "lots", 1);
    uint64_t bad = qg__cache_limit_bytes();
    bool bad_valid = true, blank_valid = true, seven_valid = false;
    setenv("QGEMM_CACHE_MAX_MB", " 5", 1); /* digits only, as the CLI's own integers */
    uint64_t blank = qg__cache_limit_bytes_valid(&blank_valid);
    setenv("QGEMM_CACHE_MAX_MB", "lots", 1);
    (void)qg__cache_limit_bytes_valid(&bad_valid);
    setenv("QGEMM_CACHE_MAX_MB", "7", 1);
    (void)qg__cache_limit_bytes_valid(&seven_valid);
    if (saved) setenv("QGEMM_CACHE_MAX_MB", saved, 1);
    else unsetenv("QGEMM_CACHE_MAX_MB");
    free(saved);
    CHECK(dflt == (uint64_t)QG_CACHE_DEFAULT_MAX_MB << 20, "default %llu",
          (unsigned long long)dflt);
    CHECK(seven == 7u << 20, "7 MiB read as %llu", (unsigned long long)seven);
    CHECK(zero == 0, "0 (no limit) read as %llu", (unsigned long long)zero);
    CHECK(!bad_valid && !blank_valid && seven_valid, "validity: lots %d, ' 5' %d, 7 %d", bad_valid,
          blank_valid, seven_valid);
    CHECK(blank == (uint64_t)QG_CACHE_DEFAULT_MAX_MB << 20, "' 5' read as %llu",
          (unsigned long long)blank);
    CHECK(bad == dflt, "a bad value gave %llu", (unsigned long long)bad);
    PASS();
}
