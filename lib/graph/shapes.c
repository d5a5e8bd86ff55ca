/* Shape rules and workspace sizes, one case per op kind. The executor's
** eager ops check again at run time; these rules let the planner size ops
** whose kernels do not exist yet. Workspace bytes are what the CUDA
** executor will need (docs/planner.md lists the assumptions). */
#include "graph_internal.h"
#include "../../kernels/conv_plan.h"
#include "../../kernels/quant_plan.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

typedef struct rule {
    m40_graph *g;
    const m40_node_desc *nd;
    const m40_tensor_desc *in[M40_NODE_MAX_INPUTS]; /* NULL when absent */
} rule;

static m40_status fail(rule *r, m40_status st, const char *fmt, const char *a,
                       const char *b) {
    char msg[320];
    snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
    return m40__err(r->g->ctx, st, "m40_graph_node: node '%s' (%s): %s", r->nd->name,
                    m40_op_name(r->nd->op), msg);
}

static const char *shp(const m40_tensor_desc *d, char *buf) {
    return m40__shape_str(d, buf, 96);
}

/* Input count between lo and hi; inputs below lo must be present. */
static m40_status need_inputs(rule *r, int lo, int hi) {
    char a[16], b[16];
    if (r->nd->ninputs < lo || r->nd->ninputs > hi) {
        snprintf(a, sizeof a, "%d", r->nd->ninputs);
        if (lo == hi) snprintf(b, sizeof b, "%d", lo);
        else snprintf(b, sizeof b, "%d..%d", lo, hi);
        return fail(r, M40_ERR_INVALID_ARG, "has %s inputs, the op takes %s", a, b);
    }
    for (int i = 0; i < lo; i++)
        if (!r->in[i]) {
            snprintf(a, sizeof a, "%d", i);
            return fail(r, M40_ERR_INVALID_ARG, "input %s is required", a, NULL);
        }
    return M40_OK;
}

static m40_status need_dtype(rule *r, int i, m40_dtype d1, m40_dtype d2) {
    const m40_tensor_desc *d = r->in[i];
    if (!d || d->dtype == d1 || d->dtype == d2) return M40_OK;
    char a[64], b[32];
    snprintf(a, sizeof a, "%d is %s", i, m40_dtype_name(d->dtype));
    if (d1 == d2) snprintf(b, sizeof b, "%s", m40_dtype_name(d1));
    else snprintf(b, sizeof b, "%s or %s", m40_dtype_name(d1), m40_dtype_name(d2));
    return fail(r, M40_ERR_DTYPE, "input %s, expected %s", a, b);
}

static m40_status need_ndim(rule *r, int i, int lo, int hi) {
    const m40_tensor_desc *d = r->in[i];
    if (!d || (d->ndim >= lo && d->ndim <= hi)) return M40_OK;
    char a[128], b[32], s[96];
    snprintf(a, sizeof a, "%d %s", i, shp(d, s));
    if (lo == hi) snprintf(b, sizeof b, "%d", lo);
    else snprintf(b, sizeof b, "%d..%d", lo, hi);
    return fail(r, M40_ERR_SHAPE, "input %s: expected %s dims", a, b);
}

static m40_status shape_err(rule *r, const char *what) {
    char a[512] = "", s[96];
    for (int i = 0; i < r->nd->ninputs; i++) {
        if (!r->in[i]) continue;
        size_t n = strlen(a);
        snprintf(a + n, sizeof a - n, "%s%s", n ? ", " : "", shp(r->in[i], s));
    }
    return fail(r, M40_ERR_SHAPE, "inputs %s: %s", a, what);
}

