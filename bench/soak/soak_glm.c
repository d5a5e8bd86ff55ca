/* m40-soak's ChatGLM2 workload: see soak_glm.h.
**
** Rounds, as a chat session runs them:
**   start   every K-th round (and round 0): a full reset: position 0, the
**           sampler's history cleared, and the KV cache overwritten with
**           noise (uniform [-1, 1)), so a position the model read without
**           writing it first would change what it says; the other rounds
**           rewind by a random 0..R tokens (what an edited or regenerated
**           answer does), and a round that would not fit the cache resets
**   prefill P random ids in chunks of T (the last one front-padded with
**           position -1, as examples/chatglm2 does), then sample
**   decode  R steps: one token through the decode graph (a CUDA graph
**           replay on a GPU after the first run), then sample
** Sampling: m40_sample (temperature 0.8, top-k 40, top-p 0.95, repetition
** penalty 1.1 over the last 64 ids, seeded: a draw depends on the seed and
** the position only). Every round that starts with a full reset prefills
** round 0's prompt, so it must say round 0's ids again: the repeat check.
** It holds exactly on a CPU context; on a GPU prefill's split-K sums may
** differ in the last bit (docs/quant.md), so there it is reported only. */
#define _POSIX_C_SOURCE 200809L
#include "soak_glm.h"

#include <m40/transformer.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY 64 /* ids the repetition penalty looks back over */
#define MAX_KV 2048 /* 2 per layer */

struct soak_glm {
    m40_ctx *ctx;
    soak_glm_opts o;
    int gpu;
    m40_chatglm2_config cfg;
    m40_graph *pg, *dg;           /* prefill chunk [1,T], decode step [1,1] */
    m40_chatglm2_info pi, di;
    m40_tensor *kv[MAX_KV];       /* [1, ctx, G, D] f16: k, v of layer 0, k, v of layer 1, ... */
    int nkv;
    m40_tensor *p_ids, *p_pos, *d_ids, *d_pos; /* the graphs' inputs */
    m40_tensor *pview, *dview;    /* [1,V] views of the two graphs' logits */
    m40_tensor *t_hist, *t_pos, *t_out; /* sampler: [1,HISTORY] i32, [1] i32, [1,2] f32 */
    m40_sampler_desc sd;
    int32_t *ids, *posb;          /* [T]: one prefill chunk */
    int32_t *prompt;              /* [P] */
    int32_t *round0, *cur;        /* [R+1]: the ids said in round 0 / in this round */
    float *logits;                /* [V]: a decode step's, for the finite check */
    int32_t hist[HISTORY];
    int captured;
    int64_t pos;                  /* tokens in the cache */
    long round, k;                /* round number, decode steps done in it */
    int after_reset;              /* this round started with a full reset */
    int32_t next;                 /* the id the next decode step consumes */
    uint64_t rng;
    long resets, forced, rewinds, rewound, prefills, decodes, repeats, repeats_same;
};

void soak_glm_opts_init(soak_glm_opts *o) {
    *o = (soak_glm_opts){.shape = "mid", .format = M40_WFMT_FP16, .round = 200, .prompt = 40,
                         .chunk = 16, .reset_every = 4, .ctx = 1024, .graph = 1, .seed = 1};
}

static int lib_fail(soak_glm *s, const char *what) {
    fprintf(stderr, "m40-soak: chatglm2 %s: %s\n", what, m40_errmsg(s->ctx));
    return -1;
}

static uint32_t rnd(soak_glm *s) {
    s->rng ^= s->rng << 13, s->rng ^= s->rng >> 7, s->rng ^= s->rng << 17;
    return (uint32_t)(s->rng >> 16);
}

/* The random configs: "mid" is what the H200 soak runs (0.68 B parameters,
** 1.36 GB in fp16: 8 blocks of ChatGLM2-6B's head geometry at half its
** width and FFN, its full vocabulary, so the output layer is the 6B's). */
static int shape_config(const char *name, m40_chatglm2_config *c) {
    m40_chatglm2_config_6b(c);
    if (!strcmp(name, "6b")) return 0;
    if (!strcmp(name, "mid")) {
        c->layers = 8, c->hidden = 2048, c->ffn = 6848, c->heads = 16;
        return 0;
    }
    if (!strcmp(name, "tiny")) { /* tests/fixtures/chatglm2/tiny.safetensors' shape */
        c->layers = 2, c->hidden = 128, c->ffn = 200, c->heads = 4, c->vocab = 300;
        return 0;
    }
    return -1;
}

static int logits_view(soak_glm *s, m40_graph *g, int id, m40_tensor **view) {
    m40_tensor *t;
    m40_tensor_desc d;
    const int64_t sh[2] = {1, s->cfg.vocab};
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, sh);
    if (m40_graph_get_tensor(g, id, &t) != M40_OK || m40_tensor_view(s->ctx, t, &d, 0, view) != M40_OK)
        return lib_fail(s, "logits view");
    return 0;
}

