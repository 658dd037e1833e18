/*
 * test_cache.c -- the disk cache under hostile files (issue 27): a FIFO named
 * like an entry, a corrupt entry, entries forged with a recomputed hash (a
 * cubin that is not a whole ELF image; another kernel's cubin, which the
 * driver would refuse: discarded and recompiled), entries writable by others
 * or owned by another user, the modes of what the cache creates, and 16
 * processes sharing one cache directory. CPU only (NVRTC needs no GPU; the
 * driver's side is tests/test_hostile_gpu.c).
 */
#include "internal.h"
#include "cache.h"
#include "qg_test.h"
#include "qgtk.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char made[16][64];
static int num_made;

static void rm_made(void) {
    for (int i = 0; i < num_made; i++) qgtk_remove_tree(made[i]);
}
static const char *fresh_dir(char buf[64]) {
    snprintf(buf, 64, "/tmp/qgemm-test-cache.XXXXXX");
    if (!mkdtemp(buf)) return NULL;
    if (num_made == 0) atexit(rm_made);
    if (num_made < 16) snprintf(made[num_made++], 64, "%s", buf);
    return buf;
}

static uint64_t salt(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return ((uint64_t)t.tv_nsec << 20) ^ (uint64_t)t.tv_sec ^ (uint64_t)getpid() << 40;
}

/* A small kernel; `s` makes its key unique. */
static char *source(uint64_t s) {
    char *src = malloc(512);
    snprintf(src, 512,
             "// salt %llu\n"
             "extern \"C\" __global__ void qg_test_cache(float *o, const float *i, int n) {\n"
             "    float a = i[threadIdx.x];\n"
             "    for (int k = 0; k < n; k++) a = fmaf(a, 0.5f, i[(k * 3 + threadIdx.x) %% n]);\n"
             "    o[threadIdx.x] = a * %u.0f;\n"
             "}\n",
             (unsigned long long)s, (unsigned)(s % 997));
    return src;
}

/* Compile in a brand-new memory cache; *hit = the result's cache_hit. */
static qg_status compile_new(const char *src, int *hit, char key[65]) {
    qg_jit_cache *c = NULL;
    qg_status s = qg__jit_cache_create(&c);
    if (s != QG_SUCCESS) return s;
    qg_jit_result r;
    s = qg__jit_compile(c, src, &r);
    if (s == QG_SUCCESS) {
        if (hit) *hit = r.info.cache_hit;
        if (key) snprintf(key, 65, "%s", r.info.key);
    }
    qg__jit_cache_destroy(c);
    return s;
}

/* Run fn() with stderr going to a file; returns what it printed (malloc'd). */
static char *capture_stderr(void (*fn)(void *), void *arg) {
    char path[] = "/tmp/qgemm-test-cache-err.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t n = lseek(fd, 0, SEEK_END);
    char *out = calloc(1, (size_t)n + 1);
    if (out && pread(fd, out, (size_t)n, 0) < 0) out[0] = '\0';
    close(fd);
    unlink(path);
    return out;
}

typedef struct {
    const char *src;
    qg_status status;
    int hit;
    char key[65];
} compile_call;

static void do_compile(void *arg) {
    compile_call *c = arg;
    c->status = compile_new(c->src, &c->hit, c->key);
}

/* Compile src with QGEMM_JIT_DEBUG set; *log = what the library printed.
 * QGEMM_JIT_DEBUG adds -lineinfo and so changes the key: every compile of
 * a test that reads the log goes through here. */
static compile_call compile_logged(const char *src, char **log) {
    compile_call c = {.src = src};
    setenv("QGEMM_JIT_DEBUG", "1", 1);
    *log = capture_stderr(do_compile, &c);
    unsetenv("QGEMM_JIT_DEBUG");
    return c;
}

/* ---- a FIFO named like an entry ---- */

