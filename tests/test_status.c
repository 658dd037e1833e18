/*
 * test_status.c -- version, status strings, the per-thread error message,
 * environment switches and the run-time driver loader (CPU only: on a machine
 * without a GPU or driver the loader must fail cleanly).
 */
#include "internal.h"
#include "qg_test.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned fresh_seed(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (unsigned)t.tv_nsec ^ (unsigned)getpid() << 16;
}

TEST(status_strings_distinct_and_nonempty) {
    const char *seen[QG_ERROR_INTERNAL + 1];
    for (int s = QG_SUCCESS; s <= QG_ERROR_INTERNAL; s++) {
        seen[s] = qg_status_string((qg_status)s);
        CHECK(seen[s] && seen[s][0], "status %d has an empty string", s);
        for (int t = 0; t < s; t++)
            CHECK(strcmp(seen[s], seen[t]) != 0, "statuses %d and %d share \"%s\"", s, t, seen[s]);
    }
    int unknown[] = {-1, QG_ERROR_INTERNAL + 1, 1000 + (int)(fresh_seed() % 100000)};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *u = qg_status_string((qg_status)unknown[i]);
        CHECK(u && u[0], "unknown status %d has no string", unknown[i]);
        for (int s = QG_SUCCESS; s <= QG_ERROR_INTERNAL; s++)
            CHECK(strcmp(u, seen[s]) != 0, "unknown status %d reads as status %d", unknown[i], s);
    }
    PASS();
}

TEST(version_matches_macros) {
    CHECK(qg_version() == QG_VERSION_NUMBER, "qg_version() %u vs %d", qg_version(),
          QG_VERSION_NUMBER);
    CHECK(qg_version() == QG_VERSION_MAJOR * 10000u + QG_VERSION_MINOR * 100u + QG_VERSION_PATCH,
          "qg_version() %u does not encode %d.%d.%d", qg_version(), QG_VERSION_MAJOR,
          QG_VERSION_MINOR, QG_VERSION_PATCH);
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", QG_VERSION_MAJOR, QG_VERSION_MINOR,
             QG_VERSION_PATCH);
    CHECK(strcmp(qg_version_string(), expect) == 0, "\"%s\" vs \"%s\"", qg_version_string(),
          expect);
    CHECK(strcmp(QG_VERSION_STRING, expect) == 0, "macro \"%s\" vs \"%s\"", QG_VERSION_STRING,
          expect);
    PASS();
}

/* ---- per-thread messages ---- */

typedef struct {
    int value;
    char initial[64];    /* what the thread saw before failing */
    char message[256];   /* what it saw after */
    qg_status returned;
} thread_probe;

static void *fail_in_thread(void *arg) {
    thread_probe *p = arg;
    snprintf(p->initial, sizeof p->initial, "%s", qg_last_error());
    p->returned = qg__fail(QG_ERROR_UNSUPPORTED, "thread value %d", p->value);
    snprintf(p->message, sizeof p->message, "%s", qg_last_error());
    return NULL;
}

TEST(last_error_is_per_thread) {
    srand(fresh_seed());
    int mine = rand(), theirs = rand();
    char expect[64];
    qg_status r = qg__fail(QG_ERROR_INVALID_ARGUMENT, "lda must be >= %d, got %d", mine, -mine);
    CHECK(r == QG_ERROR_INVALID_ARGUMENT, "qg__fail returned %d", r);
    snprintf(expect, sizeof expect, "lda must be >= %d, got %d", mine, -mine);
    CHECK(strcmp(qg_last_error(), expect) == 0, "got \"%s\"", qg_last_error());

    thread_probe probe = {.value = theirs};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fail_in_thread, &probe) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(probe.initial[0] == '\0', "a new thread starts with \"%s\"", probe.initial);
    CHECK(probe.returned == QG_ERROR_UNSUPPORTED, "returned %d", probe.returned);
    snprintf(expect, sizeof expect, "thread value %d", theirs);
    CHECK(strcmp(probe.message, expect) == 0, "thread saw \"%s\"", probe.message);
    snprintf(expect, sizeof expect, "lda must be >= %d, got %d", mine, -mine);
    CHECK(strcmp(qg_last_error(), expect) == 0, "main thread's message became \"%s\"",
          qg_last_error());

    qg__clear_error();
    CHECK(qg_last_error()[0] == '\0', "cleared message is \"%s\"", qg_last_error());
    PASS();
}

