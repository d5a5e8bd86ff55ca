/* TAKE_LAST launcher (kernels/take_last.cu); the contract of kernels/softmax.h. */
#ifndef M40_KERNELS_TAKE_LAST_H
#define M40_KERNELS_TAKE_LAST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[b, 0, :] = x[b, T-1, :]; x [B, T, C] and y [B, 1, C] contiguous F32. */
int m40k_take_last(void *stream, int64_t B, int64_t T, int64_t C, const float *x, float *y);

#ifdef __cplusplus
}
#endif
#endif
