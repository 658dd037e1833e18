/*
 * qg_paged_mqa_logits.cuh -- FP8 MQA logits over the paged KV cache (decode;
 * DeepGEMM's fp8_paged_mqa_logits with 2-D context lengths) for sm_90a, and
 * the schedule kernel (get_paged_mqa_logits_metadata).
 *
 *   logits[b * NEXT_N + n][j] = scale(j) * sum_h relu(sum_d q[b][n][h][d] * kv(j)[d]) * w[b * NEXT_N + n][h]
 *   for j < ctx[b][n]  (ctx = context_lens [batch][NEXT_N], clamped to [0, max_context_len])
 *
 * kv(j) is row j % 64 of physical block block_table[b][j / 64] of the fused
 * cache: block p holds 64 rows of D e4m3 bytes at p * block_stride, then
 * their 64 fp32 scales at p * block_stride + 64 * D (DeepGEMM's
 * [blocks, 64, 1, D + 4] layout; block_stride bytes, a multiple of 16).
 * With QG_PMQA_CLEAN the other columns j < max_context_len of each row are
 * -inf; without it they are left untouched (DeepGEMM's tests mask them).
 *
 * Work: a unit is one 64-key block of one batch entry; batch b has
 * nb(b) = ceil(max_n ctx[b][n] / 64) units. The schedule kernel splits the
 * units, in (batch, block) order, into gridDim.x contiguous, equal ranges:
 * schedule[i] = (batch, block) where CTA i starts, schedule[gridDim.x] =
 * (batch_size, 0). It runs on the device from context_lens, so the decode
 * step (schedule + logits) captures in a CUDA graph and replays with new
 * lengths; it reads context_lens[0 .. batch * NEXT_N) only.
 *
 * The JIT defines: QG_PMQA_H (32, 64), QG_PMQA_D (32, 64, 128), QG_PMQA_NEXT_N
 * (1, 2), QG_PMQA_BF16, QG_PMQA_CLEAN, QG_PMQA_STAGES (even),
 * QG_PMQA_SMEM_BYTES (checked); QG_PMQA_SCHEDULE 1 compiles the schedule kernel
 * instead; QG_PMQA_MATH_WGS (2, default: the 2026-11-28 path; or 4, split4's,
 * DeepGEMM's count: twice the units in flight, each warpgroup's wait ->
 * wgmma -> epilogue round hidden behind three others); QG_PMQA_STRIDE_WALK
 * (the math warpgroups walk their own units only, qg_pmqa_swalk; the
 * ncu of 2026-11-29 counted the unit walk at 2x the units, ~20% more
 * instructions than DeepGEMM's); QG_PMQA_CTAS (1 or 2
 * CTAs an SM, below: the organisation dual2 of src/indexer_plan.h);
 * QG_PMQA_SPLIT (split4), QG_PMQA_WREG (split4r112w: weights in registers),
 * QG_PMQA_MATH112 (setmaxnreg 32 / 112), QG_PMQA_MATH_TAIL (the clean tail
 * on the math warps) and QG_PMQA_LEAN (the lean unit loop), at their
 * definitions. Since the H200 A/B of 2026-11-29 the planner
 * (src/indexer_plan.c) builds four of these combinations only, and the
 * static_asserts below admit no other: shared2 (2), dual2 (2, CTAS 2),
 * split4 (4, STRIDE_WALK, SPLIT) and split4r112w (split4 + WREG: below N =
 * 128 all N / 4 weights; at N = 128 MATH112, LEAN, 32 weights (28 clean at
 * D 64) and, clean, MATH_TAIL), the last with the run loop (QG_PMQA_RUN:
 * split4r112x), the producers' shared base (QG_PMQA_PADDR: split4r112p) and
 * the uniform walk (QG_PMQA_UNI with PADDR: split4r112u, the default since 2026-11-29); the shared3 / shared4 forms (3 or 4 math
 * warpgroups on one ring, the strided walk at 2) and split4r / split4r112 /
 * split4r112m (WREG without MATH112 at N = 128, MATH112 without LEAN) left
 * with their planner entries (tag exp/pmqa-organisations-2026-11-29), and
 * split4r112y (the producers' kv_empty wait sleeping, QG_PMQA_SLEEP: no
 * faster than split4r112x; tag exp/session-v-unpaid-2026-11-29). The
 * organisation with two accumulator sets a math warpgroup (pipe2,
 * QG_PMQA_PIPE) was no faster than shared2 on the H200 and was removed: git
 * tag exp/pmqa-pipe2-2026-11-28. 128 x (W + 1)
 * threads: math warpgroups 0 .. W - 1 take the CTA's units in turn (unit u ->
 * warpgroup u % W, stage u % QG_PMQA_STAGES), warpgroup W's
 * first warp loads (TMA: q once per batch segment, per unit the kv block
 * and its scales through rank-3 / rank-2 maps over the cache), its other
 * warps write the -inf of the clean form past each row's last block (split4:
 * all 4 producer warps after their walks; QG_PMQA_MATH_TAIL: the math warps).
 *
 * One wgmma.m64nNk32 e4m3 per 32 of D: 64 keys x N = NEXT_N * H (query,
 * head) columns; relu, weights, sum over heads (in-thread, then the quad's
 * shfl_xor 1, 2 -- a fixed order: bitwise reproducible), times the key's
 * scale.
 *
 * Pipeline invariants: unit u's kv stage is u % STAGES with phase
 * (u / STAGES) & 1 on both sides (the producer and the warpgroup u % W walk
 * the same schedule; the strided walk reaches the same u, (b, k) and
 * segments: tools/pmqa_walk_check.sh runs the walks' code on the CPU
 * against each other); kv_empty counts the 128 threads of the one warpgroup
 * that read the stage. A batch segment (the CTA's units of one batch entry)
 * takes q stage g % 2, phase (g / 2) & 1 for the CTA's g-th segment;
 * q_empty counts all 128 W math threads (each warpgroup arrives once per
 * segment, also when the segment gave it no unit).
 */
#ifndef QG_PAGED_MQA_LOGITS_CUH
#define QG_PAGED_MQA_LOGITS_CUH

#include "qg_wgmma_placeholder.cuh" /* (the m64n128 wrapper, not the generic ones) */

#include "qg_ptx.cuh"

#define QG_PMQA_BLOCK 64 /* keys per cache block (DeepGEMM's SM90 block_kv) */

#if QG_PMQA_SCHEDULE
/* ---- the schedule (one CTA of 1024 threads) ----------------------------- */

#define QG_SCHED_THREADS 1024

QG_DEVICE int qg_pmqa_blocks(const int *ctx, int b, int next_n, int max_context_len) {
    int m = 0;
    for (int n = 0; n < next_n; ++n) m = max(m, min(max(ctx[b * next_n + n], 0), max_context_len));
    return (m + QG_PMQA_BLOCK - 1) / QG_PMQA_BLOCK;
}

extern "C" __global__ void __launch_bounds__(QG_SCHED_THREADS, 1)
qg_paged_mqa_schedule_kernel(const int *__restrict__ context_lens, int batch, int next_n,
                             int max_context_len, int num_ctas, int *__restrict__ schedule) {
    __shared__ long long prefix[QG_SCHED_THREADS];
    __shared__ long long total_s;
    qg_grid_dependency_wait();
    const int tid = (int)threadIdx.x;
    const int chunk = (batch + QG_SCHED_THREADS - 1) / QG_SCHED_THREADS;
    const int b0 = min(tid * chunk, batch), b1 = min(b0 + chunk, batch);
    long long s = 0;
    for (int b = b0; b < b1; ++b) s += qg_pmqa_blocks(context_lens, b, next_n, max_context_len);
    prefix[tid] = s;
    __syncthreads();
    if (tid == 0) { /* exclusive scan in a fixed order */
        long long run = 0;
        for (int i = 0; i < QG_SCHED_THREADS; ++i) {
            const long long v = prefix[i];
            prefix[i] = run;
            run += v;
        }
        total_s = run;
        schedule[2 * num_ctas] = batch; /* the end */
        schedule[2 * num_ctas + 1] = 0;
    }
    __syncthreads();
    const long long total = total_s;
    long long p = prefix[tid];
    /* CTA i starts at unit u_i = floor(i * total / num_ctas) < total; the
     * batch entry whose units [p, p + nb) hold u_i writes schedule[i]: each
     * entry is written exactly once. */
    for (int b = b0; b < b1; ++b) {
        const int nb = qg_pmqa_blocks(context_lens, b, next_n, max_context_len);
        if (nb > 0) {
            long long i = (p * num_ctas + total - 1) / total; /* first i with u_i >= p */
            for (; i < num_ctas; ++i) {
                const long long u = i * total / num_ctas;
                if (u >= p + nb) break;
                schedule[2 * i] = b;
                schedule[2 * i + 1] = (int)(u - p);
            }
        }
        p += nb;
    }
    if (total == 0) /* no work: every CTA starts at the end */
        for (int i = tid; i < num_ctas; i += QG_SCHED_THREADS) {
            schedule[2 * i] = batch;
            schedule[2 * i + 1] = 0;
        }
    qg_launch_dependents();
}

