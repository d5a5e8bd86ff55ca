/* Sampling (m40_sample): one block of 1024 threads per row of V logits,
** V <= 2^24, no sort. The definition is lib/ref/sample.c's; this file
** computes it in FP32 with the masses in fixed point.
**
** Masses: e = expf(z - max z) <= 1 is taken as the integer floor(e · 2^39);
** a row's sum stays below 2^24 · 2^39 = 2^63. Integer sums do not depend on
** the order of the atomics, so a seed gives the same id on every run (float
** atomics would not), and the top-p and draw boundaries are exact integer
** comparisons. An id whose e < 2^-39 (z more than 27 below the max) has mass
** 0: it is never drawn (the reference's probability for it is < 2e-12).
**
** Passes over the row (each a strided loop; the row stays in L2):
**   0. with a penalty: copy the sanitized row to the scratch row, then each
**      history id writes pen(logits[id]) there (idempotent: a repeated id is
**      penalized once, no dedup needed). Bad ids go to the index guard.
**   1. z = x / T (written to the scratch row when sampling), max and argmax
**      (lowest id on ties). Greedy: one more pass for Σ e, done.
**   2. top-k (count), top-p (mass) and the draw (mass) are each a select:
**      find the element of the order (z desc, id asc) at which the running
**      count / mass reaches a target, by a radix select over the 32-bit
**      order key of z in 3 digits (11, 11, 10 bits): a histogram of counts
**      and masses of the candidates per digit (shared atomics, run-length
**      merged per thread: logits crowd into a few bins), a block-wide scan
**      of the 2048 bins finds the bin where the target is reached. The first
**      digit's total is the kept set's mass, so top-p's target (top_p · mass
**      of the top-k set) and the draw's (u · kept mass) need no extra pass.
**      Equal z (ties) end in one bin; the c-th lowest id among them is a
**      second radix select over the ids (3 passes, only when ties split).
**      Min-p is a value cut z >= max + logf(min_p), applied in the draw.
** Top-p sampling: 7 passes over V floats; greedy: 2; plain temperature: 4.
**
** Resources (sm_52, CUDA 11.8, ptxas -v): sample_kernel 64 registers (the
** cap of __launch_bounds__(1024, 1)), 0 bytes stack, no spills, 33,440 B
** static shared (2048 bins × (count 4 + mass 8 + max id 4) + the scans'
** per-warp words); one block of 1024 threads per SM.
** Loads: each thread issues 8 independent loads before using them
** (for_row): a single block must keep ~32 KB in flight to hide L2 latency.
** M40 projection (/work/shared/docs/m40-facts.md): one SM per row (rows
** run side by side on the 24 SMs up to B = 24). Instructions: ~25 per
** element in a select's first digit, ~6 for an element rejected by a later
** digit; 65024 logits × ~100 over the 7 passes / 128 lanes ≈ 51k cycles ≈
** 46 µs at 1.114 GHz. Bytes: the row (254 KB) does not fit the 48 KB L1
** but stays in the 3 MB L2; at an SM's share of L2 (~32 B/clk ≈ 36 GB/s)
** 7 × 254 KB ≈ 50 µs. The two overlap: ~50-70 µs per row for top-p on an
** M40 (greedy: 2 passes, ~15 µs), < 0.5% of a 20 ms decode step. On an
** H200 (1.98 GHz, 132 SMs) the same arithmetic gives ~25-35 µs.
*/
#include "sample.h"
#include "guard.h"
#include "../lib/rng.h"

#include <cuda_runtime.h>
#include <float.h>
#include <limits.h>

