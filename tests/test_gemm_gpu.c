/*
 * test_gemm_gpu.c -- dense GEMM correctness on the GPU (skipped without one):
 * the shape grid (fresh random inputs per case, D poisoned first, checked
 * against the exact reference, repeated for bitwise determinism), every
 * forced configuration on a few shapes, argument rejection without writes,
 * and the GPU reference against the CPU one.
 *
 * Pass rule (docs/DESIGN.md §7): diff < 1e-5 against the dequantized fp64
 * reference, no NaN, every output written, nothing else touched.
 */
#include "qg_test.h"
#include "forced.h"
#include "qgtk.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIFF_BOUND 1e-5
#define MAX_REPORTED 12 /* failing cases printed in full */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Smallest and largest diff of the passing cases of a sweep. */
typedef struct {
    int cases, failures;
    double lo, hi;
} sweep_stats;

static void stats_add(sweep_stats *s, double diff, bool ok) {
    s->cases++;
    s->failures += !ok;
    if (ok) {
        if (s->cases - s->failures == 1 || diff < s->lo) s->lo = diff;
        if (s->cases - s->failures == 1 || diff > s->hi) s->hi = diff;
    }
}

/* ---- the dense grid ------------------------------------------------------ */

typedef struct {
    int m, n, k;
    int lda_pad, ldb_pad, ldd_pad;
} dense_case;

static int make_grid(dense_case *out) {
    static const int Ms[] = {1, 7, 64, 100, 128, 257, 1000, 4096};
    static const int Ns[] = {8, 112, 576, 2112, 4096, 7168, 24576};
    static const int Ks[] = {16, 112, 128, 400, 512, 1536, 7168};
    int count = 0;
    for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; i++)
        for (size_t j = 0; j < sizeof Ns / sizeof Ns[0]; j++)
            for (size_t l = 0; l < sizeof Ks / sizeof Ks[0]; l++) {
                if ((int64_t)Ms[i] * Ns[j] * Ks[l] > ((int64_t)1 << 33)) continue;
                dense_case c = {Ms[i], Ns[j], Ks[l], 0, 0, 0};
                /* Every fifth case strided: A and D always, B sometimes. */
                if (count % 5 == 2) {
                    c.lda_pad = 16 * (1 + count % 3);
                    c.ldd_pad = 8 * (1 + count % 4);
                    c.ldb_pad = count % 2 ? 16 : 0;
                }
                out[count++] = c;
            }
    /* Long K: the promotion into the FP32 accumulator must keep 1e-5. */
    static const int long_m[] = {128, 4096}, long_n[] = {7168, 4096};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) out[count++] = (dense_case){long_m[i], long_n[j], 16384, 0, 0, 0};
    /* K-block counts of 9, 10 and 23: the K-pipelined loop's last chunk holds
     * 1, 2 and 3 K blocks (its chunks are 4). */
    out[count++] = (dense_case){257, 576, 1152, 0, 0, 0};
    out[count++] = (dense_case){100, 2112, 1280, 0, 0, 0};
    out[count++] = (dense_case){1000, 4096, 2944, 0, 0, 0};
    return count;
}

