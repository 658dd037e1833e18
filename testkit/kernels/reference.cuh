/*
 * reference.cuh -- the fp64 reference GEMM on the device, for shapes too large
 * for the CPU reference (testkit/reference.c computes the same thing on the host;
 * tests check that the two agree).
 *
 *   ref[r][c] = sum_k decode(A[r][k]) * SFA(r, k/128) * decode(B[g][c][k]) * SFB(g, c/128, k/128)
 *
 * for every output row r (0 .. rows-1) whose group g is valid, NaN otherwise
 * (the rules of include/qgemm.h; testkit/reference.c qgtk_row_groups):
 *   dense       g = 0
 *   contiguous  g = m_indices[r - r % 128] (-1 or out of range: NaN row)
 *   masked      r = g*m + i, valid when i < masked_m[g]
 *   psum        (kind 3; group_ends passed as masked_m) r in [start_g, end_g):
 *               start_0 = 0, end_g = group_ends[g] clamped to [start_g, m],
 *               start_g+1 = end_g rounded up to 128 (at most m)
 *
 * Every value is dequantized exactly in double (a 4-bit times a 24-bit
 * significand) and accumulated with double multiply-adds, so the result differs from
 * the CPU's only by double rounding.
 *
 * Tiling: a 256-thread CTA owns a 64x64 output tile; each thread keeps a 4x4
 * block of accumulators (rows ty+16i, columns tx+16j). K is walked in chunks
 * of 32 that never straddle a 128-block, so one scale per row applies to a
 * whole chunk. A tile of a grouped problem may hold rows of several groups
 * (contiguous segments need not be 64-aligned for the reference; masked M_max
 * need not be a multiple of 64): the CTA makes one pass over K per distinct
 * group, in increasing order, loading the A rows of other groups as zeros, so
 * each row accumulates exactly its own group's products.
 *
 * Compiled by the library's NVRTC JIT (-default-device, sm_90a); uses no
 * headers and no intrinsics.
 */
#ifndef QG_REFERENCE_CUH
#define QG_REFERENCE_CUH

#define QG_REF_TILE 64
#define QG_REF_KT 32
#define QG_REF_THREADS 256
#define QG_REF_NO_GROUP 0x7fffffff

/* Exact value of an e4m3 code (OCP E4M3 "fn"): integer arithmetic plus one
 * division by a power of two, both exact in double. */
__device__ __forceinline__ double qg_ref_decode_e4m3(unsigned int v) {
    unsigned int e = (v >> 3) & 15u, m = v & 7u;
    double mag;
    if (e == 15u && m == 7u) {
        mag = __longlong_as_double(0x7ff8000000000000LL); /* NaN */
    } else if (e == 0u) {
        mag = (double)m * (1.0 / 512.0);                   /* m * 2^-9 */
    } else {
        mag = (double)((8u + m) << e) * (1.0 / 1024.0);    /* (8+m) * 2^(e-10) */
    }
    return (v & 0x80u) ? -mag : mag;
}

/* Group of output row r, or -1 when the row must not be written. */
__device__ __forceinline__ int qg_ref_group_of(int kind, int m, int num_groups,
                                               const int *m_indices, const int *masked_m,
                                               long long rows, long long r) {
    if (r >= rows) return -1;
    if (kind == 0) return 0;
    if (kind == 1) {
        int g = m_indices[r - r % 128]; /* the 128-row segment's expert writes every row */
        return (g >= 0 && g < num_groups) ? g : -1;
    }
    if (kind == 3) { /* psum: walk the groups in order; they never overlap */
        long long start = 0;
        for (int g = 0; g < num_groups; g++) {
            long long end = masked_m[g];
            end = end < start ? start : end > m ? m : end;
            if (r < end) return r >= start ? g : -1;
            start = (end + 127) / 128 * 128;
            if (start > m) start = m;
        }
        return -1;
    }
    long long g = r / m, i = r % m;
    return i < (long long)masked_m[g] ? (int)g : -1;
}

/* (256, 2): without a minimum-blocks hint ptxas capped this kernel at 64
 * registers and spilled (CUDA 13.0), which the JIT rejects; two blocks per SM
 * allow ~128 (it uses ~106). */
