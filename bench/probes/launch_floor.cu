// bench/probes/launch_floor.cu -- what a launch costs before any work, timed the
// way `qgemm bench` times a GEMM: L2 flushed (write 2x L2, then read it), events
// around the one launch, median of 50 after 5 warm-ups.
// Build and run on the GPU machine:  nvcc -arch=sm_90a -O2 -o /tmp/lf bench/probes/launch_floor.cu && /tmp/lf
// Each row changes one thing against an empty kernel: grid size, dynamic
// shared memory, a 2-CTA cluster, five 128-byte __grid_constant__ parameters,
// and a prologue like the GEMM's (mbarrier init, barrier, one global read).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <algorithm>
#include <vector>

struct alignas(64) Blob { uint64_t w[16]; };

__global__ void empty_kernel() {}
__global__ void params_kernel(const __grid_constant__ Blob a, const __grid_constant__ Blob b,
                              const __grid_constant__ Blob c, const __grid_constant__ Blob d,
                              const __grid_constant__ Blob e, int *sink) {
    if (a.w[0] + b.w[1] + c.w[2] + d.w[3] + e.w[4] == 12345) *sink = 1;
}
__global__ void prologue_kernel(const int *in, int *sink) {
    extern __shared__ __align__(1024) unsigned char smem[];
    uint64_t *bar = (uint64_t *)smem;
    if (threadIdx.x == 0) {
        for (int s = 0; s < 42; ++s) {
            uint32_t a = (uint32_t)__cvta_generic_to_shared(&bar[s]);
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(1));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0 && in[blockIdx.x * 32] == 12345) *sink = 1;
}
__global__ void flush_read(const uint4 *buf, size_t words, unsigned *sink) {
    unsigned x = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = buf[i]; x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0xdeadbeef) *sink = x;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static void *flush_buf; static size_t flush_bytes; static unsigned *sink;
static void flush() {
    CK(cudaMemsetAsync(flush_buf, 1, flush_bytes));
    flush_read<<<132 * 4, 512>>>((const uint4 *)flush_buf, flush_bytes / 16, sink);
}

template <class F> static void timeit(const char *name, F launch) {
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int r = 0; r < 55; ++r) {
        flush();
        CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 5) t.push_back(ms * 1000.f);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    printf("%-58s median %6.2f us  (min %6.2f, max %6.2f)\n", name, t[t.size() / 2], t[0], t.back());
}

int main() {
    int l2; CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    flush_bytes = 2 * (size_t)l2; CK(cudaMalloc(&flush_buf, flush_bytes)); CK(cudaMalloc(&sink, 4096));
    int *in; CK(cudaMalloc(&in, 132 * 32 * 4 * 2)); CK(cudaMemset(in, 0, 132 * 32 * 4 * 2));
    const int big = 227 * 1024;
    CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
    CK(cudaFuncSetAttribute(prologue_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
    CK(cudaFuncSetAttribute(params_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
    Blob b = {}; int *isink = (int *)sink;
    auto ex = [&](auto kern, int smem, int cluster, auto... args) {
        cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute at[1];
        cfg.gridDim = dim3(132); cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem;
        at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = cluster;
        at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
        cfg.attrs = at; cfg.numAttrs = 1;
        CK(cudaLaunchKernelEx(&cfg, kern, args...));
    };
    for (int pass = 0; pass < 2; ++pass) {
        printf("-- pass %d\n", pass);
        timeit("nothing between the events", [] {});
        timeit("empty <<<1, 32>>>", [] { empty_kernel<<<1, 32>>>(); });
        timeit("empty <<<132, 384>>>", [] { empty_kernel<<<132, 384>>>(); });
        timeit("empty 132x384, 227 KB smem", [&] { empty_kernel<<<132, 384, big>>>(); });
        timeit("empty 132x384, 227 KB smem, LaunchKernelEx cluster 1", [&] { ex(empty_kernel, big, 1); });
        timeit("empty 132x384, 227 KB smem, cluster 2", [&] { ex(empty_kernel, big, 2); });
        timeit("5 x 128-byte grid_constant params, 227 KB smem", [&] { params_kernel<<<132, 384, big>>>(b, b, b, b, b, isink); });
        timeit("prologue (42 mbarrier inits, barrier, one read), 227 KB", [&] { prologue_kernel<<<132, 384, big>>>(in, isink); });
        timeit("prologue, 227 KB, cluster 2", [&] { ex(prologue_kernel, big, 2, (const int *)in, isink); });
        timeit("prologue, 64 KB smem", [&] { prologue_kernel<<<132, 384, 64 * 1024>>>(in, isink); });
    }
    return 0;
}
