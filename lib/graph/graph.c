/* Building a graph: tensors, nodes, bindings. Planning is in planner.c,
** shape rules in shapes.c, execution in exec.c. */
#include "graph_internal.h"
#include "../half.h"

#include <limits.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* m40_op_name, m40_op_inplace, m40_op_runs, m40_node_desc_init: lib/ops/registry.c */

const char *m40_region_name(m40_region r) {
    static const char *const names[] = {"weights", "kv_cache", "workspace", "activations"};
    return (int)r >= 0 && r < M40_REGION_COUNT ? names[r] : "?";
}

uint64_t m40__align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

const char *m40__fmt_bytes(uint64_t b, char *buf, size_t n) {
    const double k = 1024.0;
    if (b >= (uint64_t)1 << 30) snprintf(buf, n, "%.2f GiB", (double)b / (k * k * k));
    else if (b >= (uint64_t)1 << 20) snprintf(buf, n, "%.1f MiB", (double)b / (k * k));
    else if (b >= (uint64_t)1 << 10) snprintf(buf, n, "%.1f KiB", (double)b / k);
    else snprintf(buf, n, "%llu B", (unsigned long long)b);
    return buf;
}

m40_status m40_graph_create(m40_ctx *ctx, m40_graph **out) {
    if (out) *out = NULL;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!out) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_graph_create: out is NULL");
    m40_graph *g = calloc(1, sizeof *g);
    if (!g) return m40__err(ctx, M40_ERR_OOM_HOST, "m40_graph_create: out of host memory");
    g->ctx = ctx;
    m40__ctx_hold(ctx, M40__CHILD_GRAPH); /* lifetime: released by m40_graph_destroy */
    *out = g;
    return M40_OK;
}

void m40__graph_free_views(m40_graph *g) {
    for (int i = 0; i < g->ntensors; i++) {
        if (g->tensors[i].t && g->tensors[i].t != g->tensors[i].bound)
            m40_tensor_destroy(g->tensors[i].t);
        g->tensors[i].t = NULL;
    }
    for (int r = 0; r < M40_REGION_COUNT; r++) {
        m40_tensor_destroy(g->region[r]);
        g->region[r] = NULL;
    }
}

void m40_graph_destroy(m40_graph *g) {
    if (!g) return;
    m40_ctx *ctx = g->ctx;
    /* Valid after m40_ctx_destroy (the context is then closing, not freed):
    ** no public call on ctx here, which would refuse a closing context and
    ** would clear the error a failed call left for its caller to read. */
    m40__ctx_enter(ctx);
#ifdef M40_HAVE_CUDA
    m40__graph_cuda_drop(g);
    if (g->state == M40__G_ALLOCATED && ctx->is_gpu && !ctx->lost)
        (void)m40__cuda_sync(ctx); /* queued runs may still use the regions */
#endif
    m40__graph_free_views(g);
    for (int i = 0; i < g->ntensors; i++) free(g->tensors[i].name);
    for (int i = 0; i < g->nnodes; i++) {
        m40__conv_sel_clear(&g->nodes[i].sel); /* a cuDNN plan */
        free(g->nodes[i].name);
    }
    free(g->tensors);
    free(g->nodes);
    free(g->order);
    free(g);
    m40__ctx_release(ctx, M40__CHILD_GRAPH); /* last: it may free a destroyed context */
}

