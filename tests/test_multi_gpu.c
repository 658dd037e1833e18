/*
 * test_multi_gpu.c -- issue 31: one process, two GPUs. Each test needs two
 * Hopper devices: it says "skipped: no GPU: ..." without any and "skipped:
 * one GPU: ..." with one, never passes silently.
 *
 *  gpu_multi_threads_own_devices
 *      two threads (a new one, and the test's own), each with its own context
 *      on its own device, run 1000 dense, 1000 contiguous and 1000 masked
 *      GEMMs at the same time (a barrier before the first call); every
 *      call's status is checked, the first and last six calls of each thread
 *      run on fresh random inputs with D poisoned and are checked against the
 *      fp64 reference, and so are the standing problems the calls between
 *      them wrote. The second thread has the first device's context current
 *      (as a framework may leave it) and launches on the legacy stream: the
 *      library must still launch on its own context's device and leave the
 *      thread's current context as it found it.
 *  gpu_multi_jit_cache_filled_by_both_devices
 *      a fresh disk cache; both devices' contexts compile the same kernel at
 *      the same moment (a barrier before qg_compile), then run it; the cache
 *      holds that kernel's whole entry and no temporary, and a third context
 *      loads it from disk and runs it.
 *  gpu_multi_num_sms_per_device
 *      qg_context_set_num_sms on one context changes neither the other
 *      device's context nor a second context on the same device; the
 *      configurations and the GEMMs of each follow their own setting.
 *  gpu_multi_pointers_of_another_device_rejected
 *      a context on one device given the other device's memory (all of it, or
 *      one pointer at a time: a, sfa, b, sfb, d, m_indices, masked_m) or the
 *      other device's stream: QG_ERROR_INVALID_ARGUMENT with a message naming
 *      the argument and both devices (src/fp8_gemm.c validate), and every D on
 *      both devices still poisoned; then the same arguments on the right
 *      context do run.
 *
 * Pass rule: diff < 1e-5 against the dequantized fp64 reference, no NaN,
 * every output written, nothing else touched (qgtk_check_passed).
 */
#include "qg_test.h"
#include "qgtk.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DIFF_BOUND 1e-5
#define CALLS_PER_KIND 1000
#define CHECKED_AT_EACH_END 6 /* calls checked on fresh inputs at the start and at the end */

/* ---- two devices ----------------------------------------------------------- */

/* The first two devices of compute capability 9.x into dev[]; how many were
 * found (0, 1 or 2), and into *visible how many CUDA devices there are. */
static int hopper_devices(int dev[2], int *visible) {
    const qg_driver *drv = NULL;
    int count = 0, found = 0;
    *visible = 0;
    if (qg__driver_load(&drv) != QG_SUCCESS || drv->cuDeviceGetCount(&count) != CUDA_SUCCESS)
        return 0;
    *visible = count;
    for (int i = 0; i < count && found < 2; i++) {
        CUdevice d;
        int major = 0;
        if (drv->cuDeviceGet(&d, i) == CUDA_SUCCESS &&
            drv->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) ==
                CUDA_SUCCESS &&
            major == 9)
            dev[found++] = i;
    }
    return found;
}

/* The skip lines of the issue: "no GPU" without a Hopper device, "one GPU"
 * with only one. */
#define NEED_TWO_GPUS(dev)                                                                  \
    do {                                                                                    \
        if (!qgtk_gpu_available()) SKIP("%s", qgtk_gpu_status_line());                      \
        int visible_;                                                                       \
        if (hopper_devices(dev, &visible_) < 2)                                             \
            SKIP("one GPU: %s; this test needs two Hopper devices (%d CUDA device(s) "     \
                 "visible)", qgtk_gpu_status_line(), visible_);                            \
    } while (0)

/* ---- the three kinds, small enough for the CPU reference --------------------- */

static const qg_gemm_kind kinds[3] = {QG_GEMM_DENSE, QG_GEMM_GROUPED_CONTIGUOUS,
                                      QG_GEMM_GROUPED_MASKED};
static const char *const kind_names[3] = {"dense", "contiguous", "masked"};

