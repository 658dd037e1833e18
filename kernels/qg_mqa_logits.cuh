/*
 * qg_mqa_logits.cuh -- FP8 MQA logits of the lightning indexer (DeepGEMM's
 * fp8_mqa_logits, with its clean_logits fused in) for sm_90a.
 *
 *   logits[i][j] = kv_scale[j] * sum_h relu(sum_d q[i][h][d] * kv[j][d]) * w[i][h]
 *                  for ks[i] <= j < ke[i]
 *
 * (kv_scale >= 0, so this equals sum_h relu(q.kv * kv_scale) * w: DeepGEMM
 * applies the scale after the head sum the same way.) q [seq_len][H][D] e4m3,
 * kv [seq_len_kv][D] e4m3, kv_scale [seq_len_kv] fp32, w [seq_len][H] fp32,
 * ks / ke [seq_len] int32; weights rows ld_weights apart, logits fp32 or
 * bf16 rows ld_logits apart.
 *   QG_MQA_COMPRESSED 0: logits[i][j], j in [0, seq_len_kv); with
 *                     QG_MQA_CLEAN every other j of row i is -inf (DeepGEMM's
 *                     clean_logits), without it only [ks, ke) is defined
 *                     1: logits[i][j - ks[i]] for j in [ks[i], ke[i]) (DeepGEMM's
 *                     max_seqlen_k > 0 form); nothing else is written
 * Rows i >= seq_len and columns >= seq_len_kv (or >= ke - ks when compressed)
 * are never written, so the caller's buffer needs no padding.
 *
 * The JIT defines: QG_MQA_H (32, 64), QG_MQA_D (32, 64, 128),
 * QG_MQA_COMPRESSED, QG_MQA_CLEAN, QG_MQA_BF16 (1: bf16 logits),
 * QG_MQA_MATH_WGS (2 or 4; block_kv = 64 per math warpgroup),
 * QG_MQA_KV_STAGES, QG_MQA_SMEM_BYTES (checked), QG_MQA_PIPE (0 or 1, below). grid.x <= the q blocks
 * (persistent: CTA c takes q blocks c, c + gridDim.x, ...), 128 x
 * (QG_MQA_MATH_WGS + 1) threads.
 *
 * The product: a q block is BLOCK_Q = 128 / H queries, i.e. 128 (query,
 * head) rows of q; its key range is [min ks, max ke) over its queries
 * (clamped to [0, seq_len_kv)), walked in blocks of block_kv keys. One
 * wgmma.m64n128k32 e4m3 per 32 of D gives a math warpgroup 64 keys x 128
 * (query, head) scores (A = keys, B = the q block: both K-major, D-byte rows,
 * D-byte swizzle). Each thread then holds, per key row, 32 columns; it
 * relu's and weights them, sums over its heads of each query, the quad sums
 * the rest (shfl_xor 1, 2: the same order on every run), and the row's
 * kv_scale multiplies the sum.
 *
 * Roles: warp 0 of the last warpgroup (one elected lane) issues TMA: per q
 * block the q tile (2 stages), per key block the kv tile and its scales
 * (QG_MQA_KV_STAGES stages). Warps 1..3 of that warpgroup (clean form only)
 * write -inf into each row's columns outside the block's key range with
 * 16-byte streaming stores, while the math runs. Inside the range the math
 * threads write -inf themselves where j is outside the row's [ks, ke).
 *
 * QG_MQA_PIPE (default 0) selects how a math warpgroup overlaps its tensor
 * core work with its epilogue:
 *   0: one accumulator set; every warpgroup waits for its wgmma, then runs
 *      the epilogue. All warpgroups read the same stage, so they run in
 *      lockstep and the tensor core idles during every epilogue (the path
 *      measured 2026-11-28: 636-768 TFLOPS at D 128). With
 *      QG_MQA_MATH_WGS 4 (DeepGEMM's organisation, QGEMM_MQA_VARIANT=
 *      deep4: 640 threads, setmaxnreg 32 / 112, one producer and one ring
 *      of 256-key stages for all four warpgroups; the warpgroups drift
 *      apart on the tensor core's queue, so one's epilogue runs under the
 *      others' wgmma) each block ends with the pipe path's epilogue (four
 *      partial head sums, the 3 / 6-shuffle reduce-scatter): the same
 *      products and sums in the same order as QG_MQA_PIPE 1, so bitwise
 *      its logits.
 *   1: two accumulator sets (2 math warpgroups, 232 registers through
 *      setmaxnreg): the wgmma of key block i + 1 is issued before the
 *      epilogue of block i, so the tensor core works on the next block while
 *      the FP32 units reduce the current one (wgmma.wait_group 1). The head
 *      sum uses four partial sums per row (chains of H / 8 instead of H / 4
 *      dependent FMAs), a fixed order: still bitwise reproducible, but not
 *      bitwise equal to PIPE 0.
 *
 * Pipeline invariants: q stage / phase advance once per q block, kv stage /
 * phase once per key block, identically in producer and math (both compute
 * the block's key range from ks / ke). full barriers: one producer arrival +
 * bytes; empty barriers: every math thread arrives (after its last wgmma
 * that read the stage has completed).
 */
#ifndef QG_MQA_LOGITS_CUH
#define QG_MQA_LOGITS_CUH

/* (this kernel uses qg_ptx.cuh's m64n128 wrapper, not the generic ones) */
#include "qg_wgmma_placeholder.cuh"

#include "qg_ptx.cuh"

static_assert(QG_MQA_H == 32 || QG_MQA_H == 64, "heads 32 or 64");
static_assert(QG_MQA_D == 32 || QG_MQA_D == 64 || QG_MQA_D == 128, "head dim 32, 64 or 128");
static_assert(QG_MQA_MATH_WGS == 2 || QG_MQA_MATH_WGS == 4, "2 or 4 math warpgroups");
static_assert(!(QG_MQA_COMPRESSED && QG_MQA_CLEAN), "compressed logits are not cleaned");
#ifndef QG_MQA_PIPE
#define QG_MQA_PIPE 0
#endif
static_assert(QG_MQA_PIPE == 0 || (QG_MQA_PIPE == 1 && QG_MQA_MATH_WGS == 2),
              "two accumulator sets need the registers of two math warpgroups");

