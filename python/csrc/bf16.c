/*
 * bf16.c -- the BF16 GEMM family's entry in the extension: bf16_gemm(kind,
 * a, b, d, c, idx, expected_m, ks, stream, no_sync). The tensors come
 * through DLPack (tensor.c) as the logical operands A [m, k] (masked and
 * batched [G, m, k]; k-grouped [sum K, m]), B [n, k] ([G, n, k]; k-grouped
 * [sum K, n]) and D (batched: [G, m, n], each operand's batch stride its
 * stride(0), any value: qg_batched_bf16_gemm; batch sums: d [splits, m, n]
 * FP32 packed, qg_bf16_gemm_batch_sums; the reduced batch sum: d [m, n] bf16
 * or FP32, c None / d / FP32 [m, n], idx the workspace (int32, 1-D, its
 * counters zeroed by the caller), expected_m the splits:
 * qg_bf16_gemm_batch_sum); each operand's major is read from its strides (the
 * package passes DeepGEMM's transposed arguments as views, so NT/NN/TN/TT
 * are one call), then checked and handed to the library
 * (qg_bf16_gemm_args). The library checks again and refuses what it cannot
 * run, with its own message.
 *
 * Invariants (as module.c's): metadata only, nothing read or written on the
 * device before the launch; every borrowed tensor released on every path.
 */
#include "qgpy.h"

#include <limits.h>
#include <string.h>

enum { B_A, B_B, B_D, B_C, B_IDX, B_SLOTS };
static const char *const names[B_SLOTS] = {"a", "b", "d", "c", "idx"};

/* A 2-D view (dims i, j of t) as a matrix with one unit stride: K-major when
 * dimension j (K) is contiguous, MN-major when dimension i is; *ld the other
 * stride. ValueError when neither is 1. */
static int major_of(const qgpy_tensor *t, int i, int j, qg_major *major, int64_t *ld,
                    const char *what)
{
    const int64_t si = qgpy_stride(t, i), sj = qgpy_stride(t, j);
    const int64_t di = qgpy_dim(t, i), dj = qgpy_dim(t, j);
    if (sj == 1 || dj == 1) {
        *major = QG_MAJOR_K;
        *ld = di <= 1 && si < dj ? dj : si;
        return 0;
    }
    if (si == 1 || di == 1) {
        *major = QG_MAJOR_MN;
        *ld = dj <= 1 && sj < di ? di : sj;
        return 0;
    }
    char buf[96];
    return qgpy_errorf(PyExc_ValueError,
                       "qgemm: %s must have a unit stride in one of its last two dimensions "
                       "(K-major or %s-major), got strides %s", t->name, what,
                       qgpy_strides_str(t, buf, sizeof buf));
}

/* ValueError unless t's groups are packed: stride(0) == rows x ld. The product
 * is checked for overflow (a hostile ld near 2^63: UBSan, found by
 * tests/python/test_fuzz_extension.py); one past 2^63 matches no stride. */
static int check_packed(const qgpy_tensor *t, int64_t rows, int64_t ld, const char *what)
{
    int64_t want;
    const int overflow = __builtin_mul_overflow(rows, ld, &want);
    if (!overflow && qgpy_stride(t, 0) == want)
        return 0;
    if (overflow)
        return qgpy_errorf(PyExc_ValueError, "qgemm: %s's groups must be packed (stride(0) = "
                           "%s), but %lld x %lld is past 2^63", t->name, what, (long long)rows,
                           (long long)ld);
    return qgpy_errorf(PyExc_ValueError, "qgemm: %s's groups must be packed (stride(0) = %s "
                       "= %lld), got %lld", t->name, what, (long long)want,
                       (long long)qgpy_stride(t, 0));
}

static int parse_ks(PyObject *obj, int32_t **ks, int *count)
{
    *ks = NULL;
    *count = 0;
    if (obj == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(obj, "qgemm: ks must be a sequence of ints");
    if (!seq)
        return -1;
    const Py_ssize_t g = PySequence_Fast_GET_SIZE(seq);
    if (g < 1 || g > 4096) {
        Py_DECREF(seq);
        return qgpy_errorf(PyExc_ValueError, "qgemm: ks must hold 1..4096 group sizes, got %zd", g);
    }
    *ks = PyMem_Malloc((size_t)g * sizeof **ks);
    if (!*ks) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < g; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        (*ks)[i] = v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
    }
    Py_DECREF(seq);
    *count = (int)g;
    return 0;
}

