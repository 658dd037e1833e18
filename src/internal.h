/*
 * internal.h -- what the library's C files share. Not installed.
 *
 * Invariants:
 *  - every failure goes through qg__fail(), which records the thread's message
 *    and returns the status, so `return qg__fail(...)` is the only error idiom;
 *  - nothing here prints unless QGEMM_JIT_DEBUG / QGEMM_PRINT_CONFIG is set;
 *  - the CUDA driver is reached only through qg__driver() (dlopen'ed).
 */
#ifndef QG_INTERNAL_H
#define QG_INTERNAL_H

#include "qgemm.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

/* Errors, the driver table and the testkit's seam (src/seam.h). */
#include "seam.h"

/* ---- environment (src/env.c: the table of every variable read) ----------- */

typedef struct { const char *name, *meaning, *fallback; } qg_env_knob;
extern const qg_env_knob qg__env_knobs[];
extern const int qg__num_env_knobs;
/* A debug switch: set, non-empty and not "0". Read at each call (tests change them). */
bool qg__env_flag(const char *name);
/* The variable's value, or NULL when unset or empty. */
const char *qg__env_string(const char *name);
/* The A/B variables' word lists (QGEMM_FP8OUT_VARIANT, QGEMM_HC_VARIANT,
 * QGEMM_CAST_VARIANT, QGEMM_BF16_KGROUPED): *v at
 * the next word of a list whose words end at any character of seps (start
 * with the value; NULL after the last word). Returns the word's index in
 * names[0 .. n) and steps *v past it and its separator; -1 when the list is
 * done; -2 for a word not in names. An empty word ("a++b", "a+") is skipped
 * when skip_empty, else it is a word not in names. */
int qg__env_next_word(const char **v, const char *seps, bool skip_empty,
                      const char *const names[], int n);
/* "qgemm jit: <message>" on stderr when QGEMM_JIT_DEBUG is on (jit.c, cache.c). */
void qg__jit_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- NVRTC's search (src/nvrtc.c; qg__nvrtc_load in seam.h uses it) ------ */

/* Look for libnvrtc in dir (may be NULL), then cuda_home/lib64 and lib (may be
 * NULL), then, when `system`, through the system loader; fill *out and `path`
 * from the first that has every entry point (the handle stays open).
 * @return QG_SUCCESS, or QG_ERROR_COMPILE naming every path tried and why. */
qg_status qg__nvrtc_search(const char *dir, const char *cuda_home, bool system, qg_nvrtc *out,
                           char *path, size_t path_len);

/* ---- run-time compilation (src/jit.c) ----------------------------------- */

/* The kernel sources, embedded at build time (generated src/kernels_embedded.c). */
typedef struct { const char *name; const char *text; } qg_embedded_file;
extern const qg_embedded_file qg__kernel_files[];
extern const int qg__num_kernel_files;

typedef struct qg_jit_cache qg_jit_cache;   /* thread-safe, in-memory */
qg_status qg__jit_cache_create(qg_jit_cache **out);
void qg__jit_cache_destroy(qg_jit_cache *cache);

typedef struct {
    const void *cubin;      /* owned by the cache; valid until it is destroyed */
    size_t cubin_size;
    bool from_disk;         /* the cubin was read from the disk cache (by this call,
                               or by the lookup that filled the memory entry) */
    qg_kernel_info info;
} qg_jit_result;

/*
 * Compile `source` (which #includes files of qg__kernel_files) for sm_90a
 * with NVRTC, or find it in the memory cache, then in the disk cache
 * (src/cache.c; $QGEMM_CACHE_DIR, default $XDG_CACHE_HOME/qgemm or ~/.cache/qgemm). The key hashes the source, every
 * embedded file, the options and the NVRTC version. Rejects (QG_ERROR_COMPILE)
 * a kernel whose ptxas report shows spills or a stack frame.
 * QGEMM_JIT_DEBUG=1 prints the compile; QGEMM_JIT_DUMP=dir writes .cu/.ptx.
 */
