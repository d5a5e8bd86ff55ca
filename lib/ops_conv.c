/* Entry points of convolution and pooling: check, then run the CPU
** reference (lib/ref/conv.c) or the CUDA kernels (kernels/conv.cu). */
#include "internal.h"
#include "ref/ref.h"
#include "../kernels/conv.h"
#include "../kernels/pool.h"
#include "conv_engine/conv_engine.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

/* t is on the right side, F32, contiguous, with `ndim` dims. */
static m40_status need_f32(m40_ctx *ctx, const char *fn, const char *name,
                           const m40_tensor *t, int ndim) {
    char what[96];
    snprintf(what, sizeof what, "%s: %s", fn, name);
    m40_status st = m40__check_tensor(ctx, t, what);
    if (st != M40_OK) return st;
    if (t->desc.dtype != M40_DTYPE_F32)
        return m40__err(ctx, M40_ERR_DTYPE, "%s: %s is %s, expected f32", fn, name,
                        m40_dtype_name(t->desc.dtype));
    if (t->desc.ndim != ndim) {
        char b[96];
        return m40__err(ctx, M40_ERR_SHAPE, "%s: %s is %s, expected %d dims", fn, name,
                        m40__shape_str(&t->desc, b, sizeof b), ndim);
    }
    if (!m40_tensor_desc_is_contiguous(&t->desc))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: %s must be contiguous", fn, name);
    for (int i = 0; i < ndim; i++)
        if (t->desc.shape[i] > INT_MAX)
            return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: %s dim %d over 2^31", fn, name, i);
    return M40_OK;
}