#define QG_MQA_BLOCK_Q (128 / QG_MQA_H)
#define QG_MQA_BLOCK_KV (64 * QG_MQA_MATH_WGS)
#define QG_MQA_MATH_THREADS (128 * QG_MQA_MATH_WGS)
#define QG_MQA_THREADS (QG_MQA_MATH_THREADS + 128)
#define QG_MQA_SMEM_Q (128 * QG_MQA_D)
#define QG_MQA_SMEM_KV (QG_MQA_BLOCK_KV * QG_MQA_D)
/* A stage's key scales: two 1-D boxes of block_kv floats from the key block's
 * first key rounded down to a multiple of 4 (a TMA load's first element must be
 * 16-byte aligned: an unaligned one faulted with an illegal instruction on the
 * H200, 2026-11-28), so the block's scales sit at offset kv % 4. */
#define QG_MQA_SCALE_FLOATS (2 * QG_MQA_BLOCK_KV)
#define QG_MQA_SMEM_SCALE (QG_MQA_SCALE_FLOATS * 4)
/* QG_MQA_STAGE_W 1 (deep4): the producer warp stages each q block's
 * parameters beside its q tile -- the 128 weights (query c / H, head c % H
 * at c) and the block's key range lo, hi and its queries' ks, ke (ints
 * 0..1, 2 + 2i, 3 + 2i) -- and every lane of that warp arrives on q_full
 * after its shared stores (mbarrier.arrive releases them, the math's wait
 * acquires them). The math then reads them from shared memory after the q
 * wait instead of 32 + 2 + 2 x BLOCK_Q global loads at the start of every q
 * block (a latency bubble each time: 31 q blocks a CTA at 8192 x 8192, ~16
 * key blocks each). The same values: bitwise the logits of QG_MQA_STAGE_W 0. */
#ifndef QG_MQA_STAGE_W
#define QG_MQA_STAGE_W 0
#endif
static_assert(!QG_MQA_STAGE_W || (QG_MQA_MATH_WGS == 4 && !QG_MQA_PIPE), "staged q parameters: deep4");
#define QG_MQA_QP_FLOATS (128 + 32) /* weights, then the ints */
/* deep4: the lean store, see the math loop */
#define QG_MQA_LEAN_STORE QG_MQA_STAGE_W
#define QG_MQA_SMEM_QP (QG_MQA_STAGE_W ? 2 * QG_MQA_QP_FLOATS * 4 : 0)
#define QG_MQA_SMEM_PLAN                                                              \
    (1024 + 2 * QG_MQA_SMEM_Q + QG_MQA_KV_STAGES * (QG_MQA_SMEM_KV + QG_MQA_SMEM_SCALE) + \
     QG_MQA_SMEM_QP + (2 * 2 + 2 * QG_MQA_KV_STAGES) * 8)
static_assert(QG_MQA_SMEM_PLAN == QG_MQA_SMEM_BYTES, "host and kernel shared-memory plans differ");
static_assert(QG_MQA_SMEM_Q % 1024 == 0 && QG_MQA_SMEM_KV % 1024 == 0, "tiles 1024-byte aligned");
#if QG_MQA_D == 128
#define QG_MQA_DESC_HI QG_WGMMA_DESC_SW128_HI
#elif QG_MQA_D == 64
#define QG_MQA_DESC_HI QG_WGMMA_DESC_SW64_HI
#else
#define QG_MQA_DESC_HI QG_WGMMA_DESC_SW32_HI
#endif
#if QG_MQA_MATH_WGS == 4
/* deep4 (DeepGEMM's 32 / 112): launched at 96 a thread (640 threads under
 * __launch_bounds__(640, 1)), so the CTA's register pool (PTX ISA,
 * setmaxnreg: the launch allocation; .inc blocks until the pool holds
 * enough) is 640 x 96 = 61440; the producer warpgroup's .dec to 32 frees
 * 128 x 64 = 8192, the math's .inc to 112 takes 512 x 16 = 8192: balanced
 * exactly. The former 40 / 112 asked 1024 registers the pool never held (a
 * .inc that never returns: the likely reason the 2026-11-28 lockstep4 GPU
 * run never finished). */
#define QG_MQA_PRODUCER_REGS 32
#define QG_MQA_MATH_REGS 112
#elif QG_MQA_PIPE
/* 128 accumulators + 32 weights + addressing: 2 x 128 x 232 + 128 x 40 <= 64K */
#define QG_MQA_PRODUCER_REGS 40
#define QG_MQA_MATH_REGS 232
#endif

#if QG_MQA_BF16
typedef uint16_t qg_logit_t;
#define QG_NEG_INF_WORD 0xFF80FF80u
#else
typedef float qg_logit_t;
#define QG_NEG_INF_WORD 0xFF800000u
#endif
#define QG_LOGITS_PER_16B (16 / (int)sizeof(qg_logit_t))

QG_DEVICE void qg_mqa_store(qg_logit_t *p, float v) {
#if QG_MQA_BF16
    *p = (uint16_t)(qg_pack_bf16x2(v, 0.0f) & 0xFFFFu);
#else
    *p = v;
#endif
}

/* The key range [lo, hi) of q block qb: the union of its queries' clamped
 * ranges (empty: lo = hi = 0). */