/* One dense case: fresh data, run + check, run again + same bits. */
static bool run_dense_case(qg_context *ctx, CUstream stream, const dense_case *c, uint64_t seed,
                           const qg_config *cfg, double *diff, char *why, size_t why_len) {
    qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = c->m, .n = c->n, .k = c->k,
                            .num_groups = 1, .seed = seed, .lda_pad = c->lda_pad,
                            .ldb_pad = c->ldb_pad, .ldd_pad = c->ldd_pad, .scale_spread = 3};
    qgtk_problem_data *p = NULL;
    qgtk_check_result res;
    char desc[256];
    bool ok = false;
    *diff = NAN;
    if (qgtk_problem_create(&p, ctx, &spec) != QG_SUCCESS) {
        snprintf(why, why_len, "creating the problem: %s", qg_last_error());
        return false;
    }
    qg_status st = qgtk_problem_run_check(ctx, p, cfg, stream, &res);
    if (st != QG_SUCCESS) {
        snprintf(why, why_len, "status %d (%s): %s", (int)st, qg_status_string(st), qg_last_error());
        goto done;
    }
    *diff = res.diff;
    if (!qgtk_check_passed(&res, DIFF_BOUND)) {
        snprintf(why, why_len, "%s", qgtk_check_describe(&res, desc, sizeof desc));
        goto done;
    }
    /* Bitwise repeatability: same inputs, same bits. */
    uint64_t again = 0;
    qg_gemm_args args = qgtk_problem_args(p);
    if ((st = qgtk_problem_poison(ctx, p, stream)) != QG_SUCCESS ||
        (st = qg_fp8_gemm_nt(ctx, &args, cfg, stream)) != QG_SUCCESS ||
        (st = qgtk_problem_hash(ctx, p, &again)) != QG_SUCCESS) {
        snprintf(why, why_len, "second run: status %d: %s", (int)st, qg_last_error());
        goto done;
    }
    if (again != res.hash) {
        snprintf(why, why_len, "second run differs bitwise (hash %016llx vs %016llx)",
                 (unsigned long long)again, (unsigned long long)res.hash);
        goto done;
    }
    ok = true;
done:
    qgtk_problem_free(p);
    return ok;
}

TEST(gpu_dense_grid) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());

    static dense_case cases[512];
    const int count = make_grid(cases);
    qg_problem *problems = calloc((size_t)count, sizeof *problems);
    qg_status *statuses = calloc((size_t)count, sizeof *statuses);
    CHECK(problems && statuses, "out of memory");
    for (int i = 0; i < count; i++)
        problems[i] = (qg_problem){QG_GEMM_DENSE, cases[i].m, cases[i].n, cases[i].k, 1, 0, 0};
    double t0 = now_s();
    int compile_failures = qgtk_compile_many(ctx, problems, NULL, count, statuses);
    printf("    compiled %d dense kernels in %.1f s on %d threads (%d failed)\n", count,
           now_s() - t0, qgtk_num_workers(), compile_failures);

    sweep_stats grid = {0}, long_k = {0};
    t0 = now_s();
    for (int i = 0; i < count; i++) {
        const dense_case *c = &cases[i];
        char why[512];
        double diff;
        bool ok = run_dense_case(ctx, stream, c, 1000 + (uint64_t)i, NULL, &diff, why, sizeof why);
        stats_add(c->k == 16384 ? &long_k : &grid, diff, ok);
        if (!ok && grid.failures + long_k.failures <= MAX_REPORTED)
            printf("    FAIL dense %dx%dx%d (lda+%d ldb+%d ldd+%d): %s\n", c->m, c->n, c->k,
                   c->lda_pad, c->ldb_pad, c->ldd_pad, why);
    }
    printf("    dense grid: %d cases, %d failed, diff max %.2g min %.2g (%.1f s)\n", grid.cases,
           grid.failures, grid.hi, grid.lo, now_s() - t0);
    printf("    dense long K (16384): %d cases, %d failed, diff max %.2g min %.2g\n", long_k.cases,
           long_k.failures, long_k.hi, long_k.lo);
    free(problems);
    free(statuses);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(grid.failures == 0 && long_k.failures == 0, "%d + %d failing cases", grid.failures,
          long_k.failures);
    PASS();
}

/* ---- every forced configuration ----------------------------------------- */

