/*
 * test_swiglu.c -- the FP8 GEMMs with the fused SwiGLU epilogue
 * (qg_swiglu_out) and the weight interleave (qg_interleave_gate_up): their
 * argument checks on the CPU (every argument refused with its message,
 * nothing written), and on the GPU (skipped without one): dense, contiguous
 * (with -1 padding blocks) and masked (empty and full groups, M_max off the
 * tiles), FP32 and UE8M0 scales, the clamp and the row weights each on and
 * off, the heuristic's tile and, for each option set, forced 128x256 with A
 * multicast, forced 64x256 and the heuristic under QGEMM_FP8OUT_VARIANT's
 * SwiGLU words (swm64+swmca+swmcac), each checked as below and bitwise equal
 * (D and scales) to the heuristic's tile of the same options: the tiles run
 * the same wgmma units, promotion and epilogue a row.
 *
 * B is the random problem's, read as already interleaved: output column o
 * takes gate column 256 (o / 128) + o % 128 and up column that + 128 of the
 * product h = A B^T.
 *
 * Pass rule, against the fp64 reference (h from the dequantized inputs in
 * fp64, then clamp, silu(g) * u * w in fp64, quantized by the fp8out
 * formula): as tests/test_fp8out.c (each scale within SF_TOL of the
 * reference's; the dequantized output as close to the reference as the
 * reference's own quantization, x1.02 + 1e-6; at most 2% of the bytes one
 * step off, none by two or more where |ref * mult| >= 16; D and the scales
 * poisoned first, every row to be written is, nothing else changes), with
 * SF_TOL 9e-3 instead of 4.5e-3: y multiplies two sums, each carrying the
 * FP8 tensor cores' accumulation error (~1e-3 relative on the H200,
 * test_fp8out.c), so their relative errors add.
 *
 * Second reference, the library's own FP32 sums: the weight-gradient kernel
 * (1D1D, FP32 D) computes the same A B^T with B's block scales given per
 * column (sfb_cols[kb][n] = sfb[n / 128][kb]): the same wgmma K blocks in the
 * same order and the same promotion (sum += (sa * sb) * acc), so its D is
 * expected to be the fused kernel's accumulators. y is taken from it in
 * float32 by the kernel's formula (host expf) and quantized: the fused bytes
 * should match it on all but a few elements (a 1-ulp difference of expf or
 * of the sums moves a byte across a rounding boundary). Printed as "fp32
 * mismatch"; asserted at most 0.5% and at most one step.
 */
#include "qg_test.h"
#include "gpu_ctx.h"
#include "qgtk.h"
#include "qgtk_cases.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SF_TOL 9e-3

/* y of one output element in fp64 (the reference) and in float32 (the
 * kernel's formula, from float sums). */
static double swiglu_f64(double g, double u, double limit, double w) {
    if (limit > 0) {
        g = g > limit ? limit : g;
        u = u > limit ? limit : u < -limit ? -limit : u;
    }
    return g / (1.0 + exp(-g)) * u * w;
}
static float swiglu_f32(float g, float u, float limit, const float *w) {
    if (limit > 0) {
        g = g > limit ? limit : g;
        u = u > limit ? limit : u < -limit ? -limit : u;
    }
    const float silu = g / (1.0f + expf(-g));
    float y = silu * u;
    if (w) y = y * *w;
    return y;
}

/* The library's FP32 sums of p (the weight-gradient kernel, per group), as
 * [rows][n] floats; NaN rows where p->ref says "not written". NULL when a
 * call failed (printed). */
static float *fp32_sums(qg_context *ctx, CUstream stream, const qgtk_problem_data *p) {
    const qg_driver *drv;
    CUcontext cu;
    if (!qg__context_cuda(ctx, &drv, &cu, NULL)) return NULL;
    const bool masked = p->kind == QG_GEMM_GROUPED_MASKED;
    const int64_t n = p->n, kb = p->kblocks, rows = p->rows;
    const int64_t sfb_ld = (n + 3) / 4 * 4, m_call = masked ? p->m : p->rows;
    float *h = malloc((size_t)(rows * n) * 4), *cols = malloc((size_t)(kb * sfb_ld) * 4);
    float *part = malloc((size_t)(m_call * n) * 4);
    CUdeviceptr dcols = 0, dd = 0;
    bool ok = h && cols && part && !drv->cuMemAlloc(&dcols, (size_t)(kb * sfb_ld) * 4) &&
              !drv->cuMemAlloc(&dd, (size_t)(m_call * n) * 4);
    for (int g = 0; ok && g < p->num_groups; ++g) {
        for (int64_t k = 0; k < kb; ++k)
            for (int64_t c = 0; c < n; ++c)
                cols[k * sfb_ld + c] = p->sfb[((int64_t)g * p->nblocks + c / 128) * kb + k];
        ok = !drv->cuMemcpyHtoD(dcols, cols, (size_t)(kb * sfb_ld) * 4);
        qg_gemm_args a = {0};
        a.m = (int)m_call, a.n = (int)n, a.k = p->k, a.num_groups = 1;
        a.a = (const void *)(uintptr_t)(p->dev_a + (masked ? (uint64_t)g * p->m * p->lda : 0));
        a.lda = p->lda;
        a.sfa = (const float *)(uintptr_t)(p->dev_sfa + (masked ? (uint64_t)g * kb * p->sfa_ld * 4 : 0));
        a.sfa_ld = p->sfa_ld;
        a.b = (const void *)(uintptr_t)(p->dev_b + (uint64_t)g * n * p->ldb);
        a.ldb = p->ldb;
        a.sfb = (const float *)(uintptr_t)dcols, a.sfb_ld = sfb_ld;
        a.d = (void *)(uintptr_t)dd, a.ldd = n;
        qg_status st = ok ? qg_fp8_gemm_nt_wgrad(ctx, &a, NULL, stream) : QG_ERROR_INTERNAL;
        if (st != QG_SUCCESS) {
            printf("    (fp32 sums: wgrad group %d: %s)\n", g, qg_last_error());
            ok = false;
            break;
        }
        ok = !drv->cuStreamSynchronize(stream) && !drv->cuMemcpyDtoH(part, dd, (size_t)(m_call * n) * 4);
        /* masked: group g's rows; contiguous: the rows of expert g; dense: all */
        for (int64_t r = 0; ok && r < m_call; ++r) {
            const int64_t dst = masked ? g * p->m + r : r;
            if (p->kind == QG_GEMM_GROUPED_CONTIGUOUS && p->m_indices[r & ~(int64_t)127] != g) continue;
            memcpy(h + dst * n, part + r * n, (size_t)n * 4);
        }
    }
    if (dcols) drv->cuMemFree(dcols);
    if (dd) drv->cuMemFree(dd);
    free(cols);
    free(part);
    if (!ok) {
        free(h);
        return NULL;
    }
    return h;
}

