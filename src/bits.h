/*
 * bits.h -- a float's bits and back (memcpy: the one type pun C11 defines).
 * Shared by the conversions (src/fp8.c) and their tests (tests/test_fp8.c),
 * which build their inputs bit by bit; the tests' expectations come from
 * the format definitions, not from here.
 */
#ifndef QG_BITS_H
#define QG_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t qg__float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float qg__bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#endif /* QG_BITS_H */
