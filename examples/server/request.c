/* A POST /v1/chat/completions body → a job (see server.h): the JSON, every
** field checked (type and range), the messages mapped to roles and through
** srv_prompt_ids to the prompt's ids. No libmicrohttpd and no model, so
** tests/fuzz/fuzz_server_request.c runs it on arbitrary bytes. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "server.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_MESSAGES 4096
/* Brackets and commas outside strings: an upper bound on a body's JSON
** values, checked before jansson builds its tree. A 1 MiB body of "{}," is
** ~350,000 values and ~78 MB of tree (jansson 2.14, glibc), per connection;
** 65,536 bounds one parse to ~15 MB and still takes MAX_MESSAGES messages
** of several content parts each. */
#define MAX_JSON_VALUES 65536
#define FIELD_MSG 300 /* the message of a field's refusal (srv_error.msg holds more) */

static int bad(srv_error *e, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(srv_error *e, const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, FIELD_MSG, fmt, ap);
    va_end(ap);
    e->param = param;
    return -1;
}

/* A number field in [lo, hi] (absent or null: left as is). */
static int get_num(json_t *root, const char *k, double lo, double hi, double *v, srv_error *e) {
    json_t *x = json_object_get(root, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_number(x)) return bad(e, k, "'%s' must be a number", k);
    double d = json_number_value(x);
    if (!isfinite(d) || d < lo || d > hi) return bad(e, k, "'%s' must be in [%g, %g]", k, lo, hi);
    *v = d;
    return 0;
}

/* An integer field in [lo, hi] (absent or null: left as is). */
static int get_int(json_t *root, const char *k, json_int_t lo, json_int_t hi, json_int_t *v,
                   srv_error *e) {
    json_t *x = json_object_get(root, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_integer(x)) return bad(e, k, "'%s' must be an integer", k);
    json_int_t i = json_integer_value(x);
    if (i < lo || i > hi) return bad(e, k, "'%s' must be in [%lld, %lld]", k, (long long)lo, (long long)hi);
    *v = i;
    return 0;
}

static int get_bool(json_t *root, const char *k, int *v, srv_error *e) {
    json_t *x = json_object_get(root, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_boolean(x)) return bad(e, k, "'%s' must be true or false", k);
    *v = json_is_true(x);
    return 0;
}

/* A message's content: a string, or an array of {"type":"text","text":...}
** parts (joined into *tmp). */
static int msg_content(json_t *m, int role, sbuf *tmp, const char **t, size_t *n, srv_error *e) {
    json_t *c = json_object_get(m, "content");
    if (json_is_string(c)) {
        *t = json_string_value(c);
        *n = json_string_length(c);
        return 0;
    }
    if ((!c || json_is_null(c)) && role == 2) {
        *t = "";
        *n = 0;
        return 0;
    }
    if (!json_is_array(c)) return bad(e, "messages", "a message's 'content' must be a string or an array of text parts");
    size_t i;
    json_t *p;
    json_array_foreach(c, i, p) {
        json_t *ty = json_object_get(p, "type"), *tx = json_object_get(p, "text");
        if (!json_is_string(ty) || strcmp(json_string_value(ty), "text") || !json_is_string(tx))
            return bad(e, "messages", "only text content parts are supported");
        if (sbuf_add(tmp, json_string_value(tx), json_string_length(tx)))
            return bad(e, "messages", "out of host memory");
    }
    *t = tmp->p ? tmp->p : "";
    *n = tmp->n;
    return 0;
}

/* The length of the UTF-8 sequence at p (at most n bytes), or 0 if it is
** not one that jansson accepts (overlong, surrogate, past U+10FFFF, cut). */
static size_t utf8_len(const unsigned char *p, size_t n) {
    const unsigned c = p[0];
    size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (k == 0 || k > n) return 0;
    for (size_t i = 1; i < k; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) || (c == 0xF0 && p[1] < 0x90) ||
        (c == 0xF4 && p[1] > 0x8F))
        return 0;
    return k;
}

void srv_utf8_repair(char *msg) {
    unsigned char *p = (unsigned char *)msg;
    size_t n = strlen(msg);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(p + i, n - i);
        if (k) {
            i += k;
            continue;
        }
        size_t rest = n - i; /* a cut sequence: a lead byte and only continuation bytes after it */
        int cut = p[i] >= 0xC2 && p[i] <= 0xF4 && rest < 4;
        for (size_t r = 1; cut && r < rest; r++) cut = (p[i + r] & 0xC0) == 0x80;
        if (cut) {
            p[i] = 0;
            return;
        }
        p[i++] = '?';
    }
}

