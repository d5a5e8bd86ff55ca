/* Which quantized GEMV runs for which shape (m40k_quant_gemv_choose), the
** split-K scratch it asks for (m40k_quant_gemv_workspace, the rule of
** kernels/quant_plan.h that the planner shares), and m40k_quant_linear:
** GEMV (kernels/quant_gemv.cu) for M <= 8, GEMM (kernels/quant_gemm.cu)
** above. Host code only: no kernels, so no ptxas resources; the roofline
** and measurements of the kernels it picks are in kernels/quant_gemv.cu and
** docs/quant.md. */
#include "quant.h"
#include "quant_plan.h"

#include <stdint.h>

extern "C" m40k_qgemv_variant m40k_quant_gemv_choose(const m40k_qlinear_args *a, int sm_count) {
    m40k_qgemv_variant v = {M40K_QGEMV_GENERIC, 0, 0, 0};
    const int VC = a->wtype == M40_DTYPE_Q4 ? 32 : a->wtype == M40_DTYPE_Q8 ? 16 : 8;
    if (a->M <= 0 || a->M > 8 || a->N <= 0 || a->K <= 0 || a->K % VC != 0 ||
        ((uintptr_t)a->w & 15) != 0 || ((uintptr_t)a->x & 15) != 0)
        return v; /* the vector loads cannot take it */
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
    ** Split-K needs the scratch in a->ws; without it v2 (int8 at batch 1: v3
    ** in segments of K). fp16: v2, R = 2 at batch 1-2 (1 when that gives
    ** fewer than two blocks per SM), else 4. */
    const bool q4 = a->wtype == M40_DTYPE_Q4, isq = a->wtype != M40_DTYPE_F16;
    if (!isq) {
        v.kernel = M40K_QGEMV_V2;
        v.R = a->M >= 3 ? 4 : 2;
        if (a->M <= 2)
            while (v.R > 1 && (a->N + 8 * v.R - 1) / (8 * v.R) < 2 * sm_count) v.R /= 2;
        return v;
    }
    const bool whole = m40k_quant_gemv_whole(a->wtype, a->M, a->K) != 0;
    const size_t ws_need = m40k_quant_gemv_workspace(a);
    const bool split_ok = ws_need == 0 || (a->ws && a->ws_bytes >= ws_need);
    const size_t per_split = (size_t)a->M * a->N * sizeof(float);
    if (a->M >= 3) {
        v.R = 4;
        if (split_ok && a->N >= 4608 && ws_need <= 4 * per_split) {
            v.kernel = M40K_QGEMV_SPLIT;
            if (!a->group && a->M >= 6 && a->N >= 16384) v.R = 8;
        } else if (split_ok && !q4 && !a->group && a->M == 4 && a->K >= 8192) {
            v.kernel = M40K_QGEMV_SPLIT; /* int8 4096x13696 at batch 4: 30 vs 40 us (v2 R = 4) */
            v.R = 8;
        } else {
            v.kernel = M40K_QGEMV_V2;
        }
    } else if (whole) {
        v.kernel = M40K_QGEMV_V3;
        v.D = 4;
        v.R = a->group || (q4 && a->M == 2) ? 4 : 2;
    } else { /* int4 with group scales at batch 2: split-K (4096x13696: 25.4 vs 32.4 us) */
        v.R = 2;
        v.kernel = (!q4 || (a->group && a->M == 2)) && split_ok ? M40K_QGEMV_SPLIT
                   : !q4 && a->M == 1                          ? M40K_QGEMV_V3
                                                               : M40K_QGEMV_V2;
        if (v.kernel == M40K_QGEMV_V3) v.D = 2; /* x in segments of K */
    }
    return v;
}

extern "C" size_t m40k_quant_gemv_workspace(const m40k_qlinear_args *a) {
    if (a->M <= 0 || a->M > 8 || a->N <= 0 || a->K <= 0 || a->wtype == M40_DTYPE_F16) return 0;
    return m40k_qgemv_split_bytes(a->wtype == M40_DTYPE_Q4, a->M, a->N, a->K, a->group != 0);
}

extern "C" int m40k_quant_linear(void *stream, const m40k_qlinear_args *a, int sm_count) {
    if (a->M <= 8) {
        const m40k_qgemv_variant v = m40k_quant_gemv_choose(a, sm_count);
        return m40k_quant_gemv_variant(stream, a, sm_count, &v);
    }
    return m40k_quant_gemm_run(stream, a, 0);
}
