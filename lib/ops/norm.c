/* RMSNORM, with the fused residual of a transformer layer. CPU:
** lib/ref/transformer.c; GPU: kernels/norm.h. */
#include "op.h"
#include "../ref/ref.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/norm.h"
#endif

#include <math.h>

/* ---- rmsnorm: x [...,C], w [C], residual [...,C]? (eps, alpha) ------------- */

/* x is written (the residual stream) only when a residual comes with it */
static unsigned rms_state_mask(const m40__op_call *c) {
    return c->nd->ninputs > 2 && c->in[2] ? 1u : 0u;
}

static m40_status rms_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 1, M40_MAX_DIMS)) ||
        (st = m40__rule_dtype(c, 1, M40_DTYPE_F32, M40_DTYPE_F16)) ||
        (st = m40__rule_ndim(c, 1, 1, 1)))
        return st;
    const m40_tensor_desc *x = c->in[0], *r = c->nd->ninputs > 2 ? c->in[2] : NULL;
    if (c->in[1]->shape[0] != x->shape[x->ndim - 1])
        return m40__rule_shape(c, "need x [...,C] and w [C]");
    if (r) {
        if ((st = m40__rule_dtype(c, 2, M40_DTYPE_F32, M40_DTYPE_F32))) return st;
        if (!m40__same_shape(r, x)) return m40__rule_shape(c, "the residual must have x's shape");
        if (c->nd->alpha != 0.0f && c->nd->alpha != 1.0f)
            return m40__rule_fail(c, M40_ERR_INVALID_ARG, "alpha %g: with a residual it must "
                                  "be 1 (x += residual) or 0 (x = residual)",
                                  (double)c->nd->alpha);
    }
    if (!(c->nd->eps > 0.0f) || isinf(c->nd->eps))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "eps must be finite and > 0");
    if (m40__dims_product(x, 0, x->ndim) < 0) return m40__rule_shape(c, "x is too large");
    return m40__rule_out(c, out, M40_DTYPE_F32, x->ndim, x->shape);
}

/* The kernels and the reference address rows by one stride; each row's
** last dim is contiguous; the weights are contiguous. */
static m40_status rms_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    const m40_tensor_desc *x = c->in[0], *w = c->in[1];
    const m40_tensor_desc *r = c->nd->ninputs > 2 ? c->in[2] : NULL;
    const m40_tensor_desc *all[3] = {x, r, out};
    const int64_t C = x->shape[x->ndim - 1];
    int64_t rows, rs;
    for (int i = 0; i < 3; i++) {
        if (!all[i]) continue;
        if ((C > 1 && all[i]->stride[all[i]->ndim - 1] != 1) ||
            m40__rows_of(all[i], &rows, &rs) != 0)
            return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "%s: the last dim must have stride 1 "
                                  "and the leading dims one row stride (copy to a contiguous "
                                  "tensor first)", i == 0 ? "x" : i == 1 ? "residual" : "y");
    }
    if (C > 1 && w->stride[0] != 1)
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "w must be contiguous");
    /* int indices in the kernels, with room for a block's stride past C */
    if (rows > INT32_MAX || C > (1 << 30))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "%lld rows of %lld: the kernels take "
                              "fewer than 2^31 rows of at most 2^30", (long long)rows,
                              (long long)C);
    return M40_OK;
}

typedef struct rms_args {
    int64_t rows, C, xs, rs, ys;
    int mode;
} rms_args;

static rms_args rms_args_of(const m40__op_run *r) {
    rms_args a = {0};
    const m40_tensor *res = r->nd->ninputs > 2 ? r->in[2] : NULL;
    const m40_tensor_desc *x = &r->in[0]->desc;
    a.C = x->shape[x->ndim - 1];
    m40__rows_of(x, &a.rows, &a.xs);
    m40__rows_of(&r->out->desc, &a.rows, &a.ys);
    if (res) {
        m40__rows_of(&res->desc, &a.rows, &a.rs);
        a.mode = r->nd->alpha == 0.0f ? 2 : 1;
    }
    return a;
}

static m40_status rms_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    rms_args a = rms_args_of(r);
    const m40_tensor *res = r->nd->ninputs > 2 ? r->in[2] : NULL;
    m40__ref_rmsnorm(a.rows, a.C, r->nd->eps, a.mode, (float *)r->in[0]->data, a.xs,
                     res ? (const float *)res->data : NULL, a.rs, r->in[1]->data,
                     r->in[1]->desc.dtype == M40_DTYPE_F16, (float *)r->out->data, a.ys);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status rms_gpu(m40_ctx *ctx, const m40__op_run *r) {
    rms_args a = rms_args_of(r);
    const m40_tensor *res = r->nd->ninputs > 2 ? r->in[2] : NULL;
    return m40__launched(ctx, m40k_rmsnorm(ctx->stream, a.rows, a.C, r->nd->eps, a.mode,
                                           (float *)r->in[0]->data, a.xs,
                                           res ? (const float *)res->data : NULL, a.rs,
                                           r->in[1]->data,
                                           r->in[1]->desc.dtype == M40_DTYPE_F16,
                                           (float *)r->out->data, a.ys), r->fn);
}
#endif

/* its weights: a DRAM miss (they left L2 a step ago) that the kernel waits
** on, as LINEAR_Q's fused norm does (lib/ops/quant_linear.c) */
static const m40_tensor *rms_l2_hint(const m40_node_desc *nd, const m40_tensor *const *in) {
    (void)nd;
    return in[1];
}

const m40__op_def m40__op_rmsnorm = {
    .op = M40_OP_RMSNORM, .name = "rmsnorm", .inplace = 1, .min_in = 2, .max_in = 3,
    .in_names = {"x", "w", "residual"}, .out_name = "y", .state_mask = rms_state_mask,
    .rule = rms_rule, .run_check = rms_run_check, .run_cpu = rms_cpu, .l2_hint = rms_l2_hint,
    M40__GPU(rms_gpu)};

m40_status m40_rmsnorm(m40_ctx *ctx, float eps, m40_tensor *x, const m40_tensor *w,
                       const m40_tensor *residual, m40_tensor *y) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_RMSNORM);
    nd.eps = eps;
    nd.ninputs = residual ? 3 : 2;
    if (residual && x && y && (x == y || (x->data && x->data == y->data))) {
        m40_status st = m40__ctx_check(ctx);
        if (st != M40_OK) return st;
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_rmsnorm: with a residual, y must not "
                        "be x (x holds the updated residual stream)");
    }
    const m40_tensor *in[3] = {x, w, residual};
    return m40__op_eager(ctx, "m40_rmsnorm", &nd, in, y, NULL);
}
