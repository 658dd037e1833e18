/*
 * test_hostile_gpu.c -- issue 27 on the GPU (each test skipped without one):
 *
 *  gpu_hostile_contiguous_out_of_range_indices
 *  gpu_hostile_masked_out_of_range_counts
 *  gpu_hostile_psum_out_of_range_ends
 *      the layouts' device arrays hold values the host never checked
 *      (m_indices past the last expert or below -1, masked_m negative or past
 *      M_max, group_ends negative, decreasing or past M, INT_MIN / INT_MAX):
 *      D is poisoned, the GEMM runs (heuristic and forced tiles), rows the
 *      rule of include/qgemm.h leaves untouched must be byte-identical (every
 *      ldd column), written rows within diff 1e-5 of the fp64 reference; the
 *      CPU and GPU references must agree on the same hostile layout.
 *  gpu_hostile_rejected_calls_leave_outputs_untouched
 *      every class of refusal of validate() (src/fp8_gemm.c), for every kind
 *      (dense, contiguous, masked, psum, weight gradient with and without C),
 *      with D poisoned: the status and a message naming the argument, and D
 *      byte-identical after each call; then every input unchanged, and the
 *      good arguments do write D (so the comparison could fail).
 *  gpu_hostile_forged_cubin_is_recompiled
 *      a disk-cache entry that passes the cache's checks but is no loadable
 *      GEMM kernel (another kernel's cubin, the right cubin flagged for
 *      another architecture) or a truncated one behind a recomputed hash:
 *      the call succeeds, D is right, the debug log says what happened and
 *      the entry on disk is a good kernel again.
 *  gpu_flat_memory_cached_calls
 *      QGEMM_TEST_CACHED_CALLS (default 100000; bench/device-check.sh runs
 *      1000000) calls of one small cached GEMM: host RSS and device free
 *      memory after a warm-up of 10^4 calls and at the end, growth < 1 MiB
 *      host and 0 device.
 *
 *  compile_hostile_gpu_kernels (CPU, offline)
 *      every kernel the out-of-range tests run, compiled here so that a
 *      spill fails CI instead of a GPU session (as tests/forced.h does for
 *      the forced sweep).
 *
 * The gpu_hostile_* tests are what bench/device-check.sh runs under
 * compute-sanitizer (memcheck, racecheck, synccheck).
 */
#include "qg_test.h"
#include "qgtk.h"
#include "internal.h"
#include "cache.h"
#include "hostile_configs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIFF_BOUND 1e-5

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- the kernels the out-of-range tests run --------------------------------- */

/* Shapes and forced tiles: the heuristic's choice plus tiles it would not
 * pick here (64-row, multicast A, the masked 256-row wide tile, multicast
 * B); a tile a
 * shape does not allow is skipped by qg_complete_config. */
enum { HN = 512, HK = 640 }; /* N: 4 n-blocks of 128; K: 5 K blocks */
static const qg_config hostile_cfgs[] = {
    {.block_m = 64, .block_n = 96},
    {.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_A},
    {.block_m = 256, .block_n = 128},
    /* B multicast, paired per tile from the device's (hostile) row data:
     * 3 n-blocks of 192 (dummy slots), 8 of 64 */
    {.block_m = 128, .block_n = 192, .multicast = QG_MULTICAST_B},
    {.block_m = 64, .block_n = 64, .multicast = QG_MULTICAST_B},
};
#define NUM_HOSTILE_CFGS ((int)(sizeof hostile_cfgs / sizeof hostile_cfgs[0]))

/* contiguous: 10 segments of 128 rows (sizes 300, 128, 200, 250, 130) */
static const int contig_sizes[] = {300, 128, 200, 250, 130};
/* masked: 8 groups of M_max 200 (tails in every tile size) */
enum { MASKED_G = 8, MASKED_M = 200 };
/* psum: 6 groups, M_total 1152 */
static const int psum_sizes[] = {300, 0, 128, 77, 250, 129};

static qgtk_problem_spec contig_spec(void) {
    return (qgtk_problem_spec){.kind = QG_GEMM_GROUPED_CONTIGUOUS, .n = HN, .k = HK,
                               .num_groups = 5, .seed = 2701, .ldd_pad = 8,
                               .group_m = contig_sizes, .scale_spread = 3};
}
static qgtk_problem_spec masked_spec(void) {
    return (qgtk_problem_spec){.kind = QG_GEMM_GROUPED_MASKED, .m = MASKED_M, .n = HN, .k = HK,
                               .num_groups = MASKED_G, .seed = 2702, .ldd_pad = 8,
                               .expected_m = 120, .scale_spread = 3};
}
static qgtk_problem_spec psum_spec(void) {
    return (qgtk_problem_spec){.kind = QG_GEMM_GROUPED_PSUM, .n = HN, .k = HK, .num_groups = 6,
                               .seed = 2703, .ldd_pad = 8, .group_m = psum_sizes,
                               .scale_spread = 3};
}

static qg_problem problem_of(const qgtk_problem_data *p) {
    return (qg_problem){p->kind, p->m, p->n, p->k, p->num_groups,
                        p->kind == QG_GEMM_GROUPED_MASKED ? p->expected_m : 0, 0};
}

/* Every kernel of the out-of-range tests: compiled offline (CPU), so that a
 * refused one shows in CI rather than on the GPU. */
TEST(compile_hostile_gpu_kernels) {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/qgemm-test-hostile.XXXXXX");
    CHECK(mkdtemp(dir), "mkdtemp");
    char *old = getenv("QGEMM_CACHE_DIR") ? strdup(getenv("QGEMM_CACHE_DIR")) : NULL;
    setenv("QGEMM_CACHE_DIR", dir, 1);
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(&ctx, NULL) == QG_SUCCESS, "%s", qg_last_error());
    const qgtk_problem_spec specs[3] = {contig_spec(), masked_spec(), psum_spec()};
    int compiled = 0, failures = 0;
    for (int s = 0; s < 3; s++) {
        qgtk_problem_data *p = NULL;
        CHECK(qgtk_problem_create_host(&p, &specs[s]) == QG_SUCCESS, "%s", qg_last_error());
        const qg_problem prob = problem_of(p);
        for (int c = -1; c < NUM_HOSTILE_CFGS; c++) {
            qg_config cfg;
            if (c >= 0) {
                cfg = hostile_cfgs[c];
                if (qg_complete_config(ctx, &prob, &cfg) != QG_SUCCESS) continue;
            }
            qg_kernel_info info;
            if (qg_compile(ctx, &prob, c < 0 ? NULL : &cfg, &info) != QG_SUCCESS) {
                printf("    FAIL kind %d, %s: %s\n", (int)prob.kind,
                       c < 0 ? "heuristic" : "forced", qg_last_error());
                failures++;
            }
            compiled++;
        }
        qgtk_problem_free(p);
    }
    qg_context_destroy(ctx);
    if (old) setenv("QGEMM_CACHE_DIR", old, 1);
    else unsetenv("QGEMM_CACHE_DIR");
    free(old);
    qgtk_remove_tree(dir);
    printf("    %d kernels compiled, %d refused\n", compiled, failures);
    CHECK(failures == 0, "%d kernels refused", failures);
    CHECK(compiled >= 9, "only %d kernels", compiled);
    PASS();
}

/* ---- out-of-range layout contents ------------------------------------------- */

