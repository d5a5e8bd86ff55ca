/* ATTENTION (issue 16: being written; the rule below is the old plan-only one). */
#include "op.h"

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

