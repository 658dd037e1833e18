/*
 * dlpack.h -- the parts of the DLPack ABI (v1.1) that qgemm consumes.
 *
 * Written from the public DLPack specification (dmlc/dlpack, dlpack.h) so
 * the extension has no build dependency on it. Layouts and enum values are
 * part of the ABI and must match the specification exactly:
 *  - "dltensor" capsules hold a DLManagedTensor (legacy, pre-1.0 ABI);
 *  - "dltensor_versioned" capsules hold a DLManagedTensorVersioned (>= 1.0);
 *    only major version 1 may be read; for any other major version the
 *    consumer may call nothing but the deleter (which stays at a fixed
 *    offset for that reason).
 *  - A consumer renames the capsule to "used_dltensor" /
 *    "used_dltensor_versioned" when it takes ownership, and then must call the
 *    deleter itself (the capsule's destructor no longer will).
 */
#ifndef QGPY_DLPACK_H
#define QGPY_DLPACK_H

#include <stdint.h>

#define QGPY_DLPACK_MAJOR 1
#define QGPY_DLPACK_MINOR 1 /* the float8 type codes are from 1.1 */

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLROCM = 10, kDLCUDAManaged = 13 };

typedef struct {
    int32_t device_type; /* DLDeviceType: an int32 enum in the ABI */
    int32_t device_id;
} DLDevice;

enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
    kDLFloat8_e3m4 = 7,
    kDLFloat8_e4m3 = 8,
    kDLFloat8_e4m3b11fnuz = 9,
    kDLFloat8_e4m3fn = 10, /* torch.float8_e4m3fn: the e4m3 the tensor cores read */
    kDLFloat8_e4m3fnuz = 11,
    kDLFloat8_e5m2 = 12,
    kDLFloat8_e5m2fnuz = 13,
    kDLFloat8_e8m0fnu = 14,
    kDLFloat6_e2m3fn = 15,
    kDLFloat6_e3m2fn = 16,
    kDLFloat4_e2m1fn = 17
};

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL (pre-1.0 only) = compact row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1ULL << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1ULL << 1)

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* QGPY_DLPACK_H */
