/* Embedding launcher (kernels/embedding.cu); the contract of kernels/softmax.h. */
#ifndef M40_KERNELS_EMBEDDING_H
#define M40_KERNELS_EMBEDDING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[i, :] = table[ids[i], :] for i < n (< 2^31); table [V, C] F32 or F16
** (table_f16), contiguous; y [n, C] F32. An id outside [0, V) is reported
** to `guard` (kernels/guard.h) and its row of y is zeros. */
int m40k_embedding(void *stream, int64_t n, const int32_t *ids, int64_t V, int64_t C,
                   const void *table, int table_f16, float *y, unsigned *guard);

#ifdef __cplusplus
}
#endif
#endif