/* The library's arguments of one call from its borrowed tensors. */
static int bf16_args(int kind, qgpy_tensor t[B_SLOTS], int expected_m, const int32_t *ks,
                     int num_ks, qg_bf16_gemm_args *ga, int64_t batch_strides[3], int *device,
                     void **ws, size_t *ws_bytes)
{
    memset(ga, 0, sizeof *ga);
    *ws = NULL;
    *ws_bytes = 0;
    const int sums = kind == (int)QG_GEMM_BF16_BATCH_SUMS; /* d [splits, m, n] */
    const int sum1 = kind == (int)QG_GEMM_BF16_BATCH_SUM;  /* d [m, n], idx the workspace */
    const int batched = kind == (int)QG_GEMM_BF16_BATCHED || sums || sum1;
    const int masked = kind == QG_GEMM_GROUPED_MASKED || batched, kg = kind == QG_GEMM_K_GROUPED;
    const int m_grouped = kind == QG_GEMM_GROUPED_CONTIGUOUS || kind == QG_GEMM_GROUPED_PSUM;
    *device = -1;
    for (int i = 0; i < B_SLOTS; i++)
        if (t[i].t && qgpy_check_device(&t[i], device) < 0)
            return -1;
    if (qgpy_check_dtype(&t[B_A], QGPY_BF16) < 0 || qgpy_check_dtype(&t[B_B], QGPY_BF16) < 0)
        return -1;
    const int d_fp32 = t[B_D].t->dtype.code == kDLFloat && t[B_D].t->dtype.bits == 32;
    if (!d_fp32 && qgpy_check_dtype(&t[B_D], QGPY_BF16) < 0)
        return -1;
    if (t[B_C].t && qgpy_check_dtype(&t[B_C], d_fp32 ? QGPY_F32 : QGPY_BF16) < 0)
        return -1;
    if (t[B_IDX].t && qgpy_check_dtype(&t[B_IDX], QGPY_I32) < 0)
        return -1;
    int64_t groups = 1;
    if (kg) {
        /* a [sum K, m], b [sum K, n], d [G, m, n] */
        if (qgpy_check_ndim(&t[B_A], 2, "[sum K, M]") < 0 ||
            qgpy_check_ndim(&t[B_B], 2, "[sum K, N]") < 0 ||
            qgpy_check_ndim(&t[B_D], 3, "[G, M, N]") < 0)
            return -1;
        groups = qgpy_dim(&t[B_D], 0);
        if (qgpy_int_dim(&t[B_A], 1, "M", &ga->m) < 0 ||
            qgpy_int_dim(&t[B_B], 1, "N", &ga->n) < 0 ||
            qgpy_int_dim(&t[B_A], 0, "sum K", &ga->k) < 0)
            return -1;
        if (qgpy_check_dim(&t[B_B], 0, ga->k, "sum K (a.shape[0])") < 0 ||
            qgpy_check_dim(&t[B_D], 1, ga->m, "M (a.shape[1])") < 0 ||
            qgpy_check_dim(&t[B_D], 2, ga->n, "N (b.shape[1])") < 0)
            return -1;
        if (num_ks != groups)
            return qgpy_errorf(PyExc_ValueError, "qgemm: ks holds %d group sizes, d has %lld "
                               "groups", num_ks, (long long)groups);
        /* the operands' rows are along K: MN-major in the library's words */
        if (qgpy_stride(&t[B_A], 1) != 1 || qgpy_stride(&t[B_B], 1) != 1)
            return qgpy_errorf(PyExc_ValueError, "qgemm: a [sum K, M] and b [sum K, N] must be "
                               "contiguous along M and N (unit last stride)");
        ga->a_major = ga->b_major = QG_MAJOR_MN;
        ga->lda = qgpy_stride(&t[B_A], 0);
        ga->ldb = qgpy_stride(&t[B_B], 0);
        ga->ks = ks;
    } else {
        const int a_nd = masked ? 3 : 2, b_nd = m_grouped || masked ? 3 : 2;
        const int out_nd = sum1 ? 2 : a_nd; /* the reduced batch sum: one D */
        /* batched: every operand [G, rows, cols], its batch stride its stride(0) */
        if (batched)
            for (int i = 0; i < 3; i++) {
                const qgpy_tensor *x = &t[i == 0 ? B_A : i == 1 ? B_B : B_D];
                batch_strides[i] = x->t->ndim == 3 && qgpy_dim(x, 0) > 1 ? qgpy_stride(x, 0) : 0;
            }
        if (qgpy_check_ndim(&t[B_A], a_nd, masked ? "[G, M, K]" : "[M, K]") < 0 ||
            qgpy_check_ndim(&t[B_B], b_nd, b_nd == 3 ? "[G, N, K]" : "[N, K]") < 0 ||
            qgpy_check_ndim(&t[B_D], out_nd, out_nd == 3 ? "[G, M, N]" : "[M, N]") < 0)
            return -1;
        int g32 = 1;
        if (b_nd == 3 && qgpy_int_dim(&t[B_B], 0, "G", &g32) < 0)
            return -1;
        groups = g32;
        if (qgpy_int_dim(&t[B_A], a_nd - 2, "M", &ga->m) < 0 ||
            qgpy_int_dim(&t[B_A], a_nd - 1, "K", &ga->k) < 0 ||
            qgpy_int_dim(&t[B_B], b_nd - 2, "N", &ga->n) < 0)
            return -1;
        if (qgpy_check_dim(&t[B_B], b_nd - 1, ga->k, "K (a's last dimension)") < 0 ||
            qgpy_check_dim(&t[B_D], out_nd - 2, ga->m, "M (a)") < 0 ||
            qgpy_check_dim(&t[B_D], out_nd - 1, ga->n, "N (b)") < 0)
            return -1;
        if (masked && (qgpy_check_dim(&t[B_A], 0, groups, "G (b.shape[0])") < 0 ||
                       (!sums && !sum1 && qgpy_check_dim(&t[B_D], 0, groups, "G (b.shape[0])") < 0)))
            return -1;
        if (major_of(&t[B_A], a_nd - 2, a_nd - 1, &ga->a_major, &ga->lda, "M") < 0 ||
            major_of(&t[B_B], b_nd - 2, b_nd - 1, &ga->b_major, &ga->ldb, "N") < 0)
            return -1;
        /* groups packed: each operand's group stride is its rows x ld */
        if (masked && !batched && qgpy_dim(&t[B_A], 0) > 1 &&
            check_packed(&t[B_A], ga->m, ga->lda, "M x stride(1)") < 0)
            return -1;
        if (b_nd == 3 && groups > 1 && !batched &&
            check_packed(&t[B_B], ga->b_major == QG_MAJOR_K ? ga->n : ga->k, ga->ldb,
                         "rows x row stride") < 0)
            return -1;
    }
    /* D: rows along N, packed groups */
    const int d_nd = (kg || masked) && !sum1 ? 3 : 2;
    if (qgpy_stride(&t[B_D], d_nd - 1) != 1 && qgpy_dim(&t[B_D], d_nd - 1) > 1)
        return qgpy_errorf(PyExc_ValueError, "qgemm: d must be row-major (unit last stride)");
    ga->ldd = qgpy_dim(&t[B_D], d_nd - 2) > 1 ? qgpy_stride(&t[B_D], d_nd - 2) : ga->n;
    if (d_nd == 3 && (!batched || sums) && qgpy_dim(&t[B_D], 0) > 1 &&
        check_packed(&t[B_D], ga->m, ga->ldd, "M x stride(1)") < 0)
        return -1;
    ga->d_fp32 = d_fp32;
    if (t[B_C].t) {
        if (qgpy_check_ndim(&t[B_C], d_nd, d_nd == 3 ? "[G, M, N]" : "[M, N]") < 0)
            return -1;
        for (int i = 0; i < d_nd; i++)
            if (qgpy_check_dim(&t[B_C], i, qgpy_dim(&t[B_D], i), "d's shape") < 0)
                return -1;
        ga->c = qgpy_address(&t[B_C]);
        ga->ldc = qgpy_dim(&t[B_C], d_nd - 2) > 1 ? qgpy_stride(&t[B_C], d_nd - 2) : ga->n;
    }
    ga->num_groups = (int)groups;
    ga->expected_m = expected_m;
    if (t[B_IDX].t && sum1) {
        /* the workspace: int32 [L], contiguous, writable */
        if (qgpy_check_ndim(&t[B_IDX], 1, "[L] (the workspace)") < 0)
            return -1;
        if (qgpy_dim(&t[B_IDX], 0) > 1 && qgpy_stride(&t[B_IDX], 0) != 1)
            return qgpy_errorf(PyExc_ValueError, "qgemm: the workspace (idx) must be contiguous");
        if (qgpy_check_writable(&t[B_IDX]) < 0)
            return -1;
        *ws = qgpy_address(&t[B_IDX]);
        *ws_bytes = (size_t)qgpy_dim(&t[B_IDX], 0) * 4;
    } else if (t[B_IDX].t) {
        const int32_t *idx = qgpy_address(&t[B_IDX]);
        ga->m_indices = ga->masked_m = ga->group_ends = idx;
        const int64_t want = kind == QG_GEMM_GROUPED_CONTIGUOUS ? ga->m : groups;
        if (qgpy_check_ndim(&t[B_IDX], 1, "[L]") < 0 ||
            qgpy_check_dim(&t[B_IDX], 0, want, kind == QG_GEMM_GROUPED_CONTIGUOUS
                                                   ? "M (one group index a row)"
                                                   : "G (one value a group)") < 0)
            return -1;
    }
    ga->a = qgpy_address(&t[B_A]);
    ga->b = qgpy_address(&t[B_B]);
    ga->d = qgpy_address(&t[B_D]);
    if (qgpy_check_writable(&t[B_D]) < 0)
        return -1;
    for (int i = 0; i < B_SLOTS; i++)
        if (i != B_D && t[i].t && !(i == B_C && qgpy_address(&t[B_C]) == ga->d) &&
            qgpy_check_no_overlap(&t[B_D], &t[i]) < 0)
            return -1;
    return 0;
}

