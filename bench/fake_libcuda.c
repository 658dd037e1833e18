/*
 * fake_libcuda.c -- a stand-in libcuda.so.1 for CPU-only measurements and checks of the
 * host path (no GPU): N devices (FAKE_CUDA_DEVICES, default 1) of sm_90 with 132 SMs;
 * device memory is host memory tagged with its device (cuPointerGetAttribute answers
 * DEVICE_ORDINAL from that tag); contexts, streams, copies and memsets work; modules load
 * as dummies, tensor-map encodes and launches return at once (so D is never written, and
 * every check of a result fails). What it measures is the library's own host work with
 * the driver's costs taken out: see bench/results/2026-11-25-cpu-fakedriver.
 *
 *   cc -O2 -shared -fPIC -o /tmp/fakecuda/libcuda.so.1 bench/fake_libcuda.c -lpthread
 *   LD_LIBRARY_PATH=/tmp/fakecuda build/qgemm bench --host --shape 128x2112x7168
 *
 * FAKE_CUDA_ANY_POINTER=1: cuPointerGetAttribute answers device 0 for addresses it did not
 * allocate too (bench/host_cpu.py --fake-driver: CPU torch tensors posing as CUDA ones).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int CUresult;
typedef struct { int device; } fctx;
typedef struct { fctx *ctx; } fstream;
static fctx ctxs[8];
static __thread fctx *stack[64];
static __thread int depth;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t p; size_t n; int dev; } allocs[100000];
static int nallocs;
static int devices(void) { const char *v = getenv("FAKE_CUDA_DEVICES"); return v ? atoi(v) : 1; }
static CUresult ok(void) { return 0; }
static CUresult unsupported(void) { return 801; }
static CUresult f_init(unsigned f) { (void)f; return 0; }
static CUresult f_count(int *n) { *n = devices(); return 0; }
static CUresult f_get(int *d, int i) { if (i >= devices()) return 101; *d = i; return 0; }
static CUresult f_attr(int *v, int a, int d) { (void)d;
  switch (a) { case 75: *v = 9; break; case 76: *v = 0; break; case 16: *v = 132; break;
  case 97: *v = 232448; break; case 38: *v = 50<<20; break;
  case 36: *v = 3200000; break; case 37: *v = 6144; break; default: *v = 0; } return 0; }
static CUresult f_name(char *n, int len, int d) { snprintf(n, (size_t)len, "Fake H200 %d", d); return 0; }
static CUresult f_errstr(int r, const char **s) { (void)r; *s = "fake driver"; return 0; }
static CUresult f_retain(fctx **c, int d) { ctxs[d].device = d; *c = &ctxs[d]; return 0; }
static CUresult f_push(fctx *c) { if (!c) return 201; stack[depth++] = c; return 0; }
static CUresult f_pop(fctx **c) { if (!depth) return 201; fctx *t = stack[--depth]; if (c) *c = t; return 0; }
static fctx *cur(void) { return depth ? stack[depth - 1] : NULL; }
static CUresult f_alloc(uintptr_t *p, size_t n) {
  if (!cur()) return 201;
  void *m = aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  if (!m) return 2;
  pthread_mutex_lock(&lock);
  allocs[nallocs].p = (uintptr_t)m; allocs[nallocs].n = n; allocs[nallocs].dev = cur()->device; nallocs++;
  pthread_mutex_unlock(&lock);
  *p = (uintptr_t)m; return 0; }
static CUresult f_free(uintptr_t p) { (void)p; return 0; }  /* leak: keeps the table simple */
static CUresult f_ptrattr(void *out, int attr, uintptr_t p) {
  if (attr != 9) return 801;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nallocs; i++)
    if (p >= allocs[i].p && p < allocs[i].p + allocs[i].n + 1) {
      *(int *)out = allocs[i].dev; pthread_mutex_unlock(&lock); return 0; }
  pthread_mutex_unlock(&lock);
  /* FAKE_CUDA_ANY_POINTER=1: any other address is device 0's (host memory posing as CUDA
   * memory: bench/host_cpu.py --fake-driver runs the extension on CPU torch tensors) */
  const char *any = getenv("FAKE_CUDA_ANY_POINTER");
  if (any && any[0] == '1') { *(int *)out = 0; return 0; }
  return 1; }
