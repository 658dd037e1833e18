/*
 * test_fp8out.c -- the GEMMs with e4m3 D and 1x128 scales (qg_fp8_out): their
 * argument checks and plans on the CPU, and on
 * the GPU (skipped without one): dense, contiguous, masked and psum, FP32
 * and UE8M0 scales, the heuristic's tile and forced ones (multicast A / B,
 * 256x128, 128x256, split-K, and the tiles of 64 and 32 columns whose scale
 * group a cluster of 2 or 4 CTAs splits: 64x32, 64x64, 128x32, 128x64,
 * 256x64, a forced swizzle group), M and N off the tiles (N = 1160: a last
 * scale group of 8 columns and rows of D ending mid 16-byte unit; N = 2112,
 * 576: a last group of 64 columns, so that the split tiles past N only take
 * part in the exchange), rows whose sums are all zero (amax 0: the cast's
 * 1e-4 floor).
 *
 * Pass rule. The reference is the fp64 product of the dequantized inputs,
 * quantized by the per-token cast's formula (amax of the row's 128-column
 * group as float, sf = amax * float(1/448) or its UE8M0 ceiling, q =
 * e4m3(float(ref) * mult)). The kernel quantizes its FP32 accumulators, which
 * differ from fp64 by the FP8 tensor cores' accumulation error: measured on
 * the H200 (2026-11-28) up to ~1e-3 relative on a group's amax, so ~0.5% of
 * the bytes land one step from the fp64 quantization and values near zero
 * may change sign. Issue 51's first target (bytes equal on 99.9%, scales
 * within 1e-6 relative of the fp64 reference) is therefore not what this
 * test can hold a real FP8 GEMM to; it asserts instead:
 *  - each scale within 4.5e-3 relative of the reference's: the accuracy the
 *    library promises for every FP8 GEMM output (calc_diff < 1e-5, i.e. an
 *    rms relative error of sqrt(2e-5) = 4.5e-3); UE8M0: equal, or a factor 2
 *    where amax / 448 is within that tolerance of a power of two (the bytes
 *    are then compared under the kernel's scale);
 *  - the dequantized output as close to the reference as the reference's own
 *    quantization is: calc_diff(q * sf, ref) <= 1.02 calc_diff(q_ref * sf_ref,
 *    ref) + 1e-6;
 *  - at most 2% of the bytes differ from the reference's quantization, and none
 *    by more than one e4m3 step where |ref * mult| >= 16 (steps of 2 or more,
 *    far above the accumulation error); the fraction and the largest step
 *    count (signed: across zero, both sides count) are printed;
 *  - D and the scales poisoned first: every row to be written is, all of it,
 *    and nothing else (the bytes of a row past N, the rows the bf16 call
 *    leaves untouched, scale rows [m, sfd_ld)) changes.
 */
#include "qg_test.h"
#include "gpu_ctx.h"
#include "qgtk.h"
#include "qgtk_cases.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint32_t fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

#define SF_TOL 4.5e-3 /* sqrt(2e-5): the library's FP8 accuracy gate as a relative error */

/* A call's output kept for a bitwise comparison (run_case's keep). */
typedef struct {
    uint8_t *d;
    float *s;
    size_t d_bytes, sf_count;
} kept_out;

static void kept_free(kept_out *k) {
    free(k->d);
    free(k->s);
    memset(k, 0, sizeof *k);
}

/* One call: fresh D and sfd poisoned (the testkit's qgtk_fp8_out_buffers),
 * the GEMM, the check against p->ref; keep (or NULL): a copy of the bytes
 * and scales the call left (poison included). */
static bool run_case_keep(qg_context *ctx, CUstream stream, qgtk_problem_data *p, int ue,
                          const qg_config *cfg, const char *label, kept_out *keep) {
    const int64_t n = p->n;
    qgtk_fp8_out_buffers o;
    /* 16 bytes past N, rounded to TMA's 16, that must stay poisoned */
    if (qgtk_fp8_out_create(&o, p, n, (n + 15) / 16 * 16 + 16) != QG_SUCCESS) {
        printf("    FAIL %s: %s\n", label, qg_last_error());
        return false;
    }
    bool ok = false;
    qg_gemm_args args = qgtk_fp8_out_args(&o);
    qg_fp8_out out = {(float *)(uintptr_t)o.sfd, o.sfd_ld, ue};
    qg_status st;
    switch (p->kind) {
    case QG_GEMM_DENSE: st = qg_fp8_gemm_nt_fp8out(ctx, &args, &out, cfg, stream); break;
    case QG_GEMM_GROUPED_CONTIGUOUS:
        st = qg_m_grouped_fp8_gemm_nt_contiguous_fp8out(ctx, &args, &out, cfg, stream);
        break;
    case QG_GEMM_GROUPED_MASKED:
        st = qg_m_grouped_fp8_gemm_nt_masked_fp8out(ctx, &args, &out, cfg, stream);
        break;
    default: st = qg_m_grouped_fp8_gemm_nt_psum_fp8out(ctx, &args, &out, cfg, stream); break;
    }
    if (st != QG_SUCCESS) {
        printf("    FAIL %s: status %d: %s\n", label, (int)st, qg_last_error());
        goto done;
    }
    if (qgtk_fp8_out_download(&o, stream) != QG_SUCCESS) {
        printf("    FAIL %s: kernel or copy failed: %s\n", label, qg_last_error());
        goto done;
    }
    if (!p->ref && qgtk_problem_reference(ctx, p, QGTK_REF_AUTO) != QG_SUCCESS) {
        printf("    FAIL %s: reference: %s\n", label, qg_last_error());
        goto done;
    }
    qgtk_fp8_tally t = {0};
    for (int64_t r = 0; r < p->rows; ++r) {
        if (!qgtk_fp8_out_row_written(&o, r)) continue; /* its poison: qgtk_fp8_out_untouched */
        const double *ref = p->ref + r * n;
        const uint8_t *d = o.hd + r * o.ldd;
        for (int64_t kb = 0; kb < o.nb; ++kb) {
            const int64_t c0 = kb * 128, c1 = c0 + 128 < n ? c0 + 128 : n;
            qgtk_fp8_group_check(&t, ref + c0, d + c0, c1 - c0, qgtk_fp8_out_sf_bits(&o, r, kb), ue,
                                 SF_TOL);
        }
    }
    /* bytes and scales that had to stay poisoned */
    const int64_t untouched_bad = qgtk_fp8_out_untouched(&o);
    /* q_got, q_want: relative squared errors of the dequantized output and of the
     * reference's own quantization */
    double q_got, q_want;
    ok = qgtk_fp8_tally_ok(&t, &q_got, &q_want) && untouched_bad == 0;
    char text[320];
    qgtk_fp8_out_text(text, sizeof text, &t, q_got, q_want, untouched_bad);
    printf("    %s %s: %s\n", ok ? "ok  " : "FAIL", label, text);
    if (keep) {
        keep->d = malloc(o.d_bytes);
        keep->s = malloc(o.sf_count * sizeof(float));
        keep->d_bytes = o.d_bytes, keep->sf_count = o.sf_count;
        if (keep->d && keep->s) {
            memcpy(keep->d, o.hd, o.d_bytes);
            memcpy(keep->s, o.hs, o.sf_count * sizeof(float));
        } else {
            printf("    FAIL %s: out of host memory for the copy\n", label);
            ok = false;
        }
    }
done:
    qgtk_fp8_out_destroy(&o);
    return ok;
}

static bool run_case(qg_context *ctx, CUstream stream, qgtk_problem_data *p, int ue,
                     const qg_config *cfg, const char *label) {
    return run_case_keep(ctx, stream, p, ue, cfg, label, NULL);
}

/* A problem with the rows listed in zero_rows given all-zero A scales (their
 * sums are 0: the amax floor). */
