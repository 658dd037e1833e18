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
/* 3 block_m x 16 block_n x 3 stage counts x 4 cluster modes (none,
 * multicast A, multicast B, split-K 2) per shape */
#define QG_FORCED_MAX (QG_FORCED_NSHAPES * 3 * 16 * 3 * 4)

/* Dense M x N x K of each shape: off-tile M and N, K not a multiple of 128
 * (and, in one, an odd number of K blocks). */
extern const int qg_forced_shapes[QG_FORCED_NSHAPES][3];

/* Every legal configuration of every shape, completed by qg_complete_config
 * (probs[i], cfgs[i]; shape s owns [first[s], first[s + 1])), and how many
 * per shape the library refused as unsupported. @return the count, or -1
 * when a call failed other than QG_ERROR_UNSUPPORTED (qg_last_error says). */
int qg_forced_configs(const qg_context *ctx, qg_problem probs[QG_FORCED_MAX],
                      qg_config cfgs[QG_FORCED_MAX], int first[QG_FORCED_NSHAPES + 1],
                      int unsupported[QG_FORCED_NSHAPES]);

/* Split-K edges, forced: one K block per CTA, odd K-block counts (rank 0
 * takes the extra one), off-tile M and N, clusters looping over many tiles
 * (the reduction barriers' phases), the one-stage loop and two m64 tiles
 * per warpgroup (256x64). */
#define QG_SPLIT_EDGES 7
typedef struct {
    int m, n, k;
    qg_config cfg;
} qg_split_edge;
extern const qg_split_edge qg_split_edges[QG_SPLIT_EDGES];

#endif
