/*
 * test_fp8_batched.c -- the batched FP8 GEMM (qg_batched_fp8_gemm_nt,
 * QG_GEMM_FP8_BATCHED; kernel QG_KIND 5): argument validation on an offline
 * context (every argument, each refused with its name, before anything
 * touches memory), the compile sweep of every configuration the heuristic
 * can pick for the kind (testkit verdict: no spill, no stack, no warning,
 * rank-3 TMA), and on a GPU the fp64 reference in the packed layout and in
 * the einsum 'bhr,hdr->bhd' layout (A and D interleaved by head), with the
 * poison between the heads' columns of D checked.
 */
#include "internal.h"
#include "qg_test.h"
#include "fake_args.h"
#include "gpu_ctx.h"
#include "qgtk.h"
#include "qgemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A legal batched call: 8 batches of 100 x 576 x 400 in the einsum layout
 * (A rows 8 x 400 bytes apart, batch stride 400; D rows 8 x 584 apart, batch
 * stride 584), fake pointers far enough apart not to overlap. */
typedef struct {
    qg_gemm_args a;
    int64_t sa, sb, sd;
} batched_call;

static batched_call good_call(void) {
    batched_call c;
    memset(&c, 0, sizeof c);
    c.a.m = 100, c.a.n = 576, c.a.k = 400, c.a.num_groups = 8;
    c.a.a = FAKE(0x10000000), c.a.lda = 8 * 400;
    c.a.sfa = FAKE(0x20000000), c.a.sfa_ld = 100;
    c.a.b = FAKE(0x30000000), c.a.ldb = 400;
    c.a.sfb = FAKE(0x40000000);
    c.a.d = FAKE(0x50000000), c.a.ldd = 8 * 584;
    c.sa = 400, c.sb = 576 * 400, c.sd = 584;
    return c;
}

static qg_status call(qg_context *ctx, const batched_call *c, const qg_config *cfg) {
    return qg_batched_fp8_gemm_nt(ctx, &c->a, c->sa, c->sb, c->sd, cfg, NULL);
}

/* The call is refused with `want` and a message holding every one of the
 * (up to two) fragments. */
#define REFUSED(ctx, c, cfg, want, frag1, frag2)                                            \
    do {                                                                                     \
        const qg_status st_ = call(ctx, &(c), cfg);                                          \
        CHECK(st_ == (want) && strstr(qg_last_error(), frag1) &&                             \
                  strstr(qg_last_error(), frag2) &&                                          \
                  strstr(qg_last_error(), "qg_batched_fp8_gemm_nt"),                         \
              "line %d: status %d (want %d), message: %s", __LINE__, (int)st_, (int)(want),  \
              qg_last_error());                                                              \
    } while (0)