/* Samples the next id from `view` at position s->pos (the stream's counter). */
static int sample(soak_glm *s, m40_tensor *view, int32_t *id) {
    int32_t p = (int32_t)s->pos;
    float out[2];
    if (m40_tensor_upload(s->ctx, s->t_hist, s->hist, sizeof s->hist) != M40_OK ||
        m40_tensor_upload(s->ctx, s->t_pos, &p, 4) != M40_OK ||
        m40_sample(s->ctx, &s->sd, view, s->t_hist, s->t_pos, s->t_out) != M40_OK ||
        m40_tensor_download(s->ctx, s->t_out, out, sizeof out) != M40_OK)
        return lib_fail(s, "sample");
    if (!(out[0] >= 0 && out[0] < (float)s->cfg.vocab) || !(out[1] >= 0 && out[1] <= 1.0001f)) {
        fprintf(stderr, "m40-soak: chatglm2: the sampler said id %g with p %g at position %lld\n",
                out[0], out[1], (long long)s->pos);
        return -1;
    }
    *id = (int32_t)out[0];
    memmove(s->hist, s->hist + 1, (HISTORY - 1) * sizeof s->hist[0]);
    s->hist[HISTORY - 1] = *id;
    return 0;
}

static void say(soak_glm *s, int32_t id) {
    if (s->k <= s->o.round) s->cur[s->k] = id;
}

static int full_reset(soak_glm *s) {
    s->pos = 0;
    for (int i = 0; i < HISTORY; i++) s->hist[i] = -1;
    for (int i = 0; i < s->nkv; i++)
        if (m40_fill_random(s->ctx, s->o.seed + 1000u * (uint64_t)s->resets + (uint64_t)i,
                            M40_RANDOM_UNIFORM, -1.0f, 1.0f, s->kv[i]) != M40_OK)
            return lib_fail(s, "reset (KV noise)");
    s->resets++;
    s->after_reset = 1;
    return 0;
}

/* Compares the round that just ended with round 0 when it began with a reset. */
static void end_round(soak_glm *s) {
    size_t n = (size_t)(s->o.round + 1) * sizeof *s->cur;
    if (s->round == 0) memcpy(s->round0, s->cur, n);
    else if (s->after_reset) {
        s->repeats++;
        s->repeats_same += !memcmp(s->round0, s->cur, n);
    }
    s->round++;
    s->k = 0;
}

/* Reset or rewind, prefill the round's prompt, sample its first id. */
static int start_round(soak_glm *s) {
    const soak_glm_opts *o = &s->o;
    s->after_reset = 0;
    if (s->round % o->reset_every == 0) {
        if (full_reset(s)) return -1;
    } else {
        int64_t back = (int64_t)(rnd(s) % (uint32_t)(o->round + 1));
        if (back > s->pos) back = s->pos;
        s->pos -= back; /* what follows is overwritten by the next tokens */
        s->rewinds++;
        s->rewound += back;
    }
    if (s->pos + o->prompt + o->round > s->o.ctx) {
        s->forced++;
        if (full_reset(s)) return -1;
    }
    /* round 0's prompt after a reset, so that the round must repeat round 0 */
    uint64_t r = s->after_reset ? o->seed : o->seed + 7919u * (uint64_t)s->round;
    for (int i = 0; i < o->prompt; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        s->prompt[i] = (int32_t)((r >> 33) % (uint64_t)s->cfg.vocab);
    }
    const int T = o->chunk;
    for (int done = 0; done < o->prompt;) {
        int n = o->prompt - done < T ? o->prompt - done : T, pad = T - n;
        for (int i = 0; i < T; i++) {
            s->ids[i] = i < pad ? 0 : s->prompt[done + i - pad];
            s->posb[i] = i < pad ? -1 : (int32_t)(s->pos + i - pad);
        }
        if (m40_tensor_upload(s->ctx, s->p_ids, s->ids, (size_t)T * 4) != M40_OK ||
            m40_tensor_upload(s->ctx, s->p_pos, s->posb, (size_t)T * 4) != M40_OK ||
            m40_graph_run(s->pg) != M40_OK)
            return lib_fail(s, "prefill");
        for (int i = 0; i < n; i++) {
            memmove(s->hist, s->hist + 1, (HISTORY - 1) * sizeof s->hist[0]);
            s->hist[HISTORY - 1] = s->prompt[done + i];
        }
        s->pos += n;
        done += n;
        s->prefills++;
    }
    if (sample(s, s->pview, &s->next)) return -1;
    say(s, s->next);
    return 0;
}

