/* The KV cache and causal grouped-query attention (issue 16): the eager
** m40_kv_append and m40_attention (m40/transformer.h) and the graph's
** ATTENTION node, which appends qkv's K and V parts to its caches and then
** attends with its Q part. CPU: lib/ref/attention.c; GPU:
** kernels/attention.h.
**
** The eager calls do not go through m40__op_eager: their inputs are not
** the node's (q alone, no append; kv_append has no node of its own). They
** share the node's checks (below) and its runs (append_run, attend_run),
** which take tensors whose descs passed those checks; the node builds
** strided views of qkv for them.
**
** Indices in device memory (pos, slot): a CPU context checks them before
** running (M40_ERR_INVALID_ARG, nothing written); on a GPU the kernels
** check them against the index guard (kernels/guard.h), reported at the
** next m40_ctx_sync. */
#include "op.h"
#include "../ref/ref.h"
#include "../../kernels/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ATT_HEADS_MAX (1 << 16)
#define ATT_HEAD_DIM_MAX 256
#define ATT_INT_MAX ((int64_t)0x7fffffff) /* the kernels' grid and row counts */

/* ---- checks shared by the eager calls and the node -------------------------- */

static bool f16_or_f32(const m40_tensor_desc *d) {
    return d->dtype == M40_DTYPE_F16 || d->dtype == M40_DTYPE_F32;
}

/* dtypes and dims of pos I32 [B,T] and slot I32 [B] (or NULL: B <= S). */
static m40_status check_index_descs(m40_ctx *ctx, const char *fn, const m40_tensor_desc *pos,
                                    const m40_tensor_desc *slot, int64_t B, int64_t T,
                                    int64_t S) {
    if (pos->dtype != M40_DTYPE_I32 || (slot && slot->dtype != M40_DTYPE_I32))
        return m40__err(ctx, M40_ERR_DTYPE, "%s: pos and slot must be i32 (pos is %s%s%s)", fn,
                        m40_dtype_name(pos->dtype), slot ? ", slot is " : "",
                        slot ? m40_dtype_name(slot->dtype) : "");
    char a[96];
    if (pos->ndim != 2 || pos->shape[0] != B || pos->shape[1] != T)
        return m40__err(ctx, M40_ERR_SHAPE, "%s: pos is %s, expected [%lld,%lld] (one position "
                        "per query row)", fn, m40__shape_str(pos, a, sizeof a), (long long)B,
                        (long long)T);
    if (slot && (slot->ndim != 1 || slot->shape[0] != B))
        return m40__err(ctx, M40_ERR_SHAPE, "%s: slot is %s, expected [%lld]", fn,
                        m40__shape_str(slot, a, sizeof a), (long long)B);
    if (!slot && B > S)
        return m40__err(ctx, M40_ERR_SHAPE, "%s: %lld sequences but the cache has %lld slots "
                        "(pass a slot tensor, or a larger cache)", fn, (long long)B,
                        (long long)S);
    return M40_OK;
}

/* A cache [S,L,G,D] F16/F32 with G kv heads of D dims (G, D < 0: any). */
static m40_status check_cache_desc(m40_ctx *ctx, const char *fn, const char *name,
                                   const m40_tensor_desc *c, int64_t G, int64_t D) {
    char a[96];
    if (!f16_or_f32(c))
        return m40__err(ctx, M40_ERR_DTYPE, "%s: %s is %s, expected f16 or f32", fn, name,
                        m40_dtype_name(c->dtype));
    if (c->ndim != 4 || (G >= 0 && c->shape[2] != G) || (D >= 0 && c->shape[3] != D))
        return m40__err(ctx, M40_ERR_SHAPE, "%s: %s is %s, expected [slots,length,%lld,%lld]",
                        fn, name, m40__shape_str(c, a, sizeof a), (long long)G, (long long)D);
    return M40_OK;
}

static m40_status check_params(m40_ctx *ctx, const char *fn, int H, int G, int D, float scale) {
    if (H < 1 || H > ATT_HEADS_MAX || G < 1 || G > H || H % G || D < 1 ||
        D > ATT_HEAD_DIM_MAX || !isfinite(scale))
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: heads %d, kv_heads %d, head_dim %d, "
                        "scale %g: need heads 1..%d divisible by kv_heads, head_dim 1..%d, a "
                        "finite scale", fn, H, G, D, (double)scale, ATT_HEADS_MAX,
                        ATT_HEAD_DIM_MAX);
    return M40_OK;
}

/* q (or qkv) [B,T,W] F32 with W = cols. */
static m40_status check_rows(m40_ctx *ctx, const char *fn, const char *name,
                             const m40_tensor_desc *x, int64_t cols, const char *what) {
    char a[96];
    if (x->dtype != M40_DTYPE_F32)
        return m40__err(ctx, M40_ERR_DTYPE, "%s: %s is %s, expected f32", fn, name,
                        m40_dtype_name(x->dtype));
    if (x->ndim != 3 || x->shape[2] != cols)
        return m40__err(ctx, M40_ERR_SHAPE, "%s: %s is %s, expected [B,T,%lld] (%s)", fn, name,
                        m40__shape_str(x, a, sizeof a), (long long)cols, what);
    return M40_OK;
}