TEST(fp8_batched_argument_validation) {
    qg_context *ctx;
    CHECK(qg_context_create_offline(&ctx, NULL) == QG_SUCCESS, "%s", qg_last_error());
    batched_call c = good_call();
    /* every check passed: only the offline context stops it */
    REFUSED(ctx, c, NULL, QG_ERROR_NO_DEVICE, "offline", "");
    CHECK(qg_batched_fp8_gemm_nt(NULL, &c.a, c.sa, c.sb, c.sd, NULL, NULL) ==
              QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "ctx is NULL"),
          "%s", qg_last_error());
    CHECK(qg_batched_fp8_gemm_nt(ctx, NULL, c.sa, c.sb, c.sd, NULL, NULL) ==
              QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "args is NULL"),
          "%s", qg_last_error());
    struct {
        int field; /* which field is bad */
        qg_status want;
        const char *frag1, *frag2;
    } cases[] = {
        {0, QG_ERROR_INVALID_ARGUMENT, "args->m must be >= 0", "-1"},
        {1, QG_ERROR_INVALID_ARGUMENT, "args->n must be >= 0", "-8"},
        {2, QG_ERROR_UNSUPPORTED, "k must be a positive multiple of 16", "0"},
        {3, QG_ERROR_UNSUPPORTED, "k must be a positive multiple of 16", "40"},
        {4, QG_ERROR_INVALID_ARGUMENT, "num_groups must be in [1, 4096]", "0"},
        {5, QG_ERROR_INVALID_ARGUMENT, "num_groups must be in [1, 4096]", "4097"},
        {6, QG_ERROR_INVALID_ARGUMENT, "batch_stride_a must be >= 0", "-16"},
        {7, QG_ERROR_INVALID_ARGUMENT, "batch_stride_a", "got 24"},
        {8, QG_ERROR_INVALID_ARGUMENT, "batch_stride_b", "2^40"},
        {9, QG_ERROR_INVALID_ARGUMENT, "batch_stride_d", "(8 elements)"},
        {10, QG_ERROR_INVALID_ARGUMENT, "args->masked_m must be NULL", ""},
        {11, QG_ERROR_INVALID_ARGUMENT, "args->m_indices must be NULL", ""},
        {12, QG_ERROR_INVALID_ARGUMENT, "args->group_ends must be NULL", ""},
        {13, QG_ERROR_INVALID_ARGUMENT, "args->c must be NULL", ""},
        {14, QG_ERROR_INVALID_ARGUMENT, "args->ks must be NULL", ""},
        {15, QG_ERROR_INVALID_ARGUMENT, "args->expected_m must be 0", "got 7"},
        {16, QG_ERROR_INVALID_ARGUMENT, "lda", "k"},
        {17, QG_ERROR_INVALID_ARGUMENT, "ldb", "k"},
        {18, QG_ERROR_INVALID_ARGUMENT, "ldd", "n"},
        {19, QG_ERROR_INVALID_ARGUMENT, "sfa_ld", "m"},
        {20, QG_ERROR_INVALID_ARGUMENT, "a", "NULL"},
        {21, QG_ERROR_INVALID_ARGUMENT, "sfb", "aligned"},
        {22, QG_ERROR_INVALID_ARGUMENT, "d", "NULL"},
        /* D's batch 7 reaches into B: only the batch strides show it */
        {23, QG_ERROR_INVALID_ARGUMENT, "args->d", "overlaps args->b"},
        /* A's batches, not its first: batch 7 reaches D */
        {24, QG_ERROR_INVALID_ARGUMENT, "args->d", "overlaps args->a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        batched_call b = good_call();
        switch (cases[i].field) {
        case 0: b.a.m = -1; break;
        case 1: b.a.n = -8; break;
        case 2: b.a.k = 0; break;
        case 3: b.a.k = 40; b.sa = 0; break; /* (lda 3200 >= 40) */
        case 4: b.a.num_groups = 0; break;
        case 5: b.a.num_groups = 4097; break;
        case 6: b.sa = -16; break;
        case 7: b.sa = 24; break;
        case 8: b.sb = (int64_t)1 << 40; break;
        case 9: b.sd = 4; break;
        case 10: b.a.masked_m = FAKE(0x60000000); break;
        case 11: b.a.m_indices = FAKE(0x60000000); break;
        case 12: b.a.group_ends = FAKE(0x60000000); break;
        case 13: b.a.c = FAKE(0x60000000); break;
        case 14: { static const int32_t ks[8] = {0}; b.a.ks = ks; } break;
        case 15: b.a.expected_m = 7; break;
        case 16: b.a.lda = 384; break;
        case 17: b.a.ldb = 384; break;
        case 18: b.a.ldd = 568; break;
        case 19: b.a.sfa_ld = 96; break;
        case 20: b.a.a = NULL; break;
        case 21: b.a.sfb = FAKE(0x40000004); break;
        case 22: b.a.d = NULL; break;
        case 23: b.a.d = FAKE(0x30000000 - 0x100000); b.sd = 0x20000; break;
        case 24: b.a.a = FAKE(0x50000000 - 0x100000); b.sa = 0x20000; break;
        }
        REFUSED(ctx, b, NULL, cases[i].want, cases[i].frag1, cases[i].frag2);
    }
    /* m = 0 passes every check, then returns before the launch (offline:
     * the context's refusal, after the checks) */
    batched_call z = good_call();
    z.a.m = 0;
    REFUSED(ctx, z, NULL, QG_ERROR_NO_DEVICE, "offline", "");
    /* forced configurations: legal ones reach the offline refusal, B
     * multicast and split-K are refused with their reasons */
    qg_config cfg = {.block_m = 64, .block_n = 96, .multicast = QG_MULTICAST_A};
    REFUSED(ctx, c, &cfg, QG_ERROR_NO_DEVICE, "forced configuration", "legal");
    cfg = (qg_config){.block_m = 128, .block_n = 64, .multicast = QG_MULTICAST_B};
    REFUSED(ctx, c, &cfg, QG_ERROR_UNSUPPORTED, "multicast B", "dense");
    { /* the heuristic plans the batched GEMM as the masked layout, where B
       * multicast is on by default on an H200 (QGEMM_FP8_GROUPED_MCB): the
       * batched kernel has no B pairs, so it never picks it (the fp8_einsum
       * shapes of DeepGEMM's tests and DeepSeek's 128 heads) */
        qg_device_props props = {.sm_count = 132, .cc_major = 9, .cc_minor = 0,
                                 .smem_optin_bytes = 232448, .l2_bytes = 50u << 20,
                                 .dram_gbps = 4915};
        qg_context *h200 = NULL;
        CHECK(qg_context_create_offline(&h200, &props) == QG_SUCCESS, "%s", qg_last_error());
        static const int shapes[][4] = {/* G, M, N, K */
                                        {8, 4096, 1024, 4096}, {8, 8192, 1024, 4096},
                                        {128, 4096, 512, 128},  {8, 128, 1024, 4096},
                                        {16, 1024, 7168, 2048}};
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
            const qg_problem bp = {QG_GEMM_FP8_BATCHED, shapes[i][1], shapes[i][2], shapes[i][3],
                                   shapes[i][0], 0, 0};
            qg_config pick;
            CHECK(qg_select_config(h200, &bp, &pick) == QG_SUCCESS, "%s", qg_last_error());
            CHECK(pick.multicast != QG_MULTICAST_B, "batched %d x %dx%dx%d picked %dx%d B",
                  shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], pick.block_m,
                  pick.block_n);
        }
        qg_context_destroy(h200);
    }
    cfg = (qg_config){.block_m = 128, .block_n = 64, .split_k = 2};
    REFUSED(ctx, c, &cfg, QG_ERROR_UNSUPPORTED, "split_k", "dense");
    /* the kind has no e4m3-D or SwiGLU kernel */
    qg_problem p = {QG_GEMM_FP8_BATCHED, 100, 576, 400, 8, 0, 0};
    CHECK(qg_compile_fp8out(ctx, &p, 0, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "problem->kind must be"), "%s", qg_last_error());
    CHECK(qg_compile_swiglu(ctx, &p, 0, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "problem->kind must be"), "%s", qg_last_error());
    /* the problem checks name the kind's range; 7 is no kind */
    p.kind = (qg_gemm_kind)7;
    qg_config out;
    CHECK(qg_select_config(ctx, &p, &out) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "_FP8_BATCHED (6)"), "%s", qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* ---- compile sweep ---------------------------------------------------------- */

