/*
 * module.c -- qgemm._C: the Python functions over the C API.
 *
 * Thin on purpose: qgemm/__init__.py turns DeepGEMM-style calls (tuples,
 * keyword arguments, stream objects, config dicts) into these positional
 * calls; this file only moves values between Python and the library.
 *
 * Invariants:
 *  - the GIL is released around every library call that may compile or
 *    launch (seconds for a first compile), never while touching Python objects;
 *  - library failures become ValueError (QG_ERROR_INVALID_ARGUMENT,
 *    QG_ERROR_UNSUPPORTED) or RuntimeError (all else), message qg_last_error();
 *  - every tensor borrowed through DLPack is released on every path;
 *  - two ways in for the tensors of a GEMM, one check and launch behind them
 *    (check_and_launch): gemm() takes any DLPack producer; gemm_torch()
 *    reads plain CUDA torch tensors directly (torch.c) and runs on torch's
 *    current stream, or answers NotImplemented so that gemm() decides.
 */
#include "qgpy.h"

#include <limits.h>
#include <string.h>

/* A Python int -> a device ordinal (QGPY_OFFLINE allowed); range checked
 * by qgpy_context(). */
static int parse_device(PyObject *arg, int *device)
{
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT_MIN || v > INT_MAX)
        return qgpy_errorf(PyExc_ValueError, "qgemm: device ordinal %ld is out of range", v);
    *device = (int)v;
    return 0;
}

/* The context of the device ordinal `arg`; NULL with a Python error set. */
static qg_context *context_for_device_arg(PyObject *arg)
{
    int device = 0;
    if (parse_device(arg, &device) < 0)
        return NULL;
    return qgpy_context(device);
}

static int check_kind(int kind)
{
    if (kind >= QG_GEMM_DENSE && kind <= QG_GEMM_WGRAD)
        return 0;
    /* (the k-grouped GEMM has its own entry, k_grouped_torch) */
    return qgpy_errorf(PyExc_ValueError, "qgemm: unknown GEMM kind %d", kind);
}

/* None -> 0 (no forced config); (block_m, block_n, num_stages, multicast,
 * swizzle_group, split_k) -> 1 with *cfg filled. */
static int parse_config(PyObject *obj, qg_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    if (obj == Py_None)
        return 0;
    /* PyArg_ParseTuple on anything but a tuple is a SystemError ("new style
     * getargs format but argument is not a tuple"), found by
     * tests/python/test_fuzz_extension.py: say what was given instead. */
    if (!PyTuple_Check(obj))
        return qgpy_errorf(PyExc_TypeError,
                           "qgemm: config must be None or a tuple (block_m, block_n, "
                           "num_stages, multicast, swizzle_group, split_k), got %s",
                           Py_TYPE(obj)->tp_name);
    int multicast;
    if (!PyArg_ParseTuple(obj,
                          "iiiiii;qgemm: config must be (block_m, block_n, num_stages, "
                          "multicast, swizzle_group, split_k)",
                          &cfg->block_m, &cfg->block_n, &cfg->num_stages, &multicast,
                          &cfg->swizzle_group, &cfg->split_k))
        return -1;
    if (multicast < QG_MULTICAST_NONE || multicast > QG_MULTICAST_B)
        return qgpy_errorf(PyExc_ValueError,
                           "qgemm: config multicast must be 0 (none), 1 (A) or 2 (B), got %d",
                           multicast);
    cfg->multicast = (qg_multicast)multicast;
    return 1;
}

static PyObject *config_dict(const qg_config *c)
{
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:n}", "block_m", c->block_m, "block_n",
                         c->block_n, "num_stages", c->num_stages, "multicast", (int)c->multicast,
                         "swizzle_group", c->swizzle_group, "split_k", c->split_k, "num_sms",
                         c->num_sms, "smem_bytes", (Py_ssize_t)c->smem_bytes);
}

static PyObject *kernel_info_dict(const qg_kernel_info *i)
{
    return Py_BuildValue(
        "{s:i,s:i,s:i,s:i,s:i,s:d,s:O,s:O,s:O,s:O,s:O,s:O,s:s}", "registers", i->registers,
        "spill_store_bytes", i->spill_store_bytes, "spill_load_bytes", i->spill_load_bytes,
        "stack_frame_bytes", i->stack_frame_bytes, "cache_hit", i->cache_hit, "compile_ms",
        i->compile_ms, "ptx_has_wgmma", i->ptx_has_wgmma ? Py_True : Py_False, "ptx_has_tma_load",
        i->ptx_has_tma_load ? Py_True : Py_False, "ptx_has_tma_store",
        i->ptx_has_tma_store ? Py_True : Py_False, "ptx_has_setmaxnreg",
        i->ptx_has_setmaxnreg ? Py_True : Py_False, "ptx_has_stmatrix",
        i->ptx_has_stmatrix ? Py_True : Py_False, "ptx_has_multicast",
        i->ptx_has_multicast ? Py_True : Py_False, "key", i->key);
}

/* ---- functions ----------------------------------------------------------- */

static PyObject *py_version(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyUnicode_FromString(qg_version_string());
}

static PyObject *py_m_alignment(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyLong_FromLong(qg_m_alignment_for_contiguous_layout());
}

