/*
 * indexer_harness.cu -- standalone GPU check of the indexer / HC kernels
 * (kernels/qg_hc_prenorm.cuh, kernels/qg_mqa_logits.cuh), without the qgemm
 * library: the JIT sources and launch plans come from src/indexer_plan.c
 * (compiled in), NVRTC compiles them as the library will, the driver API
 * loads and launches them (clusters through cuLaunchKernelEx).
 *
 * Build and run from the repository root (H100/H200):
 *   nvcc -arch=sm_90a -O2 -std=c++17 -Isrc -o /tmp/indexer_harness \
 *        scratch/indexer_harness.cu -lcuda -lnvrtc && /tmp/indexer_harness
 * Options: --quick (skip the largest cases), --no-time, --only hc|mqa.
 *
 * Per case: fresh random inputs; outputs poisoned (NaN bytes) first; the
 * result compared with an fp64 reference by DeepGEMM's metric
 * calc_diff = 1 - 2 sum(x y) / sum(x^2 + y^2) and its tests' bounds; 20
 * more runs compared bitwise with the first; the big cases timed with CUDA
 * events after an L2 flush (median of 20). One PASS/FAIL line per case; the
 * exit status is non-zero on any failure.
 *
 * References: HC on the CPU in fp64 for small cases; for large ones an fp64
 * GPU kernel (below), itself spot-checked against the CPU on sampled rows.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "../src/indexer_plan.c"
}

/* ---- plumbing ------------------------------------------------------------ */

static int g_failures = 0;
static bool g_quick = false, g_time = true;
static const char *g_only = nullptr;

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)
#define CU(x)                                                                    \
    do {                                                                         \
        CUresult r_ = (x);                                                       \
        if (r_ != CUDA_SUCCESS) {                                                \
            const char *s_ = "?";                                                \
            cuGetErrorString(r_, &s_);                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);      \
            exit(2);                                                             \
        }                                                                        \
    } while (0)

static int g_num_sms = 0;
static void *g_flush = nullptr;
static size_t g_flush_bytes = 0;

/* xorshift64* */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd_u64() {
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 2685821657736338717ull;
}
static double rnd_unit() { return (rnd_u64() >> 11) * (1.0 / 9007199254740992.0); }
static float rnd_normal() {
    double u1 = rnd_unit(), u2 = rnd_unit();
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static uint16_t f2bf(float f) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFF + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* DeepGEMM's calc_diff in double. */
struct Diff {
    double xy = 0, xx_yy = 0;
    void add(double x, double y) { xy += x * y, xx_yy += x * x + y * y; }
    double get() const { return xx_yy == 0 ? 0.0 : 1.0 - 2.0 * xy / xx_yy; }
};

static CUmodule jit(const std::string &src, const char *name) {
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), name, 0, nullptr, nullptr) != NVRTC_SUCCESS) exit(2);
    const char *opts[] = {"-arch=sm_90a", "-std=c++17", "-default-device", "-Ikernels",
                          "-Xptxas=-v"};
    nvrtcResult r = nvrtcCompileProgram(prog, 5, opts);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "NVRTC failed for %s:\n%s\n--- source ---\n%s\n", name, log.c_str(),
                src.c_str());
        exit(2);
    }
    if (log.find("spill") != std::string::npos &&
        (log.find(" 0 bytes spill stores") == std::string::npos ||
         log.find(" 0 bytes spill loads") == std::string::npos))
        fprintf(stderr, "warning: %s spills:\n%s\n", name, log.c_str());
    size_t n = 0;
    nvrtcGetCUBINSize(prog, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(prog, cubin.data());
    nvrtcDestroyProgram(&prog);
    CUmodule mod;
    CU(cuModuleLoadData(&mod, cubin.data()));
    return mod;
}

