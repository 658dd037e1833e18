/*
 * qgtk.h -- the testkit (build/libqgemm_testkit.a): what the tests (tests/),
 * the CLI's check and bench (tools/) share and the product does not need:
 * GPU detection, random quantized problems with host and device copies, the
 * exact reference (CPU, and fp64 on the GPU), the accuracy metric, checks,
 * L2 flushes, event timing and fault injection (docs/DESIGN.md §8).
 *
 * It sits above libqgemm: it uses include/qgemm.h and the library's one
 * seam, src/seam.h (the driver table, a context's CUDA context, the JIT for
 * its helper kernels testkit/kernels/ (.cuh), error messages, the fault hook);
 * the library knows nothing of it. Not installed.
 *
 * Invariants:
 *  - every function that touches the device makes ctx's CUcontext current
 *    (push/pop) itself, so callers never need to;
 *  - the host data of a problem is generated deterministically from the spec
 *    (seed included) and independently of the number of threads used;
 *  - a problem's host arrays are the truth; the device copies are uploaded
 *    from them and refreshed by qgtk_problem_update_indices();
 *  - failures return a qg_status with a message (qg_last_error()), as in the
 *    library; nothing here prints but the compile sweeps' progress and verdict
 *    lines (qgtk_compile_many, qgtk_compile_verdict).
 *
 * Typical use (a test):
 *     qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = 257, .n = 576, .k = 400,
 *                             .num_groups = 1, .seed = 1, .scale_spread = 3};
 *     qgtk_problem_data *p;
 *     qgtk_problem_create(&p, ctx, &spec);
 *     qg_gemm_args args = qgtk_problem_args(p);
 *     qgtk_problem_poison(ctx, p, stream);
 *     qg_fp8_gemm_nt(ctx, &args, NULL, stream);
 *     qgtk_check_result res;
 *     qgtk_problem_check(ctx, p, &res);     // synchronizes the context first
 *     ok = qgtk_check_passed(&res, 1e-5);   // diff, worst group, NaN, unwritten, modified
 *     qgtk_problem_free(p);
 */
#ifndef QGTK_H
#define QGTK_H

#include "seam.h" /* qgemm.h, <cuda.h> (types only), the driver table */

#include <stdint.h>

/* ---- threads (testkit/reference.c) ------------------------------------------ */

/* Online CPUs, clamped to 1 .. 64. */
int qgtk_num_workers(void);

typedef void (*qgtk_parallel_fn)(void *user, int64_t index, int worker);
/* Run fn(user, i, worker) for every i in [0, count) on up to max_workers
 * threads (the caller is worker 0; worker < max_workers). Indices are handed
 * out dynamically. Never fails: if threads cannot be created, fewer workers do
 * all the work. @return the number of workers used. */
int qgtk_parallel_for(int64_t count, int max_workers, qgtk_parallel_fn fn, void *user);

/* ---- the exact reference and the accuracy metric (testkit/reference.c) --- */

/*
 * Reference GEMM on the CPU, in double, on exactly dequantized inputs, for
 * host copies of the arguments (same layouts as qg_gemm_args; pointers are
 * host pointers). Writes ref [rows][n] densely (rows = m, or G*m for masked);
 * rows the kernel must leave untouched (padding, masked-out, outside the psum
 * groups) are set to NaN. Dense, contiguous, masked and psum. Any contents of
 * m_indices, masked_m and group_ends are accepted and follow the library's
 * rules (qgtk_row_groups), as the kernel does: they are device data it never
 * checks.
 * @return QG_SUCCESS or QG_ERROR_INVALID_ARGUMENT.
 */
qg_status qgtk_reference_gemm(qg_gemm_kind kind, const qg_gemm_args *host_args, double *ref);

/*
 * The group of every output row under the layout rules of include/qgemm.h,
 * -1 for a row the GEMM leaves untouched (host arrays; rows = m, or G*m for
 * masked; out has that many entries):
 *  dense       0
 *  contiguous  m_indices of the first row of the row's 128-row segment when
 *              in [0, G), else -1 (-1, other negatives, G and past: padding)
 *  masked      r = g*m + i: g when i < masked_m[g] (clamped to [0, m]), else -1
 *  psum        g for rows in [start_g, end_g) of qgtk_psum_bounds, else -1
 * @return QG_SUCCESS, QG_ERROR_INVALID_ARGUMENT (a NULL array or another kind)
 *         or QG_ERROR_OUT_OF_MEMORY.
 */
