/*
 * test_jit.c -- SHA-256 and the run-time compiler: keys, memory and disk
 * caches, corruption handling, spill rejection, compile errors, threads.
 * CPU only (NVRTC needs no GPU). Every test points QGEMM_CACHE_DIR at a fresh
 * temporary directory and salts its kernel sources with a random number, so
 * no test sees another's cache entries (or the user's ~/.cache/qgemm).
 */
#include "internal.h"
#include "qg_test.h"
#include "qgtk.h"
#include "sha256.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ---- */

static uint64_t rng_state;

static uint64_t rnd(void) {
    if (!rng_state) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        rng_state = ((uint64_t)t.tv_nsec << 20) ^ (uint64_t)t.tv_sec ^ (uint64_t)getpid() << 40;
        rng_state |= 1;
    }
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Temporary directories made by this file, removed at exit. */
static char made_dirs[64][64];
static int num_made_dirs;

static void remove_made_dirs(void) {
    for (int i = 0; i < num_made_dirs; i++) qgtk_remove_tree(made_dirs[i]);
}

/* A fresh directory, also made the JIT's disk cache. */
static const char *fresh_cache_dir(char buf[64]) {
    snprintf(buf, 64, "/tmp/qgemm-test-jit.XXXXXX");
    if (!mkdtemp(buf)) return NULL;
    setenv("QGEMM_CACHE_DIR", buf, 1);
    if (num_made_dirs == 0) atexit(remove_made_dirs);
    if (num_made_dirs < 64) snprintf(made_dirs[num_made_dirs++], 64, "%s", buf);
    return buf;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void cache_file(char *out, size_t len, const char *dir, const char *key) {
    snprintf(out, len, "%s/%s.cubin", dir, key);
}

static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A warp-specialized kernel: the producer warpgroup gives registers away,
 * the two math warpgroups take them (as the real kernels do). `salt` makes
 * the source, and so the key, unique to one test run. */
static char *ws_source(uint64_t salt) {
    char *s = malloc(4096);
    snprintf(s, 4096,
             "// salt %llu\n"
             "extern \"C\" __global__ void __launch_bounds__(384, 1)\n"
             "qg_test_ws(float *out, const float *in, int n) {\n"
             "    const int wg = threadIdx.x / 128;\n"
             "    if (wg == 0) {\n"
             "        asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\\n\" ::: \"memory\");\n"
             "        if (threadIdx.x == 0) out[blockIdx.x] = %u.0f;\n"
             "    } else {\n"
             "        asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\\n\" ::: \"memory\");\n"
             "        float acc = in[threadIdx.x];\n"
             "        for (int i = 0; i < n; i++)\n"
             "            acc = fmaf(acc, 0.5f, in[(i * 7 + threadIdx.x) %% n]);\n"
             "        out[threadIdx.x + 384 * blockIdx.x] = acc * %u.0f;\n"
             "    }\n"
             "}\n",
             (unsigned long long)salt, (unsigned)(salt % 1000), (unsigned)(salt >> 40));
    return s;
}

static bool same_info(const qg_kernel_info *a, const qg_kernel_info *b) {
    return a->registers == b->registers && a->spill_store_bytes == b->spill_store_bytes &&
           a->spill_load_bytes == b->spill_load_bytes &&
           a->stack_frame_bytes == b->stack_frame_bytes && a->ptx_has_wgmma == b->ptx_has_wgmma &&
           a->ptx_has_tma_load == b->ptx_has_tma_load &&
           a->ptx_has_tma_store == b->ptx_has_tma_store &&
           a->ptx_has_setmaxnreg == b->ptx_has_setmaxnreg &&
           a->ptx_has_stmatrix == b->ptx_has_stmatrix &&
           a->ptx_has_multicast == b->ptx_has_multicast && strcmp(a->key, b->key) == 0;
}

/* Compile `source` in a brand-new cache (a fresh "context"). */
static qg_status compile_fresh(const char *source, qg_jit_result *r, void **cubin_copy) {
    qg_jit_cache *c = NULL;
    qg_status s = qg__jit_cache_create(&c);
    if (s != QG_SUCCESS) return s;
    s = qg__jit_compile(c, source, r);
    if (cubin_copy) {
        *cubin_copy = NULL;
        if (s == QG_SUCCESS && (*cubin_copy = malloc(r->cubin_size)))
            memcpy(*cubin_copy, r->cubin, r->cubin_size);
    }
    r->cubin = NULL; /* it died with the cache */
    qg__jit_cache_destroy(c);
    return s;
}

/* ---- SHA-256 ---- */

static void hex_of(const void *data, size_t len, char hex[65]) {
    uint8_t d[32];
    qg__sha256(data, len, d);
    qg__sha256_hex(d, hex);
}

TEST(sha256_known_vectors) {
    /* FIPS 180-4 / NIST example values. */
    char hex[65];
    hex_of("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "%s",
          hex);
    hex_of("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "%s",
          hex);
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two, strlen(two), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "%s",
          hex);
    static char million[1000000];
    memset(million, 'a', sizeof million);
    hex_of(million, sizeof million, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "%s",
          hex);
    PASS();
}

