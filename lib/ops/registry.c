/* The op registry: m40_op -> its entry (lib/ops/<family>.c), the shared
** front of every op (input count, tensor checks, the rule, the run check,
** the output check, then the CPU or GPU run) and the rules' helpers. */
#include "op.h"

#include <stdio.h>
#include <string.h>

/* Generated from M40_OP_TABLE: a new op kind needs no line here. */
static const m40__op_def *const table[M40_OP_COUNT] = {
#define M40__OP_ENTRY(e, name) [e] = &m40__op_##name,
    M40_OP_TABLE(M40__OP_ENTRY)
#undef M40__OP_ENTRY
};

const m40__op_def *m40__op_get(m40_op op) {
    return (int)op >= 0 && op < M40_OP_COUNT ? table[op] : NULL;
}

const char *m40_op_name(m40_op op) {
    const m40__op_def *d = m40__op_get(op);
    return d ? d->name : "?";
}
int m40_op_inplace(m40_op op) {
    const m40__op_def *d = m40__op_get(op);
    return d ? d->inplace : 0;
}
int m40_op_runs(m40_op op) {
    const m40__op_def *d = m40__op_get(op);
    return d && d->run_cpu ? 1 : 0;
}

/* The op's parameters, also what every eager entry point fills. */
void m40_node_desc_init(m40_node_desc *nd, m40_op op) {
    if (!nd) return;
    memset(nd, 0, sizeof *nd);
    nd->struct_size = sizeof *nd;
    nd->op = op;
    nd->output = M40_TENSOR_NEW;
    for (int i = 0; i < M40_NODE_MAX_INPUTS; i++) nd->inputs[i] = M40_NO_TENSOR;
    nd->out_dtype = M40_DTYPE_F32;
    nd->alpha = 1.0f;
    nd->groups = 1;
    nd->stride[0] = nd->stride[1] = 1;
    nd->dilation[0] = nd->dilation[1] = 1;
    nd->eps = 1e-5f;
    nd->rope_pairs = M40_ROPE_ADJACENT;
    nd->rope_theta = 10000.0f;
    nd->rope_scale = 1.0f;
    m40_sampler_desc_init(&nd->sampler);
}

/* ---- helpers of the rules ------------------------------------------------ */

m40_status m40__rule_fail(const m40__op_call *c, m40_status st, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return m40__err(c->ctx, st, "%s: %s", c->fn, msg);
}

static const char *in_name(const m40__op_call *c, int i) {
    const m40__op_def *d = m40__op_get(c->nd->op);
    return d && i < M40_NODE_MAX_INPUTS && d->in_names[i] ? d->in_names[i] : "?";
}

m40_status m40__rule_dtype(const m40__op_call *c, int i, m40_dtype d1, m40_dtype d2) {
    const m40_tensor_desc *d = c->in[i];
    if (!d || d->dtype == d1 || d->dtype == d2) return M40_OK;
    if (d1 == d2)
        return m40__rule_fail(c, M40_ERR_DTYPE, "input %d (%s) is %s, expected %s", i,
                              in_name(c, i), m40_dtype_name(d->dtype), m40_dtype_name(d1));
    return m40__rule_fail(c, M40_ERR_DTYPE, "input %d (%s) is %s, expected %s or %s", i,
                          in_name(c, i), m40_dtype_name(d->dtype), m40_dtype_name(d1),
                          m40_dtype_name(d2));
}

m40_status m40__rule_ndim(const m40__op_call *c, int i, int lo, int hi) {
    const m40_tensor_desc *d = c->in[i];
    if (!d || (d->ndim >= lo && d->ndim <= hi)) return M40_OK;
    char s[96];
    if (lo == hi)
        return m40__rule_fail(c, M40_ERR_SHAPE, "input %d (%s) %s: expected %d dims", i,
                              in_name(c, i), m40__shape_str(d, s, sizeof s), lo);
    return m40__rule_fail(c, M40_ERR_SHAPE, "input %d (%s) %s: expected %d..%d dims", i,
                          in_name(c, i), m40__shape_str(d, s, sizeof s), lo, hi);
}

m40_status m40__rule_shape(const m40__op_call *c, const char *what) {
    char a[512] = "", s[96];
    for (int i = 0; i < c->nd->ninputs && i < M40_NODE_MAX_INPUTS; i++) {
        if (!c->in[i]) continue;
        size_t n = strlen(a);
        snprintf(a + n, sizeof a - n, "%s%s %s", n ? ", " : "", in_name(c, i),
                 m40__shape_str(c->in[i], s, sizeof s));
    }
    return m40__rule_fail(c, M40_ERR_SHAPE, "%s: %s", a, what);
}

int64_t m40__dims_product(const m40_tensor_desc *d, int lo, int hi) {
    int64_t n = 1;
    for (int i = lo; i < hi; i++)
        if (m40__mul_ok(n, d->shape[i], M40__OP_BYTES_MAX, &n)) return -1;
    return n;
}

m40_status m40__rule_out(const m40__op_call *c, m40_tensor_desc *out, m40_dtype dt, int ndim,
                         const int64_t *shape) {
    int64_t n = (int64_t)m40_dtype_size(dt);
    for (int i = 0; i < ndim; i++)
        if (m40__mul_ok(n, shape[i], M40__OP_BYTES_MAX, &n)) {
            m40_tensor_desc d = {.dtype = dt, .ndim = ndim};
            memcpy(d.shape, shape, (size_t)ndim * sizeof *shape);
            char s[96];
            return m40__rule_fail(c, M40_ERR_SHAPE, "the output %s would take 2^62 bytes or more",
                                  m40__shape_str(&d, s, sizeof s));
        }
    m40_tensor_desc_make(out, dt, ndim, shape);
    return M40_OK;
}

