/* m40_sample on the CPU (lib/ref/sample.c through lib/ops/sample.c): greedy
** with ties, the repetition penalty, seeds and positions, the filters'
** distributions by chi-square against an independent oracle
** (sample_common.h), bad inputs, and the SAMPLE graph node. */
#include "check.h"
#include "sample_common.h"

#include "m40/graph.h"
#include "m40/transformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *ctx;

static m40_tensor *t_new(m40_dtype dt, int nd, int64_t a, int64_t b) {
    int64_t s[2] = {a, b};
    m40_tensor *t = NULL;
    if (m40_tensor_new(ctx, dt, nd, s, &t) != M40_OK) {
        fprintf(stderr, "m40_tensor_new: %s\n", m40_errmsg(ctx));
        exit(1);
    }
    return t;
}

/* Samples B rows that all hold `row` (V logits); hist: one [W] history for
** every row (NULL: none); pos: one step for every row (< 0: pos NULL).
** ids[B] and probs[B] receive the output. */
static m40_status draw(const m40_sampler_desc *d, int B, int V, const float *row,
                       const int *hist, int W, int pos, int *ids, float *probs) {
    float *l = malloc((size_t)B * V * sizeof *l), *o = malloc((size_t)B * 2 * sizeof *o);
    int *h = hist ? malloc((size_t)B * W * sizeof *h) : NULL, *p = malloc((size_t)B * sizeof *p);
    if (!l || !o || !p || (hist && !h)) abort();
    for (int b = 0; b < B; b++) {
        memcpy(l + (size_t)b * V, row, (size_t)V * sizeof *l);
        if (hist) memcpy(h + (size_t)b * W, hist, (size_t)W * sizeof *h);
        p[b] = pos;
    }
    m40_tensor *tl = t_new(M40_DTYPE_F32, 2, B, V), *to = t_new(M40_DTYPE_F32, 2, B, 2);
    m40_tensor *th = hist ? t_new(M40_DTYPE_I32, 2, B, W) : NULL;
    m40_tensor *tp = pos >= 0 ? t_new(M40_DTYPE_I32, 1, B, 0) : NULL;
    m40t_poison(o, (int64_t)B * 2);
    m40_status st = m40_tensor_upload(ctx, tl, l, (size_t)B * V * 4);
    if (!st && th) st = m40_tensor_upload(ctx, th, h, (size_t)B * W * 4);
    if (!st && tp) st = m40_tensor_upload(ctx, tp, p, (size_t)B * 4);
    if (!st) st = m40_tensor_upload(ctx, to, o, (size_t)B * 8);
    if (!st) st = m40_sample(ctx, d, tl, th, tp, to);
    if (!st) st = m40_tensor_download(ctx, to, o, (size_t)B * 8);
    for (int b = 0; !st && b < B; b++) {
        ids[b] = (int)o[2 * b];
        probs[b] = o[2 * b + 1];
    }
    m40_tensor_destroy(tl);
    m40_tensor_destroy(to);
    m40_tensor_destroy(th);
    m40_tensor_destroy(tp);
    free(l), free(o), free(h), free(p);
    return st;
}

static void test_greedy(void) {
    enum { V = 1000 };
    static float row[V];
    for (int i = 0; i < V; i++) row[i] = sinf((float)i * 0.37f) * 3.0f;
    row[700] = row[123] = 5.0f; /* a tie: the lowest id wins */
    m40_sampler_desc d;
    m40_sampler_desc_init(&d);
    d.temperature = 0;
    d.top_k = 3; /* ignored by greedy */
    int id[4];
    float p[4];
    CHECK_ST(draw(&d, 4, V, row, NULL, 0, 5, id, p), M40_OK);
    double s = 0;
    for (int i = 0; i < V; i++) s += exp((double)row[i] - 5.0);
    for (int b = 0; b < 4; b++) {
        CHECK(id[b] == 123);
        CHECK(fabs(p[b] - 1.0 / s) <= 1e-6 / s);
    }
    d.temperature = -1; /* negative: greedy too */
    CHECK_ST(draw(&d, 1, V, row, NULL, 0, -1, id, p), M40_OK);
    CHECK(id[0] == 123);
    /* so cold that logits / T overflow (5 / 1e-38): greedy, not a draw among
    ** the ids tied at FLT_MAX (123 and 700 both, and every row above 3.4) */
    d.temperature = 1e-38f;
    for (int seed = 0; seed < 8; seed++) {
        d.seed = (uint64_t)seed;
        CHECK_ST(draw(&d, 4, V, row, NULL, 0, 5, id, p), M40_OK);
        for (int b = 0; b < 4; b++) CHECK(id[b] == 123);
    }
    d.seed = 0;
    d.temperature = -1;
    /* NaN is never the argmax; +inf is (as FLT_MAX) */
    row[0] = NAN;
    CHECK_ST(draw(&d, 1, V, row, NULL, 0, -1, id, p), M40_OK);
    CHECK(id[0] == 123);
    row[999] = INFINITY;
    CHECK_ST(draw(&d, 1, V, row, NULL, 0, -1, id, p), M40_OK);
    CHECK(id[0] == 999 && p[0] == 1.0f);
}

