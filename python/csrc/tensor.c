/*
 * tensor.c -- borrow tensors through the DLPack protocol and check them.
 *
 * Protocol (Python array API standard, "DLPack support"):
 *  - obj.__dlpack_device__() -> (device_type, device_id);
 *  - obj.__dlpack__(stream=S, max_version=(1, 1)) -> capsule. For CUDA, S is
 *    the consumer's stream as an integer (1 = legacy default stream, 2 =
 *    per-thread default, else the CUstream handle; 0 is not allowed): the
 *    producer makes S wait for the work it has queued on the tensor; S = -1
 *    asks for no synchronization (used when S is the producer's own current
 *    stream, e.g. PyTorch's, where ordering is already given). Producers
 *    that predate DLPack 1.0 reject max_version with TypeError; they are asked
 *    again without it and return an unversioned "dltensor" capsule.
 *  - Consuming a capsule = renaming it "used_dltensor[_versioned]"; from then
 *    on the capsule's destructor leaves the tensor alone and we must call its
 *    deleter exactly once (qgpy_tensor_release).
 * The borrow lasts one call: the GEMM is enqueued on the caller's stream
 * before the deleter runs, and the caller still holds the tensor object, so
 * its memory stays valid in the stream order (as for any framework op).
 */
#include "qgpy.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* More dimensions than any producer describes honestly (NumPy allows 64,
 * qgemm reads at most 3): the bound keeps messages from reading past a
 * short shape array. */
#define QGPY_DLPACK_MAX_NDIM 32

static const char CAPSULE_VERSIONED[] = "dltensor_versioned";
static const char CAPSULE_VERSIONED_USED[] = "used_dltensor_versioned";
static const char CAPSULE_LEGACY[] = "dltensor";
static const char CAPSULE_LEGACY_USED[] = "used_dltensor";

/* Raise `type` with a formatted message, chained to the pending exception
 * (so the producer's own message stays visible as __cause__). */
static int raise_from_pending(PyObject *type, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int raise_from_pending(PyObject *type, const char *fmt, ...)
{
    /* KeyboardInterrupt, SystemExit, GeneratorExit (any BaseException that is
     * not an Exception) propagate as they are (issue 53): they are no bad
     * argument. */
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyObject *etype, *evalue, *etb;
    PyErr_Fetch(&etype, &evalue, &etb);
    PyErr_NormalizeException(&etype, &evalue, &etb);
    if (etb && evalue)
        PyException_SetTraceback(evalue, etb);

    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    PyObject *exc = PyObject_CallFunction(type, "s", msg);
    if (exc) {
        if (evalue) { /* both calls steal a reference */
            Py_INCREF(evalue);
            PyException_SetCause(exc, evalue);
            Py_INCREF(evalue);
            PyException_SetContext(exc, evalue);
        }
        PyErr_SetObject(type, exc);
        Py_DECREF(exc);
    }
    Py_XDECREF(etype);
    Py_XDECREF(evalue);
    Py_XDECREF(etb);
    return -1;
}

static int is_cuda_memory(int32_t device_type)
{
    return device_type == kDLCUDA || device_type == kDLCUDAManaged;
}

/* __dlpack_device__() -> device type; TypeError for non-DLPack objects. */
static int query_device_type(PyObject *obj, const char *name, int32_t *device_type)
{
    if (!PyObject_HasAttrString(obj, "__dlpack__") ||
        !PyObject_HasAttrString(obj, "__dlpack_device__")) {
        return qgpy_errorf(PyExc_TypeError,
                           "qgemm: %s must be a DLPack tensor (an object with __dlpack__ and "
                           "__dlpack_device__, e.g. a torch.Tensor), got %s",
                           name, Py_TYPE(obj)->tp_name);
    }
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!dev)
        return raise_from_pending(PyExc_ValueError, "qgemm: %s.__dlpack_device__() failed", name);
    long type = -1;
    if (PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2)
        type = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
    Py_DECREF(dev);
    if (type == -1) {
        PyErr_Clear();
        return qgpy_errorf(PyExc_TypeError,
                           "qgemm: %s.__dlpack_device__() must return (device_type, device_id)",
                           name);
    }
    *device_type = (int32_t)type;
    return 0;
}

