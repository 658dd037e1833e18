/*
 * status.c -- version, status strings and the per-thread error message.
 *
 * Invariants:
 *  - every thread has its own message buffer (_Thread_local), "" until the
 *    thread's first failure, so qg_last_error() never races with other threads;
 *  - qg__fail() formats into a scratch buffer first, so a message may quote the
 *    previous one (e.g. "%s", qg_last_error()) without overlapping copies;
 *  - nothing here allocates, so it works even when memory is exhausted.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Large enough for an NVRTC log excerpt (jit.c keeps ~2000 characters of it). */
#define QG_ERROR_CAPACITY 4096

static _Thread_local char thread_error[QG_ERROR_CAPACITY];

unsigned qg_version(void) { return QG_VERSION_NUMBER; }

const char *qg_version_string(void) { return QG_VERSION_STRING; }

const char *qg_status_string(qg_status status) {
    switch (status) {
    case QG_SUCCESS: return "success";
    case QG_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case QG_ERROR_UNSUPPORTED: return "unsupported problem or configuration";
    case QG_ERROR_NO_DRIVER: return "CUDA driver missing or too old";
    case QG_ERROR_NO_DEVICE: return "no usable CUDA device";
    case QG_ERROR_WRONG_ARCH: return "device is not sm_90 (Hopper)";
    case QG_ERROR_COMPILE: return "kernel compilation failed";
    case QG_ERROR_LAUNCH: return "module load or kernel launch failed";
    case QG_ERROR_OUT_OF_MEMORY: return "out of memory";
    case QG_ERROR_CUDA: return "CUDA driver error";
    case QG_ERROR_INTERNAL: return "internal error in qgemm";
    }
    /* Not a default: label, so -Wswitch flags a new enum value left unnamed. */
    return "unknown qg_status value";
}

const char *qg_last_error(void) { return thread_error; }

qg_status qg__fail(qg_status status, const char *fmt, ...) {
    char scratch[QG_ERROR_CAPACITY];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(scratch, sizeof scratch, fmt, ap);
    va_end(ap);
    if (n < 0) snprintf(scratch, sizeof scratch, "%s (message formatting failed)",
                        qg_status_string(status));
    memcpy(thread_error, scratch, strlen(scratch) + 1);
    return status;
}

void qg__clear_error(void) { thread_error[0] = '\0'; }
