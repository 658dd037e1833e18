/*
 * bf16_nvrtc_compile.c -- compile JIT sources offline with NVRTC exactly as
 * the library does (-arch=sm_90a -std=c++17 -default-device -Xptxas=-v, the
 * kernel headers handed over as named headers), print the ptxas report.
 * Used by tools/bf16_compile_check.sh; no GPU needed.
 *
 *   bf16_nvrtc_compile KERNELS_DIR [--ptx OUT.ptx] SOURCE.cu...
 *
 * For each source: a line "== SOURCE", the NVRTC log, then "rc=0" or
 * "rc=FAIL". Exit status 1 if any compile failed.
 */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}

static const char *header_names[] = {"qg_ptx.cuh", "qg_scheduler.cuh", "qg_bf16_gemm.cuh",
                                     "qg_wgmma_placeholder.cuh",
                                     "qg_fp8_gemm.cuh"};
#define NUM_HEADERS 5

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s KERNELS_DIR [--ptx OUT] SOURCE.cu...\n", argv[0]);
        return 2;
    }
    const char *kdir = argv[1];
    const char *ptx_out = NULL;
    int first = 2;
    if (argc > 4 && !strcmp(argv[2], "--ptx")) {
        ptx_out = argv[3];
        first = 4;
    }
    const char *texts[NUM_HEADERS];
    for (int i = 0; i < NUM_HEADERS; ++i) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", kdir, header_names[i]);
        texts[i] = slurp(path);
        if (!texts[i]) {
            fprintf(stderr, "cannot read %s\n", path);
            return 2;
        }
    }
    const char *opts[] = {"-arch=sm_90a", "-std=c++17", "-default-device", "-Xptxas=-v"};
    int failed = 0;
    for (int a = first; a < argc; ++a) {
        char *src = slurp(argv[a]);
        printf("== %s\n", argv[a]);
        if (!src) {
            printf("cannot read\nrc=FAIL\n");
            failed = 1;
            continue;
        }
        nvrtcProgram prog;
        nvrtcResult r = nvrtcCreateProgram(&prog, src, argv[a], NUM_HEADERS, texts, header_names);
        if (r != NVRTC_SUCCESS) {
            printf("nvrtcCreateProgram: %s\nrc=FAIL\n", nvrtcGetErrorString(r));
            failed = 1;
            free(src);
            continue;
        }
        r = nvrtcCompileProgram(prog, 4, opts);
        size_t log_size = 0;
        nvrtcGetProgramLogSize(prog, &log_size);
        char *log = malloc(log_size + 1);
        nvrtcGetProgramLog(prog, log);
        log[log_size] = 0;
        fputs(log, stdout);
        if (r == NVRTC_SUCCESS && ptx_out) {
            size_t n = 0;
            nvrtcGetPTXSize(prog, &n);
            char *ptx = malloc(n);
            nvrtcGetPTX(prog, ptx);
            FILE *f = fopen(ptx_out, "w");
            if (f) {
                fwrite(ptx, 1, strlen(ptx), f);
                fclose(f);
            }
            free(ptx);
        }
        printf("\nrc=%s\n", r == NVRTC_SUCCESS ? "0" : "FAIL");
        if (r != NVRTC_SUCCESS) failed = 1;
        fflush(stdout);
        free(log);
        nvrtcDestroyProgram(&prog);
        free(src);
    }
    return failed;
}