static PyObject *py_sfa_ld(PyObject *self, PyObject *arg)
{
    (void)self;
    long long m = PyLong_AsLongLong(arg);
    if (m == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLongLong(qg_sfa_ld(m));
}

/* None for a successful library call; NULL with the Python exception of
 * its status otherwise. */
static PyObject *status_result(qg_status st)
{
    if (st != QG_SUCCESS)
        return qgpy_raise_status(st);
    Py_RETURN_NONE;
}

/* The answer of gemm()/gemm_torch() to a checked K = 0 call (module attribute ZERO_K). */
static PyObject *zero_k;

static const char *const slot_names[QGPY_SLOTS] = {"a", "sfa", "b", "sfb", "d", NULL};
static const char *const idx_names[] = {"(none)", "m_indices", "masked_m", "group_ends", "c"};

/* The tail both gemm entries share: check the borrowed tensors `t`, find
 * their device's context, launch on `stream` (torch's current stream of that
 * device when use_torch_stream), and release `t` on every path. */
static PyObject *check_and_launch(int kind, qgpy_tensor t[QGPY_SLOTS], int expected_m,
                                  unsigned long long stream, int use_torch_stream,
                                  const qg_config *cfg)
{
    PyObject *result = NULL;
    qg_gemm_args ga;
    int device = 0;
    if (qgpy_gemm_args((qg_gemm_kind)kind, t, expected_m, &ga, &device) < 0)
        goto done;
    /* DeepGEMM's edges (csrc/apis/gemm.hpp, early_return), checked call and
     * all: M = 0 or N = 0 does nothing; K = 0 launches nothing and answers
     * ZERO_K, for the package to set D to C or zero (it holds the framework
     * that can). The masked GEMM keeps its own rule (M_max > 0). */
    if (kind != QG_GEMM_GROUPED_MASKED && (ga.m == 0 || ga.n == 0)) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    if ((kind == QG_GEMM_DENSE || kind == QG_GEMM_WGRAD) && ga.k == 0) {
        Py_INCREF(zero_k);
        result = zero_k;
        goto done;
    }
    if (use_torch_stream && qgpy_torch_current_stream(device, &stream) < 0)
        goto done;
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;

    qg_status st;
    struct CUstream_st *s = (struct CUstream_st *)(uintptr_t)stream;
    Py_BEGIN_ALLOW_THREADS
    switch (kind) {
    case QG_GEMM_DENSE: st = qg_fp8_gemm_nt(ctx, &ga, cfg, s); break;
    case QG_GEMM_GROUPED_CONTIGUOUS:
        st = qg_m_grouped_fp8_gemm_nt_contiguous(ctx, &ga, cfg, s);
        break;
    case QG_GEMM_GROUPED_PSUM: st = qg_m_grouped_fp8_gemm_nt_psum(ctx, &ga, cfg, s); break;
    case QG_GEMM_WGRAD: st = qg_fp8_gemm_nt_wgrad(ctx, &ga, cfg, s); break;
    default: st = qg_m_grouped_fp8_gemm_nt_masked(ctx, &ga, cfg, s); break;
    }
    Py_END_ALLOW_THREADS
    result = status_result(st);
done:
    for (int i = 0; i < QGPY_SLOTS; i++)
        qgpy_tensor_release(&t[i]);
    return result;
}

static const char *slot_name(int kind, int i)
{
    return i == QGPY_IDX ? idx_names[kind] : slot_names[i];
}

/* gemm(kind, a, sfa, b, sfb, d, idx_or_None, expected_m, stream, config,
 *      e4m3_bytes, no_sync): tensors through DLPack. Bit i of e4m3_bytes set
 *      = slot i exports e4m3 data as uint8 (see qgpy_tensor_bytes_are_e4m3);
 *      bit i of no_sync set = slot i's producer is told not to synchronize
 *      (stream=-1), because `stream` is already its current stream. */
static PyObject *py_gemm(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, expected_m;
    PyObject *obj[QGPY_SLOTS], *cfg_obj;
    unsigned long long stream;
    unsigned e4m3_bytes, no_sync;
    if (!PyArg_ParseTuple(args, "iOOOOOOiKOII:gemm", &kind, &obj[QGPY_A], &obj[QGPY_SFA],
                          &obj[QGPY_B], &obj[QGPY_SFB], &obj[QGPY_D], &obj[QGPY_IDX], &expected_m,
                          &stream, &cfg_obj, &e4m3_bytes, &no_sync))
        return NULL;
    qg_config cfg;
    int forced;
    if (check_kind(kind) < 0 || (forced = parse_config(cfg_obj, &cfg)) < 0)
        return NULL;

    qgpy_tensor t[QGPY_SLOTS] = {{0}};
    for (int i = 0; i < QGPY_SLOTS; i++) {
        if (i == QGPY_IDX && (kind == QG_GEMM_DENSE || (kind == QG_GEMM_WGRAD && obj[i] == Py_None)))
            continue;
        long long dlpack_stream = (no_sync & (1u << i)) ? -1 : qgpy_dlpack_stream(stream);
        if (qgpy_tensor_import(obj[i], slot_name(kind, i), dlpack_stream, &t[i]) < 0) {
            for (int j = 0; j < i; j++)
                qgpy_tensor_release(&t[j]);
            return NULL;
        }
        if (e4m3_bytes & (1u << i))
            qgpy_tensor_bytes_are_e4m3(&t[i]);
    }
    return check_and_launch(kind, t, expected_m, stream, 0, forced ? &cfg : NULL);
}

/* The e4m3-D GEMMs (qg_fp8_out) and the SwiGLU ones (qg_swiglu_out: with
 * `row_weight` (obj[7], None: none) and `limit`) through DLPack: obj holds
 * a, sfa, b, sfb, d, sfd, idx (, row_weight); bit i of e4m3_bytes / no_sync
 * as gemm()'s for obj[i]. QGPY_TORCH_MODE in no_sync (launch_family without
 * stream=): every tensor borrowed from torch's metadata and the launch on
 * torch's current stream, else NotImplemented, nothing done. Without it the
 * package's first try would export through DLPack on the legacy stream
 * (`stream` 0), which makes torch order the legacy stream after the tensors'
 * stream: under CUDA-graph capture that invalidates the capture (H200,
 * test_swiglu.py::test_masked_cuda_graph_replay). */
static PyObject *fp8out_call(int kind, PyObject *const *obj, int swiglu, int expected_m, int ue8m0,
                             float limit, PyObject *cfg_obj, unsigned e4m3_bytes,
                             unsigned long long stream, unsigned no_sync)
{
    qg_config cfg;
    int forced;
    if (check_kind(kind) < 0 || (forced = parse_config(cfg_obj, &cfg)) < 0)
        return NULL;
    if (kind == QG_GEMM_WGRAD)
        return PyErr_Format(PyExc_ValueError, "qgemm: the weight gradient has no e4m3-D form");
    if (swiglu && kind == QG_GEMM_GROUPED_PSUM)
        return PyErr_Format(PyExc_ValueError, "qgemm: the psum layout has no SwiGLU form");
    if (ue8m0 != 0 && ue8m0 != 1)
        return PyErr_Format(PyExc_ValueError, "qgemm: use_ue8m0 must be 0 or 1, got %d", ue8m0);
    /* obj order: a, sfa, b, sfb, d, sfd, idx, row_weight -> slots (sfd, row_weight apart) */
    static const int slot_of[8] = {QGPY_A, QGPY_SFA, QGPY_B, QGPY_SFB, QGPY_D, -1, QGPY_IDX, -2};
    static const char *const names[8] = {"a", "sfa", "b", "sfb", "d", "sfd", NULL, "row_weight"};
    qgpy_tensor t[QGPY_SLOTS] = {{0}}, sfd = {0}, weight = {0};
    PyObject *result = NULL;
    const int torch_mode = (no_sync & QGPY_TORCH_MODE) != 0;
    int device_of_first = -1;
    for (int i = 0; i < (swiglu ? 8 : 7); i++) {
        if (i == 6 && kind == QG_GEMM_DENSE)
            continue;
        if (i == 7 && obj[i] == Py_None)
            continue;
        qgpy_tensor *dst = slot_of[i] == -1 ? &sfd : slot_of[i] == -2 ? &weight : &t[slot_of[i]];
        if (torch_mode) {
            /* (borrowed in place: a qgpy_tensor points into itself) */
            if (qgpy_torch_borrow(obj[i], i == 6 ? slot_name(kind, QGPY_IDX) : names[i], dst) != 1) {
                Py_INCREF(Py_NotImplemented);
                result = Py_NotImplemented;
                goto done;
            }
            if (device_of_first < 0)
                device_of_first = dst->t->device.device_id;
            if (e4m3_bytes & (1u << i))
                qgpy_tensor_bytes_are_e4m3(dst);
            continue;
        }
        long long dlpack_stream = (no_sync & (1u << i)) ? -1 : qgpy_dlpack_stream(stream);
        if (qgpy_tensor_import(obj[i], i == 6 ? slot_name(kind, QGPY_IDX) : names[i],
                               dlpack_stream, dst) < 0)
            goto done;
        if (e4m3_bytes & (1u << i))
            qgpy_tensor_bytes_are_e4m3(dst);
    }
    if (torch_mode && qgpy_torch_current_stream(device_of_first, &stream) < 0)
        goto done;
    qg_gemm_args ga;
    qg_fp8_out out;
    qg_swiglu_out sw;
    int device = 0;
    if ((swiglu ? qgpy_gemm_swiglu_args((qg_gemm_kind)kind, t, &sfd, &weight, expected_m, ue8m0,
                                        limit, &ga, &sw, &device)
                : qgpy_gemm_fp8out_args((qg_gemm_kind)kind, t, &sfd, expected_m, ue8m0, &ga, &out,
                                        &device)) < 0)
        goto done;
    if (ga.m == 0 || ga.n == 0) { /* nothing to write (masked: M_max 0 is refused below) */
        if (kind != QG_GEMM_GROUPED_MASKED) {
            Py_INCREF(Py_None);
            result = Py_None;
            goto done;
        }
    }
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;
    qg_status st;
    struct CUstream_st *s = (struct CUstream_st *)(uintptr_t)stream;
    const qg_config *c = forced ? &cfg : NULL;
    Py_BEGIN_ALLOW_THREADS
    if (swiglu) {
        switch (kind) {
        case QG_GEMM_DENSE: st = qg_fp8_gemm_nt_swiglu(ctx, &ga, &sw, c, s); break;
        case QG_GEMM_GROUPED_CONTIGUOUS:
            st = qg_m_grouped_fp8_gemm_nt_contiguous_swiglu(ctx, &ga, &sw, c, s);
            break;
        default: st = qg_m_grouped_fp8_gemm_nt_masked_swiglu(ctx, &ga, &sw, c, s); break;
        }
    } else {
        switch (kind) {
        case QG_GEMM_DENSE: st = qg_fp8_gemm_nt_fp8out(ctx, &ga, &out, c, s); break;
        case QG_GEMM_GROUPED_CONTIGUOUS:
            st = qg_m_grouped_fp8_gemm_nt_contiguous_fp8out(ctx, &ga, &out, c, s);
            break;
        case QG_GEMM_GROUPED_PSUM: st = qg_m_grouped_fp8_gemm_nt_psum_fp8out(ctx, &ga, &out, c, s); break;
        default: st = qg_m_grouped_fp8_gemm_nt_masked_fp8out(ctx, &ga, &out, c, s); break;
        }
    }
    Py_END_ALLOW_THREADS
    result = status_result(st);
done:
    for (int i = 0; i < QGPY_SLOTS; i++)
        qgpy_tensor_release(&t[i]);
    qgpy_tensor_release(&sfd);
    qgpy_tensor_release(&weight);
    return result;
}

/* gemm_fp8out(kind, a, sfa, b, sfb, d, sfd, idx_or_None, expected_m, ue8m0,
 *             config, e4m3_bytes, stream, no_sync): the e4m3-D GEMMs
 *             (qg_fp8_out) through DLPack, in launch_family's argument order. */
static PyObject *py_gemm_fp8out(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, expected_m, ue8m0;
    PyObject *obj[8], *cfg_obj;
    unsigned long long stream;
    unsigned e4m3_bytes, no_sync;
    if (!PyArg_ParseTuple(args, "iOOOOOOOiiOIKI:gemm_fp8out", &kind, &obj[0], &obj[1], &obj[2],
                          &obj[3], &obj[4], &obj[5], &obj[6], &expected_m, &ue8m0, &cfg_obj,
                          &e4m3_bytes, &stream, &no_sync))
        return NULL;
    obj[7] = Py_None;
    return fp8out_call(kind, obj, 0, expected_m, ue8m0, 0.0f, cfg_obj, e4m3_bytes, stream, no_sync);
}

/* fp8_bmm(a, sfa, b, sfb, d, config, e4m3_bytes, stream, no_sync): the
 * batched FP8 GEMM (qg_batched_fp8_gemm_nt) through DLPack: a [G, M, K] e4m3,
 * sfa [G, ceil(K/128), M] float32 (M-major: unit stride over M, rows sfa_ld
 * apart, batches packed kb * sfa_ld apart: mn_major's [G, M, kb] transposed), b [G, N, K]
 * e4m3, sfb [G, ceil(N/128), ceil(K/128)] float32 contiguous, d [G, M, N]
 * bfloat16; a, b and d with unit inner stride and any others (their dim-0
 * stride is the batch stride, dim 1 the row stride: the einsum's
 * x.permute(1, 0, 2) views need no copy). e4m3_bytes / no_sync: bits 0..4
 * as gemm_fp8out's; e4m3_bytes' bit 8 (FP8_BMM_EINSUM_VIEWS): a and d are
 * given [M, G, .] (fp8_einsum's x [B, H, R] and d [B, H, D] themselves) and
 * read as their [G, M, .] transposes, the views made here instead of by
 * torch's permute (~1 us of host time each); no_sync's QGPY_TORCH_MODE bit:
 * the families' torch mode (qgpy.h; stream ignored, NotImplemented for
 * tensors it does not take). The library checks every size, stride and overlap. */
#define FP8_BMM_EINSUM_VIEWS (1u << 8)

static const char *const bmm_names[5] = {"a", "sfa", "b", "sfb", "d"};

/* The checks of a batched FP8 GEMM on borrowed tensors a, sfa, b, sfb, d (their
 * [G, .] views made, e4m3 relabelling done) and the library's arguments: *ga, the
 * batch strides bs[3] of a, b and d, *device; *empty = 1 when there is nothing to
 * write (G, M or N zero). 0, or -1 with a Python error. */
static int fp8_bmm_args(qgpy_tensor t[5], qg_gemm_args *ga, int64_t bs[3], int *device,
                        int *empty)
{
    static const qgpy_dtype types[5] = {QGPY_E4M3, QGPY_F32, QGPY_E4M3, QGPY_F32, QGPY_BF16};
    static const char *const dims[5] = {"[G, M, K]", "[G, ceil(K/128), M]", "[G, N, K]",
                                        "[G, ceil(N/128), ceil(K/128)]", "[G, M, N]"};
    *device = -1;
    for (int i = 0; i < 5; i++) {
        if (qgpy_check_dtype(&t[i], types[i]) < 0 || qgpy_check_ndim(&t[i], 3, dims[i]) < 0 ||
            qgpy_check_device(&t[i], device) < 0)
            return -1;
        if (qgpy_dim(&t[i], 2) > 1 && qgpy_stride(&t[i], 2) != 1)
            return qgpy_errorf(PyExc_ValueError, "qgemm: fp8_bmm: %s must have a unit stride in "
                               "its last dimension, got stride %lld", bmm_names[i],
                               (long long)qgpy_stride(&t[i], 2));
    }
    if (qgpy_check_writable(&t[4]) < 0)
        return -1;
    const int64_t g = qgpy_dim(&t[0], 0), m = qgpy_dim(&t[0], 1), k = qgpy_dim(&t[0], 2);
    const int64_t n = qgpy_dim(&t[2], 1), kb = (k + 127) / 128, nb = (n + 127) / 128;
    if (qgpy_check_dim(&t[2], 0, g, "a's G") < 0 || qgpy_check_dim(&t[2], 2, k, "a's K") < 0 ||
        qgpy_check_dim(&t[4], 0, g, "a's G") < 0 || qgpy_check_dim(&t[4], 1, m, "a's M") < 0 ||
        qgpy_check_dim(&t[4], 2, n, "b's N") < 0 || qgpy_check_dim(&t[1], 0, g, "a's G") < 0 ||
        qgpy_check_dim(&t[1], 1, kb, "ceil(K/128)") < 0 ||
        qgpy_check_dim(&t[1], 2, m, "a's M") < 0 || qgpy_check_dim(&t[3], 0, g, "a's G") < 0 ||
        qgpy_check_dim(&t[3], 1, nb, "ceil(N/128)") < 0 ||
        qgpy_check_dim(&t[3], 2, kb, "ceil(K/128)") < 0)
        return -1;
    if (g > INT32_MAX || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return qgpy_errorf(PyExc_ValueError, "qgemm: fp8_bmm: sizes must be below 2^31");
    /* the scales packed: sfa [G][kb][sfa_ld] (rows sfa_ld apart), sfb contiguous */
    const int64_t sfa_ld = kb > 1  ? qgpy_stride(&t[1], 1)
                           : g > 1 ? qgpy_stride(&t[1], 0)
                                   : qg_sfa_ld(m);
    if ((g > 1 && qgpy_stride(&t[1], 0) != kb * sfa_ld) ||
        (nb * kb > 1 && (qgpy_stride(&t[3], 2) != 1 || (nb > 1 && qgpy_stride(&t[3], 1) != kb))) ||
        (g > 1 && qgpy_stride(&t[3], 0) != nb * kb))
        return qgpy_errorf(PyExc_ValueError, "qgemm: fp8_bmm: sfa must be M-major "
                           "[G, ceil(K/128), M] with batches ceil(K/128) x sfa_ld apart, and sfb "
                           "a contiguous [G, ceil(N/128), ceil(K/128)] tensor");
    *empty = g == 0 || m == 0 || n == 0;
    memset(ga, 0, sizeof *ga);
    ga->m = (int)m, ga->n = (int)n, ga->k = (int)k, ga->num_groups = (int)g;
    ga->a = qgpy_address(&t[0]), ga->lda = qgpy_stride(&t[0], 1);
    ga->sfa = qgpy_address(&t[1]), ga->sfa_ld = sfa_ld;
    ga->b = qgpy_address(&t[2]), ga->ldb = qgpy_stride(&t[2], 1);
    ga->sfb = qgpy_address(&t[3]);
    ga->d = qgpy_address(&t[4]), ga->ldd = qgpy_stride(&t[4], 1);
    bs[0] = g > 1 ? qgpy_stride(&t[0], 0) : 0;
    bs[1] = g > 1 ? qgpy_stride(&t[2], 0) : 0;
    bs[2] = g > 1 ? qgpy_stride(&t[4], 0) : 0;
    return 0;
}

static PyObject *py_fp8_bmm(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *obj[5], *cfg_obj;
    unsigned long long stream;
    unsigned e4m3_bytes, no_sync;
    if (!PyArg_ParseTuple(args, "OOOOOOIKI:fp8_bmm", &obj[0], &obj[1], &obj[2], &obj[3], &obj[4],
                          &cfg_obj, &e4m3_bytes, &stream, &no_sync))
        return NULL;
    qg_config cfg;
    int forced;
    if ((forced = parse_config(cfg_obj, &cfg)) < 0)
        return NULL;
    qgpy_tensor t[5] = {{0}};
    PyObject *result = NULL;
    if (no_sync & QGPY_TORCH_MODE) { /* qgpy.h: torch tensors on torch's current stream */
        const int taken = qgpy_torch_take_all(obj, bmm_names, 5, 0, &stream, t);
        if (taken == 0) {
            Py_INCREF(Py_NotImplemented);
            result = Py_NotImplemented;
        }
        if (taken <= 0)
            goto done;
    }
    for (int i = 0; i < 5; i++) {
        if (!(no_sync & QGPY_TORCH_MODE)) {
            long long dlpack_stream = (no_sync & (1u << i)) ? -1 : qgpy_dlpack_stream(stream);
            if (qgpy_tensor_import(obj[i], bmm_names[i], dlpack_stream, &t[i]) < 0)
                goto done;
        }
        if (e4m3_bytes & (1u << i))
            qgpy_tensor_bytes_are_e4m3(&t[i]);
    }
    if (e4m3_bytes & ~(0x1fu | FP8_BMM_EINSUM_VIEWS)) {
        PyErr_Format(PyExc_ValueError, "qgemm: fp8_bmm: e4m3_bytes 0x%x has bits other than 0..4 "
                     "and 8", e4m3_bytes);
        goto done;
    }
    /* (every check holds for the transposes too: dims 0 and 1 only trade places; a tensor
     * of fewer than 2 dimensions is refused by the swap, as by the ndim check) */
    if ((e4m3_bytes & FP8_BMM_EINSUM_VIEWS) &&
        (qgpy_tensor_swap_dims(&t[0], 0, 1) < 0 || qgpy_tensor_swap_dims(&t[4], 0, 1) < 0))
        goto done;
    qg_gemm_args ga;
    int64_t bs[3];
    int device = -1, empty = 0;
    if (fp8_bmm_args(t, &ga, bs, &device, &empty) < 0)
        goto done;
    if (empty) { /* nothing to write */
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;
    qg_status st;
    struct CUstream_st *cs = (struct CUstream_st *)(uintptr_t)stream;
    const qg_config *c = forced ? &cfg : NULL;
    Py_BEGIN_ALLOW_THREADS
    st = qg_batched_fp8_gemm_nt(ctx, &ga, bs[0], bs[1], bs[2], c, cs);
    Py_END_ALLOW_THREADS
    result = status_result(st);
done:
    for (int i = 0; i < 5; i++)
        qgpy_tensor_release(&t[i]);
    return result;
}

/* torch's is_contiguous() of a described tensor: strides of the dimensions of
 * size > 1 those of the packed row-major layout. */
static int torch_contiguous(const qgpy_tensor *t)
{
    int64_t want = 1;
    for (int i = t->t->ndim - 1; i >= 0; i--) {
        const int64_t n = qgpy_dim(t, i);
        if (n != 1 && qgpy_stride(t, i) != want)
            return 0;
        want *= n;
    }
    return 1;
}

static int dtype_is(const qgpy_tensor *t, uint8_t code, uint8_t bits)
{
    return t->t->dtype.code == code && t->t->dtype.bits == bits && t->t->dtype.lanes == 1;
}

/* fp8_einsum_torch(x, sfx, y, sfy, d, sfa, flags) -> None or NotImplemented: the plain
 * call of fp8_einsum('bhr,hdr->bhd') (python/qgemm/einsum.py, _fp8_fast) in ONE call,
 * issue 49's host cost: x [B, H, R] e4m3, sfx [B, H, kb] float32 (kb = ceil(R/128)), y
 * [H, D, R] e4m3, sfy [H, ceil(D/128), kb] float32 contiguous, d [B, H, D] bfloat16,
 * B, H, R, D > 0, unit last strides (where the size is > 1), all plain CUDA torch tensors
 * of one device (torch.c), and sfa the scales' M-major storage the package allocated
 * (ld = B rounded up to 4 floats):
 *   flags 0                        sfa [B, H, kb] with strides (1, kb*ld, ld), x's scales
 *                                  already copied there by torch: read as [H, kb, B];
 *   FP8_EINSUM_SF_TRANSPOSE (1)    sfa [H, kb, ld] contiguous, filled here by qgemm's
 *                                  scale transpose kernel (qg_sf_transpose_mn_major, the
 *                                  padding columns zeroed) before the GEMM is launched.
 * Then the batched FP8 GEMM (qg_batched_fp8_gemm_nt) of every head, x and d read as their
 * [H, B, .] transposes, on torch's current stream. Anything else -- another dtype, shape,
 * stride or layout, a tensor it does not take -- is NotImplemented, nothing checked aloud
 * and nothing launched: the package's checked way then decides and words every refusal,
 * so the two ways raise the same errors. What both ways would refuse only here (the
 * library's own checks) raises as there. */
#define FP8_EINSUM_SF_TRANSPOSE 1
static PyObject *py_fp8_einsum_torch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 7)
        return PyErr_Format(PyExc_TypeError, "fp8_einsum_torch() takes 7 arguments (%zd given)",
                            nargs);
    const long flags = PyLong_AsLong(args[6]);
    if (flags == -1 && PyErr_Occurred())
        return NULL;
    if (flags & ~(long)FP8_EINSUM_SF_TRANSPOSE)
        return PyErr_Format(PyExc_ValueError, "qgemm: fp8_einsum_torch: flags %ld (bit 0 only)",
                            flags);
    static const char *const names[6] = {"a[0]", "a[1]", "b[0]", "b[1]", "d", "sfa"};
    enum { X, SFX, Y, SFY, D, SFA };
    qgpy_tensor t[6];
    int taken = 0;
    PyObject *result = Py_NotImplemented;
    for (; taken < 6; taken++)
        if (qgpy_torch_borrow(args[taken], names[taken], &t[taken]) != 1)
            goto done;
    const int device = t[X].t->device.device_id;
    for (int i = 0; i < 6; i++)
        if (t[i].t->ndim != 3 || t[i].t->device.device_id != device)
            goto done;
    if (!dtype_is(&t[X], kDLFloat8_e4m3fn, 8) || !dtype_is(&t[Y], kDLFloat8_e4m3fn, 8) ||
        !dtype_is(&t[SFX], kDLFloat, 32) || !dtype_is(&t[SFY], kDLFloat, 32) ||
        !dtype_is(&t[SFA], kDLFloat, 32) || !dtype_is(&t[D], kDLBfloat, 16))
        goto done;
    const int64_t batch = qgpy_dim(&t[X], 0), h = qgpy_dim(&t[X], 1), r = qgpy_dim(&t[X], 2);
    const int64_t n = qgpy_dim(&t[Y], 1), kb = (r + 127) / 128, nb = (n + 127) / 128;
    const int64_t ld = (batch + 3) / 4 * 4;
    if (!batch || !h || !r || !n || qgpy_dim(&t[Y], 0) != h || qgpy_dim(&t[Y], 2) != r ||
        qgpy_dim(&t[SFX], 0) != batch || qgpy_dim(&t[SFX], 1) != h || qgpy_dim(&t[SFX], 2) != kb ||
        qgpy_dim(&t[SFY], 0) != h || qgpy_dim(&t[SFY], 1) != nb || qgpy_dim(&t[SFY], 2) != kb ||
        qgpy_dim(&t[D], 0) != batch || qgpy_dim(&t[D], 1) != h || qgpy_dim(&t[D], 2) != n ||
        (r > 1 && (qgpy_stride(&t[X], 2) != 1 || qgpy_stride(&t[Y], 2) != 1)) ||
        (n > 1 && qgpy_stride(&t[D], 2) != 1) || !torch_contiguous(&t[SFY]))
        goto done;
    if (flags & FP8_EINSUM_SF_TRANSPOSE) {
        if (qgpy_dim(&t[SFA], 0) != h || qgpy_dim(&t[SFA], 1) != kb ||
            qgpy_dim(&t[SFA], 2) != ld || !torch_contiguous(&t[SFA]))
            goto done;
    } else if (qgpy_dim(&t[SFA], 0) != batch || qgpy_dim(&t[SFA], 1) != h ||
               qgpy_dim(&t[SFA], 2) != kb || qgpy_stride(&t[SFA], 0) != 1 ||
               qgpy_stride(&t[SFA], 1) != kb * ld || qgpy_stride(&t[SFA], 2) != ld) {
        goto done;
    }
    /* taken: from here on the call is this function's (errors raise, as the checked way's) */
    result = NULL;
    qg_sf_layout_args lay;
    memset(&lay, 0, sizeof lay);
    if (flags & FP8_EINSUM_SF_TRANSPOSE) {
        /* sfx read [H, B, kb] (as the checked way's sf_layout call: its strides, 0 for a
         * dimension of size 1) into sfa [H][kb][ld]; then sfa viewed [H, kb, B] */
        if (h > INT32_MAX || batch > INT32_MAX || kb > INT32_MAX || ld > INT32_MAX) {
            qgpy_errorf(PyExc_ValueError, "qgemm: fp8_einsum: sizes must be below 2^31");
            goto done;
        }
        lay.mn = (int)batch, lay.sf_k = (int)kb, lay.num_groups = (int)h;
        lay.sf = qgpy_address(&t[SFX]);
        lay.sf_stride[0] = h > 1 ? qgpy_stride(&t[SFX], 1) : 0;
        lay.sf_stride[1] = batch > 1 ? qgpy_stride(&t[SFX], 0) : 0;
        lay.sf_stride[2] = kb > 1 ? qgpy_stride(&t[SFX], 2) : 0;
        lay.out = qgpy_address(&t[SFA]);
        lay.out_ld = (int)ld;
        /* sfa is written (the transpose) before the GEMM reads it: apart from every
         * other operand, the GEMM's output included */
        for (int i = X; i <= D; i++)
            if (qgpy_check_no_overlap(&t[SFA], &t[i]) < 0)
                goto done;
        t[SFA].own_shape[2] = batch;
    } else if (qgpy_tensor_swap_dims(&t[SFA], 0, 1) < 0 || /* [H, B, kb] */
               qgpy_tensor_swap_dims(&t[SFA], 1, 2) < 0) { /* [H, kb, B] */
        goto done;
    }
    /* the GEMM's operands: x and d as [H, B, .], sfa [H, kb, B], y and sfy as they are */
    if (qgpy_tensor_swap_dims(&t[X], 0, 1) < 0 || qgpy_tensor_swap_dims(&t[D], 0, 1) < 0)
        goto done;
    qgpy_tensor g5[5] = {t[X], t[SFA], t[Y], t[SFY], t[D]};
    for (int i = 0; i < 5; i++) { /* (a borrowed description points into its own slot) */
        g5[i].t = &g5[i].own;
        g5[i].own.shape = g5[i].own_shape;
        g5[i].own.strides = g5[i].own_strides;
    }
    qg_gemm_args ga;
    int64_t bs[3];
    int dev = -1, empty = 0;
    if (fp8_bmm_args(g5, &ga, bs, &dev, &empty) < 0)
        goto done;
    qg_context *ctx = qgpy_context(device);
    unsigned long long stream = 0;
    if (!ctx || qgpy_torch_current_stream(device, &stream) < 0)
        goto done;
    qg_status st = QG_SUCCESS;
    struct CUstream_st *cs = (struct CUstream_st *)(uintptr_t)stream;
    Py_BEGIN_ALLOW_THREADS
    if (flags & FP8_EINSUM_SF_TRANSPOSE)
        st = qg_sf_transpose_mn_major(ctx, &lay, cs);
    if (st == QG_SUCCESS)
        st = qg_batched_fp8_gemm_nt(ctx, &ga, bs[0], bs[1], bs[2], NULL, cs);
    Py_END_ALLOW_THREADS
    result = status_result(st);
    (void)empty; /* (B, H, D > 0: never empty) */
done:
    if (result == Py_NotImplemented)
        Py_INCREF(result);
    for (int i = 0; i < taken; i++) /* (borrowed descriptions owe nothing; kept for symmetry) */
        qgpy_tensor_release(&t[i]);
    return result;
}

/* gemm_swiglu(kind, a, sfa, b, sfb, d, sfd, idx_or_None, row_weight_or_None,
 *             expected_m, ue8m0, swiglu_limit, config, e4m3_bytes, stream,
 *             no_sync): the SwiGLU GEMMs (qg_swiglu_out), as gemm_fp8out. */
static PyObject *py_gemm_swiglu(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, expected_m, ue8m0;
    float limit;
    PyObject *obj[8], *cfg_obj;
    unsigned long long stream;
    unsigned e4m3_bytes, no_sync;
    if (!PyArg_ParseTuple(args, "iOOOOOOOOiifOIKI:gemm_swiglu", &kind, &obj[0], &obj[1], &obj[2],
                          &obj[3], &obj[4], &obj[5], &obj[6], &obj[7], &expected_m, &ue8m0, &limit,
                          &cfg_obj, &e4m3_bytes, &stream, &no_sync))
        return NULL;
    return fp8out_call(kind, obj, 1, expected_m, ue8m0, limit, cfg_obj, e4m3_bytes, stream, no_sync);
}

/* gemm_torch(kind, a, sfa, b, sfb, d, idx_or_None, expected_m, config): the
 * fast path (torch.c) on torch's current stream; NotImplemented, having done
 * nothing, when a tensor is not a plain CUDA torch tensor: the caller then
 * takes gemm(), the DLPack path. */
static PyObject *py_gemm_torch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 9)
        return PyErr_Format(PyExc_TypeError, "gemm_torch() takes 9 arguments (%zd given)", nargs);
    long kind = PyLong_AsLong(args[0]);
    long expected_m = PyLong_AsLong(args[7]);
    if ((kind == -1 || expected_m == -1) && PyErr_Occurred())
        return NULL;
    if (expected_m < INT_MIN || expected_m > INT_MAX)
        return PyErr_Format(PyExc_ValueError, "qgemm: expected_m = %ld is out of range",
                            expected_m);
    if (kind < INT_MIN || kind > INT_MAX) /* (the cast below read 2^32 as the dense kind) */
        return PyErr_Format(PyExc_ValueError, "qgemm: unknown GEMM kind %ld", kind);
    qg_config cfg;
    int forced;
    if (check_kind((int)kind) < 0 || (forced = parse_config(args[8], &cfg)) < 0)
        return NULL;
    if (!qgpy_torch_ready())
        Py_RETURN_NOTIMPLEMENTED;
    qgpy_tensor t[QGPY_SLOTS] = {{0}};
    for (int i = 0; i < QGPY_SLOTS; i++) {
        if (i == QGPY_IDX &&
            (kind == QG_GEMM_DENSE || (kind == QG_GEMM_WGRAD && args[1 + i] == Py_None)))
            continue;
        if (qgpy_torch_borrow(args[1 + i], slot_name((int)kind, i), &t[i]) != 1)
            Py_RETURN_NOTIMPLEMENTED; /* nothing is owed for described tensors */
    }
    return check_and_launch((int)kind, t, (int)expected_m, 0, 1, forced ? &cfg : NULL);
}

