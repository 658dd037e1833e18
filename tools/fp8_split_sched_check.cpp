// fp8_split_sched_check.cpp -- host emulation of kernels/qg_scheduler.cuh for the
// FP8-output split tiles (QG_FP8_SPLIT = 128 / block_n CTAs a cluster share a scale
// group): in every kind, every cluster's ranks get one group's S tiles each
// iteration (same group and m-block, n-blocks n0..n0+S-1, n0 % S == 0, rank r the
// slot n % S), all ranks of a cluster end at the same iteration (the exchange
// barriers), and every tile comes exactly once. Built and run by
// tools/fp8_split_sched_check.sh (a swizzle group that is not a multiple of S, which
// the planner refuses, makes it fail: its negative control).
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <tuple>
using std::min; using std::max;
struct dim { int x; };
static dim gridDim, blockIdx;
#define QG_DEVICE static inline
#define __ldg(p) (*(p))
struct int4 { int x, y, z, w; };
static inline int4 make_int4(int a, int b, int c, int d) { return {a, b, c, d}; }
#include "qg_scheduler.cuh"
int main() {
    const int S = QG_FP8_SPLIT, grid = GRID;
    static int masked[QG_NUM_GROUPS], mind[1 << 16];
    srand(7);
    int shape_m = SHAPE_M;
    for (int g = 0; g < QG_NUM_GROUPS; ++g) masked[g] = (g % 3 == 0) ? 0 : (g % 3 == 1 ? shape_m : rand() % shape_m);
#if QG_KIND == 3
    { int end = 0; for (int g = 0; g < QG_NUM_GROUPS; ++g) { end = (end + 127) / 128 * 128 + rand() % 300; masked[g] = min(end, shape_m); } }
#endif
    for (int r = 0; r < shape_m; ++r) mind[r] = ((r / 128) % 3 == 2) ? -1 : (r / 128) % QG_NUM_GROUPS;
    gridDim.x = grid;
    std::map<std::tuple<int,int,int>, int> seen;
    int bad = 0, total = 0;
    for (int c = 0; c < grid / S; ++c) {
        qg_scheduler sch[8]; qg_tile t[8]; bool more[8];
        for (int r = 0; r < S; ++r) qg_scheduler_init(sch[r], shape_m, mind, masked, QG_NUM_GROUPS);
        for (int it = 0;; ++it) {
            for (int r = 0; r < S; ++r) { blockIdx.x = c * S + r; more[r] = qg_scheduler_next(sch[r], t[r]); }
            for (int r = 1; r < S; ++r) if (more[r] != more[0]) { printf("cluster %d iter %d: ranks end apart\n", c, it); bad++; }
            if (!more[0]) break;
            for (int r = 0; r < S; ++r) {
                if (t[r].group != t[0].group || t[r].m_begin != t[0].m_begin || t[r].n_block != t[0].n_block - t[0].n_block % S + r || t[r].n_block % S != r) {
                    printf("cluster %d iter %d rank %d: g %d m %d n %d vs g %d m %d n %d\n", c, it, r, t[r].group, t[r].m_begin, t[r].n_block, t[0].group, t[0].m_begin, t[0].n_block); bad++; }
                if (seen[{t[r].group, t[r].m_begin, t[r].n_block}]++) { printf("dup tile\n"); bad++; }
                total++;
            }
        }
    }
    printf("kind %d S %d N %d: %d tiles, %d problems\n", QG_KIND, S, QG_SHAPE_N, total, bad);
    return bad != 0;
}
