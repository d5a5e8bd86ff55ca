/* Test graphs with eager references; see fixtures.h. */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_unit(uint64_t *s) { return (float)(rng_next(s) >> 40) / 16777216.0f - 0.5f; }

static float *rand_floats(int64_t n, uint64_t *s) {
    float *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (p)
        for (int64_t i = 0; i < n; i++) p[i] = rng_unit(s);
    return p;
}

/* ------------------------------------------------------------------ layer */

int fx_layer_init(fx_layer *l, int64_t T, int64_t C, int64_t D, int64_t F, uint64_t seed) {
    memset(l, 0, sizeof *l);
    l->T = T, l->C = C, l->D = D, l->F = F;
    uint64_t s = seed;
    l->x = rand_floats(T * C, &s);
    l->wq = rand_floats(D * C, &s);
    l->wk = rand_floats(D * C, &s);
    l->wv = rand_floats(D * C, &s);
    l->wo = rand_floats(C * D, &s);
    l->w1 = rand_floats(F * C, &s);
    l->b1 = rand_floats(F, &s);
    l->w2 = rand_floats(C * F, &s);
    return l->x && l->wq && l->wk && l->wv && l->wo && l->w1 && l->b1 && l->w2;
}

void fx_layer_free(fx_layer *l) {
    free(l->x), free(l->wq), free(l->wk), free(l->wv);
    free(l->wo), free(l->w1), free(l->b1), free(l->w2);
}

static m40_status weight(m40_graph *g, const char *name, int64_t d0, int64_t d1, const float *data,
                         int *id) {
    int64_t shape[2] = {d0, d1};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, d1 ? 2 : 1, shape);
    m40_status st = m40_graph_tensor(g, M40_ROLE_WEIGHT, name, &d, id);
    if (st == M40_OK && data)
        st = m40_graph_set_data(g, *id, data, (size_t)(d0 * (d1 ? d1 : 1)) * sizeof(float));
    return st;
}

static int node(m40_graph *g, m40_status *st, m40_op op, const char *name, int a, int b, int c) {
    if (*st != M40_OK) return -1;
    m40_node_desc nd;
    m40_node_desc_init(&nd, op);
    nd.name = name;
    nd.inputs[0] = a, nd.inputs[1] = b, nd.inputs[2] = c;
    nd.ninputs = c != M40_NO_TENSOR ? 3 : b != M40_NO_TENSOR ? 2 : 1;
    nd.act = M40_ACT_GELU;
    nd.alpha = 0.125f;
    nd.out_dtype = M40_DTYPE_F16;
    int out = -1;
    *st = m40_graph_node(g, &nd, &out);
    return out;
}

