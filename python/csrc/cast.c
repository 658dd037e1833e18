/*
 * cast.c -- the cast family's entry in the extension: cast(kind, x, out, sf,
 * aux, m, groups, sf_mn_major, sf_ld, ue8m0, stream, no_sync) for the
 * quantizing casts and sf_layout(kind, sf, out, ks, out_ld, gran_k,
 * k_alignment, psum, stream, no_sync) for the scale layouts. The tensors come
 * through DLPack (tensor.c); shapes and strides are read from them, checked,
 * and handed to the library (qg_cast_args / qg_sf_layout_args), which checks
 * again and refuses what it cannot run, with its own message.
 *
 *   cast       x [rows, cols] bf16/float32 (unit last stride; cols = k, or 2k
 *              for silu_mul), out [rows, k] 8-bit (e4m3, or its bytes as
 *              uint8) with unit last stride, sf float32 contiguous holding
 *              exactly the scales of the layout (per-token row-major
 *              rows x ceil(k/128), M-major groups x ceil(k/128) x sf_ld;
 *              per-block groups x ceil(m/128) x ceil(k/128); per-channel
 *              m/128 x k), aux None or int32 [groups] (masked_m, kind 4 with
 *              rows_mask 1) / [rows] (m_indices, rows_mask 2); rows = groups x m.
 *   sf_layout  kinds 5, 6: sf float32 [G, mn, sf_k] at any strides, out
 *              float32 / int32 contiguous [G, rows, out_ld]; kind 7: sf float32
 *              [sf_k, mn] contiguous, out int32 [packed_sf_k, mn] contiguous,
 *              ks int32 [G] contiguous.
 *
 * Invariants (as module.c's): metadata only, nothing read or written on the
 * device before the launch; every borrowed tensor released on every path.
 */
#include "qgpy.h"

#include <string.h>

enum { C_X, C_OUT, C_SF, C_AUX, C_SLOTS };
static const char *const cast_names[C_SLOTS] = {"x", "out", "sf", "aux"};

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* a * b * c for sizes >= 0, or -1 past INT64_MAX (a sf_ld or out_ld near 2^31
 * times the other sizes overflowed: UBSan, tests/python/test_fuzz_extension.py). */
static int64_t mul3(int64_t a, int64_t b, int64_t c)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r))
        return -1;
    return r;
}

static int64_t numel(const qgpy_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->t->ndim; i++)
        n *= t->t->shape[i];
    return n;
}

/* Contiguous (row-major, size-1 dimensions' strides ignored). */
static int is_contiguous(const qgpy_tensor *t)
{
    int64_t want = 1;
    for (int i = t->t->ndim - 1; i >= 0; i--) {
        if (t->t->shape[i] != 1 && qgpy_stride(t, i) != want)
            return 0;
        want *= t->t->shape[i];
    }
    return 1;
}

static int check_contiguous(const qgpy_tensor *t)
{
    if (is_contiguous(t))
        return 0;
    char buf[96];
    return qgpy_errorf(PyExc_ValueError, "qgemm: %s must be contiguous, got strides %s", t->name,
                       qgpy_strides_str(t, buf, sizeof buf));
}

static int check_rows(const qgpy_tensor *t, int64_t *ld)
{
    if (qgpy_stride(t, 1) != 1 && qgpy_dim(t, 1) > 1)
        return qgpy_errorf(PyExc_ValueError, "qgemm: %s must have a unit last stride", t->name);
    *ld = qgpy_dim(t, 0) > 1 ? qgpy_stride(t, 0) : qgpy_dim(t, 1);
    return 0;
}

static int release_all(qgpy_tensor *t, int n)
{
    for (int i = 0; i < n; i++)
        qgpy_tensor_release(&t[i]);
    return 0;
}

/* Borrow the tensors (None slots skipped); QGPY_TORCH_MODE in no_sync: torch tensors only,
 * on torch's current stream (set in *stream). 1 = taken, 0 = not plain torch tensors in torch
 * mode (the entry answers NotImplemented, nothing done), -1 = error. */
