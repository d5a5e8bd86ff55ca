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
** output layer stay fp16), as the official ChatGLM2 quantization. */
typedef enum m40_wformat {
    M40_WFMT_FP32 = 0,
    M40_WFMT_FP16 = 1,
    M40_WFMT_INT8 = 2,
    M40_WFMT_INT4 = 3,
    M40_WFMT_COUNT
} m40_wformat;

/* "fp32", "fp16", "int8", "int4"; "?" else. */
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
/* ChatGLM2-6B (planning only)                                         */
/*
** 28 blocks of: RMSNorm -> query_key_value (+bias) -> RoPE (the first 64
** of 128 dims of the 32 query and 2 key heads) -> attention (2 KV groups,
** K/V appended to the STATE caches at `position`) -> dense -> residual add
** + RMSNorm -> dense_h_to_4h -> SwiGLU -> dense_4h_to_h; then the residual
** add + final RMSNorm, (prefill: the last position) and the output layer.
** The residual stream is the STATE tensor "hidden" [B,T,4096]: each
** RMSNORM node adds its residual into it first (m40/graph.h), so no
** separate add runs. Weight names follow the Hugging Face
** checkpoint (transformer.encoder.layers.<l>. ...).
*/

typedef struct m40_chatglm2_desc {
    size_t struct_size;     /* sizeof(m40_chatglm2_desc); set by _init */
    m40_wformat weights;    /* fp16 (default), fp32, int8, int4 */
    int batch;              /* sequences: 1 .. 2^20 (1) */
    int64_t ctx;            /* tokens the KV cache holds: 1 .. 2^22 (8192) */
    int chunk;              /* tokens per prefill step, >= 1 (512) */
    m40_model_phase phase;  /* prefill chunk (default) or decode */
} m40_chatglm2_desc;

M40_API void m40_chatglm2_desc_init(m40_chatglm2_desc *d);

typedef struct m40_chatglm2_info {
    int input_ids;       /* [B,T] i32 (T = min(chunk, ctx), 1 for decode) */
    int position;        /* [B,T] i32: the position of each token (0-based,
                         ** over the whole conversation; -1: padding) */
    int logits;          /* [B,1,65024] f32: the last position's */
    uint64_t params;     /* parameters (a quantized weight counts once) */
} m40_chatglm2_info;

/* Declares ChatGLM2-6B's graph for one phase, for planning. weights must
** be NULL until its kernels exist.
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL, struct_size, batch, ctx,
** chunk, format or phase out of range), M40_ERR_UNSUPPORTED (a weights
** file: not runnable yet), M40_ERR_OOM_HOST. */
M40_API m40_status m40_chatglm2_graph(m40_ctx *ctx, const m40_chatglm2_desc *d,
                                      m40_st_file *weights, m40_graph **out,
                                      m40_chatglm2_info *info);

#ifdef __cplusplus
}
#endif
#endif /* M40_MODELS_H */
