/* Weight-only quantized GEMV for decode: y[M,N] = x[M,K]·Wᵀ + bias, M <= 8.
**
** Layout: W [N,K] row-major in the formats of include/m40/quant.h (Q4: two
** per byte, high nibble = even column; Q8; F16), scales [N] or [N,K/group].
** x [M,K] and y [M,N] F32 row-major.
**
** Two kernels, numbered as in bench/NOTES.md ("Quantized GEMV/GEMM"):
**
** v2 (gemv_v2_kernel; fp16 weights, int4 at batch 1-2 with large K, the
** 4096-row shapes at batch >= 3):
** 256 threads = 8 warps; a warp owns R consecutive rows (R = 1, 2 or 4), a
** block 8R rows. K is walked in chunks of 32 lanes x 16 bytes of weights per
** row (Q4: 1024 columns, Q8: 512, F16: 256): each lane loads one 128-bit
** vector per row per chunk (prefetched one chunk ahead), and the block stages
** x[:, chunk] in shared memory (padded so the per-lane float4 reads are
** conflict-free) between two barriers. Each weight is dequantized once in
** registers and used for all M rows of x, so batch 8 reads the weights once.
** int -> float without I2F: the weight byte (offset to unsigned by one XOR
** per 32-bit word) is placed by PRMT into the mantissa of 2^23
** (0x4B0000uu = 2^23 + u) and one FADD removes 2^23 + offset.
**
** v3 (gemv_kernel; int8/int4): x staged in shared memory once per
** persistent block, D chunks of weights in flight per warp ("version 4":
** D = 4 at R = 2, the batch-1 default), see the comment above gemv_kernel.
** Where x for all of K does not fit in 48 KB (batch >= 3, K = 13696) the
** blocks split K ("version 7", split-K: partial sums in the caller's
** scratch, added in order by split_sum_kernel; "version 9" the same at
** R = 8 rows per warp). Decode "exponent-zero": a
** masked bit field is itself a subnormal float; int4 1.25 and int8 1.25
** instructions per weight besides the FFMA (see the comment above pow2f).
**
** Both: per-row scales multiply the accumulators once at the end; a
** butterfly ("transpose") reduction folds the R*M accumulators across the
** warp in 31 shuffles for 32 values.
**
** Resources (sm_52, CUDA 11.8 ptxas -v; docs/quant.md): no spills; v3
** dynamic shared memory <= 48 KB (the launcher plans it), v2 M*32*(VC+4)*4
** bytes static (Q4 at M=8: 36 KB). Instructions per weight in the inner
** loop: scripts/sass_quant_ipw.py (batch 1, v3: int4 2.5-3.3, int8
** 2.7-4.1). M40 roofline: pure bandwidth. ChatGLM2 27392x4096 int4 = 56.1 MB
** at 288 GB/s = 195 us (int8: 390 us). Measured on an H200 (run 8,
** bench/NOTES.md): 27392x4096 int4 0.61 / int8 0.86 of the 1 GiB copy
** rate, 65024x4096 0.77 / 0.97.
**
** A generic kernel (one warp per row, byte loads) covers shapes the fast
** paths cannot take (K not a multiple of the vector width, unaligned data). */
#include "quant.h"
#include "quant_plan.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>

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