static qgtk_problem_data *make(qg_context *ctx, const qgtk_problem_spec *spec, bool zero_rows) {
    qgtk_problem_data *p = NULL;
    if (qgtk_problem_create_host(&p, spec) != QG_SUCCESS) return NULL;
    if (zero_rows && p->kind == QG_GEMM_DENSE)
        for (int64_t r = 0; r < p->rows; r += 37)
            for (int kb = 0; kb < p->kblocks; ++kb) p->sfa[kb * p->sfa_ld + r] = 0.0f;
    if (qgtk_problem_upload(ctx, p) != QG_SUCCESS) {
        qgtk_problem_free(p);
        return NULL;
    }
    return p;
}

TEST(gpu_fp8out) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    int failures = 0, cases = 0;
    static const qg_config forced[] = {
        {.block_m = 0},
        {.block_m = 64, .block_n = 128, .split_k = 2},
        {.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_A},
        {.block_m = 128, .block_n = 128, .multicast = QG_MULTICAST_B},
        {.block_m = 128, .block_n = 256, .multicast = QG_MULTICAST_A},
        {.block_m = 256, .block_n = 128, .multicast = QG_MULTICAST_A},
        /* a scale group split over a cluster of 4 or 2 CTAs */
        {.block_m = 64, .block_n = 32},
        {.block_m = 64, .block_n = 64},
        {.block_m = 128, .block_n = 32},
        {.block_m = 128, .block_n = 64},
        {.block_m = 256, .block_n = 64},
        {.block_m = 64, .block_n = 64, .swizzle_group = 6},
    };
    /* dense: M, N off the tiles; N 1160 ends in a group of 8 columns */
    static const int dense[][3] = {{1, 2112, 7168}, {100, 1160, 1536}, {257, 576, 512},
                                   {1000, 4096, 2048}, {4096, 7168, 1536}, {64, 24576, 1536}};
    for (size_t i = 0; i < sizeof dense / sizeof dense[0]; ++i) {
        qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = dense[i][0], .n = dense[i][1],
                                  .k = dense[i][2], .num_groups = 1, .seed = 51 + i,
                                  .lda_pad = i % 2 ? 16 : 0, .scale_spread = 3};
        qgtk_problem_data *p = make(ctx, &spec, true);
        CHECK(p, "problem: %s", qg_last_error());
        for (size_t f = 0; f < sizeof forced / sizeof forced[0]; ++f)
            for (int ue = 0; ue < 2; ++ue) {
                /* UE8M0 with the heuristic's tile and the 4-CTA split */
                if (f && ue && forced[f].block_n != 32) continue;
                const qg_config *cfg = forced[f].block_m ? &forced[f] : NULL;
                qg_problem prob = {QG_GEMM_DENSE, p->m, p->n, p->k, 1, 0, 0};
                qg_config c = forced[f];
                qg_kernel_plan plan;
                if (cfg && qg__complete_config_out(&ctx->props, ctx->num_sms, &prob, 1 + ue, &c,
                                                   &plan) != QG_SUCCESS)
                    continue; /* not for this shape */
                char label[128];
                snprintf(label, sizeof label, "dense %dx%dx%d %s%dx%d mc %d split %d swz %d%s", p->m,
                         p->n, p->k, cfg ? "forced " : "", cfg ? c.block_m : 0, cfg ? c.block_n : 0,
                         (int)c.multicast, c.split_k, cfg ? c.swizzle_group : 0, ue ? " ue8m0" : "");
                cases++;
                failures += !run_case(ctx, stream, p, ue, cfg, label);
            }
        qgtk_problem_free(p);
    }
    /* grouped: contiguous (with -1 padding blocks), masked (empty and full
     * groups), psum; N 1160 and 4096 */
    static const int grouped_n[][2] = {{1160, 1536}, {4096, 2048}};
    const qg_gemm_kind kinds[] = {QG_GEMM_GROUPED_CONTIGUOUS, QG_GEMM_GROUPED_MASKED,
                                  QG_GEMM_GROUPED_PSUM};
    for (int ki = 0; ki < 3; ++ki)
        for (int j = 0; j < 2; ++j) {
            qgtk_problem_spec spec = {.kind = kinds[ki], .m = kinds[ki] == QG_GEMM_GROUPED_MASKED ? 300 : 1200,
                                      .n = grouped_n[j][0], .k = grouped_n[j][1], .num_groups = 4,
                                      .seed = 151 + ki * 2 + j, .scale_spread = 3,
                                      .expected_m = 300, .masked_extremes = true,
                                      .padding_blocks = true};
            qgtk_problem_data *p = make(ctx, &spec, false);
            CHECK(p, "problem: %s", qg_last_error());
            static const qg_config gforced[] = {{.block_m = 0},
                                                {.block_m = 64, .block_n = 128},
                                                {.block_m = 128, .block_n = 256},
                                                {.block_m = 256, .block_n = 128, .multicast = QG_MULTICAST_A},
                                                {.block_m = 64, .block_n = 32},
                                                {.block_m = 128, .block_n = 64},
                                                {.block_m = 256, .block_n = 32}};
            for (size_t f = 0; f < sizeof gforced / sizeof gforced[0]; ++f)
                for (int ue = 0; ue < 2; ++ue) {
                    if (f && ue) continue;
                    const qg_config *cfg = gforced[f].block_m ? &gforced[f] : NULL;
                    qg_problem prob = {kinds[ki], p->m, p->n, p->k, p->num_groups, p->expected_m, 0};
                    qg_config c = gforced[f];
                    qg_kernel_plan plan;
                    if (cfg && qg__complete_config_out(&ctx->props, ctx->num_sms, &prob, 1, &c,
                                                       &plan) != QG_SUCCESS)
                        continue;
                    char label[128];
                    snprintf(label, sizeof label, "kind %d G %d m %d N %d K %d %s%dx%d%s", (int)kinds[ki],
                             p->num_groups, p->m, p->n, p->k, cfg ? "forced " : "", c.block_m,
                             c.block_n, ue ? " ue8m0" : "");
                    cases++;
                    failures += !run_case(ctx, stream, p, ue, cfg, label);
                }
            qgtk_problem_free(p);
        }
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    printf("    %d cases, %d failures\n", cases, failures);
    CHECK(cases >= 30, "too few cases ran: %d", cases);
    CHECK(failures == 0, "%d of %d e4m3-D cases failed", failures, cases);
    PASS();
}

/* QG_TEST_FP8OUT_VARIANTS="a,b" (only): whether name is in the list; no list: every name. */
static bool fp8out_variant_listed(const char *only, const char *name) {
    if (!only) return true;
    char pat[40], list[256];
    snprintf(pat, sizeof pat, ",%s,", name);
    snprintf(list, sizeof list, ",%s,", only);
    return strstr(list, pat) != NULL;
}

/* QGEMM_FP8OUT_VARIANT (issue 51's A/B runs): every variant's kernels pass
 * the same checks as old's (fp64 reference, poison; old: the organisation
 * before the variants, the reference here, not the default), and where the
 * variant runs old's tile its bytes and scales (poison included) are bitwise
 * old's: the variants change when things start and what is prefetched, never
 * the math (nk, which splits K, is gpu_nk_fp8out's). The split tiles (64x32, 128x32 in clusters of
 * 4; 64x64, 128x64 in clusters of 2), a tile of whole groups, the
 * heuristic's (new: 64x4096x7168 changes its tile, so accuracy only), UE8M0
 * once, the grouped kinds. In two parts (one process each; they may run side
 * by side): gpu_variants_fp8out_a the dense cases at M 257, 1000 and the
 * heuristic's at M 64, _b the dense ones at M 100 and the grouped kinds.
 * (Not named gpu_fp8out_*: tests/main.c selects by substring, and the filter
 * word gpu_fp8out must run gpu_fp8out alone.) */
