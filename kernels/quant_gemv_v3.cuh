/* Quantized GEMV kernel v3, int8/int4 (kernels/quant_gemv.cu says when it
** runs): x staged in shared memory once per persistent block (whole-K mode),
** D chunks of weights in flight per warp, the "exponent-zero" decode; its
** split-K form and the segmented mode. Template and launchers only;
** instances live in the .cu files that launch them. */
#ifndef M40_KERNELS_QUANT_GEMV_V3_CUH
#define M40_KERNELS_QUANT_GEMV_V3_CUH

#include "quant_gemv_common.cuh"
#include "quant_plan.h"

#include <atomic>

namespace {

/* ---- v3 (int8/int4): x staged in shared memory, weights D chunks ahead ----
**
** v2 above staged x[:, chunk] per chunk behind two barriers, so every chunk
** exposed one L2 round trip, and held one 16-byte vector per row in flight.
** v3 stages x for all of K once per block (B <= 2 and K small enough for
** 48 KB: "whole" mode, the blocks are persistent and each warp walks row
** groups g = blockIdx + grid*(warp + 8j)), or for segments of K with one row
** group per warp ("seg" mode: larger batches, large K). Each warp keeps D
** chunks of weights in flight (loads issued D chunks ahead, also across row
** groups and segments), and x sits in shared memory in the order the lanes
** read it (float4 q of lane l at q*32 + l: conflict-free, no pad).
**
** Decode ("exponent-zero", run 6 in bench/NOTES.md): a float whose bits 24-31
** are zero is worth its bits times 2^-149 (subnormal up to bit 22, and the
** first normal binade continues the same spacing). So a field u at bits
** p..p+w-1 of a word, masked in place, IS the float u * 2^(p-149): one LOP
** per weight, no shift, no I2F, no FADD. The staging multiplies x at that
** column by 2^(149-p-S), a power of two chosen per column position, so the
** product is x * u * 2^-S exactly as x * u would be (rounded once in the
** FFMA). u is the offset-binary weight (q + 8 or q + 128, one XOR per
** 32-bit word); the offset leaves through the sum of x, precomputed per lane
** and chunk in the staging. The top byte (bits 24-31 would hit the
** exponent) is first moved to bits 16-23 by one PRMT. Per 32-bit word:
** int4 1 XOR + 6 AND + 1 PRMT + 2 AND = 10 instructions for 8 weights
** (was 20), int8 1 + 3 + 1 = 5 for 4 (was 9). S = (exponent of max|x|) +
** 24 per staging keeps x * 2^(149-p-S) below 2^126 and every product
** x * u * 2^-S normal unless |x| < 2^-102 max|x|, where the FFMA would
** round a subnormal: a relative error below 2^-100 of the result's scale.
** Only needs FTZ off (the default; never --use_fast_math on this file).
** Group scales multiply a 16/32-column partial sum (one FFMA per vector, not
** an FMUL per weight): a lane's vector never straddles a group. */

template <int WT, int R> struct V3 {
    static constexpr int VC = Fmt<WT>::VC; /* columns per lane vector */
    static constexpr int KC = 32 * VC;     /* columns per chunk */
    static constexpr int Q = VC / 4;       /* float4 of x per lane vector */
    static constexpr int F4 = KC / 4;      /* float4 of x per chunk */
    static constexpr int D = R == 1 ? 4 : R == 8 ? 1 : 2; /* chunks of weights in flight per warp */
    /* shared bytes per chunk of x, per batch row (+ the offset sums) */
    static constexpr int CB = KC * 4 + 32 * 4;
    static constexpr float OFF = WT == M40_DTYPE_Q4 ? 8.0f : 128.0f; /* u = q + OFF */
};
constexpr int kSmemBudget = M40K_QGEMV_SMEM; /* the M40's per-block limit */
/* kernels/quant_plan.h states the split-K rule in C for the planner */
static_assert(V3<M40_DTYPE_Q4, 2>::KC == M40K_QGEMV_KC(1) && V3<M40_DTYPE_Q8, 2>::KC == M40K_QGEMV_KC(0) &&
                  V3<M40_DTYPE_Q4, 2>::CB == M40K_QGEMV_CB(1) && V3<M40_DTYPE_Q8, 2>::CB == M40K_QGEMV_CB(0),
              "quant_plan.h and V3 disagree");

template <int WT, int B, int R, int GROUPED>
__device__ __forceinline__ void v3_load(uint4 (&buf)[R], float (&gb)[R], const uint4 *const (&wr)[R],
                                        const int64_t (&sr)[R], int cg, int lane, int vlast,
                                        const m40k_qlinear_args &a, int gshift, int glast) {
    constexpr int VC = V3<WT, R>::VC;
    const int v = min(cg * 32 + lane, vlast);
#pragma unroll
    for (int r = 0; r < R; r++) buf[r] = __ldg(wr[r] + v);
    if constexpr (GROUPED != 0) {
        const int gi = min((cg * 32 + lane) * VC >> gshift, glast);
#pragma unroll
        for (int r = 0; r < R; r++) gb[r] = load_gscale<GROUPED>(a.scale, sr[r] + gi, a.scale_f16 != 0);
    }
}

/* acc[r][b] += one chunk of rows r times x[b] (x pre-scaled, see above);
** xn: the chunk's offset sums, which start each group-scaled partial sum. */
template <int WT, int B, int R, int GROUPED>
__device__ __forceinline__ void v3_compute(const uint4 (&buf)[R], const float (&gb)[R],
                                           float (&acc)[R][B], const float4 *__restrict__ xp,
                                           const float *__restrict__ xn, int XB, int XN) {
    using P = V3<WT, R>;
    float t[R][B];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int b = 0; b < B; b++) t[r][b] = GROUPED ? xn[b * XN] : acc[r][b];
    if (WT == M40_DTYPE_Q4) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            uint32_t wx[R];
#pragma unroll
            for (int r = 0; r < R; r++) wx[r] = word(buf[r], i) ^ 0x88888888u; /* u = q + 8 */
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float4 xv[B];
#pragma unroll
                for (int b = 0; b < B; b++) xv[b] = xp[b * XB + (2 * i + h) * 32];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    float f0, f1, f2, f3;
                    ez_q4_half(wx[r], h, f0, f1, f2, f3);
#pragma unroll
                    for (int b = 0; b < B; b++) {
                        t[r][b] = fmaf(f0, xv[b].x, t[r][b]);
                        t[r][b] = fmaf(f1, xv[b].y, t[r][b]);
                        t[r][b] = fmaf(f2, xv[b].z, t[r][b]);
                        t[r][b] = fmaf(f3, xv[b].w, t[r][b]);
                    }
                }
            }
        }
    } else { /* Q8 */
#pragma unroll
        for (int i = 0; i < P::Q; i++) {
            float4 xv[B];
#pragma unroll
            for (int b = 0; b < B; b++) xv[b] = xp[b * XB + i * 32];
#pragma unroll
            for (int r = 0; r < R; r++) {
                const uint32_t w = word(buf[r], i) ^ 0x80808080u; /* u = q + 128 */
                const float v0 = ezf(w & 0xFFu), v1 = ezf(w & 0xFF00u);
                const float v2 = ezf(w & 0xFF0000u), v3 = ezf(top_byte_to_2(w));
#pragma unroll
                for (int b = 0; b < B; b++) {
                    t[r][b] = fmaf(v0, xv[b].x, t[r][b]);
                    t[r][b] = fmaf(v1, xv[b].y, t[r][b]);
                    t[r][b] = fmaf(v2, xv[b].z, t[r][b]);
                    t[r][b] = fmaf(v3, xv[b].w, t[r][b]);
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int b = 0; b < B; b++)
            acc[r][b] = GROUPED ? fmaf(gscale_value<GROUPED>(gb[r]), t[r][b], acc[r][b]) : t[r][b];
}

/* Warp reduction, then the scales (and 2^S) on the one sum each storing lane
** holds, and the store of one row group. */
template <int WT, int B, int R, int GROUPED>
__device__ __forceinline__ void v3_finish(const float (&acc)[R][B], const float (&sc)[R], int S, int row0,
                                          int lane, const m40k_qlinear_args &a) {
    warp_store<B, R>(acc, row0, lane, a, [&](int r, float v) {
        float s = sc[0];
#pragma unroll
        for (int i = 1; i < R; i++) s = r == i ? sc[i] : s;
        return mul_pow2(GROUPED ? v : v * s, S);
    });
}

/* nch_pad: chunks per row rounded up to D (chunks of weights in flight per
** warp); cps: chunks of x per staging (SEG) or nch_pad (whole). Dynamic
** shared memory: B * cps * CB bytes. */
/* NORM (whole mode, one split): x is rmsnorm(x)·nw (m40k_qlinear_args):
** the staging multiplies x by nw and sums x² per batch row; the row's
** 1/sqrt(mean + eps) multiplies the accumulators before the reduction. */
template <int WT, int B, int R, int GROUPED, bool SEG, int D, bool NORM = false>
__global__ void __launch_bounds__(kThreads, 1)
gemv_kernel(m40k_qlinear_args a, int nch_pad, int cps, int nsplit) {
    static_assert(!(NORM && SEG), "the norm needs x for all of K in one staging");
    using P = V3<WT, R>;
    constexpr int VC = P::VC, KC = P::KC, Q = P::Q, F4 = P::F4;
    extern __shared__ float4 sm4[]; /* x[b][chunk][q][lane], then xneg[b][chunk][lane] */
    __shared__ int wmax[kWarps];
    __shared__ float wss[NORM ? kWarps * B : 1]; /* NORM: each warp's sums of x² */
    const int XB = cps * F4, XN = cps * 32;
    float *xneg = (float *)(sm4 + B * XB); /* -OFF * 2^-S * sum of a lane's x in a chunk */

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int N = a.N, K = a.K;
    const int vlast = K / VC - 1;
    const int ngroups = (N + R - 1) / R;
    const uint4 *wv = (const uint4 *)a.w;
    const int ng = GROUPED ? (K + a.group - 1) / a.group : 1;
    const int gshift = GROUPED ? __ffs(a.group) - 1 : 0, glast = ng - 1;

    /* B * U loads of x in flight per thread (a loop that stored each load
    ** before issuing the next waited one memory latency per float4) */
    constexpr int U = B >= 4 ? 1 : 4 / B;
    /* NORM: vw, the norm weights of the same columns */
    auto stage_issue = [&](int c0, int nch, int f0, float4(&v)[U][B], float4(&vw)[U]) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int cf = f0 + u * kThreads, col = (c0 + cf / F4) * KC + 4 * (cf % F4);
            const bool in = cf < nch * F4 && col < K;
#pragma unroll
            for (int b = 0; b < B; b++) {
                v[u][b] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (in) v[u][b] = __ldg((const float4 *)(a.x + (int64_t)b * K + col));
            }
            if (NORM) {
                vw[u] = in ? load_nw4(a, col) : make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
    };
    /* x chunks [c0, c0 + nch) into slots 0.., zeros past K; block-wide;
    ** v: this thread's first loads, from stage_issue(c0, nch, threadIdx.x).
    ** Returns S: x is stored times 2^(149 - pos - S) (see the decode). */
    auto stage = [&](int c0, int nch, float4(&v)[U][B], float4(&vw)[U], float(&inv)[B]) -> int {
        const int per_b = nch * F4; /* float4 of x per batch row */
        int mx = 0;                 /* largest |x| bits */
        float ss[B];                /* NORM: sums of x² */
#pragma unroll
        for (int b = 0; b < B; b++) ss[b] = 0.0f;
        for (int f0 = threadIdx.x; f0 < per_b; f0 += U * kThreads) {
            if (f0 != (int)threadIdx.x) stage_issue(c0, nch, f0, v, vw);
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int cf = f0 + u * kThreads, c = cf / F4, w4 = cf % F4;
                if (cf < per_b)
#pragma unroll
                    for (int b = 0; b < B; b++) {
                        float4 x4 = v[u][b];
                        if (NORM) {
                            ss[b] = sumsq4(x4, ss[b]);
                            x4.x *= vw[u].x, x4.y *= vw[u].y, x4.z *= vw[u].z, x4.w *= vw[u].w;
                        }
                        mx = max(mx, max(max(__float_as_int(x4.x) & 0x7FFFFFFF, __float_as_int(x4.y) & 0x7FFFFFFF),
                                         max(__float_as_int(x4.z) & 0x7FFFFFFF, __float_as_int(x4.w) & 0x7FFFFFFF)));
                        sm4[b * XB + c * F4 + (w4 % Q) * 32 + w4 / Q] = x4;
                    }
            }
        }
#pragma unroll
        for (int o = 16; o >= 1; o >>= 1) mx = max(mx, __shfl_xor_sync(kFull, mx, o));
        if (NORM)
#pragma unroll
            for (int b = 0; b < B; b++) {
#pragma unroll
                for (int o = 16; o >= 1; o >>= 1) ss[b] += __shfl_xor_sync(kFull, ss[b], o);
                if (lane == 0) wss[warp * B + b] = ss[b];
            }
        if (lane == 0) wmax[warp] = mx;
        __syncthreads();
        mx = wmax[0];
#pragma unroll
        for (int i = 1; i < kWarps; i++) mx = max(mx, wmax[i]);
        if (NORM)
#pragma unroll
            for (int b = 0; b < B; b++) {
                float t = wss[b];
#pragma unroll
                for (int i = 1; i < kWarps; i++) t += wss[i * B + b];
                inv[b] = rsqrtf(t / (float)K + a.eps);
            }
        const int S = min(max((mx >> 23) - 127 + 24, 22), 250);
        for (int e = threadIdx.x; e < B * nch * 32; e += kThreads) {
            const int b = e / (nch * 32), rc = e - b * nch * 32;
            float4 *p = sm4 + b * XB + (rc >> 5) * F4 + (rc & 31);
            float s = 0.0f;
#pragma unroll
            for (int q = 0; q < Q; q++) {
                float4 v = p[q * 32];
                s += (v.x + v.y) + (v.z + v.w);
                v.x *= pow2f(149 - ez_pos<WT>(4 * q + 0) - S);
                v.y *= pow2f(149 - ez_pos<WT>(4 * q + 1) - S);
                v.z *= pow2f(149 - ez_pos<WT>(4 * q + 2) - S);
                v.w *= pow2f(149 - ez_pos<WT>(4 * q + 3) - S);
                p[q * 32] = v;
            }
            xneg[b * XN + rc] = mul_pow2(-P::OFF * s, -S);
        }
        __syncthreads();
        return S;
    };
    /* rows of group g (clamped to N - 1: re-read, never stored) */
    auto rows_of = [&](int g, const uint4 *(&wr)[R], int64_t(&sr)[R], float(&sc)[R]) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = group_row<R>(a, g * R, r);
            wr[r] = wv + (int64_t)row * (vlast + 1);
            sr[r] = (int64_t)row * ng;
            if (!GROUPED) sc[r] = load_scale(a.scale, row, a.scale_f16 != 0);
        }
    };

    uint4 buf[D][R];
    float gb[D][R];
    float acc[R][B];
    const uint4 *wr[R];
    int64_t sr[R];
    float sc[R];
    int g = blockIdx.x + gridDim.x * warp;
    const float4 *xl = sm4 + lane;
    const float *xnl = xneg + lane;

    if (!SEG) {
        /* split-K: block i takes chunks [cb, cb + nch_pad) of every row
        ** (split i % nsplit) and writes its partial sums, without bias, to
        ** a.ws[split]; split_sum_kernel adds the splits in order */
        const int split = blockIdx.x % nsplit, nb = gridDim.x / nsplit, cb = split * nch_pad;
        m40k_qlinear_args ao = a;
        if (nsplit > 1) {
            ao.y = a.ws + (int64_t)split * a.M * N;
            ao.bias = nullptr;
            ao.res = nullptr; /* split_sum_kernel adds bias and res once */
        }
        g = blockIdx.x / nsplit + nb * warp;
        const int gstride = 8 * nb;
        float4 xv[U][B]; /* x first: the weights' bytes would return ahead of it */
        float4 xw[U];
        float inv[B];
        stage_issue(cb, nch_pad, threadIdx.x, xv, xw);
        rows_of(min(g, ngroups - 1), wr, sr, sc);
        if (g < ngroups) {
#pragma unroll
            for (int s = 0; s < D; s++)
                v3_load<WT, B, R, GROUPED>(buf[s], gb[s], wr, sr, cb + s, lane, vlast, a, gshift, glast);
        }
        const int S = stage(cb, nch_pad, xv, xw, inv); /* overlaps the first weight loads */
        if (g >= ngroups) return;
        float corr[B];
#pragma unroll
        for (int b = 0; b < B; b++) corr[b] = 0.0f;
        if (!GROUPED)
            for (int c = 0; c < nch_pad; c++)
#pragma unroll
                for (int b = 0; b < B; b++) corr[b] += xnl[b * XN + c * 32];
        for (; g < ngroups; g += gstride) {
            const int gn = g + gstride;
            const uint4 *nwr[R];
            int64_t nsr[R];
            float nsc[R];
            rows_of(min(gn, ngroups - 1), nwr, nsr, nsc);
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int b = 0; b < B; b++) acc[r][b] = corr[b];
            int c = 0;
            for (; c < nch_pad - D; c += D) {
#pragma unroll
                for (int s = 0; s < D; s++) {
                    v3_compute<WT, B, R, GROUPED>(buf[s], gb[s], acc, xl + (c + s) * F4,
                                                  xnl + (c + s) * 32, XB, XN);
                    v3_load<WT, B, R, GROUPED>(buf[s], gb[s], wr, sr, cb + c + s + D, lane, vlast, a,
                                               gshift, glast);
                }
            }
            /* the last D chunks; their slots take the next group's first D */
#pragma unroll
            for (int s = 0; s < D; s++) {
                v3_compute<WT, B, R, GROUPED>(buf[s], gb[s], acc, xl + (c + s) * F4, xnl + (c + s) * 32,
                                              XB, XN);
                if (gn < ngroups)
                    v3_load<WT, B, R, GROUPED>(buf[s], gb[s], nwr, nsr, cb + s, lane, vlast, a, gshift, glast);
            }
            if (NORM)
#pragma unroll
                for (int r = 0; r < R; r++)
#pragma unroll
                    for (int b = 0; b < B; b++) acc[r][b] *= inv[b];
            v3_finish<WT, B, R, GROUPED>(acc, sc, S, g * R, lane, ao);
#pragma unroll
            for (int r = 0; r < R; r++) {
                wr[r] = nwr[r];
                sr[r] = nsr[r];
                sc[r] = nsc[r];
            }
        }
    } else {
        /* one row group per warp (the grid covers them); every warp takes
        ** part in the staging barriers, also past the last group */
        rows_of(min(g, ngroups - 1), wr, sr, sc);
#pragma unroll
        for (int s = 0; s < D; s++)
            v3_load<WT, B, R, GROUPED>(buf[s], gb[s], wr, sr, s, lane, vlast, a, gshift, glast);
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int b = 0; b < B; b++) acc[r][b] = 0.0f;
        int S = 0; /* acc is in units of 2^-S */
        for (int c0 = 0; c0 < nch_pad; c0 += cps) { /* segments of x, block-uniform */
            const int n = min(cps, nch_pad - c0);
            __syncthreads(); /* everyone is done with the last segment */
            float4 xv[U][B], xw[U];
            float inv[B];
            stage_issue(c0, n, threadIdx.x, xv, xw);
            const int Sn = stage(c0, n, xv, xw, inv);
            if (c0 > 0 && Sn != S)
#pragma unroll
                for (int r = 0; r < R; r++)
#pragma unroll
                    for (int b = 0; b < B; b++) acc[r][b] = mul_pow2(acc[r][b], S - Sn); /* to units of 2^-Sn */
            S = Sn;
            if (!GROUPED)
                for (int k = 0; k < n; k++)
#pragma unroll
                    for (int b = 0; b < B; b++) {
                        const float v = xnl[b * XN + k * 32];
#pragma unroll
                        for (int r = 0; r < R; r++) acc[r][b] += v;
                    }
            /* slots rotate; unrolled D times the rotation is free (register
            ** renaming), only the remainder iterations move registers */
#pragma unroll D
            for (int k = 0; k < n; k++) {
                v3_compute<WT, B, R, GROUPED>(buf[0], gb[0], acc, xl + k * F4, xnl + k * 32, XB, XN);
#pragma unroll
                for (int s = 0; s + 1 < D; s++) {
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        buf[s][r] = buf[s + 1][r];
                        gb[s][r] = gb[s + 1][r];
                    }
                }
                if (c0 + k + D < nch_pad)
                    v3_load<WT, B, R, GROUPED>(buf[D - 1], gb[D - 1], wr, sr, c0 + k + D, lane, vlast, a, gshift,
                                               glast);
            }
        }
        if (g < ngroups) v3_finish<WT, B, R, GROUPED>(acc, sc, S, g * R, lane, a);
    }
}

