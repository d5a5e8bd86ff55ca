/* m40-server: an OpenAI-compatible HTTP server for ChatGLM2/3 on the model
** API of examples/chatglm2 (docs/server.md).
**
**   main.c    options, loading, signals, start-up and shutdown
**   http.c    libmicrohttpd: routes, auth, body limits, JSON (jansson)
**             requests and responses, SSE streaming
**   worker.c  the bounded queue and the one model thread that owns the
**             glm_model (GPU or CPU context) and answers up to --parallel
**             jobs at once, their decode steps batched (continuous batching)
**   request.c a chat request's body → a job: JSON, field checks, the
**             prompt ids (no libmicrohttpd, no model: fuzzed by
**             tests/fuzz/fuzz_server_request.c)
**   prompt.c  OpenAI messages → ChatGLM2 / ChatGLM3 prompt ids
**
** Threads: libmicrohttpd runs one thread per connection; a connection
** parses and tokenizes its request, then hands a job to the worker and waits
** on the job (non-streaming) or reads the job's SSE bytes as they come
** (streaming). A job is shared by its connection and the worker: refcounted,
** its fields after `mu` guarded by it. */
#ifndef M40_EXAMPLES_SERVER_H
#define M40_EXAMPLES_SERVER_H

#include "chatglm2.h"
#include "stream.h"

#include <jansson.h>
#include <m40/tokenizer.h>
#include <m40/transformer.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SRV_MAX_STOP 4      /* stop strings per request (OpenAI's limit) */
#define SRV_MAX_STOP_LEN 256

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

int sbuf_add(sbuf *b, const char *s, size_t n);
void sbuf_free(sbuf *b);

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

typedef struct srv_job {
    /* the request: set before srv_submit, read-only afterwards */
    int32_t *ids;
    int n_ids;
    m40_sampler_desc sampler;
    long max_tokens;               /* ≥ 1 */
    char *stop[SRV_MAX_STOP];
    size_t stop_len[SRV_MAX_STOP];
    int n_stop;
    int stream, include_usage;
    int cache_prompt;              /* 1 (default): may start from a slot's cached prefix */
    char id[48];
    long long created;
    const char *model;             /* the server's model name */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    int state;                     /* JOB_* */
    int cancel;                    /* the client left, or shutdown */
    sbuf sse;                      /* streaming: SSE bytes not read yet */
    size_t sse_read;
    sbuf text;                     /* the answer as sent (stop strings cut) */
    const char *finish;            /* "stop", "length", or NULL (cancelled) */
    int completion_tokens;
    int err_status;                /* non-zero: the job failed with this HTTP status */
    char err[256];
    struct srv_job *next;          /* the queue (under srv.mu) */
} srv_job;

srv_job *job_new(void);
void job_ref(srv_job *j);
void job_unref(srv_job *j);
/* why: 1 the client left, 2 the server is shutting down. */
void job_cancel(srv_job *j, int why);
/* Appends "data: {chat.completion.chunk}\n\n" with this delta (stolen) and
** finish_reason (NULL: null) to the job's SSE bytes. 0, or -1 (no memory). */
int job_sse(srv_job *j, json_t *delta, const char *finish);

typedef struct srv_metrics {
    uint64_t requests, completions, prompt_tokens, generated_tokens, cancelled;
    uint64_t cached_tokens;        /* prompt tokens taken from a slot's cache, not prefilled */
    uint64_t steps, step_rows;     /* decode steps (graph runs), and the jobs in them */
    double prefill_s, decode_s;
    double last_decode_tok_s;
} srv_metrics;

