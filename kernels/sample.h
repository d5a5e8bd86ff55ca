/* Sampling launcher (kernels/sample.cu); the launcher contract of
** kernels/softmax.h. The caller (lib/ops/sample.c) has checked the shapes,
** dtypes and the sampler's fields. */
#ifndef M40_KERNELS_SAMPLE_H
#define M40_KERNELS_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m40k_sample_args {
    const float *logits;    /* [B, V], contiguous */
    const int32_t *history; /* [B, W] or NULL */
    const int32_t *pos;     /* [B] or NULL (step 0) */
    float *out;             /* [B, 2]: id, probability */
    float *scratch;         /* [B, V] when m40k_sample_rows says so, else NULL */
    void *chunks;           /* variant 3: B · m40k_sample_chunks(V) summaries of
                            ** M40K_SAMPLE_CHUNK_BYTES, after the rows (16-byte
                            ** aligned); NULL: variant 3 falls back to 1 */
    unsigned *guard;        /* the context's index guard (kernels/guard.h) */
    int64_t B, W;
    int V;                  /* 1 .. 2^24 */
    int top_k;
    float temperature, top_p, min_p, penalty;
    uint64_t seed;
} m40k_sample_args;

/* Variant 3's grid passes: a row in chunks of M40K_SAMPLE_CHUNK logits, one
** block each; a chunk's summary (its max, argmax and sum of e for greedy,
** its exact mass, window counts and window masses for sampling) is
** M40K_SAMPLE_CHUNK_BYTES. */
#define M40K_SAMPLE_CHUNK 4096
#define M40K_SAMPLE_CHUNK_BYTES 96
static inline int64_t m40k_sample_chunks(int64_t V) {
    return (V + M40K_SAMPLE_CHUNK - 1) / M40K_SAMPLE_CHUNK;
}

/* Bytes of the z rows at the start of the scratch: B·V floats (the
** penalized logits, then z = x / T) when sampling or penalizing, else 0,
** rounded up to 16. */
static inline uint64_t m40k_sample_rows(int64_t B, int64_t V, float temperature,
                                        int has_history, float penalty) {
    int need = temperature > 0.0f || (has_history && penalty != 1.0f);
    return need ? ((uint64_t)B * (uint64_t)V * 4u + 15u) / 16u * 16u : 0u;
}

/* Scratch bytes the launcher needs: the z rows, then B · chunks summaries
** (variant 3). B·V < 2^62 / 4 holds: the logits tensor exists, and the
** summaries are 96 / 16384 of the logits' bytes (+ 96 a row) at most. */
static inline uint64_t m40k_sample_scratch(int64_t B, int64_t V, float temperature,
                                           int has_history, float penalty) {
    return m40k_sample_rows(B, V, temperature, has_history, penalty) +
           (uint64_t)B * (uint64_t)m40k_sample_chunks(V) * M40K_SAMPLE_CHUNK_BYTES;
}

/* One block per row (variant 3: chunk blocks first); B < 2^31. */
int m40k_sample(void *stream, const m40k_sample_args *a);

/* Which kernel m40k_sample runs (an internal knob for A/B runs: tests and
** m40-bench set it; defined in lib/ops/sample.c so that CPU-only builds
** link): 2 (the default), auto: per call, the fastest by the H200 A/B
** (kernels/sample.cu: sample_variant); 1, the candidate sort of
** kernels/sample_fast.cuh (one pass fewer for greedy; top-k, top-p and
** min-p sort the few ids near the max instead of radix selects over the
** row, with the radix selects as the fallback); 3, variant 1 with its
** passes over the row (z, the max, the penalty, the mass and the window
** counts) spread over a grid of chunk blocks (kernels/sample_grid.cuh);
** 4, variant 3 sorting the narrowest window that holds the answer (by the
** windows' masses) instead of the widest that fits;
** 0, the radix selects alone. All give the same ids for a seed where the
** candidate path applies (the same integer masses). */
extern int m40k_sample_variant;

#ifdef __cplusplus
}
#endif
#endif