extern "C" __global__ void __launch_bounds__(QG_REF_THREADS, 2)
qg_reference_kernel(int kind, int m, int n, int k, int num_groups,
                    const unsigned char *a, long long lda, const float *sfa, long long sfa_ld,
                    const unsigned char *b, long long ldb, const float *sfb,
                    const int *m_indices, const int *masked_m, long long rows, double *ref) {
    /* +1 column of padding: the loads write columns of these tiles with a
     * stride of one row, which would otherwise hit a single bank. */
    __shared__ double as[QG_REF_KT][QG_REF_TILE + 1];
    __shared__ double bs[QG_REF_KT][QG_REF_TILE + 1];
    __shared__ int row_group[QG_REF_TILE];
    __shared__ long long row_sfa[QG_REF_TILE]; /* SFA index of the row for k-block 0 */
    __shared__ int pass_group;

    const int t = threadIdx.x, tx = t % 16, ty = t / 16;
    const long long row0 = (long long)blockIdx.y * QG_REF_TILE;
    const int col0 = blockIdx.x * QG_REF_TILE;
    const int kblocks = (k + 127) / 128, nblocks = (n + 127) / 128;

    if (t < QG_REF_TILE) {
        const long long r = row0 + t;
        row_group[t] = qg_ref_group_of(kind, m, num_groups, m_indices, masked_m, rows, r);
        /* dense/contiguous: sfa[kb*sfa_ld + r]; masked (r = g*m + i):
         * sfa[(g*kblocks + kb)*sfa_ld + i]. Computed once: 64-bit division
         * is slow on the GPU. */
        row_sfa[t] = (kind == 2 && r < rows) ? (r / m) * kblocks * sfa_ld + r % m : r;
    }

    double acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0;

    int g = -1;
    for (;;) {
        __syncthreads(); /* row_group is written; everyone has read pass_group */
        if (t == 0) {
            int next = QG_REF_NO_GROUP;
            for (int i = 0; i < QG_REF_TILE; i++)
                if (row_group[i] > g && row_group[i] < next) next = row_group[i];
            pass_group = next;
        }
        __syncthreads();
        g = pass_group;
        if (g == QG_REF_NO_GROUP) break;

        for (int k0 = 0; k0 < k; k0 += QG_REF_KT) {
            const int kb = k0 / 128;
            for (int idx = t; idx < QG_REF_TILE * QG_REF_KT; idx += QG_REF_THREADS) {
                const int rr = idx / QG_REF_KT, kk = idx % QG_REF_KT;
                double v = 0.0;
                if (row_group[rr] == g && k0 + kk < k) {
                    const long long r = row0 + rr;
                    v = qg_ref_decode_e4m3(a[r * lda + k0 + kk]) *
                        (double)sfa[row_sfa[rr] + (long long)kb * sfa_ld];
                }
                as[kk][rr] = v;
            }
            for (int idx = t; idx < QG_REF_TILE * QG_REF_KT; idx += QG_REF_THREADS) {
                const int cc = idx / QG_REF_KT, kk = idx % QG_REF_KT;
                const int c = col0 + cc;
                double v = 0.0;
                if (c < n && k0 + kk < k) {
                    const long long brow = (long long)g * n + c;
                    const float s = sfb[((long long)g * nblocks + c / 128) * kblocks + kb];
                    v = qg_ref_decode_e4m3(b[brow * ldb + k0 + kk]) * (double)s;
                }
                bs[kk][cc] = v;
            }
            __syncthreads();
#pragma unroll 4
            for (int kk = 0; kk < QG_REF_KT; kk++) {
                double av[4], bv[4];
#pragma unroll
                for (int i = 0; i < 4; i++) av[i] = as[kk][ty + 16 * i];
#pragma unroll
                for (int j = 0; j < 4; j++) bv[j] = bs[kk][tx + 16 * j];
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) acc[i][j] += av[i] * bv[j];
            }
            __syncthreads();
        }
    }

    const double nan = __longlong_as_double(0x7ff8000000000000LL);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int rr = ty + 16 * i;
        const long long r = row0 + rr;
        if (r >= rows) continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int c = col0 + tx + 16 * j;
            if (c < n) ref[r * n + c] = row_group[rr] >= 0 ? acc[i][j] : nan;
        }
    }
}

#endif /* QG_REFERENCE_CUH */