m40_status fx_layer_build(m40_graph *g, const fx_layer *l, int *x_id, int *y_id, int *y16_id) {
    int64_t shape[2] = {l->T, l->C};
    m40_tensor_desc dx;
    m40_tensor_desc_make(&dx, M40_DTYPE_F32, 2, shape);
    int x, wq, wk, wv, wo, w1, b1, w2;
    m40_status st = m40_graph_tensor(g, M40_ROLE_INPUT, "x", &dx, &x);
    if (st == M40_OK) st = weight(g, "wq", l->D, l->C, l->wq, &wq);
    if (st == M40_OK) st = weight(g, "wk", l->D, l->C, l->wk, &wk);
    if (st == M40_OK) st = weight(g, "wv", l->D, l->C, l->wv, &wv);
    if (st == M40_OK) st = weight(g, "wo", l->C, l->D, l->wo, &wo);
    if (st == M40_OK) st = weight(g, "w1", l->F, l->C, l->w1, &w1);
    if (st == M40_OK) st = weight(g, "b1", l->F, 0, l->b1, &b1);
    if (st == M40_OK) st = weight(g, "w2", l->C, l->F, l->w2, &w2);
    const int NO = M40_NO_TENSOR;
    int q = node(g, &st, M40_OP_LINEAR, "q", x, wq, NO);
    int k = node(g, &st, M40_OP_LINEAR, "k", x, wk, NO);
    int vt = node(g, &st, M40_OP_LINEAR, "vT", wv, x, NO); /* Wv·xᵀ = (x·Wvᵀ)ᵀ */
    int s = node(g, &st, M40_OP_LINEAR, "scores", q, k, NO);
    s = node(g, &st, M40_OP_SCALE, "scaled", s, NO, NO);
    int p = node(g, &st, M40_OP_SOFTMAX, "probs", s, NO, NO);
    int o = node(g, &st, M40_OP_LINEAR, "attn", p, vt, NO);
    int a = node(g, &st, M40_OP_LINEAR, "attn_out", o, wo, NO);
    int x2 = node(g, &st, M40_OP_ADD, "x2", x, a, NO);
    int h = node(g, &st, M40_OP_LINEAR, "mlp_up", x2, w1, b1);
    h = node(g, &st, M40_OP_ACTIVATION, "gelu", h, NO, NO);
    int f = node(g, &st, M40_OP_LINEAR, "mlp_down", h, w2, NO);
    int y = node(g, &st, M40_OP_ADD, "y", x2, f, NO);
    int y16 = node(g, &st, M40_OP_CONVERT, "y16", y, NO, NO);
    if (st == M40_OK) st = m40_graph_mark_output(g, y);
    if (st == M40_OK) st = m40_graph_mark_output(g, y16);
    if (x_id) *x_id = x;
    if (y_id) *y_id = y;
    if (y16_id) *y16_id = y16;
    return st;
}

m40_status fx_layer_eager(m40_ctx *ctx, const fx_layer *l, float *yout, uint16_t *y16out) {
    enum { X, WQ, WK, WV, WO, W1, B1, W2, Q, K, VT, S, O, A, X2, H, F, Y, Y16, NT };
    int64_t T = l->T, C = l->C, D = l->D, FF = l->F;
    const int64_t shapes[NT][2] = {{T, C}, {D, C}, {D, C}, {D, C}, {C, D}, {FF, C}, {FF, 0},
                                   {C, FF}, {T, D}, {T, D}, {D, T}, {T, T}, {T, D}, {T, C},
                                   {T, C}, {T, FF}, {T, C}, {T, C}, {T, C}};
    const float *data[NT] = {l->x, l->wq, l->wk, l->wv, l->wo, l->w1, l->b1, l->w2};
    m40_tensor *t[NT] = {0};
    m40_status st = M40_OK;
    for (int i = 0; i < NT && st == M40_OK; i++) {
        st = m40_tensor_new(ctx, i == Y16 ? M40_DTYPE_F16 : M40_DTYPE_F32, shapes[i][1] ? 2 : 1,
                            shapes[i], &t[i]);
        if (st == M40_OK && data[i])
            st = m40_tensor_upload(ctx, t[i], data[i], m40_tensor_get_nbytes(t[i]));
    }
    if (st == M40_OK) st = m40_matmul(ctx, t[X], t[WQ], NULL, t[Q]);
    if (st == M40_OK) st = m40_matmul(ctx, t[X], t[WK], NULL, t[K]);
    if (st == M40_OK) st = m40_matmul(ctx, t[WV], t[X], NULL, t[VT]);
    if (st == M40_OK) st = m40_matmul(ctx, t[Q], t[K], NULL, t[S]);
    if (st == M40_OK) st = m40_scale(ctx, 0.125f, t[S], t[S]);
    if (st == M40_OK) st = m40_softmax(ctx, t[S], t[S]);
    if (st == M40_OK) st = m40_matmul(ctx, t[S], t[VT], NULL, t[O]);
    if (st == M40_OK) st = m40_matmul(ctx, t[O], t[WO], NULL, t[A]);
    if (st == M40_OK) st = m40_add(ctx, t[X], t[A], t[X2]);
    if (st == M40_OK) st = m40_matmul(ctx, t[X2], t[W1], t[B1], t[H]);
    if (st == M40_OK) st = m40_activation(ctx, M40_ACT_GELU, t[H], t[H]);
    if (st == M40_OK) st = m40_matmul(ctx, t[H], t[W2], NULL, t[F]);
    if (st == M40_OK) st = m40_add(ctx, t[X2], t[F], t[Y]);
    if (st == M40_OK) st = m40_convert(ctx, t[Y], t[Y16]);
    if (st == M40_OK) st = m40_tensor_download(ctx, t[Y], yout, m40_tensor_get_nbytes(t[Y]));
    if (st == M40_OK) st = m40_tensor_download(ctx, t[Y16], y16out, m40_tensor_get_nbytes(t[Y16]));
    for (int i = 0; i < NT; i++) m40_tensor_destroy(t[i]);
    return st;
}

