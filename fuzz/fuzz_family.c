/*
 * fuzz_family.c -- every public entry point that fuzz_args.c does not reach,
 * under arbitrary values (the first byte picks a family, so mutations stay
 * within one):
 *
 *  0 BF16   qg_bf16_gemm, qg_m_grouped_bf16_gemm_contiguous / _psum / _masked,
 *           qg_k_grouped_bf16_gemm, qg_batched_bf16_gemm, qg_bf16_gemm_batch_sums,
 *           qg_bf16_gemm_batch_sum, qg_bf16_gemm_batch_sum_workspace_bytes,
 *           qg_bf16_compile (every kind, and unknown ones)
 *  1 indexer qg_fp8_mqa_logits, qg_paged_mqa_logits_schedule, qg_fp8_paged_mqa_logits,
 *           qg_paged_mqa_schedule_size, qg_tf32_hc_prenorm_gemm, qg_indexer_compile
 *  2 FP8    qg_fp8_gemm_nt_fp8out and the contiguous / masked / psum _fp8out,
 *           qg_fp8_gemm_nt_swiglu and the contiguous / masked _swiglu,
 *           qg_m_grouped_fp8_gemm_nt_psum, qg_fp8_gemm_nt_wgrad,
 *           qg_k_grouped_fp8_gemm_nt_contiguous, qg_compile, qg_compile_fp8out,
 *           qg_compile_swiglu, qg_select_config_fp8out / _swiglu,
 *           qg_interleave_gate_up
 *  3 misc   qg_context_create_offline (hostile props), qg_context_create (NULL out,
 *           bad ordinals), qg_context_get_props / get_num_sms / set_num_sms /
 *           get_pdl / set_pdl (NULL and offline contexts), qg_cast_compile,
 *           qg_m_alignment_for_contiguous_layout, qg_sfa_ld, qg_status_string,
 *           qg_version*, and the e4m3 / bf16 encode and decode helpers
 *
 * Every call runs on the offline H100 context, a NULL one, or (one input in
 * four) an offline context made from fuzzed props that the library accepted,
 * with the context's SM count and PDL flag set from the input first (restored
 * after). Pointers are fake (an offline context can launch nothing) except
 * the k-grouped calls' ks, a host array the library reads (a real buffer of
 * up to 65536 groups, NULL beyond). Rules:
 *  - a launch returns an error with a message (1..4095 characters), or success
 *    only for an empty problem that touches no memory;
 *  - a compile returns an error with a message or success; fuzz/run.sh loads
 *    a fake NVRTC (fuzz/fake_nvrtc.c) so a valid request fails at once in
 *    QG_ERROR_COMPILE instead of compiling for seconds;
 *  - a selection that succeeds is complete; one that fails leaves *out as it
 *    was (poisoned before, compared after);
 *  - size queries and helpers obey their header formulas.
 * Never a crash, a sanitizer report or a hang.
 */
#include "fuzz.h"
#include "qgemm.h"
#include "seam.h" /* qg__nvrtc_path: is the fake NVRTC the one loaded? */

#include <math.h>
#include <string.h>

fuzz_figures fuzz_stats = {"family", 0, 0, 0};
static qg_context *offline;
static bool compiles; /* the compile entry points are called (the fake NVRTC is loaded) */
static int32_t ks_buf[65536];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (qg_context_create_offline(&offline, NULL) != QG_SUCCESS) abort();
    const char *nvrtc = qg__nvrtc_path();
    compiles = nvrtc && strstr(nvrtc, "fake-nvrtc");
    if (!compiles)
        fprintf(stderr, "fuzz_family: the fake NVRTC is not loaded (QGEMM_NVRTC_DIR; fuzz/run.sh "
                        "sets it): the compile entry points are not called\n");
    atexit(fuzz_print_figures);
    return 0;
}

static void check_message(void) {
    const char *msg = qg_last_error();
    if (!msg || !*msg || strlen(msg) > 4095) abort(); /* not clean */
}

/* A call that can only fail here (a launch on an offline or NULL context). */
static void check_error(qg_status st) {
    if (st == QG_SUCCESS) abort();
    check_message();
    fuzz_stats.clean_errors++;
}

