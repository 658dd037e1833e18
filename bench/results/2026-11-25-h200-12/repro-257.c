/*
 * repro-257.c (session g): gpu_dense_grid's case 267 (dense 257x2112x512, lda+16 ldb+16
 * ldd+32, seed 1267) failed once in run-d (496 elements of D left unwritten) on an unchanged
 * kernel and config (64x16, A multicast, 21 stages). This runs the case many times: the first
 * run is checked against the float64 reference, every later run is compared bitwise with it
 * (D poisoned before each); then the same for forced variants. Prints, per variant, how many
 * runs differed and, for the first that did, the unwritten count and where.
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -Itestkit -I$CUDA_HOME/include \
 *      bench/results/2026-11-25-h200-12/repro-257.c build/libqgemm_testkit.a build/libqgemm.a \
 *      -ldl -lpthread -lm -o build/repro-257 && build/repro-257 [runs]
 */
#include "qgtk.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void where_unwritten(const qgtk_problem_data *p) {
    int64_t count = 0, first_r = -1, last_r = -1;
    int min_c = 1 << 30, max_c = -1;
    int64_t rows_hit = 0;
    for (int64_t r = 0; r < p->rows; r++) {
        int in_row = 0;
        for (int c = 0; c < p->n; c++)
            if (p->d[r * p->ldd + c] == 0xffff) {
                ++count, ++in_row;
                if (first_r < 0) first_r = r;
                last_r = r;
                if (c < min_c) min_c = c;
                if (c > max_c) max_c = c;
            }
        rows_hit += in_row > 0;
    }
    printf("      unwritten %lld in %lld rows (rows %lld..%lld, cols %d..%d)\n", (long long)count,
           (long long)rows_hit, (long long)first_r, (long long)last_r, min_c, max_c);
}

int main(int argc, char **argv) {
    const int runs = argc > 1 ? atoi(argv[1]) : 300;
    qg_context *ctx;
    CUstream stream;
    if (qgtk_gpu_session_open(&ctx, &stream) != QG_SUCCESS) {
        printf("no GPU: %s\n", qg_last_error());
        return 0;
    }
    static const struct { const char *name; int lda, ldb, ldd; qg_config cfg; bool forced; } variants[] = {
        {"heuristic, padded", 16, 16, 32, {0}, false},
        {"heuristic, unpadded", 0, 0, 0, {0}, false},
        {"64x16 none, padded", 16, 16, 32, {.block_m = 64, .block_n = 16}, true},
        {"64x16 A 4 stages, padded", 16, 16, 32,
         {.block_m = 64, .block_n = 16, .num_stages = 4, .multicast = QG_MULTICAST_A}, true},
        {"64x32 A, padded", 16, 16, 32, {.block_m = 64, .block_n = 32, .multicast = QG_MULTICAST_A}, true},
    };
    int bad_total = 0;
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = 257, .n = 2112, .k = 512,
                                  .num_groups = 1, .seed = 1267, .lda_pad = variants[v].lda,
                                  .ldb_pad = variants[v].ldb, .ldd_pad = variants[v].ldd,
                                  .scale_spread = 3};
        qgtk_problem_data *p = NULL;
        if (qgtk_problem_create(&p, ctx, &spec) != QG_SUCCESS) {
            printf("%s: create: %s\n", variants[v].name, qg_last_error());
            continue;
        }
        const qg_config *cfg = variants[v].forced ? &variants[v].cfg : NULL;
        qg_config used;
        qg_problem prob = {QG_GEMM_DENSE, 257, 2112, 512, 1, 0, 0};
        if (cfg) { used = *cfg; qg_complete_config(ctx, &prob, &used); }
        else qg_select_config(ctx, &prob, &used);
        qgtk_check_result res;
        char desc[256];
        qg_status st = qgtk_problem_run_check(ctx, p, cfg, stream, &res);
        const bool first_ok = st == QG_SUCCESS && qgtk_check_passed(&res, 1e-5);
        printf("%s (%dx%d stages %d multicast %d): first run %s: %s\n", variants[v].name,
               used.block_m, used.block_n, used.num_stages, (int)used.multicast,
               first_ok ? "ok" : "FAIL",
               st != QG_SUCCESS ? qg_last_error() : qgtk_check_describe(&res, desc, sizeof desc));
        if (!first_ok) where_unwritten(p);
        uint64_t want = res.hash;
        int bad = 0;
        qg_gemm_args args = qgtk_problem_args(p);
        for (int i = 0; i < runs; i++) {
            uint64_t got = 0;
            if (qgtk_problem_poison(ctx, p, stream) != QG_SUCCESS ||
                qg_fp8_gemm_nt(ctx, &args, cfg, stream) != QG_SUCCESS ||
                qgtk_problem_hash(ctx, p, &got) != QG_SUCCESS) {
                printf("    run %d: %s\n", i, qg_last_error());
                break;
            }
            if (got != want) {
                if (bad++ < 3) {
                    printf("    run %d differs\n", i);
                    where_unwritten(p);
                }
            }
        }
        printf("    %d of %d runs differed\n", bad, runs);
        bad_total += bad + !first_ok;
        qgtk_problem_free(p);
    }
    qgtk_gpu_session_close(ctx, stream);
    return bad_total ? 1 : 0;
}
