/*
 * gpu_ctx.h -- a GPU test's own driver calls (cuMemAlloc, copies, memsets)
 * need the session's CUDA context current on the calling thread, as the
 * library's calls make it current for themselves: push it after
 * qgtk_gpu_session_open, pop it before qgtk_gpu_session_close.
 */
#ifndef QG_GPU_CTX_H
#define QG_GPU_CTX_H
#include "internal.h"

static inline void gpu_ctx_push(qg_context *ctx) {
    const qg_driver *drv;
    CUcontext cu;
    if (qg__context_cuda(ctx, &drv, &cu, NULL)) drv->cuCtxPushCurrent(cu);
}

/* The tests' uploads and poisons use the legacy default stream
 * (cuMemcpyHtoD, cuMemsetD8); the session's stream is now a blocking one
 * (testkit/harness.c), which waits for them, but a test may run the library
 * on a stream of its own (a non-blocking one would not wait).
 * cuMemsetD8 on device memory returns before the memset runs, and
 * cuMemcpyHtoD from pageable memory can return before its DMA lands. Call
 * this after them, before the library call on the session's stream: else a
 * poison can land after the library's own C copy or over the kernel's
 * output, and a fresh C after the kernel read it (the H200 saw all three in
 * the batch-sum tests). 0 on success. */
static inline int gpu_legacy_done(qg_context *ctx) {
    const qg_driver *drv;
    if (!qg__context_cuda(ctx, &drv, NULL, NULL)) return -1;
    return drv->cuCtxSynchronize() == CUDA_SUCCESS ? 0 : -1;
}

static inline void gpu_ctx_pop(qg_context *ctx) {
    const qg_driver *drv;
    CUcontext prev;
    if (qg__context_cuda(ctx, &drv, NULL, NULL)) drv->cuCtxPopCurrent(&prev);
}
#endif
