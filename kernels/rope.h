/* RoPE launcher (kernels/rope.cu); the contract of kernels/softmax.h. */
#ifndef M40_KERNELS_ROPE_H
#define M40_KERNELS_ROPE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rows (< 2^31) rows of W values (heads·head_dim <= W <= 2^30), row
** strides xs, ys in elements (y may be x): pair i < rope_dims/2 of each
** head turns by float(pos[r] · pos_scale) · θ_i, θ_i = 1 /
** theta^(2i/rope_dims); pairs: 0 adjacent (2i, 2i+1), 1 half (i, i +
** rope_dims/2). Values not rotated
** are copied when y is not x. A negative pos[r] is reported to `guard`
** (kernels/guard.h) and row r is copied unrotated. */
int m40k_rope(void *stream, int heads, int head_dim, int rope_dims, int pairs, float theta,
              float pos_scale, int64_t rows, int64_t W, const float *x, int64_t xs,
              const int32_t *pos, float *y, int64_t ys, unsigned *guard);

#ifdef __cplusplus
}
#endif
#endif
