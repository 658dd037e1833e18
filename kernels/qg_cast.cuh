/*
 * qg_cast.cuh -- the FP8 cast and scale-layout kernels (issue 51, item 3).
 *
 * One source, one entry point (QG_CAST_ENTRY, default qg_cast_kernel); the JIT's source
 * (src/cast_plan.c, qg__cast_source) #defines which kernel and its
 * compile-time shape before including this file:
 *
 *   QG_CAST_OP       1 per-token 1x128 cast, 2 per-block 128x128 cast,
 *                    3 per-channel 128x1 cast, 4 silu(gate) * up + per-token cast,
 *                    5 scales -> MN-major TMA-aligned float32,
 *                    6 scales -> MN-major TMA-aligned packed UE8M0 (int32),
 *                    7 the k-grouped packed UE8M0 layout
 *   QG_CAST_IN_F32   input float32 (1) or bf16 (0)             (ops 1-4)
 *   QG_CAST_UE8M0    scales rounded up to a power of two       (ops 1-4)
 *   QG_CAST_SF_MN    scales M-major, stride sf_ld (1) or row-major [rows][KB] (0) (ops 1, 4)
 *   QG_CAST_ROW_MASK 0 every row, 1 masked (aux = masked_m[G]), 2 contiguous
 *                    (aux = m_indices[rows], a row < 0 is padding) (op 4; op 1 takes 0)
 *   QG_CAST_K        elements of a row: K (ops 1, 2), N of the output (op 4),
 *                    columns (op 3), scale columns sf_k (ops 5, 6)
 *   QG_CAST_N        rows of one group (op 2)
 *   QG_CAST_VEC      elements per global access (1, 2, 4 or 8 bf16 / 4 float): the planner's
 *                    alignment of the pointers, row strides and K
 *   QG_CAST_THREADS, QG_CAST_UNROLL   block size, items per thread per round (op 1, 4)
 *   QG_CAST_MIN_CTAS the CTAs per SM the planner's grid assumes resident, as the
 *                    launch bounds' minimum (a register cap; 1 = none)
 *   QG_CAST_LEAN     1: fewer instructions an element, the same bytes (ops 1-4; A/B runs,
 *                    QGEMM_CAST_VARIANT=lean; absent = 0): the e4m3 fix-up of values past
 *                    464 taken only by warps holding such a group (a warp vote, not a
 *                    select on every element), bf16 amax on packed pairs (max.u16x2), and
 *                    the per-channel quotient by a reciprocal and an fma correction
 *                    (bf16 input; the IEEE quotient's e4m3 byte on every (x, amax) pair
 *                    of bf16 values, checked exhaustively: bench/results/2026-11-29-cpu-cast-lean)
 *   QG_CAST_RING     op 3 only (QGEMM_CAST_VARIANT word ring; absent = 0): the stages of a
 *                    shared-memory ring that cp.async.bulk fills with 128-row tiles while the
 *                    CTA reduces and quantizes an earlier one (persistent CTAs; 16-byte
 *                    accesses only, QG_CAST_VEC = 16 bytes); the same bytes as the plain kernel
 *   QG_CAST_LUT      op 4 with bf16 input only (word lut; absent = 0): silu of the gate read
 *                    from a shared-memory table of every bf16 gate in [2^-24, 2^8) that the
 *                    CTA computes first with the same expression (persistent CTAs, the next
 *                    round's loads issued before this round's math); the same bytes
 *   QG_CAST_GROUPS, QG_CAST_GRAN_K, QG_CAST_K_ALIGN, QG_CAST_PSUM   op 7 only
 *   QG_CAST_PARAMS_BYTES  sizeof the host's qg_cast_params (checked)
 *
 * Every kernel starts with griddepcontrol.wait, so it may be launched with
 * programmatic dependent launch behind the kernel that writes its input (a
 * no-op otherwise).
 *
 * Bitwise contract: the torch helpers of python/qgemm/_torch_helpers.py as
 * torch runs them on the GPU:
 *   amax  = max |x| over the group (exact), clamped below at 1e-4f (NaN stays NaN);
 *   sf    = amax * fp32(1/448)  -- torch's tensor / python scalar on CUDA multiplies
 *           by the reciprocal (BinaryDivTrueKernel.cu, is_cpu_scalar(2));
 *   UE8M0: sf = 2^ceil(log2 sf) by the exponent bits, clamped to [2^-126, 2^127];
 *   q     = x * (reciprocal(amax) * 448)   (torch: 448.0 / amax is
 *           amax.reciprocal() * 448, Tensor.__rtruediv__), or x / sf (UE8M0, and the
 *           per-channel cast), here x * (1 / sf) where 1 / sf is an exact power of two;
 *   bytes = c10's fp8e4m3fn_from_fp32_value: round to nearest even; |v| > 464 (and
 *           inf, NaN) give 0x7F | sign. cvt.rn.satfinite agrees below 464; the groups
 *           whose amax * scale exceeds it (only inf / NaN inputs) take the exact path.
 * Every operation is an IEEE-rounded intrinsic (__fmul_rn, __fdiv_rn), so no
 * compile flag (contraction, fast math) changes a bit -- except silu, which is
 * torch's expression as the compiler contracts it by default (see
 * qg_cast_silu_mul); the JIT compiles without -ftz and -use_fast_math.
 */
/* The entry's name: the library names each op's kernel (src/cast.c:
 * qg_per_token_cast_kernel, qg_transpose_sf_kernel, ...) so profiles say
 * what ran; the standalone harnesses keep qg_cast_kernel. */
#ifndef QG_CAST_ENTRY
#define QG_CAST_ENTRY qg_cast_kernel
#endif
#ifndef QG_CAST_OP
#error "qg_cast.cuh: the JIT defines QG_CAST_OP and the shape first"
#endif

#include "qg_wgmma_placeholder.cuh" /* (a cast calls no wgmma) */
#include "qg_ptx.cuh"

/* The kernel's one parameter, by value; the host's twin is src/cast_plan.h's
 * qg_cast_params (same fields, same order, checked by size). */
struct qg_cast_params {
    const void *in;
    void *out;
    void *sf;
    const int32_t *aux;   /* masked_m [G], m_indices [rows] or the k-grouped layout [G] */
    int64_t rows;         /* ops 1, 4: G * M; op 2: G * N; op 3: M */
    int64_t ld_in;        /* elements between input rows */
    int64_t ld_out;       /* elements between output rows */
    int64_t in_stride[3]; /* ops 5, 6: input strides (elements) of g, mn, k */
    int32_t m;            /* ops 1, 4: rows per group; ops 5-7: mn */
    int32_t groups;       /* ops 1, 2, 4, 5, 6: G */
    int32_t sf_ld;        /* M-major scale stride (ops 1, 4 with QG_CAST_SF_MN; ops 5, 6) */
    int32_t sf_k;         /* op 7: scale rows (K blocks) of the input */
    int32_t packed_sf_k;  /* op 7: packed rows of the output */
    int32_t reserved;
};
static_assert(sizeof(qg_cast_params) == QG_CAST_PARAMS_BYTES, "host and kernel disagree on qg_cast_params");

#define QG_CAST_OP_TOKEN 1
#define QG_CAST_OP_BLOCK 2
#define QG_CAST_OP_CHANNEL 3
#define QG_CAST_OP_SILU 4
#define QG_CAST_OP_SF_MN 5
#define QG_CAST_OP_SF_PACK 6
#define QG_CAST_OP_SF_PACK_KGROUPED 7
#ifndef QG_CAST_LEAN
#define QG_CAST_LEAN 0
#endif
#ifndef QG_CAST_RING
#define QG_CAST_RING 0
#endif
#ifndef QG_CAST_LUT
#define QG_CAST_LUT 0
#endif

#if QG_CAST_OP <= QG_CAST_OP_SILU
/* ---- the quantizing kernels: common parts -------------------------------- */

/* float32(1 / 448): torch's inv_b (double 1/448 rounded to float; the same as
 * 1.0f / 448.0f). */
#define QG_CAST_INV448 __uint_as_float(0x3B124925u)
#define QG_CAST_AMAX_FLOOR 1e-4f
/* c10's conversion rounds |v| in (464, 480) to the NaN pattern; cvt saturates. */
#define QG_CAST_E4M3_EXACT_LIMIT 464.0f

