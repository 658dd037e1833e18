/*
 * args.c -- the argument checks every kernel family makes (src/launch.h):
 * pointers present, aligned and on the context's device; leading dimensions
 * within what TMA can address. Messages name the public call and the field.
 */
#include "launch.h"

#include <stdint.h>
#include <string.h>

/* A field's name in messages: args->NAME, or NAME itself where it names its
 * own struct ("out->sfd": a call's second argument struct). */
#define QG_ARG_FMT "%s%s"
#define QG_ARG(name) strstr(name, "->") ? "" : "args->", name

qg_status qg__check_ptr(const void *ptr, size_t align, const char *fn, const char *name) {
    if (!ptr) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: " QG_ARG_FMT " is NULL", fn, QG_ARG(name));
    if ((uintptr_t)ptr % align)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: " QG_ARG_FMT " (%p) must be %zu-byte aligned", fn,
                        QG_ARG(name), ptr, align);
    return QG_SUCCESS;
}

qg_status qg__check_device_ptr(const qg_context *ctx, const void *ptr, const char *fn,
                               const char *name) {
    int ordinal = -1;
    CUresult r = ctx->drv->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                 (CUdeviceptr)(uintptr_t)ptr);
    if (r != CUDA_SUCCESS)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: " QG_ARG_FMT " (%p) is not a CUDA device pointer", fn, QG_ARG(name), ptr);
    if (ordinal != ctx->device)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: " QG_ARG_FMT " is memory of device %d; the context is on device %d", fn,
                        QG_ARG(name), ordinal, ctx->device);
    return QG_SUCCESS;
}

qg_status qg__check_ld(int64_t ld, int64_t min, int elem_bytes, const char *fn, const char *name,
                       const char *what) {
    if (ld < min)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "%s: " QG_ARG_FMT " must be >= %s (%lld), got %lld",
                        fn, QG_ARG(name), what, (long long)min, (long long)ld);
    /* Bound first, multiply after: ld * elem_bytes overflows past 2^61. */
    if (ld > (1ll << 36))
        return qg__fail(QG_ERROR_UNSUPPORTED, "%s: " QG_ARG_FMT " = %lld exceeds 2^36", fn, QG_ARG(name),
                        (long long)ld);
    if ((ld * elem_bytes) % 16)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "%s: " QG_ARG_FMT " * %d bytes must be a multiple of 16 (TMA), got %lld", fn,
                        QG_ARG(name), elem_bytes, (long long)ld);
    return QG_SUCCESS;
}
