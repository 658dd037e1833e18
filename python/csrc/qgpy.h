/*
 * qgpy.h -- what the C files of the Python extension (qgemm._C) share.
 *
 *   tensor.c    borrow a tensor through DLPack, per-tensor checks, messages
 *   layout.c    tensors of one GEMM call -> qg_gemm_args (shapes, strides)
 *   contexts.c  one qg_context per device, created lazily; num_sms
 *   errors.c    Python exceptions: formatted messages, library statuses
 *   module.c    the Python functions, module init
 *   bf16.c      the BF16 GEMM family's entry (bf16_gemm)
 *   cast.c      the cast family's entry (cast, sf_layout)
 *   indexer.c   the indexer / HC family's entries (mqa_logits, paged_mqa_*, hc_prenorm)
 *
 * Invariants:
 *  - every function returning int returns 0 on success and -1 with a Python
 *    exception set on failure; functions returning pointers return NULL;
 *  - validation (tensor.c, layout.c) reads only DLPack metadata, never device
 *    memory, so a rejected call writes nothing;
 *  - errors of the library become ValueError (QG_ERROR_INVALID_ARGUMENT,
 *    QG_ERROR_UNSUPPORTED) or RuntimeError (every other status), with
 *    qg_last_error() as the message (qgpy_raise_status).
 */
#ifndef QGPY_H
#define QGPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "dlpack.h"
#include "qgemm.h"

/* ---- tensors borrowed through DLPack (tensor.c) -------------------------- */

typedef enum { QGPY_E4M3, QGPY_F32, QGPY_BF16, QGPY_I32 } qgpy_dtype;

#define QGPY_MAX_NDIM 8 /* torch tensors of more dimensions take the DLPack path */

typedef struct {
    const char *name; /* argument name for messages: "a", "sfa", ... */
    DLTensor *t;      /* NULL while the slot is empty */
    DLDataType dtype; /* t->dtype, unless relabelled by qgpy_tensor_bytes_are_e4m3 */
    void *managed;    /* DLManagedTensor(Versioned) whose deleter we owe */
    int versioned;
    uint64_t flags; /* DLPACK_FLAG_* (0 for unversioned capsules) */
    /* t points here for tensors described by torch.c (nothing owed) */
    DLTensor own;
    int64_t own_shape[QGPY_MAX_NDIM], own_strides[QGPY_MAX_NDIM];
} qgpy_tensor;

/*
 * Borrow `obj` through its __dlpack__ / __dlpack_device__ methods. A CUDA
 * producer is handed `dlpack_stream` as __dlpack__(stream=...): the stream
 * the GEMM will run on in the protocol's encoding (1 = legacy default stream,
 * else the CUstream handle), so it orders its pending work before ours, or -1
 * when the caller knows no ordering is needed. The capsule is consumed
 * (renamed "used_...") and its deleter is owed by `out` until
 * qgpy_tensor_release().
 */
int qgpy_tensor_import(PyObject *obj, const char *name, long long dlpack_stream, qgpy_tensor *out);
/* The protocol's integer for a CUstream handle (0, our legacy stream, is 1). */
long long qgpy_dlpack_stream(uint64_t handle);
/* Read an 8-bit integer tensor as float8_e4m3fn: for frameworks that hold
 * e4m3 data but cannot export that dtype through DLPack (PyTorch < 2.8);
 * the caller vouches for the contents. Other dtypes are left as they are. */
void qgpy_tensor_bytes_are_e4m3(qgpy_tensor *t);
/* The first dimension of shape[ndim] that is negative, or past which the
 * product of the non-zero dimensions exceeds INT64_MAX; -1 when none (every
 * borrowed tensor is checked so: its sizes and their products fit in int64). */
int qgpy_shape_invalid(const int64_t *shape, int ndim);
/* Call the deleter (if any) and empty the slot. Keeps a pending exception. */
void qgpy_tensor_release(qgpy_tensor *t);

/* Swap dimensions i and j of the borrowed tensor's description (the view
 * t.transpose(i, j), made in C where torch's costs ~3 us of host time); a
 * producer's DLTensor is copied into t->own first (its deleter still owed). */
int qgpy_tensor_swap_dims(qgpy_tensor *t, int i, int j);

int qgpy_check_dtype(const qgpy_tensor *t, qgpy_dtype want);
/* ValueError unless t has `ndim` dimensions; `dims` names them, e.g. "[M, K]". */
int qgpy_check_ndim(const qgpy_tensor *t, int ndim, const char *dims);
/* ValueError unless dimension i has size `want`; `what` says where want came from. */
int qgpy_check_dim(const qgpy_tensor *t, int i, int64_t want, const char *what);
/* Dimension i of t as the library's int size in *out, or ValueError naming
 * `what`, t and i: a size past 2^31 - 1 would be cut by the cast and then
 * compared with the other tensors as the cut value (found by
 * tests/python/test_fuzz_extension.py). 0 or -1. */