/* Each thread takes 16 input bytes of a group: 8 bf16 or 4 floats. */
#if QG_CAST_IN_F32
#define QG_CAST_EPT 4
#define QG_CAST_IN_BYTES 4
#else
#define QG_CAST_EPT 8
#define QG_CAST_IN_BYTES 2
#endif
#define QG_CAST_CHUNKS (QG_CAST_EPT / QG_CAST_VEC)
#define QG_CAST_CHUNK_BYTES (QG_CAST_VEC * QG_CAST_IN_BYTES)
static_assert(QG_CAST_EPT % QG_CAST_VEC == 0, "QG_CAST_VEC must divide the elements per thread");
static_assert(QG_CAST_K % QG_CAST_VEC == 0, "QG_CAST_VEC must divide QG_CAST_K");

union qg_cast_raw {
    uint4 q;
    uint2 d[2];
    uint32_t w[4];
    uint16_t h[8];
};

/* The thread's 16 bytes of a row from element `col` on (a multiple of EPT):
 * chunks of QG_CAST_VEC elements, each either wholly below `limit` (loaded) or
 * wholly at or past it (zero: torch's zero padding for the amax). */
QG_DEVICE void qg_cast_load(qg_cast_raw &r, const char *row, int col, int limit, bool live) {
#pragma unroll
    for (int c = 0; c < QG_CAST_CHUNKS; ++c) {
        const bool ok = live && col + c * QG_CAST_VEC < limit;
        const char *p = row + (int64_t)(col + c * QG_CAST_VEC) * QG_CAST_IN_BYTES;
#if QG_CAST_CHUNK_BYTES == 16
        r.q = ok ? qg_ld_stream_v4(p) : make_uint4(0, 0, 0, 0);
#elif QG_CAST_CHUNK_BYTES == 8
        r.d[c] = ok ? qg_ld_stream_v2(p) : make_uint2(0, 0);
#elif QG_CAST_CHUNK_BYTES == 4
        r.w[c] = ok ? qg_ld_stream_b32(p) : 0u;
#else
        r.h[c] = ok ? qg_ld_stream_b16(p) : (uint16_t)0;
#endif
    }
}

#if QG_CAST_LUT
/* qg_cast_load, the chunks past `limit` (or all, !live) holding `fill` in each 32-bit
 * word instead of zero (the silu table's padding gate: qg_cast_lut_index2). */
QG_DEVICE void qg_cast_load_fill(qg_cast_raw &r, const char *row, int col, int limit, bool live,
                                 uint32_t fill) {
#pragma unroll
    for (int c = 0; c < QG_CAST_CHUNKS; ++c) {
        const bool ok = live && col + c * QG_CAST_VEC < limit;
        const char *p = row + (int64_t)(col + c * QG_CAST_VEC) * QG_CAST_IN_BYTES;
#if QG_CAST_CHUNK_BYTES == 16
        r.q = ok ? qg_ld_stream_v4(p) : make_uint4(fill, fill, fill, fill);
#elif QG_CAST_CHUNK_BYTES == 8
        r.d[c] = ok ? qg_ld_stream_v2(p) : make_uint2(fill, fill);
#elif QG_CAST_CHUNK_BYTES == 4
        r.w[c] = ok ? qg_ld_stream_b32(p) : fill;
#else
        r.h[c] = ok ? qg_ld_stream_b16(p) : (uint16_t)fill;
#endif
    }
}
#endif

/* The thread's EPT values as floats (bf16 -> float is exact). */
QG_DEVICE void qg_cast_decode(const qg_cast_raw &r, float (&v)[QG_CAST_EPT]) {
#if QG_CAST_IN_F32
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = __uint_as_float(r.w[i]);
#else
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[2 * i] = __uint_as_float(r.w[i] << 16);
        v[2 * i + 1] = __uint_as_float(r.w[i] & 0xFFFF0000u);
    }
#endif
}

/* max |v| as bits: the unsigned order of |float| bits is the order of the
 * values, with NaN above inf -- so a NaN propagates, as torch's amax does. */
QG_DEVICE uint32_t qg_cast_abs_max(const float (&v)[QG_CAST_EPT], uint32_t a) {
#pragma unroll
    for (int i = 0; i < QG_CAST_EPT; ++i) a = max(a, __float_as_uint(v[i]) & 0x7FFFFFFFu);
    return a;
}

#if QG_CAST_LEAN && !QG_CAST_IN_F32
/* qg_cast_abs_max of the decoded values, from the raw bf16 pairs: |bf16| as an
 * unsigned 16-bit number orders the values as |float| bits do (a float's bits are
 * the bf16's shifted left 16; NaN above inf), so one and + one max.u16x2 (PTX ISA
 * 9.7.3, sm_90) a pair replace a decode, an and and a max an element. */
QG_DEVICE uint32_t qg_cast_abs_max_raw(const qg_cast_raw &r, uint32_t a) {
    uint32_t m = r.w[0] & 0x7FFF7FFFu;
#pragma unroll
    for (int i = 1; i < 4; ++i)
        asm("max.u16x2 %0, %0, %1;" : "+r"(m) : "r"(r.w[i] & 0x7FFF7FFFu));
    return max(a, max(m << 16, m & 0xFFFF0000u));
}
#endif

/* torch's ceil_to_ue8m0 of a (positive) scale. */
QG_DEVICE float qg_cast_ceil_ue8m0(float s) {
    const uint32_t bits = __float_as_uint(s) & 0x7FFFFFFFu;
    int e = (int)(bits >> 23) + ((bits & 0x7FFFFFu) != 0u);
    e = min(max(e, 1), 254);
    return __uint_as_float((uint32_t)e << 23);
}

/* The group's scale (what is stored) and multiplier (what x is multiplied by)
 * from the bits of its amax. */
QG_DEVICE void qg_cast_scale(uint32_t amax_bits, float &sf, float &mult) {
    float amax = __uint_as_float(amax_bits);
    if (amax < QG_CAST_AMAX_FLOOR) amax = QG_CAST_AMAX_FLOOR; /* NaN compares false: kept */
#if QG_CAST_UE8M0
    sf = qg_cast_ceil_ue8m0(__fmul_rn(amax, QG_CAST_INV448));
    mult = __fdiv_rn(1.0f, sf); /* a power of two, exact: x * mult == x / sf */
#else
    sf = __fmul_rn(amax, QG_CAST_INV448);
    mult = __fmul_rn(__fdiv_rn(1.0f, amax), 448.0f);
#endif
}

/* e4m3 byte of v as c10's conversion gives it, for any v. */
QG_DEVICE uint32_t qg_cast_e4m3_exact(float v, uint32_t rounded) {
    return fabsf(v) <= QG_CAST_E4M3_EXACT_LIMIT ? rounded
                                                : (0x7Fu | ((__float_as_uint(v) >> 24) & 0x80u));
}

/* Four scaled values -> four e4m3 bytes (v[0] lowest). `exact`: every |v| is
 * known to be <= 464 (cvt alone is c10's conversion there). */
QG_DEVICE uint32_t qg_cast_pack4(float a, float b, float c, float d, bool exact) {
    uint32_t lo = qg_cvt_e4m3x2(a, b), hi = qg_cvt_e4m3x2(c, d);
    if (!exact) {
        lo = qg_cast_e4m3_exact(a, lo & 0xFFu) | qg_cast_e4m3_exact(b, lo >> 8) << 8;
        hi = qg_cast_e4m3_exact(c, hi & 0xFFu) | qg_cast_e4m3_exact(d, hi >> 8) << 8;
    }
    return lo | hi << 16;
}

union qg_cast_bytes {
    uint2 d;
    uint32_t w[2];
    uint16_t h[4];
    unsigned char b[8];
};

/* The thread's EPT output bytes to row + col, chunk by chunk as loaded. */
QG_DEVICE void qg_cast_store(char *row, int col, int limit, const qg_cast_bytes &o) {
#pragma unroll
    for (int c = 0; c < QG_CAST_CHUNKS; ++c) {
        if (col + c * QG_CAST_VEC >= limit) continue;
        char *p = row + col + c * QG_CAST_VEC;
#if QG_CAST_VEC == 8
        *(uint2 *)p = o.d;
#elif QG_CAST_VEC == 4
        *(uint32_t *)p = o.w[c];
#elif QG_CAST_VEC == 2
        *(uint16_t *)p = o.h[c];
#else
        *(unsigned char *)p = o.b[c];
#endif
    }
}

#if QG_CAST_LEAN
/* A warp-uniform choice between the plain conversion (every group of the warp
 * within +-464 after scaling: cvt is c10's conversion there) and the exact one,
 * so the common case carries no per-element fix-up. Call with the whole warp. */
