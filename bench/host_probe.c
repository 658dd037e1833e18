/*
 * host_probe.c -- what each driver call on qgemm's launch path costs the CPU.
 *
 * Issue 26: the C API's cached launch (qg_fp8_gemm_nt & co.) should cost
 * <= 3 us of CPU. This probe times, on the GPU machine, each driver call the
 * launch path makes, through the same dlopen'ed function pointers
 * (qg__driver_load), so that the work goes where the time is:
 *   cuPointerGetAttribute (one per argument pointer), cuTensorMapEncodeTiled
 *   (one per operand), cuCtxPushCurrent + cuCtxPopCurrent, cuStreamGetCtx, and
 *   cuLaunchKernelEx of an empty kernel with qgemm's parameter list (five
 *   128-byte tensor maps and eight scalars) without and with the cluster and
 *   PDL attributes.
 * Each figure is the median over 20000 calls timed one by one with
 * CLOCK_MONOTONIC (the clock read itself is measured and reported); launches
 * drain the stream every 1000 calls, outside the timing.
 *
 * Build and run (GPU machine; bench/device-check.sh step `hostprobe`):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -I$CUDA_HOME/include \
 *      bench/host_probe.c build/libqgemm.a -ldl -lpthread -lm -o build/host_probe
 *   build/host_probe
 */
#include "seam.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CALLS 20000
#define DRAIN 1000