/* (epi, new+epi: the cheaper e4m3 epilogue, QG_FP8_EPI; new+epi+last: the exchange's
 * release at a tile's end, none on the last, QG_FP8_LAST: the split cases of M 1000 and
 * the grouped kinds run several tiles a CTA. QG_TEST_FP8OUT_VARIANTS="a,b": old and
 * these only, a short GPU run.) */
static const char *const variants[] = {"old", "early", "sfbpf", "new", "epi", "new+epi", "new+epi+last"};
#define NUM_VARIANTS ((int)(sizeof variants / sizeof variants[0]))
static const struct { int kind, m, n, k, g, bm, bn, ue; } vcases[] = {
    {0, 257, 576, 512, 1, 64, 32, 0},     {0, 257, 576, 512, 1, 128, 64, 0},
    {0, 1000, 4096, 2048, 1, 64, 64, 0},  {0, 1000, 4096, 2048, 1, 128, 32, 1},
    {0, 64, 2112, 7168, 1, 0, 0, 0},      {0, 64, 4096, 7168, 1, 0, 0, 0},
    /* part b */
    {0, 100, 1160, 1536, 1, 64, 64, 0},   {0, 100, 1160, 1536, 1, 64, 128, 0},
    {2, 300, 1160, 1536, 4, 64, 32, 0},   {1, 1200, 4096, 2048, 4, 128, 64, 0},
    {3, 1200, 1160, 1536, 4, 64, 64, 0}};
#define VARIANTS_PART_B 6 /* vcases[6..] */
#define VARIANTS_PART_MAX 6

/* One variant's kernels of a part, compiled in parallel (qgtk_parallel_for):
 * every case is its own problem, so their keys differ. */
typedef struct {
    qg_context *ctx;
    const qg_problem *probs;
    const qg_config *const *cfgs; /* NULL: the heuristic's under the variant */
    const int *ue;
    qg_kernel_info *infos;
    qg_status *statuses;
} fp8out_compile_job;

static void fp8out_compile_one(void *user, int64_t i, int worker) {
    (void)worker;
    const fp8out_compile_job *job = user;
    job->statuses[i] = qg_compile_fp8out(job->ctx, &job->probs[i], job->ue[i], job->cfgs[i],
                                         &job->infos[i]);
}

