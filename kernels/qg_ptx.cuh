/*
 * qg_ptx.cuh -- one small wrapper per PTX instruction the kernels use.
 *
 * Compiled by NVRTC for sm_90a only. Shared-memory operands are 32-bit
 * shared-window addresses (qg_smem_addr); tensor maps are passed by the
 * generic address of a __grid_constant__ kernel parameter.
 * Section numbers refer to the PTX ISA 8.x manual.
 */
#ifndef QG_PTX_CUH
#define QG_PTX_CUH

typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
typedef unsigned short uint16_t;

#define QG_STR_(x) #x
#define QG_STR(x) QG_STR_(x)
#define QG_DEVICE __device__ __forceinline__

/* The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned. */
struct __align__(64) qg_tensor_map { uint64_t opaque[16]; };

QG_DEVICE uint32_t qg_smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* The shared::cluster address of `p`'s offset in CTA `cta_rank` of the
 * cluster (mapa: 9.7.9.18). */
QG_DEVICE uint32_t qg_map_cluster(const void *p, uint32_t cta_rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                 : "=r"(remote) : "r"(qg_smem_addr(p)), "r"(cta_rank));
    return remote;
}

/* ---- mbarrier (9.7.13.15) ------------------------------------------------ */

QG_DEVICE void qg_mbarrier_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(qg_smem_addr(bar)), "r"(count));
}

/* Make barrier initialisation visible to the async proxy and the cluster. */
QG_DEVICE void qg_fence_mbarrier_init(void) {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

QG_DEVICE void qg_mbarrier_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(qg_smem_addr(bar)), "r"(bytes) : "memory");
}

QG_DEVICE void qg_mbarrier_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(qg_smem_addr(bar)) : "memory");
}

/* Arrive on the barrier at the same offset in CTA `cta_rank` of the cluster
 * (mapa: 9.7.9.18). Default (.release.cta) semantics: the arriving threads
 * only read the stage, through wgmma operations that have completed, so no
 * cluster-scope fence is needed -- and .release.cluster would cost a membar
 * in every math warp at every K block. */
QG_DEVICE void qg_mbarrier_arrive_cluster(uint64_t *bar, uint32_t cta_rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];"
                 ::"r"(qg_map_cluster(bar, cta_rank)) : "memory");
}

/* Arrive on the barrier at `bar`'s offset in CTA `cta_rank`, releasing this
 * thread's earlier shared-memory accesses (its own and other CTAs') at
 * cluster scope: a thread of another CTA that acquires the phase
 * (qg_mbarrier_wait_acquire_cluster) sees them (9.7.13.15, mbarrier.arrive). */
QG_DEVICE void qg_mbarrier_arrive_release_cluster(uint64_t *bar, uint32_t cta_rank) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];"
                 ::"r"(qg_map_cluster(bar, cta_rank)) : "memory");
}

/* Spin on mbarrier.try_wait.parity`sem` until the phase with parity %1 of
 * the barrier at %0 has completed. */
#define QG_MBARRIER_WAIT_ASM(sem)                                              \
    "{\n"                                                                      \
    ".reg .pred done;\n"                                                       \
    "WAIT_%=:\n"                                                               \
    "mbarrier.try_wait.parity" sem ".shared::cta.b64 done, [%0], %1;\n"        \
    "@!done bra WAIT_%=;\n"                                                    \
    "}\n"

/* Spin until the phase with parity `parity` has completed. */
QG_DEVICE void qg_mbarrier_wait(uint64_t *bar, uint32_t parity) {
    asm volatile(QG_MBARRIER_WAIT_ASM("") ::"r"(qg_smem_addr(bar)), "r"(parity) : "memory");
}

/* The same wait on a barrier given by its shared-window address (a caller
 * that keeps one base address and adds stage * 8 itself). */
QG_DEVICE void qg_mbarrier_wait_at(uint32_t bar, uint32_t parity) {
    asm volatile(QG_MBARRIER_WAIT_ASM("") ::"r"(bar), "r"(parity) : "memory");
}

/* qg_mbarrier_arrive by shared-window address. */
QG_DEVICE void qg_mbarrier_arrive_at(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

/* Whether the phase with parity `parity` has completed, without waiting
 * (mbarrier.test_wait: acquire at CTA scope when it returns true). */
QG_DEVICE bool qg_mbarrier_test(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n.reg .pred P;\nmbarrier.test_wait.parity.shared::cta.b64 P, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, P;\n}"
                 : "=r"(done) : "r"(qg_smem_addr(bar)), "r"(parity) : "memory");
    return done != 0;
}

