/* The graph's non-finite check mode (m40_graph_set_check, issue 15): after
** each node, the executor (m40__graph_run_nodes in exec.c) calls
** m40__graph_check_node, which scans the node's output for NaN / Inf and
** stops the run at the first node that produced one, naming it.
** CPU: a direct scan of the host tensor. GPU: m40k_check_nonfinite
** (kernels/check.cu) reduces the output to (first bad index, count) in 16
** bytes of the context workspace, which are downloaded (so each node
** synchronizes); when the workspace cannot give those bytes, the output is
** downloaded and scanned on the host. Only f32 and f16 are scanned. */
#include "graph_internal.h"
#include "../half.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef M40_HAVE_CUDA
#include "../../kernels/check.h"

#include <cuda_runtime_api.h>
#endif

m40_status m40_graph_set_check(m40_graph *g, unsigned checks) {
    if (!g) return M40_ERR_INVALID_ARG;
    if (checks & ~(unsigned)M40_CHECK_NONFINITE)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                        "m40_graph_set_check: unknown check bits 0x%x (M40_CHECK_NONFINITE = 1)",
                        checks & ~(unsigned)M40_CHECK_NONFINITE);
#ifdef M40_HAVE_CUDA
    /* a replay would skip the checks: plain runs from now on */
    if (checks) m40__graph_cuda_drop(g);
#endif
    g->checks = checks;
    memset(&g->check_found, 0, sizeof g->check_found);
    g->check_found.node = -1;
    g->check_found.node_name = "";
    return M40_OK;
}

m40_status m40_graph_get_check_report(const m40_graph *g, m40_check_report *r) {
    if (!g || !r) return M40_ERR_INVALID_ARG;
    *r = g->check_found;
    if (!r->found) {
        r->node = -1;
        r->node_name = "";
    }
    return M40_OK;
}

static int bad_f32(const void *p, int64_t i) {
    uint32_t u;
    memcpy(&u, (const char *)p + 4 * i, 4);
    return (u & 0x7f800000u) == 0x7f800000u;
}
static int bad_f16(const void *p, int64_t i) {
    uint16_t h;
    memcpy(&h, (const char *)p + 2 * i, 2);
    return (h & 0x7c00u) == 0x7c00u;
}
static float value_at(const void *p, int is_f16, int64_t i) {
    if (is_f16) {
        uint16_t h;
        memcpy(&h, (const char *)p + 2 * i, 2);
        return m40__f16_to_f32(h);
    }
    float f;
    memcpy(&f, (const char *)p + 4 * i, 4);
    return f;
}

/* Host scan of n contiguous elements: first bad index (-1: none), count, value. */
static void scan_host(const void *p, int is_f16, int64_t n, int64_t *first, int64_t *count,
                      float *value) {
    *first = -1;
    *count = 0;
    for (int64_t i = 0; i < n; i++)
        if (is_f16 ? bad_f16(p, i) : bad_f32(p, i)) {
            if (*first < 0) *first = i;
            ++*count;
        }
    if (*first >= 0) *value = value_at(p, is_f16, *first);
}

#ifdef M40_HAVE_CUDA
/* The same on a device tensor: the reduction kernel, or a download when the
** workspace has no 16 bytes to give. */
static m40_status scan_device(m40_ctx *ctx, const void *p, int is_f16, int64_t n,
                              int64_t *first, int64_t *count, float *value) {
    size_t bytes = 2 * sizeof(unsigned long long);
    void *ws = NULL;
    m40_status st = m40__cuda_scratch(ctx, &bytes, &ws);
    if (st != M40_OK) return st;
    size_t esz = is_f16 ? 2 : 4;
    if (ws) {
        int e = m40k_check_nonfinite(ctx->stream, p, n, is_f16, (unsigned long long *)ws);
        if (e) return m40__cuda_check(ctx, e, "m40_graph_run: non-finite check kernel");
        unsigned long long res[2];
        if ((st = m40__cuda_memcpy(ctx, res, ws, sizeof res, 1)) != M40_OK) return st;
        *first = res[1] ? (int64_t)res[0] : -1;
        *count = (int64_t)res[1];
        if (*first >= 0) {
            unsigned char v[4];
            if ((st = m40__cuda_memcpy(ctx, v, (const char *)p + esz * (size_t)*first, esz, 1)) !=
                M40_OK)
                return st;
            *value = value_at(v, is_f16, 0);
        }
        return M40_OK;
    }
    void *h = malloc(esz * (size_t)n);
    if (!h)
        return m40__err(ctx, M40_ERR_OOM_HOST,
                        "m40_graph_run: non-finite check: no host memory to download %lld "
                        "elements", (long long)n);
    st = m40__cuda_memcpy(ctx, h, p, esz * (size_t)n, 1);
    if (st == M40_OK) scan_host(h, is_f16, n, first, count, value);
    free(h);
    return st;
}
#endif