/* The CPU and the GPU reference of p's current layout agree: the same rows
 * skipped (NaN), the same values up to summation order. */
static bool references_agree(qg_context *ctx, qgtk_problem_data *p, const char *what) {
    const size_t count = (size_t)(p->rows * p->n);
    if (qgtk_problem_reference(ctx, p, QGTK_REF_GPU) != QG_SUCCESS) {
        printf("    FAIL %s: GPU reference: %s\n", what, qg_last_error());
        return false;
    }
    double *gpu = malloc(sizeof(double) * (count ? count : 1));
    if (!gpu) return false;
    memcpy(gpu, p->ref, sizeof(double) * count);
    bool ok = qgtk_problem_reference(ctx, p, QGTK_REF_CPU) == QG_SUCCESS;
    if (!ok) printf("    FAIL %s: CPU reference: %s\n", what, qg_last_error());
    for (size_t i = 0; ok && i < count; i++) {
        const double c = p->ref[i], g = gpu[i];
        if (!!isnan(c) != !!isnan(g) || (!isnan(c) && fabs(c - g) > 1e-10 * (fabs(c) + 1.0))) {
            printf("    FAIL %s: references differ at row %lld col %lld: cpu %.17g gpu %.17g\n",
                   what, (long long)(i / (size_t)p->n), (long long)(i % (size_t)p->n), c, g);
            ok = false;
        }
    }
    free(gpu);
    return ok; /* p->ref is the CPU reference, used by the checks that follow */
}

/* Rows the layout's rule writes (and so must not skip), and the rows it
 * leaves untouched, for the printout and for res.checked. */
static int64_t written_rows(const qgtk_problem_data *p) {
    int32_t *groups = malloc(sizeof(int32_t) * (size_t)(p->rows ? p->rows : 1));
    const qg_gemm_args host = qgtk_problem_host_args(p);
    int64_t n = -1;
    if (groups && qgtk_row_groups(p->kind, &host, groups) == QG_SUCCESS) {
        n = 0;
        for (int64_t r = 0; r < p->rows; r++) n += groups[r] >= 0;
    }
    free(groups);
    return n;
}

/* Run p's GEMM with the heuristic and every forced tile the shape allows,
 * D poisoned first; each must pass the rule (diff, no NaN, every written row
 * written, every other byte of D untouched). @return the failures. */
static int run_layout(qg_context *ctx, CUstream stream, qgtk_problem_data *p, const char *what,
                      int *runs) {
    const qg_problem prob = problem_of(p);
    const int64_t want_rows = written_rows(p);
    int failures = 0;
    if (!references_agree(ctx, p, what)) failures++;
    for (int c = -1; c < NUM_HOSTILE_CFGS; c++) {
        qg_config cfg;
        if (c >= 0) {
            cfg = hostile_cfgs[c];
            if (qg_complete_config(ctx, &prob, &cfg) != QG_SUCCESS) continue;
        }
        qgtk_check_result res;
        char desc[256], label[64] = "heuristic";
        if (c >= 0)
            snprintf(label, sizeof label, "%dx%d multicast %d", cfg.block_m, cfg.block_n,
                     (int)cfg.multicast);
        const qg_status st = qgtk_problem_run_check(ctx, p, c < 0 ? NULL : &cfg, stream, &res);
        const bool ok = st == QG_SUCCESS && qgtk_check_passed(&res, DIFF_BOUND) &&
                        res.checked == want_rows * p->n;
        (*runs)++;
        if (!ok) failures++;
        printf("    %s %s, %s: %lld rows written, %lld untouched; %s\n", ok ? "ok  " : "FAIL", what,
               label, (long long)want_rows, (long long)(p->rows - want_rows),
               st != QG_SUCCESS ? qg_last_error() : qgtk_check_describe(&res, desc, sizeof desc));
    }
    return failures;
}

TEST(gpu_hostile_contiguous_out_of_range_indices) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    const qgtk_problem_spec spec = contig_spec();
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
    const int G = p->num_groups, segments = p->m / 128;
    CHECK(segments == 10, "expected 10 segments, got %d", segments);
    int runs = 0, failures = 0;
    failures += run_layout(ctx, stream, p, "contiguous, valid m_indices", &runs);

    /* First rows naming no expert: G, G + 7, INT_MAX, -2, INT_MIN (segments
     * 1, 3, 4, 6, 8); the experts' other segments stay. Values inside a
     * segment are not read: junk in segments 0, 2 and 9 changes nothing. */
    const struct { int segment; int32_t first; } bad[] = {
        {1, G}, {3, G + 7}, {4, INT_MAX}, {6, -2}, {8, INT_MIN}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        p->m_indices[bad[i].segment * 128] = bad[i].first;
    p->m_indices[0 * 128 + 5] = INT_MAX;
    p->m_indices[2 * 128 + 100] = -7;
    p->m_indices[9 * 128 + 1] = G;
    CHECK(qgtk_problem_update_indices(ctx, p) == QG_SUCCESS, "%s", qg_last_error());
    failures += run_layout(ctx, stream, p, "contiguous, first rows G, G+7, INT_MAX, -2, INT_MIN",
                           &runs);

    /* Every segment out of range: nothing is written at all. */
    for (int s = 0; s < segments; s++) p->m_indices[s * 128] = s % 2 ? G + s : -1 - s;
    CHECK(qgtk_problem_update_indices(ctx, p) == QG_SUCCESS, "%s", qg_last_error());
    failures += run_layout(ctx, stream, p, "contiguous, no segment names an expert", &runs);
    qgtk_problem_free(p);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d runs failed", failures, runs);
    PASS();
}

TEST(gpu_hostile_masked_out_of_range_counts) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    const qgtk_problem_spec spec = masked_spec();
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
    static const struct { const char *what; int32_t counts[MASKED_G]; } sets[] = {
        {"masked_m -1, INT_MIN, M+1, INT_MAX, 0, M, M-1, 1",
         {-1, INT_MIN, MASKED_M + 1, INT_MAX, 0, MASKED_M, MASKED_M - 1, 1}},
        {"masked_m all INT_MAX", {INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX,
                                  INT_MAX}},
        {"masked_m all INT_MIN (nothing written)",
         {INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN}},
        {"masked_m 2^30, -2^30, 65, -65, 2*M, 129, -1, 64",
         {1 << 30, -(1 << 30), 65, -65, 2 * MASKED_M, 129, -1, 64}},
    };
    int runs = 0, failures = 0;
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        memcpy(p->masked_m, sets[s].counts, sizeof sets[s].counts);
        CHECK(qgtk_problem_update_indices(ctx, p) == QG_SUCCESS, "%s", qg_last_error());
        failures += run_layout(ctx, stream, p, sets[s].what, &runs);
    }
    qgtk_problem_free(p);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d runs failed", failures, runs);
    PASS();
}