TEST(last_error_long_and_self_referencing) {
    static char big[10000];
    srand(fresh_seed());
    for (size_t i = 0; i + 1 < sizeof big; i++) big[i] = (char)('a' + rand() % 26);
    qg__fail(QG_ERROR_COMPILE, "%s", big);
    size_t len = strlen(qg_last_error());
    CHECK(len > 1000 && len < sizeof big - 1, "long message kept %zu characters", len);
    CHECK(strncmp(qg_last_error(), big, len) == 0, "long message is not a prefix of the input");
    /* Quoting the previous message must work (no overlapping copy). */
    qg__fail(QG_ERROR_INTERNAL, "short %d", 7);
    qg__fail(QG_ERROR_CUDA, "outer: %s", qg_last_error());
    CHECK(strcmp(qg_last_error(), "outer: short 7") == 0, "got \"%s\"", qg_last_error());
    PASS();
}

/* A flag of the table (src/env.c) reads the usual words in any case (issue
 * 53: "false", "off", "no" turned debugging on); any other value is off and
 * named once on stderr. The value is put back before any CHECK can return, so
 * the rest of the run sees the caller's. */
TEST(env_flag_values) {
    const char *name = "QGEMM_PRINT_CONFIG";
    const char *was = getenv(name);
    char saved[256];
    snprintf(saved, sizeof saved, "%s", was ? was : "");
    struct { const char *value; bool expect, refused; } cases[] = {
        {"1", true, false},     {"true", true, false},   {"TRUE", true, false},
        {"On", true, false},    {"yes", true, false},    {"YES", true, false},
        {"0", false, false},    {"false", false, false}, {"False", false, false},
        {"off", false, false},  {"OFF", false, false},   {"no", false, false},
        {"", false, false},     {"00", false, true},     {"2", false, true},
        {"maybe", false, true}, {" 1", false, true},     {"yes please", false, true}};
    enum { N = sizeof cases / sizeof cases[0] };
    bool got[N], said_ok[N], unset_reads, unset_again_reads;
    char said_first[N][200];
    unsetenv(name);
    unset_reads = qg__env_flag(name);
    char err_path[] = "/tmp/qgemm-test-env.XXXXXX";
    int fd = mkstemp(err_path);
    CHECK(fd >= 0, "mkstemp");
    fflush(stderr);
    int saved_fd = dup(2);
    for (size_t i = 0; i < N; i++) {
        setenv(name, cases[i].value, 1);
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) said_first[i][0] = '\0';
        dup2(fd, 2);
        got[i] = qg__env_flag(name);
        (void)qg__env_flag(name); /* a second read of the same value says nothing more */
        fflush(stderr);
        dup2(saved_fd, 2);
        char text[1024] = "";
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        text[n > 0 ? n : 0] = '\0';
        snprintf(said_first[i], sizeof said_first[i], "%s", text);
        char want[128];
        snprintf(want, sizeof want, "qgemm: %s='%s' is not a switch (1/0, true/false, on/off, "
                 "yes/no", name, cases[i].value);
        const char *hit = strstr(text, want);
        said_ok[i] = cases[i].refused
                         ? hit && strstr(hit, "read as off") && !strstr(hit + 1, "qgemm: ")
                         : text[0] == '\0';
    }
    close(saved_fd);
    close(fd);
    unlink(err_path);
    unsetenv(name);
    unset_again_reads = qg__env_flag(name);
    if (was) setenv(name, saved, 1);
    CHECK(!unset_reads, "unset reads as true");
    for (size_t i = 0; i < N; i++) {
        CHECK(got[i] == cases[i].expect, "\"%s\" read as %d", cases[i].value, (int)got[i]);
        CHECK(said_ok[i], "\"%s\": %s, got on stderr: \"%s\"", cases[i].value,
              cases[i].refused ? "want one message naming it" : "want nothing", said_first[i]);
    }
    CHECK(!unset_again_reads, "unset again reads as true");
    PASS();
}

