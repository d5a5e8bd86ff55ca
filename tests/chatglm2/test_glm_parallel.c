/* Continuous batching in the ChatGLM2 example API (examples/chatglm2,
** glm_open_opts.parallel): several conversations in one KV cache, prefilled
** one at a time into their own cache rows (the prefill graph's slot input)
** and stepped together (the decode graph at batch `parallel`, idle rows at
** position -1). Each conversation must get exactly what it gets alone on a
** one-conversation model: the logits of every step (max |Δ| / max |ref| <=
** 1e-5 on the CPU, 1e-4 on a GPU, where batch 3 may take another GEMV
** schedule than batch 1) and the same greedy ids, while the others join
** late, leave, and a cache row is reused from position 0. Then the
** refusals: a conversation out of range or named twice in a step, stale
** logits, a step past the context.
** tests/fixtures/chatglm2/tiny.safetensors (2 layers, V = 320), fp32 and
** int8 weights. `--gpu`: on a GPU context (exit 77 without one).
** The batched model has short prefill graphs (prefill_min 2: chunks 2 and 4
** beside 5), the one-conversation model none, so every comparison also
** checks them; ladder() compares prompts of 1..70 ids through graphs of
** 2..16 rows against full 32-row chunks, every position's logits; and on a
** GPU bound_ladder() takes 600 decode steps through the attention key
** bound's steps against a CPU model. */
#include "chatglm2.h"
#include "check.h"
#include "files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL "tests/fixtures/chatglm2/tiny.safetensors"
#define NSEQ 3
#define STEPS 10
#define MAXLEN 24

static int V, gpu;

typedef struct conv {
    int32_t prompt[MAXLEN];
    int n;
    int32_t ids[STEPS + 1];    /* greedy ids alone: after the prompt, after each step */
    float *logits;             /* [STEPS + 1][V] alone */
} conv;

/* The model opened with o, or NULL after printing why (what: which open). */
static glm_model *try_open(const glm_open_opts *o, const char *what) {
    glm_model *m = NULL;
    char err[512];
    if (glm_model_open(o, &m, err, sizeof err)) {
        fprintf(stderr, "open (%s): %s\n", what, err);
        return NULL;
    }
    return m;
}

static glm_model *open_model(m40_wformat dt, int parallel) {
    glm_open_opts o;
    glm_open_opts_init(&o);
    o.path = MODEL;
    o.dtype = dt;
    o.ctx = 64;
    o.chunk = 5;
    o.prefill_min = parallel > 1 ? 2 : 5;
    o.cpu = !gpu;
    o.parallel = parallel;
    char what[32];
    snprintf(what, sizeof what, "parallel %d", parallel);
    return try_open(&o, what);
}

static int greedy(glm_model *m, int seq, int32_t *id) {
    m40_sampler_desc s;
    m40_sampler_desc_init(&s);
    s.temperature = 0.0f;
    return glm_seq_sample(m, seq, &s, id, NULL);
}

/* Each conversation alone: prompt, then STEPS greedy steps. */
static int alone(glm_model *m, conv *c) {
    glm_reset(m);
    if (glm_prefill(m, c->prompt, c->n, c->logits, NULL) || greedy(m, 0, &c->ids[0])) return 0;
    for (int k = 0; k < STEPS; k++)
        if (glm_step(m, c->ids[k], c->logits + (size_t)(k + 1) * V) || greedy(m, 0, &c->ids[k + 1]))
            return 0;
    return 1;
}

