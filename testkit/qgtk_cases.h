/*
 * qgtk_cases.h -- the testkit's GPU cases of the families beside the FP8
 * GEMMs (BF16 GEMMs, the indexer and HC kernels, the casts): one function per
 * kind of call that makes fresh random inputs, poisons the outputs, runs the
 * library's entry point, checks the result against an fp64 (or bitwise, for
 * the casts) host reference and reports what must stay untouched but was
 * written; optionally it then times the same call (CUDA events after an L2
 * flush, qgtk_time_us) on the same buffers. The C tests (tests/test_bf16.c,
 * test_indexer.c, test_cast.c) and the CLI's `qgemm check` / `qgemm bench
 * --family` run these same functions, so the two never disagree on what
 * passes.
 *
 * One unit per family: testkit/bf16_case.c, indexer_case.c (MQA logits,
 * paged MQA logits, HC prenorm), cast_case.c.
 *
 * Invariants (as qgtk.h's):
 *  - each runner makes ctx's CUcontext current itself (push/pop);
 *  - inputs are generated from opts->seed alone (same seed, same inputs);
 *  - nothing prints: res->why says why a case failed ("" when it passed);
 *  - the pass rules are the tests': BF16 diff < 1e-5; MQA / paged diff < 5e-6
 *    (fp32 logits) or 3e-5 (bf16), bitwise identical over 4 runs; HC diff <
 *    1e-8 against the TF32 product (and < 1e-5 against the exact one), sum of
 *    squares < 1e-8; casts bit for bit the torch formulas (silu_mul: scales
 *    within 4 ulp, bytes within one e4m3 step on <= 0.1% of them).
 */
#ifndef QGTK_CASES_H
#define QGTK_CASES_H

#include "qgtk.h"

/* torch's float -> float8_e4m3fn conversion (c10::detail::fp8e4m3fn_from_fp32_value:
 * round to nearest even; magnitudes from 480 up give the NaN code, as torch's). */
uint8_t qgtk_torch_e4m3(float f);
/* A scale rounded up to a power of two (UE8M0), as torch's ceil_to_ue8m0. */
float qgtk_ceil_ue8m0(float s);
/* The per-token cast's scale and multiplier of a 1x128 group of amax (docs/CAST.md):
 * amax at least 1e-4; sf = amax * f32(1/448) and mult = (1 / amax) * 448, or with ue8m0
 * sf rounded up to a power of two and mult = 1 / sf; NaNs canonical, as the GPU's. */
void qgtk_fp8_scale(float amax, int ue8m0, float *sf, float *mult);
/* Steps between two e4m3 codes along the number line (codes in value order, both zeros
 * 0: across zero both sides count); 1000 where one is a NaN code and the other not. */
int qgtk_e4m3_steps(uint8_t a, uint8_t b);
/* The value of an e4m3 code (NaN codes not expected). */
double qgtk_e4m3_value(uint8_t x);

/* The FP8-output checks' tally (tests/test_fp8out.c, tests/test_swiglu.c): elements
 * and bytes off the reference's quantization, those two or more steps off where
 * |ref * mult| >= 16 (far), scales off, scales never written, the largest step and
 * scale error, and the squared errors of the dequantized output and of the
 * reference's own quantization against the reference. */
typedef struct {
    int64_t elems, mismatch, far, sf_bad, unwritten;
    int max_steps;
    double sf_rel_max;
    double err_got, err_want, ref_sq;
} qgtk_fp8_tally;

/* One 1x128 group of an e4m3 output row: its `cols` fp64 reference values, the
 * bytes got and the scale's bits got (0xFFFFFFFF: the poison, never written).
 * The scale must be within sf_tol (relative) of the formula's on the reference's
 * amax; with ue8m0 a scale one power of two away counts as right where the FP32
 * amax sits within sf_tol of a power of two, and the bytes are then checked
 * against the kernel's scale. Returns the multiplier the bytes were checked with. */
float qgtk_fp8_group_check(qgtk_fp8_tally *t, const double *ref, const uint8_t *got, int64_t cols,
                           uint32_t got_sf_bits, int ue8m0, double sf_tol);
/* The verdict on a tally: some elements, at most 2% of the bytes off, none far,
 * no scale off or unwritten, the dequantized error at most 1.02x the
 * reference's own + 1e-6 (the two relative squared errors in *q_got, *q_want). */
bool qgtk_fp8_tally_ok(const qgtk_fp8_tally *t, double *q_got, double *q_want);

/* The e4m3 output of one FP8-output call on problem p (testkit/fp8_out.c; the
 * scaffolding tests/test_fp8out.c and tests/test_swiglu.c share): D [p->rows][ldd]
 * bytes, the first `cols` of each row the output; the scales [G][nb][sfd_ld] floats
 * (G the masked groups, else 1; nb = ceil(cols / 128); sfd_ld = qg_sfa_ld(p->m) + 4,
 * so that rows past m exist). Device copies in p->ctx, poisoned (0xFF bytes), and
 * host copies filled by qgtk_fp8_out_download. */