static int import_all(PyObject *const *obj, const char *const *names, int n,
                      unsigned long long *stream, unsigned no_sync, qgpy_tensor *t)
{
    if (no_sync & QGPY_TORCH_MODE)
        return qgpy_torch_take_all(obj, names, n, 1, stream, t);
    for (int i = 0; i < n; i++) {
        if (obj[i] == Py_None)
            continue;
        if (qgpy_tensor_take(obj[i], names[i], *stream, (no_sync >> i) & 1u, &t[i]) < 0)
            return -1;
    }
    return 1;
}

static PyObject *not_implemented(void)
{
    Py_INCREF(Py_NotImplemented);
    return Py_NotImplemented;
}

static int cast_args(int kind, qgpy_tensor t[C_SLOTS], int m, int groups, int sf_mn_major, int sf_ld,
                     int ue8m0, int rows_mask, qg_cast_args *a, int *device)
{
    memset(a, 0, sizeof *a);
    *device = -1;
    for (int i = 0; i < C_SLOTS; i++)
        if (t[i].t && qgpy_check_device(&t[i], device) < 0)
            return -1;
    const int x_f32 = t[C_X].t->dtype.code == kDLFloat && t[C_X].t->dtype.bits == 32;
    if (!x_f32 && qgpy_check_dtype(&t[C_X], QGPY_BF16) < 0)
        return -1;
    if (t[C_OUT].dtype.bits != 8 || t[C_OUT].t->dtype.lanes != 1)
        return qgpy_errorf(PyExc_ValueError, "qgemm: out must be float8_e4m3fn (or its bytes)");
    if (qgpy_check_dtype(&t[C_SF], QGPY_F32) < 0)
        return -1;
    if (qgpy_check_ndim(&t[C_X], 2, "[rows, cols]") < 0 ||
        qgpy_check_ndim(&t[C_OUT], 2, "[rows, k]") < 0)
        return -1;
    const int64_t rows = qgpy_dim(&t[C_X], 0), cols = qgpy_dim(&t[C_X], 1);
    const int64_t k = kind == QG_CAST_KIND_SILU_MUL ? cols / 2 : cols;
    if (kind == QG_CAST_KIND_SILU_MUL && cols % 2)
        return qgpy_errorf(PyExc_ValueError, "qgemm: x's last dimension (gate | up) must be even, "
                           "got %lld", (long long)cols);
    if (groups < 1 || m < 0 || (int64_t)groups * m != rows)
        return qgpy_errorf(PyExc_ValueError, "qgemm: x's %lld rows must be groups (%d) x m (%d)",
                           (long long)rows, groups, m);
    if (k > INT32_MAX)
        return qgpy_errorf(PyExc_ValueError, "qgemm: k = %lld is too large", (long long)k);
    if (qgpy_check_dim(&t[C_OUT], 0, rows, "x's rows") < 0 ||
        qgpy_check_dim(&t[C_OUT], 1, k, kind == QG_CAST_KIND_SILU_MUL ? "half x's columns" : "x's columns") < 0)
        return -1;
    if (check_rows(&t[C_X], &a->ld_x) < 0 || check_rows(&t[C_OUT], &a->ld_out) < 0)
        return -1;
    const int64_t kb = cdiv(k, 128);
    int64_t want;
    switch (kind) {
    case QG_CAST_KIND_PER_BLOCK: want = mul3(groups, cdiv(m, 128), kb); break;
    case QG_CAST_KIND_PER_CHANNEL: want = (int64_t)(m / 128) * k; break;
    default: want = sf_mn_major ? (sf_ld < 0 ? -1 : mul3(groups, kb, sf_ld)) : rows * kb;
    }
    if (want < 0)
        return qgpy_errorf(PyExc_ValueError, "qgemm: the scales of %lld rows x %lld columns "
                           "(groups %d, sf_ld %d) are not a tensor size", (long long)rows,
                           (long long)k, groups, sf_ld);
    if (check_contiguous(&t[C_SF]) < 0)
        return -1;
    if (numel(&t[C_SF]) != want)
        return qgpy_errorf(PyExc_ValueError, "qgemm: sf must hold %lld scales, got %lld",
                           (long long)want, (long long)numel(&t[C_SF]));
    if (t[C_AUX].t) {
        if (kind != QG_CAST_KIND_SILU_MUL || (rows_mask != 1 && rows_mask != 2))
            return qgpy_errorf(PyExc_ValueError, "qgemm: masked_m / m_indices are silu_mul's only");
        if (qgpy_check_dtype(&t[C_AUX], QGPY_I32) < 0 || qgpy_check_ndim(&t[C_AUX], 1, "[L]") < 0 ||
            check_contiguous(&t[C_AUX]) < 0 ||
            qgpy_check_dim(&t[C_AUX], 0, rows_mask == 1 ? groups : rows,
                           rows_mask == 1 ? "groups (masked_m)" : "x's rows (m_indices)") < 0)
            return -1;
        if (rows_mask == 1)
            a->masked_m = qgpy_address(&t[C_AUX]);
        else
            a->m_indices = qgpy_address(&t[C_AUX]);
    }
    a->m = m;
    a->k = (int)k;
    a->num_groups = groups;
    a->x = qgpy_address(&t[C_X]);
    a->x_fp32 = x_f32;
    a->out = qgpy_address(&t[C_OUT]);
    a->sf = qgpy_address(&t[C_SF]);
    a->sf_mn_major = sf_mn_major;
    a->sf_ld = sf_ld;
    a->ue8m0 = ue8m0;
    if (qgpy_check_writable(&t[C_OUT]) < 0 || qgpy_check_writable(&t[C_SF]) < 0)
        return -1;
    for (int o = C_OUT; o <= C_SF; o++)
        for (int i = 0; i < C_SLOTS; i++)
            if (i != o && t[i].t && qgpy_check_no_overlap(&t[o], &t[i]) < 0)
                return -1;
    return 0;
}

