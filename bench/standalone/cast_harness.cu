/*
 * cast_harness.cu -- standalone check and timing of the cast kernels
 * (kernels/qg_cast.cuh) through the real source writer and planner
 * (src/cast_plan.c), compiled with NVRTC as the JIT does and loaded with the
 * runtime API (cudaLibraryLoadData). Every case: fresh random inputs, outputs
 * poisoned, results compared BITWISE with a CPU implementation of the torch
 * helpers' formulas (python/qgemm/_torch_helpers.py, as torch computes them
 * on CUDA: see the contract at the top of kernels/qg_cast.cuh), GB/s timed with
 * CUDA events after an L2 flush against a measured device-to-device copy.
 * Prints PASS/FAIL per case, exits 1 on any failure.
 *
 * Build (from the repository root; H200 machine, CUDA >= 12.4):
 *   cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc -I$CUDA_HOME/include -c src/cast_plan.c -o /tmp/cast_plan.o
 *   cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc -I$CUDA_HOME/include -c src/status.c -o /tmp/cast_status.o
 *   nvcc -O2 -std=c++17 -arch=sm_90a -Iinclude -Isrc -Xcompiler -ffp-contract=off \
 *        bench/standalone/cast_harness.cu /tmp/cast_plan.o /tmp/cast_status.o -lnvrtc -o /tmp/cast_harness
 * Run:  /tmp/cast_harness [--kernels DIR] [--dump DIR] [--no-large]
 *   --kernels: where qg_cast.cuh / qg_ptx.cuh are (default: kernels/ of the cwd)
 *   --dump:    write inputs and outputs of the smaller cases for bench/standalone/cast_vs_torch.py
 */
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <deque>
#include <vector>

