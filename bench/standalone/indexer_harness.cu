/*
 * indexer_harness.cu -- standalone GPU check of the indexer / HC kernels
 * (kernels/qg_hc_prenorm.cuh, kernels/qg_mqa_logits.cuh), without the qgemm
 * library: the JIT sources and launch plans come from src/indexer_plan.c
 * (compiled in), NVRTC compiles them as the library will, the driver API
 * loads and launches them (clusters through cuLaunchKernelEx).
 *
 * Build and run from the repository root (H100/H200):
 *   nvcc -arch=sm_90a -O2 -std=c++17 -Isrc -o /tmp/indexer_harness \
 *        bench/standalone/indexer_harness.cu -lcuda -lnvrtc && /tmp/indexer_harness
 * Options: --quick (skip the largest cases), --no-time, --only hc|mqa|paged,
 * --compile-only (no GPU needed: NVRTC-compiles every source the suites use).
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
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "../src/indexer_plan.c"
}

/* ---- plumbing ------------------------------------------------------------ */

static int g_failures = 0;
static bool g_quick = false, g_time = true;
static const char *g_only = nullptr;
static bool g_compile_only = false; /* no GPU: NVRTC-compile every source the suites use */

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

/* NVRTC, as the library's JIT runs it; cubins cached per source text.
 * Dry runs of the suites collect every source first, and precompile()
 * compiles them on all host cores. */
static std::map<std::string, std::vector<char>> g_cubins;
static std::mutex g_cubin_mu;
static bool g_dry = false;
static std::vector<std::string> g_pending;

static std::vector<char> compile_cubin(const std::string &src) {
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), "indexer.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
        exit(2);
    const char *opts[] = {"-arch=sm_90a", "-std=c++17", "-default-device", "-Ikernels",
                          "-Xptxas=-v"};
    nvrtcResult r = nvrtcCompileProgram(prog, 5, opts);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "NVRTC failed:\n%s\n--- source ---\n%s\n", log.c_str(), src.c_str());
        exit(2);
    }
    if (log.find(" 0 bytes spill stores") == std::string::npos && log.find("spill") != std::string::npos)
        fprintf(stderr, "warning: kernel spills:\n%s\n%s\n", src.c_str(), log.c_str());
    size_t n = 0;
    nvrtcGetCUBINSize(prog, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(prog, cubin.data());
    nvrtcDestroyProgram(&prog);
    return cubin;
}

static void precompile() {
    std::vector<std::string> todo;
    for (auto &src : g_pending)
        if (!g_cubins.count(src) && std::find(todo.begin(), todo.end(), src) == todo.end())
            todo.push_back(src);
    g_pending.clear();
    size_t next = 0;
    std::mutex mu;
    const unsigned nthreads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < nthreads; ++t)
        pool.emplace_back([&] {
            for (;;) {
                size_t i;
                {
                    std::lock_guard<std::mutex> g(mu);
                    if (next >= todo.size()) return;
                    i = next++;
                }
                std::vector<char> c = compile_cubin(todo[i]);
                std::lock_guard<std::mutex> g(g_cubin_mu);
                g_cubins[todo[i]] = std::move(c);
            }
        });
    for (auto &th : pool) th.join();
}

static CUmodule jit(const std::string &src, const char *) {
    if (!g_cubins.count(src)) g_cubins[src] = compile_cubin(src);
    CUmodule mod;
    CU(cuModuleLoadData(&mod, g_cubins[src].data()));
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

__device__ __host__ inline uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
/* a bf16-valued N(0, 1) sample that is a pure function of key */
__device__ float dnormal(uint64_t key) {
    const uint64_t a = mix64(key), b = mix64(key ^ 0x5DEECE66Dull);
    const float u1 = ((a >> 40) + 1) * (1.0f / 16777217.0f), u2 = (b >> 40) * (1.0f / 16777216.0f);
    const float x = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    return __bfloat162float(__float2bfloat16(x));
}
__global__ void gen_bf16(uint16_t *a, size_t n, uint64_t seed) {
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < n; x += (size_t)gridDim.x * blockDim.x)
        a[x] = (uint16_t)(__float_as_uint(dnormal(seed + x)) >> 16);
}
__global__ void gen_f32(float *a, size_t n, uint64_t seed) {
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < n; x += (size_t)gridDim.x * blockDim.x) {
        const uint64_t h = mix64(seed + x), g = mix64(h);
        const float u1 = ((h >> 40) + 1) * (1.0f / 16777217.0f), u2 = (g >> 40) * (1.0f / 16777216.0f);
        a[x] = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2); /* full fp32 mantissa */
    }
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

/* One HC problem's inputs on the GPU and its fp64 references (built once,
 * shared by every variant run on it). */
struct HcInputs {
    int m = 0, n = 0, k = 0, splits = 1;
    uint16_t *da = nullptr;
    float *db = nullptr, *dd = nullptr, *ds = nullptr;
    size_t d_elems = 0, s_elems = 0;
    std::vector<double> re, rz, rr, rs;
    double ref_err = 0;
};

