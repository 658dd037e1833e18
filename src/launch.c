/*
 * launch.c -- the launch path every kernel family shares: the launch cache,
 * modules, tensor maps, the context on the caller's stream, the launch.
 * src/launch.h states the contract; this file knows no family.
 *
 * Invariants:
 *  - An entry is built once per (family, key) and lives until the context is
 *    destroyed; modules are shared between entries with the same JIT key.
 *  - A launch reads no device memory and allocates nothing: the tensor maps
 *    are built on the host and passed by value (CUDA-graph capturable).
 */
#include "launch.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qg_module {
    qg_module *next;
    char key[65];
    CUmodule module;
    CUfunction function;
};

struct qg_launch_entry {
    qg_launch_entry *next;
    const qg_launch_family *family;
    void *key;              /* key_size bytes, the family's */
    size_t key_size;
    int num_sms;            /* ctx->num_sms when built: a new limit builds anew */
    qg_launch_shape shape;  /* grid: lowered to the resident limit */
    qg_module *module;
    alignas(16) unsigned char plan[]; /* family->plan_size bytes */
};

#define QG_LAUNCH_BUCKETS (sizeof ((qg_context *)0)->launches / sizeof (qg_launch_entry *))

static unsigned bucket_of(const qg_launch_family *family, const void *key, size_t key_size) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)family;
    for (size_t i = 0; i < key_size; ++i) h = (h ^ ((const unsigned char *)key)[i]) * 1099511628211ull;
    return (unsigned)(h % QG_LAUNCH_BUCKETS);
}

/* Load a compiled kernel: module, function, dynamic shared memory. On
 * failure *module is NULL and step names the call that failed. */
static CUresult load_module(const qg_context *ctx, const char *kernel, const void *cubin,
                            size_t smem_bytes, CUmodule *module, CUfunction *function, char *step,
                            size_t step_len) {
    const qg_driver *drv = ctx->drv;
    *module = NULL;
    snprintf(step, step_len, "cuModuleLoadData");
    CUresult r = drv->cuModuleLoadData(module, cubin);
    if (r == CUDA_SUCCESS) {
        snprintf(step, step_len, "cuModuleGetFunction(%s)", kernel);
        r = drv->cuModuleGetFunction(function, *module, kernel);
    }
    if (r == CUDA_SUCCESS) {
        snprintf(step, step_len, "cuFuncSetAttribute(max dynamic shared memory)");
        r = drv->cuFuncSetAttribute(*function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    (int)smem_bytes);
    }
    if (r != CUDA_SUCCESS && *module) {
        drv->cuModuleUnload(*module);
        *module = NULL;
    }
    return r;
}

/* Errors that say the context or the device cannot load anything now (or
 * memory ran out), not that the image is bad: a cubin from the disk cache
 * that fails with one of these is not discarded. */
static bool context_unusable(CUresult r) {
    switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return true;
    default:
        return false;
    }
}

