/* The graph's conv engines: per-graph and per-node knobs, the settle step
** at m40_graph_alloc (cuDNN plans, AUTO timing of both engines), re-tuning
** and its report. Uses the conv engine (lib/conv_engine/), which knows
** nothing of graphs. */
#include "graph_internal.h"

#include <stdio.h>
#include <string.h>

/* cuDNN may take this much scratch even when our kernels need less. */
#define M40__CUDNN_WS_MIN ((size_t)64 << 20)
/* runs timed per engine and conv when tuning (after one warm-up) */
#define M40__TUNE_REPS 5

static bool is_conv_node(const m40_graph *g, int node) {
    return node >= 0 && node < g->nnodes && g->nodes[node].d.op == M40_OP_CONV2D;
}

m40_status m40_graph_set_conv_engine(m40_graph *g, int node, m40_conv_engine e) {
    static const char fn[] = "m40_graph_set_conv_engine";
    if (!g) return M40_ERR_INVALID_ARG;
    m40_status st = m40__ctx_check(g->ctx);
    if (st != M40_OK) return st;
    if (!m40__conv_engine_valid(e))
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "%s: unknown engine %d (ours, cudnn, auto)",
                        fn, (int)e);
    if (node != -1 && !is_conv_node(g, node))
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "%s: node %d is %s", fn, node,
                        node < 0 || node >= g->nnodes ? "out of range" : "not a conv2d");
    if (g->state == M40__G_ALLOCATED)
        return m40__err(g->ctx, M40_ERR_STATE,
                        "%s: the graph is allocated; set engines before m40_graph_alloc", fn);
    if (e == M40_CONV_ENGINE_CUDNN) {
        const char *why = m40__cudnn_refusal(g->ctx);
        if (why) return m40__err(g->ctx, M40_ERR_UNSUPPORTED, "%s: %s", fn, why);
    }
    if (node == -1) g->conv_engine = e;
    else g->nodes[node].conv_engine = e;
    return M40_OK;
}

m40_status m40_graph_find_node(const m40_graph *g, const char *name, int *node) {
    if (!g) return M40_ERR_INVALID_ARG;
    m40_status st = m40__ctx_check(g->ctx);
    if (st != M40_OK) return st;
    if (!name || !node)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_find_node: NULL argument");
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0) {
            *node = i;
            return M40_OK;
        }
    return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_find_node: no node named '%s'", name);
}

/* The node's setting, else the graph's, else the context's, else OURS. */
static m40_conv_engine resolve(const m40_graph *g, const m40__gnode *n) {
    if (n->conv_engine != M40_CONV_ENGINE_DEFAULT) return n->conv_engine;
    if (g->conv_engine != M40_CONV_ENGINE_DEFAULT) return g->conv_engine;
    return m40_ctx_get_conv_engine(g->ctx);
}

/* x, w, bias, residual and y of conv node n, and its sizes. */
static void conv_operands(const m40_graph *g, const m40__gnode *n, const m40_tensor *t[5],
                          m40__conv_dims *dm) {
    const m40_node_desc *nd = &n->d;
    for (int i = 0; i < 4; i++)
        t[i] = i < nd->ninputs && nd->inputs[i] != M40_NO_TENSOR ? g->tensors[nd->inputs[i]].t : NULL;
    t[4] = g->tensors[nd->output].t;
    const int64_t *xs = g->tensors[nd->inputs[0]].desc.shape, *ws = g->tensors[nd->inputs[1]].desc.shape;
    const int64_t *ys = g->tensors[nd->output].desc.shape;
    bool nhwc = nd->layout == M40_LAYOUT_NHWC;
    *dm = (m40__conv_dims){(int)xs[0], (int)(nhwc ? xs[3] : xs[1]), (int)(nhwc ? xs[1] : xs[2]),
                           (int)(nhwc ? xs[2] : xs[3]), (int)ws[0], (int)(nhwc ? ws[1] : ws[2]),
                           (int)(nhwc ? ws[2] : ws[3]), (int)(nhwc ? ys[1] : ys[2]),
                           (int)(nhwc ? ys[2] : ys[3])};
}

#ifdef M40_HAVE_CUDNN
/* The last error on ctx, saved so that a cuDNN failure AUTO swallows does
** not stay behind as the context's "last error". */
typedef struct saved_err {
    m40_status st;
    char msg[M40__ERRMSG_MAX];
} saved_err;

