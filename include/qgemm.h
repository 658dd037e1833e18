/*
 * qgemm.h -- block-scaled FP8 GEMMs for NVIDIA Hopper (sm_90a).
 *
 * The whole public API of qgemm. Everything here is plain C11; the header
 * includes no CUDA header. Streams are taken as `struct CUstream_st *`, which
 * is the type behind both the driver's CUstream and the runtime's
 * cudaStream_t, so either can be passed directly (NULL = legacy stream).
 *
 * What it computes (dense "NT", both operands K-major):
 *
 *   D[m, n] = sum_k (A[m, k] * SFA[m, k/128]) * (B[n, k] * SFB[n/128, k/128])
 *
 *   A    M x K  e4m3, row-major, row stride lda (elements = bytes)
 *   SFA  float, one scale per 1x128 block of a row, stored M-major:
 *        sfa[kb * sfa_ld + m], kb < ceil(K/128), sfa_ld >= M, sfa_ld % 4 == 0
 *        (qg_sfa_ld() gives the smallest legal sfa_ld)
 *   B    N x K  e4m3, row-major, row stride ldb
 *   SFB  float, one scale per 128x128 block, row-major, contiguous:
 *        sfb[(n/128) * ceil(K/128) + kb]
 *   D    M x N  bf16, row-major, row stride ldd (elements)
 *
 * Conventions
 *  - Every function returns a qg_status (or a value documented otherwise).
 *    On failure, qg_last_error() returns a message for the calling thread
 *    that names the argument, what was expected and what was given.
 *  - Functions never exit, abort or print (unless QGEMM_JIT_DEBUG or
 *    QGEMM_PRINT_CONFIG is set in the environment).
 *  - A GEMM call that fails validation writes no output memory.
 *  - GEMM calls are stream-ordered: no hidden allocation, no synchronization,
 *    and the host never reads device memory, so they are CUDA-graph
 *    capturable once the kernel is compiled and loaded: call qg_compile (or
 *    the GEMM once) outside the capture.
 *  - Thread safety: a qg_context may be used from several threads at once.
 */
#ifndef QGEMM_H
#define QGEMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The type behind CUstream and cudaStream_t. */
struct CUstream_st;

#if defined(__GNUC__) && (__GNUC__ >= 4)
#define QG_API __attribute__((visibility("default")))
#else
#define QG_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

/* The version of this header; qg_version() and qg_version_string() give the
 * version of the library actually linked. */
#define QG_VERSION_MAJOR 0
#define QG_VERSION_MINOR 5
#define QG_VERSION_PATCH 0
#define QG_VERSION_NUMBER \
    (QG_VERSION_MAJOR * 10000 + QG_VERSION_MINOR * 100 + QG_VERSION_PATCH)
#define QG_VERSION_STRING "0.5.0"

/** @return QG_VERSION_NUMBER of the library actually linked. */
QG_API unsigned qg_version(void);
/** @return QG_VERSION_STRING of the library actually linked (static string). */
QG_API const char *qg_version_string(void);

/* ------------------------------------------------------------------------ */
/* Status                                                                    */
/* ------------------------------------------------------------------------ */

/* Values are stable: they never change meaning between versions. */
typedef enum {
    QG_SUCCESS = 0,                /* no error */
    QG_ERROR_INVALID_ARGUMENT = 1, /* NULL pointer, bad stride, misalignment ... */
    QG_ERROR_UNSUPPORTED = 2,      /* valid request this build cannot do (shape, layout, config) */
    QG_ERROR_NO_DRIVER = 3,        /* libcuda.so.1 missing or too old */
    QG_ERROR_NO_DEVICE = 4,        /* no CUDA device, bad ordinal, or offline context */
    QG_ERROR_WRONG_ARCH = 5,       /* device is not sm_90 (Hopper) */
    QG_ERROR_COMPILE = 6,          /* NVRTC missing or failed, or ptxas reported spills */
    QG_ERROR_LAUNCH = 7,           /* module load or kernel launch failed */
    QG_ERROR_OUT_OF_MEMORY = 8,    /* host or device allocation failed */
    QG_ERROR_CUDA = 9,             /* any other CUDA driver error */
    QG_ERROR_INTERNAL = 10         /* a bug in qgemm: please report it */
} qg_status;

/** @return a static, non-empty description of `status` (also for unknown values). */
QG_API const char *qg_status_string(qg_status status);

/**
 * @return the message of the last failure on the calling thread ("" if none
 *         since the thread started). Valid until the thread's next qgemm call.
 */
QG_API const char *qg_last_error(void);

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

/* Properties of a device, as the configuration heuristic sees them.
 * dram_gbps (since 0.5.0) is 2 x memory clock x bus width as the driver
 * reports them (3352 on an H100 SXM, 4915 on an H200): whether a small dense
 * GEMM splits K over a cluster depends on it. */
typedef struct {
    int sm_count;              /* multiprocessors */
    int cc_major, cc_minor;    /* compute capability (9.0 for Hopper) */
    size_t smem_optin_bytes;   /* opt-in shared memory per block (232448 on H100) */
    size_t l2_bytes;           /* L2 cache size */
    int clock_khz;             /* SM clock (0 when unknown) */
    char name[128];            /* device name ("offline" for offline contexts) */
    int dram_gbps;             /* peak DRAM GB/s; 0: unknown, taken as an H100's 3352 (0.5.0) */
} qg_device_props;

/* A handle on one CUDA device, or on an offline description of one: its
 * properties, SM limit and PDL setting, compiled kernels and loaded modules.
 * Made by qg_context_create or qg_context_create_offline, freed by
 * qg_context_destroy; usable from several threads at once. */
typedef struct qg_context qg_context;

/**
 * Create a context on CUDA device `device` (an ordinal). The context retains
 * the device's primary context (the one the CUDA runtime and PyTorch use),
 * so pointers from cudaMalloc / torch work directly.
 * @return QG_SUCCESS and *out set; on failure *out is NULL and the status is
 *         QG_ERROR_NO_DRIVER, QG_ERROR_NO_DEVICE, QG_ERROR_WRONG_ARCH,
 *         QG_ERROR_INVALID_ARGUMENT (out NULL, device < 0) or QG_ERROR_CUDA.
 */
QG_API qg_status qg_context_create(qg_context **out, int device);

/**
 * Create an offline context: it compiles kernels and chooses configurations
 * for the described device but cannot launch (GEMM calls return
 * QG_ERROR_NO_DEVICE). Needs no driver and no GPU. Use it to warm the
 * on-disk kernel cache on a build machine. `props` NULL means an H100 SXM
 * (132 SMs, sm_90, 232448 bytes of shared memory, 50 MiB L2).
 * @return QG_SUCCESS, or QG_ERROR_INVALID_ARGUMENT for a NULL out or
 *         nonsensical props, QG_ERROR_WRONG_ARCH for cc != 9.0.
 */
QG_API qg_status qg_context_create_offline(qg_context **out, const qg_device_props *props);

/** Destroy a context; accepts NULL. Waits for nothing: finish your streams first. */
QG_API void qg_context_destroy(qg_context *ctx);

/** @return QG_SUCCESS and *out filled, or QG_ERROR_INVALID_ARGUMENT. */
QG_API qg_status qg_context_get_props(const qg_context *ctx, qg_device_props *out);

/**
 * Limit the number of SMs the persistent kernels use (e.g. to leave room for
 * a communication kernel). 0 restores all SMs. Multicast and split-K run
 * 2-CTA clusters: below 2 SMs the heuristic never picks them, and a forced
 * configuration with either is refused (QG_ERROR_UNSUPPORTED).
 * @return QG_SUCCESS, or QG_ERROR_INVALID_ARGUMENT when num_sms < 0 or
 *         num_sms > the device's SM count.
 */
QG_API qg_status qg_context_set_num_sms(qg_context *ctx, int num_sms);
/** @return the number of SMs kernels use, or -1 when ctx is NULL. */
QG_API int qg_context_get_num_sms(const qg_context *ctx);

/**
 * Launch this context's GEMMs with programmatic dependent launch (PDL; since
 * 0.2.1). A GEMM may then be scheduled while the kernel before it on the
 * stream is still running, and set up its shared memory and barriers in that
 * time; before it reads any input or writes D it waits (griddepcontrol.wait)
 * until that kernel has completed and its memory operations are visible, so
 * the inputs may come from it. (A dense GEMM of one M block asks for the first
 * K blocks of B to be prefetched into L2 before that wait, since 0.2.3: a
 * hint only, L2 being where every write lands, so B may come from that kernel
 * too.) Each GEMM also lets the next PDL-launched
 * kernel on its stream be scheduled early; such a kernel must wait the same
 * way before it reads D (kernels launched without PDL are not affected).
 * Works under CUDA graph capture. Off (0) by default.
 * @return QG_SUCCESS, or QG_ERROR_INVALID_ARGUMENT when ctx is NULL or enable
 *         is not 0 or 1.
 */
QG_API qg_status qg_context_set_pdl(qg_context *ctx, int enable);
/** @return 1 when this context launches with PDL, 0 when not, -1 when ctx is NULL. */
QG_API int qg_context_get_pdl(const qg_context *ctx);