static qg_test_result variants_part(size_t first, size_t last) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    const char *saved = getenv("QGEMM_FP8OUT_VARIANT");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    const int count = (int)(last - first);
    const char *only = getenv("QG_TEST_FP8OUT_VARIANTS");
    int listed = 0;
    for (int v = 1; v < NUM_VARIANTS; ++v) listed += fp8out_variant_listed(only, variants[v]);
    qgtk_problem_data *ps[VARIANTS_PART_MAX] = {0};
    qg_problem probs[VARIANTS_PART_MAX];
    qg_config forced[VARIANTS_PART_MAX];
    const qg_config *cfgs[VARIANTS_PART_MAX];
    int ue[VARIANTS_PART_MAX], want_compared = 0;
    bool made = count <= VARIANTS_PART_MAX;
    for (int c = 0; made && c < count; ++c) {
        const size_t i = first + (size_t)c;
        qgtk_problem_spec spec = {.kind = (qg_gemm_kind)vcases[i].kind, .m = vcases[i].m,
                                  .n = vcases[i].n, .k = vcases[i].k, .num_groups = vcases[i].g,
                                  .seed = 951 + i, .scale_spread = 3,
                                  .expected_m = vcases[i].kind ? 300 : 0,
                                  .masked_extremes = vcases[i].kind != 0,
                                  .padding_blocks = vcases[i].kind != 0};
        ps[c] = make(ctx, &spec, vcases[i].kind == 0);
        made = ps[c] != NULL;
        if (!made) break;
        forced[c] = (qg_config){.block_m = vcases[i].bm, .block_n = vcases[i].bn};
        cfgs[c] = vcases[i].bm ? &forced[c] : NULL;
        ue[c] = vcases[i].ue;
        probs[c] = (qg_problem){(qg_gemm_kind)vcases[i].kind, ps[c]->m, ps[c]->n, ps[c]->k,
                                ps[c]->num_groups, vcases[i].kind ? ps[c]->expected_m : 0, 0};
        qg_config legal = forced[c];
        qg_kernel_plan plan;
        made = !cfgs[c] || qg__complete_config_out(&ctx->props, ctx->num_sms, &probs[c], 1 + ue[c],
                                                   &legal, &plan) == QG_SUCCESS;
        if (!made) printf("    FAIL case %zu: %s\n", i, qg_last_error());
        want_compared += cfgs[c] ? listed : 0; /* a forced tile: each listed variant compared */
    }
    if (!made) printf("    FAIL making the problems: %s\n", qg_last_error());
    /* Compile ahead: per variant (the knob is read per call, so one variant at
     * a time) the part's kernels in parallel; one at a time on a cold cache
     * they outlasted 170 s. */
    int failures = 0, cases_run = 0, compared = 0, distinct = 0, compiled_now = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static char keys[NUM_VARIANTS * VARIANTS_PART_MAX][65];
    for (int v = 0; made && v < NUM_VARIANTS; ++v) {
        if (v && !fp8out_variant_listed(only, variants[v])) continue;
        qg_kernel_info infos[VARIANTS_PART_MAX] = {0};
        qg_status statuses[VARIANTS_PART_MAX];
        fp8out_compile_job job = {ctx, probs, cfgs, ue, infos, statuses};
        setenv("QGEMM_FP8OUT_VARIANT", variants[v], 1);
        qgtk_parallel_for(count, qgtk_num_workers(), fp8out_compile_one, &job);
        for (int c = 0; c < count; ++c) {
            if (statuses[c] != QG_SUCCESS) continue; /* the run says why */
            compiled_now += infos[c].cache_hit == 0;
            bool seen = false;
            for (int t = 0; t < distinct && !seen; ++t) seen = !strcmp(keys[t], infos[c].key);
            if (!seen) memcpy(keys[distinct++], infos[c].key, sizeof keys[0]);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("    compiled ahead: %d distinct kernels (%d compiled now) of %d cases x %d variants in "
           "%.1f s on %d threads\n", distinct, compiled_now, count, NUM_VARIANTS,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, qgtk_num_workers());
    for (int c = 0; made && c < count; ++c) {
        const size_t i = first + (size_t)c;
        qgtk_problem_data *p = ps[c];
        kept_out base = {0};
        qg_config base_cfg;
        setenv("QGEMM_FP8OUT_VARIANT", variants[0], 1); /* old (the default is new+epi+last+nk+swm64) */
        CHECK(qg_select_config_fp8out(ctx, &probs[c], ue[c], &base_cfg) == QG_SUCCESS, "%s",
              qg_last_error());
        if (cfgs[c]) base_cfg = forced[c];
        char label[160];
        snprintf(label, sizeof label, "kind %d %dx%dx%d G %d %s%dx%d%s old", vcases[i].kind,
                 p->m, p->n, p->k, p->num_groups, cfgs[c] ? "forced " : "", base_cfg.block_m,
                 base_cfg.block_n, ue[c] ? " ue8m0" : "");
        cases_run++;
        failures += !run_case_keep(ctx, stream, p, ue[c], cfgs[c], label, &base);
        for (int v = 1; v < NUM_VARIANTS; ++v) {
            if (!fp8out_variant_listed(only, variants[v])) continue;
            setenv("QGEMM_FP8OUT_VARIANT", variants[v], 1);
            qg_config cv;
            CHECK(qg_select_config_fp8out(ctx, &probs[c], ue[c], &cv) == QG_SUCCESS, "%s",
                  qg_last_error());
            if (cfgs[c]) cv = forced[c];
            snprintf(label, sizeof label, "kind %d %dx%dx%d G %d %s%dx%d%s %s", vcases[i].kind,
                     p->m, p->n, p->k, p->num_groups, cfgs[c] ? "forced " : "", cv.block_m,
                     cv.block_n, ue[c] ? " ue8m0" : "", variants[v]);
            kept_out alt = {0};
            cases_run++;
            bool ok = run_case_keep(ctx, stream, p, ue[c], cfgs[c], label, &alt);
            if (ok && base.d && cv.block_m == base_cfg.block_m && cv.block_n == base_cfg.block_n) {
                compared++;
                const bool same = alt.d_bytes == base.d_bytes && alt.sf_count == base.sf_count &&
                                  !memcmp(alt.d, base.d, base.d_bytes) &&
                                  !memcmp(alt.s, base.s, base.sf_count * sizeof(float));
                if (!same) printf("    FAIL %s: bytes or scales differ from old's\n", label);
                ok = same;
            }
            failures += !ok;
            kept_free(&alt);
        }
        kept_free(&base);
    }
    for (int c = 0; c < count; ++c) qgtk_problem_free(ps[c]);
    if (saved) setenv("QGEMM_FP8OUT_VARIANT", keep, 1);
    else unsetenv("QGEMM_FP8OUT_VARIANT");
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    printf("    %d cases, %d bitwise comparisons with old, %d failures\n", cases_run,
           compared, failures);
    CHECK(listed > 0, "QG_TEST_FP8OUT_VARIANTS='%s' names no variant", only ? only : "");
    CHECK(made, "making the part's problems failed");
    CHECK(compared >= want_compared, "too few bitwise comparisons: %d, expected >= %d", compared,
          want_compared);
    CHECK(failures == 0, "%d of %d variant cases failed", failures, cases_run);
    PASS();
}

TEST(gpu_variants_fp8out_a) { return variants_part(0, VARIANTS_PART_B); }
TEST(gpu_variants_fp8out_b) {
    return variants_part(VARIANTS_PART_B, sizeof vcases / sizeof vcases[0]);
}

/* QGEMM_FP8OUT_VARIANT nk (QG_D_FP8_NK): split tiles with split-K 2 (clusters of 8
 * and 4), against the fp64 reference with poison, not bitwise (the K halves' sums
 * round differently): the heuristic's picks at N 576 (one tile a CTA), forced
 * 64x32 / 64x64 / 128x32 with split-K on several tiles a CTA (M 1000), a last
 * group of 8 columns (N 1160), UE8M0 once. */
TEST(gpu_nk_fp8out) {
    if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());
    qg_context *ctx;
    CUstream stream;
    CHECK(qgtk_gpu_session_open(&ctx, &stream) == QG_SUCCESS, "%s", qg_last_error());
    gpu_ctx_push(ctx);
    const char *saved = getenv("QGEMM_FP8OUT_VARIANT");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    setenv("QGEMM_FP8OUT_VARIANT", "new+epi+nk", 1);
    static const struct { int m, n, k, bm, bn, ue; } cases[] = {
        {64, 576, 7168, 0, 0, 0},      {128, 576, 7168, 0, 0, 1},   {1000, 576, 2048, 64, 32, 0},
        {1000, 576, 2048, 64, 64, 0},  {100, 1160, 1536, 64, 32, 0}, {100, 1160, 1536, 64, 64, 1},
        {257, 2112, 7168, 128, 32, 0}, {300, 4096, 1024, 128, 64, 0}};
    int failures = 0, cases_run = 0, split_k_runs = 0, heuristic_split_k = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = cases[i].m, .n = cases[i].n,
                                  .k = cases[i].k, .num_groups = 1, .seed = 5151 + i,
                                  .scale_spread = 3};
        qgtk_problem_data *p = make(ctx, &spec, true);
        CHECK(p, "problem: %s", qg_last_error());
        const qg_config forced = {.block_m = cases[i].bm, .block_n = cases[i].bn, .split_k = 2};
        const qg_config *cfg = cases[i].bm ? &forced : NULL;
        qg_problem prob = {QG_GEMM_DENSE, p->m, p->n, p->k, 1, 0, 0};
        qg_config c;
        CHECK(qg_select_config_fp8out(ctx, &prob, cases[i].ue, &c) == QG_SUCCESS, "%s",
              qg_last_error());
        if (cfg) c = forced;
        split_k_runs += c.split_k == 2 && c.block_n < 128;
        heuristic_split_k += !cfg && c.split_k == 2 && c.block_n < 128; /* the N 576 rows */
        char label[128];
        snprintf(label, sizeof label, "nk %dx%dx%d %s%dx%d split-K %d%s", p->m, p->n, p->k,
                 cfg ? "forced " : "", c.block_m, c.block_n, c.split_k, cases[i].ue ? " ue8m0" : "");
        kept_out out = {0};
        cases_run++;
        failures += !run_case_keep(ctx, stream, p, cases[i].ue, cfg, label, &out);
        kept_free(&out);
        qgtk_problem_free(p);
    }
    if (saved) setenv("QGEMM_FP8OUT_VARIANT", keep, 1);
    else unsetenv("QGEMM_FP8OUT_VARIANT");
    gpu_ctx_pop(ctx);
    qgtk_gpu_session_close(ctx, stream);
    printf("    %d cases (%d split tiles with split-K), %d failures\n", cases_run, split_k_runs,
           failures);
    CHECK(heuristic_split_k == 2 && split_k_runs == 8,
          "split tiles with split-K: the heuristic's %d of its 2 N 576 rows, %d of 8 runs", heuristic_split_k,
          split_k_runs);
    CHECK(failures == 0, "%d of %d nk cases failed", failures, cases_run);
    PASS();
}

/* ---- on the CPU: argument checks and plans ------------------------------ */

#include "fake_args.h"