int soak_glm_open(m40_ctx *ctx, const soak_glm_opts *o, soak_glm **out) {
    *out = NULL;
    if (o->round < 1 || o->prompt < 1 || o->chunk < 1 || o->reset_every < 1 ||
        o->prompt + o->round > o->ctx) {
        fprintf(stderr, "m40-soak: chatglm2: need round, prompt, chunk, reset-every >= 1 and "
                        "prompt + round <= ctx\n");
        return -1;
    }
    soak_glm *s = calloc(1, sizeof *s);
    if (!s) return -1;
    s->ctx = ctx;
    s->o = *o;
    s->rng = o->seed * 0x9E3779B97F4A7C15ull | 1;
    m40_device_info info;
    s->gpu = m40_ctx_get_info(ctx, &info) == M40_OK && info.is_gpu;
    m40_st_file *w = NULL;
    if (o->weights) {
        if (m40_st_open(o->weights, &w) != M40_OK) {
            fprintf(stderr, "m40-soak: %s: %s\n", o->weights, w ? m40_st_errmsg(w) : "cannot open");
            goto bad;
        }
        if (m40_chatglm2_config_of(ctx, &w, 1, NULL, &s->cfg) != M40_OK) {
            lib_fail(s, o->weights);
            goto bad;
        }
    } else if (shape_config(o->shape, &s->cfg)) {
        fprintf(stderr, "m40-soak: chatglm2: unknown --shape '%s' (mid, tiny, 6b)\n", o->shape);
        goto bad;
    }
    const m40_chatglm2_config *c = &s->cfg;
    if (2 * c->layers > MAX_KV) {
        fprintf(stderr, "m40-soak: chatglm2: %d layers is too many here\n", c->layers);
        goto bad;
    }
    /* the cache is ours, so a reset can overwrite it; both graphs bind it */
    for (s->nkv = 0; s->nkv < 2 * c->layers; s->nkv++) {
        const int64_t sh[4] = {1, o->ctx, c->kv_heads, c->head_dim};
        if (m40_tensor_new(ctx, M40_DTYPE_F16, 4, sh, &s->kv[s->nkv]) != M40_OK) {
            lib_fail(s, "KV cache");
            goto bad;
        }
    }
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    d.weights = o->format;
    d.ctx = o->ctx;
    d.chunk = o->chunk;
    d.config = *c;
    d.kv_cache = s->kv;
    d.random_weights = w == NULL;
    d.seed = o->seed;
    if (m40_chatglm2_graph(ctx, &d, w, &s->pg, &s->pi) != M40_OK) {
        lib_fail(s, "the prefill graph");
        goto bad;
    }
    m40_st_destroy(w); /* the weights are in the graph now */
    w = NULL;
    s->cfg = s->pi.config;
    m40_chatglm2_desc dd;
    m40_chatglm2_desc_decode(&dd, &d, s->pg, &s->pi);
    if (m40_chatglm2_graph(ctx, &dd, NULL, &s->dg, &s->di) != M40_OK) {
        lib_fail(s, "the decode graph");
        goto bad;
    }
    if (m40_graph_get_tensor(s->pg, s->pi.input_ids, &s->p_ids) != M40_OK ||
        m40_graph_get_tensor(s->pg, s->pi.position, &s->p_pos) != M40_OK ||
        m40_graph_get_tensor(s->dg, s->di.input_ids, &s->d_ids) != M40_OK ||
        m40_graph_get_tensor(s->dg, s->di.position, &s->d_pos) != M40_OK) {
        lib_fail(s, "graph inputs");
        goto bad;
    }
    if (logits_view(s, s->pg, s->pi.logits, &s->pview) ||
        logits_view(s, s->dg, s->di.logits, &s->dview))
        goto bad;
    const int64_t sh_h[2] = {1, HISTORY}, sh_p[1] = {1}, sh_o[2] = {1, 2};
    if (m40_tensor_new(ctx, M40_DTYPE_I32, 2, sh_h, &s->t_hist) != M40_OK ||
        m40_tensor_new(ctx, M40_DTYPE_I32, 1, sh_p, &s->t_pos) != M40_OK ||
        m40_tensor_new(ctx, M40_DTYPE_F32, 2, sh_o, &s->t_out) != M40_OK) {
        lib_fail(s, "sampler tensors");
        goto bad;
    }
    m40_sampler_desc_init(&s->sd);
    s->sd.temperature = 0.8f;
    s->sd.top_k = 40;
    s->sd.top_p = 0.95f;
    s->sd.repetition_penalty = 1.1f;
    s->sd.seed = o->seed;
    size_t R1 = (size_t)o->round + 1;
    s->ids = malloc((size_t)o->chunk * sizeof *s->ids);
    s->posb = malloc((size_t)o->chunk * sizeof *s->posb);
    s->prompt = malloc((size_t)o->prompt * sizeof *s->prompt);
    s->round0 = malloc(R1 * sizeof *s->round0);
    s->cur = malloc(R1 * sizeof *s->cur);
    s->logits = malloc((size_t)c->vocab * sizeof *s->logits);
    if (!s->ids || !s->posb || !s->prompt || !s->round0 || !s->cur || !s->logits) {
        fprintf(stderr, "m40-soak: out of host memory\n");
        goto bad;
    }
    printf("m40-soak: ChatGLM2 %s (%d layers, hidden %d, ffn %d, %d heads of %d over %d KV "
           "groups, vocab %d; %.1f M parameters), %s weights %.1f MiB, KV cache %lld tokens; "
           "rounds of a %d-id prompt (chunks of %d) + %ld decode steps, a full reset every %d "
           "rounds, random rewinds between; decode %s\n",
           o->weights ? o->weights : o->shape, c->layers, c->hidden, c->ffn, c->heads,
           c->head_dim, c->kv_heads, c->vocab, (double)s->pi.params / 1e6,
           m40_wformat_name(o->format), s->pi.plan.region_bytes[M40_REGION_WEIGHTS] / 1048576.0,
           (long long)o->ctx, o->prompt, o->chunk, o->round, o->reset_every,
           s->gpu && o->graph ? "by CUDA graph replay" : "node by node");
    if (start_round(s)) goto bad;
    *out = s;
    return 0;
bad:
    m40_st_destroy(w);
    soak_glm_close(s);
    return -1;
}

