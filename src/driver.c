/*
 * driver.c -- the CUDA driver, loaded at run time.
 *
 * libcuda.so.1 is dlopen'ed (never linked) so the library loads, compiles
 * and answers "no driver" on machines without an NVIDIA driver.
 *
 * Invariants:
 *  - the load runs exactly once per process (pthread_once); its outcome, a
 *    status and a message, is kept so every later call reports the same thing;
 *  - every entry point comes from cuGetProcAddress_v2 with cudaVersion 12000,
 *    which pins each base name to the ABI the qg_driver prototypes were written
 *    for (e.g. "cuCtxSynchronize" would take a CUcontext at 13000, and
 *    "cuStreamGetCtx" a third argument at 12050), whatever driver is installed;
 *  - with flags 0 (CU_GET_PROC_ADDRESS_DEFAULT) the stream functions use the
 *    legacy default stream, matching qgemm.h's "NULL = legacy stream";
 *  - the library handle is never closed: pointers handed out stay valid.
 */
#include "internal.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The CUDA version whose ABI the qg_driver prototypes follow. */
#define QG_DRIVER_ABI_VERSION 12000

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);
typedef CUresult (*error_text_fn)(CUresult, const char **);

/* Where each driver symbol goes in qg_driver. The symbol is the base name
 * (cuGetProcAddress resolves versions) except cuGraphInstantiate, whose
 * 3-argument form the struct declares is cuGraphInstantiateWithFlags. */
#define QG_ENTRY(field) {#field, offsetof(qg_driver, field)}
static const struct {
    const char *symbol;
    size_t offset;
} entries[] = {
    QG_ENTRY(cuInit),
    QG_ENTRY(cuDriverGetVersion),
    QG_ENTRY(cuGetErrorString),
    QG_ENTRY(cuDeviceGetCount),
    QG_ENTRY(cuDeviceGet),
    QG_ENTRY(cuDeviceGetName),
    QG_ENTRY(cuDeviceGetAttribute),
    QG_ENTRY(cuDevicePrimaryCtxRetain),
    QG_ENTRY(cuDevicePrimaryCtxRelease),
    QG_ENTRY(cuCtxPushCurrent),
    QG_ENTRY(cuCtxPopCurrent),
    QG_ENTRY(cuCtxSynchronize),
    QG_ENTRY(cuModuleLoadData),
    QG_ENTRY(cuModuleUnload),
    QG_ENTRY(cuModuleGetFunction),
    QG_ENTRY(cuFuncSetAttribute),
    QG_ENTRY(cuLaunchKernelEx),
    QG_ENTRY(cuOccupancyMaxActiveClusters),
    QG_ENTRY(cuTensorMapEncodeTiled),
    QG_ENTRY(cuPointerGetAttribute),
    QG_ENTRY(cuStreamGetCtx),
    QG_ENTRY(cuMemsetD2D32Async),
    QG_ENTRY(cuMemAlloc),
    QG_ENTRY(cuMemFree),
    QG_ENTRY(cuMemGetInfo),
    QG_ENTRY(cuMemcpyHtoD),
    QG_ENTRY(cuMemcpyDtoH),
    QG_ENTRY(cuMemcpyDtoD),
    QG_ENTRY(cuMemsetD8),
    QG_ENTRY(cuMemsetD8Async),
    QG_ENTRY(cuMemcpy2DAsync),
    QG_ENTRY(cuStreamCreate),
    QG_ENTRY(cuStreamDestroy),
    QG_ENTRY(cuStreamSynchronize),
    QG_ENTRY(cuEventCreate),
    QG_ENTRY(cuEventDestroy),
    QG_ENTRY(cuEventRecord),
    QG_ENTRY(cuEventSynchronize),
    QG_ENTRY(cuEventElapsedTime),
    QG_ENTRY(cuStreamBeginCapture),
    QG_ENTRY(cuStreamEndCapture),
    {"cuGraphInstantiateWithFlags", offsetof(qg_driver, cuGraphInstantiate)},
    QG_ENTRY(cuGraphLaunch),
    QG_ENTRY(cuGraphExecDestroy),
    QG_ENTRY(cuGraphDestroy),
};
#undef QG_ENTRY
_Static_assert(sizeof entries / sizeof entries[0] == sizeof(qg_driver) / sizeof(void (*)(void)),
               "every qg_driver field needs an entry");

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static qg_driver driver;
static qg_status load_status;
static char load_message[1024];
/* Error-text functions, published once the entry points are fetched so
 * qg__cuda_fail can use them from any thread (even if cuInit failed). */