QG_DEVICE void qg_mqa_range(const int *ks, const int *ke, int qb, int seq_len, int seq_len_kv,
                            int &lo, int &hi) {
    lo = seq_len_kv;
    hi = 0;
#pragma unroll
    for (int i = 0; i < QG_MQA_BLOCK_Q; ++i) {
        const int q = qb * QG_MQA_BLOCK_Q + i;
        if (q < seq_len) {
            const int s = max(0, min(__ldg(ks + q), seq_len_kv));
            const int e = max(0, min(__ldg(ke + q), seq_len_kv));
            if (s < e) {
                lo = min(lo, s);
                hi = max(hi, e);
            }
        }
    }
    if (hi <= lo) lo = hi = 0;
}

/* -inf into row[a, b) by `nthreads` threads (thread `tid`): scalar head and
 * tail, 16-byte streaming stores between. */
QG_DEVICE void qg_mqa_fill(qg_logit_t *row, int a, int b, int tid, int nthreads) {
    if (a >= b) return;
    const int mis = (int)(((uint64_t)(row + a) & 15) / sizeof(qg_logit_t));
    int v0 = mis ? a + (QG_LOGITS_PER_16B - mis) : a;
    if (v0 > b) v0 = b;
    const int nvec = (b - v0) / QG_LOGITS_PER_16B;
    const int v1 = v0 + nvec * QG_LOGITS_PER_16B;
    for (int j = a + tid; j < v0; j += nthreads) qg_mqa_store(row + j, -__int_as_float(0x7f800000));
    for (int i = tid; i < nvec; i += nthreads)
        qg_st_global_cs_v4(row + v0 + i * QG_LOGITS_PER_16B, QG_NEG_INF_WORD, QG_NEG_INF_WORD,
                           QG_NEG_INF_WORD, QG_NEG_INF_WORD);
    for (int j = v1 + tid; j < b; j += nthreads) qg_mqa_store(row + j, -__int_as_float(0x7f800000));
}

#if QG_MQA_PIPE
/* One key block's product into acc: 64 keys (this warpgroup's) x 128 (query,
 * head) columns, committed as one wgmma group (not waited for). */
QG_DEVICE void qg_mqa_issue(float (&acc)[64], uint32_t kv_lo, uint32_t q_lo) {
#pragma unroll
    for (int i = 0; i < 64; ++i) qg_fence_operand(acc[i]);
    qg_wgmma_fence();
#pragma unroll
    for (int k = 0; k < QG_MQA_D / 32; ++k)
        qg_wgmma_m64n128k32_e4m3_ss(acc, (kv_lo + k * 2) | (1u << 16), (q_lo + k * 2) | (1u << 16),
                                    QG_MQA_DESC_HI, k);
    qg_wgmma_commit();
#pragma unroll
    for (int i = 0; i < 64; ++i) qg_fence_operand(acc[i]);
}
#endif

#if QG_MQA_PIPE || QG_MQA_MATH_WGS == 4
/* relu, weight, sum over heads of one finished block, then the quad's
 * reduce-scatter: this lane ends with the sum of query my_q (rows r0 and
 * r0 + 8 for H 32; row r0 + 8 * my_half for H 64) and stores it. Per row and
 * query: four partial sums over the lane's heads (chains of H / 8), then
 * shfl_xor 2 and 1 -- each exchange halves what a lane keeps (H 32: 4 + 2
 * shuffles for 8 sums, H 64: 2 + 1 for 4), a fixed order. */
/* The head sums of qg_mqa_epilogue: o[0] (and o[1] for H 32) as that
 * function stores them (row r0 + 8 * (t & 1) for H 64; rows r0, r0 + 8 for
 * H 32), before the key scale. */
QG_DEVICE void qg_mqa_head_sums(const float (&acc)[64], const float (&w)[32], int t, float (&o)[2]) {
    float v[QG_MQA_BLOCK_Q][2];
#pragma unroll
    for (int qq = 0; qq < QG_MQA_BLOCK_Q; ++qq) {
        float p0 = 0.0f, p1 = 0.0f, p2 = 0.0f, p3 = 0.0f;
#pragma unroll
        for (int j = qq * (QG_MQA_H / 8); j < (qq + 1) * (QG_MQA_H / 8); ++j) {
            p0 = fmaf(fmaxf(acc[4 * j + 0], 0.0f), w[2 * j + 0], p0);
            p1 = fmaf(fmaxf(acc[4 * j + 1], 0.0f), w[2 * j + 1], p1);
            p2 = fmaf(fmaxf(acc[4 * j + 2], 0.0f), w[2 * j + 0], p2);
            p3 = fmaf(fmaxf(acc[4 * j + 3], 0.0f), w[2 * j + 1], p3);
        }
        v[qq][0] = p0 + p1;
        v[qq][1] = p2 + p3;
    }
    const bool hi2 = (t & 2) != 0, hi1 = (t & 1) != 0;
#if QG_MQA_BLOCK_Q == 4
    /* xor 2: keep queries 2b, 2b + 1 (b = t >> 1); xor 1: keep query 2b + (t & 1) = t */
    float k[2][2];
#pragma unroll
    for (int ql = 0; ql < 2; ++ql)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const float keep = hi2 ? v[2 + ql][r] : v[ql][r];
            const float send = hi2 ? v[ql][r] : v[2 + ql][r];
            k[ql][r] = keep + __shfl_xor_sync(0xffffffffu, send, 2);
        }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const float keep = hi1 ? k[1][r] : k[0][r];
        const float send = hi1 ? k[0][r] : k[1][r];
        o[r] = keep + __shfl_xor_sync(0xffffffffu, send, 1);
    }
#else
    /* xor 2: keep query t >> 1; xor 1: keep row half t & 1 */
    float k[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const float keep = hi2 ? v[1][r] : v[0][r];
        const float send = hi2 ? v[0][r] : v[1][r];
        k[r] = keep + __shfl_xor_sync(0xffffffffu, send, 2);
    }
    const float keep = hi1 ? k[1] : k[0];
    const float send = hi1 ? k[0] : k[1];
    o[0] = keep + __shfl_xor_sync(0xffffffffu, send, 1);
    o[1] = 0.0f;
