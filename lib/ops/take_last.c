/* TAKE_LAST: the last position of a sequence batch (the prefill's logits
** need only it). A strided copy: memcpy per row on the CPU, one
** cudaMemcpy2DAsync on a GPU (kernels/take_last.h). Graph only. */
#include "op.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/take_last.h"
#endif

#include <string.h>

/* ---- take_last: x [B,T,C] -> the last position [B,1,C] ---------------------- */

static m40_status take_last_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 3, 3)))
        return st;
    const int64_t *x = c->in[0]->shape;
    if (x[1] < 1) return m40__rule_shape(c, "T must be >= 1");
    int64_t s[3] = {x[0], 1, x[2]};
    return m40__rule_out(c, out, M40_DTYPE_F32, 3, s);
}

static m40_status take_last_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    return m40__run_need_contiguous(c, out);
}

static m40_status take_last_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    const int64_t *s = r->in[0]->desc.shape;
    const float *x = (const float *)r->in[0]->data;
    float *y = (float *)r->out->data;
    for (int64_t b = 0; b < s[0]; b++)
        memcpy(y + b * s[2], x + (b * s[1] + s[1] - 1) * s[2], (size_t)s[2] * sizeof *y);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status take_last_gpu(m40_ctx *ctx, const m40__op_run *r) {
    const int64_t *s = r->in[0]->desc.shape;
    return m40__launched(ctx, m40k_take_last(ctx->stream, s[0], s[1], s[2],
                                             (const float *)r->in[0]->data,
                                             (float *)r->out->data), r->fn);
}
#endif

const m40__op_def m40__op_take_last = {
    .op = M40_OP_TAKE_LAST, .name = "take_last", .inplace = 0, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "y", .rule = take_last_rule,
    .run_check = take_last_run_check, .run_cpu = take_last_cpu, M40__GPU(take_last_gpu)};