TEST(sha256_streaming_equals_oneshot) {
    static uint8_t buf[5000];
    for (int round = 0; round < 20; round++) {
        size_t len = rnd() % sizeof buf;
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rnd();
        uint8_t one[32], streamed[32];
        qg__sha256(buf, len, one);
        qg_sha256 s;
        qg__sha256_init(&s);
        for (size_t at = 0; at < len;) {
            size_t step = rnd() % 130;
            if (step > len - at) step = len - at;
            qg__sha256_update(&s, buf + at, step);
            at += step;
        }
        qg__sha256_final(&s, streamed);
        CHECK(memcmp(one, streamed, 32) == 0, "length %zu differs when streamed", len);
        if (len) {
            buf[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
            qg__sha256(buf, len, streamed);
            CHECK(memcmp(one, streamed, 32) != 0, "a flipped bit kept the digest");
        }
    }
    PASS();
}

/* ---- compile, memory hit, disk hit ---- */

TEST(jit_compile_memory_and_disk_hits) {
    char dir[64], path[256];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    char *src = ws_source(rnd());

    qg_jit_cache *c = NULL;
    CHECK(qg__jit_cache_create(&c) == QG_SUCCESS && c, "cache_create: %s", qg_last_error());
    qg_jit_result r1, r2;
    qg_status s = qg__jit_compile(c, src, &r1);
    CHECK(s == QG_SUCCESS, "compile: %s", qg_last_error());
    CHECK(r1.cubin && r1.cubin_size > 4, "no cubin");
    CHECK(memcmp(r1.cubin, "\x7f" "ELF", 4) == 0, "a cubin is an ELF image");
    CHECK(r1.info.cache_hit == 0, "first compile reports cache_hit %d", r1.info.cache_hit);
    CHECK(r1.info.registers > 0, "registers %d", r1.info.registers);
    CHECK(r1.info.spill_store_bytes == 0 && r1.info.spill_load_bytes == 0 &&
              r1.info.stack_frame_bytes == 0,
          "spills %d/%d stack %d", r1.info.spill_store_bytes, r1.info.spill_load_bytes,
          r1.info.stack_frame_bytes);
    CHECK(r1.info.ptx_has_setmaxnreg, "setmaxnreg not seen in the PTX");
    CHECK(!r1.info.ptx_has_wgmma && !r1.info.ptx_has_tma_load && !r1.info.ptx_has_tma_store &&
              !r1.info.ptx_has_stmatrix && !r1.info.ptx_has_multicast,
          "features the kernel does not use were reported");
    CHECK(strlen(r1.info.key) == 64 && strspn(r1.info.key, "0123456789abcdef") == 64,
          "key \"%s\"", r1.info.key);
    CHECK(r1.info.compile_ms > 0, "compile_ms %g", r1.info.compile_ms);
    cache_file(path, sizeof path, dir, r1.info.key);
    CHECK(file_size(path) > (long)r1.cubin_size, "disk cache file %s missing or short", path);
    CHECK(count_files(dir) == 1, "%d files in the cache dir (temporary files left?)",
          count_files(dir));

    s = qg__jit_compile(c, src, &r2);
    CHECK(s == QG_SUCCESS && r2.info.cache_hit == 1, "second call: status %d hit %d", s,
          r2.info.cache_hit);
    CHECK(r2.cubin == r1.cubin && r2.cubin_size == r1.cubin_size, "memory hit returned a copy");
    CHECK(same_info(&r1.info, &r2.info), "memory hit changed the info");

    /* A fresh cache (another context or process) finds the file. */
    void *copy = NULL;
    s = compile_fresh(src, &r2, &copy);
    CHECK(s == QG_SUCCESS && r2.info.cache_hit == 2, "fresh cache: status %d hit %d (%s)", s,
          r2.info.cache_hit, qg_last_error());
    CHECK(copy && r2.cubin_size == r1.cubin_size && memcmp(copy, r1.cubin, r1.cubin_size) == 0,
          "disk hit returned different cubin bytes");
    CHECK(same_info(&r1.info, &r2.info), "disk hit changed the info");
    free(copy);

    /* Any change to the source changes the key. */
    char *other = ws_source(rnd());
    s = qg__jit_compile(c, other, &r2);
    CHECK(s == QG_SUCCESS && r2.info.cache_hit == 0, "other source: status %d hit %d", s,
          r2.info.cache_hit);
    CHECK(strcmp(r1.info.key, r2.info.key) != 0, "two sources share key %s", r1.info.key);
    qg__jit_cache_destroy(c);
    free(other);
    free(src);
    PASS();
}

TEST(jit_debug_changes_key_and_dumps) {
    char dir[64], dump[80], path[300];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    snprintf(dump, sizeof dump, "%s/dump", dir);
    char *src = ws_source(rnd());
    qg_jit_result plain, dbg;
    CHECK(compile_fresh(src, &plain, NULL) == QG_SUCCESS, "%s", qg_last_error());

    /* Send stderr to a file to read the debug line back. */
    char err_path[96];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(saved >= 0 && fd >= 0, "cannot redirect stderr");
    dup2(fd, 2);
    close(fd);
    setenv("QGEMM_JIT_DEBUG", "1", 1); /* adds -lineinfo: another binary, another key */
    setenv("QGEMM_JIT_DUMP", dump, 1);
    qg_status s = compile_fresh(src, &dbg, NULL);
    unsetenv("QGEMM_JIT_DEBUG");
    unsetenv("QGEMM_JIT_DUMP");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK(s == QG_SUCCESS && dbg.info.cache_hit == 0, "debug compile: %d hit %d: %s", s,
          dbg.info.cache_hit, qg_last_error());
    CHECK(strcmp(plain.info.key, dbg.info.key) != 0, "QGEMM_JIT_DEBUG kept the key");

    char *text = calloc(1, 8192);
    FILE *f = fopen(err_path, "r");
    CHECK(f, "no stderr capture");
    size_t n = fread(text, 1, 8191, f);
    fclose(f);
    text[n] = '\0';
    char expect[64], regs[32];
    snprintf(expect, sizeof expect, "qgemm jit: %.16s compiled", dbg.info.key);
    snprintf(regs, sizeof regs, "%d registers", dbg.info.registers);
    CHECK(strstr(text, expect) && strstr(text, regs) && strstr(text, "ptxas"),
          "debug output lacks \"%s\", \"%s\" or the report: %s", expect, regs, text);

    snprintf(path, sizeof path, "%s/%s.cu", dump, dbg.info.key);
    f = fopen(path, "r");
    CHECK(f, "no dump %s", path);
    memset(text, 0, 8192);
    n = fread(text, 1, 8191, f);
    fclose(f);
    CHECK(n == strlen(src) && strcmp(text, src) == 0, "dumped source differs");
    snprintf(path, sizeof path, "%s/%s.ptx", dump, dbg.info.key);
    f = fopen(path, "r");
    CHECK(f, "no dump %s", path);
    n = fread(text, 1, 8191, f);
    fclose(f);
    text[n] = '\0';
    CHECK(strstr(text, ".target sm_90a"), "dumped PTX does not target sm_90a");
    free(text);
    free(src);
    PASS();
}

/* ---- PTX feature flags ---- */

/* One kernel per Hopper feature, each with exactly that inline PTX. */
static const char *feature_body[] = {
    /* 0 wgmma */
    "float d0 = c, d1 = 0, d2 = 0, d3 = 0;\n"
    "asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
    "asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %6, 0;\\n"
    "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\\n}\\n\""
    " : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3) : \"l\"(da), \"l\"(db), \"r\"(c));\n"
    "asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n"
    "asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");\n"
    "out[threadIdx.x] = d0 + d1 + d2 + d3;\n",
    /* 1 TMA load */
    "asm volatile(\"cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
    " [%0], [%1, {%2}], [%3];\" :: \"r\"(s), \"l\"(tmap), \"r\"(c), \"r\"(b) : \"memory\");\n",
    /* 2 TMA store */
    "asm volatile(\"cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%1}], [%2];\""
    " :: \"l\"(tmap), \"r\"(c), \"r\"(s) : \"memory\");\n",
    /* 3 setmaxnreg */
    "asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\\n\" ::: \"memory\");\n"
    "out[threadIdx.x] = c;\n",
    /* 4 stmatrix */
    "asm volatile(\"stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};\" :: \"r\"(s), \"r\"(c)"
    " : \"memory\");\n",
    /* 5 TMA multicast load (also a TMA load) */
    "asm volatile(\"cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
    ".multicast::cluster [%0], [%1, {%2}], [%3], %4;\" :: \"r\"(s), \"l\"(tmap), \"r\"(c),"
    " \"r\"(b), \"h\"((unsigned short)3) : \"memory\");\n",
};

