/*
 * bf16_harness.cu -- standalone GPU check and timing of the BF16 GEMM kernel
 * (kernels/qg_bf16_gemm.cuh) without the qgemm library: the planner and the
 * JIT source writer (src/bf16_plan.c, compiled in), NVRTC with the library's
 * options, the driver API for the module, the tensor maps and the launch.
 *
 * Build and run from the repository root (an H100/H200):
 *   nvcc -arch=sm_90a -O2 -o bf16_harness bench/standalone/bf16_harness.cu -lcuda -lnvrtc -lpthread && ./bf16_harness
 *   (./bf16_harness KERNELS_DIR to take the headers elsewhere; "--quick" skips timing)
 *
 * Each case: fresh random bf16 inputs (zero mean, unit variance), D poisoned with 0xFF bytes
 * (NaN) or holding C, the kernel, then against an fp64 reference of the same
 * bf16 inputs: diff = 1 - 2 sum(x y) / sum(x^2 + y^2) < 1e-5 over every
 * element that must be written (all rows for small shapes, 64 sampled rows of
 * the large ones; every element of D is still checked for NaN / poison), and
 * every element that must stay untouched (padding segments, masked-out rows,
 * rows between psum groups) still the poison. Large shapes are then timed:
 * CUDA events around the kernel alone, an L2 flush (write + read 2x L2)
 * before each run, median of 20, TFLOPS. Prints PASS/FAIL per case and exits
 * non-zero on any failure.
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
#include <thread>
#include <vector>
#include <unistd.h>

extern "C" {
#include "../src/bf16_plan.c"
}

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)
#define CU(x)                                                                                  \
    do {                                                                                       \
        CUresult r_ = (x);                                                                     \
        if (r_ != CUDA_SUCCESS) {                                                              \
            const char *s_ = "?";                                                              \
            cuGetErrorString(r_, &s_);                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);                    \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

/* ---- host bf16 ----------------------------------------------------------- */
static uint16_t f2bf(float f) {
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

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double urand() {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static float nrand() { /* zero mean, unit variance (triangular: cheap for 10^8 values) */
    return (float)((urand() + urand() - 1.0) * 2.4494897);
}

/* ---- NVRTC --------------------------------------------------------------- */
static std::string g_kdir = "kernels";
static std::string slurp(const std::string &path) {
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path.c_str());
        exit(2);
    }
    std::string s;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    fclose(f);
    return s;
}

struct Kernel {
    CUmodule mod = nullptr;
    CUfunction fn = nullptr;
};