/* Sums each of the R x B per-lane accumulators over the warp and writes
** y[b, row0 + r] = post(r, sum) (+ bias[row]); the lanes whose unsplit low
** bits are 0 write value id = r*B + b. */
struct NoPost {
    __device__ float operator()(int, float v) const { return v; }
};
template <int B, int R, class Post = NoPost>
__device__ __forceinline__ void warp_store(const float (&acc)[R][B], int row0, int lane,
                                           const m40k_qlinear_args &a, Post post = Post()) {
    if constexpr (R * B > 32) { /* more values than lanes: two halves of the rows */
        constexpr int H = R / 2;
        float lo[H][B], hi[H][B];
#pragma unroll
        for (int r = 0; r < H; r++)
#pragma unroll
            for (int b = 0; b < B; b++) lo[r][b] = acc[r][b], hi[r][b] = acc[r + H][b];
        warp_store<B, H>(lo, row0, lane, a, post);
        warp_store<B, H>(hi, row0 + H, lane, a, [&](int r, float v) { return post(r + H, v); });
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
    if ((lane & low_mask) == 0 && id < R * B) {
        const int r = id / B, b = id % B, row = row0 + r;
        if (row < a.N) a.y[(int64_t)b * a.N + row] = post(r, red[0]) + (a.bias ? __ldg(a.bias + row) : 0.0f);
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

/* The fast kernel. B = batch rows (1..8), R = rows per warp, GROUPED =
** group scales (else per-row scales, or none for F16). */
template <int WT, int B, int R, bool GROUPED>
__global__ void __launch_bounds__(kThreads, 1)
gemv_v2_kernel(m40k_qlinear_args a) {
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

    warp_store<B, R>(acc, row0, lane, a);
}

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
/* Top byte of w moved to bits 16-23, zeros elsewhere. */
__device__ __forceinline__ uint32_t top_byte_to_2(uint32_t w) { return __byte_perm(w, 0u, 0x4344); }
__device__ __forceinline__ float ezf(uint32_t bits) { return __int_as_float((int)bits); }

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

template <int WT, int B, int R, bool GROUPED>
__device__ __forceinline__ void v3_load(uint4 (&buf)[R], float (&gb)[R], const uint4 *const (&wr)[R],
                                        const int64_t (&sr)[R], int cg, int lane, int vlast,
                                        const m40k_qlinear_args &a, int gshift, int glast) {
    constexpr int VC = V3<WT, R>::VC;
    const int v = min(cg * 32 + lane, vlast);
#pragma unroll
    for (int r = 0; r < R; r++) buf[r] = __ldg(wr[r] + v);
    if (GROUPED) {
        const int gi = min((cg * 32 + lane) * VC >> gshift, glast);
#pragma unroll
        for (int r = 0; r < R; r++) gb[r] = load_scale(a.scale, sr[r] + gi, a.scale_f16 != 0);
    }
}

/* acc[r][b] += one chunk of rows r times x[b] (x pre-scaled, see above);
** xn: the chunk's offset sums, which start each group-scaled partial sum. */
template <int WT, int B, int R, bool GROUPED>
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
                    /* columns 8i + 4h + j at bits ez_pos<Q4>(4h + j) */
                    const uint32_t w = h ? top_byte_to_2(wx[r]) : wx[r];
                    float f0, f1, f2, f3;
                    if (h == 0) {
                        f0 = ezf(w & 0xF0u), f1 = ezf(w & 0xFu), f2 = ezf(w & 0xF000u), f3 = ezf(w & 0xF00u);
                    } else {
                        f0 = ezf(wx[r] & 0xF00000u), f1 = ezf(wx[r] & 0xF0000u);
                        f2 = ezf(w & 0xF00000u), f3 = ezf(w & 0xF0000u);
                    }
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
        for (int b = 0; b < B; b++) acc[r][b] = GROUPED ? fmaf(gb[r], t[r][b], acc[r][b]) : t[r][b];
}

/* Warp reduction, then the scales (and 2^S) on the one sum each storing lane
** holds, and the store of one row group. */
template <int WT, int B, int R, bool GROUPED>
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
template <int WT, int B, int R, bool GROUPED, bool SEG, int D>
__global__ void __launch_bounds__(kThreads, 1)
gemv_kernel(m40k_qlinear_args a, int nch_pad, int cps, int nsplit) {
    using P = V3<WT, R>;
    constexpr int VC = P::VC, KC = P::KC, Q = P::Q, F4 = P::F4;
    extern __shared__ float4 sm4[]; /* x[b][chunk][q][lane], then xneg[b][chunk][lane] */
    __shared__ int wmax[kWarps];
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
    auto stage_issue = [&](int c0, int nch, int f0, float4(&v)[U][B]) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int cf = f0 + u * kThreads, col = (c0 + cf / F4) * KC + 4 * (cf % F4);
#pragma unroll
            for (int b = 0; b < B; b++) {
                v[u][b] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (cf < nch * F4 && col < K) v[u][b] = __ldg((const float4 *)(a.x + (int64_t)b * K + col));
            }
        }
    };
    /* x chunks [c0, c0 + nch) into slots 0.., zeros past K; block-wide;
    ** v: this thread's first loads, from stage_issue(c0, nch, threadIdx.x).
    ** Returns S: x is stored times 2^(149 - pos - S) (see the decode). */
    auto stage = [&](int c0, int nch, float4(&v)[U][B]) -> int {
        const int per_b = nch * F4; /* float4 of x per batch row */
        int mx = 0;                 /* largest |x| bits */
        for (int f0 = threadIdx.x; f0 < per_b; f0 += U * kThreads) {
            if (f0 != (int)threadIdx.x) stage_issue(c0, nch, f0, v);
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int cf = f0 + u * kThreads, c = cf / F4, w4 = cf % F4;
                if (cf < per_b)
#pragma unroll
                    for (int b = 0; b < B; b++) {
                        const float4 x4 = v[u][b];
                        mx = max(mx, max(max(__float_as_int(x4.x) & 0x7FFFFFFF, __float_as_int(x4.y) & 0x7FFFFFFF),
                                         max(__float_as_int(x4.z) & 0x7FFFFFFF, __float_as_int(x4.w) & 0x7FFFFFFF)));
                        sm4[b * XB + c * F4 + (w4 % Q) * 32 + w4 / Q] = x4;
                    }
            }
        }
#pragma unroll
        for (int o = 16; o >= 1; o >>= 1) mx = max(mx, __shfl_xor_sync(kFull, mx, o));
        if (lane == 0) wmax[warp] = mx;
        __syncthreads();
        mx = wmax[0];
#pragma unroll
        for (int i = 1; i < kWarps; i++) mx = max(mx, wmax[i]);
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
            const int row = min(g * R + r, N - 1);
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
        }
        g = blockIdx.x / nsplit + nb * warp;
        const int gstride = 8 * nb;
        float4 xv[U][B]; /* x first: the weights' bytes would return ahead of it */
        stage_issue(cb, nch_pad, threadIdx.x, xv);
        rows_of(min(g, ngroups - 1), wr, sr, sc);
        if (g < ngroups) {
#pragma unroll
            for (int s = 0; s < D; s++)
                v3_load<WT, B, R, GROUPED>(buf[s], gb[s], wr, sr, cb + s, lane, vlast, a, gshift, glast);
        }
        const int S = stage(cb, nch_pad, xv); /* overlaps the first weight loads */
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
            float4 xv[U][B];
            stage_issue(c0, n, threadIdx.x, xv);
            const int Sn = stage(c0, n, xv);
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
cudaError_t launch_v2(cudaStream_t s, const m40k_qlinear_args &a) {
    dim3 grid((unsigned)((a.N + kWarps * R - 1) / (kWarps * R)));
    if (a.group && WT != M40_DTYPE_F16)
        gemv_v2_kernel<WT, B, R, true><<<grid, kThreads, 0, s>>>(a);
    else
        gemv_v2_kernel<WT, B, R, false><<<grid, kThreads, 0, s>>>(a);
    return cudaGetLastError();
}