static PyObject *status_result(qg_status st)
{
    if (st != QG_SUCCESS)
        return qgpy_raise_status(st);
    Py_RETURN_NONE;
}

/* cast(kind, x, out, sf, aux_or_None, m, groups, sf_mn_major, sf_ld, ue8m0,
 *      rows_mask, stream, no_sync) -> None */
/* The library's cast of `kind` (QG_CAST_KIND_*) on device `device`'s context, on `stream`,
 * with the GIL released: 0 with the call's status in *st, or -1 (a Python error set) where
 * the context cannot be had. */
static int run_cast(int device, long kind, const qg_cast_args *a, unsigned long long stream,
                    qg_status *st)
{
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        return -1;
    struct CUstream_st *s = (struct CUstream_st *)(uintptr_t)stream;
    qg_status r;
    Py_BEGIN_ALLOW_THREADS
    switch (kind) {
    case QG_CAST_KIND_PER_TOKEN: r = qg_per_token_cast(ctx, a, s); break;
    case QG_CAST_KIND_PER_BLOCK: r = qg_per_block_cast(ctx, a, s); break;
    case QG_CAST_KIND_PER_CHANNEL: r = qg_per_channel_cast(ctx, a, s); break;
    default: r = qg_silu_mul_cast(ctx, a, s); break;
    }
    Py_END_ALLOW_THREADS
    *st = r;
    return 0;
}

PyObject *qgpy_cast(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, m, groups, sf_mn_major, sf_ld, ue8m0, rows_mask;
    PyObject *obj[C_SLOTS];
    unsigned long long stream;
    unsigned no_sync;
    if (!PyArg_ParseTuple(args, "iOOOOiiiiiiKI:cast", &kind, &obj[C_X], &obj[C_OUT], &obj[C_SF],
                          &obj[C_AUX], &m, &groups, &sf_mn_major, &sf_ld, &ue8m0, &rows_mask,
                          &stream, &no_sync))
        return NULL;
    if (kind < QG_CAST_KIND_PER_TOKEN || kind > QG_CAST_KIND_SILU_MUL)
        return PyErr_Format(PyExc_ValueError, "qgemm: unknown cast kind %d", kind);
    for (int i = 0; i < C_AUX; i++)
        if (obj[i] == Py_None)
            return PyErr_Format(PyExc_ValueError, "qgemm: %s must be a tensor", cast_names[i]);
    PyObject *result = NULL;
    qgpy_tensor t[C_SLOTS] = {{0}};
    const int taken = import_all(obj, cast_names, C_SLOTS, &stream, no_sync, t);
    if (taken == 0)
        result = not_implemented();
    if (taken <= 0)
        goto done;
    qg_cast_args a;
    int device = 0;
    if (cast_args(kind, t, m, groups, sf_mn_major, sf_ld, ue8m0, rows_mask, &a, &device) < 0)
        goto done;
    if (a.m == 0 || a.k == 0) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    qg_status st;
    if (run_cast(device, kind, &a, stream, &st) < 0)
        goto done;
    result = status_result(st);
done:
    release_all(t, C_SLOTS);
    return result;
}

