/*
 * driver.c -- a deterministic stand-in for libFuzzer where the compiler has
 * none (gcc): runs every file of the corpus directories given, then random
 * inputs -- mutations of the corpus files (byte flips, insertions, cuts,
 * splices) and fresh random bytes -- from a fixed seed until
 * -max_total_time=S seconds have passed or -runs=N inputs were tried. The
 * same command line as libFuzzer's for what fuzz/run.sh uses.
 */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>
#include <time.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

typedef struct { uint8_t *data; size_t size; } blob;
static blob corpus[4096];
static size_t num_corpus;

static void load_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) && num_corpus < 4096;) {
        if (e->d_name[0] == '.') continue;
        char file[1024];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        FILE *f = fopen(file, "rb");
        if (!f) continue;
        uint8_t *buf = malloc(1 << 16);
        size_t n = fread(buf, 1, 1 << 16, f);
        fclose(f);
        corpus[num_corpus++] = (blob){buf, n};
    }
    closedir(d);
}

int main(int argc, char **argv) {
    double max_time = 10;
    long long max_runs = -1;
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-max_total_time=", 16)) max_time = atof(argv[i] + 16);
        else if (!strncmp(argv[i], "-runs=", 6)) max_runs = atoll(argv[i] + 6);
        else if (!strncmp(argv[i], "-seed=", 6)) rng = (uint64_t)atoll(argv[i] + 6) * 2654435761u | 1;
        else if (argv[i][0] != '-') load_dir(argv[i]);
    }
    for (size_t i = 0; i < num_corpus; i++) LLVMFuzzerTestOneInput(corpus[i].data, corpus[i].size);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint8_t *buf = malloc(1 << 17);
    for (long long run = 0; max_runs < 0 || run < max_runs; run++) {
        if ((run & 63) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > max_time)
                break;
        }
        size_t n;
        if (num_corpus && next() % 8) {
            const blob *b = &corpus[next() % num_corpus];
            n = b->size;
            memcpy(buf, b->data, n);
            for (int m = 1 + (int)(next() % 8); m > 0; m--) {
                switch (next() % 5) {
                case 0: if (n) buf[next() % n] ^= (uint8_t)(1u << (next() % 8)); break;
                case 1: if (n) buf[next() % n] = (uint8_t)next(); break;
                case 2: if (n < (1 << 16)) { size_t at = n ? next() % n : 0;
                        memmove(buf + at + 1, buf + at, n - at); buf[at] = (uint8_t)next(); n++; } break;
                case 3: if (n) n = next() % n; break;
                default: { const blob *o = &corpus[next() % num_corpus];
                        size_t at = n ? next() % n : 0, len = o->size ? next() % o->size : 0;
                        if (at + len > (1 << 16)) len = (1 << 16) - at;
                        memcpy(buf + at, o->data, len); if (at + len > n) n = at + len; } break;
                }
            }
        } else {
            n = next() % 256;
            for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)next();
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    free(buf);
    return 0;
}
