/* Model-level plans: both phases of a transformer share one activation
** arena and one workspace (they never run at once), so the model needs the
** larger of each; persistent regions count once. Then the what-would-fit
** searches: largest batch, longest context, other weight formats. Every
** probe is a full graph plan, so the answers follow the planner exactly. */
#include "graph_internal.h"
#include "m40/plan.h"
#include "../checked.h"

#include <stdio.h>
#include <string.h>

#define GLM_MAX_CTX 32768
#define CTX_SEARCH_LIMIT ((int64_t)1 << 22)
#define BATCH_SEARCH_LIMIT 4096

typedef struct evald {
    m40_plan_info plan;
    uint64_t params, arena[2], lb[2], ws[2];
    int phases;
} evald;

static m40_status eval(m40_ctx *ctx, const m40_model_desc *d, evald *e) {
    memset(e, 0, sizeof *e);
    e->phases = d->model == M40_MODEL_CHATGLM2_6B ? 2 : 1;
    for (int ph = 0; ph < e->phases; ph++) {
        m40_graph *g = NULL;
        uint64_t params = 0;
        m40_status st = m40__model_graph(ctx, d, ph, &g, &params);
        if (st != M40_OK) return st;
        m40_plan_info pi;
        st = m40_graph_plan(g, NULL, &pi);
        m40_graph_destroy(g);
        if (st != M40_OK) return st;
        e->arena[ph] = pi.region_bytes[M40_REGION_ACTIVATIONS];
        e->lb[ph] = pi.arena_lower_bound;
        e->ws[ph] = pi.region_bytes[M40_REGION_WORKSPACE];
        if (ph == 0) {
            e->plan = pi;
            e->params = params;
            continue;
        }
        m40_plan_info *c = &e->plan; /* max of the shared regions */
        if (pi.region_bytes[M40_REGION_ACTIVATIONS] > c->region_bytes[M40_REGION_ACTIVATIONS]) {
            c->region_bytes[M40_REGION_ACTIVATIONS] = pi.region_bytes[M40_REGION_ACTIVATIONS];
            c->arena_lower_bound = pi.arena_lower_bound;
            c->peak_step = pi.peak_step;
        }
        if (pi.region_bytes[M40_REGION_WORKSPACE] > c->region_bytes[M40_REGION_WORKSPACE])
            c->region_bytes[M40_REGION_WORKSPACE] = pi.region_bytes[M40_REGION_WORKSPACE];
    }
    e->plan.total_bytes = 0;
    for (int r = 0; r < M40_REGION_COUNT; r++) /* each <= 2^62, four may pass 2^64 */
        e->plan.total_bytes = m40__sat_add_u64(e->plan.total_bytes, e->plan.region_bytes[r]);
    return M40_OK;
}

static m40_status fits_at(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *b, int *fits) {
    evald e;
    m40_status st = eval(ctx, d, &e);
    *fits = st == M40_OK && e.plan.total_bytes <= b->usable_bytes;
    return st;
}

/* Largest value of d->ctx (field 0) or d->batch (field 1) in 1..limit that
** fits; 0 if 1 does not. Memory grows with both, so bisection is exact. */
static m40_status search(m40_ctx *ctx, const m40_model_desc *base, const m40_budget *b,
                         int field, int64_t limit, int64_t *best) {
    m40_model_desc d = *base;
    int f = 0;
    m40_status st;
#define PROBE(v)                                                        \
    do {                                                                \
        if (field == 0) d.ctx = (v); else d.batch = (int)(v);           \
        if ((st = fits_at(ctx, &d, b, &f)) != M40_OK) return st;        \
    } while (0)
    PROBE(1);
    if (!f) { *best = 0; return M40_OK; }
    PROBE(limit);
    if (f) { *best = limit; return M40_OK; }
    int64_t lo = 1, hi = limit; /* lo fits, hi does not */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        PROBE(mid);
        if (f) lo = mid; else hi = mid;
    }
#undef PROBE
    *best = lo;
    return M40_OK;
}

m40_status m40_model_max_ctx(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *b,
                             int64_t limit, int64_t *max_ctx) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d || !b || !max_ctx || limit < 1 || limit > CTX_SEARCH_LIMIT)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "m40_model_max_ctx: NULL argument or limit outside 1..%lld",
                        (long long)CTX_SEARCH_LIMIT);
    if (d->model != M40_MODEL_CHATGLM2_6B)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_max_ctx: %s has no context",
                        m40_model_name(d->model));
    return search(ctx, d, b, 0, limit, max_ctx);
}

/* Which region crosses the budget first, in allocation order. */
static int first_over(const m40_plan_info *p, uint64_t usable) {
    uint64_t sum = 0;
    for (int r = 0; r < M40_REGION_COUNT; r++) {
        sum = m40__sat_add_u64(sum, p->region_bytes[r]);
        if (sum > usable) return r;
    }
    return M40_REGION_ACTIVATIONS;
}

