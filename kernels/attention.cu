/* KV-cache append and causal grouped-query attention, FP32 math on sm_52
** (fp16 caches converted with __half2float on load; no half arithmetic).
**
** One tile kernel serves prefill and decode: a block owns BM query rows of
** one (sequence b, KV group g) -- row r is (t, head) = (r / HPG, g·HPG +
** r % HPG), HPG = H/G, so the HPG heads of a group share every K/V tile
** the block loads (GQA: ChatGLM2's 16 heads per group read each K/V row
** once) -- and walks BN-key tiles of the cache with an online softmax (the
** running max m, sum l and unnormalized out[D] per row; no T×L matrix):
**   1. K tile [BN][DP] -> smem (16-byte loads: 8 halves or 4 floats)
**   2. S = Q·Kᵀ, register-tiled SR×SC per thread (float4 along D from Q
**      [BM][DP+4] and K [BN][DP+4]; the SC columns of a thread are BN/SC
**      apart, so 8 threads of a quarter-warp read 8 different bank quads)
**   3. mask j > pos[row] (causal, per query row), -> P [BN][BM+pad] smem
**   4. per row (NT/BM threads, shuffles): new max, rescale α, p = 2^(s-m)
**      (Q is pre-scaled by scale·log2 e), l = l·α + Σp; V tile -> smem
**   5. O = O·α + P·V, register-tiled OR rows × 8 dims per thread
** Head dims are padded to DP ∈ {64, 128, 256} (zeros), so D = 80 runs the
** 128 path (correct, 37% idle lanes of D); 64 and 128 are the fast ones.
**
** Prefill (T > 8): one block per BM rows over keys [0, max pos + 1) of its
** rows; blocks of later rows (more keys) start first. A prefill grid that
** leaves the GPU part empty splits those keys in 2..4 shares
** (m40k_attention_prefill_splits), whose partials attn_combine_rows folds.
** Decode (T <= 8):
** BM = 16 rows (T·HPG, e.g. 1 × 16 heads) and the keys [0, max pos + 1)
** of the block's rows split evenly over `splits` blocks
** (kernels/attention.h: one wave of the SMs' resident blocks), each writing partial
** (m, l, out[D]) per row to the workspace; attn_combine merges them.
**
** Configurations (NT = 128 threads; smem = 4·(BM·(DP+4) + BN·(DP+4) +
** BN·PSTR + 3·BM) bytes, all < 48 KB):
**   prefill DP 64:  BM 64, BN 32, S 4×4, O 4×8   ~35 KB
**   prefill DP 128: BM 32, BN 32, S 2×4, O 4×8   ~39 KB
**   DP 256:         BM 16, BN 16, S 1×2, O 4×8   ~35 KB (prefill and decode)
**   decode DP 64:   BM 16, BN 64, S 2×4, O 1×8   ~23 KB  (T·HPG <= 16;
**   decode DP 128:  BM 16, BN 64, S 2×4, O 2×8   ~47 KB   else prefill's)
**   prefill DP 128, variant 1 (m40k_attn_prefill_variant; auto: large grids): its
**   own kernel attn_prefill64, BM 64, BN 32, S 4×4, O 8×8, K and V in
**   chunks, 48128 B (kernels/attention_prefill64.cuh)
** ptxas -v (sm_52, CUDA 11.8; f16 and f32 caches alike), no spills:
**   prefill DP 64   167 regs  37376 B smem   (launch bounds: 3 blocks/SM)
**   prefill DP 128  168 regs  39424 B
**   DP 256          106 regs  34816 B
**   decode DP 64    123 regs  27136 B        (4 blocks/SM: <= 128 regs)
**   decode DP 128   128 regs  47616 B
**   combine          32 regs   4112 B;  kv_append 31 regs
**   prefill64       168 regs  48128 B   (launch bounds 3 blocks/SM)
**   decode v6 HH 8  222 regs  34368 B   (1 block/SM; HH 4: 128 regs, 512 threads)
**
** Roofline (M40: 6.84 TFLOP/s, 288 GB/s, ridge 23.7 FLOP/B). Per key and
** KV group: 4·D bytes of f16 K and V read, 4·T·HPG·D FLOP. Decode T = 1,
** HPG 16: 16 FLOP/B < ridge: memory-bound, floor = cache bytes / 288 GB/s
** (ChatGLM2 layer at 32K, f16: 32 MiB -> 116 us). Prefill T = L: causal
** half of 4·T²·H·D FLOP, ~T·HPG FLOP/B: compute-bound; the QKᵀ loop does
** SR·SC·4 FMA per SR+SC LDS.128, the PV loop OR·8 FMA per OR LDS + 2
** LDS.128 (an SGEMM does 64 per 4), so expect ~half the SGEMM rate.
**
** kv_append: one block row per (b, t): cache[slot, pos, :] = kv row,
** converted; guarded (a bad pos or slot skips the row). */
#include "attention.h"
#include "guard.h"
#include "rope_math.cuh"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>

namespace {

constexpr int NT = 128;
constexpr int ATT_ROPE_HALF_MAX = 128; /* rope_dims <= head_dim <= 256 */
constexpr int ATT_FUSED_HALF_MAX = 64; /* the fused RoPE + append + attention: D 128 */
constexpr float kLog2e = 1.4426950408889634f;

/* ---- kv_append --------------------------------------------------------------- */

/* blockIdx.z: 0 kv into cache, 1 kv2 into cache2 (m40k_kv_append2) */
__global__ void kv_append_kernel(int64_t T, int64_t GD, const float *kv, const float *kv2,
                                 int64_t kvs0, int64_t kvs1, const int32_t *pos,
                                 const int32_t *slot, int64_t S, int64_t L, int f16, void *cache,
                                 void *cache2, unsigned *guard) {
    int64_t row = blockIdx.x, b = row / T, t = row % T;
    int64_t p = pos[row], s = slot ? (int64_t)slot[b] : b;
    bool report = blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0;
    if (blockIdx.z) kv = kv2, cache = cache2;
    if (s < 0 || s >= S) {
        if (report && t == 0) m40k_guard_report(guard, M40K_GUARD_KV_SLOT, s, S);
        return;
    }
    if (p < -1 || p >= L) {
        if (report) m40k_guard_report(guard, M40K_GUARD_KV_POS, p, L);
        return;
    }
    if (p < 0) return; /* -1: padding */
    const float *src = kv + b * kvs0 + t * kvs1;
    int64_t o = (s * L + p) * GD;
    for (int64_t i = (int64_t)blockIdx.y * blockDim.x + threadIdx.x; i < GD;
         i += (int64_t)gridDim.y * blockDim.x) {
        if (f16) ((__half *)cache)[o + i] = __float2half_rn(src[i]);
        else ((float *)cache)[o + i] = src[i];
    }
}

/* ---- RoPE + KV append (the attention node with rope_dims > 0) ----------------
**
** One block per qkv row (b, t): the Q and K heads' first rope_dims dims turn
** by the row's angles (as kernels/rope.cu: the same θ table and sincosf, so
** the same bits), Q goes to q_out [B·T, H·D] (the attention then reads it
** there, not in qkv: the node leaves its input as it was), K and V to the
** caches at [slot, pos] converted (as kv_append_kernel). Position -1: Q
** copied unrotated, no append; a position past the cache or a bad slot is
** reported as kv_append reports it (KV_POS, KV_SLOT) and the row is not
** appended. One launch where the unfused node took RoPE + append: a decode
** step's qkv row is ~18 KB, so both were latency, not bytes (H200, ncu: RoPE
** 3.9 µs, append 2.2 µs a layer at one row). */
/* Where row (b, t) of the fused RoPE + append goes: its position p, whether
** it turns (p >= 0) and is appended (a good slot, 0 <= p < L) at cache
** element o; a bad slot or position reported as kv_append reports it. */
struct RowTarget {
    int64_t p, o;
    bool app, rot;
};
__device__ __forceinline__ RowTarget row_target(const int32_t *pos, const int32_t *slot, int64_t row,
                                                int64_t b, int64_t t, int64_t S, int64_t L, int G, int D,
                                                unsigned *guard) {
    RowTarget r;
    const int64_t p = pos[row], s = slot ? (int64_t)slot[b] : b;
    const bool sok = s >= 0 && s < S, pok = p >= -1 && p < L;
    if (threadIdx.x == 0) {
        if (!sok && t == 0) m40k_guard_report(guard, M40K_GUARD_KV_SLOT, s, S);
        else if (sok && !pok) m40k_guard_report(guard, M40K_GUARD_KV_POS, p, L);
    }
    r.p = p;
    r.app = sok && p >= 0 && p < L;
    r.rot = p >= 0;
    r.o = r.app ? (s * L + p) * (int64_t)G * D : 0;
    return r;
}

/* Two adjacent pairs (x, y) and (z, w) of a float4 at dims d..d+3 turned by
** the angles of pairs d/2 and d/2 + 1 (c, s: their cos and sin), those
** below rd only: the one expression of rope_kv_vec_kernel and the fused
** decode tile (so both give the same bits). */
__device__ __forceinline__ float4 turn_pairs4(float4 x, int d, int rd, const float *c, const float *s) {
    if (d < rd) {
        const int i = d / 2;
        const float c0 = c[i], s0 = s[i];
        const float ra = x.x * c0 - x.y * s0, rb = x.y * c0 + x.x * s0;
        x.x = ra, x.y = rb;
        if (d + 2 < rd) {
            const float c1 = c[i + 1], s1 = s[i + 1];
            const float rc = x.z * c1 - x.w * s1, rw = x.w * c1 + x.z * s1;
            x.z = rc, x.w = rw;
        }
    }
    return x;
}

template <int PAIRS, int NTR>
__global__ void __launch_bounds__(NTR)
rope_kv_kernel(const RopeArgs a, int64_t T, int H, int G, int D, const float *qkv, int64_t qs0,
               int64_t qs1, const int32_t *pos, const int32_t *slot, int64_t S, int64_t L,
               int f16, void *kc, void *vc, float *q_out, unsigned *guard) {
    const int64_t row = blockIdx.x, b = row / T, t = row % T;
    const float *xr = qkv + b * qs0 + t * qs1;
    float *qr = q_out + row * (int64_t)H * D;
    const RowTarget rt = row_target(pos, slot, row, b, t, S, L, G, D, guard);
    const bool app = rt.app, rot = rt.rot;
    const int64_t p = rt.p, o = rt.o;
    const int HG = H + G, half = a.half;
    /* a head's value j (of H + 2G heads) to its place */
    auto put = [&](int h, int j, float v) {
        if (h < H) {
            qr[j] = v;
        } else if (app) {
            void *c = h < HG ? kc : vc;
            const int64_t i = o + j - (int64_t)(h < HG ? H : HG) * D;
            if (f16) ((__half *)c)[i] = __float2half_rn(v);
            else ((float *)c)[i] = v;
        }
    };
    __shared__ float sc[ATT_ROPE_HALF_MAX], ss[ATT_ROPE_HALF_MAX];
    if (rot) {
        const float fp = (float)p * a.pos_scale;
        for (int i = threadIdx.x; i < half; i += NTR) sincosf(fp * rope_theta_i(a, i), &ss[i], &sc[i]);
    }
    __syncthreads();
    for (int k = threadIdx.x; k < HG * half; k += NTR) {
        const int h = k / half, i = k - h * half;
        const int ia = h * D + (PAIRS == 0 ? 2 * i : i), ib = h * D + (PAIRS == 0 ? 2 * i + 1 : i + half);
        float va = xr[ia], vb = xr[ib];
        if (rot) {
            const float c = sc[i], sn = ss[i], ra = va * c - vb * sn, rb = vb * c + va * sn;
            va = ra, vb = rb;
        }
        put(h, ia, va);
        put(h, ib, vb);
    }
    const int W = (HG + G) * D, rd = 2 * half;
    for (int j = threadIdx.x; j < W; j += NTR) {
        const int h = j / D;
        if (h < HG && j - h * D < rd) continue; /* rotated above */
        put(h, j, xr[j]);
    }
}

/* The same for adjacent pairs with 16-byte rows (ChatGLM2's case): a
** thread's float4s of the row are loaded first, before the position, the
** angles and the barrier, so the row's one memory latency overlaps them
** (the scalar kernel above waited a latency per value: 6.5 µs a decode row
** on an H200 against 3.7 + 2.2 for RoPE and the append apart); a float4
** holds two whole pairs (D % 4 == 0) and is stored as one (K and V as 4
** halves when the cache is f16). */
template <int NTR>
__global__ void __launch_bounds__(NTR)
rope_kv_vec_kernel(const RopeArgs a, int64_t T, int H, int G, int D, const float *qkv, int64_t qs0,
                   int64_t qs1, const int32_t *pos, const int32_t *slot, int64_t S, int64_t L,
                   int f16, void *kc, void *vc, float *q_out, unsigned *guard) {
    constexpr int U = 3; /* float4 loads in flight a thread */
    const int64_t row = blockIdx.x, b = row / T, t = row % T;
    const float4 *xr = (const float4 *)(qkv + b * qs0 + t * qs1);
    const int HG = H + G, W4 = (HG + G) * D / 4, rd = 2 * a.half;
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int f = threadIdx.x + u * NTR;
        if (f < W4) v[u] = xr[f];
    }
    const RowTarget rt = row_target(pos, slot, row, b, t, S, L, G, D, guard);
    const bool app = rt.app, rot = rt.rot;
    const int64_t p = rt.p, o = rt.o;
    __shared__ float sc[ATT_ROPE_HALF_MAX], ss[ATT_ROPE_HALF_MAX];
    if (rot) {
        const float fp = (float)p * a.pos_scale;
        for (int i = threadIdx.x; i < a.half; i += NTR) sincosf(fp * rope_theta_i(a, i), &ss[i], &sc[i]);
    }
    __syncthreads();
    float4 *qr = (float4 *)(q_out + row * (int64_t)H * D);
    for (int f0 = threadIdx.x; f0 < W4; f0 += U * NTR) {
        if (f0 != (int)threadIdx.x)
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int f = f0 + u * NTR;
                if (f < W4) v[u] = xr[f];
            }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int f = f0 + u * NTR, j = 4 * f;
            if (f >= W4) break;
            const int h = j / D, d = j - h * D;
            float4 x = v[u];
            if (rot && h < HG) x = turn_pairs4(x, d, rd, sc, ss);
            if (h < H) {
                qr[f] = x;
            } else if (app) {
                void *c = h < HG ? kc : vc;
                const int64_t i = o + j - (int64_t)(h < HG ? H : HG) * D;
                if (f16) {
                    const __half2 lo = __floats2half2_rn(x.x, x.y), hi = __floats2half2_rn(x.z, x.w);
                    uint2 pk;
                    pk.x = *(const unsigned *)&lo, pk.y = *(const unsigned *)&hi;
                    *(uint2 *)((__half *)c + i) = pk;
                } else {
                    *(float4 *)((float *)c + i) = x;
                }
            }
        }
    }
}

/* ---- attention tile kernel ----------------------------------------------------- */

struct Params {
    const float *q;
    const void *kc, *vc;
    const int32_t *pos, *slot;
    float *y;
    float *ws_ml, *ws_o; /* splits > 1: partial (m, l) and out[D] per (row, split) */
    int64_t T, H, G, D, S, L, hpg, qs0, qs1;
    int64_t mtiles, splits;
    int pair;     /* prefill in one wave: a block takes query tiles mtiles-1-j and j */
    float qscale; /* scale · log2 e */
    int vec;      /* D and the cache rows allow 16-byte loads */
    int gd;       /* G·D: a cache row's stride in elements (< 2^25) */
    /* ROPE (attn_kernel's fused RoPE + append, T 1): the first rhalf pairs
    ** (adjacent) of the Q and K heads turn by angle float(pos·rpos_scale)·
    ** rth[i] (rope_args' θ table, so the bits of the two-kernel path) */
    float rth[ATT_FUSED_HALF_MAX], rpos_scale;
    int rhalf;
    int skip;     /* decode, one query tile: a split past the keys (not split 0,
                  ** which reports bad indices) returns at once, writing no
                  ** partial; attn_combine folds only the splits with keys */
    unsigned *guard;
    /* The combine inside the decode tile kernel (one query tile, splits > 1;
    ** NULL: attn_combine's launch): per (b, g) 1 + fc_ng counters of the
    ** context's sync words (kernels/guard.h), zero between launches. The
    ** last split of each group of FC_G to arrive folds its group's partials
    ** into the group's first slot; the last group to arrive folds those into
    ** y (one group: straight into y). Each last block resets its counter. */
    unsigned *cnt;
    int64_t fc_ng; /* counter groups a (b, g): ceil(splits / FC_G) */
};

/* splits a counter group of the fused combine: the last of a group folds <= FC_G
** partials, the last group <= M40K_ATTN_MAX_SPLITS / FC_G = 64 group partials */
constexpr int FC_G = 16;

/* A decode block's key end: max pos[b, t] + 1 over its T rows, counting
** positions in [0, L) of a slot in [0, S) (tile_prologue's guard: any
** other row has no keys). One rule for the tile kernel's early K fetch and
** skip, and attn_combine's count of the splits with keys. */
__device__ __forceinline__ int decode_kend(const int32_t *pos, const int32_t *slot, int64_t b,
                                           int64_t T, int64_t S, int64_t L) {
    const int64_t s = slot ? (int64_t)slot[b] : b;
    int kend = 0;
    if (s >= 0 && s < S)
        for (int64_t t = 0; t < T; t++) {
            const int64_t v = pos[b * T + t];
            if (v >= 0 && v < L) kend = max(kend, (int)v + 1);
        }
    return kend;
}

/* 8 halves (one 16-byte load) as 8 floats: every f16 cache path's conversion. */
__device__ __forceinline__ void half8_to_float(const uint4 &u, float *f) {
    const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 v = __half22float2(h[k]);
        f[2 * k] = v.x;
        f[2 * k + 1] = v.y;
    }
}

/* 8 consecutive cache values from element i of a cache row, as floats. */
template <typename TC> struct Load8;
template <> struct Load8<__half> {
    static __device__ __forceinline__ void vec(const void *c, int64_t i, float *f) {
        const uint4 u = *reinterpret_cast<const uint4 *>(reinterpret_cast<const __half *>(c) + i);
        half8_to_float(u, f); /* u first: one 16-byte load, not four 4-byte ones */
    }
    static __device__ __forceinline__ float one(const void *c, int64_t i) {
        return __half2float(reinterpret_cast<const __half *>(c)[i]);
    }
};
template <> struct Load8<float> {
    static __device__ __forceinline__ void vec(const void *c, int64_t i, float *f) {
        const float4 *p = reinterpret_cast<const float4 *>(reinterpret_cast<const float *>(c) + i);
        float4 a = p[0], b = p[1];
        f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w;
        f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
    }
    static __device__ __forceinline__ float one(const void *c, int64_t i) {
        return reinterpret_cast<const float *>(c)[i];
    }
};