/* ------------------------------------------------------------------------ */
/* Problems and configurations                                               */
/* ------------------------------------------------------------------------ */

/* Which GEMM a qg_problem describes; each kind has its own entry point and
 * layout (see qg_gemm_args). */
typedef enum {
    QG_GEMM_DENSE = 0,              /* one A times one B: D = A B^T */
    QG_GEMM_GROUPED_CONTIGUOUS = 1, /* MoE prefill/training: m_indices per row */
    QG_GEMM_GROUPED_MASKED = 2,     /* MoE decoding: masked_m per group */
    QG_GEMM_GROUPED_PSUM = 3,       /* contiguous rows, group_ends per group (since 0.4.0) */
    QG_GEMM_WGRAD = 4,              /* weight gradient: A and B scaled per 1x128, FP32 D,
                                       optionally D = C + A B^T (since 0.4.0) */
    QG_GEMM_K_GROUPED = 5,          /* the experts' weight gradients, groups splitting K:
                                       D[g] = (C[g] +) A_g B_g^T, FP32 (since 0.4.0) */
    QG_GEMM_FP8_BATCHED = 6         /* G independent GEMMs in one launch, any batch strides:
                                       qg_batched_fp8_gemm_nt (since 0.6.0) */
} qg_gemm_kind;

/* How the two CTAs of a cluster share operand tiles (qg_config.multicast). */
typedef enum {
    QG_MULTICAST_NONE = 0, /* no sharing: each CTA loads its own A and B tiles */
    QG_MULTICAST_A = 1, /* 2-CTA cluster: the pair shares its A tile (same m-block) */
    QG_MULTICAST_B = 2  /* 2-CTA cluster: the pair shares its B tile (same n-block) */
} qg_multicast;

/*
 * The shape of a problem, as far as kernel selection needs it.
 *  dense:      m = M, num_groups = 1
 *  contiguous: m = M_total (all experts' rows), num_groups = G
 *  masked:     m = M_max (rows per group), num_groups = G, expected_m = hint
 *  psum:       m = M_total, num_groups = G, expected_m = hint (rows per group)
 *  wgrad:      m = M, num_groups = 1, accumulate = 1 for D = C + A B^T
 *  k-grouped:  m = M, k = the sum of the groups' K, num_groups = G, accumulate
 *              as wgrad (the heuristic takes k / G as a group's K)
 *  batched:    m = M (rows of every batch), num_groups = G (1..4096)
 */
typedef struct {
    qg_gemm_kind kind;
    int m, n, k;
    int num_groups;
    int expected_m; /* masked and psum: typical rows per group, 0..m (0 = use m, psum:
                       m / num_groups; > m is QG_ERROR_INVALID_ARGUMENT in every call) */
    int accumulate; /* wgrad, k-grouped: 0 = D = A B^T, 1 = D = C + A B^T (since 0.4.0) */
} qg_problem;

/* A kernel configuration. Zero-initialize and set what you want to force. */
typedef struct {
    int block_m;        /* 64, 128 or 256 */
    int block_n;        /* multiple of 16, 16..256 within the register budget */
    int num_stages;     /* 1..32 shared-memory pipeline stages; 0 = most that fit */
    qg_multicast multicast;
    int swizzle_group;  /* blocks per scheduler swizzle group; 0 = the library's
                           (16; 1 for dense M <= 256 without multicast) */
    int split_k;        /* 0 or 1 = none; 2 = the two CTAs of a cluster share each tile,
                           each summing half of K (dense, multicast none; 0.2.0) */
    int num_sms;        /* filled by selection: persistent grid size */
    size_t smem_bytes;  /* filled by selection: dynamic shared memory */
} qg_config;

/**
 * Choose the configuration the library would use for `problem` on ctx's
 * device (docs/DESIGN.md §5). Works on offline contexts. (Should the JIT
 * refuse its kernel for this N and K, qg_compile and the GEMM calls go on
 * to the next configuration the heuristic ranks.)
 * QGEMM_PRINT_CONFIG=1 prints each choice to stderr.
 * @return QG_SUCCESS and *out set, QG_ERROR_INVALID_ARGUMENT or QG_ERROR_UNSUPPORTED.
 */
QG_API qg_status qg_select_config(const qg_context *ctx, const qg_problem *problem,
                                  qg_config *out);

/**
 * Check a forced configuration against a problem and the device and fill in
 * the derived fields (num_stages when 0, swizzle_group when 0, split_k when
 * 0, num_sms, smem_bytes).
 * @return QG_SUCCESS, or QG_ERROR_UNSUPPORTED with a message saying which
 *         field is out of range.
 */
QG_API qg_status qg_complete_config(const qg_context *ctx, const qg_problem *problem,
                                    qg_config *cfg);

/* What the run-time compiler reports for one kernel. */
typedef struct {
    int registers;          /* per thread, at launch (ptxas "Used N registers") */
    int spill_store_bytes;  /* ptxas: bytes spill stores */
    int spill_load_bytes;   /* ptxas: bytes spill loads */
    int stack_frame_bytes;  /* ptxas: bytes stack frame (local memory) */
    int cache_hit;          /* 0 = compiled now, 1 = memory cache, 2 = disk cache */
    double compile_ms;      /* wall time of this call (lookup or compile) */
    int ptx_has_wgmma, ptx_has_tma_load, ptx_has_tma_store,
        ptx_has_setmaxnreg, ptx_has_stmatrix, ptx_has_multicast;
    char key[65];           /* cache key (hex) */
} qg_kernel_info;

/**
 * Compile (or find in the memory/disk cache) the kernel for `problem` with
 * `cfg` (NULL = the selected configuration). Works on offline contexts. On a
 * device context it also loads the kernel, so that the first GEMM call of
 * this problem neither compiles nor loads a module (which can synchronize
 * the device): call it before CUDA-graph capture or latency-critical use.
 * A kernel whose ptxas report shows spills or a stack frame is rejected:
 * with `cfg` given, as QG_ERROR_COMPILE; with cfg NULL, the next
 * configuration the heuristic ranks is compiled instead (up to three times).
 * `info` may be NULL.
 * @return QG_SUCCESS, QG_ERROR_INVALID_ARGUMENT, QG_ERROR_UNSUPPORTED,
 *         QG_ERROR_COMPILE.
 */
QG_API qg_status qg_compile(qg_context *ctx, const qg_problem *problem, const qg_config *cfg,
                            qg_kernel_info *info);

/* ------------------------------------------------------------------------ */
/* GEMMs                                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Arguments of every FP8 GEMM. Strides are in elements. All pointers must
 * be 16-byte aligned device pointers of the context's device (memory of
 * another device, even one reachable through peer access, or host memory is
 * refused: QG_ERROR_INVALID_ARGUMENT naming the argument and both devices;
 * so is a stream of another device's context); lda, ldb (bytes = elements) and
 * ldd * 2 must be multiples of 16; K must be a multiple of 16 and N of 8.
 *
 *  dense       a [m][lda]  sfa [ceil(k/128)][sfa_ld]  b [n][ldb]
 *              sfb [ceil(n/128)][ceil(k/128)]  d [m][ldd]
 *  contiguous  as dense with m = M_total, plus b [G][n][ldb] (groups packed:
 *              group stride n*ldb), sfb [G][ceil(n/128)][ceil(k/128)],
 *              m_indices [m] (int32, device): expert of each row, -1 = padding
 *              row (its D row is left untouched). Each expert's rows start at
 *              a multiple of qg_m_alignment_for_contiguous_layout().
 *              (Since 0.4.0, as DeepGEMM: every row of a 128-row segment
 *              whose first row names expert g is written, its -1 rows with
 *              A_row B_g^T, zero for zero rows of A; segments whose first row
 *              is -1 are left untouched.) Only the first row of each 128-row
 *              segment is read; a segment whose first row holds any value
 *              outside [0, G) (-1, -2, G, INT_MAX, ...) is padding: skipped,
 *              its D rows left untouched (the host cannot check device
 *              data, so no value there is an error).
 *  masked      a [G][m][lda] (m = M_max), sfa [G][ceil(k/128)][sfa_ld],
 *              b, sfb as contiguous, d [G][m][ldd], masked_m [G] (int32,
 *              device): valid rows of each group, clamped to [0, M_max] (a
 *              negative count is 0, one past M_max is M_max; rows past it are
 *              left untouched), expected_m: host hint for tile selection.
 *  psum        as contiguous, without m_indices: group_ends [G] (int32,
 *              device, DeepGEMM's psum layout): group g has rows
 *              [start_g, end_g) with start_0 = 0, start_g = end_{g-1}
 *              rounded up to a multiple of 128 (at most m), and end_g =
 *              group_ends[g] clamped to [start_g, m]; every other row of D is
 *              left untouched. For valid ends (non-decreasing, each at or
 *              past its group's start) end_g = group_ends[g]; for any ends
 *              (negative, decreasing, past m) the groups never overlap: an
 *              end below its start makes an empty group.
 *  wgrad       dense a, sfa, b; sfb [ceil(k/128)][sfb_ld] (one scale per
 *              column of B per 128 of K, N-major like sfa), d FP32 [m][ldd]
 *              (ldd * 4 a multiple of 16); c NULL: D = A B^T; c == d (same
 *              pointer, ldc == ldd): D += A B^T in place, by TMA reduce-add
 *              in L2 (the SMs never read D); c another FP32 [m][ldc] array
 *              not overlapping D: it is first copied into D on the stream.
 *  k-grouped   G = num_groups groups splitting K, K_g = ks[g] (a host array
 *              of G values, each a multiple of 128, 0 = an empty group; k =
 *              their sum): a holds A_g [m][K_g] (rows K_g bytes apart) at
 *              byte m * (K_0 + ... + K_{g-1}), b likewise B_g [n][K_g] at
 *              n * (K_0 + ...) (lda, ldb unused); sfa [k/128][sfa_ld] and
 *              sfb [k/128][sfb_ld] as wgrad over the whole K (group g's
 *              scales in its K blocks); d FP32 [G][m][ldd] (group g at row
 *              g * m); c as wgrad, over all G * m rows ([G][m][ldc]). An
 *              empty group's D is C (accumulating) or zero.
 */
