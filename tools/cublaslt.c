/*
 * cublaslt.c -- the cuBLASLt peer (see cublaslt.h).
 *
 * Mapping (cuBLAS is column-major): our row-major D[M][N] is cuBLAS's
 * column-major D^T (N x M, ld = ldd), so we compute D^T = B . A^T:
 *   cuBLAS "A" = our B: stored K x N column-major (ld = ldb), op = T
 *   cuBLAS "B" = our A: stored K x M column-major (ld = lda), op = N
 *   cuBLAS m, n, k = N, M, K. This is the "TN" form FP8 requires on sm_90.
 *
 * Scale layouts (cuBLAS docs, 3.1.4.5.1 "Scaling factors layouts", 13.x):
 *  - start addresses 16-byte aligned; cuBLAS's M and N (our N and M)
 *    multiples of 4;
 *  - VEC128_32F (cuBLAS "B" = our activations A): N-major, shape N x L
 *    (L = ceil(K/128)), i.e. sf[kb * M + row], rows contiguous, no padding
 *    (M is a multiple of 4). That is qgemm's SFA when sfa_ld == M.
 *  - BLK128x128_32F (cuBLAS "A" = our weights B): K-major, shape
 *    L4 x ceil(N/128) with L4 = L rounded up to 4, i.e. sf[nb * L4 + kb].
 *    That is qgemm's SFB when L is a multiple of 4.
 * When our tensors differ (sfa_ld != M, L % 4 != 0, or an unaligned start
 * such as a contiguous-layout group segment), the plan copies them once into
 * buffers it owns, row by row with cuMemcpyDtoD (padding zeroed).
 * The same layouts are used by PyTorch's _scaled_mm (1x128: stride (1, M);
 * 128x128: row stride round_up(L, 4)) and NVIDIA's cuBLASMp samples.
 */
#include "cublaslt.h"

#include <cublasLt.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LT_WORKSPACE_BYTES (32u << 20)
#define LT_MAX_ALGOS 8
#define LT_MIN_VERSION 120900 /* CUDA 12.9: VEC128 / BLK128x128 on sm_90 */
#define LT_ALGO_TIMING_RUNS 5

/* The cuBLASLt entry points we use; types taken from the header itself. */
#define LT_FUNCS(X)                                                                       \
    X(cublasLtGetVersion) X(cublasLtGetStatusName) X(cublasLtGetStatusString)               \
    X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate)                         \
    X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)                           \
    X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)                             \
    X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                     \
    X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)                \
    X(cublasLtMatmul) X(cublasLtMatmulAlgoConfigGetAttribute)

struct lt_peer {
    void *lib;
#define LT_DECLARE(name) __typeof__(name) *name;
    LT_FUNCS(LT_DECLARE)
#undef LT_DECLARE
    const qg_driver *drv;
    size_t version;
    cublasLtHandle_t handle;
    CUdeviceptr workspace;
};

struct lt_gemm {
    lt_peer *peer;
    lt_gemm_desc desc;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a_layout, b_layout, d_layout;
    cublasLtMatmulAlgo_t algo;
    const float *sf_act, *sf_weight; /* what cuBLASLt reads (ours or converted) */
    CUdeviceptr own_act, own_weight;  /* converted copies, 0 when not needed */
    char algo_name[80];
};

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...) {
    if (!why || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* "<call>: CUBLAS_STATUS_X (text)" for a failed cuBLASLt call. */
static int lt_fail(const lt_peer *p, cublasStatus_t s, const char *doing, const char *call,
                   char *why, size_t len) {
    const char *name = p->cublasLtGetStatusName ? p->cublasLtGetStatusName(s) : NULL;
    const char *text = p->cublasLtGetStatusString ? p->cublasLtGetStatusString(s) : NULL;
    say(why, len, "%s: %s returned %s (%d: %s)", doing, call, name ? name : "?", (int)s,
        text ? text : "no description");
    return -1;
}

static int cu_fail(const qg_driver *drv, CUresult r, const char *doing, const char *call,
                   char *why, size_t len) {
    const char *text = NULL;
    if (drv->cuGetErrorString) drv->cuGetErrorString(r, &text);
    say(why, len, "%s: %s failed (%d: %s)", doing, call, (int)r, text ? text : "unknown");
    return -1;
}

/* dlopen cuBLASLt, resolve every entry point, check the version. */
static int load_library(lt_peer *p, char *why, size_t why_len) {
    static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                        "libcublasLt.so"};
    const char *last_error = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !p->lib; i++) {
        p->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!p->lib) last_error = dlerror();
    }
    if (!p->lib) {
        say(why, why_len, "cannot load cuBLASLt (tried libcublasLt.so.13, .12, .so): %s",
            last_error ? last_error : "");
        return -1;
    }