/* The penalty, seen through greedy: 2.0 at id 3, 1.2 at id 5. */
static void test_penalty(void) {
    enum { V = 10 };
    float row[V] = {0, 0.5f, 0.1f, 2.0f, -3.0f, 1.2f, 0, 0, 0, 0.3f};
    int hist[4] = {3, -1, 3, 3}; /* repeated: penalized once */
    m40_sampler_desc d;
    m40_sampler_desc_init(&d);
    d.temperature = 0;
    d.repetition_penalty = 1.5f; /* once: 1.333 > 1.2; twice would be 0.889 */
    int id[2];
    float p[2];
    CHECK_ST(draw(&d, 2, V, row, hist, 4, 0, id, p), M40_OK);
    CHECK(id[0] == 3 && id[1] == 3);
    double s = 0, m = 2.0f / 1.5f;
    for (int i = 0; i < V; i++) s += exp((i == 3 ? m : (double)row[i]) - m);
    CHECK(fabs(p[0] - 1.0 / s) <= 1e-6);
    d.repetition_penalty = 2.0f; /* 1.0 < 1.2: the argmax flips */
    CHECK_ST(draw(&d, 2, V, row, hist, 4, 0, id, p), M40_OK);
    CHECK(id[0] == 5 && id[1] == 5);
    d.repetition_penalty = 1.0f; /* off */
    CHECK_ST(draw(&d, 1, V, row, hist, 4, 0, id, p), M40_OK);
    CHECK(id[0] == 3);
    /* a negative logit is multiplied: -1 · 1.5 < -1.2 */
    float neg[V] = {-9, -9, -9, -1.0f, -9, -1.2f, -9, -9, -9, -9};
    d.repetition_penalty = 1.5f;
    CHECK_ST(draw(&d, 1, V, neg, hist, 4, 0, id, p), M40_OK);
    CHECK(id[0] == 5);
    /* a penalty below 1 rewards: 1.2 / 0.5 = 2.4 > 2 */
    int h5[1] = {5};
    d.repetition_penalty = 0.5f;
    CHECK_ST(draw(&d, 1, V, row, h5, 1, 0, id, p), M40_OK);
    CHECK(id[0] == 5);
}

/* The test distribution: 50 distinct logits 3 - 0.15 n, scattered over the ids. */
enum { SV = 50 };
static void test_row(float *row) {
    for (int n = 0; n < SV; n++) row[(n * 17) % SV] = 3.0f - 0.15f * (float)n + 0.001f * (float)(n % 3);
}