/* What the runs take beyond the shapes: contiguous caches, pos and slot,
** rows whose last dim is contiguous, sizes that fit the kernels' ints. */
static m40_status check_layout(m40_ctx *ctx, const char *fn, const m40_tensor_desc *rows,
                               const m40_tensor_desc *pos, const m40_tensor_desc *slot,
                               const m40_tensor_desc *c1, const m40_tensor_desc *c2,
                               int64_t heads) {
    if (!m40_tensor_desc_is_contiguous(c1) || (c2 && !m40_tensor_desc_is_contiguous(c2)) ||
        !m40_tensor_desc_is_contiguous(pos) || (slot && !m40_tensor_desc_is_contiguous(slot)))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: the caches, pos and slot must be "
                        "contiguous", fn);
    if (rows->shape[2] > 1 && rows->stride[2] != 1)
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: the rows' last dim must have stride 1",
                        fn);
    int64_t n = 0;
    if (m40__mul_ok(rows->shape[0] * rows->shape[1], heads, ATT_INT_MAX, &n) ||
        c1->shape[0] > ATT_INT_MAX || c1->shape[1] > ATT_INT_MAX)
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: B·T·heads, slots and length must stay "
                        "below 2^31", fn);
    return M40_OK;
}

/* ---- runs (descs checked) --------------------------------------------------- */

/* A CPU context checks the indices before anything is written. */
static m40_status cpu_indices(m40_ctx *ctx, const char *fn, const m40_tensor *pos,
                              const m40_tensor *slot, int64_t S, int64_t L) {
    int64_t B = pos->desc.shape[0], T = pos->desc.shape[1];
    const int32_t *p = pos->data, *s = slot ? slot->data : NULL;
    for (int64_t b = 0; b < B && s; b++)
        if (s[b] < 0 || s[b] >= S)
            return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: slot[%lld] = %d out of range [0, "
                            "%lld)", fn, (long long)b, (int)s[b], (long long)S);
    for (int64_t i = 0; i < B * T; i++)
        if (p[i] < -1 || p[i] >= L)
            return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: pos[%lld,%lld] = %d %s the cache "
                            "length %lld (positions are 0 .. L-1, or -1)", fn,
                            (long long)(i / T), (long long)(i % T), (int)p[i],
                            p[i] < -1 ? "below -1, with" : "past", (long long)L);
    return M40_OK;
}

/* kv into cache, and kv2 into cache2 when given (the attention node's K and
** V: the same shapes, strides, positions and slots; one launch on a GPU). */
static m40_status append_run(m40_ctx *ctx, const char *fn, const m40_tensor *kv,
                             const m40_tensor *kv2, const m40_tensor *pos, const m40_tensor *slot,
                             m40_tensor *cache, m40_tensor *cache2) {
    const m40_tensor_desc *k = &kv->desc, *c = &cache->desc;
    int64_t S = c->shape[0], L = c->shape[1], GD = c->shape[2] * c->shape[3];
    int f16 = c->dtype == M40_DTYPE_F16;
    const int32_t *sp = slot ? slot->data : NULL;
    /* nothing to append: no rows, or rows of no values (an empty kv's strides
    ** are not bounded by the span rule: never multiplied here) */
    if (GD == 0 || k->shape[0] == 0 || k->shape[1] == 0) return M40_OK;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        int e = kv2 ? m40k_kv_append2(ctx->stream, k->shape[0], k->shape[1], GD, kv->data,
                                      kv2->data, k->stride[0], k->stride[1], pos->data, sp, S, L,
                                      f16, cache->data, cache2->data, ctx->guard)
                    : m40k_kv_append(ctx->stream, k->shape[0], k->shape[1], GD, kv->data,
                                     k->stride[0], k->stride[1], pos->data, sp, S, L, f16,
                                     cache->data, ctx->guard);
        ctx->guard_armed = true;
        return m40__launched(ctx, e, fn);
    }
#endif
    m40_status st = cpu_indices(ctx, fn, pos, slot, S, L);
    if (st != M40_OK) return st;
    m40__ref_kv_append(k->shape[0], k->shape[1], GD, kv->data, k->stride[0], k->stride[1],
                       pos->data, sp, L, f16, cache->data);
    if (kv2)
        m40__ref_kv_append(k->shape[0], k->shape[1], GD, kv2->data, k->stride[0], k->stride[1],
                           pos->data, sp, L, f16, cache2->data);
    return M40_OK;
}

