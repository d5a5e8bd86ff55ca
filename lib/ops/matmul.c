/* Linear (matmul): y[...,N] = x[...,K] · w[N,K]ᵀ + bias[N]. CPU:
** lib/ref/matmul.c; GPU: kernels/sgemm.h (split-K partial sums in the
** context's workspace), or cuBLAS (pedantic FP32) when the context was
** created with M40_MATMUL=cublas: the baseline. */
#include "op.h"
#include "../ref/ref.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/elementwise.h"
#include "../../kernels/sgemm.h"
#include <cuda_runtime_api.h>
#ifdef M40_HAVE_CUBLAS
#include <cublas_v2.h>
#endif
#endif

#include <limits.h>

/* x f32 [...,K], w f32/f16 [N,K], bias f32/f16 [N]? -> f32 [...,N] */
static m40_status linear_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    const m40_tensor_desc *x = c->in[0], *w = c->in[1], *b = c->nd->ninputs > 2 ? c->in[2] : NULL;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 1, M40_MAX_DIMS)) ||
        (st = m40__rule_dtype(c, 1, M40_DTYPE_F32, M40_DTYPE_F16)) ||
        (st = m40__rule_ndim(c, 1, 2, 2)))
        return st;
    if (b && ((st = m40__rule_dtype(c, 2, M40_DTYPE_F32, M40_DTYPE_F16)) ||
              (st = m40__rule_ndim(c, 2, 1, 1))))
        return st;
    int64_t K = x->shape[x->ndim - 1], N = w->shape[0];
    if (w->shape[1] != K || (b && b->shape[0] != N))
        return m40__rule_shape(c, "need x [...,K], w [N,K], bias [N] for y = x·wᵀ + bias");
    return m40__rule_linear_out(c, N, out);
}

/* rows of x (its leading dims); below 2^62 once the rule passed */
static int64_t linear_rows(const m40_tensor_desc *x) {
    return m40__dims_product(x, 0, x->ndim - 1);
}

static m40_status linear_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__run_need_f32(c, 1)) ||
        (c->nd->ninputs > 2 && (st = m40__run_need_f32(c, 2))) ||
        (st = m40__run_need_contiguous(c, out)))
        return st;
    const m40_tensor_desc *x = c->in[0];
    if (c->ctx->is_gpu && (linear_rows(x) > INT_MAX || c->in[1]->shape[0] > INT_MAX ||
                           x->shape[x->ndim - 1] > INT_MAX))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "dims over 2^31 for the GPU");
    return M40_OK;
}

static m40_status linear_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    const m40_tensor *x = r->in[0], *w = r->in[1], *b = r->nd->ninputs > 2 ? r->in[2] : NULL;
    m40__ref_linear(linear_rows(&x->desc), w->desc.shape[0], x->desc.shape[x->desc.ndim - 1],
                    x->data, w->data, b ? b->data : NULL, r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40k_sgemm_args linear_args(int M, int N, int K, const float *x, const float *w,
                                   const float *bias, float *y) {
    m40k_sgemm_args a = {.M = M, .N = N, .K = K, .a = x, .lda = K, .b = w, .ldb = K,
                         .b_nk = 1, .b_f16 = 0, .c = y, .ldc = N, .bias = bias,
                         .res = NULL, .ldr = 0, .act = M40K_SGEMM_ACT_NONE};
    return a;
}

#ifdef M40_HAVE_CUBLAS

/* The cuBLAS path: the baseline, and what M40_MATMUL=cublas selects. */
static m40_status linear_cublas(m40_ctx *ctx, int M, int N, int K, const float *x,
                                const float *w, const float *bias,
                                const m40_tensor_desc *dbias, float *y) {
    void *hv = NULL;
    m40_status st = m40__cuda_cublas(ctx, &hv);
    if (st != M40_OK) return st;
    cublasHandle_t h = (cublasHandle_t)hv;
    const float one = 1.0f, zero = 0.0f;
    /* Row-major y[M,N] = x[M,K]·w[N,K]ᵀ is column-major yᵀ[N,M] =
    ** (w as col-major [K,N])ᵀ · (x as col-major [K,M]). */
    if (K == 0) {
        cudaError_t e = cudaMemsetAsync(y, 0, (size_t)M * N * sizeof(float),
                                        (cudaStream_t)ctx->stream);
        if (e != cudaSuccess) return m40__cuda_check(ctx, (int)e, "cudaMemsetAsync");
    } else {
        cublasStatus_t s = cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, K,
                                       x, K, &zero, y, N);
        if (s != CUBLAS_STATUS_SUCCESS) {
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess) return m40__cuda_check(ctx, (int)e, "cublasSgemm");
            return m40__err(ctx, M40_ERR_CUDA, "cublasSgemm: %s", m40__cublas_status_str((int)s));
        }
    }
    if (bias) {
        /* y += bias, broadcast over rows (a second pass) */
        m40_tensor_desc d2 = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {M, N}, .stride = {N, 1}};
        m40_tensor_desc db = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {M, N},
                              .stride = {0, dbias->stride[0]}};
        int e = m40k_binary(ctx->stream, M40K_ADD, d2, y, db, bias, d2, y);
        if (e) return m40__cuda_check(ctx, e, "m40_matmul bias");
    }
    return M40_OK;
}
#else
static m40_status linear_cublas(m40_ctx *ctx, int M, int N, int K, const float *x,
                                const float *w, const float *bias,
                                const m40_tensor_desc *dbias, float *y) {
    (void)M; (void)N; (void)K; (void)x; (void)w; (void)bias; (void)dbias; (void)y;
    void *h;
    return m40__cuda_cublas(ctx, &h);
}
#endif

