/* KV-cache append and causal grouped-query attention launchers
** (kernels/attention.cu). Launcher contract as every kernels/<family>.h:
** callable from C, the stream as void*, a cudaError_t as int. Shapes and
** strides are checked by lib/ops/attention.c; indices read from device
** memory (pos, slot) are checked by the kernels against the index guard
** (kernels/guard.h; `guard` may be NULL: no report).
**
** The split rule below is plain C so that the op file's workspace function
** (the planner's figure, also on CPU builds) uses the launcher's own rule. */
#ifndef M40_KERNELS_ATTENTION_H
#define M40_KERNELS_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Decode (T <= M40K_ATTN_DECODE_T) splits the KV length of each (sequence,
** KV group, query tile) over `splits` blocks; prefill runs one block per
** query tile over its keys, or, where those tiles are fewer than the
** device's resident blocks, 2..4 blocks a tile, each a share of its keys
** (m40k_attention_prefill_splits). */
#define M40K_ATTN_DECODE_T 8
#define M40K_ATTN_DECODE_BM 16    /* query rows (t, head) per decode block */
#define M40K_ATTN_MIN_CHUNK 64    /* keys a split holds at least with the 64-key tile */
#define M40K_ATTN_MAX_SPLITS 1024 /* the combine kernel's bound */
#define M40K_ATTN_PLAN_SLOTS 640  /* slots 0 (the planner): any GPU up to 160 SMs x 4 (the
                                  ** default tile kernel; decode v3 plans on a device) */

typedef struct m40k_attn_shape {
    int64_t B, T, H, G, D; /* batch, queries per sequence, heads, KV heads, head dim */
    int64_t S, L;          /* cache slots and length: caches [S, L, G, D] contiguous */
    int64_t qs0, qs1;      /* q's strides of b and t, in floats (last dim contiguous) */
    float scale;           /* resolved: q·k·scale */
    int cache_f16;         /* caches F16 (else F32) */
    int decode_variant;    /* 0 (default) and 5: the tile kernel, at D 65..128 with
                           ** 32 keys a tile and a split at least (else 64), so a
                           ** short context still spreads over several blocks and
                           ** each block's serial chain is short; 1: the tile kernel
                           ** with 64 keys (the default before 2026-12-02); 6: 16 keys
                           ** (D 65..128; f16 with 16-byte rows: the K-first form
                           ** of 7, also with the fused RoPE); 2: decode v3 with 4 rows a warp, 3: with
                           ** 8; 4: the 64-key tile kernel with each tile's loads a
                           ** phase early (f16, D 128); 7: the 32-key tile with its
                           ** loads a phase early and the first K tile fetched
                           ** before Q (f16, D 65..128, 16-byte rows; variant 0
                           ** runs it there too; 5 is the 32-key tile without)
                           ** 10: decode v5, a warp a query row, a lane 4 dims
                           ** (f16, 16-byte rows, D 128; short contexts: the node
                           ** takes it under a key bound <= 512, lib/ops/attention.c)
                           ** 11 and 12: decode v6, a key's dims over 16 lanes,
                           ** 8 and 4 query rows a lane (f16, 16-byte rows, D
                           ** 128; lib/ops/attention.c takes it for the default
                           ** at T 1 past a 512-key bound or without one)
                           ** 8 and 9: decode v4, v3 with 4 keys a lane (128-key
                           ** steps; 4 and 8 rows a warp), whose shared-memory
                           ** traffic a key is a third of the tile kernel's
                           ** (where they apply; m40-bench attention's A/B,
                           ** test_attention_gpu runs each; bench/NOTES.md) */
    int decode_max_splits; /* decode (T <= M40K_ATTN_DECODE_T): 0 (default) the rule
                           ** below; n > 0 at most n splits (an A/B knob,
                           ** lib/ops/attention.c's m40__attn_decode_max_splits) */
    int prefill_splits;    /* prefill (T > M40K_ATTN_DECODE_T): 0 (default) the rule of
                           ** m40k_attention_prefill_splits, n >= 1 n key shares
                           ** (bench and test A/B; capped as the rule is) */
    int64_t keys;          /* decode: the key bound the call runs under (the graph's
                           ** m40_graph_set_attention_keys; 0: none, the cache's L).
                           ** Decode v5 takes at most ceil(keys / 16) splits
                           ** (m40k_attention_splits; session 28) */
    int v5_ways;           /* decode v5 (variant 10) in one block per (b, g, RB query
                           ** rows), W warps a row over shares of all the keys, folded
                           ** in the block: no partials, no attn_combine launch
                           ** (session 29). 0 (default): v5's splits; n in 1..8 the
                           ** (W, RB) of M40K_ATTN_V5_WAYS' row n (an A/B knob:
                           ** lib/ops/attention.c's m40__attn_v5_ways) */
    int v5_wsplits;        /* decode v5's ways (v5_ways > 0): n > 1 splits of the keys
                           ** for each (b, g, RB rows), the ways sharing a split's
                           ** keys, each block's fold a partial for attn_combine
                           ** (session 40; m40k_attention_splits caps n as v5's
                           ** splits are capped); 0 or 1 one split, folded in the
                           ** block (lib/ops/attention.c's m40__attn_v5_wsplits) */
} m40k_attn_shape;
/* decode v5's ways (m40k_attn_shape::v5_ways n: W = row n's first, RB its second) */
#define M40K_ATTN_V5_WAYS {{1, 16}, {8, 2}, {8, 4}, {4, 4}, {4, 8}, {16, 2}, {2, 16}, {8, 1}, {16, 1}}
#define M40K_ATTN_V5_NWAYS 8

