/* Model-level plans: both phases of a transformer share one activation
** arena and one workspace (they never run at once), so the model needs the
** larger of each; persistent regions count once. Then the what-would-fit
** searches: largest batch, longest context, other weight formats. Every
** probe is a full graph plan, so the answers follow the planner exactly. */
#include "graph_internal.h"
#include "m40/plan.h"
#include "../checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GLM_MAX_CTX 32768
#define CTX_SEARCH_LIMIT ((int64_t)1 << 22)
#define BATCH_SEARCH_LIMIT 4096

typedef struct evald {
    m40_plan_info plan;
    uint64_t params, arena[2], lb[2], ws[2];
    int phases;
} evald;

/* The model's plan, or (l0 < l1) that of the pipeline stage of blocks
** [l0, l1). */
static m40_status eval_part(m40_ctx *ctx, const m40_model_desc *d, int l0, int l1, int tp,
                            evald *e) {
    memset(e, 0, sizeof *e);
    e->phases = d->model == M40_MODEL_CHATGLM2_6B ? 2 : 1;
    for (int ph = 0; ph < e->phases; ph++) {
        m40_graph *g = NULL;
        uint64_t params = 0;
        m40_status st = m40__model_graph(ctx, d, ph, l0, l1, tp, &g, &params);
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

static m40_status eval_layers(m40_ctx *ctx, const m40_model_desc *d, int l0, int l1, evald *e) {
    return eval_part(ctx, d, l0, l1, 0, e);
}

static m40_status eval(m40_ctx *ctx, const m40_model_desc *d, evald *e) {
    return eval_layers(ctx, d, 0, 0, e);
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

/* ------------------------------------------------------------------ */
/* Several cards: a layer split                                        */

/* Blocks are alike, so a stage's plan depends only on its block count and
** on whether it is the first (embedding) and the last (output layer):
** memo[first][last][n]. The search probes from the memo; the stages it
** settles on are planned again with their own ranges. */
typedef struct split_memo {
    const m40_model_desc *d;
    int layers;
    evald *e;    /* [2][2][layers + 1] */
    char *done;
} split_memo;

static m40_status stage_cost(m40_ctx *ctx, split_memo *m, int b, int e, const evald **out) {
    int first = b == 0, last = e == m->layers, n = e - b;
    size_t k = ((size_t)first * 2 + (size_t)last) * (size_t)(m->layers + 1) + (size_t)n;
    if (!m->done[k]) {
        m40_status st = eval_layers(ctx, m->d, b, e, &m->e[k]);
        if (st != M40_OK) return st;
        m->done[k] = 1;
    }
    *out = &m->e[k];
    return M40_OK;
}

/* Fills the cards in order, each with the most blocks whose stage takes at
** most r x its usable bytes (a stage's bytes grow with its blocks, and
** shrink as it starts later, so this reaches furthest of all splits at r).
** ends[i]: card i's blocks end there. *ok: every block found a card. */
static m40_status greedy(m40_ctx *ctx, split_memo *m, const m40_budget *cards, int n, double r,
                         int *ends, int *ok) {
    int b = 0;
    for (int i = 0; i < n; i++) {
        double cap = r * (double)cards[i].usable_bytes;
        int lo = b, hi = m->layers; /* [b, lo) fits; the answer is in lo..hi */
        while (lo < hi) {
            int mid = lo + (hi - lo + 1) / 2;
            const evald *e;
            m40_status st = stage_cost(ctx, m, b, mid, &e);
            if (st != M40_OK) return st;
            if ((double)e->plan.total_bytes <= cap) lo = mid;
            else hi = mid - 1;
        }
        ends[i] = b = lo;
    }
    *ok = b == m->layers;
    return M40_OK;
}

static void memo_free(split_memo *m) {
    free(m->e);
    free(m->done);
    m->e = NULL;
    m->done = NULL;
}

static m40_status memo_init(m40_ctx *ctx, split_memo *m, const m40_model_desc *d, int layers) {
    size_t n = 4 * ((size_t)layers + 1);
    m->d = d;
    m->layers = layers;
    m->e = calloc(n, sizeof *m->e);
    m->done = calloc(n, 1);
    if (m->e && m->done) return M40_OK;
    memo_free(m);
    return m40__err(ctx, M40_ERR_OOM_HOST, "m40_model_plan_split: out of host memory");
}


/* Whether d fits the n cards one way (a layer split, tensor parallelism). */
typedef m40_status (*cards_fit_fn)(m40_ctx *ctx, const m40_model_desc *d,
                                   const m40_budget *cards, int n, int *fits);

/* Whether some layer split of d fits the cards. */
static m40_status split_fits(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *cards,
                             int n, int *fits) {
    m40_chatglm2_config c;
    m40_chatglm2_config_6b(&c);
    split_memo m;
    int ends[M40_PLAN_MAX_CARDS];
    m40_status st = memo_init(ctx, &m, d, c.layers);
    if (st == M40_OK) st = greedy(ctx, &m, cards, n, 1.0, ends, fits);
    memo_free(&m);
    return st;
}

/* The longest context in 1..GLM_MAX_CTX at which d fits the cards by `fit`
** (0: none); memory grows with the context, so bisection is exact. */
static m40_status longest_ctx(m40_ctx *ctx, const m40_model_desc *base, const m40_budget *cards,
                              int n, cards_fit_fn fit, int64_t *best) {
    m40_model_desc d = *base;
    int f = 0;
    m40_status st;
    int64_t lo = 0, hi = GLM_MAX_CTX + 1; /* lo fits (0: vacuously), hi does not */
    d.ctx = GLM_MAX_CTX; /* the usual answer first: one probe instead of 15 */
    if ((st = fit(ctx, &d, cards, n, &f)) != M40_OK) return st;
    if (f) lo = GLM_MAX_CTX;
    else hi = GLM_MAX_CTX;
    while (hi - lo > 1) {
        d.ctx = lo + (hi - lo) / 2;
        if ((st = fit(ctx, &d, cards, n, &f)) != M40_OK) return st;
        if (f) lo = d.ctx;
        else hi = d.ctx;
    }
    *best = lo;
    return M40_OK;
}

/* Every format at d's batch and context, and its longest context, by `fit`. */
static m40_status formats_fit(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *cards,
                              int n, cards_fit_fn fit, m40_split_plan *out) {
    m40_status st;
    for (int f = 0; f < M40_WFMT_COUNT; f++) {
        m40_model_desc df = *d;
        df.weights = (m40_wformat)f;
        if ((st = fit(ctx, &df, cards, n, &out->fits_format[f])) != M40_OK ||
            (st = longest_ctx(ctx, &df, cards, n, fit, &out->max_ctx_format[f])) != M40_OK)
            return st;
    }
    out->max_ctx = out->max_ctx_format[d->weights];
    return M40_OK;
}

/* The split that makes the fullest card least full: the smallest r at
** which greedy places every block, by bisection. */
static m40_status balance(m40_ctx *ctx, split_memo *m, const m40_budget *cards, int n,
                          int *ends) {
    int ok = 0;
    double lo = 0, hi = 1;
    m40_status st;
    while ((st = greedy(ctx, m, cards, n, hi, ends, &ok)) == M40_OK && !ok && hi < 1e15)
        lo = hi, hi *= 2;
    if (st != M40_OK) return st;
    for (int it = 0; it < 48 && hi - lo > 1e-9 * hi; it++) {
        double mid = lo + (hi - lo) / 2;
        if ((st = greedy(ctx, m, cards, n, mid, ends, &ok)) != M40_OK) return st;
        if (ok) hi = mid;
        else lo = mid;
    }
    return greedy(ctx, m, cards, n, hi, ends, &ok);
}

static m40_status split_message(m40_ctx *ctx, const m40_model_desc *d, const m40_split_plan *sp) {
    char need[32], have[32], sh[32], all[32], tot[32], alt[320] = "", names[160] = "";
    size_t n = 0, nn = 0;
    int worst = 0;
    double wf = -1;
    for (int i = 0; i < sp->ncards; i++) {
        const m40_stage_plan *s = &sp->stage[i];
        double f = s->card.usable_bytes ? (double)s->plan.total_bytes / (double)s->card.usable_bytes : 0;
        if (f > wf) wf = f, worst = i;
        if (nn < sizeof names - 40)
            nn += (size_t)snprintf(names + nn, sizeof names - nn, "%s%s", i ? ", " : "",
                                   s->card.name);
    }
    if (sp->max_ctx > 0)
        n += (size_t)snprintf(alt + n, sizeof alt - n, "%s with ctx <= %lld; ",
                              m40_wformat_name(d->weights), (long long)sp->max_ctx);
    for (int f = 0; f < M40_WFMT_COUNT; f++)
        if (f != (int)d->weights && sp->max_ctx_format[f] > 0 && n < sizeof alt - 64)
            n += (size_t)snprintf(alt + n, sizeof alt - n, "%s with ctx <= %lld%s; ",
                                  m40_wformat_name((m40_wformat)f),
                                  (long long)sp->max_ctx_format[f],
                                  sp->fits_format[f] == 1 ? " (fits as asked)" : "");
    if (n >= 2) alt[n - 2] = '\0';
    const m40_stage_plan *w = &sp->stage[worst];
    return m40__err(ctx, M40_ERR_OOM_DEVICE,
                    "%s %s (batch %d, ctx %lld) %s over %d card%s (%s) needs %s in all, "
                    "with %s usable: at the most even split card %d (%s, layers %d-%d) needs "
                    "%s, short by %s; short by %s over all cards. Would fit: %s",
                    m40_model_name(d->model), m40_wformat_name(d->weights), d->batch,
                    (long long)d->ctx, sp->tensor ? "tensor-parallel" : "split", sp->ncards,
                    sp->ncards > 1 ? "s" : "", names,
                    m40__fmt_bytes(sp->total_bytes, need, sizeof need),
                    m40__fmt_bytes(sp->usable_bytes, have, sizeof have), worst, w->card.name,
                    w->layer_begin, w->layer_end - 1,
                    m40__fmt_bytes(w->plan.total_bytes, all, sizeof all),
                    m40__fmt_bytes((uint64_t)(w->plan.headroom_bytes < 0 ? -w->plan.headroom_bytes : 0),
                                   sh, sizeof sh),
                    m40__fmt_bytes(sp->shortfall_bytes, tot, sizeof tot),
                    alt[0] ? alt : "nothing on these cards at batch 1");
}

/* The arguments of m40_model_plan_split / _tensor; then *out starts empty
** with the model's shape. what: "transformer blocks to split (a layer
** split" or "attention heads to split (tensor parallelism". */
static m40_status cards_check(m40_ctx *ctx, const char *fn, const char *what,
                              const m40_model_desc *d, const m40_budget *cards, int ncards,
                              m40_split_plan *out) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d || !cards || !out) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: NULL argument", fn);
    if (d->struct_size < sizeof *d)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: desc->struct_size is %zu, expected %zu "
                        "(fill it with m40_model_desc_init)", fn, d->struct_size, sizeof *d);
    if (ncards < 1 || ncards > M40_PLAN_MAX_CARDS)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: %d cards (1..%d)", fn, ncards,
                        M40_PLAN_MAX_CARDS);
    if (d->model != M40_MODEL_CHATGLM2_6B)
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: %s has no %s is for ChatGLM2)", fn,
                        m40_model_name(d->model), what);
    for (int i = 0; i < ncards; i++)
        if (cards[i].usable_bytes == 0)
            return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: card %d (%.32s) has no usable bytes",
                            fn, i, cards[i].name);
    memset(out, 0, sizeof *out);
    m40_chatglm2_config c;
    m40_chatglm2_config_6b(&c);
    out->ncards = ncards;
    out->layers = c.layers;
    out->model_max_ctx = GLM_MAX_CTX;
    out->fits = 1;
    return M40_OK;
}