/* Which decode kernel runs (kernels/attention.h's decode_variant): 0 the
** tile kernel with 32 keys a tile (the measured best), 1 with 64, 6 with
** 16, 2 and 3 decode v3, 4 the 64-key tile with early loads, 8 and 9 decode
** v4 (v3 with 4 keys a lane), 10 decode v5, 11 and 12 decode v6 (what
** variant 0 becomes at T 1, f16, D 128: attn_bound). Internal: set by tests
** and m40-bench only. */
int m40__attn_decode_variant = 0;
/* Key shares of a prefill call (kernels/attention.h, m40k_attention_prefill_splits):
** 0 the rule, n >= 1 n shares. Internal: tests and m40-bench only. */
int m40__attn_prefill_splits = 0;
/* At most this many decode splits (0: the rule, kernels/attention.h): an
** A/B knob (m40-bench chatglm2's M40_BENCH_GLM_SPLITS); set it before a
** graph is built, from one thread. */
int m40__attn_decode_max_splits = 0;
/* decode v5's ways (kernels/attention.h, m40k_attn_shape::v5_ways): -1
** (default) the node's rule under a key bound (attn_bound), 0 v5's splits
** everywhere, n in 1..8 that row of M40K_ATTN_V5_WAYS wherever v5 runs. Same
** kind of knob (m40-bench chatglm2's M40_BENCH_GLM_V5WAYS, tests). */
int m40__attn_v5_ways = -1;
/* the longest key bound decode v5's ways run under: 0 (default) the rule's
** (attn_ways_keys: ATTN_V5_WAYS_KEYS for one sequence on a device with the
** default v5 edge, else 512 or v5's edge (m40__attn_short_keys below) where
** that is shorter); n > 0 n keys, also past that edge, where v6
** would run (an A/B knob: m40-bench chatglm2's M40_BENCH_GLM_V5WAYS_KEYS).
** Below the edge it limits the rule's row only (a forced row runs wherever
** v5 does); ways off or not a row of M40K_ATTN_V5_WAYS leave the rule past
** the edge as it is. */
int m40__attn_v5_ways_keys = 0;
/* decode v5's ways' splits of the keys (kernels/attention.h,
** m40k_attn_shape::v5_wsplits): -1 (default) the rule, attn_wsplits; 0 or
** 1 none (one block per (b, g, RB rows) folding all the keys); n > 1 n
** splits wherever the ways run (an A/B knob: m40-bench chatglm2's
** M40_BENCH_GLM_V5WSPLITS). */
int m40__attn_v5_wsplits = -1;
/* the longest key bound decode v5 (its ways or its splits) runs under: 0
** (default) the device's, ATTN_SHORT_KEYS_MAXWELL on a cc 5.x card, else
** ATTN_SHORT_KEYS; n > 0 n keys (an A/B knob: m40-bench chatglm2's
** M40_BENCH_GLM_SHORT_KEYS, for a Maxwell card to decide on; tests). */
int m40__attn_short_keys = 0;

static m40k_attn_shape attn_shape(int H, const m40_tensor_desc *q, const m40_tensor_desc *kc,
                                  float scale) {
    m40k_attn_shape s = {.B = q->shape[0], .T = q->shape[1], .H = H, .G = kc->shape[2],
                         .D = kc->shape[3], .S = kc->shape[0], .L = kc->shape[1],
                         .qs0 = q->stride[0], .qs1 = q->stride[1],
                         .cache_f16 = kc->dtype == M40_DTYPE_F16,
                         .decode_variant = m40__attn_decode_variant,
                         .decode_max_splits = m40__attn_decode_max_splits,
                         .prefill_splits = m40__attn_prefill_splits,
                         .v5_ways = m40__attn_v5_ways > 0 ? m40__attn_v5_ways : 0,
                         .v5_wsplits = m40__attn_v5_wsplits > 1 ? m40__attn_v5_wsplits : 0};
    s.scale = scale != 0.0f ? scale : (float)(1.0 / sqrt((double)s.D));
    return s;
}

