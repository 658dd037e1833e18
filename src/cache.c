/*
 * cache.c -- the disk cache of compiled kernels (src/jit.c is the compiler):
 * the key, and one file per key, read back whole or not at all
 * (docs/DESIGN.md §6).
 *
 * Invariants:
 *  - the key is SHA-256 over the format version, the NVRTC version, the
 *    options, every embedded file (name and text) and the source, each field
 *    length-prefixed so no two inputs frame the same bytes;
 *  - a file is written to a unique temporary name and renamed, so a reader
 *    sees a whole file or none; every read re-checks magic, lengths, key,
 *    the SHA-256 of the body and that the cubin is a whole ELF image
 *    (qg__cubin_check), and a bad file is deleted, never loaded; an entry
 *    the driver refuses anyway is removed by qg__cache_remove (src/launch.c
 *    recompiles it);
 *  - a file is trusted only if it is a regular file owned by the user and
 *    writable by no one else (opened O_NONBLOCK | O_NOFOLLOW, so a FIFO or a
 *    link named like an entry neither hangs nor redirects the read); anything
 *    else is ignored, not deleted, with a QGEMM_JIT_DEBUG message, and the
 *    next write renames a trusted file over it; what the cache creates is
 *    private (directories 0700, files 0600);
 *  - the disk cache is best effort: failing to read or write it is never an
 *    error (QGEMM_JIT_DEBUG says why); its directory is QGEMM_CACHE_DIR, else
 *    $XDG_CACHE_HOME/qgemm, else $HOME/.cache/qgemm (src/env.c), read at every call;
 *  - its size is bounded: a file's mtime is its last use (set when written,
 *    refreshed at every disk hit), and after each write the least recently
 *    used files are deleted until the cache fits QGEMM_CACHE_MAX_MB (default
 *    QG_CACHE_DEFAULT_MAX_MB; 0: no limit). Only <64 hex>.cubin files count
 *    and are deleted, and temporaries left an hour ago by a writer that died.
 */
#include "internal.h"
#include "cache.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define QG_CACHE_MAGIC "QGEMMCB1"
#define QG_CACHE_VERSION 1u
#define QG_CACHE_HEADER_BYTES 56   /* magic, version, header size, body length, hash */
#define QG_CACHE_BODY_FIXED 96     /* key, 5 info words, report and cubin lengths */
#define QG_CACHE_MAX_FILE (256u << 20)

/* ---- files -------------------------------------------------------------- */

/* mkdir -p with mode 0700 (the cache is the user's: §6 "Trust"); existing
 * directories keep their mode. @return 0, or -1 with errno set. */