static int check_batched_kernel(qgtk_compile_sweep *sw, const qg_problem *p, const qg_config *cfg,
                                const char *what) {
    qg_kernel_info info;
    memset(&info, 0, sizeof info);
    const qg_status st = qg_compile(sw->ctx, p, cfg, &info);
    const bool mc = cfg->multicast != QG_MULTICAST_NONE;
    const unsigned need = QGTK_PTX_WGMMA | QGTK_PTX_TMA_LOAD | QGTK_PTX_TMA_STORE |
                          QGTK_PTX_SETMAXNREG | QGTK_PTX_STMATRIX | (mc ? QGTK_PTX_MULTICAST : 0);
    return qgtk_compile_verdict(sw, what, st, &info, need, mc ? 0 : QGTK_PTX_MULTICAST);
}

/* Every legal (block_m, block_n, multicast) of the kind (they are the
 * masked layout's: the heuristic picks among exactly these), at N = 6 x
 * block_n (even n-blocks, off-128 column offsets) and K 7168; then what the
 * heuristic picks for the einsum shapes (DeepSeek's MLA 'bhr,hdr->bhd': 128
 * heads, R 512 -> D 128 and R 128 -> D 512, at 1..4096 tokens) and the GPU
 * test's shapes, compiled as forced so a refusal fails here. */
