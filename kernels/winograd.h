/* Winograd F(2x2, 3x3) passes of the NHWC convolution (kernels/winograd.cu),
** called by m40k_conv2d_nhwc (kernels/conv.cu), which owns the choice (the
** rule in kernels/conv_plan.h) and checks alignment and workspace first.
** Launcher contract as in every kernels/<family>.h: the stream comes as
** void* (a cudaStream_t), the return value is a cudaError_t as int. */
#ifndef M40_KERNELS_WINOGRAD_H
#define M40_KERNELS_WINOGRAD_H

#include "conv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y [N,P,Q,K] = conv3x3/1(x [N,H,W,C], w [K,3,3,C]) ·scale + bias + residual,
** ReLU if s->relu. Needs C, K % 4 == 0, x, w, y, scale, bias, residual
** 16-byte aligned, and ws of m40k_wino_bytes(C, K, tiles) bytes laid out as
** U, V, M (kernels/conv_plan.h). */
int m40k_conv2d_winograd(void *stream, const m40k_conv_shape *s, const float *x, const float *w,
                         const float *scale, const float *bias, const float *residual, float *y,
                         void *ws, int sm_count);

#ifdef __cplusplus
}
#endif
#endif