/* One call's downloaded D and scales (poison included), to compare bitwise. */
typedef struct {
    uint8_t *d;
    float *s;
    size_t d_bytes, s_count;
} swiglu_snap;
static void snap_free(swiglu_snap *s) {
    free(s->d);
    free(s->s);
    memset(s, 0, sizeof *s);
}

/* One call: fresh D and sfd poisoned (the testkit's qgtk_fp8_out_buffers), the
 * fused GEMM, the checks; `save`: keep D and the scales; `same`: they must equal
 * these bitwise. */
static bool run_case(qg_context *ctx, CUstream stream, qgtk_problem_data *p, const float *h32,
                     int ue, float limit, const float *w_host, CUdeviceptr w_dev,
                     const qg_config *cfg, const char *label, swiglu_snap *save,
                     const swiglu_snap *same) {
    const bool masked = p->kind == QG_GEMM_GROUPED_MASKED;
    const int64_t rows = p->rows, n = p->n, no = n / 2;
    qgtk_fp8_out_buffers o;
    /* D: n / 2 columns and 16 bytes past them that must stay poisoned */
    if (qgtk_fp8_out_create(&o, p, no, no + 16) != QG_SUCCESS) {
        printf("    FAIL %s: %s\n", label, qg_last_error());
        return false;
    }
    const int64_t nb = o.nb;
    bool ok = false;
    qgtk_fp8_tally t = {0};
    int64_t f32_mismatch = 0; /* bytes off the FP32 sums' */
    int f32_max_steps = 0;
    qg_gemm_args args = qgtk_fp8_out_args(&o);
    qg_swiglu_out out = {(float *)(uintptr_t)o.sfd, o.sfd_ld, ue, limit,
                         w_host ? (const float *)(uintptr_t)w_dev : NULL};
    qg_status st = p->kind == QG_GEMM_DENSE ? qg_fp8_gemm_nt_swiglu(ctx, &args, &out, cfg, stream)
                   : masked ? qg_m_grouped_fp8_gemm_nt_masked_swiglu(ctx, &args, &out, cfg, stream)
                            : qg_m_grouped_fp8_gemm_nt_contiguous_swiglu(ctx, &args, &out, cfg, stream);
    if (st != QG_SUCCESS) {
        printf("    FAIL %s: status %d: %s\n", label, (int)st, qg_last_error());
        goto done;
    }
    if (qgtk_fp8_out_download(&o, stream) != QG_SUCCESS) {
        printf("    FAIL %s: kernel or copy failed: %s\n", label, qg_last_error());
        goto done;
    }
    double y[128];
    float y32[128];
    for (int64_t r = 0; r < rows; ++r) {
        if (!qgtk_fp8_out_row_written(&o, r)) continue; /* its poison: qgtk_fp8_out_untouched */
        const double *ref = p->ref + r * n;
        const uint8_t *d = o.hd + r * o.ldd;
        const double w = w_host ? w_host[r] : 1.0;
        for (int64_t kb = 0; kb < nb; ++kb) {
            const uint32_t got_sf = qgtk_fp8_out_sf_bits(&o, r, kb);
            float amax32 = 0;
            for (int c = 0; c < 128; ++c) {
                y[c] = swiglu_f64(ref[kb * 256 + c], ref[kb * 256 + 128 + c], limit, w);
                if (h32) {
                    const float *hr = h32 + r * n;
                    y32[c] = swiglu_f32(hr[kb * 256 + c], hr[kb * 256 + 128 + c], limit,
                                        w_host ? &w_host[r] : NULL);
                    amax32 = fmaxf(amax32, fabsf(y32[c]));
                }
            }
            const uint8_t *got = d + kb * 128;
            qgtk_fp8_group_check(&t, y, got, 128, got_sf, ue, SF_TOL);
            float sf32 = 0, mult32 = 0;
            if (h32) qgtk_fp8_scale(amax32, ue, &sf32, &mult32);
            for (int c = 0; h32 && c < 128; ++c) {
                const int s32 = qgtk_e4m3_steps(got[c], qgtk_torch_e4m3(y32[c] * mult32));
                f32_mismatch += s32 > 0;
                if (s32 > f32_max_steps) f32_max_steps = s32;
            }
        }
    }
    const int64_t untouched_bad = qgtk_fp8_out_untouched(&o); /* poison changed */
    double q_got, q_want;
    const bool ref_ok = qgtk_fp8_tally_ok(&t, &q_got, &q_want);
    const double f32_frac = t.elems ? (double)f32_mismatch / (double)t.elems : 0;
    /* bytes and scales against the heuristic's tile of the same options (-1: not compared) */
    int64_t differ = -1;
    if (same) {
        const bool comparable = same->d && same->d_bytes == o.d_bytes && same->s_count == o.sf_count;
        differ = comparable ? 0 : INT64_MAX;
        for (size_t e = 0; comparable && e < o.d_bytes; ++e) differ += same->d[e] != o.hd[e];
        for (size_t e = 0; comparable && e < o.sf_count; ++e) differ += memcmp(&same->s[e], &o.hs[e], 4) != 0;
    }
    ok = ref_ok && untouched_bad == 0 && (!h32 || (f32_frac <= 5e-3 && f32_max_steps <= 1)) &&
         differ <= 0;
    char text[320];
    qgtk_fp8_out_text(text, sizeof text, &t, q_got, q_want, untouched_bad);
    printf("    %s %s: %s; fp32 mismatch %s%.2e max steps %d%s", ok ? "ok  " : "FAIL", label, text,
           h32 ? "" : "(n/a) ", f32_frac, f32_max_steps,
           differ < 0 ? "\n" : differ == 0 ? "; bitwise the heuristic's tile's\n" : "");
    if (differ > 0) printf("; %lld bytes / scales DIFFER from the heuristic's tile's\n", (long long)differ);
    if (save) {
        save->d = malloc(o.d_bytes), save->s = malloc(o.sf_count * 4);
        save->d_bytes = o.d_bytes, save->s_count = o.sf_count;
        if (save->d && save->s) {
            memcpy(save->d, o.hd, o.d_bytes);
            memcpy(save->s, o.hs, o.sf_count * 4);
        } else {
            snap_free(save); /* (a later comparison then fails: no reference bytes) */
        }
    }
done:
    qgtk_fp8_out_destroy(&o);
    return ok;
}

