/* SPDX-License-Identifier: MIT */
/*
 * nvrtc.c -- NVRTC, loaded at run time.
 *
 * libnvrtc is dlopen'ed (never linked), like the driver (src/driver.c), so
 * libqgemm.so, the CLI and the Python extension load on machines without the
 * CUDA toolkit; NVRTC is needed only when a kernel is compiled, and it may
 * come from the pip package nvidia-cuda-nvrtc.
 *
 * Where it is looked for, in order (the first that loads wins):
 *   1. $QGEMM_NVRTC_DIR/libnvrtc.so.13, .so.12, .so  (e.g. the pip package's
 *      lib/ directory: site-packages/nvidia/cu13/lib);
 *   2. $CUDA_HOME/lib64/ (then $CUDA_HOME/lib/), the same names, with
 *      CUDA_HOME defaulting to /usr/local/cuda;
 *   3. the system loader (LD_LIBRARY_PATH, ld.so.cache): libnvrtc.so.13,
 *      libnvrtc.so.12, libnvrtc.so.
 *
 * Invariants:
 *  - the load runs once per process (pthread_once); its outcome, a status
 *    and a message naming every path tried, is kept so every later call
 *    reports the same thing (the variables above are read only by that load);
 *  - every entry point is resolved by name with dlsym; a library missing one
 *    is refused and the next candidate is tried;
 *  - the handle is never closed: pointers handed out stay valid.
 */
#include "internal.h"
#include "cache.h" /* QG_PATH_MAX */

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define QG_NVRTC_ENTRY(field) {#field, offsetof(qg_nvrtc, field)}
static const struct {
    const char *symbol;
    size_t offset;
} entries[] = {
    QG_NVRTC_ENTRY(nvrtcVersion),
    QG_NVRTC_ENTRY(nvrtcGetErrorString),
    QG_NVRTC_ENTRY(nvrtcCreateProgram),
    QG_NVRTC_ENTRY(nvrtcDestroyProgram),
    QG_NVRTC_ENTRY(nvrtcCompileProgram),
    QG_NVRTC_ENTRY(nvrtcGetProgramLogSize),
    QG_NVRTC_ENTRY(nvrtcGetProgramLog),
    QG_NVRTC_ENTRY(nvrtcGetPTXSize),
    QG_NVRTC_ENTRY(nvrtcGetPTX),
    QG_NVRTC_ENTRY(nvrtcGetCUBINSize),
    QG_NVRTC_ENTRY(nvrtcGetCUBIN),
};
#undef QG_NVRTC_ENTRY
_Static_assert(sizeof entries / sizeof entries[0] == sizeof(qg_nvrtc) / sizeof(void (*)(void)),
               "every qg_nvrtc field needs an entry");

static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
#define QG_NUM_NAMES (int)(sizeof names / sizeof names[0])

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static qg_nvrtc nvrtc;
static qg_status load_status;
static char load_message[3072];
static char load_path[QG_PATH_MAX];

/* Append "; <text>" (or "<text>" first) to the list of what was tried. */
static void note(char *tried, size_t cap, const char *what, const char *why) {
    size_t n = strlen(tried);
    if (n + 8 >= cap) return;
    snprintf(tried + n, cap - n, "%s%s (%s)", n ? "; " : "", what, why);
}

/* dlopen `path` and fill *out. @return true when every entry point is there. */
static bool try_open(const char *path, qg_nvrtc *out, char *tried, size_t cap) {
    dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        /* dlerror usually starts with "<path>: "; keep only the reason after it. */
        size_t n = strlen(path);
        if (e && strncmp(e, path, n) == 0 && e[n] == ':') e += n + (e[n + 1] == ' ' ? 2 : 1);
        note(tried, cap, path, e ? e : "cannot be loaded");
        return false;
    }
    qg_nvrtc table;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *sym = dlsym(lib, entries[i].symbol);
        if (!sym) {
            char why[96];
            snprintf(why, sizeof why, "no %s: NVRTC older than CUDA 11.1?", entries[i].symbol);
            note(tried, cap, path, why);
            dlclose(lib);
            return false;
        }
        memcpy((char *)&table + entries[i].offset, &sym, sizeof sym);
    }
    *out = table;
    return true;
}

static const char *try_dir(const char *dir, qg_nvrtc *out, char *path, size_t path_len,
                           char *tried, size_t cap) {
    for (int i = 0; i < QG_NUM_NAMES; i++) {
        if (snprintf(path, path_len, "%s/%s", dir, names[i]) >= (int)path_len) continue;
        if (try_open(path, out, tried, cap)) return path;
    }
    return NULL;
}

qg_status qg__nvrtc_search(const char *dir, const char *cuda_home, bool system, qg_nvrtc *out,
                           char *path, size_t path_len) {
    char tried[2048] = "";
    if (dir && try_dir(dir, out, path, path_len, tried, sizeof tried)) return QG_SUCCESS;

    static const char *const subdirs[] = {"lib64", "lib"};
    for (int i = 0; cuda_home && i < 2; i++) {
        char sub[QG_PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s/%s", cuda_home, subdirs[i]) < (int)sizeof sub &&
            try_dir(sub, out, path, path_len, tried, sizeof tried))
            return QG_SUCCESS;
    }
    for (int i = 0; system && i < QG_NUM_NAMES; i++) {
        if (try_open(names[i], out, tried, sizeof tried)) {
            snprintf(path, path_len, "%s", names[i]);
            return QG_SUCCESS;
        }
    }
    return qg__fail(QG_ERROR_COMPILE,
                    "NVRTC not found: install the CUDA toolkit or the pip package "
                    "nvidia-cuda-nvrtc, and point QGEMM_NVRTC_DIR (the directory holding "
                    "libnvrtc.so.*) or CUDA_HOME at it; tried: %s",
                    tried[0] ? tried : "nothing");
}

static qg_status load(void) {
    const char *home = qg__env_string("CUDA_HOME");
    return qg__nvrtc_search(qg__env_string("QGEMM_NVRTC_DIR"), home ? home : "/usr/local/cuda",
                            true, &nvrtc, load_path, sizeof load_path);
}

/* Set once NVRTC loaded, for qg__nvrtc_version_if_loaded (no pthread_once there:
 * it must not load NVRTC). */
static atomic_bool loaded;

static void load_and_remember(void) {
    load_status = load();
    if (load_status == QG_SUCCESS) atomic_store(&loaded, true);
    if (load_status != QG_SUCCESS)
        snprintf(load_message, sizeof load_message, "%s", qg_last_error());
}

qg_status qg__nvrtc_load(const qg_nvrtc **out) {
    if (out) *out = NULL;
    pthread_once(&load_once, load_and_remember);
    if (load_status != QG_SUCCESS) return qg__fail(load_status, "%s", load_message);
    if (!out) return qg__fail(QG_ERROR_INTERNAL, "qg__nvrtc_load: out is NULL");
    *out = &nvrtc;
    return QG_SUCCESS;
}

bool qg__nvrtc_version_if_loaded(int *major, int *minor) {
    *major = *minor = 0;
    return atomic_load(&loaded) && nvrtc.nvrtcVersion(major, minor) == NVRTC_SUCCESS;
}

const char *qg__nvrtc_path(void) {
    pthread_once(&load_once, load_and_remember);
    return load_status == QG_SUCCESS ? load_path : NULL;
}