static int feature_flag(const qg_kernel_info *i, int f) {
    int flags[] = {i->ptx_has_wgmma,      i->ptx_has_tma_load, i->ptx_has_tma_store,
                   i->ptx_has_setmaxnreg, i->ptx_has_stmatrix, i->ptx_has_multicast};
    return flags[f];
}

TEST(jit_ptx_feature_flags) {
    char dir[64];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    const int nf = (int)(sizeof feature_body / sizeof feature_body[0]);
    for (int f = 0; f < nf; f++) {
        char *src = malloc(8192);
        snprintf(src, 8192,
                 "// salt %llu\n"
                 "extern \"C\" __global__ void __launch_bounds__(128, 1)\n"
                 "qg_test_feature(unsigned long long tmap, unsigned long long da,\n"
                 "                unsigned long long db, float *out, int c) {\n"
                 "    __shared__ __align__(128) unsigned char smem[1024];\n"
                 "    __shared__ __align__(8) unsigned long long bar;\n"
                 "    unsigned s = (unsigned)__cvta_generic_to_shared(smem);\n"
                 "    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);\n"
                 "    (void)s; (void)b; (void)tmap; (void)da; (void)db;\n"
                 "%s"
                 "}\n",
                 (unsigned long long)rnd(), feature_body[f]);
        qg_jit_result r;
        qg_status s = compile_fresh(src, &r, NULL);
        free(src);
        CHECK(s == QG_SUCCESS, "feature %d: %s", f, qg_last_error());
        for (int g = 0; g < nf; g++) {
            int expect = g == f || (f == 5 && g == 1);
            CHECK(feature_flag(&r.info, g) == expect, "kernel using feature %d reports flag %d = %d",
                  f, g, feature_flag(&r.info, g));
        }
    }
    PASS();
}