enum { L_SF, L_OUT, L_KS, L_SLOTS };
static const char *const layout_names[L_SLOTS] = {"sf", "out", "ks"};

/* sf_layout(kind, sf, out, ks_or_None, out_ld, gran_k, k_alignment, psum,
 *           stream, no_sync) -> None */
PyObject *qgpy_sf_layout(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, out_ld, gran_k, k_alignment, psum;
    PyObject *obj[L_SLOTS];
    unsigned long long stream;
    unsigned no_sync;
    if (!PyArg_ParseTuple(args, "iOOOiiiiKI:sf_layout", &kind, &obj[L_SF], &obj[L_OUT], &obj[L_KS],
                          &out_ld, &gran_k, &k_alignment, &psum, &stream, &no_sync))
        return NULL;
    if (kind < QG_CAST_KIND_SF_MN_MAJOR || kind > QG_CAST_KIND_SF_PACK_UE8M0_K_GROUPED)
        return PyErr_Format(PyExc_ValueError, "qgemm: unknown scale-layout kind %d", kind);
    const int kg = kind == QG_CAST_KIND_SF_PACK_UE8M0_K_GROUPED;
    if (obj[L_SF] == Py_None || obj[L_OUT] == Py_None || (kg && obj[L_KS] == Py_None))
        return PyErr_Format(PyExc_ValueError, "qgemm: sf, out%s must be tensors", kg ? " and ks" : "");
    PyObject *result = NULL;
    qgpy_tensor t[L_SLOTS] = {{0}};
    const int taken = import_all(obj, layout_names, L_SLOTS, &stream, no_sync, t);
    if (taken == 0)
        result = not_implemented();
    if (taken <= 0)
        goto done;
    int device = -1;
    for (int i = 0; i < L_SLOTS; i++)
        if (t[i].t && qgpy_check_device(&t[i], &device) < 0)
            goto done;
    if (qgpy_check_dtype(&t[L_SF], QGPY_F32) < 0 || check_contiguous(&t[L_OUT]) < 0)
        goto done;
    if (t[L_OUT].t->dtype.bits != 32 || t[L_OUT].t->dtype.lanes != 1 ||
        (kind != QG_CAST_KIND_SF_MN_MAJOR && t[L_OUT].t->dtype.code != kDLInt)) {
        qgpy_errorf(PyExc_ValueError, "qgemm: out must be %s", kind == QG_CAST_KIND_SF_MN_MAJOR
                                                                   ? "float32" : "int32");
        goto done;
    }
    qg_sf_layout_args a;
    memset(&a, 0, sizeof a);
    int64_t want_out;
    if (!kg) {
        if (qgpy_check_ndim(&t[L_SF], 3, "[G, MN, SF_K]") < 0)
            goto done;
        const int64_t g = qgpy_dim(&t[L_SF], 0), mn = qgpy_dim(&t[L_SF], 1), sfk = qgpy_dim(&t[L_SF], 2);
        if (g > INT32_MAX || mn > INT32_MAX || sfk > INT32_MAX || out_ld < mn) {
            qgpy_errorf(PyExc_ValueError, "qgemm: sf [G, MN, SF_K] too large, or out_ld %d < MN",
                        out_ld);
            goto done;
        }
        a.mn = (int)mn, a.sf_k = (int)sfk, a.num_groups = (int)g;
        for (int i = 0; i < 3; i++)
            a.sf_stride[i] = qgpy_dim(&t[L_SF], i) > 1 ? qgpy_stride(&t[L_SF], i) : 0;
        a.out_ld = out_ld;
        want_out = mul3(g, kind == QG_CAST_KIND_SF_MN_MAJOR ? sfk : cdiv(sfk, 4), out_ld);
        if (want_out < 0) {
            qgpy_errorf(PyExc_ValueError, "qgemm: sf [G, MN, SF_K] with out_ld %d needs more "
                        "than 2^63 values in out", out_ld);
            goto done;
        }
    } else {
        if (qgpy_check_ndim(&t[L_SF], 2, "[SF_K, MN]") < 0 || check_contiguous(&t[L_SF]) < 0 ||
            qgpy_check_ndim(&t[L_OUT], 2, "[packed SF_K, MN]") < 0 ||
            qgpy_check_dtype(&t[L_KS], QGPY_I32) < 0 || qgpy_check_ndim(&t[L_KS], 1, "[G]") < 0 ||
            check_contiguous(&t[L_KS]) < 0 ||
            qgpy_check_dim(&t[L_OUT], 1, qgpy_dim(&t[L_SF], 1), "MN (sf.shape[1])") < 0)
            goto done;
        /* (each size past 2^31 - 1 was cut by its cast and read as another:
         * ks [2^32 + 1] as one group; tests/python/test_fuzz_extension.py) */
        if (qgpy_int_dim(&t[L_SF], 0, "SF_K", &a.sf_k) < 0 ||
            qgpy_int_dim(&t[L_SF], 1, "MN", &a.mn) < 0 ||
            qgpy_int_dim(&t[L_KS], 0, "G", &a.num_groups) < 0 ||
            qgpy_int_dim(&t[L_OUT], 0, "packed SF_K", &a.packed_sf_k) < 0)
            goto done;
        a.ks = qgpy_address(&t[L_KS]);
        a.gran_k = gran_k, a.k_alignment = k_alignment, a.psum = psum;
        want_out = numel(&t[L_OUT]);
    }
    if (numel(&t[L_OUT]) != want_out) {
        qgpy_errorf(PyExc_ValueError, "qgemm: out must hold %lld values, got %lld",
                    (long long)want_out, (long long)numel(&t[L_OUT]));
        goto done;
    }
    a.sf = qgpy_address(&t[L_SF]);
    a.out = qgpy_address(&t[L_OUT]);
    if (qgpy_check_writable(&t[L_OUT]) < 0 || qgpy_check_no_overlap(&t[L_OUT], &t[L_SF]) < 0 ||
        (t[L_KS].t && qgpy_check_no_overlap(&t[L_OUT], &t[L_KS]) < 0))
        goto done;
    if (want_out == 0 || (!kg && a.sf_k == 0)) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;
    qg_status st;
    struct CUstream_st *s = (struct CUstream_st *)(uintptr_t)stream;
    Py_BEGIN_ALLOW_THREADS
    switch (kind) {
    case QG_CAST_KIND_SF_MN_MAJOR: st = qg_sf_transpose_mn_major(ctx, &a, s); break;
    case QG_CAST_KIND_SF_PACK_UE8M0: st = qg_sf_pack_ue8m0(ctx, &a, s); break;
    default: st = qg_sf_pack_ue8m0_k_grouped(ctx, &a, s); break;
    }
    Py_END_ALLOW_THREADS
    result = status_result(st);
done:
    release_all(t, L_SLOTS);
    return result;
}

