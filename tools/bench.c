/*
 * bench.c -- `qgemm bench`: qgemm against cuBLASLt on the same inputs.
 *
 * For every problem (dense table; with --grouped the contiguous and masked
 * MoE tables; with --grouped-contiguous G,M and / or --grouped-masked
 * G,M_max[,M] the contiguous / masked tables of the --shape list's N and K):
 *   1. fresh random inputs (the testkit, testkit/qgtk.h), uploaded once;
 *   2. qg_compile first, so the JIT time is reported apart from the timings
 *      (progress line "compiling kernel for ..." on stderr);
 *   3. qgemm: poison D, run, check against the fp64 reference (diff), keep
 *      its D;
 *   4. cuBLASLt on the same device buffers: poison D, plan (scale layout
 *      conversion and algorithm choice happen here, never in the timed
 *      region), check against the same reference and against qgemm's D.
 *      Grouped problems use one cuBLASLt call per group;
 *   5. time qgemm and cuBLASLt in turn, run for run (qgemm alone when the
 *      peer is n/a); a contiguous row's dense comparison (qgemm dense at the
 *      same total M) is timed in the same turns, a third GEMM each round.
 * Timing (qgtk_time_interleaved_us): warm-up runs, then every timed run is
 * preceded by an L2 flush outside the CUDA events around it (--flush clean,
 * the default: a write and then a read of twice the L2, so the timed kernel
 * finds neither its inputs nor dirty lines to write back; --flush write: the
 * write alone, as before 2026-11-22); the median is
 * reported, and rows whose runs spread by more than SPREAD_NOTE (max / min)
 * are listed under the table (min and max are in the CSV / JSON).
 * TFLOPS = 2*M*N*K / t over the rows that are real (masked / padding rows
 * excluded); GB/s = bytes of A, B, SFA, SFB and D moved once / t.
 *
 * --host (--host-calls N) times the host instead, for the same problems:
 * steps 1-3, then the CPU time of N calls of the public qg_ entry point
 * (CLOCK_MONOTONIC from the call to its return: the launch enqueued on a
 * cached kernel), the stream drained every HOST_DRAIN calls outside the
 * timing, D checked once after the calls; median, p10 and p90 per problem
 * (JSON "c_api_us" is the median, the figure bench/peers.py records). No
 * peer, no L2 flush, no bandwidth measurement.
 *
 * Invariants:
 *  - the peer never changes the inputs; both libraries write the same D
 *    buffer, poisoned before each, so each check sees only its own writes;
 *  - a failure in one row (qgemm error, cuBLASLt n/a) is reported in that
 *    row and the bench goes on; the exit status is 1 when any qgemm check
 *    failed, 0 otherwise.
 */
#include "cli.h"

#include "cublaslt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SPREAD_NOTE 1.15
#define BENCH_SCALE_SPREAD 2
#define COPY_BYTES ((size_t)1 << 30)
#define COPY_RUNS 5
#define NOTE_LEN 384
#define CHAIN_MAX 16
#define HOST_DEFAULT_CALLS 10000
#define HOST_MIN_CALLS 100
#define HOST_MAX_CALLS 10000000
#define HOST_DEFAULT_WARMUP 100
#define HOST_DRAIN 200

typedef enum { OUT_TABLE, OUT_CSV, OUT_JSON } out_format;

typedef struct {
    out_format format;
    bool grouped, use_peer, have_cfg;
    int chain;            /* --chain N: PDL table of N-GEMM chains (0 = off) */
    bool host;            /* --host / --host-calls N: the C API's CPU time per call */
    int host_calls;
    bool warmup_set;      /* --warmup given (--host has its own default) */
    int contiguous_groups, contiguous_rows;     /* --grouped-contiguous G,M (0 = off) */
    int masked_groups, masked_rows, masked_valid; /* --grouped-masked G,M_max[,M] (0 = off) */
    qgtk_l2_flush_mode flush;
    qg_config cfg;
    int runs, warmup;
    uint64_t seed;
    cli_shape shapes[CLI_MAX_SHAPES];
    int num_shapes;
} bench_opts;

/* One line of a table. */
typedef struct {
    qg_gemm_kind kind;
    int m, n, k;          /* dense M; grouped: rows per group (masked: M_max) */
    int valid;            /* masked: valid rows per group (masked_m); else m */
    int groups;
    double flops, bytes;  /* of the real rows, for TFLOPS and GB/s */
    char config[40];
    bool jit_done;
    qg_kernel_info jit;
    bool q_ran, pass;
    double diff_q;
    bool c_ran;
    double diff_c, diff_qc;
    qgtk_timing qt, ct;     /* qgemm's and cuBLASLt's timings (median, min, max) */
    bool h_ran;             /* --host: CPU time of one qg_ call, us */
    double h_median, h_p10, h_p90, h_min, h_max;
    char c_note[NOTE_LEN]; /* why cuBLASLt is n/a, or its algorithm */
    bool dense_ran, dense_pass; /* contiguous: dense qgemm at the same total M */
    double dense_us, dense_flops;
    char error[NOTE_LEN];  /* qgemm failure, "" if none */
} bench_row;

typedef struct {
    const bench_opts *o;
    qg_context *ctx;
    const qg_driver *drv;
    CUstream stream;
    qg_device_props props;
    int clock_khz;
    lt_peer *peer;
    char peer_note[NOTE_LEN];
    double copy_gbs;
    double write_gbs;
    bench_row *rows;
    int num_rows;
    int chain_failures;   /* --chain rows that failed their check or errored */
    /* A GEMM timed in turn with the next problem's (contiguous rows: dense
     * qgemm at the same total M), so that both see the same clocks. */
    const void *companion;
    bool companion_ran;
    qgtk_timing companion_t;
} bench_env;

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

/* --grouped-masked G,M_max[,M]: M valid rows in each group (default M_max). */
static bool parse_masked(const char *text, bench_opts *o) {
    /* "G,M_max[,M]": each field parsed in place (a copy into a fixed buffer
     * once cut long values short and accepted the rest). */
    long g, rows, valid;
    const char *c1 = text ? strchr(text, ',') : NULL;
    if (!c1 || !cli_parse_int_field(text, (size_t)(c1 - text), 1, CLI_MAX_GROUPS, &g)) return false;
    const char *c2 = strchr(c1 + 1, ',');
    const size_t rows_len = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
    if (!cli_parse_int_field(c1 + 1, rows_len, 1, 1L << 20, &rows)) return false;
    if (!c2) valid = rows;
    else if (!cli_parse_int(c2 + 1, 1, rows, &valid)) return false;
    o->masked_groups = (int)g, o->masked_rows = (int)rows;
    o->masked_valid = (int)valid;
    return true;
}