TEST(compile_fp8_batched_every_variant) {
    qgtk_compile_sweep sw;
    CHECK(qgtk_compile_sweep_open(&sw, 20, 0) == QG_SUCCESS, "offline context: %s", qg_last_error());
    qg_context *ctx = sw.ctx;
    static const int bms[] = {64, 128, 256};
    int refused = 0;
    for (int bi = 0; bi < 3; ++bi)
        for (int bn = 16; bn <= 256; bn += 16)
            for (int mc = 0; mc < 2; ++mc) {
                qg_problem p = {QG_GEMM_FP8_BATCHED, 2048, 6 * bn, 7168, 4, 0, 0};
                qg_config cfg = {.block_m = bms[bi], .block_n = bn, .multicast = (qg_multicast)mc};
                if (qg_complete_config(ctx, &p, &cfg) != QG_SUCCESS) {
                    refused++;
                    continue;
                }
                char what[96];
                snprintf(what, sizeof what, "batched block %dx%d multicast %d", bms[bi], bn, mc);
                check_batched_kernel(&sw, &p, &cfg, what);
            }
    const int forced_compiled = sw.compiled;
    static const int shapes[][4] = {/* m, n, k, G */
                                    {1, 128, 512, 128},   {64, 128, 512, 128}, {512, 128, 512, 128},
                                    {4096, 128, 512, 128}, {1, 512, 128, 128}, {64, 512, 128, 128},
                                    {4096, 512, 128, 128}, {1, 200, 640, 8},   {300, 200, 640, 8},
                                    {129, 256, 384, 3},    {64, 512, 512, 8}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
        qg_problem p = {QG_GEMM_FP8_BATCHED, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], 0, 0};
        qg_config cfg;
        CHECK(qg_select_config(ctx, &p, &cfg) == QG_SUCCESS, "%s", qg_last_error());
        char what[112];
        snprintf(what, sizeof what, "batched heuristic %dx%dx%d G %d -> %dx%d multicast %d", p.m,
                 p.n, p.k, p.num_groups, cfg.block_m, cfg.block_n, (int)cfg.multicast);
        check_batched_kernel(&sw, &p, &cfg, what);
    }
    printf("    %d batched kernels compiled (%d forced tiles), %d configurations refused as "
           "illegal, %d failures\n", sw.compiled, forced_compiled, refused, sw.failures);
    CHECK(forced_compiled >= 30, "too few variants compiled: %d", forced_compiled);
    CHECK(sw.failures == 0, "%d variants failed", sw.failures);
    qgtk_compile_sweep_close(&sw);
    PASS();
}

/* ---- GPU -------------------------------------------------------------------- */

/* One shape: a masked problem with every group full (masked_m = m: the
 * testkit's fp64 reference of the masked layout is the batched GEMM's in the
 * packed layout), run (1) packed, checked against the reference with the
 * testkit's rule (ldd padding kept), and (2) in the einsum layout, A and D
 * interleaved by batch (x [m][G][k], z [m][G][n + 8]): every element against
 * the same reference, the 8 poison columns after each batch's n and the
 * rows' tails untouched, and the bytes equal to the packed run's (the same
 * kernel, the same configuration: the strides change no arithmetic). */