/* The batched schedule: conversation 0 starts, 2 joins after 3 steps, 1
** after 6; each runs its STEPS steps, so they finish at different times
** and the batch shrinks again. done[c]: steps taken by c. */
static void batched(glm_model *m, conv *cv, double tol, const char *tag) {
    int done[NSEQ] = {0}, started[NSEQ] = {0}, join[NSEQ] = {0, 6, 3};
    float *row = malloc((size_t)V * sizeof *row);
    double worst = 0;
    int same = 1, ok = 1;
    for (int t = 0; ok; t++) {
        for (int c = 0; c < NSEQ && ok; c++)
            if (!started[c] && t >= join[c]) {
                started[c] = 1;
                int32_t id;
                ok = glm_seq_rewind(m, c, 0) == 0 && glm_seq_prefill(m, c, cv[c].prompt, cv[c].n, NULL, NULL) == 0 &&
                     glm_seq_logits(m, c, row) == 0 && greedy(m, c, &id) == 0;
                if (ok) {
                    worst = fmax(worst, m40t_rel_err(row, cv[c].logits, V));
                    same &= id == cv[c].ids[0];
                }
            }
        int seqs[NSEQ], n = 0;
        int32_t ids[NSEQ];
        for (int c = 0; c < NSEQ; c++)
            if (started[c] && done[c] < STEPS) {
                seqs[n] = c;
                ids[n++] = cv[c].ids[done[c]]; /* the reference's ids: a miss shows in the logits */
            }
        if (!n && started[0] && started[1] && started[2]) break;
        if (!n) continue;
        if (!ok || glm_step_batch(m, n, seqs, ids)) {
            fprintf(stderr, "%s: %s\n", tag, glm_errmsg(m));
            ok = 0;
            break;
        }
        for (int i = 0; i < n && ok; i++) {
            int c = seqs[i];
            int32_t id;
            done[c]++;
            ok = glm_seq_logits(m, c, row) == 0 && greedy(m, c, &id) == 0;
            if (ok) {
                worst = fmax(worst, m40t_rel_err(row, cv[c].logits + (size_t)done[c] * V, V));
                same &= id == cv[c].ids[done[c]];
            }
        }
    }
    if (!ok) fprintf(stderr, "%s: %s\n", tag, glm_errmsg(m));
    CHECK(ok);
    for (int c = 0; c < NSEQ; c++) CHECK(done[c] == STEPS);
    printf("%-30s %s: worst step logits %.2e (tol %.0e), greedy ids %s\n", tag,
           ok && worst <= tol && same ? "ok  " : "FAIL", worst, tol, same ? "the same" : "DIFFER");
    CHECK(worst <= tol);
    CHECK(same);
    for (int c = 0; c < NSEQ; c++) CHECK(glm_seq_pos(m, c) == cv[c].n + STEPS);
    free(row);
}

/* files.c's option parsers at their bounds */
static void parse_bounds(void) {
    int devs[GLM_MAX_RANKS + 1];
    const char *why = NULL;
    glm_open_opts o;
    glm_open_opts_init(&o);
    CHECK(glm_parse_devices("0,1,2,3,4,5,6,7", "tensor", devs, &o, &why) == 0 && o.ndevices == 8);
    glm_open_opts_init(&o);
    why = NULL;
    CHECK(glm_parse_devices("0,1,2,3,4,5,6,7,8", "tensor", devs, &o, &why) == -1);
    CHECK(why && strstr(why, "at most 8") != NULL);
    glm_open_opts_init(&o);
    CHECK(glm_parse_devices("1023", NULL, devs, &o, &why) == 0 && o.device == 1023);
    glm_open_opts_init(&o);
    why = NULL;
    CHECK(glm_parse_devices("1024", NULL, devs, &o, &why) == -1 && why != NULL);
    long v = -1;
    CHECK(glm_parse_long("10", 0, 10, &v) == 0 && v == 10);
    CHECK(glm_parse_long("11", 0, 10, &v) == -1 && v == 10);
    CHECK(glm_parse_long("-1", 0, 10, &v) == -1 && v == 10);
}

