/* Weight-only quantized GEMV for decode: y[M,N] = x[M,K]·Wᵀ + bias, M <= 8.
**
** Layout: W [N,K] row-major in the formats of include/m40/quant.h (Q4: two
** per byte, high nibble = even column; Q8; F16), scales [N] or [N,K/group].
** x [M,K] and y [M,N] F32 row-major.
**
** Tiling: 256 threads = 8 warps; a warp owns R consecutive rows (R = 1, 2
** or 4), a block 8R rows. K is walked in chunks of 32 lanes x 16 bytes of
** weights per row (Q4: 1024 columns, Q8: 512, F16: 256): each lane loads one
** 128-bit vector per row per chunk (prefetched one chunk ahead), and the
** block stages x[:, chunk] in shared memory (padded so the per-lane float4
** reads are conflict-free). Each weight is dequantized once in registers and
** used for all M rows of x (FFMA into R x M accumulators), so batch 8 reads
** the weights exactly once, like batch 1. Scales: per-row scales multiply
** the accumulators at the end; group scales multiply each weight (one FMUL).
** A butterfly ("transpose") reduction folds the R*M accumulators across the
** warp in 31 shuffles for 32 values.
**
** int -> float without I2F: the weight byte (offset to unsigned by one XOR
** per 32-bit word) is placed by PRMT into the mantissa of 2^23
** (0x4B0000uu = 2^23 + u) and one FADD removes 2^23 + offset. Per int4
** weight (M = 1): 3/8 LOP/SHF + PRMT + FADD + FFMA + 1/4 LDS.128 + 1/32 LDG.
**
** Resources (sm_52, CUDA 11.8 ptxas -v; see docs/quant.md for the table):
** no spills; shared memory M*32*(VC+4)*4 bytes (Q4 at M=8: 36 KB).
** M40 roofline: pure bandwidth. ChatGLM2 27392x4096 int4 = 56.1 MB at
** 288 GB/s = 195 us (int8: 390 us). Measured: bench/NOTES.md, "Quantized
** GEMV/GEMM" (bench/quant/run_h200.sh).
**
** A generic kernel (one warp per row, byte loads) covers shapes the fast
** path cannot take (K not a multiple of the vector width, unaligned data). */
#include "launch.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr unsigned kFull = 0xFFFFFFFFu;

/* Columns per 16-byte weight vector. */
template <int WT> struct Fmt;
template <> struct Fmt<M40_DTYPE_Q4> { static constexpr int VC = 32; };
template <> struct Fmt<M40_DTYPE_Q8> { static constexpr int VC = 16; };
template <> struct Fmt<M40_DTYPE_F16> { static constexpr int VC = 8; };

/* Byte `sel` of u (0..255) as the float 2^23 + u, minus `off`: exact. */
__device__ __forceinline__ float byte_to_f(uint32_t u, int sel, float off) {
    return __int_as_float((int)__byte_perm(u, 0x4B000000u, 0x7440 | sel)) - off;
}
constexpr float kOffQ4 = 8388616.0f; /* 2^23 + 8   */
constexpr float kOffQ8 = 8388736.0f; /* 2^23 + 128 */

__device__ __forceinline__ uint32_t word(const uint4 &v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

__device__ __forceinline__ float load_scale(const void *s, int64_t i, bool f16) {
    return f16 ? __half2float(__ldg((const __half *)s + i)) : __ldg((const float *)s + i);
}

/* Sum each of V values (V a power of two <= 32) over the warp. Afterwards
** lane l holds the total of value *idx; lanes agreeing in the low bits that
** were not used for splitting hold the same total. */
template <int V>
__device__ __forceinline__ void warp_sum_many(float (&a)[V], int lane, int *idx) {
    int id = 0;
    int S = V;
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) {
        if (S > 1) {
            bool upper = (lane & o) != 0;
#pragma unroll
            for (int i = 0; i < V / 2; i++) {
                if (i < S / 2) {
                    float send = upper ? a[i] : a[i + S / 2];
                    float keep = upper ? a[i + S / 2] : a[i];
                    a[i] = keep + __shfl_xor_sync(kFull, send, o);
                }
            }
            if (upper) id += S / 2;
            S >>= 1;
        } else {
            a[0] += __shfl_xor_sync(kFull, a[0], o);
        }
    }
    *idx = id;
}