static m40_status need_shape(m40_ctx *ctx, const char *fn, const char *name,
                             const m40_tensor *t, int ndim, const int64_t *want) {
    for (int i = 0; i < ndim; i++)
        if (t->desc.shape[i] != want[i]) {
            char b[96], e[96];
            m40_tensor_desc wd;
            m40_tensor_desc_make(&wd, M40_DTYPE_F32, ndim, want);
            return m40__err(ctx, M40_ERR_SHAPE, "%s: %s is %s, expected %s", fn, name,
                            m40__shape_str(&t->desc, b, sizeof b),
                            m40__shape_str(&wd, e, sizeof e));
        }
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
/* The launcher's view of a conv whose arguments m40_conv2d has checked. */
static m40k_conv_shape conv_shape(const m40_conv2d_desc *d, const m40_tensor_desc *x,
                                  const m40_tensor_desc *w, int64_t P, int64_t Q) {
    bool nhwc = d->layout == M40_LAYOUT_NHWC;
    const int64_t *xs = x->shape, *ws = w->shape;
    m40k_conv_shape s = {(int)xs[0], (int)(nhwc ? xs[3] : xs[1]), (int)(nhwc ? xs[1] : xs[2]),
                         (int)(nhwc ? xs[2] : xs[3]), (int)ws[0], (int)(nhwc ? ws[1] : ws[2]),
                         (int)(nhwc ? ws[2] : ws[3]), (int)P, (int)Q, d->stride_h, d->stride_w,
                         d->pad_h, d->pad_w, d->dilation_h, d->dilation_w, d->relu != 0,
                         M40K_CONV_AUTO};
    return s;
}

size_t m40__conv2d_workspace(m40_ctx *ctx, const m40_conv2d_desc *d, const m40_tensor_desc *x,
                             const m40_tensor_desc *w, const m40_tensor_desc *y) {
    if (!ctx->is_gpu || d->layout != M40_LAYOUT_NHWC) return 0;
    m40k_conv_shape s = conv_shape(d, x, w, y->shape[1], y->shape[2]);
    return m40k_conv2d_nhwc_workspace(&s, NULL, ctx->sm_count); /* graph tensors: aligned */
}
#endif

void m40_conv2d_desc_init(m40_conv2d_desc *d) {
    if (!d) return;
    *d = (m40_conv2d_desc){.stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1};
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
    static const char fn[] = "m40_conv2d";
    (void)sel; /* only a GPU reads it */
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: desc is NULL", fn);
    if (d->layout != M40_LAYOUT_NCHW && d->layout != M40_LAYOUT_NHWC)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown layout %d", fn, (int)d->layout);
    if (d->stride_h < 1 || d->stride_w < 1 || d->dilation_h < 1 || d->dilation_w < 1 ||
        d->pad_h < 0 || d->pad_w < 0)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "%s: stride %dx%d, dilation %dx%d, pad %dx%d: strides and dilations "
                        "must be >= 1, pads >= 0", fn, d->stride_h, d->stride_w,
                        d->dilation_h, d->dilation_w, d->pad_h, d->pad_w);
    if ((st = need_f32(ctx, fn, "x", x, 4)) || (st = need_f32(ctx, fn, "w", w, 4)) ||
        (st = need_f32(ctx, fn, "y", y, 4)))
        return st;
    const int64_t *xs = x->desc.shape, *ws = w->desc.shape;
    bool nhwc = d->layout == M40_LAYOUT_NHWC;
    /* NCHW: x [N,C,H,W], w [K,C,R,S]; NHWC: x [N,H,W,C], w [K,R,S,C] */
    int64_t N = xs[0], C = nhwc ? xs[3] : xs[1], H = nhwc ? xs[1] : xs[2], W = nhwc ? xs[2] : xs[3];
    int64_t K = ws[0], R = nhwc ? ws[1] : ws[2], S = nhwc ? ws[2] : ws[3], wc = nhwc ? ws[3] : ws[1];
    if (wc != C) {
        char a[96], b[96];
        return m40__err(ctx, M40_ERR_SHAPE, "%s: x %s has %lld channels but w %s expects %lld",
                        fn, m40__shape_str(&x->desc, a, sizeof a), (long long)C,
                        m40__shape_str(&w->desc, b, sizeof b), (long long)wc);
    }
    int64_t eh = (int64_t)d->dilation_h * (R - 1) + 1, ew = (int64_t)d->dilation_w * (S - 1) + 1;
    if (H + 2 * d->pad_h < eh || W + 2 * d->pad_w < ew)
        return m40__err(ctx, M40_ERR_SHAPE, "%s: the %lldx%lld window (dilated) does not fit "
                        "the padded %lldx%lld input", fn, (long long)eh, (long long)ew,
                        (long long)(H + 2 * d->pad_h), (long long)(W + 2 * d->pad_w));
    int64_t P = (H + 2 * d->pad_h - eh) / d->stride_h + 1;
    int64_t Q = (W + 2 * d->pad_w - ew) / d->stride_w + 1;
    int64_t ys[4] = {N, K, P, Q}, ks[1] = {K};
    if (nhwc) ys[1] = P, ys[2] = Q, ys[3] = K;
    if ((st = need_shape(ctx, fn, "y", y, 4, ys))) return st;
    if (scale && ((st = need_f32(ctx, fn, "scale", scale, 1)) || (st = need_shape(ctx, fn, "scale", scale, 1, ks))))
        return st;
    if (bias && ((st = need_f32(ctx, fn, "bias", bias, 1)) || (st = need_shape(ctx, fn, "bias", bias, 1, ks))))
        return st;
    if (residual && ((st = need_f32(ctx, fn, "residual", residual, 4)) ||
                     (st = need_shape(ctx, fn, "residual", residual, 4, ys))))
        return st;
    const float *sp = scale ? scale->data : NULL, *bp = bias ? bias->data : NULL;
    const float *rp = residual ? residual->data : NULL;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        /* ---- dispatch hook: cuDNN when the node or the context chose it ---- */
        if (m40__conv_use_cudnn(ctx, sel)) {
            m40__conv_dims dm = {(int)N, (int)C, (int)H, (int)W, (int)K, (int)R, (int)S, (int)P, (int)Q};
            return m40__cudnn_conv2d(ctx, &dm, d, x->data, w->data, sp, bp, rp, y->data,
                                     sel ? sel->cudnn : NULL);
        }
        /* ---- libm40's kernels ---- */
        m40k_conv_shape s = conv_shape(d, &x->desc, &w->desc, P, Q);
        int e;
        if (nhwc) {
            size_t wsb = m40k_conv2d_nhwc_workspace(&s, x->data, ctx->sm_count);
            void *wsp = NULL;
            if (wsb && (st = m40__cuda_workspace(ctx, wsb, &wsp)) != M40_OK) return st;
            e = m40k_conv2d_nhwc(ctx->stream, &s, x->data, w->data, sp, bp, rp, y->data, wsp, wsb,
                                 ctx->sm_count);
        } else {
            e = m40k_conv2d_direct(ctx->stream, &s, x->data, w->data, sp, bp, rp, y->data);
        }
        return e ? m40__cuda_check(ctx, e, fn) : M40_OK;
    }
