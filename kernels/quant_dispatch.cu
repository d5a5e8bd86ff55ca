/* Which quantized GEMV runs for which shape (m40k_quant_gemv_choose), the
** split-K scratch it asks for (m40k_quant_gemv_workspace, the rule of
** kernels/quant_plan.h that the planner shares), and m40k_quant_linear:
** GEMV (kernels/quant_gemv.cu) for M <= 8, 8-row GEMV slices up to 64
** rows, the SGEMM (kernels/sgemm.cu, W converted as it loads) above, or
** the quantized GEMM (kernels/quant_gemm.cu) where the SGEMM's loads
** cannot take W. Host code only: no kernels, so no ptxas resources; the roofline
** and measurements of the kernels it picks are in kernels/quant_gemv.cu and
** docs/quant.md. */
#include "norm.h"
#include "quant.h"
#include "quant_plan.h"
#include "sgemm.h"
#include "swiglu.h"

#include <cuda_runtime.h>

#include <stdint.h>

extern "C" {
int m40k_quant_gemv_small_v2 = 1;
int m40k_quant_gemv_v2_whole = -1;
int m40k_quant_gemv_small_v2_q8 = 1;
int m40k_quant_gemv_v2_deep = 0;
int m40k_quant_gemv_v2_ks = 1;
int m40k_quant_gemv_v2_ez = 1;
int m40k_quant_gemv_q4_split = 0;
int m40k_quant_gemv_v2_r1 = 0;
int m40k_quant_gemv_v2_pass = 2;
int m40k_quant_gemv_v2_pass_depth = 0;
int m40k_quant_gemv_v2_pass_db = 0;
}

/* Batch 1 on v2 at R = 2: the forms the knobs ask for -- a ring of four
** chunks of weights in flight, or (x staged whole) a row's K over ks warps;
** in passes, EZ, the depth and x double-buffered. */
static void batch1_v2_forms(const m40k_qlinear_args *a, m40k_qgemv_variant *v) {
    if (a->M != 1 || v->kernel != M40K_QGEMV_V2 || v->R != 2) return;
    /* ez: staged whole or (int4, below) in passes only (chunked, its
    ** per-vector staging cost more than the decode saved: H200, session 13,
    ** int4 4096x13696 17.3 against 16.4 us), unless the knob is 2 (tests,
    ** A/B); staged whole also at depth 2 */
    if (v->D == 2) { /* x in passes: K in one warp; the EZ decode at knob 2 (int4) or 3; int4's ring */
        const int p = m40k_quant_gemv_v2_pass;
        if (m40k_quant_gemv_v2_ez && (p == 3 || (p == 2 && a->wtype == M40_DTYPE_Q4))) v->ez = 1;
        /* int4's ring of four chunks: with row scales by default (H100,
        ** session 38: int4 +0.8% a token, its 4h_to_h 18.5 -> 18.1 us;
        ** int4g128 -0.6%, so not with group scales; int8's ring, 2% slower,
        ** is not carried) */
        const int d = m40k_quant_gemv_v2_pass_depth;
        if (a->wtype == M40_DTYPE_Q4 && (d == 4 || (d == 0 && !a->group))) v->depth = 4;
        /* x double-buffered, one barrier a pass (m40k_quant_gemv_v2_pass_db:
        ** 0 the rule, int4's ring with EZ and int8 without (H100, session
        ** 39, ChatGLM2-6B a token: int4 +0.2-0.8%, int8 +0.3%); 1 never; 2
        ** int4 with EZ one chunk ahead too (int4g128 -0.3%, so not by
        ** default); other values as 0). Not int8 with EZ (pass knob 3):
        ** its two buffers and xe would pass 48 KB, so no instance */
        const int db = m40k_quant_gemv_v2_pass_db;
        if (db == 1) v->db = 0;
        else if (v->depth == 4) v->db = v->ez; /* the ring: int4 only */
        else v->db = v->ez == (a->wtype == M40_DTYPE_Q4) && (db == 2 || a->wtype == M40_DTYPE_Q8);
        return;
    }
    const bool ez = m40k_quant_gemv_v2_ez && a->wtype != M40_DTYPE_F16 && (v->D == 1 || m40k_quant_gemv_v2_ez == 2);
    if (m40k_quant_gemv_v2_deep) v->depth = m40k_quant_gemv_v2_deep == 2 && ez && v->D == 1 ? 2 : 4;
    else if (v->D == 1 && (m40k_quant_gemv_v2_ks == 2 || m40k_quant_gemv_v2_ks == 4)) v->ks = m40k_quant_gemv_v2_ks;
    if (ez && v->ks <= 1 && (v->D == 1 || v->depth <= 1)) v->ez = 1;
    if (v->ez && m40k_quant_gemv_v2_r1 && v->depth <= 1) v->R = 1; /* 16-warp blocks, a row a warp */
}