/* "CUresult 200: device kernel image is invalid", for a debug line. */
static void cuda_error_text(const qg_context *ctx, CUresult r, char *buf, size_t len) {
    const char *text = NULL;
    if (ctx->drv->cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "?";
    snprintf(buf, len, "CUresult %d: %s", (int)r, text);
}

static void free_entry(qg_launch_entry *e) {
    if (!e) return;
    free(e->key);
    free(e);
}

/* The module of res's kernel: one already loaded, or res's cubin loaded now.
 * A cubin from the disk cache that passed the cache's checks (whole, its hash
 * right, ours) but that the driver cannot load -- forged with a recomputed
 * hash, another kernel's or another GPU's -- is deleted and the entry built
 * again, once (issue 27). */
static qg_status module_of(qg_context *ctx, qg_launch_entry *e, const void *arg,
                           qg_jit_result *res) {
    const qg_launch_family *f = e->family;
    for (qg_module *m = ctx->modules; m; m = m->next)
        if (!strcmp(m->key, res->info.key)) {
            e->module = m;
            return QG_SUCCESS;
        }
    qg_module *m = calloc(1, sizeof *m);
    if (!m) return qg__fail(QG_ERROR_OUT_OF_MEMORY, "launch cache: out of host memory");
    char step[160];
    CUresult r = load_module(ctx, f->kernel, res->cubin, e->shape.smem_bytes, &m->module,
                             &m->function, step, sizeof step);
    char path[1024] = "";
    bool recompiled = false;
    if (r != CUDA_SUCCESS && res->from_disk && !context_unusable(r) &&
        qg__jit_discard(ctx->jit, res->info.key, res->cubin, path, sizeof path)) {
        char text[160];
        cuda_error_text(ctx, r, text, sizeof text);
        qg__jit_debug("kernel %s from the disk cache (%s) refused by the driver (%s: %s): "
                      "entry deleted, recompiling", res->info.key, path[0] ? path : "?", step,
                      text);
        recompiled = true;
        memset(e->plan, 0, f->plan_size);
        qg_status st = f->build(ctx, e->key, arg, e->plan, &e->shape, res);
        if (st != QG_SUCCESS) {
            free(m);
            return st;
        }
        r = load_module(ctx, f->kernel, res->cubin, e->shape.smem_bytes, &m->module,
                        &m->function, step, sizeof step);
    }
    if (r != CUDA_SUCCESS) {
        free(m);
        /* Name the kernel and where its cubin came from: a cache entry the
         * user can delete, or a fresh compile (a driver problem). */
        char dir[900], what[1536];
        if (!path[0] && res->from_disk && qg__cache_dir(dir, sizeof dir))
            snprintf(path, sizeof path, "%s/%s.cubin", dir, res->info.key);
        snprintf(what, sizeof what, "%s failed for kernel %s (%s%s)", step, res->info.key,
                 recompiled      ? "compiled again after the driver refused the disk cache entry "
                 : res->from_disk ? "read from the disk cache entry "
                                  : "compiled now",
                 recompiled || res->from_disk ? (path[0] ? path : "?") : "");
        return qg__cuda_fail(r, what);
    }
    memcpy(m->key, res->info.key, sizeof m->key);
    m->next = ctx->modules;
    ctx->modules = m;
    e->module = m;
    return QG_SUCCESS;
}

/* A persistent grid must be co-resident: with 2-CTA clusters, GPCs with an
 * odd SM count cannot host a cluster on every SM, and a cluster that does
 * not fit would run as a second wave. */
static void lower_grid_to_resident(const qg_context *ctx, qg_launch_entry *e) {
    if (e->shape.cluster_size <= 1) return;
    CUlaunchAttribute attr;
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = (unsigned)e->shape.cluster_size;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = (unsigned)e->shape.grid;
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = e->shape.num_threads;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = (unsigned)e->shape.smem_bytes;
    lc.attrs = &attr;
    lc.numAttrs = 1;
    int clusters = 0;
    CUresult r = ctx->drv->cuOccupancyMaxActiveClusters(&clusters, e->module->function, &lc);
    if (r == CUDA_SUCCESS && clusters > 0 && clusters * e->shape.cluster_size < e->shape.grid)
        e->shape.grid = clusters * e->shape.cluster_size;
    if (qg__env_flag("QGEMM_PRINT_CONFIG"))
        fprintf(stderr, "qgemm: cluster occupancy query: rc %d, %d clusters of %d -> grid %d\n",
                (int)r, clusters, e->shape.cluster_size, e->shape.grid);
}

qg_status qg__launch_resolve(qg_context *ctx, const qg_launch_family *family, const void *key,
                             size_t key_size, const void *arg, const qg_launch_entry **out) {
    const unsigned b = bucket_of(family, key, key_size);
    const int num_sms = ctx->num_sms;
    for (qg_launch_entry *e = ctx->launches[b]; e; e = e->next)
        if (e->family == family && e->num_sms == num_sms && e->key_size == key_size &&
            !memcmp(e->key, key, key_size)) {
            *out = e;
            return QG_SUCCESS;
        }
    qg_launch_entry *e = calloc(1, sizeof *e + family->plan_size);
    if (e) e->key = malloc(key_size ? key_size : 1);
    if (!e || !e->key) {
        free_entry(e);
        return qg__fail(QG_ERROR_OUT_OF_MEMORY, "launch cache: out of host memory");
    }
    memcpy(e->key, key, key_size);
    e->key_size = key_size;
    e->family = family;
    e->num_sms = num_sms;
    qg_jit_result res;
    qg_status st = family->build(ctx, e->key, arg, e->plan, &e->shape, &res);
    if (st == QG_SUCCESS) st = module_of(ctx, e, arg, &res);
    if (st != QG_SUCCESS) {
        free_entry(e);
        return st;
    }
    lower_grid_to_resident(ctx, e);
    e->next = ctx->launches[b];
    ctx->launches[b] = e;
    *out = e;
    return QG_SUCCESS;
}

const void *qg__launch_plan(const qg_launch_entry *e) { return e->plan; }

const qg_launch_shape *qg__launch_shape(const qg_launch_entry *e) { return &e->shape; }

void qg__launch_cache_destroy(qg_context *ctx) {
    for (size_t b = 0; b < QG_LAUNCH_BUCKETS; ++b)
        for (qg_launch_entry *e = ctx->launches[b], *next; e; e = next) {
            next = e->next;
            free_entry(e);
        }
    for (qg_module *m = ctx->modules, *next; m; m = next) {
        next = m->next;
        if (ctx->drv && m->module) ctx->drv->cuModuleUnload(m->module);
        free(m);
    }
}

qg_status qg__launch(const qg_context *ctx, const qg_launch_entry *e, int grid, void **params,
                     CUstream stream, bool pdl, const char *what) {
    CUlaunchAttribute attrs[2];
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = (unsigned)grid;
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = e->shape.num_threads;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = (unsigned)e->shape.smem_bytes;
    lc.hStream = stream;
    lc.attrs = attrs;
    if (e->shape.cluster_size > 1) {
        CUlaunchAttribute *at = &attrs[lc.numAttrs++];
        at->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at->value.clusterDim.x = (unsigned)e->shape.cluster_size;
        at->value.clusterDim.y = 1;
        at->value.clusterDim.z = 1;
    }
    if (pdl) { /* the kernel waits for the previous one (griddepcontrol.wait) */
        CUlaunchAttribute *at = &attrs[lc.numAttrs++];
        at->id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at->value.programmaticStreamSerializationAllowed = 1;
    }
    CUresult r = ctx->drv->cuLaunchKernelEx(&lc, e->module->function, params, NULL);
    if (r != CUDA_SUCCESS) {
        char text[128];
        snprintf(text, sizeof text, "launching the %s kernel", what);
        return qg__cuda_fail(r, text);
    }
    return QG_SUCCESS;
}

/* ---- what every family's host side shares around a launch ---------------- */

qg_status qg__check_register_split(const qg_jit_result *res, int num_threads, int producer_regs,
                                   int math_wgs, int math_regs) {
    const int pool = res->info.registers * num_threads;
    const int need = 128 * producer_regs + 128 * math_wgs * math_regs;
    if (pool < need)
        return qg__fail(QG_ERROR_COMPILE,
                        "kernel %s: %d registers x %d threads at entry cannot hold the %d that "
                        "the warpgroup register split needs", res->info.key, res->info.registers,
                        num_threads, need);
    return QG_SUCCESS;
}

qg_status qg__copy_c_into_d(const qg_context *ctx, void *d, size_t d_pitch, const void *c,
                            size_t c_pitch, size_t row_bytes, uint64_t rows, CUstream stream) {
    CUDA_MEMCPY2D copy;
    memset(&copy, 0, sizeof copy);
    copy.srcMemoryType = copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = (CUdeviceptr)(uintptr_t)c;
    copy.srcPitch = c_pitch;
    copy.dstDevice = (CUdeviceptr)(uintptr_t)d;
    copy.dstPitch = d_pitch;
    copy.WidthInBytes = row_bytes;
    copy.Height = (size_t)rows;
    CUresult r = ctx->drv->cuMemcpy2DAsync(&copy, stream);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "copying C into D (cuMemcpy2DAsync)");
    return QG_SUCCESS;
}