static qgtk_problem_spec kind_spec(int kind, uint64_t seed) {
    switch (kind) {
    case 0:
        return (qgtk_problem_spec){.kind = QG_GEMM_DENSE, .m = 200, .n = 384, .k = 640,
                                   .num_groups = 1, .seed = seed, .ldd_pad = 8,
                                   .scale_spread = 3};
    case 1:
        return (qgtk_problem_spec){.kind = QG_GEMM_GROUPED_CONTIGUOUS, .n = 256, .k = 512,
                                   .num_groups = 4, .expected_m = 96, .seed = seed,
                                   .scale_spread = 3};
    default:
        return (qgtk_problem_spec){.kind = QG_GEMM_GROUPED_MASKED, .m = 128, .n = 256, .k = 512,
                                   .num_groups = 4, .seed = seed, .masked_extremes = true,
                                   .scale_spread = 3};
    }
}

/* ---- two threads, two devices ------------------------------------------------ */

typedef struct {
    /* in */
    int device;
    CUcontext foreign;          /* made current on the thread first (NULL: none) */
    bool legacy_stream;         /* launch on the legacy stream instead of a stream of ours */
    pthread_barrier_t *start;
    /* out */
    int calls, checked;
    double worst_diff;
    bool ok;
    char why[768];
} worker;

/* Fresh inputs, D poisoned, one call, checked. */
static bool checked_call(worker *w, qg_context *ctx, CUstream stream, int kind, uint64_t seed) {
    const qgtk_problem_spec spec = kind_spec(kind, seed);
    qgtk_problem_data *p = NULL;
    qgtk_check_result res;
    char desc[256];
    qg_status st = qgtk_problem_create(&p, ctx, &spec);
    if (st == QG_SUCCESS) st = qgtk_problem_run_check(ctx, p, NULL, stream, &res);
    bool ok = st == QG_SUCCESS && qgtk_check_passed(&res, DIFF_BOUND);
    if (!ok)
        snprintf(w->why, sizeof w->why, "device %d, call %d (%s, seed %llu): %s", w->device,
                 w->calls, kind_names[kind], (unsigned long long)seed,
                 st != QG_SUCCESS ? qg_last_error() : qgtk_check_describe(&res, desc, sizeof desc));
    else if (res.group_diff_max > w->worst_diff)
        w->worst_diff = res.group_diff_max;
    qgtk_problem_free(p);
    w->calls++;
    w->checked++;
    return ok;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    const qg_driver *drv = NULL;
    qg_context *ctx = NULL;
    CUstream own = NULL;
    qgtk_problem_data *standing[3] = {NULL, NULL, NULL};
    w->ok = false;
    w->worst_diff = 0;
    bool pushed = false;
    qg_status st = qgtk_gpu_session_open_on(w->device, &ctx, &own);
    if (st == QG_SUCCESS && w->foreign) {
        qg__context_cuda(ctx, &drv, NULL, NULL);
        pushed = drv->cuCtxPushCurrent(w->foreign) == CUDA_SUCCESS;
        if (!pushed) st = qg__fail(QG_ERROR_CUDA, "cannot make the other device's context current");
    }
    const CUstream stream = w->legacy_stream ? NULL : own;
    /* The calls between the checked ones: one standing problem per kind,
     * poisoned once, so that its untouched rows can be checked at the end. */
    for (int k = 0; k < 3 && st == QG_SUCCESS; k++) {
        const qgtk_problem_spec spec = kind_spec(k, 3100 + 10 * (uint64_t)w->device + (uint64_t)k);
        if ((st = qgtk_problem_create(&standing[k], ctx, &spec)) == QG_SUCCESS)
            st = qgtk_problem_poison(ctx, standing[k], stream);
    }
    if (st != QG_SUCCESS)
        snprintf(w->why, sizeof w->why, "device %d, setting up: %s", w->device, qg_last_error());
    pthread_barrier_wait(w->start); /* both threads call it, whatever happened */
    if (st != QG_SUCCESS) goto done;

    const int total = 3 * CALLS_PER_KIND;
    for (int i = 0; i < total; i++) {
        const int kind = i % 3;
        if (i < CHECKED_AT_EACH_END || i >= total - CHECKED_AT_EACH_END) {
            if (!checked_call(w, ctx, stream, kind, 31000 + 10000 * (uint64_t)w->device + (uint64_t)i))
                goto done;
            continue;
        }
        qg_gemm_args args = qgtk_problem_args(standing[kind]);
        if ((st = qgtk_gemm_launch(ctx, kinds[kind], &args, NULL, stream)) != QG_SUCCESS) {
            snprintf(w->why, sizeof w->why, "device %d, call %d (%s): status %d: %s", w->device,
                     i, kind_names[kind], (int)st, qg_last_error());
            goto done;
        }
        w->calls++;
    }
    /* The standing problems' D holds what the last unchecked call of each
     * kind wrote (the same inputs every time). */
    for (int k = 0; k < 3; k++) {
        qgtk_check_result res;
        char desc[256];
        st = qgtk_problem_check(ctx, standing[k], &res);
        if (st != QG_SUCCESS || !qgtk_check_passed(&res, DIFF_BOUND)) {
            snprintf(w->why, sizeof w->why, "device %d, the unchecked %s calls left: %s",
                     w->device, kind_names[k],
                     st != QG_SUCCESS ? qg_last_error() : qgtk_check_describe(&res, desc, sizeof desc));
            goto done;
        }
    }
    w->ok = true;
done:
    for (int k = 0; k < 3; k++) qgtk_problem_free(standing[k]);
    if (pushed) {
        /* The thread's own context must be where it was. */
        CUcontext popped = NULL;
        drv->cuCtxPopCurrent(&popped);
        if (w->ok && popped != w->foreign) {
            snprintf(w->why, sizeof w->why,
                     "device %d: the calls left another CUDA context current on the thread",
                     w->device);
            w->ok = false;
        }
    }
    qgtk_gpu_session_close(ctx, own);
    return NULL;
}

