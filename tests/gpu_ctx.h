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

static inline void gpu_ctx_pop(qg_context *ctx) {
    const qg_driver *drv;
    CUcontext prev;
    if (qg__context_cuda(ctx, &drv, NULL, NULL)) drv->cuCtxPopCurrent(&prev);
}
#endif
