/* The sampler thread (pthread). Samples go into a growing array under a
** mutex; a window is summarized by lib/bench/telemetry.c. */
#define _POSIX_C_SOURCE 200809L
#include "sampler.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct m40b_sampler {
    m40__nvml nvml;
    m40__nvml_dev dev;
    char driver[96];
    pthread_t thread;
    pthread_mutex_t mu;
    int stop;
    int period_ms;
    m40__tele_sample *s;
    int n, cap;
};

static void push(m40b_sampler *s, const m40__tele_sample *x) {
    pthread_mutex_lock(&s->mu);
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 1024;
        m40__tele_sample *p = realloc(s->s, (size_t)cap * sizeof *p);
        if (p) {
            s->s = p;
            s->cap = cap;
        }
    }
    if (s->n < s->cap) s->s[s->n++] = *x;
    pthread_mutex_unlock(&s->mu);
}

static void *loop(void *arg) {
    m40b_sampler *s = arg;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)s->period_ms * 1000000L};
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
        m40__tele_sample x;
        if (m40__tele_read(&s->nvml, s->dev, &x) == 0) push(s, &x);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

m40b_sampler *m40b_sampler_start(const char *uuid, int fallback_index, int period_ms,
                                 char *why, size_t n) {
    m40b_sampler *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    if (m40__nvml_open(&s->nvml, why, n) != 0) {
        free(s);
        return NULL;
    }
    unsigned cnt = 0;
    s->nvml.device_count(&cnt);
    for (unsigned i = 0; uuid && s->nvml.uuid && i < cnt && !s->dev; i++) {
        m40__nvml_dev d;
        char u[96];
        if (s->nvml.device_by_index(i, &d) == 0 && s->nvml.uuid(d, u, sizeof u) == 0 &&
            strcmp(u, uuid) == 0)
            s->dev = d;
    }
    if (!s->dev && (fallback_index < 0 || (unsigned)fallback_index >= cnt ||
                    s->nvml.device_by_index((unsigned)fallback_index, &s->dev) != 0)) {
        snprintf(why, n, "NVML lists no matching device");
        m40__nvml_close(&s->nvml);
        free(s);
        return NULL;
    }
    if (s->nvml.driver_version) s->nvml.driver_version(s->driver, sizeof s->driver);
    s->period_ms = period_ms > 0 ? period_ms : 10;
    pthread_mutex_init(&s->mu, NULL);
    if (pthread_create(&s->thread, NULL, loop, s) != 0) {
        snprintf(why, n, "pthread_create failed");
        pthread_mutex_destroy(&s->mu);
        m40__nvml_close(&s->nvml);
        free(s);
        return NULL;
    }
    return s;
}

const char *m40b_sampler_driver(const m40b_sampler *s) { return s ? s->driver : ""; }

int m40b_sampler_mark(m40b_sampler *s) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    int n = s->n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void m40b_sampler_window(m40b_sampler *s, int mark, m40__tele_summary *out) {
    memset(out, 0, sizeof *out);
    if (!s) return;
    m40__tele_sample x;
    if (m40__tele_read(&s->nvml, s->dev, &x) == 0) push(s, &x);
    pthread_mutex_lock(&s->mu);
    if (mark < 0 || mark > s->n) mark = 0;
    m40__tele_summarize(s->s + mark, s->n - mark, out);
    pthread_mutex_unlock(&s->mu);
}

void m40b_sampler_stop(m40b_sampler *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    m40__nvml_close(&s->nvml);
    free(s->s);
    free(s);
}