/* ---- the fast path: cast_new ------------------------------------------------------------ */

#define CAST_SIZE_MAX (INT64_C(1) << 30) /* the package's limit on rows and columns (cast.py) */

/* QGEMM_CAST_VARIANT's host word (the library accepts and ignores it, src/cast.c): checked
 * (cast_new answers NotImplemented: every call takes the package's checked path). Read at
 * every call, as the library reads the knob, so an A/B run may switch it between calls.
 * (The outputs as one buffer carved into q and sf after the launch were measured on the
 * H200 against two allocations and left: 0.5-0.9 us dearer a call in 4 of 5 rows,
 * bench/results/2026-11-29-h200-21-y2.) 1 = checked. */
static int host_checked(void)
{
    const char *v = getenv("QGEMM_CAST_VARIANT");
    while (v && *v) {
        const size_t len = strcspn(v, "+");
        if (len == 7 && !strncmp(v, "checked", 7))
            return 1;
        v = v[len] ? v + len + 1 : NULL;
    }
    return 0;
}

/* x [..., cols] described as [rows, cols]: rows ld elements apart, unit last stride. 1 where
 * its leading dimensions merge into one (x.reshape(rows, cols) is then a view) with ld >= cols,
 * as cast.py's _rows takes x without a copy; else 0 (the checked path copies it). */
