/*
 * torch.c -- describe torch tensors without DLPack (the fast path, qgpy.h).
 *
 * Why: a DLPack export costs PyTorch ~4.7 us per tensor (five or six a call)
 * and, given a stream, an event per tensor; torch.cuda.current_stream() ~5 us
 * more (measured on an H200 host, 2026-11-25). Reading the metadata the
 * checks need costs a few attribute reads per tensor, and torch's current
 * stream comes from torch._C._cuda_getCurrentRawStream(device) as an int.
 *
 * Invariants:
 *  - only exact torch.Tensor / nn.Parameter objects on CUDA are described;
 *    anything else (and any exception while reading) answers 0, never an
 *    error, so the DLPack path still decides and words every rejection;
 *  - the data address is data_ptr() (storage offset included), strides are
 *    torch's element strides, device type kDLCUDA: what torch's own DLPack
 *    export would say, so layout.c sees the same DLTensor either way;
 *  - the tables below are filled once, with the GIL held, by
 *    qgpy_torch_init; they hold strong references for the process lifetime.
 */
#include "qgpy.h"

#include <string.h>

static PyTypeObject *g_tensor_type, *g_parameter_type;
static PyObject *g_current_stream; /* device index -> raw CUstream handle */
static PyObject *g_dtypes;         /* torch.dtype -> (code | bits << 8) */
static PyObject *s_dtype, *s_shape, *s_is_cuda, *s_stride, *s_data_ptr, *s_get_device;
/* the casts' outputs (qgpy_torch_empty, qgpy_torch_carve): torch.float8_e4m3fn and
 * torch.float32, the method names and new_empty's keyword names ("dtype",) */
static PyObject *g_e4m3, *g_f32, *s_new_empty, *s_view, *s_as_strided, *g_dtype_kw;

static const struct {
    const char *name; /* attribute of the torch module */
    uint8_t code, bits;
} dtype_table[] = {
    {"float8_e4m3fn", kDLFloat8_e4m3fn, 8},
    {"float8_e4m3fnuz", kDLFloat8_e4m3fnuz, 8},
    {"float8_e5m2", kDLFloat8_e5m2, 8},
    {"float8_e5m2fnuz", kDLFloat8_e5m2fnuz, 8},
    {"float8_e8m0fnu", kDLFloat8_e8m0fnu, 8},
    {"float16", kDLFloat, 16},
    {"float32", kDLFloat, 32},
    {"float64", kDLFloat, 64},
    {"bfloat16", kDLBfloat, 16},
    {"bool", kDLBool, 8},
    {"int8", kDLInt, 8},
    {"int16", kDLInt, 16},
    {"int32", kDLInt, 32},
    {"int64", kDLInt, 64},
    {"uint8", kDLUInt, 8},
};

static PyObject *intern(const char *s)
{
    return PyUnicode_InternFromString(s);
}

int qgpy_torch_init(PyObject *torch, PyObject *current_stream)
{
    if (g_dtypes)
        return 0; /* once per process */
    if (!PyCallable_Check(current_stream))
        return qgpy_errorf(PyExc_TypeError, "qgemm: current_stream must be callable, got %s",
                           Py_TYPE(current_stream)->tp_name);
    PyObject *tensor = PyObject_GetAttrString(torch, "Tensor");
    PyObject *nn = tensor ? PyObject_GetAttrString(torch, "nn") : NULL;
    PyObject *parameter = nn ? PyObject_GetAttrString(nn, "Parameter") : NULL;
    Py_XDECREF(nn);
    PyObject *dtypes = parameter ? PyDict_New() : NULL;
    if (!dtypes)
        goto fail;
    if (!PyType_Check(tensor) || !PyType_Check(parameter)) {
        qgpy_errorf(PyExc_TypeError, "qgemm: torch.Tensor and torch.nn.Parameter must be types");
        goto fail;
    }
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++) {
        PyObject *dt = PyObject_GetAttrString(torch, dtype_table[i].name);
        if (!dt) { /* an older torch without this dtype */
            PyErr_Clear();
            continue;
        }
        PyObject *v = PyLong_FromLong(dtype_table[i].code | dtype_table[i].bits << 8);
        int rc = v ? PyDict_SetItem(dtypes, dt, v) : -1;
        Py_DECREF(dt);
        Py_XDECREF(v);
        if (rc < 0)
            goto fail;
    }
    if (!(s_dtype = intern("dtype")) || !(s_shape = intern("shape")) ||
        !(s_is_cuda = intern("is_cuda")) || !(s_stride = intern("stride")) ||
        !(s_data_ptr = intern("data_ptr")) || !(s_get_device = intern("get_device")) ||
        !(s_new_empty = intern("new_empty")) || !(s_view = intern("view")) ||
        !(s_as_strided = intern("as_strided")) || !(g_dtype_kw = PyTuple_Pack(1, s_dtype)))
        goto fail;
    /* (an older torch without float8_e4m3fn: the casts' fast path stays off) */
    g_e4m3 = PyObject_GetAttrString(torch, "float8_e4m3fn");
    if (!g_e4m3)
        PyErr_Clear();
    if (!(g_f32 = PyObject_GetAttrString(torch, "float32")))
        goto fail;
    g_tensor_type = (PyTypeObject *)tensor;
    g_parameter_type = (PyTypeObject *)parameter;
    Py_INCREF(current_stream);
    g_current_stream = current_stream;
    g_dtypes = dtypes; /* last: qgpy_torch_ready() */
    return 0;