#else /* the logits kernel */

static_assert(QG_PMQA_H == 32 || QG_PMQA_H == 64, "heads 32 or 64");
static_assert(QG_PMQA_D == 32 || QG_PMQA_D == 64 || QG_PMQA_D == 128, "head dim 32, 64 or 128");
static_assert(QG_PMQA_NEXT_N == 1 || QG_PMQA_NEXT_N == 2, "next_n 1 or 2");
#ifndef QG_PMQA_MATH_WGS
#define QG_PMQA_MATH_WGS 2
#endif
static_assert(QG_PMQA_MATH_WGS == 2 || QG_PMQA_MATH_WGS == 4, "2 or 4 math warpgroups");
/* QG_PMQA_STRIDE_WALK 1: each math warpgroup walks its own units only
 * (qg_pmqa_swalk: a jump of W units, W = CTAS x MATH_WGS in the range, over
 * batch entries by the remainder) instead of stepping through every unit of
 * the CTA (qg_pmqa_walk, the other warpgroups' units too). split4's
 * producer warp i walks warpgroup i's strided walk; the struct stays
 * general in CTAS (tools/pmqa_walk_check.sh checks it at 1 and 2 CTAs an
 * SM) but the kernel strides at one CTA an SM only (asserted below). Both
 * walks give each unit the same (b, k), stage and parity, and every
 * warpgroup the same segments in the same order (the same check). */
#ifndef QG_PMQA_STRIDE_WALK
#define QG_PMQA_STRIDE_WALK 0
#endif
/* QG_PMQA_SPLIT 1 (split4, 2026-11-29): DeepGEMM's organisation: warp i of
 * the producer warpgroup feeds math warpgroup i alone. The stages stay one
 * array of STAGES = W x S: warpgroup i's m-th unit takes stage i + W (m mod
 * S), parity (m / S) & 1 -- exactly the stage and parity the unit walk gives
 * the CTA's unit u = i + W m (u mod W S, u / (W S)); producer warp i walks the same strided walk as warpgroup i
 * (qg_pmqa_swalk, first unit i) and fills only those stages. Producer warp
 * 0 also loads q at each segment of its walk (every walk reports every
 * segment of the CTA; the clean form's -inf tail runs on the 4 producer
 * warps after their walks).
 *
 * Why it cannot deadlock (the split organisation of 2026-11-28 hung on the
 * H200, cause unknown; its q ring was the suspect). The waits:
 *   (a) math warpgroup i, unit m: kv_full of its stage, phase (m / S) & 1;
 *       only producer warp i arrives on it, when it issues unit m;
 *   (b) producer warp i, unit m: kv_empty of that stage, for unit m - S;
 *       only warpgroup i arrives on it, after unit m - S's wgmma;
 *   (c) math warpgroup i at segment g: q_full[g & 1], phase (g >> 1) & 1;
 *       producer warp 0 arrives (TMA) at its segment event g;
 *   (d) producer warp 0 at segment event g: q_empty[g & 1] for segment g - 2;
 *       every math thread arrives once at its event g - 1 (before its wait
 *       (c) for g - 1), or at its end.
 * Order the events of each agent by its walk; all agents walk the same
 * segment sequence (tools/pmqa_walk_check.sh checks the walks' code).
 * Induction on g: suppose q segments < g are loaded. Warpgroup i's units
 * in segments < g need only (a), fed by producer warp i, which needs only
 * (b) for earlier units of the same pair (producer i != 0 never waits on
 * q; producer 0's q waits for segments <= g - 1 are (d) on segments <= g -
 * 3, completed by the same induction), so every warpgroup reaches its event
 * g - 1 and arrives for g - 2 there; then (d) for g holds, producer 0
 * loads q g (after issuing warpgroup 0's units before it, which only need
 * (b)), and (c) for g holds. No wait depends on a later event of another
 * agent: no cycle. The ring sizes do not matter (S >= 1); the arrive for
 * g - 2 precedes the wait for g - 1 in each math thread, and no thread
 * arrives twice on one q_empty phase (it arrives for g only after waiting
 * q_full of g + 1, which producer 0 loaded after q_empty's phase of g - 1
 * completed). */
#ifndef QG_PMQA_SPLIT
#define QG_PMQA_SPLIT 0
#endif
static_assert(!QG_PMQA_SPLIT || (QG_PMQA_MATH_WGS == 4 && QG_PMQA_CTAS == 1 && QG_PMQA_STRIDE_WALK),
              "split4: 4 math warpgroups, one CTA an SM, the strided walk");
/* the organisations the planner builds (src/indexer_plan.c): 4 math
 * warpgroups and the strided walk are split4's alone */
static_assert(QG_PMQA_SPLIT || (QG_PMQA_MATH_WGS == 2 && !QG_PMQA_STRIDE_WALK),
              "shared2 / dual2: 2 math warpgroups, the unit walk");
/* QG_PMQA_WREG w > 0 (split4r112w, 2026-11-29): split4 with w of each math
 * thread's N / 4 weights in registers (DeepGEMM keeps all N / 4, loaded
 * once a batch segment, as shared2 does), the rest read from L1 in every
 * epilogue as split4 does. Below N = 128 the math warpgroups' 104
 * registers (setmaxnreg as split4) hold all N / 4; at N = 128 the 64
 * accumulators leave room for them only with setmaxnreg 112 and the lean
 * unit loop (QG_PMQA_MATH112, QG_PMQA_LEAN): 32, or 28 in the clean form at
 * D 64 (ptxas -v: 0 spills; 104 registers held 16, 8 clean). The unit's
 * offsets are folded once a segment and every shared address (q, kv,
 * scales, kv barriers) comes from one base register plus constants. The
 * epilogue multiplies the same values in the same order (wt(j, e) is the
 * same weight in every form): bitwise the logits of split4 and shared2. */
#ifndef QG_PMQA_WREG
#define QG_PMQA_WREG 0
#endif
static_assert(!QG_PMQA_WREG || QG_PMQA_SPLIT, "weights in registers: the split4 form only");
/* QG_PMQA_CTAS: CTAs per SM (1, or 2: grid 2 x the schedule's ranges; CTA
 * 2r + p takes the units of range r with index = p mod 2, so the schedule
 * (one range per SM) and its contract stay as they are, and each SM runs
 * two independent producer / kv ring / math pipelines: twice the TMA
 * issuers and the units in flight of the 1-CTA form). */
#ifndef QG_PMQA_CTAS
#define QG_PMQA_CTAS 1
#endif
static_assert(QG_PMQA_CTAS == 1 || (QG_PMQA_CTAS == 2 && QG_PMQA_MATH_WGS == 2),
              "two CTAs per SM: the 2-warpgroup organisation");
/* QG_PMQA_NSPLIT (QG_PMQA_CTAS 2 at N = 128, i.e. next_n 2, H 64): a unit
 * runs as two wgmma.m64n64 passes, one per query n (32 accumulators, the
 * weights read from L1 where used), so the math fits the 80 registers of
 * two CTAs an SM; the sums and their order are those of the one-pass form. */
#if QG_PMQA_CTAS == 2 && QG_PMQA_NEXT_N * QG_PMQA_H == 128
#define QG_PMQA_NSPLIT 1
#else
#define QG_PMQA_NSPLIT 0
#endif
/* the producer reads the block table a window ahead (dual2) */
#define QG_PMQA_BT_AHEAD (QG_PMQA_CTAS == 2)
static_assert(QG_PMQA_STAGES % QG_PMQA_MATH_WGS == 0 && QG_PMQA_STAGES >= QG_PMQA_MATH_WGS,
              "stages a multiple of the math warpgroups (unit u -> warpgroup u % W)");

#define QG_PMQA_N (QG_PMQA_NEXT_N * QG_PMQA_H) /* 32, 64 or 128 columns */
#define QG_PMQA_ACC (QG_PMQA_N / 2)
/* the accumulators of one unit's wgmma pass */
#if QG_PMQA_NSPLIT
#define QG_PMQA_UACC 32
#else
#define QG_PMQA_UACC QG_PMQA_ACC
#endif
#define QG_PMQA_THREADS (128 * (QG_PMQA_MATH_WGS + 1))
#define QG_PMQA_PRODUCER_WARP (4 * QG_PMQA_MATH_WGS)
#ifndef QG_PMQA_MATH112
#define QG_PMQA_MATH112 0
#endif
/* QG_PMQA_MATH_TAIL 1 (split4r112w's clean form at N = 128): the math warps write
 * the -inf past each row's last block (qg_pmqa_clean_tail, 512 threads)
 * after their last unit instead of the producer warps after their walks:
 * the producers then need only the walk, which fits 32 registers (the tail
 * spilled under 24, 32 and 40 at next_n 2), so the clean form can run
 * 32 / 112 and its weights in registers. The tail's columns
 * (>= 64 nb(b)) are disjoint from every unit's; the values are the same:
 * bitwise the logits of the producers' tail. */
