/*
 * jit.c -- the compiler driver: run-time compilation of kernels with NVRTC,
 * the in-memory cache, and the checks a cubin must pass before it is handed
 * out; the disk cache and the key are src/cache.c (docs/DESIGN.md §6).
 *
 * Invariants:
 *  - a cubin is handed out only if its ptxas report shows no spill, no
 *    stack frame and no serialized wgmma (ptxas C751x: it serializes the
 *    wgmmas or injects a wait when it cannot prove their accumulators
 *    untouched in flight); nothing that failed is cached, in memory or on disk;
 *  - the memory cache holds one entry per key; while its first compile runs
 *    the entry is "pending" and other threads asking for the key wait for it
 *    (one compile per key, however many threads); a failed compile drops the
 *    entry so a waiter retries and gets its own error message;
 *  - an entry read from the disk cache whose cubin the driver then refuses
 *    (qg__jit_discard, called by src/launch.c) leaves the memory cache and its
 *    file the disk, so the next lookup compiles; the entry itself is kept,
 *    retired, until the cache dies, because callers may still hold its cubin;
 *  - environment variables (src/env.c: QGEMM_CACHE_DIR, XDG_CACHE_HOME, HOME,
 *    QGEMM_JIT_DEBUG, QGEMM_JIT_DUMP) are read at every call; QGEMM_JIT_DEBUG
 *    also adds -lineinfo, so debug builds have keys (and cubins) of their own;
 *  - QGEMM_JIT_DUMP=dir writes <key>.cu whenever the memory cache misses and
 *    <key>.ptx whenever NVRTC runs (an empty cache dir forces both); the dump
 *    runs while the key's entry is pending, so it never waits: a FIFO or any
 *    non-regular file of that name is skipped (qg__cache_dump, issue 53);
 *  - NVRTC is reached only through the table of src/nvrtc.c (dlopen'ed at the
 *    first compile, never linked); without it every compile fails with
 *    QG_ERROR_COMPILE naming the paths tried.
 */
#include "internal.h"
#include "cache.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Bump when the options, the key recipe or the file layout (src/cache.c) change. */
#define QG_JIT_FORMAT "qgemm-jit-1"
#define QG_LOG_EXCERPT 2000        /* characters of NVRTC log quoted in an error */
#define QG_BUCKETS 64

/* ---- small helpers ---------------------------------------------------- */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* ---- compile options and key ------------------------------------------ */

/* @return the number of options written to opts (at most 8). */
static int jit_options(bool line_info, const char *opts[8]) {
    int n = 0;
    opts[n++] = "-arch=sm_90a";
    opts[n++] = "-std=c++17";
    opts[n++] = "-default-device";
    opts[n++] = "-Xptxas=-v"; /* the report that registers and spills are parsed from */
    if (line_info) opts[n++] = "-lineinfo";
    return n;
}

/* ---- the memory cache ------------------------------------------------- */

typedef struct jit_entry {
    struct jit_entry *next;
    char key[65];
    bool ready;            /* false while its first compile runs */
    void *cubin;
    size_t cubin_size;
    char *report;          /* NVRTC log (ptxas report), for QGEMM_JIT_DEBUG */
    bool from_disk;        /* the cubin came from the disk cache */
    qg_kernel_info info;   /* cache_hit and compile_ms are set per call */
} jit_entry;

struct qg_jit_cache {
    pthread_mutex_t lock;
    pthread_cond_t changed;     /* a pending entry became ready or was dropped */
    jit_entry *buckets[QG_BUCKETS];
    jit_entry *retired;         /* discarded entries: their cubins may still be in use */
    bool prefix_ready[2];       /* [line_info] */
    qg_sha256 prefix[2];        /* qg__cache_key_prefix() midstate, computed once */
};

qg_status qg__jit_cache_create(qg_jit_cache **out) {
    if (!out) return qg__fail(QG_ERROR_INTERNAL, "qg__jit_cache_create: out is NULL");
    *out = NULL;
    qg_jit_cache *c = calloc(1, sizeof *c);
    if (!c) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "cannot allocate the kernel cache");
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return qg__fail(QG_ERROR_INTERNAL, "pthread_mutex_init failed for the kernel cache");
    }
    if (pthread_cond_init(&c->changed, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return qg__fail(QG_ERROR_INTERNAL, "pthread_cond_init failed for the kernel cache");
    }
    *out = c;
    return QG_SUCCESS;
}

