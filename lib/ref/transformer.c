/* Reference of the small transformer ops (issue 16): RMSNorm (with the
** fused residual), RoPE, SwiGLU, embedding. Plain C, double math; the
** angles of RoPE in FP32 as PyTorch's float cache (m40__rope_angle). */
#include "ref.h"
#include "m40/transformer.h"
#include "../half.h"

#include <math.h>
#include <string.h>

int m40__rows_of(const m40_tensor_desc *d, int64_t *rows, int64_t *row_stride) {
    /* an empty tensor: no rows (its dims' product and strides are not bounded
    ** by the span rule, so nothing below may multiply them) */
    for (int k = 0; k < d->ndim; k++)
        if (d->shape[k] == 0) {
            *rows = 0;
            *row_stride = 0;
            return 0;
        }
    int64_t n = 1, rs = d->ndim ? d->shape[d->ndim - 1] : 1, expect = -1;
    for (int k = d->ndim - 2; k >= 0; k--) {
        n *= d->shape[k];
        if (d->shape[k] == 1) continue;
        if (expect < 0) rs = d->stride[k];
        else if (d->stride[k] != expect) return -1;
        expect = d->stride[k] * d->shape[k];
    }
    *rows = n;
    *row_stride = rs;
    return 0;
}

static double weight_at(const void *w, int f16, int64_t c) {
    return f16 ? m40__f16_to_f32(((const uint16_t *)w)[c]) : ((const float *)w)[c];
}

void m40__ref_rmsnorm(int64_t rows, int64_t C, float eps, int mode, float *x, int64_t xs,
                      const float *r, int64_t rs, const void *w, int w_f16, float *y,
                      int64_t ys) {
    for (int64_t i = 0; i < rows; i++) {
        float *xr = x + i * xs, *yr = y + i * ys;
        if (mode == 1)
            for (int64_t c = 0; c < C; c++) xr[c] = xr[c] + r[i * rs + c]; /* FP32, as the GPU */
        else if (mode == 2)
            for (int64_t c = 0; c < C; c++) xr[c] = r[i * rs + c];
        double s = 0.0;
        for (int64_t c = 0; c < C; c++) s += (double)xr[c] * xr[c];
        double inv = 1.0 / sqrt(s / (double)C + eps);
        for (int64_t c = 0; c < C; c++) yr[c] = (float)(xr[c] * inv * weight_at(w, w_f16, c));
    }
}

float m40__rope_angle(const m40_rope_desc *d, int64_t pos, int i) {
    /* PyTorch: 1.0 / (base ** (arange(0, n, 2).float() / n)), each step in float */
    float e = (float)(2 * i) / (float)d->rope_dims;
    float th = 1.0f / (float)pow((double)d->theta, (double)e);
    float p = (float)pos * d->pos_scale;
    return p * th;
}

void m40__ref_rope(const m40_rope_desc *d, int64_t rows, int64_t W, const float *x, int64_t xs,
                   const int32_t *pos, float *y, int64_t ys) {
    const int half = d->rope_dims / 2;
    const int64_t D = d->head_dim;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * xs;
        float *yr = y + r * ys;
        if (yr != xr) memmove(yr, xr, (size_t)W * sizeof *yr);
        if (pos[r] == -1) continue; /* padding: the row passes as it is */
        for (int i = 0; i < half; i++) {
            double a = m40__rope_angle(d, pos[r], i), cs = cos(a), sn = sin(a);
            int64_t ia = d->pairs == M40_ROPE_ADJACENT ? 2 * i : i;
            int64_t ib = d->pairs == M40_ROPE_ADJACENT ? 2 * i + 1 : i + half;
            for (int64_t h = 0; h < d->heads; h++) {
                double va = yr[h * D + ia], vb = yr[h * D + ib];
                yr[h * D + ia] = (float)(va * cs - vb * sn);
                yr[h * D + ib] = (float)(vb * cs + va * sn);
            }
        }
    }
}

void m40__ref_swiglu(int64_t rows, int64_t F, const float *x, int64_t xs, float *y) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < F; c++) {
            double g = x[r * xs + c], u = x[r * xs + F + c];
            y[r * F + c] = (float)(g / (1.0 + exp(-g)) * u);
        }
}

void m40__ref_embedding(int64_t n, const int32_t *ids, int64_t C, const void *table,
                        int table_f16, float *y) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < C; c++)
            y[i * C + c] = (float)weight_at(table, table_f16, (int64_t)ids[i] * C + c);
}
