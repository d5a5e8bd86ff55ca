/* 2-D convolution with the fused epilogue y = act(scale·conv(x, w) + bias
** + residual), NCHW or NHWC. CPU: lib/ref/conv.c; GPU: kernels/conv.h (NHWC:
** implicit GEMM / Winograd through the SGEMM; NCHW: the direct kernel), or
** cuDNN when the node or the context chose it (lib/conv_engine/). */
#include "op.h"
#include "../ref/ref.h"
#include "../conv_engine/conv_engine.h"
#include "../../kernels/conv_plan.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/conv.h"
#endif

#include <limits.h>

enum { IX = 0, IW = 1, IBIAS = 2, IRES = 3, ISCALE = 4 }; /* input slots */

m40_conv2d_desc m40__conv2d_desc_of(const m40_node_desc *nd) {
    m40_conv2d_desc cd;
    m40_conv2d_desc_init(&cd);
    cd.stride_h = nd->stride[0];
    cd.stride_w = nd->stride[1];
    cd.pad_h = nd->pad[0];
    cd.pad_w = nd->pad[1];
    cd.dilation_h = nd->dilation[0];
    cd.dilation_w = nd->dilation[1];
    cd.relu = nd->fuse_relu;
    cd.layout = nd->layout;
    return cd;
}

/* The sizes of a conv, in NCHW order whatever the layout. */
typedef struct dims {
    int64_t N, C, H, W, K, R, S, wc, P, Q;
} dims;

static dims conv_dims(const m40_node_desc *nd, const m40_tensor_desc *x, const m40_tensor_desc *w) {
    bool nhwc = nd->layout == M40_LAYOUT_NHWC;
    const int64_t *xs = x->shape, *ws = w->shape;
    /* NCHW: x [N,C,H,W], w [K,C/groups,R,S]; NHWC: x [N,H,W,C], w [K,R,S,C/groups] */
    dims d = {xs[0], nhwc ? xs[3] : xs[1], nhwc ? xs[1] : xs[2], nhwc ? xs[2] : xs[3],
              ws[0], nhwc ? ws[1] : ws[2], nhwc ? ws[2] : ws[3], nhwc ? ws[3] : ws[1], 0, 0};
    /* the window and the output: every term below 2^31 + 2^21 (checked by the rule) */
    int64_t eh = (int64_t)nd->dilation[0] * (d.R - 1) + 1, ew = (int64_t)nd->dilation[1] * (d.S - 1) + 1;
    d.P = (d.H + 2 * (int64_t)nd->pad[0] - eh) / nd->stride[0] + 1;
    d.Q = (d.W + 2 * (int64_t)nd->pad[1] - ew) / nd->stride[1] + 1;
    return d;
}

static bool param_ok(int v, int lo) { return v >= lo && v <= M40__OP_PARAM_MAX; }

