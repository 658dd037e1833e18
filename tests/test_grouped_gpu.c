/*
 * test_grouped_gpu.c -- grouped (MoE) GEMM correctness on the GPU (skipped
 * without one): the contiguous layout (expert segments of random size, padded
 * with -1 rows that must stay untouched, some after a whole -1 block), the
 * masked layout (rows past masked_m untouched, including empty and full
 * groups), and CUDA-graph replay of a masked call with masked_m changed on
 * the device between replays.
 *
 * Pass rule: every group's diff < 1e-5 against the exact reference, no NaN,
 * every valid row written, every other row still poisoned.
 * QG_TEST_PROGRESS=1 prints each case (with a monotonic clock) before it runs.
 */
#include "qg_test.h"
#include "qgtk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIFF_BOUND 1e-5
#define MAX_REPORTED 12

static const int nk_pairs[][2] = {{4096, 7168}, {7168, 2048}, {576, 400}};
#define NUM_NK ((int)(sizeof nk_pairs / sizeof nk_pairs[0]))

typedef struct {
    int cases, failures;
    double lo, hi; /* worst-group diff range of the passing cases */
} range;

/* Run p's GEMM once (cfg NULL: the heuristic's choice) and check it; print
 * the case when it fails. */
static bool run_case(qg_context *ctx, CUstream stream, qgtk_problem_data *p, const qg_config *cfg,
                     const char *label, range *r) {
    qgtk_check_result res;
    char desc[256];
    if (getenv("QG_TEST_PROGRESS")) { /* which case a slow or hung run was in, and when */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        printf("    .. %.1f s: %s%s\n", (double)now.tv_sec + now.tv_nsec * 1e-9, label,
               cfg ? "" : ", heuristic");
        fflush(stdout);
    }
    qg_status st = qgtk_problem_run_check(ctx, p, cfg, stream, &res);
    bool ok = st == QG_SUCCESS && qgtk_check_passed(&res, DIFF_BOUND);
    r->cases++;
    if (ok) {
        if (r->cases - r->failures == 1 || res.group_diff_max < r->lo) r->lo = res.group_diff_max;
        if (r->cases - r->failures == 1 || res.group_diff_max > r->hi) r->hi = res.group_diff_max;
    } else if (++r->failures <= MAX_REPORTED) {
        printf("    FAIL %s: %s\n", label,
               st != QG_SUCCESS ? qg_last_error() : qgtk_check_describe(&res, desc, sizeof desc));
        for (int g = 0; st == QG_SUCCESS && g < p->num_groups; g++)
            if (!(p->group_diff[g] < DIFF_BOUND)) printf("      group %d diff %.3g\n", g, p->group_diff[g]);
    }
    return ok;
}

/* The forced configurations run after the heuristic's choice: ones it may
 * not pick for these shapes (the wide tiles, multicast, one math warpgroup,
 * 256-row tiles; B multicast, whose pairs the kernel forms per tile from the
 * device's row counts: QG_PAIR_TILES, with dummy tiles beside a lone tile
 * and both halves of B loaded where a pair's tiles differ); those a shape
 * does not allow are skipped. */
static const qg_config forced[] = {
    {.block_m = 128, .block_n = 256, .multicast = QG_MULTICAST_NONE},
    {.block_m = 128, .block_n = 256, .multicast = QG_MULTICAST_A},
    {.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_A},
    {.block_m = 64, .block_n = 176, .multicast = QG_MULTICAST_NONE},
    {.block_m = 256, .block_n = 80, .multicast = QG_MULTICAST_A},
    {.block_m = 128, .block_n = 176, .multicast = QG_MULTICAST_NONE},
    {.block_m = 128, .block_n = 224, .multicast = QG_MULTICAST_A},
    {.block_m = 256, .block_n = 128, .multicast = QG_MULTICAST_A},
    {.block_m = 256, .block_n = 96, .multicast = QG_MULTICAST_NONE},
    {.block_m = 128, .block_n = 192, .multicast = QG_MULTICAST_B},
    {.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_B},
    {.block_m = 64, .block_n = 96, .multicast = QG_MULTICAST_B},
    {.block_m = 256, .block_n = 128, .multicast = QG_MULTICAST_B},
};
#define NUM_FORCED ((int)(sizeof forced / sizeof forced[0]))

