/* The ChatGLM2-6B builder (include/m40/models.h), planning only for now:
** weight names follow the Hugging Face checkpoint so that binding a file
** (the next step, once attention, RMSNorm, SwiGLU and embedding run) adds
** data to these declarations without changing them. */
#include "build.h"

#include <stdio.h>
#include <string.h>

static const char FN[] = "m40_chatglm2_graph";

enum { GLM_LAYERS = 28, GLM_HIDDEN = 4096, GLM_FFN = 13696, GLM_HEADS = 32, GLM_KV = 2,
       GLM_HEAD_DIM = 128, GLM_VOCAB = 65024 };
#define MAX_BATCH (1 << 20)
#define MAX_CTX ((int64_t)1 << 22)

void m40_chatglm2_desc_init(m40_chatglm2_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->weights = M40_WFMT_FP16;
    d->batch = 1;
    d->ctx = 8192;
    d->chunk = 512;
    d->phase = M40_PHASE_PREFILL;
}

static int tensor(m40__mb *b, m40_tensor_role role, const char *name, m40_dtype dt, int ndim,
                  int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    const int64_t shape[4] = {d0, d1, d2, d3};
    return m40__mb_tensor(b, role, name, dt, ndim, shape);
}

static int weight(m40__mb *b, const char *name, m40_dtype dt, int ndim, int64_t d0, int64_t d1) {
    const int64_t shape[2] = {d0, d1};
    return m40__mb_weight(b, name, dt, ndim, shape, 0);
}

/* y = x·Wᵀ (+ bias) in the model's weight format. */
static int linear(m40__mb *b, const char *prefix, int x, int64_t N, int64_t K, m40_wformat f,
                  int has_bias, m40_dtype small) {
    char wn[160], sn[160], bn[160];
    snprintf(wn, sizeof wn, "%s.weight", prefix);
    snprintf(sn, sizeof sn, "%s.weight_scale", prefix);
    snprintf(bn, sizeof bn, "%s.bias", prefix);
    m40_node_desc nd;
    int n = 0;
    if (f == M40_WFMT_INT8 || f == M40_WFMT_INT4) {
        m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
        nd.bits = f == M40_WFMT_INT8 ? 8 : 4;
        const int64_t ws[2] = {N, nd.bits == 8 ? K : (K + 1) / 2}; /* int4: two per byte */
        nd.inputs[n++] = x;
        nd.inputs[n++] = m40__mb_weight(b, wn, M40_DTYPE_I8, 2, ws, (uint64_t)(N * K));
        nd.inputs[n++] = tensor(b, M40_ROLE_WEIGHT, sn, M40_DTYPE_F16, 1, N, 0, 0, 0);
    } else {
        m40_node_desc_init(&nd, M40_OP_LINEAR);
        nd.inputs[n++] = x;
        nd.inputs[n++] = weight(b, wn, f == M40_WFMT_FP32 ? M40_DTYPE_F32 : M40_DTYPE_F16, 2, N, K);
    }
    if (has_bias) nd.inputs[n++] = weight(b, bn, small, 1, N, 0);
    nd.ninputs = n;
    nd.name = prefix;
    return m40__mb_node(b, &nd);
}

/* y = rmsnorm(h) · w after the residual step on the stream h (a STATE
** tensor): h = r (first = 1: the embedding starts the stream) or h += r. */
static int rmsnorm(m40__mb *b, const char *name, const char *wname, int h, int r, int first,
                   m40_dtype small) {
    int w = weight(b, wname, small, 1, GLM_HIDDEN, 0);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_RMSNORM);
    nd.name = name;
    nd.eps = 1e-5f;
    nd.alpha = first ? 0.0f : 1.0f;
    nd.ninputs = 3;
    nd.inputs[0] = h;
    nd.inputs[1] = w;
    nd.inputs[2] = r;
    return m40__mb_node(b, &nd);
}