/* Which decode kernel runs where the knob is the default (variant 0), at
** T 1 with f16 caches and D 128 (elsewhere the tile kernel):
**   - under a key bound <= ATTN_SHORT_KEYS (m40_graph_set_attention_keys;
**     on a cc 5.x card ATTN_SHORT_KEYS_MAXWELL, below):
**     decode v5 (variant 10, a warp a query row; with RoPE its fused form)
**     in its ways: 16 warps a row folded in the block, no attn_combine
**     (sessions 29-30; v5's splits, at most ceil(bound / 16), are knob 0);
**     for one sequence to ATTN_V5_WAYS_KEYS (1K) with a split of the keys
**     a 256 past 512, each split's partial to attn_combine (session 40);
**     H200, session 18 (int4 ChatGLM2-6B step, 8192-token cache): +3.2% at
**     ctx 128, even at 1K, -34% at 8K, so the bound, not the cache length,
**     decides;
**   - else decode v6 (a key's dims over 16 lanes, no shared-memory operands;
**     session 19). Its two forms trade warps for instructions: 4 rows a lane
**     (12) has 16 warps a block, 8 rows (11) 8 warps and 21% fewer
**     instructions a key (sm_52: 234 against 295 warp instructions a key and
**     KV group; with F2F at a quarter rate 285 against 398). A short chain
**     per SM is latency-bound (more warps win), a long one issue-bound
**     (fewer instructions win), so 8 rows where the keys (the bound, or
**     without one the cache length; times the sequences) give each SM >=
**     ATTN_V6_ROWS8_KG key-groups: one sequence on the H200 (132 SMs, 2
**     groups) from ~17K keys, on an M40 (24 SMs) from 3K. H200, in a graph of 20 (4 rows / 8 rows / the 32-key
**     tile): 8.7 / 9.3 / 9.9 us at 128 keys, 9.3 / 10.0 / 10.7 at 1K, 13.7
**     / 14.1 / 18.7 at 8K, 29.4 / 28.9 / 41.9 at 32K; the int4 step +3.9% /
**     +5.1% / +6.0% at ctx 1K / 4K / 8K under the bound.
** m40__attn_v6 = 0 keeps the tile kernel where v6 would run (A/B). */
#define ATTN_SHORT_KEYS 512
/* On a Maxwell card (cc 5.x: the sm_52 SASS as it runs, F2F at a quarter
** rate, ~12 instructions a byte) v5 is issue-bound: each of a KV group's 16
** query rows loads and converts every key itself (sm_52: 284 instructions a
** warp a 4-key step, 32 of them F2F: ~50.6K weighted thread-instructions a
** key and group against v6's 9.1-12.7K). Projected on an M40
** (scripts/sass_ops_ipe.py --project; 3 us a launch; docs/projections.md),
** the node a layer, v5 ways (16, 1) / v6 + attn_combine: 8.7 / 9.9 us at
** 128 keys, 14.4 / 9.9 at 256, 25.7 / 10.8 at 512; the int4 step +1.0% at
** 256 and +3.3% at 512 with v6 there. A projection, not a measurement (no
** M40 here): m40__attn_short_keys is the knob to measure it on one. On the
** H100 this edge loses (v6 under bounds 256 / 512: int4 -5.6% / -2.2%;
** session 31), so it is Maxwell's only. */
#define ATTN_SHORT_KEYS_MAXWELL 128
#define ATTN_V6_ROWS8_KG 256
/* decode v5's ways (M40K_ATTN_V5_WAYS' row ATTN_V5_WAYS: 16 ways of 1 row)
** under a key bound <= ATTN_V5_WAYS_KEYS, so v5's splits no longer run by
** the rule. H100: session 29 took row 1, (8, 2), under bounds <= 256 (the
** step's decode tok/s against v5's splits + attn_combine, int8 / int4: 128
** +3.5% / +4.8%, 256 +1.2% / +1.7%, 512 -3.3% / -4.5%); session 30 measured
** row 8, (16, 1), against that rule (bench/NOTES.md, session 30): 128 +1.3%
** / +2.0%, 256 +2.6% / +3.9%, 512 (against v5's splits) +1.2% / +2.0%. Half
** a way's keys, a block a row: the chain the splits cut, on more SMs.
** Past 512 the ways without splits lose to v6 (session 31, H100, int4:
** -3.3% at 1K, -14% at 2K, -29% at 4K); with a split a ATTN_V5W_SPLIT_KEYS
** keys (below) they win to 1K and lose past it (session 40, H100, one
** sequence, against v6 + attn_combine, int8 / int4: 1K +2.2% / +2.8%, 2K
** -0.6% / -1.0%), so the edge is 1024 for one sequence on a device whose
** v5 edge is the default ATTN_SHORT_KEYS. Elsewhere (a Maxwell card, v5's
** edge set by its knob, B > 1: not measured past 512) the edge of sessions
** 30-31, ATTN_V5W_ONE_KEYS (512), or v5's where that is shorter. */
#define ATTN_V5_WAYS_KEYS 1024
#define ATTN_V5_WAYS 8
/* The ways' splits under a key bound past ATTN_V5W_ONE_KEYS (by the rule
** for one sequence to ATTN_V5_WAYS_KEYS; past it where
** m40__attn_v5_ways_keys asks): one split a ATTN_V5W_SPLIT_KEYS keys, each way's chain what it is under a
** 256-key bound, and the blocks ~one an SM at 1K (ChatGLM2: 2 groups x 16
** rows x 4 splits = 128). Under ATTN_V5W_ONE_KEYS one split (session 30's
** rule, measured without splits). */
#define ATTN_V5W_SPLIT_KEYS 256
#define ATTN_V5W_ONE_KEYS 512
static int attn_wsplits(int64_t keys) {
    if (m40__attn_v5_wsplits >= 0) return m40__attn_v5_wsplits;
    if (keys <= ATTN_V5W_ONE_KEYS) return 1;
    const int64_t n = (keys + ATTN_V5W_SPLIT_KEYS - 1) / ATTN_V5W_SPLIT_KEYS;
    return n > 32 ? 32 : (int)n; /* kernels/attention.h caps it there too */
}
int m40__attn_v6 = 1;
/* v5's edge on ctx's device (the longest key bound v5 runs under), and the
** longest its ways run under (knobs as documented above) */
static int64_t attn_short_keys(const m40_ctx *ctx) {
    return m40__attn_short_keys > 0 ? m40__attn_short_keys
           : ctx->cc_major == 5     ? ATTN_SHORT_KEYS_MAXWELL
                                    : ATTN_SHORT_KEYS;
}
static int64_t attn_ways_keys(const m40_ctx *ctx, int64_t B) {
    if (m40__attn_v5_ways_keys > 0) return m40__attn_v5_ways_keys;
    const int64_t short_keys = attn_short_keys(ctx);
    if (B == 1 && m40__attn_short_keys <= 0 && ctx->cc_major != 5) return ATTN_V5_WAYS_KEYS;
    return ATTN_V5W_ONE_KEYS < short_keys ? ATTN_V5W_ONE_KEYS : short_keys; /* sessions 30-31's edge */
}

