/* Softmax over the last dim. CPU: lib/ref/softmax.c; GPU: kernels/softmax.h. */
#include "op.h"

#include <limits.h>
#include "../ref/ref.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/softmax.h"
#endif

/* x f32 -> x's shape */
static m40_status softmax_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32);
    if (st != M40_OK) return st;
    return m40__rule_out(c, out, M40_DTYPE_F32, c->in[0]->ndim, c->in[0]->shape);
}

/* rows are addressed through the leading dims; within a row the kernels
** and the reference read consecutive elements */
static m40_status softmax_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    const m40_tensor_desc *x = c->in[0];
    int last = x->ndim - 1;
    if (last >= 0 && x->shape[last] > 1 && (x->stride[last] != 1 || out->stride[last] != 1))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "the last dim must have stride 1 (copy "
                              "to a contiguous tensor first)");
    const int64_t rows = last >= 0 ? m40__dims_product(x, 0, last) : 1; /* -1: past 2^62 */
    if (c->ctx->is_gpu && (rows < 0 || rows > INT_MAX))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "over 2^31 rows: the GPU kernel takes fewer "
                              "(one block a row)");
    return M40_OK;
}

static m40_status softmax_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    m40__ref_softmax(&r->in[0]->desc, r->in[0]->data, &r->out->desc, r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status softmax_gpu(m40_ctx *ctx, const m40__op_run *r) {
    return m40__launched(ctx, m40k_softmax(ctx->stream, r->in[0]->desc, r->in[0]->data,
                                           r->out->desc, r->out->data), r->fn);
}
#endif

const m40__op_def m40__op_softmax = {
    .op = M40_OP_SOFTMAX, .name = "softmax", .inplace = 1, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "out", .rule = softmax_rule,
    .run_check = softmax_run_check, .run_cpu = softmax_cpu, M40__GPU(softmax_gpu)};

m40_status m40_softmax(m40_ctx *ctx, const m40_tensor *x, m40_tensor *out) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SOFTMAX);
    nd.ninputs = 1;
    const m40_tensor *in[1] = {x};
    return m40__op_eager(ctx, "m40_softmax", &nd, in, out, NULL);
}
