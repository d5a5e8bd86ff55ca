/* The executor: one allocation per region, then runs that call the eager
** op entry points (lib/ops.c) on prebuilt tensor views, so a run allocates
** nothing and, on a GPU, only queues work on the context's stream. */
#include "graph_internal.h"

#include <stdio.h>
#include <string.h>

/* The executor takes what the eager ops take; everything else is refused at
** alloc time rather than half-way through a run. */
static m40_status exec_check(m40_graph *g, const m40__gnode *n) {
    if (!m40_op_runs(n->d.op))
        return m40__err(g->ctx, M40_ERR_UNSUPPORTED,
                        "m40_graph_alloc: node '%s' is a %s, which the planner sizes but "
                        "no kernel runs yet", n->name, m40_op_name(n->d.op));
    if (n->d.op == M40_OP_CONV2D && n->d.groups != 1)
        return m40__err(g->ctx, M40_ERR_UNSUPPORTED,
                        "m40_graph_alloc: node '%s' (conv2d) has groups = %d; the "
                        "executor runs groups = 1 only for now", n->name, n->d.groups);
    if (n->d.op == M40_OP_LINEAR || n->d.op == M40_OP_CONV2D)
        for (int i = 1; i < n->d.ninputs; i++) {
            int t = n->d.inputs[i];
            if (t != M40_NO_TENSOR && g->tensors[t].desc.dtype != M40_DTYPE_F32)
                return m40__err(g->ctx, M40_ERR_UNSUPPORTED,
                                "m40_graph_alloc: node '%s' (%s) has %s %s; the "
                                "executor runs f32 weights only for now", n->name,
                                m40_op_name(n->d.op), m40_dtype_name(g->tensors[t].desc.dtype),
                                i == 1 ? "weights" : "bias");
        }
    return M40_OK;
}

/* The eager conv's descriptor for a CONV2D node. */
m40_conv2d_desc m40__graph_conv_desc(const m40_node_desc *nd) {
    m40_conv2d_desc cd;
    m40_conv2d_desc_init(&cd);
    cd.stride_h = nd->stride[0];
    cd.stride_w = nd->stride[1];
    cd.pad_h = nd->pad[0];
    cd.pad_w = nd->pad[1];
    cd.relu = nd->fuse_relu;
    cd.layout = nd->layout;
    return cd;
}

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
    }
    for (int i = 0; i < g->ntensors && st == M40_OK; i++) {
        m40__gtensor *t = &g->tensors[i];
        if (t->bound) {
            t->t = t->bound;
        } else {
            m40_tensor *reg = t->region >= 0 ? g->region[t->region] : NULL;
            void *p = reg ? (char *)m40_tensor_data(reg) + t->offset : NULL;
            st = m40_tensor_wrap(ctx, &t->desc, loc, p, &t->t);
        }
        if (st == M40_OK && t->init) st = m40_tensor_upload(ctx, t->t, t->init, t->bytes);
    }
#ifdef M40_HAVE_CUDA
    /* The cuBLAS handle (the M40_MATMUL=cublas baseline) and the SGEMM
    ** split-K scratch are made here, so that no run (or capture) allocates. */
    size_t ws = 0;
    for (int n = 0; n < g->nnodes && st == M40_OK && ctx->is_gpu; n++)
        if (g->nodes[n].d.op == M40_OP_LINEAR) {
#ifdef M40_HAVE_CUBLAS
            void *h = NULL;
            if (!ctx->cublas) st = m40__cuda_cublas(ctx, &h);
#endif
            const m40_tensor_desc *x = &g->tensors[g->nodes[n].d.inputs[0]].desc;
            const m40_tensor_desc *w = &g->tensors[g->nodes[n].d.inputs[1]].desc;
            int64_t K = x->shape[x->ndim - 1], M = K ? m40_tensor_desc_numel(x) / K : 0;
            size_t need = m40__cuda_linear_workspace(ctx, (int)M, (int)w->shape[0], (int)K);
            if (need > ws) ws = need;
        }
    /* NHWC convs take their padded copies, Winograd tiles and split-K sums from the same workspace */
    for (int n = 0; n < g->nnodes && st == M40_OK && ctx->is_gpu; n++) {
        const m40_node_desc *nd = &g->nodes[n].d;
        if (nd->op != M40_OP_CONV2D) continue;
        m40_conv2d_desc cd = m40__graph_conv_desc(nd);
        size_t need = m40__conv2d_workspace(ctx, &cd, &g->tensors[nd->inputs[0]].desc,
                                            &g->tensors[nd->inputs[1]].desc,
                                            &g->tensors[nd->output].desc);
        if (need > ws) ws = need;
    }
    void *wsp;
    if (st == M40_OK && ws) st = m40__cuda_workspace(ctx, ws, &wsp);
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
    m40_ctx *ctx = g->ctx;
    m40_tensor *in[M40_NODE_MAX_INPUTS] = {0};
    for (int i = 0; i < n->d.ninputs; i++)
        if (n->d.inputs[i] != M40_NO_TENSOR) in[i] = g->tensors[n->d.inputs[i]].t;
    m40_tensor *y = g->tensors[n->d.output].t;
    switch (n->d.op) {
    case M40_OP_ADD: return m40_add(ctx, in[0], in[1], y);
    case M40_OP_MUL: return m40_mul(ctx, in[0], in[1], y);
    case M40_OP_SCALE: return m40_scale(ctx, in[0], n->d.alpha, y);
    case M40_OP_ACTIVATION: return m40_activation(ctx, n->d.act, in[0], y);
    case M40_OP_SOFTMAX: return m40_softmax(ctx, in[0], y);
    case M40_OP_CONVERT: return m40_convert(ctx, in[0], y);
    case M40_OP_LINEAR: return m40_matmul(ctx, in[0], in[1], in[2], y);
    case M40_OP_CONV2D: {
        m40_conv2d_desc cd = m40__graph_conv_desc(&n->d);
        return m40__conv2d_sel(ctx, &cd, in[0], in[1], NULL, in[2], in[3], y, &n->sel);
    }
    case M40_OP_POOL2D:
        if (n->d.pool == M40_POOL_GLOBAL_AVG) return m40_global_avgpool(ctx, in[0], y, n->d.layout);
        return m40_pool2d(ctx, n->d.pool, n->d.kernel[0], n->d.kernel[1], n->d.stride[0],
                          n->d.stride[1], n->d.pad[0], n->d.pad[1], in[0], y, n->d.layout);
    default:
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s has no kernel yet", m40_op_name(n->d.op));
    }
}

m40_status m40__graph_run_nodes(m40_graph *g) {
    for (int s = 0; s < g->nnodes; s++) {
        const m40__gnode *n = &g->nodes[g->order[s]];
        m40_status st = exec_node(g, n);
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
