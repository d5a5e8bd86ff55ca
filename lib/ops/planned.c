/* Op kinds the planner sizes but no kernel runs yet (the transformer's):
** rmsnorm, layernorm, embedding, swiglu, attention, take_last. Each has
** its rule here (shapes, parameters, workspace); when its kernel lands it
** moves into its own file with a CPU and a GPU run, like softmax.c. */
#include "op.h"

#include <math.h>

/* ---- rmsnorm: x [...,C], w [C] (eps); layernorm: x, w [C], b [C] (eps) ---- */

static m40_status norm_rule(const m40__op_call *c, m40_tensor_desc *out) {
    int n = c->nd->op == M40_OP_RMSNORM ? 2 : 3;
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 1, M40_MAX_DIMS)))
        return st;
    const m40_tensor_desc *x = c->in[0];
    for (int i = 1; i < n; i++) {
        if ((st = m40__rule_dtype(c, i, M40_DTYPE_F32, M40_DTYPE_F16)) ||
            (st = m40__rule_ndim(c, i, 1, 1)))
            return st;
        if (c->in[i]->shape[0] != x->shape[x->ndim - 1])
            return m40__rule_shape(c, "need x [...,C] and weights [C]");
    }
    if (!(c->nd->eps > 0.0f) || isinf(c->nd->eps))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "eps must be finite and > 0");
    return m40__rule_out(c, out, M40_DTYPE_F32, x->ndim, x->shape);
}

const m40__op_def m40__op_rmsnorm = {
    .op = M40_OP_RMSNORM, .name = "rmsnorm", .inplace = 1, .min_in = 2, .max_in = 2,
    .in_names = {"x", "w"}, .out_name = "y", .rule = norm_rule};
const m40__op_def m40__op_layernorm = {
    .op = M40_OP_LAYERNORM, .name = "layernorm", .inplace = 1, .min_in = 3, .max_in = 3,
    .in_names = {"x", "w", "b"}, .out_name = "y", .rule = norm_rule};

/* ---- embedding: ids i32 [...], table [V,C] -> f32 [...,C] ------------------ */

static m40_status embedding_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_I32, M40_DTYPE_I32)) ||
        (st = m40__rule_dtype(c, 1, M40_DTYPE_F32, M40_DTYPE_F16)) ||
        (st = m40__rule_ndim(c, 0, 0, M40_MAX_DIMS - 1)) || (st = m40__rule_ndim(c, 1, 2, 2)))
        return st;
    const m40_tensor_desc *ids = c->in[0];
    int64_t s[M40_MAX_DIMS];
    for (int i = 0; i < ids->ndim; i++) s[i] = ids->shape[i];
    s[ids->ndim] = c->in[1]->shape[1];
    return m40__rule_out(c, out, M40_DTYPE_F32, ids->ndim + 1, s);
}

const m40__op_def m40__op_embedding = {
    .op = M40_OP_EMBEDDING, .name = "embedding", .inplace = 0, .min_in = 2, .max_in = 2,
    .in_names = {"ids", "table"}, .out_name = "y", .rule = embedding_rule};

/* ---- swiglu: x [...,2F] -> silu(x[:F]) * x[F:] [...,F] ---------------------- */

static m40_status swiglu_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 1, M40_MAX_DIMS)))
        return st;
    const m40_tensor_desc *x = c->in[0];
    int64_t s[M40_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) s[i] = x->shape[i];
    if (s[x->ndim - 1] % 2) return m40__rule_shape(c, "the last dim must be even");
    s[x->ndim - 1] /= 2;
    return m40__rule_out(c, out, M40_DTYPE_F32, x->ndim, s);
}

const m40__op_def m40__op_swiglu = {
    .op = M40_OP_SWIGLU, .name = "swiglu", .inplace = 0, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "y", .rule = swiglu_rule};

/* ---- attention ---------------------------------------------------------------
** qkv [B,T,(H+2G)·D], k_cache and v_cache [B,L,G,D] (STATE: the op appends
** K,V at pos), pos i32 [1]; RoPE on rope_dims; causal -> [B,T,H·D]. */

#define ATT_HEADS_MAX (1 << 16)
#define ATT_HEAD_DIM_MAX (1 << 16)

