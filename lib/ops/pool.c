/* Pooling: max / average over a window (m40_pool2d) and the global average
** (m40_global_avgpool), NCHW or NHWC. CPU: lib/ref/conv.c; GPU: kernels/pool.h. */
#include "op.h"

#include <string.h>
#include "../ref/ref.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/pool.h"
#endif

#include <limits.h>
#include <string.h>

/* x in NCHW order whatever the layout: N, C, H, W */
static void nchw(const m40_node_desc *nd, const m40_tensor_desc *x, int64_t v[4]) {
    const int64_t *s = x->shape;
    bool nhwc = nd->layout == M40_LAYOUT_NHWC;
    v[0] = s[0], v[1] = nhwc ? s[3] : s[1], v[2] = nhwc ? s[1] : s[2], v[3] = nhwc ? s[2] : s[3];
}

static int64_t out_dim(int64_t in, int pad, int k, int stride) {
    return (in + 2 * (int64_t)pad - k) / stride + 1;
}

/* x f32 [N,C,H,W] (NHWC: [N,H,W,C]) -> [N,C,P,Q] ([N,P,Q,C]); GLOBAL_AVG: [N,C] */
static m40_status pool_rule(const m40__op_call *c, m40_tensor_desc *out) {
    const m40_node_desc *nd = c->nd;
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 4, 4)))
        return st;
    if (nd->layout != M40_LAYOUT_NCHW && nd->layout != M40_LAYOUT_NHWC)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "unknown layout %d", (int)nd->layout);
    for (int k = 0; k < 4; k++)
        if (c->in[0]->shape[k] > INT_MAX)
            return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "x dim %d over 2^31", k);
    int64_t x[4];
    nchw(nd, c->in[0], x);
    if (nd->pool == M40_POOL_GLOBAL_AVG) return m40__rule_out(c, out, M40_DTYPE_F32, 2, x);
    if (nd->pool != M40_POOL_MAX && nd->pool != M40_POOL_AVG)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "unknown pool kind %d", (int)nd->pool);
    const int *k = nd->kernel, *s = nd->stride, *p = nd->pad;
    if (k[0] < 1 || k[1] < 1 || k[0] > M40__OP_PARAM_MAX || k[1] > M40__OP_PARAM_MAX ||
        s[0] < 1 || s[1] < 1 || s[0] > M40__OP_PARAM_MAX || s[1] > M40__OP_PARAM_MAX ||
        p[0] < 0 || p[1] < 0 || 2 * (int64_t)p[0] > k[0] || 2 * (int64_t)p[1] > k[1])
        return m40__rule_fail(c, M40_ERR_INVALID_ARG,
                              "window %dx%d, stride %dx%d, pad %dx%d: need window and stride "
                              "1..%d and 0 <= pad <= window/2", k[0], k[1], s[0], s[1], p[0],
                              p[1], M40__OP_PARAM_MAX);
    if (x[2] + 2 * (int64_t)p[0] < k[0] || x[3] + 2 * (int64_t)p[1] < k[1])
        return m40__rule_fail(c, M40_ERR_SHAPE, "window %dx%d larger than the padded input",
                              k[0], k[1]);
    int64_t P = out_dim(x[2], p[0], k[0], s[0]), Q = out_dim(x[3], p[1], k[1], s[1]);
    int64_t o[4] = {x[0], x[1], P, Q};
    if (nd->layout == M40_LAYOUT_NHWC) o[1] = P, o[2] = Q, o[3] = x[1];
    return m40__rule_out(c, out, M40_DTYPE_F32, 4, o);
}

static m40_status pool_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    m40_status st = m40__run_need_contiguous(c, out);
    if (st != M40_OK || !c->ctx->is_gpu) return st;
    int64_t x[4];
    nchw(c->nd, c->in[0], x);
    if (x[0] * x[1] > INT_MAX || (c->nd->pool == M40_POOL_GLOBAL_AVG && x[2] * x[3] > INT_MAX))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "N·C or H·W over 2^31");
    return M40_OK;
}