static void free_entry(jit_entry *e) {
    free(e->cubin);
    free(e->report);
    free(e);
}

void qg__jit_cache_destroy(qg_jit_cache *cache) {
    if (!cache) return;
    for (int b = 0; b < QG_BUCKETS; b++)
        for (jit_entry *e = cache->buckets[b], *next; e; e = next) {
            next = e->next;
            free_entry(e);
        }
    for (jit_entry *e = cache->retired, *next; e; e = next) {
        next = e->next;
        free_entry(e);
    }
    pthread_cond_destroy(&cache->changed);
    pthread_mutex_destroy(&cache->lock);
    free(cache);
}

static jit_entry **bucket_of(qg_jit_cache *c, const char *key) {
    /* The key is a uniform hash already: two of its characters spread well. */
    return &c->buckets[((unsigned char)key[0] * 31u + (unsigned char)key[1]) % QG_BUCKETS];
}

static jit_entry *find_entry(qg_jit_cache *c, const char *key) {
    for (jit_entry *e = *bucket_of(c, key); e; e = e->next)
        if (memcmp(e->key, key, 64) == 0) return e;
    return NULL;
}

static void drop_entry(qg_jit_cache *c, jit_entry *gone) {
    for (jit_entry **p = bucket_of(c, gone->key); *p; p = &(*p)->next)
        if (*p == gone) {
            *p = gone->next;
            free_entry(gone);
            return;
        }
}

/* ---- reading NVRTC's report -------------------------------------------- */

/* The number written just before `what` in [line, end), e.g. "1024 bytes stack frame". */
static int number_before(const char *line, const char *end, const char *what, int *value) {
    const char *hit = memmem(line, (size_t)(end - line), what, strlen(what));
    if (!hit) return 0;
    const char *p = hit;
    while (p > line && p[-1] == ' ') p--;
    const char *digits_end = p;
    while (p > line && p[-1] >= '0' && p[-1] <= '9') p--;
    if (p == digits_end) return 0;
    *value = atoi(p);
    return 1;
}

/* Registers, spills and stack frame from a ptxas -v report: the maximum over
 * every function. @return 0 if the report lacks a register or a stack line
 * (so spills could not be checked). */
static int parse_report(const char *log, qg_kernel_info *info) {
    int saw_registers = 0, saw_frame = 0;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        int v;
        const char *used = memmem(line, (size_t)(end - line), "Used ", 5);
        if (used && number_before(used, end, " registers", &v)) {
            saw_registers = 1;
            if (v > info->registers) info->registers = v;
        }
        if (number_before(line, end, " bytes stack frame", &v)) {
            saw_frame = 1;
            if (v > info->stack_frame_bytes) info->stack_frame_bytes = v;
        }
        if (number_before(line, end, " bytes spill stores", &v) && v > info->spill_store_bytes)
            info->spill_store_bytes = v;
        if (number_before(line, end, " bytes spill loads", &v) && v > info->spill_load_bytes)
            info->spill_load_bytes = v;
        line = *end ? end + 1 : end;
    }
    return saw_registers && saw_frame;
}

/* Which Hopper features the PTX uses (comments ignored). */
static void scan_ptx(const char *ptx, qg_kernel_info *info) {
    static const char tma[] = "cp.async.bulk.tensor.";
    for (const char *line = ptx; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *comment = memmem(line, (size_t)(end - line), "//", 2);
        const char *code_end = comment ? comment : end;
        size_t len = (size_t)(code_end - line);
#define HAS(s) (memmem(line, len, s, strlen(s)) != NULL)
        info->ptx_has_wgmma |= HAS("wgmma.mma_async");
        info->ptx_has_setmaxnreg |= HAS("setmaxnreg");
        info->ptx_has_stmatrix |= HAS("stmatrix");
        info->ptx_has_multicast |= HAS(".multicast::cluster");
        /* a TMA reduce-add writes D too (the weight-gradient kernel's D +=) */
        info->ptx_has_tma_store |= HAS("cp.reduce.async.bulk.tensor");
#undef HAS
        /* cp.async.bulk.tensor.<dim>.<dst>.<src>...: a shared destination is a load. */
        const char *t = memmem(line, len, tma, sizeof tma - 1);
        if (t) {
            const char *dst = strchr(t + sizeof tma - 1, '.');
            if (dst && dst < code_end) {
                if (strncmp(dst, ".shared", 7) == 0) info->ptx_has_tma_load = 1;
                if (strncmp(dst, ".global", 7) == 0) info->ptx_has_tma_store = 1;
            }
        }
        line = *end ? end + 1 : end;
    }
}

