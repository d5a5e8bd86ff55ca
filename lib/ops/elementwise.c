/* Elementwise ops: add, mul (b broadcast over a's leading dims), scale,
** activation (ReLU, SiLU, GELU), convert (f32 <-> f16), and the random fill.
** CPU: lib/ref/elementwise.c, lib/ref/random.c; GPU: kernels/elementwise.h. */
#include "op.h"
#include "../ref/ref.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/elementwise.h"
/* the reference's op codes are the launchers' */
_Static_assert((int)M40__UNARY_SCALE == (int)M40K_SCALE && (int)M40__UNARY_RELU == (int)M40K_RELU &&
               (int)M40__UNARY_SILU == (int)M40K_SILU && (int)M40__UNARY_GELU == (int)M40K_GELU &&
               (int)M40__BINARY_ADD == (int)M40K_ADD && (int)M40__BINARY_MUL == (int)M40K_MUL,
               "op codes of lib/ref/ref.h and kernels/elementwise.h differ");
#endif

/* ---- add, mul: a [...], b = a's shape or its trailing dims -> a's shape ---- */

static m40_status binary_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_dtype(c, 1, M40_DTYPE_F32, M40_DTYPE_F32)))
        return st;
    const m40_tensor_desc *a = c->in[0], *b = c->in[1];
    int lead = a->ndim - b->ndim;
    bool ok = lead >= 0;
    for (int i = 0; ok && i < b->ndim; i++) ok = b->shape[i] == a->shape[lead + i];
    if (!ok) return m40__rule_shape(c, "b must equal a or match its trailing dims");
    return m40__rule_out(c, out, M40_DTYPE_F32, a->ndim, a->shape);
}

/* b's desc expanded to a's rank, zero strides on the missing leading dims */
static m40_tensor_desc broadcast_desc(const m40_tensor_desc *a, const m40_tensor_desc *b) {
    m40_tensor_desc d = *a;
    int lead = a->ndim - b->ndim;
    for (int i = 0; i < a->ndim; i++) d.stride[i] = i < lead ? 0 : b->stride[i - lead];
    return d;
}

static int binary_code(const m40_node_desc *nd) {
    return nd->op == M40_OP_MUL ? M40__BINARY_MUL : M40__BINARY_ADD;
}

static m40_status binary_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    const m40_tensor *a = r->in[0], *b = r->in[1];
    m40_tensor_desc db = broadcast_desc(&a->desc, &b->desc);
    m40__ref_binary(binary_code(r->nd), &a->desc, a->data, &db, b->data, &r->out->desc,
                    r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status binary_gpu(m40_ctx *ctx, const m40__op_run *r) {
    const m40_tensor *a = r->in[0], *b = r->in[1];
    m40_tensor_desc db = broadcast_desc(&a->desc, &b->desc);
    return m40__launched(ctx, m40k_binary(ctx->stream, binary_code(r->nd), a->desc, a->data,
                                          db, b->data, r->out->desc, r->out->data), r->fn);
}
#endif

#define BINARY_DEF(sym, OP, nm)                                                              \
    const m40__op_def sym = {.op = OP, .name = nm, .inplace = 1, .min_in = 2, .max_in = 2,   \
                             .in_names = {"a", "b"}, .out_name = "out", .rule = binary_rule, \
                             .run_cpu = binary_cpu, M40__GPU(binary_gpu)};
BINARY_DEF(m40__op_add, M40_OP_ADD, "add")
BINARY_DEF(m40__op_mul, M40_OP_MUL, "mul")

/* ---- scale, activation: x -> x's shape, f32 -------------------------------- */

static m40_status unary_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32);
    if (st != M40_OK) return st;
    if (c->nd->op == M40_OP_ACTIVATION && c->nd->act != M40_ACT_RELU &&
        c->nd->act != M40_ACT_SILU && c->nd->act != M40_ACT_GELU)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "unknown act %d", (int)c->nd->act);
    return m40__rule_out(c, out, M40_DTYPE_F32, c->in[0]->ndim, c->in[0]->shape);
}

static int unary_code(const m40_node_desc *nd) {
    if (nd->op == M40_OP_SCALE) return M40__UNARY_SCALE;
    return nd->act == M40_ACT_RELU ? M40__UNARY_RELU
         : nd->act == M40_ACT_SILU ? M40__UNARY_SILU : M40__UNARY_GELU;
}

static float unary_alpha(const m40_node_desc *nd) {
    return nd->op == M40_OP_SCALE ? nd->alpha : 0.0f;
}

static m40_status unary_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    m40__ref_unary(unary_code(r->nd), unary_alpha(r->nd), &r->in[0]->desc, r->in[0]->data,
                   &r->out->desc, r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status unary_gpu(m40_ctx *ctx, const m40__op_run *r) {
    return m40__launched(ctx, m40k_unary(ctx->stream, unary_code(r->nd), unary_alpha(r->nd),
                                         r->in[0]->desc, r->in[0]->data, r->out->desc,
                                         r->out->data), r->fn);
}
#endif

const m40__op_def m40__op_scale = {
    .op = M40_OP_SCALE, .name = "scale", .inplace = 1, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "out", .rule = unary_rule, .run_cpu = unary_cpu,
    M40__GPU(unary_gpu)};
const m40__op_def m40__op_activation = {
    .op = M40_OP_ACTIVATION, .name = "activation", .inplace = 1, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "out", .rule = unary_rule, .run_cpu = unary_cpu,
    M40__GPU(unary_gpu)};

/* ---- convert: x f32/f16 -> out_dtype f32/f16 ------------------------------- */

static m40_status convert_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F16);
    if (st != M40_OK) return st;
    m40_dtype d = c->nd->out_dtype;
    if (d != M40_DTYPE_F32 && d != M40_DTYPE_F16)
        return m40__rule_fail(c, M40_ERR_DTYPE, "%s -> %s is not supported (f32<->f16 only)",
                              m40_dtype_name(c->in[0]->dtype), m40_dtype_name(d));
    return m40__rule_out(c, out, d, c->in[0]->ndim, c->in[0]->shape);
}

