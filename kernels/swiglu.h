/* SwiGLU launcher (kernels/swiglu.cu); the contract of kernels/softmax.h. */
#ifndef M40_KERNELS_SWIGLU_H
#define M40_KERNELS_SWIGLU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[r, c] = silu(x[r, c]) · x[r, F + c] for c < F; x rows of 2F at stride
** xs (elements), y contiguous [rows, F]. */
int m40k_swiglu(void *stream, int64_t rows, int64_t F, const float *x, int64_t xs, float *y);

#ifdef __cplusplus
}
#endif
#endif