/* obj.__dlpack__(**kwargs), first with max_version, then without. */
long long qgpy_dlpack_stream(uint64_t handle)
{
    return handle ? (long long)handle : 1; /* 0 is ambiguous in the protocol */
}

static PyObject *export_capsule(PyObject *obj, const char *name, int32_t device_type,
                                long long stream)
{
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
    if (!method)
        return NULL;
    PyObject *kwargs = PyDict_New();
    PyObject *capsule = NULL;
    if (!kwargs)
        goto out;
    if (is_cuda_memory(device_type)) {
        PyObject *s = PyLong_FromLongLong(stream);
        if (!s || PyDict_SetItemString(kwargs, "stream", s) < 0) {
            Py_XDECREF(s);
            goto out;
        }
        Py_DECREF(s);
    }
    PyObject *version = Py_BuildValue("(ii)", QGPY_DLPACK_MAJOR, QGPY_DLPACK_MINOR);
    if (!version || PyDict_SetItemString(kwargs, "max_version", version) < 0) {
        Py_XDECREF(version);
        goto out;
    }
    Py_DECREF(version);

    PyObject *empty = PyTuple_New(0);
    if (!empty)
        goto out;
    capsule = PyObject_Call(method, empty, kwargs);
    if (!capsule && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear(); /* a pre-1.0 producer: no max_version keyword */
        PyDict_DelItemString(kwargs, "max_version");
        capsule = PyObject_Call(method, empty, kwargs);
    }
    Py_DECREF(empty);
    if (!capsule)
        raise_from_pending(PyExc_ValueError,
                           "qgemm: %s could not be exported through DLPack "
                           "(its __dlpack__ raised; see the cause above)",
                           name);
out:
    Py_XDECREF(kwargs);
    Py_DECREF(method);
    return capsule;
}

/* Take ownership of the tensor inside `capsule` (see the protocol above). */
static int consume_capsule(PyObject *capsule, const char *name, qgpy_tensor *out)
{
    if (PyCapsule_IsValid(capsule, CAPSULE_VERSIONED)) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, CAPSULE_VERSIONED);
        if (!m || PyCapsule_SetName(capsule, CAPSULE_VERSIONED_USED) < 0)
            return -1;
        out->managed = m;
        out->versioned = 1;
        if (m->version.major != QGPY_DLPACK_MAJOR) {
            /* another ABI: only the deleter may be touched */
            qgpy_errorf(PyExc_ValueError,
                        "qgemm: %s is a DLPack %u.%u tensor; qgemm reads DLPack %d.x", name,
                        (unsigned)m->version.major, (unsigned)m->version.minor, QGPY_DLPACK_MAJOR);
            qgpy_tensor_release(out);
            return -1;
        }
        out->flags = m->flags;
        out->t = &m->dl_tensor;
        return 0;
    }
    if (PyCapsule_IsValid(capsule, CAPSULE_LEGACY)) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, CAPSULE_LEGACY);
        if (!m || PyCapsule_SetName(capsule, CAPSULE_LEGACY_USED) < 0)
            return -1;
        out->managed = m;
        out->versioned = 0;
        out->flags = 0;
        out->t = &m->dl_tensor;
        return 0;
    }
    const char *cname = PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : NULL;
    PyErr_Clear();
    return qgpy_errorf(PyExc_TypeError,
                       "qgemm: %s.__dlpack__() returned %s%s%s, not an unused DLPack capsule", name,
                       Py_TYPE(capsule)->tp_name, cname ? " named " : "", cname ? cname : "");
}