/* Only the table's variables are read: another name reads as unset even when
 * it is set, so a new knob cannot bypass the table; and every entry is named,
 * documented, has a default, and appears once. */
TEST(env_reads_only_the_table) {
    setenv("QGEMM_NOT_IN_THE_TABLE", "1", 1);
    const bool read = qg__env_flag("QGEMM_NOT_IN_THE_TABLE");
    unsetenv("QGEMM_NOT_IN_THE_TABLE");
    CHECK(!read, "a variable outside src/env.c's table was read");
    /* (qg__env_flag keeps a notice slot a knob: 64 of them) */
    CHECK(qg__num_env_knobs >= 5 && qg__num_env_knobs <= 64, "%d knobs", qg__num_env_knobs);
    for (int i = 0; i < qg__num_env_knobs; i++) {
        const qg_env_knob *k = &qg__env_knobs[i];
        CHECK(k->name && k->name[0] && k->meaning && k->meaning[0] && k->fallback && k->fallback[0],
              "entry %d incomplete", i);
        for (int j = 0; j < i; j++) CHECK(strcmp(k->name, qg__env_knobs[j].name), "%s twice", k->name);
    }
    PASS();
}

/* The A/B variables' word lists (qg__env_next_word, QGEMM_FP8OUT_VARIANT's
 * and QGEMM_HC_VARIANT's parser): the words' indices in order, each
 * separator of the set, empty words skipped or refused as asked. */