/* Keys [k0, k0 + BN) of (slot s, group g) -> dst [BN][DP+4]; keys >= kend
** and dims >= D are zeros (never read). */
template <int DP, int BN, typename TC>
__device__ __forceinline__ void load_tile(const Params &p, const void *cache, int64_t s,
                                          int64_t g, int64_t k0, int64_t kend, float *dst) {
    constexpr int DS = DP + 4, CH = DP / 8, ITEMS = (BN * CH + NT - 1) / NT;
    /* the tile's first element once in 64 bits; within the tile 32-bit
    ** offsets (c·G·D + d < 64 · 2^16 · 256 = 2^30: lib/ops/attention.c
    ** bounds G and D). Per-item 64-bit index products were ~30% of the decode
    ** loop's instructions on sm_52 (docs/projections.md). */
    const TC *tile = reinterpret_cast<const TC *>(cache) + ((s * p.L + k0) * p.G + g) * p.D;
    const int64_t left = kend - k0;
    const int nk = left < BN ? (int)left : BN;
    /* unrolled with a compile-time count, so every 16-byte load of the tile
    ** is in flight before the first conversion */
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        const int it = threadIdx.x + k * NT;
        if (BN * CH % NT != 0 && it >= BN * CH) break;
        int c = it / CH, d = (it % CH) * 8;
        float f[8];
        if (c < nk && d < p.D) {
            const TC *src = tile + (c * p.gd + d);
            if (p.vec) {
                Load8<TC>::vec(src, 0, f);
            } else {
#pragma unroll
                for (int k = 0; k < 8; k++) f[k] = d + k < p.D ? Load8<TC>::one(src, k) : 0.0f;
            }
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++) f[k] = 0.0f;
        }
        float4 *w = reinterpret_cast<float4 *>(dst + c * DS + d);
        w[0] = make_float4(f[0], f[1], f[2], f[3]);
        w[1] = make_float4(f[4], f[5], f[6], f[7]);
    }
}

/* load_tile in two halves for f16 caches with 16-byte rows (p.vec): the
** loads into registers (8 halves an item, zeros outside the tile), then the
** conversion and the stores, so that a tile's loads are in flight while the
** previous one is computed (decode variant 4: V during QKᵀ, the next K
** during P·V). */
template <int DP, int BN>
__device__ __forceinline__ void fetch_rows(const Params &p, const __half *tile, int nk, uint4 *u) {
    constexpr int CH = DP / 8, ITEMS = (BN * CH + NT - 1) / NT;
    const int D = (int)p.D; /* <= 256 */
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        const int it = threadIdx.x + k * NT;
        const int c = it / CH, d = (it % CH) * 8;
        u[k] = (BN * CH % NT == 0 || it < BN * CH) && c < nk && d < D
                   ? *reinterpret_cast<const uint4 *>(tile + (c * p.gd + d))
                   : make_uint4(0u, 0u, 0u, 0u);
    }
}
/* the rows [k0, min(kend, k0 + BN)) of (slot s, group g) */
template <int DP, int BN>
__device__ __forceinline__ void fetch_tile(const Params &p, const void *cache, int64_t s,
                                           int64_t g, int64_t k0, int64_t kend, uint4 *u) {
    const __half *tile = reinterpret_cast<const __half *>(cache) + ((s * p.L + k0) * p.G + g) * p.D;
    const int64_t left = kend - k0;
    fetch_rows<DP, BN>(p, tile, left < BN ? (int)left : BN, u);
}
template <int DP, int BN>
__device__ __forceinline__ void store_tile(const uint4 *u, float *dst) {
    constexpr int DS = DP + 4, CH = DP / 8, ITEMS = (BN * CH + NT - 1) / NT;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        const int it = threadIdx.x + k * NT;
        if (BN * CH % NT != 0 && it >= BN * CH) break;
        const int c = it / CH, d = (it % CH) * 8;
        float f[8];
        half8_to_float(u[k], f);
        float4 *w = reinterpret_cast<float4 *>(dst + c * DS + d);
        w[0] = make_float4(f[0], f[1], f[2], f[3]);
        w[1] = make_float4(f[4], f[5], f[6], f[7]);
    }
}

