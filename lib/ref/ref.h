/* The CPU reference: plain C, one file per op family, double accumulators
** where a sum is involved, no intrinsics. It is the test oracle, a readable
** statement of what each op computes, and the CPU execution path.
** Shapes and strides arrive already checked by lib/ops.c. */
#ifndef M40_REF_H
#define M40_REF_H

#include "m40/m40.h"

void m40__ref_fill_random(const m40_tensor_desc *d, void *data, uint64_t seed,
                         m40_random_dist dist, float a, float b);
/* op: M40K_SCALE / RELU / SILU / GELU (kernels/elementwise.h) */
void m40__ref_unary(int op, float alpha, const m40_tensor_desc *dx, const float *x,
                   const m40_tensor_desc *dout, float *out);
/* op: M40K_ADD / MUL; db may have zero strides (broadcast). */
void m40__ref_binary(int op, const m40_tensor_desc *da, const float *a,
                    const m40_tensor_desc *db, const float *b,
                    const m40_tensor_desc *dout, float *out);
void m40__ref_convert(const m40_tensor_desc *ds, const void *src,
                     const m40_tensor_desc *dd, void *dst);
void m40__ref_softmax(const m40_tensor_desc *dx, const float *x,
                     const m40_tensor_desc *dy, float *y);
/* y[M,N] = x[M,K] · w[N,K]ᵀ + bias[N] (bias may be NULL); row-major. */
void m40__ref_linear(int64_t M, int64_t N, int64_t K, const float *x,
                    const float *w, const float *bias, float *y);

/* Convolution with the fused epilogue of m40_conv2d, in d->layout: x
** [N,C,H,W] or [N,H,W,C], w [K,C,R,S] or [K,R,S,C], y and residual
** [N,K,P,Q] or [N,P,Q,K], all contiguous. scale/bias/residual may be NULL. */
void m40__ref_conv2d(const m40_conv2d_desc *d, int64_t N, int64_t C, int64_t H, int64_t W,
                    int64_t K, int64_t R, int64_t S, int64_t P, int64_t Q,
                    const float *x, const float *w, const float *scale,
                    const float *bias, const float *residual, float *y);
void m40__ref_pool2d(m40_pool kind, int kh, int kw, int sh, int sw, int ph, int pw,
                    m40_layout layout, int64_t N, int64_t C, int64_t H, int64_t W, int64_t P,
                    int64_t Q, const float *x, float *y);
void m40__ref_global_avgpool(m40_layout layout, int64_t N, int64_t C, int64_t HW,
                            const float *x, float *y);

#endif
