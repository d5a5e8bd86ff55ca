/* Graphs of the two example models (../shared/docs/models.md), built for
** planning. Weight names follow the PyTorch state_dicts so a loader can bind
** data by name later. */
#include "graph_internal.h"
#include "m40/plan.h"

#include <stdio.h>
#include <string.h>

const char *m40_model_name(m40_model_kind m) {
    switch (m) {
    case M40_MODEL_RESNET50: return "resnet50";
    case M40_MODEL_CHATGLM2_6B: return "chatglm2-6b";
    default: return "?";
    }
}

const char *m40_wformat_name(m40_wformat f) {
    static const char *const names[] = {"fp32", "fp16", "int8", "int4"};
    return (int)f >= 0 && f < M40_WFMT_COUNT ? names[f] : "?";
}

void m40_model_desc_init(m40_model_desc *d, m40_model_kind model) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->model = model;
    d->batch = 1;
    d->weights = model == M40_MODEL_RESNET50 ? M40_WFMT_FP32 : M40_WFMT_FP16;
    d->ctx = model == M40_MODEL_CHATGLM2_6B ? 8192 : 0;
    d->chunk = 512;
}

/* A small builder that stops at the first error. */
typedef struct bld {
    m40_graph *g;
    m40_status st;
    uint64_t params;
} bld;

static int tensor(bld *b, m40_tensor_role role, const char *name, m40_dtype dt, int ndim,
                  int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    if (b->st != M40_OK) return -1;
    int64_t shape[4] = {d0, d1, d2, d3};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, dt, ndim, shape);
    int id = -1;
    b->st = m40_graph_tensor(b->g, role, name, &d, &id);
    return id;
}

static int weight(bld *b, const char *name, m40_dtype dt, int ndim, int64_t d0, int64_t d1,
                  int64_t d2, int64_t d3) {
    int64_t shape[4] = {d0, d1, d2, d3}, n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    b->params += (uint64_t)n;
    return tensor(b, M40_ROLE_WEIGHT, name, dt, ndim, d0, d1, d2, d3);
}

static int node(bld *b, m40_node_desc *nd) {
    if (b->st != M40_OK) return -1;
    int out = -1;
    b->st = m40_graph_node(b->g, nd, &out);
    return out;
}

static int op1(bld *b, m40_op op, const char *name, int x) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, op);
    nd.name = name;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    return node(b, &nd);
}

static int op2(bld *b, m40_op op, const char *name, int x, int y) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, op);
    nd.name = name;
    nd.ninputs = 2;
    nd.inputs[0] = x;
    nd.inputs[1] = y;
    return node(b, &nd);
}

static int relu(bld *b, const char *name, int x) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ACTIVATION);
    nd.name = name;
    nd.act = M40_ACT_RELU;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    return node(b, &nd);
}

/* ---------------------------------------------------------------- ResNet-50 */

/* conv + folded-BN bias; `cin` input channels. NHWC, the layout
** examples/resnet50 runs on the GPU (weights [K,R,S,C]), so the plan's
** workspace is what the NHWC conv kernels take. */
static int conv(bld *b, const char *prefix, int x, int64_t cin, int64_t cout, int k, int stride) {
    char wn[96], bn[96];
    snprintf(wn, sizeof wn, "%s.weight", prefix);
    snprintf(bn, sizeof bn, "%s.bias", prefix); /* BN folded: y = conv(x, w*s) + (beta - mean*s) */
    int w = weight(b, wn, M40_DTYPE_F32, 4, cout, k, k, cin);
    int bias = weight(b, bn, M40_DTYPE_F32, 1, cout, 0, 0, 0);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.layout = M40_LAYOUT_NHWC;
    nd.name = prefix;
    nd.ninputs = 3;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    nd.inputs[2] = bias;
    nd.stride[0] = nd.stride[1] = stride;
    nd.pad[0] = nd.pad[1] = k / 2;
    return node(b, &nd);
}

static int bottleneck(bld *b, int x, const char *p, int64_t cin, int64_t width, int stride,
                      int downsample) {
    char n[96], r[96];
    snprintf(n, sizeof n, "%s.conv1", p);
    snprintf(r, sizeof r, "%s.relu1", p);
    int y = relu(b, r, conv(b, n, x, cin, width, 1, 1));
    snprintf(n, sizeof n, "%s.conv2", p); /* v1.5: the stride sits on the 3x3 */
    snprintf(r, sizeof r, "%s.relu2", p);
    y = relu(b, r, conv(b, n, y, width, width, 3, stride));
    snprintf(n, sizeof n, "%s.conv3", p);
    y = conv(b, n, y, width, width * 4, 1, 1);
    int idn = x;
    if (downsample) {
        snprintf(n, sizeof n, "%s.downsample.0", p);
        idn = conv(b, n, x, cin, width * 4, 1, stride);
    }
    snprintf(n, sizeof n, "%s.add", p);
    snprintf(r, sizeof r, "%s.relu3", p);
    return relu(b, r, op2(b, M40_OP_ADD, n, y, idn));
}

