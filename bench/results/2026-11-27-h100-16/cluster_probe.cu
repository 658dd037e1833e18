// cluster_probe.cu -- how many clusters of 1, 2 and 4 CTAs (one CTA per SM:
// 200 KiB of dynamic shared memory each) this GPU holds at once
// (cudaOccupancyMaxActiveClusters), and the time of an empty persistent-style
// grid of 132 CTAs in clusters of 2 against clusters of 1 (does the 2-CTA
// grid fit in one wave?). Build: nvcc -arch=sm_90a -o /tmp/cp cluster_probe.cu
#include <cstdio>
#include <cuda_runtime.h>

__global__ void spin(unsigned long long cycles) {
    unsigned long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}

int main() {
    const int smem = 200 * 1024;
    cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(spin, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    for (int cs = 1; cs <= 4; cs *= 2) {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = cs, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
        cfg.gridDim = dim3(132);
        cfg.blockDim = dim3(384);
        cfg.dynamicSmemBytes = smem;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        int clusters = -1;
        cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, (void *)spin, &cfg);
        // time: 132 CTAs, each spinning ~20 us (at ~2 GHz 40000 cycles)
        cudaEvent_t a, b;
        cudaEventCreate(&a), cudaEventCreate(&b);
        float ms = 0;
        for (int rep = 0; rep < 3; ++rep) {
            cudaEventRecord(a);
            cudaLaunchKernelEx(&cfg, spin, 40000ull);
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            cudaEventElapsedTime(&ms, a, b);
        }
        printf("cluster %d: max active clusters %d (%s) = %d CTAs at once; 132 CTAs of ~20 us: %.1f us (%s)\n",
               cs, clusters, cudaGetErrorString(e), clusters * cs, ms * 1000, cudaGetErrorString(cudaGetLastError()));
    }
    return 0;
}
