/* The model builders' shared helpers: see build.h. */
#include "build.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *m40_wformat_name(m40_wformat f) {
    static const char *const names[] = {"fp32", "fp16", "int8", "int4", "int4g128"};
    return (int)f >= 0 && f < M40_WFMT_COUNT ? names[f] : "?";
}

int m40__mb_fail(m40__mb *b, m40_status st, const char *fmt, ...) {
    if (b->st != M40_OK) return -1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    b->st = st;
    m40__err(b->ctx, st, "%s: %s", b->fn, msg);
    return -1;
}

/* A graph call failed: its message is on the context; say where. */
static int graph_fail(m40__mb *b, m40_status st, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", m40_errmsg(b->ctx)); /* m40__err must not read its own buffer */
    return m40__mb_fail(b, st, "%s: %s", what ? what : "graph", msg);
}

int m40__mb_tensor(m40__mb *b, m40_tensor_role role, const char *name, m40_dtype dt, int ndim,
                   const int64_t *shape) {
    if (b->st != M40_OK) return -1;
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, dt, ndim, shape);
    int id = -1;
    m40_status st = m40_graph_tensor(b->g, role, name, &d, &id);
    return st == M40_OK ? id : graph_fail(b, st, name);
}

int m40__mb_weight(m40__mb *b, const char *name, m40_dtype dt, int ndim, const int64_t *shape,
                   uint64_t numel) {
    if (numel == 0) {
        numel = 1;
        for (int i = 0; i < ndim; i++) numel *= (uint64_t)shape[i];
    }
    int id = m40__mb_tensor(b, M40_ROLE_WEIGHT, name, dt, ndim, shape);
    if (id >= 0) b->params += numel;
    return id;
}

int m40__mb_node(m40__mb *b, const m40_node_desc *nd) {
    if (b->st != M40_OK) return -1;
    int out = -1;
    m40_status st = m40_graph_node(b->g, nd, &out);
    return st == M40_OK ? out : graph_fail(b, st, nd->name);
}

int m40__mb_op(m40__mb *b, m40_op op, const char *name, int x, int y) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, op);
    nd.name = name;
    nd.ninputs = y >= 0 ? 2 : 1;
    nd.inputs[0] = x;
    nd.inputs[1] = y;
    return m40__mb_node(b, &nd);
}

void m40__mb_output(m40__mb *b, int id) {
    if (b->st != M40_OK) return;
    m40_status st = m40_graph_mark_output(b->g, id);
    if (st != M40_OK) graph_fail(b, st, "output");
}
