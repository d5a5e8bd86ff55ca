/* Weight-only quantized GEMV for decode: y[M,N] = x[M,K]·Wᵀ + bias, M <= 8.
**
** Layout: W [N,K] row-major in the formats of include/m40/quant.h (Q4: two
** per byte, high nibble = even column; Q8; F16), scales [N] or [N,K/group].
** x [M,K] and y [M,N] F32 row-major.
**
** The kernels the library runs (m40k_quant_gemv_variant; which one for which
** shape: kernels/quant_dispatch.cu). Their code is in the headers beside
** this file (quant_gemv_common.cuh, _v2.cuh, _v3.cuh); this file holds the
** instances the defaults and their fallbacks use, and no others: the other
** rows-per-warp / chunks-in-flight settings, and the versions measured on the
** way, are numbered in bench/quant/gemv_versions.cu and checked there.
** Two kernels, numbered as in bench/NOTES.md ("Quantized GEMV/GEMM"):
**
** v2 (gemv_v2_kernel; fp16 weights, int4 at batch 1-2 with large K, int4
** at batch 1 with N <= 8192 (its RMSNorm fused on each chunk's staging), the
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
** (0x4B0000uu = 2^23 + u) and one FADD removes 2^23 + offset; or, at
** batch 1 with x staged whole (the default there) or, for int4, in passes,
** v3's exponent-zero decode with a power of two per lane vector of x (EZ,
** quant_gemv_v2.cuh).
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
** Resources (sm_52, CUDA 11.8 ptxas -v, scripts/quant_ptxas.py; docs/quant.md):
** 323 kernel instances (2026-12-05: 132 with row scales or fp16, 82 + 82
** int4/int8 with f32 / f16 group scales, 23 int8 v3 with the group scales'
** dtype at run time, 3 generic, the split-K sum; 241 before the dtype was a
** template argument, 348 before the settings the defaults never pick moved
** to bench/quant/gemv_versions.cu; 6 more since 2026-12-07: int4's ring in passes),
** all __launch_bounds__(256, 1) but v2's 16-warp R = 1 form:
** v3 and split-K at batch 1-2 76-253 registers (batch 1, R = 2, row
** scales: int4 93 / int8 92 at D = 2, 109 / 111 at D = 4), split-K at
** batch 3-8 124-255 (R = 4) and 203-255 (R = 8); v2 int8/int4 52-252, fp16
** 32-123; generic 40-48; the split-K sum 40. No spills; v3
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

#include "quant_gemv_v2.cuh"
#include "quant_gemv_v3.cuh"

namespace {

/* The instances of one format and batch B. Rows per warp: 2 at batch 1-2
** and 4 above (v2, split-K), 8 for split-K with row scales at batch >= 3;
** v3 at batch 1-2 with R = 2 or 4, D = 2 or 4, in whole mode (segmented
** only for int8 at batch 1, R = 2: the defaults' int8 path without
** scratch); fp16 runs v2 only, also at R = 1 (N too small for 2 blocks per
** SM at R = 2). */
template <int WT, int B>
cudaError_t launch_variant(cudaStream_t s, const m40k_qlinear_args &a, const m40k_qgemv_variant &v,
                           int sm_count) {
    constexpr int RB = B >= 3 ? 4 : 2;
    /* the batch-1 v2 forms (kernels/quant.h: depth 1 or 4, 2 with ez whole;
    ** ks 1, 2 or 4 on V2 whole, depth 1; ez chunked at depth 1, whole at 1, 2, 4;
    ** in passes (D 2) at depth 1, int4 also 4, ez or not; db as quant.h lists) */
    const bool v2b1 = v.kernel == M40K_QGEMV_V2 && B == 1 &&
                      (v.R == 0 || v.R == 2 || (v.R == 1 && v.ez && v.D == 1 && v.depth <= 1 && WT != M40_DTYPE_F16));
    if (v.depth > 1 && (!v2b1 || (v.depth != 4 && !(v.depth == 2 && v.ez && v.D == 1)))) return cudaErrorInvalidValue;
    if (v.ks > 1 && ((v.ks != 2 && v.ks != 4) || !v2b1 || v.D != 1 || v.depth > 1)) return cudaErrorInvalidValue;
    if (v.db && (v.db != 1 || !v2b1 || v.D != 2 || WT == M40_DTYPE_F16)) return cudaErrorInvalidValue; /* passes only */
    const bool deep = v.depth == 4;
    if (v.ez && (B != 1 || WT == M40_DTYPE_F16 || !v2b1 || (v.depth > 1 && v.D != 1 && !(v.D == 2 && deep)) ||
                 v.ks > 1))
        return cudaErrorInvalidValue;
    if constexpr (B == 1 && WT != M40_DTYPE_F16) { /* the norm fused (m40k_quant_gemv_norm_fused) */
        if (v.kernel == M40K_QGEMV_V2 && v.D == 2) { /* x staged in passes (any K): R 2, depth 1 (4: int4), no norm */
            /* depth: 1, or 4 (2 was refused above) */
            if (!(v.R == 0 || v.R == 2) || v.ks > 1 || a.nw) return cudaErrorInvalidValue;
            /* x double-buffered, one barrier a pass (db 1; the chooser's rule,
            ** m40k_quant_gemv_v2_pass_db): int4 with EZ, the ring or one
            ** chunk ahead, and int8 without EZ one chunk ahead carry it. Not
            ** int8 with EZ (pass knob 3): its two buffers and xe pass 48 KB */
            if (deep) { /* the ring: int4 only (int8 2% slower a token, H100) */
                if constexpr (WT != M40_DTYPE_Q4) return cudaErrorInvalidValue;
                else {
                    if (v.db)
                        return v.ez ? launch_v2<WT, 1, 2, false, true, 4, 1, true, kWarps, true, true>(s, a)
                                    : cudaErrorInvalidValue;
                    return v.ez ? launch_v2<WT, 1, 2, false, true, 4, 1, true, kWarps, true>(s, a)
                                : launch_v2<WT, 1, 2, false, true, 4, 1, false, kWarps, true>(s, a);
                }
            }
            constexpr bool EZD = WT == M40_DTYPE_Q4; /* the decode each format runs in passes */
            if (v.db)
                return v.ez == EZD ? launch_v2<WT, 1, 2, false, true, 1, 1, EZD, kWarps, true, true>(s, a)
                                   : cudaErrorInvalidValue;
            return v.ez ? launch_v2<WT, 1, 2, false, true, 1, 1, true, kWarps, true>(s, a)
                        : launch_v2<WT, 1, 2, false, true, 1, 1, false, kWarps, true>(s, a);
        }
        if (v.ez) { /* the exponent-zero decode, x staged whole (D = 1) or a chunk at a time */
            if (v.R == 1) /* R = 1 in 16-warp blocks */
                return a.nw ? launch_v2<WT, 1, 1, true, true, 1, 1, true, 16>(s, a)
                            : launch_v2<WT, 1, 1, false, true, 1, 1, true, 16>(s, a);
            if (v.D == 1 && v.depth == 4)
                return a.nw ? launch_v2<WT, 1, 2, true, true, 4, 1, true>(s, a)
                            : launch_v2<WT, 1, 2, false, true, 4, 1, true>(s, a);
            if (v.D == 1 && v.depth == 2)
                return a.nw ? launch_v2<WT, 1, 2, true, true, 2, 1, true>(s, a)
                            : launch_v2<WT, 1, 2, false, true, 2, 1, true>(s, a);
            if (v.D == 1)
                return a.nw ? launch_v2<WT, 1, 2, true, true, 1, 1, true>(s, a)
                            : launch_v2<WT, 1, 2, false, true, 1, 1, true>(s, a);
            return a.nw ? launch_v2<WT, 1, 2, true, false, 1, 1, true>(s, a)
                        : launch_v2<WT, 1, 2, false, false, 1, 1, true>(s, a);
        }
        if (a.nw && v.kernel == M40K_QGEMV_V3)
            return v.R == 4 ? launch_v3_norm<WT, 4>(s, a, sm_count, v.blocks_per_sm)
                            : launch_v3_norm<WT, 2>(s, a, sm_count, v.blocks_per_sm);
        if (v.kernel == M40K_QGEMV_V2 && v.D == 1 && (v.R == 0 || v.R == 2)) { /* x staged whole */
            static_assert(kV2WholeK == M40K_QGEMV_V2_WHOLE_K, "quant.h and v2 disagree");
            if (deep)
                return a.nw ? launch_v2<WT, 1, 2, true, true, 4>(s, a) : launch_v2<WT, 1, 2, false, true, 4>(s, a);
            if (v.ks == 2)
                return a.nw ? launch_v2<WT, 1, 2, true, true, 1, 2>(s, a) : launch_v2<WT, 1, 2, false, true, 1, 2>(s, a);
            if (v.ks == 4)
                return a.nw ? launch_v2<WT, 1, 2, true, true, 1, 4>(s, a) : launch_v2<WT, 1, 2, false, true, 1, 4>(s, a);
            return a.nw ? launch_v2<WT, 1, 2, true, true>(s, a) : launch_v2<WT, 1, 2, false, true>(s, a);
        }
        if (v.kernel == M40K_QGEMV_V2 && deep)
            return a.nw ? launch_v2<WT, 1, 2, true, false, 4>(s, a) : launch_v2<WT, 1, 2, false, false, 4>(s, a);
        if (a.nw && v.kernel == M40K_QGEMV_V2) return launch_v2<WT, 1, 2, true>(s, a);
    }
    if constexpr (B == 1 && WT == M40_DTYPE_F16) /* fp16: the ring too (no norm) */
        if (deep && v.D == 0) return launch_v2<WT, 1, 2, false, false, 4>(s, a);
    if (v.kernel == M40K_QGEMV_V2 && v.D >= 1) return cudaErrorInvalidValue; /* B 1, int8/int4 only */
    if (v.kernel == M40K_QGEMV_V2) {
        if (v.R == 0 || v.R == RB) return launch_v2<WT, B, RB>(s, a);
        if constexpr (WT == M40_DTYPE_F16 && B <= 2)
            if (v.R == 1) return launch_v2<WT, B, 1>(s, a);
        return cudaErrorInvalidValue;
    }
    if constexpr (WT != M40_DTYPE_F16) {
        const int bps = v.blocks_per_sm;
        if (v.kernel == M40K_QGEMV_SPLIT) {
            if constexpr (B >= 3) /* split-K at R = 8, one chunk in flight, row scales */
                if (v.R == 8 && !a.group) return launch_split<WT, B, 8>(s, a, sm_count, bps);
            return launch_split<WT, B, RB>(s, a, sm_count, bps);
        }
        if constexpr (B <= 2) {
            if (v.kernel == M40K_QGEMV_V3 && (v.D == 0 || v.D == 2 || v.D == 4)) {
                const int deep = v.D == 4;
                if (v.R == 4) return launch_v3<WT, B, 4, false>(s, a, sm_count, bps, deep);
                if (v.R == 0 || v.R == 2)
                    return launch_v3<WT, B, 2, WT == M40_DTYPE_Q8 && B == 1>(s, a, sm_count, bps, deep);
            }
        }
    }
    return cudaErrorInvalidValue;
}

