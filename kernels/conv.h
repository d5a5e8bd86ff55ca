/* Convolution launchers (kernels/conv.cu; Winograd passes in kernels/winograd.cu).
** Launcher contract (every kernels/<family>.h): callable from C, the stream
** comes as void* (a cudaStream_t), the return value is a cudaError_t as int
** (0 on success). The caller (lib/ops/) has already checked shapes. */
#ifndef M40_KERNELS_CONV_H
#define M40_KERNELS_CONV_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NHWC algorithms: AUTO picks Winograd for 3x3/1 convs with enough channels
** and output tiles (measured rule in kernels/conv.cu), else the implicit GEMM. */
enum m40k_conv_algo { M40K_CONV_AUTO = 0, M40K_CONV_IMPLICIT = 1, M40K_CONV_WINOGRAD = 2 };

typedef struct m40k_conv_shape {
    int N, C, H, W, K, R, S, P, Q;
    int sh, sw, ph, pw, dh, dw;
    int relu;
    int algo; /* enum m40k_conv_algo (NHWC only); WINOGRAD where it applies */
} m40k_conv_shape;

int m40k_conv2d_direct(void *stream, const m40k_conv_shape *s, const float *x,
                       const float *w, const float *scale, const float *bias,
                       const float *residual, float *y);
/* NHWC: x [N,H,W,C], w [K,R,S,C], y/residual [N,P,Q,K]. One SGEMM over all
** N·P·Q pixels (kernels/sgemm.cu, bias/residual/ReLU fused): on x itself
** for 1x1/stride 1/no padding; else as an implicit GEMM that gathers the
** patches from x in the SGEMM's tile loader (x and w first copied into `ws`
** with C padded to a multiple of 4 when C % 4 != 0 or x is misaligned); or,
** for 3x3 stride 1 (s->algo), Winograd F(2x2, 3x3) through `ws`. */
int m40k_conv2d_nhwc(void *stream, const m40k_conv_shape *s, const float *x, const float *w,
                     const float *scale, const float *bias, const float *residual, float *y,
                     void *ws, size_t ws_bytes, int sm_count);
/* Workspace m40k_conv2d_nhwc wants for input x (NULL: assume aligned): the
** padded copies of x and w when needed, or Winograd's transformed tiles (at
** most ~128 MiB at a time), and the SGEMM's split-K partial sums. */
size_t m40k_conv2d_nhwc_workspace(const m40k_conv_shape *s, const void *x, int sm_count);
/* The algorithm m40k_conv2d_nhwc runs for s (aligned tensors, enough
** workspace): M40K_CONV_WINOGRAD or M40K_CONV_IMPLICIT (also 1x1 plain GEMMs). */
int m40k_conv2d_nhwc_algo(const m40k_conv_shape *s, int sm_count);

#ifdef __cplusplus
}
#endif
#endif
