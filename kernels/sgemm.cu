/* FP32 SGEMM for sm_52 with a fused epilogue.
**
**   C[M,N] = act(A[M,K]·op(B) + bias[N] + R[M,N])       all row-major
**   op(B) = B[K,N]      (b_nk = 0: the BLAS "C = A·B" layout)
**         = B[N,K]ᵀ     (b_nk = 1: PyTorch Linear, y = x·Wᵀ)
**   B is F32 or F16 (converted on load with __half2float: sm_52 has no half
**   arithmetic), or, in the Linear layout, int8 / int4 weights with row or
**   group scales (b_q: the prefill of LINEAR_Q, kernels/quant_dispatch.cu;
**   converted as the tile loads, TileLoader's BQ). bias, R and act are
**   optional. R may be C itself (y += x·Wᵀ).
**
** Variants (the launcher m40k_sgemm picks one by shape, see sgemm_plan):
**   tile 128x128  BM=BN=128, BK=8, 256 threads, TM x TN = 8x8 per thread:
**                 the main kernel, Maxwell style (maxas): A and B tiles are
**                 stored K-major in shared memory ("A transposed"), double
**                 buffered (one __syncthreads per BK step), fragments read with
**                 LDS.128 into double-buffered registers; the next tile's global
**                 loads are issued before the 8 k-steps of the current one.
**   tile 64x64    same code, 4x4 per thread, for shapes that give too few tiles.
**   split-K       either tile, grid.z slices of K write partials to a workspace
**                 and a second kernel sums them in a fixed order (deterministic)
**                 and applies the epilogue.
**   skinny        Linear layout with M <= 8 (decode): a warp per 2 columns of W,
**                 lanes stride K with 16-byte loads, shuffle reduction. Bound by
**                 reading W once.
** Any M, N, K: rows/columns past the edge are clamped on load (their results
** are never stored), and the K residue (K mod 8) is the *first* tile, loaded
** with guards, so the main loop has no bounds checks. 16-byte loads need
** K % 4 == 0, 16-byte aligned bases and leading dims % 4 == 0 (8 bytes for
** F16 B); otherwise the same kernels load element by element (VEC = false).
**
** Resources (CUDA 11.8 ptxas -v, sm_52; all kernels in bench/sgemm/resources_sm52.txt):
**   tile 128x128 x·Wᵀ f32: 118 registers, 0 spills, 16896 B smem -> 2 blocks/SM
**   (16 warps) on an M40; every variant <= 127 registers, no spills. FFMA share of
**   the main loop (two BK tiles per trip): 1024 / 1124 = 91.1%
**   (scripts/sass_ffma_ratio.py).
** M40 roofline for 4096^3: 137 GFLOP at 6.84 TFLOP/s = 20.1 ms; a 128x128x8
** tile does 128*128*8*2 FLOP per (128+128)*8*4 B loaded = 32 FLOP/B, above the
** 23.7 ridge. Measured (H200, sm_90 build of this same code, 2026-11-29,
** bench/sgemm/run_h200.sh): 4096^3 47.1 TFLOP/s = 0.95x cuBLAS pedantic FP32;
** 8192^3 0.95x; 36-shape geomean 0.945x (bench/sgemm/README.md). No M40
** figure yet. */
#include "sgemm.h"
#include "quant_bits.cuh" /* byte_to_f, kOffQ4/kOffQ8, load_scale: the quantized-B loads */

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int BK = 8;
constexpr int kThreads = 256;

struct Params {
    int M, N, K;
    const float *a;    /* [M,K], row stride lda */
    const void *b;     /* [K,N] or [N,K], row stride ldb; f32 or f16 */
    float *c;          /* [M,N], row stride ldc */
    const float *bias; /* [N] or NULL */
    const float *res;  /* [M,N], row stride ldr, or NULL */
    long long lda, ldb, ldc, ldr;
    int act;           /* M40K_SGEMM_ACT_* */
    int vec_out;       /* C, bias, R allow 16-byte access */
    float *ws;         /* split-K partials [splits][M][N], or NULL */
    int tiles_per_split;
    m40k_conv_a cv;    /* CONV kernels: the implicit A operand */
    int batch;         /* > 1: grid.z runs that many GEMMs (no split-K) */
    long long sa, sb, sc; /* their strides in elements of A, B, C */
    /* quantized B (BQ kernels): scales f16 or f32, per row of B[N,K]
    ** (bgroup 0, applied in the epilogue) or per bgroup columns (bgroups
    ** of them a row, applied as the tile is loaded) */
    const void *bscale;
    int bscale_f16, bgroup, bgroups, bgroup_log2;
};

__device__ __forceinline__ float scale_at(const Params &p, long long i) {
    return load_scale(p.bscale, i, p.bscale_f16 != 0);
}

__device__ __forceinline__ float act_apply(float v, int act) {
    if (act == M40K_SGEMM_ACT_RELU) return v > 0.0f ? v : 0.0f;
    if (act == M40K_SGEMM_ACT_SILU) return v / (1.0f + expf(-v));
    return v;
}