TEST(gpu_forced_configs) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());

    enum { NSHAPES = QG_FORCED_NSHAPES };
    /* Legal configurations of every shape, completed by the library. */
    static qg_config cfgs[QG_FORCED_MAX];
    static qg_problem probs[QG_FORCED_MAX];
    static qg_status statuses[QG_FORCED_MAX];
    int first[NSHAPES + 1], unsupported[NSHAPES];
    const int total = qg_forced_configs(ctx, probs, cfgs, first, unsupported);
    CHECK(total > 0, "enumerating the forced configurations: %s", qg_last_error());
    double t0 = now_s();
    int compile_failures = qgtk_compile_many(ctx, probs, cfgs, total, statuses);
    printf("    compiled %d forced configurations in %.1f s (%d failed)\n", total, now_s() - t0,
           compile_failures);

    int failures = 0;
    for (int s = 0; s < NSHAPES; s++) {
        qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = qg_forced_shapes[s][0],
                                .n = qg_forced_shapes[s][1], .k = qg_forced_shapes[s][2],
                                .num_groups = 1, .seed = 77 + (uint64_t)s,
                                .scale_spread = 3};
        qgtk_problem_data *p = NULL;
        CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
        sweep_stats st = {0};
        for (int i = first[s]; i < first[s + 1]; i++) {
            const qg_config *cfg = &cfgs[i];
            qgtk_check_result res;
            char desc[256];
            qg_status r = qgtk_problem_run_check(ctx, p, cfg, stream, &res);
            bool ok = r == QG_SUCCESS && qgtk_check_passed(&res, DIFF_BOUND);
            stats_add(&st, res.diff, ok);
            if (!ok && ++failures <= MAX_REPORTED)
                printf("    FAIL %dx%dx%d block %dx%d stages %d multicast %d split-K %d: %s\n",
                       p->m, p->n, p->k, cfg->block_m, cfg->block_n, cfg->num_stages,
                       (int)cfg->multicast, cfg->split_k,
                       r != QG_SUCCESS ? qg_last_error() : qgtk_check_describe(&res, desc, sizeof desc));
        }
        printf("    forced configs %dx%dx%d: %d run, %d unsupported, %d failed, diff max %.2g "
               "min %.2g\n",
               p->m, p->n, p->k, st.cases, unsupported[s], st.failures, st.hi, st.lo);
        qgtk_problem_free(p);
    }
    qgtk_gpu_session_close(ctx, stream);
    CHECK(total > 0, "no configuration was accepted");
    CHECK(failures == 0, "%d failing configurations", failures);
    PASS();
}

/* ---- split-K edges --------------------------------------------------------- */

TEST(gpu_split_k_edges) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    sweep_stats st = {0};
    for (int i = 0; i < QG_SPLIT_EDGES; i++) {
        const qg_split_edge *e = &qg_split_edges[i];
        const dense_case c = {e->m, e->n, e->k, i % 2 ? 16 : 0, 0, i % 2 ? 8 : 0};
        char why[512];
        double diff;
        bool ok = run_dense_case(ctx, stream, &c, 500 + (uint64_t)i, &e->cfg, &diff, why, sizeof why);
        stats_add(&st, diff, ok);
        if (!ok)
            printf("    FAIL %dx%dx%d block %dx%d stages %d split-K: %s\n", e->m, e->n, e->k,
                   e->cfg.block_m, e->cfg.block_n, e->cfg.num_stages, why);
    }
    printf("    split-K edges: %d cases, %d failed, diff max %.2g min %.2g\n", st.cases,
           st.failures, st.hi, st.lo);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(st.failures == 0, "%d failing split-K cases", st.failures);
    PASS();
}

/* ---- programmatic dependent launch --------------------------------------- */

/* A PDL-launched GEMM behind a kernel that is still writing one of its
 * operands (and lets its dependents start at once) must wait for it: with the
 * context's PDL on, D is right. The control run shows that a PDL-launched
 * kernel that does not wait really overlaps the copy (it sees the operand
 * differ), so the check can fail. Shapes: a split-K cluster launch
 * (64x1536x7296: split on the H100 and the H200, tests/test_config.c; the
 * H100 runs 64x2112x7168 unsplit), a 128-row tile and a 256x128 one (the
 * heuristic's choices; printed), each behind a copy of A; and two GEMMs of
 * one m-block, which prefetch B into L2 before their wait
 * (qg__pdl_prefetch_kb, checked > 0),
 * one behind a copy of A and one behind a copy of B itself: what the
 * prefetch brought in early must not be what the GEMM multiplies. */
