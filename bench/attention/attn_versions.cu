/* Causal grouped-query attention, step by step: the numbered versions of
** the attention trail (docs/attention.md), llm.c dev/-style. One problem
** (attn_versions.h: one sequence, queries at consecutive positions over a
** KV cache), five kernels, each one idea further than the one before:
**
**   1  naive: one thread per (query, head); scores into global memory, a
**      softmax pass, a weighted-sum pass (materialises T×L scores)
**   2  tiled: K/V tiles through shared memory, a tile of scores in shared
**      memory per block of 16 queries; two passes over K (the row max, then
**      exp-sum and P·V with that max known)
**   3  online softmax (flash-style): one pass over K/V with a running max
**      and sum; the accumulator is rescaled when the max grows
**   4  split over KV (decode): chunks of the KV length across blocks, one
**      query and head per block, (max, sum, out) partials merged by a
**      combine kernel: enough blocks for one sequence at 32K context
**   5  GQA-shared: the 16 rows of a block are (query, head) pairs of one KV
**      group, so every K/V tile loaded serves all heads of the group (K/V
**      read once per group, not once per head); 16-byte cache loads; split
**      over KV as in 4 when the grid is too small
**
** sm_52 rules: FP32 math only; an fp16 cache is converted with
** __half2float on load (no half arithmetic, no dp4a, no tensor cores, no
** cp.async). Head dim D = 128. m40-attn-versions (attn_check.c) checks each
** against a CPU double reference and times them beside m40_attention. */
#include "attn_versions.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

extern "C" const char *const m40b_attn_notes[M40B_ATTN_NVERSIONS] = {
    "naive: thread per (query, head), T x L scores in global memory, 3 kernels",
    "tiled: K/V tiles in shared memory, 16 queries per block, 2 passes over K",
    "online softmax: one pass over K/V, running max and sum, no score matrix",
    "split over KV: chunks across blocks (one query, head each) + combine kernel",
    "GQA-shared: a group's heads share each K/V tile, 16-byte loads, split KV",
};

namespace {

constexpr int kD = M40B_ATTN_D;
constexpr int kThreads = 128; /* 4 warps; in the P·V step thread = output dim d */
constexpr int kRows = 16;     /* query rows per block (v2, v3, v5): 4 per warp */
constexpr int kTile = 32;     /* keys per K/V tile: one per lane in the score step */
constexpr int kKPad = kD + 4; /* K row stride: lane = key reads float4s without bank conflicts */
constexpr int kPPad = kRows + 4;
static_assert(kThreads == kD, "the P·V step maps one thread to one output dim");

__device__ __forceinline__ float ld(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half *p, size_t i) { return __half2float(p[i]); }

/* four consecutive values (v4): one 16-byte load of f32, one 8-byte of f16 */
__device__ __forceinline__ float4 ld4(const float *p, size_t i) {
    return *reinterpret_cast<const float4 *>(p + i);
}
__device__ __forceinline__ float4 ld4(const __half *p, size_t i) {
    const uint2 u = *reinterpret_cast<const uint2 *>(p + i);
    const __half *h = reinterpret_cast<const __half *>(&u);
    return make_float4(__half2float(h[0]), __half2float(h[1]), __half2float(h[2]),
                       __half2float(h[3]));
}

__device__ __forceinline__ float warp_max(float x) {
    for (int o = 16; o; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}
__device__ __forceinline__ float warp_sum(float x) {
    for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* ---- version 1: naive -------------------------------------------------------
** Three kernels, one thread per (query t, head h) each. S [T·H, L] in global
** memory: at T = 2048 that is 512 MB written and read twice; the loads of a
** warp are 32 different rows (uncoalesced). The obvious code, to measure. */

template <class CT>
__global__ void v1_scores(m40b_attn_problem p, float *S) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x; /* t·H + h */
    if (i >= p.T * p.H) return;
    const int t = i / p.H, g = (i % p.H) / (p.H / p.G), last = p.p0 + t;
    const float *q = p.q + (size_t)i * kD;
    const CT *k = static_cast<const CT *>(p.k);
    float *s = S + (size_t)i * p.L;
    for (int j = 0; j <= last; j++) {
        const size_t kj = ((size_t)j * p.G + g) * kD;
        float acc = 0.f;
        for (int d = 0; d < kD; d++) acc += q[d] * ld(k, kj + d);
        s[j] = acc * p.scale;
    }
}

__global__ void v1_softmax(m40b_attn_problem p, float *S) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.T * p.H) return;
    const int last = p.p0 + i / p.H;
    float *s = S + (size_t)i * p.L;
    float m = -INFINITY, sum = 0.f;
    for (int j = 0; j <= last; j++) m = fmaxf(m, s[j]);
    for (int j = 0; j <= last; j++) {
        const float e = expf(s[j] - m);
        s[j] = e;
        sum += e;
    }
    const float inv = 1.f / sum;
    for (int j = 0; j <= last; j++) s[j] *= inv;
}