static void refusals(glm_model *m) {
    int32_t id = 1, ids[2] = {1, 2};
    int two[2] = {1, 1}, bad = NSEQ;
    CHECK(glm_parallel(m) == NSEQ);
    CHECK(glm_seq_pos(m, NSEQ) == -1);
    CHECK(glm_step_batch(m, 1, &bad, &id) == -1);
    CHECK(strstr(glm_errmsg(m), "conversation 3") != NULL);
    CHECK(glm_step_batch(m, 2, two, ids) == -1);
    CHECK(strstr(glm_errmsg(m), "twice") != NULL);
    CHECK(glm_step_batch(m, 0, two, ids) == -1);
    CHECK(glm_step_batch(m, NSEQ + 1, two, ids) == -1);
    CHECK(glm_seq_prefill(m, -1, ids, 2, NULL, NULL) == -1);
    /* a prefill of 1 in the same prefill graph (3 ids: the 4-row one) makes
    ** 0's prefill logits stale; a step of 2 makes 1's */
    int32_t p[3] = {5, 6, 7};
    CHECK(glm_seq_rewind(m, 0, 0) == 0 && glm_seq_prefill(m, 0, p, 3, NULL, NULL) == 0);
    CHECK(glm_seq_rewind(m, 1, 0) == 0 && glm_seq_prefill(m, 1, p, 3, NULL, NULL) == 0);
    CHECK(greedy(m, 0, &id) == -1);
    CHECK(strstr(glm_errmsg(m), "nothing to sample") != NULL);
    CHECK(greedy(m, 1, &id) == 0);
    /* another prefill graph (2 ids: the 2-row one) leaves 1's logits alone */
    int32_t id1 = -1, id1b = -2;
    CHECK(greedy(m, 1, &id1) == 0);
    CHECK(glm_seq_rewind(m, 2, 0) == 0 && glm_seq_prefill(m, 2, p, 2, NULL, NULL) == 0);
    CHECK(greedy(m, 1, &id1b) == 0 && id1b == id1);
    int one = 1, two_ = 2;
    CHECK(glm_step_batch(m, 1, &one, p) == 0);
    CHECK(greedy(m, 1, &id) == 0);
    CHECK(glm_seq_rewind(m, 2, 0) == 0 && glm_seq_prefill(m, 2, p, 1, NULL, NULL) == 0);
    CHECK(glm_step_batch(m, 1, &two_, p) == 0);
    CHECK(greedy(m, 1, &id) == -1); /* its row ran idle in 2's step */
    /* a step past the context: the whole step is refused, nothing moves */
    CHECK(glm_seq_rewind(m, 0, 0) == 0);
    int32_t fill[64];
    for (int i = 0; i < 64; i++) fill[i] = i % V;
    CHECK(glm_seq_prefill(m, 0, fill, 64, NULL, NULL) == 0);
    int both[2] = {0, 1};
    int before = glm_seq_pos(m, 1);
    CHECK(glm_step_batch(m, 2, both, ids) == -1);
    CHECK(strstr(glm_errmsg(m), "context is full") != NULL);
    CHECK(glm_seq_pos(m, 1) == before && glm_seq_pos(m, 0) == 64);
    CHECK(glm_step_batch(m, 1, &one, ids) == 0); /* and the model still serves */
    /* a penalty history with an id outside the vocabulary is refused and
    ** leaves the old history: sampling (which reads it) still works */
    const int32_t hist_bad[3] = {1, 2, V}, hist_neg[2] = {-1, 3};
    CHECK(glm_seq_set_history(m, 1, hist_bad, 3) == -1);
    CHECK(strstr(glm_errmsg(m), "history id") != NULL);
    CHECK(glm_seq_set_history(m, 1, hist_neg, 2) == -1);
    /* ... also where it is older than the 64 ids kept */
    int32_t hist_old[70];
    for (int i = 0; i < 70; i++) hist_old[i] = i % 5;
    hist_old[0] = V;
    CHECK(glm_seq_set_history(m, 1, hist_old, 70) == -1);
    CHECK(strstr(glm_errmsg(m), "at 0 is not in") != NULL);
    CHECK(greedy(m, 1, &id) == 0);
    CHECK(glm_seq_set_history(m, 1, ids, 2) == 0 && greedy(m, 1, &id) == 0);
    /* the bounds themselves (a mutation run found them unchecked): the id
    ** V, conversation NSEQ, a rewind one past what the session holds */
    const int32_t at_v[2] = {1, V};
    CHECK(glm_seq_rewind(m, 2, 0) == 0);
    CHECK(glm_seq_prefill(m, 2, at_v, 2, NULL, NULL) == -1);
    CHECK(strstr(glm_errmsg(m), "is not in") != NULL && glm_seq_pos(m, 2) == 0);
    CHECK(glm_seq_prefill(m, NSEQ, ids, 2, NULL, NULL) == -1);
    CHECK(glm_seq_prefill(m, 2, ids, 0, NULL, NULL) == -1);
    CHECK(strstr(glm_errmsg(m), "no ids") != NULL && glm_seq_pos(m, 2) == 0);
    float *all = malloc((size_t)2 * V * sizeof *all); /* every position's logits: not opened so */
    CHECK(glm_seq_prefill(m, 2, ids, 2, NULL, all) == -1);
    CHECK(strstr(glm_errmsg(m), "all_logits") != NULL && glm_seq_pos(m, 2) == 0);
    free(all);
    CHECK(glm_seq_rewind(m, NSEQ, 0) == -1);
    CHECK(strstr(glm_errmsg(m), "conversation 3") != NULL);
    CHECK(glm_seq_rewind(m, 1, glm_seq_pos(m, 1) + 1) == -1);
    CHECK(glm_seq_rewind(m, 1, -1) == -1 && glm_seq_pos(m, 1) >= 0);
    CHECK(glm_seq_set_history(m, 1, ids, -1) == -1);
    CHECK(strstr(glm_errmsg(m), "history of -1") != NULL);
    CHECK(glm_seq_rewind(m, 1, glm_seq_pos(m, 1)) == 0);
    /* a rewind, even to where the session is, leaves nothing to sample */
    CHECK(greedy(m, 1, &id) == -1);
}