/* out = act(acc·scale[n] + bias[n] + R[m,n]); the scale only for B
** quantized with row scales */
__device__ __forceinline__ float epilogue(const Params &p, float acc, int m, int n) {
    if (p.bscale && !p.bgroup) acc *= scale_at(p, n);
    if (p.bias) acc += p.bias[n];
    if (p.res) acc += p.res[(long long)m * p.ldr + n];
    return act_apply(acc, p.act);
}

__device__ __forceinline__ float h2f(unsigned short u) {
    return __half2float(__ushort_as_half(u));
}

/* E contiguous elements (E = 2 or 4) from element offset 0 of p, as floats. */
template <int E, bool F16, bool VEC>
__device__ __forceinline__ void load_run(float (&v)[E], const void *p) {
    if (F16) {
        const unsigned short *h = (const unsigned short *)p;
        if (VEC && E == 4) {
            uint2 u = __ldg((const uint2 *)h);
            v[0] = h2f((unsigned short)(u.x & 0xffffu));
            v[1] = h2f((unsigned short)(u.x >> 16));
            v[2] = h2f((unsigned short)(u.y & 0xffffu));
            v[3] = h2f((unsigned short)(u.y >> 16));
        } else if (VEC && E == 2) {
            unsigned u = __ldg((const unsigned *)h);
            v[0] = h2f((unsigned short)(u & 0xffffu));
            v[1] = h2f((unsigned short)(u >> 16));
        } else {
#pragma unroll
            for (int i = 0; i < E; i++) v[i] = h2f(__ldg(h + i));
        }
    } else {
        const float *f = (const float *)p;
        if (VEC && E == 4) {
            float4 u = __ldg((const float4 *)f);
            v[0] = u.x; v[1] = u.y; v[2] = u.z; v[3] = u.w;
        } else if (VEC && E == 2) {
            float2 u = __ldg((const float2 *)f);
            v[0] = u.x; v[1] = u.y;
        } else {
#pragma unroll
            for (int i = 0; i < E; i++) v[i] = __ldg(f + i);
        }
    }
}

/* Quantized B, B[N,K] layout: E (2 or 4) consecutive k of one row as
** floats without the scale. BQ 8: int8; BQ 4: int4, two a byte, the high
** nibble the even k (include/m40/quant.h); byte_to_f (quant_bits.cuh)
** converts a byte in one PRMT and one FADD. */
template <int E, int BQ>
__device__ __forceinline__ void load_qrun(float (&v)[E], const unsigned char *p) {
    if (BQ == 8) {
        uint32_t u = E == 4 ? __ldg((const unsigned *)p) : (uint32_t)__ldg((const unsigned short *)p);
        u ^= 0x80808080u;
#pragma unroll
        for (int i = 0; i < E; i++) v[i] = byte_to_f(u, i, kOffQ8);
    } else {
        uint32_t u = E == 4 ? (uint32_t)__ldg((const unsigned short *)p) : (uint32_t)__ldg(p);
        u ^= 0x8888u;
        uint32_t lo = u & 0x0F0Fu, hi = (u >> 4) & 0x0F0Fu;
#pragma unroll
        for (int i = 0; i < E / 2; i++) {
            v[2 * i] = byte_to_f(hi, i, kOffQ4);
            v[2 * i + 1] = byte_to_f(lo, i, kOffQ4);
        }
    }
}

/* One thread's share of a BMxBK (A) and BKxBN (B) tile, staged in registers
** between the global load and the shared-memory store.
** CONV: A is the implicit im2col matrix of an NHWC convolution (Params::cv).
** The thread's row m = (n, p, q) is fixed, so it keeps the pixel's origin
** and walks k = (r, s, c) by BK per tile: c += 8, carrying into s and r
** (twice when C == 4). A run of EA channels is one 16-byte (EA = 4) or
** 8-byte load, or zeros when (h, w) falls in the padding; C % 4 == 0 keeps
** a run inside one pixel. Each load steps to the next tile itself, so the J
** look-ahead of the plain loader does not apply to A.
** BQ (quantized B, B_NK and VEC only, K % 8 == 0): 8 or 4 with row scales
** (applied in the epilogue), 18 or 14 with group scales (applied here, one
** scale a run: a run of EB k never crosses a group). */
template <int BM, int BN, bool B_NK, bool B_F16, bool VEC, bool CONV = false, int BQ = 0>
struct TileLoader {
    static constexpr int EA = BM * BK / kThreads;  /* A elements per thread: 4 or 2 */
    static constexpr int EB = BN * BK / kThreads;
    static constexpr int QB = BQ % 10;             /* 8, 4 or 0 */
    static constexpr bool QG = BQ >= 10;           /* group scales */
    static constexpr int ESZ = B_F16 ? 2 : 4;      /* bytes per B element (not QB) */
    /* bytes of k elements of a B row */
    static __device__ __forceinline__ long long bbytes(long long k) {
        return QB == 4 ? k >> 1 : QB == 8 ? k : k * ESZ;
    }
    static constexpr int LDS_A = BM + 4;           /* padded: the transposed store is */
    static constexpr int LDS_B = BN + 4;           /* conflict-free (see below) */