qg_status qgtk_row_groups(qg_gemm_kind kind, const qg_gemm_args *host_args, int32_t *out);

/* The psum layout's groups for any group_ends (include/qgemm.h): group g has
 * rows [start[g], end[g]), start[0] = 0, start[g] = end[g-1] rounded up to a
 * multiple of 128 (at most m), end[g] = group_ends[g] clamped to
 * [start[g], m]. Never overlapping, whatever the ends. */
void qgtk_psum_bounds(const int32_t *group_ends, int num_groups, int m, int64_t *start,
                      int64_t *end);

/*
 * diff = 1 - 2 sum(x*y) / sum(x^2 + y^2) over n values, in double
 * (docs/DESIGN.md §7). Entries where y is NaN are skipped (rows the kernel
 * must not write). @return diff (0 for identical inputs; NaN if x has a NaN
 * where y does not).
 */
double qgtk_calc_diff(const double *x, const double *y, size_t n);

/* ---- the accuracy metric in parts (testkit/reference.c) ---------------------- */

/* Running sums of qgtk_calc_diff, so a diff can be accumulated over any subset
 * of rows (e.g. one group of a contiguous problem). Zero-initialize. */
typedef struct {
    double xy, xx_yy;
    size_t count;   /* pairs compared (y not NaN) */
    bool nan;       /* some x was NaN where y was not */
} qgtk_diff_acc;
/* Add the pairs (x[i], y[i]), skipping those with y[i] NaN. */
void qgtk_diff_add(qgtk_diff_acc *acc, const double *x, const double *y, size_t n);
/* 1 - 2*xy/(xx+yy); 0 when nothing (or only zeros) was compared; NaN if any x was NaN. */
double qgtk_diff_result(const qgtk_diff_acc *acc);

/* ---- GPU presence (testkit/harness.c) --------------------------------------- */

/* True when the driver loads and some device has compute capability 9.x.
 * Cached after the first call; thread-safe. */
bool qgtk_gpu_available(void);
/* A one-line description: the device found ("GPU 0: NVIDIA H100 ... (sm_90,
 * 132 SMs)") or why there is none ("no CUDA driver: ..."). Static string. */
const char *qgtk_gpu_status_line(void);
/* Ordinal of the first device with compute capability 9.x, or -1. */
int qgtk_gpu_device(void);

/* For tests and tools: a context on qgtk_gpu_device() and a non-blocking
 * stream in it. QG_ERROR_NO_DEVICE (message: qgtk_gpu_status_line()) when
 * there is no usable GPU. */
qg_status qgtk_gpu_session_open(qg_context **ctx, CUstream *stream);
/* The same on CUDA device `device` (the caller knows it is a Hopper one). */
qg_status qgtk_gpu_session_open_on(int device, qg_context **ctx, CUstream *stream);
/* Destroy the stream and the context (either may be NULL). Synchronizes. */
void qgtk_gpu_session_close(qg_context *ctx, CUstream stream);

/* ---- random problems (testkit/harness.c) ------------------------------------ */

/*
 * What to generate. Zero-initialize, then set kind, m, n, k, num_groups, seed.
 *  dense       m = M; num_groups = 1 (0 is taken as 1).
 *  contiguous  num_groups = G experts. Each expert gets group_m[g] real rows
 *              (group_m non-NULL) or a size drawn uniformly in
 *              [0.7, 1.3] * expected_m (expected_m 0: m / G, m being the
 *              intended total). Each segment is then padded with -1 rows to a
 *              multiple of qg_m_alignment_for_contiguous_layout(); the
 *              resulting M_total is p->m (== p->args.m).
 *  masked      m = M_max, num_groups = G. masked_m[g] is taken from masked_m
 *              (non-NULL) or drawn uniformly in [0, m]; with
 *              masked_extremes, two distinct random groups (when G >= 2) get 0
 *              and m. expected_m is passed to the GEMM as its hint
 *              (0: the mean of masked_m, at least 1).
 *  psum        num_groups = G; group sizes as contiguous (group_m, or drawn
 *              around expected_m), each group starting at the previous
 *              group's end rounded up to 128 (padding_blocks is ignored: the
 *              layout has no room for them); group_ends[g] = that start +
 *              the size, M_total = p->m the last end rounded up to 128.
 *
 * Values: each 1x128 block of A and each 128x128 block of B is drawn from a
 * normal distribution times 2^e, e uniform in [-scale_spread, scale_spread];
 * its scale is amax/448 and its codes qg_fp8_e4m3_encode(x / scale), so the
 * codes cover the whole e4m3 range and the scales vary over 2*spread octaves.
 * Padding rows (contiguous -1 rows, masked rows past masked_m) hold random
 * data too, so a kernel that reads them produces visible garbage.
 */
