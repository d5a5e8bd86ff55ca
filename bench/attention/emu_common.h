/* What the host emulations of the attention kernels share (prefill64_emu.cpp,
** decode_v4_emu.cpp): CUDA's names for a kernel's source compiled as C++17
** on the host, where a block is one std::thread per CUDA thread, barriers
** stand for __syncthreads and (per warp) for __syncwarp and the shuffles;
** f16 test data on the f16 grid; and the double reference of causal GQA
** attention over a cache. Not the compiler, not timing, not sm_52 rounding
** (exp2f here is the host's). */
#ifndef M40_BENCH_ATTN_EMU_COMMON_H
#define M40_BENCH_ATTN_EMU_COMMON_H
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <thread>
#include <vector>
using std::max;
using std::min;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
static inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
/* blocks run one after another here: a fence orders nothing, atomics are
** the ones of a shared word (only a block's thread 0 touches them) */
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned atomicAdd(unsigned *a, unsigned v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
static inline unsigned atomicExch(unsigned *a, unsigned v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }
struct D3 { unsigned x; };
thread_local D3 threadIdx, blockIdx;
static pthread_barrier_t bar, wbar[32]; /* up to 32 warps a block (decode v5 with ways) */
static float xbuf[32][32];
static void __syncthreads() { pthread_barrier_wait(&bar); }
/* block blk of a launch: nt host threads (nt / 32 warps) run kernel() as
** its threads, between the block's and the warps' barriers */
template <typename F> static void run_block(int64_t blk, int nt, F kernel) {
    const int nw = nt / 32;
    pthread_barrier_init(&bar, NULL, nt);
    for (int w = 0; w < nw; w++) pthread_barrier_init(&wbar[w], NULL, 32);
    std::vector<std::thread> th;
    for (int t = 0; t < nt; t++)
        th.emplace_back([=] {
            threadIdx.x = t;
            blockIdx.x = (unsigned)blk;
            kernel();
        });
    for (auto &x : th) x.join();
    pthread_barrier_destroy(&bar);
    for (int w = 0; w < nw; w++) pthread_barrier_destroy(&wbar[w]);
}
/* lane src's v, every lane of the warp taking part */
static float shfl_from(float v, int src) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    pthread_barrier_wait(&wbar[warp]);
    xbuf[warp][lane] = v;
    pthread_barrier_wait(&wbar[warp]);
    float r = xbuf[warp][src];
    pthread_barrier_wait(&wbar[warp]);
    return r;
}
static float __shfl_xor_sync(unsigned, float v, int w) { return shfl_from(v, (threadIdx.x % 32) ^ w); }
static float __shfl_sync(unsigned, float v, int i) { return shfl_from(v, i); }
static void __syncwarp() { pthread_barrier_wait(&wbar[threadIdx.x / 32]); }
/* any lane's pred (decode v6), every lane of the warp taking part */
static int __any_sync(unsigned, int pred) {
    int r = 0;
    const float v = shfl_from(pred ? 1.0f : 0.0f, 0); /* a barrier pair first */
    (void)v;
    for (int w = 0; w < 32; w++) r |= shfl_from(pred ? 1.0f : 0.0f, w) != 0.0f;
    return r;
}
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
struct __half { unsigned short b; };
struct __half2 { __half x, y; };
static float h2f(unsigned short h) {
    unsigned s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}
static unsigned short f2h(float f) { /* test data: |f| < 2, rounded to the f16 grid */
    int e;
    frexpf(f, &e);
    float q = ldexpf(1.0f, e - 11);
    float r = nearbyintf(f / q) * q;
    if (r == 0) return 0;
    unsigned s = r < 0;
    r = fabsf(r);
    int ee;
    float mm = frexpf(r, &ee); /* r = mm * 2^ee, mm in [0.5,1) */
    int E = ee - 1 + 15;
    if (E <= 0) return (unsigned short)(s << 15 | (unsigned)nearbyintf(r / ldexpf(1, -24)));
    unsigned M = (unsigned)nearbyintf((mm * 2 - 1) * 1024);
    if (M == 1024) M = 0, E++;
    return (unsigned short)(s << 15 | E << 10 | M);
}
static float2 __half22float2(__half2 h) { return {h2f(h.x.b), h2f(h.y.b)}; }
static __half2 __floats2half2_rn(float a, float b) { return {{f2h(a)}, {f2h(b)}}; }
static int guards = 0;
static void m40k_guard_report(unsigned *, unsigned, long long, long long) { guards++; }
#define M40K_GUARD_ATTN_SLOT 1
#define M40K_GUARD_ATTN_POS 2
#define M40K_GUARD_KV_SLOT 3
#define M40K_GUARD_KV_POS 4

