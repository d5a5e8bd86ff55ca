/* Launchers for convolution and pooling (kernels/conv.cu). Same contract as
** kernels/launch.h: stream as void*, returns a cudaError_t as int. */
#ifndef M40_KERNELS_LAUNCH_CONV_H
#define M40_KERNELS_LAUNCH_CONV_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m40k_conv_shape {
    int N, C, H, W, K, R, S, P, Q;
    int sh, sw, ph, pw, dh, dw;
    int relu;
} m40k_conv_shape;

int m40k_conv2d_direct(void *stream, const m40k_conv_shape *s, const float *x,
                       const float *w, const float *scale, const float *bias,
                       const float *residual, float *y);
/* NHWC: x [N,H,W,C], w [K,R,S,C], y/residual [N,P,Q,K]. One SGEMM over all
** N·P·Q pixels (kernels/sgemm.cu, bias/residual/ReLU fused): on x itself
** for 1x1/stride 1/no padding, else on im2col patches written to `ws` in
** row chunks that fit ws_bytes (at least one row: R·S·C floats). */
int m40k_conv2d_nhwc(void *stream, const m40k_conv_shape *s, const float *x, const float *w,
                     const float *scale, const float *bias, const float *residual, float *y,
                     void *ws, size_t ws_bytes, int sm_count);
/* Workspace m40k_conv2d_nhwc wants: im2col patches for up to 128 MiB worth
** of rows (none for a plain GEMM), then the SGEMM's split-K partial sums
** for that many rows on `sm_count` SMs (none when it does not split). */
size_t m40k_conv2d_nhwc_workspace(const m40k_conv_shape *s, int sm_count);
int m40k_pool2d(void *stream, int kind, int kh, int kw, int sh, int sw, int ph, int pw,
                int nhwc, int N, int C, int H, int W, int P, int Q, const float *x, float *y);
int m40k_global_avgpool(void *stream, int nhwc, int N, int C, int HW, const float *x, float *y);

#ifdef __cplusplus
}
#endif
#endif
