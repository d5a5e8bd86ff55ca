/* TAKE_LAST: y[b, 0, :] = x[b, T-1, :], one cudaMemcpy2DAsync (B rows of
** C floats at a pitch of T·C; one copy a row where T·C·4 bytes pass the
** copy's 2^31 - 1 pitch limit). No kernel of ours, so no ptxas line; the
** copy engine moves B·C·4 bytes (read + write), a few µs at ChatGLM2's
** widths on an M40 (288 GB/s), latency-bound. */
#include "take_last.h"

#include <cuda_runtime.h>

extern "C" int m40k_take_last(void *stream, int64_t B, int64_t T, int64_t C, const float *x,
                              float *y) {
    if (B == 0 || C == 0) return 0;
    size_t w = (size_t)C * sizeof(float);
    if ((size_t)T * w <= 0x7fffffffu) /* a pitch the copy takes (cudaDeviceProp.memPitch) */
        return (int)cudaMemcpy2DAsync(y, w, x + (T - 1) * C, (size_t)T * w, w, (size_t)B,
                                      cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
    for (int64_t b = 0; b < B; b++) { /* a longer row: one copy a row */
        cudaError_t e = cudaMemcpyAsync(y + b * C, x + (b * T + T - 1) * C, w, cudaMemcpyDeviceToDevice,
                                        (cudaStream_t)stream);
        if (e != cudaSuccess) return (int)e;
    }
    return 0;
}
