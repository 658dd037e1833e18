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

/* ---- MQA logits ---------------------------------------------------------- */

static uint8_t f2e4m3(float f) { /* round to nearest even, saturate to 448 */
    uint8_t sign = f < 0 ? 0x80 : 0;
    float a = fabsf(f);
    if (!(a == a)) return 0x7F;
    if (a >= 448.0f) return sign | 0x7E;
    if (a < 0.0009765625f) { /* subnormal: multiples of 2^-9 */
        int q = (int)nearbyintf(a * 512.0f);
        return sign | (uint8_t)q;
    }
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    int exp = e - 1 + 7;     /* biased exponent of 1.xxx form */
    float frac = (m * 2.0f - 1.0f) * 8.0f;
    int q = (int)nearbyintf(frac);
    if (q == 8) { q = 0; ++exp; }
    if (exp <= 0) {
        int qs = (int)nearbyintf(a * 512.0f);
        return sign | (uint8_t)qs;
    }
    if (exp > 15 || (exp == 15 && q > 6)) return sign | 0x7E;
    return sign | (uint8_t)(exp << 3 | q);
}
static float e4m32f(uint8_t v) {
    const int s = v >> 7, e = (v >> 3) & 15, m = v & 7;
    float r = e ? ldexpf(1.0f + m / 8.0f, e - 7) : ldexpf(m / 8.0f, -6);
    return s ? -r : r;
}
struct MqaStats {
    double xy_q, xxyy_q, xy_u, xxyy_u; /* against the dequantized and the unquantized inputs */
    unsigned long long nan, bad_neginf, guard, checked;
};

/* One block: query i = rows[blockIdx.y], keys blockIdx.x * 128 + threadIdx.x.
 * kvq_t / kvu_t: the dequantized (e4m3 value, unscaled) and the unquantized
 * keys, transposed to [D][seq_len_kv] so that a warp's loads coalesce; q
 * likewise in shared memory. The dot over D runs in fp32: every product is
 * exact there (e4m3 x e4m3 and bf16 x bf16 need <= 16 significant bits),
 * and the fp32 sum of <= 128 of them is within ~1e-7 relative (the bounds
 * checked are 5e-6 .. 1e-3 on calc_diff); the head sum, scale and weights
 * are fp64. */
__global__ void mqa_ref_kernel(const float *qq, const float *qu, const float *kvq_t,
                               const float *kvu_t, const float *kv_scale, const float *w,
                               const int *ks, const int *ke, const int *rows, const void *out,
                               int64_t ld, int bf16, int compressed, int clean, int seq_len_kv,
                               int H, int D, int cols, MqaStats *st) {
    extern __shared__ float sm[];
    float *sq = sm, *su = sm + H * D;
    const int i = rows[blockIdx.y];
    for (int x = threadIdx.x; x < H * D; x += blockDim.x) {
        sq[x] = qq[(size_t)i * H * D + x];
        su[x] = qu[(size_t)i * H * D + x];
    }
    __syncthreads();
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    double xy_q = 0, xxyy_q = 0, xy_u = 0, xxyy_u = 0;
    unsigned long long nan = 0, bad = 0, guard = 0, checked = 0;
    auto read = [&](int64_t idx) -> float {
        if (bf16) return __uint_as_float((uint32_t)((const uint16_t *)out)[idx] << 16);
        return ((const float *)out)[idx];
    };
    auto poison = [&](int64_t idx) -> bool {
        if (bf16) return ((const uint16_t *)out)[idx] == 0xFFFF;
        return __float_as_uint(((const float *)out)[idx]) == 0xFFFFFFFFu;
    };
    if (j < seq_len_kv) {
        const bool in = ks[i] <= j && j < ke[i];
        if (in) {
            double rq = 0, ru = 0;
            for (int h = 0; h < H; ++h) {
                float dq = 0, du = 0;
                for (int d = 0; d < D; ++d) {
                    dq = fmaf(sq[h * D + d], kvq_t[(size_t)d * seq_len_kv + j], dq);
                    du = fmaf(su[h * D + d], kvu_t[(size_t)d * seq_len_kv + j], du);
                }
                const double dqs = (double)dq * kv_scale[j];
                rq += (dqs > 0 ? dqs : 0) * (double)w[(size_t)i * H + h];
                ru += (du > 0 ? (double)du : 0) * (double)w[(size_t)i * H + h];
            }
            const float x = read((int64_t)i * ld + (compressed ? j - ks[i] : j));
            if (x != x) ++nan;
            else {
                xy_q += x * rq, xxyy_q += (double)x * x + rq * rq;
                xy_u += x * ru, xxyy_u += (double)x * x + ru * ru;
            }
            ++checked;
        } else if (clean) {
            const float x = read((int64_t)i * ld + j);
            if (!(isinf(x) && x < 0)) ++bad;
        }
    }
    /* columns past what may be written stay poisoned */
    if (blockIdx.x == 0)
        for (int c = cols + (int)threadIdx.x; c < ld; c += blockDim.x)
            if (!poison((int64_t)i * ld + c)) ++guard;
    atomicAdd(&st->xy_q, xy_q);
    atomicAdd(&st->xxyy_q, xxyy_q);
    atomicAdd(&st->xy_u, xy_u);
    atomicAdd(&st->xxyy_u, xxyy_u);
    if (nan) atomicAdd(&st->nan, nan);
    if (bad) atomicAdd(&st->bad_neginf, bad);
    if (guard) atomicAdd(&st->guard, guard);
    if (checked) atomicAdd(&st->checked, checked);
}