/* Sums the nsplit partials [nsplit][M][N] in split order (deterministic) and
** adds the bias. */
__global__ void split_sum_kernel(const float *__restrict__ ws, int nsplit, m40k_qlinear_args a) {
    const int64_t MN = (int64_t)a.M * a.N;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < MN; i += (int64_t)gridDim.x * blockDim.x) {
        float v = ws[i];
        for (int k = 1; k < nsplit; k++) v += ws[k * MN + i];
        a.y[i] = v + (a.bias ? __ldg(a.bias + i % a.N) : 0.0f) + (a.res ? a.res[i] : 0.0f);
    }
}

template <int WT, int B, int R, int G, bool SEG, int D, bool NORM = false>
cudaError_t launch_v3_inst(cudaStream_t s, const m40k_qlinear_args &a, int nch_pad, int cps, int sm_count,
                           int bps, int nsplit = 1) {
    using P = V3<WT, R>;
    const size_t smem = (size_t)B * cps * P::CB;
    const int ngroups = (a.N + R - 1) / R;
    const int nblk = (ngroups + kWarps - 1) / kWarps;
    int grid = nblk;
    if (!SEG) { /* persistent: at most as many blocks as fit at once */
        int occ = bps;
        if (occ <= 0) {
            /* (device << 40 | smem << 8 | blocks per SM) of the last query
            ** for this instance: the query costs microseconds of host time */
            static std::atomic<long long> cache{-1};
            int dev = 0;
            cudaGetDevice(&dev);
            const long long key = (long long)dev << 40 | (long long)smem << 8;
            long long c = cache.load(std::memory_order_relaxed);
            if (c < 0 || (c & ~255LL) != key) {
                int o = 0;
                if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, gemv_kernel<WT, B, R, G, SEG, D, NORM>,
                                                                  kThreads, smem) != cudaSuccess || o < 1)
                    o = 1;
                c = key | (o & 255);
                cache.store(c, std::memory_order_relaxed);
            }
            occ = (int)(c & 255);
        }
        /* Balance: every warp gets the same number q of row groups (the
        ** fewest warps that need no more than q each), so that all finish
        ** together; with "as many warps as fit" some got q and some q - 1,
        ** and the last round ran on a fraction of the warps (run 3). */
        const long long wmax = max(1LL, (long long)max(1, sm_count) * occ * kWarps / nsplit);
        const long long q = (ngroups + wmax - 1) / wmax;
        const long long w = (ngroups + q - 1) / q;
        grid = (int)min((long long)nblk, (w + kWarps - 1) / kWarps) * nsplit;
    }
    gemv_kernel<WT, B, R, G, SEG, D, NORM><<<(unsigned)grid, kThreads, smem, s>>>(a, nch_pad, cps, nsplit);
    if (nsplit > 1) {
        const int64_t MN = (int64_t)a.M * a.N;
        const int blocks = (int)min((MN + 255) / 256, (int64_t)8 * max(1, sm_count));
        split_sum_kernel<<<blocks, 256, 0, s>>>(a.ws, nsplit, a);
    }
    return cudaGetLastError();
}