#define LT_LOAD(name)                                                                   \
    *(void **)(&p->name) = dlsym(p->lib, #name);                                        \
    if (!p->name) {                                                                     \
        say(why, why_len, "cuBLASLt has no symbol %s (library too old?)", #name);       \
        return -1;                                                                      \
    }
    LT_FUNCS(LT_LOAD)
#undef LT_LOAD
    p->version = p->cublasLtGetVersion();
    if (p->version < LT_MIN_VERSION) {
        say(why, why_len, "cuBLASLt too old (version %zu, need >= %d for block-scaled FP8 on "
            "sm_90), timing qgemm alone", p->version, LT_MIN_VERSION);
        return -1;
    }
    return 0;
}

size_t lt_probe_version(char *why, size_t why_len) {
    lt_peer probe;
    memset(&probe, 0, sizeof probe);
    int r = load_library(&probe, why, why_len);
    /* The library stays loaded (see lt_peer_close). */
    return r == 0 ? probe.version : 0;
}

lt_peer *lt_peer_open(const qg_driver *drv, char *why, size_t why_len) {
    lt_peer *p = calloc(1, sizeof *p);
    if (!p) {
        say(why, why_len, "out of host memory");
        return NULL;
    }
    p->drv = drv;
    if (load_library(p, why, why_len)) {
        lt_peer_close(p);
        return NULL;
    }
    cublasStatus_t s = p->cublasLtCreate(&p->handle);
    if (s != CUBLAS_STATUS_SUCCESS) {
        lt_fail(p, s, "opening cuBLASLt", "cublasLtCreate", why, why_len);
        p->handle = NULL;
        lt_peer_close(p);
        return NULL;
    }
    CUresult r = drv->cuMemAlloc(&p->workspace, LT_WORKSPACE_BYTES);
    if (r != CUDA_SUCCESS) {
        cu_fail(drv, r, "allocating the 32 MiB cuBLASLt workspace", "cuMemAlloc", why, why_len);
        p->workspace = 0;
        lt_peer_close(p);
        return NULL;
    }
    return p;
}

void lt_peer_close(lt_peer *p) {
    if (!p) return;
    if (p->workspace) p->drv->cuMemFree(p->workspace);
    if (p->handle) p->cublasLtDestroy(p->handle);
    /* Never dlclose: cuBLASLt carries a static CUDA runtime whose exit-time
     * teardown must not run from unmapped code (as driver.c keeps libcuda). */
    free(p);
}

size_t lt_peer_version(const lt_peer *p) { return p ? p->version : 0; }

/*
 * Copy `rows` rows of `cols` floats from src (row stride src_ld) to a new
 * zeroed buffer with row stride dst_ld (>= cols). Synchronous: the copies go
 * on the legacy stream and we wait, so the timed region never includes them.
 */
static int copy_rows(const qg_driver *drv, const float *src, int64_t src_ld, int64_t rows,
                     int64_t cols, int64_t dst_ld, CUdeviceptr *out, const char *what, char *why,
                     size_t len) {
    size_t bytes = (size_t)(rows * dst_ld) * sizeof(float);
    CUresult r = drv->cuMemAlloc(out, bytes ? bytes : 16);
    if (r != CUDA_SUCCESS) {
        *out = 0;
        return cu_fail(drv, r, what, "cuMemAlloc", why, len);
    }
    r = drv->cuMemsetD8(*out, 0, bytes);
    for (int64_t i = 0; r == CUDA_SUCCESS && i < rows; i++)
        r = drv->cuMemcpyDtoD(*out + (CUdeviceptr)(i * dst_ld * 4),
                              (CUdeviceptr)(uintptr_t)(src + i * src_ld), (size_t)cols * 4);
    if (r == CUDA_SUCCESS) r = drv->cuCtxSynchronize();
    if (r != CUDA_SUCCESS) return cu_fail(drv, r, what, "cuMemcpyDtoD", why, len);
    return 0;
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* Point sf_act / sf_weight at tensors in cuBLASLt's layouts (see top of file). */
static int prepare_scales(lt_gemm *g, char *why, size_t len) {
    const lt_gemm_desc *d = &g->desc;
    const qg_driver *drv = g->peer->drv;
    int64_t kb = (d->k + 127) / 128, kb4 = (kb + 3) / 4 * 4, nb = (d->n + 127) / 128;
    g->sf_act = d->sfa;
    if (d->sfa_ld != d->m || !aligned16(d->sfa)) {
        if (copy_rows(drv, d->sfa, d->sfa_ld, kb, d->m, d->m, &g->own_act,
                      "converting SFA to cuBLASLt's VEC128 layout [K/128][M]", why, len))
            return -1;
        g->sf_act = (const float *)(uintptr_t)g->own_act;
    }
    g->sf_weight = d->sfb;
    if (kb4 != kb || !aligned16(d->sfb)) {
        if (copy_rows(drv, d->sfb, kb, nb, kb, kb4, &g->own_weight,
                      "converting SFB to cuBLASLt's BLK128x128 layout [N/128][round_up(K/128,4)]",
                      why, len))
            return -1;
        g->sf_weight = (const float *)(uintptr_t)g->own_weight;
    }
    return 0;
}

#define LT_TRY(call, doing)                                                             \
    do {                                                                                \
        cublasStatus_t s_ = (call);                                                     \
        if (s_ != CUBLAS_STATUS_SUCCESS) return lt_fail(p, s_, doing, #call, why, len); \
    } while (0)

static int build_descriptors(lt_gemm *g, char *why, size_t len) {
    const lt_peer *p = g->peer;
    const lt_gemm_desc *d = &g->desc;
    const char *doing = "creating the matmul descriptor";
    LT_TRY(p->cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), doing);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F; /* cuBLAS A = our B */
    int32_t mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;     /* cuBLAS B = our A */
    const void *ptr_a = g->sf_weight, *ptr_b = g->sf_act;
    LT_TRY(p->cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
           "setting TRANSA = T");
    LT_TRY(p->cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
           "setting TRANSB = N");
    LT_TRY(p->cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a,
                                             sizeof mode_a),
           "setting A_SCALE_MODE = BLK128x128_32F");
    LT_TRY(p->cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b,
                                             sizeof mode_b),
           "setting B_SCALE_MODE = VEC128_32F");
    LT_TRY(p->cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &ptr_a,
                                             sizeof ptr_a),
           "setting A_SCALE_POINTER (SFB)");
    LT_TRY(p->cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &ptr_b,
                                             sizeof ptr_b),
           "setting B_SCALE_POINTER (SFA)");
    LT_TRY(p->cublasLtMatrixLayoutCreate(&g->a_layout, CUDA_R_8F_E4M3, (uint64_t)d->k,
                                         (uint64_t)d->n, d->ldb),
           "creating the layout of B (K x N e4m3, column-major)");
    LT_TRY(p->cublasLtMatrixLayoutCreate(&g->b_layout, CUDA_R_8F_E4M3, (uint64_t)d->k,
                                         (uint64_t)d->m, d->lda),
           "creating the layout of A (K x M e4m3, column-major)");
    LT_TRY(p->cublasLtMatrixLayoutCreate(&g->d_layout, CUDA_R_16BF, (uint64_t)d->n,
                                         (uint64_t)d->m, d->ldd),
           "creating the layout of D (N x M bf16, column-major)");
    return 0;
}

