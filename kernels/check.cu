/* Non-finite scan (the graph's check mode, lib/graph/check.c): the lowest
** index and the count of NaN / Inf elements in a contiguous f32 or f16
** array.
**
** Layout: flat. Grid-stride loop, 256 threads per block, at most 4 blocks
** per SM; each thread keeps its own (min index, count), a warp reduces them
** with shuffles and lane 0 does one 64-bit atomicMin and one atomicAdd
** (both native on sm_35+, so sm_52-safe). The test is on the exponent bits,
** so it holds whatever the compiler's float flags.
** Cost: a read of the array, 4 (f32) or 2 (f16) bytes per element; at the
** M40's 288 GB/s a 100 MB activation takes about 0.35 ms. It runs only in
** the opt-in check mode, so it was not tuned further.
** Resources (sm_52, ptxas -v, CUDA 11.8): 32 registers, no shared memory,
** no spills, for both the f32 and the f16 instance. */
#include "check.h"

#include <cuda_runtime.h>

constexpr int kThreads = 256;

template <int kF16>
__global__ void nonfinite_kernel(const void *__restrict__ x, int64_t n,
                                 unsigned long long *__restrict__ result) {
    unsigned long long first = ~0ull, count = 0;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        bool bad;
        if (kF16) bad = (((const unsigned short *)x)[i] & 0x7c00u) == 0x7c00u;
        else bad = (((const unsigned int *)x)[i] & 0x7f800000u) == 0x7f800000u;
        if (bad) {
            if ((unsigned long long)i < first) first = (unsigned long long)i;
            count++;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        unsigned long long f = __shfl_down_sync(0xffffffffu, first, o);
        count += __shfl_down_sync(0xffffffffu, count, o);
        if (f < first) first = f;
    }
    if ((threadIdx.x & 31) == 0 && count) {
        atomicMin(&result[0], first);
        atomicAdd(&result[1], count);
    }
}

extern "C" int m40k_check_nonfinite(void *stream, const void *x, int64_t n, int is_f16,
                                    unsigned long long *result) {
    cudaStream_t s = (cudaStream_t)stream;
    /* result = {UINT64_MAX, 0} */
    cudaError_t e = cudaMemsetAsync(result, 0xff, sizeof(unsigned long long), s);
    if (e == cudaSuccess) e = cudaMemsetAsync(result + 1, 0, sizeof(unsigned long long), s);
    if (e != cudaSuccess || n <= 0) return (int)e;
    int dev = 0, sms = 16;
    if (cudaGetDevice(&dev) == cudaSuccess)
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    int64_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 4 * (int64_t)sms) blocks = 4 * (int64_t)sms;
    if (is_f16) nonfinite_kernel<1><<<(unsigned)blocks, kThreads, 0, s>>>(x, n, result);
    else nonfinite_kernel<0><<<(unsigned)blocks, kThreads, 0, s>>>(x, n, result);
    return (int)cudaGetLastError();
}