__host__ __device__ constexpr int pow2_at_least(int v) { return v <= 1 ? 1 : 2 * pow2_at_least((v + 1) / 2); }

/* Dequantizes 4 consecutive columns (4h .. 4h+3 of 32-bit word i's span) of
** one row and adds v·x into acc for every batch row. */
template <int WT, int B>
__device__ __forceinline__ void dot4(const float (&v)[4], const float4 (&xv)[B], float (&acc)[B]) {
#pragma unroll
    for (int b = 0; b < B; b++) {
        acc[b] = fmaf(v[0], xv[b].x, acc[b]);
        acc[b] = fmaf(v[1], xv[b].y, acc[b]);
        acc[b] = fmaf(v[2], xv[b].z, acc[b]);
        acc[b] = fmaf(v[3], xv[b].w, acc[b]);
    }
}

/* The fast kernel. B = batch rows (1..8), R = rows per warp, GROUPED =
** group scales (else per-row scales, or none for F16). */
template <int WT, int B, int R, bool GROUPED>
__global__ void __launch_bounds__(kThreads, 1)
gemv_kernel(m40k_qlinear_args a) {
    constexpr int VC = Fmt<WT>::VC;   /* columns per lane-vector */
    constexpr int KC = 32 * VC;        /* columns per chunk */
    constexpr int LS = VC + 4;         /* padded floats per lane in xs */
    constexpr int XS = 32 * LS;        /* floats per batch row in xs */
    /* XG: fp16 weights at batch <= 2 read x straight from global memory (L1
    ** hits), with no barrier in the loop: +2-9% on the H200. For int8/int4
    ** (2-4x more weights per byte, so 2-4x more x reads per byte) it was
    ** 1.2-2x slower there, so they, and larger batches, stage x[:, chunk] in
    ** shared memory (bench/NOTES.md, runs 1 and 2). */
    constexpr bool XG = WT == M40_DTYPE_F16 && B <= 2;
    __shared__ __align__(16) float xs[XG ? 4 : B * XS]; /* x[b][chunk cols], padded */

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int N = a.N, K = a.K;
    const int row0 = (blockIdx.x * kWarps + warp) * R;
    const int64_t rowvecs = (int64_t)K / VC;            /* uint4 per row */
    const uint4 *wv = (const uint4 *)a.w;
    const bool sf16 = a.scale_f16 != 0;

    /* Rows past N re-read the last row (no branch in the loop); not stored. */
    const uint4 *wr[R];
    int64_t sbase[R]; /* index of the row's first scale */
    const int64_t ng = GROUPED ? (K + a.group - 1) / a.group : 1;
#pragma unroll
    for (int r = 0; r < R; r++) {
        int row = min(row0 + r, N - 1);
        wr[r] = wv + (int64_t)row * rowvecs;
        sbase[r] = (int64_t)row * ng;
    }
    const int gshift = GROUPED ? __ffs(a.group) - 1 : 0; /* group is a power of two */
    const int glast = (int)ng - 1;

    float acc[R][B];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int b = 0; b < B; b++) acc[r][b] = 0.0f;

    const int nchunks = (K + KC - 1) / KC;
    const int nvec = (int)rowvecs;
    uint4 wcur[R], wnext[R];
    const uint4 zero4 = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int r = 0; r < R; r++) wcur[r] = lane < nvec ? __ldg(wr[r] + lane) : zero4;
    /* Past the end of a row the prefetch re-reads the row's last vector
    ** instead of branching: those columns meet x = 0 in xs (staged as zeros
    ** past K), and dequantized weights are finite, so they add nothing. */
    const int vlast = nvec - 1;

    /* x staging: NF float4 per chunk, a compile-time number of rounds */
    constexpr int F4 = KC / 4, NF = B * F4, ITERS = (NF + kThreads - 1) / kThreads;