typedef struct {
    const qgtk_problem_data *p;
    int64_t cols, ldd, nb, sfd_ld, sf_groups;
    size_t d_bytes, sf_count;
    CUdeviceptr d, sfd;
    uint8_t *hd; /* [p->rows][ldd] */
    float *hs;   /* [G][nb][sfd_ld] */
} qgtk_fp8_out_buffers;

/* Allocate and poison; ldd must leave at least 16 bytes past cols (they must stay
 * poisoned). On failure nothing is left allocated. */
qg_status qgtk_fp8_out_create(qgtk_fp8_out_buffers *b, const qgtk_problem_data *p, int64_t cols,
                              int64_t ldd);
/* p's arguments with D = b's (d, ldd); the caller adds its qg_fp8_out / qg_swiglu_out
 * with sfd = b->sfd, sfd_ld = b->sfd_ld. */
qg_gemm_args qgtk_fp8_out_args(const qgtk_fp8_out_buffers *b);
/* Synchronize the call's stream, then copy D and the scales to hd, hs. */
qg_status qgtk_fp8_out_download(qgtk_fp8_out_buffers *b, CUstream stream);
/* Whether the call must write row r (p->ref's row is not NaN; p->ref must be computed). */
bool qgtk_fp8_out_row_written(const qgtk_fp8_out_buffers *b, int64_t row);
/* The bits of row r's scale of column group kb, as downloaded. */
uint32_t qgtk_fp8_out_sf_bits(const qgtk_fp8_out_buffers *b, int64_t row, int64_t kb);
/* The poison the call changed where it must not write: bytes past cols, every byte and
 * scale of a row not written, scale rows past m. Needs p->ref. */
int64_t qgtk_fp8_out_untouched(const qgtk_fp8_out_buffers *b);
/* The tally's one-line figures (elements, mismatch, steps, scales, quantization
 * errors, unwritten) and the untouched count, as the FP8-output tests print them. */
void qgtk_fp8_out_text(char *out, size_t len, const qgtk_fp8_tally *t, double q_got,
                       double q_want, int64_t untouched);
/* Free device (in p->ctx) and host memory. */
void qgtk_fp8_out_destroy(qgtk_fp8_out_buffers *b);

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- what every runner takes and returns ---------------------------------- */

typedef struct {
    uint64_t seed;
    /* 0: check every output row (and key); > 0: at most this many rows (and,
     * for the logits, keys per row) spread evenly, for benchmark shapes whose
     * full host reference would take minutes. Poison checks cover every
     * element either way. */
    int sample;
    /* Time the call after a passing check: flush (L2 flush before each timed
     * run), warmup, runs (>= 1). runs = 0: no timing. */
    qgtk_l2_flush_mode flush;
    int warmup, runs;
    /* m-grouped BF16 cases (testkit/bf16_case.c): 0 the default group rows;
     * 1 rows that put B-multicast pairs (two m-blocks of 128 or 64 rows) in
     * every situation: groups of odd and even m-block counts, empty groups,
     * masked_m 0 and M_max, a group of exactly one block, contiguous expert
     * runs of odd lengths with -1 padding runs of odd and even lengths, a
     * partial last segment. */
    int group_pattern;
    /* MQA and paged MQA logits: hand a host copy of the checked call's output
     * (all of it, poison included, as downloaded) to res->output, so that a
     * test can compare two organisations byte for byte. The elements whose value
     * the contract leaves open (MQA plain: keys outside a row's range; paged
     * without clean: columns past a row's length, poison or -inf) are set to the
     * poison bytes (0xFF) in the copy. */
    bool keep_output;
} qgtk_case_opts;

typedef struct {
    bool passed;
    double diff;        /* the case's accuracy figure (NaN when not reached; casts: 0) */
    char why[256];      /* "" when passed */
    bool timed;         /* opts->runs > 0 and the check passed */
    qgtk_timing t;
    double flops;       /* the call's useful work (0 for the casts) */
    double bytes;       /* bytes it must move at least: inputs read and outputs written once */
    uint64_t d_hash;    /* BF16 cases: FNV-1a of D's bytes (all of D's rows x ldd, padding
                           included) after the checked call, so a test can compare two
                           kernels bit for bit; 0 elsewhere */
    void *output;        /* opts->keep_output and the accuracy check passed: the output's bytes
                           (paged with a graph: the first lengths' eager call), kept even when a
                           later step (graph replay, timing) fails: the caller free()s it when
                           non-NULL. NULL otherwise */
    size_t output_bytes;
    int output_esz;      /* bytes an element: 2 (bf16 logits) or 4 (fp32) */
} qgtk_case_result;

/* An index spread: true for `sample` indices of [0, total) spread evenly, or
 * for every index when sample <= 0 or total <= sample. */
static inline bool qgtk_sampled(int64_t idx, int64_t total, int sample) {
    if (sample <= 0 || total <= sample) return true;
    return (idx + 1) * sample / total != idx * sample / total;
}