TEST(fp8out_argument_validation) {
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(&ctx, NULL) == QG_SUCCESS, "%s", qg_last_error());
    /* fake_good_args: M 100, N 576, K 400; D [100][576] bytes at 0x5000000 */
    const qg_fp8_out good = {FAKE(0x8000000), 128, 0};
    static const struct {
        const char *what;
        qg_status want;
        const char *msg;
    } cases[] = {
        {"out NULL", QG_ERROR_INVALID_ARGUMENT, "out is NULL"},
        {"ue8m0 2", QG_ERROR_INVALID_ARGUMENT, "out->ue8m0 must be 0 or 1, got 2"},
        {"sfd NULL", QG_ERROR_INVALID_ARGUMENT, "out->sfd is NULL"},
        {"sfd+2", QG_ERROR_INVALID_ARGUMENT, "out->sfd (0x8000002) must be 4-byte aligned"},
        {"sfd_ld<m", QG_ERROR_INVALID_ARGUMENT, "out->sfd_ld must be >= m (100), got 96"},
        {"sfd_ld%4", QG_ERROR_INVALID_ARGUMENT, "out->sfd_ld * 4 bytes must be a multiple of 16"},
        /* e4m3 D: ldd bytes = elements (584 is legal for bf16 D) */
        {"ldd 584", QG_ERROR_INVALID_ARGUMENT, "args->ldd * 1 bytes must be a multiple of 16 (TMA), got 584"},
        {"sfd over a", QG_ERROR_INVALID_ARGUMENT, "out->sfd (bytes [0x1000040"},
        {"sfd over d", QG_ERROR_INVALID_ARGUMENT, "overlaps args->d"},
        {"d over sfa", QG_ERROR_INVALID_ARGUMENT, "args->d (bytes"},
        {"block_n 96", QG_ERROR_UNSUPPORTED, "FP8 output needs block_n 128 or 256"},
        {"block_n 192", QG_ERROR_UNSUPPORTED, "got 192"},
        /* a split scale group's cluster is taken: no multicast, no split-K,
         * its tiles in one swizzle group */
        {"block_n 64 mc A", QG_ERROR_UNSUPPORTED, "cluster of 2 CTAs; it needs multicast none, got multicast 1"},
        {"block_n 32 split-K", QG_ERROR_UNSUPPORTED, "cluster of 4 CTAs; it needs split_k 0 or 1, got 2"},
        {"block_n 32 swizzle 6", QG_ERROR_UNSUPPORTED, "swizzle_group must be a multiple of 4, got 6"},
        {"block_n 48", QG_ERROR_UNSUPPORTED, "or 64 or 32 (a cluster of 2 or 4 CTAs splits a group), got 48"},
        /* make fuzz (fuzz_family): 0 and -128 passed the tile test, then 128 / 0 */
        {"block_n 0", QG_ERROR_UNSUPPORTED, "FP8 output needs block_n 128 or 256 (a tile row covers whole 1x128 scale groups), or 64 or 32 (a cluster of 2 or 4 CTAs splits a group), got 0"},
        {"block_n -128", QG_ERROR_UNSUPPORTED, "got -128"},
        /* legal: past the configuration, the offline context */
        {"block_n 64", QG_ERROR_NO_DEVICE, "offline"},
        {"block_n 32", QG_ERROR_NO_DEVICE, "offline"},
        /* the scales right after D's 57600 bytes: no overlap (D is 1 byte an element) */
        {"sfd after d", QG_ERROR_NO_DEVICE, "offline"},
        {"valid", QG_ERROR_NO_DEVICE, "the context is offline"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        qg_gemm_args a = fake_good_args();
        qg_fp8_out o = good;
        const qg_fp8_out *out = &o;
        qg_config cfg = {0};
        const qg_config *forced = NULL;
        const char *w = cases[i].what;
        if (!strcmp(w, "out NULL")) out = NULL;
        else if (!strcmp(w, "ue8m0 2")) o.ue8m0 = 2;
        else if (!strcmp(w, "sfd NULL")) o.sfd = NULL;
        else if (!strcmp(w, "sfd+2")) o.sfd = FAKE(0x8000002);
        else if (!strcmp(w, "sfd_ld<m")) o.sfd_ld = 96;
        else if (!strcmp(w, "sfd_ld%4")) o.sfd_ld = 102;
        else if (!strcmp(w, "ldd 584")) a.ldd = 584;
        else if (!strcmp(w, "sfd over a")) o.sfd = FAKE(0x1000040);
        else if (!strcmp(w, "sfd over d")) o.sfd = FAKE(0x5000000 + 1024);
        else if (!strcmp(w, "d over sfa")) a.d = FAKE(0x2000000 - 1024);
        else if (!strcmp(w, "block_n 96")) cfg.block_m = 64, cfg.block_n = 96, forced = &cfg;
        else if (!strcmp(w, "block_n 48")) cfg.block_m = 64, cfg.block_n = 48, forced = &cfg;
        else if (!strcmp(w, "block_n 0")) cfg.block_m = 128, cfg.block_n = 0, forced = &cfg;
        else if (!strcmp(w, "block_n -128")) cfg.block_m = 128, cfg.block_n = -128, forced = &cfg;
        else if (!strcmp(w, "block_n 64")) cfg.block_m = 64, cfg.block_n = 64, forced = &cfg;
        else if (!strcmp(w, "block_n 32")) cfg.block_m = 128, cfg.block_n = 32, forced = &cfg;
        else if (!strcmp(w, "block_n 64 mc A"))
            cfg.block_m = 64, cfg.block_n = 64, cfg.multicast = QG_MULTICAST_A, forced = &cfg;
        else if (!strcmp(w, "block_n 32 split-K"))
            cfg.block_m = 64, cfg.block_n = 32, cfg.split_k = 2, forced = &cfg;
        else if (!strcmp(w, "block_n 32 swizzle 6"))
            cfg.block_m = 64, cfg.block_n = 32, cfg.swizzle_group = 6, forced = &cfg;
        else if (!strcmp(w, "block_n 192")) cfg.block_m = 128, cfg.block_n = 192, forced = &cfg;
        else if (!strcmp(w, "sfd after d")) o.sfd = FAKE(0x5000000 + 57600);
        /* a split tile with split-K: refused without nk (the default has it since 2026-11-29) */
        const bool no_nk = !strcmp(w, "block_n 32 split-K");
        if (no_nk) setenv("QGEMM_FP8OUT_VARIANT", "new+epi+last", 1);
        qg_status st = qg_fp8_gemm_nt_fp8out(ctx, &a, out, forced, NULL);
        if (no_nk) unsetenv("QGEMM_FP8OUT_VARIANT");
        CHECK(st == cases[i].want && strstr(qg_last_error(), cases[i].msg) &&
                  strstr(qg_last_error(), "qg_fp8_gemm_nt_fp8out"),
              "%s: got %s (%s), want %s with \"%s\"", w, qg_status_string(st), qg_last_error(),
              qg_status_string(cases[i].want), cases[i].msg);
    }
    /* the grouped calls name themselves; masked scales are [G][N/128][sfd_ld] */
    qg_gemm_args a = fake_good_args();
    a.num_groups = 4;
    CHECK(qg_m_grouped_fp8_gemm_nt_masked_fp8out(ctx, &a, NULL, NULL, NULL) ==
                  QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "qg_m_grouped_fp8_gemm_nt_masked_fp8out: out is NULL"),
          "%s", qg_last_error());
    qg_fp8_out o = good;
    o.sfd = FAKE(0x5000000 - 10112); /* [20][128] floats, the last row 100: 16 bytes into D */
    a.d = FAKE(0x5000000);
    CHECK(qg_m_grouped_fp8_gemm_nt_masked_fp8out(ctx, &a, &o, NULL, NULL) ==
                  QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "overlaps args->d"),
          "masked scales over D: %s", qg_last_error());
    a = fake_good_args();
    a.num_groups = 4;
    CHECK(qg_m_grouped_fp8_gemm_nt_contiguous_fp8out(ctx, &a, &good, NULL, NULL) ==
                  QG_ERROR_NO_DEVICE &&
              strstr(qg_last_error(), "qg_m_grouped_fp8_gemm_nt_contiguous_fp8out"),
          "%s", qg_last_error());
    a.group_ends = FAKE(0x9000000);
    CHECK(qg_m_grouped_fp8_gemm_nt_psum_fp8out(ctx, &a, &good, NULL, NULL) == QG_ERROR_NO_DEVICE &&
              strstr(qg_last_error(), "qg_m_grouped_fp8_gemm_nt_psum_fp8out"),
          "%s", qg_last_error());
    /* the configuration calls */
    qg_problem p = {QG_GEMM_WGRAD, 100, 576, 400, 1, 0, 0};
    qg_config c;
    CHECK(qg_select_config_fp8out(ctx, &p, 0, &c) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "problem->kind"), "%s", qg_last_error());
    p.kind = QG_GEMM_DENSE;
    CHECK(qg_select_config_fp8out(ctx, &p, 3, &c) == QG_ERROR_INVALID_ARGUMENT &&
              strstr(qg_last_error(), "ue8m0 must be 0 or 1, got 3"), "%s", qg_last_error());
    CHECK(qg_select_config_fp8out(ctx, &p, 1, &c) == QG_SUCCESS &&
              (c.block_n % 128 == 0 || c.block_n == 64 || c.block_n == 32),
          "%s (block_n %d)", qg_last_error(), c.block_n);
    qg_context_destroy(ctx);
    PASS();
}