/* ---- embedded files ---- */

TEST(jit_embedded_files_are_includable) {
    if (qg__num_kernel_files == 0) SKIP("no kernel files embedded in this build");
    char dir[64];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    /* __has_include resolves names without compiling the headers, so this
     * test does not depend on what the kernels need to be #defined first. */
    size_t cap = 4096 + 200 * (size_t)qg__num_kernel_files;
    char *src = malloc(cap);
    size_t n = (size_t)snprintf(src, cap, "// salt %llu\n", (unsigned long long)rnd());
    for (int i = 0; i < qg__num_kernel_files; i++)
        n += (size_t)snprintf(src + n, cap - n, "#if !__has_include(\"%s\")\n#error missing %s\n#endif\n",
                              qg__kernel_files[i].name, qg__kernel_files[i].name);
    snprintf(src + n, cap - n,
             "#if __has_include(\"qg_absent_%llx.cuh\")\n#error phantom header\n#endif\n"
             "extern \"C\" __global__ void qg_test_inc(float *p) { p[threadIdx.x] = 1.0f; }\n",
             (unsigned long long)rnd());
    qg_jit_result r;
    qg_status s = compile_fresh(src, &r, NULL);
    free(src);
    CHECK(s == QG_SUCCESS, "%s", qg_last_error());
    PASS();
}

