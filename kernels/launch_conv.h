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
int m40k_pool2d(void *stream, int kind, int kh, int kw, int sh, int sw, int ph, int pw,
                int NC, int H, int W, int P, int Q, const float *x, float *y);
int m40k_global_avgpool(void *stream, int NC, int HW, const float *x, float *y);

#ifdef __cplusplus
}
#endif
#endif
