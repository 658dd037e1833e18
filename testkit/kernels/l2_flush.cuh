/*
 * l2_flush.cuh -- the read half of the benchmark's L2 flush (testkit/harness.c).
 *
 * The flush first writes a buffer of twice the L2's size (cuMemsetD8), which
 * evicts every line the timed kernel could find: its inputs, and the D it
 * wrote last time. That leaves the L2 full of the buffer's dirty lines, which
 * the next kernel would have to write back to DRAM as its own reads evict
 * them: measured on an H100, 64x7168x16384 took 56-57 us after the write
 * alone against 49.3 us under Nsight Compute's clean caches
 * (2026-11-21-explore (bench/HISTORY.md)). This kernel then reads the
 * same buffer, so those write-backs happen here, before the timed region,
 * and the L2 is left holding clean lines of an unrelated buffer.
 *
 * Every 16-byte word is loaded once (grid-stride, four loads in flight per
 * thread); the XOR of all words is stored only if it equals `never`, a value
 * the host chooses, so the compiler cannot drop the loads and in practice
 * nothing is stored.
 *
 * Compiled by the library's NVRTC JIT (-default-device, sm_90a); uses no
 * headers.
 */
#ifndef QG_L2_FLUSH_CUH
#define QG_L2_FLUSH_CUH

extern "C" __global__ void qg_l2_read_kernel(const uint4 *buf, unsigned long long words,
                                             unsigned int never, unsigned int *sink) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int x = 0;
    /* Four independent loads in flight per thread, then the rest one by one. */
    for (; i + 3 * stride < words; i += 4 * stride) {
        const uint4 a = buf[i], b = buf[i + stride], c = buf[i + 2 * stride], d = buf[i + 3 * stride];
        x ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^
             d.w;
    }
    for (; i < words; i += stride) {
        const uint4 a = buf[i];
        x ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (x == never) *sink = x;
}

#endif /* QG_L2_FLUSH_CUH */