int qgpy_tensor_import(PyObject *obj, const char *name, long long dlpack_stream, qgpy_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->name = name;
    int32_t device_type = 0;
    if (query_device_type(obj, name, &device_type) < 0)
        return -1;
    PyObject *capsule = export_capsule(obj, name, device_type, dlpack_stream);
    if (!capsule)
        return -1;
    int rc = consume_capsule(capsule, name, out);
    Py_DECREF(capsule);
    if (rc == 0)
        out->dtype = out->t->dtype;
    /* A producer's metadata is checked before anything reads shape[] or
     * strides[] (issue 27: a NULL shape crashed, ndim 100000 printed heap
     * words in the shape of the error message). */
    if (rc == 0 && out->t->ndim < 0) {
        qgpy_errorf(PyExc_ValueError, "qgemm: %s has a negative ndim", name);
        qgpy_tensor_release(out);
        return -1;
    }
    if (rc == 0 && out->t->ndim > QGPY_DLPACK_MAX_NDIM) {
        qgpy_errorf(PyExc_ValueError,
                    "qgemm: %s has ndim %d; qgemm reads tensors of at most %d dimensions", name,
                    (int)out->t->ndim, QGPY_DLPACK_MAX_NDIM);
        qgpy_tensor_release(out);
        return -1;
    }
    if (rc == 0 && out->t->ndim > 0 && !out->t->shape) {
        qgpy_errorf(PyExc_ValueError, "qgemm: %s has ndim %d but shape == NULL (a broken DLPack "
                    "producer)", name, (int)out->t->ndim);
        qgpy_tensor_release(out);
        return -1;
    }
    /* Sizes every check after this may multiply (found by
     * tests/python/test_fuzz_extension.py: sf_layout took out [-2^63, 16] as
     * an empty tensor, its element count wrapping to 0). */
    /* The messages name the dimension, never the values: this check reads
     * all ndim entries before any caller has checked the rank, and a
     * producer whose ndim overstates its shape array hands us words of its
     * heap there (tests/python/test_edges.py, item 6). */
    int bad = rc == 0 ? qgpy_shape_invalid(out->t->shape, out->t->ndim) : -1;
    if (bad >= 0) {
        if (out->t->shape[bad] < 0)
            qgpy_errorf(PyExc_ValueError, "qgemm: %s has a negative dimension (dimension %d of %d)",
                        name, bad, (int)out->t->ndim);
        else
            qgpy_errorf(PyExc_ValueError,
                        "qgemm: %s has more than 2^63 elements (at dimension %d of %d)", name, bad,
                        (int)out->t->ndim);
        qgpy_tensor_release(out);
        return -1;
    }
    return rc;
}

int qgpy_shape_invalid(const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return i;
    for (int i = 0; i < ndim; i++) /* zero dimensions left out: their partial products too */
        if (shape[i] > 0 && __builtin_mul_overflow(n, shape[i], &n))
            return i;
    return -1;
}

void qgpy_tensor_bytes_are_e4m3(qgpy_tensor *t)
{
    if ((t->dtype.code == kDLUInt || t->dtype.code == kDLInt) && t->dtype.bits == 8 &&
        t->dtype.lanes == 1)
        t->dtype.code = kDLFloat8_e4m3fn;
}

void qgpy_tensor_release(qgpy_tensor *t)
{
    if (!t->managed)
        return;
    /* a deleter may run Python code (a producer's refcount drop): keep any
     * exception we are about to raise out of its way */
    PyObject *etype, *evalue, *etb;
    PyErr_Fetch(&etype, &evalue, &etb);
    if (t->versioned) {
        DLManagedTensorVersioned *m = t->managed;
        if (m->deleter)
            m->deleter(m);
    } else {
        DLManagedTensor *m = t->managed;
        if (m->deleter)
            m->deleter(m);
    }
    PyErr_Restore(etype, evalue, etb);
    t->managed = NULL;
    t->t = NULL;
}

/* ---- metadata ------------------------------------------------------------ */

