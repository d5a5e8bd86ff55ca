/* m40_quant_linear: argument checks, then the CPU reference (dequantize each
** row of W to F32, double-precision dot products) or the CUDA kernels
** (kernels/quant_gemv.cu for M <= 8, kernels/quant_gemm.cu above). */
#include "quant_internal.h"
#include "../../kernels/quant.h"

#include <limits.h>
#include <stdlib.h>

/* y[M,N] = x[M,K] · Wᵀ + bias, W dequantized row by row (O(K) memory). */
static m40_status ref_quant_linear(m40_ctx *ctx, const m40_qweight *w, int64_t M,
                                   const float *x, const float *bias, float *y) {
    const int64_t N = w->n, K = w->k;
    float *wrow = malloc((size_t)(K > 0 ? K : 1) * sizeof *wrow); /* W[n, :] as F32 */
    if (!wrow) return m40__err(ctx, M40_ERR_OOM_HOST, "m40_quant_linear: out of host memory");
    for (int64_t n = 0; n < N; n++) {
        m40__quant_dequant_row(&w->fmt, K, w->data->data, w->scale ? w->scale->data : NULL, n, wrow);
        for (int64_t m = 0; m < M; m++) {
            const float *xr = x + m * K; /* x[m, :] */
            double acc = bias ? bias[n] : 0.0;
            for (int64_t k = 0; k < K; k++) acc += (double)xr[k] * wrow[k];
            y[m * N + n] = (float)acc;
        }
    }
    free(wrow);
    return M40_OK;
}

m40_status m40_quant_linear(m40_ctx *ctx, const m40_tensor *x, const m40_qweight *w,
                            const m40_tensor *bias, m40_tensor *y) {
    static const char fn[] = "m40_quant_linear";
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if ((st = m40__check_tensor(ctx, x, "m40_quant_linear: x")) != M40_OK) return st;
    if ((st = m40__check_tensor(ctx, y, "m40_quant_linear: y")) != M40_OK) return st;
    if (bias && (st = m40__check_tensor(ctx, bias, "m40_quant_linear: bias")) != M40_OK) return st;
    if (!w) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w is NULL", fn);
    if (!w->data) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w->data is NULL", fn);
    if (w->fmt.wtype != M40_DTYPE_F16 && !w->scale &&
        m40__quant_check_format(NULL, fn, &w->fmt) == M40_OK)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w->scale is NULL (needed for %s)", fn,
                        m40_quant_format_name(&w->fmt));
    if ((st = m40__quant_check_qweight(ctx, fn, w)) != M40_OK) return st;
    if ((st = m40__check_tensor(ctx, w->data, "m40_quant_linear: w->data")) != M40_OK) return st;
    if (w->scale && w->fmt.wtype != M40_DTYPE_F16 &&
        (st = m40__check_tensor(ctx, w->scale, "m40_quant_linear: w->scale")) != M40_OK)
        return st;
    const struct { const char *name; const m40_tensor *t; } f32s[] = {
        {"x", x}, {"y", y}, {"bias", bias}};
    for (int i = 0; i < 3; i++)
        if (f32s[i].t && f32s[i].t->desc.dtype != M40_DTYPE_F32)
            return m40__err(ctx, M40_ERR_DTYPE, "%s: %s is %s, expected f32", fn, f32s[i].name,
                            m40_dtype_name(f32s[i].t->desc.dtype));
    const m40_tensor_desc *dx = &x->desc, *dy = &y->desc;
    const int64_t N = w->n, K = w->k;
    char s1[96], s2[96];
    bool ok = dx->ndim >= 1 && dy->ndim == dx->ndim && dx->shape[dx->ndim - 1] == K &&
              dy->shape[dy->ndim - 1] == N;
    for (int i = 0; ok && i < dx->ndim - 1; i++) ok = dx->shape[i] == dy->shape[i];
    if (bias) ok = ok && bias->desc.ndim == 1 && bias->desc.shape[0] == N;
    if (!ok)
        return m40__err(ctx, M40_ERR_SHAPE,
                        "%s: x %s, W [%lld, %lld], y %s%s do not fit y = x·Wᵀ + bias", fn,
                        m40__shape_str(dx, s1, sizeof s1), (long long)N, (long long)K,
                        m40__shape_str(dy, s2, sizeof s2), bias ? " (with bias)" : "");
    if (!m40_tensor_desc_is_contiguous(dx) || !m40_tensor_desc_is_contiguous(dy) ||
        (bias && !m40_tensor_desc_is_contiguous(&bias->desc)))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: x, y and bias must be contiguous", fn);
    int64_t M = 1;
    for (int i = 0; i < dx->ndim - 1; i++) M *= dx->shape[i];
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
            return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: dims of 2^31 or more", fn);
        if (M > 65535LL * 128)
            return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: M = %lld rows; at most %lld per call",
                            fn, (long long)M, 65535LL * 128);
        m40k_qlinear_args a = {
            .M = (int)M, .N = (int)N, .K = (int)K, .x = x->data, .wtype = (int)w->fmt.wtype,
            .w = w->data->data, .scale = w->fmt.wtype == M40_DTYPE_F16 ? NULL : w->scale->data,
            .scale_f16 = w->fmt.scale_dtype == M40_DTYPE_F16, .group = w->fmt.group,
            .bias = bias ? bias->data : NULL, .y = y->data};
        if (w->fmt.wtype == M40_DTYPE_F16) a.group = 0;
        /* split-K partial sums of the GEMV (batch <= 8) go to the context's
        ** workspace, grown on first need; if it cannot grow, the launcher
        ** takes a kernel without split-K */
        size_t ws_bytes = m40k_quant_gemv_workspace(&a);
        void *ws;
        if ((st = m40__cuda_scratch(ctx, &ws_bytes, &ws)) != M40_OK) return st;
        a.ws = ws;
        a.ws_bytes = ws_bytes;
        int e = m40k_quant_linear(ctx->stream, &a, ctx->sm_count);
        return e ? m40__cuda_check(ctx, e, fn) : M40_OK;
    }
#endif
    return ref_quant_linear(ctx, w, M, x->data, bias ? bias->data : NULL, y->data);
}