static CUtensorMap tmap_2d(CUtensorMapDataType type, const void *ptr, uint64_t inner,
                           uint64_t outer, uint64_t row_bytes, uint32_t box_inner,
                           uint32_t box_outer, CUtensorMapSwizzle swz) {
    CUtensorMap m;
    cuuint64_t dims[2] = {inner, outer};
    cuuint64_t strides[1] = {row_bytes};
    cuuint32_t box[2] = {box_inner, box_outer};
    cuuint32_t es[2] = {1, 1};
    CU(cuTensorMapEncodeTiled(&m, type, 2, const_cast<void *>(ptr), dims, strides, box, es,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return m;
}

static CUtensorMap tmap_1d(CUtensorMapDataType type, const void *ptr, uint64_t n, uint32_t box) {
    CUtensorMap m;
    cuuint64_t dims[1] = {n};
    cuuint64_t strides[1] = {0};
    cuuint32_t boxd[1] = {box};
    cuuint32_t es[1] = {1};
    CU(cuTensorMapEncodeTiled(&m, type, 1, const_cast<void *>(ptr), dims, strides, boxd, es,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return m;
}

static void launch(CUfunction f, int grid, int block, int cluster, size_t smem, void **args,
                   cudaStream_t stream = 0) {
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = grid;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = block;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = (unsigned)smem;
    cfg.hStream = (CUstream)stream;
    CUlaunchAttribute attr;
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = cluster > 1 ? 1 : 0;
    CU(cuLaunchKernelEx(&cfg, f, args, nullptr));
}

static void l2_flush() { CK(cudaMemsetAsync(g_flush, (int)(rnd_u64() & 0xFF), g_flush_bytes)); }

/* Median µs of `reps` runs of fn, each after an L2 flush. */
template <class F> static double time_us(F fn, int reps = 20) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) fn();
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
        l2_flush();
        CK(cudaEventRecord(a));
        fn();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0f);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static void report(bool ok, const char *what, const char *detail) {
    printf("%s %s: %s\n", ok ? "PASS" : "FAIL", what, detail);
    fflush(stdout);
    if (!ok) ++g_failures;
}

/* ---- HC prenorm ---------------------------------------------------------- */

/* fp64 reference rows [0, m): d for b exact, b truncated to TF32, b rounded
 * to TF32 (nearest, ties away), and the square sums. */
__global__ void hc_ref_kernel(const uint16_t *a, const float *b, int m, int n, int k, double *d_exact,
                              double *d_rz, double *d_rna, double *sq) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= m * (n + 1)) return;
    const int row = idx / (n + 1), col = idx % (n + 1);
    const uint16_t *ar = a + (size_t)row * k;
    if (col == n) {
        double s = 0;
        for (int i = 0; i < k; ++i) {
            const double x = __uint_as_float((uint32_t)ar[i] << 16);
            s += x * x;
        }
        sq[row] = s;
        return;
    }
    const float *br = b + (size_t)col * k;
    double e = 0, z = 0, r = 0;
    for (int i = 0; i < k; ++i) {
        const double x = __uint_as_float((uint32_t)ar[i] << 16);
        const uint32_t u = __float_as_uint(br[i]);
        e += x * (double)br[i];
        z += x * (double)__uint_as_float(u & 0xFFFFE000u);
        r += x * (double)__uint_as_float((u + 0x1000u) & 0xFFFFE000u);
    }
    d_exact[(size_t)row * n + col] = e;
    d_rz[(size_t)row * n + col] = z;
    d_rna[(size_t)row * n + col] = r;
}