/* q: the queries' device pointer where the kernel reads them as float4s
** (their rows must then be 16-byte aligned, as the launcher checks; else it
** would run the tile kernel with v5's or v6's split rule); NULL where they
** are read a float at a time (the fused RoPE) or sit in the aligned
** scratch. Only where v5 and v6 run: <= 16 query rows a KV group. */
static void attn_bound(const m40_ctx *ctx, m40k_attn_shape *s, const void *q) {
    if (s->decode_variant != 0 || s->T != 1 || !s->cache_f16 || s->D != 128 || s->G < 1 ||
        s->H / s->G > M40K_ATTN_DECODE_BM)
        return;
    if (q && ((uintptr_t)q % 16 != 0 || s->qs0 % 4 != 0 || s->qs1 % 4 != 0)) return;
    const int64_t keys = ctx->attn_keys > 0 && ctx->attn_keys < s->L ? ctx->attn_keys : s->L;
    /* v5 under bounds <= short_keys; its ways (the rule's) to wkeys */
    const int64_t short_keys = attn_short_keys(ctx), wkeys = attn_ways_keys(ctx, s->B);
    /* the ways' row under this bound: the rule's (under every bound <= wkeys),
    ** or the knob's where it names a row of M40K_ATTN_V5_WAYS; 0 v5's splits */
    const int ways = m40__attn_v5_ways < 0                     ? (ctx->attn_keys <= wkeys ? ATTN_V5_WAYS : 0)
                     : m40__attn_v5_ways <= M40K_ATTN_V5_NWAYS ? m40__attn_v5_ways
                                                               : 0;
    if (ctx->attn_keys > 0 && (ctx->attn_keys <= short_keys || (ways && ctx->attn_keys <= wkeys))) {
        s->decode_variant = 10;
        s->keys = ctx->attn_keys; /* its splits from the bound (m40k_attention_splits) */
        if (m40__attn_v5_ways < 0) s->v5_ways = ways; /* a forced row is attn_shape's */
        s->v5_wsplits = attn_wsplits(keys); /* the bound within the cache, as the planner reserved */
    } else if (m40__attn_v6) /* key-groups an SM, all sequences counted (double: no overflow) */
        s->decode_variant = (double)keys * (double)s->G * (double)s->B >=
                                    (double)ATTN_V6_ROWS8_KG * (ctx->sm_count > 0 ? ctx->sm_count : 1)
                                ? 11
                                : 12;
}

/* attn_bound for the tests (internal.h): which decode kernel a context
** with these properties and knobs would take for shape s */
void m40__attn_bound(const m40_ctx *ctx, m40k_attn_shape *s) { attn_bound(ctx, s, NULL); }

/* Decode blocks the device keeps resident (kernels/attention.h's split rule) */
static int attn_slots(const m40_ctx *ctx, const m40k_attn_shape *s) {
    return m40k_attention_slots(s, ctx->sm_count, ctx->smem_per_sm);
}

/* ws, ws_bytes (GPU): the scratch the caller took for the decode partials
** (the node with RoPE: behind its rotated queries); ws NULL: its own. */
static m40_status attend_run(m40_ctx *ctx, const char *fn, int H, float scale,
                             const m40_tensor *q, const m40_tensor *kc, const m40_tensor *vc,
                             const m40_tensor *pos, const m40_tensor *slot, m40_tensor *y,
                             void *ws_in, size_t ws_in_bytes) {
    m40k_attn_shape s = attn_shape(H, &q->desc, &kc->desc, scale);
    attn_bound(ctx, &s, q->data);
    const int32_t *sp = slot ? slot->data : NULL;
    if (s.B * s.T == 0) return M40_OK; /* no queries: an empty y */
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        size_t want = (size_t)m40k_attention_workspace(&s, attn_slots(ctx, &s)), got = want;
        void *ws = NULL;
        m40_status st = M40_OK;
        if (ws_in) ws = ws_in, got = ws_in_bytes;
        else if (want) st = m40__cuda_scratch(ctx, &got, &ws);
        if (st != M40_OK) return st;
        int e = m40k_attention(ctx->stream, &s, q->data, kc->data, vc->data, pos->data, sp,
                               y->data, ws, got, attn_slots(ctx, &s), ctx->guard, ctx->sync);
        ctx->guard_armed = true;
        return m40__launched(ctx, e, fn);
    }
#endif
    (void)ws_in, (void)ws_in_bytes; /* GPU only */
    m40_status st = cpu_indices(ctx, fn, pos, slot, s.S, s.L);
    if (st != M40_OK) return st;
    double *scratch = malloc((size_t)(s.L + s.D) * sizeof *scratch);
    if (!scratch) return m40__err(ctx, M40_ERR_OOM_HOST, "%s: no memory for the scores", fn);
    m40__ref_attention(s.B, s.T, s.H, s.G, s.D, s.L, s.scale, q->data, s.qs0, s.qs1,
                       s.cache_f16, kc->data, vc->data, pos->data, sp, y->data, scratch);
    free(scratch);
    return M40_OK;
}

/* ---- eager entry points ------------------------------------------------------ */

static m40_status check_tensor_opt(m40_ctx *ctx, const m40_tensor *t, const char *what) {
    return t ? m40__check_tensor(ctx, t, what) : M40_OK;
}

