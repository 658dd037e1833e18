/*
 * forced.h -- the forced configurations of the GPU sweep (test_gemm_gpu.c:
 * gpu_forced_configs), enumerated in one place so that the CPU compile test
 * (test_compile.c) compiles exactly the kernels the GPU will run: a spill
 * there fails CI instead of a GPU session.
 */
#ifndef QG_TEST_FORCED_H
#define QG_TEST_FORCED_H
#include "qgemm.h"

#define QG_FORCED_NSHAPES 3
/* 3 block_m x 16 block_n x 3 stage counts x 3 multicast modes per shape */
#define QG_FORCED_MAX (QG_FORCED_NSHAPES * 3 * 16 * 3 * 3)

/* Dense M x N x K of each shape: off-tile M and N, K not a multiple of 128. */
extern const int qg_forced_shapes[QG_FORCED_NSHAPES][3];

/* Every legal configuration of every shape, completed by qg_complete_config
 * (probs[i], cfgs[i]; shape s owns [first[s], first[s + 1])), and how many
 * per shape the library refused as unsupported. @return the count, or -1
 * when a call failed other than QG_ERROR_UNSUPPORTED (qg_last_error says). */
int qg_forced_configs(const qg_context *ctx, qg_problem probs[QG_FORCED_MAX],
                      qg_config cfgs[QG_FORCED_MAX], int first[QG_FORCED_NSHAPES + 1],
                      int unsupported[QG_FORCED_NSHAPES]);

#endif