static void hc_case(int m, int n, int k, int splits, bool timed) {
    char what[160];
    snprintf(what, sizeof what, "hc m=%d n=%d k=%d splits=%d", m, n, k, splits);
    qg_hc_plan plan;
    const char *why = "";
    if (qg__hc_plan(m, n, k, splits, g_num_sms, &plan, &why)) {
        report(false, what, why);
        return;
    }
    static char src[65536];
    if (qg__hc_source(src, sizeof src, &plan) < 0) {
        report(false, what, "source too long");
        return;
    }
    CUmodule mod = jit(src, "hc.cu");
    CUfunction fn;
    CU(cuModuleGetFunction(&fn, mod, "qg_hc_prenorm_kernel"));
    CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)plan.smem_bytes));

    std::vector<uint16_t> ha((size_t)m * k);
    std::vector<float> hb((size_t)n * k);
    for (auto &x : ha) x = f2bf(rnd_normal());
    for (auto &x : hb) x = rnd_normal();
    uint16_t *da;
    float *db, *dd, *ds;
    const size_t d_elems = (size_t)splits * m * n, s_elems = (size_t)splits * m;
    CK(cudaMalloc(&da, ha.size() * 2));
    CK(cudaMalloc(&db, hb.size() * 4));
    CK(cudaMalloc(&dd, d_elems * 4 + 16));
    CK(cudaMalloc(&ds, s_elems * 4 + 16));
    CK(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(dd, 0xFF, d_elems * 4 + 16)); /* NaN poison, and a guard past the end */
    CK(cudaMemset(ds, 0xFF, s_elems * 4 + 16));

    CUtensorMap ta = tmap_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, da, k, m, (uint64_t)k * 2, 64, 64,
                             CU_TENSOR_MAP_SWIZZLE_128B);
    CUtensorMap tb = tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, db, k, n, (uint64_t)k * 4, 32, n,
                             CU_TENSOR_MAP_SWIZZLE_128B);
    int64_t ldd = n, split_ld = (int64_t)m * n;
    int shape_m = m;
    void *args[] = {&ta, &tb, &dd, &ldd, &split_ld, &ds, &shape_m};
    auto run = [&] { launch(fn, plan.grid_x, plan.block_x, plan.cluster, plan.smem_bytes, args); };
    run();
    CK(cudaDeviceSynchronize());
    std::vector<float> gd(d_elems + 4), gs(s_elems + 4);
    CK(cudaMemcpy(gd.data(), dd, (d_elems + 4) * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gs.data(), ds, (s_elems + 4) * 4, cudaMemcpyDeviceToHost));

    /* reference on the GPU in fp64 */
    double *r_e, *r_z, *r_r, *r_s;
    CK(cudaMalloc(&r_e, (size_t)m * n * 8));
    CK(cudaMalloc(&r_z, (size_t)m * n * 8));
    CK(cudaMalloc(&r_r, (size_t)m * n * 8));
    CK(cudaMalloc(&r_s, (size_t)m * 8));
    const int total = m * (n + 1);
    hc_ref_kernel<<<(total + 255) / 256, 256>>>(da, db, m, n, k, r_e, r_z, r_r, r_s);
    CK(cudaGetLastError());
    std::vector<double> re((size_t)m * n), rz((size_t)m * n), rr((size_t)m * n), rs(m);
    CK(cudaMemcpy(re.data(), r_e, re.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(rz.data(), r_z, rz.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(rr.data(), r_r, rr.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(rs.data(), r_s, rs.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaFree(r_e));
    CK(cudaFree(r_z));
    CK(cudaFree(r_r));
    CK(cudaFree(r_s));

    /* CPU fp64 check of the GPU reference on up to 16 sampled rows */
    double ref_err = 0;
    for (int sidx = 0; sidx < std::min(m, 16); ++sidx) {
        const int row = m <= 16 ? sidx : (int)(rnd_u64() % m);
        for (int j = 0; j <= n; ++j) {
            double e = 0;
            for (int i = 0; i < k; ++i) {
                const double x = bf2f(ha[(size_t)row * k + i]);
                e += j == n ? x * x : x * (double)hb[(size_t)j * k + i];
            }
            const double g = j == n ? rs[row] : re[(size_t)row * n + j];
            ref_err = std::max(ref_err, fabs(e - g) / (fabs(e) + 1e-30));
        }
    }

    /* sum the splits in fp64 and compare */
    Diff de, dz, dr, dsq;
    long nan = 0;
    for (int r = 0; r < m; ++r) {
        for (int j = 0; j < n; ++j) {
            double x = 0;
            for (int s = 0; s < splits; ++s) {
                const float v = gd[(size_t)s * m * n + (size_t)r * n + j];
                if (std::isnan(v)) ++nan;
                x += v;
            }
            const size_t i = (size_t)r * n + j;
            de.add(x, re[i]), dz.add(x, rz[i]), dr.add(x, rr[i]);
        }
        double x = 0;
        for (int s = 0; s < splits; ++s) {
            const float v = gs[(size_t)s * m + r];
            if (std::isnan(v)) ++nan;
            x += v;
        }
        dsq.add(x, rs[r]);
    }
    uint32_t guard_d, guard_s;
    memcpy(&guard_d, &gd[d_elems], 4);
    memcpy(&guard_s, &gs[s_elems], 4);
    const bool guard_ok = guard_d == 0xFFFFFFFFu && guard_s == 0xFFFFFFFFu;
    const double diff_tf32 = std::min(dz.get(), dr.get());
    bool ok = nan == 0 && guard_ok && diff_tf32 < 1e-8 && de.get() < 1e-6 && dsq.get() < 1e-8 &&
              ref_err < 1e-9;

    /* bitwise identity over 20 more runs */
    int mismatched = 0;
    std::vector<float> gd2(d_elems), gs2(s_elems);
    for (int it = 0; it < 20; ++it) {
        CK(cudaMemset(dd, 0xFF, d_elems * 4));
        CK(cudaMemset(ds, 0xFF, s_elems * 4));
        run();
        CK(cudaMemcpy(gd2.data(), dd, d_elems * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(gs2.data(), ds, s_elems * 4, cudaMemcpyDeviceToHost));
        if (memcmp(gd2.data(), gd.data(), d_elems * 4) || memcmp(gs2.data(), gs.data(), s_elems * 4))
            ++mismatched;
    }
    ok = ok && mismatched == 0;

    char detail[512];
    int len = snprintf(detail, sizeof detail,
                       "diff tf32-rz %.2e tf32-rna %.2e exact %.2e sqr %.2e, nan %ld, guard %s, "
                       "repeat-mismatch %d/20, ref-check %.1e [cluster %d, %d stages, grid %d, smem %zu]",
                       dz.get(), dr.get(), de.get(), dsq.get(), nan, guard_ok ? "ok" : "WRITTEN",
                       mismatched, ref_err, plan.cluster, plan.stages, plan.grid_x, plan.smem_bytes);
    if (timed && g_time) {
        const double us = time_us(run);
        const double bytes = (double)m * k * 2 + (double)n * k * 4 + d_elems * 4.0 + s_elems * 4.0;
        snprintf(detail + len, sizeof detail - len, " | %.1f us, %.0f GB/s, %.1f TFLOPS", us,
                 bytes / us * 1e-3, 2.0 * m * n * k / us * 1e-6);
    }
    report(ok, what, detail);
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dd));
    CK(cudaFree(ds));
    CU(cuModuleUnload(mod));
}

static void hc_suite() {
    /* DeepGEMM's test_hc_prenorm_gemm shapes */
    const int ms[] = {13, 137, 4096, 8192};
    const int nk[][2] = {{24, 28672}, {24, 7680}, {24, 7168}};
    for (int mi = 0; mi < 4; ++mi)
        for (int j = 0; j < 3; ++j)
            for (int s : {1, 16}) {
                if (g_quick && ms[mi] == 8192 && nk[j][1] != 28672) continue;
                hc_case(ms[mi], nk[j][0], nk[j][1], s, ms[mi] >= 4096);
            }
    /* odd sizes: every N, M not a multiple of 64, short K, more splits than K blocks */
    hc_case(1, 8, 64, 1, false);
    hc_case(65, 16, 576, 1, false);
    hc_case(200, 32, 1024, 3, false);
    hc_case(127, 8, 128, 4, false);
    hc_case(1000, 32, 4096, 1, false);
    hc_case(333, 24, 2048, 7, false);
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) g_quick = true;
        else if (!strcmp(argv[i], "--no-time")) g_time = false;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--no-time] [--only hc|mqa]\n", argv[0]);
            return 2;
        }
    }
    CK(cudaFree(0));
    CU(cuInit(0));
    int dev = 0;
    CK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    g_num_sms = prop.multiProcessorCount;
    printf("device: %s, %d SMs, L2 %d MiB\n", prop.name, g_num_sms, prop.l2CacheSize >> 20);
    g_flush_bytes = (size_t)prop.l2CacheSize * 4;
    CK(cudaMalloc(&g_flush, g_flush_bytes));

    if (!g_only || !strcmp(g_only, "hc")) hc_suite();
#ifdef QG_HARNESS_MQA
    if (!g_only || !strcmp(g_only, "mqa")) mqa_suite();
#endif
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures);
    return g_failures ? 1 : 0;
}