TEST(cache_fifo_entry_does_not_hang) {
    char dir[64], path[256], key[65];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    char *src = source(salt());
    CHECK(compile_new(src, NULL, key) == QG_SUCCESS, "%s", qg_last_error());
    snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
    CHECK(unlink(path) == 0 && mkfifo(path, 0600) == 0, "cannot make a FIFO at %s", path);
    /* In a child, so that a hang is a failure and not a stuck test run. */
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        alarm(20);
        int hit = -1;
        qg_status s = compile_new(src, &hit, NULL);
        _exit(s == QG_SUCCESS && hit == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(!WIFSIGNALED(status), "the compile with a FIFO entry hung (killed by signal %d)",
          WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the compile failed or used the FIFO");
    free(src);
    PASS();
}

/* ---- a corrupt entry (a forged hash is the trust test below) ---- */

TEST(cache_corrupt_entry_is_rejected_and_replaced) {
    char dir[64], path[256];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    char *src = source(salt());
    char *log = NULL;
    compile_call c = compile_logged(src, &log);
    free(log);
    CHECK(c.status == QG_SUCCESS, "%s", qg_last_error());
    snprintf(path, sizeof path, "%s/%s.cubin", dir, c.key);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0, "open %s", path);
    CHECK(pwrite(fd, "QGEMMCB1\x01\0\0\0\x38\0\0\0\xff\xff\xff\xff\xff\xff\xff\x7f", 24, 0) == 24,
          "pwrite");
    close(fd);
    c = compile_logged(src, &log);
    CHECK(c.status == QG_SUCCESS && c.hit == 0, "status %d hit %d", c.status, c.hit);
    CHECK(log && strstr(log, "rejected (length mismatch"), "no debug message: %s", log);
    free(log);
    c = compile_logged(src, &log);
    free(log);
    CHECK(c.status == QG_SUCCESS && c.hit == 2, "not rewritten: hit %d", c.hit);
    free(src);
    PASS();
}

/* ---- entries forged with a recomputed hash ---- */

/* Rewrite dir/<key>.cubin as the cache writes it (header, SHA-256 of the
 * body: everything a reader checks) around another cubin: what anyone who
 * can write the directory can do. `like` gives the other fields. */
static void forge_entry(const char *dir, const char *key, const qg_jit_build *like,
                        const void *cubin, size_t size) {
    qg_jit_build b = *like;
    b.cubin = (void *)cubin;
    b.cubin_size = size;
    qg__cache_write(dir, key, &b);
}

/* A cubin whose ELF tables or sections run past its end, or that is not a
 * CUDA ELF image at all, is rejected when read (before any driver sees it),
 * deleted, recompiled and rewritten, with a debug line saying why. */
TEST(cache_forged_entry_with_broken_cubin_is_rejected) {
    char dir[64];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    char *src = source(salt());
    char *log = NULL;
    compile_call c = compile_logged(src, &log);
    free(log);
    CHECK(c.status == QG_SUCCESS, "%s", qg_last_error());
    qg_jit_build good;
    memset(&good, 0, sizeof good);
    CHECK(qg__cache_read(dir, c.key, &good) == 1, "the entry just written does not read back");
    CHECK(qg__cubin_check(good.cubin, good.cubin_size) == NULL, "a real cubin fails the check: %s",
          qg__cubin_check(good.cubin, good.cubin_size));
    const size_t n = good.cubin_size;
    uint8_t *bad = malloc(n);
    CHECK(bad, "out of memory");
    static const struct { const char *what, *why; } cases[] = {
        {"truncated to half", "truncated?"},
        {"truncated by one byte", "truncated?"},
        {"random bytes", "not an ELF image"},
        {"ELF for x86-64", "another machine"},
        {"section table offset past the end", "section header table past the end"},
        {"a section past the end", "a section lies past the end"},
        {"64 bytes of ELF header only", "section header table"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(bad, good.cubin, n);
        size_t size = n;
        switch (i) {
        case 0: size = n / 2; break;
        case 1: size = n - 1; break;
        case 2: for (size_t j = 0; j < n; j++) bad[j] = (uint8_t)(salt() >> (j % 40)); break;
        case 3: bad[0x12] = 62, bad[0x13] = 0; break;
        case 4: memset(bad + 0x28, 0xff, 7); break;
        case 5: { /* section 1's size: the whole image */
            uint64_t shoff = 0;
            for (int b = 0; b < 8; b++) shoff |= (uint64_t)bad[0x28 + b] << (8 * b);
            CHECK(shoff + 128 <= n, "unexpected cubin layout");
            for (int b = 0; b < 8; b++) bad[shoff + 64 + 0x20 + b] = (uint8_t)((uint64_t)n >> (8 * b));
            break;
        }
        case 6: size = 64; break;
        }
        CHECK(qg__cubin_check(bad, size) != NULL, "%s: passes the check", cases[i].what);
        forge_entry(dir, c.key, &good, bad, size);
        c = compile_logged(src, &log);
        CHECK(c.status == QG_SUCCESS && c.hit == 0, "%s: status %d hit %d (%s)", cases[i].what,
              c.status, c.hit, qg_last_error());
        CHECK(log && strstr(log, "rejected (") && strstr(log, cases[i].why),
              "%s: no debug line with '%s': %s", cases[i].what, cases[i].why, log ? log : "");
        free(log);
        c = compile_logged(src, &log);
        free(log);
        CHECK(c.status == QG_SUCCESS && c.hit == 2, "%s: not rewritten (hit %d)", cases[i].what,
              c.hit);
    }
    free(bad);
    qg__build_free(&good);
    free(src);
    PASS();
}

/* A forged entry that is a whole CUDA image, another kernel's: every check
 * of the cache passes and the cubin is handed out (from_disk). The driver
 * would refuse it (no qg_fp8_gemm_kernel in it), and src/launch.c then calls
 * qg__jit_discard: the memory entry goes (its cubin still readable by whoever
 * holds it), so does the file, and the next lookup compiles the real kernel
 * and writes it back. Discarding what did not come from disk, or what was
 * discarded already, touches nothing. (The driver's half is
 * gpu_hostile_forged_cubin_is_recompiled.) */
TEST(cache_forged_entry_refused_by_driver_is_discarded) {
    char dir[64], path[256], gone[512];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    const uint64_t base = salt();
    char *src = source(base), *other = source(base + 1);
    int hit = -1;
    char key[65], other_key[65];
    CHECK(compile_new(src, &hit, key) == QG_SUCCESS && hit == 0, "%s", qg_last_error());
    CHECK(compile_new(other, &hit, other_key) == QG_SUCCESS, "%s", qg_last_error());
    qg_jit_build good, foreign;
    memset(&good, 0, sizeof good);
    memset(&foreign, 0, sizeof foreign);
    CHECK(qg__cache_read(dir, key, &good) == 1 && qg__cache_read(dir, other_key, &foreign) == 1,
          "entries do not read back");
    forge_entry(dir, key, &good, foreign.cubin, foreign.cubin_size);
    snprintf(path, sizeof path, "%s/%s.cubin", dir, key);

    qg_jit_cache *cache = NULL;
    CHECK(qg__jit_cache_create(&cache) == QG_SUCCESS, "%s", qg_last_error());
    qg_jit_result r;
    CHECK(qg__jit_compile(cache, src, &r) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(r.info.cache_hit == 2 && r.from_disk, "the forged entry was not loaded (hit %d)",
          r.info.cache_hit);
    CHECK(r.cubin_size == foreign.cubin_size && memcmp(r.cubin, foreign.cubin, r.cubin_size) == 0,
          "the forged cubin is not what was handed out");
    const void *handed = r.cubin;
    qg_jit_result again;
    CHECK(qg__jit_compile(cache, src, &again) == QG_SUCCESS && again.info.cache_hit == 1 &&
              again.from_disk && again.cubin == handed,
          "a memory hit must say the cubin came from disk (hit %d, from_disk %d)",
          again.info.cache_hit, (int)again.from_disk);

    CHECK(qg__jit_discard(cache, key, handed, gone, sizeof gone), "not discarded");
    CHECK(strcmp(gone, path) == 0, "discarded %s, expected %s", gone, path);
    struct stat st;
    CHECK(stat(path, &st) != 0 && errno == ENOENT, "the refused entry is still on disk");
    /* whoever still holds the refused cubin may read it (ASan: no use after free) */
    CHECK(memcmp(handed, foreign.cubin, foreign.cubin_size) == 0, "the retired cubin changed");
    CHECK(!qg__jit_discard(cache, key, handed, gone, sizeof gone) && gone[0] == '\0',
          "discarded twice");

    CHECK(qg__jit_compile(cache, src, &r) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(r.info.cache_hit == 0 && !r.from_disk && r.cubin != handed,
          "not recompiled after the discard (hit %d)", r.info.cache_hit);
    CHECK(r.info.registers == good.info.registers, "recompiled: %d registers, first %d",
          r.info.registers, good.info.registers);
    CHECK(stat(path, &st) == 0, "the recompiled kernel was not written back");
    /* a fresh compile is not the disk's to discard: nothing happens */
    CHECK(!qg__jit_discard(cache, key, r.cubin, gone, sizeof gone), "a fresh compile discarded");
    CHECK(stat(path, &st) == 0, "the rewritten entry was deleted");
    qg__jit_cache_destroy(cache);
    CHECK(compile_new(src, &hit, NULL) == QG_SUCCESS && hit == 2, "rewritten entry: hit %d", hit);
    qg__build_free(&good);
    qg__build_free(&foreign);
    free(src);
    free(other);
    PASS();
}

/* ---- what the cache creates ---- */

TEST(cache_dir_0700_and_entries_private_under_umask_0) {
    char dir[64], sub[128], path[256], key[65];
    CHECK(fresh_dir(dir), "mkdtemp");
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    setenv("QGEMM_CACHE_DIR", sub, 1);
    mode_t old = umask(0);
    char *src = source(salt());
    qg_status s = compile_new(src, NULL, key);
    umask(old);
    CHECK(s == QG_SUCCESS, "%s", qg_last_error());
    struct stat st;
    snprintf(path, sizeof path, "%s/a", dir);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700, "%s has mode %o", path,
          (unsigned)(st.st_mode & 0777));
    CHECK(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0700, "%s has mode %o", sub,
          (unsigned)(st.st_mode & 0777));
    snprintf(path, sizeof path, "%s/%s.cubin", sub, key);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0077) == 0, "%s has mode %o", path,
          (unsigned)(st.st_mode & 0777));
    free(src);
    PASS();
}

/* ---- entries the user cannot trust ---- */

/* The entry is valid (its hash is right), but someone else could have
 * written it: it must be ignored with a debug message, the kernel compiled,
 * and a trusted entry written in its place. */
static qg_test_result untrusted_entry_ignored(void (*make_untrusted)(const char *), const char *why) {
    char dir[64], path[256];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    char *src = source(salt());
    char *log = NULL;
    compile_call c = compile_logged(src, &log);
    free(log);
    CHECK(c.status == QG_SUCCESS, "%s", qg_last_error());
    snprintf(path, sizeof path, "%s/%s.cubin", dir, c.key);
    make_untrusted(path);
    c = compile_logged(src, &log);
    CHECK(c.status == QG_SUCCESS, "%s", qg_last_error());
    CHECK(c.hit == 0, "the untrusted entry was loaded (hit %d)", c.hit);
    CHECK(log && strstr(log, why), "no debug message with '%s': %s", why, log ? log : "");
    free(log);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0022) == 0,
          "not replaced by a trusted entry");
    c = compile_logged(src, &log);
    free(log);
    CHECK(c.status == QG_SUCCESS && c.hit == 2, "replacement not loaded (hit %d)", c.hit);
    free(src);
    PASS();
}

