/*
 * indexer.c -- the indexer / HC family's entries in the extension:
 *
 *   mqa_logits(q, kv, kv_scales, weights, ks, ke, logits, clean, max_seqlen_k, stream, no_sync)
 *   paged_mqa_schedule(context_lens, schedule, max_context_len, stream, no_sync)
 *   paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule, logits,
 *                    max_context_len, clean, stream, no_sync)
 *   hc_prenorm(a, b, d, sqr_sum, num_splits, stream, no_sync)
 *
 * The tensors come through DLPack (tensor.c): the package allocates the
 * outputs (logits, schedule) and views 8-bit tensors as uint8 (PyTorch < 2.8
 * cannot export float8), so any 8-bit dtype is taken as e4m3 bytes. Shapes,
 * dtypes and strides are checked here against DeepGEMM's contract, then the
 * library (src/indexer.c) checks again and refuses what it cannot run, with
 * its own message.
 *
 * Invariants (as module.c's): metadata only, nothing read or written on the
 * device before the launch; every borrowed tensor released on every path.
 */
#include "qgpy.h"

#include <limits.h>
#include <string.h>

#define MAX_SLOTS 7

/* Borrow objs[0..n) (bit i of no_sync: slot i's producer is not asked to synchronize;
 * QGPY_TORCH_MODE: torch tensors only, on torch's current stream, set in *stream).
 * 1 = taken, 0 = not plain torch tensors in torch mode (answer NotImplemented), -1 = error. */
static int import_all(PyObject *const *objs, const char *const *names, int n,
                      unsigned long long *stream, unsigned no_sync, qgpy_tensor *t)
{
    if (no_sync & QGPY_TORCH_MODE)
        return qgpy_torch_take_all(objs, names, n, 0, stream, t);
    for (int i = 0; i < n; i++) {
        if (qgpy_tensor_take(objs[i], names[i], *stream, (no_sync >> i) & 1u, &t[i]) < 0)
            return -1;
    }
    return 1;
}

/* import_all's answer 0 as the entry's result: NotImplemented, nothing done. */
#define TAKE_OR_DECLINE(call)                                                                     \
    do {                                                                                          \
        const int taken_ = (call);                                                                \
        if (taken_ == 0)                                                                          \
            result = (Py_INCREF(Py_NotImplemented), Py_NotImplemented);                          \
        if (taken_ <= 0)                                                                          \
            goto done;                                                                            \
    } while (0)

static void release_all(qgpy_tensor *t, int n)
{
    for (int i = 0; i < n; i++)
        qgpy_tensor_release(&t[i]);
}

static int check_bytes(const qgpy_tensor *t)
{
    if (t->dtype.bits == 8 && t->dtype.lanes == 1)
        return 0;
    return qgpy_errorf(PyExc_ValueError, "qgemm: %s must have dtype float8_e4m3fn (or its bytes as "
                       "uint8), got %d-bit values", t->name, (int)t->dtype.bits);
}

/* The row stride of a 2-D view with a unit last stride (rows <= 1: `dflt`). */
static int row_stride(const qgpy_tensor *t, int dim, int64_t dflt, int64_t *ld)
{
    const int nd = (int)t->t->ndim;
    if (qgpy_dim(t, nd - 1) > 1 && qgpy_stride(t, nd - 1) != 1)
        return qgpy_errorf(PyExc_ValueError, "qgemm: %s must be contiguous along its last "
                           "dimension (unit stride)", t->name);
    *ld = qgpy_dim(t, dim) > 1 ? qgpy_stride(t, dim) : dflt;
    if (*ld < dflt && qgpy_dim(t, dim) <= 1)
        *ld = dflt;
    return 0;
}

/* Dense (C-contiguous) or ValueError. */
static int check_contiguous(const qgpy_tensor *t)
{
    int64_t want = 1;
    for (int i = (int)t->t->ndim - 1; i >= 0; i--) {
        if (qgpy_dim(t, i) > 1 && qgpy_stride(t, i) != want)
            return qgpy_errorf(PyExc_ValueError, "qgemm: %s must be contiguous", t->name);
        want *= qgpy_dim(t, i);
    }
    return 0;
}