static m40_status oom_message(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *b,
                              const m40_model_plan *mp) {
    char need[32], have[32], reg[32], sh[32], alt[256] = "";
    size_t n = 0;
    int r = first_over(&mp->plan, b->usable_bytes);
    bool glm = d->model == M40_MODEL_CHATGLM2_6B;
    if (glm && mp->max_ctx > 0)
        n += (size_t)snprintf(alt + n, sizeof alt - n, "%s with ctx <= %lld; ",
                              m40_wformat_name(d->weights), (long long)mp->max_ctx);
    for (int f = 0; glm && f < M40_WFMT_COUNT; f++)
        if (f != (int)d->weights && mp->max_ctx_format[f] > 0 && n < sizeof alt - 64)
            n += (size_t)snprintf(alt + n, sizeof alt - n, "%s with ctx <= %lld%s; ",
                                  m40_wformat_name((m40_wformat)f),
                                  (long long)mp->max_ctx_format[f],
                                  mp->fits_format[f] == 1 ? " (fits as asked)" : "");
    if (mp->max_batch > 0 && n < sizeof alt - 64)
        n += (size_t)snprintf(alt + n, sizeof alt - n, "batch <= %d%s; ", mp->max_batch,
                              glm ? " at this ctx" : "");
    if (n >= 2) alt[n - 2] = '\0';
    char what[48] = "";
    if (glm) snprintf(what, sizeof what, ", ctx %lld", (long long)d->ctx);
    return m40__err(ctx, M40_ERR_OOM_DEVICE,
                    "%s %s (batch %d%s) needs %s but %s has %s usable: region %s (%s) "
                    "does not fit, short by %s. Would fit: %s",
                    m40_model_name(d->model), m40_wformat_name(d->weights), d->batch, what,
                    m40__fmt_bytes(mp->plan.total_bytes, need, sizeof need), b->name,
                    m40__fmt_bytes(b->usable_bytes, have, sizeof have),
                    m40_region_name((m40_region)r),
                    m40__fmt_bytes(mp->plan.region_bytes[r], reg, sizeof reg),
                    m40__fmt_bytes(mp->plan.total_bytes - b->usable_bytes, sh, sizeof sh),
                    alt[0] ? alt : "nothing at batch 1 on this budget");
}

m40_status m40_model_plan_build(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *b,
                                m40_model_plan *out) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d || !b || !out)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_plan_build: NULL argument");
    if (d->struct_size < sizeof *d)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_plan_build: desc->struct_size is "
                        "%zu, expected %zu (fill it with m40_model_desc_init)",
                        d->struct_size, sizeof *d);
    memset(out, 0, sizeof *out);
    evald e;
    if ((st = eval(ctx, d, &e)) != M40_OK) return st;
    out->plan = e.plan;
    out->params = e.params;
    out->phases = e.phases;
    for (int i = 0; i < 2; i++) {
        out->arena[i] = e.arena[i];
        out->lower_bound[i] = e.lb[i];
        out->workspace[i] = e.ws[i];
    }
    m40_plan_info *p = &out->plan;
    p->usable_bytes = b->usable_bytes;
    p->fits = p->total_bytes <= b->usable_bytes;
    p->headroom_bytes = m40__headroom(b->usable_bytes, p->total_bytes);
    for (int f = 0; f < M40_WFMT_COUNT; f++) {
        out->fits_format[f] = -1;
        out->max_ctx_format[f] = -1;
    }
    int64_t best = 0;
    if ((st = search(ctx, d, b, 1, BATCH_SEARCH_LIMIT, &best)) != M40_OK) return st;
    out->max_batch = (int)best;
    if (d->model == M40_MODEL_CHATGLM2_6B) {
        out->model_max_ctx = GLM_MAX_CTX;
        out->kv_bytes_per_token = (uint64_t)d->batch * 28 * 2 * 2 * 128 * 2;
        if ((st = search(ctx, d, b, 0, CTX_SEARCH_LIMIT, &out->max_ctx_memory)) != M40_OK)
            return st;
        out->max_ctx = out->max_ctx_memory < GLM_MAX_CTX ? out->max_ctx_memory : GLM_MAX_CTX;
        for (int f = 0; f < M40_WFMT_COUNT; f++) {
            m40_model_desc df = *d;
            df.weights = (m40_wformat)f;
            int fits = 0;
            if ((st = fits_at(ctx, &df, b, &fits)) != M40_OK) return st;
            out->fits_format[f] = fits;
            if ((st = search(ctx, &df, b, 0, GLM_MAX_CTX, &out->max_ctx_format[f])) != M40_OK)
                return st;
        }
    } else {
        out->max_ctx = out->max_ctx_memory = -1;
        out->fits_format[M40_WFMT_FP32] = p->fits;
    }
    return p->fits ? M40_OK : oom_message(ctx, d, b, out);
}
