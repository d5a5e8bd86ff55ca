/* Convolution and pooling, F32, NCHW (direct kernel: the correctness baseline)
** and NHWC (the fast path, picked by measurement: bench/NOTES.md).
**
** NHWC, m40k_conv2d_nhwc: every conv is one SGEMM over all N·P·Q output
** pixels (kernels/sgemm.cu), epilogue (bias, residual, ReLU) fused:
**   1x1 stride 1, no padding  A is x itself                 [NPQ, C]·w[K, C]ᵀ
**   any other R x S / stride / padding / dilation: implicit GEMM, the
**     SGEMM's tile loader gathers A[m, (r,s,c)] = x[n, h, w, c] (m40k_conv_a);
**     C % 4 != 0 (the RGB stem) or a misaligned x: x and w are first copied
**     with C padded to 4 (one copy of x, not the R·S copies of im2col)
**   3x3 stride 1 with enough channels and tiles (wino_chosen): Winograd
**     F(2x2, 3x3): input/weight transforms, 16 batched SGEMMs, output
**     transform with the epilogue.
** NHWC because each 4-channel run is one 16-byte load, so the gather costs
** a few integer instructions per 8-wide k-tile (FFMA share of the implicit
** loop 85.8% vs 91.1% for the plain SGEMM, scripts/sass_ffma_ratio.py).
**
** m40k_conv2d_direct (NCHW): one thread per output element, a loop over
** C·R·S, then the fused epilogue (scale, bias, residual, ReLU). No data reuse
** through shared memory; it is the oracle the NHWC kernels are tested
** against on the GPU (tests/test_conv.c), and 0.02-0.09x their speed.
** Pooling: one thread per output (max or average over the in-bounds window);
** global average: one warp per (n, c) plane (NCHW), one thread per (n, c) (NHWC).
** Resources (sm_52, ptxas -v): see the CI resource table. */
#include "conv_plan.h"
#include "sgemm.h"
#include "conv.h"
#include "pool.h"

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

/* Channel padding for NHWC: dst[i, c] = c < C ? src[i, c] : 0 over rows of
** C4 >= C channels (x as [N·H·W, C], w as [K·R·S, C]). Used when C % 4 != 0
** (the 3-channel stem) or x is not 16-byte aligned, so that every conv can
** run as an implicit GEMM on whole 4-channel runs. */
static __global__ void pad_channels_kernel(const float *__restrict__ src, int C, float *dst, int C4,
                                           int64_t total) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = i / C4;
        int c = (int)(i - row * C4);
        dst[i] = c < C ? src[row * C + c] : 0.0f;
    }
}

/* ---- Winograd F(2x2, 3x3), NHWC, stride 1 (Lavin & Gray 2015) ---------------
** Y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A per 2x2 output tile, d its 4x4 input tile:
** 16 multiplies per output pair-of-rows instead of 36, i.e. the GEMM work is
** 2.25x smaller. Three passes, the middle one our batched SGEMM:
**   V[ξ][t][c] = (Bᵀ d B)[ξ]        wino_input_kernel   (t: tile, ξ: 0..15)
**   U[ξ][k][c] = (G g Gᵀ)[ξ]        wino_weight_kernel
**   M[ξ] = V[ξ]·U[ξ]ᵀ               m40k_sgemm, batch 16
**   y = Aᵀ M A + epilogue           wino_output_kernel
** V and M are 4x the input and output: the passes cost 16·T·(C + K) floats
** of traffic on top of the GEMM, so Winograd wins only when C·K/(C + K) is
** large against the machine's FLOP:byte ratio (see winograd_pays). Each
** thread handles 4 channels with 16-byte loads (C, K % 4 == 0). */
struct f4 {
    float x, y, z, w;
};
__device__ __forceinline__ f4 operator+(f4 a, f4 b) {
    return {a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w};
}
__device__ __forceinline__ f4 operator-(f4 a, f4 b) {
    return {a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w};
}
__device__ __forceinline__ f4 ld4(const float *p) {
    float4 v = __ldg((const float4 *)p);
    return {v.x, v.y, v.z, v.w};
}
__device__ __forceinline__ void st4(float *p, f4 v) {
    *(float4 *)p = make_float4(v.x, v.y, v.z, v.w);
}