TEST(gpu_hostile_psum_out_of_range_ends) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    const qgtk_problem_spec spec = psum_spec();
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(p->m == 1152, "psum M_total %d, expected 1152", p->m);
    int runs = 0, failures = 0;
    failures += run_layout(ctx, stream, p, "psum, valid ends", &runs);
    static const struct { const char *what; int32_t ends[6]; } sets[] = {
        /* group 2 must start after group 0's 300 rows (at 384), not at 128:
         * before the fix it wrote rows 128..399, over group 0 and the gap */
        {"psum ends 300, 50, 400, 1000, 900, 1100 (decreasing)", {300, 50, 400, 1000, 900, 1100}},
        {"psum ends -5, INT_MIN, 129, 100, INT_MAX, 0", {-5, INT_MIN, 129, 100, INT_MAX, 0}},
        {"psum ends all past M", {2000, 3000, 4000, 5000, 6000, 7000}},
        {"psum ends all INT_MAX", {INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX}},
        {"psum ends all INT_MIN (nothing written)",
         {INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN}},
        {"psum ends 1152, 1, 2, 3, 4, 5 (first takes all)", {1152, 1, 2, 3, 4, 5}},
    };
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        memcpy(p->group_ends, sets[s].ends, sizeof sets[s].ends);
        CHECK(qgtk_problem_update_indices(ctx, p) == QG_SUCCESS, "%s", qg_last_error());
        failures += run_layout(ctx, stream, p, sets[s].what, &runs);
    }
    qgtk_problem_free(p);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d of %d runs failed", failures, runs);
    PASS();
}

/* ---- rejected calls leave every output byte untouched ----------------------- */

/* The device side of one kind's arguments, for byte comparisons. */
typedef struct {
    qg_context *ctx;
    CUstream stream;
    const qg_driver *drv;
    CUcontext cu;
} gpu_side;

static bool cu_ok(gpu_side *g, CUresult r, const char *what) {
    (void)g;
    if (r == CUDA_SUCCESS) return true;
    qg__cuda_fail(r, what);
    printf("    %s\n", qg_last_error());
    return false;
}

