/* Rotary position embedding, FP32. For row r, head h, pair i < rope_dims/2:
**   (a, b) -> (a cos − b sin, b cos + a sin), angle = float(pos[r]·pos_scale)·θ_i
** pairs adjacent (x[2i], x[2i+1]: ChatGLM2) or half (x[i], x[i+rope_dims/2]:
** LLaMA). θ_i = 1 / theta^(2i/rope_dims) as PyTorch's float cache: the
** launcher computes the first 256 on the host exactly as the reference
** (lib/ref/transformer.c: float exponent, double pow, rounded to float) and
** passes them by value (kernel parameters: constant bank, indexed loads);
** pairs past 256 (rope_dims > 512) use powf. The angle is then bit-equal
** to the reference's, and only sincosf (full-range, ~1 ulp) differs from
** its double cos/sin.
**
** Layout: 256 threads a block; a block per row (rows < 2^31), below 128 rows ceil(pairs/256)
** blocks a row (gridDim.y). The row's
** (cos, sin) per pair index are computed once into shared memory (every
** head rotates by the same angles; rope_dims/2 <= 1024, else per pair):
** the first version called sincosf per pair, with the θ table indexed by
** 32 distinct indices a warp (serialized constant-bank loads), and ran at
** 0.6-0.7x copy on an H200; threads then stride over the heads·rope_dims/2
** pairs (adjacent pairs as one float2 when the
** row strides and head_dim are even and the pointers 8-byte aligned). Out
** of place, the values that do not rotate are copied too. Position -1 is
** padding: the row passes as it is (copied when out of place). A lower
** position is reported to the index guard by thread 0 and the row is left
** as it was (copied when out of place).
**
** Bytes: in place 8 per rotated pair read + written (a ChatGLM2 qkv row:
** 34 heads · 64 dims · 4 B · 2 = 17 KiB); M40 roofline at 288 GB/s: 64
** rows ≈ 3.9 µs, launch-bound below that. Target >= 0.80x copy bandwidth
** over the rotated bytes (tools/bench/norm.c).
**
** ptxas (sm_52, CUDA 11.8, -v), 3 instances: 32-38 registers, 0 spills,
** 8 KB of shared memory (the row's angles; θ is in the parameter bank:
** 1416 B cmem[0]);
** a 32-byte stack frame, which is sincosf's Payne-Hanek reduction buffer,
** touched only for |angle| > 105615 (ChatGLM2's angles stay below its
** 32768 positions). */
#include "rope.h"
#include "guard.h"
#include "rope_math.cuh"

#include <cuda_runtime.h>
#include <math.h>

