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
    float *scratch;         /* [B, V] when m40k_sample_scratch says so, else NULL */
    unsigned *guard;        /* the context's index guard (kernels/guard.h) */
    int64_t B, W;
    int V;                  /* 1 .. 2^24 */
    int top_k;
    float temperature, top_p, min_p, penalty;
    uint64_t seed;
} m40k_sample_args;

/* Scratch bytes the launcher needs: B·V floats (the penalized logits, then
** z = x / T) when sampling or penalizing; 0 for greedy without a penalty.
** B·V < 2^62 / 4 holds: the logits tensor exists. */
static inline uint64_t m40k_sample_scratch(int64_t B, int64_t V, float temperature,
                                           int has_history, float penalty) {
    int need = temperature > 0.0f || (has_history && penalty != 1.0f);
    return need ? (uint64_t)B * (uint64_t)V * 4u : 0u;
}

/* One block per row; B < 2^31. */
int m40k_sample(void *stream, const m40k_sample_args *a);

/* Which kernel m40k_sample runs (an internal knob for A/B runs: tests and
** m40-bench set it; defined in lib/ops/sample.c so that CPU-only builds
** link): 2 (the default), auto: per call, the faster of the two by the
** H200 A/B (kernels/sample.cu: sample_variant); 1, the candidate sort of kernels/sample_fast.cuh
** (one pass fewer for greedy; top-k, top-p and min-p sort the few ids near
** the max instead of radix selects over the row, with the radix selects as
** the fallback); 0, the radix selects alone. Both give the same ids for a
** seed where the candidate path applies (the same integer masses). */
extern int m40k_sample_variant;

#ifdef __cplusplus
}
#endif
#endif