typedef struct {
    int m, n, k;
    int num_groups;          /* 1 for dense */
    const void *a;           /* e4m3 */
    int64_t lda;
    const float *sfa;
    int64_t sfa_ld;
    const void *b;           /* e4m3 */
    int64_t ldb;
    const float *sfb;
    void *d;                 /* bf16 */
    int64_t ldd;
    const int32_t *m_indices; /* contiguous only */
    const int32_t *masked_m;  /* masked only */
    int expected_m;           /* masked and psum; 0 = m (psum: m / num_groups) */
    /* since 0.4.0 (zero-initialize the struct: older callers get zeros) */
    const int32_t *group_ends; /* psum only */
    const float *c;            /* wgrad only: NULL, d, or an FP32 [m][ldc] array */
    int64_t ldc;
    int64_t sfb_ld;            /* wgrad, k-grouped: >= n, a multiple of 4 */
    const int32_t *ks;         /* k-grouped only: host array, K of each group */
} qg_gemm_args;

/**
 * Dense D = (A*SFA) (B*SFB)^T in bf16 on `stream`.
 * `cfg` NULL = heuristic; otherwise a forced configuration (see qg_config).
 * @return QG_SUCCESS (the kernel is enqueued), QG_ERROR_INVALID_ARGUMENT,
 *         QG_ERROR_UNSUPPORTED, QG_ERROR_NO_DEVICE (offline context),
 *         QG_ERROR_COMPILE, QG_ERROR_LAUNCH.
 */
QG_API qg_status qg_fp8_gemm_nt(qg_context *ctx, const qg_gemm_args *args, const qg_config *cfg,
                                struct CUstream_st *stream);

/** Grouped GEMM, contiguous layout (see qg_gemm_args). @return as qg_fp8_gemm_nt. */
QG_API qg_status qg_m_grouped_fp8_gemm_nt_contiguous(qg_context *ctx, const qg_gemm_args *args,
                                                     const qg_config *cfg,
                                                     struct CUstream_st *stream);

/** Grouped GEMM, masked layout (see qg_gemm_args). @return as qg_fp8_gemm_nt. */
QG_API qg_status qg_m_grouped_fp8_gemm_nt_masked(qg_context *ctx, const qg_gemm_args *args,
                                                 const qg_config *cfg,
                                                 struct CUstream_st *stream);

/** Grouped GEMM, psum layout (DeepGEMM's use_psum_layout; see qg_gemm_args).
 *  Since 0.4.0. @return as qg_fp8_gemm_nt. */
QG_API qg_status qg_m_grouped_fp8_gemm_nt_psum(qg_context *ctx, const qg_gemm_args *args,
                                               const qg_config *cfg, struct CUstream_st *stream);

/** Weight-gradient GEMM (DeepGEMM's 1D1D kernel, recipe (1, 1, 128)): A and B
 *  scaled per 1x128, FP32 D = (C +) A B^T (see qg_gemm_args). Since 0.4.0.
 *  @return as qg_fp8_gemm_nt. */
QG_API qg_status qg_fp8_gemm_nt_wgrad(qg_context *ctx, const qg_gemm_args *args,
                                      const qg_config *cfg, struct CUstream_st *stream);

/** The experts' weight gradients in one launch (DeepGEMM's
 *  k_grouped_fp8_gemm_nt_contiguous on SM90, recipe (1, 1, 128)): for every
 *  group g, FP32 D[g] = (C[g] +) A_g B_g^T, the groups splitting K (see
 *  qg_gemm_args). Up to 32 non-empty groups run in one kernel launch (more in
 *  several, on the same stream). Since 0.4.0. @return as qg_fp8_gemm_nt. */
QG_API qg_status qg_k_grouped_fp8_gemm_nt_contiguous(qg_context *ctx, const qg_gemm_args *args,
                                                     const qg_config *cfg,
                                                     struct CUstream_st *stream);

/**
 * Batched FP8 GEMM in one launch (DeepGEMM's fp8_bmm, recipe (1, 128, 128)):
 * for every batch g < args->num_groups (1..4096), bf16
 * D_g = (A_g*SFA_g) (B_g*SFB_g)^T, each batch as the dense GEMM (m, n, k
 * common; lda, ldb, ldd the row strides of every batch), where A_g starts
 * batch_stride_a elements (bytes) after A_{g-1}, B_g batch_stride_b
 * elements after B_{g-1} and D_g batch_stride_d elements (2 bytes each)
 * after D_{g-1}; sfa [G][ceil(k/128)][sfa_ld] and sfb [G][ceil(n/128)]
 * [ceil(k/128)] packed, as the masked layout's (qg_gemm_args). The batch
 * strides are any values >= 0 whose bytes are multiples of 16 (< 2^40
 * bytes): e.g. DeepGEMM's einsum 'bhr,hdr->bhd' as H batches of
 * x [B][H][R] (batch stride R, lda H * R), y [H][D][R] (batch stride D * R,
 * ldb R) and z [B][H][D] (batch stride D, ldd H * D): no copy of x or z.
 * Only the m x n elements of each D_g are written (the columns between
 * batches of an interleaved D are left untouched); batches of D must not
 * overlap one another (not checked); D may overlap no input (refused).
 * m_indices, masked_m, group_ends, c and ks must be NULL, expected_m 0.
 * k must be a positive multiple of 16, as the dense GEMM's; m = 0 returns
 * at once. A forced `cfg` has the masked layout's tiles; multicast A only
 * (a pair shares its m-block and batch), no split-K. Since 0.6.0.
 * @return as qg_fp8_gemm_nt.
 */
QG_API qg_status qg_batched_fp8_gemm_nt(qg_context *ctx, const qg_gemm_args *args,
                                        int64_t batch_stride_a, int64_t batch_stride_b,
                                        int64_t batch_stride_d, const qg_config *cfg,
                                        struct CUstream_st *stream);

/*
 * FP8 output (since 0.6.0): the same GEMMs (dense, contiguous, psum, masked)
 * writing D as e4m3 with one float32 scale per 1x128 block of each row, in
 * the layout the next FP8 GEMM reads as `sfa`, so one GEMM's output is the
 * next one's A without a conversion, where a GEMM feeds another with no
 * activation between them (an MoE up-projection needs its SwiGLU first:
 * qg_silu_mul_cast, docs/MOE.md). The scales come from the FP32 sums, by the
 * per-token cast's formula (qg_per_token_cast, docs/CAST.md): amax over the
 * row's 128 columns (those < n), at least 1e-4; sf = amax / 448 (as
 * amax * float(1/448)), or with ue8m0 = 1 rounded up to a power of two;
 * D = e4m3(sum * (448 / amax)) (ue8m0: sum / sf), round to nearest even,
 * saturating. So the result is qg_per_token_cast of the bf16-output GEMM's
 * D but for that intermediate's bf16 rounding.
 *
 *  args    as the bf16 call, except d: e4m3 [rows][ldd] (ldd in bytes =
 *          elements, >= n, a multiple of 16; rows as the bf16 D's)
 *  out     sfd [ceil(n/128)][sfd_ld] floats, sfd[(n/128) * sfd_ld + m]
 *          (masked: [G][ceil(n/128)][sfd_ld], group g's rows at
 *          (g * ceil(n/128) + n/128) * sfd_ld); sfd_ld >= m (masked: M_max), a
 *          multiple of 4 (qg_sfa_ld(m)); 4-byte aligned. Rows that the bf16
 *          call leaves untouched (padding, masked-out) keep their D bytes
 *          and scales; rows [m, sfd_ld) are not written. D and sfd may not
 *          overlap each other or an input.
 * Tiles are whole 128-column groups (block_n 128 or 256), or 64 / 32
 * columns of one, the group split over a cluster of 2 / 4 CTAs that exchange
 * their rows' partial amax (since 0.6.0; no multicast or split-K with them,
 * swizzle_group a multiple of the cluster): a forced configuration of another
 * block_n is refused (QG_ERROR_UNSUPPORTED).
 */