typedef struct {
    qg_gemm_kind kind;
    int m, n, k;
    int num_groups;
    uint64_t seed;
    int lda_pad;        /* extra elements per A row: a multiple of 16 */
    int ldb_pad;        /* extra elements per B row: a multiple of 16 */
    int ldd_pad;        /* extra elements per D row: a multiple of 8 */
    int sfa_ld_pad;     /* extra floats beyond qg_sfa_ld(rows): a multiple of 4 */
    int scale_spread;   /* octaves of scale variation each way; 0 = none */
    int expected_m;     /* contiguous: mean real rows per expert; masked: the hint */
    const int *group_m;   /* contiguous: real rows of each expert, or NULL */
    const int *masked_m;  /* masked: valid rows of each group, or NULL */
    bool masked_extremes; /* masked, random masked_m: include 0 and m */
    bool padding_blocks;  /* contiguous: a 128-row block of -1 rows before every third expert */
} qgtk_problem_spec;

/*
 * A generated problem. Fields are read-only for users except where noted.
 * Host arrays use exactly the layouts of qg_gemm_args (include/qgemm.h).
 */
typedef struct qgtk_problem_data {
    qg_gemm_kind kind;
    int m, n, k, num_groups;   /* m: dense M, contiguous M_total, masked M_max */
    int expected_m;            /* masked: the hint passed to the GEMM */
    int64_t rows;              /* rows of A and D: m, or G*m for masked */
    int64_t lda, ldb, ldd, sfa_ld;
    int kblocks, nblocks;      /* ceil(k/128), ceil(n/128) */

    /* host copies */
    uint8_t *a;          /* [rows][lda] (masked: [G][m][lda]) */
    float *sfa;          /* dense/contiguous [kblocks][sfa_ld]; masked [G][kblocks][sfa_ld] */
    uint8_t *b;          /* [G][n][ldb] */
    float *sfb;          /* [G][nblocks][kblocks] */
    int32_t *m_indices;  /* contiguous: [m]; writable, then qgtk_problem_update_indices */
    int32_t *masked_m;   /* masked: [G]; writable, then qgtk_problem_update_indices */
    int32_t *group_ends; /* psum: [G]; writable, then qgtk_problem_update_indices */
    uint16_t *d;         /* [rows][ldd]: the last D downloaded by check/hash */
    size_t a_bytes, sfa_bytes, b_bytes, sfb_bytes, d_bytes;

    /* device copies (0 until uploaded) */
    qg_context *ctx;     /* the context they were allocated in */
    CUdeviceptr dev_a, dev_sfa, dev_b, dev_sfb, dev_d, dev_m_indices, dev_masked_m,
                dev_group_ends;

    /* reference cache: computed by the first check, reused until the inputs change */
    double *ref;         /* [rows][n], NaN rows = must not be written; NULL until computed */
    bool ref_on_gpu;     /* which reference produced `ref` */
    double *group_diff;  /* [G]: diff of each group's rows, filled by check */
} qgtk_problem_data;

/* Generate the host data only (no GPU needed). */
qg_status qgtk_problem_create_host(qgtk_problem_data **out, const qgtk_problem_spec *spec);
/* Allocate device buffers in ctx and copy the host data up (synchronous). */
qg_status qgtk_problem_upload(qg_context *ctx, qgtk_problem_data *p);
/* create_host + upload. On failure *out is NULL. */
qg_status qgtk_problem_create(qgtk_problem_data **out, qg_context *ctx, const qgtk_problem_spec *spec);
/* Free host and device memory (device memory in p->ctx). Accepts NULL. */
void qgtk_problem_free(qgtk_problem_data *p);

/* Arguments with device pointers, ready for qg_fp8_gemm_nt and the grouped calls. */
qg_gemm_args qgtk_problem_args(const qgtk_problem_data *p);
/* The same arguments with the host copies (d = p->d), for qgtk_reference_gemm. */
qg_gemm_args qgtk_problem_host_args(const qgtk_problem_data *p);

/* After editing p->m_indices, p->masked_m or p->group_ends on the host: copy
 * them to the device (synchronous cuMemcpyHtoD, so do it before enqueuing
 * work that reads them) and drop the cached reference. */