static int as_rows(qgpy_tensor *x, int64_t rows, int64_t cols)
{
    const DLTensor *t = x->t;
    const int nd = t->ndim;
    if (cols > 1 && t->strides[nd - 1] != 1)
        return 0;
    int64_t ld = -1, want = 0;
    for (int i = nd - 2; i >= 0; i--) {
        if (t->shape[i] == 1)
            continue;
        if (ld < 0)
            ld = want = t->strides[i];
        else if (t->strides[i] != want)
            return 0;
        if (__builtin_mul_overflow(want, t->shape[i], &want))
            return 0;
    }
    if (ld < 0)
        ld = cols;
    if (rows > 1 && ld < cols)
        return 0;
    x->own.ndim = 2;
    x->own_shape[0] = rows, x->own_shape[1] = cols;
    x->own_strides[0] = ld, x->own_strides[1] = 1;
    return 1;
}

/* strides of a contiguous tensor of shape[nd] (all sizes >= 1 here) */
static void contiguous_strides(const int64_t *shape, int nd, int64_t *strides)
{
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i];
    }
}

/* a borrowed description of `bytes` of a new tensor at `data` on `device`: 2-D [rows, cols] */
static void describe_new(qgpy_tensor *t, const char *name, uintptr_t data, int device, int f32,
                         int64_t rows, int64_t cols)
{
    memset(t, 0, sizeof *t);
    t->name = name;
    t->own.data = (void *)data;
    t->own.device.device_type = kDLCUDA;
    t->own.device.device_id = device;
    t->own.ndim = 2;
    t->own.dtype.code = f32 ? kDLFloat : kDLFloat8_e4m3fn;
    t->own.dtype.bits = f32 ? 32 : 8;
    t->own.dtype.lanes = 1;
    t->own_shape[0] = rows, t->own_shape[1] = cols;
    t->own_strides[0] = cols, t->own_strides[1] = 1;
    t->own.shape = t->own_shape;
    t->own.strides = t->own_strides;
    t->t = &t->own;
    t->dtype = t->own.dtype;
}

/* masked_m / m_indices as the kernel takes it without a word from the checked path: a plain
 * CUDA int32 tensor [len], contiguous, on x's device. 1 taken, 0 not. */
static int take_aux(PyObject *obj, int64_t len, int device, qgpy_tensor *t)
{
    return qgpy_torch_borrow(obj, cast_names[C_AUX], t) == 1 && t->t->dtype.code == kDLInt &&
           t->t->dtype.bits == 32 && t->t->ndim == 1 && t->t->shape[0] == len &&
           (len <= 1 || t->t->strides[0] == 1) && t->t->device.device_id == device;
}

/*
 * cast_new(kind, x, ue8m0, sf_mn_major, masked_m, m_indices) -> (q, sf) or NotImplemented
 *
 * The casts' common case in one call (issue 51: a cast's host cost next to a launch's): x a
 * plain CUDA torch tensor that the kernels take as it is, ue8m0 and sf_mn_major bools,
 * masked_m / m_indices None or plain CUDA int32 tensors. The outputs are allocated here (one
 * float8_e4m3fn buffer: q's bytes, then sf's at a 256-byte boundary), the library checks and
 * launches on torch's current stream, and only then are q and sf carved out of the buffer as
 * views (torch's work after the launch overlaps the kernel). q and sf have the shapes,
 * strides and dtypes of cast.py's checked path, and the same bytes (the same kernel on the
 * same values). Anything else -- another type, dtype, layout or size, a bad argument, the
 * knob's "checked" -- answers NotImplemented having done nothing, and the package's checked
 * path decides, with its own messages. Errors raised here: the library's refusals and torch's
 * (out of memory), as the checked path raises them.
 */
