/* Non-finite scan launcher (kernels/check.cu), for the graph's check mode
** (lib/graph/check.c). Launcher contract as every kernels/<family>.h:
** callable from C, the stream as void* (a cudaStream_t), returns a
** cudaError_t as int (0 on success). */
#ifndef M40_KERNELS_CHECK_H
#define M40_KERNELS_CHECK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Scans n contiguous elements of x (f32, or f16 when is_f16) for NaN and
** +-Inf. result (device, 2 values): [0] the lowest index of a non-finite
** element (UINT64_MAX when none), [1] how many there are. Queued on
** `stream`; the caller downloads result. */
int m40k_check_nonfinite(void *stream, const void *x, int64_t n, int is_f16,
                         unsigned long long *result);

#ifdef __cplusplus
}
#endif
#endif