qg_status qgtk_problem_update_indices(qg_context *ctx, qgtk_problem_data *p);

/* Fill the whole D buffer (all rows, all ldd columns) with 0xFF bytes: bf16
 * 0xFFFF, a NaN, on `stream` (stream-ordered, asynchronous). */
qg_status qgtk_problem_poison(qg_context *ctx, qgtk_problem_data *p, CUstream stream);

/* Which reference qgtk_problem_reference / check use. */
typedef enum {
    QGTK_REF_AUTO = 0, /* CPU when rows*n*k <= QGTK_CPU_REFERENCE_MAX_WORK, else GPU */
    QGTK_REF_CPU = 1,
    QGTK_REF_GPU = 2
} qgtk_ref_where;
#define QGTK_CPU_REFERENCE_MAX_WORK ((int64_t)1 << 31)

/* Compute p->ref (host, [rows][n]) now, replacing any cached one. */
qg_status qgtk_problem_reference(qg_context *ctx, qgtk_problem_data *p, qgtk_ref_where where);

typedef struct {
    double diff;             /* qgtk_calc_diff over all rows that must be written */
    double group_diff_max;   /* worst per-group diff (p->group_diff has each) */
    double max_abs_err;      /* max |D - ref| over written elements */
    int64_t checked;         /* elements that must be written (rows x n) */
    int64_t nan_count;       /* NaN among them (still-poisoned ones included) */
    int64_t unwritten_count; /* among them, still exactly the poison pattern */
    int64_t unwritten_row_count;  /* rows holding such elements */
    int64_t unwritten_rows[2];    /* first and last such row (when unwritten_count > 0) */
    int unwritten_cols[2];        /* lowest and highest such column */
    int64_t modified_count;  /* elements that must keep the poison and do not:
                              * skipped rows (any column < ldd) and the ldd
                              * padding columns of written rows */
    uint64_t hash;           /* qgtk_fnv1a64 of all D bytes ([rows][ldd] bf16) */
    bool gpu_reference;      /* the reference came from the GPU kernel */
} qgtk_check_result;

/* Synchronize ctx's context, download D into p->d, compute (or reuse) the
 * reference (QGTK_REF_AUTO) and fill *res and p->group_diff. */
qg_status qgtk_problem_check(qg_context *ctx, qgtk_problem_data *p, qgtk_check_result *res);
/* Synchronize, download D into p->d and hash it (no reference). */
qg_status qgtk_problem_hash(qg_context *ctx, qgtk_problem_data *p, uint64_t *hash);
/* FNV-1a 64 taken over 8-byte words (then the tail bytes) of n bytes:
 * for equality checks of large buffers, not a published digest. */
uint64_t qgtk_fnv1a64(const void *data, size_t n);

/* Launch the GEMM entry point of `kind` (qg_fp8_gemm_nt,
 * qg_m_grouped_fp8_gemm_nt_contiguous or _masked) and return its status. */
qg_status qgtk_gemm_launch(qg_context *ctx, qg_gemm_kind kind, const qg_gemm_args *args,
                          const qg_config *cfg, CUstream stream);
/* Poison D, launch p's GEMM with cfg (NULL = heuristic) on stream, then
 * qgtk_problem_check. A failing launch returns its status (res zeroed). */
qg_status qgtk_problem_run_check(qg_context *ctx, qgtk_problem_data *p, const qg_config *cfg,
                                CUstream stream, qgtk_check_result *res);
/* Programmatic dependent launch, end to end (tests; testkit/kernels/pdl_probe.cuh):
 * the operand ('A' or 'B') is zeroed, then a slow one-CTA kernel that lets
 * its dependents start at once copies the real one back. Control: a
 * PDL-launched kernel that reads the operand without waiting counts the
 * 16-byte words it saw differ (*control_differing; > 0 shows the dependent ran
 * during the copy). Then the same again with p's GEMM (cfg, NULL = heuristic)
 * behind the copy, launched the way ctx says (qg_context_set_pdl), and
 * qgtk_problem_check into res. Dense or contiguous problems, uploaded. */
qg_status qgtk_pdl_probe(qg_context *ctx, qgtk_problem_data *p, const qg_config *cfg,
                        CUstream stream, char operand, unsigned *control_differing,
                        qgtk_check_result *res);
/* The pass rule of the GPU tests: diff and every group's diff below `bound`
 * (1e-5 against this reference), no NaN, nothing unwritten, nothing modified
 * that must keep the poison. */