static bool compile(const std::string &src, Kernel &k, std::string &log_out) {
    static const char *names[] = {"qg_ptx.cuh", "qg_scheduler.cuh", "qg_bf16_gemm.cuh"};
    static std::string texts[3];
    static const char *ptrs[3];
    if (texts[0].empty())
        for (int i = 0; i < 3; ++i) {
            texts[i] = slurp(g_kdir + "/" + names[i]);
            ptrs[i] = texts[i].c_str();
        }
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), "bf16.cu", 3, ptrs, names) != NVRTC_SUCCESS) return false;
    const char *opts[] = {"-arch=sm_90a", "-std=c++17", "-default-device", "-Xptxas=-v"};
    nvrtcResult r = nvrtcCompileProgram(prog, 4, opts);
    size_t ls = 0;
    nvrtcGetProgramLogSize(prog, &ls);
    std::string log(ls, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    log_out = log;
    if (r != NVRTC_SUCCESS) {
        nvrtcDestroyProgram(&prog);
        return false;
    }
    size_t n = 0;
    nvrtcGetCUBINSize(prog, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(prog, cubin.data());
    nvrtcDestroyProgram(&prog);
    CU(cuModuleLoadData(&k.mod, cubin.data()));
    CU(cuModuleGetFunction(&k.fn, k.mod, "qg_bf16_gemm_kernel"));
    return true;
}

/* ---- tensor maps --------------------------------------------------------- */
static CUtensorMapSwizzle swz(int bytes) {
    return bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
           : bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
           : bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                         : CU_TENSOR_MAP_SWIZZLE_NONE;
}
static CUtensorMap map2d(CUtensorMapDataType t, void *p, uint64_t inner, uint64_t outer,
                         uint64_t stride_bytes, uint32_t box_in, uint32_t box_out, CUtensorMapSwizzle s) {
    CUtensorMap m;
    cuuint64_t dims[2] = {inner, outer};
    cuuint64_t strides[1] = {stride_bytes};
    cuuint32_t box[2] = {box_in, box_out};
    cuuint32_t es[2] = {1, 1};
    CU(cuTensorMapEncodeTiled(&m, t, 2, p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, s,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return m;
}
static CUtensorMap map3d(CUtensorMapDataType t, void *p, uint64_t d0, uint64_t d1, uint64_t d2,
                         uint64_t s1, uint64_t s2, uint32_t b0, uint32_t b1, CUtensorMapSwizzle s) {
    CUtensorMap m;
    cuuint64_t dims[3] = {d0, d1, d2};
    cuuint64_t strides[2] = {s1, s2};
    cuuint32_t box[3] = {b0, b1, 1};
    cuuint32_t es[3] = {1, 1, 1};
    CU(cuTensorMapEncodeTiled(&m, t, 3, p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, s,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return m;
}

/* ---- a case ---------------------------------------------------------------- */
struct Case {
    const char *name;
    qg_bf16_layout layout;
    qg_bf16_kind kind;
    int m, n, k;       /* masked: m = M_max; k-grouped: k unused (ks) */
    int groups;
    int d_f32, with_c;
    bool time_it;
    int force_bm = 0, force_bn = 0, force_mc = -1;
    std::vector<int> ks; /* k-grouped */
};

static int g_num_sms, g_smem_limit, g_l2_bytes;
static int g_failures = 0;
static bool g_quick = false;

/* Wait for the stream with a deadline: a kernel that deadlocks (a barrier
 * never completing) is reported and ends the run instead of hanging it. */
static void sync_or_die(const char *what) {
    for (long long spins = 0;; ++spins) {
        cudaError_t e = cudaStreamQuery(0);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) {
            printf("FAIL %s: %s\n", what, cudaGetErrorString(e));
            exit(1);
        }
        if (spins > 200000) { /* ~20 s of 100 us sleeps */
            printf("FAIL %s: the kernel did not finish in 20 s (deadlock?)\n", what);
            fflush(stdout);
            _exit(1);
        }
        usleep(100);
    }
}

static void l2_flush(void *buf, size_t bytes) {
    CK(cudaMemsetAsync(buf, (int)(urand() * 255), bytes));
}

static void run_case(const Case &c) {
    const int a_mn = qg__bf16_a_mn_major(c.layout), b_mn = qg__bf16_b_mn_major(c.layout);
    const int G = c.groups;
    const bool kg = c.kind == QG_BF16_K_GROUPED;
    /* ---- problem, plan, kernel -------------------------------------------- */
    int sum_k = 0, max_k = 0;
    for (int x : c.ks) sum_k += x, max_k = std::max(max_k, x);
    qg_bf16_problem p = {};
    p.m = c.m;
    p.n = c.n;
    p.k = kg ? std::max(max_k, 64) : c.k;
    p.layout = c.layout;
    p.kind = c.kind;
    p.num_groups = G;
    p.d_f32 = c.d_f32;
    p.with_c = c.with_c;
    p.num_sms = g_num_sms;
    p.smem_limit = g_smem_limit;

    /* rows of A / D and the row -> (group, valid) map */
    std::vector<int> row_group; /* -1: untouched row */
    std::vector<int> m_indices, masked_m, psum_ends;
    int rows = c.m;
    if (c.kind == QG_BF16_CONTIGUOUS || c.kind == QG_BF16_PSUM) {
        /* groups of random size, each segment aligned to 128; contiguous:
         * one all-padding segment, -1 rows after each group's real rows */
        std::vector<int> sizes(G);
        for (int g = 0; g < G; ++g) sizes[g] = (int)(urand() * c.m);
        if (G > 2) sizes[1] = 0; /* an empty group */
        rows = 0;
        for (int g = 0; g < G; ++g) {
            for (int i = 0; i < sizes[g]; ++i) row_group.push_back(g), m_indices.push_back(g);
            rows += sizes[g];
            psum_ends.push_back(rows);
            int pad = (128 - rows % 128) % 128;
            if (c.kind == QG_BF16_CONTIGUOUS && g == 0) pad += 128; /* a padding segment */
            if (g == G - 1 && c.kind == QG_BF16_PSUM) pad = 0;
            for (int i = 0; i < pad; ++i) {
                /* contiguous: the kernel computes padding rows of a real
                 * segment (their expert is the segment's); a whole padding
                 * segment stays untouched. psum: rows between groups untouched */
                const int seg_first = (rows + i) & ~127;
                const bool seg_real = c.kind == QG_BF16_CONTIGUOUS && seg_first < rows;
                row_group.push_back(seg_real ? g : -1);
                m_indices.push_back(-1);
            }
            rows += pad;
        }
        if (rows == 0) rows = 128, row_group.assign(128, -1), m_indices.assign(128, -1);
        p.m = rows;
        if (c.kind == QG_BF16_PSUM) p.expected_m = c.m / 2 + 1;
    } else if (c.kind == QG_BF16_MASKED) {
        for (int g = 0; g < G; ++g) {
            int mm = g == 0 ? 0 : g == 1 ? c.m : (int)(urand() * (c.m + 1));
            masked_m.push_back(mm);
            for (int i = 0; i < c.m; ++i) row_group.push_back(i < mm ? g : -1);
        }
        rows = G * c.m;
        p.expected_m = c.m / 2;
    } else if (kg) {
        rows = G * c.m; /* D [G][M][N] */
        for (int g = 0; g < G; ++g)
            for (int i = 0; i < c.m; ++i) row_group.push_back(g);
    } else {
        row_group.assign(c.m, 0);
    }

    qg_bf16_plan pl;
    int rc = c.force_bm ? qg__bf16_complete(&p, c.force_bm, c.force_bn, c.force_mc < 0 ? 0 : c.force_mc, &pl)
                        : qg__bf16_select(&p, &pl);
    char label[256];
    snprintf(label, sizeof label, "%-26s %s %-10s m=%d n=%d k=%d g=%d D=%s%s", c.name,
             (const char *[]){"NT", "NN", "TN", "TT"}[c.layout],
             (const char *[]){"dense", "contiguous", "masked", "psum", "k-grouped"}[c.kind], c.m, c.n,
             kg ? sum_k : c.k, G, c.d_f32 ? "f32" : "bf16", c.with_c ? "+C" : "");
    if (rc) {
        printf("FAIL %s: no plan\n", label);
        ++g_failures;
        return;
    }
    static char src[16384];
    if (qg__bf16_kernel_source(src, sizeof src, &p, &pl) < 0) {
        printf("FAIL %s: source\n", label);
        ++g_failures;
        return;
    }
    Kernel kern;
    std::string log;
    if (!compile(src, kern, log)) {
        printf("FAIL %s: compile\n%s\n", label, log.c_str());
        ++g_failures;
        return;
    }
    const bool spill = log.find(" 0 bytes spill stores") == std::string::npos ||
                       log.find(" 0 bytes spill loads") == std::string::npos;

    /* ---- operands ------------------------------------------------------------ */
    const int K = kg ? sum_k : c.k;
    const int Kb = kg ? sum_k : c.k;                        /* K rows of B per group (MN-major) */
    const int lda = a_mn ? (c.m + 7) / 8 * 8 : (K + 7) / 8 * 8;
    const int ldb = b_mn ? (c.n + 7) / 8 * 8 : (K + 7) / 8 * 8;
    const int ldd = (c.n + 7) / 8 * 8;
    const int a_rows = a_mn ? K : rows; /* outer dim of A's storage */
    const int b_rows = b_mn ? (kg ? sum_k : G * Kb) : G * c.n;
    std::vector<uint16_t> ha((size_t)a_rows * lda), hb((size_t)b_rows * ldb);
    for (auto &x : ha) x = f2bf(nrand());
    for (auto &x : hb) x = f2bf(nrand());
    /* padding columns of A / B: NaN (reading past M / N / K would show) */
    for (int r = 0; r < a_rows; ++r)
        for (int i = a_mn ? c.m : K; i < lda; ++i) ha[(size_t)r * lda + i] = 0x7FC0;
    for (int r = 0; r < b_rows; ++r)
        for (int i = b_mn ? c.n : K; i < ldb; ++i) hb[(size_t)r * ldb + i] = 0x7FC0;
    auto A = [&](int row, int kk) -> double { /* row: of the flat rows */
        return bf2f(a_mn ? ha[(size_t)kk * lda + row] : ha[(size_t)row * lda + kk]);
    };
    auto B = [&](int g, int n, int kk) -> double { /* kk: absolute K row for k-grouped */
        if (b_mn) return bf2f(hb[((size_t)(kg ? 0 : g * Kb) + kk) * ldb + n]);
        return bf2f(hb[((size_t)g * c.n + n) * ldb + kk]);
    };
    const size_t dbytes = c.d_f32 ? 4 : 2;
    const size_t d_elems = (size_t)rows * ldd;
    std::vector<unsigned char> hd(d_elems * dbytes);
    std::vector<float> hc;
    if (c.with_c) {
        hc.resize(d_elems);
        for (auto &x : hc) x = nrand() * 32.0f;
        for (size_t i = 0; i < d_elems; ++i) {
            if (c.d_f32) memcpy(&hd[i * 4], &hc[i], 4);
            else {
                uint16_t h = f2bf(hc[i]);
                hc[i] = bf2f(h);
                memcpy(&hd[i * 2], &h, 2);
            }
        }
    } else {
        memset(hd.data(), 0xFF, hd.size());
    }

    void *da, *db, *dd, *dmi = nullptr, *dmm = nullptr;
    CK(cudaMalloc(&da, ha.size() * 2));
    CK(cudaMalloc(&db, hb.size() * 2));
    CK(cudaMalloc(&dd, hd.size()));
    CK(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dd, hd.data(), hd.size(), cudaMemcpyHostToDevice));
    if (!m_indices.empty()) {
        CK(cudaMalloc(&dmi, m_indices.size() * 4));
        CK(cudaMemcpy(dmi, m_indices.data(), m_indices.size() * 4, cudaMemcpyHostToDevice));
    }
    const std::vector<int> &mm = c.kind == QG_BF16_PSUM ? psum_ends : masked_m;
    if (!mm.empty()) {
        CK(cudaMalloc(&dmm, mm.size() * 4));
        CK(cudaMemcpy(dmm, mm.data(), mm.size() * 4, cudaMemcpyHostToDevice));
    }

    const auto BF = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    CUtensorMap ta = a_mn ? map2d(BF, da, c.m, K, (uint64_t)lda * 2, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B)
                          : map2d(BF, da, K, rows, (uint64_t)lda * 2, 64, pl.a_box_rows,
                                  CU_TENSOR_MAP_SWIZZLE_128B);
    CUtensorMap tb = b_mn ? map2d(BF, db, c.n, b_rows, (uint64_t)ldb * 2, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B)
                          : map2d(BF, db, K, (uint64_t)G * c.n, (uint64_t)ldb * 2, 64, pl.b_box_rows,
                                  CU_TENSOR_MAP_SWIZZLE_128B);
    const auto DT = c.d_f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    CUtensorMap td = kg ? map3d(DT, dd, c.n, c.m, G, (uint64_t)ldd * dbytes, (uint64_t)c.m * ldd * dbytes,
                                pl.store_cols, pl.d_box_rows, swz(pl.store_cols * (int)dbytes))
                        : map2d(DT, dd, c.n, rows, (uint64_t)ldd * dbytes, pl.store_cols, pl.d_box_rows,
                                swz(pl.store_cols * (int)dbytes));
    qg_bf16_kgroups kgp = {};
    if (kg) {
        int kb0 = 0;
        for (int g = 0; g < G; ++g) {
            kgp.k_begin[g] = kb0;
            kgp.num_kb[g] = c.ks[g] / 64;
            kb0 += c.ks[g];
        }
        kgp.count = G;
        kgp.first_group = 0;
    }
    int64_t ldd64 = ldd;
    int shape_m = c.kind == QG_BF16_MASKED || kg ? c.m : rows;
    void *args[9] = {&ta, &tb, &td, &dd, &ldd64, &dmi, &dmm, &shape_m, &kgp};

    CU(cuFuncSetAttribute(kern.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, pl.smem_bytes));
    CUlaunchConfig cfg = {};
    cfg.gridDimX = pl.grid;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = pl.num_threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = pl.smem_bytes;
    cfg.hStream = 0;
    CUlaunchAttribute attr[1];
    attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[0].value.clusterDim.x = pl.cluster;
    attr[0].value.clusterDim.y = attr[0].value.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CU(cuLaunchKernelEx(&cfg, kern.fn, args, nullptr));
    sync_or_die(label);
    CK(cudaMemcpy(hd.data(), dd, hd.size(), cudaMemcpyDeviceToHost));

    /* ---- check --------------------------------------------------------------- */
    auto D = [&](size_t i) -> double {
        if (c.d_f32) {
            float f;
            memcpy(&f, &hd[i * 4], 4);
            return f;
        }
        uint16_t h;
        memcpy(&h, &hd[i * 2], 2);
        return bf2f(h);
    };
    auto is_poison = [&](size_t i) {
        for (size_t b = 0; b < dbytes; ++b)
            if (hd[i * dbytes + b] != 0xFF) return false;
        return true;
    };
    long long nan_count = 0, touched = 0;
    for (int r = 0; r < rows; ++r)
        for (int n = 0; n < c.n; ++n) {
            const size_t i = (size_t)r * ldd + n;
            if (row_group[r] < 0) touched += !is_poison(i);
            else nan_count += std::isnan(D(i)) || std::isinf(D(i));
        }
    /* rows to compare: all, or 64 sampled for large problems */
    std::vector<int> check_rows;
    const double work = (double)rows * c.n * (kg ? (double)sum_k / G : (double)K);
    for (int r = 0; r < rows; ++r)
        if (row_group[r] >= 0) check_rows.push_back(r);
    if (work > 4e9 && check_rows.size() > 64) {
        std::vector<int> s;
        for (int i = 0; i < 64; ++i) s.push_back(check_rows[(size_t)(urand() * check_rows.size())]);
        s.push_back(check_rows.back());
        check_rows = s;
    }
    std::vector<int> kbegin(G, 0);
    for (int g = 1; g < G && kg; ++g) kbegin[g] = kbegin[g - 1] + c.ks[g - 1];
    /* the fp64 reference of the checked rows, on every CPU core */
    const int nthreads = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<double> part_xy(nthreads, 0.0), part_xx(nthreads, 0.0);
    auto ref_rows = [&](int tid) {
        std::vector<double> arow(K);
        for (size_t ri = tid; ri < check_rows.size(); ri += nthreads) {
            const int r = check_rows[ri];
            const int g = row_group[r];
            const int mrow = kg ? r % c.m : r; /* row of A */
            for (int kk = 0; kk < K; ++kk) arow[kk] = A(mrow, kk);
            for (int n = 0; n < c.n; ++n) {
                double ref = 0;
                if (kg) {
                    for (int kk = kbegin[g]; kk < kbegin[g] + c.ks[g]; ++kk) ref += arow[kk] * B(0, n, kk);
                } else {
                    for (int kk = 0; kk < K; ++kk) ref += arow[kk] * B(g, n, kk);
                }
                const size_t i = (size_t)r * ldd + n;
                if (c.with_c) ref += hc[i];
                const double x = D(i);
                if (std::isnan(x)) continue; /* counted above */
                part_xy[tid] += x * ref;
                part_xx[tid] += x * x + ref * ref;
            }
        }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < nthreads; ++t) pool.emplace_back(ref_rows, t);
    for (auto &t : pool) t.join();
    double sxy = 0, sxx = 0;
    for (int t = 0; t < nthreads; ++t) sxy += part_xy[t], sxx += part_xx[t];
    const double diff = sxx > 0 ? 1.0 - 2.0 * sxy / sxx : 0.0;
    const bool ok = diff < 1e-5 && nan_count == 0 && touched == 0 && !spill;

    /* ---- timing ---------------------------------------------------------------- */
    double us = 0, tflops = 0;
    if (ok && c.time_it && !g_quick) {
        void *flush;
        const size_t fb = (size_t)g_l2_bytes * 2;
        CK(cudaMalloc(&flush, fb));
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        std::vector<float> t;
        for (int it = 0; it < 23; ++it) {
            l2_flush(flush, fb);
            CK(cudaEventRecord(e0));
            CU(cuLaunchKernelEx(&cfg, kern.fn, args, nullptr));
            CK(cudaEventRecord(e1));
            sync_or_die(label);
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (it >= 3) t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        us = t[t.size() / 2] * 1e3;
        tflops = 2.0 * (double)rows * c.n * K / (us * 1e-6) / 1e12;
        if (kg) tflops = 2.0 * c.m * c.n * (double)sum_k / (us * 1e-6) / 1e12;
        CK(cudaEventDestroy(e0));
        CK(cudaEventDestroy(e1));
        CK(cudaFree(flush));
    }
    printf("%s %s block %dx%d st %d mc %d: diff %.2e nan %lld touched %lld%s", ok ? "PASS" : "FAIL",
           label, pl.block_m, pl.block_n, pl.num_stages, pl.multicast, diff, nan_count, touched,
           spill ? " SPILL" : "");
    if (us > 0) printf("  %.1f us %.0f TFLOPS", us, tflops);
    printf("\n");
    fflush(stdout);
    if (!ok) ++g_failures;
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dd));
    if (dmi) CK(cudaFree(dmi));
    if (dmm) CK(cudaFree(dmm));
    CU(cuModuleUnload(kern.mod));
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) g_quick = true;
        else g_kdir = argv[i];
    }
    CK(cudaFree(0));
    CU(cuInit(0));
    int dev;
    CK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    g_num_sms = prop.multiProcessorCount;
    g_smem_limit = (int)prop.sharedMemPerBlockOptin;
    g_l2_bytes = prop.l2CacheSize;
    printf("%s: %d SMs, %d bytes shared memory, L2 %d MiB\n", prop.name, g_num_sms, g_smem_limit,
           g_l2_bytes >> 20);
    if (prop.major != 9) {
        printf("FAIL: needs sm_90\n");
        return 1;
    }
    std::vector<Case> cases;
    const qg_bf16_layout L[4] = {QG_BF16_NT, QG_BF16_NN, QG_BF16_TN, QG_BF16_TT};
    const char *LN[4] = {"nt", "nn", "tn", "tt"};
    static char names[64][64];
    int nn = 0;
    for (int l = 0; l < 4; ++l) {
        /* small unaligned shapes: bf16 D, FP32 D, FP32 D += C, bf16 D += C */
        for (int v = 0; v < 4; ++v) {
            Case c{};
            snprintf(names[nn], 64, "dense-%s-%s", LN[l], (const char *[]){"bf16", "f32", "f32c", "bf16c"}[v]);
            c.name = names[nn++];
            c.layout = L[l];
            c.kind = QG_BF16_DENSE;
            c.m = 129, c.n = qg__bf16_b_mn_major(L[l]) ? 264 : 257, c.k = 320, c.groups = 1;
            c.d_f32 = v == 1 || v == 2;
            c.with_c = v >= 2;
            cases.push_back(c);
        }
        Case c{};
        c.layout = L[l];
        c.kind = QG_BF16_DENSE;
        c.groups = 1;
        c.name = "decode";
        c.m = 1, c.n = 576, c.k = 7168, c.time_it = true;
        cases.push_back(c);
        c.name = "large";
        c.m = 4096, c.n = 7168, c.k = 2048;
        cases.push_back(c);
        c.name = "large-2112";
        c.m = 4096, c.n = 2112, c.k = 7168;
        cases.push_back(c);
        /* multicast forced both ways on a medium shape */
        for (int mc = 1; mc <= 2; ++mc) {
            Case f{};
            f.name = mc == 1 ? "forced-mcA-128x128" : "forced-mcB-128x128";
            f.layout = L[l];
            f.kind = QG_BF16_DENSE;
            f.m = 512, f.n = 1024, f.k = 640, f.groups = 1;
            f.force_bm = 128, f.force_bn = 128, f.force_mc = mc;
            cases.push_back(f);
        }
        Case f{};
        f.name = "forced-256x128";
        f.layout = L[l];
        f.kind = QG_BF16_DENSE;
        f.m = 300, f.n = 384, f.k = 448, f.groups = 1;
        f.force_bm = 256, f.force_bn = 128, f.force_mc = 0;
        cases.push_back(f);
    }
    for (int l = 0; l < 2; ++l) { /* m-grouped: A K-major (NT, NN) */
        Case c{};
        c.layout = L[l];
        c.groups = 5;
        c.name = "contiguous";
        c.kind = QG_BF16_CONTIGUOUS;
        c.m = 300, c.n = 576, c.k = 448;
        cases.push_back(c);
        c.name = "contiguous-large";
        c.m = 4096, c.n = 4096, c.k = 7168, c.groups = 4, c.time_it = true;
        cases.push_back(c);
        c.time_it = false;
        c.name = "psum";
        c.kind = QG_BF16_PSUM;
        c.m = 300, c.n = 576, c.k = 448, c.groups = 5;
        cases.push_back(c);
        c.name = "masked";
        c.kind = QG_BF16_MASKED;
        c.m = 200, c.n = 576, c.k = 448, c.groups = 6;
        cases.push_back(c);
        c.name = "masked-large";
        c.m = 256, c.n = 7168, c.k = 2048, c.groups = 8, c.time_it = true;
        cases.push_back(c);
    }
    for (int withc = 0; withc < 2; ++withc) { /* k-grouped TT FP32 D (weight gradient) */
        Case c{};
        c.name = withc ? "k-grouped+C" : "k-grouped";
        c.layout = QG_BF16_TT;
        c.kind = QG_BF16_K_GROUPED;
        c.m = 576, c.n = 448, c.groups = 4, c.d_f32 = 1, c.with_c = withc;
        c.ks = {256, 0, 640, 128};
        cases.push_back(c);
        c.name = withc ? "k-grouped-large+C" : "k-grouped-large";
        c.m = 4096, c.n = 7168, c.groups = 4, c.time_it = true;
        c.ks = {2048, 4096, 1024, 1024};
        cases.push_back(c);
    }
    for (const Case &c : cases) run_case(c);
    printf("%s: %d of %zu cases failed\n", g_failures ? "FAIL" : "PASS", g_failures, cases.size());
    return g_failures ? 1 : 0;
}
