/*
 * fuzz_args.c -- the public argument validation under arbitrary values: the
 * three GEMM calls (with and without a forced configuration), the casts and
 * scale layouts, qg_select_config, qg_complete_config and qg_sfa_ld, on an offline context
 * with fake pointers. Every GEMM call must return an error with a message
 * (an offline context can launch nothing); selection may succeed, and then
 * its configuration must be complete. Never a crash, a sanitizer report or a
 * hang. Values are drawn so that both extremes (INT_MIN, INT64_MAX, 2^36 +
 * 1, ...) and legal shapes are likely (pick_int, pick_i64, pick_ptr: fuzz.h).
 * Every other public entry point (BF16, indexer, FP8 / SwiGLU output, psum,
 * wgrad, k-grouped, the compiles, contexts, helpers) is fuzz_family.c's.
 */
#include "fuzz.h"
#include "qgemm.h"

#include <limits.h>
#include <string.h>

fuzz_figures fuzz_stats = {"args", 0, 0, 0};
static qg_context *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (qg_context_create_offline(&ctx, NULL) != QG_SUCCESS) abort();
    atexit(fuzz_print_figures);
    return 0;
}

static void check_error(qg_status st) {
    const char *msg = qg_last_error();
    if (st == QG_SUCCESS || !msg || !*msg || strlen(msg) > 4096) abort(); /* not clean */
    fuzz_stats.clean_errors++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input in = {data, size};
    fuzz_stats.cases++;
    qg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = pick_int(&in), a.n = pick_int(&in), a.k = pick_int(&in);
    a.num_groups = pick_int(&in), a.expected_m = pick_int(&in);
    a.lda = pick_i64(&in, a.k), a.ldb = pick_i64(&in, a.k);
    a.ldd = pick_i64(&in, a.n), a.sfa_ld = pick_i64(&in, qg_sfa_ld(a.m));
    a.a = pick_ptr(&in), a.b = pick_ptr(&in), a.sfa = pick_ptr(&in), a.sfb = pick_ptr(&in);
    a.d = pick_ptr(&in), a.m_indices = pick_ptr(&in), a.masked_m = pick_ptr(&in);
    const unsigned flags = (unsigned)fuzz_take(&in, 1);
    qg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.block_m = pick_int(&in), cfg.block_n = pick_int(&in);
    cfg.num_stages = (int)(int8_t)fuzz_take(&in, 1);
    cfg.multicast = (qg_multicast)(int8_t)fuzz_take(&in, 1);
    cfg.swizzle_group = (int)(int8_t)fuzz_take(&in, 1);
    cfg.split_k = (int)(int8_t)fuzz_take(&in, 1);
    const qg_config *forced = flags & 1 ? &cfg : NULL;
    qg_context *c = flags & 2 ? ctx : (flags & 4 ? NULL : ctx);
    const qg_gemm_args *args = flags & 8 && !(flags & 16) ? NULL : &a;

    (void)qg_sfa_ld(a.sfa_ld);
    check_error(qg_fp8_gemm_nt(c, args, forced, NULL));
    check_error(qg_m_grouped_fp8_gemm_nt_contiguous(c, args, forced, NULL));
    check_error(qg_m_grouped_fp8_gemm_nt_masked(c, args, forced, NULL));

    /* the casts and scale layouts (offline: every call is an error) */
    qg_cast_args ca;
    memset(&ca, 0, sizeof ca);
    ca.m = a.m, ca.k = a.k, ca.num_groups = a.num_groups & 0xff ? a.num_groups : 0;
    ca.x = a.a, ca.ld_x = a.lda, ca.x_fp32 = flags & 1 ? 1 : (int)(int8_t)fuzz_take(&in, 1);
    ca.out = a.d, ca.ld_out = a.ldd, ca.sf = (float *)a.sfa;
    ca.sf_mn_major = (int)(int8_t)fuzz_take(&in, 1) % 3, ca.sf_ld = (int)a.sfa_ld;
    ca.ue8m0 = (int)(int8_t)fuzz_take(&in, 1) % 3;
    ca.masked_m = flags & 32 ? a.masked_m : NULL, ca.m_indices = flags & 64 ? a.m_indices : NULL;
    const qg_cast_args *cargs = args ? &ca : NULL;
    check_error(qg_per_token_cast(c, cargs, NULL));
    check_error(qg_per_block_cast(c, cargs, NULL));
    check_error(qg_per_channel_cast(c, cargs, NULL));
    check_error(qg_silu_mul_cast(c, cargs, NULL));
    qg_sf_layout_args la;
    memset(&la, 0, sizeof la);
    la.mn = a.m, la.sf_k = a.k, la.num_groups = a.num_groups, la.sf = (const float *)a.sfa;
    la.sf_stride[0] = a.lda, la.sf_stride[1] = a.ldb, la.sf_stride[2] = pick_i64(&in, 1);
    la.out = a.d, la.out_ld = (int)a.ldd, la.ks = flags & 128 ? a.m_indices : NULL;
    la.gran_k = cfg.block_m, la.k_alignment = cfg.block_n, la.psum = cfg.split_k;
    la.packed_sf_k = a.expected_m;
    const qg_sf_layout_args *largs = args ? &la : NULL;
    check_error(qg_sf_transpose_mn_major(c, largs, NULL));
    check_error(qg_sf_pack_ue8m0(c, largs, NULL));
    check_error(qg_sf_pack_ue8m0_k_grouped(c, largs, NULL));

    qg_problem p = {(qg_gemm_kind)(flags >> 5 & 3), a.m, a.n, a.k, a.num_groups, a.expected_m, 0};
    qg_config out;
    qg_status st = qg_select_config(c, &p, &out);
    if (st == QG_SUCCESS) {
        if (out.block_m <= 0 || out.block_n <= 0 || out.num_stages < 1 || out.num_sms < 1) abort();
        fuzz_stats.accepted++;
    } else {
        check_error(st);
    }
    out = cfg;
    st = qg_complete_config(c, &p, &out);
    if (st == QG_SUCCESS) {
        if (out.num_stages < 1 || out.smem_bytes == 0) abort();
        fuzz_stats.accepted++;
    } else {
        check_error(st);
    }
    return 0;
}