bool qgtk_check_passed(const qgtk_check_result *res, double bound);
/* "diff 1.2e-06 (worst group 2.0e-06), nan 0, unwritten 0, modified 0 of N
 * checked, max abs err 0.01, cpu reference" into buf. @return buf. */
const char *qgtk_check_describe(const qgtk_check_result *res, char *buf, size_t len);

/* ---- GPU reference (testkit/harness.c + testkit/kernels/reference.cuh) --- */

/* The fp64 reference on the device: ref is a device buffer of rows*n doubles
 * ([rows][n]; rows = m, or G*m for masked); rows that must not be written get
 * NaN. dev_args holds device pointers (d and ldd are ignored). The kernel is
 * compiled through ctx->jit. Enqueued on `stream`, then the stream is
 * synchronized (the module is unloaded before returning). Dense, contiguous,
 * masked and psum; any m_indices / masked_m / group_ends follow the rules of
 * qgtk_row_groups (out-of-range values give NaN rows where the GEMM skips). */
qg_status qgtk_reference_gemm_device(qg_context *ctx, qg_gemm_kind kind,
                                    const qg_gemm_args *dev_args, CUdeviceptr ref,
                                    CUstream stream);

/* ---- compiling many kernels at once (testkit/harness.c) ---------------------- */

/* qg_compile(ctx, &problems[i], cfgs ? &cfgs[i] : NULL, NULL) for i < count on
 * qgtk_num_workers() threads, to warm the kernel cache before a sweep.
 * statuses[i] receives each result (may be NULL). Prints a progress line
 * ("... compiled N of M kernels, T s") on stdout per 20 kernels.
 * @return the number of failures. */
int qgtk_compile_many(qg_context *ctx, const qg_problem *problems, const qg_config *cfgs,
                     int count, qg_status *statuses);

/* ---- offline compile sweeps (testkit/compile_sweep.c) ----------------------- */

/* The PTX features (qg_kernel_info's ptx_has_*) a sweep asks of a variant. */
enum {
    QGTK_PTX_WGMMA = 1u << 0,
    QGTK_PTX_TMA_LOAD = 1u << 1,
    QGTK_PTX_TMA_STORE = 1u << 2,
    QGTK_PTX_SETMAXNREG = 1u << 3,
    QGTK_PTX_STMATRIX = 1u << 4,
    QGTK_PTX_MULTICAST = 1u << 5,
};

/* One CPU test compiling many kernel variants through the library's JIT on
 * an offline context (sm_90a, no GPU) with a scratch kernel cache, so that
 * each variant is compiled, not found. */
typedef struct {
    qg_context *ctx;       /* the offline context */
    char cache_dir[64];    /* its kernel cache (QGEMM_CACHE_DIR), removed by close */
    int progress_every;    /* a progress line per this many variants (0: none) */
    int verbose;           /* 1: a line for every clean variant too (its registers) */
    unsigned warnings_seen; /* NVRTC warnings counted so far (qg__jit_warnings) */
    int checked, compiled, failures;
    double start_s;
} qgtk_compile_sweep;

/* Create the scratch cache directory, point QGEMM_CACHE_DIR at it (left set
 * after close), create s->ctx. On failure nothing is left behind. */
qg_status qgtk_compile_sweep_open(qgtk_compile_sweep *s, int progress_every, int verbose);
/* Destroy s->ctx and remove the cache directory. */
void qgtk_compile_sweep_close(qgtk_compile_sweep *s);
/* The verdict on one variant (`what` names it) whose compile returned st
 * and, on success, reported *info: clean when it compiled, ptxas reports no
 * spill stores or loads, no stack frame and registers > 0, the PTX has every
 * feature of need_ptx and none of refuse_ptx (QGTK_PTX_*), and NVRTC logged
 * no warning since the sweep's previous variant. Counts the variant in s and
 * prints (stdout, as the tests' own lines) one line per finding:
 * "    <what>: <status>: <message>", "    <what>: regs R spills S/L stack F;
 * PTX lacks ...; PTX has ...", "    <what>: the compile logged a warning
 * (...)"; a progress line per s->progress_every variants.
 * @return 1 clean, 0 not. */
int qgtk_compile_verdict(qgtk_compile_sweep *s, const char *what, qg_status st,
                         const qg_kernel_info *info, unsigned need_ptx, unsigned refuse_ptx);

/* ---- timing (testkit/harness.c) --------------------------------------------- */

