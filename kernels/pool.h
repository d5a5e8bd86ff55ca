/* Pooling launchers (kernels/pool.cu).
** Launcher contract (every kernels/<family>.h): callable from C, the stream
** comes as void* (a cudaStream_t), the return value is a cudaError_t as int
** (0 on success). The caller (lib/ops/) has already checked shapes. */
#ifndef M40_KERNELS_POOL_H
#define M40_KERNELS_POOL_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

int m40k_pool2d(void *stream, int kind, int kh, int kw, int sh, int sw, int ph, int pw,
                int nhwc, int N, int C, int H, int W, int P, int Q, const float *x, float *y);
int m40k_global_avgpool(void *stream, int nhwc, int N, int C, int HW, const float *x, float *y);

#ifdef __cplusplus
}
#endif
#endif