m40_status m40__graph_check_node(m40_graph *g, int step) {
    m40_ctx *ctx = g->ctx;
    m40_check_report *r = &g->check_found;
    if (step == 0) { /* a new run: forget the last one's finding */
        memset(r, 0, sizeof *r);
        r->node = -1;
        r->node_name = "";
    }
    if (!(g->checks & M40_CHECK_NONFINITE)) return M40_OK;
    int node = g->order[step];
    const m40__gnode *n = &g->nodes[node];
    const m40__gtensor *gt = &g->tensors[n->d.output];
    const m40_tensor *t = gt->t;
    m40_dtype dt = gt->desc.dtype;
    if (!t || (dt != M40_DTYPE_F32 && dt != M40_DTYPE_F16)) return M40_OK;
    int is_f16 = dt == M40_DTYPE_F16;
    int64_t numel = m40_tensor_desc_numel(&gt->desc), first = -1, count = 0;
    float value = 0;
    m40_status st = M40_OK;
    if (m40_tensor_get_location(t) == M40_LOC_HOST) {
        scan_host(m40_tensor_get_data(t), is_f16, numel, &first, &count, &value);
    } else {
#ifdef M40_HAVE_CUDA
        /* inside a stream capture nothing may synchronize: the checks run on plain runs */
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing((cudaStream_t)ctx->stream, &cs) != cudaSuccess ||
            cs != cudaStreamCaptureStatusNone)
            return M40_OK;
        st = scan_device(ctx, m40_tensor_get_data(t), is_f16, numel, &first, &count, &value);
#endif
    }
    if (st != M40_OK) {
        char msg[M40__ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", m40_errmsg(ctx));
        return m40__err(ctx, st, "m40_graph_run: checking node '%s' (%s, step %d): %s", n->name,
                        m40_op_name(n->d.op), step, msg);
    }
    if (first < 0) return M40_OK;
    r->found = 1;
    r->node = node;
    r->step = step;
    r->node_name = n->name;
    r->op = n->d.op;
    r->index = first;
    r->value = value;
    r->count = count;
    char coord[96] = "[", shape[96];
    int64_t rest = first;
    for (int k = gt->desc.ndim - 1; k >= 0; k--) {
        int64_t e = gt->desc.shape[k] > 0 ? gt->desc.shape[k] : 1;
        r->coord[k] = rest % e;
        rest /= e;
    }
    for (int k = 0; k < gt->desc.ndim; k++) {
        size_t len = strlen(coord);
        snprintf(coord + len, sizeof coord - len, "%s%lld", k ? "," : "", (long long)r->coord[k]);
    }
    size_t len = strlen(coord);
    snprintf(coord + len, sizeof coord - len, "]");
    return m40__err(ctx, M40_ERR_FORMAT,
                    "m40_graph_run: node '%s' (%s, step %d) produced a non-finite value: "
                    "element %lld %s of %s is %s (%lld non-finite)",
                    n->name, m40_op_name(n->d.op), step, (long long)first, coord,
                    m40__shape_str(&gt->desc, shape, sizeof shape),
                    value != value ? "nan" : value > 0 ? "inf" : "-inf", (long long)count);
}
