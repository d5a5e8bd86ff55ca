/* Reference softmax over the last dim, in double. */
#include "ref.h"
#include "../internal.h"

#include <math.h>

void m40__ref_softmax(const m40_tensor_desc *dx, const float *x,
                     const m40_tensor_desc *dy, float *y) {
    int64_t cols = dx->ndim ? dx->shape[dx->ndim - 1] : 1;
    int64_t rows = cols ? m40_tensor_desc_numel(dx) / cols : 0;
    for (int64_t r = 0; r < rows; r++) {
        /* offset of the row's first element = offset of element r*cols */
        const float *xr = x + m40__elem_offset(dx, r * cols);
        float *yr = y + m40__elem_offset(dy, r * cols);
        double m = -INFINITY, s = 0.0;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) s += exp(xr[c] - m);
        for (int64_t c = 0; c < cols; c++) yr[c] = (float)(exp(xr[c] - m) / s);
    }
}
