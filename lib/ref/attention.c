/* Reference KV-cache append and causal grouped-query attention, in double.
** Indices arrive checked (lib/ops/attention.c): pos in [-1, L), slot in
** [0, S). Caches [S, L, G, D] contiguous, F16 (lib/half.h) or F32. */
#include "ref.h"
#include "../half.h"

#include <math.h>

static double cache_at(const void *c, int f16, int64_t i) {
    return f16 ? (double)m40__f16_to_f32(((const uint16_t *)c)[i]) : (double)((const float *)c)[i];
}

void m40__ref_kv_append(int64_t B, int64_t T, int64_t GD, const float *kv, int64_t kvs0,
                        int64_t kvs1, const int32_t *pos, const int32_t *slot, int64_t L,
                        int cache_f16, void *cache) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            int64_t p = pos[b * T + t], s = slot ? slot[b] : b;
            if (p < 0) continue; /* -1: padding */
            const float *src = kv + b * kvs0 + t * kvs1;
            int64_t o = (s * L + p) * GD;
            for (int64_t i = 0; i < GD; i++) {
                if (cache_f16) ((uint16_t *)cache)[o + i] = m40__f32_to_f16(src[i]);
                else ((float *)cache)[o + i] = src[i];
            }
        }
}

void m40__ref_attention(int64_t B, int64_t T, int64_t H, int64_t G, int64_t D, int64_t L,
                        float scale, const float *q, int64_t qs0, int64_t qs1, int cache_f16,
                        const void *k_cache, const void *v_cache, const int32_t *pos,
                        const int32_t *slot, float *y, double *scratch) {
    /* scratch: L + D doubles (scores, then the output accumulator) */
    double *sc = scratch, *acc = scratch + L;
    int64_t hpg = H / G;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < H; h++) {
                int64_t p = pos[b * T + t], s = slot ? slot[b] : b, g = h / hpg;
                float *yr = y + ((b * T + t) * H + h) * D;
                if (p < 0) {
                    for (int64_t d = 0; d < D; d++) yr[d] = 0.0f;
                    continue;
                }
                const float *qr = q + b * qs0 + t * qs1 + h * D;
                double m = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j <= p; j++) {
                    int64_t o = ((s * L + j) * G + g) * D;
                    double dot = 0.0;
                    for (int64_t d = 0; d < D; d++) dot += (double)qr[d] * cache_at(k_cache, cache_f16, o + d);
                    sc[j] = dot * scale;
                    if (sc[j] > m) m = sc[j];
                }
                for (int64_t d = 0; d < D; d++) acc[d] = 0.0;
                for (int64_t j = 0; j <= p; j++) {
                    double w = exp(sc[j] - m);
                    int64_t o = ((s * L + j) * G + g) * D;
                    sum += w;
                    for (int64_t d = 0; d < D; d++) acc[d] += w * cache_at(v_cache, cache_f16, o + d);
                }
                for (int64_t d = 0; d < D; d++) yr[d] = (float)(acc[d] / sum);
            }
}