static void hc_inputs_make(HcInputs &in, int m, int n, int k, int splits) {
    in.m = m, in.n = n, in.k = k, in.splits = splits;
    in.d_elems = (size_t)splits * m * n, in.s_elems = (size_t)splits * m;
    CK(cudaMalloc(&in.da, (size_t)m * k * 2));
    CK(cudaMalloc(&in.db, (size_t)n * k * 4));
    CK(cudaMalloc(&in.dd, in.d_elems * 4 + 16));
    CK(cudaMalloc(&in.ds, in.s_elems * 4 + 16));
    gen_bf16<<<1024, 256>>>(in.da, (size_t)m * k, rnd_u64()); /* a ~ N(0, 1) in bf16, b ~ N(0, 1) fp32 */
    gen_f32<<<1024, 256>>>(in.db, (size_t)n * k, rnd_u64());
    CK(cudaGetLastError());
    std::vector<float> hb((size_t)n * k);
    CK(cudaMemcpy(hb.data(), in.db, hb.size() * 4, cudaMemcpyDeviceToHost));

    /* reference on the GPU in fp64 */
    double *r_e, *r_z, *r_r, *r_s;
    CK(cudaMalloc(&r_e, (size_t)m * n * 8));
    CK(cudaMalloc(&r_z, (size_t)m * n * 8));
    CK(cudaMalloc(&r_r, (size_t)m * n * 8));
    CK(cudaMalloc(&r_s, (size_t)m * 8));
    const int total = m * (n + 1);
    hc_ref_kernel<<<(total + 255) / 256, 256>>>(in.da, in.db, m, n, k, r_e, r_z, r_r, r_s);
    CK(cudaGetLastError());
    in.re.resize((size_t)m * n), in.rz.resize((size_t)m * n), in.rr.resize((size_t)m * n), in.rs.resize(m);
    CK(cudaMemcpy(in.re.data(), r_e, in.re.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(in.rz.data(), r_z, in.rz.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(in.rr.data(), r_r, in.rr.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(in.rs.data(), r_s, in.rs.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaFree(r_e));
    CK(cudaFree(r_z));
    CK(cudaFree(r_r));
    CK(cudaFree(r_s));

    /* CPU fp64 check of the GPU reference on up to 16 sampled rows */
    double ref_err = 0;
    std::vector<uint16_t> arow(k);
    for (int sidx = 0; sidx < std::min(m, 16); ++sidx) {
        const int row = m <= 16 ? sidx : (int)(rnd_u64() % m);
        CK(cudaMemcpy(arow.data(), in.da + (size_t)row * k, (size_t)k * 2, cudaMemcpyDeviceToHost));
        for (int j = 0; j <= n; ++j) {
            double e = 0, mag = 0; /* error relative to sum |terms| (no cancellation blow-up) */
            for (int i = 0; i < k; ++i) {
                const double x = bf2f(arow[i]);
                const double term = j == n ? x * x : x * (double)hb[(size_t)j * k + i];
                e += term;
                mag += fabs(term);
            }
            const double g = j == n ? in.rs[row] : in.re[(size_t)row * n + j];
            ref_err = std::max(ref_err, fabs(e - g) / (mag + 1e-300));
        }
    }
    in.ref_err = ref_err;
}

static void hc_inputs_free(HcInputs &in) {
    CK(cudaFree(in.da));
    CK(cudaFree(in.db));
    CK(cudaFree(in.dd));
    CK(cudaFree(in.ds));
    in.da = nullptr, in.db = nullptr, in.dd = nullptr, in.ds = nullptr;
}

struct HcResult {
    bool ok = false;
    double diff_rna = 0, diff_rz = 0, diff_exact = 0, diff_sq = 0, us = 0;
    long nan = 0;
    bool guard_ok = false;
    int mismatched = 0;
    char detail[512] = "";
};

/* Runs one plan on `in`: poisoned outputs, the fp64 comparison (DeepGEMM's
 * criterion: d against a * rna_tf32(b), as torch's TF32 reference rounds;
 * a truncating plan is held to the truncated reference and flagged), 20
 * more runs compared bitwise, and when `timed` the median of 20 L2-flushed
 * runs. */
static HcResult hc_run(const HcInputs &in, const qg_hc_plan &plan, bool timed, int repeats = 20) {
    HcResult res;
    static char src[65536];
    if (qg__hc_source(src, sizeof src, &plan) < 0) {
        snprintf(res.detail, sizeof res.detail, "source too long");
        return res;
    }
    CUmodule mod = jit(src, "hc.cu");
    CUfunction fn;
    CU(cuModuleGetFunction(&fn, mod, "qg_tf32_hc_prenorm_gemm_kernel"));
    CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)plan.smem_bytes));
    const int m = in.m, n = in.n, k = in.k, splits = in.splits;
    const size_t d_elems = in.d_elems, s_elems = in.s_elems;
    float *dd = in.dd, *ds = in.ds;
    CK(cudaMemset(dd, 0xFF, d_elems * 4 + 16)); /* NaN poison, and a guard past the end */
    CK(cudaMemset(ds, 0xFF, s_elems * 4 + 16));
    CUtensorMap ta = tmap_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, in.da, k, m, (uint64_t)k * 2, 64,
                             plan.block_m, CU_TENSOR_MAP_SWIZZLE_128B);
    CUtensorMap tb = tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, in.db, k, n, (uint64_t)k * 4, 32, n,
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
            de.add(x, in.re[i]), dz.add(x, in.rz[i]), dr.add(x, in.rr[i]);
        }
        double x = 0;
        for (int s = 0; s < splits; ++s) {
            const float v = gs[(size_t)s * m + r];
            if (std::isnan(v)) ++nan;
            x += v;
        }
        dsq.add(x, in.rs[r]);
    }
    uint32_t guard_d, guard_s;
    memcpy(&guard_d, &gd[d_elems], 4);
    memcpy(&guard_s, &gs[s_elems], 4);
    res.guard_ok = guard_d == 0xFFFFFFFFu && guard_s == 0xFFFFFFFFu;
    res.nan = nan;
    res.diff_rna = dr.get(), res.diff_rz = dz.get(), res.diff_exact = de.get(), res.diff_sq = dsq.get();
    const bool trunc = plan.mode == QG_HC_MODE_TRUNC;
    const double diff_tf32 = trunc ? res.diff_rz : res.diff_rna;
    bool ok = nan == 0 && res.guard_ok && diff_tf32 < 1e-8 && res.diff_exact < 1e-6 &&
              res.diff_sq < 1e-8 && in.ref_err < 1e-9;

    /* bitwise identity over more runs */
    std::vector<float> gd2(d_elems), gs2(s_elems);
    for (int it = 0; it < repeats; ++it) {
        CK(cudaMemset(dd, 0xFF, d_elems * 4));
        CK(cudaMemset(ds, 0xFF, s_elems * 4));
        run();
        CK(cudaMemcpy(gd2.data(), dd, d_elems * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(gs2.data(), ds, s_elems * 4, cudaMemcpyDeviceToHost));
        if (memcmp(gd2.data(), gd.data(), d_elems * 4) || memcmp(gs2.data(), gs.data(), s_elems * 4))
            ++res.mismatched;
    }
    res.ok = ok && res.mismatched == 0;

    static const char *const mode_names[] = {"inplace", "rounder", "split", "trunc"};
    int len = snprintf(res.detail, sizeof res.detail,
                       "diff tf32-rna %.2e tf32-rz %.2e exact %.2e sqr %.2e%s, nan %ld, guard %s, "
                       "repeat-mismatch %d/%d, ref-check %.1e [%s, %d cvt warps, %d wgs, cluster %d, "
                       "%d stages, grid %d, block %d, smem %zu]",
                       res.diff_rna, res.diff_rz, res.diff_exact, res.diff_sq,
                       trunc ? " (trunc: held to the rz reference)" : "", nan,
                       res.guard_ok ? "ok" : "WRITTEN", res.mismatched, repeats, in.ref_err,
                       mode_names[plan.mode], plan.cvt_warps, plan.math_wgs, plan.cluster,
                       plan.stages, plan.grid_x, plan.block_x, plan.smem_bytes);
    if (timed && g_time) {
        res.us = time_us(run);
        const double bytes = (double)m * k * 2 + (double)n * k * 4 + d_elems * 4.0 + s_elems * 4.0;
        snprintf(res.detail + len, sizeof res.detail - len, " | %.1f us, %.0f GB/s, %.1f TFLOPS",
                 res.us, bytes / res.us * 1e-3, 2.0 * m * n * k / res.us * 1e-6);
    }
    CU(cuModuleUnload(mod));
    return res;
}

