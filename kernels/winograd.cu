/* Winograd F(2x2, 3x3) for the NHWC convolution, F32, stride 1 (Lavin & Gray
** 2015): the three passes around a batched SGEMM. m40k_conv2d_nhwc
** (kernels/conv.cu) decides when it runs (kernels/conv_plan.h: C·K/(C + K)
** >= 32 and >= 2 output tiles per SM, measured on the H200 in bench/NOTES.md).
**
** Layout: x [N,H,W,C], w [K,3,3,C], y [N,P,Q,K]; workspace U [16][K][C],
** then V [16][chunk][C] and M [16][chunk][K] for a chunk of 2x2 output tiles
** (~128 MiB at a time, kernels/conv_plan.h).
** Tiling: one thread per (tile, 4 channels), 16-byte loads and stores
** (C, K % 4 == 0), grid-stride loops of 256-thread blocks; the 16 GEMMs
** M[ξ] = V[ξ]·U[ξ]ᵀ are one batched m40k_sgemm (kernels/sgemm.cu).
** Resources (sm_52, CUDA 11.8 ptxas -v): wino_input_kernel 96 registers,
** wino_output_kernel 100, wino_weight_kernel 32; no shared memory, no spills.
** Roofline: the passes move 16·T·(C + K) floats for T tiles on top of the
** GEMM, which is 2.25x smaller than the direct GEMM's; on the M40 (ridge
** 23.7 FLOP/B, vs ~13 on the H200) the traffic weighs more: not measured. */
#include "conv_plan.h"
#include "sgemm.h"
#include "winograd.h"

#include <cuda_runtime.h>

constexpr int kThreads = 256;

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

static int grid_for(int64_t n) {
    int64_t g = (n + kThreads - 1) / kThreads;
    if (g > 65535 * 8) g = 65535 * 8;
    return g < 1 ? 1 : (int)g;
}

extern "C" int m40k_conv2d_winograd(void *stream, const m40k_conv_shape *s, const float *x,
                                    const float *w, const float *scale, const float *bias,
                                    const float *residual, float *y, void *ws, int sm_count) {
    cudaStream_t st = (cudaStream_t)stream;
    wino_shape ws_ = {s->N, s->H, s->W, s->C, s->K, s->P, s->Q, s->ph, s->pw,
                      (s->P + 1) / 2, (s->Q + 1) / 2};
    int64_t T = m40k_wino_tiles(s->N, s->P, s->Q), chunk = m40k_wino_chunk(s->C, s->K, T);
    float *U = (float *)ws, *V = (float *)((char *)ws + m40k_wino_u_bytes(s->C, s->K));
    float *M = (float *)((char *)V + m40k_wino_v_bytes(s->C, chunk));
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
