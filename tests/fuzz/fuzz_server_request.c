/* libFuzzer target: m40-server's request parser (examples/server/request.c:
** srv_parse_chat, and prompt.c's srv_prompt_ids behind it) on arbitrary
** bodies, with a ChatGLM2-layout tokenizer of 64,789 pieces (run_fuzz.sh
** writes it with tests/chatglm2/make_chat_model.py and names it in
** M40_FUZZ_GLM_TOKENIZER).
**
** Input: 1 control byte, then the body.
**   bit 0     the ChatGLM3 prompt format (else ChatGLM2)
**   bits 1-2  the server's context: 2, 64, 8192 or 4194304 tokens (--ctx's range)
**   bit 3     the server's model name: "tiny", or a long one of CJK text
**   0xF0..0xFF  instead: the body's bytes through srv_utf8_repair (the
**             repair of the messages that quote a client's bytes)
** A refusal must be 400, 404 or 500 with a message that is valid UTF-8 (the
** answer quotes it in JSON), an OpenAI code (500: none) and no job; 404 only
** for "model". An accepted request must give a job whose every field is in
** its range (ids in the vocabulary and in the prompt format's layout, fewer
** than the context, max_tokens in 1..ctx, the sampler's values as m40_sample
** takes them) and agree with the body read again here (ChatGLM3's role
** tokens per message, max_tokens, stop, stream, seed).
** Every job is released with job_unref, so a leak shows under LSan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h" /* CHATGLM3_* */
#include "server.h"

#define VOCAB 65024 /* ChatGLM2/3's padded vocabulary */

static m40_tokenizer *tok;
static srv servers[2][4][2]; /* [glm3][ctx][name] */
static int verbose = -1;     /* M40_FUZZ_VERBOSE=1: say what became of each input */

static const int64_t CTX[4] = {2, 64, 8192, 1 << 22};
static const char *const NAMES[2] = {
    "tiny", "模型名字很长的服务器模型名字很长的服务器模型名字很长的服务器模型名字很长的服务器"
            "模型名字很长的服务器模型名字很长的服务器"};

static void need(int ok, const char *what, unsigned status, const srv_error *e) {
    if (ok) return;
    fprintf(stderr, "fuzz_server_request: %s (status %u, code %s, param %s: %s)\n", what, status,
            e && e->code ? e->code : "null", e && e->param ? e->param : "null", e ? e->msg : "");
    abort();
}

static void setup(void) {
    const char *path = getenv("M40_FUZZ_GLM_TOKENIZER");
    if (!path || m40_tokenizer_load_file(path, &tok) != M40_OK) {
        fprintf(stderr, "fuzz_server_request: M40_FUZZ_GLM_TOKENIZER must name a tokenizer.model "
                        "(python3 tests/chatglm2/make_chat_model.py DIR writes one; run_fuzz.sh does)\n");
        abort();
    }
    for (int g = 0; g < 2; g++)
        for (int c = 0; c < 4; c++)
            for (int n = 0; n < 2; n++) {
                srv *s = &servers[g][c][n];
                memset(s, 0, sizeof *s);
                s->tok = tok;
                s->glm3 = g;
                s->ctx = CTX[c];
                s->model_name = NAMES[n];
                m40_sampler_desc_init(&s->defaults);
                s->defaults.temperature = 0.8f; /* main.c's */
                s->defaults.top_p = 0.8f;
                srv_prepare(s);
            }
    const char *v = getenv("M40_FUZZ_VERBOSE");
    verbose = v && *v == '1';
}

static int is_param(const char *p) {
    static const char *const known[] = {
        "model", "n", "max_tokens", "max_completion_tokens", "top_k", "seed", "temperature",
        "top_p", "repetition_penalty", "presence_penalty", "frequency_penalty", "stream",
        "stream_options", "include_usage", "stop", "messages"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(p, known[i])) return 1;
    return 0;
}

static void check_refusal(unsigned status, const srv_error *e) {
    need(status == 400 || status == 404 || status == 500, "an unexpected status", status, e);
    need(e->msg[0] != 0 && memchr(e->msg, 0, sizeof e->msg) != NULL, "a refusal without a message",
         status, e);
    need(status == 500 || e->code != NULL, "a refusal without a code", status, e);
    need(!e->param || is_param(e->param), "an unknown param", status, e);
    need(status != 404 || (e->param && !strcmp(e->param, "model") && !strcmp(e->code, "model_not_found")),
         "404 not about the model", status, e);
    /* http.c answers json_string(msg): invalid UTF-8 would lose the message */
    json_t *m = json_string(e->msg);
    need(m != NULL, "the message is not valid UTF-8", status, e);
    json_decref(m);
}