/* y[M,N] = x[M,K]·w[N,K]ᵀ + bias through kernels/sgemm.cu (bias fused).
** Split-K partial sums go to the context's workspace, which grows on first
** need (graphs reserve it at m40_graph_alloc, so their runs never allocate);
** if it cannot grow, K is not split. M40_MATMUL=cublas in the environment
** when the context was created selects the cuBLAS baseline. */
static m40_status linear_gpu(m40_ctx *ctx, const m40__op_run *r) {
    const m40_tensor *x = r->in[0], *w = r->in[1], *b = r->nd->ninputs > 2 ? r->in[2] : NULL;
    int M = (int)linear_rows(&x->desc), N = (int)w->desc.shape[0];
    int K = (int)x->desc.shape[x->desc.ndim - 1];
    const float *bias = b ? b->data : NULL;
    if ((long long)M * N == 0) return M40_OK;
    if (ctx->matmul_cublas)
        return linear_cublas(ctx, M, N, K, x->data, w->data, bias, b ? &b->desc : NULL,
                             r->out->data);
    /* rows in pieces of at most M40K_SGEMM_MAX_ROWS (the kernel's grid) */
    for (int64_t m0 = 0; m0 < M; m0 += M40K_SGEMM_MAX_ROWS) {
        const int mc = (int)(M - m0 < M40K_SGEMM_MAX_ROWS ? M - m0 : M40K_SGEMM_MAX_ROWS);
        m40k_sgemm_args a = linear_args(mc, N, K, (const float *)x->data + m0 * K, w->data, bias,
                                        (float *)r->out->data + m0 * N);
        size_t ws_bytes = m40k_sgemm_workspace_size(&a, ctx->sm_count);
        void *ws;
        m40_status st = m40__cuda_scratch(ctx, &ws_bytes, &ws); /* none: no split-K */
        if (st != M40_OK) return st;
        int e = m40k_sgemm(ctx->stream, &a, ctx->sm_count, ws, ws_bytes);
        if (e) return m40__cuda_check(ctx, e, "m40_matmul (sgemm)");
    }
    return M40_OK;
}

/* the cuBLAS handle (the M40_MATMUL=cublas baseline) is made at graph
** alloc, so that no run (or capture) allocates */
static m40_status linear_prepare(m40_ctx *ctx, const m40__op_call *c) {
    (void)c;
#ifdef M40_HAVE_CUBLAS
    void *h = NULL;
    if (!ctx->cublas) return m40__cuda_cublas(ctx, &h);
#else
    (void)ctx;
#endif
    return M40_OK;
}
#endif

/* The SGEMM's split-K sums: the launcher's figure on a GPU; the planner
** (sm_count 0) plans none: they depend on the SM count and are reserved
** at m40_graph_alloc. */
static m40_status linear_workspace(const m40__op_call *c, const m40_tensor_desc *out,
                                   int sm_count, uint64_t *bytes) {
    (void)out;
    *bytes = 0;
#ifdef M40_HAVE_CUDA
    const m40_tensor_desc *x = c->in[0];
    int64_t M = linear_rows(x), N = c->in[1]->shape[0], K = x->shape[x->ndim - 1];
    if (sm_count > 0 && M > 0 && N > 0 && M <= INT_MAX && N <= INT_MAX && K <= INT_MAX) {
        m40k_sgemm_args a = linear_args((int)M, (int)N, (int)K, NULL, NULL, NULL, NULL);
        *bytes = m40k_sgemm_workspace_size(&a, sm_count);
    }
#else
    (void)c;
    (void)sm_count;
#endif
    return M40_OK;
}

const m40__op_def m40__op_linear = {
    .op = M40_OP_LINEAR, .name = "linear", .inplace = 0, .min_in = 2, .max_in = 3,
    .in_names = {"x", "w", "bias"}, .out_name = "y", .rule = linear_rule,
    .workspace = linear_workspace, .run_check = linear_run_check, .run_cpu = linear_cpu,
    M40__GPU(linear_gpu) M40__PREPARE(linear_prepare)};

m40_status m40_matmul(m40_ctx *ctx, const m40_tensor *x, const m40_tensor *w,
                      const m40_tensor *bias, m40_tensor *y) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_LINEAR);
    nd.ninputs = 3;
    const m40_tensor *in[3] = {x, w, bias};
    return m40__op_eager(ctx, "m40_matmul", &nd, in, y, NULL);
}