m40_status m40_kv_append(m40_ctx *ctx, const m40_tensor *kv, const m40_tensor *pos,
                         const m40_tensor *slot, m40_tensor *cache) {
    const char *fn = "m40_kv_append";
    m40_status st = m40__ctx_check(ctx);
    if (st || (st = m40__check_tensor(ctx, kv, "m40_kv_append: kv")) ||
        (st = m40__check_tensor(ctx, pos, "m40_kv_append: pos")) ||
        (st = check_tensor_opt(ctx, slot, "m40_kv_append: slot")) ||
        (st = m40__check_tensor(ctx, cache, "m40_kv_append: cache")))
        return st;
    const m40_tensor_desc *c = &cache->desc, *k = &kv->desc;
    const m40_tensor_desc *sd = slot ? &slot->desc : NULL;
    int64_t gd;
    if ((st = check_cache_desc(ctx, fn, "cache", c, -1, -1))) return st;
    if (m40__mul_i64(c->shape[2], c->shape[3], &gd)) /* (the size rule bounds it; kept checked) */
        return m40__err(ctx, M40_ERR_SHAPE, "%s: the cache's kv_heads·head_dim overflows", fn);
    if ((st = check_rows(ctx, fn, "kv", k, gd, "kv_heads·head_dim of the cache")) ||
        (st = check_index_descs(ctx, fn, &pos->desc, sd, k->shape[0], k->shape[1], c->shape[0])) ||
        (st = check_layout(ctx, fn, k, &pos->desc, sd, c, NULL, 1)))
        return st;
    return append_run(ctx, fn, kv, NULL, pos, slot, cache, NULL);
}

void m40_attention_desc_init(m40_attention_desc *d) {
    if (!d) return;
    d->struct_size = sizeof *d;
    d->heads = 1;
    d->kv_heads = 1;
    d->head_dim = 128;
    d->scale = 0.0f;
}

m40_status m40_attention(m40_ctx *ctx, const m40_attention_desc *d, const m40_tensor *q,
                         const m40_tensor *k_cache, const m40_tensor *v_cache,
                         const m40_tensor *pos, const m40_tensor *slot, m40_tensor *y) {
    const char *fn = "m40_attention";
    m40_status st = m40__ctx_check(ctx);
    if (st) return st;
    if (!d || d->struct_size < sizeof *d)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: desc is NULL or older than this "
                        "library's (use m40_attention_desc_init)", fn);
    if ((st = m40__check_tensor(ctx, q, "m40_attention: q")) ||
        (st = m40__check_tensor(ctx, k_cache, "m40_attention: k_cache")) ||
        (st = m40__check_tensor(ctx, v_cache, "m40_attention: v_cache")) ||
        (st = m40__check_tensor(ctx, pos, "m40_attention: pos")) ||
        (st = check_tensor_opt(ctx, slot, "m40_attention: slot")) ||
        (st = m40__check_tensor(ctx, y, "m40_attention: y")) ||
        (st = check_params(ctx, fn, d->heads, d->kv_heads, d->head_dim, d->scale)))
        return st;
    const m40_tensor_desc *kd = &k_cache->desc, *vd = &v_cache->desc, *qd = &q->desc;
    const m40_tensor_desc *sd = slot ? &slot->desc : NULL;
    int64_t HD = (int64_t)d->heads * d->head_dim;
    if ((st = check_cache_desc(ctx, fn, "k_cache", kd, d->kv_heads, d->head_dim)) ||
        (st = check_cache_desc(ctx, fn, "v_cache", vd, d->kv_heads, d->head_dim)))
        return st;
    if (kd->dtype != vd->dtype || !m40__same_shape(kd, vd))
        return m40__err(ctx, kd->dtype != vd->dtype ? M40_ERR_DTYPE : M40_ERR_SHAPE,
                        "%s: k_cache and v_cache differ in dtype or shape", fn);
    if ((st = check_rows(ctx, fn, "q", qd, HD, "heads·head_dim")) ||
        (st = check_rows(ctx, fn, "y", &y->desc, HD, "heads·head_dim")) ||
        (st = check_index_descs(ctx, fn, &pos->desc, sd, qd->shape[0], qd->shape[1],
                                kd->shape[0])))
        return st;
    if (y->desc.shape[0] != qd->shape[0] || y->desc.shape[1] != qd->shape[1])
        return m40__err(ctx, M40_ERR_SHAPE, "%s: y's [B,T] differ from q's", fn);
    if (!m40_tensor_desc_is_contiguous(&y->desc))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: y must be contiguous", fn);
    if ((st = check_layout(ctx, fn, qd, &pos->desc, sd, kd, vd, d->heads))) return st;
    return attend_run(ctx, fn, d->heads, d->scale, q, k_cache, v_cache, pos, slot, y, NULL, 0);
}

/* ---- the graph node: qkv [B,T,(H+2G)·D], k_cache, v_cache [S,L,G,D] STATE,
**      pos i32 [B,T], slot i32 [B]? -> y [B,T,H·D] ------------------------------- */

static m40_status attention_rule(const m40__op_call *c, m40_tensor_desc *out) {
    const m40_node_desc *nd = c->nd;
    m40_status st;
    int H = nd->heads, G = nd->kv_heads, D = nd->head_dim;
    if ((st = check_params(c->ctx, c->fn, H, G, D, nd->attn_scale)) ||
        (st = check_cache_desc(c->ctx, c->fn, "k_cache", c->in[1], G, D)) ||
        (st = check_cache_desc(c->ctx, c->fn, "v_cache", c->in[2], G, D)))
        return st;
    if (c->in[1]->dtype != c->in[2]->dtype || !m40__same_shape(c->in[1], c->in[2]))
        return m40__rule_fail(c, c->in[1]->dtype != c->in[2]->dtype ? M40_ERR_DTYPE
                              : M40_ERR_SHAPE, "k_cache and v_cache differ in dtype or shape");
    const m40_tensor_desc *x = c->in[0];
    if ((st = check_rows(c->ctx, c->fn, "qkv", x, ((int64_t)H + 2 * (int64_t)G) * D,
                         "(heads+2·kv_heads)·head_dim")) ||
        (st = check_index_descs(c->ctx, c->fn, c->in[3], c->nd->ninputs > 4 ? c->in[4] : NULL,
                                x->shape[0], x->shape[1], c->in[1]->shape[0])))
        return st;
    /* RoPE on Q and K first (rope_dims 0: none), as the ROPE op's rule */
    if (nd->rope_dims != 0 && (st = m40__rope_rule_params(c, D))) return st;
    int64_t s[3] = {x->shape[0], x->shape[1], (int64_t)H * D};
    return m40__rule_out(c, out, M40_DTYPE_F32, 3, s);
}

