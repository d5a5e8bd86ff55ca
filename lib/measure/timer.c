/* Timers: CUDA events on a GPU context (events_cuda.c), the host clock
** around a synchronize on a CPU context. */
#define _POSIX_C_SOURCE 200809L
#include "measure.h"
#include "../internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef M40_HAVE_CUDA
/* events_cuda.c */
m40_status m40__event_create(m40_ctx *ctx, void **ev);
m40_status m40__event_record(m40_ctx *ctx, void *ev);
m40_status m40__event_ms(m40_ctx *ctx, void *ev0, void *ev1, double *ms);
void m40__event_destroy(void *ev);
#endif

double m40__now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

m40_status m40__evtimer_create(m40_ctx *ctx, m40__evtimer *t) {
    if (!t) return M40_ERR_INVALID_ARG;
    memset(t, 0, sizeof *t);
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    t->ctx = ctx;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        if ((st = m40__event_create(ctx, &t->ev0)) != M40_OK) return st;
        if ((st = m40__event_create(ctx, &t->ev1)) != M40_OK) {
            m40__event_destroy(t->ev0);
            t->ev0 = NULL;
            return st;
        }
    }
#endif
    return M40_OK;
}

/* One timestamp: a CUDA event when the timer has one, else the host clock
** after a synchronize. */
static m40_status mark(m40__evtimer *t, void *ev, double *host) {
#ifdef M40_HAVE_CUDA
    if (ev) return m40__event_record(t->ctx, ev);
#else
    (void)ev;
#endif
    m40_status st = m40_ctx_sync(t->ctx);
    *host = m40__now_s();
    return st;
}

m40_status m40__evtimer_start(m40__evtimer *t) { return mark(t, t->ev0, &t->h0); }

m40_status m40__evtimer_stop(m40__evtimer *t) { return mark(t, t->ev1, &t->h1); }

m40_status m40__evtimer_ms(m40__evtimer *t, double *ms) {
#ifdef M40_HAVE_CUDA
    if (t->ev0 && t->ev1) return m40__event_ms(t->ctx, t->ev0, t->ev1, ms);
#endif
    *ms = (t->h1 - t->h0) * 1e3;
    return M40_OK;
}

void m40__evtimer_destroy(m40__evtimer *t) {
    if (!t) return;
#ifdef M40_HAVE_CUDA
    m40__event_destroy(t->ev0);
    m40__event_destroy(t->ev1);
#endif
    memset(t, 0, sizeof *t);
}

void m40__uuid_str(const unsigned char u[16], char *out, size_t n) {
    snprintf(out, n,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}