static int run_shape(qg_context *ctx, CUstream stream, int m, int n, int k, int g,
                     const qg_config *cfg, uint64_t seed) {
    const qg_driver *drv;
    if (!qg__context_cuda(ctx, &drv, NULL, NULL)) return 0;
    int32_t *full = malloc(sizeof(int32_t) * (size_t)g);
    for (int i = 0; i < g; ++i) full[i] = m;
    qgtk_problem_spec spec = {.kind = QG_GEMM_GROUPED_MASKED, .m = m, .n = n, .k = k,
                              .num_groups = g, .seed = seed, .scale_spread = 3, .ldd_pad = 8,
                              .masked_m = full};
    qgtk_problem_data *p = NULL;
    int ok = 0;
    char label[160];
    snprintf(label, sizeof label, "G %d M %d N %d K %d %s%dx%d mc %d", g, m, n, k,
             cfg ? "forced " : "heuristic ", cfg ? cfg->block_m : 0, cfg ? cfg->block_n : 0,
             cfg ? (int)cfg->multicast : 0);
    CUdeviceptr dx = 0, dz = 0;
    uint8_t *x = NULL;
    uint16_t *z = NULL;
    if (qgtk_problem_create(&p, ctx, &spec) != QG_SUCCESS) {
        printf("    FAIL %s: create: %s\n", label, qg_last_error());
        goto done;
    }
    /* (1) packed */
    qg_gemm_args a = qgtk_problem_args(p);
    a.masked_m = NULL;
    a.expected_m = 0;
    if (qgtk_problem_poison(ctx, p, stream) != QG_SUCCESS) goto done;
    gpu_ctx_push(ctx);
    gpu_legacy_done(ctx);
    gpu_ctx_pop(ctx);
    qg_status st = qg_batched_fp8_gemm_nt(ctx, &a, (int64_t)m * p->lda, (int64_t)n * p->ldb,
                                          (int64_t)m * p->ldd, cfg, stream);
    if (st != QG_SUCCESS) {
        printf("    FAIL %s: packed call: %s\n", label, qg_last_error());
        goto done;
    }
    qgtk_check_result res;
    if (qgtk_problem_check(ctx, p, &res) != QG_SUCCESS) {
        printf("    FAIL %s: check: %s\n", label, qg_last_error());
        goto done;
    }
    char desc[256];
    const bool packed_ok = qgtk_check_passed(&res, 1e-5);
    printf("    %s %s packed: %s\n", packed_ok ? "ok  " : "FAIL", label,
           qgtk_check_describe(&res, desc, sizeof desc));
    if (!packed_ok) goto done;

    /* (2) the einsum layout: x [m][G][k] (lda G*k, batch stride k), z
     * [m][G][n + 8] (ldd G*(n+8), batch stride n + 8), all poisoned */
    const int64_t zc = n + 8, ldz = (int64_t)g * zc, ldx = (int64_t)g * k;
    const size_t x_bytes = (size_t)m * (size_t)ldx, z_bytes = (size_t)m * (size_t)ldz * 2;
    x = malloc(x_bytes);
    z = malloc(z_bytes);
    if (!x || !z) goto done;
    for (int h = 0; h < g; ++h)
        for (int i = 0; i < m; ++i)
            memcpy(x + (size_t)i * (size_t)ldx + (size_t)h * (size_t)k,
                   p->a + ((size_t)h * (size_t)m + (size_t)i) * (size_t)p->lda, (size_t)k);
    dx = qgtk_device_upload(ctx, x, x_bytes);
    dz = qgtk_device_poisoned(ctx, z_bytes);
    if (!dx || !dz) {
        printf("    FAIL %s: device buffers\n", label);
        goto done;
    }
    gpu_ctx_push(ctx);
    gpu_legacy_done(ctx);
    gpu_ctx_pop(ctx);
    qg_gemm_args e = a;
    e.a = (const void *)(uintptr_t)dx;
    e.lda = ldx;
    e.d = (void *)(uintptr_t)dz;
    e.ldd = ldz;
    if ((st = qg_batched_fp8_gemm_nt(ctx, &e, k, (int64_t)n * p->ldb, zc, cfg, stream))) {
        printf("    FAIL %s: einsum call: %s\n", label, qg_last_error());
        goto done;
    }
    gpu_ctx_push(ctx);
    const bool got = !drv->cuStreamSynchronize(stream) && !drv->cuMemcpyDtoH(z, dz, z_bytes);
    gpu_ctx_pop(ctx);
    if (!got) {
        printf("    FAIL %s: download\n", label);
        goto done;
    }
    qgtk_diff_acc acc = {0};
    int64_t poison_lost = 0, nan = 0, bytes_differ = 0;
    double *row = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < m && row; ++i)
        for (int h = 0; h < g; ++h) {
            const uint16_t *zr = z + (size_t)i * (size_t)ldz + (size_t)h * (size_t)zc;
            const uint16_t *pr = p->d + ((size_t)h * (size_t)m + (size_t)i) * (size_t)p->ldd;
            for (int j = 0; j < n; ++j) {
                const uint32_t bits = (uint32_t)zr[j] << 16;
                float f;
                memcpy(&f, &bits, 4);
                row[j] = f;
                nan += isnan(f);
                bytes_differ += zr[j] != pr[j];
            }
            for (int j = n; j < zc; ++j) poison_lost += zr[j] != 0xFFFF;
            qgtk_diff_add(&acc, row, p->ref + ((size_t)h * (size_t)m + (size_t)i) * (size_t)n,
                          (size_t)n);
        }
    free(row);
    const double diff = qgtk_diff_result(&acc);
    const bool einsum_ok = diff < 1e-5 && nan == 0 && poison_lost == 0 && bytes_differ == 0 &&
                           acc.count == (size_t)m * (size_t)n * (size_t)g;
    printf("    %s %s einsum layout: diff %.2g, nan %lld, poison between heads lost %lld, "
           "elements differing from the packed run %lld of %zu\n",
           einsum_ok ? "ok  " : "FAIL", label, diff, (long long)nan, (long long)poison_lost,
           (long long)bytes_differ, acc.count);
    ok = einsum_ok;
