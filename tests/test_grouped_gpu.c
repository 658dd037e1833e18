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

/* The heuristic's choice, then forced configurations that it may not pick
 * for these shapes (the wide tiles, multicast, one math warpgroup, 256-row
 * tiles; B multicast, whose pairs the kernel forms per tile from the
 * device's row counts: QG_PAIR_TILES, with dummy tiles beside a lone tile
 * and both halves of B loaded where a pair's tiles differ); those a shape
 * does not allow are skipped. */
static void run_case_and_forced(qg_context *ctx, CUstream stream, qgtk_problem_data *p,
                                const char *label, range *r) {
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
    run_case(ctx, stream, p, NULL, label, r);
    qg_problem prob = {p->kind, p->m, p->n, p->k, p->num_groups, p->expected_m, 0};
    for (size_t i = 0; i < sizeof forced / sizeof forced[0]; i++) {
        qg_config cfg = forced[i];
        if (qg_complete_config(ctx, &prob, &cfg) != QG_SUCCESS) continue;
        char what[200];
        snprintf(what, sizeof what, "%s, forced %dx%d multicast %d", label, cfg.block_m,
                 cfg.block_n, (int)cfg.multicast);
        run_case(ctx, stream, p, &cfg, what, r);
    }
}

TEST(gpu_grouped_contiguous) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    /* Mean real rows per expert; drawn +-30%, so segments sit below, at
     * and above the 128-row alignment. */
    static const int groups[] = {4, 8, 32}, expected[] = {600, 256, 100};
    range r = {0};
    for (int gi = 0; gi < 3; gi++)
        for (int j = 0; j < NUM_NK; j++) {
            qgtk_problem_spec spec = {.kind = QG_GEMM_GROUPED_CONTIGUOUS, .n = nk_pairs[j][0],
                                    .k = nk_pairs[j][1], .num_groups = groups[gi],
                                    .expected_m = expected[gi], .seed = 300 + (uint64_t)(gi * 8 + j),
                                    .scale_spread = 3, .ldd_pad = j == 2 ? 8 : 0,
                                    .padding_blocks = j == 1};
            qgtk_problem_data *p = NULL;
            CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
            char label[128];
            snprintf(label, sizeof label, "contiguous %d experts, M_total %d, N %d, K %d%s",
                     groups[gi], p->m, p->n, p->k, spec.padding_blocks ? ", padding blocks" : "");
            run_case_and_forced(ctx, stream, p, label, &r);
            qgtk_problem_free(p);
        }
    printf("    grouped contiguous: %d cases, %d failed, worst-group diff max %.2g min %.2g\n",
           r.cases, r.failures, r.hi, r.lo);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(r.failures == 0, "%d failing cases", r.failures);
    PASS();
}

TEST(gpu_grouped_masked) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    static const int shapes[][2] = {{1, 1024}, {4, 256}, {32, 192}, {6, 1024}}; /* G, M_max */
    range r = {0};
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < NUM_NK; j++) {
            const int G = shapes[s][0], M = shapes[s][1];
            /* One group cannot hold both extremes: cycle random, 0, M_max. */
            int single = j == 0 ? -1 : j == 1 ? 0 : M;
            qgtk_problem_spec spec = {.kind = QG_GEMM_GROUPED_MASKED, .m = M, .n = nk_pairs[j][0],
                                    .k = nk_pairs[j][1], .num_groups = G,
                                    .seed = 500 + (uint64_t)(s * 8 + j), .scale_spread = 3,
                                    .masked_extremes = true,
                                    .masked_m = G == 1 && single >= 0 ? &single : NULL};
            qgtk_problem_data *p = NULL;
            CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
            char label[128];
            snprintf(label, sizeof label, "masked %d x %d (masked_m[0] %d, expected_m %d), N %d, K %d",
                     G, M, p->masked_m[0], p->expected_m, p->n, p->k);
            run_case_and_forced(ctx, stream, p, label, &r);
            qgtk_problem_free(p);
        }
    /* Row counts chosen for B multicast's pairs (per tile, QG_PAIR_TILES):
     * N 576 is 3 n-blocks of 192 (odd: each group's last slot is a dummy);
     * 384 rows = 3 m-blocks of 128 (pairs that straddle n-blocks load B
     * whole), 0 rows (no slot), 1 row (one m-block: no pair of the group
     * shares its B, every tile loads it whole, its last slot a dummy), 129
     * and 257 rows (a tail m-block of 1 row). */
    {
        static int counts[] = {384, 0, 1, 129, 257};
        qgtk_problem_spec spec = {.kind = QG_GEMM_GROUPED_MASKED, .m = 384, .n = 576, .k = 400,
                                  .num_groups = 5, .expected_m = 200, .seed = 590,
                                  .scale_spread = 3, .masked_m = counts};
        qgtk_problem_data *p = NULL;
        CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "%s", qg_last_error());
        run_case_and_forced(ctx, stream, p, "masked 5 x 384, masked_m 384 0 1 129 257, N 576, K 400",
                            &r);
        qgtk_problem_free(p);
    }
    printf("    grouped masked: %d cases, %d failed, worst-group diff max %.2g min %.2g\n", r.cases,
           r.failures, r.hi, r.lo);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(r.failures == 0, "%d failing cases", r.failures);
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