#endif
}

/* relu, weight, sum over heads of one finished block (qg_mqa_head_sums),
 * times the key scale, stored: query my_q, rows r0 and r0 + 8 (H 32) or row
 * r0 + 8 * (t & 1) (H 64). */
QG_DEVICE void qg_mqa_epilogue(const float (&acc)[64], const float (&w)[32], float sc0, float sc1,
                               int t, int j0, bool row_ok, int my_ks, int my_ke,
                               qg_logit_t *out, int seq_len_kv) {
    float o[2];
    qg_mqa_head_sums(acc, w, t, o);
    if (row_ok) {
#if QG_MQA_BLOCK_Q == 4
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int j = j0 + 8 * r;
            const float val = o[r] * (r ? sc1 : sc0);
#else
        {
            const bool hi1 = (t & 1) != 0;
            const int j = j0 + 8 * (int)hi1;
            const float val = o[0] * (hi1 ? sc1 : sc0);
#endif
#if QG_MQA_COMPRESSED
            if (my_ks <= j && j < my_ke) qg_mqa_store(out + j, val);
#elif QG_MQA_CLEAN
            if (j < seq_len_kv)
                qg_mqa_store(out + j, my_ks <= j && j < my_ke ? val : -__int_as_float(0x7f800000));
#else
            (void)my_ks, (void)my_ke;
            if (j < seq_len_kv) qg_mqa_store(out + j, val);
#endif
        }
    }
}

#endif

#if QG_MQA_PIPE
/* The math warpgroups of QG_MQA_PIPE 1 (see the top of the file). */
QG_DEVICE void qg_mqa_math_pipe(unsigned char *smem_q, unsigned char *smem_kv, float *smem_scale,
                                uint64_t *q_full, uint64_t *q_empty, uint64_t *kv_full,
                                uint64_t *kv_empty, const float *__restrict__ weights,
                                int64_t ld_weights, const int *__restrict__ ks,
                                const int *__restrict__ ke, qg_logit_t *__restrict__ logits,
                                int64_t ld_logits, int seq_len, int seq_len_kv, int warp, int lane,
                                int num_q_blocks) {
    const int wg = warp / 4, t = lane % 4;
    const int row0 = wg * 64 + (warp % 4) * 16 + lane / 4; /* key row in the block; +8 */
#if QG_MQA_BLOCK_Q == 4
    const int my_q = t;
#else
    const int my_q = t >> 1;
#endif
    const uint32_t q_lo0 = qg_smem_addr(smem_q) >> 4;
    const uint32_t kv_lo0 = (qg_smem_addr(smem_kv) + wg * 64 * QG_MQA_D) >> 4;
    int qs = 0, kvs = 0;
    uint32_t q_phase = 0, kv_phase = 0;
    float acc_a[64], acc_b[64];
    for (int qb = blockIdx.x; qb < num_q_blocks; qb += gridDim.x) {
        int lo, hi;
        qg_mqa_range(ks, ke, qb, seq_len, seq_len_kv, lo, hi);
        float w[32];
#pragma unroll
        for (int j = 0; j < 16; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int c = 8 * j + 2 * t + e;
                const int q = qb * QG_MQA_BLOCK_Q + c / QG_MQA_H;
                w[2 * j + e] =
                    q < seq_len ? __ldg(weights + (int64_t)q * ld_weights + c % QG_MQA_H) : 0.0f;
            }
        const int my_row = qb * QG_MQA_BLOCK_Q + my_q;
        const bool row_ok = my_row < seq_len;
        const int my_ks = row_ok ? __ldg(ks + my_row) : 0;
        const int my_ke = row_ok ? __ldg(ke + my_row) : 0;
        qg_logit_t *out = logits + (int64_t)(row_ok ? my_row : 0) * ld_logits;
#if QG_MQA_COMPRESSED
        out -= my_ks;
#endif
        qg_mbarrier_wait(&q_full[qs], q_phase);
        const uint32_t q_lo = q_lo0 + qs * (QG_MQA_SMEM_Q >> 4);
        const int nb = (hi - lo + QG_MQA_BLOCK_KV - 1) / QG_MQA_BLOCK_KV; /* 0 when empty */
        /* issue block b + 1 into `acc` (stage kvs), returning its stage */
        auto issue = [&](float (&acc)[64]) {
            const int s = kvs;
            qg_mbarrier_wait(&kv_full[s], kv_phase);
            qg_mqa_issue(acc, kv_lo0 + s * (QG_MQA_SMEM_KV >> 4), q_lo);
            if (++kvs == QG_MQA_KV_STAGES) { kvs = 0; kv_phase ^= 1; }
            return s;
        };
        /* block b (stage s) has completed in `acc`: release the stage, reduce, store */
        auto finish = [&](const float (&acc)[64], int s, int b) {
            const int kv = lo + b * QG_MQA_BLOCK_KV;
            const float *scale = smem_scale + s * QG_MQA_SCALE_FLOATS + (kv & 3);
            const float sc0 = scale[row0];
            const float sc1 = scale[row0 + 8];
            qg_mbarrier_arrive(&kv_empty[s]);
            qg_mqa_epilogue(acc, w, sc0, sc1, t, kv + row0, row_ok, my_ks, my_ke, out, seq_len_kv);
        };
        /* The issues are unconditional inside the loop (an accumulator set
         * that is in flight on one path and not on another made ptxas
         * serialize every wgmma); the last one or two blocks drain after it. */
        if (nb > 0) {
            int sa = issue(acc_a), sb, b = 0;
            for (; b + 2 < nb; b += 2) {
                sb = issue(acc_b);
                qg_wgmma_wait1();
#pragma unroll
                for (int i = 0; i < 64; ++i) qg_fence_operand(acc_a[i]);
                finish(acc_a, sa, b);
                sa = issue(acc_a);
                qg_wgmma_wait1();
#pragma unroll
                for (int i = 0; i < 64; ++i) qg_fence_operand(acc_b[i]);
                finish(acc_b, sb, b + 1);
            }
            if (b + 1 < nb) {
                sb = issue(acc_b);
                qg_wgmma_wait1();
#pragma unroll
                for (int i = 0; i < 64; ++i) qg_fence_operand(acc_a[i]);
                finish(acc_a, sa, b);
                qg_wgmma_wait0();
#pragma unroll
                for (int i = 0; i < 64; ++i) qg_fence_operand(acc_b[i]);
                finish(acc_b, sb, b + 1);
            } else {
                qg_wgmma_wait0();
#pragma unroll
                for (int i = 0; i < 64; ++i) qg_fence_operand(acc_a[i]);
                finish(acc_a, sa, b);
            }
        }
        qg_mbarrier_arrive(&q_empty[qs]);
        if (++qs == 2) { qs = 0; q_phase ^= 1; }
    }
}
#endif