template <class CT>
__global__ void v1_weighted_sum(m40b_attn_problem p, const float *S) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.T * p.H) return;
    const int g = (i % p.H) / (p.H / p.G), last = p.p0 + i / p.H;
    const float *s = S + (size_t)i * p.L;
    const CT *v = static_cast<const CT *>(p.v);
    for (int d = 0; d < kD; d++) {
        float acc = 0.f;
        for (int j = 0; j <= last; j++) acc += s[j] * ld(v, ((size_t)j * p.G + g) * kD + d);
        p.y[(size_t)i * kD + d] = acc;
    }
}

/* ---- the shared-memory tile of versions 2, 3 and 5 ---------------------------
** 16 query rows, one K/V tile of 32 keys, the tile's probabilities: 44 KB.
** Score step: warp w owns rows w, w+4, w+8, w+12 and lane = key, so one
** float4 of K from shared memory feeds 4 rows (the rows' q are broadcast).
** P·V step: thread = output dim d, 16 row accumulators in registers. */
struct Tile {
    float q[kRows][kD];     /* the block's query rows, times scale */
    float k[kTile][kKPad];  /* K tile, converted to FP32 */
    float v[kTile][kD];     /* V tile */
    float p[kTile][kPPad];  /* probabilities, key-major: 16 rows = 4 float4 */
    float corr[kRows];      /* v3, v5: this tile's rescale of each row's sum */
    float m[kRows], l[kRows];
    int pos[kRows];         /* each row's position: its last visible key */
};

/* K (and V) rows j0 .. j0+31 of group g; rows at or past jend are zeros
** (a masked probability is exactly 0, but 0 · garbage can be NaN). */
template <class CT>
__device__ void load_tile(Tile &sm, const m40b_attn_problem &p, int g, int j0, int jend,
                          bool with_v) {
    const CT *k = static_cast<const CT *>(p.k), *v = static_cast<const CT *>(p.v);
    for (int e = threadIdx.x; e < kTile * kD; e += kThreads) {
        const int jj = e / kD, d = e % kD, j = j0 + jj;
        const size_t off = ((size_t)j * p.G + g) * kD + d;
        sm.k[jj][d] = j < jend ? ld(k, off) : 0.f;
        if (with_v) sm.v[jj][d] = j < jend ? ld(v, off) : 0.f;
    }
}

/* v5: the same tile through 16-byte loads (8 halves or 4 floats each). */
__device__ __forceinline__ void put16(float *dst, uint4 u, const __half *) {
    const __half *h = reinterpret_cast<const __half *>(&u);
    *reinterpret_cast<float4 *>(dst) = make_float4(__half2float(h[0]), __half2float(h[1]),
                                                   __half2float(h[2]), __half2float(h[3]));
    *reinterpret_cast<float4 *>(dst + 4) = make_float4(__half2float(h[4]), __half2float(h[5]),
                                                       __half2float(h[6]), __half2float(h[7]));
}
__device__ __forceinline__ void put16(float *dst, uint4 u, const float *) {
    *reinterpret_cast<uint4 *>(dst) = u;
}