static m40_status check_mutable(m40_graph *g, const char *fn) {
    if (!g) return M40_ERR_INVALID_ARG;
    m40_status st = m40__ctx_check(g->ctx);
    if (st != M40_OK) return st;
    if (g->state == M40__G_ALLOCATED)
        return m40__err(g->ctx, M40_ERR_STATE,
                        "%s: the graph is allocated and can no longer change", fn);
    g->state = M40__G_BUILD; /* any change invalidates a plan */
    return M40_OK;
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static m40_status add_tensor(m40_graph *g, m40_tensor_role role, const char *name,
                             const m40_tensor_desc *desc, int *id) {
    if (g->ntensors == g->cap_tensors) {
        if (g->cap_tensors > INT_MAX / 2)
            return m40__err(g->ctx, M40_ERR_INVALID_ARG, "graph: more than %d tensors", INT_MAX / 2);
        int cap = g->cap_tensors ? 2 * g->cap_tensors : 64;
        m40__gtensor *p = realloc(g->tensors, (size_t)cap * sizeof *p);
        if (!p) return m40__err(g->ctx, M40_ERR_OOM_HOST, "graph: out of host memory");
        g->tensors = p;
        g->cap_tensors = cap;
    }
    char auto_name[32];
    if (!name || !*name) {
        snprintf(auto_name, sizeof auto_name, "t%d", g->ntensors);
        name = auto_name;
    }
    /* declared descs were checked; inferred ones (shapes.c) are checked here:
    ** a shape over M40_MAX_TENSOR_BYTES or with a negative extent stops now,
    ** so every t->bytes below, and the planner's sums of them, are in range */
    m40_tensor_desc d;
    m40_status st = m40_tensor_desc_make(&d, desc->dtype, desc->ndim, desc->shape);
    if (st == M40_ERR_DTYPE)
        return m40__err(g->ctx, st, "graph: tensor '%s' has invalid dtype %d", name,
                        (int)desc->dtype);
    if (st != M40_OK) {
        char b[96];
        return m40__err(g->ctx, st,
                        "graph: tensor '%s' would be %s %s: ndim %d outside 0..%d, a negative "
                        "extent, or larger than 2^62 bytes (M40_MAX_TENSOR_BYTES)", name,
                        m40_dtype_name(desc->dtype), m40__shape_str(&d, b, sizeof b),
                        desc->ndim, M40_MAX_DIMS);
    }
    m40__gtensor *t = &g->tensors[g->ntensors];
    memset(t, 0, sizeof *t);
    if (!(t->name = dupstr(name)))
        return m40__err(g->ctx, M40_ERR_OOM_HOST, "graph: out of host memory");
    t->role = role;
    t->desc = d;
    t->bytes = (uint64_t)m40_tensor_desc_numel(&d) * m40_dtype_size(d.dtype);
    t->producer = -1;
    t->region = -1;
    t->storage = -1;
    t->shares_with = -1;
    if (id) *id = g->ntensors;
    g->ntensors++;
    return M40_OK;
}

m40_status m40_graph_tensor(m40_graph *g, m40_tensor_role role, const char *name,
                            const m40_tensor_desc *desc, int *id) {
    m40_status st = check_mutable(g, "m40_graph_tensor");
    if (st != M40_OK) return st;
    if ((int)role < 0 || role > M40_ROLE_STATE)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_tensor: bad role %d",
                        (int)role);
    /* strides are ignored: only dtype and shape are checked (in add_tensor) */
    if (!desc) return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_tensor: desc is NULL");
    return add_tensor(g, role, name, desc, id);
}

static m40_status check_id(m40_graph *g, int id, const char *fn) {
    if (id < 0 || id >= g->ntensors)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "%s: tensor id %d is not in the graph "
                        "(%d tensors)", fn, id, g->ntensors);
    return M40_OK;
}

/* A NaN or Inf weight poisons every output it touches (a classifier then
** prints "-nan%"): refuse it here, where the tensor's name is known. One
** pass over the data, once per set_data. */
static m40_status check_finite(m40_graph *g, const m40__gtensor *t, const void *host) {
    uint64_t n = t->bytes / m40_dtype_size(t->desc.dtype);
    uint64_t bad = UINT64_MAX;
    double v = 0;
    /* host data may be misaligned (a safetensors mapping): read by memcpy */
    const unsigned char *p = host;
    if (t->desc.dtype == M40_DTYPE_F32) {
        for (uint64_t i = 0; i < n && bad == UINT64_MAX; i++) {
            float f;
            memcpy(&f, p + 4 * i, 4);
            if (!isfinite(f)) bad = i, v = f;
        }
    } else if (t->desc.dtype == M40_DTYPE_F16) {
        for (uint64_t i = 0; i < n && bad == UINT64_MAX; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            if ((h & 0x7C00u) == 0x7C00u) bad = i, v = m40__f16_to_f32(h);
        }
    }
    if (bad == UINT64_MAX) return M40_OK;
    /* name the element by its index in each dim, outermost first */
    char idx[96];
    size_t k = 0;
    int64_t at[M40_MAX_DIMS] = {0};
    uint64_t r = bad;
    for (int i = t->desc.ndim - 1; i >= 0; i--) {
        at[i] = t->desc.shape[i] ? (int64_t)(r % (uint64_t)t->desc.shape[i]) : 0;
        r = t->desc.shape[i] ? r / (uint64_t)t->desc.shape[i] : 0;
    }
    for (int i = 0; i < t->desc.ndim && k < sizeof idx; i++)
        k += (size_t)snprintf(idx + k, sizeof idx - k, "%s%lld", i ? ", " : "", (long long)at[i]);
    return m40__err(g->ctx, M40_ERR_FORMAT,
                    "m40_graph_set_data: weight '%s' has a non-finite value (%g) at [%s] "
                    "(element %llu of %llu)", t->name, v, idx, (unsigned long long)bad,
                    (unsigned long long)n);
}