TEST(env_word_lists) {
    static const char *const names[] = {"ab", "a", "abc"};
    static const struct { const char *v, *seps; bool skip; int want[6]; } cases[] = {
        {"a", "+", false, {1, -1}},          {"abc+a+ab", "+", false, {2, 1, 0, -1}},
        {"a+", "+", false, {1, -2}},         {"a+", "+", true, {1, -1}},
        {"+a", "+", false, {-2}},            {"+a,,ab", "+,", true, {1, 0, -1}},
        {"a,ab", "+", false, {-2}},          {"a,ab", "+,", false, {1, 0, -1}},
        {"abcd", "+", true, {-2}},           {"a+b+ab", "+", true, {1, -2}},
        {"ab+a+", ",+", true, {0, 1, -1}},   {"", "+", true, {-1}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const char *v = cases[c].v;
        int got = 0;
        for (int k = 0; k < 6; ++k) {
            got = qg__env_next_word(&v, cases[c].seps, cases[c].skip, names, 3);
            CHECK(got == cases[c].want[k], "\"%s\" (seps \"%s\", skip %d): word %d is %d, want %d",
                  cases[c].v, cases[c].seps, (int)cases[c].skip, k, got, cases[c].want[k]);
            if (got < 0) break;
        }
        CHECK(got < 0, "\"%s\": no end", cases[c].v);
    }
    PASS();
}

/* The disk cache's directory: QGEMM_CACHE_DIR, else $XDG_CACHE_HOME/qgemm (an
 * absolute XDG_CACHE_HOME only), else $HOME/.cache/qgemm, else none. */
TEST(env_cache_dir_honours_xdg) {
    static const char *const names[] = {"QGEMM_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    char *saved[3];
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(names[i]);
    }
    static const struct {
        const char *dir, *xdg, *home, *want; /* want NULL: no disk cache */
    } cases[] = {
        {"/q/dir", "/x", "/h", "/q/dir"},
        {NULL, "/x/cache", "/h", "/x/cache/qgemm"},
        {NULL, NULL, "/h", "/h/.cache/qgemm"},
        {NULL, "relative/cache", "/h", "/h/.cache/qgemm"},
        {NULL, "", "/h", "/h/.cache/qgemm"},
        {NULL, "/x", NULL, "/x/qgemm"},
        {NULL, NULL, NULL, NULL},
        {NULL, "relative", NULL, NULL},
    };
    bool ok = true;
    char why[512] = "";
    for (size_t c = 0; c < sizeof cases / sizeof cases[0] && ok; c++) {
        const char *vals[3] = {cases[c].dir, cases[c].xdg, cases[c].home};
        for (int i = 0; i < 3; i++) {
            if (vals[i]) setenv(names[i], vals[i], 1);
            else unsetenv(names[i]);
        }
        char buf[256];
        bool got = qg__cache_dir(buf, sizeof buf);
        if (got != (cases[c].want != NULL) || (got && strcmp(buf, cases[c].want) != 0)) {
            ok = false;
            snprintf(why, sizeof why, "case %zu: got %s \"%s\", want \"%s\"", c,
                     got ? "true" : "false", buf, cases[c].want ? cases[c].want : "(none)");
        }
    }
    for (int i = 0; i < 3; i++) {
        if (saved[i]) setenv(names[i], saved[i], 1);
        else unsetenv(names[i]);
        free(saved[i]);
    }
    CHECK(ok, "%s", why);
    PASS();
}

/* ---- NVRTC, loaded at run time ---- */

/* A search that finds nothing names every path it tried, and why each failed:
 * a missing file, a file that is no library, a library without NVRTC's entry
 * points (libm under NVRTC's name). */
TEST(nvrtc_search_names_every_path_tried) {
    char dir[] = "/tmp/qgemm-nvrtc-test-XXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp failed");
    char fake[256], wrong[256];
    snprintf(fake, sizeof fake, "%s/libnvrtc.so.13", dir);
    FILE *f = fopen(fake, "w");
    CHECK(f, "cannot create %s", fake);
    fputs("not an ELF file\n", f);
    fclose(f);
    Dl_info libm;
    double (*cos_fn)(double) = cos;
    void *cos_addr;
    memcpy(&cos_addr, &cos_fn, sizeof cos_addr);
    bool have_libm = dladdr(cos_addr, &libm) && libm.dli_fname && libm.dli_fname[0] == '/';
    snprintf(wrong, sizeof wrong, "%s/libnvrtc.so.12", dir);
    if (have_libm) CHECK(symlink(libm.dli_fname, wrong) == 0, "symlink %s", wrong);

    qg_nvrtc table;
    char path[256];
    qg__clear_error();
    qg_status st = qg__nvrtc_search(dir, "/nonexistent/qgemm-cuda", false, &table, path,
                                    sizeof path);
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", qg_last_error());
    unlink(fake);
    unlink(wrong);
    rmdir(dir);
    CHECK(st == QG_ERROR_COMPILE, "status %d (%s)", st, msg);
    CHECK(strstr(msg, "NVRTC not found") && strstr(msg, "nvidia-cuda-nvrtc"), "%s", msg);
    CHECK(strstr(msg, fake), "%s not named: %s", fake, msg);
    if (have_libm) CHECK(strstr(msg, "no nvrtcVersion"), "libm not refused by name: %s", msg);
    static const char *const tried[] = {
        "/nonexistent/qgemm-cuda/lib64/libnvrtc.so.13", "/nonexistent/qgemm-cuda/lib64/libnvrtc.so.12",
        "/nonexistent/qgemm-cuda/lib64/libnvrtc.so", "/nonexistent/qgemm-cuda/lib/libnvrtc.so.13",
    };
    for (size_t i = 0; i < sizeof tried / sizeof tried[0]; i++)
        CHECK(strstr(msg, tried[i]), "%s not named: %s", tried[i], msg);
    CHECK(strstr(msg, "No such file"), "no reason given: %s", msg);
    PASS();
}