template <class CT>
__device__ void load_tile16(Tile &sm, const m40b_attn_problem &p, int g, int j0, int jend) {
    constexpr int per = 16 / sizeof(CT), vecs = kD / per; /* elements per load, loads per row */
    const CT *k = static_cast<const CT *>(p.k), *v = static_cast<const CT *>(p.v);
    for (int e = threadIdx.x; e < kTile * vecs; e += kThreads) {
        const int jj = e / vecs, c = (e % vecs) * per, j = j0 + jj;
        uint4 a = make_uint4(0, 0, 0, 0), b = a;
        if (j < jend) {
            const size_t off = ((size_t)j * p.G + g) * kD + c;
            a = *reinterpret_cast<const uint4 *>(k + off);
            b = *reinterpret_cast<const uint4 *>(v + off);
        }
        put16(&sm.k[jj][c], a, k);
        put16(&sm.v[jj][c], b, v);
    }
}

/* s[r] = q[w + 4r] · k[lane] for the warp's 4 rows */
__device__ __forceinline__ void score_tile(const Tile &sm, int warp, int lane, float s[4]) {
#pragma unroll
    for (int r = 0; r < 4; r++) s[r] = 0.f;
#pragma unroll 8
    for (int d = 0; d < kD; d += 4) {
        const float4 k4 = *reinterpret_cast<const float4 *>(&sm.k[lane][d]);
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const float4 q4 = *reinterpret_cast<const float4 *>(&sm.q[warp + 4 * r][d]);
            s[r] = fmaf(q4.x, k4.x, fmaf(q4.y, k4.y, fmaf(q4.z, k4.z, fmaf(q4.w, k4.w, s[r]))));
        }
    }
}

/* acc[r] = acc[r] · corr[r] (rescale: v3, v5) + Σ_key p[key][r] · v[key][d] */
__device__ __forceinline__ void pv_tile(const Tile &sm, bool rescale, float acc[kRows]) {
    const int d = threadIdx.x;
    if (rescale) {
#pragma unroll
        for (int r = 0; r < kRows; r++) acc[r] *= sm.corr[r];
    }
#pragma unroll 4
    for (int jj = 0; jj < kTile; jj++) {
        const float vv = sm.v[jj][d];
        const float4 *pr = reinterpret_cast<const float4 *>(sm.p[jj]);
#pragma unroll
        for (int r4 = 0; r4 < kRows / 4; r4++) {
            const float4 p4 = pr[r4];
            acc[4 * r4 + 0] = fmaf(p4.x, vv, acc[4 * r4 + 0]);
            acc[4 * r4 + 1] = fmaf(p4.y, vv, acc[4 * r4 + 1]);
            acc[4 * r4 + 2] = fmaf(p4.z, vv, acc[4 * r4 + 2]);
            acc[4 * r4 + 3] = fmaf(p4.w, vv, acc[4 * r4 + 3]);
        }
    }
}

/* The online softmax step for the warp's rows: mask, fold the tile's scores
** into the running max m and the lane's partial sum l, publish p and the
** rescale. A row with nothing visible yet (m = -inf: v5's later chunks) keeps
** p = 0 and corr = 1 instead of exp(-inf - -inf) = NaN. */
__device__ __forceinline__ void online_step(Tile &sm, int warp, int lane, int j0, const float s[4],
                                            float m[4], float l[4]) {
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int row = warp + 4 * r;
        const float x = j0 + lane <= sm.pos[row] ? s[r] : -INFINITY;
        const float mn = fmaxf(m[r], warp_max(x));
        const float c = mn == -INFINITY ? 1.f : __expf(m[r] - mn);
        const float e = mn == -INFINITY ? 0.f : __expf(x - mn);
        l[r] = l[r] * c + e;
        m[r] = mn;
        sm.p[lane][row] = e;
        if (lane == 0) sm.corr[row] = c;
    }
}