TEST(gpu_multi_threads_own_devices) {
    int dev[2];
    NEED_TWO_GPUS(dev);
    /* The first device's primary context, to be current on the second thread. */
    qg_context *first = NULL;
    CHECK(qg_context_create(&first, dev[0]) == QG_SUCCESS, "%s", qg_last_error());
    CUcontext foreign = NULL;
    CHECK(qg__context_cuda(first, NULL, &foreign, NULL), "no CUDA context");

    pthread_barrier_t start;
    CHECK(pthread_barrier_init(&start, NULL, 2) == 0, "pthread_barrier_init");
    worker w[2] = {{.device = dev[0], .start = &start},
                   {.device = dev[1], .foreign = foreign, .legacy_stream = true, .start = &start}};
    /* The first device's worker on a thread of its own, the second's on this one. */
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, worker_main, &w[0]) == 0, "pthread_create");
    worker_main(&w[1]);
    pthread_join(thread, NULL);
    pthread_barrier_destroy(&start);
    qg_context_destroy(first);
    for (int i = 0; i < 2; i++)
        printf("    device %d (%s, %s): %d calls, %d checked on fresh inputs, worst group diff "
               "%.2g%s%s\n", w[i].device, w[i].foreign ? "the other device's context current" :
               "no context current", w[i].legacy_stream ? "legacy stream" : "own stream",
               w[i].calls, w[i].checked, w[i].worst_diff, w[i].ok ? "" : ": FAIL ", w[i].why);
    CHECK(w[0].ok && w[1].ok, "%s", !w[0].ok ? w[0].why : w[1].why);
    CHECK(w[0].calls == 3 * CALLS_PER_KIND && w[1].calls == 3 * CALLS_PER_KIND,
          "%d and %d calls", w[0].calls, w[1].calls);
    PASS();
}

/* ---- one kernel compiled by both devices at once -------------------------- */

typedef struct {
    qg_context *ctx;
    CUstream stream;
    const qg_problem *prob;
    pthread_barrier_t *start; /* NULL: compile at once */
    uint64_t seed;
    qg_status compiled;
    qg_kernel_info info;
    char why[512];
    bool ok;
} compiler;

static void *compiler_main(void *arg) {
    compiler *c = arg;
    if (c->start) pthread_barrier_wait(c->start);
    c->compiled = qg_compile(c->ctx, c->prob, NULL, &c->info);
    c->ok = false;
    if (c->compiled != QG_SUCCESS) {
        snprintf(c->why, sizeof c->why, "qg_compile: %s", qg_last_error());
        return NULL;
    }
    const qgtk_problem_spec spec = {.kind = QG_GEMM_DENSE, .m = c->prob->m, .n = c->prob->n,
                                    .k = c->prob->k, .num_groups = 1, .seed = c->seed,
                                    .scale_spread = 3};
    qgtk_problem_data *p = NULL;
    qgtk_check_result res;
    char desc[256];
    qg_status st = qgtk_problem_create(&p, c->ctx, &spec);
    if (st == QG_SUCCESS) st = qgtk_problem_run_check(c->ctx, p, NULL, c->stream, &res);
    c->ok = st == QG_SUCCESS && qgtk_check_passed(&res, DIFF_BOUND);
    if (!c->ok)
        snprintf(c->why, sizeof c->why, "the GEMM: %s",
                 st != QG_SUCCESS ? qg_last_error() : qgtk_check_describe(&res, desc, sizeof desc));
    qgtk_problem_free(p);
    return NULL;
}