qg_status qg__jit_compile(qg_jit_cache *cache, const char *source, qg_jit_result *out);

/*
 * The driver refused `cubin`, which qg__jit_compile returned for `key` with
 * from_disk set (a disk-cache entry that passed the cache's checks but is
 * not a loadable kernel: forged with a recomputed hash, another kernel's,
 * another architecture's). Drop it from the memory cache (the cubin stays
 * valid until the cache is destroyed) and delete its file, so the next
 * qg__jit_compile of the key compiles it again. `path` (may be NULL)
 * receives the file's name ("" without a disk cache).
 * @return true when discarded; false when the memory entry no longer holds
 *         that cubin (someone discarded and recompiled it already) or it did
 *         not come from disk: nothing is touched then.
 */
bool qg__jit_discard(qg_jit_cache *cache, const char *key, const void *cubin, char *path,
                     size_t path_len);

/* Registers and stack frame of the kernels in a cubin (src/cubin.c): the
 * largest over its functions. @return false for a malformed cubin. */
bool qg__cubin_resources(const void *cubin, size_t size, int *registers, int *frame_bytes);
/* NULL when `cubin` is a whole 64-bit CUDA ELF image (headers, every section
 * and segment inside its `size` bytes; src/cubin.c), else why not. */
const char *qg__cubin_check(const void *cubin, size_t size);

/* ---- the FP8 family's configuration (src/fp8_config.c) --------------------------------------- */

/* Derived compile-time constants of one kernel variant. */
typedef struct {
    int num_math_wgs;       /* math warpgroups: 1 (block_m 64) or 2 */
    int num_threads;        /* 128 * (num_math_wgs + 1) */
    int cluster_size;       /* 1, or 2 with multicast or split-K */
    int split_k;            /* 1, or 2: the cluster's CTAs share a tile, each half of K */
    int num_k_blocks;       /* ceil(K / 128) */
    int sfb_rows;           /* SFB rows (128-blocks of N) a tile can touch: 1..3 */
    size_t smem_bytes;      /* dynamic shared memory, including alignment slack */
    int num_stages;         /* resolved (never 0) */
    int producer_regs;      /* setmaxnreg of the TMA warpgroup */
    int math_regs;          /* setmaxnreg of each math warpgroup */
    int swizzle_group;      /* resolved (never 0) */
    int wgmma_n;            /* N of one wgmma: block_n, or block_n / 2 (wide 128-row tiles) */
    int acc_sets;           /* wgmma accumulator sets per math warpgroup */
    bool kpipe;             /* K-pipelined main loop (two accumulator sets, one unit) */
    int store_cols;         /* columns of one TMA store chunk of D: bf16 16, 32 or 64; FP32 8, 16 or 32,
                               or block_n where d_rows */
    bool d_rows;            /* FP32 D stored row-major, one unswizzled chunk of block_n columns
                               (the kernel's QG_D_ROWS) */
    int a_box_rows;         /* rows of A (and SFA) one CTA's TMA box loads: the CTA's share of
                               block_m, or round_up(M, 8) for a dense M below block_m */
    int d_fp8;              /* 0: bf16 (or the 1D1D kinds' FP32) D; 1: e4m3 D with FP32 1x128
                               scales; 2: the same, scales UE8M0 (the kernel's QG_D_FP8); plus
                               QG_D_SWIGLU: the SwiGLU epilogue (the kernel's QG_SWIGLU) */
} qg_kernel_plan;

/* d_fp8's flag for the SwiGLU epilogue (qg_*_swiglu): B's gate and up rows
 * interleaved in 128-row blocks, D = silu(gate) * up as e4m3, N / 2 columns.
 * d_fp8 & QG_D_FP8_SCALES is the scale mode (1 FP32, 2 UE8M0). */