typedef struct {
    float *sfd;      /* the scales of D (see above) */
    int64_t sfd_ld;  /* >= m, a multiple of 4 */
    int ue8m0;       /* 0: sf = amax / 448; 1: rounded up to a power of two */
} qg_fp8_out;

/** Dense GEMM with e4m3 D and its 1x128 scales (see qg_fp8_out).
 *  @return as qg_fp8_gemm_nt; QG_ERROR_INVALID_ARGUMENT also for out (NULL,
 *  sfd, sfd_ld, ue8m0), naming the field. */
QG_API qg_status qg_fp8_gemm_nt_fp8out(qg_context *ctx, const qg_gemm_args *args,
                                       const qg_fp8_out *out, const qg_config *cfg,
                                       struct CUstream_st *stream);
/** Contiguous layout, e4m3 D (see qg_fp8_out). @return as qg_fp8_gemm_nt_fp8out. */
QG_API qg_status qg_m_grouped_fp8_gemm_nt_contiguous_fp8out(qg_context *ctx,
                                                            const qg_gemm_args *args,
                                                            const qg_fp8_out *out,
                                                            const qg_config *cfg,
                                                            struct CUstream_st *stream);
/** Masked layout, e4m3 D (see qg_fp8_out). @return as qg_fp8_gemm_nt_fp8out. */
QG_API qg_status qg_m_grouped_fp8_gemm_nt_masked_fp8out(qg_context *ctx, const qg_gemm_args *args,
                                                        const qg_fp8_out *out,
                                                        const qg_config *cfg,
                                                        struct CUstream_st *stream);
/** Psum layout, e4m3 D (see qg_fp8_out). @return as qg_fp8_gemm_nt_fp8out. */
QG_API qg_status qg_m_grouped_fp8_gemm_nt_psum_fp8out(qg_context *ctx, const qg_gemm_args *args,
                                                      const qg_fp8_out *out, const qg_config *cfg,
                                                      struct CUstream_st *stream);
/** qg_compile for the e4m3-D kernel of `problem` (kinds dense, contiguous,
 *  masked, psum; ue8m0 0 or 1); `cfg` NULL = the heuristic's choice among
 *  the e4m3-D tiles (see qg_fp8_out).
 *  @return as qg_compile. */
QG_API qg_status qg_compile_fp8out(qg_context *ctx, const qg_problem *problem, int ue8m0,
                                   const qg_config *cfg, qg_kernel_info *info);
/** qg_select_config for the e4m3-D kernel (see qg_compile_fp8out).
 *  @return as qg_select_config. */
QG_API qg_status qg_select_config_fp8out(const qg_context *ctx, const qg_problem *problem,
                                         int ue8m0, qg_config *out);

/*
 * Fused SwiGLU for the MoE up-projection (since 0.6.0, issue 51): the FP8
 * GEMM whose epilogue computes, from its FP32 sums h = A B^T,
 *   y = silu(g) * u * w[row],  silu(x) = x / (1 + exp(-x))  (float32),
 * with g, u the gate and up sums of the same output column, clamped first
 * where swiglu_limit > 0 (g = min(g, limit), u = clamp(u, -limit, limit), as
 * gpt-oss-style MoE layers do; a NaN stays NaN), and w the row's routing
 * weight (row_weight NULL: 1); then writes y as e4m3 with one float32 scale
 * per 1x128 block by the qg_fp8_out formula, in the layout the
 * down-projection reads as `sfa`. It replaces "GEMM, bf16 out ->
 * qg_silu_mul_cast" (docs/MOE.md) and equals it up to the bf16 rounding of
 * that path's intermediate: silu and the products are qg_silu_mul_cast's.
 *
 * B's layout: gate and up rows interleaved in blocks of 128, rows
 * [256 b, 256 b + 128) = gate rows [128 b, 128 b + 128) and the next 128 =
 * up rows [128 b, 128 b + 128) of each group; its 128x128 block scales
 * interleave the same way (row 2 b = gate block b, 2 b + 1 = up block b).
 * qg_interleave_gate_up converts the usual [G][2I][K] gate | up weight (and
 * its scales) into it, once at load.
 *
 *  args    as the bf16 call, except: n = 2I (B's rows per group), a
 *          multiple of 256; d e4m3 [rows][ldd] with n / 2 = I columns
 *          (ldd in bytes = elements, >= n / 2, a multiple of 16)
 *  out     sfd [ceil(I/128)][sfd_ld] floats (masked: [G][I/128][sfd_ld]),
 *          sfd_ld, ue8m0 as qg_fp8_out; swiglu_limit >= 0 (0: no clamp;
 *          finite); row_weight NULL or [rows] floats (masked: [G][M_max],
 *          row m of group g at g * M_max + m), 4-byte aligned.
 * Rows the bf16 call leaves untouched keep their D bytes and scales. The one
 * tile is 128x256 (a 256-column tile holds one gate block and its up
 * block): a forced configuration of another block_n, or with split-K, is
 * refused (QG_ERROR_UNSUPPORTED).
 */
typedef struct {
    float *sfd;               /* the scales of D (see qg_fp8_out) */
    int64_t sfd_ld;           /* >= m, a multiple of 4 */
    int ue8m0;                /* 0: sf = amax / 448; 1: rounded up to a power of two */
    float swiglu_limit;       /* > 0: clamp gate and up; 0: no clamp */
    const float *row_weight;  /* [rows] routing weights multiplying y, or NULL */
} qg_swiglu_out;

/** Dense GEMM with the SwiGLU epilogue (see qg_swiglu_out).
 *  @return as qg_fp8_gemm_nt_fp8out; QG_ERROR_INVALID_ARGUMENT also for out
 *  (NULL, sfd, sfd_ld, ue8m0, swiglu_limit, row_weight), naming the field;
 *  QG_ERROR_UNSUPPORTED for n not a multiple of 256. */
QG_API qg_status qg_fp8_gemm_nt_swiglu(qg_context *ctx, const qg_gemm_args *args,
                                       const qg_swiglu_out *out, const qg_config *cfg,
                                       struct CUstream_st *stream);
/** Contiguous layout with the SwiGLU epilogue (see qg_swiglu_out).
 *  @return as qg_fp8_gemm_nt_swiglu. */
QG_API qg_status qg_m_grouped_fp8_gemm_nt_contiguous_swiglu(qg_context *ctx,
                                                            const qg_gemm_args *args,
                                                            const qg_swiglu_out *out,
                                                            const qg_config *cfg,
                                                            struct CUstream_st *stream);
/** Masked layout with the SwiGLU epilogue (see qg_swiglu_out); CUDA-graph
 *  capturable like the bf16 call. @return as qg_fp8_gemm_nt_swiglu. */
QG_API qg_status qg_m_grouped_fp8_gemm_nt_masked_swiglu(qg_context *ctx, const qg_gemm_args *args,
                                                        const qg_swiglu_out *out,
                                                        const qg_config *cfg,
                                                        struct CUstream_st *stream);
/** qg_compile for the SwiGLU kernel of `problem` (kinds dense, contiguous,
 *  masked; n a multiple of 256; ue8m0 0 or 1); `cfg` NULL = the heuristic's
 *  choice. @return as qg_compile. */
QG_API qg_status qg_compile_swiglu(qg_context *ctx, const qg_problem *problem, int ue8m0,
                                   const qg_config *cfg, qg_kernel_info *info);
/** qg_select_config for the SwiGLU kernel (see qg_compile_swiglu).
 *  @return as qg_select_config. */
QG_API qg_status qg_select_config_swiglu(const qg_context *ctx, const qg_problem *problem,
                                         int ue8m0, qg_config *out);

/*
 * qg_interleave_gate_up: the fused layout of B (see qg_swiglu_out) from a
 * gate | up weight, on the stream (two strided device copies for w, two for
 * its scales; no kernel):
 *   w      e4m3 [G][2I][ld_w] bytes, gate rows [0, I), up rows [I, 2I) of
 *          each group; w_out the same shape, interleaved (ld_w for both,
 *          >= k, a multiple of 16)
 *   sf     float32 [G][2I/128][ceil(k/128)] (packed); sf_out the same shape,
 *          interleaved. Either pair may be NULL (both of it) to skip it.
 * i (the intermediate size) a multiple of 128; outputs may not overlap
 * inputs. inverse = 1 undoes it (w is then the fused layout, w_out gate | up).
 * @return QG_SUCCESS; QG_ERROR_INVALID_ARGUMENT naming the argument.
 */
typedef struct {
    int num_groups, i, k;   /* G, the intermediate size I (B has 2I rows a group), K */
    int64_t ld_w;           /* bytes between rows of w and w_out */
    const void *w;          /* e4m3 [G][2I][ld_w], or NULL */
    void *w_out;
    const float *sf;        /* [G][2I/128][ceil(k/128)], or NULL */
    float *sf_out;
    int inverse;            /* 0: gate | up -> interleaved; 1: back */
} qg_interleave_args;
/** Interleave a gate | up weight and its scales into the SwiGLU GEMMs' layout
 *  of B, or back (see qg_interleave_args), on `stream`.
 *  @return QG_SUCCESS; QG_ERROR_INVALID_ARGUMENT naming the argument;
 *  QG_ERROR_NO_DEVICE on an offline context; a CUDA error of the copies. */