static void test_seeds(void) {
    enum { B = 64 };
    float row[SV];
    test_row(row);
    m40_sampler_desc d;
    m40_sampler_desc_init(&d);
    d.seed = 42;
    int a[B], b[B], c[B];
    float pa[B], pb[B];
    CHECK_ST(draw(&d, B, SV, row, NULL, 0, 7, a, pa), M40_OK);
    CHECK_ST(draw(&d, B, SV, row, NULL, 0, 7, b, pb), M40_OK);
    CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(pa, pb, sizeof pa) == 0);
    CHECK_ST(draw(&d, B, SV, row, NULL, 0, 8, c, pb), M40_OK); /* another step */
    int diff = 0, rows = 0;
    for (int i = 0; i < B; i++) diff += a[i] != c[i], rows += a[i] != a[0];
    CHECK(diff >= B / 2);
    CHECK(rows >= B / 4); /* rows of one call draw apart */
    d.seed = 43;
    CHECK_ST(draw(&d, B, SV, row, NULL, 0, 7, c, pb), M40_OK);
    diff = 0;
    for (int i = 0; i < B; i++) diff += a[i] != c[i];
    CHECK(diff >= B / 2);
    d.seed = 42; /* pos NULL is step 0 */
    CHECK_ST(draw(&d, B, SV, row, NULL, 0, 0, a, pa), M40_OK);
    CHECK_ST(draw(&d, B, SV, row, NULL, 0, -1, b, pb), M40_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
}

/* N draws of d over the test row; chi-square against the oracle; each
** reported probability is the oracle's. Returns the counts in cnt. */
static void chi_case(const char *name, const m40_sampler_desc *d, const int *hist, int W,
                     const double *wrong) {
    enum { B = 4000, CALLS = 5 };
    float row[SV], *p = malloc(B * sizeof *p);
    int *id = malloc(B * sizeof *id);
    double q[SV];
    long cnt[SV] = {0};
    if (!p || !id) abort();
    test_row(row);
    int kept = st_dist(d, SV, row, hist, W, q), bad_p = 0;
    for (int c = 0; c < CALLS; c++) {
        CHECK_ST(draw(d, B, SV, row, hist, W, 100 + c, id, p), M40_OK);
        for (int b = 0; b < B; b++) {
            if (id[b] < 0 || id[b] >= SV) {
                bad_p++;
                continue;
            }
            cnt[id[b]]++;
            if (!(fabs(p[b] - q[id[b]]) <= 1e-5 * q[id[b]] + 1e-7)) bad_p++;
        }
    }
    int df;
    double chi = st_chi2(SV, q, cnt, (long)B * CALLS, &df), crit = st_chi2_crit(df);
    printf("%-28s kept %2d  chi2 %8.2f  df %2d  crit(p=0.001) %6.2f\n", name, kept, chi, df, crit);
    CHECK(chi <= crit);
    CHECK(bad_p == 0);
    if (wrong) { /* the test can fail: a wrong distribution is rejected */
        double chw = st_chi2(SV, wrong, cnt, (long)B * CALLS, &df);
        printf("%-28s vs a wrong distribution: chi2 %.2f, crit %.2f\n", name, chw,
               st_chi2_crit(df));
        CHECK(chw > st_chi2_crit(df));
    }
    free(p);
    free(id);
}

static void test_distributions(void) {
    float row[SV];
    test_row(row);
    m40_sampler_desc d;
    m40_sampler_desc_init(&d);
    d.seed = 1234;
    double plain[SV], cold[SV];
    st_dist(&d, SV, row, NULL, 0, plain);
    m40_sampler_desc c = d;
    c.temperature = 0.7f;
    st_dist(&c, SV, row, NULL, 0, cold);
    chi_case("temperature 1", &d, NULL, 0, cold);
    chi_case("temperature 0.7", &c, NULL, 0, plain);
    c = d;
    c.top_k = 5;
    chi_case("top-k 5", &c, NULL, 0, plain);
    c = d;
    c.temperature = 0.8f;
    c.top_p = 0.8f;
    chi_case("top-p 0.8, temperature 0.8", &c, NULL, 0, plain);
    c = d;
    c.min_p = 0.1f;
    chi_case("min-p 0.1", &c, NULL, 0, plain);
    c = d;
    c.top_k = 20, c.top_p = 0.9f, c.min_p = 0.05f, c.repetition_penalty = 1.3f;
    int hist[4] = {0, 17, -1, 0}; /* the two most likely ids */
    chi_case("all filters + penalty", &c, hist, 4, plain);
}

#define BAD(field, value, want, text)                                                   \
    do {                                                                                \
        m40_sampler_desc b_ = d;                                                        \
        b_.field = value;                                                               \
        CHECK_ST(m40_sample(ctx, &b_, l, NULL, NULL, o), want);                         \
        CHECK(strstr(m40_errmsg(ctx), text) != NULL);                                   \
    } while (0)

