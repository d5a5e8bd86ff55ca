/* m40-bench's harness (see harness.h): timing with CUDA events or the host
** clock, NVML telemetry per result, and the text report. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

m40_location side_of(const bench_env *e) {
    return e->info.is_gpu ? M40_LOC_DEVICE : M40_LOC_HOST;
}

/* ---- measuring ------------------------------------------------------------- */


/* The repeats of `run` (after the warm-ups of `op`), each timed, divided by
** `per`: the calls one run makes. */
static int measure_runs(bench_env *e, op_fn op, op_fn run, void *arg, int per,
                        m40__bench_result *r) {
    int n = e->o->repeats;
    double *t = calloc((size_t)n, sizeof *t);
    m40__evtimer tm;
    int rc = 1;
    if (!t || m40__evtimer_create(e->ctx, &tm) != M40_OK) {
        fprintf(stderr, "m40-bench: timer: %s\n", m40_errmsg(e->ctx));
        free(t);
        return 1;
    }
    for (int i = 0; i < e->o->warmup; i++)
        if (op(e, arg) != M40_OK) goto fail;
    if (m40_ctx_sync(e->ctx) != M40_OK) goto fail;
    if (run != op) /* the captured graph's own warm-up */
        for (int i = 0; i < 2; i++)
            if (run(e, arg) != M40_OK) goto fail;
    int mark = m40b_sampler_mark(e->smp);
    for (int i = 0; i < n; i++) {
        if (m40__evtimer_start(&tm) != M40_OK || run(e, arg) != M40_OK ||
            m40__evtimer_stop(&tm) != M40_OK || m40__evtimer_ms(&tm, &t[i]) != M40_OK)
            goto fail;
        t[i] /= per;
    }
    if (e->smp) {
        m40b_sampler_window(e->smp, mark, &r->tele);
        r->has_tele = true;
    }
    m40__stats_compute(t, n, &r->t_ms);
    r->is_m40 = e->is_m40;
    m40__bench_finish(r);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "m40-bench: %s %s %s: %s\n", r->workload, r->impl, r->label,
            m40_errmsg(e->ctx));
done:
    m40__evtimer_destroy(&tm);
    free(t);
    return rc;
}

int measure(bench_env *e, op_fn op, void *arg, m40__bench_result *r) {
    return measure_runs(e, op, op, arg, 1, r);
}

/* measure_graph: the op's calls captured into one CUDA graph */
typedef struct graph_arg {
    bench_env *e;
    op_fn op;
    void *arg;
    m40__read_chain *g;
} graph_arg;
static m40_status graph_call(void *p) {
    graph_arg *c = p;
    return c->op(c->e, c->arg);
}
static m40_status graph_run(bench_env *e, void *p) {
    return m40__bench_read_chain_run(e->ctx, ((graph_arg *)p)->g);
}
static m40_status graph_warm(bench_env *e, void *p) {
    graph_arg *c = p;
    return c->op(e, c->arg);
}

int measure_graph(bench_env *e, op_fn op, void *arg, m40__bench_result *r) {
    const int calls = e->o->graph_calls;
    graph_arg c = {e, op, arg, NULL};
    if (calls < 1 || !e->info.is_gpu) return 1;
    /* warm-ups first: a lazily made workspace is allocated outside the capture */
    for (int i = 0; i < (e->o->warmup > 0 ? e->o->warmup : 1); i++)
        if (op(e, arg) != M40_OK || m40_ctx_sync(e->ctx) != M40_OK) goto fail;
    if (m40__bench_capture_new(e->ctx, graph_call, &c, calls, &c.g) != M40_OK) goto fail;
    snprintf(r->impl + strlen(r->impl), sizeof r->impl - strlen(r->impl), " [graph x%d]", calls);
    int rc = measure_runs(e, graph_warm, graph_run, &c, calls, r);
    m40__bench_read_chain_free(c.g);
    return rc;
fail:
    fprintf(stderr, "m40-bench: %s %s %s in a graph: %s\n", r->workload, r->impl, r->label,
            m40_errmsg(e->ctx));
    return 1;
}