/* k_grouped_torch(a, sfa, b, sfb, d, c_or_None, ks, config): the k-grouped
 * weight gradient (qg_k_grouped_fp8_gemm_nt_contiguous) on torch's current
 * stream, ks a sequence of G ints (host); NotImplemented, having done
 * nothing, when a tensor is not a plain CUDA torch tensor (the package then
 * runs one weight-gradient GEMM a group). */
static PyObject *py_k_grouped_torch(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *obj[QGPY_SLOTS], *ks_obj, *cfg_obj;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:k_grouped_torch", &obj[QGPY_A], &obj[QGPY_SFA],
                          &obj[QGPY_B], &obj[QGPY_SFB], &obj[QGPY_D], &obj[QGPY_IDX], &ks_obj,
                          &cfg_obj))
        return NULL;
    qg_config cfg;
    int forced = parse_config(cfg_obj, &cfg);
    if (forced < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(ks_obj, "qgemm: ks must be a sequence of ints");
    if (!seq)
        return NULL;
    const Py_ssize_t g = PySequence_Fast_GET_SIZE(seq);
    if (g < 1 || g > 4096) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "qgemm: ks must hold 1..4096 group sizes, got %zd", g);
    }
    int32_t *ks = PyMem_Malloc((size_t)g * sizeof *ks);
    if (!ks) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < g; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            PyMem_Free(ks);
            Py_DECREF(seq);
            return NULL;
        }
        ks[i] = v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
    }
    Py_DECREF(seq);
    PyObject *result = NULL;
    qgpy_tensor t[QGPY_SLOTS] = {{0}};
    static const char *const names[QGPY_SLOTS] = {"a", "sfa", "b", "sfb", "d", "c"};
    if (!qgpy_torch_ready()) {
        Py_INCREF(Py_NotImplemented);
        result = Py_NotImplemented;
        goto done;
    }
    for (int i = 0; i < QGPY_SLOTS; i++) {
        if (i == QGPY_IDX && obj[i] == Py_None)
            continue;
        int r = qgpy_torch_borrow(obj[i], names[i], &t[i]);
        if (r < 0)
            goto done;
        if (r == 0) {
            Py_INCREF(Py_NotImplemented);
            result = Py_NotImplemented;
            goto done;
        }
    }
    qg_gemm_args ga;
    int device = 0;
    unsigned long long stream = 0;
    if (qgpy_k_grouped_args(t, ks, (int)g, &ga, &device) < 0 ||
        qgpy_torch_current_stream(device, &stream) < 0)
        goto done;
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        goto done;
    qg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = qg_k_grouped_fp8_gemm_nt_contiguous(ctx, &ga, forced ? &cfg : NULL,
                                             (struct CUstream_st *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    result = status_result(st);
done:
    for (int i = 0; i < QGPY_SLOTS; i++)
        qgpy_tensor_release(&t[i]);
    PyMem_Free(ks);
    return result;
}

static PyObject *py_torch_init(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *torch, *current_stream;
    if (!PyArg_ParseTuple(args, "OO:torch_init", &torch, &current_stream) ||
        qgpy_torch_init(torch, current_stream) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* select_config and compile: (kind, m, n, k, num_groups, expected_m, device,
 * config) -> the configuration dict / the compiler's report. */
static PyObject *problem_call(PyObject *args, const char *fmt, int compile)
{
    int kind, device, accumulate = 0;
    PyObject *cfg_obj;
    qg_problem p;
    memset(&p, 0, sizeof p);
    if (!PyArg_ParseTuple(args, fmt, &kind, &p.m, &p.n, &p.k, &p.num_groups, &p.expected_m,
                          &device, &cfg_obj, &accumulate))
        return NULL;
    p.accumulate = accumulate != 0; /* D = C + A B^T (weight gradients; the library checks) */
    qg_config cfg;
    int forced;
    if ((kind != QG_GEMM_K_GROUPED && check_kind(kind) < 0) ||
        (forced = parse_config(cfg_obj, &cfg)) < 0)
        return NULL;
    p.kind = (qg_gemm_kind)kind;
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        return NULL;
    qg_status st;
    if (!compile) {
        st = forced ? qg_complete_config(ctx, &p, &cfg) : qg_select_config(ctx, &p, &cfg);
        return st == QG_SUCCESS ? config_dict(&cfg) : qgpy_raise_status(st);
    }
    qg_kernel_info info;
    memset(&info, 0, sizeof info);
    Py_BEGIN_ALLOW_THREADS
    st = qg_compile(ctx, &p, forced ? &cfg : NULL, &info);
    Py_END_ALLOW_THREADS
    return st == QG_SUCCESS ? kernel_info_dict(&info) : qgpy_raise_status(st);
}

static PyObject *py_select_config(PyObject *self, PyObject *args)
{
    (void)self;
    return problem_call(args, "iiiiiiiO|p:select_config", 0);
}

/* select_config_fp8out: (kind, m, n, k, num_groups, expected_m, device, ue8m0)
 * -> the configuration dict of the e4m3-D kernel, with "cluster": the CTAs
 * of a cluster (split-K or multicast 2; a tile of 64 or 32 columns 128 /
 * block_n, the CTAs that split its scale group, times 2 with split-K). */
static PyObject *py_select_config_fp8out(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, device, ue8m0;
    qg_problem p;
    memset(&p, 0, sizeof p);
    if (!PyArg_ParseTuple(args, "iiiiiiip:select_config_fp8out", &kind, &p.m, &p.n, &p.k,
                          &p.num_groups, &p.expected_m, &device, &ue8m0) ||
        check_kind(kind) < 0)
        return NULL;
    p.kind = (qg_gemm_kind)kind;
    qg_context *ctx = qgpy_context(device);
    if (!ctx)
        return NULL;
    qg_config cfg;
    qg_status st = qg_select_config_fp8out(ctx, &p, ue8m0, &cfg);
    if (st != QG_SUCCESS)
        return qgpy_raise_status(st);
    PyObject *d = config_dict(&cfg);
    /* (QGEMM_FP8OUT_VARIANT nk: a split tile with split-K, 128 / block_n x 2) */
    const int cluster = cfg.multicast != QG_MULTICAST_NONE ? 2
                        : (cfg.block_n < 128 ? 128 / cfg.block_n : 1) * (cfg.split_k == 2 ? 2 : 1);
    PyObject *c = d ? PyLong_FromLong(cluster) : NULL;
    if (!c || PyDict_SetItemString(d, "cluster", c) < 0) {
        Py_XDECREF(c);
        Py_XDECREF(d);
        return NULL;
    }
    Py_DECREF(c);
    return d;
}

static PyObject *py_compile(PyObject *self, PyObject *args)
{
    (void)self;
    return problem_call(args, "iiiiiiiO|p:compile", 1);
}

static PyObject *py_device_props(PyObject *self, PyObject *arg)
{
    (void)self;
    qg_context *ctx = context_for_device_arg(arg);
    if (!ctx)
        return NULL;
    qg_device_props pr;
    qg_status st = qg_context_get_props(ctx, &pr);
    if (st != QG_SUCCESS)
        return qgpy_raise_status(st);
    return Py_BuildValue("{s:s,s:i,s:(ii),s:n,s:n,s:i,s:i}", "name", pr.name, "sm_count",
                         pr.sm_count, "compute_capability", pr.cc_major, pr.cc_minor,
                         "smem_optin_bytes", (Py_ssize_t)pr.smem_optin_bytes, "l2_bytes",
                         (Py_ssize_t)pr.l2_bytes, "clock_khz", pr.clock_khz, "dram_gbps",
                         pr.dram_gbps);
}

static PyObject *py_set_num_sms(PyObject *self, PyObject *arg)
{
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n > INT_MAX)
        n = INT_MAX; /* rejected below as more SMs than any device has */
    /* With no device context yet, the value used to be taken unchecked
     * (issue 27: set_num_sms(100000)). The offline context (the H100
     * description: 132 SMs, as many as any Hopper part) is always there to
     * check against; device contexts are checked too as they exist. */
    if (n > 0 && !qgpy_context(QGPY_OFFLINE))
        return NULL;
    if (qgpy_set_num_sms(n < INT_MIN ? -1 : (int)n) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_get_num_sms(PyObject *self, PyObject *arg)
{
    (void)self;
    qg_context *ctx = context_for_device_arg(arg);
    if (!ctx)
        return NULL;
    return PyLong_FromLong(qg_context_get_num_sms(ctx));
}

static PyObject *py_num_sms_setting(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyLong_FromLong(qgpy_get_num_sms_setting());
}

static PyObject *py_set_pdl(PyObject *self, PyObject *arg)
{
    (void)self;
    if (!PyBool_Check(arg)) {
        qgpy_errorf(PyExc_TypeError, "qgemm: set_pdl wants True or False, got %s",
                    Py_TYPE(arg)->tp_name);
        return NULL;
    }
    qgpy_set_pdl(arg == Py_True);
    Py_RETURN_NONE;
}

static PyObject *py_pdl_setting(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyBool_FromLong(qgpy_get_pdl_setting());
}

/* What the device's context launches with (after the setting is applied). */
static PyObject *py_context_pdl(PyObject *self, PyObject *arg)
{
    (void)self;
    qg_context *ctx = context_for_device_arg(arg);
    if (!ctx)
        return NULL;
    return PyBool_FromLong(qg_context_get_pdl(ctx) == 1);
}

/* qg_bf16_gemm_batch_sum_workspace_bytes(m, n, splits) as (total, counter_bytes). */
static PyObject *py_batch_sum_workspace_bytes(PyObject *self, PyObject *args)
{
    (void)self;
    int m, n, splits;
    if (!PyArg_ParseTuple(args, "iii:batch_sum_workspace_bytes", &m, &n, &splits))
        return NULL;
    size_t counters = 0;
    const size_t total = qg_bf16_gemm_batch_sum_workspace_bytes(m, n, splits, &counters);
    return Py_BuildValue("(nn)", (Py_ssize_t)total, (Py_ssize_t)counters);
}

static PyMethodDef methods[] = {
    {"version", py_version, METH_NOARGS, "qg_version_string()"},
    {"m_alignment", py_m_alignment, METH_NOARGS, "qg_m_alignment_for_contiguous_layout()"},
    {"sfa_ld", py_sfa_ld, METH_O, "qg_sfa_ld(m)"},
    {"bf16_gemm", qgpy_bf16_gemm, METH_VARARGS,
     "bf16_gemm(kind, a, b, d, c, idx, expected_m, ks, stream, no_sync)"},
    {"batch_sum_workspace_bytes", py_batch_sum_workspace_bytes, METH_VARARGS,
     "qg_bf16_gemm_batch_sum_workspace_bytes(m, n, splits) -> (bytes, counter_bytes)"},
    {"cast", qgpy_cast, METH_VARARGS,
     "cast(kind, x, out, sf, aux, m, groups, sf_mn_major, sf_ld, ue8m0, rows_mask, stream, "
     "no_sync)"},
    {"cast_new", (PyCFunction)(void (*)(void))qgpy_cast_new, METH_FASTCALL,
     "cast_new(kind, x, ue8m0, sf_mn_major, masked_m, m_indices) -> (q, sf) or NotImplemented"},
    {"sf_layout", qgpy_sf_layout, METH_VARARGS,
     "sf_layout(kind, sf, out, ks, out_ld, gran_k, k_alignment, psum, stream, no_sync)"},
    {"mqa_logits", qgpy_mqa_logits, METH_VARARGS,
     "mqa_logits(q, kv, kv_scales, weights, ks, ke, logits, clean, max_seqlen_k, stream, no_sync)"},
    {"paged_mqa_schedule", qgpy_paged_mqa_schedule, METH_VARARGS,
     "paged_mqa_schedule(context_lens, schedule, max_context_len, stream, no_sync)"},
    {"paged_mqa_logits", qgpy_paged_mqa_logits, METH_VARARGS,
     "paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule, logits, "
     "max_context_len, clean, stream, no_sync)"},
    {"hc_prenorm", qgpy_hc_prenorm, METH_VARARGS,
     "hc_prenorm(a, b, d, sqr_sum, num_splits, stream, no_sync)"},
    {"gemm", py_gemm, METH_VARARGS,
     "gemm(kind, a, sfa, b, sfb, d, idx, expected_m, stream, config, e4m3_bytes, no_sync)"},
    {"fp8_bmm", py_fp8_bmm, METH_VARARGS,
     "fp8_bmm(a, sfa, b, sfb, d, config, e4m3_bytes, stream, no_sync): qg_batched_fp8_gemm_nt"},
    {"fp8_einsum_torch", (PyCFunction)(void (*)(void))py_fp8_einsum_torch, METH_FASTCALL,
     "fp8_einsum_torch(x, sfx, y, sfy, d, sfa, flags) -> None or NotImplemented"},
    {"einsum_bmk_torch", (PyCFunction)(void (*)(void))qgpy_einsum_bmk_torch, METH_FASTCALL,
     "einsum_bmk_torch(a, b, d, c_is_d, split_tiles, split_min_k, max_batches, "
     "dg_min_batches) -> None or NotImplemented"},
    {"bmk_default_splits", (PyCFunction)(void (*)(void))qgpy_bmk_default_splits, METH_FASTCALL,
     "bmk_default_splits(m, n, batches, k, num_sms, split_tiles, split_min_k, max_batches, "
     "dg_min_batches) -> int (einsum_bmk_torch's split rule)"},
    {"gemm_fp8out", py_gemm_fp8out, METH_VARARGS,
     "gemm_fp8out(kind, a, sfa, b, sfb, d, sfd, idx, expected_m, ue8m0, config, e4m3_bytes, "
     "stream, no_sync)"},
    {"gemm_swiglu", py_gemm_swiglu, METH_VARARGS,
     "gemm_swiglu(kind, a, sfa, b, sfb, d, sfd, idx, row_weight, expected_m, ue8m0, "
     "swiglu_limit, config, e4m3_bytes, stream, no_sync)"},
    {"gemm_torch", (PyCFunction)(void (*)(void))py_gemm_torch, METH_FASTCALL,
     "gemm_torch(kind, a, sfa, b, sfb, d, idx, expected_m, config) -> None or NotImplemented"},
    {"k_grouped_torch", py_k_grouped_torch, METH_VARARGS,
     "k_grouped_torch(a, sfa, b, sfb, d, c, ks, config) -> None or NotImplemented"},
    {"torch_init", py_torch_init, METH_VARARGS,
     "torch_init(torch, current_stream): enable gemm_torch (once per process)"},
    {"select_config", py_select_config, METH_VARARGS,
     "select_config(kind, m, n, k, num_groups, expected_m, device, config) -> dict"},
    {"select_config_fp8out", py_select_config_fp8out, METH_VARARGS,
     "select_config_fp8out(kind, m, n, k, num_groups, expected_m, device, ue8m0) -> dict"},
    {"compile", py_compile, METH_VARARGS,
     "compile(kind, m, n, k, num_groups, expected_m, device, config) -> dict"},
    {"device_props", py_device_props, METH_O, "device_props(device) -> dict"},
    {"set_num_sms", py_set_num_sms, METH_O, "set_num_sms(n): 0 = all SMs"},
    {"get_num_sms", py_get_num_sms, METH_O, "get_num_sms(device) -> SMs kernels use there"},
    {"num_sms_setting", py_num_sms_setting, METH_NOARGS, "the value set_num_sms stored"},
    {"set_pdl", py_set_pdl, METH_O, "set_pdl(on): programmatic dependent launch on every device"},
    {"pdl_setting", py_pdl_setting, METH_NOARGS, "the value set_pdl stored"},
    {"context_pdl", py_context_pdl, METH_O, "context_pdl(device) -> whether its GEMMs use PDL"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "qgemm._C",
    "C extension of qgemm: FP8 GEMMs for Hopper over the qgemm C library.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__C(void)
{
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "KIND_DENSE", QG_GEMM_DENSE) < 0 ||
        PyModule_AddIntConstant(m, "KIND_CONTIGUOUS", QG_GEMM_GROUPED_CONTIGUOUS) < 0 ||
        PyModule_AddIntConstant(m, "KIND_MASKED", QG_GEMM_GROUPED_MASKED) < 0 ||
        PyModule_AddIntConstant(m, "KIND_PSUM", QG_GEMM_GROUPED_PSUM) < 0 ||
        PyModule_AddIntConstant(m, "KIND_WGRAD", QG_GEMM_WGRAD) < 0 ||
        PyModule_AddIntConstant(m, "KIND_K_GROUPED", QG_GEMM_K_GROUPED) < 0 ||
        PyModule_AddIntConstant(m, "KIND_BF16_BATCHED", (int)QG_GEMM_BF16_BATCHED) < 0 ||
        PyModule_AddIntConstant(m, "KIND_BF16_BATCH_SUMS", (int)QG_GEMM_BF16_BATCH_SUMS) < 0 ||
        PyModule_AddIntConstant(m, "KIND_BF16_BATCH_SUM", (int)QG_GEMM_BF16_BATCH_SUM) < 0 ||
        PyModule_AddIntConstant(m, "CAST_PER_TOKEN", QG_CAST_KIND_PER_TOKEN) < 0 ||
        PyModule_AddIntConstant(m, "CAST_PER_BLOCK", QG_CAST_KIND_PER_BLOCK) < 0 ||
        PyModule_AddIntConstant(m, "CAST_PER_CHANNEL", QG_CAST_KIND_PER_CHANNEL) < 0 ||
        PyModule_AddIntConstant(m, "CAST_SILU_MUL", QG_CAST_KIND_SILU_MUL) < 0 ||
        PyModule_AddIntConstant(m, "CAST_SF_MN_MAJOR", QG_CAST_KIND_SF_MN_MAJOR) < 0 ||
        PyModule_AddIntConstant(m, "FP8_BMM_EINSUM_VIEWS", (int)FP8_BMM_EINSUM_VIEWS) < 0 ||
        PyModule_AddIntConstant(m, "FP8_EINSUM_SF_TRANSPOSE", FP8_EINSUM_SF_TRANSPOSE) < 0 ||
        PyModule_AddIntConstant(m, "CAST_SF_PACK_UE8M0", QG_CAST_KIND_SF_PACK_UE8M0) < 0 ||
        PyModule_AddIntConstant(m, "CAST_SF_PACK_UE8M0_K_GROUPED",
                                QG_CAST_KIND_SF_PACK_UE8M0_K_GROUPED) < 0 ||
        PyModule_AddIntConstant(m, "OFFLINE", QGPY_OFFLINE) < 0 ||
        PyModule_AddIntConstant(m, "DLPACK_MAJOR", QGPY_DLPACK_MAJOR) < 0 ||
        PyModule_AddIntConstant(m, "DLPACK_MINOR", QGPY_DLPACK_MINOR) < 0 ||
        !(zero_k = PyUnicode_InternFromString("ZERO_K")) ||
        (Py_INCREF(zero_k), PyModule_AddObject(m, "ZERO_K", zero_k) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    /* The argument names its messages use (the package's own checks name
     * arguments alike): SLOT_NAMES a, sfa, b, sfb, d; IDX_NAMES[kind] the
     * layout or c argument of each kind. */
    PyObject *slots = PyTuple_New(QGPY_SLOTS - 1);
    PyObject *idx = PyTuple_New((Py_ssize_t)(sizeof idx_names / sizeof idx_names[0]));
    int ok = slots && idx;
    for (int i = 0; ok && i < QGPY_SLOTS - 1; i++) {
        PyObject *s = PyUnicode_FromString(slot_names[i]);
        ok = s && PyTuple_SetItem(slots, i, s) == 0;
    }
    for (size_t i = 0; ok && i < sizeof idx_names / sizeof idx_names[0]; i++) {
        PyObject *s = PyUnicode_FromString(idx_names[i]);
        ok = s && PyTuple_SetItem(idx, (Py_ssize_t)i, s) == 0;
    }
    if (!ok || PyModule_AddObject(m, "SLOT_NAMES", slots) < 0) {
        Py_XDECREF(slots);
        Py_XDECREF(idx);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObject(m, "IDX_NAMES", idx) < 0) {
        Py_DECREF(idx);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