__global__ void count_diff_kernel(const uint32_t *a, const uint32_t *b, size_t n,
                                  unsigned long long *cnt) {
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < n;
         x += (size_t)gridDim.x * blockDim.x)
        if (a[x] != b[x]) atomicAdd(cnt, 1ull);
}

static std::vector<std::pair<std::string, CUmodule>> g_modules;
static CUfunction get_fn(const std::string &src, const char *name) {
    for (auto &e : g_modules)
        if (e.first == src) {
            CUfunction f;
            CU(cuModuleGetFunction(&f, e.second, name));
            return f;
        }
    CUmodule m = jit(src, "mqa.cu");
    g_modules.push_back({src, m});
    CUfunction f;
    CU(cuModuleGetFunction(&f, m, name));
    return f;
}

enum { RANGE_CP, RANGE_CAUSAL, RANGE_RANDOM };

/* math_wgs: 0 = the planner's choice, else force 2 or 4 */
static void mqa_case(int seq_len, int seq_len_kv, int H, int D, bool bf16, bool compressed,
                     bool clean, int ranges, bool timed, int math_wgs = 0) {
    char what[200];
    snprintf(what, sizeof what, "mqa sq=%d skv=%d H=%d D=%d %s %s %s%s", seq_len, seq_len_kv, H,
             D, bf16 ? "bf16" : "fp32",
             compressed ? "compressed" : clean ? "clean" : "plain",
             ranges == RANGE_CP ? "cp" : ranges == RANGE_CAUSAL ? "causal" : "random",
             math_wgs ? (math_wgs == 4 ? " wgs=4" : " wgs=2") : "");
    qg_mqa_plan plan;
    const char *why = "";
    if (qg__mqa_plan(seq_len, seq_len_kv, H, D, compressed, clean, bf16, g_num_sms, &plan, &why)) {
        report(false, what, why);
        return;
    }
    if (math_wgs && math_wgs != plan.math_wgs) {
        plan.math_wgs = math_wgs;
        plan.block_kv = 64 * math_wgs;
        plan.block_x = 128 * (math_wgs + 1);
        plan.kv_stages = 8;
        while (plan.kv_stages > 2 && mqa_smem(D, math_wgs, plan.kv_stages) > QG_IDX_SMEM_MAX)
            --plan.kv_stages;
        plan.smem_bytes = mqa_smem(D, math_wgs, plan.kv_stages);
    }
    static char src[65536];
    if (qg__mqa_source(src, sizeof src, &plan) < 0) {
        report(false, what, "source too long");
        return;
    }
    CUfunction fn = get_fn(src, "qg_mqa_logits_kernel");
    CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)plan.smem_bytes));

    /* inputs as DeepGEMM's test makes them: q ~ N(0,1) cast to e4m3; kv ~ N(0,1)
     * scaled per row by amax / 448; weights ~ N(0,1) */
    const size_t nq = (size_t)seq_len * H * D, nkv = (size_t)seq_len_kv * D;
    std::vector<float> qf(nq), kvf(nkv), sc(seq_len_kv), w((size_t)seq_len * H);
    std::vector<uint8_t> q8(nq), kv8(nkv);
    for (size_t x = 0; x < nq; ++x) {
        qf[x] = bf2f(f2bf(rnd_normal()));
        q8[x] = f2e4m3(qf[x]);
    }
    for (int j = 0; j < seq_len_kv; ++j) {
        float amax = 0;
        for (int d = 0; d < D; ++d) {
            kvf[(size_t)j * D + d] = bf2f(f2bf(rnd_normal()));
            amax = std::max(amax, fabsf(kvf[(size_t)j * D + d]));
        }
        sc[j] = std::max(amax, 1e-4f) / 448.0f;
        for (int d = 0; d < D; ++d) kv8[(size_t)j * D + d] = f2e4m3(kvf[(size_t)j * D + d] / sc[j]);
    }
    for (auto &x : w) x = rnd_normal();
    std::vector<int> ks(seq_len), ke(seq_len);
    if (ranges == RANGE_CP) { /* DeepGEMM's generate_ks_ke_tests, context parallel */
        const int chunk = seq_len / 2, cp_size = seq_len_kv / seq_len, cp_id = cp_size / 3;
        for (int i = 0; i < chunk; ++i) {
            ks[i] = ks[i + chunk] = 0;
            ke[i] = cp_id * chunk + i;
            ke[i + chunk] = (cp_size * 2 - 1 - cp_id) * chunk + i;
        }
    } else if (ranges == RANGE_CAUSAL) { /* disable_cp */
        for (int i = 0; i < seq_len; ++i) ks[i] = 0, ke[i] = i + (seq_len_kv - seq_len);
    } else { /* arbitrary ranges, some empty or past the end */
        for (int i = 0; i < seq_len; ++i) {
            int a = (int)(rnd_u64() % (seq_len_kv + 1)), b = (int)(rnd_u64() % (seq_len_kv + 1));
            if (a > b) std::swap(a, b);
            if (rnd_u64() % 8 == 0) b = a;                /* empty */
            if (rnd_u64() % 8 == 0) b = seq_len_kv + 5;   /* past the end (clamped) */
            ks[i] = a, ke[i] = b;
        }
    }
    long long cost = 0;
    int max_len = 0;
    for (int i = 0; i < seq_len; ++i) {
        const int a = std::max(0, std::min(ks[i], seq_len_kv)), b = std::max(0, std::min(ke[i], seq_len_kv));
        cost += std::max(0, b - a);
        max_len = std::max(max_len, ke[i] - ks[i]);
    }
    if (compressed) /* DeepGEMM: max_seqlen_k = (ke - ks).max(); ranges within seq_len_kv */
        for (int i = 0; i < seq_len; ++i) ke[i] = std::min(ke[i], seq_len_kv);
    if (compressed) {
        max_len = 0;
        for (int i = 0; i < seq_len; ++i) max_len = std::max(max_len, ke[i] - ks[i]);
    }
    const int cols = compressed ? max_len : seq_len_kv;
    const int esz = bf16 ? 2 : 4;
    int64_t ld = ((int64_t)cols + 8 + 15) / 16 * 16; /* 64-byte rows, guard columns */
    const size_t out_bytes = (size_t)(seq_len + 1) * ld * esz; /* one guard row */

    uint8_t *d_q8, *d_kv8;
    float *d_qf, *d_kvf, *d_sc, *d_w;
    int *d_ks, *d_ke;
    void *d_out, *d_out0;
    CK(cudaMalloc(&d_q8, nq + 16));
    CK(cudaMalloc(&d_kv8, nkv + 16));
    CK(cudaMalloc(&d_qf, nq * 4));
    CK(cudaMalloc(&d_kvf, nkv * 4));
    CK(cudaMalloc(&d_sc, seq_len_kv * 4 + 16));
    CK(cudaMalloc(&d_w, w.size() * 4 + 16));
    CK(cudaMalloc(&d_ks, seq_len * 4 + 16));
    CK(cudaMalloc(&d_ke, seq_len * 4 + 16));
    CK(cudaMalloc(&d_out, out_bytes));
    CK(cudaMalloc(&d_out0, out_bytes));
    CK(cudaMemcpy(d_q8, q8.data(), nq, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_kv8, kv8.data(), nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_qf, qf.data(), nq * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_kvf, kvf.data(), nkv * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_sc, sc.data(), seq_len_kv * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_w, w.data(), w.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_ks, ks.data(), seq_len * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_ke, ke.data(), seq_len * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_out, 0xFF, out_bytes));

    CUtensorMapSwizzle swz = D == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                             : D == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B;
    CUtensorMap tq = tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, d_q8, D, (uint64_t)seq_len * H, D, D,
                             128, swz);
    CUtensorMap tkv = tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, d_kv8, D, seq_len_kv, D, D,
                              plan.block_kv, swz);
    CUtensorMap tsc = tmap_1d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, d_sc, seq_len_kv, plan.block_kv);
    int a_sl = seq_len, a_skv = seq_len_kv;
    void *args[] = {&tq, &tkv, &tsc, &d_w, &d_ks, &d_ke, &d_out, &ld, &a_sl, &a_skv};
    auto run = [&] { launch(fn, plan.grid_x, plan.block_x, 1, plan.smem_bytes, args); };
    run();
    CK(cudaDeviceSynchronize());

    /* reference rows: all, or 48 sampled (first, last, random) for large cases */
    std::vector<int> rows;
    long long cost_rows = 0;
    if ((long long)seq_len * seq_len_kv <= (1ll << 26)) {
        for (int i = 0; i < seq_len; ++i) rows.push_back(i);
    } else {
        rows.push_back(0);
        rows.push_back(seq_len - 1);
        rows.push_back(seq_len / 2);
        while (rows.size() < 48) rows.push_back((int)(rnd_u64() % seq_len));
    }
    for (int i : rows) {
        const int a = std::max(0, std::min(ks[i], seq_len_kv)), b = std::max(0, std::min(ke[i], seq_len_kv));
        cost_rows += std::max(0, b - a);
    }
    std::vector<float> qq(nq), kvq_t(nkv), kvu_t(nkv);
    for (size_t x = 0; x < nq; ++x) qq[x] = e4m32f(q8[x]);
    for (int j = 0; j < seq_len_kv; ++j)
        for (int d = 0; d < D; ++d) {
            kvq_t[(size_t)d * seq_len_kv + j] = e4m32f(kv8[(size_t)j * D + d]);
            kvu_t[(size_t)d * seq_len_kv + j] = kvf[(size_t)j * D + d];
        }
    float *d_qq, *d_kvq_t, *d_kvu_t;
    int *d_rows;
    CK(cudaMalloc(&d_qq, nq * 4));
    CK(cudaMalloc(&d_kvq_t, nkv * 4 + 4));
    CK(cudaMalloc(&d_kvu_t, nkv * 4 + 4));
    CK(cudaMalloc(&d_rows, rows.size() * 4));
    CK(cudaMemcpy(d_qq, qq.data(), nq * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_kvq_t, kvq_t.data(), nkv * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_kvu_t, kvu_t.data(), nkv * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_rows, rows.data(), rows.size() * 4, cudaMemcpyHostToDevice));
    MqaStats *d_st;
    CK(cudaMalloc(&d_st, sizeof(MqaStats)));
    CK(cudaMemset(d_st, 0, sizeof(MqaStats)));
    const int ref_smem = 2 * H * D * 4;
    CK(cudaFuncSetAttribute(mqa_ref_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ref_smem));
    dim3 rg((seq_len_kv + 127) / 128 > 0 ? (seq_len_kv + 127) / 128 : 1, (unsigned)rows.size());
    mqa_ref_kernel<<<rg, 128, ref_smem>>>(d_qq, d_qf, d_kvq_t, d_kvu_t, d_sc, d_w, d_ks, d_ke,
                                          d_rows, d_out, ld, bf16, compressed, clean, seq_len_kv,
                                          H, D, cols, d_st);
    CK(cudaGetLastError());
    MqaStats st;
    CK(cudaMemcpy(&st, d_st, sizeof st, cudaMemcpyDeviceToHost));
    cudaFree(d_qq); cudaFree(d_kvq_t); cudaFree(d_kvu_t); cudaFree(d_rows);
    /* the guard row past seq_len */
    std::vector<uint8_t> grow((size_t)ld * esz);
    CK(cudaMemcpy(grow.data(), (uint8_t *)d_out + (size_t)seq_len * ld * esz, grow.size(),
                  cudaMemcpyDeviceToHost));
    bool guard_row = std::all_of(grow.begin(), grow.end(), [](uint8_t b) { return b == 0xFF; });
    const double diff_q = st.xxyy_q == 0 ? 0 : 1 - 2 * st.xy_q / st.xxyy_q;
    const double diff_u = st.xxyy_u == 0 ? 0 : 1 - 2 * st.xy_u / st.xxyy_u;
    const double tol = bf16 ? 3e-5 : 5e-6;
    bool ok = st.nan == 0 && st.bad_neginf == 0 && st.guard == 0 && guard_row && diff_q < tol &&
              diff_u < 1e-3 && (long long)st.checked == cost_rows;

    /* bitwise identity: 20 more runs, each on re-poisoned output */
    CK(cudaMemcpy(d_out0, d_out, out_bytes, cudaMemcpyDeviceToDevice));
    unsigned long long *d_cnt, mism = 0;
    CK(cudaMalloc(&d_cnt, 8));
    CK(cudaMemset(d_cnt, 0, 8));
    for (int it = 0; it < 20; ++it) {
        CK(cudaMemset(d_out, 0xFF, out_bytes));
        run();
        count_diff_kernel<<<1024, 256>>>((const uint32_t *)d_out, (const uint32_t *)d_out0,
                                         out_bytes / 4, d_cnt);
    }
    CK(cudaMemcpy(&mism, d_cnt, 8, cudaMemcpyDeviceToHost));
    ok = ok && mism == 0;

    char detail[600];
    int len = snprintf(detail, sizeof detail,
                       "diff deq %.2e (< %.0e) unq %.2e (< 1e-3), nan %llu, bad -inf %llu, guard %llu%s, "
                       "checked %llu/%lld (%zu rows), repeat-mismatch words %llu [grid %d, %d wgs, %d stages, smem %zu]",
                       diff_q, tol, diff_u, st.nan, st.bad_neginf, st.guard,
                       guard_row ? "" : " ROW", st.checked, cost_rows, rows.size(), mism, plan.grid_x,
                       plan.math_wgs, plan.kv_stages, plan.smem_bytes);
    if (timed && g_time) {
        const double us = time_us(run, 10);
        const double flops = 2.0 * cost * H * D;
        const double bytes = nq + nkv + seq_len_kv * 4.0 + w.size() * 4.0 + seq_len * 8.0 +
                             (clean ? (double)seq_len * seq_len_kv : (double)cost) * esz;
        snprintf(detail + len, sizeof detail - len, " | %.1f us, %.0f TFLOPS, %.0f GB/s", us,
                 flops / us * 1e-6, bytes / us * 1e-3);
    }
    report(ok, what, detail);
    cudaFree(d_q8); cudaFree(d_kv8); cudaFree(d_qf); cudaFree(d_kvf); cudaFree(d_sc);
    cudaFree(d_w); cudaFree(d_ks); cudaFree(d_ke); cudaFree(d_out); cudaFree(d_out0);
    cudaFree(d_st); cudaFree(d_cnt);
}