int qgpy_int_dim(const qgpy_tensor *t, int i, const char *what, int *out);
/* ValueError unless the output `d` may be written: not READ_ONLY, and not a
 * copy the producer made for the export (IS_COPIED: the result would be lost). */
int qgpy_check_writable(const qgpy_tensor *d);
/* ValueError naming both when the bytes of `d` and `x` overlap (empty tensors
 * never do); a GEMM whose output aliases an input reads what it writes. */
int qgpy_check_no_overlap(const qgpy_tensor *d, const qgpy_tensor *x);
/* ValueError unless the data address (data + byte_offset) is 16-byte aligned. */
int qgpy_check_aligned(const qgpy_tensor *t);
/* ValueError unless t is CUDA device memory on `*device` (-1: set it from t). */
int qgpy_check_device(const qgpy_tensor *t, int *device);

int64_t qgpy_dim(const qgpy_tensor *t, int i);    /* i < 0 counts from the end */
int64_t qgpy_stride(const qgpy_tensor *t, int i); /* elements; handles NULL strides */
void *qgpy_address(const qgpy_tensor *t);
/* "[2, 3]" / "(6, 1)" renderings for messages. */
const char *qgpy_shape_str(const qgpy_tensor *t, char *buf, size_t size);
const char *qgpy_strides_str(const qgpy_tensor *t, char *buf, size_t size);

/* ---- torch tensors read without DLPack (torch.c) ------------------------- */

/*
 * The fast path for PyTorch: a torch.Tensor (or nn.Parameter) on a CUDA
 * device is described from its own metadata (dtype, shape, stride(),
 * data_ptr(), get_device()) into t->own, the same DLTensor the DLPack path
 * fills, so the checks of layout.c and the library run unchanged. No capsule,
 * no producer-side stream synchronization: the GEMM runs on torch's current
 * stream of the tensors' device, which already orders torch's work on them.
 *
 * qgpy_torch_init: `torch` is the imported module, `current_stream` a
 * callable device_index -> raw CUstream handle (torch's current stream).
 * qgpy_torch_borrow: 1 = described; 0 = not a plain CUDA torch tensor of a
 * dtype DLPack names (a CPU tensor, another framework's array, a tensor
 * subclass such as FakeTensor): the caller takes the DLPack path, whose
 * messages say what is wrong; -1 = Python error.
 */
int qgpy_torch_init(PyObject *torch, PyObject *current_stream);
int qgpy_torch_ready(void);
int qgpy_torch_borrow(PyObject *obj, const char *name, qgpy_tensor *out);
/* torch's current stream on `device` as a CUstream handle. */
int qgpy_torch_current_stream(int device, unsigned long long *handle);
/* One slot of a family call on `stream` (a CUstream handle): with no_sync
 * (the producer's current stream is the call's: it needs no ordering) a
 * plain CUDA torch tensor is described by qgpy_torch_borrow (a few attribute
 * reads, ~1 us, where a DLPack export costs ~4.7 us); anything else, or
 * without no_sync, goes through qgpy_tensor_import, whose checks and
 * messages then decide. 0, or -1 with a Python error. */
int qgpy_tensor_take(PyObject *obj, const char *name, unsigned long long stream, int no_sync,
                     qgpy_tensor *out);
/*
 * The family entries' torch mode (issues 49-51: the host cost of a call):
 * bit QGPY_TORCH_MODE of their no_sync argument says "every tensor is a plain
 * CUDA torch tensor and the call runs on torch's current stream of their
 * device" (their `stream` argument is then ignored). The package passes it
 * for every call without stream=, before any check of its own that the C
 * side also makes, so a call costs the Python of its own arguments and one C
 * call. qgpy_torch_take_all borrows objs[0..n) (None skipped where none_ok,
 * else not taken) with qgpy_torch_borrow: 1 = all taken and *stream set to
 * torch's current stream of the first tensor's device (the families' own
 * device checks refuse tensors on two devices); 0 = some object is not a
 * plain CUDA torch tensor (a CPU or meta tensor, a subclass, another
 * framework's array): nothing is held and the entry answers NotImplemented,
 * having checked and launched nothing, so the package takes the DLPack path,
 * whose checks and messages decide; -1 = Python error.
 */
#define QGPY_TORCH_MODE (1u << 31)
int qgpy_torch_take_all(PyObject *const *objs, const char *const *names, int n, int none_ok,
                        unsigned long long *stream, qgpy_tensor *t);
/*
 * New torch tensors for the casts' fast path (cast.c, cast_new): made by the
 * extension so that a cast costs one Python-to-C call. qgpy_torch_outputs_ready:
 * torch has float8_e4m3fn and qgpy_torch_init ran. qgpy_torch_empty:
 * like.new_empty(shape, dtype=float8_e4m3fn or float32) on like's device (no
 * torch.device object made). qgpy_torch_carve: buf.as_strided(shape, strides,
 * offset), or with f32 = 1 buf.view(torch.float32).as_strided(...) (offset in
 * elements of the viewed dtype). qgpy_torch_data_ptr:
 * t.data_ptr(). New references / 0, or NULL / -1 with torch's exception.
 */