static qg_problem problem_of(const qgtk_problem_data *p) {
    return (qg_problem){p->kind, p->m, p->n, p->k, p->num_groups, p->expected_m, 0};
}

static void run_case_and_forced(qg_context *ctx, CUstream stream, qgtk_problem_data *p,
                                const char *label, range *r) {
    run_case(ctx, stream, p, NULL, label, r);
    const qg_problem prob = problem_of(p);
    for (int i = 0; i < NUM_FORCED; i++) {
        qg_config cfg = forced[i];
        if (qg_complete_config(ctx, &prob, &cfg) != QG_SUCCESS) continue;
        char what[200];
        snprintf(what, sizeof what, "%s, forced %dx%d multicast %d", label, cfg.block_m,
                 cfg.block_n, (int)cfg.multicast);
        run_case(ctx, stream, p, &cfg, what, r);
    }
}

static bool same_config(const qg_config *a, const qg_config *b) {
    return a->block_m == b->block_m && a->block_n == b->block_n &&
           a->num_stages == b->num_stages && a->multicast == b->multicast &&
           a->swizzle_group == b->swizzle_group && a->split_k == b->split_k;
}

/* The distinct kernels run_case_and_forced runs for ps[0..count) (the
 * heuristic's choice, then each legal forced configuration it does not
 * repeat) into probs / cfgs, which hold count * (1 + NUM_FORCED); returns how
 * many. Every problem's (G, N, K) is its own kernel key, so only a forced
 * configuration equal to the heuristic's is a repeat. */
static int distinct_kernels(const qg_context *ctx, qgtk_problem_data *const *ps, int count,
                            qg_problem *probs, qg_config *cfgs) {
    int total = 0;
    for (int c = 0; c < count; c++) {
        const qg_problem prob = problem_of(ps[c]);
        const int first = total;
        for (int i = -1; i < NUM_FORCED; i++) {
            qg_config cfg = i < 0 ? (qg_config){0} : forced[i];
            if ((i < 0 ? qg_select_config(ctx, &prob, &cfg) : qg_complete_config(ctx, &prob, &cfg)) !=
                QG_SUCCESS)
                continue; /* the run reports a failing selection; forced: not for this shape */
            bool seen = false;
            for (int t = first; t < total && !seen; t++) seen = same_config(&cfgs[t], &cfg);
            if (!seen) probs[total] = prob, cfgs[total++] = cfg;
        }
    }
    return total;
}

/* A part of a grouped test: its problems created, their kernels compiled
 * ahead on qgtk_num_workers() threads (one at a time, ~2 s each on an H200
 * host's core, gpu_grouped_masked's ~150 kernels outlasted 170 s), then each
 * problem run with the heuristic's and the forced configurations. The
 * labels are made after creation (masked_m, expected_m are drawn). */
typedef void (*label_fn)(const qgtk_problem_data *p, const qgtk_problem_spec *spec, char *out,
                         size_t cap);