/* The same wait with acquire semantics at cluster scope: what other CTAs'
 * threads released when they arrived is visible after it (9.7.13.15,
 * mbarrier.try_wait). */
QG_DEVICE void qg_mbarrier_wait_acquire_cluster(uint64_t *bar, uint32_t parity) {
    asm volatile(QG_MBARRIER_WAIT_ASM(".acquire.cluster") ::"r"(qg_smem_addr(bar)), "r"(parity)
                 : "memory");
}

/* ---- TMA: bulk tensor copies (9.7.9.25) ---------------------------------- */

QG_DEVICE void qg_tma_prefetch_descriptor(const qg_tensor_map *map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map) : "memory");
}

/* One line of global memory into L2 (prefetch.global.L2: a hint, no
 * register written, nothing waited for). */
QG_DEVICE void qg_prefetch_l2(const void *p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"((uint64_t)p) : "memory");
}

/* Global -> L2 only (cp.async.bulk.prefetch.tensor): a hint that writes no
 * shared memory and orders nothing. L2 is the device's point of coherence,
 * so a line it holds early is still current after any later write to it:
 * the prefetch is safe even before griddepcontrol.wait. */
QG_DEVICE void qg_tma_prefetch_l2_2d(const qg_tensor_map *map, int32_t c0, int32_t c1) {
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];"
                 ::"l"((uint64_t)map), "r"(c0), "r"(c1) : "memory");
}

/* Global -> this CTA's shared memory; completes `bar` with the box's bytes. */
QG_DEVICE void qg_tma_load_2d(void *dst, const qg_tensor_map *map, uint64_t *bar, int32_t c0,
                              int32_t c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];"
                 ::"r"(qg_smem_addr(dst)), "l"((uint64_t)map), "r"(qg_smem_addr(bar)),
                 "r"(c0), "r"(c1) : "memory");
}

/* Global -> the same shared offset in every CTA of `cta_mask`; each
 * destination CTA's barrier at `bar`'s offset receives the bytes. */
QG_DEVICE void qg_tma_load_2d_multicast(void *dst, const qg_tensor_map *map, uint64_t *bar,
                                        int32_t c0, int32_t c1, uint16_t cta_mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;"
                 ::"r"(qg_smem_addr(dst)), "l"((uint64_t)map), "r"(qg_smem_addr(bar)),
                 "r"(c0), "r"(c1), "h"(cta_mask) : "memory");
}

/* Shared -> global; out-of-bounds parts of the box are clipped. */
QG_DEVICE void qg_tma_store_2d(const qg_tensor_map *map, const void *src, int32_t c0, int32_t c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"((uint64_t)map), "r"(qg_smem_addr(src)), "r"(c0), "r"(c1) : "memory");
}

/* D += the shared tile, element-wise in L2 (PTX ISA "cp.reduce.async.bulk.tensor";
 * .add on .f32: the SMs never read D). */
QG_DEVICE void qg_tma_reduce_add_2d(const qg_tensor_map *map, const void *src, int32_t c0,
                                    int32_t c1) {
    asm volatile(
        "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];"
        ::"l"((uint64_t)map), "r"(qg_smem_addr(src)), "r"(c0), "r"(c1) : "memory");
}

/* The rank-3 forms of the two above (the k-grouped GEMM's D [G][M][N]:
 * coordinates column, row, group; a box never crosses a group). */