static void save_err(const m40_ctx *ctx, saved_err *s) {
    s->st = ctx->last_status;
    memcpy(s->msg, ctx->errmsg, sizeof s->msg);
}

static void restore_err(m40_ctx *ctx, const saved_err *s) {
    ctx->last_status = s->st;
    memcpy(ctx->errmsg, s->msg, sizeof s->msg);
}
#endif

#ifdef M40_HAVE_CUDA
/* Settles one conv node on a GPU; *keep grows to the scratch it needs. */
static m40_status settle_gpu(m40_graph *g, m40__gnode *n, size_t ws_limit, size_t *keep) {
    m40__conv_sel *sel = &n->sel;
    if (sel->asked == M40_CONV_ENGINE_OURS) return M40_OK;
#ifndef M40_HAVE_CUDNN
    (void)g; (void)ws_limit; (void)keep;
    snprintf(sel->note, sizeof sel->note, "%s", "cuDNN: not built in");
    return M40_OK; /* AUTO without cuDNN: ours, no error (CUDNN was refused when set) */
#else
    m40_ctx *ctx = g->ctx;
    const m40_tensor *t[5];
    m40__conv_dims dm;
    conv_operands(g, n, t, &dm);
    m40_conv2d_desc cd = m40__graph_conv_desc(&n->d);
    const float *bias = t[2] ? t[2]->data : NULL, *res = t[3] ? t[3]->data : NULL;
    saved_err se;
    save_err(ctx, &se);
    m40_status st = m40__cudnn_plan(ctx, &dm, &cd, t[0]->data, t[1]->data, NULL, bias, res,
                                    t[4]->data, ws_limit, 1, &sel->cudnn);
    if (st != M40_OK) {
        if (sel->asked == M40_CONV_ENGINE_CUDNN || ctx->lost) {
            char msg[M40__ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", m40_errmsg(ctx));
            return m40__err(ctx, st, "node '%s' (conv2d, engine cudnn): %s", n->name, msg);
        }
        snprintf(sel->note, sizeof sel->note, "%.159s", m40_errmsg(ctx));
        restore_err(ctx, &se);
        return M40_OK;
    }
    m40__cudnn_plan_info(sel->cudnn, &sel->algo, &sel->cudnn_ws, &sel->fused);
    if (sel->asked == M40_CONV_ENGINE_CUDNN) {
        sel->engine = M40_CONV_ENGINE_CUDNN;
        if (sel->cudnn_ws > *keep) *keep = sel->cudnn_ws;
        return M40_OK;
    }
    /* AUTO: time both, keep the faster */
    m40__conv_sel ours = {.asked = M40_CONV_ENGINE_OURS, .engine = M40_CONV_ENGINE_OURS};
    m40__conv_sel cud = {.asked = M40_CONV_ENGINE_CUDNN, .engine = M40_CONV_ENGINE_CUDNN,
                         .cudnn = sel->cudnn};
    st = m40__conv_time(ctx, &cd, t[0], t[1], t[2], t[3], (m40_tensor *)t[4], &ours,
                        M40__TUNE_REPS, &sel->ours_ms);
    if (st != M40_OK) return st;
    st = m40__conv_time(ctx, &cd, t[0], t[1], t[2], t[3], (m40_tensor *)t[4], &cud,
                        M40__TUNE_REPS, &sel->cudnn_ms);
    if (st != M40_OK) {
        if (ctx->lost) return st;
        snprintf(sel->note, sizeof sel->note, "cuDNN failed when timed: %.120s", m40_errmsg(ctx));
        restore_err(ctx, &se);
        m40__cudnn_plan_free(sel->cudnn);
        sel->cudnn = NULL;
        sel->cudnn_ms = 0;
        return M40_OK;
    }
    if (sel->cudnn_ms < sel->ours_ms) {
        sel->engine = M40_CONV_ENGINE_CUDNN;
        if (sel->cudnn_ws > *keep) *keep = sel->cudnn_ws;
        snprintf(sel->note, sizeof sel->note, "cuDNN %.2fx faster", sel->ours_ms / sel->cudnn_ms);
    } else {
        m40__cudnn_plan_free(sel->cudnn);
        sel->cudnn = NULL;
        snprintf(sel->note, sizeof sel->note, "ours %.2fx faster",
                 sel->ours_ms > 0 ? sel->cudnn_ms / sel->ours_ms : 1.0);
    }
    return M40_OK;
#endif
}
#endif

m40_status m40__graph_conv_settle(m40_graph *g) {
    m40_ctx *ctx = g->ctx;
#ifdef M40_HAVE_CUDA
    size_t base = ctx->is_gpu ? ctx->ws_bytes : 0, keep = base;
    size_t limit = base > M40__CUDNN_WS_MIN ? base : M40__CUDNN_WS_MIN;
#endif
    m40_status st = M40_OK;
    for (int s = 0; s < g->nnodes && st == M40_OK; s++) {
        m40__gnode *n = &g->nodes[g->order ? g->order[s] : s];
        if (n->d.op != M40_OP_CONV2D) continue;
        m40__conv_sel_clear(&n->sel);
        n->sel.asked = resolve(g, n);
        n->sel.engine = M40_CONV_ENGINE_OURS;
        if (!ctx->is_gpu) {
            if (n->sel.asked != M40_CONV_ENGINE_OURS)
                snprintf(n->sel.note, sizeof n->sel.note, "CPU context: the reference runs");
            continue;
        }
#ifdef M40_HAVE_CUDA
        st = settle_gpu(g, n, limit, &keep);
#endif
    }
#ifdef M40_HAVE_CUDA
    /* give back what cuDNN's algorithm search took beyond the choices' needs */
    if (st == M40_OK && ctx->is_gpu) st = m40__cuda_workspace_trim(ctx, keep);
#endif
    return st;
}

m40_status m40_graph_tune(m40_graph *g) {
    if (!g) return M40_ERR_INVALID_ARG;
    m40_status st = m40__ctx_check(g->ctx);
    if (st != M40_OK) return st;
    if (g->state != M40__G_ALLOCATED)
        return m40__err(g->ctx, M40_ERR_STATE, "m40_graph_tune: call m40_graph_alloc first");
#ifdef M40_HAVE_CUDA
    m40__graph_cuda_drop(g); /* it recorded the old choices */
    if (g->ctx->is_gpu && (st = m40_ctx_sync(g->ctx)) != M40_OK) return st;
#endif
    st = m40__graph_conv_settle(g);
    if (st != M40_OK) {
        char msg[M40__ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", m40_errmsg(g->ctx));
        return m40__err(g->ctx, st, "m40_graph_tune: %s", msg);
    }
    return M40_OK;
}

m40_status m40_graph_get_conv_choice(const m40_graph *g, int node, m40_conv_choice *c) {
    if (!g) return M40_ERR_INVALID_ARG;
    m40_status st = m40__ctx_check(g->ctx);
    if (st != M40_OK) return st;
    if (!c || !is_conv_node(g, node))
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_get_conv_choice: %s",
                        !c ? "NULL choice" : "node out of range or not a conv2d");
    if (g->state != M40__G_ALLOCATED)
        return m40__err(g->ctx, M40_ERR_STATE, "m40_graph_get_conv_choice: call m40_graph_alloc first");
    const m40__gnode *n = &g->nodes[node];
    const m40__conv_sel *sel = &n->sel;
    memset(c, 0, sizeof *c);
    c->node_name = n->name;
    const m40_tensor *t[5];
    m40__conv_dims dm;
    conv_operands(g, n, t, &dm);
    snprintf(c->shape, sizeof c->shape, "N%d C%d %dx%d -> K%d %dx%d, %dx%d s%d p%d%s%s%s", dm.N,
             dm.C, dm.H, dm.W, dm.K, dm.P, dm.Q, dm.R, dm.S, n->d.stride[0], n->d.pad[0],
             t[2] ? " +bias" : "", t[3] ? " +res" : "", n->d.fuse_relu ? " relu" : "");
    c->asked = sel->asked;
    c->engine = sel->engine;
    c->ours_ms = sel->ours_ms;
    c->cudnn_ms = sel->cudnn_ms;
    c->cudnn_algo = sel->algo;
    c->cudnn_algo_name = sel->algo >= 0 ? m40__cudnn_algo_name(sel->algo) : "";
    c->cudnn_workspace = sel->cudnn_ws;
    c->cudnn_fused = sel->fused;
    snprintf(c->note, sizeof c->note, "%s", sel->note);
    return M40_OK;
}