#define QG_CAST_WARP_EXACT(e) __all_sync(0xFFFFFFFFu, (e))
#endif

/* x * mult for the thread's values, packed. */
QG_DEVICE void qg_cast_quantize(const float (&v)[QG_CAST_EPT], float mult, bool exact,
                                qg_cast_bytes &o) {
    float q[QG_CAST_EPT];
#pragma unroll
    for (int i = 0; i < QG_CAST_EPT; ++i) q[i] = __fmul_rn(v[i], mult);
#pragma unroll
    for (int i = 0; i < QG_CAST_EPT / 4; ++i)
        o.w[i] = qg_cast_pack4(q[4 * i], q[4 * i + 1], q[4 * i + 2], q[4 * i + 3], exact);
}
#endif /* quantizing kernels */

#if QG_CAST_OP == QG_CAST_OP_TOKEN || QG_CAST_OP == QG_CAST_OP_SILU
/* ---- per-token 1x128 (op 1) and silu(gate) * up + per-token (op 4) --------
 *
 * Item = one 128-wide group of one row; TPG threads (16 bf16 / 32 float) own
 * it, 16 input bytes each, so a warp covers 512 bytes per item round. Warps
 * walk the items grid-stride, QG_CAST_UNROLL items per thread per round with
 * every load issued before the first reduction (bytes in flight). The loop
 * trip count is uniform per warp (its shuffles need every lane). */
#define QG_CAST_TPG (128 / QG_CAST_EPT)
#define QG_CAST_IPW (32 / QG_CAST_TPG)
#define QG_CAST_KB ((QG_CAST_K + 127) / 128)

/* silu(g) * u as torch computes F.silu(g) * u in float32. silu is torch's
 * expression verbatim (ActivationSiluKernel.cu: x / (1 + exp(-x))), left to the
 * compiler on purpose: with the default -fmad=true (torch's nvcc build and the
 * JIT's NVRTC alike) the last multiply of expf's inline expansion and the
 * `1 +` fuse into one fma, and torch's bits are those of the fused form (an
 * __fadd_rn here would round twice and differ). The product with u is a
 * separate torch kernel: one rounding. */
QG_DEVICE float qg_cast_silu(float g) { return g / (1.0f + expf(-g)); }
QG_DEVICE float qg_cast_silu_mul(float g, float u) { return __fmul_rn(qg_cast_silu(g), u); }

#if !QG_CAST_LUT
extern "C" __global__ void __launch_bounds__(QG_CAST_THREADS, QG_CAST_MIN_CTAS)
QG_CAST_ENTRY(const __grid_constant__ qg_cast_params p) {
    qg_grid_dependency_wait(); /* launched with PDL: the producer's writes are visible */
    const int lane = (int)(threadIdx.x & 31u);
    const int sub = lane % QG_CAST_TPG;
    const int64_t total = p.rows * QG_CAST_KB;
    const int64_t warp = ((int64_t)blockIdx.x * QG_CAST_THREADS + threadIdx.x) / 32;
    const int64_t num_warps = (int64_t)gridDim.x * (QG_CAST_THREADS / 32);
    const int64_t round_items = (int64_t)QG_CAST_IPW * QG_CAST_UNROLL;
    const char *in = (const char *)p.in;
    char *out = (char *)p.out;
    float *sf = (float *)p.sf;

    for (int64_t base = warp * round_items; base < total; base += num_warps * round_items) {
        qg_cast_raw raw[QG_CAST_UNROLL];
#if QG_CAST_OP == QG_CAST_OP_SILU
        qg_cast_raw raw_up[QG_CAST_UNROLL];
#endif
        int64_t row[QG_CAST_UNROLL];
        int kb[QG_CAST_UNROLL];
        bool live[QG_CAST_UNROLL];
#pragma unroll
        for (int u = 0; u < QG_CAST_UNROLL; ++u) {
            const int64_t item = base + u * QG_CAST_IPW + lane / QG_CAST_TPG;
            row[u] = item / QG_CAST_KB;
            kb[u] = (int)(item - row[u] * QG_CAST_KB);
            live[u] = item < total;
#if QG_CAST_ROW_MASK == 1
            if (live[u]) {
                const int64_t g = row[u] / p.m;
                live[u] = row[u] - g * p.m < (int64_t)__ldg(p.aux + g); /* masked_m; negative: 0 */
            }
#elif QG_CAST_ROW_MASK == 2
            if (live[u]) live[u] = __ldg(p.aux + row[u]) >= 0;
#endif
            const char *r = in + row[u] * p.ld_in * QG_CAST_IN_BYTES;
            const int col = kb[u] * 128 + sub * QG_CAST_EPT;
            qg_cast_load(raw[u], r, col, QG_CAST_K, live[u]);
#if QG_CAST_OP == QG_CAST_OP_SILU
            qg_cast_load(raw_up[u], r + (int64_t)QG_CAST_K * QG_CAST_IN_BYTES, col, QG_CAST_K,
                         live[u]);
#endif
        }
#pragma unroll
        for (int u = 0; u < QG_CAST_UNROLL; ++u) {
            float v[QG_CAST_EPT];
            qg_cast_decode(raw[u], v);
#if QG_CAST_OP == QG_CAST_OP_SILU
            {
                float up[QG_CAST_EPT];
                qg_cast_decode(raw_up[u], up);
#pragma unroll
                for (int i = 0; i < QG_CAST_EPT; ++i) v[i] = qg_cast_silu_mul(v[i], up[i]);
            }
#endif
#if QG_CAST_LEAN && !QG_CAST_IN_F32 && QG_CAST_OP == QG_CAST_OP_TOKEN
            uint32_t amax = qg_cast_abs_max_raw(raw[u], 0u);
#else
            uint32_t amax = qg_cast_abs_max(v, 0u);
#endif
#pragma unroll
            for (int off = QG_CAST_TPG / 2; off > 0; off >>= 1)
                amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
#if QG_CAST_LEAN
            float scale, mult;
            qg_cast_scale(amax, scale, mult);
            /* the vote before the dead lanes leave: every lane of the warp takes part */
            const bool exact = QG_CAST_WARP_EXACT(
                !live[u] || __fmul_rn(__uint_as_float(amax), mult) <= QG_CAST_E4M3_EXACT_LIMIT);
            if (!live[u]) continue;
            qg_cast_bytes o;
            if (exact)
                qg_cast_quantize(v, mult, true, o);
            else
                qg_cast_quantize(v, mult, false, o);
#else
            if (!live[u]) continue;
            float scale, mult;
            qg_cast_scale(amax, scale, mult);
            const bool exact = __fmul_rn(__uint_as_float(amax), mult) <= QG_CAST_E4M3_EXACT_LIMIT;
            qg_cast_bytes o;
            qg_cast_quantize(v, mult, exact, o);
#endif
            qg_cast_store(out + row[u] * p.ld_out, kb[u] * 128 + sub * QG_CAST_EPT, QG_CAST_K, o);
            if (sub == 0) {
#if QG_CAST_SF_MN
                const int64_t g = row[u] / p.m;
                sf[(g * QG_CAST_KB + kb[u]) * p.sf_ld + (row[u] - g * p.m)] = scale;
#else
                sf[row[u] * QG_CAST_KB + kb[u]] = scale;
#endif
            }
        }
    }
}
#else /* QG_CAST_LUT */
/* ---- silu(gate) * up from a table (op 4, QG_CAST_LUT; bf16 input) --------------
 *
 * A bf16 gate takes one of 2^16 values, so silu(gate) does too. Each CTA first
 * computes it (qg_cast_silu: the same expression, so the same bits) for every gate
 * whose biased exponent lies in [QG_CAST_LUT_E0, QG_CAST_LUT_E0 + 32) -- |g| in
 * [2^-24, 2^8), both signs: 2 x 32 binades x 128 mantissas = 8192 floats, 32 KB of
 * shared memory -- and every element then reads it there: about 5 integer operations
 * and a shared load a gate in place of expf's expansion and an IEEE division (~22
 * instructions, two of them MUFU), which kept the plain kernel's warps busy computing
 * while HBM idled (H200: 70-78% of the copy bandwidth). A thread whose 8 gates are
 * not all in the table (zeros, subnormals, |g| >= 256, inf, NaN) computes its 8 with
 * qg_cast_silu_mul as the plain kernel does. The CTAs are persistent (one table
 * each, built while the first round's loads are in flight) and walk the items
 * grid-stride as op 1, each round's successor loaded before its math. */