fail:
    Py_XDECREF(tensor);
    Py_XDECREF(parameter);
    Py_XDECREF(dtypes);
    return -1;
}

int qgpy_torch_ready(void)
{
    return g_dtypes != NULL;
}

/* obj.name() through vectorcall: torch's methods are method descriptors, which
 * PyObject_VectorcallMethod calls without making a bound method first (as
 * PyObject_CallMethodObjArgs does); three calls a tensor, five or six tensors
 * a call. No PY_VECTORCALL_ARGUMENTS_OFFSET: args[-1] is not ours. */
static PyObject *call_method(PyObject *obj, PyObject *name)
{
    PyObject *args[1] = {obj};
    return PyObject_VectorcallMethod(name, args, 1, NULL);
}

/* A tuple of ints (torch.Size is one) -> out[]; 0 unless it has `ndim` ints. */
static int int64_tuple(PyObject *tuple, int ndim, int64_t *out)
{
    if (!tuple || !PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != ndim)
        return 0;
    for (int i = 0; i < ndim; i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
        if (v == -1 && PyErr_Occurred())
            return 0;
        out[i] = v;
    }
    return 1;
}

/* 1 with the tensor's metadata in out->own; 0 (no error set) otherwise. */
static int describe(PyObject *obj, qgpy_tensor *out)
{
    PyObject *is_cuda = PyObject_GetAttr(obj, s_is_cuda);
    const int cuda = is_cuda == Py_True;
    Py_XDECREF(is_cuda);
    if (!cuda)
        return 0;
    PyObject *dtype = PyObject_GetAttr(obj, s_dtype);
    PyObject *code = dtype ? PyDict_GetItemWithError(g_dtypes, dtype) : NULL; /* borrowed */
    Py_XDECREF(dtype);
    if (!code)
        return 0;
    const long c = PyLong_AsLong(code);

    PyObject *shape = PyObject_GetAttr(obj, s_shape);
    const Py_ssize_t ndim = shape && PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
    int ok = ndim >= 0 && ndim <= QGPY_MAX_NDIM && int64_tuple(shape, (int)ndim, out->own_shape) &&
             qgpy_shape_invalid(out->own_shape, (int)ndim) < 0; /* (the DLPack path words it) */
    Py_XDECREF(shape);
    if (!ok)
        return 0;
    PyObject *strides = call_method(obj, s_stride);
    ok = int64_tuple(strides, (int)ndim, out->own_strides);
    Py_XDECREF(strides);
    if (!ok)
        return 0;

    PyObject *ptr = call_method(obj, s_data_ptr); /* raises for tensors without storage */
    unsigned long long data = ptr ? PyLong_AsUnsignedLongLong(ptr) : 0;
    Py_XDECREF(ptr);
    if (!ptr || PyErr_Occurred())
        return 0;
    PyObject *dev = call_method(obj, s_get_device);
    long device = dev ? PyLong_AsLong(dev) : -1;
    Py_XDECREF(dev);
    if (device < 0 || device > INT32_MAX)
        return 0;

    DLTensor *t = &out->own;
    memset(t, 0, sizeof *t);
    t->data = (void *)(uintptr_t)data;
    t->device.device_type = kDLCUDA;
    t->device.device_id = (int32_t)device;
    t->ndim = (int32_t)ndim;
    t->dtype.code = (uint8_t)(c & 0xff);
    t->dtype.bits = (uint8_t)(c >> 8);
    t->dtype.lanes = 1;
    t->shape = out->own_shape;
    t->strides = out->own_strides;
    out->t = t;
    out->dtype = t->dtype;
    return 1;
}