static cublasStatus_t matmul(const lt_gemm *g, const cublasLtMatmulAlgo_t *algo,
                             CUstream stream) {
    const lt_peer *p = g->peer;
    const float alpha = 1.0f, beta = 0.0f;
    /* C = D with beta 0: in-place form, so C needs no buffer of its own. */
    return p->cublasLtMatmul(p->handle, g->op, &alpha, g->desc.b, g->a_layout, g->desc.a,
                             g->b_layout, &beta, g->desc.d, g->d_layout, g->desc.d,
                             g->d_layout, algo, (void *)(uintptr_t)p->workspace,
                             LT_WORKSPACE_BYTES, (cudaStream_t)stream);
}

/* Mean time (ms) of LT_ALGO_TIMING_RUNS back-to-back runs after one warm-up;
 * negative when the algorithm fails to run. Brief on purpose: it only ranks. */
static float time_algo(const lt_gemm *g, const cublasLtMatmulAlgo_t *algo, CUstream stream,
                       CUevent start, CUevent stop, cublasStatus_t *status) {
    const qg_driver *drv = g->peer->drv;
    *status = matmul(g, algo, stream);
    if (*status != CUBLAS_STATUS_SUCCESS) return -1.0f;
    drv->cuEventRecord(start, stream);
    for (int i = 0; i < LT_ALGO_TIMING_RUNS && *status == CUBLAS_STATUS_SUCCESS; i++)
        *status = matmul(g, algo, stream);
    drv->cuEventRecord(stop, stream);
    float ms = -1.0f;
    if (drv->cuEventSynchronize(stop) != CUDA_SUCCESS ||
        drv->cuEventElapsedTime(&ms, start, stop) != CUDA_SUCCESS ||
        *status != CUBLAS_STATUS_SUCCESS) {
        if (*status == CUBLAS_STATUS_SUCCESS) *status = CUBLAS_STATUS_EXECUTION_FAILED;
        return -1.0f;
    }
    return ms / LT_ALGO_TIMING_RUNS;
}