/* Idle rows: 3 conversations step in the batch-4 graph of a 4-conversation
** model; its idle row (position -1) must leave conversation 0's cache row
** alone (a mutation run found no test with idle rows: batches 1, 2, 3 here).
** Conversation 0's next step then equals the one-conversation model's. */
static void idle_rows(glm_model *one, m40_wformat dt, double tol) {
    glm_model *m = open_model(dt, 4);
    CHECK(m != NULL);
    if (!m) return;
    const int32_t a[6] = {11, 200, 3, 77, 150, 9}, b[3] = {4, 5, 6}, x = 42;
    const int others[3] = {1, 2, 3}, zero = 0;
    const int32_t step3[3] = {7, 8, 9};
    float *l0 = malloc((size_t)V * sizeof *l0), *l1 = malloc((size_t)V * sizeof *l1);
    int ok = glm_seq_prefill(m, 0, a, 6, NULL, NULL) == 0;
    for (int c = 1; c < 4 && ok; c++) ok = glm_seq_prefill(m, c, b, 3, NULL, NULL) == 0;
    ok = ok && glm_step_batch(m, 3, others, step3) == 0 && glm_step_batch(m, 1, &zero, &x) == 0 &&
         glm_seq_logits(m, 0, l0) == 0;
    glm_reset(one);
    ok = ok && glm_prefill(one, a, 6, NULL, NULL) == 0 && glm_step(one, x, l1) == 0;
    CHECK(ok);
    if (ok) CHECK(m40t_rel_err(l0, l1, V) <= tol);
    free(l0);
    free(l1);
    glm_model_close(m);
}