/* ------------------------------------------------------------ random DAGs */

typedef struct fx_t {
    m40_tensor_role role;
    m40_dtype dtype;
    int ndim;
    int64_t shape[2];
    float *data;     /* weights */
    int uses;
} fx_t;

typedef struct fx_n {
    m40_op op;
    m40_act act;
    float alpha;
    m40_dtype out_dtype;
    int ninputs, in[3], out;
} fx_n;

struct fx_dag {
    fx_t *t;
    fx_n *n;
    int nt, nn, *add_order;
};

static int new_tensor(fx_dag *d, m40_tensor_role role, m40_dtype dt, int ndim, int64_t s0,
                      int64_t s1, uint64_t *rng) {
    fx_t *t = &d->t[d->nt];
    memset(t, 0, sizeof *t);
    t->role = role, t->dtype = dt, t->ndim = ndim, t->shape[0] = s0, t->shape[1] = s1;
    if (role == M40_ROLE_WEIGHT) t->data = rand_floats(ndim == 2 ? s0 * s1 : s0, rng);
    return d->nt++;
}

/* An f32 non-weight tensor: recent ones mostly (chains), any one sometimes
** (long live ranges). */
static int pick(fx_dag *d, uint64_t *rng) {
    for (int tries = 0; tries < 64; tries++) {
        int i = rng_next(rng) % 10 < 7 ? d->nt - 1 - (int)(rng_next(rng) % 4)
                                        : (int)(rng_next(rng) % (uint64_t)d->nt);
        if (i < 0) i = 0;
        if (d->t[i].role != M40_ROLE_WEIGHT && d->t[i].dtype == M40_DTYPE_F32) return i;
    }
    return 0; /* tensor 0 is always an f32 input */
}