/* Sums the nsplit partials [nsplit][M][N] in split order (deterministic) and
** adds the bias. */
__global__ void split_sum_kernel(const float *__restrict__ ws, int nsplit, m40k_qlinear_args a) {
    const int64_t MN = (int64_t)a.M * a.N;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < MN; i += (int64_t)gridDim.x * blockDim.x) {
        float v = ws[i];
        for (int k = 1; k < nsplit; k++) v += ws[k * MN + i];
        a.y[i] = v + (a.bias ? __ldg(a.bias + i % a.N) : 0.0f);
    }
}

template <int WT, int B, int R, bool G, bool SEG, int D>
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
                if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, gemv_kernel<WT, B, R, G, SEG, D>, kThreads,
                                                                  smem) != cudaSuccess || o < 1)
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
    gemv_kernel<WT, B, R, G, SEG, D><<<(unsigned)grid, kThreads, smem, s>>>(a, nch_pad, cps, nsplit);
    if (nsplit > 1) {
        const int64_t MN = (int64_t)a.M * a.N;
        const int blocks = (int)min((MN + 255) / 256, (int64_t)8 * max(1, sm_count));
        split_sum_kernel<<<blocks, 256, 0, s>>>(a.ws, nsplit, a);
    }
    return cudaGetLastError();
}