/* The defaults (a mutation run found them unpinned): no ctx, chunk or
** prefill_min: the cache 8192 (no config.json, no seq_length), chunks of
** 256, short prefill graphs 16, 32, ..., 128. */
static void defaults(void) {
    glm_open_opts o;
    glm_open_opts_init(&o);
    o.path = MODEL;
    o.dtype = M40_WFMT_FP32;
    o.cpu = 1;
    glm_model *m = try_open(&o, "defaults");
    CHECK(m != NULL);
    if (!m) return;
    int sz[16];
    CHECK(glm_ctx_len(m) == 8192 && glm_chunk(m) == 256 && glm_parallel(m) == 1);
    CHECK(glm_prefill_sizes(m, sz, 16) == 5 && sz[0] == 16 && sz[3] == 128 && sz[4] == 256);
    sz[2] = -1; /* no more than max sizes written */
    CHECK(glm_prefill_sizes(m, sz, 2) == 2 && sz[0] == 16 && sz[1] == 32 && sz[2] == -1);
    glm_model_close(m);
    o.parallel = 2; /* the smallest batched model */
    o.ctx = 64;
    m = try_open(&o, "parallel 2");
    CHECK(m && glm_parallel(m) == 2 && glm_seq_pos(m, 1) == 0);
    glm_model_close(m);
    o.parallel = GLM_MAX_PARALLEL; /* the most conversations are served */
    o.ctx = 16;
    m = try_open(&o, "parallel GLM_MAX_PARALLEL");
    CHECK(m && glm_parallel(m) == GLM_MAX_PARALLEL);
    glm_model_close(m);
    o.parallel = 1; /* the most devices are taken: refused for the 2 layers, not their count */
    o.ndevices = GLM_MAX_RANKS;
    o.layer_split = 1;
    m = NULL;
    char err[512];
    CHECK(glm_model_open(&o, &m, err, sizeof err) == -1 && m == NULL);
    CHECK(strstr(err, "8 devices for 2 layers") != NULL);
}

/* A draw (temperature 1) is m40_sample's at the conversation's position:
** for 16 seeds, the ids of m40_sample on its logits with pos = glm_pos, and
** for some seed not those of the next position. */
static void sample_pos(glm_model *m) {
    const int32_t p[5] = {3, 1, 4, 1, 5};
    glm_reset(m);
    CHECK(glm_prefill(m, p, 5, NULL, NULL) == 0);
    m40_ctx *ctx = glm_ctx(m);
    m40_tensor *tl = NULL, *tp = NULL, *to = NULL;
    const int64_t sl[2] = {1, V}, sp[1] = {1}, so[2] = {1, 2};
    float *l = malloc((size_t)V * sizeof *l), out[2];
    CHECK(glm_seq_logits(m, 0, l) == 0);
    CHECK(m40_tensor_new(ctx, M40_DTYPE_F32, 2, sl, &tl) == M40_OK &&
          m40_tensor_new(ctx, M40_DTYPE_I32, 1, sp, &tp) == M40_OK &&
          m40_tensor_new(ctx, M40_DTYPE_F32, 2, so, &to) == M40_OK);
    CHECK(m40_tensor_upload(ctx, tl, l, (size_t)V * 4) == M40_OK);
    int same = 1, moved = 0;
    for (int seed = 1; seed <= 16; seed++) {
        m40_sampler_desc s;
        m40_sampler_desc_init(&s);
        s.seed = (uint64_t)seed;
        int32_t id = -1, want[2];
        CHECK(glm_seq_sample(m, 0, &s, &id, NULL) == 0);
        for (int k = 0; k < 2; k++) {
            const int32_t pos = glm_pos(m) + k;
            CHECK(m40_tensor_upload(ctx, tp, &pos, 4) == M40_OK &&
                  m40_sample(ctx, &s, tl, NULL, tp, to) == M40_OK &&
                  m40_tensor_download(ctx, to, out, sizeof out) == M40_OK);
            want[k] = (int32_t)out[0];
        }
        same &= id == want[0];
        moved |= id != want[1];
    }
    CHECK(same && moved);
    m40_tensor_destroy(tl);
    m40_tensor_destroy(tp);
    m40_tensor_destroy(to);
    free(l);
}

/* The repetition penalty's history (a mutation run found it unpinned):
** greedy under a large penalty must give the best id outside the ids the
** session has seen, computed here from the same logits (lib/ref/sample.c's
** rule: a positive logit divided by the penalty, a negative multiplied). */
#define PEN 1000.0f

static int32_t oracle(const float *l, const int32_t *hist, int nh) {
    int32_t best = 0;
    float bx = 0;
    for (int v = 0; v < V; v++) {
        float x = l[v];
        for (int j = 0; j < nh; j++)
            if (hist[j] == v) {
                x = x > 0 ? x / PEN : x * PEN;
                break;
            }
        if (v == 0 || x > bx) best = v, bx = x;
    }
    return best;
}