static void build_resnet50(bld *b, int64_t N) {
    int x = tensor(b, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 4, N, 224, 224, 3);
    x = relu(b, "relu", conv(b, "conv1", x, 3, 64, 7, 2));
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.name = "maxpool";
    nd.layout = M40_LAYOUT_NHWC;
    nd.pool = M40_POOL_MAX;
    nd.kernel[0] = nd.kernel[1] = 3;
    nd.stride[0] = nd.stride[1] = 2;
    nd.pad[0] = nd.pad[1] = 1;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    x = node(b, &nd);
    static const int blocks[4] = {3, 4, 6, 3};
    int64_t cin = 64;
    for (int s = 0; s < 4; s++) {
        int64_t width = 64 << s;
        for (int i = 0; i < blocks[s]; i++) {
            char p[32];
            snprintf(p, sizeof p, "layer%d.%d", s + 1, i);
            x = bottleneck(b, x, p, cin, width, i == 0 && s > 0 ? 2 : 1, i == 0);
            cin = width * 4;
        }
    }
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.name = "avgpool";
    nd.layout = M40_LAYOUT_NHWC;
    nd.pool = M40_POOL_GLOBAL_AVG;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    x = node(b, &nd);
    int w = weight(b, "fc.weight", M40_DTYPE_F32, 2, 1000, 2048, 0, 0);
    int bias = weight(b, "fc.bias", M40_DTYPE_F32, 1, 1000, 0, 0, 0);
    m40_node_desc_init(&nd, M40_OP_LINEAR);
    nd.name = "logits";
    nd.ninputs = 3;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    nd.inputs[2] = bias;
    int y = node(b, &nd);
    if (b->st == M40_OK) b->st = m40_graph_mark_output(b->g, y);
}

/* -------------------------------------------------------------- ChatGLM2-6B */

enum { GLM_LAYERS = 28, GLM_HIDDEN = 4096, GLM_FFN = 13696, GLM_HEADS = 32, GLM_KV = 2,
       GLM_HEAD_DIM = 128, GLM_VOCAB = 65024 };

/* y = x·Wᵀ (+ bias) in the model's weight format. */
static int glm_linear(bld *b, const char *prefix, int x, int64_t N, int64_t K, m40_wformat f,
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
        int w = tensor(b, M40_ROLE_WEIGHT, wn, M40_DTYPE_I8, 2, N, nd.bits == 8 ? K : (K + 1) / 2, 0, 0);
        b->params += (uint64_t)(N * K);
        nd.inputs[n++] = x;
        nd.inputs[n++] = w;
        nd.inputs[n++] = tensor(b, M40_ROLE_WEIGHT, sn, M40_DTYPE_F16, 1, N, 0, 0, 0);
    } else {
        m40_node_desc_init(&nd, M40_OP_LINEAR);
        nd.inputs[n++] = x;
        nd.inputs[n++] = weight(b, wn, f == M40_WFMT_FP32 ? M40_DTYPE_F32 : M40_DTYPE_F16, 2, N, K, 0, 0);
    }
    if (has_bias) nd.inputs[n++] = weight(b, bn, small, 1, N, 0, 0, 0);
    nd.ninputs = n;
    nd.name = prefix;
    return node(b, &nd);
}

static int glm_norm(bld *b, const char *name, const char *wname, int x, m40_dtype small) {
    int w = weight(b, wname, small, 1, GLM_HIDDEN, 0, 0, 0);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_RMSNORM);
    nd.name = name;
    nd.eps = 1e-5f;
    nd.ninputs = 2;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    return node(b, &nd);
}

