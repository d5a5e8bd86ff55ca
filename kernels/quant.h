/* Weight-only quantized linear launchers (kernels/quant_gemv.cu, quant_dispatch.cu,
** quant_gemm.cu).
** Launcher contract (every kernels/<family>.h): callable from C, the stream
** comes as void* (a cudaStream_t), the return value is a cudaError_t as int
** (0 on success). The caller (lib/ops/) has already checked shapes. */
#ifndef M40_KERNELS_QUANT_H
#define M40_KERNELS_QUANT_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Weight-only quantized linear (kernels/quant_gemv.cu, quant_gemm.cu) ----
** y[M,N] = x[M,K]·Wᵀ + bias[N], W [N,K] in a format of include/m40/quant.h
** (Q8 / Q4 with F16 or F32 scales per row or per K-group, or F16 weights).
** FP32 accumulation. Any M, N, K >= 0. */
typedef struct m40k_qlinear_args {
    int M, N, K;
    const float *x;      /* [M, K] row-major */
    int wtype;           /* M40_DTYPE_Q8, M40_DTYPE_Q4 or M40_DTYPE_F16 */
    const void *w;       /* rows of K (Q8), (K+1)/2 (Q4) bytes, or K halves (F16) */
    const void *scale;   /* [N] (group 0) or [N, ceil(K/group)]; NULL for F16 */
    int scale_f16;       /* scales are F16 (1) or F32 (0) */
    int group;           /* 0 = per row; 32, 64 or 128 */
    const float *bias;   /* [N] or NULL */
    float *y;            /* [M, N] row-major */
    float *ws;           /* split-K partial sums (m40k_quant_gemv_workspace bytes), or NULL */
    size_t ws_bytes;
    /* Fusions (NULL: none). res [M, N]: y = x·Wᵀ + bias + res (a
    ** transformer's residual step; y may not be res). nw [K], F16 (nw_f16)
    ** or F32: x is first replaced by rmsnorm(x)·nw, rmsnorm(x) = x /
    ** sqrt(mean(x²) + eps) per row -- inside the GEMV's staging of x where
    ** the kernel has it (M = 1, int8/int4: v3 with x for all of K), else
    ** by kernels/norm.h's kernel into the front of ws (then ws must hold
    ** m40k_quant_linear_workspace bytes). */
    const float *res;
    const void *nw;
    int nw_f16;
    float eps;
    /* glu = F > 0 (N = 2F): y [M, F] = swiglu(x·Wᵀ + bias), silu of the
    ** first F outputs times the last F (ChatGLM2's dense_h_to_4h then its
    ** SwiGLU, kernels/swiglu.h) -- in the GEMV's store where the variant
    ** can (m40k_quant_gemv_glu_ok: a warp's rows are gate rows and their up
    ** rows), else through M·N floats at the front of ws (then ws must hold
    ** m40k_quant_linear_workspace bytes). Not with res. */
    int glu;
    /* A hint (NULL: none): pf_bytes at pf that the next node reads first
    ** (lib/graph/exec.c; ChatGLM2: the next linear's norm weights, which
    ** left L2 a step ago). v2 asks L2 for them as its warps end (one
    ** 128-byte line a warp); the other kernels ignore it. Only a prefetch: nothing is read
    ** into registers, and any valid device range will do. pf_bytes sits in
    ** glu's padding: past 128 bytes this struct cost the v2 kernels 8-16
    ** more registers (sm_52 ptxas; kernels/quant_gemv_common.cuh asserts). */
    int pf_bytes;
    const void *pf;
} m40k_qlinear_args;
/* Device scratch the GEMV's split-K path needs for this call (0: none);
** without it the launcher takes a kernel that needs none. */
size_t m40k_quant_gemv_workspace(const m40k_qlinear_args *a);
/* Device scratch m40k_quant_linear asks for (0: none): the GEMV's split-K
** sums (M <= 8, or one 8-row slice's up to M40K_QSLICE_MAX rows), or the
** SGEMM's split-K sums for a larger M on a GPU of sm_count SMs (sm_count 0:
** none, the planner's figure). Without it the launchers take kernels that
** need none. */
size_t m40k_quant_linear_workspace(const m40k_qlinear_args *a, int sm_count);
/* Runs y = x·Wᵀ + bias:
** - M <= 8: the GEMV (the variant m40k_quant_gemv_choose names);
** - 9..M40K_QSLICE_MAX rows: 8-row GEMV slices, one after another (a->ws
**   holds one slice's split-K sums and every slice reuses it);
** - larger M: the SGEMM (kernels/sgemm.cu) with W converted as its tiles
**   load (m40k_sgemm_quant_ok: K % 8 == 0, aligned), else the quantized
**   GEMM (kernels/quant_gemm.cu, any K and alignment). */
int m40k_quant_linear(void *stream, const m40k_qlinear_args *a, int sm_count);

