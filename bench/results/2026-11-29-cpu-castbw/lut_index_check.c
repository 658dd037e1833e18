/* Build and run: cc -O2 -o lut_index_check lut_index_check.c && ./lut_index_check  (~5 s) */
/* Exhaustive check of qg_cast_lut_index2 (kernels/qg_cast.cuh) over every pair of bf16
 * gates: bad == 0 exactly when both gates' biased exponents are in [103, 135), and then
 * the two indices address the entries the CTA's build loop wrote for those gates. */
#include <stdint.h>
#include <stdio.h>
#define P0 (103u << 7)
static uint32_t index2(uint32_t w, uint32_t *bad) {
    const uint32_t d = (w & 0x7FFF7FFFu) - P0 * 0x10001u;
    *bad |= d & 0xF000F000u;
    return d | ((w >> 3) & 0x10001000u);
}
static uint32_t built_bits(uint32_t i) { return (i / 4096) << 15 | (P0 + i % 4096); } /* the build loop */
static int in_window(uint32_t t) { uint32_t e = (t >> 7) & 0xFF; return e >= 103 && e < 135; }
int main(void) {
    uint64_t bad_pairs = 0, errors = 0;
    for (uint64_t w = 0; w < (1ull << 32); ++w) {
        uint32_t bad = 0;
        const uint32_t lo = (uint32_t)w & 0xFFFF, hi = (uint32_t)(w >> 16);
        const uint32_t idx = index2((uint32_t)w, &bad);
        const int want_ok = in_window(lo) && in_window(hi);
        if ((bad == 0) != want_ok) { if (errors++ < 5) printf("verdict wrong at %08llx\n", (unsigned long long)w); continue; }
        if (!want_ok) { bad_pairs++; continue; }
        const uint32_t il = idx & 0xFFFF, ih = idx >> 16;
        if (il >= 8192 || ih >= 8192 || built_bits(il) != lo || built_bits(ih) != hi)
            if (errors++ < 5) printf("index wrong at %08llx: %u %u\n", (unsigned long long)w, il, ih);
    }
    printf("pairs outside the table: %llu, errors: %llu\n", (unsigned long long)bad_pairs, (unsigned long long)errors);
    return errors != 0;
}
