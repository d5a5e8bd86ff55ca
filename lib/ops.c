/* Entry points of the eager ops: check arguments, then run the CPU
** reference (lib/ref/) or launch the CUDA kernel (kernels/). */
#include "internal.h"
#include "ref/ref.h"
#include "../kernels/elementwise.h"
#include "../kernels/softmax.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Checks ctx, then each tensor argument's side. */
static m40_status check_args(m40_ctx *ctx, const char *fn, int n,
                             const m40_tensor *const *ts, const char *const *names) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    for (int i = 0; i < n; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s: %s", fn, names[i]);
        if ((st = m40__check_tensor(ctx, ts[i], what)) != M40_OK) return st;
    }
    return M40_OK;
}

static m40_status need_dtype(m40_ctx *ctx, const char *fn, const char *name,
                             const m40_tensor *t, m40_dtype dt) {
    if (t->desc.dtype == dt) return M40_OK;
    return m40__err(ctx, M40_ERR_DTYPE, "%s: %s is %s, expected %s", fn, name,
                    m40_dtype_name(t->desc.dtype), m40_dtype_name(dt));
}

static m40_status need_same_shape(m40_ctx *ctx, const char *fn, const m40_tensor *a,
                                  const m40_tensor *b) {
    if (m40__same_shape(&a->desc, &b->desc)) return M40_OK;
    char sa[96], sb[96];
    return m40__err(ctx, M40_ERR_SHAPE, "%s: shapes %s and %s differ", fn,
                    m40__shape_str(&a->desc, sa, sizeof sa),
                    m40__shape_str(&b->desc, sb, sizeof sb));
}

#ifdef M40_HAVE_CUDA
static m40_status launched(m40_ctx *ctx, int err, const char *fn) {
    return err ? m40__cuda_check(ctx, err, fn) : M40_OK;
}
#endif

m40_status m40_fill_random(m40_ctx *ctx, m40_tensor *t, uint64_t seed,
                           m40_random_dist dist, float a, float b) {
    const m40_tensor *ts[] = {t};
    const char *names[] = {"t"};
    m40_status st = check_args(ctx, "m40_fill_random", 1, ts, names);
    if (st != M40_OK) return st;
    if (t->desc.dtype != M40_DTYPE_F32 && t->desc.dtype != M40_DTYPE_F16)
        return m40__err(ctx, M40_ERR_DTYPE, "m40_fill_random: %s tensor; f32 or f16 only",
                        m40_dtype_name(t->desc.dtype));
    if (dist != M40_RANDOM_UNIFORM && dist != M40_RANDOM_NORMAL)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_fill_random: unknown dist %d", (int)dist);
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu)
        return launched(ctx, m40k_fill_random(ctx->stream, t->desc, t->data, seed,
                                              (int)dist, a, b), "m40_fill_random");
#endif
    m40__ref_fill_random(&t->desc, t->data, seed, dist, a, b);
    return M40_OK;
}

/* b broadcast against a's trailing dims: returns b's desc expanded to a's
** rank with zero strides on the missing leading dims. */
static m40_status broadcast_desc(m40_ctx *ctx, const char *fn, const m40_tensor *a,
                                 const m40_tensor *b, m40_tensor_desc *out) {
    const m40_tensor_desc *da = &a->desc, *db = &b->desc;
    int lead = da->ndim - db->ndim;
    bool ok = lead >= 0;
    for (int i = 0; ok && i < db->ndim; i++) ok = db->shape[i] == da->shape[lead + i];
    if (!ok) {
        char sa[96], sb[96];
        return m40__err(ctx, M40_ERR_SHAPE,
                        "%s: b %s must equal a %s or match its trailing dims", fn,
                        m40__shape_str(db, sb, sizeof sb), m40__shape_str(da, sa, sizeof sa));
    }
    *out = *da;
    for (int i = 0; i < da->ndim; i++)
        out->stride[i] = i < lead ? 0 : db->stride[i - lead];
    return M40_OK;
}

