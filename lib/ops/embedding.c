/* EMBEDDING (issue 16: being written). */
#include "op.h"

/* ---- embedding: ids i32 [...], table [V,C] -> f32 [...,C] ------------------ */

static m40_status embedding_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_I32, M40_DTYPE_I32)) ||
        (st = m40__rule_dtype(c, 1, M40_DTYPE_F32, M40_DTYPE_F16)) ||
        (st = m40__rule_ndim(c, 0, 0, M40_MAX_DIMS - 1)) || (st = m40__rule_ndim(c, 1, 2, 2)))
        return st;
    const m40_tensor_desc *ids = c->in[0];
    int64_t s[M40_MAX_DIMS];
    for (int i = 0; i < ids->ndim; i++) s[i] = ids->shape[i];
    s[ids->ndim] = c->in[1]->shape[1];
    return m40__rule_out(c, out, M40_DTYPE_F32, ids->ndim + 1, s);
}

const m40__op_def m40__op_embedding = {
    .op = M40_OP_EMBEDDING, .name = "embedding", .inplace = 0, .min_in = 2, .max_in = 2,
    .in_names = {"ids", "table"}, .out_name = "y", .rule = embedding_rule};