static _Atomic(error_text_fn) error_name_fn, error_string_fn;

/* "CUDA_ERROR_X: description" from the driver, or a fallback without it. */
static void describe(CUresult r, char *buf, size_t len) {
    error_text_fn name_fn = atomic_load(&error_name_fn);
    error_text_fn string_fn = atomic_load(&error_string_fn);
    const char *name = NULL, *text = NULL;
    if (!name_fn || name_fn(r, &name) != CUDA_SUCCESS) name = NULL;
    if (!string_fn || string_fn(r, &text) != CUDA_SUCCESS) text = NULL;
    if (name && text)
        snprintf(buf, len, "%s: %s", name, text);
    else
        snprintf(buf, len, "%s", name ? name : text ? text : "unrecognized CUDA error");
}

static qg_status load(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return qg__fail(QG_ERROR_NO_DRIVER,
                        "libcuda.so.1 not found (no NVIDIA driver installed?): %s", dlerror());

    get_proc_fn get_proc;
    void *sym = dlsym(lib, "cuGetProcAddress_v2");
    memcpy(&get_proc, &sym, sizeof get_proc); /* object -> function pointer, POSIX style */
    if (!get_proc)
        return qg__fail(QG_ERROR_NO_DRIVER,
                        "libcuda.so.1 has no cuGetProcAddress_v2: the NVIDIA driver is older "
                        "than CUDA 12.0, qgemm needs a CUDA 12.0+ driver");

    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *fn = NULL;
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult r = get_proc(entries[i].symbol, &fn, QG_DRIVER_ABI_VERSION,
                              CU_GET_PROC_ADDRESS_DEFAULT, &found);
        if (r == CUDA_ERROR_STUB_LIBRARY)
            return qg__fail(QG_ERROR_NO_DRIVER,
                            "libcuda.so.1 is the CUDA toolkit's stub library, not an NVIDIA "
                            "driver (no driver installed, or LD_LIBRARY_PATH names .../stubs?)");
        if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || !fn)
            return qg__fail(QG_ERROR_NO_DRIVER,
                            "the CUDA driver lacks entry point %s for CUDA %d.%d "
                            "(cuGetProcAddress returned CUresult %d, query result %d): "
                            "update the NVIDIA driver",
                            entries[i].symbol, QG_DRIVER_ABI_VERSION / 1000,
                            QG_DRIVER_ABI_VERSION % 1000 / 10, (int)r, (int)found);
        memcpy((char *)&driver + entries[i].offset, &fn, sizeof fn);
    }

    /* cuGetErrorName is optional: it only makes messages nicer. */
    void *name_sym = NULL;
    CUdriverProcAddressQueryResult found;
    error_text_fn name_fn = NULL;
    if (get_proc("cuGetErrorName", &name_sym, QG_DRIVER_ABI_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
                 &found) == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS)
        memcpy(&name_fn, &name_sym, sizeof name_fn);
    atomic_store(&error_name_fn, name_fn);
    atomic_store(&error_string_fn, driver.cuGetErrorString);

    CUresult r = driver.cuInit(0);
    if (r != CUDA_SUCCESS) {
        char text[256];
        describe(r, text, sizeof text);
        return qg__fail(r == CUDA_ERROR_NO_DEVICE ? QG_ERROR_NO_DEVICE : QG_ERROR_NO_DRIVER,
                        "cuInit(0) failed: %s (CUresult %d)", text, (int)r);
    }
    return QG_SUCCESS;
}