/* Check the borrowed tensors of a `kind` call (bf16_args) and launch it; None, or NULL
 * with a Python error. torch_stream: `stream` is ignored and torch's current stream of
 * the tensors' device is read after the context is had (einsum_bmk_torch: every check
 * comes first, then the device layer). */
static PyObject *bf16_launch(int kind, qgpy_tensor t[B_SLOTS], int expected_m, const int32_t *ks,
                             int num_ks, unsigned long long stream, int torch_stream)
{
    qg_bf16_gemm_args ga;
    int64_t bs[3] = {0, 0, 0};
    int device = 0;
    void *ws = NULL;
    size_t ws_bytes = 0;
    if (bf16_args(kind, t, expected_m, ks, num_ks, &ga, bs, &device, &ws, &ws_bytes) < 0)
        return NULL;
    int splits = 0;
    if (kind == (int)QG_GEMM_BF16_BATCH_SUMS && qgpy_int_dim(&t[B_D], 0, "splits", &splits) < 0)
        return NULL;
    if (ga.m == 0 || ga.n == 0)
        Py_RETURN_NONE;
    qg_context *ctx = qgpy_context(device);
    if (!ctx || (torch_stream && qgpy_torch_current_stream(device, &stream) < 0))
        return NULL;
    qg_status st;
    struct CUstream_st *s = (struct CUstream_st *)(uintptr_t)stream;
    Py_BEGIN_ALLOW_THREADS
    switch (kind) {
    case QG_GEMM_DENSE: st = qg_bf16_gemm(ctx, &ga, s); break;
    case QG_GEMM_GROUPED_CONTIGUOUS: st = qg_m_grouped_bf16_gemm_contiguous(ctx, &ga, s); break;
    case QG_GEMM_GROUPED_PSUM: st = qg_m_grouped_bf16_gemm_psum(ctx, &ga, s); break;
    case QG_GEMM_GROUPED_MASKED: st = qg_m_grouped_bf16_gemm_masked(ctx, &ga, s); break;
    case QG_GEMM_K_GROUPED: st = qg_k_grouped_bf16_gemm(ctx, &ga, s); break;
    case (int)QG_GEMM_BF16_BATCH_SUMS:
        st = qg_bf16_gemm_batch_sums(ctx, &ga, bs[0], bs[1], splits, s);
        break;
    case (int)QG_GEMM_BF16_BATCH_SUM:
        st = qg_bf16_gemm_batch_sum(ctx, &ga, bs[0], bs[1], expected_m, ws, ws_bytes, s);
        break;
    default: st = qg_batched_bf16_gemm(ctx, &ga, bs[0], bs[1], bs[2], s); break;
    }
    Py_END_ALLOW_THREADS
    if (st != QG_SUCCESS)
        return qgpy_raise_status(st);
    Py_RETURN_NONE;
}