TEST(gpu_multi_jit_cache_filled_by_both_devices) {
    int dev[2];
    NEED_TWO_GPUS(dev);
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/qgemm-test-multi.XXXXXX");
    CHECK(mkdtemp(dir), "mkdtemp");
    char *old_dir = getenv("QGEMM_CACHE_DIR") ? strdup(getenv("QGEMM_CACHE_DIR")) : NULL;
    setenv("QGEMM_CACHE_DIR", dir, 1); /* before the threads: setenv is not thread-safe */

    const qg_problem prob = {QG_GEMM_DENSE, 320, 1664, 1408, 1, 0, 0};
    pthread_barrier_t start;
    CHECK(pthread_barrier_init(&start, NULL, 2) == 0, "pthread_barrier_init");
    compiler c[2];
    memset(c, 0, sizeof c);
    int opened = 0;
    for (int i = 0; i < 2; i++) {
        c[i].prob = &prob;
        c[i].start = &start;
        c[i].seed = 3150 + (uint64_t)i;
        opened += qgtk_gpu_session_open_on(dev[i], &c[i].ctx, &c[i].stream) == QG_SUCCESS;
    }
    bool threads_ok = false;
    pthread_t thread;
    if (opened == 2 && pthread_create(&thread, NULL, compiler_main, &c[0]) == 0) {
        compiler_main(&c[1]); /* the second device on this thread */
        pthread_join(thread, NULL);
        threads_ok = true;
    }
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2; i++) qgtk_gpu_session_close(c[i].ctx, c[i].stream);

    /* What the cache holds: the kernel's entry, no temporary left over. */
    int entries = 0, temporaries = 0;
    bool has_key = false;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (strstr(e->d_name, ".tmp.")) temporaries++;
        else if (strstr(e->d_name, ".cubin")) entries++;
        has_key |= strncmp(e->d_name, c[0].info.key, 64) == 0 && strstr(e->d_name, ".cubin");
    }
    if (d) closedir(d);

    /* A new context reads it from disk and runs it. */
    compiler third;
    memset(&third, 0, sizeof third);
    third.prob = &prob;
    third.seed = 3152;
    bool third_ok = false;
    if (qgtk_gpu_session_open_on(dev[0], &third.ctx, &third.stream) == QG_SUCCESS) {
        compiler_main(&third); /* no barrier: third.start is NULL */
        third_ok = third.ok;
    }
    qgtk_gpu_session_close(third.ctx, third.stream);

    if (old_dir) setenv("QGEMM_CACHE_DIR", old_dir, 1);
    else unsetenv("QGEMM_CACHE_DIR");
    free(old_dir);
    qgtk_remove_tree(dir);

    CHECK(opened == 2 && threads_ok, "opening both devices: %s", qg_last_error());
    for (int i = 0; i < 2; i++)
        printf("    device %d: qg_compile %s (cache_hit %d, %.0f ms), GEMM %s%s\n", dev[i],
               c[i].compiled == QG_SUCCESS ? "ok" : "FAILED", c[i].info.cache_hit,
               c[i].info.compile_ms, c[i].ok ? "correct" : "FAILED: ", c[i].ok ? "" : c[i].why);
    printf("    cache: %d entries, %d temporaries; a third context: cache_hit %d, GEMM %s\n",
           entries, temporaries, third.info.cache_hit, third_ok ? "correct" : third.why);
    CHECK(c[0].ok && c[1].ok, "%s", !c[0].ok ? c[0].why : c[1].why);
    CHECK(strcmp(c[0].info.key, c[1].info.key) == 0, "two devices, two keys: %s and %s",
          c[0].info.key, c[1].info.key);
    /* fresh contexts have nothing in memory: each compiled, or read the
     * other's entry from disk */
    CHECK(c[0].info.cache_hit != 1 && c[1].info.cache_hit != 1, "a memory hit in a fresh context");
    CHECK(has_key && temporaries == 0, "the cache holds %s the kernel's entry and %d temporaries",
          has_key ? "" : "not", temporaries);
    CHECK(third_ok && third.info.cache_hit == 2, "a third context: cache_hit %d (2 = disk): %s",
          third.info.cache_hit, third.why);
    PASS();
}