/* Decode v3 runs (kernels/attention.cu; variants 2, 3; v4: 8, 9): T·HPG <= 16 query rows a KV
** group, D <= 128, and 16-byte aligned cache rows (the launcher's check;
** the split rule below does not need it). */
static inline int m40k_attention_v3(const m40k_attn_shape *s) {
    return (s->decode_variant == 2 || s->decode_variant == 3 || s->decode_variant == 8 ||
            s->decode_variant == 9) &&
           s->T >= 1 && s->T <= M40K_ATTN_DECODE_T && s->G >= 1 &&
           s->T * (s->H / s->G) <= M40K_ATTN_DECODE_BM && s->D <= 128;
}

/* Decode v6 (kernels/attention.cu; variants 11 and 12: 8 and 4 query rows a
** lane), where the launcher's conditions hold (T·HPG <= 16, f16, D 128,
** 16-byte rows; lib/ops/attention.c's attn_bound picks it). */
static inline int m40k_attention_v6(const m40k_attn_shape *s) {
    return s->decode_variant == 11 || s->decode_variant == 12;
}

/* Decode blocks the device keeps resident, the split rule's `slots`: decode
** v3 (~80 registers, 10 KB of shared memory a block) 6 an SM on sm_52 and
** later, v4 4 (its f16 instances' launch bounds; the f32 ones hold 3 with
** 4 rows a warp, so their splits take ~1.3 waves: v4 is opt-in); the tile kernel 2..4 by its 47.6 KB of shared memory (M40 2, H200
** 4). Prefill (T > M40K_ATTN_DECODE_T): the BM-64 kernel's blocks, 3 an SM by
** its 168 registers (launch bounds), fewer where 48,128 B of shared memory a
** block allow fewer (M40 2, H200 3). 0 without a device (the planner:
** M40K_ATTN_PLAN_SLOTS). */
static inline int m40k_attention_slots(const m40k_attn_shape *s, int sm_count, int smem_per_sm) {
    if (sm_count <= 0) return 0;
    if (s->T > M40K_ATTN_DECODE_T) {
        const int per = smem_per_sm / 48128;
        return sm_count * (per < 1 ? 1 : per > 3 ? 3 : per);
    }
    if (m40k_attention_v3(s)) return sm_count * (s->decode_variant >= 8 ? 4 : 6);
    if (m40k_attention_v6(s)) return sm_count; /* decode v6: a block an SM */
    int per = smem_per_sm / (48 * 1024);
    return sm_count * (per < 2 ? 2 : per > 4 ? 4 : per);
}