    const float *pa;       /* this thread's A run, advanced by BK per tile */
    const char *pb;        /* this thread's B run */
    long long b_step;      /* bytes to advance B per tile */
    int a_row, a_k;        /* A: row in the tile, first k of the run */
    int b_r, b_c;          /* B_NK: row n, first k; else: row k, first column */
    int b_last;            /* KN, scalar path: columns past b_last repeat it */
    int hh, w0, cc, ss;    /* CONV: input row of the current r, column of s = 0,
                              channel, s */
    const char *ps;        /* QG: this thread's row of scales */
    int kq;                /* QG: k of this thread's B run */
    float ra[EA], rb[EB];

    __device__ __forceinline__ void init(const Params &p, int tid, int bm, int bn, int k0,
                                         long long zb) {
        /* A [M,K]: EA consecutive k of one row; 8/EA threads cover a row's 8 k,
        ** so neighbouring threads read one contiguous 32-byte sector. */
        a_row = tid / (BK / EA);
        a_k = (tid % (BK / EA)) * EA;
        int m = min(bm + a_row, p.M - 1); /* clamp: rows past M are never stored */
        if (CONV) {
            const m40k_conv_a &v = p.cv;
            m += v.m0;
            int pq = v.P * v.Q, n = m / pq, pp = (m - n * pq) / v.Q, q = m - n * pq - pp * v.Q;
            int k = k0 + a_k, rs = k / v.C;
            pa = p.a + (long long)n * v.H * v.W * v.C;
            cc = k - rs * v.C;
            ss = rs % v.S;
            w0 = q * v.sw - v.pw;
            hh = pp * v.sh - v.ph + (rs / v.S) * v.dh;
        } else {
            pa = p.a + zb * p.sa + (long long)m * p.lda + k0 + a_k;
        }
        if (B_NK) {
            b_r = tid / (BK / EB);
            b_c = (tid % (BK / EB)) * EB;
            int n = min(bn + b_r, p.N - 1);
            if (QB) { /* ldb in bytes */
                pb = (const char *)p.b + (long long)n * p.ldb + bbytes(k0 + b_c);
                if (QG) {
                    ps = (const char *)p.bscale + (long long)n * p.bgroups * (p.bscale_f16 ? 2 : 4);
                    kq = k0 + b_c;
                }
            } else {
                pb = (const char *)p.b + (zb * p.sb + (long long)n * p.ldb + k0 + b_c) * ESZ;
            }
            b_step = bbytes(BK);
        } else {
            /* B [K,N]: EB consecutive columns of one k row */
            b_r = tid / (BN / EB);
            b_c = (tid % (BN / EB)) * EB;
            int n = bn + b_c;
            if (VEC) n = min(n, p.N - EB); /* N % 4 == 0 here */
            else n = min(n, p.N - 1);
            b_last = p.N - 1 - n;
            pb = (const char *)p.b + (zb * p.sb + (long long)(k0 + b_r) * p.ldb + n) * ESZ;
            b_step = (long long)BK * p.ldb * ESZ;
        }
    }

    /* Loads the tile J tiles ahead of the current position (J is a
    ** compile-time constant, so the address is pointer + immediate).
    ** GUARD: only the first (residue) tile, where k runs to klen < BK. */
    template <bool GUARD, int J = 0>
    __device__ __forceinline__ void load(const Params &p, int klen) {
        const float *qa = pa + J * BK;
        const char *qb = B_NK ? pb + J * bbytes(BK) : pb + J * b_step;
        if (CONV) { /* K % 4 == 0: the residue tile is 4 or 8 long */
            const m40k_conv_a &v = p.cv;
            int ww = w0 + ss * v.dw;
            if ((!GUARD || a_k < klen) && (unsigned)hh < (unsigned)v.H &&
                (unsigned)ww < (unsigned)v.W)
                load_run<EA, false, true>(ra, pa + (hh * v.W + ww) * v.C + cc);
            else
#pragma unroll
                for (int i = 0; i < EA; i++) ra[i] = 0.0f;
            cc += GUARD ? klen : BK;
            while (cc >= v.C) {
                cc -= v.C;
                if (++ss == v.S) {
                    ss = 0;
                    hh += v.dh;
                }
            }
        } else if (VEC) {
            if (!GUARD || a_k < klen) load_run<EA, false, true>(ra, qa);
            else
#pragma unroll
                for (int i = 0; i < EA; i++) ra[i] = 0.0f;
        } else {
#pragma unroll
            for (int i = 0; i < EA; i++) ra[i] = (!GUARD || a_k + i < klen) ? __ldg(qa + i) : 0.0f;
        }
        if (QB) { /* K % 8 == 0: no residue tile */
            load_qrun<EB, QB>(rb, (const unsigned char *)qb);
            if (QG) {
                const int g = (kq + J * BK) >> p.bgroup_log2; /* a power of two */
                const float s = p.bscale_f16 ? __half2float(__ldg((const __half *)ps + g))
                                             : __ldg((const float *)ps + g);
#pragma unroll
                for (int i = 0; i < EB; i++) rb[i] *= s;
            }
        } else if (B_NK) {
            if (VEC) {
                if (!GUARD || b_c < klen) load_run<EB, B_F16, true>(rb, qb);
                else
#pragma unroll
                    for (int i = 0; i < EB; i++) rb[i] = 0.0f;
            } else {
#pragma unroll
                for (int i = 0; i < EB; i++) {
                    float v[1];
                    if (!GUARD || b_c + i < klen) load_run<1, B_F16, false>(v, qb + i * ESZ);
                    else v[0] = 0.0f;
                    rb[i] = v[0];
                }
            }
        } else {
            if (!GUARD || b_r < klen) {
                if (VEC) load_run<EB, B_F16, true>(rb, qb);
                else
#pragma unroll
                    for (int i = 0; i < EB; i++) {
                        float v[1];
                        load_run<1, B_F16, false>(v, qb + min(i, b_last) * ESZ);
                        rb[i] = v[0];
                    }
            } else {
#pragma unroll
                for (int i = 0; i < EB; i++) rb[i] = 0.0f;
            }
        }
    }