/* ---- qg_context_set_num_sms, per context ------------------------------------ */

TEST(gpu_multi_num_sms_per_device) {
    int dev[2];
    NEED_TWO_GPUS(dev);
    qg_context *ctx[3] = {NULL, NULL, NULL}; /* device 0, device 1, device 0 again */
    CUstream stream[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        CHECK(qgtk_gpu_session_open_on(dev[i == 1], &ctx[i], &stream[i]) == QG_SUCCESS, "%s", qg_last_error());
    int sms[3];
    for (int i = 0; i < 3; i++) {
        qg_device_props props;
        CHECK(qg_context_get_props(ctx[i], &props) == QG_SUCCESS, "%s", qg_last_error());
        sms[i] = props.sm_count;
        CHECK(qg_context_get_num_sms(ctx[i]) == sms[i], "context %d starts with %d of %d SMs", i,
              qg_context_get_num_sms(ctx[i]), sms[i]);
    }
    const int half = sms[0] / 2, third = sms[1] / 3;
    CHECK(qg_context_set_num_sms(ctx[0], half) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qg_context_get_num_sms(ctx[0]) == half, "set %d, got %d", half,
          qg_context_get_num_sms(ctx[0]));
    CHECK(qg_context_get_num_sms(ctx[1]) == sms[1], "the other device's context changed to %d",
          qg_context_get_num_sms(ctx[1]));
    CHECK(qg_context_get_num_sms(ctx[2]) == sms[2],
          "a second context on the same device changed to %d", qg_context_get_num_sms(ctx[2]));
    CHECK(qg_context_set_num_sms(ctx[1], third) == QG_SUCCESS, "%s", qg_last_error());
    CHECK(qg_context_get_num_sms(ctx[0]) == half, "setting device %d changed device %d's to %d",
          dev[1], dev[0], qg_context_get_num_sms(ctx[0]));

    /* The configurations follow each context's own limit (a problem of many
     * tiles, so that an unlimited grid takes every SM it is given). */
    const qg_problem big = {QG_GEMM_DENSE, 4096, 7168, 2048, 1, 0, 0};
    const int limit[3] = {half, third, sms[2]};
    for (int i = 0; i < 3; i++) {
        qg_config cfg;
        CHECK(qg_select_config(ctx[i], &big, &cfg) == QG_SUCCESS, "%s", qg_last_error());
        printf("    context %d (device %d): num_sms %d, the configuration's grid %d\n", i,
               dev[i == 1], qg_context_get_num_sms(ctx[i]), cfg.num_sms);
        CHECK(cfg.num_sms <= limit[i], "context %d: grid %d over its limit %d", i, cfg.num_sms,
              limit[i]);
        if (i == 2)
            CHECK(cfg.num_sms > half, "context 2 (no limit): grid %d, as if limited to %d",
                  cfg.num_sms, half);
    }
    /* And each one's GEMMs are right under its own limit. */
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 3; k++) {
            const qgtk_problem_spec spec = kind_spec(k, 3200 + 10 * (uint64_t)i + (uint64_t)k);
            qgtk_problem_data *p = NULL;
            qgtk_check_result res;
            char desc[256];
            CHECK(qgtk_problem_create(&p, ctx[i], &spec) == QG_SUCCESS, "%s", qg_last_error());
            qg_status st = qgtk_problem_run_check(ctx[i], p, NULL, stream[i], &res);
            qgtk_problem_free(p);
            CHECK(st == QG_SUCCESS, "context %d, %s: %s", i, kind_names[k], qg_last_error());
            CHECK(qgtk_check_passed(&res, DIFF_BOUND), "context %d, %s: %s", i, kind_names[k],
                  qgtk_check_describe(&res, desc, sizeof desc));
        }
    }
    CHECK(qg_context_set_num_sms(ctx[0], 0) == QG_SUCCESS && qg_context_get_num_sms(ctx[0]) == sms[0],
          "0 must restore all SMs");
    CHECK(qg_context_get_num_sms(ctx[1]) == third, "restoring device %d changed device %d's",
          dev[0], dev[1]);
    for (int i = 0; i < 3; i++) qgtk_gpu_session_close(ctx[i], stream[i]);
    PASS();
}

/* ---- memory and streams of the other device ---------------------------------- */

