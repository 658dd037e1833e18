/*
 * pdl_probe.cuh -- test kernels for programmatic dependent launch
 * (testkit/harness.c, qgtk_pdl_probe; tests/test_gemm_gpu.c).
 *
 * qg_pdl_slow_copy_kernel copies an operand (A, or B) back into place with
 * one CTA, slowly (each pass of the loop waits for its loads, ~1 us, and
 * moves 1 KB), after letting the kernels that depend on it be scheduled at
 * once (griddepcontrol.launch_dependents). A PDL-launched GEMM behind it
 * therefore runs while the operand is still being written, and computes the
 * right D only if it waits (griddepcontrol.wait) before reading its inputs --
 * and, for B, only if what it prefetched into L2 before the wait is current
 * when it loads it.
 *
 * qg_pdl_reader_kernel is the control: launched with PDL behind the same
 * copy, it reads the operand without waiting and counts the 16-byte words
 * that differ from the final one. A nonzero count shows that the dependent
 * kernel really ran during the copy, i.e. that the GEMM test above can fail.
 *
 * Compiled by the library's NVRTC JIT (-default-device, sm_90a); uses no
 * headers.
 */
#ifndef QG_PDL_PROBE_CUH
#define QG_PDL_PROBE_CUH

extern "C" __global__ void qg_pdl_slow_copy_kernel(uint4 *dst, const uint4 *src,
                                                   unsigned long long words) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    for (unsigned long long i = threadIdx.x; i < words; i += blockDim.x) {
        const uint4 v = src[i];
        dst[i] = v;
    }
}

extern "C" __global__ void qg_pdl_reader_kernel(const uint4 *a, const uint4 *final_a,
                                                unsigned long long words,
                                                unsigned int *differing) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned int n = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < words; i += stride) {
        const uint4 x = __ldcv(a + i), y = final_a[i]; /* x: not from a stale L1 line */
        n += x.x != y.x || x.y != y.y || x.z != y.z || x.w != y.w;
    }
    if (n) atomicAdd(differing, n);
}

#endif /* QG_PDL_PROBE_CUH */
