/* GPU timing of one conv for the auto-tuner, and the workspace trim after
** it. CUDA builds only. */
#include "conv_engine.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>

#define MAX_REPS 16

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* reps runs with an event after each; times[i] = run i alone. */
static m40_status timed_runs(m40_ctx *ctx, const m40_conv2d_desc *d, const m40_tensor *x,
                             const m40_tensor *w, const m40_tensor *bias, const m40_tensor *res,
                             m40_tensor *y, const m40__conv_sel *sel, int reps,
                             cudaEvent_t *ev, float *times) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    cudaError_t e = cudaEventRecord(ev[0], s);
    for (int i = 0; i < reps && e == cudaSuccess; i++) {
        m40_status st = m40__conv2d_sel(ctx, d, x, w, NULL, bias, res, y, sel);
        if (st != M40_OK) return st;
        e = cudaEventRecord(ev[i + 1], s);
    }
    if (e == cudaSuccess) e = cudaEventSynchronize(ev[reps]);
    for (int i = 0; i < reps && e == cudaSuccess; i++)
        e = cudaEventElapsedTime(&times[i], ev[i], ev[i + 1]);
    return e == cudaSuccess ? M40_OK : m40__cuda_check(ctx, (int)e, "conv autotune: events");
}

/* The same runs recorded into one CUDA graph, launched 3 times (after a
** warm-up launch) between events: host-side launch costs (a few µs per
** kernel, more for a library call) do not count, as in a graph replay.
** times[0..2] = one launch / reps. M40_ERR_UNSUPPORTED when capture fails. */
static m40_status graph_runs(m40_ctx *ctx, const m40_conv2d_desc *d, const m40_tensor *x,
                             const m40_tensor *w, const m40_tensor *bias, const m40_tensor *res,
                             m40_tensor *y, const m40__conv_sel *sel, int reps,
                             cudaEvent_t *ev, float *times) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
        (void)cudaGetLastError();
        return M40_ERR_UNSUPPORTED;
    }
    m40_status st = M40_OK;
    for (int i = 0; i < reps && st == M40_OK; i++)
        st = m40__conv2d_sel(ctx, d, x, w, NULL, bias, res, y, sel);
    cudaError_t ee = cudaStreamEndCapture(s, &graph);
    if (st != M40_OK || ee != cudaSuccess ||
        cudaGraphInstantiateWithFlags(&exec, graph, 0) != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError();
        return ctx->lost ? M40_ERR_DEVICE_LOST : M40_ERR_UNSUPPORTED;
    }
    cudaError_t e = cudaGraphLaunch(exec, s);
    for (int i = 0; i < 3 && e == cudaSuccess; i++) {
        e = cudaEventRecord(ev[0], s);
        if (e == cudaSuccess) e = cudaGraphLaunch(exec, s);
        if (e == cudaSuccess) e = cudaEventRecord(ev[1], s);
        if (e == cudaSuccess) e = cudaEventSynchronize(ev[1]);
        if (e == cudaSuccess) e = cudaEventElapsedTime(&times[i], ev[0], ev[1]);
        times[i] /= (float)reps;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return e == cudaSuccess ? M40_OK : m40__cuda_check(ctx, (int)e, "conv autotune: graph");
}

m40_status m40__conv_time(m40_ctx *ctx, const m40_conv2d_desc *d, const m40_tensor *x,
                          const m40_tensor *w, const m40_tensor *bias, const m40_tensor *res,
                          m40_tensor *y, const m40__conv_sel *sel, int reps, double *ms) {
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    *ms = 0;
    /* warm-up: lazy module loading, cuDNN's first-call setup, workspace */
    m40_status st = m40__conv2d_sel(ctx, d, x, w, NULL, bias, res, y, sel);
    if (st != M40_OK) return st;
    cudaEvent_t ev[MAX_REPS + 1];
    int nev = 0;
    cudaError_t e = cudaSuccess;
    for (; nev <= reps && e == cudaSuccess; nev++) e = cudaEventCreate(&ev[nev]);
    if (e != cudaSuccess) {
        nev--;
        st = m40__cuda_check(ctx, (int)e, "conv autotune: cudaEventCreate");
    }
    float times[MAX_REPS];
    int n = 3;
    if (st == M40_OK) {
        st = graph_runs(ctx, d, x, w, bias, res, y, sel, reps, ev, times);
        if (st == M40_ERR_UNSUPPORTED) { /* not capturable: time the launches as they come */
            st = timed_runs(ctx, d, x, w, bias, res, y, sel, reps, ev, times);
            n = reps;
        }
    }
    for (int i = 0; i < nev; i++) cudaEventDestroy(ev[i]);
    if (st != M40_OK) return st;
    qsort(times, (size_t)n, sizeof *times, cmp_f);
    *ms = times[n / 2];
    return M40_OK;
}

m40_status m40__cuda_workspace_trim(m40_ctx *ctx, size_t bytes) {
    if (!ctx->ws || ctx->ws_bytes <= bytes) return M40_OK;
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)ctx->stream);
    if (e != cudaSuccess) return m40__cuda_check(ctx, (int)e, "workspace trim: synchronize");
    cudaFree(ctx->ws);
    ctx->ws = NULL;
    ctx->ws_bytes = 0;
    if (!bytes) return M40_OK;
    void *p;
    return m40__cuda_workspace(ctx, bytes, &p);
}