int64_t qgpy_dim(const qgpy_tensor *t, int i)
{
    if (i < 0)
        i += t->t->ndim;
    return t->t->shape[i];
}

int64_t qgpy_stride(const qgpy_tensor *t, int i)
{
    if (i < 0)
        i += t->t->ndim;
    if (t->t->strides)
        return t->t->strides[i];
    int64_t s = 1; /* pre-1.0 producers may describe compact tensors this way */
    for (int j = t->t->ndim - 1; j > i; j--)
        if (__builtin_mul_overflow(s, t->t->shape[j], &s))
            return INT64_MAX; /* hostile shapes: saturate, the 2^36 stride bounds refuse it */
    return s;
}

void *qgpy_address(const qgpy_tensor *t)
{
    /* In integers: a producer's byte_offset may take the sum past the top of
     * the address space, which pointer arithmetic may not (UBSan, found by
     * tests/python/test_fuzz_extension.py); the library's pointer checks
     * refuse whatever address results. */
    return (void *)((uintptr_t)t->t->data + (uintptr_t)t->t->byte_offset);
}

static const char *join(const qgpy_tensor *t, int strides, char open, char close, char *buf,
                        size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "%c", open);
    for (int i = 0; i < t->t->ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? ", " : "",
                              strides ? qgpy_stride(t, i) : t->t->shape[i]);
    if (n < size)
        snprintf(buf + n, size - n, "%s%c", (strides && t->t->ndim == 1) ? "," : "", close);
    return buf;
}

const char *qgpy_shape_str(const qgpy_tensor *t, char *buf, size_t size)
{
    return join(t, 0, '[', ']', buf, size);
}

const char *qgpy_strides_str(const qgpy_tensor *t, char *buf, size_t size)
{
    return join(t, 1, '(', ')', buf, size);
}

/* ---- checks -------------------------------------------------------------- */

static const char *dtype_name(DLDataType dt, char *buf, size_t size)
{
    static const char *const float8[] = {"float8_e3m4",     "float8_e4m3",     "float8_e4m3b11fnuz",
                                         "float8_e4m3fn",   "float8_e4m3fnuz", "float8_e5m2",
                                         "float8_e5m2fnuz", "float8_e8m0fnu",  "float6_e2m3fn",
                                         "float6_e3m2fn",   "float4_e2m1fn"};
    int n;
    switch (dt.code) {
    case kDLInt: n = snprintf(buf, size, "int%u", dt.bits); break;
    case kDLUInt: n = snprintf(buf, size, "uint%u", dt.bits); break;
    case kDLFloat: n = snprintf(buf, size, "float%u", dt.bits); break;
    case kDLBfloat: n = snprintf(buf, size, "bfloat%u", dt.bits); break;
    case kDLComplex: n = snprintf(buf, size, "complex%u", dt.bits); break;
    case kDLBool: n = snprintf(buf, size, "bool"); break;
    case kDLOpaqueHandle: n = snprintf(buf, size, "opaque handle"); break;
    default:
        if (dt.code >= kDLFloat8_e3m4 && dt.code <= kDLFloat4_e2m1fn)
            n = snprintf(buf, size, "%s", float8[dt.code - kDLFloat8_e3m4]);
        else
            n = snprintf(buf, size, "DLPack type code %u (%u bits)", dt.code, dt.bits);
    }
    if (dt.lanes != 1 && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "x%u", dt.lanes);
    return buf;
}

int qgpy_check_dtype(const qgpy_tensor *t, qgpy_dtype want)
{
    static const struct {
        uint8_t code, bits;
        const char *name;
    } types[] = {
        [QGPY_E4M3] = {kDLFloat8_e4m3fn, 8, "float8_e4m3fn"},
        [QGPY_F32] = {kDLFloat, 32, "float32"},
        [QGPY_BF16] = {kDLBfloat, 16, "bfloat16"},
        [QGPY_I32] = {kDLInt, 32, "int32"},
    };
    DLDataType dt = t->dtype;
    if (dt.code == types[want].code && dt.bits == types[want].bits && dt.lanes == 1)
        return 0;
    char buf[64];
    return qgpy_errorf(PyExc_ValueError, "qgemm: %s must have dtype %s, got %s", t->name,
                       types[want].name, dtype_name(dt, buf, sizeof buf));
}