extern "C" m40k_qgemv_variant m40k_quant_gemv_choose(const m40k_qlinear_args *a, int sm_count) {
    m40k_qgemv_variant v = {M40K_QGEMV_GENERIC, 0, 0, 0, 0, 0, 0, 0};
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
        batch1_v2_forms(a, &v);
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
    } else if (q4 && a->M == 1 && a->N <= 8192 && m40k_quant_gemv_small_v2 &&
               !(m40k_quant_gemv_q4_split && !whole && split_ok)) {
        /* int4's small shapes at batch 1: v2, R = 2 (H200, run 12, back to
        ** back: 4096x4096 7.19 us against v4's 8.20, 4608x4096 8.45 against
        ** 10.02; g128 7.87 / 9.50 against 7.96 / 10.18). ncu (session 9):
        ** at these sizes v4 is not memory-bound -- 7.4 us for 4096x4096 with
        ** its weights in L2, 2 blocks an SM by its 111 registers, an
        ** instruction every 2 cycles a scheduler; v2 holds 4 blocks an SM
        ** (sm_52: 52 registers, 64 with the norm; 68 with group scales and
        ** the norm, 3 blocks an SM). Measured on the H200 only. */
        v.kernel = M40K_QGEMV_V2;
        v.R = 2;
        /* x staged once: no gain for int4 with v2's own decode (H200,
        ** session 10, same call: 515.0 / 515.5 tok/s against 514.9; g128
        ** 448.5 / 449.0 against 452.4); with the exponent-zero decode the
        ** chunked staging's per-vector work is ~1 instruction a weight of
        ** the ~3.8 (sm_52), staged whole 2.7: whole by default there
        ** (m40k_quant_gemv_v2_whole -1: auto, 0: chunked, 1: whole) */
        const bool ez = m40k_quant_gemv_v2_ez != 0;
        v.D = a->K <= M40K_QGEMV_V2_WHOLE_K &&
              (m40k_quant_gemv_v2_whole > 0 || m40k_quant_gemv_v2_ks > 1 || (m40k_quant_gemv_v2_whole < 0 && ez));
        if (a->K > M40K_QGEMV_V2_WHOLE_K && m40k_quant_gemv_v2_pass && !a->nw) v.D = 2; /* x in passes */
    } else if (!q4 && a->M == 1 && a->N <= 8192 && !whole && m40k_quant_gemv_v2_pass && !a->nw) {
        v.kernel = M40K_QGEMV_V2; /* int8 past v3's whole staging: v2 with x in passes (else split-K) */
        v.R = 2;
        v.D = 2;
    } else if (!q4 && a->M == 1 && a->N <= 8192 && a->K <= M40K_QGEMV_V2_WHOLE_K &&
               m40k_quant_gemv_small_v2_q8) {
        /* int8's small shapes at batch 1: v2 with x staged once, R = 2
        ** (H200, session 10, same call: ChatGLM2-6B int8 decode 410.8 /
        ** 411.8 tok/s against v3's 401.9 / 401.7). sm_52: 54 registers, 70
        ** with the norm (3 blocks an SM). */
        v.kernel = M40K_QGEMV_V2;
        v.R = 2;
        v.D = 1;
    } else if (whole) {
        v.kernel = M40K_QGEMV_V3;
        v.D = 4;
        v.R = a->group || (q4 && a->M == 2) ? 4 : 2;
    } else { /* int4 with group scales at batch 2: split-K (4096x13696: 25.4 vs 32.4 us) */
        v.R = 2;
        v.kernel = (!q4 || (a->group && a->M == 2) || (m40k_quant_gemv_q4_split && a->M == 1)) && split_ok
                       ? M40K_QGEMV_SPLIT
                   : !q4 && a->M == 1                          ? M40K_QGEMV_V3
                                                               : M40K_QGEMV_V2;
        if (v.kernel == M40K_QGEMV_V3) v.D = 2; /* x in segments of K */
    }
    batch1_v2_forms(a, &v);
    return v;
}