/* force_wgs: 0 = the planner's choice, else 1 or 2 math warpgroups */
static void hc_case(int m, int n, int k, int splits, bool timed, int force_wgs = 0) {
    char what[160];
    snprintf(what, sizeof what, "hc m=%d n=%d k=%d splits=%d%s", m, n, k, splits,
             force_wgs == 1 ? " wgs=1" : force_wgs == 2 ? " wgs=2" : "");
    qg_hc_plan plan;
    const char *why = "";
    if (hc_plan_with(m, n, k, splits, g_num_sms, force_wgs, &plan, &why)) {
        report(false, what, why);
        return;
    }
    if (g_dry) {
        static char src[65536];
        if (qg__hc_source(src, sizeof src, &plan) >= 0) g_pending.push_back(src);
        return;
    }
    HcInputs in;
    hc_inputs_make(in, m, n, k, splits);
    const HcResult r = hc_run(in, plan, timed);
    report(r.ok, what, r.detail);
    hc_inputs_free(in);
}

/* ---- HC variants: accuracy and time of each rounding scheme -------------- */

struct HcVariant {
    const char *name;
    int wgs, mode, cvt_warps;
};
static const HcVariant g_hc_variants[] = {
    {"inplace", 0, QG_HC_MODE_INPLACE, 0}, /* the kernel before this change */
    {"rounder", 0, QG_HC_MODE_ROUNDER, 1},
    {"rounder-cw2", 0, QG_HC_MODE_ROUNDER, 2},
    {"rounder-w1", 1, QG_HC_MODE_ROUNDER, 1},
    {"split", 0, QG_HC_MODE_SPLIT, 1},
    {"split-cw2", 0, QG_HC_MODE_SPLIT, 2},
    {"split-w1", 1, QG_HC_MODE_SPLIT, 1},
    {"trunc", 0, QG_HC_MODE_TRUNC, 0}, /* DeepGEMM's arithmetic: fails the rna 1e-8 */
};
static const int g_num_hc_variants = (int)(sizeof g_hc_variants / sizeof g_hc_variants[0]);
static const char *g_hc_variant_filter = nullptr; /* --variants a,b,c */

