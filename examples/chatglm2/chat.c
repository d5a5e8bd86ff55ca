/* A multi-round conversation on one glm_model: see chat.h. */
#define _POSIX_C_SOURCE 200809L
#include "chat.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREFILL_PIECE 512 /* ids per glm_prefill call (Ctrl-C is seen between them) */

typedef struct ivec {
    int32_t *p;
    int n, cap;
} ivec;

typedef struct round {
    char *q, *a;
    size_t qn, an;
} round;

struct chat {
    glm_model *m;
    m40_tokenizer *tok;
    chat_stream *st;
    chat_opts o;
    char *system;
    ivec ids;      /* what the cache holds, position by position */
    ivec ans;      /* the last answer's ids */
    ivec in;       /* the next ids to prefill */
    int round_start;
    round *rounds;
    int n_rounds, cap_rounds;
    int32_t *enc;  /* encoding scratch */
    size_t enc_cap;
    chat_stats stats;
    char err[512];
};

static int fail(chat *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return -1;
}

static void note(chat *c, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->o.note) c->o.note(c->o.user, msg);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int ivec_push(ivec *v, const int32_t *x, int n) {
    if (n > INT32_MAX - v->n) return -1;
    if (v->n + n > v->cap) {
        int cap = v->cap ? v->cap : 256;
        while (cap < v->n + n) cap = cap > INT32_MAX / 2 ? INT32_MAX : cap * 2;
        int32_t *p = realloc(v->p, (size_t)cap * sizeof *p);
        if (!p) return -1;
        v->p = p;
        v->cap = cap;
    }
    if (n) memcpy(v->p + v->n, x, (size_t)n * sizeof *x);
    v->n += n;
    return 0;
}

static int ivec_push1(ivec *v, int32_t x) { return ivec_push(v, &x, 1); }

/* Appends encode(text) to v, without its first `drop` ids. */
static int enc_add(chat *c, ivec *v, const char *text, size_t len, int drop) {
    size_t n = 0;
    if (m40_tokenizer_encode(c->tok, text, len, c->enc, c->enc_cap, &n) != M40_OK)
        return fail(c, "tokenizer: %s", m40_tokenizer_errmsg(c->tok));
    if (n > c->enc_cap) {
        int32_t *p = realloc(c->enc, n * sizeof *p);
        if (!p) return fail(c, "out of host memory");
        c->enc = p;
        c->enc_cap = n;
        if (m40_tokenizer_encode(c->tok, text, len, c->enc, c->enc_cap, &n) != M40_OK)
            return fail(c, "tokenizer: %s", m40_tokenizer_errmsg(c->tok));
    }
    if (n > (size_t)INT32_MAX) return fail(c, "the prompt is too long (%zu tokens)", n);
    int k = (int)n > drop ? (int)n - drop : 0;
    if (ivec_push(v, c->enc + (n - (size_t)k), k)) return fail(c, "out of host memory");
    return 0;
}

/* Appends the concatenation of up to 5 (text, len) pieces, encoded as one
** string: the ChatGLM2 prompt parts. */
static int enc_join(chat *c, ivec *v, int drop, const char *const *s, const size_t *n, int k) {
    size_t len = 0;
    for (int i = 0; i < k; i++) len += n[i];
    char *t = malloc(len + 1);
    if (!t) return fail(c, "out of host memory");
    size_t at = 0;
    for (int i = 0; i < k; i++) {
        memcpy(t + at, s[i], n[i]);
        at += n[i];
    }
    int rc = enc_add(c, v, t, len, drop);
    free(t);
    return rc;
}

/* ChatGLM3: <|role|> encode("\n") encode(text). */
static int glm3_msg(chat *c, ivec *v, int32_t role, const char *text, size_t len) {
    if (ivec_push1(v, role)) return fail(c, "out of host memory");
    return enc_add(c, v, "\n", 1, 0) || enc_add(c, v, text, len, 0) ? -1 : 0;
}