TEST(gpu_pdl_waits_for_previous_kernel) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qg_context_get_pdl(ctx) == 0, "PDL must be off by default");
    CHECK(qg_context_set_pdl(ctx, 1) == QG_SUCCESS && qg_context_get_pdl(ctx) == 1, "%s",
          qg_last_error());
    static const struct { int m, n, k; char operand; bool prefetch; } cases[] = {
        {64, 1536, 7296, 'A', false}, {257, 576, 1536, 'A', false},
        {1000, 4096, 2048, 'A', false}, {64, 4096, 2048, 'A', true},
        {40, 512, 1152, 'B', true}};
    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = cases[i].m, .n = cases[i].n,
                                .k = cases[i].k, .num_groups = 1, .seed = 700 + i,
                                .scale_spread = 3};
        qgtk_problem_data *p = NULL;
        CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
        qg_problem prob = {QG_GEMM_DENSE, spec.m, spec.n, spec.k, 1, 0, 0};
        qg_config cfg;
        qg_kernel_plan plan;
        CHECK(qg_select_config(ctx, &prob, &cfg) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(qg__plan(&ctx->props, &prob, &cfg, &plan) == QG_SUCCESS, "%s", qg_last_error());
        const int prefetch_kb = qg__pdl_prefetch_kb(&prob, &cfg, &plan, cfg.num_sms);
        unsigned differing = 0;
        qgtk_check_result res;
        char desc[256];
        qg_status st = qgtk_pdl_probe(ctx, p, NULL, stream, cases[i].operand, &differing, &res);
        const bool ok = st == QG_SUCCESS && differing > 0 && qgtk_check_passed(&res, DIFF_BOUND) &&
                        (prefetch_kb > 0) == cases[i].prefetch;
        printf("    %s %dx%dx%d (block %dx%d, multicast %d, split-K %d, B prefetch %d K blocks): "
               "control saw %u of %zu words of %c still old; GEMM %s\n", ok ? "ok  " : "FAIL",
               spec.m, spec.n, spec.k, cfg.block_m, cfg.block_n, (int)cfg.multicast, cfg.split_k,
               prefetch_kb, differing, (cases[i].operand == 'A' ? p->a_bytes : p->b_bytes) / 16,
               cases[i].operand,
               st != QG_SUCCESS ? qg_last_error() : qgtk_check_describe(&res, desc, sizeof desc));
        failures += !ok;
        qgtk_problem_free(p);
    }
    CHECK(qg_context_set_pdl(ctx, 0) == QG_SUCCESS, "%s", qg_last_error());
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d PDL cases failed (a control count of 0 means the dependent "
          "kernel never overlapped the copy, so the GEMM's wait went untested; a B prefetch "
          "other than the case expects means the case no longer covers that path)", failures);
    PASS();
}

/* ---- rejected calls write nothing ---------------------------------------- */

TEST(gpu_invalid_arguments_leave_d_untouched) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = 128, .n = 256, .k = 256,
                            .num_groups = 1, .seed = 5, .scale_spread = 2};
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qgtk_problem_poison(ctx, p, stream) == QG_SUCCESS, "%s", qg_last_error());

    const qg_gemm_args good = qgtk_problem_args(p);
    qg_gemm_args bad;
    int cases = 0;