static bool hc_variant_selected(const char *name) {
    if (!g_hc_variant_filter) return true;
    const size_t len = strlen(name);
    for (const char *p = g_hc_variant_filter; *p;) {
        const char *e = strchr(p, ',');
        const size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !strncmp(p, name, len)) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* DeepGEMM's test_hc_prenorm_gemm shapes (each with and without 16 splits),
 * every variant on the same inputs: PASS/FAIL lines, then a table of times
 * (µs, CUDA events, L2 flushed, median of 20; "!" marks a failed accuracy
 * or determinism check), the geomean of each variant and its ratio to the
 * first. */
static void hc_variants_suite() {
    struct Shape { int m, n, k, s; };
    std::vector<Shape> shapes;
    for (int m : {13, 137, 4096, 8192})
        for (int nk : {28672, 7680, 7168})
            for (int s : {1, 16}) shapes.push_back({m, 24, nk, s});
    std::vector<int> vs;
    for (int v = 0; v < g_num_hc_variants; ++v)
        if (hc_variant_selected(g_hc_variants[v].name)) vs.push_back(v);
    std::vector<std::vector<HcResult>> table(shapes.size(), std::vector<HcResult>(vs.size()));
    for (size_t si = 0; si < shapes.size(); ++si) {
        const Shape &sh = shapes[si];
        HcInputs in;
        if (!g_dry) hc_inputs_make(in, sh.m, sh.n, sh.k, sh.s);
        for (size_t vi = 0; vi < vs.size(); ++vi) {
            const HcVariant &v = g_hc_variants[vs[vi]];
            char what[160];
            snprintf(what, sizeof what, "hc-variant %s m=%d n=%d k=%d splits=%d", v.name, sh.m,
                     sh.n, sh.k, sh.s);
            qg_hc_plan plan;
            const char *why = "";
            if (qg__hc_plan_variant(sh.m, sh.n, sh.k, sh.s, g_num_sms, v.wgs, v.mode, v.cvt_warps,
                                    &plan, &why)) {
                if (!g_dry) report(false, what, why);
                continue;
            }
            if (g_dry) {
                static char src[65536];
                if (qg__hc_source(src, sizeof src, &plan) >= 0) g_pending.push_back(src);
                continue;
            }
            table[si][vi] = hc_run(in, plan, true, 10);
            report(table[si][vi].ok, what, table[si][vi].detail);
        }
        if (!g_dry) hc_inputs_free(in);
    }
    if (g_dry) return;
    printf("\nHC prenorm variants, %s: µs (CUDA events, L2 flushed, median of 20); "
           "! = accuracy (diff vs fp64 a*rna_tf32(b) < 1e-8; trunc: vs a*rz_tf32(b)), sqr or "
           "determinism failed\n", g_time ? "timed" : "untimed");
    printf("%-26s", "m x n x k, splits");
    for (int v : vs) printf(" %12s", g_hc_variants[v].name);
    printf("\n");
    std::vector<double> logsum(vs.size(), 0.0);
    std::vector<int> cnt(vs.size(), 0);
    for (size_t si = 0; si < shapes.size(); ++si) {
        char lbl[64];
        snprintf(lbl, sizeof lbl, "%dx%dx%d s%d", shapes[si].m, shapes[si].n, shapes[si].k, shapes[si].s);
        printf("%-26s", lbl);
        for (size_t vi = 0; vi < vs.size(); ++vi) {
            const HcResult &r = table[si][vi];
            printf(" %11.1f%s", r.us, r.ok ? " " : "!");
            if (r.us > 0) logsum[vi] += log(r.us), ++cnt[vi];
        }
        printf("\n");
    }
    printf("%-26s", "geomean µs");
    for (size_t vi = 0; vi < vs.size(); ++vi) printf(" %11.1f ", cnt[vi] ? exp(logsum[vi] / cnt[vi]) : 0.0);
    printf("\n%-26s", "speedup vs first column");
    for (size_t vi = 0; vi < vs.size(); ++vi)
        printf(" %11.3f ", cnt[vi] && cnt[0] ? exp(logsum[0] / cnt[0] - logsum[vi] / cnt[vi]) : 0.0);
    printf("\n%-26s", "max rna diff (not trunc)");
    for (size_t vi = 0; vi < vs.size(); ++vi) {
        double mx = 0;
        for (size_t si = 0; si < shapes.size(); ++si) mx = std::max(mx, table[si][vi].diff_rna);
        printf(" %12.1e", mx);
    }
    printf("\n\n");
    fflush(stdout);
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
    hc_case(1000, 8, 1024, 2, false, 2);
    /* the headline shape (DeepGEMM 123 us on H200) with the other warpgroup count */
    hc_case(8192, 24, 28672, 1, true, 1);
    if (!g_quick) hc_case(4096, 24, 28672, 1, true, 1);
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
                               const float *kvu_t, const float *kv_scale, const float *w, int64_t ld_w,
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
                rq += (dqs > 0 ? dqs : 0) * (double)w[(size_t)i * ld_w + h];
                ru += (du > 0 ? (double)du : 0) * (double)w[(size_t)i * ld_w + h];
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

/* The kernel organisations compared (QG_MQA_VARIANT_*), --mqa-variants. */
static const char *const g_mqa_variant_names[3] = {"lockstep2(old)", "lockstep4(DG-like)",
                                                   "pipe(new)"};
static std::vector<int> g_mqa_variants = {QG_MQA_VARIANT_LOCKSTEP2, QG_MQA_VARIANT_LOCKSTEP4,
                                          QG_MQA_VARIANT_PIPE};
/* timed rows for the closing table: case, variant, TFLOPS (or TB/s), us */
struct PerfRow {
    std::string what;
    std::string variant;
    double rate, us;
};
static std::vector<PerfRow> g_perf;

/* variant: -1 = the planner's choice, else QG_MQA_VARIANT_* */
static void mqa_case(int seq_len, int seq_len_kv, int H, int D, bool bf16, bool compressed,
                     bool clean, int ranges, bool timed, int variant = -1) {
    char what[200], shape[160];
    snprintf(shape, sizeof shape, "mqa sq=%d skv=%d H=%d D=%d %s %s %s", seq_len, seq_len_kv, H,
             D, bf16 ? "bf16" : "fp32",
             compressed ? "compressed" : clean ? "clean" : "plain",
             ranges == RANGE_CP ? "cp" : ranges == RANGE_CAUSAL ? "causal" : "random");
    snprintf(what, sizeof what, "%s [%s]", shape,
             variant < 0 ? "planner" : g_mqa_variant_names[variant]);
    qg_mqa_plan plan;
    const char *why = "";
    if (qg__mqa_plan(seq_len, seq_len_kv, H, D, compressed, clean, bf16, g_num_sms, &plan, &why)) {
        report(false, what, why);
        return;
    }
    if (variant >= 0 && qg__mqa_plan_variant(&plan, variant)) {
        report(false, what, "unknown variant");
        return;
    }
    static char src[65536];
    if (qg__mqa_source(src, sizeof src, &plan) < 0) {
        report(false, what, "source too long");
        return;
    }
    if (g_dry) {
        g_pending.push_back(src);
        return;
    }
    CUfunction fn = get_fn(src, "qg_mqa_logits_kernel");
    CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)plan.smem_bytes));

    /* inputs as DeepGEMM's test makes them: q ~ N(0,1) cast to e4m3; kv ~ N(0,1)
     * scaled per row by amax / 448; weights ~ N(0,1) */
    const size_t nq = (size_t)seq_len * H * D, nkv = (size_t)seq_len_kv * D;
    const int64_t ld_w = seq_len % 2 ? H + 4 : H; /* odd cases: padded weight rows */
    std::vector<float> qf(nq), kvf(nkv), sc(seq_len_kv), w((size_t)seq_len * ld_w);
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
    int64_t a_ld_w = ld_w;
    void *args[] = {&tq, &tkv, &tsc, &d_w, &a_ld_w, &d_ks, &d_ke, &d_out, &ld, &a_sl, &a_skv};
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
    mqa_ref_kernel<<<rg, 128, ref_smem>>>(d_qq, d_qf, d_kvq_t, d_kvu_t, d_sc, d_w, ld_w, d_ks, d_ke,
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
        g_perf.push_back({shape, variant < 0 ? "planner" : g_mqa_variant_names[variant],
                          flops / us * 1e-6, us});
    }
    report(ok, what, detail);
    cudaFree(d_q8); cudaFree(d_kv8); cudaFree(d_qf); cudaFree(d_kvf); cudaFree(d_sc);
    cudaFree(d_w); cudaFree(d_ks); cudaFree(d_ke); cudaFree(d_out); cudaFree(d_out0);
    cudaFree(d_st); cudaFree(d_cnt);
}

static void mqa_suite() {
    for (int v : g_mqa_variants) {
        /* every (H, D) with DeepGEMM's range generators, both dtypes and forms */
        mqa_case(512, 4096, 32, 32, false, false, true, RANGE_CP, false, v);
        mqa_case(512, 4096, 32, 64, true, true, false, RANGE_CAUSAL, false, v);
        mqa_case(512, 4096, 32, 128, false, true, false, RANGE_CP, false, v);
        mqa_case(512, 4096, 64, 32, true, false, true, RANGE_CAUSAL, false, v);
        mqa_case(512, 4096, 64, 64, false, false, true, RANGE_CAUSAL, false, v);
        mqa_case(512, 4096, 64, 128, true, false, true, RANGE_CP, false, v);
        mqa_case(512, 4096, 64, 128, false, false, false, RANGE_CP, false, v);
        /* odd sizes: partial q blocks, keys not a multiple of the block (one
         * or two key blocks a q block: the pipelined path's drain), arbitrary
         * ranges, empty ones */
        mqa_case(7, 1000, 64, 128, false, false, true, RANGE_RANDOM, false, v);
        mqa_case(9, 1000, 32, 64, true, false, true, RANGE_RANDOM, false, v);
        mqa_case(333, 777, 32, 32, false, true, false, RANGE_RANDOM, false, v);
        mqa_case(1, 5, 64, 64, false, false, true, RANGE_RANDOM, false, v);
        mqa_case(37, 300, 32, 128, true, false, true, RANGE_RANDOM, false, v);
        mqa_case(130, 131, 64, 128, false, true, false, RANGE_CAUSAL, false, v);
        mqa_case(130, 257, 32, 64, false, false, false, RANGE_CAUSAL, false, v);
    }
    /* DeepGEMM's test_attention shapes, timed, every variant side by side */
    struct T { int sq, skv, H, D; bool bf16, cmp, clean; int ranges; };
    const T timed[] = {
        {2048, 65536, 64, 128, false, false, true, RANGE_CP},   /* DeepGEMM: 1166 TFLOPS */
        {2048, 65536, 64, 128, true, true, false, RANGE_CP},
        {2048, 65536, 32, 128, true, true, false, RANGE_CP},
        {8192, 8192, 64, 128, false, false, true, RANGE_CP},
        {8192, 8192, 32, 128, false, false, true, RANGE_CP},
        {2048, 8192, 64, 128, false, false, true, RANGE_CAUSAL},
        {8192, 8192, 32, 64, false, false, true, RANGE_CP},
        {2048, 65536, 32, 64, false, true, false, RANGE_CP},
        {8192, 8192, 64, 32, true, true, false, RANGE_CAUSAL},
        {8192, 65536, 32, 32, true, false, true, RANGE_CAUSAL},
    };
    const int n_timed = g_quick ? 2 : (int)(sizeof timed / sizeof timed[0]);
    for (int i = 0; i < n_timed; ++i)
        for (int v : g_mqa_variants)
            mqa_case(timed[i].sq, timed[i].skv, timed[i].H, timed[i].D, timed[i].bf16,
                     timed[i].cmp, timed[i].clean, timed[i].ranges, true, v);
}