static void desc_set(m40_tensor_desc *o, m40_dtype dt, int ndim, const int64_t *shape) {
    m40_tensor_desc_make(o, dt, ndim, shape);
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

m40_status m40__graph_infer(m40_graph *g, const m40_node_desc *nd, m40_tensor_desc *o,
                            uint64_t *ws) {
    rule rl = {.g = g, .nd = nd}, *r = &rl;
    for (int i = 0; i < nd->ninputs; i++)
        rl.in[i] = nd->inputs[i] == M40_NO_TENSOR ? NULL : &g->tensors[nd->inputs[i]].desc;
    const m40_tensor_desc **in = rl.in;
    m40_status st;
    *ws = 0;
    const m40_dtype F32 = M40_DTYPE_F32, F16 = M40_DTYPE_F16, I8 = M40_DTYPE_I8,
                    I32 = M40_DTYPE_I32;
#define TRY(x) do { if ((st = (x)) != M40_OK) return st; } while (0)
    switch (nd->op) {
    case M40_OP_ADD:
    case M40_OP_MUL: {
        TRY(need_inputs(r, 2, 2));
        TRY(need_dtype(r, 0, F32, F32));
        TRY(need_dtype(r, 1, F32, F32));
        int lead = in[0]->ndim - in[1]->ndim;
        bool ok = lead >= 0;
        for (int i = 0; ok && i < in[1]->ndim; i++)
            ok = in[1]->shape[i] == in[0]->shape[lead + i];
        if (!ok) return shape_err(r, "b must equal a or match its trailing dims");
        desc_set(o, F32, in[0]->ndim, in[0]->shape);
        return M40_OK;
    }
    case M40_OP_SCALE:
    case M40_OP_SOFTMAX:
    case M40_OP_ACTIVATION:
        TRY(need_inputs(r, 1, 1));
        TRY(need_dtype(r, 0, F32, F32));
        if (nd->op == M40_OP_ACTIVATION && (nd->act < M40_ACT_RELU || nd->act > M40_ACT_GELU))
            return fail(r, M40_ERR_INVALID_ARG, "unknown activation", NULL, NULL);
        desc_set(o, F32, in[0]->ndim, in[0]->shape);
        return M40_OK;
    case M40_OP_CONVERT:
        TRY(need_inputs(r, 1, 1));
        TRY(need_dtype(r, 0, F32, F16));
        if (nd->out_dtype != F32 && nd->out_dtype != F16)
            return fail(r, M40_ERR_DTYPE, "out_dtype must be f32 or f16", NULL, NULL);
        desc_set(o, nd->out_dtype, in[0]->ndim, in[0]->shape);
        return M40_OK;
    case M40_OP_LINEAR:
    case M40_OP_LINEAR_Q: {
        bool q = nd->op == M40_OP_LINEAR_Q;
        TRY(need_inputs(r, q ? 3 : 2, q ? 4 : 3));
        int ib = q ? 3 : 2; /* bias slot */
        TRY(need_dtype(r, 0, F32, F32));
        TRY(need_ndim(r, 0, 1, M40_MAX_DIMS));
        TRY(need_ndim(r, 1, 2, 2));
        if (q) {
            if (nd->bits != 8 && nd->bits != 4)
                return fail(r, M40_ERR_INVALID_ARG, "bits must be 8 or 4", NULL, NULL);
            TRY(need_dtype(r, 1, I8, I8));
            TRY(need_dtype(r, 2, F16, F32));
            TRY(need_ndim(r, 2, 1, 1));
        } else {
            TRY(need_dtype(r, 1, F32, F16));
        }
        if (nd->ninputs > ib) {
            TRY(need_dtype(r, ib, F32, F16));
            TRY(need_ndim(r, ib, 1, 1));
        }
        int64_t K = in[0]->shape[in[0]->ndim - 1], N = in[1]->shape[0];
        int64_t wk = q && nd->bits == 4 ? ceil_div(K, 2) : K;
        bool ok = in[1]->shape[1] == wk;
        if (q) ok = ok && in[2]->shape[0] == N;
        if (nd->ninputs > ib && in[ib]) ok = ok && in[ib]->shape[0] == N;
        if (!ok)
            return shape_err(r, q ? "need x [...,K], wq [N,K] (8 bit) or [N,K/2] (4 bit), "
                                    "scale [N], bias [N]"
                                  : "need x [...,K], w [N,K], bias [N]");
        int64_t s[M40_MAX_DIMS];
        memcpy(s, in[0]->shape, sizeof s);
        s[in[0]->ndim - 1] = N;
        desc_set(o, F32, in[0]->ndim, s);
        /* linear_q at M <= 8 (the GEMV's fast path: K a multiple of 32 int4
        ** or 16 int8 columns, per-row scales): the split-K sums that
        ** m40_quant_linear reserves, by the launcher's own rule. The SGEMM's
        ** split-K sums (linear) are reserved at alloc, not planned. */
        if (q) {
            int64_t M = K ? m40_tensor_desc_numel(in[0]) / K : 0;
            int q4 = nd->bits == 4;
            if (M >= 1 && M <= 8 && K % (q4 ? 32 : 16) == 0 && N <= INT_MAX && K <= INT_MAX)
                *ws = m40k_qgemv_split_bytes(q4, (int)M, (int)N, (int)K, 0);
        }
        return M40_OK;
    }
    case M40_OP_CONV2D: {
        TRY(need_inputs(r, 2, 4));
        TRY(need_dtype(r, 0, F32, F32));
        TRY(need_dtype(r, 1, F32, F16));
        TRY(need_ndim(r, 0, 4, 4));
        TRY(need_ndim(r, 1, 4, 4));
        if (nd->ninputs > 2 && in[2]) {
            TRY(need_dtype(r, 2, F32, F16));
            TRY(need_ndim(r, 2, 1, 1));
        }
        if (nd->ninputs > 3 && in[3]) {
            TRY(need_dtype(r, 3, F32, F32));
            TRY(need_ndim(r, 3, 4, 4));
        }
        if (nd->layout != M40_LAYOUT_NCHW && nd->layout != M40_LAYOUT_NHWC)
            return fail(r, M40_ERR_INVALID_ARG, "unknown layout", NULL, NULL);
        bool nhwc = nd->layout == M40_LAYOUT_NHWC;
        int gr = nd->groups;
        if (gr < 1 || nd->stride[0] < 1 || nd->stride[1] < 1 || nd->pad[0] < 0 ||
            nd->pad[1] < 0)
            return fail(r, M40_ERR_INVALID_ARG, "groups and strides must be >= 1, pads >= 0",
                        NULL, NULL);
        const int64_t *x = in[0]->shape, *w = in[1]->shape;
        int64_t N = x[0], C = nhwc ? x[3] : x[1], H = nhwc ? x[1] : x[2], W = nhwc ? x[2] : x[3];
        int64_t K = w[0], R = nhwc ? w[1] : w[2], S = nhwc ? w[2] : w[3], wc = nhwc ? w[3] : w[1];
        int64_t P = (H + 2 * nd->pad[0] - R) / nd->stride[0] + 1;
        int64_t Q = (W + 2 * nd->pad[1] - S) / nd->stride[1] + 1;
        bool ok = C % gr == 0 && K % gr == 0 && wc == C / gr && R >= 1 && S >= 1 &&
                  H + 2 * nd->pad[0] >= R && W + 2 * nd->pad[1] >= S;
        if (nd->ninputs > 2 && in[2]) ok = ok && in[2]->shape[0] == K;
        int64_t s[4] = {N, K, P, Q};
        if (nhwc) s[1] = P, s[2] = Q, s[3] = K;
        if (nd->ninputs > 3 && in[3])
            for (int i = 0; i < 4; i++) ok = ok && in[3]->shape[i] == s[i];
        if (!ok) return shape_err(r, nhwc ? "need x [N,H,W,C], w [K,R,S,C/groups] with the window "
                                            "inside the padded input, bias [K], residual [N,P,Q,K]"
                                          : "need x [N,C,H,W], w [K,C/groups,R,S] with the window "
                                            "inside the padded input, bias [K], residual [N,K,P,Q]");
        desc_set(o, F32, 4, s);
        bool gemm = R == 1 && S == 1 && nd->stride[0] == 1 && nd->stride[1] == 1 &&
                    nd->pad[0] == 0 && nd->pad[1] == 0;
        if (gemm) return M40_OK;
        /* kernels/conv.cu (m40k_conv2d_nhwc_workspace gives the exact figure
        ** at m40_graph_alloc; this is its bound, independent of the GPU, by
        ** the rules of kernels/conv_plan.h): the implicit GEMM needs nothing;
        ** C % 4 != 0 (an RGB stem) copies x and w with C padded to 4; a 3x3/1
        ** conv with C·K/(C+K) >= 32 may run as Winograd (whether it does
        ** depends on the GPU's SM count): U, and V and M for up to ~128 MiB
        ** of 2x2 output tiles. The SGEMM's split-K sums are reserved at
        ** alloc, not planned. NCHW (the direct kernel) needs none. */
        *ws = 0;
        if (nhwc) {
            if (C % 4)
                *ws = m40k_pad_x_bytes(N, H, W, C) + m40k_pad_w_bytes(K, R, S, C);
            else if (m40k_wino_applies(R, S, nd->stride[0], nd->stride[1], 1, 1, C, K) &&
                     m40k_wino_pays(C, K)) /* graph convs are undilated */
                *ws = m40k_wino_bytes(C, K, m40k_wino_tiles(N, P, Q));
        }
        return M40_OK;
    }
    case M40_OP_POOL2D: {
        TRY(need_inputs(r, 1, 1));
        TRY(need_dtype(r, 0, F32, F32));
        TRY(need_ndim(r, 0, 4, 4));
        const int64_t *x0 = in[0]->shape;
        if (nd->layout != M40_LAYOUT_NCHW && nd->layout != M40_LAYOUT_NHWC)
            return fail(r, M40_ERR_INVALID_ARG, "unknown layout", NULL, NULL);
        bool nhwc = nd->layout == M40_LAYOUT_NHWC;
        /* x in NCHW order whatever the layout: N, C, H, W */
        int64_t x[4] = {x0[0], nhwc ? x0[3] : x0[1], nhwc ? x0[1] : x0[2], nhwc ? x0[2] : x0[3]};
        if (nd->pool == M40_POOL_GLOBAL_AVG) {
            int64_t s[2] = {x[0], x[1]};
            desc_set(o, F32, 2, s);
            return M40_OK;
        }
        if (nd->pool != M40_POOL_MAX && nd->pool != M40_POOL_AVG)
            return fail(r, M40_ERR_INVALID_ARG, "unknown pool kind", NULL, NULL);
        if (nd->kernel[0] < 1 || nd->kernel[1] < 1 || nd->stride[0] < 1 ||
            nd->stride[1] < 1 || nd->pad[0] < 0 || nd->pad[1] < 0 ||
            x[2] + 2 * nd->pad[0] < nd->kernel[0] || x[3] + 2 * nd->pad[1] < nd->kernel[1])
            return shape_err(r, "kernel and stride >= 1, pad >= 0, window inside the input");
        int64_t P = (x[2] + 2 * nd->pad[0] - nd->kernel[0]) / nd->stride[0] + 1;
        int64_t Q = (x[3] + 2 * nd->pad[1] - nd->kernel[1]) / nd->stride[1] + 1;
        int64_t s[4] = {x[0], x[1], P, Q};
        if (nhwc) s[1] = P, s[2] = Q, s[3] = x[1];
        desc_set(o, F32, 4, s);
        return M40_OK;
    }
    case M40_OP_RMSNORM:
    case M40_OP_LAYERNORM: {
        int n = nd->op == M40_OP_RMSNORM ? 2 : 3;
        TRY(need_inputs(r, n, n));
        TRY(need_dtype(r, 0, F32, F32));
        TRY(need_ndim(r, 0, 1, M40_MAX_DIMS));
        for (int i = 1; i < n; i++) {
            TRY(need_dtype(r, i, F32, F16));
            TRY(need_ndim(r, i, 1, 1));
            if (in[i]->shape[0] != in[0]->shape[in[0]->ndim - 1])
                return shape_err(r, "need x [...,C] and weights [C]");
        }
        if (!(nd->eps > 0.0f)) return fail(r, M40_ERR_INVALID_ARG, "eps must be > 0", NULL, NULL);
        desc_set(o, F32, in[0]->ndim, in[0]->shape);
        return M40_OK;
    }
    case M40_OP_EMBEDDING: {
        TRY(need_inputs(r, 2, 2));
        TRY(need_dtype(r, 0, I32, I32));
        TRY(need_dtype(r, 1, F32, F16));
        TRY(need_ndim(r, 0, 0, M40_MAX_DIMS - 1));
        TRY(need_ndim(r, 1, 2, 2));
        int64_t s[M40_MAX_DIMS];
        memcpy(s, in[0]->shape, sizeof s);
        s[in[0]->ndim] = in[1]->shape[1];
        desc_set(o, F32, in[0]->ndim + 1, s);
        return M40_OK;
    }
    case M40_OP_SWIGLU: {
        TRY(need_inputs(r, 1, 1));
        TRY(need_dtype(r, 0, F32, F32));
        TRY(need_ndim(r, 0, 1, M40_MAX_DIMS));
        int64_t s[M40_MAX_DIMS];
        memcpy(s, in[0]->shape, sizeof s);
        if (s[in[0]->ndim - 1] % 2) return shape_err(r, "the last dim must be even");
        s[in[0]->ndim - 1] /= 2;
        desc_set(o, F32, in[0]->ndim, s);
        return M40_OK;
    }
    case M40_OP_ATTENTION: {
        TRY(need_inputs(r, 4, 4));
        TRY(need_dtype(r, 0, F32, F32));
        TRY(need_dtype(r, 1, F16, F32));
        TRY(need_dtype(r, 2, F16, F32));
        TRY(need_dtype(r, 3, I32, I32));
        TRY(need_ndim(r, 0, 3, 3));
        TRY(need_ndim(r, 1, 4, 4));
        TRY(need_ndim(r, 2, 4, 4));
        int H = nd->heads, G = nd->kv_heads, D = nd->head_dim;
        if (H < 1 || G < 1 || D < 1 || H % G || nd->rope_dims < 0 || nd->rope_dims > D ||
            nd->rope_dims % 2)
            return fail(r, M40_ERR_INVALID_ARG,
                        "need heads, kv_heads, head_dim >= 1, heads %% kv_heads == 0, "
                        "even rope_dims <= head_dim", NULL, NULL);
        for (int i = 1; i <= 2; i++)
            if (g->tensors[nd->inputs[i]].role != M40_ROLE_STATE)
                return fail(r, M40_ERR_INVALID_ARG, "input %s (the %s cache) must be a STATE "
                            "tensor: the op appends to it", i == 1 ? "1" : "2",
                            i == 1 ? "K" : "V");
        const int64_t *q = in[0]->shape, *k = in[1]->shape;
        int64_t B = q[0], T = q[1], L = k[1];
        bool ok = q[2] == (int64_t)(H + 2 * G) * D && k[0] == B && k[2] == G && k[3] == D &&
                  m40__same_shape(in[1], in[2]) && in[1]->dtype == in[2]->dtype &&
                  T <= L && m40_tensor_desc_numel(in[3]) == 1;
        if (!ok) return shape_err(r, "need qkv [B,T,(heads+2*kv_heads)*head_dim], caches "
                                     "[B,L,kv_heads,head_dim] with T <= L, pos [1]");
        int64_t s[3] = {B, T, (int64_t)H * D};
        desc_set(o, F32, 3, s);
        /* decode (T = 1) splits the cache in 256-token chunks across blocks and
        ** merges partial (max, sum, out[D]) per chunk; prefill needs no scratch */
        if (T == 1) *ws = (uint64_t)(B * H * ceil_div(L, 256) * (D + 2)) * 4u;
        return M40_OK;
    }
    case M40_OP_TAKE_LAST: {
        TRY(need_inputs(r, 1, 1));
        TRY(need_dtype(r, 0, F32, F32));
        TRY(need_ndim(r, 0, 3, 3));
        if (in[0]->shape[1] < 1) return shape_err(r, "T must be >= 1");
        int64_t s[3] = {in[0]->shape[0], 1, in[0]->shape[2]};
        desc_set(o, F32, 3, s);
        return M40_OK;
    }
    default:
        break;
    }
#undef TRY
    return fail(r, M40_ERR_INVALID_ARG, "unknown op", NULL, NULL);
}
