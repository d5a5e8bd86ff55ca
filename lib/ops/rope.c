/* ROPE: rotary position embedding over the first heads·head_dim values of
** each row, positions from an I32 tensor. CPU: lib/ref/transformer.c;
** GPU: kernels/rope.h (positions checked by the kernel: the index guard). */
#include "op.h"
#include "../ref/ref.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/rope.h"
#endif

#include <math.h>

void m40_rope_desc_init(m40_rope_desc *d) {
    if (!d) return;
    d->struct_size = sizeof *d;
    d->heads = 1;
    d->head_dim = 128;
    d->rope_dims = 128;
    d->pairs = M40_ROPE_ADJACENT;
    d->theta = 10000.0f;
    d->pos_scale = 1.0f;
}

void m40__rope_desc_of(const m40_node_desc *nd, m40_rope_desc *d) {
    m40_rope_desc_init(d);
    d->heads = nd->heads;
    d->head_dim = nd->head_dim;
    d->rope_dims = nd->rope_dims;
    d->pairs = nd->rope_pairs;
    d->theta = nd->rope_theta;
    d->pos_scale = nd->rope_scale;
}

m40_status m40__rope_rule_params(const m40__op_call *c, int head_dim) {
    const m40_node_desc *nd = c->nd;
    if (nd->rope_dims < 2 || nd->rope_dims % 2 || nd->rope_dims > head_dim)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "rope_dims %d: need an even number in "
                              "2 .. head_dim (%d)", nd->rope_dims, head_dim);
    if (nd->rope_pairs != M40_ROPE_ADJACENT && nd->rope_pairs != M40_ROPE_HALF)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "rope_pairs %d: need M40_ROPE_ADJACENT "
                              "or M40_ROPE_HALF", (int)nd->rope_pairs);
    if (!(nd->rope_theta > 0.0f) || isinf(nd->rope_theta))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "theta (rope_theta) must be finite and > 0");
    if (!(nd->rope_scale > 0.0f) || isinf(nd->rope_scale))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "pos_scale (rope_scale) must be finite and "
                              "> 0");
    return M40_OK;
}

m40_status m40__rope_cpu_positions(m40_ctx *ctx, const char *fn, const int32_t *pos, int64_t rows) {
    for (int64_t i = 0; i < rows; i++)
        if (pos[i] < -1)
            return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: position %d (row %lld) is negative "
                            "(-1 marks padding)", fn, (int)pos[i], (long long)i);
    return M40_OK;
}

/* x f32 [...,W], pos i32 with one value per row -> x's shape */
static m40_status rope_rule(const m40__op_call *c, m40_tensor_desc *out) {
    const m40_node_desc *nd = c->nd;
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 1, M40_MAX_DIMS)) ||
        (st = m40__rule_dtype(c, 1, M40_DTYPE_I32, M40_DTYPE_I32)))
        return st;
    if (nd->heads < 1 || nd->heads > M40__OP_PARAM_MAX)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "heads %d: need 1 .. 2^20", nd->heads);
    if (nd->head_dim < 1 || nd->head_dim > (1 << 16))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "head_dim %d: need 1 .. 2^16",
                              nd->head_dim);
    if ((st = m40__rope_rule_params(c, nd->head_dim))) return st;
    const m40_tensor_desc *x = c->in[0];
    if (x->shape[x->ndim - 1] < (int64_t)nd->heads * nd->head_dim)
        return m40__rule_fail(c, M40_ERR_SHAPE, "a row of x holds %lld values, fewer than "
                              "heads·head_dim = %d·%d", (long long)x->shape[x->ndim - 1],
                              nd->heads, nd->head_dim);
    int64_t rows = m40__dims_product(x, 0, x->ndim - 1);
    if (rows < 0 || m40__dims_product(x, 0, x->ndim) < 0)
        return m40__rule_shape(c, "x is too large");
    if (m40_tensor_desc_numel(c->in[1]) != rows)
        return m40__rule_shape(c, "need one position per row of x");
    return m40__rule_out(c, out, M40_DTYPE_F32, x->ndim, x->shape);
}

static m40_status rope_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    const m40_tensor_desc *x = c->in[0], *ds[2] = {x, out};
    int64_t rows = 0, rs;
    for (int i = 0; i < 2; i++)
        if ((ds[i]->shape[ds[i]->ndim - 1] > 1 && ds[i]->stride[ds[i]->ndim - 1] != 1) ||
            m40__rows_of(ds[i], &rows, &rs) != 0)
            return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "%s: the last dim must have stride "
                                  "1 and the leading dims one row stride", i ? "y" : "x");
    if (!m40_tensor_desc_is_contiguous(c->in[1]))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "pos must be contiguous");
    if (rows > INT32_MAX || x->shape[x->ndim - 1] > (1 << 30))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "the kernels take fewer than 2^31 rows "
                              "of at most 2^30 values");
    return M40_OK;
}

typedef struct rope_args {
    m40_rope_desc d;
    int64_t rows, W, xs, ys;
} rope_args;

static rope_args rope_args_of(const m40__op_run *r) {
    rope_args a;
    const m40_tensor_desc *x = &r->in[0]->desc;
    m40__rope_desc_of(r->nd, &a.d);
    a.W = x->shape[x->ndim - 1];
    m40__rows_of(x, &a.rows, &a.xs);
    m40__rows_of(&r->out->desc, &a.rows, &a.ys);
    return a;
}

static m40_status rope_cpu(m40_ctx *ctx, const m40__op_run *r) {
    rope_args a = rope_args_of(r);
    const int32_t *pos = (const int32_t *)r->in[1]->data;
    m40_status st = m40__rope_cpu_positions(ctx, r->fn, pos, a.rows);
    if (st != M40_OK) return st;
    m40__ref_rope(&a.d, a.rows, a.W, (const float *)r->in[0]->data, a.xs, pos,
                  (float *)r->out->data, a.ys);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status rope_gpu(m40_ctx *ctx, const m40__op_run *r) {
    rope_args a = rope_args_of(r);
    ctx->guard_armed = true;
    return m40__launched(ctx, m40k_rope(ctx->stream, a.d.heads, a.d.head_dim, a.d.rope_dims,
                                        (int)a.d.pairs, a.d.theta, a.d.pos_scale, a.rows, a.W,
                                        (const float *)r->in[0]->data, a.xs,
                                        (const int32_t *)r->in[1]->data,
                                        (float *)r->out->data, a.ys, ctx->guard), r->fn);
}
#endif

const m40__op_def m40__op_rope = {
    .op = M40_OP_ROPE, .name = "rope", .inplace = 1, .min_in = 2, .max_in = 2,
    .in_names = {"x", "pos"}, .out_name = "y", .rule = rope_rule,
    .run_check = rope_run_check, .run_cpu = rope_cpu, M40__GPU(rope_gpu)};

m40_status m40_rope(m40_ctx *ctx, const m40_rope_desc *d, m40_tensor *x, const m40_tensor *pos) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d || d->struct_size < sizeof *d)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_rope: %s", d ? "struct_size too small "
                        "(start from m40_rope_desc_init)" : "d is NULL");
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ROPE);
    nd.ninputs = 2;
    nd.heads = d->heads;
    nd.head_dim = d->head_dim;
    nd.rope_dims = d->rope_dims;
    nd.rope_pairs = d->pairs;
    nd.rope_theta = d->theta;
    nd.rope_scale = d->pos_scale;
    const m40_tensor *in[2] = {x, pos};
    return m40__op_eager(ctx, "m40_rope", &nd, in, x, NULL);
}