#pragma unroll 2
    for (int c = 0; c < nchunks; c++) {
        const int kc0 = c * KC;
        if (!XG && c > 0) __syncthreads(); /* everyone is done with xs */
#pragma unroll
        for (int it = 0; it < (XG ? 0 : ITERS); it++) {
            const int f = threadIdx.x + it * kThreads;
            if (NF % kThreads == 0 || f < NF) {
                const int b = f / F4, c4 = f % F4, col = kc0 + 4 * c4;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (col < K) v = __ldg((const float4 *)(a.x + (int64_t)b * K + col));
                *(float4 *)&xs[b * XS + (c4 / (VC / 4)) * LS + 4 * (c4 % (VC / 4))] = v;
            }
        }
        if (!XG) __syncthreads();
        /* prefetch the next chunk's weights while this one is computed */
        const int vn = (c + 1) * 32 + lane;
#pragma unroll
        for (int r = 0; r < R; r++) wnext[r] = __ldg(wr[r] + min(vn, vlast));

        float gs[R];
        if (GROUPED) {
            const int g = min((kc0 + lane * VC) >> gshift, glast);
#pragma unroll
            for (int r = 0; r < R; r++) gs[r] = load_scale(a.scale, sbase[r] + g, sf16);
        }

        const float *xl = xs + lane * LS;
        const float *xg = a.x + kc0 + lane * VC; /* XG: this lane's columns of x row 0 */
        /* x[b][lane's column + off] */
        auto xv4 = [&](int b, int off) -> float4 {
            if (XG) return __ldg((const float4 *)(xg + (int64_t)b * K + off));
            return *(const float4 *)&xl[b * XS + off];
        };
        /* XG: lanes past K skip (their re-read weights would meet real x) */
        if (XG && kc0 + lane * VC >= K) {
        } else if (WT == M40_DTYPE_Q4) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                uint32_t lo[R], hi[R];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    uint32_t w = word(wcur[r], i) ^ 0x88888888u; /* s -> s + 8 */
                    lo[r] = w & 0x0F0F0F0Fu;         /* odd columns  */
                    hi[r] = (w >> 4) & 0x0F0F0F0Fu;  /* even columns */
                }
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    float4 xv[B];
#pragma unroll
                    for (int b = 0; b < B; b++) xv[b] = xv4(b, 8 * i + 4 * h);
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        float v[4] = {byte_to_f(hi[r], 2 * h, kOffQ4), byte_to_f(lo[r], 2 * h, kOffQ4),
                                      byte_to_f(hi[r], 2 * h + 1, kOffQ4),
                                      byte_to_f(lo[r], 2 * h + 1, kOffQ4)};
                        if (GROUPED)
#pragma unroll
                            for (int j = 0; j < 4; j++) v[j] *= gs[r];
                        dot4<WT, B>(v, xv, acc[r]);
                    }
                }
            }
        } else if (WT == M40_DTYPE_Q8) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                float4 xv[B];
#pragma unroll
                for (int b = 0; b < B; b++) xv[b] = xv4(b, 4 * i);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    uint32_t w = word(wcur[r], i) ^ 0x80808080u; /* s -> s + 128 */
                    float v[4] = {byte_to_f(w, 0, kOffQ8), byte_to_f(w, 1, kOffQ8),
                                  byte_to_f(w, 2, kOffQ8), byte_to_f(w, 3, kOffQ8)};
                    if (GROUPED)