PyObject *qgpy_cast_new(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "cast_new() takes 6 arguments (%zd given)", nargs);
    const long kind = PyLong_AsLong(args[0]);
    if (kind == -1 && PyErr_Occurred())
        return NULL;
    if (kind < QG_CAST_KIND_PER_TOKEN || kind > QG_CAST_KIND_SILU_MUL)
        return PyErr_Format(PyExc_ValueError, "qgemm: unknown cast kind %ld", kind);
    PyObject *const ue = args[2], *const mn = args[3], *const masked = args[4],
                    *const indices = args[5];
    const int silu = kind == QG_CAST_KIND_SILU_MUL;
    if ((ue != Py_True && ue != Py_False) || (mn != Py_True && mn != Py_False) ||
        (!silu && (mn == Py_True || masked != Py_None || indices != Py_None)) ||
        (masked != Py_None && indices != Py_None) || !qgpy_torch_outputs_ready() ||
        host_checked())
        Py_RETURN_NOTIMPLEMENTED;
    const int ue8m0 = ue == Py_True, sf_mn_major = mn == Py_True;
    const int rows_mask = masked != Py_None ? 1 : indices != Py_None ? 2 : 0;

    qgpy_tensor t[C_SLOTS];
    memset(t, 0, sizeof t);
    if (qgpy_torch_borrow(args[1], cast_names[C_X], &t[C_X]) != 1)
        Py_RETURN_NOTIMPLEMENTED; /* (borrowed descriptions owe nothing) */
    const DLTensor *x = t[C_X].t;
    if (!((x->dtype.code == kDLBfloat && x->dtype.bits == 16) ||
          (x->dtype.code == kDLFloat && x->dtype.bits == 32)))
        Py_RETURN_NOTIMPLEMENTED;
    const int nd = x->ndim, device = x->device.device_id;
    int64_t sh[QGPY_MAX_NDIM], numel = 1;
    for (int i = 0; i < nd; i++)
        numel *= (sh[i] = x->shape[i]); /* (qgpy_shape_invalid: no overflow) */

    /* the checked path's conditions (cast.py): where it raises or takes torch's formulas,
     * NotImplemented. q is contiguous, of qnd dims; sf's view sfnd dims at sf_strides (in
     * the buffer's first sf_count floats) */
    int64_t rows, cols, m, groups, k;
    int64_t qsh[QGPY_MAX_NDIM], sfsh[QGPY_MAX_NDIM], sfst[QGPY_MAX_NDIM];
    int qnd = nd, sfnd = nd, sf_ld = 0;
    for (int i = 0; i < nd; i++)
        qsh[i] = sfsh[i] = sh[i];
    switch (kind) {
    case QG_CAST_KIND_PER_TOKEN:
        if (nd < 1 || (cols = sh[nd - 1]) == 0 || (rows = numel / cols) == 0 ||
            rows > CAST_SIZE_MAX || cols > CAST_SIZE_MAX)
            Py_RETURN_NOTIMPLEMENTED;
        m = rows, groups = 1, k = cols;
        sfsh[nd - 1] = cdiv(k, 128);
        break;
    case QG_CAST_KIND_PER_BLOCK:
        if (nd < 2 || numel == 0)
            Py_RETURN_NOTIMPLEMENTED;
        m = sh[nd - 2], k = cols = sh[nd - 1], groups = numel / (m * k);
        if (m > CAST_SIZE_MAX || k > CAST_SIZE_MAX || groups > INT32_MAX / 2)
            Py_RETURN_NOTIMPLEMENTED;
        rows = groups * m;
        sfsh[nd - 2] = cdiv(m, 128), sfsh[nd - 1] = cdiv(k, 128);
        break;
    case QG_CAST_KIND_PER_CHANNEL:
        if (nd != 2 || numel == 0 || sh[0] % 128 || sh[0] > CAST_SIZE_MAX ||
            sh[1] > CAST_SIZE_MAX)
            Py_RETURN_NOTIMPLEMENTED;
        m = rows = sh[0], k = cols = sh[1], groups = 1;
        sfsh[0] = m / 128;
        break;
    default: /* silu_and_mul_fp8_quant */
        if (nd < 1 || (cols = sh[nd - 1]) % 2 || (rows_mask == 1 && nd != 3) ||
            (rows_mask == 2 && nd != 2) || (sf_mn_major && nd != 2 && nd != 3))
            Py_RETURN_NOTIMPLEMENTED;
        k = cols / 2, m = nd >= 2 ? sh[nd - 2] : 1;
        rows = cols ? numel / cols : 0, groups = m ? rows / m : 0;
        if (rows == 0 || k == 0 || m > CAST_SIZE_MAX || k > CAST_SIZE_MAX || groups > INT32_MAX)
            Py_RETURN_NOTIMPLEMENTED;
        if (rows_mask && !take_aux(rows_mask == 1 ? masked : indices, sh[0], device, &t[C_AUX]))
            Py_RETURN_NOTIMPLEMENTED;
        qsh[nd - 1] = k, sfsh[nd - 1] = cdiv(k, 128);
        break;
    }
    if (!as_rows(&t[C_X], rows, cols))
        Py_RETURN_NOTIMPLEMENTED;
    const int64_t kb = cdiv(k, 128);
    int64_t sf_count, sf_store[3]; /* sf_store: the M-major storage [groups, kb, sf_ld] */
    if (sf_mn_major) {
        sf_ld = (int)((m + 3) / 4 * 4);
        sf_store[0] = groups, sf_store[1] = kb, sf_store[2] = sf_ld;
        sf_count = groups * kb * sf_ld;
        /* storage.transpose(1, 2)[:, :m, :], squeezed for x [M, 2N] (cast.py) */
        sfnd = nd;
        const int64_t v_sh[3] = {groups, m, kb}, v_st[3] = {kb * sf_ld, 1, sf_ld};
        for (int i = 0; i < nd; i++)
            sfsh[i] = v_sh[3 - nd + i], sfst[i] = v_st[3 - nd + i];
    } else {
        sf_count = 1;
        for (int i = 0; i < sfnd; i++)
            sf_count *= sfsh[i];
        contiguous_strides(sfsh, sfnd, sfst);
    }
    /* the outputs: q, and sf (or, M-major, the storage its view is carved from after the launch) */
    PyObject *result = NULL, *q = NULL, *sf = NULL, *sf_buf = NULL;
    uintptr_t q_addr = 0, sf_addr = 0;
    if (!(q = qgpy_torch_empty(args[1], qsh, qnd, 0)) ||
        !(sf_buf = sf_mn_major ? qgpy_torch_empty(args[1], sf_store, 3, 1)
                               : qgpy_torch_empty(args[1], sfsh, sfnd, 1)) ||
        qgpy_torch_data_ptr(q, &q_addr) < 0 || qgpy_torch_data_ptr(sf_buf, &sf_addr) < 0)
        goto done;
    describe_new(&t[C_OUT], cast_names[C_OUT], q_addr, device, 0, rows, k);
    describe_new(&t[C_SF], cast_names[C_SF], sf_addr, device, 1, 1, sf_count);
    qg_cast_args a;
    int dev = -1;
    unsigned long long stream = 0;
    if (cast_args((int)kind, t, (int)m, (int)groups, sf_mn_major, sf_ld, ue8m0, rows_mask, &a,
                  &dev) < 0 ||
        qgpy_torch_current_stream(dev, &stream) < 0)
        goto done;
    qg_status st;
    if (run_cast(dev, kind, &a, stream, &st) < 0)
        goto done;
    if (st != QG_SUCCESS) {
        qgpy_raise_status(st);
        goto done;
    }
    /* after the launch: the M-major view */
    if (sf_mn_major) {
        if (!(sf = qgpy_torch_carve(sf_buf, 0, sfsh, sfst, sfnd, 0)))
            goto done;
    } else {
        sf = sf_buf;
        sf_buf = NULL;
    }
    result = PyTuple_Pack(2, q, sf);
done:
    Py_XDECREF(q);
    Py_XDECREF(sf);
    Py_XDECREF(sf_buf);
    return result;
}