/* Synchronize the context, then copy `bytes` of device memory to host. */
static bool download(gpu_side *g, CUdeviceptr src, void *dst, size_t bytes) {
    CUcontext popped;
    if (!cu_ok(g, g->drv->cuCtxPushCurrent(g->cu), "cuCtxPushCurrent")) return false;
    bool ok = cu_ok(g, g->drv->cuCtxSynchronize(), "cuCtxSynchronize") &&
              cu_ok(g, g->drv->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
    g->drv->cuCtxPopCurrent(&popped);
    return ok;
}

static bool upload(gpu_side *g, CUdeviceptr dst, const void *src, size_t bytes) {
    CUcontext popped;
    if (!cu_ok(g, g->drv->cuCtxPushCurrent(g->cu), "cuCtxPushCurrent")) return false;
    bool ok = cu_ok(g, g->drv->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
    g->drv->cuCtxPopCurrent(&popped);
    return ok;
}

static CUdeviceptr dev_alloc(gpu_side *g, size_t bytes) {
    CUcontext popped;
    CUdeviceptr p = 0;
    if (!cu_ok(g, g->drv->cuCtxPushCurrent(g->cu), "cuCtxPushCurrent")) return 0;
    if (!cu_ok(g, g->drv->cuMemAlloc(&p, bytes), "cuMemAlloc")) p = 0;
    g->drv->cuCtxPopCurrent(&popped);
    return p;
}

static void dev_free(gpu_side *g, CUdeviceptr p) {
    CUcontext popped;
    if (!p || g->drv->cuCtxPushCurrent(g->cu) != CUDA_SUCCESS) return;
    g->drv->cuMemFree(p);
    g->drv->cuCtxPopCurrent(&popped);
}

/* The buffers of one kind's good call: every output and input, with the
 * bytes each held before the refused calls. */
#define MAX_BUFS 8
typedef struct {
    const char *name;
    CUdeviceptr ptr;
    size_t bytes;
    uint8_t *before;
} named_buf;
typedef struct {
    qg_gemm_kind kind;
    const char *name;
    qg_gemm_args good;
    CUdeviceptr d;
    size_t d_bytes;
    int nbufs;
    named_buf bufs[MAX_BUFS];
    uint8_t *scratch;     /* d_bytes, for downloads */
    qgtk_problem_data *p; /* testkit kinds */
    CUdeviceptr owned[8]; /* weight gradient: buffers allocated here */
    int nowned;
} kind_setup;

static void add_buf(kind_setup *k, const char *name, CUdeviceptr ptr, size_t bytes) {
    if (ptr && k->nbufs < MAX_BUFS)
        k->bufs[k->nbufs++] = (named_buf){name, ptr, bytes, NULL};
}

enum { WG_M = 128, WG_N = 256, WG_K = 256, WG_LDD = WG_N + 4, WG_LDC = WG_N + 8 };

/* A weight-gradient problem whose result is known exactly: A and B all e4m3
 * 1.0 (0x38), every scale 1.0, so D = K everywhere (C + K with C). */
static bool setup_wgrad(gpu_side *g, kind_setup *k) {
    const int kb = WG_K / 128;
    const size_t a_bytes = (size_t)WG_M * WG_K, b_bytes = (size_t)WG_N * WG_K;
    const size_t sfa_bytes = sizeof(float) * kb * WG_M, sfb_bytes = sizeof(float) * kb * WG_N;
    const size_t c_bytes = sizeof(float) * WG_M * WG_LDC;
    k->d_bytes = sizeof(float) * WG_M * WG_LDD;
    CUdeviceptr a = dev_alloc(g, a_bytes), b = dev_alloc(g, b_bytes), sfa = dev_alloc(g, sfa_bytes),
                sfb = dev_alloc(g, sfb_bytes), d = dev_alloc(g, k->d_bytes), c = dev_alloc(g, c_bytes);
    const CUdeviceptr all[] = {a, b, sfa, sfb, d, c};
    for (int i = 0; i < 6; i++) k->owned[k->nowned++] = all[i];
    if (!a || !b || !sfa || !sfb || !d || !c) return false;
    uint8_t *ones8 = malloc(b_bytes);
    float *ones = malloc(c_bytes);
    if (!ones8 || !ones) {
        free(ones8);
        free(ones);
        return false;
    }
    memset(ones8, 0x38, b_bytes); /* e4m3 1.0 */
    for (size_t i = 0; i < c_bytes / sizeof(float); i++) ones[i] = 2.0f; /* C = 2 */
    bool ok = upload(g, a, ones8, a_bytes) && upload(g, b, ones8, b_bytes) && upload(g, c, ones, c_bytes);
    for (size_t i = 0; i < c_bytes / sizeof(float); i++) ones[i] = 1.0f;
    ok = ok && upload(g, sfa, ones, sfa_bytes) && upload(g, sfb, ones, sfb_bytes);
    free(ones8);
    free(ones);
    qg_gemm_args *x = &k->good;
    memset(x, 0, sizeof *x);
    x->m = WG_M, x->n = WG_N, x->k = WG_K, x->num_groups = 1;
    x->a = (const void *)(uintptr_t)a, x->lda = WG_K;
    x->sfa = (const float *)(uintptr_t)sfa, x->sfa_ld = WG_M;
    x->b = (const void *)(uintptr_t)b, x->ldb = WG_K;
    x->sfb = (const float *)(uintptr_t)sfb, x->sfb_ld = WG_N;
    x->d = (void *)(uintptr_t)d, x->ldd = WG_LDD;
    x->c = (const float *)(uintptr_t)c, x->ldc = WG_LDC; /* D = C + A B^T */
    k->d = d;
    add_buf(k, "d", d, k->d_bytes);
    add_buf(k, "a", a, a_bytes);
    add_buf(k, "b", b, b_bytes);
    add_buf(k, "sfa", sfa, sfa_bytes);
    add_buf(k, "sfb", sfb, sfb_bytes);
    add_buf(k, "c", c, c_bytes);
    return ok;
}

static bool setup_kind(gpu_side *g, kind_setup *k, qg_gemm_kind kind) {
    memset(k, 0, sizeof *k);
    k->kind = kind;
    static const int sizes[2] = {100, 128};
    qgtk_problem_spec spec = {.kind = kind, .n = 256, .k = 256, .num_groups = 1, .seed = 2710,
                            .ldd_pad = 8, .scale_spread = 2};
    switch (kind) {
    case QG_GEMM_DENSE: k->name = "dense"; spec.m = 128; break;
    case QG_GEMM_GROUPED_CONTIGUOUS: k->name = "contiguous"; spec.num_groups = 2; spec.group_m = sizes; break;
    case QG_GEMM_GROUPED_MASKED: k->name = "masked"; spec.num_groups = 2; spec.m = 128; break;
    case QG_GEMM_GROUPED_PSUM: k->name = "psum"; spec.num_groups = 2; spec.group_m = sizes; break;
    case QG_GEMM_WGRAD: k->name = "weight gradient"; return setup_wgrad(g, k);
    case QG_GEMM_K_GROUPED: return false; /* not in this test's list: tests/test_hostile.c */
    case QG_GEMM_FP8_BATCHED: return false; /* its own entry point: tests/test_fp8_batched.c */
    }
    if (qgtk_problem_create(&k->p, g->ctx, &spec) != QG_SUCCESS) {
        printf("    %s: %s\n", k->name, qg_last_error());
        return false;
    }
    const qgtk_problem_data *p = k->p;
    k->good = qgtk_problem_args(p);
    k->d = p->dev_d;
    k->d_bytes = p->d_bytes;
    add_buf(k, "d", p->dev_d, p->d_bytes);
    add_buf(k, "a", p->dev_a, p->a_bytes);
    add_buf(k, "b", p->dev_b, p->b_bytes);
    add_buf(k, "sfa", p->dev_sfa, p->sfa_bytes);
    add_buf(k, "sfb", p->dev_sfb, p->sfb_bytes);
    add_buf(k, "m_indices", p->dev_m_indices, sizeof(int32_t) * (size_t)p->m);
    add_buf(k, "masked_m", p->dev_masked_m, sizeof(int32_t) * (size_t)p->num_groups);
    add_buf(k, "group_ends", p->dev_group_ends, sizeof(int32_t) * (size_t)p->num_groups);
    return true;
}

static void free_kind(gpu_side *g, kind_setup *k) {
    qgtk_problem_free(k->p);
    for (int i = 0; i < k->nowned; i++) dev_free(g, k->owned[i]);
    for (int i = 0; i < k->nbufs; i++) free(k->bufs[i].before);
    free(k->scratch);
}

/* Poison D (0xFF bytes: bf16 and FP32 NaN) and remember every buffer. */
static bool poison_and_snapshot(gpu_side *g, kind_setup *k) {
    uint8_t *poison = malloc(k->d_bytes);
    k->scratch = malloc(k->d_bytes);
    if (!poison || !k->scratch) {
        free(poison);
        return false;
    }
    memset(poison, 0xff, k->d_bytes);
    bool ok = upload(g, k->d, poison, k->d_bytes);
    free(poison);
    for (int i = 0; ok && i < k->nbufs; i++) {
        k->bufs[i].before = malloc(k->bufs[i].bytes ? k->bufs[i].bytes : 1);
        ok = k->bufs[i].before && download(g, k->bufs[i].ptr, k->bufs[i].before, k->bufs[i].bytes);
    }
    return ok;
}

/* D still holds exactly the bytes it had (the poison); else how many differ. */
static int64_t d_changed(gpu_side *g, kind_setup *k) {
    if (!download(g, k->d, k->scratch, k->d_bytes)) return -1;
    int64_t n = 0;
    for (size_t i = 0; i < k->d_bytes; i++) n += k->scratch[i] != 0xff;
    return n;
}

#define K_DENSE (1 << QG_GEMM_DENSE)
#define K_CONTIG (1 << QG_GEMM_GROUPED_CONTIGUOUS)
#define K_MASKED (1 << QG_GEMM_GROUPED_MASKED)
#define K_PSUM (1 << QG_GEMM_GROUPED_PSUM)
#define K_WGRAD (1 << QG_GEMM_WGRAD)
#define K_ALL (K_DENSE | K_CONTIG | K_MASKED | K_PSUM | K_WGRAD)
#define K_GROUPED (K_CONTIG | K_MASKED | K_PSUM)
/* classes gpu_invalid_arguments_leave_d_untouched (test_gemm_gpu.c) checks
 * for the dense kind already: here for the other kinds only */
#define K_NOT_DENSE (K_ALL & ~K_DENSE)

TEST(gpu_hostile_rejected_calls_leave_outputs_untouched) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    gpu_side g = {0};
    CHECK(qgtk_gpu_session_open(&g.ctx, &g.stream) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qg__context_cuda(g.ctx, &g.drv, &g.cu, NULL), "no CUDA context");
    qg_context *offline = NULL;
    CHECK(qg_context_create_offline(&offline, NULL) == QG_SUCCESS, "%s", qg_last_error());
    /* never dereferenced: the library refuses a host pointer before any use */
    void *host = aligned_alloc(64, 1 << 20);
    CHECK(host, "out of memory");
    memset(host, 0, 1 << 20);

    static const qg_gemm_kind kinds[] = {QG_GEMM_DENSE, QG_GEMM_GROUPED_CONTIGUOUS,
                                         QG_GEMM_GROUPED_MASKED, QG_GEMM_GROUPED_PSUM,
                                         QG_GEMM_WGRAD};
    int total = 0, failures = 0;
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        kind_setup k;
        const qg_gemm_kind kind = kinds[ki];
        const int bit = 1 << kind;
        if (!setup_kind(&g, &k, kind) || !poison_and_snapshot(&g, &k)) {
            free_kind(&g, &k);
            CHECK(false, "setting up the %s problem", k.name ? k.name : "?");
        }
        const qg_gemm_args good = k.good;
        const int64_t m = good.m;
        const int dbytes = kind == QG_GEMM_WGRAD ? 4 : 2;
        qg_gemm_args bad;
        int cases = 0;
        /* One refused call: the status, a message naming `needle`, D as it was. */
#define REFUSED(mask, call_ctx, cfg, want, needle, label, mutate)                                \
    do {                                                                                          \
        if (!((mask) & bit)) break;                                                               \
        bad = good;                                                                               \
        mutate;                                                                                   \
        const qg_status st_ = qgtk_gemm_launch(call_ctx, kind, &bad, cfg, g.stream);              \
        char msg_[768];                                                                           \
        snprintf(msg_, sizeof msg_, "%s", qg_last_error());                                       \
        const int64_t changed_ = d_changed(&g, &k);                                               \
        cases++;                                                                                  \
        if (st_ != (want) || !strstr(msg_, needle) || changed_ != 0) {                            \
            failures++;                                                                           \
            printf("    FAIL %s, %s: status %d (want %d), %lld bytes of D changed: %s\n", k.name, \
                   label, (int)st_, (int)(want), (long long)changed_, msg_);                      \
        }                                                                                         \
    } while (0)
#define INVALID(mask, needle, label, mutate) \
    REFUSED(mask, g.ctx, NULL, QG_ERROR_INVALID_ARGUMENT, needle, label, mutate)
#define UNSUPPORTED(mask, needle, label, mutate) \
    REFUSED(mask, g.ctx, NULL, QG_ERROR_UNSUPPORTED, needle, label, mutate)
        const qg_config legal = {.block_m = 128, .block_n = 64};

        /* the context and the arguments themselves */
        REFUSED(K_NOT_DENSE, NULL, NULL, QG_ERROR_INVALID_ARGUMENT, "ctx is NULL", "ctx NULL", (void)0);
        if (bit & K_NOT_DENSE) { /* REFUSED passes &bad: NULL args needs its own call */
            const qg_status st = qgtk_gemm_launch(g.ctx, kind, NULL, NULL, g.stream);
            const int64_t changed = d_changed(&g, &k);
            cases++;
            if (st != QG_ERROR_INVALID_ARGUMENT || !strstr(qg_last_error(), "args is NULL") ||
                changed != 0) {
                failures++;
                printf("    FAIL %s, args NULL: status %d, %lld bytes of D changed: %s\n", k.name,
                       (int)st, (long long)changed, qg_last_error());
            }
        }
        REFUSED(K_ALL, offline, NULL, QG_ERROR_NO_DEVICE, "offline", "offline context", (void)0);
        REFUSED(K_ALL, offline, &legal, QG_ERROR_NO_DEVICE, "offline",
                "offline context, legal forced configuration", (void)0);
        REFUSED(K_ALL, offline, &qg_illegal_configs[kind].cfg, QG_ERROR_UNSUPPORTED,
                qg_illegal_configs[kind].needle,
                "offline context, illegal forced configuration", (void)0);
        REFUSED(K_NOT_DENSE, g.ctx, &qg_illegal_configs[kind].cfg, QG_ERROR_UNSUPPORTED,
                qg_illegal_configs[kind].needle,
                "illegal forced configuration", (void)0);

        /* the problem's shape */
        INVALID(K_ALL, "args->m", "m = -1", bad.m = -1);
        INVALID(K_ALL, "args->m", "m = INT_MIN", bad.m = INT_MIN);
        UNSUPPORTED(K_ALL, "m must be", "m = 2^30 + 1", bad.m = (1 << 30) + 1);
        UNSUPPORTED(K_ALL, "n must be", "n = 0", bad.n = 0);
        INVALID(K_ALL, "n must be >= 0", "n = -8", bad.n = -8); /* negative: invalid, as m (issue 53) */
        UNSUPPORTED(K_NOT_DENSE, "n must be", "n = 250 (not a multiple of 8)", bad.n = 250);
        UNSUPPORTED(K_ALL, "k must be", "k = 0", bad.k = 0);
        UNSUPPORTED(K_NOT_DENSE, "k must be", "k = 250 (not a multiple of 16)", bad.k = 250);
        INVALID(K_DENSE | K_WGRAD, "num_groups must be 1", "num_groups = 2", bad.num_groups = 2);
        INVALID(K_GROUPED, "num_groups must be in", "num_groups = 0", bad.num_groups = 0);
        INVALID(K_GROUPED, "num_groups must be in", "num_groups = -1", bad.num_groups = -1);
        INVALID(K_GROUPED, "num_groups must be in", "num_groups = 4097", bad.num_groups = 4097);
        UNSUPPORTED(K_GROUPED, "num_groups * rows", "num_groups * n > 2^31 - 1",
                    (bad.num_groups = 4096, bad.n = 1 << 20));
        UNSUPPORTED(K_WGRAD | K_CONTIG | K_PSUM, "2^40", "D of 2^40 elements",
                    (bad.m = 1 << 30, bad.n = 1024, bad.sfa_ld = 1 << 30));
        UNSUPPORTED(K_MASKED, "2^40", "D of 2^40 elements",
                    (bad.num_groups = 1, bad.m = 1 << 20, bad.n = 1 << 20));
        INVALID(K_MASKED | K_PSUM, "expected_m", "expected_m = -1", bad.expected_m = -1);
        INVALID(K_PSUM, "expected_m", "expected_m = m + 1", bad.expected_m = (int)m + 1);

        /* strides: below the minimum, not 16 bytes, past 2^36 */
        INVALID(K_NOT_DENSE, "lda", "lda < k", bad.lda = good.k - 16);
        INVALID(K_NOT_DENSE, "lda", "lda not a multiple of 16", bad.lda = good.k + 8);
        UNSUPPORTED(K_ALL, "lda", "lda > 2^36", bad.lda = (1ll << 36) + 16);
        INVALID(K_ALL, "ldb", "ldb < k", bad.ldb = good.k - 16);
        INVALID(K_ALL, "ldb", "ldb not a multiple of 16", bad.ldb = good.k + 8);
        UNSUPPORTED(K_ALL, "ldb", "ldb > 2^36", bad.ldb = INT64_MAX);
        INVALID(K_NOT_DENSE, "ldd", "ldd < n", bad.ldd = good.n - 8);
        INVALID(K_NOT_DENSE, "ldd", "ldd * element not a multiple of 16",
                bad.ldd = good.n + 16 / dbytes / 2);
        UNSUPPORTED(K_NOT_DENSE, "ldd", "ldd > 2^36", bad.ldd = (1ll << 36) + 8);
        INVALID(K_NOT_DENSE, "sfa_ld", "sfa_ld < m", bad.sfa_ld = good.m - 4);
        INVALID(K_NOT_DENSE, "sfa_ld", "sfa_ld not a multiple of 4", bad.sfa_ld = good.sfa_ld + 2);
        UNSUPPORTED(K_NOT_DENSE, "sfa_ld", "sfa_ld > 2^36", bad.sfa_ld = (1ll << 36) + 4);
        INVALID(K_WGRAD, "sfb_ld", "sfb_ld < n", bad.sfb_ld = good.n - 4);
        INVALID(K_WGRAD, "sfb_ld", "sfb_ld not a multiple of 4", bad.sfb_ld = good.n + 2);
        INVALID(K_WGRAD, "sfb_ld", "sfb_ld = 0", bad.sfb_ld = 0);
        UNSUPPORTED(K_WGRAD, "sfb_ld", "sfb_ld > 2^36", bad.sfb_ld = (1ll << 36) + 4);

        /* pointers: missing, misaligned, not device memory */
        INVALID(K_NOT_DENSE, "args->a is NULL", "a NULL", bad.a = NULL);
        INVALID(K_ALL, "args->b is NULL", "b NULL", bad.b = NULL);
        INVALID(K_ALL, "args->sfa is NULL", "sfa NULL", bad.sfa = NULL);
        INVALID(K_NOT_DENSE, "args->sfb is NULL", "sfb NULL", bad.sfb = NULL);
        INVALID(K_NOT_DENSE, "args->d is NULL", "d NULL", bad.d = NULL);
        INVALID(K_MASKED, "masked_m", "masked_m NULL", bad.masked_m = NULL);
        INVALID(K_CONTIG, "m_indices", "m_indices NULL", bad.m_indices = NULL);
        INVALID(K_PSUM, "group_ends", "group_ends NULL", bad.group_ends = NULL);
        INVALID(K_NOT_DENSE, "aligned", "a + 8 bytes", bad.a = (const uint8_t *)good.a + 8);
        INVALID(K_NOT_DENSE, "aligned", "b + 8 bytes", bad.b = (const uint8_t *)good.b + 8);
        INVALID(K_NOT_DENSE, "aligned", "sfa + 4 bytes", bad.sfa = good.sfa + 1);
        INVALID(K_ALL, "aligned", "sfb + 4 bytes", bad.sfb = good.sfb + 1);
        INVALID(K_NOT_DENSE, "aligned", "d + 8 bytes", bad.d = (uint8_t *)good.d + 8);
        INVALID(K_CONTIG, "aligned", "m_indices + 2 bytes",
                bad.m_indices = (const int32_t *)((const uint8_t *)good.m_indices + 2));
        INVALID(K_MASKED, "aligned", "masked_m + 2 bytes",
                bad.masked_m = (const int32_t *)((const uint8_t *)good.masked_m + 2));
        INVALID(K_PSUM, "aligned", "group_ends + 2 bytes",
                bad.group_ends = (const int32_t *)((const uint8_t *)good.group_ends + 2));
        INVALID(K_WGRAD, "aligned", "c + 4 bytes", bad.c = good.c + 1);
        INVALID(K_ALL, "not a CUDA device pointer", "a in host memory", bad.a = host);
        INVALID(K_ALL, "not a CUDA device pointer", "b in host memory", bad.b = host);
        INVALID(K_ALL, "not a CUDA device pointer", "sfa in host memory", bad.sfa = host);
        INVALID(K_ALL, "not a CUDA device pointer", "sfb in host memory", bad.sfb = host);
        INVALID(K_ALL, "not a CUDA device pointer", "d in host memory", bad.d = host);
        INVALID(K_CONTIG, "not a CUDA device pointer", "m_indices in host memory",
                bad.m_indices = host);
        INVALID(K_MASKED, "not a CUDA device pointer", "masked_m in host memory",
                bad.masked_m = host);
        INVALID(K_PSUM, "not a CUDA device pointer", "group_ends in host memory",
                bad.group_ends = host);
        INVALID(K_WGRAD, "not a CUDA device pointer", "c in host memory", bad.c = host);

        /* the weight gradient's C: its stride, overlapping D, in place with ldc != ldd */
        INVALID(K_WGRAD, "ldc", "ldc < n", bad.ldc = good.n - 4);
        INVALID(K_WGRAD, "ldc", "ldc = 0 with a separate C", bad.ldc = 0);
        INVALID(K_WGRAD, "ldc", "ldc * 4 not a multiple of 16", bad.ldc = good.n + 2);
        UNSUPPORTED(K_WGRAD, "ldc", "ldc > 2^36", bad.ldc = (1ll << 36) + 4);
        INVALID(K_WGRAD, "overlaps", "c = d + 16 bytes", bad.c = (const float *)good.d + 4);
        INVALID(K_WGRAD, "overlaps", "c = d's last row",
                bad.c = (const float *)good.d + (m - 1) * good.ldd);
        INVALID(K_WGRAD, "overlaps", "c one row before d, ldc = ldd",
                (bad.c = (const float *)good.d - good.ldd, bad.ldc = good.ldd));
        INVALID(K_WGRAD, "ldc", "c == d with ldc != ldd",
                (bad.c = (const float *)good.d, bad.ldc = good.ldd + 4));

        /* m = 0 is a valid no-op: accepted, nothing written (expected_m 0:
         * m = 0 is checked as m = 1, so a larger masked hint is refused) */
        REFUSED(K_ALL, g.ctx, NULL, QG_SUCCESS, "", "m = 0 (accepted, no-op)",
                (bad.m = 0, bad.expected_m = 0));
#undef INVALID
#undef UNSUPPORTED
#undef REFUSED

        /* Nothing above touched any input either. */
        for (int i = 0; i < k.nbufs; i++) {
            uint8_t *now = malloc(k.bufs[i].bytes ? k.bufs[i].bytes : 1);
            const bool same = now && download(&g, k.bufs[i].ptr, now, k.bufs[i].bytes) &&
                              memcmp(now, k.bufs[i].before, k.bufs[i].bytes) == 0;
            free(now);
            if (!same) {
                failures++;
                printf("    FAIL %s: %s changed during the refused calls\n", k.name, k.bufs[i].name);
            }
        }

        /* The good arguments write D: the comparison above could fail. */
        bool good_ok;
        char desc[256] = "";
        if (kind == QG_GEMM_WGRAD) {
            /* D = C + A B^T = 2 + K in every element of the n columns; the ldd
             * padding keeps the poison */
            const qg_status st = qgtk_gemm_launch(g.ctx, kind, &good, NULL, g.stream);
            good_ok = st == QG_SUCCESS && download(&g, k.d, k.scratch, k.d_bytes);
            int64_t wrong = 0;
            for (int r = 0; good_ok && r < WG_M; r++)
                for (int c = 0; c < WG_LDD; c++) {
                    float v;
                    memcpy(&v, k.scratch + ((size_t)r * WG_LDD + c) * 4, 4);
                    uint32_t bits;
                    memcpy(&bits, &v, 4);
                    wrong += c < WG_N ? v != 2.0f + WG_K : bits != 0xffffffffu;
                }
            good_ok = good_ok && wrong == 0;
            snprintf(desc, sizeof desc, "status %d, %lld elements wrong: %s", (int)st,
                     (long long)wrong, st != QG_SUCCESS ? qg_last_error() : "");
        } else {
            qgtk_check_result res;
            char described[256];
            const qg_status st = qgtk_problem_run_check(g.ctx, k.p, NULL, g.stream, &res);
            good_ok = st == QG_SUCCESS && qgtk_check_passed(&res, DIFF_BOUND);
            snprintf(desc, sizeof desc, "%s",
                     st != QG_SUCCESS ? qg_last_error()
                                      : qgtk_check_describe(&res, described, sizeof described));
        }
        if (!good_ok) {
            failures++;
            printf("    FAIL %s: the good call after the refused ones: %s\n", k.name, desc);
        }
        printf("    %s: %d refused calls, D byte-identical after each, inputs unchanged; "
               "good call %s\n", k.name, cases, good_ok ? "correct" : "WRONG");
        total += cases;
        free_kind(&g, &k);
    }
    free(host);
    qg_context_destroy(offline);
    qgtk_gpu_session_close(g.ctx, g.stream);
    printf("    %d refused calls over 5 kinds, %d failures\n", total, failures);
    CHECK(failures == 0, "%d failures", failures);
    PASS();
}

