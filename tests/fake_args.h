/*
 * fake_args.h -- a legal dense problem's GEMM arguments with fake device
 * pointers, for the tests that check argument validation without a GPU (the
 * library rejects the bad field before any pointer is used).
 */
#ifndef QG_FAKE_ARGS_H
#define QG_FAKE_ARGS_H
#include <stdint.h>

#include "qgemm.h"

#define FAKE(addr) ((void *)(uintptr_t)(addr))

static inline qg_gemm_args fake_good_args(void) {
    qg_gemm_args a = {0};
    a.m = 100, a.n = 576, a.k = 400, a.num_groups = 1;
    a.a = FAKE(0x1000000), a.lda = 400;
    a.sfa = FAKE(0x2000000), a.sfa_ld = 100;
    a.b = FAKE(0x3000000), a.ldb = 400;
    a.sfb = FAKE(0x4000000);
    a.d = FAKE(0x5000000), a.ldd = 576;
    a.m_indices = FAKE(0x6000000);
    a.masked_m = FAKE(0x7000000);
    return a;
}

#endif