static m40_status convert_cpu(m40_ctx *ctx, const m40__op_run *r) {
    if (r->in[0]->desc.dtype == r->out->desc.dtype)
        return m40_tensor_copy(ctx, r->out, r->in[0]);
    m40__ref_convert(&r->in[0]->desc, r->in[0]->data, &r->out->desc, r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status convert_gpu(m40_ctx *ctx, const m40__op_run *r) {
    if (r->in[0]->desc.dtype == r->out->desc.dtype)
        return m40_tensor_copy(ctx, r->out, r->in[0]);
    return m40__launched(ctx, m40k_convert(ctx->stream, r->in[0]->desc, r->in[0]->data,
                                           r->out->desc, r->out->data), r->fn);
}
#endif

const m40__op_def m40__op_convert = {
    .op = M40_OP_CONVERT, .name = "convert", .inplace = 0, .min_in = 1, .max_in = 1,
    .in_names = {"src"}, .out_name = "dst", .rule = convert_rule, .run_cpu = convert_cpu,
    M40__GPU(convert_gpu)};

/* ---- the eager entry points -------------------------------------------------- */

static m40_status eager1(m40_ctx *ctx, const char *fn, m40_node_desc *nd, const m40_tensor *x,
                         m40_tensor *out) {
    const m40_tensor *in[1] = {x};
    nd->ninputs = 1;
    return m40__op_eager(ctx, fn, nd, in, out, NULL);
}

static m40_status binary(m40_ctx *ctx, const char *fn, m40_op op, const m40_tensor *a,
                         const m40_tensor *b, m40_tensor *out) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, op);
    nd.ninputs = 2;
    const m40_tensor *in[2] = {a, b};
    return m40__op_eager(ctx, fn, &nd, in, out, NULL);
}

m40_status m40_add(m40_ctx *ctx, const m40_tensor *a, const m40_tensor *b, m40_tensor *out) {
    return binary(ctx, "m40_add", M40_OP_ADD, a, b, out);
}

m40_status m40_mul(m40_ctx *ctx, const m40_tensor *a, const m40_tensor *b, m40_tensor *out) {
    return binary(ctx, "m40_mul", M40_OP_MUL, a, b, out);
}

m40_status m40_scale(m40_ctx *ctx, float alpha, const m40_tensor *x, m40_tensor *out) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SCALE);
    nd.alpha = alpha;
    return eager1(ctx, "m40_scale", &nd, x, out);
}

m40_status m40_activation(m40_ctx *ctx, m40_act act, const m40_tensor *x, m40_tensor *out) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ACTIVATION);
    nd.act = act;
    return eager1(ctx, "m40_activation", &nd, x, out);
}

m40_status m40_convert(m40_ctx *ctx, const m40_tensor *src, m40_tensor *dst) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_CONVERT);
    if (src && dst && src->desc.dtype == dst->desc.dtype) {
        /* same dtype (any): a copy */
        m40_status st = m40__ctx_check(ctx);
        if (st != M40_OK) return st;
        if ((st = m40__check_tensor(ctx, src, "m40_convert: src")) != M40_OK ||
            (st = m40__check_tensor(ctx, dst, "m40_convert: dst")) != M40_OK)
            return st;
        if (!m40__same_shape(&src->desc, &dst->desc)) {
            char a[96], b[96];
            return m40__err(ctx, M40_ERR_SHAPE, "m40_convert: shapes %s and %s differ",
                            m40__shape_str(&src->desc, a, sizeof a),
                            m40__shape_str(&dst->desc, b, sizeof b));
        }
        return m40_tensor_copy(ctx, dst, src);
    }
    nd.out_dtype = dst ? dst->desc.dtype : M40_DTYPE_F32;
    return eager1(ctx, "m40_convert", &nd, src, dst);
}

/* Not a graph op (no m40_op): fills t in place. */
m40_status m40_fill_random(m40_ctx *ctx, uint64_t seed, m40_random_dist dist, float a,
                           float b, m40_tensor *t) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if ((st = m40__check_tensor(ctx, t, "m40_fill_random: t")) != M40_OK) return st;
    if (t->desc.dtype != M40_DTYPE_F32 && t->desc.dtype != M40_DTYPE_F16)
        return m40__err(ctx, M40_ERR_DTYPE, "m40_fill_random: %s tensor; f32 or f16 only",
                        m40_dtype_name(t->desc.dtype));
    if (dist != M40_RANDOM_UNIFORM && dist != M40_RANDOM_NORMAL)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_fill_random: unknown dist %d", (int)dist);
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu)
        return m40__launched(ctx, m40k_fill_random(ctx->stream, t->desc, t->data, seed,
                                                   (int)dist, a, b), "m40_fill_random");
#endif
    m40__ref_fill_random(&t->desc, t->data, seed, dist, a, b);
    return M40_OK;
}