TEST(gpu_swiglu) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    const qg_driver *drv;
    CUcontext cu;
    CHECK(qg__context_cuda(ctx, &drv, &cu, NULL), "driver");
    int failures = 0, cases = 0;
    static const struct {
        qg_gemm_kind kind;
        int m, n, k, groups;
    } shapes[] = {
        {QG_GEMM_DENSE, 257, 1024, 512, 1},
        {QG_GEMM_GROUPED_CONTIGUOUS, 1200, 768, 2048, 4},
        {QG_GEMM_GROUPED_MASKED, 300, 512, 1536, 4},
        {QG_GEMM_GROUPED_MASKED, 64, 4096, 7168, 3},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
        const bool masked = shapes[i].kind == QG_GEMM_GROUPED_MASKED;
        qgtk_problem_spec spec = {.kind = shapes[i].kind, .m = shapes[i].m, .n = shapes[i].n,
                                  .k = shapes[i].k, .num_groups = shapes[i].groups,
                                  .seed = 5100 + i, .scale_spread = 2,
                                  .expected_m = masked ? shapes[i].m : 300,
                                  .masked_extremes = true, .padding_blocks = true};
        qgtk_problem_data *p = NULL;
        CHECK(qgtk_problem_create(&p, ctx, &spec) == QG_SUCCESS, "problem: %s", qg_last_error());
        CHECK(qgtk_problem_reference(ctx, p, QGTK_REF_AUTO) == QG_SUCCESS, "reference: %s",
              qg_last_error());
        /* a clamp that bites: a quarter of the largest |h| */
        double hmax = 0;
        for (int64_t e = 0; e < p->rows * p->n; ++e)
            if (!isnan(p->ref[e])) hmax = fmax(hmax, fabs(p->ref[e]));
        const float limit = (float)(0.25 * hmax);
        /* routing weights in [0.05, 1.05) */
        float *w = malloc((size_t)p->rows * 4);
        CUdeviceptr dw = 0;
        CHECK(w && !drv->cuMemAlloc(&dw, (size_t)p->rows * 4), "weights");
        uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)i;
        for (int64_t r = 0; r < p->rows; ++r) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            w[r] = 0.05f + (float)(x >> 40) / (float)(1 << 24);
        }
        CHECK(!drv->cuMemcpyHtoD(dw, w, (size_t)p->rows * 4), "weights upload");
        float *h32 = fp32_sums(ctx, stream, p);
        static const struct { int ue, clamp, weight; } opts[] = {
            {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1},
        };
        /* each option set: the heuristic's tile (its bytes kept), then forced
         * 128x256 A, forced 64x256, the heuristic under the SwiGLU words */
        static const char *const runs[] = {"", " forced 128x256 A", " forced 64x256",
                                           " swm64+swmca+swmcac"};
        const char *saved = getenv("QGEMM_FP8OUT_VARIANT");
        char keep[64] = "";
        if (saved) snprintf(keep, sizeof keep, "%s", saved);
        for (size_t o = 0; o < sizeof opts / sizeof opts[0]; ++o) {
            swiglu_snap first = {0};
            for (int r = 0; r < 4; ++r) {
                qg_config c = {.block_m = r == 2 ? 64 : 128, .block_n = 256,
                               .multicast = r == 1 ? QG_MULTICAST_A : QG_MULTICAST_NONE};
                const qg_config *cfg = NULL;
                if (r == 1 || r == 2) {
                    qg_kernel_plan plan;
                    qg_problem prob = {p->kind, p->m, p->n, p->k, p->num_groups, p->expected_m, 0};
                    if (qg__complete_config_out(&ctx->props, ctx->num_sms, &prob, 1 | QG_D_SWIGLU, &c,
                                                &plan) != QG_SUCCESS)
                        continue; /* (an odd n-block count: no A pairs) */
                    cfg = &c;
                }
                if (r == 3) setenv("QGEMM_FP8OUT_VARIANT", "swm64+swmca+swmcac", 1);
                char label[192];
                snprintf(label, sizeof label, "kind %d G %d m %d N %d K %d%s%s%s%s", (int)p->kind,
                         p->num_groups, p->m, p->n, p->k, opts[o].ue ? " ue8m0" : "",
                         opts[o].clamp ? " clamp" : "", opts[o].weight ? " weights" : "", runs[r]);
                cases++;
                failures += !run_case(ctx, stream, p, h32, opts[o].ue, opts[o].clamp ? limit : 0.0f,
                                      opts[o].weight ? w : NULL, dw, cfg, label, r ? NULL : &first,
                                      r ? &first : NULL);
                if (saved) setenv("QGEMM_FP8OUT_VARIANT", keep, 1);
                else unsetenv("QGEMM_FP8OUT_VARIANT");
            }
            snap_free(&first);
        }
        free(h32);
        free(w);
        drv->cuMemFree(dw);
        qgtk_problem_free(p);
    }
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    printf("    %d cases, %d failures\n", cases, failures);
    CHECK(cases >= 60, "too few cases ran: %d", cases);
    CHECK(failures == 0, "%d of %d SwiGLU cases failed", failures, cases);
    PASS();
}

