/* The bounded queue and the model thread (see server.h): up to --parallel
** jobs at once on the one glm_model, each in its own conversation slot
** (cache row), their decode steps batched into one graph run (continuous
** batching: a job joins after its prefill and leaves when it ends), text
** through one chat_stream per slot (UTF-8-safe, the official
** post-processing), stop strings held back until they cannot match. */
#define _GNU_SOURCE /* memmem */
#include "server.h"
#include "chat.h" /* CHATGLM3_* */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int sbuf_add(sbuf *b, const char *s, size_t n) {
    if (n > SIZE_MAX / 2 - b->n) return -1;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

void sbuf_free(sbuf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

double srv_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- jobs ---------------------------------------------------------------- */

srv_job *job_new(void) {
    srv_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 1;
    m40_sampler_desc_init(&j->sampler);
    j->cache_prompt = 1;
    return j;
}

void job_ref(srv_job *j) {
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
}

void job_unref(srv_job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last) return;
    free(j->ids);
    for (int i = 0; i < j->n_stop; i++) free(j->stop[i]);
    sbuf_free(&j->sse);
    sbuf_free(&j->text);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

void job_cancel(srv_job *j, int why) {
    pthread_mutex_lock(&j->mu);
    if (!j->cancel) __atomic_store_n(&j->cancel, why, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static int job_sse_raw(srv_job *j, const char *s, size_t n) {
    pthread_mutex_lock(&j->mu);
    int rc = sbuf_add(&j->sse, "data: ", 6) || sbuf_add(&j->sse, s, n) ||
             sbuf_add(&j->sse, "\n\n", 2) ? -1 : 0;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return rc;
}

static int job_sse_obj(srv_job *j, json_t *o) {
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    int rc = t ? job_sse_raw(j, t, strlen(t)) : -1;
    free(t);
    return rc;
}

static json_t *chunk_head(const srv_job *j) {
    return json_pack("{s:s, s:s, s:I, s:s}", "id", j->id, "object", "chat.completion.chunk",
                     "created", (json_int_t)j->created, "model", j->model);
}

int job_sse(srv_job *j, json_t *delta, const char *finish) {
    json_t *o = chunk_head(j);
    json_t *c = json_pack("{s:i, s:o, s:o}", "index", 0, "delta", delta,
                          "finish_reason", finish ? json_string(finish) : json_null());
    if (!o || !c) {
        json_decref(o);
        json_decref(c);
        return -1;
    }
    json_object_set_new(o, "choices", json_pack("[o]", c));
    return job_sse_obj(j, o);
}

/* The end of a job: the stream's last events, DONE, and the waiters woken. */
static void job_end(srv_job *j) {
    if (j->stream) {
        if (j->err_status) {
            json_t *e = json_pack("{s:{s:s, s:s, s:i}}", "error", "message", j->err, "type",
                                  j->err_status == 503 ? "service_unavailable" : "server_error",
                                  "code", j->err_status);
            job_sse_obj(j, e);
        } else if (j->finish) {
            job_sse(j, json_object(), j->finish);
            if (j->include_usage) {
                json_t *o = chunk_head(j);
                if (o) {
                    json_object_set_new(o, "choices", json_array());
                    json_object_set_new(o, "usage",
                                        json_pack("{s:i, s:i, s:i}", "prompt_tokens", j->n_ids,
                                                  "completion_tokens", j->completion_tokens,
                                                  "total_tokens", j->n_ids + j->completion_tokens));
                }
                job_sse_obj(j, o);
            }
        }
        job_sse_raw(j, "[DONE]", 6);
    }
    pthread_mutex_lock(&j->mu);
    j->state = JOB_DONE;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void job_fail(srv_job *j, int status, const char *msg) {
    j->err_status = status;
    snprintf(j->err, sizeof j->err, "%s", msg);
    job_end(j);
}

/* ---- the queue ----------------------------------------------------------- */

/* The waiting jobs whose client left (cancel set, by an HTTP thread that
** saw the peer go) out of the queue, so that they hold no place in it
** (they held --queue places until the worker reached them: review, session
** 23). s->mu held; returns them linked by next, for release_gone after
** the unlock. */
static srv_job *unlink_gone(srv *s) {
    srv_job *gone = NULL, **p = &s->head;
    s->tail = NULL;
    while (*p) {
        srv_job *j = *p;
        if (__atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) {
            *p = j->next;
            s->queued--;
            s->met.cancelled++;
            j->next = gone;
            gone = j;
        } else {
            s->tail = j;
            p = &j->next;
        }
    }
    return gone;
}

/* Ends and drops the worker's reference to each job unlink_gone took. */
static void release_gone(srv_job *gone) {
    while (gone) {
        srv_job *next = gone->next;
        job_fail(gone, 503, "the client left before its turn");
        job_unref(gone);
        gone = next;
    }
}

int srv_submit(srv *s, srv_job *j) {
    pthread_mutex_lock(&s->mu);
    srv_job *gone = unlink_gone(s);
    /* The queue holds the jobs the worker has not taken yet. Those that free
    ** slots will take at its next turn are not waiting: a burst that arrives
    ** while the worker is inside a step is admitted up to the free slots plus
    ** --queue (it got 429 with slots free: CI, a loaded machine, session 22) */
    const int free_slots = s->parallel > s->nrunning ? s->parallel - s->nrunning : 0;
    int rc = s->stopping ? -2 : s->queued >= s->queue_cap + free_slots ? -1 : 0;
    if (rc == 0) {
        job_ref(j); /* the worker's */
        j->state = JOB_QUEUED;
        j->next = NULL;
        if (s->tail) s->tail->next = j;
        else s->head = j;
        s->tail = j;
        s->queued++;
        s->met.requests++;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    release_gone(gone);
    return rc;
}

/* ---- generation ---------------------------------------------------------- */

/* Sends text[*sent..upto) (streaming: one chunk). */
static int deliver(srv_job *j, size_t *sent, size_t upto) {
    if (upto <= *sent) return 0;
    int rc = 0;
    if (j->stream) {
        json_t *d = json_object();
        json_t *c = json_stringn(j->text.p + *sent, upto - *sent);
        if (!d || !c || json_object_set_new(d, "content", c)) rc = -1;
        else rc = job_sse(j, d, NULL), d = NULL;
        json_decref(d);
    }
    *sent = upto;
    return rc;
}

/* A stop string in the text from `from` on: its offset (the text is cut
** there), or SIZE_MAX with *safe the length that cannot start a match. */
static size_t find_stop(const srv_job *j, size_t from, size_t *safe) {
    const char *t = j->text.p;
    size_t n = j->text.n, best = SIZE_MAX, hold = 0;
    for (int k = 0; k < j->n_stop; k++) {
        const char *f = n > from ? memmem(t + from, n - from, j->stop[k], j->stop_len[k]) : NULL;
        if (f && (size_t)(f - t) < best) best = (size_t)(f - t);
    }
    if (best != SIZE_MAX) return best;
    for (int k = 0; k < j->n_stop; k++) {
        size_t L = j->stop_len[k] - 1 < n ? j->stop_len[k] - 1 : n;
        for (; L > hold; L--)
            if (!memcmp(t + n - L, j->stop[k], L)) {
                hold = L;
                break;
            }
    }
    *safe = n - hold;
    return SIZE_MAX;
}

/* New text of the answer: appended, checked for stop strings, delivered.
** 1: a stop string ended the answer. */
static int add_text(srv_job *j, const char *t, size_t n, size_t *sent, int final, int *oom) {
    size_t from = j->text.n;
    if (sbuf_add(&j->text, t, n)) return *oom = 1, 0;
    if (!j->n_stop) return deliver(j, sent, j->text.n) ? (*oom = 1, 0) : 0;
    size_t back = SRV_MAX_STOP_LEN, safe;
    from = from > back ? from - back : 0;
    size_t at = find_stop(j, from, &safe);
    if (at != SIZE_MAX) {
        j->text.n = at;
        j->text.p[at] = 0;
        if (deliver(j, sent, at)) *oom = 1;
        return 1;
    }
    if (deliver(j, sent, final ? j->text.n : safe)) *oom = 1;
    return 0;
}

/* ---- continuous batching --------------------------------------------------- */

/* A conversation slot of the model (its cache row) and the job in it. */
typedef struct slot {
    srv_job *j;                /* NULL: free */
    chat_stream *st;           /* the job's text stream */
    size_t sent;               /* text bytes delivered */
    int decoding;              /* 1: the prompt is in, it joins the steps */
    int32_t next;              /* the id the next step appends */
    int32_t *row;              /* [ctx]: the ids in its cache row (row[0..glm_seq_pos)), kept
                               ** after the job for the next one's common prefix */
    int nrow;                  /* while the prompt goes in: its ids prefilled so far */
    double t_decode;           /* when its decode began (after the prefill) */
} slot;

/* The job in sl is over: finish: "stop", "length", or NULL (cancelled);
** err_status: non-zero, it failed with that status and message. The slot is
** free again. */
static void slot_end(srv *s, slot *sl, const char *finish, int stopped, int oom, int err_status,
                     const char *err) {
    srv_job *j = sl->j;
    if (!err_status && !stopped && !oom && finish) {
        const char *t;
        size_t tn;
        int rc = chat_stream_finish(sl->st, &t, &tn);
        if (rc) oom = 1;
        else if (add_text(j, t, tn, &sl->sent, 1, &oom)) finish = "stop";
    }
    double t = srv_now();
    pthread_mutex_lock(&s->mu);
    s->met.generated_tokens += (uint64_t)j->completion_tokens;
    if (t > sl->t_decode && j->completion_tokens > 1)
        s->met.last_decode_tok_s = j->completion_tokens / (t - sl->t_decode);
    if (err_status == 499) { /* cancelled before it began */
        s->met.cancelled++;
        err_status = 503;
    } else if (err_status) {
    } else if (finish) {
        s->met.completions++;
    } else {
        s->met.cancelled++;
    }
    /* the slot counts as free before the client hears the answer ended: a
    ** client that sends its next request at once must find it free (it got
    ** 429 with --queue 0, one request at a time; review, session 23) */
    s->nrunning--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (err_status) job_fail(j, err_status, err);
    else if (oom) job_fail(j, 500, "out of host memory");
    else if (!finish && __atomic_load_n(&j->cancel, __ATOMIC_RELAXED) == 2)
        job_fail(j, 503, "the server is shutting down: the answer was cut");
    else {
        j->finish = finish;
        job_end(j);
    }
    if (s->test_end_delay_ms > 0) { /* tests: the worker slow after the client heard the end */
        struct timespec d = {0, (long)s->test_end_delay_ms * 1000000L};
        nanosleep(&d, NULL);
    }
    job_unref(j);
    sl->j = NULL;
}

/* The slot's logits are ready (after its prefill or a step): draw the next
** id, stream its text, and say whether the job goes on (1: sl->next is the
** id for the next step) or ended (0). */
static int slot_advance(srv *s, slot *sl, int seq) {
    srv_job *j = sl->j;
    glm_model *m = s->m;
    if (__atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) return slot_end(s, sl, NULL, 0, 0, 0, NULL), 0;
    if (j->completion_tokens >= j->max_tokens || glm_seq_pos(m, seq) >= s->ctx)
        return slot_end(s, sl, "length", 0, 0, 0, NULL), 0;
    int32_t id;
    if (glm_seq_sample(m, seq, &j->sampler, &id, NULL))
        return slot_end(s, sl, NULL, 0, 0, 500, glm_errmsg(m)), 0;
    if (id == M40_CHATGLM2_EOS || (s->glm3 && (id == CHATGLM3_USER || id == CHATGLM3_OBSERVATION)))
        return slot_end(s, sl, "stop", 0, 0, 0, NULL), 0;
    j->completion_tokens++;
    const char *t;
    size_t tn;
    int oom = 0;
    int rc = chat_stream_push(sl->st, id, &t, &tn);
    if (rc) oom = 1;
    else if (tn && add_text(j, t, tn, &sl->sent, 0, &oom)) return slot_end(s, sl, "stop", 1, oom, 0, NULL), 0;
    if (oom) return slot_end(s, sl, NULL, 0, 1, 0, NULL), 0;
    /* the last id needs no step: nothing is drawn after it */
    if (j->completion_tokens >= j->max_tokens || glm_seq_pos(m, seq) >= s->ctx)
        return slot_end(s, sl, "length", 0, 0, 0, NULL), 0;
    sl->next = id;
    return 1;
}

static int common_prefix(const slot *sl, const srv_job *j) {
    int n = sl->nrow < j->n_ids ? sl->nrow : j->n_ids, k = 0;
    while (k < n && sl->row[k] == j->ids[k]) k++;
    return k;
}

/* A job from the queue into a free slot (its cache row from the prefix it
** shares with the slot's last conversation). */
static void slot_start(srv *s, slot *sl, int seq, srv_job *j) {
    sl->j = j;
    sl->sent = 0;
    sl->decoding = 0;
    if (__atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) { /* left while it waited */
        slot_end(s, sl, NULL, 0, 0, 499, "cancelled");
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->state = JOB_RUNNING;
    pthread_mutex_unlock(&j->mu);
    /* the prompt's prefix that the row holds already is not prefilled again
    ** (at least the last id is: its logits draw the first answer id) */
    int keep = j->cache_prompt ? common_prefix(sl, j) : 0;
    if (keep >= j->n_ids) keep = j->n_ids - 1;
    if (glm_seq_rewind(s->m, seq, keep) || glm_seq_set_history(s->m, seq, j->ids, keep)) {
        sl->nrow = 0;
        slot_end(s, sl, NULL, 0, 0, 500, glm_errmsg(s->m));
        return;
    }
    sl->nrow = keep;
    pthread_mutex_lock(&s->mu);
    s->met.prompt_tokens += (uint64_t)keep;
    s->met.cached_tokens += (uint64_t)keep;
    pthread_mutex_unlock(&s->mu);
}

/* One chunk of the slot's prompt into its cache row: a long prompt holds
** the running jobs' steps up for one chunk at a time, not for all of it.
** After the last chunk the first id is drawn and the job joins the steps. */
static void slot_feed(srv *s, slot *sl, int seq) {
    srv_job *j = sl->j;
    glm_model *m = s->m;
    if (__atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) {
        slot_end(s, sl, NULL, 0, 0, 0, NULL);
        return;
    }
    int k = j->n_ids - sl->nrow < glm_chunk(m) ? j->n_ids - sl->nrow : glm_chunk(m);
    double t0 = srv_now();
    if (glm_seq_prefill(m, seq, j->ids + sl->nrow, k, NULL, NULL)) {
        sl->nrow = 0; /* what the row holds is not known now */
        slot_end(s, sl, NULL, 0, 0, 500, glm_errmsg(m));
        return;
    }
    memcpy(sl->row + sl->nrow, j->ids + sl->nrow, (size_t)k * sizeof *sl->row);
    sl->nrow += k;
    double t1 = srv_now();
    pthread_mutex_lock(&s->mu);
    s->met.prefill_s += t1 - t0;
    s->met.prompt_tokens += (uint64_t)k;
    pthread_mutex_unlock(&s->mu);
    if (sl->nrow < j->n_ids) return;
    sl->decoding = 1;
    sl->t_decode = t1;
    chat_stream_begin(sl->st);
    slot_advance(s, sl, seq); /* now: the next prefill makes these logits stale */
}

static void note_kv(srv *s, const slot *sl) {
    int used = 0;
    for (int i = 0; i < s->parallel; i++)
        if (sl[i].j) used += glm_seq_pos(s->m, i);
    pthread_mutex_lock(&s->mu);
    s->kv_used = used;
    pthread_mutex_unlock(&s->mu);
}

/* The model thread's loop: fill free slots from the queue, one prefill
** chunk for each job whose prompt is not in yet, then one decode step of
** every decoding job at once (one graph run: glm_step_batch), each drawing
** its next id. A job that ends frees its slot for the next in the queue at
** once. */
static void serve(srv *s, slot *sl) {
    const int P = s->parallel;
    int seqs[GLM_MAX_PARALLEL];
    int32_t ids[GLM_MAX_PARALLEL];
    for (;;) {
        int active = 0;
        for (int i = 0; i < P; i++) active += sl[i].j != NULL;
        pthread_mutex_lock(&s->mu);
        while (!active && !s->head && !s->worker_exit) pthread_cond_wait(&s->cv, &s->mu);
        if (!active && !s->head) { /* worker_exit, nothing left */
            pthread_mutex_unlock(&s->mu);
            return;
        }
        /* each waiting job, in order, into the free slot whose row holds the
        ** longest prefix of its prompt (a conversation's next turn finds its
        ** last turn); between equals, the slot with the least to lose */
        int take[GLM_MAX_PARALLEL], nt = 0;
        while (s->head) {
            srv_job *j = s->head;
            int best = -1, bestk = -1;
            for (int i = 0; i < P; i++) {
                if (sl[i].j) continue;
                int k = j->cache_prompt ? common_prefix(&sl[i], j) : 0;
                if (k > bestk || (k == bestk && sl[i].nrow < sl[best].nrow)) best = i, bestk = k;
            }
            if (best < 0) break;
            s->head = j->next;
            if (!s->head) s->tail = NULL;
            s->queued--;
            s->nrunning++;
            sl[best].j = j; /* reserved; slot_start fills it */
            take[nt++] = best;
        }
        int cut = s->cancel_all; /* shutdown's bound passed */
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; cut && i < P; i++)
            if (sl[i].j) job_cancel(sl[i].j, 2);
        for (int k = 0; k < nt; k++) slot_start(s, &sl[take[k]], take[k], sl[take[k]].j);
        for (int i = 0; i < P; i++)
            if (sl[i].j && !sl[i].decoding) slot_feed(s, &sl[i], i);
        int n = 0;
        for (int i = 0; i < P; i++)
            if (sl[i].j && sl[i].decoding) {
                seqs[n] = i;
                ids[n++] = sl[i].next;
            }
        if (!n) {
            note_kv(s, sl);
            continue;
        }
        double t0 = srv_now();
        if (glm_step_batch(s->m, n, seqs, ids)) {
            char err[512];
            snprintf(err, sizeof err, "%s", glm_errmsg(s->m));
            for (int i = 0; i < n; i++) {
                sl[seqs[i]].nrow = 0;
                slot_end(s, &sl[seqs[i]], NULL, 0, 0, 500, err);
            }
        } else {
            for (int i = 0; i < n; i++) {
                slot *q = &sl[seqs[i]];
                q->row[q->nrow++] = ids[i]; /* appended by the step */
                slot_advance(s, q, seqs[i]);
            }
        }
        double t1 = srv_now();
        pthread_mutex_lock(&s->mu);
        s->met.decode_s += t1 - t0;
        s->met.steps++;
        s->met.step_rows += (uint64_t)n;
        pthread_mutex_unlock(&s->mu);
        note_kv(s, sl);
    }
}

/* The model thread: opens the model (so the GPU context is made, used and
** freed on this thread only), says so through s->ready, then serves. */
static void *worker_main(void *arg) {
    srv *s = arg;
    glm_model *m = NULL;
    glm_open_opts o = *s->open;
    o.parallel = s->parallel;
    slot *sl = calloc((size_t)s->parallel, sizeof *sl);
    int ok = sl != NULL;
    if (!ok) snprintf(s->init_err, sizeof s->init_err, "out of host memory");
    for (int i = 0; ok && i < s->parallel; i++)
        if (!s->tok_worker || chat_stream_create(s->tok_worker, s->glm3, &sl[i].st)) {
            snprintf(s->init_err, sizeof s->init_err, "out of host memory");
            ok = 0;
        }
    ok = ok && glm_model_open(&o, &m, s->init_err, sizeof s->init_err) == 0;
    for (int i = 0; ok && i < s->parallel; i++)
        if (!(sl[i].row = malloc((size_t)glm_ctx_len(m) * sizeof *sl[i].row))) {
            snprintf(s->init_err, sizeof s->init_err, "out of host memory");
            ok = 0;
        }
    if (ok) {
        m40_plan_info p, d;
        glm_plans(m, &p, &d);
        s->kv_bytes = p.region_bytes[M40_REGION_KV];
        s->m = m;
        s->ctx = glm_ctx_len(m);
    }
    pthread_mutex_lock(&s->mu);
    s->ready = ok ? 1 : -1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (ok) serve(s, sl);
    for (int i = 0; sl && i < s->parallel; i++) {
        chat_stream_destroy(sl[i].st);
        free(sl[i].row);
    }
    free(sl);
    glm_model_close(m);
    s->m = NULL;
    return NULL;
}

void srv_prepare(srv *s) {
    s->inited = 1;
    const char *d = getenv("M40_SERVER_TEST_END_DELAY_MS"); /* test_server.py, t_one_at_a_time */
    s->test_end_delay_ms = d ? atoi(d) : 0;
    if (s->test_end_delay_ms > 999) s->test_end_delay_ms = 999;
    pthread_mutex_init(&s->tok_mu, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

int srv_init(srv *s, const glm_open_opts *open, char *err, size_t errlen) {
    s->open = open;
    if (s->parallel < 1) s->parallel = 1;
    int e = pthread_create(&s->worker, NULL, worker_main, s);
    if (e) {
        snprintf(err, errlen, "cannot start the model thread: %s", strerror(e));
        return -1;
    }
    s->worker_started = 1;
    pthread_mutex_lock(&s->mu);
    while (!s->ready) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (s->ready < 0) {
        snprintf(err, errlen, "%s", s->init_err);
        return -1;
    }
    return 0;
}

void srv_shutdown(srv *s) {
    if (!s->inited) return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    srv_job *q = s->head;
    s->head = s->tail = NULL;
    s->queued = 0;
    pthread_mutex_unlock(&s->mu);
    while (q) { /* the waiting jobs: 503 */
        srv_job *next = q->next;
        job_fail(q, 503, "the server is shutting down");
        job_unref(q);
        q = next;
    }
    struct timespec dl = srv_deadline(s->shutdown_s);
    pthread_mutex_lock(&s->mu);
    s->worker_exit = 1; /* the worker ends once the running jobs do */
    pthread_cond_broadcast(&s->cv);
    while (s->nrunning && pthread_cond_timedwait(&s->cv, &s->mu, &dl) != ETIMEDOUT) {
    }
    s->cancel_all = s->nrunning > 0;
    pthread_cond_broadcast(&s->cv);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->worker_started) pthread_join(s->worker, NULL);
    s->worker_started = 0;
}

struct timespec srv_deadline(double seconds) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    double end = (double)dl.tv_sec + 1e-9 * (double)dl.tv_nsec + seconds;
    dl.tv_sec = (time_t)end;
    dl.tv_nsec = (long)((end - (double)dl.tv_sec) * 1e9);
    return dl;
}

void srv_drain(srv *s, double seconds) {
    if (!s->inited) return;
    struct timespec dl = srv_deadline(seconds);
    pthread_mutex_lock(&s->mu);
    while (s->streams > 0 && pthread_cond_timedwait(&s->cv, &s->mu, &dl) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&s->mu);
}

void srv_destroy(srv *s) {
    if (!s->inited) return;
    pthread_mutex_destroy(&s->tok_mu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
}

/* ---- metrics --------------------------------------------------------------- */

static const unsigned STATUSES[] = {200, 400, 401, 404, 405, 413, 429, 500, 503, 0};
#define N_STATUSES (sizeof STATUSES / sizeof *STATUSES)

void srv_count_status(srv *s, unsigned status) {
    size_t i = 0;
    while (STATUSES[i] && STATUSES[i] != status) i++;
    pthread_mutex_lock(&s->mu);
    s->status_count[i]++;
    pthread_mutex_unlock(&s->mu);
}

static int addf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int addf(sbuf *b, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return n < 0 ? -1 : sbuf_add(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* One metric: its HELP and TYPE lines, then one sample line (name + fmt). */
static int metric(sbuf *b, const char *name, const char *type, const char *help, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));
static int metric(sbuf *b, const char *name, const char *type, const char *help, const char *fmt,
                  ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) return -1;
    return addf(b, "# HELP %s %s\n# TYPE %s %s\n%s%s\n", name, help, name, type, name, line);
}

int srv_metrics_text(srv *s, sbuf *b) {
    pthread_mutex_lock(&s->mu);
    srv_job *gone = unlink_gone(s);
    srv_metrics m = s->met;
    uint64_t sc[N_STATUSES];
    memcpy(sc, s->status_count, sizeof sc);
    int queued = s->queued, running = s->nrunning, kv = s->kv_used;
    pthread_mutex_unlock(&s->mu);
    release_gone(gone);
    typedef unsigned long long ull;
    int rc = addf(b, "# HELP m40_http_responses_total HTTP responses by status code.\n"
                     "# TYPE m40_http_responses_total counter\n");
    for (size_t i = 0; i < N_STATUSES; i++)
        if (STATUSES[i]) rc |= addf(b, "m40_http_responses_total{code=\"%u\"} %llu\n", STATUSES[i],
                                    (ull)sc[i]);
        else rc |= addf(b, "m40_http_responses_total{code=\"other\"} %llu\n", (ull)sc[i]);
    rc |= metric(b, "m40_requests_total", "counter", "Chat completions admitted to the queue.",
                 " %llu", (ull)m.requests);
    rc |= metric(b, "m40_requests_finished_total", "counter", "Chat completions answered to the end.",
                 " %llu", (ull)m.completions);
    rc |= metric(b, "m40_requests_cancelled_total", "counter",
                 "Chat completions stopped early (client gone, shutdown).", " %llu", (ull)m.cancelled);
    rc |= metric(b, "m40_prompt_tokens_total", "counter", "Prompt tokens (prefilled or cached).",
                 " %llu", (ull)m.prompt_tokens);
    rc |= metric(b, "m40_prompt_tokens_cached_total", "counter",
                 "Prompt tokens a slot's cache held already (a conversation's earlier turns): not "
                 "prefilled again.", " %llu", (ull)m.cached_tokens);
    rc |= metric(b, "m40_tokens_generated_total", "counter", "Tokens generated.", " %llu",
                 (ull)m.generated_tokens);
    rc |= metric(b, "m40_prefill_seconds_total", "counter", "Time in prefill.", " %.6f", m.prefill_s);
    rc |= metric(b, "m40_decode_seconds_total", "counter", "Time in decode steps.", " %.6f",
                 m.decode_s);
    rc |= addf(b, "# HELP m40_decode_tokens_per_second Decode rate: all requests, and the last.\n"
                  "# TYPE m40_decode_tokens_per_second gauge\n"
                  "m40_decode_tokens_per_second{scope=\"all\"} %.3f\n"
                  "m40_decode_tokens_per_second{scope=\"last\"} %.3f\n",
               m.decode_s > 0 ? (double)m.generated_tokens / m.decode_s : 0.0, m.last_decode_tok_s);
    rc |= metric(b, "m40_decode_steps_total", "counter",
                 "Decode steps (one graph run each, all running requests batched).", " %llu",
                 (ull)m.steps);
    rc |= metric(b, "m40_decode_step_requests_total", "counter",
                 "Requests in those steps (over steps: the mean batch).", " %llu", (ull)m.step_rows);
    rc |= metric(b, "m40_queue_length", "gauge", "Requests waiting for the model.", " %d", queued);
    rc |= metric(b, "m40_queue_capacity", "gauge", "Requests that may wait (--queue).", " %d",
                 s->queue_cap);
    rc |= metric(b, "m40_requests_running", "gauge", "Requests being answered.", " %d", running);
    rc |= metric(b, "m40_requests_parallel", "gauge",
                 "Requests answered at once at most (--parallel).", " %d", s->parallel);
    rc |= metric(b, "m40_kv_cache_tokens_used", "gauge", "Tokens held in the KV cache, all slots.",
                 " %d", kv);
    rc |= metric(b, "m40_kv_cache_tokens", "gauge", "Tokens the KV cache holds (--ctx x --parallel).",
                 " %lld", (long long)s->ctx * s->parallel);
    rc |= metric(b, "m40_kv_cache_bytes", "gauge", "Bytes of the KV cache (allocated at start-up).",
                 " %llu", (ull)s->kv_bytes);
    return rc ? -1 : 0;
}