#define QG_D_SWIGLU 4
#define QG_D_FP8_SCALES 3
/* d_fp8's flags of QGEMM_FP8OUT_VARIANT (A/B runs; e4m3 D without SwiGLU
 * only; src/fp8_config.c qg__fp8out_variant): QG_D_FP8_ROOM: the heuristic
 * counts the clusters of 4 the launch will find resident (30 on 132 SMs) instead
 * of 128 CTAs; QG_D_FP8_EARLY: the split tiles' kernel starts its producer
 * before the cluster barrier, which it waits for only before the first amax
 * exchange, and exits without a cluster barrier (the kernel's QG_FP8_EARLY); QG_D_FP8_SFBPF: every e4m3-D kernel's
 * TMA lane prefetches its first tile's SFB into L2 before its first loads
 * (the kernel's QG_FP8_SFB_PF). */
#define QG_D_FP8_ROOM 8
#define QG_D_FP8_EARLY 16
#define QG_D_FP8_SFBPF 32
#define QG_D_FP8_VARIANT (QG_D_FP8_ROOM | QG_D_FP8_EARLY | QG_D_FP8_SFBPF)
/* QG_D_FP8_EPI (QGEMM_FP8OUT_VARIANT epi, not in new): the cheaper e4m3
 * epilogue (the kernel's QG_FP8_EPI: max.NaN amax, one branch a row group
 * for the non-finite fix-up), the same bytes and scales. */
#define QG_D_FP8_EPI 64
/* QG_D_FP8_LAST (QGEMM_FP8OUT_VARIANT last, not in new): with QG_D_FP8_EARLY,
 * the split tiles' exchange releases its slots at the end of a tile and not
 * at all on a CTA's last one, with no exit wait (the kernel's QG_FP8_LAST),
 * the same bytes and scales. */
#define QG_D_FP8_LAST 128
/* QG_D_FP8_NK (QGEMM_FP8OUT_VARIANT nk, not in new): dense split tiles may run
 * split-K 2 too (a cluster of 128 / block_n x 2 CTAs: each K rank's CTAs hold
 * one scale group, K rank 1 sends its sums to K rank 0 of its column slot,
 * the K-rank-0 CTAs exchange the amax), in forced configurations and, for
 * small dense problems whose split tiles leave most SMs idle (N 576), in the
 * heuristic. Its bytes differ from the unsplit K's in FP32 rounding only. */
#define QG_D_FP8_NK 256
#define QG_D_FP8_FLAGS (QG_D_FP8_VARIANT | QG_D_FP8_EPI | QG_D_FP8_LAST | QG_D_FP8_NK)
/* d_fp8's SwiGLU flags of QGEMM_FP8OUT_VARIANT (with QG_D_SWIGLU only; none in
 * the default; each changes the heuristic's choice alone, never a kernel's
 * source, so a tile's bytes are the default's):
 * QG_D_SWIGLU_M64 (swm64): the SwiGLU heuristic may take 64x256 (one math
 * warpgroup; two n-parts of 128, gate and up, in one accumulator set): a
 * masked group of <= 64 rows then loads no rows of A it does not use, and
 * its stages are 41 KB instead of 49 KB (5 of them fit instead of 4);
 * QG_D_SWIGLU_MCA (swmca): the masked kind's 128x256 takes A multicast over
 * 2.5 waves of tiles and more (groups of 129..256 rows: a CTA pair shares its
 * A tile, L2 serves 40 KB a stage a CTA instead of 48 KB);
 * QG_D_SWIGLU_MCAC (swmcac): the same in the contiguous kind (its A-multicast
 * tile is rated above the unshared one there). */
#define QG_D_SWIGLU_M64 512
#define QG_D_SWIGLU_MCA 1024
#define QG_D_SWIGLU_MCAC 2048
#define QG_D_SWIGLU_FLAGS (QG_D_SWIGLU_M64 | QG_D_SWIGLU_MCA | QG_D_SWIGLU_MCAC)

/* The kinds of the 1D1D kernel (B scaled per column per 128 of K, FP32 D):
 * the weight gradient and the k-grouped weight gradient. */
static inline bool qg__one_d(qg_gemm_kind kind) {
    return kind == QG_GEMM_WGRAD || kind == QG_GEMM_K_GROUPED;
}