static void chmod_666(const char *p) { chmod(p, 0666); }
static void chmod_620(const char *p) { chmod(p, 0620); }

TEST(cache_world_writable_entry_ignored) {
    return untrusted_entry_ignored(chmod_666, "writable by group or others");
}

TEST(cache_group_writable_entry_ignored) {
    return untrusted_entry_ignored(chmod_620, "writable by group or others");
}

/* A symbolic link named like an entry, to a valid entry elsewhere: not
 * followed (O_NOFOLLOW), so whoever can write the directory cannot point
 * the cache at a file of their choosing. */
static void symlink_elsewhere(const char *p) {
    char moved[300];
    snprintf(moved, sizeof moved, "%s.elsewhere", p);
    if (rename(p, moved) != 0 || symlink(moved, p) != 0) perror("symlink");
}

TEST(cache_symlinked_entry_ignored) {
    return untrusted_entry_ignored(symlink_elsewhere, "cannot open");
}

static void chown_nobody(const char *p) {
    if (chown(p, 65534, 65534) != 0) perror("chown");
}

TEST(cache_foreign_owned_entry_ignored) {
    if (geteuid() != 0)
        SKIP("not root: cannot make a file owned by another user to test with");
    return untrusted_entry_ignored(chown_nobody, "owned by uid 65534");
}