/* launch_v3_inst with G from a (load_gscale: 0 row scales, group scales 1
** f32, 2 f16). int8 takes G 3 (the dtype at run time, as before 2026-12-05):
** its R 4, D 4 instances sit at 236-255 registers and spilled 20-52 bytes
** with either fixed dtype (f16 raw or converted at the load), where the
** run-time form spills none; its group scales are not a ChatGLM2 format. */
template <int WT, int B, int R, bool SEG, int D, bool NORM = false>
cudaError_t launch_v3_g(cudaStream_t s, const m40k_qlinear_args &a, int nch_pad, int cps, int sm_count, int bps,
                        int nsplit = 1) {
    if (!a.group) return launch_v3_inst<WT, B, R, 0, SEG, D, NORM>(s, a, nch_pad, cps, sm_count, bps, nsplit);
    if constexpr (WT == M40_DTYPE_Q8) {
        return launch_v3_inst<WT, B, R, 3, SEG, D, NORM>(s, a, nch_pad, cps, sm_count, bps, nsplit);
    } else {
        if (a.scale_f16) return launch_v3_inst<WT, B, R, 2, SEG, D, NORM>(s, a, nch_pad, cps, sm_count, bps, nsplit);
        return launch_v3_inst<WT, B, R, 1, SEG, D, NORM>(s, a, nch_pad, cps, sm_count, bps, nsplit);
    }
}