QG_API qg_status qg_interleave_gate_up(qg_context *ctx, const qg_interleave_args *args,
                                       struct CUstream_st *stream);

/** @return the row alignment each expert segment needs in the contiguous layout (128). */
QG_API int qg_m_alignment_for_contiguous_layout(void);

/** @return the smallest legal sfa_ld for m rows: m rounded up to a multiple of 4 (0 if m < 0,
 *  or m > INT64_MAX - 3, where the rounded value does not fit an int64_t). */
QG_API int64_t qg_sfa_ld(int64_t m);

/* ------------------------------------------------------------------------ */
/* BF16 GEMMs (since 0.6.0)                                                  */
/* ------------------------------------------------------------------------ */

/* Which dimension of a 16-bit operand is contiguous in memory. */
typedef enum {
    QG_MAJOR_K = 0, /* rows along K: A [m][lda], B [n][ldb] (DeepGEMM's "N" for A, "T" for B) */
    QG_MAJOR_MN = 1 /* rows along M (A [k][lda]) or N (B [k][ldb]): the transposed operand */
} qg_major;

/*
 * Arguments of every BF16 GEMM: D (+)= A B^T over K, A and B bf16, the
 * tensor cores accumulating the whole K range in FP32. Strides are in
 * elements; every pointer a 16-byte aligned device pointer of the context's
 * device (index arrays: 4-byte); lda * 2, ldb * 2, ldd and ldc times D's
 * element size multiples of 16; n a multiple of 8. D may overlap no input (refused, naming
 * both). DeepGEMM's layouts: NT = (QG_MAJOR_K, QG_MAJOR_K), NN = (K, MN),
 * TN = (MN, K), TT = (MN, MN).
 *
 *  dense       a: K-major [m][lda] (lda >= k) or MN-major [k][lda] (lda >= m);
 *              b: K-major [n][ldb] (ldb >= k) or MN-major [k][ldb] (ldb >= n);
 *              d [m][ldd] bf16, or FP32 with d_fp32 = 1; c: NULL (D = A B^T),
 *              d itself (ldc == ldd or 0: D += A B^T in place, by TMA
 *              reduce-add in D's type: the SMs never read D), or another
 *              [m][ldc] array of D's type, copied into D on the stream first.
 *              k = 0: D = C, or 0.
 *  contiguous  a K-major [m][lda], m = all groups' rows; b [G][n][ldb] or
 *              [G][k][ldb] (groups n * ldb or k * ldb apart); m_indices [m]:
 *              each row's group, as qg_gemm_args' contiguous layout (rows of
 *              a 128-row segment whose first row is outside [0, G) are left
 *              untouched); d bf16 [m][ldd]; no c.
 *  psum        as contiguous, group_ends [G] instead of m_indices (the FP8
 *              psum layout's rule: group g's rows [start_g, end_g)).
 *  masked      a [G][m][lda] (m = M_max per group), b K-major [G][n][ldb],
 *              d bf16 [G][m][ldd], masked_m [G] (device): valid rows of each
 *              group, clamped to [0, m]; expected_m a host hint (0 = m).
 *  k-grouped   groups splitting K, K_g = ks[g] (host array, each a multiple
 *              of 64, 0 = empty; k their sum): a MN-major [k][lda] (group g's
 *              K rows after the groups before it), b MN-major [k][ldb],
 *              d FP32 [G][m][ldd] (d_fp32 must be 1), c as dense over all
 *              G * m rows ([G][m][ldc]). An empty group's D is C, or zero.
 */
typedef struct {
    int m, n, k;
    int num_groups;           /* 1 (or 0) for dense */
    const void *a;            /* bf16 */
    int64_t lda;
    qg_major a_major;
    const void *b;            /* bf16 */
    int64_t ldb;
    qg_major b_major;
    void *d;                  /* bf16, or FP32 with d_fp32 */
    int64_t ldd;
    int d_fp32;               /* 0: D bf16; 1: D FP32 */
    const void *c;            /* NULL, d, or a [rows][ldc] array of D's type */
    int64_t ldc;
    const int32_t *m_indices; /* contiguous only */
    const int32_t *masked_m;  /* masked only */
    const int32_t *group_ends; /* psum only */
    int expected_m;           /* masked and psum: typical rows per group; 0 = m (psum: m / G) */
    const int32_t *ks;        /* k-grouped only: host array of G group K sizes */
} qg_bf16_gemm_args;

/**
 * Dense BF16 GEMM in any of the four layouts (see qg_bf16_gemm_args), on
 * `stream` (NULL: the legacy default stream).
 * @return QG_SUCCESS (the kernel is enqueued), QG_ERROR_INVALID_ARGUMENT
 *         (naming the argument), QG_ERROR_UNSUPPORTED, QG_ERROR_NO_DEVICE
 *         (offline context), QG_ERROR_COMPILE, QG_ERROR_LAUNCH.
 */
QG_API qg_status qg_bf16_gemm(qg_context *ctx, const qg_bf16_gemm_args *args,
                              struct CUstream_st *stream);

/** Grouped BF16 GEMM, contiguous layout (m_indices; DeepGEMM's
 *  m_grouped_bf16_gemm_{nt,nn}_contiguous). @return as qg_bf16_gemm. */
QG_API qg_status qg_m_grouped_bf16_gemm_contiguous(qg_context *ctx, const qg_bf16_gemm_args *args,
                                                   struct CUstream_st *stream);

/** Grouped BF16 GEMM, psum layout (group_ends; DeepGEMM's use_psum_layout).
 *  @return as qg_bf16_gemm. */
QG_API qg_status qg_m_grouped_bf16_gemm_psum(qg_context *ctx, const qg_bf16_gemm_args *args,
                                             struct CUstream_st *stream);

/** Grouped BF16 GEMM, masked layout (masked_m; reads no device memory on the
 *  host: CUDA-graph capturable). @return as qg_bf16_gemm. */
QG_API qg_status qg_m_grouped_bf16_gemm_masked(qg_context *ctx, const qg_bf16_gemm_args *args,
                                               struct CUstream_st *stream);

/** The experts' weight gradients in BF16 (DeepGEMM's
 *  k_grouped_bf16_gemm_tn_contiguous): FP32 D[g] = (C[g] +) A_g B_g^T, the
 *  groups splitting K (see qg_bf16_gemm_args). Up to 128 groups a launch.
 *  @return as qg_bf16_gemm. */
QG_API qg_status qg_k_grouped_bf16_gemm(qg_context *ctx, const qg_bf16_gemm_args *args,
                                        struct CUstream_st *stream);

/** qg_bf16_compile's kind for qg_batched_bf16_gemm (a BF16 kind only: no FP8
 *  entry point takes it). Since 0.6.0. */
#define QG_GEMM_BF16_BATCHED ((qg_gemm_kind)16)

/**
 * Batched BF16 GEMM in one launch: for every batch g < args->num_groups
 * (1..1024), D_g = A_g B_g^T, where A_g starts batch_stride_a elements after
 * A_{g-1} (B_g, D_g likewise); each batch as the dense GEMM's (either major
 * for A and B, lda / ldb / ldd their row strides, bf16 or FP32 D; args->c must
 * be NULL). The batch strides are any non-negative values whose bytes are
 * multiples of 16 (< 2^40 bytes): e.g. DeepGEMM's einsum 'bhr,hdr->bhd' as H
 * batches of x [B][H][R] (batch stride R, lda H * R), y [H][D][R] and
 * z [B][H][D] (batch stride D, ldd H * D). Batches of D must not overlap
 * one another (not checked); D may overlap no input (refused). Every batch
 * accumulates its whole K in FP32, in ascending K order (no split).
 * k = 0: every D_g is zeroed.
 * @return as qg_bf16_gemm.
 */
QG_API qg_status qg_batched_bf16_gemm(qg_context *ctx, const qg_bf16_gemm_args *args,
                                      int64_t batch_stride_a, int64_t batch_stride_b,
                                      int64_t batch_stride_d, struct CUstream_st *stream);

/** qg_bf16_compile's kind for qg_bf16_gemm_batch_sums (BF16 only). Since 0.6.0. */
#define QG_GEMM_BF16_BATCH_SUMS ((qg_gemm_kind)17)

/**
 * Partial sums of a batched product in one launch (DeepGEMM's einsum
 * 'bmk,bnk->mn' without copying its operands): the args->num_groups = S
 * batches (A_b, B_b K-major, batch_stride_a / _b elements apart as in
 * qg_batched_bf16_gemm) are split into `splits` ranges of P = ceil(S / splits)
 * consecutive batches (1 <= splits <= 1024, every range non-empty:
 * (splits - 1) * P < S), and FP32 D[g] = sum over the batches b of range g of
 * A_b B_b^T, each range accumulated whole in FP32 in ascending (b, k) order;
 * D is [splits][m][ldd] (d_fp32 = 1, slices m * ldd apart), args->c NULL. The
 * caller sums the slices (in a fixed order: deterministic). k = 0: D zeroed.
 * @return as qg_bf16_gemm.
 */