static m40_status binary(m40_ctx *ctx, const char *fn, int op, const m40_tensor *a,
                         const m40_tensor *b, m40_tensor *out) {
    const m40_tensor *ts[] = {a, b, out};
    const char *names[] = {"a", "b", "out"};
    m40_status st = check_args(ctx, fn, 3, ts, names);
    if (st != M40_OK) return st;
    for (int i = 0; i < 3; i++)
        if ((st = need_dtype(ctx, fn, names[i], ts[i], M40_DTYPE_F32)) != M40_OK) return st;
    if ((st = need_same_shape(ctx, fn, a, out)) != M40_OK) return st;
    m40_tensor_desc db;
    if ((st = broadcast_desc(ctx, fn, a, b, &db)) != M40_OK) return st;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu)
        return launched(ctx, m40k_binary(ctx->stream, op, a->desc, a->data, db, b->data,
                                         out->desc, out->data), fn);
#endif
    m40__ref_binary(op, &a->desc, a->data, &db, b->data, &out->desc, out->data);
    return M40_OK;
}

m40_status m40_add(m40_ctx *ctx, const m40_tensor *a, const m40_tensor *b, m40_tensor *out) {
    return binary(ctx, "m40_add", M40K_ADD, a, b, out);
}

m40_status m40_mul(m40_ctx *ctx, const m40_tensor *a, const m40_tensor *b, m40_tensor *out) {
    return binary(ctx, "m40_mul", M40K_MUL, a, b, out);
}

/* The checks of every op out = f(x): both on the right side, F32, same shape. */
static m40_status check_x_out_f32(m40_ctx *ctx, const char *fn, const m40_tensor *x,
                                  const m40_tensor *out) {
    const m40_tensor *ts[] = {x, out};
    const char *names[] = {"x", "out"};
    m40_status st = check_args(ctx, fn, 2, ts, names);
    if (st != M40_OK) return st;
    if ((st = need_dtype(ctx, fn, "x", x, M40_DTYPE_F32)) != M40_OK) return st;
    if ((st = need_dtype(ctx, fn, "out", out, M40_DTYPE_F32)) != M40_OK) return st;
    return need_same_shape(ctx, fn, x, out);
}

static m40_status unary(m40_ctx *ctx, const char *fn, int op, float alpha,
                        const m40_tensor *x, m40_tensor *out) {
    m40_status st = check_x_out_f32(ctx, fn, x, out);
    if (st != M40_OK) return st;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu)
        return launched(ctx, m40k_unary(ctx->stream, op, alpha, x->desc, x->data,
                                        out->desc, out->data), fn);
#endif
    m40__ref_unary(op, alpha, &x->desc, x->data, &out->desc, out->data);
    return M40_OK;
}

m40_status m40_scale(m40_ctx *ctx, const m40_tensor *x, float alpha, m40_tensor *out) {
    return unary(ctx, "m40_scale", M40K_SCALE, alpha, x, out);
}

m40_status m40_activation(m40_ctx *ctx, m40_act act, const m40_tensor *x, m40_tensor *out) {
    int op;
    switch (act) {
    case M40_ACT_RELU: op = M40K_RELU; break;
    case M40_ACT_SILU: op = M40K_SILU; break;
    case M40_ACT_GELU: op = M40K_GELU; break;
    default:
        if (m40__ctx_check(ctx) != M40_OK) return m40__ctx_check(ctx);
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_activation: unknown act %d", (int)act);
    }
    return unary(ctx, "m40_activation", op, 0.0f, x, out);
}

m40_status m40_softmax(m40_ctx *ctx, const m40_tensor *x, m40_tensor *out) {
    static const char fn[] = "m40_softmax";
    m40_status st = check_x_out_f32(ctx, fn, x, out);
    if (st != M40_OK) return st;
    int last = x->desc.ndim - 1;
    if (last >= 0 && x->desc.shape[last] > 1 &&
        (x->desc.stride[last] != 1 || out->desc.stride[last] != 1))
        return m40__err(ctx, M40_ERR_UNSUPPORTED,
                        "%s: the last dim must have stride 1 (copy to a contiguous "
                        "tensor first)", fn);
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu)
        return launched(ctx, m40k_softmax(ctx->stream, x->desc, x->data, out->desc,
                                          out->data), fn);
#endif
    m40__ref_softmax(&x->desc, x->data, &out->desc, out->data);
    return M40_OK;
}

