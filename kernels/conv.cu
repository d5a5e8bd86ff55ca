/* Convolution and pooling, F32, NCHW (direct kernel: the correctness baseline)
** and NHWC (each conv one SGEMM over all pixels, see m40k_conv2d_nhwc).
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
#include "launch.h"
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

/* im2col for NHWC: col[m - m0][(r*S + s)*C + c] = x[n, h, w, c] (0 outside),
** m = (n*P + p)*Q + q. c fastest: reads and writes are coalesced. */
static __global__ void im2col_nhwc_kernel(m40k_conv_shape s, const float *__restrict__ x,
                                          float *__restrict__ col, int64_t m0, int64_t total) {
    int64_t rsc = (int64_t)s.R * s.S * s.C;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t m = m0 + i / rsc, j = i % rsc;
        int c = (int)(j % s.C), t = (int)((j / s.C) % s.S), r = (int)(j / ((int64_t)s.C * s.S));
        int q = (int)(m % s.Q), p = (int)((m / s.Q) % s.P);
        int64_t n = m / ((int64_t)s.Q * s.P);
        int h = p * s.sh - s.ph + r * s.dh, v = q * s.sw - s.pw + t * s.dw;
        col[i] = h >= 0 && h < s.H && v >= 0 && v < s.W ? x[((n * s.H + h) * s.W + v) * s.C + c]
                                                         : 0.0f;
    }
}

/* y[m, k] = act(y·scale[k] + bias[k] + res[m, k]) over [M, K] rows: the
** epilogue when a per-channel scale is given (the SGEMM fuses only bias). */
static __global__ void scale_epilogue_kernel(int64_t total, int K, const float *__restrict__ scale,
                                             const float *__restrict__ bias,
                                             const float *__restrict__ res, int relu, float *y) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int k = (int)(i % K);
        float v = y[i] * scale[k];
        if (bias) v += bias[k];
        if (res) v += res[i];
        y[i] = relu ? fmaxf(v, 0.0f) : v;
    }
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

static bool plain_gemm(const m40k_conv_shape *s) {
    return s->R == 1 && s->S == 1 && s->sh == 1 && s->sw == 1 && s->ph == 0 && s->pw == 0;
}

/* Rows of im2col patches per GEMM: all of them for a plain GEMM, else as
** many as fit 128 MiB (at least one). */
static int64_t nhwc_chunk_rows(const m40k_conv_shape *s) {
    int64_t rows = (int64_t)s->N * s->P * s->Q, cap = 65535 * 64; /* the SGEMM's grid.y limit */
    if (!plain_gemm(s)) {
        int64_t rsc = (int64_t)s->R * s->S * s->C, fit = ((int64_t)128 << 20) / (rsc * 4);
        if (fit < cap) cap = fit < 1 ? 1 : fit;
    }
    return rows < cap ? rows : cap;
}

static size_t nhwc_col_bytes(const m40k_conv_shape *s) {
    if (plain_gemm(s)) return 0;
    size_t b = (size_t)nhwc_chunk_rows(s) * s->R * s->S * s->C * sizeof(float);
    return (b + 255) & ~(size_t)255; /* the split-K scratch follows, aligned */
}

/* The GEMM over `mr` rows of A (x itself or patches) that computes y. */
static m40k_sgemm_args nhwc_gemm(const m40k_conv_shape *s, int64_t mr, const float *a,
                                 const float *w, const float *scale, const float *bias,
                                 const float *res, float *y) {
    int64_t rsc = (int64_t)s->R * s->S * s->C;
    m40k_sgemm_args g = {};
    g.M = (int)mr; g.N = s->K; g.K = (int)rsc;
    g.a = a; g.lda = rsc;
    g.b = w; g.ldb = rsc; g.b_nk = 1; g.b_f16 = 0;
    g.c = y; g.ldc = s->K;
    g.bias = scale ? nullptr : bias;
    g.res = scale ? nullptr : res; g.ldr = s->K;
    g.act = scale || !s->relu ? M40K_SGEMM_ACT_NONE : M40K_SGEMM_ACT_RELU;
    return g;
}

extern "C" size_t m40k_conv2d_nhwc_workspace(const m40k_conv_shape *s, int sm_count) {
    if ((int64_t)s->N * s->P * s->Q == 0 || s->K == 0) return 0;
    m40k_sgemm_args g = nhwc_gemm(s, nhwc_chunk_rows(s), nullptr, nullptr, nullptr, nullptr,
                                  nullptr, nullptr);
    return nhwc_col_bytes(s) + m40k_sgemm_workspace_size(&g, sm_count);
}

extern "C" int m40k_conv2d_nhwc(void *stream, const m40k_conv_shape *s, const float *x,
                                const float *w, const float *scale, const float *bias,
                                const float *residual, float *y, void *ws, size_t ws_bytes,
                                int sm_count) {
    int64_t rows = (int64_t)s->N * s->P * s->Q, rsc = (int64_t)s->R * s->S * s->C;
    if (rows == 0 || s->K == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    bool direct = plain_gemm(s);
    int64_t chunk = nhwc_chunk_rows(s);
    size_t col = nhwc_col_bytes(s);
    if (ws_bytes < col) return (int)cudaErrorInvalidValue; /* no room for the patches */
    /* what is left after the patches is the SGEMM's split-K scratch */
    void *sk = col < ws_bytes ? (char *)ws + col : nullptr;
    size_t sk_bytes = col < ws_bytes ? ws_bytes - col : 0;
    for (int64_t m0 = 0; m0 < rows; m0 += chunk) {
        int64_t mr = rows - m0 < chunk ? rows - m0 : chunk;
        const float *a = x + m0 * s->C;
        if (!direct) {
            int64_t total = mr * rsc;
            im2col_nhwc_kernel<<<grid_for(total), kThreads, 0, st>>>(*s, x, (float *)ws, m0, total);
            a = (const float *)ws;
        }
        m40k_sgemm_args g = nhwc_gemm(s, mr, a, w, scale, bias,
                                      residual ? residual + m0 * s->K : nullptr, y + m0 * s->K);
        int e = m40k_sgemm(stream, &g, sm_count, sk, sk_bytes);
        if (e) return e;
    }
    if (scale) {
        int64_t total = rows * s->K;
        scale_epilogue_kernel<<<grid_for(total), kThreads, 0, st>>>(total, s->K, scale, bias,
                                                                    residual, s->relu, y);
    }
    return (int)cudaGetLastError();
}