qg_status qg__zero_d(const qg_context *ctx, void *d, size_t d_pitch, size_t row_bytes,
                     uint64_t rows, CUstream stream) {
    CUresult r = ctx->drv->cuMemsetD2D32Async((CUdeviceptr)(uintptr_t)d, d_pitch, 0, row_bytes / 4,
                                              (size_t)rows, stream);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "zeroing D (cuMemsetD2D32Async)");
    return QG_SUCCESS;
}

/* ---- the context on the caller's stream ---------------------------------- */

qg_status qg__enter(const qg_context *ctx, CUstream stream, const char *fn) {
    const qg_driver *drv = ctx->drv;
    CUresult r = drv->cuCtxPushCurrent(ctx->cu_context);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, "cuCtxPushCurrent");
    if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD) {
        CUcontext sctx = NULL;
        if (drv->cuStreamGetCtx(stream, &sctx) == CUDA_SUCCESS && sctx != ctx->cu_context) {
            CUcontext prev;
            drv->cuCtxPopCurrent(&prev);
            return qg__fail(QG_ERROR_INVALID_ARGUMENT,
                            "%s: stream belongs to another CUDA context than device %d's primary "
                            "context", fn, ctx->device);
        }
    }
    return QG_SUCCESS;
}

void qg__leave(const qg_context *ctx) {
    CUcontext prev;
    ctx->drv->cuCtxPopCurrent(&prev);
}