/* A launch that may succeed for an empty problem (nothing to do). */
static void check_launch(qg_status st, bool empty) {
    if (st == QG_SUCCESS && empty) {
        fuzz_stats.accepted++;
        return;
    }
    check_error(st);
}

/* A compile: success (nothing to compile, or a cache hit) or a clean error. */
static void check_compile(qg_status st) {
    if (st == QG_SUCCESS) fuzz_stats.accepted++;
    else check_error(st);
}

/* An enum value: usually one of `n` valid ones, else raw. */
static int pick_enum(fuzz_input *in, const int *valid, int n) {
    const unsigned sel = (unsigned)fuzz_take(in, 1);
    if (sel < 224) return valid[sel % (unsigned)n];
    return (int)fuzz_take(in, 4);
}

/* A flag: 0 or 1 mostly, else a garbage value. */
static int pick_flag(fuzz_input *in) {
    static const int v[] = {0, 1, 0, 1, 0, 1, 2, -1, INT_MIN, 255};
    return v[fuzz_take(in, 1) % (sizeof v / sizeof v[0])];
}

static float pick_float(fuzz_input *in) {
    static const float v[] = {0.f, 1.f, 7.f, -1.f, 1e-30f, 1e30f, INFINITY, -INFINITY, NAN, -0.f};
    const unsigned sel = (unsigned)fuzz_take(in, 1);
    if (sel < 192) return v[sel % (sizeof v / sizeof v[0])];
    uint32_t bits = (uint32_t)fuzz_take(in, 4);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ks: a real host array for up to 65536 groups (its first values from the
 * input, the rest one repeated value), NULL (or a NULL for more groups). */
static const int32_t *pick_ks(fuzz_input *in, int num_groups) {
    const unsigned sel = (unsigned)fuzz_take(in, 1);
    if (sel < 16 || num_groups > 65536) return NULL;
    const int n = num_groups < 1 ? 1 : num_groups;
    static const int32_t common[] = {0, 64, 128, 256, 192, 4096, -128, INT32_MAX - 63};
    int i = 0;
    for (; i < n && i < 8; i++) {
        const unsigned s = (unsigned)fuzz_take(in, 1);
        ks_buf[i] = s < 200 ? common[s % 8] : (int32_t)fuzz_take(in, 4);
    }
    const int32_t rest = common[fuzz_take(in, 1) % 8];
    for (; i < n; i++) ks_buf[i] = rest;
    return ks_buf;
}

static void pick_config(fuzz_input *in, qg_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->block_m = pick_int(in), cfg->block_n = pick_int(in);
    cfg->num_stages = (int)(int8_t)fuzz_take(in, 1);
    cfg->multicast = (qg_multicast)(int8_t)fuzz_take(in, 1);
    cfg->swizzle_group = (int)(int8_t)fuzz_take(in, 1);
    cfg->split_k = (int)(int8_t)fuzz_take(in, 1);
}

static void pick_problem(fuzz_input *in, qg_problem *p) {
    static const int kinds[] = {0, 1, 2, 3, 4, 5, 16, 17, 18, -1, 6};
    p->kind = (qg_gemm_kind)pick_enum(in, kinds, 11);
    p->m = pick_int(in), p->n = pick_int(in), p->k = pick_int(in);
    p->num_groups = pick_int(in), p->expected_m = pick_int(in), p->accumulate = pick_flag(in);
}

/* A selection's out: poisoned, and either complete (success) or unchanged. */
static void check_selection(qg_status st, const qg_config *out, const qg_config *poison) {
    if (st == QG_SUCCESS) {
        if (out->block_m <= 0 || out->block_n <= 0 || out->num_stages < 1 || out->num_sms < 1 ||
            out->smem_bytes == 0)
            abort();
        fuzz_stats.accepted++;
    } else {
        check_error(st);
        if (memcmp(out, poison, sizeof *out)) abort(); /* written on error */
    }
}

/* ---- 0: BF16 ------------------------------------------------------------------ */

static void family_bf16(qg_context *c, fuzz_input *in) {
    qg_bf16_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = pick_int(in), a.n = pick_int(in), a.k = pick_int(in), a.num_groups = pick_int(in);
    static const int majors[] = {QG_MAJOR_K, QG_MAJOR_MN};
    a.a = pick_ptr(in), a.lda = pick_i64(in, a.k), a.a_major = (qg_major)pick_enum(in, majors, 2);
    a.b = pick_ptr(in), a.ldb = pick_i64(in, a.k), a.b_major = (qg_major)pick_enum(in, majors, 2);
    a.d = pick_ptr(in), a.ldd = pick_i64(in, a.n), a.d_fp32 = pick_flag(in);
    const unsigned csel = (unsigned)fuzz_take(in, 1) % 4;
    a.c = csel == 0 ? NULL : csel == 1 ? a.d : pick_ptr(in);
    a.ldc = pick_i64(in, a.n);
    a.m_indices = pick_ptr(in), a.masked_m = pick_ptr(in), a.group_ends = pick_ptr(in);
    a.expected_m = pick_int(in);
    a.ks = pick_ks(in, a.num_groups);
    const int64_t sa = pick_i64(in, 4096), sb = pick_i64(in, 4096), sd = pick_i64(in, 4096);
    const int splits = pick_int(in);
    void *ws = pick_ptr(in);
    const size_t ws_bytes = (size_t)pick_i64(in, 1 << 20);
    const qg_bf16_gemm_args *args = fuzz_take(in, 1) < 8 ? NULL : &a;
    /* Empty: no launch needed (the header: k = 0 still writes D, so not empty). */
    const bool empty = a.m == 0 || a.n == 0;

    check_launch(qg_bf16_gemm(c, args, NULL), empty);
    check_launch(qg_m_grouped_bf16_gemm_contiguous(c, args, NULL), empty);
    check_launch(qg_m_grouped_bf16_gemm_psum(c, args, NULL), empty);
    check_launch(qg_m_grouped_bf16_gemm_masked(c, args, NULL), empty);
    check_launch(qg_k_grouped_bf16_gemm(c, args, NULL), empty);
    check_launch(qg_batched_bf16_gemm(c, args, sa, sb, sd, NULL), empty);
    check_launch(qg_bf16_gemm_batch_sums(c, args, sa, sb, splits, NULL), empty);
    check_launch(qg_bf16_gemm_batch_sum(c, args, sa, sb, splits, ws, ws_bytes, NULL), empty);

    /* The workspace size: 0 for one split or an empty D, SIZE_MAX when it does
     * not fit; the counters a part of it. */
    size_t counter = (size_t)0xa5a5a5a5a5a5a5a5ull;
    const size_t bytes = qg_bf16_gemm_batch_sum_workspace_bytes(a.m, a.n, splits,
                                                                fuzz_take(in, 1) & 1 ? NULL : &counter);
    if ((splits == 1 || a.m <= 0 || a.n <= 0) && bytes != 0) abort();
    if (counter != (size_t)0xa5a5a5a5a5a5a5a5ull && bytes != SIZE_MAX && counter > bytes) abort();
    if (compiles) {
        static const int kinds[] = {0, 1, 2, 3, 5, 16, 17, 18, 4, -1, 19, 6};
        qg_kernel_info info;
        check_compile(qg_bf16_compile(c, (qg_gemm_kind)pick_enum(in, kinds, 12), args,
                                      fuzz_take(in, 1) & 1 ? &info : NULL));
    }
}

/* ---- 1: indexer --------------------------------------------------------------- */

static void family_indexer(qg_context *c, fuzz_input *in) {
    qg_mqa_logits_args m;
    memset(&m, 0, sizeof m);
    m.seq_len = pick_int(in), m.seq_len_kv = pick_int(in);
    m.heads = pick_int(in), m.head_dim = pick_int(in);
    m.q = pick_ptr(in), m.kv = pick_ptr(in), m.ld_kv = pick_i64(in, m.head_dim);
    m.kv_scales = pick_ptr(in), m.weights = pick_ptr(in), m.ld_weights = pick_i64(in, m.heads);
    m.ks = pick_ptr(in), m.ke = pick_ptr(in), m.logits = pick_ptr(in);
    m.ld_logits = pick_i64(in, m.seq_len_kv);
    m.logits_bf16 = pick_flag(in), m.clean = pick_flag(in), m.max_seqlen_k = pick_int(in);

    qg_paged_mqa_logits_args p;
    memset(&p, 0, sizeof p);
    p.batch = pick_int(in), p.next_n = pick_int(in), p.heads = pick_int(in);
    p.head_dim = pick_int(in);
    p.q = pick_ptr(in), p.kv_cache = pick_ptr(in), p.num_blocks = pick_int(in);
    p.block_stride = pick_i64(in, 0);
    p.weights = pick_ptr(in), p.ld_weights = pick_i64(in, p.heads);
    p.context_lens = pick_ptr(in), p.block_table = pick_ptr(in);
    p.block_table_ld = pick_i64(in, 16);
    p.max_context_len = pick_int(in), p.num_sms = pick_int(in);
    p.schedule = pick_ptr(in), p.logits = pick_ptr(in), p.ld_logits = pick_i64(in, p.max_context_len);
    p.logits_bf16 = pick_flag(in), p.clean = pick_flag(in);

    qg_hc_prenorm_args h;
    memset(&h, 0, sizeof h);
    h.m = pick_int(in), h.n = pick_int(in), h.k = pick_int(in), h.num_splits = pick_int(in);
    h.a = pick_ptr(in), h.lda = pick_i64(in, h.k), h.b = pick_ptr(in), h.ldb = pick_i64(in, h.k);
    h.d = pick_ptr(in), h.ldd = pick_i64(in, h.n), h.d_split_ld = pick_i64(in, 0);
    h.sqr_sum = pick_ptr(in);
    const bool null_args = fuzz_take(in, 1) < 8;

    check_launch(qg_fp8_mqa_logits(c, null_args ? NULL : &m, NULL), m.seq_len == 0);
    check_launch(qg_paged_mqa_logits_schedule(c, null_args ? NULL : &p, NULL), p.batch == 0);
    check_launch(qg_fp8_paged_mqa_logits(c, null_args ? NULL : &p, NULL), p.batch == 0);
    check_launch(qg_tf32_hc_prenorm_gemm(c, null_args ? NULL : &h, NULL), h.m == 0);

    const int sms = pick_int(in);
    const size_t sz = qg_paged_mqa_schedule_size(sms);
    if (sz != (sms < 1 ? 0 : ((size_t)sms + 1) * 2 * sizeof(int32_t))) abort();

    if (compiles) {
        /* kind and args: matched, or a union of all three behind an unknown kind. */
        union {
            qg_mqa_logits_args m;
            qg_paged_mqa_logits_args p;
            qg_hc_prenorm_args h;
        } any;
        memset(&any, 0, sizeof any);
        any.p = p;
        static const int kinds[] = {0, 1, 2, 3, 4, -1};
        const int kind = pick_enum(in, kinds, 6);
        const void *args = null_args ? NULL
                           : kind == QG_INDEXER_MQA_LOGITS  ? (const void *)&m
                           : kind == QG_INDEXER_HC_PRENORM ? (const void *)&h
                           : kind == QG_INDEXER_PAGED_SCHEDULE || kind == QG_INDEXER_PAGED_MQA_LOGITS
                               ? (const void *)&p : (const void *)&any;
        qg_kernel_info info;
        check_compile(qg_indexer_compile(c, (qg_indexer_kind)kind, args,
                                         fuzz_take(in, 1) & 1 ? &info : NULL));
    }
}

/* ---- 2: FP8 out, SwiGLU, psum, wgrad, k-grouped, interleave -------------------- */

static void family_fp8(qg_context *c, fuzz_input *in) {
    qg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = pick_int(in), a.n = pick_int(in), a.k = pick_int(in);
    a.num_groups = pick_int(in), a.expected_m = pick_int(in);
    a.a = pick_ptr(in), a.lda = pick_i64(in, a.k), a.sfa = pick_ptr(in);
    a.sfa_ld = pick_i64(in, qg_sfa_ld(a.m));
    a.b = pick_ptr(in), a.ldb = pick_i64(in, a.k), a.sfb = pick_ptr(in);
    a.d = pick_ptr(in), a.ldd = pick_i64(in, a.n);
    a.m_indices = pick_ptr(in), a.masked_m = pick_ptr(in), a.group_ends = pick_ptr(in);
    const unsigned csel = (unsigned)fuzz_take(in, 1) % 4;
    a.c = csel == 0 ? NULL : csel == 1 ? (const float *)a.d : pick_ptr(in);
    a.ldc = pick_i64(in, a.n), a.sfb_ld = pick_i64(in, qg_sfa_ld(a.n));
    a.ks = pick_ks(in, a.num_groups);

    qg_fp8_out o;
    memset(&o, 0, sizeof o);
    o.sfd = pick_ptr(in), o.sfd_ld = pick_i64(in, qg_sfa_ld(a.m)), o.ue8m0 = pick_flag(in);
    qg_swiglu_out s;
    memset(&s, 0, sizeof s);
    s.sfd = o.sfd, s.sfd_ld = o.sfd_ld, s.ue8m0 = o.ue8m0;
    s.swiglu_limit = pick_float(in), s.row_weight = pick_ptr(in);

    const unsigned flags = (unsigned)fuzz_take(in, 1);
    qg_config cfg;
    pick_config(in, &cfg);
    const qg_config *forced = flags & 1 ? &cfg : NULL;
    const qg_gemm_args *args = flags & 2 && flags & 4 ? NULL : &a;
    const qg_fp8_out *op = flags & 8 && flags & 16 ? NULL : &o;
    const qg_swiglu_out *sp = flags & 8 && flags & 16 ? NULL : &s;

    check_error(qg_fp8_gemm_nt_fp8out(c, args, op, forced, NULL));
    check_error(qg_m_grouped_fp8_gemm_nt_contiguous_fp8out(c, args, op, forced, NULL));
    check_error(qg_m_grouped_fp8_gemm_nt_masked_fp8out(c, args, op, forced, NULL));
    check_error(qg_m_grouped_fp8_gemm_nt_psum_fp8out(c, args, op, forced, NULL));
    check_error(qg_fp8_gemm_nt_swiglu(c, args, sp, forced, NULL));
    check_error(qg_m_grouped_fp8_gemm_nt_contiguous_swiglu(c, args, sp, forced, NULL));
    check_error(qg_m_grouped_fp8_gemm_nt_masked_swiglu(c, args, sp, forced, NULL));
    check_error(qg_m_grouped_fp8_gemm_nt_psum(c, args, forced, NULL));
    check_error(qg_fp8_gemm_nt_wgrad(c, args, forced, NULL));
    check_error(qg_k_grouped_fp8_gemm_nt_contiguous(c, args, forced, NULL));

    qg_problem p;
    pick_problem(in, &p);
    const qg_problem *pp = flags & 32 && flags & 64 ? NULL : &p;
    const int ue8m0 = pick_flag(in);
    qg_config out, poison;
    memset(&poison, 0xa5, sizeof poison);
    out = poison;
    check_selection(qg_select_config_fp8out(c, pp, ue8m0, &out), &out, &poison);
    out = poison;
    check_selection(qg_select_config_swiglu(c, pp, ue8m0, &out), &out, &poison);
    if (compiles) {
        qg_kernel_info info, *ip = flags & 128 ? &info : NULL;
        check_compile(qg_compile(c, pp, forced, ip));
        check_compile(qg_compile_fp8out(c, pp, ue8m0, forced, ip));
        check_compile(qg_compile_swiglu(c, pp, ue8m0, forced, ip));
    }

    qg_interleave_args il;
    memset(&il, 0, sizeof il);
    il.num_groups = a.num_groups, il.i = pick_int(in), il.k = a.k, il.ld_w = a.lda;
    il.w = a.a, il.w_out = pick_ptr(in), il.sf = a.sfa, il.sf_out = pick_ptr(in);
    il.inverse = pick_flag(in);
    check_error(qg_interleave_gate_up(c, flags & 2 && flags & 4 ? NULL : &il, NULL));
}

/* ---- 3: contexts, casts' compile, helpers ------------------------------------ */

static void family_misc(qg_context *c, fuzz_input *in) {
    /* qg_context_create: NULL out, or an ordinal no machine has. */
    static const int ordinals[] = {-1, INT_MIN, 1 << 20, INT_MAX};
    qg_context *made = (qg_context *)(uintptr_t)0x1;
    const int dev = ordinals[fuzz_take(in, 1) % 4];
    if (fuzz_take(in, 1) & 1) {
        check_error(qg_context_create(&made, dev));
        if (made) abort(); /* the header: *out NULL on failure */
    } else {
        check_error(qg_context_create(NULL, (int)fuzz_take(in, 1) - 1));
    }
    check_error(qg_context_create_offline(NULL, NULL));

    /* The getters on NULL; get_props. */
    if (qg_context_get_num_sms(NULL) != -1 || qg_context_get_pdl(NULL) != -1) abort();
    check_error(qg_context_set_num_sms(NULL, pick_int(in)));
    check_error(qg_context_set_pdl(NULL, pick_flag(in)));
    qg_device_props props;
    check_error(qg_context_get_props(NULL, &props));
    if (c) {
        check_error(qg_context_get_props(c, NULL));
        if (qg_context_get_props(c, &props) != QG_SUCCESS) abort();
        if (props.sm_count < 1 || props.cc_major != 9 || !memchr(props.name, 0, sizeof props.name) ||
            !props.name[0])
            abort();
        const int before = qg_context_get_num_sms(c), v = pick_int(in);
        const qg_status st = qg_context_set_num_sms(c, v);
        if (st == QG_SUCCESS) {
            if (v < 0 || v > props.sm_count) abort();
            if (qg_context_get_num_sms(c) != (v ? v : props.sm_count)) abort();
            fuzz_stats.accepted++;
        } else {
            check_error(st);
            if (qg_context_get_num_sms(c) != before) abort();
        }
        const int pdl = pick_flag(in);
        const qg_status ps = qg_context_set_pdl(c, pdl);
        if ((ps == QG_SUCCESS) != (pdl == 0 || pdl == 1)) abort();
        if (ps != QG_SUCCESS) check_error(ps);
        else if (qg_context_get_pdl(c) != pdl) abort();
    }

    /* qg_cast_compile: every kind, both argument structs (or NULL). */
    if (compiles) {
        qg_cast_args ca;
        memset(&ca, 0, sizeof ca);
        ca.m = pick_int(in), ca.k = pick_int(in), ca.num_groups = pick_int(in);
        ca.x = pick_ptr(in), ca.ld_x = pick_i64(in, ca.k), ca.x_fp32 = pick_flag(in);
        ca.out = pick_ptr(in), ca.ld_out = pick_i64(in, ca.k), ca.sf = pick_ptr(in);
        ca.sf_mn_major = pick_flag(in), ca.sf_ld = pick_int(in), ca.ue8m0 = pick_flag(in);
        ca.masked_m = pick_ptr(in), ca.m_indices = pick_ptr(in);
        qg_sf_layout_args la;
        memset(&la, 0, sizeof la);
        la.mn = pick_int(in), la.sf_k = pick_int(in), la.num_groups = pick_int(in);
        la.sf = pick_ptr(in);
        la.sf_stride[0] = pick_i64(in, 1), la.sf_stride[1] = pick_i64(in, 1);
        la.sf_stride[2] = pick_i64(in, 1);
        la.out = pick_ptr(in), la.out_ld = pick_int(in), la.ks = pick_ptr(in);
        la.gran_k = pick_int(in), la.k_alignment = pick_int(in), la.psum = pick_flag(in);
        la.packed_sf_k = pick_int(in);
        static const int kinds[] = {1, 2, 3, 4, 5, 6, 7, 0, 8, -1};
        const unsigned sel = (unsigned)fuzz_take(in, 1);
        qg_kernel_info info, poison;
        memset(&poison, 0xa5, sizeof poison);
        info = poison;
        const qg_status st = qg_cast_compile(c, (qg_cast_kind)pick_enum(in, kinds, 10),
                                             sel & 1 ? NULL : &ca, sel & 2 ? NULL : &la,
                                             sel & 4 ? NULL : &info);
        check_compile(st);
        /* Nothing compiled (an error, or an empty problem): info untouched. */
        if (!(sel & 4) && memcmp(&info, &poison, sizeof info)) abort();
    }

    /* Helpers and their header formulas. */
    if (qg_m_alignment_for_contiguous_layout() != 128) abort();
    const int64_t m = pick_i64(in, 100), ld = qg_sfa_ld(m);
    /* 0 when m < 0 or m rounded up to 4 is past INT64_MAX (no answer) */
    if (m < 0 || m > INT64_MAX - 3 ? ld != 0 : (ld < m || ld % 4 || ld - m > 3)) abort();
    const char *s = qg_status_string((qg_status)pick_int(in));
    if (!s || !*s) abort();
    if (qg_version() != QG_VERSION_NUMBER || strcmp(qg_version_string(), QG_VERSION_STRING)) abort();
    const uint8_t e = (uint8_t)fuzz_take(in, 1);
    const float ev = qg_fp8_e4m3_decode(e);
    if ((e & 0x7f) == 0x7f ? !isnan(ev) : qg_fp8_e4m3_encode(ev) != e) abort();
    const uint16_t b = (uint16_t)fuzz_take(in, 2);
    const float bv = qg_bf16_decode(b);
    if (isnan(bv) ? !isnan(qg_bf16_decode(qg_bf16_encode(bv))) : qg_bf16_encode(bv) != b) abort();
    const float x = pick_float(in);
    const uint8_t xe = qg_fp8_e4m3_encode(x);
    const float xd = qg_fp8_e4m3_decode(xe);
    if (isnan(x) != isnan(xd) || (!isnan(x) && fabsf(xd) > 448.f)) abort();
    if (!isnan(x) && signbit(x) != signbit(xd)) abort();
    const float xb = qg_bf16_decode(qg_bf16_encode(x));
    if (isnan(x) != isnan(xb) || (!isnan(x) && isinf(x) && xb != x)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input in = {data, size};
    fuzz_stats.cases++;
    const unsigned family = (unsigned)fuzz_take(&in, 1) % 4, ctx_sel = (unsigned)fuzz_take(&in, 1);

    /* The context: the offline H100, NULL, or one from fuzzed props. */
    qg_context *c = ctx_sel % 8 == 7 ? NULL : offline, *own = NULL;
    if (ctx_sel % 4 == 1) {
        qg_device_props props;
        memset(&props, 0, sizeof props);
        static const int sms[] = {132, 1, 2, 3, 78, 1024, 1025, 0};
        static const size_t smem[] = {232448, 49152, 49151, 1 << 20, 0, SIZE_MAX, 100000, 65536};
        props.sm_count = fuzz_take(&in, 1) & 1 ? pick_int(&in) : sms[fuzz_take(&in, 1) % 8];
        props.cc_major = 9 + (fuzz_take(&in, 1) == 255), props.cc_minor = 0;
        props.smem_optin_bytes = smem[fuzz_take(&in, 1) % 8];
        props.l2_bytes = (size_t)pick_i64(&in, 0);
        props.clock_khz = pick_int(&in), props.dram_gbps = pick_int(&in);
        memset(props.name, 'x', sizeof props.name); /* not terminated */
        const qg_status st = qg_context_create_offline(&own, &props);
        if (st == QG_SUCCESS) {
            fuzz_stats.accepted++;
            c = own;
        } else {
            check_error(st);
            if (own) abort(); /* *out NULL on failure */
        }
    }
    /* Its SM limit and PDL from the input (restored below). */
    const int sms = c ? qg_context_get_num_sms(c) : 0;
    if (c && fuzz_take(&in, 1) & 1) {
        const int v = (int)(fuzz_take(&in, 1) % 3) - 1 + (fuzz_take(&in, 1) & 1 ? 2 : sms);
        if (qg_context_set_num_sms(c, v) != QG_SUCCESS) check_message();
        if (qg_context_set_pdl(c, (int)(fuzz_take(&in, 1) & 1)) != QG_SUCCESS) abort();
    }

    switch (family) {
    case 0: family_bf16(c, &in); break;
    case 1: family_indexer(c, &in); break;
    case 2: family_fp8(c, &in); break;
    default: family_misc(c, &in); break;
    }

    if (own) qg_context_destroy(own);
    else if (c && (qg_context_set_num_sms(c, sms) != QG_SUCCESS || qg_context_set_pdl(c, 0)))
        abort();
    return 0;
}
