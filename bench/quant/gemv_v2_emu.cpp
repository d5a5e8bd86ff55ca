/* A host emulation of the batch-1 quantized GEMV v2 (kernels/quant_gemv_v2.cuh
** gemv_v2_kernel, the source as it is in the tree: gemv_v2_emu.sh extracts
** it), for machines without a GPU: each block run as 256 std::threads with a
** barrier for __syncthreads and per-warp barriers for the shuffles
** (bench/attention/emu_common.h), against a double reference over the same
** quantized weights, and a poisoned tail past y that must stay untouched. It
** checks x staged in passes (D 2: the pass loop, the next pass's x in
** registers, the xs offsets, a partial last chunk, rows past N), and, as its
** own check, the chunked, staged-whole and exponent-zero forms that the GPU
** tests already pass. Not the compiler, not timing, not sm_52 rounding. */
#include "emu_common.h" /* bench/attention/: CUDA names on the host */
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
static inline float __half2float(__half h) { return h2f(h.b); }
static inline __half __ushort_as_half(unsigned short u) { return __half{u}; }
static inline float rsqrtf(float v) { return 1.0f / sqrtf(v); }
static inline float4 operator+(float4 a, float4 b) { return {a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w}; }
#include "quant_gemv_common.cuh"
namespace {
#include "v2kernel.inc"
}

/* y = scale · (q · x) per row (GROUPED: scale per row and K-group, 1 f32, 2
** f16 as the kernel's template argument), double */
static int fails = 0;
template <int WT, int GROUPED, bool NORM, bool WHOLE, int P, bool EZ, bool PASS>
static void run(const char *what, int N, int K, int group) {
    const bool q4 = WT == M40_DTYPE_Q4;
    const int rb = q4 ? (K + 1) / 2 : K, ng = GROUPED ? (K + group - 1) / group : 1;
    std::vector<unsigned char> w((size_t)N * rb);
    std::vector<int> q((size_t)N * K);
    std::vector<float> x(K), sc((size_t)N * ng), nw(K), y(N + 8, -7.25f);
    std::vector<__half> sh((size_t)N * ng);
    srand(N * 131 + K);
    auto rnd = [] { return (float)rand() / RAND_MAX * 2 - 1; };
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            int v = q4 ? rand() % 16 - 8 : rand() % 256 - 128;
            q[(size_t)n * K + k] = v;
            if (q4) {
                unsigned char &byte = w[(size_t)n * rb + k / 2];
                const unsigned nib = (unsigned)v & 0xFu;
                byte = (k & 1) ? (unsigned char)((byte & 0xF0u) | nib) : (unsigned char)((byte & 0x0Fu) | (nib << 4));
            } else {
                w[(size_t)n * rb + k] = (unsigned char)(signed char)v;
            }
        }
    for (auto &v : x) v = rnd();
    for (size_t i = 0; i < sc.size(); i++) { /* f16 scales: the reference uses their f16 values */
        sc[i] = 0.01f + 0.02f * (rnd() + 1);
        sh[i].b = f2h(sc[i]);
        if (GROUPED == 2) sc[i] = h2f(sh[i].b);
    }
    for (auto &v : nw) v = 0.5f + 0.5f * (rnd() + 1);
    double ss = 0;
    for (int k = 0; k < K; k++) ss += (double)x[k] * x[k];
    const float eps = 1e-5f;
    const double inv = NORM ? 1.0 / sqrt(ss / K + eps) : 1.0;
    m40k_qlinear_args a = {};
    a.M = 1, a.N = N, a.K = K, a.x = x.data(), a.wtype = WT, a.w = w.data();
    a.scale = GROUPED == 2 ? (const void *)sh.data() : (const void *)sc.data();
    a.scale_f16 = GROUPED == 2, a.group = GROUPED ? group : 0, a.y = y.data();
    if (NORM) a.nw = nw.data(), a.nw_f16 = 0, a.eps = eps;
    constexpr int NT = kWarps * 32;
    const int nblk = (N + kWarps * 2 - 1) / (kWarps * 2);
    for (int blk = 0; blk < nblk; blk++) {
        pthread_barrier_init(&bar, NULL, NT);
        for (int i = 0; i < kWarps; i++) pthread_barrier_init(&wbar[i], NULL, 32);
        std::vector<std::thread> th;
        for (int t = 0; t < NT; t++)
            th.emplace_back([=] {
                threadIdx.x = t;
                blockIdx.x = (unsigned)blk;
                gridDim.x = (unsigned)nblk;
                blockDim.x = NT;
                gemv_v2_kernel<WT, 1, 2, GROUPED, NORM, WHOLE, P, 1, EZ, kWarps, PASS>(a);
            });
        for (auto &t : th) t.join();
        pthread_barrier_destroy(&bar);
        for (int i = 0; i < kWarps; i++) pthread_barrier_destroy(&wbar[i]);
    }
    double emax = 0, rmax = 0;
    for (int n = 0; n < N; n++) {
        double s = 0;
        for (int k = 0; k < K; k++) {
            const double xk = NORM ? x[k] * inv * nw[k] : x[k];
            s += xk * q[(size_t)n * K + k] * (GROUPED ? sc[(size_t)n * ng + k / group] : 1.0);
        }
        if (!GROUPED) s *= sc[n];
        emax = std::max(emax, fabs(s - y[n]));
        rmax = std::max(rmax, fabs(s));
    }
    int tail = 0;
    for (int i = N; i < N + 8; i++) tail += y[i] != -7.25f;
    const double e = emax / (rmax > 0 ? rmax : 1);
    const bool ok = e < 1e-5 && tail == 0;
    printf("%-46s N %4d K %5d  rel err %.3g  tail %d  %s\n", what, N, K, e, tail, ok ? "ok" : "FAIL");
    fails += !ok;
}

int main() {
    constexpr int Q4 = M40_DTYPE_Q4, Q8 = M40_DTYPE_Q8;
    /* the forms the GPU tests already pass: the emulation's own check */
    run<Q4, 0, false, false, 1, false, false>("int4 chunked (the 4h_to_h default)", 40, 13696, 0);
    run<Q4, 0, true, true, 1, true, false>("int4 whole, norm, exponent-zero", 24, 4096, 0);
    run<Q8, 0, false, true, 1, false, false>("int8 whole", 20, 4096, 0);
    /* group scales, their dtype a template argument (1 f32, 2 f16) */
    run<Q4, 2, true, true, 4, true, false>("int4 g128 f16, whole, norm, ez, P 4", 24, 4096, 128);
    run<Q4, 1, false, true, 1, true, false>("int4 g64 f32, whole, ez", 20, 4096, 64);
    run<Q8, 2, false, false, 1, false, false>("int8 g32 f16 chunked", 18, 1536, 32);
    /* x in passes */
    run<Q4, 0, false, true, 1, false, true>("int4 passes, 4 (last chunk partial)", 40, 13696, 0);
    run<Q4, 1, false, true, 1, false, true>("int4 g128 f32 passes", 20, 13696, 128);
    run<Q4, 2, false, true, 1, false, true>("int4 g128 f16 passes", 20, 13696, 128);
    run<Q8, 0, false, true, 1, false, true>("int8 passes", 18, 13696, 0);
    run<Q8, 1, false, true, 1, false, true>("int8 g128 f32 passes", 17, 8192, 128);
    run<Q4, 0, false, true, 1, false, true>("int4 passes, one", 16, 4096, 0);
    run<Q4, 0, false, true, 1, false, true>("int4 passes, a 32-column second", 33, 4128, 0);
    printf("%s\n", fails ? "FAILED" : "all ok");
    return fails != 0;
}