static int check_devices(qgpy_tensor *t, int n, int *device)
{
    *device = -1;
    for (int i = 0; i < n; i++)
        if (t[i].t && qgpy_check_device(&t[i], device) < 0)
            return -1;
    return 0;
}

static int logits_dtype(const qgpy_tensor *t, int *bf16)
{
    if (t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1) {
        *bf16 = 0;
        return 0;
    }
    if (t->dtype.code == kDLBfloat && t->dtype.bits == 16 && t->dtype.lanes == 1) {
        *bf16 = 1;
        return 0;
    }
    return qgpy_errorf(PyExc_ValueError, "qgemm: %s must be float32 or bfloat16", t->name);
}

static int as_int(int64_t v, const char *what, int *out)
{
    if (v > INT_MAX)
        return qgpy_errorf(PyExc_ValueError, "qgemm: %s = %lld exceeds 2^31 - 1", what,
                           (long long)v);
    *out = (int)v;
    return 0;
}

static PyObject *finish(qg_status st)
{
    if (st != QG_SUCCESS)
        return qgpy_raise_status(st);
    Py_RETURN_NONE;
}

/* ---- mqa_logits ------------------------------------------------------------ */

PyObject *qgpy_mqa_logits(PyObject *self, PyObject *args)
{
    (void)self;
    enum { Q, KV, SC, W, KS, KE, L, N };
    static const char *const names[N] = {"q", "kv", "kv_scales", "weights",
                                         "cu_seq_len_k_start", "cu_seq_len_k_end", "logits"};
    PyObject *obj[N];
    int clean, max_seqlen_k;
    unsigned long long stream;
    unsigned no_sync;
    if (!PyArg_ParseTuple(args, "OOOOOOOiiKI:mqa_logits", &obj[Q], &obj[KV], &obj[SC], &obj[W],
                          &obj[KS], &obj[KE], &obj[L], &clean, &max_seqlen_k, &stream, &no_sync))
        return NULL;
    PyObject *result = NULL;
    qgpy_tensor t[N] = {{0}};
    qg_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    int device, bf16 = 0;
    TAKE_OR_DECLINE(import_all(obj, names, N, &stream, no_sync, t));
    if (check_devices(t, N, &device) < 0)
        goto done;
    if (qgpy_check_ndim(&t[Q], 3, "[seq_len, num_heads, head_dim]") < 0 ||
        qgpy_check_ndim(&t[KV], 2, "[seq_len_kv, head_dim]") < 0 ||
        qgpy_check_ndim(&t[SC], 1, "[seq_len_kv]") < 0 ||
        qgpy_check_ndim(&t[W], 2, "[seq_len, num_heads]") < 0 ||
        qgpy_check_ndim(&t[KS], 1, "[seq_len]") < 0 || qgpy_check_ndim(&t[KE], 1, "[seq_len]") < 0 ||
        qgpy_check_ndim(&t[L], 2, "[seq_len, columns]") < 0)
        goto done;
    if (check_bytes(&t[Q]) < 0 || check_bytes(&t[KV]) < 0 || qgpy_check_dtype(&t[SC], QGPY_F32) < 0 ||
        qgpy_check_dtype(&t[W], QGPY_F32) < 0 || qgpy_check_dtype(&t[KS], QGPY_I32) < 0 ||
        qgpy_check_dtype(&t[KE], QGPY_I32) < 0 || logits_dtype(&t[L], &bf16) < 0)
        goto done;
    if (as_int(qgpy_dim(&t[Q], 0), "seq_len", &a.seq_len) < 0 ||
        as_int(qgpy_dim(&t[KV], 0), "seq_len_kv", &a.seq_len_kv) < 0 ||
        as_int(qgpy_dim(&t[Q], 1), "num_heads", &a.heads) < 0 ||
        as_int(qgpy_dim(&t[Q], 2), "head_dim", &a.head_dim) < 0)
        goto done;
    if (qgpy_check_dim(&t[KV], 1, a.head_dim, "head_dim (q.shape[2])") < 0 ||
        qgpy_check_dim(&t[SC], 0, a.seq_len_kv, "seq_len_kv (kv.shape[0])") < 0 ||
        qgpy_check_dim(&t[W], 0, a.seq_len, "seq_len (q.shape[0])") < 0 ||
        qgpy_check_dim(&t[W], 1, a.heads, "num_heads (q.shape[1])") < 0 ||
        qgpy_check_dim(&t[KS], 0, a.seq_len, "seq_len (q.shape[0])") < 0 ||
        qgpy_check_dim(&t[KE], 0, a.seq_len, "seq_len (q.shape[0])") < 0 ||
        qgpy_check_dim(&t[L], 0, a.seq_len, "seq_len (q.shape[0])") < 0 ||
        qgpy_check_dim(&t[L], 1, max_seqlen_k > 0 ? max_seqlen_k : a.seq_len_kv,
                       max_seqlen_k > 0 ? "max_seqlen_k" : "seq_len_kv (kv.shape[0])") < 0)
        goto done;
    if (check_contiguous(&t[Q]) < 0 || check_contiguous(&t[SC]) < 0 ||
        check_contiguous(&t[KS]) < 0 || check_contiguous(&t[KE]) < 0 ||
        row_stride(&t[KV], 0, a.head_dim, &a.ld_kv) < 0 ||
        row_stride(&t[W], 0, a.heads, &a.ld_weights) < 0)
        goto done;
    const int64_t cols = qgpy_dim(&t[L], 1), per16 = bf16 ? 8 : 4;
    if (row_stride(&t[L], 0, (cols + per16 - 1) / per16 * per16, &a.ld_logits) < 0 ||
        qgpy_check_writable(&t[L]) < 0)
        goto done;
    for (int i = 0; i < N - 1; i++)
        if (qgpy_check_no_overlap(&t[L], &t[i]) < 0)
            goto done;
    a.q = qgpy_address(&t[Q]);
    a.kv = qgpy_address(&t[KV]);
    a.kv_scales = qgpy_address(&t[SC]);
    a.weights = qgpy_address(&t[W]);
    a.ks = qgpy_address(&t[KS]);
    a.ke = qgpy_address(&t[KE]);
    a.logits = qgpy_address(&t[L]);
    a.logits_bf16 = bf16;
    a.clean = clean ? 1 : 0;
    a.max_seqlen_k = max_seqlen_k;
    if (a.seq_len == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;
    qg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = qg_fp8_mqa_logits(ctx, &a, (struct CUstream_st *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    result = finish(st);
done:
    release_all(t, N);
    return result;
}

/* ---- the paged form --------------------------------------------------------- */

static int lens_args(qgpy_tensor *lens, qg_paged_mqa_logits_args *a)
{
    if (qgpy_check_ndim(lens, 2, "[batch_size, next_n]") < 0 ||
        qgpy_check_dtype(lens, QGPY_I32) < 0 || check_contiguous(lens) < 0 ||
        as_int(qgpy_dim(lens, 0), "batch_size", &a->batch) < 0 ||
        as_int(qgpy_dim(lens, 1), "next_n", &a->next_n) < 0)
        return -1;
    a->context_lens = qgpy_address(lens);
    return 0;
}

static int schedule_args(qgpy_tensor *s, qg_paged_mqa_logits_args *a)
{
    if (qgpy_check_ndim(s, 2, "[num_sms + 1, 2]") < 0 || qgpy_check_dtype(s, QGPY_I32) < 0 ||
        check_contiguous(s) < 0 || qgpy_check_dim(s, 1, 2, "2") < 0)
        return -1;
    if (qgpy_dim(s, 0) < 2 || qgpy_dim(s, 0) > 65537)
        return qgpy_errorf(PyExc_ValueError, "qgemm: schedule_meta must have num_sms + 1 rows "
                           "(num_sms >= 1), got %lld", (long long)qgpy_dim(s, 0));
    a->num_sms = (int)qgpy_dim(s, 0) - 1;
    a->schedule = qgpy_address(s);
    return 0;
}

PyObject *qgpy_paged_mqa_schedule(PyObject *self, PyObject *args)
{
    (void)self;
    enum { LENS, SCHED, N };
    static const char *const names[N] = {"context_lens", "schedule_meta"};
    PyObject *obj[N];
    int max_context_len;
    unsigned long long stream;
    unsigned no_sync;
    if (!PyArg_ParseTuple(args, "OOiKI:paged_mqa_schedule", &obj[LENS], &obj[SCHED],
                          &max_context_len, &stream, &no_sync))
        return NULL;
    PyObject *result = NULL;
    qgpy_tensor t[N] = {{0}};
    qg_paged_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    int device;
    TAKE_OR_DECLINE(import_all(obj, names, N, &stream, no_sync, t));
    if (check_devices(t, N, &device) < 0 ||
        lens_args(&t[LENS], &a) < 0 || schedule_args(&t[SCHED], &a) < 0 ||
        qgpy_check_writable(&t[SCHED]) < 0 || qgpy_check_no_overlap(&t[SCHED], &t[LENS]) < 0)
        goto done;
    a.max_context_len = max_context_len;
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;
    qg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = qg_paged_mqa_logits_schedule(ctx, &a, (struct CUstream_st *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    result = finish(st);
done:
    release_all(t, N);
    return result;
}

PyObject *qgpy_paged_mqa_logits(PyObject *self, PyObject *args)
{
    (void)self;
    enum { Q, KV, W, LENS, BT, SCHED, L, N };
    static const char *const names[N] = {"q", "kv_cache", "weights", "context_lens",
                                         "block_table", "schedule_meta", "logits"};
    PyObject *obj[N];
    int max_context_len, clean;
    unsigned long long stream;
    unsigned no_sync;
    if (!PyArg_ParseTuple(args, "OOOOOOOiiKI:paged_mqa_logits", &obj[Q], &obj[KV], &obj[W],
                          &obj[LENS], &obj[BT], &obj[SCHED], &obj[L], &max_context_len, &clean,
                          &stream, &no_sync))
        return NULL;
    PyObject *result = NULL;
    qgpy_tensor t[N] = {{0}};
    qg_paged_mqa_logits_args a;
    memset(&a, 0, sizeof a);
    int device, bf16 = 0;
    TAKE_OR_DECLINE(import_all(obj, names, N, &stream, no_sync, t));
    if (check_devices(t, N, &device) < 0 ||
        lens_args(&t[LENS], &a) < 0 || schedule_args(&t[SCHED], &a) < 0)
        goto done;
    if (qgpy_check_ndim(&t[Q], 4, "[batch_size, next_n, num_heads, head_dim]") < 0 ||
        qgpy_check_ndim(&t[KV], 4, "[num_blocks, block_kv, 1, head_dim + 4]") < 0 ||
        qgpy_check_ndim(&t[W], 2, "[batch_size * next_n, num_heads]") < 0 ||
        qgpy_check_ndim(&t[BT], 2, "[batch_size, max_blocks]") < 0 ||
        qgpy_check_ndim(&t[L], 2, "[batch_size * next_n, max_context_len]") < 0)
        goto done;
    if (check_bytes(&t[Q]) < 0 || check_bytes(&t[KV]) < 0 || qgpy_check_dtype(&t[W], QGPY_F32) < 0 ||
        qgpy_check_dtype(&t[BT], QGPY_I32) < 0 || logits_dtype(&t[L], &bf16) < 0)
        goto done;
    if (as_int(qgpy_dim(&t[Q], 2), "num_heads", &a.heads) < 0 ||
        as_int(qgpy_dim(&t[Q], 3), "head_dim", &a.head_dim) < 0 ||
        as_int(qgpy_dim(&t[KV], 0), "num_blocks", &a.num_blocks) < 0)
        goto done;
    const int64_t rows = (int64_t)a.batch * a.next_n;
    if (qgpy_check_dim(&t[Q], 0, a.batch, "batch_size (context_lens.shape[0])") < 0 ||
        qgpy_check_dim(&t[Q], 1, a.next_n, "next_n (context_lens.shape[1])") < 0 ||
        qgpy_check_dim(&t[KV], 1, 64, "block_kv 64 (SM90)") < 0 ||
        qgpy_check_dim(&t[KV], 2, 1, "1") < 0 ||
        qgpy_check_dim(&t[KV], 3, (int64_t)a.head_dim + 4, "head_dim + 4 (q.shape[3] + 4)") < 0 ||
        qgpy_check_dim(&t[W], 0, rows, "batch_size * next_n") < 0 ||
        qgpy_check_dim(&t[W], 1, a.heads, "num_heads (q.shape[2])") < 0 ||
        qgpy_check_dim(&t[BT], 0, a.batch, "batch_size (context_lens.shape[0])") < 0 ||
        qgpy_check_dim(&t[L], 0, rows, "batch_size * next_n") < 0)
        goto done;
    /* logits: [rows, max_context_len], or the padded buffer it is a view of (the
     * package's fast path passes the buffer and makes the view after the launch,
     * where its CPU time hides behind the kernel's); columns past max_context_len
     * are the buffer's, never read as results */
    if (max_context_len < 1) {
        qgpy_errorf(PyExc_ValueError, "qgemm: max_context_len must be >= 1, got %d",
                    max_context_len);
        goto done;
    }
    if (qgpy_dim(&t[L], 1) < max_context_len) {
        char buf[160];
        qgpy_errorf(PyExc_ValueError, "qgemm: logits has shape %s: its dimension 1 must be at "
                    "least max_context_len (%d), got %lld",
                    qgpy_shape_str(&t[L], buf, sizeof buf), max_context_len,
                    (long long)qgpy_dim(&t[L], 1));
        goto done;
    }
    /* the cache: blocks of 64 * (head_dim + 4) contiguous bytes, a stride apart */
    if (qgpy_dim(&t[KV], 0) > 0 &&
        (qgpy_stride(&t[KV], 3) != 1 || qgpy_stride(&t[KV], 1) != (int64_t)a.head_dim + 4)) {
        qgpy_errorf(PyExc_ValueError, "qgemm: kv_cache's blocks must be contiguous "
                    "([num_blocks, 64, 1, head_dim + 4] with only the block stride free)");
        goto done;
    }
    a.block_stride = qgpy_dim(&t[KV], 0) > 1 ? qgpy_stride(&t[KV], 0) : 0;
    /* The library reads block_stride 0 as "packed" (64 * (head_dim + 4)): blocks
     * of a cache at stride 0 (one block's memory, expanded) would be read past
     * the tensor's bytes. Any other stride is the library's to check. */
    if (qgpy_dim(&t[KV], 0) > 1 && a.block_stride == 0) {
        qgpy_errorf(PyExc_ValueError, "qgemm: kv_cache's blocks must not alias one another: "
                    "stride(0) = 0 with %lld blocks (pass a cache with a block stride of at "
                    "least 64 * (head_dim + 4) bytes)", (long long)qgpy_dim(&t[KV], 0));
        goto done;
    }
    if (check_contiguous(&t[Q]) < 0 || row_stride(&t[W], 0, a.heads, &a.ld_weights) < 0 ||
        row_stride(&t[BT], 0, qgpy_dim(&t[BT], 1), &a.block_table_ld) < 0)
        goto done;
    const int64_t per16 = bf16 ? 8 : 4;
    if (row_stride(&t[L], 0, ((int64_t)max_context_len + per16 - 1) / per16 * per16,
                   &a.ld_logits) < 0 ||
        qgpy_check_writable(&t[L]) < 0)
        goto done;
    for (int i = 0; i < N - 1; i++)
        if (qgpy_check_no_overlap(&t[L], &t[i]) < 0)
            goto done;
    a.q = qgpy_address(&t[Q]);
    a.kv_cache = qgpy_address(&t[KV]);
    a.weights = qgpy_address(&t[W]);
    a.block_table = qgpy_address(&t[BT]);
    a.logits = qgpy_address(&t[L]);
    a.max_context_len = max_context_len;
    a.logits_bf16 = bf16;
    a.clean = clean ? 1 : 0;
    if (a.batch == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;
    qg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = qg_fp8_paged_mqa_logits(ctx, &a, (struct CUstream_st *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    result = finish(st);
done:
    release_all(t, N);
    return result;
}

/* ---- hc_prenorm -------------------------------------------------------------- */

PyObject *qgpy_hc_prenorm(PyObject *self, PyObject *args)
{
    (void)self;
    enum { A, B, D, S, N };
    static const char *const names[N] = {"a", "b", "d", "sqr_sum"};
    PyObject *obj[N];
    int num_splits; /* 0: None (d [m, n], sqr_sum [m]) */
    unsigned long long stream;
    unsigned no_sync;
    if (!PyArg_ParseTuple(args, "OOOOiKI:hc_prenorm", &obj[A], &obj[B], &obj[D], &obj[S],
                          &num_splits, &stream, &no_sync))
        return NULL;
    PyObject *result = NULL;
    qgpy_tensor t[N] = {{0}};
    qg_hc_prenorm_args h;
    memset(&h, 0, sizeof h);
    int device;
    const int split = num_splits > 0;
    TAKE_OR_DECLINE(import_all(obj, names, N, &stream, no_sync, t));
    if (check_devices(t, N, &device) < 0)
        goto done;
    if (qgpy_check_ndim(&t[A], 2, "[m, k]") < 0 || qgpy_check_ndim(&t[B], 2, "[n, k]") < 0 ||
        qgpy_check_ndim(&t[D], split ? 3 : 2, split ? "[num_splits, m, n]" : "[m, n]") < 0 ||
        qgpy_check_ndim(&t[S], split ? 2 : 1, split ? "[num_splits, m]" : "[m]") < 0)
        goto done;
    if (qgpy_check_dtype(&t[A], QGPY_BF16) < 0 || qgpy_check_dtype(&t[B], QGPY_F32) < 0 ||
        qgpy_check_dtype(&t[D], QGPY_F32) < 0 || qgpy_check_dtype(&t[S], QGPY_F32) < 0)
        goto done;
    if (as_int(qgpy_dim(&t[A], 0), "m", &h.m) < 0 || as_int(qgpy_dim(&t[A], 1), "k", &h.k) < 0 ||
        as_int(qgpy_dim(&t[B], 0), "n", &h.n) < 0)
        goto done;
    if (qgpy_check_dim(&t[B], 1, h.k, "k (a.shape[1])") < 0 ||
        (split && (qgpy_check_dim(&t[D], 0, num_splits, "num_splits") < 0 ||
                   qgpy_check_dim(&t[S], 0, num_splits, "num_splits") < 0)) ||
        qgpy_check_dim(&t[D], split, h.m, "m (a.shape[0])") < 0 ||
        qgpy_check_dim(&t[D], split + 1, h.n, "n (b.shape[0])") < 0 ||
        qgpy_check_dim(&t[S], split, h.m, "m (a.shape[0])") < 0)
        goto done;
    if (row_stride(&t[A], 0, h.k, &h.lda) < 0 || row_stride(&t[B], 0, h.k, &h.ldb) < 0 ||
        row_stride(&t[D], split, h.n, &h.ldd) < 0 || check_contiguous(&t[S]) < 0)
        goto done;
    /* The splits' stride as it is: the library reads d_split_ld 0 as "packed"
     * (m * ldd) and checks any other value (>= m * ldd, even, <= 2^40). It used
     * to be passed as 0 whenever it was below m * ldd, so splits at stride 0
     * (one plane's memory, expanded) were written m * ldd elements apart, past
     * d's bytes; and m * ldd overflowed for a hostile ldd (UBSan,
     * tests/python/test_fuzz_extension.py). */
    if (split && num_splits > 1 && qgpy_dim(&t[D], 1) > 0) {
        h.d_split_ld = qgpy_stride(&t[D], 0);
        if (h.d_split_ld == 0) {
            qgpy_errorf(PyExc_ValueError, "qgemm: d's %d splits must not alias one another: "
                        "stride(0) = 0 (pass d [num_splits, m, n] with stride(0) >= m * "
                        "stride(1))", num_splits);
            goto done;
        }
    }
    if (qgpy_check_writable(&t[D]) < 0 || qgpy_check_writable(&t[S]) < 0 ||
        qgpy_check_no_overlap(&t[D], &t[A]) < 0 || qgpy_check_no_overlap(&t[D], &t[B]) < 0 ||
        qgpy_check_no_overlap(&t[S], &t[A]) < 0 || qgpy_check_no_overlap(&t[S], &t[B]) < 0 ||
        qgpy_check_no_overlap(&t[S], &t[D]) < 0)
        goto done;
    h.num_splits = split ? num_splits : 1;
    h.a = qgpy_address(&t[A]);
    h.b = qgpy_address(&t[B]);
    h.d = qgpy_address(&t[D]);
    h.sqr_sum = qgpy_address(&t[S]);
    if (h.m == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;
    qg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = qg_tf32_hc_prenorm_gemm(ctx, &h, (struct CUstream_st *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    result = finish(st);
done:
    release_all(t, N);
    return result;
}