/* ---- paged MQA logits ---------------------------------------------------- */

__device__ uint8_t to_e4m3(float x) {
    return (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}
__device__ float from_e4m3(uint8_t v) {
    __nv_fp8_e4m3 f;
    f.__x = v;
    return (float)f;
}

__global__ void pmqa_gen_q(uint8_t *q8, size_t n, uint64_t seed) {
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < n; x += (size_t)gridDim.x * blockDim.x)
        q8[x] = to_e4m3(dnormal(seed + x));
}
/* one thread per cache row: values, amax / 448 scale, fused layout */
__global__ void pmqa_gen_cache(uint8_t *cache, long long rows, int D, int64_t block_stride,
                               uint64_t seed) {
    const long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const long long blk = r / 64;
    const int row = (int)(r % 64);
    float amax = 0;
    for (int d = 0; d < D; ++d) amax = fmaxf(amax, fabsf(dnormal(seed + (uint64_t)r * D + d)));
    const float sf = fmaxf(amax, 1e-4f) / 448.0f, inv = 1.0f / sf;
    uint8_t *base = cache + blk * block_stride;
    for (int d = 0; d < D; ++d) base[row * D + d] = to_e4m3(dnormal(seed + (uint64_t)r * D + d) * inv);
    ((float *)(base + 64 * D))[row] = sf;
}

/* one block: logits row rows[blockIdx.y], keys blockIdx.x * 128 + threadIdx.x;
 * same arithmetic rules as mqa_ref_kernel */
__global__ void pmqa_ref_kernel(const uint8_t *q8, uint64_t q_seed, const uint8_t *cache,
                                int64_t block_stride, uint64_t kv_seed, const float *w, int64_t ld_w,
                                const int *ctx, const int *bt, int64_t bt_ld, const int *rows,
                                const void *out, int64_t ld, int bf16, int clean, int next_n, int H,
                                int D, int max_len, MqaStats *st) {
    extern __shared__ float sm[];
    float *sq = sm, *su = sm + H * D;
    const int r = rows[blockIdx.y], b = r / next_n;
    for (int x = threadIdx.x; x < H * D; x += blockDim.x) {
        sq[x] = from_e4m3(q8[(size_t)r * H * D + x]);
        su[x] = dnormal(q_seed + (uint64_t)r * H * D + x);
    }
    __syncthreads();
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    double xy_q = 0, xxyy_q = 0, xy_u = 0, xxyy_u = 0;
    unsigned long long nan = 0, bad = 0, checked = 0;
    const int len = ctx[r];
    if (j < max_len) {
        const float x = bf16 ? __uint_as_float((uint32_t)((const uint16_t *)out)[(int64_t)r * ld + j] << 16)
                             : ((const float *)out)[(int64_t)r * ld + j];
        if (j < len) {
            const long long blk = bt[(int64_t)b * bt_ld + j / 64];
            const int row = j % 64;
            const uint8_t *kv = cache + blk * block_stride + row * D;
            const float sc = ((const float *)(cache + blk * block_stride + 64 * D))[row];
            const uint64_t ukey = kv_seed + (uint64_t)(blk * 64 + row) * D;
            double rq = 0, ru = 0;
            for (int h = 0; h < H; ++h) {
                float dq = 0, du = 0;
                for (int d = 0; d < D; ++d) {
                    dq = fmaf(sq[h * D + d], from_e4m3(kv[d]), dq);
                    du = fmaf(su[h * D + d], dnormal(ukey + d), du);
                }
                const double dqs = (double)dq * sc;
                rq += (dqs > 0 ? dqs : 0) * (double)w[(size_t)r * ld_w + h];
                ru += (du > 0 ? (double)du : 0) * (double)w[(size_t)r * ld_w + h];
            }
            if (x != x) ++nan;
            else {
                xy_q += x * rq, xxyy_q += (double)x * x + rq * rq;
                xy_u += x * ru, xxyy_u += (double)x * x + ru * ru;
            }
            ++checked;
        } else if (clean) {
            if (!(isinf(x) && x < 0)) ++bad;
        }
    }
    atomicAdd(&st->xy_q, xy_q);
    atomicAdd(&st->xxyy_q, xxyy_q);
    atomicAdd(&st->xy_u, xy_u);
    atomicAdd(&st->xxyy_u, xxyy_u);
    if (nan) atomicAdd(&st->nan, nan);
    if (bad) atomicAdd(&st->bad_neginf, bad);
    if (checked) atomicAdd(&st->checked, checked);
}

/* math warpgroups of the paged kernel compared (--paged-variants 24) */
static std::vector<int> g_pmqa_wgs = {2, 4};