/* rows are 16 consecutive queries of head h (v2, v3); past T: the last query */
__device__ void load_rows_head(Tile &sm, const m40b_attn_problem &p, int t0, int h) {
    for (int e = threadIdx.x; e < kRows * kD; e += kThreads) {
        const int r = e / kD, d = e % kD, t = min(t0 + r, p.T - 1);
        sm.q[r][d] = p.q[((size_t)t * p.H + h) * kD + d] * p.scale;
    }
    if (threadIdx.x < kRows) sm.pos[threadIdx.x] = p.p0 + min(t0 + (int)threadIdx.x, p.T - 1);
}

/* each row's sum and max into shared memory (after the last tile) */
__device__ __forceinline__ void publish_rows(Tile &sm, int warp, int lane, const float m[4],
                                             const float l[4]) {
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const float sum = warp_sum(l[r]);
        if (lane == 0) sm.l[warp + 4 * r] = sum, sm.m[warp + 4 * r] = m[r];
    }
}

/* ---- version 2: tiled, two passes over K ------------------------------------ */

template <class CT>
__global__ void __launch_bounds__(kThreads) v2_tiled(m40b_attn_problem p) {
    __shared__ __align__(16) Tile sm;
    const int h = blockIdx.y, g = h / (p.H / p.G), t0 = blockIdx.x * kRows;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    load_rows_head(sm, p, t0, h);
    __syncthreads();
    const int jend = sm.pos[kRows - 1] + 1; /* the last row sees the most keys */
    float m[4], l[4] = {0.f, 0.f, 0.f, 0.f}, s[4], acc[kRows];
    for (int r = 0; r < 4; r++) m[r] = -INFINITY;
    for (int r = 0; r < kRows; r++) acc[r] = 0.f;
    for (int j0 = 0; j0 < jend; j0 += kTile) { /* pass 1: each row's max */
        load_tile<CT>(sm, p, g, j0, jend, false);
        __syncthreads();
        score_tile(sm, warp, lane, s);
        for (int r = 0; r < 4; r++)
            m[r] = fmaxf(m[r], warp_max(j0 + lane <= sm.pos[warp + 4 * r] ? s[r] : -INFINITY));
        __syncthreads();
    }
    for (int j0 = 0; j0 < jend; j0 += kTile) { /* pass 2: the max is known: no rescaling */
        load_tile<CT>(sm, p, g, j0, jend, true);
        __syncthreads();
        score_tile(sm, warp, lane, s);
        for (int r = 0; r < 4; r++) {
            const int row = warp + 4 * r;
            const float e = j0 + lane <= sm.pos[row] ? __expf(s[r] - m[r]) : 0.f;
            l[r] += e;
            sm.p[lane][row] = e;
        }
        __syncthreads();
        pv_tile(sm, false, acc);
        __syncthreads();
    }
    publish_rows(sm, warp, lane, m, l);
    __syncthreads();
    for (int r = 0; r < kRows && t0 + r < p.T; r++)
        p.y[((size_t)(t0 + r) * p.H + h) * kD + threadIdx.x] = acc[r] / sm.l[r];
}

/* ---- version 3: online softmax, one pass ------------------------------------ */