/* The number of KV splits of a decode call (1: no partials, no workspace):
** about one block per resident-block slot of the device (`slots` = SMs x
** decode blocks an SM holds: 2 on an M40, whose 96 KB of shared memory per
** SM hold two 47.6 KB tiles; 4 on an H200; lib/ops/attention.c), each at
** least M40K_ATTN_MIN_CHUNK keys of L. One wave of resident blocks: more
** would add partials (5% of the bytes at 8K on an M40) and no bandwidth. */
/* One wave of decode blocks: the splits `slots` allow before the key cap. */
static inline int64_t m40k_attention_wave(const m40k_attn_shape *s, int slots) {
    int64_t n_slots = slots > 0 && slots < M40K_ATTN_PLAN_SLOTS ? slots : M40K_ATTN_PLAN_SLOTS;
    int64_t rows = s->T * (s->H / s->G);
    int64_t base = s->B * s->G * ((rows + M40K_ATTN_DECODE_BM - 1) / M40K_ATTN_DECODE_BM);
    return (n_slots + base - 1) / base;
}

/* Keys a decode tile holds, and a split at least. At D 65..128: variant 6
** 16, 5 32, 0 (the default) 32 when one wave's splits leave a block fewer
** than 128 keys of L (the H200: 132 SMs x 4; a block's serial chain, not
** the bytes, sets the time), else 64 (an M40's 48 slots at L >= 3072: the
** 64-key tile issues 12% fewer instructions a key, sm_52 SASS); else 64. */
static inline int64_t m40k_attention_chunk(const m40k_attn_shape *s, int slots) {
    if (s->D > 64 && s->D <= 128 && s->T <= M40K_ATTN_DECODE_T && s->B >= 1 && s->T >= 1 &&
        s->G >= 1) {
        if (s->decode_variant == 6) return 16;
        if (s->decode_variant == 10) return 16; /* decode v5's shares (kernels/attention.cu V5_CHUNK) */
        if (m40k_attention_v6(s)) return 32; /* decode v6's V6_CHUNK */
        if (s->decode_variant == 8 || s->decode_variant == 9) return 128; /* a v4 step */
        if (s->decode_variant == 5 || s->decode_variant == 7) return 32;
        if (s->decode_variant == 0) return s->L < 128 * m40k_attention_wave(s, slots) ? 32 : 64;
    }
    return M40K_ATTN_MIN_CHUNK;
}

/* Key shares of a prefill call (T > M40K_ATTN_DECODE_T) at D 65..128, the BM-64
** kernel's: a grid of B·G·ceil(T·H/G / 64) query tiles fewer than the GPU's
** `slots` (m40k_attention_slots: the BM-64 blocks it keeps resident) splits
** each tile's keys into n BN-aligned shares, n the fewest that make a full
** wave (at most 4), and attn_combine_rows folds them. H200 (396 slots),
** ChatGLM2's shape (bench/NOTES.md, session 20), µs none / the rule: T 128
** 55.7 / 32.0 (4 shares), T 256 79.7 / 57.1 (4), T 512 126.4 (paired) /
** 116.8 (2; 3 and 4 were 128.4 and 137.6: the partials' bytes grow with
** the shares). An M40 (48 slots) keeps 1 from T 96. The shares are of a
** tile's keys: at most L / 32 of them. */
#define M40K_ATTN_PREFILL_MAX_SPLITS 4
static inline int64_t m40k_attention_prefill_splits(const m40k_attn_shape *s, int slots) {
    if (s->D <= 64 || s->D > 128 || s->B < 1 || s->T < 1 || s->G < 1 || s->H < s->G) return 1;
    const int64_t n_slots = slots > 0 && slots < M40K_ATTN_PLAN_SLOTS ? slots : M40K_ATTN_PLAN_SLOTS;
    const int64_t tiles = s->B * s->G * ((s->T * (s->H / s->G) + 63) / 64);
    int64_t n = s->prefill_splits > 0 ? s->prefill_splits
                : tiles >= n_slots    ? 1
                                      : (n_slots + tiles - 1) / tiles;
    const int64_t cap = (s->L + 31) / 32;
    if (n > M40K_ATTN_PREFILL_MAX_SPLITS) n = M40K_ATTN_PREFILL_MAX_SPLITS;
    if (n > cap) n = cap;
    return n < 1 ? 1 : n;
}