/* ---- many processes, one directory ---- */

/* 16 processes (offline: NVRTC only) compile at once into one directory:
 * 8 the same kernel, 8 four other kernels two by two; each then loads its
 * kernel again from disk while others may be renaming over it. All succeed;
 * no process ever reads a partial file (QGEMM_JIT_DEBUG would say
 * "rejected"); no temporary file stays behind. */
/* fork() for the 16-process tests: the child dies after 240 s at most, logs
 * its stderr to `log` and runs with QGEMM_JIT_DEBUG (so the log says when an
 * entry was rejected); the parent gets the pid, or -1. */
static pid_t fork_logged(const char *log) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid != 0) return pid;
    alarm(240);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(3);
    setenv("QGEMM_JIT_DEBUG", "1", 1);
    return 0;
}

/* Waits for the n child processes and reads each one's log (then removes
 * it): a process failed when it exited non-zero or logged a rejected entry,
 * a failed compile or a failed reload. Returns how many failed. */
static int wait_processes(const pid_t *pids, char (*logs)[96], int n) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        FILE *f = fopen(logs[i], "r");
        char line[512];
        bool rejected = false;
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, "rejected") || strstr(line, "compile:") || strstr(line, "reload:")) {
                printf("    process %d: %s", i, line);
                rejected = true;
            }
        if (f) fclose(f);
        unlink(logs[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || rejected) {
            printf("    process %d: status %#x\n", i, (unsigned)status);
            bad++;
        }
    }
    return bad;
}