template <class CT>
__global__ void __launch_bounds__(kThreads) v3_online(m40b_attn_problem p) {
    __shared__ __align__(16) Tile sm;
    const int h = blockIdx.y, g = h / (p.H / p.G), t0 = blockIdx.x * kRows;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    load_rows_head(sm, p, t0, h);
    __syncthreads();
    const int jend = sm.pos[kRows - 1] + 1;
    float m[4], l[4] = {0.f, 0.f, 0.f, 0.f}, s[4], acc[kRows];
    for (int r = 0; r < 4; r++) m[r] = -INFINITY;
    for (int r = 0; r < kRows; r++) acc[r] = 0.f;
    for (int j0 = 0; j0 < jend; j0 += kTile) {
        load_tile<CT>(sm, p, g, j0, jend, true);
        __syncthreads();
        score_tile(sm, warp, lane, s);
        online_step(sm, warp, lane, j0, s, m, l);
        __syncthreads();
        pv_tile(sm, true, acc);
        __syncthreads();
    }
    publish_rows(sm, warp, lane, m, l);
    __syncthreads();
    for (int r = 0; r < kRows && t0 + r < p.T; r++)
        p.y[((size_t)(t0 + r) * p.H + h) * kD + threadIdx.x] = acc[r] / sm.l[r];
}

/* ---- versions 4 and 5 write partials; the combine kernel merges them ---------
** part: o [T·H, nchunk, D] then (max, sum) [T·H, nchunk, 2]. */

__device__ __forceinline__ void put_partial(const m40b_attn_problem &p, float *part, int nchunk,
                                            int i, int c, int d, float o, float m, float l) {
    part[((size_t)i * nchunk + c) * kD + d] = o;
    if (d == 0) {
        float *ml = part + (size_t)p.T * p.H * nchunk * kD + ((size_t)i * nchunk + c) * 2;
        ml[0] = m;
        ml[1] = l;
    }
}

__global__ void __launch_bounds__(kThreads) combine(m40b_attn_problem p, int nchunk,
                                                   const float *part) {
    const int i = blockIdx.x, d = threadIdx.x; /* i = t·H + h */
    const float *o = part + (size_t)i * nchunk * kD;
    const float *ml = part + (size_t)p.T * p.H * nchunk * kD + (size_t)i * nchunk * 2;
    float M = -INFINITY, acc = 0.f, sum = 0.f;
    for (int c = 0; c < nchunk; c++) M = fmaxf(M, ml[2 * c]);
    for (int c = 0; c < nchunk; c++) {
        if (ml[2 * c] == -INFINITY) continue; /* a chunk past this query's position */
        const float f = __expf(ml[2 * c] - M);
        acc = fmaf(f, o[(size_t)c * kD + d], acc);
        sum = fmaf(f, ml[2 * c + 1], sum);
    }
    p.y[(size_t)i * kD + d] = acc / sum;
}

/* ---- version 4: split over KV ------------------------------------------------
** Block (chunk c, head h, query t). Lane owns 4 of the 128 dims; warp w takes
** keys c·chunk + w, +4, ...: a score is 4 FMAs and a 5-step warp sum, and
** every lane keeps the running (max, sum, acc[4]). The 4 warps merge in
** shared memory, the chunks in the combine kernel. */
template <class CT>
__global__ void __launch_bounds__(kThreads) v4_split(m40b_attn_problem p, int chunk, int nchunk,
                                                     float *part) {
    __shared__ __align__(16) float wacc[4][kD];
    __shared__ float wm[4], wl[4];
    const int c = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
    const int g = h / (p.H / p.G), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int jb = c * chunk, je = min(jb + chunk, p.p0 + t + 1);
    const CT *k = static_cast<const CT *>(p.k), *v = static_cast<const CT *>(p.v);
    float4 q = *reinterpret_cast<const float4 *>(p.q + ((size_t)t * p.H + h) * kD + 4 * lane);
    q.x *= p.scale, q.y *= p.scale, q.z *= p.scale, q.w *= p.scale;
    float m = -INFINITY, l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 2
    for (int j = jb + warp; j < je; j += 4) {
        const size_t off = ((size_t)j * p.G + g) * kD + 4 * lane;
        const float4 k4 = ld4(k, off), v4 = ld4(v, off);
        const float s = warp_sum(q.x * k4.x + q.y * k4.y + q.z * k4.z + q.w * k4.w);
        const float mn = fmaxf(m, s), cr = __expf(m - mn), e = __expf(s - mn);
        l = l * cr + e;
        acc.x = acc.x * cr + e * v4.x, acc.y = acc.y * cr + e * v4.y;
        acc.z = acc.z * cr + e * v4.z, acc.w = acc.w * cr + e * v4.w;
        m = mn;
    }
    *reinterpret_cast<float4 *>(&wacc[warp][4 * lane]) = acc;
    if (lane == 0) wm[warp] = m, wl[warp] = l;
    __syncthreads();
    const int d = threadIdx.x;
    const float M = fmaxf(fmaxf(wm[0], wm[1]), fmaxf(wm[2], wm[3]));
    float o = 0.f, sum = 0.f;
    for (int w = 0; w < 4; w++) {
        if (wm[w] == -INFINITY) continue; /* a warp that had no key */
        const float f = __expf(wm[w] - M);
        o = fmaf(f, wacc[w][d], o);
        sum = fmaf(f, wl[w], sum);
    }
    put_partial(p, part, nchunk, t * p.H + h, c, d, o, M, sum);
}