static char *read_log(const qg_nvrtc *nv, nvrtcProgram prog) {
    size_t n = 0;
    if (nv->nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0) n = 1;
    char *log = malloc(n);
    if (!log) return NULL;
    log[0] = '\0';
    if (n > 1 && nv->nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = '\0';
    log[n - 1] = '\0';
    return log;
}

static qg_status nvrtc_fail(const qg_nvrtc *nv, nvrtcResult r, const char *what,
                            const char *key) {
    return qg__fail(r == NVRTC_ERROR_OUT_OF_MEMORY ? QG_ERROR_OUT_OF_MEMORY : QG_ERROR_COMPILE,
                    "%s failed for kernel %s: %s", what, key, nv->nvrtcGetErrorString(r));
}

/* Compiler warnings in this process's NVRTC logs (the seam's
 * qg__jit_warnings): the house's kernels compile without any, and the CI
 * compile sweeps assert that a new one fails them. Not an error for a user:
 * a newer compiler may warn where this one does not. */
static atomic_uint warning_count;
static pthread_mutex_t warning_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_warning[512];

static const char *find_warning(const char *log) {
    static const char *const marks[] = {"warning #", "warning :", "warning:"};
    const char *first = NULL;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; ++i) {
        const char *w = strstr(log, marks[i]);
        if (w && (!first || w < first)) first = w;
    }
    return first;
}

static void note_warnings(const char *key, const char *log) {
    const char *w = find_warning(log);
    if (!w) return;
    const char *line = w;
    while (line > log && line[-1] != '\n') --line;
    const char *end = strchr(w, '\n');
    const int len = (int)(end ? end - line : (ptrdiff_t)strlen(line));
    pthread_mutex_lock(&warning_lock);
    if (atomic_fetch_add(&warning_count, 1) == 0)
        snprintf(first_warning, sizeof first_warning, "kernel %.16s: %.*s", key, len, line);
    pthread_mutex_unlock(&warning_lock);
}

unsigned qg__jit_warnings(char *first, size_t len) {
    pthread_mutex_lock(&warning_lock);
    const unsigned n = atomic_load(&warning_count);
    if (first && len) snprintf(first, len, "%s", n ? first_warning : "");
    pthread_mutex_unlock(&warning_lock);
    return n;
}

/* Compile `source` with NVRTC: cubin, report, register/spill counts, PTX flags.
 * On success *ptx_out holds the PTX (caller frees) for QGEMM_JIT_DUMP. */