    __device__ __forceinline__ void advance(int tiles) {
        if (!CONV) pa += tiles * BK;
        pb += tiles * b_step;
        if (QG) kq += tiles * BK;
    }

    /* Past the first tile, which holds kk (<= BK) of K: the residue tile is
    ** shorter than BK, and the next tile starts right after it. */
    __device__ __forceinline__ void advance_first(int kk) {
        if (!CONV) pa += kk;
        pb += B_NK ? bbytes(kk) : (long long)kk * (b_step / BK);
        if (QG) kq += kk;
    }

    /* As[k][m], Bs[k][n]. The transposed store writes EA scalars; with the row
    ** padded to BM+4 the threads of a warp (16 rows x 2 k-runs) hit 32
    ** distinct banks: bank = (4k + m) mod 32. */
    __device__ __forceinline__ void store(float *As, float *Bs) const {
#pragma unroll
        for (int i = 0; i < EA; i++) As[(a_k + i) * LDS_A + a_row] = ra[i];
        if (B_NK) {
#pragma unroll
            for (int i = 0; i < EB; i++) Bs[(b_c + i) * LDS_B + b_r] = rb[i];
        } else if (EB == 4) {
            *(float4 *)&Bs[b_r * LDS_B + b_c] = make_float4(rb[0], rb[1], rb[2], rb[3]);
        } else {
#pragma unroll
            for (int i = 0; i < EB; i++) Bs[b_r * LDS_B + b_c + i] = rb[i];
        }
    }
};

