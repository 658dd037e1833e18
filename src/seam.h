/*
 * seam.h -- the one internal header that code above the library includes.
 *
 * The testkit (testkit/, and through its header the CLI's tools/) sits above
 * libqgemm and otherwise uses only include/qgemm.h. It needs a few things the
 * public API does not give and should not: the CUDA driver (memory, copies,
 * events, graphs -- the library has loaded it already, and a second loader
 * would be a second copy of src/driver.c), the CUDA context a qg_context
 * retained, the JIT and cache for its own helper kernels, the thread's error
 * message (so its failures read like the library's), the disk cache's
 * location, and one fault to inject (a tile the JIT refuses). This header is
 * that narrow seam; src/internal.h includes it, nothing under src/ is there
 * for the testkit's sake alone except the fault below, and nothing above
 * src/ but the testkit and the library's own white-box tests include more.
 * Not installed; no symbol here is exported from libqgemm.so.
 */
#ifndef QG_SEAM_H
#define QG_SEAM_H

#include "qgemm.h"
#include <stdbool.h>
#include <stddef.h>

/* ---- errors (src/status.c) --------------------------------------------- */

/* Record a printf-style message for the calling thread; return `status`. */
qg_status qg__fail(qg_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Forget the thread's message (called at the start of every public call). */
void qg__clear_error(void);

/* ---- the CUDA driver, loaded at run time (src/driver.c) --------------------
 * Types come from <cuda.h> (header only: no link-time dependency). */
#include <cuda.h>

typedef struct {
    CUresult (*cuInit)(unsigned int);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxPushCurrent)(CUcontext);
    CUresult (*cuCtxPopCurrent)(CUcontext *);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*cuOccupancyMaxActiveClusters)(int *, CUfunction, const CUlaunchConfig *);
    CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                       const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                       const cuuint32_t *, CUtensorMapInterleave,
                                       CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);
    CUresult (*cuPointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*cuStreamGetCtx)(CUstream, CUcontext *);
    CUresult (*cuMemsetD2D32Async)(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream);
    /* not called by the library itself: the testkit's memory, copies, events
     * and graphs (one loader for the process: see the top of this file) */
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemGetInfo)(size_t *, size_t *);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuMemcpy2DAsync)(const CUDA_MEMCPY2D *, CUstream);
    CUresult (*cuStreamCreate)(CUstream *, unsigned int);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuEventCreate)(CUevent *, unsigned int);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
} qg_driver;

/* Load libcuda.so.1 once (thread-safe) and call cuInit(0).
 * @return QG_SUCCESS and *out, or QG_ERROR_NO_DRIVER / QG_ERROR_NO_DEVICE with a message. */
qg_status qg__driver_load(const qg_driver **out);
/* Turn a CUresult into a status + message "<what>: <driver's error string>".
 * A refused image (INVALID_IMAGE, NO_BINARY_FOR_GPU, INVALID_PTX,
 * UNSUPPORTED_PTX_VERSION: a module load) on a driver older than the loaded
 * NVRTC's CUDA major adds qg__driver_too_old's sentence (the minimum driver). */
qg_status qg__cuda_fail(CUresult r, const char *what);
/* Whether kernels compiled by NVRTC nvrtc_major.nvrtc_minor load on a driver
 * whose cuDriverGetVersion is driver_version (1000 * major + 10 * minor). By
 * NVIDIA's minor version compatibility an NVRTC of CUDA X.y needs a driver of
 * CUDA X.0 or newer: CUDA 13 (the pip nvidia-cuda-nvrtc) R580+, CUDA 12
 * 525.60.13+. Pure: loads nothing, records no error.
 * @return NULL when they load, else buf holding one sentence that names both
 *         versions and the minimum driver (what to do), for a message. */
const char *qg__driver_too_old(int driver_version, int nvrtc_major, int nvrtc_minor, char *buf,
                               size_t len);

/* ---- NVRTC, loaded at run time (src/nvrtc.c) -------------------------------
 * Types come from <nvrtc.h> (header only: libqgemm does not link libnvrtc). */
#include <nvrtc.h>

typedef struct {
    nvrtcResult (*nvrtcVersion)(int *, int *);
    const char *(*nvrtcGetErrorString)(nvrtcResult);
    nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                      const char *const *, const char *const *);
    nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *);
    nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char *);
    nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char *);
} qg_nvrtc;