struct wino_shape {
    int N, H, W, C, K, P, Q, ph, pw, TH, TW;
};

/* Item i of the loop over (tile, 4 channels of X) for tiles t0 .. t0+nt-1:
** the tile's place tl in the batch, tile t0 + tl = (n·TH + th)·TW + tw, and
** the first channel c. */
__device__ __forceinline__ void wino_item(const wino_shape &s, int64_t t0, int64_t i, int X, int64_t *tl,
                                          int64_t *n, int *th, int *tw, int *c) {
    const int X4 = X / 4;
    *tl = i / X4;
    *c = (int)(i - *tl * X4) * 4;
    const int64_t t = t0 + *tl;
    *tw = (int)(t % s.TW);
    *th = (int)((t / s.TW) % s.TH);
    *n = t / ((int64_t)s.TW * s.TH);
}

/* Tiles t0 .. t0+nt-1 (t = (n·TH + th)·TW + tw, input origin (2th - ph,
** 2tw - pw)) into V[ξ][t - t0][c]. */
static __global__ void wino_input_kernel(wino_shape s, int64_t t0, int64_t nt,
                                         const float *__restrict__ x, float *__restrict__ V) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nt * (s.C / 4);
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t tl, n;
        int th, tw, c;
        wino_item(s, t0, i, s.C, &tl, &n, &th, &tw, &c);
        int h0 = 2 * th - s.ph, w0 = 2 * tw - s.pw;
        f4 d[4][4];
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int b = 0; b < 4; b++) {
                int h = h0 + a, w = w0 + b;
                d[a][b] = (unsigned)h < (unsigned)s.H && (unsigned)w < (unsigned)s.W
                              ? ld4(x + ((n * s.H + h) * s.W + w) * s.C + c)
                              : f4{0.0f, 0.0f, 0.0f, 0.0f};
            }
        f4 r[4][4]; /* Bᵀ d: rows (d0 - d2, d1 + d2, d2 - d1, d1 - d3) */
#pragma unroll
        for (int b = 0; b < 4; b++) {
            r[0][b] = d[0][b] - d[2][b];
            r[1][b] = d[1][b] + d[2][b];
            r[2][b] = d[2][b] - d[1][b];
            r[3][b] = d[1][b] - d[3][b];
        }
        int64_t plane = nt * s.C; /* one ξ */
        float *v = V + tl * s.C + c;
#pragma unroll
        for (int a = 0; a < 4; a++) { /* (Bᵀ d) B: the same on columns */
            st4(v + (a * 4 + 0) * plane, r[a][0] - r[a][2]);
            st4(v + (a * 4 + 1) * plane, r[a][1] + r[a][2]);
            st4(v + (a * 4 + 2) * plane, r[a][2] - r[a][1]);
            st4(v + (a * 4 + 3) * plane, r[a][1] - r[a][3]);
        }
    }
}

/* w [K,3,3,C] -> U[ξ][k][c] = (G g Gᵀ)[ξ], G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1]. */
static __global__ void wino_weight_kernel(int K, int C, const float *__restrict__ w,
                                          float *__restrict__ U) {
    int64_t total = (int64_t)K * C;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t k = i / C;
        int c = (int)(i - k * C);
        float g[3][3], r[4][3];
#pragma unroll
        for (int a = 0; a < 3; a++)
#pragma unroll
            for (int b = 0; b < 3; b++) g[a][b] = __ldg(w + ((k * 3 + a) * 3 + b) * C + c);
#pragma unroll
        for (int b = 0; b < 3; b++) {
            r[0][b] = g[0][b];
            r[1][b] = 0.5f * (g[0][b] + g[1][b] + g[2][b]);
            r[2][b] = 0.5f * (g[0][b] - g[1][b] + g[2][b]);
            r[3][b] = g[2][b];
        }
#pragma unroll
        for (int a = 0; a < 4; a++) {
            float *u = U + (int64_t)(a * 4) * total + i;
            u[0] = r[a][0];
            u[total] = 0.5f * (r[a][0] + r[a][1] + r[a][2]);
            u[2 * total] = 0.5f * (r[a][0] - r[a][1] + r[a][2]);
            u[3 * total] = r[a][2];
        }
    }
}

