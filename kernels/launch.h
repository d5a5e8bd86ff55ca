/* Launchers for the CUDA kernels, callable from C. Each takes the stream as
** void* (a cudaStream_t) and returns a cudaError_t as int: 0 on success,
** else the launch error. Shapes and strides come as m40_tensor_desc by
** value; the C layer (lib/ops.c) has already checked them.
**
** Three layers per op, as in ggml: kernel (kernels/<op>.cu) -> launcher
** (here: picks the grid) -> entry point (lib/ops.c: checks, dispatch). */
#ifndef M40_KERNELS_LAUNCH_H
#define M40_KERNELS_LAUNCH_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Unary elementwise ops: out = f(x). */
enum m40k_unary_op {
    M40K_SCALE = 0, /* alpha * x */
    M40K_RELU = 1,
    M40K_SILU = 2,
    M40K_GELU = 3
};
/* Binary elementwise ops: out = a (op) b; b may carry zero strides. */
enum m40k_binary_op { M40K_ADD = 0, M40K_MUL = 1 };

int m40k_fill_random(void *stream, m40_tensor_desc d, void *data, uint64_t seed,
                     int dist, float a, float b);
int m40k_unary(void *stream, int op, float alpha, m40_tensor_desc dx,
               const float *x, m40_tensor_desc dout, float *out);
int m40k_binary(void *stream, int op, m40_tensor_desc da, const float *a,
                m40_tensor_desc db, const float *b, m40_tensor_desc dout,
                float *out);
/* Softmax over the last dim; rows addressed through the leading dims. */
int m40k_softmax(void *stream, m40_tensor_desc dx, const float *x,
                 m40_tensor_desc dy, float *y);
/* F32 <-> F16 by the descs' dtypes. */
int m40k_convert(void *stream, m40_tensor_desc dsrc, const void *src,
                 m40_tensor_desc ddst, void *dst);
int m40k_copy_strided(void *stream, m40_tensor_desc ddst, void *dst,
                      m40_tensor_desc dsrc, const void *src);
/* Test hook: a kernel that traps, leaving the CUDA context in a sticky
** error state (see tests/test_gpu_errors.c). */
int m40k_debug_trap(void *stream);


/* ---- SGEMM (kernels/sgemm.cu) ----------------------------------------------
** C[M,N] = act(A[M,K]·op(B) + bias[N] + R[M,N]), FP32 accumulation, row-major.
** op(B) = B[K,N] (b_nk = 0) or B[N,K]ᵀ (b_nk = 1, PyTorch Linear). B is F32 or
** F16 (b_f16). bias and res may be NULL; res may equal c (with ldr == ldc).
** Any M, N, K >= 0 and any alignment (unaligned inputs take slower loads). */
enum m40k_sgemm_act { M40K_SGEMM_ACT_NONE = 0, M40K_SGEMM_ACT_RELU = 1, M40K_SGEMM_ACT_SILU = 2 };
enum m40k_sgemm_variant {
    M40K_SGEMM_TILE128 = 0, /* 128x128x8 block tile, 8x8 per thread: the main kernel */
    M40K_SGEMM_TILE64 = 1,  /* 64x64x8, 4x4 per thread: shapes with few tiles */
    M40K_SGEMM_SKINNY = 2   /* b_nk and M <= 8: a warp per 2 columns (GEMV-like) */
};
/* Implicit-GEMM A operand of an NHWC convolution (kernels/conv.cu): the
** tile loader gathers A[m, k] = x[n, h, w, c] straight from x, with
**   m = m0 + row,  m = (n·P + p)·Q + q,   k = (r·S + s)·C + c,
**   h = p·sh - ph + r·dh,  w = q·sw - pw + s·dw   (0 outside the image).
** Needs C % 4 == 0 (a run of 4 k stays in one pixel), x 16-byte aligned and
** H·W·C < 2^31; c, the M rows, start at pixel m0. */
typedef struct m40k_conv_a {
    int C, H, W, P, Q, S;
    int sh, sw, ph, pw, dh, dw;
    int m0;
} m40k_conv_a;

typedef struct m40k_sgemm_args {
    int M, N, K;
    const float *a; int64_t lda;   /* A [M,K], row stride lda (elements) */
    const void *b; int64_t ldb;    /* B [K,N] or [N,K], row stride ldb */
    int b_nk, b_f16;
    float *c; int64_t ldc;         /* C [M,N] */
    const float *bias;             /* [N] or NULL */
    const float *res; int64_t ldr; /* R [M,N] or NULL */
    int act;                       /* enum m40k_sgemm_act */
    const m40k_conv_a *conv;       /* non-NULL: A is gathered from a = x (lda unused);
                                      b_nk, F32 B, K = R·S·C, tile variants only */
    int batch;                     /* > 1: that many GEMMs, the i-th on a + i·stride_a, */
    int64_t stride_a, stride_b, stride_c; /* b + i·stride_b, c + i·stride_c (elements);
                                      no split-K, no res, no conv (Winograd's 16 GEMMs) */
} m40k_sgemm_args;
/* The variant and split-K factor the launcher would use on a GPU with
** sm_count SMs and ws_bytes of workspace (splits == 1 needs none). */
void m40k_sgemm_plan(const m40k_sgemm_args *a, int sm_count, size_t ws_bytes,
                     int *variant, int *splits);
/* Workspace bytes for the preferred plan (0 when it does not split K). */
size_t m40k_sgemm_workspace_size(const m40k_sgemm_args *a, int sm_count);
/* Plans and runs. ws (16-byte aligned) may be NULL: then K is not split. */
int m40k_sgemm(void *stream, const m40k_sgemm_args *a, int sm_count, void *ws,
               size_t ws_bytes);
/* Runs a given variant and split count (tests, bench). SKINNY falls back to
** TILE64 where it does not apply; splits fall back to 1 without workspace. */
int m40k_sgemm_run(void *stream, const m40k_sgemm_args *a, int variant, int splits,
                   void *ws, size_t ws_bytes);

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