/* N consecutive floats of shared memory, one load (16-, 8- or 4-byte aligned). */
template <int N> __device__ __forceinline__ void lds(const float *p, float *v);
template <> __device__ __forceinline__ void lds<4>(const float *p, float *v) {
    float4 t = *reinterpret_cast<const float4 *>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
template <> __device__ __forceinline__ void lds<2>(const float *p, float *v) {
    float2 t = *reinterpret_cast<const float2 *>(p);
    v[0] = t.x, v[1] = t.y;
}
template <> __device__ __forceinline__ void lds<1>(const float *p, float *v) { v[0] = *p; }

/* The prologue of a tile block (the tile kernel and attn_prefill64): the
** slot (guarded), row r's position pos[b, t] (guarded; -1 pads: no keys),
** the running max and sum reset, and Q pre-scaled into qs [BM][DP+4]
** (zeros past D and nrows). `report`: this block reports bad indices (one
** block a sequence and group, so each is counted once). Returns the slot;
** *bad_slot when it is out of range. */
template <int DP, int BM, bool RAW = false>
__device__ __forceinline__ int64_t tile_prologue(const Params &p, int64_t b, int64_t g, int64_t mt,
                                                 bool report, int *row_pos, float *row_m,
                                                 float *row_l, float *qs, bool *bad_slot) {
    constexpr int DS = DP + 4;
    const int tid = threadIdx.x;
    const int64_t nrows = p.T * p.hpg;
    const int64_t s = p.slot ? (int64_t)p.slot[b] : b;
    *bad_slot = s < 0 || s >= p.S;
    if (*bad_slot && tid == 0 && mt == 0 && g == 0 && report)
        m40k_guard_report(p.guard, M40K_GUARD_ATTN_SLOT, s, p.S);
    if (tid < BM) {
        const int64_t r = mt * BM + tid;
        int pp = -1;
        if (r < nrows && !*bad_slot) {
            const int64_t v = p.pos[b * p.T + r / p.hpg];
            if (v < -1 || v >= p.L) {
                if (r % p.hpg == 0 && g == 0 && report)
                    m40k_guard_report(p.guard, M40K_GUARD_ATTN_POS, v, p.L);
            } else {
                pp = (int)v;
            }
        }
        row_pos[tid] = pp;
        row_m[tid] = -INFINITY;
        row_l[tid] = 0.0f;
    }
    for (int it = tid; it < BM * (DP / 4); it += NT) {
        const int r = it / (DP / 4), d = (it % (DP / 4)) * 4;
        const int64_t rr = mt * BM + r;
        float f[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (rr < nrows) {
            const int64_t t = rr / p.hpg, h = g * p.hpg + rr % p.hpg;
            const float *qr = p.q + b * p.qs0 + t * p.qs1 + h * p.D;
#pragma unroll
            for (int k = 0; k < 4; k++) f[k] = d + k < p.D ? (RAW ? qr[d + k] : qr[d + k] * p.qscale) : 0.0f;
        }
        *reinterpret_cast<float4 *>(qs + r * DS + d) = make_float4(f[0], f[1], f[2], f[3]);
    }
    return s;
}

/* The keys [lo, hi) of split `split` of [0, kend): an even share rounded up
** to the BN-key tile (the early K fetch and the tile loop agree on it). */
__device__ __forceinline__ int64_t split_share(int64_t kend, int64_t splits, int64_t chunk) {
    const int64_t per = (kend + splits - 1) / splits;
    return (per + chunk - 1) / chunk * chunk;
}
template <int BN>
__device__ __forceinline__ void split_keys(int64_t kend, int64_t splits, int64_t split, int64_t *lo,
                                           int64_t *hi) {
    *lo = 0, *hi = kend;
    if (splits > 1) {
        const int64_t per = split_share(kend, splits, BN);
        *lo = split * per;
        *hi = min(kend, *lo + per);
    }
}

/* A tile block's last step with key shares (splits > 1; the tile kernel and
** attn_prefill64): each of its rows' running (max, sum) into ws_ml, (-inf, 0)
** where the share had no keys; attn_combine / attn_combine_rows fold them. */
template <int BM> __device__ __forceinline__ void tile_store_ml(const Params &p, int64_t b, int64_t g, int64_t mt, int64_t split, const float *row_m, const float *row_l) {
    const int tid = threadIdx.x;
    if (p.splits <= 1 || tid >= BM) return;
    const int64_t rr = mt * BM + tid;
    if (rr >= p.T * p.hpg) return;
    const int64_t row = (b * p.T + rr / p.hpg) * p.H + g * p.hpg + rr % p.hpg;
    p.ws_ml[(row * p.splits + split) * 2] = row_m[tid];
    p.ws_ml[(row * p.splits + split) * 2 + 1] = row_l[tid];
}

/* P's row stride: the TPR lanes of a row read columns part + k·TPR, the
** 32/TPR rows of a warp are adjacent; BM + 32/TPR puts them in 32 banks */
template <int BM> constexpr int pstride(int tpr) { return BM + 32 / tpr; }

/* What the fused combine reads of Params: passed by value to a function of
** its own (not inlined), so that its code does not change the key loop's
** registers (inlined, the PF tiles spilled on sm_52). */
struct FcArgs {
    float *ws_ml, *ws_o, *y;
    unsigned *cnt;
    const int32_t *pos, *slot;
    int64_t T, H, G, D, S, L, hpg, splits, fc_ng;
    int skip;
};

/* The fused combine's fold (decode, one query tile: rows 0..T·HPG-1 of (b, g)):
** the partials of slots c0 + k·cs, k < n, of each row, weighted by 2^(m_k - M),
** either normalized into y (final) or as a partial (M, L, out) into slot c0.
** w: 2·BM·64 floats of the tile's free shared memory (each (row, k)'s m, then
** its weight, and its l). Reads through L2 (__ldcg): other SMs wrote them in
** this launch. One block does it all, so its loads go out FR rows × FK slots
** at a time (the first version, a dependent load after another, took 30-40
** µs a call: every round trip in a row). */
template <int BM>
__device__ __forceinline__ void fc_fold(const FcArgs &p, int64_t b, int64_t g, int64_t c0,
                                        int64_t cs, int n, bool final, float *w) {
    constexpr int FR = 8, FK = 4;
    __shared__ float fl[BM];
    __shared__ int64_t frow[BM]; /* a row's index in y */
    float *wl = w + BM * 64;
    const int tid = threadIdx.x;
    const int nrows = (int)(p.T * p.hpg); /* <= BM */
    const int64_t rs = p.splits * p.D;    /* ws_o: a row's partials */
    /* pass 1: every (row, k)'s m and l, all loads independent */
#pragma unroll 4
    for (int i = tid; i < nrows * n; i += NT) {
        const int r = i / n, k = i - r * n;
        const int64_t row = (b * p.T + r / p.hpg) * p.H + g * p.hpg + r % p.hpg;
        const float *ml = p.ws_ml + (row * p.splits + c0 + k * cs) * 2;
        w[r * 64 + k] = __ldcg(ml);
        wl[r * 64 + k] = __ldcg(ml + 1);
    }
    __syncthreads();
    if (tid < nrows) { /* a row's max, weights and sum */
        frow[tid] = (b * p.T + tid / p.hpg) * p.H + g * p.hpg + tid % p.hpg;
        float M = -INFINITY, L = 0.0f;
        for (int k = 0; k < n; k++) M = fmaxf(M, w[tid * 64 + k]);
        const float ms = M == -INFINITY ? 0.0f : M;
        for (int k = 0; k < n; k++) {
            const float wk = exp2f(w[tid * 64 + k] - ms); /* m -inf: 0 */
            w[tid * 64 + k] = wk;
            L = fmaf(wk, wl[tid * 64 + k], L);
        }
        fl[tid] = L;
        wl[tid * 64] = M; /* the row's new m, for a partial */
    }
    __syncthreads();
    /* pass 2: a thread a dim, FR rows × FK slots of loads in flight */
    for (int64_t d = tid; d < p.D; d += NT) {
        for (int r0 = 0; r0 < nrows; r0 += FR) {
            float a[FR];
#pragma unroll
            for (int i = 0; i < FR; i++) a[i] = 0.0f;
            for (int k0 = 0; k0 < n; k0 += FK) {
                float v[FR][FK];
#pragma unroll
                for (int i = 0; i < FR; i++) {
                    const int r = r0 + i;
                    const float *src = p.ws_o + frow[r < nrows ? r : 0] * rs + c0 * p.D + d;
#pragma unroll
                    for (int j = 0; j < FK; j++)
                        v[i][j] = r < nrows && k0 + j < n ? __ldcg(src + (k0 + j) * cs * p.D) : 0.0f;
                }
#pragma unroll
                for (int i = 0; i < FR; i++)
#pragma unroll
                    for (int j = 0; j < FK; j++)
                        if (r0 + i < nrows && k0 + j < n)
                            a[i] = fmaf(w[(r0 + i) * 64 + k0 + j], v[i][j], a[i]);
            }
#pragma unroll
            for (int i = 0; i < FR; i++) {
                const int r = r0 + i;
                if (r >= nrows) break;
                const int64_t row = frow[r];
                if (final) {
                    const float l = fl[r];
                    p.y[row * p.D + d] = l > 0.0f ? a[i] / l : 0.0f; /* no keys: a zero row */
                } else {
                    p.ws_o[row * rs + c0 * p.D + d] = a[i];
                }
            }
        }
    }
    if (!final && tid < nrows) {
        float *ml = p.ws_ml + (frow[tid] * p.splits + c0) * 2;
        ml[0] = wl[tid * 64], ml[1] = fl[tid];
    }
}

/* After a decode split block wrote its partial (p.cnt): count it in; the last
** of its group of FC_G folds the group, the last group folds the groups into
** y. The splits that arrive are the ones that wrote a partial: all of them,
** or with p.skip split 0 and those with keys (attn_combine's count). */
template <int BM, int BN>
__device__ __noinline__ void fc_arrive(const FcArgs p, float *w) {
    __shared__ int fc_last;
    const int tid = threadIdx.x;
    /* the block's (b, g, split) from blockIdx (one query tile: mtiles 1) */
    const int64_t bx = blockIdx.x, split = bx % p.splits, bg = bx / p.splits;
    const int64_t g = bg % p.G, b = bg / p.G;
    int64_t na = p.splits;
    if (p.skip) {
        const int64_t kend = decode_kend(p.pos, p.slot, b, p.T, p.S, p.L);
        const int64_t per = split_share(kend, p.splits, BN);
        na = per > 0 ? (kend + per - 1) / per : 0;
        if (na < 1) na = 1; /* split 0 always writes */
    }
    const int64_t ng = (na + FC_G - 1) / FC_G, q = split / FC_G, c0 = q * FC_G;
    const int nq = (int)min((int64_t)FC_G, na - c0);
    unsigned *cnt = p.cnt + (b * p.G + g) * (1 + p.fc_ng);
    /* this block's partial, before its count: the barrier orders the
    ** threads' stores before thread 0's fence (cumulative), the fence before
    ** the count. One fence a block: a fence in every thread (call 1 and 2 of
    ** session 14) cost 10-75 µs a call on the H200 -- fences are ordered
    ** GPU-wide */
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        const unsigned old = atomicAdd(&cnt[1 + q], 1u);
        fc_last = old == (unsigned)(nq - 1);
        if (fc_last) atomicExch(&cnt[1 + q], 0u); /* every member is in: zero for the next launch */
        if (fc_last) __threadfence(); /* the others' partials, before this block's reads */
    }
    __syncthreads();
    if (!fc_last) return;
    fc_fold<BM>(p, b, g, c0, 1, nq, ng == 1, w);
    if (ng == 1) return;
    __syncthreads(); /* the group's partial, before its count */
    if (tid == 0) {
        __threadfence();
        const unsigned old = atomicAdd(&cnt[0], 1u);
        fc_last = old == (unsigned)(ng - 1);
        if (fc_last) atomicExch(&cnt[0], 0u);
        if (fc_last) __threadfence();
    }
    __syncthreads();
    if (!fc_last) return;
    fc_fold<BM>(p, b, g, 0, FC_G, (int)ng, true, w);
}

/* MINB blocks per SM at least: <= 65536 / (MINB·128) registers a thread
** (4: 128, the decode tiles, memory-bound, want many loads in flight; 3:
** 170, the prefill tiles) */
template <int DP, int BM, int BN, int SR, int SC, int OR, int MINB, typename TC, bool PF = false,
          bool PAIR = false, bool ROPE = false, bool WPV = false>
__global__ void __launch_bounds__(NT, MINB) attn_kernel(Params p) {
    static_assert(!PF || sizeof(TC) == 2, "prefetch: f16 caches");
    /* WPV (m40k_attn_warp_pv): P·V split over the warps by key, a lane 4 rows
    ** × 16 dims (one float4 of P and four of V a key: 64 FMA for 5 shared
    ** loads, against 16 for 3), the warps' partial O summed at the end */
    static_assert(!WPV || (BM == 16 && DP == 128 && NT == 128 && !PAIR && BN % 4 == 0 &&
                           BN * (DP + 4) >= 2 * 16 * 128),
                  "warp-split P·V: the decode tiles at D 128, its reduction buffers in kvs");
    static_assert(!ROPE || (PF && !PAIR && DP / 2 <= ATT_FUSED_HALF_MAX), "fused RoPE: decode, PF");
    constexpr int DS = DP + 4;
    constexpr int SCG = BN / SC;          /* S: column groups */
    constexpr int TPR = NT / BM;          /* softmax: threads per row */
    constexpr int CPT = BN / TPR;         /* softmax: columns per thread */
    constexpr int PSTR = pstride<BM>(TPR);
    constexpr int OCG = DP / 8;           /* O: column groups of 4 + 4 dims */
    static_assert((BM / SR) * SCG == NT, "S tiling");
    static_assert((BM / OR) * OCG == NT, "O tiling");
    static_assert(TPR >= 1 && TPR <= 32 && CPT * TPR == BN, "softmax tiling");
    static_assert((PSTR % 4 == 0 || OR == 1) && (OR == 1 || OR == 2 || OR == 4), "P rows: aligned loads");

    __shared__ __align__(16) float qs[BM * DS];
    __shared__ __align__(16) float kvs[BN * DS];
    __shared__ __align__(16) float ps[BN * PSTR];
    __shared__ float row_m[BM], row_l[BM], row_a[BM];
    __shared__ int row_pos[BM];
    /* ROPE: the angles' cos and sin, and the new K row before it turns */
    constexpr int RH = ROPE ? DP / 2 : 1, RD = ROPE ? DP : 1;
    __shared__ float r_c[RH], r_s[RH], nkr[RD];

    const int tid = threadIdx.x;
    /* blockIdx.x = ((b·G + g)·nt + j)·splits + split; query tile mt =
    ** mtiles-1-j, the last tiles (most keys) first; with p.pair then tile j
    ** too, so every block has the keys of ~1 + 1/mtiles tiles (pair_tiles) */
    int64_t bx = blockIdx.x;
    const int64_t split = bx % p.splits;
    bx /= p.splits;
    const int64_t nt = PAIR && p.pair ? (p.mtiles + 1) / 2 : p.mtiles;
    const int64_t j = bx % nt;
    bx /= nt;
    const int64_t g = bx % p.G, b = bx / p.G;
    const int64_t nrows = p.T * p.hpg;
    const int npass = PAIR && p.pair && 2 * j + 1 != p.mtiles ? 2 : 1;
#pragma unroll 1
    for (int pass = 0; pass < npass; pass++) {
    const int64_t mt = pass ? j : p.mtiles - 1 - j;
    if (pass) __syncthreads(); /* the first tile's shared memory is free */

    /* PF: the tile's loads in registers (V during QKᵀ, the next K during
    ** P·V). The first K tile is fetched before the prologue: its key range
    ** needs only the positions, which each thread reads itself (a decode
    ** block's rows are its T queries, T <= 8), so K's latency overlaps Q's
    ** loads and the prologue's barrier instead of following them (was:
    ** positions, barrier, then K: two global round trips in a row). */
    uint4 pre[PF ? (BN * (DP / 8) + NT - 1) / NT : 1];
    bool have_k = false;
    const bool pf = PF && p.vec;
    int prow = -1;     /* ROPE: the new key's position when this block appends it (< L < 2^31) */
    bool rot = false;  /* ROPE: the position turns Q (>= 0) */
    if (pf) {
        static_assert(!PF || !PAIR, "PF: decode blocks (one query tile)");
        const int64_t s0 = p.slot ? (int64_t)p.slot[b] : b;
        const int kend0 = decode_kend(p.pos, p.slot, b, p.T, p.S, p.L);
        int64_t lo, hi;
        split_keys<BN>(kend0, p.splits, split, &lo, &hi);
        if (p.skip && split > 0 && lo >= hi) return; /* no keys: no Q, no partial */
        int64_t p0 = -1;
        if constexpr (ROPE) {
            /* the fused RoPE + append (T 1): the angles first (sincosf's
            ** slow path wants registers the K tile in flight holds) */
            p0 = p.pos[b];
            rot = p0 >= 0;
            if (rot && tid < p.rhalf)
                sincosf((float)p0 * p.rpos_scale * p.rth[tid], &r_s[tid], &r_c[tid]);
        }
        const bool sok = s0 >= 0 && s0 < p.S;
        if (ROPE && sok && p0 >= lo && p0 < hi) prow = (int)p0; /* hi <= kend0 <= L */
        /* ROPE: the block that appends the new row reads it back from the
        ** cache after the barrier that follows its writes (its tile loop's
        ** fetch), so not early when its first tile holds it */
        if (lo < hi && !(ROPE && prow >= 0 && prow < lo + BN)) {
            fetch_tile<DP, BN>(p, p.kc, s0, g, lo, hi, pre);
            have_k = true;
        }
        if constexpr (ROPE) {
            /* rope_kv_vec_kernel's guard reports first (KV_SLOT, KV_POS, as
            ** its row_target), then the prologue's; the block whose keys
            ** hold the position appends the row of its group (V now, K
            ** once turned) */
            if (tid == 0 && g == 0 && split == 0) {
                if (!sok) m40k_guard_report(p.guard, M40K_GUARD_KV_SLOT, s0, p.S);
                else if (p0 < -1 || p0 >= p.L) m40k_guard_report(p.guard, M40K_GUARD_KV_POS, p0, p.L);
            }
            if (prow >= 0 && tid < DP) {
                const float *row = p.q + b * p.qs0;
                const float kx = row[(p.H + g) * DP + tid], vx = row[(p.H + p.G + g) * DP + tid];
                nkr[tid] = kx;
                reinterpret_cast<__half *>(const_cast<void *>(p.vc))[((s0 * p.L + prow) * p.G + g) * DP + tid] =
                    __float2half_rn(vx);
            }
        }
    }

    /* the slot, the rows' positions (guarded), Q pre-scaled (ROPE: raw,
    ** turned and scaled below) */
    bool bad_slot;
    const int64_t s = tile_prologue<DP, BM, ROPE>(p, b, g, mt, split == 0, row_pos, row_m, row_l,
                                                  qs, &bad_slot);
    __syncthreads();
    if constexpr (ROPE) {
        if (pf) {
            /* Q: this thread's items of tile_prologue, turned as
            ** rope_kv_vec_kernel turns them, then scaled */
            const int rd = 2 * p.rhalf;
            for (int it = tid; it < BM * (DP / 4); it += NT) {
                const int r = it / (DP / 4), d = (it % (DP / 4)) * 4;
                float4 *e = reinterpret_cast<float4 *>(qs + r * DS + d);
                float4 x = *e;
                if (rot) x = turn_pairs4(x, d, rd, r_c, r_s);
                *e = make_float4(x.x * p.qscale, x.y * p.qscale, x.z * p.qscale, x.w * p.qscale);
            }
            if (prow >= 0 && tid < DP) { /* K: pair (2i, 2i+1) = (a, b) -> (a c - b s, b c + a s) */
                float x = nkr[tid];
                if (rot && tid < rd) {
                    const float c = r_c[tid >> 1], sn = r_s[tid >> 1], o = nkr[tid ^ 1];
                    x = (tid & 1) ? x * c + o * sn : x * c - o * sn;
                }
                reinterpret_cast<__half *>(const_cast<void *>(p.kc))[((s * p.L + prow) * p.G + g) * DP + tid] =
                    __float2half_rn(x);
            }
            __syncthreads(); /* qs turned; the new K and V rows written, for the block's fetches */
        }
    }

    /* this block's keys: [0, kend) of its rows, then its split's share */
    int kend = 0;
    for (int r = 0; r < BM; r++) kend = max(kend, row_pos[r] + 1);
    int64_t k_lo, k_hi;
    split_keys<BN>(kend, p.splits, split, &k_lo, &k_hi);
    if (!PAIR && p.skip && split > 0 && k_lo >= k_hi) return; /* the whole block: no partial */

    /* S-tile and O-tile coordinates (WPV: warp wv takes keys wv, wv + 4, ..;
    ** its lane rows orow..orow+3, dims ocol + 32q + c) */
    const int srg = tid / SCG, scg = tid % SCG;
    const int org = tid / OCG, ocg = tid % OCG;
    const int wv = tid >> 5, orow = ((tid & 31) >> 3) * 4, ocol = (tid & 7) * 4;
    (void)wv, (void)orow, (void)ocol;
    constexpr int OI = WPV ? 4 : OR, OK = WPV ? 16 : 8;
    float o[OI][OK];
#pragma unroll
    for (int i = 0; i < OI; i++)
#pragma unroll
        for (int k = 0; k < OK; k++) o[i][k] = 0.0f;

    /* PF: the tile's first rows in the caches, advanced a tile at a time
    ** (not (s·L + k0)·G + g)·D each fetch: int64 products in the loop) */
    const int64_t sg0 = PF ? (s * p.L * p.G + g) * p.D + k_lo * (int64_t)p.gd : 0;
    const __half *kt = PF ? reinterpret_cast<const __half *>(p.kc) + sg0 : nullptr;
    const __half *vt = PF ? reinterpret_cast<const __half *>(p.vc) + sg0 : nullptr;
    const int64_t tstep = PF ? (int64_t)BN * p.gd : 0;
    for (int64_t k0 = k_lo; k0 < k_hi; k0 += BN) {
        __syncthreads(); /* the previous tile's P·V is done with kvs and ps */
        const int nk = k_hi - k0 < BN ? (int)(k_hi - k0) : BN;
        if (pf) {
            if (!have_k) fetch_rows<DP, BN>(p, kt, nk, pre);
            store_tile<DP, BN>(pre, kvs);
            fetch_rows<DP, BN>(p, vt, nk, pre);
        } else {
            load_tile<DP, BN, TC>(p, p.kc, s, g, k0, k_hi, kvs);
        }
        __syncthreads();

        float acc[SR][SC];
#pragma unroll
        for (int i = 0; i < SR; i++)
#pragma unroll
            for (int k = 0; k < SC; k++) acc[i][k] = 0.0f;
#pragma unroll 4
        for (int d = 0; d < DP; d += 4) {
            float4 a[SR], bv[SC];
#pragma unroll
            for (int i = 0; i < SR; i++)
                a[i] = *reinterpret_cast<const float4 *>(qs + (srg * SR + i) * DS + d);
#pragma unroll
            for (int k = 0; k < SC; k++)
                bv[k] = *reinterpret_cast<const float4 *>(kvs + (scg + k * SCG) * DS + d);
#pragma unroll
            for (int i = 0; i < SR; i++)
#pragma unroll
                for (int k = 0; k < SC; k++) {
                    acc[i][k] = fmaf(a[i].x, bv[k].x, acc[i][k]);
                    acc[i][k] = fmaf(a[i].y, bv[k].y, acc[i][k]);
                    acc[i][k] = fmaf(a[i].z, bv[k].z, acc[i][k]);
                    acc[i][k] = fmaf(a[i].w, bv[k].w, acc[i][k]);
                }
        }
#pragma unroll
        for (int i = 0; i < SR; i++) {
            int r = srg * SR + i;
            int64_t lim = min((int64_t)row_pos[r], k_hi - 1); /* keys <= lim count */
#pragma unroll
            for (int k = 0; k < SC; k++) {
                int c = scg + k * SCG;
                ps[c * PSTR + r] = k0 + c <= lim ? acc[i][k] : -INFINITY;
            }
        }
        __syncthreads();

        /* online softmax, TPR adjacent lanes per row */
        {
            const int r = tid / TPR, part = tid % TPR;
            const float m_old = row_m[r];
            float mx = -INFINITY;
#pragma unroll
            for (int k = 0; k < CPT; k++) mx = fmaxf(mx, ps[(part + k * TPR) * PSTR + r]);
#pragma unroll
            for (int w = TPR / 2; w > 0; w >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, w));
            const float m_new = fmaxf(m_old, mx);
            const float m_safe = m_new == -INFINITY ? 0.0f : m_new; /* all masked: p = 0 */
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k < CPT; k++) {
                float *e = &ps[(part + k * TPR) * PSTR + r];
                float v = exp2f(*e - m_safe);
                *e = v;
                sum += v;
            }
#pragma unroll
            for (int w = TPR / 2; w > 0; w >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, w);
            /* every lane of the row has read row_m before lane 0 writes it
            ** (racecheck's warp-level WAR warning; on sm_52 warps run in
            ** lockstep, on sm_70+ lanes may not) */
            __syncwarp();
            if (part == 0) {
                float a = exp2f(m_old - m_safe); /* m_old -inf: 0 (o is 0 then) */
                row_a[r] = a;
                row_l[r] = row_l[r] * a + sum;
                row_m[r] = m_new;
            }
        }
        if (pf) {
            store_tile<DP, BN>(pre, kvs); /* V: every warp is past QKᵀ (the barrier above) */
            have_k = k0 + BN < k_hi;
            kt += tstep, vt += tstep;
            if (have_k) fetch_rows<DP, BN>(p, kt, k_hi - k0 - BN < BN ? (int)(k_hi - k0 - BN) : BN, pre);
        } else {
            load_tile<DP, BN, TC>(p, p.vc, s, g, k0, k_hi, kvs);
        }
        __syncthreads();

        if constexpr (WPV) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float a = row_a[orow + i];
#pragma unroll
                for (int k = 0; k < 16; k++) o[i][k] *= a;
            }
#pragma unroll
            for (int j = wv; j < BN; j += NT / 32) {
                float4 v[4];
#pragma unroll
                for (int q = 0; q < 4; q++)
                    v[q] = *reinterpret_cast<const float4 *>(kvs + j * DS + ocol + 32 * q);
                float pr[4]; /* P[j][orow..orow+3]: one broadcast load */
                lds<4>(ps + j * PSTR + orow, pr);
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int q = 0; q < 4; q++) {
                        o[i][4 * q] = fmaf(pr[i], v[q].x, o[i][4 * q]);
                        o[i][4 * q + 1] = fmaf(pr[i], v[q].y, o[i][4 * q + 1]);
                        o[i][4 * q + 2] = fmaf(pr[i], v[q].z, o[i][4 * q + 2]);
                        o[i][4 * q + 3] = fmaf(pr[i], v[q].w, o[i][4 * q + 3]);
                    }
            }
        } else {
#pragma unroll
        for (int i = 0; i < OR; i++) {
            float a = row_a[org * OR + i];
#pragma unroll
            for (int k = 0; k < 8; k++) o[i][k] *= a;
        }
#pragma unroll 4
        for (int j = 0; j < BN; j++) {
            float4 v0 = *reinterpret_cast<const float4 *>(kvs + j * DS + ocg * 4);
            float4 v1 = *reinterpret_cast<const float4 *>(kvs + j * DS + DP / 2 + ocg * 4);
            float pr[OR]; /* P[j][this thread's OR rows]: one broadcast load */
            lds<OR>(ps + j * PSTR + org * OR, pr);
#pragma unroll
            for (int i = 0; i < OR; i++) {
                const float pv = pr[i];
                o[i][0] = fmaf(pv, v0.x, o[i][0]);
                o[i][1] = fmaf(pv, v0.y, o[i][1]);
                o[i][2] = fmaf(pv, v0.z, o[i][2]);
                o[i][3] = fmaf(pv, v0.w, o[i][3]);
                o[i][4] = fmaf(pv, v1.x, o[i][4]);
                o[i][5] = fmaf(pv, v1.y, o[i][5]);
                o[i][6] = fmaf(pv, v1.z, o[i][6]);
                o[i][7] = fmaf(pv, v1.w, o[i][7]);
            }
        }
        } /* WPV */
    }
    __syncthreads(); /* row_l, row_m final; kvs free */

    if constexpr (WPV) {
        /* the warps' O summed into warp 0's: warps 2, 3 into 0, 1, then 1
        ** into 0, through two 16 × 128 buffers in kvs */
        auto put = [&](float *b) {
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int q = 0; q < 4; q++)
                    *reinterpret_cast<float4 *>(b + (orow + i) * 128 + ocol + 32 * q) =
                        make_float4(o[i][4 * q], o[i][4 * q + 1], o[i][4 * q + 2], o[i][4 * q + 3]);
        };
        auto add = [&](const float *b) {
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    const float4 t = *reinterpret_cast<const float4 *>(b + (orow + i) * 128 + ocol + 32 * q);
                    o[i][4 * q] += t.x, o[i][4 * q + 1] += t.y;
                    o[i][4 * q + 2] += t.z, o[i][4 * q + 3] += t.w;
                }
        };
        if (wv >= 2) put(kvs + (wv - 2) * 2048);
        __syncthreads();
        if (wv < 2) add(kvs + wv * 2048);
        __syncthreads();
        if (wv == 1) put(kvs);
        __syncthreads();
        if (wv == 0) {
            add(kvs);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int r = orow + i;
                const int64_t rr = mt * BM + r;
                if (rr >= nrows) continue;
                const int64_t t = rr / p.hpg, h = g * p.hpg + rr % p.hpg;
                const int64_t row = (b * p.T + t) * p.H + h;
                float *dst;
                float mul = 1.0f;
                if (p.splits > 1) {
                    dst = p.ws_o + (row * p.splits + split) * p.D;
                } else {
                    const float l = row_l[r];
                    mul = l > 0.0f ? 1.0f / l : 0.0f; /* pos -1: a zero row */
                    dst = p.y + row * p.D;
                }
#pragma unroll
                for (int k = 0; k < 16; k++) {
                    const int d = ocol + 32 * (k >> 2) + (k & 3);
                    if (d < p.D) dst[d] = o[i][k] * mul;
                }
            }
        }
    } else {
#pragma unroll
    for (int i = 0; i < OR; i++) {
        int r = org * OR + i;
        int64_t rr = mt * BM + r;
        if (rr >= nrows) continue;
        int64_t t = rr / p.hpg, h = g * p.hpg + rr % p.hpg;
        int64_t row = (b * p.T + t) * p.H + h;
        float *dst;
        float mul = 1.0f;
        if (p.splits > 1) {
            dst = p.ws_o + (row * p.splits + split) * p.D;
        } else {
            float l = row_l[r];
            mul = l > 0.0f ? 1.0f / l : 0.0f; /* pos -1: a zero row */
            dst = p.y + row * p.D;
        }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int d = (k < 4 ? 0 : DP / 2) + ocg * 4 + (k & 3);
            if (d < p.D) dst[d] = o[i][k] * mul;
        }
    }
    } /* WPV */
    tile_store_ml<BM>(p, b, g, mt, split, row_m, row_l);
    static_assert(BM != M40K_ATTN_DECODE_BM || PAIR || 2 * BM * 64 <= BN * DS,
                  "the decode tiles' fused combine: its fold's weights in kvs");
    if constexpr (!PAIR && !WPV && BM == M40K_ATTN_DECODE_BM && 2 * BM * 64 <= BN * DS) {
        if (p.cnt) { /* the combine, by the last blocks (kvs is free: the loop is done) */
            const FcArgs fa = {p.ws_ml, p.ws_o, p.y, p.cnt, p.pos, p.slot, p.T, p.H, p.G,
                               p.D, p.S, p.L, p.hpg, p.splits, p.fc_ng, p.skip};
            fc_arrive<BM, BN>(fa, kvs);
            return;
        }
    }
    } /* pass */
}

#include "attention_prefill64.cuh" /* attn_prefill64: prefill, variant 1 */