static m40_status conv_rule(const m40__op_call *c, m40_tensor_desc *out) {
    const m40_node_desc *nd = c->nd;
    const int n = nd->ninputs;
    m40_status st;
    if ((st = m40__rule_dtype(c, IX, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, IX, 4, 4)) ||
        (st = m40__rule_dtype(c, IW, M40_DTYPE_F32, M40_DTYPE_F16)) ||
        (st = m40__rule_ndim(c, IW, 4, 4)))
        return st;
    if (n > IBIAS && ((st = m40__rule_dtype(c, IBIAS, M40_DTYPE_F32, M40_DTYPE_F16)) ||
                      (st = m40__rule_ndim(c, IBIAS, 1, 1))))
        return st;
    if (n > IRES && ((st = m40__rule_dtype(c, IRES, M40_DTYPE_F32, M40_DTYPE_F32)) ||
                     (st = m40__rule_ndim(c, IRES, 4, 4))))
        return st;
    if (n > ISCALE && ((st = m40__rule_dtype(c, ISCALE, M40_DTYPE_F32, M40_DTYPE_F16)) ||
                       (st = m40__rule_ndim(c, ISCALE, 1, 1))))
        return st;
    if (nd->layout != M40_LAYOUT_NCHW && nd->layout != M40_LAYOUT_NHWC)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "unknown layout %d", (int)nd->layout);
    if (!param_ok(nd->stride[0], 1) || !param_ok(nd->stride[1], 1) ||
        !param_ok(nd->dilation[0], 1) || !param_ok(nd->dilation[1], 1) ||
        !param_ok(nd->pad[0], 0) || !param_ok(nd->pad[1], 0) || !param_ok(nd->groups, 1))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG,
                              "stride %dx%d, dilation %dx%d, pad %dx%d, groups %d: strides, "
                              "dilations and groups must be 1..%d, pads 0..%d", nd->stride[0],
                              nd->stride[1], nd->dilation[0], nd->dilation[1], nd->pad[0],
                              nd->pad[1], nd->groups, M40__OP_PARAM_MAX, M40__OP_PARAM_MAX);
    for (int i = IX; i <= IW; i++)
        for (int k = 0; k < 4; k++)
            if (c->in[i]->shape[k] > INT_MAX)
                return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "%s dim %d over 2^31",
                                      i == IX ? "x" : "w", k);
    dims d = conv_dims(nd, c->in[IX], c->in[IW]);
    if (d.C % nd->groups || d.K % nd->groups || d.wc * nd->groups != d.C) {
        char a[96], b[96];
        return m40__rule_fail(c, M40_ERR_SHAPE, "x %s has %lld channels but w %s expects %lld "
                              "(groups %d)", m40__shape_str(c->in[IX], a, sizeof a),
                              (long long)d.C, m40__shape_str(c->in[IW], b, sizeof b),
                              (long long)d.wc, nd->groups);
    }
    int64_t eh = (int64_t)nd->dilation[0] * (d.R - 1) + 1, ew = (int64_t)nd->dilation[1] * (d.S - 1) + 1;
    int64_t hp = d.H + 2 * (int64_t)nd->pad[0], wp = d.W + 2 * (int64_t)nd->pad[1];
    if (d.R < 1 || d.S < 1 || hp < eh || wp < ew)
        return m40__rule_fail(c, M40_ERR_SHAPE, "the %lldx%lld window (dilated) does not fit "
                              "the padded %lldx%lld input", (long long)eh, (long long)ew,
                              (long long)hp, (long long)wp);
    if (d.P > INT_MAX || d.Q > INT_MAX)
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "output %lldx%lld over 2^31",
                              (long long)d.P, (long long)d.Q);
    bool nhwc = nd->layout == M40_LAYOUT_NHWC;
    int64_t s[4] = {d.N, d.K, d.P, d.Q};
    if (nhwc) s[1] = d.P, s[2] = d.Q, s[3] = d.K;
    const m40_tensor_desc *bias = n > IBIAS ? c->in[IBIAS] : NULL;
    const m40_tensor_desc *res = n > IRES ? c->in[IRES] : NULL;
    const m40_tensor_desc *scale = n > ISCALE ? c->in[ISCALE] : NULL;
    bool ok = (!bias || bias->shape[0] == d.K) && (!scale || scale->shape[0] == d.K);
    for (int i = 0; res && i < 4; i++) ok = ok && res->shape[i] == s[i];
    if (!ok)
        return m40__rule_shape(c, nhwc ? "need bias [K], scale [K], residual [N,P,Q,K]"
                                        : "need bias [K], scale [K], residual [N,K,P,Q]");
    return m40__rule_out(c, out, M40_DTYPE_F32, 4, s);
}

/* a 1x1 conv at stride 1 without padding: x itself is the GEMM's A (NHWC) */
static bool plain_gemm(const m40_node_desc *nd, const dims *d) {
    return d->R == 1 && d->S == 1 && nd->stride[0] == 1 && nd->stride[1] == 1 && nd->pad[0] == 0 &&
           nd->pad[1] == 0;
}

static m40_status conv_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    m40_status st;
    if (c->nd->groups != 1)
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "groups = %d; the kernels run groups = 1 "
                              "only for now", c->nd->groups);
    for (int i = IW; i < c->nd->ninputs; i++)
        if ((st = m40__run_need_f32(c, i)) != M40_OK) return st;
    if ((st = m40__run_need_contiguous(c, out)) != M40_OK) return st;
    if (c->ctx->is_gpu) { /* the GPU kernels index these in 32 bits (kernels/conv.cu, sgemm.cu) */
        const m40_node_desc *nd = c->nd;
        dims d = conv_dims(nd, c->in[IX], c->in[IW]);
        const uint64_t big = (uint64_t)1 << 31; /* products saturate: all terms >= 0 */
        const uint64_t rsc = m40__sat_mul_u64(m40__sat_mul_u64(d.R, d.S), d.C);
        const uint64_t npq = m40__sat_mul_u64(m40__sat_mul_u64(d.N, d.P), d.Q);
        const uint64_t hwc = m40__sat_mul_u64(m40__sat_mul_u64(d.H, d.W), m40k_padded_c(d.C));
        if (rsc >= big)
            return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "a filter of R·S·C = %llu values: the GPU "
                                  "kernels take fewer than 2^31", (unsigned long long)rsc);
        if (npq >= big)
            return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "%llu output pixels (N·P·Q): the GPU "
                                  "kernels take fewer than 2^31 (split the batch)", (unsigned long long)npq);
        if (nd->layout == M40_LAYOUT_NHWC && !plain_gemm(nd, &d) && hwc >= big)
            return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "an image of H·W·C = %llu values: the GPU's "
                                  "implicit GEMM gathers from one image with 32-bit offsets (under 2^31)",
                                  (unsigned long long)hwc);
    }
    return M40_OK;
}