/* ---- version 5: GQA-shared ---------------------------------------------------
** Block (chunk c, group g, row block rb). The rows are the (query, head)
** pairs of group g, flattened t·(H/G) + head-in-group: at H/G = 16 a block
** is one query's 16 heads, and each K/V tile it loads (16-byte loads, once)
** serves them all. One chunk: y directly; more: partials for combine. */
template <class CT>
__global__ void __launch_bounds__(kThreads) v5_gqa(m40b_attn_problem p, int chunk, int nchunk,
                                                   float *part) {
    __shared__ __align__(16) Tile sm;
    const int c = blockIdx.x, g = blockIdx.y, r0 = blockIdx.z * kRows;
    const int hpg = p.H / p.G, npairs = p.T * hpg;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int e = threadIdx.x; e < kRows * kD; e += kThreads) {
        const int r = e / kD, d = e % kD, idx = min(r0 + r, npairs - 1);
        const int t = idx / hpg, h = g * hpg + idx % hpg;
        sm.q[r][d] = p.q[((size_t)t * p.H + h) * kD + d] * p.scale;
    }
    if (threadIdx.x < kRows) sm.pos[threadIdx.x] = p.p0 + min(r0 + (int)threadIdx.x, npairs - 1) / hpg;
    __syncthreads();
    const int jb = c * chunk, jend = min(jb + chunk, sm.pos[kRows - 1] + 1);
    float m[4], l[4] = {0.f, 0.f, 0.f, 0.f}, s[4], acc[kRows];
    for (int r = 0; r < 4; r++) m[r] = -INFINITY;
    for (int r = 0; r < kRows; r++) acc[r] = 0.f;
    for (int j0 = jb; j0 < jend; j0 += kTile) {
        load_tile16<CT>(sm, p, g, j0, jend);
        __syncthreads();
        score_tile(sm, warp, lane, s);
        online_step(sm, warp, lane, j0, s, m, l);
        __syncthreads();
        pv_tile(sm, true, acc);
        __syncthreads();
    }
    publish_rows(sm, warp, lane, m, l);
    __syncthreads();
    const int d = threadIdx.x;
    for (int r = 0; r < kRows && r0 + r < npairs; r++) {
        const int t = (r0 + r) / hpg, i = t * p.H + g * hpg + (r0 + r) % hpg;
        if (nchunk == 1) p.y[(size_t)i * kD + d] = acc[r] / sm.l[r];
        else put_partial(p, part, nchunk, i, c, d, acc[r], sm.m[r], sm.l[r]);
    }
}

/* ---- launching ---------------------------------------------------------------- */

