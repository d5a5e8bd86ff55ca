/* Reference matmul in PyTorch Linear layout, double accumulation. */
#include "ref.h"

void m40__ref_linear(int64_t M, int64_t N, int64_t K, const float *x,
                    const float *w, const float *bias, float *y) {
    if (K == 0) { /* x and w may be NULL (empty tensors): y = bias */
        for (int64_t i = 0; i < M * N; i++) y[i] = bias ? bias[i % N] : 0.0f;
        return;
    }
    for (int64_t m = 0; m < M; m++) {
        const float *xr = x + m * K;       /* x[m, :] */
        for (int64_t n = 0; n < N; n++) {
            const float *wr = w + n * K;   /* w[n, :] */
            double acc = bias ? bias[n] : 0.0;
            for (int64_t k = 0; k < K; k++) acc += (double)xr[k] * wr[k];
            y[m * N + n] = (float)acc;
        }
    }
}
