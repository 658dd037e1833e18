/*
 * fp8.c -- host conversions between float and the GEMM's storage formats.
 *
 *  e4m3 (OCP FP8 E4M3, the "fn" variant): S.EEEE.MMM, exponent bias 7, no
 *  infinities, one NaN mantissa per sign (S.1111.111), largest finite 448
 *  (S.1111.110), subnormals (E = 0) are M * 2^-9.
 *  bf16: the upper 16 bits of an IEEE float.
 *
 * Invariants: every conversion is exact where the value is representable and
 * rounds to nearest, ties to even, otherwise; all rounding is done on the
 * float's bits (integer arithmetic), so results do not depend on the host's
 * floating-point mode or on compiler contraction.
 */
#include "internal.h"
#include "bits.h"

#include <math.h>
#include <string.h>

/* Shift `v` right by `s` (>= 1) bits, rounding to nearest, ties to even. */
static uint32_t shift_round_even(uint32_t v, unsigned s) {
    if (s >= 32) return 0; /* v < 2^32 <= half of 2^s: rounds to zero */
    uint32_t q = v >> s;
    uint32_t rem = v & ((1u << s) - 1u);
    uint32_t half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return q;
}

#define E4M3_MAX_CODE 0x7eu  /* 448 */
#define E4M3_NAN_CODE 0x7fu

uint8_t qg_fp8_e4m3_encode(float x) {
    uint32_t u = qg__float_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t mag = u & 0x7fffffffu;

    if (mag > 0x7f800000u) return (uint8_t)(sign | E4M3_NAN_CODE);
    /* |x| >= 448 (including infinity) saturates to 448. 448 = 0x43e00000. */
    if (mag >= 0x43e00000u) return (uint8_t)(sign | E4M3_MAX_CODE);

    int exp = (int)(mag >> 23) - 127; /* unbiased; -127 for float zero/subnormals */
    if (exp >= -6) {
        /* e4m3 normal range: keep 3 of the 23 mantissa bits. Rounding the
         * exponent|mantissa integer lets a mantissa carry bump the exponent,
         * which is exactly the right result (and can reach 448 = 0x7e at most,
         * since |x| < 448). Rebias the exponent from 127 to 7. */
        uint32_t r = shift_round_even(mag, 20);
        return (uint8_t)(sign | (r - ((127u - 7u) << 3)));
    }
    if (exp < -127 + 1) {
        /* float zero or float subnormal (< 2^-126): far below half of the
         * smallest e4m3 subnormal (2^-9), so it rounds to (signed) zero. */
        return sign;
    }
    /* e4m3 subnormal range (|x| < 2^-6): the code is round(|x| / 2^-9).
     * |x| = sig * 2^(exp-23) with the 24-bit significand sig, so the code is
     * sig * 2^(exp-14) rounded: a right shift by 14 - exp (>= 21). A result of
     * 8 is code 0x08, the smallest normal 2^-6: the encodings are contiguous. */
    uint32_t sig = (mag & 0x7fffffu) | 0x800000u;
    return (uint8_t)(sign | shift_round_even(sig, (unsigned)(14 - exp)));
}

float qg_fp8_e4m3_decode(uint8_t v) {
    unsigned e = (v >> 3) & 15u, m = v & 7u;
    float mag;
    if (e == 15 && m == 7) {
        mag = NAN;
    } else if (e == 0) {
        mag = ldexpf((float)m, -9);
    } else {
        mag = ldexpf((float)(8u + m), (int)e - 10); /* (1 + m/8) * 2^(e-7) */
    }
    return (v & 0x80u) ? -mag : mag;
}

uint16_t qg_bf16_encode(float x) {
    uint32_t u = qg__float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        /* NaN: truncating could clear every mantissa bit left (-> infinity);
         * set the quiet bit so the result stays a NaN. */
        return (uint16_t)((u >> 16) | 0x40u);
    }
    /* Round to nearest even on the 16 dropped bits; a carry into the exponent
     * is correct, and rounds the largest finite values up to infinity as IEEE
     * rounding does. */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float qg_bf16_decode(uint16_t v) {
    return qg__bits_float((uint32_t)v << 16);
}