/* Thread layout: 16x16 threads, each TM x TN = (BM/16) x (BN/16), taken as
** TM/4 runs of 4 rows spaced BM/2 apart (likewise columns), so a warp (4 x 8
** threads) reads 4 + 8 distinct float4 per k: broadcast, no bank conflicts. */
template <int BM, int BN, bool B_NK, bool B_F16, bool VEC, bool CONV = false, int BQ = 0>
__global__ void __launch_bounds__(kThreads, 2) sgemm_tile_kernel(Params p) {
    constexpr int TM = BM / 16, TN = BN / 16;
    using Loader = TileLoader<BM, BN, B_NK, B_F16, VEC, CONV, BQ>;
    constexpr int LDS_A = Loader::LDS_A, LDS_B = Loader::LDS_B;
    __shared__ __align__(16) float As[2][BK * LDS_A];
    __shared__ __align__(16) float Bs[2][BK * LDS_B];

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int ty = (warp >> 1) * 4 + (lane >> 3); /* 0..15 */
    const int tx = (warp & 1) * 8 + (lane & 7);   /* 0..15 */
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    /* K tiles: tile 0 is the residue [0, kres), tile j >= 1 is
    ** [kres + (j-1)*BK, kres + j*BK). Split z takes tiles [t0, t1). */
    const int ktiles = (p.K + BK - 1) / BK;
    const int kres = p.K - (ktiles - 1) * BK;
    const int zsplit = p.batch > 1 ? 0 : blockIdx.z;   /* grid.z: a K slice ... */
    const long long zb = p.batch > 1 ? blockIdx.z : 0; /* ... or one GEMM of a batch */
    const int t0 = zsplit * p.tiles_per_split;
    const int t1 = min(t0 + p.tiles_per_split, ktiles);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

    if (t0 < t1) {
        /* Tiles t0+1 .. t1-1 are prefetched one step ahead; the main loop
        ** takes two per trip so both shared-memory buffers are compile-time
        ** (no index arithmetic between the FFMAs). With an odd count one
        ** step runs before the loop, and the prologue fills buffer 1 so the
        ** loop always starts on buffer 0. */
        const int npref = t1 - 1 - t0;
        const int first = npref & 1;
        Loader ld;
        ld.init(p, tid, bm, bn, t0 == 0 ? 0 : kres + (t0 - 1) * BK, zb);
        ld.template load<true>(p, t0 == 0 ? kres : BK);
        ld.advance_first(t0 == 0 ? kres : BK);
        ld.store(As[first], Bs[first]);
        __syncthreads();

        float a[2][TM], b[2][TN];
        const float *as = &As[0][ty * 4], *bs = &Bs[0][tx * 4];
        auto frag = [&](int slot, int buf, int k) {
#pragma unroll
            for (int h = 0; h < TM / 4; h++) {
                float4 v = *(const float4 *)(as + buf * BK * LDS_A + k * LDS_A + h * (BM / 2));
                a[slot][h * 4 + 0] = v.x; a[slot][h * 4 + 1] = v.y;
                a[slot][h * 4 + 2] = v.z; a[slot][h * 4 + 3] = v.w;
            }
#pragma unroll
            for (int h = 0; h < TN / 4; h++) {
                float4 v = *(const float4 *)(bs + buf * BK * LDS_B + k * LDS_B + h * (BN / 2));
                b[slot][h * 4 + 0] = v.x; b[slot][h * 4 + 1] = v.y;
                b[slot][h * 4 + 2] = v.z; b[slot][h * 4 + 3] = v.w;
            }
        };
        auto fma_all = [&](int slot) {
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[slot][i], b[slot][j], acc[i][j]);
        };
        /* The 8 k-steps on buffer `buf`; with `pref`, the tile already in
        ** the loader's registers goes to buf^1 before the last step. buf^1
        ** was last read in the previous step, before the barrier that ended
        ** it, so it is free to overwrite: one barrier per tile. */
        auto ksteps = [&](int buf, bool pref) {
#pragma unroll
            for (int k = 0; k < BK; k++) {
                if (k < BK - 1) {
                    frag((k + 1) & 1, buf, k + 1);
                } else if (pref) {
                    ld.store(As[buf ^ 1], Bs[buf ^ 1]);
                    __syncthreads();
                    frag(0, buf ^ 1, 0);
                }
                fma_all(k & 1);
            }
        };

        if (first) {
            frag(0, 1, 0);
            ld.template load<false>(p, BK);
            ld.advance(1);
            ksteps(1, true);
        } else {
            frag(0, 0, 0);
        }
        for (int r = npref - first; r > 0; r -= 2) {
            ld.template load<false, 0>(p, BK);
            ksteps(0, true);
            ld.template load<false, 1>(p, BK);
            ld.advance(2);
            ksteps(1, true);
        }
        ksteps(0, false); /* the last tile: nothing left to prefetch */
    }

    /* Epilogue straight from registers: each thread writes TM rows x TN/4 float4. */
    float *out = p.ws ? p.ws + (long long)zsplit * p.M * p.N : p.c + zb * p.sc;
    const long long ldo = p.ws ? p.N : p.ldc;
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int m = bm + (i / 4) * (BM / 2) + ty * 4 + (i % 4);
        if (m >= p.M) continue;
        float *orow = out + (long long)m * ldo;
#pragma unroll
        for (int h = 0; h < TN / 4; h++) {
            int n = bn + h * (BN / 2) + tx * 4;
            if (n >= p.N) continue;
            float v[4];
#pragma unroll
            for (int j = 0; j < 4; j++) v[j] = acc[i][h * 4 + j];
            if (p.ws) { /* raw partial sums; the reduce kernel adds the epilogue */
                if (p.vec_out) *(float4 *)(orow + n) = make_float4(v[0], v[1], v[2], v[3]);
                else
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (n + j < p.N) orow[n + j] = v[j];
            } else if (p.vec_out) {
                /* N % 4 == 0: the run is wholly inside */
                if (BQ && BQ < 10)
#pragma unroll
                    for (int j = 0; j < 4; j++) v[j] *= scale_at(p, n + j);
                if (p.bias) {
                    float4 bb = *(const float4 *)(p.bias + n);
                    v[0] += bb.x; v[1] += bb.y; v[2] += bb.z; v[3] += bb.w;
                }
                if (p.res) {
                    float4 rr = *(const float4 *)(p.res + (long long)m * p.ldr + n);
                    v[0] += rr.x; v[1] += rr.y; v[2] += rr.z; v[3] += rr.w;
                }
#pragma unroll
                for (int j = 0; j < 4; j++) v[j] = act_apply(v[j], p.act);
                *(float4 *)(orow + n) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (n + j < p.N) orow[n + j] = epilogue(p, v[j], m, n + j);
            }
        }
    }
}

/* Split-K: C = epilogue(sum over z of ws[z]) in a fixed order. */
static __global__ void splitk_reduce_kernel(Params p, int splits) {
    long long total = (long long)p.M * p.N, mn = (long long)p.M * p.N;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int z = 0; z < splits; z++) s += p.ws[z * mn + i];
        int m = (int)(i / p.N), n = (int)(i % p.N);
        p.c[(long long)m * p.ldc + n] = epilogue(p, s, m, n);
    }
}

/* Linear layout, M <= MR <= 8: y[m, n] for two columns n per warp. Each lane
** walks K with stride 32 runs of 4 (VEC) or 1; x rows come from L1/L2. */
constexpr int kSkinnyCols = 2;
template <int MR, bool B_F16, bool VEC>
__global__ void __launch_bounds__(kThreads, 2) sgemm_skinny_kernel(Params p) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n0 = (blockIdx.x * (kThreads / 32) + warp) * kSkinnyCols;
    if (n0 >= p.N) return; /* whole warp leaves together */
    constexpr int ESZ = B_F16 ? 2 : 4;
    const char *wr[kSkinnyCols];
    const float *xr[MR];