#ifndef QG_PMQA_MATH_TAIL
#define QG_PMQA_MATH_TAIL 0
#endif
/* QG_PMQA_LEAN 1 (split4r112w at N = 128, with QG_PMQA_MATH112): fewer live
 * registers in the math's unit loop, for more weights in registers: the
 * stage and its parity in one register (x = s + STAGES ph), one key scale a
 * thread (its half's, the address folded once a segment) instead of both
 * halves'. The same products in the same order: bitwise the logits of the
 * loop without it. */
#ifndef QG_PMQA_LEAN
#define QG_PMQA_LEAN 0
#endif
/* QG_PMQA_RUN 1 (split4r112x, issue 50): the split forms' unit loops (math
 * warpgroups and producer warps) walk a run of units of one batch entry with
 * one compare a unit (k < qg_pmqa_swalk::run_end(), taken once a run)
 * instead of settle()'s done() / k < nb test a unit: the ncu of
 * 2026-11-29 (h200-08-v2) counted that test at ~20 instructions a unit and
 * warp (bools materialised with PRMT / SEL, a BSSY region), ~45 M of the
 * 48 M instructions qgemm ran more than DeepGEMM at B 4096 N 2 H 64. The
 * same units in the same order (tools/pmqa_walk_check.sh checks that every
 * unit the run passes is one settle() would have returned): bitwise the
 * logits of the loop without it. */
#ifndef QG_PMQA_RUN
#define QG_PMQA_RUN 0
#endif
static_assert(!QG_PMQA_RUN || QG_PMQA_SPLIT, "the run loop: the split forms' strided walk");
/* QG_PMQA_PADDR 1 (split4r112p, issue 50): split4r112x whose producer warps
 * issue a unit from shared-window addresses made from one base register
 * (computed once, opaque to the compiler) plus constants: the kv barriers,
 * the stage's kv and scale destinations; the generic pointers of the other
 * forms cost an S2R SR_CgaCtaId, a MOV and a LEA a unit (the SASS of
 * split4r112x's producer run loop, 80 instructions a unit) and a generic ->
 * shared conversion per operand. The block-table lane index as an unsigned
 * quotient (k >= win_k: a shift, not the signed division's fix-up). The same
 * loads into the same stages: timing only, the same logits. */
#ifndef QG_PMQA_PADDR
#define QG_PMQA_PADDR 0
#endif
static_assert(!QG_PMQA_PADDR || QG_PMQA_RUN,
              "the producer's shared addresses: split4r112p (split4r112x's run loop)");
/* QG_PMQA_UNI 1 (split4r112u, issue 50): split4r112p whose walk values that
 * steer control flow (settle()'s event, the run's first k and end, the
 * warpgroup's first stage) are broadcast from lane 0 (__shfl_sync; every
 * lane of a warp computes the same walk, so the values are the same): ptxas
 * then sees the branches as warp-uniform and keeps the stage, its parity,
 * the wgmma descriptors and the barrier addresses in uniform registers (U
 * ops, as DeepGEMM's SASS has them) instead of building each descriptor in
 * vector registers and moving it over (16 R2UR and their arithmetic a unit
 * and math warp in split4r112x's SASS). A value computed inside a loop whose
 * exit is per-thread is per-thread after it (threads may leave at different
 * trips), which is why the stage, carried from run to run, stayed in vector
 * registers without the broadcasts. The math's run keeps k and the stage in
 * two registers (the stage a uniform one) instead of split4r112x's packed
 * kx, and the descriptors' | (1 << 16) is folded into one add (see the
 * call). The same units, stages and descriptors: the same logits. */
#ifndef QG_PMQA_UNI
#define QG_PMQA_UNI 0
#endif
static_assert(!QG_PMQA_UNI || (QG_PMQA_PADDR && QG_PMQA_WREG),
              "the uniform walk: split4r112u (split4r112p's, weights in registers)");
#if QG_PMQA_UNI
#define QG_PMQA_BCAST(v) __shfl_sync(0xffffffffu, (v), 0)
#else
#define QG_PMQA_BCAST(v) (v)
#endif
/* split4r112w's forms, as the planner builds them: 112 math registers with
 * the lean loop, at N = 128 only, always with weights in registers (all N /
 * 4 without them), the clean tail on the math warps exactly then */
static_assert(QG_PMQA_LEAN == QG_PMQA_MATH112, "the lean unit loop: with setmaxnreg 32 / 112 alone");
static_assert(!QG_PMQA_MATH112 || (QG_PMQA_WREG && QG_PMQA_N == 128),
              "112 math registers: weights in registers at N = 128");
static_assert(QG_PMQA_MATH112 || QG_PMQA_WREG == 0 || QG_PMQA_WREG == QG_PMQA_N / 4,
              "weights in registers without 112: all N / 4 of them");
static_assert(QG_PMQA_MATH_TAIL == (QG_PMQA_MATH112 && QG_PMQA_CLEAN),
              "the math tail: the clean form at 112 math registers, where the producers have 32");
#if QG_PMQA_MATH112
/* split4r112w at N = 128: the producer warps' .dec to 32 frees 128 x 64 = 8192
 * registers, the math's .inc to 112 takes 512 x 16 = 8192: balanced
 * exactly, as DeepGEMM's 64 / 104 are (no register that no warpgroup
 * released). The producer walk alone fits 32 (no clean tail: the clean
 * tail moves to the math warps: QG_PMQA_MATH_TAIL); the math's 8 more
 * registers and the lean loop hold all 32 weights at N = 128 (28 clean at
 * D 64; ptxas -v: 0 spills). 112 is the most the math can reach: the CTA's
 * register pool (PTX ISA, setmaxnreg: per CTA; .inc blocks until the pool
 * has enough) is its launch allocation, 640 x 96 = 61440 (104 x 640 would
 * exceed the SM's 65536), and the producers can give at most 128 x (96 -
 * 24) = 9216 of it: 512 x 18 more a math thread, 112 in steps of 8. 4 x 128
 * x 120 = 61440 would leave the producer warpgroup nothing (32 / 120 asks
 * 4096 registers the pool never holds: a .inc that never returns, the likely
 * cause of the 2026-11-28 split form's hang). */
#define QG_PMQA_PRODUCER_REGS 32
#define QG_PMQA_MATH_REGS 112
#elif QG_PMQA_SPLIT
/* split4 (and split4r112w below N = 128): launched at 96 a thread (640 threads); the producer warpgroup's
 * setmaxnreg.dec to 48 frees 128 x 48 = 6144 registers, the math's .inc to
 * 104 takes 512 x 8 = 4096: the increase never needs registers that no
 * warpgroup released (DeepGEMM's 64 / 104 balance exactly). The split form
 * of 2026-11-28 took 32 / 120: its .inc needed 4096 more than the .dec
 * freed, every register of the SM -- a hang at the first launch if the
 * pool is short (an unproven guess at its cause). The producer warps walk
 * and then run the clean form's tail (spills under 24, 32 and 40 at next_n
 * 2); the math reads its weights from L1 (split4r112w: all N / 4 in
 * registers). */
#define QG_PMQA_PRODUCER_REGS 48
#define QG_PMQA_MATH_REGS 104
#endif
#define QG_PMQA_SMEM_Q QG_ROUND_UP_1K(QG_PMQA_N * QG_PMQA_D)
#define QG_ROUND_UP_1K(x) (((x) + 1023) / 1024 * 1024)
#define QG_PMQA_SMEM_KV (QG_PMQA_BLOCK * QG_PMQA_D)
#define QG_PMQA_SMEM_PLAN                                                                 \
    (1024 + 2 * QG_PMQA_SMEM_Q + QG_PMQA_STAGES * (QG_PMQA_SMEM_KV + QG_PMQA_BLOCK * 4) + \
     (4 + 2 * QG_PMQA_STAGES) * 8)
static_assert(QG_PMQA_SMEM_PLAN == QG_PMQA_SMEM_BYTES, "host and kernel shared-memory plans differ");
#if QG_PMQA_D == 128
#define QG_PMQA_DESC_HI QG_WGMMA_DESC_SW128_HI
#elif QG_PMQA_D == 64
#define QG_PMQA_DESC_HI QG_WGMMA_DESC_SW64_HI
#else
#define QG_PMQA_DESC_HI QG_WGMMA_DESC_SW32_HI
#endif
#if QG_PMQA_N == 128
#define QG_PMQA_WGMMA qg_wgmma_m64n128k32_e4m3_ss
#elif QG_PMQA_N == 64
#define QG_PMQA_WGMMA qg_wgmma_m64n64k32_e4m3_ss
#else
#define QG_PMQA_WGMMA qg_wgmma_m64n32k32_e4m3_ss
#endif

#if QG_PMQA_BF16
typedef uint16_t qg_plogit_t;
#define QG_PNEG_INF_WORD 0xFF80FF80u
#else
typedef float qg_plogit_t;
#define QG_PNEG_INF_WORD 0xFF800000u
#endif