#define QG_CAST_LUT_E0 103 /* the table's lowest biased exponent: 2^-24 */
#define QG_CAST_LUT_HALF 4096 /* entries per sign: 32 binades x 128 mantissas */
#define QG_CAST_LUT_P0 (QG_CAST_LUT_E0 << 7) /* the bf16 bits of 2^-24 */
static_assert(!QG_CAST_IN_F32 && QG_CAST_OP == QG_CAST_OP_SILU, "the silu table takes bf16 gates");

/* Two table indices from a pair of bf16 gates w (element 2i in the low half):
 * d = |g| bits - P0 per half is the entry within the sign's 4096 when < 4096;
 * `bad` collects bits 12-15 of each half, set when a gate is outside the table
 * (below P0 the half borrows: 0x10000 - P0 + .. >= 0x1000; the high half's borrow
 * sets bits 28-31). The sign goes to bit 12 (13-bit index [sign][d]); the low
 * index is the low 16 bits, the high one bits 16-31 -- both < 8192 when bad is 0. */
QG_DEVICE uint32_t qg_cast_lut_index2(uint32_t w, uint32_t &bad) {
    const uint32_t d = (w & 0x7FFF7FFFu) - (uint32_t)QG_CAST_LUT_P0 * 0x10001u;
    bad |= d & 0xF000F000u;
    return d | ((w >> 3) & 0x10001000u);
}

/* One round of a thread's items: the raw gate and up chunks and where they go. */
struct qg_cast_lut_round {
    qg_cast_raw gate[QG_CAST_UNROLL], up[QG_CAST_UNROLL];
    int64_t row[QG_CAST_UNROLL];
    int kb[QG_CAST_UNROLL];
    bool live[QG_CAST_UNROLL];
};

/* Item item of each slot as (row, kb) once; later rounds advance it by the grid's
 * stride (qg_cast_lut_advance) instead of dividing 64-bit numbers again. */
QG_DEVICE void qg_cast_lut_first(qg_cast_lut_round &r, int64_t base, int lane) {
#pragma unroll
    for (int u = 0; u < QG_CAST_UNROLL; ++u) {
        const int64_t item = base + u * QG_CAST_IPW + lane / QG_CAST_TPG;
        r.row[u] = item / QG_CAST_KB;
        r.kb[u] = (int)(item - r.row[u] * QG_CAST_KB);
    }
}

QG_DEVICE void qg_cast_lut_advance(qg_cast_lut_round &r, const qg_cast_lut_round &from,
                                   int64_t drow, int dkb) {
#pragma unroll
    for (int u = 0; u < QG_CAST_UNROLL; ++u) {
        int kb = from.kb[u] + dkb;
        const bool carry = kb >= QG_CAST_KB;
        r.kb[u] = carry ? kb - QG_CAST_KB : kb;
        r.row[u] = from.row[u] + drow + carry;
    }
}

/* The loads of a round whose (row, kb) are set (op 1's items; rows past the end
 * and dead rows load nothing). Padding gates hold 2^-24 (in the table; its silu
 * times the zero up is +0, as silu(0) * 0 in the plain kernel), so they never leave
 * the table path. */
QG_DEVICE void qg_cast_lut_load(qg_cast_lut_round &r, const qg_cast_params &p, int sub) {
    const char *in = (const char *)p.in;
#pragma unroll
    for (int u = 0; u < QG_CAST_UNROLL; ++u) {
        r.live[u] = r.row[u] < p.rows;
#if QG_CAST_ROW_MASK == 1
        if (r.live[u]) {
            const int64_t g = r.row[u] / p.m;
            r.live[u] = r.row[u] - g * p.m < (int64_t)__ldg(p.aux + g); /* masked_m; negative: 0 */
        }
#elif QG_CAST_ROW_MASK == 2
        if (r.live[u]) r.live[u] = __ldg(p.aux + r.row[u]) >= 0;
#endif
        const char *row = in + r.row[u] * p.ld_in * QG_CAST_IN_BYTES;
        const int col = r.kb[u] * 128 + sub * QG_CAST_EPT;
        qg_cast_load_fill(r.gate[u], row, col, QG_CAST_K, r.live[u], (uint32_t)QG_CAST_LUT_P0 * 0x10001u);
        qg_cast_load(r.up[u], row + (int64_t)QG_CAST_K * QG_CAST_IN_BYTES, col, QG_CAST_K, r.live[u]);
    }
}

/* silu(gate) * up of a loaded round, then op 1's per-token cast of each item. */
QG_DEVICE void qg_cast_lut_round_cast(const qg_cast_lut_round &cur, const float *lut,
                                      const qg_cast_params &p, int sub) {
    char *out = (char *)p.out;
    float *sf = (float *)p.sf;
#pragma unroll
    for (int u = 0; u < QG_CAST_UNROLL; ++u) {
        float v[QG_CAST_EPT], up[QG_CAST_EPT];
        qg_cast_decode(cur.up[u], up);
        uint32_t bad = 0, idx[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) idx[i] = qg_cast_lut_index2(cur.gate[u].w[i], bad);
        if (bad == 0) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                v[2 * i] = __fmul_rn(lut[idx[i] & 0xFFFFu], up[2 * i]);
                v[2 * i + 1] = __fmul_rn(lut[idx[i] >> 16], up[2 * i + 1]);
            }
        } else { /* a gate outside the table: the plain kernel's arithmetic */
            float g[QG_CAST_EPT];
            qg_cast_decode(cur.gate[u], g);
#pragma unroll
            for (int i = 0; i < QG_CAST_EPT; ++i) v[i] = qg_cast_silu_mul(g[i], up[i]);
        }
        const bool live = cur.live[u];
        uint32_t amax = qg_cast_abs_max(v, 0u);
#pragma unroll
        for (int off = QG_CAST_TPG / 2; off > 0; off >>= 1)
            amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
        float scale, mult;
        qg_cast_scale(amax, scale, mult);
        qg_cast_bytes o;
#if QG_CAST_LEAN
        /* the vote before the dead lanes leave: every lane of the warp takes part */
        const bool exact = QG_CAST_WARP_EXACT(
            !live || __fmul_rn(__uint_as_float(amax), mult) <= QG_CAST_E4M3_EXACT_LIMIT);
        if (!live) continue;
        if (exact)
            qg_cast_quantize(v, mult, true, o);
        else
            qg_cast_quantize(v, mult, false, o);
#else
        if (!live) continue;
        const bool exact = __fmul_rn(__uint_as_float(amax), mult) <= QG_CAST_E4M3_EXACT_LIMIT;
        qg_cast_quantize(v, mult, exact, o);
#endif
        qg_cast_store(out + cur.row[u] * p.ld_out, cur.kb[u] * 128 + sub * QG_CAST_EPT, QG_CAST_K, o);
        if (sub == 0) {
#if QG_CAST_SF_MN
            const int64_t g = cur.row[u] / p.m;
            sf[(g * QG_CAST_KB + cur.kb[u]) * p.sf_ld + (cur.row[u] - g * p.m)] = scale;
#else
            sf[cur.row[u] * QG_CAST_KB + cur.kb[u]] = scale;
#endif
        }
    }
}

extern "C" __global__ void __launch_bounds__(QG_CAST_THREADS, QG_CAST_MIN_CTAS)
QG_CAST_ENTRY(const __grid_constant__ qg_cast_params p) {
    __shared__ float lut[2 * QG_CAST_LUT_HALF];
    qg_grid_dependency_wait(); /* launched with PDL: the producer's writes are visible */
    const int lane = (int)(threadIdx.x & 31u);
    const int sub = lane % QG_CAST_TPG;
    const int64_t total = p.rows * QG_CAST_KB;
    const int64_t warp = ((int64_t)blockIdx.x * QG_CAST_THREADS + threadIdx.x) / 32;
    const int64_t num_warps = (int64_t)gridDim.x * (QG_CAST_THREADS / 32);
    const int64_t round_items = (int64_t)QG_CAST_IPW * QG_CAST_UNROLL;
    const int64_t stride = num_warps * round_items;
    const int64_t drow = stride / QG_CAST_KB;
    const int dkb = (int)(stride - drow * QG_CAST_KB);

    /* two rounds in registers: one cast while the next one's loads are in flight */
    qg_cast_lut_round a, b;
    int64_t base = warp * round_items;
    qg_cast_lut_first(a, base, lane);
    qg_cast_lut_load(a, p, sub); /* in flight during the build */
    for (int i = (int)threadIdx.x; i < 2 * QG_CAST_LUT_HALF; i += QG_CAST_THREADS) {
        const uint32_t bits = (uint32_t)(i / QG_CAST_LUT_HALF) << 15 | (uint32_t)(QG_CAST_LUT_P0 + i % QG_CAST_LUT_HALF);
        lut[i] = qg_cast_silu(__uint_as_float(bits << 16));
    }
    __syncthreads();
    while (base < total) {
        qg_cast_lut_advance(b, a, drow, dkb);
        qg_cast_lut_load(b, p, sub);
        qg_cast_lut_round_cast(a, lut, p, sub);
        if ((base += stride) >= total) break;
        qg_cast_lut_advance(a, b, drow, dkb);
        qg_cast_lut_load(a, p, sub);
        qg_cast_lut_round_cast(b, lut, p, sub);
        base += stride;
    }
}
#endif /* QG_CAST_LUT */
#endif /* ops 1, 4 */