static qg_status compile(const char *source, const char *key, const char *const *opts,
                         int num_opts, qg_jit_build *b, char **ptx_out) {
    const qg_nvrtc *nv;
    qg_status loaded = qg__nvrtc_load(&nv);
    if (loaded != QG_SUCCESS) return loaded;
    int n = qg__num_kernel_files;
    const char **names = calloc((size_t)n + 1, sizeof *names);
    const char **texts = calloc((size_t)n + 1, sizeof *texts);
    if (!names || !texts) {
        free(names);
        free(texts);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "cannot allocate NVRTC header tables");
    }
    for (int i = 0; i < n; i++) {
        names[i] = qg__kernel_files[i].name;
        texts[i] = qg__kernel_files[i].text;
    }
    char prog_name[32];
    snprintf(prog_name, sizeof prog_name, "qgemm_%.16s.cu", key);
    nvrtcProgram prog;
    nvrtcResult r = nv->nvrtcCreateProgram(&prog, source, prog_name, n, texts, names);
    free(names);
    free(texts);
    if (r != NVRTC_SUCCESS) return nvrtc_fail(nv, r, "nvrtcCreateProgram", key);

    qg_status st = QG_SUCCESS;
    char *ptx = NULL;
    nvrtcResult cr = nv->nvrtcCompileProgram(prog, num_opts, opts);
    b->report = read_log(nv, prog);
    if (!b->report) {
        st = qg__fail(QG_ERROR_OUT_OF_MEMORY, "cannot allocate the NVRTC log");
        goto done;
    }
    if (cr != NVRTC_SUCCESS) {
        size_t len = strlen(b->report);
        st = qg__fail(QG_ERROR_COMPILE, "NVRTC failed to compile kernel %s (%s); log%s:\n%.*s%s",
                      key, nv->nvrtcGetErrorString(cr), len > QG_LOG_EXCERPT ? " (truncated)" : "",
                      QG_LOG_EXCERPT, b->report, len > QG_LOG_EXCERPT ? "\n..." : "");
        goto done;
    }
    size_t ptx_size = 0;
    if ((r = nv->nvrtcGetPTXSize(prog, &ptx_size)) != NVRTC_SUCCESS ||
        (r = nv->nvrtcGetCUBINSize(prog, &b->cubin_size)) != NVRTC_SUCCESS) {
        st = nvrtc_fail(nv, r, "nvrtcGetPTXSize/nvrtcGetCUBINSize", key);
        goto done;
    }
    ptx = malloc(ptx_size + 1);
    b->cubin = malloc(b->cubin_size ? b->cubin_size : 1);
    if (!ptx || !b->cubin) {
        st = qg__fail(QG_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of PTX and cubin",
                      ptx_size + b->cubin_size);
        goto done;
    }
    if ((r = nv->nvrtcGetPTX(prog, ptx)) != NVRTC_SUCCESS ||
        (r = nv->nvrtcGetCUBIN(prog, b->cubin)) != NVRTC_SUCCESS) {
        st = nvrtc_fail(nv, r, "nvrtcGetPTX/nvrtcGetCUBIN", key);
        goto done;
    }
    ptx[ptx_size] = '\0';
    if (b->cubin_size == 0) {
        st = qg__fail(QG_ERROR_COMPILE, "NVRTC produced an empty cubin for kernel %s", key);
        goto done;
    }
    note_warnings(key, b->report);
    b->reported = parse_report(b->report, &b->info);
    if (!b->reported) {
        /* No ptxas report in the log (ptxas did not run: the compile was
         * served from a cache). Read the resources from the cubin itself; a
         * spill needs a stack frame, so frame 0 proves there are none. */
        int regs, frame;
        if (!qg__cubin_resources(b->cubin, b->cubin_size, &regs, &frame)) {
            st = qg__fail(QG_ERROR_INTERNAL,
                          "kernel %s: no ptxas report in the NVRTC log and no resource "
                          "attributes in the cubin: spills cannot be checked", key);
            goto done;
        }
        b->info.registers = regs;
        b->info.stack_frame_bytes = frame;
        b->info.spill_store_bytes = b->info.spill_load_bytes = frame ? -1 : 0; /* -1: unknown */
    }
    scan_ptx(ptx, &b->info);
done:
    nv->nvrtcDestroyProgram(&prog);
    if (st == QG_SUCCESS) {
        *ptx_out = ptx;
    } else {
        free(ptx);
        qg__build_free(b);
    }
    return st;
}

/* ---- the entry point --------------------------------------------------- */

/* The ptxas report on one line, for QGEMM_JIT_DEBUG. */
static void print_line(const char *how, const qg_kernel_info *info, const char *report) {
    if (!qg__env_flag("QGEMM_JIT_DEBUG")) return;
    char flat[2048];
    size_t n = 0;
    for (const char *p = report ? report : ""; *p && n + 4 < sizeof flat; p++) {
        if (*p == '\n') {
            if (p[1]) n += (size_t)snprintf(flat + n, sizeof flat - n, " | ");
        } else if (!(*p == ' ' && n && flat[n - 1] == ' ')) {
            flat[n++] = *p;
        }
    }
    flat[n] = '\0';
    qg__jit_debug("%.16s %s in %.1f ms: %d registers, %d bytes spill stores, %d bytes spill loads, "
          "%d bytes stack frame; ptxas: %s",
          info->key, how, info->compile_ms, info->registers, info->spill_store_bytes,
          info->spill_load_bytes, info->stack_frame_bytes, flat);
}

static void compute_key(const qg_nvrtc *nv, qg_jit_cache *cache, bool line_info,
                        const char *const *opts, int num_opts, const char *source,
                        char key[65]) {
    qg_sha256 s;
    pthread_mutex_lock(&cache->lock);
    if (!cache->prefix_ready[line_info]) {
        int major = 0, minor = 0;
        char version[32];
        nv->nvrtcVersion(&major, &minor);
        snprintf(version, sizeof version, "%d.%d", major, minor);
        qg__cache_key_prefix(&cache->prefix[line_info], QG_JIT_FORMAT, version, opts, num_opts);
        cache->prefix_ready[line_info] = true;
    }
    s = cache->prefix[line_info];
    pthread_mutex_unlock(&cache->lock);
    qg__cache_key_finish(&s, source, key);
}

