/* RMSNorm over the last dim, FP32, with the fused residual of a
** transformer layer:
**   mode 0: y = x / sqrt(mean(x²) + eps) · w
**   mode 1: x += r (written back), then the same; mode 2: x = r, then the same
**
** Layout: rows of C floats at row strides xs, rs, ys (elements); each row
** contiguous; w [C] F32 or F16 (converted with __half2float, no half math).
** Narrow rows (C <= 1024): one warp per row, 8 rows per 256-thread block;
** wider rows: one block per row (256 threads; 1024 from C > 8192 or below 64 rows). Two
** passes over the row: pass 1 reads x (and r, writing x), sums x² in FP32;
** pass 2 re-reads x (L2-resident: a row is at most 64 KB here, and the
** same thread reads back what it wrote) and writes y. float4 loads and
** stores when C and the strides are multiples of 4 and the pointers
** 16-byte aligned (w f16: 8-byte), else scalar.
**
** Bytes per element: mode 0: 4 (x) + 4 (y) (+ w, amortised over rows);
** mode 1: 4 (x) + 4 (r) + 4 (x written) + 4 (y) = 16. The M40 roofline:
** 288 GB/s, so C = 4096 at 64 rows (mode 1: 4 MiB) is ≈ 14.6 µs; the
** target is >= 0.80x the device copy bandwidth (tools/bench/norm.c).
**
** ptxas (sm_52, CUDA 11.8, -v), all 12 instances (V 1/4 x w f32/f16 x
** warp, block 256, block 1024): 32 registers, 0 bytes stack frame, 0
** spills; shared 0 (warp), 32 B (block 256), 128 B (block 1024). */
#include "norm.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace {

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int V> __device__ __forceinline__ void load(float *a, const float *p) {
    if (V == 4) {
        float4 t = *reinterpret_cast<const float4 *>(p);
        a[0] = t.x, a[1] = t.y, a[2] = t.z, a[3] = t.w;
    } else {
        a[0] = p[0];
    }
}
template <int V> __device__ __forceinline__ void store(float *p, const float *a) {
    if (V == 4) *reinterpret_cast<float4 *>(p) = make_float4(a[0], a[1], a[2], a[3]);
    else p[0] = a[0];
}
template <int V> __device__ __forceinline__ void load_w(float *a, const float *w) {
    if (V == 4) {
        float4 t = __ldg(reinterpret_cast<const float4 *>(w));
        a[0] = t.x, a[1] = t.y, a[2] = t.z, a[3] = t.w;
    } else {
        a[0] = __ldg(w);
    }
}
template <int V> __device__ __forceinline__ void load_w(float *a, const __half *w) {
    if (V == 4) {
        uint2 u = __ldg(reinterpret_cast<const uint2 *>(w));
        a[0] = __half2float(__ushort_as_half((unsigned short)(u.x & 0xFFFFu)));
        a[1] = __half2float(__ushort_as_half((unsigned short)(u.x >> 16)));
        a[2] = __half2float(__ushort_as_half((unsigned short)(u.y & 0xFFFFu)));
        a[3] = __half2float(__ushort_as_half((unsigned short)(u.y >> 16)));
    } else {
        a[0] = __half2float(w[0]);
    }
}

/* Pass 1 over one row by `step` threads (this one is `t`): the residual
** update and this thread's part of the sum of squares. */
template <int V>
__device__ __forceinline__ float pass1(int C, int mode, float *xr, const float *rr, int t,
                                       int step) {
    float ss = 0.0f;
    for (int c = t * V; c < C; c += step * V) {
        float a[V];
        if (mode == 2) {
            load<V>(a, rr + c);
            store<V>(xr + c, a);
        } else {
            load<V>(a, xr + c);
            if (mode == 1) {
                float b[V];
                load<V>(b, rr + c);
#pragma unroll
                for (int k = 0; k < V; k++) a[k] += b[k];
                store<V>(xr + c, a);
            }
        }
#pragma unroll
        for (int k = 0; k < V; k++) ss += a[k] * a[k];
    }
    return ss;
}

/* Pass 2: y = x · inv · w over the same elements as pass 1. */
template <int V, typename WT>
__device__ __forceinline__ void pass2(int C, float inv, const float *xr, const WT *w, float *yr,
                                      int t, int step) {
    for (int c = t * V; c < C; c += step * V) {
        float a[V], g[V];
        load<V>(a, xr + c);
        load_w<V>(g, w + c);
#pragma unroll
        for (int k = 0; k < V; k++) a[k] = a[k] * inv * g[k];
        store<V>(yr + c, a);
    }
}