template <int WT>
cudaError_t launch_b(cudaStream_t s, const m40k_qlinear_args &a, const m40k_qgemv_variant &v, int sm_count) {
    switch (a.M) {
    case 1: return launch_variant<WT, 1>(s, a, v, sm_count);
    case 2: return launch_variant<WT, 2>(s, a, v, sm_count);
    case 3: return launch_variant<WT, 3>(s, a, v, sm_count);
    case 4: return launch_variant<WT, 4>(s, a, v, sm_count);
    case 5: return launch_variant<WT, 5>(s, a, v, sm_count);
    case 6: return launch_variant<WT, 6>(s, a, v, sm_count);
    case 7: return launch_variant<WT, 7>(s, a, v, sm_count);
    default: return launch_variant<WT, 8>(s, a, v, sm_count);
    }
}

int vec_cols(int wtype) { return wtype == M40_DTYPE_Q4 ? 32 : wtype == M40_DTYPE_Q8 ? 16 : 8; }

} // namespace

extern "C" int m40k_quant_gemv_whole(int wtype, int M, int K) {
    if (wtype == M40_DTYPE_Q4) return v3_whole<M40_DTYPE_Q4>(M, K);
    if (wtype == M40_DTYPE_Q8) return v3_whole<M40_DTYPE_Q8>(M, K);
    return 0;
}

