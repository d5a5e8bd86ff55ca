/* The candidate path of kernels/sample.cu (m40k_sample_variant 1), included
** by it inside its anonymous namespace after select(): it uses Smem, for_row,
** fixmass, ord, block_scan and kFix from there.
**
** Why: one block per row issues 4 warp instructions per clock, so on an
** H200 (1.98 GHz) each instruction per logit costs 65024 / 128 / 1.98 GHz =
** 0.26 µs a pass; the radix selects spend ~55 per logit in their first
** digit (expf, 3 shared atomics that collide on banks), ~15 in the gather,
** and ~1.5k cycles in each of ~7 digit scans over 2048 bins.
**
** Greedy: one pass. Per thread a running max m, its lowest id and Σ e^(z-m)
** in float (rescaled when m grows), merged across the block in a fixed tree
** (deterministic); p = 1 / Σ. Was: two passes (max, then the integer Σ).
**
** The repetition penalty, sampling: no copy pass (fast_penalty, below).
** Sampling, after pass 1 (z and the max M, as in sample.cu):
**   2. one pass, no atomics: the exact integer mass S of the row (the same
**      fixmass as the radix selects) and, per thread, how many ids lie in
**      each of kNWin windows M - z <= D (D = 27.5, 12, 8, 5, 3: value cuts,
**      so each is a prefix of the order (z desc, id asc));
**   3. the widest window holding <= kFastCap ids is gathered: each thread
**      writes its ids at its exclusive prefix of the counts (no atomics) as
**      64-bit keys ord(z) << 32 | ~id into the radix bins' 32 KB;
**   4. a bitonic sort of those keys (descending: z desc, id asc), their
**      masses and an inclusive prefix P over the sorted order;
**   5. top-k, top-p, min-p and the draw read P: the same integer targets
**      (ceil(top_p · mass), floor(u · kept mass) + 1) and the same boundary
**      (the first id whose running mass reaches the target) as the radix
**      selects, so the same ids for a seed, and p = e · 2^39 / kept mass.
** The window must hold the answer: top-k with k <= n (the ids gathered),
** top-p's target <= the window's mass, a min-p cut inside the window, the
** draw's target <= the window's mass. Otherwise (flat rows: > 4096 ids
** within 3 of the max; an unfiltered draw that lands in the tail) the
** function says so and the radix selects run over the row (z is in the
** scratch row). */

constexpr int kFastCap = 4 * kThreads; /* sorted keys, 8 B each: the bins' 32 KB */
constexpr int kNWin = 5;
static_assert(offsetof(Smem, wc) == 16 * kBins && kFastCap * 8 == 16 * kBins,
              "the candidate keys fill cnt, mlo, mhi and maxid exactly");

/* Variant 3 (sample_grid.cuh): what a chunk block of the grid passes leaves
** for the row's block (kernels/sample.h: M40K_SAMPLE_CHUNK_BYTES). */
struct __align__(16) ChunkSum {
    float m;           /* the chunk's max z (after the penalty) */
    int id;            /* greedy: the lowest id of that max */
    float sum;         /* greedy: Σ e^(z - m) over the chunk, in float */
    unsigned pad;
    u64 S;             /* sampling: Σ fixmass(z, M) over the chunk, M the row's max */
    unsigned c[kNWin]; /* sampling: the chunk's ids with M - z <= win(j) */
    unsigned pad2;
    u64 wm[kNWin];     /* sampling: their mass (variant 4's choice of window) */
    u64 pad3;
};
static_assert(sizeof(ChunkSum) == M40K_SAMPLE_CHUNK_BYTES, "kernels/sample.h: the summary's bytes");

/* The windows M - z <= win(j), widest first (27.5: every id with a mass). */
__device__ __forceinline__ float win(int j) {
    return j == 0 ? 27.5f : j == 1 ? 12.0f : j == 2 ? 8.0f : j == 3 ? 5.0f : 3.0f;
}

__device__ __forceinline__ float unord(unsigned o) {
    return __uint_as_float((o & 0x80000000u) ? (o & 0x7fffffffu) : ~o);
}