static int make_dirs(const char *path) {
    char buf[QG_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
        *p = c;
        if (c == '\0') break;
    }
    struct stat st;
    if (stat(buf, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Write all of `len` bytes. @return 0 or -1. */
static int write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/*
 * write_all with SIGXFSZ held off (issue 53): under a file-size limit
 * (RLIMIT_FSIZE, `ulimit -f`) a write past it raises SIGXFSZ, whose default
 * action kills the process, and the cache is best effort. The signal is
 * blocked in the calling thread only (pthread_sigmask: other threads and the
 * process's disposition are untouched), the write then fails with EFBIG, the
 * SIGXFSZ it raised is consumed (sigtimedwait, zero timeout) before the mask
 * is restored, unless one was pending already (not ours to take).
 * @return 0, or -1 with errno set (EFBIG: the limit).
 */
static int write_all_guarded(int fd, const void *data, size_t len) {
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    const bool masked = pthread_sigmask(SIG_BLOCK, &xfsz, &old) == 0;
    const bool was_pending =
        masked && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1;
    int r = write_all(fd, data, len);
    const int saved = errno;
    if (masked) {
        if (r != 0 && saved == EFBIG && !was_pending) {
            const struct timespec zero = {0, 0};
            while (sigtimedwait(&xfsz, NULL, &zero) < 0 && errno == EINTR) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    errno = saved;
    return r;
}

void qg__cache_dump(const char *dir, const char *key, const char *ext, const char *text) {
    char path[QG_PATH_MAX];
    if (make_dirs(dir) != 0 ||
        snprintf(path, sizeof path, "%s/%s%s", dir, key, ext) >= (int)sizeof path) {
        qg__jit_debug("cannot dump %s%s into %s: %s", key, ext, dir, strerror(errno));
        return;
    }
    /* O_NONBLOCK: opening a FIFO for writing would wait for a reader, and the
     * dump runs while the key's memory entry is pending (every thread asking
     * for the kernel waits on it; issue 53). Only a regular file is written:
     * truncated after the check, not by open. */
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0) {
        qg__jit_debug("QGEMM_JIT_DUMP: %s skipped: %s", path,
                      errno == ENXIO ? "not a regular file (a FIFO with no reader)"
                                     : strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        qg__jit_debug("QGEMM_JIT_DUMP: %s skipped: fstat: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        qg__jit_debug("QGEMM_JIT_DUMP: %s skipped: not a regular file (mode %o)", path,
                      (unsigned)st.st_mode);
    } else if (ftruncate(fd, 0) != 0 || write_all_guarded(fd, text, strlen(text)) != 0) {
        qg__jit_debug("cannot write %s: %s", path, strerror(errno));
    }
    close(fd);
}

/* Hash one tagged, length-prefixed field. */
static void hash_field(qg_sha256 *s, const char *tag, const char *data, size_t len) {
    uint8_t n[8];
    for (int i = 0; i < 8; i++) n[i] = (uint8_t)((uint64_t)len >> (8 * i));
    qg__sha256_update(s, tag, strlen(tag) + 1);
    qg__sha256_update(s, n, sizeof n);
    qg__sha256_update(s, data, len);
}

static void hash_str(qg_sha256 *s, const char *tag, const char *str) {
    hash_field(s, tag, str, strlen(str));
}

void qg__cache_key_prefix(qg_sha256 *s, const char *format, const char *nvrtc_version,
                          const char *const *opts, int num_opts) {
    qg__sha256_init(s);
    hash_str(s, "format", format);
    hash_str(s, "nvrtc", nvrtc_version);
    for (int i = 0; i < num_opts; i++) hash_str(s, "option", opts[i]);
    for (int i = 0; i < qg__num_kernel_files; i++) {
        hash_str(s, "file", qg__kernel_files[i].name);
        hash_str(s, "text", qg__kernel_files[i].text);
    }
}

void qg__cache_key_finish(qg_sha256 *s, const char *source, char key[65]) {
    hash_str(s, "source", source);
    uint8_t digest[32];
    qg__sha256_final(s, digest);
    qg__sha256_hex(digest, key);
}

void qg__build_free(qg_jit_build *b) {
    free(b->cubin);
    free(b->report);
    b->cubin = b->report = NULL;
}

/* ---- the cache file ---------------------------------------------------- */
/*
 * <dir>/<key>.cubin, integers little-endian:
 *   0  "QGEMMCB1"   8  u32 format version   12 u32 header size (56)
 *   16 u64 body length   24 SHA-256 of the body (32 bytes)
 *   56 body: key (64 hex chars), i32 registers, spill stores, spill loads,
 *      stack frame, u32 PTX flags, u32 report length, u64 cubin length,
 *      report bytes, cubin bytes
 */

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t ptx_flags(const qg_kernel_info *in) {
    return (uint32_t)((in->ptx_has_wgmma != 0) | (in->ptx_has_tma_load != 0) << 1 |
                      (in->ptx_has_tma_store != 0) << 2 | (in->ptx_has_setmaxnreg != 0) << 3 |
                      (in->ptx_has_stmatrix != 0) << 4 | (in->ptx_has_multicast != 0) << 5);
}

static void set_ptx_flags(qg_kernel_info *out, uint32_t f) {
    out->ptx_has_wgmma = f & 1;
    out->ptx_has_tma_load = f >> 1 & 1;
    out->ptx_has_tma_store = f >> 2 & 1;
    out->ptx_has_setmaxnreg = f >> 3 & 1;
    out->ptx_has_stmatrix = f >> 4 & 1;
    out->ptx_has_multicast = f >> 5 & 1;
}

const char *qg__cache_dir_unsafe(const char *dir, char *why, size_t len) {
    struct stat st;
    if (!dir || !why || !len) return NULL;
    if (stat(dir, &st) != 0) {
        snprintf(why, len, "cannot stat it: %s", strerror(errno));
        return why;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, len, "owned by uid %ld, not by this user (uid %ld), mode %o", (long)st.st_uid,
                 (long)geteuid(), (unsigned)(st.st_mode & 07777));
        return why;
    }
    if (st.st_mode & S_IWOTH) {
        snprintf(why, len, "writable by others (mode %o%s)", (unsigned)(st.st_mode & 07777),
                 st.st_mode & S_ISVTX ? ", sticky: they can still create entries" : "");
        return why;
    }
    return NULL;
}

const char *qg__cache_open_dir(char buf[QG_PATH_MAX]) {
    if (!qg__cache_dir(buf, QG_PATH_MAX)) {
        qg__jit_debug("disk cache disabled: none of QGEMM_CACHE_DIR, XDG_CACHE_HOME, HOME is set (or the path is too long)");
        return NULL;
    }
    if (make_dirs(buf) != 0) {
        qg__jit_debug("disk cache disabled: cannot create %s: %s", buf, strerror(errno));
        return NULL;
    }
    /* A directory another user can create files in lets them plant entries
     * under predictable keys: refused as foreign, never replaceable in a
     * sticky directory, so that kernel would compile at every process start
     * (issue 53). Such a directory is not used; QGEMM_JIT_DEBUG says so once
     * per directory, `qgemm info` always. */
    char why[160];
    if (qg__cache_dir_unsafe(buf, why, sizeof why)) {
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        static char said[QG_PATH_MAX];
        if (qg__env_flag("QGEMM_JIT_DEBUG")) {
            pthread_mutex_lock(&lock);
            const bool first = strcmp(said, buf) != 0;
            if (first) snprintf(said, sizeof said, "%s", buf);
            pthread_mutex_unlock(&lock);
            if (first)
                qg__jit_debug("disk cache disabled: %s is %s: another user could plant or deny "
                              "its entries; kernels are cached in memory only (set "
                              "QGEMM_CACHE_DIR to a directory only you can write)", buf, why);
        }
        buf[0] = '\0';
        return NULL;
    }
    return buf;
}

/* Parse and check a whole file image. @return a reason, or NULL if valid. */
static const char *decode_file(const uint8_t *f, size_t size, const char *key, qg_jit_build *b) {
    if (size < QG_CACHE_HEADER_BYTES + QG_CACHE_BODY_FIXED) return "file too short";
    if (memcmp(f, QG_CACHE_MAGIC, 8) != 0) return "bad magic";
    if (get_u32(f + 8) != QG_CACHE_VERSION) return "other format version";
    if (get_u32(f + 12) != QG_CACHE_HEADER_BYTES) return "bad header size";
    const uint8_t *body = f + QG_CACHE_HEADER_BYTES;
    uint64_t body_len = get_u64(f + 16);
    if (body_len != size - QG_CACHE_HEADER_BYTES) return "length mismatch (truncated?)";
    uint8_t digest[32];
    qg__sha256(body, body_len, digest);
    if (memcmp(digest, f + 24, 32) != 0) return "checksum mismatch";
    if (memcmp(body, key, 64) != 0) return "key mismatch";
    uint64_t report_len = get_u32(body + 84), cubin_len = get_u64(body + 88);
    if (cubin_len == 0 || cubin_len > body_len ||
        QG_CACHE_BODY_FIXED + report_len + cubin_len != body_len)
        return "bad section lengths";
    /* The hash proves the file is what was written, not that a whole image
     * was written (a forged entry with a recomputed hash): a cubin whose ELF
     * tables or sections run past its end never reaches the driver. */
    const char *not_whole = qg__cubin_check(body + QG_CACHE_BODY_FIXED + report_len, cubin_len);
    if (not_whole) return not_whole;
    b->info.registers = (int32_t)get_u32(body + 64);
    b->info.spill_store_bytes = (int32_t)get_u32(body + 68);
    b->info.spill_load_bytes = (int32_t)get_u32(body + 72);
    b->info.stack_frame_bytes = (int32_t)get_u32(body + 76);
    set_ptx_flags(&b->info, get_u32(body + 80));
    b->report = malloc(report_len + 1);
    b->cubin = malloc(cubin_len);
    if (!b->report || !b->cubin) {
        qg__build_free(b);
        return "out of memory";
    }
    memcpy(b->report, body + QG_CACHE_BODY_FIXED, report_len);
    b->report[report_len] = '\0';
    memcpy(b->cubin, body + QG_CACHE_BODY_FIXED + report_len, cubin_len);
    b->cubin_size = cubin_len;
    return NULL;
}

int qg__cache_read(const char *dir, const char *key, qg_jit_build *b) {
    char path[QG_PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s.cubin", dir, key) >= (int)sizeof path) return 0;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        if (errno != ENOENT) qg__jit_debug("cannot open %s: %s", path, strerror(errno));
        return 0;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        qg__jit_debug("disk cache file %s ignored: fstat: %s", path, strerror(errno));
        close(fd);
        return 0;
    }
    /* Trust (docs/DESIGN.md §6): a regular file of ours that no one else can
     * write. Anything else is ignored, not deleted; a write renames over it. */
    const bool regular = S_ISREG(st.st_mode), ours = st.st_uid == geteuid(),
               private_ = (st.st_mode & 0022) == 0;
    if (!regular || !ours || !private_) {
        if (regular && !ours)
            qg__jit_debug("disk cache file %s ignored (owned by uid %ld, not by this user, uid "
                          "%ld): recompiling", path, (long)st.st_uid, (long)geteuid());
        else
            qg__jit_debug("disk cache file %s ignored (%s, mode %o): recompiling", path,
                          regular ? "writable by group or others" : "not a regular file",
                          (unsigned)(st.st_mode & 07777));
        close(fd);
        return 0;
    }
    uint8_t *f = NULL;
    const char *bad = NULL;
    size_t size = 0;
    if (st.st_size < 0 || (uint64_t)st.st_size > QG_CACHE_MAX_FILE) {
        bad = "unreadable or oversized";
    } else {
        size = (size_t)st.st_size;
        f = malloc(size ? size : 1);
        size_t got = 0;
        while (f && got < size) {
            ssize_t n = read(fd, f + got, size - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += (size_t)n;
        }
        if (!f) bad = "out of memory";
        else if (got != size) bad = "short read";
        else bad = decode_file(f, size, key, b);
    }
    if (!bad) futimens(fd, NULL); /* the file's last use, for eviction (best effort) */
    close(fd);
    free(f);
    if (!bad) return 1;
    qg__jit_debug("disk cache file %s rejected (%s): deleting it and recompiling", path, bad);
    unlink(path); /* a racing writer's rename may replace it: harmless either way */
    return 0;
}

void qg__cache_remove(const char *dir, const char *key, char *path, size_t path_len) {
    char buf[QG_PATH_MAX];
    if (path && path_len) path[0] = '\0';
    if (!dir || snprintf(buf, sizeof buf, "%s/%s.cubin", dir, key) >= (int)sizeof buf) return;
    if (path && path_len) snprintf(path, path_len, "%s", buf);
    /* A racing writer may have renamed a good entry here since it was read:
     * that one goes too, and costs one compile. */
    if (unlink(buf) != 0 && errno != ENOENT)
        qg__jit_debug("disk cache: cannot delete %s: %s", buf, strerror(errno));
}

void qg__cache_write(const char *dir, const char *key, const qg_jit_build *b) {
    static atomic_uint counter;
    size_t report_len = strlen(b->report);
    size_t body_len = QG_CACHE_BODY_FIXED + report_len + b->cubin_size;
    size_t size = QG_CACHE_HEADER_BYTES + body_len;
    uint8_t *f = calloc(1, size);
    if (!f) {
        qg__jit_debug("disk cache: cannot allocate %zu bytes to write kernel %s", size, key);
        return;
    }
    uint8_t *body = f + QG_CACHE_HEADER_BYTES;
    memcpy(body, key, 64);
    put_u32(body + 64, (uint32_t)b->info.registers);
    put_u32(body + 68, (uint32_t)b->info.spill_store_bytes);
    put_u32(body + 72, (uint32_t)b->info.spill_load_bytes);
    put_u32(body + 76, (uint32_t)b->info.stack_frame_bytes);
    put_u32(body + 80, ptx_flags(&b->info));
    put_u32(body + 84, (uint32_t)report_len);
    put_u64(body + 88, b->cubin_size);
    memcpy(body + QG_CACHE_BODY_FIXED, b->report, report_len);
    memcpy(body + QG_CACHE_BODY_FIXED + report_len, b->cubin, b->cubin_size);
    memcpy(f, QG_CACHE_MAGIC, 8);
    put_u32(f + 8, QG_CACHE_VERSION);
    put_u32(f + 12, QG_CACHE_HEADER_BYTES);
    put_u64(f + 16, body_len);
    qg__sha256(body, body_len, f + 24);

    char tmp[QG_PATH_MAX], path[QG_PATH_MAX];
    int fd = -1;
    /* pid + tid + counter + clock make the name unique; O_EXCL makes sure. */
    for (int attempt = 0; attempt < 4 && fd < 0; attempt++) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        unsigned salt = (unsigned)t.tv_nsec ^ (atomic_fetch_add(&counter, 1) * 2654435761u);
        if (snprintf(tmp, sizeof tmp, "%s/%s.tmp.%ld.%ld.%08x", dir, key, (long)getpid(),
                     (long)syscall(SYS_gettid), salt) >= (int)sizeof tmp)
            break;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd >= 0 && snprintf(path, sizeof path, "%s/%s.cubin", dir, key) >= (int)sizeof path) {
        close(fd);
        unlink(tmp);
        fd = -1;
        errno = ENAMETOOLONG;
    }
    if (fd < 0) {
        qg__jit_debug("disk cache: cannot create a temporary file in %s: %s", dir, strerror(errno));
    } else {
        /* Under a file-size limit the write fails with EFBIG (SIGXFSZ held
         * off): the temporary is removed below, as after any failed write. */
        int failed = write_all_guarded(fd, f, size) != 0;
        failed |= close(fd) != 0;
        if (failed || rename(tmp, path) != 0) {
            qg__jit_debug("disk cache: cannot write %s: %s", path, strerror(errno));
            unlink(tmp);
        } else {
            uint64_t limit = qg__cache_limit_bytes();
            if (limit && qg__cache_prune(dir, limit, NULL, NULL) != QG_SUCCESS)
                qg__jit_debug("disk cache: cannot prune %s: %s", dir, qg_last_error());
        }
    }
    free(f);
}

/* ---- size limit and eviction ------------------------------------------- */

/* A cache file's name: 64 hex digits and ".cubin"; a temporary: <key>.tmp.* */
static bool is_cubin_name(const char *name, bool *is_tmp) {
    size_t n = strlen(name);
    if (n < 65) return false;
    for (int i = 0; i < 64; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    *is_tmp = strncmp(name + 64, ".tmp.", 5) == 0;
    return *is_tmp || strcmp(name + 64, ".cubin") == 0;
}

typedef struct {
    char name[80];
    uint64_t bytes;
    struct timespec used; /* mtime: set at write, refreshed at every disk hit */
} cache_file;

static int older_first(const void *a, const void *b) {
    const cache_file *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

uint64_t qg__cache_limit_bytes_valid(bool *valid) {
    const char *v = qg__env_string("QGEMM_CACHE_MAX_MB");
    unsigned long long mb = QG_CACHE_DEFAULT_MAX_MB;
    if (valid) *valid = true;
    if (v) {
        char *end = NULL;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno == 0 && end != v && *end == '\0' && isdigit((unsigned char)v[0]) &&
            x <= (1ull << 40)) {
            mb = x;
        } else {
            if (valid) *valid = false;
            qg__jit_debug("QGEMM_CACHE_MAX_MB=%s is not a number of MiB: using %llu", v, mb);
        }
    }
    return (uint64_t)mb << 20;
}

uint64_t qg__cache_limit_bytes(void) { return qg__cache_limit_bytes_valid(NULL); }

qg_status qg__cache_prune(const char *dir, uint64_t max_bytes, qg_cache_usage *removed,
                          qg_cache_usage *kept) {
    qg_cache_usage gone = {0, 0}, left = {0, 0};
    if (removed) *removed = gone;
    if (kept) *kept = left;
    if (!dir) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg__cache_prune: dir is NULL");
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return QG_SUCCESS; /* no cache yet: nothing to prune */
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "cannot open the cache directory %s: %s", dir,
                        strerror(errno));
    }
    cache_file *files = NULL;
    size_t count = 0, cap = 0;
    uint64_t total = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    qg_status st = QG_SUCCESS;
    for (struct dirent *e; (e = readdir(d));) {
        bool is_tmp = false;
        if (!is_cubin_name(e->d_name, &is_tmp) || strlen(e->d_name) >= sizeof files->name)
            continue;
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
            continue;
        /* A temporary file is another process's write in flight, unless it is
         * an hour old (that writer died): only those are removed, and none
         * when max_bytes is UINT64_MAX (a listing); a clear removes all. */
        if (is_tmp) {
            if (max_bytes != UINT64_MAX &&
                (now.tv_sec - sb.st_mtim.tv_sec > 3600 || max_bytes == 0)) {
                if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
                    gone.files++;
                    gone.bytes += (uint64_t)sb.st_size;
                }
            }
            continue;
        }
        if (count == cap) {
            size_t n = cap ? 2 * cap : 256;
            cache_file *grown = realloc(files, n * sizeof *files);
            if (!grown) {
                st = qg__fail(QG_ERROR_OUT_OF_MEMORY, "cannot list the cache directory %s", dir);
                break;
            }
            files = grown;
            cap = n;
        }
        snprintf(files[count].name, sizeof files[count].name, "%s", e->d_name);
        files[count].bytes = (uint64_t)sb.st_size;
        files[count].used = sb.st_mtim;
        total += files[count].bytes;
        count++;
    }
    if (st == QG_SUCCESS) {
        if (count) qsort(files, count, sizeof *files, older_first); /* (files NULL when 0) */
        for (size_t i = 0; i < count; i++) {
            if (total > max_bytes && unlinkat(dirfd(d), files[i].name, 0) == 0) {
                total -= files[i].bytes;
                gone.files++;
                gone.bytes += files[i].bytes;
                qg__jit_debug("disk cache: evicted %s (%llu bytes, least recently used)",
                              files[i].name, (unsigned long long)files[i].bytes);
            } else {
                left.files++;
                left.bytes += files[i].bytes;
            }
        }
    }
    closedir(d);
    free(files);
    if (removed) *removed = gone;
    if (kept) *kept = left;
    return st;
}
