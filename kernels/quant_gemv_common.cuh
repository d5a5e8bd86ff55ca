/* Quantized GEMV (kernels/quant_gemv.cu): what the v2 and v3 kernels share
** (formats, byte-to-float, the warp reduction and store) and the generic
** kernel for shapes the vector kernels cannot take. Device code and host
** templates, in an anonymous namespace: each including .cu (the library's
** kernels/quant_gemv.cu, bench/quant/gemv_versions.cu) gets its own
** instances of exactly the kernels it launches. */
#ifndef M40_KERNELS_QUANT_GEMV_COMMON_CUH
#define M40_KERNELS_QUANT_GEMV_COMMON_CUH

#include "quant.h"
#include "quant_bits.cuh" /* byte_to_f, kOffQ4/kOffQ8, load_scale */
#include "swiglu_math.cuh"

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

__device__ __forceinline__ uint32_t word(const uint4 &v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/* The "exponent-zero" decode's helpers (v3's comment above gemv_kernel, v2's
** EZ form): a masked weight field read as a subnormal float, x pre-scaled by
** a power of two per bit position. */
/* 2^e as a float, e in [-126, 127] */
__device__ __forceinline__ float pow2f(int e) { return __int_as_float((e + 127) << 23); }
/* v * 2^e, e in [-252, 254], exact unless the result under/overflows */
__device__ __forceinline__ float mul_pow2(float v, int e) { return v * pow2f(e / 2) * pow2f(e - e / 2); }

/* Bit position of column c (mod 8 for int4, mod 4 for int8) after the
** decode: int4 high nibble = even column, the top byte moved to bits 16-23. */
template <int WT> __host__ __device__ constexpr int ez_pos(int c) {
    return WT == M40_DTYPE_Q4 ? (c & 7) / 2 * 8 - ((c & 7) >= 6 ? 8 : 0) + ((c & 1) ? 0 : 4)
                              : ((c & 3) == 3 ? 16 : (c & 3) * 8);
}
/* v2's exponent-zero staging of x, per lane vector (its VC columns of x,
** scaled together; gemv_v2_body's ez_item and its VT form share these):
** the float4's max |x| and sum, the order both forms add in */
__device__ __forceinline__ float absmax4(float4 v) {
    return fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
}
__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }
/* the vector's S from its max |x| m: (exponent of m) + 24, at least 22: 22..152 */
__device__ __forceinline__ int ez_vec_S(float m) { return max((__float_as_int(m) >> 23) - 103, 22); }
/* float4 c4 of the vector times 2^(149 - pos - S), pos = ez_pos<WT>(4·c4 + j):
** an exponent field of 276 - S - pos, 104..254 (only c4's low bits count) */
template <int WT> __device__ __forceinline__ void ez_vec_scale4(float4 &v, int S, int c4) {
    const int base = (276 - S) << 23;
    v.x *= __int_as_float(base - (ez_pos<WT>(4 * c4 + 0) << 23));
    v.y *= __int_as_float(base - (ez_pos<WT>(4 * c4 + 1) << 23));
    v.z *= __int_as_float(base - (ez_pos<WT>(4 * c4 + 2) << 23));
    v.w *= __int_as_float(base - (ez_pos<WT>(4 * c4 + 3) << 23));
}
/* the vector's factors (v2's xe): its offset term -OFF·sum·2^-S (u = q + OFF)
** and 2^S as 2^h · 2^(S - h), h = S / 2, each factor <= 2^76 */
template <int WT> __device__ __forceinline__ float4 ez_vec_factors(float sum, int S) {
    constexpr float OFF = WT == M40_DTYPE_Q4 ? 8.0f : 128.0f;
    const int h = S >> 1;
    return make_float4((-OFF * sum) * pow2f(-h) * pow2f(h - S), pow2f(h), pow2f(S - h), 0.f);
}
/* Top byte of w moved to bits 16-23, zeros elsewhere. */
__device__ __forceinline__ uint32_t top_byte_to_2(uint32_t w) { return __byte_perm(w, 0u, 0x4344); }
__device__ __forceinline__ float ezf(uint32_t bits) { return __int_as_float((int)bits); }
/* int4: columns 4h..4h+3 of the word wx (u = q + 8 already) as exponent-zero
** floats, column 4h + j at bits ez_pos<Q4>(4h + j) */
__device__ __forceinline__ void ez_q4_half(uint32_t wx, int h, float &f0, float &f1, float &f2, float &f3) {
    if (h == 0) {
        f0 = ezf(wx & 0xF0u), f1 = ezf(wx & 0xFu), f2 = ezf(wx & 0xF000u), f3 = ezf(wx & 0xF00u);
    } else {
        const uint32_t w = top_byte_to_2(wx);
        f0 = ezf(wx & 0xF00000u), f1 = ezf(wx & 0xF0000u), f2 = ezf(w & 0xF00000u), f3 = ezf(w & 0xF0000u);
    }
}