/* bf16_gemm(kind, a, b, d, c_or_None, idx_or_None, expected_m, ks_or_None,
 *           stream, no_sync): bit i of no_sync set = slot i's producer is told
 *           not to synchronize (stream=-1): `stream` is already its current
 *           stream. Returns None; ZERO_K is not used: K = 0 is the library's
 *           (D = C or zero, on the stream). */
PyObject *qgpy_bf16_gemm(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, expected_m;
    PyObject *obj[B_SLOTS], *ks_obj;
    unsigned long long stream;
    unsigned no_sync;
    if (!PyArg_ParseTuple(args, "iOOOOOiOKI:bf16_gemm", &kind, &obj[B_A], &obj[B_B], &obj[B_D],
                          &obj[B_C], &obj[B_IDX], &expected_m, &ks_obj, &stream, &no_sync))
        return NULL;
    if (kind != QG_GEMM_DENSE && kind != QG_GEMM_GROUPED_CONTIGUOUS &&
        kind != QG_GEMM_GROUPED_MASKED && kind != QG_GEMM_GROUPED_PSUM &&
        kind != QG_GEMM_K_GROUPED && kind != (int)QG_GEMM_BF16_BATCHED &&
        kind != (int)QG_GEMM_BF16_BATCH_SUMS && kind != (int)QG_GEMM_BF16_BATCH_SUM)
        return PyErr_Format(PyExc_ValueError, "qgemm: unknown BF16 GEMM kind %d", kind);
    int32_t *ks = NULL;
    int num_ks = 0;
    if (parse_ks(ks_obj, &ks, &num_ks) < 0) {
        PyMem_Free(ks);
        return NULL;
    }
    PyObject *result = NULL;
    qgpy_tensor t[B_SLOTS] = {{0}};
    if (no_sync & QGPY_TORCH_MODE) { /* qgpy.h: torch tensors on torch's current stream */
        if ((obj[B_A] == Py_None || obj[B_B] == Py_None || obj[B_D] == Py_None)) {
            Py_INCREF(Py_NotImplemented);
            result = Py_NotImplemented;
            goto done;
        }
        const int taken = qgpy_torch_take_all(obj, names, B_SLOTS, 1, &stream, t);
        if (taken == 0) {
            Py_INCREF(Py_NotImplemented);
            result = Py_NotImplemented;
        }
        if (taken <= 0)
            goto done;
    } else {
        for (int i = 0; i < B_SLOTS; i++) {
            if ((i == B_C || i == B_IDX) && obj[i] == Py_None)
                continue;
            if (qgpy_tensor_take(obj[i], names[i], stream, (no_sync >> i) & 1u, &t[i]) < 0)
                goto done;
        }
    }
    if (kind == (int)QG_GEMM_BF16_BATCHED) {
        /* the batched kind's expected_m (unused by the library) carries the per-head einsums'
         * views, made here instead of by torch: bit 0, a and d are given [B, H, .] and read
         * as their [H, B, .] transposes; bit 1, b's last two dimensions are swapped */
        if (expected_m & ~3) {
            qgpy_errorf(PyExc_ValueError, "qgemm: batched BF16 GEMM view flags %d (bits 0 and 1 "
                        "only)", expected_m);
            goto done;
        }
        if (((expected_m & 1) && (qgpy_tensor_swap_dims(&t[B_A], 0, 1) < 0 ||
                                  qgpy_tensor_swap_dims(&t[B_D], 0, 1) < 0)) ||
            ((expected_m & 2) && qgpy_tensor_swap_dims(&t[B_B], 1, 2) < 0))
            goto done;
        expected_m = 0;
    }
    result = bf16_launch(kind, t, expected_m, ks, num_ks, stream, 0);
done:
    for (int i = 0; i < B_SLOTS; i++)
        qgpy_tensor_release(&t[i]);
    PyMem_Free(ks);
    return result;
}