namespace {

typedef unsigned long long u64;
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBins = 2048; /* the widest digit: 11 bits */
constexpr int kUnroll = 8;  /* loads in flight per thread (for_row) */
constexpr float kFix = 549755813888.0f; /* 2^39 */

enum Mode { BY_COUNT = 0, BY_TOP_P = 1, BY_DRAW = 2 };

struct Smem {
    unsigned cnt[kBins];
    u64 mass[kBins];
    unsigned maxid[kBins];
    unsigned wc[kWarps]; /* the scan's per-warp totals */
    u64 wm[kWarps];
    float rv[kWarps];    /* argmax */
    int ri[kWarps];
    /* the scan's answer: the bin, what came before it, its contents */
    int bin;
    unsigned above_c, bin_c, bin_maxid;
    u64 above_m, bin_m;
};

/* The order of the ids: the key desc, then the id asc. */
struct Cut {
    unsigned key;
    int id;
};

__device__ __forceinline__ float sanitize(float x) {
    if (x != x) return -INFINITY;
    return fminf(x, FLT_MAX);
}

__device__ __forceinline__ float penalize(float x, float p) { return x > 0.0f ? x / p : x * p; }

/* IEEE division (no fast math): the same bits as the reference's x / T */
__device__ __forceinline__ float zval(float x, float T) {
    float z = fminf(sanitize(x) / T, FLT_MAX);
    return z == 0.0f ? 0.0f : z; /* -0 -> +0 */
}

/* Monotone map of a float to an unsigned key (larger float, larger key). */
__device__ __forceinline__ unsigned ord(float z) {
    unsigned u = __float_as_uint(z);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ u64 fixmass(float z, float M) {
    float e = M == -INFINITY ? 1.0f : expf(z - M);
    return (u64)(e * kFix);
}

__device__ __forceinline__ bool kept(unsigned o, int i, Cut c) {
    return o > c.key || (o == c.key && i <= c.id);
}

/* f(i, p[i]) for this thread's elements, in increasing i: kUnroll loads
** in flight per thread before any is used (one load at a time per warp
** would leave a single SM waiting on L2 latency). */
template <class F>
__device__ __forceinline__ void for_row(const float *p, int V, F f) {
    for (int base = threadIdx.x; base < V; base += kThreads * kUnroll) {
        float v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            int i = base + u * kThreads;
            v[u] = i < V ? p[i] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            int i = base + u * kThreads;
            if (i < V) f(i, v[u]);
        }
    }
}

/* One run of equal bins into the histogram; the mass (zero for far-off
** ids) and the largest id (the last digit of a key select only) when asked. */
__device__ __forceinline__ void flush(Smem &s, int bin, unsigned c, u64 m, unsigned id,
                                      bool need_maxid) {
    atomicAdd(&s.cnt[bin], c);
    if (m) atomicAdd(&s.mass[bin], m);
    if (need_maxid) atomicMax(&s.maxid[bin], id);
}

/* Inclusive block scan of (c, m) in thread order; totals in tc, tm. */
__device__ void block_scan(unsigned &c, u64 &m, unsigned &tc, u64 &tm, Smem &s) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 1; o < 32; o <<= 1) {
        unsigned tc_ = __shfl_up_sync(0xffffffffu, c, o);
        u64 tm_ = __shfl_up_sync(0xffffffffu, m, o);
        if (lane >= o) c += tc_, m += tm_;
    }
    if (lane == 31) s.wc[warp] = c, s.wm[warp] = m;
    __syncthreads();
    if (warp == 0) {
        unsigned wc = s.wc[lane];
        u64 wm = s.wm[lane];
        for (int o = 1; o < 32; o <<= 1) {
            unsigned tc_ = __shfl_up_sync(0xffffffffu, wc, o);
            u64 tm_ = __shfl_up_sync(0xffffffffu, wm, o);
            if (lane >= o) wc += tc_, wm += tm_;
        }
        s.wc[lane] = wc, s.wm[lane] = wm;
    }
    __syncthreads();
    if (warp > 0) c += s.wc[warp - 1], m += s.wm[warp - 1];
    tc = s.wc[kWarps - 1];
    tm = s.wm[kWarps - 1];
    __syncthreads(); /* wc/wm are reused by the next scan */
}