static m40_status attention_rule(const m40__op_call *c, m40_tensor_desc *out) {
    const m40_node_desc *nd = c->nd;
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_dtype(c, 1, M40_DTYPE_F16, M40_DTYPE_F32)) ||
        (st = m40__rule_dtype(c, 2, M40_DTYPE_F16, M40_DTYPE_F32)) ||
        (st = m40__rule_dtype(c, 3, M40_DTYPE_I32, M40_DTYPE_I32)) ||
        (st = m40__rule_ndim(c, 0, 3, 3)) || (st = m40__rule_ndim(c, 1, 4, 4)) ||
        (st = m40__rule_ndim(c, 2, 4, 4)))
        return st;
    int H = nd->heads, G = nd->kv_heads, D = nd->head_dim, rd = nd->rope_dims;
    if (H < 1 || G < 1 || D < 1 || H > ATT_HEADS_MAX || G > ATT_HEADS_MAX ||
        D > ATT_HEAD_DIM_MAX || H % G || rd < 0 || rd > D || rd % 2)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG,
                              "heads %d, kv_heads %d, head_dim %d, rope_dims %d: need heads and "
                              "kv_heads 1..%d, head_dim 1..%d, heads %% kv_heads == 0, even "
                              "rope_dims <= head_dim", H, G, D, rd, ATT_HEADS_MAX,
                              ATT_HEAD_DIM_MAX);
    const int64_t *q = c->in[0]->shape, *k = c->in[1]->shape;
    int64_t B = q[0], T = q[1], L = k[1];
    /* (H + 2G)·D < 3·2^32: no wrap */
    bool ok = q[2] == ((int64_t)H + 2 * (int64_t)G) * D && k[0] == B && k[2] == G && k[3] == D &&
              m40__same_shape(c->in[1], c->in[2]) && c->in[1]->dtype == c->in[2]->dtype &&
              T <= L && m40__dims_product(c->in[3], 0, c->in[3]->ndim) == 1;
    if (!ok)
        return m40__rule_shape(c, "need qkv [B,T,(heads+2*kv_heads)*head_dim], caches "
                               "[B,L,kv_heads,head_dim] with T <= L, pos [1]");
    int64_t s[3] = {B, T, (int64_t)H * D};
    return m40__rule_out(c, out, M40_DTYPE_F32, 3, s);
}

/* decode (T = 1) splits the cache in 256-token chunks across blocks and
** merges partial (max, sum, out[D]) per chunk; prefill needs no scratch */
static m40_status attention_workspace(const m40__op_call *c, const m40_tensor_desc *out,
                                      int sm_count, uint64_t *bytes) {
    (void)out;
    (void)sm_count;
    *bytes = 0;
    const int64_t *q = c->in[0]->shape, *k = c->in[1]->shape;
    if (q[1] != 1) return M40_OK;
    int64_t b;
    if (m40__mul_ok(q[0], c->nd->heads, M40__OP_BYTES_MAX, &b) ||
        m40__mul_ok(b, (k[1] + 255) / 256, M40__OP_BYTES_MAX, &b) ||
        m40__mul_ok(b, (int64_t)c->nd->head_dim + 2, M40__OP_BYTES_MAX, &b) ||
        m40__mul_ok(b, 4, M40__OP_BYTES_MAX, &b))
        return m40__rule_fail(c, M40_ERR_SHAPE, "the decode scratch would take 2^62 bytes or more");
    *bytes = (uint64_t)b;
    return M40_OK;
}

const m40__op_def m40__op_attention = {
    .op = M40_OP_ATTENTION, .name = "attention", .inplace = 0, .min_in = 4, .max_in = 4,
    .in_names = {"qkv", "k_cache", "v_cache", "pos"}, .out_name = "y",
    .state_inputs = (1u << 1) | (1u << 2), .rule = attention_rule,
    .workspace = attention_workspace};

/* ---- take_last: x [B,T,C] -> the last position [B,1,C] ---------------------- */

static m40_status take_last_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 3, 3)))
        return st;
    const int64_t *x = c->in[0]->shape;
    if (x[1] < 1) return m40__rule_shape(c, "T must be >= 1");
    int64_t s[3] = {x[0], 1, x[2]};
    return m40__rule_out(c, out, M40_DTYPE_F32, 3, s);
}

const m40__op_def m40__op_take_last = {
    .op = M40_OP_TAKE_LAST, .name = "take_last", .inplace = 0, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "y", .rule = take_last_rule};