static bool run_part(qg_context *ctx, CUstream stream, const qgtk_problem_spec *specs, int count,
                     label_fn label_of, range *r) {
    qgtk_problem_data *ps[16] = {0};
    qg_problem probs[16 * (1 + NUM_FORCED)];
    qg_config cfgs[16 * (1 + NUM_FORCED)];
    bool ok = count <= 16;
    for (int c = 0; ok && c < count; c++) {
        ok = qgtk_problem_create(&ps[c], ctx, &specs[c]) == QG_SUCCESS;
        if (!ok) printf("    FAIL problem %d: %s\n", c, qg_last_error());
    }
    if (ok) {
        const int total = distinct_kernels(ctx, ps, count, probs, cfgs);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        const int refused = qgtk_compile_many(ctx, probs, cfgs, total, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("    compiled %d kernels ahead in %.1f s on %d threads (%d refused: their runs say why)\n",
               total, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
               qgtk_num_workers(), refused);
        fflush(stdout);
        for (int c = 0; c < count; c++) {
            char label[128];
            label_of(ps[c], &specs[c], label, sizeof label);
            run_case_and_forced(ctx, stream, ps[c], label, r);
        }
    }
    for (int c = 0; c < count; c++) qgtk_problem_free(ps[c]);
    return ok;
}

/* Mean real rows per expert; drawn +-30%, so segments sit below, at and
 * above the 128-row alignment. */
static const int contiguous_groups[] = {4, 8, 32}, contiguous_expected[] = {600, 256, 100};

static void contiguous_label(const qgtk_problem_data *p, const qgtk_problem_spec *spec, char *out,
                             size_t cap) {
    snprintf(out, cap, "contiguous %d experts, M_total %d, N %d, K %d%s", p->num_groups, p->m, p->n,
             p->k, spec->padding_blocks ? ", padding blocks" : "");
}

TEST(gpu_grouped_contiguous) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    qgtk_problem_spec specs[3 * NUM_NK];
    int count = 0;
    for (int gi = 0; gi < 3; gi++)
        for (int j = 0; j < NUM_NK; j++)
            specs[count++] = (qgtk_problem_spec){
                .kind = QG_GEMM_GROUPED_CONTIGUOUS, .n = nk_pairs[j][0], .k = nk_pairs[j][1],
                .num_groups = contiguous_groups[gi], .expected_m = contiguous_expected[gi],
                .seed = 300 + (uint64_t)(gi * 8 + j), .scale_spread = 3, .ldd_pad = j == 2 ? 8 : 0,
                .padding_blocks = j == 1};
    range r = {0};
    const bool made = run_part(ctx, stream, specs, count, contiguous_label, &r);
    printf("    grouped contiguous: %d cases, %d failed, worst-group diff max %.2g min %.2g\n",
           r.cases, r.failures, r.hi, r.lo);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(made, "creating the problems failed");
    CHECK(r.failures == 0, "%d failing cases", r.failures);
    PASS();
}

/* gpu_grouped_masked's problems, in parts of about 50 kernels each (a part
 * runs in one process; the parts can run side by side): G x M_max of
 * masked_shapes by the N, K of nk_pairs; a G of 1 cycles masked_m random, 0,
 * M_max (one group cannot hold both extremes), larger G hold both. */
static const int masked_shapes[][2] = {{1, 1024}, {4, 256}, {32, 192}, {6, 1024}}; /* G, M_max */

static qgtk_problem_spec masked_spec(int s, int j) {
    const int G = masked_shapes[s][0], M = masked_shapes[s][1];
    static int single[4][NUM_NK];
    single[s][j] = j == 0 ? -1 : j == 1 ? 0 : M;
    return (qgtk_problem_spec){.kind = QG_GEMM_GROUPED_MASKED, .m = M, .n = nk_pairs[j][0],
                               .k = nk_pairs[j][1], .num_groups = G,
                               .seed = 500 + (uint64_t)(s * 8 + j), .scale_spread = 3,
                               .masked_extremes = true,
                               .masked_m = G == 1 && j > 0 ? &single[s][j] : NULL};
}

/* Row counts chosen for B multicast's pairs (per tile, QG_PAIR_TILES):
 * N 576 is 3 n-blocks of 192 (odd: each group's last slot is a dummy);
 * 384 rows = 3 m-blocks of 128 (pairs that straddle n-blocks load B whole),
 * 0 rows (no slot), 1 row (one m-block: no pair of the group shares its B,
 * every tile loads it whole, its last slot a dummy), 129 and 257 rows (a
 * tail m-block of 1 row). */
static int pair_counts[] = {384, 0, 1, 129, 257};
static const qgtk_problem_spec pair_spec = {
    .kind = QG_GEMM_GROUPED_MASKED, .m = 384, .n = 576, .k = 400, .num_groups = 5,
    .expected_m = 200, .seed = 590, .scale_spread = 3, .masked_m = pair_counts};