TEST(cache_16_processes_share_one_dir) {
    char dir[64];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    const uint64_t base = salt();
    enum { N = 16 };
    pid_t pids[N];
    char logs[N][96];
    for (int i = 0; i < N; i++) {
        snprintf(logs[i], sizeof logs[i], "%s.log%d", dir, i);
        pids[i] = fork_logged(logs[i]);
        CHECK(pids[i] >= 0, "fork");
        if (pids[i] == 0) {
            char *src = source(i < 8 ? base : base + 1 + (uint64_t)(i - 8) / 2);
            int hit = -1;
            if (compile_new(src, &hit, NULL) != QG_SUCCESS) {
                fprintf(stderr, "compile: %s\n", qg_last_error());
                _exit(1);
            }
            if (compile_new(src, &hit, NULL) != QG_SUCCESS || hit != 2) {
                fprintf(stderr, "reload: hit %d: %s\n", hit, qg_last_error());
                _exit(2);
            }
            _exit(0);
        }
    }
    const int bad = wait_processes(pids, logs, N);
    CHECK(bad == 0, "%d of %d processes failed or read a partial file", bad, N);
    int files = 0;
    DIR *d = opendir(dir);
    CHECK(d, "opendir");
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        files++;
        CHECK(strstr(e->d_name, ".cubin") && !strstr(e->d_name, ".tmp"), "stray file %s",
              e->d_name);
    }
    closedir(d);
    CHECK(files == 5, "%d entries for 5 kernels", files);
    PASS();
}