/* Card i's stage (its plan e, when it holds anything) against its budget,
** and the totals. */
static void stage_fill(m40_split_plan *out, int i, const m40_budget *card, const evald *e) {
    m40_stage_plan *s = &out->stage[i];
    s->card = *card;
    if (e) {
        s->plan = e->plan;
        s->params = e->params;
        for (int ph = 0; ph < 2; ph++) {
            s->arena[ph] = e->arena[ph];
            s->workspace[ph] = e->ws[ph];
        }
    }
    m40_plan_info *p = &s->plan;
    p->usable_bytes = card->usable_bytes;
    p->fits = p->total_bytes <= p->usable_bytes;
    p->headroom_bytes = m40__headroom(p->usable_bytes, p->total_bytes);
    out->fits = out->fits && p->fits;
    out->total_bytes = m40__sat_add_u64(out->total_bytes, p->total_bytes);
    out->usable_bytes = m40__sat_add_u64(out->usable_bytes, p->usable_bytes);
    if (!p->fits)
        out->shortfall_bytes = m40__sat_add_u64(out->shortfall_bytes,
                                                p->total_bytes - p->usable_bytes);
    double f = (double)p->total_bytes / (double)p->usable_bytes;
    if (f > out->fill) out->fill = f;
}

m40_status m40_model_plan_split(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *cards,
                                int ncards, m40_split_plan *out) {
    m40_status st = cards_check(ctx, "m40_model_plan_split", "transformer blocks to split (a "
                                "layer split", d, cards, ncards, out);
    if (st != M40_OK) return st;
    m40_chatglm2_config c;
    m40_chatglm2_config_6b(&c);
    out->hidden_bytes_per_token = (uint64_t)d->batch * (uint64_t)c.hidden * 4;
    /* the whole model once: checks the desc, gives the parameters */
    evald whole;
    if ((st = eval(ctx, d, &whole)) != M40_OK) return st;
    out->params = whole.params;
    split_memo m;
    int ends[M40_PLAN_MAX_CARDS];
    if ((st = memo_init(ctx, &m, d, c.layers)) != M40_OK) return st;
    st = balance(ctx, &m, cards, ncards, ends);
    memo_free(&m);
    if (st != M40_OK) return st;
    /* the stages it settled on, each planned with its own range */
    int b = 0, first = -1, last = -1;
    for (int i = 0; i < ncards; i++) {
        if (ends[i] > b && first < 0) first = i;
        if (ends[i] > b) last = i;
        b = ends[i];
    }
    b = 0;
    for (int i = 0; i < ncards; i++) {
        m40_stage_plan *s = &out->stage[i];
        s->layer_begin = b;
        s->layer_end = ends[i];
        evald e;
        if (ends[i] > b) {
            if ((st = eval_layers(ctx, d, b, ends[i], &e)) != M40_OK) return st;
            s->embedding = i == first;
            s->output = i == last;
        }
        stage_fill(out, i, &cards[i], ends[i] > b ? &e : NULL);
        b = ends[i];
    }
    if ((st = formats_fit(ctx, d, cards, ncards, split_fits, out)) != M40_OK) return st;
    return out->fits ? M40_OK : split_message(ctx, d, out);
}