#if QG_CAST_OP == QG_CAST_OP_BLOCK
/* ---- per-block 128x128 (op 2) ---------------------------------------------
 *
 * One CTA per 128x128 block (grid-stride over G * ceil(N/128) * ceil(K/128)
 * blocks, the scale index): TPR threads per block row (16 bytes each), RPS rows
 * per step, the whole block held in registers (64 values a thread at 256
 * threads), so x is read once. Rows past N and columns past K are torch's zero
 * padding; a block never spans two groups. */
#define QG_CAST_TPR (128 / QG_CAST_EPT)
#define QG_CAST_RPS (QG_CAST_THREADS / QG_CAST_TPR)
#define QG_CAST_STEPS (128 / QG_CAST_RPS)
#define QG_CAST_NB ((QG_CAST_N + 127) / 128)
#define QG_CAST_KB ((QG_CAST_K + 127) / 128)
static_assert(QG_CAST_THREADS % QG_CAST_TPR == 0 && 128 % QG_CAST_RPS == 0, "block shape");

extern "C" __global__ void __launch_bounds__(QG_CAST_THREADS, QG_CAST_MIN_CTAS)
QG_CAST_ENTRY(const __grid_constant__ qg_cast_params p) {
    qg_grid_dependency_wait(); /* launched with PDL: the producer's writes are visible */
    __shared__ uint32_t partial[2][QG_CAST_THREADS / 32];
    const int tid = (int)threadIdx.x, sub = tid % QG_CAST_TPR, r0 = tid / QG_CAST_TPR;
    const int64_t total = (int64_t)p.groups * QG_CAST_NB * QG_CAST_KB;
    const char *in = (const char *)p.in;
    char *out = (char *)p.out;
    float *sf = (float *)p.sf;
    int parity = 0;
    for (int64_t b = blockIdx.x; b < total; b += gridDim.x, parity ^= 1) {
        const int64_t g = b / (QG_CAST_NB * QG_CAST_KB);
        const int rest = (int)(b - g * (QG_CAST_NB * QG_CAST_KB));
        const int nb = rest / QG_CAST_KB, kb = rest % QG_CAST_KB;
        const int col = kb * 128 + sub * QG_CAST_EPT;
        qg_cast_raw raw[QG_CAST_STEPS];
#pragma unroll
        for (int s = 0; s < QG_CAST_STEPS; ++s) {
            const int n = nb * 128 + s * QG_CAST_RPS + r0;
            const char *r = in + (g * QG_CAST_N + n) * p.ld_in * QG_CAST_IN_BYTES;
            qg_cast_load(raw[s], r, col, QG_CAST_K, n < QG_CAST_N);
        }
        uint32_t amax = 0;
#pragma unroll
        for (int s = 0; s < QG_CAST_STEPS; ++s) {
#if QG_CAST_LEAN && !QG_CAST_IN_F32
            amax = qg_cast_abs_max_raw(raw[s], amax);
#else
            float v[QG_CAST_EPT];
            qg_cast_decode(raw[s], v);
            amax = qg_cast_abs_max(v, amax);
#endif
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
        /* Two buffers by parity: a warp may write the next block's partial
         * while a slower one still reads this block's. */
        if ((tid & 31) == 0) partial[parity][tid / 32] = amax;
        __syncthreads();
#pragma unroll
        for (int w = 0; w < QG_CAST_THREADS / 32; ++w) amax = max(amax, partial[parity][w]);
        float scale, mult;
        qg_cast_scale(amax, scale, mult);
        const bool exact = __fmul_rn(__uint_as_float(amax), mult) <= QG_CAST_E4M3_EXACT_LIMIT;
        if (tid == 0) sf[b] = scale;
#if QG_CAST_LEAN && QG_CAST_CHUNK_BYTES == 16 && !QG_CAST_IN_F32
        /* exact is the block's (one amax): the branch is uniform, the fix-up compiled only
         * into the loop of blocks holding inf / NaN. (bf16 with full-width accesses only:
         * float input's two loops spilled at the two-CTA register cap, H200 2026-11-29.) */
        if (exact) {
#pragma unroll
            for (int s = 0; s < QG_CAST_STEPS; ++s) {
                const int n = nb * 128 + s * QG_CAST_RPS + r0;
                if (n >= QG_CAST_N) continue;
                float v[QG_CAST_EPT];
                qg_cast_decode(raw[s], v);
                qg_cast_bytes o;
                qg_cast_quantize(v, mult, true, o);
                qg_cast_store(out + (g * QG_CAST_N + n) * p.ld_out, col, QG_CAST_K, o);
            }
            continue;
        }
#endif
#pragma unroll
        for (int s = 0; s < QG_CAST_STEPS; ++s) {
            const int n = nb * 128 + s * QG_CAST_RPS + r0;
            if (n >= QG_CAST_N) continue;
            float v[QG_CAST_EPT];
            qg_cast_decode(raw[s], v);
            qg_cast_bytes o;
            qg_cast_quantize(v, mult, exact, o);
            qg_cast_store(out + (g * QG_CAST_N + n) * p.ld_out, col, QG_CAST_K, o);
        }
    }
}
#endif /* op 2 */

#if QG_CAST_OP == QG_CAST_OP_CHANNEL
/* ---- per-channel 128x1 (op 3): what the plain and the ring kernels share ---- */
#define QG_CAST_LEAN_DIV (QG_CAST_LEAN && !QG_CAST_IN_F32 && !QG_CAST_UE8M0)
#if QG_CAST_LEAN_DIV
/* x / sf for the e4m3 conversion, for a bf16 x of a column whose amax is finite
 * (|x| <= amax, sf = max(amax, 1e-4) / 448 > 0): y = RN(1 / sf), q0 = RN(x * y) and
 * one correction q1 = RN(q0 + RN(x - sf * q0) * y) (the remainder one fma), x's
 * sign bit ORed in (sf > 0: the quotient has x's sign; the correction would turn
 * -0 into +0). On every such pair of bf16 values q1 rounds to the same e4m3 byte
 * as the IEEE quotient; its fp32 bits differ only where both quotients are below
 * 2^-11 (subnormal x), i.e. both bytes are the signed zero
 * (bench/results/2026-11-29-cpu-cast-lean, exhaustive). 1 mul + 2 fma + 1 or
 * against div.rn's ~9 instructions and slow-path branch. */
QG_DEVICE float qg_cast_div_lean(float x, float sf, float y) {
    const float q0 = __fmul_rn(x, y);
    const float q1 = __fmaf_rn(__fmaf_rn(-sf, q0, x), y, q0);
    return __uint_as_float(__float_as_uint(q1) | (__float_as_uint(x) & 0x80000000u));
}
#endif

/* One row of a thread's QG_CAST_EPT columns quantized and stored: x * mult (UE8M0: the
 * scale's exact reciprocal), under kLean (the columns' exact case) qg_cast_div_lean with
 * mult the scale's RN reciprocal, else the IEEE quotient x / scale; `exact` (no value past
 * 464 after scaling) skips the e4m3 fix-up. Both kernels' bytes, element for element. */
template <bool kLean>
QG_DEVICE void qg_cast_channel_row(const qg_cast_raw &raw, const float (&scale)[QG_CAST_EPT],
                                   const float (&mult)[QG_CAST_EPT], bool exact, char *row,
                                   int col) {
    float v[QG_CAST_EPT], q[QG_CAST_EPT];
    qg_cast_decode(raw, v);
#pragma unroll
    for (int j = 0; j < QG_CAST_EPT; ++j)
#if QG_CAST_UE8M0
        q[j] = __fmul_rn(v[j], mult[j]);
#elif QG_CAST_LEAN_DIV
        q[j] = kLean ? qg_cast_div_lean(v[j], scale[j], mult[j]) : __fdiv_rn(v[j], scale[j]);
#else
        q[j] = __fdiv_rn(v[j], scale[j]);
#endif
    qg_cast_bytes o;
#pragma unroll
    for (int j = 0; j < QG_CAST_EPT / 4; ++j)
        o.w[j] = qg_cast_pack4(q[4 * j], q[4 * j + 1], q[4 * j + 2], q[4 * j + 3], exact);
    qg_cast_store(row, col, QG_CAST_K, o);
}
#endif /* op 3, shared */

#if QG_CAST_OP == QG_CAST_OP_CHANNEL && !QG_CAST_RING
/* ---- per-channel 128x1 (op 3) ---------------------------------------------
 *
 * x [M][K columns], M a multiple of 128; scales [M/128][K]. A CTA tile is 128
 * rows x 32*EPT columns: warp w holds rows 16w..16w+15 (128 / warps) in
 * registers, lane l columns EPT*l.., so each row read is 512 contiguous bytes;
 * column maxima meet in shared memory. q = x / sf (torch divides by the scale
 * tensor here: IEEE division, not a reciprocal multiply). */
#define QG_CAST_WARPS (QG_CAST_THREADS / 32)
#define QG_CAST_RPW (128 / QG_CAST_WARPS)

#define QG_CAST_COLS (32 * QG_CAST_EPT)
#define QG_CAST_CB ((QG_CAST_K + QG_CAST_COLS - 1) / QG_CAST_COLS)
static_assert(128 % QG_CAST_WARPS == 0, "warps must divide 128 rows");

extern "C" __global__ void __launch_bounds__(QG_CAST_THREADS, QG_CAST_MIN_CTAS)
QG_CAST_ENTRY(const __grid_constant__ qg_cast_params p) {
    qg_grid_dependency_wait(); /* launched with PDL: the producer's writes are visible */
    __shared__ uint32_t partial[QG_CAST_WARPS][QG_CAST_COLS];
    const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x / 32u);
    const int64_t total = p.rows / 128 * QG_CAST_CB;
    const char *in = (const char *)p.in;
    char *out = (char *)p.out;
    float *sf = (float *)p.sf;
    for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
        const int64_t mb = t / QG_CAST_CB;
        const int col = (int)(t - mb * QG_CAST_CB) * QG_CAST_COLS + lane * QG_CAST_EPT;
        const int64_t row0 = mb * 128 + warp * QG_CAST_RPW;
        qg_cast_raw raw[QG_CAST_RPW];
#pragma unroll
        for (int i = 0; i < QG_CAST_RPW; ++i)
            qg_cast_load(raw[i], in + (row0 + i) * p.ld_in * QG_CAST_IN_BYTES, col, QG_CAST_K, true);
        uint32_t amax[QG_CAST_EPT];
#if QG_CAST_LEAN && !QG_CAST_IN_F32
        { /* column pairs as packed |bf16| (qg_cast_abs_max_raw's order argument) */
            uint32_t m[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) m[k] = raw[0].w[k] & 0x7FFF7FFFu;
#pragma unroll
            for (int i = 1; i < QG_CAST_RPW; ++i)
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    asm("max.u16x2 %0, %0, %1;" : "+r"(m[k]) : "r"(raw[i].w[k] & 0x7FFF7FFFu));
#pragma unroll
            for (int k = 0; k < 4; ++k) amax[2 * k] = m[k] << 16, amax[2 * k + 1] = m[k] & 0xFFFF0000u;
        }
#else
#pragma unroll
        for (int j = 0; j < QG_CAST_EPT; ++j) amax[j] = 0;
#pragma unroll
        for (int i = 0; i < QG_CAST_RPW; ++i) {
            float v[QG_CAST_EPT];
            qg_cast_decode(raw[i], v);
#pragma unroll
            for (int j = 0; j < QG_CAST_EPT; ++j)
                amax[j] = max(amax[j], __float_as_uint(v[j]) & 0x7FFFFFFFu);
        }
#endif
#pragma unroll
        for (int j = 0; j < QG_CAST_EPT; ++j) partial[warp][lane * QG_CAST_EPT + j] = amax[j];
        __syncthreads();
        float scale[QG_CAST_EPT];
#if QG_CAST_UE8M0
        float mult[QG_CAST_EPT];
#endif
        bool exact = true;
#pragma unroll
        for (int j = 0; j < QG_CAST_EPT; ++j) {
#pragma unroll
            for (int w = 0; w < QG_CAST_WARPS; ++w)
                amax[j] = max(amax[j], partial[w][lane * QG_CAST_EPT + j]);
            float a = __uint_as_float(amax[j]);
            if (a < QG_CAST_AMAX_FLOOR) a = QG_CAST_AMAX_FLOOR;
            scale[j] = __fmul_rn(a, QG_CAST_INV448);
#if QG_CAST_UE8M0
            scale[j] = qg_cast_ceil_ue8m0(scale[j]);
            mult[j] = __fdiv_rn(1.0f, scale[j]); /* a power of two: exact */
#endif
            exact = exact && __fdiv_rn(__uint_as_float(amax[j]), scale[j]) <= QG_CAST_E4M3_EXACT_LIMIT;
        }
        __syncthreads(); /* partial is rewritten by the next tile */
        if (warp == 0) {
#pragma unroll
            for (int j = 0; j < QG_CAST_EPT; ++j)
                if (col + j < QG_CAST_K) sf[mb * QG_CAST_K + col + j] = scale[j];
        }
#if QG_CAST_LEAN
        /* the warp's columns all finite and within +-464 after scaling (the common
         * case): no per-element fix-up, and (bf16) the quotient without div.rn */
        if (QG_CAST_WARP_EXACT(exact)) {
#if QG_CAST_LEAN_DIV
            float recip[QG_CAST_EPT];
#pragma unroll
            for (int j = 0; j < QG_CAST_EPT; ++j) recip[j] = __frcp_rn(scale[j]);
#elif QG_CAST_UE8M0
            const float (&recip)[QG_CAST_EPT] = mult;
#else
            const float (&recip)[QG_CAST_EPT] = scale; /* (unused: IEEE quotients) */
#endif
#pragma unroll
            for (int i = 0; i < QG_CAST_RPW; ++i)
                qg_cast_channel_row<true>(raw[i], scale, recip, true, out + (row0 + i) * p.ld_out,
                                          col);
            continue;
        }
#endif
#if QG_CAST_UE8M0
        const float (&recip)[QG_CAST_EPT] = mult;
#else
        const float (&recip)[QG_CAST_EPT] = scale; /* (unused: IEEE quotients) */
#endif
#pragma unroll
        for (int i = 0; i < QG_CAST_RPW; ++i)
            qg_cast_channel_row<false>(raw[i], scale, recip, exact, out + (row0 + i) * p.ld_out,
                                       col);
    }
}
#endif /* op 3 */
#if QG_CAST_OP == QG_CAST_OP_CHANNEL && QG_CAST_RING
/* ---- per-channel 128x1 through a shared-memory ring (op 3, QG_CAST_RING) --------
 *
 * The plain kernel holds its 128 x 256 tile in registers (128 a thread, so 2 CTAs
 * a SM): a CTA loads, waits, reduces, syncs, then quantizes and stores with no load
 * in flight, and the SM's other CTA is all that overlaps it (H200: 62-75% of the
 * copy bandwidth; 896 tiles over 264 slots at 4096 x 7168 leave a 0.39 wave). Here
 * a persistent CTA keeps QG_CAST_RING tiles of 128 rows x 256 bytes (128 bf16 / 64
 * float columns) in flight: the CTA refills a stage with one cp.async.bulk a row
 * (completing the stage's mbarrier) as soon as it has read it, so HBM streams
 * while the CTA does the column reductions and the quotients of earlier tiles.
 *
 * Thread t owns column group cg = t % 16 (16 bytes of a row: EPT columns) of rows
 * t / 16 + 32 i (i < 4): a warp's shared loads are two whole 256-byte rows. Column
 * maxima: packed |bf16| pairs (max.u16x2) or |float| bits, the warp's two row lanes
 * by a shuffle, the 16 warps through `partial`; thread c < TILE_COLS then reduces
 * column c, writes its scale (global, and for the CTA with its multiplier or
 * reciprocal), and __syncthreads_and gives the tile's `exact` (every column finite
 * and within 464 after scaling: the lean quotient's domain, no e4m3 fix-up). The
 * quotients and bytes are the plain kernel's, element for element. */