/* ---- decode v3: 4 rows a warp, 32 keys a step, no block barrier in the key loop ----
** NOT the default (decode_variant 2 and 3 select it): measured on the H200
** (2026-12-02, scripts/h200-attn.sh) 29.5 / 66.9 us at 8K / 32K against the
** tile kernel's 26.7 / 49.1 (8 rows a warp: 39.1 / 68.0). Its sm_52 SASS
** is ~248 (4 rows) and ~207 (8 rows) warp instructions a key against the
** tile kernel's ~254, so on an M40, where issue matters more, the 8-row
** form projects ~19% faster; but every warp waits out ~8 dependent global
** round trips a 32-key step (K in 4 batches, V in 4), which no H200 run
** hid. The next step, if anyone takes it: K and V of the next step in
** flight during this one. Kept, tested, for that and for the trail.
**
** Measured first (ncu, H200, 2026-12-02): at decode the tile kernel above
** is latency-bound. A block's split is one or two 64-key tiles, four
** __syncthreads a tile, K and V staged through shared memory: 21 us at 8K
** for 8.4 MB, warps issuing once per 8 cycles at 2 warps a scheduler. A
** "v2" with a warp per 32 keys and all 16 rows a lane (each lane 2048 FMA
** a key, serially) was slower still, 34 us: the per-warp chain grew.
** Here the block's 4 warps walk the same 32-key steps of the split, each
** for its own 4 query rows (16 = T·HPG rows a block, Q transposed in
** shared memory [DP][16]):
**   QK  lane j owns key k0 + j, reads its K row with 16-byte read-only
**       loads (__ldg: the 4 warps' reads of a row after the first hit the
**       L1/texture cache), 4 FMA per broadcast LDS.128 of Q and F2F
**   softmax  per row, a warp max by shuffles; p to shared memory [32][4]
**       (the warp's own); m and l of row r in lane r
**   PV  lane owns DP/32 dims of its 4 rows: per key one coalesced load of
**       V's row slice, one broadcast LDS.128 of p, 4·DP/32 FMA
** No merge between warps (their rows differ); the only barrier is after Q.
** Per key and KV group (16 rows, D 128): 4096 FMA in 128 warp FMAs; the
** sm_52 SASS: see bench/NOTES.md (scripts/sass_ops_ipe.py). Needs
** 16-byte aligned rows (p.vec), T·HPG <= 16 and DP 64 or 128; else the
** tile kernel runs. */
constexpr int DR = 16; /* query rows a block */

/* a / b and a % b where 0 <= a < 2^32 and 0 < b < 2^32 (block indices,
** splits, rows, key counts < L < 2^31): 32-bit unsigned, a ~20-instruction
** sequence against the int64 division routine (decode v3/v4/v5 only: the
** same change in the tile kernels measured slower, session 17) */
__device__ __forceinline__ int64_t div32(int64_t a, int64_t b) { return (int64_t)((unsigned)a / (unsigned)b); }
__device__ __forceinline__ int64_t mod32(int64_t a, int64_t b) { return (int64_t)((unsigned)a % (unsigned)b); }

/* A decode block's (b, g, split) from blockIdx (= (b·G + g)·nsplit + split;
** nsplit is p.splits, or decode v5's row groups with ways),
** its cache slot, and row_pos[DR] (the positions of its T·HPG rows, -1 for
** a pad row, a bad slot or a bad position: those reported once, by the
** first split of group 0), set by threads 0..DR-1 (a barrier follows in the
** caller): decode v3/v4's and v5's prologue. */
struct DecodeBlock {
    int64_t split, g, b, s;
    int nrows;
};
template <bool ROPE = false>
__device__ __forceinline__ DecodeBlock decode_block(const Params &p, int *row_pos, int64_t nsplit) {
    const int tid = threadIdx.x;
    DecodeBlock d;
    int64_t bx = blockIdx.x;
    d.split = mod32(bx, nsplit);
    bx = div32(bx, nsplit);
    d.g = mod32(bx, p.G), d.b = div32(bx, p.G);
    d.nrows = (int)(p.T * p.hpg);
    d.s = p.slot ? (int64_t)p.slot[d.b] : d.b;
    const bool bad_slot = d.s < 0 || d.s >= p.S;
    if (ROPE && tid == 0 && d.g == 0 && d.split == 0) {
        /* the fused RoPE + append (T 1): rope_kv_vec_kernel's reports first,
        ** as the tile kernel's fused form makes them */
        const int64_t p0 = p.pos[d.b];
        if (bad_slot) m40k_guard_report(p.guard, M40K_GUARD_KV_SLOT, d.s, p.S);
        else if (p0 < -1 || p0 >= p.L) m40k_guard_report(p.guard, M40K_GUARD_KV_POS, p0, p.L);
    }
    if (bad_slot && tid == 0 && d.g == 0 && d.split == 0)
        m40k_guard_report(p.guard, M40K_GUARD_ATTN_SLOT, d.s, p.S);
    if (tid < DR) {
        int pp = -1;
        if (tid < d.nrows && !bad_slot) {
            int64_t v = p.pos[d.b * p.T + div32(tid, p.hpg)];
            if (v < -1 || v >= p.L) {
                if (mod32(tid, p.hpg) == 0 && d.g == 0 && d.split == 0)
                    m40k_guard_report(p.guard, M40K_GUARD_ATTN_POS, v, p.L);
            } else {
                pp = (int)v;
            }
        }
        row_pos[tid] = pp;
    }
    return d;
}

template <typename TC> struct VLoad;
template <> struct VLoad<__half> {
    /* N (2 or 4) consecutive values of a row, read-only path, as floats */
    template <int N> static __device__ __forceinline__ void get(const __half *c, float *f) {
        if (N == 4) {
            uint2 u = __ldg(reinterpret_cast<const uint2 *>(c));
            float2 a = __half22float2(*reinterpret_cast<const __half2 *>(&u.x));
            float2 b = __half22float2(*reinterpret_cast<const __half2 *>(&u.y));
            f[0] = a.x, f[1] = a.y, f[2 % N] = b.x, f[3 % N] = b.y;
        } else {
            unsigned u = __ldg(reinterpret_cast<const unsigned *>(c));
            float2 a = __half22float2(*reinterpret_cast<const __half2 *>(&u));
            f[0] = a.x, f[1 % N] = a.y;
        }
    }
    static __device__ __forceinline__ void get8(const __half *c, float *f) {
        const uint4 u = __ldg(reinterpret_cast<const uint4 *>(c));
        half8_to_float(u, f);
    }
};
template <> struct VLoad<float> {
    template <int N> static __device__ __forceinline__ void get(const float *c, float *f) {
        if (N == 4) {
            float4 a = __ldg(reinterpret_cast<const float4 *>(c));
            f[0] = a.x, f[1] = a.y, f[2 % N] = a.z, f[3 % N] = a.w;
        } else {
            float2 a = __ldg(reinterpret_cast<const float2 *>(c));
            f[0] = a.x, f[1 % N] = a.y;
        }
    }
    static __device__ __forceinline__ void get8(const float *c, float *f) {
        float4 a = __ldg(reinterpret_cast<const float4 *>(c)), b = __ldg(reinterpret_cast<const float4 *>(c) + 1);
        f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
    }
};

/* Raw (unconverted) loads for decode v4's software pipeline: a chunk of
** 8 values of a K row, N (2 or 4) of a V row; cvt turns them into floats
** when they are used, a chunk (8 keys) after they were asked for. */
template <typename TC> struct Raw;
template <> struct Raw<__half> {
    struct K8 { uint4 u; };
    struct V4 { uint2 u; };
    static __device__ __forceinline__ K8 k8(const __half *c) {
        return {__ldg(reinterpret_cast<const uint4 *>(c))};
    }
    static __device__ __forceinline__ void cvt(const K8 &r, float *f) { half8_to_float(r.u, f); }
    template <int N> static __device__ __forceinline__ V4 v(const __half *c) {
        V4 r;
        if (N == 4) r.u = __ldg(reinterpret_cast<const uint2 *>(c));
        else r.u = make_uint2(__ldg(reinterpret_cast<const unsigned *>(c)), 0u);
        return r;
    }
    template <int N> static __device__ __forceinline__ void cvt(const V4 &r, float *f) {
        const float2 a = __half22float2(*reinterpret_cast<const __half2 *>(&r.u.x));
        f[0] = a.x, f[1 % N] = a.y;
        if (N == 4) {
            const float2 b = __half22float2(*reinterpret_cast<const __half2 *>(&r.u.y));
            f[2 % N] = b.x, f[3 % N] = b.y;
        }
    }
};
template <> struct Raw<float> {
    struct K8 { float4 a, b; };
    struct V4 { float4 a; };
    static __device__ __forceinline__ K8 k8(const float *c) {
        return {__ldg(reinterpret_cast<const float4 *>(c)), __ldg(reinterpret_cast<const float4 *>(c) + 1)};
    }
    static __device__ __forceinline__ void cvt(const K8 &r, float *f) {
        f[0] = r.a.x, f[1] = r.a.y, f[2] = r.a.z, f[3] = r.a.w;
        f[4] = r.b.x, f[5] = r.b.y, f[6] = r.b.z, f[7] = r.b.w;
    }
    template <int N> static __device__ __forceinline__ V4 v(const float *c) {
        V4 r;
        if (N == 4) r.a = __ldg(reinterpret_cast<const float4 *>(c));
        else {
            const float2 t = __ldg(reinterpret_cast<const float2 *>(c));
            r.a = make_float4(t.x, t.y, 0.0f, 0.0f);
        }
        return r;
    }
    template <int N> static __device__ __forceinline__ void cvt(const V4 &r, float *f) {
        f[0] = r.a.x, f[1 % N] = r.a.y;
        if (N == 4) f[2 % N] = r.a.z, f[3 % N] = r.a.w;
    }
};

/* C keys a lane (decode variants 8 and 9: C = 4, 128-key steps): the same
** kernel with each lane holding C keys' scores for its RW rows, so one
** broadcast LDS.128 of Q feeds 4·C FMA (C = 1: 4, a float of shared memory
** an FMA, twice the 0.5 that keeps sm_52's shared-memory path under its
** FMA rate) and P·V's broadcast LDS.128 of p feeds 4·EPL = 16 (0.25).
** Per key and KV group (16 rows, D 128): 32 cycles of shared-memory return
** (4 LDS.128 of Q and 4 of p a key, 4 cycles each) against 32 of FMA, so an
** M40 at long contexts is held by its bytes, not by shared memory (the
** tile kernel's ~96 cycles a key; bench/NOTES.md, session 9 item 5). K and
** V reach registers straight from global memory (each lane its keys' K
** rows, __ldg; V's rows coalesced), no staging. The key loop's C loads of
** a chunk are in flight together; P·V keeps 16 keys of V in flight. */
template <int DP, int RW, int C, typename TC>
/* blocks an SM: v3 6 / 8; v4 (its loads a chunk ahead) 4 / 6 with f16
** caches, 3 / 4 with f32 (twice the raw registers) */
__global__ void __launch_bounds__(DR / RW * 32, C == 1   ? (RW == 4 ? 6 : 8)
                                                : sizeof(TC) == 2 ? (RW == 4 ? 4 : 6)
                                                                  : (RW == 4 ? 3 : 4))
    attn_decode_kernel(Params p) {
    constexpr int NW = DR / RW, EPL = DP / 32; /* warps; O dims a lane */
    constexpr int KS = 32 * C;                 /* keys a step */
    static_assert(RW == 4 || RW == 8, "rows a warp");
    static_assert(C == 1 || C == 2 || C == 4, "keys a lane");
    __shared__ __align__(16) float qs[DP * DR]; /* Q [DP][16], pre-scaled */
    __shared__ __align__(16) float pw[NW][KS * RW];
    __shared__ int row_pos[DR];

    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const DecodeBlock db = decode_block(p, row_pos, p.splits);
    const int64_t split = db.split, g = db.g, b = db.b, s = db.s;
    const int nrows = db.nrows;
    for (int it = tid; it < DR * DP; it += NW * 32) {
        const int r = it / DP, d = it % DP;
        float v = 0.0f;
        if (r < nrows && d < p.D) {
            const int64_t t = r / p.hpg, h = g * p.hpg + r % p.hpg;
            v = p.q[b * p.qs0 + t * p.qs1 + h * p.D + d] * p.qscale;
        }
        qs[d * DR + r] = v;
    }
    __syncthreads();

    int kend = 0;
#pragma unroll
    for (int r = 0; r < DR; r++) kend = max(kend, row_pos[r] + 1);
    int k_lo = 0, k_hi = kend;
    if (p.splits > 1) {
        /* split_share with the step's keys: attn_combine's count (chunk KS) */
        const int per = (int)split_share(kend, p.splits, KS);
        k_lo = (int)min((int64_t)kend, split * per);
        k_hi = min(kend, k_lo + per);
    }
    if (C > 1 && p.skip && split > 0 && k_lo >= k_hi) return; /* no keys: no partial */
    const int r0 = RW * w; /* this warp's rows r0 .. r0 + RW - 1 */
    int rp[RW];
#pragma unroll
    for (int i = 0; i < RW; i++) rp[i] = row_pos[r0 + i];

    const TC *kc = reinterpret_cast<const TC *>(p.kc), *vc = reinterpret_cast<const TC *>(p.vc);
    const int64_t base = (s * p.L * p.G + g) * p.D; /* (slot s, key 0, group g) */
    float o[RW][EPL];
#pragma unroll
    for (int i = 0; i < RW; i++)
#pragma unroll
        for (int e = 0; e < EPL; e++) o[i][e] = 0.0f;
    float m_mine = -INFINITY, l_mine = 0.0f; /* row r0 + lane's, lanes 0..RW-1 */
    float *pr = pw[w];
    const int d0 = lane * EPL;

    for (int k0 = k_lo; k0 < k_hi; k0 += KS) {
        float sc[C][RW];
        bool kin[C];
#pragma unroll
        for (int c = 0; c < C; c++) {
            kin[c] = k0 + lane + 32 * c < k_hi;
#pragma unroll
            for (int i = 0; i < RW; i++) sc[c][i] = 0.0f;
        }
        /* sc[c][rows] += Q[rows][chunk ch's 8 dims] · K[key c][those dims]: one
        ** broadcast LDS.128 of Q feeds 4 rows × C keys */
        auto qk_chunk = [&](int ch, const float (&kv)[C][8]) {
#pragma unroll
            for (int dd = 0; dd < 8; dd++) {
#pragma unroll
                for (int i = 0; i < RW; i += 4) {
                    const float4 a = *reinterpret_cast<const float4 *>(qs + (ch * 8 + dd) * DR + r0 + i);
#pragma unroll
                    for (int c = 0; c < C; c++) {
                        sc[c][i] = fmaf(a.x, kv[c][dd], sc[c][i]);
                        sc[c][i + 1] = fmaf(a.y, kv[c][dd], sc[c][i + 1]);
                        sc[c][i + 2] = fmaf(a.z, kv[c][dd], sc[c][i + 2]);
                        sc[c][i + 3] = fmaf(a.w, kv[c][dd], sc[c][i + 3]);
                    }
                }
            }
        };
        if constexpr (C > 1) {
            /* K a chunk ahead: chunk ch + 1's C loads are in flight while
            ** chunk ch is converted and used (a lane past the keys reads key
            ** k0's row, in the cache, and masks its scores) */
            const TC *krow[C];
#pragma unroll
            for (int c = 0; c < C; c++)
                krow[c] = kc + base + (int64_t)(kin[c] ? k0 + lane + 32 * c : k0) * p.gd;
            typename Raw<TC>::K8 kr[C];
#pragma unroll
            for (int c = 0; c < C; c++) kr[c] = Raw<TC>::k8(krow[c]);
            const int nch = (int)min((int64_t)(DP / 8), (p.D + 7) / 8);
#pragma unroll 1
            for (int ch = 0; ch < nch; ch++) {
                float kv[C][8];
#pragma unroll
                for (int c = 0; c < C; c++) Raw<TC>::cvt(kr[c], kv[c]);
                if (ch + 1 < nch)
#pragma unroll
                    for (int c = 0; c < C; c++) kr[c] = Raw<TC>::k8(krow[c] + (ch + 1) * 8);
                qk_chunk(ch, kv);
            }
        } else if (kin[0]) { /* v3: a lane a key, two chunks of its row unrolled */
            const TC *krow = kc + base + (int64_t)(k0 + lane) * p.gd;
#pragma unroll 2
            for (int ch = 0; ch < DP / 8; ch++) {
                if (ch * 8 >= p.D) break;
                float kv[C][8];
                VLoad<TC>::get8(krow + ch * 8, kv[0]);
                qk_chunk(ch, kv);
            }
        }
        /* C > 1: V's first VB keys in flight across the softmax (they do
        ** not depend on it); a key past the step's reads key k0's row, its
        ** p is 0 */
        constexpr int VB = 8;
        const int nk = min(KS, k_hi - k0);
        const TC *vrow4 = vc + base + (int64_t)k0 * p.gd + min(d0, (int)p.D - EPL);
        typename Raw<TC>::V4 vr[C > 1 ? VB : 1];
        if constexpr (C > 1) {
#pragma unroll
            for (int jj = 0; jj < VB; jj++) vr[jj] = Raw<TC>::template v<EPL>(vrow4 + min(jj, nk - 1) * p.gd);
        }
#pragma unroll
        for (int i = 0; i < RW; i++) {
            float v[C], mx = -INFINITY;
#pragma unroll
            for (int c = 0; c < C; c++) {
                v[c] = kin[c] && k0 + lane + 32 * c <= rp[i] ? sc[c][i] : -INFINITY;
                mx = fmaxf(mx, v[c]);
            }
#pragma unroll
            for (int o2 = 16; o2 > 0; o2 >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o2));
            const float m_old = __shfl_sync(0xffffffffu, m_mine, i);
            const float m_new = fmaxf(m_old, mx);
            const float m_safe = m_new == -INFINITY ? 0.0f : m_new;
            const float a = exp2f(m_old - m_safe);
            float sum = 0.0f;
#pragma unroll
            for (int c = 0; c < C; c++) {
                const float e = exp2f(v[c] - m_safe);
                sc[c][i] = e;
                sum += e;
            }
#pragma unroll
            for (int o2 = 16; o2 > 0; o2 >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o2);
            if (lane == i) l_mine = l_mine * a + sum, m_mine = m_new;
#pragma unroll
            for (int k = 0; k < EPL; k++) o[i][k] *= a;
        }
#pragma unroll
        for (int c = 0; c < C; c++)
#pragma unroll
            for (int i = 0; i < RW; i += 4)
                *reinterpret_cast<float4 *>(pr + (lane + 32 * c) * RW + i) =
                    make_float4(sc[c][i], sc[c][i + 1], sc[c][i + 2], sc[c][i + 3]);
        __syncwarp();
        /* o[rows][EPL dims] += p[key j][rows] · V[key j][this lane's dims] */
        auto pv_key = [&](int j, const float (&v)[EPL]) {
#pragma unroll
            for (int i = 0; i < RW; i += 4) {
                const float4 a = *reinterpret_cast<const float4 *>(pr + j * RW + i);
#pragma unroll
                for (int e = 0; e < EPL; e++) {
                    o[i][e] = fmaf(a.x, v[e], o[i][e]);
                    o[i + 1][e] = fmaf(a.y, v[e], o[i + 1][e]);
                    o[i + 2][e] = fmaf(a.z, v[e], o[i + 2][e]);
                    o[i + 3][e] = fmaf(a.w, v[e], o[i + 3][e]);
                }
            }
        };
        if constexpr (C > 1) {
            /* P·V in batches of VB keys, the next batch's loads in flight
            ** (a lane past D computes on a clamped column and writes nothing) */
#pragma unroll 1
            for (int jb = 0; jb < nk; jb += VB) {
                float v[VB][EPL];
#pragma unroll
                for (int jj = 0; jj < VB; jj++) Raw<TC>::template cvt<EPL>(vr[jj], v[jj]);
                if (jb + VB < nk)
#pragma unroll
                    for (int jj = 0; jj < VB; jj++)
                        vr[jj] = Raw<TC>::template v<EPL>(vrow4 + min(jb + VB + jj, nk - 1) * p.gd);
#pragma unroll
                for (int jj = 0; jj < VB; jj++) pv_key(jb + jj, v[jj]);
            }
        } else if (d0 < p.D) {
            const TC *vrow = vc + base + (int64_t)k0 * p.gd + d0;
#pragma unroll 8
            for (int j = 0; j < nk; j++) {
                float v[EPL];
                VLoad<TC>::template get<EPL>(vrow + j * p.gd, v);
                pv_key(j, v);
            }
        }
        __syncwarp(); /* pr is rewritten by the next step */
    }

    /* write this warp's rows: y (one split) or the partial (m, l, O) */
