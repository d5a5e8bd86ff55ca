/* The HTTP side (see server.h): libmicrohttpd, one thread per connection,
** an inactivity timeout; requests checked field by field (every number's
** type and range) and answered in the OpenAI shapes. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* A body past max_body is read and dropped up to this, then answered 413
** (a client that is still sending would not see an earlier answer); past
** it the connection is closed. */
#define DISCARD_LIMIT ((uint64_t)64 << 20)
#define MAX_MESSAGES 4096

typedef struct conn {
    sbuf body;
    uint64_t received;
    int too_large;
} conn;

typedef struct sse_ctx {
    srv *s;
    srv_job *j;
    struct MHD_Connection *c;
    int fd;
} sse_ctx;

/* libmicrohttpd times out a connection that has been idle for --timeout
** seconds, counting the time spent blocked in our callbacks, so a request
** waiting for the model would be cut. While we wait its timeout is off;
** setting it again restarts the idle clock (the timeout stays on wherever
** the client is the slow side: headers, body, reading the answer). */
static void wait_begin(struct MHD_Connection *c) {
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
}

static void wait_end(srv *s, struct MHD_Connection *c) {
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, s->timeout_s);
}

/* The peer closed its side (or the socket failed): its answer is not wanted. */
static int peer_gone(int fd) {
    char b;
    ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static int conn_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static enum MHD_Result send_buf(srv *s, struct MHD_Connection *c, unsigned status, char *text,
                                size_t len, const char *type) {
    /* text is malloc'ed and passes to the response */
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == 401) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == 429 || status == 503) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == 405) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, POST");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    srv_count_status(s, status);
    return rc;
}

static enum MHD_Result send_json(srv *s, struct MHD_Connection *c, unsigned status, json_t *o) {
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!t) return MHD_NO;
    size_t n = strlen(t);
    char *u = realloc(t, n + 2); /* a newline for curl users */
    if (u) {
        t = u;
        t[n++] = '\n';
        t[n] = 0;
    }
    return send_buf(s, c, status, t, n, "application/json");
}

