/*
 * contexts.c -- one qg_context per CUDA device, created on first use.
 *
 * Invariants:
 *  - contexts are never destroyed: they retain the device's primary context,
 *    which the other frameworks in the process (PyTorch, CuPy, JAX) share;
 *    tearing them down at interpreter exit would race with those frameworks'
 *    own teardown, and the driver reclaims everything when the process ends;
 *  - the table is guarded by g_lock, which is only taken with the GIL
 *    released (creating a context can take long: cuInit, retaining the primary
 *    context), so no thread ever waits for g_lock while holding the GIL;
 *  - a failed creation is not cached: the next call retries and reports again;
 *  - the module-wide num_sms (0 = all SMs) is applied to a context whenever it
 *    has not seen the current value, so contexts created after set_num_sms()
 *    get it too; set_num_sms() checks the value against every existing
 *    context before changing any, so a rejected value changes nothing;
 *  - the module-wide PDL switch (set_pdl) is applied the same way: a context
 *    is given the current value before its first use after each change;
 *  - g_ready[slot] is the context once it holds the current settings, read
 *    without the lock or releasing the GIL (a GEMM call's lookup costs one
 *    atomic load); it is set under g_lock by get_locked() and cleared under
 *    g_lock whenever a setting changes, so the next lookup takes the locked
 *    path and applies it. A call that read g_ready just before a change runs
 *    with the settings of before, as if it had come first.
 */
#include "qgpy.h"

#include <pthread.h>
#include <stdatomic.h>

#define QGPY_MAX_DEVICES 256
#define OFFLINE_SLOT QGPY_MAX_DEVICES /* the last slot holds the offline context */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static qg_context *g_contexts[QGPY_MAX_DEVICES + 1];
static int g_applied[QGPY_MAX_DEVICES + 1]; /* num_sms each context was given */
static int g_num_sms;                       /* module setting; 0 = all SMs */
static int g_applied_pdl[QGPY_MAX_DEVICES + 1]; /* PDL switch each context was given */
static int g_pdl;                               /* module setting; 0 = off, 1 = on */
static _Atomic(qg_context *) g_ready[QGPY_MAX_DEVICES + 1]; /* up to date: no lock needed */

/* With g_lock held: every context must be given the settings again. */
static void settings_changed_locked(void)
{
    for (int i = 0; i <= OFFLINE_SLOT; i++)
        atomic_store_explicit(&g_ready[i], NULL, memory_order_release);
}

/* With g_lock held and the GIL released. */
static qg_status get_locked(int slot, qg_context **out)
{
    qg_context *ctx = g_contexts[slot];
    if (!ctx) {
        qg_status st = slot == OFFLINE_SLOT ? qg_context_create_offline(&ctx, NULL)
                                            : qg_context_create(&ctx, slot);
        if (st != QG_SUCCESS)
            return st;
        g_contexts[slot] = ctx;
        g_applied[slot] = 0;
        g_applied_pdl[slot] = 0;
    }
    if (g_applied[slot] != g_num_sms) {
        qg_status st = qg_context_set_num_sms(ctx, g_num_sms);
        if (st != QG_SUCCESS)
            return st;
        g_applied[slot] = g_num_sms;
    }
    if (g_applied_pdl[slot] != g_pdl) {
        qg_status st = qg_context_set_pdl(ctx, g_pdl);
        if (st != QG_SUCCESS)
            return st;
        g_applied_pdl[slot] = g_pdl;
    }
    atomic_store_explicit(&g_ready[slot], ctx, memory_order_release);
    *out = ctx;
    return QG_SUCCESS;
}

qg_context *qgpy_context(int device)
{
    if (device != QGPY_OFFLINE && (device < 0 || device >= QGPY_MAX_DEVICES)) {
        qgpy_errorf(PyExc_ValueError, "qgemm: CUDA device ordinal must be in 0..%d, got %d",
                    QGPY_MAX_DEVICES - 1, device);
        return NULL;
    }
    const int slot = device == QGPY_OFFLINE ? OFFLINE_SLOT : device;
    qg_context *ctx = atomic_load_explicit(&g_ready[slot], memory_order_acquire);
    if (ctx)
        return ctx;
    qg_status st;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&g_lock);
    st = get_locked(slot, &ctx);
    pthread_mutex_unlock(&g_lock);
    Py_END_ALLOW_THREADS
    if (st != QG_SUCCESS) {
        qgpy_raise_status(st); /* qg_last_error() is per thread: still ours */
        return NULL;
    }
    return ctx;
}

int qgpy_set_num_sms(int n)
{
    if (n < 0)
        return qgpy_errorf(PyExc_ValueError, "qgemm: num_sms must be >= 0 (0 = all SMs), got %d",
                           n);
    int bad_slot = -1, bad_count = 0;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i <= OFFLINE_SLOT && bad_slot < 0; i++) {
        qg_device_props props;
        if (g_contexts[i] && qg_context_get_props(g_contexts[i], &props) == QG_SUCCESS &&
            n > props.sm_count) {
            bad_slot = i;
            bad_count = props.sm_count;
        }
    }
    if (bad_slot < 0 && g_num_sms != n) {
        g_num_sms = n; /* applied lazily by get_locked() */
        settings_changed_locked();
    }
    pthread_mutex_unlock(&g_lock);
    Py_END_ALLOW_THREADS
    if (bad_slot < 0)
        return 0;
    if (bad_slot == OFFLINE_SLOT)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: num_sms = %d exceeds the %d SMs of the offline device", n,
                           bad_count);
    return qgpy_errorf(PyExc_ValueError, "qgemm: num_sms = %d exceeds the %d SMs of cuda:%d", n,
                       bad_count, bad_slot);
}

/* *value, read under g_lock (taken with the GIL released). */
static int read_setting(const int *value)
{
    int v;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&g_lock);
    v = *value;
    pthread_mutex_unlock(&g_lock);
    Py_END_ALLOW_THREADS
    return v;
}

int qgpy_get_num_sms_setting(void)
{
    return read_setting(&g_num_sms);
}

void qgpy_set_pdl(int on)
{
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&g_lock);
    if (g_pdl != (on ? 1 : 0)) {
        g_pdl = on ? 1 : 0; /* applied lazily by get_locked() */
        settings_changed_locked();
    }
    pthread_mutex_unlock(&g_lock);
    Py_END_ALLOW_THREADS
}

int qgpy_get_pdl_setting(void)
{
    return read_setting(&g_pdl);
}
