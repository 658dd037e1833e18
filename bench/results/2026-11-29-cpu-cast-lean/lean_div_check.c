/* lean_div_check.c -- the exhaustive check behind kernels/qg_cast.cuh's qg_cast_div_lean
 * (QG_CAST_LEAN, per-channel cast of bf16 input).
 *
 * For every finite non-negative bf16 amax and every bf16 x with |x| <= amax (both signs),
 * sf = RN(max(amax, 1e-4) * RN(1/448)) as the kernel forms it, and
 *   q  = RN(x / sf)                                  (torch, and the default kernel: div.rn)
 *   y  = RN(1 / sf); q0 = RN(x * y)
 *   q1 = RN(q0 + RN(x - sf * q0) * y) | sign(x)      (one fma correction; the kernel's)
 *   q2 = the same correction once more               (for comparison)
 * Counts (a) fp32 bit differences and (b) differences of the e4m3 value the two
 * quotients round to (round to nearest even on the e4m3 grid, saturating at 448 as
 * cvt.rn.satfinite does; the kernel takes this path only for columns whose amax / sf
 * <= 464), with the sign. (b) must be 0.
 * Build and run: gcc -O2 -ffp-contract=off -march=native -o lean_div_check lean_div_check.c -lm
 * (-ffp-contract=off: every * and / rounds on its own, as the kernel's __fmul_rn /
 * __fdiv_rn do; fmaf is IEEE fma). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static float f(uint32_t u) { float v; memcpy(&v, &u, 4); return v; }
static uint32_t b(float v) { uint32_t u; memcpy(&u, &v, 4); return u; }

/* v rounded to the e4m3 (fn) grid, nearest even, saturated at 448; the sign kept (-0 too). */
static double e4m3(float v) {
    double a = fabs((double)v);
    if (a > 448.0) a = 448.0;
    int e;
    frexp(a, &e);                            /* a = m * 2^e, m in [0.5, 1) */
    double quantum = a < 0x1p-6 ? 0x1p-9 : ldexp(1.0, e - 4); /* 3 mantissa bits */
    double r = nearbyint(a / quantum) * quantum;               /* ties to even (default mode) */
    if (r > 448.0) r = 448.0;
    return b(v) >> 31 ? -r - 0.0 : r;
}

static int same_e4m3(float p, float q) {
    double x = e4m3(p), y = e4m3(q);
    return x == y && signbit(x) == signbit(y);
}

int main(void) {
    const float inv448 = f(0x3B124925u);
    long long pairs = 0, bits1 = 0, bits1_big = 0, bits2 = 0, fp8_1 = 0, fp8_2 = 0;
    for (uint32_t ah = 0; ah < 0x7F80u; ++ah) {
        const float amax = f(ah << 16);
        const float a = amax < 1e-4f ? 1e-4f : amax;
        volatile float sf = a * inv448;
        volatile float one = 1.0f;
        const float y = one / sf;
        for (uint32_t xh = 0; xh <= ah; ++xh)
            for (int s = 0; s < 2; ++s) {
                const float x = f((xh << 16) | (s ? 0x80000000u : 0u));
                const float q = x / sf;
                const float q0 = x * y;
                float q1 = fmaf(fmaf(-sf, q0, x), y, q0);
                float q2 = fmaf(fmaf(-sf, q1, x), y, q1);
                q1 = f(b(q1) | (b(x) & 0x80000000u));
                q2 = f(b(q2) | (b(x) & 0x80000000u));
                ++pairs;
                bits1 += b(q1) != b(q), bits2 += b(q2) != b(q);
                bits1_big += b(q1) != b(q) && (fabsf(q) >= 0x1p-11f || fabsf(q1) >= 0x1p-11f);
                if (!same_e4m3(q1, q)) {
                    if (fp8_1 < 5) printf("e4m3 differs (one correction): amax %a x %a q %a q1 %a\n", amax, x, q, q1);
                    ++fp8_1;
                }
                fp8_2 += !same_e4m3(q2, q);
            }
    }
    printf("pairs %lld\n", pairs);
    printf("one correction:  fp32 bits differ %lld (of them with a quotient >= 2^-11: %lld), e4m3 differs %lld\n", bits1, bits1_big, fp8_1);
    printf("two corrections: fp32 bits differ %lld, e4m3 differs %lld\n", bits2, fp8_2);
    printf("%s\n", fp8_1 == 0 ? "PASS: the kernel's sequence gives torch's bytes on every pair" : "FAIL");
    return fp8_1 != 0;
}