QG_API qg_status qg_bf16_gemm_batch_sums(qg_context *ctx, const qg_bf16_gemm_args *args,
                                         int64_t batch_stride_a, int64_t batch_stride_b,
                                         int splits, struct CUstream_st *stream);

/** qg_bf16_compile's kind for qg_bf16_gemm_batch_sum (BF16 only). Since 0.6.0. */
#define QG_GEMM_BF16_BATCH_SUM ((qg_gemm_kind)18)

/**
 * The workspace qg_bf16_gemm_batch_sum needs for D [m][n] summed over
 * `splits` splits, in the reduction mode QGEMM_BMK_REDUCE selects (read at
 * each call). Its first *counter_bytes bytes (set when counter_bytes is not
 * NULL; 0 when no workspace is needed) must be zero when a call's kernel
 * starts: the tree's ("tree") arrival counters, followed by its FP32 partial
 * sums (splits x m x n x 4 bytes, m rounded up to 64, scratch); the atomic
 * reduction's (the default) counters and its FP32 m x n sum matrix, all of
 * it to be zeroed (an FP32 D needs none of it).
 * @return the bytes: 0 for one split (or m, n <= 0: no workspace), SIZE_MAX
 *         when the size does not fit a size_t.
 */
QG_API size_t qg_bf16_gemm_batch_sum_workspace_bytes(int m, int n, int splits,
                                                     size_t *counter_bytes);

/**
 * The reduced sum of a batched product in one kernel (DeepGEMM's einsum
 * 'bmk,bnk->mn'): D = (C +) sum over the args->num_groups = S batches b of
 * A_b B_b^T, A_b [m][lda] and B_b [n][ldb] K-major, batch_stride_a / _b
 * elements apart (as qg_bf16_gemm_batch_sums). The batches are split into
 * `splits` ranges of P = ceil(S / splits) (1 <= splits <= min(1024, S), none
 * empty: (splits - 1) * P < S); each range is accumulated whole in FP32 in
 * ascending (b, k) order, and the ranges' sums are added in the kernel:
 * by default (QGEMM_BMK_REDUCE unset or "atomic") with FP32 vector atomic
 * reductions, one level, as DeepGEMM's kernel (not bitwise deterministic:
 * the order of the additions varies); with QGEMM_BMK_REDUCE=tree by a fixed
 * tree of radix QGEMM_BMK_RADIX over the splits (the same additions in the
 * same order on every call: bitwise deterministic, slower). D is [m][ldd]
 * bf16, or FP32 with args->d_fp32 = 1; args->c is NULL, or (FP32 D only)
 * d itself (ldc 0 or ldd: D += the sum, as DeepGEMM's users call it) or
 * another FP32 [m][ldc] array (the tree reads it; the atomic reduction
 * copies it into D first, or zeroes D without C, and adds to D).
 * `workspace` (16-byte aligned device memory of workspace_bytes >=
 * qg_bf16_gemm_batch_sum_workspace_bytes(m, n, splits) bytes, over no
 * argument; unused, and may be NULL, with one split, k = 0, or an FP32 D
 * under the atomic reduction): its counter
 * bytes must be zero when the kernel starts, and every call whose kernel
 * completes leaves them zero, so a workspace zeroed once serves every later
 * call of one stream (calls that may run concurrently need separate
 * workspaces; after a kernel that faulted, zero the counters again). The
 * rest of the workspace is scratch. k = 0: D = C, or zero.
 * @return as qg_bf16_gemm; QG_ERROR_INVALID_ARGUMENT also for a missing,
 *         misaligned, short or overlapping workspace (naming it).
 */
QG_API qg_status qg_bf16_gemm_batch_sum(qg_context *ctx, const qg_bf16_gemm_args *args,
                                        int64_t batch_stride_a, int64_t batch_stride_b,
                                        int splits, void *workspace, size_t workspace_bytes,
                                        struct CUstream_st *stream);

/**
 * Compile (or find in the caches) the BF16 kernel a call of `kind` with these
 * arguments would run; only the shape fields of `args` are read (m, n, k,
 * num_groups, a_major, b_major, d_fp32, c != NULL, expected_m; for
 * QG_GEMM_K_GROUPED, ks). Works on offline contexts; on a device context it
 * also loads the kernel (as qg_compile). `kind` is QG_GEMM_DENSE,
 * _GROUPED_CONTIGUOUS, _GROUPED_MASKED, _GROUPED_PSUM, _K_GROUPED or
 * QG_GEMM_BF16_BATCHED (num_groups the batch count; no strides needed) or
 * QG_GEMM_BF16_BATCH_SUMS / QG_GEMM_BF16_BATCH_SUM (num_groups the batch
 * count, args->expected_m the split count; no workspace needed).
 * `info` may be NULL.
 * @return QG_SUCCESS, QG_ERROR_INVALID_ARGUMENT, QG_ERROR_UNSUPPORTED,
 *         QG_ERROR_COMPILE.
 */
QG_API qg_status qg_bf16_compile(qg_context *ctx, qg_gemm_kind kind, const qg_bf16_gemm_args *args,
                                 qg_kernel_info *info);

/* ------------------------------------------------------------------------ */
/* FP8 casts and scale layouts (docs/CAST.md)                                */
/* ------------------------------------------------------------------------ */

/* The cast kernels, for qg_cast_compile (the entry points name their own). */
typedef enum {
    QG_CAST_KIND_PER_TOKEN = 1,    /* qg_per_token_cast */
    QG_CAST_KIND_PER_BLOCK = 2,    /* qg_per_block_cast */
    QG_CAST_KIND_PER_CHANNEL = 3,  /* qg_per_channel_cast */
    QG_CAST_KIND_SILU_MUL = 4,     /* qg_silu_mul_cast */
    QG_CAST_KIND_SF_MN_MAJOR = 5,  /* qg_sf_transpose_mn_major */
    QG_CAST_KIND_SF_PACK_UE8M0 = 6, /* qg_sf_pack_ue8m0 */
    QG_CAST_KIND_SF_PACK_UE8M0_K_GROUPED = 7 /* qg_sf_pack_ue8m0_k_grouped */
} qg_cast_kind;

/*
 * Arguments of the quantizing casts: x (bf16, or float32 with x_fp32 = 1) ->
 * e4m3 out + float32 scales sf, bit for bit the torch formulas of
 * docs/CAST.md (amax over the block clamped below at 1e-4, sf = amax / 448,
 * or with ue8m0 = 1 rounded up to a power of two). Strides are in elements;
 * every pointer a device pointer of the context's device: x aligned to its
 * element, out to 1 byte, sf and the index arrays to 4 (wider alignment and
 * strides give wider accesses). Groups are packed: group g's rows follow
 * group g - 1's (row r of x at x + r * ld_x). Outputs may overlap no input
 * nor each other (refused, naming both).
 *
 *  per-token    x [G*m][ld_x] (ld_x >= k) -> out [G*m][ld_out] (ld_out >= k),
 *               one scale per 1x128 block of a row: sf row-major
 *               [G*m][ceil(k/128)] (sf_mn_major = 0), or M-major and
 *               TMA-aligned [G][ceil(k/128)][sf_ld] (sf_mn_major = 1, sf_ld >=
 *               m rounded up to 4: what the FP8 GEMMs read as sfa; rows
 *               [m, sf_ld) of each column are not written).
 *  per-block    x [G][m][ld_x] (m = N rows of a group) -> out, one scale per
 *               128x128 block: sf [G][ceil(m/128)][ceil(k/128)].
 *  per-channel  x [m][ld_x] (m a multiple of 128, G = 1) -> out, one scale per
 *               128x1 block: sf [m/128][k]; q = x / sf.
 *  silu_mul     x [G*m][ld_x] (ld_x >= 2k): gate = columns [0, k), up =
 *               [k, 2k); y = silu(gate) * up in float32, then as per-token
 *               over k columns. masked_m [G] (device; masked layout: rows
 *               r >= masked_m[g] of group g skipped, out and sf untouched) or
 *               m_indices [G*m] (device; contiguous layout: rows with
 *               m_indices[r] < 0 skipped), at most one of them.
 * num_groups 0 is 1. m = 0 is a valid no-op.
 */
typedef struct {
    int m, k;                 /* rows of a group, columns (silu_mul: of the output) */
    int num_groups;           /* G (0 = 1) */
    const void *x;            /* bf16, or float32 with x_fp32 */
    int64_t ld_x;
    int x_fp32;               /* 0: x bf16; 1: x float32 */
    void *out;                /* e4m3 */
    int64_t ld_out;
    float *sf;
    int sf_mn_major;          /* per-token and silu_mul: 1 = M-major [G][ceil(k/128)][sf_ld] */
    int sf_ld;                /* with sf_mn_major */
    int ue8m0;                /* 1: scales rounded up to powers of two */
    const int32_t *masked_m;  /* silu_mul only: [G] */
    const int32_t *m_indices; /* silu_mul only: [G*m] */
} qg_cast_args;