/* The interleave and its inverse on the device: every byte where the layout
 * says, and back. */
TEST(gpu_swiglu_interleave) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    const qg_driver *drv;
    CUcontext cu;
    CHECK(qg__context_cuda(ctx, &drv, &cu, NULL), "driver");
    const int G = 3, I = 384, K = 640, ld = 656, kb = (K + 127) / 128;
    const size_t wb = (size_t)G * 2 * I * ld, sb = (size_t)G * 2 * I / 128 * kb * 4;
    uint8_t *w = malloc(wb), *wi = malloc(wb), *wb2 = malloc(wb);
    float *s = malloc(sb), *si = malloc(sb), *sb2 = malloc(sb);
    CHECK(w && wi && wb2 && s && si && sb2, "host memory");
    for (size_t e = 0; e < wb; ++e) w[e] = (uint8_t)(e * 2654435761u >> 13);
    for (size_t e = 0; e < sb / 4; ++e) s[e] = (float)e + 0.5f;
    CUdeviceptr dw, dwi, dw2, ds, dsi, ds2;
    CHECK(!drv->cuMemAlloc(&dw, wb) && !drv->cuMemAlloc(&dwi, wb) && !drv->cuMemAlloc(&dw2, wb) &&
              !drv->cuMemAlloc(&ds, sb) && !drv->cuMemAlloc(&dsi, sb) && !drv->cuMemAlloc(&ds2, sb),
          "device memory");
    CHECK(!drv->cuMemcpyHtoD(dw, w, wb) && !drv->cuMemcpyHtoD(ds, s, sb), "upload");
    qg_interleave_args a = {G, I, K, ld, (const void *)(uintptr_t)dw, (void *)(uintptr_t)dwi,
                            (const float *)(uintptr_t)ds, (float *)(uintptr_t)dsi, 0};
    CHECK(qg_interleave_gate_up(ctx, &a, stream) == QG_SUCCESS, "%s", qg_last_error());
    a = (qg_interleave_args){G, I, K, ld, (const void *)(uintptr_t)dwi, (void *)(uintptr_t)dw2,
                             (const float *)(uintptr_t)dsi, (float *)(uintptr_t)ds2, 1};
    CHECK(qg_interleave_gate_up(ctx, &a, stream) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(!drv->cuStreamSynchronize(stream) && !drv->cuMemcpyDtoH(wi, dwi, wb) &&
              !drv->cuMemcpyDtoH(si, dsi, sb) && !drv->cuMemcpyDtoH(wb2, dw2, wb) &&
              !drv->cuMemcpyDtoH(sb2, ds2, sb), "download");
    int64_t bad = 0;
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < 2 * I; ++r) {
            /* fused row r: block r / 256, gate (r % 256 < 128) or up */
            const int blk = r / 256, in = r % 256, src = in < 128 ? blk * 128 + in : I + blk * 128 + in - 128;
            bad += memcmp(wi + ((size_t)g * 2 * I + r) * ld, w + ((size_t)g * 2 * I + src) * ld, (size_t)K) != 0;
            if (r % 128 == 0)
                bad += memcmp(si + ((size_t)g * 2 * I + r) / 128 * kb, s + ((size_t)g * 2 * I + src) / 128 * kb,
                              (size_t)kb * 4) != 0;
        }
    const bool back = !memcmp(wb2, w, wb) && !memcmp(sb2, s, sb);
    printf("    interleave: %lld rows misplaced; inverse %s\n", (long long)bad, back ? "restores" : "DIFFERS");
    drv->cuMemFree(dw), drv->cuMemFree(dwi), drv->cuMemFree(dw2);
    drv->cuMemFree(ds), drv->cuMemFree(dsi), drv->cuMemFree(ds2);
    free(w), free(wi), free(wb2), free(s), free(si), free(sb2);
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    CHECK(bad == 0 && back, "interleave wrong");
    PASS();
}

/* ---- on the CPU: argument checks ------------------------------------------- */

#include "fake_args.h"

