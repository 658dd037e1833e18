/*
 * fuzz.h -- what the fuzz targets (fuzz/fuzz_args.c, fuzz_cli.c, fuzz_cache.c) share: the libFuzzer entry
 * points, and the figures each target prints at exit (cases tried, clean
 * errors, accepted inputs; a crash never reaches the exit: libFuzzer or the
 * sanitizer stops the run and `make fuzz` fails).
 */
#ifndef QG_FUZZ_H
#define QG_FUZZ_H

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

#endif