/* The whole prompt: rounds[from..] as history, then the query. */
static int build_full(chat *c, int from, const char *q, size_t qn, ivec *v) {
    v->n = 0;
    const int32_t pre[2] = {M40_CHATGLM2_GMASK, M40_CHATGLM2_SOP};
    if (ivec_push(v, pre, 2)) return fail(c, "out of host memory");
    if (c->o.glm3) {
        if (c->system && glm3_msg(c, v, CHATGLM3_SYSTEM, c->system, strlen(c->system))) return -1;
        for (int i = from; i < c->n_rounds; i++)
            if (glm3_msg(c, v, CHATGLM3_USER, c->rounds[i].q, c->rounds[i].qn) ||
                glm3_msg(c, v, CHATGLM3_ASSISTANT, c->rounds[i].a, c->rounds[i].an))
                return -1;
        if (glm3_msg(c, v, CHATGLM3_USER, q, qn)) return -1;
        return ivec_push1(v, CHATGLM3_ASSISTANT) ? fail(c, "out of host memory") : 0;
    }
    /* m40_chatglm_encode_chat's format, with explicit lengths (a line may
    ** hold NUL bytes) and the rounds numbered from the first one kept */
    size_t len = 0;
    for (int i = from; i <= c->n_rounds; i++) /* head ≤ 40 bytes, the rest as is */
        len += 64 + (i == c->n_rounds ? qn : c->rounds[i].qn + c->rounds[i].an);
    char *t = malloc(len + 1), *p = t;
    if (!t) return fail(c, "out of host memory");
    for (int i = from; i <= c->n_rounds; i++) {
        const int last = i == c->n_rounds;
        p += sprintf(p, "[Round %d]\n\n问：", i - from + 1);
        memcpy(p, last ? q : c->rounds[i].q, last ? qn : c->rounds[i].qn);
        p += last ? qn : c->rounds[i].qn;
        p += sprintf(p, "\n\n答：");
        if (!last) {
            memcpy(p, c->rounds[i].a, c->rounds[i].an);
            p += c->rounds[i].an;
            p += sprintf(p, "\n\n");
        }
    }
    int rc = enc_add(c, v, t, (size_t)(p - t), 0);
    free(t);
    return rc;
}

/* The ids a new round appends to the cached history. */
static int build_incremental(chat *c, const char *q, size_t qn, ivec *v) {
    v->n = 0;
    if (c->o.glm3) {
        const int32_t pre[2] = {M40_CHATGLM2_GMASK, M40_CHATGLM2_SOP};
        if (ivec_push(v, pre, 2) || glm3_msg(c, v, CHATGLM3_USER, q, qn)) return -1;
        return ivec_push1(v, CHATGLM3_ASSISTANT) ? fail(c, "out of host memory") : 0;
    }
    char head[64];
    snprintf(head, sizeof head, "\n\n[Round %d]\n\n问：", c->n_rounds + 1);
    const char *s[3] = {head, q, "\n\n答："};
    const size_t n[3] = {strlen(head), qn, strlen("\n\n答：")};
    return enc_join(c, v, 1, s, n, 3); /* without the leading "▁" id */
}

int chat_create(glm_model *m, m40_tokenizer *tok, const chat_opts *o, chat **out, char *err,
                size_t errlen) {
    *out = NULL;
    chat *c = calloc(1, sizeof *c);
    if (!c || chat_stream_create(tok, o->glm3, &c->st)) {
        snprintf(err, errlen, "out of host memory");
        free(c);
        return -1;
    }
    c->m = m;
    c->tok = tok;
    c->o = *o;
    if (o->system && !(c->system = strdup(o->system))) {
        snprintf(err, errlen, "out of host memory");
        chat_destroy(c);
        return -1;
    }
    *out = c;
    return 0;
}

static void clear_rounds(chat *c) {
    for (int i = 0; i < c->n_rounds; i++) {
        free(c->rounds[i].q);
        free(c->rounds[i].a);
    }
    c->n_rounds = 0;
}

void chat_destroy(chat *c) {
    if (!c) return;
    clear_rounds(c);
    free(c->rounds);
    free(c->ids.p);
    free(c->ans.p);
    free(c->in.p);
    free(c->enc);
    free(c->system);
    chat_stream_destroy(c->st);
    free(c);
}

void chat_reset(chat *c) {
    clear_rounds(c);
    c->ids.n = c->ans.n = c->round_start = 0;
    glm_reset(c->m);
}

const char *chat_errmsg(const chat *c) { return c->err; }
const chat_stats *chat_last_stats(const chat *c) { return &c->stats; }
int chat_rounds(const chat *c) { return c->n_rounds; }
int chat_round_start(const chat *c) { return c->round_start; }
const char *chat_answer(const chat *c, size_t *len) { return chat_stream_text(c->st, len); }

const int32_t *chat_ids(const chat *c, int *n) {
    *n = c->ids.n;
    return c->ids.p;
}