/* ---- einsum('bmk,bnk->mn')'s plain call in one C call (issue 49: host cost) ---------- */

static int64_t cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Ranges of ceil(batches / want) batches: the count, none empty (qgemm.einsum._whole_splits). */
static int64_t whole_splits(int64_t batches, int64_t want)
{
    if (want <= 1)
        return 1;
    return cdiv64(batches, cdiv64(batches, want));
}

/* The split count of QGEMM_BMK_SPLITS unset (python/qgemm/einsum.py, _splits_of_env's
 * "auto"): below dg_min_batches batches bmk_splits (enough 128x128-tile CTAs for
 * split_tiles, at least split_min_k of B*K a split), from there bmk_splits_dg (about
 * one CTA per SM). The same integer arithmetic as those Python functions (positive sizes;
 * tests/python/test_einsum.py compares the two over a grid); sizes below 2^31. */
static int64_t bmk_default_splits(int64_t m, int64_t n, int64_t batches, int64_t k, int64_t num_sms,
                                  int64_t split_tiles, int64_t split_min_k, int64_t max_batches,
                                  int64_t dg_min_batches)
{
    const int64_t tiles = cdiv64(m, 128) * cdiv64(n, 128);
    if (batches < dg_min_batches) {
        const int64_t want = min64(min64(cdiv64(split_tiles, tiles), batches),
                                   min64(batches * k / split_min_k, max_batches));
        return whole_splits(batches, want);
    }
    const int64_t kb = max64(1, cdiv64(k, 64));
    const int64_t per_cta = cdiv64(batches * kb, max64(num_sms / tiles, 1));
    const int64_t per = max64(max64(cdiv64(per_cta, kb), cdiv64(2, kb)), 1);
    return whole_splits(batches, min64(cdiv64(batches, per), max_batches));
}