/* ---- a corrupt cubin reaching the driver ------------------------------------ */

/* stderr into a temporary file between capture_begin and capture_end, which
 * returns what was written (malloc'd, "" when nothing). */
typedef struct {
    int saved, fd;
    char path[64];
} capture;

static bool capture_begin(capture *c) {
    snprintf(c->path, sizeof c->path, "/tmp/qgemm-test-stderr.XXXXXX");
    c->fd = mkstemp(c->path);
    if (c->fd < 0) return false;
    fflush(stderr);
    c->saved = dup(2);
    dup2(c->fd, 2);
    return true;
}

static char *capture_end(capture *c) {
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    const off_t n = lseek(c->fd, 0, SEEK_END);
    char *out = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    if (out && n > 0 && pread(c->fd, out, (size_t)n, 0) < 0) out[0] = '\0';
    close(c->fd);
    unlink(c->path);
    return out;
}

/* Run p's GEMM in a new session (so the memory caches are empty and the
 * kernel comes from the disk cache), D poisoned first; stderr captured. */
static qg_status run_in_new_session(qgtk_problem_data **p, const qgtk_problem_spec *spec,
                                    qgtk_check_result *res, char **log, char *err, size_t err_len) {
    qg_context *ctx = NULL;
    CUstream stream = NULL;
    capture cap;
    *log = NULL;
    err[0] = '\0';
    if (!capture_begin(&cap)) return qg__fail(QG_ERROR_INTERNAL, "cannot capture stderr");
    qg_status st = qgtk_gpu_session_open(&ctx, &stream);
    if (st == QG_SUCCESS) st = qgtk_problem_create(p, ctx, spec);
    if (st == QG_SUCCESS) {
        qg_gemm_args args = qgtk_problem_args(*p);
        st = qgtk_problem_poison(ctx, *p, stream);
        if (st == QG_SUCCESS) st = qg_fp8_gemm_nt(ctx, &args, NULL, stream);
        /* a call that succeeded leaves no message behind, whatever it recovered from */
        if (st == QG_SUCCESS && qg_last_error()[0])
            snprintf(err, err_len, "success, but qg_last_error() says: %s", qg_last_error());
        if (st == QG_SUCCESS) st = qgtk_problem_check(ctx, *p, res);
    }
    if (st != QG_SUCCESS) snprintf(err, err_len, "%s", qg_last_error());
    qgtk_problem_free(*p);
    *p = NULL;
    qgtk_gpu_session_close(ctx, stream);
    *log = capture_end(&cap);
    return st;
}

