/*
** libm40 — the transformer's ops: RMSNorm, rotary embedding, the KV cache,
** causal grouped-query attention, SwiGLU, embedding and sampling.
**
** Same rules as the eager ops of m40/m40.h (sides, statuses, streams): FP32
** math everywhere (sm_52 has no half arithmetic: fp16 data is converted on
** load and store), a CPU reference behind every op (double accumulators),
** and a graph node for each (m40/graph.h), so that a whole decode step is
** one planned graph, captured once and replayed.
**
** Indices that live in device memory (token ids, positions, cache slots)
** cannot be checked on the host without a round trip. On a CPU context the
** op checks them and returns M40_ERR_INVALID_ARG. On a GPU context every
** kernel checks each index it reads against its bound, never touches
** memory through a bad one (it skips the row, or writes zeros), and records
** the first bad index in the context; the next m40_ctx_sync or
** m40_tensor_download on that context returns M40_ERR_INVALID_ARG naming
** it ("embedding id 70000 out of range [0, 65024) (3 times)") and clears
** the record. Check ids on the host before upload where you can.
**
** A typical ChatGLM2 layer, h the residual stream (graph: a STATE tensor):
**   x   = rmsnorm(h += mlp_out)               m40_rmsnorm with a residual
**   qkv = x · Wqkvᵀ + b                       m40_matmul / m40_quant_linear
**   rope(qkv's Q and K heads, pos)            m40_rope on a view of qkv
**   append qkv's K and V at pos               m40_kv_append
**   o   = attention(qkv's Q, caches, pos)     m40_attention
**   x   = rmsnorm(h += o · Wdenseᵀ)
**   u   = x · Wh→4hᵀ;  s = swiglu(u);  mlp_out = s · W4h→hᵀ
*/
#ifndef M40_TRANSFORMER_H
#define M40_TRANSFORMER_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- RMSNorm ------------------------------------------------------------ */

/* y = x / sqrt(mean(x²) + eps) · w over the last dim C, FP32 math.
**   x        [..., C] F32; the last dim contiguous, rows may be strided
**   w        [C] F32 or F16
**   residual [..., C] F32 (x's shape) or NULL: the fused form of a
**            transformer layer: first x += residual, in place (x is then
**            written), then y = norm(x) · w; one pass over x and residual
**   y        [..., C] F32, contiguous; may be x itself without a residual
** eps finite and > 0 (M40_ERR_INVALID_ARG). */
M40_API m40_status m40_rmsnorm(m40_ctx *ctx, float eps, m40_tensor *x, const m40_tensor *w,
                               const m40_tensor *residual, m40_tensor *y);

/* ---- Rotary position embedding (RoPE) ----------------------------------- */

typedef enum m40_rope_pairs {
    M40_ROPE_ADJACENT = 0, /* pairs (x[2i], x[2i+1]): ChatGLM2, GLM, GPT-J */
    M40_ROPE_HALF = 1      /* pairs (x[i], x[i + rope_dims/2]): LLaMA, NeoX */
} m40_rope_pairs;

typedef struct m40_rope_desc {
    size_t struct_size;   /* sizeof(m40_rope_desc): m40_rope_desc_init sets it */
    int heads;            /* heads per row: x holds heads·head_dim values a row */
    int head_dim;         /* 1 .. 2^16 */
    int rope_dims;        /* rotated dims at the start of each head: even,
                          ** <= head_dim (ChatGLM2: 64 of 128); the rest pass */
    m40_rope_pairs pairs;
    float theta;          /* base, > 0: θ_i = theta^(-2i/rope_dims) (10000;
                          ** ChatGLM3-32K: 10000 · rope_ratio) */
    float pos_scale;      /* > 0: angle = pos · pos_scale · θ_i (1; linear
                          ** position interpolation: 1/factor) */
} m40_rope_desc;

/* heads 1, head_dim 128, rope_dims 128, ADJACENT, theta 10000, pos_scale 1. */
M40_API void m40_rope_desc_init(m40_rope_desc *d);

/* Rotates x in place: for each row r and head h, pair i < rope_dims/2 of
** (a, b) turns by angle pos[r] · pos_scale · θ_i:
**   a' = a cos − b sin,  b' = b cos + a sin      (angles in FP32, as PyTorch)
**   x    [..., W] F32 with W >= heads·head_dim: the first heads·head_dim
**        values of each row rotate, the rest are left as they are (so a
**        fused qkv row rotates its Q and K heads with heads = H + G); the
**        last dim contiguous, rows may be strided
**   pos  I32 with one position per row (x's leading dims flattened), >= 0,
**        or -1: padding, the row is left as it is; a device tensor on a GPU,
**        so a captured graph replays new positions */
M40_API m40_status m40_rope(m40_ctx *ctx, const m40_rope_desc *d, m40_tensor *x,
                            const m40_tensor *pos);

/* ---- KV cache ------------------------------------------------------------ */

/* Writes new keys (or values) into a cache, converting to its dtype:
**   cache[slot[b], pos[b,t], :, :] = kv[b, t, :]
**   cache [S, L, G, D] F16 or F32: S sequence slots of L positions, G KV
**        heads of D dims (a layer's K or V cache; contiguous)
**   kv   [B, T, G·D] F32; the last dim contiguous, rows may be strided (the
**        K or V part of a fused qkv row)
**   pos  I32 [B, T]: the position of each row, 0 .. L-1; -1 skips the row
**        (padding of a batch of sequences of different lengths)
**   slot I32 [B], 0 .. S-1, or NULL: sequence b uses slot b (then B <= S) */
M40_API m40_status m40_kv_append(m40_ctx *ctx, const m40_tensor *kv, const m40_tensor *pos,
                                 const m40_tensor *slot, m40_tensor *cache);