#pragma unroll
    for (int c = 0; c < kSkinnyCols; c++)
        wr[c] = (const char *)p.b + (long long)min(n0 + c, p.N - 1) * p.ldb * ESZ;
#pragma unroll
    for (int r = 0; r < MR; r++) xr[r] = p.a + (long long)min(r, p.M - 1) * p.lda;

    float acc[MR][kSkinnyCols];
#pragma unroll
    for (int r = 0; r < MR; r++)
#pragma unroll
        for (int c = 0; c < kSkinnyCols; c++) acc[r][c] = 0.0f;

    constexpr int E = VEC ? 4 : 1;
    /* k in 64 bits: k * ESZ passes 2^31 for K > 2^29 (f32), which the rule
    ** accepts (K < 2^31), and k + 32E would wrap near INT_MAX */
#pragma unroll 2
    for (long long k = lane * E; k < p.K; k += 32 * E) {
        float w[kSkinnyCols][E];
#pragma unroll
        for (int c = 0; c < kSkinnyCols; c++) load_run<E, B_F16, VEC>(w[c], wr[c] + k * ESZ);
#pragma unroll
        for (int r = 0; r < MR; r++) {
            float x[E];
            load_run<E, false, VEC>(x, xr[r] + k);
#pragma unroll
            for (int c = 0; c < kSkinnyCols; c++)
#pragma unroll
                for (int e = 0; e < E; e++) acc[r][c] = fmaf(x[e], w[c][e], acc[r][c]);
        }
    }
#pragma unroll
    for (int r = 0; r < MR; r++)
#pragma unroll
        for (int c = 0; c < kSkinnyCols; c++)
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                acc[r][c] += __shfl_xor_sync(0xffffffffu, acc[r][c], o);
    /* lane r*2+c writes (r, c): spreads the stores over lanes */
#pragma unroll
    for (int r = 0; r < MR; r++)
#pragma unroll
        for (int c = 0; c < kSkinnyCols; c++)
            if (lane == r * kSkinnyCols + c && r < p.M && n0 + c < p.N)
                p.c[(long long)r * p.ldc + n0 + c] = epilogue(p, acc[r][c], r, n0 + c);
}

/* ---------------------------------------------------------------- host ---- */

static bool aligned(const void *p, int bytes) { return ((uintptr_t)p % bytes) == 0; }

static bool quant_ok(const m40k_sgemm_args &a) {
    return (a.b_q == 8 || a.b_q == 4) && a.b_nk && !a.conv && a.batch <= 1 && a.K % 8 == 0 &&
           a.K >= 8 && a.lda % 4 == 0 && aligned(a.a, 16) && aligned(a.b, 4) && a.b_scale &&
           (a.b_group == 0 || (a.b_group >= 8 && (a.b_group & (a.b_group - 1)) == 0)) &&
           a.ldb >= (a.b_q == 8 ? (int64_t)a.K : (int64_t)a.K / 2) && a.ldb % 4 == 0;
}

static bool can_vec(const m40k_sgemm_args &a) {
    if (a.b_q) return quant_ok(a);
    int bsz = a.b_f16 ? 8 : 16; /* 4 elements */
    bool ok = a.K % 4 == 0 && a.lda % 4 == 0 && a.ldb % 4 == 0 && aligned(a.a, 16) &&
              aligned(a.b, bsz);
    if (!a.b_nk) ok = ok && a.N % 4 == 0;
    if (a.batch > 1) ok = ok && a.stride_a % 4 == 0 && a.stride_b % 4 == 0;
    return ok;
}

static bool can_vec_out(const m40k_sgemm_args &a) {
    return a.N % 4 == 0 && a.ldc % 4 == 0 && aligned(a.c, 16) &&
           (!a.bias || aligned(a.bias, 16)) &&
           (!a.res || (a.ldr % 4 == 0 && aligned(a.res, 16))) &&
           (a.batch <= 1 || a.stride_c % 4 == 0);
}

static long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

/* Element-by-element loads (VEC = false) exist only for the 64x64 tile:
** they need more registers, and the 128x128 tile has none to spare. */
template <int BM, int BN, bool NK, bool F16>
static void launch_tile_v(cudaStream_t s, const Params &p, bool vec, dim3 g) {
    if (BM == 64 || !vec) {
        if (vec) sgemm_tile_kernel<64, 64, NK, F16, true><<<g, kThreads, 0, s>>>(p);
        else sgemm_tile_kernel<64, 64, NK, F16, false><<<g, kThreads, 0, s>>>(p);
    } else {
        sgemm_tile_kernel<BM, BN, NK, F16, true><<<g, kThreads, 0, s>>>(p);
    }
}