/* ---- corruption of the disk cache ---- */

/* Damage the file with `how`, then check that a fresh cache recompiles,
 * succeeds and leaves a valid file that the next fresh cache loads: the
 * cubin it compiled, whole. (Not necessarily good's bytes: with a driver,
 * a recompile served from its compute cache is compiled again with a salt
 * variable, so that ptxas reports; see compile_uncached in src/jit.c.) */
static qg_test_result damaged_file_recompiles(const char *src, const char *path,
                                              const qg_jit_result *good, void (*how)(const char *)) {
    how(path);
    qg_jit_result r;
    void *copy = NULL;
    qg_status s = compile_fresh(src, &r, &copy);
    CHECK(s == QG_SUCCESS, "after damage: %s", qg_last_error());
    CHECK(r.info.cache_hit == 0, "damaged file was used (cache_hit %d)", r.info.cache_hit);
    CHECK(same_info(&r.info, &good->info), "recompiled info differs");
    void *compiled = copy;
    const size_t compiled_size = r.cubin_size;
    s = compile_fresh(src, &r, &copy);
    CHECK(s == QG_SUCCESS && r.info.cache_hit == 2, "rewritten file not loaded: %d hit %d", s,
          r.info.cache_hit);
    CHECK(copy && compiled && r.cubin_size == compiled_size &&
              memcmp(copy, compiled, compiled_size) == 0,
          "rewritten cubin (%zu bytes) is not the one compiled (%zu bytes)", r.cubin_size,
          compiled_size);
    free(compiled);
    free(copy);
    return QG_T_PASS;
}

static void truncate_half(const char *path) {
    long size = file_size(path);
    if (truncate(path, size / 2 + (long)(rnd() % (size_t)(size / 2))) != 0) perror("truncate");
}

static void flip_random_byte(const char *path) {
    long size = file_size(path);
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    long at = (long)(rnd() % (uint64_t)size);
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ (1 << (rnd() % 8)), f);
    fclose(f);
}