/* A cache of random values (f16: on its grid) and its values as doubles. */
template <typename TC>
static void fill_cache(std::vector<TC> &c, std::vector<double> &d) {
    auto rnd = [] { return (float)rand() / RAND_MAX * 2 - 1; };
    d.resize(c.size());
    for (size_t i = 0; i < c.size(); i++) {
        float a = rnd();
        if constexpr (sizeof(TC) == 2) c[i].b = f2h(a), d[i] = h2f(c[i].b);
        else c[i] = a, d[i] = a;
    }
}

/* attn_combine's fold of the splits' partials (m, l, O) into y, in double
** (an empty split's m is -inf), for `rows` rows of D */
static inline void fold_partials(const std::vector<float> &ml, const std::vector<float> &wo, int64_t rows,
                                 int splits, int D, std::vector<float> &y) {
    for (int64_t row = 0; row < rows; row++) {
        double M = -INFINITY;
        for (int c = 0; c < splits; c++) M = std::max(M, (double)ml[(row * splits + c) * 2]);
        std::vector<double> acc(D, 0.0);
        double l = 0;
        for (int c = 0; c < splits; c++) {
            const double mc = ml[(row * splits + c) * 2];
            if (mc == -INFINITY) continue;
            const double wgt = exp2(mc - M);
            l += wgt * ml[(row * splits + c) * 2 + 1];
            for (int d = 0; d < D; d++) acc[d] += wgt * wo[(row * splits + c) * D + d];
        }
        for (int d = 0; d < D; d++) y[row * D + d] = l > 0 ? (float)(acc[d] / l) : 0.0f;
    }
}
/* max |y - ref| / max |ref| over every (b, t, head) row: ref the causal
** softmax(q·k·scale)·v over keys 0..pos[b, t] of slot[b] (pos -1: a zero row) */
static double ref_err(const std::vector<float> &q, const std::vector<double> &kd,
                      const std::vector<double> &vd, const std::vector<int32_t> &pos,
                      const std::vector<int32_t> &slot, const std::vector<float> &y, int B, int T, int H,
                      int G, int D, int L) {
    const double scale = 1.0 / sqrt((double)D);
    double err = 0, mx = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                int g = h / (H / G), last = pos[b * T + t], s = slot[b];
                std::vector<double> sc(last + 1 > 0 ? last + 1 : 1), o(D, 0.0);
                const float *qv = &q[(((size_t)b * T + t) * H + h) * D];
                double m = -INFINITY, sum = 0;
                for (int j = 0; j <= last; j++) {
                    double a = 0;
                    for (int d = 0; d < D; d++) a += (double)qv[d] * kd[(((size_t)s * L + j) * G + g) * D + d];
                    sc[j] = a * (double)(float)scale;
                    m = std::max(m, sc[j]);
                }
                for (int j = 0; j <= last; j++) sum += sc[j] = exp(sc[j] - m);
                for (int j = 0; j <= last; j++)
                    for (int d = 0; d < D; d++) o[d] += sc[j] / sum * vd[(((size_t)s * L + j) * G + g) * D + d];
                const float *yo = &y[(((size_t)b * T + t) * H + h) * D];
                for (int d = 0; d < D; d++) {
                    double df = fabs(yo[d] - o[d]);
                    if (!(df <= err)) err = df;
                    mx = std::max(mx, fabs(o[d]));
                }
            }
    return mx > 0 ? err / mx : err;
}
#endif