#define EXPECT_STATUS(call_kind, want, mutate)                                             \
    do {                                                                                    \
        bad = good;                                                                         \
        mutate;                                                                             \
        qg_status st_ = qgtk_gemm_launch(ctx, call_kind, &bad, NULL, stream);                \
        CHECK(st_ == want, "%s: status %d (%s)", #mutate, (int)st_,                         \
              qg_last_error());                                                             \
        CHECK(qg_last_error()[0] != '\0', "%s: no message", #mutate);                       \
        cases++;                                                                            \
    } while (0)
#define EXPECT_REJECTED(call_kind, mutate) EXPECT_STATUS(call_kind, QG_ERROR_INVALID_ARGUMENT, mutate)
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.a = (const uint8_t *)good.a + 1);
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.b = (const uint8_t *)good.b + 8);
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.d = (uint16_t *)good.d + 1);
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.sfa = good.sfa + 1);
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.ldd = good.n - 8);
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.ldd = good.n + 4);      /* ldd*2 not a multiple of 16 */
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.lda = good.k + 8);      /* not a multiple of 16 */
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.lda = good.k - 16);     /* < K */
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.sfa_ld = good.m + 2);   /* not a multiple of 4 */
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.sfa_ld = good.m - 4);   /* < M */
    /* Shapes outside the 16-byte TMA rules are "unsupported", not invalid. */
    EXPECT_STATUS(QG_GEMM_DENSE, QG_ERROR_UNSUPPORTED, bad.k = 250);
    EXPECT_STATUS(QG_GEMM_DENSE, QG_ERROR_UNSUPPORTED, bad.n = 250);
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.a = NULL);
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.sfb = NULL);
    EXPECT_REJECTED(QG_GEMM_DENSE, bad.d = NULL);
    EXPECT_REJECTED(QG_GEMM_GROUPED_CONTIGUOUS, bad.num_groups = 2);    /* no m_indices */
    EXPECT_REJECTED(QG_GEMM_GROUPED_MASKED, bad.num_groups = 2);        /* no masked_m */
    /* Issue 27: bounds before multiplies, one expected_m rule, huge problems. */
    EXPECT_STATUS(QG_GEMM_DENSE, QG_ERROR_UNSUPPORTED, bad.ldd = (1ll << 62) + 1);
    EXPECT_STATUS(QG_GEMM_DENSE, QG_ERROR_UNSUPPORTED, bad.sfa_ld = INT64_MAX);
    EXPECT_REJECTED(QG_GEMM_GROUPED_MASKED,
                    (bad.num_groups = 1, bad.masked_m = (const void *)good.sfa,
                     bad.expected_m = good.m + 1));
    EXPECT_STATUS(QG_GEMM_DENSE, QG_ERROR_UNSUPPORTED, (bad.m = 1 << 30, bad.n = 2147483640));
#undef EXPECT_REJECTED
#undef EXPECT_STATUS
    qg_status st = qg_fp8_gemm_nt(NULL, &good, NULL, stream);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT, "NULL ctx: status %d", (int)st);
    const qg_config illegal = {.block_m = 128, .block_n = 200}; /* a forced illegal tile */
    st = qg_fp8_gemm_nt(ctx, &good, &illegal, stream);
    CHECK(st == QG_ERROR_UNSUPPORTED && strstr(qg_last_error(), "block_n"),
          "forced 128x200: status %d (%s)", (int)st, qg_last_error());
    cases++;
    st = qg_fp8_gemm_nt(ctx, NULL, NULL, stream);
    CHECK(st == QG_ERROR_INVALID_ARGUMENT, "NULL args: status %d", (int)st);

    /* Nothing above may have written D: every element still holds the poison. */
    qgtk_check_result res;
    CHECK(qgtk_problem_check(ctx, p, &res) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(res.unwritten_count == res.checked && res.checked == (int64_t)p->m * p->n &&
              res.modified_count == 0,
          "D was written by a rejected call: %lld of %lld elements changed",
          (long long)(res.checked - res.unwritten_count), (long long)res.checked);
    printf("    %d rejected calls, D untouched\n", cases + 2);

    /* And the good arguments do work after all that. */
    CHECK(qgtk_problem_run_check(ctx, p, NULL, stream, &res) == QG_SUCCESS, "%s", qg_last_error());
    char desc[256];
    CHECK(qgtk_check_passed(&res, DIFF_BOUND), "%s", qgtk_check_describe(&res, desc, sizeof desc));
    qgtk_problem_free(p);
    qgtk_gpu_session_close(ctx, stream);
    PASS();
}

/* ---- the GPU reference is the CPU reference ------------------------------ */

