/*
 * cast_emulate.cpp -- runs kernels/qg_cast.cuh on the CPU (no GPU here): each
 * CUDA thread a ucontext fiber, blocks one after another, __syncthreads and
 * warp shuffles as fiber barriers, the PTX wrappers replaced by host versions
 * (cvt.rn.satfinite.e4m3x2 as round-to-nearest-even saturating at 448; expf
 * is the host's, so silu's bits are the host's). It checks indexing, masking,
 * vector widths, reductions and layouts against the torch formulas on small
 * shapes; bitwise agreement with torch on the GPU is cast_harness.cu's job.
 *
 * Driven by bench/standalone/cast_emulate.sh: one build per variant, the variant's JIT
 * source (from qg__cast_source) force-included with -include.
 */
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "cast_plan.h"
}

/* ---- the CUDA surface qg_cast.cuh uses, on the host ------------------------- */
#define QG_PTX_CUH 1 /* skip kernels/qg_ptx.cuh: host versions below */
#define QG_DEVICE static inline
#define __global__
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static
struct uint4 { uint32_t x, y, z, w; };
struct uint2 { uint32_t x, y; };
struct dim3e { unsigned x, y, z; };
static dim3e threadIdx, blockIdx, gridDim, blockDim;
static float __uint_as_float(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t __float_as_uint(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static float __fmul_rn(float a, float b) { return a * b; }
static float __fdiv_rn(float a, float b) { return a / b; }
static uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return {a, b, c, d}; }
static uint2 make_uint2(uint32_t a, uint32_t b) { return {a, b}; }
template <class T> static T __ldg(const T *p) { return *p; }
static uint32_t max(uint32_t a, uint32_t b) { return a > b ? a : b; }
static int max(int a, int b) { return a > b ? a : b; }
static int min(int a, int b) { return a < b ? a : b; }
static int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

static void qg_grid_dependency_wait() {}
static uint4 qg_ld_stream_v4(const void *p) { uint4 v; memcpy(&v, p, 16); return v; }
static uint2 qg_ld_stream_v2(const void *p) { uint2 v; memcpy(&v, p, 8); return v; }
static uint32_t qg_ld_stream_b32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t qg_ld_stream_b16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }

static double g_e4m3[127];
static uint32_t e4m3_sat(float f) { /* cvt.rn.satfinite: RNE, +-448 beyond, NaN -> 0x7F */
    if (std::isnan(f)) return 0x7F;
    const uint32_t s = (__float_as_uint(f) >> 24) & 0x80u;
    const double a = std::fabs((double)f);
    if (a >= 448.0) return 0x7E | s;
    int lo = 0, hi = 126;
    while (hi - lo > 1) { const int m = (lo + hi) / 2; if (g_e4m3[m] <= a) lo = m; else hi = m; }
    const double dl = a - g_e4m3[lo], dh = g_e4m3[hi] - a;
    const int c = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
    return (uint32_t)c | s;
}
static uint32_t qg_cvt_e4m3x2(float lo, float hi) { return e4m3_sat(lo) | e4m3_sat(hi) << 8; }

/* Fibers: every thread of the current block. */
static int g_nthreads, g_current;
static std::vector<ucontext_t> g_ctx;
static std::vector<int> g_done;
static std::vector<std::vector<char>> g_stacks;
static ucontext_t g_main;
static void yield_fiber() { swapcontext(&g_ctx[g_current], &g_main); }
static unsigned g_block_gen, g_block_arrived;
static void __syncthreads() {
    const unsigned gen = g_block_gen;
    if (++g_block_arrived == (unsigned)g_nthreads) { g_block_arrived = 0; ++g_block_gen; }
    else while (g_block_gen == gen) yield_fiber();
}
static unsigned g_warp_gen[32], g_warp_arrived[32];
static uint32_t g_warp_val[32][32];
static void warp_barrier(int w) {
    const unsigned gen = g_warp_gen[w];
    if (++g_warp_arrived[w] == 32u) { g_warp_arrived[w] = 0; ++g_warp_gen[w]; }
    else while (g_warp_gen[w] == gen) yield_fiber();
}
static uint32_t __shfl_xor_sync(uint32_t, uint32_t v, int off) {
    const int t = g_current, w = t / 32, l = t % 32;
    g_warp_val[w][l] = v;
    warp_barrier(w);
    const uint32_t r = g_warp_val[w][l ^ off];
    warp_barrier(w);
    return r;
}