QG_DEVICE void qg_tma_store_3d(const qg_tensor_map *map, const void *src, int32_t c0, int32_t c1,
                               int32_t c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];"
                 ::"l"((uint64_t)map), "r"(qg_smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
QG_DEVICE void qg_tma_reduce_add_3d(const qg_tensor_map *map, const void *src, int32_t c0,
                                    int32_t c1, int32_t c2) {
    asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group"
                 " [%0, {%2, %3, %4}], [%1];"
                 ::"l"((uint64_t)map), "r"(qg_smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

QG_DEVICE void qg_bulk_commit_group(void) {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/* Wait until every committed bulk store has finished READING shared memory. */
QG_DEVICE void qg_bulk_wait_group_read0(void) {
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

/* Wait until every committed bulk store has completed. */
QG_DEVICE void qg_bulk_wait_group0(void) {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

/* Order this thread's generic-proxy shared-memory writes before later
 * async-proxy (TMA) reads of them (9.7.12.4). */
QG_DEVICE void qg_fence_proxy_async_shared(void) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* ---- WGMMA (9.7.15) ------------------------------------------------------ */

/*
 * Shared-memory matrix descriptor (9.7.15.5.1) for a K-major tile whose rows
 * are 128 bytes (128 e4m3 values) stored with the 128-byte swizzle that TMA
 * wrote: 8-row core-matrix groups are 1024 bytes apart (stride byte offset);
 * the leading byte offset is unused for swizzled K-major layouts. The tile
 * base must be 1024-byte aligned; advancing K by 32 elements adds 32 bytes
 * to the start address (the swizzle is applied on address bits).
 *
 * Only the low word varies: bits 0-13 hold the start address >> 4 (shared
 * memory ends below 256 KiB, so an offset added to them cannot carry out),
 * bits 16-29 the leading byte offset. The high word is a constant: bits
 * 32-45 the stride byte offset 1024 >> 4, bits 62-63 1 = 128-byte swizzle.
 * Kernels keep the low word in 32 bits, so that stage and K offsets are one
 * 32-bit add (an immediate for K) instead of 64-bit arithmetic per wgmma.
 */
#define QG_WGMMA_DESC_SW128_HI 0x40000040u
QG_DEVICE uint32_t qg_wgmma_desc_sw128_lo(const void *smem) {
    return ((qg_smem_addr(smem) & 0x3FFFFu) >> 4) | (uint32_t)(16 >> 4) << 16;
}

/* One lane of the (converged) warp: elect.sync (PTX ISA, "elect.sync"). A branch
 * on it lets ptxas see that a single lane issues what follows, so the TMA
 * instructions inside need no per-lane uniformity loop. */
QG_DEVICE bool qg_elect_one(void) {
    uint32_t elected;
    asm volatile("{\n.reg .pred P;\nelect.sync _|P, 0xffffffff;\nselp.u32 %0, 1, 0, P;\n}"
                 : "=r"(elected));
    return elected != 0;
}

/* A word from shared memory (ordered after the barrier wait before it:
 * "memory"; the FP8-output GEMM's exchanged amax). */
QG_DEVICE uint32_t qg_ld_shared_u32(uint32_t addr) {
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
}
/* A float from shared memory at a 32-bit shared-window address. */
QG_DEVICE float qg_ld_shared_f32(uint32_t addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
    return v;
}

QG_DEVICE float2 qg_ld_shared_f32x2(uint32_t addr) {
    float2 v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr));
    return v;
}

/* Four ints from / to shared memory (16-byte aligned). The load is volatile:
 * each call reads shared memory again, so a value read twice is not kept in
 * a register in between. */
QG_DEVICE int4 qg_ld_shared_s32x4(uint32_t addr) {
    int4 v;
    asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr));
    return v;
}

QG_DEVICE void qg_st_shared_s32x4(uint32_t addr, int4 v) {
    asm volatile("st.shared.v4.s32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
}

QG_DEVICE void qg_st_shared_f32x2(uint32_t addr, float x, float y) {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(x), "f"(y) : "memory");
}

/* Keep a loop-invariant value in its register: the compiler may neither
 * recompute it inside a loop nor fold it into its uses. */
QG_DEVICE void qg_pin(uint32_t &r) { asm volatile("" : "+r"(r)); }

QG_DEVICE void qg_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
QG_DEVICE void qg_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
QG_DEVICE void qg_wgmma_wait0(void) { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
/* Wait until at most one committed group (the newest) is pending. */
QG_DEVICE void qg_wgmma_wait1(void) { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }

/* Keep the compiler from moving accumulator accesses across wgmma. */
QG_DEVICE void qg_fence_operand(float &r) { asm volatile("" : "+f"(r)::"memory"); }

/*
 * D(64 x QG_WGMMA_N, f32) (+)= A(64 x 32, e4m3) * B(QG_WGMMA_N x 32, e4m3)^T,
 * both from shared memory. The operand list for this N is written by the
 * JIT as macros: QG_WGMMA_ACC_LIST "{%0, ..., %(N/2-1)}", QG_WGMMA_ACC_ARGS(d)
 * the "+f" constraints, and QG_WGMMA_OP_DESC_A / _DESC_B / _SCALE_D / _DESC_HI
 * the numbers of the four trailing operands (the descriptors' low words, the
 * scale-d flag, the descriptors' common high word).
 */
QG_DEVICE void qg_wgmma_m64k32_e4m3(float (&d)[QG_WGMMA_N / 2], uint32_t desc_a_lo,
                                    uint32_t desc_b_lo, int scale_d) {
    asm volatile("{\n"
                 ".reg .pred accumulate;\n"
                 ".reg .b64 desc_a, desc_b;\n"
                 "mov.b64 desc_a, {%" QG_STR(QG_WGMMA_OP_DESC_A) ", %" QG_STR(QG_WGMMA_OP_DESC_HI) "};\n"
                 "mov.b64 desc_b, {%" QG_STR(QG_WGMMA_OP_DESC_B) ", %" QG_STR(QG_WGMMA_OP_DESC_HI) "};\n"
                 "setp.ne.b32 accumulate, %" QG_STR(QG_WGMMA_OP_SCALE_D) ", 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n" QG_STR(QG_WGMMA_N) "k32.f32.e4m3.e4m3 "
                 QG_WGMMA_ACC_LIST ", desc_a, desc_b, accumulate, 1, 1;\n"
                 "}\n"
                 : QG_WGMMA_ACC_ARGS(d)
                 : "r"(desc_a_lo), "r"(desc_b_lo), "r"(scale_d), "r"(QG_WGMMA_DESC_SW128_HI));
}

/* ---- registers, barriers, clusters --------------------------------------- */

template <uint32_t kRegs> QG_DEVICE void qg_setmaxnreg_inc(void) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <uint32_t kRegs> QG_DEVICE void qg_setmaxnreg_dec(void) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

/* Named barrier `id` over `count` threads (bar.sync: 9.7.12.1). */
QG_DEVICE void qg_named_barrier(uint32_t id, uint32_t count) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

QG_DEVICE uint32_t qg_cluster_ctarank(void) {
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

/* 16 bytes to another CTA's shared memory, asynchronously: the write
 * completes 16 transaction bytes on that CTA's barrier `remote_bar` (both
 * shared::cluster addresses of the destination CTA; PTX ISA st.async). No
 * fence is needed: the destination sees the data once the barrier's phase
 * completes. */
QG_DEVICE void qg_st_async_v4(uint32_t addr, float x, float y, float z, float w,
                              uint32_t remote_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], "
                 "{%1, %2, %3, %4}, [%5];"
                 ::"r"(addr), "r"(__float_as_uint(x)), "r"(__float_as_uint(y)),
                 "r"(__float_as_uint(z)), "r"(__float_as_uint(w)), "r"(remote_bar) : "memory");
}
/* 4 bytes to a CTA of the cluster, as qg_st_async_v4 (the FP8-output GEMM's
 * partial amax exchange). */
QG_DEVICE void qg_st_async_b32(uint32_t addr, uint32_t v, uint32_t remote_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
                 ::"r"(addr), "r"(v), "r"(remote_bar) : "memory");
}
/* ---- programmatic dependent launch (PTX ISA: griddepcontrol) ------------ */

/* Wait until the grids this one depends on (the previous kernel on the
 * stream, when launched with programmatic stream serialization) have
 * completed and their memory operations are visible; returns at once
 * otherwise. */
QG_DEVICE void qg_grid_dependency_wait(void) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

/* Let the grids that depend on this one be scheduled once every CTA of this
 * grid has issued this or exited (they still wait for its completion before
 * reading what it wrote). */
QG_DEVICE void qg_launch_dependents(void) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

/* Every thread of every CTA of the cluster. */
QG_DEVICE void qg_cluster_sync(void) {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* The cluster barrier's two halves (9.7.12.3), for a CTA that needs its
 * partners only later: arrive (relaxed: a fence orders what the partners
 * must see, e.g. fence.mbarrier_init for barrier inits) now, wait (acquire)
 * before the first access to a partner's shared memory. Not .aligned: the
 * wait may sit in code the compiler cannot prove warp-converged. */
QG_DEVICE void qg_cluster_arrive_relaxed(void) {
    asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
}
QG_DEVICE void qg_cluster_wait(void) {
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

/* ---- epilogue helpers ---------------------------------------------------- */

/* Two floats -> packed bf16x2 (lo in the low half), round to nearest even. */
QG_DEVICE uint32_t qg_pack_bf16x2(float lo, float hi) {
    uint32_t packed;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
    return packed;
}

/* Four 8x8 b16 matrices to shared memory; lane i gives the row address of
 * row i%8 of matrix i/8 (stmatrix: 9.7.14.5.16). */
QG_DEVICE void qg_stmatrix_x4(void *dst, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
    asm volatile("stmatrix.sync.aligned.x4.m8n8.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(qg_smem_addr(dst)), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

/* ---- BF16 wgmma (9.7.15, added for qg_bf16_gemm.cuh) ----------------------
 * D(64 x QG_WGMMA_N, f32) += A(64 x 16, bf16) * B(QG_WGMMA_N x 16, bf16)^T,
 * both from shared memory; the same operand macros as the e4m3 form. 16-bit
 * operands may be MN-major in shared memory: imm-trans-a / imm-trans-b
 * (QG_WGMMA_TRANS_A / _B, 0 = K-major, 1 = MN-major; PTX ISA
 * "wgmma.mma_async", and "Shared memory matrix layout" for the MN-major
 * canonical layouts). Compiled only where the including kernel defines the
 * transpose immediates, so other kernels' PTX is unchanged. */
#if defined(QG_WGMMA_TRANS_A) && defined(QG_WGMMA_TRANS_B)
QG_DEVICE void qg_wgmma_m64k16_bf16(float (&d)[QG_WGMMA_N / 2], uint32_t desc_a_lo,
                                    uint32_t desc_b_lo, int scale_d) {
    asm volatile("{\n"
                 ".reg .pred accumulate;\n"
                 ".reg .b64 desc_a, desc_b;\n"
                 "mov.b64 desc_a, {%" QG_STR(QG_WGMMA_OP_DESC_A) ", %" QG_STR(QG_WGMMA_OP_DESC_HI) "};\n"
                 "mov.b64 desc_b, {%" QG_STR(QG_WGMMA_OP_DESC_B) ", %" QG_STR(QG_WGMMA_OP_DESC_HI) "};\n"
                 "setp.ne.b32 accumulate, %" QG_STR(QG_WGMMA_OP_SCALE_D) ", 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n" QG_STR(QG_WGMMA_N) "k16.f32.bf16.bf16 "
                 QG_WGMMA_ACC_LIST ", desc_a, desc_b, accumulate, 1, 1, "
                 QG_STR(QG_WGMMA_TRANS_A) ", " QG_STR(QG_WGMMA_TRANS_B) ";\n"
                 "}\n"
                 : QG_WGMMA_ACC_ARGS(d)
                 : "r"(desc_a_lo), "r"(desc_b_lo), "r"(scale_d), "r"(QG_WGMMA_DESC_SW128_HI));
}
#endif

/* ---- cast kernels (kernels/qg_cast.cuh) ----------------------------------- */

/* Global loads of data read once: the non-coherent path, not allocated in L1
 * (ld: 9.7.9.8, .nc and the .L1::no_allocate eviction priority). */
QG_DEVICE uint4 qg_ld_stream_v4(const void *p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
QG_DEVICE uint2 qg_ld_stream_v2(const void *p) {
    uint2 v;
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];"
                 : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
QG_DEVICE uint32_t qg_ld_stream_b32(const void *p) {
    uint32_t v;
    asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
QG_DEVICE uint16_t qg_ld_stream_b16(const void *p) {
    uint16_t v;
    asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
    return v;
}

/* Two floats -> two e4m3 bytes (lo in the low byte), round to nearest even,
 * finite values beyond 448 saturate to +-448, NaN gives 0x7F
 * (cvt: 9.7.9.21, .satfinite; the first source goes to the upper byte). */
QG_DEVICE uint32_t qg_cvt_e4m3x2(float lo, float hi) {
    uint16_t packed;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(packed) : "f"(hi), "f"(lo));
    return packed;
}

/* ---- indexer and HC kernels (qg_hc_prenorm.cuh, qg_mqa_logits.cuh) ------ */

/*
 * D(64 x QG_TF32_N, f32) (+)= A(64 x 8, tf32, registers) * B(QG_TF32_N x 8,
 * tf32, shared memory)^T (9.7.15.5: wgmma with A in registers; .tf32 takes
 * K-major operands only, so no transpose immediates). A fragment of lane l of
 * warp w of the warpgroup (9.7.15.5.1, "m64nNk8 A"): a[0] (row 16w + l/4,
 * k l%4), a[1] (row + 8, k l%4), a[2] (row, k l%4 + 4), a[3] (row + 8,
 * k l%4 + 4), each an fp32 bit pattern whose low 13 bits the tensor core
 * ignores. The kernel defines QG_TF32_N and the operand list macros
 * QG_TF32_ACC_LIST / QG_TF32_ACC_ARGS(d) / QG_TF32_OP_A0 (first of the four
 * A operands, then desc_b low word, scale-d, the descriptor's high word).
 */
#ifdef QG_TF32_N
QG_DEVICE void qg_wgmma_m64k8_tf32_rs(float (&d)[QG_TF32_N / 2], uint32_t a0, uint32_t a1,
                                      uint32_t a2, uint32_t a3, uint32_t desc_b_lo, int scale_d) {
    asm volatile("{\n"
                 ".reg .pred accumulate;\n"
                 ".reg .b64 desc_b;\n"
                 "mov.b64 desc_b, {%" QG_STR(QG_TF32_OP_B) ", %" QG_STR(QG_TF32_OP_HI) "};\n"
                 "setp.ne.b32 accumulate, %" QG_STR(QG_TF32_OP_SCALE_D) ", 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n" QG_STR(QG_TF32_N) "k8.f32.tf32.tf32 "
                 QG_TF32_ACC_LIST ", {%" QG_STR(QG_TF32_OP_A0) ", %" QG_STR(QG_TF32_OP_A1)
                 ", %" QG_STR(QG_TF32_OP_A2) ", %" QG_STR(QG_TF32_OP_A3) "}, desc_b, accumulate, 1, 1;\n"
                 "}\n"
                 : QG_TF32_ACC_ARGS(d)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(desc_b_lo), "r"(scale_d),
                   "r"(QG_WGMMA_DESC_SW128_HI));
}
#endif

/* An FP32 value rounded to TF32 to nearest, ties away from zero: the bits
 * of a float whose low 13 mantissa bits are zero (cvt.rna.tf32.f32: 9.7.9.21).
 * A TF32 wgmma reading FP32 bits truncates them instead. */
QG_DEVICE uint32_t qg_cvt_rna_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

/* A 16-bit value from shared memory (ld.shared.u16: 9.7.9.8). */
QG_DEVICE uint32_t qg_ld_shared_u16(uint32_t addr) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
    return v;
}

/* A float to the shared memory of a CTA of the cluster, at a shared::cluster
 * address from qg_map_cluster (st.shared::cluster: 9.7.9.9). Ordered before
 * the partner's reads by a cluster barrier (qg_cluster_sync). */
QG_DEVICE void qg_st_shared_cluster_f32(uint32_t addr, float v) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}

/* Global -> shared bulk copy of `bytes` (a multiple of 16, both addresses
 * 16-byte aligned) completing `bar` (cp.async.bulk, non-tensor: 9.7.9.25.4). */
QG_DEVICE void qg_bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(qg_smem_addr(dst)), "l"((uint64_t)src), "r"(bytes), "r"(qg_smem_addr(bar))
                 : "memory");
}

/* 16 bytes to global memory, streaming (st.global.cs.v4: 9.7.9.9; the
 * logits are written once and not read back by this kernel). */
QG_DEVICE void qg_st_global_cs_v4(void *ptr, uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
    asm volatile("st.global.cs.v4.b32 [%0], {%1, %2, %3, %4};"
                 ::"l"((uint64_t)ptr), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
}

/* Global -> shared, rank-1 tensor map (the box's bytes complete `bar`;
 * out-of-bounds elements are zero-filled). */
QG_DEVICE void qg_tma_load_1d(void *dst, const qg_tensor_map *map, uint64_t *bar, int32_t c0) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3}], [%2];"
                 ::"r"(qg_smem_addr(dst)), "l"((uint64_t)map), "r"(qg_smem_addr(bar)), "r"(c0)
                 : "memory");
}