/* Merge two (max, Σ e^(z - max), lowest id of the max) summaries;
** symmetric in its arguments, so a butterfly leaves every lane the same. */
__device__ __forceinline__ void merge_sum(float &m, float &sum, int &id, float m2, float s2,
                                          int i2) {
    const float mx = fmaxf(m, m2);
    const float x = sum > 0.0f ? sum * expf(m - mx) : 0.0f;
    const float y = s2 > 0.0f ? s2 * expf(m2 - mx) : 0.0f;
    if (m2 > m || (m2 == m && i2 < id)) id = i2;
    m = mx;
    sum = x + y;
}

/* merge_sum over the warp's lanes, in a fixed butterfly: every lane ends
** with the same (max, Σ, lowest id). */
__device__ __forceinline__ void warp_merge_sum(float &m, float &sum, int &id) {
    for (int o = 16; o > 0; o >>= 1)
        merge_sum(m, sum, id, __shfl_xor_sync(0xffffffffu, m, o),
                  __shfl_xor_sync(0xffffffffu, sum, o), __shfl_xor_sync(0xffffffffu, id, o));
}

/* greedy's running (max m, its lowest id, Σ e^(z - m)) after z = element i,
** visited in increasing i (sum rescaled when the max grows). */
__device__ __forceinline__ void greedy_step(float &m, float &sum, int &id, float z, int i) {
    if (z > m) {
        sum = sum * expf(m - z) + 1.0f; /* m = -inf: sum is 0 */
        m = z, id = i;
    } else {
        if (z == m && i < id) id = i;
        if (z > -INFINITY) sum += expf(z - m);
    }
}

/* Each window count r[j] and the mass rs summed over the warp, in every
** lane (pass 2's warp step and then its block step over the warps' sums). */
__device__ __forceinline__ void warp_sum_windows(unsigned (&r)[kNWin], u64 &rs) {
    for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
        for (int j = 0; j < kNWin; j++) r[j] += __shfl_xor_sync(0xffffffffu, r[j], o);
        rs += __shfl_xor_sync(0xffffffffu, rs, o);
    }
}

/* Greedy in one pass: argmax (lowest id on ties) and p = 1 / Σ e^(x - max)
** (1 / V when every x is -inf, as the definition's e = 1). */
__device__ void greedy_fast(const float *src, int V, float *out, Smem &s) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float m = -INFINITY, sum = 0.0f;
    int id = INT_MAX;
    for_row(src, V, [&](int i, float x) {
        float z = sanitize(x);
        z = z == 0.0f ? 0.0f : z; /* zval(x, 1): x / 1 is x */
        greedy_step(m, sum, id, z, i);
    });
    warp_merge_sum(m, sum, id);
    if (lane == 0) s.rv[warp] = m, s.cz[warp] = sum, s.ri[warp] = id;
    __syncthreads();
    if (warp != 0) return;
    m = s.rv[lane], sum = s.cz[lane], id = s.ri[lane];
    warp_merge_sum(m, sum, id);
    if (lane == 0) {
        out[0] = (float)id;
        out[1] = (float)(sum > 0.0f ? 1.0 / (double)sum : 1.0 / (double)V);
    }
}

/* The history of row b, after pass 1 wrote the unpenalized z row w [V]
** (max M; barrier passed): reports bad ids to the index guard and, with a
** penalty, writes w[id] = z of the penalized logit (what the copy pass +
** pass 1 of the radix kernel give, without the copy: one load and one store
** pass fewer). Returns the max of the penalized row: M and the penalized
** values, unless an id of the history held M before (then its old value
** may have been the only M: one more pass over w finds the max). Ends
** with a barrier. */
__device__ float fast_penalty(const float *lrow, float *w, int V, float M, float T,
                              const m40k_sample_args &a, int64_t b, Smem &s) {
    if (!a.history) return M;
    const bool pen = a.penalty != 1.0f;
    if (threadIdx.x == 0) s.fpmax = 0u; /* below ord of every float */
    __syncthreads();
    const int32_t *h = a.history + b * a.W;
    int hit = 0;
    for (int64_t j = threadIdx.x; j < a.W; j += kThreads) {
        const int id = h[j];
        if (id == -1) continue;
        if (id < -1 || id >= V) {
            m40k_guard_report(a.guard, M40K_GUARD_SAMPLE_HISTORY, id, V);
            continue;
        }
        if (!pen) continue;
        const float x = lrow[id], zp = zval(penalize(sanitize(x), a.penalty), T);
        w[id] = zp; /* a repeated id writes the same value */
        hit |= zval(x, T) == M;
        atomicMax(&s.fpmax, ord(zp));
    }
    if (!__syncthreads_or(hit)) return s.fpmax ? fmaxf(M, unord(s.fpmax)) : M;
    float m = -INFINITY;
    for_row(w, V, [&](int, float z) { m = fmaxf(m, z); });
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) s.rv[threadIdx.x >> 5] = m;
    __syncthreads();
    m = s.rv[threadIdx.x & 31];
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    __syncthreads(); /* rv is read before anyone writes it again */
    return m;
}