static int penalized(glm_model *m, int32_t *id) {
    m40_sampler_desc s;
    m40_sampler_desc_init(&s);
    s.temperature = 0.0f;
    s.repetition_penalty = PEN;
    return glm_seq_sample(m, 0, &s, id, NULL);
}

/* 40 random ids, the first np prefilled and the rest stepped one at a time,
** such that the next token's argmax is one of ids[lo..hi) and none other of
** the 40 (a history that lost ids[lo..hi) would pick it): the first of up to
** 64 seeds that gives one. l: the logits there. */
static int find_state(glm_model *m, int32_t *ids, int np, int lo, int hi, float *l) {
    uint32_t r = 4242u + (uint32_t)np;
    for (int t = 0; t < 64; t++) {
        for (int i = 0; i < 40; i++) {
            r = r * 1664525u + 1013904223u;
            ids[i] = (int32_t)((r >> 8) % (uint32_t)V);
        }
        glm_reset(m);
        if (glm_prefill(m, ids, np, NULL, NULL)) return 0;
        for (int i = np; i < 40; i++)
            if (glm_step(m, ids[i], NULL)) return 0;
        if (glm_seq_logits(m, 0, l)) return 0;
        const int32_t g = oracle(l, NULL, 0);
        int in = 0, out = 0;
        for (int i = 0; i < 40; i++) {
            if (ids[i] == g && i >= lo && i < hi) in = 1;
            if (ids[i] == g && (i < lo || i >= hi)) out = 1;
        }
        if (in && !out) return 1;
    }
    return 0;
}

static void penalty_history(glm_model *m) {
    float *l = malloc((size_t)V * sizeof *l);
    int32_t ids[40], id = -1, h[65];
    /* every prefilled id is in the history, not only the last */
    CHECK(find_state(m, ids, 40, 0, 39, l));
    CHECK(penalized(m, &id) == 0 && id == oracle(l, ids, 40) && id != oracle(l, NULL, 0));
    /* a rewind to a later position keeps it (the cache's ids are gone; the
    ** history is not rebuilt): the 40 ids and the one prefilled again */
    CHECK(glm_rewind(m, 39) == 0 && glm_prefill(m, ids + 39, 1, NULL, NULL) == 0);
    CHECK(glm_seq_logits(m, 0, l) == 0);
    const int32_t g = oracle(l, NULL, 0);
    CHECK(g != ids[39] && oracle(l, ids, 40) != g);
    CHECK(penalized(m, &id) == 0 && id == oracle(l, ids, 40));
    /* set_history of 65 ids keeps the last 64 (the one at 1 is g) ... */
    const int32_t other = (g + 1) % V;
    for (int i = 0; i < 65; i++) h[i] = i == 1 ? g : other;
    CHECK(glm_seq_set_history(m, 0, h, 65) == 0);
    CHECK(penalized(m, &id) == 0 && id == oracle(l, h + 1, 64) && id != g);
    /* ... and replaces what was there */
    CHECK(glm_seq_set_history(m, 0, &g, 1) == 0 && penalized(m, &id) == 0 && id != g);
    CHECK(glm_seq_set_history(m, 0, &other, 1) == 0);
    CHECK(penalized(m, &id) == 0 && id == g);
    /* every stepped id is in the history too */
    CHECK(find_state(m, ids, 1, 1, 39, l));
    CHECK(penalized(m, &id) == 0 && id == oracle(l, ids, 40) && id != oracle(l, NULL, 0));
    free(l);
}

/* A one-conversation model in 32-id chunks: a cache of ctx tokens, short
** prefill graphs from prefill_min (< 0: the default), every position's
** logits if all_logits, on the CPU if cpu. */
static glm_model *open_chunked(m40_wformat dt, int ctx, int prefill_min, int all_logits, int cpu,
                               const char *what) {
    glm_open_opts o;
    glm_open_opts_init(&o);
    o.path = MODEL;
    o.dtype = dt;
    o.ctx = ctx;
    o.chunk = 32;
    if (prefill_min >= 0) o.prefill_min = prefill_min;
    o.all_logits = all_logits;
    o.cpu = cpu;
    return try_open(&o, what);
}