/* The same through the public API: 16 processes, each with an offline
 * context, qg_compile real GEMM kernels into one directory (8 the same
 * problem, 8 four other problems two by two), then a second offline context
 * in each loads its kernel from disk. */
TEST(cache_16_processes_offline_contexts) {
    char dir[64];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    enum { N = 16 };
    static const int shapes[5][3] = {
        {128, 256, 512}, {256, 512, 256}, {64, 768, 1024}, {512, 256, 384}, {128, 1024, 128}};
    pid_t pids[N];
    char logs[N][96];
    for (int i = 0; i < N; i++) {
        snprintf(logs[i], sizeof logs[i], "%s.log%d", dir, i);
        pids[i] = fork_logged(logs[i]);
        CHECK(pids[i] >= 0, "fork");
        if (pids[i] == 0) {
            const int *s = shapes[i < 8 ? 0 : 1 + (i - 8) / 2];
            const qg_problem p = {QG_GEMM_DENSE, s[0], s[1], s[2], 1, 0, 0};
            for (int round = 0; round < 2; round++) {
                qg_context *ctx = NULL;
                qg_kernel_info info;
                if (qg_context_create_offline(&ctx, NULL) != QG_SUCCESS ||
                    qg_compile(ctx, &p, NULL, &info) != QG_SUCCESS) {
                    fprintf(stderr, "compile: %s\n", qg_last_error());
                    _exit(1);
                }
                if (round == 1 && info.cache_hit != 2) {
                    fprintf(stderr, "reload: hit %d\n", info.cache_hit);
                    _exit(2);
                }
                qg_context_destroy(ctx);
            }
            _exit(0);
        }
    }
    const int bad = wait_processes(pids, logs, N);
    CHECK(bad == 0, "%d of %d processes failed or read a partial file", bad, N);
    DIR *d = opendir(dir);
    CHECK(d, "opendir");
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        files++;
        CHECK(strstr(e->d_name, ".cubin") && !strstr(e->d_name, ".tmp"), "stray file %s",
              e->d_name);
    }
    closedir(d);
    CHECK(files == 5, "%d entries for 5 kernels", files);
    PASS();
}

/* ---- issue 53: the dump, a file-size limit, a shared cache directory ---- */

typedef struct {
    qg_jit_cache *cache;
    const char *src;
    qg_status status;
} shared_compile;

static void *compile_in_shared(void *arg) {
    shared_compile *c = arg;
    qg_jit_result r;
    c->status = qg__jit_compile(c->cache, c->src, &r);
    return NULL;
}

static void dump_into(void *arg) {
    const char **where = arg; /* dir, key */
    qg__cache_dump(where[0], where[1], ".cu", "// text\n");
}

/* FIFOs named <key>.cu and <key>.ptx in the QGEMM_JIT_DUMP directory: the
 * dump opened them for writing without O_NONBLOCK, while the key's memory
 * entry was pending, so the compile and every thread waiting on the entry
 * hung forever. Now the dump is skipped (QGEMM_JIT_DEBUG says why) and the
 * kernel compiles, in both threads. */