/* M[ξ][t - t0][k] -> y[n, 2th + a, 2tw + b, k] = (Aᵀ M A)[a][b], then
** act(·scale + bias + residual); A = [1 0; 1 1; 1 -1; 0 -1]. */
static __global__ void wino_output_kernel(wino_shape s, int64_t t0, int64_t nt,
                                          const float *__restrict__ M,
                                          const float *__restrict__ scale,
                                          const float *__restrict__ bias,
                                          const float *__restrict__ res, int relu, float *y) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nt * (s.K / 4);
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t tl, n;
        int th, tw, k;
        wino_item(s, t0, i, s.K, &tl, &n, &th, &tw, &k);
        int64_t plane = nt * s.K;
        const float *mp = M + tl * s.K + k;
        f4 r[2][4]; /* Aᵀ m: rows (m0 + m1 + m2, m1 - m2 - m3) */
#pragma unroll
        for (int b = 0; b < 4; b++) {
            f4 m0 = ld4(mp + (0 * 4 + b) * plane), m1 = ld4(mp + (1 * 4 + b) * plane);
            f4 m2 = ld4(mp + (2 * 4 + b) * plane), m3 = ld4(mp + (3 * 4 + b) * plane);
            r[0][b] = m0 + m1 + m2;
            r[1][b] = m1 - m2 - m3;
        }
        f4 sc = scale ? ld4(scale + k) : f4{1.0f, 1.0f, 1.0f, 1.0f};
        f4 bi = bias ? ld4(bias + k) : f4{0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int a = 0; a < 2; a++)
#pragma unroll
            for (int b = 0; b < 2; b++) {
                int p = 2 * th + a, q = 2 * tw + b;
                if (p >= s.P || q >= s.Q) continue;
                f4 v = b == 0 ? r[a][0] + r[a][1] + r[a][2] : r[a][1] - r[a][2] - r[a][3];
                v = {v.x * sc.x, v.y * sc.y, v.z * sc.z, v.w * sc.w};
                v = v + bi;
                int64_t o = ((n * s.P + p) * s.Q + q) * s.K + k;
                if (res) v = v + ld4(res + o);
                if (relu)
                    v = {fmaxf(v.x, 0.0f), fmaxf(v.y, 0.0f), fmaxf(v.z, 0.0f), fmaxf(v.w, 0.0f)};
                st4(y + o, v);
            }
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

/* Every other NHWC conv is an implicit GEMM: the SGEMM's tile loader
** gathers the patches from x itself (m40k_conv_a), so no im2col copy is
** written. It needs whole 4-channel runs at 16-byte aligned addresses; when
** C % 4 != 0 (the 3-channel stem) or x is misaligned, x and w are first
** copied into the workspace with C rounded up to a multiple of 4, zeros in
** the extra channels (a copy of x, not R·S copies as im2col would make). */
/* (Sizes and the Winograd rule: kernels/conv_plan.h, shared with the planner.) */
static int padded_c(const m40k_conv_shape *s) { return (int)m40k_padded_c(s->C); }

static bool aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

static bool needs_pad(const m40k_conv_shape *s, const void *x) {
    return !plain_gemm(s) && (s->C % 4 != 0 || (x && !aligned16(x)));
}

static size_t pad_x_bytes(const m40k_conv_shape *s) { return m40k_pad_x_bytes(s->N, s->H, s->W, s->C); }

static size_t pad_w_bytes(const m40k_conv_shape *s) { return m40k_pad_w_bytes(s->K, s->R, s->S, s->C); }

/* Winograd F(2x2, 3x3) applies to 3x3 stride-1 undilated convs on 4-channel
** runs. It pays when the GEMM work it saves, (1 - 1/2.25)·72·T·C·K FLOP
** for T output tiles, outweighs its traffic of ~128·T·(C + K) bytes, and
** when its 16 GEMMs of T rows fill the GPU. Measured on the H200
** (bench/conv/conv_algo_bench, bench/NOTES.md): it wins on every ResNet-50
** 3x3/1 layer (C = K = 64..512: 1.07-1.78x at batch 8-128) except where T is
** small (7x7x512 at batch 1 and 8: 0.60x, 0.78x, where the implicit GEMM
** splits K). Rule: C·K/(C + K) >= 32 and T >= 2 tiles per SM. On the M40
** (FLOP:byte 24 vs the H200's ~13) the traffic weighs more; not measured. */
static bool wino_applies(const m40k_conv_shape *s) {
    return m40k_wino_applies(s->R, s->S, s->sh, s->sw, s->dh, s->dw, s->C, s->K);
}