/*
 * Arguments of the scale-layout ops (DeepGEMM's get_mn_major_tma_aligned_*
 * and transform_sf_into_required_layout). Strides in elements, pointers
 * 4-byte aligned device pointers (the k-grouped op: 16-byte), out over no
 * input.
 *
 *  transpose    float32 sf [G][mn][sf_k] at any strides sf_stride = {g, mn, k}
 *               -> float32 out [G][sf_k][out_ld] (out_ld >= mn; rows [mn,
 *               out_ld) of each column written 0): MN-major, TMA-aligned with
 *               out_ld = mn rounded up to 4; out_ld = mn gives a dense copy.
 *  pack_ue8m0   the same, the exponent bytes of 4 consecutive k packed into
 *               an int32 (the lowest k in the lowest byte, zero past sf_k):
 *               int32 out [G][ceil(sf_k/4)][out_ld].
 *  k-grouped    float32 sf [sf_k][mn] contiguous (mn a multiple of 4), its
 *               rows split among num_groups (1..128) groups by ks [G] (device
 *               int32: each group's K, or with psum = 1 each group's end,
 *               groups starting at the previous end rounded up to
 *               k_alignment); group g's ceil(K_g / gran_k) rows packed four
 *               to an int32 -> out int32 [packed_sf_k][mn]. gran_k 32 or 128,
 *               k_alignment a positive multiple of 32. A packed row no group
 *               owns is not written.
 */
typedef struct {
    int mn, sf_k;
    int num_groups;           /* G (0 = 1) */
    const float *sf;
    int64_t sf_stride[3];     /* transpose / pack_ue8m0: strides of g, mn, k */
    void *out;                /* float32 (transpose) or int32 */
    int out_ld;               /* transpose / pack_ue8m0: >= mn */
    const int32_t *ks;        /* k-grouped only */
    int gran_k, k_alignment, psum, packed_sf_k; /* k-grouped only */
} qg_sf_layout_args;

/**
 * Per-token cast: each 1x128 block of each row of x to e4m3 with its float32
 * scale (DeepGEMM's per_token_cast_to_fp8; see qg_cast_args), on `stream`
 * (NULL: the legacy default stream). Reads no device memory on the host
 * (CUDA-graph capturable once compiled: qg_cast_compile).
 * @return QG_SUCCESS (enqueued), QG_ERROR_INVALID_ARGUMENT (naming the
 *         argument; nothing written), QG_ERROR_UNSUPPORTED, QG_ERROR_NO_DEVICE
 *         (offline context), QG_ERROR_COMPILE, QG_ERROR_LAUNCH.
 */
QG_API qg_status qg_per_token_cast(qg_context *ctx, const qg_cast_args *args,
                                   struct CUstream_st *stream);

/** Per-block cast: each 128x128 block of each group of x (DeepGEMM's
 *  per_block_cast_to_fp8). @return as qg_per_token_cast. */
QG_API qg_status qg_per_block_cast(qg_context *ctx, const qg_cast_args *args,
                                   struct CUstream_st *stream);

/** Per-channel cast: each 128x1 block of x (DeepGEMM's per_channel_cast_to_fp8;
 *  m a multiple of 128). @return as qg_per_token_cast. */
QG_API qg_status qg_per_channel_cast(qg_context *ctx, const qg_cast_args *args,
                                     struct CUstream_st *stream);

/** silu(gate) * up, then the per-token cast (vLLM's silu_mul_fp8_quant_deep_gemm),
 *  every row, the masked layout (masked_m) or the contiguous one (m_indices).
 *  @return as qg_per_token_cast. */
QG_API qg_status qg_silu_mul_cast(qg_context *ctx, const qg_cast_args *args,
                                  struct CUstream_st *stream);

/** float32 scales to the MN-major TMA-aligned layout (qg_sf_layout_args'
 *  transpose; kernel qg_transpose_sf_kernel). @return as qg_per_token_cast. */
QG_API qg_status qg_sf_transpose_mn_major(qg_context *ctx, const qg_sf_layout_args *args,
                                          struct CUstream_st *stream);

/** float32 scales to packed UE8M0, MN-major TMA-aligned (kernel
 *  qg_pack_fp32_into_ue8m0_kernel). @return as qg_per_token_cast. */
QG_API qg_status qg_sf_pack_ue8m0(qg_context *ctx, const qg_sf_layout_args *args,
                                  struct CUstream_st *stream);

/** The k-grouped packed UE8M0 layout (DeepGEMM's
 *  get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor; kernel
 *  qg_k_grouped_pack_fp32_into_ue8m0_kernel). @return as qg_per_token_cast. */
QG_API qg_status qg_sf_pack_ue8m0_k_grouped(qg_context *ctx, const qg_sf_layout_args *args,
                                            struct CUstream_st *stream);

/**
 * Compile (or find in the caches) the cast kernel a call of `kind` would run:
 * kinds 1-4 read `cast`, 5-7 `layout` (the other may be NULL); only shapes,
 * flags, strides and the pointers' alignments are read. Works on offline
 * contexts; on a device context it also loads the kernel, so the first call
 * neither compiles nor loads (before a CUDA-graph capture). `info` may be
 * NULL; an empty problem (m = 0) compiles nothing and leaves it untouched.
 * @return QG_SUCCESS, QG_ERROR_INVALID_ARGUMENT, QG_ERROR_UNSUPPORTED,
 *         QG_ERROR_COMPILE.
 */
QG_API qg_status qg_cast_compile(qg_context *ctx, qg_cast_kind kind, const qg_cast_args *cast,
                                 const qg_sf_layout_args *layout, qg_kernel_info *info);
/* Lightning indexer and HyperConnection (since 0.6.0)                       */
/* ------------------------------------------------------------------------ */

/*
 * Arguments of qg_fp8_mqa_logits (DeepGEMM's fp8_mqa_logits, prefill: ragged
 * key ranges), with DeepGEMM's clean_logits fused in:
 *
 *   logits[i][j] = kv_scales[j] * sum_h relu(sum_d q[i][h][d] kv[j][d]) weights[i][h]
 *                  for ks[i] <= j < ke[i] (ranges clamped to [0, seq_len_kv))
 *
 * Every pointer is a device pointer of the context's device: q, kv, kv_scales
 * and logits 16-byte aligned, weights, ks and ke 4-byte. Strides in elements.
 *  q          e4m3 [seq_len][heads][head_dim], dense
 *  kv         e4m3 [seq_len_kv][ld_kv] (ld_kv >= head_dim, a multiple of 16)
 *  kv_scales  fp32 [seq_len_kv], dense (>= 0: DeepGEMM's per-row scale)
 *  weights    fp32 [seq_len][ld_weights] (ld_weights >= heads)
 *  ks, ke     int32 [seq_len] (device; read by the kernel only)
 *  logits     fp32, or bf16 with logits_bf16 = 1, [seq_len][ld_logits]:
 *             max_seqlen_k = 0: column j of row i for j < seq_len_kv
 *             (ld_logits >= seq_len_kv); with clean = 1 every column outside
 *             [ks[i], ke[i]) is -inf, with clean = 0 those are undefined
 *             (written or not: DeepGEMM's contract). Columns >= seq_len_kv
 *             are never written.
 *             max_seqlen_k > 0 (DeepGEMM's compressed form): logits[i][j - ks[i]]
 *             for j in [ks[i], ke[i]), ld_logits >= max_seqlen_k, which must be
 *             >= every ke[i] - ks[i] (a device fact the host cannot check);
 *             nothing else is written and clean must be 0.
 *             ld_logits * (4 or 2) a multiple of 16.
 * heads 32 or 64; head_dim 32, 64 or 128; seq_len >= 0, seq_len_kv >= 1.
 * logits may overlap no input (refused, naming both).
 */
typedef struct {
    int seq_len, seq_len_kv, heads, head_dim;
    const void *q;            /* e4m3 [seq_len][heads][head_dim] */
    const void *kv;           /* e4m3 [seq_len_kv][ld_kv] */
    int64_t ld_kv;
    const float *kv_scales;   /* [seq_len_kv] */
    const float *weights;     /* [seq_len][ld_weights] */
    int64_t ld_weights;
    const int32_t *ks, *ke;   /* [seq_len] each */
    void *logits;             /* fp32 or bf16 [seq_len][ld_logits] */
    int64_t ld_logits;
    int logits_bf16;          /* 0: fp32 logits; 1: bf16 */
    int clean;                /* 1: -inf outside [ks, ke) (not with max_seqlen_k) */
    int max_seqlen_k;         /* 0: full rows; > 0: compressed rows of this width */
} qg_mqa_logits_args;

/**
 * FP8 MQA logits of the lightning indexer over ragged key ranges (see
 * qg_mqa_logits_args), on `stream`. Reads no device memory on the host and
 * allocates nothing: CUDA-graph capturable once compiled (a first call, or
 * qg_indexer_compile, outside the capture). Bitwise reproducible.
 * @return QG_SUCCESS (the kernel is enqueued), QG_ERROR_INVALID_ARGUMENT
 *         (naming the argument), QG_ERROR_UNSUPPORTED, QG_ERROR_NO_DEVICE
 *         (offline context), QG_ERROR_COMPILE, QG_ERROR_LAUNCH.
 */