fx_dag *fx_dag_new(uint64_t seed, int nodes, int max_width, int shuffled) {
    fx_dag *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    int cap = 4 + nodes * 4;
    d->t = calloc((size_t)cap, sizeof *d->t);
    d->n = calloc((size_t)nodes + 2, sizeof *d->n);
    d->add_order = calloc((size_t)nodes + 2, sizeof *d->add_order);
    if (!d->t || !d->n || !d->add_order) {
        fx_dag_free(d);
        return NULL;
    }
    uint64_t rng = seed;
    int64_t R = 1 + (int64_t)(rng_next(&rng) % 4);
    int nin = 1 + (int)(rng_next(&rng) % 3);
    for (int i = 0; i < nin; i++)
        new_tensor(d, M40_ROLE_INPUT, M40_DTYPE_F32, 2, R, 1 + (int64_t)(rng_next(&rng) % (uint64_t)max_width), &rng);
    while (d->nn < nodes) {
        int a = pick(d, &rng);
        fx_t *ta = &d->t[a];
        fx_n *n = &d->n[d->nn];
        memset(n, 0, sizeof *n);
        n->in[0] = a;
        n->ninputs = 1;
        n->alpha = 0.5f + (float)(rng_next(&rng) % 4) * 0.25f;
        n->act = (m40_act)(rng_next(&rng) % 3);
        int64_t W = ta->shape[1];
        int kind = (int)(rng_next(&rng) % 10);
        if (kind <= 1 || kind == 9) {
            n->op = M40_OP_LINEAR;
            int64_t N = 1 + (int64_t)(rng_next(&rng) % (uint64_t)max_width);
            n->in[n->ninputs++] = new_tensor(d, M40_ROLE_WEIGHT, M40_DTYPE_F32, 2, N, W, &rng);
            if (rng_next(&rng) % 2)
                n->in[n->ninputs++] = new_tensor(d, M40_ROLE_WEIGHT, M40_DTYPE_F32, 1, N, 0, &rng);
            n->out = new_tensor(d, M40_ROLE_ACTIVATION, M40_DTYPE_F32, 2, R, N, &rng);
        } else if (kind <= 4) {
            n->op = kind == 2 ? M40_OP_SCALE : kind == 3 ? M40_OP_ACTIVATION : M40_OP_SOFTMAX;
            n->out = new_tensor(d, M40_ROLE_ACTIVATION, M40_DTYPE_F32, 2, R, W, &rng);
        } else if (kind <= 7) {
            n->op = kind == 7 ? M40_OP_MUL : M40_OP_ADD;
            int b = -1;
            if (rng_next(&rng) % 10 < 3) {
                b = new_tensor(d, M40_ROLE_WEIGHT, M40_DTYPE_F32, 1, W, 0, &rng); /* broadcast */
            } else {
                for (int tries = 0; tries < 16 && b < 0; tries++) {
                    int c = pick(d, &rng);
                    if (d->t[c].shape[1] == W) b = c;
                }
                if (b < 0) b = a;
            }
            n->in[n->ninputs++] = b;
            n->out = new_tensor(d, M40_ROLE_ACTIVATION, M40_DTYPE_F32, 2, R, W, &rng);
        } else {
            /* f32 -> f16 -> f32: the f16 tensor is read only by the way back */
            n->op = M40_OP_CONVERT;
            n->out_dtype = M40_DTYPE_F16;
            n->out = new_tensor(d, M40_ROLE_ACTIVATION, M40_DTYPE_F16, 2, R, W, &rng);
            d->t[a].uses++;
            d->add_order[d->nn] = d->nn;
            d->nn++;
            n = &d->n[d->nn];
            memset(n, 0, sizeof *n);
            n->op = M40_OP_CONVERT;
            n->out_dtype = M40_DTYPE_F32;
            n->in[0] = d->n[d->nn - 1].out;
            n->ninputs = 1;
            n->out = new_tensor(d, M40_ROLE_ACTIVATION, M40_DTYPE_F32, 2, R, W, &rng);
        }
        for (int i = 0; i < n->ninputs; i++) d->t[n->in[i]].uses++;
        d->add_order[d->nn] = d->nn;
        d->nn++;
    }
    if (shuffled) /* Fisher-Yates over the order the nodes are added in */
        for (int i = d->nn - 1; i > 0; i--) {
            int j = (int)(rng_next(&rng) % (uint64_t)(i + 1)), tmp = d->add_order[i];
            d->add_order[i] = d->add_order[j];
            d->add_order[j] = tmp;
        }
    return d;
}

void fx_dag_free(fx_dag *d) {
    if (!d) return;
    for (int i = 0; d->t && i < d->nt; i++) free(d->t[i].data);
    free(d->t);
    free(d->n);
    free(d->add_order);
    free(d);
}

m40_status fx_dag_build(const fx_dag *d, m40_graph *g) {
    m40_status st = M40_OK;
    for (int i = 0; i < d->nt && st == M40_OK; i++) {
        const fx_t *t = &d->t[i];
        m40_tensor_desc desc;
        m40_tensor_desc_make(&desc, t->dtype, t->ndim, t->shape);
        int id = -1;
        st = m40_graph_tensor(g, t->role, NULL, &desc, &id);
        if (st == M40_OK && t->data)
            st = m40_graph_set_data(g, id, t->data,
                                    (size_t)m40_tensor_desc_numel(&desc) * sizeof(float));
        if (st == M40_OK && t->role == M40_ROLE_ACTIVATION && t->uses == 0)
            st = m40_graph_mark_output(g, id);
    }
    for (int k = 0; k < d->nn && st == M40_OK; k++) {
        const fx_n *n = &d->n[d->add_order[k]];
        m40_node_desc nd;
        m40_node_desc_init(&nd, n->op);
        nd.ninputs = n->ninputs;
        for (int i = 0; i < n->ninputs; i++) nd.inputs[i] = n->in[i];
        nd.output = n->out;
        nd.alpha = n->alpha;
        nd.act = n->act;
        nd.out_dtype = n->out_dtype;
        st = m40_graph_node(g, &nd, NULL);
    }
    return st;
}