TEST(swiglu_argument_validation) {
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(&ctx, NULL) == QG_SUCCESS, "%s", qg_last_error());
    /* fake_good_args with N 512 (2I, I = 256): D [100][256] bytes at 0x5000000 */
    const qg_swiglu_out good = {FAKE(0x8000000), 128, 0, 0.0f, NULL};
    static const struct {
        const char *what;
        qg_status want;
        const char *msg;
    } cases[] = {
        {"out NULL", QG_ERROR_INVALID_ARGUMENT, "out is NULL"},
        {"ue8m0 2", QG_ERROR_INVALID_ARGUMENT, "out->ue8m0 must be 0 or 1, got 2"},
        {"n 576", QG_ERROR_UNSUPPORTED, "args->n (B's rows: gate and up, 2 x the intermediate size) must be a multiple of 256"},
        {"limit -1", QG_ERROR_INVALID_ARGUMENT, "out->swiglu_limit must be >= 0 and finite (0: no clamp), got -1"},
        {"limit nan", QG_ERROR_INVALID_ARGUMENT, "out->swiglu_limit must be >= 0 and finite"},
        {"limit inf", QG_ERROR_INVALID_ARGUMENT, "got inf"},
        {"sfd NULL", QG_ERROR_INVALID_ARGUMENT, "out->sfd is NULL"},
        {"sfd+2", QG_ERROR_INVALID_ARGUMENT, "out->sfd (0x8000002) must be 4-byte aligned"},
        {"sfd_ld<m", QG_ERROR_INVALID_ARGUMENT, "out->sfd_ld must be >= m (100), got 96"},
        {"ldd<n/2", QG_ERROR_INVALID_ARGUMENT, "args->ldd must be >= n / 2 (256), got 240"},
        {"ldd 264", QG_ERROR_INVALID_ARGUMENT, "args->ldd * 1 bytes must be a multiple of 16 (TMA), got 264"},
        {"weight+2", QG_ERROR_INVALID_ARGUMENT, "out->row_weight (0x9000002) must be 4-byte aligned"},
        {"weight over d", QG_ERROR_INVALID_ARGUMENT, "overlaps args->row_weight"},
        {"sfd over d", QG_ERROR_INVALID_ARGUMENT, "overlaps args->d"},
        {"d over b", QG_ERROR_INVALID_ARGUMENT, "overlaps args->b"},
        {"block_n 128", QG_ERROR_UNSUPPORTED, "SwiGLU epilogue needs block_n 256"},
        /* make fuzz (fuzz_family): 0 and -256 passed the tile test (0 % 256 == 0) */
        {"block_n 0", QG_ERROR_UNSUPPORTED, "SwiGLU epilogue needs block_n 256 (a tile holds one 128-row gate block and its 128-row up block, and writes one whole 1x128 scale group of D), got 0"},
        {"block_n -256", QG_ERROR_UNSUPPORTED, "got -256"},
        {"split-K", QG_ERROR_UNSUPPORTED, "SwiGLU epilogue runs without split-K"},
        /* D is 256 bytes a row (n / 2): the scales right after its 25600 bytes do not overlap */
        {"sfd after d", QG_ERROR_NO_DEVICE, "offline"},
        {"weight", QG_ERROR_NO_DEVICE, "offline"},
        {"valid", QG_ERROR_NO_DEVICE, "the context is offline"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        qg_gemm_args a = fake_good_args();
        a.n = 512, a.ldd = 256;
        qg_swiglu_out o = good;
        const qg_swiglu_out *out = &o;
        qg_config cfg = {0};
        const qg_config *forced = NULL;
        const char *w = cases[i].what;
        if (!strcmp(w, "out NULL")) out = NULL;
        else if (!strcmp(w, "ue8m0 2")) o.ue8m0 = 2;
        else if (!strcmp(w, "n 576")) a.n = 576;
        else if (!strcmp(w, "limit -1")) o.swiglu_limit = -1.0f;
        else if (!strcmp(w, "limit nan")) o.swiglu_limit = NAN;
        else if (!strcmp(w, "limit inf")) o.swiglu_limit = INFINITY;
        else if (!strcmp(w, "sfd NULL")) o.sfd = NULL;
        else if (!strcmp(w, "sfd+2")) o.sfd = FAKE(0x8000002);
        else if (!strcmp(w, "sfd_ld<m")) o.sfd_ld = 96;
        else if (!strcmp(w, "ldd<n/2")) a.ldd = 240;
        else if (!strcmp(w, "ldd 264")) a.ldd = 264;
        else if (!strcmp(w, "weight+2")) o.row_weight = FAKE(0x9000002);
        else if (!strcmp(w, "weight over d")) o.row_weight = FAKE(0x5000000 + 256 * 99);
        else if (!strcmp(w, "sfd over d")) o.sfd = FAKE(0x5000000 + 1024);
        else if (!strcmp(w, "d over b")) a.d = FAKE(0x3000000 + 1024);
        else if (!strcmp(w, "block_n 128")) cfg.block_m = 128, cfg.block_n = 128, forced = &cfg;
        else if (!strcmp(w, "block_n 0")) cfg.block_m = 128, cfg.block_n = 0, forced = &cfg;
        else if (!strcmp(w, "block_n -256")) cfg.block_m = 128, cfg.block_n = -256, forced = &cfg;
        else if (!strcmp(w, "split-K")) cfg.block_m = 128, cfg.block_n = 256, cfg.split_k = 2, forced = &cfg;
        else if (!strcmp(w, "sfd after d")) o.sfd = FAKE(0x5000000 + 25600);
        else if (!strcmp(w, "weight")) o.row_weight = FAKE(0x9000000);
        qg_status st = qg_fp8_gemm_nt_swiglu(ctx, &a, out, forced, NULL);
        CHECK(st == cases[i].want && strstr(qg_last_error(), cases[i].msg) &&
                  strstr(qg_last_error(), "qg_fp8_gemm_nt_swiglu"),
              "%s: got %s (%s), want %s with \"%s\"", w, qg_status_string(st), qg_last_error(),
              qg_status_string(cases[i].want), cases[i].msg);
    }
    /* the grouped calls name themselves; masked scales and weights are G x M rows */
    qg_gemm_args a = fake_good_args();
    a.n = 512, a.ldd = 256, a.num_groups = 4;
    CHECK(qg_m_grouped_fp8_gemm_nt_masked_swiglu(ctx, &a, NULL, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "qg_m_grouped_fp8_gemm_nt_masked_swiglu: out is NULL"),
          "%s", qg_last_error());
    qg_swiglu_out o = good;
    o.row_weight = FAKE(0x5000000 - 4 * 400 + 4); /* [4 x 100] floats ending 4 bytes into D */
    CHECK(qg_m_grouped_fp8_gemm_nt_masked_swiglu(ctx, &a, &o, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "overlaps args->row_weight"),
          "masked weights under D: %s", qg_last_error());
    o.row_weight = FAKE(0x5000000 - 4 * 400);
    CHECK(qg_m_grouped_fp8_gemm_nt_masked_swiglu(ctx, &a, &o, NULL, NULL) == QG_ERROR_NO_DEVICE,
          "masked weights just below D: %s", qg_last_error());
    CHECK(qg_m_grouped_fp8_gemm_nt_contiguous_swiglu(ctx, &a, &good, NULL, NULL) == QG_ERROR_NO_DEVICE &&
              strstr(qg_last_error(), "qg_m_grouped_fp8_gemm_nt_contiguous_swiglu"),
          "%s", qg_last_error());
    /* the configuration call: groups of 64 rows take the 64x256 tile (swm64, in
     * QGEMM_FP8OUT_VARIANT's default since 2026-11-29 y), 128x256 without it */
    qg_problem p = {QG_GEMM_GROUPED_MASKED, 64, 4096, 7168, 8, 64, 0};
    qg_config c;
    CHECK(qg_select_config_swiglu(ctx, &p, 0, &c) == QG_SUCCESS && c.block_m == 64 && c.block_n == 256,
          "%s (block %dx%d)", qg_last_error(), c.block_m, c.block_n);
    setenv("QGEMM_FP8OUT_VARIANT", "new+epi+last+nk", 1);
    CHECK(qg_select_config_swiglu(ctx, &p, 0, &c) == QG_SUCCESS && c.block_m == 128 && c.block_n == 256,
          "%s (block %dx%d without swm64)", qg_last_error(), c.block_m, c.block_n);
    unsetenv("QGEMM_FP8OUT_VARIANT");
    CHECK(qg_select_config_swiglu(ctx, &p, 3, &c) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "ue8m0 must be 0 or 1, got 3"), "%s", qg_last_error());
    qg_context_destroy(ctx);
    PASS();
}