static m40_status pool_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    const m40_node_desc *nd = r->nd;
    int64_t x[4];
    nchw(nd, &r->in[0]->desc, x);
    if (nd->pool == M40_POOL_GLOBAL_AVG) {
        m40__ref_global_avgpool(nd->layout, x[0], x[1], x[2] * x[3], r->in[0]->data, r->out->data);
        return M40_OK;
    }
    int64_t P = out_dim(x[2], nd->pad[0], nd->kernel[0], nd->stride[0]);
    int64_t Q = out_dim(x[3], nd->pad[1], nd->kernel[1], nd->stride[1]);
    m40__ref_pool2d(nd->pool, nd->kernel[0], nd->kernel[1], nd->stride[0], nd->stride[1],
                    nd->pad[0], nd->pad[1], nd->layout, x[0], x[1], x[2], x[3], P, Q,
                    r->in[0]->data, r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status pool_gpu(m40_ctx *ctx, const m40__op_run *r) {
    const m40_node_desc *nd = r->nd;
    int64_t x[4];
    nchw(nd, &r->in[0]->desc, x);
    int nhwc = nd->layout == M40_LAYOUT_NHWC;
    if (nd->pool == M40_POOL_GLOBAL_AVG)
        return m40__launched(ctx, m40k_global_avgpool(ctx->stream, nhwc, (int)x[0], (int)x[1],
                                                      (int)(x[2] * x[3]), r->in[0]->data,
                                                      r->out->data), r->fn);
    int64_t P = out_dim(x[2], nd->pad[0], nd->kernel[0], nd->stride[0]);
    int64_t Q = out_dim(x[3], nd->pad[1], nd->kernel[1], nd->stride[1]);
    return m40__launched(ctx, m40k_pool2d(ctx->stream, (int)nd->pool, nd->kernel[0],
                                          nd->kernel[1], nd->stride[0], nd->stride[1],
                                          nd->pad[0], nd->pad[1], nhwc, (int)x[0], (int)x[1],
                                          (int)x[2], (int)x[3], (int)P, (int)Q,
                                          r->in[0]->data, r->out->data), r->fn);
}
#endif

const m40__op_def m40__op_pool2d = {
    .op = M40_OP_POOL2D, .name = "pool2d", .inplace = 0, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "y", .rule = pool_rule, .run_check = pool_run_check,
    .run_cpu = pool_cpu, M40__GPU(pool_gpu)};

void m40_pool2d_desc_init(m40_pool2d_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->kind = M40_POOL_MAX;
    d->kernel_h = d->kernel_w = 2;
    d->stride_h = d->stride_w = 2;
    d->layout = M40_LAYOUT_NCHW;
}

m40_status m40_pool2d(m40_ctx *ctx, const m40_pool2d_desc *d, const m40_tensor *x,
                      m40_tensor *y) {
    static const char fn[] = "m40_pool2d";
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: desc is NULL", fn);
    if (d->struct_size < sizeof *d)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: desc->struct_size is %zu, expected %zu "
                        "(fill it with m40_pool2d_desc_init)", fn, d->struct_size, sizeof *d);
    m40_pool kind = d->kind;
    if (kind != M40_POOL_MAX && kind != M40_POOL_AVG)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: pool kind %d is not MAX or AVG%s", fn,
                        (int)kind, kind == M40_POOL_GLOBAL_AVG ? " (use m40_global_avgpool)" : "");
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.pool = kind;
    nd.kernel[0] = d->kernel_h, nd.kernel[1] = d->kernel_w;
    nd.stride[0] = d->stride_h, nd.stride[1] = d->stride_w;
    nd.pad[0] = d->pad_h, nd.pad[1] = d->pad_w;
    nd.layout = d->layout;
    nd.ninputs = 1;
    const m40_tensor *in[1] = {x};
    return m40__op_eager(ctx, fn, &nd, in, y, NULL);
}

m40_status m40_global_avgpool(m40_ctx *ctx, m40_layout layout, const m40_tensor *x,
                              m40_tensor *y) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.pool = M40_POOL_GLOBAL_AVG;
    nd.layout = layout;
    nd.ninputs = 1;
    const m40_tensor *in[1] = {x};
    return m40__op_eager(ctx, "m40_global_avgpool", &nd, in, y, NULL);
}