static m40_status conv_cpu(m40_ctx *ctx, const m40__op_run *r) {
    (void)ctx;
    const m40_node_desc *nd = r->nd;
    dims d = conv_dims(nd, &r->in[IX]->desc, &r->in[IW]->desc);
    m40_conv2d_desc cd = m40__conv2d_desc_of(nd);
    const int n = nd->ninputs;
    const m40_tensor *bias = n > IBIAS ? r->in[IBIAS] : NULL, *res = n > IRES ? r->in[IRES] : NULL;
    const m40_tensor *scale = n > ISCALE ? r->in[ISCALE] : NULL;
    m40__ref_conv2d(&cd, d.N, d.C, d.H, d.W, d.K, d.R, d.S, d.P, d.Q, r->in[IX]->data,
                    r->in[IW]->data, scale ? scale->data : NULL, bias ? bias->data : NULL,
                    res ? res->data : NULL, r->out->data);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
/* The launcher's view of a conv the rule has checked (all sizes < 2^31). */
static m40k_conv_shape conv_shape(const m40_node_desc *nd, const dims *d) {
    m40k_conv_shape s = {(int)d->N, (int)d->C, (int)d->H, (int)d->W, (int)d->K, (int)d->R,
                         (int)d->S, (int)d->P, (int)d->Q, nd->stride[0], nd->stride[1],
                         nd->pad[0], nd->pad[1], nd->dilation[0], nd->dilation[1],
                         nd->fuse_relu != 0, M40K_CONV_AUTO};
    return s;
}

static m40_status conv_gpu(m40_ctx *ctx, const m40__op_run *r) {
    const m40_node_desc *nd = r->nd;
    const m40_tensor *x = r->in[IX], *w = r->in[IW];
    dims d = conv_dims(nd, &x->desc, &w->desc);
    const int n = nd->ninputs;
    const float *bp = n > IBIAS && r->in[IBIAS] ? r->in[IBIAS]->data : NULL;
    const float *rp = n > IRES && r->in[IRES] ? r->in[IRES]->data : NULL;
    const float *sp = n > ISCALE && r->in[ISCALE] ? r->in[ISCALE]->data : NULL;
    float *y = r->out->data;
    /* ---- dispatch hook: cuDNN when the node or the context chose it ---- */
    if (m40__conv_use_cudnn(ctx, r->sel)) {
        m40_conv2d_desc cd = m40__conv2d_desc_of(nd);
        m40__conv_dims dm = {(int)d.N, (int)d.C, (int)d.H, (int)d.W, (int)d.K, (int)d.R,
                             (int)d.S, (int)d.P, (int)d.Q};
        return m40__cudnn_conv2d(ctx, &dm, &cd, x->data, w->data, sp, bp, rp, y,
                                 r->sel ? r->sel->cudnn : NULL);
    }
    /* ---- libm40's kernels ---- */
    m40k_conv_shape s = conv_shape(nd, &d);
    int e;
    if (nd->layout == M40_LAYOUT_NHWC) {
        size_t wsb = m40k_conv2d_nhwc_workspace(&s, x->data, ctx->sm_count);
        void *wsp = NULL;
        m40_status st;
        if (wsb && (st = m40__cuda_workspace(ctx, wsb, &wsp)) != M40_OK) return st;
        e = m40k_conv2d_nhwc(ctx->stream, &s, x->data, w->data, sp, bp, rp, y, wsp, wsb,
                             ctx->sm_count);
    } else {
        e = m40k_conv2d_direct(ctx->stream, &s, x->data, w->data, sp, bp, rp, y);
    }
    return e ? m40__cuda_check(ctx, e, "m40_conv2d") : M40_OK;
}
#endif

/* sm_count > 0: what m40k_conv2d_nhwc_workspace asks for on that GPU
** (aligned tensors: graph tensors are). 0 (the planner): its bound,
** independent of the GPU, by the rules of kernels/conv_plan.h: a plain GEMM
** (1x1/1, no pad) and the implicit GEMM need nothing; C % 4 != 0 (an RGB
** stem) copies x and w with C padded to 4; a 3x3/1 conv with C·K/(C+K) >=
** 32 may run as Winograd (whether it does depends on the SM count): U, and
** V and M for up to ~128 MiB of 2x2 output tiles. The SGEMM's split-K sums
** are reserved at alloc, not planned. NCHW (the direct kernel) needs none. */
static m40_status conv_workspace(const m40__op_call *c, const m40_tensor_desc *out,
                                 int sm_count, uint64_t *bytes) {
    (void)out;
    *bytes = 0;
    const m40_node_desc *nd = c->nd;
    if (nd->layout != M40_LAYOUT_NHWC) return M40_OK;
    dims d = conv_dims(nd, c->in[IX], c->in[IW]);
#ifdef M40_HAVE_CUDA
    if (sm_count > 0) {
        m40k_conv_shape s = conv_shape(nd, &d);
        *bytes = m40k_conv2d_nhwc_workspace(&s, NULL, sm_count);
        return M40_OK;
    }
#else
    (void)sm_count;
#endif
    if (plain_gemm(nd, &d)) return M40_OK;
    /* the pieces below stay under 2^56 bytes, else the figure is refused */
    const int64_t lim = (int64_t)1 << 56, cp = m40k_padded_c(d.C);
    int64_t t;
    if (d.C % 4) {
        if (m40__mul_ok(d.N * d.H, d.W, lim, &t) || m40__mul_ok(t, cp * 4, lim, &t) ||
            m40__mul_ok(d.K, d.R, lim, &t) || m40__mul_ok(t, d.S, lim, &t) ||
            m40__mul_ok(t, cp * 4, lim, &t))
            return m40__rule_fail(c, M40_ERR_SHAPE, "the channel-padded copies would take "
                                  "2^56 bytes or more");
        *bytes = m40k_pad_x_bytes(d.N, d.H, d.W, d.C) + m40k_pad_w_bytes(d.K, d.R, d.S, d.C);
    } else if (m40k_wino_applies(d.R, d.S, nd->stride[0], nd->stride[1], nd->dilation[0],
                                 nd->dilation[1], d.C, d.K) && m40k_wino_pays(d.C, d.K)) {
        if (m40__mul_ok(16 * d.K, d.C * 4, lim, &t) ||
            m40__mul_ok(d.N, ((d.P + 1) / 2) * ((d.Q + 1) / 2), lim, &t))
            return m40__rule_fail(c, M40_ERR_SHAPE, "Winograd's tiles would take 2^56 bytes "
                                  "or more");
        *bytes = m40k_wino_bytes(d.C, d.K, m40k_wino_tiles(d.N, d.P, d.Q));
    }
    return M40_OK;
}

const m40__op_def m40__op_conv2d = {
    .op = M40_OP_CONV2D, .name = "conv2d", .inplace = 0, .min_in = 2, .max_in = 5,
    .in_names = {"x", "w", "bias", "residual", "scale"}, .out_name = "y", .rule = conv_rule,
    .workspace = conv_workspace, .run_check = conv_run_check, .run_cpu = conv_cpu,
    M40__GPU(conv_gpu)};

void m40_conv2d_desc_init(m40_conv2d_desc *d) {
    if (!d) return;
    *d = (m40_conv2d_desc){.struct_size = sizeof *d, .stride_h = 1, .stride_w = 1,
                           .dilation_h = 1, .dilation_w = 1};
}

m40_status m40_conv2d(m40_ctx *ctx, const m40_conv2d_desc *d, const m40_tensor *x,
                      const m40_tensor *w, const m40_tensor *scale, const m40_tensor *bias,
                      const m40_tensor *residual, m40_tensor *y) {
    return m40__conv2d_sel(ctx, d, x, w, scale, bias, residual, y, NULL);
}

/* sel: the engine a graph node settled on (lib/conv_engine/), NULL: the context's */
m40_status m40__conv2d_sel(m40_ctx *ctx, const m40_conv2d_desc *d, const m40_tensor *x,
                           const m40_tensor *w, const m40_tensor *scale, const m40_tensor *bias,
                           const m40_tensor *residual, m40_tensor *y, const m40__conv_sel *sel) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_conv2d: desc is NULL");
    if (d->struct_size < sizeof *d)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_conv2d: desc->struct_size is %zu, "
                        "expected %zu (fill it with m40_conv2d_desc_init)", d->struct_size,
                        sizeof *d);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.stride[0] = d->stride_h;
    nd.stride[1] = d->stride_w;
    nd.pad[0] = d->pad_h;
    nd.pad[1] = d->pad_w;
    nd.dilation[0] = d->dilation_h;
    nd.dilation[1] = d->dilation_w;
    nd.fuse_relu = d->relu;
    nd.layout = d->layout;
    nd.ninputs = 5;
    const m40_tensor *in[5] = {x, w, bias, residual, scale};
    return m40__op_eager(ctx, "m40_conv2d", &nd, in, y, sel);
}