done:
    gpu_ctx_push(ctx);
    if (dx) drv->cuMemFree(dx);
    if (dz) drv->cuMemFree(dz);
    gpu_ctx_pop(ctx);
    free(x);
    free(z);
    free(full);
    qgtk_problem_free(p);
    return ok;
}

TEST(gpu_fp8_batched) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    static const int shapes[][4] = {/* m, n, k, G */
                                    {1, 200, 640, 8},   {7, 200, 640, 8},   {64, 200, 640, 8},
                                    {65, 200, 640, 8},  {129, 200, 640, 8}, {300, 200, 640, 8},
                                    {1, 128, 512, 16},  {33, 512, 128, 16}, {300, 576, 400, 3},
                                    {200, 136, 7168, 2}};
    int cases = 0, failures = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i, ++cases)
        failures += !run_shape(ctx, stream, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
                               NULL, 900 + i);
    /* forced: A multicast (even n-blocks), the 256-row tile (a partial
     * warpgroup), a small tile with many n-blocks */
    static const qg_config forced[] = {{.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_A},
                                       {.block_m = 256, .block_n = 128},
                                       {.block_m = 64, .block_n = 32}};
    for (size_t i = 0; i < sizeof forced / sizeof forced[0]; ++i, ++cases)
        failures += !run_shape(ctx, stream, 300, 512, 640, 4, &forced[i], 950 + i);
    printf("    fp8 batched: %d cases, %d failed\n", cases, failures);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(failures == 0, "%d failing cases", failures);
    PASS();
}