static int parse_options(int argc, char **argv, bench_opts *o) {
    memset(o, 0, sizeof *o);
    o->runs = CLI_BENCH_DEFAULT_RUNS;
    o->warmup = CLI_BENCH_DEFAULT_WARMUP;
    o->host_calls = HOST_DEFAULT_CALLS;
    o->use_peer = true;
    o->flush = QGTK_L2_FLUSH_CLEAN;
    o->seed = cli_fresh_seed();
    /* The options that hold one value, and the value each was given: a
     * second is refused, both named (as check and compile do). */
    static const char *const single[] = {"--runs",  "--warmup", "--config",
                                         "--flush", "--chain",  "--host-calls",
                                         "--seed",  "--grouped-contiguous", "--grouped-masked"};
    const char *given[sizeof single / sizeof single[0]] = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        long v;
        if (cli_single_value("bench", a, next, single, given, sizeof single / sizeof single[0]))
            return CLI_EXIT_USAGE;
        if (!strcmp(a, "--csv") || !strcmp(a, "--json")) {
            out_format format = !strcmp(a, "--csv") ? OUT_CSV : OUT_JSON;
            if (o->format != OUT_TABLE && o->format != format)
                return cli_usage_error("bench: --csv and --json exclude each other: pick one");
            o->format = format;
        }
        else if (!strcmp(a, "--grouped")) o->grouped = true;
        else if (!strcmp(a, "--family") && next && !strcmp(next, "fp8")) i++; /* these tables */
        else if (!strcmp(a, "--host")) o->host = true;
        else if (!strcmp(a, "--no-cublas")) o->use_peer = false;
        else if (!next) return cli_usage_error("bench: unknown or incomplete option '%s'", a);
        else if (!strcmp(a, "--shape")) {
            if (o->num_shapes == CLI_MAX_SHAPES) return cli_usage_error("bench: too many --shape");
            if (!cli_parse_shape(next, &o->shapes[o->num_shapes++]))
                return cli_usage_error("bench: --shape wants MxNxK, got '%s'", next);
            i++;
        } else if (!strcmp(a, "--runs") || !strcmp(a, "--warmup")) {
            if (cli_bench_count(a, next, &o->runs, &o->warmup)) return CLI_EXIT_USAGE;
            o->warmup_set |= !strcmp(a, "--warmup"), i++;
        } else if (!strcmp(a, "--config")) {
            if (!cli_parse_config(next, &o->cfg))
                return cli_usage_error("bench: --config wants bm,bn,stages,mc (mc: none|a|b|k2), "
                                       "got '%s'", next);
            o->have_cfg = true, i++;
        } else if (!strcmp(a, "--flush")) {
            if (!strcmp(next, "clean")) o->flush = QGTK_L2_FLUSH_CLEAN;
            else if (!strcmp(next, "write")) o->flush = QGTK_L2_FLUSH_WRITE;
            else return cli_usage_error("bench: --flush wants clean or write, got '%s'", next);
            i++;
        } else if (!strcmp(a, "--grouped-contiguous")) {
            if (!cli_parse_groups_rows(next, &o->contiguous_groups, &o->contiguous_rows))
                return cli_usage_error("bench: --grouped-contiguous wants G,M (G in 1..%d groups "
                                       "of M rows), got '%s'", CLI_MAX_GROUPS, next);
            i++;
        } else if (!strcmp(a, "--grouped-masked")) {
            if (!parse_masked(next, o))
                return cli_usage_error("bench: --grouped-masked wants G,M_max or G,M_max,M (G in "
                                       "1..%d, M valid rows per group in 1..M_max), got '%s'",
                                       CLI_MAX_GROUPS, next);
            i++;
        } else if (!strcmp(a, "--chain")) {
            if (!cli_parse_int(next, 2, CHAIN_MAX, &v))
                return cli_usage_error("bench: --chain wants an integer in [2, %d], got '%s'",
                                       CHAIN_MAX, next);
            o->chain = (int)v, i++;
        } else if (!strcmp(a, "--host-calls")) {
            if (!cli_parse_int(next, HOST_MIN_CALLS, HOST_MAX_CALLS, &v))
                return cli_usage_error("bench: --host-calls wants an integer in [%d, %d], got '%s'",
                                       HOST_MIN_CALLS, HOST_MAX_CALLS, next);
            o->host = true, o->host_calls = (int)v, i++;
        } else if (!strcmp(a, "--seed")) {
            if (!cli_parse_int(next, 0, 2147483647L, &v))
                return cli_usage_error("bench: --seed wants an integer in [0, 2147483647], got "
                                       "'%s'", next);
            o->seed = (uint64_t)v, i++;
        } else {
            return cli_usage_error("bench: unknown option '%s'", a);
        }
    }
    if (o->grouped && o->num_shapes)
        return cli_usage_error("bench: --grouped uses its own tables; drop --shape");
    if (o->grouped && (o->masked_groups || o->contiguous_groups))
        return cli_usage_error("bench: --grouped prints its own tables; --grouped-contiguous and "
                               "--grouped-masked time the --shape list instead: pick one");
    if (o->chain && (o->grouped || o->masked_groups || o->contiguous_groups ||
                     o->format != OUT_TABLE))
        return cli_usage_error("bench: --chain prints its own table of dense GEMMs; drop "
                               "--grouped*, --csv and --json");
    if (o->host && o->chain)
        return cli_usage_error("bench: --host and --chain exclude each other: pick one");
    if (o->host && o->grouped)
        return cli_usage_error("bench: --host times the --shape list (or its --grouped-contiguous "
                               "and --grouped-masked tables); drop --grouped");
    if (o->host && o->format == OUT_CSV)
        return cli_usage_error("bench: --host writes a table or --json, not --csv");
    if (o->host && !o->warmup_set) o->warmup = HOST_DEFAULT_WARMUP;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Measurements                                                              */
/* ------------------------------------------------------------------------ */

