/* Private: the choice between libm40's conv kernels and cuDNN (issue 5).
**
**   engine.c      the context's knob, engine names, the checks shared with
**                 the graph (all builds)
**   tune_cuda.c   GPU timing of one conv, workspace trim (CUDA builds)
**   cudnn_conv.c  the cuDNN path: descriptors, algorithm, fused epilogue,
**                 the per-context handle and its teardown hook (only when
**                 CMake found cuDNN: M40_HAVE_CUDNN)
**
** Layers: lib/ops/conv.c calls m40__cudnn_conv2d from its GPU branch (the
** dispatch hook) when the conv's engine is CUDNN; the graph's knobs and its
** settle/tune step (lib/graph/conv_tune.c) use this header. Nothing here
** knows graphs, and the CUDA runtime layer (lib/cuda/) knows nothing here:
** the cuDNN state is freed by a hook registered with m40__ctx_on_fini. */
#ifndef M40_CONV_ENGINE_H
#define M40_CONV_ENGINE_H

#include "../internal.h"

typedef struct m40__cudnn_conv m40__cudnn_conv; /* one conv's cuDNN plan */

/* A conv's engine as settled for a graph node (engine.c). */
typedef struct m40__conv_sel {
    m40_conv_engine asked;  /* OURS, CUDNN or AUTO */
    m40_conv_engine engine; /* OURS or CUDNN: what runs */
    m40__cudnn_conv *cudnn; /* the plan when engine == CUDNN (owned), else NULL */
    double ours_ms, cudnn_ms;
    int algo;               /* of the cuDNN plan made, -1 if none */
    size_t cudnn_ws;
    int fused;
    char note[160];
} m40__conv_sel;

/* The sizes of a conv m40_conv2d has checked (all < 2^31). */
typedef struct m40__conv_dims {
    int N, C, H, W, K, R, S, P, Q;
} m40__conv_dims;

/* lib/ops/conv.c: m40_conv2d with the engine of `sel` (NULL: the context's). */
m40_status m40__conv2d_sel(m40_ctx *ctx, const m40_conv2d_desc *d, const m40_tensor *x,
                           const m40_tensor *w, const m40_tensor *scale, const m40_tensor *bias,
                           const m40_tensor *residual, m40_tensor *y, const m40__conv_sel *sel);

/* 1 when the dispatch hook must take the cuDNN path. */
static inline int m40__conv_use_cudnn(const m40_ctx *ctx, const m40__conv_sel *sel) {
    return sel ? sel->engine == M40_CONV_ENGINE_CUDNN
               : ctx->conv_engine == M40_CONV_ENGINE_CUDNN;
}

/* Frees a node's plan and clears its results. */
void m40__conv_sel_clear(m40__conv_sel *sel);
/* e is one of the m40_conv_engine values. */
bool m40__conv_engine_valid(m40_conv_engine e);
/* Why CUDNN cannot be asked for on ctx (not built in, CPU context), or NULL. */
const char *m40__cudnn_refusal(const m40_ctx *ctx);

#define M40__CUDNN_NOT_BUILT                                                     \
    "cuDNN: not built in (this libm40 was configured without cuDNN; rebuild "   \
    "with cuDNN 8.x or 9.0-9.10 for an M40, any 8.x/9.x for newer GPUs, found " \
    "through -DM40_CUDNN_ROOT=DIR or CUDNN_ROOT)"

#ifdef M40_HAVE_CUDA
/* tune_cuda.c: median GPU time (ms) of `reps` runs of one conv with the
** engine of `sel`, after a warm-up run, measured inside a CUDA graph (no
** host launch overhead) when the runs can be captured, else back to back. */
m40_status m40__conv_time(m40_ctx *ctx, const m40_conv2d_desc *d, const m40_tensor *x,
                          const m40_tensor *w, const m40_tensor *bias, const m40_tensor *res,
                          m40_tensor *y, const m40__conv_sel *sel, int reps, double *ms);
/* Shrinks the context's workspace to `bytes` if it is larger. */
m40_status m40__cuda_workspace_trim(m40_ctx *ctx, size_t bytes);
#endif

#ifdef M40_HAVE_CUDNN
/* cudnn_conv.c. Creates the context's cuDNN handle (on its stream) if
** needed; UNSUPPORTED with cuDNN's reason when cuDNN cannot run here. */
m40_status m40__cudnn_ready(m40_ctx *ctx);
/* Frees the handle and the eager plan cache: the teardown hook that
** m40__cudnn_ready registers (m40__ctx_on_fini), run before the stream goes. */
void m40__cudnn_ctx_fini(m40_ctx *ctx);
/* Makes a plan for this conv and runs it once (the result is in y). find:
** measure the algorithms (cudnnFindConvolutionForwardAlgorithmEx, in up to
** ws_limit bytes of workspace), else cuDNN's heuristics. */
m40_status m40__cudnn_plan(m40_ctx *ctx, const m40__conv_dims *dm, const m40_conv2d_desc *d,
                           const float *x, const float *w, const float *scale,
                           const float *bias, const float *res, float *y, size_t ws_limit,
                           int find, m40__cudnn_conv **out);
void m40__cudnn_plan_free(m40__cudnn_conv *p);
void m40__cudnn_plan_info(const m40__cudnn_conv *p, int *algo, size_t *ws, int *fused);
const char *m40__cudnn_algo_name(int algo);
/* Runs one conv through cuDNN with `plan`, or (NULL) a plan from the
** context's cache, made with cuDNN's heuristics on first use. */
m40_status m40__cudnn_conv2d(m40_ctx *ctx, const m40__conv_dims *dm, const m40_conv2d_desc *d,
                             const float *x, const float *w, const float *scale,
                             const float *bias, const float *res, float *y,
                             m40__cudnn_conv *plan);
#else
static inline const char *m40__cudnn_algo_name(int algo) { (void)algo; return ""; }
static inline void m40__cudnn_plan_free(m40__cudnn_conv *p) { (void)p; }
static inline m40_status m40__cudnn_conv2d(m40_ctx *ctx, const m40__conv_dims *dm,
                                           const m40_conv2d_desc *d, const float *x,
                                           const float *w, const float *scale,
                                           const float *bias, const float *res, float *y,
                                           m40__cudnn_conv *plan) {
    (void)dm; (void)d; (void)x; (void)w; (void)scale; (void)bias; (void)res; (void)y; (void)plan;
    return m40__err(ctx, M40_ERR_UNSUPPORTED, "m40_conv2d: " M40__CUDNN_NOT_BUILT);
}
#endif

#endif