/* The process's NVRTC: loaded once, same answer every time; when found, the
 * directory it came from finds it again without the system loader. */
TEST(nvrtc_load_is_stable_and_found_by_dir) {
    const qg_nvrtc *n1 = NULL, *n2 = NULL;
    qg__clear_error();
    qg_status s1 = qg__nvrtc_load(&n1);
    char m1[4096];
    snprintf(m1, sizeof m1, "%s", qg_last_error());
    qg__clear_error();
    qg_status s2 = qg__nvrtc_load(&n2);
    CHECK(s1 == s2 && n1 == n2, "loads differ: %d %d", s1, s2);
    CHECK(strcmp(m1, qg_last_error()) == 0, "messages differ");
    if (s1 != QG_SUCCESS) {
        CHECK(s1 == QG_ERROR_COMPILE && strstr(m1, "NVRTC not found"), "%d: %s", s1, m1);
        CHECK(qg__nvrtc_path() == NULL, "a path without NVRTC");
        SKIP("no NVRTC on this machine: %s", m1);
    }
    int major = 0, minor = 0;
    CHECK(n1->nvrtcVersion(&major, &minor) == NVRTC_SUCCESS && major >= 12, "version %d.%d",
          major, minor);
    const char *loaded = qg__nvrtc_path();
    CHECK(loaded && loaded[0], "no path");
    const char *slash = strrchr(loaded, '/');
    if (!slash) SKIP("NVRTC came from the system loader (%s): no directory to search", loaded);
    char dir[1024];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - loaded), loaded);
    qg_nvrtc table;
    char path[1024];
    CHECK(qg__nvrtc_search(dir, NULL, false, &table, path, sizeof path) == QG_SUCCESS, "%s",
          qg_last_error());
    CHECK(strncmp(path, dir, strlen(dir)) == 0, "found %s outside %s", path, dir);
    PASS();
}

/* ---- the driver ---- */

TEST(driver_load_is_clean_and_stable) {
    const qg_driver *d1 = (const qg_driver *)&d1, *d2 = (const qg_driver *)&d2;
    qg__clear_error();
    qg_status s1 = qg__driver_load(&d1);
    char m1[1024];
    snprintf(m1, sizeof m1, "%s", qg_last_error());
    qg__clear_error();
    qg_status s2 = qg__driver_load(&d2);
    CHECK(s1 == s2, "first load %d, second %d", s1, s2);
    CHECK(strcmp(m1, qg_last_error()) == 0, "messages differ: \"%s\" vs \"%s\"", m1,
          qg_last_error());
    if (s1 == QG_SUCCESS) {
        CHECK(d1 && d1 == d2, "driver tables %p %p", (const void *)d1, (const void *)d2);
        /* Every entry point was resolved. */
        const unsigned char *bytes = (const unsigned char *)d1;
        for (size_t off = 0; off < sizeof *d1; off += sizeof(void (*)(void))) {
            void (*fn)(void);
            memcpy(&fn, bytes + off, sizeof fn);
            CHECK(fn != NULL, "driver entry at offset %zu is NULL", off);
        }
        int version = 0;
        CHECK(d1->cuDriverGetVersion(&version) == CUDA_SUCCESS && version >= 12000,
              "driver version %d", version);
        printf("    driver loaded (CUDA %d.%d)\n", version / 1000, version % 1000 / 10);
    } else {
        CHECK(s1 == QG_ERROR_NO_DRIVER || s1 == QG_ERROR_NO_DEVICE, "status %d (%s): %s", s1,
              qg_status_string(s1), m1);
        CHECK(m1[0], "failure without a message");
        CHECK(d1 == NULL && d2 == NULL, "out not cleared on failure");
        printf("    no driver here: %s: %s\n", qg_status_string(s1), m1);
    }
    PASS();
}