QG_DEVICE void qg_pmqa_store(qg_plogit_t *p, float v) {
#if QG_PMQA_BF16
    *p = (uint16_t)(qg_pack_bf16x2(v, 0.0f) & 0xFFFFu);
#else
    *p = v;
#endif
}

/* ---- the walks (tools/pmqa_walk_check.sh compiles this part on the host) ---- */
QG_DEVICE int qg_pmqa_ctx(const int *ctx, int b, int n, int max_context_len) {
    return min(max(__ldg(ctx + b * QG_PMQA_NEXT_N + n), 0), max_context_len);
}

QG_DEVICE int qg_pmqa_nb(const int *ctx, int b, int max_context_len) {
    int m = 0;
#pragma unroll
    for (int n = 0; n < QG_PMQA_NEXT_N; ++n) m = max(m, qg_pmqa_ctx(ctx, b, n, max_context_len));
    return (m + QG_PMQA_BLOCK - 1) / QG_PMQA_BLOCK;
}

/* Walks the CTA's units in order: (b, k) and the batch's unit count nb;
 * next() steps over batch entries with no unit. */
struct qg_pmqa_walk {
    int b, k, nb, end_b, end_k;
    const int *ctx;
    int max_len;
    QG_DEVICE void init(const int *schedule, const int *c, int max_context_len, int batch) {
        ctx = c;
        max_len = max_context_len;
        const unsigned r = blockIdx.x / QG_PMQA_CTAS; /* the schedule's range */
        b = min(max(schedule[2 * r], 0), batch);
        k = max(schedule[2 * r + 1], 0);
        end_b = min(max(schedule[2 * r + 2], 0), batch);
        end_k = max(schedule[2 * r + 3], 0);
        nb = b < batch ? qg_pmqa_nb(ctx, b, max_len) : 0;
        skip(batch);
#if QG_PMQA_CTAS == 2
        if ((blockIdx.x & 1) && !done()) step(batch); /* the odd units */
#endif
    }
    QG_DEVICE bool done() const { return b > end_b || (b == end_b && k >= end_k); }
    QG_DEVICE void skip(int batch) {
        while (b < batch && k >= nb && !done()) {
            ++b;
            k = 0;
            nb = b < batch ? qg_pmqa_nb(ctx, b, max_len) : 0;
        }
        if (b >= batch) b = end_b = batch, k = end_k = 0;
    }
    QG_DEVICE void step(int batch) {
        ++k;
        skip(batch);
    }
    /* the CTA's next unit (QG_PMQA_CTAS 2: every other unit of the range) */
    QG_DEVICE void next(int batch) {
        step(batch);
#if QG_PMQA_CTAS == 2
        if (!done()) step(batch);
#endif
    }
};

#if QG_PMQA_STRIDE_WALK
/* A math warpgroup's walk over its own units: those of range index i = p +
 * CTAS (wg + W j), j = 0, 1, ... (p = blockIdx.x mod CTAS, W math
 * warpgroups; the CTA's unit u = wg + W j: stage u % STAGES, the same unit
 * qg_pmqa_walk gives the CTA's u-th step). (b, k): the target unit, k its
 * index in batch entry b, possibly >= nb(b) until settle() carries the
 * excess over the following entries. A segment (an entry holding a unit of
 * the CTA, which the producer loads a q for) is reported whether or not it
 * holds a unit of this warpgroup: the q ring's barriers count every math
 * thread once per segment. */
struct qg_pmqa_swalk {
    int b, k, nb, end_b, end_k;
    /* the start of the range as qg_pmqa_walk has it (entries with no unit
     * skipped), then the first target `first` units on; returns settle()'s
     * value, or 1 when the start's entry holds a unit of the CTA */
    QG_DEVICE int init(const int *schedule, const int *ctx, int max_len, int batch, int first) {
        const unsigned r = blockIdx.x / QG_PMQA_CTAS;
        b = min(max(schedule[2 * r], 0), batch);
        k = max(schedule[2 * r + 1], 0);
        end_b = min(max(schedule[2 * r + 2], 0), batch);
        end_k = max(schedule[2 * r + 3], 0);
        nb = b < batch ? qg_pmqa_nb(ctx, b, max_len) : 0;
        while (b < batch && k >= nb && !done()) {
            ++b;
            k = 0;
            nb = b < batch ? qg_pmqa_nb(ctx, b, max_len) : 0;
        }
        if (b >= batch) return -1;
        const int c = k + (int)(blockIdx.x % QG_PMQA_CTAS); /* the CTA's first unit */
        k += first;
        return c < nb && !done_at(b, c) ? 1 : settle(ctx, max_len, batch);
    }
    QG_DEVICE bool done_at(int bb, int kk) const { return bb > end_b || (bb == end_b && kk >= end_k); }
    QG_DEVICE bool done() const { return done_at(b, k); }
    /* QG_PMQA_RUN: the end of the run of units in entry b at a target (settle()
     * returned 0): every k' < run_end() with k' >= k is a target too (k' < nb,
     * not done_at(b, k')), so the loops step k over it without settle() and
     * call settle() once a run, where it leaves entry b or ends */
    QG_DEVICE int run_end() const { return b == end_b ? min(nb, end_k) : nb; }
    /* -1: done; 0: at the target (k < nb); 1: entered batch entry b, a
     * segment of the CTA (call again after it) */
    QG_DEVICE int settle(const int *ctx, int max_len, int batch) {
        for (;;) {
            if (done()) return -1;
            if (k < nb) return 0;
            k -= nb;
            if (++b >= batch) return -1;
            nb = qg_pmqa_nb(ctx, b, max_len);
            const int c = k % QG_PMQA_CTAS; /* the CTA's first unit in b */
            if (c < nb && !done_at(b, c)) return 1;
        }
    }
};
#endif
/* ---- end of the walks ---- */

/* -inf into row[a, b) by `nthreads` threads: scalar head and tail, 16-byte
 * streaming stores between. */
QG_DEVICE void qg_pmqa_fill(qg_plogit_t *row, int a, int b, int tid, int nthreads) {
    if (a >= b) return;
    const int per16 = 16 / (int)sizeof(qg_plogit_t);
    const int mis = (int)(((uint64_t)(row + a) & 15) / sizeof(qg_plogit_t));
    int v0 = mis ? a + (per16 - mis) : a;
    if (v0 > b) v0 = b;
    const int nvec = (b - v0) / per16, v1 = v0 + nvec * per16;
    for (int j = a + tid; j < v0; j += nthreads) qg_pmqa_store(row + j, -__int_as_float(0x7f800000));
    for (int i = tid; i < nvec; i += nthreads)
        qg_st_global_cs_v4(row + v0 + i * per16, QG_PNEG_INF_WORD, QG_PNEG_INF_WORD,
                           QG_PNEG_INF_WORD, QG_PNEG_INF_WORD);
    for (int j = v1 + tid; j < b; j += nthreads) qg_pmqa_store(row + j, -__int_as_float(0x7f800000));
}
/* The clean form's -inf past each row's last block: batch entries b =
 * blockIdx.x mod grid, by `nthreads` threads. */
QG_DEVICE void qg_pmqa_clean_tail(qg_plogit_t *logits, int64_t ld_logits, const int *ctx,
                                  int batch, int max_context_len, int tid, int nthreads) {
    for (int b = blockIdx.x; b < batch; b += gridDim.x) {
        const int from = min(qg_pmqa_nb(ctx, b, max_context_len) * QG_PMQA_BLOCK, max_context_len);
        for (int n = 0; n < QG_PMQA_NEXT_N; ++n)
            qg_pmqa_fill(logits + (int64_t)(b * QG_PMQA_NEXT_N + n) * ld_logits, from,
                         max_context_len, tid, nthreads);
    }
}

/* A kv barrier operand of a unit: a generic pointer (the unit walk's forms:
 * their PTX as before) or the barrier's shared address itself (the strided
 * forms: computed once before the loop; the ncu of 2026-11-29 counted the
 * generic -> shared conversion, an S2R SR_CgaCtaId and the LEA waiting on
 * it, once a unit on the path to the kv wait). */
QG_DEVICE void qg_pmqa_bar_wait(uint64_t *bar, uint32_t parity) { qg_mbarrier_wait(bar, parity); }
QG_DEVICE void qg_pmqa_bar_wait(uint32_t bar, uint32_t parity) { qg_mbarrier_wait_at(bar, parity); }
/* x, opaque to the compiler: a shared address computed once stays in its
 * register (NVVM otherwise re-derives it from the qg_smem_raw symbol at
 * each use in the loop, which ptxas lowers to the S2R above). */
QG_DEVICE uint32_t qg_pmqa_opaque(uint32_t x) {
    asm volatile("" : "+r"(x));
    return x;
}
QG_DEVICE void qg_pmqa_bar_arrive(uint64_t *bar) { qg_mbarrier_arrive(bar); }
QG_DEVICE void qg_pmqa_bar_arrive(uint32_t bar) { qg_mbarrier_arrive_at(bar); }
/* a load the compiler cannot merge with an earlier one of the same address (a
 * value re-read rather than kept in a register across a loop) */