/* ---- tensor maps ------------------------------------------------------------ */

/*
 * The tensor maps of a thread's recent calls. A cached launch encodes the
 * same maps call after call (the same weights, activation buffers the
 * caching allocator hands out again): cuTensorMapEncodeTiled costs about
 * 0.11 us a map on an H200 (bench/results/2026-11-25-h200-7/host-probe.log),
 * 4-5 maps a call. The key is every argument of the encode (zeroed first, so
 * that padding compares equal), so a hit is the map the driver would return:
 * the map holds no context or stream, only the address and the layout. One
 * table per thread (no lock); direct-mapped, a miss replaces its slot.
 */
typedef struct {
    const void *ptr;
    uint64_t inner, rows, groups, row_bytes, group_bytes;
    uint32_t box_inner, box_rows;
    int type, swizzle;
} map_key;
#define QG_MAP_CACHE_SLOTS 32
typedef struct {
    CUtensorMap map;
    map_key key;
    bool used;
} map_slot;
static _Thread_local map_slot map_cache[QG_MAP_CACHE_SLOTS];

static unsigned map_slot_of(const map_key *k) {
    uint64_t h = (uint64_t)(uintptr_t)k->ptr ^ (k->inner * 0x9e3779b97f4a7c15ull) ^
                 (k->rows * 0xc2b2ae3d27d4eb4full) ^ (k->groups + k->row_bytes + k->box_rows) ^
                 ((uint64_t)k->type << 40) ^ ((uint64_t)k->box_inner << 20);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (unsigned)(h % QG_MAP_CACHE_SLOTS);
}

qg_status qg__encode_map(const qg_context *ctx, CUtensorMap *map, CUtensorMapDataType type,
                         const void *ptr, uint64_t inner, uint64_t rows, uint64_t groups,
                         uint64_t row_bytes, uint64_t group_bytes, uint32_t box_inner,
                         uint32_t box_rows, CUtensorMapSwizzle swizzle, const char *what) {
    map_key key;
    memset(&key, 0, sizeof key);
    key.ptr = ptr, key.inner = inner, key.rows = rows, key.groups = groups;
    key.row_bytes = row_bytes, key.group_bytes = group_bytes;
    key.box_inner = box_inner, key.box_rows = box_rows;
    key.type = (int)type, key.swizzle = (int)swizzle;
    map_slot *slot = &map_cache[map_slot_of(&key)];
    if (slot->used && memcmp(&slot->key, &key, sizeof key) == 0) {
        *map = slot->map;
        return QG_SUCCESS;
    }
    const cuuint64_t dims[3] = {inner, rows, groups};
    const cuuint64_t strides[2] = {row_bytes, group_bytes};
    const cuuint32_t box[3] = {box_inner, box_rows, 1};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    CUresult r = ctx->drv->cuTensorMapEncodeTiled(
        map, type, groups ? 3 : rows ? 2 : 1, (void *)ptr, dims, strides, box, elem_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return qg__cuda_fail(r, what);
    slot->map = *map;
    slot->key = key;
    slot->used = true;
    return QG_SUCCESS;
}

qg_status qg__encode_tiled(const qg_context *ctx, CUtensorMap *map, CUtensorMapDataType type,
                           const void *ptr, uint64_t inner, uint64_t outer, uint64_t stride_bytes,
                           uint32_t box_inner, uint32_t box_outer, CUtensorMapSwizzle swizzle,
                           const char *what) {
    return qg__encode_map(ctx, map, type, ptr, inner, outer, 0, stride_bytes, 0, box_inner,
                          box_outer, swizzle, what);
}