TEST(cache_dump_fifo_does_not_hang) {
    char dir[64], dump[128], path[256], key[65];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    char *src = source(salt());
    CHECK(compile_new(src, NULL, key) == QG_SUCCESS, "%s", qg_last_error());
    snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
    CHECK(unlink(path) == 0, "no entry %s", path); /* so NVRTC runs: the .ptx is dumped too */
    snprintf(dump, sizeof dump, "%s/dump", dir);
    CHECK(mkdir(dump, 0700) == 0, "mkdir %s", dump);
    static const char *const exts[] = {".cu", ".ptx"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s%s", dump, key, exts[i]);
        CHECK(mkfifo(path, 0600) == 0, "cannot make a FIFO at %s", path);
    }
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        alarm(30);
        setenv("QGEMM_JIT_DUMP", dump, 1);
        qg_jit_cache *c = NULL;
        if (qg__jit_cache_create(&c) != QG_SUCCESS) _exit(3);
        shared_compile calls[2] = {{c, src, QG_ERROR_INTERNAL}, {c, src, QG_ERROR_INTERNAL}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, compile_in_shared, &calls[i]) != 0) _exit(3);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        qg__jit_cache_destroy(c);
        if (calls[0].status != QG_SUCCESS || calls[1].status != QG_SUCCESS) _exit(1);
        /* the skip is said under QGEMM_JIT_DEBUG */
        setenv("QGEMM_JIT_DEBUG", "1", 1);
        const char *where[2] = {dump, key};
        char *log = capture_stderr(dump_into, (void *)where);
        _exit(log && strstr(log, "skipped: not a regular file") ? 0 : 2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    free(src);
    CHECK(!WIFSIGNALED(status), "a compile with FIFOs in QGEMM_JIT_DUMP hung (killed by signal %d)",
          WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "exit %d: 1 a compile failed, 2 no debug line for the skipped dump, 3 setup",
          WEXITSTATUS(status));
    for (int i = 0; i < 2; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s%s", dump, key, exts[i]);
        CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode), "%s was replaced", path);
    }
    PASS();
}

/* A file-size limit (`ulimit -f`) below one entry: the cache write raised
 * SIGXFSZ and killed the process, leaving <key>.tmp.* behind. Now the write
 * fails (EFBIG), the compile succeeds, nothing is left in the directory, and
 * the thread's signal mask and pending set are as before. */
TEST(cache_write_survives_file_size_limit) {
    char dir[64];
    CHECK(fresh_dir(dir), "mkdtemp");
    setenv("QGEMM_CACHE_DIR", dir, 1);
    char *src = source(salt());
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        alarm(60);
        struct rlimit rl = {.rlim_cur = 1024, .rlim_max = 1024}; /* an entry is several KiB */
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(5);
        int hit = -1;
        qg_status s = compile_new(src, &hit, NULL);
        sigset_t mask, pending;
        pthread_sigmask(SIG_BLOCK, NULL, &mask);
        sigpending(&pending);
        if (sigismember(&mask, SIGXFSZ)) _exit(3);
        if (sigismember(&pending, SIGXFSZ)) _exit(4);
        if (s != QG_SUCCESS || hit != 0) _exit(1);
        /* A caller that blocks SIGXFSZ itself keeps it blocked, and finds
         * none pending that the cache's write raised. */
        sigset_t xfsz;
        sigemptyset(&xfsz);
        sigaddset(&xfsz, SIGXFSZ);
        pthread_sigmask(SIG_BLOCK, &xfsz, NULL);
        char *other = source(salt() + 1);
        s = compile_new(other, &hit, NULL);
        free(other);
        pthread_sigmask(SIG_BLOCK, NULL, &mask);
        sigpending(&pending);
        if (!sigismember(&mask, SIGXFSZ)) _exit(6);
        if (sigismember(&pending, SIGXFSZ)) _exit(4);
        _exit(s == QG_SUCCESS && hit == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    free(src);
    CHECK(!WIFSIGNALED(status), "the compile under a file-size limit died of signal %d%s",
          WTERMSIG(status), WTERMSIG(status) == SIGXFSZ ? " (SIGXFSZ)" : "");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "exit %d: 1 a compile failed, 3 SIGXFSZ left blocked, 4 left pending, 5 setrlimit, "
          "6 the caller's blocked SIGXFSZ unblocked",
          WEXITSTATUS(status));
    DIR *d = opendir(dir);
    CHECK(d, "opendir");
    int files = 0;
    char stray[256] = "";
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && !files++) snprintf(stray, sizeof stray, "%s", e->d_name);
    closedir(d);
    CHECK(files == 0, "%d files left in the cache directory, e.g. %s", files, stray);
    PASS();
}