/* The GEMV kernels the library carries (kernels/quant_gemv.cu); the
** teaching versions and every other knob setting: bench/quant/. */
enum m40k_qgemv_kernel {
    M40K_QGEMV_GENERIC = 1, /* one warp per row, element loads: any K, any alignment */
    M40K_QGEMV_V2 = 2,      /* x staged per K-chunk; fp16, and int8/int4 where v3 does not fit */
    M40K_QGEMV_V3 = 3,      /* int8/int4 at M <= 2: x for all of K staged once per block */
    M40K_QGEMV_SPLIT = 7    /* int8/int4: v3 with K split over blocks, partial sums in a->ws */
};
/* One GEMV variant. The library has these instances (other settings give
** cudaErrorInvalidValue):
**   GENERIC  any M, format
**   V2       R = 2 at M <= 2, 4 at M >= 3 (0: that); fp16 at M <= 2 also R = 1,
**            int8/int4 ez whole at M = 1 also R = 1 (16-warp blocks)
**   V3       int8/int4, M <= 2, R = 2 or 4 (0: 2), D = 2 or 4 chunks of
**            weights in flight (0: 2; 4 falls back to 2 where x for 4 does
**            not fit). Needs x for all of K in shared memory
**            (m40k_quant_gemv_whole), except int8 at M = 1, R = 2, which
**            then stages K in segments.
**   SPLIT    int8/int4, R = 2 at M <= 2, 4 at M >= 3, or 8 at M >= 3 with
**            row scales (R = 8; else R is ignored); without enough a->ws
**            it runs V2.
** Every variant runs GENERIC where K is not a multiple of the 16-byte
** vector's columns (32 int4, 16 int8, 8 fp16) or x or w is not 16-byte
** aligned. blocks_per_sm (V3, SPLIT): 0 = as many as fit. */
typedef struct m40k_qgemv_variant {
    int kernel; /* enum m40k_qgemv_kernel */
    int R;      /* rows of W per warp */
    int D;      /* V3: chunks of weights in flight per warp; V2: 1 = x staged whole, 2 = in passes */
    int blocks_per_sm;
    int depth;  /* V2 at M = 1, R = 2 (0: 1): chunks of weights in flight, 1 or 4 (2: ez whole only;
                ** in passes, D = 2: 1, or 4 for int4) */
    int ks;     /* V2 whole (D = 1) at M = 1, R = 2, depth 1 (0: 1): warps a row's K is split over, 1, 2 or 4 */
    int ez;     /* V2 at M = 1, int8/int4, ks 1: 1 = the exponent-zero decode (EZ); chunked (D 0) at R = 2,
                ** depth 1; staged whole (D = 1) at R = 2 with depth 1, 2 or 4, or R = 1 (16-warp blocks);
                ** in passes (D = 2) at R = 2, depth 1 (int4: or 4), no norm */
    int db;     /* V2 in passes (D = 2) at M = 1: 1 = x double-buffered, one barrier a pass (int4 with EZ,
                ** ring or one chunk ahead; int8 without EZ one chunk ahead; never int8 with EZ: its two
                ** buffers would pass 48 KB); 0 one buffer */
} m40k_qgemv_variant;
/* 1 (default): int4 at M = 1 with N <= 8192 runs v2 at R = 2 (the norm
** fused on its chunks), else v3; 0: v3 there (the rule before session 9).
** An internal knob for A/B timing (m40-bench chatglm2 with
** M40_BENCH_GLM_SMALLV2=0); set it before a launch, from one thread. */
extern int m40k_quant_gemv_small_v2;
/* V2 with D = 1 ("whole", int8/int4 at M = 1, K <= M40K_QGEMV_V2_WHOLE_K):
** x for all of K staged once behind one barrier (else a chunk at a time
** behind two, an L2 round trip a chunk). m40k_quant_gemv_small_v2_q8 (1):
** int8's small shapes (M 1, N <= 8192) run it instead of v3 (+2.4% on
** the int8 decode step, H200); m40k_quant_gemv_v2_whole (-1: with the
** exponent-zero decode, m40k_quant_gemv_v2_ez, else not; 0 never, 1
** always): int4's small shapes take it too (with v2's own decode measured
** neutral, g128 -0.9%). Knobs as above
** (M40_BENCH_GLM_SMALLV2_Q8, M40_BENCH_GLM_V2WHOLE). */
#define M40K_QGEMV_V2_WHOLE_K 4096
extern int m40k_quant_gemv_v2_whole;
/* V2 with D = 2 (int8/int4 at M = 1, R = 2, no fused norm; any K; depth 1,
** or int4's ring of 4, m40k_quant_gemv_v2_pass_depth below; v2's own decode
** or EZ, below): x staged M40K_QGEMV_V2_WHOLE_K columns at a time, the
** next pass's x loaded into registers during this pass's chunks, so two
** barriers a pass and no exposed round trip for x (the chunked staging:
** two barriers and an L2 round trip a chunk, 14 at int4's K 13696).
** m40k_quant_gemv_v2_pass (1 default since session 18: ChatGLM2-6B +1.8%
** int4, +2.1% int8 on the H200; knob M40_BENCH_GLM_V2PASS, 0 = the chunked
** staging / split-K as before): 1 = the chooser takes it at M = 1, N <= 8192, without a fused norm, for int4
** with K > M40K_QGEMV_V2_WHOLE_K where v2 runs (m40k_quant_gemv_small_v2
** on, m40k_quant_gemv_q4_split off: else the knob does nothing) and for
** int8 where v3 cannot stage x whole (split-K before); dense_4h_to_h in
** ChatGLM2-6B. 2 (the default since session 32) = the same, int4 with the
** exponent-zero decode (ez = 1; while m40k_quant_gemv_v2_ez is not 0), each
** pass's lane vectors scaled as they are staged: H200, ChatGLM2-6B decode
** int4g128 +4.1-4.7%, int4 +0.1-0.3%; 3 = int8 too (-0.1-0.2% there: its
** 4h_to_h 13% fewer instructions, 20.2 -> 20.3-21.5 us). */
extern int m40k_quant_gemv_v2_pass;
/* V2 with D = 2 (x in passes), int4: the chunks of weights in flight. 0
** (default): a ring of four chunks with row scales (depth 4: three in
** flight while one is computed; H100, session 38: ChatGLM2-6B int4 +0.8%),
** one chunk ahead with group scales (the ring -0.6%); 1: one chunk ahead;
** 4: the ring. int8 runs one chunk ahead (its ring was 2% slower and is not
** carried). Knob M40_BENCH_GLM_PASSDEPTH. */
extern int m40k_quant_gemv_v2_pass_depth;
/* V2 with D = 2 (x in passes): x double-buffered, pass p in buffer p % 2,
** so one barrier a pass, and a warp stores the next pass as soon as it is
** done with this one (where one buffer takes two barriers a pass). 0
** (default), the rule: int4's ring (with EZ) and int8 (one chunk ahead,
** v2's decode; int8 with EZ, pass knob 3, would pass 48 KB);
** H100, session 39, ChatGLM2-6B a token: int4 +0.2-0.8% (two machines),
** int8 +0.3%, int4g128 -0.3% (so not there); 1: never; 2: every form in
** passes with an instance (int4 with EZ one chunk ahead too, as int4g128
** runs; other values as 0). The chooser applies it (the variant's db,
** batch1_v2_forms in kernels/quant_dispatch.cu); the launcher runs the db
** it is given. Knob M40_BENCH_GLM_PASSDB. sm_52: 2 blocks an
** SM either way (40 KB of shared memory; 76-111 registers, no spills). */
extern int m40k_quant_gemv_v2_pass_db;
/* V2 at M = 1 and R = 2 with depth 4: a ring of four chunks of weights in
** flight (else one chunk ahead). m40k_quant_gemv_v2_deep (knob,
** M40_BENCH_GLM_V2DEEP): the chooser's V2 variants at M = 1 take it, but
** for x in passes (m40k_quant_gemv_v2_pass_depth). */
extern int m40k_quant_gemv_v2_deep;
/* V2 whole at M = 1 with ks 2 or 4: a row's K over that many warps of the
** block. m40k_quant_gemv_v2_ks (knob, 1, M40_BENCH_GLM_V2KS): the ks the
** chooser's V2-whole variants take (int4's small shapes then run whole). */
extern int m40k_quant_gemv_v2_ks;
extern int m40k_quant_gemv_small_v2_q8;
/* V2 at M = 1 with ez = 1 (int8/int4, the norm fused or not): v3's
** exponent-zero decode, loop 2.7-3.1 instructions a weight against v2's
** 3.9-4.2 (sm_52), each lane vector of x pre-scaled by its own power of two
** (kernels/quant_gemv_v2.cuh). m40k_quant_gemv_v2_ez (knob, 1,
** M40_BENCH_GLM_V2EZ): 1, the chooser's batch-1 V2 variants with x staged
** whole take it (at their depth, ks 1); 2, the chunked ones too (depth 1;
** tests, A/B); 0, none. */
extern int m40k_quant_gemv_v2_ez;
/* 1: int4 at M = 1 where x for all of K does not fit v3 (K > ~11K) runs
** v3 with split-K (needs a->ws) instead of v2 (knob, 0,
** M40_BENCH_GLM_Q4SPLIT). m40k_quant_gemv_v2_deep (above) is the depth
** too: 1 or 4 a ring of four, 2 (with ez, x staged whole) two. */
extern int m40k_quant_gemv_q4_split;
/* 1: the chooser's V2 ez-whole variants at M = 1 take R = 1 in 16-warp
** blocks (the same rows a block and staging, twice the warps; knob, 0,
** M40_BENCH_GLM_V2R1). */
extern int m40k_quant_gemv_v2_r1;
/* The variant the library runs for a (M 1..8) on sm_count SMs, from the
** H200 bench (kernels/quant_dispatch.cu). */
m40k_qgemv_variant m40k_quant_gemv_choose(const m40k_qlinear_args *a, int sm_count);
/* Runs one variant (tests, bench). M <= 0 or N <= 0: nothing; M > 8:
** cudaErrorInvalidValue. */
int m40k_quant_gemv_variant(void *stream, const m40k_qlinear_args *a, int sm_count,
                            const m40k_qgemv_variant *v);
