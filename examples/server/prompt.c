/* OpenAI messages → ChatGLM2 / ChatGLM3 prompt ids (the formats of
** examples/chatglm2/chat.h, a whole conversation encoded at once).
**
** ChatGLM2 has no system role: the system messages' text goes before the
** first user message's, separated by "\n". Rounds: each user message opens
** one, the assistant message after it is its answer; consecutive user
** messages are joined by "\n". The last message must be a user message.
** ChatGLM3: [gMASK, sop], then <|role|> encode("\n") encode(text) for each
** message in order, then <|assistant|>. */
#include "server.h"
#include "chat.h" /* CHATGLM3_* */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ids {
    int32_t *p;
    size_t n, cap;
} ids;

static int ids_reserve(ids *v, size_t more) {
    if (more > (size_t)INT32_MAX - v->n) return -1;
    if (v->n + more <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 256;
    while (cap < v->n + more) cap *= 2;
    int32_t *p = realloc(v->p, cap * sizeof *p);
    if (!p) return -1;
    v->p = p;
    v->cap = cap;
    return 0;
}

static int ids_add(ids *v, const int32_t *x, size_t n) {
    if (ids_reserve(v, n)) return -1;
    memcpy(v->p + v->n, x, n * sizeof *x);
    v->n += n;
    return 0;
}

/* encode(text) appended to v (the tokenizer lock is held). */
static int enc_add(srv *s, ids *v, const char *text, size_t len, char *err, size_t errlen) {
    size_t n = 0;
    if (ids_reserve(v, 64)) goto oom;
    if (m40_tokenizer_encode(s->tok, text, len, v->p + v->n, v->cap - v->n, &n) != M40_OK) goto tok;
    if (n > v->cap - v->n) {
        if (ids_reserve(v, n)) goto oom;
        if (m40_tokenizer_encode(s->tok, text, len, v->p + v->n, v->cap - v->n, &n) != M40_OK)
            goto tok;
    }
    v->n += n;
    return 0;
tok:
    snprintf(err, errlen, "tokenizer: %s", m40_tokenizer_errmsg(s->tok));
    return -1;
oom:
    snprintf(err, errlen, "the prompt is too long, or out of host memory");
    return -1;
}

static int glm3_prompt(srv *s, const srv_msg *msgs, int n, ids *v, char *err, size_t errlen) {
    static const int32_t role_id[3] = {CHATGLM3_SYSTEM, CHATGLM3_USER, CHATGLM3_ASSISTANT};
    for (int i = 0; i < n; i++) {
        if (ids_add(v, &role_id[msgs[i].role], 1)) goto oom;
        if (enc_add(s, v, "\n", 1, err, errlen) ||
            enc_add(s, v, msgs[i].text, msgs[i].len, err, errlen))
            return -1;
    }
    if (ids_add(v, (const int32_t[1]){CHATGLM3_ASSISTANT}, 1)) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "out of host memory");
    return -1;
}

static int add_text(sbuf *b, const char *sep, const char *t, size_t n) {
    return (b->n && sbuf_add(b, sep, strlen(sep))) || sbuf_add(b, t, n);
}

/* "[Round i]\n\n问：q\n\n答：a\n\n" ... "[Round k]\n\n问：q\n\n答：" */
static int glm2_prompt(srv *s, const srv_msg *msgs, int n, ids *v, char *err, size_t errlen) {
    sbuf sys = {0}, q = {0}, t = {0};
    int rounds = 0, rc = -1;
    for (int i = 0; i < n; i++)
        if (msgs[i].role == 0 && add_text(&sys, "\n", msgs[i].text, msgs[i].len)) goto oom;
    /* the system text opens the first round's question, whichever message
    ** opens that round (an assistant greeting first dropped it: review,
    ** session 23) */
    int have_q = 0, sys_done = sys.n == 0;
    for (int i = 0; i < n; i++) {
        const srv_msg *m = &msgs[i];
        if (m->role == 0) continue;
        if (m->role == 1) {
            if (!have_q) {
                q.n = 0;
                if (!sys_done && (sbuf_add(&q, sys.p, sys.n) || sbuf_add(&q, "\n", 1))) goto oom;
                sys_done = have_q = 1;
            } else if (sbuf_add(&q, "\n", 1)) {
                goto oom;
            }
            if (sbuf_add(&q, m->text, m->len)) goto oom;
            continue;
        }
        /* an assistant message: the answer of the open round (an empty
        ** question when none is open: the system text alone, if not yet said) */
        if (!have_q && !sys_done) {
            q.n = 0;
            if (sbuf_add(&q, sys.p, sys.n)) goto oom;
            sys_done = have_q = 1;
        }
        char head[48];
        snprintf(head, sizeof head, "[Round %d]\n\n问：", ++rounds);
        if (sbuf_add(&t, head, strlen(head)) || (have_q && sbuf_add(&t, q.p, q.n)) ||
            sbuf_add(&t, "\n\n答：", strlen("\n\n答：")) || sbuf_add(&t, m->text, m->len) ||
            sbuf_add(&t, "\n\n", 2))
            goto oom;
        have_q = 0;
    }
    char head[48];
    snprintf(head, sizeof head, "[Round %d]\n\n问：", ++rounds);
    if (sbuf_add(&t, head, strlen(head)) || sbuf_add(&t, q.p, q.n) ||
        sbuf_add(&t, "\n\n答：", strlen("\n\n答：")))
        goto oom;
    rc = enc_add(s, v, t.p, t.n, err, errlen);
    goto out;
oom:
    snprintf(err, errlen, "out of host memory");
out:
    sbuf_free(&sys);
    sbuf_free(&q);
    sbuf_free(&t);
    return rc;
}

int srv_prompt_ids(srv *s, const srv_msg *msgs, int n, int32_t **out, int *n_out, char *err,
                   size_t errlen) {
    *out = NULL;
    *n_out = 0;
    if (n < 1 || msgs[n - 1].role != 1) {
        snprintf(err, errlen, "the last message must have the role \"user\"");
        return -1;
    }
    ids v = {0};
    const int32_t pre[2] = {M40_CHATGLM2_GMASK, M40_CHATGLM2_SOP};
    if (ids_add(&v, pre, 2)) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    pthread_mutex_lock(&s->tok_mu);
    int rc = s->glm3 ? glm3_prompt(s, msgs, n, &v, err, errlen)
                     : glm2_prompt(s, msgs, n, &v, err, errlen);
    pthread_mutex_unlock(&s->tok_mu);
    if (rc) {
        free(v.p);
        return -1;
    }
    *out = v.p;
    *n_out = (int)v.n;
    return 0;
}