/* tmap_q: u8 D x seq_len*H, box D x 128; tmap_kv: u8 D x seq_len_kv, box D x
 * block_kv; tmap_scale: f32 seq_len_kv, box block_kv (src/indexer_plan.h) */
extern "C" __global__ void __launch_bounds__(QG_MQA_THREADS, 1)
qg_mqa_logits_kernel(const __grid_constant__ qg_tensor_map tmap_q,
                     const __grid_constant__ qg_tensor_map tmap_kv,
                     const __grid_constant__ qg_tensor_map tmap_scale,
                     const float *__restrict__ weights, int64_t ld_weights,
                     const int *__restrict__ ks,
                     const int *__restrict__ ke, qg_logit_t *__restrict__ logits,
                     int64_t ld_logits, int seq_len, int seq_len_kv) {
    extern __shared__ __align__(1024) unsigned char qg_smem_raw[];
    unsigned char *smem = qg_smem_raw + ((1024 - (qg_smem_addr(qg_smem_raw) & 1023)) & 1023);
    unsigned char *smem_q = smem;
    unsigned char *smem_kv = smem_q + 2 * QG_MQA_SMEM_Q;
    float *smem_scale = (float *)(smem_kv + QG_MQA_KV_STAGES * QG_MQA_SMEM_KV);
#if QG_MQA_STAGE_W
    /* each q stage's weights and key ranges (2 x QG_MQA_QP_FLOATS) */
    float *smem_qp = smem_scale + QG_MQA_KV_STAGES * QG_MQA_SCALE_FLOATS;
    uint64_t *q_full = (uint64_t *)(smem_qp + 2 * QG_MQA_QP_FLOATS);
#else
    uint64_t *q_full = (uint64_t *)(smem_scale + QG_MQA_KV_STAGES * QG_MQA_SCALE_FLOATS);
#endif
    uint64_t *q_empty = q_full + 2;
    uint64_t *kv_full = q_empty + 2;
    uint64_t *kv_empty = kv_full + QG_MQA_KV_STAGES;

    const int warp = (int)(threadIdx.x / 32), lane = (int)(threadIdx.x % 32);
    const int num_q_blocks = (seq_len + QG_MQA_BLOCK_Q - 1) / QG_MQA_BLOCK_Q;

    if (warp == QG_MQA_MATH_WGS * 4 && qg_elect_one()) {
        qg_tma_prefetch_descriptor(&tmap_q);
        qg_tma_prefetch_descriptor(&tmap_kv);
        qg_tma_prefetch_descriptor(&tmap_scale);
        for (int i = 0; i < 2; ++i) {
            /* STAGE_W: the 32 lanes of the producer warp (one with the q bytes) */
            qg_mbarrier_init(&q_full[i], QG_MQA_STAGE_W ? 32 : 1);
            qg_mbarrier_init(&q_empty[i], QG_MQA_MATH_THREADS);
        }
        for (int i = 0; i < QG_MQA_KV_STAGES; ++i) {
            qg_mbarrier_init(&kv_full[i], 1);
            qg_mbarrier_init(&kv_empty[i], QG_MQA_MATH_THREADS);
        }
        qg_fence_mbarrier_init();
    }
    __syncthreads();
    qg_grid_dependency_wait();

    if (warp >= QG_MQA_MATH_WGS * 4) {
#ifdef QG_MQA_PRODUCER_REGS
        qg_setmaxnreg_dec<QG_MQA_PRODUCER_REGS>();
#endif
        if (warp == QG_MQA_MATH_WGS * 4) {
            /* ---- TMA producer ---- */
#if QG_MQA_STAGE_W
            /* the whole warp walks (converged: every lane waits every
             * barrier); lane 0 issues the TMA, every lane stages 4 weights */
            {
                int qs = 0, kvs = 0;
                uint32_t q_phase = 0, kv_phase = 0;
                for (int qb = blockIdx.x; qb < num_q_blocks; qb += gridDim.x) {
                    int lo, hi;
                    qg_mqa_range(ks, ke, qb, seq_len, seq_len_kv, lo, hi);
                    float wv[4];
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int c = lane + 32 * i;
                        const int q = qb * QG_MQA_BLOCK_Q + c / QG_MQA_H;
                        wv[i] = q < seq_len ? __ldg(weights + (int64_t)q * ld_weights + c % QG_MQA_H)
                                            : 0.0f;
                    }
                    int kse = 0;
                    if (lane < 2 * QG_MQA_BLOCK_Q) {
                        const int q = qb * QG_MQA_BLOCK_Q + (lane >> 1);
                        kse = q < seq_len ? __ldg((lane & 1 ? ke : ks) + q) : 0;
                    }
                    qg_mbarrier_wait(&q_empty[qs], q_phase ^ 1);
                    float *qp = smem_qp + qs * QG_MQA_QP_FLOATS;
#pragma unroll
                    for (int i = 0; i < 4; ++i) qp[lane + 32 * i] = wv[i];
                    int *qpi = (int *)(qp + 128);
                    if (lane < 2 * QG_MQA_BLOCK_Q) qpi[2 + lane] = kse;
                    if (lane == 0) qpi[0] = lo, qpi[1] = hi;
                    if (lane < QG_MQA_BLOCK_Q) {
                        /* query lane's store limit (0 past seq_len) and row
                         * offset in logits (less its ks when compressed), for
                         * the lean store (QG_MQA_LEAN_STORE) */
                        const int q = qb * QG_MQA_BLOCK_Q + lane;
                        const bool ok = q < seq_len;
                        int64_t ro = (int64_t)(ok ? q : 0) * ld_logits;
#if QG_MQA_COMPRESSED
                        ro -= ok ? __ldg(ks + q) : 0;
#endif
                        qpi[10 + lane] = ok ? seq_len_kv : 0;
                        *(int64_t *)(qpi + 16 + 2 * lane) = ro;
                    }
                    if (lane == 0) {
                        qg_mbarrier_arrive_expect_tx(&q_full[qs], QG_MQA_SMEM_Q);
                        qg_tma_load_2d(smem_q + qs * QG_MQA_SMEM_Q, &tmap_q, &q_full[qs], 0, qb * 128);
                    } else {
                        qg_mbarrier_arrive(&q_full[qs]);
                    }
                    if (++qs == 2) { qs = 0; q_phase ^= 1; }
                    for (int kv = lo; kv < hi; kv += QG_MQA_BLOCK_KV) {
                        qg_mbarrier_wait(&kv_empty[kvs], kv_phase ^ 1);
                        if (lane == 0) {
                            qg_mbarrier_arrive_expect_tx(&kv_full[kvs],
                                                         QG_MQA_SMEM_KV + QG_MQA_SMEM_SCALE);
                            qg_tma_load_2d(smem_kv + kvs * QG_MQA_SMEM_KV, &tmap_kv, &kv_full[kvs],
                                           0, kv);
                            const int kv_a = kv & ~3; /* 16-byte aligned first scale */
                            qg_tma_load_1d(smem_scale + kvs * QG_MQA_SCALE_FLOATS, &tmap_scale,
                                           &kv_full[kvs], kv_a);
                            qg_tma_load_1d(smem_scale + kvs * QG_MQA_SCALE_FLOATS + QG_MQA_BLOCK_KV,
                                           &tmap_scale, &kv_full[kvs], kv_a + QG_MQA_BLOCK_KV);
                        }
                        __syncwarp();
                        if (++kvs == QG_MQA_KV_STAGES) { kvs = 0; kv_phase ^= 1; }
                    }
                }
            }
#else
            if (qg_elect_one()) {
                int qs = 0, kvs = 0;
                uint32_t q_phase = 0, kv_phase = 0;
                for (int qb = blockIdx.x; qb < num_q_blocks; qb += gridDim.x) {
                    int lo, hi;
                    qg_mqa_range(ks, ke, qb, seq_len, seq_len_kv, lo, hi);
                    qg_mbarrier_wait(&q_empty[qs], q_phase ^ 1);
                    qg_mbarrier_arrive_expect_tx(&q_full[qs], QG_MQA_SMEM_Q);
                    qg_tma_load_2d(smem_q + qs * QG_MQA_SMEM_Q, &tmap_q, &q_full[qs], 0, qb * 128);
                    if (++qs == 2) { qs = 0; q_phase ^= 1; }
                    for (int kv = lo; kv < hi; kv += QG_MQA_BLOCK_KV) {
                        qg_mbarrier_wait(&kv_empty[kvs], kv_phase ^ 1);
                        qg_mbarrier_arrive_expect_tx(&kv_full[kvs],
                                                     QG_MQA_SMEM_KV + QG_MQA_SMEM_SCALE);
                        qg_tma_load_2d(smem_kv + kvs * QG_MQA_SMEM_KV, &tmap_kv, &kv_full[kvs], 0, kv);
                        const int kv_a = kv & ~3; /* 16-byte aligned first scale */
                        qg_tma_load_1d(smem_scale + kvs * QG_MQA_SCALE_FLOATS, &tmap_scale,
                                       &kv_full[kvs], kv_a);
                        qg_tma_load_1d(smem_scale + kvs * QG_MQA_SCALE_FLOATS + QG_MQA_BLOCK_KV,
                                       &tmap_scale, &kv_full[kvs], kv_a + QG_MQA_BLOCK_KV);
                        if (++kvs == QG_MQA_KV_STAGES) { kvs = 0; kv_phase ^= 1; }
                    }
                }
            }
#endif
            __syncwarp();
        }
#if QG_MQA_CLEAN
        else {
            /* ---- -inf outside each q block's key range (warps 1..3) ---- */
            const int tid = (int)threadIdx.x - QG_MQA_MATH_THREADS - 32;
            for (int qb = blockIdx.x; qb < num_q_blocks; qb += gridDim.x) {
                int lo, hi;
                qg_mqa_range(ks, ke, qb, seq_len, seq_len_kv, lo, hi);
                /* the math writes [lo, c1): every key block it runs, up to seq_len_kv */
                const int nb = (hi - lo + QG_MQA_BLOCK_KV - 1) / QG_MQA_BLOCK_KV;
                const int c1 = min(lo + nb * QG_MQA_BLOCK_KV, seq_len_kv);
                for (int i = 0; i < QG_MQA_BLOCK_Q; ++i) {
                    const int q = qb * QG_MQA_BLOCK_Q + i;
                    if (q >= seq_len) break;
                    qg_logit_t *row = logits + (int64_t)q * ld_logits;
                    qg_mqa_fill(row, 0, nb ? lo : seq_len_kv, tid, 96);
                    if (nb) qg_mqa_fill(row, c1, seq_len_kv, tid, 96);
                }
            }
        }
#endif
    } else {
#ifdef QG_MQA_MATH_REGS
        qg_setmaxnreg_inc<QG_MQA_MATH_REGS>();
#endif
        /* ---- math warpgroups ---- */
#if QG_MQA_PIPE
        qg_mqa_math_pipe(smem_q, smem_kv, smem_scale, q_full, q_empty, kv_full, kv_empty, weights,
                         ld_weights, ks, ke, logits, ld_logits, seq_len, seq_len_kv, warp, lane,
                         num_q_blocks);
#else
#if QG_MQA_STAGE_W
        /* the warp index through a shuffle: ptxas then knows it is warp-uniform
         * and keeps the descriptors and the scale rows' warp part in uniform
         * registers, which the 112 vector registers (64 accumulators, 32
         * weights) cannot spare: without it the kv loop rebuilt them from
         * threadIdx every block (230 instructions a block at H 64 D 64 clean
         * against DeepGEMM's 212, which has no bounds checks) */
        const int uwarp = __shfl_sync(0xffffffffu, warp, 0);
        const int wg = uwarp / 4, t = lane % 4;
        const int row0 = wg * 64 + (uwarp % 4) * 16 + lane / 4; /* key row in the block; +8 */
#else
        const int wg = warp / 4, t = lane % 4;
        const int row0 = wg * 64 + (warp % 4) * 16 + lane / 4; /* key row in the block; +8 */
#endif
        /* the query of the quad this lane stores, and which of its two rows */
#if QG_MQA_MATH_WGS == 4
        /* qg_mqa_epilogue's reduce-scatter (as the pipe path): this lane
         * ends with query t >> 1 (H 64) or t (H 32) */
#if QG_MQA_BLOCK_Q == 2
        const int my_q = t >> 1;
#else
        const int my_q = t;
#endif
#elif QG_MQA_BLOCK_Q == 2
        const int my_q = t & 1, my_half = t >> 1;
#else
        const int my_q = t; /* and both rows */
#endif
        const uint32_t q_lo0 = qg_smem_addr(smem_q) >> 4;
        const uint32_t kv_lo0 = (qg_smem_addr(smem_kv) + wg * 64 * QG_MQA_D) >> 4;
        int qs = 0, kvs = 0;
        uint32_t q_phase = 0, kv_phase = 0;
        float acc[64];
        for (int qb = blockIdx.x; qb < num_q_blocks; qb += gridDim.x) {
#if QG_MQA_STAGE_W
            /* the producer warp's staged copies (see QG_MQA_STAGE_W) */
            qg_mbarrier_wait(&q_full[qs], q_phase);
            const float *qp = smem_qp + qs * QG_MQA_QP_FLOATS;
            const int *qpi = (const int *)(qp + 128);
            const int lo = qpi[0], hi = qpi[1];
            float w[32];
#pragma unroll
            for (int j = 0; j < 16; ++j) {
                const float2 v = *(const float2 *)(qp + 8 * j + 2 * t);
                w[2 * j] = v.x, w[2 * j + 1] = v.y;
            }
            const int my_row = qb * QG_MQA_BLOCK_Q + my_q;
            const bool row_ok = my_row < seq_len;
            const int my_ks = qpi[2 + 2 * my_q], my_ke = qpi[3 + 2 * my_q]; /* 0 past seq_len */
#else
            int lo, hi;
            qg_mqa_range(ks, ke, qb, seq_len, seq_len_kv, lo, hi);
            /* weights of this lane's columns c = 8j + 2t + e: query c / H, head c % H */
            float w[32];
#pragma unroll
            for (int j = 0; j < 16; ++j) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int c = 8 * j + 2 * t + e;
                    const int q = qb * QG_MQA_BLOCK_Q + c / QG_MQA_H;
                    w[2 * j + e] = q < seq_len
                                       ? __ldg(weights + (int64_t)q * ld_weights + c % QG_MQA_H)
                                       : 0.0f;
                }
            }
            const int my_row = qb * QG_MQA_BLOCK_Q + my_q;
            const bool row_ok = my_row < seq_len;
            const int my_ks = row_ok ? __ldg(ks + my_row) : 0;
            const int my_ke = row_ok ? __ldg(ke + my_row) : 0;