/* Sorts key[0, P) descending, P a power of two <= kFastCap. Pair q of a
** stage (k, j) is (i, i + j), i = q with a 0 bit inserted at j; for j <= 32
** the 32 pairs of a warp stay inside its own 64 keys (its own 64 of the
** second half for P = 4096), so a warp barrier is enough between two such
** stages. */
__device__ void bitonic_desc(u64 *key, int P) {
    for (int k = 2; k <= P; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int q = threadIdx.x; q < P / 2; q += kThreads) {
                const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1)), l = i | j;
                const u64 x = key[i], y = key[l];
                if ((i & k) == 0 ? x < y : x > y) key[i] = y, key[l] = x;
            }
            const int next = j > 1 ? j >> 1 : k << 1; /* the next stage's j */
            if (j <= 32 && next <= 32) __syncwarp();
            else __syncthreads();
        }
}

/* Top-k, top-p, min-p and the draw (draw_u(): the row's uniform) over the sorted
** candidates (see the top of this file). w: the z row [V] (pass 1 done,
** barrier passed), M its max.
** Returns true when it wrote out[0..1]; false, the same in every thread,
** when the window cannot hold the answer (the caller runs the radix
** selects, after a barrier). */
/* PRE (variant 3): pass 2 was done by the chunk blocks; S and the window
** counts are the sums of the row's nc summaries cs, and pass 3 places the
** window's ids with a shared counter (the order they land in does not
** matter: the sort orders them, and no two keys are equal). */
template <bool PRE = false, class U>
__device__ __forceinline__ bool fast_select(const float *w, int V, float M, int top_k, float top_p,
                                            float min_p, U draw_u, float *out, Smem &s,
                                            const ChunkSum *cs = NULL, int nc = 0,
                                            bool narrow = false) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const bool topk = top_k > 0 && top_k < V;
    if (M == -INFINITY || (topk && top_k > kFastCap)) return false;
    /* pass 2: S and the window counts */
    u64 S = 0;
    unsigned c[kNWin];