#pragma unroll
    for (int i = 0; i < RW; i++) {
        const int r = r0 + i;
        const float M = __shfl_sync(0xffffffffu, m_mine, i), L = __shfl_sync(0xffffffffu, l_mine, i);
        if (r >= nrows) continue;
        const int64_t t = r / p.hpg, h = g * p.hpg + r % p.hpg;
        const int64_t row = (b * p.T + t) * p.H + h;
        if (p.splits > 1) {
            float *dst = p.ws_o + (row * p.splits + split) * p.D;
            if (d0 < p.D)
#pragma unroll
                for (int e = 0; e < EPL; e++) dst[d0 + e] = o[i][e];
            if (lane == 0) {
                p.ws_ml[(row * p.splits + split) * 2] = M;
                p.ws_ml[(row * p.splits + split) * 2 + 1] = L;
            }
        } else if (d0 < p.D) {
            const float inv = L > 0.0f ? 1.0f / L : 0.0f;
#pragma unroll
            for (int e = 0; e < EPL; e++) p.y[row * p.D + d0 + e] = o[i][e] * inv;
        }
    }
}

/* ---- decode v5: a warp a query row, a lane 4 dims, 4 keys a step ----
** (decode_variant 10, opt-in; f16 caches with 16-byte rows, D 128, T·HPG
** <= 16 rows a (b, g).) For short contexts, where the tile kernel's blocks
** are few and each warp's chain is long (ctx 128: 8 blocks of 4 warps, ~4,000
** instructions a warp, one warp a scheduler; ncu, session 16): a block per
** (b, g, split) of one warp per row, 16 warps at ChatGLM2's shape, so the
** same keys run on 4x the warps with ~1/4 of the chain. A lane holds q's
** dims 4·lane..+3; a key is one 8-byte K load a lane (the row coalesced, the
** block's warps share it through L1), 4 FMA and a butterfly; the online
** softmax runs in the warp; P·V adds into the lane's 4 dims. Each warp
** converts its own K and V (16x the tile kernel's conversions), so long
** contexts keep the tile kernel. The split rule is the tile kernel's with
** V5_CHUNK-key shares and at most 32 splits a (b, g) (kernels/attention.h),
** the partial layout the tile kernel's; attn_combine folds the splits, or
** v5_fold in the last block (m40k_attn_fuse_combine). */
constexpr int V5_CHUNK = 16;
/* decode v5's combine in its own last block (Params::cnt, splits > 1; the
** m40k_attn_fuse_combine knob): every block with a partial counts in on
** (b, g)'s word (one fence a block, after a barrier: fc_arrive's order);
** the last to arrive folds the partials, a warp a row and a lane its 4
** dims, every load independent (through L2: other SMs wrote them), and
** writes y; it also zeroes the word for the next launch. The arrivals are
** attn_combine's count: the first ceil(kend / per) splits (split 0 always),
** or every split without the skip. */
__device__ __forceinline__ void v5_fold(const Params &p, int64_t b, int64_t g, int kend, int64_t row,
                                     bool live) {
    __shared__ int last;
    const int tid = threadIdx.x, lane = tid & 31;
    int64_t na = p.splits;
    if (p.skip) {
        const int64_t per = split_share(kend, p.splits, V5_CHUNK);
        na = per > 0 ? div32(kend + per - 1, per) : 1;
        if (na < 1) na = 1;
    }
    __syncthreads(); /* this block's partial, before its count */
    if (tid == 0) {
        unsigned *c = p.cnt + b * p.G + g;
        __threadfence();
        const unsigned old = atomicAdd(c, 1u);
        last = old == (unsigned)(na - 1);
        if (last) {
            atomicExch(c, 0u);
            __threadfence(); /* the others' partials, before this block's reads */
        }
    }
    __syncthreads();
    if (!last || !live) return;
    const int n = (int)na;
    const float *ml = p.ws_ml + row * p.splits * 2;
    const float *wo = p.ws_o + row * p.splits * p.D + 4 * lane;
    float M = -INFINITY;
    for (int c = lane; c < n; c += 32) M = fmaxf(M, __ldcg(ml + 2 * c));
#pragma unroll
    for (int w = 16; w > 0; w >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, w));
    const float ms = M == -INFINITY ? 0.0f : M;
    float Ls = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int c0 = 0; c0 < n; c0 += 32) {
        const int c = c0 + lane;
        const float wc = c < n ? exp2f(__ldcg(ml + 2 * c) - ms) : 0.0f; /* m -inf: 0 */
        if (c < n) Ls = fmaf(wc, __ldcg(ml + 2 * c + 1), Ls);
        const int nc = min(32, n - c0);
        for (int j0 = 0; j0 < nc; j0 += 4) { /* 4 partials' loads in flight */
            float4 ov[4];
#pragma unroll
            for (int u = 0; u < 4; u++)
                ov[u] = j0 + u < nc ? __ldcg(reinterpret_cast<const float4 *>(wo + (int64_t)(c0 + j0 + u) * p.D))
                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const float wu = __shfl_sync(0xffffffffu, wc, (j0 + u) & 31);
                acc[0] = fmaf(wu, ov[u].x, acc[0]), acc[1] = fmaf(wu, ov[u].y, acc[1]);
                acc[2] = fmaf(wu, ov[u].z, acc[2]), acc[3] = fmaf(wu, ov[u].w, acc[3]);
            }
        }
    }
#pragma unroll
    for (int w = 16; w > 0; w >>= 1) Ls += __shfl_xor_sync(0xffffffffu, Ls, w);
    const float inv = Ls > 0.0f ? 1.0f / Ls : 0.0f; /* no keys: a zero row */
#pragma unroll
    for (int e = 0; e < 4; e++) p.y[row * p.D + 4 * lane + e] = acc[e] * inv;
}
/* ROPE (T 1): a lane's dims d..d+3 of a row read raw from qkv (v5_raw:
** scalar loads, no alignment asked of qkv; asked for before pos, which
** they do not depend on) and turned as turn_pairs4 turns them (v5_turn),
** the angles of pairs d/2 and d/2 + 1 its own (the same expression as the
** shared table's, so the same bits) */
__device__ __forceinline__ float4 v5_raw(const float *src) {
    return make_float4(src[0], src[1], src[2], src[3]);
}
__device__ __forceinline__ float4 v5_turn(float4 x, bool rot, int d, int rd, float c0, float s0,
                                          float c1, float s1) {
    if (rot && d < rd) {
        const float ra = x.x * c0 - x.y * s0, rb = x.y * c0 + x.x * s0;
        x.x = ra, x.y = rb;
        if (d + 2 < rd) {
            const float rc = x.z * c1 - x.w * s1, rw = x.w * c1 + x.z * s1;
            x.z = rc, x.w = rw;
        }
    }
    return x;
}

/* The angles of pairs d/2 and d/2 + 1 at position p0 (below rd only; the
** shared table's expression, so the same bits), and the fused append:
** lane dims d..d+3 of group g's K row (turned) and V row from qkv row
** `row` into the caches at (slot s, position p0), as halves. */
__device__ __forceinline__ void rope_angles(const Params &p, int64_t p0, bool rot, int d, int rd,
                                            float &c0, float &s0, float &c1, float &s1) {
    c0 = 1.0f, s0 = 0.0f, c1 = 1.0f, s1 = 0.0f;
    if (rot && d < rd) {
        sincosf((float)p0 * p.rpos_scale * p.rth[d / 2], &s0, &c0);
        if (d + 2 < rd) sincosf((float)p0 * p.rpos_scale * p.rth[d / 2 + 1], &s1, &c1);
    }
}
/* (kraw, vraw: the lane's dims d..d+3 of the group's K and V rows as read
** from qkv, asked for by the caller before pos) */
__device__ __forceinline__ void rope_append4v(const Params &p, float4 kraw, float4 vraw, int64_t g,
                                              int64_t s, int64_t p0, bool rot, int d, int rd,
                                              float c0, float s0, float c1, float s1) {
    const float4 kx = v5_turn(kraw, rot, d, rd, c0, s0, c1, s1);
    const float4 vx = vraw;
    const int64_t o = ((s * p.L + p0) * p.G + g) * p.D + d;
    const __half2 k01 = __floats2half2_rn(kx.x, kx.y), k23 = __floats2half2_rn(kx.z, kx.w);
    const __half2 v01 = __floats2half2_rn(vx.x, vx.y), v23 = __floats2half2_rn(vx.z, vx.w);
    uint2 pk, pv;
    pk.x = *reinterpret_cast<const unsigned *>(&k01), pk.y = *reinterpret_cast<const unsigned *>(&k23);
    pv.x = *reinterpret_cast<const unsigned *>(&v01), pv.y = *reinterpret_cast<const unsigned *>(&v23);
    *reinterpret_cast<uint2 *>(reinterpret_cast<__half *>(const_cast<void *>(p.kc)) + o) = pk;
    *reinterpret_cast<uint2 *>(reinterpret_cast<__half *>(const_cast<void *>(p.vc)) + o) = pv;
}

/* decode v5's keys [lo, hi) of [0, kend) for split sp and way i: with W 1
** split sp of p.splits in V5_CHUNK-key shares (attn_combine's count, and
** the pre-barrier K loads' rule; i is 0), with W > 1 way i of W in
** V5W_STEP-key shares of split sp's keys, split sp of p.splits in
** V5W_STEP-key shares of all the keys (one split: all of them) */
constexpr int V5W_STEP = 4;
template <int W>
__device__ __forceinline__ void v5_keys(const Params &p, int kend, int64_t sp, int64_t i, int &lo, int &hi) {
    lo = 0, hi = kend;
    if (p.splits > 1) {
        const int per = (int)split_share(kend, p.splits, W > 1 ? V5W_STEP : V5_CHUNK);
        lo = (int)min((int64_t)kend, sp * per);
        hi = min(kend, lo + per);
    }
    if (W > 1) {
        const int per = (int)split_share(hi - lo, W, V5W_STEP);
        lo = (int)min((int64_t)hi, lo + i * per);
        hi = min(hi, lo + per);
    }
}

/* ROPE: the fused RoPE + append (m40k_rope_attention at T 1, f16 caches):
** every warp turns its row's q as it loads it (p.q is qkv), and warp 0 of
** the block whose keys hold the new position writes the group's K (turned)
** and V rows before the barrier that precedes every cache read; K and V
** are then read with plain loads (not the read-only path: this launch wrote
** them). Same results and reports as rope_kv_vec_kernel + decode v5.
**
** W > 1 (m40k_attn_shape::v5_ways; session 29): the ways. A block per (b,
** g, RB query rows) of W·RB warps, warp wi the row wi % RB of its group and
** the way wi / RB: a V5W_STEP-key share of all the keys. After the key loop
** the ways' (m, l, O) meet in shared memory behind one barrier and way 0's
** warps fold them and write y: no partials in global memory and no
** attn_combine launch. Every block needs the new position's K and V, so
** with ROPE warp 0 of each block appends them (a group's blocks write the
** same bits to the same cache rows). With p.splits > 1 (m40k_attn_shape::
** v5_wsplits; session 40) each (b, g, RB rows) has p.splits blocks (block
** = row group · splits + split), the ways share their split's keys, and
** way 0's fold goes out as the split's partial (attn_combine's layout;
** an empty split's is (-inf, 0, 0)) for attn_combine, with every split
** counted (no skip). */
template <typename TC, bool ROPE = false, int W = 1, int RB = DR>
__global__ void __launch_bounds__(W * RB * 32) attn_decode_v5(Params p) {
    static_assert(!ROPE || sizeof(TC) == 2, "fused RoPE: f16 caches");
    static_assert(W == 1 ? RB == DR : (W * RB <= 32 && DR % RB == 0), "decode v5's ways: <= 32 warps");
    __shared__ int row_pos[DR];
    const int tid = threadIdx.x, lane = tid & 31, wi = tid >> 5;
    /* the blocks of a (b, g): its splits, or with ways its row groups times its splits */
    const int64_t nsp = W > 1 ? div32(p.T * p.hpg + RB - 1, RB) * p.splits : p.splits;
    const int way = W > 1 ? wi / RB : 0;
    const int r = W > 1 ? (int)div32(mod32(blockIdx.x, nsp), p.splits) * RB + wi % RB : wi; /* this warp's row */
    using R = Raw<TC>;
    /* ROPE: the qkv values this warp needs, asked for first (they do not
    ** depend on pos; session 28: behind pos, its angles and the append they
    ** were three dependent round trips before the first key) */
    float4 qx = make_float4(0.0f, 0.0f, 0.0f, 0.0f), kx = qx, vx = qx;
    if constexpr (ROPE) {
        const int64_t bx = div32(blockIdx.x, nsp), gq = mod32(bx, p.G), bq = div32(bx, p.G);
        const float *row = p.q + bq * p.qs0 + 4 * lane;
        if (r < p.hpg) qx = v5_raw(row + (gq * p.hpg + r) * p.D); /* T 1: nrows = hpg */
        if (wi == 0) kx = v5_raw(row + (p.H + gq) * p.D), vx = v5_raw(row + (p.H + p.G + gq) * p.D);
    }
    const DecodeBlock db = decode_block<ROPE>(p, row_pos, nsp);
    /* the block's split of the keys (with ways: of its row group's) */
    const int64_t split = W > 1 ? mod32(db.split, p.splits) : db.split, g = db.g, b = db.b, s = db.s;
    const int nrows = db.nrows;
    /* q's 4 dims of this lane, pre-scaled (the row's query t, head h) */
    float q[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const TC *kc = reinterpret_cast<const TC *>(p.kc) + (s * p.L * p.G + g) * p.D + 4 * lane;
    const TC *vc = reinterpret_cast<const TC *>(p.vc) + (s * p.L * p.G + g) * p.D + 4 * lane;
    /* ROPE: the first step's K rows, asked for before the barrier where none
    ** of them is the new position's (pre: the keys [pre_lo, pre_kh) they are for) */
    typename R::V4 kr[4], vr[4];
    int pre_lo = 0, pre_kh = -1;
    if constexpr (ROPE) {
        const int64_t p0 = p.pos[b];
        const bool rot = p0 >= 0;
        const int d = 4 * lane, rd = 2 * p.rhalf;
        /* the share's keys as row_pos will give them (decode_kend's rule, T
        ** 1): kend0 is p0 + 1 where the slot and p0 are valid, else 0 */
        const int kend0 = decode_kend(p.pos, p.slot, b, 1, p.S, p.L);
        int lo, hi;
        v5_keys<W>(p, kend0, split, way, lo, hi);
        if (r < nrows && lo < hi && min(lo + 3, hi - 1) < kend0 - 1) {
#pragma unroll
            for (int j = 0; j < 4; j++) kr[j].u = *reinterpret_cast<const uint2 *>(kc + (int64_t)min(lo + j, hi - 1) * p.gd);
            pre_lo = lo, pre_kh = hi;
        }
        float c0, s0, c1, s1;
        rope_angles(p, p0, rot, d, rd, c0, s0, c1, s1);
        if (r < nrows) {
            const float4 v = v5_turn(qx, rot, d, rd, c0, s0, c1, s1);
            q[0] = v.x * p.qscale, q[1] = v.y * p.qscale, q[2] = v.z * p.qscale, q[3] = v.w * p.qscale;
        }
        /* the append: the split that holds position p0 (the last key; its
        ** share is inside [0, kend0), so the slot and p0 are valid), or with
        ** ways every block */
        if (wi == 0 && (W > 1 ? kend0 > 0 : p0 >= lo && p0 < hi))
            rope_append4v(p, kx, vx, g, s, p0, rot, d, rd, c0, s0, c1, s1);
    } else if (r < nrows) {
        const int64_t t = div32(r, p.hpg), h = g * p.hpg + mod32(r, p.hpg);
        const float4 v = __ldg(reinterpret_cast<const float4 *>(p.q + b * p.qs0 + t * p.qs1 + h * p.D) + lane);
        q[0] = v.x * p.qscale, q[1] = v.y * p.qscale, q[2] = v.z * p.qscale, q[3] = v.w * p.qscale;
    }
    __syncthreads(); /* row_pos; ROPE: the new K and V rows in the caches */

    int kend = 0;
#pragma unroll
    for (int i = 0; i < DR; i++) kend = max(kend, row_pos[i] + 1);
    int k_lo, k_hi;
    v5_keys<W>(p, kend, split, way, k_lo, k_hi);
    if (W == 1 && p.skip && split > 0 && k_lo >= k_hi) return; /* no keys: no partial */
    const bool live = r < nrows;
    if (W == 1 && !live && !p.cnt) return;           /* no barrier follows */
    const int kh = live ? min(k_hi, row_pos[r] + 1) : k_lo; /* this row's keys: [k_lo, kh) */

    /* a key's row (past kh: the last key again, masked below; in L1 already) */
    const auto at = [&](const TC *c, int k) { return c + (int64_t)min(k, kh - 1) * p.gd; };
    /* ROPE: plain loads (this launch wrote a row) */
    const auto ld = [&](const TC *c) {
        if constexpr (ROPE) {
            typename R::V4 v;
            v.u = *reinterpret_cast<const uint2 *>(c);
            return v;
        } else {
            return R::template v<4>(c);
        }
    };
    /* a software pipeline: a step's V and the next step's K are asked for
    ** at its top, so a step waits on one round trip at most, not two (K,
    ** then V after the scores), and not at all once the loads run ahead */
    if (k_lo < kh && !(k_lo == pre_lo && kh == pre_kh)) /* ROPE: unless asked for above */
#pragma unroll
        for (int j = 0; j < 4; j++) kr[j] = ld(at(kc, k_lo + j));
    float m = -INFINITY, l = 0.0f, o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    /* the loop's rows from the row of its step's first key, advanced a step
    ** at a time (no 64-bit product a load: session 31, sm_52 SASS); a row
    ** past kh - 1 reads the step's first row again (valid: k0 < kh; its
    ** score is masked below, so its p is 0 and its V row adds 0) */
    const int64_t st4 = 4 * (int64_t)p.gd;
    const int rg[4] = {0, p.gd, 2 * p.gd, 3 * p.gd};
    const auto row4 = [&](const TC *r0, int k0, int j) { return r0 + (k0 + j < kh ? rg[j] : 0); };
    const TC *kq = kc + (int64_t)k_lo * p.gd, *vq = vc + (int64_t)k_lo * p.gd;
    for (int k0 = k_lo; k0 < kh; k0 += 4, kq += st4, vq += st4) {
        float sc[4], kv[4][4];
#pragma unroll
        for (int j = 0; j < 4; j++) vr[j] = ld(row4(vq, k0, j));
#pragma unroll
        for (int j = 0; j < 4; j++) R::template cvt<4>(kr[j], kv[j]);
        if (k0 + 4 < kh)
#pragma unroll
            for (int j = 0; j < 4; j++) kr[j] = ld(row4(kq + st4, k0 + 4, j));
#pragma unroll
        for (int j = 0; j < 4; j++)
            sc[j] = fmaf(q[3], kv[j][3], fmaf(q[2], kv[j][2], fmaf(q[1], kv[j][1], q[0] * kv[j][0])));
#pragma unroll
        for (int w = 16; w > 0; w >>= 1)
#pragma unroll
            for (int j = 0; j < 4; j++) sc[j] += __shfl_xor_sync(0xffffffffu, sc[j], w);
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (k0 + j >= kh) sc[j] = -INFINITY;
            mx = fmaxf(mx, sc[j]);
        }
        const float m_new = fmaxf(m, mx); /* finite: key k0 < kh counts */
        const float a = exp2f(m - m_new); /* m -inf (the first step): 0 */
        float pj[4], ps = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) pj[j] = exp2f(sc[j] - m_new), ps += pj[j];
        l = l * a + ps;
#pragma unroll
        for (int e = 0; e < 4; e++) o[e] *= a;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float vv[4];
            R::template cvt<4>(vr[j], vv);
#pragma unroll
            for (int e = 0; e < 4; e++) o[e] = fmaf(pj[j], vv[e], o[e]);
        }
        m = m_new;
    }

    const int64_t row = (b * p.T + div32(r, p.hpg)) * p.H + g * p.hpg + mod32(r, p.hpg);
    if constexpr (W > 1) { /* the ways' (m, l, O) folded by way 0's warps, as attn_combine folds splits */
        __shared__ float4 wo[W][RB][32];
        __shared__ float2 wml[W][RB];
        const int rl = wi % RB;
        wo[way][rl][lane] = make_float4(o[0], o[1], o[2], o[3]);
        if (lane == 0) wml[way][rl] = make_float2(m, l); /* no keys: (-inf, 0) */
        __syncthreads();
        if (way != 0 || !live) return;
        float M = -INFINITY;
#pragma unroll
        for (int j = 0; j < W; j++) M = fmaxf(M, wml[j][rl].x);
        const float ms = M == -INFINITY ? 0.0f : M;
        float Ls = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < W; j++) {
            const float2 ml = wml[j][rl];
            const float wj = exp2f(ml.x - ms); /* m -inf: 0 */
            const float4 v = wo[j][rl][lane];
            Ls = fmaf(wj, ml.y, Ls);
            acc[0] = fmaf(wj, v.x, acc[0]), acc[1] = fmaf(wj, v.y, acc[1]);
            acc[2] = fmaf(wj, v.z, acc[2]), acc[3] = fmaf(wj, v.w, acc[3]);
        }
        if (p.splits > 1) { /* the split's partial (m, l, O): attn_combine folds them */
            float *dst = p.ws_o + (row * p.splits + split) * p.D + 4 * lane;
#pragma unroll
            for (int e = 0; e < 4; e++) dst[e] = acc[e];
            if (lane == 0) {
                p.ws_ml[(row * p.splits + split) * 2] = M; /* no keys: -inf */
                p.ws_ml[(row * p.splits + split) * 2 + 1] = Ls;
            }
            return;
        }
        const float inv = Ls > 0.0f ? 1.0f / Ls : 0.0f; /* no keys: a zero row */
