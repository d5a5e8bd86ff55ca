/* The quantized GEMV's split-K plan (kernels/quant_gemv.cu, v3 "version 7"),
** in C so that the graph planner (lib/ops/) sizes the scratch
** with the rule the launcher uses. Host code only.
**
** v3 stages x for a K-range in shared memory once per persistent block: a
** chunk is 32 lanes x 16 bytes of weights per row (int4 1024 columns, int8
** 512), and holds KC floats of x per batch row plus 32 per-lane offset sums.
** When x for all of K does not fit the 48 KB an M40 block may have, K is cut
** into nsplit ranges of nch chunks (a multiple of D, the chunks each warp
** keeps in flight), and the partial sums [nsplit][M][N] go to the scratch. */
#ifndef M40_KERNELS_QUANT_PLAN_H
#define M40_KERNELS_QUANT_PLAN_H

#include <stddef.h>

#define M40K_QGEMV_SMEM (48 * 1024)                /* shared memory per block */
#define M40K_QGEMV_KC(q4) ((q4) ? 1024 : 512)       /* columns per chunk */
#define M40K_QGEMV_CB(q4) (M40K_QGEMV_KC(q4) * 4 + 32 * 4) /* bytes per chunk and batch row */

/* The normalized rows m40k_quant_linear puts in front of its scratch when
** a fused norm runs as its own kernel (M rows of K floats, 256-byte
** rounded); the caller has bounded M·K·4 below 2^62. */
static inline size_t m40k_qnorm_rows_bytes(long long M, long long K) {
    return ((size_t)M * (size_t)K * sizeof(float) + 255) & ~(size_t)255;
}

/* The M x N outputs a LINEAR_Q with a fused SwiGLU (glu) puts in front of
** its scratch, for the kernels that cannot pair the rows in their store
** (then a SWIGLU kernel reads them); the same rounding. */
static inline size_t m40k_qglu_rows_bytes(long long M, long long N) { return m40k_qnorm_rows_bytes(M, N); }

/* Rows up to which m40k_quant_linear runs 8-row GEMV slices, not a GEMM
** (kernels/quant_dispatch.cu says why). */
#define M40K_QSLICE_MAX 64

typedef struct m40k_qgemv_split {
    int nch, nsplit, D;
} m40k_qgemv_split;

/* q4: int4 (else int8); B: batch rows (1..8); grouped: group scales. */
static inline m40k_qgemv_split m40k_qgemv_split_plan(int q4, int B, int K, int grouped) {
    const int Kc = (K + M40K_QGEMV_KC(q4) - 1) / M40K_QGEMV_KC(q4);
    const int maxch = M40K_QGEMV_SMEM / (B * M40K_QGEMV_CB(q4)); /* >= 1: B * CB <= 33 KB */
    m40k_qgemv_split p;
    /* D = 2 spilled on sm_52 for int8 with group scales at batch 8 */
    p.D = maxch >= 2 && Kc >= 2 && !(grouped && B >= 7) ? 2 : 1;
    const int cap = maxch / p.D * p.D;
    p.nsplit = (Kc + cap - 1) / cap;
    p.nch = ((Kc + p.nsplit - 1) / p.nsplit + p.D - 1) / p.D * p.D;
    return p;
}

/* Scratch bytes for one GEMV call (M rows of x, N of W): nsplit * M * N
** floats, 0 when one range covers K. */
static inline size_t m40k_qgemv_split_bytes(int q4, int M, int N, int K, int grouped) {
    if (M < 1 || M > 8 || N < 1 || K < 1) return 0;
    const m40k_qgemv_split p = m40k_qgemv_split_plan(q4, M, K, grouped);
    return p.nsplit > 1 ? (size_t)p.nsplit * (size_t)M * (size_t)N * sizeof(float) : 0;
}

#endif
