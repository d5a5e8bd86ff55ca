/*
** libm40 model builders: each model's graph declared once, for planning and
** for running.
**
** A builder declares the nodes and tensors of one model on the graph API
** (m40/graph.h). Given NULL weights it declares them with no data: the graph
** can be planned (m40_graph_plan, m40-plan) but computes nothing useful.
** Given an open weights file it checks every tensor of the file, converts
** what needs converting, then plans and allocates: the graph is ready for
** m40_graph_run. Both come from the same code, so the plan of the first is
** the plan of the second, byte for byte.
**
** ResNet:    torchvision bottleneck ResNets (ResNet-50 and its deeper or
**            narrower relatives), BatchNorm folded, bias + residual + ReLU
**            in each conv node. Runs today.
** ChatGLM2:  ChatGLM2-6B; planning only until its kernels exist.
*/
#ifndef M40_MODELS_H
#define M40_MODELS_H

#include "m40/graph.h"
#include "m40/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a model's weights are stored. int8/int4: per-row scales, weight-only,
** only the four linear layers of each transformer block (embedding and
** output layer stay fp16), as the official ChatGLM2 quantization;
** int4g128: int4 with one f16 scale per row and per 128 columns (finer
** scales, 1/8 more scale bytes; libm40's own, not an official layout). */
typedef enum m40_wformat {
    M40_WFMT_FP32 = 0,
    M40_WFMT_FP16 = 1,
    M40_WFMT_INT8 = 2,
    M40_WFMT_INT4 = 3,
    M40_WFMT_INT4G128 = 4,
    M40_WFMT_COUNT
} m40_wformat;

/* "fp32", "fp16", "int8", "int4", "int4g128"; "?" else. */
M40_API const char *m40_wformat_name(m40_wformat f);

typedef enum m40_model_phase {
    M40_PHASE_PREFILL = 0, /* a prefill chunk; a CNN's only phase (forward) */
    M40_PHASE_DECODE = 1   /* one token per sequence */
} m40_model_phase;

/* ------------------------------------------------------------------ */
/* ResNet (torchvision, v1.5 bottlenecks)                              */
/*
** The graph, for N images of HxW in `layout` (every activation, the input
** included; weights follow: [K,C,R,S] for NCHW, [K,R,S,C] for NHWC):
**
**   input        [N,3,H,W]      (NHWC [N,H,W,3]) f32, tensor "input"
**   conv1        7x7/2, 3 -> base, bias, ReLU
**   maxpool      3x3/2 pad 1
**   layer1..4    blocks[s] bottlenecks of width base·2^s, output 4x the
**                width; the stride (2 from layer2 on) on the 3x3; block 0
**                has downsample.0 (1x1 conv) on its shortcut:
**                  conv1 1x1 +bias +ReLU -> conv2 3x3 +bias +ReLU
**                  -> conv3 1x1 +bias +shortcut +ReLU  (one node each)
**   avgpool      global average -> [N, 32·base]
**   fc           linear -> [N,classes], tensor "fc" (the logits)
**
** Weight tensors: "<conv>.weight" and "<conv>.folded_bias" per conv (the
** BatchNorm folded in: s = gamma / sqrt(var + 1e-5), w' = w·s per output
** channel, b' = beta - mean·s), "fc.weight", "fc.bias".
*/

typedef struct m40_resnet50_desc {
    size_t struct_size;  /* sizeof(m40_resnet50_desc); m40_resnet50_desc_init sets it */
    int batch;           /* images per run: 1 .. 2^20 (1) */
    int height, width;   /* input size: 32 .. 2^15 each (224 x 224) */
    m40_layout layout;   /* NHWC (default: each conv one GEMM on a GPU) or NCHW */
    /* The architecture; read from the weights file when one is given. */
    int base;            /* conv1's output channels: 1 .. 4096 (64) */
    int blocks[4];       /* bottlenecks per stage: 1 .. 64 ({3,4,6,3}) */
    int classes;         /* fc outputs: 1 .. 2^20 (1000) */
    /* Without a file: 1 = allocate and fill the weights with seeded random
    ** values (a runnable graph for benchmarks: He-normal convs, biases of
    ** std 0.01); 0 = declare only, for planning. */
    int random_weights;
    uint64_t seed;
    /* When the builder allocates: the budget to plan against (NULL: none). */
    const m40_budget *budget;
} m40_resnet50_desc;

/* ResNet-50 (base 64, blocks {3,4,6,3}, 1000 classes), batch 1, 224x224,
** NHWC, declared only. */
M40_API void m40_resnet50_desc_init(m40_resnet50_desc *d);

typedef struct m40_resnet50_info {
    int input;           /* tensor id of "input" */
    int logits;          /* tensor id of "fc": [N,classes] f32 */
    int base, blocks[4], classes; /* as built (from the file when given) */
    uint64_t params;     /* parameters after folding (25,530,472 for ResNet-50) */
    int allocated;       /* 1: planned and allocated, ready to run */
    m40_plan_info plan;  /* when allocated: the plan it was allocated with */
} m40_resnet50_info;

/* Builds the ResNet of `d` on ctx into a new graph *out.
** weights: an open safetensors file with torchvision's state_dict names,
** or NULL. With a file, the architecture comes from it (base from
** conv1.weight, blocks from the layer<s>.<i> names, classes from
** fc.weight); every tensor the model needs is checked by name, dtype (F32)
** and shape, every tensor of the file must belong to the model
** (num_batches_tracked is allowed and unused), BatchNorm is folded, NHWC
** weights are reordered; then the graph is planned against d->budget and
** allocated, and the file may be closed. With NULL and d->random_weights,
** the same plus a seeded random fill. With NULL alone, nothing is
** allocated: plan it with m40_graph_plan. (Conv engines are settled at
** allocation: choose one on the context beforehand with
** m40_ctx_set_conv_engine.)
** info (may be NULL) receives the ids, the architecture and the plan.
** On failure *out is NULL and m40_errmsg(ctx) says what is wrong.
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG  NULL ctx/d/out, struct_size too small, a value
**                        outside the ranges above
**   M40_ERR_FORMAT       not a torchvision ResNet file (conv1.weight or
**                        fc.weight missing, a stage with no blocks), a
**                        missing tensor ("'<name>' is missing"), a tensor
**                        the model does not use ("unknown tensor"), a
**                        negative running_var
**   M40_ERR_SHAPE        a tensor of another shape (named, both shapes)
**   M40_ERR_DTYPE        a tensor that is not F32
**   M40_ERR_OOM_DEVICE   over d->budget (see m40_graph_plan)
**   M40_ERR_OOM_HOST, and m40_graph_alloc's statuses */
M40_API m40_status m40_resnet50_graph(m40_ctx *ctx, const m40_resnet50_desc *d,
                                      m40_st_file *weights, m40_graph **out,
                                      m40_resnet50_info *info);

/* ------------------------------------------------------------------ */
/* ChatGLM2 (ChatGLM2-6B, ChatGLM3-6B and smaller models of that shape) */
/*
** Per block: RMSNorm -> query_key_value (+bias) -> RoPE (the first half of
** each query and key head's dims, adjacent pairs) -> attention (G KV
** groups; K/V appended to the STATE caches at `position`) -> dense ->
** residual add + RMSNorm -> dense_h_to_4h -> SwiGLU -> dense_4h_to_h; then
** the residual add + final RMSNorm, (prefill: the last position) and the
** output layer. On one GPU with f16/int8/int4 weights the graph is fused:
** each RMSNorm is a norm_w input of the LINEAR_Q after it, each residual
** add the residual input of the LINEAR_Q before it (the stream is an
** activation), RoPE is the ATTENTION node's (m40/graph.h). Otherwise (f32,
** tensor parallelism) the residual stream is the STATE tensor "hidden"
** [B,T,hidden]: each RMSNORM node adds its residual into it first, so no
** separate add runs.
**
** Weights (safetensors, the Hugging Face checkpoint's names and shapes):
**   transformer.embedding.word_embeddings.weight          [V, C]
**   transformer.encoder.layers.<l>.input_layernorm.weight [C]
**     .self_attention.query_key_value.weight / .bias      [(H+2G)·D, C] / [(H+2G)·D]
**     .self_attention.dense.weight                        [C, H·D]
**     .post_attention_layernorm.weight                    [C]
**     .mlp.dense_h_to_4h.weight                           [2F, C]
**     .mlp.dense_4h_to_h.weight                           [C, F]
**   transformer.encoder.final_layernorm.weight            [C]
**   transformer.output_layer.weight                       [V, C]
** F16 or F32 each (converted to the format asked). For int8/int4 the four
** linear weights of a block are quantized at load (per row, f16 scales:
** the official recipe), or taken as they are when the file is an official
** quantized checkpoint (int8 `.weight` [N,K] or int4 [N,K/2] plus
** `.weight_scale` [N] f16; int4g128: scales [N, ceil(K/128)]).
** transformer.rotary_pos_emb.inv_freq is ignored (the op computes the
** angles), and so are tensors named "extra.*" (data a program keeps in the
** file: m40-chat's saved tokenizer); any other tensor is refused.
** The shapes give C, V, F and the layer count; the heads come from the
** file's metadata (num_attention_heads, multi_query_group_num,
** kv_channels: config.json's names) or default to ChatGLM2-6B's (32, 2,
** 128); layernorm_epsilon (1e-5) and rope_ratio (1: θ base 10000·ratio)
** likewise.
*/

/* The shape of a ChatGLM2-style model. */
typedef struct m40_chatglm2_config {
    int layers;     /* 28 */
    int hidden;     /* C, 4096 */
    int ffn;        /* F, 13696 */
    int heads;      /* H, 32 */
    int kv_heads;   /* G, 2 (multi_query_group_num) */
    int head_dim;   /* D, 128 (kv_channels); H·D need not equal hidden */
    int vocab;      /* V, 65024 (padded_vocab_size) */
    float eps;      /* RMSNorm, 1e-5 */
    float rope_theta; /* 10000 · rope_ratio */
} m40_chatglm2_config;

/* ChatGLM2-6B's config. */
M40_API void m40_chatglm2_config_6b(m40_chatglm2_config *c);

typedef struct m40_chatglm2_desc {
    size_t struct_size;     /* sizeof(m40_chatglm2_desc); set by _init */
    m40_wformat weights;    /* fp16 (default), fp32, int8, int4 */
    int batch;              /* sequences: 1 .. 2^20 (1) */
    int64_t ctx;            /* tokens the KV cache holds: 1 .. 2^22 (8192) */
    int chunk;              /* tokens per prefill step, >= 1 (512) */
    m40_model_phase phase;  /* prefill chunk (default) or decode */
    /* Without a weights file: the shape to declare (m40_chatglm2_config_6b
    ** by _init). With a file, the file's shape is used. */
    m40_chatglm2_config config;
    /* Optional, for running: an allocated ChatGLM2 graph of the same
    ** config, format, ctx and cache sequences (slots, or batch) whose
    ** weights and KV cache this graph uses (bound, not copied: a prefill
    ** graph and a decode graph share one set and one cache; the first
    ** graph's plan counts them), and/or 2·layers tensors [S, ctx, G, D]
    ** F16 (S: slots, or batch) on the context (k of layer 0, v
    ** of layer 0, k of layer 1, ...) bound as the KV cache instead. NULL:
    ** the graph's own. With weights_from, `config` must be that graph's
    ** (its m40_chatglm2_info.config). */
    m40_graph *weights_from;
    m40_tensor *const *kv_cache;
    const m40_budget *budget; /* the plan's budget when allocating (NULL: none) */
    /* A checkpoint in several files (a Hugging Face directory's shards):
    ** with the weights argument NULL, these are searched in order. */
    m40_st_file *const *shards;
    int nshards;
    /* With a checkpoint: 1 = d->config is what the checkpoint's config.json
    ** says, and the tensors must agree with it (M40_ERR_FORMAT naming the
    ** field otherwise); 0 = take the shapes and metadata alone. */
    int check_config;
    /* Prefill: logits of every position [B,T,V] instead of the last [B,1,V]. */
    int all_logits;
    /* Optional, called from this thread while a checkpoint loads (the
    ** library prints nothing): stage "read" after each checkpoint tensor is
    ** checked and converted (done, total: checkpoint bytes), "upload"
    ** before and after the weights go to the device (done, total: the
    ** weights region's bytes). */
    void (*progress)(void *user, const char *stage, uint64_t done, uint64_t total);
    void *progress_user;
    /* Without a checkpoint: 1 = allocate anyway and fill every weight with
    ** seeded random values (f32/f16 normal(0, 0.02), int8/int4 codes
    ** uniform, scales uniform in [0.001, 0.002]): a 6B-shaped model for
    ** timing (m40-bench chatglm2). */
    int random_weights;
    uint64_t seed;
    /* KV-cache sequences (slots), for serving several conversations from one
    ** cache: 0 = batch (row b of the graph is cache row b, as before); else
    ** 1 .. 2^20: the caches are [slots, ctx, G, D] and the graph gets an
    ** input "slot" i32 [B] saying which cache row each of its sequences
    ** reads and appends to (m40_chatglm2_info.slot). So a batch-1 prefill
    ** graph fills any one conversation of a batch-`slots` decode graph that
    ** shares its cache (weights_from), and that decode graph steps them
    ** all at once (position -1 leaves a row idle). */
    int slots;
    /* Tensor parallelism (0 or 1: none): this graph is rank tp_rank of
    ** tp_size, each a context of its own running at the same time (one
    ** thread each). A rank holds heads/tp_size query heads and their KV
    ** groups (kv_heads/tp_size each, or one group shared by tp_size/kv_heads
    ** ranks), ffn/tp_size MLP features and their slices of
    ** query_key_value, dense, dense_h_to_4h and dense_4h_to_h (quantized
    ** weights: quantized whole, then cut); the embedding, norms and output
    ** layer are on every rank. The dense and dense_4h_to_h outputs are
    ** summed over the ranks by ALLREDUCE nodes on `comm` (m40/comm.h, of
    ** tp_size ranks), so every rank's residual stream and logits are the
    ** whole model's. heads, ffn (and, for int4, the column slices; for
    ** int4g128, whole 128-column groups) must divide; comm may be NULL only
    ** for a graph that is only planned (no weights). */
    int tp_size, tp_rank;
    struct m40_comm *comm;
    /* A pipeline stage (several cards: docs/multi-gpu.md): the blocks
    ** layer_begin .. layer_end-1 only; 0/0 (the default) = the whole model.
    ** A stage with layer_begin > 0 takes the residual stream of the stage
    ** before as the INPUT "hidden_in" [B,T,C] f32 instead of input_ids and
    ** the embedding; a stage with layer_end < layers hands its residual
    ** stream on as the output "hidden_out" [B,T,C] f32 (every position, the
    ** residual of its last block added) instead of the final norm and the
    ** logits. With a checkpoint only the stage's tensors are read and
    ** checked (other layers', the embedding's, the output layer's are
    ** skipped, not "unknown"); kv_cache then holds the stage's 2·(end-begin)
    ** tensors (k of layer_begin, v of layer_begin, ...). Callers built with
    ** a struct_size that ends before these fields get the whole model. */
    int layer_begin, layer_end;
} m40_chatglm2_desc;

M40_API void m40_chatglm2_desc_init(m40_chatglm2_desc *d);

typedef struct m40_chatglm2_info {
    m40_chatglm2_config config; /* what was declared */
    int input_ids;       /* [B,T] i32 (T = min(chunk, ctx), 1 for decode) */
    int position;        /* [B,T] i32: the position of each token (0-based,
                         ** over the whole conversation; -1: padding) */
    int logits;          /* [B,1,V] f32: the last position's */
    int slot;            /* [B] i32: each sequence's cache row (desc.slots > 0), else -1 */
    uint64_t params;     /* parameters (a quantized weight counts once) */
    int allocated;       /* 1: weights given (file or weights_from), graph allocated */
    m40_plan_info plan;  /* when allocated */
    /* A pipeline stage (m40_chatglm2_desc.layer_begin/end): the blocks
    ** [layer_begin, layer_end) it runs (0, layers for the whole model);
    ** hidden_in [B,T,C] f32 INPUT when it does not start at block 0 (then
    ** input_ids is -1), hidden_out [B,T,C] f32 output when it does not end
    ** at the last block (then logits is -1); -1 where absent. */
    int layer_begin, layer_end;
    int hidden_in, hidden_out;
} m40_chatglm2_info;

/* The desc of the decode graph twin of an allocated prefill graph g
** (built from `prefill` with the info it returned): the same desc, phase
** DECODE, its weights and KV cache bound from g (weights_from), the config
** as g declared it, no checkpoint (shards, check_config, random_weights
** off), last-position logits. Change batch or slots after, as needed. */
M40_API void m40_chatglm2_desc_decode(m40_chatglm2_desc *out, const m40_chatglm2_desc *prefill,
                                      m40_graph *g, const m40_chatglm2_info *info);

/* The config of a checkpoint (one file or its shards), as
** m40_chatglm2_graph reads it: shapes, then `want` (config.json's values,
** checked against the tensors) or the metadata. Returns M40_OK,
** M40_ERR_INVALID_ARG (NULL), M40_ERR_FORMAT (not a ChatGLM2 checkpoint,
** a disagreement: named). */
M40_API m40_status m40_chatglm2_config_of(m40_ctx *ctx, m40_st_file *const *files, int nfiles,
                                          const m40_chatglm2_config *want,
                                          m40_chatglm2_config *out);

/* Declares a ChatGLM2 graph for one phase. Without weights (NULL file, no
** shards, no weights_from) for planning only; with a file (or weights_from) it
** checks every tensor, converts or quantizes, plans against d->budget and
** allocates: the graph is ready for m40_graph_run (upload input_ids and
** position, run, read logits).
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL, struct_size, batch, ctx,
** chunk, format, phase, config or layer range out of range; both a file
** and weights_from), M40_ERR_FORMAT (a missing, extra or malformed tensor, a
** metadata value that does not parse, heads that do not match the
** shapes), M40_ERR_SHAPE, M40_ERR_DTYPE (a tensor of another shape or
** dtype: named), M40_ERR_OOM_DEVICE (over the budget), M40_ERR_OOM_HOST,
** and m40_graph_alloc's statuses. */
M40_API m40_status m40_chatglm2_graph(m40_ctx *ctx, const m40_chatglm2_desc *d,
                                      m40_st_file *weights, m40_graph **out,
                                      m40_chatglm2_info *info);

#ifdef __cplusplus
}
#endif
#endif /* M40_MODELS_H */