/* The fused RMSNorm's weights at columns col..col+3 (F16 or F32, a->nw_f16),
** as floats: v2's and v3's staging of x multiply x by them. */
__device__ __forceinline__ float4 load_nw4(const m40k_qlinear_args &a, int col) {
    if (a.nw_f16) {
        const uint2 h = __ldg((const uint2 *)((const __half *)a.nw + col));
        const float2 lo = __half22float2(*(const __half2 *)&h.x), hi = __half22float2(*(const __half2 *)&h.y);
        return make_float4(lo.x, lo.y, hi.x, hi.y);
    }
    return __ldg((const float4 *)((const float *)a.nw + col));
}
/* The kernels take m40k_qlinear_args by value: at 136 bytes sm_52 ptxas
** gave the v2 instances 8-16 more registers than at 120 or 128 (session 36) */
static_assert(sizeof(m40k_qlinear_args) <= 128, "m40k_qlinear_args: keep it within 128 bytes");
/* m40k_qlinear_args.pf (the next node's first operand, a graph run's hint):
** its 128-byte line `unit` asked of L2 (a warp's lane 0, as the warp ends;
** the lines past the grid's warps are left out); a prefetch, so no register
** waits on it */
__device__ __forceinline__ void l2_hint(const m40k_qlinear_args &a, int unit) {
#ifdef __CUDA_ARCH__ /* the host emulations: nothing to prefetch */
    if ((int64_t)unit << 7 < (int64_t)a.pf_bytes)
        asm volatile("prefetch.global.L2 [%0];" ::"l"((const char *)a.pf + ((int64_t)unit << 7)));
#endif
}
/* s + the sum of v's squares (the fused RMSNorm's x², in one order for v2 and v3) */
__device__ __forceinline__ float sumsq4(float4 v, float s) {
    return fmaf(v.x, v.x, fmaf(v.y, v.y, fmaf(v.z, v.z, fmaf(v.w, v.w, s))));
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

/* Sums each of the R x B per-lane accumulators over the warp and writes
** y[b, row0 + r] = post(r, sum) (+ bias[row]); the lanes whose unsplit low
** bits are 0 write value id = r*B + b. */
struct NoPost {
    __device__ float operator()(int, float v) const { return v; }
};
/* Row r of the R-row group that starts at row0 = g·R. With a.glu (F, the
** SwiGLU pairs; N = 2F, F a multiple of R/2) the group is R/2 gate rows
** g·R/2 + r and their up rows F + g·R/2 + r; else rows row0 + r. Groups past
** N (a grid's last block) re-read the last rows and store nothing. */
/* 4 floats of x: the read-only path, or through L2 (XC: written earlier in
** the same launch) */
template <bool XC> __device__ __forceinline__ float4 ldx4(const float *p) {
    if constexpr (XC) return __ldcg((const float4 *)p);
    else return __ldg((const float4 *)p);
}

template <int R> __device__ __forceinline__ int group_row(const m40k_qlinear_args &a, int row0, int r) {
    if (R >= 2 && a.glu) return (r < R / 2 ? 0 : a.glu - R / 2) + min(row0, a.N - R) / 2 + r;
    return min(row0 + r, a.N - 1);
}

/* XC: res through L2 (written earlier in the same launch; gemv_v2_body).
** pre (not with glu, R·B <= 32): each value's addend, bias[row] + res[b,
** row], loaded by the caller before its main loop, so the store waits on no
** global round trip (bias and res left L2 a step ago: a DRAM miss each).
** With both bias and res the sum rounds as v + (bias + res), not (v + bias)
** + res; ChatGLM2's linears have one or the other. */
template <int B, int R, class Post = NoPost, bool XC = false>
__device__ __forceinline__ void warp_store(const float (&acc)[R][B], int row0, int lane,
                                           const m40k_qlinear_args &a, Post post = Post(),
                                           const float (*pre)[B] = nullptr) {
    if constexpr (R * B > 32) { /* more values than lanes: two halves of the rows */
        if (a.glu) return; /* never pairs (m40k_quant_gemv_glu_ok): y holds F columns, not N */
        constexpr int H = R / 2;
        float lo[H][B], hi[H][B];
#pragma unroll
        for (int r = 0; r < H; r++)
#pragma unroll
            for (int b = 0; b < B; b++) lo[r][b] = acc[r][b], hi[r][b] = acc[r + H][b];
        warp_store<B, H, Post, XC>(lo, row0, lane, a, post);
        auto hpost = [&](int r, float v) { return post(r + H, v); };
        warp_store<B, H, decltype(hpost), XC>(hi, row0 + H, lane, a, hpost);
        return;
    }
    constexpr int V = pow2_at_least(R * B);
    float red[V];
#pragma unroll
    for (int i = 0; i < V; i++) red[i] = i < R * B ? acc[i / B][i % B] : 0.0f;
    int id;
    warp_sum_many<V>(red, lane, &id);
    constexpr int split_bits = V == 1 ? 0 : V == 2 ? 1 : V == 4 ? 2 : V == 8 ? 3 : V == 16 ? 4 : 5;
    constexpr int low_mask = (1 << (5 - split_bits)) - 1;
    if constexpr (R >= 2 && V == R * B) {
        if (a.glu) {
            /* SwiGLU pairs (group_row): value id (row r < R/2) and id + V/2
            ** (its up row r + R/2) sit in lanes l and l ^ 16, warp_sum_many's
            ** first split */
            const int r = id / B, b = id % B;
            const float v = post(r, red[0]) + (a.bias ? __ldg(a.bias + group_row<R>(a, row0, r)) : 0.0f);
            const float u = __shfl_xor_sync(kFull, v, 16);
            if ((lane & low_mask) == 0 && id < V / 2 && row0 < a.N)
                a.y[(int64_t)b * a.glu + row0 / 2 + r] = swiglu1(v, u);
            return;
        }
    }
    if ((lane & low_mask) == 0 && id < R * B && !a.glu) { /* glu here: refused on the host */
        const int r = id / B, b = id % B, row = row0 + r;
        if (row < a.N) {
            const int64_t i = (int64_t)b * a.N + row;
            if (pre) { /* this lane's value id: its addend, selected in registers */
                float add = 0.0f;
#pragma unroll
                for (int j = 0; j < R * B; j++)
                    if (j == id) add = pre[j / B][j % B];
                a.y[i] = post(r, red[0]) + add;
            } else {
                a.y[i] = post(r, red[0]) + (a.bias ? __ldg(a.bias + row) : 0.0f) + (a.res ? (XC ? __ldcg(a.res + i) : a.res[i]) : 0.0f);
            }
        }
    }
}

/* acc[b] += the 4 dequantized weights v times x[b]'s matching 4 columns, for
** every batch row. */
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
        if (lane == 0 && b < a.M) {
            const int64_t i = (int64_t)b * a.N + n;
            a.y[i] = v + (a.bias ? __ldg(a.bias + n) : 0.0f) + (a.res ? a.res[i] : 0.0f);
        }
    }
}

} // namespace

#endif