/* Short prefill graphs: a prompt of n ids through the ladder (chunks 2, 4,
** 8, 16 and 32) gives every position's logits of full 32-id chunks, then
** the same greedy step; a second round appends at a later position. */
static void ladder(m40_wformat dt, double tol) {
    glm_model *m[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) m[k] = open_chunked(dt, 160, k ? 64 : 2, 1, !gpu, "ladder");
    CHECK(m[0] && m[1]);
    if (!m[0] || !m[1]) goto out;
    int sz[16], ns = glm_prefill_sizes(m[0], sz, 16);
    CHECK(ns == 5 && sz[0] == 2 && sz[1] == 4 && sz[2] == 8 && sz[3] == 16 && sz[4] == 32);
    CHECK(glm_prefill_sizes(m[1], sz, 16) == 1 && sz[0] == 32);
    CHECK(glm_graphs_bytes(m[0]) > glm_graphs_bytes(m[1]));
    static const int lens[] = {1, 2, 3, 5, 8, 9, 16, 17, 31, 32, 33, 47, 70};
    const int nl = (int)(sizeof lens / sizeof lens[0]);
    float *a = malloc((size_t)93 * V * sizeof *a), *b = malloc((size_t)93 * V * sizeof *b);
    int32_t ids[70], id[2];
    double worst = 0;
    int same = 1, ok = 1;
    uint32_t r = 777u;
    for (int i = 0; i < 70; i++) {
        r = r * 1664525u + 1013904223u;
        ids[i] = (int32_t)((r >> 8) % (uint32_t)V);
    }
    for (int li = 0; li < nl && ok; li++) {
        const int n = lens[li], n2 = lens[nl - 1 - li] % 23 + 1; /* then a second round */
        for (int k = 0; k < 2 && ok; k++) {
            float *out = k ? b : a;
            glm_reset(m[k]);
            ok = glm_prefill(m[k], ids, n, NULL, out) == 0 &&
                 glm_prefill(m[k], ids + 7, n2, NULL, out + (size_t)n * V) == 0 &&
                 greedy(m[k], 0, &id[k]) == 0 && glm_pos(m[k]) == n + n2;
        }
        CHECK(ok);
        for (int i = 0; ok && i < n + n2; i++) {
            double e = m40t_rel_err(a + (size_t)i * V, b + (size_t)i * V, V);
            if (e > worst) worst = e;
        }
        if (id[0] != id[1]) same = 0;
    }
    printf("%s %s ladder, prompts of 1..70 and a second round: max |d|/max|ref| %.3g (tol %.0e), "
           "greedy ids %s\n", ok && worst <= tol && same ? "ok  " : "FAIL", m40_wformat_name(dt), worst, tol,
           same ? "the same" : "DIFFER");
    CHECK(worst <= tol);
    CHECK(same);
    free(a);
    free(b);
out:
    glm_model_close(m[0]);
    glm_model_close(m[1]);
}