const int32_t *chat_answer_ids(const chat *c, int *n) {
    *n = c->ans.n;
    return c->ans.p;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* Plans the round's ids in c->in; *rebuild: they replace the cache. */
static int plan_round(chat *c, const char *q, size_t qn, int *rebuild) {
    const int64_t L = glm_ctx_len(c->m);
    int64_t room = L / 4;
    if (c->o.max_new > 0 && c->o.max_new < room) room = c->o.max_new;
    if (room < 1) room = 1;
    c->stats.dropped_rounds = 0;
    if (c->ids.n > 0) {
        if (build_incremental(c, q, qn, &c->in)) return -1;
        *rebuild = 0;
        if (c->ids.n + (int64_t)c->in.n + room <= L) return 0;
    }
    *rebuild = 1;
    for (int k = 0; k <= c->n_rounds; k++) {
        if (build_full(c, k, q, qn, &c->in)) return -1;
        if (c->in.n + room <= L || (k == c->n_rounds && c->in.n < L)) {
            c->stats.dropped_rounds = k;
            if (k || c->ids.n)
                note(c, "the context (%lld tokens) is full: dropped the %d oldest round%s, "
                     "prefilling %d tokens again", (long long)L, k, k == 1 ? "" : "s", c->in.n);
            return 0;
        }
    }
    return fail(c, "the prompt is %d tokens; the context holds %lld (a shorter prompt, or a "
                "larger --ctx)", c->in.n, (long long)L);
}

int chat_ask(chat *c, const char *q, size_t qn) {
    int rebuild;
    if (plan_round(c, q, qn, &rebuild)) return -1;
    if (rebuild) {
        glm_reset(c->m);
        c->ids.n = 0;
        for (int i = 0; i < c->stats.dropped_rounds; i++) {
            free(c->rounds[i].q);
            free(c->rounds[i].a);
        }
        int k = c->stats.dropped_rounds;
        memmove(c->rounds, c->rounds + k, (size_t)(c->n_rounds - k) * sizeof *c->rounds);
        c->n_rounds -= k;
    }
    c->round_start = c->ids.n;
    c->ans.n = 0;
    c->stats.prompt_tokens = c->in.n;
    c->stats.answer_tokens = 0;
    c->stats.decode_s = 0;
    double t0 = now_s();
    /* in pieces, so that Ctrl-C during a long prompt takes effect soon: the
    ** cache then goes back to where the round began (after a rebuild that
    ** is empty, and the next round prefills the kept history again) */
    for (int done = 0; done < c->in.n;) {
        int k = c->in.n - done < PREFILL_PIECE ? c->in.n - done : PREFILL_PIECE;
        if (glm_prefill(c->m, c->in.p + done, k, NULL, NULL)) {
            /* the cache may hold part of it: start over */
            fail(c, "%s (the conversation was reset)", glm_errmsg(c->m));
            chat_reset(c);
            return -1;
        }
        done += k;
        if (done < c->in.n && c->o.interrupt && *c->o.interrupt) {
            /* the cache and the repetition penalty's history both as before */
            if (glm_rewind(c->m, c->ids.n) || glm_seq_set_history(c->m, 0, c->ids.p, c->ids.n)) {
                fail(c, "%s (the conversation was reset)", glm_errmsg(c->m));
                chat_reset(c);
                return -1;
            }
            return fail(c, "stopped while reading the prompt: the round was not kept");
        }
    }
    c->stats.prefill_s = now_s() - t0;
    if (ivec_push(&c->ids, c->in.p, c->in.n)) goto oom;
    chat_stream_begin(c->st);
    const char *t;
    size_t tn;
    const int64_t L = glm_ctx_len(c->m);
    chat_stop stop;
    t0 = now_s();
    for (;;) {
        if (c->o.interrupt && *c->o.interrupt) {
            stop = CHAT_STOP_INTERRUPT;
            break;
        }
        if (c->o.max_new > 0 && c->ans.n >= c->o.max_new) {
            stop = CHAT_STOP_LENGTH;
            break;
        }
        if (glm_pos(c->m) >= L) {
            stop = CHAT_STOP_CONTEXT;
            break;
        }
        int32_t id;
        if (glm_sample(c->m, &c->o.sampler, &id, NULL)) goto model;
        if (id == M40_CHATGLM2_EOS ||
            (c->o.glm3 && (id == CHATGLM3_USER || id == CHATGLM3_OBSERVATION))) {
            stop = CHAT_STOP_EOS;
            break;
        }
        if (chat_stream_push(c->st, id, &t, &tn)) goto oom;
        if (tn && c->o.emit) c->o.emit(c->o.user, t, tn);
        /* the id goes into the cache even when it is the last one: the next
        ** round's ids follow it */
        if (ivec_push1(&c->ans, id) || ivec_push1(&c->ids, id)) goto oom;
        if (glm_step(c->m, id, NULL)) goto model;
    }
    c->stats.decode_s = now_s() - t0;
    c->stats.answer_tokens = c->ans.n;
    c->stats.stop = stop;
    if (chat_stream_finish(c->st, &t, &tn)) goto oom;
    if (tn && c->o.emit) c->o.emit(c->o.user, t, tn);
    if (stop == CHAT_STOP_CONTEXT) note(c, "the context is full: the answer was cut");
    /* the round joins the history (a stopped answer with what it has) */
    if (c->n_rounds == c->cap_rounds) {
        int cap = c->cap_rounds ? 2 * c->cap_rounds : 16;
        round *r = realloc(c->rounds, (size_t)cap * sizeof *r);
        if (!r) goto oom;
        c->rounds = r;
        c->cap_rounds = cap;
    }
    size_t an;
    const char *a = chat_stream_text(c->st, &an);
    round *r = &c->rounds[c->n_rounds];
    if (!(r->q = dup_n(q, qn)) || !(r->a = dup_n(a, an))) {
        free(r->q);
        goto oom;
    }
    r->qn = qn;
    r->an = an;
    c->n_rounds++;
    return 0;
oom:
    fail(c, "out of host memory (the conversation was reset)");
    chat_reset(c);
    return -1;
model:
    fail(c, "%s (the conversation was reset)", glm_errmsg(c->m));
    chat_reset(c);
    return -1;
}
