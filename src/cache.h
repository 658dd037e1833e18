/*
 * cache.h -- what the compiler (src/jit.c) and the disk cache (src/cache.c)
 * share: one build's result, the key, and the cache's files. Only these two
 * files include it; the cache takes nothing from the compiler.
 */
#ifndef QG_CACHE_H
#define QG_CACHE_H

#include "internal.h"
#include "sha256.h"

#define QG_PATH_MAX 4096

/* One build: what a compile or a disk hit yields. */
typedef struct {
    void *cubin;
    size_t cubin_size;
    char *report;
    bool reported; /* the log held a ptxas report (ptxas ran; see compile_uncached) */
    qg_kernel_info info;
} qg_jit_build;
/* Free a build's buffers (the struct itself is the caller's). */
void qg__build_free(qg_jit_build *b);

/* The key's midstate: everything but the source (the same for every kernel). */
void qg__cache_key_prefix(qg_sha256 *s, const char *format, const char *nvrtc_version,
                          const char *const *opts, int num_opts);
/* Add the source to a copy of the midstate; key: 64 hex characters and NUL. */
void qg__cache_key_finish(qg_sha256 *s, const char *source, char key[65]);

/* The cache directory, created, into buf; NULL when there is none usable. */
const char *qg__cache_open_dir(char buf[QG_PATH_MAX]);
/* @return 1 and *b filled on a valid hit, 0 otherwise (a bad file is deleted). */
int qg__cache_read(const char *dir, const char *key, qg_jit_build *b);
/* Delete dir/<key>.cubin (an entry the driver refused; best effort); `path`
 * (may be NULL) receives its name, "" when dir is NULL. */
void qg__cache_remove(const char *dir, const char *key, char *path, size_t path_len);
/* Write b as dir/<key>.cubin: temporary file, then rename (best effort). */
void qg__cache_write(const char *dir, const char *key, const qg_jit_build *b);
/* Write text as dir/<key><ext>, creating dir (best effort; QGEMM_JIT_DUMP). */
void qg__cache_dump(const char *dir, const char *key, const char *ext, const char *text);

#endif /* QG_CACHE_H */