static m40_status attention_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    (void)out;
    return check_layout(c->ctx, c->fn, c->in[0], c->in[3], c->nd->ninputs > 4 ? c->in[4] : NULL,
                        c->in[1], c->in[2], c->nd->heads + 2 * c->nd->kv_heads);
}

/* The rotated queries of a node with RoPE ([B,T,H·D] f32, y's size), in
** front of the decode partials in the scratch, rounded up to 256 bytes. */
static uint64_t rope_q_bytes(const m40_tensor_desc *y) {
    return ((uint64_t)m40_tensor_desc_numel(y) * 4u + 255u) & ~(uint64_t)255u;
}

/* the partial (max, sum, out[D]) of each query row and KV split
** (kernels/attention.h's rule: decode (T <= 8) by the cache length, prefill
** where its grid leaves the GPU part empty). With RoPE, the rotated queries
** too (rope_q_bytes). */
static m40_status attention_workspace(const m40__op_call *c, const m40_tensor_desc *out,
                                      int sm_count, uint64_t *bytes) {
    *bytes = 0;
    m40k_attn_shape s = attn_shape(c->nd->heads, out, c->in[1], c->nd->attn_scale);
    int64_t n = m40k_attention_splits(&s, sm_count ? attn_slots(c->ctx, &s) : 0), b = 0;
    if (s.decode_variant == 0 && s.T == 1) { /* a key bound may choose decode v5 or v6 at run time (attn_bound) */
        static const int bv[] = {10, 11, 12, 10};
        for (int i = 0; i < 4; i++) {
            m40k_attn_shape s5 = s;
            s5.decode_variant = bv[i];
            if (i == 3) { /* v5's ways with their splits under the longest bound they run under */
                /* a forced row runs wherever v5 does: to v5's edge too */
                const int64_t sk = attn_short_keys(c->ctx), w0 = attn_ways_keys(c->ctx, s.B);
                const int64_t wk = m40__attn_v5_ways > 0 && sk > w0 ? sk : w0, k = wk < s.L ? wk : s.L;
                s5.v5_ways = s.v5_ways > 0 ? s.v5_ways : ATTN_V5_WAYS, s5.v5_wsplits = attn_wsplits(k);
                s5.keys = k;
            }
            const int64_t n5 = m40k_attention_splits(&s5, sm_count ? attn_slots(c->ctx, &s5) : 0);
            if (n5 > n) n = n5;
        }
    }
    if (n > 1 && (m40__mul_ok(s.B * s.T, s.H * n, M40__OP_BYTES_MAX, &b) ||
                  m40__mul_ok(b, (s.D + 2) * 4, M40__OP_BYTES_MAX, &b)))
        return m40__rule_fail(c, M40_ERR_SHAPE, "the attention scratch would take 2^62 bytes or more");
    /* with RoPE: the rotated queries first (out's size, bounded by the rule) */
    *bytes = (uint64_t)(n > 1 ? b : 0) + (c->nd->rope_dims ? rope_q_bytes(out) : 0);
    return M40_OK;
}

/* qkv's columns [col0, col0 + cols) as a [B,T,cols] view (same strides). */
static m40_tensor part_of(const m40_tensor *qkv, int64_t col0, int64_t cols) {
    m40_tensor v = *qkv;
    v.desc.shape[2] = cols;
    v.data = (float *)qkv->data + col0;
    return v;
}

