/* Weight-only quantized GEMM for prefill: y[M,N] = x[M,K]·Wᵀ + bias, M > 8.
**
** Layout: x [M,K], y [M,N] F32 row-major; W [N,K] in a format of
** include/m40/quant.h (Q4, Q8 with per-row or group scales, or F16).
**
** Tiling: an SGEMM-style kernel, BM x BN x BK = 128 x 128 x 16, 256 threads,
** TM x TN = 8 x 8 outputs per thread (two 4x4 quadrants 64 apart, so the
** shared-memory reads are 128-bit and conflict-free). Each K step the block
** loads a 128x16 tile of x (two float4 per thread) and a 128x16 tile of W:
** each thread fetches 8 consecutive weights of one row (Q4: one 32-bit
** word, Q8: 64 bits, F16: 128 bits), dequantizes them in registers with the
** same PRMT/FADD trick as the GEMV (times the row or group scale) and
** stores them transposed into shared memory. The dequantized matrix never
** exists in device memory: each weight is dequantized once per 128 rows of
** x, i.e. 1 instruction-ish per 128 FMAs. Double-buffered shared memory
** (2 x (16 x 132 + 16 x 132) floats = 33.8 KB), one __syncthreads per step;
** the next tile's global loads are issued before the current tile's FMAs.
**
** Resources (sm_52, CUDA 11.8 ptxas -v): see docs/quant.md (no spills,
** 33.8 KB shared memory, 1 block of 256 threads per SM at <= 128 registers
** ... 2 blocks fit the 96 KB of an M40 SM).
** M40 roofline: compute-bound for M >= 24 or so (ridge 23.7 FLOP/B, int4
** weights 0.5 B per 2·M FLOP): M = 512 x 27392 x 4096 = 115 GFLOP, 16.8 ms
** at 6.84 TFLOP/s. Measured: bench/NOTES.md "Quantized GEMV/GEMM".
**
** The generic tile loader (GENERIC = true) reads elements one by one with
** bounds checks: any K, any alignment. */
#include "quant.h"
#include "quant_bits.cuh" /* byte_to_f, kOffQ4/kOffQ8, load_scale */

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int BM = 128, BN = 128, BK = 16;
constexpr int TM = 8, TN = 8;
constexpr int kThreads = 256;
constexpr int PAD = 4; /* keeps float4 alignment, halves transposed-store conflicts */
constexpr int LDA = BM + PAD, LDB = BN + PAD;

/* The raw bits of 8 consecutive weights of a row (Q4: 1 word, Q8: 2, F16: 4). */
struct WBits {
    uint32_t u[4];
};

template <int WT>
__device__ __forceinline__ void load_wbits(const m40k_qlinear_args &a, int n, int k, WBits &wb) {
    if (n >= a.N || k >= a.K) {
        wb.u[0] = wb.u[1] = wb.u[2] = wb.u[3] = 0; /* 0 bits = 0.0 in every format */
        return;
    }
    if (WT == M40_DTYPE_Q4) {
        wb.u[0] = __ldg((const uint32_t *)((const unsigned char *)a.w + (int64_t)n * (a.K / 2) + k / 2));
    } else if (WT == M40_DTYPE_Q8) {
        uint2 v = __ldg((const uint2 *)((const unsigned char *)a.w + (int64_t)n * a.K + k));
        wb.u[0] = v.x; wb.u[1] = v.y;
    } else {
        uint4 v = __ldg((const uint4 *)((const __half *)a.w + (int64_t)n * a.K + k));
        wb.u[0] = v.x; wb.u[1] = v.y; wb.u[2] = v.z; wb.u[3] = v.w;
    }
}

/* 8 dequantized weights (without the scale) from the bits. */
template <int WT>
__device__ __forceinline__ void dequant8(const WBits &wb, float (&v)[8]) {
    if (WT == M40_DTYPE_Q4) {
        uint32_t w = wb.u[0] ^ 0x88888888u;
        uint32_t lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            v[2 * j] = byte_to_f(hi, j, kOffQ4);     /* high nibble = even column */
            v[2 * j + 1] = byte_to_f(lo, j, kOffQ4);
        }
    } else if (WT == M40_DTYPE_Q8) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            uint32_t w = wb.u[h] ^ 0x80808080u;
#pragma unroll
            for (int j = 0; j < 4; j++) v[4 * h + j] = byte_to_f(w, j, kOffQ8);
        }
    } else {
#pragma unroll
        for (int h = 0; h < 4; h++) {
            v[2 * h] = __half2float(__ushort_as_half((unsigned short)(wb.u[h] & 0xFFFFu)));
            v[2 * h + 1] = __half2float(__ushort_as_half((unsigned short)(wb.u[h] >> 16)));
        }
    }
}

