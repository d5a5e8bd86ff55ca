/* The sampler tests' oracle (test_sample.c, test_sample_gpu.c): the exact
** distribution m40_sample draws from, written independently of lib/ref
** (plain loops, no shared code), and a chi-square test of observed draws
** against it. */
#ifndef M40_TESTS_SAMPLE_COMMON_H
#define M40_TESTS_SAMPLE_COMMON_H

#include "check.h"
#include "m40/transformer.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

typedef struct st_zi {
    float z;
    int id;
} st_zi;

static int st_cmp(const void *a, const void *b) {
    const st_zi *p = a, *q = b;
    if (p->z != q->z) return p->z > q->z ? -1 : 1;
    return p->id - q->id;
}

/* q[V]: the probability of each id under d (penalty, temperature, top-k,
** top-p, min-p, renormalized); greedy: 1 at the argmax. Returns the kept
** count. Logits must be finite here. */
static int st_dist(const m40_sampler_desc *d, int V, const float *logits, const int *hist, int W,
                   double *q) {
    float *x = malloc((size_t)V * sizeof *x);
    st_zi *o = malloc((size_t)V * sizeof *o);
    if (!x || !o) abort();
    for (int i = 0; i < V; i++) x[i] = logits[i];
    for (int j = 0; hist && j < W; j++)
        if (hist[j] >= 0) {
            float l = logits[hist[j]], p = d->repetition_penalty;
            x[hist[j]] = l > 0 ? l / p : l * p;
        }
    float T = d->temperature > 0 ? d->temperature : 1.0f;
    for (int i = 0; i < V; i++) {
        o[i].z = d->temperature > 0 ? x[i] / T : x[i];
        o[i].id = i;
        q[i] = 0;
    }
    qsort(o, (size_t)V, sizeof *o, st_cmp);
    int L = V;
    if (d->temperature <= 0) L = 1;
    if (d->top_k > 0 && d->top_k < L) L = d->top_k;
    double M = o[0].z, sk = 0, c = 0;
    for (int n = 0; n < L; n++) sk += exp(o[n].z - M);
    if (d->top_p < 1 && d->temperature > 0)
        for (int n = 0; n < L; n++) {
            c += exp(o[n].z - M);
            if (c >= d->top_p * sk) {
                L = n + 1;
                break;
            }
        }
    if (d->min_p > 0 && d->temperature > 0) {
        int n = 1;
        while (n < L && exp(o[n].z - M) >= d->min_p) n++;
        L = n;
    }
    double t = 0;
    for (int n = 0; n < L; n++) t += exp(o[n].z - M);
    for (int n = 0; n < L; n++) q[o[n].id] = exp(o[n].z - M) / t;
    free(x);
    free(o);
    return L;
}

/* Pearson's chi-square of counts[V] (N draws) against q: ids in order of q
** (desc) grouped so that each group expects >= max(5, N/40) draws; draws
** of an id with q = 0 make it infinite. *df: groups - 1. */
static double st_chi2(int V, const double *q, const long *counts, long N, int *df) {
    st_zi *o = malloc((size_t)V * sizeof *o);
    if (!o) abort();
    for (int i = 0; i < V; i++) {
        o[i].z = (float)q[i];
        o[i].id = i;
    }
    qsort(o, (size_t)V, sizeof *o, st_cmp);
    double chi = 0, want = N / 40.0 > 5 ? N / 40.0 : 5;
    double *ge = calloc((size_t)V + 1, sizeof *ge), *go = calloc((size_t)V + 1, sizeof *go);
    if (!ge || !go) abort();
    int groups = 0;
    for (int n = 0; n < V; n++) {
        int i = o[n].id;
        if (q[i] <= 0) {
            if (counts[i]) chi = INFINITY;
            continue;
        }
        if (groups == 0 || ge[groups - 1] >= want) groups++;
        ge[groups - 1] += q[i] * (double)N;
        go[groups - 1] += (double)counts[i];
    }
    if (groups > 1 && ge[groups - 1] < want) { /* a small remainder joins the group before */
        ge[groups - 2] += ge[groups - 1];
        go[groups - 2] += go[groups - 1];
        groups--;
    }
    for (int g = 0; g < groups; g++) chi += (go[g] - ge[g]) * (go[g] - ge[g]) / ge[g];
    free(ge);
    free(go);
    free(o);
    *df = groups > 1 ? groups - 1 : 1;
    return chi;
}

/* The chi-square critical value at p = 0.001 (Wilson-Hilferty). */
static double st_chi2_crit(int df) {
    double k = df, a = 2.0 / (9.0 * k), z = 3.0902;
    double v = 1.0 - a + z * sqrt(a);
    return k * v * v * v;
}

/* An allocated graph of one SAMPLE node (sampler d) over the inputs logits
** [B,V], history [B,W] and pos [B]; t[0..3] get the logits, history, pos
** and output tensors. With `bad`, a node with that sampler is tried first
** and must be refused. NULL when a step failed (CHECKed). */
static m40_graph *st_graph(m40_ctx *ctx, int B, int V, int W, const m40_sampler_desc *d,
                           const m40_sampler_desc *bad, m40_tensor *t[4]) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(ctx, &g), M40_OK);
    if (!g) return NULL;
    m40_tensor_desc dl, dh, dp;
    int64_t sl[2] = {B, V}, sh[2] = {B, W}, sp[1] = {B};
    m40_tensor_desc_make(&dl, M40_DTYPE_F32, 2, sl);
    m40_tensor_desc_make(&dh, M40_DTYPE_I32, 2, sh);
    m40_tensor_desc_make(&dp, M40_DTYPE_I32, 1, sp);
    int id[4] = {-1, -1, -1, -1};
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "logits", &dl, &id[0]), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "history", &dh, &id[1]), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "pos", &dp, &id[2]), M40_OK);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SAMPLE);
    nd.name = "sample";
    nd.ninputs = 3;
    nd.inputs[0] = id[0], nd.inputs[1] = id[1], nd.inputs[2] = id[2];
    if (bad) {
        nd.sampler = *bad;
        CHECK_ST(m40_graph_node(g, &nd, NULL), M40_ERR_INVALID_ARG);
    }
    nd.sampler = *d;
    CHECK_ST(m40_graph_node(g, &nd, &id[3]), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, id[3]), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        t[i] = NULL;
        CHECK_ST(m40_graph_get_tensor(g, id[i], &t[i]), M40_OK);
        ok &= t[i] != NULL;
    }
    if (!ok) {
        m40_graph_destroy(g);
        return NULL;
    }
    return g;
}

#endif