#pragma unroll
    for (int j = 0; j < kNWin; j++) c[j] = 0;
    if constexpr (PRE) {
        for (int k = tid; k < nc; k += kThreads) {
            S += cs[k].S;
#pragma unroll
            for (int j = 0; j < kNWin; j++) c[j] += cs[k].c[j];
        }
    } else {
        for_row(w, V, [&](int, float z) {
            S += fixmass(z, M);
            const float d = M - z;
#pragma unroll
            for (int j = 0; j < kNWin; j++) c[j] += d <= win(j) ? 1u : 0u;
        });
    }
    {
        unsigned r[kNWin];
        u64 rs = S;
#pragma unroll
        for (int j = 0; j < kNWin; j++) r[j] = c[j];
        warp_sum_windows(r, rs);
        if (lane == 0) {
#pragma unroll
            for (int j = 0; j < kNWin; j++) s.cid[j * kWarps + warp] = (int)r[j];
            s.wm[warp] = rs;
        }
        __syncthreads();
        if (warp == 0) {
#pragma unroll
            for (int j = 0; j < kNWin; j++) r[j] = (unsigned)s.cid[j * kWarps + lane];
            rs = s.wm[lane];
            warp_sum_windows(r, rs);
            if (lane == 0) {
#pragma unroll
                for (int j = 0; j < kNWin; j++) s.cid[kNWin * kWarps + j] = (int)r[j];
                s.total = rs;
            }
        }
        __syncthreads();
    }
    const u64 Sall = s.total;
    int jw = -1;
    unsigned n = 0, cc = 0;
    float D = 0.0f;
    if constexpr (PRE) {
        /* variant 4: the narrowest window that holds the answer, by the
        ** windows' exact masses (the chunks'): k ids for top-k (top-p and
        ** the draw then lie inside the kept k), the top-p target's mass,
        ** or the plain draw's; min-p alone keeps the widest. The checks
        ** below still stand: a window short of the answer falls back. */
        if (narrow) {
            if (warp == 0) {
                u64 m[kNWin];
#pragma unroll
                for (int j = 0; j < kNWin; j++) m[j] = 0;
                for (int k = lane; k < nc; k += 32)
#pragma unroll
                    for (int j = 0; j < kNWin; j++) m[j] += cs[k].wm[j];
                for (int o = 16; o > 0; o >>= 1)
#pragma unroll
                    for (int j = 0; j < kNWin; j++) m[j] += __shfl_xor_sync(0xffffffffu, m[j], o);
                if (lane == 0) {
                    u64 t = 0; /* the mass the window must hold; 0: a count (top-k) or none */
                    if (!topk && !(top_p < 1.0f) && !(min_p > 0.0f)) {
                        t = (u64)((double)draw_u() * (double)Sall) + 1;
                    } else if (!topk && top_p < 1.0f) {
                        t = (u64)ceil((double)top_p * (double)Sall);
                        if (t < 1) t = 1;
                    }
                    int pick = -1;
                    if (topk || top_p < 1.0f || !(min_p > 0.0f))
                        for (int j = kNWin - 1; j >= 0 && pick < 0; j--) {
                            const unsigned nj = (unsigned)s.cid[kNWin * kWarps + j];
                            if (nj == 0 || nj > (unsigned)kFastCap) continue;
                            if (topk ? nj >= (unsigned)top_k : m[j] >= t) pick = j;
                        }
                    s.cfill = pick;
                }
            }
            __syncthreads();
            jw = s.cfill;
            __syncthreads(); /* cfill is the gather's counter below */
            if (jw >= 0) n = (unsigned)s.cid[kNWin * kWarps + jw], D = win(jw);
        }
    }
#pragma unroll
    for (int j = 0; j < kNWin; j++) { /* widest first; the max's own window holds >= 1 */
        const unsigned t = (unsigned)s.cid[kNWin * kWarps + j];
        if (jw < 0 && t <= (unsigned)kFastCap) jw = j, n = t, cc = c[j], D = win(j);
    }
    if (jw < 0 || (topk && (unsigned)top_k > n)) return false;
    /* pass 3: the window's ids, each thread's at its exclusive prefix */
    u64 *key = reinterpret_cast<u64 *>(s.cnt);
    unsigned tc;
    u64 tm;
    if constexpr (PRE) {
        (void)cc;
        if (tid == 0) s.cfill = 0;
        __syncthreads();
        for_row(w, V, [&](int i, float z) {
            if (M - z <= D) { /* n of them, by the chunks' counts; checked anyway */
                const int k = atomicAdd(&s.cfill, 1);
                if (k < (int)n) key[k] = ((u64)ord(z) << 32) | (unsigned)~i;
            }
        });
    } else {
        u64 sink = 0;
        unsigned at = cc;
        block_scan(at, sink, tc, tm, s);
        at -= cc;
        for_row(w, V, [&](int i, float z) {
            if (M - z <= D) key[at++] = ((u64)ord(z) << 32) | (unsigned)~i;
        });
    }
    int P = 32;
    while (P < (int)n) P <<= 1;
    for (int q = (int)n + tid; q < P; q += kThreads) key[q] = 0; /* below every real key */
    __syncthreads();
    bitonic_desc(key, P);
    /* masses and the inclusive prefix: thread t holds sorted positions 4t .. 4t+3 */
    u64 pm[4], run = 0;
#pragma unroll
    for (int q4 = 0; q4 < 4; q4++) {
        const int q = 4 * tid + q4;
        if (q < (int)n) run += fixmass(unord((unsigned)(key[q] >> 32)), M);
        pm[q4] = run;
    }
    u64 inc = run;
    unsigned one = 0;
    block_scan(one, inc, tc, tm, s);
    const u64 base = inc - run, C = tm; /* C: the window's mass */
