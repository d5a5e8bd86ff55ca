/* The executor: one allocation per region, then runs that go through each
** op's entry in the registry (lib/ops/), as the eager calls do, on prebuilt
** tensor views, so a run allocates nothing and, on a GPU, only queues work
** on the context's stream. */
#include "graph_internal.h"
#include "../ops/op.h"

#include <stdio.h>
#include <string.h>

/* The executor runs what the eager ops run; everything else is refused at
** alloc time rather than half-way through a run. */
static m40_status exec_check(m40_graph *g, const m40__gnode *n) {
    const m40__op_def *def = m40__op_get(n->d.op);
    if (!def->run_cpu)
        return m40__err(g->ctx, M40_ERR_UNSUPPORTED,
                        "m40_graph_alloc: node '%s' is a %s, which the planner sizes but "
                        "no kernel runs yet", n->name, def->name);
    if (!def->run_check) return M40_OK;
    char fn[160];
    snprintf(fn, sizeof fn, "m40_graph_alloc: node '%s' (%s)", n->name, def->name);
    m40__op_call c;
    m40__graph_node_call(g, &n->d, fn, &c);
    return def->run_check(&c, &g->tensors[n->d.output].desc);
}

/* The eager conv's descriptor for a CONV2D node. */
m40_conv2d_desc m40__graph_conv_desc(const m40_node_desc *nd) {
    return m40__conv2d_desc_of(nd);
}

#ifdef M40_HAVE_CUDA
/* The handles every op needs (cuBLAS) and the largest workspace, by each
** op's own rule with this GPU's SM count (the launchers' figures), are
** made here, so that no run (or capture) allocates. */
static m40_status reserve_gpu(m40_graph *g) {
    m40_ctx *ctx = g->ctx;
    m40_status st;
    uint64_t ws = 0;
    for (int n = 0; n < g->nnodes; n++) {
        const m40__gnode *gn = &g->nodes[n];
        const m40__op_def *def = m40__op_get(gn->d.op);
        char fn[160];
        snprintf(fn, sizeof fn, "m40_graph_alloc: node '%s' (%s)", gn->name, def->name);
        m40__op_call c;
        m40__graph_node_call(g, &gn->d, fn, &c);
        if (def->prepare && (st = def->prepare(ctx, &c)) != M40_OK) return st;
        uint64_t need = 0;
        if (def->workspace &&
            (st = def->workspace(&c, &g->tensors[gn->d.output].desc, ctx->sm_count, &need)))
            return st;
        if (need > ws) ws = need;
    }
    void *wsp;
    return ws ? m40__cuda_workspace(ctx, (size_t)ws, &wsp) : M40_OK;
}
#endif