extern "C" int m40k_quant_gemv_norm_fused(const m40k_qlinear_args *a, const m40k_qgemv_variant *v) {
    if (!a->nw || a->M != 1 || a->K <= 0 || a->N <= 0) return 0;
    const int VC = vec_cols(a->wtype);
    if (a->K % VC != 0 || ((uintptr_t)a->w & 15) != 0 || ((uintptr_t)a->x & 15) != 0 ||
        ((uintptr_t)a->nw & (a->nw_f16 ? 7 : 15)) != 0)
        return 0;
    /* fp16 (v2) takes the norm kernel: the fused v2 needed 56 registers to
    ** its 48, one block an SM fewer for a kernel whose bandwidth is its
    ** occupancy (H200, session 8: ChatGLM2-6B fp16 decode 6% slower) */
    if (a->wtype == M40_DTYPE_F16) return 0;
    /* v2 at R = 2 (int4's small shapes): the norm on each chunk's staging */
    if (v->kernel == M40K_QGEMV_V2) /* x in passes (D 2): no norm */
        return v->D != 2 && (v->R == 0 || v->R == 2 || (v->R == 1 && v->ez && v->D == 1));
    if (v->kernel != M40K_QGEMV_V3 || (v->R != 0 && v->R != 2 && v->R != 4)) return 0;
    const bool seg = a->wtype == M40_DTYPE_Q4
                         ? (v->R == 4 ? v3_plan<M40_DTYPE_Q4, 1, 4, 4>(a->K) : v3_plan<M40_DTYPE_Q4, 1, 2, 4>(a->K)).seg
                         : (v->R == 4 ? v3_plan<M40_DTYPE_Q8, 1, 4, 4>(a->K) : v3_plan<M40_DTYPE_Q8, 1, 2, 4>(a->K)).seg;
    return !seg;
}

