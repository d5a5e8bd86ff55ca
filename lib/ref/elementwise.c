/* Reference elementwise ops: unary activations, binary add/mul, F32<->F16. */
#include "ref.h"
#include "../half.h"
#include "../internal.h"

#include <math.h>

static double unary(int op, double alpha, double x) {
    switch (op) {
    case M40__UNARY_SCALE: return alpha * x;
    case M40__UNARY_RELU: return x > 0.0 ? x : 0.0;
    case M40__UNARY_SILU: return x / (1.0 + exp(-x));
    default: return 0.5 * x * erfc(-x / sqrt(2.0)); /* GELU: x·Phi(x), no cancellation */
    }
}

void m40__ref_unary(int op, float alpha, const m40_tensor_desc *dx, const float *x,
                   const m40_tensor_desc *dout, float *out) {
    int64_t n = m40_tensor_desc_numel(dx);
    for (int64_t i = 0; i < n; i++)
        out[m40__elem_offset(dout, i)] =
            (float)unary(op, alpha, x[m40__elem_offset(dx, i)]);
}

void m40__ref_binary(int op, const m40_tensor_desc *da, const float *a,
                    const m40_tensor_desc *db, const float *b,
                    const m40_tensor_desc *dout, float *out) {
    int64_t n = m40_tensor_desc_numel(dout);
    for (int64_t i = 0; i < n; i++) {
        float va = a[m40__elem_offset(da, i)], vb = b[m40__elem_offset(db, i)];
        out[m40__elem_offset(dout, i)] = op == M40__BINARY_ADD ? va + vb : va * vb;
    }
}

void m40__ref_convert(const m40_tensor_desc *ds, const void *src,
                     const m40_tensor_desc *dd, void *dst) {
    int64_t n = m40_tensor_desc_numel(ds);
    for (int64_t i = 0; i < n; i++) {
        int64_t so = m40__elem_offset(ds, i), o = m40__elem_offset(dd, i);
        if (ds->dtype == M40_DTYPE_F16)
            ((float *)dst)[o] = m40__f16_to_f32(((const uint16_t *)src)[so]);
        else
            ((uint16_t *)dst)[o] = m40__f32_to_f16(((const float *)src)[so]);
    }
}