static CUresult f_htod(uintptr_t d, const void *s, size_t n) { memcpy((void *)d, s, n); return 0; }
static CUresult f_dtoh(void *d, uintptr_t s, size_t n) { memcpy(d, (void *)s, n); return 0; }
static CUresult f_dtod(uintptr_t d, uintptr_t s, size_t n) { memcpy((void *)d, (void *)s, n); return 0; }
static CUresult f_memset(uintptr_t d, unsigned char v, size_t n) { memset((void *)d, v, n); return 0; }
static CUresult f_memseta(uintptr_t d, unsigned char v, size_t n, void *s) { (void)s; memset((void *)d, v, n); return 0; }
static CUresult f_screate(fstream **s, unsigned f) { (void)f; if (!cur()) return 201; *s = malloc(sizeof **s); (*s)->ctx = cur(); return 0; }
static CUresult f_sctx(fstream *s, fctx **c) { *c = s->ctx; return 0; }
static CUresult f_modload(void **m, const void *img) { (void)img; *m = malloc(1); return 0; }
static CUresult f_getfn(void **f, void *m, const char *n) { (void)m; (void)n; *f = malloc(1); return 0; }
static CUresult f_occ(int *n, void *f, const void *c) { (void)f; (void)c; *n = 66; return 0; }
static CUresult f_launch(const void *c, void *f, void **p, void **e) { (void)c; (void)f; (void)p; (void)e; return 0; }
CUresult cuGetProcAddress_v2(const char *sym, void **fn, int ver, unsigned long long flags, int *found) {
  (void)ver; (void)flags;
  static const struct { const char *n; void *f; } t[] = {
    {"cuInit", (void *)f_init}, {"cuDeviceGetCount", (void *)f_count}, {"cuDeviceGet", (void *)f_get},
    {"cuDeviceGetAttribute", (void *)f_attr}, {"cuDeviceGetName", (void *)f_name},
    {"cuGetErrorString", (void *)f_errstr}, {"cuDevicePrimaryCtxRetain", (void *)f_retain},
    {"cuDevicePrimaryCtxRelease", (void *)ok}, {"cuCtxPushCurrent", (void *)f_push},
    {"cuCtxPopCurrent", (void *)f_pop}, {"cuCtxSynchronize", (void *)ok}, {"cuMemAlloc", (void *)f_alloc},
    {"cuMemFree", (void *)f_free}, {"cuPointerGetAttribute", (void *)f_ptrattr},
    {"cuMemcpyHtoD", (void *)f_htod}, {"cuMemcpyDtoH", (void *)f_dtoh}, {"cuMemcpyDtoD", (void *)f_dtod},
    {"cuMemsetD8", (void *)f_memset}, {"cuMemsetD8Async", (void *)f_memseta},
    {"cuStreamCreate", (void *)f_screate}, {"cuStreamDestroy", (void *)ok},
    {"cuStreamSynchronize", (void *)ok}, {"cuStreamGetCtx", (void *)f_sctx},
    {"cuModuleLoadData", (void *)f_modload}, {"cuModuleUnload", (void *)ok},
    {"cuModuleGetFunction", (void *)f_getfn}, {"cuFuncSetAttribute", (void *)ok},
    {"cuOccupancyMaxActiveClusters", (void *)f_occ}, {"cuLaunchKernelEx", (void *)f_launch},
    {"cuTensorMapEncodeTiled", (void *)ok}, {"cuDriverGetVersion", (void *)ok},
  };
  void *f = (void *)unsupported;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) if (!strcmp(sym, t[i].n)) f = t[i].f;
  *fn = f; if (found) *found = 0; return 0;
}