/* The SwiGLU plan: D's shared tile is 128 x 128 bytes (half the e4m3 one), so
 * never fewer stages than the FP8-output plan of the tile. */
TEST(swiglu_plans) {
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(&ctx, NULL) == QG_SUCCESS, "%s", qg_last_error());
    qg_problem p = {QG_GEMM_GROUPED_CONTIGUOUS, 4096, 4096, 7168, 8, 0, 0};
    qg_config cs = {.block_m = 128, .block_n = 256, .num_stages = 3}, c8 = cs;
    qg_kernel_plan ps, p8;
    CHECK(qg__plan_out(&ctx->props, &p, 1 | QG_D_SWIGLU, &cs, &ps) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qg__plan_out(&ctx->props, &p, 1, &c8, &p8) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(p8.smem_bytes - ps.smem_bytes == 128 * 128, "smem %zu against %zu", ps.smem_bytes, p8.smem_bytes);
    CHECK(ps.store_cols == 128 && ps.d_fp8 == (1 | QG_D_SWIGLU), "store_cols %d d_fp8 %d", ps.store_cols, ps.d_fp8);
    cs.num_stages = c8.num_stages = 0;
    CHECK(qg__plan_out(&ctx->props, &p, 2 | QG_D_SWIGLU, &cs, &ps) == QG_SUCCESS &&
              qg__plan_out(&ctx->props, &p, 2, &c8, &p8) == QG_SUCCESS &&
              ps.num_stages >= p8.num_stages,
          "stages %d against %d", ps.num_stages, p8.num_stages);
    qg_context_destroy(ctx);
    PASS();
}

TEST(swiglu_interleave_argument_validation) {
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(&ctx, NULL) == QG_SUCCESS, "%s", qg_last_error());
    /* w [2][512][400] at 0x1000000 (409600 bytes), sf [2][4][4] at 0x2000000 */
    const qg_interleave_args good = {2, 256, 400, 400, FAKE(0x1000000), FAKE(0x3000000),
                                     FAKE(0x2000000), FAKE(0x4000000), 0};
    static const struct { const char *what; qg_status want; const char *msg; } cases[] = {
        {"args NULL", QG_ERROR_INVALID_ARGUMENT, "args is NULL"},
        {"groups 0", QG_ERROR_INVALID_ARGUMENT, "args->num_groups must be in [1, 4096], got 0"},
        {"i 200", QG_ERROR_INVALID_ARGUMENT, "args->i (the intermediate size: B holds 2i rows a group) must be a positive multiple of 128, got 200"},
        {"k 8", QG_ERROR_INVALID_ARGUMENT, "args->k must be a positive multiple of 16, got 8"},
        {"inverse 2", QG_ERROR_INVALID_ARGUMENT, "args->inverse must be 0 or 1, got 2"},
        {"w_out NULL", QG_ERROR_INVALID_ARGUMENT, "args->w_out is NULL but args->w is not"},
        {"sf NULL", QG_ERROR_INVALID_ARGUMENT, "args->sf is NULL but args->sf_out is not"},
        {"ld 390", QG_ERROR_INVALID_ARGUMENT, "ld_w must be >= k (400), got 390"},
        {"ld 408", QG_ERROR_INVALID_ARGUMENT, "ld_w * 1 bytes must be a multiple of 16"},
        {"w+8", QG_ERROR_INVALID_ARGUMENT, "w (0x1000008) must be 16-byte aligned"},
        {"w_out over w", QG_ERROR_INVALID_ARGUMENT, "args->w_out (bytes"},
        {"sf_out over w", QG_ERROR_INVALID_ARGUMENT, "overlaps args->w"},
        {"no scales", QG_ERROR_NO_DEVICE, "offline"},
        {"valid", QG_ERROR_NO_DEVICE, "qg_interleave_gate_up: the context is offline"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        qg_interleave_args a = good;
        const qg_interleave_args *ap = &a;
        const char *w = cases[i].what;
        if (!strcmp(w, "args NULL")) ap = NULL;
        else if (!strcmp(w, "groups 0")) a.num_groups = 0;
        else if (!strcmp(w, "i 200")) a.i = 200;
        else if (!strcmp(w, "k 8")) a.k = 8;
        else if (!strcmp(w, "inverse 2")) a.inverse = 2;
        else if (!strcmp(w, "w_out NULL")) a.w_out = NULL;
        else if (!strcmp(w, "sf NULL")) a.sf = NULL;
        else if (!strcmp(w, "ld 390")) a.ld_w = 390;
        else if (!strcmp(w, "ld 408")) a.ld_w = 408;
        else if (!strcmp(w, "w+8")) a.w = FAKE(0x1000008);
        else if (!strcmp(w, "w_out over w")) a.w_out = FAKE(0x1000000 + 4096);
        else if (!strcmp(w, "sf_out over w")) a.sf_out = FAKE(0x1000000 + 64);
        else if (!strcmp(w, "no scales")) a.sf = NULL, a.sf_out = NULL;
        qg_status st = qg_interleave_gate_up(ctx, ap, NULL);
        CHECK(st == cases[i].want && strstr(qg_last_error(), cases[i].msg) &&
                  strstr(qg_last_error(), "qg_interleave_gate_up"),
              "%s: got %s (%s), want %s with \"%s\"", w, qg_status_string(st), qg_last_error(),
              qg_status_string(cases[i].want), cases[i].msg);
    }
    qg_context_destroy(ctx);
    PASS();
}

