/*
** libm40 model-level memory plans: the questions m40-plan answers for the
** built-in models (ResNet-50, ChatGLM2-6B; graphs in m40/models.h): does
** it fit this card, how much room is left, what would fit instead (batch,
** context, weight format), and the longest context that fits.
**
** Each plan is of the graph the model's builder declares (m40/models.h):
** for ResNet-50 exactly the fused graph m40_resnet50_graph builds and runs
** (NHWC, 224x224); for ChatGLM2-6B the graph its kernels will run once
** they exist.
*/
#ifndef M40_PLAN_H
#define M40_PLAN_H

#include "m40/graph.h"
#include "m40/models.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum m40_model_kind {
    M40_MODEL_RESNET50 = 0,    /* torchvision v1.5, BN folded into conv biases */
    M40_MODEL_CHATGLM2_6B = 1
} m40_model_kind;

/* "resnet50", "chatglm2-6b"; "?" else. (m40_wformat_name: m40/models.h) */
M40_API const char *m40_model_name(m40_model_kind m);

typedef struct m40_model_desc {
    size_t struct_size;   /* sizeof(m40_model_desc): m40_model_desc_init sets it */
    m40_model_kind model;
    m40_wformat weights;  /* ResNet-50: fp32 only */
    int batch;            /* images, or sequences */
    int64_t ctx;          /* ChatGLM2: context length the KV cache holds */
    int chunk;            /* ChatGLM2: tokens per prefill step */
} m40_model_desc;

/* Defaults: ResNet-50 fp32 batch 1; ChatGLM2-6B fp16, batch 1, ctx 8192,
** prefill chunk 512. */
M40_API void m40_model_desc_init(m40_model_desc *d, m40_model_kind model);

/* Builds the graph of one phase for planning (weights carry no data): the
** builder's graph of m40/models.h, ResNet-50 at 224x224 in NHWC (as
** m40_resnet50_graph builds it), ChatGLM2-6B with ctx and chunk.
** Returns M40_OK, M40_ERR_INVALID_ARG (bad desc: batch < 1, ctx < 1 or over
** 2^22, chunk < 1, a format the model does not take), M40_ERR_OOM_HOST. */
M40_API m40_status m40_model_graph(m40_ctx *ctx, const m40_model_desc *d,
                                   m40_model_phase phase, m40_graph **out);

typedef struct m40_model_plan {
    m40_plan_info plan;       /* the model: persistent regions once, the
                              ** activation arena and workspace as the larger
                              ** of the phases (they share one of each) */
    uint64_t params;          /* parameters (a quantized weight counts once) */
    int phases;               /* 1 (CNN) or 2 (prefill chunk + decode) */
    uint64_t arena[2], lower_bound[2]; /* activations per phase */
    uint64_t workspace[2];
    uint64_t kv_bytes_per_token; /* whole batch; 0 for a CNN */
    int64_t model_max_ctx;    /* the model's own limit (32768), 0 for a CNN */
    int64_t max_ctx;          /* longest context that fits, capped at the
                              ** model's; 0 if none fits; -1 for a CNN */
    int64_t max_ctx_memory;   /* what memory alone allows (searched to 2^22) */
    int max_batch;            /* largest batch that fits (searched to 4096) */
    int fits_format[M40_WFMT_COUNT]; /* same batch/ctx at each format: 1/0,
                              ** -1 where the model does not take it */
    int64_t max_ctx_format[M40_WFMT_COUNT]; /* longest context (capped) that
                              ** fits at each format; -1 where n/a */
} m40_model_plan;

/* Plans `d` against `budget` and answers the what-would-fit questions.
** *out is filled whether or not the model fits.
** Returns
**   M40_OK
**   M40_ERR_OOM_DEVICE  does not fit: m40_errmsg(ctx) names the region, the
**                       shortfall, and what would fit (batch, context,
**                       int8/int4)
**   M40_ERR_INVALID_ARG, M40_ERR_OOM_HOST */
M40_API m40_status m40_model_plan_build(m40_ctx *ctx, const m40_model_desc *d,
                                        const m40_budget *budget, m40_model_plan *out);

/* The longest context in 1..limit at which `d` (its batch and format) fits
** `budget`; 0 if none does. ChatGLM2 only.
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_OOM_HOST. */
M40_API m40_status m40_model_max_ctx(m40_ctx *ctx, const m40_model_desc *d,
                                     const m40_budget *budget, int64_t limit,
                                     int64_t *max_ctx);