/* A disk-cache entry that passes the cache's checks (whole file, right key
 * and SHA-256, owned by the user, mode 0600) but whose cubin is no loadable
 * GEMM kernel, or that is truncated behind a recomputed hash. What used to
 * happen: the cubin went to cuModuleLoadData; the call failed ("loading the
 * compiled kernel: ..."), and so did every later call and every new process,
 * until the user cleared the cache. Now: a truncated cubin is rejected at
 * read (qg__cubin_check); one the driver refuses is deleted and the kernel
 * compiled again (src/launch.c qg__launch_resolve). The call succeeds with the
 * right D, the QGEMM_JIT_DEBUG log says which, and the entry is good again.
 * (A forged cubin the driver accepts is code the GPU runs; the cache's trust
 * rules are what stands against that, tests/test_cache.c.) */
TEST(gpu_hostile_forged_cubin_is_recompiled) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    char dir[64], path[256];
    snprintf(dir, sizeof dir, "/tmp/qgemm-test-forged.XXXXXX");
    CHECK(mkdtemp(dir), "mkdtemp");
    char *old_dir = getenv("QGEMM_CACHE_DIR") ? strdup(getenv("QGEMM_CACHE_DIR")) : NULL;
    char *old_debug = getenv("QGEMM_JIT_DEBUG") ? strdup(getenv("QGEMM_JIT_DEBUG")) : NULL;
    setenv("QGEMM_CACHE_DIR", dir, 1);
    /* for the whole test: it adds -lineinfo, so it is part of every key */
    setenv("QGEMM_JIT_DEBUG", "1", 1);

    /* The kernel's entry, and another kernel's whole cubin. */
    const qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = 200, .n = 384, .k = 640,
                                  .num_groups = 1, .seed = 2720, .scale_spread = 2};
    const qg_problem prob = {QG_GEMM_DENSE, 200, 384, 640, 1, 0, 0};
    qg_kernel_info info;
    qg_jit_build good, other;
    memset(&good, 0, sizeof good);
    memset(&other, 0, sizeof other);
    int failures = 0;
    {
        capture cap;
        CHECK(capture_begin(&cap), "cannot capture stderr");
        qg_context *ctx = NULL;
        CUstream stream = NULL;
        qg_status st = qgtk_gpu_session_open(&ctx, &stream);
        if (st == QG_SUCCESS) st = qg_compile(ctx, &prob, NULL, &info);
        const void *cubin = NULL;
        size_t size = 0;
        if (st == QG_SUCCESS)
            st = qg__context_compile_source(
                ctx, "extern \"C\" __global__ void qg_not_the_gemm(float *o) { o[threadIdx.x] = 1.0f; }\n",
                &cubin, &size, NULL);
        if (st == QG_SUCCESS) {
            other.cubin = malloc(size);
            if (other.cubin) memcpy(other.cubin, cubin, size);
            other.cubin_size = size;
        }
        qgtk_gpu_session_close(ctx, stream);
        free(capture_end(&cap));
        CHECK(st == QG_SUCCESS && other.cubin, "setting up: %s", qg_last_error());
    }
    snprintf(path, sizeof path, "%s/%s.cubin", dir, info.key);
    CHECK(qg__cache_read(dir, info.key, &good) == 1, "the kernel's entry %s does not read back", path);

    enum { ANOTHER_KERNEL, ANOTHER_ARCH, TRUNCATED, NUM_CASES };
    static const char *names[NUM_CASES] = {
        "another kernel's cubin (no qg_fp8_gemm_kernel)",
        "the kernel's cubin flagged for another architecture (sm_80)",
        "the kernel's cubin truncated to 60%"};
    for (int c = 0; c < NUM_CASES; c++) {
        /* forge: the cache's own writer, so header, key and SHA-256 are right */
        qg_jit_build forged = good;
        uint8_t *bytes = NULL;
        if (c == ANOTHER_KERNEL) {
            forged.cubin = other.cubin;
            forged.cubin_size = other.cubin_size;
        } else {
            bytes = malloc(good.cubin_size);
            CHECK(bytes, "out of memory");
            memcpy(bytes, good.cubin, good.cubin_size);
            forged.cubin = bytes;
            if (c == ANOTHER_ARCH) bytes[0x31] = 80; /* e_flags: the SM number byte (90 -> 80) */
            if (c == TRUNCATED) forged.cubin_size = good.cubin_size * 6 / 10;
        }
        qg__cache_write(dir, info.key, &forged);
        qg_jit_build check;
        memset(&check, 0, sizeof check);
        /* as a new process reads it (a rejected file is deleted: write it again) */
        capture quiet;
        const bool quieted = capture_begin(&quiet);
        const int reads = qg__cache_read(dir, info.key, &check);
        if (quieted) free(capture_end(&quiet));
        qg__build_free(&check);
        qg__cache_write(dir, info.key, &forged);

        qgtk_problem_data *p = NULL;
        qgtk_check_result res;
        char *log = NULL, err[512];
        const qg_status st = run_in_new_session(&p, &spec, &res, &log, err, sizeof err);
        const bool refused_line = log && strstr(log, "refused by the driver") && strstr(log, path);
        const bool rejected_line = log && strstr(log, "rejected (cubin");
        bool ok = st == QG_SUCCESS && !err[0] && qgtk_check_passed(&res, DIFF_BOUND);
        /* which defence acted: truncation at read; another kernel at the
         * driver; another architecture: the driver's verdict, either way the
         * call must succeed (the SASS is this GPU's) */
        if (c == TRUNCATED) ok = ok && reads == 0 && rejected_line;
        if (c == ANOTHER_KERNEL) ok = ok && reads == 1 && refused_line;

        /* the entry on disk is another cubin now (not necessarily good's
         * bytes: with a driver, a compile served from its compute cache is
         * redone with a salt, src/jit.c), which a new session loads from
         * disk without refusing anything */
        qg_jit_build after;
        memset(&after, 0, sizeof after);
        const bool rewritten = qg__cache_read(dir, info.key, &after) == 1 &&
                               !(after.cubin_size == forged.cubin_size &&
                                 memcmp(after.cubin, forged.cubin, forged.cubin_size) == 0);
        qg__build_free(&after);
        free(bytes);
        char *log2 = NULL, err2[512];
        qgtk_check_result res2;
        const qg_status st2 = run_in_new_session(&p, &spec, &res2, &log2, err2, sizeof err2);
        const bool clean = st2 == QG_SUCCESS && qgtk_check_passed(&res2, DIFF_BOUND) && log2 &&
                           !strstr(log2, "refused") && !strstr(log2, "rejected") &&
                           strstr(log2, "loaded from disk");
        /* another architecture: if the driver took it after all (the SASS
         * is this GPU's), the entry stays as it is and nothing is rewritten */
        ok = ok && clean && (rewritten || (c == ANOTHER_ARCH && !refused_line));
        failures += !ok;
        printf("    %s %s: cache check %s; %s; call %s (%s); entry rewritten %s, next session %s\n",
               ok ? "ok  " : "FAIL", names[c], reads ? "passed" : "rejected it",
               refused_line    ? "driver refused it, recompiled"
               : rejected_line ? "rejected at read, recompiled"
                               : "driver accepted it",
               st == QG_SUCCESS ? "succeeded" : "failed",
               err[0] ? err : st == QG_SUCCESS ? (qgtk_check_describe(&res, err, sizeof err), err) : "",
               rewritten ? "yes" : "NO", clean ? "clean" : "NOT clean");
        if (!ok && log) printf("      log of the call:\n%s\n", log);
        if (!clean && log2) printf("      log of the next session:\n%s\n", log2);
        free(log);
        free(log2);
    }
    qg__build_free(&good);
    free(other.cubin);
    if (old_dir) setenv("QGEMM_CACHE_DIR", old_dir, 1);
    else unsetenv("QGEMM_CACHE_DIR");
    if (old_debug) setenv("QGEMM_JIT_DEBUG", old_debug, 1);
    else unsetenv("QGEMM_JIT_DEBUG");
    free(old_dir);
    free(old_debug);
    qgtk_remove_tree(dir);
    CHECK(failures == 0, "%d of %d cases failed", failures, NUM_CASES);
    PASS();
}