typedef struct srv {
    /* configuration */
    const glm_open_opts *open;
    glm_model *m;                  /* the model thread's (opened and closed there) */
    uint64_t kv_bytes;
    m40_tokenizer *tok;            /* the HTTP threads' encoding, under tok_mu */
    m40_tokenizer *tok_worker;     /* the model thread's streams: its own handle, no lock */
    int glm3;
    const char *model_name;
    const char *api_key;           /* NULL: no auth */
    int64_t ctx;                   /* the cache's tokens */
    int queue_cap;                 /* jobs that may wait */
    size_t max_body;               /* bytes; larger bodies get 413 */
    unsigned timeout_s;            /* connection inactivity timeout */
    unsigned max_per_ip;           /* open connections per client address (0: no limit) */
    double request_timeout_s;      /* a request's headers and body must all arrive in this */
    double shutdown_s;             /* the bound for in-flight jobs at shutdown */
    int parallel;                  /* jobs answered at once (conversation slots) */
    m40_sampler_desc defaults;
    int test_end_delay_ms;         /* M40_SERVER_TEST_END_DELAY_MS: tests only (srv_prepare) */

    pthread_mutex_t tok_mu;        /* tok (encode has scratch state): the HTTP threads */

    pthread_mutex_t mu;            /* the queue, `current`, the metrics */
    pthread_cond_t cv;
    srv_job *head, *tail;
    int queued;
    int nrunning;                  /* jobs in slots (being answered) */
    int streams;                   /* SSE responses not yet freed (sent to the end or dropped) */
    struct http_watch *watch;      /* http.c: connections receiving a request (under mu) */
    pthread_t watchdog;
    int watchdog_started, watchdog_quit;
    int stopping;                  /* shutdown began: no new jobs */
    int worker_exit;               /* the worker ends when no job is left */
    int cancel_all;                /* shutdown's bound passed: cut the running jobs */
    int kv_used;                   /* tokens in the cache, all slots */
    srv_metrics met;
    uint64_t status_count[16];     /* responses by status (worker.c's STATUSES) */
    pthread_t worker;
    int worker_started;
    int inited;                    /* srv_init ran */
    int ready;                     /* the model thread: 1 serving, -1 the model failed */
    char init_err[512];
} srv;

/* worker.c: the locks (before http_start). */
void srv_prepare(srv *s);
/* Starts the model thread, which opens the model; returns when
** it serves (0) or failed (-1, the reason in err). */
int srv_init(srv *s, const glm_open_opts *open, char *err, size_t errlen);
/* 0 queued; -1 the queue is full (429); -2 shutting down (503). */
int srv_submit(srv *s, srv_job *j);
/* Stops taking jobs, fails the queued ones (503), lets the running ones go
** on for shutdown_s seconds, then cancels them; joins the worker. */
void srv_shutdown(srv *s);
void srv_destroy(srv *s);
/* After srv_shutdown: waits up to `seconds` for the streams' last bytes
** (the error event and [DONE] of a cut answer) to reach their clients. */
void srv_drain(srv *s, double seconds);

/* Seconds on the monotonic clock. */
double srv_now(void);
/* The CLOCK_REALTIME time `seconds` from now, for pthread_cond_timedwait. */
struct timespec srv_deadline(double seconds);

/* Responses by HTTP status, for /metrics. */
void srv_count_status(srv *s, unsigned status);
/* Prometheus text into b. */
int srv_metrics_text(srv *s, sbuf *b);

/* prompt.c: the prompt of a chat as ids (malloc'ed), or -1 with err. */
typedef struct srv_msg {
    int role;                      /* 0 system, 1 user, 2 assistant */
    const char *text;
    size_t len;
} srv_msg;
int srv_prompt_ids(srv *s, const srv_msg *msgs, int n, int32_t **ids, int *n_ids, char *err,
                   size_t errlen);

/* request.c: a refusal in OpenAI's error shape. */
typedef struct srv_error {
    char msg[600];                 /* may quote the client's bytes */
    const char *param;             /* the field at fault, or NULL (null) */
    const char *code;              /* "invalid_json", "invalid_value", "model_not_found",
                                   ** "context_length_exceeded", or NULL (null) */
} srv_error;
/* A POST /v1/chat/completions body (len bytes, no NUL needed) → a new job
** (*job, one reference: job_unref) with the request's fields, prompt ids,
** id, model and creation time set, ready for srv_submit. Uses of s only
** model_name, ctx, defaults, tok, glm3 and tok_mu (srv_prepare): no
** connection and no model. Returns the HTTP status: 200, or 400 (bad JSON or
** a bad field), 404 (another model) or 500 (out of memory) with *e filled
** in and *job NULL. */
unsigned srv_parse_chat(srv *s, const char *body, size_t len, srv_job **job, srv_error *e);
/* A message that quotes a client's bytes (jansson's "near '...'" shows the
** raw token, a URL, a cut inside a character) made valid UTF-8 in place, so
** json_string takes it: each byte outside a valid sequence becomes '?', a
** sequence cut by the end is dropped. */
void srv_utf8_repair(char *msg);

/* http.c */
struct MHD_Daemon;
struct http_watch;
/* Starts listening; *port gets the bound port (useful with port 0). */
struct MHD_Daemon *http_start(srv *s, const char *host, int port, unsigned timeout_s,
                              unsigned max_conn, int *bound_port, char *err, size_t errlen);
/* Stops the request-timeout watchdog, then the daemon (NULL: the watchdog). */
void http_stop(srv *s, struct MHD_Daemon *d);

#endif
