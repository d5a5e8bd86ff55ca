/* Capture of a whole graph run into a CUDA graph, and its replay: one
** cudaGraphLaunch instead of one launch per node, so small batches are not
** bound by launch overhead. Compiled only with M40_HAVE_CUDA. */
#include "graph_internal.h"

#include <cuda_runtime_api.h>
#include <limits.h>

void m40__graph_cuda_drop(m40_graph *g) {
    if (g->cuda_exec) cudaGraphExecDestroy((cudaGraphExec_t)g->cuda_exec);
    if (g->cuda_graph) cudaGraphDestroy((cudaGraph_t)g->cuda_graph);
    g->cuda_exec = g->cuda_graph = NULL;
    g->cuda_nodes = 0;
}

m40_status m40__graph_cuda_capture(m40_graph *g) {
    m40_ctx *ctx = g->ctx;
    cudaStream_t s = (cudaStream_t)ctx->stream;
    m40__graph_cuda_drop(g);
    /* Relaxed: a library call that allocates lazily (cuBLAS on older
    ** toolkits) must not invalidate the capture. */
    cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) return m40__cuda_check(ctx, (int)e, "m40_graph_capture: cudaStreamBeginCapture");
    m40_status st = m40__graph_run_nodes(g);
    cudaGraph_t graph = NULL;
    e = cudaStreamEndCapture(s, &graph);
    if (st != M40_OK) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError();
        return st;
    }
    if (e != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        return m40__cuda_check(ctx, (int)e, "m40_graph_capture: cudaStreamEndCapture");
    }
    cudaGraphExec_t exec = NULL;
    e = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    if (e != cudaSuccess) {
        cudaGraphDestroy(graph);
        return m40__cuda_check(ctx, (int)e, "m40_graph_capture: cudaGraphInstantiateWithFlags");
    }
    size_t n = 0;
    if (cudaGraphGetNodes(graph, NULL, &n) != cudaSuccess) n = 0;
    g->cuda_graph = graph;
    g->cuda_exec = exec;
    g->cuda_nodes = n > INT_MAX ? INT_MAX : (int)n;
    m40__log(ctx, M40_LOG_DEBUG, "captured a CUDA graph: %d graph nodes, %d launches", g->nnodes,
             g->cuda_nodes);
    return M40_OK;
}

m40_status m40__graph_cuda_replay(m40_graph *g) {
    g->ctx->guard_armed = true; /* a replayed node may be a guarded kernel */
    cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)g->cuda_exec, (cudaStream_t)g->ctx->stream);
    return e == cudaSuccess ? M40_OK : m40__cuda_check(g->ctx, (int)e, "m40_graph_run: cudaGraphLaunch");
}