static void build_chatglm2(bld *b, const m40_model_desc *d, m40_model_phase phase) {
    int64_t B = d->batch, L = d->ctx;
    int64_t T = phase == M40_PHASE_DECODE ? 1 : (d->chunk < L ? d->chunk : L);
    m40_wformat f = d->weights;
    /* fp16 checkpoint tensors (norms, bias, embedding, output layer) stay fp16
    ** unless the whole model is fp32 */
    m40_dtype small = f == M40_WFMT_FP32 ? M40_DTYPE_F32 : M40_DTYPE_F16;
    int ids = tensor(b, M40_ROLE_INPUT, "input_ids", M40_DTYPE_I32, 2, B, T, 0, 0);
    int pos = tensor(b, M40_ROLE_INPUT, "position", M40_DTYPE_I32, 1, 1, 0, 0, 0);
    int emb = weight(b, "transformer.embedding.word_embeddings.weight", small, 2, GLM_VOCAB,
                     GLM_HIDDEN, 0, 0);
    int x = op2(b, M40_OP_EMBEDDING, "embedding", ids, emb);
    for (int l = 0; l < GLM_LAYERS; l++) {
        char p[64], n[128], w[128];
        snprintf(p, sizeof p, "transformer.encoder.layers.%d", l);
        snprintf(n, sizeof n, "%s.input_layernorm", p);
        snprintf(w, sizeof w, "%s.input_layernorm.weight", p);
        int a = glm_norm(b, n, w, x, small);
        snprintf(n, sizeof n, "%s.self_attention.query_key_value", p);
        int qkv = glm_linear(b, n, a, (GLM_HEADS + 2 * GLM_KV) * GLM_HEAD_DIM, GLM_HIDDEN, f, 1, small);
        snprintf(n, sizeof n, "%s.k_cache", p);
        int kc = tensor(b, M40_ROLE_STATE, n, M40_DTYPE_F16, 4, B, L, GLM_KV, GLM_HEAD_DIM);
        snprintf(n, sizeof n, "%s.v_cache", p);
        int vc = tensor(b, M40_ROLE_STATE, n, M40_DTYPE_F16, 4, B, L, GLM_KV, GLM_HEAD_DIM);
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_ATTENTION);
        snprintf(n, sizeof n, "%s.self_attention.core", p);
        nd.name = n;
        nd.heads = GLM_HEADS;
        nd.kv_heads = GLM_KV;
        nd.head_dim = GLM_HEAD_DIM;
        nd.rope_dims = GLM_HEAD_DIM / 2;
        nd.ninputs = 4;
        nd.inputs[0] = qkv;
        nd.inputs[1] = kc;
        nd.inputs[2] = vc;
        nd.inputs[3] = pos;
        int o = node(b, &nd);
        snprintf(n, sizeof n, "%s.self_attention.dense", p);
        int dense = glm_linear(b, n, o, GLM_HIDDEN, GLM_HIDDEN, f, 0, small);
        snprintf(n, sizeof n, "%s.attention_residual", p);
        x = op2(b, M40_OP_ADD, n, x, dense);
        snprintf(n, sizeof n, "%s.post_attention_layernorm", p);
        snprintf(w, sizeof w, "%s.post_attention_layernorm.weight", p);
        int m = glm_norm(b, n, w, x, small);
        snprintf(n, sizeof n, "%s.mlp.dense_h_to_4h", p);
        int u = glm_linear(b, n, m, 2 * GLM_FFN, GLM_HIDDEN, f, 0, small);
        snprintf(n, sizeof n, "%s.mlp.swiglu", p);
        int s = op1(b, M40_OP_SWIGLU, n, u);
        snprintf(n, sizeof n, "%s.mlp.dense_4h_to_h", p);
        int down = glm_linear(b, n, s, GLM_HIDDEN, GLM_FFN, f, 0, small);
        snprintf(n, sizeof n, "%s.mlp_residual", p);
        x = op2(b, M40_OP_ADD, n, x, down);
    }
    if (phase == M40_PHASE_PREFILL) x = op1(b, M40_OP_TAKE_LAST, "last_position", x);
    x = glm_norm(b, "transformer.encoder.final_layernorm",
                 "transformer.encoder.final_layernorm.weight", x, small);
    /* the output layer stays fp16 in the quantized models */
    int y = glm_linear(b, "transformer.output_layer", x, GLM_VOCAB, GLM_HIDDEN,
                       f == M40_WFMT_FP32 ? M40_WFMT_FP32 : M40_WFMT_FP16, 0, small);
    if (b->st == M40_OK) b->st = m40_graph_mark_output(b->g, y);
}

m40_status m40__model_graph(m40_ctx *ctx, const m40_model_desc *d, int phase,
                            m40_graph **out, uint64_t *params) {
    if (out) *out = NULL;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d || !out) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_graph: NULL argument");
    if (d->batch < 1 || d->batch > (1 << 20))
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_graph: batch %d is not in 1..%d",
                        d->batch, 1 << 20);
    if (d->model == M40_MODEL_RESNET50) {
        if (d->weights != M40_WFMT_FP32)
            return m40__err(ctx, M40_ERR_INVALID_ARG,
                            "m40_model_graph: resnet50 is planned in fp32 only (sm_52 has no "
                            "fp16 arithmetic; %s weights are not offered)",
                            m40_wformat_name(d->weights));
    } else if (d->model == M40_MODEL_CHATGLM2_6B) {
        if ((int)d->weights < 0 || d->weights >= M40_WFMT_COUNT)
            return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_graph: unknown weight format %d",
                            (int)d->weights);
        if (d->ctx < 1 || d->ctx > ((int64_t)1 << 22) || d->chunk < 1)
            return m40__err(ctx, M40_ERR_INVALID_ARG,
                            "m40_model_graph: ctx %lld must be in 1..%lld and chunk %d >= 1",
                            (long long)d->ctx, (long long)1 << 22, d->chunk);
    } else {
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_graph: unknown model %d",
                        (int)d->model);
    }
    bld b = {0};
    if ((st = m40_graph_create(ctx, &b.g)) != M40_OK) return st;
    if (d->model == M40_MODEL_RESNET50) build_resnet50(&b, d->batch);
    else build_chatglm2(&b, d, (m40_model_phase)phase);
    if (b.st != M40_OK) {
        m40_graph_destroy(b.g);
        return b.st;
    }
    if (params) *params = b.params;
    *out = b.g;
    return M40_OK;
}

m40_status m40_model_graph(m40_ctx *ctx, const m40_model_desc *d, m40_model_phase phase,
                           m40_graph **out) {
    return m40__model_graph(ctx, d, (int)phase, out, NULL);
}
