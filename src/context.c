/*
 * context.c -- per-device contexts.
 *
 * A context holds the device's properties, the retained primary CUDA context
 * (shared with the CUDA runtime and PyTorch), the JIT cache and the launch
 * cache (src/launch.c). An offline context has properties but no device: it
 * compiles and selects configurations, and refuses to launch.
 */
#include "launch.h"

#include <stdlib.h>
#include <string.h>

static qg_status context_alloc(qg_context **out) {
    qg_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "qg_context: out of host memory");
    qg_status st = qg__jit_cache_create(&ctx->jit);
    if (st != QG_SUCCESS) {
        free(ctx);
        return st;
    }
    pthread_mutex_init(&ctx->lock, NULL);
    *out = ctx;
    return QG_SUCCESS;
}

qg_status qg_context_create_offline(qg_context **out, const qg_device_props *props) {
    qg__clear_error();
    if (!out) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_context_create_offline: out is NULL");
    *out = NULL;
    qg_device_props p;
    if (props) {
        p = *props;
        if (p.sm_count < 1 || p.sm_count > 1024)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "qg_context_create_offline: props->sm_count must be in [1, 1024], got %d",
                            p.sm_count);
        if (p.smem_optin_bytes < 49152 || p.smem_optin_bytes > (1u << 20))
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "qg_context_create_offline: props->smem_optin_bytes must be in "
                            "[49152, 1048576], got %zu", p.smem_optin_bytes);
        if (p.dram_gbps < 0 || p.dram_gbps > 100000)
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "qg_context_create_offline: props->dram_gbps must be in [0, 100000] "
                            "(0: unknown), got %d", p.dram_gbps);
        if (p.cc_major != 9 || p.cc_minor != 0)
            return qg__fail(QG_ERROR_WRONG_ARCH,
                            "qg_context_create_offline: compute capability %d.%d given; qgemm "
                            "kernels need sm_90 (9.0)", p.cc_major, p.cc_minor);
    } else {
        memset(&p, 0, sizeof p);
        p.sm_count = 132;
        p.cc_major = 9;
        p.cc_minor = 0;
        p.smem_optin_bytes = 232448;
        p.l2_bytes = 50u << 20;
    }
    p.name[sizeof p.name - 1] = 0;
    if (!p.name[0]) strcpy(p.name, "offline");

    qg_context *ctx;
    qg_status st = context_alloc(&ctx);
    if (st != QG_SUCCESS) return st;
    ctx->device = -1;
    ctx->offline = true;
    ctx->props = p;
    ctx->num_sms = p.sm_count;
    *out = ctx;
    return QG_SUCCESS;
}

static qg_status attr(const qg_driver *drv, int *v, CUdevice_attribute a, CUdevice dev,
                      const char *name) {
    CUresult r = drv->cuDeviceGetAttribute(v, a, dev);
    return r == CUDA_SUCCESS ? QG_SUCCESS : qg__cuda_fail(r, name);
}

qg_status qg_context_create(qg_context **out, int device) {
    qg__clear_error();
    if (!out) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_context_create: out is NULL");
    *out = NULL;
    if (device < 0)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_context_create: device must be >= 0, got %d", device);
    const qg_driver *drv;
    qg_status st = qg__driver_load(&drv);
    if (st != QG_SUCCESS) return st;

    int count = 0;
    CUresult r = drv->cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "cuDeviceGetCount");
    if (count == 0) return qg__fail(QG_ERROR_NO_DEVICE, "no CUDA device present");
    if (device >= count)
        return qg__fail(QG_ERROR_NO_DEVICE,
                        "qg_context_create: device %d requested, but only %d CUDA device(s) present",
                        device, count);
    CUdevice dev;
    if ((r = drv->cuDeviceGet(&dev, device)) != CUDA_SUCCESS) return qg__cuda_fail(r, "cuDeviceGet");

    qg_device_props p;
    memset(&p, 0, sizeof p);
    int smem = 0, l2 = 0;
    if ((st = attr(drv, &p.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev, "SM count")) ||
        (st = attr(drv, &p.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev, "cc major")) ||
        (st = attr(drv, &p.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev, "cc minor")) ||
        (st = attr(drv, &smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev, "smem")) ||
        (st = attr(drv, &l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev, "L2 size")))
        return st;
    /* The clock attribute is informational; some drivers no longer report it. */
    if (drv->cuDeviceGetAttribute(&p.clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev) != CUDA_SUCCESS)
        p.clock_khz = 0;
    /* So is the memory clock (deprecated in CUDA 13's runtime API, still a
     * driver attribute): DDR, so the peak is 2 x clock x bus width. */
    int mem_khz = 0, bus_bits = 0;
    if (drv->cuDeviceGetAttribute(&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) ==
            CUDA_SUCCESS &&
        drv->cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) ==
            CUDA_SUCCESS &&
        mem_khz > 0 && bus_bits > 0)
        p.dram_gbps = (int)(2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9 + 0.5);
    p.smem_optin_bytes = (size_t)smem;
    p.l2_bytes = (size_t)l2;
    if (drv->cuDeviceGetName(p.name, (int)sizeof p.name, dev) != CUDA_SUCCESS) strcpy(p.name, "?");
    if (p.cc_major != 9 || p.cc_minor != 0)
        return qg__fail(QG_ERROR_WRONG_ARCH,
                        "device %d (%s) is sm_%d%d; qgemm kernels need sm_90 (Hopper: H100, H800, "
                        "H200, H20)", device, p.name, p.cc_major, p.cc_minor);

    qg_context *ctx;
    if ((st = context_alloc(&ctx)) != QG_SUCCESS) return st;
    ctx->device = device;
    ctx->props = p;
    ctx->num_sms = p.sm_count;
    ctx->cu_device = dev;
    ctx->drv = drv;
    if ((r = drv->cuDevicePrimaryCtxRetain(&ctx->cu_context, dev)) != CUDA_SUCCESS) {
        st = qg__cuda_fail(r, "cuDevicePrimaryCtxRetain");
        ctx->cu_context = NULL;
        qg_context_destroy(ctx);
        return st;
    }
    *out = ctx;
    return QG_SUCCESS;
}

