/* The NHWC convolution's Winograd rule and scratch sizes (kernels/conv.cu),
** in C so that the graph planner (lib/ops/) plans with the
** launcher's own rule. Host code only; sizes in bytes, each piece aligned to
** 256 as the launcher lays them out in the workspace.
**
** Winograd F(2x2, 3x3) applies to 3x3 stride-1 undilated convs on 4-channel
** runs, and pays when C·K/(C + K) >= 32 (kernels/conv.cu says why); the
** launcher also wants T >= 2 output tiles per SM, which the planner cannot
** know, so the planner counts Winograd's scratch whenever the shape allows
** it. It runs in chunks of tiles whose transformed inputs and outputs take
** ~128 MiB. A conv that is not a plain GEMM and has C % 4 != 0 (the RGB
** stem) or a misaligned x runs on copies of x and w with C padded to 4. */
#ifndef M40_KERNELS_CONV_PLAN_H
#define M40_KERNELS_CONV_PLAN_H

#include <stddef.h>
#include <stdint.h>

static inline size_t m40k_align256(size_t b) { return (b + 255) & ~(size_t)255; }

static inline int m40k_wino_applies(int64_t R, int64_t S, int64_t sh, int64_t sw, int64_t dh,
                                    int64_t dw, int64_t C, int64_t K) {
    return R == 3 && S == 3 && sh == 1 && sw == 1 && dh == 1 && dw == 1 && C % 4 == 0 &&
           K % 4 == 0;
}

/* C·K/(C + K) >= 32, in integers */
static inline int m40k_wino_pays(int64_t C, int64_t K) {
    return C > 0 && K > 0 && C * K >= 32 * (C + K);
}

/* 2x2 output tiles of an N x P x Q output */
static inline int64_t m40k_wino_tiles(int64_t N, int64_t P, int64_t Q) {
    return N * ((P + 1) / 2) * ((Q + 1) / 2);
}

/* Tiles per pass: V and M for them in ~128 MiB, within the SGEMM's grid.y. */
static inline int64_t m40k_wino_chunk(int64_t C, int64_t K, int64_t tiles) {
    int64_t per = 16 * (C + K) * (int64_t)sizeof(float);
    if (per < 1) per = 1; /* no channels: no division by zero */
    int64_t c = ((int64_t)128 << 20) / per;
    if (c < 1) c = 1;
    if (c > 65535 * 64) c = 65535 * 64;
    return tiles < c ? tiles : c;
}

/* U (transformed weights), V (inputs of a chunk), then M (its outputs) */
static inline size_t m40k_wino_u_bytes(int64_t C, int64_t K) {
    return m40k_align256((size_t)(16 * K * C) * sizeof(float));
}
static inline size_t m40k_wino_v_bytes(int64_t C, int64_t chunk) {
    return m40k_align256((size_t)(16 * chunk * C) * sizeof(float));
}
static inline size_t m40k_wino_bytes(int64_t C, int64_t K, int64_t tiles) {
    const int64_t chunk = m40k_wino_chunk(C, K, tiles);
    return m40k_wino_u_bytes(C, K) + m40k_wino_v_bytes(C, chunk) +
           (size_t)(16 * chunk * K) * sizeof(float);
}

/* The channel-padded copies of x [N,H,W,C] and w [K,R,S,C] */
static inline int64_t m40k_padded_c(int64_t C) { return (C + 3) & ~(int64_t)3; }
static inline size_t m40k_pad_x_bytes(int64_t N, int64_t H, int64_t W, int64_t C) {
    return m40k_align256((size_t)(N * H * W * m40k_padded_c(C)) * sizeof(float));
}
static inline size_t m40k_pad_w_bytes(int64_t K, int64_t R, int64_t S, int64_t C) {
    return m40k_align256((size_t)(K * R * S * m40k_padded_c(C)) * sizeof(float));
}

#endif
