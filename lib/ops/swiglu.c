/* SWIGLU (issue 16: being written). */
#include "op.h"

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

const m40__op_def m40__op_swiglu = {
    .op = M40_OP_SWIGLU, .name = "swiglu", .inplace = 0, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "y", .rule = swiglu_rule};