/* Chunks of the KV span (multiples of a tile, >= 64 keys) so that the grid
** has about 4 blocks per SM: `blocks` is the grid without the split. */
int pick_chunks(const m40b_attn_problem *p, long blocks, int sm_count, int *chunk) {
    const long span = (long)p->p0 + p->T, want = (4L * sm_count + blocks - 1) / blocks;
    long ch = want <= 1 ? span : (span + want - 1) / want;
    if (want > 1 && ch < 64) ch = 64;
    ch = (ch + kTile - 1) / kTile * kTile;
    *chunk = (int)ch;
    return (int)((span + ch - 1) / ch);
}

int v5_row_blocks(const m40b_attn_problem *p) { return (p->T * (p->H / p->G) + kRows - 1) / kRows; }

template <class CT>
cudaError_t launch(cudaStream_t st, const m40b_attn_problem &p, int version, int sms, void *scratch) {
    const unsigned th = (unsigned)((p.T * p.H + kThreads - 1) / kThreads);
    float *ws = static_cast<float *>(scratch);
    int chunk = 0, nchunk = 0;
    switch (version) {
    case 1:
        v1_scores<CT><<<th, kThreads, 0, st>>>(p, ws);
        v1_softmax<<<th, kThreads, 0, st>>>(p, ws);
        v1_weighted_sum<CT><<<th, kThreads, 0, st>>>(p, ws);
        break;
    case 2:
        v2_tiled<CT><<<dim3((p.T + kRows - 1) / kRows, p.H), kThreads, 0, st>>>(p);
        break;
    case 3:
        v3_online<CT><<<dim3((p.T + kRows - 1) / kRows, p.H), kThreads, 0, st>>>(p);
        break;
    case 4:
        nchunk = pick_chunks(&p, (long)p.H * p.T, sms, &chunk);
        v4_split<CT><<<dim3(nchunk, p.H, p.T), kThreads, 0, st>>>(p, chunk, nchunk, ws);
        combine<<<p.T * p.H, kThreads, 0, st>>>(p, nchunk, ws);
        break;
    case 5: {
        const int rb = v5_row_blocks(&p);
        nchunk = pick_chunks(&p, (long)p.G * rb, sms, &chunk);
        v5_gqa<CT><<<dim3(nchunk, p.G, rb), kThreads, 0, st>>>(p, chunk, nchunk, ws);
        if (nchunk > 1) combine<<<p.T * p.H, kThreads, 0, st>>>(p, nchunk, ws);
        break;
    }
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

bool valid(const m40b_attn_problem *p) {
    return p && p->T >= 1 && p->H >= 1 && p->G >= 1 && p->H % p->G == 0 && p->p0 >= 0 &&
           (long)p->p0 + p->T <= p->L && p->T <= 65535 && p->H <= 65535 &&
           (long)p->T * p->H <= 0x7fffffffL;
}

} // namespace

extern "C" size_t m40b_attn_scratch_bytes(const m40b_attn_problem *p, int version, int sm_count) {
    if (!valid(p)) return 0;
    int chunk, nchunk;
    switch (version) {
    case 1: return (size_t)p->T * p->H * p->L * sizeof(float);
    case 4: nchunk = pick_chunks(p, (long)p->H * p->T, sm_count, &chunk); break;
    case 5: nchunk = pick_chunks(p, (long)p->G * v5_row_blocks(p), sm_count, &chunk); break;
    default: return 0;
    }
    return nchunk > 1 || version == 4 ? (size_t)p->T * p->H * nchunk * (kD + 2) * sizeof(float) : 0;
}

extern "C" int m40b_attn_run(void *stream, const m40b_attn_problem *p, int version, int sm_count,
                             void *scratch) {
    if (!valid(p) || sm_count < 1) return (int)cudaErrorInvalidValue;
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    return (int)(p->f16 ? launch<__half>(st, *p, version, sm_count, scratch)
                        : launch<float>(st, *p, version, sm_count, scratch));
}
