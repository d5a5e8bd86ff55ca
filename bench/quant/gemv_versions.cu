/* The quantized GEMV's versions, llm.c dev/-style: every kernel and knob
** that was measured on the way to the library's choice (bench/NOTES.md,
** "Quantized GEMV/GEMM"), built from the same kernel code as the library
** (kernels/quant_gemv_*.cuh), with every rows-per-warp setting and batch.
** The library itself (kernels/quant_gemv.cu) carries only the instances its
** defaults and fallbacks use. m40-quant-versions (gemv_check.c) checks each
** against the CPU reference; m40-bench-quant times them.
**
**   1  generic: one warp per row, element loads (any K, any alignment)
**   2  v2: x[:, chunk] staged behind two barriers per chunk, one 16-byte
**      weight vector per row prefetched one chunk ahead, PRMT/FADD decode
**   3  v3: x staged once per persistent block (whole K; segments of K when
**      it does not fit in 48 KB), 2 chunks in flight per warp (4 at R = 1),
**      "exponent-zero" decode
**   4  v3 with 4 chunks of weights in flight per warp (whole K)
**   7  v3 split-K: K cut into ranges whose x fits in 48 KB, partial sums
**      added in split order by a second kernel
**   9  split-K at R = 8, one chunk in flight: half the shared-memory reads
**      of x per weight (batch >= 3, row scales; else as 7)
**   (5, 6, 8 and 10, v3, v2 and split-K held to fewer registers, were
**   measured and dropped: bench/NOTES.md.)
** Resources: `ptxas -v` of this file in the bench build (every instance;
** the library's subset is in kernels/quant_gemv.cu's header). */
#include "gemv_versions.h"
#include "quant_gemv_v2.cuh"
#include "quant_gemv_v3.cuh"

extern "C" const int m40b_qgemv_versions[M40B_QGEMV_NVERSIONS] = {1, 2, 3, 4, 7, 9};
extern "C" const char *const m40b_qgemv_notes[M40B_QGEMV_NVERSIONS] = {
    "generic: one warp per row, element loads",
    "v2: x staged per chunk behind barriers, one vector per row one chunk ahead",
    "v3: x staged once per block (or in segments), 2 chunks in flight",
    "v3 with 4 chunks in flight (whole K)",
    "v3 split-K: K ranges that fit 48 KB, partials added in order",
    "split-K at R = 8, one chunk in flight (batch >= 3, row scales)",
};

namespace {

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

extern "C" int m40b_quant_gemv_version(void *stream, const m40k_qlinear_args *a, int sm_count, int version,
                                       int rows_per_warp, int blocks_per_sm) {
    if (version == 0) {
        const m40k_qgemv_variant v = m40k_quant_gemv_choose(a, sm_count);
        return m40k_quant_gemv_variant(stream, a, sm_count, &v);
    }
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
    const bool isq = a->wtype != M40_DTYPE_F16;
    const size_t ws_need = m40k_quant_gemv_workspace(a);
    const bool split_ok = isq && (ws_need == 0 || (a->ws && a->ws_bytes >= ws_need));
    if (version >= 7 && !split_ok) version = 2; /* no scratch: v2 */
    int R = rows_per_warp;
    if (R != 1 && R != 2 && R != 4) R = a->M >= 3 ? 4 : 2;
    switch (a->wtype) {
    case M40_DTYPE_Q4: return (int)launch_b<M40_DTYPE_Q4>(s, *a, R, version, sm_count, blocks_per_sm);
    case M40_DTYPE_Q8: return (int)launch_b<M40_DTYPE_Q8>(s, *a, R, version, sm_count, blocks_per_sm);
    case M40_DTYPE_F16: return (int)launch_b<M40_DTYPE_F16>(s, *a, R, version, sm_count, blocks_per_sm);
    default: return (int)cudaErrorInvalidValue;
    }
}
