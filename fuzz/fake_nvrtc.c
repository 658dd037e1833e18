/*
 * fake_nvrtc.c -- a stand-in libnvrtc.so.13 for `make fuzz` (fuzz/run.sh
 * builds it and points QGEMM_NVRTC_DIR at it, which src/nvrtc.c tries first).
 *
 * Why: fuzz_family drives the compile entry points (qg_compile*,
 * qg_bf16_compile, qg_indexer_compile, qg_cast_compile) on an offline
 * context, where a request that passes validation really compiles -- seconds
 * of NVRTC per new key, which would stall the fuzzer (libFuzzer -timeout) and
 * fill the disk cache. This library has every entry point src/nvrtc.c
 * resolves; creating a program fails, so such a request ends at once in
 * QG_ERROR_COMPILE with the library's "nvrtcCreateProgram failed" message,
 * after the whole host-side path (validation, planning, source, cache key).
 * Plain C, no sanitizer: it is dlopen'ed.
 */
#include <stddef.h>

typedef int nvrtcResult; /* NVRTC_SUCCESS 0; 4 = NVRTC_ERROR_PROGRAM_CREATION_FAILURE */
typedef struct fake_program *nvrtcProgram;

#define FAKE_FAIL 4

nvrtcResult nvrtcVersion(int *major, int *minor) {
    *major = 13, *minor = 0;
    return 0;
}
const char *nvrtcGetErrorString(nvrtcResult r) {
    (void)r;
    return "fake NVRTC of make fuzz (fuzz/fake_nvrtc.c): compiles nothing";
}
nvrtcResult nvrtcCreateProgram(nvrtcProgram *p, const char *src, const char *name, int n,
                               const char *const *headers, const char *const *names) {
    (void)src, (void)name, (void)n, (void)headers, (void)names;
    *p = NULL;
    return FAKE_FAIL;
}
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *p) { (void)p; return 0; }
nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int n, const char *const *o) {
    (void)p, (void)n, (void)o;
    return FAKE_FAIL;
}
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t *n) { (void)p; *n = 1; return 0; }
nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char *log) { (void)p; log[0] = 0; return 0; }
nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *n) { (void)p; *n = 0; return FAKE_FAIL; }
nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *ptx) { (void)p, (void)ptx; return FAKE_FAIL; }
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t *n) { (void)p; *n = 0; return FAKE_FAIL; }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char *c) { (void)p, (void)c; return FAKE_FAIL; }