/* One digit of a radix select. Candidates: ids whose key matches `prefix`
** under `hmask` (BY_ID: ids i whose z key is `tau`, matched on the id),
** inside the cut and at or above zmin. Histograms digit (key >> shift) &
** (nb - 1), scans the bins in the order (desc for keys, asc for ids) and
** leaves in s the bin where the running count (or mass) reaches the
** target. target: for the first digit of a mass select, computed here from
** the digit's total (mode, f); returns the total of this digit. */
template <bool BY_ID>
__device__ u64 digit(const float *z, int V, float M, Cut cut, float zmin, unsigned tau,
                     unsigned prefix, unsigned hmask, int shift, int nb, bool need_mass,
                     int mode, float f, u64 &target, unsigned above_c, u64 above_m,
                     bool first, Smem &s) {
    const int tid = threadIdx.x;
    __syncthreads(); /* every thread has read the previous digit's answer */
    for (int k = tid; k < kBins; k += kThreads) s.cnt[k] = 0, s.mass[k] = 0, s.maxid[k] = 0;
    if (tid == 0) { /* only if no bin reaches the target (never, by construction) */
        s.bin = BY_ID ? 0 : nb - 1;
        s.above_c = above_c, s.above_m = above_m;
        s.bin_c = 0, s.bin_m = 0, s.bin_maxid = 0;
    }
    __syncthreads();
    const bool need_maxid = !BY_ID && shift == 0;
    int rb = -1;
    unsigned rc = 0, rid = 0;
    u64 rm = 0;
    for_row(z, V, [&](int i, float zi) {
        unsigned o = ord(zi);
        unsigned key = BY_ID ? (unsigned)i : o;
        if (BY_ID && o != tau) return;
        if ((key & hmask) != prefix || !kept(o, i, cut) || !(zi >= zmin)) return;
        int bin = (int)((key >> shift) & (unsigned)(nb - 1));
        if (bin != rb) {
            if (rb >= 0) flush(s, rb, rc, rm, rid, need_maxid);
            rb = bin, rc = 0, rm = 0;
        }
        rc++;
        if (need_mass) rm += fixmass(zi, M);
        rid = (unsigned)i;
    });
    if (rb >= 0) flush(s, rb, rc, rm, rid, need_maxid);
    __syncthreads();
    /* thread t holds scan positions 2t, 2t+1 */
    int b0 = 2 * tid, b1 = 2 * tid + 1;
    if (!BY_ID) b0 = nb - 1 - b0, b1 = nb - 1 - b1;
    bool v0 = 2 * tid < nb, v1 = 2 * tid + 1 < nb;
    unsigned c0 = v0 ? s.cnt[b0] : 0, c1 = v1 ? s.cnt[b1] : 0;
    u64 m0 = v0 ? s.mass[b0] : 0, m1 = v1 ? s.mass[b1] : 0;
    unsigned ic = c0 + c1, tc;
    u64 im = m0 + m1, tm;
    block_scan(ic, im, tc, tm, s);
    u64 total = need_mass ? tm : tc;
    if (first && mode == BY_TOP_P) target = (u64)ceil((double)f * (double)total);
    if (first && mode == BY_DRAW) target = (u64)((double)f * (double)total) + 1;
    u64 base = need_mass ? above_m : above_c;
    u64 t = target;
    if (t > base + total) t = base + total;
    if (t < base + 1) t = base + 1;
    if (first) target = t;
    u64 inc = base + (need_mass ? im : ic), exc = inc - (need_mass ? m0 + m1 : c0 + c1);
    if (total > 0 && exc < t && inc >= t) { /* exactly one thread */
        u64 first_v = exc + (need_mass ? m0 : c0);
        bool in0 = first_v >= t;
        int bin = in0 ? b0 : b1;
        s.bin = bin;
        s.above_c = above_c + (ic - c0 - c1) + (in0 ? 0 : c0);
        s.above_m = above_m + (im - m0 - m1) + (in0 ? 0 : m0);
        s.bin_c = s.cnt[bin];
        s.bin_m = s.mass[bin];
        s.bin_maxid = s.maxid[bin];
    }
    __syncthreads();
    return total;
}

struct Sel {
    Cut cut;   /* the boundary: the last kept element */
    u64 mass;  /* the mass up to and including it (mass modes) */
    u64 total; /* the mass (or count) of the candidates */
};

/* The element at which the running count (BY_COUNT, target k) or mass
** (BY_TOP_P: ceil(f · total); BY_DRAW: floor(f · total) + 1) of the
** candidates (inside cut, z >= zmin) in the order (z desc, id asc) reaches
** the target. */
__device__ Sel select(const float *z, int V, float M, Cut cut, float zmin, int mode, u64 k,
                      float f, Smem &s) {
    const bool need_mass = mode != BY_COUNT;
    unsigned prefix = 0, above_c = 0;
    u64 above_m = 0, target = k, total = 0;
    for (int d = 0; d < 3; d++) { /* digits of 11, 11, 10 bits */
        int shift = d == 0 ? 21 : d == 1 ? 10 : 0, nb = d == 2 ? 1024 : 2048;
        unsigned hmask = d == 0 ? 0u : ~0u << (shift + (d == 2 ? 10 : 11));
        u64 t = digit<false>(z, V, M, cut, zmin, 0, prefix, hmask, shift, nb, need_mass, mode,
                             f, target, above_c, above_m, d == 0, s);
        if (d == 0) total = t;
        prefix |= (unsigned)s.bin << shift;
        above_c = s.above_c, above_m = s.above_m;
    }
    unsigned n = s.bin_c, maxid = s.bin_maxid;
    u64 each = n ? s.bin_m / n : 0; /* tied keys: the same z, the same mass */
    u64 c;
    if (!need_mass) c = target > above_c ? target - above_c : 1;
    else if (each == 0) c = n;
    else c = target > above_m ? (target - above_m + each - 1) / each : 1;
    if (c > n) c = n;
    if (c < 1) c = 1;
    Sel r;
    r.cut.key = prefix;
    r.mass = above_m + c * each;
    r.total = total;
    __syncthreads(); /* everyone has read s before the id digits clear it */
    if (c == n) {
        r.cut.id = (int)maxid;
        return r;
    }
    /* the c-th lowest id among the tied keys: ids < 2^24 in digits 11, 11, 2 */
    unsigned ip = 0, ac = 0;
    u64 tgt = c;
    for (int d = 0; d < 3; d++) { /* bits 13-23, 2-12, 0-1 */
        int shift = d == 0 ? 13 : d == 1 ? 2 : 0, nb = d == 2 ? 4 : 2048;
        unsigned hmask = d == 0 ? 0u : ~0u << (shift + (d == 2 ? 2 : 11));
        digit<true>(z, V, M, cut, zmin, prefix, ip, hmask, shift, nb, false, BY_COUNT, 0.0f,
                    tgt, ac, 0, false, s);
        ip |= (unsigned)s.bin << shift;
        ac = s.above_c;
    }
    r.cut.id = (int)ip;
    __syncthreads();
    return r;
}