/* wgs: 0 = the planner's choice, else 2 or 4 math warpgroups */
static void pmqa_case(int batch, int next_n, int H, int D, bool bf16, bool clean, int avg_kv,
                      bool timed, bool graph_test, int wgs = 0) {
    char what[200], shape[160];
    snprintf(shape, sizeof shape, "paged-mqa bsz=%d next_n=%d H=%d D=%d L=%d %s%s%s", batch,
             next_n, H, D, avg_kv, bf16 ? "bf16" : "fp32", clean ? " clean" : "",
             graph_test ? " +graph" : "");
    qg_pmqa_plan plan;
    const char *why = "";
    if (qg__pmqa_plan(batch, next_n, H, D, clean, bf16, g_num_sms, &plan, &why)) {
        report(false, shape, why);
        return;
    }
    if (wgs && qg__pmqa_plan_variant(&plan, wgs)) {
        report(false, shape, "unknown variant");
        return;
    }
    char vname[32];
    snprintf(vname, sizeof vname, "%d math wgs%s", plan.math_wgs,
             plan.math_wgs == 2 ? "(old)" : "(new)");
    snprintf(what, sizeof what, "%s [%s]", shape, vname);
    static char src[65536];
    qg__pmqa_source(src, sizeof src, &plan);
    if (g_dry) {
        g_pending.push_back(src);
        qg__pmqa_schedule_source(src, sizeof src);
        g_pending.push_back(src);
        return;
    }
    CUfunction fn = get_fn(src, "qg_paged_mqa_logits_kernel");
    CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)plan.smem_bytes));
    qg__pmqa_schedule_source(src, sizeof src);
    CUfunction sched = get_fn(src, "qg_paged_mqa_schedule_kernel");

    /* lengths as DeepGEMM's test: ctx ~ U[0.7 L, 1.3 L); 2-D per next_n token
     * ((ctx + 1) * U[0, 1)), the last token's = ctx; small cases add zeros */
    std::vector<int> ctx(batch), ctx2((size_t)batch * next_n);
    auto draw = [&](std::vector<int> &c2, std::vector<int> &c1) {
        for (int b = 0; b < batch; ++b) {
            const int lo = (int)(0.7 * avg_kv), hi = std::max(lo + 1, (int)(1.3 * avg_kv));
            c1[b] = lo + (int)(rnd_u64() % (uint64_t)(hi - lo));
            if (avg_kv < 1000 && rnd_u64() % 5 == 0) c1[b] = (int)(rnd_u64() % 3); /* 0..2 */
            for (int n = 0; n < next_n; ++n)
                c2[(size_t)b * next_n + n] = n == next_n - 1 ? c1[b] : (int)((c1[b] + 1) * rnd_unit());
        }
    };
    draw(ctx2, ctx);
    int max_blocks = 1;
    long long total_blocks = 0;
    for (int b = 0; b < batch; ++b) {
        const int nb = (int)(((long long)ctx[b] * 13 / 10 + 2 + 63) / 64); /* room to grow */
        max_blocks = std::max(max_blocks, nb);
    }
    const int max_len = max_blocks * 64;
    total_blocks = (long long)batch * max_blocks;
    /* block table: a random permutation of all blocks */
    std::vector<int> perm(total_blocks);
    for (long long i = 0; i < total_blocks; ++i) perm[i] = (int)i;
    for (long long i = total_blocks - 1; i > 0; --i) std::swap(perm[i], perm[rnd_u64() % (i + 1)]);
    const int64_t bt_ld = max_blocks, block_stride = 64 * (D + 4);
    const int rows_total = batch * next_n;
    const int64_t ld_w = batch % 2 ? H + 4 : H; /* odd batches: padded weight rows */
    std::vector<float> w((size_t)rows_total * ld_w);
    for (auto &x : w) x = rnd_normal();
    const uint64_t q_seed = rnd_u64(), kv_seed = rnd_u64();
    const int esz = bf16 ? 2 : 4;
    const int64_t ld = (max_len + 8 + 15) / 16 * 16;
    const size_t out_bytes = (size_t)(rows_total + 1) * ld * esz;

    uint8_t *d_q8, *d_cache;
    float *d_w;
    int *d_ctx, *d_bt, *d_sched;
    void *d_out, *d_out0;
    const size_t nq = (size_t)rows_total * H * D;
    CK(cudaMalloc(&d_q8, nq + 16));
    CK(cudaMalloc(&d_cache, (size_t)total_blocks * block_stride));
    CK(cudaMalloc(&d_w, w.size() * 4));
    CK(cudaMalloc(&d_ctx, ctx2.size() * 4 + 16));
    CK(cudaMalloc(&d_bt, perm.size() * 4));
    CK(cudaMalloc(&d_sched, plan.schedule_bytes));
    CK(cudaMalloc(&d_out, out_bytes));
    CK(cudaMalloc(&d_out0, out_bytes));
    pmqa_gen_q<<<1024, 256>>>(d_q8, nq, q_seed);
    pmqa_gen_cache<<<(unsigned)((total_blocks * 64 + 255) / 256), 256>>>(d_cache, total_blocks * 64, D,
                                                                         block_stride, kv_seed);
    CK(cudaGetLastError());
    CK(cudaMemcpy(d_w, w.data(), w.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_ctx, ctx2.data(), ctx2.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_bt, perm.data(), perm.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_out, 0xFF, out_bytes));

    CUtensorMapSwizzle swz = D == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                             : D == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B;
    const int N = next_n * H;
    CUtensorMap tq = tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, d_q8, D, (uint64_t)rows_total * H, D, D,
                             N, swz);
    CUtensorMap tkv, tsc;
    {
        cuuint64_t dims[3] = {(cuuint64_t)D, 64, (cuuint64_t)total_blocks};
        cuuint64_t strides[2] = {(cuuint64_t)D, (cuuint64_t)block_stride};
        cuuint32_t box[3] = {(cuuint32_t)D, 64, 1}, es[3] = {1, 1, 1};
        CU(cuTensorMapEncodeTiled(&tkv, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, d_cache, dims, strides, box,
                                  es, CU_TENSOR_MAP_INTERLEAVE_NONE, swz,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
        cuuint64_t dims2[2] = {64, (cuuint64_t)total_blocks};
        cuuint64_t strides2[1] = {(cuuint64_t)block_stride};
        cuuint32_t box2[2] = {64, 1}, es2[2] = {1, 1};
        CU(cuTensorMapEncodeTiled(&tsc, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, d_cache + 64 * D, dims2,
                                  strides2, box2, es2, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    }
    int a_batch = batch, a_nn = next_n, a_max = max_len, a_ctas = plan.grid_x;
    int64_t a_bt_ld = bt_ld, a_ld = ld, a_ld_w = ld_w;
    void *sargs[] = {&d_ctx, &a_batch, &a_nn, &a_max, &a_ctas, &d_sched};
    void *largs[] = {&tq, &tkv, &tsc, &d_w, &a_ld_w, &d_ctx, &d_bt, &a_bt_ld, &d_sched, &d_out, &a_ld,
                     &a_batch, &a_max};
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    auto run_sched = [&] { launch(sched, 1, plan.sched_block_x, 1, 0, sargs, stream); };
    auto run_logits = [&] { launch(fn, plan.grid_x, plan.block_x, 1, plan.smem_bytes, largs, stream); };
    run_sched();
    run_logits();
    CK(cudaStreamSynchronize(stream));

    auto check = [&](MqaStats &st, std::vector<int> &rows, long long &cost_rows) {
        rows.clear();
        if ((long long)rows_total * max_len <= (1ll << 24)) {
            for (int r = 0; r < rows_total; ++r) rows.push_back(r);
        } else {
            rows.push_back(0);
            rows.push_back(rows_total - 1);
            while (rows.size() < 32) rows.push_back((int)(rnd_u64() % rows_total));
        }
        cost_rows = 0;
        for (int r : rows) cost_rows += ctx2[r];
        int *d_rows;
        MqaStats *d_st;
        CK(cudaMalloc(&d_rows, rows.size() * 4));
        CK(cudaMalloc(&d_st, sizeof(MqaStats)));
        CK(cudaMemcpy(d_rows, rows.data(), rows.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(d_st, 0, sizeof(MqaStats)));
        const int ref_smem = 2 * H * D * 4;
        CK(cudaFuncSetAttribute(pmqa_ref_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ref_smem));
        dim3 rg((max_len + 127) / 128, (unsigned)rows.size());
        pmqa_ref_kernel<<<rg, 128, ref_smem>>>(d_q8, q_seed, d_cache, block_stride, kv_seed, d_w, ld_w,
                                               d_ctx, d_bt, bt_ld, d_rows, d_out, ld, bf16, clean,
                                               next_n, H, D, max_len, d_st);
        CK(cudaGetLastError());
        CK(cudaMemcpy(&st, d_st, sizeof st, cudaMemcpyDeviceToHost));
        cudaFree(d_rows);
        cudaFree(d_st);
    };
    MqaStats st;
    std::vector<int> rows;
    long long cost_rows = 0;
    check(st, rows, cost_rows);
    /* guard: the row past the last and the columns past max_len stay poisoned */
    std::vector<uint8_t> host_tail((size_t)ld * esz);
    CK(cudaMemcpy(host_tail.data(), (uint8_t *)d_out + (size_t)rows_total * ld * esz, host_tail.size(),
                  cudaMemcpyDeviceToHost));
    bool guard_ok = std::all_of(host_tail.begin(), host_tail.end(), [](uint8_t b) { return b == 0xFF; });
    {
        std::vector<uint8_t> r0((size_t)ld * esz);
        CK(cudaMemcpy(r0.data(), d_out, r0.size(), cudaMemcpyDeviceToHost));
        for (size_t x = (size_t)max_len * esz; x < r0.size(); ++x) guard_ok = guard_ok && r0[x] == 0xFF;
    }
    const double diff_q = st.xxyy_q == 0 ? 0 : 1 - 2 * st.xy_q / st.xxyy_q;
    const double diff_u = st.xxyy_u == 0 ? 0 : 1 - 2 * st.xy_u / st.xxyy_u;
    const double tol = bf16 ? 3e-5 : 5e-6;
    bool ok = st.nan == 0 && st.bad_neginf == 0 && guard_ok && diff_q < tol && diff_u < 1e-3 &&
              (long long)st.checked == cost_rows;

    /* bitwise identity over 20 runs (positions past each row's length are
     * poisoned alike each time, or -inf under clean) */
    CK(cudaMemcpy(d_out0, d_out, out_bytes, cudaMemcpyDeviceToDevice));
    unsigned long long *d_cnt, mism = 0;
    CK(cudaMalloc(&d_cnt, 8));
    CK(cudaMemset(d_cnt, 0, 8));
    for (int it = 0; it < 20; ++it) {
        CK(cudaMemsetAsync(d_out, 0xFF, out_bytes, stream));
        run_sched();
        run_logits();
        count_diff_kernel<<<1024, 256, 0, stream>>>((const uint32_t *)d_out, (const uint32_t *)d_out0,
                                                    out_bytes / 4, d_cnt);
    }
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(&mism, d_cnt, 8, cudaMemcpyDeviceToHost));
    ok = ok && mism == 0;

    char graph_note[160] = "";
    if (graph_test) {
        /* capture schedule + logits; replay with garbage lengths (must not
         * fault: every read is clamped), then with new valid lengths, which
         * must give the eager result bitwise */
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        run_sched();
        run_logits();
        CK(cudaStreamEndCapture(stream, &graph));
        CK(cudaGraphInstantiate(&exec, graph, 0));
        std::vector<int> junk(ctx2.size());
        for (auto &x : junk) x = (int)rnd_u64();
        CK(cudaMemcpy(d_ctx, junk.data(), junk.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaGraphLaunch(exec, stream));
        const cudaError_t junk_err = cudaStreamSynchronize(stream);
        std::vector<int> c1(batch);
        draw(ctx2, c1);
        for (auto &x : ctx2) x = std::min(x, max_len);
        CK(cudaMemcpy(d_ctx, ctx2.data(), ctx2.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemsetAsync(d_out, 0xFF, out_bytes, stream));
        CK(cudaGraphLaunch(exec, stream));
        CK(cudaMemcpyAsync(d_out0, d_out, out_bytes, cudaMemcpyDeviceToDevice, stream));
        CK(cudaMemsetAsync(d_out, 0xFF, out_bytes, stream));
        run_sched();
        run_logits();
        CK(cudaMemsetAsync(d_cnt, 0, 8, stream));
        count_diff_kernel<<<1024, 256, 0, stream>>>((const uint32_t *)d_out, (const uint32_t *)d_out0,
                                                    out_bytes / 4, d_cnt);
        CK(cudaStreamSynchronize(stream));
        unsigned long long gm = 0;
        CK(cudaMemcpy(&gm, d_cnt, 8, cudaMemcpyDeviceToHost));
        MqaStats st2;
        std::vector<int> rows2;
        long long cost2 = 0;
        check(st2, rows2, cost2);
        const double gd = st2.xxyy_q == 0 ? 0 : 1 - 2 * st2.xy_q / st2.xxyy_q;
        const bool gok = junk_err == cudaSuccess && gm == 0 && gd < tol && st2.nan == 0 &&
                         st2.bad_neginf == 0 && (long long)st2.checked == cost2;
        snprintf(graph_note, sizeof graph_note, ", graph: junk-lens %s, replay-vs-eager mismatch %llu, diff %.2e",
                 junk_err == cudaSuccess ? "ok" : cudaGetErrorString(junk_err), gm, gd);
        ok = ok && gok;
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(graph));
    }

    char detail[700];
    int len = snprintf(detail, sizeof detail,
                       "diff deq %.2e (< %.0e) unq %.2e, nan %llu, bad -inf %llu, guard %s, checked %llu/%lld "
                       "(%zu rows), repeat-mismatch words %llu%s [grid %d, %d stages, smem %zu]",
                       diff_q, tol, diff_u, st.nan, st.bad_neginf, guard_ok ? "ok" : "WRITTEN",
                       st.checked, cost_rows, rows.size(), mism, graph_note, plan.grid_x, plan.stages,
                       plan.smem_bytes);
    if (timed && g_time && !graph_test) {
        const double us = time_us([&] { run_logits(); }, 10);
        long long sum_len = 0;
        for (int b = 0; b < batch; ++b) sum_len += ctx[b];
        const double bytes = (double)nq + w.size() * 4.0 + (double)sum_len * (D + 4) +
                             (double)sum_len * next_n * esz;
        snprintf(detail + len, sizeof detail - len, " | %.1f us, %.0f GB/s, %.0f TFLOPS", us,
                 bytes / us * 1e-3, 2.0 * sum_len * next_n * H * D / us * 1e-6);
        g_perf.push_back({shape, vname, bytes / us * 1e-6, us});
    }
    report(ok, what, detail);
    cudaFree(d_q8); cudaFree(d_cache); cudaFree(d_w); cudaFree(d_ctx); cudaFree(d_bt);
    cudaFree(d_sched); cudaFree(d_out); cudaFree(d_out0); cudaFree(d_cnt);
    CK(cudaStreamDestroy(stream));
}

static void pmqa_suite() {
    for (int v : g_pmqa_wgs) {
        pmqa_case(3, 1, 32, 128, false, true, 300, false, false, v);
        pmqa_case(5, 2, 64, 64, true, false, 500, false, false, v);
        pmqa_case(7, 2, 32, 32, false, true, 200, false, true, v);
        pmqa_case(9, 1, 64, 128, true, true, 700, false, false, v);
        pmqa_case(11, 2, 64, 128, false, true, 333, false, false, v); /* one or two units a CTA */
        pmqa_case(256, 2, 64, 128, false, false, 8192, false, true, v);
    }
    /* DeepGEMM's SM90 cases (D 128), timed, each variant side by side */
    struct T { int bsz, nn, H; bool bf16; int L; };
    const T timed[] = {
        {4096, 1, 64, false, 8192}, {4096, 2, 64, true, 8192}, {4096, 1, 32, false, 8192},
        {4096, 2, 32, false, 8192}, {256, 1, 64, false, 65536}, {256, 2, 64, true, 65536},
        {256, 1, 32, false, 65536}, {256, 2, 32, false, 65536}, {256, 1, 64, true, 8192},
        {256, 2, 64, false, 8192}, {256, 1, 32, true, 8192}, {256, 2, 32, false, 8192},
    };
    const int n_timed = g_quick ? 3 : (int)(sizeof timed / sizeof timed[0]);
    for (int i = 0; i < n_timed; ++i)
        for (int v : g_pmqa_wgs)
            pmqa_case(timed[i].bsz, timed[i].nn, timed[i].H, 128, timed[i].bf16, false, timed[i].L,
                      true, false, v);
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) g_quick = true;
        else if (!strcmp(argv[i], "--no-time")) g_time = false;
        else if (!strcmp(argv[i], "--compile-only")) g_compile_only = true;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc) g_hc_variant_filter = argv[++i];
        else if (!strcmp(argv[i], "--paged-variants") && i + 1 < argc) { /* e.g. 24 */
            g_pmqa_wgs.clear();
            for (const char *c = argv[++i]; *c; ++c)
                if (*c == '2' || *c == '4') g_pmqa_wgs.push_back(*c - '0');
        } else if (!strcmp(argv[i], "--mqa-variants") && i + 1 < argc) { /* e.g. 0,2 */
            g_mqa_variants.clear();
            for (const char *c = argv[++i]; *c; ++c)
                if (*c >= '0' && *c <= '2') g_mqa_variants.push_back(*c - '0');
        }
        else {
            fprintf(stderr, "usage: %s [--quick] [--no-time] [--compile-only] "
                            "[--only hc|hc-variants|mqa|paged] [--variants a,b,...] "
                            "[--mqa-variants 012] [--paged-variants 24]\n", argv[0]);
            return 2;
        }
    }
    if (g_compile_only) {
        g_num_sms = 132;
        g_dry = true;
        hc_suite();
        hc_variants_suite();
        mqa_suite();
        pmqa_suite();
        const size_t n_src = g_pending.size();
        precompile();
        printf("compile-only: %zu JIT sources, %zu distinct, all compiled\n", n_src, g_cubins.size());
        return 0;
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
    const bool do_hc = !g_only || !strcmp(g_only, "hc");
    const bool do_hcv = g_only && !strcmp(g_only, "hc-variants"); /* only when asked: ~150 runs */
    const bool do_mqa = !g_only || !strcmp(g_only, "mqa");
    const bool do_paged = !g_only || !strcmp(g_only, "paged");
    g_dry = true; /* collect every JIT source, compile them in parallel */
    if (do_hc) hc_suite();
    if (do_hcv) hc_variants_suite();
    if (do_mqa) mqa_suite();
    if (do_paged) pmqa_suite();
    g_dry = false;
    const size_t n_src = g_pending.size();
    precompile();
    printf("compiled %zu JIT sources (%zu distinct)\n", n_src, g_cubins.size());
    if (do_hc) hc_suite();
    if (do_hcv) hc_variants_suite();
    if (do_mqa) mqa_suite();
    if (do_paged) pmqa_suite();
    if (!g_perf.empty()) { /* the timed rows side by side: one line a case */
        printf("\nperf (median of 10 after an L2 flush; mqa: TFLOPS = 2 * valid pairs * H * D / t; "
               "paged: TB/s of cache + q + logits bytes):\n");
        std::vector<std::string> cases, variants;
        for (auto &r : g_perf) {
            if (std::find(cases.begin(), cases.end(), r.what) == cases.end()) cases.push_back(r.what);
            if (std::find(variants.begin(), variants.end(), r.variant) == variants.end())
                variants.push_back(r.variant);
        }
        printf("%-58s", "case");
        for (auto &v : variants) printf(" | %22s", v.c_str());
        printf("\n");
        for (auto &c : cases) {
            printf("%-58s", c.c_str());
            for (auto &v : variants) {
                const PerfRow *hit = nullptr;
                for (auto &r : g_perf)
                    if (r.what == c && r.variant == v) hit = &r;
                if (hit) printf(" | %8.1f %4s %7.0fus", hit->rate,
                                c.rfind("mqa", 0) == 0 ? "TF" : "TB/s", hit->us);
                else printf(" | %22s", "-");
            }
            printf("\n");
        }
    }
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures);
    return g_failures ? 1 : 0;
}