/* Positional int64 arguments; -1 with a Python error. */
static int int64_args(PyObject *const *args, int n, int64_t *out)
{
    for (int i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(args[i]);
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* bmk_default_splits(m, n, batches, k, num_sms, split_tiles, split_min_k, max_batches,
 * dg_min_batches) -> int: the rule einsum_bmk_torch applies (tests). Positive values
 * below 2^31 only (ValueError otherwise). */
PyObject *qgpy_bmk_default_splits(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int64_t v[9];
    if (nargs != 9)
        return PyErr_Format(PyExc_TypeError, "bmk_default_splits() takes 9 arguments (%zd given)",
                            nargs);
    if (int64_args(args, 9, v) < 0)
        return NULL;
    for (int i = 0; i < 9; i++)
        if (v[i] < (i == 3 ? 0 : 1) || v[i] > INT32_MAX)
            return PyErr_Format(PyExc_ValueError, "qgemm: bmk_default_splits: argument %d = %lld "
                                "out of range", i, (long long)v[i]);
    return PyLong_FromLongLong(bmk_default_splits(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
                                                  v[8]));
}

/* An environment variable unset or set to one of the words (NULL-terminated). */
static int env_is(const char *name, const char *const *words)
{
    const char *v = getenv(name);
    if (!v)
        return 1;
    for (; *words; words++)
        if (!strcmp(v, *words))
            return 1;
    return 0;
}

/* einsum_bmk_torch(a, b, d, c_is_d, split_tiles, split_min_k, max_batches, dg_min_batches)
 * -> None or NotImplemented: the plain call of einsum('bmk,bnk->mn') (python/qgemm/einsum.py,
 * _bmk_fast) in ONE call, the split rule and every check here: a [B, M, K] and b [B, N, K]
 * bfloat16 with unit last strides, d [M, N] float32 (c None, or d itself: c_is_d) or
 * bfloat16 (c None) that the kernel addresses in place (unit last stride, 16-byte rows and
 * start), B, M, N > 0, plain CUDA torch tensors of one device (torch.c), QGEMM_BMK_SPLITS
 * unset or empty, and no workspace needed: the atomic reduction (QGEMM_BMK_REDUCE unset,
 * empty or atomic) into a float32 d, or one split. Then qg_bf16_gemm_batch_sum with the
 * default split count (bmk_default_splits; the SMs of the context from dg_min_batches
 * batches) on torch's current stream. Anything else -- another dtype, shape or layout, a
 * workspace to keep, a tensor it does not take -- is NotImplemented, nothing checked aloud
 * and nothing launched: the package's ways then decide (its kept workspaces are Python's),
 * so the ways raise the same errors. The library's own refusals raise as there. */
PyObject *qgpy_einsum_bmk_torch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 8)
        return PyErr_Format(PyExc_TypeError, "einsum_bmk_torch() takes 8 arguments (%zd given)",
                            nargs);
    int64_t rule[4];
    if (int64_args(args + 4, 4, rule) < 0)
        return NULL;
    for (int i = 0; i < 4; i++)
        if (rule[i] < 1 || rule[i] > INT32_MAX)
            return PyErr_Format(PyExc_ValueError, "qgemm: einsum_bmk_torch: split rule constant "
                                "%d = %lld out of range", i, (long long)rule[i]);
    if (!PyLong_Check(args[3])) /* (a bool is an int; anything else's truth is its own) */
        return PyErr_Format(PyExc_TypeError, "qgemm: einsum_bmk_torch: c_is_d must be a bool, "
                            "got %s", Py_TYPE(args[3])->tp_name);
    const int c_is_d = PyObject_IsTrue(args[3]);
    if (c_is_d < 0)
        return NULL;
    qgpy_tensor t[B_SLOTS];
    memset(t, 0, sizeof t);
    PyObject *result = Py_NotImplemented;
    for (int i = 0; i < 3; i++)
        if (qgpy_torch_borrow(args[i], names[i], &t[i]) != 1)
            goto done;
    const qgpy_tensor *a = &t[B_A], *b = &t[B_B], *d = &t[B_D];
    const int device = a->t->device.device_id;
    if (b->t->device.device_id != device || d->t->device.device_id != device ||
        a->t->ndim != 3 || b->t->ndim != 3 || d->t->ndim != 2)
        goto done;
    const DLDataType bf = {kDLBfloat, 16, 1}, f32 = {kDLFloat, 32, 1};
#define SAME_TYPE(x, y) ((x).code == (y).code && (x).bits == (y).bits && (x).lanes == (y).lanes)
    const int d_f32 = SAME_TYPE(d->t->dtype, f32);
    if (!SAME_TYPE(a->t->dtype, bf) || !SAME_TYPE(b->t->dtype, bf) ||
        !(d_f32 || (SAME_TYPE(d->t->dtype, bf) && !c_is_d)))
        goto done;
#undef SAME_TYPE
    const int64_t s = qgpy_dim(a, 0), m = qgpy_dim(a, 1), k = qgpy_dim(a, 2), n = qgpy_dim(b, 1);
    const int64_t es = d_f32 ? 4 : 2;
    if (qgpy_dim(b, 0) != s || qgpy_dim(b, 2) != k || qgpy_dim(d, 0) != m ||
        qgpy_dim(d, 1) != n || !s || !m || !n || s > INT32_MAX || m > INT32_MAX ||
        n > INT32_MAX || k > INT32_MAX || qgpy_stride(a, 2) != 1 || qgpy_stride(b, 2) != 1 ||
        (n > 1 && qgpy_stride(d, 1) != 1) || (m > 1 && qgpy_stride(d, 0) * es % 16) ||
        (uintptr_t)qgpy_address(d) % 16)
        goto done;
    const char *const unset[] = {"", NULL}, *const atomic_words[] = {"", "atomic", NULL};
    if (!env_is("QGEMM_BMK_SPLITS", unset))
        goto done;
    const int atomic = env_is("QGEMM_BMK_REDUCE", atomic_words);
    int64_t num_sms = 1;
    qg_context *ctx = NULL;
    if (s >= rule[3]) { /* bmk_splits_dg: the SMs kernels use there (_runtime.get_num_sms) */
        result = NULL;  /* (a device error raises: the other ways would meet it too) */
        if (!(ctx = qgpy_context(device)))
            goto done;
        num_sms = qg_context_get_num_sms(ctx);
        result = Py_NotImplemented;
        if (num_sms < 1)
            goto done;
    }
    const int64_t splits = bmk_default_splits(m, n, s, k, num_sms, rule[0], rule[1], rule[2],
                                              rule[3]);
    if (splits > 1 && !(atomic && d_f32)) /* a workspace to keep: the package's */
        goto done;
    if (c_is_d) { /* c: d's description (a borrowed one points into its own slot) */
        t[B_C] = t[B_D];
        t[B_C].name = names[B_C];
        t[B_C].t = &t[B_C].own;
        t[B_C].own.shape = t[B_C].own_shape;
        t[B_C].own.strides = t[B_C].own_strides;
    }
    result = bf16_launch(QG_GEMM_BF16_BATCH_SUM, t, (int)splits, NULL, 0, 0, 1);
done:
    if (result == Py_NotImplemented)
        Py_INCREF(result);
    for (int i = 0; i < B_SLOTS; i++)
        qgpy_tensor_release(&t[i]);
    return result;
}