/* The e4m3-D plans: 128-column store chunks, D's shared memory one byte an
 * element (never fewer stages than the bf16 plan of the tile); the split
 * tiles (64, 32 columns): a cluster of 128 / block_n CTAs, store chunks of
 * their width, the exchange buffer and barriers in shared memory, the
 * default swizzle group raised to the cluster; and the heuristic choosing
 * only FP8-legal tiles over a sweep of shapes of every 1D2D kind, split
 * tiles where whole groups leave SMs idle at small M, whole groups where
 * they were chosen at M = 4096 (H200 properties). */
/* The GPU tests' group check itself (qgtk_fp8_group_check, qgtk_fp8_tally_ok),
 * on the CPU: the reference's own quantization passes with nothing off; one byte
 * a step off counts as a mismatch, not far; a large byte two steps off, a scale off, or
 * the poisoned scale fail; with UE8M0, a scale one power of two away passes only
 * where the amax sits on a power of two. */
TEST(fp8out_group_check) {
    qgtk_rng rng;
    qgtk_rng_seed(&rng, 77);
    double ref[128];
    uint8_t q[128];
    for (int ue = 0; ue < 2; ++ue) {
        for (int c = 0; c < 128; ++c) ref[c] = (qgtk_rng_unit(&rng) * 2 - 1) * 3.0;
        ref[5] = 2.9999; /* the group's amax, and the byte made far below */
        double amax = 0;
        for (int c = 0; c < 128; ++c) amax = fmax(amax, fabs(ref[c]));
        float sf, mult;
        qgtk_fp8_scale((float)amax, ue, &sf, &mult);
        for (int c = 0; c < 128; ++c) q[c] = qgtk_torch_e4m3((float)ref[c] * mult);
        qgtk_fp8_tally t = {0};
        double qg, qw;
        qgtk_fp8_group_check(&t, ref, q, 128, fbits(sf), ue, SF_TOL);
        CHECK(qgtk_fp8_tally_ok(&t, &qg, &qw) && t.mismatch == 0 && t.elems == 128,
              "ue8m0 %d: the reference's own bytes: %lld off", ue, (long long)t.mismatch);
        uint8_t q1[128];
        memcpy(q1, q, sizeof q1);
        q1[9] = (uint8_t)(q1[9] + 1);
        qgtk_fp8_tally t1 = {0};
        qgtk_fp8_group_check(&t1, ref, q1, 128, fbits(sf), ue, SF_TOL);
        CHECK(t1.mismatch == 1 && t1.max_steps == 1 && t1.far == 0 && t1.err_got > t.err_got,
              "ue8m0 %d: one byte one step off", ue);
        memcpy(q1, q, sizeof q1);
        q1[5] = (uint8_t)(q1[5] - 2);
        qgtk_fp8_tally t2 = {0};
        qgtk_fp8_group_check(&t2, ref, q1, 128, fbits(sf), ue, SF_TOL);
        CHECK(!qgtk_fp8_tally_ok(&t2, &qg, &qw) && t2.far == 1, "ue8m0 %d: a large byte two steps off", ue);
        qgtk_fp8_tally t3 = {0};
        qgtk_fp8_group_check(&t3, ref, q, 128, fbits(sf * 1.5f), ue, SF_TOL);
        CHECK(!qgtk_fp8_tally_ok(&t3, &qg, &qw) && t3.sf_bad == 1, "ue8m0 %d: a scale off", ue);
        qgtk_fp8_tally t4 = {0};
        qgtk_fp8_group_check(&t4, ref, q, 128, 0xFFFFFFFFu, ue, SF_TOL);
        CHECK(!qgtk_fp8_tally_ok(&t4, &qg, &qw) && t4.unwritten == 1, "ue8m0 %d: the poisoned scale", ue);
        if (ue) { /* amax 2.9999: sf_plain is not near a power of two, so 2 sf is off */
            qgtk_fp8_tally t5 = {0};
            qgtk_fp8_group_check(&t5, ref, q, 128, fbits(2 * sf), ue, SF_TOL);
            CHECK(t5.sf_bad == 1, "UE8M0 scale twice the formula's away from a power of two");
        }
    }
    PASS();
}