/* ---- tensor parallelism over the cards ------------------------------------- */

/* Every rank of tp holds the same bytes (its share of every block, the
** embedding and output layer whole): rank 0's plan is each card's. fits:
** on every card; a format the split refuses (int4g128 whose slices are not
** whole 128-groups) does not fit. */
static m40_status tp_fits(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *cards, int n,
                          int *fits) {
    evald e;
    m40_status st = eval_part(ctx, d, 0, 0, n, &e);
    *fits = 0;
    if (st == M40_ERR_UNSUPPORTED) return M40_OK;
    if (st != M40_OK) return st;
    *fits = 1;
    for (int i = 0; i < n; i++) *fits &= e.plan.total_bytes <= cards[i].usable_bytes;
    return M40_OK;
}

m40_status m40_model_plan_tensor(m40_ctx *ctx, const m40_model_desc *d, const m40_budget *cards,
                                 int ncards, m40_split_plan *out) {
    m40_status st = cards_check(ctx, "m40_model_plan_tensor", "attention heads to split (tensor "
                                "parallelism", d, cards, ncards, out);
    if (st != M40_OK) return st;
    m40_chatglm2_config c;
    m40_chatglm2_config_6b(&c);
    out->tensor = 1;
    /* two all-reduces per block, each of the whole hidden state */
    out->hidden_bytes_per_token = ncards > 1 ? 2 * (uint64_t)c.layers * (uint64_t)d->batch *
                                                   (uint64_t)c.hidden * 4 : 0;
    evald whole, e;
    if ((st = eval(ctx, d, &whole)) != M40_OK) return st;
    out->params = whole.params;
    if ((st = eval_part(ctx, d, 0, 0, ncards, &e)) != M40_OK) return st; /* e.g. 3 ranks, 32 heads */
    for (int i = 0; i < ncards; i++) {
        out->stage[i].layer_end = c.layers;
        out->stage[i].embedding = out->stage[i].output = 1;
        stage_fill(out, i, &cards[i], &e);
    }
    if ((st = formats_fit(ctx, d, cards, ncards, tp_fits, out)) != M40_OK) return st;
    return out->fits ? M40_OK : split_message(ctx, d, out);
}