/* version 7: v3 whole mode with split-K (see gemv_kernel); needs a.ws of
** m40k_quant_gemv_workspace() bytes when that is > 0, else
** cudaErrorInvalidValue. */
template <int WT, int B, int R>
cudaError_t launch_split(cudaStream_t s, const m40k_qlinear_args &a, int sm_count, int bps) {
    const m40k_qgemv_split p = m40k_qgemv_split_plan(WT == M40_DTYPE_Q4, B, a.K, a.group != 0);
    const size_t need = m40k_quant_gemv_workspace(&a); /* > 0 exactly when p.nsplit > 1 */
    if (need && (!a.ws || a.ws_bytes < need)) return cudaErrorInvalidValue;
    const bool g = a.group != 0;
    if constexpr (R == 8) { /* one chunk in flight (p.nch is a multiple of 1); no group scales */
        return launch_v3_inst<WT, B, R, false, false, V3<WT, R>::D>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit);
    } else {
        if (p.D == 2) {
            if constexpr (B < 7)
                if (g) return launch_v3_inst<WT, B, R, true, false, 2>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit);
            return launch_v3_inst<WT, B, R, false, false, 2>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit);
        }
        return g ? launch_v3_inst<WT, B, R, true, false, 1>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit)
                 : launch_v3_inst<WT, B, R, false, false, 1>(s, a, p.nch, p.nch, sm_count, bps, p.nsplit);
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

/* deep = 1 (version 4): 4 chunks in flight per warp in whole mode, at any R */
template <int WT, int B, int R>
cudaError_t launch_v3(cudaStream_t s, const m40k_qlinear_args &a, int sm_count, int bps, int deep) {
    constexpr int D = V3<WT, R>::D;
    const bool grouped = a.group != 0;
    if constexpr (B <= 2) {
        if (deep) {
            const V3Plan p = v3_plan<WT, B, R, 4>(a.K);
            if (!p.seg)
                return grouped ? launch_v3_inst<WT, B, R, true, false, 4>(s, a, p.nch_pad, p.cps, sm_count, bps)
                               : launch_v3_inst<WT, B, R, false, false, 4>(s, a, p.nch_pad, p.cps, sm_count, bps);
        }
        const V3Plan p = v3_plan<WT, B, R, D>(a.K);
        if (!p.seg)
            return grouped ? launch_v3_inst<WT, B, R, true, false, D>(s, a, p.nch_pad, p.cps, sm_count, bps)
                           : launch_v3_inst<WT, B, R, false, false, D>(s, a, p.nch_pad, p.cps, sm_count, bps);
    }
    const V3Plan p = v3_plan<WT, B, R, D>(a.K);
    return grouped ? launch_v3_inst<WT, B, R, true, true, D>(s, a, p.nch_pad, p.cps, sm_count, bps)
                   : launch_v3_inst<WT, B, R, false, true, D>(s, a, p.nch_pad, p.cps, sm_count, bps);
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

/* version 2: the v2 kernel; 3: v3 (int8/int4; fp16 always runs v2); 4: v3
** with 4 chunks in flight in whole mode; 7: v3 whole mode with split-K
** (R = 2 at batch <= 2, else 4; needs a.ws); 9: split-K at R = 8, one chunk
** in flight (batch >= 3 with row scales, else as 7). (5, 6, 8 and 10, v3,
** v2 and split-K held to fewer registers, were measured and dropped:
** bench/NOTES.md.) */
template <int WT, int B>
cudaError_t launch_r(cudaStream_t s, const m40k_qlinear_args &a, int R, int version, int sm_count, int bps) {
    if (WT == M40_DTYPE_F16 || version == 2) {
        switch (R) {
        case 4: return launch_v2<WT, B, 4>(s, a);
        case 2: return launch_v2<WT, B, 2>(s, a);
        default: return launch_v2<WT, B, 1>(s, a);
        }
    }
    if constexpr (WT != M40_DTYPE_F16) {
        if constexpr (B >= 3) /* split-K at R = 8, one chunk in flight, row scales */
            if (version == 9 && !a.group) return launch_split<WT, B, 8>(s, a, sm_count, bps);
        if (version >= 7) return launch_split<WT, B, (B >= 3 ? 4 : 2)>(s, a, sm_count, bps);
        const int deep = version == 4;
        switch (R) {
        case 4: return launch_v3<WT, B, 4>(s, a, sm_count, bps, deep);
        case 2: return launch_v3<WT, B, 2>(s, a, sm_count, bps, deep);
        default: return launch_v3<WT, B, 1>(s, a, sm_count, bps, deep);
        }
    }
    return cudaErrorInvalidValue;
}

template <int WT>
cudaError_t launch_b(cudaStream_t s, const m40k_qlinear_args &a, int R, int version, int sm_count, int bps) {
    switch (a.M) {
    case 1: return launch_r<WT, 1>(s, a, R, version, sm_count, bps);
    case 2: return launch_r<WT, 2>(s, a, R, version, sm_count, bps);
    case 3: return launch_r<WT, 3>(s, a, R, version, sm_count, bps);
    case 4: return launch_r<WT, 4>(s, a, R, version, sm_count, bps);
    case 5: return launch_r<WT, 5>(s, a, R, version, sm_count, bps);
    case 6: return launch_r<WT, 6>(s, a, R, version, sm_count, bps);
    case 7: return launch_r<WT, 7>(s, a, R, version, sm_count, bps);
    default: return launch_r<WT, 8>(s, a, R, version, sm_count, bps);
    }
}

int vec_cols(int wtype) { return wtype == M40_DTYPE_Q4 ? 32 : wtype == M40_DTYPE_Q8 ? 16 : 8; }

} // namespace