/* A decode split count n within its caps: a share of at least `share` keys
** each of klen, at most maxn, the decode_max_splits knob's, at least 1 */
static inline int64_t m40k_attention_decode_caps(const m40k_attn_shape *s, int64_t n, int64_t klen,
                                                 int64_t share, int64_t maxn) {
    const int64_t cap = (klen + share - 1) / share;
    if (n > cap) n = cap;
    if (n > maxn) n = maxn;
    if (s->decode_max_splits > 0 && n > s->decode_max_splits) n = s->decode_max_splits;
    return n < 1 ? 1 : n;
}

static inline int64_t m40k_attention_splits(const m40k_attn_shape *s, int slots) {
    if (s->T > M40K_ATTN_DECODE_T) return m40k_attention_prefill_splits(s, slots);
    if (s->B < 1 || s->T < 1 || s->G < 1) return 1;
    const int64_t klen = s->decode_variant == 10 && s->keys > 0 && s->keys < s->L ? s->keys : s->L;
    if (s->decode_variant == 10 && s->v5_ways >= 1 && s->v5_ways <= M40K_ATTN_V5_NWAYS && s->D == 128 &&
        s->cache_f16 && s->T * (s->H / s->G) <= M40K_ATTN_DECODE_BM)
        /* decode v5's ways (where the launcher can run v5; else the rule
        ** below for the tile kernel it runs): v5_wsplits, at most 32 and a
        ** 16-key share each of the bound's keys */
        return m40k_attention_decode_caps(s, s->v5_wsplits > 1 ? s->v5_wsplits : 1, klen, 16, 32);
    /* decode v5 (short contexts): at most 32 splits a (b, g), so a short
    ** context in a long cache is not hundreds of 16-warp blocks that only
    ** find they have no keys (ncu, session 17: 528 such blocks cost v5 its
    ** whole gain in an 8192-token cache). Under a key bound its shares are
    ** of the keys the bound allows, not of the cache (session 28, H100,
    ** int4 step: 8 splits at ctx 128 +1.2% against the cache's 32, 16 at
    ** 256 +0.6%) */
    return m40k_attention_decode_caps(s, m40k_attention_wave(s, slots), klen, m40k_attention_chunk(s, slots),
                                      s->decode_variant == 10 ? 32 : M40K_ATTN_MAX_SPLITS);
}

/* Workspace bytes of a call: B·T·H·splits·(D + 2) floats (the partial
** (max, sum, out[D]) of each query row and split), 0 with one split.
** The caller has bounded B·T·H·D (the output's size), so with splits <=
** 1024 and D <= 256 this cannot wrap. */
static inline uint64_t m40k_attention_workspace(const m40k_attn_shape *s, int slots) {
    int64_t n = m40k_attention_splits(s, slots);
    if (n <= 1) return 0;
    return (uint64_t)s->B * (uint64_t)s->T * (uint64_t)s->H * (uint64_t)n *
           (uint64_t)(s->D + 2) * 4u;
}

