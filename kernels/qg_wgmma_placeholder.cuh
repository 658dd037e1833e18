/*
 * qg_wgmma_placeholder.cuh -- the operand macros of qg_ptx.cuh's generic
 * wgmma wrappers (qg_wgmma_m64k32_e4m3, qg_wgmma_m64k16_bf16: QG_WGMMA_N,
 * QG_WGMMA_ACC_LIST / _ARGS, QG_WGMMA_OP_*), for the kernels that never call
 * them (the casts, the BF16 batch sum's conversion, MQA and paged MQA logits,
 * HC prenorm outside its bf16 mode): qg_ptx.cuh still declares the wrappers,
 * so any well-formed list for N = 8 does. Include it before qg_ptx.cuh; a
 * kernel (or JIT source) that defined QG_WGMMA_N itself keeps its own list.
 * The GEMM kernels get theirs from the JIT and do not include this file.
 */
#ifndef QG_WGMMA_N
#define QG_WGMMA_N 8
#define QG_WGMMA_ACC_LIST "{%0, %1, %2, %3}"
#define QG_WGMMA_ACC_ARGS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define QG_WGMMA_OP_DESC_A 4
#define QG_WGMMA_OP_DESC_B 5
#define QG_WGMMA_OP_SCALE_D 6
#define QG_WGMMA_OP_DESC_HI 7
#endif