QG_DEVICE int qg_pmqa_ld_keep(const int *p) {
    int v;
    asm volatile("ld.global.b32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
#if QG_PMQA_PADDR
/* a unit's kv block and scales (QG_PMQA_PADDR): expect the bytes on the
 * stage's full barrier, then the two TMA loads, every shared operand a
 * shared-window address (the generic forms of qg_ptx.cuh convert each) */
QG_DEVICE void qg_pmqa_issue_kv_at(uint32_t full, uint32_t kv_dst, uint32_t sc_dst,
                                   const qg_tensor_map *tmap_kv, const qg_tensor_map *tmap_sc,
                                   int phys) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%2], [%3, {%6, %6, %5}], [%0];\n"
                 "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%4], [%7, {%6, %5}], [%0];"
                 ::"r"(full), "n"(QG_PMQA_SMEM_KV + QG_PMQA_BLOCK * 4), "r"(kv_dst),
                 "l"((uint64_t)tmap_kv), "r"(sc_dst), "r"(phys), "r"(0),
                 "l"((uint64_t)tmap_sc)
                 : "memory");
}
#endif

/* One unit of a math warpgroup: wait for the kv stage behind `full`, one
 * wgmma.m64nNk32 per 32 of D into acc, committed as one group and waited
 * for (sc0 / sc1 read from the stage meanwhile); release the stage, then
 * relu * weight summed over heads (in-thread, then the quad's shfl_xor 1,
 * 2: a fixed order, bitwise reproducible; every variant the same) times the
 * key's scale, stored. wt(j, e): the weight of this lane's column 8j + 2t +
 * e. This thread's offsets come folded in (fewer live registers in the
 * loop): sc = the stage's scales + row0, dst = its row + row0 + 8 half; it
 * stores key key0 of dst if key0 < lim_ctx (the clean form: -inf if not,
 * while key0 < lim_max); a thread that stores nothing has both below any
 * key0. */
/* a key scale: from a pointer, or (QG_PMQA_WREG) from a shared address */
QG_DEVICE float qg_pmqa_ld_sc(const float *sc, int i) { return sc[i]; }
QG_DEVICE float qg_pmqa_ld_sc(uint32_t sc, int i) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(sc + 4 * i));
    return v;
}
template <typename Weight, typename Bar, typename Sc>
QG_DEVICE void qg_pmqa_unit_at(float (&acc)[QG_PMQA_ACC], const Weight &wt, Bar full,
                               Bar empty, uint32_t parity, Sc sc, uint32_t q_lo,
                               uint32_t kv_lo, int my_n, int my_half, int key0, qg_plogit_t *dst,
                               int lim_ctx, int lim_max) {
    qg_pmqa_bar_wait(full, parity);
#pragma unroll
    for (int i = 0; i < QG_PMQA_ACC; ++i) qg_fence_operand(acc[i]);
    qg_wgmma_fence();
#pragma unroll
    for (int k = 0; k < QG_PMQA_D / 32; ++k)
#if QG_PMQA_UNI
        /* kv_lo / q_lo come with the descriptors' bit 16 (LBO 1) added (the
         * caller's lo_a): + 2k cannot carry into it */
        QG_PMQA_WGMMA(acc, kv_lo + k * 2, q_lo + k * 2, QG_PMQA_DESC_HI, k);
#else
        QG_PMQA_WGMMA(acc, (kv_lo + k * 2) | (1u << 16), (q_lo + k * 2) | (1u << 16),
                      QG_PMQA_DESC_HI, k);
#endif
    qg_wgmma_commit();
#pragma unroll
    for (int i = 0; i < QG_PMQA_ACC; ++i) qg_fence_operand(acc[i]);
    /* the scales while the tensor core runs */
#if QG_PMQA_LEAN
    /* QG_PMQA_LEAN: sc comes with this thread's half folded in (row0 + 8
     * my_half): one scale, one register */
    const float scv = qg_pmqa_ld_sc(sc, 0);
#else
    const float sc0 = qg_pmqa_ld_sc(sc, 0), sc1 = qg_pmqa_ld_sc(sc, 8);
#endif
    qg_wgmma_wait0();
    qg_pmqa_bar_arrive(empty);

    float v = 0.0f;
#pragma unroll
    for (int n = 0; n < QG_PMQA_NEXT_N; ++n) {
        float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
        for (int j = n * (QG_PMQA_H / 8); j < (n + 1) * (QG_PMQA_H / 8); ++j) {
            a0 = fmaf(fmaxf(acc[4 * j + 0], 0.0f), wt(j, 0), a0);
            a0 = fmaf(fmaxf(acc[4 * j + 1], 0.0f), wt(j, 1), a0);
            a1 = fmaf(fmaxf(acc[4 * j + 2], 0.0f), wt(j, 0), a1);
            a1 = fmaf(fmaxf(acc[4 * j + 3], 0.0f), wt(j, 1), a1);
        }
        a0 += __shfl_xor_sync(0xffffffffu, a0, 1);
        a1 += __shfl_xor_sync(0xffffffffu, a1, 1);
        a0 += __shfl_xor_sync(0xffffffffu, a0, 2);
        a1 += __shfl_xor_sync(0xffffffffu, a1, 2);
#if QG_PMQA_LEAN
        if (n == my_n) v = (my_half ? a1 : a0) * scv; /* the same product */
#else
        if (n == my_n) v = my_half ? a1 * sc1 : a0 * sc0;
#endif
    }
#if QG_PMQA_CLEAN
    if (key0 < lim_max) qg_pmqa_store(dst + key0, key0 < lim_ctx ? v : -__int_as_float(0x7f800000));
#else
    (void)lim_max;
    if (key0 < lim_ctx) qg_pmqa_store(dst + key0, v);
#endif
}

#if QG_PMQA_NSPLIT
/* qg_pmqa_unit_at in two passes (QG_PMQA_NSPLIT): query n's 64 columns
 * (q rows 64n .. 64n + 63, 64 D bytes each: whole swizzle atoms) into the
 * 32 accumulators, reduced exactly as the one-pass form reduces its
 * columns 64n .. 64n + 63; the stage is released after the second pass. */
template <typename Weight, typename Bar>
QG_DEVICE void qg_pmqa_unit_split_at(float (&acc)[32], const Weight &wt, Bar full,
                                     Bar empty, uint32_t parity, const float *sc,
                                     uint32_t q_lo, uint32_t kv_lo, int my_n, int my_half,
                                     int key0, qg_plogit_t *dst, int lim_ctx, int lim_max) {
    qg_pmqa_bar_wait(full, parity);
    float sc0 = 0.0f, sc1 = 0.0f, v = 0.0f;
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int i = 0; i < 32; ++i) qg_fence_operand(acc[i]);
        qg_wgmma_fence();
#pragma unroll
        for (int k = 0; k < QG_PMQA_D / 32; ++k)
            qg_wgmma_m64n64k32_e4m3_ss(acc, (kv_lo + k * 2) | (1u << 16),
                                       (q_lo + n * (64 * QG_PMQA_D >> 4) + k * 2) | (1u << 16),
                                       QG_PMQA_DESC_HI, k);
        qg_wgmma_commit();
#pragma unroll
        for (int i = 0; i < 32; ++i) qg_fence_operand(acc[i]);
        if (n == 0) sc0 = sc[0], sc1 = sc[8]; /* the scales while the tensor core runs */
        qg_wgmma_wait0();
        if (n == 1) qg_pmqa_bar_arrive(empty);
        float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            a0 = fmaf(fmaxf(acc[4 * j + 0], 0.0f), wt(8 * n + j, 0), a0);
            a0 = fmaf(fmaxf(acc[4 * j + 1], 0.0f), wt(8 * n + j, 1), a0);
            a1 = fmaf(fmaxf(acc[4 * j + 2], 0.0f), wt(8 * n + j, 0), a1);
            a1 = fmaf(fmaxf(acc[4 * j + 3], 0.0f), wt(8 * n + j, 1), a1);
        }
        a0 += __shfl_xor_sync(0xffffffffu, a0, 1);
        a1 += __shfl_xor_sync(0xffffffffu, a1, 1);
        a0 += __shfl_xor_sync(0xffffffffu, a0, 2);
        a1 += __shfl_xor_sync(0xffffffffu, a1, 2);
        if (n == my_n) v = my_half ? a1 * sc1 : a0 * sc0;
    }
#if QG_PMQA_CLEAN
    if (key0 < lim_max) qg_pmqa_store(dst + key0, key0 < lim_ctx ? v : -__int_as_float(0x7f800000));
#else
    (void)lim_max;
    if (key0 < lim_ctx) qg_pmqa_store(dst + key0, v);
#endif
}
#endif