/* Element-wise weight for the generic loader. */
__device__ __forceinline__ float weight_raw(const m40k_qlinear_args &a, int n, int k) {
    if (a.wtype == M40_DTYPE_F16) return __half2float(__ldg((const __half *)a.w + (int64_t)n * a.K + k));
    if (a.wtype == M40_DTYPE_Q8) return (float)(signed char)__ldg((const unsigned char *)a.w + (int64_t)n * a.K + k);
    unsigned byte = __ldg((const unsigned char *)a.w + (int64_t)n * ((a.K + 1) / 2) + k / 2);
    unsigned nib = (k & 1) ? (byte & 0xFu) : (byte >> 4);
    return (float)((int)nib - (int)((nib & 8u) << 1));
}

template <int WT, bool GENERIC>
__global__ void __launch_bounds__(kThreads)
gemm_kernel(m40k_qlinear_args a, int kt_per_split) {
    __shared__ __align__(16) float As[2][BK][LDA]; /* x tile, transposed: As[k][m] */
    __shared__ __align__(16) float Bs[2][BK][LDB]; /* W tile, dequantized: Bs[k][n] */

    const int t = threadIdx.x;
    const int tx = t % 16, ty = t / 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int M = a.M, N = a.N, K = a.K;
    const bool sf16 = a.scale_f16 != 0, has_scale = WT != M40_DTYPE_F16;
    const int64_t ng = a.group ? ((int64_t)K + a.group - 1) / a.group : 1;

    /* loader roles: x: 2 float4 (rows t/4 and 64 + t/4, cols 4*(t%4));
    ** W: row n0 + t%128, cols 8*(t/128) .. +7 */
    const int am = t / 4, ak = 4 * (t % 4);
    const int bn = t % 128, bk = 8 * (t / 128);
    const int wrow = n0 + bn;
    float rowscale = 1.0f;
    if (has_scale && !a.group && wrow < N) rowscale = load_scale(a.scale, wrow, sf16);

    float4 xa[2];
    float wv[8];
    WBits wb;

    auto load_tiles = [&](int k0) {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int m = m0 + am + 64 * i, k = k0 + ak;
            if (GENERIC) {
                float e[4];
#pragma unroll
                for (int j = 0; j < 4; j++)
                    e[j] = (m < M && k + j < K) ? __ldg(a.x + (int64_t)m * K + k + j) : 0.0f;
                xa[i] = make_float4(e[0], e[1], e[2], e[3]);
            } else {
                xa[i] = (m < M && k < K) ? __ldg((const float4 *)(a.x + (int64_t)m * K + k))
                                         : make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
        if (GENERIC) {
#pragma unroll
            for (int j = 0; j < 8; j++) {
                int k = k0 + bk + j;
                wv[j] = (wrow < N && k < K) ? weight_raw(a, wrow, k) : 0.0f;
            }
        } else {
            load_wbits<WT>(a, wrow, k0 + bk, wb);
        }
    };
    auto store_tiles = [&](int buf, int k0) {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            As[buf][ak + 0][am + 64 * i] = xa[i].x;
            As[buf][ak + 1][am + 64 * i] = xa[i].y;
            As[buf][ak + 2][am + 64 * i] = xa[i].z;
            As[buf][ak + 3][am + 64 * i] = xa[i].w;
        }
        float v[8];
        if (GENERIC) {
#pragma unroll
            for (int j = 0; j < 8; j++) v[j] = wv[j];
        } else {
            dequant8<WT>(wb, v);
        }
        if (has_scale) {
            float s = rowscale;
            if (a.group) {
                int k = k0 + bk;
                s = 0.0f;
                if (wrow < N && k < K) s = load_scale(a.scale, (int64_t)wrow * ng + k / a.group, sf16);
                if (GENERIC) {
                    /* 8 columns may straddle a group only when K is unaligned
                    ** to 8: scale element-wise */
#pragma unroll
                    for (int j = 0; j < 8; j++) {
                        int kj = k + j;
                        float sj = (wrow < N && kj < K)
                                       ? load_scale(a.scale, (int64_t)wrow * ng + kj / a.group, sf16)
                                       : 0.0f;
                        v[j] *= sj;
                    }
                    s = 1.0f;
                }
            }
#pragma unroll
            for (int j = 0; j < 8; j++) v[j] *= s;
        }
#pragma unroll
        for (int j = 0; j < 8; j++) Bs[buf][bk + j][bn] = v[j];
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

    /* split-K: this block's K-tiles are [kt0, kt1) */
    const int nk_all = (K + BK - 1) / BK;
    const int kt0 = blockIdx.z * kt_per_split;
    const int kt1 = min(nk_all, kt0 + kt_per_split);
    const int nk = max(0, kt1 - kt0);
    if (nk > 0) {
        load_tiles(kt0 * BK);
        store_tiles(0, kt0 * BK);
        __syncthreads();
    }
    for (int kt = 0; kt < nk; kt++) {
        const int buf = kt & 1;
        if (kt + 1 < nk) load_tiles((kt0 + kt + 1) * BK);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float4 a0 = *(const float4 *)&As[buf][k][ty * 4];
            float4 a1 = *(const float4 *)&As[buf][k][64 + ty * 4];
            float4 b0 = *(const float4 *)&Bs[buf][k][tx * 4];
            float4 b1 = *(const float4 *)&Bs[buf][k][64 + tx * 4];
            float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (kt + 1 < nk) {
            /* the other buffer was last read in step kt-1, before that
            ** step's closing barrier */
            store_tiles(buf ^ 1, (kt0 + kt + 1) * BK);
            __syncthreads();
        }
    }

    /* epilogue: + bias, 4-wide stores where aligned; split-K blocks add
    ** into y (zeroed by the launcher) and only split 0 adds the bias */
    const bool split = gridDim.z > 1;
    const bool add_bias = a.bias && blockIdx.z == 0;
    const bool vec_store = !split && (N % 4 == 0) && (((uintptr_t)a.y & 15) == 0);
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (m >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int n = n0 + h * 64 + tx * 4;
            float v[4];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float b = (add_bias && n + j < N) ? __ldg(a.bias + n + j) : 0.0f;
                if (a.res && blockIdx.z == 0 && n + j < N) b += a.res[(int64_t)m * N + n + j];
                v[j] = acc[i][h * 4 + j] + b;
            }
            float *dst = a.y + (int64_t)m * N + n;
            if (vec_store && n + 3 < N) {
                *(float4 *)dst = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (n + j < N) {
                        if (split) atomicAdd(dst + j, v[j]);
                        else dst[j] = v[j];
                    }
            }
        }
    }
}

