/*
 * test_fp8.c -- e4m3 and bf16 conversions (src/fp8.c) against the format
 * definitions and against brute-force oracles written here: the nearest
 * representable value by exhaustive search, ties to the even code.
 */
#include "qg_test.h"
#include "bits.h"
#include "qgemm.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------- */

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t next_u64(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* The e4m3 value of a code straight from the OCP definition, via pow(). */
static double e4m3_by_definition(unsigned code) {
    unsigned s = code >> 7, e = (code >> 3) & 15, m = code & 7;
    double mag = e == 0 ? (m / 8.0) * pow(2.0, -6) : (1.0 + m / 8.0) * pow(2.0, (double)e - 7);
    return s ? -mag : mag;
}

/* Oracle: nearest finite e4m3 code to x by exhaustive search (ties: even
 * code), saturating beyond 448. */
static uint8_t e4m3_oracle(float x) {
    double ax = fabs((double)x);
    unsigned best = 0;
    double best_err = INFINITY;
    for (unsigned c = 0; c <= 0x7e; c++) {
        double err = fabs(e4m3_by_definition(c) - ax);
        if (err < best_err || (err == best_err && (c & 1) == 0)) {
            best = c;
            best_err = err;
        }
    }
    return (uint8_t)(best | (signbit(x) ? 0x80 : 0));
}

/* ---- e4m3 ------------------------------------------------------------------ */

TEST(fp8_e4m3_decode_matches_definition) {
    for (unsigned c = 0; c < 256; c++) {
        float v = qg_fp8_e4m3_decode((uint8_t)c);
        if ((c & 0x7f) == 0x7f) {
            CHECK(isnan(v), "code 0x%02x should be NaN, got %g", c, v);
            continue;
        }
        CHECK((double)v == e4m3_by_definition(c), "code 0x%02x: got %.9g, expected %.9g", c, v,
              e4m3_by_definition(c));
        CHECK(!!signbit(v) == !!(c & 0x80), "code 0x%02x: wrong sign", c);
    }
    /* Anchor points of the format. */
    CHECK(qg_fp8_e4m3_decode(0x7e) == 448.0f, "max");
    CHECK(qg_fp8_e4m3_decode(0xfe) == -448.0f, "-max");
    CHECK(qg_fp8_e4m3_decode(0x38) == 1.0f, "one");
    CHECK(qg_fp8_e4m3_decode(0x01) == ldexpf(1.0f, -9), "min subnormal");
    CHECK(qg_fp8_e4m3_decode(0x08) == ldexpf(1.0f, -6), "min normal");
    PASS();
}

TEST(fp8_e4m3_round_trip_all_codes) {
    for (unsigned c = 0; c < 256; c++) {
        uint8_t back = qg_fp8_e4m3_encode(qg_fp8_e4m3_decode((uint8_t)c));
        if ((c & 0x7f) == 0x7f)
            CHECK((back & 0x7f) == 0x7f, "NaN code 0x%02x came back as non-NaN 0x%02x", c, back);
        else
            CHECK(back == c, "code 0x%02x came back as 0x%02x", c, back);
    }
    PASS();
}

TEST(fp8_e4m3_ties_and_neighbours) {
    int ties_even = 0, ties_odd = 0, subnormal_ties = 0;
    /* Every pair of adjacent non-negative codes, both signs: the exact
     * midpoint goes to the even code; one float ulp either side goes to the
     * nearer code. Midpoints need 5 significant bits: exact in float. */
    for (unsigned c = 0; c < 0x7e; c++) {
        float lo = qg_fp8_e4m3_decode((uint8_t)c), hi = qg_fp8_e4m3_decode((uint8_t)(c + 1));
        float mid = (lo + hi) / 2;
        CHECK((double)mid == ((double)lo + (double)hi) / 2, "midpoint not exact");
        unsigned even = (c & 1) ? c + 1 : c;
        ties_even += (c & 1) == 0;
        ties_odd += (c & 1) == 1;
        subnormal_ties += c < 8;
        for (int s = 0; s < 2; s++) {
            unsigned sign = s ? 0x80 : 0;
            float sg = s ? -1.0f : 1.0f;
            CHECK(qg_fp8_e4m3_encode(sg * mid) == (even | sign), "tie %g: got 0x%02x, want 0x%02x",
                  (double)(sg * mid), qg_fp8_e4m3_encode(sg * mid), even | sign);
            float below = nextafterf(mid, 0.0f), above = nextafterf(mid, INFINITY);
            CHECK(qg_fp8_e4m3_encode(sg * below) == (c | sign), "below tie %g: got 0x%02x",
                  (double)(sg * below), qg_fp8_e4m3_encode(sg * below));
            CHECK(qg_fp8_e4m3_encode(sg * above) == ((c + 1) | sign), "above tie %g: got 0x%02x",
                  (double)(sg * above), qg_fp8_e4m3_encode(sg * above));
            CHECK(qg_fp8_e4m3_encode(sg * lo) == (c | sign), "exact %g", (double)(sg * lo));
        }
    }
    CHECK(ties_even > 0 && ties_odd > 0 && subnormal_ties == 8, "coverage");
    PASS();
}

TEST(fp8_e4m3_saturation_and_specials) {
    const float big[] = {448.0f, 449.0f, 463.9f, 464.0f, 480.0f, 1e9f, FLT_MAX, INFINITY};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        CHECK(qg_fp8_e4m3_encode(big[i]) == 0x7e, "%g -> 0x%02x", (double)big[i],
              qg_fp8_e4m3_encode(big[i]));
        CHECK(qg_fp8_e4m3_encode(-big[i]) == 0xfe, "%g -> 0x%02x", (double)-big[i],
              qg_fp8_e4m3_encode(-big[i]));
    }
    CHECK(qg_fp8_e4m3_encode(NAN) == 0x7f, "NaN -> 0x%02x", qg_fp8_e4m3_encode(NAN));
    CHECK(qg_fp8_e4m3_encode(-NAN) == 0xff, "-NaN -> 0x%02x", qg_fp8_e4m3_encode(-NAN));
    CHECK(qg_fp8_e4m3_encode(qg__bits_float(0x7f800001u)) == 0x7f, "signalling NaN");
    CHECK(qg_fp8_e4m3_encode(0.0f) == 0x00, "+0");
    CHECK(qg_fp8_e4m3_encode(-0.0f) == 0x80, "-0");
    PASS();
}