/*
 * Matrix-descriptor high words (9.7.15.5.1) for K-major tiles whose rows are
 * 32, 64 or 128 bytes, stored with the swizzle of the same width: bits
 * 32-45 the stride byte offset (8 rows) >> 4, bits 62-63 the swizzle mode
 * (1: 128B, 2: 64B, 3: 32B). Tile bases aligned to 8 rows' bytes.
 */
#define QG_WGMMA_DESC_SW64_HI 0x80000020u
#define QG_WGMMA_DESC_SW32_HI 0xC0000010u

/*
 * D(64 x 128, f32) (+)= A(64 x 32, e4m3) * B(128 x 32, e4m3)^T, both from
 * shared memory, with the descriptors' common high word as an operand (so
 * one wrapper serves the 32-, 64- and 128-byte swizzles). The MQA logits
 * kernel's shape: 64 keys x (block_q x heads = 128) columns.
 */
QG_DEVICE void qg_wgmma_m64n128k32_e4m3_ss(float (&d)[64], uint32_t desc_a_lo, uint32_t desc_b_lo,
                                          uint32_t desc_hi, int scale_d) {
    asm volatile("{\n"
                 ".reg .pred accumulate;\n"
                 ".reg .b64 desc_a, desc_b;\n"
                 "mov.b64 desc_a, {%64, %66};\n"
                 "mov.b64 desc_b, {%65, %66};\n"
                 "setp.ne.b32 accumulate, %67, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "desc_a, desc_b, accumulate, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                   "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
                   "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
                   "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
                   "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
                   "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
                   "+f"(d[63])
                 : "r"(desc_a_lo), "r"(desc_b_lo), "r"(desc_hi), "r"(scale_d));
}