/* Validate a problem's shape fields; `fn` names the public caller in messages. */
qg_status qg__check_problem(const qg_problem *p, const char *fn);
/* Check cfg against p and the device; derive the plan. */
qg_status qg__plan(const qg_device_props *props, const qg_problem *p, const qg_config *cfg,
                   qg_kernel_plan *out);
/* qg__plan, then fill cfg's derived fields for a grid of num_sms SMs. */
qg_status qg__complete_config_sms(const qg_device_props *props, int num_sms, const qg_problem *p,
                                  qg_config *cfg, qg_kernel_plan *plan);
/* The heuristic: choose and complete a configuration. */
qg_status qg__select(const qg_device_props *props, int num_sms, const qg_problem *p,
                     qg_config *out, qg_kernel_plan *plan);
/* The same, never choosing the block_m x block_n of any of avoid[0..num_avoid). */
qg_status qg__select_avoiding(const qg_device_props *props, int num_sms, const qg_problem *p,
                              const qg_config *avoid, int num_avoid, qg_config *out,
                              qg_kernel_plan *plan);
int qg__max_block_n(qg_gemm_kind kind, int block_m);
/* The same three for a GEMM whose D is e4m3 (d_fp8 1: FP32 scales, 2: UE8M0;
 * 0 is the calls above): the output kind is not a qg_problem field (that
 * struct's layout is public ABI), so it travels beside it. */
qg_status qg__plan_out(const qg_device_props *props, const qg_problem *p, int d_fp8,
                       const qg_config *cfg, qg_kernel_plan *out);
qg_status qg__complete_config_out(const qg_device_props *props, int num_sms, const qg_problem *p,
                                  int d_fp8, qg_config *cfg, qg_kernel_plan *plan);
qg_status qg__select_out(const qg_device_props *props, int num_sms, const qg_problem *p, int d_fp8,
                         const qg_config *avoid, int num_avoid, qg_config *out,
                         qg_kernel_plan *plan);
/* Whether the heuristic may pick B multicast for this m-grouped kind and D
 * (QGEMM_FP8_GROUPED_MCB, read now; unset: on for HBM3e-class devices,
 * props->dram_gbps >= 4500; false for the other kinds and e4m3 D): part of
 * the launch cache's key, as it changes the heuristic's choice. */
bool qg__fp8_grouped_mcb(const qg_device_props *props, qg_gemm_kind kind, int d_fp8);
/* QGEMM_FP8OUT_VARIANT as d_fp8 flags (QG_D_FP8_VARIANT's): unset the
 * default, new+epi+last+nk+swm64 (QG_D_FP8_VARIANT | QG_D_FP8_EPI | QG_D_FP8_LAST | QG_D_FP8_NK |
 * QG_D_SWIGLU_M64); -1 a value that is not a '+'-separated list of old, room, early,
 * sfbpf, new (= room+early+sfbpf), epi, last, nk: the caller fails, naming it. */
int qg__fp8out_variant(void);
/* QGEMM_FP8_HEUR (src/fp8_config.c): alternatives to the FP8 heuristic's
 * choice (issue 52) as flags; unset the default (notall+nomcb), 0 "none" (the
 * heuristic before them), -1 a value it does not take (the heuristic fails,
 * naming it); part of the launch cache's key. */
int qg__fp8_heur(void);
/* K blocks of its first B tile each CTA prefetches into L2 before
 * griddepcontrol.wait when the GEMM is launched with PDL (kernel argument
 * prefetch_kb; 0: none). Dense problems of one m-block without split-K only:
 * about 6 MiB of B over a grid of `grid` CTAs, 1 to 4 K blocks a CTA. */
int qg__pdl_prefetch_kb(const qg_problem *p, const qg_config *cfg, const qg_kernel_plan *plan,
                        int grid);
/* Dynamic shared memory of a kernel; sfb_floats: floats of one tile's SFB
 * buffer (SFB rows the tile touches x K blocks; the kernel keeps two). */
size_t qg__smem_bytes(int block_m, int block_n, int stages, int split_k, int sfb_floats);