__global__ void __launch_bounds__(kThreads, 1) sample_kernel(m40k_sample_args a) {
    __shared__ Smem s;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, V = a.V;
    const int64_t b = blockIdx.x;
    const float *lrow = a.logits + b * V;
    float *w = a.scratch ? a.scratch + b * V : NULL;
    const float *src = lrow;
    const bool pen = a.history && a.penalty != 1.0f;
    if (pen) {
        for_row(lrow, V, [&](int i, float x) { w[i] = sanitize(x); });
        __syncthreads(); /* the copy is complete before any penalty lands */
    }
    if (a.history) {
        const int32_t *h = a.history + b * a.W;
        for (int64_t j = tid; j < a.W; j += kThreads) {
            int id = h[j];
            if (id == -1) continue;
            if (id < -1 || id >= V) {
                m40k_guard_report(a.guard, M40K_GUARD_SAMPLE_HISTORY, id, V);
                continue;
            }
            if (pen) w[id] = penalize(sanitize(lrow[id]), a.penalty);
        }
    }
    if (pen) {
        __syncthreads();
        src = w;
    }
    const bool greedy = !(a.temperature > 0.0f);
    const float T = greedy ? 1.0f : a.temperature;

    /* pass 1: z, max and argmax (lowest id on ties) */
    float bv = -INFINITY;
    int bi = INT_MAX;
    for_row(src, V, [&](int i, float x) {
        float z = zval(x, T);
        if (!greedy) w[i] = z; /* each thread rewrites only what it read */
        if (z > bv || bi == INT_MAX) bv = z, bi = i;
    });
    for (int o = 16; o > 0; o >>= 1) {
        float v2 = __shfl_xor_sync(0xffffffffu, bv, o);
        int i2 = __shfl_xor_sync(0xffffffffu, bi, o);
        if (v2 > bv || (v2 == bv && i2 < bi)) bv = v2, bi = i2;
    }
    if (lane == 0) s.rv[warp] = bv, s.ri[warp] = bi;
    __syncthreads();
    bv = s.rv[lane], bi = s.ri[lane];
    for (int o = 16; o > 0; o >>= 1) {
        float v2 = __shfl_xor_sync(0xffffffffu, bv, o);
        int i2 = __shfl_xor_sync(0xffffffffu, bi, o);
        if (v2 > bv || (v2 == bv && i2 < bi)) bv = v2, bi = i2;
    }
    const float M = bv;

    if (greedy) { /* p = 1 / Σ e (the argmax's e is 1) */
        u64 sum = 0;
        for_row(src, V, [&](int, float x) { sum += fixmass(zval(x, 1.0f), M); });
        unsigned c = 0, tc;
        u64 tm;
        block_scan(c, sum, tc, tm, s);
        if (tid == 0) {
            a.out[2 * b] = (float)bi;
            a.out[2 * b + 1] = (float)((double)kFix / (double)tm);
        }
        return;
    }
    __syncthreads(); /* the z row is complete */

    Cut cut = {0u, INT_MAX}; /* everything */
    if (a.top_k > 0 && a.top_k < V)
        cut = select(w, V, M, cut, -INFINITY, BY_COUNT, (u64)a.top_k, 0.0f, s).cut;
    if (a.top_p < 1.0f) cut = select(w, V, M, cut, -INFINITY, BY_TOP_P, 0, a.top_p, s).cut;
    float zmin = a.min_p > 0.0f ? M + logf(a.min_p) : -INFINITY;
    uint64_t p = a.pos ? (uint64_t)(uint32_t)a.pos[b] : 0;
    float u = m40__rand_u01(a.seed, p, (uint64_t)b); /* lib/ref/sample.c draws the same u */
    Sel d = select(w, V, M, cut, zmin, BY_DRAW, 0, u, s);
    if (tid == 0) {
        int id = d.cut.id;
        float e = M == -INFINITY ? 1.0f : expf(w[id] - M);
        a.out[2 * b] = (float)id;
        a.out[2 * b + 1] = (float)((double)e * (double)kFix / (double)d.total);
    }
}

} // namespace

extern "C" int m40k_sample(void *stream, const m40k_sample_args *a) {
    if (a->B <= 0) return 0;
    sample_kernel<<<(unsigned)a->B, kThreads, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}
