/*
 * compile_sweep.c -- the offline compile sweeps' one verdict (qgtk.h): every
 * family's CPU test that compiles its kernel variants through the library's
 * JIT (tests/test_compile.c, test_bf16.c, test_indexer.c, test_cast.c) asks
 * the same of each variant -- compiled, no spill, no stack frame, registers
 * counted, no new NVRTC warning, the PTX features its design calls for -- and
 * reports a failure the same way: which variant, what was found.
 */
#include "qgtk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

qg_status qgtk_compile_sweep_open(qgtk_compile_sweep *s, int progress_every, int verbose) {
    memset(s, 0, sizeof *s);
    s->progress_every = progress_every;
    s->verbose = verbose;
    /* a scratch cache: every variant is compiled here, not found in a cache
     * (a cached kernel logs no warning) */
    snprintf(s->cache_dir, sizeof s->cache_dir, "/tmp/qgemm-test-cache-XXXXXX");
    if (!mkdtemp(s->cache_dir)) {
        s->cache_dir[0] = 0;
        return qg__fail(QG_ERROR_INTERNAL, "qgtk_compile_sweep_open: cannot create a scratch "
                                           "cache directory under /tmp");
    }
    setenv("QGEMM_CACHE_DIR", s->cache_dir, 1);
    qg_status st = qg_context_create_offline(&s->ctx, NULL);
    if (st != QG_SUCCESS) {
        s->ctx = NULL;
        qgtk_remove_tree(s->cache_dir);
        s->cache_dir[0] = 0;
        return st;
    }
    /* warnings logged before the sweep (other tests' kernels) are not its own */
    s->warnings_seen = qg__jit_warnings(NULL, 0);
    s->start_s = now_s();
    return QG_SUCCESS;
}

void qgtk_compile_sweep_close(qgtk_compile_sweep *s) {
    if (s->ctx) qg_context_destroy(s->ctx);
    s->ctx = NULL;
    if (s->cache_dir[0]) qgtk_remove_tree(s->cache_dir);
    s->cache_dir[0] = 0;
}

static const struct {
    unsigned bit;
    const char *name;
} ptx_features[] = {{QGTK_PTX_WGMMA, "wgmma"},           {QGTK_PTX_TMA_LOAD, "tma-load"},
                    {QGTK_PTX_TMA_STORE, "tma-store"},   {QGTK_PTX_SETMAXNREG, "setmaxnreg"},
                    {QGTK_PTX_STMATRIX, "stmatrix"},     {QGTK_PTX_MULTICAST, "multicast"}};

static unsigned ptx_of(const qg_kernel_info *info) {
    return (info->ptx_has_wgmma ? QGTK_PTX_WGMMA : 0) |
           (info->ptx_has_tma_load ? QGTK_PTX_TMA_LOAD : 0) |
           (info->ptx_has_tma_store ? QGTK_PTX_TMA_STORE : 0) |
           (info->ptx_has_setmaxnreg ? QGTK_PTX_SETMAXNREG : 0) |
           (info->ptx_has_stmatrix ? QGTK_PTX_STMATRIX : 0) |
           (info->ptx_has_multicast ? QGTK_PTX_MULTICAST : 0);
}

/* " lacks wgmma tma-store" / " has multicast" for the features in `bits` */
static void name_features(char *out, size_t cap, const char *verb, unsigned bits) {
    size_t used = strlen(out);
    if (!bits || used + 1 >= cap) return;
    used += (size_t)snprintf(out + used, cap - used, "; PTX %s", verb);
    for (size_t i = 0; i < sizeof ptx_features / sizeof ptx_features[0] && used + 1 < cap; ++i)
        if (bits & ptx_features[i].bit)
            used += (size_t)snprintf(out + used, cap - used, " %s", ptx_features[i].name);
}

int qgtk_compile_verdict(qgtk_compile_sweep *s, const char *what, qg_status st,
                         const qg_kernel_info *info, unsigned need_ptx, unsigned refuse_ptx) {
    int ok = 1;
    s->checked++;
    if (st != QG_SUCCESS) {
        printf("    %s: %s: %s\n", what, qg_status_string(st), qg_last_error());
        ok = 0;
    } else {
        s->compiled++;
        const unsigned ptx = ptx_of(info);
        const unsigned missing = need_ptx & ~ptx, unwanted = refuse_ptx & ptx;
        if (info->spill_store_bytes || info->spill_load_bytes || info->stack_frame_bytes ||
            info->registers <= 0 || missing || unwanted) {
            char found[160];
            snprintf(found, sizeof found, "regs %d spills %d/%d stack %d", info->registers,
                     info->spill_store_bytes, info->spill_load_bytes, info->stack_frame_bytes);
            name_features(found, sizeof found, "lacks", missing);
            name_features(found, sizeof found, "has", unwanted);
            printf("    %s: %s\n", what, found);
            ok = 0;
        }
    }
    /* read after a failed compile too: its warning is not the next variant's */
    char first[512];
    const unsigned warnings = qg__jit_warnings(first, sizeof first);
    if (warnings != s->warnings_seen) {
        printf("    %s: the compile logged a warning (%u so far; the first: %s)\n", what, warnings,
               first);
        s->warnings_seen = warnings;
        ok = 0;
    }
    if (ok && s->verbose)
        printf("    ok   %s: regs %d spills %d/%d stack %d\n", what, info->registers,
               info->spill_store_bytes, info->spill_load_bytes, info->stack_frame_bytes);
    s->failures += !ok;
    if (s->progress_every > 0 && s->checked % s->progress_every == 0) {
        printf("    ... %d variants checked, %.0f s (last: %s)\n", s->checked,
               now_s() - s->start_s, what);
        fflush(stdout);
    }
    if (s->verbose || !ok) fflush(stdout);
    return ok;
}
