/* SGEMM launchers (kernels/sgemm.cu).
** Launcher contract (every kernels/<family>.h): callable from C, the stream
** comes as void* (a cudaStream_t), the return value is a cudaError_t as int
** (0 on success). The caller (lib/ops/) has already checked shapes. */
#ifndef M40_KERNELS_SGEMM_H
#define M40_KERNELS_SGEMM_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    /* Weight-only quantized B (b_q 8 or 4; 0: b_f16 says F32 or F16): B[N,K]
    ** int8, or int4 two a byte with the high nibble the even k
    ** (include/m40/quant.h), ldb its row stride in BYTES; b_scale f16
    ** (b_scale_f16) or f32, [N] (b_group 0) or [N, ceil(K / b_group)], b_group
    ** a power of two >= 8.
    ** Needs b_nk, K % 8 == 0, A and B 16- and 4-byte aligned, lda % 4 == 0,
    ** no conv, batch <= 1 (m40k_sgemm_quant_ok); the tile kernels only. */
    int b_q;
    const void *b_scale;
    int b_scale_f16, b_group;
} m40k_sgemm_args;
/* Whether m40k_sgemm takes this quantized B (see b_q). */
int m40k_sgemm_quant_ok(const m40k_sgemm_args *a);
/* The variant and split-K factor the launcher would use on a GPU with
** sm_count SMs and ws_bytes of workspace (splits == 1 needs none). */
void m40k_sgemm_plan(const m40k_sgemm_args *a, int sm_count, size_t ws_bytes,
                     int *variant, int *splits);
/* Workspace bytes for the preferred plan (0 when it does not split K). */
size_t m40k_sgemm_workspace_size(const m40k_sgemm_args *a, int sm_count);
/* Rows one m40k_sgemm call takes (the tile grid's y extent, 65535 tiles of
** 64); callers split larger M (lib/ops/matmul.c, the NHWC conv's chunks). */
#define M40K_SGEMM_MAX_ROWS (65535 * 64)
/* Plans and runs. ws (16-byte aligned) may be NULL: then K is not split. */
int m40k_sgemm(void *stream, const m40k_sgemm_args *a, int sm_count, void *ws,
               size_t ws_bytes);
/* Runs a given variant and split count (tests, bench). SKINNY falls back to
** TILE64 where it does not apply; splits fall back to 1 without workspace. */
int m40k_sgemm_run(void *stream, const m40k_sgemm_args *a, int variant, int splits,
                   void *ws, size_t ws_bytes);

#ifdef __cplusplus
}
#endif
#endif
