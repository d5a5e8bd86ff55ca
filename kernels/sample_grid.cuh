/* Variant 3 of kernels/sample.cu (m40k_sample_variant 3): variant 1 with its
** passes over the row spread over a grid. Included by sample.cu inside its
** anonymous namespace after sample_fast.cuh (Smem, zval, penalize, fixmass,
** win, merge_sum, warp_sum_windows, fast_select, radix_sample).
**
** Why: one block of 1024 threads issues 4 warp instructions a clock on one
** SM, and every pass over 65024 logits costs it several µs (measured on an
** H200: greedy, one pass, 19 µs a call; top-p, four passes and a sort, 52);
** the other 131 SMs wait. Here the row is cut into chunks of
** M40K_SAMPLE_CHUNK logits, a 256-thread block each:
**   A. (grid_a_kernel) z = x / T with the repetition penalty applied to the
**      history ids inside the chunk (the same expression as variant 1's
**      fast_penalty, so the same bits), written to the scratch row when
**      sampling; the chunk's max z, and for greedy its lowest argmax and
**      Σ e^(z - max) in float (greedy_fast's running form).
**   B. (grid_b_kernel, sampling) the row's max M from the chunks' maxima
**      (fmaxf: order-free), then the chunk's exact integer mass Σ fixmass(z,
**      M) and its window counts (variant 1's pass 2, per chunk).
**   C. (sample_post_kernel, one 1024-thread block a row) greedy: the chunks'
**      summaries merged in a fixed order; sampling: M, S and the window
**      counts from the summaries, then variant 1's gather (pass 3, over the
**      row from L2), sort and lookups, with the radix selects over the z row
**      as the fallback.
** Same integer masses, targets and boundaries as variants 0 and 1: the same
** ids and probabilities for a seed, bit for bit; greedy's p is the same sum
** in another order (the test allows 1e-5).
** Three launches instead of one (greedy: two); inside a captured decode
** step a launch costs ~1 µs on an H200. */

constexpr int kGT = 256;                       /* a chunk block's threads */
constexpr int kGPer = M40K_SAMPLE_CHUNK / kGT; /* logits a thread */
constexpr int kGWarps = kGT / 32;
static_assert(kGPer * kGT == M40K_SAMPLE_CHUNK, "chunk tiling");

/* Row b and chunk c of blockIdx.x = b · nc + c; the chunk's first logit and
** its length (<= M40K_SAMPLE_CHUNK). */
struct GridChunk {
    int64_t b;
    int c, base, n;
};
__device__ __forceinline__ GridChunk grid_chunk(int V, int nc) {
    GridChunk g;
    g.b = blockIdx.x / (unsigned)nc;
    g.c = (int)(blockIdx.x % (unsigned)nc);
    g.base = g.c * M40K_SAMPLE_CHUNK;
    g.n = min(M40K_SAMPLE_CHUNK, V - g.base);
    return g;
}

template <bool GREEDY>
__global__ void __launch_bounds__(kGT) grid_a_kernel(m40k_sample_args a, int nc) {
    __shared__ float zs[M40K_SAMPLE_CHUNK]; /* the chunk's z, while the penalty lands */
    __shared__ float rm[kGWarps], rsum[kGWarps];
    __shared__ int rid[kGWarps];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, V = a.V;
    const GridChunk g = grid_chunk(V, nc);
    const float *lrow = a.logits + g.b * V;
    const float T = GREEDY ? 1.0f : a.temperature;
    float z[kGPer];
#pragma unroll
    for (int k = 0; k < kGPer; k++) { /* every load in flight before the first use */
        const int i = k * kGT + tid;
        z[k] = i < g.n ? lrow[g.base + i] : -INFINITY;
    }
#pragma unroll
    for (int k = 0; k < kGPer; k++) z[k] = zval(z[k], T);
    if (a.history) { /* uniform: every block of the launch takes it or not */
        const bool pen = a.penalty != 1.0f;
        if (pen) {
#pragma unroll
            for (int k = 0; k < kGPer; k++) zs[k * kGT + tid] = z[k];
            __syncthreads();
        }
        const int32_t *h = a.history + g.b * a.W;
        for (int64_t j = tid; j < a.W; j += kGT) {
            const int id = h[j];
            if (id == -1) continue;
            if (id < -1 || id >= V) { /* chunk 0 reports: once an id, as variant 1 */
                if (g.c == 0) m40k_guard_report(a.guard, M40K_GUARD_SAMPLE_HISTORY, id, V);
                continue;
            }
            /* a repeated id writes the same value */
            if (pen && id >= g.base && id < g.base + g.n)
                zs[id - g.base] = zval(penalize(sanitize(lrow[id]), a.penalty), T);
        }
        if (pen) {
            __syncthreads();
#pragma unroll
            for (int k = 0; k < kGPer; k++) z[k] = zs[k * kGT + tid];
        }
    }
    ChunkSum *cs = reinterpret_cast<ChunkSum *>(a.chunks) + g.b * nc + g.c;
    if constexpr (GREEDY) {
        /* greedy_fast's running (max, lowest id, Σ e): greedy_step, in increasing id */
        float m = -INFINITY, sum = 0.0f;
        int id = INT_MAX;
#pragma unroll
        for (int k = 0; k < kGPer; k++) {
            const int i = k * kGT + tid;
            if (i >= g.n) break;
            greedy_step(m, sum, id, z[k], g.base + i);
        }
        warp_merge_sum(m, sum, id);
        if (lane == 0) rm[warp] = m, rsum[warp] = sum, rid[warp] = id;
        __syncthreads();
        if (warp != 0) return;
        m = lane < kGWarps ? rm[lane] : -INFINITY;
        sum = lane < kGWarps ? rsum[lane] : 0.0f;
        id = lane < kGWarps ? rid[lane] : INT_MAX;
        warp_merge_sum(m, sum, id);
        if (lane == 0) cs->m = m, cs->sum = sum, cs->id = id;
    } else {
        float *w = a.scratch + g.b * V + g.base;
        float m = -INFINITY;
#pragma unroll
        for (int k = 0; k < kGPer; k++) {
            const int i = k * kGT + tid;
            if (i < g.n) w[i] = z[k], m = fmaxf(m, z[k]);
        }
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) rm[warp] = m;
        __syncthreads();
        if (tid == 0) {
            for (int k = 1; k < kGWarps; k++) m = fmaxf(m, rm[k]);
            cs->m = m;
        }
    }
}