static void test_bad_inputs(void) {
    m40_tensor *l = t_new(M40_DTYPE_F32, 2, 2, 50), *o = t_new(M40_DTYPE_F32, 2, 2, 2);
    CHECK_ST(m40_fill_random(ctx, 1, M40_RANDOM_UNIFORM, -1, 1, l), M40_OK);
    m40_sampler_desc d;
    m40_sampler_desc_init(&d);
    CHECK_ST(m40_sample(ctx, NULL, l, NULL, NULL, o), M40_ERR_INVALID_ARG);
    BAD(struct_size, 8, M40_ERR_INVALID_ARG, "struct_size");
    BAD(temperature, INFINITY, M40_ERR_INVALID_ARG, "temperature");
    BAD(temperature, NAN, M40_ERR_INVALID_ARG, "temperature");
    BAD(top_k, -1, M40_ERR_INVALID_ARG, "top_k");
    BAD(top_p, 0.0f, M40_ERR_INVALID_ARG, "top_p");
    BAD(top_p, 1.5f, M40_ERR_INVALID_ARG, "top_p");
    BAD(top_p, NAN, M40_ERR_INVALID_ARG, "top_p");
    BAD(min_p, 1.0f, M40_ERR_INVALID_ARG, "min_p");
    BAD(min_p, -0.1f, M40_ERR_INVALID_ARG, "min_p");
    BAD(repetition_penalty, 0.0f, M40_ERR_INVALID_ARG, "repetition_penalty");
    BAD(repetition_penalty, INFINITY, M40_ERR_INVALID_ARG, "repetition_penalty");
    BAD(repetition_penalty, NAN, M40_ERR_INVALID_ARG, "repetition_penalty");
    /* history ids out of [-1, V) */
    m40_tensor *h = t_new(M40_DTYPE_I32, 2, 2, 3), *hf = t_new(M40_DTYPE_F32, 2, 2, 3);
    int hv[6] = {1, -1, 2, 3, 50, 4};
    CHECK_ST(m40_tensor_upload(ctx, h, hv, sizeof hv), M40_OK);
    CHECK_ST(m40_sample(ctx, &d, l, h, NULL, o), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctx), "history id 50") != NULL);
    hv[4] = -2;
    CHECK_ST(m40_tensor_upload(ctx, h, hv, sizeof hv), M40_OK);
    CHECK_ST(m40_sample(ctx, &d, l, h, NULL, o), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctx), "history id -2") != NULL);
    /* dtypes and shapes */
    CHECK_ST(m40_sample(ctx, &d, l, hf, NULL, o), M40_ERR_DTYPE);
    m40_tensor *h3 = t_new(M40_DTYPE_I32, 2, 3, 3), *p3 = t_new(M40_DTYPE_I32, 1, 3, 0);
    m40_tensor *l1 = t_new(M40_DTYPE_F32, 1, 50, 0), *o3 = t_new(M40_DTYPE_F32, 2, 2, 3);
    m40_tensor *oi = t_new(M40_DTYPE_I32, 2, 2, 2);
    CHECK_ST(m40_sample(ctx, &d, l, h3, NULL, o), M40_ERR_SHAPE);
    CHECK(strstr(m40_errmsg(ctx), "history") != NULL);
    CHECK_ST(m40_sample(ctx, &d, l, NULL, p3, o), M40_ERR_SHAPE);
    CHECK_ST(m40_sample(ctx, &d, l1, NULL, NULL, o), M40_ERR_SHAPE);
    CHECK_ST(m40_sample(ctx, &d, l, NULL, NULL, o3), M40_ERR_SHAPE);
    CHECK_ST(m40_sample(ctx, &d, l, NULL, NULL, oi), M40_ERR_DTYPE);
    CHECK_ST(m40_sample(ctx, &d, l, NULL, NULL, NULL), M40_ERR_INVALID_ARG);
    /* V over 2^24, without allocating it: the graph's shape inference */
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(ctx, &g), M40_OK);
    m40_tensor_desc ld;
    int64_t big[2] = {1, ((int64_t)1 << 24) + 1};
    m40_tensor_desc_make(&ld, M40_DTYPE_F32, 2, big);
    int li = -1;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "logits", &ld, &li), M40_OK);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SAMPLE);
    nd.ninputs = 1;
    nd.inputs[0] = li;
    CHECK_ST(m40_graph_node(g, &nd, NULL), M40_ERR_SHAPE);
    CHECK(strstr(m40_errmsg(ctx), "2^24") != NULL);
    m40_graph_destroy(g);
    /* V = 1: id 0, probability 1; B = 0: nothing to do */
    {
        m40_tensor *l11 = t_new(M40_DTYPE_F32, 2, 1, 1), *o12 = t_new(M40_DTYPE_F32, 2, 1, 2);
        m40_tensor *l0 = t_new(M40_DTYPE_F32, 2, 0, 50), *o0 = t_new(M40_DTYPE_F32, 2, 0, 2);
        float one = -3.0f, r[2] = {-1, -1};
        m40_sampler_desc t = d;
        t.top_k = 1, t.top_p = 0.5f, t.min_p = 0.5f;
        CHECK_ST(m40_tensor_upload(ctx, l11, &one, 4), M40_OK);
        CHECK_ST(m40_sample(ctx, &t, l11, NULL, NULL, o12), M40_OK);
        CHECK_ST(m40_tensor_download(ctx, o12, r, sizeof r), M40_OK);
        CHECK(r[0] == 0.0f && r[1] == 1.0f);
        CHECK_ST(m40_sample(ctx, &t, l0, NULL, NULL, o0), M40_OK);
        m40_tensor_destroy(l11), m40_tensor_destroy(o12), m40_tensor_destroy(l0);
        m40_tensor_destroy(o0);
    }
    /* still usable */
    CHECK_ST(m40_sample(ctx, &d, l, NULL, NULL, o), M40_OK);
    CHECK(m40_errmsg(ctx)[0] == 0);
    m40_tensor *ts[] = {l, o, h, hf, h3, p3, l1, o3, oi};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) m40_tensor_destroy(ts[i]);
}