/* Which kernel runs prefill (T > M40K_ATTN_DECODE_T) at head dims 65..128:
** 1 the BM-64 kernel with K and V in chunks, 0 the tile kernel's BM-32
** configuration, 2 (default) auto: 1 with key shares, from one wave of
** BM-64 blocks (`slots`, m40k_attention_slots' prefill count; or slots 0),
** or where the BM-64 grid is resident at once (paired); else 0 (until
** session 20: 1 from 1.5 waves of the tile kernel's slots). An internal knob for A/B timing
** (m40-bench attention with M40_ATTN_AB=1) and tests
** (M40_ATTN_PREFILL_VARIANT); set it before a launch, from one thread
** (docs/attention.md). */
extern int m40k_attn_prefill_variant;
/* 1 (default): a prefill grid that is resident all at once pairs query tile
** mtiles-1-j with tile j in one block, so the blocks' keys are even (the
** causal triangle otherwise leaves the SMs that drew short tiles idle);
** 0: one tile a block. Same kind of knob as above (M40_ATTN_AB, tests). */
extern int m40k_attn_prefill_pair;
/* The empty-split skip: a decode call's splits past the sequence's keys (a
** short context in a long cache: ctx 128 in L 8192 leaves 260 of the
** H200's 264 tile-kernel splits empty) return at once and write no
** partial, and the combine reads pos and folds only the splits with keys.
** 1 (default): the tile kernels skip; decode v5 (at most 32 splits) and v6
** (a split an SM) run every split and their combine folds all partials
** without reading pos first (session 28, H100: int4 +0.6% at ctx 128,
** +1.1% at 512, +0.3-0.7% at 1K and 8K; bench/NOTES.md); 2: every kernel
** skips (the rule until session 28); 0: none does. Same kind of knob
** (M40_ATTN_AB, M40_BENCH_GLM_SKIP, tests). */
extern int m40k_attn_skip_empty;
/* 1: a decode call of the tile kernel with splits > 1, given the context's
** sync words (`sync`, kernels/guard.h; NULL: off), folds the splits'
** partials in its own last blocks (a counter per group of 16 splits and one
** per (b, g), each reset by the block that completes it), so no
** attn_combine launch follows; 0 (default): attn_combine as before. Correct
** (test_attention_gpu runs both) and slower on the H200 as written: +10 µs
** a call at ctx 128, +50-75 µs from 1K (session 14, bench/NOTES.md). With
** decode v5 (decode_variant 10) its own last block folds them (v5_fold, one
** counter a (b, g)): slower too (session 17). Same kind of knob (M40_ATTN_AB,
** M40_BENCH_GLM_FUSE_COMBINE, tests). */
extern int m40k_attn_fuse_combine;
/* 1: the decode tile kernels at D 128 with 32 or 64 keys a tile (the
** defaults' tiles, the fused RoPE one included) split P·V over their four
** warps by key, a lane 4 rows × 16 dims: 64 FMA for 5 shared-memory loads
** a key (against 16 for 3), the warps' partial O summed at the end of the
** split; the shared-memory path is what holds the M40's 64-key tile at long
** contexts (bench/NOTES.md, session 12). 0 (default): as before. Same kind
** of knob (M40_ATTN_AB, M40_BENCH_GLM_WARP_PV, tests). */
extern int m40k_attn_warp_pv;
/* 1: the K-first 32-key decode tile (f16 caches, D 65..128, the H200's
** default, and its fused RoPE form) runs 8 query rows a block instead of
** 16: twice the blocks, each with half the chain of dependent
** instructions (a short context's decode attention is that chain, not
** bytes: bench/NOTES.md, session 6); K and V are read by both halves (from
** L2). 0 (default): 16 rows. Same kind of knob (M40_ATTN_AB,
** M40_BENCH_GLM_ROWS8, tests). */
extern int m40k_attn_rows8;

/* cache[slot[b], pos[b,t], :GD] = kv[b, t, :] converted to the cache dtype:
** kv rows at b·kvs0 + t·kvs1 floats; pos I32 [B,T] (-1 skips the row),
** slot I32 [B] or NULL. Guarded: KV_POS, KV_SLOT. */
int m40k_kv_append(void *stream, int64_t B, int64_t T, int64_t GD, const float *kv,
                   int64_t kvs0, int64_t kvs1, const int32_t *pos, const int32_t *slot,
                   int64_t S, int64_t L, int cache_f16, void *cache, unsigned *guard);