#endif
#if !QG_MQA_LEAN_STORE
            qg_logit_t *out = logits + (int64_t)(row_ok ? my_row : 0) * ld_logits;
#if QG_MQA_COMPRESSED
            out -= my_ks;
#endif
#else
            /* the lean store (deep4): this lane's first key row jrow (H 64:
             * its one row r0 + 8 (t & 1) and one key scale; H 32: r0 and r0 +
             * 8); its query's row offset, store limit and [ks, ke) staged by
             * the producer (QG_MQA_STAGE_W) and loaded in each block, instead
             * of the row address rebuilt from the query index there (the
             * registers are all taken: ptxas rematerialized it): the kv loop
             * clean 212 -> 204 instructions a block at H 64 D 64, 235 -> 227
             * at H 32 D 64 (nvdisasm). The same values stored where
             * qg_mqa_epilogue stores them. (A first form that kept the row
             * address in registers made the H 32 D 32 loop longer, 228 -> 245.) */
            const int jrow = row0 + (QG_MQA_BLOCK_Q == 2 ? 8 * (t & 1) : 0);
            (void)row_ok, (void)my_ks, (void)my_ke; /* read from the q stage per block */
#endif
#if !QG_MQA_STAGE_W
            qg_mbarrier_wait(&q_full[qs], q_phase);