m40_status m40_graph_set_data(m40_graph *g, int id, const void *host, size_t nbytes) {
    static const char fn[] = "m40_graph_set_data";
    m40_status st = check_mutable(g, fn);
    if (st != M40_OK || (st = check_id(g, id, fn)) != M40_OK) return st;
    m40__gtensor *t = &g->tensors[id];
    if (t->role != M40_ROLE_WEIGHT && t->role != M40_ROLE_STATE)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                        "%s: '%s' is not a WEIGHT or STATE tensor", fn, t->name);
    if (!host || nbytes != t->bytes)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                        "%s: '%s' needs %llu bytes of host data, got %zu%s", fn, t->name,
                        (unsigned long long)t->bytes, nbytes, host ? "" : " (NULL)");
    if (t->role == M40_ROLE_WEIGHT && (st = check_finite(g, t, host)) != M40_OK) return st;
    t->init = host;
    return M40_OK;
}

m40_status m40_graph_bind(m40_graph *g, int id, m40_tensor *bt) {
    static const char fn[] = "m40_graph_bind";
    m40_status st = check_mutable(g, fn);
    if (st != M40_OK || (st = check_id(g, id, fn)) != M40_OK) return st;
    m40__gtensor *t = &g->tensors[id];
    char what[160];
    snprintf(what, sizeof what, "%s: tensor for '%s'", fn, t->name);
    if ((st = m40__check_tensor(g->ctx, bt, what)) != M40_OK) return st;
    if (bt->desc.dtype != t->desc.dtype)
        return m40__err(g->ctx, M40_ERR_DTYPE, "%s: '%s' is %s, the bound tensor %s", fn,
                        t->name, m40_dtype_name(t->desc.dtype),
                        m40_dtype_name(bt->desc.dtype));
    if (!m40__same_shape(&bt->desc, &t->desc)) {
        char a[96], b[96];
        return m40__err(g->ctx, M40_ERR_SHAPE, "%s: '%s' is %s, the bound tensor %s", fn,
                        t->name, m40__shape_str(&t->desc, a, sizeof a),
                        m40__shape_str(&bt->desc, b, sizeof b));
    }
    if (!m40_tensor_desc_is_contiguous(&bt->desc))
        return m40__err(g->ctx, M40_ERR_UNSUPPORTED, "%s: the tensor for '%s' is strided; "
                        "graph tensors are contiguous", fn, t->name);
    t->bound = bt;
    return M40_OK;
}

m40_status m40_graph_mark_output(m40_graph *g, int id) {
    static const char fn[] = "m40_graph_mark_output";
    m40_status st = check_mutable(g, fn);
    if (st != M40_OK || (st = check_id(g, id, fn)) != M40_OK) return st;
    if (g->tensors[id].role != M40_ROLE_ACTIVATION)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                        "%s: '%s' is not an ACTIVATION (only produced tensors are outputs)",
                        fn, g->tensors[id].name);
    g->tensors[id].is_output = true;
    return M40_OK;
}

