/* Convolution, F32: NCHW direct (the correctness baseline) and NHWC (the
** fast path, picked by measurement: bench/NOTES.md), and the NHWC
** algorithm choice. Winograd's passes: kernels/winograd.cu; pooling:
** kernels/pool.cu.
**
** NHWC, m40k_conv2d_nhwc: every conv is one SGEMM over all N·P·Q output
** pixels (kernels/sgemm.cu), epilogue (bias, residual, ReLU) fused:
**   1x1 stride 1, no padding  A is x itself                 [NPQ, C]·w[K, C]ᵀ
**   any other R x S / stride / padding / dilation: implicit GEMM, the
**     SGEMM's tile loader gathers A[m, (r,s,c)] = x[n, h, w, c] (m40k_conv_a);
**     C % 4 != 0 (the RGB stem) or a misaligned x: x and w are first copied
**     with C padded to 4 (one copy of x, not the R·S copies of im2col)
**   3x3 stride 1 with enough channels and tiles (wino_chosen): Winograd
**     F(2x2, 3x3) (kernels/winograd.cu): input/weight transforms, 16 batched
**     SGEMMs, output transform with the epilogue.
** NHWC because each 4-channel run is one 16-byte load, so the gather costs
** a few integer instructions per 8-wide k-tile (FFMA share of the implicit
** loop 85.8% vs 91.1% for the plain SGEMM, scripts/sass_ffma_ratio.py).
**
** m40k_conv2d_direct (NCHW): one thread per output element, a loop over
** C·R·S, then the fused epilogue (scale, bias, residual, ReLU). No data reuse
** through shared memory; it is the oracle the NHWC kernels are tested
** against on the GPU (tests/test_conv.c), and 0.02-0.09x their speed.
** Resources (sm_52, CUDA 11.8 ptxas -v): conv2d_direct_kernel 56 registers,
** pad_channels_kernel 35, scale_epilogue_kernel 33; no shared memory, no
** spills (the implicit GEMM's kernels: kernels/sgemm.cu). */
#include "conv_plan.h"
#include "sgemm.h"
#include "conv.h"
#include "winograd.h"

#include <cuda_runtime.h>

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

static size_t wino_bytes(const m40k_conv_shape *s) { return m40k_wino_bytes(s->C, s->K, wino_tiles(s)); }

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
        return m40k_conv2d_winograd(stream, s, x, w, scale, bias, residual, y, ws, sm_count);
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