/* A cache directory another user can create files in (issue 53): they could
 * pre-create <key>.cubin (keys are predictable), refused as foreign and, in
 * a sticky directory, never replaceable. Such a directory is not used: both
 * compiles run NVRTC, nothing is written there, and QGEMM_JIT_DEBUG says so
 * once, naming the directory and why. */
static qg_test_result unsafe_dir_not_used(void (*make_unsafe)(const char *), const char *why) {
    char dir[64], path[256];
    CHECK(fresh_dir(dir), "mkdtemp");
    make_unsafe(dir);
    setenv("QGEMM_CACHE_DIR", dir, 1);
    char *src = source(salt()), *log1 = NULL, *log2 = NULL;
    compile_call c1 = compile_logged(src, &log1), c2 = compile_logged(src, &log2);
    char unsafe[160] = "";
    const bool said = qg__cache_dir_unsafe(dir, unsafe, sizeof unsafe) != NULL;
    chmod(dir, 0700); /* so that it can be removed */
    free(src);
    CHECK(said && strstr(unsafe, why), "qg__cache_dir_unsafe: \"%s\", want \"%s\"", unsafe, why);
    CHECK(c1.status == QG_SUCCESS && c2.status == QG_SUCCESS, "%s", qg_last_error());
    CHECK(c1.hit == 0 && c2.hit == 0, "hits %d, %d: the unsafe directory was used", c1.hit, c2.hit);
    snprintf(path, sizeof path, "%s/%s.cubin", dir, c1.key);
    CHECK(access(path, F_OK) != 0, "%s was written", path);
    CHECK(log1 && strstr(log1, "disk cache disabled") && strstr(log1, dir) && strstr(log1, why) &&
              strstr(log1, "memory only"),
          "the first compile did not say why: %s", log1 ? log1 : "(null)");
    CHECK(log2 && !strstr(log2, "disk cache disabled"), "said twice: %s", log2 ? log2 : "(null)");
    free(log1);
    free(log2);
    PASS();
}

static void chmod_777(const char *p) { chmod(p, 0777); }
static void chmod_1777(const char *p) { chmod(p, 01777); }
static void dir_to_nobody(const char *p) {
    if (chown(p, 65534, 65534) != 0) perror("chown");
    chmod(p, 02775);
}

TEST(cache_world_writable_dir_not_used) { return unsafe_dir_not_used(chmod_777, "writable by others"); }
TEST(cache_sticky_world_writable_dir_not_used) {
    return unsafe_dir_not_used(chmod_1777, "writable by others (mode 1777, sticky");
}
TEST(cache_foreign_owned_dir_not_used) {
    if (geteuid() != 0) SKIP("chown to another user needs root");
    return unsafe_dir_not_used(dir_to_nobody, "owned by uid 65534");
}

/* The user's own private directory is used (the rule refuses no normal cache). */
TEST(cache_own_dir_is_safe) {
    char dir[64], why[160] = "";
    CHECK(fresh_dir(dir), "mkdtemp");
    CHECK(!qg__cache_dir_unsafe(dir, why, sizeof why), "a 0700 directory of ours: %s", why);
    chmod(dir, 0770); /* a group the owner chose to share with (user private groups) */
    CHECK(!qg__cache_dir_unsafe(dir, why, sizeof why), "a 0770 directory of ours: %s", why);
    PASS();
}