#endif
            const uint32_t q_lo = q_lo0 + qs * (QG_MQA_SMEM_Q >> 4);
            for (int kv = lo; kv < hi; kv += QG_MQA_BLOCK_KV) {
                qg_mbarrier_wait(&kv_full[kvs], kv_phase);
                const float *scale = smem_scale + kvs * QG_MQA_SCALE_FLOATS + (kv & 3);
#if QG_MQA_LEAN_STORE
                const float sc0 = scale[jrow], sc1 = QG_MQA_BLOCK_Q == 4 ? scale[jrow + 8] : 0.0f;
#else
                const float sc0 = scale[row0];
                const float sc1 = scale[row0 + 8];
#endif
                const uint32_t kv_lo = kv_lo0 + kvs * (QG_MQA_SMEM_KV >> 4);
#pragma unroll
                for (int i = 0; i < 64; ++i) qg_fence_operand(acc[i]);
                qg_wgmma_fence();
#pragma unroll
                for (int k = 0; k < QG_MQA_D / 32; ++k)
                    qg_wgmma_m64n128k32_e4m3_ss(acc, (kv_lo + k * 2) | (1u << 16),
                                                (q_lo + k * 2) | (1u << 16), QG_MQA_DESC_HI, k);
                qg_wgmma_commit();
#pragma unroll
                for (int i = 0; i < 64; ++i) qg_fence_operand(acc[i]);
                qg_wgmma_wait0();
                qg_mbarrier_arrive(&kv_empty[kvs]);
                if (++kvs == QG_MQA_KV_STAGES) { kvs = 0; kv_phase ^= 1; }
#if QG_MQA_MATH_WGS == 4
                /* four partial head sums and a 3 / 6-shuffle reduce-scatter
                 * (the pipe path's epilogue) instead of the 8 / 16 shuffles
                 * below: the four warpgroups are issue-bound in their
                 * epilogues (ncu, DeepGEMM's organisation: IPC 2.66) */
#if QG_MQA_LEAN_STORE
                {
                    float o[2];
                    qg_mqa_head_sums(acc, w, t, o);
#pragma unroll
                    for (int r = 0; r < (QG_MQA_BLOCK_Q == 4 ? 2 : 1); ++r) {
                        /* the row's address, limit and range from the q stage
                         * (loads: the mbarrier waits' memory clobbers keep
                         * them in the loop, where registers are short) */
                        const int j = kv + jrow + 8 * r;
                        /* an offset from the kernel's own logits pointer: a global store */
                        qg_logit_t *const p = logits + (*(const int64_t *)(qpi + 16 + 2 * my_q) + j);
                        const int lim = qpi[10 + my_q];
                        const int rks = qpi[2 + 2 * my_q], rke = qpi[3 + 2 * my_q];
                        (void)lim, (void)rks, (void)rke;
                        const float val = o[r] * (r ? sc1 : sc0);
#if QG_MQA_COMPRESSED
                        /* my_ks = my_ke = 0 past seq_len (staged so): nothing stored */
                        if (rks <= j && j < rke) qg_mqa_store(p, val);
#elif QG_MQA_CLEAN
                        if (j < lim)
                            qg_mqa_store(p, rks <= j && j < rke ? val : -__int_as_float(0x7f800000));
#else
                        if (j < lim) qg_mqa_store(p, val);
#endif
                    }
                }
#else
                qg_mqa_epilogue(acc, w, sc0, sc1, t, kv + row0, row_ok, my_ks, my_ke, out, seq_len_kv);
#endif
#else
                /* relu, weight, sum over heads: s[q][row] */
                float s[QG_MQA_BLOCK_Q][2];
#pragma unroll
                for (int qq = 0; qq < QG_MQA_BLOCK_Q; ++qq) {
                    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
                    for (int j = qq * (QG_MQA_H / 8); j < (qq + 1) * (QG_MQA_H / 8); ++j) {
                        a0 = fmaf(fmaxf(acc[4 * j + 0], 0.0f), w[2 * j + 0], a0);
                        a0 = fmaf(fmaxf(acc[4 * j + 1], 0.0f), w[2 * j + 1], a0);
                        a1 = fmaf(fmaxf(acc[4 * j + 2], 0.0f), w[2 * j + 0], a1);
                        a1 = fmaf(fmaxf(acc[4 * j + 3], 0.0f), w[2 * j + 1], a1);
                    }
                    a0 += __shfl_xor_sync(0xffffffffu, a0, 1);
                    a1 += __shfl_xor_sync(0xffffffffu, a1, 1);
                    a0 += __shfl_xor_sync(0xffffffffu, a0, 2);
                    a1 += __shfl_xor_sync(0xffffffffu, a1, 2);
                    s[qq][0] = a0 * sc0;
                    s[qq][1] = a1 * sc1;
                }
                /* this lane's values: query my_q, rows (my_half ? r1 : r0) or both */
                float v0 = 0.0f, v1 = 0.0f;
#pragma unroll
                for (int qq = 0; qq < QG_MQA_BLOCK_Q; ++qq)
                    if (qq == my_q) v0 = s[qq][0], v1 = s[qq][1];
                if (row_ok) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
#if QG_MQA_BLOCK_Q == 2
                        if (h != my_half) continue;
#endif
                        const int j = kv + row0 + 8 * h;
                        const float v = h ? v1 : v0;
#if QG_MQA_COMPRESSED
                        if (my_ks <= j && j < my_ke) qg_mqa_store(out + j, v);
#elif QG_MQA_CLEAN
                        if (j < seq_len_kv)
                            qg_mqa_store(out + j, my_ks <= j && j < my_ke ? v : -__int_as_float(0x7f800000));
#else
                        if (j < seq_len_kv) qg_mqa_store(out + j, v);
#endif
                    }
                }
#endif /* QG_MQA_MATH_WGS == 4 */
            }
            qg_mbarrier_arrive(&q_empty[qs]);
            if (++qs == 2) { qs = 0; q_phase ^= 1; }
        }
#endif
    }
    qg_launch_dependents();
}

#endif /* QG_MQA_LOGITS_CUH */