QG_API qg_status qg_fp8_mqa_logits(qg_context *ctx, const qg_mqa_logits_args *args,
                                   struct CUstream_st *stream);

/*
 * Arguments of qg_paged_mqa_logits_schedule and qg_fp8_paged_mqa_logits
 * (DeepGEMM's get_paged_mqa_logits_metadata and fp8_paged_mqa_logits, decode
 * over the paged KV cache, 2-D context lengths, 64-key cache blocks):
 *
 *   logits[b * next_n + t][j] = scale(j) * sum_h relu(sum_d q[b][t][h][d] kv(j)[d]) weights[b * next_n + t][h]
 *   for j < context_lens[b][t] (clamped to [0, max_context_len])
 *
 * kv(j) and scale(j): row j % 64 of physical block block_table[b][j / 64] of
 * the fused cache (DeepGEMM's [num_blocks][64][1][head_dim + 4] bytes: block
 * p holds 64 rows of head_dim e4m3 bytes at p * block_stride, then their 64
 * fp32 scales at p * block_stride + 64 * head_dim).
 *  q             e4m3 [batch][next_n][heads][head_dim], dense, 16-byte aligned
 *  kv_cache      num_blocks blocks, block_stride bytes apart (0: 64 *
 *                (head_dim + 4)); 16-byte aligned, block_stride a multiple of 16
 *  weights       fp32 [batch * next_n][ld_weights] (ld_weights >= heads)
 *  context_lens  int32 [batch][next_n], dense (device)
 *  block_table   int32 [batch][block_table_ld] (device; entries < num_blocks)
 *  schedule      int32 [num_sms + 1][2] (device): written by
 *                qg_paged_mqa_logits_schedule from the same context_lens,
 *                max_context_len and num_sms, read by qg_fp8_paged_mqa_logits
 *                (qg_paged_mqa_schedule_size() gives its bytes)
 *  logits        fp32, or bf16 with logits_bf16, [batch * next_n][ld_logits],
 *                ld_logits >= max_context_len, 16-byte aligned rows; columns
 *                j < context length are written; with clean = 1 the others
 *                below max_context_len are -inf, with clean = 0 untouched
 * heads 32 or 64; head_dim 32, 64 or 128; next_n 1 or 2; batch >= 0;
 * max_context_len >= 1; num_sms 0 (the context's SM count) or in [1, the
 * device's SMs]: the CTAs the logits kernel runs, and the schedule's rows.
 * The schedule reads only context_lens, batch, next_n, max_context_len,
 * num_sms and schedule.
 */
typedef struct {
    int batch, next_n, heads, head_dim;
    const void *q;                /* e4m3 [batch][next_n][heads][head_dim] */
    const void *kv_cache;         /* fused cache, num_blocks blocks */
    int num_blocks;
    int64_t block_stride;         /* bytes; 0 = 64 * (head_dim + 4) */
    const float *weights;         /* [batch * next_n][ld_weights] */
    int64_t ld_weights;
    const int32_t *context_lens;  /* [batch][next_n] */
    const int32_t *block_table;   /* [batch][block_table_ld] */
    int64_t block_table_ld;
    int max_context_len;
    int num_sms;                  /* 0: the context's SM count */
    int32_t *schedule;            /* [num_sms + 1][2] */
    void *logits;                 /* fp32 or bf16 [batch * next_n][ld_logits] */
    int64_t ld_logits;
    int logits_bf16;
    int clean;
} qg_paged_mqa_logits_args;

/** @return the bytes of the schedule buffer for `num_sms` CTAs ((num_sms + 1)
 *  * 2 int32), or 0 when num_sms < 1. */
QG_API size_t qg_paged_mqa_schedule_size(int num_sms);

/**
 * Split the decode step's work (64-key blocks of each batch entry) over the
 * logits kernel's CTAs, on the device from args->context_lens, into
 * args->schedule (DeepGEMM's get_paged_mqa_logits_metadata, as a kernel: it
 * reads context_lens on the device, so schedule + logits capture in a CUDA
 * graph and replay with new lengths). Reads batch, next_n, context_lens,
 * max_context_len, num_sms and schedule of `args` only.
 * @return as qg_fp8_mqa_logits.
 */
QG_API qg_status qg_paged_mqa_logits_schedule(qg_context *ctx, const qg_paged_mqa_logits_args *args,
                                              struct CUstream_st *stream);

/**
 * FP8 MQA logits over the paged KV cache (see qg_paged_mqa_logits_args), with
 * the schedule qg_paged_mqa_logits_schedule wrote. Graph-capturable and
 * bitwise reproducible as qg_fp8_mqa_logits.
 * @return as qg_fp8_mqa_logits.
 */
QG_API qg_status qg_fp8_paged_mqa_logits(qg_context *ctx, const qg_paged_mqa_logits_args *args,
                                         struct CUstream_st *stream);

/*
 * Arguments of qg_tf32_hc_prenorm_gemm (DeepGEMM's tf32_hc_prenorm_gemm, the
 * HyperConnection pre-norm GEMM), over num_splits parts of K (DeepGEMM's
 * split rule: part s covers 64-wide K blocks [s q + min(s, r), ...), q + (s < r)
 * of them, q = (k / 64) / S, r = (k / 64) % S; an empty part writes zeros):
 *
 *   d[s][i][j]    = sum_{k in part s} a[i][k] b[j][k]   (TF32 products, FP32 sums)
 *   sqr_sum[s][i] = sum_{k in part s} a[i][k]^2
 *
 *  a        bf16 [m][lda] (lda >= k, lda * 2 a multiple of 16), 16-byte aligned
 *  b        fp32 [n][ldb] (ldb >= k, ldb * 4 a multiple of 16), 16-byte aligned
 *  d        fp32 [S][m][ldd] (ldd >= n, even), parts d_split_ld elements apart
 *           (0: m * ldd), 8-byte aligned; m * ldd and d_split_ld at most 2^40
 *           (QG_ERROR_UNSUPPORTED beyond)
 *  sqr_sum  fp32 [S][m], dense, 4-byte aligned
 * n 8, 16, 24 or 32; k a positive multiple of 64; m >= 0; num_splits S in
 * [1, 65536] (0 means 1: d [m][ldd], sqr_sum [m]). d overlaps no input.
 */
typedef struct {
    int m, n, k;
    int num_splits;           /* 0 or 1: unsplit */
    const void *a;            /* bf16 [m][lda] */
    int64_t lda;
    const float *b;           /* [n][ldb] */
    int64_t ldb;
    float *d;                 /* [S][m][ldd] */
    int64_t ldd;
    int64_t d_split_ld;       /* 0: m * ldd */
    float *sqr_sum;           /* [S][m] */
} qg_hc_prenorm_args;

/**
 * The HyperConnection pre-norm GEMM (see qg_hc_prenorm_args), on `stream`;
 * graph-capturable and bitwise reproducible as qg_fp8_mqa_logits.
 * @return as qg_fp8_mqa_logits.
 */
QG_API qg_status qg_tf32_hc_prenorm_gemm(qg_context *ctx, const qg_hc_prenorm_args *args,
                                         struct CUstream_st *stream);

/* Which indexer / HC kernel qg_indexer_compile builds. */
typedef enum {
    QG_INDEXER_MQA_LOGITS = 0,        /* args: qg_mqa_logits_args */
    QG_INDEXER_PAGED_SCHEDULE = 1,    /* args: qg_paged_mqa_logits_args */
    QG_INDEXER_PAGED_MQA_LOGITS = 2,  /* args: qg_paged_mqa_logits_args */
    QG_INDEXER_HC_PRENORM = 3         /* args: qg_hc_prenorm_args */
} qg_indexer_kind;

/**
 * Compile (or find in the caches) the kernel the call of `kind` with `args`
 * would run; only the shape fields are read (no pointer). Works on offline
 * contexts; on a device context it also loads the kernel, so that a later
 * call (or a CUDA-graph capture) neither compiles nor loads. `info` may be
 * NULL.
 * @return QG_SUCCESS, QG_ERROR_INVALID_ARGUMENT, QG_ERROR_UNSUPPORTED,
 *         QG_ERROR_COMPILE.
 */
QG_API qg_status qg_indexer_compile(qg_context *ctx, qg_indexer_kind kind, const void *args,
                                    qg_kernel_info *info);

/* ------------------------------------------------------------------------ */
/* Host utilities (CPU)                                                      */
/* ------------------------------------------------------------------------ */

/** @return the e4m3 code nearest to x (round to nearest even, saturating to
 *  +-448; NaN maps to a NaN code 0x7f/0xff keeping the sign). */
QG_API uint8_t qg_fp8_e4m3_encode(float x);
/** @return the exact value of e4m3 code `v` (NaN for 0x7f and 0xff). */
QG_API float qg_fp8_e4m3_decode(uint8_t v);
/** @return the bf16 bits nearest to x (round to nearest even; NaN stays NaN). */
QG_API uint16_t qg_bf16_encode(float x);
/** @return the exact value of bf16 bits `v`. */
QG_API float qg_bf16_decode(uint16_t v);

#ifdef __cplusplus
}
#endif
#endif /* QGEMM_H */