static void flip_last_byte(const char *path) {
    long size = file_size(path);
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, size - 1, SEEK_SET);
    int c = fgetc(f);
    fseek(f, size - 1, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

static void replace_with_garbage(const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    size_t n = 1 + rnd() % 5000;
    for (size_t i = 0; i < n; i++) fputc((int)(rnd() & 255), f);
    fclose(f);
}

static void empty_file(const char *path) {
    FILE *f = fopen(path, "wb");
    if (f) fclose(f);
}

TEST(jit_corrupt_disk_cache_is_recompiled) {
    char dir[64], path[256];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    char *src = ws_source(rnd());
    qg_jit_result good;
    CHECK(compile_fresh(src, &good, NULL) == QG_SUCCESS, "%s", qg_last_error());
    cache_file(path, sizeof path, dir, good.info.key);
    CHECK(file_size(path) > 0, "no cache file");
    void (*damages[])(const char *) = {truncate_half, flip_last_byte, flip_random_byte,
                                        flip_random_byte, flip_random_byte, replace_with_garbage,
                                        empty_file};
    for (size_t i = 0; i < sizeof damages / sizeof damages[0]; i++) {
        qg_test_result t = damaged_file_recompiles(src, path, &good, damages[i]);
        if (t != QG_T_PASS) {
            printf("    (damage #%zu)\n", i);
            return t;
        }
    }
    free(src);
    PASS();
}

/* ---- failures ---- */

/* A kernel the JIT must refuse, compiled twice in a fresh cache directory:
 * each attempt fails with QG_ERROR_COMPILE, hands out no cubin, is not served
 * from the cache (a refused kernel is not cached), writes nothing to disk,
 * and names the kernel's key and every string of `why` (NULL-terminated) in
 * its message. r[attempt] receives each attempt's result. */
static qg_test_result expect_rejected(const char *src, const char *const *why, qg_jit_result r[2]) {
    char dir[64], path[256];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    qg_jit_cache *c = NULL;
    CHECK(qg__jit_cache_create(&c) == QG_SUCCESS, "%s", qg_last_error());
    for (int attempt = 0; attempt < 2; attempt++) {
        qg__clear_error();
        qg_status s = qg__jit_compile(c, src, &r[attempt]);
        CHECK(s == QG_ERROR_COMPILE, "attempt %d: status %d (%s)", attempt, s, qg_last_error());
        CHECK(r[attempt].cubin == NULL, "a rejected kernel came with a cubin");
        CHECK(r[attempt].info.cache_hit == 0, "attempt %d: cache_hit %d", attempt,
              r[attempt].info.cache_hit);
        for (const char *const *w = why; *w; w++)
            CHECK(strstr(qg_last_error(), *w), "message lacks \"%s\": %s", *w, qg_last_error());
        CHECK(strstr(qg_last_error(), r[attempt].info.key), "message lacks the key: %s",
              qg_last_error());
        cache_file(path, sizeof path, dir, r[attempt].info.key);
        CHECK(file_size(path) < 0, "a rejected kernel was written to disk");
    }
    qg__jit_cache_destroy(c);
    PASS();
}

TEST(jit_rejects_serialized_wgmma) {
    char src[2048];
    /* Reading a wgmma's accumulator before the wait that retires it makes
     * ptxas inject a wait (C7517; C7514 serializes the wgmmas): the kernel
     * would be correct and slow. */
    snprintf(src, sizeof src,
             "// salt %llu\n"
             "extern \"C\" __global__ void qg_test_serialized(float *p, unsigned long long da,\n"
             "                                                unsigned long long db) {\n"
             "    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;\n"
             "    asm volatile(\"wgmma.fence.sync.aligned;\\n\"\n"
             "                 \"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 \"\n"
             "                 \"{%%0, %%1, %%2, %%3}, %%4, %%5, 1, 1, 1;\\n\"\n"
             "                 \"wgmma.commit_group.sync.aligned;\"\n"
             "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3) : \"l\"(da), \"l\"(db));\n"
             "    p[threadIdx.x] = d0 + d1;\n"
             "    asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n"
             "    p[threadIdx.x + 128] = d2 + d3;\n"
             "}\n",
             (unsigned long long)rnd());
    static const char *const why[] = {"serialized", NULL};
    qg_jit_result r[2];
    return expect_rejected(src, why, r);
}

TEST(jit_rejects_spilling_kernel) {
    char src[1024];
    /* A local array indexed at run time lives in local memory: a stack frame. */
    snprintf(src, sizeof src,
             "// salt %llu\n"
             "extern \"C\" __global__ void qg_test_spill(float *p, int i) {\n"
             "    float local[256];\n"
             "    for (int j = 0; j < 256; j++) local[j] = p[j] * j;\n"
             "    p[0] = local[i & 255];\n"
             "}\n",
             (unsigned long long)rnd());
    static const char *const why[] = {"spills", "stack frame", NULL};
    qg_jit_result r[2];
    const qg_test_result t = expect_rejected(src, why, r);
    if (t != QG_T_PASS) return t;
    for (int attempt = 0; attempt < 2; attempt++)
        CHECK(r[attempt].info.stack_frame_bytes > 0, "attempt %d: stack frame %d", attempt,
              r[attempt].info.stack_frame_bytes);
    PASS();
}

/* A kernel with an unused variable compiles (a warning is no error for a
 * user) and the seam counts it with its line: what the compile sweeps of
 * tests/test_compile.c rely on to fail on a new warning in the house's
 * kernels. (Named to sort after the compile_ sweeps, which run first.) */
TEST(jit_warning_is_counted) {
    char dir[64];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    char ident[40], src[512];
    snprintf(ident, sizeof ident, "qg_unused_%llx", (unsigned long long)rnd());
    snprintf(src, sizeof src,
             "extern \"C\" __global__ void qg_test_warn(float *p) {\n"
             "    int %s = 3;\n"
             "    p[threadIdx.x] = 1.0f;\n"
             "}\n",
             ident);
    const unsigned before = qg__jit_warnings(NULL, 0);
    qg_jit_result r;
    qg_status s = compile_fresh(src, &r, NULL);
    CHECK(s == QG_SUCCESS, "status %d: %s", s, qg_last_error());
    char first[512];
    const unsigned after = qg__jit_warnings(first, sizeof first);
    CHECK(after == before + 1, "warnings counted: %u before, %u after", before, after);
    if (before == 0)
        CHECK(strstr(first, ident) || strstr(first, "warning"), "first warning: %s", first);
    PASS();
}

TEST(jit_syntax_error_reports_log) {
    char dir[64];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    char ident[40], src[512];
    snprintf(ident, sizeof ident, "qg_undeclared_%llx", (unsigned long long)rnd());
    snprintf(src, sizeof src,
             "extern \"C\" __global__ void qg_test_bad(float *p) {\n"
             "    p[threadIdx.x] = %s;\n"
             "}\n",
             ident);
    qg_jit_result r;
    qg_status s = compile_fresh(src, &r, NULL);
    CHECK(s == QG_ERROR_COMPILE, "status %d", s);
    CHECK(r.cubin == NULL, "cubin for a failed compile");
    /* The identifier can only be in the message if the NVRTC log is. */
    CHECK(strstr(qg_last_error(), ident) && strstr(qg_last_error(), "error"), "message: %s",
          qg_last_error());
    CHECK(count_files(dir) == 0, "a failed compile left %d files", count_files(dir));
    PASS();
}

TEST(jit_unwritable_cache_dir_still_compiles) {
    char dir[64], blocker[128], bad[160];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    /* A path under a regular file cannot be created, even by root. */
    snprintf(blocker, sizeof blocker, "%s/not-a-dir", dir);
    FILE *f = fopen(blocker, "w");
    CHECK(f, "cannot create %s", blocker);
    fclose(f);
    snprintf(bad, sizeof bad, "%s/cache", blocker);
    setenv("QGEMM_CACHE_DIR", bad, 1);
    char *src = ws_source(rnd());
    for (int i = 0; i < 2; i++) {
        qg_jit_result r;
        qg_status s = compile_fresh(src, &r, NULL);
        CHECK(s == QG_SUCCESS, "compile %d: %s", i, qg_last_error());
        CHECK(r.info.cache_hit == 0, "compile %d: cache_hit %d without a disk cache", i,
              r.info.cache_hit);
    }
    free(src);
    PASS();
}

/* ---- threads ---- */

typedef struct {
    qg_jit_cache *cache; /* NULL: the thread makes its own (another "context") */
    const char *source;
    qg_status status;
    qg_jit_result result;
    char error[256];
} compile_job;

static void *compile_thread(void *arg) {
    compile_job *j = arg;
    qg_jit_cache *own = NULL;
    qg_jit_cache *c = j->cache;
    if (!c) {
        j->status = qg__jit_cache_create(&own);
        if (j->status != QG_SUCCESS) return NULL;
        c = own;
    }
    j->status = qg__jit_compile(c, j->source, &j->result);
    snprintf(j->error, sizeof j->error, "%s", qg_last_error());
    if (own) {
        j->result.cubin = NULL;
        qg__jit_cache_destroy(own);
    }
    return NULL;
}

static qg_test_result run_jobs(compile_job *jobs, int n) {
    pthread_t t[8];
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&t[i], NULL, compile_thread, &jobs[i]) == 0, "pthread_create");
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < n; i++)
        CHECK(jobs[i].status == QG_SUCCESS, "thread %d: %s", i, jobs[i].error);
    return QG_T_PASS;
}