/* version 7: v3 whole mode with split-K (see gemv_kernel); needs a.ws of
** m40k_quant_gemv_workspace() bytes when that is > 0, else
** cudaErrorInvalidValue. */
template <int WT, int B, int R>
cudaError_t launch_split(cudaStream_t s, const m40k_qlinear_args &a, int sm_count, int bps) {
    const m40k_qgemv_split p = m40k_qgemv_split_plan(WT == M40_DTYPE_Q4, B, a.K, a.group != 0);
    const size_t need = m40k_quant_gemv_workspace(&a); /* > 0 exactly when p.nsplit > 1 */
    if (need && (!a.ws || a.ws_bytes < need)) return cudaErrorInvalidValue;
    if constexpr (R == 8) { /* one chunk in flight (p.nch is a multiple of 1); no group scales */
        return launch_v3_inst<WT, B, R, 0, false, V3<WT, R>::D>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit);
    } else {
        if (p.D == 2) {
            if constexpr (B < 7)
                return launch_v3_g<WT, B, R, false, 2>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit);
            return launch_v3_inst<WT, B, R, 0, false, 2>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit);
        }
        return launch_v3_g<WT, B, R, false, 1>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit);
    }
}

/* Host view of v3's shared-memory plan: whole mode when x for all of K
** fits (batch <= 2), else segments of K. */
struct V3Plan {
    int nch_pad, cps;
    bool seg;
};
template <int WT, int B, int R, int D>
V3Plan v3_plan(int K) {
    using P = V3<WT, R>;
    const int Kc = (K + P::KC - 1) / P::KC;
    V3Plan p;
    p.nch_pad = (Kc + D - 1) / D * D;
    const int per = B * P::CB; /* bytes of shared memory per chunk */
    p.seg = !(B <= 2 && p.nch_pad * per <= kSmemBudget);
    p.cps = p.nch_pad;
    if (p.seg) {
        int cps = kSmemBudget / per; /* >= 1: B * CB <= 33 KB */
        const int nseg = (p.nch_pad + cps - 1) / cps;
        p.cps = (p.nch_pad + nseg - 1) / nseg;
    }
    return p;
}