#define QG_CAST_TILE_COLS (256 / QG_CAST_IN_BYTES)
#define QG_CAST_CGROUPS 16
#define QG_CAST_ROW_LANES (QG_CAST_THREADS / QG_CAST_CGROUPS)
#define QG_CAST_ROWS_PT (128 / QG_CAST_ROW_LANES)
#define QG_CAST_STAGE_BYTES (128 * 256)
#define QG_CAST_CB ((QG_CAST_K + QG_CAST_TILE_COLS - 1) / QG_CAST_TILE_COLS)
#define QG_CAST_WARPS (QG_CAST_THREADS / 32)
static_assert(QG_CAST_CHUNK_BYTES == 16, "the ring copies 16-byte aligned rows only");
static_assert(QG_CAST_THREADS == 512 && QG_CAST_ROWS_PT * QG_CAST_ROW_LANES == 128 && 128 % QG_CAST_WARPS == 0 &&
                  128 / QG_CAST_WARPS <= 32, "ring shape");

/* max.u16x2 (PTX ISA 9.7.3): the larger of each 16-bit half, unsigned. */
#ifndef QG_CAST_HOST_MAX_U16X2
QG_DEVICE uint32_t qg_cast_max_u16x2(uint32_t a, uint32_t b) {
    uint32_t m;
    asm("max.u16x2 %0, %1, %2;" : "=r"(m) : "r"(a), "r"(b));
    return m;
}
#endif

