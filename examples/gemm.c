/* gemm.c -- one dense FP8 GEMM, D = (A*SFA)(B*SFB)^T in bf16; device memory from the CUDA runtime. */
#include <cuda_runtime_api.h>
#include <qgemm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
enum { M = 128, N = 256, K = 512, KB = K / 128, NB = N / 128 };
static float rnd(float lo, float hi) { return lo + (hi - lo) * (float)rand() / (float)RAND_MAX; }
static void *upload(const void *host, size_t bytes) { /* NULL on failure: qgemm then says which */
    void *dev = NULL;
    return cudaMalloc(&dev, bytes) || cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) ? NULL : dev;
}
int main(int argc, char **argv) {
    qg_context *ctx;
    qg_status st = qg_context_create(&ctx, 0);
    if (st != QG_SUCCESS) { /* only "no driver / no GPU" under --check-offline counts as success */
        printf("gemm: no usable GPU, nothing run: %s\n", qg_last_error());
        int offline = argc > 1 && !strcmp(argv[1], "--check-offline");
        return offline && (st == QG_ERROR_NO_DRIVER || st == QG_ERROR_NO_DEVICE) ? 0 : (int)st;
    }
    static uint8_t a[M * K], b[N * K];      /* e4m3, rows along K */
    static float sfa[KB * M], sfb[NB * KB]; /* sfa[kb][m] (M-major), sfb[n/128][kb] */
    static uint16_t d[M * N];               /* bf16 */
    for (int i = 0; i < M * K; i++) a[i] = qg_fp8_e4m3_encode(rnd(-1, 1));
    for (int i = 0; i < N * K; i++) b[i] = qg_fp8_e4m3_encode(rnd(-1, 1));
    for (int i = 0; i < KB * M; i++) sfa[i] = rnd(0.5f, 1);
    for (int i = 0; i < NB * KB; i++) sfb[i] = rnd(0.5f, 1);
    qg_gemm_args args = {.m = M, .n = N, .k = K, .num_groups = 1, .a = upload(a, sizeof a), .lda = K,
                         .sfa = upload(sfa, sizeof sfa), .sfa_ld = qg_sfa_ld(M), .b = upload(b, sizeof b),
                         .ldb = K, .sfb = upload(sfb, sizeof sfb), .d = upload(d, sizeof d), .ldd = N};
    st = qg_fp8_gemm_nt(ctx, &args, NULL, NULL); /* NULL: the heuristic's config, the legacy stream */
    if (!st && cudaMemcpy(d, args.d, sizeof d, cudaMemcpyDeviceToHost) != cudaSuccess) st = QG_ERROR_CUDA;
    double sum = 0;
    for (int i = 0; i < M * N; i++) sum += qg_bf16_decode(d[i]);
    if (st) fprintf(stderr, "gemm: %s: %s\n", qg_status_string(st), qg_last_error());
    else printf("gemm %dx%dx%d: checksum %.6e\n", M, N, K, sum);
    qg_context_destroy(ctx);
    return (int)st;
}
