/* SwiGLU, FP32: y[r, c] = silu(g) · u with g = x[r, c], u = x[r, F + c]
** (the gate first, as ChatGLM2's dense_h_to_4h output), silu(g) =
** g / (1 + expf(-g)) (full-precision expf).
**
** Layout: x rows of 2F at row stride xs (elements), y contiguous [rows, F].
** Grid: x over the row's F/V vectors (256 threads), y over rows (at most
** 65535, then a grid-stride loop). float4 when F and xs are multiples of
** 4 and the pointers 16-byte aligned, else scalar.
**
** Bytes: 12 per output (read g and u, write y). M40 roofline at 288 GB/s:
** ChatGLM2's F = 13696 at 64 rows (10.5 MB) ≈ 36.5 µs; about 30 FP32
** instructions per output against a ridge of ~280 per 12 bytes, so
** bandwidth-bound. Target >= 0.80x copy bandwidth (tools/bench/norm.c).
**
** ptxas (sm_52, CUDA 11.8, -v): V 1: 25 registers, V 4: 37 registers; 0
** bytes stack frame, 0 spills, no shared memory. */
#include "swiglu.h"
#include "swiglu_math.cuh"

#include <cuda_runtime.h>

namespace {

constexpr int kThreads = 256;

template <int V>
__global__ void __launch_bounds__(kThreads) swiglu_kernel(int64_t rows, int64_t F,
                                                          const float *__restrict__ x, int64_t xs,
                                                          float *__restrict__ y) {
    const int64_t nv = F / V;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const float *xr = x + r * xs;
        float *yr = y + r * F;
        for (int64_t c = (int64_t)blockIdx.x * kThreads + threadIdx.x; c < nv;
             c += (int64_t)gridDim.x * kThreads) {
            if (V == 4) {
                float4 g = __ldg(reinterpret_cast<const float4 *>(xr) + c);
                float4 u = __ldg(reinterpret_cast<const float4 *>(xr + F) + c);
                reinterpret_cast<float4 *>(yr)[c] =
                    make_float4(swiglu1(g.x, u.x), swiglu1(g.y, u.y), swiglu1(g.z, u.z),
                                swiglu1(g.w, u.w));
            } else {
                yr[c] = swiglu1(__ldg(xr + c), __ldg(xr + F + c));
            }
        }
    }
}

bool aligned(const void *p, unsigned n) { return ((uintptr_t)p & (n - 1)) == 0; }

} // namespace

extern "C" int m40k_swiglu(void *stream, int64_t rows, int64_t F, const float *x, int64_t xs,
                           float *y) {
    if (rows == 0 || F == 0) return 0;
    const bool v4 = F % 4 == 0 && xs % 4 == 0 && aligned(x, 16) && aligned(y, 16);
    const int64_t nv = v4 ? F / 4 : F;
    int64_t bx = (nv + kThreads - 1) / kThreads;
    if (bx > 65535) bx = 65535;
    dim3 grid((unsigned)bx, (unsigned)(rows < 65535 ? rows : 65535));
    if (v4)
        swiglu_kernel<4><<<grid, kThreads, 0, (cudaStream_t)stream>>>(rows, F, x, xs, y);
    else
        swiglu_kernel<1><<<grid, kThreads, 0, (cudaStream_t)stream>>>(rows, F, x, xs, y);
    return (int)cudaGetLastError();
}