/* ------------------------------------------------------------------ */
/* Several cards: a layer split (pipeline; docs/multi-gpu.md)           */
/*
** The model's blocks are cut into contiguous ranges, one per card in the
** order given; each card holds its blocks' weights, their slice of the KV
** cache, its own residual stream and its activations and workspace (the
** larger of prefill and decode, as on one card); the first card also
** holds the embedding, the last the final norm, the output layer and the
** logits. Between cards only the hidden state moves ([B,T,C] f32: 16 KiB
** a token for ChatGLM2-6B). Each stage is planned with the model's builder
** (m40_chatglm2_desc.layer_begin / layer_end), so its bytes are exact.
** The ranges make the fullest card as little full as possible (total /
** usable, the same share on every card where the blocks allow): with
** cards of one size the blocks split about evenly, a larger card takes
** more.
*/

#define M40_PLAN_MAX_CARDS 16

typedef struct m40_stage_plan {
    m40_budget card;          /* the card's budget, as given */
    int layer_begin, layer_end; /* its blocks [begin, end); begin == end: the
                              ** card holds nothing (the split is better off
                              ** without it) */
    int embedding, output;    /* 1: holds the embedding (the first stage) / the
                              ** final norm, output layer and logits (the last) */
    m40_plan_info plan;       /* regions (kv: its blocks' KV cache and its own
                              ** residual stream; activations and workspace:
                              ** the larger phase), total, usable (the card's),
                              ** headroom, fits; all zero for an unused card */
    uint64_t arena[2], workspace[2]; /* per phase: prefill chunk, decode */
    uint64_t params;          /* parameters it holds */
} m40_stage_plan;

typedef struct m40_split_plan {
    int ncards;
    int layers;               /* the model's blocks */
    m40_stage_plan stage[M40_PLAN_MAX_CARDS];
    uint64_t params;          /* the whole model's */
    uint64_t total_bytes;     /* sum of the stages' totals */
    uint64_t usable_bytes;    /* sum of the cards' usable bytes */
    uint64_t shortfall_bytes; /* sum over the cards of what each lacks (0: fits) */
    int fits;                 /* every stage fits its card */
    double fill;              /* the fullest card's total / usable */
    uint64_t hidden_bytes_per_token; /* what one token moves between two cards */
    int64_t model_max_ctx;    /* 32768 */
    int64_t max_ctx;          /* longest context (capped) at which some split
                              ** of this format fits these cards; 0: none */
    int fits_format[M40_WFMT_COUNT]; /* same batch/ctx at each format: 1/0 */
    int64_t max_ctx_format[M40_WFMT_COUNT]; /* longest context (capped) per format */
    int tensor;               /* 1: m40_model_plan_tensor's (every card holds every
                              ** block's share; hidden_bytes_per_token: what each
                              ** card sends through the all-reduces per token) */
} m40_split_plan;

/* Splits the ChatGLM2 model of `d` over the ncards budgets of `cards`
** (cards[0] gets the first blocks) and answers what would fit: the
** formats at this batch and ctx, the longest context per format. *out is
** filled whether or not it fits (when it does not, the split that lacks
** least: each stage's headroom says by how much). ncards = 1 plans one
** card as m40_model_plan_build does.
** Returns
**   M40_OK
**   M40_ERR_OOM_DEVICE  does not fit: m40_errmsg(ctx) names the fullest
**                       card, the shortfall (per card and in all) and what
**                       would fit (formats, context)
**   M40_ERR_INVALID_ARG NULL, struct_size, a bad desc, ncards outside
**                       1..M40_PLAN_MAX_CARDS, a card with no usable bytes
**   M40_ERR_UNSUPPORTED a model without blocks to split (ResNet-50)
**   M40_ERR_OOM_HOST */
M40_API m40_status m40_model_plan_split(m40_ctx *ctx, const m40_model_desc *d,
                                        const m40_budget *cards, int ncards,
                                        m40_split_plan *out);

/* The same answers for tensor parallelism over the ncards cards (the
** builder's tp_size = ncards: each card holds 1/ncards of every block's
** heads, KV groups and FFN, and the embedding, norms and output layer
** whole; m40/comm.h sums the parts): every stage covers every layer and
** has the same plan. Returns as m40_model_plan_split, and
** M40_ERR_INVALID_ARG for a card count the model's heads, KV groups or FFN
** do not divide by (ChatGLM2-6B: 1, 2, 4, 8, 16). */
M40_API m40_status m40_model_plan_tensor(m40_ctx *ctx, const m40_model_desc *d,
                                         const m40_budget *cards, int ncards,
                                         m40_split_plan *out);

#ifdef __cplusplus
}
#endif
#endif /* M40_PLAN_H */