void print_result(const m40__bench_result *r) {
    char formula[160], reasons[160];
    m40__bench_m40_floor(r, formula, sizeof formula);
    printf("%-5s %-16s %-22s %10.1f %-7s median %8.4f ms (min %.4f max %.4f IQR %.4f, n=%d)",
           r->workload, r->label, r->impl, r->value, r->unit, r->t_ms.median, r->t_ms.min,
           r->t_ms.max, r->t_ms.iqr, r->t_ms.n);
    if (r->baseline[0] && r->baseline_value > 0)
        printf("  %.3fx %s", r->value / r->baseline_value, r->baseline);
    else
        printf("  (baseline)");
    if (r->max_rel_err >= 0) printf("  max_rel_err %.2g", r->max_rel_err);
    printf("\n");
    double lim = strcmp(r->unit, "GFLOP/s") == 0 ? M40__M40_GFLOPS : M40__M40_GBS;
    printf("      M40: %.1f%% of %.0f %s%s; M40 floor %s", 100.0 * r->value / lim, lim, r->unit,
           r->is_m40 ? "" : " (not measured on an M40)", formula);
    if (r->has_tele) {
        const m40__tele_summary *s = &r->tele;
        m40__throttle_names(s->reasons, reasons, sizeof reasons);
        printf("\n      card: SM %u-%u MHz, mem %u MHz, %u C max", s->sm_min, s->sm_max,
               s->mem_max, s->temp_max);
        if (s->power_max >= 0) printf(", %.0f W max", s->power_max);
        printf(", %d samples, reasons %s%s", s->n, reasons,
               s->throttled ? "  ** THROTTLED: figure below what the card can do **" : "");
    }
    printf("\n");
}

m40__bench_result *new_result(bench_env *e, const char *workload, const char *impl,
                                     const char *label, const char *unit) {
    /* one allocation that never moves: callers hold a baseline's result
    ** while they make the next one (was a realloc that could leave them
    ** pointing at freed memory) */
    if (!e->res) {
        e->res = calloc(M40B_MAX_RESULTS, sizeof *e->res);
        if (!e->res) return NULL;
        e->cap = M40B_MAX_RESULTS;
    }
    if (e->nres == e->cap) return NULL;
    m40__bench_result *r = &e->res[e->nres++];
    memset(r, 0, sizeof *r);
    snprintf(r->workload, sizeof r->workload, "%s", workload);
    snprintf(r->impl, sizeof r->impl, "%s", impl);
    snprintf(r->label, sizeof r->label, "%s", label);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    r->max_rel_err = -1;
    return r;
}

/* One size in 1..SIZE_LIMIT; every workload takes its sizes as op
** dimensions (int M, N, K) or MiB counts, so 2^31 - 1 bounds them all and
** keeps products of two of them inside int64. */
#define SIZE_LIMIT 2147483647LL
static int parse_one(const char *p, char **end, int64_t *v) {
    errno = 0;
    long long x = strtoll(p, end, 10);
    if (*end == p || errno == ERANGE || x < 1 || x > SIZE_LIMIT) return 0;
    *v = x;
    return 1;
}

int parse_sizes(const char *list, int64_t dims[][3], int max) {
    int n = 0;
    const char *p = list;
    while (p && *p && n < max) {
        char *end;
        int64_t a, b, c;
        if (!parse_one(p, &end, &a)) return -1;
        b = c = a;
        if (*end == 'x') {
            p = end + 1;
            if (!parse_one(p, &end, &b) || *end != 'x') return -1;
            p = end + 1;
            if (!parse_one(p, &end, &c)) return -1;
        }
        dims[n][0] = a;
        dims[n][1] = b;
        dims[n][2] = c;
        n++;
        if (*end == ',') end++;
        else if (*end) return -1;
        p = end;
    }
    return n;
}

double rel_err(bench_env *e, m40_tensor *got, m40_tensor *ref) {
    size_t nb = m40_tensor_get_nbytes(ref);
    float *g = malloc(nb), *r = malloc(nb);
    double d = -1, m = 0;
    if (g && r && m40_tensor_download(e->ctx, got, g, nb) == M40_OK &&
        m40_tensor_download(e->ctx, ref, r, nb) == M40_OK) {
        d = 0;
        for (size_t i = 0; i < nb / sizeof(float); i++) {
            double x = fabs((double)g[i] - r[i]);
            if (!(x <= d)) d = x;
            if (fabs(r[i]) > m) m = fabs(r[i]);
        }
        d = m > 0 ? d / m : d;
    }
    free(g);
    free(r);
    return d;
}

m40_status upload_random(bench_env *e, m40_tensor *t, uint64_t seed) {
    size_t n = m40_tensor_get_nbytes(t);
    unsigned char *b = malloc(n ? n : 1);
    if (!b) return M40_ERR_OOM_HOST;
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        b[i] = (unsigned char)seed;
    }
    m40_status st = m40_tensor_upload(e->ctx, t, b, n);
    free(b);
    return st;
}