int qgpy_check_ndim(const qgpy_tensor *t, int ndim, const char *dims)
{
    if (t->t->ndim == ndim)
        return 0;
    /* No shape in this message: a producer whose ndim exceeds its shape array
     * (issue 53) would have heap words printed as dimensions. Only what was
     * validated is shown. */
    return qgpy_errorf(PyExc_ValueError, "qgemm: %s must be %d-D %s, got %d-D", t->name, ndim,
                       dims, (int)t->t->ndim);
}

int qgpy_check_writable(const qgpy_tensor *d)
{
    if (d->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s is read-only (its producer set the DLPack READ_ONLY flag); "
                           "pass a writable output tensor", d->name);
    if (d->flags & DLPACK_FLAG_BITMASK_IS_COPIED)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s was exported as a copy (its producer set the DLPack "
                           "IS_COPIED flag): the result would be written into the copy and "
                           "lost; pass a tensor the producer can export without copying",
                           d->name);
    return 0;
}

/* The bytes [*lo, *hi) that t's elements span; *hi == *lo for an empty tensor.
 * Saturates rather than wraps (a saturated extent counts as overlapping). */
static void byte_extent(const qgpy_tensor *t, uint64_t *lo, uint64_t *hi)
{
    uint64_t base = (uint64_t)(uintptr_t)qgpy_address(t);
    uint64_t elem = ((uint64_t)t->t->dtype.bits * (t->t->dtype.lanes ? t->t->dtype.lanes : 1) + 7) / 8;
    uint64_t below = 0, above = 0; /* bytes before / after base */
    for (int i = 0; i < t->t->ndim; i++) {
        int64_t size = qgpy_dim(t, i);
        if (size <= 0) {
            *lo = *hi = base;
            return;
        }
        int64_t stride = qgpy_stride(t, i);
        uint64_t span, mag = stride < 0 ? (uint64_t)0 - (uint64_t)stride : (uint64_t)stride;
        if (__builtin_mul_overflow(mag, (uint64_t)(size - 1), &span) ||
            __builtin_mul_overflow(span, elem, &span))
            span = UINT64_MAX / 4;
        if (stride < 0)
            below = below + span < below ? UINT64_MAX / 2 : below + span;
        else
            above = above + span < above ? UINT64_MAX / 2 : above + span;
    }
    *lo = base >= below ? base - below : 0;
    *hi = base + above + elem < base ? UINT64_MAX : base + above + elem;
}

int qgpy_check_no_overlap(const qgpy_tensor *d, const qgpy_tensor *x)
{
    if (!d->t || !x->t)
        return 0;
    uint64_t dlo, dhi, xlo, xhi;
    byte_extent(d, &dlo, &dhi);
    byte_extent(x, &xlo, &xhi);
    if (dlo == dhi || xlo == xhi || dhi <= xlo || xhi <= dlo)
        return 0;
    return qgpy_errorf(PyExc_ValueError,
                       "qgemm: %s overlaps %s in memory (%s spans bytes 0x%" PRIx64 "..0x%" PRIx64
                       ", %s 0x%" PRIx64 "..0x%" PRIx64 "): the GEMM would overwrite an input it "
                       "reads; pass a separate output tensor", d->name, x->name, d->name, dlo,
                       dhi, x->name, xlo, xhi);
}

int qgpy_check_dim(const qgpy_tensor *t, int i, int64_t want, const char *what)
{
    if (qgpy_dim(t, i) == want)
        return 0;
    char buf[160];
    return qgpy_errorf(
        PyExc_ValueError,
        "qgemm: %s has shape %s: its dimension %d must be %" PRId64 " (%s), got %" PRId64, t->name,
        qgpy_shape_str(t, buf, sizeof buf), i < 0 ? i + t->t->ndim : i, want, what, qgpy_dim(t, i));
}

