/* A small graph chaining the issue-16 ops, shared by the CPU and GPU tests:
**   e  = EMBEDDING(ids [B,T], table f16 [V,C])
**   y1 = RMSNORM(h, w, residual e, alpha 0)     h STATE [B,T,C]: h = e
**   y2 = RMSNORM(h, w, residual y1, alpha 1)    h += y1
**   y3 = ROPE(y2, pos [B,T]) heads 3, head_dim 16, rope_dims 8, adjacent
**        (C = 64: the last 16 values of each row pass)
**   y4 = SWIGLU(y3)                              [B,T,C/2]
**   out = TAKE_LAST(y4)                          [B,1,C/2] */
#ifndef M40_TESTS_TRANSFORMER_CHAIN_H
#define M40_TESTS_TRANSFORMER_CHAIN_H

#include "check.h"

#define TCHAIN_C 64

typedef struct tchain {
    m40_graph *g;
    int ids, pos, h, out;
} tchain;

static int tchain_tensor(m40_graph *g, m40_tensor_role role, const char *name, m40_dtype dt,
                         int nd, int64_t a, int64_t b, int64_t c) {
    int64_t s[3] = {a, b, c};
    m40_tensor_desc d;
    int id = -1;
    if (m40_tensor_desc_make(&d, dt, nd, s) != M40_OK ||
        m40_graph_tensor(g, role, name, &d, &id) != M40_OK)
        return -1;
    return id;
}

static int tchain_node(m40_graph *g, m40_node_desc *nd, const char *name, int n, int a, int b,
                       int c) {
    nd->name = name;
    nd->ninputs = n;
    nd->inputs[0] = a, nd->inputs[1] = b, nd->inputs[2] = c;
    int out = -1;
    return m40_graph_node(g, nd, &out) == M40_OK ? out : -1;
}

/* Builds and allocates the chain on ctx; table V·C halves, w C floats. */
static m40_status tchain_build(m40_ctx *ctx, int B, int T, int V, const uint16_t *table,
                               const float *w, tchain *t) {
    const int C = TCHAIN_C;
    m40_status st = m40_graph_create(ctx, &t->g);
    if (st != M40_OK) return st;
    m40_graph *g = t->g;
    t->ids = tchain_tensor(g, M40_ROLE_INPUT, "ids", M40_DTYPE_I32, 2, B, T, 0);
    t->pos = tchain_tensor(g, M40_ROLE_INPUT, "pos", M40_DTYPE_I32, 2, B, T, 0);
    t->h = tchain_tensor(g, M40_ROLE_STATE, "h", M40_DTYPE_F32, 3, B, T, C);
    int tab = tchain_tensor(g, M40_ROLE_WEIGHT, "table", M40_DTYPE_F16, 2, V, C, 0);
    int wn = tchain_tensor(g, M40_ROLE_WEIGHT, "w", M40_DTYPE_F32, 1, C, 0, 0);
    if (t->ids < 0 || t->pos < 0 || t->h < 0 || tab < 0 || wn < 0) return M40_ERR_INVALID_ARG;
    if ((st = m40_graph_set_data(g, tab, table, (size_t)V * C * 2)) != M40_OK ||
        (st = m40_graph_set_data(g, wn, w, (size_t)C * 4)) != M40_OK)
        return st;
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_EMBEDDING);
    int e = tchain_node(g, &nd, "embed", 2, t->ids, tab, -1);
    m40_node_desc_init(&nd, M40_OP_RMSNORM);
    nd.alpha = 0.0f;
    int y1 = tchain_node(g, &nd, "norm0", 3, t->h, wn, e);
    m40_node_desc_init(&nd, M40_OP_RMSNORM);
    int y2 = tchain_node(g, &nd, "norm1", 3, t->h, wn, y1);
    m40_node_desc_init(&nd, M40_OP_ROPE);
    nd.heads = 3, nd.head_dim = 16, nd.rope_dims = 8;
    int y3 = tchain_node(g, &nd, "rope", 2, y2, t->pos, -1);
    m40_node_desc_init(&nd, M40_OP_SWIGLU);
    int y4 = tchain_node(g, &nd, "swiglu", 1, y3, -1, -1);
    m40_node_desc_init(&nd, M40_OP_TAKE_LAST);
    t->out = tchain_node(g, &nd, "last", 1, y4, -1, -1);
    if (e < 0 || y1 < 0 || y2 < 0 || y3 < 0 || y4 < 0 || t->out < 0) return M40_ERR_INVALID_ARG;
    /* y2 an output too: not shared with y3, so ROPE runs out of place */
    if ((st = m40_graph_mark_output(g, t->out)) != M40_OK ||
        (st = m40_graph_mark_output(g, y2)) != M40_OK)
        return st;
    return m40_graph_alloc(g);
}

/* Uploads ids and positions, runs, downloads out [B,C/2] and h [B,T,C]. */
static m40_status tchain_run(m40_ctx *ctx, tchain *t, const int32_t *ids, const int32_t *pos,
                             int B, int T, float *out, float *h) {
    m40_tensor *ti, *tp, *to, *th;
    m40_status st;
    if ((st = m40_graph_get_tensor(t->g, t->ids, &ti)) ||
        (st = m40_graph_get_tensor(t->g, t->pos, &tp)) ||
        (st = m40_graph_get_tensor(t->g, t->out, &to)) ||
        (st = m40_graph_get_tensor(t->g, t->h, &th)))
        return st;
    size_t n = (size_t)B * T;
    if ((st = m40_tensor_upload(ctx, ti, ids, n * 4)) ||
        (st = m40_tensor_upload(ctx, tp, pos, n * 4)) || (st = m40_graph_run(t->g)) ||
        (st = m40_tensor_download(ctx, to, out, (size_t)B * TCHAIN_C / 2 * 4)))
        return st;
    return m40_tensor_download(ctx, th, h, n * TCHAIN_C * 4);
}

#endif
