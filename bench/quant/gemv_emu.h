/* What the host emulations of the quantized GEMV share (gemv_v2_emu.cpp,
** gemv_v3_emu.cpp): the CUDA intrinsics the kernels use beyond
** bench/attention/emu_common.h, and the test problem -- random int8/int4
** weights in include/m40/quant.h's layout, row or group scales (f32, or f16
** with the reference on their f16 values), x, the norm's weights -- with its
** double reference and the check of a result (relative error and a
** poisoned tail past y). Include after emu_common.h, before the kernels. */
#ifndef M40_BENCH_QUANT_GEMV_EMU_H
#define M40_BENCH_QUANT_GEMV_EMU_H
#define __host__
thread_local D3 gridDim, blockDim;
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline int __ffs(int v) { return v ? __builtin_ctz((unsigned)v) + 1 : 0; }
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned char b[8];
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(x >> (8 * i)), b[4 + i] = (unsigned char)(y >> (8 * i));
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)b[(s >> (4 * i)) & 7] << (8 * i);
    return r;
}
/* an int shuffled as its bits (v3's max of x's bits), not through a float */
static int __shfl_xor_sync(unsigned m, int v, int w) { return __float_as_int(__shfl_xor_sync(m, __int_as_float(v), w)); }
static inline float __half2float(__half h) { return h2f(h.b); }
static inline __half __ushort_as_half(unsigned short u) { return __half{u}; }
static inline float rsqrtf(float v) { return 1.0f / sqrtf(v); }
static inline float4 operator+(float4 a, float4 b) { return {a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w}; }
#include "quant_gemv_common.cuh"

/* y[b] = scale · (q · x[b]) for B rows of x, N x K weights (q4: int4, else
** int8); group 0: a scale a row, else a scale a row and K-group */
struct GemvProblem {
    int B, N, K, group, ng, rb;
    bool q4, f16, norm;
    std::vector<unsigned char> w;
    std::vector<int> q;
    std::vector<float> x, sc, nw, y, bias, res; /* bias [N], res [B, N]: empty for none */
    std::vector<__half> sh;
    static constexpr float kEps = 1e-5f, kPoison = -7.25f;
    static float rnd() { return (float)rand() / RAND_MAX * 2 - 1; } /* uniform in [-1, 1] */
    GemvProblem(int B_, int N_, int K_, int group_, bool q4_, bool f16_, bool norm_)
        : B(B_), N(N_), K(K_), group(group_), ng(group_ ? (K_ + group_ - 1) / group_ : 1),
          rb(q4_ ? (K_ + 1) / 2 : K_), q4(q4_), f16(f16_), norm(norm_) {
        w.assign((size_t)N * rb, 0);
        q.resize((size_t)N * K);
        x.resize((size_t)B * K), sc.resize((size_t)N * ng), nw.resize(K), sh.resize(sc.size());
        y.assign((size_t)B * N + 8, kPoison);
        srand(N * 131 + K + 7 * B);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++) {
                const int v = q4 ? rand() % 16 - 8 : rand() % 256 - 128;
                q[(size_t)n * K + k] = v;
                if (q4) { /* high nibble = even column */
                    unsigned char &byte = w[(size_t)n * rb + k / 2];
                    const unsigned nib = (unsigned)v & 0xFu;
                    byte = (k & 1) ? (unsigned char)((byte & 0xF0u) | nib)
                                   : (unsigned char)((byte & 0x0Fu) | (nib << 4));
                } else {
                    w[(size_t)n * rb + k] = (unsigned char)(signed char)v;
                }
            }
        for (auto &v : x) v = rnd();
        for (size_t i = 0; i < sc.size(); i++) {
            sc[i] = 0.01f + 0.02f * (rnd() + 1);
            sh[i].b = f2h(sc[i]);
            if (f16) sc[i] = h2f(sh[i].b);
        }
        for (auto &v : nw) v = 0.5f + 0.5f * (rnd() + 1);
    }
    /* a random bias and / or residual, added to y (the epilogue's fusions) */
    GemvProblem &addends(bool with_bias, bool with_res) {
        bias.assign(with_bias ? (size_t)N : 0, 0.0f), res.assign(with_res ? (size_t)B * N : 0, 0.0f);
        for (auto &v : bias) v = rnd();
        for (auto &v : res) v = rnd();
        return *this;
    }
    /* the kernel's arguments for this problem, y poisoned */
    m40k_qlinear_args args(int wtype) {
        m40k_qlinear_args a = {};
        a.M = B, a.N = N, a.K = K, a.x = x.data(), a.wtype = wtype, a.w = w.data();
        a.scale = f16 ? (const void *)sh.data() : (const void *)sc.data();
        a.scale_f16 = f16, a.group = group, a.y = y.data();
        if (norm) a.nw = nw.data(), a.nw_f16 = 0, a.eps = kEps;
        a.bias = bias.empty() ? nullptr : bias.data(), a.res = res.empty() ? nullptr : res.data();
        return a;
    }
    /* max |y - ref| / max |ref| over all outputs, 1e-5 allowed, and the
    ** tail past y untouched; prints one line, returns whether it passed */
    bool check(const char *what) const {
        double emax = 0, rmax = 0;
        for (int b = 0; b < B; b++) {
            const float *xb = x.data() + (size_t)b * K;
            double ss = 0;
            for (int k = 0; k < K; k++) ss += (double)xb[k] * xb[k];
            const double inv = norm ? 1.0 / sqrt(ss / K + kEps) : 1.0;
            for (int n = 0; n < N; n++) {
                double s = 0;
                for (int k = 0; k < K; k++)
                    s += (norm ? xb[k] * inv * nw[k] : xb[k]) * q[(size_t)n * K + k] *
                         (group ? sc[(size_t)n * ng + k / group] : 1.0);
                if (!group) s *= sc[n];
                if (!bias.empty()) s += bias[n];
                if (!res.empty()) s += res[(size_t)b * N + n];
                const float got = y[(size_t)b * N + n];
                emax = std::max(emax, std::isfinite(got) ? fabs(s - got) : INFINITY);
                rmax = std::max(rmax, fabs(s));
            }
        }
        int tail = 0;
        for (int i = B * N; i < B * N + 8; i++) tail += y[i] != kPoison;
        const double e = emax / (rmax > 0 ? rmax : 1);
        const bool ok = e < 1e-5 && tail == 0;
        printf("%-46s B %d N %4d K %5d  rel err %.3g  tail %d  %s\n", what, B, N, K, e, tail, ok ? "ok" : "FAIL");
        return ok;
    }
};

/* runs body(block) for blocks 0 .. grid - 1 one after another, each as
** nthreads std::threads (nwarps per-warp barriers) */
template <class Body> static void emu_grid(int grid, int nthreads, Body body) {
    for (int blk = 0; blk < grid; blk++) {
        pthread_barrier_init(&bar, NULL, nthreads);
        for (int i = 0; i < nthreads / 32; i++) pthread_barrier_init(&wbar[i], NULL, 32);
        std::vector<std::thread> th;
        for (int t = 0; t < nthreads; t++)
            th.emplace_back([=] {
                threadIdx.x = t;
                blockIdx.x = (unsigned)blk;
                gridDim.x = (unsigned)grid;
                blockDim.x = nthreads;
                body();
            });
        for (auto &t : th) t.join();
        pthread_barrier_destroy(&bar);
        for (int i = 0; i < nthreads / 32; i++) pthread_barrier_destroy(&wbar[i]);
    }
}
#endif