/* ---- 10^6 cached calls, flat memory ------------------------------------------ */

#define FLAT_WARMUP 10000
#define FLAT_SYNC_EVERY 10000

TEST(gpu_flat_memory_cached_calls) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    long calls = 100000;
    const char *env = getenv("QGEMM_TEST_CACHED_CALLS");
    if (env && *env) {
        char *end = NULL;
        calls = strtol(env, &end, 10);
        CHECK(end && *end == '\0' && calls >= FLAT_SYNC_EVERY && calls <= 100000000,
              "QGEMM_TEST_CACHED_CALLS=%s: expected a count of calls in [10^4, 10^8]", env);
    }
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    const qg_driver *drv = NULL;
    CUcontext cu = NULL;
    CHECK(qg__context_cuda(ctx, &drv, &cu, NULL), "no CUDA context");
    /* one m-block, one n-block, one K block: the smallest real GEMM */
    qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = 64, .n = 128, .k = 128,
                            .num_groups = 1, .seed = 2730, .scale_spread = 2};
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
    const qg_gemm_args args = qgtk_problem_args(p);
    CUcontext popped;

    /* warm-up: compile, load, first launches; drain the stream */
    for (long i = 0; i < FLAT_WARMUP; i++)
        CHECK(qg_fp8_gemm_nt(ctx, &args, NULL, stream) == QG_SUCCESS, "warm-up call %ld: %s", i,
              qg_last_error());
    CHECK(drv->cuCtxPushCurrent(cu) == CUDA_SUCCESS, "push");
    CUresult r = drv->cuStreamSynchronize(stream);
    drv->cuCtxPopCurrent(&popped);
    CHECK(r == CUDA_SUCCESS, "warm-up: cuStreamSynchronize: CUresult %d", (int)r);
    size_t free0 = 0, total = 0, free1 = 0;
    CHECK(qgtk_device_memory(ctx, &free0, &total) == QG_SUCCESS, "%s", qg_last_error());
    const size_t rss0 = qgtk_host_rss_bytes();
    CHECK(rss0 > 0, "cannot read /proc/self/statm");
    size_t rss_max = rss0;

    const double t0 = now_s();
    for (long i = 0; i < calls; i++) {
        const qg_status st = qg_fp8_gemm_nt(ctx, &args, NULL, stream);
        CHECK(st == QG_SUCCESS, "call %ld: %s", i, qg_last_error());
        if ((i + 1) % FLAT_SYNC_EVERY == 0) { /* bound the launch queue */
            CHECK(drv->cuCtxPushCurrent(cu) == CUDA_SUCCESS, "push");
            r = drv->cuStreamSynchronize(stream);
            drv->cuCtxPopCurrent(&popped);
            CHECK(r == CUDA_SUCCESS, "after call %ld: cuStreamSynchronize: CUresult %d", i, (int)r);
            const size_t rss = qgtk_host_rss_bytes();
            if (rss > rss_max) rss_max = rss;
        }
    }
    const double seconds = now_s() - t0;
    const size_t rss1 = qgtk_host_rss_bytes();
    CHECK(qgtk_device_memory(ctx, &free1, NULL) == QG_SUCCESS, "%s", qg_last_error());

    /* the calls did the work: D of the last one is right */
    qgtk_check_result res;
    char desc[256];
    CHECK(qgtk_problem_check(ctx, p, &res) == QG_SUCCESS, "%s", qg_last_error());
    const bool right = qgtk_check_passed(&res, DIFF_BOUND);

    const long long host_growth = (long long)rss1 - (long long)rss0;
    const long long host_peak = (long long)rss_max - (long long)rss0;
    const long long device_growth = (long long)free0 - (long long)free1;
    printf("    %ld cached calls of a 64x128x128 GEMM (%s) in %.1f s (%.2f us per call, synchronized "
           "every %d)\n", calls, calls >= 1000000 ? "full run" : "QGEMM_TEST_CACHED_CALLS=1000000 "
           "for the full run", seconds, 1e6 * seconds / (double)calls, FLAT_SYNC_EVERY);
    printf("    host RSS after %d warm-up calls %.2f MiB, at the end %.2f MiB: growth %lld bytes "
           "(peak +%lld)\n", FLAT_WARMUP, rss0 / 1048576.0, rss1 / 1048576.0, host_growth, host_peak);
    printf("    device free memory %zu -> %zu bytes of %zu: growth %lld bytes\n", free0, free1, total,
           device_growth);
    printf("    last D: %s\n", qgtk_check_describe(&res, desc, sizeof desc));
    qgtk_problem_free(p);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(right, "the last call's D is wrong: %s", desc);
    CHECK(host_growth < (1 << 20) && host_peak < (1 << 20),
          "host RSS grew by %lld bytes (peak +%lld) over %ld cached calls", host_growth, host_peak,
          calls);
    CHECK(device_growth <= 0, "device memory in use grew by %lld bytes over %ld cached calls",
          device_growth, calls);
    PASS();
}
