/* forced.c -- see forced.h. */
#include "forced.h"

/* K = 528 (5 K blocks): an SFB row's scales start at every offset within a
 * 16-byte box, so the kernels compute the box position of each. */
const int qg_forced_shapes[QG_FORCED_NSHAPES][3] = {{257, 576, 528}, {1000, 2112, 1536},
                                                     {4096, 4096, 512}};

const qg_split_edge qg_split_edges[QG_SPLIT_EDGES] = {
    {64, 2112, 256, {.block_m = 64, .block_n = 32, .split_k = 2}},
    {100, 1000, 384, {.block_m = 64, .block_n = 16, .split_k = 2}},
    {200, 1000, 1152, {.block_m = 128, .block_n = 64, .split_k = 2}},
    {1000, 4104, 1040, {.block_m = 64, .block_n = 32, .split_k = 2}},
    {300, 2112, 1536, {.block_m = 64, .block_n = 32, .num_stages = 1, .split_k = 2}},
    {512, 4096, 1024, {.block_m = 256, .block_n = 64, .split_k = 2}},
    {7, 8, 7168, {.block_m = 64, .block_n = 16, .split_k = 2}},
};

int qg_forced_configs(const qg_context *ctx, qg_problem probs[QG_FORCED_MAX],
                      qg_config cfgs[QG_FORCED_MAX], int first[QG_FORCED_NSHAPES + 1],
                      int unsupported[QG_FORCED_NSHAPES]) {
    static const int block_ms[] = {64, 128, 256}, stages[] = {1, 2, 0};
    static const qg_multicast casts[] = {QG_MULTICAST_NONE, QG_MULTICAST_A, QG_MULTICAST_B};
    int total = 0;
    for (int s = 0; s < QG_FORCED_NSHAPES; s++) {
        const qg_problem prob = {QG_GEMM_DENSE, qg_forced_shapes[s][0], qg_forced_shapes[s][1],
                                 qg_forced_shapes[s][2], 1, 0, 0};
        first[s] = total;
        unsupported[s] = 0;
        for (int i = 0; i < 3; i++)
            for (int bn = 16; bn <= 256; bn += 16)
                for (int st = 0; st < 3; st++)
                    for (int mc = 0; mc < 4; mc++) { /* 3: split-K 2 */
                        qg_config cfg = {.block_m = block_ms[i], .block_n = bn,
                                         .num_stages = stages[st],
                                         .multicast = mc < 3 ? casts[mc] : QG_MULTICAST_NONE,
                                         .split_k = mc < 3 ? 0 : 2};
                        const qg_status r = qg_complete_config(ctx, &prob, &cfg);
                        if (r == QG_ERROR_UNSUPPORTED) {
                            unsupported[s]++;
                            continue;
                        }
                        if (r != QG_SUCCESS || cfg.num_stages < 1 || cfg.smem_bytes == 0)
                            return -1;
                        cfgs[total] = cfg;
                        probs[total] = prob;
                        total++;
                    }
    }
    first[QG_FORCED_NSHAPES] = total;
    return total;
}