extern "C" int m40k_quant_gemv_glu_ok(const m40k_qlinear_args *a, const m40k_qgemv_variant *v) {
    if (a->glu <= 0 || a->res || a->M < 1 || a->M > 8 || a->N != 2 * (int64_t)a->glu || a->K <= 0 ||
        a->K % vec_cols(a->wtype) != 0 || ((uintptr_t)a->w & 15) != 0 || ((uintptr_t)a->x & 15) != 0)
        return 0;
    int R; /* launch_variant's rows a warp */
    if (v->kernel == M40K_QGEMV_V2) R = v->R ? v->R : a->M >= 3 ? 4 : 2;
    else if (v->kernel == M40K_QGEMV_V3 && a->M <= 2) R = v->R == 4 ? 4 : 2;
    else return 0;
    const int V = R * a->M; /* warp_store's values: one butterfly, gate and up a split apart */
    return R >= 2 && V <= 32 && (V & (V - 1)) == 0 && a->glu % (R / 2) == 0;
}

extern "C" int m40k_quant_gemv_variant(void *stream, const m40k_qlinear_args *a, int sm_count,
                                       const m40k_qgemv_variant *v) {
    if (a->M <= 0 || a->N <= 0) return 0;
    if (a->M > 8) return (int)cudaErrorInvalidValue;
    if (a->nw && !m40k_quant_gemv_norm_fused(a, v)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    int VC = vec_cols(a->wtype);
    bool fast = v->kernel != M40K_QGEMV_GENERIC && a->K > 0 && a->K % VC == 0 &&
                ((uintptr_t)a->w & 15) == 0 && ((uintptr_t)a->x & 15) == 0;
    if (!fast) { /* also K == 0: y = bias (or 0) */
        if (a->glu) return (int)cudaErrorInvalidValue;
        unsigned g = (unsigned)((a->N + kWarps - 1) / kWarps);
        if (a->wtype == M40_DTYPE_Q4) gemv_generic_kernel<M40_DTYPE_Q4><<<g, kThreads, 0, s>>>(*a);
        else if (a->wtype == M40_DTYPE_Q8) gemv_generic_kernel<M40_DTYPE_Q8><<<g, kThreads, 0, s>>>(*a);
        else if (a->wtype == M40_DTYPE_F16) gemv_generic_kernel<M40_DTYPE_F16><<<g, kThreads, 0, s>>>(*a);
        else return (int)cudaErrorInvalidValue;
        return (int)cudaGetLastError();
    }
    m40k_qgemv_variant w = *v;
    if (w.kernel == M40K_QGEMV_SPLIT && a->wtype != M40_DTYPE_F16) { /* no scratch: v2 */
        const size_t need = m40k_quant_gemv_workspace(a);
        if (need && (!a->ws || a->ws_bytes < need))
            w.kernel = M40K_QGEMV_V2, w.R = 0, w.D = 0, w.depth = 0, w.ks = 0, w.ez = 0, w.db = 0;
    }
    if (a->glu && !m40k_quant_gemv_glu_ok(a, &w)) return (int)cudaErrorInvalidValue;
    switch (a->wtype) {
    case M40_DTYPE_Q4: return (int)launch_b<M40_DTYPE_Q4>(s, *a, w, sm_count);
    case M40_DTYPE_Q8: return (int)launch_b<M40_DTYPE_Q8>(s, *a, w, sm_count);
    case M40_DTYPE_F16: return (int)launch_b<M40_DTYPE_F16>(s, *a, w, sm_count);
    default: return (int)cudaErrorInvalidValue;
    }
}