static void masked_label(const qgtk_problem_data *p, const qgtk_problem_spec *spec, char *out,
                         size_t cap) {
    if (spec->masked_m == pair_counts)
        snprintf(out, cap, "masked 5 x 384, masked_m 384 0 1 129 257, N 576, K 400");
    else
        snprintf(out, cap, "masked %d x %d (masked_m[0] %d, expected_m %d), N %d, K %d",
                 p->num_groups, p->m, p->masked_m[0], p->expected_m, p->n, p->k);
}

/* Part `part` of the masked problems: 0 the shapes G 1 and 4, 1 the shapes
 * G 32 and 6, 2 the B multicast pairs. Fills specs (room for 2 * NUM_NK). */
static int masked_part_specs(int part, qgtk_problem_spec *specs) {
    if (part == 2) {
        specs[0] = pair_spec;
        return 1;
    }
    int count = 0;
    for (int s = 2 * part; s < 2 * part + 2; s++)
        for (int j = 0; j < NUM_NK; j++) specs[count++] = masked_spec(s, j);
    return count;
}

static qg_test_result masked_part(int part) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    qgtk_problem_spec specs[2 * NUM_NK];
    const int count = masked_part_specs(part, specs);
    range r = {0};
    const bool made = run_part(ctx, stream, specs, count, masked_label, &r);
    printf("    grouped masked part %c: %d cases, %d failed, worst-group diff max %.2g min %.2g\n",
           'a' + part, r.cases, r.failures, r.hi, r.lo);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(made, "creating the problems failed");
    CHECK(r.failures == 0, "%d failing cases", r.failures);
    PASS();
}

/* The masked layout in three parts (one process each; they may run side by
 * side): a: G 1 x 1024 and G 4 x 256 by the three N, K; b: G 32 x 192 and
 * G 6 x 1024 by the three N, K; c: B multicast's pairs, 5 x 384. */
TEST(gpu_grouped_masked_a) { return masked_part(0); }
TEST(gpu_grouped_masked_b) { return masked_part(1); }
TEST(gpu_grouped_masked_c) { return masked_part(2); }

/* On the CPU: how many distinct kernels each masked part compiles (an
 * offline context, the problems made on the host: the same masked_m and
 * expected_m as on the GPU), so a part stays within one cold-cache minute of
 * a 16-core host (at ~2 s a kernel a core: <= 120 kernels; the parts hold
 * about 50). */
TEST(grouped_masked_parts_kernels) {
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(&ctx, NULL) == QG_SUCCESS, "%s", qg_last_error());
    int sum = 0;
    for (int part = 0; part < 3; part++) {
        qgtk_problem_spec specs[2 * NUM_NK];
        const int count = masked_part_specs(part, specs);
        qgtk_problem_data *ps[2 * NUM_NK] = {0};
        qg_problem probs[2 * NUM_NK * (1 + NUM_FORCED)];
        qg_config cfgs[2 * NUM_NK * (1 + NUM_FORCED)];
        bool made = true;
        for (int c = 0; c < count; c++) made &= qgtk_problem_create_host(&ps[c], &specs[c]) == QG_SUCCESS;
        const int total = made ? distinct_kernels(ctx, ps, count, probs, cfgs) : -1;
        for (int c = 0; c < count; c++) qgtk_problem_free(ps[c]);
        printf("    gpu_grouped_masked_%c: %d problems, %d distinct kernels\n", 'a' + part, count,
               total);
        if (!made || total <= 0 || total > 120) {
            qg_context_destroy(ctx);
            CHECK(made, "part %d: creating the problems: %s", part, qg_last_error());
            CHECK(total > 0 && total <= 120, "part %d: %d kernels, expected 1 .. 120", part, total);
        }
        sum += total;
    }
    qg_context_destroy(ctx);
    printf("    %d distinct kernels in all\n", sum);
    PASS();
}

/* Capture one masked call in a CUDA graph and replay it after changing
 * masked_m on the device: the launch reads masked_m only on the GPU, so each
 * replay must follow the new values. */