/* ---- context (src/context.c) -------------------------------------------- */

/* The launch cache's entries and modules (src/launch.c; launch.h has its
 * interface, which context.c calls to tear the cache down). */
typedef struct qg_launch_entry qg_launch_entry;
typedef struct qg_module qg_module;

struct qg_context {
    int device;             /* -1 for offline */
    bool offline;
    qg_device_props props;
    int num_sms;            /* SMs used by kernels */
    bool pdl;               /* launch GEMMs with programmatic dependent launch */
    CUdevice cu_device;
    CUcontext cu_context;   /* retained primary context */
    const qg_driver *drv;
    qg_jit_cache *jit;
    pthread_mutex_t lock;   /* guards num_sms, pdl and the launch cache */
    qg_launch_entry *launches[256]; /* hash buckets: (family, key) -> kernel (src/launch.c) */
    qg_module *modules;     /* loaded modules, by JIT key */
};

/* ---- output vs inputs (src/overlap.c, issue 53) ------------------------- */

/* Bytes [begin, end) of one named argument (empty when begin == end). */
typedef struct {
    const char *name;   /* the argument, as messages name it: "d", "a", "sfa", ... */
    uintptr_t begin, end;
} qg_byte_range;
/* The extent of a strided matrix at ptr: rows x cols elements of elem_bytes,
 * rows ld elements apart, i.e. ((rows - 1) * ld + cols) * elem_bytes bytes
 * (saturated); empty for a NULL ptr or no rows or columns. */
qg_byte_range qg__matrix_range(const char *name, const void *ptr, uint64_t rows, uint64_t cols,
                               uint64_t ld, uint64_t elem_bytes);
/* The bytes a batched operand spans: batch 0's matrix (qg__matrix_range),
 * extended by the `stride` elements of each of the batches after it
 * (saturating at the address space; stride checked by qg__check_batch_stride). */
qg_byte_range qg__batched_range(const char *name, const void *ptr, uint64_t rows, uint64_t cols,
                                uint64_t ld, uint64_t elem_bytes, uint64_t batches, int64_t stride);
/* A batch stride in elements of elem_bytes: >= 0, whole 16-byte units (TMA),
 * below 2^40 bytes. @return QG_SUCCESS, or QG_ERROR_INVALID_ARGUMENT naming
 * `name` and `fn`. */
qg_status qg__check_batch_stride(int64_t stride, int elem_bytes, const char *fn, const char *name);
/* QG_ERROR_INVALID_ARGUMENT, naming both arguments and `fn`, when the output
 * range `out` overlaps any of inputs[0..num_inputs); empty ranges overlap
 * nothing, and inputs may overlap each other. @return QG_SUCCESS otherwise. */
qg_status qg__check_no_overlap(const char *fn, const qg_byte_range *out,
                               const qg_byte_range *inputs, int num_inputs);
/* The same for a GEMM call's arguments, by qgemm.h's layout of each kind: D's
 * extent (bf16, or FP32 for the weight-gradient kinds; G x M rows when
 * masked or k-grouped) against A, B, SFA, SFB, m_indices / masked_m /
 * group_ends, and a C that is not D. Call it after the shape and stride
 * checks (it trusts m, n, k, num_groups and the lds). M = 0 writes nothing
 * and passes. */
qg_status qg__check_gemm_no_overlap(const char *fn, qg_gemm_kind kind, const qg_gemm_args *args);
/* The same for an e4m3 D (one byte an element) of d_cols columns (n, or
 * n / 2 under SwiGLU) and its scales sfd ([G][ceil(d_cols/128)][sfd_ld]
 * floats, G masked only): neither over an input, nor the scales over D; and
 * row_weight (SwiGLU; NULL: none), [rows] floats, an input. */
qg_status qg__check_gemm_fp8_d_no_overlap(const char *fn, qg_gemm_kind kind, const qg_gemm_args *a,
                                          int64_t d_cols, const float *sfd, int64_t sfd_ld,
                                          const float *row_weight);

#endif /* QG_INTERNAL_H */