static const char ptx[] =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry probe(\n"
    " .param .align 64 .b8 t0[128], .param .align 64 .b8 t1[128],\n"
    " .param .align 64 .b8 t2[128], .param .align 64 .b8 t3[128],\n"
    " .param .align 64 .b8 t4[128], .param .u64 p0, .param .u64 p1, .param .u64 p2,\n"
    " .param .u64 p3, .param .u64 p4, .param .u32 p5, .param .u32 p6, .param .u32 p7)\n"
    ".maxntid 384, 1, 1\n"
    "{ ret; }\n"
    ".visible .entry bare()\n.maxntid 384, 1, 1\n{ ret; }\n";

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double samples[CALLS];

static void report(const char *what, int n) {
    qsort(samples, (size_t)n, sizeof *samples, cmp);
    printf("%-58s median %7.3f us  p10 %7.3f  p90 %7.3f\n", what, samples[n / 2] / 1e3,
           samples[n / 10] / 1e3, samples[n * 9 / 10] / 1e3);
}

#define CHECK(x)                                                                      \
    do {                                                                              \
        CUresult r_ = (x);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                     \
            fprintf(stderr, "host_probe: %s failed: CUresult %d\n", #x, (int)r_);     \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

/* Time `stmt` CALLS times, one sample per call. */
#define TIME(what, stmt)                                        \
    do {                                                        \
        for (int i_ = 0; i_ < CALLS; ++i_) {                    \
            const double t0_ = now_ns();                        \
            stmt;                                               \
            samples[i_] = now_ns() - t0_;                       \
        }                                                       \
        report(what, CALLS);                                    \
    } while (0)

static int launch_series(const qg_driver *drv, CUfunction f, CUstream stream, void **params,
                         int cluster, int pdl, const char *what) {
    CUlaunchAttribute attrs[2];
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = 132;
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = 384;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = 200 * 1024;
    lc.hStream = stream;
    lc.attrs = attrs;
    if (cluster > 1) {
        CUlaunchAttribute *at = &attrs[lc.numAttrs++];
        at->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at->value.clusterDim.x = (unsigned)cluster;
        at->value.clusterDim.y = at->value.clusterDim.z = 1;
    }
    if (pdl) {
        CUlaunchAttribute *at = &attrs[lc.numAttrs++];
        at->id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at->value.programmaticStreamSerializationAllowed = 1;
    }
    for (int i = 0; i < 2000; ++i) { /* warm-up */
        if (i % DRAIN == 0) CHECK(drv->cuStreamSynchronize(stream));
        CHECK(drv->cuLaunchKernelEx(&lc, f, params, NULL));
    }
    for (int i = 0; i < CALLS; ++i) {
        if (i % DRAIN == 0) CHECK(drv->cuStreamSynchronize(stream));
        const double t0 = now_ns();
        const CUresult r = drv->cuLaunchKernelEx(&lc, f, params, NULL);
        samples[i] = now_ns() - t0;
        CHECK(r);
    }
    CHECK(drv->cuStreamSynchronize(stream));
    report(what, CALLS);
    return 0;
}

int main(void) {
    const qg_driver *drv;
    if (qg__driver_load(&drv) != QG_SUCCESS) {
        fprintf(stderr, "host_probe: %s\n", qg_last_error());
        return 2;
    }
    CUdevice dev;
    CUcontext ctx, prev;
    CHECK(drv->cuDeviceGet(&dev, 0));
    CHECK(drv->cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(drv->cuCtxPushCurrent(ctx));
    CUstream stream;
    CHECK(drv->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr buf;
    CHECK(drv->cuMemAlloc(&buf, 64 << 20));

    TIME("clock_gettime pair (the timer itself)", (void)0);
    int ordinal;
    TIME("cuPointerGetAttribute(DEVICE_ORDINAL)",
         drv->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, buf + 4096));
    CUcontext sctx;
    TIME("cuStreamGetCtx", drv->cuStreamGetCtx(stream, &sctx));
    TIME("cuCtxPushCurrent + cuCtxPopCurrent (same context)",
         (drv->cuCtxPushCurrent(ctx), drv->cuCtxPopCurrent(&prev)));

    CUtensorMap map;
    const cuuint64_t dims[2] = {7168, 4096};
    const cuuint64_t strides[1] = {7168};
    const cuuint32_t box[2] = {128, 128}, es[2] = {1, 1};
    TIME("cuTensorMapEncodeTiled (u8, 2D, 128B swizzle)",
         drv->cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)buf, dims,
                                     strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                     CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    CUtensorMap copy;
    TIME("memcpy of one CUtensorMap (128 bytes)",
         { memcpy(&copy, &map, sizeof map); __asm__ volatile("" ::"r"(&copy) : "memory"); });

    CUmodule mod;
    CUfunction f;
    CHECK(drv->cuModuleLoadData(&mod, ptx));
    CHECK(drv->cuModuleGetFunction(&f, mod, "probe"));
    CHECK(drv->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
    CUtensorMap maps[5];
    for (int i = 0; i < 5; ++i) maps[i] = map;
    CUdeviceptr p[5] = {buf, buf, buf, buf, buf};
    int s[3] = {4096, 0, 56};
    void *params[] = {&maps[0], &maps[1], &maps[2], &maps[3], &maps[4], &p[0], &p[1],
                      &p[2],    &p[3],    &p[4],    &s[0],    &s[1],    &s[2]};
    if (launch_series(drv, f, stream, params, 1, 0, "cuLaunchKernelEx, no attribute") ||
        launch_series(drv, f, stream, params, 1, 1, "cuLaunchKernelEx, PDL") ||
        launch_series(drv, f, stream, params, 2, 0, "cuLaunchKernelEx, cluster 2") ||
        launch_series(drv, f, stream, params, 2, 1, "cuLaunchKernelEx, cluster 2 + PDL"))
        return 1;
    CUfunction bare;
    CHECK(drv->cuModuleGetFunction(&bare, mod, "bare"));
    CHECK(drv->cuFuncSetAttribute(bare, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
    void *no_params[] = {NULL};
    if (launch_series(drv, bare, stream, no_params, 1, 0, "cuLaunchKernelEx, no attribute, no parameters"))
        return 1;
    drv->cuModuleUnload(mod);
    drv->cuMemFree(buf);
    drv->cuStreamDestroy(stream);
    drv->cuCtxPopCurrent(&prev);
    return 0;
}