m40_status m40_convert(m40_ctx *ctx, const m40_tensor *src, m40_tensor *dst) {
    static const char fn[] = "m40_convert";
    const m40_tensor *ts[] = {src, dst};
    const char *names[] = {"src", "dst"};
    m40_status st = check_args(ctx, fn, 2, ts, names);
    if (st != M40_OK) return st;
    if ((st = need_same_shape(ctx, fn, src, dst)) != M40_OK) return st;
    m40_dtype s = src->desc.dtype, d = dst->desc.dtype;
    if (s == d) return m40_tensor_copy(ctx, dst, src);
    if (!((s == M40_DTYPE_F32 && d == M40_DTYPE_F16) ||
          (s == M40_DTYPE_F16 && d == M40_DTYPE_F32)))
        return m40__err(ctx, M40_ERR_DTYPE, "%s: %s -> %s is not supported (f32<->f16 only)",
                        fn, m40_dtype_name(s), m40_dtype_name(d));
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu)
        return launched(ctx, m40k_convert(ctx->stream, src->desc, src->data, dst->desc,
                                          dst->data), fn);
#endif
    m40__ref_convert(&src->desc, src->data, &dst->desc, dst->data);
    return M40_OK;
}

m40_status m40_matmul(m40_ctx *ctx, const m40_tensor *x, const m40_tensor *w,
                      const m40_tensor *bias, m40_tensor *y) {
    static const char fn[] = "m40_matmul";
    const m40_tensor *ts[] = {x, w, y};
    const char *names[] = {"x", "w", "y"};
    m40_status st = check_args(ctx, fn, 3, ts, names);
    if (st != M40_OK) return st;
    if (bias && (st = m40__check_tensor(ctx, bias, "m40_matmul: bias")) != M40_OK) return st;
    for (int i = 0; i < 3; i++)
        if ((st = need_dtype(ctx, fn, names[i], ts[i], M40_DTYPE_F32)) != M40_OK) return st;
    if (bias && (st = need_dtype(ctx, fn, "bias", bias, M40_DTYPE_F32)) != M40_OK) return st;
    const m40_tensor_desc *dx = &x->desc, *dw = &w->desc, *dy = &y->desc;
    char s1[96], s2[96], s3[96];
    if (dx->ndim < 1 || dw->ndim != 2 || dy->ndim != dx->ndim)
        return m40__err(ctx, M40_ERR_SHAPE,
                        "%s: need x [...,K], w [N,K], y [...,N]; got x %s, w %s, y %s", fn,
                        m40__shape_str(dx, s1, sizeof s1), m40__shape_str(dw, s2, sizeof s2),
                        m40__shape_str(dy, s3, sizeof s3));
    int64_t K = dx->shape[dx->ndim - 1], N = dw->shape[0];
    bool ok = dw->shape[1] == K && dy->shape[dy->ndim - 1] == N;
    for (int i = 0; ok && i < dx->ndim - 1; i++) ok = dx->shape[i] == dy->shape[i];
    if (bias) ok = ok && bias->desc.ndim == 1 && bias->desc.shape[0] == N;
    if (!ok)
        return m40__err(ctx, M40_ERR_SHAPE,
                        "%s: x %s, w %s, y %s%s do not fit y = x·wᵀ + bias", fn,
                        m40__shape_str(dx, s1, sizeof s1), m40__shape_str(dw, s2, sizeof s2),
                        m40__shape_str(dy, s3, sizeof s3), bias ? " (with bias)" : "");
    if (!m40_tensor_desc_is_contiguous(dx) || !m40_tensor_desc_is_contiguous(dw) ||
        !m40_tensor_desc_is_contiguous(dy) ||
        (bias && !m40_tensor_desc_is_contiguous(&bias->desc)))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: tensors must be contiguous", fn);
    int64_t M = K ? m40_tensor_desc_numel(dx) / K : m40_tensor_desc_numel(dy) / (N ? N : 1);
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
            return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: dims over 2^31 for cuBLAS", fn);
        return m40__cuda_linear(ctx, (int)M, (int)N, (int)K, x->data, w->data,
                                bias ? bias->data : NULL, bias ? &bias->desc : NULL,
                                y->data);
    }
#endif
    m40__ref_linear(M, N, K, x->data, w->data, bias ? bias->data : NULL, y->data);
    return M40_OK;
}
