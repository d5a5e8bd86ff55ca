/* Pooling, F32, NCHW or NHWC: max / average over a kh x kw window
** (m40k_pool2d; average divides by the in-bounds count) and global average
** pooling (m40k_global_avgpool).
**
** Tiling: pool2d one thread per output element in a grid-stride loop (NHWC:
** c fastest, so neighbouring threads read neighbouring channels); global
** average one warp per (n, c) plane with a shuffle reduction (NCHW), one
** thread per (n, c) walking H·W (NHWC, coalesced across c).
** Resources (sm_52, CUDA 11.8 ptxas -v): pool2d_kernel 56 registers,
** global_avgpool_kernel 26, global_avgpool_nhwc_kernel 32; no shared memory,
** no spills. Bandwidth-bound: each input element is read kh·kw/(sh·sw)
** times (from L1/L2) and each output written once. */
#include "pool.h"

#include <cuda_runtime.h>
#include <float.h>

constexpr int kThreads = 256;

static __global__ void pool2d_kernel(int kind, int kh, int kw, int sh, int sw, int ph, int pw,
                                     int nhwc, int C, int H, int W, int P, int Q,
                                     const float *__restrict__ x, float *__restrict__ y,
                                     int64_t total) {
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < total;
         o += (int64_t)gridDim.x * blockDim.x) {
        int c, p, q;
        int64_t n;
        if (nhwc) { /* o = ((n*P + p)*Q + q)*C + c: c fastest, coalesced */
            c = (int)(o % C); q = (int)((o / C) % Q); p = (int)((o / ((int64_t)C * Q)) % P);
            n = o / ((int64_t)C * Q * P);
        } else {
            q = (int)(o % Q); p = (int)((o / Q) % P); c = (int)((o / ((int64_t)Q * P)) % C);
            n = o / ((int64_t)Q * P * C);
        }
        float acc = kind == M40_POOL_MAX ? -FLT_MAX : 0.0f;
        int count = 0;
        for (int r = 0; r < kh; r++) {
            int h = p * sh - ph + r;
            if (h < 0 || h >= H) continue;
            for (int t = 0; t < kw; t++) {
                int v = q * sw - pw + t;
                if (v < 0 || v >= W) continue;
                float e = nhwc ? x[((n * H + h) * W + v) * C + c] : x[((n * C + c) * H + h) * W + v];
                acc = kind == M40_POOL_MAX ? fmaxf(acc, e) : acc + e;
                count++;
            }
        }
        y[o] = kind == M40_POOL_MAX ? acc : acc / (float)(count ? count : 1);
    }
}

/* NCHW: one warp per (n, c) plane. */
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

/* NHWC: one thread per (n, c); neighbouring threads read neighbouring c. */
static __global__ void global_avgpool_nhwc_kernel(int N, int C, int HW, const float *__restrict__ x,
                                                  float *__restrict__ y) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= (int64_t)N * C) return;
    int64_t n = i / C, c = i % C;
    const float *xp = x + n * HW * C + c;
    float s = 0.0f;
    for (int j = 0; j < HW; j++) s += xp[(int64_t)j * C];
    y[i] = HW ? s / (float)HW : 0.0f;
}

static int grid_for(int64_t n) {
    int64_t g = (n + kThreads - 1) / kThreads;
    if (g > 65535 * 8) g = 65535 * 8;
    return g < 1 ? 1 : (int)g;
}

extern "C" int m40k_pool2d(void *stream, int kind, int kh, int kw, int sh, int sw, int ph,
                           int pw, int nhwc, int N, int C, int H, int W, int P, int Q,
                           const float *x, float *y) {
    int64_t total = (int64_t)N * C * P * Q;
    if (total == 0) return 0;
    pool2d_kernel<<<grid_for(total), kThreads, 0, (cudaStream_t)stream>>>(
        kind, kh, kw, sh, sw, ph, pw, nhwc, C, H, W, P, Q, x, y, total);
    return (int)cudaGetLastError();
}

extern "C" int m40k_global_avgpool(void *stream, int nhwc, int N, int C, int HW, const float *x,
                                   float *y) {
    int64_t NC = (int64_t)N * C;
    if (NC == 0) return 0;
    if (nhwc) {
        global_avgpool_nhwc_kernel<<<(unsigned)((NC + kThreads - 1) / kThreads), kThreads, 0,
                                     (cudaStream_t)stream>>>(N, C, HW, x, y);
    } else {
        int64_t threads = NC * 32;
        global_avgpool_kernel<<<(unsigned)((threads + kThreads - 1) / kThreads), kThreads, 0,
                                (cudaStream_t)stream>>>((int)NC, HW, x, y);
    }
    return (int)cudaGetLastError();
}
