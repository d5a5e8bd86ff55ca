/* A small conv graph for the conv-engine tests: every epilogue the cuDNN
** path handles differently, in either layout (n = batch, c = input channels,
** 15x13 input: odd sizes).
**   node 0 "a": 3x3 s1 p1, c -> 24, bias, ReLU        (fused, z = y)
**   node 1 "b": 1x1 s2 p0, c -> 40, bias              (conv + bias pass)
**   node 2 "c": 3x3 s2 p1, a -> 40, bias, +b, ReLU    (fused, z = residual)
**   node 3 "d": 5x5 s1 p2, c -> 8, no bias, no ReLU   (plain conv)
** Weights are the same on every context (a fixed LCG). */
#ifndef M40_TESTS_CONVNET_H
#define M40_TESTS_CONVNET_H

#include <m40/graph.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cn_net {
    m40_graph *g;
    int in_id, out_id;
    float *host[8]; /* weight data, kept until alloc */
    int nhost;
    m40_status st;
} cn_net;

static float *cn_data(cn_net *n, int64_t count, uint32_t seed, float amp) {
    float *p = malloc((size_t)count * sizeof *p);
    uint32_t s = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < count; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = amp * ((float)(s >> 8) / 8388608.0f - 1.0f);
    }
    n->host[n->nhost++] = p;
    return p;
}

static int cn_weight(cn_net *n, const char *name, int nd, const int64_t *shape, uint32_t seed,
                     float amp) {
    m40_tensor_desc d;
    int id = -1;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, nd, shape);
    if (n->st == M40_OK) n->st = m40_graph_tensor(n->g, M40_ROLE_WEIGHT, name, &d, &id);
    if (n->st == M40_OK) {
        int64_t cnt = m40_tensor_desc_numel(&d);
        n->st = m40_graph_set_data(n->g, id, cn_data(n, cnt, seed, amp), (size_t)cnt * 4);
    }
    return id;
}

static int cn_conv(cn_net *n, const char *name, int x, int cin, int k, int r, int stride,
                   int pad, int bias, int res, int relu, m40_layout lay, uint32_t seed) {
    char wn[64], bn[64];
    snprintf(wn, sizeof wn, "%s.w", name);
    snprintf(bn, sizeof bn, "%s.b", name);
    int64_t ws[4] = {k, cin, r, r}, bs[1] = {k};
    if (lay == M40_LAYOUT_NHWC) ws[1] = r, ws[3] = cin;
    int w = cn_weight(n, wn, 4, ws, seed, 1.0f / (float)(cin * r * r));
    int b = bias ? cn_weight(n, bn, 1, bs, seed + 1, 0.5f) : M40_NO_TENSOR;
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.name = name;
    nd.ninputs = 4;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    nd.inputs[2] = b;
    nd.inputs[3] = res >= 0 ? res : M40_NO_TENSOR;
    nd.stride[0] = nd.stride[1] = stride;
    nd.pad[0] = nd.pad[1] = pad;
    nd.layout = lay;
    nd.fuse_relu = relu;
    int out = -1;
    if (n->st == M40_OK) n->st = m40_graph_node(n->g, &nd, &out);
    return out;
}

/* Builds (not plans) the graph; n->st says whether it worked. */
static void cn_build(m40_ctx *ctx, m40_layout lay, int batch, int c, cn_net *n) {
    memset(n, 0, sizeof *n);
    n->st = m40_graph_create(ctx, &n->g);
    int64_t xs[4] = {batch, c, 15, 13};
    if (lay == M40_LAYOUT_NHWC) xs[1] = 15, xs[2] = 13, xs[3] = c;
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 4, xs);
    if (n->st == M40_OK) n->st = m40_graph_tensor(n->g, M40_ROLE_INPUT, "x", &d, &n->in_id);
    int a = cn_conv(n, "a", n->in_id, c, 24, 3, 1, 1, 1, -1, 1, lay, 1);
    int b = cn_conv(n, "b", n->in_id, c, 40, 1, 2, 0, 1, -1, 0, lay, 2);
    int cc = cn_conv(n, "c", a, 24, 40, 3, 2, 1, 1, b, 1, lay, 3);
    n->out_id = cn_conv(n, "d", cc, 40, 8, 5, 1, 2, 0, -1, 0, lay, 4);
    if (n->st == M40_OK) n->st = m40_graph_mark_output(n->g, n->out_id);
}

static void cn_free_host(cn_net *n) {
    for (int i = 0; i < n->nhost; i++) free(n->host[i]);
    n->nhost = 0;
}

static void cn_free(cn_net *n) {
    cn_free_host(n);
    m40_graph_destroy(n->g);
    n->g = NULL;
}

#endif