m40_status m40_graph_node(m40_graph *g, const m40_node_desc *nd, int *out) {
    static const char fn[] = "m40_graph_node";
    m40_status st = check_mutable(g, fn);
    if (st != M40_OK) return st;
    if (out) *out = -1;
    if (!nd) return m40__err(g->ctx, M40_ERR_INVALID_ARG, "%s: nd is NULL", fn);
    /* the first version with struct_size is this one: nothing smaller is valid */
    if (nd->struct_size < sizeof(m40_node_desc))
        return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                        "%s: nd->struct_size is %zu, this libm40 needs %zu (call "
                        "m40_node_desc_init)", fn, nd->struct_size, sizeof(m40_node_desc));
    if ((int)nd->op < 0 || nd->op >= M40_OP_COUNT)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "%s: unknown op %d", fn, (int)nd->op);
    char auto_name[48];
    const char *name = nd->name;
    if (!name || !*name) {
        snprintf(auto_name, sizeof auto_name, "%s%d", m40_op_name(nd->op), g->nnodes);
        name = auto_name;
    }
    if (nd->ninputs < 0 || nd->ninputs > M40_NODE_MAX_INPUTS)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "%s: node '%s' has %d inputs (0..%d)",
                        fn, name, nd->ninputs, M40_NODE_MAX_INPUTS);
    for (int i = 0; i < nd->ninputs; i++) {
        int id = nd->inputs[i];
        if (id != M40_NO_TENSOR && (id < 0 || id >= g->ntensors))
            return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                            "%s: node '%s' input %d is tensor id %d, not in the graph", fn,
                            name, i, id);
    }
    m40_node_desc d = *nd;
    d.name = name;
    m40_tensor_desc od;
    uint64_t ws = 0;
    if ((st = m40__graph_infer(g, &d, &od, &ws)) != M40_OK) return st;
    if (nd->output != M40_TENSOR_NEW) {
        if ((st = check_id(g, nd->output, fn)) != M40_OK) return st;
        m40__gtensor *o = &g->tensors[nd->output];
        if (o->role != M40_ROLE_ACTIVATION)
            return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                            "%s: node '%s' writes '%s', which is not an ACTIVATION", fn,
                            name, o->name);
        if (o->producer >= 0)
            return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                            "%s: node '%s' writes '%s', already produced by node '%s'", fn,
                            name, o->name, g->nodes[o->producer].name);
        if (o->desc.dtype != od.dtype || !m40__same_shape(&o->desc, &od)) {
            char a[96], b[96];
            return m40__err(g->ctx, o->desc.dtype != od.dtype ? M40_ERR_DTYPE : M40_ERR_SHAPE,
                            "%s: node '%s' (%s) produces %s %s but its output '%s' is "
                            "declared %s %s", fn, name, m40_op_name(nd->op),
                            m40_dtype_name(od.dtype), m40__shape_str(&od, a, sizeof a),
                            o->name, m40_dtype_name(o->desc.dtype),
                            m40__shape_str(&o->desc, b, sizeof b));
        }
    }
    if (g->nnodes == g->cap_nodes) {
        if (g->cap_nodes > INT_MAX / 2)
            return m40__err(g->ctx, M40_ERR_INVALID_ARG, "graph: more than %d nodes", INT_MAX / 2);
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        m40__gnode *p = realloc(g->nodes, (size_t)cap * sizeof *p);
        if (!p) return m40__err(g->ctx, M40_ERR_OOM_HOST, "graph: out of host memory");
        g->nodes = p;
        g->cap_nodes = cap;
    }
    int oid = nd->output;
    if (oid == M40_TENSOR_NEW &&
        (st = add_tensor(g, M40_ROLE_ACTIVATION, name, &od, &oid)) != M40_OK)
        return st;
    m40__gnode *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    if (!(n->name = dupstr(name)))
        return m40__err(g->ctx, M40_ERR_OOM_HOST, "graph: out of host memory");
    n->d = d;
    n->d.name = n->name;
    n->d.output = oid;
    for (int i = nd->ninputs; i < M40_NODE_MAX_INPUTS; i++) n->d.inputs[i] = M40_NO_TENSOR;
    n->workspace = ws;
    g->tensors[oid].producer = g->nnodes;
    g->nnodes++;
    if (out) *out = oid;
    return M40_OK;
}

m40_status m40_graph_find(const m40_graph *g, const char *name, int *id) {
    if (!g || !name || !id) return M40_ERR_INVALID_ARG;
    for (int i = 0; i < g->ntensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0) {
            *id = i;
            return M40_OK;
        }
    return M40_ERR_INVALID_ARG;
}

int m40_graph_get_tensor_count(const m40_graph *g) { return g ? g->ntensors : 0; }
int m40_graph_get_node_count(const m40_graph *g) { return g ? g->nnodes : 0; }

int m40_graph_get_launch_count(const m40_graph *g) {
    return g && g->cuda_exec ? g->cuda_nodes : -1;
}

int m40_graph_get_step_node(const m40_graph *g, int step) {
    if (!g || g->state == M40__G_BUILD || step < 0 || step >= g->nnodes) return -1;
    return g->order[step];
}

m40_status m40_graph_get_tensor_info(const m40_graph *g, int id, m40_graph_tensor_info *ti) {
    if (!g || !ti || id < 0 || id >= g->ntensors) return M40_ERR_INVALID_ARG;
    if (g->state == M40__G_BUILD) return M40_ERR_STATE;
    const m40__gtensor *t = &g->tensors[id];
    memset(ti, 0, sizeof *ti);
    ti->name = t->name;
    ti->role = t->role;
    ti->desc = t->desc;
    ti->bytes = t->bytes;
    ti->bound = t->bound != NULL;
    ti->is_output = t->is_output;
    ti->region = t->region;
    ti->offset = t->offset;
    ti->size = t->size;
    ti->first_step = t->first;
    ti->last_step = t->last;
    ti->shares_with = t->shares_with;
    return M40_OK;
}