/* cublasLtMatmulTile_t and cublasLtClusterShape_t values (cublasLt.h) as
 * text; later values print as their number. The shapes are cuBLASLt's own
 * M x N, where its M is qgemm's N (it computes D^T = B . A^T). */
static const char *const lt_tile_names[] = {
    "?", "8x8", "8x16", "16x8", "8x32", "16x16", "32x8", "8x64", "16x32", "32x16", "64x8",
    "32x32", "32x64", "64x32", "32x128", "64x64", "128x32", "64x128", "128x64", "64x256",
    "128x128", "256x64", "64x512", "128x256", "256x128", "512x64", "64x96", "96x64", "96x128",
    "128x160", "160x128", "192x128", "128x192", "128x96"};
static const char *const lt_cluster_names[] = {
    "auto", "?", "1x1x1", "2x1x1", "4x1x1", "1x2x1", "2x2x1", "4x2x1", "1x4x1", "2x4x1", "4x4x1",
    "8x1x1", "1x8x1", "8x2x1", "2x8x1", "16x1x1", "1x16x1"};

/* "tile 128x256 cluster 2x1x1" of an algorithm, or "" when cuBLASLt does not say. */
static void describe_algo(const lt_peer *p, const cublasLtMatmulAlgo_t *algo, char *buf, size_t len) {
    uint32_t tile = 0;
    uint16_t cluster = 0; /* the header documents uint16_t for the cluster id */
    size_t written;
    buf[0] = '\0';
    if (p->cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                sizeof tile, &written) != CUBLAS_STATUS_SUCCESS ||
        p->cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                &cluster, sizeof cluster,
                                                &written) != CUBLAS_STATUS_SUCCESS)
        return;
    const size_t ntiles = sizeof lt_tile_names / sizeof *lt_tile_names;
    const size_t nclusters = sizeof lt_cluster_names / sizeof *lt_cluster_names;
    char t[16], c[16];
    snprintf(t, sizeof t, "%s", tile < ntiles ? lt_tile_names[tile] : "");
    snprintf(c, sizeof c, "%s", cluster < nclusters ? lt_cluster_names[cluster] : "");
    if (!t[0]) snprintf(t, sizeof t, "#%u", tile);
    if (!c[0]) snprintf(c, sizeof c, "#%u", cluster);
    snprintf(buf, len, " tile %s cluster %s", t, c);
}