#pragma unroll
        for (int e = 0; e < 4; e++) p.y[row * p.D + 4 * lane + e] = acc[e] * inv;
        return;
    }
    /* y (one split) or the partial (m, l, O), in attn_combine's layout */
    if (live && p.splits > 1) {
        float *dst = p.ws_o + (row * p.splits + split) * p.D + 4 * lane;
#pragma unroll
        for (int e = 0; e < 4; e++) dst[e] = o[e];
        if (lane == 0) {
            p.ws_ml[(row * p.splits + split) * 2] = m;
            p.ws_ml[(row * p.splits + split) * 2 + 1] = l;
        }
    } else if (live) {
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++) p.y[row * p.D + 4 * lane + e] = o[e] * inv;
    }
    if (p.cnt) v5_fold(p, b, g, kend, row, live);
}
/* ---- end decode v5 ---- */

/* ---- decode v6: a key's dims over 16 lanes, HH query rows a lane ----
** (decode_variant 11 and 12: 8 and 4 rows a lane; f16 caches with 16-byte
** rows, D 128, T·HPG <= 16; the default at T 1 there: lib/ops/attention.c
** attn_bound.) Long contexts, where the tile kernels are held by shared memory's
** return path (one register a lane a clock: their register tiles take
** 0.6-1.0 shared operands an FMA, ~100 SM-cycles a key and KV group against
** the FMA's 32; docs/attention.md, session 9 and 12) and decode v4/v5 by
** their long per-warp chains. Here no operand of an FMA comes from shared
** memory:
**   - a lane holds 8 dims (8·dc..+7, dc = lane & 15) of HH query rows in
**     registers (q, and the HH×8 accumulators), and half-warp par = lane >> 4
**     takes every other key: a key's K row is one coalesced 16-byte load a
**     lane over 16 lanes;
**   - Q·Kᵀ: 8·HH FMA a key, then a transposing butterfly over the 16 lanes
**     (log2 HH rounds that halve the values a lane holds, then plain sums):
**     HH shuffles a key for HH scores; lane dc ends with the score of row
**     dc >> (4 - log2 HH);
**   - the online softmax on those lanes, per chunk of V6_NS keys a half;
**   - P·V: HH shuffles give a lane its key's p of every row, V's row is
**     one 16-byte load a lane, 8·HH FMA.
** Per key and KV group at HH 8 (16 rows), sm_52 SASS of the hot loop: 234
** warp instructions (481 FFMA, 64 F2F, 74 SHFL a step of 8 keys), ~58
** SM-cycles of issue against the tile kernel's ~100 of shared memory; HH 4
** 295 (16 warps a block: more latency hidden, more conversions). The
** default at T 1, f16, D 128 (lib/ops/attention.c attn_bound; H200
** numbers: docs/attention.md, "Decode v6"). A block: 16/HH row groups × V6_ST
** key streams (a warp each; stream st takes keys 8·st.. of each 8·V6_ST-key
** step); at the end of a split the streams' (m, l, O) fold through shared
** memory, and the split's partial goes out in attn_combine's layout. */
constexpr int V6_ST = 4;                 /* key streams a block */
constexpr int V6_NS = 4;                 /* keys a half-warp a chunk */
constexpr int V6_CHUNK = 2 * V6_NS * V6_ST; /* a block's keys a step; the split rounding */
template <int HH> constexpr int v6_lg() { return HH == 8 ? 3 : HH == 4 ? 2 : HH == 2 ? 1 : 0; }

/* Σ over the 16 lanes of a half-warp of s[0..HH), transposed: the lane
** with dc = lane & 15 ends holding row dc >> (4 - log2 HH)'s sum. */
template <int HH> __device__ __forceinline__ float v6_reduce(float *s, int lane) {
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int w = 8 >> r, nr = HH >> r;
        if (nr > 1) {
            const bool up = (lane & w) != 0;
#pragma unroll
            for (int i = 0; i < nr / 2; i++) {
                const float send = up ? s[i] : s[i + nr / 2];
                const float keep = up ? s[i + nr / 2] : s[i];
                s[i] = keep + __shfl_xor_sync(0xffffffffu, send, w);
            }
        } else {
            s[0] += __shfl_xor_sync(0xffffffffu, s[0], w);
        }
    }
    return s[0];
}

/* ROPE (T 1, m40k_rope_attention): q turned as it loads (p.q is qkv; a
** float at a time, no alignment asked), and warp 0 of the split that holds
** the new position writes the group's turned K row and V row before the
** barrier (rope_append4, v5's); the cache is then read with plain loads,
** and a first-step K row at that position, fetched before the barrier, is
** fetched again after it. */
template <int HH, bool ROPE = false>
__global__ void __launch_bounds__(DR / HH * V6_ST * 32, 1) attn_decode_v6(Params p) {
    constexpr int NRG = DR / HH, LG = v6_lg<HH>(), SH = 4 - LG, NW = NRG * V6_ST;
    static_assert(HH == 8 || HH == 4, "decode v6: 4 or 8 rows a lane");
    __shared__ int row_pos[DR];
    __shared__ float s_o[V6_ST][DR][128 + 4]; /* the streams' O, then folded */
    __shared__ float s_m[V6_ST][DR], s_l[V6_ST][DR];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int rg = warp % NRG, st = warp / NRG, dc = lane & 15, par = lane >> 4;
    /* q: dims 8·dc..+7 of rows rg·HH + j, pre-scaled; ROPE: as read from
    ** qkv first, with warp 0's K and V dims for the append (none depends on
    ** pos: asked for before it, as decode v5 asks) */
    float q[HH][8];
    float4 kx = make_float4(0.0f, 0.0f, 0.0f, 0.0f), vx = kx;
    if constexpr (ROPE) {
        const int64_t bx = div32(blockIdx.x, p.splits), gq = mod32(bx, p.G), bq = div32(bx, p.G);
        const float *row = p.q + bq * p.qs0;
#pragma unroll
        for (int j = 0; j < HH; j++) {
            const int r = rg * HH + j;
            float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f), y = x;
            if (r < p.hpg) { /* T 1: nrows = hpg */
                x = v5_raw(row + (gq * p.hpg + r) * p.D + 8 * dc);
                y = v5_raw(row + (gq * p.hpg + r) * p.D + 8 * dc + 4);
            }
            q[j][0] = x.x, q[j][1] = x.y, q[j][2] = x.z, q[j][3] = x.w;
            q[j][4] = y.x, q[j][5] = y.y, q[j][6] = y.z, q[j][7] = y.w;
        }
        if (warp == 0)
            kx = v5_raw(row + (p.H + gq) * p.D + 4 * lane), vx = v5_raw(row + (p.H + p.G + gq) * p.D + 4 * lane);
    }
    const DecodeBlock db = decode_block<ROPE>(p, row_pos, p.splits);
    const int64_t split = db.split, g = db.g, b = db.b, s = db.s;
    const int nrows = db.nrows;
    /* K first: the keys of this split from the positions (decode_kend: the
    ** rule of row_pos and attn_combine), the first step's K asked for
    ** before q and the barrier */
    const int kend = decode_kend(p.pos, p.slot, b, p.T, p.S, p.L);
    int k_lo = 0, k_hi = kend;
    if (p.splits > 1) { /* attn_combine's count (chunk V6_CHUNK) */
        const int per = (int)split_share(kend, p.splits, V6_CHUNK);
        k_lo = (int)min((int64_t)kend, split * per);
        k_hi = min(kend, k_lo + per);
    }
    if (p.skip && split > 0 && k_lo >= k_hi) return; /* no keys: no partial (the whole block) */
    const __half *kc = reinterpret_cast<const __half *>(p.kc) + (s * p.L * p.G + g) * p.D + 8 * dc;
    const __half *vc = reinterpret_cast<const __half *>(p.vc) + (s * p.L * p.G + g) * p.D + 8 * dc;
    const int klast = max(k_hi - 1, 0);
    /* key k's 8 dims (past the split: its last key again, masked); ROPE:
    ** plain loads (this launch writes a row) */
    const auto ld = [&](const __half *c, int k) {
        const uint4 *a = reinterpret_cast<const uint4 *>(c + (int64_t)min(k, klast) * p.gd);
        if constexpr (ROPE) return *a;
        else return __ldg(a);
    };
    /* a step: keys k0 + 2i + par, i < V6_NS; this stream's steps start at
    ** k_lo + 2·V6_NS·st and go V6_CHUNK keys at a time */
    uint4 kr[V6_NS], vr[V6_NS];
    int k0 = k_lo + 2 * V6_NS * st;
    if (k0 < k_hi)
#pragma unroll
        for (int i = 0; i < V6_NS; i++) kr[i] = ld(kc, k0 + 2 * i + par);
    int64_t p0 = -1;
    if constexpr (ROPE) {
        p0 = p.pos[b];
        const bool rot = p0 >= 0;
        const int d = 8 * dc, rd = 2 * p.rhalf;
        float c0, s0, c1, s1, c2, s2, c3, s3;
        rope_angles(p, p0, rot, d, rd, c0, s0, c1, s1);
        rope_angles(p, p0, rot, d + 4, rd, c2, s2, c3, s3);
#pragma unroll
        for (int j = 0; j < HH; j++) {
            const float4 x = v5_turn(make_float4(q[j][0], q[j][1], q[j][2], q[j][3]), rot, d, rd, c0, s0, c1, s1);
            const float4 y = v5_turn(make_float4(q[j][4], q[j][5], q[j][6], q[j][7]), rot, d + 4, rd, c2, s2, c3, s3);
            q[j][0] = x.x * p.qscale, q[j][1] = x.y * p.qscale, q[j][2] = x.z * p.qscale, q[j][3] = x.w * p.qscale;
            q[j][4] = y.x * p.qscale, q[j][5] = y.y * p.qscale, q[j][6] = y.z * p.qscale, q[j][7] = y.w * p.qscale;
        }
        /* the append: warp 0 of the split that holds position p0 (the last key) */
        if (warp == 0 && s >= 0 && s < p.S && p0 >= k_lo && p0 < k_hi) {
            const int da = 4 * lane;
            rope_angles(p, p0, rot, da, rd, c0, s0, c1, s1);
            rope_append4v(p, kx, vx, g, s, p0, rot, da, rd, c0, s0, c1, s1);
        }
    } else {
#pragma unroll
        for (int j = 0; j < HH; j++) {
            const int r = rg * HH + j;
            if (r < nrows) {
                const int64_t t = div32(r, p.hpg), h = g * p.hpg + mod32(r, p.hpg);
                const float4 *src = reinterpret_cast<const float4 *>(p.q + b * p.qs0 + t * p.qs1 + h * p.D + 8 * dc);
                const float4 a = __ldg(src), c = __ldg(src + 1);
                q[j][0] = a.x * p.qscale, q[j][1] = a.y * p.qscale, q[j][2] = a.z * p.qscale, q[j][3] = a.w * p.qscale;
                q[j][4] = c.x * p.qscale, q[j][5] = c.y * p.qscale, q[j][6] = c.z * p.qscale, q[j][7] = c.w * p.qscale;
            } else {
#pragma unroll
                for (int e = 0; e < 8; e++) q[j][e] = 0.0f;
            }
        }
    }
    __syncthreads(); /* row_pos; ROPE: the new K and V rows in the caches */
    if constexpr (ROPE)
        if (k0 < k_hi)
#pragma unroll
            for (int i = 0; i < V6_NS; i++)
                if (k0 + 2 * i + par == p0) kr[i] = ld(kc, (int)p0);
    const int jr = dc >> SH; /* this lane's row after a reduction */
    const int rr = rg * HH + jr;
    const int khr = min(k_hi, row_pos[rr] + 1); /* its keys end (pad rows: -1 + 1 = 0) */

    float acc[HH][8];
#pragma unroll
    for (int j = 0; j < HH; j++)