/*
 * With a driver present, NVRTC can serve a program it compiled before from
 * the driver's compute cache (CUDA_CACHE_PATH): ptxas does not run and its
 * report is missing. The cubin still gives registers and stack frame, but
 * only the report says whether ptxas serialized the wgmmas, so a kernel
 * refused once would pass on its second compile. Compile once more with a
 * declaration that changes the PTX (an unused variable of a name not used
 * before), so that the cache misses and ptxas reports; keep the first build
 * if even that comes back without a report.
 */
static qg_status compile_uncached(const char *source, const char *key, const char *const *opts,
                                  int num_opts, qg_jit_build *b, char **ptx) {
    static atomic_ullong salt_counter;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    const unsigned long long salt = ((unsigned long long)t.tv_sec << 32) ^
                                    ((unsigned long long)getpid() << 20) ^ (unsigned long long)t.tv_nsec ^
                                    atomic_fetch_add(&salt_counter, 1);
    const size_t len = strlen(source);
    char *salted = malloc(len + 64);
    if (!salted) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", len + 64);
    snprintf(salted, len + 64, "%s\n__device__ int qg_jit_salt_%016llx;\n", source, salt);
    qg_jit_build fresh;
    memset(&fresh, 0, sizeof fresh);
    char *fresh_ptx = NULL;
    qg_status st = compile(salted, key, opts, num_opts, &fresh, &fresh_ptx);
    free(salted);
    if (st != QG_SUCCESS) return st;
    if (!fresh.reported) {
        free(fresh_ptx);
        qg__build_free(&fresh);
        return QG_SUCCESS;
    }
    free(*ptx);
    qg__build_free(b);
    *b = fresh;
    *ptx = fresh_ptx;
    return QG_SUCCESS;
}

/* Get the build for `key` from disk or NVRTC; reject spills. */
static qg_status build(const char *source, const char *key, const char *const *opts,
                       int num_opts, qg_jit_build *b) {
    char dir_buf[QG_PATH_MAX];
    const char *dir = qg__cache_open_dir(dir_buf);
    const char *dump = qg__env_string("QGEMM_JIT_DUMP");
    if (dump) qg__cache_dump(dump, key, ".cu", source);
    if (dir && qg__cache_read(dir, key, b)) {
        b->info.cache_hit = 2;
    } else {
        char *ptx = NULL;
        memset(&b->info, 0, sizeof b->info);
        qg_status st = compile(source, key, opts, num_opts, b, &ptx);
        if (st != QG_SUCCESS) return st;
        if (!b->reported) {
            st = compile_uncached(source, key, opts, num_opts, b, &ptx);
            if (st != QG_SUCCESS) {
                free(ptx);
                qg__build_free(b);
                return st;
            }
        }
        if (dump) qg__cache_dump(dump, key, ".ptx", ptx);
        free(ptx);
        b->info.cache_hit = 0;
    }
    const qg_kernel_info *i = &b->info;
    if (i->spill_store_bytes > 0 || i->spill_load_bytes > 0 || i->stack_frame_bytes > 0) {
        /* Counts read from the cubin (no ptxas report) know the frame, not the spills. */
        char spills[96];
        if (i->spill_store_bytes < 0)
            snprintf(spills, sizeof spills, "spills unknown (no ptxas report: read from the cubin)");
        else
            snprintf(spills, sizeof spills, "%d bytes spill stores, %d bytes spill loads",
                     i->spill_store_bytes, i->spill_load_bytes);
        qg_status st = qg__fail(QG_ERROR_COMPILE,
                                "kernel spills: kernel %s has %d bytes stack frame, %s (%d "
                                "registers); ptxas report:\n%.*s",
                                key, i->stack_frame_bytes, spills, i->registers, QG_LOG_EXCERPT,
                                b->report[0] ? b->report : "(none)");
        qg__build_free(b);
        return st;
    }
    const char *serialized = strstr(b->report, "wgmma.mma_async instructions are serialized");
    if (!serialized) serialized = strstr(b->report, "warpgroup.wait is injected");
    if (serialized) {
        qg_status st = qg__fail(QG_ERROR_COMPILE, "kernel %s: ptxas serialized its wgmma: %.*s", key,
                                (int)strcspn(serialized, "\n"), serialized);
        qg__build_free(b);
        return st;
    }
    if (dir && b->info.cache_hit == 0) qg__cache_write(dir, key, b);
    return QG_SUCCESS;
}

