/*
 * launch.h -- the launch path every kernel family shares (src/launch.c).
 *
 * A family (the FP8 GEMMs of src/fp8_gemm.c, and each family after it) owns
 * its validation, its planner and the source text of its kernels; what is
 * the same for all of them lives here:
 *
 *   - the launch cache: a family's key (a plain struct of the problem and the
 *     caller's forced choices, zeroed before it is filled so that padding
 *     compares equal) -> a launch entry: the family's plan (opaque bytes
 *     here), the loaded module and the geometry of the launch. A miss calls
 *     the family's `build` (choose, write the source, JIT-compile), then
 *     loads the cubin; a cubin from the disk cache that the driver refuses
 *     is deleted and built once more;
 *   - modules, shared by every entry whose kernel has the same JIT key;
 *   - tensor maps, encoded on the host (cuTensorMapEncodeTiled) through a
 *     small per-thread cache;
 *   - entering the context's CUDA context on the caller's stream, and the
 *     launch itself (clusters, programmatic dependent launch).
 *
 * Invariants: the caller holds ctx->lock around qg__launch_resolve (the
 * cache is the context's) and has entered the CUDA context; entries live
 * until the context is destroyed, so a returned entry may be used after the
 * lock is released. Nothing here reads device memory or allocates device
 * memory: a launch is CUDA-graph capturable.
 */
#ifndef QG_LAUNCH_H
#define QG_LAUNCH_H

#include "internal.h"

/* What a family's build says about the launches of one entry. */
typedef struct {
    unsigned num_threads;   /* threads of a CTA */
    size_t smem_bytes;      /* dynamic shared memory of a CTA */
    int cluster_size;       /* 1, or the CTAs of a cluster (x) */
    int grid;               /* the persistent grid the family wants (e.g. the SMs it may use) */
} qg_launch_shape;

typedef struct qg_launch_entry qg_launch_entry;

/* A kernel family as the launch path sees it. */
typedef struct {
    const char *kernel;     /* the __global__ function's name in the cubin */
    size_t plan_size;       /* bytes of the family's plan kept in each entry */
    /* Choose (or complete the forced choice of `arg`) and compile: fill
     * `plan` (plan_size bytes, zeroed), `shape` and `res`. Called with
     * ctx->lock held; may be called a second time for one entry (a disk
     * cache entry refused by the driver). */
    qg_status (*build)(qg_context *ctx, const void *key, const void *arg, void *plan,
                       qg_launch_shape *shape, qg_jit_result *res);
} qg_launch_family;

/* Find or build the entry of (family, key): key_size bytes compared as
 * bytes; `arg` is passed to build. Called with ctx->lock held and the CUDA
 * context current. @return QG_SUCCESS and *out, or the build's / the
 * driver's error (the message names the kernel and where its cubin came
 * from). */
qg_status qg__launch_resolve(qg_context *ctx, const qg_launch_family *family, const void *key,
                             size_t key_size, const void *arg, const qg_launch_entry **out);

/* The family's plan in an entry (plan_size bytes). */
const void *qg__launch_plan(const qg_launch_entry *e);
/* The entry's shape as built, with `grid` lowered to what can be resident at
 * once (2-CTA clusters may not fit every GPC). */
const qg_launch_shape *qg__launch_shape(const qg_launch_entry *e);

/* Enqueue the entry's kernel on `stream` over `grid` CTAs (a multiple of the
 * cluster size); `what` names the kernel in an error. */
qg_status qg__launch(const qg_context *ctx, const qg_launch_entry *e, int grid, void **params,
                     CUstream stream, bool pdl, const char *what);

/* Unload every module and free every entry of ctx's launch cache; ctx current. */
void qg__launch_cache_destroy(qg_context *ctx);

/* Make ctx's CUDA context current (*prev: the one to restore) and check that
 * `stream` is a stream of it; `fn` names the public call.
 * @return QG_SUCCESS (then qg__leave must follow), or an error (nothing to undo). */
qg_status qg__enter(const qg_context *ctx, CUstream stream, const char *fn);
/* Restore the CUDA context qg__enter found current. */
void qg__leave(const qg_context *ctx);

/* The kernel's entry register allocation (res->info.registers per thread x
 * num_threads) holds the warpgroups' setmaxnreg split (128 x producer_regs +
 * 128 x math_wgs x math_regs): setmaxnreg.inc would otherwise wait for
 * registers the CTA does not own. @return QG_SUCCESS, or QG_ERROR_COMPILE
 * naming the kernel. */
qg_status qg__check_register_split(const qg_jit_result *res, int num_threads, int producer_regs,
                                   int math_wgs, int math_regs);

/* D = C + A B^T with C another array: C's rows (row_bytes each, pitches in
 * bytes) into D on the stream, before the kernel adds into D. */
qg_status qg__copy_c_into_d(const qg_context *ctx, void *d, size_t d_pitch, const void *c,
                            size_t c_pitch, size_t row_bytes, uint64_t rows, CUstream stream);
/* D's rows (row_bytes each, a multiple of 4) zeroed on the stream: a call
 * with nothing to sum (K = 0) and no C. */
qg_status qg__zero_d(const qg_context *ctx, void *d, size_t d_pitch, size_t row_bytes,
                     uint64_t rows, CUstream stream);

/* ---- tensor maps --------------------------------------------------------- */

/* A tiled tensor map of rank 3 (inner x rows x groups elements: rows
 * row_bytes apart, groups group_bytes apart; box box_inner x box_rows x 1),
 * of rank 2 (groups = 0) or of rank 1 (rows = groups = 0: inner elements,
 * box box_inner); from the thread's cache when it encoded the same map
 * lately. `what` names the map in an error. */
qg_status qg__encode_map(const qg_context *ctx, CUtensorMap *map, CUtensorMapDataType type,
                         const void *ptr, uint64_t inner, uint64_t rows, uint64_t groups,
                         uint64_t row_bytes, uint64_t group_bytes, uint32_t box_inner,
                         uint32_t box_rows, CUtensorMapSwizzle swizzle, const char *what);
/* qg__encode_map of rank 2 (inner x outer, rows stride_bytes apart), or of
 * rank 1 (outer = 0). */
qg_status qg__encode_tiled(const qg_context *ctx, CUtensorMap *map, CUtensorMapDataType type,
                           const void *ptr, uint64_t inner, uint64_t outer, uint64_t stride_bytes,
                           uint32_t box_inner, uint32_t box_outer, CUtensorMapSwizzle swizzle,
                           const char *what);

/* ---- argument checks every family makes (src/args.c) --------------------- */

/* Present and `align`-byte aligned: checkable without a device. */
qg_status qg__check_ptr(const void *ptr, size_t align, const char *fn, const char *name);
/* Memory of the context's device. */
qg_status qg__check_device_ptr(const qg_context *ctx, const void *ptr, const char *fn,
                               const char *name);
/* A leading dimension: >= min (`what` names it), <= 2^36, ld * elem_bytes a
 * multiple of 16 (TMA). */
qg_status qg__check_ld(int64_t ld, int64_t min, int elem_bytes, const char *fn, const char *name,
                       const char *what);

#endif /* QG_LAUNCH_H */