template <int WT>
cudaError_t launch(cudaStream_t s, const m40k_qlinear_args &a, bool generic) {
    const int gx = (a.N + BN - 1) / BN, gy = (a.M + BM - 1) / BM;
    const int nk = (a.K + BK - 1) / BK;
    /* Few output tiles (prefill with small M·N): split K over up to 8
    ** blocks per tile to fill the GPU, at least 16 K-tiles each. The
    ** partial sums meet through float atomics, so such results are not
    ** bit-reproducible run to run (last-bit differences). */
    int dev = 0, sms = 24;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    int splits = 1;
    while (splits < 8 && gx * gy * splits < 2 * sms && nk / (splits * 2) >= 16) splits *= 2;
    const int per = (nk + splits - 1) / splits;
    if (splits > 1) {
        cudaError_t e = cudaMemsetAsync(a.y, 0, (size_t)a.M * a.N * sizeof(float), s);
        if (e != cudaSuccess) return e;
    }
    dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)splits);
    if (generic)
        gemm_kernel<WT, true><<<grid, kThreads, 0, s>>>(a, per);
    else
        gemm_kernel<WT, false><<<grid, kThreads, 0, s>>>(a, per);
    return cudaGetLastError();
}

} // namespace

extern "C" int m40k_quant_gemm_run(void *stream, const m40k_qlinear_args *a, int generic) {
    if (a->M <= 0 || a->N <= 0) return 0;
    if ((a->M + BM - 1) / BM > 65535) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    /* vector loads need K % 8 == 0 (8 weights per thread, 16-byte x rows)
    ** and aligned bases */
    bool g = generic || a->K % 8 != 0 || ((uintptr_t)a->w & 15) != 0 ||
             ((uintptr_t)a->x & 15) != 0;
    switch (a->wtype) {
    case M40_DTYPE_Q4: return (int)launch<M40_DTYPE_Q4>(s, *a, g);
    case M40_DTYPE_Q8: return (int)launch<M40_DTYPE_Q8>(s, *a, g);
    case M40_DTYPE_F16: return (int)launch<M40_DTYPE_F16>(s, *a, g);
    default: return (int)cudaErrorInvalidValue;
    }
}