template <int BM, int BN>
static void launch_tile(cudaStream_t s, const Params &p, const m40k_sgemm_args &a, bool vec,
                        int splits) {
    dim3 g((unsigned)cdiv(a.N, BN), (unsigned)cdiv(a.M, BM), (unsigned)splits);
    if (a.b_q) { /* quant_ok: B_NK, VEC */
        const int bq = a.b_q + (a.b_group ? 10 : 0);
        if (bq == 8) sgemm_tile_kernel<BM, BN, true, false, true, false, 8><<<g, kThreads, 0, s>>>(p);
        else if (bq == 4) sgemm_tile_kernel<BM, BN, true, false, true, false, 4><<<g, kThreads, 0, s>>>(p);
        else if (bq == 18) sgemm_tile_kernel<BM, BN, true, false, true, false, 18><<<g, kThreads, 0, s>>>(p);
        else sgemm_tile_kernel<BM, BN, true, false, true, false, 14><<<g, kThreads, 0, s>>>(p);
    } else if (a.b_nk) {
        if (a.b_f16) launch_tile_v<BM, BN, true, true>(s, p, vec, g);
        else launch_tile_v<BM, BN, true, false>(s, p, vec, g);
    } else {
        if (a.b_f16) launch_tile_v<BM, BN, false, true>(s, p, vec, g);
        else launch_tile_v<BM, BN, false, false>(s, p, vec, g);
    }
}

/* Implicit-GEMM convolution: Linear layout, F32 B, 16-byte loads only. */
static void launch_conv_tile(cudaStream_t s, const Params &p, int variant, int splits) {
    if (variant == M40K_SGEMM_TILE128) {
        dim3 g((unsigned)cdiv(p.N, 128), (unsigned)cdiv(p.M, 128), (unsigned)splits);
        sgemm_tile_kernel<128, 128, true, false, true, true><<<g, kThreads, 0, s>>>(p);
    } else {
        dim3 g((unsigned)cdiv(p.N, 64), (unsigned)cdiv(p.M, 64), (unsigned)splits);
        sgemm_tile_kernel<64, 64, true, false, true, true><<<g, kThreads, 0, s>>>(p);
    }
}

template <int MR>
static void launch_skinny_mr(cudaStream_t s, const Params &p, const m40k_sgemm_args &a,
                             bool vec) {
    dim3 g((unsigned)cdiv(a.N, (kThreads / 32) * kSkinnyCols));
    if (a.b_f16) {
        if (vec) sgemm_skinny_kernel<MR, true, true><<<g, kThreads, 0, s>>>(p);
        else sgemm_skinny_kernel<MR, true, false><<<g, kThreads, 0, s>>>(p);
    } else {
        if (vec) sgemm_skinny_kernel<MR, false, true><<<g, kThreads, 0, s>>>(p);
        else sgemm_skinny_kernel<MR, false, false><<<g, kThreads, 0, s>>>(p);
    }
}

} // namespace

extern "C" void m40k_sgemm_plan(const m40k_sgemm_args *a, int sm_count, size_t ws_bytes,
                                int *variant, int *splits) {
    if (sm_count < 1) sm_count = 1;
    int v, s = 1;
    if (a->b_nk && a->M <= 8 && !a->conv && a->batch <= 1 && !a->b_q) {
        v = M40K_SGEMM_SKINNY;
    } else {
        /* The 128x128 tile does twice the FMAs per shared-memory load of
        ** the 64x64 one (measured ~1.8x faster per FLOP on the H200), so it
        ** is preferred whenever the matrix is wider than 64 both ways; too
        ** few tiles are made up with split-K rather than smaller tiles. */
        v = (a->M > 64 && a->N > 64 && can_vec(*a)) ? M40K_SGEMM_TILE128 : M40K_SGEMM_TILE64;
        int bm = v == M40K_SGEMM_TILE128 ? 128 : 64;
        long long tiles = cdiv(a->M, bm) * cdiv(a->N, bm) * (a->batch > 1 ? a->batch : 1);
        /* Aim at two blocks per SM (both tiles fit twice on an SM of sm_52
        ** or sm_90); split only when the grid is well short of that, as the
        ** partial sums cost a second pass over M x N. */
        long long target = 2LL * sm_count;
        long long ktiles = cdiv(a->K, BK);
        if (tiles * 4 < target * 3 && a->batch <= 1) {
            long long want = cdiv(target, tiles);
            long long most = ktiles / 32; /* each slice keeps >= 256 of K */
            if (want > most) want = most;
            if (want > 16) want = 16;
            if (want >= 2) {
                long long tps = cdiv(ktiles, want);
                s = (int)cdiv(ktiles, tps);
                size_t need = (size_t)s * a->M * a->N * sizeof(float);
                if (need > ws_bytes) s = 1;
            }
        }
    }
    *variant = v;
    *splits = s;
}

extern "C" size_t m40k_sgemm_workspace_size(const m40k_sgemm_args *a, int sm_count) {
    int v, s;
    m40k_sgemm_plan(a, sm_count, (size_t)-1, &v, &s);
    return s > 1 ? (size_t)s * a->M * a->N * sizeof(float) : 0;
}