extern "C" {
#include "cast_plan.h"
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static std::string g_kdir = "kernels", g_dump;
static int g_sms = 132, g_failures = 0;
static double g_copy_gbps = 0;
static void *g_flush = nullptr;
static const size_t kFlushBytes = 512ull << 20;

/* ---- float helpers: the torch formulas on the CPU ------------------------- */
static uint32_t fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static float bitsf(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
/* The GPU's arithmetic returns the canonical NaN 0x7FFFFFFF; x86 may not. */
static float canon(float f) { return std::isnan(f) ? bitsf(0x7FFFFFFFu) : f; }
static float bf16f(uint16_t h) { return bitsf((uint32_t)h << 16); }
static uint16_t f2bf16(float f) { /* RNE, finite inputs only */
    uint32_t b = fbits(f);
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}
static const float kInv448 = (float)(1.0 / 448.0);

/* c10::detail::fp8e4m3fn_from_fp32_value. */
static uint8_t torch_e4m3(float f) {
    const uint32_t fp8_max = 1087u << 20, denorm_mask = 141u << 23;
    uint32_t b = fbits(f);
    const uint32_t sign = b & 0x80000000u;
    b ^= sign;
    uint8_t r;
    if (b >= fp8_max) r = 0x7F;
    else if (b < (121u << 23)) r = (uint8_t)(fbits(bitsf(b) + bitsf(denorm_mask)) - denorm_mask);
    else {
        const uint32_t odd = (b >> 20) & 1u;
        b += ((uint32_t)(7 - 127) << 23) + 0x7FFFFu;
        b += odd;
        r = (uint8_t)(b >> 20);
    }
    return (uint8_t)(r | (sign >> 24));
}
static float ceil_ue8m0(float s) {
    const uint32_t b = fbits(s) & 0x7FFFFFFFu;
    int e = (int)(b >> 23) + ((b & 0x7FFFFFu) != 0);
    e = std::min(std::max(e, 1), 254);
    return bitsf((uint32_t)e << 23);
}
/* amax (bits of |x| max: NaN wins) -> (sf, multiplier) as torch's helpers. */
static void ref_scale(uint32_t amax_bits, bool ue, float &sf, float &mult) {
    float amax = bitsf(amax_bits);
    if (amax < 1e-4f) amax = 1e-4f;
    if (ue) {
        sf = ceil_ue8m0(canon(amax * kInv448));
        mult = 1.0f / sf;
    } else {
        sf = canon(amax * kInv448);
        mult = canon(canon(1.0f / amax) * 448.0f);
    }
}
static uint32_t absbits(float f) { return fbits(f) & 0x7FFFFFFFu; }

/* ---- random inputs -------------------------------------------------------- */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd() { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return g_rng; }
static float urand() { return (float)((rnd() >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }
/* Row magnitudes spread over 2^-12 .. 2^12 so scales vary; some zero runs. */
static void fill(std::vector<float> &x, int64_t rows, int64_t cols, bool bf16, bool special) {
    x.resize((size_t)(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
        const float mag = ldexpf(1.0f, (int)(rnd() % 25) - 12);
        const bool zero_row = rnd() % 17 == 0;
        for (int64_t c = 0; c < cols; ++c) {
            float v = zero_row ? 0.0f : urand() * mag;
            if (rnd() % 97 == 0) v *= 1e-6f; /* values that round to e4m3 subnormals */
            if (bf16) v = bf16f(f2bf16(v));
            x[(size_t)(r * cols + c)] = v;
        }
    }
    if (special && rows * cols > 1000) {
        x[17] = INFINITY;
        x[300] = -INFINITY;
        x[(size_t)(rows * cols / 2)] = NAN;
        x[(size_t)(rows * cols / 3)] = -0.0f;
    }
}
static void upload(const std::vector<float> &x, bool bf16, void **dev) {
    const size_t n = x.size(), bytes = n * (bf16 ? 2 : 4);
    CK(cudaMalloc(dev, bytes ? bytes : 16));
    if (bf16) {
        std::vector<uint16_t> h(n);
        for (size_t i = 0; i < n; ++i) h[i] = (uint16_t)(fbits(x[i]) >> 16); /* x holds bf16 values */
        CK(cudaMemcpy(*dev, h.data(), bytes, cudaMemcpyHostToDevice));
    } else {
        CK(cudaMemcpy(*dev, x.data(), bytes, cudaMemcpyHostToDevice));
    }
}

/* ---- compile, load, launch ------------------------------------------------- */
static std::string read_file(const std::string &path) {
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) { fprintf(stderr, "cannot read %s\n", path.c_str()); exit(2); }
    std::string s;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    fclose(f);
    return s;
}
struct Kernel { std::string src; cudaLibrary_t lib; cudaKernel_t fn; int regs; };
static std::deque<Kernel> g_kernels; /* deque: references stay valid as it grows */

static Kernel &kernel_for(const std::string &src) {
    for (auto &k : g_kernels) if (k.src == src) return k;
    static std::string h_cast = read_file(g_kdir + "/qg_cast.cuh"), h_ptx = read_file(g_kdir + "/qg_ptx.cuh");
    const char *headers[] = {h_cast.c_str(), h_ptx.c_str()}, *names[] = {"qg_cast.cuh", "qg_ptx.cuh"};
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), "qg_cast_jit.cu", 2, headers, names) != NVRTC_SUCCESS) exit(2);
    const char *opts[] = {"-arch=sm_90a", "-std=c++17", "-default-device", "-Xptxas=-v"};
    const nvrtcResult rc = nvrtcCompileProgram(prog, 4, opts);
    size_t log_n = 0;
    nvrtcGetProgramLogSize(prog, &log_n);
    std::string log(log_n, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    if (rc != NVRTC_SUCCESS || log.find("spill stores") != std::string::npos &&
                                   log.find(" 0 bytes spill stores") == std::string::npos) {
        fprintf(stderr, "NVRTC failed or spilled:\n%s\n%s\n", src.c_str(), log.c_str());
        exit(2);
    }
    size_t n = 0;
    nvrtcGetCUBINSize(prog, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(prog, cubin.data());
    nvrtcDestroyProgram(&prog);
    Kernel k{src, nullptr, nullptr, 0};
    CK(cudaLibraryLoadData(&k.lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    CK(cudaLibraryGetKernel(&k.fn, k.lib, QG_CAST_KERNEL_NAME));
    const size_t at = log.find("Used ");
    k.regs = at == std::string::npos ? -1 : atoi(log.c_str() + at + 5);
    g_kernels.push_back(k);
    return g_kernels.back();
}

struct Launch { Kernel *k; qg_cast_plan plan; qg_cast_params params; };

static bool make_launch(qg_cast_problem p, void *in, void *out, void *sf, void *aux, Launch &L) {
    auto align_of = [](const void *ptr) { uintptr_t a = (uintptr_t)ptr; int r = 16; while (r > 1 && a % r) r /= 2; return r; };
    if (!p.in_align) p.in_align = align_of(in);
    if (!p.out_align) p.out_align = align_of(out);
    if (qg__cast_plan(&p, g_sms, &L.plan) != QG_SUCCESS) {
        printf("    plan refused: %s\n", qg_last_error());
        return false;
    }
    char src[4096];
    if (qg__cast_source(&p, &L.plan, src, sizeof src) != QG_SUCCESS) return false;
    L.k = &kernel_for(src);
    qg__cast_params(&p, (uint64_t)(uintptr_t)in, (uint64_t)(uintptr_t)out, (uint64_t)(uintptr_t)sf,
                    (uint64_t)(uintptr_t)aux, &L.params);
    return true;
}
static void run(Launch &L) {
    if (L.plan.grid == 0) return;
    void *args[] = {&L.params};
    CK(cudaLaunchKernel((const void *)L.k->fn, dim3(L.plan.grid), dim3(L.plan.threads), args, 0, 0));
}
/* Median of `iters` launches, each after writing the L2-flush buffer. */
static double time_us(Launch &L, int iters = 15) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    run(L); /* warm-up */
    std::vector<float> t;
    for (int i = 0; i < iters; ++i) {
        CK(cudaMemsetAsync(g_flush, i, kFlushBytes));
        CK(cudaEventRecord(a));
        run(L);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0f);
    }
    CK(cudaGetLastError());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
static void report_time(Launch &L, double bytes) {
    const double us = time_us(L);
    const double gbps = bytes / us * 1e-3;
    printf("    %.2f us, %.0f GB/s = %.0f%% of copy %.0f GB/s  (grid %u x %d, vec %d, unroll %d, %d regs)\n",
           us, gbps, 100.0 * gbps / g_copy_gbps, g_copy_gbps, L.plan.grid, L.plan.threads, L.plan.vec,
           L.plan.unroll, L.k->regs);
}

/* ---- comparison --------------------------------------------------------------- */
static int64_t g_mismatch;
static void expect_u8(const char *what, int64_t i, uint8_t got, uint8_t want) {
    if (got != want && g_mismatch++ < 5)
        printf("    %s[%lld]: got 0x%02x want 0x%02x\n", what, (long long)i, got, want);
}
static void expect_u32(const char *what, int64_t i, uint32_t got, uint32_t want) {
    if (got != want && g_mismatch++ < 5)
        printf("    %s[%lld]: got 0x%08x (%g) want 0x%08x (%g)\n", what, (long long)i, got, bitsf(got),
               want, bitsf(want));
}
static void verdict(const char *name) {
    printf("%s %s%s\n", g_mismatch ? "FAIL" : "PASS", name, g_mismatch ? "" : "");
    if (g_mismatch) { ++g_failures; printf("    %lld mismatches\n", (long long)g_mismatch); }
}
template <class T> static std::vector<T> download(const void *dev, size_t n) {
    std::vector<T> h(n);
    if (n) CK(cudaMemcpy(h.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}
static void dump(const std::string &name, const char *meta, const void *data, size_t bytes) {
    if (g_dump.empty()) return;
    FILE *f = fopen((g_dump + "/" + name).c_str(), "wb");
    if (f) { fwrite(data, 1, bytes, f); fclose(f); }
    if (meta) {
        FILE *idx = fopen((g_dump + "/index.txt").c_str(), "a");
        if (idx) { fprintf(idx, "%s\n", meta); fclose(idx); }
    }
}
static void dump_input(const std::string &name, const std::vector<float> &x, bool bf16) {
    if (g_dump.empty()) return;
    if (bf16) {
        std::vector<uint16_t> h(x.size());
        for (size_t i = 0; i < x.size(); ++i) h[i] = (uint16_t)(fbits(x[i]) >> 16);
        dump(name + ".in.bin", nullptr, h.data(), h.size() * 2);
    } else {
        dump(name + ".in.bin", nullptr, x.data(), x.size() * 4);
    }
}

/* ---- per-token (op 1) and silu_mul (op 4) ------------------------------------ */
/* Reference of one row's groups: v[k] -> q[k], sf[kb]. */
static void ref_row(const float *v, int k, bool ue, uint8_t *q, float *sf) {
    for (int kb = 0; kb * 128 < k; ++kb) {
        const int c0 = kb * 128, c1 = std::min(k, c0 + 128);
        uint32_t amax = 0;
        for (int c = c0; c < c1; ++c) amax = std::max(amax, absbits(v[c]));
        float s, mult;
        ref_scale(amax, ue, s, mult);
        sf[kb] = s;
        for (int c = c0; c < c1; ++c) q[c] = torch_e4m3(canon(v[c] * mult));
    }
}

/* silu(g) as torch's kernel writes it (F.silu on float32), on the GPU. */
__global__ void ref_silu(const float *g, float *out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float x = g[i];
        out[i] = x / (1.0f + ::expf(-x));
    }
}

/* op 1 (silu = false) or op 4: G groups of M rows, K output columns.
 * rows_mask 1: masked_m per group; 2: m_indices with padding rows. */
static void case_token(const char *name, bool silu, bool f32, bool ue, bool mn, int G, int M, int K,
                       int rows_mask, bool special, bool timed, bool dump_it) {
    g_mismatch = 0;
    const int64_t rows = (int64_t)G * M, in_cols = silu ? 2 * (int64_t)K : K;
    const int KB = (K + 127) / 128, sf_ld = (M + 3) / 4 * 4;
    std::vector<float> x;
    fill(x, rows, in_cols, !f32, special);
    void *d_in, *d_q, *d_sf, *d_aux = nullptr;
    upload(x, !f32, &d_in);
    const size_t sf_n = mn ? (size_t)G * KB * sf_ld : (size_t)rows * KB;
    CK(cudaMalloc(&d_q, (size_t)rows * K + 16));
    CK(cudaMalloc(&d_sf, sf_n * 4 + 16));
    CK(cudaMemset(d_q, 0xFF, (size_t)rows * K));
    CK(cudaMemset(d_sf, 0xFF, sf_n * 4));
    std::vector<int32_t> aux;
    if (rows_mask == 1) {
        for (int g = 0; g < G; ++g) {
            const int pick[] = {0, 1, M - 1, M, M + 5, -3};
            aux.push_back(pick[g % 6]);
        }
    } else if (rows_mask == 2) {
        for (int64_t r = 0; r < rows; ++r) aux.push_back(r % 128 < 100 ? (int)(r / 128 % 7) : -1);
    }
    if (!aux.empty()) {
        CK(cudaMalloc(&d_aux, aux.size() * 4));
        CK(cudaMemcpy(d_aux, aux.data(), aux.size() * 4, cudaMemcpyHostToDevice));
    }
    qg_cast_problem p = {};
    p.op = silu ? QG_CAST_SILU_MUL : QG_CAST_PER_TOKEN;
    p.in_f32 = f32; p.ue8m0 = ue; p.sf_mn_major = mn; p.rows_mask = (qg_cast_rows)rows_mask;
    p.rows = rows; p.m = M; p.groups = G; p.k = K; p.ld_in = in_cols; p.ld_out = K; p.sf_ld = sf_ld;
    Launch L;
    if (!make_launch(p, d_in, d_q, d_sf, d_aux, L)) { g_mismatch = 1; verdict(name); return; }
    run(L);
    CK(cudaDeviceSynchronize());
    auto q = download<uint8_t>(d_q, (size_t)rows * K);
    auto sf = download<uint32_t>(d_sf, sf_n);
    /* silu: the GPU reference of silu(gate), then silu * up on the CPU. */
    std::vector<float> y;
    if (silu) {
        std::vector<float> gate((size_t)(rows * K));
        for (int64_t r = 0; r < rows; ++r)
            for (int c = 0; c < K; ++c) gate[(size_t)(r * K + c)] = x[(size_t)(r * in_cols + c)];
        float *d_g, *d_s;
        CK(cudaMalloc(&d_g, gate.size() * 4 + 4));
        CK(cudaMalloc(&d_s, gate.size() * 4 + 4));
        CK(cudaMemcpy(d_g, gate.data(), gate.size() * 4, cudaMemcpyHostToDevice));
        ref_silu<<<1024, 256>>>(d_g, d_s, (int64_t)gate.size());
        CK(cudaDeviceSynchronize());
        auto s = download<float>(d_s, gate.size());
        y.resize(gate.size());
        for (int64_t r = 0; r < rows; ++r)
            for (int c = 0; c < K; ++c)
                y[(size_t)(r * K + c)] = canon(s[(size_t)(r * K + c)] * x[(size_t)(r * in_cols + K + c)]);
        cudaFree(d_g);
        cudaFree(d_s);
    }
    std::vector<uint8_t> qr(K);
    std::vector<float> sr(KB);
    for (int64_t r = 0; r < rows; ++r) {
        const int g = (int)(r / M), m = (int)(r % M);
        bool live = true;
        if (rows_mask == 1) live = m < aux[g];
        if (rows_mask == 2) live = aux[r] >= 0;
        const float *v = silu ? &y[(size_t)(r * K)] : &x[(size_t)(r * in_cols)];
        if (live) ref_row(v, K, ue, qr.data(), sr.data());
        for (int c = 0; c < K; ++c) expect_u8("q", r * K + c, q[(size_t)(r * K + c)], live ? qr[c] : 0xFF);
        for (int kb = 0; kb < KB; ++kb) {
            const size_t at = mn ? ((size_t)g * KB + kb) * sf_ld + m : (size_t)r * KB + kb;
            expect_u32("sf", (int64_t)at, sf[at], live ? fbits(sr[kb]) : 0xFFFFFFFFu);
        }
    }
    verdict(name);
    if (timed) {
        int64_t live_rows = rows;
        if (rows_mask) { live_rows = 0; for (int64_t r = 0; r < rows; ++r) live_rows += rows_mask == 1 ? (r % M) < aux[r / M] : aux[r] >= 0; }
        report_time(L, (double)live_rows * (in_cols * (f32 ? 4 : 2) + K + KB * 4.0));
    }
    if (dump_it && !g_dump.empty()) {
        char meta[512];
        snprintf(meta, sizeof meta, "%s op=%s dtype=%s ue8m0=%d sf_mn=%d groups=%d m=%d k=%d rows_mask=%d sf_ld=%d",
                 name, silu ? "silu_mul" : "per_token", f32 ? "f32" : "bf16", ue, mn, G, M, K, rows_mask, sf_ld);
        dump_input(name, x, !f32);
        dump(std::string(name) + ".q.bin", nullptr, q.data(), q.size());
        dump(std::string(name) + ".sf.bin", nullptr, sf.data(), sf.size() * 4);
        if (!aux.empty()) dump(std::string(name) + ".aux.bin", nullptr, aux.data(), aux.size() * 4);
        dump("", meta, nullptr, 0);
    }
    cudaFree(d_in); cudaFree(d_q); cudaFree(d_sf); if (d_aux) cudaFree(d_aux);
}

/* ---- per-block (op 2) -------------------------------------------------------- */
static void case_block(const char *name, bool f32, bool ue, int G, int N, int K, bool special, bool timed,
                       bool dump_it) {
    g_mismatch = 0;
    const int NB = (N + 127) / 128, KB = (K + 127) / 128;
    const int64_t rows = (int64_t)G * N;
    std::vector<float> x;
    fill(x, rows, K, !f32, special);
    void *d_in, *d_q, *d_sf;
    upload(x, !f32, &d_in);
    CK(cudaMalloc(&d_q, (size_t)rows * K + 16));
    CK(cudaMalloc(&d_sf, (size_t)G * NB * KB * 4));
    CK(cudaMemset(d_q, 0xFF, (size_t)rows * K));
    CK(cudaMemset(d_sf, 0xFF, (size_t)G * NB * KB * 4));
    qg_cast_problem p = {};
    p.op = QG_CAST_PER_BLOCK; p.in_f32 = f32; p.ue8m0 = ue; p.groups = G; p.n = N; p.k = K;
    p.ld_in = K; p.ld_out = K;
    Launch L;
    if (!make_launch(p, d_in, d_q, d_sf, nullptr, L)) { g_mismatch = 1; verdict(name); return; }
    run(L);
    CK(cudaDeviceSynchronize());
    auto q = download<uint8_t>(d_q, (size_t)rows * K);
    auto sf = download<uint32_t>(d_sf, (size_t)G * NB * KB);
    for (int g = 0; g < G; ++g)
        for (int nb = 0; nb < NB; ++nb)
            for (int kb = 0; kb < KB; ++kb) {
                const int n1 = std::min(N, nb * 128 + 128), k1 = std::min(K, kb * 128 + 128);
                uint32_t amax = 0;
                for (int n = nb * 128; n < n1; ++n)
                    for (int k = kb * 128; k < k1; ++k) amax = std::max(amax, absbits(x[((size_t)g * N + n) * K + k]));
                float s, mult;
                ref_scale(amax, ue, s, mult);
                const size_t si = ((size_t)g * NB + nb) * KB + kb;
                expect_u32("sf", (int64_t)si, sf[si], fbits(s));
                for (int n = nb * 128; n < n1; ++n)
                    for (int k = kb * 128; k < k1; ++k) {
                        const size_t i = ((size_t)g * N + n) * K + k;
                        expect_u8("q", (int64_t)i, q[i], torch_e4m3(canon(x[i] * mult)));
                    }
            }
    verdict(name);
    if (timed) report_time(L, (double)rows * K * ((f32 ? 4 : 2) + 1) + G * NB * KB * 4.0);
    if (dump_it && !g_dump.empty()) {
        char meta[512];
        snprintf(meta, sizeof meta, "%s op=per_block dtype=%s ue8m0=%d groups=%d n=%d k=%d", name,
                 f32 ? "f32" : "bf16", ue, G, N, K);
        dump_input(name, x, !f32);
        dump(std::string(name) + ".q.bin", nullptr, q.data(), q.size());
        dump(std::string(name) + ".sf.bin", nullptr, sf.data(), sf.size() * 4);
        dump("", meta, nullptr, 0);
    }
    cudaFree(d_in); cudaFree(d_q); cudaFree(d_sf);
}

/* ---- per-channel (op 3) ------------------------------------------------------ */
static void case_channel(const char *name, bool f32, bool ue, int M, int N, bool timed, bool dump_it) {
    g_mismatch = 0;
    std::vector<float> x;
    fill(x, M, N, !f32, false);
    void *d_in, *d_q, *d_sf;
    upload(x, !f32, &d_in);
    const int MB = M / 128;
    CK(cudaMalloc(&d_q, (size_t)M * N + 16));
    CK(cudaMalloc(&d_sf, (size_t)MB * N * 4 + 16));
    CK(cudaMemset(d_q, 0xFF, (size_t)M * N));
    CK(cudaMemset(d_sf, 0xFF, (size_t)MB * N * 4));
    qg_cast_problem p = {};
    p.op = QG_CAST_PER_CHANNEL; p.in_f32 = f32; p.ue8m0 = ue; p.rows = M; p.k = N; p.ld_in = N; p.ld_out = N;
    Launch L;
    if (!make_launch(p, d_in, d_q, d_sf, nullptr, L)) { g_mismatch = 1; verdict(name); return; }
    run(L);
    CK(cudaDeviceSynchronize());
    auto q = download<uint8_t>(d_q, (size_t)M * N);
    auto sf = download<uint32_t>(d_sf, (size_t)MB * N);
    for (int mb = 0; mb < MB; ++mb)
        for (int c = 0; c < N; ++c) {
            uint32_t amax = 0;
            for (int r = mb * 128; r < mb * 128 + 128; ++r) amax = std::max(amax, absbits(x[(size_t)r * N + c]));
            float a = bitsf(amax);
            if (a < 1e-4f) a = 1e-4f;
            float s = canon(a * kInv448);
            if (ue) s = ceil_ue8m0(s);
            expect_u32("sf", (int64_t)mb * N + c, sf[(size_t)mb * N + c], fbits(s));
            for (int r = mb * 128; r < mb * 128 + 128; ++r) {
                const size_t i = (size_t)r * N + c;
                expect_u8("q", (int64_t)i, q[i], torch_e4m3(canon(x[i] / s)));
            }
        }
    verdict(name);
    if (timed) report_time(L, (double)M * N * ((f32 ? 4 : 2) + 1) + MB * N * 4.0);
    if (dump_it && !g_dump.empty()) {
        char meta[512];
        snprintf(meta, sizeof meta, "%s op=per_channel dtype=%s ue8m0=%d m=%d n=%d", name, f32 ? "f32" : "bf16", ue, M, N);
        dump_input(name, x, !f32);
        dump(std::string(name) + ".q.bin", nullptr, q.data(), q.size());
        dump(std::string(name) + ".sf.bin", nullptr, sf.data(), sf.size() * 4);
        dump("", meta, nullptr, 0);
    }
    cudaFree(d_in); cudaFree(d_q); cudaFree(d_sf);
}

/* ---- scale layouts (ops 5, 6) ------------------------------------------------ */
/* transposed_input: the input is the transpose of a row-major [G][K][MN] tensor. */
static void case_layout(const char *name, bool pack, int G, int MN, int SFK, bool transposed_input,
                        bool dump_it) {
    g_mismatch = 0;
    const int ld = (MN + 3) / 4 * 4, out_rows = pack ? (SFK + 3) / 4 : SFK;
    std::vector<float> sfv((size_t)G * MN * SFK);
    for (auto &v : sfv) {
        const float s = ldexpf(1.0f, (int)(rnd() % 60) - 30);
        v = pack ? s : s * (1.0f + urand() * 0.4f);
    }
    int64_t st[3];
    if (transposed_input) { st[0] = (int64_t)MN * SFK; st[1] = 1; st[2] = MN; }
    else { st[0] = (int64_t)MN * SFK; st[1] = SFK; st[2] = 1; }
    void *d_in, *d_out;
    CK(cudaMalloc(&d_in, sfv.size() * 4 + 16));
    CK(cudaMemcpy(d_in, sfv.data(), sfv.size() * 4, cudaMemcpyHostToDevice));
    const size_t out_n = (size_t)G * out_rows * ld;
    CK(cudaMalloc(&d_out, out_n * 4 + 16));
    CK(cudaMemset(d_out, 0xFF, out_n * 4));
    qg_cast_problem p = {};
    p.op = pack ? QG_CAST_SF_PACK_UE8M0 : QG_CAST_SF_MN_MAJOR;
    p.m = MN; p.groups = G; p.k = SFK; p.sf_ld = ld;
    p.in_stride[0] = st[0]; p.in_stride[1] = st[1]; p.in_stride[2] = st[2];
    Launch L;
    if (!make_launch(p, d_in, d_out, nullptr, nullptr, L)) { g_mismatch = 1; verdict(name); return; }
    run(L);
    CK(cudaDeviceSynchronize());
    auto out = download<uint32_t>(d_out, out_n);
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < out_rows; ++r)
            for (int m = 0; m < ld; ++m) {
                uint32_t want = 0;
                if (m < MN) {
                    auto at = [&](int k) { return sfv[(size_t)(g * st[0] + m * st[1] + k * st[2])]; };
                    if (!pack) want = fbits(at(r));
                    else for (int j = 0; j < 4; ++j) if (4 * r + j < SFK) want |= ((fbits(at(4 * r + j)) >> 23) & 0xFFu) << (8 * j);
                }
                const size_t i = ((size_t)g * out_rows + r) * ld + m;
                expect_u32("out", (int64_t)i, out[i], want);
            }
    verdict(name);
    report_time(L, (double)G * MN * SFK * 4.0 + out_n * 4.0);
    if (dump_it && !g_dump.empty()) {
        char meta[512];
        snprintf(meta, sizeof meta, "%s op=%s groups=%d mn=%d sf_k=%d transposed=%d ld=%d", name,
                 pack ? "sf_pack_ue8m0" : "sf_mn_major", G, MN, SFK, (int)transposed_input, ld);
        dump(std::string(name) + ".in.bin", nullptr, sfv.data(), sfv.size() * 4);
        dump(std::string(name) + ".out.bin", nullptr, out.data(), out.size() * 4);
        dump("", meta, nullptr, 0);
    }
    cudaFree(d_in); cudaFree(d_out);
}

/* transform_sf_into_required_layout for an SFB [G][NB][KB] given as the transpose
 * of a row-major [G][KB][NB] tensor (strides (NB*KB, 1, NB)): op 5 with mn = KB,
 * k = NB, the input strides of (kb, nb), sf_ld = KB -> row-major [G][NB][KB]. */
static void case_sfb_contiguous(const char *name, int G, int NB, int KB, bool dump_it) {
    g_mismatch = 0;
    std::vector<float> st((size_t)G * KB * NB); /* storage [G][KB][NB] */
    for (auto &v : st) v = ldexpf(1.0f, (int)(rnd() % 60) - 30) * (1.0f + urand() * 0.4f);
    void *d_in, *d_out;
    CK(cudaMalloc(&d_in, st.size() * 4 + 16));
    CK(cudaMemcpy(d_in, st.data(), st.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_out, st.size() * 4 + 16));
    CK(cudaMemset(d_out, 0xFF, st.size() * 4));
    qg_cast_problem p = {};
    p.op = QG_CAST_SF_MN_MAJOR; p.m = KB; p.groups = G; p.k = NB; p.sf_ld = KB;
    p.in_stride[0] = (int64_t)KB * NB; p.in_stride[1] = NB; p.in_stride[2] = 1;
    Launch L;
    if (!make_launch(p, d_in, d_out, nullptr, nullptr, L)) { g_mismatch = 1; verdict(name); return; }
    run(L);
    CK(cudaDeviceSynchronize());
    auto out = download<uint32_t>(d_out, st.size());
    for (int g = 0; g < G; ++g)
        for (int nb = 0; nb < NB; ++nb)
            for (int kb = 0; kb < KB; ++kb) {
                const size_t i = ((size_t)g * NB + nb) * KB + kb;
                expect_u32("out", (int64_t)i, out[i], fbits(st[((size_t)g * KB + kb) * NB + nb]));
            }
    verdict(name);
    if (dump_it && !g_dump.empty()) {
        char meta[256];
        snprintf(meta, sizeof meta, "%s op=sf_contiguous groups=%d nb=%d kb=%d", name, G, NB, KB);
        dump(std::string(name) + ".in.bin", nullptr, st.data(), st.size() * 4);
        dump(std::string(name) + ".out.bin", nullptr, out.data(), out.size() * 4);
        dump("", meta, nullptr, 0);
    }
    cudaFree(d_in); cudaFree(d_out);
}

/* ---- k-grouped packed UE8M0 (op 7) ------------------------------------------- */
static void case_kgrouped(const char *name, const std::vector<int> &ks, int MN, int gran, bool psum) {
    g_mismatch = 0;
    const int G = (int)ks.size(), kal = 128;
    /* DeepGEMM's layout values: group K sizes, or (psum) end offsets, each group
     * starting at the previous end aligned to k_alignment. */
    std::vector<int32_t> layout(G);
    std::vector<int> group_k(G);
    int end = 0, sf_k = 0, packed = 0;
    for (int g = 0; g < G; ++g) {
        const int start = psum ? (end + kal - 1) / kal * kal : 0;
        end = psum ? start + ks[g] : 0;
        layout[g] = psum ? end : ks[g];
        group_k[g] = ks[g];
        const int rows = (ks[g] + gran - 1) / gran;
        sf_k += rows;
        packed += (rows + 3) / 4;
    }
    std::vector<float> sfv((size_t)sf_k * MN);
    for (auto &v : sfv) v = ldexpf(1.0f, (int)(rnd() % 60) - 30);
    void *d_in, *d_out, *d_layout;
    CK(cudaMalloc(&d_in, sfv.size() * 4 + 16));
    CK(cudaMemcpy(d_in, sfv.data(), sfv.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_out, (size_t)packed * MN * 4 + 16));
    CK(cudaMemset(d_out, 0xFF, (size_t)packed * MN * 4));
    CK(cudaMalloc(&d_layout, G * 4));
    CK(cudaMemcpy(d_layout, layout.data(), G * 4, cudaMemcpyHostToDevice));
    qg_cast_problem p = {};
    p.op = QG_CAST_SF_PACK_UE8M0_KGROUPED; p.m = MN; p.groups = G; p.k = sf_k; p.packed_sf_k = packed;
    p.gran_k = gran; p.k_alignment = kal; p.psum = psum;
    Launch L;
    if (!make_launch(p, d_in, d_out, nullptr, d_layout, L)) { g_mismatch = 1; verdict(name); return; }
    run(L);
    CK(cudaDeviceSynchronize());
    auto out = download<uint32_t>(d_out, (size_t)packed * MN);
    int in_row = 0, out_row = 0;
    for (int g = 0; g < G; ++g) {
        const int rows = (group_k[g] + gran - 1) / gran;
        for (int pr = 0; pr < (rows + 3) / 4; ++pr, ++out_row)
            for (int m = 0; m < MN; ++m) {
                uint32_t want = 0;
                for (int j = 0; j < 4; ++j)
                    if (4 * pr + j < rows) want |= ((fbits(sfv[(size_t)(in_row + 4 * pr + j) * MN + m]) >> 23) & 0xFFu) << (8 * j);
                expect_u32("out", (int64_t)out_row * MN + m, out[(size_t)out_row * MN + m], want);
            }
        in_row += rows;
    }
    verdict(name);
    cudaFree(d_in); cudaFree(d_out); cudaFree(d_layout);
}

/* ---- main ------------------------------------------------------------------ */
int main(int argc, char **argv) {
    bool large = true;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--kernels") && i + 1 < argc) g_kdir = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) g_dump = argv[++i];
        else if (!strcmp(argv[i], "--no-large")) large = false;
        else { fprintf(stderr, "usage: %s [--kernels DIR] [--dump DIR] [--no-large]\n", argv[0]); return 2; }
    }
    if (kInv448 != 1.0f / 448.0f) { fprintf(stderr, "float(1/448) differs from 1.0f/448.0f\n"); return 2; }
    if (!g_dump.empty()) { FILE *f = fopen((g_dump + "/index.txt").c_str(), "w"); if (f) fclose(f); }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    CK(cudaMalloc(&g_flush, kFlushBytes));
    { /* device-to-device copy bandwidth: read + write bytes / time */
        void *a, *b;
        const size_t n = 1ull << 30;
        CK(cudaMalloc(&a, n));
        CK(cudaMalloc(&b, n));
        CK(cudaMemset(a, 1, n));
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        std::vector<float> t;
        for (int i = 0; i < 7; ++i) {
            cudaEventRecord(e0);
            CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice));
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float ms;
            cudaEventElapsedTime(&ms, e0, e1);
            t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        g_copy_gbps = 2.0 * n / (t[3] * 1e-3) * 1e-9;
        cudaFree(a);
        cudaFree(b);
    }
    printf("device %s, %d SMs, device-to-device copy %.0f GB/s (read + write)\n", prop.name, g_sms, g_copy_gbps);

    /* per-token: every dtype x UE8M0 x scale layout on an odd shape, then the big ones timed. */
    for (int f32 = 0; f32 < 2; ++f32)
        for (int ue = 0; ue < 2; ++ue)
            for (int mn = 0; mn < 2; ++mn) {
                char name[128];
                snprintf(name, sizeof name, "per_token_%s_%s_%s_129x7169", f32 ? "f32" : "bf16", ue ? "ue8m0" : "f32sf", mn ? "mnmajor" : "rowmajor");
                case_token(name, false, f32, ue, mn, 1, 129, 7169, 0, false, false, true);
            }
    case_token("per_token_bf16_special_values_77x2048", false, false, false, false, 1, 77, 2048, 0, true, false, true);
    case_token("per_token_bf16_ue8m0_special_values_77x2048", false, false, true, false, 1, 77, 2048, 0, true, false, true);
    case_token("per_token_bf16_batched_mnmajor_3x77x2050", false, false, false, true, 3, 77, 2050, 0, false, false, true);
    case_token("per_token_f32_k7172_33x7172", false, true, false, false, 1, 33, 7172, 0, false, false, false);
    case_token("per_token_bf16_mnmajor_64x7168 (decode)", false, false, false, true, 1, 64, 7168, 0, false, true, false);
    case_token("per_token_bf16_mnmajor_4096x7168", false, false, false, true, 1, 4096, 7168, 0, false, true, true);
    if (large) {
        case_token("per_token_bf16_mnmajor_16384x7168", false, false, false, true, 1, 16384, 7168, 0, false, true, false);
        case_token("per_token_bf16_ue8m0_rowmajor_16384x7168", false, false, true, false, 1, 16384, 7168, 0, false, true, false);
        case_token("per_token_f32_mnmajor_8192x7168", false, true, false, true, 1, 8192, 7168, 0, false, true, false);
    }
    /* silu_mul + quant: contiguous (all rows, m_indices padding) and masked. */
    case_token("silu_mul_bf16_contiguous_129x7169", true, false, false, true, 1, 129, 7169, 0, false, false, true);
    case_token("silu_mul_bf16_ue8m0_contiguous_mindices_512x2048", true, false, true, true, 1, 512, 2048, 2, false, false, true);
    case_token("silu_mul_f32_rowmajor_100x384", true, true, false, false, 1, 100, 384, 0, false, false, false);
    case_token("silu_mul_bf16_masked_6x200x2048", true, false, false, true, 6, 200, 2048, 1, false, false, true);
    case_token("silu_mul_bf16_masked_ue8m0_6x128x7168 (decode)", true, false, true, true, 6, 128, 7168, 1, false, true, false);
    if (large) case_token("silu_mul_bf16_contiguous_8192x2048", true, false, false, true, 1, 8192, 2048, 0, false, true, false);
    /* per-block */
    for (int f32 = 0; f32 < 2; ++f32)
        for (int ue = 0; ue < 2; ++ue) {
            char name[128];
            snprintf(name, sizeof name, "per_block_%s_%s_129x7169", f32 ? "f32" : "bf16", ue ? "ue8m0" : "f32sf");
            case_block(name, f32, ue, 1, 129, 7169, false, false, true);
        }
    case_block("per_block_bf16_special_values_2x200x300", false, false, 2, 200, 300, true, false, true);
    case_block("per_block_bf16_7168x7168", false, false, 1, 7168, 7168, false, true, false);
    if (large) case_block("per_block_bf16_4x4096x7168", false, false, 4, 4096, 7168, false, true, false);
    /* per-channel */
    for (int f32 = 0; f32 < 2; ++f32)
        for (int ue = 0; ue < 2; ++ue) {
            char name[128];
            snprintf(name, sizeof name, "per_channel_%s_%s_256x7169", f32 ? "f32" : "bf16", ue ? "ue8m0" : "f32sf");
            case_channel(name, f32, ue, 256, 7169, false, true);
        }
    case_channel("per_channel_bf16_4096x7168", false, false, 4096, 7168, true, false);
    /* scale layouts */
    case_layout("sf_mn_major_rowmajor_in_2x4097x57", false, 2, 4097, 57, false, true);
    case_layout("sf_mn_major_transposed_in_1x4096x56", false, 1, 4096, 56, true, true);
    case_layout("sf_mn_major_16384x56", false, 1, 16384, 56, false, false);
    case_layout("sf_pack_ue8m0_2x4097x57", true, 2, 4097, 57, false, true);
    case_layout("sf_pack_ue8m0_1x129x1", true, 1, 129, 1, false, true);
    case_sfb_contiguous("sfb_contiguous_from_transposed_2x57x55", 2, 57, 55, true);
    case_kgrouped("sf_pack_ue8m0_kgrouped_4g_gran128", {256, 0, 640, 129}, 4096, 128, false);
    case_kgrouped("sf_pack_ue8m0_kgrouped_psum_3g_gran128", {300, 128, 1000}, 1028, 128, true);
    case_kgrouped("sf_pack_ue8m0_kgrouped_1g_gran32", {4096}, 512, 32, false);

    printf("%s: %d failed\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