TEST(jit_concurrent_same_source_one_cache) {
    char dir[64];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    char *src = ws_source(rnd());
    qg_jit_cache *c = NULL;
    CHECK(qg__jit_cache_create(&c) == QG_SUCCESS, "%s", qg_last_error());
    enum { N = 4 };
    compile_job jobs[N];
    for (int i = 0; i < N; i++) jobs[i] = (compile_job){.cache = c, .source = src};
    qg_test_result t = run_jobs(jobs, N);
    if (t != QG_T_PASS) return t;
    int compiled = 0;
    for (int i = 0; i < N; i++) {
        compiled += jobs[i].result.info.cache_hit == 0;
        CHECK(jobs[i].result.cubin == jobs[0].result.cubin, "threads got different cubins");
        CHECK(same_info(&jobs[i].result.info, &jobs[0].result.info), "threads got different info");
    }
    CHECK(compiled == 1, "%d threads compiled the same key", compiled);
    qg__jit_cache_destroy(c);
    free(src);
    PASS();
}

TEST(jit_concurrent_same_source_separate_caches) {
    /* Like two processes sharing one disk cache: both write the same file. */
    char dir[64];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    char *src = ws_source(rnd());
    enum { N = 3 };
    compile_job jobs[N];
    for (int i = 0; i < N; i++) jobs[i] = (compile_job){.cache = NULL, .source = src};
    qg_test_result t = run_jobs(jobs, N);
    if (t != QG_T_PASS) return t;
    for (int i = 1; i < N; i++)
        CHECK(same_info(&jobs[i].result.info, &jobs[0].result.info), "threads got different info");
    CHECK(count_files(dir) == 1, "%d files in the cache dir (temporary files left?)",
          count_files(dir));
    qg_jit_result r;
    CHECK(compile_fresh(src, &r, NULL) == QG_SUCCESS && r.info.cache_hit == 2,
          "the racing writers left no loadable file (hit %d): %s", r.info.cache_hit,
          qg_last_error());
    free(src);
    PASS();
}