/* The same from the row `out`, row0 and the context length. */
template <typename Weight, typename Bar>
QG_DEVICE void qg_pmqa_unit(float (&acc)[QG_PMQA_UACC], const Weight &wt, Bar full,
                            Bar empty, uint32_t parity, const float *sc, uint32_t q_lo,
                            uint32_t kv_lo, int row0, int my_n, int my_half, int key0, int my_ctx,
                            int max_context_len, qg_plogit_t *out) {
#if QG_PMQA_NSPLIT
#define QG_PMQA_UNIT_AT qg_pmqa_unit_split_at
#else
#define QG_PMQA_UNIT_AT qg_pmqa_unit_at
#endif
    QG_PMQA_UNIT_AT(acc, wt, full, empty, parity, sc + row0, q_lo, kv_lo, my_n, my_half, key0,
                    out + row0 + 8 * my_half,
                    my_half < 2 ? my_ctx - row0 - 8 * my_half : -0x7fffffff,
                    my_half < 2 ? max_context_len - row0 - 8 * my_half : -0x7fffffff);
}

/* tmap_q: u8 D x batch*N, box D x N; tmap_kv: u8 D x 64 x blocks (strides D,
 * block_stride), box D x 64 x 1; tmap_sc: f32 64 x blocks at cache + 64 D
 * (stride block_stride), box 64 x 1 (src/indexer_plan.h) */