static int choose_algo(lt_gemm *g, CUstream stream, char *why, size_t len) {
    const lt_peer *p = g->peer;
    const qg_driver *drv = p->drv;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t results[LT_MAX_ALGOS];
    int found = 0;
    uint64_t ws = LT_WORKSPACE_BYTES;
    memset(results, 0, sizeof results);
    LT_TRY(p->cublasLtMatmulPreferenceCreate(&pref), "creating the heuristic preference");
    cublasStatus_t s = p->cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = p->cublasLtMatmulAlgoGetHeuristic(p->handle, g->op, g->a_layout, g->b_layout,
                                              g->d_layout, g->d_layout, pref, LT_MAX_ALGOS,
                                              results, &found);
    p->cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS)
        return lt_fail(p, s, "asking the heuristic for block-scaled FP8 algorithms",
                       "cublasLtMatmulAlgoGetHeuristic", why, len);
    if (found <= 0)
        return lt_fail(p, CUBLAS_STATUS_NOT_SUPPORTED,
                       "asking the heuristic for block-scaled FP8 algorithms (0 returned)",
                       "cublasLtMatmulAlgoGetHeuristic", why, len);

    CUevent start = NULL, stop = NULL;
    CUresult r = drv->cuEventCreate(&start, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS) r = drv->cuEventCreate(&stop, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
        if (start) drv->cuEventDestroy(start);
        return cu_fail(drv, r, "timing cuBLASLt algorithms", "cuEventCreate", why, len);
    }
    int best = -1;
    float best_ms = 0.0f;
    cublasStatus_t last = CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < found; i++) {
        if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
        cublasStatus_t st;
        float ms = time_algo(g, &results[i].algo, stream, start, stop, &st);
        if (ms < 0.0f) {
            last = st;
            continue;
        }
        if (best < 0 || ms < best_ms) {
            best = i;
            best_ms = ms;
        }
    }
    drv->cuEventDestroy(start);
    drv->cuEventDestroy(stop);
    if (best < 0)
        return lt_fail(p, last, "running each of the heuristic's algorithms (all failed)",
                       "cublasLtMatmul", why, len);
    g->algo = results[best].algo;
    char tile[48];
    describe_algo(p, &g->algo, tile, sizeof tile);
    snprintf(g->algo_name, sizeof g->algo_name, "algo %d/%d%s", best + 1, found, tile);
    /* Leave D written by the chosen algorithm, as documented. */
    s = matmul(g, &g->algo, stream);
    if (s != CUBLAS_STATUS_SUCCESS)
        return lt_fail(p, s, "re-running the chosen algorithm", "cublasLtMatmul", why, len);
    return 0;
}

int lt_gemm_create(lt_peer *peer, const lt_gemm_desc *desc, CUstream stream, lt_gemm **out,
                   char *why, size_t why_len) {
    *out = NULL;
    if (desc->m % 4 || desc->n % 4) {
        say(why, why_len, "cuBLASLt block scaling needs M and N multiples of 4 (M=%d, N=%d)",
            desc->m, desc->n);
        return -1;
    }
    if (desc->k % 16 || desc->lda % 16 || desc->ldb % 16 || (desc->ldd * 2) % 16 ||
        !aligned16(desc->a) || !aligned16(desc->b) || !aligned16(desc->d)) {
        say(why, why_len, "cuBLASLt FP8 needs 16-byte aligned pointers and leading dimensions "
            "and K %% 16 == 0 (K=%d, lda=%lld, ldb=%lld, ldd=%lld)", desc->k,
            (long long)desc->lda, (long long)desc->ldb, (long long)desc->ldd);
        return -1;
    }
    lt_gemm *g = calloc(1, sizeof *g);
    if (!g) {
        say(why, why_len, "out of host memory");
        return -1;
    }
    g->peer = peer;
    g->desc = *desc;
    if (prepare_scales(g, why, why_len) || build_descriptors(g, why, why_len) ||
        choose_algo(g, stream, why, why_len)) {
        lt_gemm_destroy(g);
        return -1;
    }
    *out = g;
    return 0;
}

int lt_gemm_run(lt_gemm *g, CUstream stream, char *why, size_t why_len) {
    cublasStatus_t s = matmul(g, &g->algo, stream);
    if (s != CUBLAS_STATUS_SUCCESS)
        return lt_fail(g->peer, s, "running the planned GEMM", "cublasLtMatmul", why, why_len);
    return 0;
}

const char *lt_gemm_algo_name(const lt_gemm *g) { return g ? g->algo_name : ""; }

void lt_gemm_destroy(lt_gemm *g) {
    if (!g) return;
    const lt_peer *p = g->peer;
    if (g->d_layout) p->cublasLtMatrixLayoutDestroy(g->d_layout);
    if (g->b_layout) p->cublasLtMatrixLayoutDestroy(g->b_layout);
    if (g->a_layout) p->cublasLtMatrixLayoutDestroy(g->a_layout);
    if (g->op) p->cublasLtMatmulDescDestroy(g->op);
    if (g->own_act) p->drv->cuMemFree(g->own_act);
    if (g->own_weight) p->drv->cuMemFree(g->own_weight);
    free(g);
}
