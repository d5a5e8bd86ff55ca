/* The HTTP side (see server.h): libmicrohttpd, one thread per connection,
** an inactivity timeout; a chat request's body goes through request.c
** (srv_parse_chat), and every answer has the OpenAI shapes. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
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

/* ---- the request timeout ------------------------------------------------------
** libmicrohttpd's timeout is an idle timeout: a client that sends a byte
** every few seconds keeps a connection (and its thread) for as long as the
** header and body limits allow (slowloris). So every connection is watched
** from its start, and again from the end of each answer (keep-alive), until
** its request has fully arrived: the watchdog shuts the socket of one that
** takes longer than --request-timeout (libmicrohttpd then sees the end of
** the stream and closes the connection). Waiting for the model and sending
** the answer are not bounded here. */
typedef struct http_watch {
    int fd;
    double since;              /* when the request began to arrive */
    int receiving;             /* 1: headers or body still arriving */
    int cut;
    struct http_watch *prev, *next;
} http_watch;

static http_watch *watch_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void watch_set(srv *s, struct MHD_Connection *c, int receiving) {
    http_watch *w = watch_of(c);
    if (!w) return;
    pthread_mutex_lock(&s->mu);
    w->receiving = receiving;
    w->since = srv_now();
    pthread_mutex_unlock(&s->mu);
}

static void notify(void *cls, struct MHD_Connection *c, void **socket_context,
                   enum MHD_ConnectionNotificationCode code) {
    srv *s = cls;
    http_watch *w = *socket_context;
    pthread_mutex_lock(&s->mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED && (w = calloc(1, sizeof *w))) {
        w->fd = conn_fd(c);
        w->since = srv_now();
        w->receiving = 1;
        w->next = s->watch;
        if (s->watch) s->watch->prev = w;
        s->watch = w;
        *socket_context = w;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && w) {
        if (w->prev) w->prev->next = w->next;
        else s->watch = w->next;
        if (w->next) w->next->prev = w->prev;
        free(w);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&s->mu);
}

static void *watchdog(void *arg) {
    srv *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->watchdog_quit) {
        struct timespec dl = srv_deadline(0.25);
        pthread_cond_timedwait(&s->cv, &s->mu, &dl);
        double now = srv_now();
        for (http_watch *w = s->watch; w; w = w->next)
            if (w->receiving && !w->cut && w->fd >= 0 && now - w->since > s->request_timeout_s) {
                shutdown(w->fd, SHUT_RDWR); /* the connection's thread sees the end */
                w->cut = 1;
            }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void http_stop(srv *s, struct MHD_Daemon *d) {
    if (s->watchdog_started) {
        pthread_mutex_lock(&s->mu);
        s->watchdog_quit = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->watchdog, NULL);
        s->watchdog_started = 0;
    }
    if (d) MHD_stop_daemon(d);
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
    /* the message may quote the client's bytes (a URL): not always UTF-8 */
    srv_utf8_repair(msg);
    json_t *m = json_string(msg);
    json_t *o = json_pack("{s:{s:o, s:s, s:o, s:o}}", "error", "message", m, "type", type,
                          "param", param ? json_string(param) : json_null(),
                          "code", code ? json_string(code) : json_null());
    return send_json(s, c, status, o);
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
        struct timespec dl = srv_deadline(0.2);
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
    pthread_mutex_lock(&x->s->mu);
    x->s->streams--;
    pthread_cond_broadcast(&x->s->cv);
    pthread_mutex_unlock(&x->s->mu);
    free(x);
}

/* ---- routes ---------------------------------------------------------------- */

static enum MHD_Result chat(srv *s, struct MHD_Connection *c, conn *k) {
    srv_job *j;
    srv_error e;
    unsigned status = srv_parse_chat(s, k->body.p, k->body.n, &j, &e);
    if (status != 200) return send_err(s, c, status, e.code, e.param, "%s", e.msg);
    if (j->stream && job_sse(j, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL)) {
        job_unref(j);
        return send_err(s, c, 500, NULL, NULL, "out of host memory");
    }
    int rc = srv_submit(s, j);
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
        pthread_mutex_lock(&s->mu);
        s->streams++; /* until sse_free */
        pthread_mutex_unlock(&s->mu);
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
        struct timespec dl = srv_deadline(0.2);
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
    watch_set(s, c, 0); /* the request is in: no longer the client's to take its time */
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
    (void)why;
    watch_set(cls, c, 1); /* keep-alive: the next request's clock starts */
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
        MHD_OPTION_NOTIFY_CONNECTION, notify, s,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port,
                 errno ? strerror(errno) : "libmicrohttpd refused the options");
        return NULL;
    }
    if (s->request_timeout_s <= 0) s->request_timeout_s = 60;
    if (pthread_create(&s->watchdog, NULL, watchdog, s) == 0) s->watchdog_started = 1;
    else {
        MHD_stop_daemon(d);
        snprintf(err, errlen, "cannot start the request-timeout thread");
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *bound_port = di ? di->port : port;
    return d;
}