/* Load libnvrtc once (thread-safe): $QGEMM_NVRTC_DIR, $CUDA_HOME/lib64 (default
 * /usr/local/cuda), then the system loader; src/nvrtc.c has the details.
 * @return QG_SUCCESS and *out, or QG_ERROR_COMPILE with a message naming every
 *         path tried. */
qg_status qg__nvrtc_load(const qg_nvrtc **out);
/* The path NVRTC was loaded from (loading it if not yet), or NULL when it is missing. */
const char *qg__nvrtc_path(void);
/* NVRTC's version when this process has loaded it already (nothing is
 * loaded here). @return false, *major = *minor = 0, when it has not. */
bool qg__nvrtc_version_if_loaded(int *major, int *minor);

/* ---- compiler warnings (src/jit.c) ---------------------------------------- */

/* How many NVRTC compiles of this process logged a warning; `first` (may be
 * NULL) receives the first one's line, prefixed with its kernel's key. The
 * CI compile sweeps assert 0 (the kernels compile without warnings). */
unsigned qg__jit_warnings(char *first, size_t len);

/* ---- a context's CUDA side (src/context.c) -------------------------------- */

/* The driver table, primary context and device of a device context.
 * @return false (outputs untouched) for NULL or an offline context. */
bool qg__context_cuda(const qg_context *ctx, const qg_driver **drv, CUcontext *cu_context,
                      CUdevice *cu_device);
/* Compile a self-contained CUDA source (it may #include the library's kernel
 * headers) for ctx's device through ctx's JIT and its memory and disk caches.
 * *cubin is owned by ctx and valid until it is destroyed; `info` may be NULL. */
qg_status qg__context_compile_source(qg_context *ctx, const char *source, const void **cubin,
                                     size_t *cubin_size, qg_kernel_info *info);

/* ---- the disk cache's location (src/env.c) -------------------------------- */

/* The directory of the disk cache, by the rule of docs/DESIGN.md §9 (src/env.c):
 * $QGEMM_CACHE_DIR, else $XDG_CACHE_HOME/qgemm (absolute only), else
 * $HOME/.cache/qgemm. @return false (buf "") when none is set or the path
 * does not fit. */
bool qg__cache_dir(char *buf, size_t len);

/* Why the disk cache's directory `dir` is not used (src/cache.c), written
 * into why: owned by another user, or writable by others (sticky or not),
 * so that another user could plant entries under its predictable keys
 * (issue 53); the library then caches in memory only.
 * @return why, or NULL when the directory is safe to use. */
const char *qg__cache_dir_unsafe(const char *dir, char *why, size_t len);

/* ---- the disk cache's size (src/cache.c) ----------------------------------- */

#define QG_CACHE_DEFAULT_MAX_MB 1024 /* QGEMM_CACHE_MAX_MB when unset */

typedef struct {
    uint64_t files, bytes;
} qg_cache_usage;

/* QGEMM_CACHE_MAX_MB in bytes (default QG_CACHE_DEFAULT_MAX_MB MiB; 0: no limit). */
uint64_t qg__cache_limit_bytes(void);
/* The same; *valid (when not NULL) false when the variable is set but is not
 * a number of MiB in [0, 2^40] (digits only), and the default was taken. */
uint64_t qg__cache_limit_bytes_valid(bool *valid);
/* Delete the least recently used kernels (<64 hex>.cubin, oldest mtime first)
 * of `dir` until the rest take at most max_bytes (0: delete them all), and
 * temporaries an hour old (all of them when max_bytes is 0; none when it is
 * UINT64_MAX, which only counts). Other files are never touched; a missing
 * directory is an empty cache. `removed`, `kept` may be NULL.
 * @return QG_SUCCESS, or an error when the directory cannot be read. */
qg_status qg__cache_prune(const char *dir, uint64_t max_bytes, qg_cache_usage *removed,
                          qg_cache_usage *kept);

/* ---- fault injection (src/fp8_gemm.c) ------------------------------------------ */

/* From now on, compiling a GEMM kernel whose tile is block_m x block_n fails
 * with QG_ERROR_COMPILE, as the JIT refuses a kernel that spills (0, 0: no
 * more refusals). Process-wide. No legal configuration spills on the shapes
 * the tests cover, so without this the fallback of qg_compile to the next
 * ranked configuration could not be tested; the testkit sets it
 * (qgtk_refuse_tile). */
void qg__refuse_tile(int block_m, int block_n);

#endif /* QG_SEAM_H */