static uint64_t next_seed(void) {
    static uint64_t counter;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    uint64_t x = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9E3779B97F4A7C15ull ^
                 ((uint64_t)t.tv_sec << 30) ^ (uint64_t)t.tv_nsec;
    x ^= x >> 31;
    return x * 0xBF58476D1CE4E5B9ull;
}

/* The request into j; 400 (e) or 404 (*status) on a bad one. */
static int parse_request(srv *s, json_t *root, srv_job *j, unsigned *status, srv_error *e) {
    *status = 400;
    json_t *x = json_object_get(root, "model");
    if (x && !json_is_null(x)) {
        if (!json_is_string(x)) return bad(e, "model", "'model' must be a string");
        if (strcmp(json_string_value(x), s->model_name)) {
            *status = 404;
            return bad(e, "model", "the model '%s' does not exist (this server has '%s')",
                       json_string_value(x), s->model_name);
        }
    }
    json_int_t n_choices = 1, max_tokens = 0, top_k = s->defaults.top_k, seed = -1;
    double temp = s->defaults.temperature, top_p = s->defaults.top_p;
    double rep = s->defaults.repetition_penalty, ignored = 0;
    const json_int_t ctx = s->ctx;
    if (get_int(root, "n", 1, 1, &n_choices, e) ||
        get_int(root, "max_tokens", 1, ctx, &max_tokens, e) ||
        get_int(root, "max_completion_tokens", 1, ctx, &max_tokens, e) ||
        get_int(root, "top_k", 0, 1 << 24, &top_k, e) ||
        get_int(root, "seed", INT64_MIN, INT64_MAX, &seed, e) ||
        get_num(root, "temperature", 0, 2, &temp, e) || get_num(root, "top_p", 0, 1, &top_p, e) ||
        get_num(root, "repetition_penalty", 1e-3, 100, &rep, e) ||
        get_num(root, "presence_penalty", -2, 2, &ignored, e) ||
        get_num(root, "frequency_penalty", -2, 2, &ignored, e) ||
        get_bool(root, "stream", &j->stream, e) ||
        get_bool(root, "cache_prompt", &j->cache_prompt, e)) /* llama.cpp's name */
        return -1;
    json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return bad(e, "stream_options", "'stream_options' must be an object");
        if (get_bool(so, "include_usage", &j->include_usage, e)) return -1;
    }
    /* top_p 0 (or so small that it is 0 as a float, 1e-50, which the sampler
    ** would refuse): the likeliest */
    const int greedy = (float)top_p == 0.0f;
    j->sampler.temperature = greedy ? 0.0f : (float)temp;
    j->sampler.top_p = greedy ? 1.0f : (float)top_p;
    j->sampler.top_k = (int)top_k;
    j->sampler.repetition_penalty = (float)rep;
    j->sampler.seed = json_object_get(root, "seed") && !json_is_null(json_object_get(root, "seed"))
                          ? (uint64_t)seed : next_seed();
    /* stop: a string or up to 4 */
    x = json_object_get(root, "stop");
    if (x && !json_is_null(x)) {
        json_t *one[1] = {x};
        size_t n = json_is_array(x) ? json_array_size(x) : 1;
        if (!json_is_array(x) && !json_is_string(x))
            return bad(e, "stop", "'stop' must be a string or an array of strings");
        if (n > SRV_MAX_STOP) return bad(e, "stop", "'stop' has at most %d strings", SRV_MAX_STOP);
        for (size_t i = 0; i < n; i++) {
            json_t *t = json_is_array(x) ? json_array_get(x, i) : one[0];
            size_t len = json_string_length(t);
            if (!json_is_string(t) || len == 0 || len > SRV_MAX_STOP_LEN)
                return bad(e, "stop", "each stop sequence is a string of 1..%d bytes", SRV_MAX_STOP_LEN);
            if (!(j->stop[j->n_stop] = malloc(len + 1))) return bad(e, "stop", "out of host memory");
            memcpy(j->stop[j->n_stop], json_string_value(t), len + 1);
            j->stop_len[j->n_stop++] = len;
        }
    }
    /* messages → the prompt */
    x = json_object_get(root, "messages");
    if (!x) return bad(e, "messages", "'messages' is required");
    if (!json_is_array(x)) return bad(e, "messages", "'messages' must be an array");
    size_t nm = json_array_size(x);
    if (nm == 0 || nm > MAX_MESSAGES)
        return bad(e, "messages", "'messages' must hold 1..%d messages", MAX_MESSAGES);
    srv_msg *msgs = calloc(nm, sizeof *msgs);
    sbuf *parts = calloc(nm, sizeof *parts);
    int rc = -1;
    if (!msgs || !parts) {
        bad(e, NULL, "out of host memory");
        goto out;
    }
    for (size_t i = 0; i < nm; i++) {
        json_t *m = json_array_get(x, i), *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role)) {
            bad(e, "messages", "messages[%zu] must be an object with a string 'role'", i);
            goto out;
        }
        const char *r = json_string_value(role);
        msgs[i].role = !strcmp(r, "system") || !strcmp(r, "developer") ? 0 : !strcmp(r, "user") ? 1
                     : !strcmp(r, "assistant") ? 2 : -1;
        if (msgs[i].role < 0) {
            bad(e, "messages", "messages[%zu]: the role must be system, user or assistant", i);
            goto out;
        }
        if (msg_content(m, msgs[i].role, &parts[i], &msgs[i].text, &msgs[i].len, e)) goto out;
    }
    char err[300];
    if (srv_prompt_ids(s, msgs, (int)nm, &j->ids, &j->n_ids, err, sizeof err)) {
        bad(e, "messages", "%s", err);
        goto out;
    }
    if (j->n_ids >= ctx) {
        bad(e, "messages", "the prompt is %d tokens; the context holds %lld (with at least one "
            "for the answer)", j->n_ids, (long long)ctx);
        e->code = "context_length_exceeded";
        goto out;
    }
    j->max_tokens = max_tokens > 0 ? (long)max_tokens : (long)(ctx - j->n_ids);
    rc = 0;