/* SAMPLE in a graph equals the eager call. */
static void test_graph(void) {
    enum { B = 8, W = 4 };
    float row[SV];
    test_row(row);
    float l[B * SV], o[B * 2], e[B * 2];
    int h[B * W], p[B];
    for (int b = 0; b < B; b++) {
        memcpy(l + b * SV, row, sizeof row);
        for (int w = 0; w < W; w++) h[b * W + w] = (b + 7 * w) % SV;
        p[b] = 3 * b;
    }
    m40_sampler_desc d;
    m40_sampler_desc_init(&d);
    d.top_k = 30, d.top_p = 0.95f, d.min_p = 0.02f, d.repetition_penalty = 1.2f, d.seed = 9;
    m40_sampler_desc bad = d;
    bad.top_p = 2.0f;
    m40_tensor *t[4];
    m40_graph *g = st_graph(ctx, B, SV, W, &d, &bad, t);
    m40_tensor *tl = t[0], *th = t[1], *tp = t[2], *to = t[3];
    if (g) {
        CHECK_ST(m40_tensor_upload(ctx, tl, l, sizeof l), M40_OK);
        CHECK_ST(m40_tensor_upload(ctx, th, h, sizeof h), M40_OK);
        CHECK_ST(m40_tensor_upload(ctx, tp, p, sizeof p), M40_OK);
        CHECK_ST(m40_graph_run(g), M40_OK);
        CHECK_ST(m40_tensor_download(ctx, to, o, sizeof o), M40_OK);
        m40_tensor *el = t_new(M40_DTYPE_F32, 2, B, SV), *eh = t_new(M40_DTYPE_I32, 2, B, W);
        m40_tensor *ep = t_new(M40_DTYPE_I32, 1, B, 0), *eo = t_new(M40_DTYPE_F32, 2, B, 2);
        CHECK_ST(m40_tensor_upload(ctx, el, l, sizeof l), M40_OK);
        CHECK_ST(m40_tensor_upload(ctx, eh, h, sizeof h), M40_OK);
        CHECK_ST(m40_tensor_upload(ctx, ep, p, sizeof p), M40_OK);
        CHECK_ST(m40_sample(ctx, &d, el, eh, ep, eo), M40_OK);
        CHECK_ST(m40_tensor_download(ctx, eo, e, sizeof e), M40_OK);
        CHECK(memcmp(o, e, sizeof o) == 0);
        m40_tensor_destroy(el), m40_tensor_destroy(eh), m40_tensor_destroy(ep);
        m40_tensor_destroy(eo);
    }
    m40_graph_destroy(g);
    /* logits only (no history, no pos): greedy, as the eager call */
    g = NULL;
    CHECK_ST(m40_graph_create(ctx, &g), M40_OK);
    m40_tensor_desc dl;
    int64_t sl[2] = {B, SV};
    m40_tensor_desc_make(&dl, M40_DTYPE_F32, 2, sl);
    int il = -1, io = -1;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "logits", &dl, &il), M40_OK);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SAMPLE);
    nd.ninputs = 1;
    nd.inputs[0] = il;
    nd.sampler.temperature = 0;
    CHECK_ST(m40_graph_node(g, &nd, &io), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, io), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    tl = to = NULL;
    CHECK_ST(m40_graph_get_tensor(g, il, &tl), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, io, &to), M40_OK);
    if (tl && to) {
        CHECK_ST(m40_tensor_upload(ctx, tl, l, sizeof l), M40_OK);
        CHECK_ST(m40_graph_run(g), M40_OK);
        CHECK_ST(m40_tensor_download(ctx, to, o, sizeof o), M40_OK);
        for (int b = 0; b < B; b++) CHECK(o[2 * b] == 0.0f); /* id 0 holds 3.0, the max */
    }
    m40_graph_destroy(g);
}