/* The decode step's attention key bound (glm_step_batch: 128, 256, 512,
** then powers of two; each step up re-captures the decode graph, and up to
** 512 keys decode v5 runs in ceil(bound / 16) splits) on a GPU, in a
** 1024-token cache: 20 prompt ids, then 600 steps through 128, 256 and 512
** keys, each step's logits against a CPU model fed the same ids (the CPU's
** greedy choice, so both stay on one path). The test's other models have
** caches of 64 tokens, where the bound is always 512. */
static void bound_ladder(m40_wformat dt, double tol) {
    if (!gpu) return;
    glm_model *m[2] = {NULL, NULL}; /* GPU, CPU */
    for (int k = 0; k < 2; k++)
        m[k] = open_chunked(dt, 1024, -1, 0, k, k ? "bound ladder, cpu" : "bound ladder, gpu");
    CHECK(m[0] && m[1]);
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    int32_t ids[20];
    for (int i = 0; i < 20; i++) ids[i] = (int32_t)((i * 37 + 11) % V);
    int ok = m[0] && m[1] && a && b, n = 0;
    double worst = 0;
    for (int k = 0; k < 2 && ok; k++) ok = glm_prefill(m[k], ids, 20, k ? b : a, NULL) == 0;
    if (ok) worst = m40t_rel_err(a, b, V);
    for (; ok && n < 600; n++) { /* both take the CPU's greedy id, then compare */
        const int32_t id = m40t_argmax(b, V);
        ok = glm_step(m[0], id, a) == 0 && glm_step(m[1], id, b) == 0;
        if (ok) worst = fmax(worst, m40t_rel_err(a, b, V));
    }
    CHECK(ok && n == 600 && glm_pos(m[0]) == 620);
    printf("%s %s key-bound ladder on the GPU, 20 ids + %d steps against the CPU: max |d|/max|ref| "
           "%.3g (tol %.0e)\n", ok && worst <= tol ? "ok  " : "FAIL", m40_wformat_name(dt), n, worst, tol);
    CHECK(worst <= tol);
    free(a);
    free(b);
    glm_model_close(m[0]);
    glm_model_close(m[1]);
}

int main(int argc, char **argv) {
    if (m40t_side(argc, argv, &gpu)) return M40T_SKIP;
    parse_bounds();
    if (!gpu) defaults();
    const m40_wformat fmts[2] = {M40_WFMT_FP32, M40_WFMT_INT8};
    for (int f = 0; f < 2; f++) {
        glm_model *one = open_model(fmts[f], 1), *many = open_model(fmts[f], NSEQ);
        CHECK(one && many);
        if (!one || !many) {
            glm_model_close(one);
            glm_model_close(many);
            continue;
        }
        V = glm_config(one)->vocab;
        conv cv[NSEQ];
        uint32_t r = 12345u + (uint32_t)f;
        for (int c = 0; c < NSEQ; c++) {
            cv[c].n = 3 + 7 * c; /* 3, 10, 17: one chunk, two, four */
            for (int i = 0; i < cv[c].n; i++) {
                r = r * 1664525u + 1013904223u;
                cv[c].prompt[i] = (int32_t)((r >> 8) % (uint32_t)V);
            }
            cv[c].logits = malloc((size_t)(STEPS + 1) * V * sizeof(float));
            CHECK(alone(one, &cv[c]));
        }
        /* the three must differ, or mixing up rows would go unseen */
        CHECK(cv[0].ids[0] != cv[1].ids[0] || cv[0].ids[1] != cv[1].ids[1] ||
              m40t_rel_err(cv[0].logits, cv[1].logits, V) > 1e-3);
        char tag[64];
        snprintf(tag, sizeof tag, "%s %s, 3 conversations", gpu ? "gpu" : "cpu", m40_wformat_name(fmts[f]));
        batched(many, cv, gpu ? 1e-4 : 1e-5, tag);
        /* again on the same cache rows (rewound to 0): nothing of the first round stays */
        snprintf(tag, sizeof tag, "%s %s, rows reused", gpu ? "gpu" : "cpu", m40_wformat_name(fmts[f]));
        batched(many, cv, gpu ? 1e-4 : 1e-5, tag);
        /* the decode plan said is the largest decode graph's: batch 3's
        ** activations, over twice batch 1's */
        m40_plan_info d1, d3;
        glm_plans(one, NULL, &d1);
        glm_plans(many, NULL, &d3);
        CHECK(d3.arena_lower_bound > 2 * d1.arena_lower_bound);
        refusals(many);
        penalty_history(one);
        sample_pos(one);
        idle_rows(one, fmts[f], gpu ? 1e-4 : 1e-5);
        for (int c = 0; c < NSEQ; c++) free(cv[c].logits);
        glm_model_close(one);
        glm_model_close(many);
        ladder(fmts[f], gpu ? 1e-4 : 1e-5);
        bound_ladder(fmts[f], 1e-4);
    }
    return m40t_finish(argv[0]);
}