int qgpy_torch_outputs_ready(void);
PyObject *qgpy_torch_empty(PyObject *like, const int64_t *shape, int ndim, int f32);
PyObject *qgpy_torch_carve(PyObject *buf, int f32, const int64_t *shape, const int64_t *strides,
                           int ndim, int64_t offset);
int qgpy_torch_data_ptr(PyObject *t, uintptr_t *ptr);

/* ---- one GEMM call's tensors -> library arguments (layout.c) ------------- */

enum { QGPY_A, QGPY_SFA, QGPY_B, QGPY_SFB, QGPY_D, QGPY_IDX, QGPY_SLOTS };

/*
 * Check the tensors of a `kind` call (slot QGPY_IDX: m_indices or masked_m,
 * empty for dense) and fill `args`; *device receives their CUDA device.
 */
int qgpy_gemm_args(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS], int expected_m,
                   qg_gemm_args *args, int *device);
/* The same for the e4m3-D calls: d float8_e4m3fn, and sfd its scales
 * [(G,) M, ceil(N/128)] float32, M-major and TMA-aligned (the next GEMM's sfa
 * layout) -> `out`. */
int qgpy_gemm_fp8out_args(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS],
                          const qgpy_tensor *sfd, int expected_m, int ue8m0, qg_gemm_args *args,
                          qg_fp8_out *out, int *device);

/* The same for the SwiGLU calls (qg_swiglu_out): d [(G,) M, N/2] e4m3, sfd
 * [(G,) M, ceil(N/256)], row_weight (t NULL: none) [rows] float32. */
int qgpy_gemm_swiglu_args(qg_gemm_kind kind, const qgpy_tensor t[QGPY_SLOTS],
                          const qgpy_tensor *sfd, const qgpy_tensor *row_weight, int expected_m,
                          int ue8m0, float limit, qg_gemm_args *args, qg_swiglu_out *out,
                          int *device);

/* The k-grouped GEMM's tensors (slot QGPY_IDX: c or empty) and its host group
 * sizes ks[num_groups] -> `args` (args->ks points at ks). */
int qgpy_k_grouped_args(const qgpy_tensor t[QGPY_SLOTS], const int32_t *ks, int num_groups,
                        qg_gemm_args *args, int *device);

/* ---- the BF16 GEMM family (bf16.c) ----------------------------------------- */

/* bf16_gemm(kind, a, b, d, c, idx, expected_m, ks, stream, no_sync): the
 * module function (see bf16.c). */
PyObject *qgpy_bf16_gemm(PyObject *self, PyObject *args);
/* einsum('bmk,bnk->mn')'s plain call in one C call, and its split rule (bf16.c) */
PyObject *qgpy_einsum_bmk_torch(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *qgpy_bmk_default_splits(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* ---- the cast family (cast.c) ---------------------------------------------- */

/* cast(kind, x, out, sf, aux, m, groups, sf_mn_major, sf_ld, ue8m0, rows_mask,
 * stream, no_sync) and sf_layout(kind, sf, out, ks, out_ld, gran_k,
 * k_alignment, psum, stream, no_sync): the module functions (see cast.c). */
PyObject *qgpy_cast(PyObject *self, PyObject *args);
PyObject *qgpy_sf_layout(PyObject *self, PyObject *args);
/* cast_new(kind, x, ue8m0, sf_mn_major, masked_m, m_indices) -> (q, sf) or
 * NotImplemented: the casts' fast path (METH_FASTCALL, see cast.c). */
PyObject *qgpy_cast_new(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* ---- the indexer / HC family (indexer.c) ------------------------------------ */

/* mqa_logits, paged_mqa_schedule, paged_mqa_logits, hc_prenorm: the module
 * functions (see indexer.c). */
PyObject *qgpy_mqa_logits(PyObject *self, PyObject *args);
PyObject *qgpy_paged_mqa_schedule(PyObject *self, PyObject *args);
PyObject *qgpy_paged_mqa_logits(PyObject *self, PyObject *args);
PyObject *qgpy_hc_prenorm(PyObject *self, PyObject *args);

/* ---- contexts (contexts.c) ----------------------------------------------- */

/* The context of CUDA device `device` (created on first use), or of the
 * offline H100 description when device == QGPY_OFFLINE. Borrowed: contexts
 * live until the process exits. */
#define QGPY_OFFLINE (-1)
qg_context *qgpy_context(int device);
/* Store n (0 = all SMs) and apply it to every existing device context. */
int qgpy_set_num_sms(int n);
int qgpy_get_num_sms_setting(void);
/* Store the PDL switch (0 or 1); each context gets it before its next use. */
void qgpy_set_pdl(int on);
int qgpy_get_pdl_setting(void);

/* ---- errors (errors.c) --------------------------------------------------- */

/* PyErr_SetString(type, <printf-style message>); returns -1. */
int qgpy_errorf(PyObject *type, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raise the Python exception for a failed library call; returns NULL. */
PyObject *qgpy_raise_status(qg_status st);

#endif /* QGPY_H */