namespace {

constexpr int kThreads = 256;
constexpr int kFewRows = 128;
constexpr int kSmem = 1024; /* pairs whose (cos, sin) the block shares: 8 KB */

/* PAIRS: 0 adjacent, 1 half; V2: adjacent pairs as float2; NT threads.
** gridDim.y blocks share a row: block y rotates pairs [k0, k1) of it and,
** out of place, copies the values [j0, j1) that do not rotate. Each
** thread's first pair is loaded before the position and the angles, so its
** global latency overlaps theirs (was: position, angles, barrier, then the
** load: two round trips in a row at a decode step's few rows). */
template <int PAIRS, bool V2, int NT>
__global__ void __launch_bounds__(NT) rope_kernel(const RopeArgs a, int W, const float *x,
                                                        int64_t xs, const int *pos, float *y,
                                                        int64_t ys, unsigned *guard) {
    const int64_t row = blockIdx.x;
    const float *xr = x + row * xs;
    float *yr = y + row * ys;
    const bool copy = xr != yr;
    const int ny = (int)gridDim.y, by = (int)blockIdx.y;
    /* [share(n, by), share(n, by + 1)): this block's part of n items */
    auto share = [&](int n, int y) { return (int)((int64_t)n * y / ny); };
    const int k0 = share(a.heads * a.half, by), k1 = share(a.heads * a.half, by + 1);
    /* pair k: its pair index i and its two values' offsets */
    auto where = [&](int k, int &i, int &ia, int &ib) {
        const int h = k / a.half;
        i = k - h * a.half;
        const int base = h * a.head_dim;
        ia = base + (PAIRS == 0 ? 2 * i : i);
        ib = base + (PAIRS == 0 ? 2 * i + 1 : i + a.half);
    };
    auto load = [&](int ia, int ib, float &va, float &vb) {
        if (V2) {
            const float2 t = *reinterpret_cast<const float2 *>(xr + ia);
            va = t.x, vb = t.y;
        } else {
            va = xr[ia], vb = xr[ib];
        }
    };
    int k = k0 + (int)threadIdx.x, i = 0, ia = 0, ib = 0;
    float va = 0.0f, vb = 0.0f;
    if (k < k1) {
        where(k, i, ia, ib);
        load(ia, ib, va, vb);
    }
    /* this thread's first angle factor, also ahead of the position (the
    ** parameter bank's first read misses) */
    const float th0 = (int)threadIdx.x < a.half ? rope_theta_i(a, (int)threadIdx.x) : 0.0f;
    const int p = pos[row];
    if (p < 0) { /* -1: padding, the row passes; below: a bad index */
        if (threadIdx.x == 0 && by == 0 && p < -1) m40k_guard_report(guard, M40K_GUARD_ROPE_POS, p, 0);
        if (copy)
            for (int j = share(W, by) + threadIdx.x; j < share(W, by + 1); j += NT) yr[j] = xr[j];
        return;
    }
    const float fp = (float)p * a.pos_scale;
    /* every head of the row rotates by the same angles: one sincosf per
    ** pair index, shared by the block (the table's loads by distinct
    ** indices happen here once, not per head) */
    __shared__ float sc[kSmem], ss[kSmem];
    const bool tab = a.half <= kSmem;
    if (tab) {
        for (int t = threadIdx.x; t < a.half; t += NT)
            sincosf(fp * (t == (int)threadIdx.x ? th0 : rope_theta_i(a, t)), &ss[t], &sc[t]);
        __syncthreads();
    }
    for (bool first = true; k < k1; k += NT, first = false) {
        if (!first) {
            where(k, i, ia, ib);
            load(ia, ib, va, vb);
        }
        float s, c;
        if (tab) s = ss[i], c = sc[i];
        else sincosf(fp * rope_theta_i(a, i), &s, &c);
        const float ra = va * c - vb * s, rb = vb * c + va * s;
        if (V2) {
            *reinterpret_cast<float2 *>(yr + ia) = make_float2(ra, rb);
        } else {
            yr[ia] = ra;
            yr[ib] = rb;
        }
    }
    if (copy) {
        const int rot = a.heads * a.head_dim, rd = 2 * a.half;
        for (int j = share(W, by) + threadIdx.x; j < share(W, by + 1); j += NT)
            if (j >= rot || j % a.head_dim >= rd) yr[j] = xr[j];
    }
}

bool aligned(const void *p, unsigned n) { return ((uintptr_t)p & (n - 1)) == 0; }

template <int PAIRS, bool V2>
void launch(dim3 g, cudaStream_t s, const RopeArgs &a, int64_t W, const float *x, int64_t xs,
            const int32_t *pos, float *y, int64_t ys, unsigned *guard) {
    rope_kernel<PAIRS, V2, kThreads><<<g, kThreads, 0, s>>>(a, (int)W, x, xs, pos, y, ys, guard);
}

} // namespace

extern "C" int m40k_rope(void *stream, int heads, int head_dim, int rope_dims, int pairs,
                         float theta, float pos_scale, int64_t rows, int64_t W, const float *x,
                         int64_t xs, const int32_t *pos, float *y, int64_t ys, unsigned *guard) {
    if (rows == 0) return 0;
    if (rows > 2147483647 || W > (1 << 30) || rope_dims < 2 ||
        (int64_t)heads * head_dim > W)
        return (int)cudaErrorInvalidValue;
    const RopeArgs a = rope_args(heads, head_dim, rope_dims, theta, pos_scale);
    cudaStream_t s = (cudaStream_t)stream;
    /* up to 127 rows (a decode step, a short prefill): a row over
    ** ceil(pairs / 256) blocks of 256 threads, so each thread has ~one pair
    ** and the blocks spread over the SMs (ChatGLM2's qkv row: 1088 pairs,
    ** 5 blocks; was one block of 1024 threads a row: 0.72-0.77x copy at 64
    ** rows on the H200); many rows: a block a row, the blocks fill the GPU */
    const int64_t npairs = (int64_t)heads * (rope_dims / 2);
    int64_t ny = rows < kFewRows ? (npairs + kThreads - 1) / kThreads : 1;
    if (ny < 1) ny = 1;
    if (ny > 64) ny = 64;
    const dim3 g((unsigned)rows, (unsigned)ny);
    if (pairs == 1)
        launch<1, false>(g, s, a, W, x, xs, pos, y, ys, guard);
    else if (head_dim % 2 == 0 && xs % 2 == 0 && ys % 2 == 0 && aligned(x, 8) && aligned(y, 8))
        launch<0, true>(g, s, a, W, x, xs, pos, y, ys, guard);
    else
        launch<0, false>(g, s, a, W, x, xs, pos, y, ys, guard);
    return (int)cudaGetLastError();
}