/* ---- Attention ----------------------------------------------------------- */

typedef struct m40_attention_desc {
    size_t struct_size; /* sizeof(m40_attention_desc): m40_attention_desc_init sets it */
    int heads;          /* query heads H, 1 .. 2^16 */
    int kv_heads;       /* KV heads G, H % G == 0 (ChatGLM2: 32 over 2) */
    int head_dim;       /* D, 1 .. 256 (kernels tuned for 64 and 128) */
    float scale;        /* scores = q·k · scale; 0 means 1/sqrt(D) */
} m40_attention_desc;

/* heads 1, kv_heads 1, head_dim 128, scale 0. */
M40_API void m40_attention_desc_init(m40_attention_desc *d);

/* Causal grouped-query attention over a KV cache, FP32 math:
**   y[b,t,h] = Σ_{j <= pos[b,t]} softmax_j(q[b,t,h] · K[s,j,g] · scale) V[s,j,g]
** with s = slot[b] (or b), g = h / (H/G).
**   q     [B, T, H·D] F32; the last dim contiguous, rows may be strided
**   k_cache, v_cache [S, L, G, D] F16 or F32 (same dtype), holding every
**         position <= pos[b,t] of slot s (m40_kv_append first). Tiles may
**         read positions that were never appended (with a zero weight), so
**         those must hold finite values: clear a new cache once (a graph's
**         STATE tensors start as zeros; m40_tensor_new does not clear)
**   pos   I32 [B, T], 0 .. L-1, or -1: no query (its y row is zero). Rows
**         of a sequence need not be contiguous positions, and sequences
**         may have different lengths (pad with -1).
**   slot  I32 [B] or NULL (slot b)
**   y     [B, T, H·D] F32, contiguous
** T <= 8: the decode kernel, split over the KV length (the partial
** results are merged in a second pass; scratch in the context workspace),
** else the prefill kernel, tiled with an online softmax: no T×L score
** matrix is ever stored. */
M40_API m40_status m40_attention(m40_ctx *ctx, const m40_attention_desc *d,
                                 const m40_tensor *q, const m40_tensor *k_cache,
                                 const m40_tensor *v_cache, const m40_tensor *pos,
                                 const m40_tensor *slot, m40_tensor *y);

/* ---- SwiGLU and embedding ------------------------------------------------- */

/* y = silu(x[..., :F]) · x[..., F:] (the gate first, as ChatGLM2's
** dense_h_to_4h output): x [..., 2F] F32 (last dim contiguous), y [..., F]
** F32 contiguous. */
M40_API m40_status m40_swiglu(m40_ctx *ctx, const m40_tensor *x, m40_tensor *y);

/* y[..., :] = table[ids[...], :]: ids I32 [...] in 0 .. V-1, table [V, C]
** F16 or F32 (contiguous), y [..., C] F32 contiguous. */
M40_API m40_status m40_embedding(m40_ctx *ctx, const m40_tensor *ids, const m40_tensor *table,
                                 m40_tensor *y);

/* ---- Sampling ------------------------------------------------------------ */

/* A temperature below this samples greedily: logits / 1e-38 would overflow
** a float, and a distribution that cold is the argmax already. */
#define M40_SAMPLER_GREEDY_BELOW 1e-6f

typedef struct m40_sampler_desc {
    size_t struct_size;       /* sizeof(m40_sampler_desc): m40_sampler_desc_init sets it */
    float temperature;        /* below M40_SAMPLER_GREEDY_BELOW (1e-6; <= 0 too):
                              ** greedy (argmax, lowest id on ties); else
                              ** logits / temperature (finite) */
    int top_k;                /* keep the k most likely (0: off) */
    float top_p;              /* keep the smallest most-likely set whose
                              ** probability reaches top_p (1: off), in (0, 1] */
    float min_p;              /* drop ids below min_p · p_max (0: off), in [0, 1) */
    float repetition_penalty; /* > 0; 1: off. An id in the history: a positive
                              ** logit is divided by it, a negative one
                              ** multiplied (CTRL, the official ChatGLM) */
    uint64_t seed;            /* draw of row b at step p: a function of
                              ** (seed, b, p) only: the same seed gives the
                              ** same ids */
} m40_sampler_desc;

/* temperature 1, top_k 0, top_p 1, min_p 0, repetition_penalty 1, seed 0. */
M40_API void m40_sampler_desc_init(m40_sampler_desc *d);

/* Draws one id per row:
**   logits  [B, V] F32 (contiguous), V <= 2^24
**   history I32 [B, W] or NULL: previous ids for the repetition penalty;
**           -1 entries are ignored, others must be in 0 .. V-1
**   pos     I32 [B] or NULL: the step of each row, the random stream's
**           counter (a device tensor, so that captured graphs draw anew)
**   out     [B, 2] F32: out[b,0] the id (exact: V <= 2^24), out[b,1] its
**           probability after the penalty, temperature and filters
**           (greedy: under softmax(logits) after the penalty)
** Filters apply in the order penalty, temperature, top-k, top-p, min-p;
** the kept probabilities are renormalized before the draw. */
M40_API m40_status m40_sample(m40_ctx *ctx, const m40_sampler_desc *d, const m40_tensor *logits,
                              const m40_tensor *history, const m40_tensor *pos,
                              m40_tensor *out);

#ifdef __cplusplus
}
#endif
#endif /* M40_TRANSFORMER_H */
