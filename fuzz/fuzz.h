/*
 * fuzz.h -- what the fuzz targets (fuzz/fuzz_args.c, fuzz_family.c, fuzz_cli.c, fuzz_cache.c) share: the libFuzzer entry
 * points, and the figures each target prints at exit (cases tried, clean
 * errors, accepted inputs; a crash never reaches the exit: libFuzzer or the
 * sanitizer stops the run and `make fuzz` fails).
 */
#ifndef QG_FUZZ_H
#define QG_FUZZ_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

typedef struct {
    const char *target;
    unsigned long long cases, clean_errors, accepted;
} fuzz_figures;

extern fuzz_figures fuzz_stats;

static inline void fuzz_print_figures(void) {
    printf("fuzz %s: %llu cases tried, %llu clean errors, %llu accepted, crashes: 0\n",
           fuzz_stats.target, fuzz_stats.cases, fuzz_stats.clean_errors, fuzz_stats.accepted);
    fflush(stdout);
}

/* Take n bytes from the input (zeros past its end). */
typedef struct {
    const uint8_t *p;
    size_t left;
} fuzz_input;

static inline uint64_t fuzz_take(fuzz_input *in, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        uint8_t b = 0;
        if (in->left) b = *in->p++, in->left--;
        v |= (uint64_t)b << (8 * i);
    }
    return v;
}

/* The argument targets' (fuzz_args.c, fuzz_family.c) values. */
/* An int: one of the interesting values, or small, or raw. */
static inline int pick_int(fuzz_input *in) {
    static const int special[] = {0, 1, -1, 8, 16, 64, 100, 128, 256, 576, 4096, 7168,
                                  1 << 20, 1 << 30, (1 << 30) + 1, INT_MAX, INT_MIN, INT_MAX - 7,
                                  INT_MAX - 15, 4095, 4097, 133, 132};
    const unsigned sel = (unsigned)fuzz_take(in, 1);
    if (sel < 128) return special[sel % (sizeof special / sizeof special[0])];
    if (sel < 192) return (int)(fuzz_take(in, 2) & 0xfff0);
    return (int)fuzz_take(in, 4);
}

static inline int64_t pick_i64(fuzz_input *in, int64_t near) {
    static const int64_t special[] = {0, -1, INT64_MAX, INT64_MIN, (1ll << 36), (1ll << 36) + 1,
                                      (1ll << 62) + 1, INT64_MAX - 3, INT64_MAX - 2, 16, 4};
    const unsigned sel = (unsigned)fuzz_take(in, 1);
    if (sel < 96) return special[sel % (sizeof special / sizeof special[0])];
    if (sel < 224) return near + (int64_t)(fuzz_take(in, 1) & 0x3f) - 8;
    return (int64_t)fuzz_take(in, 8);
}

static inline void *pick_ptr(fuzz_input *in) {
    static const uintptr_t special[] = {0, 0x10000, 0x10001, 0x10004, 0x10008, UINTPTR_MAX,
                                        UINTPTR_MAX - 15, 0x7f0000000000};
    return (void *)special[fuzz_take(in, 1) % (sizeof special / sizeof special[0])];
}

#endif
