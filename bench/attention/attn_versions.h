/* The attention trail's numbered versions (bench/attention/attn_versions.cu),
** llm.c dev/-style: one problem, five kernels, each a step on the way to the
** library's m40_attention. docs/attention.md tells the story. */
#ifndef M40_BENCH_ATTN_VERSIONS_H
#define M40_BENCH_ATTN_VERSIONS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define M40B_ATTN_D 128 /* head_dim: the versions are written for ChatGLM2's 128 */
#define M40B_ATTN_NVERSIONS 5

/* One sequence (batch 1, cache slot 0), queries at consecutive positions:
**   q     [T, H, D] F32 (device)
**   k, v  [L, G, D] F32 or F16 (f16 != 0) (device), the layer's caches
**   y     [T, H, D] F32 (device)
** Query t sits at position p0 + t and attends to keys 0 .. p0 + t (causal),
** so L >= p0 + T. Head h reads KV group h / (H / G). scale: q·k · scale. */
typedef struct m40b_attn_problem {
    int T, H, G, L, p0;
    int f16;
    float scale;
    const float *q;
    const void *k, *v;
    float *y;
} m40b_attn_problem;

extern const char *const m40b_attn_notes[M40B_ATTN_NVERSIONS];

/* Scratch bytes version `version` (1..5) needs for p on a GPU of sm_count
** SMs (v1: the T×H×L score matrix; v4, v5: the split partials). */
size_t m40b_attn_scratch_bytes(const m40b_attn_problem *p, int version, int sm_count);

/* Queues version `version` on `stream` (a cudaStream_t). scratch: at least
** m40b_attn_scratch_bytes, device memory. Returns a cudaError_t (0 ok). */
int m40b_attn_run(void *stream, const m40b_attn_problem *p, int version, int sm_count,
                  void *scratch);

#ifdef __cplusplus
}
#endif
#endif