TEST(fp8_e4m3_tiny_values) {
    const float sub = ldexpf(1.0f, -9); /* smallest subnormal */
    CHECK(qg_fp8_e4m3_encode(sub / 2) == 0x00, "half the min subnormal is a tie -> 0 (even)");
    CHECK(qg_fp8_e4m3_encode(nextafterf(sub / 2, 1.0f)) == 0x01, "just above half -> 0x01");
    CHECK(qg_fp8_e4m3_encode(-nextafterf(sub / 2, 1.0f)) == 0x81, "negative just above half");
    CHECK(qg_fp8_e4m3_encode(sub / 4) == 0x00, "quarter -> 0");
    CHECK(qg_fp8_e4m3_encode(-sub / 4) == 0x80, "negative quarter -> -0");
    CHECK(qg_fp8_e4m3_encode(FLT_MIN) == 0x00, "FLT_MIN -> 0");
    CHECK(qg_fp8_e4m3_encode(qg__bits_float(1)) == 0x00, "float subnormal -> 0");
    CHECK(qg_fp8_e4m3_encode(sub * 1.5f) == 0x02, "1.5 subnormal ulps is a tie -> 2 (even)");
    CHECK(qg_fp8_e4m3_encode(sub * 7.5f) == 0x08, "7.5 ulps tie -> 8 = min normal (even)");
    CHECK(qg_fp8_e4m3_encode(nextafterf(sub * 7.5f, 0.0f)) == 0x07, "just below -> 7");
    PASS();
}

