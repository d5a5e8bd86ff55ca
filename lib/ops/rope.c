/* ROPE (issue 16: being written). */
#include "op.h"

static m40_status rope_rule(const m40__op_call *c, m40_tensor_desc *out) {
    return m40__rule_out(c, out, M40_DTYPE_F32, c->in[0]->ndim, c->in[0]->shape);
}

const m40__op_def m40__op_rope = {
    .op = M40_OP_ROPE, .name = "rope", .inplace = 1, .min_in = 2, .max_in = 2,
    .in_names = {"x", "pos"}, .out_name = "y", .rule = rope_rule};