/* A small xorshift generator for the cases' inputs. */
typedef struct {
    uint64_t s;
} qgtk_rng;
static inline void qgtk_rng_seed(qgtk_rng *r, uint64_t seed) {
    r->s = seed * 0x9E3779B97F4A7C15ull + 1;
}
static inline uint64_t qgtk_rng_u64(qgtk_rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}
static inline double qgtk_rng_unit(qgtk_rng *r) { /* [0, 1) */
    return (double)(qgtk_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}
static inline float qgtk_rng_normal(qgtk_rng *r) {
    const double u = qgtk_rng_unit(r) + 1e-12, w = qgtk_rng_unit(r);
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * w));
}

/* ---- BF16 GEMMs (testkit/bf16_case.c) ------------------------------------- */

typedef struct {
    qg_gemm_kind kind;  /* DENSE, GROUPED_CONTIGUOUS, GROUPED_PSUM, GROUPED_MASKED, K_GROUPED */
    int m, n, k, groups; /* k-grouped: k is ignored (the groups' K are drawn: 0..384, one empty) */
    qg_major a_major, b_major;
    int d_fp32;          /* 0: D bf16; 1: FP32 */
    int c_mode;          /* 0: no C; 1: a separate C; 2: C is D (accumulate in place) */
} qgtk_bf16_case;

/* "NT", "NN", "TN" or "TT": DeepGEMM's name of the majors. */
const char *qgtk_bf16_layout_name(qg_major a_major, qg_major b_major);

/* Run (and check, and time) one BF16 case: qg_bf16_gemm,
 * qg_m_grouped_bf16_gemm_{contiguous,psum,masked} or qg_k_grouped_bf16_gemm
 * by c->kind. @return res->passed. */
bool qgtk_bf16_case_run(qg_context *ctx, CUstream stream, const qgtk_bf16_case *c,
                        const qgtk_case_opts *opts, qgtk_case_result *res);

/* ---- the indexer and HC (testkit/indexer_case.c) --------------------------- */

typedef struct {
    int seq_len, seq_len_kv, heads, head_dim;
    int bf16;           /* logits bf16 (else fp32) */
    int mode;           /* 0 plain, 1 clean (-inf outside the ranges), 2 compressed (max_seqlen_k) */
    int full_ranges;    /* 1: every query's range is [0, seq_len_kv) (benchmarks); 0: random
                         * ranges with empty ones and ends past seq_len_kv */
} qgtk_mqa_case;

typedef struct {
    int batch, next_n, heads, head_dim;
    int bf16, clean;
    int avg_len;        /* context lengths drawn in [0.7, 1.3] x avg_len, some 0..2 */
    int graph;          /* also capture schedule + logits in a CUDA graph and replay it with
                         * new lengths: bitwise the eager result */
} qgtk_paged_case;

typedef struct {
    int m, n, k, splits; /* splits 0: unsplit */
} qgtk_hc_case;

/* qg_fp8_mqa_logits (4 runs, bitwise equal, then checked; timed). */
bool qgtk_mqa_case_run(qg_context *ctx, CUstream stream, const qgtk_mqa_case *c,
                       const qgtk_case_opts *opts, qgtk_case_result *res);
/* qg_paged_mqa_logits_schedule + qg_fp8_paged_mqa_logits (the logits call
 * alone is timed: the schedule is computed ahead in a decode step). */
bool qgtk_paged_case_run(qg_context *ctx, CUstream stream, const qgtk_paged_case *c,
                         const qgtk_case_opts *opts, qgtk_case_result *res);
/* qg_tf32_hc_prenorm_gemm. */
bool qgtk_hc_case_run(qg_context *ctx, CUstream stream, const qgtk_hc_case *c,
                      const qgtk_case_opts *opts, qgtk_case_result *res);

/* ---- the casts (testkit/cast_case.c) -------------------------------------- */

typedef struct {
    qg_cast_kind kind;  /* PER_TOKEN, PER_BLOCK, PER_CHANNEL, SILU_MUL */
    int f32, ue, mn;    /* x float32 (else bf16); UE8M0 scales; M-major scales (per-token, silu) */
    int rows_mask;      /* silu_mul: 1 masked (masked_m), 2 contiguous (m_indices) */
    int groups, m, k;
    int pad;            /* extra elements of each row stride (narrow accesses when odd) */
    int graph;          /* launch through a CUDA graph captured after qg_cast_compile */
} qgtk_cast_case;

/* "per-token", "per-block", "per-channel", "silu-mul" (NULL for the layout kinds). */
const char *qgtk_cast_kind_name(qg_cast_kind kind);

/* One cast on inputs with special values (inf, NaN, -0, e4m3 subnormals,
 * zero rows), outputs poisoned, checked bit for bit. */
bool qgtk_cast_case_run(qg_context *ctx, CUstream stream, const qgtk_cast_case *c,
                        const qgtk_case_opts *opts, qgtk_case_result *res);

#endif /* QGTK_CASES_H */
