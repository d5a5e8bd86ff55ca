/* Reference weight-only quantized linear (include/m40/quant.h). */
#include "ref.h"
#include "../quant/quant_internal.h"

#include <stdlib.h>

/* y[M,N] = x[M,K] · Wᵀ + bias, W dequantized row by row (O(K) memory). */
int m40__ref_quant_linear(const m40_quant_format *f, int64_t M, int64_t N, int64_t K,
                          const float *x, const void *data, const void *scale,
                          const float *bias, float *y) {
    float *wrow = malloc((size_t)(K > 0 ? K : 1) * sizeof *wrow); /* W[n, :] as F32 */
    if (!wrow) return -1;
    for (int64_t n = 0; n < N; n++) {
        m40__quant_dequant_row(f, K, data, scale, n, wrow);
        for (int64_t m = 0; m < M; m++) {
            const float *xr = x + m * K; /* x[m, :] */
            double acc = bias ? bias[n] : 0.0;
            for (int64_t k = 0; k < K; k++) acc += (double)xr[k] * wrow[k];
            y[m * N + n] = (float)acc;
        }
    }
    free(wrow);
    return 0;
}
