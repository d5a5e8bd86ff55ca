/* The sampler's reference (m40_sample): double accumulators, a full sort.
**
** The definition both sides follow (kernels/sample.cu computes the same
** steps in FP32 with fixed-point masses and no sort):
**   x = logits, NaN -> -inf, +inf -> FLT_MAX
**   penalty: for each id h of the history (-1 skipped), x[h] = pen(logits[h])
**            (from the original logit, so a repeated id is penalized once)
**   greedy (temperature <= 0): argmax x, lowest id on ties; p = 1 / Σ e^(x-max)
**   else z = x / T in float (+inf -> FLT_MAX, -0 -> +0), order the ids by
**   (z desc, id asc), e = e^(z - max z) (1 for every id when max z = -inf):
**     top-k: the first k; top-p: the shortest prefix of those whose mass
**     reaches top_p · (their mass); min-p: z >= max z + logf(min_p) (float);
**     every filter keeps a prefix of the order, so the kept set is the
**     shortest of them;
**     draw: u = m40__rand_u01(seed, pos, b), the first kept id whose
**     cumulative mass exceeds u · (kept mass); p = e / (kept mass). */
#include "ref.h"
#include "m40/transformer.h"
#include "../rng.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

typedef struct zid {
    float z;
    int32_t id;
} zid;

static float sanitize(float x) {
    if (x != x) return -INFINITY;
    return x > FLT_MAX ? FLT_MAX : x;
}

static float penalize(float x, float p) { return x > 0 ? x / p : x * p; }

static int by_z_desc(const void *a, const void *b) {
    const zid *p = a, *q = b;
    if (p->z != q->z) return p->z > q->z ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

static double mass(float z, float M) { return M == -INFINITY ? 1.0 : exp((double)z - (double)M); }

int m40__ref_sample(const m40_sampler_desc *d, int64_t B, int64_t V, const float *logits,
                    const int32_t *history, int64_t W, const int32_t *pos, float *out) {
    if (B <= 0 || V <= 0) return 0;
    float *x = malloc((size_t)V * sizeof *x);
    zid *o = d->temperature > 0 ? malloc((size_t)V * sizeof *o) : NULL;
    if (!x || (d->temperature > 0 && !o)) {
        free(x);
        free(o);
        return -1;
    }
    for (int64_t b = 0; b < B; b++) {
        const float *l = logits + b * V;
        for (int64_t i = 0; i < V; i++) x[i] = sanitize(l[i]);
        if (history && d->repetition_penalty != 1.0f)
            for (int64_t j = 0; j < W; j++) {
                int32_t h = history[b * W + j];
                if (h >= 0 && h < V) x[h] = penalize(sanitize(l[h]), d->repetition_penalty);
            }
        if (!(d->temperature > 0)) { /* greedy */
            int64_t a = 0;
            for (int64_t i = 1; i < V; i++)
                if (x[i] > x[a]) a = i;
            double s = 0;
            for (int64_t i = 0; i < V; i++) s += mass(x[i], x[a]);
            out[2 * b] = (float)a;
            out[2 * b + 1] = (float)(1.0 / s);
            continue;
        }
        float M = -INFINITY;
        for (int64_t i = 0; i < V; i++) {
            float z = x[i] / d->temperature;
            if (z > FLT_MAX) z = FLT_MAX;
            if (z == 0) z = 0; /* -0 -> +0: one key per value */
            o[i].z = z;
            o[i].id = (int32_t)i;
            if (z > M) M = z;
        }
        qsort(o, (size_t)V, sizeof *o, by_z_desc);
        int64_t L = d->top_k > 0 && d->top_k < V ? d->top_k : V;
        if (d->top_p < 1.0f) {
            double sk = 0, c = 0;
            for (int64_t n = 0; n < L; n++) sk += mass(o[n].z, M);
            double t = (double)d->top_p * sk;
            for (int64_t n = 0; n < L; n++) {
                c += mass(o[n].z, M);
                if (c >= t) {
                    L = n + 1;
                    break;
                }
            }
        }
        if (d->min_p > 0) {
            float zmin = M + logf(d->min_p);
            int64_t n = 1; /* the first id always stays: z = M >= zmin */
            while (n < L && o[n].z >= zmin) n++;
            L = n;
        }
        double tot = 0;
        for (int64_t n = 0; n < L; n++) tot += mass(o[n].z, M);
        uint64_t p = pos ? (uint64_t)(uint32_t)pos[b] : 0;
        double t = (double)m40__rand_u01(d->seed, p, (uint64_t)b) * tot, c = 0;
        int64_t k = L - 1;
        for (int64_t n = 0; n < L; n++) {
            c += mass(o[n].z, M);
            if (c > t) {
                k = n;
                break;
            }
        }
        out[2 * b] = (float)o[k].id;
        out[2 * b + 1] = (float)(mass(o[k].z, M) / tot);
    }
    free(x);
    free(o);
    return 0;
}