static void check_job(const srv *s, const srv_job *j) {
    const srv_error *e = NULL;
    need(j->n_ids >= 3 && j->n_ids < s->ctx && j->ids, "the prompt's length", 200, e);
    need(j->ids[0] == M40_CHATGLM2_GMASK && j->ids[1] == M40_CHATGLM2_SOP, "the prompt's prefix", 200, e);
    const int32_t pieces = m40_tokenizer_get_vocab_size(tok);
    for (int i = 2; i < j->n_ids; i++) {
        const int32_t id = j->ids[i];
        const int role = s->glm3 && id >= CHATGLM3_SYSTEM && id <= CHATGLM3_ASSISTANT;
        need(id >= 0 && id < VOCAB && (id < pieces || role), "an id out of the vocabulary", 200, e);
    }
    if (s->glm3) need(j->ids[2] >= CHATGLM3_SYSTEM && j->ids[2] <= CHATGLM3_ASSISTANT &&
                      j->ids[j->n_ids - 1] == CHATGLM3_ASSISTANT, "ChatGLM3's role tokens", 200, e);
    need(j->max_tokens >= 1 && j->max_tokens <= s->ctx, "max_tokens", 200, e);
    need(j->n_stop >= 0 && j->n_stop <= SRV_MAX_STOP, "the stop count", 200, e);
    for (int i = 0; i < j->n_stop; i++)
        need(j->stop[i] && j->stop_len[i] >= 1 && j->stop_len[i] <= SRV_MAX_STOP_LEN &&
             strlen(j->stop[i]) == j->stop_len[i], "a stop string", 200, e);
    const m40_sampler_desc *p = &j->sampler;
    need(p->temperature >= 0 && p->temperature <= 2 && p->top_p > 0 && p->top_p <= 1 &&
         p->top_k >= 0 && p->top_k <= (1 << 24) && p->repetition_penalty >= 1e-3f &&
         p->repetition_penalty <= 100, "the sampler", 200, e);
    need((j->stream == 0 || j->stream == 1) && (j->include_usage == 0 || j->include_usage == 1),
         "stream flags", 200, e);
    need(!strncmp(j->id, "chatcmpl-", 9) && j->model == s->model_name,
         "the job's identity", 200, e);
}

/* The job against the body read again here: the fields it names. */
static void check_fields(const srv *s, const srv_job *j, const uint8_t *body, size_t n) {
    const srv_error *e = NULL;
    json_t *root = json_loadb((const char *)body, n, JSON_REJECT_DUPLICATES, NULL);
    need(json_is_object(root), "accepted a body that is not a JSON object", 200, e);
    json_t *m = json_object_get(root, "messages");
    need(json_array_size(m) >= 1, "accepted without messages", 200, e);
    if (s->glm3) { /* one role token per message, and the answer's */
        size_t roles = 0;
        for (int i = 2; i < j->n_ids; i++) roles += j->ids[i] >= CHATGLM3_SYSTEM;
        need(roles == json_array_size(m) + 1, "ChatGLM3's role tokens per message", 200, e);
    }
    json_t *mt = json_object_get(root, "max_completion_tokens");
    if (!json_is_integer(mt)) mt = json_object_get(root, "max_tokens");
    need(json_is_integer(mt) ? j->max_tokens == json_integer_value(mt)
                             : j->max_tokens == s->ctx - j->n_ids, "max_tokens", 200, e);
    json_t *st = json_object_get(root, "stop");
    need((size_t)j->n_stop == (json_is_string(st) ? 1 : json_array_size(st)), "the stop count", 200, e);
    for (int i = 0; i < j->n_stop; i++) {
        json_t *t = json_is_string(st) ? st : json_array_get(st, (size_t)i);
        need(!strcmp(j->stop[i], json_string_value(t)), "a stop string's text", 200, e);
    }
    need(j->stream == json_is_true(json_object_get(root, "stream")), "stream", 200, e);
    json_t *seed = json_object_get(root, "seed");
    need(!json_is_integer(seed) || j->sampler.seed == (uint64_t)json_integer_value(seed), "seed", 200, e);
    json_decref(root);
}

/* srv_utf8_repair on raw bytes: the result is UTF-8 that jansson takes,
** valid text is left as it is, and nothing grows. */
static void check_repair(const uint8_t *p, size_t n) {
    char a[640], b[640];
    n = n < sizeof a - 1 ? n : sizeof a - 1;
    memcpy(a, p, n);
    a[n] = 0;
    memcpy(b, a, n + 1);
    srv_utf8_repair(b);
    json_t *before = json_string(a), *after = json_string(b);
    need(after != NULL, "srv_utf8_repair left invalid UTF-8", 0, NULL);
    need(!before || !strcmp(a, b), "srv_utf8_repair changed valid UTF-8", 0, NULL);
    need(strlen(b) <= strlen(a), "srv_utf8_repair grew the text", 0, NULL);
    json_decref(before);
    json_decref(after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (!tok) setup();
    const uint8_t ctl = data[0];
    if ((ctl & 0xF0) == 0xF0) {
        check_repair(data + 1, size - 1);
        return 0;
    }
    srv *s = &servers[ctl & 1][(ctl >> 1) & 3][(ctl >> 3) & 1];
    srv_job *j = (srv_job *)&j; /* poisoned: the call must set it */
    srv_error e;
    memset(&e, 0x5a, sizeof e);
    const unsigned status = srv_parse_chat(s, (const char *)data + 1, size - 1, &j, &e);
    if (verbose)
        fprintf(stderr, "%s ctx %lld: %u %s %s: %s (%d ids)\n", s->glm3 ? "ChatGLM3" : "ChatGLM2",
                (long long)s->ctx, status, status == 200 ? "" : e.code ? e.code : "null",
                status == 200 || !e.param ? "" : e.param, status == 200 ? "ok" : e.msg,
                status == 200 ? j->n_ids : 0);
    if (status == 200) {
        need(j != NULL, "200 without a job", status, NULL);
        check_job(s, j);
        check_fields(s, j, data + 1, size - 1);
        job_unref(j);
    } else {
        need(j == NULL, "a refusal with a job", status, &e);
        check_refusal(status, &e);
    }
    return 0;
}