/* A device buffer of 2x the L2 size; writing it evicts L2.
 *   QGTK_L2_FLUSH_WRITE  the write alone: L2 is left full of the buffer's dirty
 *                      lines, which the timed kernel then writes back to DRAM
 *                      as its reads evict them (what the bench did before
 *                      2026-11-22);
 *   QGTK_L2_FLUSH_CLEAN  the write, then a read of the same buffer
 *                      (testkit/kernels/l2_flush.cuh): the write-backs happen before
 *                      the timed region and L2 holds clean, unrelated lines. */
typedef enum { QGTK_L2_FLUSH_WRITE = 0, QGTK_L2_FLUSH_CLEAN = 1 } qgtk_l2_flush_mode;
typedef struct qgtk_l2_flusher qgtk_l2_flusher;
qg_status qgtk_l2_flusher_create(qg_context *ctx, qgtk_l2_flush_mode mode, qgtk_l2_flusher **out);
/* Enqueue the flush (write, and for CLEAN the read) on `stream`. */
qg_status qgtk_l2_flush(qgtk_l2_flusher *f, CUstream stream);
void qgtk_l2_flusher_destroy(qgtk_l2_flusher *f);

/* The work to time: enqueue it on `stream`; return its status. */
typedef qg_status (*qgtk_timed_fn)(void *user, CUstream stream);

typedef struct {
    double median_us, min_us, max_us, mean_us;
    int runs;
} qgtk_timing;

/* Run fn `warmup` times, then `runs` times (>= 1), each timed with CUDA events
 * around fn alone, with an L2 flush enqueued before each timed run (outside
 * the events). Synchronizes `stream`. */
qg_status qgtk_time_us(qg_context *ctx, CUstream stream, qgtk_l2_flush_mode flush, qgtk_timed_fn fn,
                      void *user, int warmup, int runs, qgtk_timing *out);
/* qgtk_time_us for `count` (1..QGTK_TIME_MAX_FNS) functions timed in turn:
 * round i runs fns[0], fns[1], ... once each (each after an L2 flush), so a
 * drift of clocks or load during the measurement reaches all of them alike.
 * outs[f] is fns[f]'s timing. */
#define QGTK_TIME_MAX_FNS 4
qg_status qgtk_time_interleaved_us(qg_context *ctx, CUstream stream, qgtk_l2_flush_mode flush,
                                  int count, const qgtk_timed_fn *fns, void *const *users,
                                  int warmup, int runs, qgtk_timing *outs);

/* ---- helper kernels (testkit/kernels/ (.cuh)) --------------------------------- */

/* The text of a helper kernel ("reference.cuh", "l2_flush.cuh",
 * "pdl_probe.cuh"): a self-contained CUDA source, compiled through the
 * library's JIT (qg__context_compile_source). NULL for an unknown name. */
const char *qgtk_kernel_source(const char *name);

/* ---- scratch device buffers (testkit/harness.c) ---------------------------- */

/* bytes + 16 bytes of device memory in ctx (the 16: room for an overrun to land
 * in poison), all 0xFF; 0 when it cannot be allocated or set. */
CUdeviceptr qgtk_device_poisoned(qg_context *ctx, size_t bytes);
/* bytes + 16 bytes of device memory in ctx, the first `bytes` copied from host;
 * 0 on failure. Free either with the driver's cuMemFree. */
CUdeviceptr qgtk_device_upload(qg_context *ctx, const void *host, size_t bytes);

/* ---- memory figures (testkit/harness.c) ------------------------------------ */

/* Resident set size of this process in bytes (/proc/self/statm), 0 when it
 * cannot be read. */
size_t qgtk_host_rss_bytes(void);
/* Free and total memory of ctx's device (cuMemGetInfo); either may be NULL. */
qg_status qgtk_device_memory(qg_context *ctx, size_t *free_bytes, size_t *total_bytes);

/* ---- files (testkit/harness.c) --------------------------------------------- */

/* Remove the directory tree at `dir`, best effort (what cannot be removed
 * stays; the walk goes on). The tests' scratch cache directories. */
void qgtk_remove_tree(const char *dir);

/* ---- fault injection (testkit/harness.c) ---------------------------------- */

/* Make the library's JIT refuse every GEMM kernel with a block_m x block_n
 * tile, as it refuses one that spills (QG_ERROR_COMPILE, the message naming
 * the tile); qgtk_refuse_tile(0, 0) ends it. Process-wide: call it around
 * the calls under test, on one thread. */
void qgtk_refuse_tile(int block_m, int block_n);

#endif /* QGTK_H */
