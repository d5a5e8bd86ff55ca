/* SAMPLE (issue 16: being written). */
#include "op.h"

static m40_status sample_rule(const m40__op_call *c, m40_tensor_desc *out) {
    int64_t s[2] = {c->in[0]->shape[0], 2};
    return m40__rule_out(c, out, M40_DTYPE_F32, 2, s);
}

const m40__op_def m40__op_sample = {
    .op = M40_OP_SAMPLE, .name = "sample", .inplace = 0, .min_in = 1, .max_in = 3,
    .in_names = {"logits", "history", "pos"}, .out_name = "out", .rule = sample_rule};
