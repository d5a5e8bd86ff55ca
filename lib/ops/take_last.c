/* TAKE_LAST (issue 16: being written). */
#include "op.h"

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

const m40__op_def m40__op_take_last = {
    .op = M40_OP_TAKE_LAST, .name = "take_last", .inplace = 0, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "y", .rule = take_last_rule};