/* {"error": {"message", "type", "param", "code"}} */
static enum MHD_Result send_err(srv *s, struct MHD_Connection *c, unsigned status,
                                const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static enum MHD_Result send_err(srv *s, struct MHD_Connection *c, unsigned status,
                                const char *code, const char *param, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *type = status == 401 ? "authentication_error" : status == 404 ? "not_found_error"
                     : status == 429 ? "rate_limit_error" : status == 503 ? "service_unavailable"
                     : status >= 500 ? "server_error" : "invalid_request_error";
    /* the message may quote the client's bytes: not always UTF-8 */
    json_t *m = json_string(msg);
    if (!m) m = json_string("(a message with invalid UTF-8)");
    json_t *o = json_pack("{s:{s:o, s:s, s:o, s:o}}", "error", "message", m, "type", type,
                          "param", param ? json_string(param) : json_null(),
                          "code", code ? json_string(code) : json_null());
    return send_json(s, c, status, o);
}

/* ---- request fields -------------------------------------------------------- */

typedef struct perr {
    char msg[300];
    const char *param;
    const char *code; /* NULL: "invalid_value" */
} perr;

static int bad(perr *e, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(perr *e, const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->param = param;
    return -1;
}

/* A number field in [lo, hi] (absent or null: left as is). */
static int get_num(json_t *root, const char *k, double lo, double hi, double *v, perr *e) {
    json_t *x = json_object_get(root, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_number(x)) return bad(e, k, "'%s' must be a number", k);
    double d = json_number_value(x);
    if (!isfinite(d) || d < lo || d > hi) return bad(e, k, "'%s' must be in [%g, %g]", k, lo, hi);
    *v = d;
    return 0;
}

/* An integer field in [lo, hi] (absent or null: left as is). */
static int get_int(json_t *root, const char *k, json_int_t lo, json_int_t hi, json_int_t *v, perr *e) {
    json_t *x = json_object_get(root, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_integer(x)) return bad(e, k, "'%s' must be an integer", k);
    json_int_t i = json_integer_value(x);
    if (i < lo || i > hi) return bad(e, k, "'%s' must be in [%lld, %lld]", k, (long long)lo, (long long)hi);
    *v = i;
    return 0;
}

static int get_bool(json_t *root, const char *k, int *v, perr *e) {
    json_t *x = json_object_get(root, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_boolean(x)) return bad(e, k, "'%s' must be true or false", k);
    *v = json_is_true(x);
    return 0;
}

/* A message's content: a string, or an array of {"type":"text","text":...}
** parts (joined into *tmp). */
static int msg_content(json_t *m, int role, sbuf *tmp, const char **t, size_t *n, perr *e) {
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
static int parse_request(srv *s, json_t *root, srv_job *j, unsigned *status, perr *e) {
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
    j->sampler.temperature = top_p == 0 ? 0.0f : (float)temp; /* top_p 0: the likeliest */
    j->sampler.top_p = top_p == 0 ? 1.0f : (float)top_p;
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

/* ---- streaming ------------------------------------------------------------- */

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    sse_ctx *x = cls;
    srv_job *j = x->j;
    pthread_mutex_lock(&j->mu);
    const int waits = j->sse.n == j->sse_read && j->state != JOB_DONE;
    if (waits) wait_begin(x->c);
    while (j->sse.n == j->sse_read && j->state != JOB_DONE) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 200 * 1000 * 1000;
        if (dl.tv_nsec >= 1000000000) dl.tv_sec++, dl.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&j->cv, &j->mu, &dl);
        if (j->sse.n == j->sse_read && j->state != JOB_DONE && peer_gone(x->fd)) {
            pthread_mutex_unlock(&j->mu);
            job_cancel(j, 1);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    if (waits) wait_end(x->s, x->c);
    size_t k = j->sse.n - j->sse_read;
    if (k == 0) {
        pthread_mutex_unlock(&j->mu);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (k > max) k = max;
    memcpy(buf, j->sse.p + j->sse_read, k);
    j->sse_read += k;
    if (j->sse_read == j->sse.n) j->sse.n = j->sse_read = 0;
    pthread_mutex_unlock(&j->mu);
    return (ssize_t)k;
}

static void sse_free(void *cls) {
    sse_ctx *x = cls;
    job_cancel(x->j, 1); /* a no-op when it is done */
    job_unref(x->j);
    free(x);
}

/* ---- routes ---------------------------------------------------------------- */

static enum MHD_Result chat(srv *s, struct MHD_Connection *c, conn *k) {
    json_error_t je;
    json_t *root = json_loadb(k->body.p ? k->body.p : "", k->body.n, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return send_err(s, c, 400, "invalid_json", NULL, "the body is not valid JSON: %s (line %d, "
                        "column %d)", je.text, je.line, je.column);
    if (!json_is_object(root)) {
        json_decref(root);
        return send_err(s, c, 400, "invalid_json", NULL, "the body must be a JSON object");
    }
    srv_job *j = job_new();
    if (!j) {
        json_decref(root);
        return send_err(s, c, 500, NULL, NULL, "out of host memory");
    }
    perr e = {{0}, NULL, NULL};
    unsigned status;
    int rc = parse_request(s, root, j, &status, &e);
    json_decref(root);
    if (rc) {
        job_unref(j);
        return send_err(s, c, status, status == 404 ? "model_not_found" : e.code ? e.code
                        : "invalid_value", e.param, "%s", e.msg);
    }
    j->model = s->model_name;
    j->created = (long long)time(NULL);
    snprintf(j->id, sizeof j->id, "chatcmpl-%016llx", (unsigned long long)next_seed());
    if (j->stream && job_sse(j, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL)) {
        job_unref(j);
        return send_err(s, c, 500, NULL, NULL, "out of host memory");
    }
    rc = srv_submit(s, j);
    if (rc) {
        job_unref(j);
        return rc == -1 ? send_err(s, c, 429, "queue_full", NULL, "the queue is full (%d waiting); "
                                   "try again later", s->queue_cap)
                        : send_err(s, c, 503, "shutting_down", NULL, "the server is shutting down");
    }
    const int fd = conn_fd(c);
    if (j->stream) {
        sse_ctx *x = malloc(sizeof *x);
        struct MHD_Response *r = x ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
                                                                       sse_read, x, sse_free) : NULL;
        if (!r) {
            free(x);
            job_cancel(j, 1);
            job_unref(j);
            return MHD_NO;
        }
        *x = (sse_ctx){s, j, c, fd};
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        enum MHD_Result q = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r); /* x (and the job's ref) go with it */
        srv_count_status(s, 200);
        return q;
    }
    /* non-streaming: wait, watching for the client leaving */
    wait_begin(c);
    pthread_mutex_lock(&j->mu);
    while (j->state != JOB_DONE) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 200 * 1000 * 1000;
        if (dl.tv_nsec >= 1000000000) dl.tv_sec++, dl.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&j->cv, &j->mu, &dl);
        if (j->state != JOB_DONE && !j->cancel && fd >= 0 && peer_gone(fd)) {
            __atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
            pthread_cond_broadcast(&j->cv);
        }
    }
    pthread_mutex_unlock(&j->mu);
    wait_end(s, c);
    enum MHD_Result q;
    if (j->cancel == 1) {
        q = MHD_NO; /* nobody to answer */
    } else if (j->err_status) {
        q = send_err(s, c, (unsigned)j->err_status, j->err_status == 503 ? "shutting_down" : NULL,
                     NULL, "%s", j->err);
    } else {
        json_t *msg = json_stringn(j->text.p ? j->text.p : "", j->text.n);
        json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:{s:s, s:o}, s:s}], s:{s:i, s:i, s:i}}",
                              "id", j->id, "object", "chat.completion", "created",
                              (json_int_t)j->created, "model", j->model, "choices", "index", 0,
                              "message", "role", "assistant", "content", msg, "finish_reason",
                              j->finish, "usage", "prompt_tokens", j->n_ids, "completion_tokens",
                              j->completion_tokens, "total_tokens", j->n_ids + j->completion_tokens);
        q = o ? send_json(s, c, 200, o) : send_err(s, c, 500, NULL, NULL, "the answer could not be encoded");
    }
    job_unref(j);
    return q;
}

