/*
 * fp8_out.c -- the e4m3 output of one FP8-output GEMM call (qgtk_cases.h):
 * D and its 1x128 scales on the device, poisoned, downloaded after the call,
 * and the poison that must survive it. tests/test_fp8out.c (qg_fp8_out) and
 * tests/test_swiglu.c (qg_swiglu_out) run every case through it; each keeps
 * its own reference and assertions (qgtk_fp8_group_check and its own).
 */
#include "qgtk_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

/* The driver of p's context, made current; false (with a message) when it cannot be. */
static bool push(const qgtk_fp8_out_buffers *b, const qg_driver **drv) {
    CUcontext cu;
    return b->p->ctx && qg__context_cuda(b->p->ctx, drv, &cu, NULL) &&
           (*drv)->cuCtxPushCurrent(cu) == CUDA_SUCCESS;
}
static void pop(const qg_driver *drv) {
    CUcontext popped;
    drv->cuCtxPopCurrent(&popped);
}

qg_status qgtk_fp8_out_create(qgtk_fp8_out_buffers *b, const qgtk_problem_data *p, int64_t cols,
                              int64_t ldd) {
    memset(b, 0, sizeof *b);
    b->p = p;
    b->cols = cols, b->ldd = ldd, b->nb = (cols + 127) / 128;
    b->sfd_ld = qg_sfa_ld(p->m) + 4;
    b->sf_groups = p->kind == QG_GEMM_GROUPED_MASKED ? p->num_groups : 1;
    b->d_bytes = (size_t)(p->rows * ldd);
    b->sf_count = (size_t)(b->sf_groups * b->nb * b->sfd_ld);
    if (ldd < cols + 16)
        return qg__fail(QG_ERROR_INVALID_ARGUMENT, "qgtk_fp8_out_create: ldd (%lld) must leave 16 "
                        "bytes past the %lld columns", (long long)ldd, (long long)cols);
    const qg_driver *drv;
    if (!push(b, &drv))
        return qg__fail(QG_ERROR_NO_DEVICE, "qgtk_fp8_out_create: the problem has no device context");
    qg_status st = QG_SUCCESS;
    b->hd = malloc(b->d_bytes);
    b->hs = malloc(b->sf_count * 4);
    if (!b->hd || !b->hs) st = qg__fail(QG_ERROR_OUT_OF_MEMORY, "qgtk_fp8_out_create: host copies");
    else if (drv->cuMemAlloc(&b->d, b->d_bytes) != CUDA_SUCCESS ||
             drv->cuMemAlloc(&b->sfd, b->sf_count * 4) != CUDA_SUCCESS)
        st = qg__fail(QG_ERROR_OUT_OF_MEMORY, "qgtk_fp8_out_create: cuMemAlloc of %zu + %zu bytes",
                      b->d_bytes, b->sf_count * 4);
    /* the poison: bytes 0xFF (e4m3 NaN), scales 0xFFFFFFFF (a NaN no kernel writes) */
    else if (drv->cuMemsetD8(b->d, 0xFF, b->d_bytes) != CUDA_SUCCESS ||
             drv->cuMemsetD8(b->sfd, 0xFF, b->sf_count * 4) != CUDA_SUCCESS)
        st = qg__fail(QG_ERROR_CUDA, "qgtk_fp8_out_create: cuMemsetD8 failed");
    pop(drv);
    if (st != QG_SUCCESS) qgtk_fp8_out_destroy(b);
    return st;
}

qg_gemm_args qgtk_fp8_out_args(const qgtk_fp8_out_buffers *b) {
    qg_gemm_args a = qgtk_problem_args(b->p);
    a.d = (void *)(uintptr_t)b->d;
    a.ldd = b->ldd;
    return a;
}

qg_status qgtk_fp8_out_download(qgtk_fp8_out_buffers *b, CUstream stream) {
    const qg_driver *drv;
    if (!push(b, &drv))
        return qg__fail(QG_ERROR_NO_DEVICE, "qgtk_fp8_out_download: the problem has no device context");
    qg_status st = QG_SUCCESS;
    if (drv->cuStreamSynchronize(stream) != CUDA_SUCCESS)
        st = qg__fail(QG_ERROR_CUDA, "qgtk_fp8_out_download: the call's stream failed");
    else if (drv->cuMemcpyDtoH(b->hd, b->d, b->d_bytes) != CUDA_SUCCESS ||
             drv->cuMemcpyDtoH(b->hs, b->sfd, b->sf_count * 4) != CUDA_SUCCESS)
        st = qg__fail(QG_ERROR_CUDA, "qgtk_fp8_out_download: cuMemcpyDtoH failed");
    pop(drv);
    return st;
}

bool qgtk_fp8_out_row_written(const qgtk_fp8_out_buffers *b, int64_t row) {
    return !isnan(b->p->ref[row * b->p->n]);
}

uint32_t qgtk_fp8_out_sf_bits(const qgtk_fp8_out_buffers *b, int64_t row, int64_t kb) {
    /* masked: group g's scales [nb][sfd_ld] for its rows 0..m-1 */
    const int64_t m = b->p->m, g = b->sf_groups > 1 ? row / m : 0, r = row - g * m;
    return fbits(b->hs[(g * b->nb + kb) * b->sfd_ld + r]);
}

int64_t qgtk_fp8_out_untouched(const qgtk_fp8_out_buffers *b) {
    int64_t bad = 0;
    for (int64_t r = 0; r < b->p->rows; ++r) {
        const uint8_t *d = b->hd + r * b->ldd;
        const bool written = qgtk_fp8_out_row_written(b, r);
        /* a written row: the bytes past its columns; a row not written: all of it */
        for (int64_t c = written ? b->cols : 0; c < b->ldd; ++c) bad += d[c] != 0xFF;
        for (int64_t kb = 0; !written && kb < b->nb; ++kb)
            bad += qgtk_fp8_out_sf_bits(b, r, kb) != 0xFFFFFFFFu;
    }
    /* scale rows past m (masked: past each group's M_max) */
    for (int64_t gk = 0; gk < b->sf_groups * b->nb; ++gk)
        for (int64_t r = b->p->m; r < b->sfd_ld; ++r)
            bad += fbits(b->hs[gk * b->sfd_ld + r]) != 0xFFFFFFFFu;
    return bad;
}

void qgtk_fp8_out_text(char *out, size_t len, const qgtk_fp8_tally *t, double q_got,
                       double q_want, int64_t untouched) {
    snprintf(out, len,
             "%lld elements, mismatch %.2e, max steps %d (far %lld), scale rel %.2e, bad scales "
             "%lld, quant err %.3e (ref's own %.3e), unwritten %lld, touched %lld",
             (long long)t->elems, t->elems ? (double)t->mismatch / (double)t->elems : 0.0,
             t->max_steps, (long long)t->far, t->sf_rel_max, (long long)t->sf_bad, q_got, q_want,
             (long long)t->unwritten, (long long)untouched);
}

void qgtk_fp8_out_destroy(qgtk_fp8_out_buffers *b) {
    const qg_driver *drv;
    if ((b->d || b->sfd) && push(b, &drv)) {
        if (b->d) drv->cuMemFree(b->d);
        if (b->sfd) drv->cuMemFree(b->sfd);
        pop(drv);
    }
    free(b->hd);
    free(b->hs);
    b->d = b->sfd = 0;
    b->hd = NULL;
    b->hs = NULL;
}