/* QGEMM_FP8OUT_VARIANT's SwiGLU words (swm64, swmca, swmcac): parsed, each
 * moving only the SwiGLU heuristic's choice and only on its rows (offline
 * H200: masked 8 x 64 rows -> 64x256, 32 x 256 -> 128x256 A, contiguous 8 x
 * 512 -> 128x256 A; 16 x 128 keeps 128x256), the e4m3-D heuristic deaf to
 * them and the SwiGLU one deaf to the e4m3 words; swmca needs an even SM
 * count (pairs); the 64x256 plan (forced: legal whatever the words) is one
 * math warpgroup of two 128-column n-parts in one accumulator set, 5 stages. */
TEST(swiglu_variant_words) {
    qg_device_props props;
    memset(&props, 0, sizeof props);
    props.sm_count = 132, props.cc_major = 9, props.smem_optin_bytes = 232448;
    props.l2_bytes = 60u << 20, props.dram_gbps = 4915;
    snprintf(props.name, sizeof props.name, "offline H200");
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(&ctx, &props) == QG_SUCCESS, "%s", qg_last_error());
    const char *saved = getenv("QGEMM_FP8OUT_VARIANT");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    static const struct { qg_gemm_kind kind; int g, m, n; int bm[4], mc[4]; } rows[] = {
        /* picks: unset (the default: new+epi+last+nk+swm64), swm64, swmca, swmcac (a list
         * replaces the default: swmca and swmcac alone have no swm64) */
        {QG_GEMM_GROUPED_MASKED, 8, 64, 4096, {64, 64, 128, 128}, {0, 0, 0, 0}},
        {QG_GEMM_GROUPED_MASKED, 8, 64, 3072, {64, 64, 128, 128}, {0, 0, 0, 0}},
        {QG_GEMM_GROUPED_MASKED, 16, 128, 4096, {128, 128, 128, 128}, {0, 0, 0, 0}},
        {QG_GEMM_GROUPED_MASKED, 32, 256, 4096, {128, 128, 128, 128}, {0, 0, 1, 0}},
        {QG_GEMM_GROUPED_MASKED, 32, 256, 3072, {128, 128, 128, 128}, {0, 0, 1, 0}},
        {QG_GEMM_GROUPED_CONTIGUOUS, 8, 4096, 4096, {128, 128, 128, 128}, {0, 0, 0, 1}},
        {QG_GEMM_GROUPED_CONTIGUOUS, 8, 4096, 3072, {128, 128, 128, 128}, {0, 0, 0, 1}},
    };
    static const char *const words[] = {NULL, "swm64", "swmca", "swmcac"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i)
        for (int w = 0; w < 4; ++w) {
            if (words[w]) setenv("QGEMM_FP8OUT_VARIANT", words[w], 1);
            else unsetenv("QGEMM_FP8OUT_VARIANT");
            const bool masked = rows[i].kind == QG_GEMM_GROUPED_MASKED;
            qg_problem p = {rows[i].kind, rows[i].m, rows[i].n, 7168, rows[i].g, masked ? rows[i].m : 0, 0};
            qg_config c;
            CHECK(qg_select_config_swiglu(ctx, &p, 0, &c) == QG_SUCCESS, "%s", qg_last_error());
            CHECK(c.block_m == rows[i].bm[w] && c.block_n == 256 && (int)c.multicast == rows[i].mc[w],
                  "kind %d %dx%dx%d under %s: %dx%d mc %d, want %dx256 mc %d", (int)p.kind, p.num_groups,
                  p.m, p.n, words[w] ? words[w] : "(unset)", c.block_m, c.block_n, (int)c.multicast,
                  rows[i].bm[w], rows[i].mc[w]);
            /* the stages the plan gives it: 64x256 five, 128x256 four */
            CHECK(c.num_stages == (c.block_m == 64 ? 5 : 4), "stages %d for %dx256", c.num_stages, c.block_m);
        }
    /* swmca on an odd SM count: no pairs, the unshared tile */
    setenv("QGEMM_FP8OUT_VARIANT", "swmca", 1);
    CHECK(qg_context_set_num_sms(ctx, 131) == QG_SUCCESS, "%s", qg_last_error());
    qg_problem p = {QG_GEMM_GROUPED_MASKED, 256, 4096, 7168, 32, 256, 0};
    qg_config c;
    CHECK(qg_select_config_swiglu(ctx, &p, 0, &c) == QG_SUCCESS && c.multicast == QG_MULTICAST_NONE,
          "131 SMs: mc %d (%s)", (int)c.multicast, qg_last_error());
    CHECK(qg_context_set_num_sms(ctx, 132) == QG_SUCCESS, "%s", qg_last_error());
    /* the e4m3-D heuristic ignores the SwiGLU words; the SwiGLU one the e4m3 words */
    static const int e4m3_rows[][3] = {{64, 4096, 7168}, {128, 2112, 7168}, {4096, 7168, 2048}, {64, 576, 7168}};
    for (size_t i = 0; i < sizeof e4m3_rows / sizeof e4m3_rows[0]; ++i) {
        qg_problem q = {QG_GEMM_DENSE, e4m3_rows[i][0], e4m3_rows[i][1], e4m3_rows[i][2], 1, 0, 0};
        qg_config a, b;
        setenv("QGEMM_FP8OUT_VARIANT", "new+epi+last+nk", 1);
        CHECK(qg_select_config_fp8out(ctx, &q, 0, &a) == QG_SUCCESS, "%s", qg_last_error());
        setenv("QGEMM_FP8OUT_VARIANT", "new+epi+last+nk+swm64+swmca+swmcac", 1);
        CHECK(qg_select_config_fp8out(ctx, &q, 0, &b) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(!memcmp(&a, &b, sizeof a), "e4m3 %dx%dx%d moved by the SwiGLU words: %dx%d -> %dx%d",
              q.m, q.n, q.k, a.block_m, a.block_n, b.block_m, b.block_n);
    }
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
        const bool masked = rows[i].kind == QG_GEMM_GROUPED_MASKED;
        qg_problem q = {rows[i].kind, rows[i].m, rows[i].n, 7168, rows[i].g, masked ? rows[i].m : 0, 0};
        qg_config a, b;
        unsetenv("QGEMM_FP8OUT_VARIANT");
        CHECK(qg_select_config_swiglu(ctx, &q, 1, &a) == QG_SUCCESS, "%s", qg_last_error());
        setenv("QGEMM_FP8OUT_VARIANT", "old+swm64", 1); /* the default's SwiGLU word, no e4m3 one */
        CHECK(qg_select_config_swiglu(ctx, &q, 1, &b) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(!memcmp(&a, &b, sizeof a), "SwiGLU row %zu moved by the e4m3 words", i);
    }
    /* a word that is not one: refused by the SwiGLU calls, naming the value and the words */
    setenv("QGEMM_FP8OUT_VARIANT", "swm65", 1);
    CHECK(qg_select_config_swiglu(ctx, &p, 0, &c) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "QGEMM_FP8OUT_VARIANT='swm65'") &&
              strstr(qg_last_error(), "swm64, swmca, swmcac"),
          "%s", qg_last_error());
    qg_gemm_args ga = fake_good_args();
    ga.n = 512, ga.ldd = 256;
    const qg_swiglu_out o = {FAKE(0x8000000), 128, 0, 0.0f, NULL};
    CHECK(qg_fp8_gemm_nt_swiglu(ctx, &ga, &o, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "qg_fp8_gemm_nt_swiglu: QGEMM_FP8OUT_VARIANT='swm65'"),
          "%s", qg_last_error());
    CHECK(qg_compile_swiglu(ctx, &p, 0, NULL, NULL) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "qg_compile_swiglu: QGEMM_FP8OUT_VARIANT='swm65'"),
          "%s", qg_last_error());
    /* the 64x256 plan, forced, with no word set: legal in the three kinds */
    unsetenv("QGEMM_FP8OUT_VARIANT");
    for (int kind = 0; kind <= 2; ++kind) {
        qg_problem q = {(qg_gemm_kind)kind, 1000, 4096, 7168, kind ? 8 : 1, kind == 2 ? 64 : 0, 0};
        qg_config f = {.block_m = 64, .block_n = 256};
        qg_kernel_plan plan;
        CHECK(qg__complete_config_out(&ctx->props, ctx->num_sms, &q, 1 | QG_D_SWIGLU, &f, &plan) == QG_SUCCESS,
              "kind %d 64x256: %s", kind, qg_last_error());
        CHECK(plan.num_math_wgs == 1 && plan.wgmma_n == 128 && plan.acc_sets == 1 && !plan.kpipe &&
                  plan.num_stages == 5 && plan.math_regs == 256 && plan.store_cols == 128,
              "kind %d 64x256 plan: wgs %d wgmma_n %d sets %d kpipe %d stages %d regs %d store %d", kind,
              plan.num_math_wgs, plan.wgmma_n, plan.acc_sets, (int)plan.kpipe, plan.num_stages,
              plan.math_regs, plan.store_cols);
        /* (not a tile of e4m3 D without SwiGLU, nor of bf16 D) */
        f.num_stages = 0;
        CHECK(qg__complete_config_out(&ctx->props, ctx->num_sms, &q, 1, &f, &plan) == QG_ERROR_UNSUPPORTED,
              "kind %d 64x256 e4m3 D accepted", kind);
        f.num_stages = 0;
        CHECK(qg__complete_config_out(&ctx->props, ctx->num_sms, &q, 0, &f, &plan) == QG_ERROR_UNSUPPORTED,
              "kind %d 64x256 bf16 D accepted", kind);
        /* 256x256 stays refused under SwiGLU */
        qg_config t = {.block_m = 256, .block_n = 256};
        CHECK(qg__complete_config_out(&ctx->props, ctx->num_sms, &q, 1 | QG_D_SWIGLU, &t, &plan) == QG_ERROR_UNSUPPORTED,
              "kind %d 256x256 SwiGLU accepted", kind);
    }
    if (saved) setenv("QGEMM_FP8OUT_VARIANT", keep, 1);
    qg_context_destroy(ctx);
    PASS();
}