static enum MHD_Result models(srv *s, struct MHD_Connection *c, const char *one) {
    json_t *m = json_pack("{s:s, s:s, s:I, s:s}", "id", s->model_name, "object", "model",
                          "created", (json_int_t)0, "owned_by", "m40");
    if (one) {
        if (strcmp(one, s->model_name)) {
            json_decref(m);
            return send_err(s, c, 404, "model_not_found", "model", "the model '%s' does not exist", one);
        }
        return send_json(s, c, 200, m);
    }
    return send_json(s, c, 200, json_pack("{s:s, s:[o]}", "object", "list", "data", m));
}

static int authorized(srv *s, struct MHD_Connection *c) {
    if (!s->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7)) return 0;
    h += 7;
    size_t a = strlen(h), b = strlen(s->api_key);
    unsigned diff = a != b; /* compared in time independent of where they differ */
    for (size_t i = 0; i < a; i++) diff |= (unsigned char)h[i] ^ (unsigned char)s->api_key[i % (b ? b : 1)];
    return diff == 0;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **con_cls) {
    (void)version;
    srv *s = cls;
    conn *k = *con_cls;
    if (!k) { /* the headers */
        if (!(k = calloc(1, sizeof *k))) return MHD_NO;
        *con_cls = k;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > DISCARD_LIMIT)
            return send_err(s, c, 413, "request_too_large", NULL, "the body is over %zu bytes",
                            s->max_body);
        return MHD_YES;
    }
    if (*size) { /* a piece of the body */
        k->received += *size;
        if (k->received > DISCARD_LIMIT) return MHD_NO;
        if (!k->too_large && k->body.n + *size > s->max_body) {
            k->too_large = 1;
            sbuf_free(&k->body);
        }
        if (!k->too_large && sbuf_add(&k->body, data, *size)) return MHD_NO;
        *size = 0;
        return MHD_YES;
    }
    const int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    if (!strcmp(url, "/health")) {
        if (!get) return send_err(s, c, 405, NULL, NULL, "use GET");
        pthread_mutex_lock(&s->mu);
        int stopping = s->stopping, queued = s->queued, running = s->nrunning;
        int ready = s->ready;
        pthread_mutex_unlock(&s->mu);
        const char *st = stopping ? "shutting down" : ready == 0 ? "loading" : ready < 0 ? "failed" : "ok";
        return send_json(s, c, stopping || ready != 1 ? 503 : 200,
                         json_pack("{s:s, s:i, s:i}", "status", st, "queue", queued, "running", running));
    }
    if (!authorized(s, c))
        return send_err(s, c, 401, "invalid_api_key", NULL, "a valid API key is required "
                        "(Authorization: Bearer KEY)");
    if (k->too_large)
        return send_err(s, c, 413, "request_too_large", NULL, "the body is over %zu bytes", s->max_body);
    if (!strcmp(url, "/v1/chat/completions") || !strcmp(url, "/chat/completions")) {
        if (!post) return send_err(s, c, 405, NULL, NULL, "use POST");
        pthread_mutex_lock(&s->mu);
        int stopping = s->stopping, ready = s->ready;
        pthread_mutex_unlock(&s->mu);
        if (stopping) return send_err(s, c, 503, "shutting_down", NULL, "the server is shutting down");
        if (ready != 1) return send_err(s, c, 503, "loading", NULL, "the model is loading");
        return chat(s, c, k);
    }
    if (!strcmp(url, "/v1/models") || !strncmp(url, "/v1/models/", 11)) {
        if (!get) return send_err(s, c, 405, NULL, NULL, "use GET");
        return models(s, c, url[10] ? url + 11 : NULL);
    }
    if (!strcmp(url, "/metrics")) {
        if (!get) return send_err(s, c, 405, NULL, NULL, "use GET");
        sbuf b = {0};
        if (srv_metrics_text(s, &b)) {
            sbuf_free(&b);
            return send_err(s, c, 500, NULL, NULL, "out of host memory");
        }
        return send_buf(s, c, 200, b.p, b.n, "text/plain; version=0.0.4");
    }
    return send_err(s, c, 404, "not_found", NULL, "no route %s %s", method, url);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode why) {
    (void)cls, (void)c, (void)why;
    conn *k = *con_cls;
    if (!k) return;
    sbuf_free(&k->body);
    free(k);
    *con_cls = NULL;
}

struct MHD_Daemon *http_start(srv *s, const char *host, int port, unsigned timeout_s,
                              unsigned max_conn, int *bound_port, char *err, size_t errlen) {
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int g = getaddrinfo(host, ps, &hints, &ai);
    if (g) {
        snprintf(err, errlen, "--host %s: %s", host, gai_strerror(g));
        return NULL;
    }
    s->timeout_s = timeout_s;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                     MHD_USE_ITC; /* MHD_quiesce_daemon at shutdown */
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, handler, s, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s, MHD_OPTION_CONNECTION_LIMIT, max_conn,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->max_per_ip,
        MHD_OPTION_NOTIFY_COMPLETED, completed, s,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port,
                 errno ? strerror(errno) : "libmicrohttpd refused the options");
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *bound_port = di ? di->port : port;
    return d;
}