/* One warp per row, 8 rows per block. x and y may alias (mode 0). */
template <int V, typename WT>
__global__ void __launch_bounds__(256) rms_warp(int rows, int C, float eps, int mode, float *x,
                                                int64_t xs, const float *r, int64_t rs,
                                                const WT *w, float *y, int64_t ys) {
    const int lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    if (row >= rows) return; /* the whole warp: no block-wide sync below */
    float *xr = x + row * xs;
    const float *rr = mode ? r + row * rs : nullptr;
    float ss = warp_sum(pass1<V>(C, mode, xr, rr, lane, 32));
    float inv = rsqrtf(ss / (float)C + eps);
    pass2<V, WT>(C, inv, xr, w, y + row * ys, lane, 32);
}

/* One block of T threads per row. */
template <int V, typename WT, int T>
__global__ void __launch_bounds__(T) rms_block(int C, float eps, int mode, float *x, int64_t xs,
                                               const float *r, int64_t rs, const WT *w, float *y,
                                               int64_t ys) {
    __shared__ float red[T / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t row = blockIdx.x;
    float *xr = x + row * xs;
    const float *rr = mode ? r + row * rs : nullptr;
    float ss = warp_sum(pass1<V>(C, mode, xr, rr, threadIdx.x, T));
    if (lane == 0) red[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        float v = warp_sum(lane < T / 32 ? red[lane] : 0.0f);
        if (lane == 0) red[0] = v;
    }
    __syncthreads();
    float inv = rsqrtf(red[0] / (float)C + eps);
    pass2<V, WT>(C, inv, xr, w, y + row * ys, threadIdx.x, T);
}

/* Below this many rows (a decode step's 1..8) a row gets 1024 threads: a
** 4096-wide row is then one float4 a thread per pass, two dependent
** memory round trips instead of eight (H200, ncu: 4.8 us a 1-row call with
** 256 threads). From it on, 256 a row (bandwidth at >= 64 rows). */
constexpr int kFewRows = 64;

template <int V, typename WT>
int launch(cudaStream_t s, int rows, int C, float eps, int mode, float *x, int64_t xs,
           const float *r, int64_t rs, const WT *w, float *y, int64_t ys) {
    if (C <= 1024)
        rms_warp<V, WT><<<(unsigned)(((int64_t)rows + 7) / 8), 256, 0, s>>>(rows, C, eps, mode, x, xs, r,
                                                                    rs, w, y, ys);
    else if (C <= 8192 && rows >= kFewRows)
        rms_block<V, WT, 256><<<(unsigned)rows, 256, 0, s>>>(C, eps, mode, x, xs, r, rs, w, y, ys);
    else
        rms_block<V, WT, 1024><<<(unsigned)rows, 1024, 0, s>>>(C, eps, mode, x, xs, r, rs, w, y,
                                                               ys);
    return (int)cudaGetLastError();
}

bool aligned(const void *p, unsigned a) { return ((uintptr_t)p & (a - 1)) == 0; }

} // namespace

extern "C" int m40k_rmsnorm(void *stream, int64_t rows, int64_t C, float eps, int mode, float *x,
                            int64_t xs, const float *r, int64_t rs, const void *w, int w_f16,
                            float *y, int64_t ys) {
    if (rows == 0 || C == 0) return 0;
    if (rows > 2147483647 || C > (1 << 30)) return (int)cudaErrorInvalidConfiguration;
    cudaStream_t s = (cudaStream_t)stream;
    bool v4 = C % 4 == 0 && xs % 4 == 0 && ys % 4 == 0 && aligned(x, 16) && aligned(y, 16) &&
              aligned(w, w_f16 ? 8 : 16) && (!mode || (rs % 4 == 0 && aligned(r, 16)));
    const int R = (int)rows, N = (int)C;
    if (w_f16) {
        const __half *wh = (const __half *)w;
        return v4 ? launch<4>(s, R, N, eps, mode, x, xs, r, rs, wh, y, ys)
                  : launch<1>(s, R, N, eps, mode, x, xs, r, rs, wh, y, ys);
    }
    const float *wf = (const float *)w;
    return v4 ? launch<4>(s, R, N, eps, mode, x, xs, r, rs, wf, y, ys)
              : launch<1>(s, R, N, eps, mode, x, xs, r, rs, wf, y, ys);
}
