/* Reference random fill: the same counter-based sequence as the kernel. */
#include "ref.h"
#include "../half.h"
#include "../internal.h"
#include "../rng.h"

#include <math.h>

void m40__ref_fill_random(const m40_tensor_desc *d, void *data, uint64_t seed,
                         m40_random_dist dist, float a, float b) {
    int64_t n = m40_tensor_desc_numel(d);
    for (int64_t i = 0; i < n; i++) {
        float v;
        if (dist == M40_RANDOM_UNIFORM) {
            v = fmaf(b - a, m40__rand_u01(seed, (uint64_t)i, 0), a);
        } else { /* Box-Muller, one normal per pair of uniforms */
            float u1 = 1.0f - m40__rand_u01(seed, (uint64_t)i, 1);
            float u2 = m40__rand_u01(seed, (uint64_t)i, 2);
            float r = sqrtf(-2.0f * logf(u1));
            v = fmaf(b, r * cosf(6.2831853071795864769f * u2), a);
        }
        int64_t o = m40__elem_offset(d, i);
        if (d->dtype == M40_DTYPE_F16) ((uint16_t *)data)[o] = m40__f32_to_f16(v);
        else ((float *)data)[o] = v;
    }
}