static void mqa_suite() {
    /* every (H, D) with DeepGEMM's range generators, both dtypes and forms */
    mqa_case(512, 4096, 32, 32, false, false, true, RANGE_CP, false);
    mqa_case(512, 4096, 32, 64, true, true, false, RANGE_CAUSAL, false);
    mqa_case(512, 4096, 32, 128, false, true, false, RANGE_CP, false);
    mqa_case(512, 4096, 64, 32, true, false, true, RANGE_CAUSAL, false);
    mqa_case(512, 4096, 64, 64, false, false, true, RANGE_CAUSAL, false);
    mqa_case(512, 4096, 64, 128, true, false, true, RANGE_CP, false);
    mqa_case(512, 4096, 64, 128, false, false, false, RANGE_CP, false);
    mqa_case(512, 4096, 32, 128, true, false, true, RANGE_CP, false, 4);
    /* odd sizes: partial q blocks, keys not a multiple of the block, arbitrary ranges */
    mqa_case(7, 1000, 64, 128, false, false, true, RANGE_RANDOM, false);
    mqa_case(9, 1000, 32, 64, true, false, true, RANGE_RANDOM, false);
    mqa_case(333, 777, 32, 32, false, true, false, RANGE_RANDOM, false);
    mqa_case(1, 5, 64, 64, false, false, true, RANGE_RANDOM, false);
    /* DeepGEMM's large cases, timed */
    mqa_case(2048, 65536, 64, 128, false, false, true, RANGE_CP, true);
    if (!g_quick) {
        mqa_case(2048, 65536, 64, 128, true, true, false, RANGE_CP, true);
        mqa_case(2048, 65536, 64, 128, false, false, true, RANGE_CP, true, 4);
        mqa_case(8192, 8192, 32, 128, true, false, true, RANGE_CAUSAL, true);
    }
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

    {   /* the host e4m3 encoder against its decoder, every finite code */
        int bad = 0;
        for (int v = 0; v < 256; ++v)
            if ((v & 0x7F) != 0x7F && f2e4m3(e4m32f((uint8_t)v)) != v && v != 0x80) ++bad;
        report(bad == 0, "host e4m3 round trip", bad ? "codes differ" : "256 codes");
    }
    if (!g_only || !strcmp(g_only, "hc")) hc_suite();
    if (!g_only || !strcmp(g_only, "mqa")) mqa_suite();
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures);
    return g_failures ? 1 : 0;
}