TEST(fp8out_plans) {
    qg_context *ctx = NULL;
    CHECK(qg_context_create_offline(&ctx, NULL) == QG_SUCCESS, "%s", qg_last_error());
    static const int tiles[][2] = {{64, 128}, {128, 128}, {128, 256}, {256, 128}};
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; ++i) {
        qg_problem p = {QG_GEMM_DENSE, 4096, 7168, 7168, 1, 0, 0};
        qg_config c8 = {.block_m = tiles[i][0], .block_n = tiles[i][1]}, c16 = c8;
        qg_kernel_plan p8, p16;
        CHECK(qg__plan_out(&ctx->props, &p, 1, &c8, &p8) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(qg__plan(&ctx->props, &p, &c16, &p16) == QG_SUCCESS, "%s", qg_last_error());
        CHECK(p8.store_cols == 128 && p8.d_fp8 == 1 && p16.d_fp8 == 0, "tile %zu: store_cols %d", i,
              p8.store_cols);
        CHECK(p8.num_stages >= p16.num_stages, "tile %zu: %d stages against bf16's %d", i,
              p8.num_stages, p16.num_stages);
        c8.num_stages = c16.num_stages = p16.num_stages;
        CHECK(qg__plan_out(&ctx->props, &p, 2, &c8, &p8) == QG_SUCCESS &&
                  qg__plan(&ctx->props, &p, &c16, &p16) == QG_SUCCESS,
              "%s", qg_last_error());
        const size_t d16 = (size_t)tiles[i][0] * tiles[i][1] * 2;
        CHECK(p16.smem_bytes - p8.smem_bytes == d16 / 2, "tile %zu: smem %zu against %zu", i,
              p8.smem_bytes, p16.smem_bytes);
    }
    /* split tiles: bf16 plan's smem - half of D + 1 KiB of exchange + 16 bytes of barriers */
    static const int split_tiles[][3] = {{64, 32, 4}, {64, 64, 2}, {128, 32, 4}, {128, 64, 2},
                                         {256, 64, 2}};
    for (size_t i = 0; i < sizeof split_tiles / sizeof split_tiles[0]; ++i) {
        qg_problem p = {QG_GEMM_DENSE, 300, 2112, 7168, 1, 0, 0};
        qg_config c8 = {.block_m = split_tiles[i][0], .block_n = split_tiles[i][1]}, c16 = c8;
        qg_kernel_plan p8, p16;
        CHECK(qg__plan(&ctx->props, &p, &c16, &p16) == QG_SUCCESS, "%s", qg_last_error());
        c8.num_stages = p16.num_stages;
        CHECK(qg__plan_out(&ctx->props, &p, 1, &c8, &p8) == QG_SUCCESS, "%s", qg_last_error());
        const int split = split_tiles[i][2];
        const size_t xchg = ((size_t)split * split_tiles[i][0] * 4 + 1023) / 1024 * 1024;
        const size_t d16 = (size_t)split_tiles[i][0] * split_tiles[i][1] * 2;
        CHECK(p8.cluster_size == split && p8.store_cols == split_tiles[i][1] &&
                  p8.swizzle_group % split == 0 && p8.split_k == 1,
              "split tile %zu: cluster %d store_cols %d swizzle %d", i, p8.cluster_size,
              p8.store_cols, p8.swizzle_group);
        CHECK(p8.smem_bytes == p16.smem_bytes - (d16 - (d16 / 2 + 1023) / 1024 * 1024) + xchg + 16,
              "split tile %zu: smem %zu against bf16 %zu", i, p8.smem_bytes, p16.smem_bytes);
    }
    /* the heuristic on an H200: split tiles at small M, whole groups kept at M = 4096 */
    {
        qg_device_props h200;
        memset(&h200, 0, sizeof h200);
        h200.sm_count = 132, h200.cc_major = 9, h200.smem_optin_bytes = 232448;
        h200.dram_gbps = 4915;
        static const struct { int m, n, k, bm, bn, cluster; } want[] = {
            {64, 2112, 7168, 64, 32, 4},   {128, 4096, 7168, 64, 64, 2},
            {64, 4096, 7168, 64, 32, 4},   {64, 7168, 2048, 64, 64, 2},
            {4096, 4096, 7168, 256, 128, 2}, {4096, 7168, 2048, 256, 128, 2},
            {256, 4096, 7168, 64, 128, 1}};
        for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
            qg_problem p = {QG_GEMM_DENSE, want[i].m, want[i].n, want[i].k, 1, 0, 0};
            qg_config c;
            qg_kernel_plan plan;
            CHECK(qg__select_out(&h200, 132, &p, 1, NULL, 0, &c, &plan) == QG_SUCCESS, "%s",
                  qg_last_error());
            CHECK(c.block_m == want[i].bm && c.block_n == want[i].bn &&
                      plan.cluster_size == want[i].cluster,
                  "%dx%dx%d: %dx%d cluster %d, want %dx%d cluster %d", p.m, p.n, p.k, c.block_m,
                  c.block_n, plan.cluster_size, want[i].bm, want[i].bn, want[i].cluster);
        }
        /* QGEMM_FP8OUT_VARIANT room (QG_D_FP8_ROOM): 30 clusters of 4 on 132 SMs, so
         * 64x4096x7168's 128 tiles of 64x32 would run two rounds: 64x64 in clusters
         * of 2 (one round of 64 tiles) instead; every other row as before (the 14
         * DeepSeek rows at M 64 / 128 and M 256: bench/peers_fp8out.py) */
        static const struct { int m, n, k, bm, bn, cluster; } room[] = {
            {64, 4096, 7168, 64, 64, 2},  {64, 2112, 7168, 64, 32, 4}, {64, 576, 7168, 64, 32, 4},
            {128, 576, 7168, 64, 32, 4},  {256, 576, 7168, 64, 32, 4}, {128, 4096, 7168, 64, 64, 2},
            {128, 2112, 7168, 64, 64, 2}, {64, 7168, 2048, 64, 64, 2}};
        for (size_t i = 0; i < sizeof room / sizeof room[0]; ++i) {
            qg_problem p = {QG_GEMM_DENSE, room[i].m, room[i].n, room[i].k, 1, 0, 0};
            qg_config c;
            qg_kernel_plan plan;
            CHECK(qg__select_out(&h200, 132, &p, 1 | QG_D_FP8_ROOM, NULL, 0, &c, &plan) ==
                      QG_SUCCESS, "%s", qg_last_error());
            CHECK(c.block_m == room[i].bm && c.block_n == room[i].bn &&
                      plan.cluster_size == room[i].cluster && (plan.d_fp8 & QG_D_FP8_ROOM),
                  "room %dx%dx%d: %dx%d cluster %d, want %dx%d cluster %d", p.m, p.n, p.k,
                  c.block_m, c.block_n, plan.cluster_size, room[i].bm, room[i].bn,
                  room[i].cluster);
        }
        /* the flags are e4m3 D's alone: never with SwiGLU */
        qg_problem p = {QG_GEMM_DENSE, 64, 4096, 7168, 1, 0, 0};
        qg_config c = {.block_m = 128, .block_n = 256};
        qg_kernel_plan plan;
        CHECK(qg__plan_out(&h200, &p, 1 | QG_D_SWIGLU | QG_D_FP8_EARLY, &c, &plan) ==
                  QG_ERROR_INTERNAL, "SwiGLU with a variant flag: %s", qg_last_error());
        c.block_n = 128;
        CHECK(qg__plan_out(&h200, &p, QG_D_FP8_ROOM, &c, &plan) == QG_ERROR_INTERNAL,
              "a variant flag without e4m3 D: %s", qg_last_error());
    }
    /* nk (QG_D_FP8_NK): a split tile with split-K 2 plans a cluster of split x 2 with
     * the partner's sums beside the exchange (and both barrier pairs), only under
     * the flag and in the dense kind; the heuristic on an H200 takes it at N 576
     * alone among DeepGEMM's 14 small rows' (N, K) */
    {
        qg_device_props h200;
        memset(&h200, 0, sizeof h200);
        h200.sm_count = 132, h200.cc_major = 9, h200.smem_optin_bytes = 232448;
        h200.dram_gbps = 4915;
        qg_problem p = {QG_GEMM_DENSE, 300, 2112, 7168, 1, 0, 0};
        static const int tiles[][2] = {{64, 32}, {64, 64}, {128, 32}};
        for (size_t i = 0; i < 3; ++i) {
            qg_config c1 = {.block_m = tiles[i][0], .block_n = tiles[i][1]}, c2 = c1;
            c2.split_k = 2;
            qg_kernel_plan p1, p2;
            CHECK(qg__plan_out(&h200, &p, 1, &c2, &p2) == QG_ERROR_UNSUPPORTED,
                  "split tile with split-K without nk: %s", qg_last_error());
            CHECK(qg__plan_out(&h200, &p, 1 | QG_D_FP8_NK, &c2, &p2) == QG_SUCCESS, "%s",
                  qg_last_error());
            c1.num_stages = p2.num_stages;
            CHECK(qg__plan_out(&h200, &p, 1, &c1, &p1) == QG_SUCCESS, "%s", qg_last_error());
            const int split = 128 / tiles[i][1];
            CHECK(p2.cluster_size == 2 * split && p2.split_k == 2 &&
                      p2.smem_bytes == p1.smem_bytes + (size_t)tiles[i][0] * tiles[i][1] * 4 + 16,
                  "nk %dx%d: cluster %d split_k %d smem %zu against %zu", tiles[i][0],
                  tiles[i][1], p2.cluster_size, p2.split_k, p2.smem_bytes, p1.smem_bytes);
            qg_problem g = {QG_GEMM_GROUPED_MASKED, 300, 2112, 7168, 4, 300, 0};
            CHECK(qg__plan_out(&h200, &g, 1 | QG_D_FP8_NK, &c2, &p2) == QG_ERROR_UNSUPPORTED,
                  "nk in the masked kind: %s", qg_last_error());
        }
        static const struct { int m, n, k, bn, split_k, cluster; } nk[] = {
            {64, 576, 7168, 32, 2, 8},    {128, 576, 7168, 32, 2, 8},
            {64, 2112, 7168, 32, 1, 4},   {128, 2112, 7168, 64, 1, 2},
            {128, 4096, 7168, 64, 1, 2},  {64, 7168, 2048, 64, 1, 2},
            {64, 32768, 512, 128, 1, 1}};
        const int flags = 1 | QG_D_FP8_VARIANT | QG_D_FP8_EPI | QG_D_FP8_NK;
        for (size_t i = 0; i < sizeof nk / sizeof nk[0]; ++i) {
            qg_problem q = {QG_GEMM_DENSE, nk[i].m, nk[i].n, nk[i].k, 1, 0, 0};
            qg_config c;
            qg_kernel_plan plan;
            CHECK(qg__select_out(&h200, 132, &q, flags, NULL, 0, &c, &plan) == QG_SUCCESS, "%s",
                  qg_last_error());
            CHECK(c.block_m == 64 && c.block_n == nk[i].bn && plan.split_k == nk[i].split_k &&
                      plan.cluster_size == nk[i].cluster,
                  "nk %dx%dx%d: %dx%d split_k %d cluster %d, want 64x%d split_k %d cluster %d",
                  q.m, q.n, q.k, c.block_m, c.block_n, plan.split_k, plan.cluster_size, nk[i].bn,
                  nk[i].split_k, nk[i].cluster);
        }
    }
    /* the variable: unset, each word, '+'-lists; a bad value is refused by the calls */
    {
        static const struct { const char *v; int flags; } vars[] = {
            {NULL, QG_D_FP8_VARIANT | QG_D_FP8_EPI | QG_D_FP8_LAST | QG_D_FP8_NK | QG_D_SWIGLU_M64},
            {"new+epi+last+nk+swm64", QG_D_FP8_VARIANT | QG_D_FP8_EPI | QG_D_FP8_LAST | QG_D_FP8_NK | QG_D_SWIGLU_M64},
            {"old", 0}, {"room", QG_D_FP8_ROOM}, {"early", QG_D_FP8_EARLY},
            {"new", QG_D_FP8_ROOM | QG_D_FP8_EARLY | QG_D_FP8_SFBPF},
            {"room+early", QG_D_FP8_ROOM | QG_D_FP8_EARLY}, {"sfbpf", QG_D_FP8_SFBPF},
            {"old+early", QG_D_FP8_EARLY}, {"epi", QG_D_FP8_EPI},
            {"new+epi", QG_D_FP8_VARIANT | QG_D_FP8_EPI}, {"last", QG_D_FP8_LAST},
            {"new+epi+last", QG_D_FP8_VARIANT | QG_D_FP8_EPI | QG_D_FP8_LAST},
            {"nk", QG_D_FP8_NK}, {"new+epi+nk", QG_D_FP8_VARIANT | QG_D_FP8_EPI | QG_D_FP8_NK},
            {"lasts", -1}, {"fast", -1}, {"room+", -1},
            {"room,early", -1}, {"epis", -1}};
        const char *saved = getenv("QGEMM_FP8OUT_VARIANT");
        char keep[64] = "";
        if (saved) snprintf(keep, sizeof keep, "%s", saved);
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
            if (vars[i].v) setenv("QGEMM_FP8OUT_VARIANT", vars[i].v, 1);
            else unsetenv("QGEMM_FP8OUT_VARIANT");
            CHECK(qg__fp8out_variant() == vars[i].flags, "QGEMM_FP8OUT_VARIANT=%s: %d, want %d",
                  vars[i].v ? vars[i].v : "(unset)", qg__fp8out_variant(), vars[i].flags);
        }
        setenv("QGEMM_FP8OUT_VARIANT", "fast", 1);
        qg_problem p = {QG_GEMM_DENSE, 64, 4096, 7168, 1, 0, 0};
        qg_config c;
        CHECK(qg_select_config_fp8out(ctx, &p, 0, &c) == QG_ERROR_INVALID_ARGUMENT &&
                  strstr(qg_last_error(), "QGEMM_FP8OUT_VARIANT='fast'"),
              "a bad variant: %s", qg_last_error());
        if (saved) setenv("QGEMM_FP8OUT_VARIANT", keep, 1);
        else unsetenv("QGEMM_FP8OUT_VARIANT");
    }
    int chosen = 0;
    for (int kind = 0; kind <= 3; ++kind)
        for (int m = 1; m <= 16384; m *= 4)
            for (int n = 128; n <= 24576; n = n * 3 + 8 * (kind + 1)) {
                qg_problem p = {(qg_gemm_kind)kind, kind == 1 || kind == 3 ? m * 4 : m,
                                n - n % 8, 2048, kind ? 4 : 1, 0, 0};
                qg_config c;
                qg_kernel_plan plan;
                CHECK(qg__select_out(&ctx->props, ctx->num_sms, &p, 1, NULL, 0, &c, &plan) ==
                          QG_SUCCESS, "kind %d m %d n %d: %s", kind, p.m, p.n, qg_last_error());
                const int split = c.block_n < 128 ? 128 / c.block_n : 1;
                CHECK((c.block_n % 128 == 0 || c.block_n == 64 || c.block_n == 32) &&
                          plan.d_fp8 == 1 && plan.store_cols == (split > 1 ? c.block_n : 128) &&
                          (split == 1 || (plan.cluster_size == split && c.multicast == 0 &&
                                          plan.split_k == 1 && c.swizzle_group % split == 0)),
                      "kind %d m %d n %d: block %dx%d", kind, p.m, p.n, c.block_m, c.block_n);
                chosen++;
            }
    CHECK(chosen > 50, "%d choices checked", chosen);
    qg_context_destroy(ctx);
    PASS();
}