static qg_test_result compare_references(qg_context *ctx, qgtk_problem_data *p, const char *what) {
    size_t count = (size_t)(p->rows * p->n);
    CHECK(qgtk_problem_reference(ctx, p, QGTK_REF_CPU) == QG_SUCCESS, "%s: %s", what, qg_last_error());
    double *cpu = malloc(sizeof(double) * count);
    CHECK(cpu, "out of memory");
    memcpy(cpu, p->ref, sizeof(double) * count);
    CHECK(qgtk_problem_reference(ctx, p, QGTK_REF_GPU) == QG_SUCCESS, "%s: %s", what, qg_last_error());
    int64_t nan_rows = 0;
    for (size_t i = 0; i < count; i++) {
        CHECK(!!isnan(cpu[i]) == !!isnan(p->ref[i]), "%s: element %zu: cpu %g gpu %g", what, i,
              cpu[i], p->ref[i]);
        nan_rows += isnan(cpu[i]) && i % (size_t)p->n == 0;
        if (isnan(cpu[i])) continue;
        /* Only the summation order differs (both exact products in double). */
        CHECK(fabs(cpu[i] - p->ref[i]) <= 1e-10 * (fabs(cpu[i]) + 1.0),
              "%s: element %zu: cpu %.17g gpu %.17g", what, i, cpu[i], p->ref[i]);
    }
    double d = qgtk_calc_diff(p->ref, cpu, count);
    CHECK(d < 1e-14, "%s: diff %g", what, d);
    printf("    %s: gpu vs cpu reference diff %.2g, %lld skipped rows\n", what, d,
           (long long)nan_rows);
    free(cpu);
    PASS();
}

TEST(gpu_reference_matches_cpu) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    qgtk_problem_data *p = NULL;

    qgtk_problem_spec dense = {.kind = QG_GEMM_DENSE, .m = 300, .n = 520, .k = 784,
                             .num_groups = 1, .seed = 21, .lda_pad = 16, .ldb_pad = 32,
                             .sfa_ld_pad = 4, .scale_spread = 4};
    CHECK(qgtk_problem_create(&p, ctx, &dense) == QG_SUCCESS, "%s", qg_last_error());
    if (compare_references(ctx, p, "dense 300x520x784") != QG_T_PASS) return QG_T_FAIL;
    qgtk_problem_free(p);

    /* Contiguous with rows of several groups (and -1) inside every 64-row
     * tile of the reference kernel: its multi-pass path. */
    qgtk_problem_spec contig = {.kind = QG_GEMM_GROUPED_CONTIGUOUS, .n = 200, .k = 400,
                              .num_groups = 5, .seed = 22, .expected_m = 90, .scale_spread = 3};
    CHECK(qgtk_problem_create(&p, ctx, &contig) == QG_SUCCESS, "%s", qg_last_error());
    uint64_t x = 12345;
    for (int r = 0; r < p->m; r++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p->m_indices[r] = (int32_t)((x >> 33) % 6) - 1;
    }
    CHECK(qgtk_problem_update_indices(ctx, p) == QG_SUCCESS, "%s", qg_last_error());
    if (compare_references(ctx, p, "contiguous mixed 5 groups") != QG_T_PASS) return QG_T_FAIL;
    qgtk_problem_free(p);

    /* Masked with M_max not a multiple of 64: tiles straddle groups. */
    int mm[3] = {0, 100, 37};
    qgtk_problem_spec masked = {.kind = QG_GEMM_GROUPED_MASKED, .m = 100, .n = 136, .k = 272,
                              .num_groups = 3, .seed = 23, .masked_m = mm, .scale_spread = 3};
    CHECK(qgtk_problem_create(&p, ctx, &masked) == QG_SUCCESS, "%s", qg_last_error());
    if (compare_references(ctx, p, "masked 3x100") != QG_T_PASS) return QG_T_FAIL;
    qgtk_problem_free(p);
    qgtk_gpu_session_close(ctx, stream);
    PASS();
}