/* The rules' boundaries, each as include/m40/transformer.h words it (a
** mutation run found them unchecked): top-p keeps the fewest ids whose mass
** reaches top_p; min_p keeps an id at exactly min_p·p_max; a temperature of
** exactly M40_SAMPLER_GREEDY_BELOW samples; NaN reads as -inf. */
static void test_boundaries(void) {
    m40_sampler_desc d;
    int id;
    float p;
    m40_sampler_desc_init(&d);
    d.top_p = 0.5f; /* 4 equal ids: 2 of them reach 0.5 exactly */
    const float eq[4] = {0, 0, 0, 0};
    CHECK_ST(draw(&d, 1, 4, eq, NULL, 0, -1, &id, &p), M40_OK);
    CHECK(p == 0.5f && id >= 0 && id <= 1);

    m40_sampler_desc_init(&d);
    d.min_p = 0.5f; /* p = 2/3, 1/3: the second is min_p·p_max exactly */
    const float half[2] = {0.0f, logf(0.5f)};
    CHECK_ST(draw(&d, 1, 2, half, NULL, 0, -1, &id, &p), M40_OK);
    CHECK(fabs(p - (id == 0 ? 2.0 / 3 : 1.0 / 3)) < 1e-6);

    m40_sampler_desc_init(&d);
    d.temperature = M40_SAMPLER_GREEDY_BELOW; /* logits / T = {0, 1}: sampled */
    const float tiny[2] = {0.0f, M40_SAMPLER_GREEDY_BELOW};
    const double e = exp(1.0) / (1.0 + exp(1.0));
    CHECK_ST(draw(&d, 1, 2, tiny, NULL, 0, -1, &id, &p), M40_OK);
    CHECK(fabs(p - (id == 1 ? e : 1 - e)) < 1e-3);

    m40_sampler_desc_init(&d);
    d.temperature = 0; /* greedy over {-inf, NaN}: a tie of two -inf, the lower id */
    const float nan_row[2] = {-INFINITY, NAN};
    CHECK_ST(draw(&d, 1, 2, nan_row, NULL, 0, -1, &id, &p), M40_OK);
    CHECK(id == 0 && p == 0.5f);
}

int main(void) {
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &ctx) != M40_OK) {
        fprintf(stderr, "test_sample: no CPU context: %s\n", m40_errmsg(ctx));
        return 1;
    }
    test_greedy();
    test_boundaries();
    test_penalty();
    test_seeds();
    test_distributions();
    test_bad_inputs();
    test_graph();
    m40_ctx_destroy(ctx);
    return m40t_finish("test_sample");
}
