/* Elementwise launchers (kernels/elementwise.cu): random fill, unary, binary,
** f32<->f16 convert, strided copy.
** Launcher contract (every kernels/<family>.h): callable from C, the stream
** comes as void* (a cudaStream_t), the return value is a cudaError_t as int
** (0 on success). The caller (lib/ops/) has already checked shapes. */
#ifndef M40_KERNELS_ELEMENTWISE_H
#define M40_KERNELS_ELEMENTWISE_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Unary elementwise ops: out = f(x). */
enum m40k_unary_op {
    M40K_SCALE = 0, /* alpha * x */
    M40K_RELU = 1,
    M40K_SILU = 2,
    M40K_GELU = 3
};
/* Binary elementwise ops: out = a (op) b; b may carry zero strides. */
enum m40k_binary_op { M40K_ADD = 0, M40K_MUL = 1 };

int m40k_fill_random(void *stream, m40_tensor_desc d, void *data, uint64_t seed,
                     int dist, float a, float b);
int m40k_unary(void *stream, int op, float alpha, m40_tensor_desc dx,
               const float *x, m40_tensor_desc dout, float *out);
int m40k_binary(void *stream, int op, m40_tensor_desc da, const float *a,
                m40_tensor_desc db, const float *b, m40_tensor_desc dout,
                float *out);
int m40k_convert(void *stream, m40_tensor_desc dsrc, const void *src,
                 m40_tensor_desc ddst, void *dst);
int m40k_copy_strided(void *stream, m40_tensor_desc ddst, void *dst,
                      m40_tensor_desc dsrc, const void *src);
/* Test hook: a kernel that traps, leaving the CUDA context in a sticky
** error state (see tests/test_gpu_errors.c). */
int m40k_debug_trap(void *stream);

#ifdef __cplusplus
}
#endif
#endif