extern "C" size_t m40k_quant_gemv_workspace(const m40k_qlinear_args *a) {
    if (a->M <= 0 || a->M > 8 || a->N <= 0 || a->K <= 0 || a->wtype == M40_DTYPE_F16) return 0;
    return m40k_qgemv_split_bytes(a->wtype == M40_DTYPE_Q4, a->M, a->N, a->K, a->group != 0);
}

/* The SGEMM call for a prefill-sized M: W [N,K] as its B, converted as
** the tiles load (F16, or Q8/Q4 with their scales), x as A, bias fused. */
static m40k_sgemm_args sgemm_of(const m40k_qlinear_args *a) {
    m40k_sgemm_args g = {};
    g.M = a->M; g.N = a->N; g.K = a->K;
    g.a = a->x; g.lda = a->K;
    g.b = a->w; g.b_nk = 1;
    g.c = a->y; g.ldc = a->N;
    g.bias = a->bias;
    if (a->res) g.res = a->res, g.ldr = a->N;
    if (a->wtype == M40_DTYPE_F16) {
        g.b_f16 = 1;
        g.ldb = a->K;
    } else {
        g.b_q = a->wtype == M40_DTYPE_Q4 ? 4 : 8;
        g.ldb = g.b_q == 4 ? (a->K + 1) / 2 : a->K; /* bytes */
        g.b_scale = a->scale;
        g.b_scale_f16 = a->scale_f16;
        g.b_group = a->group;
    }
    return g;
}

/* Whether a larger-M call goes to the SGEMM: its tile loads take the format
** (F16 always; Q8/Q4 when m40k_sgemm_quant_ok), and its grid the rows. The
** SGEMM's 128x128x8 tile (maxas-style, 2 blocks an SM) is the faster
** kernel: at M = 512 on the H200, 41-43 TFLOP/s against 37-39 for
** quant_gemm.cu's 128x128x16 (bench/NOTES.md). */
static bool use_sgemm(const m40k_qlinear_args *a, const m40k_sgemm_args &g) {
    if (a->M <= M40K_QSLICE_MAX || a->M > 65535 * 64) return false;
    return a->wtype == M40_DTYPE_F16 || m40k_sgemm_quant_ok(&g);
}

/* The normalized rows in front of the scratch when the norm runs as its own
** kernel (a->nw and not fused): kernels/quant_plan.h's rule. */
static size_t norm_rows_bytes(const m40k_qlinear_args *a) {
    return a->nw ? m40k_qnorm_rows_bytes(a->M, a->K) : 0;
}

static size_t linear_workspace(const m40k_qlinear_args *a, int sm_count);

/* The outputs in front of the scratch when a->glu runs unfused. */
static size_t glu_rows_bytes(const m40k_qlinear_args *a) {
    return a->glu ? m40k_qglu_rows_bytes(a->M, a->N) : 0;
}

extern "C" size_t m40k_quant_linear_workspace(const m40k_qlinear_args *a, int sm_count) {
    if (a->M <= 0) return 0;
    m40k_qlinear_args b = *a;
    b.nw = nullptr;
    b.glu = 0;
    return norm_rows_bytes(a) + glu_rows_bytes(a) + linear_workspace(&b, sm_count);
}

static size_t linear_workspace(const m40k_qlinear_args *a, int sm_count) {
    if (a->M <= M40K_QSLICE_MAX) {
        m40k_qlinear_args s = *a;
        if (s.M > 8) s.M = 8;
        return m40k_quant_gemv_workspace(&s);
    }
    if (sm_count <= 0) return 0;
    m40k_qlinear_args p = *a; /* sizing: any aligned stand-in pointers */
    static const float4 dummy[1] = {};
    p.x = (const float *)dummy;
    p.w = dummy;
    p.scale = p.wtype == M40_DTYPE_F16 ? nullptr : (const void *)dummy;
    const m40k_sgemm_args g = sgemm_of(&p);
    return use_sgemm(&p, g) ? m40k_sgemm_workspace_size(&g, sm_count) : 0;
}

