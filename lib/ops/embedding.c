/* EMBEDDING: a row gather from an F16 or F32 table. CPU: lib/ref/
** transformer.c (ids checked first); GPU: kernels/embedding.h (ids checked
** by the kernel: the index guard, zero rows for bad ids). */
#include "op.h"
#include "../ref/ref.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/embedding.h"
#endif

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

static m40_status embedding_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    m40_status st = m40__run_need_contiguous(c, out);
    if (st != M40_OK) return st;
    if (m40_tensor_desc_numel(c->in[0]) > INT32_MAX || c->in[1]->shape[0] > INT32_MAX)
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "the kernel takes fewer than 2^31 ids "
                              "and table rows");
    return M40_OK;
}

static m40_status embedding_cpu(m40_ctx *ctx, const m40__op_run *r) {
    const int32_t *ids = (const int32_t *)r->in[0]->data;
    const int64_t n = m40_tensor_desc_numel(&r->in[0]->desc);
    const int64_t V = r->in[1]->desc.shape[0], C = r->in[1]->desc.shape[1];
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: embedding id %d (index %lld) out of "
                            "range [0, %lld)", r->fn, (int)ids[i], (long long)i, (long long)V);
    m40__ref_embedding(n, ids, C, r->in[1]->data, r->in[1]->desc.dtype == M40_DTYPE_F16,
                       (float *)r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status embedding_gpu(m40_ctx *ctx, const m40__op_run *r) {
    const int64_t n = m40_tensor_desc_numel(&r->in[0]->desc);
    const int64_t V = r->in[1]->desc.shape[0], C = r->in[1]->desc.shape[1];
    ctx->guard_armed = true;
    return m40__launched(ctx, m40k_embedding(ctx->stream, n, (const int32_t *)r->in[0]->data,
                                             V, C, r->in[1]->data,
                                             r->in[1]->desc.dtype == M40_DTYPE_F16,
                                             (float *)r->out->data, ctx->guard), r->fn);
}
#endif

const m40__op_def m40__op_embedding = {
    .op = M40_OP_EMBEDDING, .name = "embedding", .inplace = 0, .min_in = 2, .max_in = 2,
    .in_names = {"ids", "table"}, .out_name = "y", .rule = embedding_rule,
    .run_check = embedding_run_check, .run_cpu = embedding_cpu, M40__GPU(embedding_gpu)};

m40_status m40_embedding(m40_ctx *ctx, const m40_tensor *ids, const m40_tensor *table,
                         m40_tensor *y) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_EMBEDDING);
    nd.ninputs = 2;
    const m40_tensor *in[2] = {ids, table};
    return m40__op_eager(ctx, "m40_embedding", &nd, in, y, NULL);
}