static int64_t wino_tiles(const m40k_conv_shape *s) { return m40k_wino_tiles(s->N, s->P, s->Q); }

static bool wino_chosen(const m40k_conv_shape *s, int sm_count) {
    if (!wino_applies(s) || s->algo == M40K_CONV_IMPLICIT) return false;
    return s->algo == M40K_CONV_WINOGRAD ||
           (m40k_wino_pays(s->C, s->K) && wino_tiles(s) >= 2LL * sm_count);
}

extern "C" int m40k_conv2d_nhwc_algo(const m40k_conv_shape *s, int sm_count) {
    return wino_chosen(s, sm_count) ? M40K_CONV_WINOGRAD : M40K_CONV_IMPLICIT;
}

static int64_t wino_chunk(const m40k_conv_shape *s) { return m40k_wino_chunk(s->C, s->K, wino_tiles(s)); }

static size_t wino_u_bytes(const m40k_conv_shape *s) { return m40k_wino_u_bytes(s->C, s->K); }

static size_t wino_v_bytes(const m40k_conv_shape *s) { return m40k_wino_v_bytes(s->C, wino_chunk(s)); }

static size_t wino_bytes(const m40k_conv_shape *s) { return m40k_wino_bytes(s->C, s->K, wino_tiles(s)); }

static int conv2d_winograd(cudaStream_t st, const m40k_conv_shape *s, const float *x,
                           const float *w, const float *scale, const float *bias,
                           const float *residual, float *y, void *ws, int sm_count) {
    wino_shape ws_ = {s->N, s->H, s->W, s->C, s->K, s->P, s->Q, s->ph, s->pw,
                      (s->P + 1) / 2, (s->Q + 1) / 2};
    int64_t T = wino_tiles(s), chunk = wino_chunk(s);
    float *U = (float *)ws, *V = (float *)((char *)ws + wino_u_bytes(s));
    float *M = (float *)((char *)V + wino_v_bytes(s));
    int64_t kc = (int64_t)s->K * s->C;
    wino_weight_kernel<<<grid_for(kc), kThreads, 0, st>>>(s->K, s->C, w, U);
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        int64_t nt = T - t0 < chunk ? T - t0 : chunk;
        wino_input_kernel<<<grid_for(nt * s->C / 4), kThreads, 0, st>>>(ws_, t0, nt, x, V);
        m40k_sgemm_args g = {};
        g.M = (int)nt; g.N = s->K; g.K = s->C;
        g.a = V; g.lda = s->C;
        g.b = U; g.ldb = s->C; g.b_nk = 1;
        g.c = M; g.ldc = s->K;
        g.batch = 16;
        g.stride_a = nt * s->C; g.stride_b = kc; g.stride_c = nt * s->K;
        int e = m40k_sgemm(st, &g, sm_count, nullptr, 0);
        if (e) return e;
        wino_output_kernel<<<grid_for(nt * s->K / 4), kThreads, 0, st>>>(
            ws_, t0, nt, M, scale, bias, residual, s->relu, y);
    }
    return (int)cudaGetLastError();
}

/* Rows (pixels) per GEMM: the SGEMM's grid.y limit for the 64x64 tile. */
static int64_t nhwc_chunk_rows(const m40k_conv_shape *s) {
    int64_t rows = (int64_t)s->N * s->P * s->Q, cap = 65535 * 64;
    return rows < cap ? rows : cap;
}