extern "C" int m40k_quant_linear(void *stream, const m40k_qlinear_args *a, int sm_count) {
    if (a->M <= 0 || a->N <= 0) return 0;
    if (a->glu && (a->res || a->N != 2 * (int64_t)a->glu)) return (int)cudaErrorInvalidValue;
    if (a->nw) {
        if (a->M == 1) {
            const m40k_qgemv_variant v = m40k_quant_gemv_choose(a, sm_count);
            if (m40k_quant_gemv_norm_fused(a, &v) && (!a->glu || m40k_quant_gemv_glu_ok(a, &v)))
                return m40k_quant_gemv_variant(stream, a, sm_count, &v);
        }
        /* the norm as its own kernel, into the front of the scratch */
        const size_t nb = norm_rows_bytes(a);
        if (!a->ws || a->ws_bytes < nb) return (int)cudaErrorInvalidValue;
        int e = m40k_rmsnorm(stream, a->M, a->K, a->eps, 0, (float *)a->x, a->K, nullptr, 0, a->nw,
                             a->nw_f16, a->ws, a->K);
        if (e) return e;
        m40k_qlinear_args b = *a;
        b.x = a->ws;
        b.nw = nullptr;
        b.ws = a->ws_bytes > nb ? (float *)((char *)a->ws + nb) : nullptr;
        b.ws_bytes = a->ws_bytes - nb;
        return m40k_quant_linear(stream, &b, sm_count);
    }
    if (a->glu) {
        /* SwiGLU in the GEMV's store where the variant pairs the rows (one
        ** launch; the 2F outputs never written), else the outputs into the
        ** front of the scratch and the SWIGLU kernel from there (the
        ** workspace: the norm's rows, then these, then the GEMV's or SGEMM's) */
        if (a->M <= 8) {
            const m40k_qgemv_variant v = m40k_quant_gemv_choose(a, sm_count);
            if (m40k_quant_gemv_glu_ok(a, &v)) return m40k_quant_gemv_variant(stream, a, sm_count, &v);
        }
        const size_t gb = glu_rows_bytes(a);
        if (!a->ws || a->ws_bytes < gb) return (int)cudaErrorInvalidValue;
        m40k_qlinear_args b = *a;
        b.glu = 0;
        b.y = a->ws;
        b.ws = a->ws_bytes > gb ? (float *)((char *)a->ws + gb) : nullptr;
        b.ws_bytes = a->ws_bytes - gb;
        const int e = m40k_quant_linear(stream, &b, sm_count);
        return e ? e : m40k_swiglu(stream, a->M, a->glu, a->ws, a->N, a->y);
    }
    if (a->M <= 8) {
        const m40k_qgemv_variant v = m40k_quant_gemv_choose(a, sm_count);
        return m40k_quant_gemv_variant(stream, a, sm_count, &v);
    }
    if (a->M <= M40K_QSLICE_MAX) {
        /* 8-row slices, not the GEMM: the GEMM's blocks are 128 rows tall,
        ** so 16 rows cost what 128 do (H200, 2026-12-02: a ChatGLM2-6B int8
        ** decode step at batch 16 took 45 ms, at batch 8 6 ms; a 32-row
        ** prefill cost a 128-row one). A batch-8 GEMV reads the weights once
        ** at ~2.3x a batch-1 time, so s slices cost ~2.3·s GEMV passes:
        ** below the GEMM up to 64 rows on the H200 (8 slices ~ the 128-row
        ** GEMM) and on an M40 (8 slices of a bandwidth-bound GEMV, ~22 ms
        ** each for int8 6B, against ~290 ms for the 128-row tile's 1.6
        ** TFLOP). One stream: each slice's split-K sums are consumed before
        ** the next slice writes them. */
        for (int r0 = 0; r0 < a->M; r0 += 8) {
            m40k_qlinear_args s = *a;
            s.M = a->M - r0 < 8 ? a->M - r0 : 8;
            s.x = a->x + (size_t)r0 * (size_t)a->K;
            s.y = a->y + (size_t)r0 * (size_t)a->N;
            if (a->res) s.res = a->res + (size_t)r0 * (size_t)a->N;
            const m40k_qgemv_variant v = m40k_quant_gemv_choose(&s, sm_count);
            int e = m40k_quant_gemv_variant(stream, &s, sm_count, &v);
            if (e) return e;
        }
        return 0;
    }
    const m40k_sgemm_args g = sgemm_of(a);
    if (use_sgemm(a, g)) return m40k_sgemm(stream, &g, sm_count, a->ws, a->ws_bytes);
    return m40k_quant_gemm_run(stream, a, 0);
}