static const char *flush_name(qgtk_l2_flush_mode m) {
    return m == QGTK_L2_FLUSH_CLEAN ? "clean" : "write";
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The operation device_bandwidth times: a copy of src to dst, or (write_only)
 * a fill of dst. */
static CUresult bandwidth_op(const qg_driver *drv, bool write_only, CUdeviceptr dst,
                             CUdeviceptr src, size_t bytes) {
    return write_only ? drv->cuMemsetD8(dst, 0x3c, bytes) : drv->cuMemcpyDtoD(dst, src, bytes);
}

/* Device-to-device copy bandwidth (GB/s, read + write bytes), median of
 * COPY_RUNS copies of a 1 GiB buffer (256 MiB when memory is short); with
 * write_only, the bandwidth of filling the buffer (cuMemsetD8), the floor of
 * a GEMM whose time goes to writing D. */
static double device_bandwidth(bench_env *e, bool write_only) {
    const qg_driver *drv = e->drv;
    for (size_t bytes = COPY_BYTES; bytes >= COPY_BYTES / 4; bytes /= 4) {
        CUdeviceptr src = 0, dst = 0;
        CUevent start = NULL, stop = NULL;
        double gbs = -1.0, ms[COPY_RUNS];
        bool ok = (write_only || (drv->cuMemAlloc(&src, bytes) == CUDA_SUCCESS &&
                                  drv->cuMemsetD8(src, 0x5a, bytes) == CUDA_SUCCESS)) &&
                  drv->cuMemAlloc(&dst, bytes) == CUDA_SUCCESS &&
                  drv->cuEventCreate(&start, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
                  drv->cuEventCreate(&stop, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
                  bandwidth_op(drv, write_only, dst, src, bytes) == CUDA_SUCCESS; /* warm-up */
        for (int i = 0; ok && i < COPY_RUNS; i++) {
            float t = 0.0f;
            ok = drv->cuEventRecord(start, NULL) == CUDA_SUCCESS &&
                 bandwidth_op(drv, write_only, dst, src, bytes) == CUDA_SUCCESS &&
                 drv->cuEventRecord(stop, NULL) == CUDA_SUCCESS &&
                 drv->cuEventSynchronize(stop) == CUDA_SUCCESS &&
                 drv->cuEventElapsedTime(&t, start, stop) == CUDA_SUCCESS && t > 0.0f;
            ms[i] = t;
        }
        if (ok) {
            qsort(ms, COPY_RUNS, sizeof ms[0], cmp_double);
            gbs = (write_only ? 1.0 : 2.0) * (double)bytes / (ms[COPY_RUNS / 2] * 1e-3) / 1e9;
        }
        if (start) drv->cuEventDestroy(start);
        if (stop) drv->cuEventDestroy(stop);
        if (src) drv->cuMemFree(src);
        if (dst) drv->cuMemFree(dst);
        if (ok) return gbs;
    }
    return -1.0;
}

/* Real rows, FLOPs and bytes moved once, from the host copy of the problem. */
static void workload(const qgtk_problem_data *p, bench_row *row) {
    int64_t real = p->m;
    if (p->kind == QG_GEMM_GROUPED_CONTIGUOUS) {
        real = 0;
        for (int64_t r = 0; r < p->m; r++) real += p->m_indices[r] >= 0;
    } else if (p->kind == QG_GEMM_GROUPED_MASKED) {
        real = 0;
        for (int g = 0; g < p->num_groups; g++) real += p->masked_m[g];
    }
    double g = p->num_groups, n = p->n, k = p->k, rows = (double)real;
    row->flops = 2.0 * rows * n * k;
    row->bytes = rows * k + g * n * k + rows * p->kblocks * 4.0 +
                 g * p->nblocks * (double)p->kblocks * 4.0 + rows * n * 2.0;
}

/* diff between qgemm's D (saved) and the current D (cuBLASLt's), over the
 * rows the reference says must be written (all rows if it is not cached). */
static double diff_outputs(const qgtk_problem_data *p, const uint16_t *dq) {
    qgtk_diff_acc acc;
    memset(&acc, 0, sizeof acc);
    double *x = malloc(sizeof(double) * (size_t)p->n), *y = malloc(sizeof(double) * (size_t)p->n);
    if (!x || !y) {
        free(x);
        free(y);
        return NAN;
    }
    for (int64_t r = 0; r < p->rows; r++) {
        if (p->ref && isnan(p->ref[r * p->n])) continue;
        const uint16_t *a = dq + r * p->ldd, *b = p->d + r * p->ldd;
        for (int c = 0; c < p->n; c++) {
            x[c] = qg_bf16_decode(a[c]);
            y[c] = qg_bf16_decode(b[c]);
        }
        qgtk_diff_add(&acc, x, y, (size_t)p->n);
    }
    free(x);
    free(y);
    return qgtk_diff_result(&acc);
}

typedef struct {
    qg_context *ctx;
    qg_gemm_kind kind;
    qg_gemm_args args;
    const qg_config *cfg;
} qgemm_call;

static qg_status run_qgemm(void *user, CUstream stream) {
    const qgemm_call *c = user;
    return qgtk_gemm_launch(c->ctx, c->kind, &c->args, c->cfg, stream);
}

typedef struct {
    lt_gemm **plans;
    int count;
} peer_call;

static qg_status run_peer(void *user, CUstream stream) {
    const peer_call *c = user;
    char why[NOTE_LEN];
    for (int i = 0; i < c->count; i++)
        if (c->plans[i] && lt_gemm_run(c->plans[i], stream, why, sizeof why))
            return qg__fail(QG_ERROR_CUDA, "%s", why);
    return QG_SUCCESS;
}

/* The cuBLASLt view of group g: rows [row0, row0 + rows) of A and D, its
 * SFA columns, its B and SFB. */
static lt_gemm_desc peer_desc(const qgtk_problem_data *p, int g, int64_t row0, int rows) {
    const float *sfa = (const float *)(uintptr_t)p->dev_sfa;
    if (p->kind == QG_GEMM_GROUPED_MASKED) sfa += (int64_t)g * p->kblocks * p->sfa_ld;
    else sfa += row0;
    lt_gemm_desc d = {
        .m = rows, .n = p->n, .k = p->k,
        .a = (const uint8_t *)(uintptr_t)p->dev_a + row0 * p->lda, .lda = p->lda,
        .sfa = sfa, .sfa_ld = p->sfa_ld,
        .b = (const uint8_t *)(uintptr_t)p->dev_b + (int64_t)g * p->n * p->ldb, .ldb = p->ldb,
        .sfb = (const float *)(uintptr_t)p->dev_sfb + (int64_t)g * p->nblocks * p->kblocks,
        .d = (uint16_t *)(uintptr_t)p->dev_d + row0 * p->ldd, .ldd = p->ldd,
    };
    return d;
}

/* Group g's rows: dense all, masked g*M_max + masked_m[g], contiguous the
 * rows whose m_indices is g (which the layout keeps in one segment). */
static bool group_rows(const qgtk_problem_data *p, int g, int64_t *row0, int *rows) {
    if (p->kind == QG_GEMM_DENSE) {
        *row0 = 0, *rows = p->m;
        return true;
    }
    if (p->kind == QG_GEMM_GROUPED_MASKED) {
        *row0 = (int64_t)g * p->m, *rows = p->masked_m[g];
        return true;
    }
    int64_t first = -1, count = 0, last = -1;
    for (int64_t r = 0; r < p->m; r++)
        if (p->m_indices[r] == g) {
            if (first < 0) first = r;
            last = r;
            count++;
        }
    *row0 = first < 0 ? 0 : first, *rows = (int)count;
    return count == 0 || last - first + 1 == count;
}

/* qgtk_time_interleaved_us over fns (room for one more), plus e->companion
 * (a qgemm_call) when one is set, whose timing goes to e->companion_t. */
static qg_status time_in_turn(bench_env *e, int count, qgtk_timed_fn fns[QGTK_TIME_MAX_FNS],
                              void *users[QGTK_TIME_MAX_FNS], qgtk_timing t[QGTK_TIME_MAX_FNS]) {
    if (e->companion) fns[count] = run_qgemm, users[count] = (void *)e->companion, count++;
    qg_status st = qgtk_time_interleaved_us(e->ctx, e->stream, e->o->flush, count, fns, users,
                                           e->o->warmup, e->o->runs, t);
    if (st == QG_SUCCESS && e->companion) e->companion_t = t[count - 1], e->companion_ran = true;
    return st;
}

/* Step 4 of the header: cuBLASLt on the same buffers, checked, then timed in
 * turn with qgemm (`q`), run for run. */
static void bench_peer(bench_env *e, qgtk_problem_data *p, const uint16_t *dq, qgemm_call *q,
                       bench_row *row) {
    int count = p->kind == QG_GEMM_DENSE ? 1 : p->num_groups;
    lt_gemm **plans = calloc((size_t)count, sizeof *plans);
    char why[NOTE_LEN] = "";
    if (!plans) {
        snprintf(row->c_note, sizeof row->c_note, "out of host memory");
        return;
    }
    bool ok = qgtk_problem_poison(e->ctx, p, e->stream) == QG_SUCCESS;
    if (!ok) snprintf(row->c_note, sizeof row->c_note, "poisoning D: %s", qg_last_error());
    if (count > 1) fprintf(stderr, "  planning %d cuBLASLt calls ...\n", count);
    for (int g = 0; ok && g < count; g++) {
        int64_t row0;
        int rows;
        if (!group_rows(p, g, &row0, &rows)) {
            snprintf(row->c_note, sizeof row->c_note, "group %d's rows are not one segment", g);
            ok = false;
        } else if (rows > 0) {
            lt_gemm_desc d = peer_desc(p, g, row0, rows);
            if (lt_gemm_create(e->peer, &d, e->stream, &plans[g], why, sizeof why)) {
                if (count > 1) snprintf(row->c_note, sizeof row->c_note, "group %d: %.340s", g, why);
                else snprintf(row->c_note, sizeof row->c_note, "%s", why);
                ok = false;
            }
        }
    }
    qgtk_check_result res;
    if (ok && qgtk_problem_check(e->ctx, p, &res) != QG_SUCCESS) {
        snprintf(row->c_note, sizeof row->c_note, "checking cuBLASLt's D: %s", qg_last_error());
        ok = false;
    }
    if (ok) {
        row->diff_c = res.diff;
        row->diff_qc = dq ? diff_outputs(p, dq) : NAN;
        peer_call call = {plans, count};
        qgtk_timed_fn fns[QGTK_TIME_MAX_FNS] = {run_qgemm, run_peer};
        void *users[QGTK_TIME_MAX_FNS] = {q, &call};
        qgtk_timing t[QGTK_TIME_MAX_FNS];
        if (time_in_turn(e, 2, fns, users, t) != QG_SUCCESS) {
            snprintf(row->c_note, sizeof row->c_note, "timing: %s", qg_last_error());
        } else {
            row->q_ran = row->c_ran = true;
            row->qt = t[0], row->ct = t[1];
            for (int g = 0; g < count; g++)
                if (plans[g]) {
                    snprintf(row->c_note, sizeof row->c_note, "%s", lt_gemm_algo_name(plans[g]));
                    break;
                }
        }
    }
    for (int g = 0; g < count; g++) lt_gemm_destroy(plans[g]);
    free(plans);
}

/* The row's error: after an earlier one (a failed check), not over it. */
static void row_error(bench_row *row, const char *doing) {
    const size_t used = strlen(row->error);
    snprintf(row->error + used, sizeof row->error - used, "%s%s: %s", used ? "; " : "", doing,
             qg_last_error());
}

/* A problem made ready to time: created, compiled, run once and checked. */
typedef struct {
    qgtk_problem_data *p;
    qg_config cfg;   /* what it runs with (call.cfg points here under --config) */
    qgemm_call call;
} ready_problem;

/* Steps 1-3 of the header. @return true when qgemm ran (row->pass says
 * whether its check passed); false with row->error set. rp->p is to be freed
 * either way (qgtk_problem_free accepts NULL). */
static bool prepare(bench_env *e, const qgtk_problem_spec *spec, bench_row *row, ready_problem *rp) {
    memset(rp, 0, sizeof *rp);
    row->diff_q = row->diff_c = row->diff_qc = NAN;
    if (qgtk_problem_create(&rp->p, e->ctx, spec) != QG_SUCCESS) {
        row_error(row, "creating the problem");
        return false;
    }
    qgtk_problem_data *p = rp->p;
    workload(p, row);
    qg_problem q = cli_problem_of(p);
    const qg_config *force = e->o->have_cfg ? &rp->cfg : NULL;
    if (cli_config_for(e->ctx, &q, force ? &e->o->cfg : NULL, &rp->cfg) != QG_SUCCESS) {
        row_error(row, force ? "checking --config" : "selecting a configuration");
        return false;
    }
    snprintf(row->config, sizeof row->config, "%d,%d,%d,%s", rp->cfg.block_m, rp->cfg.block_n,
             rp->cfg.num_stages, cli_cluster_name(&rp->cfg));
    fprintf(stderr, "compiling kernel for %s %dx%dx%d%s ...\n", cli_kind_name(p->kind), p->m,
            p->n, p->k, p->num_groups > 1 ? " (grouped)" : "");
    if (qg_compile(e->ctx, &q, force, &row->jit) != QG_SUCCESS) {
        row_error(row, "compiling");
        return false;
    }
    row->jit_done = true;

    rp->call = (qgemm_call){e->ctx, p->kind, qgtk_problem_args(p), force};
    qgtk_check_result res;
    if (qgtk_problem_poison(e->ctx, p, e->stream) != QG_SUCCESS ||
        run_qgemm(&rp->call, e->stream) != QG_SUCCESS ||
        qgtk_problem_check(e->ctx, p, &res) != QG_SUCCESS) {
        row_error(row, "running and checking qgemm");
        return false;
    }
    row->diff_q = res.diff;
    row->pass = qgtk_check_passed(&res, CLI_DIFF_BOUND);
    if (!row->pass) {
        char desc[256];
        snprintf(row->error, sizeof row->error, "check failed: %s",
                 qgtk_check_describe(&res, desc, sizeof desc));
    }
    return true;
}

/* ---- --host: the C API's own cost per call --------------------------------- */

typedef qg_status (*gemm_entry)(qg_context *ctx, const qg_gemm_args *args, const qg_config *cfg,
                                CUstream stream);

/* The public entry point of a kind, called directly in the timed loop. */
static gemm_entry entry_of(qg_gemm_kind kind) {
    switch (kind) {
    case QG_GEMM_DENSE: return qg_fp8_gemm_nt;
    case QG_GEMM_GROUPED_CONTIGUOUS: return qg_m_grouped_fp8_gemm_nt_contiguous;
    case QG_GEMM_GROUPED_MASKED: return qg_m_grouped_fp8_gemm_nt_masked;
    case QG_GEMM_GROUPED_PSUM: return qg_m_grouped_fp8_gemm_nt_psum;
    case QG_GEMM_WGRAD: return qg_fp8_gemm_nt_wgrad;
    case QG_GEMM_K_GROUPED: return qg_k_grouped_fp8_gemm_nt_contiguous;
    case QG_GEMM_FP8_BATCHED: return NULL; /* batch strides: not this table's signature */
    }
    return NULL;
}

static int64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sorted samples (ns): the q-quantile as the sample at index n*q (as
 * bench/peers.py takes p10 and p90), the median as the mean of the middle two
 * when n is even. */
static double quantile_us(const double *ns, int n, int num, int den) {
    return ns[(int64_t)n * num / den] / 1e3;
}

static double median_us(const double *ns, int n) {
    return (n % 2 ? ns[n / 2] : 0.5 * (ns[n / 2 - 1] + ns[n / 2])) / 1e3;
}

/*
 * --host for one problem: steps 1-3 of the header (created, compiled, run
 * once and checked: the first call's JIT and module load are done here), then
 * o->warmup untimed calls, then o->host_calls calls of the public entry point
 * each timed with CLOCK_MONOTONIC from the call to its return (the launch
 * enqueued, the kernel not waited for). The stream is drained every
 * HOST_DRAIN calls, outside the timing, so the launch queue never fills and
 * no call waits for room in it. D is poisoned before the loop and checked
 * after it against the same reference, so the launches timed did their work.
 */
static void host_problem(bench_env *e, const qgtk_problem_spec *spec, bench_row *row) {
    ready_problem rp;
    double *ns = NULL;
    if (!prepare(e, spec, row, &rp)) goto done;
    const gemm_entry call = entry_of(rp.p->kind);
    const qg_gemm_args args = rp.call.args;
    const qg_config *cfg = rp.call.cfg;
    const int n = e->o->host_calls;
    ns = malloc(sizeof *ns * (size_t)n);
    if (!ns) {
        snprintf(row->error, sizeof row->error, "out of host memory for %d samples", n);
        row->pass = false;
        goto done;
    }
    bool first_pass = row->pass;
    for (int i = 0; i < e->o->warmup; i++)
        if ((i % HOST_DRAIN == 0 && e->drv->cuStreamSynchronize(e->stream) != CUDA_SUCCESS) ||
            call(e->ctx, &args, cfg, e->stream) != QG_SUCCESS) {
            row_error(row, "warm-up call");
            row->pass = false;
            goto done;
        }
    if (qgtk_problem_poison(e->ctx, rp.p, e->stream) != QG_SUCCESS) {
        row_error(row, "poisoning D");
        row->pass = false;
        goto done;
    }
    fprintf(stderr, "timing %d calls of the C API ...\n", n);
    for (int i = 0; i < n; i++) {
        CUresult cr = i % HOST_DRAIN ? CUDA_SUCCESS : e->drv->cuStreamSynchronize(e->stream);
        if (cr != CUDA_SUCCESS) {
            snprintf(row->error, sizeof row->error,
                     "draining the stream after %d calls: CUresult %d (a kernel failed?)", i,
                     (int)cr);
            row->pass = false;
            goto done;
        }
        const int64_t t0 = monotonic_ns();
        const qg_status st = call(e->ctx, &args, cfg, e->stream);
        const int64_t t1 = monotonic_ns();
        if (st != QG_SUCCESS) {
            char doing[48];
            snprintf(doing, sizeof doing, "timed call %d", i);
            row_error(row, doing);
            row->pass = false;
            goto done;
        }
        ns[i] = (double)(t1 - t0);
    }
    qgtk_check_result res;
    if (qgtk_problem_check(e->ctx, rp.p, &res) != QG_SUCCESS) {
        row_error(row, "checking D after the timed calls");
        row->pass = false;
        goto done;
    }
    row->diff_q = res.diff;
    row->pass = first_pass && qgtk_check_passed(&res, CLI_DIFF_BOUND);
    if (first_pass && !row->pass) {
        char desc[256];
        snprintf(row->error, sizeof row->error, "check after the timed calls failed: %s",
                 qgtk_check_describe(&res, desc, sizeof desc));
    }
    qsort(ns, (size_t)n, sizeof *ns, cmp_double);
    row->h_ran = true;
    row->h_median = median_us(ns, n);
    row->h_p10 = quantile_us(ns, n, 1, 10);
    row->h_p90 = quantile_us(ns, n, 9, 10);
    row->h_min = ns[0] / 1e3;
    row->h_max = ns[n - 1] / 1e3;
done:
    if (rp.p) e->drv->cuStreamSynchronize(e->stream); /* after a failed call: nothing in flight */
    free(ns);
    qgtk_problem_free(rp.p);
}

/* Steps 1-5 of the header for one problem (4 when with_peer), timed in turn
 * with e->companion when one is set; with --host, host_problem instead. */
static void bench_problem(bench_env *e, const qgtk_problem_spec *spec, bool with_peer,
                          bench_row *row) {
    if (e->o->host) {
        host_problem(e, spec, row);
        return;
    }
    ready_problem rp;
    uint16_t *dq = NULL;
    if (!prepare(e, spec, row, &rp)) goto done;
    qgtk_problem_data *p = rp.p;
    dq = malloc(p->d_bytes);
    if (dq) memcpy(dq, p->d, p->d_bytes);
    if (with_peer && e->peer) bench_peer(e, p, dq, &rp.call, row);
    else if (with_peer) snprintf(row->c_note, sizeof row->c_note, "%s", e->peer_note);
    if (!row->q_ran) { /* no peer, or it could not be run: qgemm alone */
        qgtk_timed_fn fns[QGTK_TIME_MAX_FNS] = {run_qgemm};
        void *users[QGTK_TIME_MAX_FNS] = {&rp.call};
        qgtk_timing t[QGTK_TIME_MAX_FNS];
        if (time_in_turn(e, 1, fns, users, t) != QG_SUCCESS) {
            row_error(row, "timing qgemm");
            row->pass = false;
            goto done;
        }
        row->qt = t[0];
        row->q_ran = true;
    }
done:
    free(dq);
    qgtk_problem_free(rp.p);
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */
/* ------------------------------------------------------------------------ */

static double tflops(double flops, double us) { return flops / (us * 1e-6) / 1e12; }

static void shape_label(const bench_row *r, char *buf, size_t len) {
    if (r->kind == QG_GEMM_DENSE) snprintf(buf, len, "%dx%dx%d", r->m, r->n, r->k);
    else if (r->valid < r->m) /* masked, some rows not valid: groups x valid / M_max */
        snprintf(buf, len, "%dx%d/%d %dx%d", r->groups, r->valid, r->m, r->n, r->k);
    else snprintf(buf, len, "%dx%d %dx%d", r->groups, r->m, r->n, r->k);
}

static void table_header(qg_gemm_kind kind) {
    if (kind == QG_GEMM_GROUPED_CONTIGUOUS)
        printf("\ncontiguous grouped GEMM (groups x rows, N x K); dense = qgemm dense at the same "
               "total M (TFLOPS), timed in turn with the grouped GEMM and cuBLASLt\n");
    else if (kind == QG_GEMM_GROUPED_MASKED)
        printf("\nmasked grouped GEMM (groups x M_max, N x K; groups x M/M_max where M rows of "
               "each group are valid); cuBLASLt: one call per group\n");
    printf("%-20s %-16s %9s %7s %7s", "shape", "bm,bn,st,mc", "qgemm us", "TFLOPS", "GB/s");
    if (kind == QG_GEMM_GROUPED_CONTIGUOUS) printf(" %7s %6s", "dense", "ratio");
    printf(" %11s %7s %8s %10s %11s %9s\n", "cublasLt us", "TFLOPS", "speedup", "diff qgemm",
           "diff cublas", "q vs c");
}

static void table_row(const bench_row *r) {
    char shape[48];
    shape_label(r, shape, sizeof shape);
    printf("%-20s %-16s", shape, r->config[0] ? r->config : "-");
    if (r->q_ran) printf(" %9.2f %7.1f %7.0f", r->qt.median_us, tflops(r->flops, r->qt.median_us),
                         r->bytes / (r->qt.median_us * 1e-6) / 1e9);
    else printf(" %9s %7s %7s", "error", "-", "-");
    if (r->kind == QG_GEMM_GROUPED_CONTIGUOUS) {
        if (r->dense_ran && r->q_ran)
            printf(" %7.1f %5.2fx", tflops(r->dense_flops, r->dense_us),
                   tflops(r->flops, r->qt.median_us) / tflops(r->dense_flops, r->dense_us));
        else printf(" %7s %6s", "-", "-");
    }
    if (r->c_ran) printf(" %11.2f %7.1f", r->ct.median_us, tflops(r->flops, r->ct.median_us));
    else printf(" %11s %7s", "n/a", "-");
    if (r->c_ran && r->q_ran) printf(" %7.2fx", r->ct.median_us / r->qt.median_us);
    else printf(" %8s", "-");
    printf(" %9.2e%s", r->diff_q, r->pass ? " " : "!");
    if (isnan(r->diff_c) && !r->c_ran) printf(" %11s %9s\n", "-", "-");
    else printf(" %11.2e %9.2e\n", r->diff_c, r->diff_qc);
    if (r->error[0]) printf("    qgemm: %s\n", r->error);
    if (r->kind == QG_GEMM_GROUPED_CONTIGUOUS && r->dense_ran && !r->dense_pass)
        printf("    qgemm dense at the same total M: check FAILED\n");
    if (!r->c_ran && r->c_note[0]) printf("    cublasLt: n/a (%s)\n", r->c_note);
    fflush(stdout);
}

/* A CSV / JSON number: empty (CSV) or null (JSON) when unknown. */
static void put_num(bool json, bool known, const char *fmt, double v) {
    if (known && isfinite(v)) printf(fmt, v);
    else if (json) printf("null");
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/*
 * The fields of a row in the CSV and the JSON, in one table that drives both
 * writers, so a field added here appears in both: CSV columns and JSON keys
 * in this order, the JSON-only ones (free text) last. CSV writes an unknown
 * number as an empty cell, JSON as null.
 */
typedef enum { F_TEXT, F_INT, F_NUM, F_BOOL } field_type;
enum { IN_CSV = 1, IN_JSON = 2, JSON_CONTIGUOUS_ONLY = 4 };

typedef struct {
    const char *csv, *json; /* column(s) and key */
    field_type type;
    const char *fmt;        /* F_NUM */
    int where;
} bench_field;

typedef struct {
    bool known;             /* F_NUM: measured (else empty / null) */
    double num;
    long long i;            /* F_INT, F_BOOL */
    const char *text;       /* F_TEXT */
} field_value;

enum {
    FLD_KIND, FLD_GROUPS, FLD_M, FLD_N, FLD_K, FLD_CONFIG, FLD_Q_US, FLD_Q_TFLOPS, FLD_Q_GBS,
    FLD_C_US, FLD_C_TFLOPS, FLD_SPEEDUP, FLD_DIFF_Q, FLD_DIFF_C, FLD_DIFF_QC, FLD_PASS,
    FLD_DENSE_TFLOPS, FLD_JIT_MS, FLD_JIT_HIT, FLD_REGISTERS, FLD_Q_MIN, FLD_Q_MAX, FLD_C_MIN,
    FLD_C_MAX, FLD_VALID, FLD_ERROR, FLD_C_NOTE, NUM_FIELDS
};

static const bench_field fields[NUM_FIELDS] = {
    [FLD_KIND] = {"kind", "kind", F_TEXT, NULL, IN_CSV | IN_JSON},
    [FLD_GROUPS] = {"groups", "groups", F_INT, NULL, IN_CSV | IN_JSON},
    [FLD_M] = {"m", "m", F_INT, NULL, IN_CSV | IN_JSON},
    [FLD_N] = {"n", "n", F_INT, NULL, IN_CSV | IN_JSON},
    [FLD_K] = {"k", "k", F_INT, NULL, IN_CSV | IN_JSON},
    /* "bm,bn,stages,mc": four CSV columns, one JSON string */
    [FLD_CONFIG] = {"block_m,block_n,stages,multicast", "config", F_TEXT, NULL, IN_CSV | IN_JSON},
    [FLD_Q_US] = {"qgemm_us", "qgemm_us", F_NUM, "%.3f", IN_CSV | IN_JSON},
    [FLD_Q_TFLOPS] = {"qgemm_tflops", "qgemm_tflops", F_NUM, "%.2f", IN_CSV | IN_JSON},
    [FLD_Q_GBS] = {"qgemm_gbs", "qgemm_gbs", F_NUM, "%.1f", IN_CSV | IN_JSON},
    [FLD_C_US] = {"cublaslt_us", "cublaslt_us", F_NUM, "%.3f", IN_CSV | IN_JSON},
    [FLD_C_TFLOPS] = {"cublaslt_tflops", "cublaslt_tflops", F_NUM, "%.2f", IN_CSV | IN_JSON},
    [FLD_SPEEDUP] = {"speedup", "speedup", F_NUM, "%.4f", IN_CSV | IN_JSON},
    [FLD_DIFF_Q] = {"diff_qgemm", "diff_qgemm", F_NUM, "%.3e", IN_CSV | IN_JSON},
    [FLD_DIFF_C] = {"diff_cublaslt", "diff_cublaslt", F_NUM, "%.3e", IN_CSV | IN_JSON},
    [FLD_DIFF_QC] = {"diff_qgemm_vs_cublaslt", "diff_qgemm_vs_cublaslt", F_NUM, "%.3e",
                     IN_CSV | IN_JSON},
    [FLD_PASS] = {"qgemm_pass", "qgemm_pass", F_BOOL, NULL, IN_CSV | IN_JSON},
    [FLD_DENSE_TFLOPS] = {"dense_same_m_tflops", "dense_same_m_tflops", F_NUM, "%.2f",
                          IN_CSV | IN_JSON | JSON_CONTIGUOUS_ONLY},
    [FLD_JIT_MS] = {"jit_ms", "jit_ms", F_NUM, "%.1f", IN_CSV | IN_JSON},
    [FLD_JIT_HIT] = {"jit_cache_hit", "jit_cache_hit", F_INT, NULL, IN_CSV | IN_JSON},
    [FLD_REGISTERS] = {"registers", "registers", F_INT, NULL, IN_CSV | IN_JSON},
    [FLD_Q_MIN] = {"qgemm_min_us", "qgemm_min_us", F_NUM, "%.3f", IN_CSV | IN_JSON},
    [FLD_Q_MAX] = {"qgemm_max_us", "qgemm_max_us", F_NUM, "%.3f", IN_CSV | IN_JSON},
    [FLD_C_MIN] = {"cublaslt_min_us", "cublaslt_min_us", F_NUM, "%.3f", IN_CSV | IN_JSON},
    [FLD_C_MAX] = {"cublaslt_max_us", "cublaslt_max_us", F_NUM, "%.3f", IN_CSV | IN_JSON},
    [FLD_VALID] = {"valid_m", "valid_m", F_INT, NULL, IN_CSV | IN_JSON},
    [FLD_ERROR] = {NULL, "error", F_TEXT, NULL, IN_JSON},
    [FLD_C_NOTE] = {NULL, "cublaslt_note", F_TEXT, NULL, IN_JSON},
};

static field_value num(bool known, double v) { return (field_value){known, v, 0, NULL}; }
static field_value integer(long long v) { return (field_value){true, 0, v, NULL}; }
static field_value text(const char *t) { return (field_value){true, 0, 0, t}; }

static field_value field_of(const bench_row *r, int f) {
    switch (f) {
    case FLD_KIND: return text(cli_kind_name(r->kind));
    case FLD_GROUPS: return integer(r->groups);
    case FLD_M: return integer(r->m);
    case FLD_N: return integer(r->n);
    case FLD_K: return integer(r->k);
    case FLD_CONFIG: return text(r->config);
    case FLD_Q_US: return num(r->q_ran, r->qt.median_us);
    case FLD_Q_TFLOPS: return num(r->q_ran, tflops(r->flops, r->qt.median_us));
    case FLD_Q_GBS: return num(r->q_ran, r->bytes / (r->qt.median_us * 1e-6) / 1e9);
    case FLD_C_US: return num(r->c_ran, r->ct.median_us);
    case FLD_C_TFLOPS: return num(r->c_ran, tflops(r->flops, r->ct.median_us));
    case FLD_SPEEDUP: return num(r->c_ran && r->q_ran, r->ct.median_us / r->qt.median_us);
    case FLD_DIFF_Q: return num(true, r->diff_q);
    case FLD_DIFF_C: return num(true, r->diff_c);
    case FLD_DIFF_QC: return num(true, r->diff_qc);
    case FLD_PASS: return integer(r->pass);
    case FLD_DENSE_TFLOPS: return num(r->dense_ran, tflops(r->dense_flops, r->dense_us));
    case FLD_JIT_MS: return num(r->jit_done, r->jit.compile_ms);
    case FLD_JIT_HIT: return integer(r->jit_done ? r->jit.cache_hit : -1);
    case FLD_REGISTERS: return integer(r->jit_done ? r->jit.registers : -1);
    case FLD_Q_MIN: return num(r->q_ran, r->qt.min_us);
    case FLD_Q_MAX: return num(r->q_ran, r->qt.max_us);
    case FLD_C_MIN: return num(r->c_ran, r->ct.min_us);
    case FLD_C_MAX: return num(r->c_ran, r->ct.max_us);
    case FLD_VALID: return integer(r->valid);
    case FLD_ERROR: return text(r->error);
    case FLD_C_NOTE: return text(r->c_note);
    }
    return text("");
}

static void csv_header(void) {
    const char *sep = "";
    for (int f = 0; f < NUM_FIELDS; f++)
        if (fields[f].where & IN_CSV) {
            printf("%s%s", sep, fields[f].csv);
            sep = ",";
        }
    printf("\n");
}

static void csv_row(const bench_row *r) {
    const char *sep = "";
    for (int f = 0; f < NUM_FIELDS; f++) {
        if (!(fields[f].where & IN_CSV)) continue;
        const field_value v = field_of(r, f);
        printf("%s", sep);
        sep = ",";
        switch (fields[f].type) {
        case F_TEXT: /* an empty config still fills its four columns */
            printf("%s", f == FLD_CONFIG && !v.text[0] ? ",,," : v.text);
            break;
        case F_INT:
        case F_BOOL: printf("%lld", v.i); break;
        case F_NUM: put_num(false, v.known, fields[f].fmt, v.num); break;
        }
    }
    printf("\n");
    fflush(stdout);
}

/* The row's fields as JSON members, each preceded by ", " (the caller opens
 * the object). */
static void json_fields(const bench_row *r) {
    for (int f = 0; f < NUM_FIELDS; f++) {
        if (!(fields[f].where & IN_JSON)) continue;
        if ((fields[f].where & JSON_CONTIGUOUS_ONLY) && r->kind != QG_GEMM_GROUPED_CONTIGUOUS)
            continue;
        const field_value v = field_of(r, f);
        printf("%s\"%s\": ", f ? ", " : "", fields[f].json);
        switch (fields[f].type) {
        case F_TEXT: json_string(v.text); break;
        case F_INT: printf("%lld", v.i); break;
        case F_BOOL: printf("%s", v.i ? "true" : "false"); break;
        case F_NUM: put_num(true, v.known, fields[f].fmt, v.num); break;
        }
    }
}

static double geomean_speedup(const bench_env *e, int *count) {
    double log_sum = 0.0;
    *count = 0;
    for (int i = 0; i < e->num_rows; i++) {
        const bench_row *r = &e->rows[i];
        if (r->q_ran && r->c_ran && r->qt.median_us > 0 && r->ct.median_us > 0) {
            log_sum += log(r->ct.median_us / r->qt.median_us);
            (*count)++;
        }
    }
    return *count ? exp(log_sum / *count) : NAN;
}

static void json_report(const bench_env *e) {
    int n_speedup;
    double gm = geomean_speedup(e, &n_speedup);
    printf("{\n  \"device\": {\"name\": ");
    json_string(e->props.name);
    printf(", \"cc\": \"%d.%d\", \"sm_count\": %d, \"sm_clock_mhz\": %d, \"l2_bytes\": %zu, "
           "\"copy_bandwidth_gbs\": ", e->props.cc_major, e->props.cc_minor, e->props.sm_count,
           e->clock_khz / 1000, e->props.l2_bytes);
    put_num(true, e->copy_gbs > 0, "%.1f", e->copy_gbs);
    printf(", \"write_bandwidth_gbs\": ");
    put_num(true, e->write_gbs > 0, "%.1f", e->write_gbs);
    printf("},\n  \"library\": ");
    json_string(qg_version_string());
    printf(",\n  \"cublaslt_version\": ");
    put_num(true, e->peer != NULL, "%.0f", (double)lt_peer_version(e->peer));
    printf(",\n  \"cublaslt_note\": ");
    json_string(e->peer_note);
    printf(",\n  \"seed\": %llu, \"runs\": %d, \"warmup\": %d, \"l2_flush\": \"%s\",\n",
           (unsigned long long)e->o->seed, e->o->runs, e->o->warmup, flush_name(e->o->flush));
    printf("  \"geomean_speedup\": ");
    put_num(true, n_speedup > 0, "%.4f", gm);
    printf(",\n  \"rows\": [");
    for (int i = 0; i < e->num_rows; i++) {
        const bench_row *r = &e->rows[i];
        printf("%s\n    {", i ? "," : "");
        json_fields(r);
        printf("}");
    }
    printf("\n  ]\n}\n");
}

/* --host --json: one document, a row per problem; "c_api_us" is the median
 * (the figure bench/peers.py records as its host rows' c_api_us). */
static void host_json_report(const bench_env *e) {
    printf("{\n  \"device\": {\"name\": ");
    json_string(e->props.name);
    printf(", \"cc\": \"%d.%d\", \"sm_count\": %d, \"sm_clock_mhz\": %d},\n  \"library\": ",
           e->props.cc_major, e->props.cc_minor, e->props.sm_count, e->clock_khz / 1000);
    json_string(qg_version_string());
    printf(",\n  \"mode\": \"host\", \"timer\": \"CLOCK_MONOTONIC around each qg_ call\", "
           "\"host_calls\": %d, \"warmup\": %d, \"drain_every\": %d, \"seed\": %llu,\n"
           "  \"rows\": [", e->o->host_calls, e->o->warmup, HOST_DRAIN,
           (unsigned long long)e->o->seed);
    for (int i = 0; i < e->num_rows; i++) {
        const bench_row *r = &e->rows[i];
        printf("%s\n    {\"kind\": \"%s\", \"groups\": %d, \"m\": %d, \"valid_m\": %d, "
               "\"n\": %d, \"k\": %d, \"config\": ", i ? "," : "", cli_kind_name(r->kind),
               r->groups, r->m, r->valid, r->n, r->k);
        json_string(r->config);
        printf(", \"calls\": %d, \"c_api_us\": ", r->h_ran ? e->o->host_calls : 0);
        put_num(true, r->h_ran, "%.3f", r->h_median);
        printf(", \"c_api_p10_us\": ");
        put_num(true, r->h_ran, "%.3f", r->h_p10);
        printf(", \"c_api_p90_us\": ");
        put_num(true, r->h_ran, "%.3f", r->h_p90);
        printf(", \"c_api_min_us\": ");
        put_num(true, r->h_ran, "%.3f", r->h_min);
        printf(", \"c_api_max_us\": ");
        put_num(true, r->h_ran, "%.3f", r->h_max);
        printf(", \"diff_qgemm\": ");
        put_num(true, true, "%.3e", r->diff_q);
        printf(", \"qgemm_pass\": %s, \"jit_ms\": ", r->pass ? "true" : "false");
        put_num(true, r->jit_done, "%.1f", r->jit.compile_ms);
        printf(", \"error\": ");
        json_string(r->error);
        printf("}");
    }
    printf("\n  ]\n}\n");
}

static void table_summary(const bench_env *e) {
    int n_speedup;
    double gm = geomean_speedup(e, &n_speedup);
    printf("\n");
    if (n_speedup)
        printf("geometric-mean speedup (cuBLASLt time / qgemm time): %.3fx over %d problems\n", gm,
               n_speedup);
    else printf("geometric-mean speedup: n/a (no cuBLASLt timings)\n");
    printf("device: %s, sm_%d%d, %d SMs, SM clock %d MHz\n", e->props.name, e->props.cc_major,
           e->props.cc_minor, e->props.sm_count, e->clock_khz / 1000);
    if (e->copy_gbs > 0)
        printf("copy bandwidth (cuMemcpyDtoD, read + write, same run): %.0f GB/s\n", e->copy_gbs);
    else printf("copy bandwidth: measurement failed\n");
    if (e->write_gbs > 0)
        printf("write bandwidth (cuMemsetD8, write only, same run): %.0f GB/s\n", e->write_gbs);
    else printf("write bandwidth: measurement failed\n");
    if (e->peer) printf("cuBLASLt: version %zu, best of the heuristic's algorithms\n",
                        lt_peer_version(e->peer));
    else printf("cuBLASLt: n/a (%s)\n", e->peer_note);
    printf("qgemm %s; seed %llu; median of %d runs after %d warm-up, L2 flushed before each "
           "(%s)%s\n", qg_version_string(), (unsigned long long)e->o->seed, e->o->runs,
           e->o->warmup, e->o->flush == QGTK_L2_FLUSH_CLEAN
                             ? "--flush clean: a write, then a read of 2x L2, so no dirty line "
                               "is left for the timed kernel to write back"
                             : "--flush write: a write of 2x L2, whose dirty lines the timed "
                               "kernel writes back",
           e->peer ? "; qgemm and cuBLASLt timed in turn" : "");
    /* A wide spread means the machine changed during the runs (clocks,
     * another process): the median may not be the kernel's. */
    int unsteady = 0;
    for (int i = 0; i < e->num_rows; i++) {
        const bench_row *r = &e->rows[i];
        const qgtk_timing *t[2] = {r->q_ran ? &r->qt : NULL, r->c_ran ? &r->ct : NULL};
        for (int j = 0; j < 2; j++) {
            if (!t[j] || !(t[j]->max_us > SPREAD_NOTE * t[j]->min_us)) continue;
            char shape[48];
            shape_label(r, shape, sizeof shape);
            if (!unsteady++) printf("timings spread over %.2fx (max / min): ", SPREAD_NOTE);
            else printf("; ");
            printf("%s %s %.2f..%.2f us", shape, j ? "cuBLASLt" : "qgemm", t[j]->min_us,
                   t[j]->max_us);
        }
    }
    if (unsteady) printf("\n");

    static const char *const hit[3] = {"compiled", "memory", "disk"};
    printf("\nfirst-call JIT (qg_compile before timing); cuBLASLt's algorithm (tile M x N of "
           "D^T: its M is N here)\n%-20s %12s %-9s %5s %-12s %s\n", "shape", "compile ms", "cache",
           "regs", "spills st/ld", "cuBLASLt");
    for (int i = 0; i < e->num_rows; i++) {
        const bench_row *r = &e->rows[i];
        char shape[48];
        shape_label(r, shape, sizeof shape);
        const char *peer_algo = r->c_ran ? r->c_note : "-";
        if (!r->jit_done) {
            printf("%-20s %12s %-9s %5s %-12s %s\n", shape, "-", "", "", "", peer_algo);
            continue;
        }
        char spills[24];
        snprintf(spills, sizeof spills, "%d/%d", r->jit.spill_store_bytes, r->jit.spill_load_bytes);
        printf("%-20s %12.1f %-9s %5d %-12s %s\n", shape, r->jit.compile_ms,
               r->jit.cache_hit >= 0 && r->jit.cache_hit <= 2 ? hit[r->jit.cache_hit] : "?",
               r->jit.registers, spills, peer_algo);
    }
}

/* ------------------------------------------------------------------------ */
/* Tables                                                                    */
/* ------------------------------------------------------------------------ */

/* --host: the table's header (first: the paragraph saying what is timed). */
static void host_header(const bench_env *e, qg_gemm_kind kind, bool first) {
    if (first)
        printf("\nhost cost of one call of the C API (qg_ entry point, cached kernel): "
               "CLOCK_MONOTONIC from the call to its\nreturn, the launch enqueued; %d calls per "
               "problem after %d untimed ones, the stream drained every %d calls\noutside the "
               "timing; D checked after the calls\n", e->o->host_calls, e->o->warmup, HOST_DRAIN);
    printf("\n%s\n%-20s %-16s %9s %9s %9s %9s %9s %10s\n",
           kind == QG_GEMM_DENSE ? "dense GEMM (M x N x K)"
           : kind == QG_GEMM_GROUPED_CONTIGUOUS
               ? "contiguous grouped GEMM (groups x rows, N x K)"
               : "masked grouped GEMM (groups x M_max, N x K; groups x M/M_max where M rows of "
                 "each group are valid)",
           "shape", "bm,bn,st,mc", "median us", "p10 us", "p90 us", "min us", "max us",
           "diff");
}

static void host_table_row(const bench_row *r) {
    char shape[48];
    shape_label(r, shape, sizeof shape);
    printf("%-20s %-16s", shape, r->config[0] ? r->config : "-");
    if (r->h_ran)
        printf(" %9.2f %9.2f %9.2f %9.2f %9.2f", r->h_median, r->h_p10, r->h_p90, r->h_min,
               r->h_max);
    else printf(" %9s %9s %9s %9s %9s", "error", "-", "-", "-", "-");
    printf(" %9.2e%s\n", r->diff_q, r->pass ? "" : "!");
    if (r->error[0]) printf("    qgemm: %s\n", r->error);
    fflush(stdout);
}

static void emit_row(bench_env *e, const bench_row *r) {
    if (e->o->format == OUT_TABLE) {
        if (e->o->host) host_table_row(r);
        else table_row(r);
        return;
    }
    /* Machine-readable output keeps stdout clean: the notes go to stderr. */
    if (e->o->format == OUT_CSV) csv_row(r);
    if (r->error[0]) fprintf(stderr, "qgemm: %dx%dx%d: %s\n", r->m, r->n, r->k, r->error);
    if (!r->c_ran && r->c_note[0])
        fprintf(stderr, "cublasLt: n/a (%s) for %dx%dx%d\n", r->c_note, r->m, r->n, r->k);
}

static void emit_header(bench_env *e, qg_gemm_kind kind, bool first) {
    if (e->o->format == OUT_TABLE && e->o->host) host_header(e, kind, first);
    else if (e->o->format == OUT_TABLE) table_header(kind);
    else if (e->o->format == OUT_CSV && first) csv_header();
}

static qgtk_problem_spec base_spec(const bench_env *e, qg_gemm_kind kind, int m, int n, int k,
                                 int groups) {
    qgtk_problem_spec s = {.kind = kind, .m = m, .n = n, .k = k, .num_groups = groups,
                         .seed = e->o->seed + (uint64_t)e->num_rows,
                         .scale_spread = BENCH_SCALE_SPREAD};
    return s;
}

static void dense_table(bench_env *e) {
    cli_shape defaults[CLI_NUM_DEEPSEEK_SHAPES];
    cli_deepseek_shapes(defaults);
    const cli_shape *shapes = e->o->num_shapes ? e->o->shapes : defaults;
    int count = e->o->num_shapes ? e->o->num_shapes : CLI_NUM_DEEPSEEK_SHAPES;
    emit_header(e, QG_GEMM_DENSE, true);
    for (int i = 0; i < count; i++) {
        bench_row *r = &e->rows[e->num_rows];
        *r = (bench_row){.kind = QG_GEMM_DENSE, .m = shapes[i].m, .valid = shapes[i].m,
                         .n = shapes[i].n, .k = shapes[i].k, .groups = 1};
        qgtk_problem_spec spec = base_spec(e, QG_GEMM_DENSE, r->m, r->n, r->k, 1);
        bench_problem(e, &spec, true, r);
        e->num_rows++;
        emit_row(e, r);
    }
}

/* ---- --chain N: programmatic dependent launch ----------------------------- */

/* N GEMMs of one shape back to back on the stream, each on its own inputs and
 * D (so that no GEMM finds the previous one's B in L2), launched with PDL or
 * without (the context's setting, switched per chain). */
typedef struct {
    qg_context *ctx;
    qgemm_call calls[CHAIN_MAX];
    int count;
    int pdl;
} chain_call;

static qg_status run_chain(void *user, CUstream stream) {
    const chain_call *c = user;
    qg_status st = qg_context_set_pdl(c->ctx, c->pdl);
    for (int i = 0; st == QG_SUCCESS && i < c->count; i++)
        st = run_qgemm((void *)&c->calls[i], stream);
    return st;
}

/* One row of the chain table: the shape's heuristic configuration (or
 * --config), the chain timed without and with PDL in turn (L2 flushed before
 * each chain), per GEMM; the last GEMM's D checked after a PDL chain. */
static void chain_row(bench_env *e, const cli_shape *sh) {
    const int n = e->o->chain;
    qgtk_problem_data *p[CHAIN_MAX] = {0};
    chain_call off = {.ctx = e->ctx, .count = n, .pdl = 0}, on;
    char config[40] = "-", why[NOTE_LEN] = "";
    qgtk_timing t[2];
    double diff = NAN;
    for (int i = 0; i < n; i++) {
        qgtk_problem_spec spec = base_spec(e, QG_GEMM_DENSE, sh->m, sh->n, sh->k, 1);
        spec.seed += (uint64_t)i * 7919;
        if (qgtk_problem_create(&p[i], e->ctx, &spec) != QG_SUCCESS) {
            snprintf(why, sizeof why, "creating the problems: %s", qg_last_error());
            goto done;
        }
    }
    qg_problem q = cli_problem_of(p[0]);
    qg_config cfg;
    const qg_config *force = e->o->have_cfg ? &cfg : NULL;
    if (cli_config_for(e->ctx, &q, e->o->have_cfg ? &e->o->cfg : NULL, &cfg) != QG_SUCCESS) {
        snprintf(why, sizeof why, "configuration: %s", qg_last_error());
        goto done;
    }
    snprintf(config, sizeof config, "%d,%d,%d,%s", cfg.block_m, cfg.block_n, cfg.num_stages,
             cli_cluster_name(&cfg));
    for (int i = 0; i < n; i++)
        off.calls[i] = (qgemm_call){e->ctx, QG_GEMM_DENSE, qgtk_problem_args(p[i]), force};
    on = off;
    on.pdl = 1;
    qgtk_check_result res;
    if (qgtk_problem_poison(e->ctx, p[n - 1], e->stream) != QG_SUCCESS ||
        run_chain(&on, e->stream) != QG_SUCCESS ||
        qgtk_problem_check(e->ctx, p[n - 1], &res) != QG_SUCCESS) {
        snprintf(why, sizeof why, "running and checking the PDL chain: %s", qg_last_error());
        goto done;
    }
    diff = res.diff;
    if (!qgtk_check_passed(&res, CLI_DIFF_BOUND)) {
        char desc[256];
        snprintf(why, sizeof why, "check failed: %s", qgtk_check_describe(&res, desc, sizeof desc));
        goto done;
    }
    qgtk_timed_fn fns[2] = {run_chain, run_chain};
    void *users[2] = {&off, &on};
    if (qgtk_time_interleaved_us(e->ctx, e->stream, e->o->flush, 2, fns, users, e->o->warmup,
                                e->o->runs, t) != QG_SUCCESS)
        snprintf(why, sizeof why, "timing: %s", qg_last_error());
done:
    qg_context_set_pdl(e->ctx, 0);
    char shape[40];
    snprintf(shape, sizeof shape, "%dx%dx%d", sh->m, sh->n, sh->k);
    if (why[0]) {
        printf("%-20s %-16s %s\n", shape, config, why);
        e->chain_failures++;
    } else {
        printf("%-20s %-16s %12.2f %12.2f %8.3fx %10.2e\n", shape, config, t[0].median_us / n,
               t[1].median_us / n, t[0].median_us / t[1].median_us, diff);
    }
    fflush(stdout);
    for (int i = 0; i < n; i++) qgtk_problem_free(p[i]);
}

static void chain_table(bench_env *e) {
    cli_shape defaults[CLI_NUM_DEEPSEEK_SHAPES];
    cli_deepseek_shapes(defaults);
    const cli_shape *shapes = e->o->num_shapes ? e->o->shapes : defaults;
    const int count = e->o->num_shapes ? e->o->num_shapes : CLI_NUM_DEEPSEEK_SHAPES;
    printf("\nprogrammatic dependent launch: chains of %d dense GEMMs back to back, each on its "
           "own A, B and D;\nL2 flushed before each chain (--flush), median of %d chains per "
           "mode, the two modes timed in turn\n", e->o->chain, e->o->runs);
    printf("%-20s %-16s %12s %12s %9s %10s\n", "shape", "bm,bn,st,mc", "off us/GEMM",
           "PDL us/GEMM", "off/PDL", "diff last");
    for (int i = 0; i < count; i++) {
        if (!e->o->num_shapes && shapes[i].m > 128) continue; /* default: the small-M rows */
        fprintf(stderr, "timing chains for %dx%dx%d ...\n", shapes[i].m, shapes[i].n, shapes[i].k);
        chain_row(e, &shapes[i]);
    }
}

static const int contiguous_sets[2][2] = {{4, 8192}, {8, 4096}}; /* groups, rows each */
static const int masked_sets[3][2] = {{1, 1024}, {2, 512}, {4, 256}};

/* Rows per group for a problem spec: g groups of `rows` each (the spec keeps
 * the pointer; one row is built at a time). */
static const int *uniform_rows(int g, int rows) {
    static int rows_of[CLI_MAX_GROUPS];
    for (int i = 0; i < g; i++) rows_of[i] = rows;
    return rows_of;
}

/* One row of the masked table: g groups of m_max rows of which `valid` are
 * valid in each (masked_m), expected_m = valid; the peer is a cuBLASLt call
 * per group over its valid rows. */
static void masked_row(bench_env *e, int g, int m_max, int valid, int n, int k) {
    bench_row *r = &e->rows[e->num_rows];
    *r = (bench_row){.kind = QG_GEMM_GROUPED_MASKED, .m = m_max, .valid = valid, .n = n, .k = k,
                     .groups = g};
    qgtk_problem_spec spec = base_spec(e, QG_GEMM_GROUPED_MASKED, m_max, n, k, g);
    spec.masked_m = uniform_rows(g, valid);
    spec.expected_m = valid;
    bench_problem(e, &spec, true, r);
    e->num_rows++;
    emit_row(e, r);
}

/* One row of the contiguous table: g experts of `rows` rows each (their
 * segments padded to the alignment with -1 rows), beside qgemm dense at the
 * same total M, timed in turn with the grouped GEMM and its peer, run for
 * run. */
static void contiguous_row(bench_env *e, int g, int rows, int n, int k) {
    bench_row *r = &e->rows[e->num_rows];
    *r = (bench_row){.kind = QG_GEMM_GROUPED_CONTIGUOUS, .m = rows, .valid = rows, .n = n, .k = k,
                     .groups = g};
    qgtk_problem_spec spec = base_spec(e, QG_GEMM_GROUPED_CONTIGUOUS, g * rows, n, k, g);
    spec.group_m = uniform_rows(g, rows);
    bench_row dense = {.kind = QG_GEMM_DENSE};
    ready_problem drp = {0};
    qgtk_problem_spec dspec = base_spec(e, QG_GEMM_DENSE, g * rows, n, k, 1);
    /* --host times the grouped call alone */
    e->companion = !e->o->host && prepare(e, &dspec, &dense, &drp) ? &drp.call : NULL;
    e->companion_ran = false;
    bench_problem(e, &spec, true, r);
    e->companion = NULL;
    r->dense_ran = e->companion_ran;
    r->dense_pass = dense.pass && e->companion_ran;
    r->dense_us = e->companion_t.median_us;
    r->dense_flops = dense.flops;
    if (dense.error[0])
        fprintf(stderr, "qgemm: dense %dx%dx%d: %s\n", g * rows, n, k, dense.error);
    qgtk_problem_free(drp.p);
    e->num_rows++;
    emit_row(e, r);
}

/* --grouped-contiguous G,M and --grouped-masked G,M_max[,M]: their tables
 * for each --shape's N and K (its M is not used), or for the --grouped
 * tables' (N, K) pairs. */
static void shape_tables(bench_env *e) {
    const bench_opts *o = e->o;
    const int count = o->num_shapes ? o->num_shapes : 2;
    int nk[CLI_MAX_SHAPES][2];
    for (int i = 0; i < count; i++) {
        nk[i][0] = o->num_shapes ? o->shapes[i].n : cli_grouped_nk[i][0];
        nk[i][1] = o->num_shapes ? o->shapes[i].k : cli_grouped_nk[i][1];
    }
    if (o->contiguous_groups) {
        emit_header(e, QG_GEMM_GROUPED_CONTIGUOUS, true);
        for (int i = 0; i < count; i++)
            contiguous_row(e, o->contiguous_groups, o->contiguous_rows, nk[i][0], nk[i][1]);
    }
    if (o->masked_groups) {
        emit_header(e, QG_GEMM_GROUPED_MASKED, !o->contiguous_groups);
        for (int i = 0; i < count; i++)
            masked_row(e, o->masked_groups, o->masked_rows, o->masked_valid, nk[i][0], nk[i][1]);
    }
}

static void grouped_tables(bench_env *e) {
    emit_header(e, QG_GEMM_GROUPED_CONTIGUOUS, true);
    for (int s = 0; s < 2; s++)
        for (int j = 0; j < 2; j++)
            contiguous_row(e, contiguous_sets[s][0], contiguous_sets[s][1], cli_grouped_nk[j][0],
                           cli_grouped_nk[j][1]);
    emit_header(e, QG_GEMM_GROUPED_MASKED, false);
    for (int s = 0; s < 3; s++)
        for (int j = 0; j < 2; j++)
            masked_row(e, masked_sets[s][0], masked_sets[s][1], masked_sets[s][1],
                       cli_grouped_nk[j][0], cli_grouped_nk[j][1]);
}

int cli_bench(int argc, char **argv) {
    /* --family other than fp8: the other families' bench (bench_families.c),
     * whose options are its own */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--family") && strcmp(argv[i + 1], "fp8"))
            return cli_bench_family(argc, argv);
    bench_opts o;
    int bad = parse_options(argc, argv, &o);
    if (bad) return bad;
    bench_env e;
    memset(&e, 0, sizeof e);
    e.o = &o;
    if (!cli_open_gpu_json(&e.ctx, &e.drv, o.format == OUT_JSON ? "bench" : NULL))
        return CLI_EXIT_NO_GPU;
    qg_context_get_props(e.ctx, &e.props);
    CUdevice cu_device = 0;
    if (!qg__context_cuda(e.ctx, NULL, NULL, &cu_device) ||
        e.drv->cuDeviceGetAttribute(&e.clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, cu_device) !=
            CUDA_SUCCESS)
        e.clock_khz = e.props.clock_khz;
    CUresult cr = e.drv->cuStreamCreate(&e.stream, CU_STREAM_NON_BLOCKING);
    e.rows = calloc(2 * CLI_MAX_SHAPES + 16, sizeof *e.rows); /* two tables of the --shape list */
    if (cr != CUDA_SUCCESS || !e.rows) {
        fprintf(stderr, "qgemm: bench: cannot create a stream or the result table\n");
        free(e.rows);
        cli_close_gpu(e.ctx, e.drv);
        return CLI_EXIT_FAIL;
    }
    if (o.host) snprintf(e.peer_note, sizeof e.peer_note, "not run by --host");
    else if (!o.use_peer) snprintf(e.peer_note, sizeof e.peer_note, "disabled by --no-cublas");
    else if (!(e.peer = lt_peer_open(e.drv, e.peer_note, sizeof e.peer_note)))
        fprintf(stderr, "cublasLt: n/a (%s)\n", e.peer_note);
    if (!o.host) { /* --host times no kernel */
        fprintf(stderr, "measuring copy and write bandwidth ...\n");
        e.copy_gbs = device_bandwidth(&e, false);
        e.write_gbs = device_bandwidth(&e, true);
    }
    if (o.format == OUT_TABLE)
        printf("qgemm bench on %s (%d SMs), seed %llu\n", e.props.name, e.props.sm_count,
               (unsigned long long)o.seed);
    fflush(stdout);

    if (o.grouped) grouped_tables(&e);
    else if (o.masked_groups || o.contiguous_groups) shape_tables(&e);
    else if (!o.chain) dense_table(&e);

    if (o.chain) chain_table(&e);
    else if (o.host && o.format == OUT_JSON) host_json_report(&e);
    else if (o.host) printf("\nqgemm %s on %s (%d SMs); seed %llu\n", qg_version_string(),
                            e.props.name, e.props.sm_count, (unsigned long long)o.seed);
    else if (o.format == OUT_TABLE) table_summary(&e);
    else if (o.format == OUT_JSON) json_report(&e);
    int failures = e.chain_failures;
    for (int i = 0; i < e.num_rows; i++)
        failures += !e.rows[i].pass || (!o.host && e.rows[i].kind == QG_GEMM_GROUPED_CONTIGUOUS &&
                                        !e.rows[i].dense_pass);
    if (failures) fprintf(stderr, "qgemm bench: %d problem(s) FAILED their check or errored\n",
                          failures);
    lt_peer_close(e.peer);
    e.drv->cuStreamDestroy(e.stream);
    free(e.rows);
    cli_close_gpu(e.ctx, e.drv);
    return failures ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