int qgpy_int_dim(const qgpy_tensor *t, int i, const char *what, int *out)
{
    const int64_t v = qgpy_dim(t, i); /* >= 0: qgpy_tensor_import refuses negative sizes */
    if (v > INT32_MAX)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s = %lld (%s's dimension %d) exceeds 2^31 - 1", what,
                           (long long)v, t->name, i < 0 ? i + (int)t->t->ndim : i);
    *out = (int)v;
    return 0;
}

int qgpy_check_aligned(const qgpy_tensor *t)
{
    uintptr_t p = (uintptr_t)qgpy_address(t);
    if (p % 16 == 0)
        return 0;
    return qgpy_errorf(PyExc_ValueError,
                       "qgemm: %s's data must be 16-byte aligned (TMA), got address 0x%llx "
                       "(%d bytes past a 16-byte boundary; is it a view with an offset?)",
                       t->name, (unsigned long long)p, (int)(p % 16));
}

int qgpy_check_device(const qgpy_tensor *t, int *device)
{
    static const char *const names[] = {[kDLCPU] = "CPU",
                                        [kDLCUDA] = "CUDA",
                                        [kDLCUDAHost] = "CUDA pinned host memory",
                                        [kDLROCM] = "ROCm",
                                        [kDLCUDAManaged] = "CUDA managed memory"};
    DLDevice dev = t->t->device;
    if (dev.device_type != kDLCUDA) {
        const char *name = dev.device_type > 0 && dev.device_type <= kDLCUDAManaged
                               ? names[dev.device_type]
                               : NULL;
        if (name)
            return qgpy_errorf(PyExc_ValueError,
                               "qgemm: %s must be in CUDA device memory, got a tensor on %s",
                               t->name, name);
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s must be in CUDA device memory, got DLPack device type %d",
                           t->name, (int)dev.device_type);
    }
    if (dev.device_id < 0) /* (-1 would read as "no device yet" below) */
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: %s has DLPack device_id %d: not a CUDA device ordinal",
                           t->name, (int)dev.device_id);
    if (*device < 0) {
        *device = dev.device_id;
    } else if (dev.device_id != *device) {
        return qgpy_errorf(
            PyExc_ValueError,
            "qgemm: all tensors must be on one device: %s is on cuda:%d, the arguments "
            "before it are on cuda:%d",
            t->name, (int)dev.device_id, *device);
    }
    return 0;
}

int qgpy_tensor_swap_dims(qgpy_tensor *t, int i, int j)
{
    DLTensor *x = t->t;
    if (i < 0 || j < 0 || i >= x->ndim || j >= x->ndim)
        return qgpy_errorf(PyExc_ValueError, "qgemm: %s must have more than %d dimensions, got %d",
                           t->name, i > j ? i : j, (int)x->ndim);
    if (x != &t->own) { /* a producer's DLTensor: its arrays are not ours to change */
        if (x->ndim > QGPY_MAX_NDIM)
            return qgpy_errorf(PyExc_ValueError, "qgemm: %s has %d dimensions, at most %d here",
                               t->name, (int)x->ndim, QGPY_MAX_NDIM);
        for (int k = 0; k < x->ndim; k++) {
            t->own_shape[k] = x->shape[k];
            t->own_strides[k] = qgpy_stride(t, k);
        }
        t->own = *x;
        t->own.shape = t->own_shape;
        t->own.strides = t->own_strides;
        t->t = &t->own; /* t->managed still owes the producer's deleter */
    }
    int64_t v = t->own_shape[i];
    t->own_shape[i] = t->own_shape[j];
    t->own_shape[j] = v;
    v = t->own_strides[i];
    t->own_strides[i] = t->own_strides[j];
    t->own_strides[j] = v;
    return 0;
}
