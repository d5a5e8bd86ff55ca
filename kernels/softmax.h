/* Softmax launcher (kernels/softmax.cu).
** Launcher contract (every kernels/<family>.h): callable from C, the stream
** comes as void* (a cudaStream_t), the return value is a cudaError_t as int
** (0 on success). The caller (lib/ops/) has already checked shapes. */
#ifndef M40_KERNELS_SOFTMAX_H
#define M40_KERNELS_SOFTMAX_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Softmax over the last dim; rows addressed through the leading dims. */
int m40k_softmax(void *stream, m40_tensor_desc dx, const float *x,
                 m40_tensor_desc dy, float *y);

#ifdef __cplusplus
}
#endif
#endif