/* RoPE (nd->rope_dims > 0) fused with the append: the GPU turns Q and K as
** it appends (m40k_rope_kv_append; Q into the scratch), the CPU turns a
** copy of qkv's Q and K heads with the ROPE op's reference first. */
static m40_status rope_attention_run(m40_ctx *ctx, const m40__op_run *r) {
    const m40_node_desc *nd = r->nd;
    int64_t H = nd->heads, G = nd->kv_heads, D = nd->head_dim;
    const m40_tensor *slot = nd->ninputs > 4 ? r->in[4] : NULL, *x = r->in[0], *pos = r->in[3];
    m40_tensor *kc = (m40_tensor *)r->in[1], *vc = (m40_tensor *)r->in[2];
    const m40_tensor_desc *xd = &x->desc;
    const int64_t B = xd->shape[0], T = xd->shape[1], W = (H + 2 * G) * D;
    if (B * T == 0) return M40_OK;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) {
        const m40_tensor_desc *cd = &kc->desc;
        m40k_attn_shape s = attn_shape(nd->heads, &r->out->desc, cd, nd->attn_scale);
        attn_bound(ctx, &s, NULL); /* qkv read a float at a time, or the scratch */
        const size_t qb = (size_t)rope_q_bytes(&r->out->desc);
        const size_t want = qb + (size_t)m40k_attention_workspace(&s, attn_slots(ctx, &s));
        size_t got = want;
        void *ws = NULL;
        m40_status st = m40__cuda_scratch(ctx, &got, &ws);
        if (st != M40_OK) return st;
        if (!ws || got < qb)
            return m40__err(ctx, M40_ERR_OOM_DEVICE, "%s: no device scratch for the rotated "
                            "queries (%zu bytes)", r->fn, qb);
        m40k_attn_shape sq = s; /* the queries read from qkv, turned in the kernel */
        sq.qs0 = xd->stride[0], sq.qs1 = xd->stride[1];
        if (m40k_rope_attention_fuses(&sq, nd->rope_dims, (int)nd->rope_pairs, attn_slots(ctx, &sq),
                                      kc->data, vc->data)) { /* a decode step: one launch */
            int e = m40k_rope_attention(ctx->stream, &sq, nd->rope_dims, (int)nd->rope_pairs,
                                        nd->rope_theta, nd->rope_scale, x->data, pos->data,
                                        slot ? slot->data : NULL, kc->data, vc->data,
                                        r->out->data, (char *)ws + qb, got - qb,
                                        attn_slots(ctx, &sq), ctx->guard, ctx->sync);
            ctx->guard_armed = true;
            return m40__launched(ctx, e, r->fn);
        }
        int e = m40k_rope_kv_append(ctx->stream, (int)H, (int)G, (int)D, nd->rope_dims,
                                    (int)nd->rope_pairs, nd->rope_theta, nd->rope_scale, B, T,
                                    x->data, xd->stride[0], xd->stride[1], pos->data,
                                    slot ? slot->data : NULL, cd->shape[0], cd->shape[1],
                                    cd->dtype == M40_DTYPE_F16, kc->data, vc->data, ws,
                                    ctx->guard);
        ctx->guard_armed = true;
        if ((st = m40__launched(ctx, e, r->fn)) != M40_OK) return st;
        m40_tensor q = *r->out; /* [B,T,H·D] contiguous, as y */
        q.data = ws;
        return attend_run(ctx, r->fn, nd->heads, nd->attn_scale, &q, kc, vc, pos, slot, r->out,
                          (char *)ws + qb, got - qb);
    }
#endif
    /* CPU: a contiguous copy of the rows, Q and K heads turned in place */
    const int32_t *pp = pos->data;
    m40_status st = m40__rope_cpu_positions(ctx, r->fn, pp, B * T);
    if (st != M40_OK) return st;
    float *cp = malloc((size_t)(B * T * W) * sizeof *cp);
    if (!cp) return m40__err(ctx, M40_ERR_OOM_HOST, "%s: no memory for the rotated rows", r->fn);
    for (int64_t i = 0; i < B * T; i++)
        memcpy(cp + i * W, (const float *)x->data + (i / T) * xd->stride[0] + (i % T) * xd->stride[1],
               (size_t)W * sizeof *cp);
    m40_rope_desc rd;
    m40__rope_desc_of(nd, &rd);
    rd.heads = (int)(H + G); /* the query and key heads of each row */
    m40__ref_rope(&rd, B * T, W, cp, W, pp, cp, W);
    m40_tensor rows = *x;
    int64_t shp[3] = {B, T, W};
    m40_tensor_desc_make(&rows.desc, M40_DTYPE_F32, 3, shp);
    rows.data = cp;
    m40_tensor q = part_of(&rows, 0, H * D), k = part_of(&rows, H * D, G * D),
               v = part_of(&rows, (H + G) * D, G * D);
    st = append_run(ctx, r->fn, &k, &v, pos, slot, kc, vc);
    if (st == M40_OK)
        st = attend_run(ctx, r->fn, nd->heads, nd->attn_scale, &q, kc, vc, pos, slot, r->out,
                        NULL, 0);
    free(cp);
    return st;
}

static m40_status attention_run(m40_ctx *ctx, const m40__op_run *r) {
    const m40_node_desc *nd = r->nd;
    if (nd->rope_dims) return rope_attention_run(ctx, r);
    int64_t H = nd->heads, G = nd->kv_heads, D = nd->head_dim;
    const m40_tensor *slot = nd->ninputs > 4 ? r->in[4] : NULL;
    m40_tensor q = part_of(r->in[0], 0, H * D), k = part_of(r->in[0], H * D, G * D),
               v = part_of(r->in[0], (H + G) * D, G * D);
    /* the caches are the node's STATE inputs: it writes them */
    m40_tensor *kc = (m40_tensor *)r->in[1], *vc = (m40_tensor *)r->in[2];
    m40_status st = append_run(ctx, r->fn, &k, &v, r->in[3], slot, kc, vc);
    if (st != M40_OK) return st;
    return attend_run(ctx, r->fn, nd->heads, nd->attn_scale, &q, kc, vc, r->in[3], slot, r->out,
                      NULL, 0);
}

const m40__op_def m40__op_attention = {
    .op = M40_OP_ATTENTION, .name = "attention", .inplace = 0, .min_in = 4, .max_in = 5,
    .in_names = {"qkv", "k_cache", "v_cache", "pos", "slot"}, .out_name = "y",
    .state_inputs = (1u << 1) | (1u << 2), .rule = attention_rule,
    .workspace = attention_workspace, .run_check = attention_run_check,
    .run_cpu = attention_run, M40__GPU(attention_run)};