extern "C" __global__ void __launch_bounds__(QG_PMQA_THREADS, QG_PMQA_CTAS)
qg_paged_mqa_logits_kernel(const __grid_constant__ qg_tensor_map tmap_q,
                           const __grid_constant__ qg_tensor_map tmap_kv,
                           const __grid_constant__ qg_tensor_map tmap_sc,
                           const float *__restrict__ weights, int64_t ld_weights,
                           const int *__restrict__ context_lens,
                           const int *__restrict__ block_table, int64_t block_table_ld,
                           const int *__restrict__ schedule, qg_plogit_t *__restrict__ logits,
                           int64_t ld_logits, int batch, int max_context_len) {
    extern __shared__ __align__(1024) unsigned char qg_smem_raw[];
    unsigned char *smem = qg_smem_raw + ((1024 - (qg_smem_addr(qg_smem_raw) & 1023)) & 1023);
    unsigned char *smem_q = smem;
    unsigned char *smem_kv = smem_q + 2 * QG_PMQA_SMEM_Q;
    float *smem_sc = (float *)(smem_kv + QG_PMQA_STAGES * QG_PMQA_SMEM_KV);
    uint64_t *q_full = (uint64_t *)(smem_sc + QG_PMQA_STAGES * QG_PMQA_BLOCK);
    uint64_t *q_empty = q_full + 2;
    uint64_t *kv_full = q_empty + 2;
    uint64_t *kv_empty = kv_full + QG_PMQA_STAGES;

    const int warp = (int)(threadIdx.x / 32), lane = (int)(threadIdx.x % 32);
    if (warp == QG_PMQA_PRODUCER_WARP && qg_elect_one()) {
        qg_tma_prefetch_descriptor(&tmap_q);
        qg_tma_prefetch_descriptor(&tmap_kv);
        qg_tma_prefetch_descriptor(&tmap_sc);
        for (int i = 0; i < 2; ++i) {
            qg_mbarrier_init(&q_full[i], 1);
            qg_mbarrier_init(&q_empty[i], 128 * QG_PMQA_MATH_WGS);
        }
        for (int i = 0; i < QG_PMQA_STAGES; ++i) {
            qg_mbarrier_init(&kv_full[i], 1);
            qg_mbarrier_init(&kv_empty[i], 128);
        }
        qg_fence_mbarrier_init();
    }
    __syncthreads();
    qg_grid_dependency_wait(); /* the schedule kernel's output */

    /* one producer warp feeds the math warpgroups through one kv ring */
    const int wg = warp / 4, t = lane % 4;
    /* split4: setmaxnreg before the role branches (ptxas then compiles every
     * role to the launch's 96, which the clean tail needs). */
#if defined(QG_PMQA_PRODUCER_REGS)
    if (warp >= QG_PMQA_PRODUCER_WARP) qg_setmaxnreg_dec<QG_PMQA_PRODUCER_REGS>();
    else qg_setmaxnreg_inc<QG_PMQA_MATH_REGS>();
#endif
#if QG_PMQA_SPLIT
    if (warp >= QG_PMQA_PRODUCER_WARP) {
        /* ---- producer warp pi feeds math warpgroup pi (and warp 0 loads q) ---- */
        const int pi = warp - QG_PMQA_PRODUCER_WARP;
        qg_pmqa_swalk wk;
        int g = 0, s = QG_PMQA_BCAST(pi), win_b = -1, win_k = 0, win = 0;
        uint32_t ph = 0;
#if QG_PMQA_PADDR
        /* every shared operand of a unit from this one register (smem is
         * kv_full's, the stages' and the scales' base: offsets constant) */
        const uint32_t pbase = qg_pmqa_opaque(qg_smem_addr(smem));
#endif
        for (int ev = QG_PMQA_BCAST(wk.init(schedule, context_lens, max_context_len, batch, pi));
             ev >= 0;) {
            if (ev > 0) { /* the CTA's g-th segment: its q (warp 0) */
                if (pi == 0 && lane == 0) {
                    const int qs = g & 1;
                    qg_mbarrier_wait(&q_empty[qs], ((g >> 1) & 1) ^ 1);
                    qg_mbarrier_arrive_expect_tx(&q_full[qs], QG_PMQA_N * QG_PMQA_D);
                    qg_tma_load_2d(smem_q + qs * QG_PMQA_SMEM_Q, &tmap_q, &q_full[qs], 0,
                                   wk.b * QG_PMQA_N);
                }
                __syncwarp();
                ++g;
                ev = QG_PMQA_BCAST(wk.settle(context_lens, max_context_len, batch));
                continue;
            }
#if QG_PMQA_RUN
#if QG_PMQA_UNI
            wk.k = QG_PMQA_BCAST(wk.k);
#endif
            const int k_end = QG_PMQA_BCAST(wk.run_end());
            do {
#endif
            /* the block table: lane l holds this warp's unit win_k + W l of entry win_b */
            if (wk.b != win_b || wk.k >= win_k + 32 * QG_PMQA_MATH_WGS) {
                win_b = wk.b;
                win_k = wk.k;
                const int kk = win_k + QG_PMQA_MATH_WGS * lane;
                win = kk < wk.nb ? __ldg(block_table + (int64_t)wk.b * block_table_ld + kk) : 0;
            }
#if QG_PMQA_PADDR
            /* wk.k >= win_k here: the unsigned quotient is a shift */
            const int phys = __shfl_sync(0xffffffffu, win,
                                         (int)((unsigned)(wk.k - win_k) / QG_PMQA_MATH_WGS));
            if (lane == 0) {
                constexpr uint32_t kv_off = 2 * QG_PMQA_SMEM_Q;
                constexpr uint32_t sc_off = kv_off + QG_PMQA_STAGES * QG_PMQA_SMEM_KV;
                constexpr uint32_t bar_off = sc_off + QG_PMQA_STAGES * QG_PMQA_BLOCK * 4 + 4 * 8;
                const uint32_t full = pbase + bar_off + 8 * s;
                qg_pmqa_bar_wait(full + 8 * QG_PMQA_STAGES, ph ^ 1u); /* kv_empty[s] */
                qg_pmqa_issue_kv_at(full, pbase + kv_off + s * QG_PMQA_SMEM_KV,
                                    pbase + sc_off + s * (QG_PMQA_BLOCK * 4), &tmap_kv, &tmap_sc,
                                    phys);
            }
#else
            const int phys = __shfl_sync(0xffffffffu, win, (wk.k - win_k) / QG_PMQA_MATH_WGS);
            if (lane == 0) {
                qg_mbarrier_wait(&kv_empty[s], ph ^ 1u);
                qg_mbarrier_arrive_expect_tx(&kv_full[s], QG_PMQA_SMEM_KV + QG_PMQA_BLOCK * 4);
                qg_tma_load_3d(smem_kv + s * QG_PMQA_SMEM_KV, &tmap_kv, &kv_full[s], 0, 0, phys);
                qg_tma_load_2d(smem_sc + s * QG_PMQA_BLOCK, &tmap_sc, &kv_full[s], 0, phys);
            }
#endif
            __syncwarp();
            s += QG_PMQA_MATH_WGS;
            if (s >= QG_PMQA_STAGES) s -= QG_PMQA_STAGES, ph ^= 1u;
            wk.k += QG_PMQA_MATH_WGS;
#if QG_PMQA_RUN
            } while (wk.k < k_end);
#endif
            ev = QG_PMQA_BCAST(wk.settle(context_lens, max_context_len, batch));
        }
#if QG_PMQA_CLEAN && !QG_PMQA_MATH_TAIL
        qg_pmqa_clean_tail(logits, ld_logits, context_lens, batch, max_context_len,
                           (int)threadIdx.x - 128 * QG_PMQA_MATH_WGS, 128);
#endif
    }
#else
    if (warp == QG_PMQA_PRODUCER_WARP) {
        /* ---- producer: the whole warp walks (block-table window), one lane issues ---- */
        qg_pmqa_walk wk;
        wk.init(schedule, context_lens, max_context_len, batch);
        int u = 0, g = 0, seg_b = -1, win_k = -1;
        int win = 0;
#if QG_PMQA_BT_AHEAD
        int win_next = 0; /* entries win_k + 32 .. + 63, loaded a window ahead */
#endif
        while (!wk.done()) {
            if (wk.b != seg_b) { /* a new batch segment: its q */
                seg_b = wk.b;
                win_k = -1;
                const int qs = g & 1;
                if (lane == 0) {
                    qg_mbarrier_wait(&q_empty[qs], ((g >> 1) & 1) ^ 1);
                    qg_mbarrier_arrive_expect_tx(&q_full[qs], QG_PMQA_N * QG_PMQA_D);
                    qg_tma_load_2d(smem_q + qs * QG_PMQA_SMEM_Q, &tmap_q, &q_full[qs], 0,
                                   wk.b * QG_PMQA_N);
                }
                ++g;
            }
#if QG_PMQA_BT_AHEAD
            /* the block table a window (32 entries) ahead of the TMA issue:
             * its load latency stays off the kv ring's critical path except
             * at a segment's start (inside a segment wk.k steps by 2 from a
             * start of the CTA's parity, so it meets win_k + 32 exactly;
             * anything else reloads) */
            if (win_k < 0 || wk.k >= win_k + 32) {
                const int *row = block_table + (int64_t)wk.b * block_table_ld;
                if (win_k >= 0 && wk.k == win_k + 32) {
                    win = win_next;
                } else {
                    const int kk = wk.k + lane;
                    win = kk < wk.nb ? __ldg(row + kk) : 0;
                }
                win_k = wk.k;
                const int kn = win_k + 32 + lane;
                win_next = kn < wk.nb ? __ldg(row + kn) : 0;
            }
#else
            if (win_k < 0 || wk.k >= win_k + 32) { /* the next 32 block-table entries */
                win_k = wk.k;
                const int kk = win_k + lane;
                win = kk < wk.nb ? __ldg(block_table + (int64_t)wk.b * block_table_ld + kk) : 0;
            }
#endif
            const int phys = __shfl_sync(0xffffffffu, win, wk.k - win_k);
            const int s = u % QG_PMQA_STAGES;
            if (lane == 0) {
                qg_mbarrier_wait(&kv_empty[s], ((u / QG_PMQA_STAGES) & 1) ^ 1);
                qg_mbarrier_arrive_expect_tx(&kv_full[s], QG_PMQA_SMEM_KV + QG_PMQA_BLOCK * 4);
                qg_tma_load_3d(smem_kv + s * QG_PMQA_SMEM_KV, &tmap_kv, &kv_full[s], 0, 0, phys);
                qg_tma_load_2d(smem_sc + s * QG_PMQA_BLOCK, &tmap_sc, &kv_full[s], 0, phys);
            }
            __syncwarp();
            ++u;
            wk.next(batch);
        }
    } else if (warp > QG_PMQA_PRODUCER_WARP) {
#if QG_PMQA_CLEAN
        qg_pmqa_clean_tail(logits, ld_logits, context_lens, batch, max_context_len,
                           (int)threadIdx.x - (128 * QG_PMQA_MATH_WGS + 32), 96);
#endif
    }
#endif
    else {
        /* ---- math warpgroups 0 .. QG_PMQA_MATH_WGS - 1 ---- */
        const int row0 = (warp % 4) * 16 + lane / 4; /* key row in the block; and row0 + 8 */
#if QG_PMQA_NEXT_N == 2
        const int my_n = t & 1, my_half = t >> 1;
#else
        const int my_n = 0, my_half = t;
#endif
#if QG_PMQA_WREG
        /* QG_PMQA_WREG: one shared address (base_a, below) */
#elif QG_PMQA_STRIDE_WALK
        const uint32_t q_lo0 = qg_pmqa_opaque(qg_smem_addr(smem_q) >> 4);
        const uint32_t kv_lo0 = qg_pmqa_opaque(qg_smem_addr(smem_kv) >> 4);
#else
        const uint32_t q_lo0 = qg_smem_addr(smem_q) >> 4;
        const uint32_t kv_lo0 = qg_smem_addr(smem_kv) >> 4;
#endif
#if QG_PMQA_STRIDE_WALK
        qg_pmqa_swalk wk;
#else
        qg_pmqa_walk wk;
        wk.init(schedule, context_lens, max_context_len, batch);
        int u = 0;
#endif
        int g = -1, seg_b = -1;
#if QG_PMQA_WREG
        /* QG_PMQA_WREG of this lane's N / 4 weights live in
         * registers (w, read once a segment), the others are read (L1 hits)
         * where used, as split4 reads them all; both from this lane's first
         * column of the segment's row n: wrow[n] + 8j' + e. The index is a
         * constant after unrolling: a register or a load. */
        static_assert(QG_PMQA_WREG % 2 == 0 && QG_PMQA_WREG <= QG_PMQA_N / 4, "whole column pairs");
        const float *wrow[QG_PMQA_NEXT_N] = {}; /* set at the first segment */
        float w[QG_PMQA_WREG] = {};
        const auto wt = [&](int j, int e) {
            return 2 * j + e < QG_PMQA_WREG
                       ? w[min(2 * j + e, QG_PMQA_WREG - 1)]
                       : __ldg(wrow[(8 * j) / QG_PMQA_H] + (8 * j) % QG_PMQA_H + e);
        };
#elif QG_PMQA_SPLIT || QG_PMQA_NSPLIT
        /* 4 warpgroups leave 96 registers a thread at launch: the 64
         * accumulators stay, the weights are read (L1 hits) where used, from
         * this lane's first column of the segment's row n: wrow[n] + 8j' + e */
        const float *wrow[QG_PMQA_NEXT_N] = {}; /* set at the first segment */
        const auto wt = [&](int j, int e) {
            return __ldg(wrow[(8 * j) / QG_PMQA_H] + (8 * j) % QG_PMQA_H + e);
        };
#else
        float w[QG_PMQA_N / 4] = {}; /* set at the first segment */
        const auto wt = [&](int j, int e) { return w[2 * j + e]; };
#endif
        float acc[QG_PMQA_UACC];
        int my_ctx = 0;
        qg_plogit_t *out = logits;
#if QG_PMQA_WREG
        int lim_ctx = -0x7fffffff, lim_max = -0x7fffffff;
        /* one shared address for the q and kv stages, scales and kv
         * barriers (their offsets are constants) */
        const uint32_t base_a = qg_pmqa_opaque(qg_smem_addr(smem));
#endif
#if QG_PMQA_STRIDE_WALK
        /* this warpgroup's units only: unit u = wg + W j of the CTA, stage
         * s = u % STAGES (STAGES a multiple of W: s steps by W and wraps),
         * parity ph = (u / STAGES) & 1 */
#if QG_PMQA_LEAN
        int x = QG_PMQA_BCAST(wg); /* s + STAGES ph: one register */
#else
        int s = QG_PMQA_BCAST(wg);
        uint32_t ph = 0;
#endif
#if !QG_PMQA_WREG
        const uint32_t kv_full_a = qg_pmqa_opaque(qg_smem_addr(kv_full));
        const uint32_t kv_empty_a = qg_pmqa_opaque(qg_smem_addr(kv_empty));
#endif
        /* one CTA an SM (split4, asserted): the CTA's units are the range's,
         * this warpgroup's first is unit wg, then every W-th */
        for (int ev = QG_PMQA_BCAST(wk.init(schedule, context_lens, max_context_len, batch, wg));
             ev >= 0;) {
            if (ev > 0) {
#else
        while (!wk.done()) {
            if (wk.b != seg_b) {
#endif
                if (g >= 0) qg_mbarrier_arrive(&q_empty[g & 1]);
                seg_b = wk.b;
                ++g;
                /* weights of this lane's columns c = 8j + 2t + e: row
                 * b * NEXT_N + c / H, head c % H */
#if QG_PMQA_SPLIT || QG_PMQA_NSPLIT
#pragma unroll
                for (int n = 0; n < QG_PMQA_NEXT_N; ++n)
                    wrow[n] = weights + (int64_t)(seg_b * QG_PMQA_NEXT_N + n) * ld_weights + 2 * t;
#if QG_PMQA_WREG
#pragma unroll
                for (int i = 0; i < QG_PMQA_WREG; ++i) /* column 8 (i / 2) + 2t + i % 2 */
                    w[i] = __ldg(wrow[(8 * (i >> 1)) / QG_PMQA_H] + (8 * (i >> 1)) % QG_PMQA_H + (i & 1));
#endif
#else
#pragma unroll
                for (int j = 0; j < QG_PMQA_N / 8; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int c = 8 * j + 2 * t + e;
                        w[2 * j + e] = __ldg(weights +
                                             (int64_t)(seg_b * QG_PMQA_NEXT_N + c / QG_PMQA_H) * ld_weights +
                                             c % QG_PMQA_H);
                    }
#endif
                my_ctx = qg_pmqa_ctx(context_lens, seg_b, my_n, max_context_len);
#if QG_PMQA_WREG
                /* qg_pmqa_unit's per-unit offsets, folded once a segment
                 * (the same dst and limits): fewer live registers in the
                 * unit loop beside the weights */
                out = logits + (int64_t)(seg_b * QG_PMQA_NEXT_N + my_n) * ld_logits + row0 + 8 * my_half;
                lim_ctx = my_half < 2 ? my_ctx - row0 - 8 * my_half : -0x7fffffff;
                lim_max = my_half < 2 ? max_context_len - row0 - 8 * my_half : -0x7fffffff;
#else
                out = logits + (int64_t)(seg_b * QG_PMQA_NEXT_N + my_n) * ld_logits;
#endif
                qg_mbarrier_wait(&q_full[g & 1], (g >> 1) & 1);
#if QG_PMQA_STRIDE_WALK
                ev = QG_PMQA_BCAST(wk.settle(context_lens, max_context_len, batch));
                continue;
#endif
            }
#if QG_PMQA_STRIDE_WALK
#if QG_PMQA_UNI && QG_PMQA_LEAN
            /* the run's k and end from lane 0 (QG_PMQA_UNI): a warp-uniform exit */
            int ku = QG_PMQA_BCAST(wk.k);
            const int k_end = QG_PMQA_BCAST(wk.run_end());
            do {
#define QG_PMQA_UX x
#define QG_PMQA_UKEY0 (ku * QG_PMQA_BLOCK)
#elif QG_PMQA_RUN && QG_PMQA_LEAN
            /* the run with k and the stage x packed in one register, kx = 64 k + x
             * (x < 2 STAGES <= 48, asserted): the lean loop's registers plus the
             * run's end (k_end alone spilled 4 bytes at 112); 64 k = kx & ~63, and
             * k < k_end iff kx < 64 k_end; max_context_len <= 2^30 (checked) keeps
             * 64 k_end + 64 W far from int overflow */
            static_assert(2 * QG_PMQA_STAGES + QG_PMQA_MATH_WGS <= 64, "the stage in kx's 6 low bits");
            int kx = wk.k * 64 + x;
            const int kx_end = wk.run_end() * 64;
            do {
                const int xu = kx & 63, key0u = kx & ~63;
#define QG_PMQA_UX xu
#define QG_PMQA_UKEY0 key0u
#else
#if QG_PMQA_RUN
            wk.k = QG_PMQA_BCAST(wk.k);
            const int k_end = QG_PMQA_BCAST(wk.run_end());
            do {
#endif
#define QG_PMQA_UX x
#define QG_PMQA_UKEY0 (wk.k * QG_PMQA_BLOCK)
#endif
#if QG_PMQA_WREG
            /* kv_empty = kv_full + STAGES: one barrier address register */
            {
#if QG_PMQA_LEAN
                const int s = QG_PMQA_UX < QG_PMQA_STAGES ? QG_PMQA_UX : QG_PMQA_UX - QG_PMQA_STAGES;
                const uint32_t ph = QG_PMQA_UX >= QG_PMQA_STAGES;
                const int row_sc = row0 + 8 * min(my_half, 1); /* this thread's scale */
#else
                const int row_sc = row0;
#endif
                constexpr uint32_t kv_off = 2 * QG_PMQA_SMEM_Q;
                constexpr uint32_t sc_off = kv_off + QG_PMQA_STAGES * QG_PMQA_SMEM_KV;
                constexpr uint32_t bar_off = sc_off + QG_PMQA_STAGES * QG_PMQA_BLOCK * 4 + 4 * 8;
#if QG_PMQA_UNI
                /* the descriptors' low words as sums of uniform terms: base_a is
                 * 1024-aligned, so (base_a + o) >> 4 = (base_a >> 4) + (o >> 4)
                 * for the 16-aligned offsets o, and a shared-window address
                 * (< 2^18) >> 4 has bit 16 clear, so | (1 << 16) is + (1 << 16):
                 * the same descriptors with the OR of every wgmma folded into
                 * one add; the scale address's lane part kept apart from the
                 * stage's (the stage's part uniform) */
                const uint32_t lo_a = (base_a >> 4) + (1u << 16);
                qg_pmqa_unit_at(acc, wt, base_a + bar_off + 8 * s,
                                base_a + bar_off + 8 * (s + QG_PMQA_STAGES), ph,
                                (base_a + sc_off + 4 * row_sc) + 4 * (s * QG_PMQA_BLOCK),
                                lo_a + (g & 1) * (QG_PMQA_SMEM_Q >> 4),
                                lo_a + (kv_off >> 4) + s * (QG_PMQA_SMEM_KV >> 4), my_n, my_half,
                                QG_PMQA_UKEY0, out, lim_ctx, lim_max);
#else
                qg_pmqa_unit_at(acc, wt, base_a + bar_off + 8 * s,
                                base_a + bar_off + 8 * (s + QG_PMQA_STAGES), ph,
                                base_a + sc_off + 4 * (s * QG_PMQA_BLOCK + row_sc),
                                (base_a + (g & 1) * QG_PMQA_SMEM_Q) >> 4,
                                (base_a + kv_off + s * QG_PMQA_SMEM_KV) >> 4, my_n, my_half,
                                QG_PMQA_UKEY0, out, lim_ctx, lim_max);
#endif
            }
#else
            qg_pmqa_unit(acc, wt, kv_full_a + 8 * s, kv_empty_a + 8 * s, ph,
                         smem_sc + s * QG_PMQA_BLOCK,
                         q_lo0 + (g & 1) * (QG_PMQA_SMEM_Q >> 4),
                         kv_lo0 + s * (QG_PMQA_SMEM_KV >> 4), row0, my_n, my_half,
                         QG_PMQA_UKEY0, my_ctx, max_context_len, out);
#endif
#if QG_PMQA_UNI && QG_PMQA_LEAN
                x += QG_PMQA_MATH_WGS;
                if (x >= 2 * QG_PMQA_STAGES) x -= 2 * QG_PMQA_STAGES;
                ku += QG_PMQA_MATH_WGS;
            } while (ku < k_end);
            wk.k = ku;
            /* the range's end re-read as split4r112x does (fewer live registers) */
            wk.end_b = min(max(qg_pmqa_ld_keep(schedule + 2 * (blockIdx.x / QG_PMQA_CTAS) + 2), 0), batch);
            wk.end_k = max(qg_pmqa_ld_keep(schedule + 2 * (blockIdx.x / QG_PMQA_CTAS) + 3), 0);
#elif QG_PMQA_RUN && QG_PMQA_LEAN
                kx += QG_PMQA_MATH_WGS * 65; /* k += W, x += W */
                if ((kx & 63) >= 2 * QG_PMQA_STAGES) kx -= 2 * QG_PMQA_STAGES;
            } while (kx < kx_end);
            wk.k = kx >> 6;
            x = kx & 63;
            /* the range's end again, as init() read it (the schedule does not change
             * in the kernel): not held in two registers through the run (with them
             * live the run spilled 4 bytes at 112) */
            wk.end_b = min(max(qg_pmqa_ld_keep(schedule + 2 * (blockIdx.x / QG_PMQA_CTAS) + 2), 0), batch);
            wk.end_k = max(qg_pmqa_ld_keep(schedule + 2 * (blockIdx.x / QG_PMQA_CTAS) + 3), 0);
#else
#if QG_PMQA_LEAN
            x += QG_PMQA_MATH_WGS;
            if (x >= 2 * QG_PMQA_STAGES) x -= 2 * QG_PMQA_STAGES;
#else
            s += QG_PMQA_MATH_WGS;
            if (s >= QG_PMQA_STAGES) s -= QG_PMQA_STAGES, ph ^= 1u;
#endif
            wk.k += QG_PMQA_MATH_WGS;
#if QG_PMQA_RUN
            } while (wk.k < k_end);
#endif
#endif
#undef QG_PMQA_UX
#undef QG_PMQA_UKEY0
            ev = QG_PMQA_BCAST(wk.settle(context_lens, max_context_len, batch));
#else
            if (u % QG_PMQA_MATH_WGS == wg) {
                const int s = u % QG_PMQA_STAGES;
                qg_pmqa_unit(acc, wt, &kv_full[s], &kv_empty[s], (u / QG_PMQA_STAGES) & 1,
                             smem_sc + s * QG_PMQA_BLOCK, q_lo0 + (g & 1) * (QG_PMQA_SMEM_Q >> 4),
                             kv_lo0 + s * (QG_PMQA_SMEM_KV >> 4), row0, my_n, my_half,
                             wk.k * QG_PMQA_BLOCK, my_ctx, max_context_len, out);
            }
            ++u;
            wk.next(batch);
#endif
        }
        if (g >= 0) qg_mbarrier_arrive(&q_empty[g & 1]);
#if QG_PMQA_MATH_TAIL
        qg_pmqa_clean_tail(logits, ld_logits, context_lens, batch, max_context_len,
                           (int)threadIdx.x, 128 * QG_PMQA_MATH_WGS);
#endif
    }
    qg_launch_dependents();
}

#endif /* QG_PMQA_SCHEDULE */
#endif /* QG_PAGED_MQA_LOGITS_CUH */