TEST(cuda_fail_maps_and_formats) {
    struct { CUresult r; qg_status expect; } cases[] = {
        {CUDA_ERROR_OUT_OF_MEMORY, QG_ERROR_OUT_OF_MEMORY},
        {CUDA_ERROR_LAUNCH_FAILED, QG_ERROR_LAUNCH},
        {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, QG_ERROR_LAUNCH},
        {CUDA_ERROR_INVALID_IMAGE, QG_ERROR_LAUNCH},
        {CUDA_ERROR_NO_BINARY_FOR_GPU, QG_ERROR_LAUNCH},
        {CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, QG_ERROR_LAUNCH},
        {CUDA_ERROR_INVALID_VALUE, QG_ERROR_CUDA},
        {CUDA_ERROR_INVALID_CONTEXT, QG_ERROR_CUDA},
        {CUDA_ERROR_NO_DEVICE, QG_ERROR_NO_DEVICE},
    };
    srand(fresh_seed());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[64], prefix[80], code[32];
        snprintf(what, sizeof what, "cuSomething(arg %d)", rand() % 1000);
        qg_status s = qg__cuda_fail(cases[i].r, what);
        CHECK(s == cases[i].expect, "CUresult %d mapped to %d, expected %d", (int)cases[i].r, s,
              cases[i].expect);
        snprintf(prefix, sizeof prefix, "%s: ", what);
        snprintf(code, sizeof code, "(CUresult %d)", (int)cases[i].r);
        CHECK(strncmp(qg_last_error(), prefix, strlen(prefix)) == 0, "message \"%s\"",
              qg_last_error());
        CHECK(strstr(qg_last_error(), code) != NULL, "message \"%s\" lacks %s", qg_last_error(),
              code);
        CHECK(strlen(qg_last_error()) > strlen(prefix) + strlen(code) + 1,
              "message \"%s\" has no description", qg_last_error());
    }
    PASS();
}

/* The driver a pip NVRTC needs (minor version compatibility): CUDA 13's
 * kernels want R580+, CUDA 12's 525.60.13+; the sentence names both versions
 * and the minimum, and a new enough driver gives NULL. */
TEST(driver_too_old_names_the_minimum) {
    char buf[512];
    const char *m = qg__driver_too_old(12080, 13, 0, buf, sizeof buf);
    CHECK(m && strstr(m, "CUDA 12.8") && strstr(m, "NVRTC 13.0") && strstr(m, "580 or newer"),
          "12.8 driver, NVRTC 13.0: %s", m ? m : "(null)");
    m = qg__driver_too_old(11080, 12, 4, buf, sizeof buf);
    CHECK(m && strstr(m, "525.60.13 or newer") && strstr(m, "CUDA 11.x"), "11.8, NVRTC 12.4: %s",
          m ? m : "(null)");
    m = qg__driver_too_old(13000, 14, 0, buf, sizeof buf);
    CHECK(m && strstr(m, "CUDA 14.0 or newer"), "13.0, NVRTC 14.0: %s", m ? m : "(null)");
    CHECK(!qg__driver_too_old(13000, 13, 0, buf, sizeof buf), "13.0 driver, NVRTC 13.0");
    CHECK(!qg__driver_too_old(13020, 13, 1, buf, sizeof buf), "13.2 driver, NVRTC 13.1");
    CHECK(!qg__driver_too_old(12080, 12, 9, buf, sizeof buf), "12.8 driver, NVRTC 12.9 (minor compat)");
    CHECK(!qg__driver_too_old(0, 13, 0, buf, sizeof buf), "no driver version: nothing to say");
    CHECK(!qg__driver_too_old(12080, 13, 0, buf, 0), "no buffer");
    PASS();
}