extern "C" int m40k_sgemm_run(void *stream, const m40k_sgemm_args *a, int variant, int splits,
                              void *ws, size_t ws_bytes) {
    cudaStream_t s = (cudaStream_t)stream;
    if (a->M <= 0 || a->N <= 0) return 0;
    if (a->M > M40K_SGEMM_MAX_ROWS) return (int)cudaErrorInvalidValue; /* grid.y */
    Params p;
    p.M = a->M; p.N = a->N; p.K = a->K < 0 ? 0 : a->K;
    p.a = a->a; p.b = a->b; p.c = a->c; p.bias = a->bias; p.res = a->res;
    p.lda = a->lda; p.ldb = a->ldb; p.ldc = a->ldc; p.ldr = a->ldr;
    p.act = a->act;
    p.vec_out = can_vec_out(*a);
    p.ws = nullptr;
    p.cv = a->conv ? *a->conv : m40k_conv_a{};
    p.batch = a->batch > 1 ? a->batch : 1;
    p.sa = a->stride_a; p.sb = a->stride_b; p.sc = a->stride_c;
    p.bscale = nullptr;
    p.bscale_f16 = p.bgroup = p.bgroups = p.bgroup_log2 = 0;
    if (a->b_q) {
        if (!quant_ok(*a)) return (int)cudaErrorInvalidValue;
        p.bscale = a->b_scale;
        p.bscale_f16 = a->b_scale_f16;
        p.bgroup = a->b_group;
        p.bgroups = a->b_group ? (int)cdiv(a->K, a->b_group) : 0;
        while (a->b_group >> (p.bgroup_log2 + 1)) p.bgroup_log2++;
        if (variant == M40K_SGEMM_SKINNY) variant = M40K_SGEMM_TILE64;
    }
    if (p.batch > 1) {
        if (a->conv || a->res || p.batch > 65535) return (int)cudaErrorInvalidValue;
        if (variant == M40K_SGEMM_SKINNY) variant = M40K_SGEMM_TILE64;
        splits = 1;
    }
    bool vec = can_vec(*a);
    if (a->conv) {
        const m40k_conv_a &v = *a->conv;
        if (!vec || !a->b_nk || a->b_f16 || v.C % 4 || v.C < 4 ||
            (long long)v.H * v.W * v.C >= (1LL << 31))
            return (int)cudaErrorInvalidValue;
        if (variant == M40K_SGEMM_SKINNY) variant = M40K_SGEMM_TILE64;
    }
    long long ktiles = cdiv(p.K, BK);
    if (variant == M40K_SGEMM_SKINNY && (!a->b_nk || a->M > 8)) variant = M40K_SGEMM_TILE64;
    if (variant == M40K_SGEMM_SKINNY) {
        if (a->M == 1) launch_skinny_mr<1>(s, p, *a, vec);
        else if (a->M == 2) launch_skinny_mr<2>(s, p, *a, vec);
        else if (a->M <= 4) launch_skinny_mr<4>(s, p, *a, vec);
        else launch_skinny_mr<8>(s, p, *a, vec);
        return (int)cudaGetLastError();
    }
    if (splits < 1 || ktiles < 2) splits = 1;
    if (splits > ktiles) splits = (int)ktiles;
    p.tiles_per_split = (int)(ktiles > 0 ? cdiv(ktiles, splits) : 1);
    if (splits > 1) {
        splits = (int)cdiv(ktiles, p.tiles_per_split);
        size_t need = (size_t)splits * a->M * a->N * sizeof(float);
        if (!ws || ws_bytes < need || !aligned(ws, 16)) {
            splits = 1;
            p.tiles_per_split = (int)(ktiles > 0 ? ktiles : 1);
        } else {
            p.ws = (float *)ws;
            p.vec_out = a->N % 4 == 0; /* ws rows are N long and 16-byte aligned */
        }
    }
    if (!vec) variant = M40K_SGEMM_TILE64;
    int gz = p.batch > 1 ? p.batch : splits; /* grid.z */
    if (a->conv) launch_conv_tile(s, p, variant, gz);
    else if (variant == M40K_SGEMM_TILE128) launch_tile<128, 128>(s, p, *a, vec, gz);
    else launch_tile<64, 64>(s, p, *a, vec, gz);
    int e = (int)cudaGetLastError();
    if (e || splits == 1) return e;
    long long total = (long long)a->M * a->N;
    long long blocks = cdiv(total, kThreads);
    if (blocks > 65535LL * 8) blocks = 65535LL * 8;
    splitk_reduce_kernel<<<(unsigned)blocks, kThreads, 0, s>>>(p, splits);
    return (int)cudaGetLastError();
}

extern "C" int m40k_sgemm_quant_ok(const m40k_sgemm_args *a) { return quant_ok(*a) ? 1 : 0; }

extern "C" int m40k_sgemm(void *stream, const m40k_sgemm_args *a, int sm_count, void *ws,
                          size_t ws_bytes) {
    int v, sp;
    m40k_sgemm_plan(a, sm_count, ws ? ws_bytes : 0, &v, &sp);
    return m40k_sgemm_run(stream, a, v, sp, ws, ws_bytes);
}
