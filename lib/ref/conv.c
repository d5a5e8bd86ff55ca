/* Reference convolution and pooling, NCHW or NHWC, double accumulation. */
#include "ref.h"

#include <math.h>

/* Element offsets in each layout. */
static int64_t act_at(m40_layout l, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C,
                      int64_t H, int64_t W) {
    return l == M40_LAYOUT_NHWC ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

void m40__ref_conv2d(const m40_conv2d_desc *d, int64_t N, int64_t C, int64_t H, int64_t W,
                    int64_t K, int64_t R, int64_t S, int64_t P, int64_t Q,
                    const float *x, const float *w, const float *scale,
                    const float *bias, const float *residual, float *y) {
    m40_layout l = d->layout;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    double acc = 0;
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t r = 0; r < R; r++) {
                            int64_t h = p * d->stride_h - d->pad_h + r * d->dilation_h;
                            if (h < 0 || h >= H) continue;
                            for (int64_t s = 0; s < S; s++) {
                                int64_t v = q * d->stride_w - d->pad_w + s * d->dilation_w;
                                if (v < 0 || v >= W) continue;
                                /* w [K,C,R,S] or [K,R,S,C]: the same act_at with (C,R,S) */
                                int64_t wi = l == M40_LAYOUT_NHWC ? ((k * R + r) * S + s) * C + c
                                                                  : ((k * C + c) * R + r) * S + s;
                                acc += (double)x[act_at(l, n, c, h, v, C, H, W)] * w[wi];
                            }
                        }
                    int64_t o = act_at(l, n, k, p, q, K, P, Q);
                    if (scale) acc *= scale[k];
                    if (bias) acc += bias[k];
                    if (residual) acc += residual[o];
                    if (d->relu && acc < 0) acc = 0;
                    y[o] = (float)acc;
                }
}

void m40__ref_pool2d(m40_pool kind, int kh, int kw, int sh, int sw, int ph, int pw,
                    m40_layout l, int64_t N, int64_t C, int64_t H, int64_t W, int64_t P,
                    int64_t Q, const float *x, float *y) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    double acc = kind == M40_POOL_MAX ? -INFINITY : 0.0;
                    int64_t count = 0;
                    for (int r = 0; r < kh; r++) {
                        int64_t h = p * sh - ph + r;
                        if (h < 0 || h >= H) continue;
                        for (int s = 0; s < kw; s++) {
                            int64_t v = q * sw - pw + s;
                            if (v < 0 || v >= W) continue;
                            double e = x[act_at(l, n, c, h, v, C, H, W)];
                            if (kind == M40_POOL_MAX) acc = e > acc ? e : acc;
                            else acc += e;
                            count++;
                        }
                    }
                    if (kind == M40_POOL_AVG) acc = count ? acc / (double)count : 0.0;
                    y[act_at(l, n, c, p, q, C, P, Q)] = (float)acc;
                }
}

void m40__ref_global_avgpool(m40_layout l, int64_t N, int64_t C, int64_t HW, const float *x,
                            float *y) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            double s = 0;
            for (int64_t j = 0; j < HW; j++)
                s += x[l == M40_LAYOUT_NHWC ? (n * HW + j) * C + c : (n * C + c) * HW + j];
            y[n * C + c] = (float)(HW ? s / (double)HW : 0.0);
        }
}