void qg_context_destroy(qg_context *ctx) {
    if (!ctx) return;
    if (ctx->cu_context) {
        CUcontext prev;
        ctx->drv->cuCtxPushCurrent(ctx->cu_context);
        qg__launch_cache_destroy(ctx);
        ctx->drv->cuCtxPopCurrent(&prev);
        ctx->drv->cuDevicePrimaryCtxRelease(ctx->cu_device);
    } else {
        qg__launch_cache_destroy(ctx);
    }
    qg__jit_cache_destroy(ctx->jit);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

qg_status qg_context_get_props(const qg_context *ctx, qg_device_props *out) {
    qg__clear_error();
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_context_get_props: ctx is NULL");
    if (!out) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_context_get_props: out is NULL");
    *out = ctx->props;
    return QG_SUCCESS;
}

qg_status qg_context_set_num_sms(qg_context *ctx, int num_sms) {
    qg__clear_error();
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_context_set_num_sms: ctx is NULL");
    if (num_sms < 0 || num_sms > ctx->props.sm_count)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_context_set_num_sms: num_sms must be in [0, %d] (0 = all), got %d",
                        ctx->props.sm_count, num_sms);
    pthread_mutex_lock(&ctx->lock);
    ctx->num_sms = num_sms ? num_sms : ctx->props.sm_count;
    pthread_mutex_unlock(&ctx->lock);
    return QG_SUCCESS;
}

/* The getters take the lock the setters write under: another thread may be
 * setting the value (a plain read would be a data race). The context is
 * never a const object (qg_context_create allocates it), so the lock may be
 * taken through a const pointer. */
int qg_context_get_num_sms(const qg_context *ctx) {
    if (!ctx) return -1;
    qg_context *c = (qg_context *)ctx;
    pthread_mutex_lock(&c->lock);
    const int n = c->num_sms;
    pthread_mutex_unlock(&c->lock);
    return n;
}

qg_status qg_context_set_pdl(qg_context *ctx, int enable) {
    qg__clear_error();
    if (!ctx) return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qg_context_set_pdl: ctx is NULL");
    if (enable != 0 && enable != 1)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                        "qg_context_set_pdl: enable must be 0 or 1, got %d", enable);
    pthread_mutex_lock(&ctx->lock);
    ctx->pdl = enable == 1;
    pthread_mutex_unlock(&ctx->lock);
    return QG_SUCCESS;
}

int qg_context_get_pdl(const qg_context *ctx) {
    if (!ctx) return -1;
    qg_context *c = (qg_context *)ctx;
    pthread_mutex_lock(&c->lock);
    const int pdl = (int)c->pdl;
    pthread_mutex_unlock(&c->lock);
    return pdl;
}

/* ---- the testkit's seam (src/seam.h) ------------------------------------- */

bool qg__context_cuda(const qg_context *ctx, const qg_driver **drv, CUcontext *cu_context,
                      CUdevice *cu_device) {
    if (!ctx || ctx->offline || !ctx->drv) return false;
    if (drv) *drv = ctx->drv;
    if (cu_context) *cu_context = ctx->cu_context;
    if (cu_device) *cu_device = ctx->cu_device;
    return true;
}

qg_status qg__context_compile_source(qg_context *ctx, const char *source, const void **cubin,
                                     size_t *cubin_size, qg_kernel_info *info) {
    if (!ctx || !cubin || !cubin_size)
        return qg__fail(QG_ERROR_INTERNAL, "qg__context_compile_source: a NULL argument");
    qg_jit_result res;
    qg_status st = qg__jit_compile(ctx->jit, source, &res);
    if (st != QG_SUCCESS) return st;
    *cubin = res.cubin;
    *cubin_size = res.cubin_size;
    if (info) *info = res.info;
    return QG_SUCCESS;
}