/* K and V in one launch (the attention node: one kernel a layer, not two):
** k rows into k_cache and v rows into v_cache, the same strides, positions
** and slots as m40k_kv_append. */
int m40k_kv_append2(void *stream, int64_t B, int64_t T, int64_t GD, const float *k,
                    const float *v, int64_t kvs0, int64_t kvs1, const int32_t *pos,
                    const int32_t *slot, int64_t S, int64_t L, int cache_f16, void *k_cache,
                    void *v_cache, unsigned *guard);

/* The attention node's RoPE fused with its append (one launch): for each
** qkv row (b, t) at b·qs0 + t·qs1 floats, [H Q heads | G K heads | G V
** heads] of D: the Q and K heads' first rope_dims dims rotated as
** m40k_rope rotates them (pairs 0 adjacent, 1 half; the same bits), Q
** written to q_out [B·T, H·D] contiguous, K and V appended as
** m40k_kv_append2 appends them (pos -1: Q unrotated, nothing appended).
** D <= 256. Guarded: KV_POS, KV_SLOT. */
int m40k_rope_kv_append(void *stream, int H, int G, int D, int rope_dims, int pairs, float theta,
                        float pos_scale, int64_t B, int64_t T, const float *qkv, int64_t qs0,
                        int64_t qs1, const int32_t *pos, const int32_t *slot, int64_t S,
                        int64_t L, int cache_f16, void *k_cache, void *v_cache, float *q_out,
                        unsigned *guard);

/* The attention node's RoPE, append and attention in ONE launch (a decode
** step's T 1 at D 128, f16 caches, adjacent pairs, the default decode
** kernel where it takes 32-key tiles, the 16-key tile of variant 6, decode
** v5 (variant 10) and v6 (11, 12) at any L): m40k_rope_attention_fuses says
** whether it applies, else the node runs m40k_rope_kv_append then
** m40k_attention. The tile block whose keys hold the new position appends
** the row of its group (K turned), and uses those values for that key in
** place of what it fetched; every block turns its Q rows as it loads them.
** Same results, guard reports and cache contents as the two launches,
** given distinct slots across the B rows (a repeated slot: a row may not
** see the key another row appends in the same launch). s:
** qs0 / qs1 are qkv's strides. m40k_attn_fuse_rope (default 1): 0 turns
** it off (M40_BENCH_GLM_FUSE_ROPE, tests). */
extern int m40k_attn_fuse_rope;
int m40k_rope_attention_fuses(const m40k_attn_shape *s, int rope_dims, int pairs, int slots,
                              const void *k_cache, const void *v_cache);
int m40k_rope_attention(void *stream, const m40k_attn_shape *s, int rope_dims, int pairs,
                        float theta, float pos_scale, const float *qkv, const int32_t *pos,
                        const int32_t *slot, void *k_cache, void *v_cache, float *y, void *ws,
                        size_t ws_bytes, int slots, unsigned *guard, unsigned *sync);

/* y [B, T, H·D] contiguous = causal GQA of q over the caches (see
** m40/transformer.h). ws: m40k_attention_workspace(s, slots) bytes, or
** fewer (then one split: correct, slower). Guarded: ATTN_POS, ATTN_SLOT.
** sync: the context's M40K_SYNC_WORDS counters (kernels/guard.h), zero
** before and after the call, or NULL (the combine as its own launch). */
int m40k_attention(void *stream, const m40k_attn_shape *s, const float *q, const void *k_cache,
                   const void *v_cache, const int32_t *pos, const int32_t *slot, float *y,
                   void *ws, size_t ws_bytes, int slots, unsigned *guard, unsigned *sync);

#ifdef __cplusplus
}
#endif
#endif