#pragma unroll
        for (int e = 0; e < 8; e++) acc[j][e] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (; k0 < k_hi; k0 += V6_CHUNK) {
#pragma unroll
        for (int i = 0; i < V6_NS; i++) vr[i] = ld(vc, k0 + 2 * i + par);
        float sc[V6_NS];
#pragma unroll
        for (int i = 0; i < V6_NS; i++) {
            float kf[8], sj[HH];
            half8_to_float(kr[i], kf);
#pragma unroll
            for (int j = 0; j < HH; j++) {
                float a = q[j][0] * kf[0];
#pragma unroll
                for (int e = 1; e < 8; e++) a = fmaf(q[j][e], kf[e], a);
                sj[j] = a;
            }
            sc[i] = v6_reduce<HH>(sj, lane);
        }
        if (k0 + V6_CHUNK < k_hi)
#pragma unroll
            for (int i = 0; i < V6_NS; i++) kr[i] = ld(kc, k0 + V6_CHUNK + 2 * i + par);
        float mx = -INFINITY;
#pragma unroll
        for (int i = 0; i < V6_NS; i++) {
            if (k0 + 2 * i + par >= khr) sc[i] = -INFINITY;
            mx = fmaxf(mx, sc[i]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
        const float m_new = fmaxf(m, mx);
        const float ms = m_new == -INFINITY ? 0.0f : m_new;
        /* unchanged max: 1 (a row with no keys yet too: its O is 0), so the
        ** rescale below runs only when a row's max moved */
        const float a = m == m_new ? 1.0f : exp2f(m - ms);
        float pr[V6_NS], ps = 0.0f;
#pragma unroll
        for (int i = 0; i < V6_NS; i++) pr[i] = exp2f(sc[i] - ms), ps += pr[i];
        ps += __shfl_xor_sync(0xffffffffu, ps, 16);
        l = l * a + ps;
        m = m_new;
        if (__any_sync(0xffffffffu, a != 1.0f)) {
#pragma unroll
            for (int j = 0; j < HH; j++) {
                const float aj = __shfl_sync(0xffffffffu, a, j << SH);
#pragma unroll
                for (int e = 0; e < 8; e++) acc[j][e] *= aj;
            }
        }
#pragma unroll
        for (int i = 0; i < V6_NS; i++) {
            float vf[8];
            half8_to_float(vr[i], vf);
#pragma unroll
            for (int j = 0; j < HH; j++) {
                const float pj = __shfl_sync(0xffffffffu, pr[i], (par << 4) + (j << SH));
#pragma unroll
                for (int e = 0; e < 8; e++) acc[j][e] = fmaf(pj, vf[e], acc[j][e]);
            }
        }
    }
    /* the two halves' keys, then the streams through shared memory */
#pragma unroll
    for (int j = 0; j < HH; j++)
#pragma unroll
        for (int e = 0; e < 8; e++) acc[j][e] += __shfl_xor_sync(0xffffffffu, acc[j][e], 16);
    if (par == 0) {
#pragma unroll
        for (int j = 0; j < HH; j++) {
            float4 *o = reinterpret_cast<float4 *>(&s_o[st][rg * HH + j][8 * dc]);
            o[0] = make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
            o[1] = make_float4(acc[j][4], acc[j][5], acc[j][6], acc[j][7]);
        }
        if ((dc & ((1 << SH) - 1)) == 0) s_m[st][rr] = m, s_l[st][rr] = l;
    }
    __syncthreads();
    /* fold: thread tid takes (row, dims) pairs tid, tid + NT, ... */
    for (int i = tid; i < nrows * 32; i += NW * 32) {
        const int r = i >> 5, d = 4 * (i & 31);
        float M = -INFINITY;
#pragma unroll
        for (int c = 0; c < V6_ST; c++) M = fmaxf(M, s_m[c][r]);
        const float Ms = M == -INFINITY ? 0.0f : M;
        float L = 0.0f, o0 = 0.0f, o1 = 0.0f, o2 = 0.0f, o3 = 0.0f;
#pragma unroll
        for (int c = 0; c < V6_ST; c++) {
            const float w = exp2f(s_m[c][r] - Ms);
            const float4 v = *reinterpret_cast<const float4 *>(&s_o[c][r][d]);
            L = fmaf(w, s_l[c][r], L);
            o0 = fmaf(w, v.x, o0), o1 = fmaf(w, v.y, o1), o2 = fmaf(w, v.z, o2), o3 = fmaf(w, v.w, o3);
        }
        const int64_t row = (b * p.T + div32(r, p.hpg)) * p.H + g * p.hpg + mod32(r, p.hpg);
        if (p.splits > 1) {
            float *dst = p.ws_o + (row * p.splits + split) * p.D + d;
            dst[0] = o0, dst[1] = o1, dst[2] = o2, dst[3] = o3;
            if (d == 0) {
                p.ws_ml[(row * p.splits + split) * 2] = M;
                p.ws_ml[(row * p.splits + split) * 2 + 1] = L;
            }
        } else {
            const float inv = L > 0.0f ? 1.0f / L : 0.0f;
            float *dst = p.y + row * p.D + d;
            dst[0] = o0 * inv, dst[1] = o1 * inv, dst[2] = o2 * inv, dst[3] = o3 * inv;
        }
    }
}
/* ---- end decode v6 ---- */

/* y[row, :] = Σ_c 2^(m_c - M) out_c / Σ_c 2^(m_c - M) l_c. A block per
** (query row, 32 dims): 16 warps each fold every 16th split into a running
** (max, sum, out) -- the online softmax's rescaling, so no first pass for
** the max and every split's loads are independent (4 in flight a lane) --
** then warp 0 folds the 16. History (ncu, H200): a block per row, one
** thread a dim walking the splits, 16.5 / 31.6 us at 8K / 32K; 8 warps
** after a max pass, 8.0 / 13.3 us. */
constexpr int CNT = 512, CW = CNT / 32;
__device__ __forceinline__ void fold(float &m, float &l, float &acc, float mc, float lc, float oc) {
    const float m_new = fmaxf(m, mc);
    const float ms = m_new == -INFINITY ? 0.0f : m_new;
    const float a = exp2f(m - ms), wv = exp2f(mc - ms);
    acc = acc * a + wv * oc;
    l = l * a + wv * lc;
    m = m_new;
}
/* Prefill's key shares (kernels/attention.h, m40k_attention_prefill_splits:
** 2..4, every share wrote its partial, (-inf, 0) and zeros without keys): a
** thread a (row, dim) folds them with fold() (the online rescale of
** attn_combine). n = rows·D elements of y (the caller bounded y's size). */
__global__ void __launch_bounds__(256) attn_combine_rows(const float *ws_ml, const float *ws_o,
                                                         int64_t splits, int64_t D, int64_t n,
                                                         float *y) {
    const int64_t i = (int64_t)blockIdx.x * 256 + threadIdx.x;
    if (i >= n) return;
    const int64_t row = i / D, d = i - row * D;
    const float *ml = ws_ml + row * splits * 2, *o = ws_o + row * splits * D + d;
    float m = -INFINITY, l = 0.0f, acc = 0.0f;
    for (int64_t c = 0; c < splits; c++) fold(m, l, acc, ml[2 * c], ml[2 * c + 1], o[c * D]);
    y[i] = l > 0.0f ? acc / l : 0.0f;
}
/* Skip (chunk > 0, Params::skip): the splits with keys are the first
** ceil(kend / per) (split_keys<chunk>'s rule, kend by decode_kend): the
** others wrote nothing, and at a short context in a long cache they are
** most of them (ctx 128, L 8192 on the H200: 4 of 264). */
struct CombineSkip {
    const int32_t *pos, *slot;
    int64_t T, H, S, L, chunk; /* chunk 0: every split wrote its partial */
};
__global__ void __launch_bounds__(CNT) attn_combine(const float *ws_ml, const float *ws_o,
                                                    int64_t splits, int64_t D, float *y,
                                                    CombineSkip sk) {
    __shared__ float rm[CW][32], rl[CW][32], ra[CW][32];
    const int64_t row = blockIdx.x;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int64_t d = (int64_t)blockIdx.y * 32 + lane;
    const float *ml = ws_ml + row * splits * 2, *src = ws_o + row * splits * D + d;
    int64_t nact = splits;
    if (sk.chunk > 0) { /* split c has keys iff c·per < kend */
        const int64_t kend = decode_kend(sk.pos, sk.slot, row / (sk.T * sk.H), sk.T, sk.S, sk.L);
        const int64_t per = split_share(kend, splits, sk.chunk);
        nact = per > 0 ? (kend + per - 1) / per : 0;
    }
    float m = -INFINITY, l = 0.0f, acc = 0.0f;
    for (int64_t c = warp; c < nact; c += 4 * CW) {
        float mc[4], lc[4], oc[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t k = c + u * CW;
            const bool in = k < nact;
            mc[u] = in ? ml[2 * k] : -INFINITY;
            lc[u] = in ? ml[2 * k + 1] : 0.0f;
            oc[u] = in && d < D ? src[k * D] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < 4; u++) fold(m, l, acc, mc[u], lc[u], oc[u]);
    }
    rm[warp][lane] = m, rl[warp][lane] = l, ra[warp][lane] = acc;
    __syncthreads();
    if (warp == 0) {
        float M = -INFINITY, Lt = 0.0f, A = 0.0f;
#pragma unroll
        for (int k = 0; k < CW; k++) fold(M, Lt, A, rm[k][lane], rl[k][lane], ra[k][lane]);
        if (d < D) y[row * D + d] = Lt > 0.0f ? A / Lt : 0.0f;
    }
}

/* Prefill (splits 1) whose whole grid is resident at once: no block waits
** for a slot, so the triangle's last query tiles (the most keys) set the
** time while SMs that drew short tiles idle (T 512 on the H200: 256
** BM-64 blocks, all resident). Pairing tile mtiles-1-j with tile j in one
** block gives every block ~the same keys. A bigger grid balances itself
** (longest first, the next block to a free slot), and stays unpaired. */
extern "C" int m40k_attn_prefill_pair = 1;

/* Whether pairing is on and nblocks of `kernel` are resident at once. */
template <typename K> bool pairs_in_one_wave(K kernel, int64_t nblocks) {
    int dev = 0, sms = 0, per = 0;
    if (!m40k_attn_prefill_pair) return false;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, NT, 0) != cudaSuccess) {
        (void)cudaGetLastError(); /* no pairing; nothing left pending */
        return false;
    }
    return nblocks <= (int64_t)sms * per;
}

template <typename K> void pair_tiles(K kernel, Params &p, int64_t &nblocks) {
    if (p.splits != 1 || p.mtiles < 2 || !pairs_in_one_wave(kernel, nblocks)) return;
    p.pair = 1;
    nblocks = nblocks / p.mtiles * ((p.mtiles + 1) / 2);
}

/* PAIR: the prefill-only configurations, which may pair tiles (the decode
** ones stay as they were: the pass loop costs registers they have not) */
template <int DP, int BM, int BN, int SR, int SC, int OR, int MINB, bool PAIR = false, bool WPV = false>
cudaError_t launch(cudaStream_t st, Params p, int64_t nblocks, int f16) {
    if (f16) {
        if (PAIR) pair_tiles(attn_kernel<DP, BM, BN, SR, SC, OR, MINB, __half, false, PAIR>, p, nblocks);
        attn_kernel<DP, BM, BN, SR, SC, OR, MINB, __half, false, PAIR, false, WPV><<<(unsigned)nblocks, NT, 0, st>>>(p);
    } else {
        if (PAIR) pair_tiles(attn_kernel<DP, BM, BN, SR, SC, OR, MINB, float, false, PAIR>, p, nblocks);
        attn_kernel<DP, BM, BN, SR, SC, OR, MINB, float, false, PAIR, false, WPV><<<(unsigned)nblocks, NT, 0, st>>>(p);
    }
    return cudaGetLastError();
}

/* decode v5 (ROPE: with the fused RoPE + append): ways 0 one block per (b,
** g, split) of nrows warps (bg = B·G); ways n > 0 M40K_ATTN_V5_WAYS' row n,
** one block per (b, g, RB rows) of W·RB warps */
template <bool ROPE, int W, int RB>
cudaError_t launch_v5w(cudaStream_t st, const Params &p, int64_t bg, int64_t nrows) {
    attn_decode_v5<__half, ROPE, W, RB><<<(unsigned)(bg * ((nrows + RB - 1) / RB) * p.splits), W * RB * 32, 0, st>>>(p);
    return cudaGetLastError();
}
constexpr int kV5Ways[][2] = M40K_ATTN_V5_WAYS; /* (W, RB) of each v5_ways row */
static_assert(sizeof kV5Ways / sizeof kV5Ways[0] == M40K_ATTN_V5_NWAYS + 1, "M40K_ATTN_V5_WAYS' rows");
template <bool ROPE, int N>
cudaError_t launch_v5n(cudaStream_t st, const Params &p, int64_t bg, int64_t nrows) {
    return launch_v5w<ROPE, kV5Ways[N][0], kV5Ways[N][1]>(st, p, bg, nrows);
}
template <bool ROPE>
cudaError_t launch_v5(cudaStream_t st, const Params &p, int64_t bg, int64_t splits, int64_t nrows, int ways) {
    static_assert(M40K_ATTN_V5_NWAYS == 8, "launch_v5: a case for each row of M40K_ATTN_V5_WAYS");
    switch (ways) {
    case 1: return launch_v5n<ROPE, 1>(st, p, bg, nrows);
    case 2: return launch_v5n<ROPE, 2>(st, p, bg, nrows);
    case 3: return launch_v5n<ROPE, 3>(st, p, bg, nrows);
    case 4: return launch_v5n<ROPE, 4>(st, p, bg, nrows);
    case 5: return launch_v5n<ROPE, 5>(st, p, bg, nrows);
    case 6: return launch_v5n<ROPE, 6>(st, p, bg, nrows);
    case 7: return launch_v5n<ROPE, 7>(st, p, bg, nrows);
    case 8: return launch_v5n<ROPE, 8>(st, p, bg, nrows);
    default:
        attn_decode_v5<__half, ROPE><<<(unsigned)(bg * splits), (unsigned)(nrows * 32), 0, st>>>(p);
        return cudaGetLastError();
    }
}

/* decode v6 (with the fused RoPE + append: ROPE), HH query rows a lane (8 or
** 4), one block per (b, g, split) */
template <bool ROPE> cudaError_t launch_v6(cudaStream_t st, const Params &p, int64_t nblocks, int hh) {
    if (hh == 4) attn_decode_v6<4, ROPE><<<(unsigned)nblocks, DR / 4 * V6_ST * 32, 0, st>>>(p);
    else attn_decode_v6<8, ROPE><<<(unsigned)nblocks, DR / 8 * V6_ST * 32, 0, st>>>(p);
    return cudaGetLastError();
}

template <typename TC> cudaError_t launch_prefill64(cudaStream_t st, Params p, int64_t nblocks) {
    pair_tiles(attn_prefill64<TC>, p, nblocks);
    attn_prefill64<TC><<<(unsigned)nblocks, NT, 0, st>>>(p);
    return cudaGetLastError();
}

} // namespace

extern "C" int m40k_attn_prefill_variant = 2;
extern "C" int m40k_attn_skip_empty = 1;
extern "C" int m40k_attn_fuse_combine = 0; /* session 14: slower on the H200 (bench/NOTES.md) */

extern "C" int m40k_kv_append(void *stream, int64_t B, int64_t T, int64_t GD, const float *kv,
                              int64_t kvs0, int64_t kvs1, const int32_t *pos,
                              const int32_t *slot, int64_t S, int64_t L, int cache_f16,
                              void *cache, unsigned *guard) {
    if (B * T == 0 || GD == 0) return 0;
    int64_t gy = (GD + 255) / 256;
    if (gy > 64) gy = 64;
    dim3 grid((unsigned)(B * T), (unsigned)gy);
    kv_append_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(T, GD, kv, kv, kvs0, kvs1, pos, slot,
                                                              S, L, cache_f16, cache, cache, guard);
    return (int)cudaGetLastError();
}

extern "C" int m40k_kv_append2(void *stream, int64_t B, int64_t T, int64_t GD, const float *k,
                               const float *v, int64_t kvs0, int64_t kvs1, const int32_t *pos,
                               const int32_t *slot, int64_t S, int64_t L, int cache_f16,
                               void *k_cache, void *v_cache, unsigned *guard) {
    if (B * T == 0 || GD == 0) return 0;
    int64_t gy = (GD + 255) / 256;
    if (gy > 64) gy = 64;
    dim3 grid((unsigned)(B * T), (unsigned)gy, 2);
    kv_append_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(T, GD, k, v, kvs0, kvs1, pos, slot,
                                                              S, L, cache_f16, k_cache, v_cache,
                                                              guard);
    return (int)cudaGetLastError();
}

extern "C" int m40k_rope_kv_append(void *stream, int H, int G, int D, int rope_dims, int pairs,
                                   float theta, float pos_scale, int64_t B, int64_t T,
                                   const float *qkv, int64_t qs0, int64_t qs1, const int32_t *pos,
                                   const int32_t *slot, int64_t S, int64_t L, int cache_f16,
                                   void *k_cache, void *v_cache, float *q_out, unsigned *guard) {
    const int64_t rows = B * T;
    if (rows == 0) return 0;
    if (rows > 2147483647 || H < 1 || G < 1 || D < 1 || D > 2 * ATT_ROPE_HALF_MAX || rope_dims < 2 ||
        rope_dims > D || rope_dims % 2 || (int64_t)(H + 2 * G) * D > (1 << 30))
        return (int)cudaErrorInvalidValue;
    const RopeArgs a = rope_args(H + G, D, rope_dims, theta, pos_scale);
    cudaStream_t st = (cudaStream_t)stream;
    const unsigned ca = cache_f16 ? 7u : 15u;
    if (pairs == 0 && D % 4 == 0 && qs0 % 4 == 0 && qs1 % 4 == 0 && ((uintptr_t)qkv & 15) == 0 &&
        ((uintptr_t)q_out & 15) == 0 && ((uintptr_t)k_cache & ca) == 0 && ((uintptr_t)v_cache & ca) == 0) {
        if (rows < 128)
            rope_kv_vec_kernel<512><<<(unsigned)rows, 512, 0, st>>>(a, T, H, G, D, qkv, qs0, qs1, pos, slot, S, L,
                                                                   cache_f16, k_cache, v_cache, q_out, guard);
        else
            rope_kv_vec_kernel<256><<<(unsigned)rows, 256, 0, st>>>(a, T, H, G, D, qkv, qs0, qs1, pos, slot, S, L,
                                                                   cache_f16, k_cache, v_cache, q_out, guard);
        return (int)cudaGetLastError();
    }
    /* few rows (a decode step): 512 threads a row (1024, as kernels/rope.cu
    ** takes, would cap ptxas at 32 registers: a spill) */
    if (rows < 128) {
        if (pairs == 1)
            rope_kv_kernel<1, 512><<<(unsigned)rows, 512, 0, st>>>(a, T, H, G, D, qkv, qs0, qs1, pos, slot, S, L,
                                                                   cache_f16, k_cache, v_cache, q_out, guard);
        else
            rope_kv_kernel<0, 512><<<(unsigned)rows, 512, 0, st>>>(a, T, H, G, D, qkv, qs0, qs1, pos, slot, S, L,
                                                                   cache_f16, k_cache, v_cache, q_out, guard);
    } else if (pairs == 1) {
        rope_kv_kernel<1, 256><<<(unsigned)rows, 256, 0, st>>>(a, T, H, G, D, qkv, qs0, qs1, pos, slot, S, L,
                                                               cache_f16, k_cache, v_cache, q_out, guard);
    } else {
        rope_kv_kernel<0, 256><<<(unsigned)rows, 256, 0, st>>>(a, T, H, G, D, qkv, qs0, qs1, pos, slot, S, L,
                                                               cache_f16, k_cache, v_cache, q_out, guard);
    }
    return (int)cudaGetLastError();
}