/* Tile `tile` into `stage`, called by the whole CTA: thread 0 arms `bar` with the
 * tile's bytes, lanes 0-7 of each warp copy one row each (a bulk copy takes uniform
 * operands, so one warp's lanes issue one after another: spread over the 16 warps,
 * 8 a warp). A copy may complete before the arming (the tx-count goes negative,
 * PTX ISA 9.7.13.15.1; the pending arrival holds the phase). A last column tile
 * copies K's remaining columns only (a multiple of 16 bytes: QG_CAST_VEC). */
QG_DEVICE void qg_cast_ring_issue(const qg_cast_params &p, int64_t tile, unsigned char *stage,
                                  uint64_t *bar, int tid) {
    const int64_t mb = tile / QG_CAST_CB;
    const int col0 = (int)(tile - mb * QG_CAST_CB) * QG_CAST_TILE_COLS;
    const uint32_t row_bytes =
        (uint32_t)(QG_CAST_K - col0 < QG_CAST_TILE_COLS ? QG_CAST_K - col0 : QG_CAST_TILE_COLS) *
        QG_CAST_IN_BYTES;
    if (tid == 0) qg_mbarrier_arrive_expect_tx(bar, row_bytes * 128u);
    const int lane = tid & 31, r = (tid / 32) * (128 / QG_CAST_WARPS) + lane;
    if (lane < 128 / QG_CAST_WARPS) {
        const char *src = (const char *)p.in + ((mb * 128 + r) * p.ld_in + col0) * QG_CAST_IN_BYTES;
        qg_bulk_load(stage + r * 256, src, row_bytes, bar);
    }
}

extern "C" __global__ void __launch_bounds__(QG_CAST_THREADS, QG_CAST_MIN_CTAS)
QG_CAST_ENTRY(const __grid_constant__ qg_cast_params p) {
    extern __shared__ __align__(128) unsigned char ring[]; /* QG_CAST_RING x 32 KB */
    __shared__ uint64_t full[QG_CAST_RING];
    __shared__ uint4 partial[QG_CAST_WARPS][QG_CAST_CGROUPS];
#if !QG_CAST_UE8M0
    __shared__ float col_scale[QG_CAST_TILE_COLS];
#endif
#if QG_CAST_UE8M0 || QG_CAST_LEAN_DIV
    __shared__ float col_mult[QG_CAST_TILE_COLS]; /* 1 / sf (a power of two), or RN(1 / sf) */
#endif
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid / 32;
    const int cg = tid % QG_CAST_CGROUPS, rl = tid / QG_CAST_CGROUPS;
    const int64_t tiles = p.rows / 128 * QG_CAST_CB;
    char *out = (char *)p.out;
    float *sf = (float *)p.sf;
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < QG_CAST_RING; ++s) qg_mbarrier_init(&full[s], 1);
        qg_fence_mbarrier_init();
    }
    __syncthreads();
    qg_grid_dependency_wait(); /* launched with PDL: the producer's writes are visible */
#pragma unroll
    for (int s = 0; s < QG_CAST_RING; ++s) {
        const int64_t t = blockIdx.x + (int64_t)s * gridDim.x;
        if (t < tiles) qg_cast_ring_issue(p, t, ring + s * QG_CAST_STAGE_BYTES, &full[s], tid);
    }
    int s = 0;
    uint32_t phase = 0;
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int64_t mb = tile / QG_CAST_CB;
        const int col0 = (int)(tile - mb * QG_CAST_CB) * QG_CAST_TILE_COLS;
        unsigned char *stage = ring + s * QG_CAST_STAGE_BYTES;
        qg_mbarrier_wait(&full[s], phase);
        qg_cast_raw raw[QG_CAST_ROWS_PT];
#pragma unroll
        for (int i = 0; i < QG_CAST_ROWS_PT; ++i)
            raw[i].q = *(const uint4 *)(stage + (rl + i * QG_CAST_ROW_LANES) * 256 + cg * 16);
        uint32_t m[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
#if QG_CAST_IN_F32
            m[k] = raw[0].w[k] & 0x7FFFFFFFu;
#pragma unroll
            for (int i = 1; i < QG_CAST_ROWS_PT; ++i) m[k] = max(m[k], raw[i].w[k] & 0x7FFFFFFFu);
            m[k] = max(m[k], __shfl_xor_sync(0xFFFFFFFFu, m[k], 16));
#else /* |bf16| as unsigned 16-bit numbers order as the values (qg_cast_abs_max_raw) */
            m[k] = raw[0].w[k] & 0x7FFF7FFFu;
#pragma unroll
            for (int i = 1; i < QG_CAST_ROWS_PT; ++i) m[k] = qg_cast_max_u16x2(m[k], raw[i].w[k] & 0x7FFF7FFFu);
            m[k] = qg_cast_max_u16x2(m[k], __shfl_xor_sync(0xFFFFFFFFu, m[k], 16));
#endif
        }
        if (lane < 16) partial[warp][cg] = make_uint4(m[0], m[1], m[2], m[3]);
        __syncthreads(); /* the stage is in registers, the partial maxima written */
        {
            const int64_t next = tile + (int64_t)QG_CAST_RING * gridDim.x;
            if (next < tiles) qg_cast_ring_issue(p, next, stage, &full[s], tid);
        }
        bool exact = true;
        if (tid < QG_CAST_TILE_COLS) {
            uint32_t amax = 0;
#pragma unroll
            for (int w = 0; w < QG_CAST_WARPS; ++w)
#if QG_CAST_IN_F32
                amax = max(amax, ((const uint32_t *)partial[w])[tid]);
#else
                amax = max(amax, (uint32_t)((const uint16_t *)partial[w])[tid] << 16);
#endif
            float a = __uint_as_float(amax);
            if (a < QG_CAST_AMAX_FLOOR) a = QG_CAST_AMAX_FLOOR; /* NaN compares false: kept */
            float scale = __fmul_rn(a, QG_CAST_INV448);
#if QG_CAST_UE8M0
            scale = qg_cast_ceil_ue8m0(scale);
            col_mult[tid] = __fdiv_rn(1.0f, scale); /* a power of two: exact */
#elif QG_CAST_LEAN_DIV
            col_mult[tid] = __frcp_rn(scale);
#endif
#if !QG_CAST_UE8M0
            col_scale[tid] = scale;
#endif
            const bool in = col0 + tid < QG_CAST_K;
            exact = !in || __fdiv_rn(__uint_as_float(amax), scale) <= QG_CAST_E4M3_EXACT_LIMIT;
            if (in) sf[mb * QG_CAST_K + col0 + tid] = scale;
        }
        /* the tile's columns all exact: the same branch in every warp */
        const bool all_exact = __syncthreads_and(exact) != 0;
#if !QG_CAST_UE8M0 /* (UE8M0: x * mult, exact) */
        float scale[QG_CAST_EPT];
#endif
#if QG_CAST_UE8M0 || QG_CAST_LEAN_DIV
        float mult[QG_CAST_EPT];