/* The variant's macros are force-included (-include) by the driver; the
 * kernel's parameter struct is renamed so it does not clash with the host's. */
#define qg_cast_params qg_cast_params_dev
#include "qg_cast.cuh"
#undef qg_cast_params

static qg_cast_params_dev g_params;
static void fiber_entry() {
    qg_cast_kernel(g_params);
    g_done[g_current] = 1;
    swapcontext(&g_ctx[g_current], &g_main);
}
static void launch(unsigned grid, int threads, const qg_cast_params &p) {
    static_assert(sizeof(qg_cast_params_dev) == sizeof(qg_cast_params), "parameter layouts");
    memcpy(&g_params, &p, sizeof p);
    g_nthreads = threads;
    gridDim = {grid, 1, 1};
    blockDim = {(unsigned)threads, 1, 1};
    g_ctx.assign(threads, ucontext_t());
    g_done.assign(threads, 0);
    g_stacks.assign(threads, std::vector<char>(64 * 1024));
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx = {b, 0, 0};
        g_block_arrived = 0;
        memset(g_warp_arrived, 0, sizeof g_warp_arrived);
        for (int t = 0; t < threads; ++t) {
            getcontext(&g_ctx[t]);
            g_ctx[t].uc_stack.ss_sp = g_stacks[t].data();
            g_ctx[t].uc_stack.ss_size = g_stacks[t].size();
            g_ctx[t].uc_link = nullptr;
            makecontext(&g_ctx[t], fiber_entry, 0);
            g_done[t] = 0;
        }
        for (int left = threads; left > 0;) {
            left = 0;
            for (int t = 0; t < threads; ++t) {
                if (g_done[t]) continue;
                g_current = t;
                threadIdx = {(unsigned)t, 0, 0};
                swapcontext(&g_main, &g_ctx[t]);
                left += !g_done[t];
            }
        }
    }
}