int soak_glm_step(soak_glm *s, long step) {
    (void)step;
    if (s->k == 0 && s->round > 0 && start_round(s)) return -1;
    int32_t p = (int32_t)s->pos;
    if (m40_tensor_upload(s->ctx, s->d_ids, &s->next, 4) != M40_OK ||
        m40_tensor_upload(s->ctx, s->d_pos, &p, 4) != M40_OK || m40_graph_run(s->dg) != M40_OK)
        return lib_fail(s, "decode");
    /* on a GPU the step is captured after its first run and replayed after */
    if (s->gpu && s->o.graph && !s->captured) {
        if (m40_graph_capture(s->dg, 1) != M40_OK) return lib_fail(s, "capture");
        s->captured = 1;
    }
    s->pos++;
    s->decodes++;
    s->k++;
    if (sample(s, s->dview, &s->next)) return -1;
    say(s, s->next);
    if (s->k == s->o.round) end_round(s);
    return 0;
}

int soak_glm_check(soak_glm *s, long step) {
    if (s->decodes == 0) return 0;
    const int V = s->cfg.vocab;
    if (m40_tensor_download(s->ctx, s->dview, s->logits, (size_t)V * 4) != M40_OK)
        return lib_fail(s, "logits");
    for (int i = 0; i < V; i++)
        if (!isfinite(s->logits[i])) {
            fprintf(stderr, "m40-soak: chatglm2 step %ld: logit %d is %f\n", step, i, s->logits[i]);
            return -1;
        }
    return 0;
}

int soak_glm_summary(soak_glm *s, double secs, long steps) {
    printf("%ld decode steps in %.1f s (%.3f ms per step with its sampling; %.0f tokens/s); "
           "%ld rounds begun, %ld prefill chunks, %ld full resets (%ld because the cache was "
           "full), %ld rewinds (%.1f tokens back on average)\n",
           steps, secs, steps > 0 ? 1e3 * secs / (double)steps : 0.0,
           secs > 0 ? (double)steps / secs : 0.0, s->round + (s->k > 0), s->prefills, s->resets,
           s->forced, s->rewinds, s->rewinds ? (double)s->rewound / (double)s->rewinds : 0.0);
    int ok = s->repeats_same == s->repeats;
    printf("repeat of round 0 after each full reset (noise in the KV cache): %ld/%ld rounds said "
           "round 0's %ld ids%s\n", s->repeats_same, s->repeats, s->o.round + 1,
           ok ? "" : s->gpu ? " (reported only on a GPU: prefill's split-K sums may differ in "
                              "the last bit)" : " (FAILED)");
    return ok || s->gpu ? 0 : -1;
}

void soak_glm_close(soak_glm *s) {
    if (!s) return;
    m40_tensor_destroy(s->pview);
    m40_tensor_destroy(s->dview);
    m40_tensor_destroy(s->t_hist);
    m40_tensor_destroy(s->t_pos);
    m40_tensor_destroy(s->t_out);
    m40_graph_destroy(s->dg);
    m40_graph_destroy(s->pg);
    for (int i = 0; i < s->nkv; i++) m40_tensor_destroy(s->kv[i]);
    free(s->ids);
    free(s->posb);
    free(s->prompt);
    free(s->round0);
    free(s->cur);
    free(s->logits);
    free(s);
}