#endif
    m40__ref_conv2d(d, N, C, H, W, K, R, S, P, Q, x->data, w->data, sp, bp, rp, y->data);
    return M40_OK;
}

m40_status m40_pool2d(m40_ctx *ctx, m40_pool kind, int kh, int kw, int sh, int sw, int ph,
                      int pw, const m40_tensor *x, m40_tensor *y, m40_layout layout) {
    static const char fn[] = "m40_pool2d";
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (layout != M40_LAYOUT_NCHW && layout != M40_LAYOUT_NHWC)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown layout %d", fn, (int)layout);
    bool nhwc = layout == M40_LAYOUT_NHWC;
    if (kind != M40_POOL_MAX && kind != M40_POOL_AVG)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: pool kind %d is not MAX or AVG%s", fn,
                        (int)kind, kind == M40_POOL_GLOBAL_AVG ? " (use m40_global_avgpool)" : "");
    if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || ph < 0 || pw < 0 || 2 * ph > kh || 2 * pw > kw)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "%s: window %dx%d, stride %dx%d, pad %dx%d: need window and stride "
                        ">= 1 and 0 <= pad <= window/2", fn, kh, kw, sh, sw, ph, pw);
    if ((st = need_f32(ctx, fn, "x", x, 4)) || (st = need_f32(ctx, fn, "y", y, 4))) return st;
    const int64_t *xs = x->desc.shape;
    int64_t N = xs[0], C = nhwc ? xs[3] : xs[1], H = nhwc ? xs[1] : xs[2], W = nhwc ? xs[2] : xs[3];
    if (H + 2 * ph < kh || W + 2 * pw < kw)
        return m40__err(ctx, M40_ERR_SHAPE, "%s: window %dx%d larger than the padded input", fn, kh, kw);
    int64_t P = (H + 2 * ph - kh) / sh + 1, Q = (W + 2 * pw - kw) / sw + 1;
    int64_t ys[4] = {N, C, P, Q};
    if (nhwc) ys[1] = P, ys[2] = Q, ys[3] = C;
    if ((st = need_shape(ctx, fn, "y", y, 4, ys))) return st;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        if (N * C > INT_MAX)
            return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: N·C over 2^31", fn);
        int e = m40k_pool2d(ctx->stream, (int)kind, kh, kw, sh, sw, ph, pw, nhwc, (int)N, (int)C,
                            (int)H, (int)W, (int)P, (int)Q, x->data, y->data);
        return e ? m40__cuda_check(ctx, e, fn) : M40_OK;
    }
#endif
    m40__ref_pool2d(kind, kh, kw, sh, sw, ph, pw, layout, N, C, H, W, P, Q, x->data, y->data);
    return M40_OK;
}

m40_status m40_global_avgpool(m40_ctx *ctx, const m40_tensor *x, m40_tensor *y,
                              m40_layout layout) {
    static const char fn[] = "m40_global_avgpool";
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (layout != M40_LAYOUT_NCHW && layout != M40_LAYOUT_NHWC)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown layout %d", fn, (int)layout);
    if ((st = need_f32(ctx, fn, "x", x, 4)) || (st = need_f32(ctx, fn, "y", y, 2))) return st;
    const int64_t *xs = x->desc.shape;
    bool nhwc = layout == M40_LAYOUT_NHWC;
    int64_t N = xs[0], C = nhwc ? xs[3] : xs[1], HW = nhwc ? xs[1] * xs[2] : xs[2] * xs[3];
    int64_t ys[2] = {N, C};
    if ((st = need_shape(ctx, fn, "y", y, 2, ys))) return st;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        if (N * C > INT_MAX || HW > INT_MAX)
            return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: sizes over 2^31", fn);
        int e = m40k_global_avgpool(ctx->stream, nhwc, (int)N, (int)C, (int)HW, x->data, y->data);
        return e ? m40__cuda_check(ctx, e, fn) : M40_OK;
    }
#endif
    m40__ref_global_avgpool(layout, N, C, HW, x->data, y->data);
    return M40_OK;
}
