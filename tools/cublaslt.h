/*
 * cublaslt.h -- the peer `qgemm bench` compares against: cuBLASLt running the
 * same block-scaled FP8 GEMM on the same device buffers.
 *
 * cuBLASLt is dlopen'ed at run time (libcublasLt.so.13, .12, then
 * libcublasLt.so), so the tool has no link-time dependency on it; <cublasLt.h>
 * is used for types and enums only. Block scaling on sm_90 needs cuBLASLt
 * >= 12.9 (cublasLtGetVersion() >= 120900); an older library is refused with
 * a message and the bench times qgemm alone.
 *
 * Invariants:
 *  - every function runs with the bench's CUDA context current (the primary
 *    context qgemm retains), which is the context cuBLASLt's runtime uses;
 *  - nothing here prints: failures come back as a message in `why`, which
 *    names the cuBLASLt call, its cublasStatus and what was being done;
 *  - a plan (lt_gemm) owns everything it allocated (converted scale tensors),
 *    so the timed region is exactly one cublasLtMatmul call.
 */
#ifndef QG_TOOLS_CUBLASLT_H
#define QG_TOOLS_CUBLASLT_H

#include "cli.h"

typedef struct lt_peer lt_peer; /* the loaded library, a handle, a workspace */
typedef struct lt_gemm lt_gemm; /* one planned GEMM: descriptors, algorithm, scales */

/*
 * One GEMM in qgemm's layouts (qgemm.h), device pointers:
 *   D[m][ldd] (bf16) = (A[m][lda] * SFA) (B[n][ldb] * SFB)^T
 *   SFA: sfa[kb * sfa_ld + row]            (M-major, one per 1x128 of K)
 *   SFB: sfb[(row / 128) * ceil(k/128) + kb] (one per 128x128 block)
 */
typedef struct {
    int m, n, k;
    const void *a;
    int64_t lda;
    const float *sfa;
    int64_t sfa_ld;
    const void *b;
    int64_t ldb;
    const float *sfb;
    void *d;
    int64_t ldd;
} lt_gemm_desc;

/*
 * Load cuBLASLt, check its version, create a handle and a 32 MiB workspace.
 * @return the peer, or NULL with the reason in why (library missing, too old,
 *         handle or workspace allocation failed).
 */
lt_peer *lt_peer_open(const qg_driver *drv, char *why, size_t why_len);
void lt_peer_close(lt_peer *peer);
/** @return cublasLtGetVersion() of the loaded library (e.g. 130100). */
size_t lt_peer_version(const lt_peer *peer);
/* Load the library just to read its version (no GPU needed).
 * @return the version, or 0 with the reason in why (missing, too old). */
size_t lt_probe_version(char *why, size_t why_len);

/*
 * Plan one GEMM: build the descriptors (column-major D^T = B . A^T, "TN"),
 * convert the scale tensors to cuBLASLt's layouts when they differ (once,
 * here, never in the timed region), ask the heuristic for up to 8
 * algorithms and keep the fastest of them (each timed briefly on `stream`).
 * Writes D while doing so.
 * @return 0 and *out, or -1 with why = "<what was done>: <call>: <status>".
 */
int lt_gemm_create(lt_peer *peer, const lt_gemm_desc *desc, CUstream stream, lt_gemm **out,
                   char *why, size_t why_len);
/* Enqueue the planned GEMM on `stream`. @return 0, or -1 with why. */
int lt_gemm_run(lt_gemm *g, CUstream stream, char *why, size_t why_len);
/* "algo i/n tile AxB cluster XxYxZ": its place in the heuristic's list and, when
 * cuBLASLt reports them, its tile and cluster (cuBLASLt's M x N: its M is qgemm's N). */
const char *lt_gemm_algo_name(const lt_gemm *g);
void lt_gemm_destroy(lt_gemm *g);

#endif /* QG_TOOLS_CUBLASLT_H */