/* The same as qg_wgmma_m64n128k32_e4m3_ss for N = 32 (the paged MQA
 * kernel's next_n x heads columns). */
QG_DEVICE void qg_wgmma_m64n32k32_e4m3_ss(float (&d)[16], uint32_t desc_a_lo, uint32_t desc_b_lo,
                                        uint32_t desc_hi, int scale_d) {
    asm volatile("{\n"
                 ".reg .pred accumulate;\n"
                 ".reg .b64 desc_a, desc_b;\n"
                 "mov.b64 desc_a, {%16, %18};\n"
                 "mov.b64 desc_b, {%17, %18};\n"
                 "setp.ne.b32 accumulate, %19, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                 "desc_a, desc_b, accumulate, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                   "+f"(d[14]), "+f"(d[15])
                 : "r"(desc_a_lo), "r"(desc_b_lo), "r"(desc_hi), "r"(scale_d));
}

/* The same as qg_wgmma_m64n128k32_e4m3_ss for N = 64 (the paged MQA
 * kernel's next_n x heads columns). */
QG_DEVICE void qg_wgmma_m64n64k32_e4m3_ss(float (&d)[32], uint32_t desc_a_lo, uint32_t desc_b_lo,
                                        uint32_t desc_hi, int scale_d) {
    asm volatile("{\n"
                 ".reg .pred accumulate;\n"
                 ".reg .b64 desc_a, desc_b;\n"
                 "mov.b64 desc_a, {%32, %34};\n"
                 "mov.b64 desc_b, {%33, %34};\n"
                 "setp.ne.b32 accumulate, %35, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "desc_a, desc_b, accumulate, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                   "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
                   "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
                   "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(desc_a_lo), "r"(desc_b_lo), "r"(desc_hi), "r"(scale_d));
}

/* Global -> shared, rank-3 tensor map (coordinates inner first). */
QG_DEVICE void qg_tma_load_3d(void *dst, const qg_tensor_map *map, uint64_t *bar, int32_t c0,
                              int32_t c1, int32_t c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4, %5}], [%2];"
                 ::"r"(qg_smem_addr(dst)), "l"((uint64_t)map), "r"(qg_smem_addr(bar)), "r"(c0),
                 "r"(c1), "r"(c2) : "memory");
}

/* The rank-3 form of qg_tma_load_2d_multicast (PTX ISA 9.7.9.25,
 * cp.async.bulk.tensor, .multicast::cluster): the box lands at the same
 * shared offset of every CTA in cta_mask, each CTA's barrier at bar's offset
 * receiving the bytes (the FP8 batched GEMM's A, the batch the third
 * coordinate). */
QG_DEVICE void qg_tma_load_3d_multicast(void *dst, const qg_tensor_map *map, uint64_t *bar,
                                        int32_t c0, int32_t c1, int32_t c2, uint16_t cta_mask) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%3, %4, %5}], [%2], %6;"
                 ::"r"(qg_smem_addr(dst)), "l"((uint64_t)map), "r"(qg_smem_addr(bar)), "r"(c0),
                 "r"(c1), "r"(c2), "h"(cta_mask) : "memory");
}

#endif /* QG_PTX_CUH */
