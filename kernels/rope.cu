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
** Layout: one block per row (rows < 2^31), 1024 threads below 128 rows, else 256. The row's
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
** ptxas (sm_52, CUDA 11.8, -v), 3 instances: 30-32 registers, 0 spills,
** no shared memory (the table is in the parameter bank: 1416 B cmem[0]);
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

/* PAIRS: 0 adjacent, 1 half; V2: adjacent pairs as float2; NT threads */
template <int PAIRS, bool V2, int NT>
__global__ void __launch_bounds__(NT) rope_kernel(const RopeArgs a, int W, const float *x,
                                                        int64_t xs, const int *pos, float *y,
                                                        int64_t ys, unsigned *guard) {
    const int64_t row = blockIdx.x;
    const float *xr = x + row * xs;
    float *yr = y + row * ys;
    const bool copy = xr != yr;
    const int p = pos[row];
    if (p < 0) { /* -1: padding, the row passes; below: a bad index */
        if (threadIdx.x == 0 && p < -1) m40k_guard_report(guard, M40K_GUARD_ROPE_POS, p, 0);
        if (copy)
            for (int j = threadIdx.x; j < W; j += NT) yr[j] = xr[j];
        return;
    }
    const float fp = (float)p * a.pos_scale;
    /* every head of the row rotates by the same angles: one sincosf per
    ** pair index, shared by the block (the table's loads by distinct
    ** indices happen here once, not per head) */
    __shared__ float sc[kSmem], ss[kSmem];
    const bool tab = a.half <= kSmem;
    if (tab) {
        for (int i = threadIdx.x; i < a.half; i += NT) sincosf(fp * rope_theta_i(a, i), &ss[i], &sc[i]);
        __syncthreads();
    }
    const int npairs = a.heads * a.half;
    for (int k = threadIdx.x; k < npairs; k += NT) {
        const int h = k / a.half, i = k - h * a.half;
        float s, c;
        if (tab) s = ss[i], c = sc[i];
        else sincosf(fp * rope_theta_i(a, i), &s, &c);
        const int base = h * a.head_dim;
        const int ia = base + (PAIRS == 0 ? 2 * i : i);
        const int ib = base + (PAIRS == 0 ? 2 * i + 1 : i + a.half);
        float va, vb;
        if (V2) {
            float2 t = *reinterpret_cast<const float2 *>(xr + ia);
            va = t.x, vb = t.y;
        } else {
            va = xr[ia], vb = xr[ib];
        }
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
        for (int j = threadIdx.x; j < W; j += NT)
            if (j >= rot || j % a.head_dim >= rd) yr[j] = xr[j];
    }
}

bool aligned(const void *p, unsigned n) { return ((uintptr_t)p & (n - 1)) == 0; }

/* rope_kernel<PAIRS, V2> at 1024 threads a row (few rows) or kThreads */
template <int PAIRS, bool V2>
void launch(bool few, unsigned g, cudaStream_t s, const RopeArgs &a, int64_t W, const float *x,
            int64_t xs, const int32_t *pos, float *y, int64_t ys, unsigned *guard) {
    if (few) rope_kernel<PAIRS, V2, 1024><<<g, 1024, 0, s>>>(a, (int)W, x, xs, pos, y, ys, guard);
    else rope_kernel<PAIRS, V2, kThreads><<<g, kThreads, 0, s>>>(a, (int)W, x, xs, pos, y, ys, guard);
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
    const unsigned g = (unsigned)rows;
    /* up to 127 rows (a decode step, a short prefill): 1024 threads a row,
    ** so a ChatGLM2 qkv row's 1088 pairs take ~1 round trip a thread instead
    ** of ~4 (H200, ncu: 4.3 -> 3.7 us a 1-row call; 64 rows at 256 threads
    ** measured 0.72x copy); many rows: 256, the blocks fill the GPU */
    const bool few = rows < kFewRows;
    if (pairs == 1)
        launch<1, false>(few, g, s, a, W, x, xs, pos, y, ys, guard);
    else if (head_dim % 2 == 0 && xs % 2 == 0 && ys % 2 == 0 && aligned(x, 8) && aligned(y, 8))
        launch<0, true>(few, g, s, a, W, x, xs, pos, y, ys, guard);
    else
        launch<0, false>(few, g, s, a, W, x, xs, pos, y, ys, guard);
    return (int)cudaGetLastError();
}