TEST(fp8_e4m3_random_vs_oracle) {
    for (int i = 0; i < 200000; i++) {
        /* Random significand, exponent spread over the whole e4m3 range and
         * a little beyond on both ends. */
        uint32_t u = (uint32_t)next_u64();
        int e = (int)(next_u64() % 30) - 18; /* 2^-18 .. 2^11 */
        float x = ldexpf(1.0f + (float)(u & 0x7fffff) / 8388608.0f, e);
        if (u & 0x80000000u) x = -x;
        uint8_t got = qg_fp8_e4m3_encode(x), want = e4m3_oracle(x);
        CHECK(got == want, "x = %.9g (bits 0x%08x): got 0x%02x, oracle 0x%02x", (double)x,
              qg__float_bits(x), got, want);
    }
    PASS();
}

/* ---- bf16 ------------------------------------------------------------------ */

/* Oracle: nearest bf16 by comparing the two truncation neighbours in double
 * (ties: even code). Overflow is IEEE: past the midpoint between the largest
 * finite and 2^128, the result is infinity. */
static uint16_t bf16_oracle(float x) {
    uint32_t u = qg__float_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t mag = u & 0x7fffffff;
    uint16_t lo = (uint16_t)(mag >> 16), hi = (uint16_t)(lo + 1);
    double ax = fabs((double)x);
    double lo_v = (double)qg__bits_float((uint32_t)lo << 16);
    /* The value one bf16 ulp above lo, with an unbounded exponent. */
    int e = (int)((mag >> 23) & 0xff);
    double ulp = ldexp(1.0, (e ? e : 1) - 127 - 7);
    double hi_v = lo_v + ulp;
    double dlo = ax - lo_v, dhi = hi_v - ax;
    uint16_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
    return (uint16_t)(pick | sign);
}

TEST(bf16_random_vs_oracle) {
    for (int i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)next_u64();
        if ((u & 0x7f800000u) == 0x7f800000u) continue; /* inf/NaN: below */
        float x = qg__bits_float(u);
        uint16_t got = qg_bf16_encode(x), want = bf16_oracle(x);
        CHECK(got == want, "x = %.9g (0x%08x): got 0x%04x, oracle 0x%04x", (double)x, u, got, want);
    }
    /* Exact ties both ways: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7. */
    CHECK(qg_bf16_encode(1.0f + ldexpf(1.0f, -8)) == 0x3f80, "tie to even (down)");
    CHECK(qg_bf16_encode(1.0f + 3 * ldexpf(1.0f, -8)) == 0x3f82, "tie to even (up)");
    PASS();
}

TEST(bf16_specials_and_round_trip) {
    CHECK(qg_bf16_encode(INFINITY) == 0x7f80, "inf");
    CHECK(qg_bf16_encode(-INFINITY) == 0xff80, "-inf");
    CHECK(qg_bf16_encode(-0.0f) == 0x8000, "-0");
    CHECK(isnan(qg_bf16_decode(qg_bf16_encode(NAN))), "NaN");
    CHECK(isnan(qg_bf16_decode(qg_bf16_encode(qg__bits_float(0x7f800001u)))),
          "a NaN with only low mantissa bits must stay NaN");
    CHECK(isnan(qg_bf16_decode(qg_bf16_encode(qg__bits_float(0xff800001u)))), "negative NaN");
    CHECK(isinf(qg_bf16_decode(qg_bf16_encode(FLT_MAX))), "FLT_MAX rounds up to inf");
    for (int i = 0; i < 100000; i++) {
        uint16_t v = (uint16_t)next_u64();
        if ((v & 0x7f80) == 0x7f80) continue;
        float x = qg_bf16_decode(v);
        CHECK(qg__float_bits(x) == (uint32_t)v << 16, "decode 0x%04x", v);
        CHECK(qg_bf16_encode(x) == v, "round trip 0x%04x -> 0x%04x", v, qg_bf16_encode(x));
    }
    PASS();
}