#endif
#pragma unroll
        for (int j = 0; j < QG_CAST_EPT; ++j) {
#if !QG_CAST_UE8M0
            scale[j] = col_scale[cg * QG_CAST_EPT + j];
#endif
#if QG_CAST_UE8M0 || QG_CAST_LEAN_DIV
            mult[j] = col_mult[cg * QG_CAST_EPT + j];
#endif
        }
        const int col = col0 + cg * QG_CAST_EPT;
#if QG_CAST_UE8M0 /* (UE8M0: mult alone; scale's place taken, unused) */
        const float (&scale)[QG_CAST_EPT] = mult;
#elif !QG_CAST_LEAN_DIV
        const float (&mult)[QG_CAST_EPT] = scale; /* (unused: IEEE quotients) */
#endif
        if (all_exact) {
#pragma unroll
            for (int i = 0; i < QG_CAST_ROWS_PT; ++i)
                qg_cast_channel_row<true>(raw[i], scale, mult, true,
                                          out + (mb * 128 + rl + i * QG_CAST_ROW_LANES) * p.ld_out, col);
        } else { /* inf / NaN in the tile: IEEE quotients, the exact e4m3 conversion */
#pragma unroll
            for (int i = 0; i < QG_CAST_ROWS_PT; ++i)
                qg_cast_channel_row<false>(raw[i], scale, mult, false,
                                           out + (mb * 128 + rl + i * QG_CAST_ROW_LANES) * p.ld_out, col);
        }
        if (++s == QG_CAST_RING) s = 0, phase ^= 1;
    }
}
#endif /* op 3, QG_CAST_RING */


#if QG_CAST_OP == QG_CAST_OP_SF_MN || QG_CAST_OP == QG_CAST_OP_SF_PACK
/* ---- scale layouts (ops 5, 6) ---------------------------------------------
 *
 * in: float32 [G][mn][sf_k] at any strides (p.in_stride, elements);
 * op 5 out: float32 [G][sf_k][sf_ld], the value at (g, k, m) = in(g, m, k)
 *           (get_mn_major_tma_aligned_tensor, transform_sf_into_required_layout);
 * op 6 out: int32 [G][ceil(sf_k/4)][sf_ld], byte j of (g, kp, m) = the exponent
 *           byte (bits >> 23, low 8 bits) of in(g, m, 4kp + j), 0 past sf_k
 *           (get_mn_major_tma_aligned_packed_ue8m0_tensor).
 * Rows m in [mn, sf_ld) of the output are written 0. With sf_ld = mn and the
 * input strides swapped, op 5 is a dense transposed copy (an SFB given as the
 * transpose of a row-major tensor made row-major). A thread owns one m and
 * 8 consecutive output rows: a warp's stores are 128 contiguous bytes per
 * row, and its loads of a row-major input reuse each sector 8 times (L1). */
#if QG_CAST_OP == QG_CAST_OP_SF_MN
#define QG_CAST_OUT_ROWS QG_CAST_K
#else
#define QG_CAST_OUT_ROWS ((QG_CAST_K + 3) / 4)
#endif
#define QG_CAST_ROWS_PER_THREAD 8
#define QG_CAST_ROW_CHUNKS ((QG_CAST_OUT_ROWS + QG_CAST_ROWS_PER_THREAD - 1) / QG_CAST_ROWS_PER_THREAD)

extern "C" __global__ void __launch_bounds__(QG_CAST_THREADS, QG_CAST_MIN_CTAS)
QG_CAST_ENTRY(const __grid_constant__ qg_cast_params p) {
    qg_grid_dependency_wait(); /* launched with PDL: the producer's writes are visible */
    const float *in = (const float *)p.in;
    uint32_t *out = (uint32_t *)p.out;
    const int64_t ld = p.sf_ld;
    const int64_t total = (int64_t)p.groups * QG_CAST_ROW_CHUNKS * ld;
    for (int64_t i = (int64_t)blockIdx.x * QG_CAST_THREADS + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * QG_CAST_THREADS) {
        const int64_t m = i % ld, rest = i / ld;
        const int chunk = (int)(rest % QG_CAST_ROW_CHUNKS);
        const int64_t g = rest / QG_CAST_ROW_CHUNKS;
        const bool live = m < p.m;
        const float *src = in + g * p.in_stride[0] + m * p.in_stride[1];
        uint32_t *dst = out + g * (int64_t)QG_CAST_OUT_ROWS * ld + m;
#pragma unroll
        for (int j = 0; j < QG_CAST_ROWS_PER_THREAD; ++j) {
            const int r = chunk * QG_CAST_ROWS_PER_THREAD + j;
            if (r >= QG_CAST_OUT_ROWS) break;
            uint32_t v = 0;
#if QG_CAST_OP == QG_CAST_OP_SF_MN
            if (live) v = __float_as_uint(__ldg(src + r * p.in_stride[2]));
#else
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int k = 4 * r + q;
                if (live && k < QG_CAST_K)
                    v |= ((__float_as_uint(__ldg(src + k * p.in_stride[2])) >> 23) & 0xFFu) << (8 * q);
            }
#endif
            dst[r * ld] = v;
        }
    }
}
#endif /* ops 5, 6 */

#if QG_CAST_OP == QG_CAST_OP_SF_PACK_KGROUPED
/* ---- the k-grouped packed UE8M0 layout (op 7) -----------------------------
 *
 * DeepGEMM's get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor: in float32
 * [sf_k][mn] (mn-contiguous, mn % 4 == 0), QG_CAST_GROUPS groups whose K sizes
 * (or, QG_CAST_PSUM, end offsets aligned to QG_CAST_K_ALIGN) are aux[g]; each
 * group's ceil(k_g / QG_CAST_GRAN_K) scale rows pack into ceil(rows / 4) int32
 * rows of out [packed_sf_k][mn], the last one zero-padded. A packed row no
 * group owns is not written. A thread owns 4 consecutive mn of one packed
 * row (16-byte loads and stores); the group search is per thread over aux. */
extern "C" __global__ void __launch_bounds__(QG_CAST_THREADS, QG_CAST_MIN_CTAS)
QG_CAST_ENTRY(const __grid_constant__ qg_cast_params p) {
    qg_grid_dependency_wait(); /* launched with PDL: the producer's writes are visible */
    const float *in = (const float *)p.in;
    uint32_t *out = (uint32_t *)p.out;
    const int64_t quads = p.m / 4;
    const int64_t total = (int64_t)p.packed_sf_k * quads;
    for (int64_t i = (int64_t)blockIdx.x * QG_CAST_THREADS + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * QG_CAST_THREADS) {
        const int64_t packed_row = i / quads, quad = i - packed_row * quads;
        uint32_t start = 0, end = (uint32_t)p.sf_k, padding = 0;
#if QG_CAST_GROUPS > 1 || QG_CAST_PSUM
        uint32_t prefix_rows = 0, prefix_packed = 0;
#if QG_CAST_PSUM
        uint32_t prev_end = 0;
#endif
        bool found = false;
        for (int g = 0; g < QG_CAST_GROUPS; ++g) {
            const uint32_t value = (uint32_t)__ldg(p.aux + g);
#if QG_CAST_PSUM
            const uint32_t group_k =
                value - (prev_end + QG_CAST_K_ALIGN - 1) / QG_CAST_K_ALIGN * QG_CAST_K_ALIGN;
#else
            const uint32_t group_k = value;
#endif
            const uint32_t rows = (group_k + QG_CAST_GRAN_K - 1) / QG_CAST_GRAN_K;
            start = prefix_rows;
            end = start + rows;
            prefix_rows += rows;
            prefix_packed += (rows + 3) / 4;
            if ((uint64_t)packed_row < prefix_packed) {
                found = true;
                break;
            }
            if (rows % 4 != 0) padding += 4 - rows % 4;
#if QG_CAST_PSUM
            prev_end = value;
#endif
        }
        if (!found) continue;
#endif
        uint4 packed = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const uint32_t sf_row = (uint32_t)(packed_row * 4 + j) - padding;
            if (sf_row < start || sf_row >= end) continue;
            const uint4 v = __ldg((const uint4 *)(in + (int64_t)sf_row * p.m) + quad);
            packed.x |= ((v.x >> 23) & 0xFFu) << (8 * j);
            packed.y |= ((v.y >> 23) & 0xFFu) << (8 * j);
            packed.z |= ((v.z >> 23) & 0xFFu) << (8 * j);
            packed.w |= ((v.w >> 23) & 0xFFu) << (8 * j);
        }
        ((uint4 *)(out + packed_row * p.m))[quad] = packed;
    }
}
#endif /* op 7 */