static void load_and_remember(void) {
    load_status = load();
    if (load_status != QG_SUCCESS)
        snprintf(load_message, sizeof load_message, "%s", qg_last_error());
}

const char *qg__driver_too_old(int driver_version, int nvrtc_major, int nvrtc_minor, char *buf,
                               size_t len) {
    if (!buf || !len) return NULL;
    buf[0] = '\0';
    if (driver_version <= 0 || nvrtc_major <= 0 || driver_version >= nvrtc_major * 1000)
        return NULL;
    /* The first Linux driver of each CUDA major (minor version compatibility). */
    static const struct {
        int major;
        const char *driver;
    } minimum[] = {{11, "450.80.02"}, {12, "525.60.13"}, {13, "580"}};
    const char *need = NULL;
    for (size_t i = 0; i < sizeof minimum / sizeof minimum[0]; i++)
        if (minimum[i].major == nvrtc_major) need = minimum[i].driver;
    char need_text[64];
    if (need) snprintf(need_text, sizeof need_text, "NVIDIA driver %s or newer", need);
    else snprintf(need_text, sizeof need_text, "an NVIDIA driver for CUDA %d.0 or newer", nvrtc_major);
    snprintf(buf, len,
             "the NVIDIA driver supports CUDA %d.%d, too old for the kernels NVRTC %d.%d compiles: "
             "CUDA %d needs %s; update the driver, or use an NVRTC of CUDA %d.x "
             "(QGEMM_NVRTC_DIR, CUDA_HOME)",
             driver_version / 1000, driver_version % 1000 / 10, nvrtc_major, nvrtc_minor,
             nvrtc_major, need_text, driver_version / 1000);
    return buf;
}

qg_status qg__driver_load(const qg_driver **out) {
    if (out) *out = NULL;
    pthread_once(&load_once, load_and_remember);
    if (load_status != QG_SUCCESS) return qg__fail(load_status, "%s", load_message);
    if (!out) return qg__fail(QG_ERROR_INTERNAL, "qg__driver_load: out is NULL");
    *out = &driver;
    return QG_SUCCESS;
}

/* Errors that mean "this module or this launch is bad", as opposed to a
 * broken context or a misuse of the API. */
static bool is_launch_error(CUresult r) {
    switch (r) {
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_INVALID_CLUSTER_SIZE:
    case CUDA_ERROR_FUNCTION_NOT_LOADED:
        return true;
    default:
        return false;
    }
}

qg_status qg__cuda_fail(CUresult r, const char *what) {
    qg_status status = r == CUDA_ERROR_OUT_OF_MEMORY ? QG_ERROR_OUT_OF_MEMORY
                       : r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE
                           ? QG_ERROR_NO_DEVICE
                       : is_launch_error(r) ? QG_ERROR_LAUNCH
                                            : QG_ERROR_CUDA;
    char text[256];
    describe(r, text, sizeof text);
    /* A kernel image the driver cannot read: often NVRTC newer than the
     * driver (the pip NVRTC of CUDA 13 on an R5xx driver); say so, with the
     * minimum driver. */
    char hint[512] = "";
    int driver_version = 0, nvrtc_major, nvrtc_minor;
    if ((r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
         r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) &&
        qg__nvrtc_version_if_loaded(&nvrtc_major, &nvrtc_minor)) {
        pthread_once(&load_once, load_and_remember);
        if (load_status == QG_SUCCESS && driver.cuDriverGetVersion(&driver_version) == CUDA_SUCCESS)
            qg__driver_too_old(driver_version, nvrtc_major, nvrtc_minor, hint, sizeof hint);
    }
    return qg__fail(status, "%s: %s (CUresult %d)%s%s", what ? what : "CUDA call", text, (int)r,
                    hint[0] ? "; " : "", hint);
}