/* Every D of both devices still holds the poison. */
static bool all_untouched(qg_context *const ctx[2], qgtk_problem_data *const p[2][3], char *why,
                          size_t len) {
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++) {
            qgtk_check_result res;
            if (qgtk_problem_check(ctx[d], p[d][k], &res) != QG_SUCCESS) {
                snprintf(why, len, "checking %s on context %d: %s", kind_names[k], d, qg_last_error());
                return false;
            }
            if (res.unwritten_count != res.checked || res.modified_count != 0) {
                snprintf(why, len, "%s D of context %d was written: %lld of %lld elements changed",
                         kind_names[k], d, (long long)(res.checked - res.unwritten_count),
                         (long long)res.checked);
                return false;
            }
        }
    return true;
}

TEST(gpu_multi_pointers_of_another_device_rejected) {
    int dev[2];
    NEED_TWO_GPUS(dev);
    qg_context *ctx[2];
    CUstream stream[2];
    for (int d = 0; d < 2; d++)
        CHECK(qgtk_gpu_session_open_on(dev[d], &ctx[d], &stream[d]) == QG_SUCCESS, "%s", qg_last_error());
    /* The same problems on both devices (same seeds: same shapes and layouts). */
    qgtk_problem_data *p[2][3];
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++) {
            const qgtk_problem_spec spec = kind_spec(k, 3300 + (uint64_t)k);
            CHECK(qgtk_problem_create(&p[d][k], ctx[d], &spec) == QG_SUCCESS, "%s", qg_last_error());
            CHECK(qgtk_problem_poison(ctx[d], p[d][k], stream[d]) == QG_SUCCESS, "%s",
                  qg_last_error());
        }
    int cases = 0;
    char want[160], why[512];
    for (int k = 0; k < 3; k++) {
        const qg_gemm_args own = qgtk_problem_args(p[0][k]), other = qgtk_problem_args(p[1][k]);
        /* all of the other device's memory, then one pointer at a time */
        static const char *const names[] = {"a", "sfa", "b", "sfb", "d", "m_indices", "masked_m"};
        for (int which = -1; which < 7; which++) {
            qg_gemm_args args = which < 0 ? other : own;
            switch (which) {
            case 0: args.a = other.a; break;
            case 1: args.sfa = other.sfa; break;
            case 2: args.b = other.b; break;
            case 3: args.sfb = other.sfb; break;
            case 4: args.d = other.d; break;
            case 5: if (k != 1) continue; args.m_indices = other.m_indices; break;
            case 6: if (k != 2) continue; args.masked_m = other.masked_m; break;
            default: break;
            }
            const qg_status st = qgtk_gemm_launch(ctx[0], kinds[k], &args, NULL, stream[0]);
            /* the first pointer validate() looks at is a */
            snprintf(want, sizeof want, "args->%s is memory of device %d; the context is on device %d",
                     names[which < 0 ? 0 : which], dev[1], dev[0]);
            CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), want),
                  "%s, %s of device %d: status %d, message \"%s\" (wanted \"%s\")", kind_names[k],
                  which < 0 ? "every pointer" : names[which], dev[1], (int)st, qg_last_error(), want);
            cases++;
        }
        /* the other device's stream */
        qg_gemm_args args = own;
        qg_status st = qgtk_gemm_launch(ctx[0], kinds[k], &args, NULL, stream[1]);
        CHECK(st == QG_ERROR_INVALID_ARGUMENT && strstr(qg_last_error(), "stream belongs to another"),
              "%s on device %d's stream: status %d (%s)", kind_names[k], dev[1], (int)st,
              qg_last_error());
        cases++;
    }
    CHECK(all_untouched(ctx, p, why, sizeof why), "%s", why);
    printf("    %d calls with the other device's memory or stream rejected, every D untouched\n",
           cases);
    /* The same arguments on their own device's context do run (so the check
     * above could have failed). */
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++) {
            qgtk_check_result res;
            char desc[256];
            CHECK(qgtk_problem_run_check(ctx[d], p[d][k], NULL, stream[d], &res) == QG_SUCCESS,
                  "%s", qg_last_error());
            CHECK(qgtk_check_passed(&res, DIFF_BOUND), "%s on device %d: %s", kind_names[k],
                  dev[d], qgtk_check_describe(&res, desc, sizeof desc));
            qgtk_problem_free(p[d][k]);
        }
    for (int d = 0; d < 2; d++) qgtk_gpu_session_close(ctx[d], stream[d]);
    PASS();
}
