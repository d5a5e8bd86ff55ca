/* The CUDA side of the bench helpers: events and the baselines that call
** CUDA libraries directly (cuBLAS SGEMM, cudaMemcpy). CUDA builds only. */
#include "bench.h"
#include "../internal.h"
#include "../../kernels/bench_read.h"

#ifdef M40_HAVE_CUBLAS
#include <cublas_v2.h>
#endif
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>

m40_status m40__bench_cublas_linear(m40_ctx *ctx, const m40_tensor *x, const m40_tensor *w,
                                    m40_tensor *y) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!ctx->is_gpu)
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "cuBLAS baseline needs a GPU context");
    if (!x || !w || !y || x->loc != M40_LOC_DEVICE || w->loc != M40_LOC_DEVICE ||
        y->loc != M40_LOC_DEVICE || x->desc.ndim != 2 || w->desc.ndim != 2 || y->desc.ndim != 2)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "cuBLAS baseline: x [M,K], w [N,K], y [M,N], 2-D device tensors");
    int M = (int)x->desc.shape[0], K = (int)x->desc.shape[1], N = (int)w->desc.shape[0];
    if (w->desc.shape[1] != K || y->desc.shape[0] != M || y->desc.shape[1] != N)
        return m40__err(ctx, M40_ERR_SHAPE, "cuBLAS baseline: shapes do not fit y = x·wᵀ");
    void *hv = NULL;
    if ((st = m40__cuda_cublas(ctx, &hv)) != M40_OK) return st;
#ifdef M40_HAVE_CUBLAS
    const float one = 1.0f, zero = 0.0f;
    /* row-major y[M,N] = x[M,K]·w[N,K]ᵀ as column-major yᵀ = wᵀ(op T)·xᵀ */
    cublasStatus_t s = cublasSgemm((cublasHandle_t)hv, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one,
                                   (const float *)w->data, K, (const float *)x->data, K, &zero,
                                   (float *)y->data, N);
    if (s != CUBLAS_STATUS_SUCCESS)
        return m40__err(ctx, M40_ERR_CUDA, "cublasSgemm (baseline) failed: status %d", (int)s);
#endif
    return M40_OK;
}

m40_status m40__bench_memcpy_d2d(m40_ctx *ctx, void *dst, const void *src, size_t nbytes) {
    int err = cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice,
                              (cudaStream_t)ctx->stream);
    return err ? m40__cuda_check(ctx, err, "cudaMemcpyAsync (baseline)") : M40_OK;
}

m40_status m40__bench_device_uuid(m40_ctx *ctx, unsigned char uuid[16]) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!ctx->is_gpu) return m40__err(ctx, M40_ERR_UNSUPPORTED, "CPU context has no UUID");
    struct cudaDeviceProp p;
    int err = cudaGetDeviceProperties(&p, ctx->desc.device);
    if (err) return m40__cuda_check(ctx, err, "cudaGetDeviceProperties");
    for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)p.uuid.bytes[i];
    return M40_OK;
}

m40_status m40__bench_profiler(m40_ctx *ctx, int on) {
    m40_status st = m40_ctx_sync(ctx);
    if (st != M40_OK) return st;
    int err = on ? cudaProfilerStart() : cudaProfilerStop();
    return err ? m40__cuda_check(ctx, err, on ? "cudaProfilerStart" : "cudaProfilerStop") : M40_OK;
}

struct m40__read_chain {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

m40_status m40__bench_read_chain_new(m40_ctx *ctx, const m40__read_range *r, int n, void *sink,
                                     m40__read_chain **out) {
    *out = NULL;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!ctx->is_gpu) return m40__err(ctx, M40_ERR_UNSUPPORTED, "read chain: needs a GPU context");
    m40__read_chain *c = calloc(1, sizeof *c);
    if (!c) return m40__err(ctx, M40_ERR_OOM_HOST, "read chain: out of host memory");
    cudaStream_t s = (cudaStream_t)ctx->stream;
    int err = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), e2;
    for (int i = 0; !err && i < n; i++)
        err = r[i].wbits ? (r[i].p1 ? (int)cudaErrorInvalidValue
                                    : m40k_bench_floor(ctx->stream, r[i].wbits, r[i].p0, r[i].bytes0, sink))
                         : m40k_bench_read(ctx->stream, r[i].p0, r[i].bytes0, r[i].p1, r[i].bytes1, sink);
    e2 = cudaStreamEndCapture(s, &c->graph); /* ends the capture even after an error */
    if (!err) err = e2;
    if (!err) err = cudaGraphInstantiateWithFlags(&c->exec, c->graph, 0);
    if (err) {
        m40__bench_read_chain_free(c);
        return m40__cuda_check(ctx, err, "read chain: capture");
    }
    *out = c;
    return M40_OK;
}

m40_status m40__bench_capture_new(m40_ctx *ctx, m40_status (*fn)(void *arg), void *arg, int calls,
                                  m40__read_chain **out) {
    *out = NULL;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!ctx->is_gpu) return m40__err(ctx, M40_ERR_UNSUPPORTED, "capture: needs a GPU context");
    if (calls < 1) return m40__err(ctx, M40_ERR_INVALID_ARG, "capture: calls must be >= 1");
    m40__read_chain *c = calloc(1, sizeof *c);
    if (!c) return m40__err(ctx, M40_ERR_OOM_HOST, "capture: out of host memory");
    cudaStream_t s = (cudaStream_t)ctx->stream;
    int err = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    if (err) {
        free(c);
        return m40__cuda_check(ctx, err, "capture: cudaStreamBeginCapture");
    }
    for (int i = 0; st == M40_OK && i < calls; i++) st = fn(arg);
    err = cudaStreamEndCapture(s, &c->graph); /* ends the capture even after an error */
    if (st == M40_OK && !err) err = cudaGraphInstantiateWithFlags(&c->exec, c->graph, 0);
    if (st != M40_OK || err) {
        m40__bench_read_chain_free(c);
        (void)cudaGetLastError();
        return st != M40_OK ? st : m40__cuda_check(ctx, err, "capture: the op's calls");
    }
    *out = c;
    return M40_OK;
}

m40_status m40__bench_read_chain_run(m40_ctx *ctx, m40__read_chain *c) {
    int err = cudaGraphLaunch(c->exec, (cudaStream_t)ctx->stream);
    return err ? m40__cuda_check(ctx, err, "read chain: cudaGraphLaunch") : M40_OK;
}

void m40__bench_read_chain_free(m40__read_chain *c) {
    if (!c) return;
    if (c->exec) cudaGraphExecDestroy(c->exec);
    if (c->graph) cudaGraphDestroy(c->graph);
    free(c);
}
