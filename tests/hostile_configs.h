/*
 * hostile_configs.h -- the forced configuration each GEMM kind must refuse,
 * and a word its error message must hold. The GPU test
 * (test_hostile_gpu.c: gpu_hostile_rejected_calls_leave_outputs_untouched)
 * forces it on a real call and checks that D stays untouched; the CPU test
 * (test_hostile.c: hostile_illegal_configs_still_refused) checks that the
 * library still refuses it, so that a tile becoming legal (psum's 256x64
 * did in 71b9355, and the GPU test then ran it and wrote D) fails CI
 * instead of the next GPU session.
 */
#ifndef QG_TEST_HOSTILE_CONFIGS_H
#define QG_TEST_HOSTILE_CONFIGS_H
#include "qgemm.h"

typedef struct {
    qg_config cfg;
    const char *needle; /* in the error message */
} qg_illegal_config;

/* Indexed by qg_gemm_kind, dense to the weight gradient. */
static const qg_illegal_config qg_illegal_configs[QG_GEMM_WGRAD + 1] = {
    [QG_GEMM_DENSE] = {{.block_m = 128, .block_n = 200}, "block_n"},
    [QG_GEMM_GROUPED_CONTIGUOUS] = {{.block_m = 256, .block_n = 128}, "block_m"},
    [QG_GEMM_GROUPED_MASKED] = {{.block_m = 128, .block_n = 200}, "block_n"},
    [QG_GEMM_GROUPED_PSUM] = {{.block_m = 128, .block_n = 200}, "128 (psum)"},
    [QG_GEMM_WGRAD] = {{.block_m = 128, .block_n = 168}, "block_n"},
};

#endif /* QG_TEST_HOSTILE_CONFIGS_H */
