/* Convolution and pooling, NCHW, F32: the correctness baseline.
**
** m40k_conv2d_direct: one thread per output element, a loop over C·R·S,
** then the fused epilogue (scale, bias, residual, ReLU). No data reuse
** through shared memory: it reads each input ~K·R·S/(sh·sw) times from
** cache, so it is far from the M40's 6.84 TFLOP/s; it is the reference the
** implicit-GEMM and Winograd kernels of issue 5 replace and are tested
** against.
** Pooling: one thread per output (max or average over the in-bounds window);
** global average: one warp per (n, c) plane, shuffle reduction.
** Resources (sm_52, ptxas -v): see the CI resource table. */
#include "launch_conv.h"

#include <cuda_runtime.h>
#include <float.h>

constexpr int kThreads = 256;

static __global__ void conv2d_direct_kernel(m40k_conv_shape s, const float *__restrict__ x,
                                            const float *__restrict__ w,
                                            const float *__restrict__ scale,
                                            const float *__restrict__ bias,
                                            const float *__restrict__ residual,
                                            float *__restrict__ y, int64_t total) {
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < total;
         o += (int64_t)gridDim.x * blockDim.x) {
        int q = (int)(o % s.Q);
        int p = (int)((o / s.Q) % s.P);
        int k = (int)((o / ((int64_t)s.Q * s.P)) % s.K);
        int n = (int)(o / ((int64_t)s.Q * s.P * s.K));
        float acc = 0.0f;
        const float *wk = w + (int64_t)k * s.C * s.R * s.S;
        for (int c = 0; c < s.C; c++) {
            const float *xc = x + ((int64_t)n * s.C + c) * s.H * s.W;
            for (int r = 0; r < s.R; r++) {
                int h = p * s.sh - s.ph + r * s.dh;
                if (h < 0 || h >= s.H) continue;
                for (int t = 0; t < s.S; t++) {
                    int v = q * s.sw - s.pw + t * s.dw;
                    if (v < 0 || v >= s.W) continue;
                    acc = fmaf(xc[(int64_t)h * s.W + v], wk[(c * s.R + r) * s.S + t], acc);
                }
            }
        }
        if (scale) acc *= scale[k];
        if (bias) acc += bias[k];
        if (residual) acc += residual[o];
        if (s.relu) acc = fmaxf(acc, 0.0f);
        y[o] = acc;
    }
}

static __global__ void pool2d_kernel(int kind, int kh, int kw, int sh, int sw, int ph, int pw,
                                     int H, int W, int P, int Q, const float *__restrict__ x,
                                     float *__restrict__ y, int64_t total) {
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < total;
         o += (int64_t)gridDim.x * blockDim.x) {
        int q = (int)(o % Q), p = (int)((o / Q) % P);
        int64_t plane = o / ((int64_t)P * Q);
        const float *xp = x + plane * H * W;
        float acc = kind == M40_POOL_MAX ? -FLT_MAX : 0.0f;
        int count = 0;
        for (int r = 0; r < kh; r++) {
            int h = p * sh - ph + r;
            if (h < 0 || h >= H) continue;
            for (int t = 0; t < kw; t++) {
                int v = q * sw - pw + t;
                if (v < 0 || v >= W) continue;
                float e = xp[(int64_t)h * W + v];
                acc = kind == M40_POOL_MAX ? fmaxf(acc, e) : acc + e;
                count++;
            }
        }
        y[o] = kind == M40_POOL_MAX ? acc : acc / (float)(count ? count : 1);
    }
}

static __global__ void global_avgpool_kernel(int NC, int HW, const float *__restrict__ x,
                                             float *__restrict__ y) {
    int lane = threadIdx.x & 31;
    int plane = (int)((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5);
    if (plane >= NC) return;
    const float *xp = x + (int64_t)plane * HW;
    float s = 0.0f;
    for (int i = lane; i < HW; i += 32) s += xp[i];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) y[plane] = HW ? s / (float)HW : 0.0f;
}

static int grid_for(int64_t n) {
    int64_t g = (n + kThreads - 1) / kThreads;
    if (g > 65535 * 8) g = 65535 * 8;
    return g < 1 ? 1 : (int)g;
}

extern "C" int m40k_conv2d_direct(void *stream, const m40k_conv_shape *s, const float *x,
                                  const float *w, const float *scale, const float *bias,
                                  const float *residual, float *y) {
    int64_t total = (int64_t)s->N * s->K * s->P * s->Q;
    if (total == 0) return 0;
    conv2d_direct_kernel<<<grid_for(total), kThreads, 0, (cudaStream_t)stream>>>(
        *s, x, w, scale, bias, residual, y, total);
    return (int)cudaGetLastError();
}

extern "C" int m40k_pool2d(void *stream, int kind, int kh, int kw, int sh, int sw, int ph,
                           int pw, int NC, int H, int W, int P, int Q, const float *x, float *y) {
    int64_t total = (int64_t)NC * P * Q;
    if (total == 0) return 0;
    pool2d_kernel<<<grid_for(total), kThreads, 0, (cudaStream_t)stream>>>(
        kind, kh, kw, sh, sw, ph, pw, H, W, P, Q, x, y, total);
    return (int)cudaGetLastError();
}

extern "C" int m40k_global_avgpool(void *stream, int NC, int HW, const float *x, float *y) {
    if (NC == 0) return 0;
    int64_t threads = (int64_t)NC * 32;
    global_avgpool_kernel<<<(unsigned)((threads + kThreads - 1) / kThreads), kThreads, 0,
                            (cudaStream_t)stream>>>(NC, HW, x, y);
    return (int)cudaGetLastError();
}