m40_status m40_graph_alloc(m40_graph *g) {
    if (!g) return M40_ERR_INVALID_ARG;
    m40_ctx *ctx = g->ctx;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (g->state == M40__G_ALLOCATED)
        return m40__err(ctx, M40_ERR_STATE, "m40_graph_alloc: already allocated");
    if (g->state == M40__G_BUILD && (st = m40_graph_plan(g, NULL, NULL)) != M40_OK) return st;
    for (int n = 0; n < g->nnodes; n++)
        if ((st = exec_check(g, &g->nodes[n])) != M40_OK) return st;
    m40_location loc = ctx->is_gpu ? M40_LOC_DEVICE : M40_LOC_HOST;
    for (int r = 0; r < M40_REGION_COUNT; r++) {
        uint64_t bytes = g->info.region_bytes[r];
        if (!bytes) continue;
        m40_tensor_desc d;
        int64_t shape[1] = {(int64_t)bytes};
        m40_tensor_desc_make(&d, M40_DTYPE_I8, 1, shape);
        if ((st = m40_tensor_create(ctx, &d, loc, &g->region[r])) != M40_OK) {
            char msg[M40__ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", m40_errmsg(ctx));
            m40__graph_free_views(g);
            return m40__err(ctx, st, "m40_graph_alloc: region %s: %s",
                            m40_region_name((m40_region)r), msg);
        }
        /* STATE tensors start as zeros: a KV cache's positions that were
        ** never appended are still read (times a zero weight) by attention
        ** tiles, and must not be NaN. On a GPU every region starts as
        ** zeros: the conv engines are timed below, on the graph's own
        ** tensors, before the caller has uploaded anything (compute-sanitizer
        ** initcheck found cuDNN reading those uninitialized bytes); one
        ** memset at device speed (12 GB: ~42 ms on an M40) */
        if (r == M40_REGION_KV || ctx->is_gpu) {
            void *p = m40_tensor_get_data(g->region[r]);
#ifdef M40_HAVE_CUDA
            if (ctx->is_gpu) st = m40__cuda_memset(ctx, p, 0, (size_t)bytes);
            else
#endif
                memset(p, 0, (size_t)bytes);
            if (st != M40_OK) {
                m40__graph_free_views(g);
                return st;
            }
        }
    }
    for (int i = 0; i < g->ntensors && st == M40_OK; i++) {
        m40__gtensor *t = &g->tensors[i];
        if (t->bound) {
            t->t = t->bound;
        } else {
            m40_tensor *reg = t->region >= 0 ? g->region[t->region] : NULL;
            void *p = reg ? (char *)m40_tensor_get_data(reg) + t->offset : NULL;
            st = m40_tensor_wrap(ctx, &t->desc, loc, p, &t->t);
        }
        if (st == M40_OK && t->init) st = m40_tensor_upload(ctx, t->t, t->init, t->bytes);
    }
#ifdef M40_HAVE_CUDA
    if (st == M40_OK && ctx->is_gpu) st = reserve_gpu(g);
#endif
    /* each conv node's engine (ours / cuDNN / timed), kept for every run */
    if (st == M40_OK) st = m40__graph_conv_settle(g);
    if (st != M40_OK) {
        m40__graph_free_views(g);
        return st;
    }
    for (int i = 0; i < g->ntensors; i++) g->tensors[i].init = NULL;
    g->state = M40__G_ALLOCATED;
    return M40_OK;
}

m40_status m40_graph_get_tensor(m40_graph *g, int id, m40_tensor **t) {
    if (!g) return M40_ERR_INVALID_ARG;
    if (!t || id < 0 || id >= g->ntensors)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_get_tensor: bad id %d or NULL", id);
    if (g->state != M40__G_ALLOCATED)
        return m40__err(g->ctx, M40_ERR_STATE, "m40_graph_get_tensor: call m40_graph_alloc first");
    *t = g->tensors[id].t;
    return M40_OK;
}

static m40_status exec_node(m40_graph *g, const m40__gnode *n) {
    const m40_tensor *in[M40_NODE_MAX_INPUTS] = {0};
    for (int i = 0; i < n->d.ninputs; i++)
        if (n->d.inputs[i] != M40_NO_TENSOR) in[i] = g->tensors[n->d.inputs[i]].t;
    const m40__op_def *def = m40__op_get(n->d.op);
    return m40__op_eager(g->ctx, def->name, &n->d, in, g->tensors[n->d.output].t,
                         n->d.op == M40_OP_CONV2D ? &n->sel : NULL);
}

static m40_status run_nodes(m40_graph *g);
/* the graph's attention key bound is the context's while its nodes run
** (lib/ops/attention.c reads it; eager ops see 0) */
m40_status m40__graph_run_nodes(m40_graph *g) {
    const int64_t k0 = g->ctx->attn_keys;
    g->ctx->attn_keys = g->attn_keys;
    const m40_status st = run_nodes(g);
    g->ctx->attn_keys = k0;
    return st;
}

int m40__l2_hint = 1; /* lib/internal.h */

/* What step s + 1's op would like to find in L2 (m40__op_def.l2_hint): its
** data and *bytes (its span within its storage), or NULL and 0. The rule on
** any device; run_nodes hands it to step s on a GPU (ctx->l2_hint). */
const void *m40__graph_l2_hint(const struct m40_graph *g, int s, int64_t *bytes) {
    *bytes = 0;
    if (m40__l2_hint <= 0 || s < 0 || s + 1 >= g->nnodes) return NULL;
    const m40__gnode *n = &g->nodes[g->order[s + 1]];
    const m40__op_def *def = m40__op_get(n->d.op);
    if (!def->l2_hint) return NULL;
    const m40_tensor *in[M40_NODE_MAX_INPUTS] = {0};
    for (int i = 0; i < n->d.ninputs; i++)
        if (n->d.inputs[i] != M40_NO_TENSOR) in[i] = g->tensors[n->d.inputs[i]].t;
    const m40_tensor *t = def->l2_hint(&n->d, in);
    if (!t || !t->data) return NULL;
    const size_t off = (size_t)((const char *)t->data - (const char *)t->base);
    size_t nb = (size_t)m40_tensor_desc_numel(&t->desc) * m40_dtype_size(t->desc.dtype);
    if (off > t->storage_bytes) return NULL;
    if (nb > t->storage_bytes - off) nb = t->storage_bytes - off;
    *bytes = (int64_t)nb;
    return t->data;
}

static m40_status run_nodes(m40_graph *g) {
    for (int s = 0; s < g->nnodes; s++) {
        const m40__gnode *n = &g->nodes[g->order[s]];
        if (g->ctx->is_gpu) g->ctx->l2_hint = m40__graph_l2_hint(g, s, &g->ctx->l2_hint_bytes);
        m40_status st = exec_node(g, n);
        g->ctx->l2_hint = NULL, g->ctx->l2_hint_bytes = 0; /* eager calls see none */
        if (st != M40_OK) {
            char msg[M40__ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", m40_errmsg(g->ctx));
            return m40__err(g->ctx, st, "m40_graph_run: node '%s' (%s, step %d): %s", n->name,
                            m40_op_name(n->d.op), s, msg);
        }
        if (g->checks && (st = m40__graph_check_node(g, s)) != M40_OK) return st;
    }
    return M40_OK;
}

m40_status m40_graph_run(m40_graph *g) {
    if (!g) return M40_ERR_INVALID_ARG;
    m40_status st = m40__ctx_check(g->ctx);
    if (st != M40_OK) return st;
    if (g->state != M40__G_ALLOCATED)
        return m40__err(g->ctx, M40_ERR_STATE, "m40_graph_run: call m40_graph_alloc first");
#ifdef M40_HAVE_CUDA
    if (g->cuda_exec) return m40__graph_cuda_replay(g);
#endif
    return m40__graph_run_nodes(g);
}

m40_status m40_graph_set_attention_keys(m40_graph *g, int64_t keys) {
    if (!g) return M40_ERR_INVALID_ARG;
    if (keys < 0)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                        "m40_graph_set_attention_keys: keys %lld (0: no bound, else >= 1)", (long long)keys);
#ifdef M40_HAVE_CUDA
    if (keys != g->attn_keys) m40__graph_cuda_drop(g); /* its kernels were chosen for the old bound */
#endif
    g->attn_keys = keys;
    return M40_OK;
}

m40_status m40_graph_capture(m40_graph *g, int enable) {
    if (!g) return M40_ERR_INVALID_ARG;
    m40_status st = m40__ctx_check(g->ctx);
    if (st != M40_OK) return st;
    if (g->state != M40__G_ALLOCATED)
        return m40__err(g->ctx, M40_ERR_STATE, "m40_graph_capture: call m40_graph_alloc first");
#ifdef M40_HAVE_CUDA
    if (!enable) {
        m40__graph_cuda_drop(g);
        return M40_OK;
    }
    for (int i = 0; g->ctx->is_gpu && i < g->nnodes; i++) {
        const m40__op_def *od = m40__op_get(g->nodes[i].d.op);
        const char *why = od && od->uncapturable ? od->uncapturable(&g->nodes[i].d) : NULL;
        if (why)
            return m40__err(g->ctx, M40_ERR_UNSUPPORTED, "m40_graph_capture: node '%s' is %s, "
                            "which a CUDA graph cannot hold", g->nodes[i].name ?
                            g->nodes[i].name : "?", why);
    }
    if (g->ctx->is_gpu) return m40__graph_cuda_capture(g);
#else
    if (!enable) return M40_OK;
#endif
    return m40__err(g->ctx, M40_ERR_NO_DEVICE,
                    "m40_graph_capture: CUDA graphs need a GPU context%s",
#ifdef M40_HAVE_CUDA
                    ""
#else
                    " (this libm40 was built without CUDA)"
#endif
    );
}