/* ---- reference (the torch formulas; host expf for silu) -------------------- */
static uint32_t fb(float f) { return __float_as_uint(f); }
static float bf(uint32_t b) { return __uint_as_float(b); }
static float canon(float f) { return std::isnan(f) ? bf(0x7FFFFFFFu) : f; }
static uint8_t torch_e4m3(float f) {
    const uint32_t fp8_max = 1087u << 20, dm = 141u << 23;
    uint32_t b = fb(f);
    const uint32_t s = b & 0x80000000u;
    b ^= s;
    uint8_t r;
    if (b >= fp8_max) r = 0x7F;
    else if (b < (121u << 23)) r = (uint8_t)(fb(bf(b) + bf(dm)) - dm);
    else { const uint32_t o = (b >> 20) & 1u; b += ((uint32_t)(7 - 127) << 23) + 0x7FFFFu; b += o; r = (uint8_t)(b >> 20); }
    return (uint8_t)(r | (s >> 24));
}
static float ceil_ue8m0(float s) {
    const uint32_t b = fb(s) & 0x7FFFFFFFu;
    int e = (int)(b >> 23) + ((b & 0x7FFFFFu) != 0);
    e = std::min(std::max(e, 1), 254);
    return bf((uint32_t)e << 23);
}
static const float kInv448 = (float)(1.0 / 448.0);
static void ref_scale(uint32_t amax_bits, bool ue, float &sf, float &mult) {
    float amax = bf(amax_bits);
    if (amax < 1e-4f) amax = 1e-4f;
    if (ue) { sf = ceil_ue8m0(canon(amax * kInv448)); mult = 1.0f / sf; }
    else { sf = canon(amax * kInv448); mult = canon(canon(1.0f / amax) * 448.0f); }
}
static uint64_t g_rng = 88172645463325252ull;
static uint64_t rnd() { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return g_rng; }
static float urand() { return (float)((rnd() >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

static int g_bad;
static void expect(const char *what, long i, uint32_t got, uint32_t want) {
    if (got != want && g_bad++ < 8) printf("  %s[%ld]: got 0x%x want 0x%x\n", what, i, got, want);
}

/* Input values stored as bf16 (upper halves) or float. */
struct Input {
    std::vector<float> v;
    std::vector<uint16_t> h;
    const void *ptr(bool f32) const { return f32 ? (const void *)v.data() : (const void *)h.data(); }
};
static Input make_input(size_t n, bool f32, int offset_elems) {
    Input in;
    in.v.resize(n + offset_elems);
    in.h.resize(n + offset_elems);
    for (size_t i = 0; i < n + offset_elems; ++i) {
        float x = urand() * ldexpf(1.0f, (int)(rnd() % 9) - 4);
        if (rnd() % 50 == 0) x *= 1e-6f;
        if (!f32) { in.h[i] = (uint16_t)(fb(x) >> 16); x = bf((uint32_t)in.h[i] << 16); }
        in.v[i] = x;
    }
    return in;
}

int main() {
    for (int c = 0; c < 127; ++c) {
        const int e = c >> 3, m = c & 7;
        g_e4m3[c] = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
    }
    qg_cast_problem p = {};
    p.op = (qg_cast_op)QG_CAST_OP;
    const bool f32 = QG_CAST_OP <= 4 && QG_CAST_IN_F32, ue = QG_CAST_OP <= 4 && QG_CAST_UE8M0;
    p.in_f32 = f32;
    p.ue8m0 = ue;
    p.k = QG_CAST_K;
    p.in_align = 16;
    p.out_align = 16;
    qg_cast_plan plan;
    const int num_sms = 3; /* few CTAs: the grid-stride loops run several rounds */
    const int K = QG_CAST_K;
    if (QG_CAST_OP == QG_CAST_OP_TOKEN || QG_CAST_OP == QG_CAST_OP_SILU) {
        const bool silu = QG_CAST_OP == QG_CAST_OP_SILU;
        const int G = 3, M = 37, rows = G * M, in_cols = silu ? 2 * K : K, KB = (K + 127) / 128;
        const int sf_ld = (M + 3) / 4 * 4;
        p.sf_mn_major = QG_CAST_SF_MN;
        p.rows_mask = (qg_cast_rows)QG_CAST_ROW_MASK;
        p.rows = rows; p.m = M; p.groups = G; p.ld_in = in_cols; p.ld_out = K; p.sf_ld = sf_ld;
        /* the baked vector width must be what the planner picks here */
        Input x = make_input((size_t)rows * in_cols, f32, 0);
        std::vector<uint8_t> q((size_t)rows * K, 0xAB);
        std::vector<uint32_t> sf(p.sf_mn_major ? (size_t)G * KB * sf_ld : (size_t)rows * KB, 0xDEADBEEFu);
        std::vector<int32_t> aux;
        if (QG_CAST_ROW_MASK == 1) aux = {0, 20, 99};
        if (QG_CAST_ROW_MASK == 2) for (int r = 0; r < rows; ++r) aux.push_back(r % 5 == 3 ? -1 : 0);
        if (qg__cast_plan(&p, num_sms, &plan) != QG_SUCCESS) { printf("plan: %s\n", qg_last_error()); return 2; }
        if (plan.vec != QG_CAST_VEC || plan.unroll != QG_CAST_UNROLL) {
            /* run the baked variant anyway: the kernel only needs vec | k, ld, alignment */
            plan.vec = QG_CAST_VEC;
        }
        qg_cast_params prm;
        qg__cast_params(&p, (uint64_t)(uintptr_t)x.ptr(f32), (uint64_t)(uintptr_t)q.data(),
                        (uint64_t)(uintptr_t)sf.data(), (uint64_t)(uintptr_t)aux.data(), &prm);
        launch(plan.grid, plan.threads, prm);
        for (int r = 0; r < rows; ++r) {
            const int g = r / M, m = r % M;
            bool live = true;
            if (QG_CAST_ROW_MASK == 1) live = m < aux[g];
            if (QG_CAST_ROW_MASK == 2) live = aux[r] >= 0;
            std::vector<float> v(K);
            for (int c = 0; c < K; ++c) {
                const float a = x.v[(size_t)r * in_cols + c];
                v[c] = silu ? canon(canon(a / (1.0f + expf(-a))) * x.v[(size_t)r * in_cols + K + c]) : a;
            }
            for (int kb = 0; kb < KB; ++kb) {
                uint32_t amax = 0;
                for (int c = kb * 128; c < std::min(K, kb * 128 + 128); ++c) amax = std::max(amax, fb(v[c]) & 0x7FFFFFFFu);
                float s, mult;
                ref_scale(amax, ue, s, mult);
                const size_t at = p.sf_mn_major ? ((size_t)g * KB + kb) * sf_ld + m : (size_t)r * KB + kb;
                expect("sf", (long)at, sf[at], live ? fb(s) : 0xDEADBEEFu);
                for (int c = kb * 128; c < std::min(K, kb * 128 + 128); ++c)
                    expect("q", (long)r * K + c, q[(size_t)r * K + c], live ? torch_e4m3(canon(v[c] * mult)) : 0xAB);
            }
        }
    } else if (QG_CAST_OP == QG_CAST_OP_BLOCK) {
        const int G = 2, N = QG_CAST_N, NB = (N + 127) / 128, KB = (K + 127) / 128;
        p.groups = G; p.n = N; p.ld_in = K; p.ld_out = K;
        Input x = make_input((size_t)G * N * K, f32, 0);
        std::vector<uint8_t> q((size_t)G * N * K, 0xAB);
        std::vector<uint32_t> sf((size_t)G * NB * KB, 0xDEADBEEFu);
        if (qg__cast_plan(&p, num_sms, &plan) != QG_SUCCESS) { printf("plan: %s\n", qg_last_error()); return 2; }
        qg_cast_params prm;
        qg__cast_params(&p, (uint64_t)(uintptr_t)x.ptr(f32), (uint64_t)(uintptr_t)q.data(),
                        (uint64_t)(uintptr_t)sf.data(), 0, &prm);
        launch(plan.grid, plan.threads, prm);
        for (int g = 0; g < G; ++g)
            for (int nb = 0; nb < NB; ++nb)
                for (int kb = 0; kb < KB; ++kb) {
                    uint32_t amax = 0;
                    for (int n = nb * 128; n < std::min(N, nb * 128 + 128); ++n)
                        for (int k = kb * 128; k < std::min(K, kb * 128 + 128); ++k)
                            amax = std::max(amax, fb(x.v[((size_t)g * N + n) * K + k]) & 0x7FFFFFFFu);
                    float s, mult;
                    ref_scale(amax, ue, s, mult);
                    expect("sf", (long)((g * NB + nb) * KB + kb), sf[(size_t)(g * NB + nb) * KB + kb], fb(s));
                    for (int n = nb * 128; n < std::min(N, nb * 128 + 128); ++n)
                        for (int k = kb * 128; k < std::min(K, kb * 128 + 128); ++k) {
                            const size_t i = ((size_t)g * N + n) * K + k;
                            expect("q", (long)i, q[i], torch_e4m3(canon(x.v[i] * mult)));
                        }
                }
    } else if (QG_CAST_OP == QG_CAST_OP_CHANNEL) {
        const int M = 256, MB = M / 128;
        p.rows = M; p.ld_in = K; p.ld_out = K;
        Input x = make_input((size_t)M * K, f32, 0);
        std::vector<uint8_t> q((size_t)M * K, 0xAB);
        std::vector<uint32_t> sf((size_t)MB * K, 0xDEADBEEFu);
        if (qg__cast_plan(&p, num_sms, &plan) != QG_SUCCESS) { printf("plan: %s\n", qg_last_error()); return 2; }
        qg_cast_params prm;
        qg__cast_params(&p, (uint64_t)(uintptr_t)x.ptr(f32), (uint64_t)(uintptr_t)q.data(),
                        (uint64_t)(uintptr_t)sf.data(), 0, &prm);
        launch(plan.grid, plan.threads, prm);
        for (int mb = 0; mb < MB; ++mb)
            for (int c = 0; c < K; ++c) {
                uint32_t amax = 0;
                for (int r = mb * 128; r < mb * 128 + 128; ++r) amax = std::max(amax, fb(x.v[(size_t)r * K + c]) & 0x7FFFFFFFu);
                float a = bf(amax);
                if (a < 1e-4f) a = 1e-4f;
                float s = canon(a * kInv448);
                if (ue) s = ceil_ue8m0(s);
                expect("sf", (long)mb * K + c, sf[(size_t)mb * K + c], fb(s));
                for (int r = mb * 128; r < mb * 128 + 128; ++r)
                    expect("q", (long)r * K + c, q[(size_t)r * K + c], torch_e4m3(canon(x.v[(size_t)r * K + c] / s)));
            }
    } else if (QG_CAST_OP == QG_CAST_OP_SF_MN || QG_CAST_OP == QG_CAST_OP_SF_PACK) {
        const bool pack = QG_CAST_OP == QG_CAST_OP_SF_PACK;
        const int G = 2, MN = 45, ld = 48, out_rows = pack ? (K + 3) / 4 : K;
        std::vector<float> in((size_t)G * MN * K);
        for (auto &v : in) v = ldexpf(1.0f, (int)(rnd() % 40) - 20) * (pack ? 1.0f : 1.0f + urand() * 0.3f);
        p.m = MN; p.groups = G; p.sf_ld = ld;
        p.in_stride[0] = (int64_t)MN * K; p.in_stride[1] = 1; p.in_stride[2] = MN; /* transposed storage */
        std::vector<uint32_t> out((size_t)G * out_rows * ld, 0xDEADBEEFu);
        if (qg__cast_plan(&p, num_sms, &plan) != QG_SUCCESS) { printf("plan: %s\n", qg_last_error()); return 2; }
        qg_cast_params prm;
        qg__cast_params(&p, (uint64_t)(uintptr_t)in.data(), (uint64_t)(uintptr_t)out.data(), 0, 0, &prm);
        launch(plan.grid, plan.threads, prm);
        for (int g = 0; g < G; ++g)
            for (int r = 0; r < out_rows; ++r)
                for (int m = 0; m < ld; ++m) {
                    uint32_t want = 0;
                    auto at = [&](int k) { return in[(size_t)g * MN * K + (size_t)k * MN + m]; };
                    if (m < MN) {
                        if (!pack) want = fb(at(r));
                        else for (int j = 0; j < 4; ++j) if (4 * r + j < K) want |= ((fb(at(4 * r + j)) >> 23) & 0xFFu) << (8 * j);
                    }
                    expect("out", (long)((g * out_rows + r) * ld + m), out[(size_t)(g * out_rows + r) * ld + m], want);
                }
    } else {
        /* op 7: groups baked; layout chosen to fit the baked count */
        const int G = QG_CAST_GROUPS, MN = 40, gran = QG_CAST_GRAN_K, kal = QG_CAST_K_ALIGN;
        std::vector<int> ks;
        for (int g = 0; g < G; ++g) ks.push_back((int)(rnd() % 9) * gran / 2 + (g % 2 ? 0 : 1));
        std::vector<int32_t> layout;
        int end = 0, sf_k = 0, packed = 0;
        for (int g = 0; g < G; ++g) {
            const int start = QG_CAST_PSUM ? (end + kal - 1) / kal * kal : 0;
            end = QG_CAST_PSUM ? start + ks[g] : 0;
            layout.push_back(QG_CAST_PSUM ? end : ks[g]);
            const int rows = (ks[g] + gran - 1) / gran;
            sf_k += rows;
            packed += (rows + 3) / 4;
        }
        std::vector<float> in((size_t)sf_k * MN + 4);
        for (auto &v : in) v = ldexpf(1.0f, (int)(rnd() % 40) - 20);
        p.m = MN; p.groups = G; p.k = sf_k; p.packed_sf_k = packed; p.gran_k = gran; p.k_alignment = kal;
        p.psum = QG_CAST_PSUM;
        std::vector<uint32_t> out((size_t)packed * MN + 4, 0xDEADBEEFu);
        if (qg__cast_plan(&p, num_sms, &plan) != QG_SUCCESS) { printf("plan: %s\n", qg_last_error()); return 2; }
        qg_cast_params prm;
        qg__cast_params(&p, (uint64_t)(uintptr_t)in.data(), (uint64_t)(uintptr_t)out.data(), 0,
                        (uint64_t)(uintptr_t)layout.data(), &prm);
        launch(plan.grid, plan.threads, prm);
        int in_row = 0, out_row = 0;
        for (int g = 0; g < G; ++g) {
            const int rows = (ks[g] + gran - 1) / gran;
            for (int pr = 0; pr < (rows + 3) / 4; ++pr, ++out_row)
                for (int m = 0; m < MN; ++m) {
                    uint32_t want = 0;
                    for (int j = 0; j < 4; ++j)
                        if (4 * pr + j < rows) want |= ((fb(in[(size_t)(in_row + 4 * pr + j) * MN + m]) >> 23) & 0xFFu) << (8 * j);
                    expect("out", (long)out_row * MN + m, out[(size_t)out_row * MN + m], want);
                }
            in_row += rows;
        }
    }
    printf("%s grid %u x %d: %s (%d mismatches)\n", qg__cast_op_name(p.op), plan.grid, plan.threads,
           g_bad ? "FAIL" : "ok", g_bad);
    return g_bad ? 1 : 0;
}