/* 1 if this call (a->nw set) runs its RMSNorm inside variant v's staging
** of x: M = 1, the vector loads' alignment, and V3 in whole mode with 4
** chunks in flight or V2 at R = 2 (int8/int4; not fp16). m40k_quant_gemv_variant
** refuses a->nw otherwise (cudaErrorInvalidValue); m40k_quant_linear then
** runs the norm as its own kernel first. */
int m40k_quant_gemv_norm_fused(const m40k_qlinear_args *a, const m40k_qgemv_variant *v);
/* 1 if variant v can fuse a->glu into its store: V2 or V3 at R >= 2 with
** R·M a power of two <= 32 and F a multiple of R/2 (its rows: R/2 gate rows
** and their R/2 up rows a warp), the vector loads' alignment, no res.
** m40k_quant_gemv_variant refuses a->glu otherwise. */
int m40k_quant_gemv_glu_ok(const m40k_qlinear_args *a, const m40k_qgemv_variant *v);
/* 1 if V3 holds x for all of K in shared memory at batch M (int8/int4). */
int m40k_quant_gemv_whole(int wtype, int M, int K);
/* Tiled GEMM (128x128x16 tiles, weights dequantized into shared memory);
** any M; generic = 1 forces the element-wise tile loader (tests). */
int m40k_quant_gemm_run(void *stream, const m40k_qlinear_args *a, int generic);

#ifdef __cplusplus
}
#endif
#endif