/* The disk cache's size limit: after a write, the least recently used files
 * go until the cache fits QGEMM_CACHE_MAX_MB; a disk hit makes a file recent. */
TEST(jit_disk_cache_evicts_least_recently_used) {
    char dir[64], old[256], path[256];
    CHECK(fresh_cache_dir(dir), "mkdtemp");
    /* A kernel last used a day ago, larger than the whole limit. */
    snprintf(old, sizeof old, "%s/%064d.cubin", dir, 0);
    FILE *f = fopen(old, "w");
    CHECK(f, "cannot create %s", old);
    for (int i = 0; i < 3 << 19; i++) fputc(0, f);
    fclose(f);
    struct timespec day_ago[2];
    clock_gettime(CLOCK_REALTIME, &day_ago[0]);
    day_ago[0].tv_sec -= 86400;
    day_ago[1] = day_ago[0];
    CHECK(utimensat(AT_FDCWD, old, day_ago, 0) == 0, "utimensat");

    setenv("QGEMM_CACHE_MAX_MB", "1", 1);
    char *src = ws_source(rnd());
    qg_jit_result r;
    void *copy = NULL;
    qg_status s = compile_fresh(src, &r, &copy);
    free(copy);
    copy = NULL;
    bool old_gone = file_size(old) < 0;
    cache_file(path, sizeof path, dir, r.info.key);
    bool new_kept = file_size(path) > 0;
    /* Make the new file look unused for a day; a disk hit refreshes it. */
    bool aged = utimensat(AT_FDCWD, path, day_ago, 0) == 0;
    qg_status s2 = compile_fresh(src, &r, &copy);
    free(copy);
    unsetenv("QGEMM_CACHE_MAX_MB");
    free(src);
    struct stat st;
    bool refreshed = stat(path, &st) == 0 && st.st_mtim.tv_sec > day_ago[0].tv_sec + 3600;
    CHECK(s == QG_SUCCESS, "compile: %s", qg_last_error());
    CHECK(old_gone, "the least recently used file survived a write over the limit");
    CHECK(new_kept, "the kernel just written was evicted");
    CHECK(s2 == QG_SUCCESS && r.info.cache_hit == 2, "second compile: %d hit %d", s2,
          r.info.cache_hit);
    CHECK(aged && refreshed, "a disk hit did not refresh the file's last use");
    PASS();
}
