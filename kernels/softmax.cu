/* Softmax over the last dim, F32: y[r, :] = exp(x[r,:] - max) / sum.
**
** One block of 256 threads per row; three passes over the row (max, sum of
** exponentials, write), each a strided loop plus a warp-shuffle then
** shared-memory reduction. Rows are addressed through the leading dims'
** strides; the last dim is contiguous (the entry point checks).
** Bytes: 2 reads + 1 write of the row (the re-read hits L1/L2 for rows up
** to a few thousand floats), so on an M40 the floor is 8 B/elem / 288 GB/s.
** Resources (sm_52, ptxas -v): see the CI resource table. */
#include "softmax.h"

#include <cuda_runtime.h>
#include <float.h>

constexpr int kThreads = 256;

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Reduces v over the block; every thread gets the result. */
template <bool IS_MAX>
__device__ float block_reduce(float v, float *smem, int lane, int warp) {
    v = IS_MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    float r = lane < kThreads / 32 ? smem[lane] : (IS_MAX ? -FLT_MAX : 0.0f);
    r = IS_MAX ? warp_max(r) : warp_sum(r);
    __syncthreads(); /* smem is reused by the next reduction */
    return r;
}

struct Rows {
    int64_t shape[M40_MAX_DIMS - 1];
    int64_t xs[M40_MAX_DIMS - 1], ys[M40_MAX_DIMS - 1];
};

static __global__ void softmax_kernel(Rows rows, const float *x, float *y, int64_t cols) {
    __shared__ float smem[kThreads / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int64_t r = blockIdx.x, xo = 0, yo = 0;
#pragma unroll
    for (int k = M40_MAX_DIMS - 2; k >= 0; k--) { /* unused dims: extent 1 */
        int64_t idx = r % rows.shape[k];
        r /= rows.shape[k];
        xo += idx * rows.xs[k];
        yo += idx * rows.ys[k];
    }
    const float *xr = x + xo;
    float *yr = y + yo;

    float m = -FLT_MAX;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, xr[c]);
    m = block_reduce<true>(m, smem, lane, warp);

    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += expf(xr[c] - m);
    s = block_reduce<false>(s, smem, lane, warp);

    float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) yr[c] = expf(xr[c] - m) * inv;
}


extern "C" int m40k_softmax(void *stream, m40_tensor_desc dx, const float *x,
                            m40_tensor_desc dy, float *y) {
    Rows rows = {};
    int64_t nrows = 1;
    int nlead = dx.ndim > 0 ? dx.ndim - 1 : 0, pad = M40_MAX_DIMS - 1 - nlead;
    for (int k = 0; k < M40_MAX_DIMS - 1; k++) { /* right-aligned leading dims */
        int j = k - pad;
        rows.shape[k] = j >= 0 ? dx.shape[j] : 1;
        rows.xs[k] = j >= 0 ? dx.stride[j] : 0;
        rows.ys[k] = j >= 0 ? dy.stride[j] : 0;
        if (j >= 0) nrows *= dx.shape[j];
    }
    int64_t cols = dx.ndim ? dx.shape[dx.ndim - 1] : 1;
    if (nrows == 0 || cols == 0) return 0;
    if (nrows > 2147483647) return (int)cudaErrorInvalidConfiguration;
    softmax_kernel<<<(unsigned)nrows, kThreads, 0, (cudaStream_t)stream>>>(rows, x, y, cols);
    return (int)cudaGetLastError();
}