static m40_status run_eager(m40_ctx *ctx, const fx_n *n, m40_tensor **t) {
    switch (n->op) {
    case M40_OP_ADD: return m40_add(ctx, t[n->in[0]], t[n->in[1]], t[n->out]);
    case M40_OP_MUL: return m40_mul(ctx, t[n->in[0]], t[n->in[1]], t[n->out]);
    case M40_OP_SCALE: return m40_scale(ctx, n->alpha, t[n->in[0]], t[n->out]);
    case M40_OP_ACTIVATION: return m40_activation(ctx, n->act, t[n->in[0]], t[n->out]);
    case M40_OP_SOFTMAX: return m40_softmax(ctx, t[n->in[0]], t[n->out]);
    case M40_OP_CONVERT: return m40_convert(ctx, t[n->in[0]], t[n->out]);
    case M40_OP_LINEAR:
        return m40_matmul(ctx, t[n->in[0]], t[n->in[1]], n->ninputs > 2 ? t[n->in[2]] : NULL,
                          t[n->out]);
    default: return M40_ERR_UNSUPPORTED;
    }
}

int fx_dag_check_outputs(const fx_dag *d, m40_ctx *ctx, m40_graph *g) {
    m40_tensor **t = calloc((size_t)d->nt, sizeof *t);
    int bad = 0;
    m40_status st = t ? M40_OK : M40_ERR_OOM_HOST;
    for (int i = 0; i < d->nt && st == M40_OK; i++) {
        const fx_t *x = &d->t[i];
        st = m40_tensor_new(ctx, x->dtype, x->ndim, x->shape, &t[i]);
        if (st == M40_OK && x->data) st = m40_tensor_upload(ctx, t[i], x->data, m40_tensor_get_nbytes(t[i]));
        if (st == M40_OK && x->role == M40_ROLE_INPUT) {
            m40_tensor *gi = NULL;
            st = m40_fill_random(ctx, 1000 + (uint64_t)i, M40_RANDOM_UNIFORM, -1.0f, 1.0f, t[i]);
            if (st == M40_OK) st = m40_graph_get_tensor(g, i, &gi);
            if (st == M40_OK)
                st = m40_fill_random(ctx, 1000 + (uint64_t)i, M40_RANDOM_UNIFORM, -1.0f, 1.0f, gi);
        }
    }
    if (st == M40_OK) st = m40_graph_run(g);
    for (int s = 0; s < d->nn && st == M40_OK; s++)
        st = run_eager(ctx, &d->n[d->add_order[m40_graph_get_step_node(g, s)]], t);
    for (int i = 0; i < d->nt && st == M40_OK; i++) {
        if (d->t[i].role != M40_ROLE_ACTIVATION || d->t[i].uses) continue;
        m40_tensor *gt = NULL;
        size_t nb = m40_tensor_get_nbytes(t[i]);
        char *a = malloc(nb + 1), *b = malloc(nb + 1);
        st = m40_graph_get_tensor(g, i, &gt);
        if (st == M40_OK && a && b) st = m40_tensor_download(ctx, gt, a, nb);
        if (st == M40_OK && a && b) st = m40_tensor_download(ctx, t[i], b, nb);
        if (st == M40_OK && a && b && memcmp(a, b, nb) != 0) {
            fprintf(stderr, "dag output t%d differs from the eager result\n", i);
            bad++;
        }
        free(a);
        free(b);
    }
    if (st != M40_OK) {
        fprintf(stderr, "dag check: %s: %s\n", m40_status_str(st), m40_errmsg(ctx));
        bad++;
    }
    for (int i = 0; t && i < d->nt; i++) m40_tensor_destroy(t[i]);
    free(t);
    return bad;
}