/* The row's max z from its chunks' maxima (A's), in every thread of a
** block of NT; red: NT / 32 floats of shared memory. */
template <int NT>
__device__ __forceinline__ float chunks_max(const ChunkSum *cs, int nc, float *red) {
    float m = -INFINITY;
    for (int k = threadIdx.x; k < nc; k += NT) m = fmaxf(m, cs[k].m);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = (threadIdx.x & 31) < NT / 32 ? red[threadIdx.x & 31] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    __syncthreads(); /* red is free again */
    return m;
}

/* B: the chunk's exact mass and window counts under the row's max. */
__global__ void __launch_bounds__(kGT) grid_b_kernel(m40k_sample_args a, int nc) {
    __shared__ float red[kGWarps];
    __shared__ unsigned rc[kNWin][kGWarps];
    __shared__ u64 rs[kGWarps], rw[kNWin][kGWarps];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, V = a.V;
    const GridChunk g = grid_chunk(V, nc);
    ChunkSum *row = reinterpret_cast<ChunkSum *>(a.chunks) + g.b * nc;
    const float *w = a.scratch + g.b * V + g.base;
    float z[kGPer];
#pragma unroll
    for (int k = 0; k < kGPer; k++) { /* the chunk's z first: its loads overlap the max's */
        const int i = k * kGT + tid;
        z[k] = i < g.n ? w[i] : -INFINITY;
    }
    const float M = chunks_max<kGT>(row, nc, red);
    u64 S = 0, wm[kNWin];
    unsigned c[kNWin];
#pragma unroll
    for (int j = 0; j < kNWin; j++) c[j] = 0, wm[j] = 0;
#pragma unroll
    for (int k = 0; k < kGPer; k++) {
        if (k * kGT + tid >= g.n) break;
        const u64 e = fixmass(z[k], M);
        S += e;
        const float d = M - z[k];
#pragma unroll
        for (int j = 0; j < kNWin; j++) {
            const bool in = d <= win(j);
            c[j] += in ? 1u : 0u;
            wm[j] += in ? e : 0u;
        }
    }
    warp_sum_windows(c, S);
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int j = 0; j < kNWin; j++) wm[j] += __shfl_xor_sync(0xffffffffu, wm[j], o);
    if (lane == 0) {
#pragma unroll
        for (int j = 0; j < kNWin; j++) rc[j][warp] = c[j], rw[j][warp] = wm[j];
        rs[warp] = S;
    }
    __syncthreads();
    if (tid == 0) {
        ChunkSum *cs = row + g.c;
        for (int k = 1; k < kGWarps; k++) {
            S += rs[k];
#pragma unroll
            for (int j = 0; j < kNWin; j++) c[j] += rc[j][k], wm[j] += rw[j][k];
        }
        cs->S = S;
#pragma unroll
        for (int j = 0; j < kNWin; j++) cs->c[j] = c[j], cs->wm[j] = wm[j];
    }
}

/* C: one block a row; narrow: variant 4's choice of window (fast_select). */
__global__ void __launch_bounds__(kThreads, 1) sample_post_kernel(m40k_sample_args a, int nc,
                                                                  int narrow) {
    __shared__ Smem s;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, V = a.V;
    const int64_t b = blockIdx.x;
    const ChunkSum *cs = reinterpret_cast<const ChunkSum *>(a.chunks) + b * nc;
    if (!(a.temperature > 0.0f)) { /* greedy: the chunks merged in a fixed order */
        if (warp != 0) return;
        float m = -INFINITY, sum = 0.0f;
        int id = INT_MAX;
        for (int k = lane; k < nc; k += 32) merge_sum(m, sum, id, cs[k].m, cs[k].sum, cs[k].id);
        warp_merge_sum(m, sum, id);
        if (lane == 0) {
            a.out[2 * b] = (float)id;
            a.out[2 * b + 1] = (float)(sum > 0.0f ? 1.0 / (double)sum : 1.0 / (double)V);
        }
        return;
    }
    if (tid == 0) {
        uint64_t p = a.pos ? (uint64_t)(uint32_t)a.pos[b] : 0;
        s.fu = m40__rand_u01(a.seed, p, (uint64_t)b); /* lib/ref/sample.c draws the same u */
    }
    const float M = chunks_max<kThreads>(cs, nc, s.rv);
    select_and_write<true>(a.scratch + b * V, V, M, a, s, cs, nc, narrow != 0);
}
