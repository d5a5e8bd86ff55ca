/* SWIGLU: y = silu(x[..., :F]) · x[..., F:] (the gate first, as ChatGLM2's
** dense_h_to_4h). CPU: lib/ref/transformer.c; GPU: kernels/swiglu.h. */
#include "op.h"
#include "../ref/ref.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/swiglu.h"
#endif

/* ---- swiglu: x [...,2F] -> silu(x[:F]) * x[F:] [...,F] ---------------------- */

static m40_status swiglu_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 1, M40_MAX_DIMS)))
        return st;
    const m40_tensor_desc *x = c->in[0];
    int64_t s[M40_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) s[i] = x->shape[i];
    if (s[x->ndim - 1] % 2) return m40__rule_shape(c, "the last dim must be even");
    s[x->ndim - 1] /= 2;
    return m40__rule_out(c, out, M40_DTYPE_F32, x->ndim, s);
}

static m40_status swiglu_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    const m40_tensor_desc *x = c->in[0];
    int64_t rows, rs;
    if ((x->shape[x->ndim - 1] > 1 && x->stride[x->ndim - 1] != 1) ||
        m40__rows_of(x, &rows, &rs) != 0)
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "x: the last dim must have stride 1 and "
                              "the leading dims one row stride");
    if (!m40_tensor_desc_is_contiguous(out))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "y must be contiguous");
    return M40_OK;
}

static void swiglu_args(const m40__op_run *r, int64_t *rows, int64_t *F, int64_t *xs) {
    const m40_tensor_desc *x = &r->in[0]->desc;
    *F = x->shape[x->ndim - 1] / 2;
    m40__rows_of(x, rows, xs);
}

static m40_status swiglu_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    int64_t rows, F, xs;
    swiglu_args(r, &rows, &F, &xs);
    m40__ref_swiglu(rows, F, (const float *)r->in[0]->data, xs, (float *)r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status swiglu_gpu(m40_ctx *ctx, const m40__op_run *r) {
    int64_t rows, F, xs;
    swiglu_args(r, &rows, &F, &xs);
    return m40__launched(ctx, m40k_swiglu(ctx->stream, rows, F, (const float *)r->in[0]->data,
                                          xs, (float *)r->out->data), r->fn);
}
#endif

const m40__op_def m40__op_swiglu = {
    .op = M40_OP_SWIGLU, .name = "swiglu", .inplace = 0, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "y", .rule = swiglu_rule, .run_check = swiglu_run_check,
    .run_cpu = swiglu_cpu, M40__GPU(swiglu_gpu)};

m40_status m40_swiglu(m40_ctx *ctx, const m40_tensor *x, m40_tensor *y) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SWIGLU);
    nd.ninputs = 1;
    const m40_tensor *in[1] = {x};
    return m40__op_eager(ctx, "m40_swiglu", &nd, in, y, NULL);
}