m40_status m40__rule_linear_out(const m40__op_call *c, int64_t N, m40_tensor_desc *out) {
    const m40_tensor_desc *x = c->in[0];
    if (m40__dims_product(x, 0, x->ndim) < 0)
        return m40__rule_shape(c, "x has 2^62 elements or more");
    int64_t s[M40_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) s[i] = x->shape[i];
    s[x->ndim - 1] = N;
    return m40__rule_out(c, out, M40_DTYPE_F32, x->ndim, s);
}

m40_status m40__run_need_f32(const m40__op_call *c, int i) {
    const m40_tensor_desc *d = c->in[i];
    if (!d || d->dtype == M40_DTYPE_F32) return M40_OK;
    return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "input %d (%s) is %s; the kernels take f32 "
                          "only for now", i, in_name(c, i), m40_dtype_name(d->dtype));
}

m40_status m40__run_need_contiguous(const m40__op_call *c, const m40_tensor_desc *out) {
    for (int i = 0; i < c->nd->ninputs; i++)
        if (c->in[i] && !m40_tensor_desc_is_contiguous(c->in[i]))
            return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "%s must be contiguous",
                                  in_name(c, i));
    if (out && !m40_tensor_desc_is_contiguous(out))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "%s must be contiguous",
                              m40__op_get(c->nd->op)->out_name);
    return M40_OK;
}

/* ---- the shared front ------------------------------------------------------ */

m40_status m40__op_infer(const m40__op_call *c, m40_tensor_desc *out) {
    const m40__op_def *def = m40__op_get(c->nd->op);
    if (!def) return m40__err(c->ctx, M40_ERR_INVALID_ARG, "%s: unknown op %d", c->fn, (int)c->nd->op);
    int n = c->nd->ninputs;
    if (n < def->min_in || n > def->max_in) {
        if (def->min_in == def->max_in)
            return m40__rule_fail(c, M40_ERR_INVALID_ARG, "has %d inputs, the op takes %d", n,
                                  def->min_in);
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "has %d inputs, the op takes %d..%d", n,
                              def->min_in, def->max_in);
    }
    for (int i = 0; i < def->min_in; i++)
        if (!c->in[i])
            return m40__rule_fail(c, M40_ERR_INVALID_ARG, "input %d (%s) is required", i,
                                  in_name(c, i));
    return def->rule(c, out);
}

/* m40__check_tensor, with the argument's name formatted only on failure. */
static m40_status check_tensor(m40_ctx *ctx, const char *fn, const char *name,
                               const m40_tensor *t) {
    if (t && t->ctx == ctx && t->loc == (ctx->is_gpu ? M40_LOC_DEVICE : M40_LOC_HOST))
        return M40_OK;
    char what[96];
    snprintf(what, sizeof what, "%s: %s", fn, name ? name : "input");
    return m40__check_tensor(ctx, t, what);
}

m40_status m40__op_eager(m40_ctx *ctx, const char *fn, const m40_node_desc *nd,
                         const m40_tensor *const *in, m40_tensor *out,
                         const struct m40__conv_sel *sel) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    const m40__op_def *def = m40__op_get(nd->op);
    if (!def) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown op %d", fn, (int)nd->op);
    m40__op_call c = {.ctx = ctx, .fn = fn, .nd = nd};
    m40__op_run r = {.fn = fn, .nd = nd, .out = out, .sel = sel};
    for (int i = 0; i < nd->ninputs; i++) {
        if (!in[i] && i >= def->min_in) continue; /* an absent optional input */
        if ((st = check_tensor(ctx, fn, def->in_names[i], in[i])) != M40_OK) return st;
        c.in[i] = &in[i]->desc;
        r.in[i] = in[i];
    }
    if ((st = check_tensor(ctx, fn, def->out_name, out)) != M40_OK) return st;
    m40_tensor_desc od;
    if ((st = m40__op_infer(&c, &od)) != M40_OK) return st;
    if (out->desc.dtype != od.dtype)
        return m40__err(ctx, M40_ERR_DTYPE, "%s: %s is %s, expected %s", fn, def->out_name,
                        m40_dtype_name(out->desc.dtype), m40_dtype_name(od.dtype));
    if (!m40__same_shape(&out->desc, &od)) {
        char a[96], b[96];
        return m40__err(ctx, M40_ERR_SHAPE, "%s: %s is %s, expected %s", fn, def->out_name,
                        m40__shape_str(&out->desc, a, sizeof a), m40__shape_str(&od, b, sizeof b));
    }
    if (def->run_check && (st = def->run_check(&c, &out->desc)) != M40_OK) return st;
    if (!def->run_cpu)
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: %s has no kernel yet", fn, def->name);
    /* an empty output: nothing to compute, and nothing any op writes besides
    ** (a residual step, a KV append) when its output has no elements; empty
    ** tensors have no storage, so no kernel or reference sees them */
    if (m40_tensor_desc_numel(&out->desc) == 0) return M40_OK;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) return def->run_gpu(ctx, &r);
#endif
    return def->run_cpu(ctx, &r);
}
