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
**   1. z = x / T (written to the scratch row when sampling), max M and
**      argmax (lowest id on ties). Greedy: one more pass for Σ e, done.
**   2. top-k (count), top-p (mass) and the draw (mass) are each a select:
**      find the element of the order (z desc, id asc) at which the running
**      count / mass reaches a target. Each digit is a histogram of counts
**      and masses of the candidates (shared atomics) and a block-wide scan
**      of its bins that finds the bin where the target is reached:
**      a. the spread digit: 2047 bins linear in M - z over [0, 27.5) and a
**         tail bin beyond (masses 0 there). Monotone in z, equal z in one
**         bin, so the select stays exact; a row's logits spread over
**         hundreds of bins, so the atomics rarely collide (the first digit
**         used to be the key's top 11 bits: sign, exponent and 2 mantissa
**         bits, a handful of bins for a whole row, and the 64-bit mass
**         atomic is a compare-and-swap loop: 130 of the 190 µs of a top-p
**         call on an H200). The tail is counted in a register. Its total
**         is the kept set's mass, so top-p's target (top_p · mass of the
**         top-k set) and the draw's (u · kept mass) need no extra pass;
**      b. the 32-bit order key of z inside that bin, over only the key range
**         the bin can hold (bounds from M and the bin, with slack for the
**         rounding): digits of up to 11 bits, 2 for a bin near the top of a
**         typical row (~15 bits), 3 for the tail (every key); an id outside
**         the bin is rejected with a compare;
**      c. equal z (ties) end in one key; the c-th lowest id among them is a
**         radix select over the ids (3 digits, only when ties split).
**      Masses go in as two 32-bit atomics per bin with the carry taken from
**      the low word's returned value (flush): native shared atomics, exact,
**      order-free. Min-p is a value cut z >= max + logf(min_p), applied in
**      the draw.
**   3. compact: after a select's spread digit, the ids left to look at are
**      gathered into shared memory when they fit (kCap = 1024): the bins up
**      to the found one (every later select's candidates are among them:
**      its cut keeps only ids at or before this boundary), else the found
**      bin alone (this select's key and id digits). The counts of the spread
**      digit say whether they fit, so this is one more pass over the row,
**      and every later digit reads at most 1024 ids (one per thread) from
**      shared memory instead of 65024 from L2.
** Top-p sampling over a real row: 3 passes over V floats (z and max, the
** top-p spread digit, compact; the draw runs on the gathered ids); top-k,
** min-p or plain temperature: 3; greedy: 2. Without a fit (e.g. top-k of
** thousands, or a spread bin of > 1024 equal-ish z), the key digits read
** the row: 2-3 more passes per select. Only the top-p select's spread
** digit does heavy work per id (expf, 3 atomics); the other passes reject
** almost every id with a compare. Degenerate rows with thousands of equal z
** within 27.5 of the max (one spread bin) stay exact but serialize on one
** bin's atomics in the spread digit.
**
** Four forms (kernels/sample.h: m40k_sample_variant): 1 runs greedy in
** one pass and, for sampling, sorts the few ids near the max
** (sample_fast.cuh) with the radix selects above as its fallback; 3 is 1
** with its passes over the row (z, max, penalty, mass, window counts) done
** by a grid of chunk blocks first (sample_grid.cuh), so that one SM is left
** only the gather, the sort and the lookups; 4 (auto's choice but for
** several rows with min-p) is 3 sorting the narrowest window that holds
** the answer, by the windows' masses the grid also sums; 0 runs the radix
** selects alone (A/B runs, tests; auto's choice for several rows with
** min-p). Same ids for a seed.
** Resources (sm_52, CUDA 11.8, ptxas -v): both 64 registers (the cap of
** __launch_bounds__(1024, 1)), 0 bytes stack, no spills, 41,664 B static
** shared (2048 bins × (count 4 + mass 4 + 4 + max id 4), 1024 gathered ids
** × 8, the scans' per-warp words; variant 1 sorts its 4096 keys in the
** bins); one block of 1024 threads per SM. sm_90 (CUDA 13.0), before the
** variants: 64 registers, no spills, 41,648 B.
** Loads: each thread issues 4 independent float4 loads (16 floats) before
** using them when the row is 16-byte aligned (V % 4 == 0), else 8 scalar
** loads (for_row): a single block must keep ~64 KB in flight to hide L2
** latency; 65024 logits are 4 such rounds per pass.
** Instructions (sm_52 SASS of the unrolled loops): the top-p spread digit
** ~55 per id (spread bin, kept, expf, F2I.U64, 3 ATOMS, carry), pass 1
** ~25 (IEEE x / T, argmax, the store), compact and the key digits ~12-15
** per rejected id (ord, a compare or the bin, a branch); a digit over the
** gathered ids costs its clear, scan and barriers: ~1-2k cycles.
** Top-p over 65024 logits: 65024 × (25 + 55 + 15) / 128 lanes per clock
** ≈ 48k issue cycles, + 3 × 4 rounds of L2 latency, + 7 digits' scans and
** barriers (~1.5k cycles each) ≈ 60-65k cycles.
** M40 projection (/work/shared/docs/m40-facts.md; 1.114 GHz, ~32 B/clk of
** L2 per SM): ~55 µs of cycles; bytes 3 × 254 KB at 36 GB/s ≈ 21 µs,
** overlapping: ~55-65 µs per row for top-p (greedy: 2 passes, ~15 µs),
** < 0.5% of a 20 ms decode step.
** H200 projection (1.98 GHz): ~30-35 µs per call for top-p with the launch
** (measured before this design: 190; target <= 50); top-k 40 and min-p
** ~20-25 (no expf over the whole row); greedy unchanged in passes (~25,
** float4 loads now). Measured: pending (H200).
*/
#include "sample.h"
#include "guard.h"
#include "../lib/rng.h"

#include <cuda_runtime.h>
#include <float.h>
#include <limits.h>
#include <stddef.h>

namespace {

typedef unsigned long long u64;
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBins = 2048; /* the widest digit: 11 bits */
constexpr int kTail = kBins - 1; /* the spread digit's bin of the far-off ids */
constexpr int kUnroll = 8;  /* scalar loads in flight per thread (for_row) */
constexpr int kUnroll4 = 4; /* float4 loads in flight per thread (for_row) */
constexpr int kCap = kThreads; /* ids gathered into shared memory (compact) */
constexpr float kFix = 549755813888.0f; /* 2^39 */
/* The spread digit: bins linear in M - z, 2047 of them over [0, 27.5); the
** tail bin holds M - z >= 27.5, where e < e^-27.49 = 1.15e-12 < 2^-39 (fixmass
** gives 0 there even with expf's 2-ulp error). */
constexpr float kScale = 2047.0f / 27.5f;

enum Mode { BY_COUNT = 0, BY_TOP_P = 1, BY_DRAW = 2 };
enum Kind { SPREAD = 0, KEY = 1, ID = 2 }; /* what a digit's bins are */

struct Smem {
    unsigned cnt[kBins];
    unsigned mlo[kBins], mhi[kBins]; /* a bin's mass: mhi · 2^32 + mlo */
    unsigned maxid[kBins];
    unsigned wc[kWarps]; /* the scan's per-warp totals */
    u64 wm[kWarps];
    float rv[kWarps];    /* argmax */
    int ri[kWarps];
    /* the scan's answer: the bin, what came before it, its contents */
    int bin;
    unsigned above_c, bin_c, bin_maxid;
    u64 above_m, bin_m;
    u64 total; /* the first digit's total (kept out of registers) */
    /* the gathered candidates (compact): z and id, in no particular order */
    float cz[kCap];
    int cid[kCap];
    int cfill;
    /* the candidate path's kernel: the row's uniform, set before pass 1,
    ** and the answer (id, p), written out at the end: each held in a
    ** register (or its address) through both paths spilled at 64 */
    float fu, fres[2];
    unsigned fpmax; /* fast_penalty: the largest penalized z (ord) */
};

/* The order of the ids: the key desc, then the id asc. */
struct Cut {
    unsigned key;
    int id;
};

/* One digit's candidates and bins. SPREAD: every id, bin spread(z).
** KEY: ids in spread bin sbin whose key - kbase matches prefix under hmask;
** bin (key - kbase) >> shift. ID: ids whose key is tau and whose id matches
** prefix under hmask; bin id >> shift. nb bins (a power of two). */
struct Dig {
    unsigned prefix, hmask;
    int shift, nb;
    unsigned kbase, tau;
    int sbin;
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

/* The spread digit's bin of z <= M: (M - z) · kScale, cut at the tail.
** Monotone in z (each float step rounds monotonically), equal z in one bin.
** M = -inf (then every z is -inf, and every mass 2^39) gives NaN: bin 0. */
__device__ __forceinline__ int spread(float z, float M) {
    float d = (M - z) * kScale;
    if (d < (float)kTail) return (int)d; /* d >= 0 */
    return d == d ? kTail : 0;
}

__device__ __forceinline__ u64 fixmass(float z, float M) {
    float e = M == -INFINITY ? 1.0f : expf(z - M);
    return (u64)(e * kFix);
}

__device__ __forceinline__ bool kept(unsigned o, int i, Cut c) {
    return o > c.key || (o == c.key && i <= c.id);
}

/* f(i, p[i]) for this thread's elements, in increasing i, with many loads in
** flight per thread before any is used (one load at a time per warp would
** leave a single SM waiting on L2 latency): kUnroll4 float4 loads when the
** row is 16-byte aligned (then a scalar tail of V % 4), else kUnroll scalar
** loads. */
template <class F>
__device__ __forceinline__ void for_row(const float *p, int V, F f) {
    if (((size_t)p & 15) == 0) {
        const float4 *p4 = reinterpret_cast<const float4 *>(p);
        const int V4 = V >> 2;
        for (int base = threadIdx.x; base < V4; base += kThreads * kUnroll4) {
            float4 v[kUnroll4];
#pragma unroll
            for (int u = 0; u < kUnroll4; u++) {
                int j = base + u * kThreads;
                v[u] = j < V4 ? p4[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < kUnroll4; u++) {
                int j = base + u * kThreads;
                if (j < V4) {
                    f(4 * j, v[u].x);
                    f(4 * j + 1, v[u].y);
                    f(4 * j + 2, v[u].z);
                    f(4 * j + 3, v[u].w);
                }
            }
        }
        for (int i = 4 * V4 + (int)threadIdx.x; i < V; i += kThreads) f(i, p[i]);
        return;
    }
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

__device__ __forceinline__ u64 bin_mass(const Smem &s, int b) {
    return ((u64)s.mhi[b] << 32) | s.mlo[b];
}

/* One run of equal bins into the histogram; the mass (zero for far-off
** ids) and the largest id (the last digit of a key select only) when asked.
** The mass goes in as two 32-bit atomics (native shared atomics; a 64-bit
** shared atomicAdd is a compare-and-swap loop, which under contention was
** most of the old kernel's time): the low word's wrap, seen in the value it
** returns, carries into the high word, so the bin's sum is exact and does
** not depend on the atomics' order. */
__device__ __forceinline__ void flush(Smem &s, int bin, unsigned c, u64 m, unsigned id,
                                      bool need_maxid) {
    atomicAdd(&s.cnt[bin], c);
    if (m) {
        unsigned lo = (unsigned)m, hi = (unsigned)(m >> 32);
        unsigned old = atomicAdd(&s.mlo[bin], lo);
        hi += old + lo < old; /* the low word wrapped */
        if (hi) atomicAdd(&s.mhi[bin], hi);
    }
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

/* f(i, z[i]) over the cn gathered ids when cn >= 0 (one per thread at
** most), else over the row. */
template <class F>
__device__ __forceinline__ void for_cand(const float *z, int V, int cn, const Smem &s, F f) {
    if (cn >= 0) {
        for (int k = threadIdx.x; k < cn; k += kThreads) f(s.cid[k], s.cz[k]);
        return;
    }
    for_row(z, V, f);
}

/* Gathers the candidates (inside the cut, z >= zmin) of spread bins lo..hi
** into s.cz / s.cid: the caller knows from the spread digit's counts that
** they fit. Every later digit's candidates are among them (a later select's
** cut keeps only ids at or before this select's boundary, in bins <= hi), so
** the rest of the work reads at most kCap ids from shared memory instead of
** the row. s.cfill was zeroed by the spread digit. */
__device__ void compact(const float *z, int V, float M, Cut cut, float zmin, int lo, int hi,
                        Smem &s) {
    for_row(z, V, [&](int i, float zi) {
        int b = spread(zi, M);
        if (b < lo || b > hi || !kept(ord(zi), i, cut) || !(zi >= zmin)) return;
        int k = atomicAdd(&s.cfill, 1);
        if (k < kCap) s.cz[k] = zi, s.cid[k] = i;
    });
    __syncthreads();
}

/* One digit of a select (Dig says which ids and bins). Candidates also lie
** inside the cut and at or above zmin. Histograms the bins, scans them in
** the order (z desc, id asc: ascending SPREAD and ID bins, descending KEY
** bins) and leaves in s the bin where the running count (or mass) reaches
** the target. target: for the first digit of a mass select, computed here
** from the digit's total (mode, f). What came before the candidates (count
** and mass) is in s.above_c / s.above_m: the previous digit's answer, or 0
** with `reset` (kept in shared memory, not in registers through the loop).
** cn >= 0: the candidates are among the cn gathered ids (compact), else the
** row is read. */
template <int KIND>
__device__ void digit(const float *z, int V, int cn, float M, Cut cut, float zmin, const Dig &g,
                      bool need_mass, int mode, float f, u64 &target, bool reset, bool first,
                      Smem &s) {
    const int tid = threadIdx.x, nb = g.nb;
    __syncthreads(); /* every thread has read the previous digit's answer */
    for (int k = tid; k < kBins; k += kThreads)
        s.cnt[k] = 0, s.mlo[k] = 0, s.mhi[k] = 0, s.maxid[k] = 0;
    if (tid == 0) { /* only if no bin reaches the target (never, by construction) */
        s.bin = KIND == KEY ? nb - 1 : 0;
        if (reset) s.above_c = 0, s.above_m = 0;
        s.bin_c = 0, s.bin_m = 0, s.bin_maxid = 0;
        if (KIND == SPREAD) s.cfill = 0; /* for a compact after this digit */
    }
    __syncthreads();
    const bool need_maxid = KIND == KEY && g.shift == 0;
    int rb = -1;
    unsigned rc = 0, rid = 0, tail = 0;
    u64 rm = 0;
    for_cand(z, V, cn, s, [&](int i, float zi) {
        unsigned o = ord(zi);
        int bin;
        if (KIND == SPREAD) { /* lean: this is the one pass over every id */
            bin = spread(zi, M);
            if (!kept(o, i, cut) || !(zi >= zmin)) return;
            if (bin == kTail) { /* no mass there (kScale; M is finite then) */
                tail++;
                return;
            }
            /* no run merging: the spread bins rarely collide in a warp */
            flush(s, bin, 1, need_mass ? fixmass(zi, M) : 0, 0, false);
            return;
        }
        if (KIND == ID) {
            if (o != g.tau || ((unsigned)i & g.hmask) != g.prefix) return;
            bin = (int)(((unsigned)i >> g.shift) & (unsigned)(nb - 1));
        } else if (KIND == SPREAD) {
            bin = spread(zi, M);
        } else {
            unsigned r = o - g.kbase;
            if ((r & g.hmask) != g.prefix || spread(zi, M) != g.sbin) return;
            bin = (int)((r >> g.shift) & (unsigned)(nb - 1));
        }
        if (!kept(o, i, cut) || !(zi >= zmin)) return;
        if (bin != rb) {
            if (rb >= 0) flush(s, rb, rc, rm, rid, need_maxid);
            rb = bin, rc = 0, rm = 0, rid = 0;
        }
        rc++;
        if (need_mass) rm += fixmass(zi, M);
        rid = max(rid, (unsigned)i); /* compact sets come in any order */
    });
    if (rb >= 0) flush(s, rb, rc, rm, rid, need_maxid);
    if (tail) atomicAdd(&s.cnt[kTail], tail);
    __syncthreads();
    const unsigned above_c = s.above_c; /* read before block_scan's barriers */
    const u64 above_m = s.above_m;
    /* thread t holds scan positions 2t, 2t+1 */
    int b0 = 2 * tid, b1 = 2 * tid + 1;
    if (KIND == KEY) b0 = nb - 1 - b0, b1 = nb - 1 - b1;
    bool v0 = 2 * tid < nb, v1 = 2 * tid + 1 < nb;
    unsigned c0 = v0 ? s.cnt[b0] : 0, c1 = v1 ? s.cnt[b1] : 0;
    u64 m0 = v0 ? bin_mass(s, b0) : 0, m1 = v1 ? bin_mass(s, b1) : 0;
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
    if (first && tid == 0) s.total = total;
    u64 inc = base + (need_mass ? im : ic), exc = inc - (need_mass ? m0 + m1 : c0 + c1);
    if (total > 0 && exc < t && inc >= t) { /* exactly one thread */
        u64 first_v = exc + (need_mass ? m0 : c0);
        bool in0 = first_v >= t;
        int bin = in0 ? b0 : b1;
        s.bin = bin;
        s.above_c = above_c + (ic - c0 - c1) + (in0 ? 0 : c0);
        s.above_m = above_m + (im - m0 - m1) + (in0 ? 0 : m0);
        s.bin_c = s.cnt[bin];
        s.bin_m = bin_mass(s, bin);
        s.bin_maxid = s.maxid[bin];
    }
    __syncthreads();
}

/* A select's answer; the mass (or count) of its candidates is s.total. */
struct Sel {
    Cut cut;   /* the boundary: the last kept element */
    u64 mass;  /* the mass up to and including it (mass modes) */
};

/* The element at which the running count (BY_COUNT, target k) or mass
** (BY_TOP_P: ceil(f · total); BY_DRAW: floor(f · total) + 1) of the
** candidates (inside cut, z >= zmin) in the order (z desc, id asc) reaches
** the target. First the spread digit (bins linear in M - z: a row's logits
** spread over hundreds of bins, so the shared atomics rarely collide), then
** the 32-bit keys inside the found bin in digits of up to 11 bits, over
** only the key range that bin can hold. */
__device__ Sel select(const float *z, int V, int &cn, float M, Cut cut, float zmin, int mode,
                      u64 k, float f, Smem &s) {
    const bool need_mass = mode != BY_COUNT;
    u64 target = k;
    Dig g = {0u, 0u, 0, kBins, 0u, 0u, 0};
    digit<SPREAD>(z, V, cn, M, cut, zmin, g, need_mass, mode, f, target, true, true, s);
    const int sb = s.bin;
    /* gather what is left to look at, when it fits: the bins up to sb (for
    ** this select and every later one), else bin sb alone (this select) */
    int scn = cn;
    if (cn < 0) {
        const unsigned nin = s.bin_c, nup = s.above_c + nin;
        if (nup <= (unsigned)kCap || nin <= (unsigned)kCap) {
            const bool all = nup <= (unsigned)kCap;
            compact(z, V, M, cut, zmin, all ? 0 : sb, sb, s);
            scn = (int)(all ? nup : nin);
            if (all) cn = scn;
        }
    }
    /* the keys of spread bin sb: z in [M - (sb+1)/kScale, M - sb/kScale]
    ** up to the rounding of M - z and of the product (relative 2^-23 of
    ** M - z < 28); the slack is far wider. The tail: every key. */
    unsigned kl = 0u, kh = ~0u;
    if (sb < kTail && M != -INFINITY) {
        float slack = (fabsf(M) + 32.0f) * (1.0f / 16384.0f);
        float zlo = M - (float)(sb + 1) / kScale - slack;
        float zhi = M - (float)sb / kScale + slack + 0.0f; /* -0 -> +0 */
        kl = ord(zlo), kh = ord(zhi);
    }
    unsigned span = kh - kl;
    int r = span ? 32 - __clz((int)span) : 1; /* bits of key - kl */
    g.kbase = kl, g.sbin = sb;
    while (r > 0) { /* digits of up to 11 bits from the top */
        int w = r < 11 ? r : 11;
        g.shift = r - w, g.nb = 1 << w;
        g.hmask = r >= 32 ? 0u : ~0u << r;
        digit<KEY>(z, V, scn, M, cut, zmin, g, need_mass, mode, f, target, false, false, s);
        g.prefix |= (unsigned)s.bin << g.shift;
        r = g.shift;
    }
    const unsigned key = kl + g.prefix;
    const unsigned above_c = s.above_c, n = s.bin_c, maxid = s.bin_maxid;
    const u64 above_m = s.above_m;
    u64 each = n ? s.bin_m / n : 0; /* tied keys: the same z, the same mass */
    u64 c;
    if (!need_mass) c = target > above_c ? target - above_c : 1;
    else if (each == 0) c = n;
    else c = target > above_m ? (target - above_m + each - 1) / each : 1;
    if (c > n) c = n;
    if (c < 1) c = 1;
    Sel res;
    res.cut.key = key;
    res.mass = above_m + c * each;
    __syncthreads(); /* everyone has read s before the id digits clear it */
    if (c == n) {
        res.cut.id = (int)maxid;
        return res;
    }
    /* the c-th lowest id among the tied keys: ids < 2^24 in digits 11, 11, 2 */
    Dig h = {0u, 0u, 0, kBins, 0u, key, 0};
    u64 tgt = c;
    for (int d = 0; d < 3; d++) { /* bits 13-23, 2-12, 0-1 */
        h.shift = d == 0 ? 13 : d == 1 ? 2 : 0, h.nb = d == 2 ? 4 : 2048;
        h.hmask = d == 0 ? 0u : ~0u << (h.shift + (d == 2 ? 2 : 11));
        digit<ID>(z, V, scn, M, cut, zmin, h, false, BY_COUNT, 0.0f, tgt, d == 0, false, s);
        h.prefix |= (unsigned)s.bin << h.shift;
    }
    res.cut.id = (int)h.prefix;
    __syncthreads();
    return res;
}

/* Top-k, top-p, min-p and the draw by radix selects over the z row w [V]
** (max M); writes out[0..1]. draw_u() gives the row's uniform (computed
** where it is needed: fewer registers live through the selects). */
template <class U>
__device__ __forceinline__ void radix_sample(const float *w, int V, float M, int top_k,
                                             float top_p, float min_p, U draw_u, float *out,
                                             Smem &s) {
    Cut cut = {0u, INT_MAX}; /* everything */
    int cn = -1; /* the row; >= 0 once the candidates are gathered (compact) */
    if (top_k > 0 && top_k < V)
        cut = select(w, V, cn, M, cut, -INFINITY, BY_COUNT, (u64)top_k, 0.0f, s).cut;
    if (top_p < 1.0f)
        cut = select(w, V, cn, M, cut, -INFINITY, BY_TOP_P, 0, top_p, s).cut;
    float zmin = min_p > 0.0f ? M + logf(min_p) : -INFINITY;
    Sel d = select(w, V, cn, M, cut, zmin, BY_DRAW, 0, draw_u(), s);
    if (threadIdx.x == 0) {
        int id = d.cut.id;
        float e = M == -INFINITY ? 1.0f : expf(w[id] - M);
        out[0] = (float)id;
        out[1] = (float)((double)e * (double)kFix / (double)s.total);
    }
}

#include "sample_fast.cuh"
#include "sample_grid.cuh"

/* FAST: m40k_sample_variant 1 (sample_fast.cuh), else the radix selects alone. */
template <bool FAST>
__global__ void __launch_bounds__(kThreads, 1) sample_kernel(m40k_sample_args a) {
    __shared__ Smem s;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, V = a.V;
    const int64_t b = blockIdx.x;
    const float *lrow = a.logits + b * V;
    float *w = a.scratch ? a.scratch + b * V : NULL;
    const float *src = lrow;
    const bool pen = a.history && a.penalty != 1.0f;
    /* FAST sampling: no copy pass; pass 1 reads the logits and the history
    ** ids are penalized in the z row after it (fast_penalty) */
    const bool late = FAST && a.temperature > 0.0f;
    if (pen && !late) {
        for_row(lrow, V, [&](int i, float x) { w[i] = sanitize(x); });
        __syncthreads(); /* the copy is complete before any penalty lands */
    }
    if (a.history && !late) {
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
    if (pen && !late) {
        __syncthreads();
        src = w;
    }
    const bool greedy = !(a.temperature > 0.0f);
    const float T = greedy ? 1.0f : a.temperature;
    if (FAST && !greedy && tid == 0) { /* read after pass 1's barriers */
        uint64_t p = a.pos ? (uint64_t)(uint32_t)a.pos[b] : 0;
        s.fu = m40__rand_u01(a.seed, p, (uint64_t)b); /* lib/ref/sample.c draws the same u */
    }
    if (FAST && greedy) {
        greedy_fast(src, V, a.out + 2 * b, s);
        return;
    }

    /* pass 1: z, max and argmax (lowest id on ties) */
    float bv = -INFINITY;
    int bi = INT_MAX;
    for_row(src, V, [&](int i, float x) {
        float z = zval(x, T);
        if (!greedy) w[i] = z; /* each thread rewrites only what it read */
        if (z > bv || (z == bv && i < bi)) bv = z, bi = i; /* any visiting order */
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
    if (FAST) {
        select_and_write<false>(w, V, fast_penalty(lrow, w, V, M, T, a, b, s), a, s);
        return;
    }

    radix_sample(w, V, M, a.top_k, a.top_p, a.min_p, [&] {
        uint64_t p = a.pos ? (uint64_t)(uint32_t)a.pos[b] : 0;
        return m40__rand_u01(a.seed, p, (uint64_t)b); /* lib/ref/sample.c draws the same u */
    }, a.out + 2 * b, s);
}

} // namespace

/* Variant 2 (auto, the default): the kernel that was fastest for the
** call's kind in the H200 A/B of 2026-12-03 (`M40_SAMPLE_AB=1 m40-bench
** sample`, bench/NOTES.md "Session 15"; µs per call, v3 / v1 / v0): one
** row, the grid passes for every sampler (greedy 13.7 / 20.1 / 24.1, top-k
** 40 44.8 / 63.3 / 55.8, top-p 34.0 / 54.5 / 66.0, min-p 44.9 / 63.9 /
** 50.0, top-p + penalty 34.0 / 55.9 / 85.4); 8 rows, the radix selects for
** top-k and min-p (54.8 and 50.0 against v3's 64.0 and 65.5), the grid
** passes for the rest (greedy 13.9, top-p 62.6 against v0's 67.2, with the
** penalty 61.8 against 85.1). */
/* auto (2): variant 4, but the radix selects for several rows with min-p
** (H200, session 16, µs a call, v4 / v3 / v0: 1 row top-k 40 28.7 / 41.7 /
** 53.2, top-p 31.7 / 30.9 / 64.3, min-p 42.8 / 41.9 / 48.1; 8 rows top-k
** 32.9 / 62.1 / 53.6, top-p 44.1 / 59.2 / 65.1, min-p 63.9 / 62.5 / 49.0) */
static int sample_variant(const m40k_sample_args *a) {
    if (m40k_sample_variant != 2) return m40k_sample_variant;
    if (a->B > 1 && a->temperature > 0.0f && a->min_p > 0.0f) return 0;
    return 4;
}

extern "C" int m40k_sample(void *stream, const m40k_sample_args *a) {
    if (a->B <= 0) return 0;
    int v = sample_variant(a);
    const int64_t nc = m40k_sample_chunks(a->V);
    if ((v == 3 || v == 4) && (!a->chunks || a->B * nc >= INT_MAX)) v = 1; /* a grid of B·nc blocks */
    if (v == 3 || v == 4) {
        cudaStream_t st = (cudaStream_t)stream;
        const unsigned nb = (unsigned)(a->B * nc);
        if (!(a->temperature > 0.0f)) {
            grid_a_kernel<true><<<nb, kGT, 0, st>>>(*a, (int)nc);
        } else {
            grid_a_kernel<false><<<nb, kGT, 0, st>>>(*a, (int)nc);
            grid_b_kernel<<<nb, kGT, 0, st>>>(*a, (int)nc);
        }
        sample_post_kernel<<<(unsigned)a->B, kThreads, 0, st>>>(*a, (int)nc, v == 4);
    } else if (v == 1)
        sample_kernel<true><<<(unsigned)a->B, kThreads, 0, (cudaStream_t)stream>>>(*a);
    else
        sample_kernel<false><<<(unsigned)a->B, kThreads, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}
