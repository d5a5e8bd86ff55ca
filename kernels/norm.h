/* RMSNorm launcher (kernels/norm.cu); the contract of kernels/softmax.h. */
#ifndef M40_KERNELS_NORM_H
#define M40_KERNELS_NORM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rows (< 2^31) rows of C (<= 2^30): mode 0: y = norm(x)·w; 1: x += r, then
** y = norm(x)·w; 2: x = r, then the same (x written). Row strides xs, rs,
** ys in elements; y may be x (mode 0). w [C] F32 or F16 (w_f16). */
int m40k_rmsnorm(void *stream, int64_t rows, int64_t C, float eps, int mode, float *x,
                 int64_t xs, const float *r, int64_t rs, const void *w, int w_f16, float *y,
                 int64_t ys);

#ifdef __cplusplus
}
#endif
#endif
