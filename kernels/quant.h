/* Weight-only quantized linear launchers (kernels/quant_gemv.cu, quant_gemm.cu).
** Launcher contract (every kernels/<family>.h): callable from C, the stream
** comes as void* (a cudaStream_t), the return value is a cudaError_t as int
** (0 on success). The caller (lib/ops/) has already checked shapes. */
#ifndef M40_KERNELS_QUANT_H
#define M40_KERNELS_QUANT_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Weight-only quantized linear (kernels/quant_gemv.cu, quant_gemm.cu) ----
** y[M,N] = x[M,K]·Wᵀ + bias[N], W [N,K] in a format of include/m40/quant.h
** (Q8 / Q4 with F16 or F32 scales per row or per K-group, or F16 weights).
** FP32 accumulation. Any M, N, K >= 0. */
typedef struct m40k_qlinear_args {
    int M, N, K;
    const float *x;      /* [M, K] row-major */
    int wtype;           /* M40_DTYPE_Q8, M40_DTYPE_Q4 or M40_DTYPE_F16 */
    const void *w;       /* rows of K (Q8), (K+1)/2 (Q4) bytes, or K halves (F16) */
    const void *scale;   /* [N] (group 0) or [N, ceil(K/group)]; NULL for F16 */
    int scale_f16;       /* scales are F16 (1) or F32 (0) */
    int group;           /* 0 = per row; 32, 64 or 128 */
    const float *bias;   /* [N] or NULL */
    float *y;            /* [M, N] row-major */
    float *ws;           /* split-K partial sums (m40k_quant_gemv_workspace bytes), or NULL */
    size_t ws_bytes;
} m40k_qlinear_args;
/* Device scratch the GEMV's split-K path needs for this call (0: none);
** without it the launcher takes a kernel that needs none. */
size_t m40k_quant_gemv_workspace(const m40k_qlinear_args *a);
/* Picks GEMV (M <= 8) or GEMM (M > 8) and runs it. */
int m40k_quant_linear(void *stream, const m40k_qlinear_args *a, int sm_count);
/* GEMV for M <= 8. rows_per_warp 1, 2 or 4 (0 = pick for sm_count);
** generic = 1 forces the slow path used for unaligned shapes (tests). */
int m40k_quant_gemv_run(void *stream, const m40k_qlinear_args *a, int sm_count,
                        int rows_per_warp, int generic);
/* GEMV with every knob (bench, tests): version 0 = default (see
** m40k_quant_gemv_tuned), 1 = generic, 2 = the v2 kernel, 3 = v3 (int8/int4; fp16 always
** runs v2), 4 = v3 with 4 chunks in flight per warp (M <= 2), 7 = v3 with
** split-K (needs a->ws when m40k_quant_gemv_workspace > 0), 9 = split-K at
** R = 8 (M >= 3 with row scales; else as 7); rows_per_warp
** 0 = default; blocks_per_sm 0 = as many as fit (v3 persistent grid). */
int m40k_quant_gemv_tuned(void *stream, const m40k_qlinear_args *a, int sm_count, int version,
                          int rows_per_warp, int blocks_per_sm);
/* Tiled GEMM (128x128x16 tiles, weights dequantized into shared memory);
** any M; generic = 1 forces the element-wise tile loader (tests). */
int m40k_quant_gemm_run(void *stream, const m40k_qlinear_args *a, int generic);

#ifdef __cplusplus
}
#endif
#endif