TEST(gpu_masked_graph_replay) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    const qg_driver *drv = NULL;
    CUcontext cu_context = NULL;
    CHECK(qg__context_cuda(ctx, &drv, &cu_context, NULL), "a device context has no CUDA context");
    enum { G = 6, M = 256 };
    qgtk_problem_spec spec = {.kind = QG_GEMM_GROUPED_MASKED, .m = M, .n = 2112, .k = 7168,
                            .num_groups = G, .seed = 900, .scale_spread = 3,
                            .masked_extremes = true, .expected_m = 128};
    qgtk_problem_data *p = NULL;
    CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
    range r = {0};

    /* Eager call first: compiles and loads the kernel outside the capture. */
    CHECK(run_case(ctx, stream, p, NULL, "eager masked call", &r), "the eager call must pass first");

    qg_gemm_args args = qgtk_problem_args(p);
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CHECK(drv->cuCtxPushCurrent(cu_context) == CUDA_SUCCESS, "push");
    CUresult cr = drv->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    qg_status st = QG_ERROR_CUDA;
    if (cr == CUDA_SUCCESS) {
        st = qg_m_grouped_fp8_gemm_nt_masked(ctx, &args, NULL, stream);
        cr = drv->cuStreamEndCapture(stream, &graph); /* always end, even after a failure */
    }
    if (cr == CUDA_SUCCESS && st == QG_SUCCESS) cr = drv->cuGraphInstantiate(&exec, graph, 0);
    CUcontext popped;
    drv->cuCtxPopCurrent(&popped);
    CHECK(st == QG_SUCCESS, "masked call under capture: status %d: %s", (int)st, qg_last_error());
    CHECK(cr == CUDA_SUCCESS, "capture/instantiate: CUresult %d", (int)cr);

    int sets[5][G];
    for (int g = 0; g < G; g++) {
        sets[0][g] = (g * 97 + 13) % (M + 1);
        sets[1][g] = 0;
        sets[2][g] = M;
        sets[3][g] = g % 2 ? M : 1;
        sets[4][g] = (g * 41 + 200) % (M + 1);
    }
    static const char *names[5] = {"mixed", "all 0", "all M_max", "alternating M_max/1",
                                   "mixed again"};
    for (int s = 0; s < 5; s++) {
        memcpy(p->masked_m, sets[s], sizeof sets[s]);
        CHECK(qgtk_problem_update_indices(ctx, p) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(qgtk_problem_poison(ctx, p, stream) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(drv->cuCtxPushCurrent(cu_context) == CUDA_SUCCESS, "push");
        cr = drv->cuGraphLaunch(exec, stream);
        drv->cuCtxPopCurrent(&popped);
        CHECK(cr == CUDA_SUCCESS, "cuGraphLaunch: CUresult %d", (int)cr);
        qgtk_check_result res;
        char desc[256];
        CHECK(qgtk_problem_check(ctx, p, &res) == QG_SUCCESS, "%s", qg_last_error());
        int64_t expect_checked = 0;
        for (int g = 0; g < G; g++) expect_checked += (int64_t)sets[s][g] * p->n;
        CHECK(res.checked == expect_checked, "replay %s: %lld elements checked, expected %lld",
              names[s], (long long)res.checked, (long long)expect_checked);
        CHECK(qgtk_check_passed(&res, DIFF_BOUND), "replay %s: %s", names[s],
              qgtk_check_describe(&res, desc, sizeof desc));
        printf("    graph replay, masked_m %s: diff %.2g, %lld rows untouched as required\n",
               names[s], res.diff, (long long)(p->rows - expect_checked / p->n));
    }
    CHECK(drv->cuCtxPushCurrent(cu_context) == CUDA_SUCCESS, "push");
    drv->cuGraphExecDestroy(exec);
    drv->cuGraphDestroy(graph);
    drv->cuCtxPopCurrent(&popped);
    qgtk_problem_free(p);
    qgtk_gpu_session_close(ctx, stream);
    PASS();
}