extern "C" int m40k_quant_gemv_tuned(void *stream, const m40k_qlinear_args *a, int sm_count, int version,
                                     int rows_per_warp, int blocks_per_sm) {
    if (a->M <= 0 || a->N <= 0) return 0;
    if (a->M > 8) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    int VC = vec_cols(a->wtype);
    bool fast = version != 1 && a->K > 0 && a->K % VC == 0 && ((uintptr_t)a->w & 15) == 0 &&
                ((uintptr_t)a->x & 15) == 0;
    if (!fast) { /* also K == 0: y = bias (or 0) */
        unsigned g = (unsigned)((a->N + kWarps - 1) / kWarps);
        if (a->wtype == M40_DTYPE_Q4) gemv_generic_kernel<M40_DTYPE_Q4><<<g, kThreads, 0, s>>>(*a);
        else if (a->wtype == M40_DTYPE_Q8) gemv_generic_kernel<M40_DTYPE_Q8><<<g, kThreads, 0, s>>>(*a);
        else if (a->wtype == M40_DTYPE_F16) gemv_generic_kernel<M40_DTYPE_F16><<<g, kThreads, 0, s>>>(*a);
        else return (int)cudaErrorInvalidValue;
        return (int)cudaGetLastError();
    }
    /* Defaults from the H200 bench (bench/NOTES.md, runs 4, 6, 11 and 12):
    ** - batch 1-2 with x for all of K in shared memory ("whole"): v3 with 4
    **   chunks in flight (version 4), R = 2; group scales and int4 at batch
    **   2: R = 4 (run 12: 0-9% faster than v3 R = 4 with 2 in flight);
    ** - batch 1-2, larger K: int8 v3 with split-K (version 7), int4 v2, R = 2
    **   (split-K for int4 with group scales at batch 2, runs 10 and 12);
    ** - batch 3-8: split-K (version 7) where it needs at most 4 splits and
    **   N >= 4608 (the 4096-row shapes ran faster on v2), else v2, R = 4;
    **   at batch 6-8 with row scales and N >= 16384 split-K at R = 8
    **   (version 9: half the shared-memory reads of x per weight; run 11),
    **   and int8 with row scales at batch 4 and K >= 8192 (runs 11-12).
    ** Versions 7 and 9 need the scratch in a->ws; without it v2/v3 run. */
    const bool q4 = a->wtype == M40_DTYPE_Q4, isq = a->wtype != M40_DTYPE_F16;
    const bool whole = isq && (q4 ? v3_whole<M40_DTYPE_Q4>(a->M, a->K) : v3_whole<M40_DTYPE_Q8>(a->M, a->K));
    const size_t ws_need = m40k_quant_gemv_workspace(a);
    const bool split_ok = isq && (ws_need == 0 || (a->ws && a->ws_bytes >= ws_need));
    int R = rows_per_warp;
    const bool auto_r = R != 1 && R != 2 && R != 4;
    const bool named = version == 2 || version == 3 || version == 4 || version == 7 || version == 9;
    if (!named) { /* the defaults */
        const bool r4 = a->group || (q4 && a->M == 2);
        const size_t per_split = (size_t)a->M * a->N * sizeof(float);
        if (a->M >= 3) {
            if (split_ok && a->N >= 4608 && ws_need <= 4 * per_split)
                version = !a->group && a->M >= 6 && a->N >= 16384 ? 9 : 7;
            else if (split_ok && !q4 && !a->group && a->M == 4 && a->K >= 8192)
                version = 9; /* int8 4096x13696 at batch 4: 30 vs 40 us (v2 R = 4) */
            else
                version = 2;
        }
        else if (whole)
            version = 4;
        else /* int4 with group scales at batch 2: split-K (4096x13696: 25.4 vs 32.4 us) */
            version = (!q4 || (a->group && a->M == 2)) && split_ok ? 7 : !q4 && a->M == 1 ? 3 : 2;
        if (auto_r && a->M <= 2 && isq) R = whole && r4 ? 4 : 2;
    }
    if (version >= 7 && !split_ok) version = 2; /* no scratch: v2 */
    if (R != 1 && R != 2 && R != 4) {
        R = a->M >= 3 ? 4 : 2;
        /* fp16 at batch 1-2 (v2): at least two blocks per SM */
        if (a->M <= 2 && !isq)
            while (R > 1 && (a->N + kWarps * R - 1) / (kWarps * R) < 2 * sm_count) R /= 2;
    }
    switch (a->wtype) {
    case M40_DTYPE_Q4: return (int)launch_b<M40_DTYPE_Q4>(s, *a, R, version, sm_count, blocks_per_sm);
    case M40_DTYPE_Q8: return (int)launch_b<M40_DTYPE_Q8>(s, *a, R, version, sm_count, blocks_per_sm);
    case M40_DTYPE_F16: return (int)launch_b<M40_DTYPE_F16>(s, *a, R, version, sm_count, blocks_per_sm);
    default: return (int)cudaErrorInvalidValue;
    }
}

extern "C" size_t m40k_quant_gemv_workspace(const m40k_qlinear_args *a) {
    if (a->M <= 0 || a->M > 8 || a->N <= 0 || a->K <= 0 || a->wtype == M40_DTYPE_F16) return 0;
    return m40k_qgemv_split_bytes(a->wtype == M40_DTYPE_Q4, a->M, a->N, a->K, a->group != 0);
}

extern "C" int m40k_quant_gemv_run(void *stream, const m40k_qlinear_args *a, int sm_count,
                                   int rows_per_warp, int generic) {
    return m40k_quant_gemv_tuned(stream, a, sm_count, generic ? 1 : 0, rows_per_warp, 0);
}

extern "C" int m40k_quant_linear(void *stream, const m40k_qlinear_args *a, int sm_count) {
    if (a->M <= 8) return m40k_quant_gemv_run(stream, a, sm_count, 0, 0);
    return m40k_quant_gemm_run(stream, a, 0);
}