out:
    for (size_t i = 0; parts && i < nm; i++) sbuf_free(&parts[i]);
    free(parts);
    free(msgs);
    return rc;
}

/* Brackets and commas of body[0..len) outside strings (MAX_JSON_VALUES). */
static size_t json_separators(const char *b, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        const char c = b[i];
        if (c == '"') { /* a string: to its closing quote, over escapes */
            for (i++; i < len && b[i] != '"'; i++)
                if (b[i] == '\\') i++;
        } else if (c == '[' || c == '{' || c == ',') {
            n++;
        }
    }
    return n;
}

unsigned srv_parse_chat(srv *s, const char *body, size_t len, srv_job **job, srv_error *e) {
    *job = NULL;
    e->msg[0] = 0;
    e->param = NULL;
    e->code = NULL;
    const size_t nv = body ? json_separators(body, len) : 0;
    if (nv > MAX_JSON_VALUES) {
        e->code = "invalid_json";
        snprintf(e->msg, sizeof e->msg, "the body has %zu JSON arrays, objects and commas; at most %d are "
                 "read", nv, MAX_JSON_VALUES);
        return 400;
    }
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        e->code = "invalid_json";
        snprintf(e->msg, sizeof e->msg, "the body is not valid JSON: %s (line %d, column %d)",
                 je.text, je.line, je.column);
        srv_utf8_repair(e->msg);
        return 400;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        e->code = "invalid_json";
        snprintf(e->msg, sizeof e->msg, "the body must be a JSON object");
        return 400;
    }
    srv_job *j = job_new();
    if (!j) {
        json_decref(root);
        snprintf(e->msg, sizeof e->msg, "out of host memory");
        return 500;
    }
    unsigned status;
    int rc = parse_request(s, root, j, &status, e);
    json_decref(root);
    if (rc) {
        job_unref(j);
        srv_utf8_repair(e->msg);
        e->code = status == 404 ? "model_not_found" : e->code ? e->code : "invalid_value";
        return status;
    }
    j->model = s->model_name;
    j->created = (long long)time(NULL);
    snprintf(j->id, sizeof j->id, "chatcmpl-%016llx", (unsigned long long)next_seed());
    *job = j;
    return 200;
}
