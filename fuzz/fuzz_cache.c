/*
 * fuzz_cache.c -- the disk cache's file reader (src/cache.c qg__cache_read)
 * under arbitrary file contents. The input is written as <dir>/<key>.cubin
 * and read back. Half of the inputs (first byte odd) are first "forged":
 * the header's body length and SHA-256 are recomputed over the body, as a
 * forger with write access to the directory could, so the section lengths
 * behind the checksum are reached too. A read either loads a whole,
 * self-consistent build or rejects the file (and deletes it); never a
 * crash, an over-read or a leak.
 */
#include "fuzz.h"
#include "internal.h"
#include "cache.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

fuzz_figures fuzz_stats = {"cache", 0, 0, 0};
static char dir[64];
static const char key[65] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static void cleanup(void) {
    char path[160];
    snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    snprintf(dir, sizeof dir, "/tmp/qgemm-fuzz-cache.XXXXXX");
    if (!mkdtemp(dir)) abort();
    atexit(fuzz_print_figures);
    atexit(cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_stats.cases++;
    if (size < 1 || size > (1u << 20)) return 0;
    const bool forge = data[0] & 1;
    size_t n = size - 1;
    uint8_t *f = malloc(n ? n : 1);
    memcpy(f, data + 1, n);
    if (forge && n >= 56) {
        if (n >= 56 + 64 && (data[0] & 2)) memcpy(f + 56, key, 64); /* the right key */
        const uint64_t body = n - 56;
        for (int i = 0; i < 8; i++) f[16 + i] = (uint8_t)(body >> (8 * i));
        qg__sha256(f + 56, body, f + 24);
    }
    char path[160];
    snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, f, n) != (ssize_t)n) abort();
    close(fd);
    free(f);
    qg_jit_build b;
    memset(&b, 0, sizeof b);
    if (qg__cache_read(dir, key, &b)) {
        /* a hit: the cubin and report are whole and inside the file */
        if (!b.cubin || b.cubin_size == 0 || b.cubin_size > n || !b.report ||
            strlen(b.report) > n)
            abort();
        fuzz_stats.accepted++;
        qg__build_free(&b);
    } else {
        if (b.cubin || b.report) abort(); /* a rejected file hands nothing out */
        fuzz_stats.clean_errors++;
    }
    return 0;
}