static void declare(m40__mb *b, const m40_chatglm2_desc *d, m40_chatglm2_info *info) {
    const int64_t B = d->batch, L = d->ctx;
    const int64_t T = d->phase == M40_PHASE_DECODE ? 1 : (d->chunk < L ? d->chunk : L);
    const m40_wformat f = d->weights;
    /* fp16 checkpoint tensors (norms, bias, embedding, output layer) stay fp16
    ** unless the whole model is fp32 */
    const m40_dtype small = f == M40_WFMT_FP32 ? M40_DTYPE_F32 : M40_DTYPE_F16;
    info->input_ids = tensor(b, M40_ROLE_INPUT, "input_ids", M40_DTYPE_I32, 2, B, T, 0, 0);
    info->position = tensor(b, M40_ROLE_INPUT, "position", M40_DTYPE_I32, 2, B, T, 0, 0);
    /* the residual stream: updated in place by each RMSNORM's residual step */
    int h = tensor(b, M40_ROLE_STATE, "hidden", M40_DTYPE_F32, 3, B, T, GLM_HIDDEN, 0);
    int emb = weight(b, "transformer.embedding.word_embeddings.weight", small, 2, GLM_VOCAB,
                     GLM_HIDDEN);
    int r = m40__mb_op(b, M40_OP_EMBEDDING, "embedding", info->input_ids, emb);
    for (int l = 0; l < GLM_LAYERS; l++) {
        char p[64], n[128], w[128];
        snprintf(p, sizeof p, "transformer.encoder.layers.%d", l);
        snprintf(n, sizeof n, "%s.input_layernorm", p);
        snprintf(w, sizeof w, "%s.input_layernorm.weight", p);
        int a = rmsnorm(b, n, w, h, r, l == 0, small);
        snprintf(n, sizeof n, "%s.self_attention.query_key_value", p);
        int qkv = linear(b, n, a, (GLM_HEADS + 2 * GLM_KV) * GLM_HEAD_DIM, GLM_HIDDEN, f, 1, small);
        m40_node_desc nd;
        /* RoPE on the 32 query and 2 key heads of each qkv row (the first
        ** 64 of 128 dims, adjacent pairs); the value heads pass */
        m40_node_desc_init(&nd, M40_OP_ROPE);
        snprintf(n, sizeof n, "%s.self_attention.rope", p);
        nd.name = n;
        nd.heads = GLM_HEADS + GLM_KV;
        nd.head_dim = GLM_HEAD_DIM;
        nd.rope_dims = GLM_HEAD_DIM / 2;
        nd.rope_pairs = M40_ROPE_ADJACENT;
        nd.rope_theta = 10000.0f;
        nd.ninputs = 2;
        nd.inputs[0] = qkv;
        nd.inputs[1] = info->position;
        qkv = m40__mb_node(b, &nd);
        snprintf(n, sizeof n, "%s.k_cache", p);
        int kc = tensor(b, M40_ROLE_STATE, n, M40_DTYPE_F16, 4, B, L, GLM_KV, GLM_HEAD_DIM);
        snprintf(n, sizeof n, "%s.v_cache", p);
        int vc = tensor(b, M40_ROLE_STATE, n, M40_DTYPE_F16, 4, B, L, GLM_KV, GLM_HEAD_DIM);
        m40_node_desc_init(&nd, M40_OP_ATTENTION);
        snprintf(n, sizeof n, "%s.self_attention.core", p);
        nd.name = n;
        nd.heads = GLM_HEADS;
        nd.kv_heads = GLM_KV;
        nd.head_dim = GLM_HEAD_DIM;
        nd.ninputs = 4;
        nd.inputs[0] = qkv;
        nd.inputs[1] = kc;
        nd.inputs[2] = vc;
        nd.inputs[3] = info->position;
        int o = m40__mb_node(b, &nd);
        snprintf(n, sizeof n, "%s.self_attention.dense", p);
        int dense = linear(b, n, o, GLM_HIDDEN, GLM_HIDDEN, f, 0, small);
        snprintf(n, sizeof n, "%s.post_attention_layernorm", p);
        snprintf(w, sizeof w, "%s.post_attention_layernorm.weight", p);
        int m = rmsnorm(b, n, w, h, dense, 0, small);
        snprintf(n, sizeof n, "%s.mlp.dense_h_to_4h", p);
        int u = linear(b, n, m, 2 * GLM_FFN, GLM_HIDDEN, f, 0, small);
        snprintf(n, sizeof n, "%s.mlp.swiglu", p);
        int sw = m40__mb_op(b, M40_OP_SWIGLU, n, u, -1);
        snprintf(n, sizeof n, "%s.mlp.dense_4h_to_h", p);
        r = linear(b, n, sw, GLM_HIDDEN, GLM_FFN, f, 0, small);
    }
    int x = rmsnorm(b, "transformer.encoder.final_layernorm",
                    "transformer.encoder.final_layernorm.weight", h, r, 0, small);
    if (d->phase == M40_PHASE_PREFILL) x = m40__mb_op(b, M40_OP_TAKE_LAST, "last_position", x, -1);
    /* the output layer stays fp16 in the quantized models */
    info->logits = linear(b, "transformer.output_layer", x, GLM_VOCAB, GLM_HIDDEN,
                          f == M40_WFMT_FP32 ? M40_WFMT_FP32 : M40_WFMT_FP16, 0, small);
    m40__mb_output(b, info->logits);
}

m40_status m40_chatglm2_graph(m40_ctx *ctx, const m40_chatglm2_desc *d, m40_st_file *weights,
                              m40_graph **out, m40_chatglm2_info *info) {
    if (out) *out = NULL;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d || !out) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: NULL argument", FN);
    if (d->struct_size < sizeof *d)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "%s: desc->struct_size is %zu, expected %zu (call "
                        "m40_chatglm2_desc_init first)", FN, d->struct_size, sizeof *d);
    if (d->batch < 1 || d->batch > MAX_BATCH)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: batch %d is not in 1..%d", FN, d->batch,
                        MAX_BATCH);
    if ((int)d->weights < 0 || d->weights >= M40_WFMT_COUNT)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown weight format %d", FN,
                        (int)d->weights);
    if (d->ctx < 1 || d->ctx > MAX_CTX || d->chunk < 1)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: ctx %lld must be in 1..%lld and chunk %d >= 1",
                        FN, (long long)d->ctx, (long long)MAX_CTX, d->chunk);
    if (d->phase != M40_PHASE_PREFILL && d->phase != M40_PHASE_DECODE)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown phase %d", FN, (int)d->phase);
    if (weights)
        return m40__err(ctx, M40_ERR_UNSUPPORTED,
                        "%s: binding ChatGLM2 weights is not implemented yet (attention, RMSNorm, "
                        "SwiGLU and embedding have no kernels); pass NULL weights to plan", FN);
    m40__mb b = {.ctx = ctx, .fn = FN, .st = M40_OK};
    if ((st = m40_graph_create(ctx, &b.g)) != M40_OK) return st;
    m40_chatglm2_info inf;
    memset(&inf, 0, sizeof inf);
    declare(&b, d, &inf);
    if (b.st != M40_OK) {
        m40_graph_destroy(b.g);
        return b.st;
    }
    inf.params = b.params;
    if (info) *info = inf;
    *out = b.g;
    return M40_OK;
}