#pragma unroll
    for (int q4 = 0; q4 < 4; q4++) pm[q4] += base;
    /* the first sorted position whose running mass reaches t (1 <= t <= C:
    ** exactly one thread sees the crossing), and its running mass */
    auto reach = [&](u64 t, u64 &Pq) {
        u64 prev = base;
#pragma unroll
        for (int q4 = 0; q4 < 4; q4++) {
            if (prev < t && pm[q4] >= t) s.bin = 4 * tid + q4, s.bin_m = pm[q4];
            prev = pm[q4];
        }
        __syncthreads();
        const int q = s.bin;
        Pq = s.bin_m;
        __syncthreads();
        return q;
    };
    auto prefix_at = [&](int q) {
#pragma unroll
        for (int q4 = 0; q4 < 4; q4++)
            if (4 * tid + q4 == q) s.bin_m = pm[q4];
        __syncthreads();
        const u64 v = s.bin_m;
        __syncthreads();
        return v;
    };
    /* the kept set: sorted positions [0, L) once `inside` (it lies in the
    ** window), T its mass; before any filter, the whole row (mass Sall) */
    bool inside = n == (unsigned)V;
    int L = (int)n;
    u64 T = Sall;
    if (topk) {
        L = top_k, inside = true;
        T = prefix_at(L - 1);
    }
    if (top_p < 1.0f) {
        u64 t = (u64)ceil((double)top_p * (double)T);
        if (t > T) t = T;
        if (t < 1) t = 1;
        if (!inside && t > C) return false;
        L = reach(t, T) + 1, inside = true;
    }
    if (min_p > 0.0f) {
        /* the first sorted position below zmin (z = M >= zmin at 0), else n */
        const float zmin = M + logf(min_p);
        if (tid == 0) s.bin = (int)n;
        __syncthreads();
#pragma unroll
        for (int q4 = 0; q4 < 4; q4++) {
            const int q = 4 * tid + q4;
            if (q > 0 && q < (int)n && unord((unsigned)(key[q] >> 32)) < zmin &&
                !(unord((unsigned)(key[q - 1] >> 32)) < zmin))
                s.bin = q;
        }
        __syncthreads();
        const int Lm = s.bin;
        __syncthreads();
        /* an id of the window below zmin: every id outside it is too */
        if (!inside && Lm == (int)n) return false;
        if (!inside || Lm < L) {
            L = Lm, inside = true;
            T = prefix_at(L - 1);
        }
    }
    const float u = draw_u();
    u64 t = (u64)((double)u * (double)T) + 1;
    if (t > T) t = T;
    if (!inside && t > C) return false;
    u64 Pq;
    const int q = reach(t, Pq);
    if (tid == 0) {
        const u64 k = key[q];
        const float e = expf(unord((unsigned)(k >> 32)) - M);
        out[0] = (float)(~(unsigned)k);
        out[1] = (float)((double)e * (double)kFix / (double)T);
    }
    return true;
}

/* The candidate path, else (after a barrier: its shared memory is the radix
** selects') the radix selects over the z row w; then thread 0 writes the
** answer it left in s.fres. The row's output address comes from a fresh
** read of ctaid: b's address, held across both paths, was hoisted and
** spilled at 64 registers. Variants 1 and 3 (PRE: the chunks' summaries). */
template <bool PRE>
__device__ __forceinline__ void select_and_write(const float *w, int V, float M,
                                                 const m40k_sample_args &a, Smem &s,
                                                 const ChunkSum *cs = NULL, int nc = 0,
                                                 bool narrow = false) {
    auto draw_u = [&] { return s.fu; };
    if (!fast_select<PRE>(w, V, M, a.top_k, a.top_p, a.min_p, draw_u, s.fres, s, cs, nc, narrow)) {
        __syncthreads();
        radix_sample(w, V, M, a.top_k, a.top_p, a.min_p, draw_u, s.fres, s);
    }
    if (threadIdx.x == 0) {
        unsigned bx;
        asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(bx));
        float *o = a.out + 2 * (int64_t)bx;
        o[0] = s.fres[0], o[1] = s.fres[1];
    }
}