#pragma unroll
                        for (int j = 0; j < 4; j++) v[j] *= gs[r];
                    dot4<WT, B>(v, xv, acc[r]);
                }
            }
        } else { /* F16: store fp16, compute fp32 */
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float4 xv[B];
#pragma unroll
                for (int b = 0; b < B; b++) xv[b] = xv4(b, 4 * h);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    uint32_t w0 = word(wcur[r], 2 * h), w1 = word(wcur[r], 2 * h + 1);
                    float v[4] = {__half2float(__ushort_as_half((unsigned short)(w0 & 0xFFFFu))),
                                  __half2float(__ushort_as_half((unsigned short)(w0 >> 16))),
                                  __half2float(__ushort_as_half((unsigned short)(w1 & 0xFFFFu))),
                                  __half2float(__ushort_as_half((unsigned short)(w1 >> 16)))};
                    dot4<WT, B>(v, xv, acc[r]);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++) wcur[r] = wnext[r];
    }

    /* per-row scales apply once, to the sums */
    if (!GROUPED && WT != M40_DTYPE_F16) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            float s = load_scale(a.scale, min(row0 + r, N - 1), sf16);
#pragma unroll
            for (int b = 0; b < B; b++) acc[r][b] *= s;
        }
    }

    constexpr int V = pow2_at_least(R * B);
    float red[V];
#pragma unroll
    for (int i = 0; i < V; i++) red[i] = i < R * B ? acc[i / B][i % B] : 0.0f;
    int id;
    warp_sum_many<V>(red, lane, &id);
    /* the lanes whose unsplit low bits are 0 write value id = r*B + b */
    constexpr int split_bits = V == 1 ? 0 : V == 2 ? 1 : V == 4 ? 2 : V == 8 ? 3 : V == 16 ? 4 : 5;
    constexpr int low_mask = (1 << (5 - split_bits)) - 1;
    if ((lane & low_mask) == 0 && id < R * B) {
        int r = id / B, b = id % B, row = row0 + r;
        if (row < N) a.y[(int64_t)b * N + row] = red[0] + (a.bias ? __ldg(a.bias + row) : 0.0f);
    }
}

/* The generic kernel: one warp per row, element-wise loads; any K and
** alignment. */
template <int WT>
__device__ __forceinline__ float weight_at(const m40k_qlinear_args &a, int64_t n, int64_t k) {
    /* WT is a template parameter so that no scale load exists for F16
    ** (scale is NULL there; a speculated __ldg of it faulted) */
    if (WT == M40_DTYPE_F16)
        return __half2float(__ldg((const __half *)a.w + n * a.K + k));
    int q;
    if (WT == M40_DTYPE_Q8) {
        q = (int)(signed char)__ldg((const unsigned char *)a.w + n * a.K + k);
    } else {
        int64_t rb = ((int64_t)a.K + 1) / 2;
        unsigned byte = __ldg((const unsigned char *)a.w + n * rb + k / 2);
        unsigned nib = (k & 1) ? (byte & 0xFu) : (byte >> 4);
        q = (int)nib - (int)((nib & 8u) << 1); /* two's complement */
    }
    float s;
    if (a.group) {
        int64_t ng = ((int64_t)a.K + a.group - 1) / a.group;
        s = load_scale(a.scale, n * ng + k / a.group, a.scale_f16 != 0);
    } else {
        s = load_scale(a.scale, n, a.scale_f16 != 0);
    }
    return (float)q * s;
}

template <int WT>
__global__ void __launch_bounds__(kThreads) gemv_generic_kernel(m40k_qlinear_args a) {
    const int lane = threadIdx.x & 31;
    const int64_t n = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (n >= a.N) return;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t k = lane; k < a.K; k += 32) {
        float w = weight_at<WT>(a, n, k);
#pragma unroll
        for (int b = 0; b < 8; b++)
            if (b < a.M) acc[b] = fmaf(w, __ldg(a.x + (int64_t)b * a.K + k), acc[b]);
    }
#pragma unroll
    for (int b = 0; b < 8; b++) {
        float v = acc[b];
#pragma unroll
        for (int o = 16; o >= 1; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
        if (lane == 0 && b < a.M) a.y[(int64_t)b * a.N + n] = v + (a.bias ? __ldg(a.bias + n) : 0.0f);
    }
}

