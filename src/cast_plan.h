/*
 * cast_plan.h -- the cast kernels' host side: problem, launch plan, JIT source
 * (kernels/qg_cast.cuh). Pure C: no driver call, no allocation; the launch
 * path (module load, launch cache) is the caller's.
 *
 * Invariants:
 *  - qg__cast_plan validates a problem completely (a status and a message
 *    through qg__fail for anything the kernel cannot do) and sizes the launch
 *    from the SM count alone, taken as data;
 *  - qg__cast_source writes every compile-time choice as a macro, so two
 *    problems with equal sources share one cubin: the rows (M), the groups
 *    (except the k-grouped layout's), the strides and the pointers are run
 *    time (qg_cast_params);
 *  - qg_cast_params is the kernel's parameter, byte for byte (its size is baked
 *    into the source and checked by the kernel).
 */
#ifndef QG_CAST_PLAN_H
#define QG_CAST_PLAN_H

#include "qgemm.h"
#include <stddef.h>
#include <stdint.h>

/* The kernels of kernels/qg_cast.cuh (QG_CAST_OP). */
typedef enum {
    QG_CAST_PER_TOKEN = 1,        /* x [rows][k] -> e4m3 [rows][k], one scale per 1x128 */
    QG_CAST_PER_BLOCK = 2,        /* x [groups][n][k] -> e4m3, scales [groups][n/128][k/128] */
    QG_CAST_PER_CHANNEL = 3,      /* x [rows][k] (rows % 128 == 0) -> scales [rows/128][k] */
    QG_CAST_SILU_MUL = 4,         /* x [rows][2k] gate|up -> silu(gate)*up per token, [rows][k] */
    QG_CAST_SF_MN_MAJOR = 5,      /* scales [groups][m][k] (any strides) -> [groups][k][sf_ld] */
    QG_CAST_SF_PACK_UE8M0 = 6,    /* same, 4 UE8M0 exponents per int32: [groups][ceil(k/4)][sf_ld] */
    QG_CAST_SF_PACK_UE8M0_KGROUPED = 7 /* [k][m] float -> [packed_sf_k][m] int32, groups split k */
} qg_cast_op;

/* Which rows of a silu_mul input exist (QG_CAST_ROW_MASK). */
typedef enum {
    QG_CAST_ROWS_ALL = 0,
    QG_CAST_ROWS_MASKED = 1,     /* aux = masked_m [groups]: rows m >= masked_m[g] skipped */
    QG_CAST_ROWS_CONTIGUOUS = 2  /* aux = m_indices [rows]: rows with m_indices < 0 skipped */
} qg_cast_rows;

/* One cast. Unused fields are ignored (0). Sizes and strides in elements. */
typedef struct {
    qg_cast_op op;
    int in_f32;            /* ops 1-4: input float32 (1) or bf16 (0) */
    int ue8m0;             /* ops 1-4: scales rounded up to powers of two */
    int sf_mn_major;       /* ops 1, 4: scales M-major [groups][k/128][sf_ld] (else row-major [rows][k/128]) */
    qg_cast_rows rows_mask; /* op 4 */
    int64_t rows;          /* ops 1, 4: groups * m; op 3: M */
    int m;                 /* ops 1, 4: rows per group (M-major scales, masked); ops 5-7: mn */
    int groups;            /* ops 1, 4: groups (rows / m); op 2: weight groups; ops 5, 6: batches; op 7: K groups */
    int k;                 /* ops 1, 2: K; op 3: columns; op 4: output columns N; ops 5-7: sf_k */
    int n;                 /* op 2: rows (N) of one group */
    int64_t ld_in, ld_out; /* ops 1-4: row strides of x and of the e4m3 output */
    int sf_ld;             /* M-major scale stride: ops 1, 4 >= m rounded up to 4; ops 5, 6
                              >= m (m rounded up to 4 for TMA; m for a dense transposed copy) */
    int64_t in_stride[3];  /* ops 5, 6: strides of g, mn, k of the input scales */
    int in_align, out_align; /* ops 1-4: the largest power of two (<= 16) dividing the x / output addresses */
    int gran_k, k_alignment, psum, packed_sf_k; /* op 7 (DeepGEMM's arguments) */
    int one_pass;          /* ops 1-4: QGEMM_CAST_VARIANT all: a CTA per unit of work, the grid
                              not capped at what the SMs hold at once (A/B runs, issue 51) */
    int lean;              /* ops 1-4: QGEMM_CAST_VARIANT lean: QG_CAST_LEAN kernels (the same
                              bytes, fewer instructions an element) */
    int ring;              /* op 3: QGEMM_CAST_VARIANT ring: the shared-memory ring kernel
                              (QG_CAST_RING) where the rows allow 16-byte bulk copies */
    int lut;               /* op 4: QGEMM_CAST_VARIANT lut: silu from a shared-memory table
                              (QG_CAST_LUT), bf16 input with enough rows to amortise the table */
} qg_cast_problem;

typedef struct {
    int vec;          /* elements per global access (QG_CAST_VEC) */
    int threads;      /* block size */
    int unroll;       /* ops 1, 4: items per thread per round */
    int min_ctas;     /* CTAs per SM the kernel is compiled to fit (launch bounds; 1 = no cap) */
    unsigned grid;    /* CTAs; 0: nothing to do, launch nothing */
    int64_t work;     /* items (ops 1, 4), blocks (2), tiles (3), threads (5-7) */
    int ring;         /* op 3: QG_CAST_RING stages (0: the plain kernel) */
    int lut;          /* op 4: QG_CAST_LUT (0: the plain kernel) */
    int smem;         /* dynamic shared memory bytes of a CTA */
} qg_cast_plan;

/* The kernel's parameter (kernels/qg_cast.cuh's twin; device addresses). */
typedef struct {
    uint64_t in, out, sf, aux;
    int64_t rows, ld_in, ld_out, in_stride[3];
    int32_t m, groups, sf_ld, sf_k, packed_sf_k, reserved;
} qg_cast_params;

#define QG_CAST_KERNEL_NAME "qg_cast_kernel"

/* Validate p and plan its launch on a device of num_sms SMs.
 * @return QG_SUCCESS and *out, or QG_ERROR_INVALID_ARGUMENT / QG_ERROR_UNSUPPORTED
 *         with a message (*out untouched). */
qg_status qg__cast_plan(const qg_cast_problem *p, int num_sms, qg_cast_plan *out);

/* The JIT source of p's kernel under plan into buf (NUL-terminated).
 * @return QG_SUCCESS, or QG_ERROR_INTERNAL when cap is too small. */
qg_status qg__cast_source(const qg_cast_problem *p, const qg_cast_plan *plan, char *buf, size_t cap);

/* The kernel parameter for p and these device addresses (aux: masked_m,
 * m_indices or the k-grouped layout; 0 when unused). */
void qg__cast_params(const qg_cast_problem *p, uint64_t in, uint64_t out, uint64_t sf, uint64_t aux,
                     qg_cast_params *params);

/* "per_token", "per_block", ... for messages and source comments. */
const char *qg__cast_op_name(qg_cast_op op);

#endif /* QG_CAST_PLAN_H */