qg_status qg__jit_compile(qg_jit_cache *cache, const char *source, qg_jit_result *out) {
    double t0 = now_ms();
    if (!out) return qg__fail(QG_ERROR_INTERNAL, "qg__jit_compile: out is NULL");
    memset(out, 0, sizeof *out);
    if (!cache || !source)
        return qg__fail(QG_ERROR_INTERNAL, "qg__jit_compile: %s is NULL",
                        !cache ? "cache" : "source");

    bool line_info = qg__env_flag("QGEMM_JIT_DEBUG");
    const char *opts[8];
    int num_opts = jit_options(line_info, opts);
    /* The key names the NVRTC version, so nothing is found without NVRTC. */
    const qg_nvrtc *nv;
    qg_status loaded = qg__nvrtc_load(&nv);
    if (loaded != QG_SUCCESS) return loaded;
    char key[65];
    compute_key(nv, cache, line_info, opts, num_opts, source, key);
    memcpy(out->info.key, key, sizeof key);

    /* Find the entry, wait while another thread compiles it, or claim it. */
    pthread_mutex_lock(&cache->lock);
    jit_entry *e;
    while ((e = find_entry(cache, key)) && !e->ready)
        pthread_cond_wait(&cache->changed, &cache->lock);
    if (e) {
        out->cubin = e->cubin;
        out->cubin_size = e->cubin_size;
        out->from_disk = e->from_disk;
        out->info = e->info;
        const char *report = e->report; /* entries live until the cache dies */
        pthread_mutex_unlock(&cache->lock);
        out->info.cache_hit = 1;
        out->info.compile_ms = now_ms() - t0;
        print_line("found in memory", &out->info, report);
        return QG_SUCCESS;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&cache->lock);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "cannot allocate a kernel cache entry");
    }
    memcpy(e->key, key, sizeof key);
    jit_entry **bucket = bucket_of(cache, key);
    e->next = *bucket;
    *bucket = e;
    pthread_mutex_unlock(&cache->lock);

    /* Slow part, unlocked: other keys proceed, this key's askers wait. */
    qg_jit_build b = {0};
    qg_status st = build(source, key, opts, num_opts, &b);
    memcpy(b.info.key, key, sizeof key);

    pthread_mutex_lock(&cache->lock);
    if (st == QG_SUCCESS) {
        e->cubin = b.cubin;
        e->cubin_size = b.cubin_size;
        e->report = b.report;
        e->info = b.info;
        e->from_disk = b.info.cache_hit == 2;
        e->ready = true;
    } else {
        drop_entry(cache, e);
    }
    pthread_cond_broadcast(&cache->changed);
    pthread_mutex_unlock(&cache->lock);

    b.info.compile_ms = now_ms() - t0;
    if (st != QG_SUCCESS) {
        qg__jit_debug("%.16s failed after %.1f ms: %s", key, b.info.compile_ms, qg_last_error());
        out->info = b.info; /* what is known: key, counts of a rejected kernel */
        return st;
    }
    out->cubin = b.cubin;
    out->cubin_size = b.cubin_size;
    out->from_disk = b.info.cache_hit == 2;
    out->info = b.info;
    print_line(b.info.cache_hit == 2 ? "loaded from disk" : "compiled", &out->info, b.report);
    return QG_SUCCESS;
}

bool qg__jit_discard(qg_jit_cache *cache, const char *key, const void *cubin, char *path,
                     size_t path_len) {
    if (path && path_len) path[0] = '\0';
    if (!cache || !key || !cubin) return false;
    pthread_mutex_lock(&cache->lock);
    jit_entry *e = find_entry(cache, key);
    /* Only the entry that handed out this very cubin, read from disk: if
     * another caller discarded it already, the entry now found is a fresh
     * compile (and the file on disk its copy), which must stay. */
    const bool discard = e && e->ready && e->from_disk && e->cubin == cubin;
    if (discard) {
        for (jit_entry **p = bucket_of(cache, key); *p; p = &(*p)->next)
            if (*p == e) {
                *p = e->next;
                break;
            }
        e->next = cache->retired; /* its cubin may still be in a caller's hands */
        cache->retired = e;
    }
    pthread_mutex_unlock(&cache->lock);
    if (!discard) return false;
    char dir[QG_PATH_MAX];
    qg__cache_remove(qg__cache_dir(dir, sizeof dir) ? dir : NULL, key, path, path_len);
    return true;
}
