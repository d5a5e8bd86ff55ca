/* RMSNORM (issue 16: being written). */
#include "op.h"

#include <math.h>

/* ---- rmsnorm: x [...,C], w [C] (eps); layernorm: x, w [C], b [C] (eps) ---- */

static m40_status rms_rule(const m40__op_call *c, m40_tensor_desc *out) {
    int n = c->nd->op == M40_OP_RMSNORM ? 2 : 3;
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 1, M40_MAX_DIMS)))
        return st;
    const m40_tensor_desc *x = c->in[0];
    for (int i = 1; i < n; i++) {
        if ((st = m40__rule_dtype(c, i, M40_DTYPE_F32, M40_DTYPE_F16)) ||
            (st = m40__rule_ndim(c, i, 1, 1)))
            return st;
        if (c->in[i]->shape[0] != x->shape[x->ndim - 1])
            return m40__rule_shape(c, "need x [...,C] and weights [C]");
    }
    if (!(c->nd->eps > 0.0f) || isinf(c->nd->eps))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "eps must be finite and > 0");
    return m40__rule_out(c, out, M40_DTYPE_F32, x->ndim, x->shape);
}

const m40__op_def m40__op_rmsnorm = {
    .op = M40_OP_RMSNORM, .name = "rmsnorm", .inplace = 1, .min_in = 2, .max_in = 2,
    .in_names = {"x", "w"}, .out_name = "y", .rule = rms_rule};