int qgpy_torch_borrow(PyObject *obj, const char *name, qgpy_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->name = name;
    if (!g_dtypes || (Py_TYPE(obj) != g_tensor_type && Py_TYPE(obj) != g_parameter_type))
        return 0;
    if (describe(obj, out))
        return 1;
    PyErr_Clear(); /* the DLPack path will say what is wrong with it */
    out->t = NULL;
    return 0;
}

int qgpy_torch_current_stream(int device, unsigned long long *handle)
{
    if (!g_current_stream)
        return qgpy_errorf(PyExc_RuntimeError, "qgemm: the torch fast path is not initialized");
    PyObject *index = PyLong_FromLong(device);
    PyObject *s = index ? PyObject_CallOneArg(g_current_stream, index) : NULL;
    Py_XDECREF(index);
    if (!s)
        return -1;
    unsigned long long h = PyLong_AsUnsignedLongLong(s);
    Py_DECREF(s);
    if (h == (unsigned long long)-1 && PyErr_Occurred())
        return qgpy_errorf(PyExc_TypeError,
                           "qgemm: torch's current stream of cuda:%d is not a CUstream handle",
                           device);
    *handle = h;
    return 0;
}

int qgpy_tensor_take(PyObject *obj, const char *name, unsigned long long stream, int no_sync,
                     qgpy_tensor *out)
{
    if (no_sync && qgpy_torch_borrow(obj, name, out) == 1)
        return 0;
    return qgpy_tensor_import(obj, name, no_sync ? -1 : qgpy_dlpack_stream(stream), out);
}

int qgpy_torch_take_all(PyObject *const *objs, const char *const *names, int n, int none_ok,
                        unsigned long long *stream, qgpy_tensor *t)
{
    int device = -1;
    for (int i = 0; i < n; i++) {
        if (objs[i] == Py_None && none_ok) {
            memset(&t[i], 0, sizeof t[i]);
            continue;
        }
        if (qgpy_torch_borrow(objs[i], names[i], &t[i]) != 1) {
            for (int j = 0; j <= i; j++) /* borrowed tensors owe nothing; kept for symmetry */
                qgpy_tensor_release(&t[j]);
            return 0;
        }
        if (device < 0)
            device = t[i].t->device.device_id;
    }
    if (device < 0) /* no tensor at all: let the whole path say what is missing */
        return 0;
    return qgpy_torch_current_stream(device, stream) < 0 ? -1 : 1;
}

int qgpy_torch_outputs_ready(void)
{
    return g_dtypes != NULL && g_e4m3 != NULL;
}

static PyObject *int64s(const int64_t *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

PyObject *qgpy_torch_empty(PyObject *like, const int64_t *shape, int ndim, int f32)
{
    PyObject *size = int64s(shape, ndim);
    if (!size)
        return NULL;
    /* like.new_empty(size, dtype=...): like's device without a torch.device object */
    PyObject *args[3] = {like, size, f32 ? g_f32 : g_e4m3};
    PyObject *r = PyObject_VectorcallMethod(s_new_empty, args, 2,
                                            g_dtype_kw);
    Py_DECREF(size);
    return r;
}

PyObject *qgpy_torch_carve(PyObject *buf, int f32, const int64_t *shape, const int64_t *strides,
                           int ndim, int64_t offset)
{
    PyObject *size = int64s(shape, ndim), *stride = size ? int64s(strides, ndim) : NULL;
    PyObject *off = stride ? PyLong_FromLongLong(offset) : NULL;
    PyObject *base = NULL, *r = NULL;
    if (off) {
        if (f32) {
            PyObject *vargs[2] = {buf, g_f32};
            base = PyObject_VectorcallMethod(s_view, vargs, 2, NULL);
        } else {
            Py_INCREF(buf);
            base = buf;
        }
    }
    if (base) {
        PyObject *aargs[4] = {base, size, stride, off};
        r = PyObject_VectorcallMethod(s_as_strided, aargs, 4, NULL);
    }
    Py_XDECREF(base);
    Py_XDECREF(off);
    Py_XDECREF(stride);
    Py_XDECREF(size);
    return r;
}

int qgpy_torch_data_ptr(PyObject *t, uintptr_t *ptr)
{
    PyObject *p = call_method(t, s_data_ptr);
    if (!p)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(p);
    Py_DECREF(p);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *ptr = (uintptr_t)v;
    return 0;
}