template <int WT, int B, int R>
cudaError_t launch_fast(cudaStream_t s, const m40k_qlinear_args &a) {
    dim3 grid((unsigned)((a.N + kWarps * R - 1) / (kWarps * R)));
    if (a.group && WT != M40_DTYPE_F16)
        gemv_kernel<WT, B, R, true><<<grid, kThreads, 0, s>>>(a);
    else
        gemv_kernel<WT, B, R, false><<<grid, kThreads, 0, s>>>(a);
    return cudaGetLastError();
}

template <int WT, int B>
cudaError_t launch_r(cudaStream_t s, const m40k_qlinear_args &a, int R) {
    switch (R) {
    case 4: return launch_fast<WT, B, 4>(s, a);
    case 2: return launch_fast<WT, B, 2>(s, a);
    default: return launch_fast<WT, B, 1>(s, a);
    }
}

template <int WT>
cudaError_t launch_b(cudaStream_t s, const m40k_qlinear_args &a, int R) {
    switch (a.M) {
    case 1: return launch_r<WT, 1>(s, a, R);
    case 2: return launch_r<WT, 2>(s, a, R);
    case 3: return launch_r<WT, 3>(s, a, R);
    case 4: return launch_r<WT, 4>(s, a, R);
    case 5: return launch_r<WT, 5>(s, a, R);
    case 6: return launch_r<WT, 6>(s, a, R);
    case 7: return launch_r<WT, 7>(s, a, R);
    default: return launch_r<WT, 8>(s, a, R);
    }
}

int vec_cols(int wtype) { return wtype == M40_DTYPE_Q4 ? 32 : wtype == M40_DTYPE_Q8 ? 16 : 8; }

} // namespace

extern "C" int m40k_quant_gemv_run(void *stream, const m40k_qlinear_args *a, int sm_count,
                                   int rows_per_warp, int generic) {
    if (a->M <= 0 || a->N <= 0) return 0;
    if (a->M > 8) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    int VC = vec_cols(a->wtype);
    bool fast = !generic && a->K > 0 && a->K % VC == 0 && ((uintptr_t)a->w & 15) == 0 &&
                ((uintptr_t)a->x & 15) == 0;
    if (!fast) { /* also K == 0: y = bias (or 0) */
        unsigned g = (unsigned)((a->N + kWarps - 1) / kWarps);
        if (a->wtype == M40_DTYPE_Q4) gemv_generic_kernel<M40_DTYPE_Q4><<<g, kThreads, 0, s>>>(*a);
        else if (a->wtype == M40_DTYPE_Q8) gemv_generic_kernel<M40_DTYPE_Q8><<<g, kThreads, 0, s>>>(*a);
        else if (a->wtype == M40_DTYPE_F16) gemv_generic_kernel<M40_DTYPE_F16><<<g, kThreads, 0, s>>>(*a);
        else return (int)cudaErrorInvalidValue;
        return (int)cudaGetLastError();
    }
    int R = rows_per_warp;
    if (R != 1 && R != 2 && R != 4) {
        /* More rows per warp share each x read and the loop overhead (the
        ** H200 bench: R = 2 fastest at batch 1-2, R = 4 at 4-8); at least
        ** two blocks per SM. */
        R = a->M >= 3 ? 4 : 2;
        while (R > 1 && (a->N + kWarps * R - 1) / (kWarps * R) < 2 * sm_count) R /= 2;
    }
    switch (a->wtype) {
    case M40_DTYPE_Q4: return (int)launch_b<M40_DTYPE_Q4>(s, *a, R);
    case M40_DTYPE_Q8: return (int)launch_b<M40_DTYPE_Q8>(s, *a, R);
    case M40_DTYPE_F16: return (int)launch_b<M40_DTYPE_F16>(s, *a, R);
    default: return (int)cudaErrorInvalidValue;
    }
}

extern "C" int m40k_quant_linear(void *stream, const m40k_qlinear_args *a, int sm_count) {
    if (a->M <= 8) return m40k_quant_gemv_run(stream, a, sm_count, 0, 0);
    return m40k_quant_gemm_run(stream, a, 0);
}