/* The output buffers' poison rule on host copies (no device: the struct filled
 * by hand as qgtk_fp8_out_create would, masked G 2 x M 3, 200 columns): all
 * poison kept is clean, and each place that must stay poisoned is found when
 * it is not; the scale of (row, group) is read where the kernel writes it. */
TEST(fp8out_untouched_rule) {
    enum { G = 2, M = 3, N = 200 };
    double ref[G * M * N];
    for (int i = 0; i < G * M * N; ++i) ref[i] = 1.0;
    for (int c = 0; c < N; ++c) ref[4 * N + c] = NAN; /* group 1's row 1 is not written */
    qgtk_problem_data p;
    memset(&p, 0, sizeof p);
    p.kind = QG_GEMM_GROUPED_MASKED, p.m = M, p.n = N, p.num_groups = G, p.rows = G * M;
    p.ref = ref;
    qgtk_fp8_out_buffers o;
    memset(&o, 0, sizeof o);
    o.p = &p, o.cols = N, o.ldd = N + 24, o.nb = 2, o.sfd_ld = qg_sfa_ld(M) + 4, o.sf_groups = G;
    uint8_t d[G * M * (N + 24)];
    float s[G * 2 * 8];
    CHECK(o.sfd_ld <= 8, "sfd_ld %lld", (long long)o.sfd_ld); /* (8: qg_sfa_ld(3) + 4) */
    o.hd = d, o.hs = s;
    /* what a correct call leaves: written rows' columns and scales, the rest poisoned */
    memset(d, 0xFF, sizeof d);
    memset(s, 0xFF, sizeof s);
    for (int r = 0; r < G * M; ++r) {
        if (r == 4) continue;
        memset(d + r * o.ldd, 0x38, N);
        for (int kb = 0; kb < 2; ++kb)
            s[((r / M) * 2 + kb) * o.sfd_ld + r % M] = (float)(100 * r + kb);
    }
    CHECK(qgtk_fp8_out_untouched(&o) == 0, "a clean output counted %lld",
          (long long)qgtk_fp8_out_untouched(&o));
    CHECK(qgtk_fp8_out_row_written(&o, 3) && !qgtk_fp8_out_row_written(&o, 4), "rows written");
    CHECK(qgtk_fp8_out_sf_bits(&o, 5, 1) == fbits(501.0f), "scale of row 5 group 1");
    /* each place that must keep its poison, changed */
    const size_t places[] = {0 * (N + 24) + N,      /* row 0's byte past N */
                             4 * (N + 24) + 7,      /* the unwritten row's column 7 */
                             4 * (N + 24) + N + 23}; /* and its last padding byte */
    for (size_t i = 0; i < 3; ++i) {
        d[places[i]] = 0;
        CHECK(qgtk_fp8_out_untouched(&o) == 1, "byte %zu changed: counted %lld", places[i],
              (long long)qgtk_fp8_out_untouched(&o));
        d[places[i]] = 0xFF;
    }
    const int64_t sf_places[] = {(1 * 2 + 1) * o.sfd_ld + 1, /* the unwritten row's scale, group 1 */
                                 (0 * 2 + 0) * o.sfd_ld + M}; /* group 0's scale row past M */
    for (size_t i = 0; i < 2; ++i) {
        s[sf_places[i]] = 1.0f;
        CHECK(qgtk_fp8_out_untouched(&o) == 1, "scale %lld changed: counted %lld",
              (long long)sf_places[i], (long long)qgtk_fp8_out_untouched(&o));
        memset(&s[sf_places[i]], 0xFF, 4);
    }
    PASS();
}