/* The GEMM over `mr` output pixels from row m0 that computes y: A is x
** itself (plain 1x1) or gathered from x with C channels (implicit). */
static m40k_sgemm_args nhwc_gemm(const m40k_conv_shape *s, int C, int64_t m0, int64_t mr,
                                 const float *x, const float *w, const float *scale,
                                 const float *bias, const float *res, float *y,
                                 m40k_conv_a *cv) {
    bool plain = plain_gemm(s);
    int64_t rsc = (int64_t)s->R * s->S * C;
    m40k_sgemm_args g = {};
    g.M = (int)mr; g.N = s->K; g.K = (int)rsc;
    g.a = plain && x ? x + m0 * C : x; g.lda = rsc;
    g.b = w; g.ldb = rsc; g.b_nk = 1; g.b_f16 = 0;
    g.c = y ? y + m0 * s->K : nullptr; g.ldc = s->K;
    g.bias = scale ? nullptr : bias;
    g.res = scale || !res ? nullptr : res + m0 * s->K; g.ldr = s->K;
    g.act = scale || !s->relu ? M40K_SGEMM_ACT_NONE : M40K_SGEMM_ACT_RELU;
    if (!plain) {
        *cv = m40k_conv_a{C, s->H, s->W, s->P, s->Q, s->S, s->sh, s->sw, s->ph, s->pw,
                          s->dh, s->dw, (int)m0};
        g.conv = cv;
    }
    return g;
}

extern "C" size_t m40k_conv2d_nhwc_workspace(const m40k_conv_shape *s, const void *x,
                                             int sm_count) {
    if ((int64_t)s->N * s->P * s->Q == 0 || s->K == 0) return 0;
    bool pad = needs_pad(s, x);
    m40k_conv_a cv;
    m40k_sgemm_args g = nhwc_gemm(s, pad ? padded_c(s) : s->C, 0, nhwc_chunk_rows(s), nullptr,
                                  nullptr, nullptr, nullptr, nullptr, nullptr, &cv);
    size_t b = (pad ? pad_x_bytes(s) + pad_w_bytes(s) : 0) +
               m40k_sgemm_workspace_size(&g, sm_count);
    /* Winograd, or the implicit GEMM should the tensors turn out misaligned */
    if (wino_chosen(s, sm_count) && wino_bytes(s) > b) b = wino_bytes(s);
    return b;
}

extern "C" int m40k_conv2d_nhwc(void *stream, const m40k_conv_shape *s, const float *x,
                                const float *w, const float *scale, const float *bias,
                                const float *residual, float *y, void *ws, size_t ws_bytes,
                                int sm_count) {
    int64_t rows = (int64_t)s->N * s->P * s->Q;
    if (rows == 0 || s->K == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    if (wino_chosen(s, sm_count) && aligned16(x) && aligned16(w) && aligned16(y) &&
        (!residual || aligned16(residual)) && (!bias || aligned16(bias)) &&
        (!scale || aligned16(scale)) && ws && ws_bytes >= wino_bytes(s))
        return conv2d_winograd(st, s, x, w, scale, bias, residual, y, ws, sm_count);
    int C = s->C;
    if ((int64_t)s->H * s->W * padded_c(s) >= ((int64_t)1 << 31))
        return (int)cudaErrorInvalidValue; /* the gather indexes one image with int */
    if (needs_pad(s, x)) {
        size_t xb = pad_x_bytes(s), wb = pad_w_bytes(s);
        if (!ws || ws_bytes < xb + wb) return (int)cudaErrorInvalidValue;
        C = padded_c(s);
        float *xp = (float *)ws, *wp = (float *)((char *)ws + xb);
        int64_t nx = (int64_t)s->N * s->H * s->W * C, nw = (int64_t)s->K * s->R * s->S * C;
        pad_channels_kernel<<<grid_for(nx), kThreads, 0, st>>>(x, s->C, xp, C, nx);
        pad_channels_kernel<<<grid_for(nw), kThreads, 0, st>>>(w, s->C, wp, C, nw);
        x = xp;
        w = wp;
        ws = (char *)ws + xb + wb;
        ws_bytes -= xb + wb;
    }
    int64_t chunk = nhwc_chunk_rows(s);
    for (int64_t m0 = 0; m0 < rows; m0 += chunk) {
        int64_t mr = rows - m0 < chunk ? rows - m0 : chunk;
        m40k_conv_a cv;
        m40k_sgemm_args g = nhwc_gemm(s, C, m0, mr, x, w, scale, bias, residual, y, &cv);
        int e = m40k_sgemm(stream, &g, sm_count, ws_bytes ? ws : nullptr, ws_bytes);
        if (e) return e;
    }
    if (scale) {
        int64_t total = rows * s->K;
        scale_epilogue_kernel<<<grid_for(total), kThreads, 0, st>>>(total, s->K, scale, bias,
                                                                    residual, s->relu, y);
    }
    return (int)cudaGetLastError();
}