namespace {
/* m40k_attention, and with ra the fused RoPE + append (m40k_rope_attention,
** whose caller checked m40k_rope_attention_fuses: the K-first 32-key tile
** runs) */
int attention_impl(void *stream, const m40k_attn_shape *s, const float *q, const void *k_cache,
                   const void *v_cache, const int32_t *pos, const int32_t *slot, float *y,
                   void *ws, size_t ws_bytes, int slots, unsigned *guard, unsigned *sync,
                   const RopeArgs *ra) {
    if (s->B * s->T * s->H == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    Params p = {};
    p.q = q, p.kc = k_cache, p.vc = v_cache, p.pos = pos, p.slot = slot, p.y = y;
    p.T = s->T, p.H = s->H, p.G = s->G, p.D = s->D, p.S = s->S, p.L = s->L;
    p.hpg = s->H / s->G, p.qs0 = s->qs0, p.qs1 = s->qs1;
    p.gd = (int)(s->G * s->D);
    p.qscale = s->scale * kLog2e;
    p.guard = guard;
    if (ra) {
        if (ra->half > ATT_FUSED_HALF_MAX) return (int)cudaErrorInvalidValue;
        for (int i = 0; i < ra->half; i++) p.rth[i] = ra->th[i];
        p.rpos_scale = ra->pos_scale;
        p.rhalf = ra->half;
    }
    const int64_t elem = s->cache_f16 ? 2 : 4;
    p.vec = (s->D % 8 == 0) && ((uintptr_t)k_cache % 16 == 0) && ((uintptr_t)v_cache % 16 == 0) &&
            (s->D * elem) % 16 == 0;
    const int decode = s->T <= M40K_ATTN_DECODE_T;
    int64_t splits = m40k_attention_splits(s, slots);
    if (splits > 1 && (uint64_t)ws_bytes < m40k_attention_workspace(s, slots)) splits = 1;
    p.splits = splits;
    if (splits > 1) {
        p.ws_ml = (float *)ws;
        p.ws_o = p.ws_ml + s->B * s->T * s->H * splits * 2;
    }
    const int64_t nrows = s->T * p.hpg;
    const int64_t DP = s->D <= 64 ? 64 : s->D <= 128 ? 128 : 256;
    /* decode with up to 16 rows per (b, g): the 16-row tile; more rows
    ** (T·HPG > 16): the prefill tiles, split over the keys all the same */
    const int small = decode && nrows <= M40K_ATTN_DECODE_BM;
    /* prefill DP 128: attn_prefill64 (variant 1) or the BM-32 tile (0); 2, auto:
    ** 1 from one wave of BM-64 blocks, or with key shares (below one wave:
    ** m40k_attention_prefill_splits), or where the BM-64 grid is resident at
    ** once without them (no workspace), its query tiles paired (pair_tiles:
    ** even keys a block; H200, T 512: 122 µs against the BM-32 tile's 136,
    ** session 7). Until session 20 the BM-32 tile ran below 1.5 waves: the
    ** few 64-row blocks of the causal triangle's end set the time there; the
    ** shares even them out. */
    const int64_t n64 = s->B * s->G * ((nrows + 63) / 64);
    const int pv = m40k_attn_prefill_variant;
    /* with key shares (splits > 1: a grid too small for the GPU) the BM-64
    ** kernel unless the knob asks for the tile kernel; auto without shares
    ** from one wave of its blocks (slots: m40k_attention_slots' prefill
    ** count; H200 T 1024, session 20: the BM-32 tile took 424 µs) */
    const int pf64 = !decode && DP == 128 && (splits > 1 ? pv != 0 :
                     (pv == 1 || (pv == 2 && (slots <= 0 || n64 >= (int64_t)slots ||
                                              (s->cache_f16 ? pairs_in_one_wave(attn_prefill64<__half>, n64)
                                                            : pairs_in_one_wave(attn_prefill64<float>, n64))))));
    /* m40k_attn_rows8: the K-first 32-key decode tile (and its fused RoPE
    ** form) in blocks of 8 query rows, two a (b, g, split) at ChatGLM2's 16 */
    const bool r8 = m40k_attn_rows8 && small && DP == 128 && s->cache_f16 && p.vec &&
                    m40k_attention_chunk(s, slots) == 32 &&
                    (s->decode_variant == 7 || s->decode_variant == 0) && !m40k_attn_warp_pv;
    const int64_t BM = r8 ? 8 : DP == 256 || small ? 16 : DP == 128 && !pf64 ? 32 : 64;
    p.mtiles = (nrows + BM - 1) / BM;
    const int64_t nblocks = s->B * s->G * p.mtiles * splits;
    /* skip the splits past a short context (one query tile a block: its
    ** key end is its T positions'); the combine needs the tile's BN */
    /* decode v5 (variant 10): f16 with 16-byte rows at D 128, else the tile kernel */
    /* (q's float4 loads; with the fused RoPE, q = qkv is read a float at a time) */
    const bool v5 = small && p.vec && DP == 128 && s->D == 128 && s->cache_f16 && s->decode_variant == 10 &&
                    (ra || ((uintptr_t)q % 16 == 0 && s->qs0 % 4 == 0 && s->qs1 % 4 == 0));
    /* decode v5's ways (s->v5_ways): folded in the block, with s->v5_wsplits
    ** splits of the keys (m40k_attention_splits) whose partials attn_combine folds */
    const int v5w = v5 && s->v5_ways >= 1 && s->v5_ways <= M40K_ATTN_V5_NWAYS ? s->v5_ways : 0;
    /* decode v6 (variants 11 and 12: 8 and 4 rows a lane): the same conditions, no fused RoPE */
    const bool v6 = !ra && small && p.vec && DP == 128 && s->D == 128 && s->cache_f16 &&
                    m40k_attention_v6(s) && (uintptr_t)q % 16 == 0 && s->qs0 % 4 == 0 && s->qs1 % 4 == 0;
    /* decode v6 with the fused RoPE (T 1, q = qkv read a float at a time) */
    const bool v6r = ra && small && p.vec && DP == 128 && s->D == 128 && s->cache_f16 && s->T == 1 &&
                     m40k_attention_v6(s);
    /* the skip (m40k_attn_skip_empty): 1 the tile kernels only, 2 v5 and v6 too */
    const bool skip = !v5w && (m40k_attn_skip_empty == 2 || (m40k_attn_skip_empty == 1 && !v5 && !v6 && !v6r));
    const int64_t chunk = !small || splits == 1 || !skip ? 0
                          : v5 ? V5_CHUNK
                          : v6 || v6r ? V6_CHUNK
                          : p.vec && DP <= 128 && (s->decode_variant == 2 || s->decode_variant == 3) ? 32
                          : p.vec && DP <= 128 && (s->decode_variant == 8 || s->decode_variant == 9) ? 128
                          : DP == 128 && s->decode_variant == 4 && s->cache_f16 ? 64
                          : DP == 256 ? 16
                          : DP == 128 && m40k_attention_chunk(s, slots) == 32 ? 32
                          : DP == 128 && m40k_attention_chunk(s, slots) == 16 ? 16
                                                                              : 64;
    p.skip = chunk > 0;
    /* the combine inside the tile kernel's decode blocks (not decode v3 / v4,
    ** whose own kernels keep attn_combine) when the counters fit */
    const bool v34 = small && p.vec && DP <= 128 &&
                     (s->decode_variant == 2 || s->decode_variant == 3 || s->decode_variant == 8 ||
                      s->decode_variant == 9);
    /* P·V split over the warps (m40k_attn_warp_pv): the 32- and 64-key decode tiles at D 128 */
    const bool wpv = m40k_attn_warp_pv && small && DP == 128 && !v34 && s->decode_variant != 4 &&
                     s->decode_variant != 6 && m40k_attention_chunk(s, slots) != 16;
    if (sync && m40k_attn_fuse_combine && v5 && !v5w && splits > 1 && s->B * s->G <= M40K_SYNC_WORDS)
        p.cnt = sync; /* decode v5 folds in its last block (v5_fold) */
    else if (sync && m40k_attn_fuse_combine && small && !v34 && !v5 && !v6 && !v6r && !wpv && !r8 && splits > 1) {
        const int64_t ng = (splits + FC_G - 1) / FC_G;
        if (s->B * s->G * (1 + ng) <= M40K_SYNC_WORDS) p.cnt = sync, p.fc_ng = ng;
    }
    cudaError_t e;
    /* the K-first tiles: 32 keys (variants 0 and 7), 16 (variant 6) */
    const int64_t kf_bn = m40k_attention_chunk(s, slots);
    const bool k_first = small && DP == 128 && s->cache_f16 && p.vec &&
                         ((kf_bn == 32 && (s->decode_variant == 7 || s->decode_variant == 0)) ||
                          (kf_bn == 16 && s->decode_variant == 6));
    if (ra && !((k_first || v5 || v6r) && s->T == 1 && splits >= 1)) return (int)cudaErrorInvalidValue;
    if (v6r) {
        e = launch_v6<true>(st, p, s->B * s->G * splits, s->decode_variant == 12 ? 4 : 8);
    } else if (ra && v5) { /* decode v5 with the RoPE + append inside */
        e = launch_v5<true>(st, p, s->B * s->G, splits, nrows, v5w);
    } else if (ra && r8) {
        attn_kernel<128, 8, 32, 1, 2, 1, 4, __half, true, false, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        e = cudaGetLastError();
    } else if (ra) {
        if (kf_bn == 16) attn_kernel<128, 16, 16, 2, 1, 2, 4, __half, true, false, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        else if (wpv) attn_kernel<128, 16, 32, 2, 2, 2, 3, __half, true, false, true, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        else attn_kernel<128, 16, 32, 2, 2, 2, 4, __half, true, false, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        e = cudaGetLastError();
    } else if (v6) {
        e = launch_v6<false>(st, p, s->B * s->G * splits, s->decode_variant == 12 ? 4 : 8);
    } else if (v5) { /* decode v5: a warp a row */
        e = launch_v5<false>(st, p, s->B * s->G, splits, nrows, v5w);
    } else if (small && p.vec && DP <= 128 && (s->decode_variant == 2 || s->decode_variant == 3)) {
        /* decode v3 (4 rows a warp, a lane a key), one block per (b, g, split) */
        const unsigned nb = (unsigned)(s->B * s->G * splits);
        if (s->decode_variant == 3) { /* 8 rows a warp: fewer conversions, half the warps */
            if (DP == 128 && s->cache_f16) attn_decode_kernel<128, 8, 1, __half><<<nb, 64, 0, st>>>(p);
            else if (DP == 128) attn_decode_kernel<128, 8, 1, float><<<nb, 64, 0, st>>>(p);
            else if (s->cache_f16) attn_decode_kernel<64, 8, 1, __half><<<nb, 64, 0, st>>>(p);
            else attn_decode_kernel<64, 8, 1, float><<<nb, 64, 0, st>>>(p);
        } else {
            if (DP == 128 && s->cache_f16) attn_decode_kernel<128, 4, 1, __half><<<nb, 128, 0, st>>>(p);
            else if (DP == 128) attn_decode_kernel<128, 4, 1, float><<<nb, 128, 0, st>>>(p);
            else if (s->cache_f16) attn_decode_kernel<64, 4, 1, __half><<<nb, 128, 0, st>>>(p);
            else attn_decode_kernel<64, 4, 1, float><<<nb, 128, 0, st>>>(p);
        }
        e = cudaGetLastError();
    } else if (small && p.vec && DP <= 128 && (s->decode_variant == 8 || s->decode_variant == 9)) {
        /* decode v4: v3 with 4 keys a lane (128-key steps), 4 (8) or 8 (9) rows a warp */
        const unsigned nb = (unsigned)(s->B * s->G * splits);
        if (s->decode_variant == 9) {
            if (DP == 128 && s->cache_f16) attn_decode_kernel<128, 8, 4, __half><<<nb, 64, 0, st>>>(p);
            else if (DP == 128) attn_decode_kernel<128, 8, 4, float><<<nb, 64, 0, st>>>(p);
            else if (s->cache_f16) attn_decode_kernel<64, 8, 4, __half><<<nb, 64, 0, st>>>(p);
            else attn_decode_kernel<64, 8, 4, float><<<nb, 64, 0, st>>>(p);
        } else {
            if (DP == 128 && s->cache_f16) attn_decode_kernel<128, 4, 4, __half><<<nb, 128, 0, st>>>(p);
            else if (DP == 128) attn_decode_kernel<128, 4, 4, float><<<nb, 128, 0, st>>>(p);
            else if (s->cache_f16) attn_decode_kernel<64, 4, 4, __half><<<nb, 128, 0, st>>>(p);
            else attn_decode_kernel<64, 4, 4, float><<<nb, 128, 0, st>>>(p);
        }
        e = cudaGetLastError();
    } else if (small && DP == 128 && s->decode_variant == 4 && s->cache_f16) {
        /* the tile kernel with its tiles' loads in flight a phase early
        ** (32 more registers: 3 blocks an SM by registers, the M40's 2 by
        ** shared memory unchanged) */
        attn_kernel<128, 16, 64, 2, 4, 2, 3, __half, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        e = cudaGetLastError();
    } else if (k_first && r8) {
        attn_kernel<128, 8, 32, 1, 2, 1, 4, __half, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        e = cudaGetLastError();
    } else if (k_first) {
        /* the 32-key (16-key) tile with its loads a phase early and the
        ** first K tile fetched before the prologue (f16, 16-byte rows) */
        if (kf_bn == 16) attn_kernel<128, 16, 16, 2, 1, 2, 4, __half, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        else if (wpv) attn_kernel<128, 16, 32, 2, 2, 2, 3, __half, true, false, false, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        else attn_kernel<128, 16, 32, 2, 2, 2, 4, __half, true><<<(unsigned)nblocks, NT, 0, st>>>(p);
        e = cudaGetLastError();
    } else if (DP == 256) e = launch<256, 16, 16, 1, 2, 4, 3>(st, p, nblocks, s->cache_f16);
    else if (small && DP == 128 && m40k_attention_chunk(s, slots) == 32)
        /* the default's choice at short L or many SMs (kernels/attention.h) */
        e = wpv ? launch<128, 16, 32, 2, 2, 2, 3, false, true>(st, p, nblocks, s->cache_f16)
                : launch<128, 16, 32, 2, 2, 2, 4>(st, p, nblocks, s->cache_f16);
    else if (small && DP == 128 && m40k_attention_chunk(s, slots) == 16)
        e = launch<128, 16, 16, 2, 1, 2, 4>(st, p, nblocks, s->cache_f16);
    else if (small && DP == 128)
        e = wpv ? launch<128, 16, 64, 2, 4, 2, 3, false, true>(st, p, nblocks, s->cache_f16)
                : launch<128, 16, 64, 2, 4, 2, 4>(st, p, nblocks, s->cache_f16);
    else if (small) e = launch<64, 16, 64, 2, 4, 1, 4>(st, p, nblocks, s->cache_f16);
    else if (pf64 && s->cache_f16) e = launch_prefill64<__half>(st, p, nblocks);
    else if (pf64) e = launch_prefill64<float>(st, p, nblocks);
    else if (DP == 128) e = launch<128, 32, 32, 2, 4, 4, 3, true>(st, p, nblocks, s->cache_f16);
    else e = launch<64, 64, 32, 4, 4, 4, 3>(st, p, nblocks, s->cache_f16); /* paired: spills on sm_52 */
    if (e != cudaSuccess || splits == 1 || p.cnt) return (int)e;
    if (!decode) { /* prefill's few key shares, many rows */
        const int64_t n = s->B * s->T * s->H * s->D;
        attn_combine_rows<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(p.ws_ml, p.ws_o, splits, s->D, n, y);
        return (int)cudaGetLastError();
    }
    dim3 cg((unsigned)(s->B * s->T * s->H), (unsigned)((s->D + 31) / 32));
    const CombineSkip sk = {pos, slot, s->T, s->H, s->S, s->L, chunk};
    attn_combine<<<cg, CNT, 0, st>>>(p.ws_ml, p.ws_o, splits, s->D, y, sk);
    return (int)cudaGetLastError();
}
} // namespace

extern "C" int m40k_attention(void *stream, const m40k_attn_shape *s, const float *q,
                              const void *k_cache, const void *v_cache, const int32_t *pos,
                              const int32_t *slot, float *y, void *ws, size_t ws_bytes,
                              int slots, unsigned *guard, unsigned *sync) {
    return attention_impl(stream, s, q, k_cache, v_cache, pos, slot, y, ws, ws_bytes, slots, guard,
                          sync, nullptr);
}

extern "C" int m40k_attn_fuse_rope = 1;
extern "C" int m40k_attn_warp_pv = 0;
extern "C" int m40k_attn_rows8 = 0;

extern "C" int m40k_rope_attention_fuses(const m40k_attn_shape *s, int rope_dims, int pairs,
                                         int slots, const void *k_cache, const void *v_cache) {
    return m40k_attn_fuse_rope && s->T == 1 && s->B >= 1 && s->G >= 1 && s->H % s->G == 0 &&
           s->H / s->G <= M40K_ATTN_DECODE_BM && s->D == 128 && s->cache_f16 && pairs == 0 &&
           rope_dims >= 2 && rope_dims % 2 == 0 && rope_dims <= s->D &&
           ((uintptr_t)k_cache % 16 == 0) && ((uintptr_t)v_cache % 16 == 0) &&
           (((s->decode_variant == 7 || s->decode_variant == 0) && m40k_attention_chunk(s, slots) == 32) ||
            (s->decode_variant == 6 && m40k_attention_chunk(s, slots) == 16) ||
            s->decode_variant == 10 /* decode v5 (session 18) */ ||
            m40k_attention_v6(s) /* decode v6 (session 19) */);
}

extern "C" int m40k_rope_attention(void *stream, const m40k_attn_shape *s, int rope_dims, int pairs,
                                   float theta, float pos_scale, const float *qkv,
                                   const int32_t *pos, const int32_t *slot, void *k_cache,
                                   void *v_cache, float *y, void *ws, size_t ws_bytes, int slots,
                                   unsigned *guard, unsigned *sync) {
    if (!m40k_rope_attention_fuses(s, rope_dims, pairs, slots, k_cache, v_cache))
        return (int)cudaErrorInvalidValue;
    const RopeArgs a = rope_args((int)(s->H + s->G), (int)s->D, rope_dims, theta, pos_scale);
    return attention_impl(stream, s, qkv, k_cache, v_cache, pos, slot, y, ws, ws_bytes, slots,
                          guard, sync, &a);
}