/* deep = 1 (version 4): 4 chunks in flight per warp in whole mode, at any R.
** SEG = false: no segmented-mode instances (the library carries them only
** for int8 at batch 1, R = 2); cudaErrorInvalidValue where x does not fit. */
template <int WT, int B, int R, bool SEG = true>
cudaError_t launch_v3(cudaStream_t s, const m40k_qlinear_args &a, int sm_count, int bps, int deep) {
    constexpr int D = V3<WT, R>::D;
    if constexpr (B <= 2) {
        if (deep) {
            const V3Plan p = v3_plan<WT, B, R, 4>(a.K);
            if (!p.seg) return launch_v3_g<WT, B, R, false, 4>(s, a, p.nch_pad, p.cps, sm_count, bps);
        }
        const V3Plan p = v3_plan<WT, B, R, D>(a.K);
        if (!p.seg) return launch_v3_g<WT, B, R, false, D>(s, a, p.nch_pad, p.cps, sm_count, bps);
    }
    if constexpr (SEG) {
        const V3Plan p = v3_plan<WT, B, R, D>(a.K);
        return launch_v3_g<WT, B, R, true, D>(s, a, p.nch_pad, p.cps, sm_count, bps);
    }
    return cudaErrorInvalidValue;
}

/* NORM (a.nw): v3 in whole mode with 4 chunks in flight, one split, at
** batch 1; cudaErrorInvalidValue where x for all of K does not fit (the
** caller, kernels/quant_dispatch.cu, checks m40k_quant_gemv_norm_fused). */
template <int WT, int R>
cudaError_t launch_v3_norm(cudaStream_t s, const m40k_qlinear_args &a, int sm_count, int bps) {
    const V3Plan p = v3_plan<WT, 1, R, 4>(a.K);
    if (p.seg) return cudaErrorInvalidValue;
    return launch_v3_g<WT, 1, R, false, 4, true>(s, a, p.nch_pad, p.cps, sm_count, bps);
}

/* v3 in whole mode for this batch and K at R = 2? (picks the default R) */
template <int WT>
bool v3_whole(int B, int K) {
    switch (B) {
    case 1: return !v3_plan<WT, 1, 2, V3<WT, 2>::D>(K).seg;
    case 2: return !v3_plan<WT, 2, 2, V3<WT, 2>::D>(K).seg;
    default: return false;
    }
}

} // namespace

#endif
